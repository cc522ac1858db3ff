"""docs/semantics.md "Workload inflation": the one rule that tops a task list up to ``ratio`` x capacity, and the one
rule that says which tasks have arrived by a percentage of it."""

from __future__ import annotations

import numpy as np


def draw_until(demand: np.ndarray, total: int, limit: float, rng: np.random.Generator,
               weights: np.ndarray | None = None, batch: int = 4096, check: np.ndarray | None = None) -> np.ndarray:
    """Indices into a pool of candidate tasks, drawn i.i.d. until the demand would exceed ``limit``.

    Starting from GPU demand ``total`` (milli-GPU), draw pool indices (uniformly, or with probability
    proportional to ``weights``) and keep each while ``total + check[item] <= limit``, adding its
    ``demand`` to ``total``; the first draw that fails the test is discarded and drawing stops. Nothing
    is drawn if ``total`` already exceeds ``limit`` or no pool item has a positive ``check`` (the draw
    could never stop).

    Parameters
    ----------
    demand : (P,) GPU demand of each pool item in milli-GPU.
    total : GPU demand already present (milli-GPU).
    limit : ``ratio * 1000 * total GPUs``.
    rng : the seeded generator; draws are taken ``batch`` at a time, so the stream depends on ``batch``.
    weights : (P,) nonnegative draw weights (e.g. shape counts), default uniform.
    check : (P,) the amount compared with the room left, default ``demand`` (the total stays at most
        ``limit``). The reference simulator compares the per-GPU ``gpu_milli`` instead, so a multi-GPU
        draw can carry the total past ``limit`` (docs/semantics.md "Workload inflation").

    Examples
    --------
    >>> draw_until(np.array([500]), total=0, limit=1600, rng=np.random.default_rng(0)).tolist()
    [0, 0, 0]
    """
    demand = np.asarray(demand)
    check = demand if check is None else np.asarray(check)
    if weights is None:
        def sample() -> np.ndarray:
            return rng.integers(0, len(demand), size=batch)
    else:
        cdf = np.cumsum(np.asarray(weights, dtype=np.float64))
        cdf /= cdf[-1]

        def sample() -> np.ndarray:
            return np.minimum(np.searchsorted(cdf, rng.random(batch), side="right"), len(cdf) - 1)

    drawn: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    while total <= limit and check.max(initial=0) > 0:
        rows = sample()
        cumulative = total + np.cumsum(demand[rows])
        before = cumulative - demand[rows]
        over = np.flatnonzero(before + check[rows] > limit)
        if over.size:
            drawn.append(rows[: over[0]])
            break
        drawn.append(rows)
        total = int(cumulative[-1])
    return np.concatenate(drawn)


def arrived_count(cumulative: np.ndarray, pct, capacity: int):
    """How many tasks have arrived by ``pct`` percent of ``capacity``: the longest prefix whose cumulative
    demand (``cumulative``, non-decreasing, same unit as ``capacity``) is at most ``pct`` % of it, a task
    landing exactly on ``pct`` % included. ``pct`` may be an array (one count each).

    Examples
    --------
    >>> arrived_count(np.array([500, 1000, 1500]), 50, capacity=2000)
    2
    """
    counts = np.searchsorted(np.asarray(cumulative) * 100, np.asarray(pct) * capacity, side="right")
    return counts if np.ndim(counts) else int(counts)

