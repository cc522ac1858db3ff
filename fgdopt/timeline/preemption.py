"""Progress, checkpoints and the mechanisms that take GPUs from running jobs (docs/semantics.md "Time": preemption).

Progress and checkpoints (:class:`Checkpointing`). A running job makes one second of progress per second of run
time, after a *restart cost* when it starts again after an eviction (no progress meanwhile). It checkpoints every
``interval_s`` seconds of progress, each checkpoint taking ``cost_s`` seconds without progress (no checkpoint at the
finish). Preempting a job frees all its GPUs at once (gang) and throws away the progress made since its last
completed checkpoint; a *transparent* checkpoint (Singularity) loses nothing and costs nothing but the restart.
The restart cost defaults to Helios' (SC'21) figures by GPU count: 7 s for one GPU (or a share of one, or none),
30 s for 2 to 8 GPUs (:func:`helios_restart_s`). A job preempted again before completing a checkpoint in the run
that followed an eviction is *thrashed*.

Mechanisms (:data:`MECHANISM_NAMES`, :func:`make_mechanism`) are asked by the engine, after each scheduling pass,
for *plans* (:class:`Plan`): a pending job (the beneficiary), the running jobs to evict for it (the victims) and how
(:class:`PreemptPlan`, :class:`SuspendPlan`). The engine evicts the victims, places the beneficiary at once with the
run's policy, requeues the victims (keeping their place in the queue) and runs the pass again; at most
:data:`MAX_PLANS` plans per instant.

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
    Checkpoints every 30 minutes of progress by default. A job whose search found nothing is searched again only on
    the nodes that changed since (:class:`Failures`; the same plans, without repeating a fruitless search at every
    instant while jobs are blocked).
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
    alignment (:mod:`fgdopt.mig.timeline`), with ``priority``'s checkpoint rule; counted as evictions
    (:class:`MigRepack`; the exact re-layout search is MIG's slice geometry, :func:`fgdopt.mig.slices.relayouts`;
    :mod:`fgdopt.mig.timeline` describes the rule).
``migrate``
    Migration (Gandiva, Singularity): while pending jobs fit no node, every ``period_s`` (300 s) a defragmentation
    plan of at most ``budget`` (10) moves by ``method`` (``fgd-guided``, :func:`fgdopt.defrag.defrag`) for the
    first blocked pending jobs; it is carried out when it admits some, each move transparent and costing
    ``migrate_s`` (30 s, Helios' multi-GPU checkpoint time, an assumption) without progress.
    A suspension is transparent (CUDA checkpoint to host memory); the suspended job restarts, anywhere, when it
    fits again, after ``suspend_s + restore_s`` seconds without progress (default 7 + 7 s, an assumption: Helios'
    one-GPU checkpoint time each way).
``failures``
    Failed nodes and GPUs at the published rates (:mod:`fgdopt.timeline.failures`): a failure stops every job with
    a part there (progress since the last checkpoint lost, every 30 minutes by default) and takes the resource out
    of service until it is repaired; :class:`fgdopt.timeline.failures.FailuresAndDrift` adds per-GPU speed factors.
``repack``
    Migration at no cost (:class:`FreeRepack`): at every instant with blocked jobs, clear one node for a blocked
    job and re-place the node's jobs elsewhere, every move transparent and free. Not a practical mechanism: its
    runs are feasible schedules with migration, whose mean wait caps every relaxation that lets jobs move
    (:mod:`fgdopt.timeline.diagnostics`, ceiling (c)).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple, Protocol

import numpy as np

from fgdopt.defrag import DefragProblem, Move, defrag
from fgdopt.frag import Workload
from fgdopt.mig.slices import relayouts
from fgdopt.model import GPU_MILLI
from fgdopt.state import ClusterState, fitting_gpus

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
    """How a job's progress survives an eviction (module docstring); seconds throughout.

    Raises
    ------
    ValueError : an ``interval_s`` that is not > 0 (inf: never), or a ``cost_s`` that is not a finite number >= 0.
    """

    interval_s: float = math.inf
    cost_s: float = 0.0
    transparent: bool = False

    def __post_init__(self) -> None:
        if not self.interval_s > 0:
            raise ValueError(f"checkpoint interval_s must be > 0 seconds (inf: never), got {self.interval_s}")
        if not (math.isfinite(self.cost_s) and self.cost_s >= 0):
            raise ValueError(f"checkpoint cost_s must be a finite number of seconds >= 0, got {self.cost_s}")

    def run_time(self, remaining_s: float, start_cost_s: float) -> float:
        """Wall seconds to finish ``remaining_s`` of work from a checkpoint, after ``start_cost_s`` seconds."""
        if self.transparent or not math.isfinite(self.interval_s) or self.cost_s == 0 or math.isinf(remaining_s):
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


class GangMove(NamedTuple):
    """An admit of a :class:`RoundPlan` or :class:`MigratePlan` over several nodes: job ``task`` on ``parts``,
    ``((node, gpus), ...)`` (:meth:`fgdopt.state.ClusterState.place_parts`); ``node`` and ``gpus`` are its first part,
    so it reads as a :class:`fgdopt.defrag.Move` wherever one is read. ``demands``: the ``(cpu_milli, memory_mib)``
    each part holds on its node (:attr:`fgdopt.state.ClusterState.demand_of`; a round policy that sizes each job's
    CPU and memory, Synergy's), or None: the job's shape's. With ``demands``, ``parts`` may be one part."""

    task: int
    node: int
    gpus: tuple[int, ...]
    parts: tuple[tuple[int, tuple[int, ...]], ...]
    demands: tuple[tuple[int, int], ...] | None = None


_MOVES = (Move, GangMove)
"""What a plan places: a :class:`fgdopt.defrag.Move` or a :class:`GangMove`."""


class Outage(NamedTuple):
    """Resources out of service (a failed node or GPU, :mod:`fgdopt.timeline.failures`): ``gpus`` of ``node``, and,
    when ``whole_node``, the node's CPU and memory too (``gpus`` then every GPU of the node). An
    :class:`OutagePlan`'s ``down`` takes them out after its evictions (they must be free then: no job may hold a part
    of them); its ``up`` puts them back (:meth:`fgdopt.timeline.placement.Placer.take_out`, ``put_back``)."""

    node: int
    gpus: tuple[int, ...]
    whole_node: bool = False


class Plan:
    """What a mechanism asks the engine to do next (:meth:`Mechanism.plan`): one of the plan types below, each a
    small frozen record of the fields its kind uses, checked when built (``ValueError``, one line naming the type's
    field). The engine carries each type out in one function of its own (:data:`PLAN_TYPES`).

    ============================  ======================================================================================
    :class:`PreemptPlan`           evict ``victims`` (running jobs, the mechanism's checkpointing) so that pending
                                   ``job`` starts, at ``where`` (a policy's choice) if given, else where the run's
                                   policy puts it
    :class:`SuspendPlan`           the same, the victims suspended (``suspend_s + restore_s`` without progress)
    :class:`EvictPlan`             the same, a MIG re-layout (:mod:`fgdopt.mig.timeline`): ``preempt``'s checkpoint
                                   rule, counted as evictions
    :class:`MigratePlan`           ``moves`` of running jobs (migrated) and ``admits`` of pending ones, placed as given
    :class:`RoundPlan`             what a round loop (:class:`fgdopt.timeline.rounds.RoundLoop`) runs next: ``moves``,
                                   ``victims`` (preempted), ``admits``, then ``rates``
    :class:`OutagePlan`            failures (:mod:`fgdopt.timeline.failures`): ``victims`` stopped, ``down`` taken out
                                   of service, ``up`` put back
    ============================  ======================================================================================

    Moves and admits (:class:`fgdopt.defrag.Move`: job, node, GPUs; or :class:`GangMove`, a job over several nodes)
    are carried out as :func:`fgdopt.defrag.apply_plan` defines: every moved and preempted job leaves, then every
    moved and admitted job is placed.
    """


_INT_TYPES = frozenset((int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64))
"""The exact types of a job index (bool is not one)."""
_NUMBER_TYPES = frozenset((float, np.float16, np.float32, np.float64)) | _INT_TYPES
"""The exact types of a speed."""


def _bad(plan: Plan, name: str, detail: str) -> ValueError:
    return ValueError(f"{type(plan).__name__}.{name}: {detail}")


def _check_tuple(plan: Plan, name: str, values, what: str) -> None:
    if type(values) is not tuple:
        raise _bad(plan, name, f"a {type(values).__name__}, not a tuple of {what}")


def _is_job(v) -> bool:
    return type(v) in _INT_TYPES and v >= 0


def _check_jobs(plan: Plan, name: str, values) -> None:
    """``values`` is a tuple of job indices (ints >= 0); the first bad one named, else no loop in Python."""
    _check_tuple(plan, name, values, "job indices")
    if values and not (set(map(type, values)) <= _INT_TYPES and min(values) >= 0):
        k, v = next((k, v) for k, v in enumerate(values) if not _is_job(v))
        raise _bad(plan, f"{name}[{k}]", f"{v!r}, not a job index (an int >= 0)")


def _check_items(plan: Plan, name: str, values, kinds: tuple[type, ...]) -> None:
    """``values`` is a tuple of ``kinds`` instances (of these very types)."""
    what = " or ".join(k.__name__ for k in kinds)
    _check_tuple(plan, name, values, what)
    if not set(map(type, values)) <= set(kinds):
        k, v = next((k, v) for k, v in enumerate(values) if type(v) not in kinds)
        raise _bad(plan, f"{name}[{k}]", f"{v!r}, not a {what}")


def _is_rate(pair) -> bool:
    return (type(pair) is tuple and len(pair) == 2 and _is_job(pair[0]) and type(pair[1]) in _NUMBER_TYPES
            and math.isfinite(pair[1]) and pair[1] >= 0)


def _check_rates(plan: Plan, name: str, values) -> None:
    """``values`` is a tuple of (job index, speed) pairs, each speed finite and >= 0 (the sum of speeds >= 0 is
    finite exactly when each is, NaN included)."""
    _check_tuple(plan, name, values, "(job, speed) pairs")
    if not values:
        return
    ok = set(map(type, values)) == {tuple} and set(map(len, values)) == {2}
    if ok:
        jobs, speeds = zip(*values, strict=True)
        ok = (set(map(type, jobs)) <= _INT_TYPES and min(jobs) >= 0 and set(map(type, speeds)) <= _NUMBER_TYPES
              and min(speeds) >= 0 and math.isfinite(sum(speeds)))
    if not ok:
        k, pair = next((k, pair) for k, pair in enumerate(values) if not _is_rate(pair))
        raise _bad(plan, f"{name}[{k}]", f"{pair!r}, not a (job, speed) pair with a job index and a finite speed >= 0")


@dataclass(frozen=True)
class StartPlan(Plan):
    """Evict ``victims`` (running job indices) so that pending job ``job`` starts, at ``where`` (a policy's choice:
    ``(node, gpus)``, or MIG's ``(node, gpus, slice starts)``) if given, else where the run's policy puts it. Built
    as one of its kinds, whose ``how`` is how the victims leave: :class:`PreemptPlan`, :class:`SuspendPlan`,
    :class:`EvictPlan`."""

    job: int
    victims: tuple[int, ...]
    where: tuple | None = None
    how: ClassVar[str]

    def __post_init__(self) -> None:
        if type(self) is StartPlan:
            raise TypeError("StartPlan is built as one of its kinds: PreemptPlan, SuspendPlan or EvictPlan")
        if not _is_job(self.job):
            raise _bad(self, "job", f"{self.job!r}, not a job index (an int >= 0)")
        _check_jobs(self, "victims", self.victims)
        if self.where is not None and type(self.where) is not tuple:
            raise _bad(self, "where", f"a {type(self.where).__name__}, not None or a tuple (node, gpus, ...)")


@dataclass(frozen=True)
class PreemptPlan(StartPlan):
    """:class:`StartPlan` whose victims are preempted (the mechanism's checkpointing)."""

    how: ClassVar[str] = "preempt"


@dataclass(frozen=True)
class SuspendPlan(StartPlan):
    """:class:`StartPlan` whose victims are suspended (transparent; ``suspend_s + restore_s`` without progress)."""

    how: ClassVar[str] = "suspend"


@dataclass(frozen=True)
class EvictPlan(StartPlan):
    """:class:`StartPlan` of a MIG re-layout (:mod:`fgdopt.mig.timeline`): the checkpoint rule of a preemption,
    counted as evictions."""

    how: ClassVar[str] = "evict"


@dataclass(frozen=True)
class MigratePlan(Plan):
    """Migrate ``moves`` (running jobs, each move transparent and costing the mechanism's ``migrate_s``) and start
    ``admits`` (pending jobs), placed as given (:class:`Plan`)."""

    moves: tuple = ()
    admits: tuple = ()

    def __post_init__(self) -> None:
        _check_items(self, "moves", self.moves, _MOVES)
        _check_items(self, "admits", self.admits, _MOVES)


@dataclass(frozen=True)
class RoundPlan(Plan):
    """A round (:class:`fgdopt.timeline.rounds.RoundLoop`): ``moves`` of running jobs (migrated), ``victims``
    (preempted, with the mechanism's checkpointing) and ``admits`` of pending ones, placed as given
    (:class:`Plan`); ``resized``, :class:`GangMove` of running jobs that keep their parts and run on, without a stop,
    holding the CPU and memory of the move's ``demands`` (each judged by the one rule once the moved and preempted
    jobs have left, before the admits are placed); then ``rates``, (job, speed) pairs: each of these running jobs
    keeps the progress of its run so far and runs on at that speed (progress per second, finite and >= 0; 0 holds
    it without progress and without a finish until a later plan re-rates it)."""

    victims: tuple[int, ...] = ()
    admits: tuple = ()
    moves: tuple = ()
    rates: tuple[tuple[int, float], ...] = ()
    resized: tuple = ()

    def __post_init__(self) -> None:
        _check_jobs(self, "victims", self.victims)
        _check_items(self, "admits", self.admits, _MOVES)
        _check_items(self, "moves", self.moves, _MOVES)
        _check_rates(self, "rates", self.rates)
        _check_items(self, "resized", self.resized, (GangMove,))


@dataclass(frozen=True)
class OutagePlan(Plan):
    """Failures (:mod:`fgdopt.timeline.failures`): stop ``victims`` (running jobs with a part on a failed resource,
    preempted with the mechanism's checkpointing), then take ``down`` out of service (they must be free then) and
    put ``up`` back (:class:`Outage`)."""

    victims: tuple[int, ...] = ()
    down: tuple = ()
    up: tuple = ()

    def __post_init__(self) -> None:
        _check_jobs(self, "victims", self.victims)
        _check_items(self, "down", self.down, (Outage,))
        _check_items(self, "up", self.up, (Outage,))


PLAN_TYPES = (PreemptPlan, SuspendPlan, EvictPlan, MigratePlan, RoundPlan, OutagePlan)
"""Every plan type the engine carries out (:func:`fgdopt.timeline.engine.carry_out`)."""


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
    node_revision: np.ndarray       # optional: per node, the state's ``revision`` after the node's latest change

    def pending(self) -> list[int]: ...        # the first pending jobs that fit no node, in queue order

    def queued(self) -> list[int]: ...         # every pending job, in queue order
    def waiting(self) -> np.ndarray: ...       # every pending job, int64, in no given order (no sort)
    def run_of(self, js: np.ndarray) -> np.ndarray: ...    # run_s of the jobs js only
    def work_of(self, js: np.ndarray) -> np.ndarray: ...   # work_s of the jobs js only


class Mechanism(Protocol):
    """Every hook the engine calls on a mechanism (:class:`MechanismBase` gives each optional one its default).

    Required: ``name``, ``checkpointing`` (applies to preemptions) and ``plan(view)``, asked after each pass for the
    next :class:`Plan` (or None). Optional (the defaults of :class:`MechanismBase` in brackets):

    - ``owns_starts`` [False]: True turns the engine's pass off (only the mechanism's plans start jobs);
    - ``every_instant`` [False]: True asks for plans at every instant, not only while jobs are pending;
    - ``wake_s(view) -> float`` [inf]: the next time the mechanism wants an instant of its own (asked after the plans
      of every instant while jobs are present; a time not after the instant means none);
    - ``span`` [False]: True admits jobs that only a gang over several nodes holds;
    - ``elastic`` [None]: bool per job, the jobs whose GPU count the mechanism chooses at each placement
      (:attr:`fgdopt.state.ClusterState.elastic`: each job's shape is one replica, and a plan's :class:`GangMove`
      places it on as many whole GPUs as its parts hold; re-sizing a running job is a move, which releases its GPUs
      before the plan places anything);
    - ``migrate_s`` [0]: seconds without progress after a move by a :class:`MigratePlan` or :class:`RoundPlan`;
    - ``suspend_s``, ``restore_s`` [0, 0]: seconds without progress, together, after a :class:`SuspendPlan`.
    - ``gpu_speed`` [None]: float64 (nodes, max GPUs), kept current by the mechanism, each GPU's speed factor: a run
      starts at its job's speed times the least factor among its GPUs (every part of a gang), and a
      *health-aware* policy (``health_aware = True``) is given it as ``gpu_speed=``
      (:mod:`fgdopt.timeline.failures`, :mod:`fgdopt.policies.health`).
    """

    name: str
    checkpointing: Checkpointing
    owns_starts: bool
    every_instant: bool
    span: bool
    elastic: np.ndarray | None
    migrate_s: float
    suspend_s: float
    restore_s: float
    gpu_speed: np.ndarray | None

    def plan(self, view: View) -> Plan | None: ...

    def wake_s(self, view: View) -> float: ...


class MechanismBase:
    """The defaults of the optional hooks of :class:`Mechanism`; every mechanism of the package subclasses it, and
    :func:`as_mechanism` gives any other object them."""

    owns_starts: bool = False
    every_instant: bool = False
    span: bool = False
    elastic: np.ndarray | None = None
    migrate_s: float = 0.0
    suspend_s: float = 0.0
    restore_s: float = 0.0
    gpu_speed: np.ndarray | None = None

    def wake_s(self, view: View) -> float:
        """No instant of its own (:attr:`math.inf`)."""
        return math.inf


HOOKS = ("owns_starts", "every_instant", "span", "elastic", "migrate_s", "suspend_s", "restore_s", "gpu_speed",
         "wake_s")
"""The optional hooks of :class:`Mechanism` (their defaults: :class:`MechanismBase`)."""


class _Completed(MechanismBase):
    """A mechanism object that does not subclass :class:`MechanismBase`, its missing hooks given the defaults."""

    def __init__(self, mech):
        self.inner, self.name, self.checkpointing, self.plan = mech, mech.name, mech.checkpointing, mech.plan
        for hook in HOOKS:
            if hasattr(mech, hook):
                setattr(self, hook, getattr(mech, hook))


def as_mechanism(mech) -> Mechanism:
    """``mech`` with every hook of :class:`Mechanism`: itself if it subclasses :class:`MechanismBase`, else a wrapper
    that gives the hooks it lacks their defaults (a plug-in needs only ``name``, ``checkpointing`` and ``plan``).

    Raises
    ------
    TypeError : ``mech`` lacks ``name``, ``checkpointing`` or ``plan`` (one line naming them).
    """
    if isinstance(mech, MechanismBase):
        return mech
    if missing := [a for a in ("name", "checkpointing", "plan") if not hasattr(mech, a)]:
        raise TypeError(f"mechanism {type(mech).__name__} has no {', '.join(missing)} "
                        "(see fgdopt.timeline.preemption.Mechanism)")
    return _Completed(mech)


def _room_test(state: ClusterState, task, on: dict[int, list[int]]) -> Callable[[int, tuple], bool]:
    """A quick necessary condition of :meth:`~fgdopt.state.ClusterState.fits_without` for ``task`` on the nodes of
    ``on`` (node -> its candidate victims): the node's free CPU, memory and total free milli-GPU plus the victims'
    cover the task's (a GPU demand of ``num_gpu x gpu_milli`` needs at least that much free in total). It only
    skips subsets the rule would refuse; the rule decides the others. On MIG (slices) it passes everything."""
    if state.mig is not None:
        return lambda n, victims: True
    tasks = state.tasks
    need_cpu, need_mem, need_gpu = int(task.cpu_milli), int(task.memory_mib), int(task.gpu_demand)
    nodes = list(on)
    room = dict(zip(nodes, zip(state.cpu_left[nodes].tolist(), state.mem_left[nodes].tolist(),
                               state.gpu_left[nodes].sum(axis=1).tolist(), strict=True), strict=True))
    jobs = [v for victims in on.values() for v in victims]
    size = dict(zip(jobs, zip(tasks.cpu_milli[jobs].tolist(), tasks.memory_mib[jobs].tolist(),
                              tasks.gpu_demand[jobs].tolist(), strict=True), strict=True))

    def may_fit(n: int, victims: tuple) -> bool:
        cpu, mem, gpu = room[n]
        for v in victims:
            c, m, g = size[v]
            cpu, mem, gpu = cpu + c, mem + m, gpu + g
        return cpu >= need_cpu and mem >= need_mem and gpu >= need_gpu

    return may_fit


def _fewest_victims(state: ClusterState, j: int, candidates: np.ndarray, cost, where: np.ndarray | None = None
                    ) -> tuple | None:
    """The best (size, cost, node, victims) for job ``j`` among the running ``candidates``: subsets by increasing
    size over every node where evicting all of its candidates frees enough CPU, memory and GPU in total (the
    cheapest fitting subset of the smallest size; :meth:`ClusterState.fits_without`, the one feasibility rule).
    ``cost`` is indexed by job (milli-GPU x s lost); ``where`` (bool per node) limits the nodes searched."""
    task = state.tasks[j]
    tasks = state.tasks
    nodes = state.node_of[candidates]
    if where is None:                                          # every node, by index
        ids, size, pos = None, state.cluster.n_nodes, nodes
    else:                                                      # the nodes of ``where`` only, by position in ``ids``
        keep = where[nodes]
        candidates, nodes = candidates[keep], nodes[keep]
        ids = np.flatnonzero(where)
        size, pos = len(ids), np.searchsorted(ids, nodes)

    def of(values: np.ndarray) -> np.ndarray:
        return values if ids is None else values[ids]

    cpu = of(state.cpu_left) + np.bincount(pos, tasks.cpu_milli[candidates], minlength=size)
    mem = of(state.mem_left) + np.bincount(pos, tasks.memory_mib[candidates], minlength=size)
    gpu = of(state.gpu_left).sum(axis=1) + np.bincount(pos, tasks.gpu_demand[candidates], minlength=size)
    hopeful = (cpu >= task.cpu_milli) & (mem >= task.memory_mib) & (gpu >= task.gpu_demand)
    hopeful &= (of(state.cluster.gpu) >= task.num_gpu) & (np.bincount(pos, minlength=size) > 0)
    if task.num_gpu:
        hopeful &= of(state.spec_mask(task.gpu_spec))
    keep = hopeful[pos]                                       # the candidates on hopeful nodes, grouped by node
    by_node = np.argsort(pos[keep], kind="stable")
    jobs_on, pos_on = candidates[keep][by_node].tolist(), pos[keep][by_node]
    hop = np.flatnonzero(hopeful)
    bounds = np.searchsorted(pos_on, hop, side="left").tolist() + [len(pos_on)]
    on = {n: jobs_on[bounds[i]:bounds[i + 1]] for i, n in enumerate((hop if ids is None else ids[hop]).tolist())}
    singles = [(n, v) for n, jobs in on.items() for v in jobs[:MAX_SUBSETS]]     # one victim: all at once
    fits = state.fits_without_each(task, [v for _, v in singles]).tolist() if singles else []
    found = [(float(cost[v]), n, (v,)) for (n, v), ok in zip(singles, fits, strict=True) if ok]
    if found:
        lost, n, victims = min(found)
        return 1, lost, n, victims
    may_fit = _room_test(state, task, on)
    for k in range(2, EXACT_VICTIMS + 1):
        found = [(float(cost[list(v)].sum()), n, v) for n, jobs in on.items() if len(jobs) >= k
                 for v in itertools.islice(itertools.combinations(jobs, k), MAX_SUBSETS)
                 if may_fit(n, v) and state.fits_without(task, n, v)]
        if found:
            lost, n, victims = min(found)
            return k, lost, n, victims
    found = [(len(jobs), float(cost[jobs].sum()), n, tuple(jobs)) for n, jobs in on.items()
             if len(jobs) > EXACT_VICTIMS and state.fits_without(task, n, jobs)]
    return min(found) if found else None


class _Lazy:
    """An array computed at its first indexing (the progress an eviction would lose: one per plan, if needed)."""

    def __init__(self, make: Callable[[], np.ndarray]):
        self.make, self.value = make, None

    def __getitem__(self, index):
        if self.value is None:
            self.value = self.make()
        return self.value[index]


class Failures:
    """The pending jobs whose victim search failed, each with the state revision it failed at, so that the next
    search for them looks only at the nodes changed since (``view.node_revision``, the revision of every node's
    latest change). Exact while the ranks stay those of the failures (``key``): a node's candidates and free
    capacity change only with a placement or removal on it, so a node where no victims fitted still has none."""

    def __init__(self):
        self.state: ClusterState | None = None
        self.key: np.ndarray | None = None
        self.at: dict[int, int] = {}

    def bind(self, view: View, key: np.ndarray | None = None) -> np.ndarray | None:
        """The node revisions of ``view`` (None: it has none, nothing is remembered); forgets every failure of
        another run or other ranks (``key``)."""
        revisions = getattr(view, "node_revision", None)
        if revisions is not None and (self.state is not view.state or (
                key is not None and (self.key is None or not np.array_equal(key, self.key)))):
            self.state, self.key, self.at = view.state, key, {}
        return revisions


def _preempt_for_rank(view: View, order: list[int], rank: np.ndarray, failures: Failures | None = None,
                      key: np.ndarray | None = None) -> Plan | None:
    """The first pending job of ``order`` for which evicting running jobs of lower ``rank`` can make room: the
    fewest such jobs (:func:`_fewest_victims`), preempted. With ``failures`` (ranks that change only with ``key``),
    a job whose search failed is searched again only on the nodes changed since (:class:`Failures`)."""
    state = view.state
    running = np.flatnonzero(state.node_of >= 0)
    revisions = failures.bind(view, key) if failures is not None else None
    cost = _Lazy(lambda: view.lost_if_evicted)
    lowers: dict = {}                                         # rank -> the running jobs below it
    failed = set()                                            # (task, rank) found no victims now
    for j in order if len(running) else ():
        where = None
        if revisions is not None and j in failures.at:
            where = revisions > failures.at[j]
            if not where.any():
                continue
        if (state.tasks[j], rank[j]) in failed:               # the same shape and rank: the same answer
            if revisions is not None:
                failures.at[j] = state.revision
            continue
        lower = lowers.get(rank[j])
        if lower is None:
            lower = lowers[rank[j]] = running[rank[running] < rank[j]]
        if len(lower) and (found := _fewest_victims(state, j, lower, cost, where)) is not None:
            return PreemptPlan(j, found[3])
        failed.add((state.tasks[j], rank[j]))
        if revisions is not None:
            failures.at[j] = state.revision
    return None


@dataclass(frozen=True)
class NoMechanism(MechanismBase):
    name: str = "none"
    checkpointing: Checkpointing = Checkpointing()

    def plan(self, view: View) -> Plan | None:
        return None


@dataclass
class PriorityPreemption(MechanismBase):
    """``priority`` / ``transparent`` (module docstring)."""

    name: str = "priority"
    checkpointing: Checkpointing = Checkpointing(interval_s=1800.0)
    failures: Failures = field(default_factory=Failures, repr=False, compare=False)

    def plan(self, view: View) -> Plan | None:
        return _preempt_for_rank(view, view.pending(), view.priority, self.failures)


@dataclass
class TiresiasLAS(MechanismBase):
    """``tiresias`` (module docstring): discretized two-dimensional least attained service."""

    name: str = "tiresias"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    thresholds: tuple[float, ...] = (3250.0,)
    starvation: float = 0.0
    promoted: dict = field(default_factory=dict)           # job -> its run seconds when last promoted to Q0
    failures: Failures = field(default_factory=Failures, repr=False, compare=False)

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
        return _preempt_for_rank(view, sorted(pending, key=lambda j: queue[j]), -queue,   # stable within a queue
                                 self.failures, queue)


@dataclass
class AffinodeSuspension(MechanismBase):
    """``affinode`` (module docstring). Its plan is a function of the state and the pending jobs alone, so a search
    that failed is not repeated until one of them changes (``failed``: the state, its revision, the pending jobs)."""

    name: str = "affinode"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    suspend_s: float = 7.0
    restore_s: float = 7.0
    failed: tuple = field(default=(None, -1, ()), repr=False, compare=False)

    def plan(self, view: View) -> Plan | None:
        state = view.state
        pending = view.pending()
        if self.failed[0] is state and self.failed[1] == state.revision and self.failed[2] == pending:
            return None
        plan = self._search(view, pending)
        if plan is None:
            self.failed = (state, state.revision, pending)
        return plan

    def _search(self, view: View, pending: list[int]) -> Plan | None:
        state = view.state
        tasks = state.tasks
        total_free = int(state.gpu_left.sum())
        demand = tasks.gpu_demand
        blocked, seen = [], set()                              # the whole-GPU jobs to try, one per shape
        for j in pending:
            if tasks.gpu_milli[j] == GPU_MILLI and demand[j] <= total_free and (task := tasks[j]) not in seen:
                seen.add(task)
                blocked.append(j)
        running = np.flatnonzero(state.node_of >= 0)
        sharing = running[(tasks.num_gpu[running] == 1) & (tasks.gpu_milli[running] < GPU_MILLI)]
        if not len(sharing) or not blocked:
            return None
        # per GPU: the sharing demand on it; a GPU can be cleared when sharing jobs are all it holds
        gpu_of = view.first_gpu[sharing]
        node_of = state.node_of[sharing]
        shared = np.zeros_like(state.gpu_left)
        np.add.at(shared, (node_of, gpu_of), demand[sharing])
        used = GPU_MILLI - state.gpu_left
        exists = np.arange(state.gpu_left.shape[1])[None, :] < state.cluster.gpu[:, None]
        cost = np.where(exists & (used > 0) & (shared == used), used, np.inf)   # milli-GPU to suspend per GPU
        prefix = np.cumsum(np.sort(cost, axis=1), axis=1)
        free_gpus = (exists & (state.gpu_left == GPU_MILLI)).sum(axis=1)
        for j in blocked:
            need = int(tasks.num_gpu[j]) - free_gpus                  # GPUs to clear on each node
            ok = (need >= 1) & (need <= state.cluster.gpu) & state.spec_mask(tasks.gpu_spec[j])
            price = np.where(ok, np.take_along_axis(prefix, np.clip(need - 1, 0, None)[:, None], axis=1)[:, 0], np.inf)
            for n in np.argsort(price, kind="stable")[:EXACT_NODES].tolist():
                if not np.isfinite(price[n]):
                    break
                cleared = np.zeros(cost.shape[1], dtype=bool)           # the GPUs to clear on node n
                cleared[np.argsort(cost[n], kind="stable")[:need[n]]] = True
                here = node_of == n
                victims = tuple(sharing[here][cleared[gpu_of[here]]].tolist())
                if state.fits_without(tasks[j], n, victims):            # CPU and memory too (the one rule)
                    return SuspendPlan(j, victims)
        return None


@dataclass
class MigrationDefrag(MechanismBase):
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
        return MigratePlan(moves=report.plan.moves, admits=report.plan.admits)


@dataclass
class FreeRepack(MechanismBase):
    """``repack`` (module docstring): migration at no cost, the ceiling (c) of :mod:`fgdopt.timeline.diagnostics`.

    At every instant with blocked jobs, for the first ``scan`` of them in queue order: on each of the ``nodes``
    nodes where the job fits when empty (its model, GPUs, CPU, memory) and the fewest milli-GPU are in use
    (ties: lowest index), clear the node's jobs, place the blocked job there (its lowest-numbered fitting GPUs)
    and re-place every cleared job, largest GPU demand first, on the node of least free milli-GPU that holds it
    (ties: lowest index; its lowest-numbered fitting GPUs). The first node where every cleared job finds a place
    gives the plan (the cleared jobs migrate, transparently, in no time). A shape's search is skipped until the
    cluster's free milli-GPU exceed what they were when it last failed, and when the free capacity of its
    candidate nodes, pooled, cannot hold it. A gang is neither cleared for nor moved: a node holding a part of one is
    not cleared. Every placement goes through
    :meth:`ClusterState.place` (the one rule). Each plan is a feasible migration, so a run under it is a schedule
    with migration, however little it re-packs: its wait stays a ceiling (c).
    """

    name: str = "repack"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    scan: int = 4
    nodes: int = 2
    migrate_s: float = 0.0
    failed: dict = field(default_factory=dict)

    def plan(self, view: View) -> Plan | None:
        state = view.state
        if state.mig is not None:                       # GPU ids are slices there: not this rule's
            return None
        free = int(state.gpu_left.sum())
        tasks = state.tasks
        for j in view.pending()[:self.scan]:
            if tasks.workers[j] > 1:                     # a gang: placed in parts, not by this rule
                continue
            shape = (tasks.cpu_milli[j], tasks.memory_mib[j], tasks.num_gpu[j], tasks.gpu_milli[j], tasks.gpu_spec[j])
            if self.failed.get(shape, -1) >= free:
                continue
            plan = self._clear_one(state, j)
            if plan is not None:
                return plan
            self.failed[shape] = free
        return None

    def _clear_one(self, state: ClusterState, j: int) -> Plan | None:
        task, cluster = state.tasks[j], state.cluster
        ok = (cluster.cpu_milli >= task.cpu_milli) & (cluster.memory_mib >= task.memory_mib)
        if task.num_gpu:
            ok &= state.spec_mask(task.gpu_spec) & (cluster.gpu >= task.num_gpu)
        if (state.cpu_left[ok].sum() < task.cpu_milli or state.mem_left[ok].sum() < task.memory_mib
                or state.gpu_left[ok].sum() < task.num_gpu * task.gpu_milli):
            return None
        cand = np.flatnonzero(ok)
        used = cluster.gpu[cand] * GPU_MILLI - state.gpu_left[cand].sum(axis=1)
        held = _nodes_of_multipart_jobs(state)
        for n in cand[np.lexsort((cand, used))][:self.nodes].tolist():
            if n in held:
                continue
            on = np.flatnonzero(state.node_of == n)
            trial = state.copy()
            trial.remove_many(on)
            admit = Move(j, n, tuple(int(g) for g in fitting_gpus(trial.gpu_left[n], task.gpu_milli)[:task.num_gpu]))
            trial.place(j, n, admit.gpus)
            moves = []
            for v in on[np.argsort(-state.tasks.gpu_demand[on], kind="stable")].tolist():
                tv = state.tasks[v]
                where = np.flatnonzero(trial.feasible_nodes(tv))
                if not where.size:
                    break
                m = int(where[np.argmin(trial.gpu_left[where].sum(axis=1))])
                gpus = tuple(int(g) for g in fitting_gpus(trial.gpu_left[m], tv.gpu_milli)[:tv.num_gpu])
                trial.place(v, m, gpus)
                moves.append(Move(v, m, gpus))
            else:
                return MigratePlan(moves=tuple(moves), admits=(admit,))
        return None


def _nodes_of_multipart_jobs(state: ClusterState) -> set[int]:
    """The nodes holding a part of a placed gang (no other job is in several parts under :class:`FreeRepack`: one
    mechanism a run, and the placement policies place one part)."""
    if not state.tasks.has_gangs:
        return set()
    return {node for v in np.flatnonzero(state.node_of >= 0).tolist() if len(parts := state.parts_of[v]) > 1
            for node, _ in parts}


@dataclass
class MigRepack(MechanismBase):
    """``mig-repack`` (module docstring; :mod:`fgdopt.mig.timeline` describes the rule): evict the fewest tenants of
    one GPU whose re-layout admits a blocked job."""

    name: str = "mig-repack"
    checkpointing: Checkpointing = Checkpointing(interval_s=1800.0)
    fresh: dict = field(default_factory=dict)             # jobs started or evicted by a plan at instant ``fresh_at``
    fresh_at: float = -1.0

    def plan(self, view: View) -> Plan | None:
        state = view.state
        lay = state.mig
        if lay is None:
            return None
        if view.now != self.fresh_at:
            self.fresh, self.fresh_at = {}, view.now
        tasks = state.tasks
        dynamic = np.array([m.layout is None for m in lay.models])[lay.model_index]
        lost = None
        for j in view.pending():
            if tasks.num_gpu[j] != 1 or tasks.gpu_milli[j] >= GPU_MILLI:
                continue
            nodes = np.flatnonzero(dynamic & (state.cpu_left >= tasks.cpu_milli[j])
                                   & (state.mem_left >= tasks.memory_mib[j]))
            if not len(nodes):
                continue
            size = np.array([lay.profile(int(n), int(tasks.gpu_milli[j])).size for n in nodes])
            room = lay.free_slices(state.slices[nodes], nodes) >= size[:, None]     # enough free slices, misaligned
            best = None
            for k, g in zip(*np.nonzero(room), strict=True):
                n = int(nodes[k])
                model = lay.models[lay.model_index[n]]
                profile = model.profile_for(int(tasks.gpu_milli[j]))
                on = [int(i) for i in np.flatnonzero(state.node_of == n) if g in state.gpus_of[i]]
                tenants = [(model.profile_for(int(tasks.gpu_milli[i])), state.starts_of[i][state.gpus_of[i].index(g)])
                           for i in on]
                moved, options = relayouts(model, tenants, profile)
                if moved < 1 or (best is not None and moved > best[0]):
                    continue
                if lost is None:
                    lost = view.lost_if_evicted
                for start, idx in options:
                    victims = tuple(on[i] for i in idx)
                    if any(v in self.fresh for v in victims):
                        continue
                    key = (moved, float(lost[list(victims)].sum()), n, int(g), int(start), victims)
                    if best is None or key < best:
                        best = key
            if best is not None:
                _, _, n, g, start, victims = best
                self.fresh.update(dict.fromkeys((j, *victims)))
                return EvictPlan(j, victims, where=(n, (g,), (start,)))
        return None


def mig_repack(*, checkpoint_s: float = 1800.0, checkpoint_cost_s: float = 0.0, **_) -> MigRepack:
    """The ``mig-repack`` mechanism (the factory :func:`make_mechanism` calls by name), checkpointing every
    ``checkpoint_s`` seconds of progress at ``checkpoint_cost_s`` seconds each."""
    return MigRepack(checkpointing=Checkpointing(checkpoint_s, checkpoint_cost_s))
