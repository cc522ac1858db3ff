"""Online policies for MIG clusters (:mod:`fgdopt.mig`): each choice is (node, GPUs, start slices).

A MIG policy returns ``(node, gpus, starts)``; :meth:`ClusterState.place` checks it with the one feasibility
rule. Feasible nodes come from :meth:`ClusterState.feasible_nodes`; the tie rule is the one of every policy
(:func:`~fgdopt.policies.base.pick`: top score, ties to the lowest node rank). Inside the chosen node a
sharing task's candidates are every (GPU, allowed start) whose slices are free, in (GPU, start) order; a
whole-GPU task of k GPUs takes the k lowest-indexed completely free GPUs (start 0).

=================  ===================================================================================
``mig-fgd``        FGD: least increase of the node's MIG fragmentation F_n(M) (:mod:`fgdopt.mig.frag`, memory
                   slices, popularities of the target workload); real-valued deltas (no integer score);
                   inside the node the first (GPU, start) reaching the least delta
``mig-first-fit``  the feasible node of lowest rank; lowest GPU, lowest free allowed start
``mig-best-fit``   fewest free slices left on the node after placement; inside it, the fitting GPU with the
                   fewest free slices (lowest index on ties), lowest free allowed start
``mig-greedy``     Zambianco et al. 2025 (arXiv 2511.18906), rebuilt from its description: "a fragmentation
                   metric ... our greedy scheduling algorithm selects GPUs and MIG slices that minimize
                   fragmentation growth for each incoming workload", workload-agnostic
=================  ===================================================================================

Choices made for ``mig-greedy`` where the description leaves them open: the metric of a GPU is, averaged
uniformly over the model's requestable profiles (workload-agnostic: no popularities), its free memory slices
that the profile cannot use (all of them when no start of the profile fits); the node's metric is the sum
over its GPUs; CPU and memory do not enter the metric (only feasibility); the greedy minimizes the growth
over every (node, GPU, start); ties go to the lowest node rank, then the lowest (GPU, start). It is thus FGD's
machinery with a uniform, CPU-free profile workload. Caching is the one of ``fgd`` (:mod:`fgdopt.policies.fgd`):
per task shape the best option of every node, recomputed only for nodes whose slices or free CPU changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fgdopt.frag import Workload, node_access
from fgdopt.mig.frag import mig_node_fragmentations, mig_rows
from fgdopt.mig.slices import MigLayout, profile_codes
from fgdopt.model import GPU_MILLI, Task
from fgdopt.policies.base import RankedPolicy, pick
from fgdopt.state import ClusterState

MigChoice = tuple[int, tuple[int, ...], tuple[int, ...]]
"""A MIG placement decision: node, GPU ids, start slice on each GPU."""

_BLOCK = 96
"""Nodes evaluated per vectorized block (bounds the (shapes x candidates x GPUs) temporaries)."""


def _layout(state: ClusterState) -> MigLayout:
    if state.mig is None:
        raise ValueError("MIG policies need a MIG cluster (every node model in fgdopt.mig.slices.MIG_MODELS)")
    return state.mig


def candidates(state: ClusterState, task: Task, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every placement option of ``task`` on ``nodes`` (where it fits), in (node, GPU, start) order.

    Returns
    -------
    ``(node, gpu, start, occupancy_after)``: (C,) int arrays and the (C, G) slice masks of the node after the
    placement. A whole-GPU task has one option per node (its lowest free GPUs; ``gpu`` is the first of them).
    GPUs of one node with equal occupancy give one option (the lowest-indexed GPU).
    """
    lay = _layout(state)
    occ = state.slices[nodes]                                                  # (K, G)
    if task.gpu_milli == GPU_MILLI or task.num_gpu > 1:
        free = lay.fit(occ, GPU_MILLI, nodes)
        take = free & (np.cumsum(free, axis=1) <= task.num_gpu)
        after = np.where(take, 0xFF, occ)
        return nodes, take.argmax(axis=1), np.zeros(len(nodes), dtype=np.int64), after
    g_ids = np.arange(occ.shape[1])
    dup = ((occ[:, :, None] == occ[:, None, :]) & (g_ids[None, None, :] < g_ids[None, :, None])).any(axis=2)
    out_k, out_g, out_s, out_m = [], [], [], []
    for j in np.unique(lay.model_index[nodes]):
        prof = lay.models[j].profile_for(task.gpu_milli)
        rows = np.flatnonzero(lay.model_index[nodes] == j)
        ok = ((occ[rows, :, None] & prof.masks[None, None, :]) == 0) & ~dup[rows, :, None]
        k, g, s = np.nonzero(ok)
        out_k.append(rows[k])
        out_g.append(g)
        out_s.append(np.asarray(prof.starts)[s])
        out_m.append(prof.masks[s])
    k, g, s, m = (np.concatenate(a) for a in (out_k, out_g, out_s, out_m))
    order = np.lexsort((s, g, k))
    k, g, s, m = k[order], g[order], s[order], m[order]
    after = occ[k].copy()
    after[np.arange(len(k)), g] |= m
    return nodes[k], g, s, after


def _choice(state: ClusterState, task: Task, node: int, gpu: int, start: int) -> MigChoice:
    if task.num_gpu == 0:
        return node, (), ()
    if task.gpu_milli == GPU_MILLI or task.num_gpu > 1:
        free = np.flatnonzero(state.mig.fit(state.slices[[node]], GPU_MILLI, np.array([node]))[0])
        gpus = tuple(int(x) for x in free[:task.num_gpu])
        return node, gpus, (0,) * len(gpus)
    return node, (int(gpu),), (int(start),)


class MigFirstFit(RankedPolicy):
    """``mig-first-fit`` (module docstring)."""

    name = "mig-first-fit"

    def __call__(self, state: ClusterState, task: Task) -> MigChoice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        node = pick(nodes, np.zeros(len(nodes)), self.node_ranks(state))
        if task.num_gpu == 0:
            return node, (), ()
        _, g, s, _ = candidates(state, task, np.array([node]))
        return _choice(state, task, node, int(g[0]), int(s[0]))


class MigBestFit(RankedPolicy):
    """``mig-best-fit`` (module docstring)."""

    name = "mig-best-fit"

    def __call__(self, state: ClusterState, task: Task) -> MigChoice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        lay = _layout(state)
        free = lay.free_slices(state.slices[nodes], nodes).sum(axis=1)
        need = np.array([lay.task_slices(int(n), task.num_gpu, task.gpu_milli) for n in nodes]) if task.num_gpu \
            else np.zeros(len(nodes), dtype=np.int64)
        node = pick(nodes, -(free - need).astype(float), self.node_ranks(state))
        if task.num_gpu == 0:
            return node, (), ()
        _, g, s, _ = candidates(state, task, np.array([node]))
        left = lay.free_slices(state.slices[[node]], np.array([node]))[0][g]
        best = int(np.argmin(left))           # candidates are in (GPU, start) order: lowest GPU, lowest start
        return _choice(state, task, node, int(g[best]), int(s[best]))


@dataclass(eq=False)
class _ShapeCache:
    delta: np.ndarray
    gpu: np.ndarray
    start: np.ndarray
    version: np.ndarray


class MigFGD(RankedPolicy):
    """``mig-fgd``: least MIG fragmentation increase for the target :class:`~fgdopt.frag.Workload` M."""

    name = "mig-fgd"

    def __init__(self, workload: Workload | None = None, seed: int = 0, ranks: np.ndarray | None = None, **options):
        super().__init__(seed=seed, ranks=ranks, **options)
        self.workload = workload
        self._cluster = None

    def target(self, lay: MigLayout) -> Workload:
        """The workload the fragmentation is measured for."""
        if self.workload is None:
            raise ValueError(f"{self.name} needs the target workload")
        return self.workload

    def _refresh(self, state: ClusterState) -> None:
        """Bring the node versions and F_n(M) up to date with ``state`` (only nodes that changed)."""
        if self._cluster is not state.cluster:
            self._cluster = state.cluster
            self._w = self.target(state.mig)
            self._occ, self._cpu = state.slices.copy(), state.cpu_left.copy()
            self._frag = mig_node_fragmentations(state, self._w)
            self._version = np.zeros(state.cluster.n_nodes, dtype=np.int64)
            self._clock = 0
            self._shapes: dict[tuple[int, int, int], _ShapeCache] = {}
            return
        changed = np.flatnonzero((self._occ != state.slices).any(axis=1) | (self._cpu != state.cpu_left))
        if changed.size:
            self._clock += 1
            self._version[changed] = self._clock
            self._occ[changed], self._cpu[changed] = state.slices[changed], state.cpu_left[changed]
            self._frag[changed] = mig_node_fragmentations(state, self._w, changed)

    def _evaluate(self, state: ClusterState, task: Task, nodes: np.ndarray, cache: _ShapeCache) -> None:
        lay = state.mig
        for lo in range(0, len(nodes), _BLOCK):
            block = nodes[lo:lo + _BLOCK]
            if task.num_gpu == 0:
                node, gpu, start, after = block, np.full(len(block), -1), np.zeros(len(block), int), state.slices[block]
            else:
                node, gpu, start, after = candidates(state, task, block)
            cpu_after = state.cpu_left[node] - task.cpu_milli
            frag = mig_rows(self._w, lay, after, cpu_after, node, node_access(self._w, state, node))
            delta = frag - self._frag[node]
            order = np.lexsort((np.arange(len(node)), np.round(delta, 9), node))
            first = order[np.unique(node[order], return_index=True)[1]]
            n = node[first]
            cache.delta[n], cache.gpu[n], cache.start[n] = delta[first], gpu[first], start[first]
            cache.version[n] = self._version[n]

    def __call__(self, state: ClusterState, task: Task) -> MigChoice | None:
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        _layout(state)
        self._refresh(state)
        key = (task.cpu_milli, task.num_gpu, task.gpu_milli)
        cache = self._shapes.get(key)
        if cache is None:
            n = state.cluster.n_nodes
            cache = self._shapes[key] = _ShapeCache(np.zeros(n), np.full(n, -1), np.zeros(n, int), np.full(n, -1))
        stale = nodes[cache.version[nodes] != self._version[nodes]]
        if len(stale):
            self._evaluate(state, task, stale, cache)
        node = pick(nodes, -cache.delta[nodes], self.node_ranks(state))
        return _choice(state, task, node, int(cache.gpu[node]), int(cache.start[node]))


class MigGreedy(MigFGD):
    """``mig-greedy``: Zambianco et al. 2025 rebuilt (module docstring): FGD's machinery on a uniform,
    CPU-free workload of the cluster's requestable profiles."""

    name = "mig-greedy"

    def __init__(self, seed: int = 0, ranks: np.ndarray | None = None, **options):
        super().__init__(None, seed=seed, ranks=ranks, **options)

    def target(self, lay: MigLayout) -> Workload:
        codes = sorted({c for m in lay.models for c in profile_codes(m.name)})
        return Workload.from_shapes([(0, 1, c, 1.0) for c in codes])


MIG_POLICIES = {cls.name: cls for cls in (MigFGD, MigFirstFit, MigBestFit, MigGreedy)}
"""The MIG policies by name."""
