"""Dot-product (Tetris-style alignment; reference plugin ``DotProductScore``, ``merge`` / ``max``).

The node's free vector and the task's demand vector over (CPU, GPU), each normalized by the
reference's largest node (128000 milli-cores, 8000 milli-GPU), the node's GPUs merged into one
dimension: ``product = cpu_left/128000 * t.cpu/128000 + idle/8000 * t.gpu/8000`` with the node's
state *before* placement (``idle`` = free milli-GPU, ``t.gpu = num_gpu * gpu_milli``). Score:
``int(100 * (1 - product / 2))`` (truncated); the highest wins (the smallest product), ties to the
lowest node rank. Inside the node the reference runs it with the ``best`` GPU selection: a sharing
task takes the fitting GPU with the least left, a whole-GPU task the lowest-indexed free GPUs.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import MAX_CPU_MILLI, MAX_GPU_MILLI, RankedPolicy, truncate_score
from fgdopt.state import ClusterState


class DotProduct(RankedPolicy):
    """Dot-product policy (see module docstring)."""

    name = "dot-product"

    def score(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        node_cpu = state.cpu_left[nodes] / MAX_CPU_MILLI
        node_gpu = state.gpu_left[nodes].sum(axis=1) / MAX_GPU_MILLI
        product = node_cpu * (task.cpu_milli / MAX_CPU_MILLI) + node_gpu * (task.gpu_demand / MAX_GPU_MILLI)
        return truncate_score(1.0 - product / 2)
