"""What every online policy shares: the :class:`Policy` protocol, the node-rank tie rule and GPU picks.

A policy is a callable ``policy(state, task) -> (node, gpus) | None`` that reads a
:class:`~fgdopt.state.ClusterState` and never mutates it. Feasibility always comes from
:meth:`ClusterState.feasible_nodes` (or, for the two flawed views, from :func:`~fgdopt.state.gpu_fits`
applied to their own view of the node); this module only ranks and breaks ties.

Tie rule (all built-in policies; docs/semantics.md "How the reference simulator decides"). Each policy scores the
feasible nodes, higher is better -- the reference's policies with the integer score 0..100 of their
Kubernetes plugin. Among the nodes sharing the top score the policy takes the node of lowest *rank*:
every run gives each node a rank, one uniformly random permutation of the nodes drawn once with the
run's seeded generator (or given explicitly, ``ranks[node]``). The reference simulator does the same:
it prefixes each node's name with its index in a random permutation and its scheduler takes the
smallest name among equal scores. A tie is thus first-fit in a random but fixed node order.

GPU choice (every built-in policy, ``gpu_choice=``; :data:`GPU_CHOICES`). Node choice never depends on it
(except ``topo-fgd``, which is an FGD variant). It only decides which completely free GPUs a whole-GPU task
of ``k >= 2`` GPUs takes on the chosen node:

* ``lowest-index`` (default, the reference's): the ``k`` lowest-indexed free GPUs;
* ``best-ring``: the free ``k``-set with the best ring bandwidth on the node's
  :class:`~fgdopt.topology.Topology`, ties by lowest indices (:meth:`Topology.best_free_set`);
* ``topo-fgd`` (``fgd`` and ``fgd-exact`` only): FGD whose fragmentation includes the topology form
  (:mod:`fgdopt.policies.fgd`); it weighs every free set, and its deltas also steer the node choice.

The topology reaches the policy as a :class:`~fgdopt.topology.TopologyMap` (``topology=``, default
:meth:`TopologyMap.default`, the documented openb assumption), resolved once per cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from fgdopt.model import GPU_MILLI, Task
from fgdopt.state import ClusterState, fitting_gpus
from fgdopt.topology import ClusterTopology, TopologyMap, free_masks

if TYPE_CHECKING:
    from fgdopt.frag import Workload

Choice = tuple[int, tuple[int, ...]]
"""A placement decision: node index and the ids of the GPUs that receive ``gpu_milli`` each."""

TIE_TOL = 1e-6
"""Real-valued scores closer than this to the best one count as ties (absorbs float rounding)."""

MAX_CPU_MILLI = 128_000
"""Normalizer of the CPU dimension in packing scores (the reference's ``MaxSpecCpu``, milli-cores)."""

MAX_GPU_MILLI = 8 * GPU_MILLI
"""Normalizer of the GPU dimension in packing scores (the reference's ``MaxSpecGpu``, milli-GPU)."""

MAX_SCORE = 100
"""Kubernetes' ``MaxNodeScore``: plugin scores are integers in 0..100."""

GPU_CHOICES = ("lowest-index", "best-ring", "topo-fgd")
"""GPU choices inside the chosen node (see module docstring); ``topo-fgd`` applies to FGD only."""


class PolicyError(RuntimeError):
    """A policy failed on a task: it raised, or chose a node and GPUs where the task does not fit. The message is
    one line naming the policy and the task (index in the run and name)."""


class Policy(Protocol):
    """An online placement policy (see module docstring)."""

    name: str

    def __call__(self, state: ClusterState, task: Task) -> Choice | None: ...


class RankedPolicy:
    """Base of the built-in policies: a seeded generator, the node ranks and the tie rule.

    Parameters
    ----------
    seed : seeds the policy's generator (random draws, and the node ranks when not given).
    ranks : ``ranks[i]`` is the rank of node i (a permutation of ``0..n_nodes-1``); ``None`` draws
        one with the generator at the first call.
    gpu_choice : one of :data:`GPU_CHOICES` (``topo-fgd`` only for FGD); the GPUs of a whole-GPU task.
    topology : a :class:`~fgdopt.topology.TopologyMap` (default: the shipped openb assumption); used by
        ``best-ring`` and ``topo-fgd`` only.
    workload : the target workload M (:class:`~fgdopt.frag.Workload`), kept as :attr:`workload` for the
        subclasses that read it (FGD; a policy of your own); the others ignore it. With it, every keyword of
        :func:`~fgdopt.policies.make_policy` is accepted, so a subclass needs no ``__init__`` of its own.

    Raises
    ------
    ValueError : unknown ``gpu_choice``, or ``topo-fgd`` for a policy that is not FGD.

    Subclasses that rank nodes implement :meth:`score` (and :meth:`gpus` when their GPU pick is not
    best-fit); the call returns the top-scored feasible node, ties to the lowest rank.
    """

    name: str
    gpu_choices: tuple[str, ...] = ("lowest-index", "best-ring")

    def __init__(self, seed: int = 0, ranks: np.ndarray | None = None, *, gpu_choice: str = "lowest-index",
                 topology: TopologyMap | None = None, workload: Workload | None = None):
        self.workload = workload
        self.rng = np.random.default_rng(seed)
        self.ranks = None if ranks is None else _check_ranks(ranks)
        if gpu_choice not in self.gpu_choices:
            raise ValueError(f"{self.name}: gpu_choice {gpu_choice!r} not in {self.gpu_choices}")
        self.gpu_choice = gpu_choice
        self.topology = topology
        self._topo: ClusterTopology | None = None

    def cluster_topology(self, state: ClusterState) -> ClusterTopology:
        """The topology of every node of ``state.cluster`` (resolved once per cluster)."""
        if self._topo is None or self._topo.cluster is not state.cluster:
            self._topo = (self.topology or TopologyMap.default()).for_cluster(state.cluster)
        return self._topo

    def whole_gpus(self, state: ClusterState, task: Task, node: int) -> tuple[int, ...]:
        """The free GPUs a whole-GPU task takes on ``node`` under :attr:`gpu_choice`."""
        row = state.gpu_left[node]
        if self.gpu_choice == "lowest-index" or task.num_gpu < 2:
            return lowest_free_gpus(row, task.num_gpu)
        return self.cluster_topology(state).of(node).best_free_set(int(free_masks(row[None, :])[0]), task.num_gpu)

    def node_ranks(self, state: ClusterState) -> np.ndarray:
        """The rank of every node (drawn once per policy object, then fixed)."""
        n = state.cluster.n_nodes
        if self.ranks is None:
            self.ranks = self.rng.permutation(n)
        elif len(self.ranks) != n:
            raise ValueError(f"{self.name}: {len(self.ranks)} node ranks for a cluster of {n} nodes")
        return self.ranks

    def score(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        """Score of each feasible node in ``nodes`` (higher is better)."""
        raise NotImplementedError

    def gpus(self, state: ClusterState, task: Task, node: int) -> tuple[int, ...]:
        """The GPUs ``task`` takes on ``node`` (where it fits): best-fit, :meth:`whole_gpus` for whole GPUs."""
        if task.num_gpu and task.gpu_milli == GPU_MILLI:
            return self.whole_gpus(state, task, node)
        return best_fit_gpus(state.gpu_left[node], task)

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        node = pick(nodes, self.score(state, task, nodes), self.node_ranks(state))
        return node, self.gpus(state, task, node)


def _check_ranks(ranks) -> np.ndarray:
    ranks = np.asarray(ranks, dtype=np.int64)
    if ranks.ndim != 1 or not np.array_equal(np.sort(ranks), np.arange(len(ranks))):
        raise ValueError("node ranks must be a permutation of 0..n_nodes-1")
    return ranks


def pick(nodes: np.ndarray, score: np.ndarray, ranks: np.ndarray,
         then: Callable[[np.ndarray], np.ndarray] | None = None) -> int:
    """The node of highest ``score``; ties (within :data:`TIE_TOL`) go to the lowest ``ranks[node]``.

    ``then`` (optional) maps the tied node ids to a secondary score (higher is better), applied
    before the ranks.

    Examples
    --------
    >>> pick(np.array([4, 7, 9]), np.array([50, 61, 61]), ranks=np.array([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]))
    9
    """
    tied = nodes[score >= score.max() - TIE_TOL]
    if then is not None and len(tied) > 1:
        sub = then(tied)
        tied = tied[sub >= sub.max() - TIE_TOL]
    return int(tied[np.argmin(ranks[tied])])


def truncate_score(value: np.ndarray) -> np.ndarray:
    """Go's ``int64(100 * value)`` (truncation toward zero) of a score in [0, 1], as an int64 array."""
    return np.trunc(MAX_SCORE * np.asarray(value, dtype=np.float64)).astype(np.int64)


def lowest_free_gpus(gpu_left_row: np.ndarray, num_gpu: int) -> tuple[int, ...]:
    """The ``num_gpu`` lowest-indexed completely free GPUs of one node."""
    return tuple(int(g) for g in np.flatnonzero(gpu_left_row == GPU_MILLI)[:num_gpu])


def least_left_gpu(gpu_left_row: np.ndarray, gpu_milli: int) -> int:
    """The fitting GPU with the least free milli-GPU (lowest index among equals)."""
    fit = fitting_gpus(gpu_left_row, gpu_milli)
    return int(fit[np.argmin(gpu_left_row[fit])])


def best_fit_gpus(gpu_left_row: np.ndarray, task: Task) -> tuple[int, ...]:
    """GPU ids for ``task`` on one node where it fits (the reference's ``best`` GPU selection): none
    for CPU-only, the least-left fitting GPU for a sharing task, the lowest-indexed free GPUs for a
    whole-GPU task."""
    if task.num_gpu == 0:
        return ()
    if task.gpu_milli < GPU_MILLI:
        return (least_left_gpu(gpu_left_row, task.gpu_milli),)
    return lowest_free_gpus(gpu_left_row, task.num_gpu)
