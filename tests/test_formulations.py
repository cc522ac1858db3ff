"""Exact formulations against an independent brute force; relaxations bound them; heuristics stay below."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgdopt.frag import Workload, cluster_fragmentation
from fgdopt.instance import Instance
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState, InfeasiblePlacement, Placement, validate
from formulations import EXACT, METHODS, RELAXATIONS, solve
from formulations.aggregate import aggregate
from formulations.exact import build_exact
from formulations.solution import make_solution
from formulations.solve import GANGS

TASK_SHAPES = [  # (cpu_milli, memory_mib, num_gpu, gpu_milli)
    (2000, 1024, 1, 300), (4000, 2048, 1, 500), (1000, 1024, 1, 600), (3000, 1024, 1, 700),
    (6000, 4096, 1, 1000), (8000, 4096, 2, 1000), (4000, 1024, 0, 0), (2000, 2048, 1, 200),
]


def _options(cluster: Cluster, tasks: TaskSet) -> list[list]:
    """Per task: unplaced (None) or every (node, GPU set) pair."""
    return [[None] + [(n, gpus) for n in range(cluster.n_nodes)
                      for gpus in itertools.combinations(range(int(cluster.gpu[n])), t.num_gpu)] for t in tasks]


def _leaves(cluster: Cluster, tasks: TaskSet, keep):
    """Depth-first over every assignment (each task unplaced, or a node and GPU set where it fits);
    yields ``(state, allocated milli-GPU)`` at each complete one. ``keep(total, rest)`` prunes a branch
    whose allocation so far is ``total`` with ``rest`` milli-GPU of tasks still to decide."""
    options = _options(cluster, tasks)
    demand = tasks.gpu_demand
    state = ClusterState(cluster, tasks)

    def rec(i: int, total: int):
        if not keep(total, int(demand[i:].sum())):
            return
        if i == len(tasks):
            yield state, total
            return
        for opt in options[i]:
            if opt is None:
                yield from rec(i + 1, total)
            elif state.check(tasks[i], opt[0], opt[1]) is None:
                state.place(i, *opt)
                yield from rec(i + 1, total + int(demand[i]))
                state.remove(i)

    return rec(0, 0)


def brute_force(cluster: Cluster, tasks: TaskSet) -> int:
    """Most allocated milli-GPU over every assignment of every task (unplaced, or a node and GPU set)."""
    best = [0]  # read by the pruning rule as it improves
    for _, total in _leaves(cluster, tasks, lambda total, rest: total + rest > best[0]):
        best[0] = max(best[0], total)
    return best[0]


def brute_force_min_frag(cluster: Cluster, tasks: TaskSet, workload: Workload) -> float:
    """Least cluster fragmentation over every assignment that allocates the brute-force maximum."""
    target = brute_force(cluster, tasks)
    return min(cluster_fragmentation(state, workload).total
               for state, _ in _leaves(cluster, tasks, lambda total, rest: total + rest >= target))


@st.composite
def tiny_instances(draw, max_nodes=2, max_tasks=7):
    n_nodes = draw(st.integers(1, max_nodes))
    gpu = draw(st.lists(st.integers(1, 3), min_size=n_nodes, max_size=n_nodes))
    cpu = draw(st.lists(st.sampled_from([8000, 16000, 32000]), min_size=n_nodes, max_size=n_nodes))
    model = draw(st.lists(st.sampled_from(["A", "B"]), min_size=n_nodes, max_size=n_nodes))
    cluster = Cluster(cpu, [8192] * n_nodes, gpu, model)
    picks = draw(st.lists(st.sampled_from(range(len(TASK_SHAPES))), min_size=1, max_size=max_tasks))
    specs = draw(st.lists(st.sampled_from(["", "", "A"]), min_size=len(picks), max_size=len(picks)))
    rows = [TASK_SHAPES[k] for k in picks]
    tasks = TaskSet(*map(list, zip(*rows, strict=True)), gpu_spec=[s if r[2] else "" for s, r in zip(specs, rows,
                                                                                                       strict=True)])
    return Instance("tiny", cluster, tasks)


def check(sol, instance):
    if sol.placement is not None:
        validate(instance.cluster, instance.tasks, sol.placement)
        assert sol.objective == sol.placement.allocated_milli(instance.tasks)
    if sol.bound is not None and sol.objective is not None:
        assert sol.bound >= sol.objective


FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(tiny_instances())
def test_exact_methods_equal_brute_force(instance):
    best = brute_force(instance.cluster, instance.tasks)
    for method in EXACT:
        sol = solve(instance, method, time_limit=20)
        check(sol, instance)
        assert sol.status == "optimal", (method, sol)
        assert sol.objective == sol.bound == best, (method, sol.objective, best)


@FAST
@given(tiny_instances(max_tasks=6))
def test_min_frag_equals_brute_force(instance):
    workload = Workload.from_tasks(instance.tasks)
    best = brute_force_min_frag(instance.cluster, instance.tasks, workload)
    for method in ("milp-highs", "cpsat"):
        sol = solve(instance, method, objective="min_frag", time_limit=20)
        assert sol.status == "optimal" and sol.objective == brute_force(instance.cluster, instance.tasks)
        state = validate(instance.cluster, instance.tasks, sol.placement)
        assert sol.info["fragmentation"] == pytest.approx(cluster_fragmentation(state, workload).total)
        assert sol.info["fragmentation"] == pytest.approx(best, abs=1e-6), method
        assert sol.info["frag_model"] == pytest.approx(best, abs=1e-6)  # the linearization is exact
        assert sol.info["frag_lower_bound"] <= best + 1e-6


@st.composite
def edge_instances(draw):
    """The shapes a random checker draws that :func:`tiny_instances` leaves out: nodes of 0 GPUs or 0 CPU, memory
    that binds, tasks of 1 and 999 milli, of more whole GPUs than a node holds, pinned to an absent model, and
    copies of one task (symmetry)."""
    n_nodes = draw(st.integers(1, 3))
    nodes = draw(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0, 2000, 16000]),
                                    st.sampled_from([1024, 8192]), st.sampled_from(["A", "B"])),
                          min_size=n_nodes, max_size=n_nodes))
    shape = st.tuples(st.sampled_from([0, 1000, 4000]), st.sampled_from([0, 1024, 4096]),
                      st.sampled_from([(0, 0), (1, 1), (1, 999), (1, 500), (1, 1000), (2, 1000), (4, 1000)]),
                      st.sampled_from(["", "B", "C"]))
    rows = draw(st.lists(shape, min_size=1, max_size=4))
    rows += [rows[-1]] * draw(st.integers(0, 2))
    cluster = Cluster([c for _, c, _, _ in nodes], [m for _, _, m, _ in nodes], [g for g, _, _, _ in nodes],
                      [mo for _, _, _, mo in nodes])
    tasks = TaskSet([c for c, _, _, _ in rows], [m for _, m, _, _ in rows], [k for _, _, (k, _), _ in rows],
                    [g for _, _, (_, g), _ in rows], [sp if k else "" for _, _, (k, _), sp in rows])
    return Instance("edge", cluster, tasks)


@FAST
@given(edge_instances())
def test_edge_shapes_every_method_against_brute_force(instance):
    """Every exact method proves the brute-force optimum, every relaxation bounds it, every policy and flawed model
    stays below it."""
    from fgdopt.policies import POLICY_NAMES
    from fgdopt.simulate import run_online

    best = brute_force(instance.cluster, instance.tasks)
    for method in METHODS:
        sol = solve(instance, method, time_limit=20)
        check(sol, instance)
        if sol.kind == "exact":
            assert (sol.status, sol.objective, sol.bound) == ("optimal", best, best), method
        elif sol.kind == "relaxation":
            assert sol.bound >= best, method
        else:
            assert sol.objective <= best, method
    for policy in POLICY_NAMES:
        assert run_online(instance.cluster, instance.tasks, policy).allocated_milli <= best, policy


def test_min_frag_hand_worked():
    # 2 GPUs, tasks 300, 300, 500: all fit (1100). M = {300-shape: 2/3, 500-shape: 1/3}.
    # 300+300 | 500 leaves free [400, 500]: the 300-shape fits both (0), the 500-shape loses GPU 0 (400)
    # -> F = 400/3. 300+500 | 300 leaves [200, 700]: 2/3 * 200 + 1/3 * 200 = 200. Optimum 400/3.
    cluster = Cluster([32000], [8192], [2], ["A"])
    tasks = TaskSet([1000] * 3, [0] * 3, [1] * 3, [300, 300, 500])
    sol = solve(Instance("frag", cluster, tasks), "milp-highs", objective="min_frag")
    assert (sol.status, sol.objective) == ("optimal", 1100)
    assert sol.info["fragmentation"] == pytest.approx(400 / 3)
    with pytest.raises(ValueError, match="min_frag"):
        solve(Instance("frag", cluster, tasks), "lp", objective="min_frag")


def test_min_frag_counts_cpu():
    # One task (7000 mcpu, 500 milli), M = its shape. On node 0 (2 GPUs, 8000 mcpu) it leaves 1000 mcpu:
    # the shape no longer fits, the whole idle 1500 is fragment (node 1 idle, fits: 0) -> 1500. On node 1
    # (1 GPU, 7000 mcpu) it leaves 0 mcpu: 500 fragment, node 0 fully usable -> 500.
    cluster = Cluster([8000, 7000], [8192, 8192], [2, 1], ["A", "A"])
    tasks = TaskSet([7000], [0], [1], [500])
    sol = solve(Instance("cpu", cluster, tasks), "milp-cbc", objective="min_frag")
    assert sol.placement.node.tolist() == [1]
    assert sol.info["fragmentation"] == sol.info["frag_model"] == pytest.approx(500)


@FAST
@given(tiny_instances(max_nodes=3, max_tasks=12))
def test_heuristic_le_optimum_le_relaxations(instance):
    from fgdopt.simulate import run_online

    opt = solve(instance, "milp-highs", time_limit=20)
    assert opt.status == "optimal"
    for policy in ("fgd", "best-fit", "random"):
        placement = run_online(instance.cluster, instance.tasks, policy, seed=0).placement
        assert placement.allocated_milli(instance.tasks) <= opt.objective
    for method in RELAXATIONS:
        sol = solve(instance, method, time_limit=20)
        assert sol.kind == "relaxation" and sol.placement is None
        assert sol.bound >= opt.objective, method
    for method in ("unified-device-milp", "per-gpu-dimension-milp"):
        sol = solve(instance, method, time_limit=20)
        check(sol, instance)
        assert sol.objective <= opt.objective


def test_hand_worked_sharing_instance():
    # One node, 2 GPUs: 700+300 fill GPU 0, 600 goes to GPU 1, the second 600 cannot share with it
    # (1200 > 1000) -> optimum 1600; the pooled (unified-device) view claims 2000 (700+300+600+... ).
    cluster = Cluster([32000], [8192], [2], ["A"])
    tasks = TaskSet([1000] * 4, [0] * 4, [1] * 4, [700, 300, 600, 600])
    instance = Instance("hand", cluster, tasks)
    for method in EXACT:
        sol = solve(instance, method, time_limit=10)
        assert (sol.status, sol.objective, sol.bound) == ("optimal", 1600, 1600)
    assert solve(instance, "lp").bound == 1600  # per-GPU patterns: the LP is already tight
    assert solve(instance, "config-lp").bound == 1600
    assert solve(instance, "unified-device").bound == 1900  # pooled capacity 2000, best subset sum 1900
    flawed = solve(instance, "unified-device-milp")
    assert flawed.claimed == 1900 and flawed.objective <= 1600
    per_gpu = solve(instance, "per-gpu-dimension-milp")
    assert per_gpu.objective == per_gpu.claimed == 1000  # every sharing task pinned to GPU 0


def test_whole_gpu_tasks_need_untouched_gpus():
    # 2 GPUs; a 2-GPU task (2000) excludes any sharing task on the node: best is the 2-GPU task alone.
    cluster = Cluster([32000], [8192], [2], ["A"])
    tasks = TaskSet([1000, 1000, 1000], [0] * 3, [2, 1, 1], [1000, 500, 400])
    sol = solve(Instance("whole", cluster, tasks), "milp-cbc")
    assert sol.objective == 2000 and sol.placement.gpus[0] == (0, 1)


def test_warm_start_is_kept_and_encoded():
    cluster = Cluster([32000, 32000], [8192, 8192], [2, 2], ["A", "A"])
    tasks = TaskSet([1000] * 5, [0] * 5, [1, 1, 1, 1, 2], [700, 300, 600, 400, 1000])
    instance = Instance("warm", cluster, tasks)
    warm = Placement([1, 1, 1, 1, 0], [(0,), (0,), (1,), (1,), (0, 1)])
    assert validate(cluster, tasks, warm).allocated_milli == 4000
    em = build_exact(aggregate(instance))
    values = em.encode(warm)  # node 1 is the heavier one: the symmetry order swaps the two nodes
    assert em.decode(values).allocated_milli(tasks) == 4000
    sol = solve(instance, "cpsat", warm_start=warm, time_limit=10)
    assert sol.objective == sol.bound == 4000


def test_solution_rejects_bad_results():
    cluster = Cluster([8000], [1024], [1], ["A"])
    tasks = TaskSet([1000, 1000], [0, 0], [1, 1], [600, 600])
    instance = Instance("bad", cluster, tasks)
    with pytest.raises(InfeasiblePlacement):
        make_solution(instance, "x", "x", "feasible", Placement([0, 0], [(0,), (0,)]), None, 0.0, "exact")
    with pytest.raises(ValueError, match="below the objective"):
        make_solution(instance, "x", "x", "feasible", Placement([0, -1], [(0,), ()]), 500.0, 0.0, "exact")
    sol = make_solution(instance, "x", "x", "feasible", Placement([0, -1], [(0,), ()]), 600.4, 0.0, "exact")
    assert (sol.status, sol.bound, sol.gap) == ("optimal", 600, 0.0)
    # a bound above what the cluster holds (1000) and the tasks ask (1200) is cut to the first
    sol = make_solution(instance, "x", "x", "feasible", Placement([0, -1], [(0,), ()]), 5000.0, 0.0, "exact")
    assert (sol.status, sol.bound) == ("feasible", 1000)


@pytest.mark.parametrize("method", GANGS)
def test_a_gang_of_two_that_fits_no_node_set_is_left_out_exactly(method):
    """One 1-GPU node; a gang of 2 workers of 1 GPU each (parts on distinct nodes) cannot run, a 500-milli task can:
    the optimum is 500, proven (a model taking the gang's parts one by one would place half of it and bound 1000)."""
    instance = Instance("gang-of-two", Cluster([8000], [8192], [1], ["T4"]),
                        TaskSet([1000, 1000], [0, 0], [1, 1], [1000, 500], workers=[2, 1]))
    sol = solve(instance, method, time_limit=10)
    check(sol, instance)
    assert (sol.status, sol.objective, sol.bound) == ("optimal", 500, 500)


def test_unknown_method():
    instance = Instance("u", Cluster([8000], [1024], [1], ["A"]), TaskSet([1], [0], [1], [500]))
    with pytest.raises(ValueError, match="unknown method"):
        solve(instance, "simplex")
    assert set(METHODS) == {*EXACT, *RELAXATIONS, "unified-device-milp", "per-gpu-dimension-milp"}
    assert solve(instance, "milp", solver="cbc").method == "milp-cbc"


def test_solvers_agree_on_a_small_random_instance():
    from fgdopt.suites import random_instance

    instance = random_instance(3, 1)      # 3 nodes, 21 tasks asking 22.57 GPUs of 18: as on 4 nodes (25 tasks,
    sols = [solve(instance, m, time_limit=10) for m in EXACT]   # 25.5 of 20), the optimum fills the cluster
    for sol in sols:
        check(sol, instance)
    # every exact method proves it (measured: 0.22 CPU s for all of them), to the same value
    assert [s.status for s in sols] == ["optimal"] * len(EXACT)
    optimal = [s.objective for s in sols]
    assert len(set(optimal)) == 1 and all(s.bound == optimal[0] for s in sols)
    for method in ("lp", "config-lp"):
        assert solve(instance, method).bound >= optimal[0]
