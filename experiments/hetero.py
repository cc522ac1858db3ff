"""Heterogeneous GPUs: Gavel's policies, FIFO and Gandiva-style packing on a V100/P100/K80 cluster over time.

Usage::

    python -m experiments.hetero [--policies fifo,gandiva,las,las-aware,ftf,ftf-aware,makespan,makespan-aware,allox]
        [--cluster 36:36:36] [--rates 0.5,1,1.5,...] [--seeds 0-2] [--window 4000:5000] [--batch 0]
        [--multi-gpu] [--gpus-per-node 1] [--spread-throughput unconsolidated] [--round-s 360] [--steps whole]
        [--jobs N | --dask ADDRESS] [--resume] [--quick]
        --output DIR

Each (rate, seed) is one trace of :func:`fgdopt.hetero.iter_gavel_jobs` (Gavel's endless generator draw for draw:
Poisson arrivals at ``rate`` jobs/hour, Philly durations, Gavel's 26 job types, single-GPU unless ``--multi-gpu``),
taken once and long enough (:func:`trace_length`) that arrivals continue until the jobs of ``--window`` (by index,
Gavel's ``--window-start/--window-end``) have finished, which is checked; only those are measured, and a round-based
run stops once they have finished, as Gavel's does. Every policy runs the same trace on the time engine
(:func:`fgdopt.timeline.simulate`):

* ``las``, ``las-aware``, ``ftf``, ``ftf-aware``, ``makespan``, ``makespan-aware``: Gavel's round-based mechanism
  (:class:`fgdopt.hetero.rounds.Gavel` on the round loop) realizing X from :func:`formulations.hetero.round_allocator`;
* ``allox``: AlloX's min-cost matching of jobs to (GPU, position) slots (:mod:`fgdopt.hetero.allox`, as Gavel's
  ``allox`` policy), on the same round loop (single-GPU jobs only);
* ``fifo``: first come first served, a job runs to completion on the GPUs best-fit gives it, whatever their type
  (heterogeneity-agnostic, no rounds);
* ``gandiva``: Gandiva-style packing, each job asks for half of each of its GPUs so two share one, placed by
  ``gpu-packing`` with backfilling; co-located jobs slow each other as Gavel measured
  (:meth:`fgdopt.hetero.HeteroJobs.interference`).

With ``--multi-gpu`` (Gavel's ``continuous-multiple`` trace: 1, 2, 4 or 8 GPUs per job) a round-based job goes to
one node of its type when one holds it whole, else over several (:mod:`fgdopt.hetero.gang`, Gavel's worker walk),
where it runs at Gavel's unconsolidated throughput, or, with ``--spread-throughput consolidated``, at the
consolidated one, as Gavel's simulator runs every job (its cross-check). Nodes have 1 GPU by default, as in
Gavel's multi-GPU sweeps (its ``--num_gpus_per_server 1:1:1``).

Rounds run in whole steps (``--steps whole``, the default) as Gavel's simulator does (``int(throughput x round)``
steps a round, in that many steps' time; the time a job received, which sets its priority, is its steps' time:
:class:`~fgdopt.hetero.rounds.Gavel` ``step_rate``); ``--steps continuous`` runs every job for the whole
round at its speed instead. Past the knee this decides which of the jobs tied on time received runs: at 4.8
jobs/hour agnostic ``las`` is 5.7% below Gavel's JCT continuously and 0.13% with whole steps (paper/README.md).

``--batch N`` adds a static batch of N jobs (all at time 0, rate ``inf``) per seed, whose rows carry the certified
lower bound on any schedule's makespan (``makespan-aware``'s X at time 0, ``makespan_bound_s``).

Writes ``DIR/hetero.csv`` (``policy, cluster, lambda_per_hour, seed, measured_jobs, mean_jct_s, p95_jct_s,
makespan_s, makespan_bound_s, mean_rho, max_rho, jain_rho, utilization, wall_s``, ``preemptions, solves`` and
``steps``, ``whole`` or ``continuous`` for the round-based policies, empty for the others) and
``DIR/hetero.png`` (mean JCT against arrival rate per policy, Gavel's Figure 8 form); prints the table and the
aware/agnostic JCT ratios. ``--quick``: a 12:12:12 cluster, rates 0.5 and 1 jobs/hour, seed 0, jobs 300-500 measured,
policies fifo, las, las-aware, makespan-aware (about a minute on 2 cores). With ``--multi-gpu`` the quick rates are
0.25 and 0.5, and fifo is left out when a job may ask for more GPUs than a node has. With ``--multi-gpu``, ``fifo``
(which places a job on one node) needs ``--gpus-per-node 8``, ``gandiva`` does not run (a job that shares a GPU asks
for one), ``allox`` does not run either (AlloX takes single-GPU jobs only), and every policy needs a GPU type with at
least 8 GPUs, and a type where each kind of job runs with as many GPUs as it asks for (ResNet-50 at batch 128 has
no K80 throughput on 2 GPUs or more: :func:`fgdopt.hetero.jobs.check_cluster`). A run generates at most
:data:`experiments.args.MAX_TRACE_JOBS` jobs, whose arrivals end by :data:`HORIZON_S`.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import (
    check_trace_jobs,
    gavel_dir,
    integer,
    names,
    non_negative_int,
    output_dir,
    parse_seeds,
    positive,
    positive_int,
    real_list,
    study_parser,
)
from experiments.executors import (
    StudyError,
    add_dask_option,
    add_resume_option,
    content_digest,
    run_and_write,
)
from experiments.outputs import printed
from fgdopt.hetero import GPU_TYPES, SCALE_FACTORS, load_throughputs
from fgdopt.hetero.allox import AlloXGavel, allox_allocator
from fgdopt.hetero.jobs import (
    REFERENCE_GPU,
    check_cluster,
    check_table,
    gavel_cluster,
    iter_gavel_jobs,
    take_jobs,
)
from fgdopt.hetero.metrics import HETERO_COLUMNS, hetero_stats
from fgdopt.hetero.rounds import ROUND_S, Gavel
from fgdopt.plot import plot_hetero
from fgdopt.timeline import STATUSES, simulate
from fgdopt.timeline.rounds import RoundLoop
from formulations.hetero import ALLOX, AWARE_POLICIES, ROUND_POLICIES, allocate, round_allocator

BASELINES = ("fifo", "gandiva")
SPREADS = ("unconsolidated", "consolidated")
STEPS = ("whole", "continuous")
POLICY_NAMES = (*BASELINES, *ROUND_POLICIES)
COLUMNS = ("policy", "cluster", "lambda_per_hour", "seed", "measured_jobs", "mean_jct_s", "p95_jct_s", "makespan_s",
           "makespan_bound_s", "mean_rho", "max_rho", "jain_rho", "utilization", "wall_s", "preemptions", "solves",
           "steps")


parse_policies = names(POLICY_NAMES, "policy")


def parse_cluster(text: str) -> dict[str, int]:
    try:
        counts = [int(c) for c in text.split(":")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"cluster {text!r}: expected V100:P100:K80 GPU counts") from None
    if len(counts) != len(GPU_TYPES) or min(counts) < 0:
        raise argparse.ArgumentTypeError(f"cluster {text!r}: expected three GPU counts >= 0, e.g. 36:36:36")
    if sum(counts) == 0:
        raise argparse.ArgumentTypeError(f"cluster {text!r} has no GPUs")
    return dict(zip(GPU_TYPES, counts, strict=True))


def parse_window(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"window {text!r}: expected START:END job indices") from None
    if not 0 <= lo < hi:
        raise argparse.ArgumentTypeError(f"window {text!r}: expected 0 <= START < END")
    return lo, hi


TAIL_H = 4000.0
"""Hours of arrivals generated past the measured window (at least): the measured jobs must finish before the trace's
last arrival, as they do in Gavel's endless trace (checked after every run)."""


HORIZON_S = 1e10
"""The latest expected arrival (seconds) of a trace: the time engine's clock, float seconds, keeps a microsecond's
precision up to about this (its spacing there is 2e-6 s); at 1e-8 jobs/hour its consistency check failed."""


def trace_length(rate: float, window: tuple[int, int]) -> int:
    """Jobs of Gavel's stream a run at ``rate`` jobs/hour simulates for the measured jobs ``window`` (by index): the
    window, then at least a quarter of its end, its width and :data:`TAIL_H` hours of arrivals. A round-based run
    stops once the measured jobs have finished (:class:`~fgdopt.timeline.rounds.RoundLoop` ``stop_after``), so the
    arrivals past that instant cost only their queueing; what happens before it is the same for any longer trace."""
    lo, hi = window
    return hi + max(hi - lo, hi // 4, math.ceil(rate * TAIL_H))


def run_point(policy: str, gpus: dict[str, int], rate: float, seed: int, window: tuple[int, int], multi_gpu: bool,
              gpus_per_node: int, round_s: float, data_dir: str | None = None,
              spread: str = "unconsolidated", steps: str = "whole") -> dict:
    """One row of hetero.csv: ``policy`` on Gavel's trace at ``rate`` jobs/hour (``inf``: a static batch of
    ``window[1]`` jobs, all measured) on ``gpus``; with ``multi_gpu``, a job over several nodes runs at its
    ``spread`` (``unconsolidated`` or ``consolidated``) throughput; ``steps`` ``whole``: rounds in Gavel's whole
    steps (module docstring)."""
    t0 = time.perf_counter()
    label = ":".join(str(gpus[g]) for g in GPU_TYPES)
    gpus = {g: count for g, count in gpus.items() if count > 0}     # a type with no GPUs is not in the cluster
    table = load_throughputs(data_dir)
    batch = math.isinf(rate)
    n = window[1] if batch else trace_length(rate, window)
    trace = take_jobs(iter_gavel_jobs(table, rate, seed=seed, multi_gpu=multi_gpu), n)
    measured = np.zeros(n, dtype=bool)
    measured[0 if batch else window[0]:window[1]] = True
    packed = policy == "gandiva"
    jobs, speed = trace.to_jobset(table, tuple(gpus), measured=measured, gpu_milli=500 if packed else 1000)
    cluster = gavel_cluster(gpus, gpus_per_node)
    options: dict = {"speed": speed, "frag": False}
    solves = 0
    if policy == "fifo":
        result = simulate(cluster, jobs, "best-fit", "fifo", seed=seed, **options)
    elif packed:
        result = simulate(cluster, jobs, "gpu-packing", "backfill", seed=seed,
                          interference=trace.interference(table, tuple(gpus)), **options)
    else:
        step_rate = trace.throughputs(table, [REFERENCE_GPU])[:, 0] if steps == "whole" else None
        if policy == ALLOX:                           # X at every recomputation, in Gavel's units in whole steps
            kind, allocator = AlloXGavel, allox_allocator(speed, jobs, gpus, **({} if step_rate is None else {
                "total_steps": trace.total_steps, "steps_per_s": trace.throughputs(table, tuple(gpus)),
                "step_rate": step_rate}))
        else:
            kind, allocator = Gavel, round_allocator(policy, speed, jobs, gpus)
        gavel = kind(allocator, speed, jobs.duration_s, tuple(gpus),
                     shuffle_seed=None if policy in AWARE_POLICIES else seed + 5,
                     spread_speed=trace.spread_speed(table, tuple(gpus)) if spread == "unconsolidated" else None,
                     step_rate=step_rate)
        mech = RoundLoop(gavel, round_s=round_s, stop_after=np.flatnonzero(measured), span=multi_gpu,
                         stop_by_s=math.inf if batch else float(jobs.submit_s.max()))
        result = simulate(cluster, jobs, "best-fit", "fifo", seed=seed, mechanism=mech,
                          restart_s=lambda gpus: 0.0, **options)
        solves = gavel.solves
    if (never := np.flatnonzero(measured & (result.status == STATUSES.index("rejected")))).size:
        j = int(never[0])
        raise StudyError(f"--cluster: {policy} cannot place job {j} ({int(jobs.tasks.num_gpu[j])} GPUs) on {label} in "
                         f"nodes of {gpus_per_node} GPUs")
    if not batch and not np.max(result.finish_s[measured]) <= jobs.submit_s.max():    # NaN: unfinished
        raise StudyError(f"--rates: {policy} at {rate:g} jobs/h on {label}: the "
                         f"measured jobs still ran after the last of {n} arrivals (the cluster is overloaded); lower "
                         "the rate")
    bound = math.nan
    if batch:
        bound = float(allocate("makespan-aware", table, trace, gpus).bound)
    stats = hetero_stats(result, speed, gpus)
    if batch and stats["makespan_s"] < bound * (1 - 1e-6):
        raise AssertionError(f"{policy}: makespan {stats['makespan_s']} s below the certified bound {bound} s")
    return {"policy": policy, "cluster": label, "lambda_per_hour": rate,
            "seed": seed, **{k: stats[k] for k in HETERO_COLUMNS}, "makespan_bound_s": bound,
            "wall_s": time.perf_counter() - t0, "solves": solves, "steps": steps if policy in ROUND_POLICIES else ""}


def ratio_lines(frame: pd.DataFrame) -> list[str]:
    """Per rate, in words: each agnostic policy's mean JCT as a multiple of its heterogeneity-aware twin's (seeds
    averaged)."""
    mean = frame.groupby(["lambda_per_hour", "policy"]).mean_jct_s.mean()
    lines = []
    for rate in sorted(frame.lambda_per_hour.unique()):
        parts = [f"{p} {mean[rate, p] / mean[rate, p + '-aware']:.2f}x {p}-aware"
                 for p in ("las", "ftf", "makespan") if (rate, p) in mean and (rate, p + "-aware") in mean]
        if parts:
            lines.append(f"at {rate:g} jobs/hour, mean JCT without heterogeneity awareness: " + ", ".join(parts))
    return lines


HOURS = {"mean_jct_s": "mean JCT (h)", "p95_jct_s": "95th pct JCT (h)", "makespan_s": "makespan (h)",
         "makespan_bound_s": "makespan bound (h)"}
"""The columns of ``hetero.csv`` in seconds that the printed table shows in hours, as the figure does."""
HEADINGS = {"lambda_per_hour": "jobs/hour", "utilization": "GPUs busy (%)", "jain_rho": "Jain index of rho",
            "solves": "LP solves"}
"""The other headings of the printed table that :func:`experiments.outputs.heading` would not write as well."""


def run_table(frame: pd.DataFrame) -> str:
    """The printed table of ``hetero.csv``: times in hours (:data:`HOURS`), utilization in percent, headings in
    words, without the columns empty in every row (the makespan bound without ``--batch``, the steps without a
    round-based policy; :func:`experiments.outputs.printed`)."""
    return printed(frame.assign(**{c: frame[c] / 3600 for c in HOURS}, utilization=100 * frame["utilization"]),
                   HOURS | HEADINGS)


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.hetero", __doc__)
    parser.add_argument("--policies", type=parse_policies, default=list(POLICY_NAMES),
                        help=f"comma-separated, of {', '.join(POLICY_NAMES)} (default: all)")
    parser.add_argument("--cluster", type=parse_cluster, default=parse_cluster("36:36:36"),
                        help="GPUs V100:P100:K80 (default: Gavel's 36:36:36)")
    parser.add_argument("--rates", type=real_list(0.0), default=[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5],
                        help="arrival rates, jobs/hour (default: 0.5 to 3.5 by 0.5)")
    parser.add_argument("--seeds", type=parse_seeds, default=[0, 1, 2], help="seeds, A-B or a,b (default: 0-2)")
    parser.add_argument("--window", type=parse_window, default=(4000, 5000),
                        help="measured jobs, START:END by index (default: Gavel's 4000:5000)")
    parser.add_argument("--batch", type=non_negative_int, default=0,
                        help="also a static batch of this many jobs per seed "
                        "(makespan against its certified bound; default: 0, none)")
    parser.add_argument("--multi-gpu", action="store_true", help="multi-GPU jobs (Gavel's -m); default single-GPU")
    parser.add_argument("--gpus-per-node", type=integer(1, 8), default=1,
                        help="GPUs per node (default: 1, Gavel's sweeps)")
    parser.add_argument("--spread-throughput", choices=SPREADS, default=SPREADS[0],
                        help="with --multi-gpu, the throughput of a job whose GPUs span nodes: Gavel's "
                        "unconsolidated (default) or consolidated, as Gavel's simulator runs it")
    parser.add_argument("--round-s", type=positive, default=ROUND_S, help="seconds per round (default: 360)")
    parser.add_argument("--steps", choices=STEPS, default=STEPS[0],
                        help="round-based jobs run in Gavel's whole steps (default) or continuously")
    parser.add_argument("--quick", action="store_true",
                        help="12:12:12, rates 0.5 and 1 (0.25 and 0.5 with --multi-gpu), seed 0, jobs 300-500, "
                        "fifo (unless --multi-gpu jobs can outgrow a node), las, las-aware, makespan-aware"
                        " (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--data-dir", type=gavel_dir, default=None,
                        help="Gavel's throughputs folder (default: $FGDOPT_GAVEL)")
    parser.add_argument("--output", type=output_dir, required=True, help="folder for hetero.csv and hetero.png")
    args = parser.parse_args(argv)
    args.data_dir = None if args.data_dir is None else str(args.data_dir)
    per_node = args.gpus_per_node
    largest = max(SCALE_FACTORS) if args.multi_gpu else 1   # the most GPUs (of one type) a job of the trace asks for
    if args.quick:
        # a multi-GPU job is 2.3 GPUs on average (0.5 is near saturation already); fifo places a job on one node
        parser.quick(args, cluster=parse_cluster("12:12:12"), rates=[0.25, 0.5] if args.multi_gpu else [0.5, 1.0],
                     seeds=[0], window=(300, 500), policies=["fifo"] * (largest <= per_node)
                     + ["las", "las-aware", "makespan-aware"])
    check_trace_jobs(parser, "--window", args.window[1], trace_length(0.0, args.window), "the window and a quarter "
                     "of its end or its width more")
    for rate in args.rates:
        n = trace_length(rate, args.window)
        check_trace_jobs(parser, "--rates", rate, n,
                         f"--window {args.window[0]}:{args.window[1]}, then {TAIL_H:,.0f} hours of arrivals or more")
        if n * 3600 / rate > HORIZON_S:
            parser.error(f"argument --rates: at {rate:g} jobs/hour the {n:,} jobs of a run arrive over about "
                         f"{n * 3600 / rate:.2g} s, beyond the {HORIZON_S:g} s the time engine's clock resolves to a "
                         "microsecond; raise the rate")
    check_trace_jobs(parser, "--batch", args.batch, args.batch, "all measured")
    written = parser.written()
    if "spread_throughput" in written and not args.multi_gpu:
        parser.error("--spread-throughput: a job's GPUs span nodes only with --multi-gpu; add it, or drop the option")
    if "steps" in written and not set(args.policies) & set(ROUND_POLICIES):
        parser.error(f"--steps: only the round-based policies ({', '.join(ROUND_POLICIES)}) run in steps, and "
                     f"--policies has none of them")
    if max(args.cluster.values()) < largest:
        parser.error(f"--cluster: with --multi-gpu a job asks for up to {largest} GPUs of one type, and no type of "
                     f"{':'.join(str(args.cluster[g]) for g in GPU_TYPES)} has that many")
    if args.multi_gpu and "gandiva" in args.policies:
        parser.error("--policies: gandiva shares GPUs, and a job that shares a GPU asks for one GPU: it does not run "
                     "with --multi-gpu")
    if args.multi_gpu and ALLOX in args.policies:
        parser.error("--policies: allox matches each job to one GPU (AlloX, like Gavel's, takes single-GPU jobs "
                     "only): it does not run with --multi-gpu")
    if largest > per_node and "fifo" in args.policies:
        parser.error(f"--policies: fifo places each job on one node, and with --multi-gpu a job asks for up to "
                     f"{largest} GPUs: add --gpus-per-node {largest} or keep to the round-based policies")
    try:
        table = load_throughputs(args.data_dir)            # a missing or broken table stops here, in one line
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    try:
        check_table(table, multi_gpu=args.multi_gpu)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        check_cluster(table, {g: c for g, c in args.cluster.items() if c > 0}, multi_gpu=args.multi_gpu)
    except ValueError as exc:
        parser.error(f"--cluster: {exc}")
    points = [(rate, s) for s in args.seeds for rate in args.rates]
    if args.batch:
        points += [(math.inf, s) for s in args.seeds]
    cells = [(p, args.cluster, rate, s, (0, args.batch) if math.isinf(rate) else args.window, args.multi_gpu,
              per_node, args.round_s, args.data_dir, args.spread_throughput, args.steps) for rate, s in points
             for p in args.policies]
    keys = [(*c[:-3], content_digest(table.source), *(c[-2:-1] if c[5] else ()), c[-1])
            for c in cells]                                 # the table's content; rows cached before the steps column
    #                                                         (whose keys had no steps) are never returned
    frame, code = run_and_write("hetero", run_point, cells, args, keys, write_outputs, parser.prog)
    if code:
        return code
    print(run_table(frame))
    print("\n".join(ratio_lines(frame[np.isfinite(frame.lambda_per_hour)])))
    return 0


def write_outputs(rows: list[dict], out: Path) -> pd.DataFrame:
    """Write ``hetero.csv`` and ``hetero.png`` of ``rows`` into the folder ``out``; returns the frame."""
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.to_csv(out / "hetero.csv", index=False)
    if len(frame):
        plot_hetero(frame, out / "hetero.png")
    return frame


if __name__ == "__main__":
    from experiments.hetero import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
