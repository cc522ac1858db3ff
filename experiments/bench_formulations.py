"""Benchmark of the formulations: time to proven optimality (or remaining gap) and bound tightness.

Usage::

    python -m experiments.bench_formulations [--sizes 4 8 16 32 64] [--seeds 0] [--time-limit 60]
        [--methods ...] [--no-warm-start] [--csv out.csv]
    python -m experiments.bench_formulations --ideas [--sizes 16 32]

For each size and seed, a trace-like instance (:func:`fgdopt.suites.random_instance`, openb shapes,
arrived GPU demand = 1.3 x capacity) is solved by every method. The exact methods get the best online
policy's placement (FGD or best-fit) as warm start, as in the gap experiment (``--no-warm-start``: none).
Each run is printed as it finishes; the final table adds, per method, the bound's distance above the best
incumbent and the incumbent's distance below the best proven bound. ``--ideas`` instead switches the
modelling ideas of :func:`formulations.exact.build_exact` / :func:`formulations.exact.run_exact` one at a
time (milp-highs). Wall times include model building; the machine is shared, so timings are noisy.
"""

from __future__ import annotations

import pandas as pd

from experiments.args import non_negative_int, output_file, positive, positive_int, study_parser
from fgdopt.simulate import run_online
from fgdopt.suites import random_instance
from formulations import EXACT, METHODS, solve
from formulations.exact import run_exact

WARM_POLICIES = ("fgd", "best-fit")
IDEAS = {  # name -> run_exact keyword arguments (milp-highs); "warm_start": False drops the MIP start
    "baseline": {},
    "no-symmetry": {"symmetry": False},
    "all-patterns": {"maximal": False},
    "lp-cut": {"lp_cut": True},
    "default-heuristics": {"options": {}},
    "no-warm-start": {"warm_start": False},
}


def best_online(instance):
    """The placement of the policy in :data:`WARM_POLICIES` that allocates the most milli-GPU."""
    runs = [run_online(instance.cluster, instance.tasks, p, seed=0) for p in WARM_POLICIES]
    return max(runs, key=lambda r: r.allocated_milli).placement


def _row(instance, seed: int, method: str, sol) -> dict:
    cap = instance.cluster.gpu_capacity_milli
    row = {"nodes": instance.cluster.n_nodes, "seed": seed, "tasks": len(instance.tasks), "method": method,
           "status": sol.status, "objective_%": None if sol.objective is None else 100 * sol.objective / cap,
           "bound_%": None if sol.bound is None else 100 * sol.bound / cap,
           "gap_%": None if sol.gap is None else 100 * sol.gap, "wall_s": round(sol.wall_s, 2),
           "objective": sol.objective, "bound": sol.bound}
    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return row


def run(sizes, seeds, time_limit: float, methods=METHODS, warm: bool = True) -> pd.DataFrame:
    """One row per (size, seed, method) plus the comparison columns of the module docstring."""
    rows = []
    for n in sizes:
        for seed in seeds:
            instance = random_instance(n, seed)
            start = best_online(instance) if warm else None
            first = len(rows)
            for m in methods:
                sol = solve(instance, m, time_limit=time_limit, warm_start=start if m in EXACT else None)
                rows.append(_row(instance, seed, m, sol))
            mine = rows[first:]
            bounds = [r["bound"] for r in mine if r["bound"] is not None]
            best_bound = min(bounds) if bounds else None
            best_obj = max((r["objective"] for r in mine if r["method"] in EXACT and r["objective"]), default=None)
            for r in mine:
                r["bound_above_best_incumbent_%"] = (None if r["bound"] is None or not best_obj
                                                     else 100 * (r["bound"] - best_obj) / best_obj)
                r["below_best_bound_%"] = (None if r["objective"] is None or best_bound is None
                                           else 100 * (best_bound - r["objective"]) / best_bound)
    return pd.DataFrame(rows)


def run_ideas(sizes, seeds, time_limit: float, warm: bool = True) -> pd.DataFrame:
    """milp-highs with each modelling idea of :data:`IDEAS` switched, one row per (size, seed, idea)."""
    rows = []
    for n in sizes:
        for seed in seeds:
            instance = random_instance(n, seed)
            start = best_online(instance) if warm else None
            for idea, kwargs in IDEAS.items():
                kwargs = dict(kwargs)
                warm_start = start if kwargs.pop("warm_start", True) else None
                sol = run_exact(instance, "milp-highs", "highs", time_limit, warm_start, **kwargs)
                row = _row(instance, seed, f"milp-highs/{idea}", sol)
                row.update(n_vars=sol.info["n_vars"], n_rows=sol.info["n_rows"])
                rows.append(row)
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = study_parser("experiments.bench_formulations", __doc__)
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=None,
                        help="nodes of the random instances, space-separated (default: 4 8 16 32 64; --ideas: 16 32)")
    parser.add_argument("--seeds", type=non_negative_int, nargs="+", default=[0],
                        help="instance seeds, space-separated (default: 0)")
    parser.add_argument("--time-limit", type=positive, default=60.0, help="seconds per solve (default: 60)")
    parser.add_argument("--methods", nargs="+", choices=METHODS, metavar="METHOD",
                        default=["milp-highs", "milp-cbc", "cpsat", "lp", "unified-device", "config-lp"])
    parser.add_argument("--no-warm-start", action="store_true",
                        help="solve without the best heuristic placement as a starting point")
    parser.add_argument("--ideas", action="store_true", help="measure the modelling ideas instead")
    parser.add_argument("--csv", type=output_file, default=None, help="also write the table to this CSV file")
    args = parser.parse_args(argv)
    warm = not args.no_warm_start
    if args.ideas:
        table = run_ideas(args.sizes or [16, 32], args.seeds, args.time_limit, warm)
    else:
        table = run(args.sizes or [4, 8, 16, 32, 64], args.seeds, args.time_limit, args.methods, warm)
    if args.csv:
        table.to_csv(args.csv, index=False)
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.float_format", "{:.3f}".format):
        print(table.drop(columns=["objective", "bound"]).to_string(index=False))


if __name__ == "__main__":
    main()
