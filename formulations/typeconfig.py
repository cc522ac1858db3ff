"""The configuration model over node TYPES, solved by column generation at full cluster scale (``config-types``).

The configuration model of :mod:`formulations.configs` (Gilmore–Gomory) has one column per (node type, content
of one node of that type) and rows per node type and per task shape; its size depends on the number of node
types and task shapes, not on the number of nodes or tasks (openb default: 15 types, 151 shapes, 1213 nodes).
This module prices its columns instead of enumerating them, and turns the result into a certified placement:

* **master** — the LP of :func:`~formulations.configs.master_model`, kept in one HiGHS instance that gains
  columns and re-solves from its basis, with an exchange column per pair of :func:`dominance_pairs` (a shape that
  fits wherever another does at the same GPU demand: dual-optimal inequalities ``pi_i >= pi_j``);
* **columns to start from** — a :class:`ColumnPool` of an earlier run on the same cluster (the previous, shorter
  arrived prefix: its columns stay valid), the node contents of the warm start, and greedy ones;
* **pricing** — per node type, a content of one node maximizing ``sum_s (demand_s - pi_s) a_s``: first greedily
  (:class:`~formulations.configs._NodeFit`, two orders, so several columns per round), then exactly with the
  exact model of one node (:func:`~formulations.exact.build_exact`: per-GPU patterns of the sharing tasks,
  whole GPUs, CPU, memory, GPU-model access; only the shapes allowed on the type, of positive profit, and not
  replaced at no less profit by another shape; at most as many tasks per shape as one node holds) solved by HiGHS
  without presolve, every improving solution of its search offered as a column; a first pass stops each MILP
  within ``PRICING_GAP_SHARE x tol / (T x N_t)`` of its proven bound;
* **bound** — the Lagrangian (Farley) bound ``sum_s pi_s count_s + sum_t N_t max(0, price_t)`` with each
  ``price_t`` the pricing MILP's proven dual bound, valid at every exact round, so also when stopped early;
  exact rounds use Wentges-smoothed duals (a convex combination with the duals of the best bound so far);
* **placement** — the rounding MILP (each column between its LP value rounded down and up), then, if needed, the
  configuration MILP over all generated columns (HiGHS; MIP start: the best placement so far), both with the
  exchange columns, decoded to concrete nodes and GPUs by :func:`~formulations.configs.decode` after
  :func:`exchange` (a maximum flow puts spare dominating tasks in place of over-used ones), completed by
  :func:`~formulations.aggregate.fill_greedy`, then, if still outside the tolerance, improved by a
  large-neighbourhood search (:func:`improve`: the exact model on a dozen nodes at a time; on a cluster of at most
  a dozen nodes, the whole instance at once, whose proof is then the bound) and validated
  (:func:`~formulations.exact.exact_solution`).

The run stops as soon as bound - incumbent <= ``tol`` x GPU capacity (``optimal`` only when they are equal). A
converged column generation proves the configuration LP, not the integer optimum: where the LP's integrality gap
exceeds the tolerance, the run ends ``time_limit`` unless the LNS closes it.
GPU quantities inside are in the aggregation's units (:attr:`~formulations.aggregate.Aggregation.unit` milli-GPU).

What each piece bought (openb seed 42, one process, HiGHS 1 thread, on the shared 2-core machine with
other engineers' jobs running: load average in brackets; CPU s are the process's own):

* before these pieces: gpuspec25 at 130 % from a cold start stopped at 60 s with the Farley bound
  above capacity and the incumbent at 5989.2 GPUs (3.59 % of capacity) [2.6]; run for 400 s, column generation
  converged after 220 s (86 exact rounds, 1290 pricing calls, 206 s of pricing; LP 6204.74) and the MILP over the
  columns then took 90 s to reach 6199.34 (0.087 %) [2.5-3.3]. gpuspec25 at 100 %: 37.8 s, of which the MILP
  22.8 s [1.4].
* exchange columns (:func:`dominance_pairs`; 790 pairs among gpuspec25's 402 shapes at 130 %, 149 among
  default's 126): the same column generation converged in 22 exact rounds and 53.6 CPU s instead of 86 rounds
  and about 200 s.
* pricing gaps (:data:`PRICING_GAP_SHARE` 0.25): with the exchange columns, converged in 23 exact rounds and
  30.7 CPU s (60 s wall) [4.8]. A share of 0.5 did not do better on gpuspec33 at 130 % (one run each).
* pricing dominance filter (:data:`PRICING_DOMINANCE`): gpuspec33 at 130 %, cold, 60 s: 29 exact rounds and a
  Farley bound of 6199.1 GPUs (LP 6198.0) instead of 22 rounds and 6230.2 [3.7-4.6].
* integer step, on gpuspec25 at 130 % with the converged columns: the LP rounded down, decoded and filled
  greedily leaves 6127.9 GPUs; the MILPs' solutions use the exchange columns (6202.9 GPUs by their objective)
  and decoded with a greedy exchange still only 6121-6155; with the max-flow :func:`exchange` the rounding MILP
  places 6203.79 in 2.2 CPU s and the MILP over all columns 6202.93 in 6.1 CPU s (it took 90 s to 6199.34
  before).
* focused rounds (:data:`FOCUS_ROUNDS`): on gpuspec33 at 130 % the excess of the Farley bound over the LP was
  nearly all the G2 type's (549 nodes: 3354 of about 3600 units at 50 s); re-pricing the one or two types that
  carry it at fresh master duals brought the best bound, cold, 60 s, from above capacity (0.47 % gap) to 6201.2
  GPUs [3.5]; the rounding MILP during column generation as soon as the bound is within two tolerances of the
  LP (:data:`INCUMBENT_NEAR`; the MILP over all columns only when it can still close the gap) then certified it:
  6196.02 <= 6200.98 (0.080 %) in 52.6 s wall, 47.6 CPU s [4.3].
* Wentges smoothing 0.3 instead of 0.5: no better (gpuspec33 at 130 %, one run each). Not built: a DP pricing,
  partial or Gauss-Seidel pricing rounds, warm pools across seeds.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from fgdopt.instance import Instance
from fgdopt.model import GPU_MILLI
from fgdopt.state import Placement, validate
from formulations.aggregate import Aggregation, aggregate, fill_greedy, node_contents
from formulations.backends import EXACT_HIGHS_OPTIONS, RawResult
from formulations.configs import Columns, _NodeFit, decode, master_model
from formulations.exact import build_exact, exact_solution
from formulations.highs import build_highs, linear_lp, set_start, solve
from formulations.linear import INF
from formulations.solution import Solution

LOG = logging.getLogger(__name__)
DEFAULT_TOL = 0.001
"""Default stopping tolerance: bound - incumbent as a fraction of the GPU capacity (0.1 %: 6.2 GPUs of openb's
6212)."""
SMOOTHING = 0.5
"""Wentges smoothing weight of the best-bound duals in exact pricing rounds (0 = plain Kelley)."""
RC_TOL = 1e-6
PRICING_OPTIONS = {"mip_rel_gap": 1e-6, "mip_abs_gap": 1e-6, "presolve": "off"}
"""HiGHS options of the pricing MILPs. Presolve off: measured at 130 % arrival (openb default, seed 42), one pricing
call per type took 0.7-2.6 s with presolve (nearly all of it HiGHS's presolve of the pattern columns) and
0.08-0.75 s without, same proven prices."""
PRICING_GAP_SHARE = 0.25
"""Share of the stopping tolerance the pricing MILPs of a first pass may leave open: type t's MILP stops within
``share x tol / (T x N_t)`` units of its proven bound, so the Farley bound is at most ``share x tol`` above the one of
exact prices (a type of few nodes prices coarsely, the 549 G2 nodes of openb almost exactly)."""
DUAL_CUTS = True
"""Exchange columns of :func:`dominance_pairs` in the master (dual-optimal inequalities)."""
FIXED_SHARE = 0.5
"""Share of an integer step's seconds for the rounding MILP (every column between its LP value rounded down and
up, exchange columns free: a small problem, the nodes the rounding leaves free); the rest goes to the MILP over
all columns from the best placement, if still needed."""
INCUMBENT_NEAR = 2.0
"""The integer step runs during column generation once the Farley bound is within this many tolerances of the LP
(it was half a tolerance: at gpuspec33 130 % the bound reached 3.4 GPUs above the LP with no MILP run yet)."""
INCUMBENT_EVERY = 0.15
"""Share of the time limit between two integer steps during column generation."""
FOCUS_ROUNDS = 3
"""Focused rounds after each exact round: the (at most two) types carrying most of the Farley bound's excess over
the LP are priced again alone, at fresh master duals, up to this many times (see :func:`type_columns`)."""
PRICING_DOMINANCE = True
"""Pricing leaves out the shapes another shape replaces in a node at no less profit (:class:`TypePricer`)."""
MORE_COLUMNS = 4
"""Improving solutions of a pricing search offered as columns besides its best one."""
QUICK_S = 1.0
"""Seconds a pricing MILP gets in a first pass of an exact round (most finish, proven, well within it)."""
"""A column prices out when its reduced cost exceeds this (units)."""


# -- pricing -----------------------------------------------------------------------------------------
class TypePricer:
    """Pricing of one node type: the best content of one such node for shape profits ``demand - pi``.

    Attributes
    ----------
    fit : the configuration feasibility rule of the type's first node (:class:`~formulations.configs._NodeFit`).
    exact : the exact model of that one node; ``h`` its HiGHS instance (objective changed per call).
    calls, seconds : exact pricing calls and their wall seconds.
    """

    def __init__(self, agg: Aggregation, node: int, threads: int | None = None) -> None:
        instance = agg.instance
        self.agg, self.node, self.threads = agg, node, threads
        self.fit = _NodeFit(agg, node)
        self.shapes = np.array(self.fit.shapes, dtype=np.int64)
        self.cluster = instance.cluster.subset([node])
        self.calls, self.seconds = 0, 0.0
        cluster = instance.cluster
        gpu = agg.column("num_gpu") * agg.column("gpu_milli") / 1000.0
        # resource share of a task in the node (GPU, CPU, memory), for the density order of the greedy
        self.weight = (gpu / max(int(cluster.gpu[node]), 1)
                       + agg.column("cpu_milli") / max(int(cluster.cpu_milli[node]), 1)
                       + agg.column("memory_mib") / max(int(cluster.memory_mib[node]), 1))
        self.most = self._most(agg, node)
        # shapes of this type interchangeable in one node: dom[a, b] (over self.shapes) when a's task fits wherever
        # b's does (same GPU demand, CPU and memory at most b's; equal shapes: the lower index) and a's count never
        # limits one node (a node holds at most as many of a as it has of a: the replacement always exists)
        cpu, mem = agg.column("cpu_milli")[self.shapes], agg.column("memory_mib")[self.shapes]
        gpu = (agg.column("num_gpu") * 10_000 + agg.column("gpu_milli"))[self.shapes]
        within = (gpu[:, None] == gpu[None, :]) & (cpu[:, None] <= cpu[None, :]) & (mem[:, None] <= mem[None, :])
        order = np.arange(len(self.shapes))
        strict = within & (~within.T | (order[:, None] < order[None, :]))
        np.fill_diagonal(strict, False)
        unlimited = self.most[self.shapes] < agg.count[self.shapes]  # the node's resources bind, not the count
        self.replaces = strict & unlimited[:, None]
        self.value_index = {int(v) * agg.unit: d for d, v in enumerate(agg.values.tolist())}
        self.shape_index = {shape: s for s, shape in enumerate(agg.shapes)}

    @staticmethod
    def _most(agg: Aggregation, node: int) -> np.ndarray:
        """Most tasks of each shape one ``node`` can hold (S,) (its GPUs, CPU and memory), at most the count:
        the pricing model needs no more tasks of a shape than that, which keeps it small."""
        cluster = agg.instance.cluster
        gpus = int(cluster.gpu[node])
        by_gpu = np.where(agg.sharing, gpus * (agg.capacity // np.maximum(agg.share_units, 1)),
                          gpus // np.maximum(agg.column("num_gpu"), 1))
        cpu, mem = agg.column("cpu_milli"), agg.column("memory_mib")
        by_cpu = np.where(cpu > 0, int(cluster.cpu_milli[node]) // np.maximum(cpu, 1), by_gpu)
        by_mem = np.where(mem > 0, int(cluster.memory_mib[node]) // np.maximum(mem, 1), by_gpu)
        return np.minimum.reduce([by_gpu, by_cpu, by_mem, agg.count]).astype(np.int64)

    def greedy(self, profit: np.ndarray) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        """Contents built greedily, most profitable shapes first, then best profit per resource share first;
        each with its packing (slot vectors (D,) of its sharing GPUs, filled best-fit)."""
        cand = self.shapes[profit[self.shapes] > RC_TOL]
        return [c for key in (-profit[cand], -profit[cand] / np.maximum(self.weight[cand], 1e-9))
                if (c := self._fill(cand[np.argsort(key, kind="stable")]))[0].any()]

    def _fill(self, order: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """As many tasks of each shape of ``order`` as still fit, in that order (sharing GPUs best-fit)."""
        fit, agg = self.fit, self.agg
        counts = np.zeros(agg.n_shapes, dtype=np.int64)
        cpu, mem, whole = fit.cpu_milli, fit.memory_mib, 0
        loads: list[int] = []
        slots: list[np.ndarray] = []
        for s in order.tolist():
            v = fit.share[s]
            while counts[s] < fit.count[s] and fit.cpu[s] <= cpu and fit.mem[s] <= mem:
                if v:
                    room = [g for g, load in enumerate(loads) if load + v <= fit.capacity]
                    if room:
                        g = max(room, key=loads.__getitem__)
                    elif whole + len(loads) < fit.gpus:
                        g = len(loads)
                        loads.append(0)
                        slots.append(np.zeros(len(agg.values), dtype=np.int64))
                    else:
                        break
                    loads[g] += v
                    slots[g][agg.value_of[s]] += 1
                elif whole + len(loads) + fit.num_gpu[s] <= fit.gpus:
                    whole += fit.num_gpu[s]
                else:
                    break
                counts[s] += 1
                cpu -= fit.cpu[s]
                mem -= fit.mem[s]
        return counts, slots

    def price(self, profit: np.ndarray, time_limit: float,
              abs_gap: float = 0.0) -> tuple[float, list[tuple[np.ndarray, list]], bool]:
        """The pricing MILP: (proven upper bound on the best content's profit, the contents found with their
        packings, best last: every improving solution of the search, so several columns per call; whether the
        bound is proven optimal).

        The model is the exact model of one node (:func:`~formulations.exact.build_exact`) over the shapes of
        positive profit only (the others never raise a content's profit), so its per-GPU patterns are those of
        the sharing demands that matter at these duals.
        """
        t0 = time.perf_counter()
        agg = self.agg
        mine = profit[self.shapes]
        keep = mine > RC_TOL
        if PRICING_DOMINANCE:  # leave out a shape another one replaces at no less profit (never in a best content)
            better = self.replaces & (mine[:, None] >= mine[None, :] - 1e-9) & keep[:, None]
            keep &= ~better.any(axis=0)
        pos = self.shapes[keep]
        if not pos.size:
            return 0.0, [], True
        rows = np.concatenate([agg.rows[s][: self.most[s]] for s in pos.tolist()])
        sub = aggregate(Instance("pricing", self.cluster, agg.instance.tasks.take(np.sort(rows))))
        em = build_exact(sub, symmetry=False)
        back = np.array([self.shape_index[shape] for shape in sub.shapes], dtype=np.int64)
        xcols = em.x[0]
        ok = xcols >= 0
        em.model.obj = np.zeros(em.model.n_vars).tolist()
        for j in np.flatnonzero(ok).tolist():
            em.model.obj[xcols[j]] = float(profit[back[j]])
        options = {**PRICING_OPTIONS, "mip_improving_solution_save": True}
        if abs_gap > 0:  # the bound returned is the search's proven one, so a looser stop keeps it a bound
            options.update(mip_abs_gap=float(abs_gap), mip_rel_gap=0.0)
        h = build_highs(linear_lp(em.model), self.threads, options=options)
        res = solve(h, time_limit)
        status, objective, bound, values = res.status, res.objective, res.bound, res.values
        self.calls += 1
        self.seconds += time.perf_counter() - t0
        if bound is None:
            return math.inf, [], False
        found = [np.array(sol.col_value) for sol in h.getSavedMipSolutions()[:-1]]
        remap = [self.value_index[int(v) * sub.unit] for v in sub.values.tolist()]
        columns = []
        for vals in [*found[-MORE_COLUMNS:], *([values] if values is not None else [])]:
            content = np.zeros(agg.n_shapes, dtype=np.int64)
            content[back[ok]] = np.rint(vals[xcols[ok]])
            used = np.rint(vals[em.p[0]]).astype(np.int64)
            packing = []
            for pat, k in zip(em.patterns[0], used.tolist(), strict=True):
                vec = np.zeros(len(agg.values), dtype=np.int64)
                np.add.at(vec, remap, pat)
                packing += [vec] * k
            columns.append((content, packing))
        return max(bound, objective or 0.0), columns, status == "optimal"


# -- the master --------------------------------------------------------------------------------------
class Master:
    """The configuration LP over the columns generated so far, in one HiGHS instance.

    Rows as in :func:`~formulations.configs.master_model`: node types (``sum y <= N_t``), then shapes
    (``sum a y - z <= count_s``); columns ``z`` (S) first, configuration columns ``y`` appended.
    """

    def __init__(self, agg: Aggregation, threads: int | None = None, dual_cuts: bool = True) -> None:
        self.agg = agg
        self.demand = agg.demand_units.astype(float)
        self.n_types = len(agg.node_types)
        self.sizes = np.array([len(nodes) for nodes in agg.node_types], dtype=float)
        empty = master_model(agg, np.zeros(0, dtype=np.int64), np.zeros((0, agg.n_shapes), dtype=np.int64), False)
        self.h = build_highs(linear_lp(empty), threads)
        self.exchanges = dominance_pairs(agg) if dual_cuts else np.zeros((0, 2), dtype=np.int64)
        for i, j in self.exchanges.tolist():  # exchange column: +1 in shape row i, -1 in shape row j, value 0
            self.h.addCol(0.0, 0.0, INF, 2, np.array([self.n_types + i, self.n_types + j], dtype=np.int32),
                          np.array([1.0, -1.0]))
        self.kinds: list[int] = []
        self.rows: list[np.ndarray] = []
        self.packings: list[list[np.ndarray]] = []
        self.seen: set[tuple[int, bytes]] = set()
        self.y = np.zeros(0)

    def add(self, t: int, content: np.ndarray, packing: list[np.ndarray]) -> bool:
        """Add the column (type ``t``, shape counts ``content``, its sharing GPUs' slot vectors ``packing``)
        unless it is already there."""
        key = (t, content.tobytes())
        if key in self.seen or not content.any():
            return False
        self.seen.add(key)
        used = np.flatnonzero(content)
        idx = np.concatenate([[t], self.n_types + used]).astype(np.int32)
        val = np.concatenate([[1.0], content[used].astype(float)])
        self.h.addCol(float(content @ self.demand), 0.0, INF, len(idx), idx, val)
        self.kinds.append(t)
        self.rows.append(content)
        self.packings.append(packing)
        return True

    def solve(self, time_limit: float) -> tuple[float, np.ndarray, np.ndarray] | None:
        """Solve the LP: (value in units, type duals mu (T,), shape duals pi (S,)), duals >= 0, pi <= demand; None
        if it ran out of time.

        Raises
        ------
        RuntimeError : HiGHS failed otherwise (the LP is always feasible and bounded).
        """
        res = solve(self.h, time_limit, duals=True)
        if res.status == "time_limit":
            return None
        if res.status != "optimal":
            raise RuntimeError(f"configuration master LP: {res.status}")
        self.y = res.values[self.agg.n_shapes + len(self.exchanges):]
        duals = np.abs(res.row_duals)
        return res.objective, duals[: self.n_types], np.minimum(duals[self.n_types:], self.demand)

    def values(self) -> np.ndarray:
        """The configuration columns' values (C,) at the last LP solved (0 for columns added since)."""
        return np.concatenate([self.y, np.zeros(len(self.kinds) - len(self.y))])

    @property
    def columns(self) -> Columns:
        return Columns(np.array(self.kinds, dtype=np.int64),
                       np.array(self.rows, dtype=np.int64).reshape(len(self.rows), self.agg.n_shapes))


def dominance(agg: Aggregation) -> np.ndarray:
    """``dom[i, j]`` (S, S): a task of shape i fits wherever one of shape j does and is worth as much (same GPU
    demand ``num_gpu`` and ``gpu_milli``, CPU and memory at most j's, allowed on every node type j is allowed on),
    i != j; of two equal shapes (e.g. GPU-model lists naming the same models) only the lower index dominates."""
    n = len(agg.shapes)
    if not n:
        return np.zeros((0, 0), dtype=bool)
    first = np.array([int(nodes[0]) for nodes in agg.node_types], dtype=np.int64)
    allowed = agg.allowed[first]  # (T, S)
    cpu, mem = agg.column("cpu_milli"), agg.column("memory_mib")
    gpu = agg.column("num_gpu") * 10_000 + agg.column("gpu_milli")
    same = gpu[:, None] == gpu[None, :]
    covers = ~np.any(allowed[:, None, :] & ~allowed[:, :, None], axis=0)  # [i, j]: i allowed wherever j is
    dom = same & (cpu[:, None] <= cpu[None, :]) & (mem[:, None] <= mem[None, :]) & covers
    index = np.arange(n)
    strict = dom & (~dom.T | (index[:, None] < index[None, :]))
    np.fill_diagonal(strict, False)
    return strict


def dominance_pairs(agg: Aggregation) -> np.ndarray:
    """Pairs (i, j) (K, 2) of shapes where i dominates j (:func:`dominance`: fits wherever j does, worth as much;
    e.g. an unpinned shape and the same shape pinned to GPU models): the transitive reduction of that order.

    Each pair is a dual-optimal inequality ``pi_i >= pi_j`` of the configuration LP (Ben Amor, Desrosiers and
    Valerio de Carvalho, 2006): the master gets an exchange column (+1 in row i, -1 in row j, value 0). Any LP
    solution using it becomes one without it, of the same value, by putting tasks of i in place of the tasks of j
    beyond j's count, so the master's optimum over all configurations is unchanged (the bound stays a bound), while
    the duals are kept inside the dual-optimal region (less oscillation between rounds)."""
    strict = dominance(agg)
    if not strict.size:
        return np.zeros((0, 2), dtype=np.int64)
    through = (strict.astype(np.int32) @ strict.astype(np.int32)) > 0  # i > k > j for some k
    return np.argwhere(strict & ~through).astype(np.int64)


def exchange(agg: Aggregation, counts: np.ndarray, dom: np.ndarray) -> np.ndarray:
    """Per-node shape counts (N, S) with tasks of shapes used beyond their count replaced, as far as possible, by
    tasks of shapes that dominate them (``dom``, :func:`dominance`) and have tasks to spare: what the exchange
    columns of an LP or MILP solution stand for (the GPU packing is unchanged: same per-GPU demand). Which shape
    takes which overflow is a maximum flow (networkx) from the over-used shapes to the spare ones."""
    import networkx as nx

    counts = counts.copy()
    used = counts.sum(axis=0)
    over = np.maximum(used - agg.count, 0)
    spare = np.maximum(agg.count - used, 0)
    if not over.any() or not spare.any():
        return counts
    graph = nx.DiGraph()
    for j in np.flatnonzero(over).tolist():
        graph.add_edge("source", ("j", j), capacity=int(over[j]))
        for i in np.flatnonzero(dom[:, j] & (spare > 0)).tolist():
            graph.add_edge(("j", j), ("i", i), capacity=int(over[j]))
    for i in np.flatnonzero(spare).tolist():
        if graph.has_node(("i", i)):
            graph.add_edge(("i", i), "sink", capacity=int(spare[i]))
    if not graph.has_node("sink"):
        return counts
    _, flow = nx.maximum_flow(graph, "source", "sink")
    for j in np.flatnonzero(over).tolist():
        for (_, i), k in flow.get(("j", j), {}).items():
            for n in np.flatnonzero(counts[:, j]).tolist():
                if k <= 0:
                    break
                moved = min(k, int(counts[n, j]))
                counts[n, j] -= moved
                counts[n, i] += moved
                k -= moved
    return counts


# -- columns carried between instances on one cluster ------------------------------------------------
Column = tuple[int, np.ndarray, list[np.ndarray]]
"""A column of one aggregation: node type index, shape counts (S,), its sharing GPUs' slot vectors (D,)."""


@dataclass(frozen=True)
class ColumnPool:
    """Columns in a form independent of any aggregation, to carry them to another instance on the same cluster
    (e.g. the next, longer arrived prefix: a content that fits a node and the tasks of a prefix fits them at every
    longer prefix too). Each entry: the node type's key ``(cpu_milli, memory_mib, gpu, model)``, the content as
    ``((shape, count), ...)`` and the packing as the milli-GPU demands on each sharing GPU."""

    entries: tuple[tuple[tuple, tuple, tuple], ...] = ()

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def of(cls, agg: Aggregation, columns: Columns, packings: list[list[np.ndarray]]) -> ColumnPool:
        """The pool of ``columns`` (with their ``packings``) of ``agg``."""
        keys = _type_keys(agg)
        milli = (agg.values * agg.unit).tolist()
        entries = []
        for t, row, packing in zip(columns.kind.tolist(), columns.mat, packings, strict=True):
            content = tuple((agg.shapes[s], int(row[s])) for s in np.flatnonzero(row).tolist())
            gpus = tuple(tuple(np.repeat(milli, vec).tolist()) for vec in packing)
            entries.append((keys[t], content, gpus))
        return cls(tuple(entries))

    def columns(self, agg: Aggregation) -> list[Column]:
        """The pool's columns in ``agg`` (those of node types or shapes ``agg`` lacks are left out)."""
        types = {key: t for t, key in enumerate(_type_keys(agg))}
        shapes = {shape: s for s, shape in enumerate(agg.shapes)}
        slot = {int(v) * agg.unit: d for d, v in enumerate(agg.values.tolist())}
        out = []
        for key, content, gpus in self.entries:
            if key not in types or any(shape not in shapes for shape, _ in content):
                continue
            row = np.zeros(agg.n_shapes, dtype=np.int64)
            for shape, k in content:
                row[shapes[shape]] = k
            packing = []
            for gpu in gpus:
                vec = np.zeros(len(agg.values), dtype=np.int64)
                for m in gpu:
                    vec[slot[m]] += 1
                packing.append(vec)
            out.append((types[key], row, packing))
        return out


def _type_keys(agg: Aggregation) -> list[tuple]:
    """``(cpu_milli, memory_mib, gpu, model)`` of each node type of ``agg``."""
    c = agg.instance.cluster
    return [(int(c.cpu_milli[n]), int(c.memory_mib[n]), int(c.gpu[n]), str(c.model[n]))
            for n in (int(nodes[0]) for nodes in agg.node_types)]


def placement_columns(agg: Aggregation, placement: Placement) -> list[Column]:
    """The contents of the used nodes of a feasible ``placement`` as columns (one per node, repeats kept)."""
    counts, slots = node_contents(agg, placement)
    type_of = np.zeros(len(counts), dtype=np.int64)
    for t, nodes in enumerate(agg.node_types):
        type_of[nodes] = t
    return [(int(type_of[n]), counts[n], slots[n]) for n in np.flatnonzero(counts.any(axis=1)).tolist()]


# -- the run -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TypeConfigRun:
    """What :func:`type_columns` found: the ``columns`` and their ``packings``, the best Farley ``bound`` (units,
    None if no exact round completed), the last master LP value ``lp`` (units), ``converged`` (an exact round
    priced nothing out) and the counters of ``info``."""

    columns: Columns
    packings: list[list[np.ndarray]]
    bound: float | None
    lp: float
    converged: bool
    info: dict = field(default_factory=dict)
    y: np.ndarray | None = None


def farley_bound(pi: np.ndarray, prices: np.ndarray, agg: Aggregation) -> float:
    """``sum_s pi_s count_s + sum_t N_t max(0, price_t)`` (units): an upper bound on the configuration LP for any
    ``0 <= pi <= demand`` when ``price_t`` bounds the best content's profit ``sum_s (demand_s - pi_s) a_s`` of
    type t."""
    sizes = np.array([len(nodes) for nodes in agg.node_types], dtype=float)
    return float(pi @ agg.count + sizes @ np.maximum(prices, 0.0))


def type_columns(agg: Aggregation, deadline: float, threads: int | None = None,
                 stop=lambda columns, packings, bound, lp, y: False, initial: list[Column] = (),
                 gap_budget: float = 0.0, dual_cuts: bool = True) -> TypeConfigRun:
    """Column generation for the configuration LP over node types, until convergence, the wall-clock
    ``deadline`` (a ``time.perf_counter()`` value), or ``stop(columns, packings, bound, lp, y)`` returns True
    (called after each exact round with the columns and their packings so far, the best Farley bound and the
    master LP value, both in units, and the columns' values in the last LP). The master starts from the
    ``initial`` columns (e.g. a :class:`ColumnPool` of an earlier run on the same cluster, a warm start's node
    contents) plus two greedy ones per type. ``gap_budget`` (units): how far the first-pass pricing MILPs may stop
    from their proven bounds in all (:data:`PRICING_GAP_SHARE`); ``dual_cuts``: the exchange columns of
    :func:`dominance_pairs` in the master.

    Rounds price greedily at the master duals; only when the greedy adds nothing does an exact round price
    every type with its MILP at Wentges-smoothed duals (which yields the Farley bound), falling back to the
    master duals when the smoothed point prices nothing out (a mis-price).
    """
    t_start = time.perf_counter()
    master = Master(agg, threads, dual_cuts)
    sizes = np.array([len(nodes) for nodes in agg.node_types], dtype=float)
    gaps = gap_budget / (len(sizes) * sizes)  # sum_t N_t gap_t = gap_budget: the Farley bound's slack
    pricers = [TypePricer(agg, int(nodes[0]), threads) for nodes in agg.node_types]
    for t, content, packing in initial:
        master.add(t, content, packing)
    for t, pricer in enumerate(pricers):
        for content, packing in pricer.greedy(master.demand):
            master.add(t, content, packing)
    best_bound, best_pi = math.inf, None
    rounds = exact_rounds = focused = 0
    lp, converged = 0.0, False
    while time.perf_counter() < deadline:
        rounds += 1
        solved = master.solve(deadline - time.perf_counter())
        if solved is None:  # out of time inside the LP: keep the last LP value and the best bound so far
            break
        lp, mu, pi = solved
        added = 0
        for t, pricer in enumerate(pricers):
            for content, packing in pricer.greedy(master.demand - pi):
                if (master.demand - pi) @ content - mu[t] > RC_TOL and master.add(t, content, packing):
                    added += 1
        if added:
            continue
        # exact round: smoothed duals first, the master's if the smoothed point prices nothing out; each pricing
        # MILP first gets QUICK_S seconds (its dual bound is valid anyway), all the time left only if that
        # finds no column without proving every type
        proven = False
        for alpha in ((SMOOTHING, 0.0) if best_pi is not None else (0.0,)):
            sep = alpha * best_pi + (1 - alpha) * pi if alpha else pi
            for quick in (True, False):
                exact_rounds += 1
                prices = np.full(len(pricers), math.inf)
                proven = True
                for t, pricer in enumerate(pricers):
                    left = deadline - time.perf_counter()
                    if left <= 0:
                        proven = False
                        break
                    limit = min(left, QUICK_S) if quick else left
                    prices[t], columns, optimal = pricer.price(master.demand - sep, limit, gaps[t] if quick else 0.0)
                    # within a loose gap a price above the type dual may hide a column: not proven then
                    proven &= optimal and (not quick or gaps[t] <= 0 or prices[t] <= mu[t] + RC_TOL)
                    for column in columns:
                        if (master.demand - pi) @ column[0] - mu[t] > RC_TOL:
                            added += master.add(t, *column)
                bound = farley_bound(sep, prices, agg)
                if bound < best_bound:
                    best_bound, best_pi = bound, sep.copy()
                LOG.debug("round %d exact (alpha %.2f, quick %s): lp %.1f farley %.1f best %.1f added %d, %.1f s",
                          rounds, alpha, quick, lp, bound, best_bound, added, time.perf_counter() - t_start)
                LOG.debug("  N_t (price_t - mu_t) by type: %s; (sep - pi) . count %.1f",
                          np.round(sizes * (np.maximum(prices, 0) - mu), 1).tolist(), float((sep - pi) @ agg.count))
                if added or proven:
                    break
            if added:
                break
        if not added:
            # converged only where every type's proven price is within the master's type dual (a stop within the
            # pricing gaps is not convergence; the Farley bound of that round is the bound then)
            converged = proven and alpha == 0.0 and bool(np.all(prices <= mu + RC_TOL))
            if converged:
                best_bound = min(best_bound, lp)
            break
        if math.isfinite(best_bound) and stop(master.columns, master.packings, best_bound, lp, master.values()):
            break
        # focused rounds: the types carrying most of the Farley bound's excess over the LP (N_t times their price
        # above the type dual: the 549 G2 nodes of openb) priced again alone, at fresh master duals
        excess = sizes * (np.maximum(np.where(np.isfinite(prices), prices, 0.0), 0.0) - mu)
        focus = [t for t in np.argsort(-excess)[:2].tolist() if excess[t] > 0.25 * max(float(excess.sum()), 1e-9)]
        for _ in range(FOCUS_ROUNDS if focus else 0):
            if (left := deadline - time.perf_counter()) <= 0 or (solved := master.solve(left)) is None:
                break
            lp, mu, pi = solved
            new = 0
            for t in focus:
                _, columns, _ = pricers[t].price(master.demand - pi, min(deadline - time.perf_counter(), QUICK_S),
                                                 gaps[t])
                for column in columns:
                    if (master.demand - pi) @ column[0] - mu[t] > RC_TOL:
                        new += master.add(t, *column)
            focused += 1
            if not new:
                break
    info = {"rounds": rounds, "exact_rounds": exact_rounds, "focused_rounds": focused, "columns": len(master.kinds),
            "pricing_calls": sum(p.calls for p in pricers), "pricing_s": round(sum(p.seconds for p in pricers), 3)}
    bound = best_bound if math.isfinite(best_bound) else None
    return TypeConfigRun(master.columns, master.packings, bound, lp, converged, info, master.values())


def integer_placement(agg: Aggregation, columns: Columns, packings: list, time_limit: float, threads: int | None = None,
                      abs_gap: float = 0.999, start: np.ndarray | None = None,
                      lower: np.ndarray | None = None,
                      dom: np.ndarray | None = None,
                      upper: np.ndarray | None = None) -> tuple[RawResult, Placement | None]:
    """The configuration MILP over ``columns`` (HiGHS, stops within ``abs_gap`` units of its own bound; MIP start:
    the column counts ``start`` (C,) of a feasible placement, if given) and its placement decoded with the
    columns' ``packings`` (None if no integer solution was found)."""
    t0 = time.perf_counter()
    model = master_model(agg, columns.kind, columns.mat, integer=True)
    if lower is not None:  # columns fixed at least at these counts (the LP's rounded-down solution)
        model.lb[: len(columns.mat)] = np.asarray(lower, dtype=float).tolist()
    if upper is not None:  # and at most these
        model.ub[: len(columns.mat)] = np.minimum(np.asarray(upper, dtype=float), model.ub[: len(columns.mat)]).tolist()
    pairs = (np.argwhere(dom & ~((dom.astype(np.int32) @ dom.astype(np.int32)) > 0)) if dom is not None and dom.size
             else np.zeros((0, 2), dtype=np.int64))  # the transitive reduction, as in the master
    if len(pairs):  # exchange columns (+1 in shape row i, -1 in row j): decoded by :func:`exchange`
        w = model.add_vars(len(pairs), ub=math.inf, integer=True, obj=0.0)
        n_types = len(agg.node_types)
        extra: dict[int, list[tuple[int, float]]] = {}
        for col, (i, j) in zip(w.tolist(), pairs.tolist(), strict=True):
            extra.setdefault(i, []).append((col, 1.0))
            extra.setdefault(j, []).append((col, -1.0))
        for s_, more in extra.items():
            idx, coef, lo, hi = model.rows[n_types + s_]
            model.rows[n_types + s_] = (np.append(idx, [c for c, _ in more]), np.append(coef, [v for _, v in more]),
                                        lo, hi)
    h = build_highs(linear_lp(model), threads, options={"mip_abs_gap": float(abs_gap), "mip_rel_gap": 0.0})
    if start is not None:
        set_start(h, np.concatenate([start, np.maximum(start @ columns.mat - agg.count, 0), np.zeros(len(pairs))]))
    res = solve(h, time_limit)
    raw = RawResult(res.status, res.values, res.objective, res.bound, time.perf_counter() - t0)
    if res.values is None:
        return raw, None
    adjust = (lambda counts: exchange(agg, counts, dom)) if len(pairs) else None
    return raw, decode(agg, columns, res.values[: len(columns.mat)], packings, adjust)


def with_columns(columns: Columns, packings: list, more: list[Column]) -> tuple[Columns, list]:
    """``columns`` and their ``packings`` plus those of ``more`` they lack (e.g. a placement's node contents)."""
    have = {(int(t), row.tobytes()) for t, row in zip(columns.kind, columns.mat, strict=True)}
    new: dict[tuple[int, bytes], Column] = {}
    for t, row, packing in more:
        key = (int(t), row.astype(np.int64).tobytes())
        if key not in have:
            new.setdefault(key, (t, row, packing))
    if not new:
        return columns, packings
    kinds = np.concatenate([columns.kind, [t for t, _, _ in new.values()]]).astype(np.int64)
    mat = np.vstack([columns.mat, np.array([r for _, r, _ in new.values()], dtype=np.int64)])
    return Columns(kinds, mat), [*packings, *[p for _, _, p in new.values()]]


LNS_NODES = 12
"""Nodes re-solved together by one step of :func:`improve` (the exact model of a dozen nodes solves in seconds)."""
LNS_STEP_S = 4.0
"""Seconds one step of :func:`improve` gets at most."""


def improve(instance: Instance, placement: Placement, deadline: float, threads: int | None = None,
            target_milli: float = 0.0, seed: int = 0) -> tuple[Placement, int, int | None]:
    """Large-neighbourhood search on a feasible ``placement`` until the wall-clock ``deadline`` or it allocates
    ``target_milli``: each step frees a few nodes (:data:`LNS_NODES`: half those with the most idle milli-GPU, half
    at random) and re-places their tasks plus every unallocated one on them with the exact model
    (:func:`_exact_step`, HiGHS, the current content as MIP start), keeping the result when it
    allocates more. A cluster of at most :data:`LNS_NODES` nodes is one neighbourhood, the whole instance: it gets
    one step with all the time left (a second step would solve the same model again).

    Returns the placement (validated by each step's run), the number of improving steps, and, when that one step of
    the whole instance was solved to optimality, its proven bound on the allocated milli-GPU (None otherwise)."""
    rng = np.random.default_rng(seed)
    tasks, cluster = instance.tasks, instance.cluster
    gpu = tasks.gpu_demand
    node, gpus = placement.node.copy(), list(placement.gpus)
    better = 0
    whole = cluster.n_nodes <= LNS_NODES
    while (left := deadline - time.perf_counter()) > 1.0 and int(gpu[node >= 0].sum()) < target_milli:
        idle = cluster.gpu * GPU_MILLI - np.bincount(node[node >= 0], weights=gpu[node >= 0], minlength=cluster.n_nodes)
        k = min(LNS_NODES, cluster.n_nodes)
        most = np.argsort(-idle + rng.random(cluster.n_nodes), kind="stable")[: k // 2]
        rest = np.setdiff1d(np.arange(cluster.n_nodes), most)
        nodes = np.sort(np.concatenate([most, rng.choice(rest, k - len(most), replace=False)]))
        rows = np.flatnonzero(np.isin(node, nodes) | ((node < 0) & (gpu > 0)))
        position = np.full(cluster.n_nodes, -1, dtype=np.int64)
        position[nodes] = np.arange(len(nodes))
        sub = Instance("lns", cluster.subset(nodes), tasks.take(rows))
        local = Placement(np.where(node[rows] >= 0, position[np.maximum(node[rows], 0)], -1),
                          tuple(gpus[i] for i in rows.tolist()))
        found, bound = _exact_step(sub, local, left - 0.5 if whole else min(LNS_STEP_S, left - 0.5), threads)
        if found is not None and found.allocated_milli(sub.tasks) > local.allocated_milli(sub.tasks):
            better += 1
            for j, i in enumerate(rows.tolist()):
                to = int(found.node[j])
                node[i], gpus[i] = (int(nodes[to]), found.gpus[j]) if to >= 0 else (-1, ())
        if whole:  # every task of GPU demand was in the model: its proven bound is the instance's
            return Placement(node, tuple(gpus)), better, bound
    return Placement(node, tuple(gpus)), better, None


def _exact_step(sub: Instance, start: Placement, time_limit: float,
                threads: int | None) -> tuple[Placement | None, int | None]:
    """The exact model of ``sub`` (:func:`~formulations.exact.build_exact`) by HiGHS from the MIP start ``start``
    (a feasible placement of ``sub``): its placement, completed by ``fill_greedy`` and validated (None if HiGHS
    found none), and HiGHS's bound on the allocated milli-GPU of ``sub`` when it proved its solution optimal (None
    otherwise)."""
    agg = aggregate(sub)
    em = build_exact(agg)
    h = build_highs(linear_lp(em.model), threads, options={**EXACT_HIGHS_OPTIONS, "mip_abs_gap": 0.999,
                                                          "mip_rel_gap": 0.0})
    set_start(h, em.encode(start))
    res = solve(h, time_limit)
    bound = math.floor(res.bound + 1e-6) * agg.unit if res.status == "optimal" and res.bound is not None else None
    if res.values is None:
        return None, bound
    placement = fill_greedy(sub, em.decode(res.values))  # the CPU-only tasks the model leaves out go back too
    validate(sub.cluster, sub.tasks, placement)
    return placement, bound


def column_counts(columns: Columns, used: list[Column]) -> np.ndarray:
    """How many of the columns ``used`` (node contents of a placement) each of ``columns`` is (C,)."""
    index = {(int(t), row.tobytes()): c for c, (t, row) in enumerate(zip(columns.kind, columns.mat, strict=True))}
    y = np.zeros(len(columns.mat), dtype=np.int64)
    for t, row, _ in used:
        y[index[t, row.astype(np.int64).tobytes()]] += 1
    return y


def run_type_configs(instance: Instance, method: str = "config-types", time_limit: float = 60.0,
                     warm_start: Placement | None = None, threads: int | None = None,
                     tol: float = DEFAULT_TOL) -> Solution:
    """Certified placement by the configuration model over node types (see the module docstring and
    :func:`solve_type_configs`, without a column pool)."""
    return solve_type_configs(instance, method, time_limit, warm_start, threads, tol)[0]


def solve_type_configs(instance: Instance, method: str = "config-types", time_limit: float = 60.0,
                       warm_start: Placement | None = None, threads: int | None = None, tol: float = DEFAULT_TOL,
                       pool: ColumnPool | None = None) -> tuple[Solution, ColumnPool]:
    """Certified placement by the configuration model over node types, and the columns it generated.

    Column generation starts from the ``pool`` (columns of an earlier run on the same cluster), the warm start's
    node contents and greedy columns, and runs until its Farley bound is within half the tolerance of the master
    LP; then the configuration MILP over the columns (MIP start: the warm start) gives the incumbent, and the run
    stops if bound - incumbent is within the tolerance, else generation goes on (and the MILP is tried again at
    convergence).

    Parameters
    ----------
    instance : the cluster and tasks.
    time_limit : wall-clock seconds for the whole run (column generation, MILP, decoding, validation).
    warm_start : a feasible placement: incumbent floor, initial columns and MIP start (e.g. the best online
        policy's, or the optimum of a shorter prefix of the same tasks).
    threads : HiGHS threads (default: HiGHS's own choice; its MIP search is serial).
    tol : stop once bound - incumbent <= ``tol`` x GPU capacity (milli-GPU); 0 asks for a proof.
    pool : columns to start from (:class:`ColumnPool`, e.g. the one returned for a shorter prefix).

    Returns
    -------
    The Solution (kind ``exact``): ``optimal`` when the bound equals the objective, ``feasible`` when stopped within
    ``tol``, ``time_limit`` otherwise; ``info`` holds the column-generation counters, ``lp_milli`` (the last
    master LP value), ``pool`` (columns taken from the pool), ``mip_calls`` and ``mip_s``. And the pool of every
    column of this run (the given pool's included).
    """
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    agg = aggregate(instance)
    unit = agg.unit
    target = max(tol * instance.cluster.gpu_capacity_milli / unit, 0.0)
    best: dict = {"value": -math.inf, "placement": None, "mip_calls": 0, "mip_s": 0.0, "tried": None, "lns": 0,
                  "at": -math.inf, "proven": math.inf}
    warm_columns: list[Column] = []
    if warm_start is not None:
        best["value"] = warm_start.allocated_milli(instance.tasks) / unit
        warm_columns = placement_columns(agg, warm_start)
    pooled = pool.columns(agg) if pool is not None else []
    dom = dominance(agg) if DUAL_CUTS else None

    def consider(decoded: Placement | None) -> None:
        if decoded is not None:
            placement = fill_greedy(instance, decoded)
            value = placement.allocated_milli(instance.tasks) / unit
            if value > best["value"] or best["placement"] is None:
                best["value"], best["placement"] = value, placement

    def incumbent(columns: Columns, packings: list, bound: float, lp: float, seconds: float,
                  y: np.ndarray | None = None, full: bool = True) -> None:
        t1 = time.perf_counter()
        gap = max(0.999, 0.5 * (target - (bound - lp)))  # the MILP's own bound is at most the LP
        start_from = placement_columns(agg, best["placement"]) if best["placement"] is not None else warm_columns
        columns_, packings_ = with_columns(columns, packings, start_from)
        if y is not None and y.any():  # first the rounding MILP: each column between its LP value's floor and ceil
            lower = np.concatenate([np.floor(y + 1e-9), np.zeros(len(columns_.mat) - len(y))]).astype(np.int64)
            upper = np.concatenate([np.ceil(y - 1e-9), np.zeros(len(columns_.mat) - len(y))])
            _, decoded = integer_placement(agg, columns_, packings_, FIXED_SHARE * seconds, threads, gap, lower,
                                           lower, dom, upper)
            best["mip_calls"] += 1
            consider(decoded)
        left = seconds - (time.perf_counter() - t1)
        # then over all columns from the best placement, where that can still close the gap: after column
        # generation, and while the LP is more than half a tolerance above the incumbent
        if full and bound - best["value"] > target and lp - best["value"] > target / 2 and left > 0.5:
            start_from = placement_columns(agg, best["placement"]) if best["placement"] is not None else warm_columns
            columns_, packings_ = with_columns(columns, packings, start_from)
            start = column_counts(columns_, start_from) if start_from else None
            _, decoded = integer_placement(agg, columns_, packings_, left, threads, gap, start, dom=dom)
            best["mip_calls"] += 1
            consider(decoded)
        best["mip_s"] += time.perf_counter() - t1
        best["tried"] = len(columns.mat)

    def stop(columns: Columns, packings: list, bound: float, lp: float, y: np.ndarray) -> bool:
        if bound - best["value"] <= target:
            return True
        # the integer step once the bound is near the LP and the LP well above the incumbent; again only after
        # INCUMBENT_EVERY of the time limit (each call is a few seconds: the rounding MILP is small)
        recent = time.perf_counter() - best["at"] < INCUMBENT_EVERY * time_limit
        if (bound - lp > INCUMBENT_NEAR * target or lp - best["value"] <= target / 2
                or best["tried"] == len(columns.mat) or recent):
            return False
        best["at"] = time.perf_counter()
        incumbent(columns, packings, bound, lp, min(max(deadline - time.perf_counter(), 0.5), 0.25 * time_limit), y,
                  full=bound - lp <= target / 2)
        return bound - best["value"] <= target

    run = None
    if agg.n_shapes:
        run = type_columns(agg, deadline - 0.1 * time_limit, threads, stop, pooled + warm_columns,
                           PRICING_GAP_SHARE * target, DUAL_CUTS)
        if run.bound is None or run.bound - best["value"] > target:  # the MILP again, then the LNS
            lp = run.lp if run.bound is None else run.bound
            incumbent(run.columns, run.packings, lp, run.lp, max(0.5 * (deadline - time.perf_counter()), 0.5), run.y)
            if best["placement"] is not None and lp - best["value"] > target:
                goal = (math.floor(lp + 1e-6) - target) * unit
                best["placement"], best["lns"], proven = improve(instance, best["placement"], deadline, threads, goal)
                best["value"] = best["placement"].allocated_milli(instance.tasks) / unit
                if proven is not None:
                    best["proven"] = proven / unit
    trivial = min(int(instance.tasks.gpu_demand.sum()), instance.cluster.gpu_capacity_milli) / unit
    bound = min(trivial, best["proven"], math.inf if run is None or run.bound is None else run.bound)
    # a converged column generation proves the LP, not the integer optimum: within the tolerance, or stopped
    status = "optimal" if run is None else ("feasible" if bound - best["value"] <= target else "time_limit")
    info = {**(run.info if run else {}), "lp_milli": round(run.lp * unit, 1) if run else 0.0, "pool": len(pooled),
            "mip_calls": best["mip_calls"], "mip_s": round(best["mip_s"], 3), "lns_steps": best["lns"],
            "tol_milli": round(target * unit)}
    raw = RawResult(status, None, None, bound, time.perf_counter() - t0)
    placement = best["placement"] if best["placement"] is not None else Placement.empty(len(instance.tasks))
    out = ColumnPool.of(agg, run.columns, run.packings) if run is not None else (pool or ColumnPool())
    return exact_solution(instance, method, "highs", raw, placement, warm_start, unit, t0, info), out
