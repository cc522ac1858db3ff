"""One record for every lower bound of the offline scheduling problem (:mod:`fgdopt.timeline.schedule`).

Every bound of :mod:`formulations.schedule` (the pooled LP, the configuration LP, the node-schedule
decomposition) returns a :class:`BoundRecord`, so the study can tabulate them side by side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from fgdopt.model import Cluster
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import rejected_jobs
from formulations.schedule.bound import PooledBound

VALID_FOR = ("all", "background-on-time")
"""``all``: the bound holds for every schedule; ``background-on-time``: only for the schedules that start the
background jobs at their submission."""


@dataclass(frozen=True, eq=False)
class BoundRecord:
    """A lower bound on the counted jobs' mean wait and mean JCT (seconds).

    Attributes
    ----------
    name : the bound's name (``pooled``, ``config``, ``nodedecomp``...).
    wait_s : lower bound on the mean wait of the counted jobs (seconds; NaN without counted jobs or when the
        bound does not apply, e.g. status ``infeasible``).
    jct_s : lower bound on their mean JCT (seconds): ``wait_s`` plus their mean duration.
    status : ``optimal`` (the relaxation was solved to its optimum), ``time_limit`` (stopped early: the value is
        still a valid bound, weaker), ``iteration_limit`` (likewise), ``imprecise`` (the LP solver ended short of
        its tolerances: the value is the bound its duals certify, valid), ``infeasible``, ``error`` (the value is
        the trivial bound, wait >= 0).
    valid_for : one of :data:`VALID_FOR`.
    wall_s, cpu_s : wall and CPU seconds (CPU: this process).
    jobs : the number of counted jobs.
    info : solver figures (iterations, columns, grid...).
    """

    name: str
    wait_s: float
    jct_s: float
    status: str
    valid_for: str
    wall_s: float
    cpu_s: float
    jobs: int
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.valid_for not in VALID_FOR:
            raise ValueError(f"valid_for must be one of {', '.join(VALID_FOR)}, got {self.valid_for!r}")


def pooled_record(bound: PooledBound, valid_for: str = "all") -> BoundRecord:
    """The pooled LP's result (:func:`formulations.schedule.bound.pooled_bound`) as a :class:`BoundRecord`;
    ``valid_for`` ``background-on-time`` when it was computed with pinned jobs. A stopped or imprecise LP gives the
    bound its duals certify, a failed one the trivial bound (wait 0)."""
    wait = bound.mean_wait_s if bound.status != "infeasible" else math.nan
    return BoundRecord("pooled", wait, bound.mean_jct_s, bound.status, valid_for, bound.wall_s, bound.cpu_s,
                       bound.jobs, {"columns": bound.columns, "step_s": bound.step_s, "slack_s": bound.slack_s})


class Counted(NamedTuple):
    """The jobs a bound counts (those some empty node holds): their ``rows`` (job indices), submissions ``r`` and
    durations ``p`` (seconds, float64), the first submission ``t0`` and the grid's ``horizon_s`` (seconds)."""

    rows: np.ndarray
    r: np.ndarray
    p: np.ndarray
    t0: float
    horizon_s: float


def counted_jobs(cluster: Cluster, jobs: JobSet, horizon_s: float | None, intervals: int) -> Counted | None:
    """The jobs a time-grid bound counts and its horizon: ``horizon_s`` if given, else the last submission plus a
    tenth of the submission span and twice the median duration; at least ``t0 + 1e-3 * intervals``. None when no
    job is counted.

    Raises
    ------
    ValueError : a counted job never finishes (duration inf): no schedule has a finite mean wait.
    """
    rows = np.flatnonzero(~rejected_jobs(cluster, jobs))
    if len(rows) == 0:
        return None
    r, p = jobs.submit_s[rows].astype(np.float64), jobs.duration_s[rows].astype(np.float64)
    if not np.isfinite(p).all():
        raise ValueError("a job never finishes (duration inf): no schedule has a finite mean wait")
    t0 = float(r.min())
    if horizon_s is None:
        horizon_s = float(r.max()) + 0.1 * float(r.max() - t0) + 2 * float(np.median(p))
    return Counted(rows, r, p, t0, max(float(horizon_s), t0 + 1e-3 * intervals))
