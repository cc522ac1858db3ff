"""Automatic trading of fast-GPU share for slow-GPU share between users (Gandiva-Fair, EuroSys'20, section 5).

Each user is entitled to a share of every GPU type (GPUs, time-averaged). Its jobs gain more or less from a faster
type: user ``u``'s *speedup* of type ``f`` over type ``s`` is ``r_u = value[u, f] / value[u, s]``, its throughput per
GPU on ``f`` over that on ``s`` (from Gavel's measured throughputs). Gandiva-Fair lets the user of highest speedup
*buy* fast-GPU share from the user of lowest speedup, paying in slow-GPU share at a price ``p`` slow GPUs per fast GPU
with ``r_seller < p < r_buyer``: the buyer gains ``(r_b - p) value[b, s]`` per fast GPU bought and the seller
``(p - r_a) value[a, s]``, each in its own throughput, so neither falls below what its fair share gives it while
the cluster's throughput rises. Here ``p = r_a + price_point (r_b - r_a)`` (``price_point`` 1/2 by default: the
middle of the two speedups, which the paper leaves between them).

The trades are made greedily: while some pair of types and users has ``r_b > r_a (1 + min_gain)``, the pair of
largest ``r_b / r_a`` trades as much as it can: until the seller has no ``f`` share, the buyer no ``s`` share, or the
user whose total GPUs grow (the seller when ``p > 1``) has no more jobs to fill them (its *demand*, GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = 1e-9
"""GPUs below which a share counts as none."""


@dataclass(frozen=True)
class Trade:
    """``buyer`` received ``gpus`` of type ``fast`` from ``seller`` and paid ``gpus x price`` of type ``slow``
    (users and types by index; GPUs time-averaged; ``price`` slow GPUs per fast GPU)."""

    buyer: int
    seller: int
    fast: int
    slow: int
    gpus: float
    price: float


def utility(share: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Each user's throughput from its shares: ``sum_t share[u, t] value[u, t]`` (float64 (U,), value units)."""
    return (np.asarray(share, dtype=np.float64) * np.asarray(value, dtype=np.float64)).sum(axis=1)


def trade_shares(share: np.ndarray, value: np.ndarray, demand: np.ndarray, *, price_point: float = 0.5,
                 min_gain: float = 0.0, max_trades: int | None = None) -> tuple[np.ndarray, list[Trade]]:
    """The shares after trading, float64 (U, K), and the trades in order (module docstring).

    Parameters
    ----------
    share : (U, K) GPUs of each type each user is entitled to (its fair share).
    value : (U, K) each user's throughput per GPU of each type (0: its jobs do not run there).
    demand : (U,) GPUs each user's jobs can fill at once.
    price_point : where the price lies between the seller's and the buyer's speedups, in (0, 1).
    min_gain : a trade needs ``r_b > r_a (1 + min_gain)``.
    max_trades : a bound on the number of trades (default ``4 U^2 K^2``).

    Examples
    --------
    Two users, one fast and one slow GPU each; the first runs 4x faster on the fast type, the second 1.5x, and the
    second has jobs for 4 GPUs. The price is 2.75 slow GPUs per fast GPU; the first pays its whole slow GPU for
    1/2.75 of a fast one:

    >>> after, trades = trade_shares(np.array([[1., 1.], [1., 1.]]), np.array([[4., 1.], [1.5, 1.]]),
    ...                              np.array([2., 4.]))
    >>> np.round(after, 4).tolist(), round(trades[0].price, 2)
    ([[1.3636, 0.0], [0.6364, 2.0]], 2.75)
    """
    if not 0 < price_point < 1:
        raise ValueError(f"price_point must be in (0, 1), got {price_point}")
    x = np.array(share, dtype=np.float64)
    v = np.asarray(value, dtype=np.float64)
    d = np.asarray(demand, dtype=np.float64)
    n_users, k = x.shape
    limit = 4 * n_users ** 2 * k ** 2 if max_trades is None else max_trades
    trades: list[Trade] = []
    while len(trades) < limit:
        best = None
        for f in range(k):
            for s in range(k):
                if f == s:
                    continue
                runs = (v[:, f] > 0) & (v[:, s] > 0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    r = np.where(runs, v[:, f] / v[:, s], np.nan)
                buyers = np.flatnonzero(runs & (x[:, s] > EPS))
                sellers = np.flatnonzero(runs & (x[:, f] > EPS))
                if not len(buyers) or not len(sellers):
                    continue
                b = int(buyers[np.argmax(r[buyers])])
                a = int(sellers[np.argmin(r[sellers])])
                if a == b or not r[b] > r[a] * (1 + min_gain):
                    continue
                price = r[a] + price_point * (r[b] - r[a])
                gpus = min(x[a, f], x[b, s] / price)
                grower, growth = (a, price - 1) if price > 1 else (b, 1 - price)   # whose total GPUs grow, per GPU
                if growth > 0:
                    gpus = min(gpus, max(d[grower] - x[grower].sum(), 0.0) / growth)
                if gpus > EPS and (best is None or r[b] / r[a] > best[0]):
                    best = (r[b] / r[a], Trade(b, a, f, s, float(gpus), float(price)))
        if best is None:
            break
        t = best[1]
        x[t.buyer, t.fast] += t.gpus
        x[t.seller, t.fast] -= t.gpus
        x[t.buyer, t.slow] -= t.gpus * t.price
        x[t.seller, t.slow] += t.gpus * t.price
        np.maximum(x, 0.0, out=x)
        trades.append(t)
    return x, trades
