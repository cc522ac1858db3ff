"""Replay throughput per policy: ``python -m experiments.bench_replay [--policies ...] [--ratio 1.3]``.

Replays the openb trace (default variant) once per policy with one seed and prints wall time, the
process's CPU time and tasks/s (placement plus the 131 curve samples). Wall time depends on the
machine and its load; CPU time much less so (a replay is single-threaded), which makes it the figure
to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import sys
import time

from fgdopt.frag import Workload
from fgdopt.policies import POLICY_NAMES
from fgdopt.simulate import replay
from fgdopt.traces import load_openb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.bench_replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="default", help="openb variant (default: default)")
    parser.add_argument("--policies", default=",".join(POLICY_NAMES), help="comma-separated (default: all)")
    parser.add_argument("--ratio", type=float, default=1.3, help="inflation ratio (default: 1.3)")
    parser.add_argument("--seed", type=int, default=42, help="replay seed (default: 42)")
    args = parser.parse_args(argv)
    try:
        cluster, tasks = load_openb(args.trace)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    workload = Workload.from_tasks(tasks)
    print(f"openb {args.trace}: {cluster.n_nodes} nodes, {len(tasks)} trace tasks, ratio {args.ratio}")
    print("| policy | tasks | wall_s | cpu_s | tasks/s (wall) | alloc_130 (%) |\n|---|---|---|---|---|---|")
    for name in args.policies.split(","):
        cpu = time.process_time()
        result = replay(cluster, tasks, name, args.seed, args.ratio, workload)
        cpu = time.process_time() - cpu
        n = len(result.tasks)
        print(f"| {name} | {n} | {result.wall_s:.2f} | {cpu:.2f} | {n / result.wall_s:,.0f} | "
              f"{result.curves['alloc_ratio'].iloc[-1]:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
