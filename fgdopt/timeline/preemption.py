"""Progress, checkpoints and the mechanisms that take GPUs from running jobs (SPEC "Time": preemption).

Progress and checkpoints (:class:`Checkpointing`). A running job makes one second of progress per second of run
time, after a *restart cost* when it starts again after an eviction (no progress meanwhile). It checkpoints every
``interval_s`` seconds of progress, each checkpoint taking ``cost_s`` seconds without progress (no checkpoint at the
finish). Preempting a job frees all its GPUs at once (gang) and throws away the progress made since its last
completed checkpoint; a *transparent* checkpoint (Singularity) loses nothing and costs nothing but the restart.
The restart cost defaults to Helios' (SC'21) figures by GPU count: 7 s for one GPU (or a share of one, or none),
30 s for 2 to 8 GPUs (:func:`helios_restart_s`). A job preempted again before completing a checkpoint in the run
that followed an eviction is *thrashed*.

Mechanisms (:data:`MECHANISM_NAMES`, :func:`make_mechanism`) are asked by the engine, after each scheduling pass,
for *plans*: a pending job (the beneficiary), the running jobs to evict for it (the victims) and how (preempt or
suspend). The engine evicts the victims, places the beneficiary at once with the run's policy, requeues the victims
(keeping their place in the queue) and runs the pass again; at most :data:`MAX_PLANS` plans per instant.

``none``
    nothing is ever evicted (the engine's results are bit for bit those without a mechanism).
``priority``
    priority preemption by the jobs' ``priority`` (openb: ``qos`` LS and Guaranteed outrank BE and Burstable,
    :data:`fgdopt.timeline.sources.QOS_PRIORITY`). For the first pending job, in queue order, that fits no node
    and has lower-priority jobs running (the engine shows a mechanism the first :data:`~fgdopt.timeline.engine.SCAN`
    pending jobs that fit no node): on every node where evicting lower-priority jobs can make it fit, the
    fewest such jobs that do (exact over subsets of up to :data:`EXACT_VICTIMS` jobs, ties: the least progress
    lost, in milli-GPU seconds; at most :data:`MAX_SUBSETS` subsets of a size per node), and the node of fewest
    victims (ties: least lost, then lowest index).
    Checkpoints every 30 minutes of progress by default.
``transparent``
    ``priority`` with transparent checkpoints (Singularity): preemption loses no progress.
``affinode``
    Affinode-style suspension: for the first pending whole-GPU job, in queue order, that is blocked by
    fragmentation (it fits no node although its GPU demand is at most the cluster's free total), suspend sharing
    jobs (a fraction of one GPU) on one node so that it fits. A GPU is freed only by suspending every job on it,
    and only GPUs holding nothing but sharing jobs can be; on each node the cheapest such GPUs (least milli-GPU in
    use) that complete the job's count of free GPUs are exactly the least GPU share to suspend there. The node of
    least suspended share wins (ties: lowest index) among those where the job then also fits CPU and memory
    (checked on the :data:`EXACT_NODES` cheapest nodes).
``tiresias``
    Tiresias' discretized two-dimensional least-attained-service (``dlas-gpu`` of ``SymbioticLab/Tiresias``,
    ``simulator/run_sim.py``): a job's attained service is its GPU demand (GPUs, shares counted) times the seconds
    it has run; it sits in queue 0 below 3,250 GPU-seconds (the repository's threshold) and in queue 1 above. A
    pending job preempts, as ``priority`` does, the fewest running jobs of a later queue that make it fit, the
    pending jobs taken by queue, then in queue order. Preemption checkpoints transparently (Tiresias resumes a job
    where it stopped) and pays the restart cost. ``starvation`` (Tiresias' ``solve_starvation``, off by default as
    there) promotes a pending job back to queue 0 once it has waited that many times the time it has run. What
    differs from the repository: demotion is seen at the engine's next instant rather than at the exact crossing,
    and jobs are placed by the run's policy on real nodes rather than counted against free GPUs.
``mig-repack``
    On a MIG cluster: evict the fewest tenants of one GPU whose re-layout admits a pending job blocked by slice
    alignment (:mod:`fgdopt.timeline.migtime`), with ``priority``'s checkpoint rule; counted as evictions.
``migrate``
    Migration (Gandiva, Singularity): while pending jobs fit no node, every ``period_s`` (300 s) a defragmentation
    plan of at most ``budget`` (10) moves by ``method`` (``fgd-guided``, :func:`fgdopt.defrag.defrag`) for the
    first blocked pending jobs; it is carried out when it admits some, each move transparent and costing
    ``migrate_s`` (30 s, Helios' multi-GPU checkpoint time, an assumption) without progress.
    A suspension is transparent (CUDA checkpoint to host memory); the suspended job restarts, anywhere, when it
    fits again, after ``suspend_s + restore_s`` seconds without progress (default 7 + 7 s, an assumption: Helios'
    one-GPU checkpoint time each way).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from fgdopt.defrag import DefragProblem, defrag
from fgdopt.frag import Workload
from fgdopt.model import GPU_MILLI
from fgdopt.state import ClusterState

MAX_PLANS = 64
"""At most this many plans per instant."""
EXACT_VICTIMS = 4
"""``priority``: victim sets are searched exactly up to this size per node; beyond it, every eligible job of it."""
MAX_SUBSETS = 256
"""``priority``: at most this many subsets of one size are tried on one node."""
EXACT_NODES = 8
"""``affinode``: the cheapest this many nodes are checked against CPU and memory."""


def helios_restart_s(num_gpu: int) -> float:
    """Helios' restart (checkpoint restore) cost in seconds: 7 s for at most one GPU, 30 s for 2-8, 60 s beyond."""
    return 7.0 if num_gpu <= 1 else (30.0 if num_gpu <= 8 else 60.0)


@dataclass(frozen=True)
class Checkpointing:
    """How a job's progress survives an eviction (module docstring); seconds throughout."""

    interval_s: float = math.inf
    cost_s: float = 0.0
    transparent: bool = False

    def run_time(self, remaining_s: float, start_cost_s: float) -> float:
        """Wall seconds to finish ``remaining_s`` of work from a checkpoint, after ``start_cost_s`` seconds."""
        if self.transparent or not math.isfinite(self.interval_s) or self.cost_s == 0:
            return start_cost_s + remaining_s
        return start_cost_s + remaining_s + self.cost_s * max(math.ceil(remaining_s / self.interval_s) - 1, 0)

    def evict(self, elapsed_s: float, start_cost_s: float, remaining_s: float) -> tuple[float, float, float, int]:
        """An eviction ``elapsed_s`` seconds into a run: (progress kept, progress lost, overhead spent, checkpoints
        completed in this run), in seconds; ``remaining_s`` is the work the run started with."""
        if elapsed_s <= start_cost_s:
            return 0.0, 0.0, elapsed_s, 0
        busy = elapsed_s - start_cost_s
        if self.transparent:
            return min(busy, remaining_s), 0.0, start_cost_s, 0
        if not math.isfinite(self.interval_s):
            return 0.0, min(busy, remaining_s), start_cost_s, 0
        cycle = self.interval_s + self.cost_s
        done = int(busy // cycle)                                     # checkpoints completed
        into = busy - done * cycle                                    # seconds into the current cycle
        progress = min(done * self.interval_s + min(into, self.interval_s), remaining_s)
        kept = min(done * self.interval_s, remaining_s)
        # the overhead: the start cost, the completed checkpoints and the part of one cut short
        return kept, progress - kept, start_cost_s + done * self.cost_s + max(into - self.interval_s, 0.0), done


    def lost(self, elapsed_s: np.ndarray, start_cost_s: np.ndarray, work_s: np.ndarray) -> np.ndarray:
        """Progress (seconds) an eviction would throw away now, for many runs at once (the ``lost`` of
        :meth:`evict`, vectorized)."""
        busy = np.maximum(elapsed_s - start_cost_s, 0.0)
        if self.transparent:
            return np.zeros_like(busy)
        if not math.isfinite(self.interval_s):
            return np.minimum(busy, work_s)
        cycle = self.interval_s + self.cost_s
        done = np.floor(busy / cycle)
        progress = np.minimum(done * self.interval_s + np.minimum(busy - done * cycle, self.interval_s), work_s)
        return progress - np.minimum(done * self.interval_s, work_s)


@dataclass(frozen=True)
class Plan:
    """Evict ``victims`` (running job indices) so that pending job ``job`` starts (at ``where``, a policy's choice,
    if given; else where the run's policy puts it); ``kind`` ``preempt``, ``suspend`` or ``evict`` (a MIG re-layout,
    :mod:`fgdopt.timeline.migtime`: the checkpoint rule of ``preempt``, counted as an eviction). Or, with ``kind``
    ``migrate`` or ``round``, a plan placed as given: ``moves`` of running jobs (migrated), ``victims`` (preempted,
    with the mechanism's checkpointing) and ``admits`` of pending ones (:class:`fgdopt.defrag.Move`: job, node,
    GPUs), carried out as :func:`fgdopt.defrag.apply_plan` defines (every moved and preempted job leaves, then every
    moved and admitted job is placed). A ``round`` is what a round-based scheduler (:mod:`fgdopt.hetero.rounds`)
    runs next: the jobs it stops and the jobs it starts. ``rates`` (job, speed) pairs, with ``migrate`` or ``round``:
    after the placements, each of these running jobs keeps the progress of its run so far and runs on at that speed
    (progress per second; 0 holds it without progress and without a finish until a later plan re-rates it)."""

    job: int = -1
    victims: tuple[int, ...] = ()
    kind: str = "preempt"
    moves: tuple = ()
    admits: tuple = ()
    where: tuple | None = None
    rates: tuple = ()


class View(Protocol):
    """What a mechanism reads from the engine (read-only)."""

    state: ClusterState
    priority: np.ndarray
    first_gpu: np.ndarray           # the first GPU id of each running job (-1: none)
    lost_if_evicted: np.ndarray     # milli-GPU x s of progress an eviction of each running job would lose now
    now: float                      # the instant, s
    run_s: np.ndarray               # seconds each job has run so far (all its runs)
    left_at: np.ndarray             # when each job last stopped running (NaN: never)
    workload: Workload              # the run's target workload M
    work_s: np.ndarray              # progress of each job so far, seconds of work at speed 1 (kept or not)
    restart_s: Callable[[int], float]   # the run's restart cost, s, by GPU count

    def pending(self) -> list[int]: ...        # the first pending jobs that fit no node, in queue order

    def queued(self) -> list[int]: ...         # every pending job, in queue order


class Mechanism(Protocol):
    """Asked after each pass for the next :class:`Plan` (or None); ``checkpointing`` applies to ``preempt``.

    Two optional members: ``owns_starts = True`` turns the engine's pass off (only the mechanism's plans start
    jobs), and ``wake_s(view) -> float`` names the next time the mechanism wants an instant of its own (asked after
    the plans of every instant while jobs are present; a time not after the instant means none).
    """

    name: str
    checkpointing: Checkpointing

    def plan(self, view: View) -> Plan | None: ...


def _fewest_victims(state: ClusterState, j: int, candidates: np.ndarray, cost: np.ndarray) -> tuple | None:
    """The best (size, cost, node, victims) for job ``j`` among the running ``candidates``: subsets by increasing
    size over every node where evicting all of its candidates frees enough CPU, memory and GPU in total (the
    cheapest fitting subset of the smallest size; :meth:`ClusterState.fits_without`, the one feasibility rule)."""
    task = state.tasks[j]
    tasks = state.tasks
    nodes = state.node_of[candidates]
    size = state.cluster.n_nodes
    cpu = state.cpu_left + np.bincount(nodes, tasks.cpu_milli[candidates], minlength=size)
    mem = state.mem_left + np.bincount(nodes, tasks.memory_mib[candidates], minlength=size)
    gpu = state.gpu_left.sum(axis=1) + np.bincount(nodes, tasks.gpu_demand[candidates], minlength=size)
    hopeful = (cpu >= task.cpu_milli) & (mem >= task.memory_mib) & (gpu >= task.gpu_demand)
    hopeful &= (state.cluster.gpu >= task.num_gpu) & (np.bincount(nodes, minlength=size) > 0)
    if task.num_gpu:
        hopeful &= state.spec_mask(task.gpu_spec)
    on = {n: candidates[nodes == n].tolist() for n in np.flatnonzero(hopeful).tolist()}
    for k in range(1, EXACT_VICTIMS + 1):
        found = [(float(cost[list(v)].sum()), n, v) for n, jobs in on.items() if len(jobs) >= k
                 for v in itertools.islice(itertools.combinations(jobs, k), MAX_SUBSETS)
                 if state.fits_without(task, n, v)]
        if found:
            lost, n, victims = min(found)
            return k, lost, n, victims
    found = [(len(jobs), float(cost[jobs].sum()), n, tuple(jobs)) for n, jobs in on.items()
             if len(jobs) > EXACT_VICTIMS and state.fits_without(task, n, jobs)]
    return min(found) if found else None


def _preempt_for_rank(view: View, order: list[int], rank: np.ndarray) -> Plan | None:
    """The first pending job of ``order`` for which evicting running jobs of lower ``rank`` can make room: the
    fewest such jobs (:func:`_fewest_victims`), preempted."""
    running = np.flatnonzero(view.state.node_of >= 0)
    for j in order if len(running) else ():
        lower = running[rank[running] < rank[j]]
        if len(lower) and (found := _fewest_victims(view.state, j, lower, view.lost_if_evicted)) is not None:
            return Plan(j, found[3], "preempt")
    return None


@dataclass(frozen=True)
class NoMechanism:
    name: str = "none"
    checkpointing: Checkpointing = Checkpointing()

    def plan(self, view: View) -> Plan | None:
        return None


@dataclass(frozen=True)
class PriorityPreemption:
    """``priority`` / ``transparent`` (module docstring)."""

    name: str = "priority"
    checkpointing: Checkpointing = Checkpointing(interval_s=1800.0)

    def plan(self, view: View) -> Plan | None:
        return _preempt_for_rank(view, view.pending(), view.priority)


@dataclass
class TiresiasLAS:
    """``tiresias`` (module docstring): discretized two-dimensional least attained service."""

    name: str = "tiresias"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    thresholds: tuple[float, ...] = (3250.0,)
    starvation: float = 0.0
    promoted: dict = field(default_factory=dict)           # job -> its run seconds when last promoted to Q0

    def queues(self, view: View) -> np.ndarray:
        """The queue of every job (0 = highest priority) from its attained GPU-seconds since its last promotion."""
        tasks = view.state.tasks
        offset = np.zeros(len(view.run_s))
        if self.promoted:
            offset[list(self.promoted)] = list(self.promoted.values())
        attained = tasks.gpu_demand / GPU_MILLI * (view.run_s - offset)
        return np.searchsorted(np.asarray(self.thresholds), attained, side="right")

    def plan(self, view: View) -> Plan | None:
        queue = self.queues(view)
        pending = view.pending()
        if self.starvation > 0:                             # Tiresias' knob: a long wait promotes to Q0
            for j in pending:
                waited = view.now - view.left_at[j]
                if queue[j] > 0 and waited >= self.starvation * (view.run_s[j] - self.promoted.get(j, 0.0)):
                    self.promoted[j] = float(view.run_s[j])
                    queue[j] = 0
        return _preempt_for_rank(view, sorted(pending, key=lambda j: queue[j]), -queue)   # stable within a queue


@dataclass(frozen=True)
class AffinodeSuspension:
    """``affinode`` (module docstring)."""

    name: str = "affinode"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    suspend_s: float = 7.0
    restore_s: float = 7.0

    def plan(self, view: View) -> Plan | None:
        state = view.state
        tasks = state.tasks
        running = np.flatnonzero(state.node_of >= 0)
        sharing = running[(tasks.num_gpu[running] == 1) & (tasks.gpu_milli[running] < GPU_MILLI)]
        if not len(sharing):
            return None
        # per GPU: the sharing demand on it; a GPU can be cleared when sharing jobs are all it holds
        gpu_of = view.first_gpu[sharing]
        shared = np.zeros_like(state.gpu_left)
        np.add.at(shared, (state.node_of[sharing], gpu_of), tasks.gpu_demand[sharing])
        used = GPU_MILLI - state.gpu_left
        exists = np.arange(state.gpu_left.shape[1])[None, :] < state.cluster.gpu[:, None]
        cost = np.where(exists & (used > 0) & (shared == used), used, np.inf)   # milli-GPU to suspend per GPU
        prefix = np.cumsum(np.sort(cost, axis=1), axis=1)
        free_gpus = (exists & (state.gpu_left == GPU_MILLI)).sum(axis=1)
        total_free = int(state.gpu_left.sum())
        for j in view.pending():
            if tasks.gpu_milli[j] != GPU_MILLI or tasks.gpu_demand[j] > total_free:
                continue
            need = int(tasks.num_gpu[j]) - free_gpus                  # GPUs to clear on each node
            ok = (need >= 1) & (need <= state.cluster.gpu) & state.spec_mask(tasks.gpu_spec[j])
            price = np.where(ok, np.take_along_axis(prefix, np.clip(need - 1, 0, None)[:, None], axis=1)[:, 0], np.inf)
            for n in np.argsort(price, kind="stable")[:EXACT_NODES].tolist():
                if not np.isfinite(price[n]):
                    break
                cleared = np.argsort(cost[n], kind="stable")[:need[n]]
                victims = tuple(sharing[(state.node_of[sharing] == n) & np.isin(gpu_of, cleared)].tolist())
                if state.fits_without(tasks[j], n, victims):            # CPU and memory too (the one rule)
                    return Plan(j, victims, "suspend")
        return None


@dataclass
class MigrationDefrag:
    """``migrate`` (module docstring): a defragmentation plan every ``period_s`` while jobs are blocked."""

    name: str = "migrate"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    period_s: float = 300.0
    budget: int = 10
    method: str = "fgd-guided"
    migrate_s: float = 30.0
    next_s: float = 0.0

    def plan(self, view: View) -> Plan | None:
        if view.now < self.next_s:
            return None
        waiting = view.pending()
        if not waiting:
            return None
        self.next_s = view.now + self.period_s
        problem = DefragProblem.from_state(view.state, waiting)
        report = defrag(problem, self.method, self.budget, view.workload)
        if not report.plan.admits:
            return None
        return Plan(kind="migrate", moves=report.plan.moves, admits=report.plan.admits)


MECHANISM_NAMES = ("none", "priority", "transparent", "affinode", "tiresias", "migrate", "mig-repack")


def make_mechanism(name: str, *, checkpoint_s: float = 1800.0, checkpoint_cost_s: float = 0.0) -> Mechanism:
    """The mechanism ``name`` (:data:`MECHANISM_NAMES`); ``checkpoint_s`` / ``checkpoint_cost_s`` set the checkpoint
    interval and cost (seconds) of ``priority`` and ``mig-repack``.

    Raises
    ------
    ValueError : unknown name.
    """
    if name == "none":
        return NoMechanism()
    if name == "priority":
        return PriorityPreemption("priority", Checkpointing(checkpoint_s, checkpoint_cost_s))
    if name == "transparent":
        return PriorityPreemption("transparent", Checkpointing(transparent=True))
    if name == "affinode":
        return AffinodeSuspension()
    if name == "tiresias":
        return TiresiasLAS()
    if name == "migrate":
        return MigrationDefrag()
    if name == "mig-repack":                                   # MIG re-layout evictions (fgdopt.timeline.migtime)
        from fgdopt.timeline.migtime import MigRepack

        return MigRepack(checkpointing=Checkpointing(checkpoint_s, checkpoint_cost_s))
    raise ValueError(f"unknown mechanism {name!r}; valid names: {', '.join(MECHANISM_NAMES)}")
