"""Pollux's goodput model: throughput x statistical efficiency of a job by GPUs, nodes and batch size.

As Pollux's ``goodput.py`` / ``speedup.py`` (``petuum/adaptdl``, ``c793c708``) define it:

* **Throughput** (samples/s) of ``r`` replicas on ``n`` nodes, atomic batch ``b``, ``k`` accumulation steps: one
  accumulation step takes ``T_c = alpha_c + beta_c b`` seconds; the network ``T_n = alpha_n + beta_n max(r - 2, 0)``
  across nodes (``n > 1``), ``alpha_r + beta_r max(r - 2, 0)`` within one (``r > 1``), ~0 for one replica; the last
  step overlaps both, ``(T_c^g + T_n^g)^(1/g)``; throughput ``r b (k + 1) / (k T_c + (T_c^g + T_n^g)^(1/g))``.
* **Efficiency** of total batch ``B`` (``s = B / B0``, ``B0`` the initial batch): ``(var + sqr) / (var / s + sqr) /
  s`` from the gradient's square ``sqr`` and variance ``var`` (1 at ``B0``).
* **Goodput** = throughput x efficiency; :meth:`GoodputModel.optimize` picks, per (nodes, replicas), the best of 50
  total batch sizes in geometric steps from ``max(B0, min atomic x r)`` to the largest, each split into the fewest
  accumulation steps that keep the atomic batch within range (one replica above ``B0`` accumulates at least once).
* **Speedup** of (nodes, replicas): goodput over that of a reference configuration (one GPU, or a fair share).

:func:`fit_perf_params` fits the seven parameters to a job's measured step times (bounded least squares of the log
errors with Pollux's regularizers, L-BFGS-B with the analytic gradient; Pollux differentiates with ``autograd``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class PerfParams(NamedTuple):
    """Step-time model (seconds): compute ``alpha_c + beta_c b``; network across nodes ``alpha_n + beta_n (r-2)``,
    within one ``alpha_r + beta_r (r-2)``; overlap exponent ``gamma`` in [1, 10]."""

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float


def _accum_time(p, atomic_bsz):
    return p[0] + p[1] * atomic_bsz


def _network_time(p, nodes, replicas):
    nodes, replicas = np.asarray(nodes), np.asarray(replicas)
    conds = [nodes > 1, replicas > 1]
    bottleneck = np.select(conds, [p[2], p[4]], 1e-8)
    retrogress = np.select(conds, [p[3], p[5]], 1e-8) * np.maximum(replicas - 2, 1e-8)
    return bottleneck + retrogress


def _log_optim_time(p, accum_time, network_time):
    return np.log(accum_time ** p[6] + network_time ** p[6]) / p[6]


@dataclass(frozen=True)
class GoodputModel:
    """A job's goodput model (module docstring): ``perf`` (:class:`PerfParams`), ``grad`` = (sqr, var) and the
    initial batch size ``init_batch_size`` (samples)."""

    perf: PerfParams
    grad: tuple[float, float]
    init_batch_size: int

    def throughput(self, nodes, replicas, atomic_bsz, accum):
        """Samples per second."""
        accum_time = _accum_time(self.perf, atomic_bsz)
        optim_time = np.exp(_log_optim_time(self.perf, accum_time, _network_time(self.perf, nodes, replicas)))
        return replicas * atomic_bsz * (accum + 1) / (accum * accum_time + optim_time)

    def efficiency(self, batch_size):
        """Statistical efficiency of a total batch size (1 at the initial one)."""
        sqr, var = self.grad
        scale = batch_size / self.init_batch_size
        denom = var / scale + sqr
        gain = np.where(denom > 0, (var + sqr) / np.where(denom > 0, denom, 1.0), 1.0)
        return gain / scale

    def goodput(self, nodes, replicas, atomic_bsz, accum):
        return (self.throughput(nodes, replicas, atomic_bsz, accum)
                * self.efficiency(replicas * atomic_bsz * (accum + 1)))

    def optimize(self, nodes, replicas, max_batch_size: int, atomic_range: tuple[int, int]):
        """(goodput, atomic batch, accumulation steps) of the best of 50 batch sizes per (nodes, replicas)
        (module docstring); arrays of the broadcast shape, or scalars for scalar input."""
        scalar = np.isscalar(nodes) and np.isscalar(replicas)
        shape = np.broadcast(nodes, replicas).shape
        nodes = np.broadcast_to(nodes, shape).ravel().astype(np.float64)
        replicas = np.broadcast_to(replicas, shape).ravel().astype(np.float64)
        lo_atomic, hi_atomic = atomic_range
        smallest = np.maximum(self.init_batch_size, lo_atomic * replicas)
        batch = np.geomspace(smallest, max_batch_size)                     # (50, m)
        local = batch / replicas
        eps = 1e-8
        accum = np.ceil(local / hi_atomic - eps) - 1
        accum = np.where((replicas == 1) & (local > self.init_batch_size + eps), np.maximum(accum, 1),
                         accum).astype(int)
        atomic = np.ceil(local / (accum + 1) - eps).astype(int)
        value = self.goodput(nodes, replicas, atomic, accum)
        value = np.where((lo_atomic <= atomic) & (atomic <= hi_atomic), value, 0.0)
        best = np.argmax(value, axis=0), np.arange(value.shape[1])
        out = value[best].reshape(shape), atomic[best].reshape(shape), accum[best].reshape(shape)
        return tuple(o.item() for o in out) if scalar else out


class Speedup:
    """Goodput of (nodes, replicas) relative to a base configuration, memoized (Pollux's ``SpeedupFunction``);
    ``Speedup(None, ...)`` of a job without a model is the replica count over ``base_replicas``."""

    def __init__(self, model: GoodputModel | None, max_batch_size: int, atomic_range: tuple[int, int],
                 base: tuple[float, float] = (1, 1)):
        self.model, self.max_batch_size, self.atomic_range = model, max_batch_size, atomic_range
        self.base_replicas = base[1]
        self.base = None if model is None else model.optimize(base[0], base[1], max_batch_size, atomic_range)[0]
        self._memo: dict[tuple[int, int], float] = {(0, 0): 0.0}

    def __call__(self, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        nodes, replicas = np.asarray(nodes, dtype=np.int64), np.asarray(replicas, dtype=np.int64)
        if self.model is None:
            return replicas / self.base_replicas
        keys = list(zip(nodes.ravel().tolist(), replicas.ravel().tolist(), strict=True))
        missing = sorted({k for k in keys if k not in self._memo})
        if missing:
            arr = np.array(missing, dtype=np.float64)
            good = self.model.optimize(arr[:, 0], arr[:, 1], self.max_batch_size, self.atomic_range)[0]
            self._memo.update(zip(missing, (good / self.base).tolist(), strict=True))
        return np.array([self._memo[k] for k in keys]).reshape(nodes.shape)


def _objective(params, data) -> tuple[float, np.ndarray]:
    """Pollux's fitting objective and its gradient in the seven parameters: RMS log errors of the accumulation and
    optimizer step times, ``1e-3 (gamma - 1)^2`` and ``1e-2 ((beta_n / alpha_n)^2 + (beta_r / alpha_r)^2)``."""
    ac, bc, an, bn, ar, br, g = params
    b, cross, within, x, log_a, log_o = data
    accum = ac + bc * b
    net = np.where(cross, an + bn * x, np.where(within, ar + br * x, 1e-8 + 1e-8 * x))
    pa, pn = accum ** g, net ** g
    total = pa + pn
    log_opt = np.log(total) / g
    d1, d2 = np.log(accum) - log_a, log_opt - log_o
    err1, err2 = np.sqrt((d1 ** 2).mean()), np.sqrt((d2 ** 2).mean())
    value = err1 + err2 + 1e-3 * (g - 1) ** 2 + 1e-2 * ((bn / an) ** 2 + (br / ar) ** 2)
    w1 = d1 / (accum * len(b) * err1) if err1 > 0 else np.zeros_like(d1)    # d err1 / d accum
    w2 = d2 / (len(b) * err2) if err2 > 0 else np.zeros_like(d2)            # d err2 / d log_opt
    dl_da, dl_dn = pa / (accum * total), pn / (net * total)                 # d log_opt / d accum, d net
    da = w1 + w2 * dl_da
    dn = w2 * dl_dn
    dg = (w2 * ((pa * np.log(accum) + pn * np.log(net)) / total / g - np.log(total) / g ** 2)).sum()
    grad = np.array([da.sum(), (da * b).sum(), (dn * cross).sum() - 2e-2 * bn ** 2 / an ** 3,
                     (dn * cross * x).sum() + 2e-2 * bn / an ** 2, (dn * within).sum() - 2e-2 * br ** 2 / ar ** 3,
                     (dn * within * x).sum() + 2e-2 * br / ar ** 2, dg + 2e-3 * (g - 1)])
    return float(value), grad


def fit_perf_params(nodes, replicas, atomic_bsz, accum_time, optim_time) -> PerfParams:
    """Fit :class:`PerfParams` to measurements (Pollux's ``fit_perf_params``): per configuration its nodes,
    replicas, atomic batch size, and the measured seconds of an accumulation step and of an optimizer step.
    Parameters the measurements cannot identify are pinned as Pollux pins them (no multi-node data: the
    across-node terms; no single-node multi-replica data: the within-node terms; at most 2 replicas: both
    retrogression terms; one atomic batch size: ``alpha_c`` at half the mean accumulation time)."""
    from scipy.optimize import Bounds, minimize

    nodes, replicas, atomic_bsz = (np.asarray(a, dtype=np.float64) for a in (nodes, replicas, atomic_bsz))
    accum_time, optim_time = np.asarray(accum_time, np.float64), np.asarray(optim_time, np.float64)
    params = [1e-1, 1e-2] * 3 + [1.0 + 1e-3]
    lower = [1e-8, 1e-8] * 3 + [1.0]
    upper = [np.inf, np.inf] * 3 + [10.0]
    if len(np.unique(atomic_bsz)) == 1:
        params[0] = upper[0] = lower[0] = float(np.mean(accum_time)) / 2
    pinned = []
    if not np.any(nodes > 1):
        pinned += [2, 3]
    if not np.any((nodes == 1) & (replicas > 1)):
        pinned += [4, 5]
    if not np.any(replicas > 2):
        pinned += [3, 5]
    for i in pinned:
        params[i] = upper[i] = lower[i]
    free = [i for i in range(7) if lower[i] < upper[i]]
    full = np.array(params, dtype=np.float64)
    cross = nodes > 1
    data = (atomic_bsz, cross, ~cross & (replicas > 1), np.maximum(replicas - 2, 1e-8), np.log(accum_time),
            np.log(optim_time))

    def objective(x):
        p = full.copy()
        p[free] = x
        value, grad = _objective(p, data)
        return value, grad[free]

    result = minimize(objective, full[free], jac=True, method="L-BFGS-B",
                      bounds=Bounds([lower[i] for i in free], [upper[i] for i in free], keep_feasible=True))
    full[free] = result.x
    if not np.any(nodes > 1):                               # prior: across nodes at least as slow as within
        full[2] = max(full[2], full[4] * 1.1)
        full[3] = max(full[3], full[5] * 1.1)
    return PerfParams(*map(float, full))
