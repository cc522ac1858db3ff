"""The trace converters (fgdopt.workloads.convert, python -m experiments.convert) on their fixtures
(tests/data/traces, written by make_fixtures.py): counts, shapes and times worked by hand from the fixture rows, the
gang rule of each format, bad input in one line with the output folder kept, and the SWF export -> import round
trip.

Every fixture ends with 20 regular single-node jobs ``r0..r19``: ``g_i = (1, 2, 4, 8)[i % 4]`` GPUs, submitted at
``100 + 30 i`` s after the first job, running ``60 (i + 1)`` s."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments import convert as cli
from experiments.traces import FIXTURE_DIR, FIXTURES
from fgdopt.timeline import read_workload
from fgdopt.workloads.convert import convert
from fgdopt.workloads.convert.swf import write_swf
from fgdopt.workloads.format import check_workload_frame

DATA = FIXTURE_DIR
REG_GPU = np.array([(1, 2, 4, 8)[i % 4] for i in range(20)])
REG_SUBMIT = 100.0 + 30 * np.arange(20)
REG_DURATION = 60.0 * (np.arange(20) + 1)
INPUTS = FIXTURES


def run(fmt: str):
    conv = convert(fmt, [DATA / p for p in INPUTS[fmt]])
    return conv, conv.jobs.set_index("name")


def row(jobs: pd.DataFrame, name: str) -> tuple:
    r = jobs.loc[name]
    return (r.submit_s, r.duration_s, r.workers, r.num_gpu, r.gpu_milli, r.cpu_milli, r.memory_mib, r.gpu_spec)


def regular(jobs: pd.DataFrame, offset: float = 0.0) -> None:
    r = jobs.loc[[f"r{i}" for i in range(20)]]
    assert r.num_gpu.tolist() == REG_GPU.tolist() and (r.workers == 1).all()
    assert r.submit_s.tolist() == (REG_SUBMIT + offset).tolist() and r.duration_s.tolist() == REG_DURATION.tolist()


def test_helios():
    conv, jobs = run("helios")
    # 27 rows: j5 (no submit_time) and j6 (no duration) dropped
    assert (conv.rows, len(jobs), conv.dropped) == (27, 25, {"no submit_time, duration or node_num": 2})
    assert row(jobs, "j0") == (0.0, 3600.0, 2, 8, 1000, 16000, 0, "")     # gpu 16, cpu 32 on 2 nodes
    assert row(jobs, "j3") == (70.0, 7200.0, 2, 6, 1000, 12000, 0, "")    # 12 GPUs on 2 nodes
    assert row(jobs, "j4") == (80.0, 30.0, 2, 2, 1000, 3000, 0, "")       # 3 GPUs on 2 nodes: 2 each, rounded up
    assert row(jobs, "j2") == (60.0, 0.0, 1, 0, 0, 2000, 0, "")           # CPU-only, zero duration
    regular(jobs)
    assert conv.summary("helios", [])["gangs"] == 3 and conv.nodes is None
    assert any("1 job(s) rounded up" in a for a in conv.assumed) and any("memory_mib 0" in a for a in conv.assumed)


def test_acme():
    conv, jobs = run("acme")
    assert (conv.rows, len(jobs)) == (24, 23)                              # a3 has no submit_time
    assert row(jobs, "a0") == (0.0, 1000.0, 4, 8, 1000, 128000, 800 * 1024, "")   # 32 GPUs, 512 cores on 4 nodes
    assert row(jobs, "a2") == (6.0, 20.0, 1, 0, 0, 16000, 10 * 1024, "")
    regular(jobs)
    assert jobs.loc["r3"].cpu_milli == 16 * 8 * 1000 and jobs.loc["r3"].memory_mib == 20 * 8 * 1024


def test_philly():
    conv, jobs = run("philly")
    # p3 has no attempt, p4's last attempt has no end time
    assert (conv.rows, len(jobs)) == (25, 23) and "p3" not in jobs.index and "p4" not in jobs.index
    assert row(jobs, "p0") == (0.0, 3600.0, 2, 8, 1000, 0, 0, "")          # last attempt 20..3620 s on m0 and m1
    assert row(jobs, "p2") == (30.0, 60.0, 2, 4, 1000, 0, 0, "")           # 4 + 2 GPUs: 2 workers of 4 (rounded)
    regular(jobs)
    assert [(n["gpu"], n["model"]) for n in conv.nodes] == [(8, "24GB"), (8, "24GB"), (2, "12GB"), (8, "24GB")]


def test_pai2020():
    conv, jobs = run("pai2020")
    assert (conv.rows, len(jobs)) == (25, 24)                              # J3's task has no end_time
    # plan_cpu 600 (% of a core), plan_mem 29.3 GB, plan_gpu 100 (% of a GPU) per instance, 4 instances
    assert row(jobs, "J0/worker") == (0.0, 3600.0, 4, 1, 1000, 6000, 30004, "V100")
    assert row(jobs, "J0/ps") == (0.0, 3600.0, 1, 0, 0, 8000, 10240, "")
    assert row(jobs, "J1/worker") == (10.0, 60.0, 1, 1, 500, 4000, 15360, "T4")   # plan_gpu 50: half a GPU
    assert row(jobs, "J2/worker") == (20.0, 30.0, 2, 3, 1000, 8000, 61440, "")   # 250 -> 3 GPUs; MISC: any model
    assert jobs.loc["J1/worker"].user == "user1"
    r = jobs.loc[[f"R{i}/worker" for i in range(20)]]
    assert r.num_gpu.tolist() == REG_GPU.tolist() and r.duration_s.tolist() == REG_DURATION.tolist()
    assert [(n["gpu"], n["cpu_milli"], n["memory_mib"]) for n in conv.nodes][2:] == [(2, 64000, 262144), (0, 96000,
                                                                                                          524288)]


def test_spot2026():
    conv, jobs = run("spot2026")
    assert (conv.rows, len(jobs)) == (24, 23)                              # s3 has no submit_time
    assert row(jobs, "s0") == (0.0, 7200.0, 94, 1, 1000, 15000, 0, "A100-SXM4-80GB")
    assert row(jobs, "s2") == (20.0, 60.0, 3, 1, 500, 2000, 0, "A10")
    assert jobs.loc["s0"].priority == 1 and jobs.loc["s1"].priority == 0
    assert jobs.loc[[f"r{i}" for i in range(20)]].priority.tolist() == [1 - i % 2 for i in range(20)]
    regular(jobs)
    assert [(n["name"], n["gpu"], n["model"], n["cpu_milli"]) for n in conv.nodes][3] == ("3", 8, "A100-SXM4-80GB",
                                                                                         128000)


def test_swf():
    conv, jobs = run("swf")
    assert (conv.rows, len(jobs)) == (25, 24) and "4" not in jobs.index    # job 4 has run time -1
    assert row(jobs, "1") == (0.0, 3600.0, 2, 8, 1000, 0, 32, "")          # 16 processors; 4096 KB x 8 / 1024
    assert row(jobs, "3") == (20.0, 120.0, 2, 6, 1000, 0, 6, "")           # 12 processors
    assert row(jobs, "5") == (40.0, 30.0, 1, 2, 1000, 0, 0, "")            # allocated -1: requested 2
    assert jobs.loc["1"].user == "7"
    r = jobs.loc[[str(6 + i) for i in range(20)]]
    assert r.num_gpu.tolist() == REG_GPU.tolist() and r.submit_s.tolist() == REG_SUBMIT.tolist()


def test_openb():
    conv, jobs = run("openb")
    assert (conv.rows, len(jobs)) == (23, 23)
    assert row(jobs, "o0") == (0.0, 390.0, 1, 1, 500, 8000, 30000, "")     # deleted 400, scheduled 10
    assert row(jobs, "o1") == (20.0, 60.0, 1, 2, 1000, 4000, 0, "V100M16")
    # o2 (BE) never ran: its lifetime is drawn from the BE pods that ran, o1 alone (60 s)
    assert row(jobs, "o2") == (30.0, 60.0, 1, 0, 0, 1000, 0, "")
    assert jobs.loc[["o0", "o1", "o2", "r0"], "priority"].tolist() == [1, 0, 0, 1]     # LS 1, BE 0
    assert any("1 pod(s) never ran" in a for a in conv.assumed)
    regular(jobs)


def test_swf_export_import_round_trip(tmp_path):
    # whole-GPU jobs in SWF's canonical split (workers = ceil(p / 8)), integer times: the round trip is exact
    frame = check_workload_frame(pd.DataFrame({
        "name": ["1", "2", "3", "4"], "submit_s": [0.0, 5.0, 9.0, 20.0], "duration_s": [100.0, 7.0, 0.0, 3.0],
        "num_gpu": [8, 3, 6, 1], "cpu_milli": 0, "memory_mib": [64, 0, 12, 1], "workers": [2, 1, 2, 1],
        "user": ["a", "b", "a", "c"]}))
    back = convert("swf", [write_swf(frame, tmp_path / "w.swf")]).jobs
    assert back.drop(columns="user").equals(frame.drop(columns="user"))
    assert back["user"].tolist() == ["1", "2", "1", "3"]                   # users numbered in order of appearance
    # the SWF has no node count: 2 workers of 2 GPUs come back as 1 worker of 4
    helios = convert("helios", [DATA / "helios" / "cluster_log.csv"]).jobs.set_index("name")
    again = convert("swf", [write_swf(helios.reset_index(), tmp_path / "h.swf")]).jobs.set_index("name")
    j4 = again.loc[str(list(helios.index).index("j4") + 1)]               # SWF numbers the jobs 1.. in order
    assert (j4.workers, j4.num_gpu, j4.submit_s, j4.duration_s) == (1, 4, 80.0, 30.0)
    assert len(again) == len(helios) - 1                                   # j2 (CPU-only: 0 processors) dropped


def test_cli_writes_the_workload_the_studies_read(tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["--format", "pai2020", "--input", *[str(DATA / p) for p in INPUTS["pai2020"]],
                     "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["rows_read"], summary["jobs_kept"], summary["gangs"], summary["nodes"]) == (25, 24, 2, 4)
    assert summary["dropped"] == {"no start_time or end_time": 1}
    text = capsys.readouterr().out
    assert "pai2020: 25 rows read, 24 jobs kept (2 gangs, up to 4 workers), 4 nodes" in text
    assert "dropped 1: no start_time or end_time" in text
    nodes = json.loads((out / "cluster.json").read_text())["nodes"]
    assert len(nodes) == 4 and nodes[0]["sn"] == "m0"
    jobs = read_workload(out / "workload.csv")                             # the engine's jobs, gangs included
    assert (len(jobs), int((jobs.tasks.workers > 1).sum()), int(jobs.tasks.workers.max())) == (24, 2, 4)


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("fmt", "make", "message"), [
    ("helios", lambda d: _bad(d, "c.csv", "job_id,user,cpu_num,node_num,submit_time,duration\n1,u,1,1,,5\n"),
     r"c.csv: missing column gpu_num; the trace's files have "),
    ("helios", lambda d: _bad(d, "c.csv", "job_id,user,gpu_num,cpu_num,node_num,submit_time,duration\n"
                                          "1,u,1,1,1,2020-01-01 00:00:00,5\n2,u,1,1,1,2020-01-01 00:00:00,-5\n"),
     r"c.csv: row 1: field 'duration' gives a negative duration \(-5 s\)"),
    ("helios", lambda d: _bad(d, "c.csv", "job_id,user,gpu_num,cpu_num,node_num,submit_time,duration\n"
                                          "1,u,8,1,0,2020-01-01 00:00:00,5\n"),
     r"c.csv: row 0: field 'node_num' is 0: a job on 0 nodes \(workers 0\)"),
    ("spot2026", lambda d: _bad(d, "job_info_df.csv", "job_name,organization,gpu_model,cpu_request,gpu_request,"
                                                      "worker_num,submit_time,duration,job_type\n1,o,A10,1,1,0,0,5,HP\n"),
     r"job_info_df.csv: row 0: field 'worker_num' is 0 \(workers 0\)"),
    # every row dropped (no duration): it said "no jobs (a header and no rows)" of a file with a row
    ("helios", lambda d: _bad(d, "c.csv", "job_id,user,gpu_num,cpu_num,node_num,submit_time,duration\n"
                                          "1,u,8,1,1,2020-01-01 00:00:00,\n"),
     r"c.csv: no job kept of the 1 row\(s\) read \(dropped: 1 no submit_time, duration or node_num\)"),
    ("helios", lambda d: d, r": a folder; expected a file$"),               # it said "no such file" of a folder
    ("yarn", lambda d: _bad(d, "c.csv", "x\n1\n"), r"argument --format: unknown format 'yarn' \(valid: philly, helios"),
    ("helio", lambda d: _bad(d, "c.csv", "x\n1\n"), r"unknown format 'helio': did you mean helios\? \(valid: philly"),
])
def test_bad_input_is_one_line_and_keeps_the_output(tmp_path, capsys, fmt, make, message):
    out = tmp_path / "o"
    out.mkdir()
    (out / "workload.csv").write_text("kept\n")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--format", fmt, "--input", str(make(tmp_path)), "--output", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert (out / "workload.csv").read_text() == "kept\n" and sorted(p.name for p in out.iterdir()) == ["workload.csv"]


def test_cli_to_swf_writes_both(tmp_path):
    out = tmp_path / "o"
    assert cli.main(["--format", "helios", "--input", str(DATA / "helios" / "cluster_log.csv"), "--to", "swf",
                     "--output", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "workload.csv", "workload.swf"]
    back = convert("swf", [out / "workload.swf"]).jobs.set_index("name")
    assert (back.loc["1"].workers, back.loc["1"].num_gpu, back.loc["1"].duration_s) == (2, 8, 3600.0)   # j0


def test_download_lists_pinned_addresses_and_refuses_unknown_formats(capsys):
    from fgdopt.workloads import download

    assert download.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert {line.split()[0] for line in lines} == set(FIXTURES) - {"openb"}
    github = [line.split()[1] for line in lines if "githubusercontent" in line]
    assert github and all(re.search(r"/[0-9a-f]{40}/", url) for url in github)      # pinned to a commit
    with pytest.raises(SystemExit) as exit_:
        download.main(["yarn"])
    assert exit_.value.code == 2 and "'yarn' is not one of philly" in capsys.readouterr().err


@pytest.mark.trace
def test_openb_default_converts_as_the_engine_reads_it(openb_dir):
    """Two paths to the same numbers: the converter on the files, and trace_lifetimes of the engine's streams."""
    from fgdopt.timeline.sources import trace_lifetimes
    from fgdopt.traces import NODE_FILE, load_openb

    conv = convert("openb", [openb_dir / "openb_pod_list_default.csv", openb_dir / NODE_FILE])
    tasks, life, created, priority = trace_lifetimes("default", openb_dir)
    assert len(conv.jobs) == len(tasks) == 8152 and len(conv.nodes) == 1213
    assert conv.jobs["duration_s"].tolist() == life.tolist()
    assert conv.jobs["submit_s"].tolist() == (created - created.min()).tolist()
    assert conv.jobs["priority"].tolist() == priority.tolist()
    assert conv.jobs["num_gpu"].tolist() == tasks.num_gpu.tolist()
    assert sum(n["gpu"] for n in conv.nodes) == load_openb("default", openb_dir)[0].total_gpus


def test_the_openb_fixture_converts_as_the_engine_reads_it(tmp_path):
    """The same two paths on the fixture, laid out as an openb folder: its pods include one still pending at the
    trace's end (no ``scheduled_time``, no ``deletion_time``), whose lifetime both draw from its class."""
    from fgdopt.timeline.sources import trace_lifetimes
    from fgdopt.traces import NODE_FILE

    source = DATA / "openb"
    shutil.copy(source / NODE_FILE, tmp_path / NODE_FILE)
    shutil.copy(source / "openb_pod_list_fixture.csv", tmp_path / "openb_pod_list_default.csv")
    conv = convert("openb", [tmp_path / "openb_pod_list_default.csv", tmp_path / NODE_FILE])
    _, life, _, _ = trace_lifetimes("default", tmp_path)
    assert np.isfinite(life).all() and conv.jobs["duration_s"].tolist() == life.tolist()
