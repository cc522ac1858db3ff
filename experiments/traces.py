"""Converted traces side by side: their statistics, and the time engine on each with the wait of gangs against
single-node jobs.

Usage::

    python -m experiments.traces [--workload DIR ...] [--policies fgd,best-fit,random] [--queue fifo,backfill] \\
        [--seeds 42] [--max-jobs 20000] [--nodes N] [--gang-reserve-s S] [--gang-slowdown X] \\
        [--jobs N | --dask ADDRESS] [--resume] [--quick] --output DIR

Each ``--workload DIR`` is the output folder of ``python -m experiments.convert`` (its ``workload.csv`` and, where
the trace lists its nodes, ``cluster.json``); without one, the study converts the seven small fixtures of the
converters (``tests/data/traces``, :data:`FIXTURES`). For each workload it counts jobs and GPU-hours by shape
and gang size (:mod:`fgdopt.workloads.stats`), then runs :func:`fgdopt.timeline.simulate` on its first
``--max-jobs`` jobs (by submission) for every (seed, policy, queue), gangs included (each part on one node, all
parts started and freed together; ``--gang-reserve-s`` and ``--gang-slowdown`` as in :func:`~fgdopt.timeline.simulate`).
A workload without ``cluster.json`` runs on ``--nodes`` nodes of 8 GPUs, or of as many as its largest worker needs up
to 16 (default: as many nodes as carry its GPU-hours over its submission span at load 1, at most one per GPU
worker, and at least its largest gang and 2); each such node has the CPU and memory of the largest worker (at
least 128 cores and 1 TiB), so that only GPUs bind. Jobs whose worker needs more GPUs than a node of the data model
holds (:data:`~fgdopt.model.MAX_GPUS_PER_NODE`, 16) are left out of the runs (counted as ``not_run``); a gang whose
parts do not fit the empty cluster together is ``rejected`` with reason ``workers``.

Writes to ``DIR``: ``traces_stats.csv`` (workload, shape, class, workers, jobs, GPU-hours), ``traces.csv`` (one row
per run: workload, seed, policy, queue, the jobs run and not run, rejected, finished, mean wait of single-node jobs
and of gangs, mean JCT, makespan, CPU seconds; a mean is empty where no such job started or finished),
``traces_jobs.csv`` (per job: workload, run keys, name, workers, class, status, reason, submit, start, wait) and
``traces.png`` (GPU-hours by class, mean wait by class per policy and queue); prints the statistics, the run table
and one line per rejection reason. ``--quick``: fgd and best-fit, fifo and backfill, seed 42, 2,000 jobs.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import (
    add_gang_options,
    output_dir,
    parse_policies,
    parse_seeds,
    positive_int,
    study_parser,
)
from experiments.executors import add_dask_option, add_resume_option, content_digest, policy_digest, run_and_write
from experiments.outputs import printed
from experiments.timeline import load_cluster, parse_queues
from fgdopt.model import MAX_GPUS_PER_NODE, Cluster
from fgdopt.plot import plot_traces
from fgdopt.timeline import simulate
from fgdopt.timeline.admission import reason_lines
from fgdopt.timeline.jobs import jobs_from_frame
from fgdopt.workloads import stats
from fgdopt.workloads.convert import convert
from fgdopt.workloads.format import read_workload_frame

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "traces"
FIXTURES = {"helios": ["helios/cluster_log.csv"], "acme": ["acme/trace_kalos.csv"],
            "philly": ["philly/cluster_job_log", "philly/cluster_machine_list"],
            "pai2020": ["pai2020/pai_job_table.csv", "pai2020/pai_task_table.csv", "pai2020/pai_machine_spec.csv"],
            "spot2026": ["spot2026/job_info_df.csv", "spot2026/node_info_df.csv"], "swf": ["swf/gpus.swf"],
            "openb": ["openb/openb_pod_list_fixture.csv", "openb/openb_node_list_gpu_node.csv"]}
"""The converters' fixtures (format -> files under ``tests/data/traces``): the study's default workloads."""
OUTPUTS = ("traces_stats.csv", "traces.csv", "traces_jobs.csv", "traces.png")
RUN_COLUMNS = ("workload", "seed", "policy", "queue", "jobs_run", "not_run", "rejected", "finished",
               "mean_wait_single_s", "mean_wait_gang_s", "mean_jct_s", "makespan_s", "cpu_s")
JOB_COLUMNS = ("workload", "seed", "policy", "queue", "name", "workers", "class", "status", "reason", "submit_s",
               "start_s", "wait_s")


def load(source: str) -> tuple[pd.DataFrame, Cluster | None]:
    """The jobs (open format) and the cluster (None: the trace lists no nodes) of ``source``: a fixture's format
    name, or a folder written by ``python -m experiments.convert``.

    Raises
    ------
    OSError, ValueError : one line naming the file (``workload.csv``, ``cluster.json``), the row and the field.
    """
    if source in FIXTURES:
        conv = convert(source, [FIXTURE_DIR / p for p in FIXTURES[source]])
        return conv.jobs, None if conv.nodes is None else Cluster.from_records(conv.nodes)
    folder = Path(source)
    cluster = load_cluster(folder / "cluster.json") if (folder / "cluster.json").is_file() else None
    return read_workload_frame(folder / "workload.csv"), cluster


DEFAULT_NODE_GPUS = 8
"""GPUs of a node of the default cluster, unless a worker needs more (then that many, up to
:data:`~fgdopt.model.MAX_GPUS_PER_NODE`)."""


def default_cluster(frame: pd.DataFrame, nodes: int | None) -> Cluster:
    """``nodes`` nodes of :data:`DEFAULT_NODE_GPUS` GPUs, or of the largest runnable worker's GPUs if more (default
    count: the GPU-hours over the submission span at load 1, but no more than one node per runnable GPU worker (they
    then all run at once: jobs that never end, or long jobs submitted at one instant, asked for millions), at least
    the largest gang and 2), each with the CPU and memory of the largest worker and at least 128 cores and 1 TiB."""
    ok = runnable(frame)
    largest = frame["num_gpu"].to_numpy()[ok]
    gpus = int(max(DEFAULT_NODE_GPUS, largest.max(initial=0)))
    if nodes is None:
        info = stats.summary(frame)
        span_h = max(info["span_s"], 1.0) / 3600
        workers = int(frame["workers"].to_numpy()[ok & (frame["num_gpu"].to_numpy() > 0)].sum())
        nodes = max(2, info["max_workers"], math.ceil(min(info["gpu_hours"] / span_h / gpus, workers)))
    cpu = max(128_000, int(frame["cpu_milli"].max()))
    mem = max(1 << 20, int(frame["memory_mib"].max()))
    return Cluster([cpu] * nodes, [mem] * nodes, [gpus] * nodes, ["GPU"] * nodes,
                   tuple(f"node-{i}" for i in range(nodes)))


def runnable(frame: pd.DataFrame) -> np.ndarray:
    """The jobs the engine can hold: a worker of at most :data:`~fgdopt.model.MAX_GPUS_PER_NODE` GPUs (a gang's
    parts each on one node)."""
    return frame["num_gpu"].to_numpy() <= MAX_GPUS_PER_NODE


def run_cell(name: str, source: str, seed: int, policy: str, queue: str, max_jobs: int, nodes: int | None,
             gang_reserve_s: float = math.inf, gang_slowdown: float = 1.0) -> dict:
    """One run (module docstring): the row of ``traces.csv`` and the per-job rows."""
    frame, given = load(source)
    frame = frame.iloc[np.argsort(frame["submit_s"].to_numpy(), kind="stable")[:max_jobs]].reset_index(drop=True)
    ok = runnable(frame)
    sim = frame[ok].reset_index(drop=True)
    cluster = given if given is not None else default_cluster(frame, nodes)
    keys = {"workload": name, "seed": seed, "policy": policy, "queue": queue}
    if sim.empty:
        return {"row": {**keys, "jobs_run": 0, "not_run": int((~ok).sum())}, "jobs": pd.DataFrame()}
    result = simulate(cluster, jobs_from_frame(sim, name), policy, queue, seed=seed, frag=False,
                      gang_reserve_s=gang_reserve_s, gang_slowdown=gang_slowdown)
    jobs = result.job_frame()
    jobs = jobs.assign(**{"class": stats.job_class(sim)}, **keys)
    wait = jobs["wait_s"]
    row = {**keys, "jobs_run": len(sim), "not_run": int((~ok).sum()),
           "rejected": int((jobs.status == "rejected").sum()), "finished": int((jobs.status == "finished").sum()),
           "mean_wait_single_s": float(wait[jobs["class"] == "single"].mean()),
           "mean_wait_gang_s": float(wait[jobs["class"] == "gang"].mean()),
           "mean_jct_s": float(jobs["jct_s"].mean()), "makespan_s": float(np.nanmax(result.finish_s, initial=0.0)),
           "cpu_s": result.cpu_s}
    return {"row": row, "jobs": jobs[list(JOB_COLUMNS)]}


def write_outputs(results: list[dict], shape_rows: pd.DataFrame, out: Path) -> pd.DataFrame:
    """The CSVs and the figure into the folder ``out``; returns the run table."""
    shape_rows.to_csv(out / "traces_stats.csv", index=False)
    runs = pd.DataFrame([r["row"] for r in results], columns=list(RUN_COLUMNS))
    runs.to_csv(out / "traces.csv", index=False)
    parts = [r["jobs"] for r in results if len(r["jobs"])]
    jobs = pd.concat(parts) if parts else pd.DataFrame(columns=list(JOB_COLUMNS))
    jobs.to_csv(out / "traces_jobs.csv", index=False)
    plot_traces(shape_rows, runs, out / "traces.png")
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.traces", __doc__)
    parser.add_argument("--workload", nargs="+", default=None, metavar="DIR",
                        help="folders written by python -m experiments.convert (default: the converters' fixtures)")
    parser.add_argument("--policies", type=parse_policies, default=["fgd", "best-fit", "random"],
                        help="placement policies (default: fgd,best-fit,random)")
    parser.add_argument("--queue", type=parse_queues, default=["fifo", "backfill"],
                        help="queue disciplines (default: fifo,backfill)")
    parser.add_argument("--seeds", type=parse_seeds, default=[42], help="seeds, A-B or a,b (default: 42)")
    parser.add_argument("--max-jobs", type=positive_int, default=20_000,
                        help="jobs per workload, the first by submission (default: 20000)")
    parser.add_argument("--nodes", type=positive_int, default=None,
                        help="nodes of a workload without cluster.json (default: from its GPU-hours, docstring)")
    add_gang_options(parser)
    parser.add_argument("--quick", action="store_true", help="fgd and best-fit, fifo and backfill, seed 42, "
                        "2000 jobs (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--output", type=output_dir, required=True, help="folder for the CSVs and traces.png")
    args = parser.parse_args(argv)
    if args.quick:
        parser.quick(args, policies=["fgd", "best-fit"], queue=["fifo", "backfill"], seeds=[42], max_jobs=2000)
    sources = {Path(w).name: str(w) for w in args.workload} if args.workload else {f: f for f in FIXTURES}
    if args.workload and len(sources) != len(args.workload):
        parser.error("argument --workload: two folders of the same name; name each workload folder apart")
    shape_rows, lines, listed = [], [], 0
    for name, source in sources.items():                 # bad folders stop here, in one line, before any run
        try:
            frame, cluster = load(source)
        except (OSError, ValueError) as exc:
            parser.error(f"argument --workload: {source}: {exc}")
        listed += cluster is not None
        info = stats.summary(frame)
        shape_rows.append(stats.shapes(frame).assign(workload=name))
        lines.append(f"{name}: {info['jobs']} jobs, {info['gangs']} gangs (up to {info['max_workers']} workers), "
                     f"{info['gpu_hours']:.1f} GPU-hours ({info['gang_gpu_hours']:.1f} in gangs), "
                     f"{info['users']} users")
    if args.nodes is not None and listed == len(sources):
        parser.error("argument --nodes: it sizes the cluster of a workload without cluster.json, and every workload "
                     "lists its nodes")
    shape_frame = pd.concat(shape_rows)[["workload", *stats.SHAPE_COLUMNS]]
    cells = [(n, src, s, p, q, args.max_jobs, args.nodes, args.gang_reserve_s, args.gang_slowdown)
             for n, src in sources.items() for s in args.seeds for p in args.policies for q in args.queue]
    keys = [(n, s, policy_digest(p), policy_digest(q), m, k, r, x,
             content_digest(*(FIXTURE_DIR / f for f in FIXTURES[src])) if src in FIXTURES else
             content_digest(*(f for f in (Path(src) / "workload.csv", Path(src) / "cluster.json") if f.is_file())))
            for n, src, s, p, q, m, k, r, x in cells]
    runs, code = run_and_write("traces", run_cell, cells, args, keys,
                               lambda done, tmp: write_outputs(done, shape_frame, tmp), parser.prog)
    if code:
        return code
    print("\n".join(lines))
    print(printed(runs, digits=1))
    jobs = pd.read_csv(args.output / "traces_jobs.csv", keep_default_na=False)
    first = jobs.drop_duplicates(["workload", "name"])              # rejection depends on the shapes only
    for name, group in first.groupby("workload", sort=False):
        for line in reason_lines(group["reason"].to_numpy()):
            print(f"{name}: {line}")
    if (runs["not_run"] > 0).any():
        print(f"workers of more than {MAX_GPUS_PER_NODE} GPUs (the most a node holds) are counted above but not run")
    return 0


if __name__ == "__main__":
    from experiments.traces import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
