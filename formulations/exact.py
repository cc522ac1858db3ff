"""The exact aggregated model (maximize allocated GPU), shared by the MILP and CP-SAT runs.

Variables (integers), for node n, shape s, per-GPU pattern q of n (see :mod:`formulations.aggregate`):

* ``x[n,s]`` — tasks of shape s on node n (only where s fits an empty n);
* ``p[n,q]`` — GPUs of node n whose sharing tasks form (a sub-multiset of) pattern q.

Rows: whole-GPU tasks plus sharing GPUs fit the node's GPU count
(``sum_s k_s x[n,s] + sum_q p[n,q] <= G_n``: whole-GPU tasks only use GPUs no sharing task touches);
sharing tasks of value d fit the d-slots of n's patterns (``sum_{s: d} x[n,s] <= sum_q a[q,d] p[n,q]``);
CPU and memory of n; availability of every shape (``sum_n x[n,s] <= count_s``); identical nodes ordered
by GPU load (symmetry breaking). Objective: ``sum demand_s x[n,s]`` in GPU units.

Gangs (a shape of ``workers = w > 1``): ``x[n,s]`` counts the shape's *parts* on node n (each a task of the part's
demand, judged by every row above as one), and an integer ``z[s]`` (gangs placed, at most the shape's count) links
them: ``sum_n x[n,s] = w z[s]``, so parts come in whole gangs (the parts of one shape are interchangeable, so any
``w z`` of them form ``z`` gangs).

The pattern columns remove the symmetry of a node's identical GPUs and make the LP relaxation the
per-GPU configuration bound (a GPU hosting an 810 can only add what fits in 190).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from fgdopt.instance import Instance
from fgdopt.state import Placement
from formulations.aggregate import Aggregation, aggregate, extend_pattern, fill_greedy, node_contents, recover
from formulations.backends import EXACT_HIGHS_OPTIONS, RawResult, solve_model
from formulations.linear import LinearModel
from formulations.solution import Solution, make_solution


@dataclass
class ExactModel:
    """The built model and where its columns are: ``x`` (N, S) column index or -1; ``p[n]`` the pattern
    column indices of node n and ``patterns[n]`` their (Q_n, D) slot counts."""

    agg: Aggregation
    model: LinearModel
    x: np.ndarray
    p: list[np.ndarray]
    patterns: list[np.ndarray]
    symmetry: bool
    maximal: bool = True
    z: np.ndarray | None = None             # (S,) the gang-count column of each gang shape, -1 for the others

    def decode(self, values: np.ndarray) -> Placement:
        """The placement encoded by a column vector ``values``."""
        vals = np.rint(values).astype(np.int64)
        counts = shape_counts(vals, self.x)
        slots = [[pat for pat, k in zip(self.patterns[n], vals[self.p[n]].tolist(), strict=True) for _ in range(k)]
                 for n in range(len(self.p))]
        return recover(self.agg, counts, slots)

    def encode(self, placement: Placement) -> np.ndarray:
        """A column vector for a feasible ``placement`` (identical nodes permuted to respect the ordering)."""
        counts, slots = node_contents(self.agg, placement)
        order = np.arange(len(self.p))
        if self.symmetry:
            load = counts @ self.agg.demand_units
            for group in self.agg.groups:
                order[group] = group[np.argsort(-load[group], kind="stable")]
        values = np.zeros(self.model.n_vars)
        for n, src in enumerate(order.tolist()):
            cols = self.x[n] >= 0
            values[self.x[n, cols]] = counts[src, cols]
            if not slots[src]:
                continue
            caps = self.agg.caps(n)
            index = {tuple(p.tolist()): k for k, p in enumerate(self.patterns[n])}
            for vec in slots[src]:
                full = extend_pattern(vec, self.agg.values, caps, self.agg.capacity) if self.maximal else vec
                values[self.p[n][index[tuple(full.tolist())]]] += 1
        if self.z is not None:
            gang = self.z >= 0
            values[self.z[gang]] = counts[:, gang].sum(axis=0) // self.agg.workers[gang]
        self.model.check(values)
        return values


def shape_counts(values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per-node shape counts (N, S) from a column vector and the ``x`` column map (-1 = no column)."""
    counts = np.zeros(x.shape, dtype=np.int64)
    counts[x >= 0] = np.rint(values[x[x >= 0]]).astype(np.int64)
    return counts


def count_model(agg: Aggregation, name: str, symmetry: bool = True) -> tuple[LinearModel, np.ndarray]:
    """The rows every aggregated model shares: ``x[n,s]`` columns (objective = GPU demand in units),
    CPU and memory of every node, availability of every shape, identical nodes ordered by GPU load.
    Returns the model and ``x`` (N, S) column indices (-1 where the shape never fits the node)."""
    cluster = agg.instance.cluster
    n_nodes, n_shapes = agg.allowed.shape
    model = LinearModel(name)
    x = np.full((n_nodes, n_shapes), -1, dtype=np.int64)
    ni, si = np.nonzero(agg.allowed)
    x[ni, si] = model.add_vars(len(ni), ub=agg.parts[si], obj=agg.demand_units[si])
    cpu, mem = agg.column("cpu_milli"), agg.column("memory_mib")
    for n in range(n_nodes):
        mine = np.flatnonzero(x[n] >= 0)
        model.add_row(x[n, mine], cpu[mine], hi=int(cluster.cpu_milli[n]))
        model.add_row(x[n, mine], mem[mine], hi=int(cluster.memory_mib[n]))
    for s in range(n_shapes):
        on = np.flatnonzero(x[:, s] >= 0)
        model.add_row(x[on, s], np.ones(on.size), hi=int(agg.parts[s]))
    if symmetry:
        for group in agg.groups:
            for a, b in zip(group[:-1].tolist(), group[1:].tolist(), strict=True):
                ca, cb = np.flatnonzero(x[a] >= 0), np.flatnonzero(x[b] >= 0)
                model.add_row(np.concatenate([x[a, ca], x[b, cb]]),
                              np.concatenate([agg.demand_units[ca], -agg.demand_units[cb]]), lo=0)
    return model, x


def build_exact(agg: Aggregation, symmetry: bool = True, maximal: bool = True) -> ExactModel:
    """Build the exact model of :mod:`formulations.exact`.

    ``symmetry`` orders identical nodes by GPU load. ``maximal`` uses only maximal per-GPU patterns, a GPU
    of pattern q holding a sub-multiset of q (slot rows ``<=``); ``maximal=False`` uses every non-empty
    pattern with slot rows ``==``, so each GPU's content, hence its free milli-GPU, is exact (what the
    fragmentation objective needs; see :mod:`formulations.minfrag`)."""
    cluster = agg.instance.cluster
    model, x = count_model(agg, "exact", symmetry)
    num_gpu = agg.column("num_gpu")
    p_cols, patterns = [], []
    for n in range(cluster.n_nodes):
        g = int(cluster.gpu[n])
        share = np.flatnonzero(agg.sharing & agg.allowed[n])
        pats = agg.node_patterns(n, maximal) if (share.size and g) else np.zeros((0, len(agg.values)), dtype=np.int64)
        pats = pats[pats.sum(axis=1) > 0]
        cols = model.add_vars(len(pats), ub=g)
        p_cols.append(cols)
        patterns.append(pats)
        whole = np.flatnonzero(agg.whole & (x[n] >= 0))
        model.add_row(np.concatenate([x[n, whole], cols]), np.concatenate([num_gpu[whole], np.ones(len(cols))]),
                      hi=g)
        for d in range(len(agg.values)):
            of_d = share[agg.value_of[share] == d]
            if of_d.size:
                model.add_row(np.concatenate([x[n, of_d], cols]), np.concatenate([np.ones(of_d.size), -pats[:, d]]),
                              lo=-math.inf if maximal else 0, hi=0)
    z = None
    if (agg.workers > 1).any():                                 # gangs: parts in whole gangs
        z = np.full(agg.n_shapes, -1, dtype=np.int64)
        for s in np.flatnonzero(agg.workers > 1).tolist():
            z[s] = model.add_vars(1, ub=int(agg.count[s]))[0]
            on = np.flatnonzero(x[:, s] >= 0)
            model.add_row(np.append(x[on, s], z[s]), np.append(np.ones(on.size), -agg.workers[s]), lo=0, hi=0)
    return ExactModel(agg, model, x, p_cols, patterns, symmetry, maximal, z)


def run_exact(instance: Instance, method: str, solver: str, time_limit: float = 60.0,
              warm_start: Placement | None = None, threads: int | None = None, symmetry: bool = True,
              lp_cut: bool | None = None, maximal: bool = True, options: dict | None = None) -> Solution:
    """Solve the exact model with ``solver`` (``cbc``, ``highs`` or ``cpsat``) and return a checked :class:`Solution`.

    ``warm_start`` (a feasible placement) is passed as MIP start / CP-SAT hint and kept as the incumbent
    floor; the returned placement is completed by :func:`fill_greedy` (CPU-only and leftover tasks).
    ``lp_cut`` (default: on for CP-SAT) first solves the LP relaxation with HiGHS and adds the valid
    inequality ``objective <= floor(LP optimum)``: CP-SAT's own linear relaxation of this model is far
    weaker than the LP (measured: 4279 vs 3994 units on an 8-node instance). ``symmetry`` and ``maximal`` are
    the modelling switches of :func:`build_exact`; ``options`` the solver's parameters (default: HiGHS gets
    :data:`~formulations.backends.EXACT_HIGHS_OPTIONS`). ``time_limit`` is wall-clock seconds for the whole run.
    """
    t0 = time.perf_counter()
    agg = aggregate(instance, gangs=True)
    em = build_exact(agg, symmetry, maximal)

    def remaining() -> float:
        return max(time_limit - (time.perf_counter() - t0), 0.5)

    if lp_cut if lp_cut is not None else solver == "cpsat":
        lp = solve_model(em.model.relaxed(), "highs", remaining(), threads)
        if lp.bound is not None:
            cols = np.flatnonzero(em.model.obj)
            em.model.add_row(cols, np.asarray(em.model.obj)[cols], hi=math.floor(lp.bound + 1e-6))
    start = em.encode(warm_start) if warm_start is not None else None
    if options is None and solver == "highs":
        options = EXACT_HIGHS_OPTIONS
    raw = solve_model(em.model, solver, remaining(), threads, start, abs_gap=0.999, options=options)
    decoded = em.decode(raw.values) if raw.values is not None else None
    info = {"n_vars": em.model.n_vars, "n_rows": len(em.model.rows)}
    return exact_solution(instance, method, solver, raw, decoded, warm_start, agg.unit, t0, info)


def exact_solution(instance: Instance, method: str, solver: str, raw: RawResult, decoded: Placement | None,
                   warm_start: Placement | None, unit: int, t0: float, info: dict) -> Solution:
    """The checked :class:`Solution` of an exact run: the better of the solver's ``decoded`` placement and the
    ``warm_start``, completed by :func:`fill_greedy`; the solver's status and its bound in whole ``unit``s
    (milli-GPU per model unit); wall time since ``t0``."""
    candidates = [pl for pl in (decoded, warm_start) if pl is not None]
    placement = None
    if candidates:
        best = max(candidates, key=lambda pl: pl.allocated_milli(instance.tasks))
        placement = fill_greedy(instance, best)
    bound = None if raw.bound is None else math.floor(raw.bound + 1e-6) * unit
    info = {**info, "solver_status": raw.status, "solver_wall_s": raw.wall_s}
    return make_solution(instance, method, solver, raw.status, placement, bound, time.perf_counter() - t0, "exact",
                         info=info)
