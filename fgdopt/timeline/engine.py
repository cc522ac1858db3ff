"""The event-driven cluster simulation (SPEC "Time"): jobs arrive, wait, run on the one ``ClusterState``, leave.

The loop is a heap of finish events ``(time, seq, job)`` beside the submissions in submission order; there is
no fixed time step. One *instant* t is processed as SPEC fixes it:

1. every job finishing at t leaves (:meth:`~fgdopt.state.ClusterState.remove`);
2. every job submitted at t arrives, in input order: a job whose shape fits no *empty* node of the cluster is
   **rejected** (counted, never queued); the others join the pending queue;
3. one scheduling pass offers pending jobs to the policy in the discipline's order
   (:mod:`fgdopt.timeline.queues`); a started job takes the policy's node and GPUs
   (:meth:`~fgdopt.state.ClusterState.place`, the one feasibility rule) and finishes at ``t + duration_s``.

A zero-duration job started at t finishes at t: its finish is processed right after the pass that started it, as
a further instant at the same time (finishes, then a pass). A job with ``duration_s = inf`` never leaves.

Pending jobs are indexed by *shape* (CPU, memory, GPU count, milli-GPU, ``gpu_spec``); the pass never rescans
every pending job. A shape the policy could not place is marked *unfit*; placements only take capacity away, so it
stays unfit until a job leaves, and then it can only fit on the node that job left: after the finishes of an
instant the unfit shapes are tested against the freed nodes only (:meth:`ClusterState.shapes_fit_node`), and only
the shapes that fit there are offered again. A backfilling pass therefore ends with every pending shape unfit, and
the next pass costs nothing until something leaves or arrives.

Recorded at every instant (the :attr:`TimelineResult.series`): allocated milli-GPU, running and pending jobs,
pending GPU demand, F(M) of the one evaluator (:mod:`fgdopt.frag`, per-node values refreshed on the touched nodes
only), and what is **blocked by fragmentation**: of the pending jobs with GPU demand that fit no node, the most that
the cluster's total free milli-GPU could hold together, taken smallest demand first (``blocked_jobs``), and their
demand (``blocked_milli``, at most the total free milli-GPU). :func:`fgdopt.timeline.metrics.run_stats` turns a
result into the per-run statistics; :func:`simulate` can also copy out the state at chosen instants
(:class:`Snapshot`) for the certified optimum of the jobs present (:mod:`formulations.timeline`).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fgdopt.frag import Workload, node_fragmentations
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.policies import Policy, PolicyError, make_policy
from fgdopt.state import ClusterState, InfeasiblePlacement, Placement, validate
from fgdopt.timeline.interference import Interference
from fgdopt.timeline.jobs import JobSet
from fgdopt.timeline.preemption import MAX_PLANS, Mechanism, helios_restart_s, make_mechanism
from fgdopt.timeline.queues import Discipline, make_discipline

STATUSES = ("finished", "running", "pending", "rejected", "dropped")
"""How a job ends a run: ``dropped`` only under the ``none`` discipline (no queue)."""
FINISHED, RUNNING, PENDING, REJECTED, DROPPED = range(len(STATUSES))

SERIES_COLUMNS = ("time_s", "alloc_milli", "running", "pending", "pending_milli", "blocked_jobs", "blocked_milli",
                  "frag_milli")
"""Columns of :attr:`TimelineResult.series`: one row per instant, values *after* the instant (milli-GPU, jobs)."""

_UNKNOWN, _FIT, _UNFIT = range(3)

SCAN = 32
"""A mechanism sees the first this many pending jobs that fit no node, in queue order."""


class _View:
    """What a mechanism reads (:class:`fgdopt.timeline.preemption.View`); the per-job arrays are computed only when a
    mechanism asks for them, so that a run without one pays nothing for them."""

    def __init__(self, state: ClusterState, priority: np.ndarray, first_gpu: np.ndarray, workload: Workload,
                 left_at: np.ndarray, restart_s: Callable[[int], float], pending: Callable[[], list[int]],
                 queued: Callable[[], list[int]], lost: Callable[[], np.ndarray], run_s: Callable[[], np.ndarray],
                 work_s: Callable[[], np.ndarray]):
        self.state, self.priority, self.first_gpu, self.workload, self.left_at = (state, priority, first_gpu,
                                                                                   workload, left_at)
        self.restart_s = restart_s
        self.pending, self.queued, self._lost, self._run_s, self._work_s = pending, queued, lost, run_s, work_s
        self.now = 0.0

    @property
    def work_s(self) -> np.ndarray:
        return self._work_s()

    @property
    def lost_if_evicted(self) -> np.ndarray:
        return self._lost()

    @property
    def run_s(self) -> np.ndarray:
        return self._run_s()


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The jobs present at ``time_s`` (running and pending) as an offline instance.

    Attributes
    ----------
    time_s : the instant (the state after every event at or before it).
    cluster : the cluster.
    tasks : the present jobs' shapes (running first, in input order, then pending in queue order).
    placement : where the running ones are (the pending ones unplaced).
    jobs : int64, the index in the run's :class:`JobSet` of every row of ``tasks``.
    running : how many of the rows are running (the first ``running``).
    """

    time_s: float
    cluster: Cluster
    tasks: TaskSet
    placement: Placement
    jobs: np.ndarray
    running: int

    @property
    def allocated_milli(self) -> int:
        return self.placement.allocated_milli(self.tasks)

    @property
    def pending(self) -> np.ndarray:
        """Row indices of the pending jobs in :attr:`tasks`."""
        return np.arange(self.running, len(self.tasks))


@dataclass(frozen=True, eq=False)
class TimelineResult:
    """Outcome of :func:`simulate`.

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
    :mod:`fgdopt.timeline.migtime`). :meth:`check` verifies the run.
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
    mechanism: str = "none"
    preemptions: np.ndarray | None = None
    suspensions: np.ndarray | None = None
    lost_s: np.ndarray | None = None
    overhead_s: np.ndarray | None = None
    thrashed: np.ndarray | None = None
    migrations: np.ndarray | None = None
    run_s: np.ndarray | None = None
    busy_s: np.ndarray | None = None
    work_s: np.ndarray | None = None
    evictions: np.ndarray | None = None

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
        if not np.allclose(self.work_s[done], self.jobs.duration_s[done], rtol=1e-9, atol=1e-6):
            bad = np.flatnonzero(done & ~np.isclose(self.work_s, self.jobs.duration_s, rtol=1e-9, atol=1e-6))
            raise AssertionError(f"finished jobs {bad[:5].tolist()} did other than their work")
        spent = self.busy_s + self.lost_s + self.overhead_s
        if not np.allclose(self.run_s[done], spent[done], rtol=1e-9, atol=1e-6):
            bad = np.flatnonzero(done & ~np.isclose(self.run_s, spent, rtol=1e-9, atol=1e-6))[:5].tolist()
            raise AssertionError(f"jobs {bad} ran other than their work's time plus lost and overhead time")
        _same_capacity(validate(self.cluster, self.jobs.tasks, self.state.placement()), self.state, "final state")

    @property
    def cluster(self) -> Cluster:
        return self.state.cluster

    def counts(self) -> dict[str, int]:
        """How many jobs end in each of :data:`STATUSES`."""
        return {name: int((self.status == k).sum()) for k, name in enumerate(STATUSES)}

    def job_frame(self) -> pd.DataFrame:
        """One row per job: ``name, submit_s, duration_s, start_s, finish_s, wait_s, jct_s, node, status,
        measured`` (times in seconds, NaN where they do not exist)."""
        return pd.DataFrame({
            "name": self.jobs.tasks.names, "submit_s": self.jobs.submit_s, "duration_s": self.jobs.duration_s,
            "start_s": self.start_s, "finish_s": self.finish_s, "wait_s": self.start_s - self.jobs.submit_s,
            "jct_s": self.finish_s - self.jobs.submit_s, "node": self.node,
            "status": np.array(STATUSES, dtype=object)[self.status], "measured": self.jobs.measured})


class _Shapes:
    """The distinct job shapes of a :class:`JobSet` (the pending queue's index)."""

    def __init__(self, tasks: TaskSet):
        key = pd.MultiIndex.from_arrays([tasks.cpu_milli, tasks.memory_mib, tasks.num_gpu, tasks.gpu_milli,
                                         tasks.gpu_spec])
        codes, uniques = pd.factorize(key, sort=False)
        self.of = codes.astype(np.int64)                            # shape id of every job
        first = np.full(len(uniques), -1, dtype=np.int64)
        first[self.of[::-1]] = np.arange(len(tasks))[::-1]          # the first job of every shape
        self.tasks = tasks.take(first)                              # one row per shape
        self.task = list(self.tasks)
        self.demand = self.tasks.gpu_demand.astype(np.int64)

    def __len__(self) -> int:
        return len(self.task)


def simulate(cluster: Cluster, jobs: JobSet, policy: str | Policy = "fgd", queue: str | Discipline = "backfill", *,
             seed: int = 0, workload: Workload | None = None, ranks: np.ndarray | None = None,
             snapshots: Sequence[float] = (), until_s: float = math.inf, frag: bool = True,
             mechanism: str | Mechanism = "none",
             restart_s: Callable[[int], float] = helios_restart_s,
             speed: Mapping[str, np.ndarray] | None = None,
             interference: Interference | None = None) -> TimelineResult:
    """Run ``jobs`` on ``cluster`` over time (module docstring) and return what happened.

    Parameters
    ----------
    cluster, jobs : the cluster and the jobs (:class:`~fgdopt.timeline.jobs.JobSet`).
    policy : a policy name (:func:`~fgdopt.policies.make_policy`, built with ``seed``, ``workload``, ``ranks``)
        or a ready policy object. A policy object with ``job_aware = True`` is called ``policy(state, task,
        job=j)``, ``j`` the job's index in ``jobs`` (e.g. to look up its class in an
        :class:`~fgdopt.timeline.interference.Interference`); it must still return None only where the task fits
        no node (pending jobs are indexed by shape).
    queue : a discipline name (:data:`~fgdopt.timeline.queues.QUEUE_NAMES`) or object.
    seed : seeds a policy given by name (its node ranks and random draws).
    workload : FGD's target workload M and the workload of the recorded F(M); default
        ``Workload.from_tasks(jobs.tasks)`` (the job shapes).
    ranks : explicit node ranks for a policy given by name.
    snapshots : instants (seconds) at which to copy out the jobs present (:class:`Snapshot`).
    until_s : stop after the last instant at or before this time (jobs may then end running or pending).
    frag : record F(M) at every instant (False: ``frag_milli`` is NaN; faster).
    mechanism : what may evict running jobs (:data:`~fgdopt.timeline.preemption.MECHANISM_NAMES` or an object,
        :mod:`fgdopt.timeline.preemption`); ``"none"`` never evicts.
    restart_s : restart cost in seconds of a preempted job by its GPU count (default Helios' figures).
    speed : heterogeneous GPUs: per GPU model of the cluster (``cluster.model``), each job's progress per second
        of run time there, float (n,) (default 1 everywhere). A job's ``duration_s`` is then its work in seconds at
        speed 1; a run on a node of speed ``v`` does ``v`` seconds of it per second. A job may not start where its
        speed is 0 (``PolicyError``). Checkpoint intervals are seconds of run time.
    interference : co-location slowdowns of jobs sharing a GPU (:mod:`fgdopt.timeline.interference`); a running
        job is re-rated whenever a job joins or leaves one of its GPUs. Needs transparent checkpointing or none
        (``ValueError`` otherwise).

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
    wall0, cpu0 = time.perf_counter(), time.process_time()
    discipline = make_discipline(queue) if isinstance(queue, str) else queue
    if workload is None:
        workload = Workload.from_tasks(jobs.tasks)
    pol = make_policy(policy, seed=seed, workload=workload, ranks=ranks) if isinstance(policy, str) else policy
    policy_name = getattr(pol, "name", type(pol).__name__)
    job_aware = getattr(pol, "job_aware", False)                  # called with the job's index too
    label = policy if isinstance(policy, str) else policy_name
    mech = make_mechanism(mechanism) if isinstance(mechanism, str) else mechanism
    ckpt = mech.checkpointing
    tasks = jobs.tasks
    n = len(tasks)
    models, model_of = np.unique(cluster.model.astype(str), return_inverse=True)
    pace = np.ones((n, len(models)))                               # speed of every job on every GPU model
    if speed is not None:
        if unknown := sorted(set(speed) - set(models.tolist())):
            raise ValueError(f"speed given for GPU models {unknown} the cluster does not have ({', '.join(models)})")
        for k, m in enumerate(models.tolist()):
            if m in speed:
                pace[:, k] = np.asarray(speed[m], dtype=np.float64)
        if not (np.isfinite(pace) & (pace >= 0)).all():
            raise ValueError("speeds must be finite numbers >= 0")
    if interference is not None:
        if len(interference.job_class) != n:
            raise ValueError(f"interference gives {len(interference.job_class)} job classes for {n} jobs")
        if not ckpt.transparent and math.isfinite(ckpt.interval_s):
            raise ValueError(f"interference re-rates running jobs; mechanism {mech.name!r} checkpoints every "
                             f"{ckpt.interval_s} s, which a re-rate would reset (use transparent checkpointing)")
    tenants: dict[tuple[int, int], set[int]] = {}                  # (node, GPU) -> the sharing jobs on it
    state = ClusterState(cluster, tasks)
    shapes = _Shapes(tasks)
    empty = ClusterState(cluster, shapes.tasks)
    admissible = np.array([empty.feasible_nodes(t).any() for t in shapes.task], dtype=bool)
    qkey = np.asarray(discipline.keys(jobs), dtype=np.float64)
    if qkey.shape != (n,):
        raise ValueError(f"queue discipline {discipline.name!r}: keys() gave shape {qkey.shape}, expected ({n},)")
    submit, duration = jobs.submit_s, jobs.duration_s
    arrivals = np.lexsort((np.arange(n), submit))                  # submission order, ties in input order
    demand = tasks.gpu_demand

    status = np.full(n, PENDING, dtype=np.int8)
    start_s = np.full(n, np.nan)
    finish_s = np.full(n, np.nan)
    node_of = np.full(n, -1, dtype=np.int64)
    saved = np.zeros(n)                                            # checkpointed progress, s
    run_start, run_cost, run_work = np.zeros(n), np.zeros(n), np.zeros(n)   # the current run: start, start cost, work
    rate = np.ones(n)                                              # the current run's speed; run_wall = work / rate
    run_wall = np.zeros(n)                                         # seconds of run time the current run's work takes
    busy_s = np.zeros(n)                                           # run time with progress kept, over the ended runs
    next_cost = np.zeros(n)                                        # start cost of the next run, s
    live = np.full(n, -1, dtype=np.int64)                          # seq of the live finish event (-1: none)
    preemptions = np.zeros(n, dtype=np.int64)
    evictions = np.zeros(n, dtype=np.int64)
    suspensions = np.zeros(n, dtype=np.int64)
    migrations = np.zeros(n, dtype=np.int64)
    lost_s, overhead_s = np.zeros(n), np.zeros(n)
    thrashed = np.zeros(n, dtype=bool)
    evicted = np.zeros(n, dtype=bool)                              # the current run follows an eviction
    ran_s = np.zeros(n)                                            # seconds run in the runs that ended
    left_at = np.full(n, np.nan)                                   # when the job last stopped running
    finishes: list[tuple[float, int, int]] = []                    # heap of (time, seq, job); stale if seq != live
    seq = 0
    buckets: dict[int, list[tuple[float, float, int]]] = {}        # shape -> heap of (key, submit, job)
    fit = np.full(len(shapes), _UNKNOWN, dtype=np.int8)
    witness = np.full(len(shapes), -1, dtype=np.int64)             # a node where a _FIT shape fits
    cands: set[int] = set()                                        # pending shapes that may fit
    unfit: set[int] = set()                                        # pending shapes that fit no node
    alloc = running = pending = pending_milli = 0
    node_frag = node_fragmentations(state, workload) if frag else None
    frag_total = float(node_frag.sum()) if frag else math.nan
    capacity = cluster.gpu_capacity_milli
    rows: list[tuple] = []
    snaps: list[Snapshot] = []
    snap_times = sorted(float(s) for s in snapshots)
    events = instants = 0

    def ask(j: int):
        """The policy's choice for job ``j`` (None: it fits nowhere)."""
        try:
            if job_aware:
                return pol(state, shapes.task[shapes.of[j]], job=j)
            return pol(state, shapes.task[shapes.of[j]])
        except Exception as exc:
            raise PolicyError(f"policy {label!r} raised {type(exc).__name__} on job {j} ({tasks.names[j]}) at "
                              f"{now} s: {exc}") from exc

    def start(j: int, choice) -> None:
        nonlocal alloc, running, seq
        try:
            node, gpus, *starts = choice                           # MIG policies add the start slices
            choice = (int(node), tuple(int(g) for g in gpus), *(tuple(int(s) for s in st) for st in starts))
            state.place(j, *choice)
        except (InfeasiblePlacement, TypeError, ValueError, IndexError) as exc:
            raise PolicyError(f"policy {label!r} chose {choice!r} for job {j} ({tasks.names[j]}) at {now} s, "
                              f"where it does not fit: {exc}") from None
        status[j] = RUNNING
        if math.isnan(start_s[j]):
            start_s[j] = now
        node_of[j] = choice[0]
        first_gpu[j] = choice[1][0] if choice[1] else -1
        rate[j] = pace[j, model_of[choice[0]]]
        if interference is not None and 0 < tasks.gpu_milli[j] < GPU_MILLI:
            others = set()
            for g in choice[1]:
                others |= tenants.setdefault((choice[0], g), set())
                tenants[(choice[0], g)].add(j)
            rate[j] *= interference.slowdown(cluster.model[choice[0]], j, others)
            for o in others:
                rerate(o)
        if rate[j] <= 0:
            raise PolicyError(f"job {j} ({tasks.names[j]}) started at {now} s on node {choice[0]}, GPU model "
                              f"{cluster.model[choice[0]]}, where its speed is 0")
        alloc += int(demand[j])
        running += 1
        touched.add(int(choice[0]))
        run_start[j], run_cost[j], run_work[j] = now, next_cost[j], duration[j] - saved[j]
        run_wall[j] = run_work[j] / rate[j]
        next_cost[j] = 0.0
        wall = ckpt.run_time(float(run_wall[j]), float(run_cost[j]))
        if math.isfinite(wall):
            heapq.heappush(finishes, (now + wall, seq, j))
            live[j] = seq
            seq += 1

    def enqueue(j: int) -> None:
        nonlocal pending, pending_milli
        s = int(shapes.of[j])
        heapq.heappush(buckets.setdefault(s, []), (qkey[j], float(submit[j]), j))
        pending += 1
        pending_milli += int(demand[j])
        if fit[s] != _UNFIT:
            cands.add(s)

    def rerate(j: int, speed: float | None = None) -> None:
        """Running job ``j``'s GPU companions changed (or a plan set its ``speed``): keep the progress of its run so
        far, run the rest at its new speed (a transparent stop and start in place, with what is left of its start
        cost); at speed 0 it has no finish event until it is re-rated."""
        nonlocal seq
        elapsed = now - run_start[j]
        busy = min(max(elapsed - run_cost[j], 0.0), run_wall[j])
        ran_s[j] += elapsed
        busy_s[j] += busy
        overhead_s[j] += elapsed - busy
        saved[j] += busy * rate[j]
        node = int(state.node_of[j])
        if speed is None:
            rate[j] = pace[j, model_of[node]] * interference.slowdown(
                cluster.model[node], j, {o for g in state.gpus_of[j] for o in tenants[(node, g)]} - {j})
        else:
            rate[j] = speed
        run_start[j], run_cost[j] = now, max(run_cost[j] - elapsed, 0.0)
        run_work[j] = duration[j] - saved[j]
        run_wall[j] = run_work[j] / rate[j] if rate[j] > 0 else math.inf
        end = now + ckpt.run_time(float(run_wall[j]), float(run_cost[j]))
        live[j] = -1
        if math.isfinite(end):
            heapq.heappush(finishes, (end, seq, j))
            live[j] = seq
            seq += 1

    def leave(j: int) -> int:
        """Job ``j`` stops running now (finish or eviction); returns its node."""
        nonlocal alloc, running
        node = int(state.node_of[j])
        gpus = state.gpus_of[j]
        state.remove(j)
        if interference is not None and 0 < tasks.gpu_milli[j] < GPU_MILLI:
            others = set()
            for g in gpus:
                tenants[(node, g)].discard(j)
                others |= tenants[(node, g)]
            for o in others:
                rerate(o)
        alloc -= int(demand[j])
        running -= 1
        live[j] = -1
        ran_s[j] += now - run_start[j]
        left_at[j] = now
        freed.add(node)
        return node

    def evict(j: int, kind: str) -> None:
        """Preempt or suspend running job ``j`` (module :mod:`fgdopt.timeline.preemption`) and requeue it."""
        elapsed = now - run_start[j]
        if kind in ("preempt", "evict"):                         # evict: a MIG re-layout, the same checkpoint rule
            kept, lost, over, done = ckpt.evict(elapsed, float(run_cost[j]), float(run_wall[j]))
            thrashed[j] |= evicted[j] and done == 0 and not ckpt.transparent
            (evictions if kind == "evict" else preemptions)[j] += 1
            next_cost[j] = restart_s(int(tasks.num_gpu[j]))
        else:                                                   # suspend or migrate: transparent
            kept, lost, over = max(elapsed - run_cost[j], 0.0), 0.0, min(elapsed, float(run_cost[j]))
            if kind == "migrate":
                migrations[j] += 1
                next_cost[j] = mech.migrate_s
            else:
                suspensions[j] += 1
                next_cost[j] = mech.suspend_s + mech.restore_s
        saved[j] += kept * rate[j]
        busy_s[j] += kept
        lost_s[j] += lost
        overhead_s[j] += over
        evicted[j] = True
        leave(j)
        status[j] = PENDING
        enqueue(j)

    def set_unfit(s: int) -> None:
        fit[s] = _UNFIT
        cands.discard(s)
        unfit.add(s)

    def withdraw(j: int) -> None:
        """Pending job ``j`` leaves the queue (to start)."""
        nonlocal pending, pending_milli
        s = int(shapes.of[j])
        bucket = buckets[s]
        if bucket[0][2] == j:
            heapq.heappop(bucket)
        else:                                                       # a mechanism's beneficiary, inside the queue
            bucket.remove(next(e for e in bucket if e[2] == j))
            heapq.heapify(bucket)
        pending -= 1
        pending_milli -= int(demand[j])
        if not bucket:
            del buckets[s]
            fit[s] = _UNKNOWN
            cands.discard(s)
            unfit.discard(s)

    def try_start(j: int, s: int) -> bool:
        """Offer pending job ``j`` (shape ``s``) to the policy; start it, or mark its shape unfit."""
        choice = ask(j)
        if choice is None:
            set_unfit(s)
            return False
        withdraw(j)
        start(j, choice)
        return True

    def backfill_pass() -> None:
        heap = [(buckets[s][0], s) for s in cands]
        heapq.heapify(heap)
        while heap:
            (_, _, j), s = heapq.heappop(heap)
            if try_start(j, s) and s in buckets:
                heapq.heappush(heap, (buckets[s][0], s))

    def fifo_pass() -> None:
        while buckets:
            (_, _, j), s = min((b[0], s) for s, b in buckets.items())
            if fit[s] == _UNFIT or not try_start(j, s):
                return

    def unblock() -> None:
        """Unfit shapes can only fit where jobs left: test them on the freed nodes."""
        touched.update(freed)
        if freed and unfit:
            ids = np.fromiter(unfit, dtype=np.int64)
            ok = np.zeros(len(ids), dtype=bool)
            for node in freed:
                ok |= state.shapes_fit_node(shapes.tasks, ids, node)
            for s in ids[ok].tolist():
                unfit.discard(s)
                fit[s] = _UNKNOWN
                cands.add(s)
        freed.clear()

    def schedule() -> None:
        """One scheduling pass of the discipline."""
        if discipline.blocking:
            if buckets:
                fifo_pass()
        elif cands:
            backfill_pass()

    first_gpu = np.full(n, -1, dtype=np.int64)                    # kept by start(): the mechanisms read it per job
    view = _View(state, jobs.priority, first_gpu, workload, left_at, restart_s,
                 pending=lambda: [e[2] for e in heapq.nsmallest(SCAN, (e for s in unfit for e in buckets[s]))],
                 queued=lambda: [e[2] for e in sorted(e for b in buckets.values() for e in b)],
                 lost=lambda: demand * ckpt.lost(now - run_start, run_cost, run_wall),
                 run_s=lambda: ran_s + np.where(status == RUNNING, now - run_start, 0.0),
                 work_s=lambda: saved + np.where(status == RUNNING, rate * np.clip(now - run_start - run_cost, 0.0,
                                                                                   run_wall), 0.0))

    def snapshot(at: float) -> Snapshot:
        run_ids = np.flatnonzero(status == RUNNING)
        pend_ids = np.array([e[2] for bucket in buckets.values() for e in bucket], dtype=np.int64)
        if len(pend_ids):
            pend_ids = pend_ids[np.lexsort((pend_ids, submit[pend_ids], qkey[pend_ids]))]
        ids = np.concatenate([run_ids, pend_ids]).astype(np.int64)
        placement = Placement(np.concatenate([state.node_of[run_ids], np.full(len(pend_ids), -1)]),
                              (*(state.gpus_of[j] for j in run_ids), *((),) * len(pend_ids)),
                              None if state.mig is None else (*(state.starts_of[j] for j in run_ids),
                                                               *((),) * len(pend_ids)))
        snap = Snapshot(at, cluster, tasks.take(ids), placement, ids, len(run_ids))
        _same_capacity(validate(cluster, snap.tasks, placement), state, f"snapshot at {at} s")
        if snap.allocated_milli != alloc:
            raise AssertionError(f"snapshot at {at} s: {alloc} milli-GPU counted, {snap.allocated_milli} running")
        return snap

    next_arrival = 0
    now = 0.0
    wake = math.inf                                                # when the mechanism asked to be woken
    owns_starts = getattr(mech, "owns_starts", False)
    while next_arrival < n or finishes or wake < math.inf:
        while finishes and live[finishes[0][2]] != finishes[0][1]:   # drop the finish events of evicted runs
            heapq.heappop(finishes)
        if next_arrival >= n and not finishes and wake == math.inf:
            break
        t_sub = float(submit[arrivals[next_arrival]]) if next_arrival < n else math.inf
        now = min(t_sub, finishes[0][0] if finishes else math.inf, wake)
        if now > until_s:
            break
        woken, wake = now == wake, (math.inf if now == wake else wake)
        while snap_times and snap_times[0] < now:
            snaps.append(snapshot(snap_times.pop(0)))
        instants += 1
        touched: set[int] = set()
        freed: set[int] = set()
        while finishes and finishes[0][0] == now:                    # 1. every finish
            _, k, j = heapq.heappop(finishes)
            if live[j] != k:
                continue
            leave(j)
            status[j] = FINISHED
            finish_s[j] = now
            overhead_s[j] += max((now - run_start[j]) - run_wall[j], 0.0)        # restart and checkpoint time
            busy_s[j] += run_wall[j]
            saved[j] += run_wall[j] * rate[j]
            events += 1
        unblock()
        new_jobs = []
        while next_arrival < n and submit[arrivals[next_arrival]] == now:   # 2. every submission
            j = int(arrivals[next_arrival])
            next_arrival += 1
            events += 1
            s = int(shapes.of[j])
            if not admissible[s]:
                status[j] = REJECTED
            elif discipline.drops:
                new_jobs.append(j)
            else:
                enqueue(j)
        if discipline.drops and not owns_starts:                        # 3. the pass
            for j in sorted(new_jobs, key=lambda j: qkey[j]):            # stable: input order among equals
                choice = ask(j)
                if choice is None:
                    status[j] = DROPPED
                else:
                    start(j, choice)
        else:
            if not owns_starts:
                schedule()
            for _ in range(MAX_PLANS if buckets or woken else 0):       # the mechanism's evictions
                view.now = now
                plan = mech.plan(view)
                if plan is None:
                    break
                if plan.kind in ("migrate", "round"):                   # evictions, then placements, as planned
                    for move in plan.moves:
                        evict(move.task, "migrate")
                    for v in plan.victims:
                        evict(v, "preempt")
                    for move in (*plan.moves, *plan.admits):
                        withdraw(move.task)
                        start(move.task, (move.node, move.gpus))
                    for j, speed in plan.rates:                          # engine hook: speeds set by the plan
                        if status[j] != RUNNING or not (math.isfinite(speed) and speed >= 0):
                            raise RuntimeError(f"mechanism {mech.name!r}: rate {speed} for job {j}, not a running "
                                               "job or not a speed >= 0")
                        rerate(int(j), float(speed))
                else:
                    for v in plan.victims:
                        evict(v, plan.kind)
                    choice = ask(plan.job) if plan.where is None else plan.where
                    if choice is None:
                        raise RuntimeError(f"mechanism {mech.name!r}: job {plan.job} does not fit after its evictions")
                    withdraw(plan.job)
                    start(plan.job, choice)
                unblock()
                if not owns_starts:
                    schedule()
            if hasattr(mech, "wake_s"):
                view.now = now
                wake = max(float(mech.wake_s(view)), now) if running or buckets else math.inf
                wake = math.inf if wake == now else wake
        for s in list(cands):                                           # shapes nobody tried (behind a FIFO head)
            w = int(witness[s])
            if fit[s] == _FIT and (w not in touched or state.shapes_fit_node(shapes.tasks, [s], w)[0]):
                continue
            where = np.flatnonzero(state.feasible_nodes(shapes.task[s]))
            if len(where):
                fit[s], witness[s] = _FIT, where[0]
            else:
                set_unfit(s)
        if frag and touched:
            rows_ = np.fromiter(touched, dtype=np.int64)
            node_frag[rows_] = node_fragmentations(state, workload, rows_)
            frag_total = float(node_frag.sum())
        free = capacity - alloc
        blocked_jobs = blocked_milli = 0
        for d, s in sorted((int(shapes.demand[s]), s) for s in unfit if shapes.demand[s] > 0):
            k = min(len(buckets[s]), (free - blocked_milli) // d)       # smallest first, within the free total
            if k == 0:
                break
            blocked_jobs += k
            blocked_milli += k * d
        rows.append((now, alloc, running, pending, pending_milli,
                     blocked_jobs, blocked_milli, frag_total))
    for at in snap_times:
        snaps.append(snapshot(at))
    series = pd.DataFrame(rows, columns=list(SERIES_COLUMNS))
    result = TimelineResult(jobs, status, start_s, finish_s, node_of, series, snaps, state, policy_name,
                            discipline.name, events, instants, time.perf_counter() - wall0,
                            time.process_time() - cpu0, mech.name, preemptions, suspensions, lost_s, overhead_s,
                            thrashed, migrations, ran_s, busy_s, saved, evictions)
    result.check()
    return result


def _same_capacity(fresh: ClusterState, live: ClusterState, where: str) -> None:
    """The free CPU, memory and GPU of ``live`` are those of ``fresh``, the same jobs placed anew (the state
    validates)."""
    for name in ("cpu_left", "mem_left", "gpu_left"):
        if not np.array_equal(getattr(fresh, name), getattr(live, name)):
            raise AssertionError(f"{where}: {name} differs from the running jobs placed anew")
