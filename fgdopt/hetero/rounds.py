"""Gavel's round policy on the time engine: realize an allocation X (jobs x GPU types) round by round.

:class:`Gavel` decides each round of the engine's round loop (:class:`fgdopt.timeline.rounds.RoundLoop`, which owns
the round clock, the stop rule and the placement of a decision: ``simulate(..., mechanism=RoundLoop(Gavel(...),
round_s=ROUND_S))``); it chooses each round's jobs and their GPU types, and the speeds and end of the round. It
follows Gavel's simulator (``scheduler/scheduler.py`` of ``stanford-futuredata/gavel`` at commit ``c4fa4009``:
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
  :class:`Gavel`.)
* **Priorities.** Since the last recomputation, job ``i`` has run ``t[i, j]`` seconds on type ``j`` (starting from
  half a round, Gavel's initial value) and type ``j`` has ``W[j]`` seconds in all (the half rounds of the jobs
  present at the recomputation, plus every run). Priority ``X[i, j] / (t[i, j] / W[j])`` (``1e9 X`` while ``W[j]``
  is 0; 0 where X is 0 or the job does not run on ``j``). Ties are broken by the *deficit* (the time a job should
  have received under the previous X minus what it did, summed over recomputations), then by X.
* **Choice.** Type by type (``gpu_types`` order for the heterogeneity-aware policies; shuffled every round by
  ``random.Random(seed + 5)`` for the agnostic ones, as Gavel does), the type's jobs by decreasing (priority,
  deficit, X), a job takes the type when it has no type yet, runs there and its scale factor fits the type's GPUs
  left. A job not in X consumes its GPUs without running (as in Gavel).
* **Placement** is the loop's (:mod:`fgdopt.timeline.rounds`): a job that keeps its type keeps its GPUs; every
  other running job is preempted (transparently by default: Gavel's simulator charges nothing) and the new ones are
  placed on nodes of their type, largest first, each on the node of that type with the fewest free GPUs that holds
  it whole (the one feasibility rule), else, with the loop's ``span``, over several nodes by Gavel's walk
  (:mod:`fgdopt.hetero.gang`), at its ``spread_speed``.

Nothing here solves: ``allocate`` is given (``formulations.hetero.round_allocator`` builds one from Gavel's LPs).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from fgdopt.timeline.preemption import GangMove
from fgdopt.timeline.rounds import Decision, Pace, Placed, RoundView

ROUND_S = 360.0
"""Gavel's default round length (``time_per_iteration``), seconds."""
RESET_S = 1920.0
"""Gavel's ``minimum_time_between_allocation_resets``, seconds."""

Allocator = Callable[[np.ndarray, "Moment"], np.ndarray]
"""``allocate(jobs, view) -> X``: X (len(jobs), len(gpu_types)), fractions of time, for the jobs present."""


@dataclass(frozen=True)
class Moment:
    """What ``allocate`` reads of the engine's view, kept from the instant of a recomputation (X is solved later,
    when read: :class:`Gavel`): ``now`` (s) and ``work_of`` of the jobs present then (s of work)."""

    now: float
    present: np.ndarray
    work: np.ndarray

    def work_of(self, js: np.ndarray) -> np.ndarray:
        """Each job's progress at ``now`` (jobs of ``present`` only), seconds of work at speed 1."""
        return self.work[np.searchsorted(self.present, js)]


@dataclass
class Gavel:
    """Gavel's round policy (module docstring): the decisions of a :class:`~fgdopt.timeline.rounds.RoundLoop`.

    Parameters
    ----------
    allocate : X for the jobs present (:data:`Allocator`); columns in the order of ``gpu_types``.
    speed : ``{gpu type: float (n,)}``, every job's speed per type (as given to ``simulate``; 0: does not run).
    duration_s : float (n,), every job's work in seconds at speed 1 (the run's ``JobSet.duration_s``).
    gpu_types : the cluster's GPU types (node ``model`` values) in X's column order.
    shuffle_seed : None keeps ``gpu_types`` order every round (Gavel's ``*_Perf`` policies); an int shuffles it
        every round with ``random.Random(shuffle_seed)`` (Gavel: ``seed + 5``, for the agnostic policies).
    reset_s : seconds (:data:`RESET_S`). The round length is the loop's (:data:`ROUND_S` is Gavel's).
    name : the policy's name in results.
    spread_speed : ``{gpu type: float (n,)}``, every job's speed per type when its GPUs span nodes
        (:func:`fgdopt.hetero.gang.spread_speeds`: Gavel's unconsolidated throughputs); None (default): its ``speed``
        there too, as Gavel's simulator runs it.
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

    After a run, ``solves`` counts the recomputations of X (Gavel's) and ``lps`` the ones actually solved.
    """

    allocate: Allocator
    speed: Mapping[str, np.ndarray]
    duration_s: np.ndarray
    gpu_types: tuple[str, ...]
    shuffle_seed: int | None = None
    reset_s: float = RESET_S
    name: str = "gavel"
    spread_speed: Mapping[str, np.ndarray] | None = None
    step_rate: np.ndarray | None = None
    solves: int = 0
    lps: int = 0
    _stale: bool = False
    _last_reset: float = 0.0
    _w: np.ndarray | None = None                        # seconds per type since the reset
    _ran: tuple = (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)   # the last round's jobs, types, and run s at its
    #                                                     start (with step_rate: the seconds its steps take)
    _shuffler: random.Random | None = None
    _current: list | None = None                        # the last recomputation: [its Moment, its X or None]
    _prune_at: int = 64                                 # the length of _owed at which it is pruned next
    _choices: dict = field(default_factory=dict)        # type order -> the choice made without reading a priority
    _decided: tuple | None = None                       # (the last choice, solves, its Decision): reused while both
    #                                                     are unchanged, so that the loop reuses its placement
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
        if self.shuffle_seed is not None:
            self._shuffler = random.Random(self.shuffle_seed)

    def decide(self, view: RoundView) -> Decision:
        """The round's choice (module docstring: priorities and choice), after booking the round that ended and the
        jobs that came and went, and recomputing X when due."""
        now, ids, state = view.now, view.present, view.engine.state
        t, known = self._t, self._known
        js, gs, ran = self._ran                            # the runs of the round that ended and the seconds
        if len(js):                                        # each received: its run's, or its steps' time
            if self.step_rate is None:
                ran = view.engine.run_of(js) - ran
            mine = known[js]
            t[js[mine], gs[mine]] += ran[mine]             # one run per job
            np.add.at(self._w, gs, ran)                    # added one by one, in the runs' order
        if view.changed:                                   # completions (Gavel's remove_job) and arrivals (add_job)
            gone = view.gone
            arrived = ids[~known[ids]]
            t[arrived] = view.round_s / 2
            known[arrived] = True
            known[gone], self._in_x[gone] = False, False
            self._x[gone], self._deficit[gone] = 0.0, 0.0
            self._stale |= bool(len(arrived) or len(gone))
            self._choices = {}                             # the uncontended choices were for other jobs
        if self._stale and len(ids) and (self._reset_allowed(now) or self._last_reset == 0):
            self._reset(now, ids, view)
        chosen = self._choose(ids, state.tasks.num_gpu, view.type_gpus)
        decided = self._decided
        if decided is not None and decided[0] is chosen and decided[1] == self.solves:
            return decided[2]                              # the same choice of the same X's jobs
        in_x = self._in_x                                  # a job not in X takes GPUs but does not run
        decision = Decision({j: g for j, g in chosen.items() if in_x[j]})
        self._decided = (chosen, self.solves, decision)
        return decision

    def pace(self, view: RoundView, placed: Placed) -> Pace:
        """The round's speeds and end (module docstring: rounds; the ends of its runs, in whole steps or not)."""
        now, runs = view.now, placed.runs
        js, gs = np.fromiter(runs, np.int64, len(runs)), np.fromiter(runs.values(), np.int64, len(runs))
        rates: tuple = ()
        if runs:                                           # the round ends when its last run ends
            cost = np.zeros(len(js))
            fresh = np.zeros(len(js), dtype=bool)         # the runs that start now (the others continue)
            if placed.admits:
                need = view.engine.state.tasks.num_gpu[js]
                fresh = self._mark([m.task for m in placed.admits])[js]
                for k in sorted(set(need[fresh].tolist())):  # the restart cost by GPU count, asked once per count
                    cost[fresh & (need == k)] = view.engine.restart_s(int(k))
            left = np.maximum(self.duration_s[js] - view.engine.work_of(js), 0.0)   # seconds of work left, at speed 1
            thr = self._thr[js, gs]
            gangs = placed.gangs if self._spread is not None else ()
            if gangs and (spread := [k for k, j in enumerate(runs) if j in gangs]):
                thr[spread] = self._spread[js[spread], gs[spread]]          # jobs over several nodes
                new = {m.task for m in placed.admits if isinstance(m, GangMove)}    # a kept one keeps its rate
                rates = tuple((int(js[k]), float(thr[k])) for k in spread if js[k] in new)
            if self.step_rate is not None:                 # Gavel's whole steps (module docstring)
                rates, took = self._whole_steps(view.round_s, js, thr, left, cost, fresh)
                self._ran = (js, gs, took)
                return Pace(float((now + took + cost).max()), rates)
            until = float((now + np.minimum(view.round_s, left / thr + cost)).max())
        else:                                              # waiting jobs not yet in X: the next recomputation
            until = self._reset_due() if len(view.present) else now
        self._ran = (js, gs, view.engine.run_of(js))
        return Pace(until, rates)

    def _whole_steps(self, round_s: float, js: np.ndarray, thr: np.ndarray, left: np.ndarray, cost: np.ndarray,
                     fresh: np.ndarray) -> tuple[tuple, np.ndarray]:
        """The round's runs in whole steps: the (job, speed) pairs of every run that starts now (``fresh``) or
        continues at another speed than in the last round (its speed for the round; these alone), and the seconds
        each run's steps take (its time received).

        A run at speed ``thr`` does ``int(step_rate x thr x round_s)`` steps, or all that are left when no more
        (Gavel's ``min(num_steps, remaining)``), taking ``steps / (step_rate x thr)`` seconds; the round lasts as
        long as its longest run (plus its restart cost); a job that does not finish runs at the speed that brings
        its work to exactly its steps by the round's end."""
        rate = self.step_rate[js] * thr                   # steps per second
        steps = np.floor(rate * round_s)
        last = left * self.step_rate[js] <= steps          # its remaining steps fit: it finishes in this round
        took = np.where(last, left / thr, steps / rate)
        span = float((took + cost).max()) - cost           # each run's seconds from its start to the round's end
        speed = np.where(last | (took >= span), thr, steps / self.step_rate[js] / np.where(span > 0, span, 1.0))
        new = fresh | (speed != self._speed[js])           # a run that continues at its speed needs no re-rate
        self._speed[js] = speed
        return tuple(zip(js[new].tolist(), speed[new].tolist(), strict=True)), took

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

    def _reset(self, now: float, present: np.ndarray, view: RoundView) -> None:
        """Gavel's ``_reset_time_run_so_far`` then ``_compute_allocation``, X recorded to be solved when read."""
        elapsed, half = now - self._last_reset, view.round_s / 2
        # per job: the deficit gains what X gave it (0 if not in X) minus what it ran (added when X is read)
        if len(self._owed) >= self._prune_at:               # now and then: forget the terms of jobs all gone
            self._owed = [term for term in self._owed if self._known[term[1]].any()]
            self._prune_at = max(64, 2 * len(self._owed))
        if self._current is not None:                       # (before the first, no job has run: nothing owed)
            self._owed.append((self._current, present, elapsed, self._t[present] - half))
        self._t[present] = half
        # W: a half round per job, added one by one (a cumulative sum adds in that order)
        self._w[:] = np.full(len(present), half).cumsum()[-1] if len(present) else 0.0
        self._current = [Moment(now, present, view.engine.work_of(present)), None]
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

    def _choose(self, ids: np.ndarray, scale: np.ndarray, type_gpus) -> dict[int, int]:
        """Job -> GPU type index for the next round (module docstring: priorities and choice); ``type_gpus`` the
        cluster's GPUs of each type."""
        k = len(self.gpu_types)
        left = list(type_gpus)
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

