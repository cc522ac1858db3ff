"""Jobs over time: a :class:`~fgdopt.model.TaskSet` plus submission times and run times (docs/semantics.md "Time").

A job is a task of the one data model (its shape and ``gpu_spec``) with ``submit_s`` (seconds from the start
of the run) and ``duration_s`` (seconds of run time on its allocation; ``inf`` = runs forever). A
:class:`JobSet` holds them as read-only arrays in *input order* (the order of the file or of the generator),
with the run's measurement window: the time averages of a run are taken over ``window_s`` and only the jobs
flagged ``measured`` (submitted in the window) enter the per-job statistics. Jobs of a warm start or a
background (:mod:`fgdopt.timeline.sources`) are not measured.

Workload files are in the open job format (:mod:`fgdopt.workloads.format`: CSV or Parquet, its columns, units and
defaults); :func:`read_workload` is the one reader and names the file, the row and the field of the first bad
value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.model import TaskSet
from fgdopt.workloads.format import read_workload_frame, write_workload

WORKLOAD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "submit_s", "duration_s")
"""Columns of a workload file (times in seconds, CPU in milli-cores, memory in MiB, GPU in milli-GPU per GPU, all
per part of a job); an optional ``workers`` column (parts of a gang, default 1) and an optional ``priority`` column
(integer, higher outranks lower) feed gangs and priority preemption."""


def _times(values, what: str) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)
    arr.setflags(write=False)
    if arr.ndim != 1:
        raise ValueError(f"job field {what!r} must be one-dimensional")
    if (bad := np.flatnonzero(np.isnan(arr) | (arr < 0))).size:
        raise ValueError(f"job row {int(bad[0])}: field {what!r} must be a number >= 0, got {arr[bad[0]]}")
    return arr


@dataclass(frozen=True, eq=False)
class JobSet:
    """Jobs in input order: ``tasks`` (shapes), ``submit_s`` and ``duration_s`` (seconds), and what is measured.

    Attributes
    ----------
    tasks : the jobs' shapes and names (one row per job).
    submit_s : float64 (n,), submission time in seconds (finite, >= 0).
    duration_s : float64 (n,), run time in seconds on the job's allocation (>= 0; ``inf`` never finishes).
    measured : bool (n,), the jobs whose wait and JCT enter a run's statistics (default: all).
    window_s : (start, end) seconds over which time averages are taken (default: 0 to the last submission).
    priority : int64 (n,), higher outranks lower in priority preemption (default: all 0).

    Examples
    --------
    >>> jobs = JobSet(TaskSet([1000, 2000], [0, 0], [1, 0], [500, 0]), [0.0, 5.0], [10.0, 1.0])
    >>> len(jobs), jobs.window_s, float(jobs.offered_gpu_s)
    (2, (0.0, 5.0), 5000.0)
    """

    tasks: TaskSet
    submit_s: np.ndarray
    duration_s: np.ndarray
    measured: np.ndarray | None = None
    window_s: tuple[float, float] | None = field(default=None)
    priority: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.tasks)
        submit, duration = _times(self.submit_s, "submit_s"), _times(self.duration_s, "duration_s")
        for name, arr in (("submit_s", submit), ("duration_s", duration)):
            if len(arr) != n:
                raise ValueError(f"job field {name!r} has length {len(arr)}, expected {n}")
        if (bad := np.flatnonzero(~np.isfinite(submit))).size:
            raise ValueError(f"job row {int(bad[0])}: field 'submit_s' must be finite")
        measured = np.ones(n, dtype=bool) if self.measured is None else np.array(self.measured, dtype=bool)
        if len(measured) != n:
            raise ValueError(f"job field 'measured' has length {len(measured)}, expected {n}")
        measured.setflags(write=False)
        window = (0.0, float(submit.max(initial=0.0))) if self.window_s is None else tuple(map(float, self.window_s))
        if not 0 <= window[0] <= window[1]:
            raise ValueError(f"measurement window {window} must satisfy 0 <= start <= end")
        object.__setattr__(self, "submit_s", submit)
        object.__setattr__(self, "duration_s", duration)
        object.__setattr__(self, "measured", measured)
        object.__setattr__(self, "window_s", window)
        priority = np.zeros(n, dtype=np.int64) if self.priority is None else np.array(self.priority, dtype=np.int64)
        if priority.shape != (n,):
            raise ValueError(f"job field 'priority' has shape {priority.shape}, expected ({n},)")
        priority.setflags(write=False)
        object.__setattr__(self, "priority", priority)

    def __len__(self) -> int:
        return len(self.tasks)

    @property
    def offered_gpu_s(self) -> float:
        """GPU demand x duration summed over the jobs (milli-GPU x s; infinite durations count 0)."""
        d = np.where(np.isfinite(self.duration_s), self.duration_s, 0.0)
        return float((self.tasks.gpu_demand * d).sum())

    def take(self, rows) -> JobSet:
        """The jobs at ``rows`` (in that order), same window."""
        rows = np.asarray(rows, dtype=np.int64)
        return JobSet(self.tasks.take(rows), self.submit_s[rows], self.duration_s[rows], self.measured[rows],
                      self.window_s, self.priority[rows])

    def to_frame(self) -> pd.DataFrame:
        """The jobs as a DataFrame with the columns :data:`WORKLOAD_COLUMNS`, and ``workers`` if some job is a gang,
        ``priority`` if any is set."""
        t = self.tasks
        frame = pd.DataFrame({"name": t.names, "cpu_milli": t.cpu_milli, "memory_mib": t.memory_mib,
                              "num_gpu": t.num_gpu, "gpu_milli": t.gpu_milli, "gpu_spec": t.gpu_spec,
                              "submit_s": self.submit_s, "duration_s": self.duration_s})
        if t.has_gangs:
            frame = frame.assign(workers=t.workers)
        return frame.assign(priority=self.priority) if self.priority.any() else frame

    def save(self, path: str | os.PathLike) -> Path:
        """Write the jobs as a workload file in the open job format (Parquet by the suffix of ``path``, else CSV)."""
        return write_workload(self.to_frame(), path)

    def __repr__(self) -> str:
        return (f"JobSet({len(self)} jobs, submit 0..{self.submit_s.max(initial=0):.0f} s, "
                f"window {self.window_s[0]:.0f}..{self.window_s[1]:.0f} s)")


def read_workload(path: str | os.PathLike) -> JobSet:
    """Load a workload file in the open job format (:mod:`fgdopt.workloads.format`: CSV, or Parquet by its suffix)
    as a :class:`JobSet` in file order.

    Raises
    ------
    FileNotFoundError : no such file.
    ValueError : one line naming the file and the first bad row or column (a row with more or fewer fields than
        the header, no rows, an unknown or missing column, a missing, negative or non-numeric value, an invalid
        task shape, a name used twice, ``workers`` 0).
    """
    return jobs_from_frame(read_workload_frame(path), path)


def jobs_from_frame(frame: pd.DataFrame, path: str | os.PathLike = "<frame>") -> JobSet:
    """The :class:`JobSet` of a checked open-format frame (:func:`fgdopt.workloads.format.check_workload_frame`);
    ``ValueError`` in one line naming ``path``, the row and the field (the task shape rules of
    :class:`~fgdopt.model.TaskSet`)."""
    try:
        tasks = TaskSet(frame["cpu_milli"].to_numpy(), frame["memory_mib"].to_numpy(), frame["num_gpu"].to_numpy(),
                        frame["gpu_milli"].to_numpy(), frame["gpu_spec"].to_numpy(), names=tuple(frame["name"]),
                        workers=frame["workers"].to_numpy())
        return JobSet(tasks, frame["submit_s"].to_numpy(), frame["duration_s"].to_numpy(),
                      priority=frame["priority"].to_numpy())
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
