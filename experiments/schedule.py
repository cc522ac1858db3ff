"""How far from optimal over time: engine runs against the optimal schedule, and a certified bound at full scale.

Usage::

    python -m experiments.schedule --instances small-time [--objective mean-jct,makespan] \\
        [--policies fgd,best-fit] [--queue fifo,backfill,sjf,smallest] [--time-limit 60] [--jobs N] \\
        [--dask ADDRESS] [--resume] [--quick] --output DIR
    python -m experiments.schedule --workload FILE.csv --cluster FILE.json ...
    python -m experiments.schedule --trace default --load 0.7,0.9,1.1 --n-jobs 20000 [--seeds 42] ...
    python -m experiments.schedule --trace default --points 43:1.1,42:1.0 --n-jobs 20000 ...
    python -m experiments.schedule --workload FILE.csv --cluster FILE.json --scale ...
    python -m experiments.schedule --instances medium-time --scale --time-limit 60 --lns-time-limit 30 ...

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
objective, method, job, start_s, node, gpus, status, reason``, ``gpus`` space-separated ids (a gang's, every
part's as ``NODE:ID+ID``, e.g. ``0:0+1 1:2+3``; ``node`` its first part's), ``status``
``finished`` or ``rejected``, ``reason`` why a rejected job fits no empty node,
:data:`fgdopt.timeline.admission.REJECT_REASONS`) and
``gantt.png`` (the instance where the best run is furthest from the optimum: that run above the optimum, or above
the best schedule found with its bound where the time limit proved none optimal, whose
identical nodes and GPUs are renumbered to match the run's where they can,
:func:`fgdopt.timeline.schedule.relabel_like`; ``starts.csv`` keeps the solver's numbering).
Every schedule is replayed on the ``ClusterState`` before it is written.

Full scale (``--trace``, or ``--scale`` on a ``--workload`` or an ``--instances`` suite): per point (load and seed of
the openb stream, :func:`fgdopt.timeline.openb_jobs`: every ``--seeds`` x ``--load``, or the ``--points`` named; or
the workload on its cluster; or each instance of the suite, ``trace`` its name and ``load`` its generator's), every
*run method* of :data:`RUN_METHODS`
(the engine under every (policy, queue), each recorded as a schedule and replayed on the ``ClusterState``; the same
under bounded reservations for whole-node jobs, :class:`fgdopt.policies.reserve.Reserving`, for every
``--reserve-wait`` x ``--reserve-nodes`` of the grid, ``policy+reserve(Ws,R)/queue``; then the
large-neighbourhood search from the best of them, :func:`formulations.schedule.lns.improve`, ``lns(policy/queue)``,
``--lns-time-limit`` CP-SAT deterministic seconds and at most twice as many wall seconds; then the same search with
the ``holds`` windows, which may also move the jobs holding the nodes a waiting job waits for, from the best so far,
``lns-holds(...)``, with the same budget), every
*bound* of :data:`BOUND_METHODS` (the pooled LP, :func:`formulations.schedule.pooled_bound`, over every job:
``bound-all``, valid for every schedule; and, with a background, over the stream with the time-0 services and warm
start pinned: ``bound-pinned``, valid for the runs that start the whole background on arrival; the configuration
LP, ``bound-config``; rigid starts against pooled capacities and dual-feasible GPU counts on a fine grid,
``bound-rigid``; the node-schedule decomposition on small points, ``bound-nodedecomp``), and the
diagnostics (:mod:`fgdopt.timeline.diagnostics`: the zero-wait demand profile, the ceilings (a) pooled, (b) per
node type, (c) free re-packing under the best engine run's policy and queue, on points of at most
:data:`POOLED_CP_MAX_JOBS` jobs the best pooled schedule CP-SAT finds with every pooled row,
:mod:`formulations.schedule.pooledcp`, ``ceiling_pooled_cp_s``, which no pooled bound may exceed, and the best run's
wait split into
capacity, non-migration and order-and-placement). The study stops with the bound's name if a bound exceeds a run it
is valid for. Writes ``schedule-bound.csv`` (one row per method: ``trace, seed, load, method, status, valid_for,
mean_wait_s, mean_jct_s, stream_wait_s, stream_jct_s, background_on_time, wall_s, cpu_s``; runs have ``status``
``run``; a bound's values are its bounds, in the columns of the jobs it counts), ``interval.csv`` (one row per
point: ``best_run_method, best_run_wait_s, best_bound_method, best_bound_wait_s, ratio``, over every job's mean
wait; ``schedule-bound.md`` also gives the gap ``100 (best run - best bound) / best run``), ``diagnostics.csv``
(``quantity, value_s, method, wall_s``: the ceilings, the best run and bound, the split, the diagnostics' wall time,
and the whole point's wall and CPU seconds, ``point_wall_s`` and ``point_cpu_s``), ``profile.csv`` (the zero-wait
profile per group of node types and resource), ``schedule-bound.md`` and ``interval.png`` (per load, the interval
from the best bound to the best run on a log axis, every method marked); with ``--scale``, ``rejected.csv`` (``job,
name, reason``: the jobs that fit no empty node, which every run and bound leaves out, each also printed).
``--quick``: the traps, or 3,000 stream jobs at load 0.9. ``--resume`` keeps the finished cells of ``DIR/.runs/``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from experiments.args import (
    check_paths,
    check_stream_loads,
    existing_file,
    int_list,
    names,
    non_negative_int,
    openb_dir,
    output_dir,
    parse_policies,
    parse_seeds,
    positive,
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
from experiments.timeline import check_some_job_fits, load_cluster, parse_queues
from fgdopt.policies.reserve import RESERVE_NODES, RESERVE_WAIT_S
from fgdopt.timeline.diagnostics import PROFILE_COLUMNS
from fgdopt.timeline.suites import TIME_SUITES
from formulations.schedule.record import VALID_FOR, BoundRecord, pooled_record

if TYPE_CHECKING:
    from fgdopt.model import Cluster
    from fgdopt.timeline import JobSet
    from fgdopt.timeline.schedule import Schedule

OBJECTIVE_NAMES = ("mean-jct", "makespan")
COLUMNS = ("instance", "objective", "method", "value", "bound", "status", "gap_pct", "wall_s")
BOUND_COLUMNS = ("trace", "seed", "load", "method", "status", "valid_for", "mean_wait_s", "mean_jct_s",
                 "stream_wait_s", "stream_jct_s", "background_on_time", "wall_s", "cpu_s")
INTERVAL_COLUMNS = ("trace", "seed", "load", "best_run_method", "best_run_wait_s", "best_bound_method",
                    "best_bound_wait_s", "ratio")
DIAGNOSTIC_COLUMNS = ("trace", "seed", "load", "quantity", "value_s", "method", "wall_s")
LNS_TIME_LIMIT_S = 60.0
"""Default budget of the large-neighbourhood search per full-scale point (CP-SAT deterministic seconds)."""
OUTPUTS = ("schedule.csv", "schedule.md", "starts.csv", "gantt.png", "schedule-bound.csv", "schedule-bound.md",
           "interval.csv", "interval.png", "diagnostics.csv", "profile.csv", "rejected.csv")
"""The files a run writes into ``--output``."""


def parser() -> argparse.ArgumentParser:
    """The study's command line (:mod:`experiments.args`: every value checked as it is parsed)."""
    p = study_parser("experiments.schedule", __doc__)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--instances", type=_suite, default=None,
                     help=f"one of {', '.join(TIME_SUITES)} (default: small-time; --quick: traps)")
    src.add_argument("--workload", type=existing_file, default=None, help="a workload CSV (with --cluster)")
    src.add_argument("--trace", default=None, help="openb variant: the full-scale study")
    p.add_argument("--cluster", type=existing_file, default=None, help="instance JSON whose nodes run --workload")
    p.add_argument("--objective", type=names(OBJECTIVE_NAMES, "objective"), default=list(OBJECTIVE_NAMES),
                   help=f"comma-separated, of {', '.join(OBJECTIVE_NAMES)} (default: both)")
    p.add_argument("--policies", type=parse_policies, default=["fgd", "best-fit"],
                   help="placement policies: names or module:attribute specs (default: fgd,best-fit)")
    p.add_argument("--queue", type=parse_queues, default=["fifo", "backfill", "sjf", "smallest"],
                   help="queue disciplines (default: fifo,backfill,sjf,smallest)")
    p.add_argument("--scale", action="store_true", help="with --workload or --instances: the full-scale methods "
                   "(every engine run, every bound, the diagnostics) whatever the size, one point per instance")
    p.add_argument("--time-limit", type=positive, default=60.0, help="wall seconds of the model per instance "
                   "and objective (build, CP-SAT search and LP bound); with --trace or --scale, of each bound "
                   "(default: 60)")
    p.add_argument("--lns-time-limit", type=positive, default=LNS_TIME_LIMIT_S,
                   help="with --trace or --scale: CP-SAT deterministic seconds of the large-neighbourhood search "
                   f"per point, which stops at twice as many wall seconds (default: {LNS_TIME_LIMIT_S:g})")
    p.add_argument("--reserve-wait", type=real_list(0.0, strict=False), default=[RESERVE_WAIT_S], metavar="S",
                   help="with --trace or --scale: seconds a whole-node job waits before it reserves a node, in the "
                   f"policy+reserve runs (comma-separated grid; default: {RESERVE_WAIT_S:g})")
    p.add_argument("--reserve-nodes", type=int_list(0), default=[RESERVE_NODES], metavar="R",
                   help="with --trace or --scale: nodes reserved at once at most in the policy+reserve runs "
                   f"(comma-separated grid, 0: none; default: {RESERVE_NODES})")
    p.add_argument("--load", type=real_list(0.0), default=None,
                   help="with --trace: offered loads (default: 0.7,0.9,1.1)")
    p.add_argument("--n-jobs", type=positive_int, default=20_000, help="with --trace: stream jobs (default: 20000)")
    p.add_argument("--seeds", type=parse_seeds, default=None, help="with --trace: seeds, A-B or a,b (default: 42)")
    p.add_argument("--points", type=_points, default=None, metavar="SEED:LOAD,...",
                   help="with --trace: the (seed, load) points to run, in this order, instead of every --seeds x "
                   "--load (e.g. 43:1.1,42:1.0)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="policy and CP-SAT seed (default: 0)")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    p.add_argument("--quick", action="store_true", help="the traps, or 3,000 stream jobs at load 0.9"
                                                        " (an option written on the command line wins)")
    p.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    p.add_argument("--output", type=output_dir, default=None, help="folder for the CSVs, tables and gantt.png")
    add_dask_option(p)
    add_resume_option(p)
    return p


LOADS = (0.7, 0.9, 1.1)
"""``--load``'s default: the offered loads of the full-scale study."""
SEEDS = (42,)
"""``--seeds``' default."""


def _points(text: str) -> list[tuple[int, float]]:
    """``--points``: ``"43:1.1,42:1"`` -> ``[(43, 1.1), (42, 1.0)]`` (seed >= 0, load > 0; repeats dropped)."""
    out = []
    for part in filter(None, (x.strip() for x in text.split(","))):
        seed, sep, load = part.partition(":")
        try:
            out.append((non_negative_int(seed), positive(load)))
        except argparse.ArgumentTypeError:
            sep = ""
        if not sep:
            raise argparse.ArgumentTypeError(f"expected SEED:LOAD pairs (an integer >= 0, a finite number > 0) "
                                             f"separated by commas, got {part!r}")
    if not out:
        raise argparse.ArgumentTypeError(f"expected SEED:LOAD pairs separated by commas, got {text!r}")
    return list(dict.fromkeys(out))


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
    if args.scale and args.workload is None and args.instances is None:
        p.error("--scale runs the full-scale methods on --workload (with --cluster) or on the --instances suite")
    full = args.trace is not None or args.scale
    written = p.written()
    for dests, applies, where in (
            (("load", "n_jobs", "seeds", "data_dir"), args.trace is not None, "with --trace (the openb stream)"),
            (("lns_time_limit", "reserve_wait", "reserve_nodes"), full, "with --trace or --scale"),
            (("objective",), not full, "to the small study (without --trace and --scale)")):
        if not applies and (stray := [d for d in dests if d in written]):
            p.error(f"--{stray[0].replace('_', '-')} applies only {where}; it would be ignored here")
    if args.points is not None:
        if args.trace is None:
            p.error("--points names points of the openb stream: give it with --trace")
        if args.load is not None or args.seeds is not None:
            p.error("--points names every (seed, load): give it without --load and --seeds")
        if args.quick:
            p.error("--quick runs load 0.9: give it --seeds, not --points")
    args.rejected = None
    args.data_dir = None if args.data_dir is None else str(args.data_dir)
    try:
        if args.trace is not None:
            load_openb(args.trace, args.data_dir)
            check_timed(args.trace)                         # a stream needs the pods' times
            if args.quick:
                p.quick(args, load=[0.9], n_jobs=3000)
            if args.points is None:
                args.points = [(s, load) for load in args.load or LOADS for s in args.seeds or SEEDS]
            for seed, load in args.points:
                check_stream_loads(p, [args.trace], [seed], [load], args.data_dir,
                                   "--points" if args.load is None else "--load")
        elif args.workload is not None:
            cluster, jobs = load_cluster(args.cluster), read_workload(args.workload)
            args.workload, args.cluster = str(args.workload), str(args.cluster)
            check_some_job_fits(cluster, jobs)
            check_exact_times(jobs, args.workload, whole=not args.scale)
            if args.scale:
                args.rejected = rejections(cluster, jobs)
                for row in args.rejected:
                    print(f"job {row['job']} ({row['name']}): rejected ({row['reason']}); every run and bound leaves "
                          "it out")
        else:
            args.instances = "traps" if args.quick and args.instances is None else (args.instances or "small-time")
    except (OSError, ValueError) as exc:
        p.error(str(exc))


def check_exact_times(jobs: JobSet, path: str, whole: bool = True) -> None:
    """Stop (``ValueError``, one line naming ``path`` and the job) before a workload reaches the exact model and the
    bounds, which need every job to end (a finite ``duration_s``) and count time in whole milliseconds
    (:func:`formulations.schedule.exact.time_unit`); with ``whole`` (the exact model of the whole workload, not
    ``--scale``'s windows), within CP-SAT's integers too (:func:`formulations.schedule.exact.check_range`)."""
    from formulations.schedule.exact import check_range, time_unit

    never = np.flatnonzero(~np.isfinite(jobs.duration_s))
    if never.size:
        raise ValueError(f"{path}: job {jobs.tasks.names[never[0]]!r}: duration_s is {jobs.duration_s[never[0]]:g}; "
                         "the optimum and its bounds need every job to end (give it a finite duration)")
    try:
        unit = time_unit(np.concatenate([jobs.submit_s, jobs.duration_s]))
        if whole:
            check_range(jobs.submit_s, jobs.duration_s, unit)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def rejections(cluster: Cluster, jobs: JobSet) -> list[dict]:
    """The jobs that fit no empty node (``job, name, reason``): every method leaves them out (the engine rejects
    them, the bounds do not count them)."""
    from fgdopt.timeline.admission import REJECT_REASONS, rejection_reasons

    out = []
    why = rejection_reasons(cluster, jobs.tasks)
    for j in np.flatnonzero(why != "").tolist():
        out.append({"job": j, "name": jobs.tasks.names[j], "reason": f"{why[j]}: {REJECT_REASONS[why[j]]}"})
    return out


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
               "start_s": s.start_s[j], "node": int(s.node[j]), "gpus": gpu_text(s, j),
               "status": "rejected" if why[j] else "finished", "reason": why[j]}
              for method, s in (("optimum", res.schedule), (best, runs[best][2])) for j in range(len(s))]
    return {"rows": rows, "starts": starts, "best": best, "best_schedule": runs[best][2], "optimum": res.schedule,
            "cpu_s": res.cpu_s}


def gpu_text(schedule: Schedule, j: int) -> str:
    """``starts.csv``'s ``gpus`` of job ``j``: its GPU ids, space-separated; a gang's parts as ``NODE:ID+ID``."""
    if schedule.parts is not None and schedule.parts[j]:
        return " ".join(f"{n}:{'+'.join(map(str, gpus))}" for n, gpus in schedule.parts[j])
    return " ".join(map(str, schedule.gpus[j]))


def _gap(value: float, bound: float) -> float:
    """``100 (value - bound) / bound`` (percent): 0 when the value meets the bound (both 0 too: jobs that last
    nothing), inf when the bound is 0 and the value is not, NaN when either is missing."""
    if not (math.isfinite(value) and math.isfinite(bound)):
        return math.nan
    if value <= bound:
        return 0.0
    return 100.0 * (value - bound) / bound if bound > 0 else math.inf


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
    """The Markdown tables of ``schedule.csv``: per instance (value of every method, to 2 decimals, all its digits
    shown: a makespan of 10^12 s is not every method's "1e+12") and per method."""
    out = []
    for objective, part in frame.groupby("objective", sort=False):
        wide = part.pivot(index="instance", columns="method", values="value").round(2)
        opt = part[part["method"] == "optimum"].set_index("instance")
        wide["bound"] = opt["bound"].round(2)
        wide["status"] = opt["status"]
        out += [f"### {objective} (seconds)", "", wide.reset_index().to_markdown(index=False, floatfmt=".15g"), "",
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
        model = res["rows"][-1]                            # the model's row: optimal, or the best found and a bound
        proven = model["status"] == "optimal"
        label = "optimum" if proven else f"best found, not proven optimal (bound {model['bound']:.1f} s)"
        plot_gantt(inst.cluster, inst.jobs, {res["best"]: res["best_schedule"], label: res["optimum"]},
                   folder / "gantt.png", f"{what}, {model['objective']}: best run against the "
                   f"{'optimum' if proven else 'best schedule found'}")


@dataclass(frozen=True, eq=False)
class Point:
    """One full-scale point: the instance and what its methods read.

    ``trace``, ``seed``, ``load`` name it (a ``--scale`` workload: ``trace`` is the file's stem, ``load`` NaN);
    ``background``: bool per job, the jobs a ``background-on-time`` bound pins (services and warm start; none for
    a workload); ``policies`` and ``queues`` of the engine runs; ``time_limit`` of each bound (seconds);
    ``lns_s`` the large-neighbourhood search's budget (CP-SAT deterministic seconds); ``reserve`` the grid of
    reservation bounds ``(wait_s, max_nodes)`` of the ``policy+reserve`` runs (:func:`reserve_runs`)."""

    trace: str
    seed: int
    load: float
    cluster: Cluster
    jobs: JobSet
    background: np.ndarray
    policies: list[str]
    queues: list[str]
    time_limit: float
    lns_s: float = LNS_TIME_LIMIT_S
    reserve: tuple[tuple[float, int], ...] = ((RESERVE_WAIT_S, RESERVE_NODES),)


@dataclass(frozen=True, eq=False)
class RunRecord:
    """A schedule of the full-scale point, validated by replay (:func:`fgdopt.timeline.schedule.validate_schedule`)
    before it is recorded; ``method`` names it (``policy/queue`` or its recipe); wall and CPU seconds to make it."""

    method: str
    schedule: Schedule
    wall_s: float
    cpu_s: float


POOLED_BOUNDS = ("bound-all",)
"""The bounds of a pooled relaxation over every job: at most ceilings (a) and (b)
(:mod:`fgdopt.timeline.diagnostics`)."""
ROW_POOLED_BOUNDS = ("bound-all", "bound-rigid")
"""The bounds whose rows every pooled row of :mod:`formulations.schedule.pooledcp` keeps (the dual-feasible GPU
counts too): at most its CP-SAT pooled schedule."""


def engine_runs(point: Point, runs: dict[str, RunRecord]) -> list[RunRecord]:
    """Every (policy, queue) of the point in the time engine, each recorded as a schedule."""
    from fgdopt.timeline.schedule import recorded_run

    out = []
    for pol in point.policies:
        for q in point.queues:
            cpu0 = time.process_time()
            result, sched = recorded_run(point.cluster, point.jobs, pol, q, seed=point.seed)
            out.append(RunRecord(f"{pol}/{q}", sched, result.wall_s, time.process_time() - cpu0))
    return out


def reserve_method(policy: str, queue: str, wait_s: float, max_nodes: int) -> str:
    """The name of a reservation run: ``<policy>+reserve(<wait_s>s,<max_nodes>)/<queue>``."""
    return f"{policy}+reserve({wait_s:g}s,{max_nodes})/{queue}"


def reserve_runs(point: Point, runs: dict[str, RunRecord]) -> list[RunRecord]:
    """Every (policy, queue) of the point under bounded reservations for whole-node jobs
    (:class:`fgdopt.policies.reserve.Reserving` around the policy, for every ``(wait_s, max_nodes)`` of
    ``point.reserve``; ``max_nodes = 0`` is the plain run and is skipped), each recorded as a schedule."""
    from fgdopt.frag import Workload
    from fgdopt.policies import make_policy
    from fgdopt.policies.reserve import Reserving
    from fgdopt.timeline.schedule import recorded_run

    workload, out = Workload.from_tasks(point.jobs.tasks), []
    for pol in point.policies:
        for q in point.queues:
            for wait_s, max_nodes in point.reserve:
                if max_nodes == 0:
                    continue
                cpu0 = time.process_time()
                inner = make_policy(pol, seed=point.seed, workload=workload)
                policy = Reserving(inner, point.jobs, wait_s=wait_s, max_nodes=max_nodes)
                result, sched = recorded_run(point.cluster, point.jobs, policy, q, seed=point.seed)
                out.append(RunRecord(reserve_method(pol, q, wait_s, max_nodes), sched, result.wall_s,
                                     time.process_time() - cpu0))
    return out


def pooled_all(point: Point) -> BoundRecord:
    """The pooled LP (:func:`formulations.schedule.pooled_bound`) over every admitted job."""
    from formulations.schedule import pooled_bound

    return pooled_record(pooled_bound(point.cluster, point.jobs, time_limit=point.time_limit), "all")


def pooled_pinned(point: Point) -> BoundRecord | None:
    """The pooled LP over the stream jobs with the background pinned at its submission (None without one)."""
    from formulations.schedule import pooled_bound

    if not point.background.any():
        return None
    b = pooled_bound(point.cluster, point.jobs, counted=~point.background, pinned=point.background,
                     time_limit=point.time_limit)
    return pooled_record(b, "background-on-time")


CONFIG_INTERVALS = 64
"""Grid intervals of the configuration LP at a full-scale point (64 reached 14.3 s at openb load 1.1, seed 42, in
600 s; 128 intervals converge slower)."""
CONFIG_ASCENT = 10
"""Projected subgradient steps per round of the configuration LP when the master's duals do not give its best
bound (with the line search: a bound above 0 before column generation nears its end)."""
NODEDECOMP_MAX_JOBS = 2_000
"""The node-schedule decomposition runs on points of at most this many admitted jobs (its subsets of 40 jobs each
wait nothing on a large cluster, and each pricing is a CP-SAT run)."""


def config_lp(point: Point) -> BoundRecord:
    """The time x node-type configuration LP (:func:`formulations.schedule.config_bound`) over every admitted job,
    valid at every column-generation iteration (its Lagrangian bound, searched beyond the master's duals)."""
    from formulations.schedule import config_bound
    from formulations.schedule.configlp import LINE_SEARCH

    return config_bound(point.cluster, point.jobs, intervals=CONFIG_INTERVALS, time_limit=point.time_limit,
                        line_search=LINE_SEARCH, ascent_steps=CONFIG_ASCENT)


def rigid_starts(point: Point) -> BoundRecord:
    """The rigid-start Lagrangian bound on pooled capacities and dual-feasible GPU counts on a fine grid
    (:func:`formulations.schedule.rigid.rigid_bound`) over every admitted job, valid at every step of its ascent."""
    from formulations.schedule.rigid import rigid_bound

    return rigid_bound(point.cluster, point.jobs, time_limit=point.time_limit)


def node_schedules(point: Point) -> BoundRecord | None:
    """The node-schedule decomposition on disjoint job subsets (:func:`formulations.schedule.nodedecomp_bound`);
    None above :data:`NODEDECOMP_MAX_JOBS` admitted jobs."""
    from fgdopt.timeline.schedule import rejected_jobs
    from formulations.schedule import nodedecomp_bound

    if int((~rejected_jobs(point.cluster, point.jobs)).sum()) > NODEDECOMP_MAX_JOBS:
        return None
    return nodedecomp_bound(point.cluster, point.jobs, time_limit=point.time_limit)


def lns_runs(point: Point, runs: dict[str, RunRecord], neighbourhood: str = "starts", **window) -> list[RunRecord]:
    """The large-neighbourhood search (:func:`formulations.schedule.lns.improve`, seeded by the point's seed, with
    the ``neighbourhood`` windows and the ``window`` options of :func:`~formulations.schedule.lns.improve`) from the
    best run so far (least mean wait; ties: name), named ``lns(<its method>)`` (``lns-holds(...)`` for the
    ``holds`` windows); none without a run."""
    from formulations.schedule.lns import improve, lns_recipe

    if not runs:
        return []
    waits = {m: float(np.nanmean(r.schedule.start_s - point.jobs.submit_s)) for m, r in runs.items()}
    best = min(waits, key=lambda m: (waits[m], m))
    res = improve(point.cluster, point.jobs, runs[best].schedule, budget_s=point.lns_s, seed=point.seed,
                  wall_s=2 * point.lns_s, neighbourhood=neighbourhood, **window)
    return [RunRecord(lns_recipe(best, neighbourhood), res.schedule, res.wall_s, res.cpu_s)]


HOLDS_WINDOW = {"nodes": 5, "max_jobs": 20}
"""Nodes and free jobs per window of the ``holds`` search. Measured (budget 10 deterministic s, from the best
engine or ``starts`` run, ``medium-time`` family at 4-6 nodes): it reached the optimum CP-SAT proves on
``time-n4-j16-l1.2-s2``, ``time-n4-j20-l1.2-s3`` and ``time-n4-j24-l1.3-s0`` (21.69, 15.10, 46.83 s, from 29.44,
21.70, 76.88; 3 nodes and 12 jobs stopped at 53.17 s on the last), and 19.13 s on ``time-n6-j30-l1.3-s4`` (from
29.93 s; CP-SAT's incumbent after 120 s: 18.23 s). On ``medium-time`` (30 s) it gains 0-2% (46.10 -> 45.90 s on
``time-n16-j300-l1.3-s0``)."""


def lns_holds_runs(point: Point, runs: dict[str, RunRecord]) -> list[RunRecord]:
    """:func:`lns_runs` with the ``holds`` windows (the jobs that hold the nodes a waiting job waits for are free
    too) of :data:`HOLDS_WINDOW`, from the best run so far (the ``starts`` search's included), with the same
    budget."""
    return lns_runs(point, runs, "holds", **HOLDS_WINDOW)


RUN_METHODS: dict[str, Callable[[Point, dict[str, RunRecord]], list[RunRecord]]] = {
    "engine": engine_runs, "reserve": reserve_runs, "lns": lns_runs, "lns-holds": lns_holds_runs}
"""The full-scale run methods, in order: each gets the point and the runs so far (by method) and returns new
runs (an improvement method reads the best so far). Register one with ``RUN_METHODS["name"] = fn``."""
BOUND_METHODS: dict[str, Callable[[Point], BoundRecord | None]] = {
    "all": pooled_all, "pinned": pooled_pinned, "config": config_lp, "rigid": rigid_starts,
    "nodedecomp": node_schedules}
"""The full-scale bounds: ``name -> fn(point)``, reported as ``bound-<name>`` (None: not applicable to the point).
Register one with ``BOUND_METHODS["name"] = fn``."""


def run_point(point: Point) -> dict:
    """Every run method, every bound and the diagnostics of one point; the checks that every bound is at or below
    every run it is valid for. Returns the rows of ``schedule-bound.csv``, ``interval.csv``, ``diagnostics.csv``
    and ``profile.csv``."""
    from fgdopt.timeline.schedule import validate_schedule

    wall0, cpu0 = time.perf_counter(), time.process_time()
    key = {"trace": point.trace, "seed": point.seed, "load": point.load}
    jobs, stream = point.jobs, ~point.background
    runs: dict[str, RunRecord] = {}
    for fn in RUN_METHODS.values():
        for rec in fn(point, dict(runs)):
            validate_schedule(point.cluster, jobs, rec.schedule)
            runs[rec.method] = rec
    rows = []
    for rec in runs.values():
        sched = rec.schedule
        wait, jct = sched.start_s - jobs.submit_s, sched.finish_s(jobs) - jobs.submit_s
        on_time = bool((wait[point.background & sched.started] == 0).all())
        rows.append({**key, "method": rec.method, "status": "run", "valid_for": "", "mean_wait_s": np.nanmean(wait),
                     "mean_jct_s": np.nanmean(jct), "stream_wait_s": np.nanmean(wait[stream]),
                     "stream_jct_s": np.nanmean(jct[stream]), "background_on_time": on_time, "wall_s": rec.wall_s,
                     "cpu_s": rec.cpu_s})
    for name, fn in BOUND_METHODS.items():
        if (b := fn(point)) is None:
            continue
        if b.valid_for not in VALID_FOR:
            raise ValueError(f"bound-{name}: valid_for {b.valid_for!r}, not one of {', '.join(VALID_FOR)}")
        every = b.valid_for == "all"
        rows.append({**key, "method": f"bound-{name}", "status": b.status, "valid_for": b.valid_for,
                     "mean_wait_s": b.wait_s if every else math.nan, "mean_jct_s": b.jct_s if every else math.nan,
                     "stream_wait_s": math.nan if every else b.wait_s, "stream_jct_s": math.nan if every else b.jct_s,
                     "background_on_time": not every, "wall_s": b.wall_s, "cpu_s": b.cpu_s})
    frame = pd.DataFrame(rows, columns=BOUND_COLUMNS)
    check_bounds(frame)
    interval = interval_row(frame)
    engine = {f"{pol}/{q}" for pol in point.policies for q in point.queues}
    best_engine = min((r for r in rows if r["method"] in engine),
                      key=lambda r: (r["mean_wait_s"], r["method"]))["method"]   # ceiling (c) runs its policy/queue
    profile, diag = diagnose(point, best_engine, interval)
    check_pooled_bounds(rows, diag, point)
    diag += [{"quantity": "point_wall_s", "value_s": time.perf_counter() - wall0, "method": "", "wall_s": math.nan},
             {"quantity": "point_cpu_s", "value_s": time.process_time() - cpu0, "method": "", "wall_s": math.nan}]
    return {"rows": rows, "interval": [{**key, **interval}], "diagnostics": [{**key, **d} for d in diag],
            "profile": [{**key, **r} for r in profile]}


def check_pooled_bounds(rows: list[dict], diag: list[dict], point: Point) -> None:
    """Raise ``AssertionError`` naming a pooled bound above a pooled schedule's mean wait (a cross-check): the
    :data:`POOLED_BOUNDS` against ceilings (a) and (b), the :data:`ROW_POOLED_BOUNDS` against the CP-SAT one."""
    ceilings = {d["quantity"]: d["value_s"] for d in diag}
    checks = [(POOLED_BOUNDS, ("ceiling_pooled_s", "ceiling_per_type_s"), "a pooled list schedule (ceiling a or b)"),
              (ROW_POOLED_BOUNDS, ("ceiling_pooled_cp_s",), "the CP-SAT pooled schedule")]
    for bounds, quantities, what in checks:
        values = [ceilings[n] for n in quantities if n in ceilings and math.isfinite(ceilings[n])]
        if not values:
            continue
        ceiling = min(values)
        for r in rows:
            if r["method"] in bounds and r["mean_wait_s"] > ceiling * (1 + 1e-9) + BOUND_TOLERANCE_S:
                raise AssertionError(f"{r['method']} ({r['mean_wait_s']:.6g} s) above {what}'s {ceiling:.6g} s "
                                     f"(load {point.load}, seed {point.seed}): the bound is wrong")


BOUND_TOLERANCE_S = 1e-3
"""Seconds of mean wait (plus 1e-9 relative) by which a bound may exceed a run's value before the study calls it
wrong: the pooled LP's interior-point optimum, lowered by its safety margin, was measured 7.0e-6 s above a
zero-wait run (3,000 stream jobs, load 0.9, seed 42): a solver tolerance, not a proof's error."""


def check_bounds(frame: pd.DataFrame) -> None:
    """Raise ``AssertionError`` naming the first bound above a run it is valid for: a ``valid_for`` ``all`` bound
    against every run's mean wait, a ``background-on-time`` one against the stream wait of every run that started
    the whole background on arrival."""
    runs = frame[frame["status"] == "run"]
    for b in frame[frame["status"] != "run"].itertuples():
        every = b.valid_for == "all"
        value = b.mean_wait_s if every else b.stream_wait_s
        against = runs if every else runs[runs["background_on_time"]]
        col = "mean_wait_s" if every else "stream_wait_s"
        for r in against.itertuples():
            if math.isfinite(value) and value > getattr(r, col) * (1 + 1e-9) + BOUND_TOLERANCE_S:
                raise AssertionError(f"{b.method} ({b.status}) bounds the {col} at {value:.6g} s, above the "
                                     f"{getattr(r, col):.6g} s of the validated run {r.method} "
                                     f"(load {b.load}, seed {b.seed}): the bound is wrong")


def interval_row(frame: pd.DataFrame) -> dict:
    """The interval of one point over every admitted job's mean wait: the best run (least mean wait; ties: name),
    the best ``valid_for`` ``all`` bound (largest; ties: name) and their :func:`interval_ratio`."""
    runs = frame[frame["status"] == "run"].sort_values(["mean_wait_s", "method"])
    bounds = frame[(frame["status"] != "run") & (frame["valid_for"] == "all") & frame["mean_wait_s"].notna()]
    bounds = bounds.sort_values(["mean_wait_s", "method"], ascending=[False, True])
    run = runs.iloc[0] if len(runs) else None
    bound = bounds.iloc[0] if len(bounds) else None
    r_s = float(run["mean_wait_s"]) if run is not None else math.nan
    b_s = float(bound["mean_wait_s"]) if bound is not None else math.nan
    return {"best_run_method": run["method"] if run is not None else "", "best_run_wait_s": r_s,
            "best_bound_method": bound["method"] if bound is not None else "", "best_bound_wait_s": b_s,
            "ratio": interval_ratio(r_s, b_s)}


def interval_ratio(run_s: float, bound_s: float) -> float:
    """Best run over best bound: 1 when the run is within :data:`BOUND_TOLERANCE_S` of the bound (proven optimal),
    inf when the bound is 0 and the run is not, NaN when either is missing."""
    if not (math.isfinite(run_s) and math.isfinite(bound_s)):
        return math.nan
    if run_s <= bound_s + BOUND_TOLERANCE_S:
        return 1.0
    return run_s / bound_s if bound_s > 0 else math.inf


def certified_gap_pct(ratio: float) -> float:
    """``100 (best run - best bound) / best run`` from :func:`interval_ratio`'s ratio: at most how far (percent of
    its own wait) the best run is above the optimum; 0 when proven, 100 when the bound is 0, NaN when missing."""
    return 100.0 * (1.0 - 1.0 / ratio) if not math.isnan(ratio) else math.nan


def diagnose(point: Point, best_engine: str, interval: dict) -> tuple[list[dict], list[dict]]:
    """The diagnostics of one point (:mod:`fgdopt.timeline.diagnostics`): the zero-wait profile rows, and the
    ceilings and the best run's split (``quantity, value_s, method, wall_s``)."""
    from fgdopt.timeline import simulate
    from fgdopt.timeline.diagnostics import pooled_list_schedule, wait_split, zero_wait_profile
    from fgdopt.timeline.preemption import FreeRepack

    wall0 = time.perf_counter()
    profile = zero_wait_profile(point.cluster, point.jobs)
    profile_s = time.perf_counter() - wall0
    pooled = pooled_list_schedule(point.cluster, point.jobs, per_type=False, order="sjf")
    typed = pooled_list_schedule(point.cluster, point.jobs, per_type=True, order="sjf")
    cp = pooled_cp_ceiling(point)
    pol, q = best_engine.split("/", 1)
    rep = simulate(point.cluster, point.jobs, pol, q, seed=point.seed, frag=False, mechanism=FreeRepack())
    repack_s = float(np.nanmean(rep.start_s - point.jobs.submit_s))
    run_s, bound_s = interval["best_run_wait_s"], interval["best_bound_wait_s"]
    split = wait_split(run_s, np.nanmin([pooled.mean_wait_s, typed.mean_wait_s, cp[1] if cp else math.nan]),
                       repack_s)
    rows = [("zero_wait_profile", math.nan, "", profile_s),
            ("ceiling_pooled_s", pooled.mean_wait_s, "pooled list schedule, sjf with backfill", pooled.wall_s),
            ("ceiling_per_type_s", typed.mean_wait_s, "per-type list schedule, sjf with backfill", typed.wall_s),
            *([cp] if cp else []),
            ("ceiling_repack_s", repack_s, f"{best_engine}+repack", rep.wall_s),
            ("best_run_s", run_s, interval["best_run_method"], math.nan),
            ("best_bound_s", bound_s, interval["best_bound_method"], math.nan),
            *((k, v, interval["best_run_method"], math.nan) for k, v in split.items()),
            ("diagnostics_wall_s", time.perf_counter() - wall0, "", math.nan)]
    return (profile.to_dict("records"),
            [{"quantity": k, "value_s": v, "method": m, "wall_s": w} for k, v, m, w in rows])


POOLED_CP_S = 20.0
"""CP-SAT deterministic seconds of the pooled ceiling (:mod:`formulations.schedule.pooledcp`; about 100 CPU seconds
at 300 jobs)."""
POOLED_CP_MAX_JOBS = 2000
"""The pooled CP-SAT ceiling runs on points of at most this many jobs (one interval per job): on the ``medium-time``
instances (300-1,000 jobs) it finds a schedule in 60-200 wall seconds; on 11,668 jobs (openb default, 3,000 stream
jobs at load 1.1 and the background) none in its 20 deterministic seconds (97 CPU s)."""


def pooled_cp_ceiling(point: Point) -> tuple[str, float, str, float] | None:
    """The diagnostics row ``(quantity, value_s, method, wall_s)`` of the best pooled schedule CP-SAT finds
    (:func:`formulations.schedule.pooledcp.solve`, every pooled row): a ceiling on every pooled bound, rigid starts
    included; value NaN when CP-SAT finds none in its budget (``method`` says so). None above
    :data:`POOLED_CP_MAX_JOBS` jobs."""
    from formulations.schedule import pooledcp

    if len(point.jobs) > POOLED_CP_MAX_JOBS:
        return None
    cp = pooledcp.solve(point.cluster, point.jobs, deterministic_s=POOLED_CP_S, seed=point.seed)
    found = "" if math.isfinite(cp.mean_wait_s) else "none found, "
    return ("ceiling_pooled_cp_s", cp.mean_wait_s,
            f"CP-SAT pooled schedule, every pooled row ({found}{cp.status}, {POOLED_CP_S:g} deterministic s)",
            cp.wall_s)


def bound_point(trace: str, seed: int, load: float, n_jobs: int, policies: list[str], queues: list[str],
                time_limit: float, data_dir: str | None = None, lns_s: float = LNS_TIME_LIMIT_S,
                reserve: tuple[tuple[float, int], ...] = Point.reserve) -> dict:
    """One (load, seed) of the openb stream: :func:`run_point` on it (the time-0 services and warm start form the
    background; ``reserve``: :attr:`Point.reserve`)."""
    from fgdopt.timeline import openb_jobs

    cluster, jobs = openb_jobs(trace, load, n_jobs, seed=seed, data_dir=data_dir)
    background = (jobs.submit_s == 0) & ~jobs.measured & (np.arange(len(jobs)) < len(jobs) - n_jobs)
    return run_point(Point(trace, seed, load, cluster, jobs, background, policies, queues, time_limit, lns_s,
                           tuple(reserve)))


def scale_point(workload: str, cluster_file: str, seed: int, policies: list[str], queues: list[str],
                time_limit: float, lns_s: float = LNS_TIME_LIMIT_S,
                reserve: tuple[tuple[float, int], ...] = Point.reserve) -> dict:
    """``--scale``: :func:`run_point` on a workload file and its cluster (no background; ``reserve``:
    :attr:`Point.reserve`)."""
    from experiments.timeline import load_cluster
    from fgdopt.timeline import read_workload

    jobs = read_workload(workload)
    point = Point(Path(workload).stem, seed, math.nan, load_cluster(cluster_file), jobs,
                  np.zeros(len(jobs), dtype=bool), policies, queues, time_limit, lns_s, tuple(reserve))
    return run_point(point)


def suite_point(suite: str, name: str, seed: int, policies: list[str], queues: list[str], time_limit: float,
                lns_s: float = LNS_TIME_LIMIT_S, reserve: tuple[tuple[float, int], ...] = Point.reserve) -> dict:
    """``--instances SUITE --scale``: :func:`run_point` on the suite's instance ``name`` (``trace`` its name,
    ``load`` its generator's load, NaN for a hand-made one; no background)."""
    inst = _instance(suite, name, None, None)
    load = float(inst.definition.get("load", math.nan))
    point = Point(name, seed, load, inst.cluster, inst.jobs, np.zeros(len(inst.jobs), dtype=bool), policies, queues,
                  time_limit, lns_s, tuple(reserve))
    return run_point(point)


def bound_tables(frame: pd.DataFrame, diagnostics: pd.DataFrame | None = None,
                 profile: pd.DataFrame | None = None) -> str:
    """Per point: every run's mean wait beside the bounds, the interval, and (when given) the diagnostics: the
    zero-wait profile's ``all`` rows and its groups above capacity, the ceilings and the best run's split."""
    out = []
    for (trace, load, seed), part in frame.groupby(["trace", "load", "seed"], dropna=False):
        runs = part[part["status"] == "run"]
        bounds = part[part["status"] != "run"]
        iv = interval_row(part)
        where = f"{trace}, seed {seed}" if pd.isna(load) else f"{trace}, load {load:g}, seed {seed}"
        out += [f"### {where}", "",
                f"Interval over the mean wait of every job: [{iv['best_bound_wait_s']:.1f} s "
                f"({iv['best_bound_method']}), {iv['best_run_wait_s']:.1f} s ({iv['best_run_method']})], "
                f"ratio {iv['ratio']:.1f}, gap {certified_gap_pct(iv['ratio']):.1f}% of the best run.", "",
                runs[["method", "mean_wait_s", "mean_jct_s", "stream_wait_s", "background_on_time", "wall_s"]]
                .round(1).to_markdown(index=False), "",
                bounds[["method", "status", "valid_for", "mean_wait_s", "stream_wait_s", "wall_s", "cpu_s"]]
                .round(1).to_markdown(index=False), ""]
        match = {"trace": trace, "seed": seed}
        if profile is not None and len(profile):
            prof = _at(profile, match, load)
            shown = prof[(prof["group"] == "all") | (prof["above_s"] > 0)]
            out += ["Zero-wait profile (every job starts at its submission; groups: ``all`` and those above "
                    "capacity):", "", shown[list(PROFILE_COLUMNS)].round(3).to_markdown(index=False), ""]
        if diagnostics is not None and len(diagnostics):
            diag = _at(diagnostics, match, load)
            out += ["Ceilings and the best run's split (seconds of mean wait):", "",
                    diag[["quantity", "value_s", "method", "wall_s"]].fillna({"method": ""}).round(2)
                    .to_markdown(index=False), ""]
    return "\n".join(out)


def _at(frame: pd.DataFrame, match: dict, load: float) -> pd.DataFrame:
    sel = (frame["trace"] == match["trace"]) & (frame["seed"] == match["seed"])
    sel &= frame["load"].isna() if pd.isna(load) else frame["load"] == load
    return frame[sel]


def run_full(args: argparse.Namespace) -> int:
    from fgdopt.traces import trace_files

    reserve = tuple((w, r) for w in args.reserve_wait for r in args.reserve_nodes)
    if args.scale and args.instances is not None:
        from fgdopt.timeline.suites import time_suite

        cells = [(args.instances, inst.name, args.seed, args.policies, args.queue, args.time_limit,
                  args.lns_time_limit, reserve) for inst in time_suite(args.instances)]
        keys = [("suite-v1", *c[:3], [policy_digest(p) for p in args.policies], [policy_digest(q) for q in args.queue],
                 args.time_limit, args.lns_time_limit, sorted(RUN_METHODS), sorted(BOUND_METHODS), reserve)
                for c in cells]
        fn = suite_point
    elif args.scale:
        cells = [(args.workload, args.cluster, args.seed, args.policies, args.queue, args.time_limit,
                  args.lns_time_limit, reserve)]
        keys = [("scale-v2", content_digest(args.workload), content_digest(args.cluster), args.seed,
                 [policy_digest(p) for p in args.policies], [policy_digest(q) for q in args.queue], args.time_limit,
                 args.lns_time_limit, sorted(RUN_METHODS), sorted(BOUND_METHODS), reserve)]
        fn = scale_point
    else:
        cells = [(args.trace, s, load, args.n_jobs, args.policies, args.queue, args.time_limit, args.data_dir,
                  args.lns_time_limit, reserve)
                 for s, load in args.points]
        keys = [("v2", *c[:4], [policy_digest(p) for p in c[4]], [policy_digest(q) for q in c[5]], c[6], c[8],
                 content_digest(*trace_files(args.trace, args.data_dir)), sorted(RUN_METHODS), sorted(BOUND_METHODS),
                 reserve)
                for c in cells]
        fn = bound_point
    _, code = run_and_write("schedule-bound", fn, cells, args, keys,
                            lambda done, tmp: write_full(done, tmp, args.rejected),
                            study_prog("experiments.schedule"))
    return code


def write_full(results: list[dict], folder: Path, rejected: list[dict] | None = None) -> None:
    """``schedule-bound.csv``, ``interval.csv``, ``diagnostics.csv``, ``profile.csv``, ``schedule-bound.md`` and
    ``interval.png`` of the finished points into ``folder`` (the tables printed); ``rejected.csv`` with
    ``--scale``."""
    frame = pd.DataFrame([r for res in results for r in res["rows"]], columns=BOUND_COLUMNS)
    interval = pd.DataFrame([r for res in results for r in res["interval"]], columns=INTERVAL_COLUMNS)
    diag = pd.DataFrame([r for res in results for r in res["diagnostics"]], columns=DIAGNOSTIC_COLUMNS)
    profile = pd.DataFrame([r for res in results for r in res["profile"]], columns=("trace", "seed", "load",
                                                                                    *PROFILE_COLUMNS))
    text = bound_tables(frame, diag, profile)
    print(text)
    frame.to_csv(folder / "schedule-bound.csv", index=False)
    interval.to_csv(folder / "interval.csv", index=False)
    diag.to_csv(folder / "diagnostics.csv", index=False)
    profile.to_csv(folder / "profile.csv", index=False)
    (folder / "schedule-bound.md").write_text(text)
    if rejected is not None:
        pd.DataFrame(rejected, columns=("job", "name", "reason")).to_csv(folder / "rejected.csv", index=False)
    if len(frame):
        plot_interval(frame, diag, folder / "interval.png")


LABEL_STEP = 0.03
"""Methods whose waits are within this many decades (7%) of each other share one label in ``interval.png``."""
LABEL_NAMES = 3
"""At most this many names in one label of ``interval.png`` (the rest counted: "N more")."""
LABEL_RUNS = 1
"""``interval.png`` names this many runs per point, those with the lowest waits (every run a dot, every bound named)."""


def plot_interval(frame: pd.DataFrame, diagnostics: pd.DataFrame, path: Path) -> Path:
    """One panel per load: per trace and seed, a bar from the best bound to the best run on a log wait axis, every run
    (dot) and bound (triangle) marked, the :data:`LABEL_RUNS` best runs and every bound named (methods within
    :data:`LABEL_STEP` of each other share one label of at most :data:`LABEL_NAMES` names), the ceilings (crosses)
    below; waits under :data:`PLOT_FLOOR_S` are drawn at it."""
    import matplotlib.pyplot as plt

    loads = sorted(dict.fromkeys(math.nan if pd.isna(x) else x for x in frame["load"].tolist()),  # NaN: one key,
                   key=lambda x: (pd.isna(x), x))                                             # last
    rows = len(set(zip(frame["trace"], frame["seed"], frame["load"].fillna(-1.0), strict=True)))  # over the panels
    height = max(3.4, 1.4 + 2.0 * rows)
    fig, axes = plt.subplots(len(loads), 1, figsize=(10, height), squeeze=False)

    def at(part: pd.DataFrame, load: float) -> pd.DataFrame:
        return part[part["load"].isna()] if pd.isna(load) else part[part["load"] == load]

    def past(x: float, every: list[float], share: float) -> bool:
        """Whether ``x`` lies past ``share`` of the row's range (log scale, every mark at least the floor): a label
        there ends at its point, inside the axes."""
        lo, hi = (math.log10(max(v, PLOT_FLOOR_S)) for v in (min(every), max(every)))
        return math.log10(max(x, PLOT_FLOOR_S)) > lo + share * (hi - lo)

    def marks(ax, xs: list[float], names: list[str], y: float, every: list[float]) -> None:
        """Horizontal labels above the row, one level each (lowest wait lowest), with the wait: methods within
        :data:`LABEL_STEP` share one; a label past half the row ends at its point."""
        groups: dict[int, list[tuple[float, str]]] = {}
        for x, name in sorted(zip(xs, names, strict=True)):
            groups.setdefault(round(math.log10(max(x, PLOT_FLOOR_S)) / LABEL_STEP), []).append((x, name))
        for k, group in enumerate(groups.values()):                   # the label gives the wait, the mark its floor
            x, shown = group[0][0], [name for _, name in group]
            if len(shown) > LABEL_NAMES:
                shown = [*shown[:LABEL_NAMES - 1], f"{len(shown) - LABEL_NAMES + 1} more"]
            right = past(x, every, 0.5)
            ax.annotate(f"{', '.join(shown)}: {x:.3g} s", (max(x, PLOT_FLOOR_S), y), fontsize=6, va="bottom",
                        ha="right" if right else "left", xytext=(0, 5 + 9 * k), textcoords="offset points")

    for ax, load in zip(axes[:, 0], loads, strict=True):
        part = at(frame, load)
        keys = list(dict.fromkeys(zip(part["trace"], part["seed"], strict=True)))    # one row per trace and seed
        for y, (trace, seed) in enumerate(keys):
            mine = (part["trace"] == trace) & (part["seed"] == seed)
            pts = part[mine & ((part["status"] == "run") | (part["valid_for"] == "all"))]
            iv = interval_row(pts)
            ax.plot([max(iv["best_bound_wait_s"], PLOT_FLOOR_S), max(iv["best_run_wait_s"], PLOT_FLOOR_S)], [y, y],
                    color="0.75", lw=6, solid_capstyle="butt", zorder=1)
            runs, bounds = pts[pts["status"] == "run"], pts[pts["status"] != "run"]
            for rows, col, style in ((runs, "mean_wait_s", {"marker": "o", "color": "C0", "s": 25}),
                                     (bounds, "mean_wait_s", {"marker": "^", "color": "C3", "s": 30})):
                ax.scatter(rows[col].clip(lower=PLOT_FLOOR_S), [y] * len(rows), zorder=3, **style)
            best = runs.nsmallest(LABEL_RUNS, "mean_wait_s")                             # the best runs, every bound
            marks(ax, [*best["mean_wait_s"], *bounds["mean_wait_s"]],
                  [*("best run " + best["method"]), *map(bound_label, bounds["method"], bounds["status"])], y,
                  pts["mean_wait_s"].tolist())
            d = at(diagnostics[(diagnostics["trace"] == trace) & (diagnostics["seed"] == seed)], load)
            ceil = d[d["quantity"].str.startswith("ceiling") & d["value_s"].notna()]
            ax.scatter(ceil["value_s"].clip(lower=PLOT_FLOOR_S), [y - 0.25] * len(ceil), marker="x", color="C2",
                       s=20, zorder=3)
            if len(ceil):                                     # one label for the ceilings, close together
                ceil = ceil.sort_values("value_s")
                text = "ceilings: " + ", ".join(f"{q.removeprefix('ceiling_').removesuffix('_s').replace('_', ' ')}"
                                                f" {v:.3g} s" for q, v in zip(ceil["quantity"], ceil["value_s"],
                                                                             strict=True))
                first = float(ceil["value_s"].iloc[0])            # a long label: past half the row, it ends there
                right = past(first, [*pts["mean_wait_s"].tolist(), *ceil["value_s"].tolist()], 0.5)
                ax.annotate(text, (max(first, PLOT_FLOOR_S), y - 0.25), fontsize=6, va="top",
                            ha="right" if right else "left", xytext=(0, -6), textcoords="offset points")
            ax.text(1.01, y, f"x{iv['ratio']:.3g}", transform=ax.get_yaxis_transform(), va="center", fontsize=8)
        ax.set_xscale("log")
        one_trace = len({t for t, _ in keys}) == 1
        ax.set_yticks(range(len(keys)), [f"seed {s}" if one_trace else f"{t}, seed {s}" for t, s in keys])
        ax.set_ylim(-0.9, len(keys) + 0.2)
        title = "workload" if pd.isna(load) else f"load {load:g}"
        ax.set_title(f"{title}: from the best bound to the best run (mean wait of every job; triangles: bounds, "
                     f"dots: runs, crosses: ceilings)", fontsize=8)
    axes[-1, 0].set_xlabel(f"mean wait (s, log; below {PLOT_FLOOR_S:g} s drawn at {PLOT_FLOOR_S:g} s)")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


PLOT_FLOOR_S = 0.1
"""Waits below this many seconds are drawn at it on the interval figure's log axis."""


def bound_label(method: str, status: str) -> str:
    """A bound's name on the interval figures: with ``(error: wait >= 0 only)`` when its solver failed (its value is
    then the trivial bound, not a result), else the name alone.

    Examples
    --------
    >>> bound_label("bound-nodedecomp", "error"), bound_label("bound-rigid", "time_limit")
    ('bound-nodedecomp (error: wait >= 0 only)', 'bound-rigid')
    """
    return f"{method} (error: wait >= 0 only)" if status == "error" else method


def plot_interval_points(frame: pd.DataFrame, diagnostics: pd.DataFrame, path: Path) -> Path:
    """Every point of ``schedule-bound.csv`` in one panel, one row each (by load, then seed): a bar from the best
    bound to the best run (:func:`interval_row`) on a log wait axis, every run (dot) and ``valid_for`` ``all`` bound
    (triangle) marked, the ceilings (crosses) just below, the best run and bound named and the ratio at the right;
    the compact companion of :func:`plot_interval`, whose labelled rows suit a few points only."""
    import matplotlib.pyplot as plt

    points = frame[["load", "seed"]].drop_duplicates().sort_values(["load", "seed"]).itertuples(index=False)
    points = list(points)
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.6 * len(points)))
    for y, (load, seed) in enumerate(points):
        at = (frame["load"] == load) & (frame["seed"] == seed)
        pts = frame[at & ((frame["status"] == "run") | (frame["valid_for"] == "all"))]
        iv = interval_row(pts)
        lo, hi = max(iv["best_bound_wait_s"], PLOT_FLOOR_S), max(iv["best_run_wait_s"], PLOT_FLOOR_S)
        ax.plot([lo, hi], [y, y], color="0.75", lw=6, solid_capstyle="butt", zorder=1)
        runs, bounds = pts[pts["status"] == "run"], pts[pts["status"] != "run"]
        ax.scatter(runs["mean_wait_s"].clip(lower=PLOT_FLOOR_S), [y] * len(runs), marker="o", color="C0", s=18,
                   zorder=3)
        ax.scatter(bounds["mean_wait_s"].clip(lower=PLOT_FLOOR_S), [y] * len(bounds), marker="^", color="C3", s=24,
                   zorder=3)
        d = diagnostics[(diagnostics["load"] == load) & (diagnostics["seed"] == seed)]
        ceil = d[d["quantity"].str.startswith("ceiling")]["value_s"].dropna().clip(lower=PLOT_FLOOR_S)
        ax.scatter(ceil, [y - 0.25] * len(ceil), marker="x", color="C2", s=16, zorder=3)
        best_bound = bounds[bounds["method"] == iv["best_bound_method"]]
        ax.annotate(bound_label(iv["best_bound_method"], best_bound["status"].iloc[0] if len(best_bound) else ""),
                    (lo, y), fontsize=6, ha="right", va="center", xytext=(-6, 0), textcoords="offset points")
        ax.annotate(iv["best_run_method"], (hi, y), fontsize=6, ha="left", va="bottom", xytext=(2, 3),
                    textcoords="offset points")
        ax.text(1.01, y, f"x{iv['ratio']:.3g}", transform=ax.get_yaxis_transform(), va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(points)), [f"load {load:g}, seed {seed}" for load, seed in points])
    ax.set_ylim(len(points) - 0.5, -0.7)
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo / 4, hi * 4)                                     # room for the names beside the bar
    ax.set_title("Every point: from the best bound to the best run (mean wait of every job; triangles: bounds, "
                 "dots: runs, crosses: ceilings)", fontsize=8)
    ax.set_xlabel(f"mean wait (s, log; below {PLOT_FLOOR_S:g} s drawn at {PLOT_FLOOR_S:g} s)")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    check_args(p, args)
    return run_full(args) if args.trace is not None or args.scale else run_small(args)


if __name__ == "__main__":
    sys.exit(main())
