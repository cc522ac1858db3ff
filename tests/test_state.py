"""Feasibility, place / remove, and validate(): the judge of every placement."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.model import Cluster, Task, TaskSet, spec_allows
from fgdopt.state import ClusterState, InfeasiblePlacement, Placement, gpu_fits, validate

# Node 0: 2 T4 GPUs, 16 cores; node 1: 4 V100M16 GPUs, 32 cores; node 2: CPU-only, 8 cores.
CLUSTER = Cluster([16000, 32000, 8000], [65536, 131072, 16384], [2, 4, 0], ["T4", "V100M16", ""])
TASKS = TaskSet(
    cpu_milli=[4000, 4000, 2000, 8000, 1000, 6000],
    memory_mib=[1024, 1024, 1024, 2048, 512, 1024],
    num_gpu=[1, 1, 2, 1, 0, 1],
    gpu_milli=[600, 500, 1000, 1000, 0, 300],
    gpu_spec=["", "", "", "", "", "V100M16"],
)


def test_gpu_fits_rule():
    assert gpu_fits(np.array([400, 300, 0]), 1, 400) and not gpu_fits(np.array([400, 300, 0]), 1, 401)
    row = np.array([1000, 400, 1000, 0])   # 0 = a used-up or absent (padded) GPU
    assert gpu_fits(row, 2, 1000) and not gpu_fits(row, 3, 1000)
    assert gpu_fits(row, 0, 0)
    # vectorized over (shape, node): shapes (1 x 500) and (2 x 1000) against two nodes
    both = np.array([[1000, 400], [600, 1000]])
    assert gpu_fits(both[None], np.array([[1], [2]]), np.array([[[500]], [[1000]]])).tolist() == [[True, True],
                                                                                                 [False, False]]


def test_feasible_nodes_hand_worked():
    state = ClusterState(CLUSTER, TASKS)
    assert state.feasible_nodes(TASKS[0]).tolist() == [True, True, False]   # a GPU of 600 free: nodes 0, 1
    assert state.feasible_nodes(TASKS[4]).tolist() == [True, True, True]    # CPU-only fits everywhere
    assert state.feasible_nodes(TASKS[5]).tolist() == [False, True, False]  # gpu_spec V100M16 only
    state.place(0, 0, (0,))        # node 0: GPUs [400, 1000]
    state.place(1, 0, (1,))        # node 0: GPUs [400, 500]
    assert state.gpu_left[0].tolist() == [400, 500, 0, 0]
    assert state.cpu_left[0] == 8000 and state.mem_left[0] == 65536 - 2048
    # the whole-GPU pair no longer fits node 0, the 300-milli task is restricted by its spec
    assert state.feasible_nodes(TASKS[2]).tolist() == [False, True, False]
    assert state.check(TASKS[3], 0) == "GPU: no 1 GPU(s) with 1000 milli free on node 0"
    assert state.allocated_milli == 1100


@pytest.mark.parametrize(("i", "node", "gpus", "reason"), [
    (0, 7, (0,), "node 7 does not exist"),
    (0, 0, (2,), "GPU 2 does not exist on node 0"),
    (2, 1, (0, 0), "needs 2 distinct GPU id"),
    (2, 1, (0,), "needs 2 distinct GPU id"),
    (4, 0, (0,), "a CPU-only task takes no GPU"),
    (5, 0, (0,), "GPU model 'T4' not in gpu_spec 'V100M16'"),
    (3, 2, (), "CPU: 8000 milli-cores asked, 8000 left"),
])
def test_check_reasons(i, node, gpus, reason):
    state = ClusterState(CLUSTER, TASKS)
    if i == 3:  # leave node 2 short of CPU by one milli-core
        state.cpu_left[2] = 7999
        reason = "CPU: 8000 milli-cores asked, 7999 left"
    assert reason in state.check(TASKS[i], node, gpus)
    with pytest.raises(InfeasiblePlacement, match=reason.split(":")[0]):
        state.place(i, node, gpus)


def test_whole_gpu_needs_free_gpus_and_gpu_capacity_is_per_gpu():
    state = ClusterState(CLUSTER, TASKS)
    state.place(1, 1, (0,))                     # 500 on V100 GPU 0
    with pytest.raises(InfeasiblePlacement, match="GPU 0 of node 1 has 500 milli left, 1000 asked"):
        state.place(2, 1, (0, 1))
    state.place(2, 1, (1, 2))
    with pytest.raises(InfeasiblePlacement, match="GPU 0 of node 1 has 500 milli left, 600 asked"):
        state.place(0, 1, (0,))                  # 600 does not fit the 500 left, though 1500 idle on the node
    with pytest.raises(InfeasiblePlacement, match="already placed"):
        state.place(1, 0, (0,))


def test_place_remove_restores():
    state = ClusterState(CLUSTER, TASKS)
    fresh = state.copy()
    state.place(2, 1, (3, 1))
    state.place(4, 2, ())
    state.remove(2)
    state.remove(4)
    for name in ("cpu_left", "mem_left", "gpu_left", "node_of"):
        assert np.array_equal(getattr(state, name), getattr(fresh, name))
    with pytest.raises(ValueError, match="not placed"):
        state.remove(2)


def test_validate_accepts_and_reports_state():
    placement = Placement([0, 0, 1, 1, 2, 1], [(0,), (1,), (0, 1), (2,), (), (3,)])
    state = validate(CLUSTER, TASKS, placement)
    assert state.allocated_milli == 600 + 500 + 2000 + 1000 + 300
    assert placement.allocated_milli(TASKS) == state.allocated_milli


@pytest.mark.parametrize(("node", "gpus", "match"), [
    ([0, 0, -1, -1, -1, -1], [(0,), (0,), (), (), (), ()], "GPU 0 of node 0 has 400 milli left"),  # 600 + 500 on a GPU
    ([-1, -1, 1, 1, -1, -1], [(), (), (0, 1), (1,), (), ()], "GPU 1 of node 1 has 0 milli left"),
    ([-1, -1, -1, -1, -1, 0], [(), (), (), (), (), (0,)], "not in gpu_spec"),
    ([-1, -1, -1, -1, 5, -1], [(), (), (), (), (), ()], "node 5 does not exist"),
    ([-1, -1, -1, -1, -1, -1], [(), (), (), (), (0,), ()], "unallocated but lists GPUs"),
    ([-1, -1, -1, -1, -3, -1], [(), (), (), (), (), ()], "node -3 does not exist"),
])
def test_validate_rejects(node, gpus, match):
    with pytest.raises(InfeasiblePlacement, match=match):
        validate(CLUSTER, TASKS, Placement(node, gpus))


def test_validate_rejects_wrong_length():
    with pytest.raises(InfeasiblePlacement, match="covers 1 tasks"):
        validate(CLUSTER, TASKS, Placement([0], [(0,)]))


# -- properties ------------------------------------------------------------------------------

def aggregate_ok(cluster: Cluster, tasks: TaskSet, node, gpus) -> bool:
    """An independent, order-free check of a whole placement: sums of demand against capacities."""
    cpu, mem, gpu = defaultdict(int), defaultdict(int), defaultdict(int)
    for i, (n, gs) in enumerate(zip(node, gpus, strict=True)):
        t = tasks[i]
        if n == -1:
            if gs:
                return False
            continue
        if not 0 <= n < cluster.n_nodes or len(gs) != t.num_gpu or len(set(gs)) != len(gs):
            return False
        if any(not 0 <= g < cluster.gpu[n] for g in gs):
            return False
        if t.num_gpu and not spec_allows(t.gpu_spec, cluster.model[n]):
            return False
        cpu[n] += t.cpu_milli
        mem[n] += t.memory_mib
        for g in gs:
            gpu[n, g] += t.gpu_milli
    return (all(v <= cluster.cpu_milli[n] for n, v in cpu.items())
            and all(v <= cluster.memory_mib[n] for n, v in mem.items())
            and all(v <= 1000 for v in gpu.values()))


task_shapes = st.one_of(
    st.tuples(st.integers(0, 8), st.just(0), st.just(0)),
    st.tuples(st.integers(0, 8), st.just(1), st.sampled_from([100, 300, 500, 600, 700])),
    st.tuples(st.integers(0, 8), st.integers(1, 3), st.just(1000)),
)
SMALL = Cluster([16000, 12000], [64, 64], [2, 3], ["T4", "P100"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(task_shapes, st.sampled_from(["", "T4", "P100"])), min_size=1, max_size=8), st.data())
def test_validate_matches_independent_check(shapes, data):
    """validate() accepts exactly the placements the aggregate check accepts, on arbitrary placements."""
    tasks = TaskSet([s[0][0] * 1000 for s in shapes], [8] * len(shapes), [s[0][1] for s in shapes],
                    [s[0][2] for s in shapes], [s[1] for s in shapes])
    node = [data.draw(st.integers(-1, 2)) for _ in shapes]
    gpus = [tuple(data.draw(st.lists(st.integers(0, 3), max_size=3))) if n != -1 and data.draw(st.booleans())
            else tuple(data.draw(st.lists(st.integers(0, 2), min_size=tasks[i].num_gpu, max_size=tasks[i].num_gpu,
                                          unique=True)))
            for i, n in enumerate(node)]
    expected = aggregate_ok(SMALL, tasks, node, gpus)
    try:
        state = validate(SMALL, tasks, Placement(node, gpus))
    except InfeasiblePlacement:
        assert not expected
    else:
        assert expected
        assert state.allocated_milli == sum(tasks[i].gpu_demand for i, n in enumerate(node) if n != -1)


@settings(max_examples=100, deadline=None)
@given(st.lists(task_shapes, min_size=1, max_size=10), st.randoms(use_true_random=False))
def test_random_feasible_placements_validate_and_undo(shapes, rnd):
    tasks = TaskSet([s[0] * 1000 for s in shapes], [8] * len(shapes), [s[1] for s in shapes], [s[2] for s in shapes])
    state = ClusterState(SMALL, tasks)
    empty = state.copy()
    for i in range(len(tasks)):
        task: Task = tasks[i]
        nodes = np.flatnonzero(state.feasible_nodes(task))
        assert all(state.fits(task, int(n)) for n in nodes)
        assert not any(state.fits(task, n) for n in set(range(SMALL.n_nodes)) - set(nodes.tolist()))
        if nodes.size:
            n = int(rnd.choice(nodes.tolist()))
            free = np.flatnonzero(state.gpu_left[n] >= task.gpu_milli) if task.num_gpu else []
            state.place(i, n, tuple(rnd.sample(list(map(int, free)), task.num_gpu)))
    judged = validate(SMALL, tasks, state.placement())
    assert np.array_equal(judged.gpu_left, state.gpu_left) and np.array_equal(judged.cpu_left, state.cpu_left)
    for i in rnd.sample(range(len(tasks)), len(tasks)):
        if state.node_of[i] != -1:
            state.remove(i)
    assert np.array_equal(state.gpu_left, empty.gpu_left) and np.array_equal(state.cpu_left, empty.cpu_left)
    assert np.array_equal(state.mem_left, empty.mem_left)


def test_shapes_fit_node_at_exact_capacity():
    """A shape asking exactly the CPU and memory left on a node fits it; one milli-core or MiB more does not
    (the rule of ``feasible_nodes``, vectorized over shapes)."""
    state = ClusterState(CLUSTER, TASKS)
    shapes = TaskSet([16000, 16001, 16000], [65536, 65536, 65537], [1, 1, 1], [1000, 1000, 1000])
    assert state.shapes_fit_node(shapes, [0, 1, 2], 0).tolist() == [True, False, False]


def test_place_many_rejects_a_part_outside_its_gpu_spec_as_place_does():
    """A batch whose 1-GPU task has a ``gpu_spec`` excluding its node raises ``place``'s own error, after the earlier
    tasks are placed, leaving the state the same as the moves one by one."""
    one, many = ClusterState(CLUSTER, TASKS), ClusterState(CLUSTER, TASKS)
    one.place(0, 1, (0,))
    with pytest.raises(InfeasiblePlacement, match="GPU model 'T4' not in gpu_spec 'V100M16'") as raised:
        one.place(5, 0, (0,))
    with pytest.raises(InfeasiblePlacement) as bulk:
        many.place_many([0, 5], [1, 0], [(0,), (0,)])
    assert str(bulk.value) == str(raised.value)
    assert many.node_of.tolist() == one.node_of.tolist() == [1, -1, -1, -1, -1, -1]
    assert many.gpu_left.tolist() == one.gpu_left.tolist()


def test_part_counts_are_zero_where_the_gpu_spec_excludes_the_node():
    """A gang of V100M16 parts counts none on the T4 node, whatever room it has."""
    gang = TaskSet([1000], [1024], [1], [500], gpu_spec=["V100M16"], workers=[3])
    assert ClusterState(CLUSTER, gang).part_counts(gang[0]).tolist() == [0, 3, 0]


@pytest.mark.parametrize("demand", [(-1, 1024), (1000, -1), (1000.5, 1024), (1000, 1024.5)])
def test_a_chosen_demand_must_be_whole_and_non_negative(demand):
    state = ClusterState(CLUSTER, TASKS)
    with pytest.raises(InfeasiblePlacement, match="is not whole milli-cores and MiB >= 0"):
        state.place(0, 1, (0,), demand=demand)
    state.place(0, 1, (0,), demand=(0, 0))
    assert state.cpu_left[1] == 32000 and state.demand_of[0] == ((0, 0),)


def test_a_task_spans_nodes_only_over_wholly_free_gpus():
    """``parts_fit`` of a 2-GPU whole-GPU task on two 1-GPU nodes: it fits over both while both GPUs are free, not
    once one of them holds a sharing task (600 milli left)."""
    cluster = Cluster([8000, 8000], [8192, 8192], [1, 1], ["T4", "T4"])
    tasks = TaskSet([1000, 1000], [512, 512], [2, 1], [1000, 400])
    state = ClusterState(cluster, tasks)
    assert not state.feasible_nodes(tasks[0]).any() and state.parts_fit(tasks[0])
    state.place(1, 1, (0,))
    assert not state.parts_fit(tasks[0])
