"""Exact defragmentation on 16-node states: how long the exact plans take to prove (the aim is 60 s on 2 cores).

Usage::

    python -m experiments.bench_defrag [--seeds 3,17,5] [--budgets 3,5,10] [--first 4,6,8] [--output DIR]

For every seed: the state :func:`experiments.defrag.online_problem` leaves (``random_instance(--nodes, seed)``,
online FGD, policy seed 0; its failed tasks wait). Objective (b) at every budget, warm-started from the best
heuristic plan of :data:`fgdopt.defrag.HEURISTICS`; objective (a) for the first j waiting tasks (arrival
order) for every j of ``--first``. Prints one row per exact run with its status, plan, bound, wall time and
the process's CPU time (HiGHS runs in the process, one thread; on a shared machine CPU time is the figure
to compare); ``--output`` writes ``DIR/bench_defrag.csv``.
"""

from __future__ import annotations

import sys
import time

import pandas as pd

from experiments.args import int_list, output_dir, parse_seeds, positive, positive_int, study_parser
from experiments.defrag import best_report, online_problem
from experiments.outputs import staged
from fgdopt.defrag import HEURISTICS, DefragProblem, defrag
from fgdopt.frag import Workload
from fgdopt.suites import random_instance
from formulations.defrag import solve_defrag


def bench(problem: DefragProblem, objective: str, budget: int | None, time_limit: float,
          workload: Workload, envelope: bool = False) -> dict:
    """One exact run ((b) warm-started from the best heuristic) and its figures."""
    heuristics = [defrag(problem, method, budget, workload) for method in HEURISTICS] if objective == "b" else []
    start = best_report(heuristics)
    cpu = time.process_time()
    sol = solve_defrag(problem, objective, budget, time_limit=time_limit, threads=1,
                       warm_start=None if start is None else start.plan, workload=workload, envelope=envelope)
    return {"objective": objective, "budget": budget, "waiting": len(problem.waiting), "status": sol.status,
            "moves": sol.moves, "moves_bound": sol.moves_bound, "admitted_milli": sol.admitted_milli,
            "bound_milli": sol.bound_milli, "heuristic_milli": None if start is None else start.admitted_milli,
            "wall_s": round(sol.wall_s, 2), "cpu_s": round(time.process_time() - cpu, 2),
            "columns": sol.info["n_vars"]}


def main(argv: list[str] | None = None) -> int:
    ap = study_parser("experiments.bench_defrag", __doc__)
    ap.add_argument("--seeds", type=parse_seeds, default=[3, 17, 5], help="random_instance seeds (default: 3,17,5)")
    ap.add_argument("--nodes", type=positive_int, default=16, help="nodes of each random instance (default: 16)")
    ap.add_argument("--budgets", type=int_list(0), default=[3, 5, 10], help="objective (b) budgets (default: 3,5,10)")
    ap.add_argument("--first", type=int_list(1), default=[4, 6, 8],
                    help="objective (a): admit the first j waiting tasks (default: 4,6,8)")
    ap.add_argument("--time-limit", type=positive, default=60.0, help="seconds per exact run (default: 60)")
    ap.add_argument("--envelope", action="store_true", help="add the net-gain envelope rows (solve_defrag)")
    ap.add_argument("--output", type=output_dir, default=None, help="folder for bench_defrag.csv")
    args = ap.parse_args(argv)
    budgets, firsts = args.budgets, args.first
    rows = []
    print("| seed | running | objective | status | moves | admitted (milli) | bound | wall s | CPU s |\n"
          "|--:|--:|:--|:--|--:|--:|--:|--:|--:|")
    for seed in args.seeds:
        instance = random_instance(args.nodes, seed)
        problem = online_problem(instance, "fgd")
        workload = Workload.from_tasks(instance.tasks)
        runs = [("b", k, problem) for k in budgets]
        runs += [("a", None, DefragProblem(problem.cluster, problem.tasks, problem.placement, problem.waiting[:j]))
                 for j in firsts]
        for objective, budget, p in runs:
            row = {"seed": seed, "nodes": args.nodes, "running": len(p.running),
                   **bench(p, objective, budget, args.time_limit, workload, args.envelope)}
            rows.append(row)
            what = f"(b) K={budget}" if objective == "b" else f"(a) first {row['waiting']}"
            bound = row["bound_milli"] if objective == "b" else row["moves_bound"]
            print(f"| {seed} | {row['running']} | {what} | {row['status']} | {row['moves']} | "
                  f"{row['admitted_milli']} | {bound} | {row['wall_s']:.1f} | {row['cpu_s']:.1f} |", flush=True)
    if args.output:
        with staged(args.output) as tmp:
            pd.DataFrame(rows).to_csv(tmp / "bench_defrag.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
