"""The exact model of the offline scheduling problem (:mod:`fgdopt.timeline.schedule`): CP-SAT.

Time. The model counts time in an integer *unit* ``u``: the largest of 1, 0.1, 0.01 and 0.001 s of which every
submission time and duration of the admitted jobs is a whole multiple (to 1e-6 of a unit); a job set with a
time finer than a millisecond is refused (``ValueError``), never rounded, so the model's optimum is the optimum of
the stated problem. Starts are then whole units too: it loses nothing, since in a schedule of integer
submissions and durations every start can be moved left to a submission or a finish time without delaying any
job (the left-shift argument), and those are whole units.

Variables. Per admitted job ``j``: its start ``S_j`` (units, ``>= r_j``, its submission) and end ``E_j = S_j +
p_j``; per node ``n`` that fits ``j`` when empty, a literal ``x_jn`` with an optional interval
``[S_j, E_j)`` present iff ``x_jn``, and ``sum_n x_jn = 1``; per GPU job, per such node and GPU ``g``, a literal
``y_jng`` with its optional interval, ``sum_g y_jng = num_gpu_j x_jn``.

Gangs (``workers = w > 1``). Per node ``n`` that one part fits when empty, an integer ``c_jn`` in ``0..min(w,
parts the empty node holds)`` (how many parts go there) with ``x_jn`` present iff ``c_jn >= 1``, and ``sum_n c_jn =
w``; the node's interval has CPU and memory demands ``c_jn`` times a part's. A whole-GPU part: ``sum_g y_jng =
num_gpu c_jn``. A sharing part: per GPU an integer ``k_jng`` in ``0..floor(1000 / gpu_milli)`` of parts on it, its
interval present iff ``y_jng`` (``k_jng >= 1``), its demand ``k_jng gpu_milli``, and ``sum_g k_jng = c_jn``. Every
part holds its interval ``[S_j, E_j)``: all parts start and end together.

Zero-duration jobs. Such a job finishes at its start instant in a further instant at the same time (SPEC "Time",
:func:`fgdopt.timeline.schedule.validate_schedule`): it needs room beside the jobs running across its instant
(``S_i < S_j < E_i``), not beside those ending or starting then, nor beside another zero-duration job. With ``Z``
of them, numbered ``z = 1..Z``, the intervals of the resource constraints lie on the time grid scaled by ``Z + 1``:
a job of ``p > 0`` holds ``[(Z + 1) S + Z, (Z + 1) E)``, the ``z``-th zero-duration job ``[(Z + 1) S + z - 1,
(Z + 1) S + z)``; two of the former overlap exactly when their ``[S, E)`` do, the ``z``-th overlaps one of the
former exactly when ``S_i < S_z < E_i``, and two of the latter never. Without them (``Z = 0``) every interval is
``[S, E)``.

Constraints. Per node a cumulative of CPU (milli-cores) and one of memory (MiB) over its ``x`` intervals (left out
where its candidate jobs' whole demand fits); per GPU a cumulative of milli-GPU with capacity 1000 over its ``y``
intervals (a no-overlap where all its candidates ask 1000). So a whole-GPU job (1000 per GPU) only runs on wholly
free GPUs, and a sharing job shares a GPU with jobs whose milli-GPU adds up to at most 1000. ``gpu_spec`` is
in the candidate nodes. Redundant: a cumulative of all jobs' GPU demand and one of their CPU over the pooled
capacity (they cut nothing feasible; they give the search a bound).

Symmetry (each rule keeps at least one optimal schedule, see :func:`_sorted_labels`): nodes of one type
(same CPU, memory, GPU count and model) are interchangeable, so they are ordered by the index of the first job
each holds: job ``j`` may take the type's ``i``-th node only if a job of index ``<= j`` holds its ``(i-1)``-th.
Likewise the GPUs of a node are ordered by the first job that uses each.

Horizon. There is an optimal schedule (for both objectives) in which, after the last submission, the cluster is
never empty until the last finish (otherwise shift everything after the gap left), so every end is at most
``max r + sum p``. With a hint schedule of objective value ``V`` (validated first): for ``makespan`` every end is
at most ``V``; for ``mean-jct`` (total ``T = n V``) ``E_j - r_j <= T - sum_{i != j} p_i``, since every other job's
JCT is at least its duration. The hint (the best engine run, node and GPU labels re-sorted to the symmetry rule) is
given to CP-SAT, and if CP-SAT returns no schedule it is the incumbent.

Fixed jobs (a neighbourhood of a schedule, :mod:`formulations.schedule.lns`). The jobs that ``fixed`` (a partial
schedule) starts keep its start, node and GPUs: their start is a constant, their only node literal and their GPU
literals are fixed. Their labels are then not interchangeable, so the symmetry rules are left out, and the horizon
is the latest of the submissions and the fixed jobs' ends plus the other jobs' durations (the same left-shift
argument). Gangs cannot be fixed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from fgdopt.mig.slices import is_mig
from fgdopt.model import GPU_MILLI, Cluster
from fgdopt.state import ClusterState
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import Schedule, objective_value, rejected_jobs, validate_schedule

UNITS = (1.0, 0.1, 0.01, 0.001)
"""Candidate model time units (seconds), coarsest first."""
MODEL_OBJECTIVES = ("mean-jct", "makespan")
MAX_UNITS = 2**60
"""The most model units the horizon times the jobs may reach: CP-SAT's integers stay below 2^62, and the mean-JCT
objective adds every job's end."""


class RangeError(ValueError):
    """The exact model's times do not fit CP-SAT's integers (:data:`MAX_UNITS`)."""


def check_range(submit_s: np.ndarray, duration_s: np.ndarray, unit: float) -> None:
    """``RangeError`` (one line) unless the horizon of these jobs (the last submission plus every duration, seconds)
    in ``unit``, times the number of jobs, is at most :data:`MAX_UNITS`.

    Examples
    --------
    >>> check_range(np.array([0.0, 1e15]), np.array([1e15, 0.001]), 0.001)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    formulations.schedule.exact.RangeError: the exact model counts time in units of 0.001 s: 2 jobs ... 4e+18 units, ...
    """
    n = len(duration_s)
    horizon = (float(np.max(submit_s, initial=0.0)) + float(np.sum(duration_s))) / unit
    if horizon * n > MAX_UNITS:
        raise RangeError(f"the exact model counts time in units of {unit:g} s: {n} jobs over a horizon of "
                         f"{horizon * unit:g} s make {horizon * n:.3g} units, beyond CP-SAT's integers "
                         f"({MAX_UNITS:.3g}); coarsen or shorten the workload's times")


def time_unit(times: np.ndarray) -> float:
    """The coarsest of :data:`UNITS` of which every value of ``times`` (seconds) is a whole multiple.

    Raises
    ------
    ValueError : a time finer than 1 ms, or not finite.
    """
    times = np.asarray(times, dtype=np.float64)
    if not np.isfinite(times).all():
        raise ValueError("the exact model needs finite submission times and durations")

    def whole(unit: float) -> np.ndarray:
        # float noise only: within 1e-6 units (0.1 + 0.2 is 3 units of 0.1) and within 1e-6 of the value itself
        # (1e-6 s is not a whole 0 s: rounding it away would make a job last nothing)
        scaled = times / unit
        return np.abs(scaled - np.round(scaled)) <= 1e-6 * np.minimum(np.abs(scaled), 1.0)

    for unit in UNITS:
        if whole(unit).all():
            return unit
    bad = float(times[~whole(UNITS[-1])][0])
    raise ValueError(f"the exact model counts time in whole milliseconds; {bad!r} s is finer (round the workload)")


def node_types(cluster: Cluster) -> list[list[int]]:
    """Groups of identical nodes (CPU, memory, GPU count, model), each in index order."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for n in range(cluster.n_nodes):
        groups[(int(cluster.cpu_milli[n]), int(cluster.memory_mib[n]), int(cluster.gpu[n]),
                str(cluster.model[n]))].append(n)
    return list(groups.values())


def _sorted_labels(schedule: Schedule, cluster: Cluster, order: np.ndarray) -> Schedule:
    """``schedule`` with the nodes of each type and the GPUs of each node relabelled by the position (in
    ``order``) of the first job that uses them: a feasible schedule stays feasible (identical nodes and GPUs),
    and it then satisfies the model's symmetry rules. Unused nodes and GPUs go last."""
    pos = np.empty(len(schedule), dtype=np.int64)                  # indexed by job; order holds the admitted ones
    pos[order] = np.arange(len(order))
    first_node = {}
    first_gpu = {}
    for j in order.tolist():
        n = int(schedule.node[j])
        if n < 0:
            continue
        first_node.setdefault(n, pos[j])
        for g in schedule.gpus[j]:
            first_gpu.setdefault((n, g), pos[j])
    node_map = np.arange(cluster.n_nodes)
    for group in node_types(cluster):
        ranked = sorted(group, key=lambda n: (first_node.get(n, math.inf), n))
        node_map[ranked] = group                      # the k-th first-used node becomes the k-th node of the type
    gpu_map = {}
    for n in range(cluster.n_nodes):
        gs = list(range(int(cluster.gpu[n])))
        ranked = sorted(gs, key=lambda g: (first_gpu.get((n, g), math.inf), g))
        for new, old in enumerate(ranked):
            gpu_map[(n, old)] = new
    node = np.where(schedule.node >= 0, node_map[np.maximum(schedule.node, 0)], -1)
    gpus = tuple(tuple(sorted(gpu_map[(int(n), g)] for g in gs)) if n >= 0 else ()
                 for n, gs in zip(schedule.node, schedule.gpus, strict=True))
    return Schedule(schedule.start_s, node, gpus)


@dataclass(frozen=True, eq=False)
class ExactRun:
    """What CP-SAT said: ``schedule`` (None if it found none), ``status`` (``optimal``, ``time_limit``,
    ``infeasible``, ``error``), ``bound_s`` (proven lower bound of the objective, seconds; -inf if none), its
    wall and CPU seconds and the model's size."""

    schedule: Schedule | None
    status: str
    bound_s: float
    wall_s: float
    cpu_s: float
    info: dict


def solve_exact(cluster: Cluster, jobs: JobSet, objective: str = "mean-jct", time_limit: float = 60.0,
                hint: Schedule | None = None, threads: int = 2, seed: int = 0,
                deterministic_time: float | None = None, fixed: Schedule | None = None,
                guide: Schedule | None = None, cap: float | None = None) -> ExactRun:
    """Build and solve the CP-SAT model (module docstring) of ``jobs`` on ``cluster`` for ``objective``.

    Parameters
    ----------
    objective : ``"mean-jct"`` or ``"makespan"``.
    time_limit : wall seconds for the model build and the search (CP-SAT's ``max_time_in_seconds`` is what the
        build left, at least 0).
    hint : a feasible schedule (validated here; ``ValueError`` if it is not).
    threads : CP-SAT workers (``num_workers``, at most 2 here). seed : its ``random_seed``.
    deterministic_time : CP-SAT's ``max_deterministic_time`` as well (a budget independent of the machine's load);
        ``info["deterministic_s"]`` is what the search used.
    fixed : a partial schedule (same length as ``jobs``): each job it starts keeps that start (a whole number of
        the model's unit), node and GPUs (module docstring); the other jobs are free. Not with gangs.
    guide : with ``fixed`` and without ``hint``: a schedule whose starts and placements are hinted to CP-SAT
        unchecked (it may overlap a little; CP-SAT repairs the hint); it bounds nothing.
    cap : without ``hint``: only schedules of objective at most ``cap`` (seconds) are sought; the horizon is cut
        as by a hint of that value (module docstring), and status ``infeasible`` says there is none.

    Raises
    ------
    ValueError : an unknown objective, a MIG cluster, a job that never ends, times finer than 1 ms
        (:func:`time_unit`), an infeasible ``hint``; :class:`RangeError`, a horizon beyond CP-SAT's integers
        (:func:`check_range`).
    """
    import time

    from ortools.sat.python import cp_model

    if objective not in MODEL_OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; the model minimizes one of {', '.join(MODEL_OBJECTIVES)}")
    if is_mig(cluster):
        raise ValueError("the schedule model does not handle MIG clusters")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    tasks = jobs.tasks
    rows = np.flatnonzero(~rejected_jobs(cluster, jobs))
    if len(rows) and not np.isfinite(jobs.duration_s[rows]).all():
        raise ValueError("a job never finishes (duration inf): no schedule has a finite objective")
    fixed_starts = fixed.start_s[fixed.started] if fixed is not None else np.zeros(0)
    unit = time_unit(np.concatenate([jobs.submit_s[rows], jobs.duration_s[rows], fixed_starts]))
    check_range(np.concatenate([jobs.submit_s[rows], fixed_starts]), jobs.duration_s[rows], unit)
    r = np.round(jobs.submit_s / unit).astype(np.int64)
    p = np.round(np.where(np.isfinite(jobs.duration_s), jobs.duration_s, 0) / unit).astype(np.int64)
    gang = tasks.workers > 1
    pin = np.zeros(len(jobs), dtype=bool) if fixed is None else fixed.started
    if fixed is not None and (len(fixed) != len(jobs) or (pin & (gang | rejected_jobs(cluster, jobs))).any()):
        raise ValueError("fixed: one entry per job, no gang and no rejected job fixed")
    pin_start = np.round(np.nan_to_num(fixed.start_s if fixed is not None else np.zeros(len(jobs))) / unit
                         ).astype(np.int64)
    if hint is not None:
        validate_schedule(cluster, jobs, hint)
        if fixed is None:
            hint = _sorted_labels(hint, cluster, rows)
    free = rows[~pin[rows]]
    horizon = int(max(r[rows].max(initial=0), (pin_start + p)[pin].max(initial=0)) + p[free].sum())
    ends_ub = np.full(len(jobs), horizon, dtype=np.int64)
    if (hint is not None or cap is not None) and len(rows):
        value = objective_value(jobs, hint, objective) if hint is not None else float(cap)
        if objective == "makespan":
            ends_ub[:] = min(horizon, int(math.floor(value / unit + 1e-6)))
        else:
            total = int(round(value * len(rows) / unit))
            ends_ub[rows] = np.minimum(horizon, r[rows] + total - (p[rows].sum() - p[rows]))
    m = cp_model.CpModel()
    empty = ClusterState(cluster, tasks)
    start, end, main = {}, {}, {}
    slot = np.zeros(len(jobs), dtype=np.int64)                  # zero-duration jobs: 1..Z (module docstring)
    zero = rows[p[rows] == 0]
    slot[zero] = np.arange(1, len(zero) + 1)
    scale = len(zero) + 1

    def holds(j: int, name: str, lit=None):
        """The interval over which job ``j`` holds its resources, on the time grid scaled by ``Z + 1``."""
        if not len(zero):                                       # the model as it is without them
            begin, size = start[j], int(p[j])
        elif slot[j]:
            begin, size = scale * start[j] + int(slot[j]) - 1, 1
        else:
            begin, size = scale * start[j] + len(zero), scale * int(p[j]) - len(zero)
        if lit is None:
            return m.new_fixed_size_interval_var(begin, size, name)
        return m.new_optional_fixed_size_interval_var(begin, size, lit, name)

    on_node: dict[int, list[tuple[int, object, object]]] = defaultdict(list)      # node -> (job, lit, interval)
    on_gpu: dict[tuple[int, int], list[tuple[int, object, object]]] = defaultdict(list)
    x: dict[tuple[int, int], object] = {}
    y: dict[tuple[int, int, int], object] = {}
    count: dict[tuple, object] = {}                  # gangs: (j, n) -> c_jn; (j, n, g) -> k_jng (sharing parts)
    for j in rows.tolist():
        low, high = (pin_start[j], pin_start[j]) if pin[j] else (r[j], max(r[j], ends_ub[j] - p[j]))
        start[j] = m.new_int_var(int(low), int(high), f"S{j}")
        end[j] = start[j] + int(p[j])
        main[j] = holds(j, f"I{j}")
        task = tasks[j]
        fits = empty.part_counts(task) if gang[j] else empty.feasible_nodes(task).astype(np.int64)
        cands = [int(fixed.node[j])] if pin[j] else np.flatnonzero(fits).tolist()
        for n in cands:
            lit = m.new_bool_var(f"x{j}_{n}")
            x[(j, n)] = lit
            parts = lit                                         # how many of the job's parts are on the node
            if gang[j]:
                parts = count[(j, n)] = m.new_int_var(0, int(fits[n]), f"c{j}_{n}")
                m.add(parts >= 1).only_enforce_if(lit)
                m.add(parts == 0).only_enforce_if(~lit)
            on_node[n].append((j, parts, holds(j, f"I{j}_{n}", lit)))
            if task.num_gpu:
                lits, per_gpu = [], []
                for g in range(int(cluster.gpu[n])):
                    lg = m.new_bool_var(f"y{j}_{n}_{g}")
                    y[(j, n, g)] = lg
                    lits.append(lg)
                    if pin[j]:
                        m.add(lg == int(g in fixed.gpus[j]))
                    use = lg
                    if gang[j] and task.gpu_milli < GPU_MILLI:     # sharing parts: several may share one GPU
                        use = count[(j, n, g)] = m.new_int_var(0, GPU_MILLI // task.gpu_milli, f"k{j}_{n}_{g}")
                        m.add(use >= 1).only_enforce_if(lg)
                        m.add(use == 0).only_enforce_if(~lg)
                    per_gpu.append(use)
                    on_gpu[(n, g)].append((j, use, holds(j, f"I{j}_{n}_{g}", lg)))
                if gang[j] and task.gpu_milli < GPU_MILLI:
                    m.add(sum(per_gpu) == parts)
                else:
                    m.add(sum(lits) == int(task.num_gpu) * parts)
        if gang[j]:
            m.add(sum(count[(j, n)] for n in cands) == int(task.workers))
        else:
            m.add_exactly_one([x[(j, n)] for n in cands])
    for n, items in on_node.items():
        for demand, cap in ((tasks.cpu_milli, cluster.cpu_milli[n]), (tasks.memory_mib, cluster.memory_mib[n])):
            if sum(int(demand[j]) * (int(tasks.workers[j]) if gang[j] else 1) for j, _, _ in items) > cap:
                m.add_cumulative([iv for _, _, iv in items],
                                 [int(demand[j]) * k if gang[j] else int(demand[j]) for j, k, _ in items], int(cap))
    for items in on_gpu.values():
        need = [int(tasks.gpu_milli[j]) * (GPU_MILLI // int(tasks.gpu_milli[j]) if gang[j] else 1)
                for j, _, _ in items]                           # the most each job may put on the GPU
        if len(items) > 1 and sum(need) > GPU_MILLI:
            if all(int(tasks.gpu_milli[j]) == GPU_MILLI for j, _, _ in items):
                m.add_no_overlap([iv for _, _, iv in items])
            else:
                m.add_cumulative([iv for _, _, iv in items],
                                 [int(tasks.gpu_milli[j]) * k if gang[j] and tasks.gpu_milli[j] < GPU_MILLI
                                  else int(tasks.gpu_milli[j]) for j, k, _ in items], GPU_MILLI)
    if len(rows):                                               # redundant pooled capacity
        m.add_cumulative([main[j] for j in rows.tolist()], [int(tasks.gpu_demand[j]) for j in rows.tolist()],
                         int(cluster.gpu_capacity_milli))
        m.add_cumulative([main[j] for j in rows.tolist()],
                         [int(tasks.cpu_milli[j] * tasks.workers[j]) for j in rows.tolist()],
                         int(cluster.cpu_milli.sum()))
    prefix = _symmetry(m, cluster, rows, x, y) if fixed is None else {}
    if objective == "makespan":
        span = m.new_int_var(0, int(ends_ub.max(initial=0)), "makespan")
        if len(rows):
            m.add_max_equality(span, [end[j] for j in rows.tolist()])
        m.minimize(span)
    else:
        m.minimize(sum(end[j] for j in rows.tolist()))
    if guide is not None and hint is None and fixed is not None:
        hint = guide
    if hint is not None:
        if gang.any():                                          # gangs: the starts only (a partial hint)
            for j in rows.tolist():
                m.add_hint(start[j], int(round(hint.start_s[j] / unit)))
        else:
            _add_hint(m, hint, r, unit, rows, start, x, y, prefix)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(max(time_limit - (time.perf_counter() - wall0), 0.0))
    solver.parameters.num_workers = int(min(max(threads, 1), 2))
    solver.parameters.random_seed = int(seed)
    if guide is not None:
        solver.parameters.repair_hint = True
    if deterministic_time is not None:
        solver.parameters.max_deterministic_time = float(deterministic_time)
    code = solver.solve(m)
    info = {"unit_s": unit, "jobs": len(rows), "x": len(x), "y": len(y), "cpsat": solver.status_name(code),
            "branches": int(solver.num_branches), "deterministic_s": float(solver.deterministic_time)}
    schedule = None
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        schedule = _read(solver, cluster, jobs, rows, start, x, y, count, unit)
        status = "optimal" if code == cp_model.OPTIMAL else "time_limit"
    elif code == cp_model.INFEASIBLE:
        status = "infeasible"
    elif code == cp_model.UNKNOWN:
        status = "time_limit"
    else:
        raise RuntimeError(f"CP-SAT: {solver.status_name(code)} ({solver.solution_info()})")
    bound = -math.inf
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN) and len(rows):
        raw = float(solver.best_objective_bound)
        total_submit = 0.0 if objective == "makespan" else float(jobs.submit_s[rows].sum())
        bound = (raw * unit - total_submit) / (1 if objective == "makespan" else len(rows))  # sum of ends -> mean
    elif not len(rows):
        bound = math.nan if objective == "mean-jct" else 0.0
    return ExactRun(schedule, status, bound, time.perf_counter() - wall0, time.process_time() - cpu0, info)


def _symmetry(m, cluster: Cluster, rows: np.ndarray, x: dict, y: dict) -> dict:
    """The symmetry rules of the module docstring, with prefix counts ``P[key, j]`` = how many jobs of index
    ``<= j`` use ``key`` (a node, or a node's GPU); returns the prefix variables (for the hint)."""
    prefix: dict = {}

    def count(key, lits_of) -> dict:
        """Prefix counts of ``key`` over the jobs in ``rows`` order, as linear expressions of new variables."""
        out, running = {}, None
        for j in rows.tolist():
            lit = lits_of(j)
            if lit is None:
                out[j] = running
                continue
            v = m.new_int_var(0, len(rows), f"P{key}_{j}")
            m.add(v == (lit if running is None else running + lit))
            prefix[(key, j)] = v
            running = v
            out[j] = v
        return out

    for group in node_types(cluster):
        for prev, n in zip(group, group[1:], strict=False):
            before = count(("n", prev), lambda j, prev=prev: x.get((j, prev)))
            for j in rows.tolist():
                if (j, n) in x:
                    m.add(x[(j, n)] <= (before[j] if before[j] is not None else 0))
    for n in range(cluster.n_nodes):
        for g in range(1, int(cluster.gpu[n])):
            before = count(("g", n, g - 1), lambda j, n=n, g=g: y.get((j, n, g - 1)))
            for j in rows.tolist():
                if (j, n, g) in y:
                    m.add(y[(j, n, g)] <= (before[j] if before[j] is not None else 0))
    return prefix


def _add_hint(m, hint: Schedule, r, unit: float, rows: np.ndarray, start: dict, x: dict, y: dict,
              prefix: dict) -> None:
    """Hint every variable from ``hint`` (already relabelled to the symmetry rules)."""
    by_job: dict = defaultdict(list)
    for key, lit in (*x.items(), *y.items()):
        by_job[key[0]].append((key, lit))
    counts_at: dict = defaultdict(list)
    for (key, j), v in prefix.items():
        counts_at[j].append((key, v))
    used: dict = defaultdict(int)
    for j in rows.tolist():
        m.add_hint(start[j], int(round(hint.start_s[j] / unit)))
        n = int(hint.node[j])
        for key, lit in by_job[j]:
            m.add_hint(lit, int(key[1] == n and (len(key) == 2 or key[2] in hint.gpus[j])))
        used[("n", n)] += 1
        for g in hint.gpus[j]:
            used[("g", n, g)] += 1
        for key, v in counts_at[j]:
            m.add_hint(v, used.get(key, 0))


def _read(solver, cluster: Cluster, jobs: JobSet, rows: np.ndarray, start: dict, x: dict, y: dict, count: dict,
          unit: float) -> Schedule:
    """The solver's schedule (start in seconds, node, GPUs; a gang's parts)."""
    tasks = jobs.tasks
    n_jobs = len(jobs)
    s = np.full(n_jobs, np.nan)
    node = np.full(n_jobs, -1, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * n_jobs
    for (j, n), lit in x.items():
        if solver.boolean_value(lit) and node[j] < 0:
            node[j] = n
    for (j, n, g), lit in y.items():
        if n == node[j] and solver.boolean_value(lit) and tasks.workers[j] == 1:
            gpus[j] = (*gpus[j], g)
    per_s = round(1 / unit)                             # k / 1000 is the float nearest k ms, as a submission read
    for j in rows.tolist():                             # from a file is (k x 0.001 may miss it: a wait of 1e-15 s)
        s[j] = solver.value(start[j]) / per_s
    if not tasks.has_gangs:
        return Schedule(s, node, tuple(gpus))
    parts: list[tuple] = [()] * n_jobs
    for j in rows.tolist():
        if tasks.workers[j] == 1:
            continue
        task, out = tasks[j], []
        for n in range(cluster.n_nodes):
            k = solver.value(count[(j, n)]) if (j, n) in count else 0
            if k == 0:
                continue
            used = [g for g in range(int(cluster.gpu[n])) if (j, n, g) in y and solver.boolean_value(y[(j, n, g)])]
            if task.num_gpu == 0:
                out += [(n, ())] * k
            elif task.gpu_milli == GPU_MILLI:                   # k parts of num_gpu GPUs each
                out += [(n, tuple(used[i * task.num_gpu:(i + 1) * task.num_gpu])) for i in range(k)]
            else:                                               # k_jng sharing parts on GPU g
                out += [(n, (g,)) for g in used for _ in range(solver.value(count[(j, n, g)]))]
        parts[j] = tuple(out)
        node[j], gpus[j] = out[0][0], out[0][1]
    return Schedule(s, node, tuple(gpus), tuple(parts))
