"""The one round loop of the time engine: round-based schedulers as decisions, carried out by one mechanism.

A round-based scheduler (Gavel's, :class:`fgdopt.hetero.rounds.Gavel`) decides, at the start of every round, which
jobs run in it and on what; everything else is the same for every such scheduler and lives here, in
:class:`RoundLoop`, a mechanism of :func:`fgdopt.timeline.simulate` (``mechanism=RoundLoop(policy, round_s=...)``)
that owns the starts (the engine's own pass is off):

* **The round clock.** The loop asks the engine for an instant at the end of the current round
  (:meth:`RoundLoop.wake_s`) and plans once per round, at that instant or later (an arrival on an idle cluster starts
  a round at once, or, with ``grid``, at the next multiple of ``round_s``); the policy names when the round ends
  (:attr:`Pace.until_s`).
* **The stop rule.** With ``stop_after`` (job indices), once every one of them has left (finished), the round that
  follows stops every running job and no round comes again: the engine has only the remaining arrivals left to
  queue; with ``stop_by_s`` too, the first round after that time stops the run whether or not they have.
* **The diff** from the policy's desired allocation (:class:`Decision`) to what runs now. Given per job its GPU
  type: a job that keeps its type keeps its GPUs, every other running job is preempted (by the loop's
  checkpointing), and the new ones are placed on nodes of their type, largest first, each on the node of that type
  with the fewest free GPUs that holds it whole (ties: the lowest node index; on that node's lowest free GPUs), else,
  with ``span``, over several nodes by Gavel's walk (:func:`spread_parts`). Given per job its node and GPUs (Synergy,
  :class:`fgdopt.synergy.rounds.Synergy`, with the CPU and memory each part holds): a job on exactly those keeps
  them (and runs on holding its new CPU and memory, if they changed), every other running job is preempted and the
  others are placed there. Given per job its GPU count per node (elastic jobs, the loop's ``elastic``:
  Pollux's planners, :class:`fgdopt.elastic.rounds.ElasticRounds`): a running job holding exactly those counts
  keeps its GPUs, a running job given other counts is moved (a re-size: released, then placed), a running job given
  none is preempted, the others are admitted; each moved or admitted job, in the decision's order, takes the lowest
  free GPUs of its nodes once every moved and preempted job has released its own. The result is one bulk
  reallocation, a :class:`~fgdopt.timeline.preemption.RoundPlan` the engine carries out in one pass: every stopped job
  released at once, then every new one placed at once (:meth:`~fgdopt.state.ClusterState.remove_many`,
  :meth:`~fgdopt.state.ClusterState.place_many`, the one feasibility rule), then the speeds the policy set.
* **Speeds within a round.** The policy may also name speeds to set later in the round (:attr:`Pace.later`: a
  restart delay at speed 0, then a job's epochs at their own speeds); the loop asks the engine for an instant at
  each and sets them there (a ``round`` plan of rates only).

A round policy (:class:`RoundPolicy`: Gavel's, :class:`fgdopt.hetero.rounds.Gavel`; Synergy's,
:class:`fgdopt.synergy.rounds.Synergy`; Pollux's planners', :class:`fgdopt.elastic.rounds.ElasticRounds`) only
decides: ``decide(view) -> Decision`` at the start of a round, and ``pace(view, placed) -> Pace`` once the loop has
placed it (the speeds of the round's runs and its end).

**Cost.** A round of Gavel's Figure 8 moves every job whose type changes (the agnostic policies shuffle the type
order every round): at 6 jobs/h about 100 jobs a round are stopped and placed again on the 108 GPUs, at 0.4 jobs/h
the few jobs present, in 10,000 to 125,000 rounds. What a round costs is per-job Python work in the diff and in
the carrying out, and a fixed count of numpy calls on tiny arrays; the plan, in order (what is done is marked):

1. (done) every per-job scalar numpy call off the bulk paths: the state's revision steps are read for all moved jobs
   at once (:meth:`~fgdopt.state.ClusterState.revision_steps`), the nodes' revisions written from one array;
2. (done) each round's :class:`~fgdopt.timeline.preemption.RoundPlan` built and checked once (a :class:`Diff`,
   then the :class:`Pace`'s rates), the moves read once (one ``zip``) by
   :meth:`~fgdopt.timeline.placement.Placer.start_many`, what is fixed per cluster computed once;
3. (not done) the round objects carrying arrays (``Placed.runs``, ``Pace.rates``, the admits as job, node and GPU
   arrays, not Move objects and pairs) and one fused reallocation on the placer and the job table per round
   (release, place, re-rate, progress in one pass); this needs the state's parts kept as arrays, not one tuple
   per job (:mod:`fgdopt.state`), for the per-job work to leave Python.

X is not re-solved for inputs it was solved for: every recomputation follows an arrival or a completion, so its
jobs present differ from every earlier one (jobs never come back), and an exact-input cache could never hit.
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import NamedTuple, Protocol

import numpy as np

from fgdopt.defrag import Move
from fgdopt.model import GPU_MILLI
from fgdopt.timeline.preemption import Checkpointing, GangMove, MechanismBase, RoundPlan, View


class RoundView(NamedTuple):
    """What a round policy reads at the start of a round.

    Attributes
    ----------
    engine : the engine's view (:class:`~fgdopt.timeline.preemption.View`: state, progress, restart cost).
    now : the round's start, s. round_s : the loop's round length, s.
    running : int64, ascending: the jobs of the last round still running. present : int64, ascending: the running
        and the waiting jobs. changed : whether ``present`` differs from the last round's. gone : int64, ascending:
        the jobs present at the last round that have left since (finished).
    type_gpus : per GPU type of the policy's ``gpu_types``, the cluster's GPUs of that type.
    rounds : the rounds so far in which some job ran.
    """

    engine: View
    now: float
    round_s: float
    running: np.ndarray
    present: np.ndarray
    changed: bool
    gone: np.ndarray
    type_gpus: tuple[int, ...]
    rounds: int


@dataclass(frozen=True, eq=False)
class Decision:
    """The jobs that run in the next round, in one of three forms: ``types`` job -> index of its GPU type (in the
    policy's ``gpu_types``), each job getting its ``num_gpu`` whole GPUs of that type where the loop places it (a
    policy that returns the same object again, its choice unchanged, lets the loop reuse its placement while nothing
    moved in the cluster); or ``where`` job -> (node, its GPUs there), or, for a job over several nodes, its parts
    ``((node, gpus), ...)``, placed as given (the one rule decides); or ``parts`` job -> ((node, GPU count), ...) in
    node order, for elastic jobs (the loop's ``elastic``), the loop choosing the GPUs (module docstring). With
    ``where``, ``demands`` job -> ``((cpu_milli, memory_mib), ...)``, one per part, the CPU and memory each part
    holds on its node (:attr:`fgdopt.state.ClusterState.demand_of`; a job absent, or None: its shape's): a running
    job on the same parts with other demands runs on, resized (:attr:`~fgdopt.timeline.preemption.RoundPlan.
    resized`)."""

    types: Mapping[int, int] | None = None
    where: Mapping[int, tuple] | None = None
    parts: Mapping[int, tuple[tuple[int, int], ...]] | None = None
    demands: Mapping[int, tuple[tuple[int, int], ...]] | None = None


class Placed(NamedTuple):
    """Where the loop put a :class:`Decision`: ``runs`` job -> GPU type of every job that runs in the round (by
    ``types``: the ones that keep their GPUs, then the ones admitted, in the order placed, a job that found no room
    left out; by ``where``: in the decision's order, -1 on a node of no type of the policy),
    ``admits`` the placements of the admitted ones (:class:`~fgdopt.defrag.Move`, or
    :class:`~fgdopt.timeline.preemption.GangMove` over several nodes or with its CPU and memory; by ``parts``, the
    moved ones' too), ``gangs`` the jobs of the round whose GPUs span several nodes."""

    runs: dict[int, int]
    admits: tuple
    gangs: frozenset[int]


class Diff(NamedTuple):
    """The reallocation of a placed :class:`Decision` (the fields of its
    :class:`~fgdopt.timeline.preemption.RoundPlan`, built once the policy's :class:`Pace` adds the speeds):
    ``victims`` the running jobs preempted, ``admits`` and ``moves`` the placements of jobs waiting and of running
    ones moved, ``resized`` the running jobs that run on holding other CPU and memory."""

    victims: tuple[int, ...] = ()
    admits: tuple = ()
    moves: tuple = ()
    resized: tuple = ()


class Pace(NamedTuple):
    """The speeds of a placed round and its end: ``until_s`` the time of the next round (s; not after ``now``: at
    the next arrival), ``rates`` (job, speed) pairs, the speeds (work per second) set for the round, in that order
    (the others run at their speed on their GPU type), ``later`` (time, job, speed) triples, speeds set at those
    times (s, after ``now`` and before ``until_s``) of jobs of the round still running then."""

    until_s: float
    rates: tuple[tuple[int, float], ...] = ()
    later: tuple[tuple[float, int, float], ...] = ()


class RoundPolicy(Protocol):
    """What a round policy provides to :class:`RoundLoop` (module docstring). Optional: ``ended(view)``, called (with
    the engine's :class:`~fgdopt.timeline.preemption.View`) at the first instant before the round's end at which
    every job of the round has left and none waits: the round is over early (when no job arrives later, the engine
    stops there); a loop whose policy has it is asked for plans at every instant."""

    name: str
    gpu_types: tuple[str, ...]                       # node ``model`` values, in the order of a Decision's indices

    def decide(self, view: RoundView) -> Decision: ...

    def pace(self, view: RoundView, placed: Placed) -> Pace: ...


@dataclass
class RoundLoop(MechanismBase):
    """The round loop (module docstring): a mechanism of the engine running ``policy``'s decisions.

    Parameters
    ----------
    policy : the round policy (:class:`RoundPolicy`).
    round_s : the round length, seconds (> 0); the policy reads it (:attr:`RoundView.round_s`).
    checkpointing : what a job stopped between rounds keeps (default transparent: it resumes where it stopped).
    stop_after : job indices; once every one has finished the loop stops the run at the next round (every running
        job stopped, none started again; None: never). Nothing before that round changes, so every figure over those
        jobs is the one of a run that went on.
    stop_by_s : with ``stop_after``, also stop at the first round after this time (seconds).
    span : a multi-GPU job that no node of its type holds whole may run over several of them (default False: it
        waits).
    grid : rounds start only at multiples of ``round_s`` (an arrival on an idle cluster waits for the next one;
        default False: it starts a round at once).
    first_s : no round starts before this time (s; default 0).
    elastic : bool per job, the jobs whose GPU count a ``parts`` decision sets (the engine's hook,
        :attr:`fgdopt.state.ClusterState.elastic`; default None: none).

    After a run, ``rounds`` counts the rounds in which some job ran (up to the stop) and ``stopped_s`` is the time
    of the stop (NaN: none).

    Raises
    ------
    ValueError : a round length that is not a finite number > 0; while running, a decision naming an unknown GPU
        type or granting a type more GPUs than it has.
    """

    policy: RoundPolicy
    round_s: float
    checkpointing: Checkpointing = Checkpointing(transparent=True)
    stop_after: np.ndarray | None = None
    stop_by_s: float = math.inf
    span: bool = False
    grid: bool = False
    first_s: float = 0.0
    elastic: np.ndarray | None = None
    owns_starts: bool = True
    rounds: int = 0
    stopped_s: float = math.nan
    _next_s: float = 0.0
    _planned_at: float = -1.0
    _last: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))     # the last round's jobs
    _present: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # the jobs present at it
    _layout: tuple | None = None          # (cluster, type of each node, nodes of each type, GPUs of each type)
    _exists: tuple | None = None          # (cluster, whether each node has each GPU index)
    _cached: tuple | None = None          # (decision, the state's revision, diff, placed): nothing moved since
    _open: bool = False                   # a round with jobs present, not yet ended (for the policy's ``ended``)
    _later: list = field(default_factory=list)   # the round's speeds still to set: (time, job, speed), time order

    def __post_init__(self) -> None:
        if not (math.isfinite(self.round_s) and self.round_s > 0):
            raise ValueError(f"round_s must be a finite number of seconds > 0, got {self.round_s}")
        self.name = self.policy.name
        self.every_instant = hasattr(self.policy, "ended")
        self._next_s = self.first_s
        self._waiting = None if self.stop_after is None else set(np.asarray(self.stop_after, dtype=np.int64).tolist())

    def _types(self, cluster) -> tuple[np.ndarray, list[np.ndarray], tuple[int, ...]]:
        """Per node its type index (-1: not a type of the policy), per type its nodes and GPUs (once per cluster)."""
        if self._layout is None or self._layout[0] is not cluster:
            gpu_types = tuple(self.policy.gpu_types)
            node_type = np.array([gpu_types.index(m) if m in gpu_types else -1 for m in cluster.model])
            nodes = [np.flatnonzero(node_type == g) for g in range(len(gpu_types))]
            self._layout = (cluster, node_type, nodes, tuple(int(cluster.gpu[n].sum()) for n in nodes))
        return self._layout[1:]

    def _gpu_exists(self, cluster) -> np.ndarray:
        """bool (nodes, max GPUs per node): whether each node has that GPU (once per cluster)."""
        if self._exists is None or self._exists[0] is not cluster:
            self._exists = (cluster, np.arange(cluster.max_gpus)[None, :] < cluster.gpu[:, None])
        return self._exists[1]

    def wake_s(self, view: View) -> float:
        """The next speed to set within the round, else the end of the current round (none once it has passed:
        after the stop, or while nothing runs, the next arrival starts a round)."""
        end = self._next_s if self._next_s > view.now else math.inf
        return min(self._later[-1][0], end) if self._later else end

    def _speeds_due(self, now: float) -> RoundPlan | None:
        """The speeds of :attr:`Pace.later` due by ``now``, as a plan (None: none)."""
        later, rates = self._later, []
        while later and later[-1][0] <= now:
            _, j, speed = later.pop()
            rates.append((j, speed))
        return RoundPlan(rates=tuple(rates)) if rates else None

    def plan(self, view: View) -> RoundPlan | None:
        """The next round's plan, at the round's start (else None): the stop, or the policy's decision placed."""
        now = view.now
        if self.grid and now > self._next_s:               # rounds passed with nothing present: the next on the grid
            self._next_s = math.ceil(now / self.round_s) * self.round_s
        if (self._open and now < self._next_s and not len(view.waiting())
                and not (view.state.node_of[self._last] >= 0).any()):
            self._open = False                             # every job of the round has left, none waits: it is over
            self.policy.ended(view)
        if now < self._next_s or now == self._planned_at or not math.isnan(self.stopped_s):
            return self._speeds_due(now) if self._later else None
        self._planned_at = now
        state = view.state
        last = self._last                                  # only this loop places jobs: the jobs running are
        running = np.sort(last[state.node_of[last] >= 0])  # those of the last round still placed
        present = np.sort(np.concatenate((running, view.waiting())))
        changed = not (len(present) == len(self._present) and bool((present == self._present).all()))
        gone = self._present[:0]
        if changed:
            mark = np.zeros(len(state.node_of), dtype=bool)
            mark[present] = True
            gone = self._present[~mark[self._present]]
            self._present = present
        if self._waiting is not None:
            if len(gone):
                self._waiting -= set(gone.tolist())
            if not self._waiting or now > self.stop_by_s:  # all of stop_after finished (or too late): stop the run
                self.stopped_s, self._open = now, False
                self._later = []
                return RoundPlan(victims=tuple(running.tolist()), admits=())
        node_type, of_type, type_gpus = self._types(state.cluster)
        rview = RoundView(view, now, self.round_s, running, present, changed, gone, type_gpus, self.rounds)
        decision = self.policy.decide(rview)
        cached = self._cached
        if decision.where is not None:
            diff, placed = self._as_given(state, running, decision.where, node_type, decision.demands)
        elif decision.parts is not None:
            diff, placed = self._by_count(state, running, decision.parts, node_type)
        elif cached is not None and cached[0] is decision and cached[1] == state.revision:
            diff, placed = cached[2:]                      # the same decision on the same placement: the same diff
        else:
            self._check(decision, state.tasks.num_gpu, type_gpus)
            diff, placed = self._place(state, running, decision.types, node_type, of_type)
            self._cached = (decision, state.revision, diff, placed)
        self.rounds += bool(placed.runs)
        pace = self.policy.pace(rview, placed)
        self._next_s = pace.until_s
        self._last = np.fromiter(placed.runs, np.int64, len(placed.runs))
        self._open = self.every_instant and len(present) > 0
        self._later = sorted(pace.later, reverse=True)     # the next one last
        return RoundPlan(victims=diff.victims, admits=diff.admits, moves=diff.moves, rates=pace.rates,
                         resized=diff.resized)

    def _check(self, decision: Decision, num_gpu: np.ndarray, type_gpus: tuple[int, ...]) -> None:
        """ValueError, one line, unless every job of ``decision`` has a known GPU type and no type is granted more
        GPUs than it has."""
        types, k = decision.types, len(type_gpus)
        js = np.fromiter(types.keys(), np.int64, len(types))
        gs = np.fromiter(types.values(), np.int64, len(types))
        if (bad := np.flatnonzero((gs < 0) | (gs >= k))).size:
            raise ValueError(f"round policy {self.name!r}: job {js[bad[0]]} given GPU type {gs[bad[0]]}, not one of "
                             f"the {k} types")
        granted = np.bincount(gs, weights=num_gpu[js], minlength=k)
        for g, (took, has) in enumerate(zip(granted.tolist(), type_gpus, strict=True)):
            if took > has:
                raise ValueError(f"round policy {self.name!r} grants {int(took)} GPUs of type "
                                 f"{self.policy.gpu_types[g]!r}, which has {has}")

    @staticmethod
    def _as_given(state, running: np.ndarray, where: Mapping[int, tuple], node_type: np.ndarray,
                  demands: Mapping[int, tuple] | None = None) -> tuple[Diff, Placed]:
        """The diff of a decision by node and GPUs: a job already on exactly those keeps them (resized if its
        ``demands`` changed), every other running job is preempted, the others are placed as given (in the
        decision's order; parts over several nodes, or with ``demands``, as a
        :class:`~fgdopt.timeline.preemption.GangMove`)."""
        node_of, gpus_of = state.node_of, state.gpus_of
        stay, admits, runs, gangs, resized = set(), [], {}, set(), []
        for j, at in where.items():
            if demands is not None and (want := demands.get(j)) is not None:    # its CPU and memory chosen
                parts = at if isinstance(at[0], tuple) else (at,)
                node = parts[0][0]
                if len(parts) > 1:
                    gangs.add(j)
                if state.parts(j) != parts:
                    admits.append(GangMove(j, *parts[0], parts, want))
                else:
                    stay.add(j)
                    if state.held_demand(j) != want:
                        resized.append(GangMove(j, *parts[0], parts, want))
            elif isinstance(at[0], tuple):                  # ((node, gpus), ...): over several nodes
                node = at[0][0]
                gangs.add(j)
                if state.parts(j) == at:
                    stay.add(j)
                else:
                    admits.append(GangMove(j, *at[0], at))
            else:
                node = at[0]
                if node_of[j] == node and tuple(gpus_of[j]) == at[1]:
                    stay.add(j)
                else:
                    admits.append(Move(j, *at))
            runs[j] = int(node_type[node])
        victims = tuple(j for j in running.tolist() if j not in stay)
        admits = tuple(admits)
        return (Diff(victims=victims, admits=admits, resized=tuple(resized)),
                Placed(runs, admits, frozenset(gangs)))

    @staticmethod
    def _by_count(state, running: np.ndarray, parts: Mapping[int, tuple[tuple[int, int], ...]],
                  node_type: np.ndarray) -> tuple[Diff, Placed]:
        """The diff of a decision by GPU count per node (module docstring): the moves, preemptions and admits, each
        moved or admitted job on the lowest GPUs of its nodes free once the moved and preempted ones left."""
        node_of, gpu_left = state.node_of, state.gpu_left
        changed = [j for j, want in parts.items()
                   if node_of[j] < 0 or tuple((node, len(gpus)) for node, gpus in state.parts(j)) != want]
        victims = tuple(j for j in running.tolist() if j not in parts)
        free: dict[int, list[int]] = {}                     # node -> its free GPUs, ascending (filled when used)
        for j in (*victims, *(j for j in changed if node_of[j] >= 0)):
            for node, gpus in state.parts(j):
                free.setdefault(node, np.flatnonzero(gpu_left[node] == GPU_MILLI).tolist()).extend(gpus)
        for gpus in free.values():
            gpus.sort()
        moves, admits = [], []
        for j in changed:
            taken = []
            for node, count in parts[j]:
                spare = free.setdefault(node, np.flatnonzero(gpu_left[node] == GPU_MILLI).tolist())
                taken.append((node, tuple(spare[:count])))
                del spare[:count]
            (moves if node_of[j] >= 0 else admits).append(GangMove(j, *taken[0], tuple(taken)))
        runs = {j: int(node_type[want[0][0]]) for j, want in parts.items()}
        gangs = frozenset(j for j, want in parts.items() if len(want) > 1)
        return (Diff(moves=tuple(moves), victims=victims, admits=tuple(admits)),
                Placed(runs, (*moves, *admits), gangs))

    def _free_after(self, state, victims: tuple[int, ...]) -> np.ndarray:
        """bool (nodes, max GPUs per node): the GPUs free once ``victims`` (running jobs) have left."""
        free = (state.gpu_left == GPU_MILLI) & self._gpu_exists(state.cluster)
        if victims and any(len(state.parts_of[v]) > 1 for v in victims):
            held = [part for v in victims for part in state.parts(v)]     # every part of a gang
            free[np.repeat([node for node, _ in held], [len(gpus) for _, gpus in held]),
                 np.fromiter(chain.from_iterable(gpus for _, gpus in held), np.int64)] = True
        elif victims:                                       # one part each: its node and GPUs
            held = [state.gpus_of[v] for v in victims]
            free[np.repeat(state.node_of[list(victims)], [len(gpus) for gpus in held]),
                 np.fromiter(chain.from_iterable(held), np.int64)] = True
        return free

    def _place(self, state, running: np.ndarray, runs: Mapping[int, int], node_type: np.ndarray,
               of_type: list[np.ndarray]) -> tuple[Diff, Placed]:
        """The diff (module docstring): keep the jobs that keep their type on their GPUs, preempt the other running
        jobs, place the new ones; the plan and where the round's jobs run.

        The nodes of a type are kept in buckets by their free GPUs, so a placement costs no scan of the type's
        nodes; the 1-GPU jobs, last, take each type's free GPUs in the rule's order in one step."""
        node_of, num_gpu = state.node_of, state.tasks.num_gpu
        listed = running.tolist()
        stay = {j for j, g in zip(listed, node_type[node_of[running]].tolist(), strict=True) if runs.get(j) == g}
        parts_of = state.parts_of
        gangs = {j for j in stay if len(parts_of[j]) > 1}
        victims = tuple(j for j in listed if j not in stay)
        new = np.fromiter((j for j in runs if j not in stay), np.int64)
        new = new[np.lexsort((new, -num_gpu[new]))].tolist()           # largest first, then by index
        admits = []
        if new:
            free = self._free_after(state, victims)
            counts = free.sum(axis=1)
            buckets: dict[int, list[list[int]]] = {}        # type -> free GPUs -> its nodes, ascending
            gpus_free: dict[int, list[int]] = {}            # node -> its free GPUs, ascending (filled when used)
            needs = num_gpu[new].tolist()
            singles = needs.index(1) if needs[-1] == 1 else len(new)      # from here on, 1-GPU jobs only
            if singles:                                     # the larger jobs walk the nodes as lists
                count, free_rows = counts.tolist(), free.tolist()
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
                        gangs.add(j)
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
        admits = tuple(admits)
        return Diff(victims=victims, admits=admits), Placed(ran, admits, frozenset(gangs))


def spread_parts(nodes, free_gpus: Callable[[int], list[int]],
                 need: int) -> tuple[tuple[int, tuple[int, ...]], ...] | None:
    """Gavel's ``_assign_workers_to_job`` walk: the first ``need`` free GPUs of ``nodes`` in their order, lowest GPU
    id first, as ``((node, gpus), ...)`` (None, and nothing taken, when they hold fewer than ``need``).

    ``free_gpus(node)`` is the node's list of free GPU ids, ascending; the GPUs returned are removed from it.

    Examples
    --------
    >>> free = {0: [1], 1: [], 2: [0, 1, 2]}
    >>> spread_parts([0, 1, 2], free.__getitem__, 3), free
    (((0, (1,)), (2, (0, 1))), {0: [], 1: [], 2: [2]})
    >>> spread_parts([0, 1, 2], free.__getitem__, 2) is None
    True
    """
    lists = [(node, free_gpus(node)) for node in nodes]
    if sum(len(gpus) for _, gpus in lists) < need:
        return None
    parts = []
    for node, gpus in lists:
        if need == 0:
            break
        if gpus:
            take = gpus[:need]
            del gpus[:need]
            parts.append((int(node), tuple(take)))
            need -= len(take)
    return tuple(parts)
