"""Random: a uniformly random feasible node (reference plugin ``RandomScore``, ``random`` GPU selection).

Draws, with the policy's seeded generator: the node uniformly among the feasible ones (the plugin
scores one drawn node 100 and every other 0, so no tie arises), then for a sharing task one GPU
uniformly among those that fit. A whole-GPU task takes the lowest-indexed free GPUs, as the
reference's exclusive-GPU allocation does under every GPU selection method (or, with
``gpu_choice="best-ring"``, the free set with the best ring; :meth:`RankedPolicy.whole_gpus`).
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import GPU_MILLI, Task
from fgdopt.policies.base import Choice, RankedPolicy
from fgdopt.state import ClusterState, fitting_gpus


class RandomFit(RankedPolicy):
    """Random policy (see module docstring)."""

    name = "random"

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        node = int(nodes[self.rng.integers(len(nodes))])
        return node, self.gpus(state, task, node)

    def gpus(self, state: ClusterState, task: Task, node: int) -> tuple[int, ...]:
        if task.num_gpu == 1 and task.gpu_milli < GPU_MILLI:
            fit = fitting_gpus(state.gpu_left[node], task.gpu_milli)
            return (int(fit[self.rng.integers(len(fit))]),)
        return super().gpus(state, task, node)
