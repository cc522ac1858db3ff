"""How many CPUs this process may use: the default of every worker and thread count in fgdopt; and BLAS kept to one
thread (:func:`single_threaded_blas`)."""

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


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""The variables that set a BLAS library's thread count when it loads (OpenBLAS, numpy's and scipy's; MKL)."""


def single_threaded_blas() -> None:
    """Keep BLAS to one thread in this process and in the processes it starts, unless a variable of
    :data:`BLAS_THREADS` is set (the user's choice then stands).

    fgdopt's dense linear algebra is small (Pollux's performance-model fit and throughput interpolation, Gavel's
    allocations: tens to hundreds of rows) and runs in loops, while its parallelism is in processes (``--jobs``,
    pytest-xdist). A BLAS thread pool sized to the host only competes with them: OpenBLAS's idle threads spin for
    their next call. Measured on 2 cores loaded by other work: the Pollux cross-check and conservation tests took
    11-12 CPU s with one BLAS thread and 26-62 CPU s with OpenBLAS's default of one per core (on the quiet machine,
    the same either way). The libraries already loaded are limited at once (threadpoolctl); those loaded later read
    the variables.
    """
    if any(name in os.environ for name in BLAS_THREADS):
        return
    for name in BLAS_THREADS:
        os.environ[name] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")
