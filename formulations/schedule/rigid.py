"""A lower bound on the mean wait from rigid starts against pooled capacities on a fine grid, by Lagrangian ascent.

Why. The pooled LP (:mod:`formulations.schedule.bound`) lets a job run at any rate (a 5-GPU job may hold 2.5 GPUs
for twice as long), and both it and the configuration LP (:mod:`formulations.schedule.configlp`) work on a coarse
grid (minutes wide at full scale), within which a moment above capacity is paid for by a moment below. Here every
job keeps its start (one number, the job runs ``[S_j, S_j + p_j)`` at full demand) and the grid is fine (seconds
where the zero-wait profile is busy), at the price of seeing the GPUs pooled, through dual-feasible functions.

Pooled resources. Each resource ``q`` has a per-job demand ``a_jq`` and a capacity ``c_q`` that every schedule keeps
at every moment (the running jobs' demands summed): milli-GPU (capacity the cluster's), CPU milli-cores, memory MiB,
and for every ``k`` of ``dff`` the GPUs counted by the dual-feasible function of Fekete and Schepers
``u_k(x) = x`` if ``(k + 1) x`` is an integer, else ``floor((k + 1) x) / k`` (``x`` a GPU's share in GPUs, a whole
GPU counts 1; a job's count is ``u_k(x)`` times its GPUs and its gang's workers; capacity: the cluster's GPUs).
Validity: on one GPU the shares add up to at most 1, hence (``u_k`` dual feasible: ``sum x_i <= 1`` implies
``sum u_k(x_i) <= 1``) their counts add up to at most 1; sum over GPUs. ``u_1`` counts every job above half a GPU
as a whole GPU (two such never share one), ``u_2`` counts a job in ``[1/3, 2/3)`` as half a GPU and one in
``[2/3, 1)`` as a whole one.

The relaxation. Cut ``[t0, T)`` (``t0`` the first submission, ``T`` past the last) into intervals ``I_k`` of lengths
``D_k`` (any cut: :func:`formulations.schedule.configlp.busy_edges`, most intervals where the zero-wait profile is
at or above a pooled capacity); with ``o_jk(S) = |[S, S + p_j) cap I_k| / D_k``, every schedule meets, for every
``q`` and ``k``, ``sum_j a_jq o_jk(S_j) <= c_q`` (the time average over ``I_k`` of a quantity that is at most ``c_q``
at every moment). Minimising the total wait ``sum_j (S_j - r_j)`` over starts ``S_j >= r_j`` subject to these rows
only is a relaxation of the schedule (nothing is required past ``T``).

The bound (valid at any multipliers). For any ``y >= 0`` (one per row, the rows scaled to capacity 1), Lagrangian
duality gives ``OPT >= L(y) = sum_j min_{S >= r_j} g_j(S) - sum_qk y_qk`` with ``g_j(S) = S - r_j + sum_qk y_qk
(a_jq / c_q) o_jk(S)``: for the optimal starts, each scaled row's left side minus 1 is at most 0. ``g_j`` is
continuous and piecewise linear in ``S``, with breakpoints where ``S`` or ``S + p_j`` meets an edge (no price past
``T``, where it grows with slope 1), so its minimum over ``S >= r_j`` is at ``r_j`` or a breakpoint; and since
``g_j(S) >= S - r_j``, no start later than ``r_j + g_j(r_j)`` beats ``r_j``: the candidates are finitely many and the
minimum is exact. ``L`` is evaluated in float64 and the best value found is lowered by
:data:`~formulations.schedule.bound.SAFETY` before it is reported; every schedule's total wait is at least it
(divide by the admitted jobs for the mean wait).

The ascent. ``L`` is concave; projected subgradient steps (a subgradient: per row, what the cheapest starts use
minus the capacity, 1) with Polyak's step towards a target above the best value so far, the target's margin halved
after :data:`PATIENCE` steps without a gain, and the direction deflected by the previous one (Camerini, Fratta and
Maffioli) to damp zig-zags. Status ``optimal`` when the cheapest starts keep every row and no row with a positive
price is slack (then ``L`` is the relaxation's optimum), else ``time_limit`` or ``iteration_limit`` (the steps ran
out, or the margin fell below :data:`MIN_MARGIN`); the value is valid in every case. By default only the rows of
resources whose zero-wait profile exceeds capacity are kept (leaving rows out is a further relaxation, so the bound
stays valid; ``optimal`` then speaks of the rows kept).

Measured (openb default, 20,000 stream jobs plus the background, seed 42, 1,024 intervals of which 3/4 on the busy
moments (the finest 7.6 s), a 600 s wall limit on a shared 2-core machine at load average 7-10, the rows of
milli-GPU and ``u_1``-``u_3``): load 1.0: 0 s, ``optimal`` at the first step (every pooled row holds at zero wait),
1.1 CPU s; load 1.1: 15.06 s, stalled (``iteration_limit``) after 401 steps, 92 CPU s (13.0 s after 31 steps,
15.0 s after about 250; without the stall test, 870 steps in 211 CPU s gave the same 15.06 s), against the
configuration LP's 14.93 s; load 1.2: 48.21 s after 118 steps and 110 CPU s (still rising),
against 47.96 s. 4,096 intervals (the finest 1.85 s) gave 14.99 s at load 1.1 after 144 steps, as 1,024 did after
as many: the grid is not what holds a pooled bound near 15 s there; the nodes are (the best run waits 71.9 s, free
re-packing 42.1 s).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from fgdopt.model import GPU_MILLI, Cluster
from fgdopt.timeline import JobSet
from formulations.schedule.bound import SAFETY
from formulations.schedule.configlp import busy_edges
from formulations.schedule.record import BoundRecord, counted_jobs

DFF = (1, 2, 3)
"""The ``k`` of the dual-feasible GPU counts pooled by default (module docstring)."""
INTERVALS = 1024
"""Grid intervals by default."""
BUSY_SHARE = 0.75
"""Share of the intervals spread over the busy moments by default (the rest evenly over ``[t0, T)``)."""
PATIENCE = 10
"""Steps without a gain after which the target's margin is halved."""
MIN_MARGIN = 1e-6
"""The ascent stops (status ``iteration_limit``) when the target's margin falls below this: it has stalled."""
LONG_BLOCK = 2048
"""Jobs running past the last edge priced at once (memory: this many rows of the grid's edges)."""
CANDIDATE_BLOCK = 2_000_000
"""Candidate starts evaluated at once (memory: a few arrays of this many float64 per resource)."""
SLACK_TOLERANCE = 1e-9
"""Scaled-row tolerance of the ``optimal`` test (module docstring)."""


def dff_count(gpu_milli: np.ndarray, k: int) -> np.ndarray:
    """``u_k`` of every share ``gpu_milli`` (milli-GPU per GPU, 0..1000) in GPUs (module docstring), exactly.

    Examples: ``u_1``: 500 -> 1/2 (``2 x`` is an integer), 501 -> 1, 499 -> 0; ``u_2``: 334 -> 1/2, 667 -> 1,
    1000 -> 1, 333 -> 0."""
    x = np.asarray(gpu_milli, dtype=np.int64)
    whole = ((k + 1) * x) % GPU_MILLI == 0
    return np.where(whole, x / GPU_MILLI, ((k + 1) * x // GPU_MILLI) / k)


def dff_is_feasible(k: int, shares: list[int]) -> bool:
    """Whether ``u_k`` of shares (milli-GPU) that fit one GPU add up to at most one GPU (exact arithmetic; for
    tests)."""
    if sum(shares) > GPU_MILLI:
        return True
    total = sum(Fraction(s, GPU_MILLI) if ((k + 1) * s) % GPU_MILLI == 0 else Fraction((k + 1) * s // GPU_MILLI, k)
                for s in shares)
    return total <= 1


def pooled_rows(cluster: Cluster, jobs: JobSet, rows: np.ndarray, dff: tuple[int, ...] = DFF
                ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The pooled resources of the counted jobs ``rows``: names, every job's demand (float64 (n, Q)), the
    capacities (float64 (Q,)) and the factor that makes each resource's demands and capacity whole numbers (int64
    (Q,): 1, or ``k (k + 1)`` for ``u_k``, whose values are multiples of ``1 / k`` or ``1 / (k + 1)``). Resources:
    milli-GPU, CPU milli-cores, memory MiB (all parts of a gang), then the ``u_k`` GPU counts in GPUs (module
    docstring); resources the cluster lacks (capacity 0) are left out (a job needing one is rejected)."""
    t = jobs.tasks
    parts = (t.workers * t.num_gpu)[rows].astype(np.float64)
    cols = {"gpu": (t.gpu_demand[rows], cluster.gpu_capacity_milli, 1),
            "cpu": ((t.cpu_milli * t.workers)[rows], cluster.cpu_milli.sum(), 1),
            "memory": ((t.memory_mib * t.workers)[rows], cluster.memory_mib.sum(), 1)}
    for k in dff:
        cols[f"gpu-u{k}"] = (parts * dff_count(t.gpu_milli[rows], k), cluster.gpu.sum(), k * (k + 1))
    names = [name for name, (_, cap, _) in cols.items() if float(cap) > 0]
    demand = np.column_stack([np.asarray(cols[m][0], dtype=np.float64) for m in names])
    return (names, demand, np.array([float(cols[m][1]) for m in names]),
            np.array([cols[m][2] for m in names], dtype=np.int64))


def pooled_demands(cluster: Cluster, jobs: JobSet, rows: np.ndarray, dff: tuple[int, ...] = DFF
                   ) -> tuple[list[str], np.ndarray]:
    """The pooled resources' names and every counted job's demand scaled to capacity 1 (float64 (n, Q)):
    :func:`pooled_rows` divided by the capacities."""
    names, demand, capacity, _ = pooled_rows(cluster, jobs, rows, dff)
    return names, demand / capacity


class _Prices:
    """Multipliers ``y`` (Q, K) of the scaled rows on the grid ``edges``: the price integral ``Phi_q(t)`` (no
    price before the first edge or past the last)."""

    def __init__(self, edges: np.ndarray, y: np.ndarray):
        self.edges, self.y = edges, y
        self.length = np.diff(edges)
        self.cum = np.concatenate([np.zeros((y.shape[0], 1)), np.cumsum(y, axis=1)], axis=1)

    def integral(self, t: np.ndarray) -> np.ndarray:
        """``Phi_q(t)`` (Q, len(t))."""
        e = self.edges
        tc = np.clip(t, e[0], e[-1])
        k = np.clip(np.searchsorted(e, tc, side="right") - 1, 0, len(e) - 2)
        return self.cum[:, k] + (tc - e[k]) / self.length[k] * self.y[:, k]


def cheapest_starts(r: np.ndarray, p: np.ndarray, a: np.ndarray, prices: _Prices) -> tuple[np.ndarray, np.ndarray]:
    """Every job's ``min_{S >= r_j} g_j(S)`` and a start reaching it (module docstring: ``r_j`` or a breakpoint
    before ``r_j + g_j(r_j)``). Units: seconds; ``a`` the scaled demands (n, Q).

    A job that runs past the last edge ``T`` from any start (``r_j + p_j >= T``) has ``g_j(S) = S - r_j +
    a_j (Phi(T) - Phi(S))``: its breakpoints are the edges, priced at once as a matrix product. The others' candidates
    are laid out job after job (the edges in the window, then the edges minus ``p_j``) and reduced per job."""
    e, cum = prices.edges, prices.cum
    at_r = np.einsum("jq,qj->j", a, prices.integral(r + p) - prices.integral(r))
    low, start = at_r.copy(), r.copy()
    long = np.flatnonzero((at_r > 0) & (r + p >= e[-1]))
    for b in range(0, len(long), LONG_BLOCK):
        js = long[b:b + LONG_BLOCK]
        cost = e[None, :] - r[js, None] + (a[js] @ cum[:, -1])[:, None] - a[js] @ cum
        cost[e[None, :] < r[js, None]] = np.inf                 # starts before the submission
        k = np.argmin(cost, axis=1)
        c = cost[np.arange(len(js)), k]
        better = c < low[js]
        low[js[better]], start[js[better]] = c[better], e[k[better]]
    busy = np.flatnonzero((at_r > 0) & (r + p < e[-1]))
    if not len(busy):
        return low, start
    rb, pb, hb = r[busy], p[busy], at_r[busy]
    lo1, hi1 = np.searchsorted(e, rb, side="right"), np.searchsorted(e, rb + hb, side="left")
    lo2, hi2 = np.searchsorted(e, rb + pb, side="right"), np.searchsorted(e, rb + pb + hb, side="left")
    n1, n2 = np.maximum(hi1 - lo1, 0), np.maximum(hi2 - lo2, 0)
    ends = np.cumsum(n1 + n2)
    first = 0
    while first < len(busy):                                   # blocks of jobs, at most CANDIDATE_BLOCK starts
        base = ends[first - 1] if first else 0
        last = max(int(np.searchsorted(ends, base + CANDIDATE_BLOCK, side="right")), first + 1)
        js = np.arange(first, last)
        first = last
        js = js[(n1[js] + n2[js]) > 0]
        if not len(js):
            continue
        m1, m2 = n1[js], n2[js]
        m = m1 + m2
        head = np.cumsum(m) - m                                # each job's first candidate
        owner = np.repeat(np.arange(len(js)), m)
        rank = np.arange(int(m.sum())) - head[owner]           # 0.. m - 1 within the job
        second = rank >= m1[owner]                             # an edge minus p_j
        k = np.where(second, lo2[js][owner] + rank - m1[owner], lo1[js][owner] + rank)
        jb = js[owner]
        s = np.where(second, e[k] - pb[jb], e[k])
        phi_at_edge = cum[:, k]                                # Phi at e_k: S (first kind) or S + p_j (second)
        other = prices.integral(np.where(second, s, s + pb[jb]))
        aq = a[busy[jb]].T
        diff = np.where(second[None, :], phi_at_edge - other, other - phi_at_edge)
        cost = s - rb[jb] + (aq * diff).sum(axis=0)
        best = np.minimum.reduceat(cost, head)
        where = np.flatnonzero(cost <= best[owner])
        pick = where[np.r_[True, owner[where][1:] != owner[where][:-1]]]
        j = busy[js]
        better = best < low[j]
        low[j[better]], start[j[better]] = best[better], s[pick][better]
    return low, start


def usage(starts: np.ndarray, p: np.ndarray, a: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``sum_j a_jq o_jk(S_j)`` (Q, K): what jobs started at ``starts`` use of every scaled row."""
    times = np.concatenate([starts, starts + p])
    weight = np.concatenate([a, -a])
    order = np.argsort(times, kind="stable")
    times, weight = times[order], weight[order]
    held = np.vstack([np.zeros((1, a.shape[1])), np.cumsum(weight, axis=0)])
    moment = np.vstack([np.zeros((1, a.shape[1])), np.cumsum(weight * times[:, None], axis=0)])
    i = np.searchsorted(times, edges, side="right")
    area = edges[:, None] * held[i] - moment[i]                 # int_{-inf}^{edge} of the held demand
    return (np.diff(area, axis=0) / np.diff(edges)[:, None]).T


def rigid_bound(cluster: Cluster, jobs: JobSet, intervals: int = INTERVALS, horizon_s: float | None = None,
                busy_share: float = BUSY_SHARE, dff: tuple[int, ...] = DFF, time_limit: float = 60.0,
                max_iter: int = 100_000, all_resources: bool = False) -> BoundRecord:
    """The Lagrangian bound of the module docstring on the mean wait of all admitted jobs.

    Parameters
    ----------
    intervals : the grid's intervals ``K``. horizon_s : ``T`` (seconds; default: the last submission plus a tenth
        of the submission span plus twice the median duration). busy_share : the share of the intervals spread over
        the busy moments (:func:`~formulations.schedule.configlp.busy_edges`, on the pooled resource whose zero-wait
        profile peaks highest against its capacity). dff : the ``k`` of the pooled GPU counts ``u_k``.
    time_limit : wall seconds of the ascent (status ``time_limit`` when reached). max_iter : ascent steps.
    all_resources : keep the rows of every pooled resource; by default only those whose zero-wait profile (every
        job at its submission) exceeds the capacity somewhere, or else the one that comes closest (leaving rows out
        keeps a relaxation; a resource never above capacity at zero wait seldom binds, and each costs time).

    Returns
    -------
    BoundRecord named ``rigid``; ``info``: ``iterations``, ``intervals``, ``step_s`` (the finest interval),
    ``resources``, ``history`` (per tenth of the steps: wall and CPU seconds, the best mean wait).
    """
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + float(time_limit)
    counted = counted_jobs(cluster, jobs, horizon_s, intervals)
    if counted is None:
        return BoundRecord("rigid", math.nan, math.nan, "optimal", "all", 0.0, 0.0, 0)
    rows, r, p, t0, horizon_s = counted
    n = len(rows)
    names, a = pooled_demands(cluster, jobs, rows, dff)
    peak = np.array([_peak(r, p, a[:, q]) for q in range(a.shape[1])])
    q_busy = int(np.argmax(peak))
    if not all_resources:                                       # the rows of resources over capacity at zero wait
        keep = (peak > 1.0) | (np.arange(len(peak)) == q_busy)
        names, a, peak = [m for m, k in zip(names, keep, strict=True) if k], a[:, keep], peak[keep]
        q_busy = int(np.argmax(peak))
    edges = busy_edges(t0, horizon_s, int(intervals), r, r + p, a[:, q_busy], 1.0, busy_share)
    n_rows = (a.shape[1], len(edges) - 1)
    y, direction = np.zeros(n_rows), np.zeros(n_rows)
    best, value = 0.0, 0.0
    margin, stall, status, it, history = 1.0, 0, "iteration_limit", 0, []
    for it in range(1, max_iter + 1):                           # noqa: B007 (it is reported)
        prices = _Prices(edges, y)
        low, starts = cheapest_starts(r, p, a, prices)
        value = float(low.sum() - y.sum())
        grad = usage(starts, p, a, edges) - 1.0
        if value > best:
            best, stall = value, 0
        else:
            stall += 1
            if stall >= PATIENCE:
                margin, stall = margin / 2, 0
                if margin < MIN_MARGIN:
                    break
        if (grad <= SLACK_TOLERANCE).all() and float((y * -grad).sum()) <= SLACK_TOLERANCE * max(1.0, abs(value)):
            status = "optimal"                                  # the starts keep every row: L is the optimum
            break
        if time.perf_counter() > deadline:
            status = "time_limit"
            break
        if (it & (it - 1)) == 0:
            history.append((round(time.perf_counter() - wall0, 1), round(time.process_time() - cpu0, 1), best / n))
        active = (y > 0) | (grad > 0)                           # the projection keeps y >= 0
        grad = np.where(active, grad, 0.0)
        dot = float((grad * direction).sum())
        beta = max(0.0, -1.5 * dot / float((direction ** 2).sum())) if dot < 0 else 0.0
        direction = grad + beta * direction
        norm = float((direction ** 2).sum())
        if norm <= 0:
            break
        target = best + margin * max(abs(best), float(n))      # seconds of total wait: at least 1 s per job
        y = np.maximum(y + (target - value) / norm * direction, 0.0)
    total = max(0.0, best - SAFETY * max(1.0, abs(best)))
    wait = total / n
    return BoundRecord("rigid", wait, wait + float(p.mean()), status, "all", time.perf_counter() - wall0,
                       time.process_time() - cpu0, n,
                       {"iterations": it, "intervals": len(edges) - 1, "step_s": float(np.diff(edges).min()),
                        "resources": names, "history": history})


def _peak(r: np.ndarray, p: np.ndarray, d: np.ndarray) -> float:
    """The most of the scaled demand ``d`` held at once when every job starts at its submission."""
    times = np.concatenate([r, r + p])
    delta = np.concatenate([d, -d])
    order = np.lexsort((delta, times))                          # at a tie, ends before starts
    return float(np.cumsum(delta[order]).max(initial=0.0))
