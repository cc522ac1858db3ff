"""Exact, relaxed and flawed formulations of the offline placement problem (docs/semantics.md "Offline optimum").

``solve(instance, method)`` returns a validated :class:`Solution`: the allocated milli-GPU of the
placement found, the best proven upper bound and the gap; ``objective="min_frag"`` (exact methods) then
minimizes the fragmentation of docs/semantics.md at the optimal allocation. Solvers (PuLP: CBC, HiGHS; OR-Tools CP-SAT)
are imported here only, never by :mod:`fgdopt`.
"""

from formulations.solution import KINDS, STATUSES, Solution
from formulations.solve import EXACT, FLAWED, METHODS, RELAXATIONS, solve

__all__ = ["EXACT", "FLAWED", "KINDS", "METHODS", "RELAXATIONS", "STATUSES", "Solution", "solve"]
