"""Speed of the time engine: openb jobs on the whole cluster, wall and CPU seconds, events per second.

Usage::

    python -m experiments.bench_timeline [--sizes 10000,20000,40000] [--load 0.9] [--policies fgd,best-fit]
        [--queue backfill] [--mechanisms none] [--seed 42] [--no-frag] [--output DIR]

Each run is :func:`fgdopt.timeline.simulate` of :func:`fgdopt.timeline.sources.openb_jobs` (``--sizes`` stream
jobs, plus the services and the warm start) in this one process (one core), without optimum instants. Prints and
writes ``DIR/bench_timeline.csv``: ``stream_jobs, jobs, policy, queue, events, instants, wall_s, cpu_s,
events_per_s`` (events = finishes + submissions, per CPU second) and ``us_per_job`` (CPU microseconds per job), so
that linear growth reads as a constant column; ``mechanism`` follows ``queue`` when ``--mechanisms`` names another
than ``none`` (the eviction mechanisms, :mod:`fgdopt.timeline.preemption`).
"""

from __future__ import annotations

import sys

import pandas as pd

from experiments.args import (
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
from fgdopt.timeline import openb_jobs, simulate


def bench(sizes: list[int], load: float, policies: list[str], queues: list[str], seed: int, frag: bool = True,
          data_dir: str | None = None, mechanisms: tuple[str, ...] = ("none",)) -> pd.DataFrame:
    """One row per (size, policy, queue, mechanism): see the module docstring."""
    rows = []
    for n in sizes:
        cluster, jobs = openb_jobs("default", load, n, seed=seed, data_dir=data_dir)
        for policy in policies:
            for queue in queues:
                for mechanism in mechanisms:
                    r = simulate(cluster, jobs, policy, queue, seed=seed, frag=frag, mechanism=mechanism)
                    named = {"mechanism": mechanism} if tuple(mechanisms) != ("none",) else {}
                    rows.append({"stream_jobs": n, "jobs": len(jobs), "policy": policy, "queue": queue, **named,
                                 "events": r.events, "instants": r.instants, "wall_s": r.wall_s, "cpu_s": r.cpu_s,
                                 "events_per_s": r.events / r.cpu_s, "us_per_job": 1e6 * r.cpu_s / len(jobs)})
                    print(f"{n} stream jobs, {policy} / {queue} / {mechanism}: {r.cpu_s:.2f} s CPU", file=sys.stderr)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.bench_timeline", __doc__)
    parser.add_argument("--sizes", type=int_list(1), default=[10000, 20000, 40000],
                        help="stream jobs per run (default: 10000,20000,40000)")
    parser.add_argument("--load", type=positive, default=0.9, help="offered load (default: 0.9)")
    parser.add_argument("--policies", type=parse_policies, default=["fgd", "best-fit"])
    parser.add_argument("--queue", type=parse_queues, default=["backfill"])
    parser.add_argument("--mechanisms", type=parse_mechanisms, default=["none"],
                        help="eviction mechanisms, comma-separated (default: none)")
    parser.add_argument("--seed", type=non_negative_int, default=42)
    parser.add_argument("--no-frag", action="store_true", help="do not record F(M) at every instant")
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--output", type=output_dir, default=None, help="folder for bench_timeline.csv")
    args = parser.parse_args(argv)
    frame = bench(args.sizes, args.load, args.policies, args.queue, args.seed, not args.no_frag,
                  None if args.data_dir is None else str(args.data_dir), tuple(args.mechanisms))
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if args.output is not None:
        with staged(args.output) as tmp:
            frame.to_csv(tmp / "bench_timeline.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
