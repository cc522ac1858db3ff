"""Relaxations: proven upper bounds on the allocated milli-GPU (no placement).

* ``lp`` — the LP relaxation of the exact model (:mod:`formulations.exact`); because that model uses
  per-GPU patterns, it already is the per-GPU configuration bound.
* ``unified-device`` — a node's GPUs pooled into one capacity ``1000 x gpu``; every real placement stays
  feasible, so its (MILP) optimum, or the solver's proven bound, bounds the optimum.
* ``config-lp`` — the configuration LP over node types (columns = feasible node contents, CPU, memory
  and per-GPU packing included), by column generation. The pricing problem of a node type is the exact
  model of one such node with duals on the shapes (HiGHS MILP). The bound reported is the Lagrangian
  (Farley) bound ``sum_s pi_s count_s + sum_t N_t max(0, price_t)``, valid at every iteration.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fgdopt.instance import Instance
from formulations.aggregate import Aggregation, aggregate
from formulations.backends import EXACT_HIGHS_OPTIONS, RawResult, solve_model
from formulations.exact import build_exact, count_model
from formulations.linear import LinearModel
from formulations.solution import Solution, make_solution


def unified_model(agg: Aggregation) -> tuple[LinearModel, np.ndarray]:
    """The pooled-GPU model: shared rows plus ``sum_s demand_s x[n,s] <= capacity x G_n`` per node."""
    model, x = count_model(agg, "unified-device")
    for n, g in enumerate(agg.instance.cluster.gpu.tolist()):
        mine = np.flatnonzero(x[n] >= 0)
        model.add_row(x[n, mine], agg.demand_units[mine], hi=agg.capacity * g)
    return model, x


def solve_unified(agg: Aggregation, time_limit: float, threads: int | None) -> tuple[RawResult, np.ndarray]:
    model, x = unified_model(agg)
    return solve_model(model, "highs", time_limit, threads, abs_gap=0.999, options=EXACT_HIGHS_OPTIONS), x


def _bound_solution(instance: Instance, method: str, status: str, bound_units: float | None, unit: int,
                    t0: float, info: dict) -> Solution:
    bound = None if bound_units is None else math.floor(bound_units + 1e-6) * unit
    return make_solution(instance, method, "highs", status, None, bound, time.perf_counter() - t0, "relaxation",
                         info=info)


def lp_bound(instance: Instance, time_limit: float = 60.0, threads: int | None = None) -> Solution:
    """The LP relaxation of the exact model (HiGHS)."""
    t0 = time.perf_counter()
    agg = aggregate(instance)
    raw = solve_model(build_exact(agg).model.relaxed(), "highs", time_limit, threads)
    return _bound_solution(instance, "lp", raw.status, raw.bound, agg.unit, t0, {})


def unified_bound(instance: Instance, time_limit: float = 60.0, threads: int | None = None) -> Solution:
    """The unified-device relaxation solved as a MILP (HiGHS); its proven bound."""
    t0 = time.perf_counter()
    agg = aggregate(instance)
    raw, _ = solve_unified(agg, time_limit, threads)
    return _bound_solution(instance, "unified-device", raw.status, raw.bound, agg.unit, t0, {})


def config_lp_bound(instance: Instance, time_limit: float = 60.0, threads: int | None = None,
                    tol: float = 1e-6, max_iter: int = 500) -> Solution:
    """Column generation for the configuration LP over node types; returns its (Lagrangian) bound."""
    t0 = time.perf_counter()
    agg = aggregate(instance)
    cluster = agg.instance.cluster
    keys = list(zip(cluster.cpu_milli.tolist(), cluster.memory_mib.tolist(), cluster.gpu.tolist(),
                    cluster.model.tolist(), strict=True))
    types: dict[tuple, list[int]] = {}
    for n, key in enumerate(keys):
        types.setdefault(key, []).append(n)
    reps = [nodes[0] for nodes in types.values()]
    sizes = np.array([len(nodes) for nodes in types.values()], dtype=float)
    pricing = [build_exact(aggregate(Instance("pricing", cluster.subset([n]), instance.tasks))) for n in reps]
    columns: list[tuple[int, np.ndarray]] = []  # (type, shape counts)
    demand = agg.demand_units.astype(float)
    best_bound, status, iterations = math.inf, "optimal", 0
    pi = np.zeros(agg.n_shapes)
    mu = np.zeros(len(reps))
    while iterations < max_iter:
        iterations += 1
        remaining = time_limit - (time.perf_counter() - t0)
        if remaining <= 0:
            status = "time_limit"
            break
        improving = False
        lagrange = float(pi @ agg.count)
        for t, em in enumerate(pricing):
            model = em.model
            xcols = em.x[0]
            ok = xcols >= 0
            obj = np.zeros(model.n_vars)
            obj[xcols[ok]] = demand[ok] - pi[ok]
            model.obj = obj.tolist()
            raw = solve_model(model, "highs", max(remaining, 1.0), threads)
            price = raw.bound if raw.bound is not None else math.inf
            lagrange += sizes[t] * max(0.0, price)
            if raw.values is not None and raw.objective - mu[t] > tol * max(1.0, abs(raw.objective)):
                counts = np.zeros(agg.n_shapes)
                counts[ok] = np.rint(raw.values[xcols[ok]])
                columns.append((t, counts))
                improving = True
        best_bound = min(best_bound, lagrange)
        if not improving:
            break
        master = _master(columns, sizes, agg.count, demand)
        raw = solve_model(master, "highs", max(remaining, 1.0), threads)
        if raw.duals is None:
            status = "error"
            break
        duals = np.abs(raw.duals)
        mu, pi = duals[: len(reps)], duals[len(reps):]
    info = {"iterations": iterations, "columns": len(columns)}
    bound = best_bound if math.isfinite(best_bound) else None
    return _bound_solution(instance, "config-lp", status, bound, agg.unit, t0, info)


def _master(columns: list[tuple[int, np.ndarray]], sizes: np.ndarray, count: np.ndarray,
            demand: np.ndarray) -> LinearModel:
    """Restricted master: ``max sum_c value_c l_c`` s.t. per type ``sum l_c <= N_t``, per shape usage <= count.
    Rows are ordered types first, then shapes (the duals are read in that order)."""
    model = LinearModel("config-master")
    mat = np.array([c for _, c in columns])
    lam = model.add_vars(len(columns), ub=math.inf, integer=False, obj=mat @ demand)
    kinds = np.array([t for t, _ in columns])
    for t, size in enumerate(sizes.tolist()):
        mine = lam[kinds == t]
        model.rows.append((mine, np.ones(mine.size), -math.inf, size))
    for s in range(len(count)):
        model.rows.append((lam, mat[:, s].astype(float), -math.inf, float(count[s])))
    return model
