"""Aggregation shared by every model: task shapes, identical nodes, per-GPU packing patterns, and
the way back from counts to a concrete, validated placement.

* Tasks of one shape (cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec) are interchangeable: the
  models count them per node instead of deciding each task.
* Nodes with equal (cpu_milli, memory_mib, gpu, model) are identical: the models order them.
* The GPUs of a node are identical: a node's sharing GPUs are described by *patterns* — maximal
  multisets of sharing demands (in GPU units, see :attr:`Aggregation.unit`) that fit one GPU — and the
  models count how many GPUs of a node use each pattern; whole-GPU tasks use the other GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, reduce

import numpy as np

from fgdopt.instance import Instance
from fgdopt.model import GPU_MILLI, Task
from fgdopt.state import UNPLACED, ClusterState, Placement, fitting_gpus

MAX_PATTERNS = 50_000


@dataclass(frozen=True, eq=False)
class Aggregation:
    """Shapes, node groups and patterns of one instance.

    Attributes
    ----------
    instance : the instance.
    rows : tuple of int64 arrays, the task indices of each shape (arrival order).
    shapes : tuple of :class:`fgdopt.model.Task`, one representative per shape.
    allowed : bool (N, S), shape s fits node n when the node is empty (the shared feasibility rule).
    node_types : tuple of int64 arrays, the indices of identical nodes (every type, first appearance first).
    unit : gcd of every GPU demand and 1000 (milli-GPU); GPU quantities in the models are in units.
    values : int64 (D,), distinct sharing demands in units, descending.
    """

    instance: Instance
    rows: tuple[np.ndarray, ...]
    shapes: tuple[Task, ...]
    allowed: np.ndarray
    node_types: tuple[np.ndarray, ...]
    unit: int
    values: np.ndarray

    @property
    def groups(self) -> tuple[np.ndarray, ...]:
        """The node types with at least two nodes (the ones the models order)."""
        return tuple(t for t in self.node_types if len(t) > 1)

    @property
    def n_shapes(self) -> int:
        return len(self.shapes)

    @property
    def capacity(self) -> int:
        """One GPU in units."""
        return GPU_MILLI // self.unit

    @cached_property
    def count(self) -> np.ndarray:
        return np.array([len(r) for r in self.rows], dtype=np.int64)

    def column(self, field: str) -> np.ndarray:
        return np.array([getattr(s, field) for s in self.shapes], dtype=np.int64)

    @cached_property
    def demand_units(self) -> np.ndarray:
        """Total GPU demand of each shape in units."""
        return self.column("num_gpu") * self.column("gpu_milli") // self.unit

    @cached_property
    def sharing(self) -> np.ndarray:
        return np.array([s.kind == "sharing" for s in self.shapes], dtype=bool)

    @cached_property
    def whole(self) -> np.ndarray:
        return np.array([s.kind == "whole" for s in self.shapes], dtype=bool)

    @cached_property
    def value_of(self) -> np.ndarray:
        """Index in :attr:`values` of each sharing shape (-1 for the others)."""
        out = np.full(self.n_shapes, -1, dtype=np.int64)
        lookup = {int(v): i for i, v in enumerate(self.values)}
        for s in np.flatnonzero(self.sharing):
            out[s] = lookup[self.shapes[s].gpu_milli // self.unit]
        return out

    @cached_property
    def share_units(self) -> np.ndarray:
        """GPU demand of each sharing shape in units (0 for the others)."""
        return np.where(self.sharing, self.column("gpu_milli") // self.unit, 0)

    def caps(self, node: int) -> np.ndarray:
        """Most copies of each sharing value one GPU of ``node`` may hold (availability, allowed shapes)."""
        caps = np.zeros(len(self.values), dtype=np.int64)
        for s in np.flatnonzero(self.sharing & self.allowed[node]):
            caps[self.value_of[s]] += self.count[s]
        return np.minimum(caps, self.capacity // np.maximum(self.values, 1))

    def node_patterns(self, node: int, maximal: bool = True) -> np.ndarray:
        """Per-GPU patterns of ``node`` (Q, D): the maximal ones, or (``maximal=False``) every multiset that
        fits one GPU, the empty one included (cached per distinct cap vector)."""
        return _patterns(tuple(self.values.tolist()), tuple(self.caps(node).tolist()), self.capacity, maximal)


def aggregate(instance: Instance, include_cpu_only: bool = False) -> Aggregation:
    """Group the instance's tasks by shape (CPU-only shapes only if ``include_cpu_only``) and its nodes by type."""
    tasks, cluster = instance.tasks, instance.cluster
    keys = list(zip(tasks.cpu_milli.tolist(), tasks.memory_mib.tolist(), tasks.num_gpu.tolist(),
                    tasks.gpu_milli.tolist(), tasks.gpu_spec.tolist(), strict=True))
    by_shape: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        if include_cpu_only or key[2] > 0:
            by_shape.setdefault(key, []).append(i)
    shapes = tuple(Task(*k) for k in by_shape)
    rows = tuple(np.array(v, dtype=np.int64) for v in by_shape.values())
    empty = ClusterState(cluster, tasks)
    allowed = np.array([empty.feasible_nodes(s) for s in shapes], dtype=bool).reshape(len(shapes), cluster.n_nodes).T
    node_keys = list(zip(cluster.cpu_milli.tolist(), cluster.memory_mib.tolist(), cluster.gpu.tolist(),
                         cluster.model.tolist(), strict=True))
    by_type: dict[tuple, list[int]] = {}
    for n, key in enumerate(node_keys):
        by_type.setdefault(key, []).append(n)
    node_types = tuple(np.array(g, dtype=np.int64) for g in by_type.values())
    unit = reduce(math.gcd, [GPU_MILLI] + [s.gpu_milli for s in shapes])
    values = np.array(sorted({s.gpu_milli // unit for s in shapes if s.kind == "sharing"}, reverse=True),
                      dtype=np.int64)
    return Aggregation(instance, rows, shapes, allowed, node_types, unit, values)


def _enumerate(values: tuple[int, ...], caps: tuple[int, ...], capacity: int, maximal: bool) -> np.ndarray:
    """Every multiset (counts <= caps, sum <= capacity); if ``maximal``, only those to which no value with
    copies left still fits."""
    out: list[list[int]] = []
    counts = [0] * len(values)

    def rec(i: int, rem: int) -> None:
        if i == len(values):
            if not maximal or all(counts[j] >= caps[j] or values[j] > rem for j in range(len(values))):
                out.append(counts.copy())
                if len(out) > MAX_PATTERNS:
                    raise ValueError(f"more than {MAX_PATTERNS} GPU patterns; instance too fine-grained")
            return
        for k in range(min(caps[i], rem // values[i]), -1, -1):
            counts[i] = k
            rec(i + 1, rem - k * values[i])
        counts[i] = 0

    rec(0, capacity)
    return np.array(out, dtype=np.int64).reshape(len(out), len(values))


_CACHE: dict[tuple, np.ndarray] = {}


def _patterns(values: tuple[int, ...], caps: tuple[int, ...], capacity: int, maximal: bool) -> np.ndarray:
    """Patterns of :func:`_enumerate`, cached per arguments."""
    key = (values, caps, capacity, maximal)
    if key not in _CACHE:
        pats = _enumerate(values, caps, capacity, maximal)
        pats.setflags(write=False)
        _CACHE[key] = pats
    return _CACHE[key]


def extend_pattern(counts: np.ndarray, values: np.ndarray, caps: np.ndarray, capacity: int) -> np.ndarray:
    """Greedily grow a GPU's multiset (largest value first) into a maximal pattern within ``caps``."""
    counts = counts.copy()
    rem = capacity - int(counts @ values)
    for j, v in enumerate(values.tolist()):
        add = max(0, min(int(caps[j]) - int(counts[j]), rem // v))
        counts[j] += add
        rem -= add * v
    return counts


# -- from counts to a placement and back -----------------------------------------------------------
def recover(agg: Aggregation, counts: np.ndarray, gpu_slots: list[list[np.ndarray]]) -> Placement:
    """A placement from per-node shape counts (N, S) and each node's sharing-GPU slot vectors (D,).

    Node n's first ``len(gpu_slots[n])`` GPUs take its sharing tasks (a task of value d goes to the
    first of them with a d-slot left), the next GPUs its whole-GPU tasks. Concrete tasks of a shape
    are taken in arrival order. The result is validated by the caller (:func:`make_solution`).
    """
    n_tasks = len(agg.instance.tasks)
    node = np.full(n_tasks, UNPLACED, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * n_tasks
    taken = np.zeros(agg.n_shapes, dtype=np.int64)
    for n in range(agg.instance.cluster.n_nodes):
        slots = [s.copy() for s in gpu_slots[n]]
        next_free = len(slots)
        for s in np.flatnonzero(counts[n]):
            shape = agg.shapes[s]
            for _ in range(int(counts[n, s])):
                i = int(agg.rows[s][taken[s]])
                taken[s] += 1
                node[i] = n
                if shape.kind == "sharing":
                    d = agg.value_of[s]
                    g = next(k for k, slot in enumerate(slots) if slot[d] > 0)
                    slots[g][d] -= 1
                    gpus[i] = (g,)
                elif shape.kind == "whole":
                    gpus[i] = tuple(range(next_free, next_free + shape.num_gpu))
                    next_free += shape.num_gpu
    return Placement(node, tuple(gpus))


def node_contents(agg: Aggregation, placement: Placement) -> tuple[np.ndarray, list[list[np.ndarray]]]:
    """Per-node shape counts (N, S) and per-node lists of sharing-GPU multisets (D,) of a placement
    (tasks of shapes outside the aggregation, i.e. CPU-only ones, are ignored)."""
    n_nodes = agg.instance.cluster.n_nodes
    counts = np.zeros((n_nodes, agg.n_shapes), dtype=np.int64)
    per_gpu: dict[tuple[int, int], np.ndarray] = {}
    for s, rows in enumerate(agg.rows):
        for i in rows.tolist():
            n = int(placement.node[i])
            if n == UNPLACED:
                continue
            counts[n, s] += 1
            if agg.sharing[s]:
                vec = per_gpu.setdefault((n, placement.gpus[i][0]), np.zeros(len(agg.values), dtype=np.int64))
                vec[agg.value_of[s]] += 1
    slots: list[list[np.ndarray]] = [[] for _ in range(n_nodes)]
    for (n, _), vec in sorted(per_gpu.items(), key=lambda kv: kv[0]):
        slots[n].append(vec)
    return counts, slots


def fill_greedy(instance: Instance, placement: Placement) -> Placement:
    """Add every unallocated task that still fits (largest GPU demand first, best-fitting GPUs).

    It never removes anything, so the allocated milli-GPU can only grow; it also places the CPU-only
    tasks the GPU models leave out (the tie rule of docs/semantics.md: more tasks).
    """
    tasks = instance.tasks
    state = ClusterState(instance.cluster, tasks)
    for i in np.flatnonzero(placement.placed):
        state.place(int(i), int(placement.node[i]), placement.gpus[i])
    todo = np.flatnonzero(~placement.placed)
    for i in todo[np.argsort(-tasks.gpu_demand[todo], kind="stable")].tolist():
        task = tasks[i]
        ok = np.flatnonzero(state.feasible_nodes(task))
        if ok.size == 0:
            continue
        n = int(ok[0])
        if task.num_gpu == 0:
            state.place(i, n, ())
            continue
        fit = fitting_gpus(state.gpu_left[n], task.gpu_milli)
        fit = fit[np.argsort(state.gpu_left[n, fit], kind="stable")]
        state.place(i, n, tuple(int(g) for g in fit[: task.num_gpu]))
    return state.placement()
