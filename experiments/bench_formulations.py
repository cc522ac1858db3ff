"""Benchmark of the formulations: time to proven optimality (or remaining gap) and bound tightness.

    python -m experiments.bench_formulations [--sizes 4 8 16 32 64] [--seeds 0] [--time-limit 60]

For each size and seed, a trace-like instance (:func:`fgdopt.instances.random_instance`, openb shapes,
arrived GPU demand = 1.3 x capacity) is solved by every method of :data:`formulations.METHODS`. The
table lists status, objective and bound (as % of GPU capacity), the gap to the best proven bound, and
the wall time (model building included; the machine is shared, so timings are noisy).
"""

from __future__ import annotations

import argparse

import pandas as pd

from fgdopt.instances import random_instance
from formulations import METHODS, solve


def run(sizes, seeds, time_limit: float, methods=METHODS) -> pd.DataFrame:
    rows = []
    for n in sizes:
        for seed in seeds:
            instance = random_instance(n, seed)
            cap = instance.cluster.gpu_capacity_milli
            sols = {m: solve(instance, m, time_limit=time_limit) for m in methods}
            best_bound = min(s.bound for s in sols.values() if s.bound is not None)
            best_obj = max((s.objective for s in sols.values() if s.kind == "exact" and s.objective), default=0)
            for m, s in sols.items():
                rows.append({
                    "nodes": n, "seed": seed, "tasks": len(instance.tasks), "method": m, "status": s.status,
                    "objective_%": None if s.objective is None else 100 * s.objective / cap,
                    "claimed_%": None if s.claimed is None else 100 * s.claimed / cap,
                    "bound_%": None if s.bound is None else 100 * s.bound / cap,
                    "gap_%": None if s.gap is None else 100 * s.gap,
                    "bound_vs_best_incumbent_%": None if s.bound is None or not best_obj
                    else 100 * (s.bound - best_obj) / best_obj,
                    "gap_to_best_bound_%": None if s.objective is None
                    else 100 * (best_bound - s.objective) / best_bound,
                    "wall_s": round(s.wall_s, 2),
                })
                print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    args = parser.parse_args(argv)
    table = run(args.sizes, args.seeds, args.time_limit, args.methods)
    with pd.option_context("display.width", 200, "display.max_rows", 500, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()
