"""The portfolio of schedules: every (placement policy, queue discipline) engine run, each validated and named.

:func:`run` is the upper side of the offline scheduling problem at any scale: it runs the time engine
(:func:`fgdopt.timeline.schedule.recorded_run`) under every policy x discipline, replays each run through
:func:`~fgdopt.timeline.schedule.validate_schedule` (the one feasibility rule, event by event) and returns the
candidates, best (least mean wait) first. A candidate is named ``policy/queue``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fgdopt.model import Cluster
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import Schedule, objective_value, recorded_run, validate_schedule


@dataclass(frozen=True, eq=False)
class Candidate:
    """One validated schedule of the portfolio.

    Attributes
    ----------
    method : ``policy/queue`` (the recipe that built it).
    schedule : the schedule (validated by replay).
    mean_wait_s : mean of start - submit over the started jobs (seconds), recomputed from ``schedule``.
    cpu_s : CPU seconds of the engine run (this process), without the replay check.
    """

    method: str
    schedule: Schedule
    mean_wait_s: float
    cpu_s: float


def run(cluster: Cluster, jobs: JobSet, *, policies: list[str], queues: list[str], seed: int = 0) -> list[Candidate]:
    """Every ``policy/queue`` run of ``jobs`` on ``cluster``, validated, least mean wait first (ties: input order).

    Raises
    ------
    fgdopt.state.InfeasiblePlacement : a run that breaks the feasibility rule (an engine defect).
    ValueError : a run that leaves a job unfinished.
    """
    found = []
    for policy in policies:
        for queue in queues:
            cpu = time.process_time()
            _, schedule = recorded_run(cluster, jobs, policy, queue, seed=seed)
            cpu = time.process_time() - cpu
            validate_schedule(cluster, jobs, schedule)
            found.append(Candidate(f"{policy}/{queue}", schedule, objective_value(jobs, schedule, "mean-wait"), cpu))
    return sorted(found, key=lambda c: c.mean_wait_s)
