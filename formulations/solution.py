"""The result of one formulation run, checked before it is handed out."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fgdopt.instance import Instance
from fgdopt.state import Placement, validate

STATUSES = ("optimal", "feasible", "infeasible", "time_limit", "skipped", "error")
KINDS = ("exact", "relaxation", "flawed")
BOUND_TOLERANCE = 1e-6
"""Relative solver tolerance allowed when a bound sits (numerically) below the objective."""


@dataclass(frozen=True, eq=False)
class Solution:
    """One run of ``method``: the placement found and / or the proven upper bound (both milli-GPU).

    Attributes
    ----------
    method, solver : what ran (e.g. ``"milp-highs"``, ``"highs"``).
    status : one of :data:`STATUSES`; ``optimal`` only when the bound equals the objective; ``time_limit``
        when the solver stopped on its limit (the placement, if any, is the incumbent, ``bound`` the solver's
        proven bound); ``feasible`` when a solver claimed optimality its bound does not confirm; ``skipped``
        when the method does not apply to the instance (``info["reason"]``: e.g. too many configurations).
    objective : allocated milli-GPU of ``placement`` (None for a pure bound).
    bound : best proven upper bound on the allocated milli-GPU of any feasible placement (None if unknown).
    gap : ``(bound - objective) / bound`` (None if either is missing).
    placement : a placement that passed :func:`fgdopt.state.validate` (or None).
    wall_s : wall-clock seconds, model building included.
    kind : ``exact``, ``relaxation`` or ``flawed``.
    claimed : for flawed methods, the objective the flawed model claimed (milli-GPU).
    info : extra figures (model size, iterations, ...).
    """

    method: str
    solver: str
    status: str
    objective: int | None
    bound: int | None
    gap: float | None
    placement: Placement | None
    wall_s: float
    kind: str
    claimed: int | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} not in {STATUSES}")
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} not in {KINDS}")
        if (self.placement is None) != (self.objective is None):
            raise ValueError("objective and placement go together")
        if self.bound is not None and self.objective is not None and self.bound < self.objective:
            raise ValueError(f"{self.method}: bound {self.bound} < objective {self.objective}")
        if self.status == "optimal" and self.kind == "exact" and self.bound != self.objective:
            raise ValueError(f"{self.method}: 'optimal' with bound {self.bound} != objective {self.objective}")


def make_solution(instance: Instance, method: str, solver: str, status: str, placement: Placement | None,
                  bound: float | None, wall_s: float, kind: str, claimed: int | None = None,
                  info: dict | None = None) -> Solution:
    """Validate ``placement`` on ``instance``, floor ``bound`` to an integer and assemble the :class:`Solution`.

    A bound below the objective by more than :data:`BOUND_TOLERANCE` (relative) is an error
    (``ValueError``); within it, the bound is raised to the objective. The rounding tolerance never lifts a
    bound above the trivial one (the cluster's GPU capacity, or the tasks' whole GPU demand if smaller), so a
    run that places every task, or fills the cluster, is proven by it. An exact run whose bound
    meets its objective is reported ``optimal``; one that claimed optimality but does not is ``feasible``.
    """
    objective = None
    if placement is not None:
        validate(instance.cluster, instance.tasks, placement)
        objective = placement.allocated_milli(instance.tasks)
    if bound is not None:
        if not math.isfinite(bound):
            bound = None
        else:
            if objective is not None and bound < objective * (1 - BOUND_TOLERANCE) - 1e-6:
                raise ValueError(f"{method}: bound {bound} below the objective {objective}")
            trivial = min(instance.cluster.gpu_capacity_milli, int(instance.tasks.gpu_demand.sum()))
            bound = min(int(math.floor(bound + BOUND_TOLERANCE * max(1.0, abs(bound)))), trivial)
            if objective is not None:
                bound = max(bound, objective)
    if kind == "exact" and objective is not None:
        if bound is not None and bound == objective:
            status = "optimal"
        elif status == "optimal":
            status = "feasible"
    gap = None
    if bound is not None and objective is not None:
        gap = (bound - objective) / bound if bound > 0 else 0.0
    return Solution(method, solver, status, objective, bound, gap, placement, wall_s, kind, claimed, dict(info or {}))
