"""CPU-aware allocation on the time engine: a GPU job's speed depends on the CPU cores it gets (Synergy, OSDI'22).

A job keeps, as everywhere in fgdopt, the CPU and memory its task *requests*: that is what the one feasibility rule
(:meth:`fgdopt.state.ClusterState.place`) reserves, what the policies see and what the fragmentation evaluator
(:mod:`fgdopt.frag`) measures. What a node's CPU cores that no job requested (its leftover, ``cpu_left``) do is the
question here: as Kubernetes lets a pod burst above its CPU request into idle cores, :class:`CpuAware` *lends* each
node's leftover cores to the GPU jobs running on it, by one of three rules (:data:`RULES`), and re-rates the jobs of
every node whose content changed, at the instant it changed (no restart: a CPU share changes in place):

``request``
    nothing is lent: every job runs on the cores it requested (the baseline; speed 1 by construction).
``proportional``
    GPU-proportional (Synergy's ``+fair``): a job may use up to its GPU share of the node's cores, ``g x C / G``
    (``g`` its GPUs, a share of one counted as such; ``C``, ``G`` the node's cores and GPUs); when the leftover is
    short, each job gets the same fraction of what it asks above its request.
``synergy``
    profile-guided (Synergy-style): a job may use up to the cores its profile says it benefits from
    (:attr:`fgdopt.synergy.profiles.Profile.cpus` per GPU); the leftover goes one core at a time to the job whose
    speed gains most from it (ties: lowest job index), so a short leftover goes where it buys most.

The speed model (:class:`CpuProfiles`): every GPU job is one of Synergy's models (:func:`openb_cpu_profiles` draws
them uniformly, seeded, as the interference study draws Gavel's types); its speed on ``c`` cores is its profile's
normalised throughput at ``c / g`` cores per GPU (:meth:`~fgdopt.synergy.profiles.Profile.normalized_rate`, a step
function over Synergy's levels 1, 2, 3, 4, 5, 6, 9, 12, 24), read at Synergy's proportional memory share (62.5 GB
per GPU: memory is not modelled), over that throughput at its requested cores. A job's openb duration is its work
at its request, so ``request`` reproduces the run without the mechanism, and lending only speeds jobs up. Cores per
GPU below Synergy's lowest level (1) are read at that level (an assumption: openb pods often ask less). CPU-only
jobs (no GPU) are not Synergy jobs: speed 1, nothing lent.

The mechanism is asked at every instant (``every_instant``) and re-rates the jobs of the nodes whose state changed
since it last looked (``RoundPlan.rates``, transparent: the progress made at the old speed is kept,
:meth:`fgdopt.timeline.jobtable.JobTable.rerate`); ``lent_core_s`` integrates the cores lent over time.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from fgdopt.model import GPU_MILLI, Cluster
from fgdopt.synergy.profiles import CPU_LEVELS, ProfileTable
from fgdopt.timeline.preemption import Checkpointing, MechanismBase, RoundPlan, View

RULES = ("request", "proportional", "synergy")
"""How a node's leftover cores are lent (module docstring)."""
MEM_GB_PER_GPU = 62.5
"""Memory per GPU at which the profiles are read (Synergy's proportional share of 500 GB over 8 GPUs)."""


@dataclass(frozen=True, eq=False)
class CpuProfiles:
    """Every job's CPU-speed curve: its model (an index into ``models``, -1 for a CPU-only job).

    Attributes
    ----------
    job_model : int64 (n,), the model of each job (-1: not CPU-sensitive, speed 1).
    models : the model names (Synergy's, e.g. ``res18``).
    rate : float64 (M, 9), normalised throughput of each model at ``CPU_LEVELS`` cores per GPU.
    ideal : float64 (M,), cores per GPU at which each model reaches its best throughput.

    Examples
    --------
    >>> p = CpuProfiles([0], ("toy",), [[0.5, 1, 1, 1, 1, 1, 2, 2, 2]], [9.0])
    >>> p.speed(0, cores=9.0, gpus=1.0, request=3.0), p.speed(0, cores=4.0, gpus=2.0, request=2.0)
    (2.0, 2.0)
    """

    job_model: np.ndarray
    models: tuple[str, ...]
    rate: np.ndarray
    ideal: np.ndarray

    def __post_init__(self) -> None:
        model = np.array(self.job_model, dtype=np.int64)
        rate = np.array(self.rate, dtype=np.float64)
        ideal = np.array(self.ideal, dtype=np.float64)
        if rate.ndim != 2 or rate.shape != (len(self.models), len(CPU_LEVELS)) or ideal.shape != (len(self.models),):
            raise ValueError(f"rate must be ({len(self.models)}, {len(CPU_LEVELS)}) and ideal ({len(self.models)},); "
                             f"got {rate.shape} and {ideal.shape}")
        if not (np.isfinite(rate) & (rate > 0)).all():
            raise ValueError("profile rates must be finite and > 0")
        if len(model) and (model.min() < -1 or model.max() >= len(self.models)):
            raise ValueError(f"job models must be -1 or in 0..{len(self.models) - 1}")
        for name, arr in (("job_model", model), ("rate", rate), ("ideal", ideal)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @classmethod
    def from_table(cls, table: ProfileTable, job_model: np.ndarray, models: tuple[str, ...]) -> CpuProfiles:
        """The curves of ``models`` from Synergy's profiles (read at :data:`MEM_GB_PER_GPU`)."""
        rate = [[table[m].normalized_rate(c, MEM_GB_PER_GPU) for c in CPU_LEVELS] for m in models]
        return cls(job_model, tuple(models), rate, [table[m].cpus for m in models])

    def curve(self, model: int, cores_per_gpu: float) -> float:
        """Normalised throughput of ``model`` at ``cores_per_gpu`` (step function, at least the lowest level)."""
        i = int(np.searchsorted(CPU_LEVELS, max(cores_per_gpu, CPU_LEVELS[0]) + 1e-9, side="right")) - 1
        return float(self.rate[model, i])

    def speed(self, job: int, cores: float, gpus: float, request: float) -> float:
        """Speed of ``job`` holding ``cores`` CPU cores on ``gpus`` GPUs over its speed on its ``request`` cores."""
        m = int(self.job_model[job])
        if m < 0 or gpus <= 0:
            return 1.0
        return self.curve(m, cores / gpus) / self.curve(m, request / gpus)


def openb_cpu_profiles(tasks, table: ProfileTable, seed: int = 0) -> CpuProfiles:
    """Every GPU job of ``tasks`` (a :class:`~fgdopt.model.TaskSet`) gets one of Synergy's 1-GPU models, uniformly
    at random (``numpy.random.default_rng(seed)``, one draw per job in order, CPU-only jobs included and then set to
    -1, so a job's model does not depend on the others' GPU demand)."""
    models = table.models
    drawn = np.random.default_rng(seed).integers(len(models), size=len(tasks))
    return CpuProfiles.from_table(table, np.where(tasks.gpu_demand > 0, drawn, -1), models)


def lend(rule: str, leftover: float, request: np.ndarray, want: np.ndarray, gain=None) -> np.ndarray:
    """Cores lent to each job of a node, by ``rule`` (module docstring), from ``leftover`` cores.

    Parameters
    ----------
    rule : one of :data:`RULES`.
    leftover : the node's cores no job requested (>= 0).
    request : cores each job requested. want : cores each may use at most (its cap; >= request).
    gain : ``synergy`` only: ``gain(k, cores)`` the speed of job ``k`` at ``cores``.

    Returns
    -------
    float64 (k,), cores lent to each job; their sum is at most ``leftover``.

    Examples
    --------
    >>> lend("proportional", 3.0, np.array([1.0, 1.0]), np.array([4.0, 1.0])).tolist()
    [3.0, 0.0]
    >>> lend("proportional", 3.0, np.array([1.0, 1.0]), np.array([4.0, 4.0])).tolist()
    [1.5, 1.5]
    """
    extra = np.maximum(np.asarray(want, dtype=np.float64) - request, 0.0)
    if rule == "request" or leftover <= 0 or not extra.any():
        return np.zeros(len(extra))
    if rule == "proportional":
        total = float(extra.sum())
        return extra if total <= leftover else extra * (leftover / total)
    if rule != "synergy":
        raise ValueError(f"unknown CPU rule {rule!r}; choose one of {', '.join(RULES)}")
    out = np.zeros(len(extra))
    heap = []
    for k in range(len(extra)):
        if extra[k] >= 1:
            heap.append((-(gain(k, request[k] + 1) - gain(k, request[k])), k))
    heapq.heapify(heap)
    left = math.floor(leftover + 1e-9)
    while heap and left > 0:
        neg, k = heapq.heappop(heap)
        out[k] += 1
        left -= 1
        if out[k] + 1 <= extra[k] + 1e-9:
            now = request[k] + out[k]
            heapq.heappush(heap, (-(gain(k, now + 1) - gain(k, now)), k))
    return out


@dataclass
class CpuAware(MechanismBase):
    """The engine mechanism (module docstring): lends each node's leftover cores to its GPU jobs by ``rule``.

    Attributes
    ----------
    profiles : every job's CPU-speed curve. rule : one of :data:`RULES`. cluster : the run's cluster.
    lent_core_s : cores lent, integrated over time (core-seconds), updated at every instant.
    cores : float64 (n,), the cores each GPU job holds (its request plus what is lent; after it ends, what it held
        last; 0 before it first ran).
    """

    profiles: CpuProfiles
    rule: str
    cluster: Cluster
    name: str = "cpu-aware"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    every_instant: bool = True
    lent_core_s: float = 0.0
    cores: np.ndarray | None = None
    _seen: np.ndarray | None = None
    _rate: np.ndarray | None = None
    _lent_now: dict = field(default_factory=dict)
    _last: float = 0.0
    _done_at: float = -1.0

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown CPU rule {self.rule!r}; choose one of {', '.join(RULES)}")
        self.name = f"cpu-{self.rule}"
        self._seen = np.full(self.cluster.n_nodes, -1, dtype=np.int64)
        self.cores = np.zeros(len(self.profiles.job_model))
        self._rate = np.ones(len(self.profiles.job_model))          # the engine starts every job at speed 1

    def plan(self, view: View) -> RoundPlan | None:
        now = view.now
        if now == self._done_at:
            return None
        self._done_at = now
        self.lent_core_s += (now - self._last) * sum(self._lent_now.values())
        self._last = now
        changed = np.flatnonzero(view.node_revision != self._seen)
        if not len(changed):
            return None
        self._seen[changed] = view.node_revision[changed]
        state = view.state
        rates = []
        for node in changed.tolist():
            on = np.flatnonzero(state.node_of == node)
            on = on[state.tasks.gpu_demand[on] > 0]
            self._lent_now.pop(node, None)
            if len(on):
                rates.extend(self._node_rates(state.tasks, node, on, float(state.cpu_left[node]) / 1000.0))
        return RoundPlan(rates=tuple(rates)) if rates else None

    def _node_rates(self, tasks, node: int, on: np.ndarray, leftover: float) -> list[tuple[int, float]]:
        """The (job, speed) pairs of the GPU jobs ``on`` the node whose speed changes when its ``leftover`` cores
        are lent."""
        prof = self.profiles
        request = tasks.cpu_milli[on] / 1000.0
        gpus = tasks.gpu_demand[on] / GPU_MILLI
        if self.rule == "proportional":
            share = float(self.cluster.cpu_milli[node]) / 1000.0 / max(int(self.cluster.gpu[node]), 1)
            want = np.maximum(request, gpus * share)
        else:
            model = prof.job_model[on]
            want = np.maximum(request, gpus * np.where(model >= 0, prof.ideal[np.maximum(model, 0)], 0.0))
        lent = lend(self.rule, leftover, request, want,
                    lambda k, c: prof.speed(int(on[k]), c, float(gpus[k]), float(request[k])))
        self._lent_now[node] = float(lent.sum())
        out = []
        for k, j in enumerate(on.tolist()):
            self.cores[j] = request[k] + lent[k]
            rate = prof.speed(j, float(self.cores[j]), float(gpus[k]), float(request[k]))
            if rate != self._rate[j]:
                self._rate[j] = rate
                out.append((j, rate))
        return out
