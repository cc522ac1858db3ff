"""Dot-product (Tetris-style alignment, SPEC "Online placement").

Cost of node n for task t: the dot product of the node's free vector and the task's demand vector
over (CPU, GPU), each normalized by the largest node (128000 milli-cores, 8000 milli-GPU):
``cpu_left/128000 * t.cpu/128000 + idle/8000 * t.gpu/8000`` with the node's state *before*
placement (``idle`` = free milli-GPU, ``t.gpu = num_gpu * gpu_milli``). The smallest product wins
(as in the reference simulator, whose score is ``1 - product``). Inside the node a sharing task takes
the fitting GPU with the least left — the per-GPU product is smallest there — and a whole-GPU task
the lowest-indexed free GPUs.

Ties: seeded uniform draw (:func:`~fgdopt.policies.base.pick`). ``quantized=True`` ranks by the
integer score ``int(100 * (1 - product / 2))`` (the product lies in [0, 2]).
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import MAX_CPU_MILLI, MAX_GPU_MILLI, SeededPolicy, integer_score
from fgdopt.state import ClusterState


class DotProduct(SeededPolicy):
    """Dot-product policy (see module docstring)."""

    name = "dot-product"

    def cost(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        product = (state.cpu_left[nodes] / MAX_CPU_MILLI * (task.cpu_milli / MAX_CPU_MILLI)
                   + state.gpu_left[nodes].sum(axis=1) / MAX_GPU_MILLI * (task.gpu_demand / MAX_GPU_MILLI))
        return -integer_score(1.0 - product / 2) if self.quantized else product
