"""The certified optimum at an instant of a simulation over time (:mod:`fgdopt.timeline`).

Two questions about the jobs present at a :class:`~fgdopt.timeline.engine.Snapshot` (running and pending):

``placement`` -- (i) the most GPU demand (milli-GPU) the present jobs could hold if all were placed afresh
    (:func:`placement_optimum`: ``config-types`` of :mod:`formulations.typeconfig`, warm-started from the running
    placement, so its incumbent is at least the allocation of the policy, and its bound is a true bound).
``admission`` -- (ii) the most pending GPU demand that could start *without moving* a running job
    (:func:`admission_optimum`). If no pending job fits any node (always the case after a backfilling pass),
    the answer is 0, certified without a solver. Otherwise only the nodes on which some pending job fits now can
    take one. The incumbent is a greedy: the pending jobs that fit somewhere, largest GPU demand first, each
    placed best-fit. The bound is the smaller of their total demand and the free milli-GPU of those nodes. Where
    the problem is small (at most :data:`EXACT_JOBS` jobs on those nodes and :data:`EXACT_NODES` nodes), the
    budget-0 case of the defragmentation model (b) (:mod:`formulations.defrag`) on those nodes proves it instead
    (measured: on the whole openb cluster under FIFO at load 1.1, 3,371 fitting pending jobs, that model did not
    find an incumbent in 96 s).

Both return an :class:`InstantOptimum`: incumbent and proven bound in milli-GPU, and what each method said.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fgdopt.defrag import DefragProblem
from fgdopt.instance import Instance
from fgdopt.policies import make_policy
from fgdopt.state import Placement, validate
from fgdopt.timeline.engine import Snapshot
from formulations.defrag import solve_defrag
from formulations.typeconfig import ColumnPool, solve_type_configs

QUESTIONS = ("placement", "admission")
EXACT_JOBS = 400
"""admission: the exact model runs when the nodes that can take a pending job hold at most this many jobs."""
EXACT_NODES = 64
"""admission: ... and there are at most this many such nodes."""


@dataclass(frozen=True)
class InstantOptimum:
    """One question at one instant: ``incumbent`` <= optimum <= ``bound`` (milli-GPU), ``current`` what the
    simulation has (allocated milli-GPU for ``placement``, 0 admitted for ``admission``)."""

    question: str
    time_s: float
    current: int
    incumbent: int
    bound: int
    status: str
    wall_s: float

    def __post_init__(self) -> None:
        if not self.current <= self.incumbent <= self.bound:
            raise ValueError(f"{self.question} at {self.time_s} s: need current {self.current} <= incumbent "
                             f"{self.incumbent} <= bound {self.bound}")


def placement_optimum(snap: Snapshot, time_limit: float = 60.0, threads: int | None = 1, tol: float = 0.001,
                      pool: ColumnPool | None = None) -> tuple[InstantOptimum, ColumnPool]:
    """(i): ``config-types`` on the present jobs, warm-started from the running placement (module docstring);
    ``pool`` carries columns between the instants of one run (same cluster)."""
    t0 = time.perf_counter()
    sol, pool = solve_type_configs(Instance(f"t{snap.time_s:.0f}", snap.cluster, snap.tasks), "config-types",
                                   time_limit, snap.placement, threads, tol, pool)
    return InstantOptimum("placement", snap.time_s, snap.allocated_milli, int(sol.objective), int(sol.bound),
                          sol.status, time.perf_counter() - t0), pool


def admission_optimum(snap: Snapshot, time_limit: float = 60.0, threads: int | None = 1) -> InstantOptimum:
    """(ii): the most pending milli-GPU admissible without moving a running job (module docstring)."""
    t0 = time.perf_counter()
    state = validate(snap.cluster, snap.tasks, snap.placement)            # the running jobs, placed
    pending = snap.pending
    fits = np.zeros(snap.cluster.n_nodes, dtype=bool)
    hopeful = []
    for i in pending.tolist():
        where = state.feasible_nodes(snap.tasks[i])
        if where.any() and snap.tasks.gpu_demand[i] > 0:
            fits |= where
            hopeful.append(i)
    if not hopeful:
        return InstantOptimum("admission", snap.time_s, 0, 0, 0, "optimal", time.perf_counter() - t0)
    nodes = np.flatnonzero(fits)
    remap = np.full(snap.cluster.n_nodes, -1, dtype=np.int64)
    remap[nodes] = np.arange(len(nodes))
    running = [i for i in range(snap.running) if fits[snap.placement.node[i]]]
    rows = np.array(running + hopeful, dtype=np.int64)
    placement = Placement(np.concatenate([remap[snap.placement.node[running]], np.full(len(hopeful), -1)]),
                          (*(snap.placement.gpus[i] for i in running), *((),) * len(hopeful)))
    greedy = state.copy()
    policy = make_policy("best-fit")
    for i in sorted(hopeful, key=lambda i: (-int(snap.tasks.gpu_demand[i]), i)):
        choice = policy(greedy, snap.tasks[i])
        if choice is not None:
            greedy.place(i, *choice)
    incumbent = greedy.allocated_milli - state.allocated_milli
    bound = min(int(snap.tasks.gpu_demand[hopeful].sum()), int(state.gpu_left[nodes].sum()))
    status = "optimal" if incumbent == bound else "bounds"
    if len(rows) <= EXACT_JOBS and len(nodes) <= EXACT_NODES and incumbent < bound:
        problem = DefragProblem(snap.cluster.subset(nodes), snap.tasks.take(rows), placement)
        sol = solve_defrag(problem, "b", 0, time_limit=time_limit, threads=threads)
        incumbent = max(incumbent, int(sol.admitted_milli or 0))
        bound = min(bound, int(sol.bound_milli)) if sol.bound_milli is not None else bound
        status = "optimal" if incumbent == bound else sol.status
    return InstantOptimum("admission", snap.time_s, 0, incumbent, bound, status, time.perf_counter() - t0)
