"""GPU clustering: put tasks of the same GPU kind together (reference plugin ``GpuClusteringScore``).

A GPU task's *affinity* is ``share-gpu`` for a sharing task (whatever its ``gpu_milli``) and
``k-gpu`` for a task of k whole GPUs; a node's affinities are those of the GPU tasks it hosts
(CPU-only tasks carry none). With ``idle`` the node's free milli-GPU, ``fill = 25 * (8000 - idle) // 8000``
(integer arithmetic, 0..25), the score of a feasible node for a GPU task is

* ``75 + fill`` if the node hosts only the task's affinity;
* ``50 + fill`` if it hosts several affinities including the task's;
* ``25 + fill`` if it hosts no GPU task;
* ``fill`` if it hosts only other affinities.

The highest wins, ties to the lowest node rank. A CPU-only task scores 0 everywhere (first-fit in
node-rank order). Inside the node the reference runs it with the ``best`` GPU selection (least-left
fitting GPU; lowest-indexed free GPUs for whole-GPU tasks).

The one-line summary in docs/semantics.md groups by "the same per-GPU demand"; the plugin groups by these
affinities, and this module follows the plugin.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import GPU_MILLI, MAX_GPUS_PER_NODE, Task
from fgdopt.policies.base import MAX_GPU_MILLI, MAX_SCORE, RankedPolicy
from fgdopt.state import UNPLACED, ClusterState

QUARTER = MAX_SCORE // 4


def affinity(num_gpu: np.ndarray, gpu_milli: np.ndarray) -> np.ndarray:
    """Affinity code of GPU tasks: 0 for sharing tasks, k for k whole GPUs (-1 for CPU-only tasks)."""
    return np.where(num_gpu == 0, -1, np.where(gpu_milli < GPU_MILLI, 0, num_gpu))


def affinity_counts(state: ClusterState) -> np.ndarray:
    """(n_nodes, 17) int array: how many placed GPU tasks of each affinity code (0..16) every node hosts (a gang
    counts once, at its first part's node)."""
    placed = state.node_of != UNPLACED
    codes = affinity(state.tasks.num_gpu[placed], state.tasks.gpu_milli[placed])
    gpu_task = codes >= 0
    n, k = state.cluster.n_nodes, MAX_GPUS_PER_NODE + 1
    flat = state.node_of[placed][gpu_task] * k + codes[gpu_task]
    return np.bincount(flat, minlength=n * k).reshape(n, k)


class GpuClustering(RankedPolicy):
    """GPU-clustering policy (see module docstring).

    The affinity counts of the state last seen are kept and updated from the tasks whose node changed,
    so a replay does not recount every placed task at every call.
    """

    name = "gpu-clustering"

    def __init__(self, seed: int = 0, ranks: np.ndarray | None = None, **gpu_options):
        super().__init__(seed, ranks, **gpu_options)
        self._tasks = None

    def _counts(self, state: ClusterState) -> np.ndarray:
        if self._tasks is not state.tasks or self._cluster is not state.cluster:
            self._tasks, self._cluster = state.tasks, state.cluster
            self._node_of = state.node_of.copy()
            self._codes = affinity(state.tasks.num_gpu, state.tasks.gpu_milli)
            self._hosted = affinity_counts(state)
            return self._hosted
        moved = np.flatnonzero(state.node_of != self._node_of)
        for i in moved[self._codes[moved] >= 0]:
            if self._node_of[i] != UNPLACED:
                self._hosted[self._node_of[i], self._codes[i]] -= 1
            if state.node_of[i] != UNPLACED:
                self._hosted[state.node_of[i], self._codes[i]] += 1
        self._node_of[moved] = state.node_of[moved]
        return self._hosted

    def score(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        if task.num_gpu == 0:
            return np.zeros(len(nodes), dtype=np.int64)
        code = int(affinity(np.array(task.num_gpu), np.array(task.gpu_milli)))
        hosted = self._counts(state)[nodes] > 0
        same = hosted[:, code]
        other = hosted.sum(axis=1) - same
        tier = np.select([same & (other == 0), same, other == 0], [3, 2, 1], 0)
        fill = QUARTER * (MAX_GPU_MILLI - state.gpu_left[nodes].sum(axis=1)) // MAX_GPU_MILLI
        return tier * QUARTER + fill
