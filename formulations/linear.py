"""A solver-neutral linear model (variables, rows, objective) that every backend translates.

The exact, relaxed and flawed formulations are all built once as a :class:`LinearModel`; the
backends (:mod:`formulations.backends`) hand the same model to PuLP (CBC, HiGHS) or CP-SAT. The
objective is always maximized. Coefficients of the exact models are integers (milli-cores, MiB,
GPU units), which CP-SAT needs; LP relaxations and pricing problems may carry floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

INF = math.inf


@dataclass
class LinearModel:
    """Columns (bounds, integrality, objective) and sparse rows ``lo <= sum coef * x[idx] <= hi``."""

    name: str = "model"
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    obj: list[float] = field(default_factory=list)
    rows: list[tuple[np.ndarray, np.ndarray, float, float]] = field(default_factory=list)

    @property
    def n_vars(self) -> int:
        return len(self.lb)

    def add_vars(self, n: int, ub, lb=0, integer: bool = True, obj=0.0) -> np.ndarray:
        """Append ``n`` columns (``ub``, ``lb``, ``obj`` scalars or length-``n`` arrays); returns their indices."""
        start = self.n_vars
        self.lb.extend(np.broadcast_to(np.asarray(lb, dtype=float), (n,)).tolist())
        self.ub.extend(np.broadcast_to(np.asarray(ub, dtype=float), (n,)).tolist())
        self.obj.extend(np.broadcast_to(np.asarray(obj, dtype=float), (n,)).tolist())
        self.integer.extend([integer] * n)
        return np.arange(start, start + n, dtype=np.int64)

    def add_row(self, idx, coef, lo: float = -INF, hi: float = INF) -> None:
        """Add ``lo <= sum_k coef[k] * x[idx[k]] <= hi`` (empty rows are dropped)."""
        idx = np.asarray(idx, dtype=np.int64)
        coef = np.broadcast_to(np.asarray(coef, dtype=float), idx.shape)
        keep = coef != 0
        if keep.any():
            self.rows.append((idx[keep], coef[keep].copy(), lo, hi))

    def relaxed(self) -> LinearModel:
        """The same model with every integrality dropped (its LP relaxation)."""
        return LinearModel(self.name + "-lp", self.lb, self.ub, [False] * self.n_vars, self.obj, self.rows)

    def objective_of(self, values: np.ndarray) -> float:
        return float(np.dot(self.obj, values))

    def check(self, values: np.ndarray, tol: float = 1e-6) -> None:
        """Raise ``ValueError`` unless ``values`` satisfies every bound and row (used on warm starts)."""
        values = np.asarray(values, dtype=float)
        if np.any(values < np.asarray(self.lb) - tol) or np.any(values > np.asarray(self.ub) + tol):
            raise ValueError(f"{self.name}: a start value is outside its bounds")
        for k, (idx, coef, lo, hi) in enumerate(self.rows):
            act = float(np.dot(coef, values[idx]))
            if act < lo - tol or act > hi + tol:
                raise ValueError(f"{self.name}: start violates row {k} ({lo} <= {act} <= {hi})")
