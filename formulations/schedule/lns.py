"""Large-neighbourhood search over a schedule: re-optimize windows with the exact model, keep what lowers the wait.

A *window* of a schedule (:class:`~fgdopt.timeline.schedule.Schedule` of the offline problem) is a time interval x
a node subset. Its *free* jobs are the jobs placed on those nodes that start in the interval; every other job keeps
its start, node and GPUs. The free jobs are re-scheduled on the window's nodes by the exact CP-SAT model
(:func:`formulations.schedule.exact.solve_exact`, its ``fixed`` jobs) around the window's *fixed* jobs: every other
job on those nodes that ends after the earliest free submission (the jobs that end before it cannot meet a free
job). Jobs on other nodes are untouched, and a job runs on one node, so the feasibility rule holds wherever it held
before. The model minimizes the sum of ends, i.e. the free jobs' total wait (the fixed jobs' ends are constants),
and the rest of the schedule does not change: the whole schedule's total wait falls by what the window gains.

Time grid. When the free jobs' submissions, the window's durations and the current starts of its jobs are all whole
multiples of one of the exact model's units (:func:`formulations.schedule.exact.time_unit`: 1, 0.1, 0.01 or
0.001 s; whole seconds for generated instances and the engine's runs on them), the model counts that unit and
states every time exactly (no padding: a grid schedule is the real one, and by the exact model's left-shift
argument nothing is lost by starting on the grid). Otherwise the model counts whole units ``u`` of
:data:`GRID_S` seconds, and the window is stated on that grid so
that a grid schedule gives a feasible real one. A fixed job occupies ``[a, b) = [round(start / u), round(end /
u))``: rounding is monotone, so fixed jobs that do not overlap in real time do not overlap on the grid, and its
real interval lies in ``[(a - 1/2) u, (b + 1/2) u)``. A free job gets the grid submission ``ceil(submit / u) - 1``
and duration ``D = ceil(duration / u) + 2``; at grid start ``S`` it really starts at ``(S + 1) u`` (at or after its
submission) and ends by ``(S + D - 1) u``. So two free jobs apart on the grid are apart in real time (real
intervals inside grid ones), and a free job before a fixed one (``S + D <= a``) ends by ``(a - 1) u``, before the
fixed job's real start, and after it (``b <= S``) starts at ``(b + 1) u``, after its real end. The padding costs at
most three units of wait per free job (the window's optimum is the grid's).

Choice of windows (seeded :class:`numpy.random.Generator`): a *focus* job drawn among the waiting jobs with
probability proportional to its wait; the interval from its submission to its start; the nodes: the focus job's
node and, among the nodes that can hold it when empty, those on which the most candidate jobs start (where the
capacity the focus job waited for went; ties at random), up to ``nodes`` in all. The free jobs, by neighbourhood:
``starts`` (the default): the ``max_jobs`` jobs starting on these nodes in the interval whose starts are nearest
the focus job's (the focus job among them). ``holds``: the nodes that can hold the focus job come first, then, up
to ``nodes``, the others with the least GPU time (milli-GPU x seconds) in use during the interval (where the jobs
in the way can go); the candidates are the jobs that *run* on these nodes during the interval (those started
before the focus job's submission included), and every job that ran on them from the earliest start among those
until the focus job's start; the free jobs are the focus job and the ``max_jobs - 1`` candidates that overlap the
interval longest. ``starts`` never moves a job that already held a node when the focus job arrived; ``holds``
does: a long whole-node job started at once can be delayed so that the whole-node jobs behind it run first, and
small jobs moved, in a chain, off the node the focus job waits for onto smaller nodes. Measured (``medium-time``
family, 4 nodes of 8, 8, 2, 2 GPUs, 16-24 jobs, from the best engine run): ``holds`` with 5 nodes and 20 jobs
reaches the optimum CP-SAT proves on every such instance tried (46.83, 21.69 and 15.10 s, from 76.88, 29.44 and
21.70), where ``starts`` gains nothing. Gangs are never free; a schedule with gangs is returned unchanged.

Acceptance: a window's schedule is kept if it lowers the total wait by more than :data:`MIN_GAIN_S` seconds and
the jobs of its nodes pass :func:`~fgdopt.timeline.schedule.validate_schedule` with their real times (the other
nodes did not change). The final schedule is replayed on the whole cluster; if that raised, the input would be
returned. So :func:`improve` never returns a worse or an infeasible schedule.

Determinism: CP-SAT runs with one worker, the seed and a deterministic time per window
(``max_deterministic_time``); the search stops after ``windows`` windows or once the deterministic time used,
summed over the windows (each counted at least :data:`WINDOW_CHARGE_S`), reaches ``budget_s``. Both are
independent of the machine's load, so a seed gives one result (``wall_s``, a safety stop on wall seconds, is the
exception: it binds only when given and reached).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fgdopt.model import Cluster
from fgdopt.state import ClusterState, InfeasiblePlacement
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import Schedule, objective_value, rejected_jobs, validate_schedule
from formulations.schedule.exact import RangeError, solve_exact, time_unit

GRID_S = 0.001
"""The window model's time unit (seconds): a millisecond, the finest the exact model counts."""
MIN_GAIN_S = 1e-6
"""A window's schedule is kept if it lowers the total wait (seconds, summed over jobs) by more than this."""
WINDOW_CHARGE_S = 0.1
"""The least a window counts against the budget (deterministic seconds): about the wall time of building and
checking one window's model, so that windows CP-SAT settles at once still use the budget up."""
NEIGHBOURHOODS = ("starts", "holds")
"""The window kinds of :func:`improve` (module docstring, choice of windows)."""
NO_WALL_LIMIT_S = 1e9
"""The exact model's wall limit per window: none in practice (its deterministic time binds)."""


@dataclass(frozen=True, eq=False)
class LnsResult:
    """What :func:`improve` did.

    Attributes
    ----------
    schedule : the best schedule found (the input if nothing was kept), validated by replay.
    windows : windows solved. accepted : windows whose schedule was kept.
    wait_before_s, wait_after_s : mean wait of the admitted jobs before and after (seconds).
    deterministic_s : CP-SAT deterministic time summed over the windows. wall_s, cpu_s : of the whole search.
    """

    schedule: Schedule
    windows: int
    accepted: int
    wait_before_s: float
    wait_after_s: float
    deterministic_s: float
    wall_s: float
    cpu_s: float


def improve(cluster: Cluster, jobs: JobSet, schedule: Schedule, *, budget_s: float, seed: int = 0,
            windows: int | None = None, nodes: int = 3, max_jobs: int = 12, window_s: float = 0.5,
            wall_s: float | None = None, neighbourhood: str = "starts") -> LnsResult:
    """Improve ``schedule`` (feasible, validated here) by re-optimizing windows (module docstring).

    Parameters
    ----------
    budget_s : CP-SAT deterministic seconds summed over the windows (> 0).
    seed : the windows' draws and CP-SAT's ``random_seed``.
    windows : at most this many windows (None: no cap).
    nodes : nodes per window. max_jobs : free jobs per window.
    window_s : CP-SAT deterministic seconds per window.
    wall_s : stop starting windows after this many wall seconds (None: no wall stop; determinism only holds if it
        does not bind).
    neighbourhood : ``"starts"`` (the jobs that start while the focus job waits) or ``"holds"`` (the jobs that run
        while it waits, those that started before its submission included), :data:`NEIGHBOURHOODS`.

    Raises
    ------
    ValueError : ``budget_s`` or ``window_s`` not positive, ``nodes`` or ``max_jobs`` below 1.
    fgdopt.state.InfeasiblePlacement : ``schedule`` is not feasible.
    """
    if neighbourhood not in NEIGHBOURHOODS:
        raise ValueError(f"unknown neighbourhood {neighbourhood!r}; choose one of {', '.join(NEIGHBOURHOODS)}")
    if not (budget_s > 0 and window_s > 0 and nodes >= 1 and max_jobs >= 1):
        raise ValueError(f"LNS needs budget_s > 0 and window_s > 0 (got {budget_s}, {window_s}), nodes and "
                         f"max_jobs >= 1 (got {nodes}, {max_jobs})")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    validate_schedule(cluster, jobs, schedule)
    before = objective_value(jobs, schedule, "mean-wait")
    if jobs.tasks.has_gangs or not schedule.started.any():
        return LnsResult(schedule, 0, 0, before, before, 0.0, time.perf_counter() - wall0, time.process_time() - cpu0)
    rng = np.random.default_rng(seed)
    start, node, gpus = schedule.start_s.copy(), schedule.node.copy(), list(schedule.gpus)
    empty = ClusterState(cluster, jobs.tasks)
    used = 0.0
    solved = accepted = 0
    while used < budget_s and (windows is None or solved < windows):
        if wall_s is not None and time.perf_counter() - wall0 > wall_s:
            break
        wait = np.where(node >= 0, start - jobs.submit_s, 0.0)
        if not (wait > MIN_GAIN_S).any():
            break
        focus = int(rng.choice(len(jobs), p=wait / wait.sum()))
        window = _window(empty, jobs, start, node, focus, nodes, max_jobs, rng, neighbourhood == "holds")
        solved += 1
        try:
            run = _solve(cluster, jobs, start, node, gpus, window, seed, min(window_s, budget_s - used))
        except RangeError:                              # times too far apart for the model's integers: kept as is
            used += WINDOW_CHARGE_S
            continue
        used += max(run.info["deterministic_s"], WINDOW_CHARGE_S)
        if run.schedule is None:
            continue
        new = _accept(cluster, jobs, start, node, gpus, window, run.schedule)
        if new is not None:
            start, node, gpus = new
            accepted += 1
    best = Schedule(start, node, tuple(gpus))
    try:
        validate_schedule(cluster, jobs, best)
    except InfeasiblePlacement:                          # cannot happen (every window was replayed): keep the input
        best = schedule
    return LnsResult(best, solved, accepted, before, objective_value(jobs, best, "mean-wait"), used,
                     time.perf_counter() - wall0, time.process_time() - cpu0)


@dataclass(frozen=True)
class _Window:
    """A window: its nodes (cluster indices), free and fixed jobs (job indices, sorted), its grid unit (seconds)
    and padding (units; module docstring, time grid)."""

    nodes: np.ndarray
    free: np.ndarray
    fixed: np.ndarray
    unit: float
    pad: int


def _window(empty: ClusterState, jobs: JobSet, start: np.ndarray, node: np.ndarray, focus: int, size: int,
            max_jobs: int, rng: np.random.Generator, holds: bool = False) -> _Window:
    """The window around waiting job ``focus`` (module docstring); ``holds``: the candidates are the jobs running
    while it waits, not only those starting then."""
    lo, hi = float(jobs.submit_s[focus]), float(start[focus])
    single = node >= 0                                 # (no gangs: improve returns them as they are)
    inside = single & (start <= hi) & ((start + jobs.duration_s > lo) if holds else (start >= lo))
    starts = np.bincount(node[inside], minlength=empty.cluster.n_nodes).astype(np.float64)
    holders = np.flatnonzero(empty.feasible_nodes(jobs.tasks[focus]))
    holders = holders[holders != node[focus]]
    ranked = holders[np.lexsort((rng.random(len(holders)), -starts[holders]))]
    if holds:                                          # then the nodes with the least GPU time in use while it waits
        rest = np.setdiff1d(np.arange(empty.cluster.n_nodes), np.concatenate([holders, [node[focus]]]))
        run = single & (start < hi) & (start + jobs.duration_s > lo)
        held = np.minimum(start + jobs.duration_s, hi) - np.maximum(start, lo)
        busy = np.bincount(node[run], weights=(held * jobs.tasks.gpu_demand)[run], minlength=empty.cluster.n_nodes)
        ranked = np.concatenate([ranked, rest[np.lexsort((rng.random(len(rest)), busy[rest]))]])
    chosen = np.sort(np.concatenate([[node[focus]], ranked[:size - 1]])).astype(np.int64)
    cand = np.flatnonzero(inside & np.isin(node, chosen))
    if holds and len(cand):                            # and what ran on these nodes since the first of them began
        reach = float(start[cand].min())
        cand = np.flatnonzero(single & np.isin(node, chosen) & (start <= hi) & (start + jobs.duration_s > reach))
    if holds:                          # the jobs holding the most of the wait first, the focus job before all
        cover = np.minimum(start[cand] + jobs.duration_s[cand], hi) - np.maximum(start[cand], lo)
        key = np.where(cand == focus, -np.inf, -cover)
    else:
        key = np.abs(start[cand] - hi)
    cand = cand[np.lexsort((cand, key))][:max_jobs]
    free = np.sort(cand)
    earliest = float(jobs.submit_s[free].min())
    others = np.isin(node, chosen) & (start + jobs.duration_s > earliest)
    others[free] = False
    fixed = np.flatnonzero(others)
    rows = np.concatenate([free, fixed])
    try:                                               # every time of the window whole units: no padding
        unit, pad = time_unit(np.concatenate([jobs.submit_s[free], jobs.duration_s[rows], start[rows]])), 0
    except ValueError:
        unit, pad = GRID_S, 1
    return _Window(chosen, free, fixed, unit, pad)


def _solve(cluster: Cluster, jobs: JobSet, start: np.ndarray, node: np.ndarray, gpus: list, window: _Window,
           seed: int, deterministic_s: float):
    """The exact model of ``window`` on the grid (module docstring), warm-started from the current schedule when
    that is feasible on the grid. Returns the :class:`~formulations.schedule.exact.ExactRun` (grid units)."""
    rows = np.concatenate([window.free, window.fixed])
    n_free = len(window.free)
    local = np.full(cluster.n_nodes, -1, dtype=np.int64)
    local[window.nodes] = np.arange(len(window.nodes))
    r, p, s = jobs.submit_s[rows], jobs.duration_s[rows], start[rows]
    is_free = np.arange(len(rows)) < n_free
    origin = _origin(jobs, start, window)
    u, pad = window.unit, window.pad
    submit = np.where(is_free, np.ceil(r / u) - pad, np.round(s / u)) - origin
    end = np.where(is_free, submit + np.ceil(p / u) + 2 * pad, np.round((s + p) / u) - origin)
    sub = JobSet(jobs.tasks.take(rows), submit, end - submit)
    fixed_start = np.where(is_free, np.nan, submit)
    sub_gpus = tuple(gpus[j] for j in rows)
    fixed = Schedule(fixed_start, np.where(np.isnan(fixed_start), -1, local[node[rows]]),
                     tuple(g if i >= n_free else () for i, g in enumerate(sub_gpus)))
    sub_cluster = cluster.subset(window.nodes)
    hint = Schedule(np.where(is_free, np.ceil(s / u) - pad - origin, submit), local[node[rows]], sub_gpus)
    guide = cap = None
    try:
        validate_schedule(sub_cluster, sub, hint)
    except InfeasiblePlacement:                          # the grid's padding made the current schedule overlap
        hint, guide, cap = None, hint, objective_value(sub, hint, "mean-jct")    # only a better window is sought
    return solve_exact(sub_cluster, sub, "mean-jct", time_limit=NO_WALL_LIMIT_S, hint=hint, threads=1, seed=seed,
                       deterministic_time=deterministic_s, fixed=fixed, guide=guide, cap=cap)


def _origin(jobs: JobSet, start: np.ndarray, window: _Window) -> float:
    """The window's grid origin (units): every grid time of the window is at least 0 after subtracting it."""
    first = min(float(jobs.submit_s[window.free].min()), float(start[window.fixed].min(initial=np.inf)))
    return float(np.floor(first / window.unit) - 2)


def _accept(cluster: Cluster, jobs: JobSet, start: np.ndarray, node: np.ndarray, gpus: list, window: _Window,
            grid: Schedule) -> tuple[np.ndarray, np.ndarray, list] | None:
    """The current schedule with the window's free jobs as in ``grid`` if that lowers the total wait and the
    window's nodes replay feasibly with real times; else None."""
    free = window.free
    k = len(free)
    new_start = np.maximum((grid.start_s[:k] + _origin(jobs, start, window) + window.pad) * window.unit,
                           jobs.submit_s[free])
    if float((start[free] - new_start).sum()) <= MIN_GAIN_S:
        return None
    rows = np.concatenate([free, window.fixed])
    local = np.full(cluster.n_nodes, -1, dtype=np.int64)
    local[window.nodes] = np.arange(len(window.nodes))
    real = Schedule(np.concatenate([new_start, start[window.fixed]]),
                    np.concatenate([grid.node[:k], local[node[window.fixed]]]),
                    (*grid.gpus[:k], *(gpus[j] for j in window.fixed)))
    sub_cluster = cluster.subset(window.nodes)
    sub = jobs.take(rows)
    if rejected_jobs(sub_cluster, sub).any():
        return None
    try:
        validate_schedule(sub_cluster, sub, real)
    except InfeasiblePlacement:
        return None
    start, node, gpus = start.copy(), node.copy(), list(gpus)
    start[free] = new_start
    node[free] = window.nodes[grid.node[:k]]
    for i, j in enumerate(free.tolist()):
        gpus[j] = grid.gpus[i]
    return start, node, gpus


def lns_recipe(method: str, neighbourhood: str = "starts") -> str:
    """The name of an LNS run started from the run ``method``: ``lns(method)``, or ``lns-holds(method)`` with the
    ``holds`` windows."""
    return f"lns({method})" if neighbourhood == "starts" else f"lns-{neighbourhood}({method})"

