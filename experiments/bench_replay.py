"""Replay throughput per policy: ``python -m experiments.bench_replay [--policies ...] [--repeats R] [--output DIR]``.

Replays the openb trace (default variant) ``--repeats`` times (default 1) per policy with one seed and prints,
per run, wall time, the process's CPU time and tasks/s (placement plus the 131 curve samples); ``--output``
also writes them to ``DIR/bench_replay.csv``. Wall time depends on the
machine and its load; CPU time much less so (a replay is single-threaded), which makes it the figure
to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from experiments.openb import parse_policies
from fgdopt.frag import Workload
from fgdopt.policies import POLICY_NAMES
from fgdopt.simulate import replay
from fgdopt.traces import load_openb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.bench_replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="default", help="openb variant (default: default)")
    parser.add_argument("--policies", type=parse_policies, default=list(POLICY_NAMES),
                        help="comma-separated names or module:attribute specs (default: all built-in)")
    parser.add_argument("--ratio", type=float, default=1.3, help="inflation ratio (default: 1.3)")
    parser.add_argument("--seed", type=int, default=42, help="replay seed (default: 42)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per policy (default: 1)")
    parser.add_argument("--output", type=Path, default=None, help="folder for bench_replay.csv")
    args = parser.parse_args(argv)
    try:
        cluster, tasks = load_openb(args.trace)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    workload = Workload.from_tasks(tasks)
    print(f"openb {args.trace}: {cluster.n_nodes} nodes, {len(tasks)} trace tasks, ratio {args.ratio}")
    print("| policy | tasks | wall_s | cpu_s | tasks/s (wall) | alloc_130 (%) |\n|---|---|---|---|---|---|")
    rows = []
    for name in args.policies:
        for _ in range(args.repeats):
            cpu = time.process_time()
            result = replay(cluster, tasks, name, args.seed, args.ratio, workload)
            cpu = time.process_time() - cpu
            n = len(result.tasks)
            rows.append({"policy": name, "tasks": n, "wall_s": round(result.wall_s, 3), "cpu_s": round(cpu, 3),
                         "alloc_ratio_130": round(float(result.curves["alloc_ratio"].iloc[-1]), 4)})
            print(f"| {name} | {n} | {result.wall_s:.2f} | {cpu:.2f} | {n / result.wall_s:,.0f} | "
                  f"{rows[-1]['alloc_ratio_130']:.2f} |", flush=True)
    if args.output:
        args.output.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(args.output / "bench_replay.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
