"""What a heterogeneous run did to its jobs: JCT, makespan, finish-time fairness (Themis' rho), utilization.

Finish-time fairness (Themis, NSDI'20; Gavel's ``ftf`` policies): a job's rho is its JCT over the time it would take
alone on an *isolated share* of the cluster, ``1/N`` of every GPU type (Gavel's ``IsolatedPolicy``,
:func:`fgdopt.hetero.allocation.isolated_share`), with ``N`` the jobs present when it arrived (itself included):
``rho = JCT / (work / sum_j speed_j share_j)``. rho < 1: the job did better than under an equal partition. Jain's
index over the measured jobs' rho, ``(sum rho)^2 / (n sum rho^2)``, is 1 when every job is treated alike.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fgdopt.hetero.allocation import isolated_share
from fgdopt.model import GPU_MILLI
from fgdopt.timeline.engine import TimelineResult
from fgdopt.timeline.metrics import time_average

HETERO_COLUMNS = ("measured_jobs", "mean_jct_s", "p95_jct_s", "makespan_s", "mean_rho", "max_rho", "jain_rho",
                  "utilization", "preemptions")
"""Keys of :func:`hetero_stats` (seconds; rho dimensionless; utilization a fraction of the GPUs)."""


def jobs_present_at_arrival(submit_s: np.ndarray, finish_s: np.ndarray) -> np.ndarray:
    """Per job, the jobs submitted at or before its submission and not finished before it (itself included)."""
    done = np.sort(np.where(np.isnan(finish_s), np.inf, finish_s))
    arrived = np.searchsorted(np.sort(submit_s), submit_s, side="right")
    return arrived - np.searchsorted(done, submit_s, side="right")


def finish_time_fairness(result: TimelineResult, speed: Mapping[str, np.ndarray],
                         gpus: Mapping[str, int]) -> np.ndarray:
    """Every job's rho (module docstring); NaN for jobs that did not finish."""
    jobs = result.jobs
    types = tuple(gpus)
    thr = np.column_stack([np.asarray(speed[g], dtype=np.float64) for g in types])
    cap = np.array([gpus[g] for g in types], dtype=np.float64)
    share = isolated_share(jobs.tasks.num_gpu, cap, jobs_present_at_arrival(jobs.submit_s, result.finish_s))
    alone_s = jobs.duration_s / (thr * share).sum(axis=1)
    return (result.finish_s - jobs.submit_s) / alone_s


def hetero_stats(result: TimelineResult, speed: Mapping[str, np.ndarray], gpus: Mapping[str, int]) -> dict:
    """:data:`HETERO_COLUMNS` over the measured jobs of ``result``.

    ``makespan_s`` runs from the first measured submission to the last measured finish (for a static batch, the
    makespan); ``utilization`` is the time-averaged share of GPUs allocated over that span (from the instants up to
    its end only, so that a run stopped there gives the same figures as one that went on). A measured job that did
    not finish makes the JCT figures NaN.
    """
    measured = result.jobs.measured
    jct = (result.finish_s - result.jobs.submit_s)[measured]
    rho = finish_time_fairness(result, speed, gpus)[measured]
    first, last = float(result.jobs.submit_s[measured].min()), float(np.max(result.finish_s[measured]))
    times = result.series.time_s.to_numpy()
    upto = np.searchsorted(times, last, side="right")   # the instants up to the last measured finish: nothing after it
    busy = time_average(times[:upto], result.series.alloc_milli.to_numpy()[:upto], (first, last)) if last > first \
        else float("nan")
    return {"measured_jobs": int(measured.sum()), "mean_jct_s": float(jct.mean()),
            "p95_jct_s": float(np.percentile(jct, 95)), "makespan_s": last - first,
            "mean_rho": float(rho.mean()), "max_rho": float(rho.max()),
            "jain_rho": float(rho.sum() ** 2 / (len(rho) * (rho ** 2).sum())),
            "utilization": busy / (GPU_MILLI * sum(gpus.values())),
            "preemptions": int(result.preemptions[measured].sum())}
