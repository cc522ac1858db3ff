"""What every converter shares: the result (:class:`Conversion`), column checks, times, and the gang rule.

A converter reads a trace's raw files with pandas (whole columns, no loop over rows) and returns the jobs in the
open job format (:mod:`fgdopt.workloads.format`), the nodes where the trace lists them, and a summary of what it
kept, dropped (with the count per reason) and assumed. Bad input (a missing file or column, a negative duration,
a job on 0 nodes) raises ``ValueError`` in one line naming the file, the row (0-based data row) and the field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.model import GPU_MILLI


@dataclass
class Conversion:
    """A converted trace.

    Attributes
    ----------
    jobs : DataFrame in the open job format (:data:`fgdopt.workloads.format.FORMAT_COLUMNS`, any order).
    nodes : the trace's nodes as instance records (``cpu_milli, memory_mib, gpu, model, name``), or None when the
        trace lists none.
    rows : raw job rows read. dropped : reason -> rows dropped. assumed : sentences, each a default or rule used.
    """

    jobs: pd.DataFrame
    nodes: list[dict] | None
    rows: int
    dropped: dict[str, int] = field(default_factory=dict)
    assumed: list[str] = field(default_factory=list)

    def summary(self, fmt: str, inputs: list[str]) -> dict:
        """The summary written to ``summary.json`` (and printed): counts, drops, assumptions, gang sizes."""
        workers = self.jobs["workers"].to_numpy()
        return {"format": fmt, "inputs": [str(p) for p in inputs], "rows_read": int(self.rows),
                "jobs_kept": int(len(self.jobs)), "dropped": {k: int(v) for k, v in self.dropped.items() if v},
                "gangs": int((workers > 1).sum()), "max_workers": int(workers.max(initial=0)),
                "nodes": None if self.nodes is None else len(self.nodes), "assumed": list(self.assumed)}


def need_columns(frame: pd.DataFrame, path: str | os.PathLike, columns) -> None:
    """``ValueError`` naming ``path`` and the columns of ``columns`` that ``frame`` lacks."""
    if missing := [c for c in columns if c not in frame.columns]:
        raise ValueError(f"{path}: missing column{'s' * (len(missing) > 1)} {', '.join(missing)}; the trace's files "
                         f"have {', '.join(columns)}")


def read_table(path: str | os.PathLike, columns, *, header: bool = True, **kw) -> pd.DataFrame:
    """A CSV of the trace, checked for ``columns``; a headerless file (``header=False``) gets ``columns`` as its
    names and must have that many fields."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path, header=0 if header else None, names=None if header else list(columns), **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a CSV file ({str(exc).splitlines()[0]})") from None
    need_columns(frame, path, columns)
    return frame


def numbers(frame: pd.DataFrame, path, column: str, *, low: float | None = 0) -> np.ndarray:
    """``frame[column]`` as float64 (NaN where empty); ``ValueError`` naming the file, the first row and the field
    where a value is not a number or is below ``low``."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    if (bad := np.flatnonzero(np.isnan(values) & raw.notna().to_numpy())).size:
        raise ValueError(f"{path}: row {int(bad[0])}: field {column!r} is not a number ({raw.iloc[bad[0]]!r})")
    if low is not None and (bad := np.flatnonzero(values < low)).size:
        raise ValueError(f"{path}: row {int(bad[0])}: field {column!r} is {values[bad[0]]:g}, must be >= {low:g}")
    return values


def seconds(values: pd.Series, path, column: str) -> np.ndarray:
    """Date-time strings (ISO 8601, with or without a zone; empty, ``None`` or ``NaT`` = missing) or numbers as
    float seconds (NaN where missing); ``ValueError`` naming the first row that is neither."""
    if pd.api.types.is_numeric_dtype(values):
        return values.to_numpy(dtype=np.float64)
    text = values.astype(object).where(values.notna(), "").astype(str).str.strip()
    text = text.where(~text.isin(["", "None", "NaT", "nan"]), None)
    parsed = pd.to_datetime(text, errors="coerce", utc=True, format="ISO8601")
    if (bad := np.flatnonzero(parsed.isna().to_numpy() & text.notna().to_numpy())).size:
        raise ValueError(f"{path}: row {int(bad[0])}: field {column!r} is not a date-time ({values.iloc[bad[0]]!r})")
    ns = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(np.float64)
    return np.where(parsed.isna().to_numpy(), np.nan, ns / 1e9)


def check_duration(duration: np.ndarray, path, column: str, rows: np.ndarray | None = None) -> None:
    """``ValueError`` naming the first row whose run time is negative (NaN is missing, not negative)."""
    if (bad := np.flatnonzero(duration < 0)).size:
        row = int(bad[0]) if rows is None else int(rows[bad[0]])
        raise ValueError(f"{path}: row {row}: field {column!r} gives a negative duration ({duration[bad[0]]:g} s)")


def split_gang(total_gpu: np.ndarray, nodes: np.ndarray, path, column: str,
               rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The gang rule of a trace that gives a job's total GPUs and its node count: ``workers = nodes`` parts of
    ``ceil(total_gpu / nodes)`` GPUs each. Returns ``(workers, gpus per worker, jobs rounded up)``; ``ValueError``
    naming the first row (``rows``: the raw row of each value) on 0 nodes (``workers`` 0)."""
    if (bad := np.flatnonzero(nodes < 1)).size:
        raise ValueError(f"{path}: row {int(rows[bad[0]])}: field {column!r} is {nodes[bad[0]]:g}: a job on 0 nodes "
                         "(workers 0)")
    per = np.ceil(total_gpu / nodes)
    return nodes.astype(np.int64), per.astype(np.int64), int((per * nodes != total_gpu).sum())


def gpu_shape(gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """GPUs per worker (a real number, e.g. PAI's 0.5) as ``(num_gpu, gpu_milli, rounded)``: 0 -> CPU-only; a
    fraction below 1 -> one GPU at that many milli-GPU (at least 1); above 1 -> whole GPUs, rounded up (counted)."""
    gpus = np.nan_to_num(gpus, nan=0.0)
    share = (gpus > 0) & (gpus < 1)
    num = np.where(share, 1, np.ceil(gpus)).astype(np.int64)
    milli = np.where(share, np.maximum(1, np.round(gpus * GPU_MILLI)), np.where(num > 0, GPU_MILLI, 0)).astype(np.int64)
    return num, milli, int(((gpus > 1) & (gpus != np.round(gpus))).sum())


def rebase(submit: np.ndarray) -> np.ndarray:
    """Submission times as seconds from the first submission."""
    return submit - submit.min() if submit.size else submit


def node_gang_jobs(raw: pd.DataFrame, path, memory_mib: np.ndarray | None) -> Conversion:
    """The jobs of a Slurm-style table (Helios, Acme): ``job_id, user, gpu_num, cpu_num, node_num, submit_time,
    duration``, totals per job, split into ``workers = node_num`` equal parts (:func:`split_gang`); ``memory_mib``
    per worker per raw row (None: 0). Rows without a submission, a duration or a node count are dropped."""
    submit = seconds(raw["submit_time"], path, "submit_time")
    duration = numbers(raw, path, "duration", low=None)
    check_duration(duration, path, "duration")
    gpu, cpu = np.nan_to_num(numbers(raw, path, "gpu_num")), np.nan_to_num(numbers(raw, path, "cpu_num"))
    nodes = numbers(raw, path, "node_num")
    keep = ~(np.isnan(submit) | np.isnan(duration) | np.isnan(nodes))
    rows = np.flatnonzero(keep)
    workers, per_gpu, rounded = split_gang(gpu[keep], nodes[keep], path, "node_num", rows)
    memory = np.zeros(len(rows)) if memory_mib is None else memory_mib[keep]
    jobs = pd.DataFrame({"name": raw["job_id"].to_numpy()[keep], "submit_s": rebase(submit[keep]),
                         "duration_s": duration[keep], "num_gpu": per_gpu, "gpu_milli": np.where(per_gpu > 0, 1000, 0),
                         "cpu_milli": (np.ceil(cpu[keep] / workers) * 1000).astype(np.int64),
                         "memory_mib": memory.astype(np.int64), "workers": workers,
                         "user": raw["user"].fillna("").to_numpy()[keep]})
    return Conversion(jobs, None, len(raw), {"no submit_time, duration or node_num": int((~keep).sum())}, [
        f"workers = node_num, each ceil(gpu_num / node_num) whole GPUs and ceil(cpu_num / node_num) cores "
        f"({rounded} job(s) rounded up)"])
