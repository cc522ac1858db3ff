"""The one front: ``solve(instance, method, ...) -> Solution``."""

from __future__ import annotations

import time

from fgdopt.instance import Instance
from fgdopt.state import Placement
from formulations.configs import run_config_milp
from formulations.exact import run_exact
from formulations.flawed import per_gpu_dimension_milp, unified_device_milp
from formulations.minfrag import run_min_frag
from formulations.relax import config_lp_bound, lp_bound, unified_bound
from formulations.solution import Solution, make_solution
from formulations.typeconfig import run_type_configs

METHODS = ("milp-cbc", "milp-highs", "cpsat", "config-milp", "lp", "unified-device", "config-lp",
           "unified-device-milp", "per-gpu-dimension-milp", "config-types")
EXACT = ("milp-cbc", "milp-highs", "cpsat", "config-milp", "config-types")
MIN_FRAG = ("milp-cbc", "milp-highs", "cpsat")
"""The exact methods that also minimize fragmentation (their models know each GPU's content)."""
RELAXATIONS = ("lp", "unified-device", "config-lp")
FLAWED = ("unified-device-milp", "per-gpu-dimension-milp")
OBJECTIVES = ("max_gpu", "min_frag")
GANGS = ("milp-cbc", "milp-highs", "cpsat")
"""The methods whose model takes gangs (tasks of ``workers > 1``, :mod:`formulations.exact`), for ``max_gpu``; the
others report such an instance ``skipped``."""


def kind_of(method: str) -> str:
    """``"exact"``, ``"relaxation"`` or ``"flawed"``: what the :class:`Solution` of ``method`` is."""
    return "exact" if method in EXACT else ("relaxation" if method in RELAXATIONS else "flawed")


def solve(instance: Instance, method: str, objective: str = "max_gpu", time_limit: float = 60.0,
          warm_start: Placement | None = None, threads: int | None = None, solver: str | None = None) -> Solution:
    """Run ``method`` (one of :data:`METHODS`; ``method="milp", solver="cbc"|"highs"`` is accepted too).

    Parameters
    ----------
    instance : the cluster and the tasks to place.
    objective : ``"max_gpu"`` (maximize allocated milli-GPU) or, for the methods in :data:`MIN_FRAG`, ``"min_frag"``
        (then the least fragmentation at that allocation, :mod:`formulations.minfrag`).
    time_limit : wall-clock seconds for the whole run, model building included (each solver call gets what
        is left, at least 0.5 s; CBC, which does not check its own limit in every phase, is interrupted by a
        guard 1 s after it and killed 5 s later). Measured overrun: <= 2.5 s.
    warm_start : a feasible placement (e.g. the best online policy's): MIP start / CP-SAT hint and
        incumbent floor of the exact methods (ignored by relaxations and flawed models).
    threads : solver threads (default: the machine's cores; CP-SAT gets at least
        :data:`~formulations.backends.CPSAT_MIN_WORKERS` workers).

    Returns
    -------
    Solution, already validated. A solver crash is reported as status ``"error"`` (``info["error"]``); an instance
    with gangs, for a method or objective that takes none (:data:`GANGS`), as ``"skipped"`` (``info["reason"]``).

    Examples
    --------
    ``adv-reject-500``: three 500-milli tasks, then two 600s, on three GPUs. FGD places every task that fits and
    allocates 2100 milli-GPU; the optimum rejects a 500 and allocates 2200, proven (bound = objective); the LP
    relaxation bounds it by 2400 with no placement.

    >>> from fgdopt.simulate import run_online
    >>> from fgdopt.suites import adversarial_instances
    >>> instance = {i.name: i for i in adversarial_instances()}["adv-reject-500"]
    >>> fgd = run_online(instance.cluster, instance.tasks, "fgd")
    >>> best = solve(instance, "milp-highs", time_limit=10, warm_start=fgd.placement)
    >>> fgd.allocated_milli, best.status, best.objective, best.bound          # milli-GPU
    (2100, 'optimal', 2200, 2200)
    >>> lp = solve(instance, "lp", time_limit=10)
    >>> lp.kind, lp.objective, lp.bound
    ('relaxation', None, 2400)
    """
    if method == "milp":
        method = f"milp-{solver or 'highs'}"
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose one of {OBJECTIVES}")
    if objective == "min_frag" and method not in MIN_FRAG:
        raise ValueError(f"objective 'min_frag' needs one of {MIN_FRAG}, not {method!r}")
    if instance.tasks.has_gangs and (method not in GANGS or objective != "max_gpu"):
        return make_solution(instance, method, solver or "", "skipped", None, None, 0.0, kind_of(method),
                             info={"reason": f"gangs (workers > 1): only {', '.join(GANGS)} with objective "
                                             "max_gpu take them"})
    t0 = time.perf_counter()
    try:
        if method == "config-milp":
            return run_config_milp(instance, method, "cbc", time_limit, warm_start, threads)
        if method == "config-types":
            return run_type_configs(instance, method, time_limit, warm_start, threads)
        if method in EXACT:
            backend = "cpsat" if method == "cpsat" else method.removeprefix("milp-")
            run = run_min_frag if objective == "min_frag" else run_exact
            return run(instance, method, backend, time_limit, warm_start, threads)
        runner = {"lp": lp_bound, "unified-device": unified_bound, "config-lp": config_lp_bound,
                  "unified-device-milp": unified_device_milp, "per-gpu-dimension-milp": per_gpu_dimension_milp}[method]
        return runner(instance, time_limit, threads)
    except (RuntimeError, OSError) as exc:  # a solver binary / library failure, not a modelling error
        return make_solution(instance, method, solver or "", "error", None, None, time.perf_counter() - t0,
                             kind_of(method), info={"error": repr(exc)})
