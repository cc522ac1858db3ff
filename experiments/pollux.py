"""Pollux's simulator study: elastic jobs under pollux, optimus, tiresias and singularity on its workloads and loads.

Usage::

    python -m experiments.pollux [--policies pollux,optimus,tiresias,singularity] [--workloads 0.5,1.0,1.5,2.0 | DIR]
        [--names workload-1,...] [--seeds 0] [--generations 100] [--pollux-dir DIR]
        [--jobs N | --dask ADDRESS]
        [--resume] [--quick] --output DIR

Each run is one workload file of Pollux's simulator (``petuum/adaptdl`` branch ``osdi21-artifact`` at ``c793c708``,
``simulator/``; found in ``--pollux-dir``, else ``$FGDOPT_POLLUX``) on its cluster (16 nodes of 4 GPUs), 60 s
intervals and 30 s restart delay, under one planner (:mod:`fgdopt.elastic`): ``tiresias``, ``optimus`` and
``singularity`` (not in Pollux's simulator: ``tiresias``'s priorities with jobs shrunk by time-slicing their replicas
instead of waiting, :mod:`fgdopt.elastic.singularity`) are deterministic (run once, with the first seed), ``pollux``
runs once per ``--seeds`` value (its genetic search
seeded; ``--generations`` per interval, Pollux's 100). Runs are on fgdopt's event engine, the planner's interval
planning a round policy of its round loop (:mod:`fgdopt.elastic.rounds`; the same JCTs as Pollux's interval loop,
which the tests keep as an oracle). ``--workloads``
takes Pollux's job loads (folders ``workloads-0.5``, ``workloads``, ``workloads-1.5``, ``workloads-2.0``) or a
folder of workload files.

Writes ``DIR/pollux.csv``, one row per run: ``workload`` (file name), ``load``, ``policy``, ``seed``, ``jobs``,
``mean_jct_s``, ``p99_jct_s``, ``makespan_s``, ``utilization`` (GPU time held over capacity until the makespan),
``restarts``, ``wall_s``, ``cpu_s`` (of the run), and where the authors' raw results are in the folder
(``results-jobload/<policy>-<load>/summary.json``): ``ref_mean_jct_s`` and ``ref_err_pct`` (ours over theirs, %);
``DIR/pollux_jobs.csv`` (the run's keys and ``name, submit_s, finish_s, jct_s, restarts, gpu_s`` per job); and
``DIR/pollux.png`` (mean JCT and makespan against job load, side by side, one line per policy, the spread over seeds
as bars, the authors' mean JCT as dashed lines). ``--quick``: workload-6 at load 1.0, every policy, pollux at 10
generations (35 CPU seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import existing_dir, names, output_dir, parse_seeds, positive_int, study_parser
from experiments.executors import (
    add_dask_option,
    add_resume_option,
    content_digest,
    run_and_write,
)
from experiments.outputs import printed, write_runs
from fgdopt.datasets import DataNotFound
from fgdopt.elastic.applications import load_applications, pollux_dir
from fgdopt.elastic.jobs import GPUS, LOADS, NODES, read_workload, workload_files
from fgdopt.elastic.planners import PLANNERS, make_jobs, make_planner
from fgdopt.elastic.pollux import GENERATIONS, PolluxPlanner
from fgdopt.elastic.results import ElasticResult
from fgdopt.elastic.rounds import simulate_elastic

KEYS = ("workload", "load", "policy", "seed")
COLUMNS = (*KEYS, "jobs", "mean_jct_s", "p99_jct_s", "makespan_s", "utilization", "restarts", "wall_s", "cpu_s",
           "ref_mean_jct_s", "ref_err_pct")
_APPS: dict = {}


parse_policies = names(PLANNERS, "policy")


def parse_workloads(text: str) -> list[float] | Path:
    """``--workloads``: Pollux's job loads, comma-separated (numbers; :data:`~fgdopt.elastic.jobs.LOADS` checks
    them), or one folder of workload files."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        loads = [float(p) for p in parts]
    except ValueError:
        loads = None
    if loads:
        return loads
    if loads is None and len(parts) == 1:
        return Path(parts[0])
    raise argparse.ArgumentTypeError(f"expected Pollux's job loads ({', '.join(map(str, LOADS))}) separated by "
                                     f"commas, or one folder of workload files, got {text!r}")


def reference(root: str | None, policy: str, load: float, workload: str) -> float:
    """The authors' mean JCT of a run (``results-jobload/<policy>-<load>/summary.json``), NaN where absent."""
    path = pollux_dir(root) / "results-jobload" / f"{policy}-{load}" / "summary.json"
    try:
        return float(json.loads(path.read_text())["avgs"][workload])
    except (OSError, KeyError, ValueError):
        return math.nan


def run_cell(path: str, load: float, policy: str, seed: int, generations: int, root: str | None = None) -> dict:
    """One run (on fgdopt's engine, :func:`fgdopt.elastic.rounds.simulate_elastic`): its row of pollux.csv and its
    per-job frame (as records)."""
    t0, c0 = time.perf_counter(), time.process_time()
    if root not in _APPS:
        _APPS[root] = load_applications(root)
    frame = read_workload(path)
    planner = PolluxPlanner(seed=seed, generations=generations) if policy == "pollux" else make_planner(policy)
    elastic = make_jobs(frame, _APPS[root], policy)
    run, peak = simulate_elastic(elastic, planner)
    result = ElasticResult(elastic, policy, run.series, peak, (GPUS,) * NODES, run.wall_s, run.cpu_s, run.finish_s)
    stats = result.stats()
    name = Path(path).stem
    ref = reference(root, policy, load, name)
    jobs = result.job_frame()
    row = {"workload": name, "load": load, "policy": policy, "seed": seed, "jobs": len(jobs), **stats,
           "restarts": int(jobs.restarts.sum()), "wall_s": time.perf_counter() - t0,
           "cpu_s": time.process_time() - c0, "ref_mean_jct_s": ref,
           "ref_err_pct": 100 * (stats["mean_jct_s"] / ref - 1) if ref == ref else math.nan}
    return {"row": row, "jobs": jobs.assign(**{k: row[k] for k in KEYS}).to_dict("records")}


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Mean JCT and makespan (hours) against job load, side by side, per policy: each workload's mean over its
    seeds, averaged over the workloads run at that load; the bars span the same average of each workload's least and
    largest value over its seeds (the spread over seeds; none for one seed). The authors' mean JCTs (dashed) are
    averaged over the same workloads. The policies are drawn side by side around each load (a small shift), so that
    two with the same value both show."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    loads = sorted(frame["load"].unique())
    n = frame["policy"].nunique()
    dodge = 0.04 * (min(np.diff(loads)) if len(loads) > 1 else 1.0)   # side by side, so equal values stay visible
    for ax, column, label in zip(axes, ("mean_jct_s", "makespan_s"), ("mean JCT (h)", "makespan (h)"), strict=True):
        for k, (policy, rows) in enumerate(frame.groupby("policy", sort=False)):
            per = rows.groupby(["load", "workload"]).agg(mean=(column, "mean"), lo=(column, "min"),
                                                         hi=(column, "max"), ref=("ref_mean_jct_s", "mean"))
            by = per.groupby("load").mean() / 3600
            color, x = f"C{k}", by.index + (k - (n - 1) / 2) * dodge
            ax.errorbar(x, by["mean"], yerr=[by["mean"] - by["lo"], by["hi"] - by["mean"]], fmt="o-",
                        color=color, capsize=3, label=f"{policy} (fgdopt)")
            if column == "mean_jct_s" and by["ref"].notna().any():
                ax.plot(x, by["ref"], "x--", color=color, label=f"{policy} (Pollux's results)")
        ax.set_xticks(loads)
        ax.set_xlim(loads[0] - 0.25, loads[-1] + 0.25)
        ax.set_xlabel("relative job load")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(results: list[dict], out: Path) -> pd.DataFrame:
    """``pollux.csv``, ``pollux_jobs.csv`` and ``pollux.png`` of ``results`` into the folder ``out``."""
    return write_runs(results, out, "pollux", COLUMNS, KEYS, plot)


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.pollux", __doc__)
    parser.add_argument("--policies", type=parse_policies, default=list(PLANNERS),
                        help=f"comma-separated, of {', '.join(PLANNERS)} (default: all)")
    parser.add_argument("--workloads", type=parse_workloads, default=list(LOADS),
                        help="Pollux's job loads (0.5,1.0,1.5,2.0), comma-separated, or a folder of workload files "
                        "(default: all four loads)")
    parser.add_argument("--names", default=None, help="only these workload files (names without .csv, "
                        "comma-separated; default: every file)")
    parser.add_argument("--seeds", type=parse_seeds, default=[0], help="seeds of pollux's search (default: 0)")
    parser.add_argument("--generations", type=positive_int, default=GENERATIONS,
                        help=f"pollux's generations per interval (default: {GENERATIONS}, Pollux's)")
    parser.add_argument("--pollux-dir", type=existing_dir, default=None,
                        help="Pollux's simulator folder (default: $FGDOPT_POLLUX)")
    parser.add_argument("--quick", action="store_true", help="workload-6 at load 1.0, pollux at 10 generations"
                                                             " (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--output", type=output_dir, required=True, help="folder for pollux.csv, pollux_jobs.csv, .png")
    args = parser.parse_args(argv)
    if args.quick:
        parser.quick(args, workloads=[1.0], names="workload-6", generations=10)
    if "generations" in parser.written() and "pollux" not in args.policies:
        parser.error("--generations: only pollux searches by generations, and --policies leaves it out")
    try:                                                   # missing data or a bad file stop here, in one line
        if isinstance(args.workloads, Path):
            sets = [workload_files(args.workloads)]
        else:
            sets = [workload_files(load, args.pollux_dir) for load in args.workloads]
        wanted = None if args.names is None else [n.strip() for n in args.names.split(",") if n.strip()]
        files = [(load, f) for load, fs in sets for f in fs if wanted is None or f.stem in wanted]
        if not files:
            raise ValueError(f"--names: none of {wanted} among the workload files")
        apps = load_applications(args.pollux_dir)
        for _, f in files:
            frame = read_workload(f)
            for policy in args.policies:                   # what the policy keeps of each job, it can run
                try:
                    make_jobs(frame, apps, policy)
                except ValueError as exc:
                    raise ValueError(f"{f}: {exc}") from None
    except DataNotFound as exc:                            # the folder of --pollux-dir, else of the variable
        parser.error(f"--pollux-dir: {exc}" if args.pollux_dir is not None else str(exc))
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    root = None if args.pollux_dir is None else str(Path(args.pollux_dir).resolve())
    cells = [(str(f.resolve()), load, p, s, args.generations if p == "pollux" else 0, root)
             for load, f in files for p in args.policies for s in (args.seeds if p == "pollux" else args.seeds[:1])]
    traces = content_digest(*sorted(p for p in (pollux_dir(root) / "traces").rglob("*") if p.is_file()))
    keys = [(c[0] and content_digest(c[0]), *c[1:5], traces) for c in cells]
    frame, code = run_and_write("pollux", run_cell, cells, args, keys, write_outputs, parser.prog)
    if code:
        return code
    print(printed(frame, digits=3))
    return 0



if __name__ == "__main__":
    from experiments.pollux import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
