"""Elastic jobs on fgdopt's event engine: Pollux's interval planning as a mechanism that sets job speeds.

:func:`simulate_elastic` runs the jobs of :func:`fgdopt.elastic.intervals.run_intervals` on
:func:`fgdopt.timeline.simulate`. Every elastic job is one engine job whose work (``duration_s``) is its progress to
complete (progress units) and whose speed is its goodput, set by :class:`ElasticMechanism`, a mechanism that owns
the starts (as :class:`fgdopt.hetero.rounds.RoundScheduler` does) and wakes the engine:

* at every interval end (60 s) it asks the planner for the allocations, re-allocates the jobs whose allocation
  changed, starts on the engine the jobs submitted since (a job holding no GPUs runs at speed 0), and computes
  each job's stretches of constant speed up to the next interval end (its restart delay at speed 0, then the parts
  of its epochs, each epoch crossed after whole seconds as Pollux rounds them; :meth:`ElasticJob.advance`);
* at every stretch's start it sets the job's speed to the stretch's progress over its length (``Plan.rates``, the
  engine hook), so that the engine's own progress accounting reaches each epoch's progress at the second Pollux
  does, and finishes the job (its finish event) at the second it completes.

The engine thus owns time, arrivals, finishes and the conservation check (``TimelineResult.check``: every finished
job did its work); the mechanism owns the GPUs. What the engine does not carry yet: the GPUs of an elastic job
(several nodes, a count that changes) are counted by the mechanism against the planner's cluster (``nodes``), not
placed in the engine's ``ClusterState`` (its jobs have one fixed shape on one node); the engine's jobs here ask for
nothing and sit on one placeholder node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fgdopt.defrag import Move
from fgdopt.elastic.intervals import GPUS, INTERVAL_S, NODES, plan_interval
from fgdopt.elastic.jobs import RESTART_S, ElasticJob
from fgdopt.elastic.policies import Allocations, Planner
from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline.preemption import Checkpointing, Plan, View

JUMP_S = 1e-6
"""A job that completes by a jump of progress in no time at an interval's start finishes this many seconds later."""


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
    """The engine mechanism of :func:`simulate_elastic` (module docstring)."""

    jobs: list[ElasticJob]
    planner: Planner
    nodes: tuple[int, ...] = (GPUS,) * NODES
    interval_s: float = INTERVAL_S
    restart_s: float = RESTART_S
    name: str = "elastic"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    owns_starts: bool = True
    peak: np.ndarray | None = None
    _held: Allocations = field(default_factory=dict)
    _stretches: dict = field(default_factory=dict)          # job -> its stretches still to start, in time order
    _next: float = 0.0
    _done_at: float = -1.0

    def __post_init__(self) -> None:
        self._next = self.interval_s
        self.peak = np.zeros(len(self.nodes), dtype=np.int64)

    def wake_s(self, view: View) -> float:
        starts = [s[0][0] for s in self._stretches.values() if s and s[0][0] > view.now]
        return min([self._next, *starts])

    def plan(self, view: View) -> Plan | None:
        now = view.now
        if now == self._done_at:
            return None
        admits, rates = [], []
        if now >= self._next:                                      # after an idle stretch: the next interval end
            self._next = math.ceil(now / self.interval_s) * self.interval_s
        if now == self._next:                                      # an interval end: plan
            self._next = now + self.interval_s
            live = [i for i, j in enumerate(self.jobs) if j.submit_s <= now and not j.done]
            if live:
                self._held, used = plan_interval(self.planner, [self.jobs[i] for i in live], self._held, self.nodes,
                                                 now, self.restart_s, self.name)
                np.maximum(self.peak, used, out=self.peak)
            for i in live:
                if view.state.node_of[i] < 0:
                    admits.append(Move(i, 0, ()))
                segments: list = []
                self.jobs[i].advance(now, self.interval_s, segments)
                self._stretches[i] = _merge(segments)
                if not self._stretches[i] or self._stretches[i][0][0] > now:
                    rates.append((i, 0.0))
        for i, stretches in self._stretches.items():               # the stretches starting now
            if stretches and stretches[0][0] == now:
                start, end, gain = stretches.pop(0)
                rates.append((i, gain / (end - start)))
        self._done_at = now
        if not admits and not rates:
            return None
        return Plan(kind="round", admits=tuple(admits), rates=tuple(rates))


def simulate_elastic(jobs: Sequence[ElasticJob], planner: Planner, nodes: Sequence[int] = (GPUS,) * NODES,
                     interval_s: float = INTERVAL_S, restart_s: float = RESTART_S):
    """Run fresh ``jobs`` under ``planner`` on :func:`fgdopt.timeline.simulate` (module docstring).

    Returns
    -------
    (TimelineResult, peak) : the engine's result (its ``finish_s``, ``work_s`` per job; checked) and the most GPUs
    each node held at any plan (the jobs themselves end in their final state).
    """
    from fgdopt.timeline import simulate
    from fgdopt.timeline.jobs import JobSet

    jobs = list(jobs)
    n = len(jobs)
    zero = np.zeros(n, dtype=np.int64)
    tasks = TaskSet(zero, zero, zero, zero, names=tuple(j.name for j in jobs))
    work = JobSet(tasks, [j.submit_s for j in jobs], [j.work for j in jobs])
    mech = ElasticMechanism(jobs, planner, tuple(int(g) for g in nodes), interval_s, restart_s,
                            name=getattr(planner, "name", "elastic"))
    cluster = Cluster(np.array([1]), np.array([1]), np.array([0]), np.array(["elastic"]))
    result = simulate(cluster, work, "best-fit", "fifo", mechanism=mech, frag=False)
    if (mech.peak > np.asarray(mech.nodes)).any() or not all(j.done for j in jobs):
        raise AssertionError("elastic run: a node over capacity or a job not complete")
    return result, mech.peak
