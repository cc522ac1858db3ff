"""A schedule over time (when and where every job runs) and its one check: a replay on the ``ClusterState``.

The offline scheduling problem (docs/semantics.md "Offline schedule"): every job ``j`` of a :class:`JobSet` gets a start
``start_s[j] >= submit_s[j]`` and a placement (node, GPU ids) that it holds over ``[start_s, start_s +
duration_s)``; at every moment the jobs holding a placement satisfy the one feasibility rule
(:mod:`fgdopt.state`: node CPU and memory, each GPU's 1000 milli-GPU, whole-GPU jobs on wholly free GPUs,
``gpu_spec``). A job whose shape fits no *empty* node is **rejected** (as in the engine): it gets no start and
leaves every objective. A zero-duration job holds its placement over an empty interval: it only has to fit an
empty node. Objectives over the admitted jobs (seconds): ``mean-jct`` (mean of finish - submit), ``makespan``
(last finish; 0 without jobs) and ``mean-wait`` (mean of start - submit; reported, = mean-jct - mean duration).
A *gang* (``workers > 1``) holds all its parts ``((node, GPU ids), ...)`` over its interval (:attr:`Schedule.parts`);
it is rejected when its parts do not fit the empty cluster together.

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
from fgdopt.model import NODE_FIELDS, Cluster
from fgdopt.policies import Policy, make_policy
from fgdopt.state import ClusterState, InfeasiblePlacement
from fgdopt.timeline import JobSet, TimelineResult, simulate
from fgdopt.timeline.admission import rejection_reasons

OBJECTIVES = ("mean-jct", "makespan", "mean-wait")
"""Objectives of a schedule (seconds); the exact model minimizes the first two, the third is reported."""
SAME_INSTANT_S = 1e-9
"""Times of a replay within this many seconds (plus 1e-12 of their size) of each other are one instant: a schedule's
times are real numbers carried in floats, and a job's ``start + duration`` may miss the start it meets by a rounding
(12.556 + 0.647 is 13.203000000000001: the exact model's job starting at 13.203 in the CPU a job of 0.647 s frees then
would otherwise start before that job ends)."""


def instant_tolerance(t):
    """Seconds within which a time ``t`` (seconds; a float or an array) and another are one instant of a replay
    (:data:`SAME_INSTANT_S`)."""
    return SAME_INSTANT_S + 1e-12 * np.abs(t)


def rejected_jobs(cluster: Cluster, jobs: JobSet) -> np.ndarray:
    """Boolean mask of the jobs whose shape fits no empty node of ``cluster`` (the engine rejects them; the one
    rule, with its reasons, is :func:`fgdopt.timeline.admission.rejection_reasons`)."""
    return rejection_reasons(cluster, jobs.tasks) != ""


@dataclass(frozen=True, eq=False)
class Schedule:
    """Start time and placement of every job (input order of its :class:`JobSet`).

    Attributes
    ----------
    start_s : float64 (n,), start in seconds (NaN: never started, i.e. rejected).
    node : int64 (n,), node of every job (-1 where it never started).
    gpus : tuple of tuples, GPU ids of every job on its node (() for CPU-only and unstarted jobs).
    parts : for gangs (``workers > 1``): per job its ``((node, GPU ids), ...)``, one per worker (``()`` for the
        other jobs; ``node`` and ``gpus`` hold the first part); ``None`` (default) when no job is a gang.
    """

    start_s: np.ndarray
    node: np.ndarray
    gpus: tuple[tuple[int, ...], ...]
    parts: tuple | None = None

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
        if self.parts is not None:
            parts = tuple(tuple((int(n), tuple(int(g) for g in gs)) for n, gs in ps) for ps in self.parts)
            if len(parts) != len(start) or any(ps and ps[0] != (node[j], gpus[j]) for j, ps in enumerate(parts)):
                raise ValueError("schedule parts: one list per job, its first part the job's node and GPUs")
            object.__setattr__(self, "parts", parts)

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


def relabel_like(cluster: Cluster, schedule: Schedule, reference: Schedule) -> Schedule:
    """``schedule`` with its nodes and GPUs renumbered, within the cluster's symmetry, to agree with ``reference``
    on as many jobs as possible: the same schedule (same starts, feasible where ``schedule`` is, same objective
    values) drawn on ``reference``'s numbering, so that two schedules of one instance can be compared job by job.

    Identical nodes (one type: equal :data:`~fgdopt.model.NODE_FIELDS`) may be permuted: per type, the permutation
    that maximizes the jobs placed on the same node in both schedules (an assignment problem, solved exactly by
    :func:`scipy.optimize.linear_sum_assignment`). Then the GPUs of a node, which are identical, are permuted the
    same way, maximizing the (job, GPU) pairs the two schedules share on that node.

    Parameters
    ----------
    cluster : the nodes both schedules run on.
    schedule, reference : schedules of the same job set (same length).

    Returns
    -------
    A new :class:`Schedule`; node ``-1`` (unstarted jobs) stays ``-1``.
    """
    from scipy.optimize import linear_sum_assignment

    if len(schedule) != len(reference):
        raise ValueError(f"schedule has {len(schedule)} jobs, the reference {len(reference)}")
    both = np.flatnonzero((schedule.node >= 0) & (reference.node >= 0))
    node_map = np.arange(cluster.n_nodes)
    types: dict[tuple, list[int]] = {}
    for i, kind in enumerate(zip(*(getattr(cluster, f).tolist() for f in NODE_FIELDS), strict=True)):
        types.setdefault(kind, []).append(i)
    for members in (np.array(m) for m in types.values() if len(m) > 1):
        index = np.full(cluster.n_nodes, -1)
        index[members] = np.arange(len(members))
        mine, theirs = index[schedule.node[both]], index[reference.node[both]]
        keep = (mine >= 0) & (theirs >= 0)
        common = np.zeros((len(members), len(members)))
        np.add.at(common, (mine[keep], theirs[keep]), 1)
        rows, cols = linear_sum_assignment(common, maximize=True)
        node_map[members[rows]] = members[cols]
    node = np.where(schedule.node >= 0, node_map[np.maximum(schedule.node, 0)], -1)
    gpu_map = {}
    for n in range(cluster.n_nodes):
        size = int(cluster.gpu[n])
        common = np.zeros((size, size))
        for j in both[(node[both] == n) & (reference.node[both] == n)].tolist():
            for g in schedule.gpus[j]:
                common[g, list(reference.gpus[j])] += 1
        rows, cols = linear_sum_assignment(common, maximize=True)
        gpu_map[n] = dict(zip(rows.tolist(), cols.tolist(), strict=True))
    gpus = tuple(tuple(gpu_map[int(node[j])][g] for g in gs) for j, gs in enumerate(schedule.gpus))
    parts = None if schedule.parts is None else tuple(   # a gang's every part, on the same renumbering
        tuple((int(node_map[n]), tuple(gpu_map[int(node_map[n])][g] for g in gs)) for n, gs in ps)
        for ps in schedule.parts)
    return Schedule(schedule.start_s, node, gpus, parts)


def validate_schedule(cluster: Cluster, jobs: JobSet, schedule: Schedule) -> ClusterState:
    """Replay ``schedule`` event by event on an empty ``ClusterState`` and raise unless it is feasible.

    Checked: the schedule covers the job set; the started jobs are exactly the admitted ones (the jobs that fit
    some empty node, :func:`rejected_jobs`); no job starts before its submission or runs forever; at every
    instant (times within :func:`instant_tolerance` of each other are one), after the finishes at that instant,
    each job starting then is placed by :meth:`ClusterState.place` (the one feasibility rule) on its node and
    GPUs; a zero-duration job is placed and removed at once, before the other jobs starting then (it finishes at
    its start instant, processed as a further instant at the same time: the engine may start a job in the
    resources it held, SPEC "Time"), as is a job that ends within the instant it starts (too short for the clock
    where it runs: 1 ms at 1e15 s, where float64 times are multiples of 1/8 s). Returns the state at the end (empty
    again).

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
    early = started & (schedule.start_s < jobs.submit_s - instant_tolerance(jobs.submit_s))
    if (bad := np.flatnonzero(early | (started & ~np.isfinite(jobs.duration_s)))).size:
        j = int(bad[0])
        raise InfeasiblePlacement(f"job {j} ({jobs.tasks.names[j]}): starts at {schedule.start_s[j]} s, before "
                                  f"its submission at {jobs.submit_s[j]} s, or never finishes")
    state = ClusterState(cluster, jobs.tasks)
    rows = np.flatnonzero(started)
    finish = schedule.finish_s(jobs)
    # events (time, kind, job): kind 0 = finish, 1 = a job that ends within the instant it starts (zero-duration,
    # or too short for the clock where it runs: placed, then removed), 2 = start
    zero = finish - schedule.start_s <= instant_tolerance(schedule.start_s)
    events = [(float(finish[j]), 0, int(j)) for j in rows if not zero[j]]
    events += [(float(schedule.start_s[j]), 1 if zero[j] else 2, int(j)) for j in rows]
    instants, instant = [], None                     # times within instant_tolerance of an instant's first are it
    for t, kind, j in sorted(events):
        if instant is None or t - instant > instant_tolerance(instant):
            instant = t
        instants.append((instant, kind, j))
    for t, kind, j in sorted(instants):
        if kind == 0:
            state.remove(j)
            continue
        try:
            if jobs.tasks.workers[j] > 1:
                state.place_parts(j, schedule.parts[j] if schedule.parts is not None else ())
            else:
                state.place(j, int(schedule.node[j]), schedule.gpus[j])
        except InfeasiblePlacement as exc:
            raise InfeasiblePlacement(f"at {t} s: {exc}") from None
        if kind == 1:
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
        self.time_aware = self.inner_aware and getattr(policy, "time_aware", False)
        self.gpus: list[tuple[int, ...]] = [()] * n
        self.parts: list[tuple] = [()] * n                      # a gang's parts, the latest ``workers`` choices

    def __call__(self, state, task, job: int, **timing):
        choice = (self.policy(state, task, job=job, **timing) if self.time_aware else
                  self.policy(state, task, job=job) if self.inner_aware else self.policy(state, task))
        if choice is not None:
            self.gpus[job] = tuple(int(g) for g in choice[1])
            workers = int(state.tasks.workers[job])
            if workers > 1:
                self.parts[job] = (*self.parts[job], (int(choice[0]), self.gpus[job]))[-workers:]
        return choice


def recorded_run(cluster: Cluster, jobs: JobSet, policy: str | Policy, queue: str, *, seed: int = 0
                 ) -> tuple[TimelineResult, Schedule]:
    """:func:`~fgdopt.timeline.simulate` of ``jobs`` under ``policy`` / ``queue`` (no eviction), and the run as a
    :class:`Schedule` (the policy's GPUs recorded at every start). A policy name is built as ``simulate`` builds a
    named one (seeded by ``seed``, FGD's target workload the job shapes); a policy object (a fresh one: it is
    called for this run only) is used as it is.

    Raises
    ------
    ValueError : the run left a job unfinished (a job that never finishes has no schedule).
    """
    pol = (make_policy(policy, seed=seed, workload=Workload.from_tasks(jobs.tasks)) if isinstance(policy, str)
           else policy)
    recorder = _Recorder(pol, len(jobs))
    result = simulate(cluster, jobs, recorder, queue, frag=False)
    if (bad := np.flatnonzero(np.isnan(result.finish_s) & ~rejected_jobs(cluster, jobs))).size:
        label = policy if isinstance(policy, str) else recorder.name
        raise ValueError(f"{label}/{queue}: job {int(bad[0])} never finished")
    node = np.where(np.isfinite(result.start_s), result.node, -1)
    if not jobs.tasks.has_gangs:
        return result, Schedule(result.start_s, node, tuple(recorder.gpus))
    parts = tuple(p if n >= 0 else () for p, n in zip(recorder.parts, node, strict=True))
    gpus = tuple(p[0][1] if p else g for p, g in zip(parts, recorder.gpus, strict=True))
    return result, Schedule(result.start_s, node, gpus, parts)
