"""Fragmentation Gradient Descent (FGD): place where the node's fragmentation grows least.

For every feasible node n the policy evaluates ``delta = F_n'(M) - F_n(M)`` (milli-GPU, docs/semantics.md
"Fragmentation") after the hypothetical placement, from :func:`~fgdopt.frag.fragmentation_after`:

* CPU-only task: only the node's CPU changes;
* whole-GPU task: the ``num_gpu`` lowest-indexed free GPUs;
* sharing task: every fitting GPU, evaluated once per *distinct* ``gpu_left`` value (GPUs with equal
  free capacity give equal results).

Two policies share this machinery:

``fgd`` -- the reference plugin ``FGDScore`` (docs/semantics.md "How the reference simulator decides"). Each
candidate gets the integer score ``int(100 * sigmoid(-delta / 1000))`` (truncated); a sharing task's
node score is the best over its GPUs and it takes the lowest-indexed GPU with that score; the node
of highest score wins, ties to the lowest node rank (:func:`~fgdopt.policies.base.pick`). The
coarse score makes ties common -- every CPU-only task scores 50 on most nodes -- and the rank rule
then packs them first-fit in a random but fixed node order.

``fgd-exact`` -- fgdopt's own variant: the smallest real-valued delta wins (within ``TIE_TOL``), the
lowest-indexed GPU reaching it; ties go to the node with the least best-fit leftover
(:func:`~fgdopt.policies.best_fit.leftover`), then to the lowest node rank.

GPU choice (``gpu_choice``, :mod:`fgdopt.policies.base`). ``lowest-index`` and ``best-ring`` only pick a
whole-GPU task's free GPUs on the chosen node: F_n(M) (docs/semantics.md) depends on the multiset of a node's free
capacities, not on which GPUs hold them, so both give the same deltas and the same node. ``topo-fgd``
is the topology-aware variant: F_n(M) is the evaluator's topology form (:mod:`fgdopt.frag`, a node
whose free GPUs hold no best-ring set for a k-GPU shape is fragment for it), a whole-GPU task of k GPUs
is evaluated on *every* free k-set of the node and a sharing task on every fitting GPU (partly used
GPUs with equal free capacity once); the node's option is the one of least real delta (ties: the best
ring, then the lowest GPU indices), its score the policy's score of that delta. Node choice then follows these deltas.

Caching (the hot path of a replay). The policy keeps a snapshot of the free CPU and GPUs it last
saw for every node, F_n(M) of every node, and per task *shape* ``(cpu_milli, num_gpu, gpu_milli)``
the best score, F_n'(M) after and GPU of every node with the node's version it was computed for. On each
call the nodes whose free CPU or GPUs differ from the snapshot get a new version and a fresh F_n(M);
only the feasible nodes whose cached entry is stale are re-evaluated. Memory enters feasibility
(asked of the state on every call) but not fragmentation, so it is not part of the cache. The cache
is keyed by node state only: any state of the same cluster may be passed in any order.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass

import numpy as np

from fgdopt.frag import Workload, fragmentation_after, node_fragmentations
from fgdopt.model import GPU_MILLI, Task
from fgdopt.policies.base import GPU_CHOICES, TIE_TOL, Choice, RankedPolicy, pick, truncate_score
from fgdopt.policies.best_fit import leftover
from fgdopt.state import ClusterState
from fgdopt.topology import TopologyMap, mask_gpus

_COMBOS = [np.array([sum(1 << g for g in c) for c in itertools.combinations(range(8), k)], dtype=np.int64)
           for k in range(9)]
"""Per k: bit masks of the k-subsets of 8 GPUs, in lexicographic order of their GPU ids."""


def _starts(labels: np.ndarray) -> np.ndarray:
    """Where a run of equal values begins in a sorted label array (boolean mask)."""
    out = np.empty(len(labels), dtype=bool)
    if len(labels):
        out[0] = True
        np.not_equal(labels[1:], labels[:-1], out=out[1:])
    return out


@dataclass(eq=False)
class _ShapeCache:
    """Per node, for one task shape: score (higher is better) and F_n'(M) after the best option, its GPU
    (sharing tasks, else -1), and the node version they were computed for."""

    score: np.ndarray
    after: np.ndarray
    gpu: np.ndarray
    version: np.ndarray

    @classmethod
    def empty(cls, n: int) -> _ShapeCache:
        return cls(np.zeros(n), np.zeros(n), np.full(n, -1), np.full(n, -1))


class FGD(RankedPolicy):
    """The reference's FGD (integer scores) for a target :class:`~fgdopt.frag.Workload` (see module docstring)."""

    name = "fgd"
    gpu_choices = GPU_CHOICES

    def __init__(self, workload: Workload, seed: int = 0, ranks: np.ndarray | None = None, *,
                 gpu_choice: str = "lowest-index", topology: TopologyMap | None = None):
        super().__init__(seed, ranks, gpu_choice=gpu_choice, topology=topology)
        self.workload = workload
        self._ftopo = None          # the ClusterTopology of the topology form (topo-fgd only)
        self._cluster = None
        self._seen: tuple[weakref.ref | None, int] = (None, -1)   # the state last synced with, its revision
        self._expected: tuple[int, np.ndarray, int, float] | None = None

    # -- cache upkeep ------------------------------------------------------------------------
    def _sync(self, state: ClusterState) -> None:
        """Bring the snapshot, F_n(M) and node versions up to date with ``state``.

        When the only change is the placement this policy just proposed, the node's new F_n(M) is
        the one computed while scoring it (the same function on the same numbers, so the cached F_n(M)
        is bit for bit a fresh one and a placement that changes nothing scores a delta of exactly 0);
        otherwise it is recomputed. The same
        state object one revision later can only have changed at ``state.last_node``; any other
        state is compared with the snapshot node by node.
        """
        (seen_ref, seen_revision), self._seen = self._seen, (weakref.ref(state), state.revision)
        same = seen_ref is not None and seen_ref() is state
        if self._cluster is not state.cluster:
            self._cluster = state.cluster
            self._ftopo = self.cluster_topology(state) if self.gpu_choice == "topo-fgd" else None
            self._gpu = state.gpu_left.copy()
            self._cpu = state.cpu_left.copy()
            self._frag = node_fragmentations(state, self.workload, topology=self._ftopo)
            self._version = np.zeros(state.cluster.n_nodes, dtype=np.int64)
            self._shapes: dict[tuple[int, int, int], _ShapeCache] = {}
            return
        if same and seen_revision == state.revision:
            return
        if same and seen_revision == state.revision - 1 and state.last_node >= 0:
            changed = np.array([state.last_node])
        else:
            changed = np.flatnonzero((state.gpu_left != self._gpu).any(axis=1) | (state.cpu_left != self._cpu))
        if len(changed) == 0:
            return
        self._gpu[changed] = state.gpu_left[changed]
        self._cpu[changed] = state.cpu_left[changed]
        self._version[changed] += 1
        expected, self._expected = self._expected, None
        if (expected is not None and len(changed) == 1 and changed[0] == expected[0]
                and np.array_equal(state.gpu_left[changed[0]], expected[1])
                and state.cpu_left[changed[0]] == expected[2]):
            self._frag[changed[0]] = expected[3]
        else:
            self._frag[changed] = node_fragmentations(state, self.workload, changed, topology=self._ftopo)

    def _score(self, delta: np.ndarray) -> np.ndarray:
        """Score of fragmentation deltas (higher is better): the plugin's ``int(100 * sigmoid(-delta / 1000))``."""
        return truncate_score(1.0 / (1.0 + np.exp(delta / 1000.0)))

    def _then(self, state: ClusterState, task: Task):
        """Secondary score among tied nodes (``None``: straight to the node ranks)."""
        return None

    def _evaluate(self, state: ClusterState, task: Task, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
        """Score, F_n'(M) after and GPU (or -1; topo-fgd whole-GPU tasks: GPU bit mask) of the best option of
        ``task`` on each of ``nodes`` (where it fits)."""
        if self._ftopo is not None and task.num_gpu:
            return self._evaluate_topo(state, task, nodes)
        gl = state.gpu_left[nodes]
        if task.num_gpu == 0 or task.gpu_milli == GPU_MILLI:
            free = gl == GPU_MILLI
            mask = free & (np.cumsum(free, axis=1) <= task.num_gpu)
            after = fragmentation_after(state, self.workload, task.cpu_milli, task.gpu_milli, nodes, mask)
            return self._score(after - self._frag[nodes]), after, np.full(len(nodes), -1)
        # sharing: one candidate per (node, distinct fitting gpu_left value), in GPU order per node
        g = gl.shape[1]
        earlier_equal = ((gl[:, :, None] == gl[:, None, :]) & np.tri(g, g, -1, dtype=bool)).any(axis=2)
        rows, gpus = np.nonzero((gl >= task.gpu_milli) & ~earlier_equal)
        mask = np.zeros((len(rows), g), dtype=bool)
        mask[np.arange(len(rows)), gpus] = True
        cand_nodes = nodes[rows]
        after = fragmentation_after(state, self.workload, task.cpu_milli, task.gpu_milli, cand_nodes, mask)
        score = self._score(after - self._frag[cand_nodes])
        new_row = _starts(rows)
        group = np.cumsum(new_row) - 1
        best = np.maximum.reduceat(score, np.flatnonzero(new_row))
        # the first (lowest-GPU) candidate of each node reaching the node's best score
        hit = np.flatnonzero(score >= best[group] - TIE_TOL)
        chosen = hit[_starts(group[hit])]
        return score[chosen], after[chosen], gpus[chosen]

    def _evaluate_topo(self, state: ClusterState, task: Task, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
        """topo-fgd: every free k-set (whole GPUs) or fitting GPU (sharing) of each node; least real delta."""
        gl = state.gpu_left[nodes]
        g = gl.shape[1]
        if task.gpu_milli == GPU_MILLI:
            bits = 1 << np.arange(g, dtype=np.int64)
            free = ((gl == GPU_MILLI) * bits).sum(axis=1)
            combos = _COMBOS[task.num_gpu]
            combos = combos[combos < (1 << g)]
            rows, cand = np.nonzero((combos[None, :] & ~free[:, None]) == 0)
            labels = combos[cand]
            mask = (labels[:, None] & bits[None, :]) != 0
        else:
            earlier_equal = ((gl[:, :, None] == gl[:, None, :]) & np.tri(g, g, -1, dtype=bool)).any(axis=2)
            rows, labels = np.nonzero((gl >= task.gpu_milli) & ~(earlier_equal & (gl < GPU_MILLI)))
            mask = np.zeros((len(rows), g), dtype=bool)
            mask[np.arange(len(rows)), labels] = True
        cand_nodes = nodes[rows]
        after = fragmentation_after(state, self.workload, task.cpu_milli, task.gpu_milli, cand_nodes, mask,
                                    topology=self._ftopo)
        delta = after - self._frag[cand_nodes]
        starts = np.flatnonzero(_starts(rows))
        group = np.cumsum(_starts(rows)) - 1
        least = np.minimum.reduceat(delta, starts)
        hit = np.flatnonzero(delta <= least[group] + TIE_TOL)
        if task.gpu_milli == GPU_MILLI:   # among equal deltas, the best ring first (stable: then lowest ids)
            ring = self._ftopo.ring[self._ftopo.node_type[cand_nodes[hit]], labels[hit]]
            hit = hit[np.lexsort((-ring, group[hit]))]
        chosen = hit[_starts(group[hit])]     # first candidate of each node
        return self._score(delta[chosen]), after[chosen], labels[chosen]

    def _cache(self, state: ClusterState, task: Task, nodes: np.ndarray) -> _ShapeCache:
        """The task shape's cache, with every node of ``nodes`` (where ``task`` fits) up to date."""
        self._sync(state)
        key = (task.cpu_milli, task.num_gpu, task.gpu_milli)
        cache = self._shapes.get(key)
        if cache is None:
            cache = self._shapes[key] = _ShapeCache.empty(state.cluster.n_nodes)
        stale = nodes[cache.version[nodes] != self._version[nodes]]
        if len(stale):
            cache.score[stale], cache.after[stale], cache.gpu[stale] = self._evaluate(state, task, stale)
            cache.version[stale] = self._version[stale]
        return cache

    # -- the policy --------------------------------------------------------------------------
    def node_scores(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        """The policy's score of each of ``nodes`` (where ``task`` fits; higher is better): what another policy
        breaking its ties by FGD compares."""
        return self._cache(state, task, nodes).score[nodes]

    def gpus(self, state: ClusterState, task: Task, node: int) -> tuple[int, ...]:
        cached = task.num_gpu == 1 or (task.num_gpu and self.gpu_choice == "topo-fgd")
        cache = self._cache(state, task, np.array([node])) if cached else None
        return self._gpus(state, task, node, cache)

    def _gpus(self, state: ClusterState, task: Task, node: int, cache: _ShapeCache | None) -> tuple[int, ...]:
        """A sharing task's GPU from the (up-to-date) ``cache``; a whole-GPU task's by :attr:`gpu_choice`
        (topo-fgd: the cached set)."""
        if task.num_gpu == 0:
            return ()
        if task.gpu_milli < GPU_MILLI:
            return (int(cache.gpu[node]),)
        if self.gpu_choice == "topo-fgd":
            return mask_gpus(int(cache.gpu[node]))
        return self.whole_gpus(state, task, node)

    def __call__(self, state: ClusterState, task: Task) -> Choice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        cache = self._cache(state, task, nodes)
        node = pick(nodes, cache.score[nodes], self.node_ranks(state), self._then(state, task))
        gpus = self._gpus(state, task, node, cache)
        row = state.gpu_left[node].copy()
        row[list(gpus)] -= task.gpu_milli
        self._expected = (node, row, int(state.cpu_left[node]) - task.cpu_milli,
                          float(cache.after[node]))
        return node, gpus


class FGDExact(FGD):
    """fgdopt's exact-score FGD: least real delta, ties by best-fit leftover, then node rank."""

    name = "fgd-exact"

    def _score(self, delta: np.ndarray) -> np.ndarray:
        return -delta

    def _then(self, state: ClusterState, task: Task):
        return lambda tied: -leftover(state, tied, task)
