"""Elastic jobs on fgdopt's event engine: Pollux's interval planning as a mechanism that places jobs and sets speeds.

:func:`simulate_elastic` runs the jobs of :func:`fgdopt.elastic.intervals.run_intervals` on
:func:`fgdopt.timeline.simulate`, on Pollux's cluster as a real :class:`~fgdopt.model.Cluster` of the engine
(:func:`pollux_cluster`: ``nodes`` GPUs per node). Every elastic job is one engine job whose work (``duration_s``)
is its progress to complete (progress units), whose shape is one replica (one whole GPU, no CPU or memory: Pollux's
simulator models none) and whose GPU count is chosen by :class:`ElasticMechanism` (an *elastic* job,
:attr:`fgdopt.state.ClusterState.elastic`), a mechanism that owns the starts (as
:class:`fgdopt.timeline.rounds.RoundLoop` does) and wakes the engine:

* at every interval end (60 s) it asks the planner for the allocations (one node id per GPU) and carries them out
  in the engine's ``ClusterState`` as one :class:`~fgdopt.timeline.preemption.RoundPlan`: a job whose
  allocation changed is *moved* (its old GPUs released, then the new count placed on exactly the planner's nodes,
  one :class:`~fgdopt.timeline.preemption.GangMove` part per node, the lowest free GPU ids there), a job that
  loses every GPU is preempted (it waits, not placed, holding nothing), a job given GPUs for the first time or
  again is admitted; the engine releases everything before it places anything, so jobs may swap GPUs within an
  interval. Then it computes each placed job's stretches of constant speed up to the next interval end (its
  restart delay at speed 0, then the parts of its epochs, each epoch crossed after whole seconds as Pollux rounds
  them; :meth:`ElasticJob.advance`);
* at every stretch's start it sets the job's speed to the stretch's progress over its length (``RoundPlan.rates``, the
  engine hook), so that the engine's own progress accounting reaches each epoch's progress at the second Pollux
  does, and finishes the job (its finish event, which releases its GPUs) at the second it completes.

The engine thus owns time, arrivals, finishes, the GPUs (the one feasibility rule) and the conservation check
(``TimelineResult.check``: every finished job did its work); the restart delay is the mechanism's (speed 0), so the
engine's own restart cost is 0 here. The mechanism checks, right before every plan and right after it is carried
out (the state changes only then and at finishes), that the GPUs the ``ClusterState`` holds for every job are, node
by node, its allocation in the last plan, and that a job holding none of them is either not allocated or complete
(:meth:`ElasticMechanism.verify`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fgdopt.elastic.intervals import GPUS, INTERVAL_S, NODES, plan_interval
from fgdopt.elastic.jobs import RESTART_S, ElasticJob
from fgdopt.elastic.policies import Allocations, Planner
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.state import ClusterState
from fgdopt.timeline.jobtable import FINISHED
from fgdopt.timeline.preemption import Checkpointing, GangMove, RoundPlan, View

JUMP_S = 1e-6
"""A job that completes by a jump of progress in no time at an interval's start finishes this many seconds later."""
NODE_CPU_MILLI, NODE_MEMORY_MIB, NODE_MODEL = 48_000, 196_608, "T4"
"""A node of Pollux's testbed (AWS g4dn.12xlarge: 48 vCPUs, 192 GiB, 4 NVIDIA T4); its jobs ask for no CPU or
memory, so these only fill the engine's cluster rows."""


def pollux_cluster(nodes: Sequence[int] = (GPUS,) * NODES) -> Cluster:
    """The engine's cluster of :func:`simulate_elastic`: one node of ``nodes[k]`` GPUs per entry (Pollux's: 16 x 4)."""
    n = len(nodes)
    return Cluster(np.full(n, NODE_CPU_MILLI), np.full(n, NODE_MEMORY_MIB), np.asarray(nodes, dtype=np.int64),
                   np.full(n, NODE_MODEL), tuple(f"pollux-{k}" for k in range(n)))


def _no_restart(num_gpu: int) -> float:
    """The engine's restart cost of :func:`simulate_elastic`: none (the mechanism holds a restarting job at speed 0)."""
    return 0.0


def _merge(segments: list) -> list:
    """Stretches of positive length; a jump of progress in no time (an epoch crossed after round(...) = 0 s) joins
    the stretch before it, else the one after, else (the interval's only progress) takes :data:`JUMP_S`."""
    out: list[list] = []
    carry = 0.0
    for start, end, gain in segments:
        if end > start:
            out.append([start, end, gain + carry])
            carry = 0.0
        elif out:
            out[-1][2] += gain
        else:
            carry += gain
    if carry and out:
        out[-1][2] += carry
    elif carry:
        out.append([segments[0][0], segments[0][0] + JUMP_S, carry])
    return [tuple(s) for s in out]


@dataclass
class ElasticMechanism:
    """The engine mechanism of :func:`simulate_elastic` (module docstring). ``elastic`` marks every job elastic;
    ``checks`` counts the calls of :meth:`verify`."""

    jobs: list[ElasticJob]
    planner: Planner
    nodes: tuple[int, ...] = (GPUS,) * NODES
    interval_s: float = INTERVAL_S
    restart_s: float = RESTART_S
    name: str = "elastic"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    owns_starts: bool = True
    elastic: np.ndarray | None = None
    peak: np.ndarray | None = None
    checks: int = 0
    _held: Allocations = field(default_factory=dict)
    _index: dict = field(default_factory=dict)               # job name -> its engine index
    _stretches: dict = field(default_factory=dict)          # job -> its stretches still to start, in time order
    _next: float = 0.0
    _done_at: float = -1.0
    _planned_at: float = -1.0                                # the instant of the last interval's plan

    def __post_init__(self) -> None:
        self._next = self.interval_s
        self.peak = np.zeros(len(self.nodes), dtype=np.int64)
        self.elastic = np.ones(len(self.jobs), dtype=bool)
        self._index = {j.name: i for i, j in enumerate(self.jobs)}
        if len(self._index) != len(self.jobs):
            raise ValueError("elastic jobs: two jobs share a name")

    def wake_s(self, view: View) -> float:
        starts = [s[0][0] for s in self._stretches.values() if s and s[0][0] > view.now]
        return min([self._next, *starts])

    def verify(self, state: ClusterState, now: float) -> None:
        """Raise ``AssertionError`` unless the GPUs ``state`` holds for every job are, node by node, its allocation
        in the last plan, and every job allocated GPUs that holds none has completed by ``now`` (s)."""
        self.checks += 1
        placed = np.flatnonzero(state.node_of >= 0).tolist()
        for i in placed:
            have = {node: len(gpus) for node, gpus in state.parts(i)}
            if have != Counter(self._held.get(self.jobs[i].name, ())):
                raise AssertionError(f"elastic job {self.jobs[i].name} holds {have} (node: GPUs) at {now} s, its "
                                     f"allocation is {dict(Counter(self._held.get(self.jobs[i].name, ())))}")
        placed = set(placed)
        for name, alloc in self._held.items():
            job = self.jobs[self._index[name]]
            if alloc and self._index[name] not in placed and not (job.done and job.completion_s <= now + JUMP_S):
                raise AssertionError(f"elastic job {name} is allocated {len(alloc)} GPUs at {now} s but holds none")

    def _carry_out(self, view: View, live: list[int], before: Allocations) -> tuple[list, list, list]:
        """The moves, preemptions and admits that turn the jobs' GPUs in ``view.state`` (the allocations
        ``before``) into the allocations of the plan just made (module docstring)."""
        state = view.state
        changed = [i for i in live if self._held.get(self.jobs[i].name) != before.get(self.jobs[i].name)]
        leaving = [i for i in changed if state.node_of[i] >= 0]
        free = {n: np.flatnonzero(state.gpu_left[n] == GPU_MILLI).tolist() for n in range(len(self.nodes))}
        for i in leaving:                                        # released before anything is placed
            for node, gpus in state.parts(i):
                free[node].extend(gpus)
        for gpus in free.values():
            gpus.sort()
        moves, victims, admits = [], [], []
        for i in changed:
            count = Counter(self._held.get(self.jobs[i].name, ()))
            if not count:
                if state.node_of[i] >= 0:
                    victims.append(i)
                continue
            parts = []
            for node in sorted(count):
                parts.append((node, tuple(free[node][:count[node]])))
                del free[node][:count[node]]
            (moves if state.node_of[i] >= 0 else admits).append(GangMove(i, parts[0][0], parts[0][1], tuple(parts)))
        return moves, victims, admits

    def plan(self, view: View) -> RoundPlan | None:
        now = view.now
        if now == self._done_at:
            if now == self._planned_at:                             # right after this interval's plan
                self.verify(view.state, now)
            return None
        moves = victims = admits = ()
        rates = []
        if now >= self._next:                                      # after an idle stretch: the next interval end
            self._next = math.ceil(now / self.interval_s) * self.interval_s
        if now == self._next:                                      # an interval end: plan
            self.verify(view.state, now)
            self._next, self._planned_at = now + self.interval_s, now
            live = [i for i, j in enumerate(self.jobs) if j.submit_s <= now and not j.done]
            if live:
                before = self._held
                self._held, used = plan_interval(self.planner, [self.jobs[i] for i in live], self._held, self.nodes,
                                                 now, self.restart_s, self.name)
                np.maximum(self.peak, used, out=self.peak)
                moves, victims, admits = self._carry_out(view, live, before)
            for i in live:
                segments: list = []
                self.jobs[i].advance(now, self.interval_s, segments)
                self._stretches[i] = _merge(segments)
                if self._held.get(self.jobs[i].name) and (not self._stretches[i]
                                                          or self._stretches[i][0][0] > now):
                    rates.append((i, 0.0))
        for i, stretches in self._stretches.items():               # the stretches starting now
            if stretches and stretches[0][0] == now:
                start, end, gain = stretches.pop(0)
                rates.append((i, gain / (end - start)))
        self._done_at = now
        if not (moves or victims or admits or rates):
            return None
        return RoundPlan(moves=tuple(moves), victims=tuple(victims), admits=tuple(admits),
                    rates=tuple(rates))


def simulate_elastic(jobs: Sequence[ElasticJob], planner: Planner, nodes: Sequence[int] = (GPUS,) * NODES,
                     interval_s: float = INTERVAL_S, restart_s: float = RESTART_S):
    """Run fresh ``jobs`` under ``planner`` on :func:`fgdopt.timeline.simulate`, on :func:`pollux_cluster` of
    ``nodes`` (module docstring).

    Returns
    -------
    (TimelineResult, peak) : the engine's result (its ``finish_s``, ``work_s`` per job; checked) and the most GPUs
    each node held at any plan (the jobs themselves end in their final state).
    """
    from fgdopt.timeline import simulate
    from fgdopt.timeline.jobs import JobSet

    jobs = list(jobs)
    n = len(jobs)
    tasks = TaskSet(np.zeros(n), np.zeros(n), np.ones(n), np.full(n, GPU_MILLI), names=tuple(j.name for j in jobs))
    work = JobSet(tasks, [j.submit_s for j in jobs], [j.work for j in jobs])
    mech = ElasticMechanism(jobs, planner, tuple(int(g) for g in nodes), interval_s, restart_s,
                            name=getattr(planner, "name", "elastic"))
    result = simulate(pollux_cluster(mech.nodes), work, "best-fit", "fifo", mechanism=mech, frag=False,
                      restart_s=_no_restart)
    mech.verify(result.state, math.inf)
    if not all(j.done for j in jobs) or (result.status != FINISHED).any():
        raise AssertionError("elastic run: a job not complete")
    return result, mech.peak
