"""What every online policy shares: the :class:`Policy` protocol, the seeded tie rule and GPU picks.

A policy is a callable ``policy(state, task) -> (node, gpus) | None`` that reads a
:class:`~fgdopt.state.ClusterState` and never mutates it. Feasibility always comes from
:meth:`ClusterState.feasible_nodes` (or, for the two flawed views, from :func:`~fgdopt.state.gpu_fits`
applied to their own view of the node); this module only ranks and breaks ties.

Tie rule (all policies): every policy turns its ranking into a cost per feasible node, lower is
better; the nodes whose cost lies within :data:`TIE_TOL` of the minimum are tied and one of them is
drawn uniformly with the policy's ``numpy.random.Generator`` (seeded by ``make_policy(seed=...)``).
No draw is made when a single node is best. Given the seed and the sequence of calls, the choice
is therefore deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from fgdopt.model import GPU_MILLI, Task
from fgdopt.state import ClusterState, fitting_gpus

Choice = tuple[int, tuple[int, ...]]
"""A placement decision: node index and the ids of the GPUs that receive ``gpu_milli`` each."""

TIE_TOL = 1e-6
"""Costs closer than this to the best one count as ties (absorbs float rounding of equal states)."""

MAX_CPU_MILLI = 128_000
"""Normalizer of the CPU dimension in packing scores (the largest openb node, milli-cores)."""

MAX_GPU_MILLI = 8 * GPU_MILLI
"""Normalizer of the GPU dimension in packing scores (an 8-GPU node, milli-GPU)."""


class Policy(Protocol):
    """An online placement policy (see module docstring)."""

    name: str

    def __call__(self, state: ClusterState, task: Task) -> Choice | None: ...


class SeededPolicy:
    """Base of the built-in policies: a generator seeded by ``seed`` (ties, random draws) and the
    ``quantized`` flag (rank by Kubernetes' integer score where the policy has one)."""

    name: str

    def __init__(self, seed: int = 0, quantized: bool = False):
        self.rng = np.random.default_rng(seed)
        self.quantized = quantized

    def cost(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        """Cost of each feasible node (lower is better); policies that rank nodes this way override it."""
        raise NotImplementedError

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        """The feasible node of least :meth:`cost` (seeded ties), with :func:`best_fit_gpus` inside it."""
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        node = pick(nodes, self.cost(state, task, nodes), self.rng)
        return node, best_fit_gpus(state.gpu_left[node], task)


def pick(nodes: np.ndarray, cost: np.ndarray, rng: np.random.Generator,
         then: Callable[[np.ndarray], np.ndarray] | None = None) -> int:
    """The node of least ``cost``; ties (within :data:`TIE_TOL`) drawn uniformly with ``rng``.

    ``then`` (optional) maps the tied node ids to a secondary cost, applied before the draw.

    Examples
    --------
    >>> pick(np.array([4, 7, 9]), np.array([2.0, 1.0, 3.0]), np.random.default_rng(0))
    7
    """
    tied = np.flatnonzero(cost <= cost.min() + TIE_TOL)
    if then is not None and len(tied) > 1:
        sub = then(nodes[tied])
        tied = tied[sub <= sub.min() + TIE_TOL]
    return int(nodes[tied[0] if len(tied) == 1 else tied[rng.integers(len(tied))]])


def integer_score(value: np.ndarray) -> np.ndarray:
    """Kubernetes' integer node score ``int(100 * value)`` (truncation, as Go's ``int64()``), as a float array."""
    return np.trunc(100.0 * np.asarray(value, dtype=np.float64))


def lowest_free_gpus(gpu_left_row: np.ndarray, num_gpu: int) -> tuple[int, ...]:
    """The ``num_gpu`` lowest-indexed completely free GPUs of one node."""
    return tuple(int(g) for g in np.flatnonzero(gpu_left_row == GPU_MILLI)[:num_gpu])


def least_left_gpu(gpu_left_row: np.ndarray, gpu_milli: int) -> int:
    """The fitting GPU with the least free milli-GPU (lowest index among equals)."""
    fit = fitting_gpus(gpu_left_row, gpu_milli)
    return int(fit[np.argmin(gpu_left_row[fit])])


def best_fit_gpus(gpu_left_row: np.ndarray, task: Task) -> tuple[int, ...]:
    """GPU ids for ``task`` on one node where it fits: none for CPU-only, the least-left fitting GPU
    for a sharing task, the lowest-indexed free GPUs for a whole-GPU task."""
    if task.num_gpu == 0:
        return ()
    if task.gpu_milli < GPU_MILLI:
        return (least_left_gpu(gpu_left_row, task.gpu_milli),)
    return lowest_free_gpus(gpu_left_row, task.num_gpu)
