"""Drain-fit and finish-align: duration-aware policies that keep nodes drainable, ties by best-fit or FGD.

A node's *drain time* is the latest end among the jobs running on it (the time it becomes empty if nothing more
starts there; :class:`DrainTimes`). Both policies score a feasible node by how a job that starts now and runs
``work_s`` seconds, ending at ``end = now + work_s``, sits against the node's drain time ``d = max(drain, now)``
(seconds; lower is better), ties (within :data:`~fgdopt.policies.base.TIE_TOL`) by the tie policy's score, then
the node rank:

* **drain-fit** takes the least *extension* ``max(0, end - d)``: a job goes where it ends before the node's current
  jobs (a long job joins long jobs, a short one fills the holes of nodes that stay busy anyway) and the nodes about
  to drain stay free for whole-node jobs. Every node the job ends before ties at 0.
* **finish-align** takes the least *misalignment* ``|end - d|``, counted in whole windows of ``window_s`` seconds
  (:data:`ALIGN_WINDOW_S`; ``floor(|end - d| / window_s)``, so nodes within one window tie): among the nodes the
  job ends before it prefers the one that drains soonest after it, so the node's jobs end together and the node
  drains at once; a job longer than every node's jobs goes where it extends the drain least.

An empty node's drain time is ``now``: its extension and misalignment are the job's whole run time. The tie policy
is best-fit (:mod:`~fgdopt.policies.best_fit`; ``drain-fit``, ``finish-align``) or FGD
(:mod:`~fgdopt.policies.fgd`, whose GPU choice it then also takes; ``drain-fit-fgd``, ``finish-align-fgd``).

They are *time-aware* (``job_aware = time_aware = True``): the time engine calls them ``policy(state, task, job=j,
now=t, work_s=w)`` (:class:`~fgdopt.timeline.placement.Placer`). Each keeps every node's drain time from its own
choices (the latest ``now + work_s`` placed there; once past, the node holds none of them), which is exact when
jobs run at speed 1 and are never evicted (the offline problem). Called without a time (the online, timeless
protocol), every node scores 0 and the tie policy decides.
"""

from __future__ import annotations

import numpy as np

from fgdopt.frag import Workload
from fgdopt.model import Task
from fgdopt.policies.base import Choice, RankedPolicy, pick
from fgdopt.policies.best_fit import best_fit_score
from fgdopt.policies.fgd import FGD
from fgdopt.state import ClusterState

ALIGN_WINDOW_S = 60.0
"""``finish-align``: misalignments (seconds) within one window of this many seconds tie (and go to the tie
policy)."""


class DrainTimes:
    """Every node's drain time (seconds): the latest end of the placements it was told of (:meth:`record`)."""

    def __init__(self):
        self.drain_s: np.ndarray | None = None

    def of(self, state: ClusterState) -> np.ndarray:
        """float64 (n_nodes,), the drain time of every node of ``state.cluster`` (0 before any placement)."""
        if self.drain_s is None or len(self.drain_s) != state.cluster.n_nodes:
            self.drain_s = np.zeros(state.cluster.n_nodes)
        return self.drain_s

    def record(self, node: int, end: float) -> None:
        """A job placed on ``node`` ends at ``end`` (seconds)."""
        self.drain_s[node] = max(self.drain_s[node], end)


class DrainFit(RankedPolicy):
    """Least drain-time extension, ties by best-fit (module docstring)."""

    name = "drain-fit"
    job_aware = True
    time_aware = True

    def __init__(self, *args, **options):
        super().__init__(*args, **options)
        self.drain = DrainTimes()

    def cost(self, drain: np.ndarray, now: float, end: float) -> np.ndarray:
        """The extension ``max(0, end - max(drain, now))`` (seconds) of every node of drain time ``drain``."""
        with np.errstate(invalid="ignore"):              # inf - inf: an endless job on a node never drained
            extension = np.nan_to_num(end - np.maximum(drain, now), nan=0.0)
        return np.maximum(extension, 0.0)

    def tie_score(self, state: ClusterState, task: Task, tied: np.ndarray) -> np.ndarray:
        """The tie policy's score of the ``tied`` nodes (higher is better): best-fit's."""
        return best_fit_score(state, tied, task)

    def __call__(self, state: ClusterState, task: Task, job: int | None = None, now: float = 0.0,
                 work_s: float = 0.0) -> Choice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        end = now + work_s
        cost = self.cost(self.drain.of(state)[nodes], now, end)
        node = pick(nodes, -cost, self.node_ranks(state), then=lambda tied: self.tie_score(state, task, tied))
        self.drain.record(node, end)
        return node, self.gpus(state, task, node)


class FinishAlign(DrainFit):
    """Least misalignment of the job's end with the node's drain time, ties by best-fit (module docstring).

    Parameters
    ----------
    window_s : misalignments (seconds) within one window of this many seconds tie (> 0; default
        :data:`ALIGN_WINDOW_S`). The others as :class:`~fgdopt.policies.base.RankedPolicy`.
    """

    name = "finish-align"

    def __init__(self, *args, window_s: float = ALIGN_WINDOW_S, **options):
        super().__init__(*args, **options)
        if not (window_s > 0 and np.isfinite(window_s)):
            raise ValueError(f"{self.name}: window_s must be a positive number of seconds, got {window_s}")
        self.window_s = float(window_s)

    def cost(self, drain: np.ndarray, now: float, end: float) -> np.ndarray:
        """``floor(|end - max(drain, now)| / window_s)`` of every node of drain time ``drain`` (an endless job on a
        node that never drains: 0)."""
        with np.errstate(invalid="ignore"):
            gap = np.nan_to_num(np.abs(end - np.maximum(drain, now)), nan=0.0, posinf=np.inf)
        return np.floor(gap / self.window_s)


class _FGDTies:
    """Mixin: FGD (:class:`~fgdopt.policies.fgd.FGD`, on the target workload) breaks the ties and picks the GPUs."""

    def __init__(self, workload: Workload, seed: int = 0, ranks: np.ndarray | None = None, **options):
        super().__init__(seed, ranks, workload=workload, **options)
        self.fgd = FGD(workload, seed=seed, ranks=ranks, **options)

    def tie_score(self, state: ClusterState, task: Task, tied: np.ndarray) -> np.ndarray:
        return self.fgd.node_scores(state, task, tied)

    def gpus(self, state: ClusterState, task: Task, node: int) -> tuple[int, ...]:
        return self.fgd.gpus(state, task, node)


class DrainFitFGD(_FGDTies, DrainFit):
    """Least drain-time extension, ties by FGD (module docstring)."""

    name = "drain-fit-fgd"


class FinishAlignFGD(_FGDTies, FinishAlign):
    """Least misalignment, ties by FGD (module docstring)."""

    name = "finish-align-fgd"
