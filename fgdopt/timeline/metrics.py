"""Per-run statistics of a :class:`~fgdopt.timeline.engine.TimelineResult` (seconds, milli-GPU, percent).

Per job: wait = start - submit, JCT = finish - submit (docs/semantics.md "Time"). The statistics cover the *measured*
jobs (:attr:`JobSet.measured`): the mean and the 50th / 95th / 99th percentiles (numpy's linear interpolation) of wait
over the measured jobs that started and of JCT over those that finished, overall and per size class
(:data:`SIZE_CLASSES`: CPU-only, sharing, one whole GPU, several GPUs; mean and 99th percentile). Time averages are
integrals of the per-instant series (a value holds from its instant to the next; the empty cluster before the first)
over the job set's measurement window, divided by its length. ``blocked_job_hours`` integrates the jobs blocked by
fragmentation over the whole run (job-hours); ``makespan_s`` is the last finish of a measured job (NaN if one never
finishes). The eviction columns (:mod:`fgdopt.timeline.preemption`) cover every job: preemptions, suspensions,
migrations and MIG re-layout evictions (counts, :mod:`fgdopt.mig.timeline`), ``lost_gpu_s`` (progress thrown
away) and ``overhead_gpu_s`` (restart, suspension and
checkpoint time), both in GPU-seconds (GPU demand x seconds), and ``thrashed_jobs``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fgdopt.model import GPU_MILLI, TaskSet
from fgdopt.timeline.engine import DROPPED, FINISHED, REJECTED, TimelineResult

SIZE_CLASSES = ("cpu", "sharing", "gpu1", "multi")
"""Size classes of jobs: no GPU, a fraction of one GPU, one whole GPU, two or more GPUs."""

STATS_COLUMNS = ("jobs", "measured", "rejected", "dropped", "unfinished", "mean_wait_s", "p50_wait_s", "p95_wait_s",
                 "p99_wait_s", "mean_jct_s", "p50_jct_s", "p95_jct_s", "p99_jct_s", "makespan_s",
                 "alloc_time_avg_pct", "frag_time_avg", "pending_time_avg", "blocked_time_avg_milli",
                 "blocked_job_hours", "preemptions", "suspensions", "migrations", "evictions", "lost_gpu_s",
                 "overhead_gpu_s", "thrashed_jobs",
                 "events", "wall_s", "cpu_s",
                 *(f"{q}_{m}_s_{c}" for q in ("mean", "p99") for m in ("wait", "jct") for c in SIZE_CLASSES))
"""Keys of :func:`run_stats`, in order."""


def size_class(tasks: TaskSet) -> np.ndarray:
    """The :data:`SIZE_CLASSES` name of every task."""
    cls = np.where(tasks.num_gpu == 0, "cpu", np.where(tasks.gpu_milli < GPU_MILLI, "sharing",
                                                        np.where(tasks.num_gpu == 1, "gpu1", "multi")))
    return cls.astype(object)


def time_integral(times: np.ndarray, values: np.ndarray, window: tuple[float, float]) -> float:
    """The integral over ``window`` of a step function: ``values[i]`` from ``times[i]`` to ``times[i+1]`` (the last
    to the window's end), 0 before ``times[0]`` (value x seconds).

    Examples
    --------
    >>> time_integral(np.array([0.0, 10.0]), np.array([2.0, 4.0]), (5.0, 15.0))
    30.0
    """
    a, b = window
    times = np.asarray(times, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    ends = np.append(times[1:], max(b, times[-1] if len(times) else b))
    overlap = np.clip(np.minimum(ends, b) - np.maximum(times, a), 0.0, None)
    return float((values * overlap).sum())


def time_average(times: np.ndarray, values: np.ndarray, window: tuple[float, float]) -> float:
    """:func:`time_integral` over ``window`` divided by its length; the value at ``window[0]`` if it is empty.

    Examples
    --------
    >>> time_average(np.array([0.0, 10.0]), np.array([2.0, 4.0]), (5.0, 15.0))
    3.0
    """
    a, b = window
    if b <= a:
        k = np.searchsorted(np.asarray(times, dtype=np.float64), a, side="right") - 1
        return float(values[k]) if k >= 0 else 0.0
    return time_integral(times, values, window) / (b - a)


def _moments(values: np.ndarray, prefix: str) -> dict[str, float]:
    if len(values) == 0:
        return {f"mean_{prefix}_s": np.nan, **{f"p{q}_{prefix}_s": np.nan for q in (50, 95, 99)}}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {f"mean_{prefix}_s": float(values.mean()), f"p50_{prefix}_s": float(p50), f"p95_{prefix}_s": float(p95),
            f"p99_{prefix}_s": float(p99)}


def run_stats(result: TimelineResult) -> dict:
    """The per-run statistics (:data:`STATS_COLUMNS`) of ``result`` (module docstring)."""
    jobs = result.jobs
    measured = jobs.measured
    wait = result.start_s - jobs.submit_s
    jct = result.finish_s - jobs.submit_s
    started = measured & np.isfinite(result.start_s)
    finished = measured & (result.status == FINISHED)
    series = result.series
    times = series["time_s"].to_numpy()
    cap = result.cluster.gpu_capacity_milli
    window = jobs.window_s
    gpus = jobs.tasks.gpu_demand / GPU_MILLI
    ended = np.isin(result.status, (FINISHED, REJECTED, DROPPED))
    blocked = series["blocked_jobs"].to_numpy(dtype=np.float64)
    run_end = times[-1] if len(times) else 0.0
    stats = {
        "jobs": len(jobs), "measured": int(measured.sum()),
        "rejected": int((result.status == REJECTED).sum()), "dropped": int((result.status == DROPPED).sum()),
        "unfinished": int((measured & ~ended).sum()),
        **_moments(wait[started], "wait"), **_moments(jct[finished], "jct"),
        "makespan_s": float(np.nanmax(result.finish_s[measured])) if ended[measured].all() and finished.any()
        else np.nan,
        "alloc_time_avg_pct": 100.0 * time_average(times, series["alloc_milli"].to_numpy(), window) / cap
        if cap else np.nan,                                      # a cluster of no GPUs: no GPU allocation to rate
        "frag_time_avg": time_average(times, series["frag_milli"].to_numpy(), window),
        "pending_time_avg": time_average(times, series["pending"].to_numpy(), window),
        "blocked_time_avg_milli": time_average(times, series["blocked_milli"].to_numpy(), window),
        "blocked_job_hours": time_integral(times, blocked, (0.0, run_end)) / 3600.0,
        "preemptions": int(result.preemptions.sum()), "suspensions": int(result.suspensions.sum()),
        "migrations": int(result.migrations.sum()),
        "evictions": int(result.evictions.sum()),
        "lost_gpu_s": float((gpus * result.lost_s).sum()), "overhead_gpu_s": float((gpus * result.overhead_s).sum()),
        "thrashed_jobs": int(result.thrashed.sum()),
        "events": result.events, "wall_s": result.wall_s, "cpu_s": result.cpu_s,
    }
    classes = size_class(jobs.tasks)
    for metric, values, mask in (("wait", wait, started), ("jct", jct, finished)):
        for c in SIZE_CLASSES:
            sel = mask & (classes == c)
            stats[f"mean_{metric}_s_{c}"] = float(values[sel].mean()) if sel.any() else np.nan
            stats[f"p99_{metric}_s_{c}"] = float(np.percentile(values[sel], 99)) if sel.any() else np.nan
    return {k: stats[k] for k in STATS_COLUMNS}


def sample_count(every_s: float, end_s: float) -> int:
    """How many samples :func:`sample_series` takes every ``every_s`` seconds up to ``end_s`` seconds (the last within
    half a step of ``end_s``; one when ``every_s`` is 0)."""
    return math.ceil((end_s + every_s / 2) / every_s) if every_s > 0 else 1


def sample_series(series: pd.DataFrame, every_s: float, end_s: float | None = None) -> pd.DataFrame:
    """The series at ``0, every_s, 2 every_s, ...`` up to ``end_s`` (default: the last instant): each sample is the
    state after the last instant at or before it (the empty cluster before the first)."""
    times = series["time_s"].to_numpy()
    end = float(times[-1]) if end_s is None and len(times) else float(end_s or 0.0)
    grid = every_s * np.arange(sample_count(every_s, end), dtype=np.float64)
    k = np.searchsorted(times, grid, side="right") - 1
    out = series.iloc[np.clip(k, 0, None)].reset_index(drop=True).copy()
    if len(out):
        out.loc[k < 0, [c for c in series.columns if c != "time_s"]] = 0
    out["time_s"] = grid
    return out
