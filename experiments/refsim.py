"""Step-by-step fidelity to the reference simulator's logged FGD run (openb default, ratio 1.3).

Usage::

    python -m experiments.refsim [--policy fgd] [--output DIR]

Replays ``--policy`` along the reference's decisions (:func:`fgdopt.refsim.follow`: at every arrival the policy
chooses on the reference's state, then the reference's choice is applied) and on its own with the run's node
ranks (:func:`fgdopt.simulate.run_online`). Prints, and writes to ``DIR/refsim.csv``, one row: ``steps``,
``same_node`` (steps where the policy picks the reference's node), ``max_frag_diff_milli`` (largest
difference of the cluster's F(M) after a step, milli-GPU, against the log's two decimals),
``own_alloc_pct`` (the policy's own final GPU allocation, %) and ``reference_alloc_pct``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from fgdopt.frag import Workload
from fgdopt.refsim import follow, load_refsim
from fgdopt.simulate import run_online
from fgdopt.traces import load_openb


def fidelity(policy: str = "fgd", data_dir: str | None = None) -> dict:
    """The one-row summary described in the module docstring."""
    cluster, tasks = load_openb("default", data_dir)
    workload = Workload.from_tasks(tasks)
    run = load_refsim(cluster, tasks)
    steps = follow(run, cluster, workload, policy)
    own = run_online(cluster, run.tasks, policy, workload=workload, ranks=run.ranks)
    return {"policy": policy, "steps": len(steps), "same_node": int(steps["match"].sum()),
            "max_frag_diff_milli": round(float((steps["frag_after"] - steps["reference_frag_after"]).abs().max()), 4),
            "own_alloc_pct": round(100.0 * own.allocated_milli / cluster.gpu_capacity_milli, 4),
            "reference_alloc_pct": round(run.allocated_pct(cluster), 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.refsim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="fgd", help="policy to follow the log with (default: fgd)")
    parser.add_argument("--data-dir", default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--output", type=Path, default=None, help="folder for refsim.csv")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        row = fidelity(args.policy, args.data_dir)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    frame = pd.DataFrame([row])
    print(frame.to_markdown(index=False))
    if args.output:
        args.output.mkdir(parents=True, exist_ok=True)
        frame.to_csv(args.output / "refsim.csv", index=False)
    print(f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
