"""Defragmentation: plan validation, heuristics, and the exact model against hand work and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fgdopt.defrag import HEURISTICS, DefragProblem, Move, Plan, apply_plan, defrag, extend_plan, select_victims
from fgdopt.frag import Workload, node_fragmentations
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import UNPLACED, ClusterState, InfeasiblePlacement, Placement
from formulations.backends import solve_model
from formulations.defrag import build_defrag, solve_defrag


# -- hand-worked instances -------------------------------------------------------------------------
def two_halves() -> DefragProblem:
    """Two T4 nodes (8000 milli-cores, 1 GPU each). Running: a 500 milli-GPU task on each GPU (tasks 0, 1).
    Waiting: two whole-GPU tasks (2, 3). Free GPU: 500 + 500 = 1000 milli-GPU, but no GPU is completely free,
    so neither waiting task fits, in any order (re-ordering the arrivals changes nothing: the running tasks
    stay where they are). Moving task 1 onto node 0's GPU (500 + 500 = 1000 <= 1000) frees node 1's GPU:
    one move admits one whole-GPU task; admitting both needs 2 GPUs free but only 1000 milli-GPU is idle,
    so (a) is infeasible."""
    c = Cluster([8000, 8000], [4096, 4096], [1, 1], ["T4", "T4"])
    t = TaskSet([1000, 1000, 2000, 2000], [0] * 4, [1, 1, 1, 1], [500, 500, 1000, 1000])
    return DefragProblem(c, t, Placement([0, 1, -1, -1], [(0,), (0,), (), ()]))


def cpu_blocked() -> DefragProblem:
    """Node 0: 8000 milli-cores, 1 free GPU, but a CPU-only task (task 0, 6000 milli-cores) leaves 2000.
    Node 1: 8000 milli-cores, no GPU, empty. Waiting: a whole-GPU task (task 1) asking 4000 milli-cores:
    node 0 has its GPU but 2000 < 4000 cores; node 1 has no GPU. Moving task 0 to node 1 (6000 <= 8000)
    leaves node 0 with 8000 cores and its GPU: one move admits 1000 milli-GPU."""
    c = Cluster([8000, 8000], [4096, 4096], [1, 0], ["T4", "T4"])
    t = TaskSet([6000, 4000], [0, 0], [0, 1], [0, 1000])
    return DefragProblem(c, t, Placement([0, -1], [(), ()]))


def test_one_move_admits_a_task_the_arrival_order_cannot():
    p = two_halves()
    wl = Workload.from_tasks(p.tasks)
    for method in HEURISTICS:                       # budget 0: offering the waiting tasks admits nothing
        assert defrag(p, method, 0, wl).admitted_milli == 0
    assert solve_defrag(p, "b", 0).admitted_milli == 0
    one = solve_defrag(p, "b", 1)
    assert (one.status, one.moves, one.admitted_milli, one.bound_milli) == ("optimal", 1, 1000, 1000)
    assert solve_defrag(p, "a").status == "infeasible"
    single = DefragProblem(p.cluster, p.tasks, p.placement, waiting=[2])
    a = solve_defrag(single, "a")
    assert (a.status, a.moves, a.moves_bound) == ("optimal", 1, 1)
    final = apply_plan(single, a.plan)
    assert final.node_of[2] != UNPLACED


def test_cpu_only_move_admits_whole_gpu_task():
    p = cpu_blocked()
    a = solve_defrag(p, "a")
    assert (a.status, a.moves, a.admitted_milli) == ("optimal", 1, 1000)
    assert a.plan.moves == (Move(0, 1, ()),)


@pytest.mark.parametrize(("method", "moves", "admitted"), [
    ("none", 0, 0),              # nothing moves: node 0 keeps 2000 cores < 4000
    ("cos-sim", 0, 0),           # node 0's free CPU is 2000, not < COS_SIM_CPU_BAR = 2000: no candidate node
    # M = {(6000, 0, 0): 0.5, (4000, 1, 1000): 0.5}. F_0 = 0.5 * 1000 (CPU-only: idle) + 0.5 * 1000 (q4: the GPU
    # fits, 4000 > 2000 cores) = 1000; without task 0 the whole-GPU shape is q3 with no partly used GPU: F_0 = 500.
    # The gain 500 > 0 makes task 0 the victim; FGD re-places the waiting task 1 on node 0 (the only GPU), then
    # task 0 on node 1 (8000 >= 6000; node 0 has 4000 left): one move, 1000 milli-GPU admitted.
    ("frag-one-pod", 1, 1000),
    ("frag-multi-pod", 1, 1000),
    ("fgd-guided", 1, 1000),
])
def test_each_heuristic_on_the_cpu_blocked_node(method, moves, admitted):
    p = cpu_blocked()
    rep = defrag(p, method, 1, Workload.from_tasks(p.tasks))
    assert (rep.moves, rep.admitted_milli) == (moves, admitted)
    if moves:
        assert rep.plan.moves == (Move(0, 1, ()),) and rep.plan.admits == (Move(1, 0, (0,)),)


def victims_state() -> DefragProblem:
    """Three T4 nodes, nothing waiting; M = one whole-GPU shape (1000 milli-cores, 1 GPU), p = 1.

    ====  =====  ====  ===========================  ============  =========  ===========================
    node  cores  GPUs  running (cores, milli-GPU)   free cores    GPU left   F_n(M) (semantics)
    ====  =====  ====  ===========================  ============  =========  ===========================
    0     8000   2     task 0 (4000, 400) on GPU 1  1000          700, 600   no free GPU: idle = 1300
                       task 1 (3000, 300) on GPU 0
    1     8000   2     task 2 (1000, 100) on GPU 1  7000          1000, 900  q3: partly used GPUs = 900
    2     4000   1     task 3 (2500, 450) on GPU 0  1500          550        no free GPU: idle = 550
    ====  =====  ====  ===========================  ============  =========  ===========================

    F_n(M) after removing one task (its gain): task 0 -> [700, 1000], F 700 (600); task 1 -> [1000, 600], F 600
    (700); task 2 -> F 0 (900); task 3 -> F 0 (550). After task 1 leaves node 0, task 0's removal gains 600 - 0.
    """
    c = Cluster([8000, 8000, 4000], [4096] * 3, [2, 2, 1], ["T4"] * 3)
    t = TaskSet([4000, 3000, 1000, 2500], [0] * 4, [1] * 4, [400, 300, 100, 450])
    return DefragProblem(c, t, Placement([0, 0, 1, 2], [(1,), (0,), (1,), (0,)]))


VICTIMS_M = Workload.from_shapes([(1000, 1, 1000, 1.0)])


@pytest.mark.parametrize(("method", "budget", "victims"), [
    # cos-sim: candidates have < 2000 free cores and a GPU with > 500 free: nodes 0 (1000; 700) and 2 (1500; 550),
    # not node 1 (7000 cores), visited by free milli-GPU descending (1300, then 550). Cosine of the node's free
    # (cores, milli-GPU) after the removal with the task's (cores, milli-GPU): node 0, task 0: (5000, 1700).(4000,
    # 400) -> 0.9741; task 1: (4000, 1600).(3000, 300) -> 0.9608, the least: task 1 (not the first arrived).
    # Node 2, task 3: (4000, 1000).(2500, 450) -> 0.9978 < 1 qualifies. One victim per node, one pass.
    ("cos-sim", 1, [1]),
    ("cos-sim", 4, [1, 3]),
    # frag-one-pod: nodes by F_n(M) descending (1300, 900, 550), each its largest gain: 1 (700), 2 (900), 3 (550)
    ("frag-one-pod", 2, [1, 2]),
    ("frag-one-pod", 4, [1, 2, 3]),
    # frag-multi-pod: pop node 0 (1300): task 1, node 0 back at 600; pop node 1 (900): task 2, back at 0; pop
    # node 0 (600 > 550): task 0 (gain 600); pop node 2 (550): task 3
    ("frag-multi-pod", 3, [1, 2, 0]),
    ("frag-multi-pod", 4, [1, 2, 0, 3]),
    # fgd-guided: largest gain anywhere: task 2 (900), task 1 (700), then task 0 (600 > 550), then task 3
    ("fgd-guided", 1, [2]),
    ("fgd-guided", 4, [2, 1, 0, 3]),
])
def test_each_heuristic_picks_the_hand_worked_victims(method, budget, victims):
    p = victims_state()
    state = p.state()
    assert select_victims(state, method, budget, VICTIMS_M) == victims
    assert all(state.node_of[v] == UNPLACED for v in victims)      # evicted from the state, in that order
    assert sorted(np.flatnonzero(state.node_of != UNPLACED).tolist()) == sorted(set(range(4)) - set(victims))


def test_hand_worked_victim_state_fragmentation():
    # the F_n(M) column of victims_state's table, by the shared evaluator
    assert node_fragmentations(victims_state().state(), VICTIMS_M).tolist() == [1300, 900, 550]


def test_extend_plan_continues_a_plan_with_the_moves_left():
    p = two_halves()
    wl = Workload.from_tasks(p.tasks)
    first = Plan(moves=(Move(1, 0, (0,)),))        # task 1 joins task 0: node 1's GPU is free, nothing admitted
    rep = extend_plan(p, first, "none", 1, wl)     # no move left; offering the waiting tasks admits one
    assert (rep.moves, rep.admitted_milli) == (1, 1000)
    assert rep.plan.moves == first.moves and len(rep.plan.admits) == 1
    back = extend_plan(p, Plan(), "fgd-guided", 1, wl)   # from the empty plan: the heuristic alone
    assert (back.moves, back.admitted_milli) == (1, 1000) == (defrag(p, "fgd-guided", 1, wl).moves, 1000)
    with pytest.raises(InfeasiblePlacement, match="budget 0"):
        extend_plan(p, first, "none", 0, wl)


@pytest.mark.parametrize("seed", range(6))
def test_extended_exact_plans_stay_valid_and_below_the_optimum(seed):
    p = random_problem(seed)
    wl = Workload.from_tasks(p.tasks)
    one, three = solve_defrag(p, "b", 1, workload=wl), solve_defrag(p, "b", 3, workload=wl)
    for method in HEURISTICS:
        rep = extend_plan(p, one.plan, method, 3, wl, seed=seed)
        assert rep.moves <= 3 and one.admitted_milli <= rep.admitted_milli <= three.admitted_milli


# -- validation -------------------------------------------------------------------------------------
def test_plan_that_overfills_a_gpu_is_rejected_and_nothing_changes():
    p = two_halves()
    before = (p.placement.node.copy(), p.placement.gpus)
    # admit whole-GPU task 2 on node 0's GPU, which still hosts task 0 (500 + 1000 > 1000)
    with pytest.raises(InfeasiblePlacement, match=r"task 2 \(task-2\).*GPU 0 of node 0"):
        apply_plan(p, Plan(admits=(Move(2, 0, (0,)),)))
    # move task 1 onto node 0 without freeing anything there: 500 + 500 fits, then task 2 on node 0 overfills
    with pytest.raises(InfeasiblePlacement, match="task 2"):
        apply_plan(p, Plan(moves=(Move(1, 0, (0,)),), admits=(Move(2, 0, (0,)),)))
    assert np.array_equal(p.placement.node, before[0]) and p.placement.gpus == before[1]
    assert p.state().allocated_milli == 1000


@pytest.mark.parametrize(("plan", "message"), [
    (Plan(moves=(Move(7, 0, (0,)),)), "task 7, which is unknown"),
    (Plan(admits=(Move(0, 1, (0,)),)), r"task 0 \(task-0\), which is not waiting"),
    (Plan(moves=(Move(2, 1, (0,)),)), r"task 2 \(task-2\), which is not running"),
    (Plan(moves=(Move(1, 1, (0,)),)), "to its current node and GPUs"),
    (Plan(moves=(Move(1, 0, (0,)),), admits=(Move(1, 1, (0,)),)), "twice"),
])
def test_bad_plans_name_the_task(plan, message):
    with pytest.raises(InfeasiblePlacement, match=message):
        apply_plan(two_halves(), plan)


def test_bad_problems_name_the_task():
    p = two_halves()
    huge = TaskSet([1000, 1000, 99_000], [0, 0, 0], [1, 1, 1], [500, 500, 1000])
    with pytest.raises(ValueError, match=r"waiting task 2 \(task-2\) fits no node even when it is empty"):
        DefragProblem(p.cluster, huge, Placement([0, 1, -1], [(0,), (0,), ()]), waiting=[2])
    # by default, an unplaced task that fits no empty node is not waiting (no plan can admit it): the study on a
    # trace with such a task (a GPU model the cluster lacks) stopped with this ValueError
    assert DefragProblem(p.cluster, huge, Placement([0, 1, -1], [(0,), (0,), ()])).waiting.tolist() == []
    with pytest.raises(ValueError, match="waiting task 9 is unknown"):
        DefragProblem(p.cluster, p.tasks, p.placement, waiting=[9])
    with pytest.raises(ValueError, match="already running"):
        DefragProblem(p.cluster, p.tasks, p.placement, waiting=[0])
    with pytest.raises(ValueError, match="budget"):
        defrag(p, "fgd-guided", -1, Workload.from_tasks(p.tasks))
    with pytest.raises(ValueError, match="unknown defragmentation heuristic"):
        defrag(p, "nope", 1, Workload.from_tasks(p.tasks))


# -- brute force on tiny instances ---------------------------------------------------------------
def random_problem(seed: int) -> DefragProblem:
    """2 nodes x 2 GPUs, 6 tasks of mixed shapes; a random feasible order places what fits, the rest waits."""
    rng = np.random.default_rng(seed)
    c = Cluster([8000, 6000], [65536, 65536], [2, 2], ["T4", "T4"])
    shapes = [(1, 300), (1, 500), (1, 700), (1, 1000), (2, 1000), (0, 0)]
    pick = rng.integers(len(shapes), size=6)
    t = TaskSet(rng.choice([1000, 2000, 3000], size=6), [0] * 6, [shapes[k][0] for k in pick],
                [shapes[k][1] for k in pick])
    state = ClusterState(c, t)
    for i in rng.permutation(6).tolist()[:4]:
        ok = [(n, g) for n, g in options(state, i) if state.check(t[i], n, g) is None]
        if ok:
            state.place(i, *ok[rng.integers(len(ok))])
    return DefragProblem.from_state(state)


def options(state: ClusterState, i: int) -> list[tuple[int, tuple[int, ...]]]:
    task = state.tasks[i]
    out = []
    for n in range(state.cluster.n_nodes):
        for gpus in itertools.combinations(range(int(state.cluster.gpu[n])), task.num_gpu):
            out.append((n, gpus))
    return out


def brute_force(p: DefragProblem) -> dict[tuple[int, int], int]:
    """Every reachable (admitted milli-GPU, moves) pair; value = 1 (a set). Running tasks must stay placed."""
    empty = ClusterState(p.cluster, p.tasks)
    running, waiting = p.running.tolist(), p.waiting.tolist()
    found: dict[tuple[int, int], int] = {}

    def rec(k: int, state: ClusterState, moves: int, admitted: int) -> None:
        order = running + waiting
        if k == len(order):
            found[(admitted, moves)] = 1
            return
        i = order[k]
        if i in waiting:
            rec(k + 1, state, moves, admitted)
        for n, g in options(state, i):
            if state.check(p.tasks[i], n, g) is None:
                state.place(i, n, g)
                moved = i in running and (n != p.placement.node[i] or g != tuple(sorted(p.placement.gpus[i])))
                rec(k + 1, state, moves + moved, admitted + (int(p.tasks.gpu_demand[i]) if i in waiting else 0))
                state.remove(i)

    rec(0, empty, 0, 0)
    return found


BRUTE_FORCE_SEEDS = [*range(6), *(pytest.param(s, marks=pytest.mark.extended) for s in range(6, 12))]
"""Seeds of :func:`random_problem` checked against brute force. Seeds 0-5 hold every case the test branches on:
plans that move tasks (1: one move, 2: two), CPU-only waiting tasks (1, 4), every waiting task admissible (0, 2, 4)
and not (3, 5: objective (a) infeasible). Seeds 6-11 (none moves a task) are further runs (``extended``)."""


@pytest.mark.parametrize("patterns", [True, False, None])
@pytest.mark.parametrize("seed", BRUTE_FORCE_SEEDS)
def test_exact_matches_brute_force(seed, patterns, monkeypatch):
    import formulations.defrag as fd

    monkeypatch.setattr(fd, "PATTERN_COLUMNS", 0)   # None: plain rows searched, the blocks' LP as second bound
    envelope = patterns is True                     # the envelope rows with the blocks
    p = random_problem(seed)
    reachable = brute_force(p)
    total = p.waiting_milli()
    wl = Workload.from_tasks(p.tasks)
    for budget in (0, 1, 2, 6):
        best = max((adm, -mv) for adm, mv in reachable if mv <= budget)
        sol = solve_defrag(p, "b", budget, workload=wl, patterns=patterns, envelope=envelope)
        assert sol.status == "optimal"
        assert (sol.admitted_milli, -sol.moves) == best, (seed, budget)
        assert sol.bound_milli == sol.admitted_milli
        assert ("hull_lp_bound" in sol.info) == (patterns is None and build_defrag(p, "b", budget).blocks_dropped)
        if not patterns:
            continue
        dm = build_defrag(p, "b", budget, symmetry=False, envelope=True)   # the optimum encodes to a feasible vector
        dm.model.check(dm.encode(sol.plan))
        for method in HEURISTICS:                     # heuristics: valid, within budget, never above optimum
            rep = defrag(p, method, budget, wl, seed=seed)
            assert rep.moves <= budget and rep.admitted_milli <= best[0]
    full = [mv for adm, mv in reachable if adm == total]
    cpu_only_waiting = any(p.tasks.num_gpu[i] == 0 for i in p.waiting)
    if not cpu_only_waiting:
        a = solve_defrag(p, "a", workload=wl, patterns=patterns, envelope=envelope)
        if full:
            assert (a.status, a.moves) == ("optimal", min(full))
        else:
            assert a.status == "infeasible"


def sliver() -> DefragProblem:
    """One T4 node, one GPU running a 600 milli-GPU task (task 0): 400 milli-GPU free. Waiting: a 250 and a
    300 milli-GPU task (1, 2). Without moves only one of them fits (250 + 300 > 400): 300 milli-GPU at best.
    The GPU capacity row with per-value rounding lets the LP take the 250 and 0.5 of the 300 (400); the
    per-GPU patterns of the free 400 ({250}, {300}) cap the LP at 300."""
    c = Cluster([8000], [4096], [1], ["T4"])
    t = TaskSet([1000, 1000, 1000], [0, 0, 0], [1, 1, 1], [600, 250, 300])
    return DefragProblem(c, t, Placement([0, -1, -1], [(0,), (), ()]))


@pytest.mark.parametrize(("patterns", "lp_milli"), [(True, 300), (False, 400)])
def test_gpu_patterns_tighten_the_lp_bound(patterns, lp_milli):
    p = sliver()
    dm = build_defrag(p, "b", 0, patterns=patterns, envelope=False)
    raw = solve_model(dm.model.relaxed(), "highs", 10, 1)
    assert raw.status == "optimal"
    assert int(raw.bound + 1e-6) // dm.weight * dm.agg.unit == lp_milli
    sol = solve_defrag(p, "b", 0, patterns=patterns)
    assert (sol.status, sol.admitted_milli, sol.bound_milli, sol.moves) == ("optimal", 300, 300, 0)


def test_pattern_blocks_by_default_only_below_the_column_limit(monkeypatch):
    import formulations.defrag as fd

    p = sliver()   # one GPU, room 400 and nothing leaves at K = 0: its block holds {250} and {300}
    assert [len(cols) for _, cols in build_defrag(p, "b", 0, envelope=False).lam.values()] == [2]
    monkeypatch.setattr(fd, "PATTERN_COLUMNS", 1)
    assert build_defrag(p, "b", 0, envelope=False).lam == {}
    assert build_defrag(p, "b", 0, patterns=True, envelope=False).lam != {}
    sol = solve_defrag(p, "b", 0, envelope=False)   # the search on plain rows, the blocks' LP bound beside it
    assert int(sol.info["hull_lp_bound"] + 1e-6) // (len(p.running) + 1) * sol.info["unit"] == 300
    assert (sol.status, sol.admitted_milli, sol.bound_milli) == ("optimal", 300, 300)


def test_online_problem_waits_the_failed_tasks():
    from experiments.defrag import online_problem
    from fgdopt.simulate import run_online
    from fgdopt.suites import random_instance

    inst = random_instance(2, 0)
    p = online_problem(inst, "best-fit")
    failed = np.flatnonzero(run_online(inst.cluster, inst.tasks, "best-fit").placement.node == UNPLACED)
    assert p.waiting.tolist() == failed.tolist() and len(failed) > 0
    sol = solve_defrag(p, "b", 2, time_limit=20)
    assert sol.status == "optimal" and sol.moves <= 2 and sol.bound_milli == sol.admitted_milli


def test_warm_start_is_relabelled_for_the_symmetry_rows():
    """Two empty GPUs on one node; a plan admitting the waiting task onto GPU 1 is re-labelled onto GPU 0
    (empty GPUs are ordered by new load), so the encoded start satisfies every row."""
    c = Cluster([8000], [4096], [2], ["T4"])
    t = TaskSet([1000], [0], [1], [500])
    p = DefragProblem(c, t, Placement([-1], [()]))
    plan = Plan((), (Move(0, 0, (1,)),))
    dm = build_defrag(p, "b", 0)
    assert dm.relabel(plan).admits == (Move(0, 0, (0,)),)
    dm.model.check(dm.encode(plan))
    sol = solve_defrag(p, "b", 0, warm_start=plan)
    assert (sol.status, sol.admitted_milli, sol.moves) == ("optimal", 500, 0)


def two_blocked() -> DefragProblem:
    """Nodes 0 and 1: 8000 milli-cores and one free T4 each, but a CPU-only task of 7000 (tasks 0, 1) leaves
    1000 cores; node 2: 16000 cores, no GPU, empty. Waiting: two whole-GPU tasks of 4000 cores (2, 3).
    With K = 1, one CPU-only task moves to node 2 and one waiting task is admitted: 1000 milli-GPU. The LP
    relaxation without the envelope rows moves 3/7 of each CPU-only task (6/7 <= 1 move; 3000 cores freed on
    each node) and admits both: 2000. Each node's net gain is W = [0, 1000] (one move frees its GPU's CPU), so
    the envelope rows give net_n <= 1000 * (moves out of n) and the LP bound drops to 1000."""
    c = Cluster([8000, 8000, 16000], [4096, 4096, 4096], [1, 1, 0], ["T4", "T4", "T4"])
    t = TaskSet([7000, 7000, 4000, 4000], [0, 0, 0, 0], [0, 0, 1, 1], [0, 0, 1000, 1000])
    return DefragProblem(c, t, Placement([0, 1, -1, -1], [(), (), (), ()]))


@pytest.mark.parametrize(("envelope", "lp_milli"), [(False, 2000), (True, 1000)])
def test_node_envelope_tightens_the_lp_bound(envelope, lp_milli):
    p = two_blocked()
    dm = build_defrag(p, "b", 1, envelope=envelope)
    raw = solve_model(dm.model.relaxed(), "highs", 10, 1)
    assert raw.status == "optimal"
    assert int(raw.bound + 1e-6) // dm.weight * dm.agg.unit == lp_milli
    sol = solve_defrag(p, "b", 1, envelope=envelope)
    assert (sol.status, sol.admitted_milli, sol.bound_milli, sol.moves) == ("optimal", 1000, 1000, 1)
    assert sol.plan.moves[0].node == 2 and len(sol.plan.admits) == 1


def test_node_values_of_a_blocked_node():
    """Node 0 of :func:`two_blocked`: no move gains nothing (1000 cores fit no waiting task), one move (its only
    task) frees 8000 cores and admits one whole-GPU task: W = [0, 1000 milli] in units."""
    from formulations.defrag import _node_values

    p = two_blocked()
    dm = build_defrag(p, "b", 1)
    agg = dm.agg
    on_0 = [r for r, g in enumerate(dm.groups) if p.placement.node[g[0]] == 0]
    mine = np.flatnonzero(agg.allowed[0])
    pool = agg.count
    values = _node_values(agg, 0, on_0, [1], dm.group_shape, [()], pool, mine, 1, 10.0)
    assert [v * agg.unit for v in values] == [0, 1000]


@pytest.mark.parametrize(("values", "segments"), [
    ([0, 5, 6, 6], [(0, 0, 1, 5), (1, 5, 2, 6), (2, 6, 3, 6), (3, 6, 4, 6)]),
    ([3, 3, 10], [(0, 3, 2, 10), (2, 10, 3, 10)]),         # (1, 3) lies below the chord: dropped
    ([7], [(0, 7, 1, 7)]),
])
def test_envelope_rows_are_the_upper_concave_hull(values, segments):
    from formulations.defrag import _envelope_rows

    rows = _envelope_rows(values)
    assert rows == segments
    for m, v in enumerate(values):                          # every point lies under every segment's line
        for m1, v1, m2, v2 in rows:
            assert (m2 - m1) * v <= (m2 - m1) * v1 + (v2 - v1) * (m - m1)


def test_touch_binaries_and_envelope_keep_the_optimal_plan():
    """The optimal plan of every brute-forced tiny instance satisfies the touch and envelope rows (encode/check)
    at every budget, and the model with them proves the same optimum as without."""
    for seed in range(6):
        p = random_problem(seed)
        for budget in (1, 2):
            with_rows = solve_defrag(p, "b", budget, envelope=True)
            without = solve_defrag(p, "b", budget)
            assert (with_rows.status, without.status) == ("optimal", "optimal")
            assert (with_rows.admitted_milli, with_rows.moves) == (without.admitted_milli, without.moves)
            dm = build_defrag(p, "b", budget, symmetry=False, envelope=True)
            assert bool(dm.touch) == (budget < len(p.running))
            dm.model.check(dm.encode(without.plan))


def test_trace_study_runs_heuristics_whole_and_exact_on_slices(openb_dir, tmp_path):
    import pandas as pd

    from experiments.defrag import main

    argv = ["--data", str(openb_dir), "--seeds", "42", "--policies", "best-fit", "--budgets", "0,1",
            "--slice-nodes", "8", "--time-limit", "10", "--output", str(tmp_path)]
    assert main(argv) == 0
    frame = pd.read_csv(tmp_path / "defrag.csv")
    whole, part = frame[frame.trace == "default"], frame[frame.trace == "default/slice0"]
    assert set(whole.kind) == {"heuristic"} and set(whole.nodes) == {1213}
    assert set(part.nodes) == {8} and len(part[part.kind == "exact"]) == 2
    assert (whole.moves <= whole.budget).all() and (part.moves <= part.budget).all()
    for _, rows in part.groupby("budget"):
        exact = rows[rows.kind == "exact"].iloc[0]
        assert rows[rows.kind == "heuristic"].admitted_milli.max() <= exact.admitted_milli <= exact.bound_milli
    assert (whole[whole.budget == 0].admitted_milli == 0).all()   # the failed tasks fit nowhere without moves
    assert (tmp_path / "defrag.png").is_file() and (tmp_path / "defrag.md").is_file()
    # --resume reuses the finished (seed, policy) run kept in OUTPUT/.runs/defrag: the same rows, times included
    assert len(list((tmp_path / ".runs" / "defrag").glob("*.pkl"))) == 1
    first = (tmp_path / "defrag.csv").read_text()
    assert main([*argv, "--resume"]) == 0
    assert (tmp_path / "defrag.csv").read_text() == first


def test_study_names_a_policy_of_your_own_and_stops_on_its_error_in_one_line(tmp_path, capsys, own_openb):
    """A spec with a ``name`` heads its rows by it (the spec was printed); a policy that places where the task does
    not fit stops the study in one line naming the seed, the policy and the task (a PolicyError traceback)."""
    from experiments.defrag import main

    own_openb()
    (tmp_path / "mine.py").write_text(
        "from fgdopt.policies import make_policy\n\n"
        "class Named:\n    name = 'my-fit'\n\n    def __init__(self, **kw):\n"
        "        self.inner = make_policy('best-fit', **kw)\n\n    def __call__(self, state, task):\n"
        "        return self.inner(state, task)\n\n"
        "def wrong(**kw):\n    return lambda state, task: (0, (0,))\n")
    common = ["--data", str(tmp_path), "--budgets", "0", "--slices", "0"]
    assert main([*common, "--policies", f"{tmp_path / 'mine.py'}:Named"]) == 0
    assert "| default | my-fit   | none" in capsys.readouterr().out
    assert main([*common, "--policies", f"{tmp_path / 'mine.py'}:wrong"]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]                                     # after the progress bar
    assert "Traceback" not in err and last.startswith("python -m experiments.defrag: openb default seed 42: policy ")
    assert "where it does not fit" in last



def test_resume_needs_the_trace_study_and_an_output(tmp_path, capsys):
    """``--resume`` keeps the trace study's runs in ``--output``: with ``--suite``, or without ``--output``, it stops
    in one line before any work."""
    from experiments.defrag import main

    for argv in (["--suite", "small", "--resume", "--output", str(tmp_path)], ["--resume"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2 and "--resume keeps the trace study's runs" in capsys.readouterr().err
