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

* :func:`node_configurations` enumerates the maximal configurations of a node (up to a limit);
* :func:`column_generation` prices configurations instead (the pricing problem is the exact model of one
  node), for the configuration-LP bound (:mod:`formulations.relax`) and where there are too many to enumerate;
* :func:`run_config_milp` solves the configuration MILP: exact over every maximal configuration, else
  price-and-branch (the priced columns as an integer program, the column generation's bound).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fgdopt.instance import Instance
from fgdopt.state import Placement
from formulations.aggregate import Aggregation, aggregate, fill_greedy, node_contents, recover
from formulations.backends import solve_model
from formulations.exact import build_exact
from formulations.linear import LinearModel
from formulations.solution import Solution, make_solution

CONFIG_LIMIT = 50_000
"""Most maximal configurations :func:`run_config_milp` enumerates per instance before it prices them instead.
Measured (small suite): 4-GPU V100 and 2-GPU nodes have 15-19,379; 8-GPU 96-core nodes run past 2 million."""
PRICING_SHARE = 0.6
"""Share of the time limit price-and-branch may spend generating columns; the integer master gets the rest."""


class TooManyConfigurations(ValueError):
    """A node type has more maximal configurations than the limit."""


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


def node_configurations(agg: Aggregation, node: int, limit: int = CONFIG_LIMIT) -> np.ndarray:
    """Every maximal non-empty configuration of ``node`` (C, S): shape counts within availability.

    Raises
    ------
    TooManyConfigurations : more than ``limit`` of them.
    """
    fit = _NodeFit(agg, node)
    counts = np.zeros(agg.n_shapes, dtype=np.int64)
    out: list[np.ndarray] = []

    def grow(i: int, state: tuple) -> None:
        if i == len(fit.shapes):
            if counts.any() and all(counts[s] >= fit.count[s] or fit.add(s, *state) is None for s in fit.shapes):
                out.append(counts.copy())
                if len(out) > limit:
                    raise TooManyConfigurations(f"node {node} has more than {limit} maximal configurations")
            return
        s = fit.shapes[i]
        grow(i + 1, state)
        while counts[s] < fit.count[s] and (state := fit.add(s, *state)) is not None:
            counts[s] += 1
            grow(i + 1, state)
        counts[s] = 0

    grow(0, fit.empty)
    return np.array(out, dtype=np.int64).reshape(len(out), agg.n_shapes)


def master_model(agg: Aggregation, kind: np.ndarray, mat: np.ndarray, integer: bool) -> LinearModel:
    """The configuration model over the columns ``mat`` (C, S) of node types ``kind`` (C,): variables ``y``
    (C) then ``z`` (S); rows per node type (``sum y <= N_t``), then per shape (``sum a y - z <= count_s``)."""
    demand = agg.demand_units.astype(float)
    model = LinearModel("config-master")
    y = model.add_vars(len(mat), ub=[len(agg.node_types[t]) for t in kind.tolist()], integer=integer,
                       obj=mat @ demand)
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
    """Configurations ``mat`` (C, S) of node types ``kind`` (C,) (indices into ``Aggregation.node_types``);
    ``bound`` a proven upper bound (units) on the configuration LP, hence on the optimum (None if unknown)."""

    kind: np.ndarray
    mat: np.ndarray
    complete: bool
    bound: float | None = None
    status: str = "optimal"
    iterations: int = 0


def enumerate_columns(agg: Aggregation, limit: int = CONFIG_LIMIT) -> Columns:
    """Every maximal configuration of every node type (``complete``); ``TooManyConfigurations`` past ``limit``."""
    kinds, mats = [], []
    for t, nodes in enumerate(agg.node_types):
        mat = node_configurations(agg, int(nodes[0]), limit - sum(len(m) for m in mats))
        kinds.append(np.full(len(mat), t, dtype=np.int64))
        mats.append(mat)
    return Columns(np.concatenate(kinds), np.concatenate(mats), complete=True)


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
    return Columns(np.array(kinds, dtype=np.int64), mat, complete=False,
                   bound=best_bound if math.isfinite(best_bound) else None, status=status, iterations=iterations)


def _with_start(agg: Aggregation, columns: Columns, warm_start: Placement) -> tuple[Columns, np.ndarray]:
    """``columns`` plus the warm start's node contents (extended to maximal) where missing, and the start vector."""
    counts, _ = node_contents(agg, warm_start)
    index = {(int(t), tuple(row)): c for c, (t, row) in enumerate(zip(columns.kind, columns.mat.tolist(),
                                                                          strict=True))}
    kinds, mat = columns.kind.tolist(), columns.mat.tolist()
    use: dict[int, int] = {}
    for t, nodes in enumerate(agg.node_types):
        fit = _NodeFit(agg, int(nodes[0]))
        for n in nodes.tolist():
            if not counts[n].any():
                continue
            key = (t, tuple(fit.extend(counts[n]).tolist()))
            if key not in index:
                index[key] = len(kinds)
                kinds.append(t)
                mat.append(list(key[1]))
            use[index[key]] = use.get(index[key], 0) + 1
    mat_arr = np.array(mat, dtype=np.int64).reshape(len(mat), agg.n_shapes)
    y = np.zeros(len(mat_arr))
    y[list(use)] = list(use.values())
    z = np.maximum(y @ mat_arr - agg.count, 0)
    extended = Columns(np.array(kinds, dtype=np.int64), mat_arr, columns.complete, columns.bound, columns.status,
                       columns.iterations)
    return extended, np.concatenate([y, z])


def decode(agg: Aggregation, columns: Columns, y: np.ndarray) -> Placement:
    """The placement of the configuration counts ``y`` (C,): configurations handed to the nodes of their type in
    order, tasks beyond availability dropped (from the last nodes), sharing tasks packed by :func:`pack_sharing`."""
    n_nodes = agg.instance.cluster.n_nodes
    counts = np.zeros((n_nodes, agg.n_shapes), dtype=np.int64)
    y = np.rint(y).astype(np.int64)
    for t, nodes in enumerate(agg.node_types):
        free = iter(nodes.tolist())
        for c in np.flatnonzero((columns.kind == t) & (y > 0)).tolist():
            for _ in range(int(y[c])):
                counts[next(free)] = columns.mat[c]
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
    """Solve the configuration MILP with ``solver`` (``cbc`` or ``highs``) and return a checked :class:`Solution`.

    Over every maximal configuration (at most ``limit``) the model is exact: the status and bound are the
    solver's. Past the limit it is price-and-branch: :func:`column_generation` (up to :data:`PRICING_SHARE` of
    the time) gives the columns and the bound, the integer master over them a placement; ``optimal`` then only if
    that placement meets the bound. ``warm_start`` (a feasible placement) adds its node contents as columns and is
    the MIP start. The placement is completed by :func:`~formulations.aggregate.fill_greedy`.
    """
    t0 = time.perf_counter()
    agg = aggregate(instance)

    def remaining() -> float:
        return max(time_limit - (time.perf_counter() - t0), 0.5)

    try:
        columns = enumerate_columns(agg, limit)
    except TooManyConfigurations:
        columns = column_generation(agg, PRICING_SHARE * remaining(), threads)
    start = None
    if warm_start is not None:
        columns, start = _with_start(agg, columns, warm_start)
    model = master_model(agg, columns.kind, columns.mat, integer=True)
    raw = solve_model(model, solver, remaining(), threads, start, abs_gap=0.999)
    candidates = [decode(agg, columns, raw.values[: len(columns.mat)])] if raw.values is not None else []
    if warm_start is not None:
        candidates.append(warm_start)
    placement = None
    if candidates:
        best = max(candidates, key=lambda pl: pl.allocated_milli(instance.tasks))
        placement = fill_greedy(instance, best)
    if columns.complete:
        bound, status = raw.bound, raw.status
    else:
        bound = columns.bound
        status = "time_limit" if "time_limit" in (columns.status, raw.status) else "feasible"
    bound = None if bound is None else math.floor(bound + 1e-6) * agg.unit
    info = {"columns": len(columns.mat), "complete": columns.complete, "iterations": columns.iterations,
            "solver_status": raw.status, "solver_wall_s": raw.wall_s}
    return make_solution(instance, method, solver, status, placement, bound, time.perf_counter() - t0, "exact",
                         info=info)
