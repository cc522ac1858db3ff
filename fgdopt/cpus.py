"""How many CPUs this process may use: the default of every worker and thread count in fgdopt."""

from __future__ import annotations

import os
from pathlib import Path

CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1 = (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def cgroup_cpus(v2: Path = CGROUP_V2, v1: tuple[Path, Path] = CGROUP_V1) -> int | None:
    """The CPU quota of this process's control group, in whole CPUs (at least 1), or None when there is none.

    A container may see every CPU of its host (``os.cpu_count()``) while its quota lets it use only a few: a thread
    or process per host CPU then only waits for its turn. Reads cgroup v2's ``cpu.max`` (``"max 100000"``: no
    quota; ``"200000 100000"``: 2 CPUs), else cgroup v1's ``cfs_quota_us`` / ``cfs_period_us`` (quota -1: none).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "cpu.max").write_text("250000 100000\\n")
    >>> cgroup_cpus(folder / "cpu.max", (folder / "none", folder / "none"))
    2
    """
    try:
        quota, period = v2.read_text().split()[:2]
        return None if quota == "max" else max(1, int(quota) // int(period))
    except (OSError, ValueError):
        pass
    try:
        quota, period = (int(p.read_text()) for p in v1)
        return None if quota <= 0 or period <= 0 else max(1, quota // period)
    except (OSError, ValueError):
        return None


def usable_cpus() -> int:
    """The CPUs this process may run on: those of its affinity mask (all of ``os.cpu_count()`` where the platform
    has none), capped by its control group's quota (:func:`cgroup_cpus`); at least 1."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cgroup_cpus()
    return max(1, n if quota is None else min(n, quota))
