"""The offline optimum with and without the best-ring rule: the price of topology, measured exactly.

A set-packing MILP over the allowed GPU sets of each node (small instances: a few 8-GPU nodes, tens of
tasks). Tasks are grouped by shape s (CPU, memory, GPUs, milli-GPU per GPU, gpu_spec) with ``count_s``
copies. Integer variables, for node n (only shapes that fit an empty n and whose spec admits its model):

* ``x[n,s]`` -- CPU-only tasks of shape s on n;
* ``y[n,s,g]`` -- sharing tasks of shape s on GPU g of n;
* ``z[n,s,S]`` (binary) -- a whole-GPU task of shape s (k GPUs) on the GPU set S of n, for every *allowed*
  k-set S: all k-sets without the rule; with the rule (``best_ring=True``) and ``k >= 2``, only the sets whose
  ring reaches the best ring of k GPUs on an empty node of n's type (:class:`fgdopt.topology.Topology`).

Rows: per node, CPU and memory; per GPU g, ``sum_s milli_s y[n,s,g] + 1000 sum_{s,S ∋ g} z[n,s,S] <= 1000``
(a GPU is shared or given whole, never both); per shape, at most ``count_s`` placed. Objective: allocated
milli-GPU. Every feasible placement that obeys the rule is a solution of the model with the rule, and the
rule only removes columns, so ``OPT(rule) <= OPT(no rule)``; the difference is the price of topology.

Not registered in :func:`formulations.solve.solve`: it needs a topology beside the instance.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict

import numpy as np

from fgdopt.inflation import draw_until
from fgdopt.instance import Instance
from fgdopt.model import GPU_MILLI, Cluster, TaskSet, spec_allows
from fgdopt.state import UNPLACED, Placement
from fgdopt.topology import ClusterTopology
from formulations.backends import solve_model
from formulations.linear import LinearModel
from formulations.solution import Solution, make_solution


def build_topology_model(instance: Instance, topology: ClusterTopology, best_ring: bool):
    """The model of the module docstring: ``(model, columns, shapes)`` with ``columns`` a list of
    ``(node, shape, gpus)`` per variable (``gpus``: () for CPU-only, (g,) for sharing, S for whole GPUs) and
    ``shapes`` a dict ``shape -> task indices``."""
    cluster, tasks = instance.cluster, instance.tasks
    shapes: dict[tuple, list[int]] = defaultdict(list)
    for i in range(len(tasks)):
        t = tasks[i]
        shapes[(t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.gpu_spec)].append(i)
    keys = list(shapes)
    model = LinearModel("topology-best-ring" if best_ring else "topology")
    columns: list[tuple[int, int, tuple[int, ...]]] = []
    per_shape: dict[int, list[int]] = defaultdict(list)
    for n in range(cluster.n_nodes):
        g_n, topo = int(cluster.gpu[n]), topology.of(n)
        cpu_idx, cpu_coef, mem_coef = [], [], []
        gpu_rows: dict[int, tuple[list[int], list[float]]] = {g: ([], []) for g in range(g_n)}
        for s, (cpu, mem, k, milli, spec) in enumerate(keys):
            if cpu > cluster.cpu_milli[n] or mem > cluster.memory_mib[n] or k > g_n:
                continue
            if k and not spec_allows(spec, str(cluster.model[n])):
                continue
            count = len(shapes[keys[s]])
            if k == 0:
                options, ub = [()], count
            elif milli < GPU_MILLI:
                options, ub = [(g,) for g in range(g_n)], min(count, GPU_MILLI // milli)
            else:
                options = list(itertools.combinations(range(g_n), k))
                if best_ring and k >= 2:
                    best = topo.best_ring(k)
                    options = [o for o in options if topo.ring_of(o) >= best]
                ub = 1
            cols = model.add_vars(len(options), ub=ub, obj=k * milli)
            for col, gpus in zip(cols.tolist(), options, strict=True):
                columns.append((n, s, gpus))
                per_shape[s].append(col)
                cpu_idx.append(col)
                cpu_coef.append(cpu)
                mem_coef.append(mem)
                for g in gpus:
                    gpu_rows[g][0].append(col)
                    gpu_rows[g][1].append(milli)
        model.add_row(cpu_idx, cpu_coef, hi=int(cluster.cpu_milli[n]))
        model.add_row(cpu_idx, mem_coef, hi=int(cluster.memory_mib[n]))
        for idx, coef in gpu_rows.values():
            model.add_row(idx, coef, hi=GPU_MILLI)
    for s, cols in per_shape.items():
        model.add_row(cols, np.ones(len(cols)), hi=len(shapes[keys[s]]))
    return model, columns, {k: shapes[k] for k in keys}


def decode(values: np.ndarray, columns, shapes: dict, n_tasks: int) -> Placement:
    """The placement of a column vector: the tasks of each shape are handed out in index order."""
    pools = {s: list(ids) for s, ids in enumerate(shapes.values())}
    node = np.full(n_tasks, UNPLACED)
    gpus: list[tuple[int, ...]] = [()] * n_tasks
    for col, (n, s, gs) in enumerate(columns):
        for _ in range(int(round(values[col]))):
            i = pools[s].pop(0)
            node[i], gpus[i] = n, gs
    return Placement(node, tuple(gpus))


def solve_topology(instance: Instance, topology: ClusterTopology, best_ring: bool, time_limit: float = 60.0,
                   threads: int | None = 1, solver: str = "highs") -> Solution:
    """The optimum of :func:`build_topology_model` with ``solver`` (``highs``, ``cbc`` or ``cpsat``).

    Returns
    -------
    A validated :class:`Solution` (``method`` ``topology`` or ``topology-best-ring``), status and bound as the
    solver proved them; ``info`` holds the model size.
    """
    t0 = time.perf_counter()
    model, columns, shapes = build_topology_model(instance, topology, best_ring)
    raw = solve_model(model, solver, time_limit, threads, abs_gap=0.999)
    placement = decode(raw.values, columns, shapes, len(instance.tasks)) if raw.values is not None else None
    return make_solution(instance, model.name, solver, raw.status, placement, raw.bound, time.perf_counter() - t0,
                         "exact", info={"n_vars": model.n_vars, "n_rows": len(model.rows)})


def topology_instance(trace: TaskSet, n_nodes: int, seed: int, ratio: float = 1.3, model: str = "G2",
                      cpu_milli: int = 96000, memory_mib: int = 393216) -> Instance:
    """``n_nodes`` 8-GPU nodes of ``model`` (DGX-1-like under the default mapping) and trace tasks drawn
    uniformly (with ``numpy.random.default_rng(seed)``) among those fitting such a node and admitting the
    model, until the GPU demand would pass ``ratio`` x capacity (:func:`fgdopt.inflation.draw_until`)."""
    cluster = Cluster([cpu_milli] * n_nodes, [memory_mib] * n_nodes, [8] * n_nodes, [model] * n_nodes)
    ok = np.flatnonzero((trace.cpu_milli <= cpu_milli) & (trace.memory_mib <= memory_mib)
                        & np.array([n == 0 or spec_allows(s, model) for n, s in zip(trace.num_gpu, trace.gpu_spec,
                                                                                    strict=True)]))
    pool = trace.take(ok)
    rng = np.random.default_rng(seed)
    rows = draw_until(pool.gpu_demand, 0, ratio * cluster.gpu_capacity_milli, rng, batch=64)
    tasks = pool.take(rows)
    return Instance(f"topo-{model}x8-n{n_nodes}-s{seed}", cluster,
                    TaskSet(tasks.cpu_milli, tasks.memory_mib, tasks.num_gpu, tasks.gpu_milli, tasks.gpu_spec))
