"""Relaxations: proven upper bounds on the allocated milli-GPU (no placement).

* ``lp`` — the LP relaxation of the exact model (:mod:`formulations.exact`); because that model uses
  per-GPU patterns, it already is the per-GPU configuration bound.
* ``unified-device`` — a node's GPUs pooled into one capacity ``1000 x gpu``; every real placement stays
  feasible, so its (MILP) optimum, or the solver's proven bound, bounds the optimum.
* ``config-lp`` — the configuration LP over node types (columns = feasible node contents, CPU, memory
  and per-GPU packing included), by column generation (:mod:`formulations.configs`); the bound reported is
  the Lagrangian (Farley) bound, valid at every iteration.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fgdopt.instance import Instance
from formulations.aggregate import Aggregation, aggregate
from formulations.backends import EXACT_HIGHS_OPTIONS, RawResult, solve_model
from formulations.configs import column_generation
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


def config_lp_bound(instance: Instance, time_limit: float = 60.0, threads: int | None = None) -> Solution:
    """The configuration LP over node types by column generation (:func:`formulations.configs.column_generation`)."""
    t0 = time.perf_counter()
    agg = aggregate(instance)
    cols = column_generation(agg, time_limit, threads)
    info = {"iterations": cols.iterations, "columns": len(cols.mat)}
    return _bound_solution(instance, "config-lp", cols.status, cols.bound, agg.unit, t0, info)
