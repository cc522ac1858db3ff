"""Replay throughput per policy: tasks placed per second on the openb trace.

Usage::

    python -m experiments.bench_replay [--policies ...] [--repeats R] [--output DIR]

Replays the openb trace (default variant) ``--repeats`` times (default 1) per policy with one seed and prints,
per run, wall time, the process's CPU time and tasks/s (placement plus the 131 curve samples); ``--output``
also writes them to ``DIR/bench_replay.csv``. Wall time depends on the
machine and its load; CPU time much less so (a replay is single-threaded), which makes it the figure
to compare on a shared machine.
"""

from __future__ import annotations

import sys
import time

import pandas as pd

from experiments.args import non_negative_int, output_dir, parse_policies, positive, positive_int, study_parser
from experiments.outputs import staged
from fgdopt.frag import Workload
from fgdopt.policies import POLICY_NAMES
from fgdopt.simulate import replay
from fgdopt.traces import VARIANTS, load_openb


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.bench_replay", __doc__)
    parser.add_argument("--trace", choices=VARIANTS, default="default", metavar="VARIANT",
                        help="openb variant (default: default)")
    parser.add_argument("--policies", type=parse_policies, default=list(POLICY_NAMES),
                        help="comma-separated names or module:attribute specs (default: all built-in)")
    parser.add_argument("--ratio", type=positive, default=1.3, help="inflation ratio (default: 1.3)")
    parser.add_argument("--seed", type=non_negative_int, default=42, help="replay seed (default: 42)")
    parser.add_argument("--repeats", type=positive_int, default=1, help="runs per policy (default: 1)")
    parser.add_argument("--output", type=output_dir, default=None, help="folder for bench_replay.csv")
    args = parser.parse_args(argv)
    try:
        cluster, tasks = load_openb(args.trace)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
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
        with staged(args.output) as tmp:
            pd.DataFrame(rows).to_csv(tmp / "bench_replay.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
