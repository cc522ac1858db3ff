"""GPU clustering: put tasks with the same per-GPU demand together (SPEC "Online placement").

A node's *affinity* is the set of ``gpu_milli`` values of the GPU tasks it hosts (CPU-only tasks
carry none), read from ``state.node_of`` and the state's task list. Tiers (lower is better):

0. the node hosts only tasks with the task's ``gpu_milli``;
1. the node hosts several demands including it;
2. the node hosts no GPU task;
3. the node hosts only other demands.

Within a tier the node with less free GPU wins (the reference simulator adds
``25 * (8000 - idle) / 8000``): cost = ``tier * 10000 + idle`` (milli-GPU). Inside the node a sharing
task takes the fitting GPU with the least left, a whole-GPU task the lowest-indexed free GPUs.
CPU-only tasks see every feasible node as equal. Ties: seeded uniform draw
(:func:`~fgdopt.policies.base.pick`). ``quantized`` has no effect.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import SeededPolicy
from fgdopt.state import UNPLACED, ClusterState

TIER = 10_000


def affinity_counts(state: ClusterState, gpu_milli: int) -> tuple[np.ndarray, np.ndarray]:
    """Per node: how many placed GPU tasks ask ``gpu_milli`` per GPU, and how many ask another amount."""
    placed = state.node_of != UNPLACED
    node = state.node_of[placed]
    milli = state.tasks.gpu_milli[placed]
    gpu_task = milli > 0
    n = state.cluster.n_nodes
    same = np.bincount(node[gpu_task & (milli == gpu_milli)], minlength=n)
    other = np.bincount(node[gpu_task & (milli != gpu_milli)], minlength=n)
    return same, other


class GpuClustering(SeededPolicy):
    """GPU-clustering policy (see module docstring)."""

    name = "gpu-clustering"

    def cost(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        if task.num_gpu == 0:
            return np.zeros(len(nodes))
        same, other = (c[nodes] for c in affinity_counts(state, task.gpu_milli))
        tier = np.select([(same > 0) & (other == 0), same > 0, other == 0], [0, 1, 2], 3)
        return (tier * TIER + state.gpu_left[nodes].sum(axis=1)).astype(np.float64)
