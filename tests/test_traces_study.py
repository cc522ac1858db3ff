"""python -m experiments.traces on the converters' fixtures: statistics by hand, gangs run beside single-node jobs,
rejections with their reason, a converted folder as --workload, bad input in one line."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from experiments import convert as convert_cli
from experiments import traces as study
from experiments.traces import FIXTURE_DIR, FIXTURES


def test_quick_run_on_the_fixtures(tmp_path, capsys):
    out = tmp_path / "o"
    assert study.main(["--quick", "--output", str(out)]) == 0
    shapes = pd.read_csv(out / "traces_stats.csv").set_index(["workload", "shape"])
    # helios j0: 2 workers x 8 GPUs x 1 h = 16 GPU-hours; j3: 2 x 6 GPUs x 2 h = 24
    assert shapes.loc[("helios", "2 x 8 GPU"), ["class", "jobs", "gpu_hours"]].tolist() == ["gang", 1, 16.0]
    assert shapes.loc[("helios", "2 x 6 GPU"), "gpu_hours"] == 24.0
    # openb o0: half a GPU for 390 s
    assert shapes.loc[("openb", "1 x 0.5 GPU"), "gpu_hours"] == pytest.approx(0.5 * 390 / 3600)
    runs = pd.read_csv(out / "traces.csv")
    assert len(runs) == 7 * 2 * 2
    helios = runs[runs.workload == "helios"]
    # helios: its 3 gangs run too; on nodes as many as its 54.1 GPU-hours over 670 s of submissions need (37 of 8
    # GPUs) nothing waits
    assert (helios.jobs_run == 25).all() and (helios.not_run == 0).all() and (helios.finished == 25).all()
    assert (helios.mean_wait_gang_s == 0).all() and (helios.mean_wait_single_s == 0).all()
    # spot2026: the 15 regular A10 jobs of 2, 4 or 8 GPUs (i % 4 != 0) find no A10 node of that many GPUs, and its
    # 2 gangs (94 workers of 1 A100, 3 of half an A10) do not fit its nodes together
    spot = runs[runs.workload == "spot2026"]
    assert (spot.rejected == 15 + 2).all() and (spot.not_run == 0).all()
    jobs = pd.read_csv(out / "traces_jobs.csv", keep_default_na=False)
    spot_jobs = jobs[(jobs.workload == "spot2026") & (jobs.policy == "fgd") & (jobs.queue == "fifo")]
    rejected = spot_jobs[spot_jobs.status == "rejected"]
    assert sorted(rejected.name) == sorted([*(f"r{i}" for i in range(20) if i % 4), "s0", "s2"])
    assert rejected.set_index("name").reason.to_dict() == {**{f"r{i}": "gpus" for i in range(20) if i % 4},
                                                           "s0": "workers", "s2": "workers"}
    gangs = jobs[(jobs.workers > 1) & (jobs.policy == "fgd") & (jobs.queue == "fifo")]
    assert gangs.groupby("workload").size().to_dict() == {"acme": 1, "helios": 3, "pai2020": 2, "philly": 2,
                                                         "spot2026": 2, "swf": 2}
    assert (gangs["class"] == "gang").all()
    assert (out / "traces.png").stat().st_size > 10_000
    text = capsys.readouterr().out
    assert "helios: 25 jobs, 3 gangs (up to 2 workers), " in text
    assert "spot2026: 15 job(s) rejected (gpus): no node of an allowed GPU model has num_gpu GPUs" in text
    assert "spot2026: 2 job(s) rejected (workers): the gang's workers do not fit the empty cluster together" in text


def test_a_converted_folder_is_a_workload(tmp_path):
    conv = tmp_path / "openb-fixture"
    assert convert_cli.main(["--format", "openb", "--input", *[str(FIXTURE_DIR / p) for p in FIXTURES["openb"]],
                             "--output", str(conv)]) == 0
    out = tmp_path / "o"
    assert study.main(["--workload", str(conv), "--policies", "best-fit", "--queue", "fifo", "--output",
                       str(out)]) == 0
    runs = pd.read_csv(out / "traces.csv")
    assert runs[["workload", "jobs_run", "not_run", "finished"]].values.tolist() == [["openb-fixture", 23, 0, 23]]


def test_bad_workload_is_one_line(tmp_path, capsys):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "workload.csv").write_text("submit_s,duration_s,num_gpu,cpu_milli,memory_mib\n0,-1,1,1,1\n")
    with pytest.raises(SystemExit) as exit_:
        study.main(["--workload", str(tmp_path / "w"), "--output", str(tmp_path / "o")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "workload.csv: job row 0: field 'duration_s' must be a number >= 0, got -1" in err[0]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("cluster", "named"), [
    # a bad node value, and a bare list of nodes: neither named cluster.json before (the second said only "list
    # indices must be integers or slices, not str")
    ({"nodes": [{"cpu_milli": -1, "memory_mib": 1, "gpu": 2, "model": "T4"}]},
     "cluster.json: not a valid node list (node row 0: field 'cpu_milli' is negative (-1))"),
    ([{"cpu_milli": 1, "memory_mib": 1, "gpu": 2, "model": "T4"}],
     "cluster.json: not a valid node list (expected a JSON object with a 'nodes' list, got a list)"),
    ({"nodes": []}, "cluster.json: no nodes"),
])
def test_bad_cluster_file_is_one_line_naming_it(tmp_path, capsys, cluster, named):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "workload.csv").write_text("submit_s,duration_s,num_gpu,cpu_milli,memory_mib\n0,1,1,1,1\n")
    (tmp_path / "w" / "cluster.json").write_text(json.dumps(cluster))
    with pytest.raises(SystemExit) as exit_:
        study.main(["--workload", str(tmp_path / "w"), "--output", str(tmp_path / "o")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0], err
    assert not (tmp_path / "o").exists()


def test_default_cluster_of_jobs_that_never_end_is_one_node_per_gpu_worker(tmp_path):
    # three GPU jobs submitted at one instant, one never ending and one of 1e12 s: at load 1 over a span of (at
    # least) 1 s they asked for inf nodes (OverflowError) or 4e10 (MemoryError); one node per GPU worker runs them
    # all at once
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "workload.csv").write_text("submit_s,duration_s,num_gpu,gpu_milli,cpu_milli,memory_mib,workers\n"
                                                 "5,inf,1,1000,1,1,1\n5,1e12,8,1000,1,1,1\n5,100,1,300,1,1,2\n"
                                                 "5,inf,0,0,1,1,1\n")
    frame, cluster = study.load(str(tmp_path / "w"))
    assert cluster is None
    assert study.default_cluster(frame, None).gpu.tolist() == [8] * 4
    assert study.main(["--workload", str(tmp_path / "w"), "--policies", "fgd", "--queue", "fifo", "--output",
                       str(tmp_path / "o")]) == 0
    runs = pd.read_csv(tmp_path / "o" / "traces.csv")
    assert runs[["jobs_run", "rejected", "finished", "mean_wait_single_s", "mean_wait_gang_s"]].values.tolist() == \
        [[4, 0, 2, 0.0, 0.0]]


def test_nodes_without_a_workload_it_sizes_is_refused(tmp_path, capsys):
    # --nodes sizes only a workload without cluster.json: with every workload listing its nodes it was ignored
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "workload.csv").write_text("submit_s,duration_s,num_gpu,cpu_milli,memory_mib\n0,1,1,1,1\n")
    (tmp_path / "w" / "cluster.json").write_text(json.dumps({"nodes": [{"cpu_milli": 8000, "memory_mib": 8192,
                                                                        "gpu": 2, "model": "T4"}]}))
    with pytest.raises(SystemExit) as exit_:
        study.main(["--workload", str(tmp_path / "w"), "--nodes", "3", "--output", str(tmp_path / "o")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("python -m experiments.traces: error: argument --nodes: it sizes the cluster of "
                                       "a workload without cluster.json, and every workload lists its nodes\n")
    assert not (tmp_path / "o").exists()


def test_two_processes_give_the_same_files(tmp_path):
    common = ["--policies", "best-fit", "--queue", "fifo,backfill"]
    for jobs, out in (("1", "a"), ("2", "b")):
        assert study.main([*common, "--jobs", jobs, "--output", str(tmp_path / out)]) == 0
    for name in ("traces_stats.csv", "traces.csv", "traces_jobs.csv"):
        a, b = (pd.read_csv(tmp_path / d / name).drop(columns="cpu_s", errors="ignore") for d in ("a", "b"))
        pd.testing.assert_frame_equal(a, b)


def test_the_printed_table_shows_times_below_a_tenth(tmp_path, capsys):
    """Jobs of a microsecond (a converted trace in seconds of a fine clock): the printed run table showed their mean
    JCT and makespan as 0.0 (one decimal); it shows them to a significant digit, as every study's printed table does
    (:func:`experiments.outputs.printed`), and leaves out the gang column, empty without gangs."""
    folder = tmp_path / "micro"
    folder.mkdir()
    (folder / "workload.csv").write_text("submit_s,duration_s,num_gpu,cpu_milli,memory_mib\n"
                                         + "".join(f"{i}e-6,1e-6,1,1000,1000\n" for i in range(4)))
    assert study.main(["--workload", str(folder), "--policies", "fgd", "--queue", "fifo",
                       "--output", str(tmp_path / "o")]) == 0
    assert pd.read_csv(tmp_path / "o" / "traces.csv")["mean_jct_s"].tolist() == [pytest.approx(1e-6)]
    table = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(table) if line.startswith("workload"))
    assert "mean JCT (s)" in table[head] and "gang" not in table[head]
    assert table[head + 1].split()[-3:-1] == ["1e-06", "4e-06"], table[head + 1]     # the last ends at 4 us
