"""A schedule over time (when and where every job runs) and its one check: a replay on the ``ClusterState``.

The offline scheduling problem (docs/semantics.md "Offline schedule"): every job ``j`` of a :class:`JobSet` gets a start
``start_s[j] >= submit_s[j]`` and a placement (node, GPU ids) that it holds over ``[start_s, start_s +
duration_s)``; at every moment the jobs holding a placement satisfy the one feasibility rule
(:mod:`fgdopt.state`: node CPU and memory, each GPU's 1000 milli-GPU, whole-GPU jobs on wholly free GPUs,
``gpu_spec``). A job whose shape fits no *empty* node is **rejected** (as in the engine): it gets no start and
leaves every objective. A zero-duration job holds its placement over an empty interval: it only has to fit an
empty node. Objectives over the admitted jobs (seconds): ``mean-jct`` (mean of finish - submit), ``makespan``
(last finish; 0 without jobs) and ``mean-wait`` (mean of start - submit; reported, = mean-jct - mean duration).

:func:`validate_schedule` replays a schedule event by event (at one instant: the finishes, then the starts, as
the engine does) through :meth:`ClusterState.place` / :meth:`ClusterState.remove`, so a schedule is judged by
the one rule whatever produced it; :func:`objective_value` recomputes an objective from the start times alone.
:func:`recorded_run` runs the time engine (:func:`fgdopt.timeline.simulate`) with a policy whose every choice
is recorded, so that an engine run is a :class:`Schedule` too (node and GPUs per job). Nothing here imports a
solver: the exact model and the bounds are :mod:`formulations.schedule`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fgdopt.frag import Workload
from fgdopt.model import Cluster
from fgdopt.policies import make_policy
from fgdopt.state import ClusterState, InfeasiblePlacement
from fgdopt.timeline import JobSet, TimelineResult, simulate

OBJECTIVES = ("mean-jct", "makespan", "mean-wait")
"""Objectives of a schedule (seconds); the exact model minimizes the first two, the third is reported."""


def rejected_jobs(cluster: Cluster, jobs: JobSet) -> np.ndarray:
    """Boolean mask of the jobs whose shape fits no empty node of ``cluster`` (the engine rejects them)."""
    empty = ClusterState(cluster, jobs.tasks)
    return np.array([not empty.feasible_nodes(t).any() for t in jobs.tasks], dtype=bool)


@dataclass(frozen=True, eq=False)
class Schedule:
    """Start time and placement of every job (input order of its :class:`JobSet`).

    Attributes
    ----------
    start_s : float64 (n,), start in seconds (NaN: never started, i.e. rejected).
    node : int64 (n,), node of every job (-1 where it never started).
    gpus : tuple of tuples, GPU ids of every job on its node (() for CPU-only and unstarted jobs).
    """

    start_s: np.ndarray
    node: np.ndarray
    gpus: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        start = np.array(self.start_s, dtype=np.float64)
        node = np.array(self.node, dtype=np.int64)
        for arr in (start, node):
            arr.setflags(write=False)
        gpus = tuple(tuple(int(g) for g in gs) for gs in self.gpus)
        if not len(start) == len(node) == len(gpus):
            raise ValueError(f"schedule has {len(start)} starts, {len(node)} nodes and {len(gpus)} GPU lists")
        if (np.isnan(start) != (node < 0)).any():
            raise ValueError("a job has a start without a node, or a node without a start")
        object.__setattr__(self, "start_s", start)
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "gpus", gpus)

    def __len__(self) -> int:
        return len(self.start_s)

    @property
    def started(self) -> np.ndarray:
        return self.node >= 0

    def finish_s(self, jobs: JobSet) -> np.ndarray:
        """Finish time of every job (NaN where it never started), seconds."""
        return self.start_s + jobs.duration_s


def objective_value(jobs: JobSet, schedule: Schedule, objective: str) -> float:
    """``objective`` (:data:`OBJECTIVES`) of ``schedule`` over its started jobs, recomputed from the start times
    (seconds; NaN for a mean over no job, 0 for the makespan of no job)."""
    started = schedule.started
    submit, duration, start = jobs.submit_s[started], jobs.duration_s[started], schedule.start_s[started]
    if objective == "mean-jct":
        return float((start + duration - submit).mean()) if started.any() else math.nan
    if objective == "mean-wait":
        return float((start - submit).mean()) if started.any() else math.nan
    if objective == "makespan":
        return float((start + duration).max(initial=0.0))
    raise ValueError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")


def validate_schedule(cluster: Cluster, jobs: JobSet, schedule: Schedule) -> ClusterState:
    """Replay ``schedule`` event by event on an empty ``ClusterState`` and raise unless it is feasible.

    Checked: the schedule covers the job set; the started jobs are exactly the admitted ones (the jobs that fit
    some empty node, :func:`rejected_jobs`); no job starts before its submission or runs forever; at every
    instant, after the finishes at that instant, each job starting then is placed by
    :meth:`ClusterState.place` (the one feasibility rule) on its node and GPUs; a zero-duration job is placed
    and removed at once. Returns the state at the end (empty again).

    Raises
    ------
    InfeasiblePlacement : naming the first job (and time) that breaks a rule.
    """
    n = len(jobs)
    if len(schedule) != n:
        raise InfeasiblePlacement(f"schedule covers {len(schedule)} jobs, the job set has {n}")
    rejected = rejected_jobs(cluster, jobs)
    started = schedule.started
    if (bad := np.flatnonzero(started == rejected)).size:
        j = int(bad[0])
        raise InfeasiblePlacement(f"job {j} ({jobs.tasks.names[j]}): " + (
            "fits no empty node but is started" if rejected[j] else "fits an empty node but never starts"))
    early = started & (schedule.start_s < jobs.submit_s - 1e-9)
    if (bad := np.flatnonzero(early | (started & ~np.isfinite(jobs.duration_s)))).size:
        j = int(bad[0])
        raise InfeasiblePlacement(f"job {j} ({jobs.tasks.names[j]}): starts at {schedule.start_s[j]} s, before "
                                  f"its submission at {jobs.submit_s[j]} s, or never finishes")
    state = ClusterState(cluster, jobs.tasks)
    rows = np.flatnonzero(started)
    finish = schedule.finish_s(jobs)
    # events (time, kind, job): kind 0 = finish, 1 = start, 2 = the finish of a zero-duration job started then
    events = [(float(finish[j]), 0, int(j)) for j in rows if jobs.duration_s[j] > 0]
    events += [(float(schedule.start_s[j]), 1, int(j)) for j in rows]
    events += [(float(finish[j]), 2, int(j)) for j in rows if jobs.duration_s[j] == 0]
    for t, kind, j in sorted(events):
        if kind == 1:
            try:
                state.place(j, int(schedule.node[j]), schedule.gpus[j])
            except InfeasiblePlacement as exc:
                raise InfeasiblePlacement(f"at {t} s: {exc}") from None
        else:
            state.remove(j)
    return state


class _Recorder:
    """A policy wrapper that records the (node, GPUs) of every job it places (the engine starts a job right
    after the policy chose for it)."""

    job_aware = True

    def __init__(self, policy, n: int):
        self.policy = policy
        self.name = getattr(policy, "name", type(policy).__name__)
        self.inner_aware = getattr(policy, "job_aware", False)
        self.gpus: list[tuple[int, ...]] = [()] * n

    def __call__(self, state, task, job: int):
        choice = self.policy(state, task, job=job) if self.inner_aware else self.policy(state, task)
        if choice is not None:
            self.gpus[job] = tuple(int(g) for g in choice[1])
        return choice


def recorded_run(cluster: Cluster, jobs: JobSet, policy: str, queue: str, *, seed: int = 0
                 ) -> tuple[TimelineResult, Schedule]:
    """:func:`~fgdopt.timeline.simulate` of ``jobs`` under ``policy`` / ``queue`` (no eviction), and the run as a
    :class:`Schedule` (the policy's GPUs recorded at every start). The policy is built as ``simulate`` builds a
    named one (seeded by ``seed``, FGD's target workload the job shapes).

    Raises
    ------
    ValueError : the run left a job unfinished (a job that never finishes has no schedule).
    """
    pol = make_policy(policy, seed=seed, workload=Workload.from_tasks(jobs.tasks))
    recorder = _Recorder(pol, len(jobs))
    result = simulate(cluster, jobs, recorder, queue, frag=False)
    if (bad := np.flatnonzero(np.isnan(result.finish_s) & ~rejected_jobs(cluster, jobs))).size:
        raise ValueError(f"{policy}/{queue}: job {int(bad[0])} never finished")
    node = np.where(np.isfinite(result.start_s), result.node, -1)
    return result, Schedule(result.start_s, node, tuple(recorder.gpus))
