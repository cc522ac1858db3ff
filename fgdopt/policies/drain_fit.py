"""Drain-fit: a duration-aware policy that keeps nodes drainable, ties by best-fit.

A node's *drain time* is the latest end among the jobs running on it (the time it becomes empty if nothing more
starts there). Placing a job that starts now and runs ``work_s`` seconds on a node *extends* its drain time by
``max(0, now + work_s - max(drain, now))`` seconds. Drain-fit takes the feasible node of least extension, ties
(within :data:`~fgdopt.policies.base.TIE_TOL`) by the best-fit score (:mod:`~fgdopt.policies.best_fit`), then
the node rank. So a job goes where it ends before the node's current jobs (a long job joins long jobs, a short
one fills the holes of nodes that stay busy anyway) and the nodes that are about to drain stay free for whole-node
jobs; finishing times on a node are aligned. An empty node's extension is the job's whole run time.

It is *time-aware* (``job_aware = time_aware = True``): the time engine calls it ``policy(state, task, job=j,
now=t, work_s=w)`` (:class:`~fgdopt.timeline.placement.Placer`). It keeps every node's drain time from its own
choices (the latest ``now + work_s`` placed there; once past, the node holds none of them), which is exact when
jobs run at speed 1 and are never evicted (the offline problem). Called without a time (the online, timeless
protocol), every extension is 0 and it is best-fit.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import Choice, RankedPolicy, pick
from fgdopt.policies.best_fit import best_fit_score
from fgdopt.state import ClusterState


class DrainFit(RankedPolicy):
    """Least drain-time extension, ties by best-fit (module docstring)."""

    name = "drain-fit"
    job_aware = True
    time_aware = True

    def __init__(self, *args, **options):
        super().__init__(*args, **options)
        self.drain_s: np.ndarray | None = None

    def __call__(self, state: ClusterState, task: Task, job: int | None = None, now: float = 0.0,
                 work_s: float = 0.0) -> Choice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        if self.drain_s is None or len(self.drain_s) != state.cluster.n_nodes:
            self.drain_s = np.zeros(state.cluster.n_nodes)
        end = now + work_s
        with np.errstate(invalid="ignore"):              # inf - inf: an endless job on a node never drained
            extension = np.nan_to_num(end - np.maximum(self.drain_s[nodes], now), nan=0.0)
        node = pick(nodes, -np.maximum(extension, 0.0), self.node_ranks(state),
                    then=lambda tied: best_fit_score(state, tied, task))
        self.drain_s[node] = max(self.drain_s[node], end)
        return node, self.gpus(state, task, node)
