"""``python -m experiments.hetero``: the CSV schema, the certified makespan bound, determinism and bad input."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments import hetero as study
from experiments.executors import StudyError

# 2 GPUs of each type at 0.05 jobs/h (a 200-job tail of arrivals: trace_length) and a batch of 8: on these the LP
# bound is reached (makespan-aware's batch makespan equals it to 1e-6), so the bound check is tight.
SMALL = ["--cluster", "2:2:2", "--window", "10:30", "--rates", "0.05", "--seeds", "1", "--batch", "8",
         "--round-s", "1800"]


@pytest.mark.slow
def test_every_policy_runs_and_batch_makespans_respect_the_bound(gavel_table, tmp_path):
    out = tmp_path / "a"
    assert study.main([*SMALL, "--output", str(out)]) == 0
    frame = pd.read_csv(out / "hetero.csv")
    assert list(frame.columns) == list(study.COLUMNS)
    assert len(frame) == 2 * len(study.POLICY_NAMES)
    assert set(frame.policy) == set(study.POLICY_NAMES)
    continuous = frame[np.isfinite(frame.lambda_per_hour)]
    assert (continuous.measured_jobs == 20).all() and continuous.makespan_bound_s.isna().all()
    batch = frame[~np.isfinite(frame.lambda_per_hour)]
    assert (batch.measured_jobs == 8).all()
    assert (batch.makespan_s >= batch.makespan_bound_s * (1 - 1e-9)).all()   # the LP bound holds for every policy
    assert batch.makespan_bound_s.nunique() == 1
    assert ((frame.utilization > 0) & (frame.utilization <= 1)).all()
    assert ((frame.jain_rho > 0) & (frame.jain_rho <= 1)).all()
    rounds = frame[~frame.policy.isin(study.BASELINES)]
    assert (rounds.solves > 0).all() and (frame[frame.policy.isin(study.BASELINES)].solves == 0).all()
    assert (out / "hetero.png").stat().st_size > 10_000


@pytest.mark.slow
@pytest.mark.extended
def test_two_processes_give_the_same_rows(gavel_table, tmp_path):
    args = [*SMALL, "--batch", "0", "--policies", "fifo,las-aware"]
    assert study.main([*args, "--output", str(tmp_path / "a")]) == 0
    assert study.main([*args, "--output", str(tmp_path / "b"), "--jobs", "2"]) == 0
    a, b = (pd.read_csv(tmp_path / d / "hetero.csv").drop(columns="wall_s") for d in "ab")
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("args, message", [
    (["--cluster", "36:36"], "expected three GPU counts"),
    (["--policies", "las,fastest"], "unknown policy 'fastest'"),
    (["--window", "50:10"], "expected 0 <= START < END"),
    (["--rates", "1,0"], "expected finite numbers > 0 separated by commas, got '1,0'"),
    (["--rates", "-2"], "expected finite numbers > 0 separated by commas, got '-2'"),
    (["--cluster", "0:0:0"], "cluster '0:0:0' has no GPUs"),
    (["--multi-gpu", "--cluster", "4:7:7"], "--cluster: with --multi-gpu a job asks for up to 8 GPUs of one type, and "
     "no type of 4:7:7 has that many"),
    (["--multi-gpu", "--policies", "fifo,las"], "--policies: fifo places each job on one node, and with --multi-gpu a "
     "job asks for up to 8 GPUs: add --gpus-per-node 8 or keep to the round-based policies"),
    (["--multi-gpu", "--gpus-per-node", "8", "--policies", "gandiva"], "--policies: gandiva shares GPUs"),
    (["--rates", "1,1e6"], "argument --rates: at 1e+06 a run generates 4,000,005,000 jobs (--window 4000:5000, then "
     "4,000 hours of arrivals or more), more than the 5,000,000 it can hold; lower it"),     # it ran out of memory
    (["--window", "0:4000000"], "argument --window: at 4e+06 a run generates 8,000,000 jobs"),
    (["--rates", "1e-8", "--window", "1:3"], "argument --rates: at 1e-08 jobs/hour the 5 jobs of a run arrive over "
     "about 1.8e+12 s, beyond the 1e+10 s the time engine's clock resolves to a microsecond; raise the rate"),
    (["--batch", "6000000"], "argument --batch: at 6e+06 a run generates 6,000,000 jobs (all measured)"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        study.main([*args, "--output", str(tmp_path)])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_an_overloaded_point_stops_in_one_line_and_keeps_the_earlier_results(gavel_table, tmp_path, capsys):
    """One GPU of each type at 0.5 jobs/hour: by job 1,000 the queue never drains, so the measured jobs are still
    running at the last of the 3,010 arrivals (1,010 + 0.5 x 4,000 hours of tail); the study exits 2 with one line
    naming --rates and the point, and the hetero.csv already in the folder is left as it was."""
    (tmp_path / "hetero.csv").write_text("earlier\n")
    code = study.main(["--rates", "0.5", "--seeds", "0", "--window", "1000:1010", "--policies", "fifo",
                       "--cluster", "1:1:1", "--output", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "--rates: fifo at 0.5 jobs/h on 1:1:1: the measured jobs still ran after the last of 3010 arrivals (the "
        "cluster is overloaded); lower the rate")
    assert (tmp_path / "hetero.csv").read_text() == "earlier\n"


def test_a_gpu_type_with_no_gpus_is_left_out_of_the_cluster(gavel_table):
    """2 V100s, no P100, 3 K80s: the run has no P100 node and X no P100 column, and the row keeps the cluster as
    given. A multi-GPU job of 8 GPUs runs on the one type that has 8 (8:0:4, 8-GPU nodes, fifo); on 4-GPU nodes fifo
    cannot place it, and the point stops in one line saying so (not "overloaded")."""
    row = study.run_point("las-aware", {"v100": 2, "p100": 0, "k80": 3}, 0.05, 4, (0, 10), False, 1, 360.0)
    assert row["cluster"] == "2:0:3" and row["measured_jobs"] == 10 and row["solves"] > 0
    assert 0 < row["utilization"] <= 1
    row = study.run_point("fifo", {"v100": 8, "p100": 0, "k80": 4}, 0.05, 1, (0, 10), True, 8, 360.0)
    assert row["cluster"] == "8:0:4" and row["measured_jobs"] == 10 and np.isfinite(row["mean_jct_s"])
    with pytest.raises(StudyError, match=r"^--cluster: fifo cannot place job 38 \(8 GPUs\) on 8:4:4 in nodes of 4 "):
        study.run_point("fifo", {"v100": 8, "p100": 4, "k80": 4}, 0.05, 1, (20, 60), True, 4, 360.0)


@pytest.mark.parametrize("module, args, message", [
    ("hetero", ["--multi-gpu", "--policies", "las", "--cluster", "0:0:16"],
     "'ResNet-50 (batch size 128)' on 2 GPUs, which run on v100, p100 only, and the cluster (16 k80) has no such "
     "type with 2 GPUs or more"),
    ("hetero", ["--multi-gpu", "--policies", "las,makespan", "--cluster", "2:0:16"],
     "'ResNet-50 (batch size 128)' on 4 GPUs, which run on v100, p100 only, and the cluster (2 v100, 16 k80) "
     "has no such type with 4 GPUs or more"),
    ("bench_hetero", ["--sizes", "20", "--repeat", "1", "--cluster", "0:0:4"], "'ResNet-50 (batch size 128)' on 2 "
     "GPUs, which run on v100, p100 only, and the cluster (4 k80) has no such type")])
def test_a_cluster_where_some_jobs_of_the_trace_run_nowhere_stops_before_any_run(gavel_table, tmp_path, capsys,
                                                                                module, args, message):
    """Multi-GPU jobs of ResNet-50 (batch 128) have no K80 throughput: on K80s only (or too few V100s for its 4 GPUs)
    a round-based run ended in the LP's traceback, fifo started one at speed 0, and bench_hetero's LP raised; now
    each stops with exit 2 and one line naming --cluster, the job kind and where it runs. 1 V100 does for the
    benchmark's LP (it shares GPUs out): it runs."""
    import importlib

    main = importlib.import_module(f"experiments.{module}").main
    with pytest.raises(SystemExit) as stop:
        main([*args, "--output", str(tmp_path / "out")])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(f"error: --cluster: Gavel's trace has jobs of "
                                                                     f"{message}")
    assert not (tmp_path / "out").exists()
    jobs = study.take_jobs(study.iter_gavel_jobs(gavel_table, 1.0, multi_gpu=True), 30)
    with pytest.raises(ValueError, match=r"^job 17 \('ResNet-50 \(batch size 128\)' on 4 GPUs\) runs on none of the "
                       "GPU types k80$"):
        jobs.to_jobset(gavel_table, ("k80",))


def test_quick_multi_gpu_leaves_fifo_out_on_one_gpu_nodes(gavel_table, tmp_path, monkeypatch):
    """``--multi-gpu --quick`` runs (fifo left out on 1-GPU nodes, lower rates); checked on the cells it makes."""
    seen = {}

    def cells_only(name, run, cells, args, keys, write, prog):
        seen["cells"] = cells
        return pd.DataFrame(), 1

    monkeypatch.setattr(study, "run_and_write", cells_only)
    study.main(["--multi-gpu", "--quick", "--output", str(tmp_path)])
    assert {c[0] for c in seen["cells"]} == {"las", "las-aware", "makespan-aware"}
    assert {c[2] for c in seen["cells"]} == {0.25, 0.5}
    study.main(["--quick", "--output", str(tmp_path)])
    assert {c[0] for c in seen["cells"]} == {"fifo", "las", "las-aware", "makespan-aware"}
    assert {c[2] for c in seen["cells"]} == {0.5, 1.0}


def test_ratio_lines_pair_each_agnostic_policy_with_its_aware_twin():
    frame = pd.DataFrame({"policy": ["las", "las-aware", "las", "las-aware", "fifo"],
                          "lambda_per_hour": [1.0, 1.0, 1.0, 1.0, 1.0], "mean_jct_s": [30.0, 20.0, 50.0, 20.0, 9.0]})
    assert study.ratio_lines(frame) == ["at 1 jobs/hour, mean JCT without heterogeneity awareness: las 2.00x las-aware"]


GAVEL_RUNS = Path(__file__).resolve().parents[1] / "paper" / "results" / "gavel-crosscheck" / "gavel.csv"


@pytest.mark.slow
@pytest.mark.parametrize("config, seed, rate, tolerance, steps", [
    pytest.param("quick", 0, 0.5, 0.01, "continuous", marks=pytest.mark.extended),
    pytest.param("quick", 1, 0.5, 0.01, "continuous", marks=pytest.mark.extended),
    pytest.param("saturated", 0, 1.8, 0.02, "continuous", marks=pytest.mark.extended),
    ("saturated", 0, 1.8, 0.005, "whole")])
def test_average_jct_agrees_with_gavels_own_simulator(gavel_table, config, seed, rate, tolerance, steps):
    """Gavel's simulator (its repository, run outside fgdopt: paper/README.md) on its generated trace, 12:12:12,
    jobs 300-499 measured; fgdopt's engine and round mechanism on the same trace agree to 1% at 0.5 jobs/h, and to 2%
    at 1.8 jobs/h, past the knee of the 36 GPUs (above about 1.5 jobs/h more jobs are present than GPUs and the
    agnostic JCT climbs; Gavel's Figure 8 at 5.4 jobs/h on 108 GPUs): there the run also stops once the measured
    jobs have finished, and the aware policy's gain over the agnostic one agrees to 2% too. In Gavel's whole steps
    (``--steps whole``) the saturated point agrees to 0.5% (-0.04% and +0.23% when committed; continuously -0.80% and
    +0.19%)."""
    gavel = pd.read_csv(GAVEL_RUNS)
    gavel = gavel[(gavel.config == config) & (gavel.seed == seed) & (gavel.rate_per_hour == rate)]
    assert set(gavel.policy) == {"las", "las-aware"}
    ours, theirs = {}, {}
    for row in gavel.itertuples():
        run = study.run_point(row.policy, {"v100": 12, "p100": 12, "k80": 12}, rate, seed, (300, 500), False, 1,
                              360.0, steps=steps)
        assert run["measured_jobs"] == row.measured_jobs == 200
        assert run["mean_jct_s"] == pytest.approx(row.avg_jct_s, rel=tolerance)
        ours[row.policy], theirs[row.policy] = run["mean_jct_s"], row.avg_jct_s
    gain, gavel_gain = ours["las"] / ours["las-aware"], theirs["las"] / theirs["las-aware"]
    assert gain == pytest.approx(gavel_gain, rel=0.02)
    if config == "saturated":
        assert gavel_gain > 1.45                      # past the knee the gain grows (1.30x-1.38x at 0.5 jobs/h)


def test_bench_points_split_each_point_into_its_parts(gavel_table):
    """experiments.bench_hetero --points on a small point: the LPs, the rest of the rounds' decisions and the engine
    carrying them out are each timed once (they add up to less than the whole), and the row's JCT is the study's."""
    from experiments.bench_hetero import bench_points

    cluster = {"v100": 2, "p100": 2, "k80": 2}
    frame = bench_points([0.5], cluster, seed=1, window=(0, 6))
    assert frame.policy.tolist() == ["las", "las-aware"]
    parts = frame[["lp_s", "decide_s", "carry_s"]]
    assert (parts.to_numpy() >= 0).all() and (parts.sum(axis=1) < frame.wall_s).all()
    assert (frame.decide_s > 0).all() and (frame.carry_s > 0).all()
    row = study.run_point("las-aware", cluster, 0.5, 1, (0, 6), False, 1, 360.0)
    assert frame.mean_jct_s.iloc[1] == row["mean_jct_s"]


def test_bench_timer_adds_every_call_even_one_that_raises(monkeypatch):
    """The benchmark's wrapper adds each call's clock difference (a fake clock ticking 1 per read: 1 per call), passes
    the result through, and counts a call that raises too."""
    import itertools

    from experiments import bench_hetero

    ticks = itertools.count()
    monkeypatch.setattr(bench_hetero.time, "perf_counter", lambda: float(next(ticks)))
    spent = {"f": 0.0}

    def f(x):
        if x < 0:
            raise ValueError(x)
        return 2 * x

    timed = bench_hetero._timed(f, spent, "f")
    assert [timed(1), timed(2)] == [2, 4]
    with pytest.raises(ValueError):
        timed(-1)
    assert spent == {"f": 3.0} and timed.__name__ == "f"


def test_bench_without_the_table_stops_in_one_line_naming_the_variable(tmp_path, monkeypatch, capsys):
    """``experiments.bench_hetero`` with ``FGDOPT_GAVEL`` pointing at an empty folder: exit 2 and one line naming the
    variable and the command that fetches the table (it ended in a traceback); ``--data-dir`` is read as the study's."""
    from experiments.bench_hetero import main

    monkeypatch.setenv("FGDOPT_GAVEL", str(tmp_path))
    for argv in ([], ["--data-dir", str(tmp_path)]):
        with pytest.raises(SystemExit) as stop:
            main(["--sizes", "20", "--repeat", "1", *argv, "--output", str(tmp_path / "out")])
        assert stop.value.code == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert "FGDOPT_GAVEL" in line and "python -m fgdopt.hetero download" in line and str(tmp_path) in line
    assert not (tmp_path / "out").exists()


def test_a_table_without_a_v100_throughput_for_a_kind_of_job_stops_before_any_run(gavel_table, tmp_path, capsys,
                                                                                  monkeypatch):
    """A user's throughput table where A3C on 1 GPU has a V100 throughput of 0: Gavel's generator makes its steps
    from it (0 steps), and the run ended mid-way in HeteroJobs' traceback; now exit 2 and one line naming the file
    and the kind of job, before any run."""
    from fgdopt.hetero import JOB_TYPES, ThroughputTable
    from fgdopt.hetero.jobs import check_table

    iso = gavel_table.isolated.copy()
    iso[JOB_TYPES.index("A3C"), 0, gavel_table.gpu_types.index("v100")] = 0.0
    mine = ThroughputTable(gavel_table.gpu_types, iso, gavel_table.colocated, tmp_path / "mine.json")
    check_table(gavel_table, multi_gpu=True)
    monkeypatch.setattr(study, "load_throughputs", lambda data_dir: mine)
    with pytest.raises(SystemExit) as stop:
        study.main(["--quick", "--output", str(tmp_path / "out")])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        f"error: {tmp_path / 'mine.json'}: 'A3C' on 1 GPU has no positive v100 throughput, which Gavel's trace needs "
        "(a drawn duration becomes steps at it)")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("module", "argv", "message"), [
    ("hetero", ["--spread-throughput", "consolidated"], "--spread-throughput: a job's GPUs span nodes only with"),
    ("hetero", ["--steps", "continuous", "--policies", "fifo"], "--steps: only the round-based policies"),
    ("pollux", ["--generations", "5", "--policies", "tiresias"], "--generations: only pollux searches"),
])
def test_an_option_the_run_would_ignore_stops_in_one_line(module, argv, message, tmp_path, capsys):
    """An option that changes nothing of the runs asked for (it was silently ignored) stops before any work."""
    import importlib

    with pytest.raises(SystemExit) as stop:
        importlib.import_module(f"experiments.{module}").main([*argv, "--output", str(tmp_path)])
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_a_gavel_cluster_needs_gpus():
    from fgdopt.hetero.jobs import gavel_cluster

    for gpus in ({}, {"v100": 0, "k80": 0}):
        with pytest.raises(ValueError, match="a cluster needs GPUs"):
            gavel_cluster(gpus)
