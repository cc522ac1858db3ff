"""GPU packing: fill partly used GPUs first, then partly used nodes, then idle nodes (plugin ``GpuPackingScore``).

Integer score of a feasible node for a task that needs GPUs (``free`` = the node's completely free
GPUs, ``G`` = its GPU count); the highest wins, ties to the lowest node rank:

* the node is entirely idle (``free == G``): ``max(33 - G, G)`` (small idle nodes first);
* otherwise the task's GPUs are taken least-left first among the fitting ones (a whole-GPU task can
  only take free GPUs); if it must open ``k > 0`` free GPUs: ``max(50 - k, 33)``;
* else (a sharing task on a partly used GPU with ``left`` milli-GPU free):
  ``max(100 - (left * 100 // 1000) // 10, 50)`` -- the less left, the better, in steps of 100 milli.

A CPU-only task scores 0 everywhere: a pure tie, first-fit in node-rank order. Inside the node the
reference runs it with the ``best`` GPU selection: the fitting GPU with the least left (the one
scored above), or the lowest-indexed free GPUs for a whole-GPU task.

The one-line summary in docs/semantics.md ("least free first" inside the first tier) is this rule up to the
100-milli steps of the integer score.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import GPU_MILLI, Task
from fgdopt.policies.base import MAX_SCORE, RankedPolicy
from fgdopt.state import ClusterState


class GpuPacking(RankedPolicy):
    """GPU-packing policy (see module docstring)."""

    name = "gpu-packing"

    def score(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        if task.num_gpu == 0:
            return np.zeros(len(nodes), dtype=np.int64)
        gl = state.gpu_left[nodes]
        n_gpus = state.cluster.gpu[nodes]
        free = (gl == GPU_MILLI).sum(axis=1)
        idle = np.maximum(MAX_SCORE // 3 - n_gpus, n_gpus)
        opens = np.full(len(nodes), max(MAX_SCORE // 2 - task.num_gpu, MAX_SCORE // 3))
        score = np.where(free == n_gpus, idle, opens)
        if task.gpu_milli < GPU_MILLI:
            # least-left fitting GPU; 1000 when only free GPUs fit
            used_left = np.where(gl >= task.gpu_milli, gl, GPU_MILLI).min(axis=1)
            shared = np.maximum(MAX_SCORE - (used_left * 100 // GPU_MILLI) // 10, MAX_SCORE // 2)
            score = np.where((free < n_gpus) & (used_left < GPU_MILLI), shared, score)
        return score
