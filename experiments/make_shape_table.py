"""Compute the two small openb tables shipped in ``fgdopt/data`` from the trace (run once).

``fgdopt/data/openb_shapes.csv``
    the task-shape distribution of ``openb_pod_list_default.csv``: one row per distinct
    (cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec) with the number of tasks of that shape
    (``count``), most frequent first.
``fgdopt/data/openb_node_types.csv``
    the node types of ``openb_node_list_gpu_node.csv``: one row per distinct
    (cpu_milli, memory_mib, gpu, model) with the number of nodes (``count``), most frequent first.

They are aggregated counts, not copies of the trace, so :mod:`fgdopt.suites` can generate
trace-like instances without the trace. Regenerate them with::

    FGDOPT_DATA=/path/to/openb python -m experiments.make_shape_table [--output-dir fgdopt/data]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from experiments.args import openb_dir, output_dir, study_parser
from fgdopt.suites import NODE_TYPE_FILE, NODE_TYPE_KEYS, SHAPE_FILE, SHAPE_KEYS
from fgdopt.traces import read_nodes, read_pods

DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "fgdopt" / "data"


def count_rows(frame: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """Distinct rows of ``frame[keys]`` with their multiplicity ``count``; most frequent first, ties by keys."""
    counts = frame.groupby(list(keys), sort=True).size().rename("count").reset_index()
    return counts.sort_values("count", ascending=False, kind="stable").reset_index(drop=True)


def shape_table(data_dir: str | Path | None = None) -> pd.DataFrame:
    """The task-shape table of the default pod list (columns :data:`~fgdopt.suites.SHAPE_KEYS` + count)."""
    return count_rows(read_pods("default", data_dir), SHAPE_KEYS)


def node_type_table(data_dir: str | Path | None = None) -> pd.DataFrame:
    """The node-type table of the GPU node list (columns :data:`~fgdopt.suites.NODE_TYPE_KEYS` + count)."""
    return count_rows(read_nodes(data_dir), NODE_TYPE_KEYS)


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.make_shape_table", __doc__)
    parser.add_argument("--data-dir", type=openb_dir, default=None,
                        help="openb folder (default: $FGDOPT_DATA or ~/.cache/fgdopt/openb)")
    parser.add_argument("--output-dir", type=output_dir, default=DEFAULT_OUTPUT,
                        help=f"folder for the two tables (default: {DEFAULT_OUTPUT})")
    args = parser.parse_args(argv)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for file, table in ((SHAPE_FILE, shape_table(args.data_dir)), (NODE_TYPE_FILE, node_type_table(args.data_dir))):
        path = args.output_dir / file
        table.to_csv(path, index=False)
        print(f"{path}: {len(table)} rows, {int(table['count'].sum())} counted", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
