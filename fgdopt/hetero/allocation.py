"""The allocation matrix X of Gavel's policies and its feasibility.

``X[i, j]`` is the fraction of time job ``i`` runs on GPU type ``j`` (on ``scale_factor[i]`` GPUs of that type at
once). X is feasible when it is non-negative, every job's fractions sum to at most 1 (a job runs on one type
at a time) and every type's time-averaged use, ``sum_i scale_factor[i] * X[i, j]``, is at most its number of
GPUs. Job ``i``'s effective throughput under X is ``sum_j X[i, j] * T[i, j]`` steps/s (``T`` its isolated
throughputs). The round-based mechanism that realizes X over time is not part of this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ALLOCATION_STATUSES = ("optimal", "time_limit", "infeasible", "error")
FEASIBILITY_TOLERANCE = 1e-6
"""Absolute slack allowed on every constraint of X (fractions of time; GPUs for the per-type rows)."""


def isolated_share(scale_factor: np.ndarray, capacity: np.ndarray, n: int | np.ndarray | None = None) -> np.ndarray:
    """Gavel's ``IsolatedPolicy``: ``G_j / (n s_i)`` of each type per job, each row scaled to sum at most 1.

    ``n`` (default the number of jobs) may be given per job: the jobs sharing the cluster with it.
    """
    scale = np.asarray(scale_factor, dtype=np.float64)
    count = np.full(len(scale), len(scale), dtype=np.float64) if n is None else np.broadcast_to(
        np.asarray(n, dtype=np.float64), scale.shape)
    x = np.asarray(capacity, dtype=np.float64)[None, :] / (count * scale)[:, None]
    return x / np.maximum(x.sum(axis=1), 1.0)[:, None]


def allocation_violation(x: np.ndarray, scale_factor: np.ndarray, capacity: np.ndarray) -> dict[str, float]:
    """How much X violates each family of constraints (0 where it holds), by name.

    Parameters
    ----------
    x : (n, k) fractions of time.
    scale_factor : (n,) GPUs per job.
    capacity : (k,) GPUs of each type.

    Returns
    -------
    ``{"negative": max(-X), "job_time": max_i (sum_j X[i, j] - 1), "capacity": max_j (use_j - capacity_j)}``,
    each clipped at 0 (fractions of time, fractions of time, GPUs).
    """
    x = np.asarray(x, dtype=np.float64)
    scale = np.asarray(scale_factor, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.float64)
    if x.shape != (len(scale), len(cap)):
        raise ValueError(f"X has shape {x.shape}, expected {(len(scale), len(cap))} (jobs x GPU types)")
    use = scale @ x
    return {"negative": float(max(0.0, -x.min(initial=0.0))),
            "job_time": float(max(0.0, (x.sum(axis=1) - 1.0).max(initial=0.0))),
            "capacity": float(max(0.0, (use - cap).max(initial=0.0)))}


def check_allocation(x: np.ndarray, scale_factor: np.ndarray, capacity: np.ndarray,
                     tol: float = FEASIBILITY_TOLERANCE) -> None:
    """Raise ``ValueError`` naming the first constraint family X violates by more than ``tol``."""
    for name, amount in allocation_violation(x, scale_factor, capacity).items():
        if amount > tol:
            raise ValueError(f"allocation violates its {name!r} constraints by {amount:.3g} (tolerance {tol:g})")


@dataclass(frozen=True, eq=False)
class Allocation:
    """The X a policy chose, checked feasible, with what the solver said.

    Attributes
    ----------
    policy : the policy's name (``formulations.hetero.POLICIES``).
    x : float64 (n, k) read-only, fractions of time per job and GPU type (None unless a solution was found).
    gpu_types : the columns' GPU type names.
    status : one of :data:`ALLOCATION_STATUSES`; ``optimal`` when every linear program solved to optimality
        (and, for the iterated ones, the certified gap is within tolerance).
    objective : the policy's objective at ``x``: ``las*`` the smallest normalized throughput (Gavel's objective,
        dimensionless), ``ftf*`` the largest finish-time ratio rho, ``makespan*`` the makespan in seconds.
    bound : the best proven bound on the objective (above it for ``las*``, below it for ``ftf*`` and
        ``makespan*``); equal to ``objective`` up to solver tolerance when ``optimal``.
    wall_s : wall-clock seconds of the whole policy (models built and solved).
    info : extra figures (``n_lp`` linear programs solved, iterations, ...).
    """

    policy: str
    x: np.ndarray | None
    gpu_types: tuple[str, ...]
    status: str
    objective: float | None
    bound: float | None
    wall_s: float
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in ALLOCATION_STATUSES:
            raise ValueError(f"status {self.status!r} not in {ALLOCATION_STATUSES}")
        if self.x is not None:
            x = np.array(self.x, dtype=np.float64)
            if x.ndim != 2 or x.shape[1] != len(self.gpu_types):
                raise ValueError(f"X has shape {x.shape}, expected (jobs, {len(self.gpu_types)})")
            x.setflags(write=False)
            object.__setattr__(self, "x", x)
        elif self.status == "optimal":
            raise ValueError("an optimal allocation needs its X")

    def effective_throughput(self, throughputs: np.ndarray) -> np.ndarray:
        """Each job's throughput under X, ``sum_j X[i, j] * throughputs[i, j]`` (steps/s)."""
        return (self.x * np.asarray(throughputs, dtype=np.float64)).sum(axis=1)

    def __repr__(self) -> str:
        shape = "none" if self.x is None else f"{self.x.shape[0]} jobs x {self.x.shape[1]} types"
        return f"Allocation({self.policy}, {self.status}, objective {self.objective}, {shape})"
