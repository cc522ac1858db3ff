"""The time engine (fgdopt.timeline): hand-worked timelines, conservation, cross-checks, the load knob."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.frag import Workload
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import PolicyError, make_policy
from fgdopt.simulate import replay, run_online
from fgdopt.suites import random_instance
from fgdopt.timeline import JobSet, read_workload, run_stats, simulate
from fgdopt.timeline.engine import DROPPED, FINISHED, PENDING, REJECTED, RUNNING
from fgdopt.timeline.metrics import sample_series, time_average, time_integral

INF = math.inf


def whole(*num_gpu: int) -> TaskSet:
    """Whole-GPU jobs of 1000 milli-cores each."""
    return TaskSet([1000] * len(num_gpu), [0] * len(num_gpu), list(num_gpu), [1000] * len(num_gpu))


TWO_GPUS = Cluster([32000], [1024], [2], ["T4"])          # one node, two GPUs


def test_fifo_head_of_line_blocking_against_backfill():
    # A: 1 GPU at t=0 for 10 s; B: 2 GPUs at t=1 for 5 s; C: 1 GPU at t=2 for 3 s, on one 2-GPU node.
    jobs = JobSet(whole(1, 2, 1), [0.0, 1.0, 2.0], [10.0, 5.0, 3.0])
    fifo = simulate(TWO_GPUS, jobs, "best-fit", "fifo")
    # FIFO: B needs both GPUs and waits for A (t=10); C waits behind B although a GPU is free, until B ends (15)
    assert fifo.start_s.tolist() == [0.0, 10.0, 15.0]
    assert fifo.finish_s.tolist() == [10.0, 15.0, 18.0]
    back = simulate(TWO_GPUS, jobs, "best-fit", "backfill")
    # backfill: C takes the free GPU at t=2 (ends 5); B starts the instant A leaves, at exactly t=10
    assert back.start_s.tolist() == [0.0, 10.0, 2.0]
    assert back.finish_s.tolist() == [10.0, 15.0, 5.0]
    # measured waits: FIFO (0 + 9 + 13) / 3, backfill (0 + 9 + 0) / 3
    assert run_stats(fifo)["mean_wait_s"] == pytest.approx(22 / 3)
    assert run_stats(back)["mean_wait_s"] == pytest.approx(3.0)


def test_sjf_and_smallest_orders():
    # one 1-GPU node busy until t=10 (job 0); then three waiting jobs of durations 7, 2, 4 (1 GPU each)
    one = Cluster([32000], [1024], [1], ["T4"])
    jobs = JobSet(whole(1, 1, 1, 1), [0.0, 1.0, 2.0, 3.0], [10.0, 7.0, 2.0, 4.0])
    sjf = simulate(one, jobs, "best-fit", "sjf")
    assert sjf.start_s.tolist() == [0.0, 16.0, 10.0, 12.0]          # 2 s job at 10, 4 s at 12, 7 s at 16
    fifo = simulate(one, jobs, "best-fit", "backfill")
    assert fifo.start_s.tolist() == [0.0, 10.0, 17.0, 19.0]          # submission order
    # smallest GPU demand first: a 1-GPU job before a 2-GPU one submitted earlier
    small = simulate(TWO_GPUS, JobSet(whole(2, 2, 1), [0.0, 1.0, 2.0], [10.0, 1.0, 1.0]), "best-fit", "smallest")
    assert small.start_s.tolist() == [0.0, 11.0, 10.0]               # at t=10 the 1-GPU job first, then the 2-GPU


def test_rejected_oversize_and_zero_duration_jobs():
    # job 0 asks 4 GPUs of a 2-GPU node: rejected at submission, never queued; job 1 (0 s) and job 2 (5 s) both
    # want the whole node at t=0: job 1 starts, leaves at once (a second instant at t=0), job 2 starts at t=0
    jobs = JobSet(whole(4, 2, 2), [0.0, 0.0, 0.0], [1.0, 0.0, 5.0])
    r = simulate(TWO_GPUS, jobs, "best-fit", "fifo")
    assert r.status.tolist() == [REJECTED, FINISHED, FINISHED]
    assert np.isnan(r.start_s[0]) and r.node[0] == -1
    assert r.start_s[1:].tolist() == [0.0, 0.0] and r.finish_s[1:].tolist() == [0.0, 5.0]
    assert r.instants == 3                                            # t=0 (submissions), t=0 (the 0 s finish), t=5
    assert run_stats(r)["rejected"] == 1


def test_no_queue_drops_and_until_stops_with_jobs_running_and_pending():
    jobs = JobSet(whole(2, 1, 1), [0.0, 1.0, 2.0], [INF, 5.0, 5.0])
    drop = simulate(TWO_GPUS, jobs, "best-fit", "none")
    assert drop.status.tolist() == [RUNNING, DROPPED, DROPPED]      # the node is full forever; nothing waits
    r = simulate(TWO_GPUS, JobSet(whole(2, 1), [0.0, 1.0], [10.0, 5.0]), "best-fit", "fifo", until_s=5.0)
    assert r.status.tolist() == [RUNNING, PENDING]
    stats = run_stats(r)
    assert stats["unfinished"] == 2 and math.isnan(stats["makespan_s"])


def test_a_policy_that_chooses_an_infeasible_node_stops_in_one_line():
    def bad(state, task):
        return 5, ()                                                  # node 5 does not exist

    with pytest.raises(PolicyError, match=r"chose .* for job 0 \(task-0\) at 0.0 s, where it does not fit"):
        simulate(TWO_GPUS, JobSet(whole(1), [0.0], [1.0]), bad, "backfill")


def _conservation(result, jobs: JobSet) -> None:
    """The run's own check, resources never negative, and the GPU-seconds run = the allocation's integral."""
    result.check()
    state = result.state
    assert (state.cpu_left >= 0).all() and (state.mem_left >= 0).all() and (state.gpu_left >= 0).all()
    series = result.series
    if len(series):
        assert series["alloc_milli"].min() >= 0 and series["alloc_milli"].max() <= state.cluster.gpu_capacity_milli
        assert (series["blocked_milli"] <= state.cluster.gpu_capacity_milli - series["alloc_milli"]).all()
    done = result.status == FINISHED
    ran = jobs.tasks.gpu_demand[done] * (result.finish_s[done] - result.start_s[done])
    assert np.allclose(result.finish_s[done] - result.start_s[done], jobs.duration_s[done])   # no mechanism
    end = float(series["time_s"].iloc[-1]) if len(series) else 0.0
    integral = time_integral(series["time_s"].to_numpy(), series["alloc_milli"].to_numpy(), (0.0, end))
    assert integral == pytest.approx(float(ran.sum()), rel=1e-9, abs=1e-6)


def test_check_catches_an_inconsistent_run():
    import dataclasses

    jobs = JobSet(whole(1, 2, 1), [0.0, 1.0, 2.0], [10.0, 5.0, 3.0])
    r = simulate(TWO_GPUS, jobs, "best-fit", "backfill")
    r.check()
    bad_status = r.status.copy()
    bad_status[0] = RUNNING                                           # finished, yet "running" and not placed
    with pytest.raises(AssertionError, match="placed"):
        dataclasses.replace(r, status=bad_status).check()
    with pytest.raises(AssertionError, match="ran other than"):        # one second of work unaccounted for
        dataclasses.replace(r, run_s=r.run_s + np.array([1.0, 0.0, 0.0])).check()
    r.state.cpu_left[0] -= 1                                           # bookkeeping off by a milli-core
    with pytest.raises(AssertionError, match="cpu_left differs"):
        r.check()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000),
       queue=st.sampled_from(["fifo", "backfill", "sjf", "smallest", "area", "whole-first", "none"]),
       policy=st.sampled_from(["fgd", "best-fit", "random", "gpu-packing", "drain-fit"]))
def test_random_runs_conserve_jobs_and_gpu_time(seed, queue, policy):
    inst = random_instance(3, seed=seed, ratio=2.0)
    rng = np.random.default_rng(seed)
    n = len(inst.tasks)
    submit = np.round(rng.uniform(0, 50, n))                         # rounded: many jobs share an instant
    duration = np.round(rng.exponential(20, n)) * (rng.random(n) > 0.1)   # some zero durations
    jobs = JobSet(inst.tasks, submit, duration)
    r = simulate(inst.cluster, jobs, policy, queue, seed=seed, snapshots=np.unique(submit))   # validated at each
    _conservation(r, jobs)
    if queue != "none":
        assert set(r.counts()) >= {"finished"} and r.counts()["pending"] == 0 and r.counts()["running"] == 0
    assert (r.start_s[np.isfinite(r.start_s)] >= jobs.submit_s[np.isfinite(r.start_s)]).all()
    if queue == "fifo":                                               # strict FIFO starts in submission order
        order = np.lexsort((np.arange(n), submit))
        started = order[np.isfinite(r.start_s[order])]
        assert (np.diff(r.start_s[started]) >= 0).all()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["fgd", "best-fit", "dot-product", "random"]))
def test_infinite_durations_without_queue_equal_run_online(seed, policy):
    # each job at its own instant, never leaving, no queue: exactly the online protocol of run_online
    inst = random_instance(4, seed=seed, ratio=1.5)
    n = len(inst.tasks)
    online = run_online(inst.cluster, inst.tasks, policy, seed=seed)
    r = simulate(inst.cluster, JobSet(inst.tasks, np.arange(n, dtype=float), np.full(n, INF)), policy, "none",
                 seed=seed)
    assert np.array_equal(r.node, online.placement.node)
    assert r.state.allocated_milli == online.allocated_milli
    assert list(r.state.gpus_of) == list(online.placement.gpus)


@pytest.mark.trace
def test_the_engine_reproduces_the_openb_replay_bit_for_bit(openb_dir):
    # the paper's replay of openb default, seed 42, on the first 200 nodes, against the engine with infinite
    # durations, one arrival per second in the replay's order and no queue: the same node and GPUs for every task
    from fgdopt.traces import load_openb

    cluster, tasks = load_openb("default", openb_dir)
    cluster = cluster.subset(np.arange(200))
    ranks = np.random.default_rng(7).permutation(cluster.n_nodes)
    workload = Workload.from_tasks(tasks)
    rep = replay(cluster, tasks, "fgd", 42, workload=workload, ranks=ranks)
    n = len(rep.tasks)
    r = simulate(cluster, JobSet(rep.tasks, np.arange(n, dtype=float), np.full(n, INF)),
                 make_policy("fgd", seed=42, workload=workload, ranks=ranks), "none", workload=workload)
    assert np.array_equal(r.node, rep.placement.node)
    assert list(r.state.gpus_of) == list(rep.placement.gpus)
    assert r.state.allocated_milli == int(rep.curves["alloc_milli"].iloc[-1])


def test_blocked_by_fragmentation_is_pending_demand_the_free_total_could_hold():
    # two 1-GPU nodes, each half used by a 500-milli job for 10 s (20,000 milli-cores each: one per 32,000-core
    # node); a 1-GPU job arrives at t=1: 1000 milli free in total but no node has a free GPU -> blocked by
    # fragmentation (1 job, 1000 milli) from t=1 to t=10. A second such job at t=1 waits too, but the free total
    # holds only one of them: still 1 blocked job, 1000 milli
    c = Cluster([32000, 32000], [1024, 1024], [1, 1], ["T4", "T4"])
    t = TaskSet([20000, 20000, 1000, 1000], [0] * 4, [1, 1, 1, 1], [500, 500, 1000, 1000])
    r = simulate(c, JobSet(t, [0.0, 0.0, 1.0, 1.0], [10.0, 10.0, 1.0, 1.0]), "gpu-packing", "backfill")
    assert sorted(r.node[:2].tolist()) == [0, 1]
    row = r.series[r.series["time_s"] == 1.0].iloc[0]
    assert (row["pending"], row["pending_milli"], row["blocked_jobs"], row["blocked_milli"]) == (2, 2000, 1, 1000)
    assert r.start_s[2:].tolist() == [10.0, 10.0]                     # both start when the half jobs leave
    assert run_stats(r)["blocked_job_hours"] == pytest.approx(9 / 3600)   # one job blocked for 9 s


def test_time_average_and_sampling():
    times, values = np.array([0.0, 10.0, 20.0]), np.array([1.0, 3.0, 0.0])
    assert time_average(times, values, (0.0, 20.0)) == pytest.approx(2.0)     # (10 x 1 + 10 x 3) / 20
    assert time_average(times, values, (15.0, 25.0)) == pytest.approx(1.5)    # (5 x 3 + 5 x 0) / 10
    import pandas as pd

    s = sample_series(pd.DataFrame({"time_s": times, "v": values}), 7.0)
    assert s["time_s"].tolist() == [0.0, 7.0, 14.0, 21.0] and s["v"].tolist() == [1.0, 1.0, 3.0, 0.0]


def test_workload_file_round_trip_and_bad_rows(tmp_path):
    jobs = JobSet(whole(1, 2), [0.0, 3.5], [10.0, INF])
    back = read_workload(jobs.save(tmp_path / "w.csv"))
    assert back.submit_s.tolist() == [0.0, 3.5] and back.duration_s.tolist() == [10.0, INF]
    assert back.tasks.names == jobs.tasks.names
    header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,submit_s,duration_s\n"
    cases = {
        "neg.csv": (header + "a,1000,0,1,1000,,0,5\nb,1000,0,1,1000,,1,-2\n", r"neg.csv: job row 1: .*'duration_s'"),
        "gap.csv": (header + "a,1000,0,1,1000,,0,\n", r"gap.csv: job row 0: field 'duration_s' is missing"),
        "col.csv": (header.replace("gpu_spec", "colour") + "a,1,0,0,0,x,0,1\n",
                    r"col.csv: unknown column colour; expected name, submit_s, "),
        "shape.csv": (header + "a,1000,0,2,500,,0,1\n", r"shape.csv: task row 0: a multi-GPU task"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=message):
            read_workload(tmp_path / name)
