"""Speed of Gavel's policies as LPs: wall and CPU seconds of one allocation against the number of active jobs.

Usage::

    python -m experiments.bench_hetero [--sizes 50,200,1000] [--policies las,las-aware,...] [--cluster 36:36:36]
        [--seed 0] [--repeat 3] [--points 1,3] [--data-dir DIR] [--output DIR]

Each row is :func:`formulations.hetero.allocate` of ``n`` jobs of :func:`fgdopt.hetero.gavel_jobs` (multi-GPU,
Gavel's job types and durations) present at once on a V100:P100:K80 cluster, with nothing run yet; ``ftf*`` also
with each job having waited a random 0..1 h (so the Dinkelbach iteration needs several LPs). One process, one
HiGHS thread; the best of ``--repeat`` runs. Prints and writes ``DIR/bench_hetero.csv``: ``jobs, policy, history,
status, lps, wall_s, cpu_s`` (model building included). Gavel's cvxpy/ECOS space-sharing policy does not scale past
about 50 active jobs (its authors' and a replication's account); these are the non-packed policies.

``--points``: also one whole point of ``python -m experiments.hetero`` per rate for ``las`` and ``las-aware``
(36:36:36, single-GPU jobs, jobs 4000-4999 measured, trace and simulation included), CPU and wall seconds in this
process: ``DIR/bench_hetero_points.csv`` (``rate, policy, mean_jct_s, cpu_s, wall_s``), and where the wall time
went: ``lp_s`` solving the allocation LPs (:class:`~fgdopt.hetero.rounds.Gavel` reading X), ``decide_s``
the rest of the rounds' planning (the round loop, :class:`~fgdopt.timeline.rounds.RoundLoop`: Gavel's priorities and
choice, the placement plan, the speeds), ``carry_s`` the engine carrying the plans out (evictions, placements,
speeds); what is left is the engine's own loop, the trace and the statistics. The
timers are in every run (they add a few percent).
"""

from __future__ import annotations

import functools
import math
import sys
import time
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pandas as pd

from experiments.args import (
    gavel_dir,
    int_list,
    names,
    non_negative_int,
    output_dir,
    positive_int,
    real_list,
    study_parser,
)
from experiments.hetero import parse_cluster
from experiments.outputs import staged
from fgdopt.hetero import gavel_jobs, load_throughputs
from fgdopt.hetero.jobs import check_cluster, check_table
from fgdopt.hetero.rounds import Gavel
from fgdopt.timeline import engine
from fgdopt.timeline.rounds import RoundLoop
from formulations.hetero import POLICIES, allocate


def bench(sizes: list[int], policies: list[str], cluster: dict[str, int], seed: int = 0, repeat: int = 3,
          data_dir: str | None = None) -> pd.DataFrame:
    """One row per (size, policy, history): see the module docstring."""
    table = load_throughputs(data_dir)
    rows = []
    for n in sizes:
        jobs = gavel_jobs(table, n, math.inf, seed=seed, multi_gpu=True)
        waited = np.random.default_rng(seed).uniform(0, 3600, n)
        for policy in policies:
            for history in ((False, True) if policy.startswith("ftf") else (False,)):
                extra = {"elapsed_s": waited} if history else {}
                best = None
                for _ in range(repeat):
                    c0, w0 = time.process_time(), time.perf_counter()
                    a = allocate(policy, table, jobs, cluster, **extra)
                    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                    if best is None or wall < best[1]:
                        best = (cpu, wall, a)
                cpu, wall, a = best
                rows.append({"jobs": n, "policy": policy, "history": history, "status": a.status,
                             "lps": a.info.get("iterations", 1), "wall_s": wall, "cpu_s": cpu})
                print(f"{n} jobs, {policy}{' (waited)' if history else ''}: {wall:.3f} s", file=sys.stderr)
    return pd.DataFrame(rows)


def bench_points(rates: list[float], cluster: dict[str, int], seed: int = 0, data_dir: str | None = None,
                 window: tuple[int, int] = (4000, 5000)) -> pd.DataFrame:
    """One row per (rate, policy) of Gavel's pair: a whole point of ``experiments.hetero`` (Gavel's trace at ``rate``
    jobs/hour, the jobs of ``window`` measured) timed in this process: ``rate, policy, mean_jct_s, cpu_s, wall_s,
    lp_s, decide_s, carry_s`` (module docstring)."""
    from experiments.hetero import run_point

    rows = []
    for rate in rates:
        for policy in ("las", "las-aware"):
            spent = {"lp": 0.0, "decide": 0.0, "carry": 0.0}
            c0, w0 = time.process_time(), time.perf_counter()
            with (patch.object(Gavel, "_solved", _timed(Gavel._solved, spent, "lp")),
                  patch.object(RoundLoop, "plan", _timed(RoundLoop.plan, spent, "decide")),
                  patch.object(engine, "_carry_out", _timed(engine._carry_out, spent, "carry"))):
                row = run_point(policy, cluster, rate, seed, window, False, 1, 360.0, data_dir)
            rows.append({"rate": rate, "policy": policy, "mean_jct_s": row["mean_jct_s"],
                         "cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0,
                         "lp_s": spent["lp"], "decide_s": spent["decide"] - spent["lp"], "carry_s": spent["carry"]})
            print(f"{rate:g} jobs/h, {policy}: {rows[-1]['cpu_s']:.1f} CPU s", file=sys.stderr)
    return pd.DataFrame(rows)


def _timed(function, spent: dict[str, float], key: str):
    """``function``, adding the wall seconds of each call to ``spent[key]`` (a clock cheaper to read than the CPU's,
    and the same here: one thread, nothing else running)."""
    clock = time.perf_counter

    @functools.wraps(function)
    def timed(*args, **kwargs):
        t0 = clock()
        try:
            return function(*args, **kwargs)
        finally:
            spent[key] += clock() - t0

    return timed


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.bench_hetero", __doc__)
    parser.add_argument("--sizes", type=int_list(1), default=[50, 200, 1000],
                        help="active jobs per allocation, comma-separated")
    parser.add_argument("--policies", type=names(POLICIES, "policy"), default=list(POLICIES),
                        help=f"comma-separated, of {', '.join(POLICIES)}")
    parser.add_argument("--cluster", type=parse_cluster, default=parse_cluster("36:36:36"),
                        help="GPUs V100:P100:K80 (Gavel's 36:36:36)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seed of the active jobs drawn (default: 0)")
    parser.add_argument("--repeat", type=positive_int, default=3, help="runs per point; the fastest is kept")
    parser.add_argument("--points", type=real_list(0.0), default=[], help="also time whole simulation points of "
                        "Gavel's pair at these rates, jobs/hour, comma-separated (bench_hetero_points.csv; "
                        "default: none)")
    parser.add_argument("--data-dir", type=gavel_dir, default=None,
                        help="Gavel's throughputs folder (default: $FGDOPT_GAVEL)")
    parser.add_argument("--output", type=output_dir, default=Path("."), help="folder of bench_hetero.csv")
    args = parser.parse_args(argv)
    cluster, data_dir = args.cluster, None if args.data_dir is None else str(args.data_dir)
    try:
        table = load_throughputs(data_dir)                 # a missing or broken table stops here, in one line
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    try:
        check_table(table, multi_gpu=True)
    except ValueError as exc:
        parser.error(str(exc))
    try:                                                   # the LP shares GPUs out: a job needs a type, not 8 GPUs
        check_cluster(table, {g: c for g, c in cluster.items() if c > 0}, multi_gpu=True, whole=False)
    except ValueError as exc:
        parser.error(f"--cluster: {exc}")
    frame = bench(args.sizes, args.policies, cluster, args.seed, args.repeat, data_dir)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    points = bench_points(args.points, cluster, args.seed, data_dir) if args.points else None
    with staged(args.output) as out:
        frame.to_csv(out / "bench_hetero.csv", index=False)
        if points is not None:
            points.to_csv(out / "bench_hetero_points.csv", index=False)
    if points is not None:
        print(points.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
