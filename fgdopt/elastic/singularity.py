"""Singularity's elasticity (Shukla et al., *Singularity: Planet-Scale, Preemptive and Elastic Scheduling of AI
Workloads*, Microsoft, arXiv 2202.07848, 2022) on Pollux's jobs: shrinking by time-slicing replicas.

**The job** (:class:`SlicedJob`). Singularity resizes a data-parallel job without changing its *world size* (its
number of replicas, ``W``) or its hyper-parameters: scaling down "simply changes the number of devices the workers
are mapped to" and *replica splicing* time-slices several replicas on one device, each with the whole device memory
(the paper's sections on elasticity and replica splicing). Here a job keeps the workload's GPU count as its world
size and the workload's batch size (as ``tiresias`` runs it, :func:`fgdopt.elastic.planners.make_jobs`). On all its
``W`` GPUs it runs at Pollux's goodput on its placement (:meth:`~fgdopt.elastic.jobs.ElasticJob.goodput`, the model of
``tiresias``'s runs). On ``G < W`` GPUs each GPU runs ``ceil(W / G)`` replicas one after another and a synchronous
step waits for the most loaded one, so it runs at ``(1 - overhead) / ceil(W / G)`` of its goodput on ``W`` GPUs packed
4 to a node (its full-size speed; ``G / W`` of it when ``G`` divides ``W``, the only sizes :class:`Singularity`
gives). ``overhead`` is the splicing overhead, :data:`SPLICE_OVERHEAD` (3%): the paper's abstract claims
"negligible impact on the steady-state performance", and its evaluation is summarised (emergentmind.com's summary of
arXiv 2202.07848) as overheads below 3%; the top of that range is used, the figure least favourable to Singularity
(its own table was not at hand to cite).
Its training progress, epochs and work are Pollux's (:mod:`fgdopt.elastic.jobs`); every change of its allocation
costs the loop's restart delay (Pollux's 30 s, as for every policy), the resize's checkpoint and restore.

**The scheduler** (:class:`Singularity`, a planner of :mod:`fgdopt.elastic.policies`). Singularity shrinks jobs of
lower priority (its SLA tiers) to make room for others, instead of preempting them, and grows jobs back when
capacity frees (the paper's scheduler sections). Pollux's workloads have no tiers; the priority here is
``tiresias``'s, two-queue discretized least attained service, so that the comparison with ``tiresias`` isolates
elasticity: queue 0 (in submission order) before queue 1, a job moving to the end of queue 1 once it has held
:data:`~fgdopt.elastic.policies.TIRESIAS_THRESHOLD` GPU-seconds (its ``attained_gpu_s``, restart delays included;
``tiresias`` counts its running seconds times its GPU count). Every interval (:func:`sizes`):

1. *whole jobs*: in priority order, each job gets its world size while it fits in the GPUs left (a later, smaller
   job may pass a larger one), as ``tiresias`` decides;
2. *sliced jobs*: in priority order, each job left out gets the largest divisor of its world size that fits in the
   GPUs still left (1 GPU: all its replicas spliced on one), while any are left; the others wait, holding nothing.

So in the same state the jobs ``tiresias`` would run get their world size here too, and the GPUs it would leave
idle run the jobs it would make wait (or preempt), time-sliced: a job of low priority is shrunk, not stopped, when
jobs of higher priority take its GPUs, and grows back to its world size when they free. The whole jobs are placed
first, as if no job were sliced: one whose GPU count is unchanged keeps its GPUs, the others are placed in priority
order as ``tiresias`` places (:func:`~fgdopt.elastic.policies.spread`). The sliced jobs take the GPUs left: one keeps
its GPUs if its count is unchanged and they are still free, the others are placed the same way after them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from fgdopt.elastic.jobs import GPUS, ElasticJob, packed
from fgdopt.elastic.policies import TIRESIAS_THRESHOLD, Allocations, free_gpus, spread

SPLICE_OVERHEAD = 0.03
"""Fraction of a time-sliced job's speed lost to replica splicing (module docstring)."""


@dataclass(eq=False)
class SlicedJob(ElasticJob):
    """A job of fixed world size ``replicas`` and fixed ``batch_size`` that runs on fewer GPUs by time-slicing its
    replicas (module docstring); ``overhead`` is the fraction of speed a sliced job loses, ``per_node`` the GPUs of a
    node of its full-size placement."""

    overhead: float = SPLICE_OVERHEAD
    per_node: int = GPUS

    def __post_init__(self) -> None:
        if self.replicas is None or self.replicas < 1 or self.batch_size is None:
            raise ValueError(f"sliced job {self.name}: needs a world size >= 1 and a batch size")
        if not 0 <= self.overhead < 1:
            raise ValueError(f"sliced job {self.name}: splicing overhead {self.overhead} outside [0, 1)")

    def rebatch(self) -> None:
        """The workload's batch size on the job's world size, whatever GPUs it holds."""
        self.atomic_bsz, self.accum = self.app.fixed_batch(self.batch_size, self.replicas)

    def goodput(self, parts: tuple[int, ...] | None = None) -> float:
        """Progress units per second on the GPUs held (module docstring); ``parts`` is ignored."""
        gpus = sum(self.placement)
        if gpus == self.replicas:
            return super().goodput()
        if gpus > self.replicas:
            raise ValueError(f"sliced job {self.name}: {gpus} GPUs for a world size of {self.replicas}")
        full = super().goodput(packed(self.replicas, self.per_node))
        return full * (1 - self.overhead) / math.ceil(self.replicas / gpus)


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` >= 1, increasing."""
    return [d for d in range(1, n + 1) if n % d == 0]


def sizes(worlds: Sequence[int], gpus: int) -> list[int]:
    """GPUs of each job on ``gpus`` GPUs, the jobs given in priority order by world size: whole jobs, then sliced
    ones (module docstring). ``0`` for a job that waits."""
    count = [0] * len(worlds)
    left = gpus
    for k, world in enumerate(worlds):
        if world <= left:
            count[k], left = world, left - world
    for k, world in enumerate(worlds):
        if not count[k] and left:
            count[k] = max(d for d in divisors(world) if d <= left)
            left -= count[k]
    return count


@dataclass
class Singularity:
    """The planner ``singularity`` (module docstring); ``threshold`` in GPU-seconds."""

    threshold: float = TIRESIAS_THRESHOLD
    name: str = "singularity"
    q0: list[str] = field(default_factory=list)
    q1: list[str] = field(default_factory=list)

    def __call__(self, now: float, jobs: Sequence[ElasticJob], current: Allocations,
                 nodes: Sequence[int]) -> Allocations:
        by_name = {j.name: j for j in jobs}
        self.q0 = [k for k in self.q0 if k in by_name]
        self.q1 = [k for k in self.q1 if k in by_name]
        queued = {*self.q0, *self.q1}
        self.q0 += [k for k in by_name if k not in queued]
        for k in [k for k in self.q0 if by_name[k].attained_gpu_s >= self.threshold]:
            self.q0.remove(k)
            self.q1.append(k)
        order = [*self.q0, *self.q1]
        count = dict(zip(order, sizes([by_name[k].replicas for k in order], sum(nodes)), strict=True))
        whole = [k for k in order if count[k] == by_name[k].replicas]
        sliced = [k for k in order if 0 < count[k] < by_name[k].replicas]
        out = {k: current[k] for k in whole if len(current.get(k, ())) == count[k]}
        free = free_gpus(nodes, out)
        for k in whole:
            if k not in out:
                out[k] = spread(free, count[k])
        for k in sliced:                               # on the GPUs the whole jobs leave
            held = Counter(current.get(k, ()))
            if held.total() == count[k] and all(free.get(n, 0) >= g for n, g in held.items()):
                out[k] = current[k]
                for n, g in held.items():
                    free[n] -= g
        for k in sliced:
            if k not in out:
                out[k] = spread(free, count[k])
        return out
