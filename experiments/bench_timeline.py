"""Speed of the time engine: openb jobs on the whole cluster, wall and CPU seconds, events per second.

Usage::

    python -m experiments.bench_timeline [--sizes 10000,20000,40000] [--load 0.9] [--policies fgd,best-fit]
        [--queue backfill] [--mechanisms none] [--seed 42] [--no-frag] [--gang-share 0.1] [--gang-workers 2-16]
        [--output DIR]

Each run is :func:`fgdopt.timeline.simulate` of :func:`fgdopt.timeline.sources.openb_jobs` (``--sizes`` stream
jobs, plus the services and the warm start) in this one process (one core), without optimum instants. Prints and
writes ``DIR/bench_timeline.csv``: ``stream_jobs, jobs, policy, queue, events, instants, wall_s, cpu_s,
events_per_s`` (events = finishes + submissions, per CPU second) and ``us_per_job`` (CPU microseconds per job), so
that linear growth reads as a constant column; ``mechanism`` follows ``queue`` when ``--mechanisms`` names another
than ``none`` (the eviction mechanisms, :mod:`fgdopt.timeline.preemption`).

``--gang-share F`` turns a share F of the stream's GPU jobs (drawn with ``--seed``) into gangs of ``workers`` drawn
uniformly from the counts ``--gang-workers`` lists (default ``2-16``), each part the job's shape and the gang's
duration the job's divided by ``workers``, so the offered GPU-time (and load) is the stream's; ``gang_share`` then
follows ``jobs`` in the CSV.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from experiments.args import (
    fraction,
    int_list,
    non_negative_int,
    openb_dir,
    output_dir,
    parse_policies,
    positive,
    study_parser,
)
from experiments.outputs import staged
from experiments.timeline import parse_mechanisms, parse_queues
from fgdopt.model import TaskSet
from fgdopt.timeline import JobSet, openb_jobs, simulate


def with_gangs(jobs: JobSet, share: float, workers: tuple[int, ...], seed: int) -> JobSet:
    """``jobs`` with a share ``share`` of its measured GPU jobs of finite duration made gangs (module docstring):
    their workers drawn uniformly from ``workers``, their durations divided by it (GPU-time unchanged)."""
    if share == 0:
        return jobs
    rng = np.random.default_rng(seed)
    eligible = np.flatnonzero(jobs.measured & (jobs.tasks.num_gpu > 0) & np.isfinite(jobs.duration_s))
    gangs = rng.choice(eligible, size=round(share * len(eligible)), replace=False)
    count = jobs.tasks.workers.copy()
    count[gangs] = rng.choice(np.asarray(workers, dtype=np.int64), len(gangs))
    t = jobs.tasks
    tasks = TaskSet(t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.gpu_spec, t.names, count)
    return JobSet(tasks, jobs.submit_s, jobs.duration_s / count, jobs.measured, jobs.window_s, jobs.priority)


def bench(sizes: list[int], load: float, policies: list[str], queues: list[str], seed: int, frag: bool = True,
          data_dir: str | None = None, mechanisms: tuple[str, ...] = ("none",), gang_share: float = 0.0,
          gang_workers: tuple[int, ...] = tuple(range(2, 17))) -> pd.DataFrame:
    """One row per (size, policy, queue, mechanism): see the module docstring."""
    rows = []
    for n in sizes:
        cluster, jobs = openb_jobs("default", load, n, seed=seed, data_dir=data_dir)
        jobs = with_gangs(jobs, gang_share, gang_workers, seed)
        share = {"gang_share": gang_share} if gang_share else {}
        for policy in policies:
            for queue in queues:
                for mechanism in mechanisms:
                    r = simulate(cluster, jobs, policy, queue, seed=seed, frag=frag, mechanism=mechanism)
                    named = {"mechanism": mechanism} if tuple(mechanisms) != ("none",) else {}
                    rows.append({"stream_jobs": n, "jobs": len(jobs), **share, "policy": policy, "queue": queue,
                                 **named, "events": r.events, "instants": r.instants, "wall_s": r.wall_s,
                                 "cpu_s": r.cpu_s, "events_per_s": r.events / r.cpu_s,
                                 "us_per_job": 1e6 * r.cpu_s / len(jobs)})
                    print(f"{n} stream jobs, {policy} / {queue} / {mechanism}: {r.cpu_s:.2f} s CPU", file=sys.stderr)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.bench_timeline", __doc__)
    parser.add_argument("--sizes", type=int_list(1), default=[10000, 20000, 40000],
                        help="stream jobs per run (default: 10000,20000,40000)")
    parser.add_argument("--load", type=positive, default=0.9, help="offered load (default: 0.9)")
    parser.add_argument("--policies", type=parse_policies, default=["fgd", "best-fit"],
                        help="placement policies: names or module:attribute specs (default: fgd,best-fit)")
    parser.add_argument("--queue", type=parse_queues, default=["backfill"],
                        help="queue disciplines, comma-separated (default: backfill)")
    parser.add_argument("--mechanisms", type=parse_mechanisms, default=["none"],
                        help="eviction mechanisms, comma-separated (default: none)")
    parser.add_argument("--seed", type=non_negative_int, default=42, help="stream and policy seed (default: 42)")
    parser.add_argument("--no-frag", action="store_true", help="do not record F(M) at every instant")
    parser.add_argument("--gang-share", type=fraction, default=0.0,
                        help="share of the stream's GPU jobs made gangs (default: 0)")
    parser.add_argument("--gang-workers", type=int_list(2), default=list(range(2, 17)),
                        help="a gang's workers, drawn uniformly from these counts (default: 2-16)")
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--output", type=output_dir, default=None, help="folder for bench_timeline.csv")
    args = parser.parse_args(argv)
    frame = bench(args.sizes, args.load, args.policies, args.queue, args.seed, not args.no_frag,
                  None if args.data_dir is None else str(args.data_dir), tuple(args.mechanisms), args.gang_share,
                  tuple(args.gang_workers))
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if args.output is not None:
        with staged(args.output) as tmp:
            frame.to_csv(tmp / "bench_timeline.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
