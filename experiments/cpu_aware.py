"""CPU-aware allocation on openb: does lending idle CPU cores by Synergy's profiles change allocation, F(M) and JCT?

Usage::

    python -m experiments.cpu_aware [--trace default] [--load 0.9,1.1] [--seeds 42] [--policies fgd,best-fit]
        [--rules request,proportional,synergy] [--n-jobs 5000] [--profiles PATH]
        [--jobs N | --dask ADDRESS] [--resume] [--quick] --output DIR

Each (trace, seed, load) is one job set of :func:`fgdopt.timeline.sources.openb_jobs` (services, a stationary warm
start, ``--n-jobs`` Poisson stream jobs at offered load ``--load``, measured after a 10% warm-up) on the openb
cluster, with the backfill queue. Every GPU job gets one of Synergy's models, uniformly at random (seeded by the
seed; :func:`fgdopt.cpu_aware.openb_cpu_profiles`), whose profile gives its speed as a function of its CPU cores per
GPU. Jobs reserve what their pods request (the one feasibility rule; what F(M) measures); the mechanism
:class:`fgdopt.cpu_aware.CpuAware` lends each node's unrequested cores to its GPU jobs by one of its ``--rules``:
``request`` (nothing lent: the openb baseline, speed 1), ``proportional`` (up to the job's GPU share of the node's
cores, Synergy's ``+fair``) or ``synergy`` (up to what its profile benefits from, one core at a time to the largest
speed gain). ``--profiles``: Synergy's profiles (a JSON file or a checkout; default the committed copy,
:func:`fgdopt.synergy.profiles.load_profiles`).

Writes ``DIR/cpu_aware.csv``, one row per run: the keys (``trace, seed, load, policy, rule``), ``measured``,
``unfinished``; from :func:`fgdopt.timeline.metrics.run_stats`: ``alloc_time_avg_pct`` (time-averaged allocated GPUs,
% of capacity, over the window), ``frag_time_avg_pct`` (F(M), same), ``mean_wait_s``, ``mean_jct_s``, ``p95_jct_s``
(all measured jobs); ``mean_speed`` (measured finished GPU jobs: work over the seconds they ran with progress),
``lent_cpu_pct`` (cores lent, time-averaged over the run, % of the cluster's cores), ``jct_ratio`` (mean over the
measured jobs finished in both runs of JCT over JCT under ``request``, same trace, seed, load and policy), ``cpu_s``
(CPU seconds of the simulation) and ``wall_s``. ``DIR/cpu_aware.png``: per load, mean JCT and F(M) by rule, one line
per policy, means over seeds (:func:`fgdopt.plot.plot_cpu_aware`). Prints the table.

``--quick``: load 1.1, seed 42, 1,000 stream jobs, fgd, the three rules (3 runs, well under a minute on 2 cores).
Each finished run is kept in ``DIR/.runs/`` as it completes: ``--resume`` skips the runs already there with the same
inputs, and a stopped sweep still writes the CSV of the runs that finished (only where no file of that name is there
yet).
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
    names,
    openb_dir,
    output_dir,
    parse_policies,
    parse_seeds,
    parse_timed_traces,
    positive_int,
    real_list,
    study_parser,
)
from experiments.executors import add_dask_option, add_resume_option, content_digest, policy_digest, run_and_write
from experiments.outputs import printed
from fgdopt.cpu_aware import RULES, CpuAware, openb_cpu_profiles
from fgdopt.frag import Workload
from fgdopt.plot import plot_cpu_aware
from fgdopt.synergy.profiles import ProfileError, load_profiles
from fgdopt.timeline import openb_jobs, run_stats, simulate
from fgdopt.timeline.engine import FINISHED
from fgdopt.traces import load_openb, trace_files

KEYS = ("trace", "seed", "load", "policy", "rule")
COLUMNS = (*KEYS, "measured", "unfinished", "alloc_time_avg_pct", "frag_time_avg_pct", "mean_wait_s", "mean_jct_s",
           "p95_jct_s", "mean_speed", "lent_cpu_pct", "jct_ratio", "cpu_s", "wall_s")

parse_rules = names(RULES, "rule")


def existing_path(text: str) -> Path:
    """The type of ``--profiles``: a file or folder that exists."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} is not found; expected a profile file or a Synergy checkout")
    return path


def profiles_digest(source: str) -> str | None:
    """The content digest of a profile source (a JSON file, or the model files of a folder)."""
    path = Path(source)
    return content_digest(*sorted(path.glob("*_*.py"))) if path.is_dir() else content_digest(path)


def run_cell(trace: str, seed: int, load: float, policy: str, rule: str, n_jobs: int, data_dir: str | None = None,
             profiles: str | None = None) -> dict:
    """One run: its row of cpu_aware.csv and every job's JCT (s; NaN unless measured and finished)."""
    t0 = time.perf_counter()
    cluster, jobs = openb_jobs(trace, load, n_jobs, seed=seed, data_dir=data_dir)
    prof = openb_cpu_profiles(jobs.tasks, load_profiles(profiles), seed)
    mech = CpuAware(prof, rule, cluster)
    result = simulate(cluster, jobs, policy, "backfill", seed=seed, workload=Workload.from_tasks(jobs.tasks),
                      mechanism=mech)
    stats = run_stats(result)
    done = jobs.measured & (result.status == FINISHED)
    gpu_done = done & (jobs.tasks.gpu_demand > 0) & (result.busy_s > 0)
    end = float(result.series["time_s"].iloc[-1]) if len(result.series) else 0.0
    cores = cluster.cpu_milli.sum() / 1000.0
    row = {"trace": trace, "seed": seed, "load": load, "policy": policy, "rule": rule,
           "measured": stats["measured"], "unfinished": stats["unfinished"],
           "alloc_time_avg_pct": stats["alloc_time_avg_pct"],
           "frag_time_avg_pct": 100 * stats["frag_time_avg"] / cluster.gpu_capacity_milli,
           "mean_wait_s": stats["mean_wait_s"], "mean_jct_s": stats["mean_jct_s"], "p95_jct_s": stats["p95_jct_s"],
           "mean_speed": float((jobs.duration_s[gpu_done] / result.busy_s[gpu_done]).mean())
           if gpu_done.any() else math.nan,
           "lent_cpu_pct": 100 * mech.lent_core_s / (end * cores) if end > 0 else 0.0,
           "jct_ratio": math.nan, "cpu_s": result.cpu_s, "wall_s": time.perf_counter() - t0}
    jct = np.where(done, result.finish_s - jobs.submit_s, np.nan)
    return {"row": row, "jct": jct.astype(np.float64)}


def table(results: list[dict]) -> pd.DataFrame:
    """The rows of ``results`` with ``jct_ratio`` filled in where the same cell ran under ``request``."""
    def base(row: dict) -> tuple:
        return tuple(str(row[k]) for k in KEYS if k != "rule")

    ref = {base(r["row"]): r["jct"] for r in results if r["row"]["rule"] == "request"}
    rows = []
    for r in results:
        row = dict(r["row"])
        twin = ref.get(base(row))
        if twin is not None:
            both = np.isfinite(r["jct"]) & np.isfinite(twin) & (twin > 0)
            if both.any():
                row["jct_ratio"] = float((r["jct"][both] / twin[both]).mean())
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def write_outputs(results: list[dict], out) -> pd.DataFrame:
    """Write ``cpu_aware.csv`` and ``cpu_aware.png`` of ``results`` into the folder ``out``."""
    frame = table(results)
    frame.to_csv(out / "cpu_aware.csv", index=False)
    if len(frame):
        plot_cpu_aware(frame, out / "cpu_aware.png")
    return frame


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.cpu_aware", __doc__)
    parser.add_argument("--trace", type=parse_timed_traces, default=["default"],
                        help="openb variants with pod times (not multigpu*), comma-separated, a family or all "
                        "(default: default)")
    parser.add_argument("--load", type=real_list(0.0), default=[0.9, 1.1],
                        help="offered loads, fractions of GPU capacity, > 0 (default: 0.9,1.1)")
    parser.add_argument("--policies", type=parse_policies, default=["fgd", "best-fit"],
                        help="placement policies, comma-separated (default: fgd,best-fit)")
    parser.add_argument("--rules", type=parse_rules, default=list(RULES),
                        help=f"CPU lending rules, of {', '.join(RULES)} (default: all)")
    parser.add_argument("--seeds", type=parse_seeds, default=[42], help="seeds, A-B or a,b (default: 42)")
    parser.add_argument("--n-jobs", type=positive_int, default=5000, help="stream jobs per run (default: 5000)")
    parser.add_argument("--profiles", type=existing_path, default=None,
                        help="Synergy's profiles: a JSON file or a checkout (default: the committed copy)")
    parser.add_argument("--quick", action="store_true", help="load 1.1, seed 42, 1000 jobs, fgd, the three rules"
                                                             " (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--output", type=output_dir, required=True, help="folder for cpu_aware.csv and .png")
    args = parser.parse_args(argv)
    args.data_dir = None if args.data_dir is None else str(args.data_dir)
    args.profiles = None if args.profiles is None else str(args.profiles)
    if args.quick:
        parser.quick(args, load=[1.1], seeds=[42], n_jobs=1000, policies=["fgd"], rules=list(RULES))
    try:                                                   # a missing or broken data set stops here, in one line
        profiles = load_profiles(args.profiles)
        for trace in args.trace:
            load_openb(trace, args.data_dir)
    except (OSError, ValueError, ProfileError) as exc:
        parser.error(str(exc))
    check_stream_loads(parser, args.trace, args.seeds, args.load, args.data_dir)
    cells = [(t, s, ld, p, r, args.n_jobs, args.data_dir, args.profiles)
             for t in args.trace for s in args.seeds for ld in args.load for p in args.policies for r in args.rules]
    digest = profiles_digest(profiles.source)
    keys = [(*c[:3], policy_digest(c[3]), *c[4:6], content_digest(*trace_files(c[0], c[6])), digest)
            for c in cells]                                   # a policy spec by its module's content too
    frame, code = run_and_write("cpu_aware", run_cell, cells, args, keys, write_outputs, parser.prog)
    if code:
        return code
    show = [*KEYS, "alloc_time_avg_pct", "frag_time_avg_pct", "mean_jct_s", "p95_jct_s", "mean_speed",
            "lent_cpu_pct", "jct_ratio"]
    print(printed(frame[show], digits=3))
    return 0


if __name__ == "__main__":
    from experiments.cpu_aware import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
