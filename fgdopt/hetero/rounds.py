"""Gavel's round-based mechanism on the time engine: realize an allocation X (jobs x GPU types) round by round.

A :class:`RoundScheduler` is a mechanism of :func:`fgdopt.timeline.simulate` (``mechanism=...``) that owns the
starts: the engine's own pass is off, and every ``round_s`` seconds (Gavel's default 360 s) the scheduler

1. recomputes X with its ``allocate`` callable when the set of jobs present (running or pending) changed since the
   last X (Gavel re-solves on arrivals and completions only);
2. ranks every (job, GPU type) pair by Gavel's priority, ``X[i, j]`` over the fraction of the time since X was
   computed that job ``i`` ran on type ``j`` (a pair with no time yet ranks first, by X), ties by X;
3. walks the pairs in that order and gives job ``i`` type ``j`` when it has no type yet, ``X[i, j] > 0`` and
   ``j`` still has ``scale_factor[i]`` GPUs not given this round;
4. issues one ``round`` plan (:class:`fgdopt.timeline.preemption.Plan`): a running job that keeps its type keeps
   its GPUs; every other running job is preempted (the mechanism's checkpointing: transparent by default, as in
   Gavel's simulator) and the chosen jobs are placed on nodes of their type, largest first, each on the node of
   that type with the fewest free GPUs that holds it (consolidated: one node per job, the one feasibility rule).

Between rounds nothing starts: a job that arrives waits for the next round, and GPUs that a finishing job frees
stay idle until then. What each step follows in Gavel (``scheduler/scheduler.py`` at commit ``c4fa4009``) is
stated in the docstrings below.

Nothing here solves: ``allocate`` is given (``formulations.hetero.round_allocator`` builds one from Gavel's LPs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fgdopt.defrag import Move
from fgdopt.model import GPU_MILLI
from fgdopt.timeline.preemption import Checkpointing, Plan, View

ROUND_S = 360.0
"""Gavel's default round length (``--time_per_iteration``), seconds."""

Allocator = Callable[[np.ndarray, View], np.ndarray]
"""``allocate(jobs, view) -> X``: X (len(jobs), len(gpu_types)), fractions of time, for the jobs present."""


@dataclass
class RoundScheduler:
    """Gavel's round-based mechanism (module docstring).

    Parameters
    ----------
    allocate : X for the jobs present (:data:`Allocator`); columns in the order of ``gpu_types``.
    gpu_types : the cluster's GPU types (node ``model`` values) in X's column order.
    round_s : seconds per round.
    name : the mechanism's name in results.
    checkpointing : what a job stopped between rounds keeps (default transparent: it resumes where it stopped).

    Attributes (after a run)
    ------------------------
    solves : how many times X was computed. rounds : rounds run.
    """

    allocate: Allocator
    gpu_types: tuple[str, ...]
    round_s: float = ROUND_S
    name: str = "gavel"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    owns_starts: bool = True
    solves: int = 0
    rounds: int = 0
    _next_s: float = 0.0
    _present: frozenset = frozenset()
    _x: dict = field(default_factory=dict)              # job -> its row of X
    _since: float = 0.0                                 # when X was computed
    _received: dict = field(default_factory=dict)       # job -> seconds run per type since X was computed
    _type_of: dict = field(default_factory=dict)        # job -> type index of the last round
    _run_at: dict = field(default_factory=dict)         # job -> its run seconds when the last round began

    def wake_s(self, view: View) -> float:
        """The next round boundary."""
        return self._next_s

    def plan(self, view: View) -> Plan | None:
        if view.now < self._next_s:
            return None
        now = view.now
        self._next_s = now + self.round_s
        self.rounds += 1
        state = view.state
        tasks = state.tasks
        k = len(self.gpu_types)
        run_s = view.run_s
        for j, g in self._type_of.items():                  # the time each job of the last round ran there
            self._received.setdefault(j, np.zeros(k))[g] += run_s[j] - self._run_at[j]
        running = np.flatnonzero(state.node_of >= 0)
        present = np.concatenate([running, np.asarray(view.queued(), dtype=np.int64)]).astype(np.int64)
        present.sort()
        if frozenset(present.tolist()) != self._present:
            self._present = frozenset(present.tolist())
            x = np.asarray(self.allocate(present, view), dtype=np.float64) if len(present) else np.zeros((0, k))
            if x.shape != (len(present), k):
                raise ValueError(f"{self.name}: allocate gave X of shape {x.shape}, expected {(len(present), k)}")
            self._x = dict(zip(present.tolist(), x, strict=True))
            self._since, self._received = now, {}
            self.solves += 1
        chosen = self._choose(present, tasks.num_gpu, state.cluster, now)
        self._type_of = chosen
        self._run_at = {j: float(run_s[j]) for j in chosen}
        return self._round_plan(state, running, chosen)

    def _choose(self, present: np.ndarray, scale: np.ndarray, cluster, now: float) -> dict[int, int]:
        """Step 3 of the module docstring: job -> GPU type index for the next round."""
        models = cluster.model
        left = {g: int(cluster.gpu[models == name].sum()) for g, name in enumerate(self.gpu_types)}
        elapsed = now - self._since
        pairs = []
        for j in present.tolist():
            x = self._x[j]
            got = self._received.get(j)
            for g in np.flatnonzero(x > 0).tolist():
                share = 0.0 if got is None or elapsed <= 0 else got[g] / elapsed
                priority = np.inf if share == 0 else x[g] / share
                pairs.append((-priority, -x[g], j, g))
        pairs.sort()
        chosen: dict[int, int] = {}
        for _, _, j, g in pairs:
            if j not in chosen and scale[j] <= left[g]:
                chosen[j] = g
                left[g] -= int(scale[j])
        return chosen

    def _round_plan(self, state, running: np.ndarray, chosen: dict[int, int]) -> Plan:
        """Step 4 of the module docstring."""
        cluster = state.cluster
        stay = {j for j in running.tolist() if self._type_of_node(cluster, state.node_of[j]) == chosen.get(j)}
        victims = tuple(j for j in running.tolist() if j not in stay)
        free = state.gpu_left == GPU_MILLI                   # whole free GPUs per node, once the victims leave
        free &= np.arange(free.shape[1])[None, :] < cluster.gpu[:, None]
        for v in victims:
            free[state.node_of[v], list(state.gpus_of[v])] = True
        starts = sorted((j for j in chosen if j not in stay), key=lambda j: (-int(state.tasks.num_gpu[j]), j))
        admits = []
        node_type = np.array([self.gpu_types.index(m) if m in self.gpu_types else -1 for m in cluster.model])
        for j in starts:
            need = int(state.tasks.num_gpu[j])
            count = free.sum(axis=1)
            ok = (node_type == chosen[j]) & (count >= need)
            if not ok.any():
                continue                                     # no node of its type holds it whole this round
            node = int(np.flatnonzero(ok)[np.argmin(count[ok])])
            gpus = tuple(np.flatnonzero(free[node])[:need].tolist())
            free[node, list(gpus)] = False
            admits.append(Move(j, node, gpus))
        return Plan(kind="round", victims=victims, admits=tuple(admits))

    def _type_of_node(self, cluster, node: int) -> int | None:
        model = cluster.model[node]
        return self.gpu_types.index(model) if model in self.gpu_types else None
