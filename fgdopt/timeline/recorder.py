"""What the time engine records: one series row per instant, F(M) kept per node, and snapshots of the jobs present.

:class:`Recorder` keeps :data:`SERIES_COLUMNS` after every instant (allocated milli-GPU, running and pending jobs,
pending GPU demand, the jobs blocked by fragmentation, F(M) of the one evaluator, :mod:`fgdopt.frag`, refreshed on the
touched nodes only) and copies out the state at the requested instants (:class:`Snapshot`), validating it against the
one feasibility rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fgdopt.frag import Workload, node_fragmentations
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState, Placement, validate
from fgdopt.timeline.jobtable import RUNNING, JobTable
from fgdopt.timeline.pending import PendingQueue

SERIES_COLUMNS = ("time_s", "alloc_milli", "running", "pending", "pending_milli", "blocked_jobs", "blocked_milli",
                  "frag_milli")
"""Columns of :attr:`TimelineResult.series`: one row per instant, values *after* the instant (milli-GPU, jobs)."""


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The jobs present at ``time_s`` (running and pending) as an offline instance.

    Attributes
    ----------
    time_s : the instant (the state after every event at or before it).
    cluster : the cluster.
    tasks : the present jobs' shapes (running first, in input order, then pending in queue order).
    placement : where the running ones are (the pending ones unplaced).
    jobs : int64, the index in the run's :class:`JobSet` of every row of ``tasks``.
    running : how many of the rows are running (the first ``running``).
    """

    time_s: float
    cluster: Cluster
    tasks: TaskSet
    placement: Placement
    jobs: np.ndarray
    running: int

    @property
    def allocated_milli(self) -> int:
        return self.placement.allocated_milli(self.tasks)

    @property
    def pending(self) -> np.ndarray:
        """Row indices of the pending jobs in :attr:`tasks`."""
        return np.arange(self.running, len(self.tasks))


def same_capacity(fresh: ClusterState, live: ClusterState, where: str) -> None:
    """The free CPU, memory and GPU of ``live`` are those of ``fresh``, the same jobs placed anew (the state
    validates)."""
    for name in ("cpu_left", "mem_left", "gpu_left"):
        if not np.array_equal(getattr(fresh, name), getattr(live, name)):
            raise AssertionError(f"{where}: {name} differs from the running jobs placed anew")


class Recorder:
    """The series and the snapshots of one run (module docstring).

    Parameters
    ----------
    state : the run's state. workload : the M of the recorded F(M). frag : record F(M) (else NaN).
    snapshots : the instants (s) to copy out.
    """

    def __init__(self, state: ClusterState, workload: Workload, frag: bool, snapshots: Sequence[float]):
        self.state, self.workload, self.frag = state, workload, frag
        self.node_frag = node_fragmentations(state, workload) if frag else None
        self.frag_total = float(self.node_frag.sum()) if frag else math.nan
        self.capacity = state.cluster.gpu_capacity_milli
        self.rows: list[tuple] = []
        self.snaps: list[Snapshot] = []
        self.snap_times = sorted(float(s) for s in snapshots)

    def record(self, now: float, alloc: int, running: int, queue: PendingQueue, touched: set[int]) -> None:
        """The series row of instant ``now`` (after it); F(M) refreshed on the ``touched`` nodes."""
        if self.frag and touched:
            rows = np.fromiter(touched, dtype=np.int64)
            self.node_frag[rows] = node_fragmentations(self.state, self.workload, rows)
            self.frag_total = float(self.node_frag.sum())
        blocked_jobs, blocked_milli = queue.blocked(self.capacity - alloc)
        self.rows.append((now, alloc, running, queue.pending, queue.pending_milli, blocked_jobs, blocked_milli,
                          self.frag_total))

    def snapshots_before(self, now: float, jobs: JobTable, queue: PendingQueue, alloc: int) -> None:
        """Take the snapshots requested before ``now`` (the state is still that of the instant before)."""
        times = self.snap_times
        while times and times[0] < now:
            self.snaps.append(self.snapshot(times.pop(0), jobs, queue, alloc))

    def snapshot(self, at: float, jobs: JobTable, queue: PendingQueue, alloc: int) -> Snapshot:
        """The jobs present now, as of instant ``at`` (:class:`Snapshot`), validated."""
        state = self.state
        run_ids = np.flatnonzero(jobs.status == RUNNING)
        pend_ids = queue.present()
        ids = np.concatenate([run_ids, pend_ids]).astype(np.int64)
        placement = Placement(np.concatenate([state.node_of[run_ids], np.full(len(pend_ids), -1)]),
                              (*(state.gpus_of[j] for j in run_ids), *((),) * len(pend_ids)),
                              None if state.mig is None else (*(state.starts_of[j] for j in run_ids),
                                                               *((),) * len(pend_ids)),
                              None if (spans := state.spans(run_ids)) is None else (*spans, *((),) * len(pend_ids)))
        snap = Snapshot(at, state.cluster, state.tasks.take(ids), placement, ids, len(run_ids))
        same_capacity(validate(state.cluster, snap.tasks, placement), state, f"snapshot at {at} s")
        if snap.allocated_milli != alloc:
            raise AssertionError(f"snapshot at {at} s: {alloc} milli-GPU counted, {snap.allocated_milli} running")
        return snap

    def series(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(SERIES_COLUMNS))
