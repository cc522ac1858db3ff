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

import sys
import time

import pandas as pd

from experiments.args import openb_dir, output_dir, parse_policy, study_parser
from experiments.outputs import staged
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
    parser = study_parser("experiments.refsim", __doc__)
    parser.add_argument("--policy", type=parse_policy, default="fgd",
                        help="policy to follow the log with (default: fgd)")
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--output", type=output_dir, default=None, help="folder for refsim.csv")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        row = fidelity(args.policy, None if args.data_dir is None else str(args.data_dir))
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    frame = pd.DataFrame([row])
    print(frame.to_markdown(index=False))
    if args.output:
        with staged(args.output) as tmp:
            frame.to_csv(tmp / "refsim.csv", index=False)
    print(f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
