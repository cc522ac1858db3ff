"""A certified lower bound on the mean JCT of any schedule: the pooled, preemptive, interval-indexed LP.

The relaxation. Pool the cluster: one resource per kind, its capacity the cluster's total (milli-GPU, CPU
milli-cores, memory MiB). Let every job ``j`` (submission ``r_j``, duration ``p_j``, demands ``d_j``) run at any
rate ``rho_j(t)`` in [0, 1] from ``r_j`` on, using ``rho_j(t) d_j`` of each pooled resource, until it has done
``p_j`` seconds of work; preemption and any split are allowed. Every schedule of the stated problem
(:mod:`fgdopt.timeline.schedule`) is such a solution with ``rho_j = 1`` on ``[S_j, S_j + p_j)``: the jobs running
at any moment fit their nodes, so their sums fit the pooled capacities.

The LP. Cut time into intervals ``I_k = [k D, (k+1) D)`` from the one holding the first submission up to a cap
``T`` (``D`` = ``step_s``; no interval before it, so that jobs submitted at 10^12 s cost what they would at 0).
Variable ``f_jk`` = the fraction of ``j``'s work done in ``I_k`` (only for ``I_k`` meeting ``[r_j, w_j)``, its window,
``w_j = min(T, r_j + p_j + slack_s)`` rounded up to the grid), ``z_j`` = the fraction done after ``w_j``, and
``C_j``. Constraints, each implied by every solution of the relaxation:

1. ``sum_k f_jk + z_j >= 1`` (the whole work is done; as an inequality, a relaxation with the same optimum:
   lowering any f_jk or z_j loosens every other row; HiGHS 1.14's dual fixing spends time quadratic in
   the length of an equation row in presolve, where no time limit is checked: minutes for a job with 10^5
   columns);
2. ``p_j f_jk <= |I_k cap [r_j, inf)|`` (rate at most 1, nothing before the submission);
3. per interval and resource, ``sum_j d_j p_j f_jk <= cap D - (what pinned jobs use in I_k)`` (pooled capacity;
   nothing is imposed after ``w_j``: dropping constraints only relaxes);
4. ``C_j >= r_j + p_j``, and ``C_j >= sum_k f_jk max(kD, r_j) + z_j w_j + p_j / 2``: the *mean busy time*
   ``M_j = int t rho_j(t) dt / p_j`` of a job that finishes at ``C_j`` at rate <= 1 is at most ``C_j - p_j / 2``
   (its work is latest when it is packed just before ``C_j``), and at least the right-hand sum minus ``p_j / 2``
   (each piece of work is done no earlier than the start of its interval, its submission, or ``w_j``).

5. *remaining work*: with ``F_j(t)`` the fraction done before ``t >= r_j`` (a sum of ``f_jk``, or ``1 - z_j`` at
   ``w_j``), ``C_j + max(p_j, t - r_j) F_j(t) >= t + p_j``. Proof: ``C_j - r_j - p_j`` is the time in
   ``[r_j, C_j)`` without work (rate <= 1). If ``j`` is unfinished at ``t``, that idle time is at least
   ``(t - r_j) - p_j F_j(t)``, which is at least ``(t - r_j)(1 - F_j(t))`` when ``t - r_j >= p_j``; if it is
   finished (``F_j = 1``, possible only when ``t - r_j >= p_j``) the row says ``C_j >= r_j + p_j``.
   It makes deferring a long job's work cost what it delays it (the LP states 5. at ``t = w_j`` only).

Minimizing ``sum_j C_j`` over the counted jobs gives a lower bound on their total completion time in every
schedule, hence on their mean JCT (subtract the mean submission) and mean wait (subtract the mean duration too;
in a non-preemptive schedule wait = JCT - duration). Jobs neither counted nor pinned are dropped (a relaxation
too). *Pinned* jobs are assumed to run at their submission for their whole duration (their use of each interval is
taken off the capacity): that bound holds for the schedules that start the pinned jobs at once (e.g. an engine run
in which every background job started on arrival, which the study checks run by run), not for every schedule.
The grid costs at most ``D`` per job (a piece of work counted at its interval's start); the bound stays valid for
any ``D`` and ``slack_s``. The LP is written in the waits ``I_j = C_j - r_j - p_j >= 0`` (minimize their sum;
no row carries absolute times). Jobs much longer than their window (``p_j >= 2 (w_j - r_j)``: the services and most
of the warm start at full scale) enter through one column per group of equal window and demands and interval
(:func:`_groups`: an exact reformulation, not a further relaxation). HiGHS solves it (interior point without
crossover, one thread); the reported bound is its optimum lowered by :data:`SAFETY` to absorb the solver's
feasibility tolerances. When the solver stops early or ends short of its tolerances (openb default, 20,000 stream
jobs, load 1.2, seed 42: HiGHS' status ``Unknown`` after 49 interior-point iterations, primal feasible, dual
infeasible), its last row duals, repaired to be exactly dual feasible, still certify a bound (:func:`dual_bound`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fgdopt.model import Cluster
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import rejected_jobs
from formulations.highs import build_highs, highs_lp, last_row_duals, solve

SAFETY = 1e-6
"""Relative amount (of the total wait, at least 1 s) by which the LP optimum is lowered before it is reported."""
MAX_COLUMNS = 150_000
"""The most interval variables under the default grid step (:func:`default_step`)."""


@dataclass(frozen=True)
class PooledBound:
    """Lower bounds (seconds) on the counted jobs' mean JCT and mean wait; ``status`` ``optimal`` when the LP was
    solved (the bounds are then certified), ``infeasible`` when the pinned jobs alone exceed a pooled capacity in
    an interval of the grid (no schedule starts them all on arrival; the bounds are NaN), ``time_limit`` (stopped
    early) or ``imprecise`` (the interior point method ended short of its tolerances) with the bounds certified by the
    solver's last row duals (:func:`dual_bound`, at least the trivial ones), else ``error`` (the trivial bounds:
    JCT >= duration, wait >= 0). ``jobs`` counted, ``columns`` interval variables, ``step_s`` and ``slack_s`` of
    the grid."""

    mean_jct_s: float
    mean_wait_s: float
    trivial_jct_s: float
    status: str
    jobs: int
    columns: int
    step_s: float
    slack_s: float
    wall_s: float
    cpu_s: float


def _columns(r: np.ndarray, p: np.ndarray, cap_t: float, step: float, slack: float) -> tuple[np.ndarray, np.ndarray]:
    """First and one-past-last grid interval of every job's window."""
    k0 = np.floor(r / step).astype(np.int64)
    w = np.minimum(cap_t, r + p + slack)
    k1 = np.maximum(np.ceil(w / step).astype(np.int64), k0 + 1)
    return k0, k1


def _groups(r: np.ndarray, p: np.ndarray, k0: np.ndarray, k1: np.ndarray, step: float, shape: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The *long* jobs (``p_j >= 2 (w_j - r_j)``), their group (same window and demands) and each group's first job.

    For a long job, row 4. is void (its right-hand side is at most ``w_j - r_j - p_j / 2 <= 0 <= I_j``) and row 5.
    reads ``I_j >= (w_j - r_j) - W_j``, ``W_j`` its work (seconds) in the window, so the LP depends on a group's jobs
    only through their summed work per interval: one column per group and interval (at most the group's size
    times the interval's room) replaces theirs, and the sum of their ``I_j`` is ``sum (w - r) - sum W``."""
    w = k1 * step
    long = p >= 2 * (w - r)
    key = np.column_stack([r, k0, k1, shape])[long]
    group_of = np.full(len(r), -1, dtype=np.int64)
    if not long.any():
        return long, group_of, np.zeros(0, dtype=np.int64)
    _, first_local, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    group_of[long] = inverse.ravel()
    return long, group_of, np.flatnonzero(long)[first_local]


def default_step(r: np.ndarray, p: np.ndarray, slack: float, shape: np.ndarray) -> float:
    """The default grid step ``D`` (seconds) of jobs submitted at ``r`` and running ``p`` seconds (float64 (n,)) with
    windows ``slack`` seconds beyond ``r_j + p_j`` and demands ``shape`` (n, 3): 1 s, grown by a quarter (rounded up
    to whole seconds) until the interval variables are at most :data:`MAX_COLUMNS`. A window may span most of them
    (a few jobs as long as the horizon): its rows (1. and 4.) are inequalities, which HiGHS' presolve gets through
    at once (3 jobs of 20,000 s on a 1 s grid, 120,006 columns: 0.94 s; with the work rows as equations, 277 s
    under a 5 s limit)."""
    step = 1.0
    cap_t = float(r.max()) + slack
    while True:
        k0, k1 = _columns(r, p, cap_t, step, slack)
        long, _, first = _groups(r, p, k0, k1, step, shape)
        size = k1 - k0
        if size[~long].sum() + size[first].sum() <= MAX_COLUMNS:
            return step
        step = float(math.ceil(step * 1.25))


def dual_bound(costs: np.ndarray, col_lower: np.ndarray, col_upper: np.ndarray, row_lower: np.ndarray,
               row_upper: np.ndarray, matrix: sp.spmatrix, row_duals: np.ndarray) -> float:
    """A lower bound on ``min costs @ x`` over ``col_lower <= x <= col_upper``, ``row_lower <= matrix @ x <=
    row_upper``, from any row multipliers (e.g. an interior-point solver's, short of its tolerances): -inf when
    they cannot be repaired.

    Weak duality: for any ``y`` whose signs match the finite row sides (``y_i >= 0`` only with a finite lower side,
    ``<= 0`` only with a finite upper side), ``costs @ x >= y @ (matrix @ x) + d @ x`` with ``d = costs - matrix.T
    @ y``, so the optimum is at least ``sum_i min(y_i l_i, y_i u_i) + sum_j min(d_j l_j, d_j u_j)`` (``y_i l_i`` for
    ``y_i > 0``, ``y_i u_i`` for ``y_i < 0``), finite when no ``d_j`` pushes towards an infinite column side.
    Repair: the signs are clipped, then for each column with an infinite upper side and ``d_j < 0`` the
    multipliers that make it negative (``y_i a_ij > 0``) are scaled down just enough (by ``1 + d_j / sum y_i a_ij``);
    if some column is still unbounded after that, the result is -inf. Exact duals of an optimum give the
    optimum; any others, less.

    Example: ``min x`` s.t. ``x >= 2`` (one row, ``0 <= x``): ``y = 1`` gives 2; ``y = 3`` is scaled to 1 (the
    column ``x`` would earn ``1 - 3 < 0`` per unit); ``y = -1`` is clipped to 0 and gives 0.
    """
    y = np.asarray(row_duals, dtype=np.float64).copy()
    y[~np.isfinite(row_lower)] = np.minimum(y[~np.isfinite(row_lower)], 0.0)
    y[~np.isfinite(row_upper)] = np.maximum(y[~np.isfinite(row_upper)], 0.0)
    m = sp.csc_matrix(matrix)
    d = costs - m.T @ y
    for j in np.flatnonzero((d < 0) & ~np.isfinite(col_upper)).tolist():
        lo, hi = m.indptr[j], m.indptr[j + 1]
        rows, vals = m.indices[lo:hi], m.data[lo:hi]
        pushing = y[rows] * vals > 0
        earned = float((y[rows] * vals)[pushing].sum())
        if earned > 0:
            y[rows[pushing]] *= max(0.0, 1.0 + d[j] / earned)
    d = costs - m.T @ y
    if ((d < 0) & ~np.isfinite(col_upper)).any() or ((d > 0) & ~np.isfinite(col_lower)).any():
        return -math.inf
    row_part = np.where(y > 0, y * np.where(y > 0, row_lower, 0.0), y * np.where(y < 0, row_upper, 0.0))
    col_part = np.where(d > 0, d * np.where(d > 0, col_lower, 0.0), d * np.where(d < 0, col_upper, 0.0))
    return float(row_part.sum() + col_part.sum())


def pooled_bound(cluster: Cluster, jobs: JobSet, counted: np.ndarray | None = None,
                 pinned: np.ndarray | None = None, step_s: float | None = None, slack_s: float | None = None,
                 time_limit: float = 60.0, resources: tuple[str, ...] = ("gpu", "cpu", "memory"),
                 solver: str = "ipm", crossover: str = "off") -> PooledBound:
    """The LP bound of the module docstring.

    Parameters
    ----------
    counted : bool mask of the jobs whose mean JCT is bounded (default: every admitted job); rejected jobs (fit no
        empty node) are never counted.
    pinned : bool mask of jobs assumed to run from their submission (module docstring); default none. Rejected
        jobs are never pinned: they never run.
    step_s : the grid step ``D`` (default: :func:`default_step`). slack_s : a job's window beyond ``r_j + p_j``
        (default: a tenth of the submission span plus twice the median duration).
    time_limit : HiGHS' limit in seconds. resources : the pooled resources (``gpu``, ``cpu``, ``memory``).
    """
    wall0, cpu0 = time.perf_counter(), time.process_time()
    admitted = ~rejected_jobs(cluster, jobs)
    counted = admitted if counted is None else np.asarray(counted, dtype=bool) & admitted
    pinned = np.zeros(len(jobs), dtype=bool) if pinned is None else np.asarray(pinned, dtype=bool) & admitted & ~counted
    rows = np.flatnonzero(counted)
    r, p = jobs.submit_s[rows], jobs.duration_s[rows]
    if not np.isfinite(p).all():
        raise ValueError("a counted job never finishes (duration inf)")
    n = len(rows)
    trivial = float(p.mean()) if n else math.nan
    if n == 0:
        return PooledBound(math.nan, math.nan, math.nan, "optimal", 0, 0, 0.0, 0.0, 0.0, 0.0)
    t = jobs.tasks                                              # a gang's demand: all its parts'
    shape = np.stack([t.gpu_demand[rows], (t.cpu_milli * t.workers)[rows], (t.memory_mib * t.workers)[rows]], axis=1)
    span = float(r.max() - r.min())
    slack = slack_s if slack_s is not None else 0.1 * span + 2 * float(np.median(p))
    if step_s is None:
        step_s = default_step(r, p, slack, shape)
    cap_t = float(r.max()) + slack
    k0, k1 = _columns(r, p, cap_t, step_s, slack)
    k_base = int(k0.min())                                          # the grid starts at the first window
    n_int = int(k1.max()) - k_base
    long, group_of, first = _groups(r, p, k0, k1, step_s, shape)
    mult = np.bincount(group_of[long], minlength=len(first)).astype(np.float64) if long.any() else np.zeros(0)
    g_r, g_w, g_k0, g_k1, g_d = r[first], k1[first] * step_s, k0[first], k1[first], shape[first]
    constant = float((mult * (g_w - g_r)).sum())                   # sum over long jobs of w - r
    n_all, trivial_all = n, trivial
    keep_rows = ~long
    r, p, k0, k1, rows = r[keep_rows], p[keep_rows], k0[keep_rows], k1[keep_rows], rows[keep_rows]
    n = len(rows)
    demand = {"gpu": jobs.tasks.gpu_demand, "cpu": jobs.tasks.cpu_milli * jobs.tasks.workers,
              "memory": jobs.tasks.memory_mib * jobs.tasks.workers}
    capacity = {"gpu": cluster.gpu_capacity_milli, "cpu": int(cluster.cpu_milli.sum()),
                "memory": int(cluster.memory_mib.sum())}
    # a resource the cluster has none of (a trace that records no CPU or memory): every admitted job asks none of it
    # (a job that does fits no node and is rejected), so its rows would be 0 <= 0; they are left out
    resources = tuple(res for res in resources if capacity[res] > 0)
    edges = np.arange(k_base, k_base + n_int + 1) * step_s           # edges[k - k_base] = k D
    # columns: f_jk (job-major), then z_j, then C_j
    counts = k1 - k0
    job_of = np.repeat(np.arange(n), counts)
    k_of = np.concatenate([np.arange(a, b) for a, b in zip(k0.tolist(), k1.tolist(), strict=True)]
                          + [np.zeros(0, dtype=np.int64)])
    n_f = len(job_of)
    left = np.maximum(edges[k_of - k_base], r[job_of])
    room = edges[k_of - k_base + 1] - left                          # rate <= 1 from the submission on
    pj = p[job_of]
    f_upper = np.where(pj > 0, np.minimum(1.0, room / np.where(pj > 0, pj, 1.0)), 1.0)
    w = edges[k1 - k_base]
    # long jobs, by group: Y_gk = the group's work (seconds) in I_k, at most its size times the room after r_g
    gk_of = np.repeat(np.arange(len(first)), g_k1 - g_k0)
    gk_k = np.concatenate([np.arange(a, b) for a, b in zip(g_k0.tolist(), g_k1.tolist(), strict=True)]
                          + [np.zeros(0, dtype=np.int64)])
    g_upper = (mult[gk_of] * (edges[gk_k - k_base + 1] - np.maximum(edges[gk_k - k_base], g_r[gk_of])) if len(first)
               else np.zeros(0))
    f_cols = np.arange(n_f)
    z_cols = n_f + np.arange(n)
    i_cols = n_f + n + np.arange(n)                                 # I_j = C_j - r_j - p_j >= 0 (the wait)
    g_cols = n_f + 2 * n + np.arange(len(gk_of))
    # rows: n work rows (= 1), n mean-busy-time rows (4.), one capacity row per resource and interval (3.), n
    # remaining-work rows (5.); all in terms of I_j, so that no row carries absolute times
    row_idx = [job_of, n + job_of, np.arange(n), n + np.arange(n), n + np.arange(n)]
    col_idx = [f_cols, f_cols, z_cols, z_cols, i_cols]
    vals = [np.ones(n_f), -(left - r[job_of]), np.ones(n), -(w - r), np.ones(n)]
    cap_lo, cap_hi = [], []
    for q, res in enumerate(resources):
        d = demand[res][rows].astype(np.float64)
        total = float(capacity[res]) * step_s
        used = np.zeros(n_int)
        for j in np.flatnonzero(pinned).tolist():                   # pinned jobs' use of every interval
            a, b = jobs.submit_s[j], jobs.submit_s[j] + jobs.duration_s[j]
            overlap = np.clip(np.minimum(edges[1:], b) - np.maximum(edges[:-1], a), 0.0, None)
            used += overlap * float(demand[res][j])
        room_k = (total - used) / total
        if (room_k < -1e-9).any():                                  # no schedule starts them all at once
            return PooledBound(math.nan, math.nan, trivial, "infeasible", n, 0, float(step_s), float(slack),
                               time.perf_counter() - wall0, time.process_time() - cpu0)
        coef = d[job_of] * pj / total
        keep = coef > 0
        row_idx.append(2 * n + q * n_int + k_of[keep] - k_base)
        col_idx.append(f_cols[keep])
        vals.append(coef[keep])
        gcoef = g_d[gk_of, q] / total if len(gk_of) else np.zeros(0)
        row_idx.append(2 * n + q * n_int + gk_k[gcoef > 0] - k_base)
        col_idx.append(g_cols[gcoef > 0])
        vals.append(gcoef[gcoef > 0])
        cap_lo.append(np.full(n_int, -np.inf))
        cap_hi.append(np.maximum(room_k, 0.0))
    # remaining-work rows (5. of the module docstring) at w_j, via z_j
    base = 2 * n + len(resources) * n_int
    c = np.maximum(p, w - r)                                        # C_j - c z_j >= w_j + p_j - c, minus r_j + p_j
    row_idx += [base + np.arange(n), base + np.arange(n)]
    col_idx += [z_cols, i_cols]
    vals += [-c, np.ones(n)]
    cap_lo.append(w - r - c)
    cap_hi.append(np.full(n, np.inf))
    n_rows = base + n
    n_cols = n_f + 2 * n + len(gk_of)
    a = sp.csc_matrix((np.concatenate(vals), (np.concatenate(row_idx), np.concatenate(col_idx))),
                      shape=(n_rows, n_cols))
    arrays = (np.concatenate([np.zeros(n_f + n), np.ones(n), -np.ones(len(gk_of))]), np.zeros(n_cols),
              np.concatenate([f_upper, np.ones(n), np.full(n, np.inf), g_upper]),
              np.concatenate([np.ones(n), -p / 2, *cap_lo]),
              np.concatenate([np.full(n, np.inf), np.full(n, np.inf), *cap_hi]), a)
    h = build_highs(highs_lp(*arrays), time_limit=time_limit, options={"solver": solver, "run_crossover": crossover})
    res = solve(h)
    status = res.status
    jct, wait, state = trivial, 0.0, "error"
    total = math.nan
    if status == "optimal":
        total = res.objective
        state = "optimal"
    else:                                                           # stopped, or short of its tolerances
        duals = last_row_duals(h)
        if duals is not None:
            total = dual_bound(*arrays, duals)
            state = "time_limit" if status == "time_limit" else "imprecise"
        elif status == "time_limit":
            state = "time_limit"
    if math.isfinite(total):
        total += constant
        wait = max(0.0, total - SAFETY * max(1.0, abs(total))) / n_all
        jct = trivial_all + wait
    return PooledBound(jct, wait, trivial_all, state, n_all, n_cols, float(step_s), float(slack),
                       time.perf_counter() - wall0, time.process_time() - cpu0)
