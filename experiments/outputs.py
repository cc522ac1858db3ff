"""Outputs replaced atomically: a study writes its files into a temporary folder beside ``--output`` and moves each
into place only once all are complete.

Usage::

    with staged(args.output) as tmp:           # tmp: an empty folder on the same file system as args.output
        write_outputs(results, tmp)             # an exception here leaves args.output as it was
    # every file of tmp is now in args.output (os.replace: each one whole, old or new, never half written)

A stopped sweep (Ctrl-C, a failing run) writes the files of the runs that finished with ``partial=True``: they are
moved only where no file of that name is there already, so the outputs of an earlier complete run are never
replaced by a partial one (the finished runs are in the run journal: ``--resume`` completes them).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd


@contextmanager
def staged(output: str | os.PathLike, *, partial: bool = False) -> Iterator[Path]:
    """A temporary folder beside ``output`` whose files move into ``output`` when the block ends without error.

    Parameters
    ----------
    output : the study's output folder (made if needed, with its parents).
    partial : move a file only where ``output`` has none of that name (the outputs of a stopped sweep).

    Yields
    ------
    The temporary folder (``.NAME.tmp-XXXX`` beside ``output``, or inside it where its parent is not writable),
    deleted on exit whatever happens.

    Raises
    ------
    NotADirectoryError : ``output`` is a file.
    """
    output = Path(output).absolute()
    if output.exists() and not output.is_dir():
        raise NotADirectoryError(f"--output {output} is a file; expected a folder")
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    except OSError:                                     # a parent we may not write: stage inside the folder
        output.mkdir(exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=output))
    try:
        yield tmp
        output.mkdir(exist_ok=True)
        for file in sorted(tmp.rglob("*")):
            if file.is_dir():
                continue
            target = output / file.relative_to(tmp)
            if partial and target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(file, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_runs(results: list[dict], out: Path, name: str, columns, keys, plot) -> pd.DataFrame:
    """``{name}.csv`` (one row per run: each result's ``row``, in ``columns``), ``{name}_jobs.csv`` (every run's
    per-job rows, its ``keys`` first) and, when a run finished, ``plot(frame, out / f"{name}.png")``, into ``out``;
    returns the runs' frame."""
    frame = pd.DataFrame([r["row"] for r in results], columns=list(columns))
    frame.to_csv(out / f"{name}.csv", index=False)
    jobs = pd.DataFrame([j for r in results for j in r["jobs"]])
    if len(jobs):
        jobs = jobs[[*keys, *(c for c in jobs.columns if c not in keys)]]
    jobs.to_csv(out / f"{name}_jobs.csv", index=False)
    if len(frame):
        plot(frame, out / f"{name}.png")
    return frame


UNITS = {"s": "s", "pct": "%", "milli": "milli-GPU", "h": "h"}
"""Name parts of the output columns that are units, and how a printed heading writes them."""
WORDS = {"jct": "JCT", "cpu": "CPU", "gpu": "GPU", "gpus": "GPUs", "avg": "avg", "alloc": "allocated",
         "frag": "fragmentation", "p50": "median", "p95": "95th pct", "p99": "99th pct", "rho": "rho"}
"""Name parts of the output columns that a printed heading spells out."""


def heading(column: str) -> str:
    """A column name of the outputs in words, for the tables printed on the terminal: underscores become spaces,
    the unit goes in parentheses at the end (:data:`UNITS`), abbreviations are spelt out (:data:`WORDS`).

    >>> heading("mean_jct_s_sharing"), heading("alloc_time_avg_pct"), heading("jct_ratio")
    ('mean JCT sharing (s)', 'allocated time avg (%)', 'JCT ratio')
    """
    parts = column.split("_")
    units = [UNITS[p] for p in parts if p in UNITS]
    text = " ".join(WORDS.get(p, p) for p in parts if p not in UNITS)
    return f"{text} ({units[0]})" if units else text


def printed(frame: pd.DataFrame, headings: dict[str, str] | None = None, digits: int = 2) -> str:
    """The table a study prints on the terminal: ``frame`` without the columns empty in every row (NaN or ""),
    headed in words (``headings``, else :func:`heading`), numbers with ``digits`` decimals (a number that would
    read 0 that way, with ``digits`` significant digits: a rate of 0.004 jobs/hour is not shown as 0.00).

    Examples
    --------
    >>> print(printed(pd.DataFrame({"rate": [0.004, 2.0, 0.0]})))
     rate
    0.004
     2.00
     0.00
    """
    empty = [c for c in frame.columns if frame[c].isna().all() or (frame[c].astype(str) == "").all()]
    shown = frame.drop(columns=empty)
    shown.columns = [(headings or {}).get(c, heading(c)) for c in shown.columns]
    small = 0.5 * 10.0 ** -digits
    return shown.to_string(index=False, float_format=lambda v: f"{v:.{digits}g}" if 0 < abs(v) < small
                           else f"{v:.{digits}f}")
