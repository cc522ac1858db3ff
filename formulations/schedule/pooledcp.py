"""The best pooled schedule CP-SAT finds: a ceiling on every pooled relaxation's optimum, dual-feasible rows included.

Why. A pooled bound (the pooled LP, :mod:`formulations.schedule.bound`; the rigid starts,
:mod:`formulations.schedule.rigid`) can never exceed the mean wait of a schedule that keeps its rows, so a good
pooled schedule says how far any pooled bound could ever go: if it is far below the best run, only a bound that
sees nodes can close the interval. The list schedules of :mod:`fgdopt.timeline.diagnostics` (ceilings (a) and
(b)) may break the dual-feasible rows of the rigid starts, so they do not cap that bound; and they start small jobs
ahead of wide ones. On the ``medium-time`` instances this schedule is 0.7-19% below the pooled list schedule on
four (``time-n16-j300-l1.3-s0``: 32.7 s against 40.5 s) and 0.4-6.7% above it on the other four (500 and 1,000
jobs), within its default budget.

The model (one readable function, :func:`build`). Every admitted job ``j`` (submission ``r_j``, duration ``p_j``)
gets one start ``S_j``, a whole number of grid units ``u`` at or after ``r_j``, and holds ``[S_j, S_j + ceil(p_j /
u) u)``, a superset of its real run ``[S_j, S_j + p_j)``. One cumulative constraint per pooled resource keeps the
jobs running at any moment within the cluster's total: milli-GPU, CPU milli-cores, memory MiB (all parts of a
gang), and for every ``k`` of ``dff`` the GPU count ``u_k`` of :func:`formulations.schedule.rigid.dff_count`
(times ``k (k + 1)``, an integer: :func:`whole_rows`, the rows of
:func:`formulations.schedule.rigid.pooled_rows`). The objective is the total start, so the solver minimises the
total wait.

What it caps. The schedule found keeps, at every moment, every row of the pooled LP and of the rigid starts
(their rows are time averages of these, or fewer of them), so its mean wait is at least both relaxations'
optima: a bound above it is wrong (the study checks it). It is not a schedule of the cluster (it ignores nodes)
and not a bound (CP-SAT stops at its time limit). :func:`check` replays it on the grid, event by event, and every
real run is checked to lie inside its grid run.

Search and determinism: CP-SAT's portfolio of :data:`WORKERS` strategies interleaved in one thread
(``interleave_search``: its large-neighbourhood workers are what improve a schedule here; one default worker stalled
at 40.5 s on ``time-n16-j300-l1.3-s0`` where the portfolio reached 32.7 s in the same 20 deterministic seconds),
the seed, and a deterministic time limit (``max_deterministic_time``), so a run repeats exactly; the wall limit is a
safety net only.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from fgdopt.model import Cluster
from fgdopt.timeline import JobSet
from fgdopt.timeline.diagnostics import demand_profile
from fgdopt.timeline.schedule import instant_tolerance, rejected_jobs
from formulations.schedule.exact import RangeError, check_range, time_unit
from formulations.schedule.rigid import DFF, pooled_rows

DETERMINISTIC_S = 20.0
"""CP-SAT deterministic seconds by default (about 100 CPU seconds at 300 jobs)."""
WORKERS = 8
"""CP-SAT's strategies interleaved in one thread (module docstring)."""
WALL_FACTOR = 10.0
"""The wall limit is this many times the deterministic one (a safety net: the deterministic limit binds)."""
STATUS = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible",
          cp_model.MODEL_INVALID: "error", cp_model.UNKNOWN: "unknown"}
"""CP-SAT's status as the study writes it (``optimal``: the best pooled schedule on the grid)."""


@dataclass(frozen=True, eq=False)
class PooledCPSchedule:
    """A pooled schedule (module docstring).

    Attributes
    ----------
    start_s : float64 (n,), every job's start (seconds; NaN: rejected, or no schedule found).
    mean_wait_s : mean of start - submit over the admitted jobs (seconds; NaN without a schedule).
    status : ``optimal``, ``feasible``, ``unknown`` (nothing found in time), ``infeasible``, ``error``.
    unit_s : the grid unit (seconds).
    resources : the pooled rows kept, by name.
    wall_s, cpu_s : of the whole call (CPU: this process).
    """

    start_s: np.ndarray
    mean_wait_s: float
    status: str
    unit_s: float
    resources: tuple[str, ...]
    wall_s: float
    cpu_s: float


def whole_rows(cluster: Cluster, jobs: JobSet, dff: tuple[int, ...] = DFF) -> tuple[tuple[str, ...], np.ndarray,
                                                                                  np.ndarray]:
    """The pooled resources of :func:`formulations.schedule.rigid.pooled_rows` (every job) in whole numbers: their
    names, every job's demand (int64 (n, Q)) and the capacities (int64 (Q,)); ``u_k`` counts times ``k (k + 1)``.

    Examples
    --------
    >>> from fgdopt.model import TaskSet
    >>> cluster = Cluster([8000], [16384], [2], ["T4"])
    >>> jobs = JobSet(TaskSet([1000, 1000], [1024, 1024], [1, 1], [600, 1000]), [0, 0], [10, 10])
    >>> names, d, cap = whole_rows(cluster, jobs, dff=(1,))
    >>> names, d[:, 3].tolist(), int(cap[3])
    (('gpu', 'cpu', 'memory', 'gpu-u1'), [2, 2], 4)
    """
    names, demand, capacity, factor = pooled_rows(cluster, jobs, np.arange(len(jobs)), dff)
    scaled = demand * factor
    whole = np.rint(scaled).astype(np.int64)
    if not np.allclose(scaled, whole, rtol=0.0, atol=1e-6):
        raise AssertionError("a pooled demand is not a whole number of its unit: the scale is wrong")
    return tuple(names), whole, np.rint(capacity * factor).astype(np.int64)


def grid_unit(submit_s: np.ndarray, duration_s: np.ndarray) -> float:
    """The grid unit (seconds): the coarsest of :data:`formulations.schedule.exact.UNITS` of which every time is a
    whole multiple (1 s for times in whole seconds), else 1 s; made 10 times coarser until the horizon fits
    CP-SAT's integers (:func:`formulations.schedule.exact.check_range`). Any unit gives a pooled schedule: the
    grid only rounds durations up."""
    try:
        unit = time_unit(np.concatenate([submit_s, duration_s]))
    except ValueError:
        unit = 1.0
    while True:
        try:
            check_range(submit_s, np.ceil(duration_s / unit) * unit + unit, unit)
            return unit
        except RangeError:
            unit *= 10.0


def build(r_units: np.ndarray, p_units: np.ndarray, demand: np.ndarray, capacity: np.ndarray
          ) -> tuple[cp_model.CpModel, list]:
    """The CP-SAT model of the module docstring on the grid: starts at or after ``r_units``, fixed lengths
    ``p_units`` (whole units), one cumulative per column of ``demand`` within ``capacity``; minimise the total
    start. Returns the model and the start variables."""
    m = cp_model.CpModel()
    horizon = int(r_units.max(initial=0)) + int(p_units.sum())
    starts = [m.new_int_var(int(r), horizon, f"S{j}") for j, r in enumerate(r_units)]
    spans = [m.new_fixed_size_interval_var(s, int(p), f"run{j}") for j, (s, p) in enumerate(zip(starts, p_units,
                                                                                              strict=True))]
    for q in range(demand.shape[1]):
        use = demand[:, q]
        held = [(iv, int(d)) for iv, d in zip(spans, use, strict=True) if d > 0]
        if held and int(use.sum()) > int(capacity[q]):          # a row that always holds needs no constraint
            m.add_cumulative([iv for iv, _ in held], [d for _, d in held], int(capacity[q]))
    m.minimize(sum(starts))
    return m, starts


def solve(cluster: Cluster, jobs: JobSet, *, deterministic_s: float = DETERMINISTIC_S, dff: tuple[int, ...] = DFF,
          seed: int = 0) -> PooledCPSchedule:
    """The best pooled schedule CP-SAT finds within ``deterministic_s`` (module docstring), checked by :func:`check`.

    Parameters
    ----------
    deterministic_s : CP-SAT deterministic seconds (> 0).
    dff : the ``k`` of the GPU counts pooled (:func:`formulations.schedule.rigid.dff_count`).

    Raises
    ------
    ValueError : ``deterministic_s`` not a positive number, or an admitted job that never finishes.
    """
    if not deterministic_s > 0 or not math.isfinite(deterministic_s):
        raise ValueError(f"deterministic_s must be a positive number of seconds (got {deterministic_s})")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    rows = np.flatnonzero(~rejected_jobs(cluster, jobs))
    r, p = jobs.submit_s[rows].astype(np.float64), jobs.duration_s[rows].astype(np.float64)
    if not np.isfinite(p).all():
        raise ValueError("an admitted job never finishes (duration inf): no schedule has a finite mean wait")
    names, demand, capacity = whole_rows(cluster, jobs.take(rows), dff)
    start = np.full(len(jobs), np.nan)
    if len(rows) == 0:
        return PooledCPSchedule(start, math.nan, "optimal", 1.0, names, time.perf_counter() - wall0,
                                time.process_time() - cpu0)
    unit = grid_unit(r, p)
    r_units, p_units = np.ceil(r / unit).astype(np.int64), np.ceil(p / unit).astype(np.int64)
    model, starts = build(r_units, p_units, demand, capacity)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = WORKERS
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = int(seed)
    solver.parameters.max_deterministic_time = float(deterministic_s)
    solver.parameters.max_time_in_seconds = WALL_FACTOR * float(deterministic_s)
    status = STATUS.get(solver.solve(model), "error")
    mean = math.nan
    if status in ("optimal", "feasible"):
        s_units = np.array([solver.value(v) for v in starts], dtype=np.int64)
        check(s_units, p_units, demand, capacity, names)
        start[rows] = s_units * unit
        # every real run [S, S + p) lies in its grid run (up to a float's rounding of the unit's multiples)
        tol = instant_tolerance(start[rows] + p)
        if not ((start[rows] >= r - tol) & (start[rows] + p <= (s_units + p_units) * unit + tol)).all():
            raise AssertionError("a job's run leaves its grid run: the grid is wrong")
        mean = float((start[rows] - r).mean())
    return PooledCPSchedule(start, mean, status, unit, names, time.perf_counter() - wall0,
                            time.process_time() - cpu0)


def check(start: np.ndarray, length: np.ndarray, demand: np.ndarray, capacity: np.ndarray,
          names: tuple[str, ...]) -> None:
    """Raise ``AssertionError`` naming the first pooled row above its capacity at some moment, the jobs running
    over ``[start, start + length)`` (whole grid units, exact), replayed event by event apart from CP-SAT."""
    times, level = demand_profile(start, start + length, demand)
    over = level > capacity[None, :]
    if over.any():
        k, q = np.argwhere(over)[0]
        raise AssertionError(f"pooled schedule holds {level[k, q]:g} of {names[q]} at unit {times[k]:g}, above the "
                             f"capacity {capacity[q]}: the model is wrong")
