"""The per-job table of the time engine: every job's status, times, place, progress and counters (struct of arrays).

This is where a job's progress is kept. A job's work is ``duration_s`` seconds at speed 1. It runs in *runs*: a run
starts (:meth:`JobTable.begin`, :meth:`JobTable.launch`) with a start cost (``run_cost``, the restart or restore
seconds after an eviction, no progress meanwhile), then works at the speed ``rate`` of its node (its GPU model's
speed, times its co-location slowdown) through ``run_work`` seconds of work, which take ``run_wall`` seconds of run
time; it ends by a finish (:meth:`JobTable.finish`), an eviction (:meth:`JobTable.evict`: the checkpoint rule says
what progress is kept) or a re-rate (:meth:`JobTable.rerate`, a transparent stop and start in place when its GPU
companions change). ``saved`` is the progress kept over the runs that ended (seconds of work at speed 1); ``ran_s``,
``busy_s``, ``lost_s`` and ``overhead_s`` split the run time of the ended runs. The arrays are the
:class:`~fgdopt.timeline.engine.TimelineResult`'s; nothing here knows the cluster, the queue or the clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fgdopt.timeline.jobs import JobSet
from fgdopt.timeline.preemption import Checkpointing

STATUSES = ("finished", "running", "pending", "rejected", "dropped")
"""How a job ends a run: ``dropped`` only under the ``none`` discipline (no queue)."""
FINISHED, RUNNING, PENDING, REJECTED, DROPPED = range(len(STATUSES))


class JobTable:
    """Every job's state (module docstring), one array per field, indexed by the job's index in the run's
    :class:`~fgdopt.timeline.jobs.JobSet`; seconds throughout.

    Parameters
    ----------
    jobs : the run's jobs.
    pace : float64 (n, models), every job's speed on every GPU model (index ``model_of[node]``).
    model_of : int (nodes,), the GPU model index of every node.
    checkpointing : the mechanism's checkpoint rule.
    """

    def __init__(self, jobs: JobSet, pace: np.ndarray, model_of: np.ndarray, checkpointing: Checkpointing):
        n = len(jobs)
        self.ckpt = checkpointing
        self.pace, self.model_of = pace, model_of
        self.duration = jobs.duration_s
        self.num_gpu = jobs.tasks.num_gpu * jobs.tasks.workers      # all GPUs of a gang (its restart's)
        self.status = np.full(n, PENDING, dtype=np.int8)
        self.start_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self.node_of = np.full(n, -1, dtype=np.int64)
        self.first_gpu = np.full(n, -1, dtype=np.int64)            # the mechanisms read it per job
        self.saved = np.zeros(n)                                   # checkpointed progress, s of work
        self.run_start, self.run_cost, self.run_work = np.zeros(n), np.zeros(n), np.zeros(n)   # the current run
        self.rate = np.ones(n)                                     # the current run's speed; run_wall = work / rate
        self.run_wall = np.zeros(n)                                # seconds of run time the current run's work takes
        self.busy_s = np.zeros(n)                                  # run time with progress kept, over the ended runs
        self.next_cost = np.zeros(n)                               # start cost of the next run, s
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.evictions = np.zeros(n, dtype=np.int64)
        self.suspensions = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.lost_s, self.overhead_s = np.zeros(n), np.zeros(n)
        self.thrashed = np.zeros(n, dtype=bool)
        self.evicted = np.zeros(n, dtype=bool)                     # the current run follows an eviction
        self.ran_s = np.zeros(n)                                   # seconds run in the runs that ended
        self.left_at = np.full(n, np.nan)                          # when the job last stopped running

    def begin(self, j: int, now: float, node: int, gpu: int) -> None:
        """Job ``j`` is placed on ``node`` (first GPU ``gpu``, -1: none) at ``now``: running, at its node's speed."""
        self.status[j] = RUNNING
        if math.isnan(self.start_s[j]):
            self.start_s[j] = now
        self.node_of[j] = node
        self.first_gpu[j] = gpu
        self.rate[j] = self.pace[j, self.model_of[node]]

    def launch(self, j: int, now: float) -> float:
        """Job ``j``'s run starts at ``now`` at its ``rate`` (set since :meth:`begin`); the run time it needs to
        finish (s, ``inf``: never)."""
        run_wall, run_cost, next_cost = self.run_wall, self.run_cost, self.next_cost
        self.run_start[j], run_cost[j], self.run_work[j] = now, next_cost[j], self.duration[j] - self.saved[j]
        run_wall[j] = self.run_work[j] / self.rate[j]
        next_cost[j] = 0.0
        return self.ckpt.run_time(float(run_wall[j]), float(run_cost[j]))

    def rerate(self, j: int, now: float, rate: float) -> float:
        """Running job ``j`` continues at ``rate`` from ``now``: the progress of its run so far is kept, the rest
        runs at the new speed (a transparent stop and start in place, with what is left of its start cost). Returns
        when it finishes (s; ``inf`` at rate 0)."""
        run_start, run_cost, run_wall = self.run_start, self.run_cost, self.run_wall
        elapsed = now - run_start[j]
        busy = min(max(elapsed - run_cost[j], 0.0), run_wall[j])
        self.ran_s[j] += elapsed
        self.busy_s[j] += busy
        self.overhead_s[j] += elapsed - busy
        self.saved[j] += busy * self.rate[j]
        self.rate[j] = rate
        run_start[j], run_cost[j] = now, max(run_cost[j] - elapsed, 0.0)
        self.run_work[j] = self.duration[j] - self.saved[j]
        if rate <= 0:
            run_wall[j] = math.inf
            return math.inf
        run_wall[j] = self.run_work[j] / rate
        return now + self.ckpt.run_time(float(run_wall[j]), float(run_cost[j]))

    def rerate_many(self, js: np.ndarray, now: float, rates: np.ndarray) -> np.ndarray:
        """:meth:`rerate` of every running job of ``js`` (distinct) to ``rates``, elementwise in one pass where no
        checkpoint costs run time (transparent, no checkpoints, or free ones): the same values to the last bit. Returns
        when each finishes (s; ``inf`` at rate 0), in the order of ``js``."""
        ckpt = self.ckpt
        if not (ckpt.transparent or not math.isfinite(ckpt.interval_s) or ckpt.cost_s == 0):
            return np.array([self.rerate(j, now, r) for j, r in zip(js.tolist(), rates.tolist(), strict=True)])
        elapsed = now - self.run_start[js]
        cost, wall = self.run_cost[js], self.run_wall[js]
        busy = np.minimum(np.maximum(elapsed - cost, 0.0), wall)
        self.ran_s[js] += elapsed
        self.busy_s[js] += busy
        self.overhead_s[js] += elapsed - busy
        saved = self.saved[js] = self.saved[js] + busy * self.rate[js]
        self.rate[js] = rates
        self.run_start[js] = now
        cost = self.run_cost[js] = np.maximum(cost - elapsed, 0.0)
        work = self.run_work[js] = self.duration[js] - saved
        stopped = rates <= 0
        with np.errstate(divide="ignore"):
            wall = self.run_wall[js] = np.where(stopped, math.inf, work / np.where(stopped, 1.0, rates))
        return np.where(stopped, math.inf, now + (cost + wall))     # Checkpointing.run_time, elementwise

    def stop(self, j: int, now: float) -> None:
        """Job ``j``'s run ends at ``now`` (before :meth:`finish`, or after :meth:`evict`)."""
        self.ran_s[j] += now - self.run_start[j]
        self.left_at[j] = now

    def finish(self, j: int, now: float) -> None:
        """Job ``j`` finished at ``now`` (its run's work done; after :meth:`stop`)."""
        self.status[j] = FINISHED
        self.finish_s[j] = now
        wall = self.run_wall[j]
        self.overhead_s[j] += max((now - self.run_start[j]) - wall, 0.0)             # restart and checkpoint time
        self.busy_s[j] += wall
        self.saved[j] += wall * self.rate[j]

    def evict(self, j: int, now: float, kind: str, restart_s: Callable[[int], float], migrate_s: float = 0.0,
              suspend_s: float = 0.0) -> None:
        """Running job ``j`` is evicted at ``now``: ``preempt`` or ``evict`` (a MIG re-layout) by the checkpoint
        rule, its next run paying ``restart_s(num_gpu)``; ``migrate`` or ``suspend`` transparently, paying
        ``migrate_s`` or ``suspend_s`` (suspension and restore). Counts it; :meth:`stop` follows."""
        elapsed = now - self.run_start[j]
        run_cost = self.run_cost
        if kind in ("preempt", "evict"):                         # evict: a MIG re-layout, the same checkpoint rule
            kept, lost, over, done = self.ckpt.evict(elapsed, float(run_cost[j]), float(self.run_wall[j]))
            self.thrashed[j] |= self.evicted[j] and done == 0 and not self.ckpt.transparent
            (self.evictions if kind == "evict" else self.preemptions)[j] += 1
            self.next_cost[j] = restart_s(int(self.num_gpu[j]))
        else:                                                   # suspend or migrate: transparent
            kept, lost, over = max(elapsed - run_cost[j], 0.0), 0.0, min(elapsed, float(run_cost[j]))
            if kind == "migrate":
                self.migrations[j] += 1
                self.next_cost[j] = migrate_s
            else:
                self.suspensions[j] += 1
                self.next_cost[j] = suspend_s
        self.saved[j] += kept * self.rate[j]
        self.busy_s[j] += kept
        self.lost_s[j] += lost
        self.overhead_s[j] += over
        self.evicted[j] = True

    def evict_many(self, js: np.ndarray, now: float, kind: str, restart_s: Callable[[int], float],
                   migrate_s: float = 0.0, suspend_s: float = 0.0) -> None:
        """:meth:`evict` then :meth:`stop` of every running job of ``js`` (distinct), elementwise in one pass where
        the checkpoint rule keeps no partial checkpoint (transparent, or no checkpoints): the same values to the
        last bit (the same float64 operations per job). ``restart_s`` is asked once per distinct GPU count."""
        if not (self.ckpt.transparent or not math.isfinite(self.ckpt.interval_s)) and kind in ("preempt", "evict"):
            for j in js.tolist():
                self.evict(j, now, kind, restart_s, migrate_s, suspend_s)
                self.stop(j, now)
            return
        elapsed = now - self.run_start[js]
        cost, wall = self.run_cost[js], self.run_wall[js]
        started = elapsed > cost                                  # past its start cost (else all of it overhead)
        busy = elapsed - cost
        if kind in ("preempt", "evict"):
            if self.ckpt.transparent:                             # Checkpointing.evict, elementwise
                kept, lost = np.where(started, np.minimum(busy, wall), 0.0), np.zeros(len(js))
            else:
                kept, lost = np.zeros(len(js)), np.where(started, np.minimum(busy, wall), 0.0)
            over = np.where(started, cost, elapsed)
            self.thrashed[js] |= self.evicted[js] & (not self.ckpt.transparent)
            (self.evictions if kind == "evict" else self.preemptions)[js] += 1
            gpus = self.num_gpu[js]
            self.next_cost[js] = 0.0
            for g in set(gpus.tolist()):
                self.next_cost[js[gpus == g]] = restart_s(int(g))
        else:
            kept, lost, over = np.maximum(busy, 0.0), np.zeros(len(js)), np.minimum(elapsed, cost)
            (self.migrations if kind == "migrate" else self.suspensions)[js] += 1
            self.next_cost[js] = migrate_s if kind == "migrate" else suspend_s
        self.saved[js] += kept * self.rate[js]
        self.busy_s[js] += kept
        self.lost_s[js] += lost
        self.overhead_s[js] += over
        self.evicted[js] = True
        self.ran_s[js] += elapsed
        self.left_at[js] = now

    def start_many(self, js: np.ndarray, now: float, nodes: np.ndarray, first_gpu: np.ndarray,
                   slowdown: np.ndarray | None = None) -> np.ndarray:
        """:meth:`begin` then :meth:`launch` of every job of ``js`` (distinct) on ``nodes`` (first GPUs
        ``first_gpu``), elementwise in one pass: the same values to the last bit. ``slowdown``: float64 per job,
        what its speed is divided by between the two (a gang over several nodes), or None (1 each). Returns the run
        times they need to finish (s, ``inf``: never), in the order of ``js``."""
        self.status[js] = RUNNING
        self.start_s[js] = np.where(np.isnan(self.start_s[js]), now, self.start_s[js])
        self.node_of[js], self.first_gpu[js] = nodes, first_gpu
        rate = self.pace[js, self.model_of[nodes]]
        if slowdown is not None:
            rate = rate / slowdown
        self.rate[js] = rate
        self.run_start[js], cost = now, self.next_cost[js]
        self.run_cost[js] = cost
        work = self.run_work[js] = self.duration[js] - self.saved[js]
        wall = self.run_wall[js] = work / rate
        self.next_cost[js] = 0.0
        ckpt = self.ckpt
        if ckpt.transparent or not math.isfinite(ckpt.interval_s) or ckpt.cost_s == 0:
            return cost + wall                                    # Checkpointing.run_time, elementwise
        return np.array([ckpt.run_time(float(w), float(c)) for w, c in zip(wall, cost, strict=True)])

    # what a mechanism may read, computed when asked (fgdopt.timeline.preemption.View)
    def lost_if_evicted(self, now: float, demand: np.ndarray) -> np.ndarray:
        """Milli-GPU x s of progress an eviction of each job would throw away at ``now`` (``demand`` milli-GPU)."""
        return demand * self.ckpt.lost(now - self.run_start, self.run_cost, self.run_wall)

    def run_s(self, now: float, js: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Seconds each job (of ``js``, default all) has run at ``now``, over all its runs."""
        return self.ran_s[js] + np.where(self.status[js] == RUNNING, now - self.run_start[js], 0.0)

    def work_s(self, now: float, js: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Progress of each job (of ``js``, default all) at ``now`` (kept or not), seconds of work at speed 1."""
        return self.saved[js] + np.where(self.status[js] == RUNNING, self.rate[js] * np.clip(
            now - self.run_start[js] - self.run_cost[js], 0.0, self.run_wall[js]), 0.0)
