"""The open job format: one row per job, CSV or Parquet, read and checked by :func:`read_workload_frame`.

Columns (units as everywhere in fgdopt, docs/semantics.md, "Units and data"):

================  ========  ========================  ======================================================
column            dtype     required / default        meaning
================  ========  ========================  ======================================================
``submit_s``      float     required                  submission, seconds from the start of the run (finite,
                                                      >= 0)
``duration_s``    float     required                  run time on its allocation, seconds (>= 0; ``inf``
                                                      never ends)
``num_gpu``       int       required                  GPUs of one worker (0 = CPU-only; > 1 whole GPUs)
``gpu_milli``     int       1000 if num_gpu, else 0   milli-GPU per GPU of one worker (1..999: a share of one
                                                      GPU)
``cpu_milli``     int       required                  CPU of one worker, milli-cores (>= 0)
``memory_mib``    int       required                  memory of one worker, MiB (>= 0)
``workers``       int       1                         identical parts of a gang, each on one node, all started
                                                      and ended together (>= 1)
``gpu_spec``      str       ``""`` (any)              GPU models the job may run on, joined by ``|``
``priority``      int       0                         higher outranks lower (priority preemption)
``user``          str       ``""``                    who submitted it (statistics only)
``name``          str       ``job-<row>``             unique name (identifies the job in the outputs)
================  ========  ========================  ======================================================

A file is CSV unless its name ends in ``.parquet`` / ``.pq``. An empty CSV field of an optional column takes the
default; a required column must have a value in every row. Checks are plain numpy over whole columns (no schema
library: the rules are a dozen range tests, and one pass each keeps a million rows under a second); the shape rules
of a worker (``num_gpu`` against ``gpu_milli``, the most GPUs of a node) are the data model's
(:class:`fgdopt.model.TaskSet`), applied when the jobs are built (:func:`fgdopt.timeline.jobs.read_workload`).
Every error is one line: the file, the job row (0-based, the first data row is row 0) and the field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.traces import check_csv_rows


@dataclass(frozen=True)
class Column:
    """One column of the open job format: ``name``, ``dtype`` (``float``, ``int`` or ``str``), whether a file must
    have it, the lowest value allowed (numbers), and its meaning with its unit."""

    name: str
    dtype: str
    required: bool
    low: float | None
    doc: str


COLUMNS = (
    Column("name", "str", False, None, "unique job name (default job-<row>)"),
    Column("submit_s", "float", True, 0, "submission time, seconds"),
    Column("duration_s", "float", True, 0, "run time, seconds (inf: never ends)"),
    Column("num_gpu", "int", True, 0, "GPUs per worker"),
    Column("gpu_milli", "int", False, 0, "milli-GPU per GPU (default 1000 with GPUs, else 0)"),
    Column("cpu_milli", "int", True, 0, "CPU per worker, milli-cores"),
    Column("memory_mib", "int", True, 0, "memory per worker, MiB"),
    Column("workers", "int", False, 1, "gang parts, each on one node (default 1)"),
    Column("gpu_spec", "str", False, None, "allowed GPU models joined by | (default: any)"),
    Column("priority", "int", False, None, "priority, higher outranks lower (default 0)"),
    Column("user", "str", False, None, "submitting user (default empty)"),
)
"""The columns of the open job format, in the order :func:`write_workload` writes them."""
FORMAT_COLUMNS = tuple(c.name for c in COLUMNS)
PARQUET_SUFFIXES = (".parquet", ".pq")


def _fail(path: Path, row: int, field: str, text: str) -> ValueError:
    return ValueError(f"{path}: job row {row}: field {field!r} {text}")


def _numbers(path: Path, col: Column, raw: pd.Series) -> np.ndarray:
    """``raw`` as float64, checked: present (NaN where an optional column is empty), a number, at least
    ``col.low``, an integer for ``int`` columns, finite except ``duration_s`` (which may be ``inf``)."""
    if not pd.api.types.is_numeric_dtype(raw):
        raw = raw.astype(object).where(raw.notna(), "").astype(str).str.strip()
        raw = raw.replace({"": np.nan, "nan": np.nan, "NaN": np.nan})
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    missing = np.isnan(values)
    if col.required and (bad := np.flatnonzero(missing)).size:
        raise _fail(path, int(bad[0]), col.name, f"is missing or not a number ({raw.iloc[bad[0]]!r})")
    if not col.required and (bad := np.flatnonzero(missing & raw.notna().to_numpy())).size:
        raise _fail(path, int(bad[0]), col.name, f"is not a number ({raw.iloc[bad[0]]!r})")
    given = values[~missing]
    rows = np.flatnonzero(~missing)
    finite = np.isfinite(given) | ((col.name == "duration_s") & (given == np.inf))
    if (bad := np.flatnonzero(~finite)).size:
        raise _fail(path, int(rows[bad[0]]), col.name, f"must be finite, got {given[bad[0]]}")
    if col.low is not None and (bad := np.flatnonzero(given < col.low)).size:
        raise _fail(path, int(rows[bad[0]]), col.name, f"must be a number >= {col.low:g}, got {given[bad[0]]:g}")
    if col.dtype == "int" and (bad := np.flatnonzero(given != np.round(given))).size:
        raise _fail(path, int(rows[bad[0]]), col.name, f"must be an integer, got {given[bad[0]]:g}")
    return values


def check_workload_frame(frame: pd.DataFrame, path: str | os.PathLike = "<frame>") -> pd.DataFrame:
    """The rows of ``frame`` as the open job format: every column of :data:`COLUMNS` in order, defaults filled, the
    dtypes set (float64, int64, str).

    Raises
    ------
    ValueError : one line naming ``path`` and the first bad column, or job row and field (an unknown or missing
        column, no rows, a missing, non-numeric, negative or non-integer value, ``workers`` 0, a name used twice).
    """
    path = Path(path)
    unknown = [c for c in frame.columns if c not in FORMAT_COLUMNS]
    missing = [c.name for c in COLUMNS if c.required and c.name not in frame.columns]
    if unknown or missing:
        wrong = [f"{what} column{'s' * (len(cols) > 1)} {', '.join(cols)}"
                 for what, cols in (("unknown", unknown), ("missing", missing)) if cols]
        raise ValueError(f"{path}: {' and '.join(wrong)}; expected {', '.join(FORMAT_COLUMNS)} (required: "
                         f"{', '.join(c.name for c in COLUMNS if c.required)})")
    n = len(frame)
    if n == 0:
        raise ValueError(f"{path}: no jobs (a header and no rows)")
    frame = frame.reset_index(drop=True)
    out: dict[str, np.ndarray] = {}
    for col in COLUMNS:
        if col.dtype == "str":
            if col.name in frame:
                values = frame[col.name].astype(object).where(frame[col.name].notna(), "").astype(str).str.strip()
            else:
                values = pd.Series([""] * n)
            out[col.name] = values.to_numpy(dtype=object)
            continue
        values = _numbers(path, col, frame[col.name]) if col.name in frame else np.full(n, np.nan)
        if col.name == "gpu_milli":
            default = np.where(out["num_gpu"] > 0, 1000.0, 0.0)
        else:
            default = {"workers": 1.0, "priority": 0.0}.get(col.name, np.nan)
        out[col.name] = np.where(np.isnan(values), default, values)
    if (bad := np.flatnonzero(out["workers"] < 1)).size:
        raise _fail(path, int(bad[0]), "workers", f"must be an integer >= 1, got {out['workers'][bad[0]]:g}")
    names = out["name"]
    if (blank := names == "").any():
        names[blank] = [f"job-{i}" for i in np.flatnonzero(blank)]
    dup = pd.Series(names).duplicated(keep="first").to_numpy()
    if (bad := np.flatnonzero(dup)).size:
        first = int(np.flatnonzero(names == names[bad[0]])[0])
        raise _fail(path, int(bad[0]), "name", f"{names[bad[0]]!r} is the name of job row {first} too "
                    "(names must be unique: they identify the jobs in the outputs)")
    result = pd.DataFrame({c.name: out[c.name] for c in COLUMNS})
    for col in COLUMNS:
        if col.dtype == "int":
            result[col.name] = result[col.name].astype(np.int64)
    return result


def read_workload_frame(path: str | os.PathLike) -> pd.DataFrame:
    """Read a workload file in the open job format (CSV, or Parquet by its suffix) and check it
    (:func:`check_workload_frame`); one row per job, in file order.

    Raises
    ------
    FileNotFoundError : no such file.
    ValueError : one line naming the file and the first bad row or column (also: a CSV row with more or fewer
        fields than the header, a file that is not CSV or Parquet).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"workload file {path} not found")
    if path.suffix.lower() in PARQUET_SUFFIXES:
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:                              # pyarrow raises its own error types
            raise ValueError(f"{path}: not a Parquet file ({type(exc).__name__}: {exc})".splitlines()[0]) from None
    else:
        if check_csv_rows(path, "job row") == 0:
            raise ValueError(f"{path}: no jobs (a header and no rows)")
        try:
            frame = pd.read_csv(path, keep_default_na=False, dtype=str)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a CSV file ({exc})") from None
    return check_workload_frame(frame, path)


def write_workload(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``frame`` (checked by :func:`check_workload_frame`) to ``path``: Parquet by its suffix, else CSV."""
    path = Path(path)
    frame = check_workload_frame(frame, path)
    if path.suffix.lower() in PARQUET_SUFFIXES:
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path
