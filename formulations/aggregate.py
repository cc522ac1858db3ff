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
from fgdopt.policies.gang import choose_parts
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

    @cached_property
    def workers(self) -> np.ndarray:
        """Parts of each shape's tasks (1, or a gang's ``workers``)."""
        return self.column("workers")

    @cached_property
    def parts(self) -> np.ndarray:
        """How many parts each shape has in all (``count x workers``): what its ``x`` columns may hold."""
        return self.count * self.workers

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
            caps[self.value_of[s]] += self.parts[s]
        return np.minimum(caps, self.capacity // np.maximum(self.values, 1))

    def node_patterns(self, node: int, maximal: bool = True) -> np.ndarray:
        """Per-GPU patterns of ``node`` (Q, D): the maximal ones, or (``maximal=False``) every multiset that
        fits one GPU, the empty one included (cached per distinct cap vector)."""
        return _patterns(tuple(self.values.tolist()), tuple(self.caps(node).tolist()), self.capacity, maximal)


def aggregate(instance: Instance, include_cpu_only: bool = False, gangs: bool = False) -> Aggregation:
    """Group the instance's tasks by shape (CPU-only shapes only if ``include_cpu_only``) and its nodes by type.

    A shape includes ``workers``; the models that link a gang's parts (the exact model, ``gangs=True``) take
    instances with gangs, the others refuse them (``ValueError``)."""
    tasks, cluster = instance.tasks, instance.cluster
    if tasks.has_gangs and not gangs:
        raise ValueError("tasks with workers > 1 (gangs) are only supported by the exact model")
    keys = list(zip(tasks.cpu_milli.tolist(), tasks.memory_mib.tolist(), tasks.num_gpu.tolist(),
                    tasks.gpu_milli.tolist(), tasks.gpu_spec.tolist(), tasks.workers.tolist(), strict=True))
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
    """A placement from per-node shape counts (N, S; a gang shape's counts are parts) and each node's sharing-GPU
    slot vectors (D,).

    Node n's first ``len(gpu_slots[n])`` GPUs take its sharing tasks (a task of value d goes to the
    first of them with a d-slot left), the next GPUs its whole-GPU tasks. Concrete tasks of a shape
    are taken in arrival order; a gang takes the next ``workers`` parts of its shape, in node order (a shape's
    parts in all must be a multiple of ``workers``). The result is validated by the caller (:func:`make_solution`).
    """
    n_tasks = len(agg.instance.tasks)
    node = np.full(n_tasks, UNPLACED, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * n_tasks
    taken = np.zeros(agg.n_shapes, dtype=np.int64)
    parts: dict[int, list[tuple[int, tuple[int, ...]]]] = {}          # gang shape -> its parts, in node order
    for n in range(agg.instance.cluster.n_nodes):
        slots = [s.copy() for s in gpu_slots[n]]
        next_free = len(slots)
        for s in np.flatnonzero(counts[n]):
            shape = agg.shapes[s]
            for _ in range(int(counts[n, s])):
                if shape.kind == "sharing":
                    d = agg.value_of[s]
                    g = next(k for k, slot in enumerate(slots) if slot[d] > 0)
                    slots[g][d] -= 1
                    where: tuple[int, ...] = (g,)
                elif shape.kind == "whole":
                    where = tuple(range(next_free, next_free + shape.num_gpu))
                    next_free += shape.num_gpu
                else:
                    where = ()
                if shape.workers > 1:
                    parts.setdefault(int(s), []).append((n, where))
                    continue
                i = int(agg.rows[s][taken[s]])
                taken[s] += 1
                node[i], gpus[i] = n, where
    if not parts:
        return Placement(node, tuple(gpus))
    spans: list[tuple] = [()] * n_tasks
    for s, of_shape in parts.items():
        w = int(agg.workers[s])
        for k in range(len(of_shape) // w):
            i = int(agg.rows[s][k])
            spans[i] = tuple(of_shape[k * w:(k + 1) * w])
            node[i], gpus[i] = spans[i][0]
    return Placement(node, tuple(gpus), None, tuple(spans))


def node_contents(agg: Aggregation, placement: Placement) -> tuple[np.ndarray, list[list[np.ndarray]]]:
    """Per-node shape counts (N, S) and per-node lists of sharing-GPU multisets (D,) of a placement
    (tasks of shapes outside the aggregation, i.e. CPU-only ones, are ignored)."""
    n_nodes = agg.instance.cluster.n_nodes
    counts = np.zeros((n_nodes, agg.n_shapes), dtype=np.int64)
    per_gpu: dict[tuple[int, int], np.ndarray] = {}
    for s, rows in enumerate(agg.rows):
        for i in rows.tolist():
            if placement.node[i] == UNPLACED:
                continue
            gang = placement.spans is not None and placement.spans[i] and agg.workers[s] > 1
            for n, gpus in (placement.spans[i] if gang else ((int(placement.node[i]), placement.gpus[i]),)):
                counts[n, s] += 1
                if agg.sharing[s]:
                    vec = per_gpu.setdefault((n, gpus[0]), np.zeros(len(agg.values), dtype=np.int64))
                    vec[agg.value_of[s]] += 1
    slots: list[list[np.ndarray]] = [[] for _ in range(n_nodes)]
    for (n, _), vec in sorted(per_gpu.items(), key=lambda kv: kv[0]):
        slots[n].append(vec)
    return counts, slots


def fill_greedy(instance: Instance, placement: Placement) -> Placement:
    """Add every unallocated task that still fits (largest GPU demand first, best-fitting GPUs).

    It never removes anything, so the allocated milli-GPU can only grow; it also places the CPU-only
    tasks the GPU models leave out (the tie rule of docs/semantics.md: more tasks). A gang goes part by part by the
    same rule (:func:`~fgdopt.policies.gang.choose_parts`), all its parts or none.
    """
    tasks = instance.tasks
    state = ClusterState(instance.cluster, tasks)
    for i in np.flatnonzero(placement.placed):
        if tasks.workers[i] > 1:
            state.place_parts(int(i), placement.spans[i])
        else:
            state.place(int(i), int(placement.node[i]), placement.gpus[i])

    def first_fit(state: ClusterState, task: Task) -> tuple[int, tuple[int, ...]] | None:
        """The first node where ``task`` fits, its best-fitting GPUs (least left first)."""
        ok = np.flatnonzero(state.feasible_nodes(task))
        if ok.size == 0:
            return None
        n = int(ok[0])
        fit = fitting_gpus(state.gpu_left[n], task.gpu_milli) if task.num_gpu else np.zeros(0, dtype=np.int64)
        fit = fit[np.argsort(state.gpu_left[n, fit], kind="stable")]
        return n, tuple(int(g) for g in fit[: task.num_gpu])

    todo = np.flatnonzero(~placement.placed)
    for i in todo[np.argsort(-tasks.gpu_demand[todo], kind="stable")].tolist():
        task = tasks[i]
        if task.workers > 1:
            if (parts := choose_parts(first_fit, state, task)) is not None:
                state.place_parts(i, parts)
        elif (choice := first_fit(state, task)) is not None:
            state.place(i, *choice)
    return state.placement()
