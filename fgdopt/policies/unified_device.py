"""The unified-device view: a node's GPUs pooled into one scalar capacity (docs/semantics.md "Online placement").

The planner sees node n with ``sum_g gpu_left[g]`` milli-GPU in one pool and a task needing
``num_gpu * gpu_milli`` of it; a node is a candidate when CPU, memory and GPU model allow the task
and the pool holds its total demand (``gpu_fits`` on the pooled column). Among candidates it picks
by best-fit's integer score with the node-rank tie rule (:mod:`~fgdopt.policies.best_fit`); the pooled
leftover equals best-fit's, so the two policies differ only in the filter.

Realization: the plan is then put on the node's real GPUs with best-fit's GPU pick (whole GPUs:
``gpu_choice``). If the task does
not really fit that node (the pool hid a GPU boundary, e.g. 600 milli asked of two GPUs with 400
left each), the task is **unallocated** (``None``): the planner committed to that node.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import Choice, RankedPolicy, pick
from fgdopt.policies.best_fit import best_fit_score
from fgdopt.state import ClusterState, gpu_fits


def pooled_candidates(state: ClusterState, task: Task) -> np.ndarray:
    """Nodes where ``task`` fits in the pooled view (CPU, memory, GPU model, pooled milli-GPU)."""
    ok = state.feasible_nodes(task._replace(num_gpu=0, gpu_milli=0))
    if task.num_gpu:
        ok &= state.spec_mask(task.gpu_spec)
        ok &= gpu_fits(state.gpu_left.sum(axis=1, keepdims=True), 1, task.gpu_demand)
    return np.flatnonzero(ok)


class UnifiedDevice(RankedPolicy):
    """Best-fit on the pooled GPU view, realized on real GPUs (see module docstring)."""

    name = "unified-device"

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        nodes = pooled_candidates(state, task)
        if len(nodes) == 0:
            return None
        node = pick(nodes, best_fit_score(state, nodes, task), self.node_ranks(state))
        if not state.fits(task, node):
            return None
        return node, self.gpus(state, task, node)
