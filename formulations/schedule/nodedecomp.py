"""A lower bound on the mean wait by node schedules: a set-partitioning master on disjoint job subsets.

Subsets. Split the admitted jobs into disjoint subsets ``J_1, ..., J_m``. Removing jobs from a schedule keeps it
feasible, so the optimal schedule of all jobs restricted to ``J_i`` is a schedule of ``J_i`` alone: its wait on
``J_i`` is at least ``OPT(J_i)``, and summing, ``OPT >= sum_i OPT(J_i)`` (total waits). Any lower bound on each
``OPT(J_i)`` may be summed. The default subsets (:func:`window_subsets`) are consecutive runs of the jobs in
submission order: jobs submitted close together are the ones that contend (a job can only be delayed by jobs
that run when it is submitted), and a whole-node job keeps with it the jobs submitted just before it, which hold
the nodes it needs.

Master, per subset. A *node schedule* of type ``t`` is a set ``A`` of jobs with starts ``S_j >= r_j`` and GPUs
that fit one node of type ``t`` at every moment (the feasibility rule of :mod:`fgdopt.state`, on one node); its
cost is ``sum_{j in A} (S_j - r_j)``. Any schedule of ``J_i`` is, node by node, at most ``N_t`` node schedules of
type ``t`` covering each job once; so the LP ``min sum c_s lam_s, sum_{s ni j} lam_s = 1 (j in J_i),
sum_{s of type t} lam_s <= N_t, lam >= 0`` is at most ``OPT(J_i)``.

The bound (valid at every iteration). For any ``pi`` (one number per job), Lagrangian duality on the cover rows
gives ``OPT(J_i) >= LP >= sum_j pi_j + sum_t N_t min(0, rc_t(pi))`` where ``rc_t(pi) = min over node schedules
of type t of sum_{j in A} (S_j - r_j - pi_j)``. Pricing computes ``rc_t`` with CP-SAT on one node (optional
jobs; a job with ``pi_j <= 0`` is never worth including, nor a start later than ``r_j + pi_j``, so the search
space is finite); prices are rounded *up* to integers of the model's scale and CP-SAT's proven bound is used, so a
time-limited pricing still under-estimates ``rc_t`` and keeps the bound valid. ``pi`` comes from the master's
duals; column generation adds the priced node schedules while their reduced cost is negative and stops
(``optimal``) when pricing proves none is. The master starts from the node schedules of the subset's ceiling run
(below) and, per job, a column "alone at its submission".

Ceiling. Each subset's least wait over a few engine runs of it alone (:data:`CEILING_QUEUES` under
:data:`CEILING_POLICY`, validated by replay, :func:`subset_ceilings`) is at least ``OPT(J_i)``, so their sum is the
most that any bound on these subsets can reach, however long it runs (``info["ceiling_wait_s"]``, a mean over the
admitted jobs). A subset whose ceiling is 0 has ``OPT(J_i) = 0``: it is proven at once, without column generation.

What it sees. Jobs never move (a node schedule keeps its jobs for their whole run), whole-GPU jobs need whole
free GPUs of one node, draining. What it cannot see: the jobs of other subsets (they are removed). When the
wait is a collective effect of many jobs, splitting them removes most of it: on the ``medium-time``
instances (:mod:`fgdopt.timeline.suites`) the subsets of 40 jobs have ceilings of at most 0.1 s of mean wait
over all jobs (0 on 6 of 8 instances, whose best engine runs wait 14.8-79.2 s); two halves in submission order
at most 44% of the best engine run, and the jobs that never share a node (more than half of a resource of every
node they fit) against the rest at most 7%. It certifies where the subsets are the contention windows (the
traps, hand cases where a whole-node job waits for a node to drain).
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from fgdopt.model import GPU_MILLI, Cluster
from fgdopt.state import ClusterState
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import Schedule, rejected_jobs
from formulations.highs import add_columns, build_highs, rows_lp, run_until
from formulations.schedule.bound import SAFETY
from formulations.schedule.exact import RangeError, check_range, node_types, time_unit
from formulations.schedule.portfolio import run as portfolio_run
from formulations.schedule.record import BoundRecord

PRICE_SCALE = 1000
"""CP-SAT's objective counts ``1 / PRICE_SCALE`` of a time unit."""
TOLERANCE = 1e-6
"""Reduced cost (seconds) below which a node schedule is added; relative gap at which a subset is optimal."""
CEILING_POLICY = "best-fit"
"""The placement policy of the engine runs that give each subset's ceiling (its first node schedules too)."""
CEILING_QUEUES = ("fifo", "backfill", "sjf", "smallest")
"""The queue disciplines of those runs."""


def window_subsets(jobs: JobSet, rows: np.ndarray, size: int) -> list[np.ndarray]:
    """``rows`` in submission order (ties by index), cut into consecutive runs of ``size`` jobs."""
    order = rows[np.lexsort((rows, jobs.submit_s[rows]))]
    return [order[i:i + size] for i in range(0, len(order), size)]


def subset_ceilings(cluster: Cluster, jobs: JobSet, subsets: list[np.ndarray]) -> tuple[np.ndarray, list[Schedule]]:
    """Per subset, the least total wait (seconds) of its jobs alone over the engine runs :data:`CEILING_POLICY` x
    :data:`CEILING_QUEUES` (each validated by replay, :func:`formulations.schedule.portfolio.run`), and that run's
    schedule (of ``jobs.take(subset)``). Each total is at least the subset's optimum ``OPT(J_i)`` (module
    docstring, "Ceiling")."""
    totals, schedules = np.zeros(len(subsets)), []
    for i, sub in enumerate(subsets):
        sub_jobs = jobs.take(sub)
        best = portfolio_run(cluster, sub_jobs, policies=[CEILING_POLICY], queues=list(CEILING_QUEUES))[0]
        totals[i] = float(np.nansum(best.schedule.start_s - sub_jobs.submit_s))
        schedules.append(best.schedule)
    return totals, schedules


def price_node(cluster: Cluster, node: int, jobs: JobSet, cands: np.ndarray, pi: np.ndarray, unit: float,
               time_limit: float, seed: int = 0) -> tuple[float, np.ndarray, np.ndarray, tuple, bool]:
    """The cheapest node schedule on ``node`` (a representative of its type) at prices ``pi`` (seconds).

    Returns
    -------
    tuple
        ``lower``, a proven lower bound (seconds) on the least ``sum (S_j - r_j - pi_j)`` over node schedules of
        jobs ``cands`` (``pi`` aligned with them); ``chosen``, the rows of ``cands`` of the best schedule found;
        their ``starts`` (seconds) and ``gpus``; ``proven``, whether CP-SAT closed the search.
    """
    from ortools.sat.python import cp_model

    tasks = jobs.tasks
    m = cp_model.CpModel()
    g_count = int(cluster.gpu[node])
    r = np.round(jobs.submit_s[cands] / unit).astype(np.int64)
    p = np.round(jobs.duration_s[cands] / unit).astype(np.int64)
    prize = np.ceil(np.maximum(pi, 0.0) * PRICE_SCALE / unit - 1e-9).astype(np.int64)
    slack = np.floor(np.maximum(pi, 0.0) / unit + 1e-9).astype(np.int64)
    x, s, w, ivs, gl = [], [], [], [], []
    per_gpu: list[list] = [[] for _ in range(g_count)]
    for i, j in enumerate(cands.tolist()):
        xi = m.new_bool_var(f"x{i}")
        si = m.new_int_var(int(r[i]), int(r[i] + slack[i]), f"s{i}")
        wi = m.new_int_var(0, int(slack[i]), f"w{i}")
        m.add(wi >= si - int(r[i])).only_enforce_if(xi)
        ivs.append(m.new_optional_fixed_size_interval_var(si, int(p[i]), xi, f"I{i}"))
        lits = []
        if tasks.num_gpu[j]:
            for g in range(g_count):
                lg = m.new_bool_var(f"y{i}_{g}")
                lits.append(lg)
                per_gpu[g].append((int(tasks.gpu_milli[j]),
                                   m.new_optional_fixed_size_interval_var(si, int(p[i]), lg, f"I{i}_{g}")))
            m.add(sum(lits) == int(tasks.num_gpu[j]) * xi)
        x.append(xi)
        s.append(si)
        w.append(wi)
        gl.append(lits)
    m.add_cumulative(ivs, [int(tasks.cpu_milli[j]) for j in cands.tolist()], int(cluster.cpu_milli[node]))
    m.add_cumulative(ivs, [int(tasks.memory_mib[j]) for j in cands.tolist()], int(cluster.memory_mib[node]))
    for items in per_gpu:
        if items:
            m.add_cumulative([iv for _, iv in items], [d for d, _ in items], GPU_MILLI)
    m.maximize(sum(int(prize[i]) * x[i] for i in range(len(cands)))
               - PRICE_SCALE * sum(w[i] for i in range(len(cands))))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(float(time_limit), 0.01)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = int(seed)
    code = solver.solve(m)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
        raise RuntimeError(f"CP-SAT pricing: {solver.status_name(code)}")
    upper = float(prize.sum()) * unit / PRICE_SCALE                     # every job in, none waiting
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE) and math.isfinite(solver.best_objective_bound):
        upper = min(upper, float(solver.best_objective_bound) * unit / PRICE_SCALE)  # >= the best sum (pi - wait)
    chosen = np.zeros(0, dtype=np.int64)
    starts = np.zeros(0)
    gpus: tuple = ()
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        chosen = np.array([i for i in range(len(cands)) if solver.boolean_value(x[i])], dtype=np.int64)
        starts = np.array([solver.value(s[i]) * unit for i in chosen.tolist()])
        gpus = tuple(tuple(g for g, lg in enumerate(gl[i]) if solver.boolean_value(lg)) for i in chosen.tolist())
    return -upper, chosen, starts, gpus, code == cp_model.OPTIMAL


def _subset_bound(cluster: Cluster, jobs: JobSet, sub: np.ndarray, run: Schedule, groups: list[list[int]],
                  fits: np.ndarray, unit: float, deadline: float, pricing_limit: float,
                  max_iter: int) -> tuple[float, str, int]:
    """Lower bound on the total wait of the jobs ``sub`` alone (module docstring), its status, iterations; ``run``
    a schedule of ``jobs.take(sub)``, whose node schedules start the master."""
    n = len(sub)
    sub_jobs = jobs.take(sub)
    columns: list[tuple[int, np.ndarray, float]] = []                 # (type, local jobs, cost seconds)
    type_of_node = np.empty(cluster.n_nodes, dtype=np.int64)
    for t, g in enumerate(groups):
        type_of_node[g] = t
    for node in np.unique(run.node).tolist():
        on = np.flatnonzero(run.node == node)
        columns.append((int(type_of_node[node]), on, float((run.start_s[on] - sub_jobs.submit_s[on]).sum())))
    for i, j in enumerate(sub.tolist()):
        t = int(np.flatnonzero(fits[j])[0])
        columns.append((t, np.array([i]), 0.0))
    n_types = len(groups)
    h = build_highs(rows_lp(np.concatenate([np.ones(n), np.full(n_types, -np.inf)]),
                            np.concatenate([np.ones(n), [float(len(g)) for g in groups]])))

    def add(t: int, on: np.ndarray, cost: float) -> None:
        idx = np.concatenate([on, [n + t]])
        add_columns(h, [cost], sp.csc_matrix((np.ones(len(idx)), (idx, np.zeros(len(idx), dtype=np.int64))),
                                             shape=(n + n_types, 1)))

    for t, on, cost in columns:
        add(t, on, cost)
    best, status, it = 0.0, "iteration_limit", 0
    for it in range(1, max_iter + 1):                                # noqa: B007 (it is returned)
        if (res := run_until(h, deadline, duals=True)).status != "optimal":
            status = res.status
            break
        master, dual = res.objective, res.row_duals
        pi, sigma = dual[:n], np.minimum(dual[n:], 0.0)
        bound, added, proven = float(pi.sum()), False, True
        for t, group in enumerate(groups):
            cands = np.flatnonzero(fits[sub, t] & (pi > 0))
            if not len(cands):
                continue
            left = deadline - time.perf_counter()
            lower, chosen, starts, _, ok = price_node(cluster, group[0], jobs, sub[cands], pi[cands], unit,
                                                      min(pricing_limit, max(left, 0.0)))
            proven &= ok
            bound += len(group) * min(0.0, lower)
            if len(chosen):
                on = cands[chosen]
                cost = float((starts - jobs.submit_s[sub[on]]).sum())
                if cost - float(pi[on].sum()) - sigma[t] < -TOLERANCE:
                    add(t, on, cost)
                    added = True
        best = max(best, bound)
        if proven and (not added or master - best <= TOLERANCE * max(1.0, abs(master))):
            status = "optimal"
            break
        if not added:                                                # pricing stopped early and found nothing
            status = "time_limit"
            break
    return best, status, it


def nodedecomp_bound(cluster: Cluster, jobs: JobSet, subsets: list[np.ndarray] | None = None,
                     subset_size: int = 40, time_limit: float = 60.0, pricing_limit: float = 10.0,
                     max_iter: int = 200) -> BoundRecord:
    """The node-schedule decomposition bound (module docstring) on the mean wait of all admitted jobs.

    Parameters
    ----------
    subsets : disjoint index arrays of admitted jobs (default :func:`window_subsets` of ``subset_size``); jobs in
        no subset add 0 (a valid bound on their wait).
    time_limit : wall seconds for everything, shared among the subsets still to do.
    pricing_limit : CP-SAT seconds per pricing problem. max_iter : column generation rounds per subset.

    Returns
    -------
    BoundRecord
        ``info``: ``subsets``, ``iterations`` (column generation rounds, summed), ``ceiling_wait_s`` (the sum of
        the subsets' ceilings over the admitted jobs, seconds: the most this bound can reach on these subsets).
    """
    wall0, cpu0 = time.perf_counter(), time.process_time()
    admitted = ~rejected_jobs(cluster, jobs)
    rows = np.flatnonzero(admitted)
    if not len(rows):
        return BoundRecord("nodedecomp", math.nan, math.nan, "optimal", "all", 0.0, 0.0, 0)
    if not np.isfinite(jobs.duration_s[rows]).all():
        raise ValueError("a job never finishes (duration inf): no schedule has a finite mean wait")
    subsets = window_subsets(jobs, rows, subset_size) if subsets is None else [np.asarray(s) for s in subsets]
    flat = np.concatenate(subsets) if subsets else np.zeros(0, dtype=np.int64)
    if len(np.unique(flat)) != len(flat) or not admitted[flat].all():
        raise ValueError("subsets must be disjoint sets of admitted jobs")
    unit = time_unit(np.concatenate([jobs.submit_s[rows], jobs.duration_s[rows]]))
    try:                                                            # pricing counts 1 / PRICE_SCALE of a unit
        check_range(jobs.submit_s[rows], jobs.duration_s[rows], unit / PRICE_SCALE)
    except RangeError as exc:                                       # no pricing model: the trivial bound
        return BoundRecord("nodedecomp", 0.0, float(jobs.duration_s[rows].mean()), "error", "all",
                           time.perf_counter() - wall0, time.process_time() - cpu0, len(rows), {"reason": str(exc)})
    groups = node_types(cluster)
    empty = ClusterState(cluster, jobs.tasks)
    firsts = [g[0] for g in groups]
    fits = np.zeros((len(jobs), len(groups)), dtype=bool)
    for j in rows.tolist():
        fits[j] = empty.feasible_nodes(jobs.tasks[j])[firsts]
    ceilings, runs = subset_ceilings(cluster, jobs, subsets)
    total, statuses, iters = 0.0, [], 0
    for i, sub in enumerate(subsets):
        if ceilings[i] <= 0:                                         # a run waits 0: OPT(J_i) = 0, proven
            statuses.append("optimal")
            continue
        share = (wall0 + time_limit - time.perf_counter()) / (len(subsets) - i)
        value, status, it = _subset_bound(cluster, jobs, sub, runs[i], groups, fits, unit,
                                          time.perf_counter() + share, pricing_limit, max_iter)
        value = max(0.0, value - SAFETY * max(1.0, abs(value)))
        if value > ceilings[i] * (1 + TOLERANCE) + TOLERANCE:
            raise AssertionError(f"subset {i}: bound {value} above the total wait {ceilings[i]} of a validated run")
        total += value
        statuses.append(status)
        iters += it
    status = next((s for s in ("error", "time_limit", "iteration_limit") if s in statuses), "optimal")
    wait = total / len(rows)
    return BoundRecord("nodedecomp", wait, wait + float(jobs.duration_s[rows].mean()), status, "all",
                       time.perf_counter() - wall0, time.process_time() - cpu0, len(rows),
                       {"subsets": len(subsets), "iterations": iters,
                        "ceiling_wait_s": float(ceilings.sum()) / len(rows)})
