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
objective, method, job, start_s, node, gpus``, ``gpus`` space-separated ids) and
``gantt.png`` (the instance where the best run is furthest from the optimum: that run above the optimum).
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

from experiments.executors import SweepInterrupted, add_dask_option, add_resume_option, run_cells, stop_message

OBJECTIVE_NAMES = ("mean-jct", "makespan")
COLUMNS = ("instance", "objective", "method", "value", "bound", "status", "gap_pct", "wall_s")
BOUND_COLUMNS = ("trace", "seed", "load", "method", "mean_wait_s", "mean_jct_s", "stream_wait_s", "stream_jct_s",
                 "background_on_time", "wall_s", "cpu_s")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.schedule", description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group()
    src.add_argument("--instances", default=None, help="small-time, medium-time or traps")
    src.add_argument("--workload", default=None, help="a workload CSV (with --cluster)")
    src.add_argument("--trace", default=None, help="openb variant: the full-scale bound")
    p.add_argument("--cluster", default=None, help="instance JSON whose nodes run --workload")
    p.add_argument("--objective", default="mean-jct,makespan")
    p.add_argument("--policies", default="fgd,best-fit")
    p.add_argument("--queue", default="fifo,backfill,sjf,smallest")
    p.add_argument("--time-limit", default="60", help="wall seconds of the model per instance and objective "
                   "(build, CP-SAT search and LP bound; the LP time limit with --trace)")
    p.add_argument("--load", default="0.7,0.9,1.1")
    p.add_argument("--n-jobs", default="20000")
    p.add_argument("--seeds", default="42")
    p.add_argument("--seed", default="0", help="policy and CP-SAT seed")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--output", default=None)
    add_dask_option(p)
    add_resume_option(p)
    return p


def check_args(args: argparse.Namespace) -> str | None:
    """The one validation block: the first bad option as one line, or None. Fills the parsed values in."""
    from experiments.openb import parse_policies, parse_seeds
    from experiments.timeline import load_cluster, parse_floats, parse_queues
    from fgdopt.timeline import read_workload
    from fgdopt.timeline.suites import TIME_SUITES

    try:
        args.objectives = [o.strip() for o in args.objective.split(",") if o.strip()]
        if not args.objectives or (bad := [o for o in args.objectives if o not in OBJECTIVE_NAMES]):
            return (f"--objective: unknown objective(s) {args.objectives and bad}; "
                    f"choose from {', '.join(OBJECTIVE_NAMES)}")
        try:
            args.limit = float(args.time_limit)
        except ValueError:
            return f"--time-limit: not a number: {args.time_limit!r}"
        if not args.limit >= 0:
            return f"--time-limit: must be >= 0 seconds, got {args.time_limit}"
        args.policy_list = parse_policies(args.policies)
        args.queue_list = parse_queues(args.queue)
        args.seed_value = int(args.seed)
        if args.jobs < 1:
            return f"--jobs: must be >= 1, got {args.jobs}"
        if args.trace is not None:
            args.loads = parse_floats(args.load)
            args.seed_list = parse_seeds(args.seeds)
            args.n = 3000 if args.quick else int(args.n_jobs)
            if args.n < 1:
                return f"--n-jobs: must be >= 1, got {args.n_jobs}"
        elif args.workload is not None:
            if args.cluster is None:
                return "--workload needs --cluster FILE.json"
            args.job_set = read_workload(args.workload)
            args.nodes = load_cluster(args.cluster)
        else:
            args.instances = "traps" if args.quick and args.instances is None else (args.instances or "small-time")
            if args.instances not in TIME_SUITES:
                return f"--instances: unknown suite {args.instances!r}; choose from {', '.join(TIME_SUITES)}"
    except (argparse.ArgumentTypeError, ValueError, FileNotFoundError) as exc:
        return str(exc)
    return None


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
    starts = [{"instance": name, "objective": objective, "method": method, "job": inst.jobs.tasks.names[j],
               "start_s": s.start_s[j], "node": int(s.node[j]), "gpus": " ".join(map(str, s.gpus[j]))}
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
    value)."""
    best = part[part["status"] == "engine"].groupby("instance")["value"].min()
    win = (part["status"] == "engine") & (part["value"] <= part["instance"].map(best) + 1e-9)
    flags = part.assign(win=win, proven=part["gap_pct"].fillna(np.inf) <= 1e-6)
    table = flags.groupby("method", sort=False).agg(mean_gap_pct=("gap_pct", "mean"), max_gap_pct=("gap_pct", "max"),
                                                    proven=("proven", "sum"), wins=("win", "sum"))
    table["proven"] = [f"{int(v)}/{part['instance'].nunique()}" for v in table["proven"]]
    return table.round(2).reset_index()


def tables(frame: pd.DataFrame) -> str:
    """The Markdown tables of ``schedule.csv``: per instance (value of every method) and per method."""
    out = []
    for objective, part in frame.groupby("objective", sort=False):
        wide = part.pivot(index="instance", columns="method", values="value").round(2)
        opt = part[part["method"] == "optimum"].set_index("instance")
        wide["bound"] = opt["bound"].round(2)
        wide["status"] = opt["status"]
        out += [f"### {objective} (seconds)", "", wide.reset_index().to_markdown(index=False), "",
                method_summary(part).to_markdown(index=False), ""]
    return "\n".join(out)


def run_small(args: argparse.Namespace) -> int:
    from fgdopt.plot import plot_gantt
    from fgdopt.timeline.suites import time_suite

    if args.workload is not None:
        names, suite = [Path(args.workload).stem], None
    else:
        names, suite = [i.name for i in time_suite(args.instances)], args.instances
    cells = [(suite, name, args.workload, args.cluster, obj, args.policy_list, args.queue_list, args.limit,
              args.seed_value) for obj in args.objectives for name in names]
    keys = [[str(c) for c in cell] for cell in cells]
    code = 0
    try:
        results = run_cells("schedule", run_instance, cells, args, keys=keys)
    except SweepInterrupted as stop:
        results, code = stop.finished(), None
        stop.partial = results
        code = stop_message(stop, "schedule")
    frame = pd.DataFrame([r for res in results for r in res["rows"]], columns=COLUMNS)
    starts = pd.DataFrame([r for res in results for r in res["starts"]])
    print(tables(frame))
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out / "schedule.csv", index=False)
        starts.to_csv(out / "starts.csv", index=False)
        (out / "schedule.md").write_text(tables(frame))
        if results:
            res = max(results, key=lambda r: (r["rows"][-1]["objective"] == "mean-jct",
                                              min(x["value"] for x in r["rows"][:-1]) - r["rows"][-1]["value"]))
            cell = cells[[id(r) for r in results].index(id(res))] if len(results) == len(cells) else None
            name = res["rows"][0]["instance"]
            inst = _instance(suite, name, args.workload, args.cluster) if cell is None else _instance(*cell[:4])
            plot_gantt(inst.cluster, inst.jobs, {res["best"]: res["best_schedule"], "optimum": res["optimum"]},
                       out / "gantt.png", f"{name}, {res['rows'][0]['objective']}: best run against the optimum")
    return code


def run_bound(trace: str, seed: int, load: float, n_jobs: int, policies: list[str], queues: list[str],
              time_limit: float) -> list[dict]:
    """One (load, seed) of the full-scale study: the engine runs and the two pooled bounds."""
    from fgdopt.timeline import openb_jobs, simulate
    from formulations.schedule import pooled_bound

    cluster, jobs = openb_jobs(trace, load, n_jobs, seed=seed)
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
    loads = [0.9] if args.quick else args.loads
    cells = [(args.trace, s, load, args.n, args.policy_list, args.queue_list, max(args.limit, 1.0))
             for load in loads for s in args.seed_list]
    code = 0
    try:
        results = run_cells("schedule-bound", run_bound, cells, args, keys=[[str(c) for c in cell] for cell in cells])
    except SweepInterrupted as stop:
        results = stop.finished()
        code = stop_message(stop, "schedule")
    frame = pd.DataFrame([r for res in results for r in res], columns=BOUND_COLUMNS)
    print(bound_tables(frame))
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out / "schedule-bound.csv", index=False)
        (out / "schedule-bound.md").write_text(bound_tables(frame))
    return code


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if (error := check_args(args)) is not None:
        print(f"schedule: {error}", file=sys.stderr)
        return 2
    return run_full(args) if args.trace is not None else run_small(args)


if __name__ == "__main__":
    sys.exit(main())
