"""Where the wait of a schedule over time comes from: the zero-wait demand profile, ceilings, and the split.

Everything here reads a cluster and a :class:`~fgdopt.timeline.JobSet` (admitted jobs only: a job that fits no
empty node is rejected, :func:`fgdopt.timeline.schedule.rejected_jobs`) and uses numpy; no solver.

**Node types and groups.** A node's type is :func:`fgdopt.suites.node_type_label` (GPU model, GPUs, cores). A job
*fits* a type when it fits some empty node of that type (the one rule, :class:`fgdopt.state.ClusterState`); its
*fit set* is the set of types it fits. A *group* is a set of types that is some job's fit set (plus ``all``, every
type). A group's capacity is the sum over its types' nodes (milli-GPU, CPU milli-cores, memory MiB); its demand
at time t is that of the jobs *confined* to it (fit set inside the group) running at t. A job that fits several
types is thus counted against the union of their capacities, in every group that contains its fit set. If some
schedule ran every job on its own node types at some moment, each group's confined jobs would fit its capacity
(they can go nowhere else): a group above capacity is a certificate that the moment is over-committed.

**The zero-wait profile** (:func:`zero_wait_profile`): every job runs from its submission for its duration (no
wait). Per group and resource: the peak demand, as a fraction of capacity, and the seconds during which the demand
is above capacity. A pooled relaxation (one pool per resource, :mod:`formulations.schedule.bound`) whose ``all``
rows never exceed capacity admits "start everything at once", so its optimum is 0: its wait is then all outside
the pooled relaxation's view (placement, node boundaries, no migration).

**Ceilings** (feasible schedules of relaxations; the mean wait of each is at least the relaxation's optimum):

* (a) :func:`pooled_list_schedule` with ``per_type=False``: a list schedule against the pooled capacities (one
  pool per resource, non-preemptive; at every event, pending jobs are offered in the order's sequence and each
  starts when the pool holds its demand: backfill). It is a feasible schedule of every pooled relaxation, so its
  mean wait is an upper bound on every pooled relaxation's optimum (the pooled LP can never certify more).
* (b) the same with ``per_type=True``: one pool per node type; a job starts in a type of its fit set whose pool
  holds it. It caps every relaxation that pools resources within each node type, and, the per-type pools summing
  to the pooled capacities, every pooled relaxation too: the pooled optimum is at most ``min((a), (b))``.
* (c) free re-packing (:class:`fgdopt.timeline.preemption.FreeRepack`): the engine with a mechanism that, whenever
  jobs are blocked, clears a node for one of them and re-places that node's jobs elsewhere, at no cost; a feasible
  schedule with migration, so its mean wait caps every relaxation that lets jobs move. What it removes from a run
  is what this migration rule buys under that queue and policy: a lower estimate of what migration could buy.

**The split** (:func:`wait_split`) of a run's mean wait ``R`` into *capacity* ``min(R, A)`` (``A`` the lesser of
ceilings (a) and (b), and of any better pooled schedule the caller has, such as the one CP-SAT finds,
:mod:`formulations.schedule.pooledcp`: the pooled optimum lies between the best pooled bound and ``A``),
*non-migration* (the part free re-packing removes: ``R - max(M, capacity)``, at least 0, ``M`` ceiling (c)) and
*order and placement* (the rest). Taking the capacity part at its ceiling keeps the other two parts from being
overstated.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fgdopt.model import Cluster
from fgdopt.state import ClusterState
from fgdopt.suites import node_type_label
from fgdopt.timeline.jobs import JobSet
from fgdopt.timeline.schedule import rejected_jobs

RESOURCES = ("gpu", "cpu", "memory")
"""The pooled resources: milli-GPU, CPU milli-cores, memory MiB."""
ORDERS = ("fifo", "sjf")
"""Orders of :func:`pooled_list_schedule`: submission order, or shortest duration first (ties: submission)."""
PROFILE_COLUMNS = ("group", "resource", "jobs", "capacity", "peak", "peak_frac", "above_s")


def demands(jobs: JobSet) -> np.ndarray:
    """float64 (n, 3): every job's demand of :data:`RESOURCES` (milli-GPU, milli-cores, MiB), all its parts (a gang
    of ``workers`` holds ``workers`` times a part's)."""
    t = jobs.tasks
    return np.column_stack([t.gpu_demand, t.cpu_milli * t.workers, t.memory_mib * t.workers]).astype(np.float64)


def node_types(cluster: Cluster) -> tuple[tuple[str, ...], np.ndarray]:
    """The type labels (sorted) and the type of every node (int64 index into them)."""
    labels = [node_type_label(int(c), int(g), str(m)) for c, g, m in zip(cluster.cpu_milli, cluster.gpu,
                                                                          cluster.model, strict=True)]
    names, type_of = np.unique(np.array(labels, dtype=object), return_inverse=True)
    return tuple(str(x) for x in names), type_of.astype(np.int64).ravel()


def type_capacity(cluster: Cluster, type_of: np.ndarray, n_types: int) -> np.ndarray:
    """float64 (types, 3): the summed capacity of each type's nodes in :data:`RESOURCES`."""
    node_cap = np.column_stack([cluster.gpu * 1000, cluster.cpu_milli, cluster.memory_mib]).astype(np.float64)
    cap = np.zeros((n_types, 3))
    np.add.at(cap, type_of, node_cap)
    return cap


def fit_types(cluster: Cluster, jobs: JobSet, type_of: np.ndarray, n_types: int) -> np.ndarray:
    """bool (n, types): does each job (a part of a gang) fit some empty node of each type; all False where the job
    is rejected (:func:`fgdopt.timeline.schedule.rejected_jobs`: also a gang whose parts do not fit the empty
    cluster together)."""
    empty = ClusterState(cluster, jobs.tasks)
    t = jobs.tasks
    key = pd.DataFrame({"c": t.cpu_milli, "m": t.memory_mib, "g": t.num_gpu, "u": t.gpu_milli,
                        "s": np.asarray(t.gpu_spec, dtype=object)})
    first = ~key.duplicated()
    shape_of = key.groupby(list(key.columns), sort=False).ngroup().to_numpy()
    fits = np.zeros((int(shape_of.max(initial=-1)) + 1, n_types), dtype=bool)
    for j in np.flatnonzero(first.to_numpy()).tolist():
        on = empty.feasible_nodes(t[j])
        fits[shape_of[j], np.unique(type_of[on])] = True
    if not len(jobs):
        return np.zeros((0, n_types), dtype=bool)
    return fits[shape_of] & ~rejected_jobs(cluster, jobs)[:, None]


def demand_profile(start: np.ndarray, end: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The summed demand ``d`` (rows: jobs) held over ``[start, end)`` (seconds; ``end`` inf: for good): the
    breakpoints and the level after each (a job ending at ``t`` no longer counts at ``t``)."""
    finite = np.isfinite(end)
    times = np.concatenate([start, end[finite]])
    delta = np.concatenate([d, -d[finite]])
    t, inv = np.unique(times, return_inverse=True)
    step = np.zeros((len(t), d.shape[1]))
    np.add.at(step, inv.ravel(), delta)
    return t, np.cumsum(step, axis=0)


def zero_wait_profile(cluster: Cluster, jobs: JobSet) -> pd.DataFrame:
    """Per group (module docstring: ``all``, then every job's fit set) and resource, the demand of its confined
    jobs when every job starts at its submission: ``jobs`` (confined), ``capacity``, ``peak`` (the most demand at
    once), ``peak_frac`` (peak / capacity; 0 where nothing is asked of none, inf where something is), ``above_s``
    (seconds with the demand above capacity; ``inf`` when it stays above for good). Units: milli-GPU, milli-cores,
    MiB; seconds."""
    names, type_of = node_types(cluster)
    cap_t = type_capacity(cluster, type_of, len(names))
    fits = fit_types(cluster, jobs, type_of, len(names))
    admitted = fits.any(axis=1)
    d = demands(jobs)
    groups = [("all", np.ones(len(names), dtype=bool))]
    sets = np.unique(fits[admitted], axis=0) if admitted.any() else np.zeros((0, len(names)), dtype=bool)
    groups += [("+".join(n for n, f in zip(names, s, strict=True) if f), s) for s in sets if not s.all()]
    rows = []
    for label, members in groups:
        confined = admitted & ~(fits & ~members).any(axis=1)
        cap = cap_t[members].sum(axis=0)
        t, level = demand_profile(jobs.submit_s[confined], (jobs.submit_s + jobs.duration_s)[confined], d[confined])
        span = np.append(np.diff(t), np.inf)
        for q, res in enumerate(RESOURCES):
            over = level[:, q] > cap[q] * (1 + 1e-12) if len(t) else np.zeros(0, dtype=bool)
            peak = float(level[:, q].max(initial=0.0))
            rows.append({"group": label, "resource": res, "jobs": int(confined.sum()), "capacity": float(cap[q]),
                         "peak": peak, "peak_frac": peak / cap[q] if cap[q] > 0 else np.inf if peak > 0 else 0.0,
                         "above_s": float(span[over].sum())})
    return pd.DataFrame(rows, columns=PROFILE_COLUMNS)


@dataclass(frozen=True, eq=False)
class PooledSchedule:
    """A list schedule against pooled capacities (:func:`pooled_list_schedule`): ``start_s`` (NaN: rejected),
    ``pool`` (the type index it ran in, or 0 for one pool; -1: rejected), its ``mean_wait_s`` over the admitted
    jobs, the ``order`` and ``per_type``, ``wall_s``."""

    start_s: np.ndarray
    pool: np.ndarray
    mean_wait_s: float
    order: str
    per_type: bool
    wall_s: float


def pooled_list_schedule(cluster: Cluster, jobs: JobSet, per_type: bool = False, order: str = "fifo"
                         ) -> PooledSchedule:
    """Ceiling (a) (``per_type=False``) or (b) (module docstring): a non-preemptive list schedule with backfill.

    At every event (finishes first, then submissions), the pending jobs are offered in ``order``
    (:data:`ORDERS`); each starts at once in the pool of its fit set that holds its demand of every resource and
    has the largest free share of its milli-GPU (ties: the first type). Jobs with an infinite duration hold their
    pool for good. Every admitted job starts (it fits an empty node, so its pool holds it once the pool is empty),
    unless pools are held for good (its start is then NaN and the mean wait NaN).
    """
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; choose one of {', '.join(ORDERS)}")
    wall0 = time.perf_counter()
    names, type_of = node_types(cluster)
    fits = fit_types(cluster, jobs, type_of, len(names))
    admitted = fits.any(axis=1)
    if per_type:
        cap = type_capacity(cluster, type_of, len(names))
    else:
        cap, fits = type_capacity(cluster, type_of, len(names)).sum(axis=0, keepdims=True), admitted[:, None]
    d = demands(jobs)
    free = cap.copy()
    submit, dur = jobs.submit_s, jobs.duration_s
    start = np.full(len(jobs), np.nan)
    pool = np.full(len(jobs), -1, dtype=np.int64)
    options = [np.flatnonzero(f) for f in fits]
    arrivals = np.flatnonzero(admitted)[np.argsort(submit[admitted], kind="stable")].tolist()
    key = (lambda j: (submit[j], j)) if order == "fifo" else (lambda j: (dur[j], submit[j], j))
    pending: list[tuple] = []
    finishes: list[tuple[float, int]] = []
    a = 0
    while a < len(arrivals) or finishes:
        now = min(submit[arrivals[a]] if a < len(arrivals) else np.inf, finishes[0][0] if finishes else np.inf)
        freed = bool(finishes) and finishes[0][0] <= now
        while finishes and finishes[0][0] <= now:
            _, j = heapq.heappop(finishes)
            free[pool[j]] += d[j]
        new = []
        while a < len(arrivals) and submit[arrivals[a]] <= now:
            new.append(key(arrivals[a]))
            a += 1
        # without a finish, the jobs pending before still do not fit: offer only the new ones
        offered = sorted(pending + new) if freed else sorted(new)
        floor = d[[k[-1] for k in offered]].min(axis=0) if offered else None
        started = set()
        for k in offered:
            if not (free >= floor).all(axis=1).any():     # no pool holds even the smallest demands
                break
            j = k[-1]
            ok = options[j][(free[options[j]] >= d[j]).all(axis=1)]
            if ok.size:
                g = int(ok[np.argmax(free[ok, 0] / np.maximum(cap[ok, 0], 1.0))]) if ok.size > 1 else int(ok[0])
                free[g] -= d[j]
                start[j], pool[j] = now, g
                started.add(j)
                if np.isfinite(dur[j]):
                    heapq.heappush(finishes, (now + dur[j], j))
        pending = [k for k in (offered if freed else pending + offered) if k[-1] not in started]
    wait = (start - submit)[admitted]
    mean = float(wait.mean()) if admitted.any() and np.isfinite(wait).all() else np.nan
    return PooledSchedule(start, pool, mean, order, per_type, time.perf_counter() - wall0)


def wait_split(run_wait_s: float, ceiling_pooled_s: float, ceiling_repack_s: float) -> dict[str, float]:
    """A run's mean wait ``R`` (seconds) split as the module docstring says: ``capacity_s = min(R, A)``,
    ``non_migration_s = max(0, R - max(M, capacity_s))`` and ``order_and_placement_s`` the rest (``A`` the lesser
    of ceilings (a) and (b), ``M`` ceiling (c)); the three sum to ``R``."""
    capacity = min(run_wait_s, ceiling_pooled_s)
    non_migration = max(0.0, run_wait_s - max(ceiling_repack_s, capacity))
    return {"capacity_s": capacity, "non_migration_s": non_migration,
            "order_and_placement_s": run_wait_s - capacity - non_migration}
