"""How far from optimal over time: engine runs against the optimal schedule, and a certified bound at full scale.

Usage::

    python -m experiments.schedule --instances small-time [--objective mean-jct,makespan] \\
        [--policies fgd,best-fit] [--queue fifo,backfill,sjf,smallest] [--time-limit 60] [--jobs N] \\
        [--dask ADDRESS] [--resume] [--quick] --output DIR
    python -m experiments.schedule --workload FILE.csv --cluster FILE.json ...
    python -m experiments.schedule --trace default --load 0.7,0.9,1.1 --n-jobs 20000 [--seeds 42] ...

Small instances (``--instances``: ``small-time``, ``medium-time`` or ``traps`` of
:mod:`fgdopt.timeline.suites`, or one ``--workload`` on the nodes of ``--cluster``): every (policy, queue) runs
in the time engine (:func:`fgdopt.timeline.schedule.recorded_run`, policies seeded by ``--seed``); for each
objective the exact model (:func:`formulations.schedule.solve_schedule`, CP-SAT with 2 workers; ``--time-limit``
seconds for build, search and LP bound together) is warm-started from the best run. Writes to ``DIR``:
``schedule.csv`` (one row per instance, objective and method: ``instance, objective, method, value, bound, status,
gap_pct, wall_s``; ``method`` is
``policy/queue`` for engine runs (status ``engine``) and ``optimum`` for the model (``value`` its incumbent,
``bound`` its proven bound, ``status`` ``optimal`` when proven); ``gap_pct = 100 (value - bound) / bound``),
``schedule.md`` (per instance; per method: mean and max gap, proven count, wins = instances where it has the
best engine value), ``starts.csv`` (the optimal schedule, and the best run's that warm-started it: ``instance,
objective, method, job, start_s, node, gpus, status, reason``, ``gpus`` space-separated ids, ``status``
``finished`` or ``rejected``, ``reason`` why a rejected job fits no empty node,
:data:`fgdopt.timeline.admission.REJECT_REASONS`) and
``gantt.png`` (the instance where the best run is furthest from the optimum: that run above the optimum, whose
identical nodes and GPUs are renumbered to match the run's where they can,
:func:`fgdopt.timeline.schedule.relabel_like`; ``starts.csv`` keeps the solver's numbering).
Every schedule is replayed on the ``ClusterState`` before it is written.

Full scale (``--trace``): per (load, seed), the openb stream (:func:`fgdopt.timeline.openb_jobs`) runs under
every (policy, queue), and :func:`formulations.schedule.pooled_bound` bounds the mean JCT and wait of all jobs
(services, warm start and stream: valid for every schedule), and of the stream jobs with the time-0 background
pinned (valid for runs that start the whole background on arrival; ``infeasible`` when it exceeds the pooled
capacity). Writes ``schedule-bound.csv`` (``trace, seed, load, method, mean_wait_s, mean_jct_s, stream_wait_s,
stream_jct_s, background_on_time, wall_s, cpu_s``; the bound rows are ``method`` ``bound-all`` and
``bound-pinned``, their values the bounds) and ``schedule-bound.md`` with the split of each run's mean wait into
capacity (the bound) and fragmentation and order (the rest). ``--quick``: the traps, or 3,000 stream jobs at
load 0.9. ``--resume`` keeps the finished cells of ``DIR/.runs/``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import (
    check_paths,
    existing_file,
    names,
    non_negative,
    non_negative_int,
    openb_dir,
    output_dir,
    parse_policies,
    parse_seeds,
    positive_int,
    real_list,
    study_parser,
    study_prog,
    unknown_name,
)
from experiments.executors import (
    add_dask_option,
    add_resume_option,
    content_digest,
    policy_digest,
    run_and_write,
)
from experiments.timeline import load_cluster, parse_queues
from fgdopt.timeline.suites import TIME_SUITES

OBJECTIVE_NAMES = ("mean-jct", "makespan")
COLUMNS = ("instance", "objective", "method", "value", "bound", "status", "gap_pct", "wall_s")
BOUND_COLUMNS = ("trace", "seed", "load", "method", "mean_wait_s", "mean_jct_s", "stream_wait_s", "stream_jct_s",
                 "background_on_time", "wall_s", "cpu_s")
OUTPUTS = ("schedule.csv", "schedule.md", "starts.csv", "gantt.png", "schedule-bound.csv", "schedule-bound.md")
"""The files a run writes into ``--output``."""


def parser() -> argparse.ArgumentParser:
    """The study's command line (:mod:`experiments.args`: every value checked as it is parsed)."""
    p = study_parser("experiments.schedule", __doc__)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--instances", type=_suite, default=None,
                     help=f"one of {', '.join(TIME_SUITES)} (default: small-time; --quick: traps)")
    src.add_argument("--workload", type=existing_file, default=None, help="a workload CSV (with --cluster)")
    src.add_argument("--trace", default=None, help="openb variant: the full-scale bound")
    p.add_argument("--cluster", type=existing_file, default=None, help="instance JSON whose nodes run --workload")
    p.add_argument("--objective", type=names(OBJECTIVE_NAMES, "objective"), default=list(OBJECTIVE_NAMES),
                   help=f"comma-separated, of {', '.join(OBJECTIVE_NAMES)} (default: both)")
    p.add_argument("--policies", type=parse_policies, default=["fgd", "best-fit"],
                   help="placement policies: names or module:attribute specs (default: fgd,best-fit)")
    p.add_argument("--queue", type=parse_queues, default=["fifo", "backfill", "sjf", "smallest"],
                   help="queue disciplines (default: fifo,backfill,sjf,smallest)")
    p.add_argument("--time-limit", type=non_negative, default=60.0, help="wall seconds of the model per instance "
                   "and objective (build, CP-SAT search and LP bound; the LP time limit with --trace; default: 60)")
    p.add_argument("--load", type=real_list(0.0), default=[0.7, 0.9, 1.1],
                   help="with --trace: offered loads (default: 0.7,0.9,1.1)")
    p.add_argument("--n-jobs", type=positive_int, default=20_000, help="with --trace: stream jobs (default: 20000)")
    p.add_argument("--seeds", type=parse_seeds, default=[42], help="with --trace: seeds, A-B or a,b (default: 42)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="policy and CP-SAT seed (default: 0)")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    p.add_argument("--quick", action="store_true", help="the traps, or 3,000 stream jobs at load 0.9")
    p.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    p.add_argument("--output", type=output_dir, default=None, help="folder for the CSVs, tables and gantt.png")
    add_dask_option(p)
    add_resume_option(p)
    return p


def _suite(text: str) -> str:
    if text not in TIME_SUITES:
        raise unknown_name("instance suite", text, TIME_SUITES)
    return text


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The checks that span options, and the input files read once: the first problem stops with one line."""
    from fgdopt.timeline import read_workload
    from fgdopt.traces import check_timed, load_openb

    check_paths(p, args.output, OUTPUTS, {"--workload": args.workload, "--cluster": args.cluster})
    if (args.workload is None) != (args.cluster is None):
        p.error("--workload and --cluster go together")
    args.data_dir = None if args.data_dir is None else str(args.data_dir)
    try:
        if args.trace is not None:
            load_openb(args.trace, args.data_dir)
            check_timed(args.trace)                         # a stream needs the pods' times
            if args.quick:
                args.load, args.n_jobs = [0.9], 3000
        elif args.workload is not None:
            load_cluster(args.cluster)
            read_workload(args.workload)
            args.workload, args.cluster = str(args.workload), str(args.cluster)
        else:
            args.instances = "traps" if args.quick and args.instances is None else (args.instances or "small-time")
    except (OSError, ValueError) as exc:
        p.error(str(exc))


def _instance(suite: str | None, name: str, workload: str | None, cluster: str | None):
    from experiments.timeline import load_cluster
    from fgdopt.timeline import read_workload
    from fgdopt.timeline.suites import TimeInstance, time_suite

    if suite is None:
        return TimeInstance(name, load_cluster(cluster), read_workload(workload))
    return next(i for i in time_suite(suite) if i.name == name)


def run_instance(suite: str | None, name: str, workload: str | None, cluster: str | None, objective: str,
                 policies: list[str], queues: list[str], time_limit: float, seed: int) -> dict:
    """One (instance, objective) cell: every engine run, then the model warm-started from the best of them."""
    from fgdopt.timeline.admission import rejection_reasons
    from fgdopt.timeline.schedule import objective_value, recorded_run, validate_schedule
    from formulations.schedule import solve_schedule

    inst = _instance(suite, name, workload, cluster)
    runs = {}
    for pol in policies:
        for q in queues:
            result, sched = recorded_run(inst.cluster, inst.jobs, pol, q, seed=seed)
            validate_schedule(inst.cluster, inst.jobs, sched)
            runs[f"{pol}/{q}"] = (objective_value(inst.jobs, sched, objective), result.wall_s, sched)
    best = min(runs, key=lambda k: (runs[k][0], k))
    res = solve_schedule(inst.cluster, inst.jobs, objective, time_limit, hint=runs[best][2], seed=seed)
    rows = []
    for method, (value, wall, _) in runs.items():
        rows.append({"instance": name, "objective": objective, "method": method, "value": value,
                     "bound": res.bound, "status": "engine", "gap_pct": _gap(value, res.bound), "wall_s": wall})
    rows.append({"instance": name, "objective": objective, "method": "optimum", "value": res.value,
                 "bound": res.bound, "status": res.status, "gap_pct": res.gap_pct, "wall_s": res.wall_s})
    why = rejection_reasons(inst.cluster, inst.jobs.tasks)        # "" where the job fits an empty node
    starts = [{"instance": name, "objective": objective, "method": method, "job": inst.jobs.tasks.names[j],
               "start_s": s.start_s[j], "node": int(s.node[j]), "gpus": " ".join(map(str, s.gpus[j])),
               "status": "rejected" if why[j] else "finished", "reason": why[j]}
              for method, s in (("optimum", res.schedule), (best, runs[best][2])) for j in range(len(s))]
    return {"rows": rows, "starts": starts, "best": best, "best_schedule": runs[best][2], "optimum": res.schedule,
            "cpu_s": res.cpu_s}


def _gap(value: float, bound: float) -> float:
    if not (math.isfinite(value) and math.isfinite(bound)) or bound <= 0:
        return math.nan
    return max(0.0, 100.0 * (value - bound) / bound)


def method_summary(part: pd.DataFrame) -> pd.DataFrame:
    """Per method of one objective's rows of ``schedule.csv``: mean and max gap (percent, against the proven bound),
    proven (instances where its value meets the bound, "k/n") and wins (instances where it has the best engine
    value; empty for the optimum, which is not an engine run)."""
    best = part[part["status"] == "engine"].groupby("instance")["value"].min()
    win = (part["status"] == "engine") & (part["value"] <= part["instance"].map(best) + 1e-9)
    flags = part.assign(win=win, proven=part["gap_pct"].fillna(np.inf) <= 1e-6)
    table = flags.groupby("method", sort=False).agg(mean_gap_pct=("gap_pct", "mean"), max_gap_pct=("gap_pct", "max"),
                                                    proven=("proven", "sum"), wins=("win", "sum"))
    table["proven"] = [f"{int(v)}/{part['instance'].nunique()}" for v in table["proven"]]
    engine = part.loc[part["status"] == "engine", "method"].unique()
    table["wins"] = [int(v) if m in engine else "" for m, v in table["wins"].items()]   # the optimum wins nothing
    return table.round(2).reset_index()


SUMMARY_HEADINGS = {"mean_gap_pct": "mean gap to the bound (%)", "max_gap_pct": "max gap to the bound (%)",
                    "proven": "instances at the bound", "wins": "instances with the best engine run"}
"""The per-method table's headings in words (:func:`method_summary`'s column -> heading)."""


def tables(frame: pd.DataFrame) -> str:
    """The Markdown tables of ``schedule.csv``: per instance (value of every method) and per method."""
    out = []
    for objective, part in frame.groupby("objective", sort=False):
        wide = part.pivot(index="instance", columns="method", values="value").round(2)
        opt = part[part["method"] == "optimum"].set_index("instance")
        wide["bound"] = opt["bound"].round(2)
        wide["status"] = opt["status"]
        out += [f"### {objective} (seconds)", "", wide.reset_index().to_markdown(index=False), "",
                method_summary(part).rename(columns=SUMMARY_HEADINGS).to_markdown(index=False), ""]
    return "\n".join(out)


def run_small(args: argparse.Namespace) -> int:
    from fgdopt.timeline.suites import time_suite

    if args.workload is not None:
        instances, suite = [Path(args.workload).stem], None
    else:
        instances, suite = [i.name for i in time_suite(args.instances)], args.instances
    cells = [(suite, name, args.workload, args.cluster, obj, args.policies, args.queue, args.time_limit, args.seed)
             for obj in args.objective for name in instances]
    keys = [(suite, name, content_digest(args.workload), content_digest(args.cluster), obj,
             [policy_digest(p) for p in args.policies], [policy_digest(q) for q in args.queue], args.time_limit,
             args.seed) for obj in args.objective for name in instances]
    _, code = run_and_write("schedule", run_instance, cells, args, keys,
                            lambda done, tmp: write_small(done, suite, args, tmp), study_prog("experiments.schedule"))
    if code:
        return code
    return 0


def write_small(results: list[dict], suite: str | None, args: argparse.Namespace, folder: Path) -> None:
    """``schedule.csv``, ``schedule.md``, ``starts.csv`` and ``gantt.png`` of the finished cells into ``folder``
    (the table printed too); the Gantt chart shows the instance whose best run is furthest from the optimum."""
    from fgdopt.plot import plot_gantt

    frame = pd.DataFrame([r for res in results for r in res["rows"]], columns=COLUMNS)
    print(tables(frame))
    frame.to_csv(folder / "schedule.csv", index=False)
    pd.DataFrame([r for res in results for r in res["starts"]]).to_csv(folder / "starts.csv", index=False)
    (folder / "schedule.md").write_text(tables(frame))
    if results:
        res = max(results, key=lambda r: (r["rows"][-1]["objective"] == "mean-jct",
                                          min(x["value"] for x in r["rows"][:-1]) - r["rows"][-1]["value"]))
        name = res["rows"][0]["instance"]
        inst = _instance(suite, name, args.workload, args.cluster)
        what = f"workload {Path(args.workload).name}" if suite is None else name
        plot_gantt(inst.cluster, inst.jobs, {res["best"]: res["best_schedule"], "optimum": res["optimum"]},
                   folder / "gantt.png", f"{what}, {res['rows'][0]['objective']}: best run against the optimum")


def run_bound(trace: str, seed: int, load: float, n_jobs: int, policies: list[str], queues: list[str],
              time_limit: float, data_dir: str | None = None) -> list[dict]:
    """One (load, seed) of the full-scale study: the engine runs and the two pooled bounds."""
    from fgdopt.timeline import openb_jobs, simulate
    from formulations.schedule import pooled_bound

    cluster, jobs = openb_jobs(trace, load, n_jobs, seed=seed, data_dir=data_dir)
    background = (jobs.submit_s == 0) & ~jobs.measured & (np.arange(len(jobs)) < len(jobs) - n_jobs)
    stream = ~background
    key = {"trace": trace, "seed": seed, "load": load}
    rows = []
    for pol in policies:
        for q in queues:
            r = simulate(cluster, jobs, pol, q, seed=seed, frag=False)
            wait, jct = r.start_s - jobs.submit_s, r.finish_s - jobs.submit_s
            rows.append({**key, "method": f"{pol}/{q}", "mean_wait_s": np.nanmean(wait), "mean_jct_s": np.nanmean(jct),
                         "stream_wait_s": np.nanmean(wait[stream]), "stream_jct_s": np.nanmean(jct[stream]),
                         "background_on_time": bool((wait[background] == 0).all()), "wall_s": r.wall_s,
                         "cpu_s": r.cpu_s})
    every = pooled_bound(cluster, jobs, time_limit=time_limit)
    rows.append({**key, "method": f"bound-all ({every.status})", "mean_wait_s": every.mean_wait_s,
                 "mean_jct_s": every.mean_jct_s, "stream_wait_s": math.nan, "stream_jct_s": math.nan,
                 "background_on_time": False, "wall_s": every.wall_s, "cpu_s": every.cpu_s})
    pinned = pooled_bound(cluster, jobs, counted=stream, pinned=background, time_limit=time_limit)
    rows.append({**key, "method": f"bound-pinned ({pinned.status})", "mean_wait_s": math.nan, "mean_jct_s": math.nan,
                 "stream_wait_s": pinned.mean_wait_s, "stream_jct_s": pinned.mean_jct_s, "background_on_time": True,
                 "wall_s": pinned.wall_s, "cpu_s": pinned.cpu_s})
    return rows


def bound_tables(frame: pd.DataFrame) -> str:
    """Per (load, seed): every run's mean wait (all jobs) beside the bound, split into capacity and the rest."""
    out = []
    for (load, seed), part in frame.groupby(["load", "seed"]):
        b = part[part["method"].str.startswith("bound-all")]["mean_wait_s"].iloc[0]
        pin = part[part["method"].str.startswith("bound-pinned")]["stream_wait_s"].iloc[0]
        runs = part[~part["method"].str.startswith("bound")].copy()
        runs["capacity_s"] = b
        runs["fragmentation_and_order_s"] = (runs["mean_wait_s"] - b).round(1) + 0.0          # no -0
        runs["stream_capacity_s"] = np.where(runs["background_on_time"], pin, np.nan)
        cols = ["method", "mean_wait_s", "mean_jct_s", "capacity_s", "fragmentation_and_order_s", "stream_wait_s",
                "stream_capacity_s", "background_on_time"]
        out += [f"### load {load:g}, seed {seed}", "", runs[cols].round(1).to_markdown(index=False), "",
                part[part["method"].str.startswith("bound")][["method", "mean_wait_s", "mean_jct_s", "stream_wait_s",
                                                              "stream_jct_s", "wall_s", "cpu_s"]].round(1)
                .to_markdown(index=False), ""]
    return "\n".join(out)


def run_full(args: argparse.Namespace) -> int:
    from fgdopt.traces import trace_files

    cells = [(args.trace, s, load, args.n_jobs, args.policies, args.queue, max(args.time_limit, 1.0), args.data_dir)
             for load in args.load for s in args.seeds]
    keys = [(*c[:4], [policy_digest(p) for p in c[4]], [policy_digest(q) for q in c[5]], c[6],
             content_digest(*trace_files(args.trace, args.data_dir))) for c in cells]
    _, code = run_and_write("schedule-bound", run_bound, cells, args, keys, write_full,
                            study_prog("experiments.schedule"))
    if code:
        return code
    return 0


def write_full(results: list[list[dict]], folder: Path) -> None:
    """``schedule-bound.csv`` and ``schedule-bound.md`` of the finished cells into ``folder`` (the table printed)."""
    frame = pd.DataFrame([r for res in results for r in res], columns=BOUND_COLUMNS)
    print(bound_tables(frame))
    frame.to_csv(folder / "schedule-bound.csv", index=False)
    (folder / "schedule-bound.md").write_text(bound_tables(frame))


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    check_args(p, args)
    return run_full(args) if args.trace is not None else run_small(args)


if __name__ == "__main__":
    sys.exit(main())
