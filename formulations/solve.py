"""The one front: ``solve(instance, method, ...) -> Solution``."""

from __future__ import annotations

import time

from fgdopt.instance import Instance
from fgdopt.state import Placement
from formulations.exact import run_exact
from formulations.flawed import per_gpu_dimension_milp, unified_device_milp
from formulations.relax import config_lp_bound, lp_bound, unified_bound
from formulations.solution import Solution, make_solution

METHODS = ("milp-cbc", "milp-highs", "cpsat", "lp", "unified-device", "config-lp",
           "unified-device-milp", "per-gpu-dimension-milp")
EXACT = ("milp-cbc", "milp-highs", "cpsat")
RELAXATIONS = ("lp", "unified-device", "config-lp")
FLAWED = ("unified-device-milp", "per-gpu-dimension-milp")
OBJECTIVES = ("max_gpu",)


def solve(instance: Instance, method: str, objective: str = "max_gpu", time_limit: float = 60.0,
          warm_start: Placement | None = None, threads: int | None = None, solver: str | None = None) -> Solution:
    """Run ``method`` (one of :data:`METHODS`; ``method="milp", solver="cbc"|"highs"`` is accepted too).

    Parameters
    ----------
    instance : the cluster and the tasks to place.
    objective : ``"max_gpu"`` (maximize allocated milli-GPU).
    time_limit : seconds given to the solver (per solver call; model building not counted).
    warm_start : a feasible placement (e.g. the best online policy's): MIP start / CP-SAT hint and
        incumbent floor of the exact methods (ignored by relaxations and flawed models).
    threads : solver threads (default: the machine's cores).

    Returns
    -------
    Solution, already validated. A solver crash is reported as status ``"error"`` (``info["error"]``).
    """
    if method == "milp":
        method = f"milp-{solver or 'highs'}"
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose one of {OBJECTIVES}")
    t0 = time.perf_counter()
    try:
        if method in EXACT:
            backend = "cpsat" if method == "cpsat" else method.removeprefix("milp-")
            return run_exact(instance, method, backend, time_limit, warm_start, threads)
        runner = {"lp": lp_bound, "unified-device": unified_bound, "config-lp": config_lp_bound,
                  "unified-device-milp": unified_device_milp, "per-gpu-dimension-milp": per_gpu_dimension_milp}[method]
        return runner(instance, time_limit, threads)
    except (RuntimeError, OSError) as exc:  # a solver binary / library failure, not a modelling error
        kind = "exact" if method in EXACT else ("relaxation" if method in RELAXATIONS else "flawed")
        return make_solution(instance, method, solver or "", "error", None, None, time.perf_counter() - t0, kind,
                             info={"error": repr(exc)})
