"""A lower bound on the mean wait that sees nodes: the time x node-type configuration LP, by column generation.

Why. The pooled LP (:mod:`formulations.schedule.bound`) sees one pool per resource: if starting every job at its
submission fits the pooled capacities, its optimum is 0, whatever the nodes. Here a node's content is a
*configuration*: a multiset of GPU job classes that fit one node of its type together; a 5-GPU and an 8-GPU job
never share an 8-GPU node, so they count against two nodes.

Classes. A GPU job's class is ``(h, u, types)``: ``h`` its GPUs under the dual-feasible function ``f(x) = 1`` if
``x > 500`` milli-GPU, ``1/2`` if ``x = 500``, ``0`` below (counted in halves: a whole ``g``-GPU job has ``h = 2g``),
``u`` its milli-GPU total in units of :data:`GM_UNIT` rounded down, and ``types`` the node types whose empty node
fits it (:func:`formulations.schedule.exact.node_types`). On one GPU the jobs' milli-GPU add up to at most 1000,
so their ``f`` add up to at most 1 (``f`` is dual feasible); hence on a node of ``G`` GPUs every moment's content
has ``sum h <= 2 G`` and ``sum u <= 1000 G / GM_UNIT``: a *configuration* of type ``t`` is a vector of class counts
meeting both, with classes that fit ``t``. Jobs with ``h = u = 0`` (CPU-only, sharing below :data:`GM_UNIT`)
are in no class. CPU, memory and milli-GPU are also kept pooled (as in the pooled LP).

The relaxation. Cut ``[t0, T)`` into ``K`` intervals ``I_k`` of lengths ``D_k`` (``t0`` the first submission,
``T`` past the last one; any cut: even, or finer where the zero-wait profile is busy, :func:`busy_edges`). Every
job ``j`` gets a start ``S_j >= r_j`` and runs ``[S_j, S_j + p_j)``; let ``o_jk(S) = |[S, S + p_j) cap I_k| /
D_k``. For any schedule, let ``lam_tkc = (1 / D_k) * (time within I_k that nodes of type t hold configuration c,
summed over those nodes)``. Then, for every interval ``k``:

1. ``sum_c lam_tkc <= N_t`` (each node holds one configuration at a time; ``N_t`` nodes of type ``t``);
2. ``sum_{j in q} o_jk(S_j) <= sum_{t, c} a_qc lam_tkc`` for every class ``q`` (each running job of class ``q``
   sits on some node, whose content is a configuration counting it);
3. ``sum_j d_j o_jk(S_j) <= cap`` per pooled resource (GPU milli, CPU milli-cores, memory MiB).

Jobs may change node between moments in 1.-3. (``lam`` is a time average): the relaxation is capped by the
schedule with *free re-packing at every moment*; it cannot see that jobs never move, only that at each moment
they must be packable into the nodes. The master LP keeps ``x_jS`` (job ``j`` starts at ``S``; cost ``S - r_j``,
``sum_S x_jS = 1``) and ``lam`` for the columns generated so far.

The bound (valid at every iteration). For any multipliers ``pi >= 0`` of rows 2. and 3., Lagrangian duality gives
``OPT >= L(pi) = sum_j min_{S >= r_j} [S - r_j + sum_k P_jk o_jk(S)] - sum_{t,k} N_t max(0, v_tk(pi))
- sum_{k, res} cap pi_k,res`` with ``P_jk = pi_{q(j),k} + sum_res d_j,res pi_k,res`` and ``v_tk(pi)`` the most a
configuration of type ``t`` earns at prices ``pi_.k``. Both inner problems are solved exactly: the job's cost is
piecewise linear in ``S`` with breakpoints where ``S`` or ``S + p_j`` meets an interval edge (and grows with slope 1
past ``T``), so its minimum is at ``r_j`` or a breakpoint; ``v_tk`` is a two-dimensional integer knapsack over
``(h, u)``, solved exactly by dynamic programming (binary-split copies). ``L`` is evaluated in float64 at
prices ``pi >= 0`` of our choosing (the master's duals clipped to ``pi >= 0``, so the solver's tolerances never
enter the bound), the best over the iterations is kept, lowered by :data:`~formulations.schedule.bound.SAFETY`.
Column generation adds each job's cheapest start and each ``(t, k)``'s best configuration at the master's duals
while their reduced costs are negative; at its end ``L`` meets the master's optimum (status ``optimal``).

Stabilised bound. Early on, the restricted master prices capacity by the cost of its few columns (pushing a job
past ``T``), so ``L`` at its duals is often below 0 until column generation nears its end (openb default, load
1.2: every round within 600 s). ``L`` is concave in ``pi`` (a minimum of affine functions) and ``L(0) = 0`` (every
job on arrival, no configuration earns), so with ``line_search`` each round also searches the segment from the
best prices so far to the master's duals by golden section and keeps the best point: a valid bound at every
round, positive as soon as some point of the segment is an ascent direction from 0. Columns still come from the
master's duals, so the search changes the bound, never the master's path. With ``ascent_steps``, projected
subgradient steps (Polyak's step towards the master's value, an upper bound on every ``L``) go on from the best
point when the master's duals do not beat it: a subgradient of ``L`` at ``pi`` is, per row, what the jobs'
cheapest starts use minus what the nodes' best configurations (those earning > 0) or the pooled capacity offer.

Every schedule's total wait is at least ``L``; divide by the number of admitted jobs for the mean wait. The
non-preemption is exact on the job side (a job's start is one number), so the bound is also at least the
preemptive configuration LP's.

Measured (openb default, 20,000 stream jobs, seed 42, 64 intervals, the master by the primal simplex, the three
loads side by side on a shared 2-core machine): every load reached this LP's optimum (``optimal``). Load 1.0: 0 s
in 4 rounds, 41 CPU s (with free re-packing nothing waits on this grid); load 1.1: 14.93 s in 16 rounds, 121 CPU s
(the pooled LP gives 1.6 s); load 1.2: 47.96 s in 13 rounds, 253 CPU s, the bound 0 until round 7 (207 CPU s).
With HiGHS' default dual simplex the master's re-solves were 3x slower and load 1.2 stayed at 0 in 600 s. On small
cases the line search makes a stopped bound positive after one round where the duals alone give 0 (drain case:
2.0 s of the optimum's 4 s; ``time-n4-j30-l1.3-s4`` of the former ``small-time``: 12.8 s of the LP's 43.5 s).
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from fgdopt.model import GPU_MILLI, Cluster
from fgdopt.state import ClusterState
from fgdopt.timeline import JobSet
from formulations.highs import add_columns, build_highs, rows_lp, run_until
from formulations.schedule.bound import SAFETY
from formulations.schedule.exact import node_types
from formulations.schedule.record import BoundRecord, counted_jobs

GM_UNIT = 125
"""Milli-GPU per unit of the configurations' second dimension (a job's total is rounded down: a relaxation)."""
TOLERANCE = 1e-7
"""Relative gap (of the total wait, at least 1 s) between the master's optimum and the Lagrangian bound at which
column generation stops as ``optimal``; also the reduced cost below which a column is added."""
LINE_SEARCH = 6
"""Golden-section steps per round (when asked for) on the segment from the best prices so far to the master's
duals."""
GOLDEN = (math.sqrt(5) - 1) / 2
PRIMAL_SIMPLEX = 4
"""HiGHS' ``simplex_strategy`` for the master: primal simplex. Added columns keep the last basis primal feasible, so
the primal simplex goes on from it; HiGHS' default, the dual simplex, first has to repair the dual infeasibility
that the new columns bring (openb default, 3,000
stream jobs and the 9,574 background jobs, load 1.2, seed 42: rounds 2-5 took 6.1-6.9 CPU s each with the primal,
the second round 19.8 CPU s with the dual)."""
JOB_BLOCK = 2048
"""Jobs priced at once (memory: ``JOB_BLOCK x 2K`` candidate starts)."""


def job_classes(cluster: Cluster, jobs: JobSet, rows: np.ndarray, groups: list[list[int]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class of every job of ``rows`` (-1: in no class) and per class its ``(h, u)`` and type mask (module
    docstring; ``groups`` the node types)."""
    tasks = jobs.tasks
    empty = ClusterState(cluster, tasks)
    firsts = np.array([g[0] for g in groups])
    num, milli = tasks.num_gpu[rows], tasks.gpu_milli[rows]
    h = np.where(milli >= GPU_MILLI, 2 * num, np.where(milli > 500, 2, np.where(milli == 500, 1, 0)))
    h = np.where(num > 0, h, 0)
    u = (num * milli) // GM_UNIT
    masks = np.array([int(sum(1 << i for i, ok in enumerate(empty.feasible_nodes(tasks[j])[firsts]) if ok))
                      for j in rows.tolist()], dtype=np.int64)
    in_class = (h > 0) | (u > 0)
    keys = np.column_stack([h, u, masks])
    cls = np.full(len(rows), -1, dtype=np.int64)
    if not in_class.any():
        return cls, np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    uniq, inverse = np.unique(keys[in_class], axis=0, return_inverse=True)
    cls[in_class] = inverse.ravel()
    return cls, uniq[:, :2], uniq[:, 2]


def knapsack(weights: np.ndarray, prices: np.ndarray, cap_h: int, cap_u: int) -> tuple[np.ndarray, np.ndarray]:
    """The best configurations of one node type, for ``K`` price vectors at once.

    Parameters
    ----------
    weights : int (Q, 2), each class's ``(h, u)``. prices : float (K, Q), >= 0.
    cap_h, cap_u : the node's capacities in both dimensions.

    Returns
    -------
    (value (K,), counts (K, Q)): ``value[k] = max sum_q prices[k, q] a_q`` over integer ``a >= 0`` with
    ``sum_q a_q weights[q] <= (cap_h, cap_u)``, and an ``a`` reaching it.
    """
    n_k, n_q = prices.shape
    table = np.zeros((n_k, cap_h + 1, cap_u + 1))
    items, taken = [], []
    for q in range(n_q):
        wh, wu = int(weights[q, 0]), int(weights[q, 1])
        most = min(cap_h // wh if wh else cap_u + 1, cap_u // wu if wu else cap_h + 1)
        m = 1
        while most > 0:                                         # binary split: copies 1, 2, 4, ... up to `most`
            c = min(m, most)
            most -= c
            m *= 2
            dh, du = c * wh, c * wu
            if dh > cap_h or du > cap_u:
                continue
            cand = table[:, : cap_h + 1 - dh, : cap_u + 1 - du] + c * prices[:, q, None, None]
            better = cand > table[:, dh:, du:] + 1e-12
            take = np.zeros(table.shape, dtype=bool)
            take[:, dh:, du:] = better
            table[:, dh:, du:] = np.where(better, cand, table[:, dh:, du:])
            items.append((q, c, dh, du))
            taken.append(take)
    counts = np.zeros((n_k, n_q), dtype=np.int64)
    hh, uu = np.full(n_k, cap_h), np.full(n_k, cap_u)
    ks = np.arange(n_k)
    for (q, c, dh, du), take in zip(reversed(items), reversed(taken), strict=True):
        hit = take[ks, hh, uu]
        counts[hit, q] += c
        hh = hh - hit * dh
        uu = uu - hit * du
    return table[:, cap_h, cap_u], counts


class _Grid:
    """Intervals ``I_k = [edges[k], edges[k+1])`` (seconds, increasing; lengths ``D_k`` may differ)."""

    def __init__(self, edges: np.ndarray):
        self.edges = np.asarray(edges, dtype=np.float64)
        self.n = len(self.edges) - 1
        self.length = np.diff(self.edges)

    def overlap(self, start: np.ndarray, length: np.ndarray) -> np.ndarray:
        """``o[i, k] = |[start_i, start_i + length_i) cap I_k| / D_k`` (dense, (len(start), n))."""
        lo = np.maximum(self.edges[None, :-1], start[:, None])
        hi = np.minimum(self.edges[None, 1:], (start + length)[:, None])
        return np.clip(hi - lo, 0.0, None) / self.length

    def integral(self, cum: np.ndarray, t: np.ndarray) -> np.ndarray:
        """``int_{edges[0]}^{t} price`` for prices constant on each interval, whose integrals over the intervals
        are ``cum``'s differences (``cum`` (m, n + 1), one row per job; ``t`` (m, c)); none past the last edge."""
        t = np.clip(t, self.edges[0], self.edges[-1])
        k = np.clip(np.searchsorted(self.edges, t, side="right") - 1, 0, self.n - 1)
        rows = np.arange(cum.shape[0])[:, None]
        lo = cum[rows, k]
        return lo + (t - self.edges[k]) / self.length[k] * (cum[rows, k + 1] - lo)


def busy_edges(t0: float, horizon: float, n: int, start: np.ndarray, end: np.ndarray, gpus: np.ndarray,
               capacity: float, share: float) -> np.ndarray:
    """The edges of ``n`` intervals over ``[t0, horizon)``: ``1 - share`` of them spread evenly, ``share`` spread
    evenly over the *busy* moments, those at which the jobs run from their submission (``[start, end)``, the
    zero-wait profile) hold at least ``capacity`` whole GPUs (``gpus``: each job's GPUs under the dual-feasible
    function, in halves, so ``capacity`` is twice the cluster's GPUs). With no busy moment, the grid is even. Edges
    that float64 cannot tell apart (closer than its resolution at the time: 1/8 s at 10^15 s) are one edge, so that
    no interval is empty (there are then fewer than ``n``).

    Example: ``t0 = 0``, ``horizon = 100``, ``n = 4``, ``share = 0.5`` and ``[0, 50)`` busy: the cumulative
    density is ``F(t) = 0.5 t / 100 + 0.5 min(t, 50) / 50``, so the edges ``F^-1(k / 4)`` are 0, 16.7, 33.3, 50,
    100.
    """
    times = np.concatenate([start, end])
    delta = np.concatenate([gpus, -gpus]).astype(np.float64)
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(delta[order])
    cut = np.clip(np.concatenate([[t0], times, [horizon]]), t0, horizon)
    held = np.concatenate([[0.0], level])                            # level on [cut[i], cut[i + 1])
    busy = (held >= capacity) * np.diff(cut)
    total = float(busy.sum())
    if total <= 0 or share <= 0:
        return np.unique(t0 + (horizon - t0) * np.arange(n + 1) / n)
    f = (1 - share) * (cut - t0) / (horizon - t0) + share * np.concatenate([[0.0], np.cumsum(busy)]) / total
    edges = np.interp(np.arange(n + 1) / n, f, cut)
    edges[0], edges[-1] = t0, horizon
    return np.unique(edges)


def config_bound(cluster: Cluster, jobs: JobSet, intervals: int = 128, horizon_s: float | None = None,
                 time_limit: float = 60.0, max_iter: int = 1000, busy_share: float = 0.0,
                 line_search: int = 0, ascent_steps: int = 0, in_out: bool = False) -> BoundRecord:
    """The configuration LP bound of the module docstring on the mean wait of all admitted jobs.

    Parameters
    ----------
    intervals : ``K``, the grid's intervals. horizon_s : ``T`` (default: the last submission plus a tenth of the
        submission span plus twice the median duration).
    time_limit : wall seconds; when reached the best bound so far is returned with status ``time_limit``.
    max_iter : column generation rounds (status ``iteration_limit`` when reached).
    busy_share : the share of the intervals spread over the moments at which the zero-wait profile holds at
        least the cluster's GPUs (counted by the dual-feasible function), the rest evenly (:func:`busy_edges`);
        0: an even grid. Any grid gives a valid bound.
    line_search : golden-section steps per round on the segment from the best prices so far to the master's
        duals, when these do not beat the best (module docstring, "The bound"; e.g. :data:`LINE_SEARCH`); 0: the
        master's duals alone. It changes the bound only, not the columns.
    ascent_steps : projected subgradient steps per round from the best prices so far (Polyak's step towards the
        master's value), when the master's duals do not give the best bound; 0: none. The bound only, too.
    in_out : price the columns at the best point found (kept where their reduced cost at the master's duals is
        negative; else at the duals, so column generation still ends exactly): in-out column generation. It
        changes the master's path, not the bound's validity.

    Returns
    -------
    BoundRecord
        ``info["history"]``: per round, the wall and CPU seconds since the call, the master's value and the best
        bound so far (both as mean waits, seconds).
    """
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + float(time_limit)
    counted = counted_jobs(cluster, jobs, horizon_s, intervals)
    if counted is None:
        return BoundRecord("config", math.nan, math.nan, "optimal", "all", 0.0, 0.0, 0)
    rows, r, p, t0, horizon_s = counted
    n = len(rows)
    mean_p = float(p.mean())
    groups = node_types(cluster)
    gpu_types = [i for i, g in enumerate(groups) if cluster.gpu[g[0]] > 0]
    cls, weights, masks = job_classes(cluster, jobs, rows, groups)
    halves = np.where(cls >= 0, weights[np.maximum(cls, 0), 0] if len(weights) else 0, 0)
    grid = _Grid(busy_edges(t0, float(horizon_s), int(intervals), r, r + p, halves,
                            2.0 * float(cluster.gpu.sum()), busy_share))
    K = grid.n
    n_q = len(weights)
    tasks = jobs.tasks
    demand = np.column_stack([tasks.gpu_demand[rows], tasks.cpu_milli[rows], tasks.memory_mib[rows]]
                             ).astype(np.float64)
    caps = np.array([cluster.gpu_capacity_milli, cluster.cpu_milli.sum(), cluster.memory_mib.sum()], np.float64)
    demand /= np.maximum(caps, 1.0)                                  # pooled rows scaled to capacity 1
    # rows: n job rows (= 1), then coverage (q, k) <= 0, pooled (res, k) <= 1, convexity (t, k) <= N_t
    cov0, pool0 = n, n + n_q * K
    conv0 = pool0 + 3 * K
    type_of = {t: i for i, t in enumerate(gpu_types)}
    n_rows = conv0 + len(gpu_types) * K
    row_lo = np.concatenate([np.ones(n), np.full(n_rows - n, -np.inf)])
    row_hi = np.concatenate([np.ones(n), np.zeros(n_q * K), np.ones(3 * K),
                             np.repeat([float(len(groups[t])) for t in gpu_types], K)])

    def start_columns(js: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, sp.csc_matrix]:
        """Cost and matrix of the columns "job ``js[i]`` starts at ``starts[i]``"."""
        ov = grid.overlap(starts, p[js])
        ii, kk = np.nonzero(ov)
        val = ov[ii, kk]
        parts_r, parts_c, parts_v = [js], [np.arange(len(js))], [np.ones(len(js))]
        c = cls[js[ii]]
        inc = c >= 0
        parts_r.append(cov0 + c[inc] * K + kk[inc])
        parts_c.append(ii[inc])
        parts_v.append(val[inc])
        for res in range(3):
            d = demand[js[ii], res]
            nz = d > 0
            parts_r.append(pool0 + res * K + kk[nz])
            parts_c.append(ii[nz])
            parts_v.append(val[nz] * d[nz])
        m = sp.csc_matrix((np.concatenate(parts_v), (np.concatenate(parts_r), np.concatenate(parts_c))),
                          shape=(n_rows, len(js)))
        return starts - r[js], m

    def config_columns(t: int, ks: np.ndarray, counts: np.ndarray) -> sp.csc_matrix:
        """Columns "a node of type ``t`` holds configuration ``counts[i]`` in interval ``ks[i]``"."""
        ii, qq = np.nonzero(counts)
        rr = np.concatenate([cov0 + qq * K + ks[ii], conv0 + type_of[t] * K + ks])
        cc = np.concatenate([ii, np.arange(len(ks))])
        vv = np.concatenate([-counts[ii, qq].astype(np.float64), np.ones(len(ks))])
        return sp.csc_matrix((vv, (rr, cc)), shape=(n_rows, len(ks)))

    h = build_highs(rows_lp(row_lo, row_hi), options={"solver": "simplex", "simplex_strategy": PRIMAL_SIMPLEX})

    def add(cost: np.ndarray, m: sp.csc_matrix) -> None:
        add_columns(h, cost, m)

    everyone = np.arange(n)
    add(*start_columns(everyone, r.copy()))                          # everyone on submission ...
    add(*start_columns(everyone, np.full(n, grid.edges[-1])))        # ... and everyone past T: always feasible
    class_at = {t: np.flatnonzero((masks >> t) & 1) for t in gpu_types}
    for t in gpu_types:                                              # per class, a node full of it
        qs = class_at[t]
        g = int(cluster.gpu[groups[t][0]])
        cap_h, cap_u = 2 * g, (GPU_MILLI * g) // GM_UNIT
        for q in qs.tolist():
            wh, wu = weights[q]
            most = min(cap_h // wh if wh else cap_u + 1, cap_u // wu if wu else cap_h + 1)
            if most > 0:
                counts = np.zeros((K, n_q), dtype=np.int64)
                counts[:, q] = most
                add(np.zeros(K), config_columns(t, np.arange(K), counts))
    def job_costs(pq: np.ndarray, pr: np.ndarray, fixed: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Every job's cheapest start at prices ``(pq, pr)`` and its cost (module docstring), or the cost of the
        starts ``fixed``."""
        cum_q = np.zeros((n_q + 1, K + 1))                          # row 0: a job of no class (no GPU)
        cum_q[1:, 1:] = np.cumsum(pq, axis=1)
        cum_r = np.concatenate([np.zeros((3, 1)), np.cumsum(pr, axis=1)], axis=1)
        low, starts = np.empty(n), np.empty(n)
        for b in range(0, n, JOB_BLOCK):
            js = everyone[b:b + JOB_BLOCK]
            cum = demand[js] @ cum_r + cum_q[cls[js] + 1]
            if fixed is None:
                cand = np.concatenate([np.broadcast_to(grid.edges, (len(js), K + 1)),
                                       grid.edges[None, :] - p[js, None], r[js, None]], axis=1)
                cand = np.maximum(cand, r[js, None])
            else:
                cand = fixed[js, None]
            cost = cand - r[js, None] + grid.integral(cum, cand + p[js, None]) - grid.integral(cum, cand)
            arg = np.argmin(cost, axis=1)
            low[js] = cost[np.arange(len(js)), arg]
            starts[js] = cand[np.arange(len(js)), arg]
        return low, starts

    def best_configs(pq: np.ndarray) -> dict:
        """Per node type: the best configuration's value and counts (all classes) in every interval."""
        out = {}
        for t in gpu_types:
            qs = class_at[t]
            g = int(cluster.gpu[groups[t][0]])
            value, counts = knapsack(weights[qs], pq[qs].T, 2 * g, (GPU_MILLI * g) // GM_UNIT)
            full = np.zeros((K, n_q), dtype=np.int64)
            full[:, qs] = counts
            out[t] = (value, full)
        return out

    def lagrangian(pq: np.ndarray, pr: np.ndarray) -> tuple[float, np.ndarray, dict]:
        """``L(pq, pr)`` (module docstring; valid for any prices >= 0), the jobs' cheapest starts, the configs."""
        low, starts = job_costs(pq, pr)
        configs = best_configs(pq)
        node_sum = sum(len(groups[t]) * float(np.maximum(v, 0.0).sum()) for t, (v, _) in configs.items())
        return float(low.sum()) - node_sum - float(pr.sum()), starts, configs

    def subgradient(pq: np.ndarray, pr: np.ndarray, starts: np.ndarray, configs: dict
                    ) -> tuple[np.ndarray, np.ndarray]:
        """A subgradient of ``L`` at ``(pq, pr)`` whose inner minimisers are ``starts`` and ``configs``: per row,
        what the jobs use minus what the nodes (configurations earning > 0) or the pooled capacity (1) offer."""
        gq, gr = np.zeros((n_q, K)), np.zeros((3, K))
        for b in range(0, n, JOB_BLOCK):
            js = everyone[b:b + JOB_BLOCK]
            ov = grid.overlap(starts[js], p[js])
            gr += demand[js].T @ ov
            inc = cls[js] >= 0
            np.add.at(gq, cls[js][inc], ov[inc])
        gr -= 1.0
        for t, (value, counts) in configs.items():
            gq -= len(groups[t]) * (counts * (value > 0)[:, None]).T
        return gq, gr

    def ascent(center: tuple, known: float, steps: int, target: float, until: float) -> tuple[float, tuple]:
        """Projected subgradient steps from ``center`` (``L`` = ``known`` there) with Polyak's step towards
        ``target`` (an upper bound on max ``L``: the master's value), halved after a step that does not improve;
        the best point found and its ``L``."""
        best_l, best_p = known, center
        pq, pr = center
        value, starts, configs = lagrangian(pq, pr)
        theta = 1.0
        for _ in range(steps):
            if time.perf_counter() > until:
                break
            gq, gr = subgradient(pq, pr, starts, configs)
            norm = float((gq ** 2).sum() + (gr ** 2).sum())
            if norm <= 0 or target <= value:
                break
            step = theta * (target - value) / norm
            pq, pr = np.maximum(pq + step * gq, 0.0), np.maximum(pr + step * gr, 0.0)
            value, starts, configs = lagrangian(pq, pr)
            if value > best_l:
                best_l, best_p = value, (pq, pr)
            else:
                theta /= 2
        return best_l, best_p

    def segment(center: tuple, duals: tuple, steps: int, until: float, known: float) -> tuple[float, tuple]:
        """The best ``L`` found by golden section on the segment from the prices ``center`` (``L`` = ``known``
        there) to ``duals`` (``L`` is concave along it), within ``steps`` evaluations and until ``until``."""
        tried = {}

        def at(a: float) -> float:
            if a not in tried:
                tried[a] = lagrangian(*(c + a * (d - c) for c, d in zip(center, duals, strict=True)))[0]
            return tried[a]

        lo, hi = 0.0, 1.0
        for _ in range(steps):
            if time.perf_counter() > until:
                break
            m1, m2 = hi - GOLDEN * (hi - lo), lo + GOLDEN * (hi - lo)
            if at(m1) >= at(m2):
                hi = m2
            else:
                lo = m1
        a = max(tried, key=lambda x: (tried[x], x), default=0.0)
        if not tried or tried[a] <= known:
            return known, center
        return tried[a], tuple(c + a * (d - c) for c, d in zip(center, duals, strict=True))

    def priced(starts: np.ndarray, configs: dict, pi_q: np.ndarray, pi_r: np.ndarray, alpha: np.ndarray,
               sigma: np.ndarray) -> tuple[np.ndarray, list]:
        """The columns of these starts and configurations whose reduced cost at the master's duals (``alpha``
        of the job rows, ``pi_q``, ``pi_r``, ``sigma`` of the convexity rows) is below 0."""
        at_master = job_costs(pi_q, pi_r, starts)[0]
        new_j = np.flatnonzero(at_master - alpha < -TOLERANCE * max(1.0, float(np.abs(at_master).max())))
        new_cfg = []
        for t, (_, counts) in configs.items():
            earns = (counts * pi_q.T).sum(axis=1)
            ks = np.flatnonzero(earns - sigma[type_of[t]] > TOLERANCE * max(1.0, float(earns.max())))
            if len(ks):
                new_cfg.append((t, ks, counts[ks]))
        return new_j, new_cfg

    best, status, it, master, history = 0.0, "iteration_limit", 0, math.inf, []
    center = (np.zeros((n_q, K)), np.zeros((3, K)))                # L(0) = 0: every job starts on arrival
    for it in range(1, max_iter + 1):                                # noqa: B007 (it is reported)
        if (res := run_until(h, deadline, duals=True)).status != "optimal":
            status = res.status
            break
        master, y = res.objective, res.row_duals
        alpha = y[:n]
        pi_q = np.clip(-y[cov0:pool0], 0.0, None).reshape(n_q, K)
        pi_r = np.clip(-y[pool0:conv0], 0.0, None).reshape(3, K)
        sigma = np.clip(-y[conv0:], 0.0, None).reshape(len(gpu_types), K)
        prices = (pi_q, pi_r)
        bound, lagrangian_starts, configs = lagrangian(pi_q, pi_r)    # L at the master's duals, every round
        if bound > best:
            best, center = bound, prices
        elif line_search:                                            # and the best on the way to them
            best, center = segment(center, prices, line_search, deadline, best)
        if ascent_steps and bound < best:                            # and beyond, when the master lags
            best, center = ascent(center, best, ascent_steps, master, deadline)
        history.append((round(time.perf_counter() - wall0, 1), round(time.process_time() - cpu0, 1), master / n,
                        best / n))

        new_j, new_cfg = [], []
        if in_out and center is not prices:                          # priced at the best point (in-out) ...
            _, starts, configs_c = lagrangian(*center)
            new_j, new_cfg = priced(starts, configs_c, pi_q, pi_r, alpha, sigma)
        if not len(new_j) and not new_cfg:                           # ... else at the master's duals: exact
            starts = lagrangian_starts
            new_j, new_cfg = priced(starts, configs, pi_q, pi_r, alpha, sigma)
        if (not len(new_j) and not new_cfg) or master - best <= TOLERANCE * max(1.0, abs(master)):
            status = "optimal"
            break
        if len(new_j):
            add(*start_columns(new_j, starts[new_j]))
        for t, ks, counts in new_cfg:
            add(np.zeros(len(ks)), config_columns(t, ks, counts))
    total = max(0.0, best - SAFETY * max(1.0, abs(best)))
    wait = total / n
    return BoundRecord("config", wait, wait + mean_p, status, "all", time.perf_counter() - wall0,
                       time.process_time() - cpu0, n,
                       {"iterations": it, "intervals": K, "step_s": float(grid.length.min()), "classes": n_q,
                        "master_s": master / n, "history": history,
                        "columns": int(h.getNumCol())})
