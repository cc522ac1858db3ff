"""Best-fit: the node left with the least free capacity after placement (reference plugin ``BestFitScore``).

Leftover of node n for task t (dimensionless, 0 = node full):
``leftover = (cpu_left - t.cpu) / 128000 * 0.5 + (idle - t.gpu) / 8000 * 0.5`` (milli-cores and
milli-GPU normalized by the reference's largest node; ``idle`` = the node's free milli-GPU, ``t.gpu`` =
``num_gpu * gpu_milli``), computed in the reference's order of floating-point operations. Score:
``int(100 * (1 - leftover))`` (truncated), the highest wins, ties to the lowest node rank
(:func:`~fgdopt.policies.base.pick`). The plugin min-max normalizes the scores of the feasible nodes;
on scores in 0..100 that map is strictly increasing, so it changes neither the winner nor the ties and
is not repeated here. Inside the node (the reference's ``best`` GPU selection), a sharing task takes
the fitting GPU with the least left (lowest index among equals), a whole-GPU task the lowest-indexed
free GPUs.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import MAX_CPU_MILLI, MAX_GPU_MILLI, RankedPolicy, truncate_score
from fgdopt.state import ClusterState


def leftover(state: ClusterState, nodes: np.ndarray, task: Task) -> np.ndarray:
    """Best-fit leftover (dimensionless, 0 = node full) of ``nodes`` after placing ``task`` there."""
    cpu_after = (state.cpu_left[nodes] - task.cpu_milli).astype(np.float64)
    gpu_after = (state.gpu_left[nodes].sum(axis=1) - task.gpu_demand).astype(np.float64)
    return cpu_after / MAX_CPU_MILLI * 0.5 + gpu_after / MAX_GPU_MILLI * 0.5


def best_fit_score(state: ClusterState, nodes: np.ndarray, task: Task) -> np.ndarray:
    """The plugin's integer score ``int(100 * (1 - leftover))`` of ``nodes`` (higher is better)."""
    return truncate_score(1.0 - leftover(state, nodes, task))


class BestFit(RankedPolicy):
    """Best-fit policy (see module docstring)."""

    name = "best-fit"

    def score(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        return best_fit_score(state, nodes, task)
