"""Interference: what GPU packing costs in JCT when co-located jobs slow each other, and an interference-aware FGD.

Usage::

    python -m experiments.interference [--trace default] [--load 0.9,1.1] [--seeds 42]
        [--policies fgd,best-fit,gpu-packing,random,fgd-interference] [--weights 0,0.5,1,2,5,20] [--n-jobs 5000]
        [--interference on,off] [--jobs N | --dask ADDRESS] [--resume] [--quick] --output DIR

Each (trace, seed, load) is one job set of :func:`fgdopt.timeline.sources.openb_jobs` (services, a stationary warm
start, ``--n-jobs`` Poisson stream jobs at offered load ``--load``, measured after a 10% warm-up) on the openb
cluster, with the backfill queue. Every job gets one of Gavel's 26 job types, uniformly at random (seeded by the
seed; :func:`fgdopt.hetero.interference.openb_interference`), and its sharing jobs (``0 < gpu_milli < 1000``) slow
each other on a shared GPU by Gavel's measured co-location throughputs (floor 1/2, time slicing; ``P100`` nodes use
Gavel's P100 pairs, every other model the V100 ones). Every policy runs the same jobs with the interference
(``on``) and without it (``off``): ``fgd``, ``best-fit``, ``gpu-packing``, ``random`` as everywhere, and
``fgd-interference`` (:class:`fgdopt.policies.interference.InterferenceFGD`) once per ``--weights`` value (FGD's
fragmentation delta plus weight x the milli-GPU of capacity the co-location slows; weight 0 is FGD).

Writes ``DIR/interference.csv``, one row per run: the run's keys (``trace, seed, load, policy, weight,
interference``), ``measured`` and ``sharing`` (measured jobs, of which sharing), ``unfinished``; from
:func:`fgdopt.timeline.metrics.run_stats`: ``alloc_time_avg_pct`` (time-averaged allocated GPUs, % of capacity, over
the window), ``frag_time_avg_pct`` (F(M), same), ``mean_wait_s``, ``mean_jct_s``, ``p95_jct_s`` (all measured
jobs); for the measured sharing jobs: ``mean_jct_s_sharing``, ``p95_jct_s_sharing``, ``mean_slowdown``,
``p95_slowdown`` (run-time inflation: run time over work, ``run_s / duration_s``; 1 = never slowed),
``slowed_pct`` (share slowed at all), ``lost_gpu_pct`` (of their GPU time, milli-GPU x s, the part lost to
slowdown: ``sum m (run_s - duration_s) / sum m run_s``) and, on ``on`` rows, ``jct_ratio`` (the mean over the
sharing jobs measured and finished in both runs of JCT with interference over JCT without, same policy and weight)
and ``mean_jct_ratio`` (the ratio of the two runs' mean sharing JCT); ``wall_s``. ``DIR/interference.png``: the
trade, one panel per load, time-averaged allocated GPUs (%; of the run without interference when there is one: with
it, slowed jobs also hold their GPUs longer) against the sharing jobs' mean slowdown with interference, one point per
policy and weight, means over seeds (:func:`fgdopt.plot.plot_interference`). Prints the table.

``--quick``: load 1.1, seed 42, 1,000 stream jobs, fgd, best-fit, gpu-packing and fgd-interference at weights 0 and
1, with and without interference (10 runs, about a minute on 2 cores). Each finished run is kept in ``DIR/.runs/``
as it completes: ``--resume`` skips the runs already there with the same inputs, and a stopped sweep still writes
the CSV of the runs that finished
(only where no file of that name is there yet: the outputs of an earlier complete run stay).
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
    check_stream_loads,
    gavel_dir,
    names,
    openb_dir,
    output_dir,
    parse_seeds,
    parse_timed_traces,
    positive_int,
    real_list,
    study_parser,
)
from experiments.executors import (
    add_dask_option,
    add_resume_option,
    content_digest,
    run_and_write,
)
from experiments.outputs import printed
from fgdopt.frag import Workload
from fgdopt.hetero import load_throughputs
from fgdopt.hetero.interference import openb_interference
from fgdopt.model import GPU_MILLI
from fgdopt.plot import plot_interference
from fgdopt.policies.interference import InterferenceFGD
from fgdopt.timeline import openb_jobs, run_stats, simulate
from fgdopt.timeline.engine import FINISHED
from fgdopt.traces import load_openb, trace_files

AWARE = "fgd-interference"
POLICY_NAMES = ("fgd", "best-fit", "gpu-packing", "random", AWARE)
KEYS = ("trace", "seed", "load", "policy", "weight", "interference")
COLUMNS = (*KEYS, "measured", "sharing", "unfinished", "alloc_time_avg_pct", "frag_time_avg_pct", "mean_wait_s",
           "mean_jct_s", "p95_jct_s", "mean_jct_s_sharing", "p95_jct_s_sharing", "mean_slowdown", "p95_slowdown",
           "slowed_pct", "lost_gpu_pct", "jct_ratio", "mean_jct_ratio", "wall_s")


parse_policies = names(POLICY_NAMES, "policy")
parse_weights = real_list(0.0, strict=False)


def parse_switch(text: str) -> list[bool]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values or set(values) - {"on", "off"}:
        raise argparse.ArgumentTypeError(f"--interference takes on, off or on,off, got {text!r}")
    return [v == "on" for v in dict.fromkeys(values)]


def run_cell(trace: str, seed: int, load: float, policy: str, weight: float, interference: bool, n_jobs: int,
             data_dir: str | None = None, gavel_dir: str | None = None) -> dict:
    """One run: its row of interference.csv and the JCT of every job (for the with/without ratio)."""
    t0 = time.perf_counter()
    cluster, jobs = openb_jobs(trace, load, n_jobs, seed=seed, data_dir=data_dir)
    inter = openb_interference(cluster, len(jobs), load_throughputs(gavel_dir), seed)
    workload = Workload.from_tasks(jobs.tasks)                       # simulate's default M, built once
    pol = InterferenceFGD(workload, inter, weight, seed=seed) if policy == AWARE else policy
    result = simulate(cluster, jobs, pol, "backfill", seed=seed, workload=workload,
                      interference=inter if interference else None)
    stats = run_stats(result)
    tasks = jobs.tasks
    sharing = (tasks.num_gpu == 1) & (tasks.gpu_milli > 0) & (tasks.gpu_milli < GPU_MILLI) & jobs.measured
    done = sharing & (result.status == FINISHED) & (jobs.duration_s > 0)
    inflation = result.run_s[done] / jobs.duration_s[done]
    milli = tasks.gpu_milli[done].astype(np.float64)
    held = float((milli * result.run_s[done]).sum())
    lost = np.maximum(result.run_s[done] - jobs.duration_s[done], 0.0)         # GPU-time lost to slowdown, s
    cap = cluster.gpu_capacity_milli
    row = {"trace": trace, "seed": seed, "load": load, "policy": policy,
           "weight": weight if policy == AWARE else math.nan, "interference": "on" if interference else "off",
           "measured": stats["measured"], "sharing": int(sharing.sum()), "unfinished": stats["unfinished"],
           "alloc_time_avg_pct": stats["alloc_time_avg_pct"], "frag_time_avg_pct": 100 * stats["frag_time_avg"] / cap,
           "mean_wait_s": stats["mean_wait_s"], "mean_jct_s": stats["mean_jct_s"], "p95_jct_s": stats["p95_jct_s"],
           "mean_jct_s_sharing": stats["mean_jct_s_sharing"],
           "p95_jct_s_sharing": float(np.percentile(result.finish_s[done] - jobs.submit_s[done], 95))
           if done.any() else math.nan,
           "mean_slowdown": float(inflation.mean()) if done.any() else math.nan,
           "p95_slowdown": float(np.percentile(inflation, 95)) if done.any() else math.nan,
           "slowed_pct": 100 * float((inflation > 1 + 1e-9).mean()) if done.any() else math.nan,
           "lost_gpu_pct": 100 * float((milli * lost).sum()) / held if held > 0 else math.nan,
           "jct_ratio": math.nan, "mean_jct_ratio": math.nan, "wall_s": time.perf_counter() - t0}
    jct = np.where(sharing & (result.status == FINISHED), result.finish_s - jobs.submit_s, np.nan)
    return {"row": row, "jct": jct.astype(np.float64)}


def _pair_key(row: dict) -> tuple:
    return tuple(str(row[k]) for k in KEYS if k != "interference")


def table(results: list[dict]) -> pd.DataFrame:
    """The rows of ``results`` with the with/without JCT ratios filled in where both runs finished."""
    off = {_pair_key(r["row"]): r for r in results if r["row"]["interference"] == "off"}
    rows = []
    for r in results:
        row = dict(r["row"])
        twin = off.get(_pair_key(row))
        if row["interference"] == "on" and twin is not None:
            both = np.isfinite(r["jct"]) & np.isfinite(twin["jct"]) & (twin["jct"] > 0)
            if both.any():
                row["jct_ratio"] = float((r["jct"][both] / twin["jct"][both]).mean())
            row["mean_jct_ratio"] = row["mean_jct_s_sharing"] / twin["row"]["mean_jct_s_sharing"]
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def write_outputs(results: list[dict], out: Path) -> pd.DataFrame:
    """Write ``interference.csv`` (and ``interference.png``) of ``results`` into the folder ``out``."""
    frame = table(results)
    frame.to_csv(out / "interference.csv", index=False)
    if (frame["interference"] == "on").any():
        plot_interference(frame, out / "interference.png")
    return frame


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.interference", __doc__)
    parser.add_argument("--trace", type=parse_timed_traces, default=["default"],
                        help="openb variants with pod times (not multigpu*), comma-separated, a family or all "
                        "(default: default)")
    parser.add_argument("--load", type=real_list(0.0), default=[0.9, 1.1],
                        help="offered loads, fractions of GPU capacity (default: 0.9,1.1)")
    parser.add_argument("--policies", type=parse_policies, default=list(POLICY_NAMES),
                        help=f"comma-separated, of {', '.join(POLICY_NAMES)} (default: all)")
    parser.add_argument("--weights", type=parse_weights, default=[0.0, 0.5, 1.0, 2.0, 5.0, 20.0],
                        help=f"weights of {AWARE}'s slowdown term (default: 0,0.5,1,2,5,20)")
    parser.add_argument("--interference", type=parse_switch, default=[True, False],
                        help="run with the co-location slowdowns (on), without (off), or both (default: on,off)")
    parser.add_argument("--seeds", type=parse_seeds, default=[42], help="seeds, A-B or a,b (default: 42)")
    parser.add_argument("--n-jobs", type=positive_int, default=5000, help="stream jobs per run (default: 5000)")
    parser.add_argument("--quick", action="store_true", help="load 1.1, seed 42, 1000 jobs, fgd, best-fit, "
                        f"gpu-packing, {AWARE} at weights 0 and 1 (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--gavel-dir", type=gavel_dir, default=None,
                        help="Gavel's throughputs folder (default: $FGDOPT_GAVEL)")
    parser.add_argument("--output", type=output_dir, required=True, help="folder for interference.csv and .png")
    args = parser.parse_args(argv)
    args.data_dir, args.gavel_dir = (None if d is None else str(d) for d in (args.data_dir, args.gavel_dir))
    if args.quick:
        parser.quick(args, load=[1.1], seeds=[42], n_jobs=1000, policies=["fgd", "best-fit", "gpu-packing", AWARE],
                     weights=[0.0, 1.0])
    if AWARE not in args.policies and "weights" in parser.written():
        parser.error(f"--weights weighs {AWARE}'s slowdown term: give --policies with {AWARE} (the weights "
                     "would be ignored)")
    try:                                                   # a missing or broken data set stops here, in one line
        table = load_throughputs(args.gavel_dir)
        for trace in args.trace:
            load_openb(trace, args.data_dir)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    check_stream_loads(parser, args.trace, args.seeds, args.load, args.data_dir)
    variants = [(p, w) for p in args.policies for w in (args.weights if p == AWARE else [math.nan])]
    cells = [(t, s, ld, p, w, on, args.n_jobs, args.data_dir, args.gavel_dir)
             for t in args.trace for s in args.seeds for ld in args.load for p, w in variants
             for on in args.interference]
    keys = [(*c[:4], None if math.isnan(c[4]) else c[4], *c[5:7], content_digest(*trace_files(c[0], c[7])),
             content_digest(table.source)) for c in cells]           # the data by content, not by path
    frame, code = run_and_write("interference", run_cell, cells, args, keys, write_outputs, parser.prog)
    if code:
        return code
    show = [*KEYS, "alloc_time_avg_pct", "frag_time_avg_pct", "mean_jct_s", "mean_jct_s_sharing",
            "p95_jct_s_sharing", "mean_slowdown", "slowed_pct", "lost_gpu_pct", "jct_ratio"]
    print(printed(frame[show], digits=3))
    return 0


if __name__ == "__main__":
    from experiments.interference import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
