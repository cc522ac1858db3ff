"""Replay: inflation, curve sampling, per-task log, and replays of the openb trace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.frag import Workload, cluster_fragmentation
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import POLICY_NAMES
from fgdopt.simulate import CURVE_COLUMNS, arrival_order, replay, run_online
from fgdopt.state import validate

MEM = 1 << 20


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0, 200, 500, 1000, 2000, 4000]), min_size=1, max_size=8), st.integers(1, 6),
       st.floats(0.2, 2.0), st.integers(0, 10))
def test_arrival_order_shuffles_the_trace_then_appends_clones(demands, n_gpus, ratio, seed):
    num = [0 if d == 0 else max(1, d // 1000) for d in demands]
    milli = [0 if d == 0 else min(d, 1000) for d in demands]
    tasks = TaskSet([1000] * len(demands), [0] * len(demands), num, milli)
    cap = 1000 * n_gpus
    limit = ratio * cap
    rows = arrival_order(tasks, cap, ratio, np.random.default_rng(seed))
    n = len(tasks)
    assert sorted(rows[:n].tolist()) == list(range(n))          # every trace task once, first
    before = int(tasks.gpu_demand.sum())
    if before > limit:
        assert len(rows) == n                                   # nothing appended to an over-full trace
    for row in rows[n:]:                                        # each clone passed the reference's test:
        assert before + tasks.gpu_milli[row] <= limit           # its per-GPU demand fit the room left
        before += int(tasks.gpu_demand[row])
    assert np.array_equal(rows, arrival_order(tasks, cap, ratio, np.random.default_rng(seed)))


def test_arrival_order_reproduces_the_reference_stopping_quirk():
    # Trace: one 4-GPU task (4000 milli-GPU) on 8 GPUs, ratio 0.65: limit 5200. The reference compares the
    # clone's per-GPU 1000 with the room left: 4000 + 1000 <= 5200, so a clone is appended and the arrived
    # demand jumps to 8000 (154%); the next draw (8000 + 1000 > 5200) stops. At ratio 0.6 (limit 4800) none.
    tasks = TaskSet([1000], [0], [4], [1000])
    for seed in range(5):
        assert arrival_order(tasks, 8000, 0.65, np.random.default_rng(seed)).tolist() == [0, 0]
        assert arrival_order(tasks, 8000, 0.6, np.random.default_rng(seed)).tolist() == [0]
    # the replay's last curve row is the final state, past the ratio
    c = Cluster([64000], [MEM], [8], ["T4"])
    result = replay(c, tasks, "best-fit", seed=0, ratio=0.65)
    assert result.curves["arrived_pct"].iloc[-1] == 65
    assert result.curves["arrived_milli"].iloc[-1] == 8000 and result.curves["alloc_milli"].iloc[-1] == 8000


def test_arrival_order_follows_task_names_not_rows():
    # The reference sorts the trace by name before shuffling and draws clones from the name order, so the
    # same trace read in another row order replays the same tasks.
    records = [{"cpu_milli": 1000 * (i + 1), "memory_mib": 0, "num_gpu": 1, "gpu_milli": 100 * (i + 1)}
               for i in range(6)]
    names = [f"pod-{i}" for i in range(6)]
    forward = TaskSet.from_records(records, names)
    backward = TaskSet.from_records(records[::-1], names[::-1])
    a = arrival_order(forward, 2000, 1.0, np.random.default_rng(7))
    b = arrival_order(backward, 2000, 1.0, np.random.default_rng(7))
    assert [forward.names[i] for i in a] == [backward.names[i] for i in b]


def test_curves_sample_every_percentage_by_arrived_prefix():
    # one node with 2 GPUs (capacity 2000); trace: a 1000 task and a 500 task. ratio 1.0: limit 2000,
    # base demand 1500; draws of 500 may be appended (1500 -> 2000), a 1000 draw would exceed.
    c = Cluster([64000], [MEM], [2], ["T4"])
    tasks = TaskSet([1000, 1000], [0, 0], [1, 1], [1000, 500])
    result = replay(c, tasks, "best-fit", seed=3, ratio=1.0)
    curves = result.curves
    assert tuple(curves.columns) == CURVE_COLUMNS
    assert curves["arrived_pct"].tolist() == list(range(101))
    assert (curves["arrived_milli"] * 100 <= curves["arrived_pct"] * 2000).all()
    assert curves["tasks_arrived"].is_monotonic_increasing and curves["arrived_milli"].is_monotonic_increasing
    arrived = np.cumsum(result.tasks.gpu_demand)
    for pct in (0, 24, 25, 50, 74, 75, 100):
        # the row at pct covers exactly the tasks whose cumulative demand is <= pct% of 2000
        assert curves.loc[pct, "tasks_arrived"] == int(np.sum(arrived * 100 <= pct * 2000))
    # everything fits (total <= capacity): allocation follows arrival exactly
    assert (curves["alloc_milli"] == curves["arrived_milli"]).all()
    assert curves["alloc_ratio"].iloc[-1] == pytest.approx(100.0 * arrived[-1] / 2000)
    log = result.log
    assert log["node"].tolist() == [0] * len(result.tasks)
    assert log["alloc_milli"].tolist() == arrived.tolist()
    assert set(log["source"]) == {0, 1}


def test_prefix_is_the_replay_state_at_a_point():
    # Two T4x2 nodes (capacity 4000 milli-GPU); trace: tasks of 1000, 1000, 700 (whole, whole, sharing) and a
    # CPU-only one; ratio 1.3 appends clones up to 5200. The prefix at p is the longest run of arrivals whose
    # cumulative demand is <= p % of 4000, with the replay's own nodes and GPUs for them.
    from fgdopt.suites import random_instance

    c = Cluster([16000, 16000], [MEM, MEM], [2, 2], ["T4", "T4"])
    tasks = TaskSet([2000, 2000, 2000, 1000], [0] * 4, [1, 1, 1, 0], [1000, 1000, 700, 0])
    result = replay(c, tasks, "fgd", seed=5)
    cumulative = np.cumsum(result.tasks.gpu_demand)
    for pct in (0, 25, 50, 70, 100, 130):
        arrived, placement = result.prefix(pct)
        n = len(arrived)
        assert np.all(cumulative[:n] * 100 <= pct * 4000)
        assert n == len(cumulative) or cumulative[n] * 100 > pct * 4000          # the next arrival is past p %
        for field in ("cpu_milli", "num_gpu", "gpu_milli", "names"):                 # the first n, in order
            assert np.array_equal(getattr(arrived, field), getattr(result.tasks, field)[:n])
        assert placement.node.tolist() == result.placement.node[:n].tolist()
        assert placement.gpus == result.placement.gpus[:n]
        state = validate(c, arrived, placement)
        # the state at p: what the curve reports there (tasks never leave)
        assert state.allocated_milli == result.at(pct).alloc_milli and n == result.at(pct).tasks_arrived
    assert len(result.prefix(0)[0]) == int(np.sum(cumulative == 0))                 # only the CPU-only arrivals
    # a trace-like instance: at 100 % the arrived demand fits the capacity and the prefix is the curve's state
    inst = random_instance(4, 2)
    big = replay(inst.cluster, inst.tasks, "best-fit", seed=1)
    arrived, placement = big.prefix(100)
    assert int(arrived.gpu_demand.sum()) <= inst.cluster.gpu_capacity_milli
    assert validate(inst.cluster, arrived, placement).allocated_milli == big.at(100).alloc_milli


def test_run_online_keeps_order_and_reports_allocation():
    # 3 tasks of 600 on one 2-GPU node: the third fits nowhere (each GPU has 400 left)
    c = Cluster([64000], [MEM], [2], ["T4"])
    tasks = TaskSet([1000] * 3, [0] * 3, [1] * 3, [600] * 3)
    result = run_online(c, tasks, "fgd")
    assert result.placement.node.tolist() == [0, 0, -1]
    assert sorted(result.placement.gpus[:2]) == [(0,), (1,)]
    assert result.allocated_milli == 1200 == validate(c, tasks, result.placement).allocated_milli


def test_replay_refuses_a_cluster_of_no_gpu():
    # arrivals are measured against the GPU capacity: a CPU-only cluster divided by 0 before
    with pytest.raises(ValueError, match=r"Cluster\(1 nodes, 0 GPUs, models=\['C'\]\) has no GPU"):
        replay(Cluster([64000], [MEM], [0], ["C"]), TaskSet([1000], [0], [1], [500]), "fgd", 0)


@pytest.fixture(scope="module")
def openb_small(openb_default):
    """Every 10th openb node and the first 1000 tasks: a fast but real replay."""
    cluster, tasks = openb_default
    return cluster.subset(np.arange(0, cluster.n_nodes, 10)), tasks.take(np.arange(1000))


@pytest.mark.trace
@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_replay_openb_subset_is_valid(openb_small, policy):
    cluster, tasks = openb_small
    result = replay(cluster, tasks, policy, seed=42, ratio=1.3)
    state = validate(cluster, result.tasks, result.placement)
    curves = result.curves
    assert tuple(curves.columns) == CURVE_COLUMNS and curves["arrived_pct"].tolist() == list(range(131))
    assert curves["arrived_milli"].is_monotonic_increasing and curves["tasks_arrived"].is_monotonic_increasing
    assert curves["alloc_milli"].is_monotonic_increasing
    assert (curves["alloc_milli"] <= curves["arrived_milli"]).all()
    last = curves.iloc[-1]
    assert last["tasks_arrived"] == len(result.tasks) and last["alloc_milli"] == state.allocated_milli
    report = cluster_fragmentation(state, Workload.from_tasks(tasks))
    assert last["frag_milli"] == pytest.approx(report.total)
    assert sum(last[k] for k in report.breakdown) == pytest.approx(last["idle_milli"])
    assert (result.log["node"] >= 0).sum() == result.placement.placed.sum()
    if policy in ("fgd", "random"):    # the seed reproduces the run
        again = replay(cluster, tasks, policy, seed=42, ratio=1.3)
        assert np.array_equal(again.placement.node, result.placement.node)


@pytest.mark.trace
@pytest.mark.slow
def test_fgd_beats_best_fit_on_openb_default(openb_default):
    cluster, tasks = openb_default
    fgd = replay(cluster, tasks, "fgd", seed=42)
    best_fit = replay(cluster, tasks, "best-fit", seed=42)
    assert len(fgd.tasks) == len(best_fit.tasks) > len(tasks)
    validate(cluster, fgd.tasks, fgd.placement)
    assert fgd.at(130).alloc_ratio > best_fit.at(130).alloc_ratio > 90.0
