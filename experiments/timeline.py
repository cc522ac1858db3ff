"""Over time: policies and queue disciplines on a cluster whose jobs arrive, wait, run and leave, with the
certified optimum of the jobs present at sampled instants.

Usage::

    python -m experiments.timeline --trace default --load 0.7,0.9,1.1 --policies fgd,best-fit,random \\
        --queue fifo,backfill --seeds 42-44 [--mechanism none,priority,transparent,affinode,tiresias,migrate] \\
        [--checkpoint-s 1800] [--mig A100-40GB [--mig-nodes 32] [--layout dynamic,static]] \\
        [--n-jobs 20000] [--arrivals poisson|trace] [--instants 3] [--time-limit 60] [--sample 60] \\
        [--gang-reserve-s S] [--gang-slowdown X] [--jobs N | --dask ADDRESS] [--resume] [--quick] --output DIR
    python -m experiments.timeline --workload FILE.csv --cluster FILE.json --policies fgd --queue backfill ...

With ``--trace``, each (trace, seed, load) is one job set of :func:`fgdopt.timeline.sources.openb_jobs` (the
services as a background, ``--n-jobs`` stream jobs at offered load ``--load``, a stationary warm start, the
measurement window after a 10% warm-up); every (policy, queue) runs on the same jobs. With ``--workload`` the jobs
are the file's (:func:`fgdopt.timeline.jobs.read_workload`, all measured) on the nodes of the instance file
``--cluster`` (its ``nodes``); ``--load`` and ``--trace`` do not apply. A job of ``workers > 1`` is a gang (its parts
each on one node, all started and freed together; ``--gang-reserve-s`` and ``--gang-slowdown`` as in
:func:`fgdopt.timeline.simulate`); a workload with gangs takes no optimum instants (the models of
:mod:`formulations.timeline` place single-node jobs only). Each run is :func:`fgdopt.timeline.simulate`
(policy seeded by the seed); at ``--instants`` instants evenly spread inside the window the jobs present are copied
out and :mod:`formulations.timeline` answers (i) the most GPU demand they could hold placed afresh and (ii) the
most pending demand admissible without moving a running job, each as incumbent and proven bound, checked against
the run's allocation (allocation <= incumbent <= bound).

With ``--mig MODEL`` (MIG over time, :mod:`fgdopt.mig.timeline`) each (trace, seed, load) is instead
:func:`fgdopt.mig.timeline.mig_openb_jobs`: ``--mig-nodes`` openb nodes whose GPUs are ``MODEL``, the trace's
stream pods mapped to its MIG profiles at an offered load in memory slices; the policies are the MIG ones
(``mig-fgd``, ``mig-first-fit``, ``mig-best-fit``, ``mig-greedy``, the default there; a policy that places by
milli-GPU, such as ``fgd``, is refused in one line) and ``--mechanism none,mig-repack`` compares
waiting with re-layout evictions. ``--layout`` lists how the GPUs are operated: ``dynamic`` (instances created on
demand, the default) or ``static`` (every node partitioned once, its configuration chosen from the run's profile mix
by :func:`~fgdopt.mig.timeline.mix_configs`; ``static:CONFIG`` puts one configuration of
:data:`~fgdopt.mig.timeline.MENU` on every node); the ``layout`` column of every output names it (empty without
``--mig``). No optimum instants are taken with ``--mig`` (the certified optimum of :mod:`formulations.timeline` is
not a MIG model).

Writes to ``DIR``: ``timeline.csv`` (one row per run: the run's keys and
:data:`fgdopt.timeline.metrics.STATS_COLUMNS`), ``jobs.csv`` (run keys, ``name, workers, submit_s, start_s, finish_s,
node, status, reason, measured, evictions``; ``workers`` the parts of a gang (1: a single-node job), all started and
finished at its ``start_s`` and ``finish_s``, ``node`` its first part's; ``start_s`` / ``finish_s`` empty and ``node``
-1 where a job never started or finished; ``status`` finished, running, pending, rejected or dropped; ``reason``
why a rejected job fits no empty node, e.g. ``gpus``, ``gpu_spec`` or ``workers``,
:data:`fgdopt.timeline.admission.REJECT_REASONS`),
``series.csv`` (run keys and the per-instant series sampled every ``--sample`` seconds up to the end of the
measurement window), ``optimum.csv`` (run keys, ``time_s, question, current_milli,
incumbent_milli, bound_milli, status, wall_s``) and ``timeline.png``; prints the run table and, per policy, the
GPUs that placement leaves idle against the certified optimum. ``--quick``: load 0.9, fgd and best-fit, backfill,
seed 42, 3,000 stream jobs, one instant with a 30 s limit (about a minute on 2 cores). Each finished run is kept
in ``DIR/.runs/`` as it completes: ``--resume`` skips the runs already there with the same inputs, and a stopped
sweep still writes the CSVs of the runs that finished
(only where no file of that name is there yet: the outputs of an earlier complete run stay).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import (
    add_gang_options,
    check_paths,
    check_stream_loads,
    existing_file,
    names_or_specs,
    non_negative_int,
    openb_dir,
    output_dir,
    parse_policies,
    parse_seeds,
    parse_timed_traces,
    positive,
    positive_int,
    real_list,
    study_parser,
)
from experiments.executors import (
    add_dask_option,
    add_resume_option,
    content_digest,
    policy_digest,
    run_and_write,
)
from experiments.outputs import printed
from fgdopt.instance import Instance
from fgdopt.model import GPU_MILLI, Cluster
from fgdopt.plot import plot_timeline
from fgdopt.policies import MIG_POLICY_NAMES, POLICY_NAMES
from fgdopt.timeline import QUEUE_NAMES, JobSet, make_discipline, openb_jobs, read_workload, run_stats, simulate
from fgdopt.timeline.admission import REJECT_REASONS, reason_lines, rejection_reasons
from fgdopt.timeline.engine import Engine
from fgdopt.timeline.failures import FailureModel
from fgdopt.timeline.mechanisms import MECHANISM_NAMES, make_mechanism, mechanism_factory
from fgdopt.timeline.metrics import STATS_COLUMNS, sample_count, sample_series
from fgdopt.traces import load_openb, trace_files

KEYS = ("trace", "seed", "load", "policy", "queue", "mechanism", "layout")
"""The columns that name a run in every output file."""
OUTPUTS = ("timeline.csv", "jobs.csv", "series.csv", "optimum.csv", "timeline.png")
"""The files the study writes into ``--output``."""
parse_floats = real_list(0.0)
"""``--load``: offered loads, fractions of GPU capacity (each > 0)."""
JOB_COLUMNS = ("name", "workers", "submit_s", "start_s", "finish_s", "node", "status", "reason", "measured",
               "evictions")
"""The columns of ``jobs.csv`` after the run keys (``status``: :data:`fgdopt.timeline.STATUSES`; ``reason``: why a job
was rejected or dropped, :mod:`fgdopt.timeline.admission`)."""
SERIES_MAX_ROWS = 1_000_000
"""Most rows of ``series.csv`` per run of a ``--workload`` (about 100 MB): a window of Unix-epoch submission times
(1.7e9 s) sampled every 60 s would be 28 million rows per run."""
MAX_FAILURES = 1_000_000
"""The most failures the ``failures`` mechanism may draw, in expectation, before a run's last job can finish (about
half a millisecond each: minutes already)."""


def parse_queues(text: str) -> list[str]:
    """Comma-separated discipline names (:data:`~fgdopt.timeline.queues.QUEUE_NAMES`) or ``module:attribute``."""
    return names_or_specs(text, QUEUE_NAMES, "queue discipline", make_discipline)


def parse_mechanisms(text: str) -> list[str]:
    """Comma-separated mechanism names (:data:`~fgdopt.timeline.mechanisms.MECHANISM_NAMES`) or ``module:attribute``
    specs (:func:`~fgdopt.timeline.mechanisms.mechanism_factory`, imported now)."""
    return names_or_specs(text, MECHANISM_NAMES, "mechanism", mechanism_factory)


def load_cluster(path: str | Path) -> Cluster:
    """The nodes of an instance file (its ``tasks`` may be empty or absent); one-line errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"cluster file {path} not found")
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object with a 'nodes' list, got a {type(data).__name__}")
        cluster = Instance.from_dict({"tasks": [], **data}).cluster
    except (json.JSONDecodeError, ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: not a valid node list ({exc})") from None
    if cluster.n_nodes == 0:
        raise ValueError(f"{path}: no nodes (the cluster needs at least one)")
    return cluster


def failures_error(cluster: Cluster, jobs: JobSet) -> str | None:
    """Why the ``failures`` mechanism (the published failure rates, :class:`fgdopt.timeline.failures.FailureModel`)
    would not let a run of ``jobs`` on ``cluster`` end in reasonable time, or None: more than :data:`MAX_FAILURES`
    failures in expectation before the last finish of a job started at its submission (the earliest a run can end;
    a job of 1e15 s on one node: about 1.8e7)."""
    _, rate = FailureModel().rates(cluster)
    done = jobs.submit_s + jobs.duration_s
    end = float(done[np.isfinite(done)].max(initial=0.0))
    if rate * end > MAX_FAILURES:
        return (f"a failure every {1 / rate:.3g} s on these nodes and GPUs, and the last job cannot finish before "
                f"{end:.3g} s: about {rate * end:.3g} failures (at most {MAX_FAILURES:,}); the run would not end in "
                "reasonable time")
    return None


def check_some_job_fits(cluster: Cluster, jobs: JobSet) -> None:
    """Raise ValueError, in one line naming ``--workload``, when no job of ``jobs`` fits an empty node of
    ``cluster`` (even over several nodes, as a mechanism that spans may place it): nothing would run."""
    why = rejection_reasons(cluster, jobs.tasks, spans=True)
    if len(why) and (why != "").all():
        raise ValueError(f"--workload: none of its {len(jobs)} jobs fits an empty node of --cluster (job 0 "
                         f"({jobs.tasks.names[0]}): {why[0]}: {REJECT_REASONS[why[0]]}); nothing to run")


def parse_layouts(text: str) -> list[str]:
    """Comma-separated MIG layouts: ``dynamic``, ``static`` or ``static:CONFIG``
    (:data:`fgdopt.mig.timeline.MENU`)."""
    from fgdopt.mig.timeline import LAYOUTS, MENU

    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in names if v not in LAYOUTS and not (v.startswith("static:") and v[7:] in MENU)]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown layouts {bad}; valid: {', '.join(LAYOUTS)}, static:CONFIG with "
                                         f"CONFIG among {', '.join(MENU)}")
    return names


def job_set(trace: str, seed: int, load: float, n_jobs: int, arrivals: str, data_dir: str | None,
            workload: str | None, cluster: str | None, mig: str | None = None, mig_nodes: int = 32,
            layout: str = ""):
    """The (cluster, jobs) of one run (module docstring)."""
    if mig is not None:
        from fgdopt.mig.timeline import mig_openb_jobs, mix_configs, profile_demand, static_cluster

        nodes, jobs = mig_openb_jobs(mig_nodes, load, n_jobs, seed=seed, model=mig, variant=trace, data_dir=data_dir)
        if layout.startswith("static"):
            nodes = static_cluster(nodes, layout[7:] or mix_configs(nodes, profile_demand(jobs, mig)))
        return nodes, jobs
    if workload is not None:
        return load_cluster(cluster), read_workload(workload)
    return openb_jobs(trace, load, n_jobs, seed=seed, arrivals=arrivals, data_dir=data_dir)


def run_cell(trace: str, seed: int, load: float, policy: str, queue: str, mechanism: str, checkpoint_s: float,
             n_jobs: int, arrivals: str, instants: int, time_limit: float, sample_s: float, data_dir: str | None = None,
             workload: str | None = None, cluster: str | None = None, mig: str | None = None, mig_nodes: int = 32,
             layout: str = "", gang_reserve_s: float = math.inf, gang_slowdown: float = 1.0) -> dict:
    """One run: simulate, its statistics, its jobs and sampled series, and the optimum at ``instants`` instants."""
    from formulations.timeline import admission_optimum, placement_optimum

    nodes, jobs = job_set(trace, seed, load, n_jobs, arrivals, data_dir, workload, cluster, mig, mig_nodes, layout)
    w0, w1 = jobs.window_s
    at = [w0 + (k + 1) * (w1 - w0) / (instants + 1) for k in range(instants)]
    result = simulate(nodes, jobs, policy, queue, seed=seed, snapshots=at,
                      mechanism=make_mechanism(mechanism, checkpoint_s=checkpoint_s),
                      gang_reserve_s=gang_reserve_s, gang_slowdown=gang_slowdown)
    keys = dict(zip(KEYS, (trace, seed, load, policy, queue, mechanism, layout), strict=True))
    frame = result.job_frame().assign(evictions=result.evictions)
    jobs_out = frame[list(JOB_COLUMNS)].assign(node=frame["node"].where(frame["start_s"].notna(), -1))
    optimum, pool = [], None
    for snap in result.snapshots:
        placed, pool = placement_optimum(snap, time_limit, pool=pool)
        for opt in (placed, admission_optimum(snap, time_limit)):
            optimum.append({**keys, "time_s": opt.time_s, "question": opt.question, "current_milli": opt.current,
                            "incumbent_milli": opt.incumbent, "bound_milli": opt.bound, "status": opt.status,
                            "wall_s": opt.wall_s})
    return {"row": {**keys, **run_stats(result)}, "jobs": jobs_out.assign(**keys),
            "series": sample_series(result.series, sample_s, w1).assign(**keys), "optimum": optimum,
            "capacity": nodes.gpu_capacity_milli}


def write_outputs(results: list[dict], out: Path, workload: str | None = None) -> pd.DataFrame:
    """Write the CSVs and the figure of the finished ``results`` into the folder ``out``; returns the run table.
    ``workload``: the name of the workload file the runs read (the figure's title names it; such runs have no
    load)."""
    runs = pd.DataFrame([r["row"] for r in results], columns=[*KEYS, *STATS_COLUMNS])
    runs.to_csv(out / "timeline.csv", index=False)
    if not results:
        return runs
    pd.concat([r["jobs"] for r in results])[[*KEYS, *JOB_COLUMNS]].to_csv(out / "jobs.csv", index=False)
    series = pd.concat([r["series"] for r in results])
    series = series[[*KEYS, *(c for c in series.columns if c not in KEYS)]]
    series.to_csv(out / "series.csv", index=False)
    optimum = pd.DataFrame([o for r in results for o in r["optimum"]],
                           columns=[*KEYS, "time_s", "question", "current_milli", "incumbent_milli", "bound_milli",
                                    "status", "wall_s"])
    optimum.to_csv(out / "optimum.csv", index=False)
    first = results[0]["row"]
    pick = [r for r in results if all(str(r["row"][k]) == str(first[k]) for k in ("trace", "seed", "load"))]
    what = f"workload {workload}" if workload is not None else f"{first['trace']}, load {first['load']:g}"
    plot_timeline(series, runs, optimum, results[0]["capacity"], out / "timeline.png", f"{what}, seed {first['seed']}",
                  jobs=pd.concat([r["jobs"] for r in pick]))
    return runs


def idle_lines(results: list[dict]) -> list[str]:
    """Per (policy, queue, mechanism), in words: how many more GPUs the jobs present at the sampled instants could
    hold if placed afresh (the optimum's question ``placement``, :mod:`formulations.timeline`), on average over the
    instants: at least incumbent - allocated, at most bound - allocated (GPUs)."""
    frame = pd.DataFrame([o for r in results for o in r["optimum"] if o["question"] == "placement"])
    if frame.empty:
        return []
    lines = []
    for (policy, queue, mechanism), g in frame.groupby(["policy", "queue", "mechanism"], sort=False):
        lo = ((g["incumbent_milli"] - g["current_milli"]) / GPU_MILLI).mean()
        hi = ((g["bound_milli"] - g["current_milli"]) / GPU_MILLI).mean()
        who = f"{policy}, {queue} queue" + ("" if mechanism == "none" else f", evictions by {mechanism}")
        when = f"{len(g)} sampled instant{'s' * (len(g) != 1)}"
        if f"{lo:.1f}" == f"{hi:.1f}":
            lines.append(f"{who}: placed afresh, the same jobs would use {lo:.1f} more GPUs on average over {when} "
                         "(the optimum is proven)")
        else:
            lines.append(f"{who}: placed afresh, the same jobs would use {lo:.1f} to {hi:.1f} more GPUs on average "
                         f"over {when} ({lo:.1f} with the best placement found, {hi:.1f} at its proven bound)")
    return lines


def rejected_lines(results: list[dict]) -> list[str]:
    """Per job set (trace, seed, load), one line per reason why its jobs were rejected (the first run of the set:
    rejection depends on the cluster and the shapes only, not on the policy or the queue)."""
    lines, seen = [], set()
    for r in results:
        key = tuple(str(r["row"][k]) for k in ("trace", "seed", "load"))
        if key in seen:
            continue
        seen.add(key)
        rejected = r["jobs"]["reason"][r["jobs"]["status"] == "rejected"]
        where = f"{key[0]}, seed {key[1]}" + (f", load {key[2]}" if key[2] != "nan" else "")
        lines += [f"{where}: {line}" for line in reason_lines(rejected.to_numpy())]
    return lines


HEADINGS = {"alloc_time_avg_pct": "GPUs allocated (% time avg)", "blocked_job_hours": "job-hours blocked by frag.",
            "lost_gpu_s": "lost work (GPU-s)", "overhead_gpu_s": "overhead (GPU-s)"}
"""The printed run table's headings that :func:`experiments.outputs.heading` would not write as well."""


def run_table(runs: pd.DataFrame, columns: list[str]) -> str:
    """The printed run table: ``columns`` of ``runs`` under :data:`HEADINGS` (:func:`experiments.outputs.printed`:
    without the columns empty in every row, such as ``load`` with ``--workload`` and ``layout`` without ``--mig``)."""
    return printed(runs[columns], HEADINGS)


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.timeline", __doc__)
    parser.add_argument("--trace", type=parse_timed_traces, default=["default"],
                        help="openb variants with pod times (not multigpu*), comma-separated, a family or all "
                        "(default: default)")
    parser.add_argument("--load", type=parse_floats, default=[0.7, 0.9, 1.1],
                        help="offered loads, fractions of GPU capacity (default: 0.7,0.9,1.1)")
    parser.add_argument("--policies", type=parse_policies, default=None,
                        help="placement policies: names or module:attribute specs (default: fgd,best-fit,random; "
                        "with --mig: mig-fgd,mig-first-fit,mig-best-fit,mig-greedy)")
    parser.add_argument("--queue", type=parse_queues, default=["fifo", "backfill"],
                        help=f"queue disciplines among {', '.join(QUEUE_NAMES)} or module:attribute specs "
                        "(default: fifo,backfill)")
    parser.add_argument("--mechanism", type=parse_mechanisms, default=["none"],
                        help=f"what may evict running jobs, among {', '.join(MECHANISM_NAMES)} (default: none)")
    parser.add_argument("--checkpoint-s", type=positive, default=1800.0,
                        help="checkpoint interval of the priority mechanism, seconds of progress (default: 1800)")
    parser.add_argument("--mig", default=None, metavar="MODEL",
                        help="MIG over time: openb jobs as MODEL's profiles on --mig-nodes nodes (e.g. A100-40GB)")
    parser.add_argument("--mig-nodes", type=positive_int, default=32, help="nodes of the MIG cluster (default: 32)")
    parser.add_argument("--layout", type=parse_layouts, default=None,
                        help="with --mig: dynamic, static or static:CONFIG, comma-separated (default: dynamic)")
    parser.add_argument("--seeds", type=parse_seeds, default=None,
                        help="seeds, A-B or a,b (default: 42-44; with --workload 42, one run of the file's jobs)")
    parser.add_argument("--n-jobs", type=positive_int, default=20_000, help="stream jobs per run (default: 20000)")
    parser.add_argument("--arrivals", choices=("poisson", "trace"), default="poisson",
                        help="stream arrivals: Poisson, or the trace's creation times compressed (default: poisson)")
    parser.add_argument("--instants", type=non_negative_int, default=3,
                        help="optimum instants per run (default: 3; 0: none)")
    parser.add_argument("--time-limit", type=positive, default=60.0, help="seconds per optimum question (default: 60)")
    parser.add_argument("--sample", type=positive, default=60.0, help="series.csv sampling step, seconds (default: 60)")
    parser.add_argument("--workload", type=existing_file, default=None,
                        help="a workload file (the open job format: CSV or .parquet) instead of --trace "
                        "(needs --cluster)")
    parser.add_argument("--cluster", type=existing_file, default=None,
                        help="an instance JSON file whose nodes are the cluster")
    add_gang_options(parser)
    parser.add_argument("--quick", action="store_true", help="load 0.9, fgd and best-fit, backfill, seed 42, "
                        "3000 jobs, one instant of 30 s (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--output", type=output_dir, required=True, help="folder for the CSVs and timeline.png")
    args = parser.parse_args(argv)
    args.data_dir = None if args.data_dir is None else str(args.data_dir)
    check_paths(parser, args.output, OUTPUTS, {"--workload": args.workload, "--cluster": args.cluster})
    if (args.workload is None) != (args.cluster is None):
        parser.error("--workload and --cluster go together")
    if args.quick:
        parser.quick(args, load=[0.9], seeds=[42], n_jobs=3000, instants=1, time_limit=30.0,
                     policies=["mig-fgd", "mig-best-fit"] if args.mig else ["fgd", "best-fit"], queue=["backfill"])
    if args.policies is None:
        args.policies = list(MIG_POLICY_NAMES) if args.mig else ["fgd", "best-fit", "random"]
    if args.seeds is None:                   # a workload file is one fixed job set: one run unless seeds are asked
        args.seeds = [42] if args.workload is not None else [42, 43, 44]
    if args.mig is not None:
        from fgdopt.mig.slices import MIG_MODELS

        if args.mig not in MIG_MODELS or args.workload is not None:
            parser.error(f"--mig takes one of {', '.join(MIG_MODELS)} and no --workload")
        if blind := [p for p in args.policies if p in POLICY_NAMES and p not in MIG_POLICY_NAMES]:
            parser.error(f"--policies: {', '.join(blind)} place{'s' * (len(blind) == 1)} by milli-GPU, not by MIG "
                         f"slices; with --mig use "
                         f"{', '.join(MIG_POLICY_NAMES)} (or your own module:attribute policy)")
        args.layout, args.instants = args.layout or ["dynamic"], 0
    elif args.layout is not None:
        parser.error("--layout goes with --mig")
    if args.workload is not None:
        try:                                               # bad files stop here, in one line, before any run
            jobs, cluster = read_workload(args.workload), load_cluster(args.cluster)
            check_some_job_fits(cluster, jobs)
            gangs = jobs.tasks.has_gangs
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
        for m in args.mechanism:                # what the engine refuses with these jobs (gangs and 'migrate', ...)
            try:
                Engine(cluster, jobs, "best-fit", "fifo", mechanism=make_mechanism(m, checkpoint_s=args.checkpoint_s),
                       gang_reserve_s=args.gang_reserve_s, gang_slowdown=args.gang_slowdown)
            except ValueError as exc:
                parser.error(f"--mechanism {m}: {exc} (--workload {Path(args.workload).name})")
        if "failures" in args.mechanism and (why := failures_error(cluster, jobs)):
            parser.error(f"--mechanism failures: {why} (--workload {Path(args.workload).name})")
        if (rows := sample_count(args.sample, jobs.window_s[1])) > SERIES_MAX_ROWS:
            parser.error(f"--sample: every {args.sample:g} s up to the last submission of --workload "
                         f"({jobs.window_s[1]:.4g} s) is {rows:,} rows of series.csv per run (at most "
                         f"{SERIES_MAX_ROWS:,}); give --sample {math.ceil(jobs.window_s[1] / (SERIES_MAX_ROWS - 1))}"
                         " or more, or submit_s in seconds from the start of the run")
        if gangs and args.instants:                      # the optimum models of an instant hold no gangs
            print(f"{Path(args.workload).name} has gangs (workers > 1): the optimum models place single-node jobs "
                  "only, so no optimum instant is taken (optimum.csv has no rows)", file=sys.stderr)
            args.instants = 0
        traces, loads, workload = [Path(args.workload).stem], [float("nan")], Path(args.workload).name
        args.workload, args.cluster = str(args.workload), str(args.cluster)
    else:
        traces, loads, workload = args.trace, args.load, None
        try:                                               # a missing or broken trace stops here too
            for trace in traces:
                load_openb(trace, args.data_dir)
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
        if args.mig is None:
            check_stream_loads(parser, traces, args.seeds, loads, args.data_dir)
    cells = [(t, s, ld, p, q, m, args.checkpoint_s, args.n_jobs, args.arrivals, args.instants, args.time_limit,
              args.sample, args.data_dir, args.workload, args.cluster, args.mig, args.mig_nodes, lay,
              args.gang_reserve_s, args.gang_slowdown)
             for t in traces for s in args.seeds for ld in loads for p in args.policies for q in args.queue
             for m in args.mechanism for lay in (args.layout or [""])]
    keys = [(c[0], c[1], c[2], policy_digest(c[3]), policy_digest(c[4]), *c[5:12],
             content_digest(*trace_files(c[0], c[12])) if c[13] is None else None,
             content_digest(c[13]), content_digest(c[14]), *c[15:]) for c in cells]
    written, code = run_and_write("timeline", run_cell, cells, args, keys,
                                  lambda done, tmp: (write_outputs(done, tmp, workload), done), parser.prog)
    if code:
        return code
    runs, results = written
    show = [*KEYS, "jobs", "rejected", "mean_wait_s", "p99_wait_s", "mean_jct_s", "alloc_time_avg_pct",
            "blocked_job_hours", "cpu_s"]
    if set(args.mechanism) != {"none"}:
        show[-1:-1] = ["preemptions", "suspensions", "migrations", "evictions", "lost_gpu_s", "overhead_gpu_s",
                       "thrashed_jobs"]
    print(run_table(runs, show))
    print("\n".join(idle_lines(results)))
    for line in rejected_lines(results):
        print(line)
    return 0


if __name__ == "__main__":
    from experiments.timeline import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
