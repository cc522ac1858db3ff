"""Inputs nobody tuned for, as a new user brings them: every study gives correct results or one clear line, and
its figures stay readable.

* A list option of a study is the set of points of its sweep: a value written twice (``--seeds 0,0``,
  ``--policies fgd,fgd``, ``--load 0.9,0.90``) is one point, run once, so that a run is not repeated (twice the
  work) and a mean over seeds does not count one seed twice. The order written is kept.
* The optimal schedule (``python -m experiments.schedule --workload``) of jobs that may never end, or whose times
  are finer than the model's millisecond, stops in one line before any work; a time of 1e-6 s is not a whole
  0 s (rounded away, a job would last nothing and the "optimum" would beat every real schedule); jobs that all
  last 0 s have their optimum at the bound (gap 0, not NaN).
* A user's own openb folder (its two-node fixture as ``default``): the defragmentation study's exact slices take
  every node of a cluster smaller than the default slice (was a numpy traceback after the replays), a slice larger
  than the cluster is refused at the door; the topology study, whose exact part reads ``multigpu50`` whatever
  ``--trace`` is, says so at the door (was a traceback after every replay, their results lost).
* Synergy's figure at one load (``--quick``): one bar per policy with its value, so that two policies with the
  same mean JCT both show (their markers were drawn on the same spot, one hidden); over loads, the later of two
  equal curves is named "same as" the earlier; a policy none of whose measured jobs finished says so.
* ``--resume`` after editing one's own policy (``--policies mypol.py:Mine``) reruns it in every study that takes
  policy specs: the journal key of cpu_aware and failures held the spec's name only, so the edited
  policy's runs came back stale (interference takes built-in names only).
* ``--quick`` with options of one's own (``--quick --policies random --seeds 7``) keeps them: the studies set
  their quick values over every option, so the run silently used other policies and seeds than those written.
* Fairness on one's own job list (``--workload``): a ``scale_factor`` not among Gavel's GPU counts stops at the door
  naming the row (was a traceback after the start, or 1.5 GPUs silently run as 1), an empty user too, and a job
  larger than every GPU type of ``--cluster`` is refused (it never ran, and its user counted as served).
* ``--help`` of every study, as a newcomer reads it: every option says what it is (defrag had five bare options),
  and it ends with examples: a first ``--quick`` run where the study has one, and the command lines of its
  docstring (a study's usage was only in its source).
* defrag and frontier take ``--quick`` as every other study does (a newcomer's first command failed on them).
* The timeline study on a workload with gangs says that it takes no optimum instant (``optimum.csv`` came out
  empty without a word, ``--instants`` ignored).
* The traces figure marks ``n/a`` where no job of a class started (its mean wait is NaN: a workload without gangs,
  or whose jobs were all rejected), instead of a bar of 0 that reads as "no wait", and its axis starts at 0 (a
  workload where nothing ran drew an empty panel from -0.05 to 0.05).
* The defragmentation figure draws an exact run's proven bound at its move budget, with markers: drawn at the plan's
  moves (7 for budgets 10 and 50, the first run proving no bound), the one bound was a lone point without marker,
  invisible, while its legend entry and the y-axis to 17.5 GPUs stayed.
* An offered load below what the openb services already hold (``--load 0.001``) stops at the door in one line
  naming ``--load`` in every study on the openb stream (timeline, cpu_aware, interference, failures, schedule);
  it was a traceback from the first run; a trace that makes no stream at any load says so, not blaming ``--load``.
* The timeline figure of a cluster without GPUs (CPU-only jobs) says so in its allocation panel, which was empty.
* The frontier compares a policy with the optimum on the same arrived tasks: where the trace alone brings more than
  130% of the cluster (``--nodes 1``, a small cluster of one's own), the policy's value at 130% was the replay's
  final state, with tasks the optimum never saw: it "beat" the proven bound (1970 against 1650 milli-GPU on one
  openb node, a gap of -16%, and a headline contradicting itself).
* The schedule study's Gantt chart names its lower panel "optimum" only when the model proved it: after a time
  limit it is the best schedule found, with its bound (a Philly workload at 5 s showed the unimproved best run as
  "optimum" next to a bound 54% lower).
* Pollux's figure draws the policies side by side around each load: two with the same mean JCT drew on one spot,
  the later hiding the earlier.
* The completion-time CDF of the timeline figure: on a log axis only when the times span a decade (over less, a
  log axis labels every tick alike, "1e9, 1e9, ..."), and a time below 1 s drawn at 1 s is said on the axis.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments import (
    cpu_aware,
    defrag,
    failures,
    fairness,
    frontier,
    interference,
    pollux,
    schedule,
    synergy,
    timeline,
    topology,
)
from experiments.args import int_list, parse_policies, parse_seeds, real_list, study_parser
from fgdopt.plot import plot_defrag, plot_timeline, plot_traces
from formulations.schedule.exact import time_unit


@pytest.fixture
def saved(laid_out):
    """These tests read the figures' axes, legends and texts: laid out, not rendered (conftest's ``laid_out``)."""
    return laid_out


def test_repeated_values_are_one_point_of_the_sweep():
    assert parse_seeds("0,0") == [0]
    assert parse_seeds("3-3,3,1-4") == [3, 1, 2, 4]         # order of first appearance
    assert int_list(1)("16,64,16") == [16, 64]
    assert real_list(0.0)("0.9,1.1,0.90") == [0.9, 1.1]
    assert parse_policies("fgd,best-fit,fgd") == ["fgd", "best-fit"]
    assert timeline.parse_queues("backfill,fifo,backfill") == ["backfill", "fifo"]


def _timeline_axes(tmp_path, saved, jct_s: list[float], capacity_milli: int = 8000):
    """The panels of the timeline figure of one run whose jobs (submitted at 0) complete in ``jct_s``."""
    keys = {"trace": "w", "seed": 42, "load": float("nan"), "policy": "fgd", "queue": "fifo", "mechanism": "none"}
    series = pd.DataFrame([{**keys, "time_s": 60.0 * i, "alloc_milli": 1000, "pending_milli": 0} for i in range(3)])
    runs = pd.DataFrame([{**keys, "mean_wait_s": 0.0}])
    optimum = pd.DataFrame(columns=[*keys, "time_s", "question", "incumbent_milli", "bound_milli"])
    jobs = pd.DataFrame([{**keys, "submit_s": 0.0, "finish_s": t} for t in jct_s])
    plot_timeline(series, runs, optimum, capacity_milli, tmp_path / "t.png", "t", jobs=jobs)
    (fig,) = saved
    return fig.axes


def test_cdf_of_completion_times_within_a_decade_is_linear_with_distinct_ticks(tmp_path, saved):
    """Completion times 1e9 s to 1e9 + 190 s (one very long job ahead of the others): a log axis would label
    its ticks all "1e9"; the linear axis shows the 190 s between them."""
    cdf = _timeline_axes(tmp_path, saved, [1e9, 1e9 + 92, 1e9 + 190])[1]
    assert cdf.get_xscale() == "linear"
    assert cdf.get_xlabel() == "Job completion time (s)"
    line = cdf.get_lines()[0]
    assert list(line.get_xdata()) == [1e9, 1e9 + 92, 1e9 + 190]


def test_cdf_on_a_log_axis_says_where_it_draws_times_below_one_second(tmp_path, saved):
    """Completion times 0 s (a zero-duration job) and 50 s span a decade: a log axis, the 0 drawn at 1 s and
    the label says so."""
    cdf = _timeline_axes(tmp_path, saved, [0.0, 50.0])[1]
    assert cdf.get_xscale() == "log"
    assert cdf.get_xlabel() == "Job completion time (s, log scale; below 1 s drawn at 1 s)"
    assert list(cdf.get_lines()[0].get_xdata()) == [1.0, 50.0]


def test_time_unit_does_not_round_a_microsecond_to_zero():
    with pytest.raises(ValueError, match="1e-06 s is finer"):
        time_unit(np.array([0.0, 1e-6]))
    assert time_unit(np.array([12.000000238, 0.1 + 0.2 + 0.7])) == 1.0     # float noise of converted times
    assert time_unit(np.array([0.1 + 0.2])) == 0.1


@pytest.mark.parametrize(("rows", "message"), [
    (["j0,0,inf", "j1,5,100"], "job 'j0': duration_s is inf; the optimum and its bounds need every job to end"),
    (["j0,0,1e-6", "j1,1e-9,1e-6"], "the exact model counts time in whole milliseconds; 1e-09 s is finer")])
def test_schedule_of_a_workload_it_cannot_model_stops_in_one_line(tmp_path, capsys, rows, message):
    work, out = tmp_path / "w.csv", tmp_path / "out"
    work.write_text("\n".join(["name,submit_s,duration_s,num_gpu,cpu_milli,memory_mib",
                               *(r + ",1,1000,1024" for r in rows)]) + "\n")
    (tmp_path / "c.json").write_text(json.dumps({"nodes": [{"cpu_milli": 8000, "memory_mib": 8192, "gpu": 2,
                                                            "model": "T4"}]}))
    out.mkdir()
    (out / "schedule.csv").write_text("kept\n")
    with pytest.raises(SystemExit) as stop:
        schedule.main(["--workload", str(work), "--cluster", str(tmp_path / "c.json"), "--output", str(out)])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert err.startswith(f"python -m experiments.schedule: error: {work}: ")
    assert [p.name for p in out.iterdir()] == ["schedule.csv"] and (out / "schedule.csv").read_text() == "kept\n"


def test_schedule_gap_of_jobs_lasting_nothing_is_zero():
    assert schedule._gap(0.0, 0.0) == 0.0              # both 0: the run meets the bound
    assert schedule._gap(5.0, 0.0) == math.inf
    assert schedule._gap(150.0, 100.0) == 50.0
    assert math.isnan(schedule._gap(math.nan, 100.0))
    part = pd.DataFrame([{"instance": "z", "method": m, "value": 0.0, "bound": 0.0, "status": s,
                          "gap_pct": schedule._gap(0.0, 0.0)} for m, s in (("fgd/fifo", "engine"),
                                                                          ("optimum", "optimal"))])
    assert schedule.method_summary(part)["proven"].tolist() == ["1/1", "1/1"]


FIXTURE = Path(__file__).parent / "data" / "traces" / "openb"


@pytest.fixture
def two_node_openb(tmp_path):
    """An openb folder holding only the ``default`` variant: the converters' openb fixture (2 nodes, 23 pods)."""
    folder = tmp_path / "openb"
    folder.mkdir()
    shutil.copy(FIXTURE / "openb_node_list_gpu_node.csv", folder)
    shutil.copy(FIXTURE / "openb_pod_list_fixture.csv", folder / "openb_pod_list_default.csv")
    return folder


def _stops(main, argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1, err
    return err


def test_defrag_slices_fit_a_cluster_smaller_than_the_default_slice(two_node_openb, tmp_path, capsys):
    out = tmp_path / "out"
    err = _stops(defrag.main, ["--data", str(two_node_openb), "--slice-nodes", "3", "--output", str(out)], capsys)
    assert err.endswith("argument --slice-nodes: 3 nodes, but the default cluster has 2") and not out.exists()
    assert defrag.main(["--data", str(two_node_openb), "--policies", "fgd", "--budgets", "0,10", "--time-limit",
                        "5", "--output", str(out)]) == 0
    frame = pd.read_csv(out / "defrag.csv")
    assert set(frame.loc[frame["trace"] == "default/slice0", "nodes"]) == {2}    # the slice: both nodes


def test_topology_names_the_variant_its_exact_part_reads_before_any_replay(two_node_openb, tmp_path, capsys):
    out = tmp_path / "out"
    err = _stops(topology.main, ["--quick", "--trace", "default", "--data", str(two_node_openb), "--output",
                                 str(out)], capsys)
    assert "the exact instances draw from multigpu50 whatever --trace is: " in err
    assert "openb_pod_list_multigpu50.csv not found" in err and not out.exists()


def test_synergy_figure_shows_every_policy_when_two_coincide(tmp_path, saved):
    rows = [("FIFO+fair", 9.0, 59200.0), ("FIFO+greedy", 9.0, 52128.0), ("FIFO+tune", 9.0, 52128.0)]
    frame = pd.DataFrame(rows, columns=["policy", "load", "mean_jct_s"])
    synergy.plot(frame, tmp_path / "one.png")
    synergy.plot(pd.concat([frame, frame.assign(load=6.0, mean_jct_s=frame["mean_jct_s"] / 2)]), tmp_path / "two.png")
    one, two = (fig.axes[0] for fig in saved)
    assert [p.get_height() for p in one.patches] == pytest.approx([59200 / 3600, 52128 / 3600, 52128 / 3600])
    assert [t.get_text() for t in one.get_xticklabels()] == ["FIFO+fair", "FIFO+greedy", "FIFO+tune"]
    assert [t.get_text() for t in one.texts] == ["16.44 h", "14.48 h", "14.48 h"]
    assert [t.get_text() for t in two.get_legend().get_texts()] == ["FIFO+fair", "FIFO+greedy",
                                                                      "FIFO+tune (same as FIFO+greedy)"]
    synergy.plot(frame.assign(mean_jct_s=[59200.0, float("nan"), 52128.0]), tmp_path / "none.png")
    assert [t.get_text() for t in saved[2].axes[0].texts] == ["16.44 h", "", "14.48 h", "no job finished"]


class _Keys(Exception):
    """Raised by a stand-in for ``run_and_write`` with the journal keys a study built."""


@pytest.mark.parametrize("study", [cpu_aware, failures])
def test_resume_keys_follow_the_source_of_a_policy_spec(study, tmp_path, monkeypatch, openb_dir):
    def capture(name, fn, cells, args, keys, *rest):
        raise _Keys(keys)

    monkeypatch.setattr(study, "run_and_write", capture)
    module = tmp_path / "mypol.py"
    argv = ["--policies", f"{module}:Mine", "--seeds", "42", "--output", str(tmp_path / "out")]

    def keys() -> list:
        with pytest.raises(_Keys) as built:
            study.main(argv)
        return built.value.args[0]

    module.write_text("from fgdopt.policies.best_fit import BestFit as Mine\n")
    before = keys()
    module.write_text("from fgdopt.policies.random_choice import RandomFit as Mine\n")
    after = keys()
    assert len(before) == len(after) and all(a != b for a, b in zip(before, after, strict=True) if a[0] != "sweep")


def test_quick_keeps_the_options_written():
    parser = study_parser("experiments.x", "X.")
    parser.add_argument("--seeds", type=parse_seeds, default=[42])
    parser.add_argument("--load", type=real_list(0.0), default=[0.7, 0.9])
    parser.add_argument("--quick", action="store_true")
    parser.set_defaults(kept=True)
    for argv, seeds in ((["--quick"], [0]), (["--quick", "--seeds", "7"], [7]), (["--see=3-4", "--quick"], [3, 4])):
        args = parser.parse_args(argv)
        parser.quick(args, seeds=[0], load=[1.1])
        assert (args.seeds, args.load) == (seeds, [1.1])
    assert parser.get_default("seeds") == [42] and parser.parse_args([]).kept   # the defaults left as they were


def test_timeline_quick_runs_the_policies_and_seeds_written(tmp_path, monkeypatch, openb_dir):
    seen = {}

    def cells_only(name, run, cells, *rest):
        seen["cells"] = cells
        return None, 1

    monkeypatch.setattr(timeline, "run_and_write", cells_only)
    assert timeline.main(["--quick", "--policies", "random", "--seeds", "7", "--output", str(tmp_path)]) == 1
    (cell,) = seen["cells"]                            # trace, seed, load, policy, queue, ..., n_jobs, ..., instants
    assert (cell[1], cell[2], cell[3], cell[4], cell[7], cell[9]) == (7, 0.9, "random", "backfill", 3000, 1)


@pytest.mark.parametrize(("cells", "extra", "message"), [
    ("1,a\n{j},1.5,b", [], "row 1: scale_factor '1.5' is not one of Gavel's GPU counts 1, 2, 4, 8"),
    ("1,a\n{j},,b", [], "row 1: scale_factor empty is not one of Gavel's GPU counts 1, 2, 4, 8"),
    ("1,a\n{j},3,b", [], "row 1: scale_factor '3' is not one of Gavel's GPU counts 1, 2, 4, 8"),
    ("1,a\n{j},1,", [], "row 1: no user"),
    ("1,a\n{j},1,b,c", [], "row 1 (line 3) has 4 fields, more than the 3 of the header (job_type,scale_factor,user)"),
    ("1,a\n{j},8,b", ["--cluster", "4:0:4"], "row 1: scale_factor 8: no GPU type of --cluster has that many (at "
     "most 4); the job would never run")])
def test_fairness_workload_rows_are_checked_at_the_door(tmp_path, capsys, cells, extra, message):
    job = '"ResNet-18 (batch size 16)"'
    work = tmp_path / "w.csv"
    work.write_text("job_type,scale_factor,user\n" + job + "," + cells.format(j=job) + "\n")
    err = _stops(fairness.main, ["--workload", str(work), *extra, "--output", str(tmp_path / "out")], capsys)
    assert err.startswith("python -m experiments.fairness: error: --workload: ") and err.endswith(message), err


STUDIES = sorted({m for m in __import__("experiments.cli", fromlist=["COMMANDS"]).COMMANDS.values()
                  if m.startswith("experiments.")})


@pytest.mark.parametrize("module", STUDIES)
def test_help_explains_every_option_and_ends_with_examples(module, capsys):
    study = __import__(module, fromlist=["main"])
    with pytest.raises(SystemExit) as stop:
        study.main(["--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0
    options, _, examples = out.partition("\nexamples:\n")
    lines = options.split("options:\n", 1)[1].splitlines()
    bare = [line for k, line in enumerate(lines) if re.fullmatch(r"  -[^ ]+(?: [A-Z_ {},|-]+)?", line)
            and not (k + 1 < len(lines) and lines[k + 1].startswith(" " * 10))]
    assert not bare, bare                                # an option alone on its line, no help below it
    name = module.split(".")[-1]
    assert f"python -m {module}" in examples.partition("\n")[0], out
    first = examples.partition("\n")[0].partition("#")[0].split()
    assert {word for word in first if word.startswith("--")} <= set(re.findall(r"--[\w-]+", options)), first
    if "--quick" in options:
        output = f" --output out/{name}" if "--output" in options else ""      # paper writes into paper/
        assert f"  python -m {module} --quick{output}    # a first, small run" in examples


def test_defrag_and_frontier_take_quick(tmp_path, monkeypatch, openb_dir):
    seen = {}

    def defrag_jobs(pool, fn, jobs, *rest, **kw):
        seen["defrag"] = jobs
        return []

    def frontier_args(traces, seeds, points, jobs, time_limit, *rest):
        seen["frontier"] = (traces, seeds, points, time_limit)
        raise _Keys()

    monkeypatch.setattr(defrag, "run_all", defrag_jobs)
    monkeypatch.setattr(defrag, "_write", lambda *a: 0)
    assert defrag.main(["--quick", "--at", "90", "--output", str(tmp_path)]) == 0
    (job,) = seen["defrag"]         # trace, data, seed, policy, at, budgets, slices, slice nodes, time limit, ...
    assert (job[2], job[3], job[4], job[5], job[8]) == (42, "fgd", 90.0, [0, 10, 50], 10.0)
    monkeypatch.setattr(frontier, "frontier", frontier_args)
    with pytest.raises(_Keys):
        frontier.main(["--quick", "--time-limit", "20", "--output", str(tmp_path)])
    assert seen["frontier"] == (["default"], [42], [100, 130], 20.0)


def test_timeline_refuses_a_series_of_millions_of_rows(tmp_path, capsys, monkeypatch):
    """Submission times in Unix seconds (a window of 1.7e9 s) sampled every 60 s made a series.csv of 28 million
    rows (1.2 GB for 1e9 s); it stops in one line before any run, naming the --sample that fits; that one runs (at
    1e12 s too, where it was printed to 6 digits, 1e+06, a step that the check refused)."""
    from fgdopt.timeline.metrics import sample_count

    monkeypatch.setattr(timeline, "run_and_write", lambda *a: (None, 1))
    work, nodes = tmp_path / "epoch.csv", tmp_path / "c.json"
    work.write_text("submit_s,duration_s,num_gpu,cpu_milli,memory_mib\n1700000000,10,1,1000,1024\n")
    nodes.write_text(json.dumps({"nodes": [{"cpu_milli": 8000, "memory_mib": 8192, "gpu": 2, "model": "T4"}]}))
    argv = ["--workload", str(work), "--cluster", str(nodes), "--output", str(tmp_path / "o")]
    err = _stops(timeline.main, argv, capsys)
    assert err.endswith("--sample: every 60 s up to the last submission of --workload (1.7e+09 s) is 28,333,334 "
                        "rows of series.csv per run (at most 1,000,000); give --sample 1701 or more, or submit_s in "
                        "seconds from the start of the run"), err
    assert sample_count(1701, 1.7e9) <= timeline.SERIES_MAX_ROWS < sample_count(1700, 1.7e9)
    assert timeline.main([*argv, "--sample", "1701"]) == 1             # past the check: the runs (stubbed)
    assert [sample_count(60, e) for e in (0, 30, 31, 89, 90, 91)] == [1, 1, 2, 2, 2, 3]      # np.arange's
    work.write_text("submit_s,duration_s,num_gpu,cpu_milli,memory_mib\n1e12,10,1,1000,1024\n")   # 1e12 s:
    err = _stops(timeline.main, argv, capsys)                  # the step is printed whole (it read 1e+06, refused)
    assert "give --sample 1000002 or more" in err, err
    assert timeline.main([*argv, "--sample", "1000002"]) == 1


def test_timeline_refuses_a_mechanism_the_engine_refuses_for_the_workload(tmp_path, capsys):
    """``--mechanism migrate`` on a workload of gangs: the engine's ValueError came as a traceback from the first
    run, after an empty timeline.csv was written; it stops in one line before any run."""
    work, nodes = tmp_path / "gangs.csv", tmp_path / "c.json"
    work.write_text("name,submit_s,duration_s,num_gpu,cpu_milli,memory_mib,workers\ng,0,10,1,1000,1024,2\n")
    nodes.write_text(json.dumps({"nodes": [{"cpu_milli": 8000, "memory_mib": 8192, "gpu": 2, "model": "T4"}] * 2}))
    out = tmp_path / "o"
    err = _stops(timeline.main, ["--workload", str(work), "--cluster", str(nodes), "--mechanism", "none,migrate",
                                 "--output", str(out)], capsys)
    assert err.endswith("error: --mechanism migrate: jobs with workers > 1 (gangs) are not supported with "
                        "mechanism 'migrate' (--workload gangs.csv)") and not out.exists()


def test_timeline_says_a_workload_with_gangs_takes_no_optimum_instant(tmp_path, capsys, monkeypatch):
    seen = {}

    def cells_only(name, run, cells, *rest):
        seen["instants"] = {c[9] for c in cells}
        return None, 1

    monkeypatch.setattr(timeline, "run_and_write", cells_only)
    work, nodes = tmp_path / "gangs.csv", tmp_path / "c.json"
    work.write_text("name,submit_s,duration_s,num_gpu,cpu_milli,memory_mib,workers\ng,0,10,1,1000,1024,2\n")
    nodes.write_text(json.dumps({"nodes": [{"cpu_milli": 8000, "memory_mib": 8192, "gpu": 2, "model": "T4"}] * 2}))
    assert timeline.main(["--workload", str(work), "--cluster", str(nodes), "--output", str(tmp_path / "o")]) == 1
    assert seen["instants"] == {0}
    assert capsys.readouterr().err.strip() == ("gangs.csv has gangs (workers > 1): the optimum models place "
                                               "single-node jobs only, so no optimum instant is taken (optimum.csv "
                                               "has no rows)")


def test_traces_figure_marks_a_class_with_no_job_started(tmp_path, saved):
    shapes = pd.DataFrame({"workload": ["none-ran", "singles"], "class": ["single", "single"], "gpu_hours": [1.0, 2.0]})
    nan = float("nan")
    runs = pd.DataFrame({"workload": ["none-ran", "singles"], "policy": "fgd", "queue": "fifo",
                         "mean_wait_single_s": [nan, 0.0], "mean_wait_gang_s": [nan, nan]})
    plot_traces(shapes, runs, tmp_path / "t.png")
    (fig,) = saved
    right = fig.axes[1]
    assert [t.get_text() for t in right.texts] == ["n/a", "n/a", "n/a"]   # none-ran: both classes; singles: gangs
    assert right.get_ylim() == (0.0, 1.0) and right.get_xlabel() == "n/a: no job of that class started"


def test_defrag_figure_shows_a_lone_bound_at_its_budget(tmp_path, saved):
    nan = float("nan")
    frame = pd.DataFrame({"trace": "t", "method": "exact-highs", "budget": [0, 10, 50], "moves": [0, 7, 7],
                          "admitted_milli": [0, 1000, 1000], "bound_milli": [0.0, nan, 17460.0]})
    plot_defrag(frame, tmp_path / "d.png")
    (fig,) = saved
    plan, bound = fig.axes[0].get_lines()
    assert list(plan.get_xdata()) == [0, 7, 7]
    assert list(bound.get_xdata()) == [0, 50] and list(bound.get_ydata()) == [0.0, 17.46]
    assert bound.get_marker() == "v" and bound.get_label() == "exact-highs bound (at its move budget)"


@pytest.mark.parametrize(("study", "argv"), [
    (timeline, ["--load", "0.9,0.001"]), (cpu_aware, ["--load", "0.001"]), (interference, ["--load", "0.001"]),
    (failures, ["--load", "0.001"]), (schedule, ["--trace", "default", "--load", "0.001"])])
def test_a_load_below_the_services_stops_at_the_door(study, argv, tmp_path, capsys, openb_dir, gavel_table):
    out = tmp_path / "out"
    err = _stops(study.main, [*argv, "--seeds", "42", "--output", str(out)], capsys)
    assert err.endswith("argument --load: openb default, seed 42: load 0.001 is at most what the 92 services hold "
                        "(1.78% of capacity)"), err
    assert not out.exists()


def test_timeline_figure_of_a_cluster_without_gpus_says_so(tmp_path, saved):
    left = _timeline_axes(tmp_path, saved, [100.0, 100.0], capacity_milli=0)[0]
    assert [t.get_text() for t in left.texts] == ["the cluster has no GPUs:\nno GPU allocation to draw"]


def test_frontier_policy_and_optimum_see_the_same_tasks(tmp_path):
    """One node of 4 GPUs; pods of 1 GPU and of 3 GPUs, three each (12 GPUs: the trace alone is 300% of the
    cluster). Seed 2 brings two 3-GPU pods first, so 130% (5.2 GPUs) has arrived with the first alone: its optimum
    is 3 GPUs; the replay goes on and places a later 1-GPU pod, 4 GPUs in its final state, which was reported as the
    policy's value at 130%, above the proven bound."""
    data = tmp_path / "openb"
    data.mkdir()
    (data / "openb_node_list_gpu_node.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,4,V100M16\n")
    (data / "openb_pod_list_default.csv").write_text("\n".join(
        ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time"] + [f"{k}{i},1000,1024,{g},1000,,LS,Succeeded,{i},100,{i}"
                              for i in range(3) for k, g in (("a", 1), ("b", 3))]) + "\n")
    out = tmp_path / "out"
    assert frontier.main(["--data-dir", str(data), "--seeds", "2", "--points", "130", "--policies", "fgd",
                          "--time-limit", "5", "--output", str(out)]) == 0
    rows = pd.read_csv(out / "frontier.csv").set_index("method")
    assert rows.loc["config-types", "bound_milli"] == 3000 and rows.loc["fgd", "allocated_milli"] == 3000
    assert rows.loc["fgd", "gap_pct"] == 0.0


def test_schedule_gantt_names_an_unproven_schedule_so(tmp_path, saved):
    work, nodes = tmp_path / "w.csv", tmp_path / "c.json"
    work.write_text("name,submit_s,duration_s,num_gpu,cpu_milli,memory_mib\na,0,10,1,1000,0\nb,0,20,1,1000,0\n")
    nodes.write_text(json.dumps({"nodes": [{"cpu_milli": 8000, "memory_mib": 8192, "gpu": 1, "model": "T4"}]}))
    res = schedule.run_instance(None, "w", str(work), str(nodes), "mean-jct", ["fgd"], ["fifo"], 5.0, 0)
    assert res["rows"][-1]["status"] == "optimal"                 # a then b: JCTs 10 and 30, the optimum is 20 s
    res["rows"][-1] |= {"status": "time_limit", "bound": 15.0}      # as if the time limit had stopped it
    args = __import__("argparse").Namespace(workload=str(work), cluster=str(nodes))
    schedule.write_small([res], None, args, tmp_path)
    (fig,) = saved
    assert fig.axes[1].get_title(loc="left").startswith("best found, not proven optimal (bound 15.0 s): mean JCT")
    assert fig.get_suptitle() == "workload w.csv, mean-jct: best run against the best schedule found"


def test_pollux_figure_keeps_equal_policies_apart(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt.Figure, "savefig", lambda self, *a, **k: figures.append(self))
    frame = pd.DataFrame({"policy": ["tiresias", "optimus"], "load": 1.0, "workload": "w",
                          "mean_jct_s": [953.0, 953.0], "makespan_s": [1060.0, 1015.0], "ref_mean_jct_s": float("nan")})
    pollux.plot(frame, tmp_path / "p.png")
    (fig,) = figures
    xs = [bars.lines[0].get_xdata()[0] for bars in fig.axes[0].containers]    # each policy's data line
    assert len(xs) == 2 and xs[0] < 1.0 < xs[1]                     # both drawn, one each side of the load


def test_a_trace_that_makes_no_stream_is_not_blamed_on_the_load(tmp_path, capsys):
    """Every pod lives two days (a service): no load makes a stream of them; the line says so, not --load."""
    data = tmp_path / "openb"
    data.mkdir()
    (data / "openb_node_list_gpu_node.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,4,V100M16\n")
    (data / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\np0,1000,1024,1,1000,,LS,Running,0,172800,0\n")
    err = _stops(timeline.main, ["--data-dir", str(data), "--seeds", "42", "--output", str(tmp_path / "o")], capsys)
    assert err == ("python -m experiments.timeline: error: openb default: no pod lives 86400.0 s or less; nothing to "
                   "stream")
