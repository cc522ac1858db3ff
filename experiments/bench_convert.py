"""Converter throughput: ``python -m experiments.bench_convert [--rows N] [--seed S] [--output DIR]``.

Writes a Helios-shaped ``cluster_log.csv`` of ``--rows`` jobs (default 1,000,000; the columns of
:mod:`fgdopt.workloads.convert.helios`, date-time strings, 10% of the jobs on 2-8 nodes, 1% without a duration) into
a temporary folder, then times, in this process, the conversion (:func:`fgdopt.workloads.convert.convert`) and the
writing of ``workload.csv`` (:func:`fgdopt.workloads.format.write_workload`, which checks every row), and prints
wall and CPU seconds of each and the jobs kept. ``--output`` also writes ``DIR/bench_convert.csv``. The target is
1,000,000 rows in at most 60 s on 2 cores.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import non_negative_int, output_dir, positive_int, study_parser
from experiments.outputs import staged
from fgdopt.workloads.convert import convert
from fgdopt.workloads.format import write_workload


def helios_table(rows: int, seed: int) -> pd.DataFrame:
    """A Helios-shaped job table of ``rows`` jobs (module docstring)."""
    rng = np.random.default_rng(seed)
    nodes = np.where(rng.random(rows) < 0.1, rng.integers(2, 9, rows), 1)
    gpus = np.where(nodes > 1, 8 * nodes, rng.choice([0, 1, 2, 4, 8], rows))
    submit = pd.Timestamp("2020-04-01") + pd.to_timedelta(np.sort(rng.integers(0, 180 * 86400, rows)), unit="s")
    duration = rng.integers(0, 86400, rows).astype(object)
    duration[rng.random(rows) < 0.01] = ""
    return pd.DataFrame({"job_id": np.arange(rows), "user": rng.integers(0, 2000, rows).astype(str),
                         "vc": "vc1", "gpu_num": gpus, "cpu_num": np.maximum(gpus, 1) * 4, "node_num": nodes,
                         "state": "COMPLETED", "submit_time": submit.strftime("%Y-%m-%d %H:%M:%S"),
                         "start_time": "", "end_time": "", "duration": duration, "queue": 0})


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.bench_convert", __doc__)
    parser.add_argument("--rows", type=positive_int, default=1_000_000, help="jobs (default: 1000000)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seed of the table (default: 0)")
    parser.add_argument("--output", type=output_dir, default=None, help="folder for bench_convert.csv")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "cluster_log.csv"
        helios_table(args.rows, args.seed).to_csv(raw, index=False)
        w0, c0 = time.perf_counter(), time.process_time()
        conv = convert("helios", [raw])
        w1, c1 = time.perf_counter(), time.process_time()
        write_workload(conv.jobs, Path(tmp) / "workload.csv")
        w2, c2 = time.perf_counter(), time.process_time()
    rows = [{"step": "convert", "rows": args.rows, "jobs": len(conv.jobs), "wall_s": w1 - w0, "cpu_s": c1 - c0},
            {"step": "write", "rows": args.rows, "jobs": len(conv.jobs), "wall_s": w2 - w1, "cpu_s": c2 - c1},
            {"step": "total", "rows": args.rows, "jobs": len(conv.jobs), "wall_s": w2 - w0, "cpu_s": c2 - c0}]
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if args.output is not None:
        with staged(args.output) as out:
            frame.to_csv(out / "bench_convert.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
