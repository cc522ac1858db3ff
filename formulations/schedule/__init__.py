"""The offline scheduling problem over time (:mod:`fgdopt.timeline.schedule`): one front, :func:`solve_schedule`.

=======================================  ======================================================================
:mod:`formulations.schedule.exact`       the exact CP-SAT model (optional intervals per job x node and
                                         job x GPU, cumulatives, symmetry rules, the engine's best run as hint)
:mod:`formulations.schedule.bound`       the pooled, preemptive, interval-indexed LP: a certified lower bound on
                                         the mean JCT that scales to the whole openb cluster
:mod:`formulations.schedule.configlp`    the time x node-type configuration LP (column generation, a Lagrangian
                                         bound valid at every iteration): sees that jobs fit nodes, not that
                                         they never move
:mod:`formulations.schedule.rigid`       rigid starts against pooled capacities and dual-feasible GPU counts on a
                                         fine grid (Lagrangian ascent, a bound valid at every step): sees that
                                         jobs keep their full demand from start to end, not the nodes
:mod:`formulations.schedule.nodedecomp`  node schedules on disjoint job subsets (column generation with CP-SAT
                                         pricing): sees that jobs never move, on subsets of a few dozen jobs
:mod:`formulations.schedule.record`      :class:`BoundRecord`, the one result of every bound
:mod:`formulations.schedule.portfolio`   the upper side at any scale: every policy x queue engine run,
                                         validated by replay, named ``policy/queue``, least mean wait first
:mod:`formulations.schedule.lns`         large-neighbourhood search: re-optimizes windows (time x nodes) of
                                         a schedule with the exact model, keeps what lowers the wait
=======================================  ======================================================================
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from fgdopt.model import Cluster
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import Schedule, objective_value, rejected_jobs, validate_schedule
from formulations.schedule.bound import PooledBound, pooled_bound
from formulations.schedule.configlp import config_bound
from formulations.schedule.exact import MODEL_OBJECTIVES, solve_exact
from formulations.schedule.nodedecomp import nodedecomp_bound
from formulations.schedule.record import BoundRecord, pooled_record
from formulations.schedule.rigid import rigid_bound

STATUSES = ("optimal", "time_limit", "infeasible")
LP_SHARE = 0.25
"""The most of ``time_limit`` the LP bound may take (it runs first; the exact model gets what it leaves)."""
RESERVE_SHARE = 0.02
"""The part of ``time_limit`` kept back from the exact model's search for the replay check and the result."""
BOUND_TOLERANCE = 1e-6
"""Relative tolerance within which an incumbent meeting its bound counts as proven (CP-SAT's bounds are exact
integers in the model's unit; the LP's are lowered by :data:`formulations.schedule.bound.SAFETY`)."""

__all__ = ["MODEL_OBJECTIVES", "STATUSES", "BoundRecord", "PooledBound", "ScheduleResult", "config_bound",
           "nodedecomp_bound", "pooled_bound", "pooled_record", "rigid_bound", "solve_schedule"]


@dataclass(frozen=True, eq=False)
class ScheduleResult:
    """One solve of the offline scheduling problem.

    Attributes
    ----------
    objective : ``mean-jct`` or ``makespan``.
    schedule : the incumbent (validated by replay), or None when none is known.
    value : its objective (seconds; NaN without a schedule). mean_wait_s : its mean wait (seconds).
    bound : the proven lower bound on the objective (seconds): the larger of CP-SAT's own bound and, for
        ``mean-jct``, the pooled LP's (:mod:`formulations.schedule.bound`).
    status : ``optimal`` (value == bound within :data:`BOUND_TOLERANCE`), ``time_limit`` (stopped with the
        incumbent and the bound as they were), ``infeasible``.
    wall_s, cpu_s : wall and CPU seconds of the whole solve (CPU: this process, every solver thread).
    info : CP-SAT's own status and bound, the LP bound, model size.
    """

    objective: str
    schedule: Schedule | None
    value: float
    mean_wait_s: float
    bound: float
    status: str
    wall_s: float
    cpu_s: float
    info: dict

    @property
    def gap_pct(self) -> float:
        """``100 (value - bound) / bound``: at most how far above the optimum the incumbent is (0 when proven)."""
        if self.status == "optimal":
            return 0.0
        if not (math.isfinite(self.value) and math.isfinite(self.bound)) or self.bound <= 0:
            return math.nan
        return 100.0 * (self.value - self.bound) / self.bound


def solve_schedule(cluster: Cluster, jobs: JobSet, objective: str = "mean-jct", time_limit: float = 60.0,
                   hint: Schedule | None = None, threads: int = 2, seed: int = 0,
                   deterministic_time: float | None = None, lp_bound: bool = True) -> ScheduleResult:
    """The optimum (or the incumbent and a proven bound) of the offline scheduling problem.

    Parameters
    ----------
    cluster, jobs : the instance; jobs that fit no empty node are rejected and leave both sides.
    objective : one of :data:`~formulations.schedule.exact.MODEL_OBJECTIVES`.
    time_limit : wall seconds for the whole solve: the LP bound (``mean-jct``) runs first, within
        :data:`LP_SHARE` of it (at least 1 s), the exact model (build and search) gets what is left; the replay
        checks come on top (milliseconds on small instances).
    hint : a feasible schedule (e.g. the best engine run): CP-SAT's hint, and the incumbent if CP-SAT finds none.
    threads : CP-SAT workers (at most 2). seed : CP-SAT's random seed.
    deterministic_time : CP-SAT's deterministic-time limit as well (for reproducible stops).
    lp_bound : also compute the pooled LP bound (``mean-jct`` only).

    Returns
    -------
    ScheduleResult, whose schedule has been replayed on the ``ClusterState`` and whose value is recomputed from
    its start times.
    """
    if objective not in MODEL_OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose one of {', '.join(MODEL_OBJECTIVES)}")
    if not time_limit >= 0:
        raise ValueError(f"time limit must be >= 0 seconds, got {time_limit}")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    admitted = ~rejected_jobs(cluster, jobs)
    lp = None
    if objective == "mean-jct" and lp_bound and admitted.any():
        lp = pooled_bound(cluster, jobs, time_limit=max(LP_SHARE * time_limit, 1.0))
    search_s = max((1 - RESERVE_SHARE) * time_limit - (time.perf_counter() - wall0), 0.0)
    run = solve_exact(cluster, jobs, objective, search_s, hint, threads, seed, deterministic_time)
    schedule = run.schedule
    if schedule is None or (hint is not None and objective_value(jobs, hint, objective)
                            < objective_value(jobs, schedule, objective)):
        schedule = hint
    info = {**run.info, "cpsat_status": run.status, "cpsat_bound": run.bound_s}
    bound = run.bound_s
    if objective == "mean-jct" and admitted.any():
        bound = max(bound, float(jobs.duration_s[admitted].mean()))
        if lp is not None:
            info["lp_bound"], info["lp_status"] = lp.mean_jct_s, lp.status
            if lp.status == "optimal":
                bound = max(bound, lp.mean_jct_s)
    elif objective == "makespan" and admitted.any():
        bound = max(bound, float((jobs.submit_s + jobs.duration_s)[admitted].max()))
    value = wait = math.nan
    if schedule is not None:
        validate_schedule(cluster, jobs, schedule)
        value = objective_value(jobs, schedule, objective)
        wait = objective_value(jobs, schedule, "mean-wait")
        if not admitted.any():
            value = 0.0 if objective == "makespan" else math.nan
    if run.status == "infeasible" and schedule is None:
        status = "infeasible"
    elif schedule is not None and (not admitted.any() or value <= bound * (1 + BOUND_TOLERANCE) + 1e-9):
        status = "optimal"
    else:
        status = "time_limit"
    if schedule is not None and admitted.any() and bound > value * (1 + BOUND_TOLERANCE) + 1e-6:
        raise AssertionError(f"bound {bound} above the value {value} of a validated schedule")
    if status == "optimal" and admitted.any():
        bound = min(bound, value)
    return ScheduleResult(objective, schedule, value, wait, bound, status, time.perf_counter() - wall0,
                          time.process_time() - cpu0, info)
