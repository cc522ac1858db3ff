"""One record for every lower bound of the offline scheduling problem (:mod:`fgdopt.timeline.schedule`).

Every bound of :mod:`formulations.schedule` (the pooled LP, the configuration LP, the node-schedule
decomposition) returns a :class:`BoundRecord`, so the study can tabulate them side by side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

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
