"""Exact defragmentation: the fewest moves that admit the waiting tasks (objectives (a), (b) of
:mod:`fgdopt.defrag`), as one MILP solved by CBC or HiGHS (PuLP) or CP-SAT.

Model (integers; GPU quantities in units of :attr:`~formulations.aggregate.Aggregation.unit` milli-GPU,
shapes, allowed nodes and sharing values from :func:`~formulations.aggregate.aggregate` with CPU-only
shapes included). Running tasks are grouped by (node, GPU set, shape); such tasks are interchangeable.

* ``k[r]`` in ``0..|r|`` — tasks of running group r that *stay* (same node, same GPUs);
  moves = ``sum_r (|r| - k[r])``;
* ``y[n,s]`` — tasks of shape s newly placed on node n (moved in or admitted), where s fits n empty;
* ``a[s]`` in ``0..waiting_s`` — admitted waiting tasks of shape s;
* ``u[n,g,d]`` — new sharing tasks of value d on GPU g of node n; ``w[n,g]`` binary — GPU g of n is
  taken by a new whole-GPU task.

Rows: per shape, new = moved + admitted (``sum_n y[n,s] + sum_{r of s} k[r] - a[s] = running_s``); per
node and value, ``sum_{s of value d} y[n,s] = sum_g u[n,g,d]``; per node, ``sum_{s whole} num_gpu_s y[n,s]
= sum_g w[n,g]``; per GPU, staying load + ``sum_d value_d u[n,g,d] + C w[n,g] <= C`` (``C`` = one GPU;
a staying whole-GPU task counts ``C`` on each of its GPUs, so a new whole-GPU task only takes a GPU
that ends up completely free); per node, CPU and memory of staying plus new tasks; (b) moves ``<= K``.
GPUs that start empty on a node are interchangeable: their new loads are ordered (symmetry breaking).

GPU pattern blocks (``patterns=True``; by default only when all blocks together hold at most
:data:`PATTERN_COLUMNS` columns: a 16-node openb-mix state needs 2,000–5,700, a 64-node openb slice with 15
sharing values 86,000–88,000, which leaves HiGHS no time to search; there the search runs on the plain rows and
the blocks' LP relaxation, 7–11 s on such a slice, gives a second bound, in :func:`solve_defrag`) replace each
GPU's capacity row by the GPU's hull: one binary column per (``l_r`` tasks of each running group r on the GPU
leave, a maximal per-GPU pattern of new sharing tasks, from :mod:`formulations.aggregate`, fitting the room this
leaves), plus "everything left, a new whole-GPU task takes the GPU"; exactly one column per GPU; per group r on
the GPU, ``sum l_r * column = |r| - k[r]``; ``u[n,g,d] <= sum q_d * column`` and ``w[n,g] <=`` the whole-GPU
column. (b) keeps only the combinations with ``sum_r l_r <= K``. A GPU whose leave combinations exceed
:data:`LEAVE_LIMIT` keeps the capacity row. With the plain row, a fraction of a move makes a GPU's whole free
sliver usable (a 400 milli room takes a 250 and half a 300); with the blocks a fraction f of a leave combination
only buys f of a pattern that fits its room.

Valid inequalities (``strong=True``; for GPUs without a pattern block, and the node-level ones) close the
LP's cheapest escape, fractional moves: per GPU g and running
group r on g, ``|r| w[n,g] + k[r] <= |r|`` (a new whole-GPU task needs all of r gone from g), and per GPU g
and sharing value d, ``u[n,g,d] <= floor(res_g / v_d) + sum_{r on g} ceil(v_r / v_d) (|r| - k[r])`` (``res_g``
the GPU's free units if everything stays; valid since ``floor(x + y) <= floor(x) + ceil(y)``); a whole-GPU
shape taking all ``G_n`` GPUs of node n has ``y[n,s] <= w[n,g]`` for every g, and shapes taking more than half
of them sum to at most 1 (without these the LP admits half of an 8-GPU task by freeing 4 GPUs).

Node rows (the escape the per-GPU blocks leave: a fraction of a move frees the same fraction of a node's CPU and
memory, enough for a whole waiting task; the LP spreads K moves over many CPU-blocked nodes):

* touch binaries ((b) with ``K < R``): ``t[n]`` = "some running task leaves node n", ``t[n] <= L_n <=
  min(K, R_n) t[n]`` (``L_n = sum_{r on n} (|r| - k[r])``, ``R_n`` its running tasks), ``|r| - k[r] <=
  min(|r|, K) t[n]``, ``sum_n t[n] <= K`` (each touched node costs a move). They do not move the LP bound; they
  give the branch-and-bound 16-odd binaries that decide which nodes are opened, instead of fractional ``k``.
* net-gain envelope (``envelope=True``; off by default, see below): ``W_n[m]``, ``m = 0..min(K, R_n)``, is the
  solver's proven bound on node n's *net gain* (GPU demand of the tasks newly placed on n minus that of the tasks
  that left n) when at most m of its running tasks leave: a small exact MILP of the node alone
  (:func:`_node_values`; CPU, memory, GPUs, any new task from the pool). Every plan has ``net_n <= W_n[L_n]``,
  hence ``net_n <=`` the upper concave hull of ``W_n`` at ``L_n`` (one row per hull segment, integer coefficients,
  :func:`_envelope_rows`). A node whose one CPU-only task blocks its free GPU has ``W = [0, 1000 milli]``: half a
  move buys half a GPU, not a whole one. The node MILPs get :data:`NODE_TIME_LIMIT` each and, in
  :func:`solve_defrag`, :data:`ENVELOPE_SHARE` of the time limit in total (nodes after that get no rows; a stopped
  node MILP gives its bound, still valid). Off by default: it lowers the root bound (7950 -> 7760 milli on a
  16-node state) but on a quiet machine every 16-node (a) and (b) run of :mod:`experiments.bench_defrag` is proven
  faster without it (all 18 in at most 46 s against 17 of 18 with it; the missing one, 6790 <= 6820 at 60 s, is
  proven in 27 s without), and without it the model does not depend on the clock.

Objectives (maximized, integer): (a) ``a[s] = waiting_s`` fixed, maximize ``sum k`` (the solver's bound
B gives moves ``>= R - B``, R = running tasks); (b) maximize ``(R + 1) * sum_s demand_s a[s] + sum k``:
one more unit of admitted demand outweighs every move, so the optimum admits the most demand and, among
those, moves least; the solver's bound B gives admitted ``<= floor(B / (R + 1))`` units. The third key of
(b) (less fragmentation) is not optimized: the plan's F(M) is measured and reported, never proven least.

Every plan is decoded to concrete tasks and GPUs and checked by :func:`fgdopt.defrag.apply_plan`; status
and bounds come from the solver (:mod:`formulations.backends`): ``optimal`` only when the solver's bound
meets the plan, ``time_limit`` with the bound otherwise, ``infeasible`` when (a) has no plan.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from fgdopt.defrag import DefragProblem, Move, Plan, apply_plan
from fgdopt.frag import Workload, cluster_fragmentation
from fgdopt.instance import Instance
from fgdopt.state import UNPLACED
from formulations.aggregate import Aggregation, _patterns, aggregate
from formulations.backends import EXACT_HIGHS_OPTIONS, solve_model
from formulations.highs import HighsResult, build_highs, linear_lp, solve
from formulations.linear import LinearModel
from formulations.solution import STATUSES

OBJECTIVES = ("a", "b")
LEAVE_LIMIT = 256   # most leave combinations of one GPU's running groups in a pattern block
PATTERN_COLUMNS = 20_000   # patterns=None: the most pattern-block columns a model gets (else plain rows)
NODE_TIME_LIMIT = 2.0   # seconds per node-value MILP of the envelope rows (its bound is used if it stops)
ENVELOPE_SHARE = 0.2    # solve_defrag: nodes whose envelope starts after this share of the time limit get none
HULL_LP_SHARE = 0.25    # solve_defrag: the most of the time limit the pattern-block LP bound may take


@dataclass(frozen=True, eq=False)
class DefragSolution:
    """One exact defragmentation run.

    Attributes
    ----------
    objective : ``"a"`` (admit all, fewest moves) or ``"b"`` (most admitted demand within ``budget`` moves).
    solver : ``cbc``, ``highs`` or ``cpsat``.
    status : in :data:`formulations.solution.STATUSES`: ``optimal`` (the solver's bound meets the plan),
        ``time_limit`` (stopped on the limit; ``plan`` is the incumbent or None), ``infeasible`` ((a) only:
        no plan admits every waiting task), ``feasible`` (a claimed optimum the bound does not confirm), ``error``.
    plan : a plan checked by :func:`fgdopt.defrag.apply_plan`, or None.
    moves, admitted_milli : the plan's moves and admitted milli-GPU (None without a plan).
    bound_milli : (b) proven upper bound on admitted milli-GPU; (a) the waiting demand (admitted by any plan).
    moves_bound : (a) proven lower bound on the moves; (b) None.
    gap : (b) ``(bound_milli - admitted_milli) / bound_milli``; (a) ``(moves - moves_bound) / moves`` (0 if 0).
    frag_milli : F(M) of the final state (milli-GPU), measured, not optimized.
    budget : the move budget of (b) (None for (a)); wall_s : seconds, model building included.
    info : model size and the solver's own status and wall time.
    """

    objective: str
    solver: str
    status: str
    plan: Plan | None
    moves: int | None
    admitted_milli: int | None
    bound_milli: int | None
    moves_bound: int | None
    gap: float | None
    frag_milli: float | None
    budget: int | None
    wall_s: float
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} not in {STATUSES}")
        if self.status == "optimal" and self.plan is None:
            raise ValueError("an optimal run needs a plan")
        if self.bound_milli is not None and self.admitted_milli is not None and self.bound_milli < self.admitted_milli:
            raise ValueError(f"bound {self.bound_milli} < admitted {self.admitted_milli}")


@dataclass
class DefragModel:
    """The built model and its column maps (``-1`` = no column)."""

    problem: DefragProblem
    objective: str
    agg: Aggregation
    model: LinearModel
    groups: list[np.ndarray]          # running task indices of each group
    group_shape: np.ndarray
    k: np.ndarray                     # (R_groups,)
    y: np.ndarray                     # (N, S)
    a: np.ndarray                     # (S,)
    u: np.ndarray                     # (N, G, D)
    w: np.ndarray                     # (N, G)
    weight: int                       # (b): multiplier of admitted units
    lam: dict = field(default_factory=dict)  # (n, g) -> (groups on g, [(column, leaving per group, pattern)])
    touch: dict = field(default_factory=dict)  # node -> its "a running task leaves" binary
    blocks_dropped: bool = False      # patterns=None and the pattern blocks were over PATTERN_COLUMNS

    @property
    def n_running(self) -> int:
        return int(sum(len(g) for g in self.groups))

    def decode(self, values: np.ndarray) -> Plan:
        """The concrete plan of a column vector (tasks of a shape taken in arrival order)."""
        v = np.rint(values).astype(np.int64)
        agg = self.agg
        pool: list[list[int]] = [[] for _ in range(agg.n_shapes)]
        for r, members in enumerate(self.groups):
            stay = int(v[self.k[r]])
            pool[self.group_shape[r]].extend(members[stay:].tolist())
        waiting_of = self._waiting_by_shape()
        for s in range(agg.n_shapes):
            if self.a[s] >= 0:
                pool[s].extend(waiting_of[s][: int(v[self.a[s]])])
        new_node: dict[int, tuple[int, tuple[int, ...]]] = {}
        n_nodes, n_gpus, n_values = self.u.shape
        for n in range(n_nodes):
            slots = {d: [g for g in range(n_gpus) if self.u[n, g, d] >= 0 for _ in range(int(v[self.u[n, g, d]]))]
                     for d in range(n_values)}
            whole = [g for g in range(n_gpus) if self.w[n, g] >= 0 and v[self.w[n, g]] > 0]
            for s in np.flatnonzero(self.y[n] >= 0).tolist():
                shape = agg.shapes[s]
                for _ in range(int(v[self.y[n, s]])):
                    i = pool[s].pop(0)
                    if shape.kind == "sharing":
                        gpus: tuple[int, ...] = (slots[int(agg.value_of[s])].pop(0),)
                    elif shape.kind == "whole":
                        gpus, whole = tuple(whole[: shape.num_gpu]), whole[shape.num_gpu:]
                    else:
                        gpus = ()
                    new_node[i] = (n, gpus)
        before = self.problem.placement
        moves, admits = [], []
        for i, (n, gpus) in sorted(new_node.items()):
            if before.node[i] == UNPLACED:
                admits.append(Move(i, n, gpus))
            elif n != before.node[i] or tuple(sorted(gpus)) != tuple(sorted(before.gpus[i])):
                moves.append(Move(i, n, gpus))
        return Plan(tuple(moves), tuple(admits))

    def _waiting_by_shape(self) -> list[list[int]]:
        index = {int(i): s for s, rows in enumerate(self.agg.rows) for i in rows.tolist()}
        out: list[list[int]] = [[] for _ in range(self.agg.n_shapes)]
        for i in self.problem.waiting.tolist():
            out[index[i]].append(i)
        return out

    def relabel(self, plan: Plan) -> Plan:
        """The same plan with each node's initially empty GPUs re-labelled so that their new loads do not
        increase with the GPU index (the symmetry rows); moves and admitted tasks are unchanged."""
        p, cap = self.problem, self.agg.capacity
        busy = {(int(p.placement.node[i]), g) for i in p.running.tolist() for g in p.placement.gpus[i]}
        load: dict[tuple[int, int], int] = {}
        for m in (*plan.moves, *plan.admits):
            t = p.tasks[m.task]
            for g in m.gpus:
                units = cap if t.kind == "whole" else t.gpu_milli // self.agg.unit
                load[m.node, g] = load.get((m.node, g), 0) + units
        mapping: dict[tuple[int, int], int] = {}
        for n in range(p.cluster.n_nodes):
            empty = [g for g in range(int(p.cluster.gpu[n])) if (n, g) not in busy]
            by_load = sorted(empty, key=lambda g: -load.get((n, g), 0))
            mapping.update({(n, old): new for new, old in zip(empty, by_load, strict=True)})

        def moved(m: Move) -> Move:
            return Move(m.task, m.node, tuple(sorted(mapping.get((m.node, g), g) for g in m.gpus)))

        return Plan(tuple(moved(m) for m in plan.moves), tuple(moved(m) for m in plan.admits))

    def encode(self, plan: Plan) -> np.ndarray:
        """A column vector for a valid ``plan`` (a MIP start), its empty GPUs re-labelled by :meth:`relabel`;
        the caller still checks the start and drops it if it violates a row."""
        agg, p = self.agg, self.problem
        plan = self.relabel(plan)
        apply_plan(p, plan)  # raises on an invalid plan
        moved = {m.task for m in plan.moves}
        shape_of = np.full(len(p.tasks), -1, dtype=np.int64)
        for s, rows in enumerate(agg.rows):
            shape_of[rows] = s
        values = np.zeros(self.model.n_vars)
        for r, members in enumerate(self.groups):
            values[self.k[r]] = sum(1 for i in members.tolist() if i not in moved)
        for m in (*plan.moves, *plan.admits):
            s = int(shape_of[m.task])
            values[self.y[m.node, s]] += 1
            shape = agg.shapes[s]
            if shape.kind == "sharing":
                values[self.u[m.node, m.gpus[0], agg.value_of[s]]] += 1
            elif shape.kind == "whole":
                for g in m.gpus:
                    values[self.w[m.node, g]] = 1
        for m in plan.admits:
            values[self.a[int(shape_of[m.task])]] += 1
        for m in plan.moves:
            n = int(p.placement.node[m.task])
            if n in self.touch:
                values[self.touch[n]] = 1
        for (n, g), (on_g, cols) in self.lam.items():
            leave = tuple(len(self.groups[r]) - int(values[self.k[r]]) for r in on_g)
            new = np.array([values[c] if c >= 0 else 0 for c in self.u[n, g]])
            whole = self.w[n, g] >= 0 and values[self.w[n, g]] > 0
            fits = [c for c, lv, q in cols if lv == leave and (q is None if whole else q is not None and
                                                                (q >= new).all())]
            if fits:
                values[fits[0]] = 1
        return values


def _gpu_block(agg: Aggregation, sizes: list[int], load: list[int], caps: np.ndarray, vals: list[int],
               whole: bool, max_leave: int) -> list[tuple[tuple[int, ...], np.ndarray | None]] | None:
    """The columns of one GPU's pattern block: per (how many of each running group on the GPU leave, at most
    ``max_leave`` in all) a maximal pattern of new sharing tasks (values ``vals``, counts within ``caps``) fitting
    the room this leaves, plus, if ``whole``, "everything left, a new whole-GPU task takes it" (pattern None).
    ``sizes`` and ``load`` (units per task on the GPU) are the groups'. None if the leave combinations exceed
    :data:`LEAVE_LIMIT` (the GPU keeps the plain capacity row); empty if nothing new can go on the GPU."""
    if not vals and not whole:
        return []
    ranges = [range(min(size, max_leave) + 1) for size in sizes]
    if math.prod(len(r) for r in ranges) > LEAVE_LIMIT:
        return None
    empty = np.zeros((1, len(agg.values)), dtype=np.int64)
    cols: list[tuple[tuple[int, ...], np.ndarray | None]] = []
    for leave in itertools.product(*ranges):
        if sum(leave) > max_leave:
            continue
        room = agg.capacity - sum(c * (size - lv) for c, size, lv in zip(load, sizes, leave, strict=True))
        if room < 0:
            continue
        pats = _patterns(tuple(agg.values.tolist()), tuple(caps.tolist()), room, True) if vals else empty
        cols += [(leave, q) for q in pats]
        if whole and room == agg.capacity:
            cols.append((leave, None))
    return cols


def _add_gpu_block(model: LinearModel, lam: dict, gpu: tuple[int, int], on_g: list[int], sizes: list[int],
                   block: list[tuple[tuple[int, ...], np.ndarray | None]], k: np.ndarray, u_g: np.ndarray,
                   w_g: int) -> None:
    """Add GPU ``gpu`` = (node, g)'s pattern ``block`` (:func:`_gpu_block`): one binary per column, exactly one
    chosen, linked to the stay counts ``k`` of the groups ``on_g`` (sizes ``sizes``), the node's new-sharing
    columns ``u_g`` of g per value and its whole-GPU column ``w_g``."""
    ids = model.add_vars(len(block), ub=1)
    cols = [(int(c), leave, q) for c, (leave, q) in zip(ids.tolist(), block, strict=True)]
    model.add_row(ids, np.ones(len(ids)), lo=1, hi=1)
    for j, r in enumerate(on_g):                    # leaving tasks of group r: |r| - k[r]
        model.add_row(np.append(ids, k[r]), [lv[j] for _, lv, _ in cols] + [1], lo=sizes[j], hi=sizes[j])
    for d in np.flatnonzero(u_g >= 0).tolist():
        model.add_row(np.append(ids, u_g[d]), [-(0 if q is None else int(q[d])) for _, _, q in cols] + [1], hi=0)
    if w_g >= 0:
        model.add_row(np.append(ids, w_g), [-(q is None) for _, _, q in cols] + [1], hi=0)
    lam[gpu] = (on_g, cols)


def _node_values(agg: Aggregation, n: int, on_n: list[int], sizes: list[int], group_shape: np.ndarray,
                 group_gpus: list[tuple[int, ...]], pool: np.ndarray, mine: np.ndarray, max_leave: int,
                 time_limit: float, deadline: float = math.inf) -> list[int] | None:
    """``W[m]`` for ``m = 0..min(max_leave, R_n)``: an upper bound (the solver's proven bound, in units) on node
    ``n``'s *net gain* when at most ``m`` of its running tasks leave: GPU demand of the tasks newly placed on it
    (moved in or admitted; at most ``pool[s]`` of each shape s in ``mine``) minus that of the tasks that left.
    Each is a small exact MILP of the node alone (same rows as :func:`build_defrag`: per-GPU capacity with what
    stays, CPU, memory). ``on_n``, ``sizes``, ``group_gpus``: the node's running groups, their sizes and GPU sets.
    None if a run fails or the clock passes ``deadline`` (``time.perf_counter()``; then the caller adds no
    envelope rows)."""
    cap = agg.capacity
    cluster = agg.instance.cluster
    g_n = int(cluster.gpu[n])
    cpu, mem, num_gpu = agg.column("cpu_milli"), agg.column("memory_mib"), agg.column("num_gpu")
    r_n = sum(sizes)
    top = min(max_leave, r_n)
    share = mine[agg.sharing[mine]]
    whole = mine[agg.whole[mine]]
    vals = sorted(set(agg.value_of[share].tolist()))
    lm = LinearModel(f"node-{n}")
    lv = lm.add_vars(len(on_n), ub=np.minimum(sizes, top), obj=-agg.demand_units[group_shape[on_n]].astype(float))
    y = lm.add_vars(len(mine), ub=pool[mine], obj=agg.demand_units[mine].astype(float))
    col = dict(zip(mine.tolist(), y.tolist(), strict=True))
    u = {d: lm.add_vars(g_n, ub=cap // int(agg.values[d])) for d in vals}
    for d in vals:
        of_d = share[agg.value_of[share] == d]
        lm.add_row(np.concatenate([[col[s] for s in of_d.tolist()], u[d]]),
                   np.concatenate([np.ones(len(of_d)), -np.ones(g_n)]), lo=0, hi=0)
    w = lm.add_vars(g_n, ub=1) if len(whole) and g_n else None
    if w is not None:
        lm.add_row(np.concatenate([[col[s] for s in whole.tolist()], w]),
                   np.concatenate([num_gpu[whole], -np.ones(g_n)]), lo=0, hi=0)
    for per, hi in ((cpu, cluster.cpu_milli[n]), (mem, cluster.memory_mib[n])):
        stay = sum(int(per[group_shape[r]]) * size for r, size in zip(on_n, sizes, strict=True))
        lm.add_row(np.concatenate([lv, y]), np.concatenate([-per[group_shape[on_n]], per[mine]]).astype(float),
                   hi=int(hi) - stay)
    for g in range(g_n):
        on_g = [j for j in range(len(on_n)) if g in group_gpus[j]]
        load = [cap if agg.whole[group_shape[on_n[j]]] else int(agg.share_units[group_shape[on_n[j]]]) for j in on_g]
        idx = [lv[j] for j in on_g] + [u[d][g] for d in vals] + ([w[g]] if w is not None else [])
        coef = [-c for c in load] + [int(agg.values[d]) for d in vals] + ([cap] if w is not None else [])
        lm.add_row(idx, coef, hi=cap - sum(c * sizes[j] for j, c in zip(on_g, load, strict=True)))
    empty = [g for g in range(g_n) if not any(g in gpus for gpus in group_gpus)]
    for g1, g2 in zip(empty[:-1], empty[1:], strict=True):    # empty GPUs are interchangeable: order their loads
        idx = [u[d][g1] for d in vals] + [u[d][g2] for d in vals] + ([w[g1], w[g2]] if w is not None else [])
        coef = ([int(agg.values[d]) for d in vals] + [-int(agg.values[d]) for d in vals]
                + ([cap, -cap] if w is not None else []))
        lm.add_row(idx, coef, lo=0)
    budget_row = len(lm.rows)
    lm.add_row(lv, np.ones(len(on_n)), hi=top)     # the leave budget m, changed per run below
    highs = build_highs(linear_lp(lm), threads=1, options={"mip_rel_gap": 0.0, "mip_abs_gap": 0.999})

    def run(m: int) -> int | None:
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        if on_n:
            highs.changeRowBounds(budget_row, -highs.inf, float(m))
        return _small_bound(solve(highs, min(time_limit, left)))

    best = run(top)
    out: list[int] = []
    for m in range(top):              # W is nondecreasing in m and at most W[top]: stop once it gets there
        value = best if out and out[-1] == best else run(m)
        if value is None or best is None:
            return None
        out.append(min(value, best))
    return None if best is None else out + [best]


def _small_bound(res: HighsResult) -> int | None:
    """The proven upper bound (floored) of a finished run of a node's MILP (:func:`_node_values`), or None."""
    if res.status == "optimal":
        value = max(res.objective, res.bound)
    elif res.status == "time_limit" and res.bound is not None:
        value = res.bound
    else:
        return None
    return math.floor(value + 1e-6)


def _envelope_rows(values: list[int]) -> list[tuple[int, int, int, int]]:
    """The upper concave hull of the points ``(m, values[m])``: per segment ``(m1, v1, m2, v2)``; a valid
    ``new <= v1 + (v2 - v1) / (m2 - m1) * (L - m1)`` for every integer ``L`` in range; the last, flat piece
    ``new <= values[-1]`` is ``(m, v, m + 1, v)``."""
    hull: list[tuple[int, int]] = []
    for m, v in enumerate(values):
        while len(hull) >= 2:
            (m1, v1), (m2, v2) = hull[-2], hull[-1]
            if (v2 - v1) * (m - m1) <= (v - v1) * (m2 - m1):   # the middle point lies on or below the chord
                hull.pop()
            else:
                break
        hull.append((m, v))
    segs = [(m1, v1, m2, v2) for (m1, v1), (m2, v2) in zip(hull[:-1], hull[1:], strict=True)]
    m, v = hull[-1]
    return segs + [(m, v, m + 1, v)]


def build_defrag(problem: DefragProblem, objective: str, budget: int | None = None,
                 symmetry: bool = True, strong: bool = True, patterns: bool | None = None,
                 envelope: bool = False, envelope_time: float = math.inf) -> DefragModel:
    """Build the model of the module docstring for ``objective`` (``"a"`` or ``"b"`` with ``budget`` moves);
    ``strong`` adds the valid inequalities of the module docstring (they tighten the LP bound); ``patterns``
    replaces each GPU's capacity row by its pattern block (:func:`_gpu_block`; the per-GPU hull): True always,
    False never, None (default) when the blocks hold at most :data:`PATTERN_COLUMNS` columns in all."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if objective == "b" and (budget is None or budget < 0):
        raise ValueError(f"objective 'b' needs a budget >= 0, got {budget}")
    t_build = time.perf_counter()
    cluster, tasks, placement = problem.cluster, problem.tasks, problem.placement
    agg = aggregate(Instance("defrag", cluster, tasks), include_cpu_only=True)
    cap = agg.capacity
    shape_of = np.full(len(tasks), -1, dtype=np.int64)
    for s, rows in enumerate(agg.rows):
        shape_of[rows] = s
    n_nodes, n_shapes, n_gpus, n_values = cluster.n_nodes, agg.n_shapes, cluster.max_gpus, len(agg.values)
    model = LinearModel(f"defrag-{objective}")
    lam: dict = {}
    touch: dict[int, int] = {}
    max_leave = budget if objective == "b" else len(problem.running)
    # running groups
    keyed: dict[tuple, list[int]] = {}
    for i in problem.running.tolist():
        keyed.setdefault((int(placement.node[i]), tuple(sorted(placement.gpus[i])), int(shape_of[i])), []).append(i)
    groups = [np.array(v, dtype=np.int64) for v in keyed.values()]
    keys = list(keyed)
    groups_on: list[list[int]] = [[] for _ in range(cluster.n_nodes)]
    for r, key in enumerate(keys):
        groups_on[key[0]].append(r)
    group_shape = np.array([key[2] for key in keyed], dtype=np.int64)
    n_running = len(problem.running)
    k = model.add_vars(len(groups), ub=np.array([len(g) for g in groups]), obj=1.0)
    running_s = np.bincount(group_shape, weights=[len(g) for g in groups], minlength=n_shapes).astype(np.int64)
    waiting_s = np.bincount(shape_of[problem.waiting], minlength=n_shapes).astype(np.int64)
    # admitted
    weight = n_running + 1
    a = np.full(n_shapes, -1, dtype=np.int64)
    for s in np.flatnonzero(waiting_s).tolist():
        if objective == "a":
            a[s] = model.add_vars(1, lb=waiting_s[s], ub=waiting_s[s])[0]
        elif agg.demand_units[s] > 0:
            a[s] = model.add_vars(1, ub=waiting_s[s], obj=float(weight * agg.demand_units[s]))[0]
    pool = running_s + np.where(a >= 0, waiting_s, 0)
    # new placements
    y = np.full((n_nodes, n_shapes), -1, dtype=np.int64)
    ni, si = np.nonzero(agg.allowed & (pool[None, :] > 0))
    y[ni, si] = model.add_vars(len(ni), ub=pool[si])
    u = np.full((n_nodes, n_gpus, n_values), -1, dtype=np.int64)
    w = np.full((n_nodes, n_gpus), -1, dtype=np.int64)
    num_gpu, cpu, mem = agg.column("num_gpu"), agg.column("cpu_milli"), agg.column("memory_mib")
    g_of_node = cluster.gpu

    def node_shapes(n: int) -> tuple[np.ndarray, np.ndarray, list[int], np.ndarray]:
        """Shapes that may newly go on n: all, sharing ones, their values, and the per-GPU caps per value."""
        mine = np.flatnonzero(y[n] >= 0)
        share = mine[agg.sharing[mine]]
        vals = sorted(set(agg.value_of[share].tolist()))
        return mine, share, vals, np.where(np.isin(np.arange(n_values), vals), agg.caps(n), 0)

    def gpu_groups(n: int, g: int) -> tuple[list[int], list[int]]:
        """The running groups on GPU g of n and their load on it (units per task)."""
        on_g = [r for r in groups_on[n] if g in keys[r][1]]
        return on_g, [cap if agg.whole[group_shape[r]] else int(agg.share_units[group_shape[r]]) for r in on_g]

    blocks: dict[tuple[int, int], list] = {}
    dropped = False
    if patterns is not False:
        for n in range(n_nodes):
            mine, _, vals, caps_n = node_shapes(n)
            whole_n = bool(agg.whole[mine].any())
            for g in range(int(g_of_node[n])):
                on_g, load = gpu_groups(n, g)
                block = _gpu_block(agg, [len(groups[r]) for r in on_g], load, caps_n, vals, whole_n, max_leave)
                if block is not None:
                    blocks[n, g] = block
        if patterns is None and sum(len(b) for b in blocks.values()) > PATTERN_COLUMNS:
            blocks, dropped = {}, True
    for n in range(n_nodes):
        mine, share, vals, _ = node_shapes(n)
        g_n = int(g_of_node[n])
        for d in vals:
            u[n, :g_n, d] = model.add_vars(g_n, ub=cap // int(agg.values[d]))
            of_d = share[agg.value_of[share] == d]
            model.add_row(np.concatenate([y[n, of_d], u[n, :g_n, d]]),
                          np.concatenate([np.ones(len(of_d)), -np.ones(g_n)]), lo=0, hi=0)
        whole = mine[agg.whole[mine]]
        if len(whole) and g_n:
            w[n, :g_n] = model.add_vars(g_n, ub=1)
            model.add_row(np.concatenate([y[n, whole], w[n, :g_n]]),
                          np.concatenate([num_gpu[whole], -np.ones(g_n)]), lo=0, hi=0)
        # staying groups on this node
        on_n = groups_on[n]
        stay_cpu = [(k[r], cpu[group_shape[r]]) for r in on_n]
        stay_mem = [(k[r], mem[group_shape[r]]) for r in on_n]
        for rows_, per, hi in ((stay_cpu, cpu, cluster.cpu_milli[n]), (stay_mem, mem, cluster.memory_mib[n])):
            idx = np.concatenate([np.array([c for c, _ in rows_], dtype=np.int64), y[n, mine]])
            coef = np.concatenate([np.array([x for _, x in rows_], dtype=float), per[mine].astype(float)])
            model.add_row(idx, coef, hi=int(hi))
        r_n = sum(len(groups[r]) for r in on_n)
        if envelope and len(mine) and time.perf_counter() - t_build < envelope_time:
            # net gain of node n <= the concave envelope of W[moves out of n]
            values = _node_values(agg, n, on_n, [len(groups[r]) for r in on_n], group_shape,
                                  [keys[r][1] for r in on_n], pool, mine, max_leave, NODE_TIME_LIMIT,
                                  t_build + envelope_time)
            if values is not None:
                dem_r = agg.demand_units[group_shape[on_n]]
                held = int(sum(int(d) * len(groups[r]) for r, d in zip(on_n, dem_r, strict=True)))
                for m1, v1, m2, v2 in _envelope_rows(values):
                    # (m2 - m1) (new - left) <= (m2 - m1) v1 + (v2 - v1) (L_n - m1), L_n = R_n - sum k,
                    # left = held - sum dem_r k_r
                    dm, dv = m2 - m1, v2 - v1
                    model.add_row(np.concatenate([y[n, mine], [k[r] for r in on_n]]).astype(np.int64),
                                  np.concatenate([dm * agg.demand_units[mine], dm * dem_r + dv]).astype(float),
                                  hi=dm * v1 + dv * (r_n - m1) + dm * held)
        if on_n and objective == "b" and budget < n_running:   # t_n: some running task leaves node n
            t_n = int(model.add_vars(1, ub=1)[0])
            touch[n] = t_n
            model.add_row([k[r] for r in on_n] + [t_n], [1] * len(on_n) + [min(max_leave, r_n)], lo=r_n)
            model.add_row([k[r] for r in on_n] + [t_n], [1] * len(on_n) + [1], hi=r_n)
            for r in on_n:
                model.add_row([k[r], t_n], [1, min(len(groups[r]), max_leave)], lo=len(groups[r]))
        starts_empty = []
        for g in range(g_n):
            on_g, load = gpu_groups(n, g)
            if not on_g:
                starts_empty.append(g)
            if (n, g) in blocks:
                if blocks[n, g]:
                    _add_gpu_block(model, lam, (n, g), on_g, [len(groups[r]) for r in on_g], blocks[n, g], k,
                                   u[n, g], w[n, g])
                continue
            idx, coef = [k[r] for r in on_g], list(load)
            staying = list(zip(on_g, load, strict=True))
            res = cap - sum(c * len(groups[r]) for r, c in staying)
            if strong:
                for r, _ in staying:     # a new whole-GPU task takes g only if nothing stays on g
                    if w[n, g] >= 0:
                        model.add_row([w[n, g], k[r]], [len(groups[r]), 1], hi=len(groups[r]))
                for d in vals:           # integer rounding: value-d tasks fit floor(res / v_d) + what moves free
                    v_d = int(agg.values[d])
                    ceil_rd = [-(-c // v_d) for _, c in staying]
                    model.add_row([u[n, g, d]] + [k[r] for r, _ in staying], [1] + ceil_rd,
                                  hi=res // v_d + sum(cr * len(groups[r]) for (r, _), cr in
                                                      zip(staying, ceil_rd, strict=True)))
            for d in vals:
                idx.append(u[n, g, d])
                coef.append(int(agg.values[d]))
            if w[n, g] >= 0:
                idx.append(w[n, g])
                coef.append(cap)
            model.add_row(idx, coef, hi=cap)
        if strong and w[n, 0] >= 0:
            for s in whole[num_gpu[whole] == g_n].tolist():   # a task taking every GPU of n needs each one
                for g in range(g_n):
                    model.add_row([y[n, s], w[n, g]], [1, -1], hi=0)
            big = whole[2 * num_gpu[whole] > g_n]
            if len(big) > 1:                                    # at most one task taking over half the GPUs
                model.add_row(y[n, big], np.ones(len(big)), hi=1)
        if symmetry:
            for g1, g2 in zip(starts_empty[:-1], starts_empty[1:], strict=True):
                idx = [u[n, g1, d] for d in vals] + [u[n, g2, d] for d in vals]
                coef = [int(agg.values[d]) for d in vals] + [-int(agg.values[d]) for d in vals]
                if w[n, g1] >= 0:
                    idx += [w[n, g1], w[n, g2]]
                    coef += [cap, -cap]
                model.add_row(idx, coef, lo=0)
    # conservation per shape
    for s in range(n_shapes):
        on = np.flatnonzero(y[:, s] >= 0)
        mine = np.flatnonzero(group_shape == s)
        idx = np.concatenate([y[on, s], k[mine], [a[s]] if a[s] >= 0 else []]).astype(np.int64)
        coef = np.concatenate([np.ones(len(on)), np.ones(len(mine)), [-1.0] if a[s] >= 0 else []])
        model.add_row(idx, coef, lo=int(running_s[s]), hi=int(running_s[s]))
    if objective == "b" and budget < n_running:
        model.add_row(k, np.ones(len(k)), lo=n_running - budget)
        if touch:
            model.add_row(list(touch.values()), np.ones(len(touch)), hi=budget)
    return DefragModel(problem, objective, agg, model, groups, group_shape, k, y, a, u, w, weight, lam, touch,
                       dropped)


def solve_defrag(problem: DefragProblem, objective: str, budget: int | None = None, *, solver: str = "highs",
                 time_limit: float = 60.0, threads: int | None = 1, warm_start: Plan | None = None,
                 workload: Workload | None = None, options: dict | None = None,
                 patterns: bool | None = None, envelope: bool = False) -> DefragSolution:
    """Solve objective (a) or (b) exactly and return a checked :class:`DefragSolution`.

    Parameters
    ----------
    problem : the running placement and the waiting tasks.
    objective : ``"a"`` (admit every waiting task, fewest moves) or ``"b"`` (at most ``budget`` moves,
        most admitted milli-GPU, then fewest moves).
    solver : ``highs`` (default), ``cbc`` or ``cpsat``.
    time_limit : wall-clock seconds for the whole run. threads : solver threads (1 by default).
    warm_start : a valid plan (e.g. a heuristic's) given as MIP start / hint; it is also kept as the
        incumbent if the solver returns nothing better.
    workload : target workload of the reported F(M); default ``Workload.from_tasks(problem.tasks)``.
    options : solver parameters by name (HiGHS default: ``EXACT_HIGHS_OPTIONS``).
    patterns : per-GPU pattern blocks (True), the plain capacity rows (False), or (None, the default) the
        blocks when they hold at most :data:`PATTERN_COLUMNS` columns (see :func:`build_defrag`); when they
        hold more, the search runs on the plain rows and the LP relaxation of the model with the blocks
        (at most :data:`HULL_LP_SHARE` of ``time_limit``) gives a second bound: the smaller one is reported.

    Raises
    ------
    ValueError : unknown objective, (b) without a budget >= 0.

    Examples
    --------
    >>> from fgdopt.model import Cluster, TaskSet
    >>> from fgdopt.state import Placement
    >>> c = Cluster([8000, 8000], [1024, 1024], [1, 1], ["T4", "T4"])
    >>> t = TaskSet([1000, 1000, 1000], [0, 0, 0], [1, 1, 1], [500, 500, 1000])
    >>> p = DefragProblem(c, t, Placement([0, 1, -1], [(0,), (0,), ()]))
    >>> sol = solve_defrag(p, "a")
    >>> sol.status, sol.moves, sol.moves_bound
    ('optimal', 1, 1)
    """
    t0 = time.perf_counter()
    dm = build_defrag(problem, objective, budget, patterns=patterns, envelope=envelope,
                      envelope_time=ENVELOPE_SHARE * time_limit)
    workload = workload if workload is not None else Workload.from_tasks(problem.tasks)
    start = None
    if warm_start is not None:
        start = dm.encode(warm_start)
        try:
            dm.model.check(start)
        except ValueError:
            start = None
    info = {"n_vars": dm.model.n_vars, "n_rows": len(dm.model.rows), "unit": dm.agg.unit,
            "n_running": dm.n_running, "n_waiting": len(problem.waiting)}
    hull_bound = None
    if dm.blocks_dropped:           # the search runs on plain rows; the pattern blocks' LP still bounds it
        hull = build_defrag(problem, objective, budget, patterns=True, envelope=False).model.relaxed()
        lp = solve_model(hull, "highs", HULL_LP_SHARE * time_limit, threads)
        info.update(hull_lp_status=lp.status, hull_lp_s=lp.wall_s, hull_lp_vars=hull.n_vars)
        if lp.status == "optimal" and lp.bound is not None:
            hull_bound = info["hull_lp_bound"] = lp.bound
    if options is None and solver == "highs":
        options = EXACT_HIGHS_OPTIONS
    remaining = max(time_limit - (time.perf_counter() - t0), 0.5)
    raw = solve_model(dm.model, solver, remaining, threads, start, abs_gap=0.999, options=options)
    plan = dm.decode(raw.values) if raw.values is not None else None
    if warm_start is not None and (plan is None or _key(dm, warm_start) > _key(dm, plan)):
        plan = warm_start
    info.update(solver_status=raw.status, solver_wall_s=raw.wall_s, solver_bound=raw.bound)
    bounds = [b for b in (raw.bound, hull_bound) if b is not None]
    bound = min(bounds) if bounds else None
    return _solution(dm, objective, budget, solver, raw.status, bound, plan, workload, t0, info)


def _key(dm: DefragModel, plan: Plan) -> int:
    """The model objective of a plan: (a) staying tasks; (b) weight * admitted units + staying tasks."""
    stay = dm.n_running - plan.n_moves
    if dm.objective == "a":
        return stay
    return dm.weight * (plan.admitted_milli(dm.problem.tasks) // dm.agg.unit) + stay


def _solution(dm: DefragModel, objective: str, budget: int | None, solver: str, raw_status: str,
              raw_bound: float | None, plan: Plan | None, workload: Workload, t0: float,
              info: dict) -> DefragSolution:
    problem, unit = dm.problem, dm.agg.unit
    moves = admitted = frag = None
    if plan is not None:
        final = apply_plan(problem, plan)
        if budget is not None and plan.n_moves > budget:
            raise ValueError(f"defrag-{objective}: plan makes {plan.n_moves} moves, budget {budget}")
        moves, admitted = plan.n_moves, plan.admitted_milli(problem.tasks)
        frag = cluster_fragmentation(final, workload).total
        if objective == "a" and admitted != problem.waiting_milli():
            raise ValueError("defrag-a: the plan does not admit every waiting task")
    bound = None if raw_bound is None or not math.isfinite(raw_bound) else math.floor(raw_bound + 1e-6)
    status = raw_status
    if plan is not None and raw_status == "infeasible":
        raise ValueError(f"defrag-{objective}: solver says infeasible but a valid plan exists")
    if plan is None and raw_status == "optimal":
        status = "error"
    key = _key(dm, plan) if plan is not None else None
    if bound is not None and key is not None and bound < key:
        raise ValueError(f"defrag-{objective}: solver bound {bound} below the plan's objective {key}")
    if key is not None:
        if bound is not None and bound == key:
            status = "optimal"
        elif status == "optimal":
            status = "feasible"
    if status == "infeasible":
        bound_milli = moves_bound = gap = None
    elif objective == "a":
        bound_milli = problem.waiting_milli()
        moves_bound = None if bound is None else max(0, dm.n_running - bound)
        gap = None if moves is None or moves_bound is None else ((moves - moves_bound) / moves if moves else 0.0)
    else:
        moves_bound = None
        bound_milli = None if bound is None else (bound // dm.weight) * unit
        if bound_milli is not None:
            bound_milli = min(bound_milli, problem.waiting_milli())
            if admitted is not None:
                bound_milli = max(bound_milli, admitted)
        gap = (None if bound_milli is None or admitted is None
               else ((bound_milli - admitted) / bound_milli if bound_milli else 0.0))
    return DefragSolution(objective, solver, status, plan, moves, admitted, bound_milli, moves_bound, gap, frag,
                          budget if objective == "b" else None, time.perf_counter() - t0, info)

