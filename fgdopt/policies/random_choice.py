"""Random: a uniformly random feasible node, then uniformly random fitting GPU(s).

Draws, with the policy's seeded generator: the node uniformly among the feasible ones, then for a
sharing task one GPU uniformly among those that fit, for a whole-GPU task ``num_gpu`` distinct free
GPUs uniformly (returned in ascending order). ``quantized`` has no effect.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import Choice, SeededPolicy
from fgdopt.state import ClusterState, fitting_gpus


class RandomFit(SeededPolicy):
    """Random policy (see module docstring)."""

    name = "random"

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        node = int(nodes[self.rng.integers(len(nodes))])
        if task.num_gpu == 0:
            return node, ()
        fit = fitting_gpus(state.gpu_left[node], task.gpu_milli)
        return node, tuple(sorted(int(g) for g in self.rng.choice(fit, size=task.num_gpu, replace=False)))
