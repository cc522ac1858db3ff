"""MIG study: each MIG policy's accepted slices and tasks against the exact optimum and the configuration bound.

Usage::

    python -m experiments.mig --nodes 16,64 --seeds 0-4 --ratio 1.3 [--quick] [--jobs N | --dask ADDRESS]
        [--resume] --output DIR

For every node count and seed, :func:`~fgdopt.mig.suites.mig_instance` (openb nodes with A100-40GB MIG GPUs,
openb tasks mapped to profiles, drawn up to ``ratio`` x the cluster's memory slices); for the prefixes arrived
by 100 % and by ``ratio`` (every task; only the latter when ``ratio`` <= 1): the four MIG policies online
(:func:`fgdopt.simulate.run_online`, target workload = the whole task list's shapes), the configuration LP bound,
and the exact optimum with CP-SAT and HiGHS (warm start: the best policy; proven bound: the configuration LP).
Writes ``mig.csv`` (columns :data:`COLUMNS`, plus ``arrival``), ``mig_curves.csv`` (accepted vs arrived slices
along the online run of the first seed of the largest size, every task) and ``mig.png``.

``--quick``: the first two seeds, CP-SAT only, 10 s per exact run. Otherwise exact runs get 30 s (<= 16 nodes)
or 120 s. Solver threads: ``--threads`` (default 1). Each node count and seed is one run: ``--jobs N`` runs N at a
time in local processes, ``--dask ADDRESS`` on a Dask cluster, and ``--resume`` keeps the runs already finished in
``OUTPUT/.runs/mig`` with the same inputs.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import int_list, output_dir, parse_seeds, positive, positive_int, study_parser
from experiments.executors import add_dask_option, add_resume_option, run_and_write
from fgdopt.frag import Workload
from fgdopt.mig.suites import arrived_prefix, capacity_slices, mig_instance, task_slices
from fgdopt.plot import plot_mig
from fgdopt.policies import MIG_POLICY_NAMES
from fgdopt.simulate import run_online
from formulations.mig import config_bound, solve_mig

COLUMNS = ("instance", "nodes", "seed", "method", "kind", "accepted_tasks", "accepted_slices", "bound_slices",
           "status", "wall_s")


def run_cell(n: int, seed: int, ratio: float, quick: bool, threads: int, curves: bool) -> tuple[list, list]:
    """One node count and seed (module docstring): its rows, and with ``curves`` the online curves of the last
    arrival point (one frame per policy)."""
    rows, lines = [], []
    solvers = ("cpsat",) if quick else ("cpsat", "highs")
    arrivals = sorted({min(100.0, 100.0 * ratio), 100.0 * ratio})    # one point when ratio <= 1: all tasks
    limit = 10.0 if quick else (30.0 if n <= 16 else 120.0)
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
            rows.append(base | {"method": name, "kind": "policy", "accepted_tasks": int(res.placement.placed.sum()),
                                "accepted_slices": got, "bound_slices": None, "status": "feasible",
                                "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0})
            if best is None or got > best[0]:
                best = (got, res.placement)
            if curves and arrival == arrivals[-1]:
                cap = capacity_slices(inst.cluster)
                lines.append(pd.DataFrame({"method": name, "arrived_pct": 100.0 * np.cumsum(sizes) / cap,
                                           "accepted_pct": 100.0 * np.cumsum(np.where(res.placement.placed, sizes,
                                                                                      0)) / cap}))
        cfg = config_bound(inst)
        rows.append(base | {"method": "config-lp", "kind": "bound", "accepted_tasks": None, "accepted_slices": None,
                            "bound_slices": cfg.bound, "status": cfg.status, "wall_s": cfg.wall_s, "cpu_s": None})
        for solver in solvers:
            c0 = time.process_time()
            sol = solve_mig(inst, solver, time_limit=limit, threads=threads, warm_start=best[1],
                            proven_bound=cfg.bound)
            rows.append(base | {"method": f"exact-{solver}", "kind": "exact",
                                "accepted_tasks": int(sol.placement.placed.sum()) if sol.placement else None,
                                "accepted_slices": sol.objective, "bound_slices": sol.bound, "status": sol.status,
                                "wall_s": sol.wall_s, "cpu_s": time.process_time() - c0})
    return rows, lines


def cells(nodes: list[int], seeds: list[int], ratio: float, quick: bool, threads: int = 1) -> list[tuple]:
    """The argument tuples of :func:`run_cell`, one per node count and seed; the curves come from the first seed of
    the largest size."""
    return [(n, seed, ratio, quick, threads, n == max(nodes) and seed == seeds[0]) for n in nodes for seed in seeds]


def collect(results: list[tuple[list, list]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study's rows and the online curves of :func:`run_cell`'s results."""
    rows = [row for cell_rows, _ in results for row in cell_rows]
    lines = [line for _, cell_lines in results for line in cell_lines]
    curves = pd.concat(lines) if lines else pd.DataFrame(columns=["method", "arrived_pct", "accepted_pct"])
    return pd.DataFrame(rows, columns=[*COLUMNS, "arrival", "cpu_s"]), curves


def run(nodes: list[int], seeds: list[int], ratio: float, quick: bool, threads: int = 1) -> tuple[pd.DataFrame, ...]:
    """The study's rows and the online curves (see module docstring), inline."""
    return collect([run_cell(*cell) for cell in cells(nodes, seeds, ratio, quick, threads)])


def summary(frame: pd.DataFrame) -> str:
    """One line per node count, seed and arrival: the slices each policy and exact run accepted, and the bound."""
    lines = []
    for (n, seed, arrival), part in frame.groupby(["nodes", "seed", "arrival"], sort=False):
        got = ", ".join(f"{r.method} {r.accepted_slices:g}" + (f" ({r.status})" if r.kind == "exact" else "")
                        for r in part.itertuples() if r.kind != "bound")
        cap = ", ".join(f"{r.bound_slices:g} ({r.method} bound)" for r in part.itertuples() if r.kind == "bound")
        lines.append(f"{n} nodes, seed {seed}, {arrival:.0f}% arrived: slices accepted by {got}; at most {cap}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
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
    ap.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(ap)
    add_resume_option(ap)
    args = ap.parse_args(argv)
    seeds = args.seeds[:2] if args.quick and "seeds" not in ap.written() else args.seeds
    for n, seed in ((n, seed) for n in args.nodes for seed in seeds if args.ratio < 1):
        if not len(mig_instance(n, seed, args.ratio).tasks):     # the first task drawn is above the ratio: none
            first = mig_instance(n, seed, 1.0)                     # (at 1 every task fits: one node holds it)
            share = int(task_slices(first.cluster, first.tasks)[0]) / capacity_slices(first.cluster)
            ap.error(f"argument --ratio: at {args.ratio:g} x the memory slices of {n} node{'s' * (n > 1)}, seed "
                     f"{seed} draws no task (its first takes {share:.4g} of them); raise it to "
                     f"{math.ceil(share * 1e4) / 1e4:g} or more")
    t0, c0 = time.perf_counter(), time.process_time()

    def write(results: list, folder: Path) -> pd.DataFrame:
        frame, curves = collect(results)
        frame.to_csv(folder / "mig.csv", index=False)
        curves.to_csv(folder / "mig_curves.csv", index=False)
        if len(frame):
            plot_mig(frame, curves, folder / "mig.png")
        return frame

    frame, code = run_and_write("mig", run_cell, cells(args.nodes, seeds, args.ratio, args.quick, args.threads),
                                args, None, write, ap.prog)
    if frame is None:
        return code
    print(summary(frame))
    out = args.output
    print(f"wrote {out / 'mig.csv'}, {out / 'mig.png'} in {time.perf_counter() - t0:.1f} s wall, "
          f"{time.process_time() - c0:.1f} s CPU")
    return 0

if __name__ == "__main__":
    sys.exit(main())
