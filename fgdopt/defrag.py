"""Defragmentation: move a few running tasks so that waiting tasks fit (checkpoint/restore plans).

The problem, in the terms of docs/semantics.md
----------------------------------------------
A :class:`DefragProblem` is a cluster, a task list, a feasible :class:`~fgdopt.state.Placement` of it
(the *running* tasks are the placed ones) and the *waiting* tasks (unplaced ones, by default all of
them that fit some node of the cluster when it is empty). Units as in docs/semantics.md: milli-cores, MiB,
milli-GPU (one GPU = 1000).

A :class:`Plan` lists *moves* (a running task to a new node and GPUs) and *admits* (a waiting task to a
node and GPUs). Semantics, checkpoint/restore: every moved task is stopped at once, its CPU, memory and
GPU share freed; then every moved and admitted task is placed. The plan is valid iff the final state
passes docs/semantics.md "Feasibility", i.e. replaying the plan through :class:`~fgdopt.state.ClusterState`
(``remove`` every moved task, then ``place`` every moved and admitted one) raises nothing. Order within
the plan does not matter: after the removals, capacities only add up. A *move* changes a task's node or
its GPU set (a task restored to its own node and GPUs is not a move, and a plan may not list it).

Objectives (both count moved tasks, not migrated bytes):

(a) admit every waiting task with the fewest moves (or report that no plan admits them all);
(b) with at most ``K`` moves, admit the most waiting GPU demand (milli-GPU); ties: fewer moves, then less
    fragmentation F(M) of the final state by the shared evaluator (:func:`fgdopt.frag.cluster_fragmentation`).
    Waiting CPU-only tasks carry no GPU demand and are left waiting in (b).

The exact models of (a) and (b) are in :mod:`formulations.defrag`; this module holds the values, the
validation and the heuristics (no solver is imported here).

Heuristics (:func:`defrag`)
---------------------------
Each heuristic picks at most ``budget`` *victims*, evicts them, then re-places waiting tasks and victims
with an online policy (FGD by default, :func:`fgdopt.policies.make_policy`). The three descheduling
policies of the reference simulator (``pkg/simulator/deschedule.go``, ``deschedule_utils.go`` of
``hkust-adsl/kubernetes-scheduler-simulator``), rebuilt from what they do:

``cos-sim`` (reference ``cosSim``)
    Candidate nodes: free CPU < 2000 milli-cores and at least one GPU with more than 500 milli-GPU free
    (CPU-starved nodes that strand GPU). Visited by total free milli-GPU, descending (ties: node index;
    the reference uses the node name). On each, one victim: the task minimizing the cosine similarity of
    the node's free vector *after its removal* (free CPU, free milli-GPU) with the task's demand vector
    (CPU, total milli-GPU); only similarities in [0, 1) qualify (the reference starts its minimum at 1);
    ties: the first task in arrival order. One victim per node, one pass, until the budget is spent.
``frag-one-pod`` (reference ``fragOnePod``)
    Nodes visited by F_n(M), descending (ties: node index; the reference sorts an unordered map, so its
    ties are arbitrary). On each, one victim: the task whose removal lowers F_n(M) most, the decrease
    truncated to an integer as the reference does (``int64``); only a strictly positive decrease
    qualifies; ties: first in arrival order. One victim per node, one pass.
``frag-multi-pod`` (reference ``fragMultiPod``)
    A max-heap of nodes keyed by F_n(M). Pop the most fragmented node, evict its victim (the rule of
    ``frag-one-pod``), push the node back with its new F_n(M); a node without a victim leaves the heap.
    Repeat until the budget is spent or the heap is empty. Heap ties: node index.

and fgdopt's own

``fgd-guided``
    Global greedy on the fragmentation gradient: repeatedly evict the running task, anywhere in the
    cluster, whose removal lowers its node's F_n(M) most (exact float decrease, must be > 0; ties: node
    index, then arrival order), recompute that node's candidates, until the budget is spent.

Where we had to choose (the reference re-schedules only the evicted pods, with the cluster's scheduler,
and does not retry the pods that failed before): here the waiting tasks with GPU demand are offered
first (arrival order), then the victims (eviction order), each to the policy on the evolving state. A
victim the policy cannot place goes back to its own node and GPUs if they are still free. If a victim then
fits nowhere, the victims are offered first instead; if one still fits nowhere, the last victim is kept in
place (dropped from the list) and the re-placement is retried. The plan never loses a
running task. A victim the policy puts back on its own node and GPUs is not counted as a move. ``none``
is the budget-0 baseline: offer the waiting tasks without evicting anything. :func:`extend_plan` runs a
heuristic after a given plan (e.g. an exact plan of a smaller budget) with the moves left.

Examples
--------
>>> from fgdopt.model import Cluster, TaskSet
>>> from fgdopt.state import Placement
>>> c = Cluster([8000, 8000], [1024, 1024], [1, 1], ["T4", "T4"])
>>> t = TaskSet([1000, 1000, 1000], [0, 0, 0], [1, 1, 1], [500, 500, 1000])
>>> p = DefragProblem(c, t, Placement([0, 1, -1], [(0,), (0,), ()]))
>>> plan = Plan(moves=(Move(1, 0, (0,)),), admits=(Move(2, 1, (0,)),))
>>> apply_plan(p, plan).allocated_milli, plan.n_moves
(2000, 1)
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from fgdopt.frag import Workload, cluster_fragmentation, fragmentation_rows, node_access, node_fragmentations
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import Policy, make_policy
from fgdopt.state import UNPLACED, ClusterState, InfeasiblePlacement, Placement, validate

HEURISTICS = ("none", "cos-sim", "frag-one-pod", "frag-multi-pod", "fgd-guided")
"""Names accepted by :func:`defrag`."""

COS_SIM_CPU_BAR = 2000
"""``cos-sim``: a node is a candidate when its free CPU is below this (milli-cores), as in the reference."""
COS_SIM_GPU_BAR = 500
"""``cos-sim``: ... and one of its GPUs has more than this free (milli-GPU), as in the reference."""


class Move(NamedTuple):
    """Task ``task`` (index in the problem's task list) goes to ``node`` on GPUs ``gpus``."""

    task: int
    node: int
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """A checkpoint/restore plan: ``moves`` of running tasks and ``admits`` of waiting ones (see module doc)."""

    moves: tuple[Move, ...] = ()
    admits: tuple[Move, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "moves", tuple(Move(int(m[0]), int(m[1]), tuple(int(g) for g in m[2]))
                                                for m in self.moves))
        object.__setattr__(self, "admits", tuple(Move(int(m[0]), int(m[1]), tuple(int(g) for g in m[2]))
                                                 for m in self.admits))

    @property
    def n_moves(self) -> int:
        return len(self.moves)

    def admitted_milli(self, tasks: TaskSet) -> int:
        """GPU demand of the admitted tasks in milli-GPU."""
        return int(sum(int(tasks.gpu_demand[a.task]) for a in self.admits))


@dataclass(frozen=True, eq=False)
class DefragProblem:
    """A running placement and the waiting tasks (see module docstring).

    Attributes
    ----------
    cluster, tasks : the cluster and every task (running and waiting).
    placement : a feasible placement of ``tasks``; the placed tasks are the running ones.
    waiting : int64 array of the waiting task indices (unplaced); default every unplaced task that fits some
        node of the cluster when it is empty (one that fits none can never be admitted, and is left out).

    Raises
    ------
    ValueError
        if the placement is infeasible, a waiting index is unknown, repeated or placed, or a waiting task given
        in ``waiting`` fits no node even when the node is empty (the message names the task).
    """

    cluster: Cluster
    tasks: TaskSet
    placement: Placement
    waiting: np.ndarray | None = None

    def __post_init__(self) -> None:
        try:
            validate(self.cluster, self.tasks, self.placement)
        except InfeasiblePlacement as exc:
            raise ValueError(f"the running placement is infeasible: {exc}") from None
        empty = ClusterState(self.cluster, self.tasks)
        if self.waiting is None:
            waiting = np.array([i for i in np.flatnonzero(self.placement.node == UNPLACED).tolist()
                                if empty.feasible_nodes(self.tasks[i]).any()], dtype=np.int64)
        else:
            waiting = np.asarray(self.waiting, dtype=np.int64).reshape(-1)
        seen: set[int] = set()
        for i in waiting.tolist():
            if not 0 <= i < len(self.tasks):
                raise ValueError(f"waiting task {i} is unknown (the task list has {len(self.tasks)} tasks)")
            if i in seen:
                raise ValueError(f"waiting task {i} ({self.tasks.names[i]}) is listed twice")
            seen.add(i)
            if self.placement.node[i] != UNPLACED:
                raise ValueError(f"waiting task {i} ({self.tasks.names[i]}) is already running on node "
                                 f"{int(self.placement.node[i])}")
            if not empty.feasible_nodes(self.tasks[i]).any():
                raise ValueError(f"waiting task {i} ({self.tasks.names[i]}) fits no node even when it is empty: "
                                 f"{self.tasks[i]}")
        waiting.setflags(write=False)
        object.__setattr__(self, "waiting", waiting)

    @classmethod
    def from_state(cls, state: ClusterState, waiting: Sequence[int] | None = None) -> DefragProblem:
        """The problem of ``state`` (copied: later changes to ``state`` do not reach it)."""
        return cls(state.cluster, state.tasks, state.placement(), None if waiting is None else np.asarray(waiting))

    @property
    def running(self) -> np.ndarray:
        """Indices of the running (placed) tasks."""
        return np.flatnonzero(self.placement.node != UNPLACED)

    def state(self) -> ClusterState:
        """A fresh :class:`ClusterState` of the running placement."""
        return validate(self.cluster, self.tasks, self.placement)

    def waiting_milli(self) -> int:
        """GPU demand of the waiting tasks in milli-GPU."""
        return int(self.tasks.gpu_demand[self.waiting].sum())


def apply_plan(problem: DefragProblem, plan: Plan) -> ClusterState:
    """The final state of ``plan`` (checkpoint/restore semantics), checked by the one feasibility rule.

    Returns a new :class:`ClusterState`; ``problem`` is immutable and never changes.

    Raises
    ------
    InfeasiblePlacement
        naming the task: unknown task, a move of a task that is not running, an admit of a task that is
        not waiting, a task listed twice, a move to the task's current node and GPUs, or a final state
        that breaks docs/semantics.md "Feasibility" (an overfilled GPU, CPU or memory, a wrong GPU model or count, ...).
    """
    tasks = problem.tasks
    waiting = set(problem.waiting.tolist())
    seen: set[int] = set()

    def name(i: int) -> str:
        return f"task {i} ({tasks.names[i]})"

    for kind, items in (("move", plan.moves), ("admit", plan.admits)):
        for m in items:
            if not 0 <= m.task < len(tasks):
                raise InfeasiblePlacement(f"plan {kind}s task {m.task}, which is unknown "
                                          f"(the task list has {len(tasks)} tasks)")
            if m.task in seen:
                raise InfeasiblePlacement(f"plan lists {name(m.task)} twice")
            seen.add(m.task)
            if kind == "move":
                if problem.placement.node[m.task] == UNPLACED:
                    raise InfeasiblePlacement(f"plan moves {name(m.task)}, which is not running")
                if (m.node == problem.placement.node[m.task]
                        and tuple(sorted(m.gpus)) == tuple(sorted(problem.placement.gpus[m.task]))):
                    raise InfeasiblePlacement(f"plan moves {name(m.task)} to its current node and GPUs")
            elif m.task not in waiting:
                raise InfeasiblePlacement(f"plan admits {name(m.task)}, which is not waiting")
    state = problem.state()
    for m in plan.moves:
        state.remove(m.task)
    for m in (*plan.moves, *plan.admits):
        state.place(m.task, m.node, m.gpus)
    return state


def plan_between(problem: DefragProblem, final: ClusterState) -> Plan:
    """The plan that turns the problem's placement into ``final`` (which must keep every running task)."""
    before = problem.placement
    moves, admits = [], []
    for i in problem.running.tolist():
        node, gpus = int(final.node_of[i]), final.gpus_of[i]
        if node == UNPLACED:
            raise InfeasiblePlacement(f"task {i} ({problem.tasks.names[i]}) was running and is no longer placed")
        if node != before.node[i] or tuple(sorted(gpus)) != tuple(sorted(before.gpus[i])):
            moves.append(Move(i, node, gpus))
    for i in problem.waiting.tolist():
        if final.node_of[i] != UNPLACED:
            admits.append(Move(i, int(final.node_of[i]), final.gpus_of[i]))
    return Plan(tuple(moves), tuple(admits))


@dataclass(frozen=True, eq=False)
class PlanReport:
    """A checked plan and its figures: ``moves``, ``admitted_milli`` (milli-GPU), ``frag_milli`` (F(M) of
    the final state, milli-GPU), ``wall_s`` (seconds), ``method`` and ``budget`` (``None`` = no limit)."""

    method: str
    budget: int | None
    plan: Plan
    moves: int
    admitted_milli: int
    frag_milli: float
    wall_s: float


def report_plan(problem: DefragProblem, plan: Plan, workload: Workload, method: str, budget: int | None,
                wall_s: float) -> PlanReport:
    """Validate ``plan`` with :func:`apply_plan` and measure it."""
    final = apply_plan(problem, plan)
    if budget is not None and plan.n_moves > budget:
        raise InfeasiblePlacement(f"{method}: plan makes {plan.n_moves} moves, budget {budget}")
    frag = cluster_fragmentation(final, workload).total
    return PlanReport(method, budget, plan, plan.n_moves, plan.admitted_milli(problem.tasks), frag, wall_s)


# -- victim selection ---------------------------------------------------------------------------
def _on_node(state: ClusterState, node: int) -> np.ndarray:
    return np.flatnonzero(state.node_of == node)


def _removal_frag(state: ClusterState, workload: Workload, node: int, tasks: np.ndarray) -> np.ndarray:
    """F_n(M) of ``node`` after removing each of ``tasks`` (one at a time), milli-GPU."""
    k = len(tasks)
    gpu = np.repeat(state.gpu_left[node][None, :], k, axis=0)
    for r, i in enumerate(tasks.tolist()):
        if state.gpus_of[i]:
            gpu[r, list(state.gpus_of[i])] += state.tasks.gpu_milli[i]
    cpu = state.cpu_left[node] + state.tasks.cpu_milli[tasks]
    access = node_access(workload, state, np.full(k, node))
    return fragmentation_rows(workload, gpu, cpu, access)


def _frag_victim(state: ClusterState, workload: Workload, node: int, before: float,
                 truncate: bool) -> tuple[int, float] | None:
    """The task of ``node`` whose removal lowers F_n(M) most (> 0), with the node's new F_n(M)."""
    tasks = _on_node(state, node)
    if len(tasks) == 0:
        return None
    after = _removal_frag(state, workload, node, tasks)
    gain = before - after
    if truncate:
        gain = np.trunc(gain)
    best = int(np.argmax(gain))
    if gain[best] <= 0:
        return None
    return int(tasks[best]), float(after[best])


def _victims_cos_sim(state: ClusterState, budget: int) -> list[int]:
    idle = state.idle_milli
    cand = np.flatnonzero((state.cpu_left < COS_SIM_CPU_BAR) & (state.gpu_left > COS_SIM_GPU_BAR).any(axis=1))
    cand = cand[np.argsort(-idle[cand], kind="stable")]
    victims: list[int] = []
    tasks = state.tasks
    for n in cand.tolist():
        if len(victims) >= budget:
            break
        on = _on_node(state, n)
        if len(on) == 0:
            continue
        free = np.stack([state.cpu_left[n] + tasks.cpu_milli[on], idle[n] + tasks.gpu_demand[on]], axis=1)
        want = np.stack([tasks.cpu_milli[on], tasks.gpu_demand[on]], axis=1).astype(np.float64)
        norms = np.linalg.norm(free, axis=1) * np.linalg.norm(want, axis=1)
        sim = np.where(norms > 0, (free * want).sum(axis=1) / np.where(norms > 0, norms, 1), -1.0)
        ok = np.flatnonzero((sim >= 0) & (sim < 1))
        if len(ok):
            victim = int(on[ok[np.argmin(sim[ok])]])
            victims.append(victim)
            state.remove(victim)
    return victims


def _victims_frag_one_pod(state: ClusterState, workload: Workload, budget: int) -> list[int]:
    frag = node_fragmentations(state, workload)
    victims: list[int] = []
    for n in np.argsort(-frag, kind="stable").tolist():
        if len(victims) >= budget:
            break
        found = _frag_victim(state, workload, n, float(frag[n]), truncate=True)
        if found is not None:
            victims.append(found[0])
            state.remove(found[0])
    return victims


def _victims_frag_multi_pod(state: ClusterState, workload: Workload, budget: int) -> list[int]:
    frag = node_fragmentations(state, workload)
    heap = [(-float(f), n) for n, f in enumerate(frag.tolist())]
    heapq.heapify(heap)
    victims: list[int] = []
    while heap and len(victims) < budget:
        neg, n = heapq.heappop(heap)
        found = _frag_victim(state, workload, n, -neg, truncate=True)
        if found is not None:
            victims.append(found[0])
            state.remove(found[0])
            heapq.heappush(heap, (-found[1], n))
    return victims


def _victims_fgd_guided(state: ClusterState, workload: Workload, budget: int) -> list[int]:
    frag = node_fragmentations(state, workload)
    best_gain = np.full(state.cluster.n_nodes, -np.inf)
    best_task = np.full(state.cluster.n_nodes, -1)

    def refresh(n: int) -> None:
        tasks = _on_node(state, n)
        best_gain[n], best_task[n] = -np.inf, -1
        if len(tasks):
            gain = frag[n] - _removal_frag(state, workload, n, tasks)
            k = int(np.argmax(gain))
            best_gain[n], best_task[n] = gain[k], tasks[k]

    for n in np.unique(state.node_of[state.node_of != UNPLACED]).tolist():
        refresh(n)
    victims: list[int] = []
    while len(victims) < budget:
        n = int(np.argmax(best_gain))
        if not best_gain[n] > 1e-9:
            break
        victim = int(best_task[n])
        frag[n] -= best_gain[n]
        victims.append(victim)
        state.remove(victim)
        refresh(n)
    return victims


def select_victims(state: ClusterState, method: str, budget: int, workload: Workload) -> list[int]:
    """The victims of heuristic ``method`` (at most ``budget``), evicted from ``state`` in that order."""
    if method == "none" or budget <= 0:
        return []
    if method == "cos-sim":
        return _victims_cos_sim(state, budget)
    if method == "frag-one-pod":
        return _victims_frag_one_pod(state, workload, budget)
    if method == "frag-multi-pod":
        return _victims_frag_multi_pod(state, workload, budget)
    if method == "fgd-guided":
        return _victims_fgd_guided(state, workload, budget)
    raise ValueError(f"unknown defragmentation heuristic {method!r}; valid names: {', '.join(HEURISTICS)}")


# -- re-placement --------------------------------------------------------------------------------
def _offer(state: ClusterState, order: Sequence[int], policy: Policy,
           home: ClusterState | None = None) -> list[int]:
    """Offer ``order`` to ``policy`` one by one on ``state``; a task the policy cannot place goes back to its
    node and GPUs in ``home`` if they still fit. Returns the tasks that fit nowhere."""
    failed = []
    for i in order:
        choice = policy(state, state.tasks[i])
        if choice is None and home is not None and home.node_of[i] != UNPLACED:
            back = (int(home.node_of[i]), home.gpus_of[i])
            choice = back if state.check(state.tasks[i], *back) is None else None
        if choice is None:
            failed.append(i)
        else:
            state.place(i, *choice)
    return failed


def replace_victims(base: ClusterState, victims: list[int], waiting: Sequence[int],
                    policy: Policy) -> ClusterState:
    """Evict ``victims`` from a copy of ``base`` and re-place them and ``waiting`` (see module docstring)."""
    victims = list(victims)
    while True:
        for victims_first in (False, True):
            state = base.copy()
            for v in victims:
                state.remove(v)
            if victims_first:
                if not _offer(state, victims, policy, base):
                    _offer(state, waiting, policy)
                    return state
            else:
                _offer(state, waiting, policy)
                if not _offer(state, victims, policy, base):
                    return state
        victims.pop()


def defrag(problem: DefragProblem, method: str, budget: int, workload: Workload, *, seed: int = 0,
           policy: str = "fgd") -> PlanReport:
    """Objective (b) by heuristic ``method`` of :data:`HEURISTICS` with at most ``budget`` moves.

    Parameters
    ----------
    problem : the running placement and the waiting tasks.
    method : victim rule (module docstring).
    budget : most tasks moved (>= 0).
    workload : target workload M of F(M) (victim choice, FGD re-placement, the reported fragmentation).
    seed : seeds the re-placing policy's ties.
    policy : the online policy that re-places tasks (``make_policy(policy, seed=seed, workload=workload)``).

    Returns
    -------
    PlanReport whose plan passed :func:`apply_plan`.

    Raises
    ------
    ValueError : unknown method or negative budget.
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if method not in HEURISTICS:
        raise ValueError(f"unknown defragmentation heuristic {method!r}; valid names: {', '.join(HEURISTICS)}")
    start = time.perf_counter()
    base = problem.state()
    scratch = base.copy()
    victims = select_victims(scratch, method, budget, workload)
    gpu_waiting = [i for i in problem.waiting.tolist() if problem.tasks.gpu_demand[i] > 0]
    final = replace_victims(base, victims, gpu_waiting, make_policy(policy, seed=seed, workload=workload))
    plan = plan_between(problem, final)
    return report_plan(problem, plan, workload, method, budget, time.perf_counter() - start)


def extend_plan(problem: DefragProblem, plan: Plan, method: str, budget: int, workload: Workload, *,
                seed: int = 0, policy: str = "fgd") -> PlanReport:
    """``plan``, then heuristic ``method`` on the state it leaves with the moves left of ``budget``, as one plan
    from the problem's placement (a task moved by both counts once, so moves <= ``budget``).

    Raises
    ------
    InfeasiblePlacement : ``plan`` is invalid or makes more than ``budget`` moves.
    """
    if plan.n_moves > budget:
        raise InfeasiblePlacement(f"plan makes {plan.n_moves} moves, budget {budget}")
    start = time.perf_counter()
    middle = apply_plan(problem, plan)
    rest = DefragProblem.from_state(middle, [i for i in problem.waiting.tolist() if middle.node_of[i] == UNPLACED])
    then = defrag(rest, method, budget - plan.n_moves, workload, seed=seed, policy=policy)
    combined = plan_between(problem, apply_plan(rest, then.plan))
    return report_plan(problem, combined, workload, f"plan+{method}", budget, time.perf_counter() - start)

