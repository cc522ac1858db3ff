"""experiments.timeline, formulations.timeline and the openb job source: the optimum at an instant, the load knob,
determinism, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from experiments import timeline as study
from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import JobSet, run_stats, simulate
from fgdopt.timeline.sources import SERVICE_S, openb_jobs
from formulations.timeline import InstantOptimum, admission_optimum, placement_optimum

TWO_GPUS = Cluster([32000], [1024], [2], ["T4"])


def test_optimum_at_an_instant_of_a_fifo_run():
    # one 2-GPU node. A (1 GPU, 0..10 s); B (2 GPUs, t=1) blocks the FIFO head; C (1 GPU, t=2) waits behind it.
    # At t=5: A runs (1000 allocated); present A, B, C. (i) placed afresh, A + C or B alone: 2000 = capacity.
    # (ii) without moving A: C fits the free GPU (1000), B cannot: 1000, proven (greedy = free capacity).
    jobs = JobSet(TaskSet([1000] * 3, [0] * 3, [1, 2, 1], [1000] * 3), [0.0, 1.0, 2.0], [10.0, 5.0, 3.0])
    r = simulate(TWO_GPUS, jobs, "best-fit", "fifo", snapshots=[5.0])
    (snap,) = r.snapshots
    assert snap.running == 1 and snap.jobs.tolist() == [0, 1, 2] and snap.allocated_milli == 1000
    placed, _ = placement_optimum(snap, time_limit=20, tol=0.0)
    assert (placed.current, placed.incumbent, placed.bound, placed.status) == (1000, 2000, 2000, "optimal")
    admit = admission_optimum(snap, time_limit=20)
    assert (admit.incumbent, admit.bound, admit.status) == (1000, 1000, "optimal")
    # after a backfilling pass nothing pending fits: 0, certified without a solver
    back = simulate(TWO_GPUS, jobs, "best-fit", "backfill", snapshots=[3.0])
    assert back.snapshots[0].running == 2
    assert admission_optimum(back.snapshots[0]).bound == 0


def test_admission_exact_model_beats_the_greedy_where_small():
    # one node with 2 free GPUs and 4000 milli-cores free (node 10000, a running CPU job holds 6000); pending
    # X = 1 GPU with 4000 cores, Y = Z = 1 GPU with 2000 cores. Largest-first greedy takes X (1000; no CPU left);
    # the exact model takes Y + Z (2000).
    c = Cluster([10000], [1024], [2], ["T4"])
    t = TaskSet([6000, 4000, 2000, 2000], [0] * 4, [0, 1, 1, 1], [0, 1000, 1000, 1000])
    jobs = JobSet(t, [0.0, 1.0, 1.0, 1.0], [100.0, 5.0, 5.0, 5.0])
    from fgdopt.state import Placement
    from fgdopt.timeline.engine import Snapshot

    snap = Snapshot(1.0, c, t, Placement([0, -1, -1, -1], [(), (), (), ()]), np.arange(4), 1)
    opt = admission_optimum(snap, time_limit=20)
    assert (opt.incumbent, opt.bound, opt.status) == (2000, 2000, "optimal")
    assert jobs.offered_gpu_s == 15000.0                               # 3 jobs x 1000 milli x 5 s


def test_instant_optimum_checks_its_order():
    with pytest.raises(ValueError, match="current 5 <= incumbent 4"):
        InstantOptimum("placement", 0.0, 5, 4, 6, "feasible", 0.1)


def _files(tmp_path):
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"nodes": [{"cpu_milli": 32000, "memory_mib": 65536, "gpu": 2, "model": "T4"},
                                             {"cpu_milli": 16000, "memory_mib": 65536, "gpu": 1, "model": "P100"}]}))
    rng = np.random.default_rng(3)
    n = 40
    frame = pd.DataFrame({"name": [f"j{i}" for i in range(n)], "cpu_milli": rng.choice([1000, 4000], n),
                          "memory_mib": 0, "num_gpu": rng.choice([0, 1, 1, 2], n), "gpu_spec": ""})
    frame["gpu_milli"] = np.where(frame["num_gpu"] == 0, 0, np.where(frame["num_gpu"] == 2, 1000,
                                                                     rng.choice([300, 500, 1000], n)))
    frame["submit_s"] = np.sort(np.round(rng.uniform(0, 100, n)))
    frame["duration_s"] = np.round(rng.exponential(30, n))
    workload = tmp_path / "jobs.csv"
    frame.to_csv(workload, index=False)
    return workload, cluster


def test_study_on_a_workload_file_is_deterministic_and_equal_with_two_processes(tmp_path):
    workload, cluster = _files(tmp_path)
    common = ["--workload", str(workload), "--cluster", str(cluster), "--policies", "fgd,best-fit", "--queue",
              "fifo,backfill", "--seeds", "1", "--instants", "1", "--time-limit", "20", "--sample", "10"]
    assert study.main([*common, "--output", str(tmp_path / "a")]) == 0
    assert study.main([*common, "--output", str(tmp_path / "b"), "--jobs", "2"]) == 0
    for name in ("timeline.csv", "jobs.csv", "series.csv", "optimum.csv"):
        a, b = pd.read_csv(tmp_path / "a" / name), pd.read_csv(tmp_path / "b" / name)
        timing = [c for c in a.columns if c in ("wall_s", "cpu_s")]
        pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=timing))
    runs = pd.read_csv(tmp_path / "a" / "timeline.csv")
    assert len(runs) == 4 and set(runs["queue"]) == {"fifo", "backfill"}
    assert (runs["jobs"] == 40).all() and (runs["unfinished"] == 0).all()
    opt = pd.read_csv(tmp_path / "a" / "optimum.csv")
    assert (opt["current_milli"] <= opt["incumbent_milli"]).all()
    assert (opt["incumbent_milli"] <= opt["bound_milli"]).all()
    jobs = pd.read_csv(tmp_path / "a" / "jobs.csv")
    assert len(jobs) == 160 and (jobs.loc[jobs["start_s"].isna(), "node"] == -1).all()
    assert (tmp_path / "a" / "timeline.png").stat().st_size > 10_000


def test_study_bad_input_is_one_line(tmp_path, capsys):
    workload, cluster = _files(tmp_path)
    bad = tmp_path / "bad.csv"
    pd.read_csv(workload).assign(duration_s=lambda f: np.where(f.index == 3, -5.0, f["duration_s"])).to_csv(
        bad, index=False)
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"nodes": [{"cpu_milli": 1000, "memory_mib": 1, "gpu": 17, "model": "T4"}]}))
    small = tmp_path / "small.json"                  # every job asks 1,000 or 4,000 milli-cores: none fits
    small.write_text(json.dumps({"nodes": [{"cpu_milli": 500, "memory_mib": 65536, "gpu": 2, "model": "T4"}]}))
    for args, message in (([str(bad), str(cluster)], "bad.csv: job row 3: field 'duration_s' must be a number >= 0"),
                          ([str(workload), str(nodes)], "nodes.json: not a valid node list (node row 0: field 'gpu'"),
                          ([str(workload), str(small)], "error: --workload: none of its 40 jobs fits an empty node of "
                                                        "--cluster (job 0 (j0): cpu: ")):
        with pytest.raises(SystemExit) as exit_:
            study.main(["--workload", args[0], "--cluster", args[1], "--output", str(tmp_path / "o")])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert message in err


def test_mig_runs_take_the_mig_policies(tmp_path, capsys, monkeypatch):
    """With --mig a policy that places by milli-GPU (fgd, best-fit) would pick GPUs whose MIG slices are taken: one
    line naming it, before any work; without --policies the four MIG policies run (--quick: two of them, and no
    optimum instant: the certified optimum is not a MIG model)."""
    with pytest.raises(SystemExit) as exit_:
        study.main(["--mig", "A100-40GB", "--policies", "mig-fgd,best-fit", "--output", str(tmp_path)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "--policies: best-fit places by milli-GPU, not by MIG slices; with --mig use mig-fgd, mig-first-fit, "
        "mig-best-fit, mig-greedy (or your own module:attribute policy)")
    seen = {}

    def cells_only(name, run, cells, args, keys, write, prog):
        seen["policies"], seen["instants"] = sorted({c[3] for c in cells}), {c[9] for c in cells}
        return None, 1

    monkeypatch.setattr(study, "run_and_write", cells_only)
    study.main(["--mig", "A100-40GB", "--output", str(tmp_path)])
    assert seen["policies"] == sorted(["mig-fgd", "mig-first-fit", "mig-best-fit", "mig-greedy"])
    study.main(["--mig", "A100-40GB", "--quick", "--output", str(tmp_path)])
    assert seen["policies"] == ["mig-best-fit", "mig-fgd"] and seen["instants"] == {0}    # (not a MIG model)
    study.main(["--quick", "--output", str(tmp_path)])
    assert seen["policies"] == ["best-fit", "fgd"] and seen["instants"] == {1}
    study.main(["--output", str(tmp_path)])
    assert seen["policies"] == ["best-fit", "fgd", "random"]


def test_a_failing_policy_keeps_the_runs_that_finished(tmp_path, capsys):
    workload, cluster = _files(tmp_path)
    mod = tmp_path / "broken_policy.py"
    mod.write_text("class Broken:\n    name = 'broken'\n    def __init__(self, **kw):\n        pass\n"
                   "    def __call__(self, state, task):\n        raise RuntimeError('boom')\n")
    code = study.main(["--workload", str(workload), "--cluster", str(cluster), "--policies",
                       f"best-fit,{mod}:Broken", "--queue", "backfill", "--seeds", "1", "--instants", "0",
                       "--output", str(tmp_path / "o")])
    assert code == 2
    assert "raised RuntimeError on job" in capsys.readouterr().err
    runs = pd.read_csv(tmp_path / "o" / "timeline.csv")
    assert runs["policy"].tolist() == ["best-fit"]                     # the finished run is written


@pytest.mark.trace
def test_openb_jobs_services_warm_start_and_window(openb_dir):
    cluster, jobs = openb_jobs("default", 0.6, 2000, seed=5, data_dir=openb_dir)
    names = np.array(jobs.tasks.names)
    services = ~np.char.startswith(names.astype(str), "warm:") & ~np.char.startswith(names.astype(str), "job:")
    from fgdopt.traces import read_pods

    pods = read_pods("default", openb_dir)
    ran = pods["scheduled_time"] != ""
    life = pods["deletion_time"] - pd.to_numeric(pods["scheduled_time"].where(ran), errors="coerce")
    long_ran = set(pods.loc[ran & (life > SERVICE_S), "name"])
    assert len(long_ran) == 86                                         # semantics: 86 pods live longer than a day
    # the services: those 86, and the never-scheduled pods whose drawn lifetime exceeds a day
    extra = set(names[services]) - long_ran
    assert long_ran <= set(names[services]) and extra <= set(pods.loc[~ran, "name"])
    assert (jobs.duration_s[services] > SERVICE_S).all() and (jobs.submit_s[services] == 0).all()
    stream = np.char.startswith(names.astype(str), "job:")
    assert stream.sum() == 2000 and not jobs.measured[~stream].any()
    w0, w1 = jobs.window_s
    assert w0 == pytest.approx(0.1 * w1) and w1 == jobs.submit_s.max()
    assert (jobs.measured == stream & (jobs.submit_s >= w0)).all()


@pytest.mark.trace
@pytest.mark.parametrize("arrivals", ["poisson", "trace"])
def test_the_load_knob_is_real(openb_dir, arrivals):
    # with nothing queued, the time-averaged allocation over the window is the offered load, within 5%
    cluster, jobs = openb_jobs("default", 0.5, 3000, seed=11, arrivals=arrivals, data_dir=openb_dir)
    r = simulate(cluster, jobs, "best-fit", "backfill", seed=11, frag=False)
    stats = run_stats(r)
    assert r.series["pending"].max() == 0 and stats["rejected"] == 0
    assert stats["alloc_time_avg_pct"] == pytest.approx(50.0, rel=0.05)


def test_failures_on_a_workload_that_cannot_end_in_time_stop_at_the_door(tmp_path, capsys):
    """One 1-GPU node: under the published failure rates it fails every 4.69e7 s (node and GPU), so a job of 1e15 s
    means about 2.1e7 failures before the run can end (it ran past 150 s, far from done); refused in one line,
    nothing written. A job of 1e7 s (0.2 failures expected) runs."""
    cluster = tmp_path / "one.json"
    cluster.write_text(json.dumps({"nodes": [{"cpu_milli": 8000, "memory_mib": 65536, "gpu": 1, "model": "T4"}]}))
    head = "submit_s,duration_s,num_gpu,cpu_milli,memory_mib\n"
    for duration, runs in (("1e15", False), ("1e7", True)):
        work = tmp_path / f"w{duration}.csv"
        work.write_text(head + f"0,{duration},1,1000,1024\n5,30,1,1000,1024\n")
        argv = ["--workload", str(work), "--cluster", str(cluster), "--mechanism", "failures", "--policies", "fgd",
                "--queue", "fifo", "--instants", "0", "--output", str(tmp_path / duration)]
        if runs:
            assert study.main(argv) == 0
            continue
        with pytest.raises(SystemExit) as exit_:
            study.main(argv)
        assert exit_.value.code == 2 and not (tmp_path / duration).exists()
        assert capsys.readouterr().err.strip().endswith(
            "--mechanism failures: a failure every 4.69e+07 s on these nodes and GPUs, and the last job cannot finish "
            "before 1e+15 s: about 2.13e+07 failures (at most 1,000,000); the run would not end in reasonable time "
            "(--workload w1e15.csv)")
