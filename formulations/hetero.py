"""Gavel's scheduling policies as linear programs over the allocation matrix X (jobs x GPU types).

Every policy here chooses ``X[i, j]``, the fraction of time job ``i`` runs on GPU type ``j``, subject to Gavel's
base constraints (``policies/policy.py``, ``Policy.get_base_constraints``): ``X >= 0``, ``sum_j X[i, j] <= 1``
per job, ``sum_i s_i X[i, j] <= G_j`` per type (``s_i`` the job's scale factor in GPUs, ``G_j`` the type's
GPUs). Each reduces to one or more LPs of the same form, *max-min of linear throughputs*::

    max t   s.t.   sum_j c[i, j] X[i, j] >= t  for every job i,   base constraints,

solved with HiGHS through the project's backends (:func:`formulations.backends.solve_model`, status checked),
and the X returned is checked feasible (:func:`fgdopt.hetero.allocation.check_allocation`). Gavel solves them
with cvxpy / ECOS; what each one follows (``scheduler/policies/*.py`` at commit ``c4fa4009``):

* ``las-aware`` (``max_min_fairness.py``, ``MaxMinFairnessPolicyWithPerf``): ``c[i, j] = T[i, j] s_i / (w_i P_i)``,
  ``T`` the isolated throughputs (steps/s), ``w_i`` the priority weight, ``P_i = sum_j T[i, j] G_j / G`` the
  job's throughput under an equal share of every type (``proportional.py``, ``ProportionalPolicy``;
  ``G = sum_j G_j``). Objective: the smallest normalized throughput.
* ``las`` (``MaxMinFairnessPolicy``): the same with every throughput set to 1.
* ``ftf-aware`` (``finish_time_fairness.py``, ``FinishTimeFairnessPolicyWithPerf``): minimize the largest
  finish-time ratio (Themis' rho) ``rho_i = (e_i + R_i / thr_i(X)) / (a_i + R_i / I_i)``, ``thr_i(X) =
  sum_j T[i, j] X[i, j]``, ``e_i`` seconds since the job arrived, ``R_i`` its remaining steps, ``a_i`` the
  time it would have taken so far alone (Gavel's ``_cumulative_isolated_time``), ``I_i`` its throughput under
  an isolated 1/n share of the cluster (``isolated.py``, ``IsolatedPolicy``: ``G_j / (n s_i)`` of each type,
  scaled down to a total of at most 1). Gavel hands ECOS the convex form ``inv_pos``; here it is a generalized
  fractional program solved by a Dinkelbach-type iteration of LPs: at rho, maximize ``theta`` with
  ``thr_i(X) >= theta R_i / (rho D_i - e_i)`` (``D_i`` the denominator); the new X's largest rho is the next
  rho, and ``rho / theta`` is a certified lower bound (any X has a job with ``thr_i <= theta R_i / (rho D_i -
  e_i)``, whose rho is then at least ``rho / theta``). It stops when the gap is below ``gap``.
* ``ftf`` (``FinishTimeFairnessPolicy``): the same with every type's throughput set to the job's V100 throughput.
* ``makespan-aware`` (``min_total_duration.py``, ``MinTotalDurationPolicyWithPerf``): the smallest M such that
  every job can finish its remaining steps within M, ``thr_i(X) >= R_i / M``. Gavel bisects on M (to 5%);
  with ``z = 1 / M`` it is one LP, ``c[i, j] = T[i, j] / R_i``. For a static batch (every job present at time
  0) its M is a lower bound on the makespan of any schedule: averaging any schedule's use of the types over
  ``[0, makespan]`` gives a feasible X that finishes every job by then.
* ``makespan`` (``MinTotalDurationPolicy``): the same with every type's throughput set to the V100 throughput.

**Agnostic policies and Gavel's choice among optimal X.** In ``las``, ``ftf`` and ``makespan`` every GPU type has
the same throughput, so the LP only sees each job's total ``y_i = sum_j X[i, j]`` and the pooled capacity ``G``
(any y with ``sum_i s_i y_i <= G`` is realized by ``X[i, j] = y_i G_j / G``, and every X gives such a y): many X
are optimal and a vertex solver (HiGHS) picks an arbitrary one, while Gavel's answer is ECOS's interior
solution, an equal split over the GPU types. fgdopt reproduces that choice explicitly: it solves the pooled LP
(one column, capacity G) and splits each job's total over the types in proportion to their GPUs, ``X[i, j] =
y_i G_j / G`` — the equal split on Gavel's 36:36:36 cluster (on unequal clusters the equal split can be
infeasible, the proportional one never is). With one scale factor the ``las`` totals are unique, the water-filling
``y_i = min(1, lambda w_i / s_i)``, lambda the largest level the pooled capacity allows (every job at the common fair
level, capped at its whole time), which attains the LP's optimum (a test checks it against the LP), so no LP is
solved. When scale factors differ (Gavel's continuous-multiple trace) the totals are degenerate too: with fewer jobs
than GPUs every 1-GPU job gets its whole time and the multi-GPU jobs share what is left in any way that leaves each
at least ``1 / s_i``. There, with ``central``, the totals are the analytic center of the optimal face
(:func:`central_totals`, no solve), the point an interior point method's central path ends at; ECOS's totals are
within 0.03 of it (an 8-GPU job with 1-GPU jobs beside it on an empty cluster: 0.80 of its time, not 1). On that
trace at 3 jobs/hour agnostic ``las`` is then +4.5% from Gavel's JCT; the water-filling totals (every multi-GPU job
at 1 there) gave +26%, and HiGHS' interior point method on the LP +6.9%: its X there is a vertex (every job on one
type, at 1), not a point inside the face.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from fgdopt.hetero.allocation import Allocation, allocation_violation, check_allocation, isolated_share
from fgdopt.hetero.allox import allox_allocator
from fgdopt.hetero.jobs import HeteroJobs
from fgdopt.hetero.throughputs import GPU_TYPES, ThroughputTable
from fgdopt.timeline.jobs import JobSet
from formulations.backends import solve_lp_arrays, solve_model
from formulations.linear import INF, LinearModel

POLICIES = ("las", "las-aware", "ftf", "ftf-aware", "makespan", "makespan-aware")
ALLOX = "allox"
"""AlloX's min-cost matching (:mod:`fgdopt.hetero.allox`): a round policy of Gavel's loop, but no linear program."""
ROUND_POLICIES = (*POLICIES, ALLOX)
"""The policies :func:`round_allocator` gives an X for, round after round."""
AWARE_POLICIES = (*(p for p in POLICIES if p.endswith("-aware")), ALLOX)
"""The heterogeneity-aware ones (Gavel's ``*_Perf`` names): Gavel's loop visits the types in a fixed order for
them and shuffles it every round for the others."""
GAVEL_NAMES = {"las": "max_min_fairness", "las-aware": "max_min_fairness_perf",
               "ftf": "finish_time_fairness", "ftf-aware": "finish_time_fairness_perf",
               "makespan": "min_total_duration", "makespan-aware": "min_total_duration_perf", ALLOX: "allox"}
"""Each policy's name in Gavel (``scheduler/utils.py``, ``get_policy``)."""
REFERENCE_GPU = "v100"
"""The GPU type whose throughput Gavel's agnostic ``ftf`` and ``makespan`` assume on every type."""


def proportional_throughput(throughputs: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Gavel's ``ProportionalPolicy``: each job's throughput (steps/s) with ``G_j / G`` of its time on type j."""
    cap = np.asarray(capacity, dtype=np.float64)
    return np.asarray(throughputs, dtype=np.float64) @ (cap / cap.sum())


def water_fill(scale_factor: np.ndarray, weights: np.ndarray, total_gpus: float) -> np.ndarray:
    """Per-job time totals ``y_i = min(1, lam w_i / s_i)`` with ``sum_i s_i y_i <= total_gpus``, ``lam`` largest.

    Every job gets the same normalized share ``s_i y_i / w_i = lam`` unless its whole time is less (then 1).
    """
    s = np.asarray(scale_factor, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if s.sum() <= total_gpus:
        return np.ones(len(s))
    order = np.argsort(s / w, kind="stable")               # jobs saturate (y = 1) in this order as lam grows
    sat_gpus = np.concatenate(([0.0], np.cumsum(s[order])))     # GPUs of the first k saturated jobs
    rest_w = w[order][::-1].cumsum()[::-1]                      # weight of the jobs k.. not saturated
    lam = (total_gpus - sat_gpus[:-1]) / rest_w                 # the level if exactly the first k saturate
    k = int(np.flatnonzero(lam <= (s / w)[order])[0])           # first k whose level saturates nobody else
    return np.minimum(1.0, lam[k] * w / s)


def central_totals(scale_factor: np.ndarray, weights: np.ndarray, total_gpus: float, k: int,
                   tol: float = 1e-12, max_iter: int = 100) -> np.ndarray:
    """Per-job time totals ``y`` at the analytic center of the optimal face of the agnostic ``las`` LP, split over
    ``k`` GPU types of ``total_gpus`` GPUs in all: the point an interior point method's central path ends at (Gavel's
    ECOS ends near it: within 0.03 of a total on the continuous-multiple trace's first recomputations).

    The LP (every throughput 1): ``max t`` s.t. ``s_i y_i / w_i >= t``, ``y_i <= 1``, ``sum_i s_i y_i <= total_gpus``
    (``X[i, j] = y_i G_j / G``, so ``X >= 0`` is ``y >= 0``). Its optimum is ``t* = min(min_i s_i / w_i, G / sum_i
    w_i)``; where the capacity binds, or every job has the smallest ``s_i / w_i``, the totals are unique (the
    water-filling, :func:`water_fill`); otherwise the jobs of the smallest ``s_i / w_i`` have ``y_i = 1`` and the
    others range over ``[t* w_i / s_i, 1]``, and ``y`` maximizes the barrier of the face's slacks, ``sum_i (k log y_i
    + log(1 - y_i) + log(s_i y_i / w_i - t*)) + k log(G - sum_i s_i y_i)`` over the free jobs (the ``k`` terms: the
    ``k`` slacks ``X[i, j] >= 0`` and the ``k`` capacity rows), by Newton's method (the Hessian is diagonal plus rank
    one). Returns float64 (n,).
    """
    s = np.asarray(scale_factor, dtype=np.float64)
    a = s / np.asarray(weights, dtype=np.float64)           # each job's objective coefficient
    fixed = a == a.min()
    if fixed.all() or a.min() * (s / a).sum() >= total_gpus:     # unique totals
        return water_fill(s, np.asarray(weights, dtype=np.float64), total_gpus)
    t = float(a.min())
    y = np.ones(len(s))
    sf, af = s[~fixed], a[~fixed]
    lo = t / af                                             # each free job's least total
    room = total_gpus - float(s[fixed].sum())               # GPUs left by the fixed jobs
    theta = min(0.5, 0.5 * (room - float((sf * lo).sum())) / float((sf * (1.0 - lo)).sum()))
    z = lo + theta * (1.0 - lo)                             # strictly inside the face

    def barrier(z: np.ndarray) -> float:
        return float((k * np.log(z) + np.log(1.0 - z) + np.log(af * z - t)).sum() + k * np.log(room - sf @ z))

    for _ in range(max_iter):
        slack = room - float(sf @ z)
        grad = k / z - 1.0 / (1.0 - z) + af / (af * z - t) - k * sf / slack
        diag = -k / z ** 2 - 1.0 / (1.0 - z) ** 2 - (af / (af * z - t)) ** 2
        c = k / slack ** 2                                  # Hessian = diag(diag) - c sf sf^T
        dinv_g, dinv_s = grad / diag, sf / diag
        step = -(dinv_g + c * dinv_s * float(sf @ dinv_g) / (1.0 - c * float(sf @ dinv_s)))
        if float(grad @ step) / 2 <= tol:                   # Newton decrement: at the center
            break
        size, f0 = 1.0, barrier(z)
        while True:                                         # backtrack: stay inside, ascend
            new = z + size * step
            if ((new > lo) & (new < 1.0)).all() and float(sf @ new) < room and barrier(new) >= f0:
                break
            size /= 2
            if size < 1e-12:
                new = z
                break
        if new is z:
            break
        z = new
    y[~fixed] = z
    return y


def _max_min(c: np.ndarray, scale: np.ndarray, capacity: np.ndarray, time_limit: float,
             threads: int | None, central: bool = False) -> tuple[str, np.ndarray | None, float | None]:
    """Solve ``max t s.t. sum_j c[i, j] X[i, j] >= t``, base constraints; (status, X clipped to [0, 1], t).
    ``central``: HiGHS' interior point method without crossover, which ends inside the optimal face (as Gavel's
    ECOS does) rather than at a vertex; where it ends uncertified (HiGHS status unknown, seen on tiny LPs), the
    simplex method's vertex instead.

    No warm start between recomputations, deliberately: the interior point method (HiGHS' IPX) starts from its own
    central initial point whatever basis it is given, and a simplex method warm-started from the previous basis ends
    at a vertex of the optimal face, which is not the point Gavel's ECOS (and this IPM) returns, so X, and the JCTs,
    would change (a vertex moved JCT by about 1% at 3 jobs/h). Building the LP straight into HiGHS from arrays
    (:func:`_max_min_rows`, :func:`~formulations.backends.solve_lp_arrays`: the same LP bit for bit as through
    PuLP, tested) cuts its cost instead."""
    n, k = c.shape
    kappa = 1.0 / c.max()                                   # one common scale: the optimum X is unchanged
    ck = c * kappa
    raw = None
    if central:
        raw = solve_lp_arrays(*_max_min_rows(ck, scale, capacity), time_limit=time_limit, threads=threads,
                              options={"solver": "ipm", "run_crossover": "off"})
    if raw is None or raw.status != "optimal":              # IPM without crossover may end uncertified: a vertex
        model = LinearModel("hetero-maxmin")
        xs = model.add_vars(n * k, ub=1.0, integer=False).reshape(n, k)
        t = int(model.add_vars(1, ub=INF, integer=False, obj=1.0)[0])
        for i in range(n):
            model.add_row(xs[i], 1.0, hi=1.0)
            model.add_row(np.append(xs[i], t), np.append(ck[i], -1.0), lo=0.0)
        for j in range(k):
            model.add_row(xs[:, j], scale, hi=float(capacity[j]))
        raw = solve_model(model, "highs", time_limit=time_limit, threads=threads)
    if raw.values is None:
        return raw.status, None, None
    return raw.status, np.clip(raw.values[:n * k].reshape(n, k), 0.0, 1.0), float(raw.values[n * k]) / kappa


def _max_min_rows(ck: np.ndarray, scale: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, ...]:
    """The max-min LP of :func:`_max_min` (columns ``X`` row by row, then ``t``; rows per job ``sum_j X[i, j] <= 1``
    then ``sum_j ck[i, j] X[i, j] - t >= 0``, then per type ``sum_i s_i X[i, j] <= capacity[j]``; zero coefficients
    left out) as :func:`~formulations.backends.solve_lp_arrays` takes it: the same LP the ``LinearModel`` of the
    fallback builds, row for row and coefficient for coefficient, without a Python call per row."""
    n, k = ck.shape
    cols = n * k + 1
    obj, lb, ub = np.zeros(cols), np.zeros(cols), np.ones(cols)
    obj[-1], ub[-1] = 1.0, INF
    x = np.arange(n * k).reshape(n, k)
    nz = ck != 0
    keep = np.hstack([np.ones((n, k), dtype=bool), nz, np.ones((n, 1), dtype=bool)])
    idx_jobs = np.hstack([x, x, np.full((n, 1), n * k)])[keep]
    val_jobs = np.hstack([np.ones((n, k)), ck, np.full((n, 1), -1.0)])[keep]
    used = np.flatnonzero(scale != 0)
    idx_types = x[used].T.ravel()
    val_types = np.tile(scale[used], k)
    lengths = np.concatenate([np.column_stack([np.full(n, k), nz.sum(axis=1) + 1]).ravel(), np.full(k, len(used))])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    row_lo = np.concatenate([np.tile([-INF, 0.0], n), np.full(k, -INF)])
    row_hi = np.concatenate([np.tile([1.0, INF], n), np.asarray(capacity, dtype=np.float64)])
    return (obj, lb, ub, row_lo, row_hi, starts, np.concatenate([idx_jobs, idx_types]),
            np.concatenate([val_jobs, val_types]))


def _ftf(T: np.ndarray, scale: np.ndarray, capacity: np.ndarray, remaining: np.ndarray, elapsed: np.ndarray,
         isolated_elapsed: np.ndarray, deadline: float, threads: int | None, gap: float,
         max_iter: int, central: bool) -> tuple[str, np.ndarray | None, float | None, float | None, dict]:
    """Minimize the largest finish-time ratio (module docstring); (status, X, rho, lower bound, info)."""
    denom = isolated_elapsed + remaining / (T * isolated_share(scale, capacity)).sum(axis=1)

    def rho(x: np.ndarray) -> float:
        return float(((elapsed + remaining / (T * x).sum(axis=1)) / denom).max())

    best_x = isolated_share(scale, capacity)                # feasible, every job at a positive throughput
    best, lower = rho(best_x), 0.0
    status, iterations = "optimal", 0
    for _ in range(max_iter):
        iterations += 1
        need = remaining / (best * denom - elapsed)         # steps/s each job needs for rho = best
        status, x, theta = _max_min(T / need[:, None], scale, capacity, deadline - time.perf_counter(), threads,
                                    central)
        if x is None or status != "optimal":
            break
        lower = max(lower, best / theta)
        if (value := rho(x)) < best:
            best, best_x = value, x
        if best - lower <= gap * best:
            break
    else:
        status = "time_limit"                               # iterations exhausted before the gap closed
    return status, best_x, best, lower, {"iterations": iterations}


def solve_allocation(policy: str, throughputs: np.ndarray, scale_factor: np.ndarray, capacity: np.ndarray, *,
                     gpu_types: tuple[str, ...] | None = None, weights: np.ndarray | None = None,
                     steps_remaining: np.ndarray | None = None, elapsed_s: np.ndarray | None = None,
                     isolated_elapsed_s: np.ndarray | None = None, time_limit: float = 60.0,
                     threads: int | None = 1, gap: float = 1e-6, max_iter: int = 100,
                     central: bool = False) -> Allocation:
    """The allocation X that ``policy`` chooses for the jobs present (module docstring for each policy).

    Parameters
    ----------
    policy : one of :data:`POLICIES`.
    throughputs : float (n, k), each job's isolated throughput (steps/s, at its scale factor) on each GPU type.
    scale_factor : int (n,), GPUs per job.
    capacity : (k,), GPUs of each type.
    gpu_types : the types' names (default :data:`~fgdopt.hetero.throughputs.GPU_TYPES` when k = 3); the agnostic
        ``ftf`` and ``makespan`` need :data:`REFERENCE_GPU` among them.
    weights : (n,) priority weights (``las*`` only, Gavel's ``priority_weights``; default 1).
    steps_remaining : (n,) steps left per job (``ftf*``, ``makespan*``; required there).
    elapsed_s : (n,) seconds since each job arrived (``ftf*``; default 0).
    isolated_elapsed_s : (n,) seconds the work done so far would have taken under the isolated share (``ftf*``,
        Gavel's ``_cumulative_isolated_time``; default 0).
    time_limit : wall seconds for the whole policy.
    threads : HiGHS threads (the first HiGHS run of a process fixes it, see :func:`formulations.highs.highs_threads`).
    gap : relative gap at which the ``ftf*`` iteration stops.
    max_iter : most LPs of the ``ftf*`` iteration.
    central : solve the aware policies' LPs by the interior point method without crossover: X is then a point
        inside the optimal face, as Gavel's ECOS returns, instead of a vertex (many X are optimal for the jobs
        above the bottleneck, and which one is chosen changes what they get).

    Returns
    -------
    An :class:`~fgdopt.hetero.allocation.Allocation` whose X passed
    :func:`~fgdopt.hetero.allocation.check_allocation` (``info["violation"]`` holds the largest slack used).

    Raises
    ------
    ValueError : an unknown policy, inconsistent shapes, a job with no positive throughput on any type with
        GPUs, missing ``steps_remaining``, or a solver X that is not feasible.
    """
    t0 = time.perf_counter()
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    T = np.asarray(throughputs, dtype=np.float64)
    scale = np.asarray(scale_factor, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.float64)
    n, k = T.shape
    gpu_types = tuple(gpu_types) if gpu_types is not None else (GPU_TYPES if k == len(GPU_TYPES) else
                                                                tuple(f"type{j}" for j in range(k)))
    if len(scale) != n or len(cap) != k or len(gpu_types) != k:
        raise ValueError(f"throughputs {T.shape}, scale_factor {scale.shape}, capacity {cap.shape} and "
                         f"{len(gpu_types)} GPU type names do not match")
    if n == 0:
        return Allocation(policy, np.zeros((0, k)), gpu_types, "optimal", None, None, time.perf_counter() - t0)
    if (bad := np.flatnonzero(~((T > 0) & (cap > 0)).any(axis=1))).size:
        raise ValueError(f"job {int(bad[0])} has no positive throughput on any GPU type with GPUs")
    kind, aware = policy.split("-")[0], policy.endswith("-aware")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if kind != "las" and steps_remaining is None:
        raise ValueError(f"policy {policy!r} needs steps_remaining")
    spread = kind == "las" and not aware and central and np.unique(scale).size > 1   # degenerate totals (docstring)
    if not aware:                                         # pooled: one column, capacity G (module docstring)
        if kind == "las":
            T = np.ones((n, 1))
        elif REFERENCE_GPU in gpu_types:
            T = T[:, [gpu_types.index(REFERENCE_GPU)]]
        else:
            raise ValueError(f"policy {policy!r} assumes the {REFERENCE_GPU} throughput on every type; "
                             f"the GPU types are {', '.join(gpu_types)}")
        if not (T > 0).all():
            raise ValueError(f"job {int(np.flatnonzero(T[:, 0] <= 0)[0])} has no {REFERENCE_GPU} throughput")
    pool = cap if aware else np.array([cap.sum()])
    deadline = t0 + time_limit
    info: dict = {"n_jobs": n}
    if kind == "ftf":
        zeros = np.zeros(n)
        status, x, objective, bound, extra = _ftf(
            T, scale, pool, np.asarray(steps_remaining, dtype=np.float64),
            zeros if elapsed_s is None else np.asarray(elapsed_s, dtype=np.float64),
            zeros if isolated_elapsed_s is None else np.asarray(isolated_elapsed_s, dtype=np.float64),
            deadline, threads, gap, max_iter, central)
        info |= extra
    else:
        if kind == "las" and not aware:                     # the pooled LP's optimum in closed form, no solve
            totals = central_totals(scale, w, float(pool[0]), k) if spread else water_fill(scale, w, float(pool[0]))
            status, x = "optimal", totals[:, None]
            t = float((scale * x[:, 0] / w).min())
        else:
            if kind == "las":
                c = T * (scale / (w * proportional_throughput(T, pool)))[:, None]
            else:
                c = T / np.asarray(steps_remaining, dtype=np.float64)[:, None]
            status, x, t = _max_min(c, scale, pool, deadline - time.perf_counter(), threads, central)
        objective = bound = t
        if kind == "makespan" and t is not None:
            objective = bound = 1.0 / t if t > 0 else INF
    if x is not None:
        if not aware:
            x = x * (cap / cap.sum())[None, :]               # Gavel's equal split, in proportion to the GPUs
        check_allocation(x, scale, cap)
        info["violation"] = max(allocation_violation(x, scale, cap).values())
    info["gavel"] = GAVEL_NAMES[policy]
    return Allocation(policy, x, gpu_types, status, objective, bound, time.perf_counter() - t0, info)


def allocate(policy: str, table: ThroughputTable, jobs: HeteroJobs, cluster: Mapping[str, int], *,
             steps_remaining: np.ndarray | None = None, **options) -> Allocation:
    """:func:`solve_allocation` for ``jobs`` on ``cluster`` (GPU type name -> GPUs) with ``table``'s throughputs.

    ``steps_remaining`` defaults to the jobs' total steps (nothing done yet); the priority weights are the jobs'
    own; ``options`` are passed on (``elapsed_s``, ``isolated_elapsed_s``, ``time_limit``, ...).

    Examples
    --------
    >>> from fgdopt.hetero import gavel_jobs, load_throughputs               # doctest: +SKIP
    >>> table = load_throughputs()                                          # doctest: +SKIP
    >>> jobs = gavel_jobs(table, 50, rate_per_hour=float("inf"))            # doctest: +SKIP
    >>> allocate("makespan-aware", table, jobs, {"v100": 36, "p100": 36, "k80": 36}).objective  # doctest: +SKIP
    """
    gpu_types = tuple(cluster)
    return solve_allocation(policy, jobs.throughputs(table, gpu_types), jobs.scale_factor,
                            np.array([cluster[g] for g in gpu_types], dtype=np.float64), gpu_types=gpu_types,
                            weights=jobs.priority_weight,
                            steps_remaining=jobs.total_steps if steps_remaining is None else steps_remaining,
                            **options)


def round_allocator(policy: str, speed: Mapping[str, np.ndarray], jobs: JobSet, cluster: Mapping[str, int], *,
                    weights: np.ndarray | None = None, time_limit: float = 60.0, threads: int | None = 1,
                    gap: float = 1e-3, central: bool = True):
    """An ``allocate(present, view) -> X`` for :class:`fgdopt.hetero.rounds.Gavel`: ``policy``'s X for the
    jobs present, from the engine's view of them. For :data:`ALLOX` it is
    :func:`fgdopt.hetero.allox.allox_allocator`, which runs with :class:`fgdopt.hetero.allox.AlloXGavel` (its X
    depends on its previous one); the options below are the linear programs'.

    Units are the engine's (:meth:`fgdopt.hetero.HeteroJobs.to_jobset`): a job's throughput on a type is its
    ``speed`` there (seconds of work per second, work counted in seconds on the V100) and its remaining steps are
    its remaining seconds of work, ``duration_s - view.work_s``; every policy here is invariant to a job's unit of
    work, so X is Gavel's. ``elapsed_s`` is the time since submission; ``isolated_elapsed_s`` (``ftf*``) is the
    work done over the job's throughput under the isolated share of the jobs present now (Gavel accumulates it
    round by round under the shares of the time; an approximation).

    Parameters
    ----------
    policy : one of :data:`ROUND_POLICIES`.
    speed : ``{gpu type: float (n,)}``, as ``to_jobset`` returns it. jobs : the run's jobs.
    cluster : GPUs per type; its order is X's column order (the scheduler's ``gpu_types``).
    weights : priority weights (default 1). time_limit, threads : per solve.
    gap : relative gap at which the ``ftf*`` iteration stops (its X is then within ``gap`` of the optimal rho).
    central : X inside the optimal face, as Gavel's ECOS returns it (:func:`solve_allocation`; default True).

    Raises
    ------
    ValueError : an unknown policy (at once, one line).
    RuntimeError : a solve that found no X, or a linear program that did not end ``optimal``. An ``ftf*``
        iteration that ran out of iterations before its gap closed keeps its best X, which is feasible; the
        callable counts those in its ``inexact`` attribute.
    """
    if policy == ALLOX:
        return allox_allocator(speed, jobs, cluster)
    if policy not in ROUND_POLICIES:
        raise ValueError(f"unknown round policy {policy!r}; choose one of {', '.join(ROUND_POLICIES)}")
    gpu_types = tuple(cluster)
    thr = np.column_stack([np.asarray(speed[g], dtype=np.float64) for g in gpu_types])
    cap = np.array([cluster[g] for g in gpu_types], dtype=np.float64)
    scale = jobs.tasks.num_gpu
    w = np.ones(len(scale)) if weights is None else np.asarray(weights, dtype=np.float64)

    def allocate(present: np.ndarray, view) -> np.ndarray:
        done = view.work_of(present)
        remaining = np.maximum(jobs.duration_s[present] - done, 1e-9)
        history = {}
        if kind == "ftf":                                   # the only policies that read the jobs' history
            iso = (thr[present] * isolated_share(scale[present], cap)).sum(axis=1)
            history = {"elapsed_s": view.now - jobs.submit_s[present], "isolated_elapsed_s": done / iso}
        a = solve_allocation(policy, thr[present], scale[present], cap, gpu_types=gpu_types, weights=w[present],
                             steps_remaining=remaining, time_limit=time_limit, threads=threads, gap=gap,
                             central=central, **history)
        if a.status != "optimal" and not (a.x is not None and kind == "ftf" and a.info.get("iterations")):
            raise RuntimeError(f"{policy}: allocation of {len(present)} jobs at {view.now} s ended {a.status}")
        allocate.inexact += a.status != "optimal"
        return a.x

    kind = policy.split("-")[0]
    allocate.inexact = 0
    return allocate
