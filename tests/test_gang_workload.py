"""Gangs end to end: a workload file with ``workers > 1`` (written by hand or by a converter) read by
``read_workload``, saved again by ``JobSet.save``, and run by the studies ``experiments.timeline`` and
``experiments.traces`` on clusters of 16-GPU nodes, with the gang options of the engine; every schedule asserted
here is worked out by hand in the comments, from the ``jobs.csv`` the study writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments import convert as convert_cli
from experiments import timeline as timeline_study
from experiments import traces as traces_study
from experiments.traces import FIXTURE_DIR
from fgdopt.timeline import read_workload
from fgdopt.workloads.format import read_workload_frame

NODE = {"cpu_milli": 64_000, "memory_mib": 262_144, "gpu": 16, "model": "A100"}

# Two nodes of 16 GPUs. a: 8 GPUs at 0 for 10 s; g: a gang of 2 parts of 16 GPUs (both nodes whole) at 1 for 5 s;
# b: 8 GPUs at 2 for 3 s; big: 3 parts of 16 GPUs, more than the cluster holds together (rejected, reason workers).
GANG_CSV = """name,submit_s,duration_s,num_gpu,cpu_milli,memory_mib,workers
a,0,10,8,8000,1024,1
g,1,5,16,16000,4096,2
b,2,3,8,8000,1024,1
big,3,1,16,1000,0,3
"""


def _cluster(path: Path, nodes: int = 2) -> Path:
    path.write_text(json.dumps({"nodes": [{**NODE, "sn": f"n{i}"} for i in range(nodes)]}))
    return path


@pytest.fixture(autouse=True)
def _no_figure(monkeypatch):
    """The timeline study writes its CSVs but draws no figure here: these tests read ``jobs.csv`` only, the figure
    is ``test_timeline_study``'s (and drawing it cost 90% of each run)."""
    monkeypatch.setattr(timeline_study, "plot_timeline", lambda *args, **kwargs: None)


def _timeline(tmp_path: Path, workload: Path, cluster: Path, *options: str) -> pd.DataFrame:
    out = tmp_path / f"o{len(list(tmp_path.iterdir()))}"
    assert timeline_study.main(["--workload", str(workload), "--cluster", str(cluster), "--policies", "best-fit",
                                "--output", str(out), *options]) == 0
    return pd.read_csv(out / "jobs.csv", keep_default_na=False).set_index("name")


def _start_finish(jobs: pd.DataFrame, names: str) -> list[tuple]:
    return [(float(jobs.start_s[n]), float(jobs.finish_s[n])) for n in names.split()]


@pytest.fixture
def gang_files(tmp_path):
    (tmp_path / "w.csv").write_text(GANG_CSV)
    return tmp_path / "w.csv", _cluster(tmp_path / "c.json")


def test_a_gang_waits_for_both_nodes_and_is_freed_at_once(tmp_path, gang_files):
    workload, cluster = gang_files
    # plain backfill: g needs both nodes empty, so it waits for a (0..10); b fits beside a and passes g (2..5);
    # g then holds both nodes 10..15 (freed together: one finish for both parts)
    jobs = _timeline(tmp_path, workload, cluster, "--queue", "backfill")
    assert _start_finish(jobs, "a b g") == [(0, 10), (2, 5), (10, 15)]
    assert jobs.workers.tolist() == [1, 2, 1, 3] and jobs.status.tolist()[:3] == ["finished"] * 3
    # fifo: b waits behind g, then starts when g frees both nodes at 15
    assert _start_finish(_timeline(tmp_path, workload, cluster, "--queue", "fifo"), "g b") == [(10, 15), (15, 18)]
    # backfill with --gang-reserve-s 0: g has waited >= 0 s when b arrives at 2, so b may not pass it: as fifo
    jobs = _timeline(tmp_path, workload, cluster, "--queue", "backfill", "--gang-reserve-s", "0")
    assert _start_finish(jobs, "g b") == [(10, 15), (15, 18)]
    # --gang-reserve-s 5: g has waited 1 s at 2, b passes it as under plain backfill
    jobs = _timeline(tmp_path, workload, cluster, "--queue", "backfill", "--gang-reserve-s", "5")
    assert _start_finish(jobs, "b g") == [(2, 5), (10, 15)]
    # --gang-slowdown 2: g's parts span both nodes, its 5 s run 10 s
    jobs = _timeline(tmp_path, workload, cluster, "--queue", "backfill", "--gang-slowdown", "2")
    assert _start_finish(jobs, "g") == [(10, 20)]


def test_a_gang_larger_than_the_cluster_is_rejected_with_its_reason(tmp_path, gang_files, capsys):
    jobs = _timeline(tmp_path, *gang_files, "--queue", "backfill")
    assert (jobs.status["big"], jobs.reason["big"], jobs.start_s["big"], jobs.node["big"]) == \
        ("rejected", "workers", "", -1)
    assert "1 job(s) rejected (workers): the gang's workers do not fit the empty cluster together" in \
        capsys.readouterr().out
    # three nodes hold it: it runs, alone (it needs all three whole), after g
    jobs = _timeline(tmp_path, gang_files[0], _cluster(tmp_path / "c3.json", 3), "--queue", "fifo")
    assert (jobs.status["big"], jobs.reason["big"]) == ("finished", "")


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--gang-reserve-s", "-1", "argument --gang-reserve-s: expected a number of seconds >= 0 or inf, got '-1'"),
    ("--gang-reserve-s", "nan", "argument --gang-reserve-s: expected a number of seconds >= 0 or inf, got 'nan'"),
    ("--gang-slowdown", "0", "argument --gang-slowdown: expected a finite number >= 1, got '0'"),
    ("--gang-slowdown", "0.5", "argument --gang-slowdown: expected a finite number >= 1, got '0.5'"),
])
@pytest.mark.parametrize("study", [timeline_study, traces_study])
def test_bad_gang_options_are_one_line(tmp_path, capsys, study, option, value, message):
    with pytest.raises(SystemExit) as exit_:
        study.main([option, value, "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and message in err[0]
    assert not (tmp_path / "o").exists()


def test_a_gang_workload_round_trips_through_save(tmp_path, gang_files):
    jobs = read_workload(gang_files[0])
    assert jobs.tasks.workers.tolist() == [1, 2, 1, 3] and jobs.tasks.gpu_demand.tolist() == [8e3, 32e3, 8e3, 48e3]
    again = read_workload(jobs.save(tmp_path / "again.csv"))
    parquet = read_workload(jobs.save(tmp_path / "again.parquet"))
    for other in (again, parquet):
        pd.testing.assert_frame_equal(other.to_frame(), jobs.to_frame())
    assert read_workload_frame(tmp_path / "again.csv")["workers"].tolist() == [1, 2, 1, 3]
    single = read_workload(jobs.take([0, 2]).save(tmp_path / "single.csv"))   # no gang: no workers column written
    assert "workers" not in single.to_frame() and single.tasks.workers.tolist() == [1, 1]


def test_the_helios_fixture_runs_with_its_gangs(tmp_path):
    conv = tmp_path / "helios"
    assert convert_cli.main(["--format", "helios", "--input", str(FIXTURE_DIR / "helios" / "cluster_log.csv"),
                             "--output", str(conv)]) == 0
    jobs = _timeline(tmp_path, conv / "workload.csv", _cluster(tmp_path / "c.json"), "--queue", "fifo")
    frame = read_workload_frame(conv / "workload.csv").set_index("name").loc[jobs.index]
    assert jobs.workers.tolist() == frame.workers.tolist() and (jobs.status == "finished").all()
    # j0 (2 x 8 GPUs) starts at 0 on the empty cluster; j1 (1 GPU) 10..70; j3 (2 x 6) at 70 on the 16 GPUs j0
    # leaves; j4 (2 x 2) at 80 on the last 4; r0 (1 GPU, at 100) waits for j4's end at 110
    assert [float(jobs.start_s[n]) for n in ("j0", "j1", "j3", "j4", "r0")] == [0, 10, 70, 80, 110]
    start, finish = jobs.start_s.astype(float).to_numpy(), jobs.finish_s.astype(float).to_numpy()
    # every part of a gang runs from its start to its finish, all together: the job's time is its duration
    assert finish - start == pytest.approx(frame.duration_s.to_numpy())
    # and the parts are counted together: at every start, the running jobs' GPUs (workers x num_gpu) fit 32
    gpus = (frame.workers * frame.num_gpu).to_numpy()
    for t in np.unique(start):
        assert gpus[(start <= t) & (t < finish)].sum() <= 32
    assert gpus[(start <= 70) & (finish > 70)].sum() == 16 + 12      # j0 and j3 (j1 ended at 70)


def test_a_converted_trace_with_16_gpu_nodes_runs_in_the_trace_study(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "node_info_df.csv").write_text("gpu_model,gpu_capacity_num,cpu_num,node_name\n"
                                          "A100,16,256,0\nA100,16,256,1\n")
    # s0: 2 workers of 16 GPUs (both nodes whole) 0..100; s1: 8 GPUs at 10 waits for them (starts 100);
    # s2: 3 workers of 16 GPUs, more than the two nodes: rejected (workers)
    (raw / "job_info_df.csv").write_text("job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,"
                                         "submit_time,duration,job_type\n"
                                         "s0,o,A100,16,16,2,0,100,HP\ns1,o,A100,8,8,1,10,50,HP\n"
                                         "s2,o,A100,16,16,3,20,10,HP\n")
    conv = tmp_path / "spot16"
    assert convert_cli.main(["--format", "spot2026", "--input", str(raw / "job_info_df.csv"),
                             str(raw / "node_info_df.csv"), "--output", str(conv)]) == 0
    assert [n["gpu"] for n in json.loads((conv / "cluster.json").read_text())["nodes"]] == [16, 16]
    out = tmp_path / "o"
    assert traces_study.main(["--workload", str(conv), "--policies", "fgd", "--queue", "backfill", "--output",
                              str(out)]) == 0
    runs = pd.read_csv(out / "traces.csv")
    assert runs[["jobs_run", "not_run", "rejected", "finished", "mean_wait_single_s", "mean_wait_gang_s"]] \
        .values.tolist() == [[3, 0, 1, 2, 90.0, 0.0]]
    jobs = pd.read_csv(out / "traces_jobs.csv", keep_default_na=False).set_index("name")
    assert jobs.loc[["s0", "s2"], ["workers", "class", "status", "reason"]].values.tolist() == \
        [[2, "gang", "finished", ""], [3, "gang", "rejected", "workers"]]
