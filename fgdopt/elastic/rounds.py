"""Elastic jobs on fgdopt's event engine: Pollux's interval planning as a round policy of the one round loop.

:class:`ElasticRounds` decides each round of :class:`fgdopt.timeline.rounds.RoundLoop` (60 s rounds on the grid,
the first at 60 s, as Pollux's ``Cluster.step`` loop plans at the end of every interval); :func:`simulate_elastic`
runs it on :func:`fgdopt.timeline.simulate`, on Pollux's cluster as a real :class:`~fgdopt.model.Cluster` of the
engine (:func:`pollux_cluster`: ``nodes`` GPUs per node). Every elastic job is one engine job whose work
(``duration_s``) is its progress to complete (progress units), whose shape is one replica (one whole GPU, no CPU or
memory: Pollux's simulator models none) and whose GPU count the round loop sets (an *elastic* job,
:attr:`fgdopt.state.ClusterState.elastic`):

* at every round (an interval's end) the planner (:mod:`fgdopt.elastic.planners`) is asked for the allocations of
  the jobs then active (submitted, not complete; one node id per GPU), checked (:func:`check_plan`); each job whose
  allocation changed is re-allocated (its restart delay, :meth:`~fgdopt.elastic.jobs.ElasticJob.reallocate`). The
  decision is each job's GPU count per node (:class:`~fgdopt.timeline.rounds.Decision` ``parts``): the loop keeps a
  job holding exactly those counts where it is, moves a running job given other counts, preempts one given none
  (it waits, not placed, holding nothing) and admits the others, on the lowest free GPU ids of their nodes, all in
  one ``round`` plan that releases everything before it places anything (jobs may swap GPUs within an interval);
* then each placed job's stretches of constant speed up to the next round are computed (its restart delay at speed
  0, then the parts of its epochs, each epoch crossed after whole seconds as Pollux rounds them;
  :meth:`~fgdopt.elastic.jobs.ElasticJob.advance`), and set through the engine's rate hook: the first with the
  round's plan, the others at their starts (:attr:`fgdopt.timeline.rounds.Pace.later`), each at the stretch's
  progress over its length, so that the engine's own progress accounting reaches each epoch's progress at the
  second Pollux does and finishes the job (its finish event, which releases its GPUs) at the second it completes.

The engine thus owns time, arrivals, finishes, the GPUs (the one feasibility rule) and the conservation check
(``TimelineResult.check``: every finished job did its work); the restart delay is the policy's (speed 0), so the
engine's own restart cost is 0 here. The policy checks, at every round before it decides and after the run (the
state changes only at plans and at finishes), that the GPUs the ``ClusterState`` holds for every job are, node by
node, its allocation in the last plan, and that a job holding none of them is either not allocated or complete
(:meth:`ElasticRounds.verify`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fgdopt.elastic.jobs import GPUS, INTERVAL_S, NODES, RESTART_S, ElasticJob, placement_of
from fgdopt.elastic.policies import Allocations, Planner
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.state import ClusterState
from fgdopt.timeline.engine import simulate
from fgdopt.timeline.jobs import JobSet
from fgdopt.timeline.jobtable import FINISHED
from fgdopt.timeline.rounds import Decision, Pace, Placed, RoundLoop, RoundView

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


def check_plan(plan: Allocations, names: set[str], nodes: Sequence[int], now: float, name: str) -> np.ndarray:
    """GPUs used per node by ``plan``; ``ValueError`` (one line) if it allocates to a job not in ``names``, to a
    node that does not exist, or more GPUs than a node has."""
    used = np.zeros(len(nodes), dtype=np.int64)
    for k, alloc in plan.items():
        if k not in names:
            raise ValueError(f"{name}: allocated GPUs at {now} s to {k!r}, not an active job")
        if alloc and (min(alloc) < 0 or max(alloc) >= len(nodes)):
            raise ValueError(f"{name}: job {k} allocated to a node outside 0..{len(nodes) - 1} at {now} s")
        np.add.at(used, alloc, 1)
    if (used > np.asarray(nodes)).any():
        bad = int(np.flatnonzero(used > np.asarray(nodes))[0])
        raise ValueError(f"{name}: node {bad} given {used[bad]} GPUs of {nodes[bad]} at {now} s")
    return used


def plan_interval(planner: Planner, live: list[ElasticJob], held: Allocations, nodes: Sequence[int], now: float,
                  restart_s: float, name: str) -> tuple[Allocations, np.ndarray]:
    """One plan at an interval's end: ``planner``'s allocations of the ``live`` jobs (their ``held`` ones passed
    in), checked (:func:`check_plan`); every job whose allocation changed is re-allocated (its restart delay).
    Returns (the plan, GPUs used per node)."""
    names = {j.name for j in live}
    held = {k: v for k, v in held.items() if k in names}
    plan = planner(now, live, held, nodes)
    used = check_plan(plan, names, nodes, now, name)
    for job in live:
        if plan.get(job.name) != held.get(job.name):
            job.reallocate(placement_of(plan.get(job.name, [])), restart_s)
    return plan, used


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
class ElasticRounds:
    """The round policy of :func:`simulate_elastic` (module docstring): ``planner``'s allocations of ``jobs`` (in
    engine job order) on nodes of ``nodes`` GPUs, each re-allocation costing ``restart_s`` seconds.

    After a run, ``peak`` is the most GPUs each node held at any plan and ``checks`` counts the calls of
    :meth:`verify`.
    """

    jobs: list[ElasticJob]
    planner: Planner
    nodes: tuple[int, ...] = (GPUS,) * NODES
    restart_s: float = RESTART_S
    name: str = "elastic"
    gpu_types: tuple[str, ...] = (NODE_MODEL,)
    peak: np.ndarray | None = None
    checks: int = 0
    _held: Allocations = field(default_factory=dict)         # the last plan: job name -> one node id per GPU
    _index: dict = field(default_factory=dict)               # job name -> its engine index
    _live: list = field(default_factory=list)                # the jobs active at the last plan (engine indices)

    def __post_init__(self) -> None:
        self.peak = np.zeros(len(self.nodes), dtype=np.int64)
        self._index = {j.name: i for i, j in enumerate(self.jobs)}
        if len(self._index) != len(self.jobs):
            raise ValueError("elastic jobs: two jobs share a name")

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

    def decide(self, view: RoundView) -> Decision:
        """The planner's allocations of the jobs present and not complete, as GPU counts per node (a job complete
        but not yet finished on the engine keeps its GPUs to its finish)."""
        now, state = view.now, view.engine.state
        self.verify(state, now)
        jobs = self.jobs
        self._live = live = [i for i in view.present.tolist() if not jobs[i].done]
        if live:
            self._held, used = plan_interval(self.planner, [jobs[i] for i in live], self._held, self.nodes, now,
                                             self.restart_s, self.name)
            np.maximum(self.peak, used, out=self.peak)
        parts = {i: tuple((node, len(gpus)) for node, gpus in state.parts(i))
                 for i in view.running.tolist() if jobs[i].done}
        for i in live:
            if alloc := self._held.get(jobs[i].name):
                parts[i] = tuple(sorted(Counter(alloc).items()))
        return Decision(parts=parts)

    def pace(self, view: RoundView, placed: Placed) -> Pace:
        """Every active job run over the interval (:meth:`~fgdopt.elastic.jobs.ElasticJob.advance`): the speed of
        its first stretch now (a job holding GPUs has one from now: its restart delay, else its progress), the
        others at their starts."""
        now = view.now
        rates, later = [], []
        for i in self._live:
            segments: list = []
            self.jobs[i].advance(now, view.round_s, segments)
            for start, end, gain in _merge(segments):
                if start == now:
                    rates.append((i, gain / (end - start)))
                else:
                    later.append((start, i, gain / (end - start)))
        return Pace(now + view.round_s, tuple(rates), tuple(later))


def _no_restart(num_gpu: int) -> float:
    """The engine's restart cost of :func:`simulate_elastic`: none (the policy holds a restarting job at speed 0)."""
    return 0.0


def elastic_loop(jobs: Sequence[ElasticJob], planner: Planner, nodes: Sequence[int] = (GPUS,) * NODES,
                 interval_s: float = INTERVAL_S, restart_s: float = RESTART_S) -> tuple[RoundLoop, JobSet]:
    """The round loop of :func:`simulate_elastic` (its policy an :class:`ElasticRounds` of ``jobs`` under
    ``planner``, rounds every ``interval_s`` seconds from ``interval_s`` on) and the engine's jobs (one replica
    each, ``duration_s`` the job's work in progress units)."""
    jobs = list(jobs)
    n = len(jobs)
    tasks = TaskSet(np.zeros(n), np.zeros(n), np.ones(n), np.full(n, GPU_MILLI), names=tuple(j.name for j in jobs))
    work = JobSet(tasks, [j.submit_s for j in jobs], [j.work for j in jobs])
    policy = ElasticRounds(jobs, planner, tuple(int(g) for g in nodes), restart_s,
                           name=getattr(planner, "name", "elastic"))
    return RoundLoop(policy, round_s=interval_s, grid=True, first_s=interval_s, elastic=np.ones(n, dtype=bool)), work


def simulate_elastic(jobs: Sequence[ElasticJob], planner: Planner, nodes: Sequence[int] = (GPUS,) * NODES,
                     interval_s: float = INTERVAL_S, restart_s: float = RESTART_S):
    """Run fresh ``jobs`` under ``planner`` on :func:`fgdopt.timeline.simulate`, on :func:`pollux_cluster` of
    ``nodes``, with :func:`elastic_loop` (module docstring).

    Returns
    -------
    (TimelineResult, peak) : the engine's result (its ``finish_s``, ``work_s`` per job; checked) and the most GPUs
    each node held at any plan (the jobs themselves end in their final state).
    """
    loop, work = elastic_loop(jobs, planner, nodes, interval_s, restart_s)
    policy = loop.policy
    result = simulate(pollux_cluster(policy.nodes), work, "best-fit", "fifo", mechanism=loop, frag=False,
                      restart_s=_no_restart)
    policy.verify(result.state, math.inf)
    if not all(j.done for j in policy.jobs) or (result.status != FINISHED).any():
        raise AssertionError("elastic run: a job not complete")
    return result, policy.peak
