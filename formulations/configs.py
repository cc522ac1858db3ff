"""Node configurations and the configuration (Gilmore-Gomory) models over them.

A *configuration* of a node is a multiset of task shapes the node can host at once: CPU (milli-cores) and
memory (MiB) within the node's, whole-GPU tasks on GPUs no sharing task touches, sharing tasks bin-packed
into the other GPUs (1000 milli-GPU each). The configuration model chooses a configuration per node:

* ``y[c]`` (integer) — nodes of configuration c's type that use c; per type ``sum_c y[c] <= N_t``;
* ``z[s]`` (>= 0) — tasks of shape s the chosen configurations hold beyond the ``count_s`` available,
  dropped again: ``sum_c a[c,s] y[c] - z[s] <= count_s``, paid at their GPU demand in the objective
  ``sum_c value_c y[c] - sum_s demand_s z[s]`` (GPU units, see :class:`~formulations.aggregate.Aggregation`).

Dropping a task from a node keeps the node feasible, so *maximal* configurations (nothing more that is
available fits) suffice: over every maximal configuration the integer optimum is the offline optimum, and
the LP relaxation is the configuration LP. That LP sees each node's CPU, memory and GPUs at once; the
aggregated model's LP (:mod:`formulations.exact`) sees a node's CPU only as a sum, a weak bound when nodes
have few cores per GPU (4-GPU, 32-core V100 nodes: 28.42 GPUs vs 27.19, the optimum).

* :func:`node_configurations` enumerates the maximal configurations of a node (within a search budget);
* :func:`column_generation` prices configurations instead (the pricing problem is the exact model of one
  node), for the configuration-LP bound (:mod:`formulations.relax`);
* :func:`run_config_milp` solves the configuration MILP over every maximal configuration, or reports
  ``skipped`` where there are too many (8-GPU, 96-core nodes: millions; the aggregated MILP is strong there).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fgdopt.instance import Instance
from fgdopt.state import Placement
from formulations.aggregate import Aggregation, aggregate, node_contents, recover
from formulations.backends import RawResult, solve_model
from formulations.exact import build_exact, exact_solution
from formulations.linear import LinearModel
from formulations.solution import Solution, make_solution

CONFIG_LIMIT = 150_000
"""Most node contents (feasible multisets of shapes, maximal or not) the enumeration of one instance visits before
it gives up, which took 2.0-7.3 s on the small and medium suites (slower with more shapes). Measured on the small
suite: 29 to 91k contents (15 to 35k maximal) per 2-GPU or 4-GPU node type; one 8-GPU 96-core type runs past 400k."""


class TooManyConfigurations(ValueError):
    """Enumerating the configurations visits more node contents than the limit."""


class EnumerationOutOfTime(Exception):
    """Enumerating the configurations ran past its wall-clock deadline."""


@lru_cache(maxsize=1 << 16)
def pack_sharing(items: tuple[int, ...], capacity: int) -> tuple[tuple[int, ...], ...]:
    """The contents of the fewest GPUs of ``capacity`` units that hold the sharing demands ``items`` (units,
    sorted descending): first-fit decreasing, then an exact search down to ``ceil(sum / capacity)`` GPUs."""
    ffd: list[list[int]] = []
    for v in items:
        for gpu in ffd:
            if sum(gpu) + v <= capacity:
                gpu.append(v)
                break
        else:
            ffd.append([v])
    for k in range(-(-sum(items) // capacity), len(ffd)):
        if (found := _pack_into(items, k, capacity)) is not None:
            return tuple(tuple(g) for g in found)
    return tuple(tuple(g) for g in ffd)


def _pack_into(items: tuple[int, ...], k: int, capacity: int) -> list[list[int]] | None:
    """``items`` in ``k`` GPUs, or None (depth-first; GPUs of equal load are tried once)."""
    gpus: list[list[int]] = [[] for _ in range(k)]
    loads = [0] * k

    def place(i: int) -> bool:
        if i == len(items):
            return True
        tried = set()
        for g in range(k):
            if loads[g] + items[i] <= capacity and loads[g] not in tried:
                tried.add(loads[g])
                loads[g] += items[i]
                gpus[g].append(items[i])
                if place(i + 1):
                    return True
                loads[g] -= items[i]
                gpus[g].pop()
        return False

    return gpus if place(0) else None


class _NodeFit:
    """The one configuration feasibility rule of a node: what is left after a partial content."""

    def __init__(self, agg: Aggregation, node: int) -> None:
        cluster = agg.instance.cluster
        self.capacity = agg.capacity
        self.gpus = int(cluster.gpu[node])
        self.cpu_milli, self.memory_mib = int(cluster.cpu_milli[node]), int(cluster.memory_mib[node])
        self.cpu, self.mem = agg.column("cpu_milli").tolist(), agg.column("memory_mib").tolist()
        self.num_gpu = np.where(agg.whole, agg.column("num_gpu"), 0).tolist()
        self.share = agg.share_units.tolist()
        self.shapes = np.flatnonzero(agg.allowed[node]).tolist()
        self.count = agg.count.tolist()

    def add(self, s: int, cpu_left: int, mem_left: int, whole: int, items: tuple[int, ...]):
        """The state after adding one task of shape ``s`` (cpu left, memory left, whole GPUs, sharing items),
        or None if it does not fit."""
        if self.cpu[s] > cpu_left or self.mem[s] > mem_left:
            return None
        whole += self.num_gpu[s]
        if self.share[s]:
            items = tuple(sorted((*items, self.share[s]), reverse=True))
        if whole + len(pack_sharing(items, self.capacity)) > self.gpus:
            return None
        return cpu_left - self.cpu[s], mem_left - self.mem[s], whole, items

    def is_maximal(self, counts: list[int], state: tuple) -> bool:
        """Whether no available shape fits the content ``counts`` in ``state`` any more (:meth:`add`, with the
        GPUs left free computed once)."""
        cpu_left, mem_left, whole, items = state
        free = self.gpus - whole - len(pack_sharing(items, self.capacity))
        tried = set()
        for s in self.shapes:
            if counts[s] >= self.count[s] or self.cpu[s] > cpu_left or self.mem[s] > mem_left:
                continue
            if not self.share[s]:
                if self.num_gpu[s] <= free:
                    return False
            elif free > 0:
                return False
            elif self.share[s] not in tried:
                tried.add(self.share[s])
                if self.add(s, *state) is not None:
                    return False
        return True

    @property
    def empty(self) -> tuple[int, int, int, tuple[int, ...]]:
        """The state of the empty node."""
        return self.cpu_milli, self.memory_mib, 0, ()

    def extend(self, counts: np.ndarray) -> np.ndarray:
        """A maximal configuration containing the content ``counts`` (S,): more tasks of the shapes in order
        while they fit and are available.

        Raises
        ------
        ValueError : ``counts`` does not fit the node.
        """
        state = self.empty
        for s in np.flatnonzero(counts).tolist():
            for _ in range(int(counts[s])):
                if (state := self.add(s, *state)) is None:
                    raise ValueError("the content does not fit the node")
        counts = counts.copy()
        for s in self.shapes:
            while counts[s] < self.count[s] and (nxt := self.add(s, *state)) is not None:
                counts[s] += 1
                state = nxt
        return counts


def node_configurations(agg: Aggregation, node: int, limit: int = CONFIG_LIMIT,
                        deadline: float = math.inf) -> tuple[np.ndarray, int]:
    """Every maximal non-empty configuration of ``node`` (C, S): shape counts within availability; and the
    number of node contents the depth-first search visited to find them.

    Raises
    ------
    TooManyConfigurations : the search visits more than ``limit`` contents.
    EnumerationOutOfTime : the search runs past the ``time.perf_counter()`` instant ``deadline``.
    """
    fit = _NodeFit(agg, node)
    counts = [0] * agg.n_shapes
    out: list[list[int]] = []
    visited = 0

    def grow(start: int, state: tuple) -> None:
        """Visit the content ``counts`` and every content adding shapes ``fit.shapes[start:]`` to it."""
        nonlocal visited
        visited += 1
        if visited > limit:
            raise TooManyConfigurations(f"more than {limit} node contents to enumerate (node {node})")
        if time.perf_counter() > deadline:
            raise EnumerationOutOfTime(f"the time limit stopped the enumeration at {visited} node contents "
                                       f"(node {node})")
        if any(counts) and fit.is_maximal(counts, state):
            out.append(counts.copy())
        for i in range(start, len(fit.shapes)):
            s = fit.shapes[i]
            if counts[s] < fit.count[s] and (nxt := fit.add(s, *state)) is not None:
                counts[s] += 1
                grow(i, nxt)
                counts[s] -= 1

    grow(0, fit.empty)
    return np.array(out, dtype=np.int64).reshape(len(out), agg.n_shapes), visited


def master_model(agg: Aggregation, kind: np.ndarray, mat: np.ndarray, integer: bool) -> LinearModel:
    """The configuration model over the columns ``mat`` (C, S) of node types ``kind`` (C,): variables ``y``
    (C) then ``z`` (S); rows per node type (``sum y <= N_t``), then per shape (``sum a y - z <= count_s``)."""
    demand = agg.demand_units.astype(float)
    model = LinearModel("config-master")
    # y <= N_t is implied by the type rows; the LP master leaves it out so that the type rows carry the duals
    ub = [len(agg.node_types[t]) for t in kind.tolist()] if integer else math.inf
    y = model.add_vars(len(mat), ub=ub, integer=integer, obj=mat @ demand)
    z = model.add_vars(agg.n_shapes, ub=math.inf, integer=False, obj=-demand)
    for t, nodes in enumerate(agg.node_types):
        model.rows.append((y[kind == t], np.ones(int((kind == t).sum())), -math.inf, float(len(nodes))))
    for s in range(agg.n_shapes):
        used = np.flatnonzero(mat[:, s])
        model.rows.append((np.append(y[used], z[s]), np.append(mat[used, s].astype(float), -1.0), -math.inf,
                           float(agg.count[s])))
    return model


@dataclass(frozen=True)
class Columns:
    """Configurations ``mat`` (C, S) of node types ``kind`` (C,) (indices into ``Aggregation.node_types``).
    From :func:`column_generation` also: ``bound``, a proven upper bound (units) on the configuration LP, hence
    on the optimum (None if unknown), the ``status`` (``optimal`` = no column prices out) and ``iterations``."""

    kind: np.ndarray
    mat: np.ndarray
    bound: float | None = None
    status: str = "optimal"
    iterations: int = 0


def enumerate_columns(agg: Aggregation, limit: int = CONFIG_LIMIT, deadline: float = math.inf) -> Columns:
    """Every maximal configuration of every node type.

    Raises
    ------
    TooManyConfigurations : the search visits more than ``limit`` node contents in all.
    EnumerationOutOfTime : the search runs past the ``time.perf_counter()`` instant ``deadline``.
    """
    kinds, mats = [], []
    for t, nodes in enumerate(agg.node_types):
        mat, visited = node_configurations(agg, int(nodes[0]), limit, deadline)
        limit -= visited
        kinds.append(np.full(len(mat), t, dtype=np.int64))
        mats.append(mat)
    return Columns(np.concatenate(kinds), np.concatenate(mats))


def column_generation(agg: Aggregation, time_limit: float, threads: int | None = None, tol: float = 1e-6,
                      max_iter: int = 500) -> Columns:
    """Configurations priced for the configuration LP (HiGHS: master LP, pricing MILP per node type).

    Each round solves, per node type, the exact model of one such node with the shape duals subtracted and adds
    its best content if it prices out; the Lagrangian (Farley) bound
    ``sum_s pi_s count_s + sum_t N_t max(0, price_t)`` is valid at every round, and the best one is kept.
    ``status`` is ``time_limit`` if the time ran out before no column priced out.
    """
    t0 = time.perf_counter()
    instance = agg.instance
    pricing = [build_exact(aggregate(Instance("pricing", instance.cluster.subset([int(nodes[0])]), instance.tasks)))
               for nodes in agg.node_types]
    sizes = np.array([len(nodes) for nodes in agg.node_types], dtype=float)
    demand = agg.demand_units.astype(float)
    kinds: list[int] = []
    rows: list[np.ndarray] = []
    best_bound, status, iterations = math.inf, "optimal", 0
    pi, mu = np.zeros(agg.n_shapes), np.zeros(len(sizes))
    while iterations < max_iter:
        iterations += 1
        remaining = time_limit - (time.perf_counter() - t0)
        if remaining <= 0:
            status = "time_limit"
            break
        improving = False
        lagrange = float(pi @ agg.count)
        for t, em in enumerate(pricing):
            xcols = em.x[0]
            ok = xcols >= 0
            obj = np.zeros(em.model.n_vars)
            obj[xcols[ok]] = demand[ok] - pi[ok]
            em.model.obj = obj.tolist()
            raw = solve_model(em.model, "highs", max(remaining, 1.0), threads)
            price = raw.bound if raw.bound is not None else math.inf
            lagrange += sizes[t] * max(0.0, price)
            if raw.values is not None and raw.objective - mu[t] > tol * max(1.0, abs(raw.objective)):
                counts = np.zeros(agg.n_shapes, dtype=np.int64)
                counts[ok] = np.rint(raw.values[xcols[ok]])
                kinds.append(t)
                rows.append(counts)
                improving = True
        best_bound = min(best_bound, lagrange)
        if not improving:
            break
        raw = solve_model(master_model(agg, np.array(kinds), np.array(rows), integer=False), "highs",
                          max(remaining, 1.0), threads)
        if raw.duals is None:
            status = "error"
            break
        duals = np.abs(raw.duals)
        mu, pi = duals[: len(sizes)], duals[len(sizes):]
    mat = np.array(rows, dtype=np.int64).reshape(len(rows), agg.n_shapes)
    bound = best_bound if math.isfinite(best_bound) else None
    return Columns(np.array(kinds, dtype=np.int64), mat, bound, status, iterations)


def encode(agg: Aggregation, columns: Columns, placement: Placement) -> np.ndarray:
    """The model vector (``y`` then ``z``) of a feasible ``placement``: each node's content extended to a maximal
    configuration (found among the enumerated ``columns``)."""
    counts, _ = node_contents(agg, placement)
    index = {(int(t), tuple(row)): c for c, (t, row) in enumerate(zip(columns.kind, columns.mat.tolist(),
                                                                          strict=True))}
    y = np.zeros(len(columns.mat))
    for t, nodes in enumerate(agg.node_types):
        fit = _NodeFit(agg, int(nodes[0]))
        for n in nodes.tolist():
            if counts[n].any():
                y[index[t, tuple(fit.extend(counts[n]).tolist())]] += 1
    return np.concatenate([y, np.maximum(y @ columns.mat - agg.count, 0)])


def decode(agg: Aggregation, columns: Columns, y: np.ndarray,
           packings: list[list[np.ndarray]] | None = None, adjust=None) -> Placement:
    """The placement of the configuration counts ``y`` (C,): configurations handed to the nodes of their type in
    order, tasks beyond availability dropped (from the last nodes), sharing tasks packed by :func:`pack_sharing`,
    or, if ``packings`` is given, by each configuration's own packing (its sharing GPUs' slot vectors (D,)).
    ``adjust`` (optional) maps the per-node shape counts (N, S) before the drop (e.g. exchanges of shapes used
    beyond their count for interchangeable ones, keeping each GPU's packing)."""
    n_nodes = agg.instance.cluster.n_nodes
    counts = np.zeros((n_nodes, agg.n_shapes), dtype=np.int64)
    column_of = np.full(n_nodes, -1, dtype=np.int64)
    y = np.rint(y).astype(np.int64)
    for t, nodes in enumerate(agg.node_types):
        free = iter(nodes.tolist())
        for c in np.flatnonzero((columns.kind == t) & (y > 0)).tolist():
            for _ in range(int(y[c])):
                n = next(free)
                counts[n], column_of[n] = columns.mat[c], c
    if adjust is not None:
        counts = adjust(counts)
    for s in range(agg.n_shapes):
        over = int(counts[:, s].sum() - agg.count[s])
        for n in range(n_nodes - 1, -1, -1):
            if over <= 0:
                break
            drop = min(over, int(counts[n, s]))
            counts[n, s] -= drop
            over -= drop
    index = {int(v): d for d, v in enumerate(agg.values.tolist())}
    share = agg.share_units
    if packings is not None:
        return recover(agg, counts, [list(packings[c]) if c >= 0 else [] for c in column_of.tolist()])
    slots = []
    for n in range(n_nodes):
        items = tuple(sorted((int(share[s]) for s in np.flatnonzero(agg.sharing & (counts[n] > 0)).tolist()
                              for _ in range(int(counts[n, s]))), reverse=True))
        vectors = []
        for gpu in pack_sharing(items, agg.capacity):
            vec = np.zeros(len(agg.values), dtype=np.int64)
            for v in gpu:
                vec[index[v]] += 1
            vectors.append(vec)
        slots.append(vectors)
    return recover(agg, counts, slots)


def run_config_milp(instance: Instance, method: str, solver: str = "cbc", time_limit: float = 60.0,
                    warm_start: Placement | None = None, threads: int | None = None,
                    limit: int = CONFIG_LIMIT) -> Solution:
    """Solve the configuration MILP over every maximal configuration with ``solver`` (``cbc`` or ``highs``).

    Returns a checked :class:`Solution`: status and bound are the solver's; ``skipped`` (no placement, no bound)
    when enumerating them visits more than ``limit`` node contents; ``time_limit`` (no bound; the warm start, if
    given, as the placement) when the enumeration runs past the time limit. ``warm_start`` (a feasible placement)
    is the MIP start and the incumbent floor; the placement is completed by
    :func:`~formulations.aggregate.fill_greedy`. ``time_limit`` is wall seconds, enumeration included.
    """
    t0 = time.perf_counter()
    agg = aggregate(instance)
    try:
        columns = enumerate_columns(agg, limit, t0 + time_limit)
    except TooManyConfigurations as exc:
        return make_solution(instance, method, solver, "skipped", None, None, time.perf_counter() - t0, "exact",
                             info={"reason": str(exc)})
    except EnumerationOutOfTime as exc:
        raw = RawResult("time_limit", None, None, None, time.perf_counter() - t0)
        return exact_solution(instance, method, solver, raw, None, warm_start, agg.unit, t0, {"reason": str(exc)})
    start = encode(agg, columns, warm_start) if warm_start is not None else None
    model = master_model(agg, columns.kind, columns.mat, integer=True)
    if start is not None:
        model.check(start)
    raw = solve_model(model, solver, max(time_limit - (time.perf_counter() - t0), 0.5), threads, start,
                      abs_gap=0.999)
    decoded = decode(agg, columns, raw.values[: len(columns.mat)]) if raw.values is not None else None
    return exact_solution(instance, method, solver, raw, decoded, warm_start, agg.unit, t0,
                          {"columns": len(columns.mat)})
