"""Health-aware: best-fit on the nodes where a task gets only healthy GPUs.

Identical GPUs run at different speeds (silicon variance, thermal throttling, ECC errors: the per-GPU *speed
factors* of :mod:`fgdopt.timeline.failures`, 1 = nominal), and a job runs at the speed of its slowest GPU. A GPU
whose factor is below ``healthy`` (default 0.8) is *degraded*. The speed a task would get on a node is the least
factor among the GPUs it would take there, taken fastest first: the ``num_gpu``-th largest factor among the node's
fitting GPUs (1 for a CPU-only task). Health-aware takes the feasible nodes where that speed is at least
``healthy`` (all of them when there are none), then the best-fit score (:mod:`~fgdopt.policies.best_fit`), then the
node rank; on the node, best-fit's GPUs when all of them are healthy, else the fastest fitting ones (lowest index
among equals). So it avoids degraded GPUs and otherwise packs as best-fit does: with no degraded GPU its choice is
best-fit's.

It is *health-aware* (``job_aware = health_aware = True``): the time engine calls it ``policy(state, task, job=j,
gpu_speed=F)``, ``F`` float64 (nodes, max GPUs), the factors now (:class:`~fgdopt.timeline.placement.Placer`).
Called without them (the timeless protocol, or a run without speed factors) it is best-fit.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import Choice, RankedPolicy, pick
from fgdopt.policies.best_fit import best_fit_score
from fgdopt.state import ClusterState

HEALTHY = 0.8
"""A GPU whose speed factor is below this is degraded (a straggler)."""


def speed_on(state: ClusterState, task: Task, nodes: np.ndarray, gpu_speed: np.ndarray) -> np.ndarray:
    """The speed ``task`` would get on each of ``nodes`` taking its fastest fitting GPUs: the ``num_gpu``-th largest
    factor among the GPUs with ``gpu_milli`` free (1 for a CPU-only task). ``nodes`` must be feasible."""
    if task.num_gpu == 0:
        return np.ones(len(nodes))
    fits = state.gpu_left[nodes] >= task.gpu_milli
    factors = np.where(fits, gpu_speed[nodes], -np.inf)
    return -np.partition(-factors, task.num_gpu - 1, axis=1)[:, task.num_gpu - 1]


class HealthAware(RankedPolicy):
    """Best-fit among the nodes where the task gets only healthy GPUs (module docstring)."""

    name = "health-aware"
    job_aware = True
    health_aware = True

    def __init__(self, *args, healthy: float = HEALTHY, **options):
        super().__init__(*args, **options)
        if not 0 < healthy <= 1:
            raise ValueError(f"health-aware: healthy must lie in (0, 1], got {healthy}")
        self.healthy = healthy

    def __call__(self, state: ClusterState, task: Task, job: int | None = None,
                 gpu_speed: np.ndarray | None = None) -> Choice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        if gpu_speed is None or task.num_gpu == 0:
            node = pick(nodes, best_fit_score(state, nodes, task), self.node_ranks(state))
            return node, self.gpus(state, task, node)
        healthy = speed_on(state, task, nodes, gpu_speed) >= self.healthy
        node = pick(nodes, healthy.astype(np.float64), self.node_ranks(state),
                    then=lambda tied: best_fit_score(state, tied, task))
        gpus = self.gpus(state, task, node)
        if (gpu_speed[node, list(gpus)] >= self.healthy).all():
            return node, gpus
        fit = np.flatnonzero(state.gpu_left[node] >= task.gpu_milli)
        fastest = fit[np.argsort(-gpu_speed[node, fit], kind="stable")][:task.num_gpu]
        return node, tuple(sorted(int(g) for g in fastest))
