"""The full-scale side of ``experiments.schedule``: ``--scale`` on a workload, the method registry, the check
that every bound is at or below every run, the interval and the diagnostics written beside them."""

from __future__ import annotations

import argparse
import json
import math

import pandas as pd
import pytest

from experiments import schedule
from experiments.schedule import check_bounds, interval_ratio, main
from fgdopt.timeline.suites import pinned_nodes_family
from formulations.schedule.record import BoundRecord

PINNED_JOBS = 4
"""The 8-GPU jobs of the pinned-nodes family the ``--scale`` tests run (its other parameters at their defaults)."""
PINNED_WAIT = 50 * sum(range(PINNED_JOBS)) / (PINNED_JOBS + 3)
"""Its optimal mean wait (s) over every job among the schedules that start the pins on arrival, by hand
(:func:`~fgdopt.timeline.suites.pinned_nodes_family`): 4 nodes, 3 pinned, so one 8-GPU job runs at a time; the
``k``-th, submitted at ``50 k`` s, starts at ``100 k`` s and waits ``50 k`` s; the pins wait 0. Over the 7 jobs:
``50 (0 + 1 + 2 + 3) / 7 = 300 / 7 = 42.86`` s."""


def _write(tmp_path, extra_rows=()):
    """The pinned-nodes family of :data:`PINNED_JOBS` 8-GPU jobs as a workload file and its 4 nodes as a cluster
    file (plus rows)."""
    inst = pinned_nodes_family(n_jobs=PINNED_JOBS)
    t = inst.jobs.tasks
    rows = [f"{t.names[j]},{t.cpu_milli[j]},{t.memory_mib[j]},{t.num_gpu[j]},{t.gpu_milli[j]},,"
            f"{inst.jobs.submit_s[j]:g},{inst.jobs.duration_s[j]:g}" for j in range(len(inst.jobs))]
    work = tmp_path / "pinned.csv"
    work.write_text("\n".join(["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,submit_s,duration_s",
                               *rows, *extra_rows]) + "\n")
    c = inst.cluster
    cluster = tmp_path / "nodes.json"
    cluster.write_text(json.dumps({"nodes": [{"cpu_milli": int(c.cpu_milli[i]), "memory_mib": int(c.memory_mib[i]),
                                              "gpu": int(c.gpu[i]), "model": str(c.model[i])}
                                             for i in range(c.n_nodes)]}))
    return work, cluster


ARGS = ["--scale", "--policies", "best-fit", "--queue", "fifo,sjf", "--time-limit", "8", "--lns-time-limit", "0.2",
        "--reserve-nodes", "0"]
FAST = ["--scale", "--policies", "best-fit", "--queue", "fifo,sjf", "--time-limit", "1", "--lns-time-limit", "0.2",
        "--reserve-nodes", "0"]                   # where no bound's status or value is read


def test_scale_on_the_pinned_family_and_a_job_that_fits_no_node(tmp_path, capsys):
    """``--scale`` on the pinned-nodes family plus a job of 64 cores (nodes have 32): the job is rejected with its
    reason (terminal and ``rejected.csv``) and left out of runs and bounds; the engine runs and the ``starts``
    search have the hand-derived mean wait :data:`PINNED_WAIT` (the rejected job counts in neither; optimal among the
    schedules that start the pins on arrival), the ``holds`` search at most that (it may delay a pin); the pooled
    bound is 0 (starting everything at once fits the pooled capacities), and so are ceilings (a) and (b); free
    re-packing cannot clear a node (every other node holds a pin or an 8-GPU job), so ceiling (c) is the engine
    run's wait and the split puts all of the best run's on order and placement."""
    work, cluster = _write(tmp_path, ["huge,64000,1024,1,1000,,0,10"])
    out = tmp_path / "out"
    assert main(["--workload", str(work), "--cluster", str(cluster), *ARGS, "--output", str(out)]) == 0
    said = capsys.readouterr().out
    assert "job 7 (huge): rejected (cpu: no node that holds its GPUs (if any) has cpu_milli milli-cores)" in said
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected.to_dict("records") == [
        {"job": 7, "name": "huge", "reason": "cpu: no node that holds its GPUs (if any) has cpu_milli milli-cores"}]
    frame = pd.read_csv(out / "schedule-bound.csv")
    assert frame["method"].tolist() == ["best-fit/fifo", "best-fit/sjf", "lns(best-fit/fifo)",
                                        "lns-holds(best-fit/fifo)", "bound-all", "bound-config", "bound-rigid",
                                        "bound-nodedecomp"]
    runs = frame[frame["status"] == "run"].set_index("method")["mean_wait_s"]
    # optimal among the schedules that start the pins on arrival: the ``starts`` search keeps its input ...
    assert runs.iloc[:3].tolist() == pytest.approx([PINNED_WAIT] * 3)
    # ... the ``holds`` search may delay a pin (it holds a node whole-node jobs wait for): a validated schedule of
    # less mean wait over every job, at or above every bound
    holds = runs["lns-holds(best-fit/fifo)"]
    assert holds <= PINNED_WAIT + 1e-9
    bound = frame[frame["method"] == "bound-all"].iloc[0]
    assert (bound["status"], bound["valid_for"]) == ("optimal", "all") and bound["mean_wait_s"] < 1e-3
    # the node-aware bounds hold for every schedule (pins delayed too), so they sit below the runs' 42.86 s;
    # the configuration LP sees that 8-GPU jobs need a free node: a positive bound where the pooled one has 0
    config = frame[frame["method"] == "bound-config"].iloc[0]
    assert config["status"] == "optimal" and 1 < config["mean_wait_s"] <= holds
    assert frame["mean_wait_s"][frame["method"] == "bound-nodedecomp"].iloc[0] <= holds
    rigid = frame[frame["method"] == "bound-rigid"].iloc[0]           # pooled too: every job at once fits
    assert (rigid["status"], rigid["valid_for"], rigid["mean_wait_s"]) == ("optimal", "all", 0.0)
    interval = pd.read_csv(out / "interval.csv")
    assert len(interval) == 1 and interval["trace"].iloc[0] == "pinned" and math.isnan(interval["load"].iloc[0])
    assert interval["best_run_wait_s"].iloc[0] == pytest.approx(holds)
    assert interval["best_bound_method"].iloc[0] == "bound-config"  # the pooled bound sees nothing of it
    assert interval["ratio"].iloc[0] == pytest.approx(holds / config["mean_wait_s"])
    diag = pd.read_csv(out / "diagnostics.csv").set_index("quantity")["value_s"]
    assert diag["ceiling_pooled_s"] == 0 and diag["ceiling_per_type_s"] == 0
    assert diag["ceiling_repack_s"] == pytest.approx(PINNED_WAIT)
    assert (diag["capacity_s"], diag["non_migration_s"]) == (0, 0)
    assert diag["order_and_placement_s"] == pytest.approx(holds)        # the best run's wait, all of it
    profile = pd.read_csv(out / "profile.csv")
    assert (profile["above_s"] == 0).all() and set(profile["group"]) == {"all"}
    assert (out / "interval.png").is_file() and (out / "schedule-bound.md").is_file()


def test_a_registered_bound_above_a_run_stops_the_study(tmp_path, monkeypatch):
    """A bound method registered with one line; one that claims more than a validated run is caught by name."""
    work, cluster = _write(tmp_path)
    for name in ("all", "pinned", "config", "rigid", "nodedecomp"):   # checked in the test above; not needed here
        monkeypatch.setitem(schedule.BOUND_METHODS, name, lambda point: None)
    monkeypatch.setitem(schedule.BOUND_METHODS, "too-high",
                        lambda point: BoundRecord("too-high", PINNED_WAIT + 1, math.nan, "optimal", "all",
                                                  0.0, 0.0, 7))
    monkeypatch.setitem(schedule.BOUND_METHODS, "fine",
                        lambda point: BoundRecord("fine", PINNED_WAIT, math.nan, "optimal", "all", 0.0, 0.0, 7))
    with pytest.raises(AssertionError, match="bound-too-high .* above .* of the validated run best-fit/fifo"):
        main(["--workload", str(work), "--cluster", str(cluster), *FAST])


def test_a_registered_run_method_is_validated_and_named(tmp_path, monkeypatch):
    """A run method sees the runs so far; its schedule is replayed (an invalid one stops the study) and its name
    is its row's method; the interval names the best."""
    from fgdopt.state import InfeasiblePlacement
    from fgdopt.timeline.schedule import Schedule

    work, cluster = _write(tmp_path)
    seen = {}

    def copy_best(point, runs):
        seen.update(runs)
        best = min(runs.values(), key=lambda r: r.schedule.start_s.sum())
        return [schedule.RunRecord("copy-of-best", best.schedule, 0.0, 0.0)]

    monkeypatch.setitem(schedule.RUN_METHODS, "copy", copy_best)
    out = tmp_path / "out"
    assert main(["--workload", str(work), "--cluster", str(cluster), *FAST, "--output", str(out)]) == 0
    assert set(seen) == {"best-fit/fifo", "best-fit/sjf", "lns(best-fit/fifo)", "lns-holds(best-fit/fifo)"}
    assert "copy-of-best" in pd.read_csv(out / "schedule-bound.csv")["method"].tolist()

    def broken(point, runs):
        s = next(iter(runs.values())).schedule
        return [schedule.RunRecord("broken", Schedule(s.start_s - 1.0, s.node, s.gpus), 0.0, 0.0)]

    monkeypatch.setitem(schedule.RUN_METHODS, "copy", broken)
    for name in ("lns", "lns-holds"):                   # the searches ran above; here only the engine's runs feed it
        monkeypatch.delitem(schedule.RUN_METHODS, name)
    with pytest.raises(InfeasiblePlacement):
        main(["--workload", str(work), "--cluster", str(cluster), *FAST])


def test_reservation_runs_are_named_by_their_bounds_and_validated(tmp_path, monkeypatch):
    """``--reserve-wait 0,60 --reserve-nodes 2``: one ``policy+reserve(Ws,R)/queue`` run per queue and grid point
    beside the plain runs (each replayed before it is written); ``--reserve-nodes 0`` adds none."""
    work, cluster = _write(tmp_path)
    monkeypatch.setitem(schedule.BOUND_METHODS, "config", lambda point: None)
    monkeypatch.setitem(schedule.BOUND_METHODS, "nodedecomp", lambda point: None)
    out = tmp_path / "out"
    args = [a for a in FAST if a not in ("--reserve-nodes", "0")]
    assert main(["--workload", str(work), "--cluster", str(cluster), *args, "--reserve-wait", "0,60",
                 "--reserve-nodes", "2", "--output", str(out)]) == 0
    methods = pd.read_csv(out / "schedule-bound.csv")["method"].tolist()
    assert [m for m in methods if m.startswith("best-fit+reserve")] == [
        "best-fit+reserve(0s,2)/fifo", "best-fit+reserve(60s,2)/fifo", "best-fit+reserve(0s,2)/sjf",
        "best-fit+reserve(60s,2)/sjf"]
    import matplotlib.image
    height = matplotlib.image.imread(out / "interval.png").shape[0]   # a workload (load NaN) is one panel: 3.4 in
    assert height == round(3.4 * 130)                                  # at 130 dpi, whatever its number of rows


def test_check_bounds_by_validity():
    """A ``background-on-time`` bound is held against the stream wait of the runs that started the background on
    arrival only; an ``all`` bound against every run's mean wait."""
    base = {"trace": "t", "seed": 1, "load": 1.0, "mean_jct_s": 0.0, "stream_jct_s": 0.0, "wall_s": 0.0, "cpu_s": 0.0}
    rows = [{**base, "method": "a/b", "status": "run", "valid_for": "", "mean_wait_s": 10.0, "stream_wait_s": 5.0,
             "background_on_time": False},
            {**base, "method": "c/d", "status": "run", "valid_for": "", "mean_wait_s": 20.0, "stream_wait_s": 8.0,
             "background_on_time": True},
            {**base, "method": "bound-p", "status": "optimal", "valid_for": "background-on-time",
             "mean_wait_s": math.nan, "stream_wait_s": 7.0, "background_on_time": True},
            {**base, "method": "bound-a", "status": "time_limit", "valid_for": "all", "mean_wait_s": 10.0,
             "stream_wait_s": math.nan, "background_on_time": False}]
    check_bounds(pd.DataFrame(rows))                  # 7 <= 8 (c/d only); 10 <= 10 and 20
    rows[2]["stream_wait_s"] = 8.5
    with pytest.raises(AssertionError, match="bound-p .* above the 8 s of the validated run c/d"):
        check_bounds(pd.DataFrame(rows))
    rows[2]["stream_wait_s"] = 7.0
    rows[3]["mean_wait_s"] = 10.01
    with pytest.raises(AssertionError, match="bound-a"):
        check_bounds(pd.DataFrame(rows))


def test_interval_ratio():
    assert interval_ratio(101.5, 1.6) == pytest.approx(63.4375)
    assert interval_ratio(5.0, 5.0) == 1.0 and interval_ratio(0.0, 7e-6) == 1.0
    assert interval_ratio(3.0, 0.0) == math.inf and math.isnan(interval_ratio(math.nan, 1.0))


def test_scale_on_a_suite_certifies_the_shortest_first_trap():
    """``--instances traps --scale``, one point: trap-shortest-first (one GPU; jobs of 3, 1 and 2 s submitted at
    0). FIFO waits 0, 3, 4 (mean 7/3 s); shortest first 0, 1, 3 (mean 4/3 s), the optimum (on one machine SPT
    minimizes the total completion time). The configuration LP and the node decomposition see one node of one
    GPU, so they meet 4/3 (less their safety margin): certified, gap 0. The pooled LP is below it (0.944 s
    measured: it lets the jobs share the GPU within a grid interval). The point is named after the instance,
    its load NaN (a hand-made instance has no generator load), its wall and CPU seconds recorded."""
    res = schedule.suite_point("traps", "trap-shortest-first", 0, ["best-fit"], ["fifo", "sjf"], 5.0, 1.0,
                               ((0.0, 0),))
    waits = {r["method"]: r["mean_wait_s"] for r in res["rows"]}
    assert waits["best-fit/fifo"] == pytest.approx(7 / 3) and waits["best-fit/sjf"] == pytest.approx(4 / 3)
    assert waits["bound-config"] == pytest.approx(4 / 3, abs=1e-5)
    assert waits["bound-nodedecomp"] == pytest.approx(4 / 3, abs=1e-5)
    assert 0 < waits["bound-all"] < 4 / 3 - 0.1
    (iv,) = res["interval"]
    assert (iv["trace"], iv["best_run_method"], iv["ratio"]) == ("trap-shortest-first", "best-fit/sjf", 1.0)
    assert math.isnan(iv["load"]) and schedule.certified_gap_pct(iv["ratio"]) == 0.0
    diag = {d["quantity"]: d["value_s"] for d in res["diagnostics"]}
    assert diag["point_wall_s"] > 0 and diag["point_cpu_s"] > 0
    assert schedule.certified_gap_pct(2.0) == 50.0 and schedule.certified_gap_pct(math.inf) == 100.0


def test_scale_needs_a_workload_or_a_suite(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--scale", "--trace", "default"])
    assert exc.value.code == 2


def test_points_parse_in_order_once_each():
    """``--points``: SEED:LOAD pairs in the order written, a repeat dropped; a bare seed, a load of 0 or a negative
    seed is refused."""
    assert schedule._points("43:1.1, 42:1,43:1.1") == [(43, 1.1), (42, 1.0)]
    for bad in ("43", "43:0", "-1:1.1", "a:1", ","):
        with pytest.raises(argparse.ArgumentTypeError, match="SEED:LOAD"):
            schedule._points(bad)


@pytest.mark.parametrize(("extra", "said"), [
    (["--points", "43:1.1", "--load", "1.1"], "--points names every (seed, load): give it without --load"),
    (["--points", "43:1.1", "--seeds", "43"], "--points names every (seed, load): give it without --load"),
    (["--points", "43:1.1", "--quick"], "--quick runs load 0.9: give it --seeds, not --points"),
    (["--points", "43"], "argument --points: expected SEED:LOAD pairs")])
def test_points_refused_with_the_options_they_replace(extra, said, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--trace", "default", *extra, "--output", str(tmp_path / "o")])
    assert stop.value.code == 2 and not (tmp_path / "o").exists()
    assert said in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(("extra", "said"), [
    (["--seeds", "1-3"], "--seeds applies only with --trace (the openb stream)"),
    (["--load", "0.5"], "--load applies only with --trace"),
    (["--lns-time-limit", "3"], "--lns-time-limit applies only with --trace or --scale"),
    (["--scale", "--objective", "makespan"], "--objective applies only to the small study")])
def test_options_of_another_mode_are_refused(extra, said, tmp_path, capsys):
    """An option the chosen mode ignores stops the study in one line (``--seeds 1-3`` beside a workload ran it
    once, on ``--seed`` 0, without a word)."""
    work, cluster = _write(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["--workload", str(work), "--cluster", str(cluster), *extra, "--output", str(tmp_path / "o")])
    assert stop.value.code == 2 and not (tmp_path / "o").exists()
    assert said in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.trace
@pytest.mark.parametrize(("extra", "points"), [
    (["--points", "44:1.2,42:1"], [(44, 1.2), (42, 1.0)]),
    (["--seeds", "43,44", "--load", "1,1.2"], [(43, 1.0), (44, 1.0), (43, 1.2), (44, 1.2)]),
    ([], [(42, 0.7), (42, 0.9), (42, 1.1)])])
def test_the_points_a_trace_runs(extra, points, openb_dir, monkeypatch):
    """The (seed, load) of each full-scale cell: the ``--points`` named, in their order; else every ``--seeds`` x
    ``--load`` (load-major), by default seed 42 at loads 0.7, 0.9 and 1.1."""
    cells = []
    monkeypatch.setattr(schedule, "run_and_write", lambda study, fn, c, *rest: (cells.extend(c), (None, 0))[1])
    assert main(["--trace", "default", "--data-dir", str(openb_dir), *extra]) == 0
    assert [(c[1], c[2]) for c in cells] == points


DIAGNOSED = ("best_run_s", "best_bound_s", "ceiling_pooled_s", "ceiling_per_type_s", "ceiling_repack_s", "capacity_s",
             "non_migration_s", "order_and_placement_s", "diagnostics_wall_s")
"""The quantities of ``diagnostics.csv`` the report tabulates."""


def _point_rows(seed, load, run_s, bound_s):
    """Two runs (``run_s`` and twice it) and one ``all`` bound of one point, as rows of ``schedule-bound.csv``."""
    base = {"trace": "default", "seed": seed, "load": load, "mean_jct_s": 0.0, "stream_wait_s": math.nan,
            "stream_jct_s": math.nan, "background_on_time": False, "wall_s": 1.0, "cpu_s": 1.0}
    return [{**base, "method": "a/b", "status": "run", "valid_for": "", "mean_wait_s": run_s},
            {**base, "method": "c/d", "status": "run", "valid_for": "", "mean_wait_s": 2 * run_s},
            {**base, "method": "bound-x", "status": "optimal", "valid_for": "all", "mean_wait_s": bound_s}]


def test_the_report_joins_both_schedule_studies_by_load_and_seed(tmp_path):
    """``schedule-bound`` (seed 42 at 1.1) and ``schedule-bound-seeds`` (seed 43 at 1.0 and 1.1): the interval table
    has the three points by load then seed, with their run counts and ratios (80/20 = 4, 30/10 = 3, 90/15 = 6), and
    the compact figure one row per point (1.4 + 0.6 x 3 inches at 130 dpi)."""
    import matplotlib.image

    from experiments import report

    studies = {"schedule-bound": [(42, 1.1, 80.0, 20.0)], "schedule-bound-seeds": [(43, 1.1, 90.0, 15.0),
                                                                                   (43, 1.0, 30.0, 10.0)]}
    for study, points in studies.items():
        out = tmp_path / study
        out.mkdir()
        frame = pd.DataFrame([r for p in points for r in _point_rows(*p)], columns=schedule.BOUND_COLUMNS)
        frame.to_csv(out / "schedule-bound.csv", index=False)
        pd.DataFrame([{"trace": "default", "seed": s, "load": x, **schedule.interval_row(
            frame[(frame["seed"] == s) & (frame["load"] == x)])} for s, x, *_ in points]).to_csv(
            out / "interval.csv", index=False)
        pd.DataFrame([{"trace": "default", "seed": s, "load": x, "quantity": q, "value_s": 5.0, "method": "m",
                       "wall_s": 0.0} for s, x, *_ in points for q in DIAGNOSED]).to_csv(out / "diagnostics.csv",
                                                                                         index=False)
    items = report.schedule_tables(tmp_path)
    table = items["schedule_interval"].splitlines()
    assert [[c.strip() for c in row.strip("|").split("|")] for row in table[2:]] == [
        ["43", "1", "a/b", "30", "bound-x", "10", "3", "2"], ["42", "1.1", "a/b", "80", "bound-x", "20", "4", "2"],
        ["43", "1.1", "a/b", "90", "bound-x", "15", "6", "2"]]
    assert (items["schedule_interval_points"], items["schedule_ratio_max"], items["schedule_ratio_min"]) == (
        "3", "6", "3.0")
    assert "schedule_bound_seeds" in items and "load 1, seed 43" in items["schedule_bound_seeds"]
    drawn = schedule.plot_interval_points(report._schedule_bound(tmp_path, "schedule-bound.csv"),
                                          report._schedule_bound(tmp_path, "diagnostics.csv"), tmp_path / "p.png")
    assert matplotlib.image.imread(drawn).shape[0] == round((1.4 + 0.6 * 3) * 130)


def test_a_workload_no_job_of_which_fits_stops_in_one_line(tmp_path, capsys):
    """Nodes of 32 cores and every job asking 64: nothing to schedule, in one line naming the option and the first
    job's reason, before any work and with what the output folder held kept (with or without ``--scale``)."""
    work, cluster = _write(tmp_path)
    lines = work.read_text().splitlines()
    work.write_text("\n".join([lines[0], *(",".join(["64000" if i == 1 else v for i, v in enumerate(row.split(","))])
                                           for row in lines[1:])]) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "schedule-bound.csv").write_text("kept\n")
    for scale in (["--scale"], []):
        with pytest.raises(SystemExit) as exc:
            main(["--workload", str(work), "--cluster", str(cluster), *scale, "--output", str(out)])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.endswith("error: --workload: none of its 7 jobs fits an empty node of --cluster (job 0 (P0): cpu: "
                            "no node that holds its GPUs (if any) has cpu_milli milli-cores); nothing to run"), err
    assert (out / "schedule-bound.csv").read_text() == "kept\n" and len(list(out.iterdir())) == 1


def test_the_pooled_bound_leaves_out_a_resource_the_cluster_has_none_of():
    """A trace that records no CPU or memory (Philly: nodes and jobs at 0): the pooled LP's rows for them would
    divide by a capacity of 0. Left out, the bound is the one of the same jobs on a node with CPU and memory to spare
    (there the rows hold with room: 0 <= capacity). Four 8-GPU jobs of 10 s submitted at 0 on one 8-GPU node: the
    optimum waits 0, 10, 20 and 30 s (mean 15); the pooled bound is positive and at most that."""
    from fgdopt.model import Cluster, TaskSet
    from fgdopt.timeline import JobSet
    from formulations.schedule.bound import pooled_bound

    jobs = JobSet(TaskSet([0] * 4, [0] * 4, [8] * 4, [1000] * 4), [0.0] * 4, [10.0] * 4)
    bare = pooled_bound(Cluster([0], [0], [8], ["V100"]), jobs)
    roomy = pooled_bound(Cluster([32000], [65536], [8], ["V100"]), jobs)
    assert bare.status == roomy.status == "optimal"
    assert bare.mean_wait_s == pytest.approx(roomy.mean_wait_s, abs=1e-6)
    assert 1.0 < bare.mean_wait_s <= 15.0 + 1e-6


def test_the_pooled_bound_of_jobs_submitted_far_from_zero():
    """The same four jobs submitted from 0 s and from 10^12 s (one 2-GPU node; the optimum's mean wait is 4 s): the
    bound is the same (its rows hold waits only), and its grid starts at the first submission (from 0 it had 10^12
    intervals: numpy could not allocate 7 TiB for their edges, a traceback from ``experiments.schedule
    --workload``)."""
    from fgdopt.model import Cluster, TaskSet
    from fgdopt.timeline import JobSet
    from formulations.schedule.bound import pooled_bound

    tasks, cluster = TaskSet([1000] * 4, [1024] * 4, [1, 2, 1, 1], [1000] * 4), Cluster([8000], [65536], [2], ["T4"])
    submit, duration = [0.0, 1.0, 2.0, 3.0], [10.0, 5.0, 7.0, 3.0]
    near = pooled_bound(cluster, JobSet(tasks, submit, duration))
    far = pooled_bound(cluster, JobSet(tasks, [1e12 + s for s in submit], duration))
    assert near.status == far.status == "optimal" and near.step_s == far.step_s == 1.0
    assert far.mean_wait_s == pytest.approx(near.mean_wait_s, rel=1e-9) and 2.0 < near.mean_wait_s <= 4.0


FAR = "submit_s,duration_s,num_gpu,gpu_milli,cpu_milli,memory_mib\n0,1e15,1,1000,1000,1024\n0,3e14,1,1000,1000,1024\n" \
      "1000,1,1,1000,1000,1024\n5,30.5,1,1000,1000,1024\n7,0.001,1,500,500,1024\n"
"""Five jobs on one GPU whose times span 1 ms to 1e15 s: in the exact model's 1 ms unit, 6.5e18 units of ends."""


def test_times_beyond_the_exact_models_integers(tmp_path, capsys):
    """Times from 1 ms to 1e15 s (:data:`FAR`): the exact model would need ends of about 1.3e18 ms each, beyond
    CP-SAT's integers. The exact study refuses the workload in one line naming it, before any work (CP-SAT said
    ``MODEL_INVALID`` in a traceback); ``--scale`` runs: its search leaves the windows it cannot model as they are,
    the node decomposition reports ``error`` with the trivial bound 0 (it crashed in its pricing), and the 1 ms job,
    whose finish at 3e14 s (after B, shortest first) is its start in float64, is validated as an instant one (the
    replay raised)."""
    from fgdopt import Cluster
    from fgdopt.timeline.jobs import read_workload
    from fgdopt.timeline.schedule import recorded_run, validate_schedule
    from formulations.schedule.exact import RangeError, solve_exact
    from formulations.schedule.lns import improve
    from formulations.schedule.nodedecomp import nodedecomp_bound

    work, cluster_file = tmp_path / "far.csv", tmp_path / "one.json"
    work.write_text(FAR)
    cluster_file.write_text(json.dumps({"nodes": [{"cpu_milli": 8000, "memory_mib": 65536, "gpu": 1,
                                                   "model": "T4"}]}))
    with pytest.raises(SystemExit) as exc:
        main(["--workload", str(work), "--cluster", str(cluster_file), "--output", str(tmp_path / "out")])
    assert exc.value.code == 2 and not (tmp_path / "out").exists()
    assert capsys.readouterr().err.strip().endswith(
        "far.csv: the exact model counts time in units of 0.001 s: 5 jobs over a horizon of 1.3e+15 s make 6.5e+18 "
        "units, beyond CP-SAT's integers (1.15e+18); coarsen or shorten the workload's times")
    cluster, jobs = Cluster([8000], [65536], [1], ["T4"]), read_workload(work)
    with pytest.raises(RangeError):
        solve_exact(cluster, jobs, "mean-jct", 5.0)
    _, run = recorded_run(cluster, jobs, "best-fit", "sjf")
    validate_schedule(cluster, jobs, run)
    assert run.start_s[4] + 0.001 == run.start_s[4] > 1e14
    assert improve(cluster, jobs, run, budget_s=1.0, seed=0).schedule.start_s.tolist() == run.start_s.tolist()
    bound = nodedecomp_bound(cluster, jobs, time_limit=5.0)
    assert bound.status == "error" and bound.wait_s == 0.0 and "CP-SAT's integers" in bound.info["reason"]
