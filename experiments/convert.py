"""Convert a public GPU-cluster trace into the open job format (fgdopt.workloads.format).

Usage::

    python -m experiments.convert --format helios --input cluster_log.csv --output DIR
    python -m experiments.convert --format pai2020 --input pai_job_table.csv pai_task_table.csv \\
        pai_machine_spec.csv --output DIR
    python -m experiments.convert --format helios --input cluster_log.csv --output DIR --to swf

Formats (:data:`fgdopt.workloads.convert.FORMATS`; each module's docstring states its columns, its gang rule and
what it assumes): ``philly``, ``helios``, ``acme``, ``pai2020``, ``spot2026``, ``swf``, ``openb``. Writes to ``DIR``:
``workload.csv`` (the open format; ``--to swf``: ``workload.swf`` too, :func:`fgdopt.workloads.convert.swf.write_swf`),
``cluster.json`` where the trace lists its nodes (the instance file ``--cluster`` of the studies reads) and
``summary.json`` (rows read, jobs kept, rows dropped by reason, gangs, what was assumed), also printed. Bad input (an
unknown format, a missing file or column, a negative duration, a job on 0 nodes) stops in one line before anything
is written (exit code 2); the files of ``DIR`` are replaced together, only once the conversion has succeeded.
"""

from __future__ import annotations

import sys
import time

from experiments.args import check_paths, output_dir, study_parser, unknown_name
from experiments.outputs import staged
from fgdopt.workloads.convert import FORMATS, convert, write_conversion
from fgdopt.workloads.convert.swf import write_swf

OUTPUTS = ("workload.csv", "workload.swf", "cluster.json", "summary.json")


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.convert", __doc__)
    parser.add_argument("--format", required=True, help=f"the trace's format: {', '.join(FORMATS)}")
    parser.add_argument("--input", nargs="+", required=True, metavar="PATH", help="the trace's raw files")
    parser.add_argument("--to", choices=("csv", "swf"), default="csv",
                        help="also write workload.swf (swf); workload.csv is always written (default: csv)")
    parser.add_argument("--output", type=output_dir, required=True, help="folder for workload.csv, cluster.json, "
                        "summary.json")
    args = parser.parse_args(argv)
    if args.format not in FORMATS:
        parser.error(f"argument --format: {unknown_name('format', args.format, FORMATS)}")
    for p in args.input:
        check_paths(parser, args.output, OUTPUTS, {"--input": p})
    t0 = time.perf_counter()
    try:
        conv = convert(args.format, args.input)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    try:
        with staged(args.output) as tmp:
            summary = write_conversion(conv, args.format, args.input, tmp)
            if args.to == "swf":
                write_swf(conv.jobs, tmp / "workload.swf")
    except ValueError as exc:                           # a converted job the open format refuses
        parser.error(str(exc))
    print(f"{args.format}: {summary['rows_read']} rows read, {summary['jobs_kept']} jobs kept "
          f"({summary['gangs']} gangs, up to {summary['max_workers']} workers), "
          f"{'no node list' if summary['nodes'] is None else str(summary['nodes']) + ' nodes'}, "
          f"{time.perf_counter() - t0:.1f} s -> {args.output}")
    for reason, count in summary["dropped"].items():
        print(f"dropped {count}: {reason}")
    for line in summary["assumed"]:
        print(f"assumed: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
