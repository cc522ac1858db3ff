"""The per-GPU-dimension view: each GPU a resource dimension, each task a FIXED demand vector.

As in classical vector bin packing, a task's demand vector is fixed: ``gpu_milli`` on GPU dimensions
``0 .. num_gpu-1`` and nothing on the others. A node is a candidate when the task really fits it
(:meth:`ClusterState.feasible_nodes`) *and* those first ``num_gpu`` GPUs each have ``gpu_milli``
left; the task always lands on GPUs ``(0, ..., num_gpu-1)``. A sharing task can thus only use GPU
0 of any node: once GPU 0 is too full the node's other GPUs are wasted for it. The node is chosen
best-fit (same leftover, tie rule and ``quantized`` option as :mod:`best_fit`).
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import Choice, SeededPolicy
from fgdopt.policies.best_fit import best_fit_node
from fgdopt.state import ClusterState, gpu_fits


class PerGpuDimension(SeededPolicy):
    """Best-fit with fixed per-GPU demand vectors (see module docstring)."""

    name = "per-gpu-dimension"

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        ok = state.feasible_nodes(task)
        k = task.num_gpu
        if k:
            ok &= gpu_fits(state.gpu_left[:, :k], k, task.gpu_milli)
        node = best_fit_node(state, np.flatnonzero(ok), task, self.rng, self.quantized)
        return None if node is None else (node, tuple(range(k)))
