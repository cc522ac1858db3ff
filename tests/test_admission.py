"""Rejection at submission and its reason (fgdopt.timeline.admission): hand-worked cases, the engine's and the
schedule's use of the one rule, ``status`` / ``reason`` in the timeline study's jobs.csv, and a property against
the feasibility rule on random instances."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments import timeline as study
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.admission import reason_lines, rejection_reasons
from fgdopt.timeline.schedule import rejected_jobs

# two nodes: T4 x2 with 32 cores / 64 GiB, P100 x1 with 16 cores / 128 GiB
CLUSTER = Cluster([32000, 16000], [65536, 131072], [2, 1], ["T4", "P100"])
# job   cpu     mem     gpus milli spec     why
# 0     1000    0       1    500   ""       fits
# 1     1000    0       4    1000  ""       gpus: no node has 4 GPUs
# 2     1000    0       1    1000  "A100"   gpu_spec: no A100 node
# 3     40000   0       1    1000  ""       cpu: 40 cores > 32 (T4) and > 16 (P100)
# 4     20000   100000  1    1000  ""       memory: the node with 20 cores (T4) has 64 GiB; P100 has 16 cores
# 5     20000   100000  0    0     ""       memory too (CPU-only: the same two tests without the GPU ones)
# 6     1000    0       2    1000  "P100"   gpus: the one P100 node has 1 GPU
TASKS = TaskSet([1000, 1000, 1000, 40000, 20000, 20000, 1000], [0, 0, 0, 0, 100000, 100000, 0],
                [1, 4, 1, 1, 1, 0, 2], [500, 1000, 1000, 1000, 1000, 0, 1000],
                ["", "", "A100", "", "", "", "P100"])
EXPECTED = ["", "gpus", "gpu_spec", "cpu", "memory", "memory", "gpus"]


def test_reasons_worked_by_hand():
    assert rejection_reasons(CLUSTER, TASKS).tolist() == EXPECTED


def test_workers_reason_counts_parts_per_empty_node():
    # one 1-GPU part of 10 cores: the T4 node holds min(32000 // 10000, 2 // 1) = 2, the P100 node 1 -> 3 parts
    three, four = (TaskSet([10000], [0], [1], [1000], workers=[w]) for w in (3, 4))
    assert ClusterState(CLUSTER, three).part_counts(three[0]).tolist() == [2, 1]
    assert rejection_reasons(CLUSTER, three).tolist() == [""]
    assert rejection_reasons(CLUSTER, four).tolist() == ["workers"]
    # a 300-milli share: 3 per GPU -> T4 holds 6 (CPU 1 core each: 32), P100 holds 3; 9 parts fit, 10 do not
    nine, ten = (TaskSet([1000], [0], [1], [300], workers=[w]) for w in (9, 10))
    assert rejection_reasons(CLUSTER, nine).tolist() == [""]
    assert rejection_reasons(CLUSTER, ten).tolist() == ["workers"]


def test_engine_and_schedule_give_the_reasons():
    jobs = JobSet(TASKS, np.arange(7.0), np.full(7, 10.0))
    result = simulate(CLUSTER, jobs, "best-fit", "fifo", frag=False)
    frame = result.job_frame()
    assert frame["status"].tolist() == ["finished"] + ["rejected"] * 6
    assert frame["reason"].tolist() == EXPECTED
    assert rejected_jobs(CLUSTER, jobs).tolist() == [r != "" for r in EXPECTED]
    assert reason_lines(frame["reason"].to_numpy()) == [
        "1 job(s) rejected (gpu_spec): no node has a GPU model its gpu_spec allows",
        "2 job(s) rejected (gpus): no node of an allowed GPU model has num_gpu GPUs",
        "1 job(s) rejected (cpu): no node that holds its GPUs (if any) has cpu_milli milli-cores",
        "2 job(s) rejected (memory): no node that holds its GPUs (if any) and its CPU has memory_mib MiB"]


def test_dropped_jobs_are_busy():
    # one 1-GPU node; the none discipline drops the second job, which arrives while the first runs
    c = Cluster([8000], [1024], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 2, [0] * 2, [1] * 2, [1000] * 2), [0.0, 1.0], [10.0, 5.0])
    frame = simulate(c, jobs, "best-fit", "none", frag=False).job_frame()
    assert frame["status"].tolist() == ["finished", "dropped"] and frame["reason"].tolist() == ["", "busy"]


def test_timeline_study_jobs_csv_has_status_and_reason(tmp_path, capsys):
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"nodes": CLUSTER.to_records()}))
    frame = pd.DataFrame({"name": [f"j{i}" for i in range(7)], "cpu_milli": TASKS.cpu_milli,
                          "memory_mib": TASKS.memory_mib, "num_gpu": TASKS.num_gpu, "gpu_milli": TASKS.gpu_milli,
                          "gpu_spec": TASKS.gpu_spec, "submit_s": np.arange(7.0), "duration_s": 10.0})
    frame.to_csv(tmp_path / "w.csv", index=False)
    assert study.main(["--workload", str(tmp_path / "w.csv"), "--cluster", str(cluster), "--policies", "best-fit",
                       "--queue", "fifo", "--seeds", "1", "--instants", "0", "--output", str(tmp_path / "o")]) == 0
    jobs = pd.read_csv(tmp_path / "o" / "jobs.csv", keep_default_na=False)
    assert jobs["status"].tolist() == ["finished"] + ["rejected"] * 6
    assert jobs["reason"].tolist() == EXPECTED
    assert (jobs["node"].iloc[1:] == -1).all()
    out = capsys.readouterr().out
    assert "w, seed 1: 2 job(s) rejected (gpus): no node of an allowed GPU model has num_gpu GPUs" in out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_reason_is_empty_exactly_where_an_empty_node_fits(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(1, 5)), 30
    cluster = Cluster(rng.choice([4000, 16000], k), rng.choice([1024, 8192], k), rng.choice([0, 1, 2, 4, 8], k),
                      rng.choice(["T4", "V100"], k))
    num_gpu = rng.choice([0, 1, 2, 4, 8], n)
    milli = np.where(num_gpu == 0, 0, np.where(num_gpu == 1, rng.choice([250, 1000], n), 1000))
    tasks = TaskSet(rng.choice([1000, 8000, 20000], n), rng.choice([0, 4096, 16384], n), num_gpu, milli,
                    rng.choice(["", "T4", "V100", "A100", "T4|V100"], n))
    reasons = rejection_reasons(cluster, tasks)
    empty = ClusterState(cluster, tasks)
    fits = np.array([empty.feasible_nodes(t).any() for t in tasks])
    assert ((reasons == "") == fits).all()
    for t, why in zip(tasks, reasons, strict=True):             # each reason names a test that really fails
        allowed = empty.spec_mask(t.gpu_spec) if t.num_gpu else np.ones(k, dtype=bool)
        if why == "gpu_spec":
            assert not allowed.any()
        elif why == "gpus":
            assert allowed.any() and not (allowed & (cluster.gpu >= t.num_gpu)).any()
        elif why == "cpu":
            assert not (allowed & (cluster.gpu >= t.num_gpu) & (cluster.cpu_milli >= t.cpu_milli)).any()
        elif why == "memory":
            assert (allowed & (cluster.gpu >= t.num_gpu) & (cluster.cpu_milli >= t.cpu_milli)).any()
