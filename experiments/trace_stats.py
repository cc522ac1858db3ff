"""Print the statistics table of an openb trace variant (without the ``pod_phase`` rows for the ``multigpu*`` pod
lists, which give the shapes only).

Usage::

    python -m experiments.trace_stats [--variant default] [--data-dir DIR] [--format markdown|csv]
"""

from __future__ import annotations

import sys

from experiments.args import openb_dir, study_parser
from fgdopt.stats import trace_statistics
from fgdopt.traces import VARIANTS, load_openb, read_pods


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.trace_stats", __doc__)
    parser.add_argument("--variant", default="default", choices=VARIANTS, help="openb pod list (default: default)")
    parser.add_argument("--data-dir", type=openb_dir, default=None,
                        help="openb folder (default: $FGDOPT_DATA or the cache)")
    parser.add_argument("--format", default="markdown", choices=("markdown", "csv"))
    args = parser.parse_args(argv)
    try:
        cluster, tasks = load_openb(args.variant, args.data_dir)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    pods = read_pods(args.variant, args.data_dir)
    phase = pods["pod_phase"].to_numpy() if "pod_phase" in pods else None     # (multigpu*: shapes only)
    table = trace_statistics(cluster, tasks, phase)
    table["value"] = table["value"].map(lambda v: f"{v:g}")
    print(f"openb trace statistics, variant {args.variant!r}\n")
    print(table.to_markdown(index=False) if args.format == "markdown" else table.to_csv(index=False), end="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
