"""Best-fit: the node left with the least free capacity after placement (SPEC "Online placement").

Cost of node n for task t: ``leftover = 0.5 * (cpu_left - t.cpu) / 128000 + 0.5 * (idle - t.gpu) / 8000``
(milli-cores and milli-GPU normalized by the largest node; ``idle`` = the node's free milli-GPU,
``t.gpu`` = ``num_gpu * gpu_milli``). Lowest leftover wins; inside the node, a sharing task takes
the fitting GPU with the least left (lowest index among equals), a whole-GPU task the
lowest-indexed free GPUs.

Ties: seeded uniform draw among nodes of equal leftover (:func:`~fgdopt.policies.base.pick`).
``quantized=True`` ranks by the Kubernetes integer score ``int(100 * (1 - leftover))`` instead,
drawing uniformly among the nodes sharing the top score.
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Task
from fgdopt.policies.base import MAX_CPU_MILLI, MAX_GPU_MILLI, Choice, SeededPolicy, best_fit_gpus, integer_score, pick
from fgdopt.state import ClusterState


def leftover(state: ClusterState, nodes: np.ndarray, task: Task) -> np.ndarray:
    """Best-fit leftover (dimensionless, 0 = node full) of ``nodes`` after placing ``task`` there."""
    cpu_after = state.cpu_left[nodes] - task.cpu_milli
    gpu_after = state.gpu_left[nodes].sum(axis=1) - task.gpu_demand
    return 0.5 * cpu_after / MAX_CPU_MILLI + 0.5 * gpu_after / MAX_GPU_MILLI


def best_fit_node(state: ClusterState, nodes: np.ndarray, task: Task, rng: np.random.Generator,
                  quantized: bool) -> int | None:
    """The best-fit choice among candidate ``nodes`` (``None`` if there is none)."""
    if len(nodes) == 0:
        return None
    left = leftover(state, nodes, task)
    return pick(nodes, -integer_score(1.0 - left) if quantized else left, rng)


class BestFit(SeededPolicy):
    """Best-fit policy (see module docstring)."""

    name = "best-fit"

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        node = best_fit_node(state, np.flatnonzero(state.feasible_nodes(task)), task, self.rng, self.quantized)
        return None if node is None else (node, best_fit_gpus(state.gpu_left[node], task))
