"""Run a :class:`~formulations.linear.LinearModel` (maximized) with CBC or HiGHS (through PuLP) or CP-SAT.

Every backend reports an honest status and the solver's own best bound: PuLP 3.3 calls a run that
hit its time limit with an incumbent "Optimal" (``prob.status``), so the status here comes from the
solver itself — CBC's log (``Result - Optimal solution found`` / ``Stopped on time limit``, bound
from ``Lower bound:`` / ``Upper bound:`` (maximizing) or the objective when optimal), HiGHS's model
status and ``mip_dual_bound``, CP-SAT's status and ``BestObjectiveBound()`` (none when it stopped with nothing found
and that is still its response's default 0: a search stopped before it bounds the objective).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fgdopt.cpus import usable_cpus
from formulations.highs import highs_threads, new_highs, read_result, set_start
from formulations.linear import INF, LinearModel

SOLVERS = ("cbc", "highs", "cpsat")
CPSAT_MIN_WORKERS = 8
"""Default CP-SAT workers even on fewer cores: its portfolio (LNS, cuts, core search) needs the diversity.
Measured on 2 cores: 4 nodes proven in 2.7 s with 8 workers, not in 20 s with 2; 8 nodes in 1.1 s vs not in 60 s."""
EXACT_HIGHS_OPTIONS = {"mip_heuristic_effort": 0.3}
"""HiGHS options of the exact runs and of the unified-device MILP (pass as ``options``; LPs and pricing keep the
defaults). At 32+ nodes the primal side, not the bound, is what fails (the LP bound is tight). Measured on 64-node
instances (noisy, shared 2 cores): with the FGD warm start, effort 0.3 vs the default 0.05 made no difference
(seed 0: optimal in 57.0 vs 57.9 s; seed 1: 0.254 % gap both); without a warm start, one run at the default
effort left a 1 % gap and one at 0.3 a 0.44 % gap (seed 0)."""


@dataclass(frozen=True)
class RawResult:
    """What a backend saw: ``status`` in optimal/time_limit/infeasible/error (``time_limit`` = stopped by the
    wall-clock limit, with or without an incumbent in ``values``), the column ``values`` (or None), the model
    ``objective`` and ``bound`` (model units, None if unknown), ``duals`` of the rows for LPs, and wall seconds."""

    status: str
    values: np.ndarray | None
    objective: float | None
    bound: float | None
    wall_s: float
    duals: np.ndarray | None = None


def default_threads() -> int:
    """Solver threads when none are asked for: the CPUs this process may use (:func:`fgdopt.cpus.usable_cpus`)."""
    return usable_cpus()


def solve_model(model: LinearModel, solver: str, time_limit: float = 60.0, threads: int | None = None,
                start: np.ndarray | None = None, abs_gap: float | None = None,
                options: dict | None = None) -> RawResult:
    """Solve ``model`` with ``solver`` in :data:`SOLVERS`; ``start`` is a feasible column vector (MIP start / hint).

    ``abs_gap`` (model units) lets CBC / HiGHS stop once the bound is within it of the incumbent, with no
    relative gap (their defaults stop at 0.01 % relative): for an integral objective pass 0.999.
    ``options`` are solver parameters by name (HiGHS ``setOptionValue`` names, CP-SAT ``SatParameters``
    fields; ignored by CBC). ``time_limit`` is wall seconds, model translation included.
    """
    if solver == "cpsat":
        return _solve_cpsat(model, time_limit, threads or max(CPSAT_MIN_WORKERS, default_threads()), start,
                            options or {})
    if solver in ("cbc", "highs"):
        return _solve_pulp(model, solver, time_limit, threads or default_threads(), start, abs_gap, options or {})
    raise ValueError(f"unknown solver {solver!r}; choose one of {SOLVERS}")


# -- PuLP --------------------------------------------------------------------------------------------
def _to_pulp(model: LinearModel, start: np.ndarray | None):
    """The PuLP problem of ``model``, its columns and, per row, its (upper, lower) PuLP constraints (or None)."""
    import pulp

    prob = pulp.LpProblem(model.name.replace("-", "_"), pulp.LpMaximize)
    cols = [prob.add_variable(f"v{j}", None if lb == -INF else lb, None if ub == INF else ub,
                              cat=pulp.LpInteger if integer else pulp.LpContinuous)
            for j, (lb, ub, integer) in enumerate(zip(model.lb, model.ub, model.integer, strict=True))]
    prob += pulp.LpAffineExpression([(cols[j], c) for j, c in enumerate(model.obj) if c != 0])
    cons: list[tuple] = []
    for k, (idx, coef, lo, hi) in enumerate(model.rows):
        expr = pulp.LpAffineExpression(zip((cols[j] for j in idx.tolist()), coef.tolist(), strict=True))
        if lo == hi:
            upper, lower = pulp.LpConstraint(expr, pulp.LpConstraintEQ, f"r{k}", hi), None
        else:
            upper = pulp.LpConstraint(expr, pulp.LpConstraintLE, f"r{k}", hi) if hi < INF else None
            lower = pulp.LpConstraint(expr, pulp.LpConstraintGE, f"r{k}l", lo) if lo > -INF else None
        for con in (upper, lower):
            if con is not None:
                prob.addConstraint(con)
        cons.append((upper, lower))
    if start is not None:
        for col, val in zip(cols, start.tolist(), strict=True):
            col.setInitialValue(round(val) if col.cat == pulp.LpInteger else val)
    return prob, cols, cons


def _highs_class():
    import pulp

    class WarmHiGHS(pulp.HiGHS):
        """PuLP's highspy interface, plus the MIP start PuLP 3.3 does not pass on."""

        def callSolver(self, lp):
            if self.optionsDict.get("warmStart"):
                set_start(lp.solverModel, [v.varValue or 0.0 for v in lp.variables()])
            lp.solverModel.run()

    return WarmHiGHS


CBC_GRACE_S = 5.0
"""Seconds CBC gets, after the interrupt that ends its wall-clock budget, to write its incumbent before it is killed."""


def _guarded_cbc(tmp: str, seconds: float) -> str:
    """A launcher for PuLP's bundled CBC that interrupts it (SIGINT, CBC's "stop and report") after
    ``seconds`` of wall time and kills it :data:`CBC_GRACE_S` later: CBC's own ``-sec`` is not checked in
    every phase (measured: 4 min on a 60 s limit)."""
    import pulp

    path = os.path.join(tmp, "cbc-guard.sh")
    with open(path, "w") as fh:
        fh.write(f'#!/bin/sh\nexec timeout --preserve-status -s INT -k {CBC_GRACE_S:g} {max(seconds, 1.0):.1f} '
                 f'"{pulp.PULP_CBC_CMD.pulp_cbc_path}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def _solve_pulp(model: LinearModel, solver: str, time_limit: float, threads: int, start, abs_gap,
                options: dict) -> RawResult:
    import pulp

    t0 = time.perf_counter()
    prob, cols, cons = _to_pulp(model, start)
    mip = any(model.integer)
    warm = start is not None and mip
    gaps = {"gapRel": 0.0, "gapAbs": abs_gap} if abs_gap is not None else {}
    remaining = max(time_limit - (time.perf_counter() - t0), 0.5)
    if solver == "highs":
        backend = _highs_class()(mip=mip, msg=False, timeLimit=remaining, threads=highs_threads(threads),
                                 warmStart=warm, **gaps,
                                 **options)
        prob.solve(backend)
        status, bound = _highs_status(prob.solverModel)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            log_path = os.path.join(tmp, "cbc.log")
            backend = pulp.COIN_CMD(path=_guarded_cbc(tmp, remaining + 1.0), mip=mip, msg=False, timeLimit=remaining,
                                    threads=threads, warmStart=warm, logPath=log_path, **gaps)
            try:
                prob.solve(backend)
                crashed = False
            except pulp.PulpSolverError:  # killed by the guard: no solution file
                crashed = True
            with open(log_path) as fh:
                log = fh.read()
        if crashed:
            status = "time_limit" if time.perf_counter() - t0 >= remaining else "error"
            return RawResult(status, None, None, None, time.perf_counter() - t0)
        status, bound = _cbc_status(log, prob)
    wall = time.perf_counter() - t0
    has_sol = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    values = np.array([c.varValue or 0.0 for c in cols]) if has_sol else None
    objective = model.objective_of(values) if values is not None else None
    if status == "optimal" and values is None:
        status = "error"
    duals = None
    if not mip and values is not None:
        duals = np.array([sum((c.pi or 0.0) for c in pair if c is not None) for pair in cons])
    if status == "optimal" and bound is None:
        bound = objective
    return RawResult(status, values, objective, bound, wall, duals)


def solve_lp_arrays(obj: np.ndarray, lb: np.ndarray, ub: np.ndarray, row_lo: np.ndarray, row_hi: np.ndarray,
                    starts: np.ndarray, idx: np.ndarray, vals: np.ndarray, time_limit: float = 60.0,
                    threads: int | None = None, options: dict | None = None) -> RawResult:
    """Maximize ``obj @ x`` over ``lb <= x <= ub`` and ``row_lo <= A x <= row_hi`` (``A`` by rows: row ``r`` has the
    columns ``idx[starts[r]:starts[r + 1]]`` with coefficients ``vals[...]``, each row one-sided or an equality, as
    PuLP splits them) with HiGHS directly, handing it the very LP PuLP would (same answer to the last bit, tested).

    What PuLP does, followed here: the columns in the order of their names ``v0, v1, ...`` sorted as strings, the
    objective negated (minimized; PuLP's ``-0.0`` costs), the rows in order with their coefficients in model order,
    options output off, ``threads``, ``time_limit`` (model translation included), then ``options``; a solution's
    ``-0.0`` values read as ``0.0`` (PuLP's ``varValue or 0.0``). Columns of ``obj``, ``idx`` and the values
    returned are in model order.
    """
    import highspy

    t0 = time.perf_counter()
    n = len(obj)
    order, pos = _pulp_order(n)
    h = new_highs(threads, max(time_limit - (time.perf_counter() - t0), 0.5), options=options)
    inf = highspy.kHighsInf
    lo, up = lb[order], ub[order]
    h.addCols(n, -obj[order], np.where(lo == -INF, -inf, lo), np.where(up == INF, inf, up), 0,
              np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    h.addRows(len(row_lo), np.where(row_lo == -INF, -inf, row_lo), np.where(row_hi == INF, inf, row_hi), len(idx),
              starts.astype(np.int32), pos[idx].astype(np.int32), vals)
    h.run()
    status, bound = _highs_status(h)
    wall = time.perf_counter() - t0
    ms = h.getModelStatus()
    usable = ms in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit,
                    highspy.HighsModelStatus.kIterationLimit, highspy.HighsModelStatus.kInterrupt,
                    highspy.HighsModelStatus.kObjectiveBound, highspy.HighsModelStatus.kObjectiveTarget)
    values = None
    if usable:
        values = np.asarray(h.getSolution().col_value, dtype=np.float64)[pos]
        values[values == 0] = 0.0                            # PuLP's ``varValue or 0.0`` turns -0.0 into 0.0
    objective = float(np.dot(obj, values)) if values is not None else None
    if status == "optimal" and values is None:
        status = "error"
    if status == "optimal" and bound is None:
        bound = objective
    return RawResult(status, values, objective, bound, wall)


@lru_cache(maxsize=64)
def _pulp_order(n: int) -> tuple[np.ndarray, np.ndarray]:
    """PuLP's order of ``n`` columns named ``v0, v1, ...`` (sorted as strings) and each column's place in it."""
    order = np.array(sorted(range(n), key=lambda j: f"v{j}"), dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    order.setflags(write=False)
    pos.setflags(write=False)
    return order, pos


def _highs_status(highs) -> tuple[str, float | None]:
    """Status and bound of a finished HiGHS run (:func:`formulations.highs.read_result`) of a maximized model that
    PuLP handed it negated (minimized): the bound's absolute value."""
    res = read_result(highs)
    return res.status, (abs(res.bound) if res.bound is not None else None)


_CBC_NUMBER = r"(-?[0-9.eE+-]+)"


def _cbc_status(log: str, prob) -> tuple[str, float | None]:
    import pulp

    result = re.search(r"Result - (.*)", log)
    verdict = result.group(1).lower() if result else ""
    if "infeasible" in verdict:
        return "infeasible", None
    if "optimal" in verdict:
        value = re.search(r"Objective value:\s*" + _CBC_NUMBER, log)
        return "optimal", abs(float(value.group(1))) if value else None
    if "stopped" in verdict:
        bound = re.search(r"(?:Lower|Upper) bound:\s*" + _CBC_NUMBER, log)  # "Upper" when maximizing
        return "time_limit", abs(float(bound.group(1))) if bound else None
    if not result and prob.status == pulp.LpStatusOptimal:  # pure LP: CBC (clp) prints no "Result -" line
        return "optimal", None
    return "error", None


# -- CP-SAT ------------------------------------------------------------------------------------------
def _solve_cpsat(model: LinearModel, time_limit: float, threads: int, start, options: dict) -> RawResult:
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    if not all(model.integer):
        raise ValueError("CP-SAT needs an all-integer model")
    m = cp_model.CpModel()
    xs = [m.new_int_var(int(lb), int(ub), f"v{j}") for j, (lb, ub) in enumerate(zip(model.lb, model.ub, strict=True))]
    for idx, coef, lo, hi in model.rows:
        expr = cp_model.LinearExpr.weighted_sum([xs[j] for j in idx.tolist()], [int(c) for c in coef.tolist()])
        if lo == hi:
            m.add(expr == int(hi))
            continue
        if hi < INF:
            m.add(expr <= int(np.floor(hi)))
        if lo > -INF:
            m.add(expr >= int(np.ceil(lo)))
    obj_idx = [j for j, c in enumerate(model.obj) if c != 0]
    m.maximize(cp_model.LinearExpr.weighted_sum([xs[j] for j in obj_idx], [int(model.obj[j]) for j in obj_idx]))
    if start is not None:
        for x, v in zip(xs, start.tolist(), strict=True):
            m.add_hint(x, int(round(v)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(time_limit - (time.perf_counter() - t0), 0.5)
    solver.parameters.num_workers = int(threads)
    for key, value in options.items():
        setattr(solver.parameters, key, value)
    code = solver.solve(m)
    wall = time.perf_counter() - t0
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        values = np.array([solver.value(x) for x in xs], dtype=float)
        status = "optimal" if code == cp_model.OPTIMAL else "time_limit"
        return RawResult(status, values, model.objective_of(values), float(solver.best_objective_bound), wall)
    if code == cp_model.INFEASIBLE:
        return RawResult("infeasible", None, None, None, wall)
    if code == cp_model.UNKNOWN:
        # stopped with nothing found: a search stopped before it bounds the objective (in presolve: measured with a
        # 0.5 s limit on 64 openb nodes) leaves the response's default 0, no bound; a proven 0 would mean nothing
        # fits, and that search proved nothing
        bound = float(solver.best_objective_bound)
        return RawResult("time_limit", None, None, bound if bound != 0 else None, wall)
    return RawResult("error", None, None, None, wall)
