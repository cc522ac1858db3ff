"""Gavel's round-based mechanism on the time engine: realize an allocation X (jobs x GPU types) round by round.

A :class:`RoundScheduler` is a mechanism of :func:`fgdopt.timeline.simulate` (``mechanism=...``) that owns the
starts: the engine's own pass is off and only the scheduler's ``round`` plans start and stop jobs. It follows
Gavel's simulator (``scheduler/scheduler.py`` of ``stanford-futuredata/gavel`` at commit ``c4fa4009``:
``simulate``, ``_update_priorities``, ``_reset_time_run_so_far``, ``_schedule_jobs_on_workers[_helper]``):

* **Rounds.** A round starts when the previous one ends, at the latest end of the runs it scheduled (each runs
  ``round_s``, Gavel's 360 s, or until its job finishes); a job that finishes early leaves its GPUs idle until the
  round ends. With ``step_rate`` (Gavel's whole steps, ``_get_num_steps``), a run does ``int(throughput x round_s)``
  steps, or the job's remaining ones, in that many steps' time, and then idles until the round ends (its speed for
  the round is set so that its work at the round's end is those steps); the time it received is its own steps'
  time. Arrivals wait for the next round. With nothing scheduled, Gavel's next round is at the next arrival; with
  jobs waiting that are not in X yet (below), nothing can run before the next recomputation is allowed, and the
  scheduler wakes then (Gavel's stream never ends, so it waits for the first arrival after that instant instead:
  the one difference, and only on an idle cluster).
* **X.** Arrivals and completions mark X stale; a stale X is recomputed (``allocate``, over every job present) at
  the start of a round, but not sooner than ``reset_s`` (Gavel's ``minimum_time_between_allocation_resets``,
  1,920 s) after the last recomputation, except while the last one was at time 0. A job that arrived after the
  last recomputation is not in X and does not run. (``allocate`` is called only once the choice reads that X:
  :class:`RoundScheduler`.)
* **Priorities.** Since the last recomputation, job ``i`` has run ``t[i, j]`` seconds on type ``j`` (starting from
  half a round, Gavel's initial value) and type ``j`` has ``W[j]`` seconds in all (the half rounds of the jobs
  present at the recomputation, plus every run). Priority ``X[i, j] / (t[i, j] / W[j])`` (``1e9 X`` while ``W[j]``
  is 0; 0 where X is 0 or the job does not run on ``j``). Ties are broken by the *deficit* (the time a job should
  have received under the previous X minus what it did, summed over recomputations), then by X.
* **Choice.** Type by type (``gpu_types`` order for the heterogeneity-aware policies; shuffled every round by
  ``random.Random(seed + 5)`` for the agnostic ones, as Gavel does), the type's jobs by decreasing (priority,
  deficit, X), a job takes the type when it has no type yet, runs there and its scale factor fits the type's GPUs
  left. A job not in X consumes its GPUs without running (as in Gavel).
* **Placement.** A job that keeps its type keeps its GPUs; every other running job is preempted (transparently by
  default: Gavel's simulator charges nothing) and the new ones are placed on nodes of their type, largest first,
  each on the node of that type with the fewest free GPUs that holds it whole (the one feasibility rule), else,
  with ``span``, over several nodes by Gavel's walk (:mod:`fgdopt.hetero.gang`), at its ``spread_speed``.

Nothing here solves: ``allocate`` is given (``formulations.hetero.round_allocator`` builds one from Gavel's LPs).
"""

from __future__ import annotations

import math
import random
from bisect import insort
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from itertools import chain

import numpy as np

from fgdopt.defrag import Move
from fgdopt.hetero.gang import spread_parts
from fgdopt.model import GPU_MILLI
from fgdopt.timeline.preemption import Checkpointing, GangMove, Plan, View

ROUND_S = 360.0
"""Gavel's default round length (``time_per_iteration``), seconds."""
RESET_S = 1920.0
"""Gavel's ``minimum_time_between_allocation_resets``, seconds."""

Allocator = Callable[[np.ndarray, View], np.ndarray]
"""``allocate(jobs, view) -> X``: X (len(jobs), len(gpu_types)), fractions of time, for the jobs present."""


@dataclass(frozen=True)
class Moment:
    """What ``allocate`` reads of the engine's view, kept from the instant of a recomputation (X is solved later,
    when read: :class:`RoundScheduler`): ``now`` (s) and ``work_of`` of the jobs present then (s of work)."""

    now: float
    present: np.ndarray
    work: np.ndarray

    def work_of(self, js: np.ndarray) -> np.ndarray:
        """Each job's progress at ``now`` (jobs of ``present`` only), seconds of work at speed 1."""
        return self.work[np.searchsorted(self.present, js)]


@dataclass
class RoundScheduler:
    """Gavel's round-based mechanism (module docstring).

    Parameters
    ----------
    allocate : X for the jobs present (:data:`Allocator`); columns in the order of ``gpu_types``.
    speed : ``{gpu type: float (n,)}``, every job's speed per type (as given to ``simulate``; 0: does not run).
    duration_s : float (n,), every job's work in seconds at speed 1 (the run's ``JobSet.duration_s``).
    gpu_types : the cluster's GPU types (node ``model`` values) in X's column order.
    shuffle_seed : None keeps ``gpu_types`` order every round (Gavel's ``*_Perf`` policies); an int shuffles it
        every round with ``random.Random(shuffle_seed)`` (Gavel: ``seed + 5``, for the agnostic policies).
    round_s, reset_s : seconds (:data:`ROUND_S`, :data:`RESET_S`).
    name : the mechanism's name in results.
    checkpointing : what a job stopped between rounds keeps (default transparent: it resumes where it stopped).
    stop_after : job indices (e.g. the measured jobs); once every one of them has finished, the scheduler stops the
        run at the next round: it stops every running job and never starts one again, so the engine has only the
        remaining arrivals left to queue (None: never). Nothing before that round changes, so every figure over
        those jobs is the one of a run that went on (Gavel's simulator ends there too, its trace being endless).
    span : a multi-GPU job that no node of its type holds whole may run over several of them (default False: it
        waits, as before gang placements existed).
    spread_speed : ``{gpu type: float (n,)}``, every job's speed per type when its GPUs span nodes
        (:func:`fgdopt.hetero.gang.spread_speeds`: Gavel's unconsolidated throughputs); None (default): its ``speed``
        there too, as Gavel's simulator runs it.
    stop_by_s : with ``stop_after``, also stop at the first round after this time (seconds; e.g. the trace's last
        arrival, past which the run no longer follows an endless trace), whether or not those jobs have finished.
    step_rate : float (n,), every job's steps per second of work (its throughput on the type whose speed is 1, in
        steps/s; work counted as in ``duration_s``): rounds run whole steps as Gavel's simulator does (module
        docstring); None (default): a run lasts the whole round (or until its job finishes) and its job progresses
        at its speed throughout.

    X is computed lazily: a recomputation records the jobs present, the instant and their work then, and
    ``allocate`` is called (with a :class:`Moment` of that instant as its view) only when some X of it is read, that
    is when a type has more candidates than room and the choice sorts them (the priorities and the deficits' ties);
    a recomputation none of whose jobs is present by then is never solved. Every X read is the one an eager run
    computes, from the same inputs, and the deficits add the same terms in the same order: the schedule is the same
    to the last bit, and on an uncongested cluster (the low rates of Gavel's Figure 8) no LP is solved at all.

    After a run, ``solves`` counts the recomputations of X (Gavel's) and ``lps`` the ones actually solved,
    ``rounds`` the rounds in which some job ran (all up to the stop); ``stopped_s`` is the time of the stop (NaN:
    none).
    """

    allocate: Allocator
    speed: Mapping[str, np.ndarray]
    duration_s: np.ndarray
    gpu_types: tuple[str, ...]
    shuffle_seed: int | None = None
    round_s: float = ROUND_S
    reset_s: float = RESET_S
    name: str = "gavel"
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    owns_starts: bool = True
    stop_after: np.ndarray | None = None
    span: bool = False
    spread_speed: Mapping[str, np.ndarray] | None = None
    stop_by_s: float = math.inf
    step_rate: np.ndarray | None = None
    solves: int = 0
    lps: int = 0
    stopped_s: float = math.nan
    rounds: int = 0
    _next_s: float = 0.0
    _stale: bool = False
    _last_reset: float = 0.0
    _w: np.ndarray | None = None                        # seconds per type since the reset
    _ran: tuple = (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)   # the last round's jobs, types, and run s at its
    #                                                     start (with step_rate: the seconds its steps take)
    _shuffler: random.Random | None = None
    _planned_at: float = -1.0
    _layout: tuple | None = None                        # (cluster, type of each node, nodes of each type, GPUs)
    _gangs: set = field(default_factory=set)            # jobs of the round planned last that run over several nodes
    _current: list | None = None                        # the last recomputation: [its Moment, its X or None]
    _prune_at: int = 64                                 # the length of _owed at which it is pruned next
    _choices: dict = field(default_factory=dict)        # type order -> the choice made without reading a priority
    _last_plan: tuple | None = None                     # the last _round_plan: (its choice, solves, the state's
    #                                                     revision, plan, runs, gangs); nothing moved since: reused
    _owed: list = field(default_factory=list)            # deficit terms not added yet, in order: (recomputation,
    #                                                     the jobs present at the next one, elapsed s, t - half round)

    def __post_init__(self) -> None:
        self.gpu_types = tuple(self.gpu_types)
        self._thr = np.column_stack([np.asarray(self.speed[g], dtype=np.float64) for g in self.gpu_types])
        self._w = np.zeros(len(self.gpu_types))
        self._spread = None if self.spread_speed is None else np.column_stack(
            [np.asarray(self.spread_speed[g], dtype=np.float64) for g in self.gpu_types])
        n, k = self._thr.shape                              # per job (rows by job index):
        self._x = np.zeros((n, k))                          # its row of X (0 while not in the allocation)
        self._in_x = np.zeros(n, dtype=bool)                # whether it is in the allocation
        self._t = np.zeros((n, k))                          # seconds run per type since the reset (+ half round)
        self._known = np.zeros(n, dtype=bool)               # present since its arrival (has its row of _t)
        self._deficit = np.zeros((n, k))                    # deficit per type
        self._speed = np.zeros(n)                           # the speed its run was given last (whole steps)
        self._present = np.zeros(0, dtype=np.int64)         # the jobs present at the last round
        if self.shuffle_seed is not None:
            self._shuffler = random.Random(self.shuffle_seed)
        self._waiting = None if self.stop_after is None else set(np.asarray(self.stop_after, dtype=np.int64).tolist())

    def _types(self, cluster) -> tuple[np.ndarray, list[np.ndarray], list[int]]:
        """Per node its type index (-1: not a scheduled type), per type its nodes and GPUs (once per cluster)."""
        if self._layout is None or self._layout[0] is not cluster:
            node_type = np.array([self.gpu_types.index(m) if m in self.gpu_types else -1 for m in cluster.model])
            nodes = [np.flatnonzero(node_type == g) for g in range(len(self.gpu_types))]
            self._layout = (cluster, node_type, nodes, [int(cluster.gpu[n].sum()) for n in nodes])
        return self._layout[1:]

    def wake_s(self, view: View) -> float:
        """The end of the current round (none while nothing runs: the next arrival starts a round)."""
        return self._next_s if self._next_s > view.now and math.isnan(self.stopped_s) else math.inf

    def plan(self, view: View) -> Plan | None:
        if view.now < self._next_s or view.now == self._planned_at or not math.isnan(self.stopped_s):
            return None
        now, state = view.now, view.state
        self._planned_at = now
        t, known = self._t, self._known
        js, gs, ran = self._ran                            # the runs of the round that ended and the seconds
        if len(js):                                        # each received: its run's, or its steps' time
            if self.step_rate is None:
                ran = view.run_of(js) - ran
            mine = known[js]
            t[js[mine], gs[mine]] += ran[mine]             # one run per job
            np.add.at(self._w, gs, ran)                    # added one by one, in the runs' order
        last = self._ran[0]                                # only this scheduler's plans place jobs: the jobs
        running = np.sort(last[state.node_of[last] >= 0])  # running are those of the last round still placed
        ids = np.sort(np.concatenate((running, view.waiting())))
        same = len(ids) == len(self._present) and bool((ids == self._present).all())
        gone = self._present[:0] if same else self._present[~self._mark(ids)[self._present]]   # completions
        if not same:                                       # (Gavel's remove_job) and arrivals (add_job)
            arrived = ids[~known[ids]]
            t[arrived] = self.round_s / 2
            known[arrived] = True
            known[gone], self._in_x[gone] = False, False
            self._x[gone], self._deficit[gone] = 0.0, 0.0
            self._present = ids
            self._stale |= bool(len(arrived) or len(gone))
            self._choices = {}                             # the uncontended choices were for other jobs
        if self._waiting is not None:
            if len(gone):
                self._waiting -= set(gone.tolist())
            if not self._waiting or now > self.stop_by_s:  # all of stop_after finished (or too late): stop the run
                self.stopped_s = now
                return Plan(kind="round", victims=tuple(running.tolist()), admits=())
        if self._stale and len(ids) and (self._reset_allowed(now) or self._last_reset == 0):
            self._reset(now, ids, view)
        chosen = self._choose(ids, state.tasks.num_gpu, state.cluster)
        last_plan = self._last_plan
        if (last_plan is not None and last_plan[0] is chosen and last_plan[1] == self.solves
                and last_plan[2] == state.revision):       # the same choice, X's jobs and placement: the same plan
            plan, runs, self._gangs = last_plan[3:]
        else:
            plan, runs = self._round_plan(state, running, chosen)
            self._last_plan = (chosen, self.solves, state.revision, plan, runs, self._gangs)
        self.rounds += bool(runs)
        js, gs = np.fromiter(runs, np.int64, len(runs)), np.fromiter(runs.values(), np.int64, len(runs))
        if runs:                                           # the round ends when its last run ends
            cost = np.zeros(len(js))
            fresh = np.zeros(len(js), dtype=bool)         # the runs that start now (the others continue)
            if plan.admits:
                need = state.tasks.num_gpu[js]
                fresh = self._mark([m.task for m in plan.admits])[js]
                for k in sorted(set(need[fresh].tolist())):  # the restart cost by GPU count, asked once per count
                    cost[fresh & (need == k)] = view.restart_s(int(k))
            left = np.maximum(self.duration_s[js] - view.work_of(js), 0.0)   # seconds of work left, at speed 1
            thr = self._thr[js, gs]
            gangs = self._gangs if self._spread is not None else ()
            if gangs and (spread := [k for k, j in enumerate(runs) if j in gangs]):
                thr[spread] = self._spread[js[spread], gs[spread]]          # jobs over several nodes
                new = {m.task for m in plan.admits if isinstance(m, GangMove)}    # a kept one keeps its rate
                plan = replace(plan, rates=tuple((int(js[k]), float(thr[k])) for k in spread if js[k] in new))
            if self.step_rate is not None:                 # Gavel's whole steps (module docstring)
                plan, took = self._whole_steps(plan, js, thr, left, cost, fresh)
                self._next_s = float((now + took + cost).max())
                self._ran = (js, gs, took)
                return plan
            self._next_s = float((now + np.minimum(self.round_s, left / thr + cost)).max())
        else:                                              # waiting jobs not yet in X: the next recomputation
            self._next_s = self._reset_due() if len(ids) else now
        self._ran = (js, gs, view.run_of(js))
        return plan

    def _whole_steps(self, plan: Plan, js: np.ndarray, thr: np.ndarray, left: np.ndarray, cost: np.ndarray,
                     fresh: np.ndarray) -> tuple[Plan, np.ndarray]:
        """The round's runs in whole steps: the plan with the speed for the round of every run that starts now
        (``fresh``) or continues at another speed than in the last round, and the seconds each run's steps take (its
        time received).

        A run at speed ``thr`` does ``int(step_rate x thr x round_s)`` steps, or all that are left when no more
        (Gavel's ``min(num_steps, remaining)``), taking ``steps / (step_rate x thr)`` seconds; the round lasts as
        long as its longest run (plus its restart cost); a job that does not finish runs at the speed that brings
        its work to exactly its steps by the round's end."""
        rate = self.step_rate[js] * thr                   # steps per second
        steps = np.floor(rate * self.round_s)
        last = left * self.step_rate[js] <= steps          # its remaining steps fit: it finishes in this round
        took = np.where(last, left / thr, steps / rate)
        span = float((took + cost).max()) - cost           # each run's seconds from its start to the round's end
        speed = np.where(last | (took >= span), thr, steps / self.step_rate[js] / np.where(span > 0, span, 1.0))
        new = fresh | (speed != self._speed[js])           # a run that continues at its speed needs no re-rate
        self._speed[js] = speed
        return Plan(kind="round", victims=plan.victims, admits=plan.admits,
                    rates=tuple(zip(js[new].tolist(), speed[new].tolist(), strict=True))), took

    def _reset_allowed(self, now: float) -> bool:
        """Whether X may be recomputed at ``now``: ``reset_s`` since the last recomputation (Gavel's test)."""
        return now - self._last_reset >= self.reset_s

    def _reset_due(self) -> float:
        """The first instant at which :meth:`_reset_allowed` holds, in float64 (``last + reset_s`` may be a hair
        short of it: then the next float up, else a scheduler waking there would find it not yet allowed and never
        wake again)."""
        due = self._last_reset + self.reset_s
        while not self._reset_allowed(due):
            due = math.nextafter(due, math.inf)
        return due

    def _mark(self, jobs) -> np.ndarray:
        """bool (n,): whether each job is one of ``jobs``."""
        mark = np.zeros(len(self._known), dtype=bool)
        mark[np.fromiter(jobs, np.int64, len(jobs))] = True
        return mark

    def _reset(self, now: float, present: np.ndarray, view: View) -> None:
        """Gavel's ``_reset_time_run_so_far`` then ``_compute_allocation``, X recorded to be solved when read."""
        elapsed, half = now - self._last_reset, self.round_s / 2
        # per job: the deficit gains what X gave it (0 if not in X) minus what it ran (added when X is read)
        if len(self._owed) >= self._prune_at:               # now and then: forget the terms of jobs all gone
            self._owed = [term for term in self._owed if self._known[term[1]].any()]
            self._prune_at = max(64, 2 * len(self._owed))
        if self._current is not None:                       # (before the first, no job has run: nothing owed)
            self._owed.append((self._current, present, elapsed, self._t[present] - half))
        self._t[present] = half
        # W: a half round per job, added one by one (a cumulative sum adds in that order)
        self._w[:] = np.full(len(present), half).cumsum()[-1] if len(present) else 0.0
        self._current = [Moment(now, present, view.work_of(present)), None]
        self._x[:], self._in_x[:] = 0.0, False
        self._in_x[present] = True
        self._last_reset, self._stale = now, False
        self.solves += 1

    def _solved(self, record: list) -> np.ndarray:
        """The X of one recorded recomputation, ``[Moment, X or None]`` (solved now if not yet)."""
        moment, x = record
        if x is None:
            x = np.asarray(self.allocate(moment.present, moment), dtype=np.float64)
            if x.shape != (len(moment.present), len(self.gpu_types)):
                raise ValueError(f"{self.name}: allocate gave X of shape {x.shape}, expected "
                                 f"{(len(moment.present), len(self.gpu_types))}")
            record[1] = x
            self.lps += 1
        return x

    def _settle(self) -> None:
        """Solve what the choice reads: the deficit terms still owed to jobs present (in order, as an eager run adds
        them) and the current X."""
        known = self._known
        for record, present, elapsed, ran in self._owed:
            here = known[present]
            if not here.any():                               # none of its jobs left: nothing to add
                continue
            rows = np.zeros((len(present), len(self.gpu_types)))    # X of the recomputation before (0: not in it)
            ids = record[0].present
            at = np.searchsorted(ids, present)
            hit = (at < len(ids)) & (ids[np.minimum(at, len(ids) - 1)] == present)
            rows[hit] = self._solved(record)[at[hit]]
            p = present[here]
            self._deficit[p] = self._deficit[p] + rows[here] * elapsed - ran[here]
        self._owed.clear()
        self._x[self._current[0].present] = self._solved(self._current)

    def _choose(self, ids: np.ndarray, scale: np.ndarray, cluster) -> dict[int, int]:
        """Job -> GPU type index for the next round (module docstring: priorities and choice)."""
        k = len(self.gpu_types)
        left = list(self._types(cluster)[2])
        order = list(range(k))
        if self._shuffler is not None:
            self._shuffler.shuffle(order)
        if (known := self._choices.get(tuple(order))) is not None:
            return known                                     # these jobs, this order, and nobody sorted: as before
        thr = self._thr[ids]
        chosen: dict[int, int] = {}                          # (its order does not matter: what runs is by job index)
        need = scale[ids]
        if (need == 1).all():                                # one GPU each: a type takes its first `room` jobs
            free = thr > 0                                   # per job and type: it runs there, not chosen yet
            keys = None
            for g in order:
                room = left[g]
                if room == 0:
                    continue
                took = np.flatnonzero(free[:, g])
                if len(took) > room:                         # room for some only: the first by priority
                    if keys is None:
                        keys = self._keys(ids, thr)
                    minus_x, minus_deficit, minus_priority = keys
                    key = minus_priority[took, g]           # only those within the room-th largest priority can be
                    if not np.isnan(key).any():             # among the first (ties there: by the further keys)
                        took = took[key <= np.partition(key, room - 1)[room - 1]]
                    took = took[np.lexsort((took, minus_x[took, g], minus_deficit[took, g],
                                            minus_priority[took, g]))][:room]
                free[took] = False
                chosen.update(zip(ids[took].tolist(), [g] * len(took), strict=True))
            if keys is None:                                 # no priority was read: the same jobs in the same
                self._choices[tuple(order)] = chosen         # order make the same choice (until jobs come or go)
            return chosen
        minus_x, minus_deficit, minus_priority = self._keys(ids, thr)
        rank = np.arange(len(ids))                           # ties: arrival order (Gavel's stable sort)
        runs_on = (thr > 0).T.tolist()                       # per type, per job: whether it runs there
        gpus, present = need.tolist(), ids.tolist()
        for g in order:
            if left[g] == 0:
                continue
            can, room = runs_on[g], left[g]
            for r in np.lexsort((rank, minus_x[:, g], minus_deficit[:, g], minus_priority[:, g])).tolist():
                j = present[r]
                if j in chosen or not can[r] or gpus[r] > room:
                    continue
                chosen[j] = g
                room -= gpus[r]
                if room == 0:
                    break
            left[g] = room
        return chosen

    def _keys(self, ids: np.ndarray, thr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Minus X, the deficits and the priorities of jobs ``ids`` (``thr`` their speeds), per type: the sort keys of
        the choice, descending (module docstring)."""
        if self._current is not None and self._current[1] is None:     # a recomputation since X was last read
            self._settle()
        x, t, deficit = self._x[ids], self._t[ids], self._deficit[ids]
        with np.errstate(divide="ignore", invalid="ignore"):
            priority = np.where(self._w > 0, x * self._w / t, x * 1e9)
        priority[(x == 0) | (thr == 0)] = 0.0
        priority[~self._in_x[ids]] = 0.0
        return -x, -deficit, -priority

    def _round_plan(self, state, running: np.ndarray, chosen: dict[int, int]) -> tuple[Plan, dict[int, int]]:
        """Keep the jobs that keep their type on their GPUs, preempt the other running jobs, place the new ones;
        the plan and the type of every job that runs in the round.

        Each new job, largest first, goes to the node of its type with the fewest free GPUs that holds it whole
        (ties: the lowest node index), on that node's lowest free GPUs. The nodes of a type are kept in buckets by
        their free GPUs, so a placement costs no scan of the type's nodes."""
        cluster = state.cluster
        node_type, of_type, _ = self._types(cluster)
        node_of, num_gpu = state.node_of, state.tasks.num_gpu
        in_x = self._in_x
        runs = {j: g for j, g in chosen.items() if in_x[j]}      # a job not in X takes GPUs but does not run
        listed = running.tolist()
        stay = {j for j, g in zip(listed, node_type[node_of[running]].tolist(), strict=True) if runs.get(j) == g}
        self._gangs = {j for j in stay if j in state.parts_of}
        victims = tuple(j for j in listed if j not in stay)
        new = np.fromiter((j for j in runs if j not in stay), np.int64)
        new = new[np.lexsort((new, -num_gpu[new]))].tolist()           # largest first, then by index
        admits = []
        if new:
            free = (state.gpu_left == GPU_MILLI) & (np.arange(state.gpu_left.shape[1])[None, :] < cluster.gpu[:, None])
            if victims and any(v in state.parts_of for v in victims):
                held = [part for v in victims for part in state.parts(v)]     # every part of a gang
                free[np.repeat([node for node, _ in held], [len(gpus) for _, gpus in held]),
                     np.fromiter(chain.from_iterable(gpus for _, gpus in held), np.int64)] = True
            elif victims:                                   # one part each: its node and GPUs
                held = [state.gpus_of[v] for v in victims]
                free[np.repeat(node_of[list(victims)], [len(gpus) for gpus in held]),
                     np.fromiter(chain.from_iterable(held), np.int64)] = True
            counts = free.sum(axis=1)
            count = counts.tolist()
            free_rows = free.tolist()
            buckets: dict[int, list[list[int]]] = {}        # type -> free GPUs -> its nodes, ascending
            gpus_free: dict[int, list[int]] = {}            # node -> its free GPUs, ascending (filled when used)
            needs = num_gpu[new].tolist()
            singles = needs.index(1) if needs[-1] == 1 else len(new)      # from here on, 1-GPU jobs only
            for j, need in zip(new[:singles], needs[:singles], strict=True):
                g = runs[j]
                if g not in buckets:
                    by_free = [[] for _ in range(free.shape[1] + 1)]
                    for node in of_type[g].tolist():
                        by_free[count[node]].append(node)
                    buckets[g] = by_free
                by_free = buckets[g]
                spare = next((c for c in range(need, len(by_free)) if by_free[c]), None)
                if spare is None:                         # no node of its type holds it whole: over several
                    parts = self.span and spread_parts(of_type[g].tolist(), lambda n: gpus_free.setdefault(
                        n, [k for k, f in enumerate(free_rows[n]) if f]), need)
                    for node, gpus in parts or ():
                        c = len(gpus_free[node]) + len(gpus)
                        by_free[c].remove(node)
                        insort(by_free[c - len(gpus)], node)
                    if parts:
                        admits.append(GangMove(j, *parts[0], parts))
                        self._gangs.add(j)
                    continue
                node = by_free[spare].pop(0)
                insort(by_free[spare - need], node)
                if node not in gpus_free:
                    gpus_free[node] = [g for g, f in enumerate(free_rows[node]) if f]
                gpus = tuple(gpus_free[node][:need])
                del gpus_free[node][:need]
                admits.append(Move(j, node, gpus))
            # 1-GPU jobs: the rule above fills the node of fewest free GPUs (lowest index first) until it is full,
            # then the next: each type's free GPUs in that order, taken one per job
            # (the k-th 1-GPU job of a type, in the order of `new`, takes its k-th slot; those past the last wait)
            if rest := new[singles:]:
                types = np.fromiter(map(runs.__getitem__, rest), np.int64, len(rest))
                node_at, gpu_at = np.zeros(len(rest), np.int64), np.zeros(len(rest), np.int64)
                placed = np.zeros(len(rest), dtype=bool)
                for g in sorted(set(types.tolist())):
                    if g in buckets:                        # after larger jobs: their buckets
                        slots = [(node, gpu) for by_count in buckets[g][1:] for node in by_count
                                 for gpu in gpus_free.get(node) or [k for k, f in enumerate(free_rows[node]) if f]]
                        nodes = np.array([node for node, _ in slots], dtype=np.int64)
                        gpus = np.array([gpu for _, gpu in slots], dtype=np.int64)
                    else:
                        nodes = of_type[g][counts[of_type[g]] > 0]
                        nodes = nodes[np.argsort(counts[nodes], kind="stable")]   # fewest free, then index
                        rows, gpus = np.nonzero(free[nodes])                       # each node's GPUs ascending
                        nodes = nodes[rows]
                    mine = np.flatnonzero(types == g)[:len(nodes)]
                    node_at[mine], gpu_at[mine], placed[mine] = nodes[:len(mine)], gpus[:len(mine)], True
                admits.extend(map(Move, np.asarray(rest, dtype=np.int64)[placed].tolist(), node_at[placed].tolist(),
                                  [(gpu,) for gpu in gpu_at[placed].tolist()]))
        ran = {j: runs[j] for j in (*stay, *(m.task for m in admits))}
        return Plan(kind="round", victims=victims, admits=tuple(admits)), ran
