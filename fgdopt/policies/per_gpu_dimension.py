"""The per-GPU-dimension view: each GPU a resource dimension, each task a FIXED demand vector.

As in classical vector bin packing, a task's demand vector is fixed: ``gpu_milli`` on GPU dimensions
``0 .. num_gpu-1`` and nothing on the others. A node is a candidate when the task really fits it
(:meth:`ClusterState.feasible_nodes`) *and* those first ``num_gpu`` GPUs each have ``gpu_milli``
left; the task always lands on GPUs ``(0, ..., num_gpu-1)``. A sharing task can thus only use GPU
0 of any node: once GPU 0 is too full the node's other GPUs are wasted for it. The node is chosen
by best-fit's integer score with the node-rank tie rule (:mod:`~fgdopt.policies.best_fit`). The fixed
vector is the point of this view, so its only GPU choice is ``lowest-index``.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import Choice, RankedPolicy, pick
from fgdopt.policies.best_fit import best_fit_score
from fgdopt.state import ClusterState, gpu_fits


class PerGpuDimension(RankedPolicy):
    """Best-fit with fixed per-GPU demand vectors (see module docstring)."""

    name = "per-gpu-dimension"
    gpu_choices = ("lowest-index",)

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        ok = state.feasible_nodes(task)
        k = task.num_gpu
        if k:
            ok &= gpu_fits(state.gpu_left[:, :k], k, task.gpu_milli)
        nodes = np.flatnonzero(ok)
        if len(nodes) == 0:
            return None
        return pick(nodes, best_fit_score(state, nodes, task), self.node_ranks(state)), tuple(range(k))
