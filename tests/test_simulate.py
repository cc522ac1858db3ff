"""Replay: inflation, curve sampling, per-task log, and replays of the openb trace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.frag import Workload, cluster_fragmentation
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import POLICY_NAMES
from fgdopt.simulate import CURVE_COLUMNS, inflate, replay, run_online
from fgdopt.state import validate

MEM = 1 << 20


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0, 200, 500, 1000, 2000]), min_size=1, max_size=8), st.integers(1, 6),
       st.floats(0.2, 2.0), st.integers(0, 10))
def test_inflation_stops_just_before_exceeding(demands, n_gpus, ratio, seed):
    tasks = TaskSet([1000] * len(demands), [0] * len(demands), [0 if d == 0 else max(1, d // 1000) for d in demands],
                    [0 if d == 0 else min(d, 1000) for d in demands])
    cap = 1000 * n_gpus
    rows = inflate(tasks, cap, ratio, np.random.default_rng(seed))
    total = int(tasks.gpu_demand[rows].sum())
    counts = np.bincount(rows, minlength=len(tasks))
    assert np.all(counts >= 1)                      # every trace task is replayed
    base = int(tasks.gpu_demand.sum())
    if base > ratio * cap:
        assert len(rows) == len(tasks)              # nothing appended to an over-full trace
    elif tasks.gpu_demand.max() > 0:
        assert total <= ratio * cap < total + tasks.gpu_demand.max()   # the next draw would have exceeded
    assert np.array_equal(rows, inflate(tasks, cap, ratio, np.random.default_rng(seed)))


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


def test_run_online_keeps_order_and_reports_allocation():
    # 3 tasks of 600 on one 2-GPU node: the third fits nowhere (each GPU has 400 left)
    c = Cluster([64000], [MEM], [2], ["T4"])
    tasks = TaskSet([1000] * 3, [0] * 3, [1] * 3, [600] * 3)
    result = run_online(c, tasks, "fgd")
    assert result.placement.node.tolist() == [0, 0, -1]
    assert sorted(result.placement.gpus[:2]) == [(0,), (1,)]
    assert result.allocated_milli == 1200 == validate(c, tasks, result.placement).allocated_milli


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
