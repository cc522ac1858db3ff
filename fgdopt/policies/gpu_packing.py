"""GPU packing: fill partly used GPUs first, then partly used nodes, then idle nodes.

Tiers (lower is better), for a task needing GPUs on a feasible node:

0. a sharing task fits on a GPU that is already partly used (``0 < gpu_left < 1000``); within
   the tier, the node whose best such GPU has the least left wins, and the task takes that GPU;
1. the task must open free GPUs but the node already has a used GPU;
2. the node is entirely idle (every GPU free); within the tier, nodes with fewer GPUs first
   (the reference simulator scores ``33 - #GPUs``).

The cost is ``tier * 10000 + key`` (``key`` < 10000: the GPU's left in milli-GPU for tier 0, 0 for
tier 1, the number of GPUs for tier 2). Whole-GPU tasks take the lowest-indexed free GPUs, a
sharing task in tiers 1-2 the lowest-indexed free GPU. CPU-only tasks see every feasible node as
equal (the reference gives them the minimum score everywhere). Ties: seeded uniform draw
(:func:`~fgdopt.policies.base.pick`). ``quantized`` has no effect: the ranking is already discrete.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import GPU_MILLI, Task
from fgdopt.policies.base import SeededPolicy
from fgdopt.state import ClusterState

TIER = 10_000


class GpuPacking(SeededPolicy):
    """GPU-packing policy (see module docstring)."""

    name = "gpu-packing"

    def cost(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        if task.num_gpu == 0:
            return np.zeros(len(nodes))
        gl = state.gpu_left[nodes]
        n_gpus = state.cluster.gpu[nodes]
        idle_node = (gl == GPU_MILLI).sum(axis=1) == n_gpus
        cost = np.where(idle_node, 2 * TIER + n_gpus, TIER).astype(np.float64)
        if task.gpu_milli < GPU_MILLI:
            shared = np.where((gl >= task.gpu_milli) & (gl < GPU_MILLI), gl, GPU_MILLI).min(axis=1)
            cost = np.where(shared < GPU_MILLI, shared, cost)
        return cost
