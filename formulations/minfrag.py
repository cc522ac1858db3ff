"""Objective ``min_frag``: among placements with the most allocated milli-GPU, the least fragmentation
(docs/semantics.md "Fragmentation").

Two stages. Stage 1 solves ``max_gpu`` (:func:`formulations.exact.run_exact`). Stage 2 rebuilds the
exact model with *every* per-GPU pattern and equality slot rows (``build_exact(maximal=False)``), so a
GPU's content, hence its free capacity, is known exactly; CPU-only tasks are included (they take CPU,
which changes fragmentation) and are optional. It keeps ``allocated >= stage-1 allocated`` and
minimizes the cluster fragmentation F(M) for the target workload M = ``Workload.from_tasks(tasks)``.

Linearization (node n, workload GPU shape m with access to n's model, popularity p_m). The
``F_n(m)`` is ``small`` (free capacity on GPUs with ``free < milli_m``) when m is usable on n (CPU fits
and the GPUs can host m), else ``idle(n)``. Since ``small = idle - usable`` where ``usable`` is the free
capacity on GPUs with ``free >= milli_m``, ``F_n(m) = idle(n) - w[n,m]`` with

* ``u[n,m]`` binary "m counts as usable": ``cpu_used(n) + cpu_m u <= cpu(n)``; for whole-GPU shapes
  needing k >= 2 GPUs, ``free_gpus(n) >= k u``;
* ``w[n,m] <= usable(n,m) = sum_q free_q [free_q >= milli_m] p[n,q] + 1000 free_gpus(n)`` and
  ``w[n,m] <= 1000 G_n u[n,m]``.

A positive ``usable`` already proves a sharing (or 1-GPU) shape can be hosted, so only the CPU and the
k >= 2 whole-GPU conditions need ``u``. CPU-only and no-access shapes contribute ``idle(n)``. With the
allocation fixed, idle is fixed, and minimizing F(M) = ``idle - sum p_m w`` maximizes ``sum count_m w``
(integer weights: the workload's shape counts). The returned placement's fragmentation is recomputed by
:func:`fgdopt.frag.cluster_fragmentation` (``info["fragmentation"]``), never taken from the model.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from fgdopt.frag import Workload, cluster_fragmentation
from fgdopt.instance import Instance
from fgdopt.state import Placement, validate
from formulations.aggregate import aggregate
from formulations.backends import EXACT_HIGHS_OPTIONS, solve_model
from formulations.exact import ExactModel, build_exact, run_exact
from formulations.solution import Solution, make_solution


def build_min_frag(em: ExactModel, workload: Workload, allocated_units: int) -> tuple[np.ndarray, np.ndarray]:
    """Turn ``em`` (built with ``maximal=False``) into the stage-2 model in place.

    Adds ``allocated >= allocated_units`` (GPU units), the ``u`` / ``w`` columns and rows of the module
    docstring, and replaces the objective by ``sum count_m w[n,m]`` (GPU units x task counts). Returns
    the (N, M) column indices of ``w`` and ``u`` (-1 where shape m never counts on node n).
    """
    if em.maximal:
        raise ValueError("the fragmentation model needs exact patterns (build_exact(maximal=False))")
    agg, model = em.agg, em.model
    cluster = agg.instance.cluster
    n_nodes = cluster.n_nodes
    demand = np.asarray(model.obj, dtype=float)
    cols = np.flatnonzero(demand)
    model.add_row(cols, demand[cols], lo=allocated_units)
    model.obj = [0.0] * model.n_vars
    access = workload.access(cluster.models)[:, cluster.model_index]          # (M, N)
    cpu_shape, num_gpu = agg.column("cpu_milli"), agg.column("num_gpu")
    w_cols = np.full((n_nodes, len(workload)), -1, dtype=np.int64)
    u_cols = np.full_like(w_cols, -1)
    for n in range(n_nodes):
        g = int(cluster.gpu[n])
        ms = np.flatnonzero(access[:, n] & (workload.num_gpu <= g) & (workload.cpu_milli <= cluster.cpu_milli[n]))
        if g == 0 or ms.size == 0:
            continue
        u = model.add_vars(ms.size, ub=1)
        w = model.add_vars(ms.size, ub=agg.capacity * g, obj=workload.counts[ms])
        u_cols[n, ms], w_cols[n, ms] = u, w
        xs = np.flatnonzero(em.x[n] >= 0)
        whole = xs[agg.whole[xs]]
        free_q = agg.capacity - em.patterns[n] @ agg.values                     # (Q,) units
        # free_gpus(n) = G_n - sum_q p[n,q] - sum_whole k x[n,s]; rows below carry it as that expression
        gpu_idx = np.concatenate([em.p[n], em.x[n, whole]])
        gpu_used = np.concatenate([np.ones(em.p[n].size), num_gpu[whole]])
        for k, m in enumerate(ms.tolist()):
            model.add_row(np.append(em.x[n, xs], u[k]), np.append(cpu_shape[xs], workload.cpu_milli[m]),
                          hi=int(cluster.cpu_milli[n]))
            if workload.num_gpu[m] >= 2:  # free_gpus >= k u
                model.add_row(np.append(gpu_idx, u[k]), np.append(gpu_used, workload.num_gpu[m]), hi=g)
            model.add_row([w[k], u[k]], [1.0, -float(agg.capacity * g)], hi=0)
            # w <= sum_q free_q [free_q >= milli] p + C (G - sum_q p - sum k x)
            big = free_q * agg.unit >= workload.gpu_milli[m]
            coef = np.concatenate([agg.capacity - np.where(big, free_q, 0), agg.capacity * num_gpu[whole]])
            model.add_row(np.append(gpu_idx, w[k]), np.append(coef, 1.0), hi=agg.capacity * g)
    return w_cols, u_cols


def run_min_frag(instance: Instance, method: str, solver: str, time_limit: float = 60.0,
                 warm_start: Placement | None = None, threads: int | None = None) -> Solution:
    """Stage 1 (``max_gpu`` with ``solver``), then stage 2 (least fragmentation at that allocation).

    ``time_limit`` (wall seconds) is shared: stage 2 gets what stage 1 left (at least 1 s). The result is
    ``optimal`` only if both stages are proven. ``info`` holds ``fragmentation`` (the shared evaluator's
    F(M) of the returned placement, milli-GPU), ``frag_model`` (the model's value of its stage-2 incumbent),
    ``frag_lower_bound`` (proven, when stage 1 is optimal) and ``stage1_status`` / ``stage2_status``.
    """
    t0 = time.perf_counter()
    workload = Workload.from_tasks(instance.tasks)
    first = run_exact(instance, method, solver, time_limit, warm_start, threads)
    if first.placement is None:
        return first
    agg = aggregate(instance, include_cpu_only=True)
    em = build_exact(agg, maximal=False)
    build_min_frag(em, workload, first.objective // agg.unit)
    remaining = max(time_limit - (time.perf_counter() - t0), 1.0)
    start = em.encode(first.placement)  # u = w = 0 is feasible: a start with the worst objective
    options = EXACT_HIGHS_OPTIONS if solver == "highs" else None
    raw = solve_model(em.model, solver, remaining, threads, start, abs_gap=0.999, options=options)  # integral obj.
    capacity = instance.cluster.gpu_capacity_milli

    def frag(placement: Placement) -> float:
        return cluster_fragmentation(validate(instance.cluster, instance.tasks, placement), workload).total

    candidates = [] if raw.values is None else [em.decode(raw.values)]
    candidates.append(first.placement)
    # most allocated first (stage 2 may allocate more when stage 1 was not proven), then least fragmentation;
    # on a tie, stage 2's placement (listed first)
    placement = min(candidates, key=lambda pl: (-pl.allocated_milli(instance.tasks), frag(pl)))
    total = int(workload.counts.sum())  # p_m = count_m / total
    info = dict(first.info, stage1_status=first.status, stage2_status=raw.status, fragmentation=frag(placement),
                frag_model=None, frag_lower_bound=None)
    idle = capacity - placement.allocated_milli(instance.tasks)
    if raw.values is not None:  # the model's value of its own incumbent
        own_idle = capacity - candidates[0].allocated_milli(instance.tasks)
        info["frag_model"] = own_idle - agg.unit * raw.objective / total
    if raw.bound is not None and first.status == "optimal":
        info["frag_lower_bound"] = idle - agg.unit * raw.bound / total
    sol = make_solution(instance, method, solver, first.status, placement, first.bound, time.perf_counter() - t0,
                        "exact", info=info)
    if sol.status == "optimal" and raw.status != "optimal":
        # allocation proven, fragmentation not
        sol = dataclasses.replace(sol, status="time_limit" if raw.status == "time_limit" else "feasible")
    return sol

