"""The placement step of the time engine: the policy's choice, the one feasibility rule, runs started and ended.

:class:`Placer` owns the run's :class:`~fgdopt.state.ClusterState` (every placement and removal goes through
:meth:`~fgdopt.state.ClusterState.place` / :meth:`~fgdopt.state.ClusterState.remove`, the one feasibility rule), the
policy call, the GPU tenants of co-located jobs and their re-rating (:mod:`fgdopt.interference`), the allocation and
running counters, and the nodes touched and freed in the current instant. Starting, ending, evicting and re-rating a
job's run are its methods: each updates the state, the job's row of the :class:`~fgdopt.timeline.jobtable.JobTable`
and its event on the :class:`~fgdopt.timeline.clock.Clock` together.

A *gang* job (``workers > 1``) is asked of the policy part by part (:func:`fgdopt.policies.gang.choose_parts`) and
started with all its parts at once (:meth:`~fgdopt.state.ClusterState.place_parts`); it leaves with all of them
(:meth:`~fgdopt.state.ClusterState.remove`). Whose parts span more than one node runs at ``1 / gang_slowdown`` of
its speed (its run time multiplied by ``gang_slowdown``).

With per-GPU speed factors (``gpu_speed``, a mechanism's, :mod:`fgdopt.timeline.failures`), a run starts at its job's
speed times the least factor among its GPUs (a gang's: among all its parts' GPUs; a CPU-only job's: 1), and keeps
that speed until it ends; a *health-aware* policy (``health_aware = True``) is told the factors (``gpu_speed=``).
Resources out of service (:class:`~fgdopt.timeline.preemption.Outage`, a failed node or GPU) are held on the state,
owned by no job (:meth:`~fgdopt.state.ClusterState.hold`), until they are put back (:meth:`Placer.take_out`,
:meth:`Placer.put_back`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fgdopt.defrag import Move
from fgdopt.interference import Interference
from fgdopt.model import GPU_MILLI, Cluster, Task
from fgdopt.policies import Policy, PolicyError
from fgdopt.policies.gang import choose_parts
from fgdopt.state import ClusterState, InfeasiblePlacement
from fgdopt.timeline.clock import Clock
from fgdopt.timeline.jobtable import PENDING, JobTable
from fgdopt.timeline.pending import PendingQueue, Shapes
from fgdopt.timeline.preemption import GangMove, Mechanism, Outage

BULK_MIN = 8
"""The fewest jobs :meth:`Placer.evict_many`, :meth:`Placer.start_many` and :meth:`Placer.rerate_many` carry out in
their vectorized pass; fewer go one by one (the same effect, and cheaper: a round of Gavel's Figure 8 at a low rate
moves one or two jobs, where a pass's numpy calls on arrays of one or two entries cost more than the scalar work)."""


class Placer:
    """Places and removes the run's jobs (module docstring).

    Parameters
    ----------
    state : the run's state. policy : the placement policy; ``job_aware``: called with ``job=j`` too; a policy
    with ``time_aware = True`` (and ``job_aware``) also gets ``now=`` (the clock, seconds) and ``work_s=`` (the
    job's remaining work at speed 1, seconds: its ``duration_s`` unless it ran before); ``label`` names it in
    errors. shapes : the run's shapes (the policy is asked for a job's shape). jobs, clock, queue : the
    run's job table, clock and pending queue (a job starts from it, an evicted one returns to it). interference :
    co-location slowdowns, or None. gang_slowdown : run-time factor (>= 1) of a gang whose parts span several nodes.
    gpu_speed : float64 (nodes, max GPUs), every GPU's speed factor (module docstring), or None (1 everywhere).

    Attributes
    ----------
    alloc, running : allocated milli-GPU and running jobs now. touched, freed : the nodes placed on or removed from,
    and removed from, in the current instant (the engine renews them each instant). tenants : (node, GPU) -> the
    sharing jobs on it (kept with interference only). node_revision : int64 per node, the state's ``revision``
    right after the node's latest placement or removal (what a mechanism's cache compares). out : the resources out
    of service now, :class:`~fgdopt.timeline.preemption.Outage` -> the demand held for it.
    """

    def __init__(self, state: ClusterState, policy: Policy, job_aware: bool, label: str, shapes: Shapes,
                 jobs: JobTable, clock: Clock, queue: PendingQueue, interference: Interference | None,
                 gang_slowdown: float = 1.0, gpu_speed: np.ndarray | None = None):
        self.state, self.policy, self.job_aware, self.label = state, policy, job_aware, label
        self.gangs, self.gang_slowdown = state.tasks.has_gangs, gang_slowdown
        self.time_aware = job_aware and getattr(policy, "time_aware", False)
        self.health_aware = job_aware and getattr(policy, "health_aware", False)
        self.gpu_speed = gpu_speed
        self.out: dict[Outage, Task] = {}
        self.shapes, self.jobs, self.clock, self.queue, self.interference = shapes, jobs, clock, queue, interference
        self.tasks = state.tasks
        self.cluster: Cluster = state.cluster
        self.demand = self.tasks.gpu_demand
        self.tenants: dict[tuple[int, int], set[int]] = {}
        self.alloc = self.running = 0
        self.touched: set[int] = set()
        self.freed: set[int] = set()
        self.node_revision = np.zeros(self.cluster.n_nodes, dtype=np.int64)   # state.revision at each node's change

    def _keywords(self, j: int) -> dict:
        """What a job-aware policy is told of job ``j``: ``job``, and for a time-aware one ``now`` and ``work_s``."""
        keywords = {"job": j}
        if self.time_aware:
            keywords.update(now=self.clock.now, work_s=float(self.jobs.duration[j] - self.jobs.saved[j]))
        if self.health_aware:
            keywords["gpu_speed"] = self.gpu_speed
        return keywords

    def ask(self, j: int):
        """The policy's choice for job ``j`` (None: it fits nowhere); for a gang, its parts (module docstring)."""
        try:
            if self.gangs and self.tasks.workers[j] > 1:
                task = self.shapes.task[self.shapes.of[j]]
                if self.job_aware:
                    keywords = self._keywords(j)
                    return choose_parts(lambda state, part: self.policy(state, part, **keywords), self.state, task)
                return choose_parts(self.policy, self.state, task)
            if self.time_aware or self.health_aware:
                return self.policy(self.state, self.shapes.task[self.shapes.of[j]], **self._keywords(j))
            if self.job_aware:
                return self.policy(self.state, self.shapes.task[self.shapes.of[j]], job=j)
            return self.policy(self.state, self.shapes.task[self.shapes.of[j]])
        except Exception as exc:
            raise PolicyError(f"policy {self.label!r} raised {type(exc).__name__} on job {j} "
                              f"({self.tasks.names[j]}) at {self.clock.now} s: {exc}") from exc

    def start(self, j: int, choice, parts=None, demands=None) -> None:
        """Start job ``j`` where ``choice`` says ((node, GPUs) or, on MIG, (node, GPUs, starts)) now; or, with
        ``parts`` ``((node, GPUs), ...)``, over several nodes (:meth:`ClusterState.place_parts`; ``choice`` is then
        its first part), each part holding its ``(cpu_milli, memory_mib)`` of ``demands`` if given (then ``parts``
        may be one part). For a gang, ``choice`` is its parts (:meth:`ClusterState.place_parts`), unless ``parts``
        are given (a plan's move: ``choice`` is then its first part)."""
        now = self.clock.now
        if self.gangs and self.tasks.workers[j] > 1:
            parts = choice if parts is None else parts
            try:
                self.state.place_parts(j, parts, demands=demands)
            except (InfeasiblePlacement, TypeError, ValueError, IndexError) as exc:
                raise PolicyError(f"policy {self.label!r} chose {parts!r} for gang job {j} ({self.tasks.names[j]}) "
                                  f"at {now} s, where it does not fit: {exc}") from None
            self._launch(j, self.state.parts(j)[0])
            return
        try:
            node, gpus, *starts = choice                           # MIG policies add the start slices
            choice = (int(node), tuple(int(g) for g in gpus), *(tuple(int(s) for s in st) for st in starts))
            if parts is not None and (len(parts) > 1 or demands is not None):
                self.state.place_parts(j, parts, demands=demands)
                choice = self.state.parts(j)[0]
            else:
                self.state.place(j, *choice)
        except (InfeasiblePlacement, TypeError, ValueError, IndexError) as exc:
            raise PolicyError(f"policy {self.label!r} chose {choice!r} for job {j} ({self.tasks.names[j]}) at {now} "
                              f"s, where it does not fit: {exc}") from None
        self._launch(j, choice)

    def _slowdown(self, parts) -> float:
        """What the speed of a job placed on ``parts`` is divided by: ``gang_slowdown`` over more than one node (in a
        run with gangs, :func:`~fgdopt.timeline.engine.simulate`), else 1."""
        return self.gang_slowdown if len({node for node, _ in parts}) > 1 else 1.0

    def _launch(self, j: int, choice) -> None:
        """Job ``j`` was placed (``choice``: its first part's node and GPUs): its run starts now."""
        now = self.clock.now
        jobs = self.jobs
        node, gpus = choice[0], choice[1]
        for other, _ in self.state.parts(j):
            self.node_revision[other] = self.state.revision
            self.touched.add(other)
        held = self.state.held_milli(j)                            # an elastic job's: its GPUs, not its shape's
        jobs.begin(j, now, node, gpus[0] if gpus else -1)
        if self.gangs and self.gang_slowdown != 1:
            jobs.rate[j] /= self._slowdown(self.state.parts(j))
        if self.gpu_speed is not None:                             # the slowest of its GPUs (module docstring)
            factors = [self.gpu_speed[other, list(gs)].min() for other, gs in self.state.parts(j) if gs]
            if factors:
                jobs.rate[j] *= min(factors)
        interference = self.interference
        if interference is not None and 0 < self.tasks.gpu_milli[j] < GPU_MILLI:
            others = set()
            for g in gpus:
                others |= self.tenants.setdefault((node, g), set())
                self.tenants[(node, g)].add(j)
            jobs.rate[j] *= interference.slowdown(self.cluster.model[node], j, others)
            for o in others:
                self.rerate(o)
        if jobs.rate[j] <= 0:
            raise PolicyError(f"job {j} ({self.tasks.names[j]}) started at {now} s on node {node}, GPU model "
                              f"{self.cluster.model[node]}, where its speed is 0")
        self.alloc += held
        self.running += 1
        wall = jobs.launch(j, now)
        if math.isfinite(wall):
            self.clock.at(now + wall, j)

    def rerate(self, j: int, rate: float | None = None) -> None:
        """Running job ``j``'s GPU companions changed, or a plan set its ``rate`` (work per second): it continues at
        its new speed (:meth:`JobTable.rerate`); at rate 0 it has no finish event until it is re-rated."""
        jobs = self.jobs
        if rate is None:
            node = int(self.state.node_of[j])
            rate = jobs.pace[j, jobs.model_of[node]] * self.interference.slowdown(
                self.cluster.model[node], j, {o for g in self.state.gpus_of[j] for o in self.tenants[(node, g)]} - {j})
        end = jobs.rerate(j, self.clock.now, rate)
        if math.isfinite(end):
            self.clock.at(end, j)
        else:
            self.clock.cancel(j)

    def rerate_many(self, js: np.ndarray, rates: np.ndarray) -> None:
        """:meth:`rerate` of every running job of ``js`` (distinct) to ``rates`` (work per second), in order, in one
        pass: the same job table and clock (finish events pushed in the same order)."""
        if self.interference is not None or len(js) < BULK_MIN:
            for j, rate in zip(js.tolist(), rates.tolist(), strict=True):
                self.rerate(j, rate)
            return
        ends = self.jobs.rerate_many(js, self.clock.now, rates)
        timed = np.isfinite(ends)
        self.clock.live[js[~timed]] = -1
        self.clock.at_many(ends[timed].tolist(), js[timed].tolist())

    def leave(self, j: int) -> int:
        """Job ``j`` stops running now (finish or eviction); returns its node."""
        state = self.state
        node = int(state.node_of[j])
        gpus = state.gpus_of[j]
        nodes = [other for other, _ in state.parts(j)]
        held = state.held_milli(j)
        state.remove(j)
        self.node_revision[nodes] = state.revision
        if self.interference is not None and 0 < self.tasks.gpu_milli[j] < GPU_MILLI:
            others = set()
            for g in gpus:
                self.tenants[(node, g)].discard(j)
                others |= self.tenants[(node, g)]
            for o in others:
                self.rerate(o)
        self.alloc -= held
        self.running -= 1
        self.clock.cancel(j)
        self.jobs.stop(j, self.clock.now)
        self.freed.update(nodes)
        return node

    def finish(self, j: int) -> None:
        """Job ``j``'s run ended with its work done."""
        self.leave(j)
        self.jobs.finish(j, self.clock.now)

    def evict(self, j: int, kind: str, restart_s: Callable[[int], float], mechanism: Mechanism) -> None:
        """Preempt, suspend, migrate or (MIG re-layout) evict running job ``j`` (:mod:`fgdopt.timeline.preemption`)
        and requeue it."""
        self.jobs.evict(j, self.clock.now, kind, restart_s, mechanism.migrate_s,
                        mechanism.suspend_s + mechanism.restore_s if kind == "suspend" else 0.0)
        self.leave(j)
        self.jobs.status[j] = PENDING
        self.queue.enqueue(j)

    def bulk(self) -> bool:
        """Whether :meth:`evict_many` and :meth:`start_many` take their one-pass path (no co-location slowdowns to
        re-rate, no MIG slices); otherwise they go job by job, with the same effect."""
        return self.interference is None and self.state.mig is None and self.gpu_speed is None

    def evict_many(self, js, kind: str, restart_s: Callable[[int], float], mechanism: Mechanism,
                   stay_out: frozenset[int] | set[int] = frozenset()) -> None:
        """:meth:`evict` of every job of ``js`` (running, distinct), in order, in one vectorized pass: the same
        state, job table, clock and counters. The jobs of ``stay_out`` are not requeued (they are left ``PENDING``
        outside the queue): for jobs that :meth:`start_many` starts again in the same instant, where a trip through
        the queue would leave it as it was (its order is by key; what it knows of each shape is unchanged)."""
        js = np.asarray(js, dtype=np.int64)
        if len(js) == 0:
            return
        if len(js) < BULK_MIN or not self.bulk() or self.state.elastic[js].any():   # a few, elastic: one by one
            for j in js.tolist():
                self.jobs.evict(j, self.clock.now, kind, restart_s, mechanism.migrate_s,
                                mechanism.suspend_s + mechanism.restore_s if kind == "suspend" else 0.0)
                self.leave(j)
                self.jobs.status[j] = PENDING
                if j not in stay_out:
                    self.queue.enqueue(j)
            return
        self.jobs.evict_many(js, self.clock.now, kind, restart_s, mechanism.migrate_s,
                             mechanism.suspend_s + mechanism.restore_s if kind == "suspend" else 0.0)
        state = self.state
        rev0, parts, steps = state.revision, *self._parts_and_steps(js)     # read before the parts are gone
        state.remove_many(js)
        nodes = self._revise(parts, steps, rev0)
        self.alloc -= int(self.demand[js].sum())
        self.running -= len(js)
        self.clock.live[js] = -1
        self.freed.update(nodes)
        self.jobs.status[js] = PENDING
        self.queue.enqueue_many([j for j in js.tolist() if j not in stay_out])

    def _parts_and_steps(self, js: np.ndarray) -> tuple[list, np.ndarray]:
        """The parts of placed jobs ``js`` and how far each one's move advances the state's ``revision``."""
        return list(map(self.state.parts, js.tolist())), self.state.revision_steps(js)

    def _revise(self, parts: list, steps: np.ndarray, rev0: int) -> list[int]:
        """Record on the node of every part of moved jobs the state's ``revision`` once its job's move was done (the
        moves in order from ``rev0``, the k-th advancing it by ``steps[k]``); returns those nodes, in order."""
        nodes = [node for ps in parts for node, _ in ps]
        revised = rev0 + np.cumsum(steps)
        if len(nodes) > len(parts):                                 # some job in several parts
            revised = np.repeat(revised, np.fromiter(map(len, parts), np.int64, len(parts)))
        np.maximum.at(self.node_revision, np.fromiter(nodes, np.int64, len(nodes)), revised)
        return nodes

    def start_many(self, moves, rerated: frozenset[int] | set[int] = frozenset()) -> None:
        """:meth:`start` of every move of ``moves`` (:class:`fgdopt.defrag.Move`: job, node, GPUs; or a
        :class:`~fgdopt.timeline.preemption.GangMove` of its parts and their demands; distinct jobs), in order, in
        one vectorized pass (every part of every job in one :meth:`ClusterState.place_many`): the same state, job
        table, clock and counters (the finish events pushed in the same order). The jobs of ``rerated`` are re-rated
        next, in the same instant (:meth:`rerate_many`): their finish event, which that re-rate replaces, is not
        pushed (the events that stay live keep their order). A job over several distinct nodes runs at ``1 /
        gang_slowdown`` of its speed when the run has gangs (as :meth:`start`). Fewer than :data:`BULK_MIN` moves
        and elastic jobs (:attr:`ClusterState.elastic`) go one by one."""
        if len(moves) < BULK_MIN or not moves or not self.bulk():
            self._start_each(moves)
            return
        tasks, where, gpus, *_ = zip(*moves, strict=False)         # every move's job, first node, first GPUs
        js, nodes = np.fromiter(tasks, np.int64, len(moves)), np.fromiter(where, np.int64, len(moves))
        demands = spans = slowdown = None
        if set(map(type, moves)) != {Move}:                         # GangMoves: each part its demand (None over
            gang = [isinstance(m, GangMove) for m in moves]         # several: its split's), else the shape's
            spread = [g and len(m.parts) > 1 for g, m in zip(gang, moves, strict=True)]
            shapes = self.tasks
            demands = [(m.demands if s else m.demands[0]) if g and m.demands is not None
                       else None if s else (int(shapes.cpu_milli[m.task]), int(shapes.memory_mib[m.task]))
                       for g, s, m in zip(gang, spread, moves, strict=True)]
            spans = [m.parts if s else () for s, m in zip(spread, moves, strict=True)]
            if self.gangs and self.gang_slowdown != 1:
                slowdown = np.array([self._slowdown(span) for span in spans])
        if self.state.elastic[js].any():
            self._start_each(moves)
            return
        now, state, jobs = self.clock.now, self.state, self.jobs
        rev0 = state.revision
        try:
            state.place_many(js, nodes, gpus, demands, spans=spans)
        except (InfeasiblePlacement, TypeError, ValueError, IndexError) as exc:
            raise PolicyError(f"policy {self.label!r}: a plan's placement at {now} s does not fit: {exc}") from None
        part_nodes = self._revise(*self._parts_and_steps(js), rev0)
        walls = jobs.start_many(js, now, nodes, np.array([gs[0] if gs else -1 for gs in gpus], dtype=np.int64),
                               slowdown)
        if (bad := np.flatnonzero(jobs.rate[js] <= 0)).size:
            j, node = int(js[bad[0]]), int(nodes[bad[0]])
            raise PolicyError(f"job {j} ({self.tasks.names[j]}) started at {now} s on node {node}, GPU model "
                              f"{self.cluster.model[node]}, where its speed is 0")
        self.alloc += int(self.demand[js].sum())
        self.running += len(js)
        self.touched.update(part_nodes)
        ends = now + walls
        timed = np.isfinite(ends)
        if rerated:
            later = np.zeros(len(jobs.status), dtype=bool)
            later[np.fromiter(rerated, np.int64, len(rerated))] = True
            timed &= ~later[js]
        self.clock.at_many(ends[timed].tolist(), js[timed].tolist())

    def _start_each(self, moves) -> None:
        """:meth:`start` of every move of ``moves`` (as :meth:`start_many` takes them), one by one, in order."""
        for m in moves:
            g = isinstance(m, GangMove)
            self.start(m.task, (m.node, m.gpus), m.parts if g else None, m.demands if g else None)

    def resize(self, moves) -> None:
        """Running jobs keep their parts and run on holding new CPU and memory: each
        :class:`~fgdopt.timeline.preemption.GangMove` of ``moves`` names a job, its parts as placed and the
        ``(cpu_milli, memory_mib)`` each part holds from now on. Every job's old demand is given back before any new
        one is taken (:meth:`ClusterState.remove`, then :meth:`ClusterState.place_parts`, the one rule); the job
        table and the clock are untouched (no stop, no progress lost)."""
        state = self.state
        for m in moves:
            if tuple(state.parts(m.task)) != tuple(m.parts):
                raise RuntimeError(f"job {m.task} resized on {m.parts}, but it holds {state.parts(m.task)}")
            state.remove(m.task)
        for m in moves:
            try:
                state.place_parts(m.task, m.parts, demands=m.demands)
            except InfeasiblePlacement as exc:
                raise PolicyError(f"policy {self.label!r}: job {m.task} resized at {self.clock.now} s does not "
                                  f"fit: {exc}") from None
            for node, _ in m.parts:
                self.node_revision[node] = state.revision
                self.touched.add(node)
                self.freed.add(node)

    def take_out(self, outages) -> None:
        """Take ``outages`` (:class:`~fgdopt.timeline.preemption.Outage`, free now) out of service: their demand is held
        on the state (the node's free CPU and memory too, for a whole node), and the pending shapes are re-checked
        there (the node is touched). ``RuntimeError`` if a job still holds a part of one."""
        state, cluster = self.state, self.cluster
        if outages and state.mig is not None:
            raise RuntimeError("resources out of service (failures) are not supported on a MIG cluster")
        for out in outages:
            node, gpus = int(out.node), tuple(int(g) for g in out.gpus)
            part = Task(int(cluster.cpu_milli[node]) if out.whole_node else 0,
                        int(cluster.memory_mib[node]) if out.whole_node else 0, len(gpus), GPU_MILLI if gpus else 0)
            try:
                state.hold(part, node, gpus)
            except InfeasiblePlacement as exc:
                raise RuntimeError(f"resources {out} taken out of service at {self.clock.now} s are not free: "
                                   f"{exc}") from None
            self.out[out] = part
            self.node_revision[node] = state.revision
            self.touched.add(node)

    def put_back(self, outages) -> None:
        """Put ``outages`` (out of service, :meth:`take_out`) back in service: their node is freed (the unfit pending
        shapes are tested there)."""
        for out in outages:
            part = self.out.pop(out)
            self.state.release(part, int(out.node), tuple(int(g) for g in out.gpus))
            self.node_revision[out.node] = self.state.revision
            self.touched.add(int(out.node))
            self.freed.add(int(out.node))

    def try_start(self, j: int, s: int) -> bool:
        """Offer pending job ``j`` (shape ``s``) to the policy; start it, or mark its shape unfit in the queue."""
        choice = self.ask(j)
        if choice is None:
            self.queue.set_unfit(s)
            return False
        self.queue.withdraw(j)
        self.start(j, choice)
        return True
