"""Allocation planners of Pollux's simulator: every interval, each active job's GPUs (a node id per replica).

A planner is called ``planner(now, jobs, current, nodes)`` with the interval's instant (s), the active jobs
(submitted, not complete; :class:`~fgdopt.elastic.jobs.ElasticJob`, in workload order), their current allocations
(``{name: [node, ...]}``, one node id per GPU) and the GPUs of each node; it returns the new allocations (a job left
out holds nothing). It may keep state between calls. As ``petuum/adaptdl`` ``simulator/`` (``c793c708``) has them:

``tiresias`` (``tiresias.py``)
    Two-queue discretized least attained service with the workload's GPU counts: a job's service is the seconds it
    has held ``RUNNING`` status (whole seconds, counted at each call) times its GPU count; it moves from queue 0 to
    the end of queue 1 at 16 GPU-hours (57,600 GPU-s). Queue 0 then queue 1, each in order, run while their GPU
    count fits the GPUs not yet promised (later smaller jobs may pass a larger one); a running job keeps its GPUs,
    the others are pre-empted; a job started takes, GPU block by GPU block, the node with the most free GPUs (ties:
    the lowest node).
``optimus`` (``optimus.py``, Optimus+Oracle)
    One GPU for each job in order while GPUs last, then one GPU at a time to the job of largest marginal gain
    (step time with ``r`` GPUs minus with ``r + 1``, times its remaining iterations; ties: the earliest job), up to
    ``batch size // min local batch`` GPUs (NCF: 1). A job keeps its GPUs when their count is unchanged; the others
    are placed in increasing GPU count as ``tiresias`` places.
``pollux`` (``pollux.py``)
    :class:`fgdopt.elastic.pollux.PolluxPlanner`.

and, not in Pollux's simulator, ``singularity``: :class:`fgdopt.elastic.singularity.Singularity` (jobs shrunk by
time-slicing their replicas, Singularity's elasticity). Every planner by name: :mod:`fgdopt.elastic.planners`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fgdopt.elastic.jobs import Allocations, ElasticJob, packed

Planner = Callable[[float, Sequence[ElasticJob], Allocations, Sequence[int]], Allocations]

TIRESIAS_THRESHOLD = 3600 * 16
"""Tiresias' queue threshold in Pollux's simulator, GPU-seconds."""


def free_gpus(nodes: Sequence[int], held: Allocations) -> dict[int, int]:
    """Free GPUs per node with some free, in node order (the order ties are broken in)."""
    used = [0] * len(nodes)
    for alloc in held.values():
        for n in alloc:
            used[n] += 1
    return {n: nodes[n] - used[n] for n in range(len(nodes)) if nodes[n] > used[n]}


def spread(free: dict[int, int], need: int) -> list[int]:
    """Take ``need`` GPUs from ``free`` (updated), block by block from the node with the most free GPUs (ties: the
    first in ``free``'s order), as Pollux's baselines place."""
    out: list[int] = []
    while len(out) < need:
        node = max(free, key=free.__getitem__)
        take = min(free[node], need - len(out))
        if take <= 0:
            raise ValueError(f"cannot place {need} GPUs: {need - len(out)} more than the cluster has free")
        out.extend([node] * take)
        free[node] -= take
    return out


@dataclass
class Tiresias:
    """``tiresias`` (module docstring)."""

    threshold: float = TIRESIAS_THRESHOLD
    name: str = "tiresias"
    q0: list[str] = field(default_factory=list)
    q1: list[str] = field(default_factory=list)
    running: dict[str, bool] = field(default_factory=dict)
    executed: dict[str, int] = field(default_factory=dict)
    checked: dict[str, int] = field(default_factory=dict)

    def __call__(self, now: float, jobs: Sequence[ElasticJob], current: Allocations,
                 nodes: Sequence[int]) -> Allocations:
        t = int(now)
        by_name = {j.name: j for j in jobs}
        self.q0 = [k for k in self.q0 if k in by_name]
        self.q1 = [k for k in self.q1 if k in by_name]
        self.running = {k: v for k, v in self.running.items() if k in by_name}
        out = {k: v for k, v in current.items() if k in by_name}
        for k in by_name:
            if k not in self.running:
                self.running[k] = False
                self.q0.append(k)
        for k, job in by_name.items():
            if self.running[k]:
                self.executed[k] = self.executed.get(k, 0) + int(t - self.checked.get(k, 0))
                if k in self.q0 and int(self.executed[k] * job.replicas) >= self.threshold:
                    self.q0.remove(k)
                    self.q1.append(k)
            self.checked[k] = t
        left = sum(nodes)
        for k in (*self.q0, *self.q1):
            if by_name[k].replicas <= left:
                self.running[k] = True
                left -= by_name[k].replicas
            else:
                self.running[k] = False
                out.pop(k, None)
        free = free_gpus(nodes, out)
        for k in (*self.q0, *self.q1):
            if self.running[k] and not out.get(k):
                out[k] = spread(free, by_name[k].replicas)
        return out


@dataclass
class Optimus:
    """``optimus`` (module docstring)."""

    name: str = "optimus"

    @staticmethod
    def step_s(job: ElasticJob, replicas: int) -> float:
        """Seconds per optimizer step of ``job`` at its batch size on ``replicas`` GPUs packed 4 to a node."""
        atomic, accum = job.app.fixed_batch(job.batch_size, replicas, one_replica_accum=True)
        step, sync = job.app.step_time(packed(replicas, 4), atomic)
        return step + (step - sync) * accum

    def __call__(self, now: float, jobs: Sequence[ElasticJob], current: Allocations,
                 nodes: Sequence[int]) -> Allocations:
        out = {j.name: current[j.name] for j in jobs if j.name in current}
        remaining, cap = {}, {}
        for job in jobs:
            app, batch = job.app, job.batch_size
            last = app.completion_epoch(batch)
            remaining[job.name] = 1 if last <= job.epoch else (app.iterations(batch, last)
                                                               - app.iterations(batch, job.epoch))
            cap[job.name] = 1 if app.name == "ncf" else batch // app.min_local_bsz
        left = sum(nodes)
        count: dict[str, int] = {}
        gain: dict[str, float] = {}
        by_name = {j.name: j for j in jobs}

        def marginal(k: str) -> float:
            if count[k] + 1 > cap[k] or left < 1:
                return 0.0
            return (self.step_s(by_name[k], count[k]) - self.step_s(by_name[k], count[k] + 1)) * remaining[k]

        for job in jobs:
            k = job.name
            if left < 1:
                count[k], gain[k] = 0, 0.0
                continue
            count[k] = 1
            left -= 1
            gain[k] = marginal(k)
        while left > 0 and gain and max(gain.values()) > 0:
            k = max(gain, key=gain.__getitem__)
            count[k] += 1
            gain[k] = marginal(k)
            left -= 1
        out = {k: v for k, v in out.items() if len(v) == count[k]}
        free = free_gpus(nodes, out)
        for k in sorted(count, key=count.__getitem__):
            if count[k] > 0 and not out.get(k):
                out[k] = spread(free, count[k])
        return out
