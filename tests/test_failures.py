"""Failures and drift (:mod:`fgdopt.timeline.failures`), health-aware placement (:mod:`fgdopt.policies.health`) and
hand-worked runs, the seeded trace, a property over random runs (the study's bad input: tests/test_bad_input.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgdopt.model import Cluster, Task, TaskSet
from fgdopt.policies import make_policy
from fgdopt.policies.health import HealthAware
from fgdopt.state import ClusterState
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.engine import FINISHED, RUNNING
from fgdopt.timeline.failures import (
    FailureLog,
    FailureModel,
    FailuresAndDrift,
    SpeedModel,
    failure_trace,
    job_mtbf_s,
    young_daly_s,
)
from fgdopt.timeline.preemption import Checkpointing, Outage, Plan


def _small(seed: int, n: int = 40, gangs: bool = True) -> tuple[Cluster, JobSet]:
    """Three nodes of 4 GPUs and ``n`` jobs (sharing, whole-GPU, CPU-only, gangs of 2 parts), Poisson arrivals."""
    rng = np.random.default_rng(seed)
    cluster = Cluster([32_000] * 3, [65_536] * 3, [4] * 3, ["V100"] * 3)
    num = rng.choice([0, 1, 1, 2, 4], n)
    milli = np.where(num == 0, 0, np.where((num == 1) & (rng.random(n) < 0.5), 500, 1000))
    workers = np.where((num >= 1) & (milli == 1000) & gangs & (rng.random(n) < 0.3), 2, 1)
    tasks = TaskSet([2000] * n, [1024] * n, num, milli, workers=workers)
    return cluster, JobSet(tasks, np.cumsum(rng.exponential(300.0, n)), rng.exponential(2000.0, n))


def _same(a, b) -> None:
    fa, fb = a.job_frame(), b.job_frame()
    assert fa.equals(fb)
    assert a.series.equals(b.series)
    for name in ("run_s", "busy_s", "lost_s", "overhead_s", "preemptions"):
        assert np.array_equal(getattr(a, name), getattr(b, name))


def test_with_an_infinite_mtbf_every_row_is_the_run_without_the_mechanism():
    cluster, jobs = _small(3)
    none = simulate(cluster, jobs, "best-fit", "backfill")
    never = FailuresAndDrift(FailureModel(math.inf, math.inf), checkpointing=Checkpointing(600.0, 0.0))
    _same(none, simulate(cluster, jobs, "best-fit", "backfill", mechanism=never))
    assert never.log == []
    flat = FailuresAndDrift(FailureModel(math.inf, math.inf), SpeedModel(spread=0.0), cluster,
                            checkpointing=Checkpointing())                 # every factor 1: no change either
    _same(none, simulate(cluster, jobs, "health-aware", "backfill", mechanism=flat))


# Hand-worked: nodes 0 and 1 hold 4 V100 each, node 2 4 T4. Gang g (2 parts of 4 GPUs: one per V100 node) works
# 10,000 s from 0, checkpointing every 1,000 s of run time at 100 s each (a cycle of 1,100 s). Job c (1 T4) runs
# 2,000 s on node 2. At 3,500 s a failure hits node 1 (whole) or GPU 2 of node 0: g has completed 3 checkpoints
# (at 1,100, 2,200, 3,300 s) and worked 200 s since: both parts lose those 200 s (3,000 s kept), 300 s of
# checkpoints were overhead. The failed resource is out until 4,500 s, and g needs both V100 nodes, so it restarts at
# 4,500 s: Helios' 30 s restart (8 GPUs), 7,000 s of work and 6 checkpoints (ceil(7000/1000) - 1) of 100 s, 7,630
# s: it finishes at 12,130 s, run 3,500 + 7,630 = 11,130 s = 10,000 busy + 200 lost + 930 overhead (300 + 30 +
# 600). c is on neither resource: it finishes untouched at 2,100 s (its 2,000 s and one checkpoint of 100 s).
HAND = Cluster([32_000] * 3, [65_536] * 3, [4] * 3, ["V100", "V100", "T4"])


@pytest.mark.parametrize("failed", [Outage(1, (0, 1, 2, 3), True), Outage(0, (2,))])
def test_a_failure_loses_exactly_the_work_since_the_last_checkpoint_for_every_part(failed):
    tasks = TaskSet([1000, 1000], [0, 0], [4, 1], [1000, 1000], ["V100", "T4"], workers=[2, 1])
    jobs = JobSet(tasks, [0.0, 0.0], [10_000.0, 2_000.0])
    mech = FailuresAndDrift(FailureLog([(3_500.0, failed)], repair_s=1_000.0),
                            checkpointing=Checkpointing(1_000.0, 100.0))
    r = simulate(HAND, jobs, "best-fit", "fifo", mechanism=mech)
    assert r.finish_s.tolist() == [12_130.0, 2_100.0]
    assert r.lost_s.tolist() == [200.0, 0.0]                       # seconds of the gang's run: x 8 GPUs lost
    assert r.overhead_s.tolist() == [930.0, 100.0]
    assert r.run_s.tolist() == [11_130.0, 2_100.0] and r.preemptions.tolist() == [1, 0]
    assert mech.log == [{"time_s": 3_500.0, "node": failed.node, "gpus": ",".join(map(str, failed.gpus)),
                         "whole_node": failed.whole_node, "stopped": 1}]
    assert r.series.loc[r.series["time_s"] == 4_500.0, "running"].tolist() == [1]   # back at the repair


def test_a_failed_resource_takes_no_job_until_it_is_repaired():
    # two 1-GPU jobs on one 1-GPU node; the GPU fails at 10 s while a runs (no checkpoints: all 10 s lost) and is
    # repaired at 60 s: nothing runs meanwhile, a restarts at 60 s (7 s restart, 100 s work) and b follows at 167 s
    cluster = Cluster([8000], [1024], [1], ["T4"])
    jobs = JobSet(TaskSet([100] * 2, [0] * 2, [1] * 2, [1000] * 2), [0.0, 0.0], [100.0, 5.0])
    mech = FailuresAndDrift(FailureLog([(10.0, Outage(0, (0,)))], repair_s=50.0), checkpointing=Checkpointing())
    r = simulate(cluster, jobs, "best-fit", "fifo", mechanism=mech)
    assert r.start_s.tolist() == [0.0, 167.0] and r.finish_s.tolist() == [167.0, 172.0]
    assert r.lost_s.tolist() == [10.0, 0.0]
    assert r.series.loc[(r.series["time_s"] > 10) & (r.series["time_s"] < 60), "running"].eq(0).all()


def test_a_resource_still_out_when_the_run_ends_is_put_back():
    # node 1 fails at 5 s, idle, for 10^6 s; the one job (node 0) ends at 100 s: the run ends with node 1 out
    cluster = Cluster([8000] * 2, [1024] * 2, [1] * 2, ["T4"] * 2)
    jobs = JobSet(TaskSet([8000], [0], [1], [1000]), [0.0], [100.0])
    mech = FailuresAndDrift(FailureLog([(5.0, Outage(1, (0,), True))], repair_s=1e6), checkpointing=Checkpointing())
    r = simulate(cluster, jobs, "best-fit", "fifo", seed=1, mechanism=mech)
    assert r.finish_s.tolist() == [100.0] and r.node.tolist() == [0] and len(mech.log) == 1
    assert r.state.cpu_left.tolist() == [8000, 8000] and r.state.gpu_left.tolist() == [[1000], [1000]]


def test_a_seeded_failure_trace_is_deterministic_and_independent_of_the_schedule():
    cluster, jobs = _small(5, gangs=False)
    model = FailureModel(5_000.0, 20_000.0, 600.0, seed=7)
    trace = failure_trace(cluster, model, 50_000.0)
    assert trace.equals(failure_trace(cluster, model, 50_000.0)) and len(trace) > 5
    assert not trace.equals(failure_trace(cluster, FailureModel(5_000.0, 20_000.0, 600.0, seed=8), 50_000.0))
    # node failures at 3 / 5,000 s, GPU failures at 12 / 60,000 s: three in four drawn failures are nodes
    skewed = failure_trace(cluster, FailureModel(5_000.0, 60_000.0, 0.0, seed=7), 200_000.0)
    assert len(skewed) > 100 and 0.65 < skewed["whole_node"].mean() < 0.85
    logs = []
    for policy in ("best-fit", "fgd"):
        mech = FailuresAndDrift(model, checkpointing=Checkpointing(600.0, 10.0))
        simulate(cluster, jobs, policy, "backfill", mechanism=mech)
        logs.append(mech.failures_frame())
    n = min(map(len, logs))                                       # the runs end at different times
    assert n > 5 and logs[0][["time_s", "node", "gpus"]].head(n).equals(logs[1][["time_s", "node", "gpus"]].head(n))
    assert np.allclose(trace["time_s"].head(n), logs[0]["time_s"].head(n))
    # no two outages of one resource overlap (a failure on a resource out of service is dropped): on a node, a whole
    # node's outage overlaps no other, a GPU's none of the same GPU
    for _, rows in trace.groupby("node"):
        out = list(rows.itertuples())
        for a in out:
            for b in out:
                if a.Index < b.Index and (a.whole_node or b.whole_node or a.gpus == b.gpus):
                    assert b.time_s >= a.repaired_s
    assert trace["whole_node"].any() and (~trace["whole_node"]).any()


@dataclass
class _Speeds:
    """A mechanism that only gives per-GPU speed factors."""

    gpu_speed: np.ndarray
    name: str = "speeds"
    checkpointing: Checkpointing = Checkpointing()

    def plan(self, view) -> Plan | None:
        return None


def test_a_gang_runs_at_its_slowest_part_and_health_aware_avoids_the_straggler():
    # node 0: GPUs at 1.0 and 0.9; node 1: 0.5 and 1.0. Gang g (2 parts of 2 GPUs: both nodes) works 100 s at the
    # least of the four, 0.5: 200 s; c (CPU only) at speed 1. Then a (2 GPUs) arrives at 300 s on an empty cluster:
    # best-fit's ranks (seed 3) put it on node 1, at 0.5 (90 s of work, 180 s); health-aware on node 0 (0.9 >= 0.8,
    # node 1's 0.5 is degraded), at 0.9 (100 s), told the factors by the engine
    cluster = Cluster([8000] * 2, [1024] * 2, [2] * 2, ["T4"] * 2)
    tasks = TaskSet([100] * 3, [0] * 3, [2, 2, 0], [1000, 1000, 0], workers=[2, 1, 1])
    jobs = JobSet(tasks, [0.0, 300.0, 0.0], [100.0, 90.0, 50.0])
    speeds = np.array([[1.0, 0.9], [0.5, 1.0]])
    r = simulate(cluster, jobs, "best-fit", "fifo", seed=3, mechanism=_Speeds(speeds))
    assert r.finish_s.tolist() == [200.0, 480.0, 50.0] and r.node[1] == 1
    r = simulate(cluster, jobs, "health-aware", "fifo", seed=3, mechanism=_Speeds(speeds))
    assert r.finish_s.tolist() == [200.0, 400.0, 50.0] and r.node[1] == 0


def test_a_failure_stops_only_the_jobs_with_a_part_there():
    # gangs g and h (2 parts of 4 GPUs: two whole nodes each); node 1 fails at 100 s: the gang there stops (100 s
    # lost, no checkpoint yet), the other does not
    cluster = Cluster([8000] * 4, [1024] * 4, [4] * 4, ["T4"] * 4)
    jobs = JobSet(TaskSet([100] * 2, [0] * 2, [4] * 2, [1000] * 2, workers=[2, 2]), [0.0, 0.0], [1000.0, 1000.0])
    mech = FailuresAndDrift(FailureLog([(100.0, Outage(1, (0, 1, 2, 3), True))], repair_s=0.0),
                            checkpointing=Checkpointing(500.0, 0.0))
    r = simulate(cluster, jobs, "best-fit", "fifo", mechanism=mech)
    assert sorted(r.preemptions.tolist()) == [0, 1] and mech.log[0]["stopped"] == 1
    assert sorted(r.lost_s.tolist()) == [0.0, 100.0]


def test_speed_factors_drawn_once_and_drifting():
    cluster = Cluster([8000] * 50, [1024] * 50, [8] * 50, ["T4"] * 50)
    model = SpeedModel(spread=0.1, stragglers=0.1, straggler_factor=0.5, drift=0.02, seed=3)
    base = model.base(cluster)
    assert np.array_equal(base, model.base(cluster)) and base.shape == (50, 8)
    assert 0.06 < (base < 0.5).mean() < 0.14 and base.max() <= 1.0 and base.min() >= 0.45   # the stragglers
    step = np.empty_like(base)
    model.at_step(base, 4, step)
    assert (step <= base).all() and (step >= 0.98 * base).all() and not np.array_equal(step, base)
    with pytest.raises(ValueError, match="speed factor must be > 0"):
        SpeedModel(straggler_factor=0.0)
    with pytest.raises(ValueError, match="node_mtbf_s must be a number of seconds > 0"):
        FailureModel(node_mtbf_s=0.0)


def test_health_aware_avoids_degraded_gpus_and_is_best_fit_otherwise():
    cluster = Cluster([8000] * 3, [1024] * 3, [2] * 3, ["T4"] * 3)
    state = ClusterState(cluster, TaskSet([100], [0], [1], [600]))
    state.place(0, 1, (0,))                                       # node 1 is the best fit of a second 1-GPU task
    task = Task(100, 0, 1, 1000)
    aware, fit = HealthAware(seed=1), make_policy("best-fit", seed=1)
    healthy = np.ones((3, 2))
    assert aware(state, task, gpu_speed=healthy) == fit(state, task) == aware(state, task) == (1, (1,))
    slow = healthy.copy()
    slow[1, 1] = 0.5                                              # node 1's free GPU is a straggler
    node, gpus = aware(state, task, gpu_speed=slow)
    assert node != 1 and slow[node, list(gpus)].min() == 1.0
    slow[:, :] = 0.5                                              # nothing healthy: best-fit again
    assert aware(state, task, gpu_speed=slow) == (1, (1,))
    pair = Task(100, 0, 2, 1000)                                  # fits the empty nodes 0 and 2 only
    for bad, good in ((0, 2), (2, 0)):                            # a 2-GPU task gets its slower GPU's factor
        slow = healthy.copy()
        slow[bad, 1] = 0.5
        assert aware(state, pair, gpu_speed=slow) == (good, (0, 1))


def test_young_daly_and_a_job_mtbf():
    assert young_daly_s(60.0, 43_200.0) == pytest.approx(2276.84, abs=0.01)    # sqrt(2 x 60 x 43,200)
    assert job_mtbf_s(2, 16, 100.0, 1600.0) == pytest.approx(1 / (2 / 100 + 16 / 1600))
    assert job_mtbf_s(1, 8, math.inf, math.inf) == math.inf


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The rates keep every job's expected run finite and short: the worst job, a gang over two nodes' 8 GPUs, fails
# every 1 / (2/5,000 + 8/20,000) = 1,250 s at worst, so a checkpoint segment of at most 1,500 s survives with
# probability exp(-1.2) = 0.30 or more. (Node and GPU MTBFs of 2,000 and 5,000 s against an interval of 4,686 s had
# a segment survive with probability exp(-6.1) = 0.002 on one node's 4 GPUs and exp(-12.2) = 5e-6 for such a gang:
# that drawn run was still going after 14.5 CPU minutes.)
@given(seed=st.integers(0, 10_000), node_mtbf=st.floats(5_000.0, 50_000.0), gpu_mtbf=st.floats(20_000.0, 1e5),
       repair=st.floats(0.0, 3_000.0), interval=st.floats(100.0, 1_500.0), cost=st.floats(0.0, 60.0),
       queue=st.sampled_from(["fifo", "backfill"]), policy=st.sampled_from(["best-fit", "fgd", "health-aware"]))
def test_jobs_and_resources_are_conserved_under_failures(seed, node_mtbf, gpu_mtbf, repair, interval, cost, queue,
                                                         policy):
    cluster, jobs = _small(seed, n=25)
    mech = FailuresAndDrift(FailureModel(node_mtbf, gpu_mtbf, repair, seed), SpeedModel(stragglers=0.2, seed=seed),
                            cluster, checkpointing=Checkpointing(interval, cost))
    r = simulate(cluster, jobs, policy, queue, mechanism=mech)    # simulate checks every run (TimelineResult.check)
    assert (r.status == FINISHED).all()                           # every job fits the empty cluster: all end
    assert not (r.status == RUNNING).any() and r.state.allocated_milli == 0
    assert (r.state.gpu_left == np.where(np.arange(4) < cluster.gpu[:, None], 1000, 0)).all()   # all back
    assert int(r.preemptions.sum()) == sum(e["stopped"] for e in mech.log)
    assert (r.lost_s >= 0).all() and (r.lost_s <= r.run_s).all()
    assert (r.run_s >= jobs.duration_s / 1.0 - 1e-6).all()       # no factor above 1


@pytest.mark.parametrize("healthy", [0.0, -0.1, 1.01, float("nan")])
def test_health_aware_threshold_must_lie_in_zero_one(healthy):
    with pytest.raises(ValueError, match=r"healthy must lie in \(0, 1\]"):
        HealthAware(healthy=healthy)
    assert HealthAware(healthy=1.0).healthy == 1.0 and HealthAware(healthy=1e-9).healthy == 1e-9


def test_a_free_checkpoint_is_refused_at_the_door(tmp_path, capsys):
    """``--checkpoint-cost-s 0`` made Young/Daly's interval 0 and the sweep's checkpoints every 0 s: an
    OverflowError deep in the engine after the runs; it stops in one line, exit 2, before any."""
    from experiments import failures

    with pytest.raises(SystemExit) as stop:
        failures.main(["--checkpoint-cost-s", "0", "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and not (tmp_path / "o").exists()
    assert err == ("python -m experiments.failures: error: argument --checkpoint-cost-s: expected a finite number > "
                   "0, got '0'")


@pytest.mark.parametrize(("extra", "said"), [
    (["--mtbf-scale", "1e6"], "--mtbf-scale 1e+06, --checkpoint-s 1800, --checkpoint-cost-s 60: a 1-GPU job failing "
     "every 46.9 s would take 4.41e+15 s per second of work"),
    (["--checkpoint-s", "1e-6"], "--mtbf-scale 1, --checkpoint-s 1e-06, --checkpoint-cost-s 60: a 1-GPU job failing "
     "every 4.69e+07 s would take 6e+07 s per second of work"),
    (["--straggler-factor", "1e-9"], "--straggler-factor 1e-09, --spread 0.1, --drift 0.02: a job on the slowest GPU "
     "would take 1.13e+09 s per second of work"),
    (["--intervals", "1,1e3"], "--intervals 1000 (checkpoints every 2.28e+06 s), --checkpoint-cost-s 60: a gang of "
     "the sweep failing every 43200 s would take 1.47e+21 s per second of work"),
])
def test_a_run_that_would_not_end_is_refused_at_the_door(extra, said, tmp_path, capsys, monkeypatch):
    """Valid values whose runs never end (found by an extreme-value sweep; each ran past 2 minutes with 100 jobs): a
    node failing every 55 s never lets a job reach its checkpoint every 1,800 s, a checkpoint every microsecond at
    60 s each, a GPU at 1e-9 of its speed whose run lasts 1e9 drift hours, a sweep checkpointing once in 26 days of
    failures every 12 h. Each stops in one line naming its options, exit 2, before any run; the defaults' expected
    slowdown is about 1.05 (Young/Daly's interval in the sweep)."""
    from experiments import failures

    def ran(*args):
        raise AssertionError("past the door: the runs started")

    monkeypatch.setattr(failures, "run_and_write", ran)
    with pytest.raises(SystemExit) as stop:
        failures.main([*extra, "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and not (tmp_path / "o").exists()
    assert err.startswith(f"python -m experiments.failures: error: {said} in expectation (at most 1000): its run "
                          "would not end"), err
    assert failures.expected_slowdown(43_200.0, failures.young_daly_s(60.0, 43_200.0), 60.0) < 1.06


def test_a_failure_log_replays_its_events_in_time_order():
    """Given events are sorted by time, peeked and popped one by one; repair_s 0 is allowed, a negative or
    infinite one and a negative time are not."""
    late, early = Outage(0, (1,), False), Outage(1, (), True)
    log = FailureLog([(10.0, late), (5.0, early)], repair_s=0.0)
    assert log.peek() == (5.0, early) and log.pop() == (5.0, early)
    assert log.peek() == (10.0, late) and log.pop() == (10.0, late) and log.peek() is None
    for repair_s, events in ((-1.0, []), (math.inf, []), (0.0, [(-1.0, late)])):
        with pytest.raises(ValueError, match="must be finite numbers of seconds >= 0"):
            FailureLog(events, repair_s=repair_s)


@pytest.mark.parametrize("kwargs", [{"spread": 1.0}, {"spread": -0.1}, {"drift": 1.0}, {"stragglers": 1.5},
                                    {"straggler_factor": 0.0}, {"drift_period_s": math.inf}])
def test_a_speed_model_refuses_factors_out_of_range(kwargs):
    with pytest.raises(ValueError):
        SpeedModel(**kwargs)
    assert SpeedModel(spread=0.99, drift=0.5, stragglers=1.0, straggler_factor=1.0).stragglers == 1.0
