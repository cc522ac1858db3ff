"""MIG study: each MIG policy's accepted slices and tasks against the exact optimum and the configuration bound.

Usage::

    python -m experiments.mig --nodes 16,64 --seeds 0-4 --ratio 1.3 [--quick] --output DIR

For every node count and seed, :func:`~fgdopt.mig.suites.mig_instance` (openb nodes with A100-40GB MIG GPUs,
openb tasks mapped to profiles, drawn up to ``ratio`` x the cluster's memory slices); for the prefixes arrived
by 100 % and by ``ratio`` (every task; only the latter when ``ratio`` <= 1): the four MIG policies online
(:func:`fgdopt.simulate.run_online`, target workload = the whole task list's shapes), the configuration LP bound,
and the exact optimum with CP-SAT and HiGHS (warm start: the best policy; proven bound: the configuration LP).
Writes ``mig.csv`` (columns :data:`COLUMNS`, plus ``arrival``), ``mig_curves.csv`` (accepted vs arrived slices
along the online run of the first seed of the largest size, every task) and ``mig.png``.

``--quick``: the first two seeds, CP-SAT only, 10 s per exact run. Otherwise exact runs get 30 s (<= 16 nodes)
or 120 s. Solver threads: ``--threads`` (default 1).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from experiments.args import int_list, output_dir, parse_seeds, positive, positive_int, study_parser
from experiments.outputs import staged
from fgdopt.frag import Workload
from fgdopt.mig.suites import arrived_prefix, capacity_slices, mig_instance, task_slices
from fgdopt.plot import plot_mig
from fgdopt.policies import MIG_POLICY_NAMES
from fgdopt.simulate import run_online
from formulations.mig import config_bound, solve_mig

COLUMNS = ("instance", "nodes", "seed", "method", "kind", "accepted_tasks", "accepted_slices", "bound_slices",
           "status", "wall_s")


def run(nodes: list[int], seeds: list[int], ratio: float, quick: bool, threads: int = 1) -> tuple[pd.DataFrame, ...]:
    """The study's rows and the online curves (see module docstring)."""
    rows, curves = [], []
    solvers = ("cpsat",) if quick else ("cpsat", "highs")
    arrivals = sorted({min(100.0, 100.0 * ratio), 100.0 * ratio})    # one point when ratio <= 1: all tasks
    for n in nodes:
        limit = 10.0 if quick else (30.0 if n <= 16 else 120.0)
        for seed in seeds:
            full = mig_instance(n, seed, ratio)
            workload = Workload.from_tasks(full.tasks)
            for arrival in arrivals:
                inst = arrived_prefix(full, arrival)
                sizes = task_slices(inst.cluster, inst.tasks)
                base = {"instance": inst.name, "nodes": n, "seed": seed, "arrival": round(arrival)}
                best = None
                for name in MIG_POLICY_NAMES:
                    t0, c0 = time.perf_counter(), time.process_time()
                    res = run_online(inst.cluster, inst.tasks, name, seed=seed, workload=workload)
                    got = int(sizes[res.placement.placed].sum())
                    rows.append(base | {"method": name, "kind": "policy",
                                        "accepted_tasks": int(res.placement.placed.sum()),
                                        "accepted_slices": got, "bound_slices": None, "status": "feasible",
                                        "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0})
                    if best is None or got > best[0]:
                        best = (got, res.placement)
                    if arrival == arrivals[-1] and n == max(nodes) and seed == seeds[0]:
                        cap = capacity_slices(inst.cluster)
                        curves.append(pd.DataFrame({"method": name, "arrived_pct": 100.0 * np.cumsum(sizes) / cap,
                                                    "accepted_pct": 100.0 * np.cumsum(np.where(res.placement.placed,
                                                                                               sizes, 0)) / cap}))
                cfg = config_bound(inst)
                rows.append(base | {"method": "config-lp", "kind": "bound", "accepted_tasks": None,
                                    "accepted_slices": None, "bound_slices": cfg.bound, "status": cfg.status,
                                    "wall_s": cfg.wall_s, "cpu_s": None})
                for solver in solvers:
                    c0 = time.process_time()
                    sol = solve_mig(inst, solver, time_limit=limit, threads=threads, warm_start=best[1],
                                    proven_bound=cfg.bound)
                    rows.append(base | {"method": f"exact-{solver}", "kind": "exact",
                                        "accepted_tasks": int(sol.placement.placed.sum()) if sol.placement else None,
                                        "accepted_slices": sol.objective, "bound_slices": sol.bound,
                                        "status": sol.status, "wall_s": sol.wall_s, "cpu_s": time.process_time() - c0})
                done = rows[-len(MIG_POLICY_NAMES) - 1 - len(solvers):]
                print(f"{n} nodes, seed {seed}, {arrival:.0f}% arrived: slices accepted by " + ", ".join(
                    f"{r['method']} {r['accepted_slices']}" + (f" ({r['status']})" if r["kind"] == "exact" else "")
                    for r in done if r["kind"] != "bound") + "; at most " + ", ".join(
                    f"{r['bound_slices']} ({r['method']} bound)" for r in done if r["kind"] == "bound"), flush=True)
    frame = pd.DataFrame(rows)
    return frame, (pd.concat(curves) if curves else pd.DataFrame(columns=["method", "arrived_pct", "accepted_pct"]))


def main(argv: list[str] | None = None) -> None:
    ap = study_parser("experiments.mig", __doc__)
    ap.add_argument("--nodes", type=int_list(1), default=[16, 64],
                    help="cluster sizes, comma-separated (default: 16,64)")
    ap.add_argument("--seeds", type=parse_seeds, default=[0, 1, 2, 3, 4],
                    help="seeds as a range A-B or a list a,b,c (default: 0-4)")
    ap.add_argument("--ratio", type=positive, default=1.3,
                    help="arrived memory slices as a multiple of the cluster's (default: 1.3)")
    ap.add_argument("--quick", action="store_true",
                    help="the first two seeds, CP-SAT only, 10 s per exact run (under 3 minutes on 2 cores)"
                         " (an option written on the command line wins)")
    ap.add_argument("--threads", type=positive_int, default=1, help="solver threads (default: 1)")
    ap.add_argument("--output", type=output_dir, required=True, help="folder for mig.csv, mig_curves.csv and mig.png")
    args = ap.parse_args(argv)
    seeds = args.seeds[:2] if args.quick and "seeds" not in ap.written() else args.seeds
    t0, c0 = time.perf_counter(), time.process_time()
    frame, curves = run(args.nodes, seeds, args.ratio, args.quick, args.threads)
    out = args.output
    with staged(out) as tmp:
        frame[[*COLUMNS, "arrival", "cpu_s"]].to_csv(tmp / "mig.csv", index=False)
        curves.to_csv(tmp / "mig_curves.csv", index=False)
        plot_mig(frame, curves, tmp / "mig.png")
    print(f"wrote {out / 'mig.csv'}, {out / 'mig.png'} in {time.perf_counter() - t0:.1f} s wall, "
          f"{time.process_time() - c0:.1f} s CPU")


if __name__ == "__main__":
    main()
