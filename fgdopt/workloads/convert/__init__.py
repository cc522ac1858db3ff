"""Converters of the public GPU-cluster traces into the open job format (:mod:`fgdopt.workloads.format`).

One module per format, each with ``convert(paths) -> Conversion``; :data:`FORMATS` names them, and
:mod:`fgdopt.workloads.download` fetches their raw files from pinned addresses. :func:`write_conversion` writes a
conversion's ``workload.csv``, ``cluster.json`` (where the trace lists its nodes) and ``summary.json``. The gang
rule of each format is in its module's docstring.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

from fgdopt.workloads.convert.common import Conversion
from fgdopt.workloads.format import check_workload_frame, write_workload

FORMATS = ("philly", "helios", "acme", "pai2020", "spot2026", "swf", "openb")
"""The trace formats with a converter (the module of each: ``fgdopt.workloads.convert.<format>``)."""


def format_module(fmt: str):
    """The converter module of ``fmt``; ``ValueError`` in one line for an unknown format."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return importlib.import_module(f"fgdopt.workloads.convert.{fmt}")


def convert(fmt: str, paths: list[str | os.PathLike]) -> Conversion:
    """Convert the raw files ``paths`` of a trace in format ``fmt`` (:data:`FORMATS`).

    Raises
    ------
    ValueError : one line naming the file: an unknown format, a missing file, a bad row (the converter's), a trace
        of no rows, or rows all dropped (with the reasons).
    """
    module = format_module(fmt)
    paths = [str(p) for p in paths]
    if missing := [p for p in paths if not Path(p).is_file()]:
        what = "a folder; expected a file" if Path(missing[0]).is_dir() else "no such file"
        raise ValueError(f"{missing[0]}: {what}")
    conv = module.convert(paths)
    if conv.rows and not len(conv.jobs):                         # every row read was dropped: say why
        why = "; ".join(f"{n} {reason}" for reason, n in conv.dropped.items() if n)
        raise ValueError(f"{paths[0]}: no job kept of the {conv.rows} row(s) read (dropped: {why or 'none'})")
    conv.jobs = check_workload_frame(conv.jobs, paths[0])      # the open format's columns, defaults and checks
    return conv


def write_conversion(conv: Conversion, fmt: str, inputs, out: str | os.PathLike) -> dict:
    """Write ``workload.csv`` (checked by the format's reader rules), ``cluster.json`` (when the trace lists nodes)
    and ``summary.json`` into the folder ``out``; returns the summary."""
    out = Path(out)
    write_workload(conv.jobs, out / "workload.csv")
    if conv.nodes is not None:
        (out / "cluster.json").write_text(json.dumps({"name": f"{fmt}-nodes", "nodes": [
            {k: v for k, v in node.items() if k != "name"} | {"sn": node["name"]} for node in conv.nodes],
            "tasks": []}, indent=1) + "\n")
    summary = conv.summary(fmt, [str(p) for p in inputs])
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary
