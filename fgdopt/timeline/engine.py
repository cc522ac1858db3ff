"""The event-driven cluster simulation (docs/semantics.md "Time"): jobs arrive, wait, run on one ``ClusterState``.

:class:`Engine` is the loop, a small object as in SimPy: :meth:`Engine.step` processes one instant,
:meth:`Engine.run` the instants up to a time, :meth:`Engine.result` gives the :class:`TimelineResult` (a record of
named fields, checked when built); :func:`simulate` builds an engine and runs it. What it moves is kept in a few
objects, each of one job (the engine's *rooms*):

==================================================  ==================================================================
:class:`~fgdopt.timeline.clock.Clock`               the instant, the heap of finish events ``(time, seq, job)`` with
                                                    stale events dropped by sequence number, the mechanism's wake-up;
                                                    knows nothing of jobs
:class:`~fgdopt.timeline.jobtable.JobTable`         **where a job's progress is kept**: status, start, finish, node,
                                                    the current run (start, start cost, speed, work), progress kept,
                                                    run, busy, lost and overhead seconds, eviction counters (struct of
                                                    arrays; the :class:`TimelineResult` is built from it)
:class:`~fgdopt.timeline.pending.PendingQueue`      the pending jobs in the discipline's order
                                                    (:mod:`fgdopt.timeline.queues`), indexed by shape, with the fit /
                                                    unfit bookkeeping
:class:`~fgdopt.timeline.placement.Placer`          the policy call, the one feasibility rule (``ClusterState.place``
                                                    and ``remove``), GPU tenants and interference re-rates; starts,
                                                    ends and evicts runs (the table and the clock updated together)
mechanisms (:mod:`fgdopt.timeline.preemption`)      plug-ins: they read a read-only view and return plans
                                                    (:class:`~fgdopt.timeline.preemption.Plan`), which the loop
                                                    carries out; every hook the loop calls on them is declared in
                                                    :class:`~fgdopt.timeline.preemption.Mechanism`, with defaults in
                                                    :class:`~fgdopt.timeline.preemption.MechanismBase`
:class:`~fgdopt.timeline.recorder.Recorder`         the series (one row per instant, F(M) per node), the snapshots
==================================================  ==================================================================

There is no fixed time step: the next instant is the earliest of the next submission, the next live finish event
and the mechanism's wake-up. **One instant t**, as docs/semantics.md fixes it (each step names the object that does it):

0. the snapshots asked for before t are taken (``Recorder``);
1. every job finishing at t leaves (``Clock.due`` -> ``Placer.finish``: :meth:`~fgdopt.state.ClusterState.remove`,
   co-tenants re-rated, the run's time booked in the ``JobTable``); the unfit shapes are tested on the freed nodes
   (``PendingQueue.unblock``);
2. every job submitted at t arrives, in input order: a job whose shape fits no *empty* node of the cluster is
   **rejected** (never queued; its reason: :func:`~fgdopt.timeline.admission.rejection_reasons`), and so is a
   gang whose parts do not fit the empty cluster together (:meth:`~fgdopt.state.ClusterState.parts_fit`);
   the others join the pending queue (``PendingQueue.enqueue``);
3. one scheduling pass offers pending jobs to the policy in the discipline's order (``PendingQueue.backfill_pass``
   or ``fifo_pass`` -> ``Placer.try_start``); a started job takes the policy's node and GPUs
   (:meth:`~fgdopt.state.ClusterState.place`, the one feasibility rule) and its finish event is scheduled at
   ``t + duration_s`` (at speed 1, without checkpoints);
4. while jobs are pending (at every instant, for a mechanism with ``every_instant = True``, e.g.
   :class:`fgdopt.cpu_aware.CpuAware`), the mechanism is asked for plans (at most
   :data:`~fgdopt.timeline.preemption.MAX_PLANS`): each is carried out (evictions, resources out of service taken
   out or put back, :mod:`fgdopt.timeline.failures`, then starts) and followed by 1's
   unblocking and a pass; then its wake-up;
5. the shapes nobody tried are checked (``PendingQueue.refresh``) and the series row is recorded (``Recorder``).

A zero-duration job started at t finishes at t: its finish is processed right after the pass that started it, as
a further instant at the same time (finishes, then a pass). A job with ``duration_s = inf`` never leaves.

**Gangs** (jobs of ``workers > 1`` identical parts, :class:`~fgdopt.model.Task`): the policy places the parts one
by one on the state with the earlier parts held (:func:`fgdopt.policies.gang.choose_parts`); the gang starts when
all its parts are placed, at once (:meth:`~fgdopt.state.ClusterState.place_parts`), and its finish or eviction
frees every part at once; a job's ``node`` is its first part's. ``gang_slowdown`` multiplies the run time of a gang
whose parts span several nodes. Under a backfilling discipline, ``gang_reserve_s`` keeps a blocked gang from
starving: once the first pending gang in queue order has waited that long, no job behind it starts before it (so
it waits at most ``gang_reserve_s`` plus the time the jobs running then, and those ahead of it, take to free room).
A mechanism sees a running gang at its first part's node and evicts it whole; it plans for single-node jobs only.

Pending jobs are indexed by *shape*; the pass never rescans every pending job (:mod:`fgdopt.timeline.pending`).
Recorded at every instant (the :attr:`TimelineResult.series`): allocated milli-GPU, running and pending jobs,
pending GPU demand, F(M) of the one evaluator (:mod:`fgdopt.frag`, per-node values refreshed on the touched nodes
only), and what is **blocked by fragmentation**: of the pending jobs with GPU demand that fit no node, the most that
the cluster's total free milli-GPU could hold together, taken smallest demand first (``blocked_jobs``), and their
demand (``blocked_milli``, at most the total free milli-GPU). :func:`fgdopt.timeline.metrics.run_stats` turns a
result into the per-run statistics; :func:`simulate` can also copy out the state at chosen instants
(:class:`Snapshot`) for the certified optimum of the jobs present (:mod:`formulations.timeline`).

**A new mechanism** plugs in without touching the loop: an object with ``name``, ``checkpointing`` and
``plan(view) -> Plan | None`` (:class:`~fgdopt.timeline.preemption.Mechanism`; a subclass of
:class:`~fgdopt.timeline.preemption.MechanismBase` inherits the defaults of the optional hooks, which
:func:`~fgdopt.timeline.preemption.as_mechanism` gives any other object), passed as ``simulate(...,
mechanism=obj)``, registered by name (:func:`~fgdopt.timeline.mechanisms.register_mechanism`) or named by a
``module:attribute`` spec. The smallest one preempts, for the first blocked job, every running job of lower
priority on node 0 when that makes room::

    from fgdopt.timeline.preemption import Checkpointing, PreemptPlan

    class ClearNodeZero:
        name, checkpointing = "clear-node-0", Checkpointing(transparent=True)

        def plan(self, view):
            for j in view.pending():                         # blocked jobs, in queue order
                low = [v for v in range(len(view.priority)) if view.state.node_of[v] == 0
                       and view.priority[v] < view.priority[j]]
                if low and view.state.fits_without(view.state.tasks[j], 0, low):
                    return PreemptPlan(j, tuple(low))
            return None
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fgdopt.frag import Workload
from fgdopt.interference import Interference
from fgdopt.mig.slices import is_mig
from fgdopt.model import Cluster
from fgdopt.policies import Policy, make_policy
from fgdopt.state import ClusterState, validate
from fgdopt.timeline.admission import DROPPED_REASON, rejection_reasons
from fgdopt.timeline.clock import Clock
from fgdopt.timeline.jobs import JobSet
from fgdopt.timeline.jobtable import DROPPED, FINISHED, PENDING, REJECTED, RUNNING, STATUSES, JobTable
from fgdopt.timeline.mechanisms import make_mechanism
from fgdopt.timeline.pending import PendingQueue, Shapes
from fgdopt.timeline.placement import Placer
from fgdopt.timeline.preemption import (
    MAX_PLANS,
    PLAN_TYPES,
    Mechanism,
    MigratePlan,
    MigrationDefrag,
    OutagePlan,
    Plan,
    RoundPlan,
    StartPlan,
    as_mechanism,
    helios_restart_s,
)
from fgdopt.timeline.queues import Discipline, make_discipline
from fgdopt.timeline.recorder import SERIES_COLUMNS, Recorder, Snapshot, same_capacity

__all__ = ["DROPPED", "FINISHED", "PENDING", "REJECTED", "RUNNING", "SCAN", "SERIES_COLUMNS", "STATUSES", "Engine",
           "Snapshot", "TimelineResult", "simulate"]

SCAN = 32
"""A mechanism sees the first this many pending jobs that fit no node, in queue order."""


class _View:
    """What a mechanism reads (:class:`fgdopt.timeline.preemption.View`), read from the engine's objects; the
    per-job arrays are computed only when a mechanism asks for them, so that a run without one pays nothing."""

    def __init__(self, state: ClusterState, priority: np.ndarray, jobs: JobTable, queue: PendingQueue,
                 clock: Clock, workload: Workload, restart_s: Callable[[int], float]):
        self.state, self.priority, self.workload, self.restart_s = state, priority, workload, restart_s
        self.first_gpu, self.left_at = jobs.first_gpu, jobs.left_at
        self.node_revision = None                                  # set by simulate (the placer's)
        self._jobs, self._queue, self._clock = jobs, queue, clock
        self._demand = state.tasks.gpu_demand

    @property
    def now(self) -> float:
        return self._clock.now

    def pending(self) -> list[int]:
        first = self._queue.first_unfit(SCAN)
        if self._queue.shapes.gangs:                                # a mechanism plans for single-node jobs only
            workers = self.state.tasks.workers
            return [j for j in first if workers[j] == 1]
        return first

    def queued(self) -> list[int]:
        return self._queue.queued()

    def waiting(self) -> np.ndarray:
        return self._queue.waiting()

    @property
    def work_s(self) -> np.ndarray:
        return self._jobs.work_s(self._clock.now)

    @property
    def lost_if_evicted(self) -> np.ndarray:
        return self._jobs.lost_if_evicted(self._clock.now, self._demand)

    @property
    def run_s(self) -> np.ndarray:
        return self._jobs.run_s(self._clock.now)

    def run_of(self, js: np.ndarray) -> np.ndarray:
        return self._jobs.run_s(self._clock.now, js)

    def work_of(self, js: np.ndarray) -> np.ndarray:
        return self._jobs.work_s(self._clock.now, js)


_PER_JOB = {"status": "i", "start_s": "f", "finish_s": "f", "node": "i", "preemptions": "i", "suspensions": "i",
            "lost_s": "f", "overhead_s": "f", "thrashed": "b", "migrations": "i", "run_s": "f", "busy_s": "f",
            "work_s": "f", "evictions": "i", "reason": "O"}
"""The per-job fields of :class:`TimelineResult` and their numpy dtype kinds."""


@dataclass(frozen=True, eq=False, kw_only=True)
class TimelineResult:
    """Outcome of :func:`simulate`: a record of named fields, checked when built (:meth:`__post_init__`: types and
    lengths) and by :meth:`check` (the run's consistency).

    Attributes
    ----------
    jobs : the simulated jobs. status : int8 per job, an index into :data:`STATUSES`.
    start_s, finish_s : float64 per job (NaN where the job never started / never finished).
    node : int64 per job, the node it ran on (-1 if it never started).
    series : DataFrame, one row per instant, :data:`SERIES_COLUMNS`.
    snapshots : the :class:`Snapshot` taken at the requested instants.
    state : the final :class:`~fgdopt.state.ClusterState` (the running jobs still placed).
    policy, queue : names; events : finish + submission events processed; instants : instants processed;
    wall_s, cpu_s : wall and CPU seconds of the simulation.
    mechanism : the eviction mechanism's name; per job: ``preemptions``, ``suspensions`` (counts), ``lost_s``
    (progress thrown away, s), ``overhead_s`` (restart, suspension and checkpoint time without progress, s),
    ``thrashed`` (preempted again before a checkpoint after an eviction), ``migrations`` (moves by a plan);
    ``run_s`` (seconds run, over the runs that ended), ``busy_s`` (of which with progress kept), ``work_s``
    (progress kept, in seconds of work at speed 1; ``duration_s`` once finished); ``evictions`` (MIG re-layouts,
    :mod:`fgdopt.mig.timeline`); ``reason`` (str per job: why a rejected job fits no empty node, a key of
    :data:`~fgdopt.timeline.admission.REJECT_REASONS`, ``busy`` for a dropped one, ``""`` otherwise).
    :meth:`check` verifies the run.
    """

    jobs: JobSet
    status: np.ndarray
    start_s: np.ndarray
    finish_s: np.ndarray
    node: np.ndarray
    series: pd.DataFrame
    snapshots: list[Snapshot]
    state: ClusterState
    policy: str
    queue: str
    events: int
    instants: int
    wall_s: float
    cpu_s: float
    mechanism: str
    preemptions: np.ndarray
    suspensions: np.ndarray
    lost_s: np.ndarray
    overhead_s: np.ndarray
    thrashed: np.ndarray
    migrations: np.ndarray
    run_s: np.ndarray
    busy_s: np.ndarray
    work_s: np.ndarray
    evictions: np.ndarray
    reason: np.ndarray

    def __post_init__(self) -> None:
        """Raise ``ValueError`` (one line naming the field) unless every field has its type, every per-job array one
        entry per job of its kind, and the series its columns."""
        n = len(self.jobs.tasks)
        for name, kind in _PER_JOB.items():
            value = getattr(self, name)
            if not isinstance(value, np.ndarray) or value.shape != (n,) or value.dtype.kind not in kind:
                got = (f"shape {value.shape}, dtype {value.dtype}" if isinstance(value, np.ndarray)
                       else type(value).__name__)
                raise ValueError(f"TimelineResult.{name}: expected an array of {n} entries of kind {kind!r}, "
                                 f"got {got}")
        for name, types in (("series", pd.DataFrame), ("state", ClusterState), ("policy", str), ("queue", str),
                            ("mechanism", str), ("snapshots", list), ("events", int), ("instants", int),
                            ("wall_s", float), ("cpu_s", float)):
            if not isinstance(getattr(self, name), types):
                raise ValueError(f"TimelineResult.{name}: expected {types.__name__}, got "
                                 f"{type(getattr(self, name)).__name__}")
        if tuple(self.series.columns) != SERIES_COLUMNS:
            raise ValueError(f"TimelineResult.series: expected columns {', '.join(SERIES_COLUMNS)}, got "
                             f"{', '.join(map(str, self.series.columns))}")
        if self.events < 0 or self.instants < 0:
            raise ValueError(f"TimelineResult.{'events' if self.events < 0 else 'instants'}: a negative count")

    def check(self) -> None:
        """Raise ``AssertionError`` unless the run is consistent (:func:`simulate` calls it on every result).

        Every job ends in one of :data:`STATUSES`, and: a job is placed in the final state exactly when it is
        running; a rejected or dropped job never started; a job that never started has no node; a finished job
        started, finished no earlier, did its whole work (``duration_s`` at speed 1) and ran (over all its runs) the
        time of that work plus the progress it lost and the restart, suspension and checkpoint time it spent (at
        speed 1 everywhere: its duration plus lost and overhead time); the final state validates (its free
        capacities are those of the running jobs placed anew by the one feasibility rule).
        """
        status = self.status
        if not np.isin(status, np.arange(len(STATUSES))).all():
            raise AssertionError("a job has no status")
        placed = self.state.node_of >= 0
        if not np.array_equal(placed, status == RUNNING):
            raise AssertionError(f"jobs {np.flatnonzero(placed != (status == RUNNING))[:5].tolist()} are placed "
                                 "but not running, or running but not placed")
        started = np.isfinite(self.start_s)
        if started[np.isin(status, (REJECTED, DROPPED))].any() or (self.node[~started] != -1).any():
            raise AssertionError("a rejected, dropped or never started job has a start or a node")
        done = status == FINISHED
        if not (started[done].all() and (self.finish_s[done] >= self.start_s[done]).all()):
            raise AssertionError("a finished job has no start, or finished before it started")
        # per job, what the clock can resolve: a time of 3e14 s is a multiple of 1/16 s, so a 1 ms job that runs then
        # runs 0 or 62.5 ms; each run rounds once
        runs = 1 + self.preemptions + self.suspensions + self.migrations + self.evictions
        atol = 1e-6 + 4 * runs * np.spacing(np.where(done, self.finish_s, 0.0))
        if not np.isclose(self.work_s, self.jobs.duration_s, rtol=1e-9, atol=atol)[done].all():
            bad = np.flatnonzero(done & ~np.isclose(self.work_s, self.jobs.duration_s, rtol=1e-9, atol=atol))
            raise AssertionError(f"finished jobs {bad[:5].tolist()} did other than their work")
        spent = self.busy_s + self.lost_s + self.overhead_s
        if not np.isclose(self.run_s, spent, rtol=1e-9, atol=atol)[done].all():
            bad = np.flatnonzero(done & ~np.isclose(self.run_s, spent, rtol=1e-9, atol=atol))[:5].tolist()
            raise AssertionError(f"jobs {bad} ran other than their work's time plus lost and overhead time")
        same_capacity(validate(self.cluster, self.jobs.tasks, self.state.placement(), self.state.elastic), self.state,
                      "final state")

    @property
    def cluster(self) -> Cluster:
        return self.state.cluster

    def counts(self) -> dict[str, int]:
        """How many jobs end in each of :data:`STATUSES`."""
        return {name: int((self.status == k).sum()) for k, name in enumerate(STATUSES)}

    def job_frame(self) -> pd.DataFrame:
        """One row per job: ``name, workers, submit_s, duration_s, start_s, finish_s, wait_s, jct_s, node, status,
        reason, measured`` (times in seconds, NaN where they do not exist; ``workers`` the parts of a gang, 1 for a
        single-node job, all started and finished at the job's times; ``node`` a gang's first part's; ``status``
        one of :data:`STATUSES`, ``reason`` why a job was rejected or dropped, :mod:`fgdopt.timeline.admission`)."""
        return pd.DataFrame({
            "name": self.jobs.tasks.names, "workers": self.jobs.tasks.workers, "submit_s": self.jobs.submit_s,
            "duration_s": self.jobs.duration_s,
            "start_s": self.start_s, "finish_s": self.finish_s, "wait_s": self.start_s - self.jobs.submit_s,
            "jct_s": self.finish_s - self.jobs.submit_s, "node": self.node,
            "status": np.array(STATUSES, dtype=object)[self.status],
            "reason": self.reason, "measured": self.jobs.measured})


def _pace(cluster: Cluster, n: int, speed: Mapping[str, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """Every job's speed on every GPU model of ``cluster``, float (n, models) (1 where ``speed`` gives none), and the
    model index of every node (``simulate``'s ``speed``)."""
    models, model_of = np.unique(cluster.model.astype(str), return_inverse=True)
    pace = np.ones((n, len(models)))
    if speed is not None:
        if unknown := sorted(set(speed) - set(models.tolist())):
            raise ValueError(f"speed given for GPU models {unknown} the cluster does not have ({', '.join(models)})")
        for k, m in enumerate(models.tolist()):
            if m in speed:
                pace[:, k] = np.asarray(speed[m], dtype=np.float64)
        if not (np.isfinite(pace) & (pace >= 0)).all():
            raise ValueError("speeds must be finite numbers >= 0")
    return pace, model_of


def _check_options(cluster: Cluster, tasks, mech: Mechanism, interference: Interference | None,
                   snapshots: Sequence[float], gang_reserve_s: float, gang_slowdown: float) -> None:
    """Raise ``ValueError`` (one line) for options that do not go together (``simulate``'s parameters)."""
    ckpt = mech.checkpointing
    if interference is not None:
        if len(interference.job_class) != len(tasks):
            raise ValueError(f"interference gives {len(interference.job_class)} job classes for {len(tasks)} jobs")
        if not ckpt.transparent and math.isfinite(ckpt.interval_s):
            raise ValueError(f"interference re-rates running jobs; mechanism {mech.name!r} checkpoints every "
                             f"{ckpt.interval_s} s, which a re-rate would reset (use transparent checkpointing)")
    if not (gang_slowdown >= 1 and math.isfinite(gang_slowdown)) or not gang_reserve_s >= 0:
        raise ValueError(f"gang_slowdown must be a finite number >= 1 (got {gang_slowdown}) and gang_reserve_s a "
                         f"number >= 0 (got {gang_reserve_s})")
    if tasks.has_gangs:
        why = ("a MIG cluster" if is_mig(cluster) else
               "interference" if interference is not None else
               f"mechanism {mech.name!r}" if (mech.span or mech.owns_starts or mech.elastic is not None
                                              or isinstance(mech, MigrationDefrag)) else
               "snapshots" if len(snapshots) else None)
        if why:
            raise ValueError(f"jobs with workers > 1 (gangs) are not supported with {why}")


class Engine:
    """One run of the event loop (module docstring), as a small object: :meth:`step` processes one instant,
    :meth:`run` the instants up to a time, :meth:`result` gives the :class:`TimelineResult`. :func:`simulate`
    builds one and runs it; its parameters are this class's.

    Examples
    --------
    >>> from fgdopt.model import Cluster, TaskSet
    >>> c = Cluster([8000], [1024], [1], ["T4"])
    >>> jobs = JobSet(TaskSet([1000] * 2, [0] * 2, [1] * 2, [1000] * 2), [0.0, 0.0], [10.0, 5.0])
    >>> engine = Engine(c, jobs, "best-fit", "fifo")
    >>> engine.step(), engine.now, engine.run(12.0).finish_s.tolist()
    (True, 0.0, [10.0, nan])
    >>> engine.run().finish_s.tolist()
    [10.0, 15.0]
    """

    def __init__(self, cluster: Cluster, jobs: JobSet, policy: str | Policy = "fgd",
                 queue: str | Discipline = "backfill", *, seed: int = 0, workload: Workload | None = None,
                 ranks: np.ndarray | None = None, snapshots: Sequence[float] = (), frag: bool = True,
                 mechanism: str | Mechanism = "none", restart_s: Callable[[int], float] = helios_restart_s,
                 speed: Mapping[str, np.ndarray] | None = None, interference: Interference | None = None,
                 gang_reserve_s: float = math.inf, gang_slowdown: float = 1.0):
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        self.discipline = discipline = make_discipline(queue) if isinstance(queue, str) else queue
        if workload is None:
            workload = Workload.from_tasks(jobs.tasks)
        pol = make_policy(policy, seed=seed, workload=workload, ranks=ranks) if isinstance(policy, str) else policy
        self.policy_name = getattr(pol, "name", type(pol).__name__)
        label = policy if isinstance(policy, str) else self.policy_name
        self.mech = mech = as_mechanism(make_mechanism(mechanism) if isinstance(mechanism, str) else mechanism)
        self.jobs, tasks, n = jobs, jobs.tasks, len(jobs.tasks)
        pace, model_of = _pace(cluster, n, speed)
        _check_options(cluster, tasks, mech, interference, snapshots, gang_reserve_s, gang_slowdown)
        self.state = state = ClusterState(cluster, tasks, mech.elastic)   # jobs whose GPU count the mechanism sets
        if state.elastic.any() and len(snapshots):
            raise ValueError(f"mechanism {mech.name!r} sets jobs' GPU counts (elastic): snapshots hold shapes, not "
                             "these")
        self.shapes = shapes = Shapes(tasks)
        self.shape_reason = rejection_reasons(cluster, shapes.tasks, spans=mech.span)   # why a shape fits no node
        self.admissible = self.shape_reason == ""
        self.qkey = np.asarray(discipline.keys(jobs), dtype=np.float64)
        if self.qkey.shape != (n,):
            raise ValueError(f"queue discipline {discipline.name!r}: keys() gave shape {self.qkey.shape}, expected "
                             f"({n},)")
        self.submit = jobs.submit_s
        self.arrivals = np.lexsort((np.arange(n), self.submit))    # submission order, ties in input order
        # the rooms of the engine (module docstring): each owns its part of the run's state
        self.clock = Clock(n)
        self.table = JobTable(jobs, pace, model_of, mech.checkpointing)
        self.pending = PendingQueue(shapes, self.qkey, self.submit, tasks.gpu_demand)
        self.placer = Placer(state, pol, getattr(pol, "job_aware", False), label, shapes, self.table, self.clock,
                             self.pending, interference, gang_slowdown, mech.gpu_speed)
        self.recorder = Recorder(state, workload, frag, snapshots)
        self.view = _View(state, jobs.priority, self.table, self.pending, self.clock, workload, restart_s)
        self.view.node_revision = self.placer.node_revision
        self.restart_s, self.gang_reserve_s = restart_s, gang_reserve_s
        self.reserve = bool(shapes.gangs) and gang_reserve_s < math.inf
        self.next_arrival = self.events = self.instants = 0

    @property
    def now(self) -> float:
        """The latest instant processed (s; 0 before the first)."""
        return self.clock.now

    def next_time(self) -> float:
        """The next instant: the earliest of the next submission, the next live finish and the mechanism's wake-up
        (``inf``: none is left)."""
        clock, n = self.clock, len(self.submit)
        t_fin = clock.heap[0][0] if clock.pending() else math.inf
        if self.next_arrival >= n and not clock.heap and clock.wake == math.inf:
            return math.inf
        t_sub = float(self.submit[self.arrivals[self.next_arrival]]) if self.next_arrival < n else math.inf
        return min(t_sub, t_fin, clock.wake)

    def step(self, until: float = math.inf) -> bool:
        """Process the next instant (module docstring, steps 0-5); False, with nothing done, when none is left at or
        before ``until`` (s)."""
        now = self.next_time()
        if now == math.inf or now > until:
            return False
        clock, placer, recorder, pending = self.clock, self.placer, self.recorder, self.pending
        woken = now == clock.wake
        if woken:
            clock.wake = math.inf
        if recorder.snap_times and recorder.snap_times[0] < now:
            recorder.snapshots_before(now, self.table, pending, placer.alloc)
        clock.now = now
        self.instants += 1
        placer.touched, placer.freed = set(), set()
        for j in clock.due(now):                                       # 1. every finish
            placer.finish(j)
            self.events += 1
        self._unblock()
        new_jobs = self._arrive(now)                                   # 2. every submission
        if self.discipline.drops and not self.mech.owns_starts:       # 3. the pass
            self._start_or_drop(new_jobs)
        else:
            if not self.mech.owns_starts:
                self._schedule()
            self._plans(woken)                                         # 4. the mechanism's plans, its wake-up
        pending.refresh(self.state, placer.touched)                    # 5. what fits, and the series row
        recorder.record(now, placer.alloc, placer.running, pending, placer.touched)
        return True

    def run(self, until: float = math.inf, *, last: bool = False) -> TimelineResult:
        """Process the instants at or before ``until`` (s; jobs may then end running or pending) and return the
        result so far (:meth:`result`). When no instant is left, or ``last`` says none will be processed, the
        resources still out of service (:mod:`fgdopt.timeline.failures`) are put back first: the final state holds
        jobs only."""
        while self.step(until):
            pass
        if last or self.next_time() == math.inf:
            self.placer.put_back(list(self.placer.out))
        return self.result()

    def _arrive(self, now: float) -> list[int]:
        """Step 2: the jobs submitted at ``now`` are rejected or queued; returns those a dropping discipline is to
        try (in input order)."""
        submit, arrivals, n = self.submit, self.arrivals, len(self.submit)
        status, drops = self.table.status, self.discipline.drops
        new_jobs = []
        while self.next_arrival < n and submit[arrivals[self.next_arrival]] == now:
            j = int(arrivals[self.next_arrival])
            self.next_arrival += 1
            self.events += 1
            if not self.admissible[self.shapes.of[j]]:
                status[j] = REJECTED
            elif drops:
                new_jobs.append(j)
            else:
                self.pending.enqueue(j)
        return new_jobs

    def _start_or_drop(self, new_jobs: list[int]) -> None:
        """Step 3 under a dropping discipline: each new job starts now or is dropped, in key order (stable: input
        order among equals)."""
        placer, status, qkey = self.placer, self.table.status, self.qkey
        for j in sorted(new_jobs, key=lambda j: qkey[j]):
            choice = placer.ask(j)
            if choice is None:
                status[j] = DROPPED
            else:
                placer.start(j, choice)

    def _plans(self, woken: bool) -> None:
        """Step 4: the mechanism's plans (at most :data:`MAX_PLANS`), each carried out and followed by the freed
        nodes' unblocking and a pass; then its wake-up."""
        mech, pending, placer, clock = self.mech, self.pending, self.placer, self.clock
        for _ in range(MAX_PLANS if pending.buckets or woken or mech.every_instant else 0):
            plan = mech.plan(self.view)
            if plan is None:
                break
            _carry_out(plan, placer, pending, self.restart_s, mech)
            self._unblock()
            if not mech.owns_starts:
                self._schedule()
        now = clock.now
        wake = max(float(mech.wake_s(self.view)), now) if placer.running or pending.buckets else math.inf
        clock.wake = math.inf if wake == now else wake

    def _reservation(self) -> tuple | None:
        """The reserved gang's queue entry now (``gang_reserve_s``), or None."""
        return self.pending.reserved(self.clock.now, self.gang_reserve_s)

    def _schedule(self) -> None:
        """One scheduling pass of the discipline."""
        pending = self.pending
        if self.discipline.blocking:
            if pending.buckets:
                pending.fifo_pass(self.placer.try_start)
        elif pending.cands:
            pending.backfill_pass(self.placer.try_start, self._reservation if self.reserve else None)

    def _unblock(self) -> None:
        """Jobs left nodes: they are touched, and the unfit shapes are tested on them."""
        placer = self.placer
        freed = placer.freed
        if freed:
            placer.touched.update(freed)
            if self.pending.unfit:
                self.pending.unblock(self.state, freed)
            freed.clear()

    def result(self) -> TimelineResult:
        """The run so far as a checked :class:`TimelineResult` (the snapshots asked for after the last instant
        processed are taken now, once)."""
        recorder, table, status = self.recorder, self.table, self.table.status
        snaps = [*recorder.snaps, *(recorder.snapshot(at, table, self.pending, self.placer.alloc)
                                    for at in recorder.snap_times)]     # those still ahead: the state now
        reason = np.where(status == REJECTED, self.shape_reason[self.shapes.of], "").astype(object)
        reason[status == DROPPED] = DROPPED_REASON
        result = TimelineResult(
            jobs=self.jobs, status=status.copy(), start_s=table.start_s.copy(), finish_s=table.finish_s.copy(),
            node=table.node_of.copy(), series=self.recorder.series(), snapshots=snaps,
            state=self.state, policy=self.policy_name, queue=self.discipline.name, events=self.events,
            instants=self.instants, wall_s=time.perf_counter() - self.wall0,
            cpu_s=time.process_time() - self.cpu0, mechanism=self.mech.name,
            preemptions=table.preemptions.copy(), suspensions=table.suspensions.copy(), lost_s=table.lost_s.copy(),
            overhead_s=table.overhead_s.copy(), thrashed=table.thrashed.copy(), migrations=table.migrations.copy(),
            run_s=table.ran_s.copy(), busy_s=table.busy_s.copy(), work_s=table.saved.copy(),
            evictions=table.evictions.copy(), reason=reason)
        result.check()
        return result


def simulate(cluster: Cluster, jobs: JobSet, policy: str | Policy = "fgd", queue: str | Discipline = "backfill", *,
             seed: int = 0, workload: Workload | None = None, ranks: np.ndarray | None = None,
             snapshots: Sequence[float] = (), until_s: float = math.inf, frag: bool = True,
             mechanism: str | Mechanism = "none",
             restart_s: Callable[[int], float] = helios_restart_s,
             speed: Mapping[str, np.ndarray] | None = None,
             interference: Interference | None = None,
             gang_reserve_s: float = math.inf, gang_slowdown: float = 1.0) -> TimelineResult:
    """Run ``jobs`` on ``cluster`` over time (module docstring) and return what happened.

    Parameters
    ----------
    cluster, jobs : the cluster and the jobs (:class:`~fgdopt.timeline.jobs.JobSet`).
    policy : a policy name (:func:`~fgdopt.policies.make_policy`, built with ``seed``, ``workload``, ``ranks``)
        or a ready policy object. A policy object with ``job_aware = True`` is called ``policy(state, task,
        job=j)``, ``j`` the job's index in ``jobs`` (e.g. to look up its class in an
        :class:`~fgdopt.interference.Interference`); it must still return None only where the task fits
        no node (pending jobs are indexed by shape). One with ``time_aware = True`` too also gets ``now=`` (s)
        and ``work_s=`` (the job's remaining work at speed 1, s), e.g. ``drain-fit``
        (:mod:`~fgdopt.policies.drain_fit`).
    queue : a discipline name (:data:`~fgdopt.timeline.queues.QUEUE_NAMES`) or object.
    seed : seeds a policy given by name (its node ranks and random draws).
    workload : FGD's target workload M and the workload of the recorded F(M); default
        ``Workload.from_tasks(jobs.tasks)`` (the job shapes).
    ranks : explicit node ranks for a policy given by name.
    snapshots : instants (seconds) at which to copy out the jobs present (:class:`Snapshot`).
    until_s : stop after the last instant at or before this time (jobs may then end running or pending).
    frag : record F(M) at every instant (False: ``frag_milli`` is NaN; faster).
    mechanism : what may evict running jobs (:data:`~fgdopt.timeline.mechanisms.MECHANISM_NAMES` or an object,
        :mod:`fgdopt.timeline.preemption`); ``"none"`` never evicts.
    restart_s : restart cost in seconds of a preempted job by its GPU count (default Helios' figures).
    speed : heterogeneous GPUs: per GPU model of the cluster (``cluster.model``), each job's progress per second
        of run time there, float (n,) (default 1 everywhere). A job's ``duration_s`` is then its work in seconds at
        speed 1; a run on a node of speed ``v`` does ``v`` seconds of it per second. A job may not start where its
        speed is 0 (``PolicyError``). Checkpoint intervals are seconds of run time.
    interference : co-location slowdowns of jobs sharing a GPU (:mod:`fgdopt.interference`); a running
        job is re-rated whenever a job joins or leaves one of its GPUs. Needs transparent checkpointing or none
        (``ValueError`` otherwise).
    gang_reserve_s : under a backfilling discipline, once the first pending gang (``workers > 1``) in queue order
        has waited this many seconds, no job behind it starts before it (module docstring); ``inf`` (default): plain
        backfilling.
    gang_slowdown : the run time of a gang whose parts span more than one node is multiplied by this (>= 1;
        default 1).

    Returns
    -------
    TimelineResult

    Raises
    ------
    PolicyError : the policy raised, or chose a node or GPUs where the job does not fit (one line naming the
        policy, the job and the time).

    Examples
    --------
    >>> from fgdopt.model import Cluster, TaskSet
    >>> c = Cluster([8000], [1024], [1], ["T4"])
    >>> jobs = JobSet(TaskSet([1000] * 2, [0] * 2, [1] * 2, [1000] * 2), [0.0, 0.0], [10.0, 5.0])
    >>> r = simulate(c, jobs, "best-fit", "fifo")
    >>> r.start_s.tolist(), r.finish_s.tolist()
    ([0.0, 10.0], [10.0, 15.0])
    """
    return Engine(cluster, jobs, policy, queue, seed=seed, workload=workload, ranks=ranks, snapshots=snapshots,
                  frag=frag, mechanism=mechanism, restart_s=restart_s, speed=speed, interference=interference,
                  gang_reserve_s=gang_reserve_s, gang_slowdown=gang_slowdown).run(until_s, last=True)


def _carry_out(plan: Plan, placer: Placer, pending: PendingQueue, restart_s: Callable[[int], float],
               mech: Mechanism) -> None:
    """Carry out a mechanism's plan: the one dispatch over the plan types (:data:`~fgdopt.timeline.preemption.
    PLAN_TYPES`), one function each. ``TypeError`` (one line) for anything else."""
    match plan:
        case RoundPlan():
            _carry_out_round(plan, placer, pending, restart_s, mech)
        case StartPlan():                                           # PreemptPlan, SuspendPlan, EvictPlan
            _carry_out_start(plan, placer, pending, restart_s, mech)
        case MigratePlan():
            _reallocate(plan.moves, (), plan.admits, placer, pending, restart_s, mech)
        case OutagePlan():
            _carry_out_outage(plan, placer, restart_s, mech)
        case _:
            raise TypeError(f"mechanism {mech.name!r} returned a {type(plan).__name__}, not a plan (one of "
                            f"{', '.join(t.__name__ for t in PLAN_TYPES)}, fgdopt.timeline.preemption)")


def _reallocate(moves: tuple, victims: tuple, admits: tuple, placer: Placer, pending: PendingQueue,
                restart_s: Callable[[int], float], mech: Mechanism, resized: tuple = (),
                rerated: frozenset[int] = frozenset()) -> None:
    """Evictions, then placements, as planned (:class:`~fgdopt.timeline.preemption.MigratePlan`, ``RoundPlan``): the
    moved jobs leave (migrated), the victims leave (preempted), the ``resized`` running jobs take their new demands
    (:meth:`Placer.resize`), then every moved and admitted job is placed, in one pass each
    (:meth:`Placer.evict_many`, :meth:`Placer.start_many`; the jobs of ``rerated``, re-rated next in the same
    instant, get their finish event from that re-rate only)."""
    placed = (*moves, *admits)
    again = {m.task for m in placed} & {*(m.task for m in moves), *victims}    # out and back in: no trip through
    placer.evict_many([m.task for m in moves], "migrate", restart_s, mech, again)  # the queue
    placer.evict_many(victims, "preempt", restart_s, mech, again)
    if resized:
        placer.resize(resized)
    pending.withdraw_many([m.task for m in placed if m.task not in again])
    placer.start_many(placed, rerated)


def _carry_out_round(plan: RoundPlan, placer: Placer, pending: PendingQueue, restart_s: Callable[[int], float],
                     mech: Mechanism) -> None:
    """A :class:`~fgdopt.timeline.preemption.RoundPlan`: its reallocation, then the speeds it sets."""
    if not (plan.moves or plan.admits or plan.victims or plan.rates or plan.resized):
        return                                                      # a round that keeps every job where it is
    _reallocate(plan.moves, plan.victims, plan.admits, placer, pending, restart_s, mech, plan.resized,
                frozenset(j for j, _ in plan.rates))
    if plan.rates:
        js = np.fromiter((j for j, _ in plan.rates), np.int64, len(plan.rates))
        rates = np.fromiter((r for _, r in plan.rates), np.float64, len(plan.rates))
        if (bad := np.flatnonzero(placer.jobs.status[js] != RUNNING)).size:
            raise RuntimeError(f"mechanism {mech.name!r}: rate {rates[bad[0]]} for job {js[bad[0]]}, not a running "
                               "job")
        placer.rerate_many(js, rates)


def _carry_out_start(plan: StartPlan, placer: Placer, pending: PendingQueue, restart_s: Callable[[int], float],
                     mech: Mechanism) -> None:
    """A :class:`~fgdopt.timeline.preemption.StartPlan`: its victims evicted as its kind says (``plan.how``), then its
    job started where it names, else where the run's policy puts it."""
    for v in plan.victims:
        placer.evict(v, plan.how, restart_s, mech)
    choice = placer.ask(plan.job) if plan.where is None else plan.where
    if choice is None:
        raise RuntimeError(f"mechanism {mech.name!r}: job {plan.job} does not fit after its evictions")
    pending.withdraw(plan.job)
    placer.start(plan.job, choice)


def _carry_out_outage(plan: OutagePlan, placer: Placer, restart_s: Callable[[int], float], mech: Mechanism) -> None:
    """An :class:`~fgdopt.timeline.preemption.OutagePlan`: its victims preempted, then its failed resources taken out
    of service and its repaired ones put back (:mod:`fgdopt.timeline.failures`)."""
    placer.evict_many(plan.victims, "preempt", restart_s, mech)
    placer.take_out(plan.down)
    placer.put_back(plan.up)
