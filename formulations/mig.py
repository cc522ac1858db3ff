"""Exact MIG placement (CP-SAT and MILP over GPU x profile x allowed start) and a configuration LP bound.

The exact model, per node n (model j, G_n GPUs):

* ``y[n, g, p, s]`` binary: GPU g holds an instance of profile p at allowed start s (only the profiles the
  tasks ask for on model j); slice overlap: for every GPU and memory slice q, ``sum y`` over the (p, s)
  covering q is <= 1;
* ``z[n, k]`` integer: how many tasks of shape k (``cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec``; tasks
  of one shape are interchangeable) go to n, 0 where the shape's ``gpu_spec`` excludes n's model (a cluster may
  mix MIG models); ``sum_n z[n, k] <= count_k``; CPU and memory rows per node;
* profile link: ``sum_{k -> p} num_gpu_k z[n, k] <= sum_{g, s} y[n, g, p, s]`` (a whole-GPU task of k GPUs
  takes k full-GPU instances, which are on distinct GPUs by the overlap rows);
* GPU symmetry: the used slices of GPU g >= those of GPU g+1 (GPUs of one node are interchangeable).

Objective: accepted memory slices ``sum size_p num_gpu_k z[n, k]`` (``objective="slices"``) or accepted tasks
(``"tasks"``). The solution is decoded to a :class:`~fgdopt.state.Placement` with start slices and judged by
:func:`~fgdopt.state.validate`; the status is the solver's own (``optimal`` only when the bound meets the
objective, :class:`~formulations.solution.Solution`), with ``objective`` and ``bound`` in slices (or tasks).

The configuration bound: the profile multisets that fit one GPU are few (A100: 1g, 2g, 3g, 4g, 7g give a few
dozen maximal ones); the LP chooses a fractional mix of configurations per node *type* (nodes of one type
pooled: a relaxation) and fractional task counts. It keeps every feasible placement feasible, so it bounds
the optimum from above.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

import numpy as np

from fgdopt.instance import Instance
from fgdopt.mig.slices import MIG_MODELS, MigModel, MigProfile
from fgdopt.model import spec_allows
from fgdopt.state import Placement, validate
from formulations.backends import solve_model
from formulations.linear import LinearModel
from formulations.solution import Solution

OBJECTIVES = ("slices", "tasks")


def _shapes(instance: Instance) -> tuple[list[tuple], list[list[int]]]:
    """Distinct task shapes (cpu, mem, num_gpu, gpu_milli, gpu_spec) and the task ids of each, in task order."""
    t = instance.tasks
    ids: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(t.cpu_milli.tolist(), t.memory_mib.tolist(), t.num_gpu.tolist(), t.gpu_milli.tolist(),
                                t.gpu_spec.tolist(), strict=True)):
        ids.setdefault(key, []).append(i)
    return list(ids), list(ids.values())


def _prof(model: MigModel, num: int, milli: int) -> MigProfile | None:
    return model.profile_for(milli) if num else None


def _allowed(shape: tuple, model: str) -> bool:
    """Whether tasks of ``shape`` (of :func:`_shapes`) may run on a node of GPU model ``model`` (their ``gpu_spec``,
    docs/semantics.md "Feasibility"; a CPU-only task anywhere)."""
    return not shape[2] or spec_allows(shape[4], model)


class MigModelBuild:
    """The exact model's columns: ``y[(n, g, profile, start)]``, ``z[(n, k)]``, shapes and task ids."""

    def __init__(self, instance: Instance, objective: str = "slices"):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective {objective!r} not in {OBJECTIVES}")
        c = instance.cluster
        self.instance, self.shapes, self.ids = instance, *_shapes(instance)
        self.lm = LinearModel("mig-exact")
        self.y: dict[tuple[int, int, str, int], int] = {}
        self.z: dict[tuple[int, int], int] = {}
        models = [MIG_MODELS[m] for m in c.model]
        for n in range(c.n_nodes):
            model = models[n]
            profs = {p.name: p for k in self.shapes
                     if _allowed(k, c.model[n]) and (p := _prof(model, k[2], k[3])) is not None}
            for g in range(int(c.gpu[n])):
                cover: dict[int, list[int]] = {q: [] for q in range(model.n_slices)}
                used, sizes = [], []
                for p in profs.values():
                    for s in p.starts:
                        j = int(self.lm.add_vars(1, ub=1)[0])
                        self.y[(n, g, p.name, s)] = j
                        used.append(j)
                        sizes.append(p.size)
                        for q in range(s, s + p.size):
                            cover[q].append(j)
                for cols in cover.values():
                    if len(cols) > 1:
                        self.lm.add_row(cols, 1, hi=1)
                if g > 0 and used:
                    prev = [(self.y[key], profs[key[2]].size) for key in self.y if key[0] == n and key[1] == g - 1]
                    self.lm.add_row([j for j, _ in prev] + used, [w for _, w in prev] + [-w for w in sizes], lo=0)
            for k, (_, _, num, milli, _) in enumerate(self.shapes):
                p = _prof(model, num, milli)
                gain = (num * p.size if p else 0) if objective == "slices" else 1
                most = len(self.ids[k]) if _allowed(self.shapes[k], c.model[n]) else 0
                self.z[(n, k)] = int(self.lm.add_vars(1, ub=most, obj=gain)[0])
            zs = [(self.z[(n, k)], sh) for k, sh in enumerate(self.shapes)]
            self.lm.add_row([j for j, _ in zs], [sh[0] for _, sh in zs], hi=float(c.cpu_milli[n]))
            self.lm.add_row([j for j, _ in zs], [sh[1] for _, sh in zs], hi=float(c.memory_mib[n]))
            for name in profs:
                need = [(self.z[(n, k)], sh[2]) for k, sh in enumerate(self.shapes)
                        if sh[2] and _allowed(sh, c.model[n]) and _prof(model, sh[2], sh[3]).name == name]
                have = [j for key, j in self.y.items() if key[0] == n and key[2] == name]
                self.lm.add_row([j for j, _ in need] + have, [w for _, w in need] + [-1] * len(have), hi=0)
        for k in range(len(self.shapes)):
            self.lm.add_row([self.z[(n, k)] for n in range(c.n_nodes)], 1, hi=len(self.ids[k]))

    def decode(self, values: np.ndarray) -> Placement:
        """The placement of a solution vector (tasks of a shape taken in task order)."""
        c, t = self.instance.cluster, self.instance.tasks
        node = np.full(len(t), -1)
        gpus: list[tuple[int, ...]] = [()] * len(t)
        starts: list[tuple[int, ...]] = [()] * len(t)
        pool = [list(ids) for ids in self.ids]
        for n in range(c.n_nodes):
            slots: dict[str, list[tuple[int, int]]] = {}
            for (nn, g, name, s), j in self.y.items():
                if nn == n and values[j] > 0.5:
                    slots.setdefault(name, []).append((g, s))
            model = MIG_MODELS[c.model[n]]
            for k, (_, _, num, milli, _) in enumerate(self.shapes):
                for _ in range(int(round(values[self.z[(n, k)]]))):
                    i = pool[k].pop(0)
                    node[i] = n
                    if num:
                        got = [slots[model.profile_for(milli).name].pop(0) for _ in range(num)]
                        gpus[i], starts[i] = tuple(g for g, _ in got), tuple(s for _, s in got)
        return Placement(node, tuple(gpus), tuple(starts))

    def encode(self, placement: Placement) -> np.ndarray:
        """The solution vector of a valid placement (GPUs of each node renumbered by used slices, descending)."""
        c, t = self.instance.cluster, self.instance.tasks
        x = np.zeros(self.lm.n_vars)
        key_of = {i: k for k, ids in enumerate(self.ids) for i in ids}
        inst: dict[int, list[tuple[int, str, int, int]]] = {}
        for i in np.flatnonzero(placement.placed):
            n = int(placement.node[i])
            x[self.z[(n, key_of[i])]] += 1
            if t.num_gpu[i]:
                p = MIG_MODELS[c.model[n]].profile_for(int(t.gpu_milli[i]))
                for g, s in zip(placement.gpus[i], placement.starts[i], strict=True):
                    inst.setdefault(n, []).append((g, p.name, s, p.size))
        for n, items in inst.items():
            used = Counter()
            for g, _, _, size in items:
                used[g] += size
            order = sorted(range(int(c.gpu[n])), key=lambda g: (-used[g], g))
            new = {g: r for r, g in enumerate(order)}
            for g, name, s, _ in items:
                x[self.y[(n, new[g], name, s)]] = 1
        return x


def _slices_of(instance: Instance, placement: Placement, objective: str) -> int:
    c, t = instance.cluster, instance.tasks
    if objective == "tasks":
        return int(placement.placed.sum())
    return int(sum(t.num_gpu[i] * MIG_MODELS[c.model[placement.node[i]]].profile_for(int(t.gpu_milli[i])).size
                   for i in np.flatnonzero(placement.placed) if t.num_gpu[i]))


def mig_solution(instance: Instance, method: str, solver: str, raw_status: str, placement: Placement | None,
                 bound: float | None, wall_s: float, objective: str = "slices", info: dict | None = None,
                 proven_bound: int | None = None) -> Solution:
    """Validate ``placement`` and report it as a :class:`Solution` in slices (or tasks): ``optimal`` only when the
    solver said so AND its (floored) bound meets the objective, or when ``proven_bound`` (an independent proven
    upper bound, e.g. :func:`config_bound`) meets it (``info["proof"]``); otherwise a time-limited run stays
    ``time_limit`` with the best of both bounds."""
    info = dict(info or {})
    obj = None
    if placement is not None:
        validate(instance.cluster, instance.tasks, placement)
        obj = _slices_of(instance, placement, objective)
    if bound is not None:
        bound = int(np.floor(bound + 1e-6))
        if obj is not None and bound < obj:
            raise ValueError(f"{method}: bound {bound} below the objective {obj}")
    status = raw_status
    if status == "optimal" and (bound is None or obj is None or bound != obj):
        status = "feasible"
    if proven_bound is not None and (bound is None or proven_bound < bound):
        bound = max(int(proven_bound), obj or 0)
        if obj is not None and bound == obj and status != "optimal":
            status, info["proof"] = "optimal", "config-lp bound"
    gap = None if bound is None or obj is None else ((bound - obj) / bound if bound else 0.0)
    return Solution(method, solver, status, obj, bound, gap, placement, wall_s, "exact",
                    info={"unit": objective, **info})


def solve_mig(instance: Instance, solver: str = "cpsat", objective: str = "slices", time_limit: float = 30.0,
              threads: int = 1, warm_start: Placement | None = None, proven_bound: int | None = None) -> Solution:
    """The exact optimum of a MIG instance with ``solver`` (``cpsat`` or ``highs``; ``cbc`` works too).

    Parameters
    ----------
    objective : ``slices`` (accepted memory slices) or ``tasks`` (accepted tasks).
    time_limit : wall seconds for the solver call; a run stopped by it keeps status ``time_limit`` and the
        solver's proven bound.
    threads : solver threads (CP-SAT workers).
    warm_start : a valid MIG placement (e.g. a policy's): MIP start / CP-SAT hint.
    proven_bound : an independent proven upper bound (``config_bound(instance).bound``): a run whose incumbent
        meets it is optimal even if the solver stopped on its limit.

    Returns
    -------
    Solution (objective and bound in slices or tasks, ``info["unit"]``), its placement validated.
    """
    t0 = time.perf_counter()
    build = MigModelBuild(instance, objective)
    start = build.encode(warm_start) if warm_start is not None else None
    raw = solve_model(build.lm, solver, time_limit=time_limit, threads=threads, start=start,
                      abs_gap=0.999 if solver != "cpsat" else None)
    placement = build.decode(raw.values) if raw.values is not None else None
    if placement is not None and warm_start is not None and \
            _slices_of(instance, warm_start, objective) > _slices_of(instance, placement, objective):
        placement = warm_start
    return mig_solution(instance, f"mig-{solver}", solver, raw.status, placement, raw.bound, time.perf_counter() - t0,
                        objective, {"vars": build.lm.n_vars, "rows": len(build.lm.rows)}, proven_bound)


# -- configuration bound -----------------------------------------------------------------------------------
def gpu_configurations(model: MigModel, profiles: list[MigProfile]) -> list[tuple[int, ...]]:
    """Every maximal multiset of ``profiles`` that fits one GPU of ``model`` (counts per profile).

    Enumerated over non-overlapping sets of (profile, allowed start) placements.

    >>> m = MIG_MODELS["A30-24GB"]
    >>> sorted(gpu_configurations(m, list(m.profiles)))
    [(0, 0, 1), (0, 2, 0), (2, 1, 0), (4, 0, 0)]
    """
    places = [(i, p.masks[k]) for i, p in enumerate(profiles) for k in range(len(p.starts))]
    found: set[tuple[int, ...]] = set()

    def grow(pos: int, occ: int, counts: list[int]) -> None:
        extended = False
        for q in range(pos, len(places)):
            i, mask = places[q]
            if not occ & int(mask):
                counts[i] += 1
                grow(q + 1, occ | int(mask), counts)
                counts[i] -= 1
                extended = True
        if not extended:
            found.add(tuple(counts))

    grow(0, 0, [0] * len(profiles))
    return [c for c in found if not any(o != c and all(a >= b for a, b in zip(o, c, strict=True)) for o in found)]


def config_bound(instance: Instance, objective: str = "slices", time_limit: float = 30.0) -> Solution:
    """The configuration LP bound (module docstring), as a :class:`Solution` of kind ``relaxation`` in slices."""
    t0 = time.perf_counter()
    c = instance.cluster
    shapes, ids = _shapes(instance)
    types = Counter(zip(c.cpu_milli.tolist(), c.memory_mib.tolist(), c.gpu.tolist(), c.model.tolist(), strict=True))
    lm = LinearModel("mig-config-lp")
    z_of: dict[tuple, dict[int, int]] = {}
    for (cpu, mem, gpus, mname), mult in types.items():
        model = MIG_MODELS[mname]
        profs = list({p.name: p for k in shapes
                      if _allowed(k, mname) and (p := _prof(model, k[2], k[3])) is not None}.values())
        configs = gpu_configurations(model, profs) if profs else []
        w = lm.add_vars(len(configs), ub=gpus * mult, integer=False)
        lm.add_row(w, 1, hi=gpus * mult)
        z = {}
        for k, (_, _, num, milli, _) in enumerate(shapes):
            p = _prof(model, num, milli)
            gain = (num * p.size if p else 0) if objective == "slices" else 1
            z[k] = int(lm.add_vars(1, ub=len(ids[k]) if _allowed(shapes[k], mname) else 0, integer=False,
                                   obj=gain)[0])
        z_of[(cpu, mem, gpus, mname)] = z
        lm.add_row(list(z.values()), [shapes[k][0] for k in z], hi=cpu * mult)
        lm.add_row(list(z.values()), [shapes[k][1] for k in z], hi=mem * mult)
        for pi, p in enumerate(profs):
            need = [(z[k], sh[2]) for k, sh in enumerate(shapes)
                    if sh[2] and _allowed(sh, mname) and _prof(model, sh[2], sh[3]).name == p.name]
            lm.add_row([j for j, _ in need] + w.tolist(), [a for _, a in need] + [-cf[pi] for cf in configs], hi=0)
    for k in range(len(shapes)):
        lm.add_row([z[k] for z in z_of.values()], 1, hi=len(ids[k]))
    raw = solve_model(lm, "highs", time_limit=time_limit, threads=1)
    bound = None if raw.objective is None or raw.status != "optimal" else int(np.floor(raw.objective + 1e-6))
    return Solution("mig-config-lp", "highs", raw.status if raw.status != "optimal" else "optimal", None, bound, None,
                    None, time.perf_counter() - t0, "relaxation", info={"unit": objective})


def brute_force(instance: Instance, objective: str = "slices") -> int:
    """The optimum by enumeration (tiny instances only): every task's (skip | node, GPU, start) choice, through
    :meth:`ClusterState.place` -- the independent check of :func:`solve_mig` in the tests."""
    from fgdopt.state import ClusterState, InfeasiblePlacement

    c, t = instance.cluster, instance.tasks
    best = 0

    def options(i: int, state: ClusterState):
        yield None
        for n in range(c.n_nodes):
            if t.num_gpu[i] == 0:
                yield n, (), ()
                continue
            prof = MIG_MODELS[c.model[n]].profile_for(int(t.gpu_milli[i]))
            for gs in itertools.combinations(range(int(c.gpu[n])), int(t.num_gpu[i])):
                for ss in itertools.product(prof.starts, repeat=len(gs)):
                    yield n, gs, ss

    def rec(i: int, state: ClusterState, value: int) -> None:
        nonlocal best
        if i == len(t):
            best = max(best, value)
            return
        for opt in options(i, state):
            if opt is None:
                rec(i + 1, state, value)
                continue
            try:
                state.place(i, *opt)
            except InfeasiblePlacement:
                continue
            gain = 1 if objective == "tasks" else (
                int(t.num_gpu[i]) * MIG_MODELS[c.model[opt[0]]].profile_for(int(t.gpu_milli[i])).size
                if t.num_gpu[i] else 0)
            rec(i + 1, state, value + gain)
            state.remove(i)

    rec(0, ClusterState(c, t), 0)
    return best
