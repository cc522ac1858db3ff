"""Tickets, fair shares by tickets, and Jain's index.

Gandiva-Fair gives every user a number of *tickets*; a user's fair share of cluster-wide GPU time is its tickets over
the tickets of the users active at the time (Gandiva-Fair, Chaudhary et al., EuroSys'20, section 3, "fair share").
A user that cannot use its share (fewer GPUs demanded than its share) leaves the rest to the others in proportion
to their tickets: the max-min fair shares by tickets under demands, computed here by water filling.
"""

from __future__ import annotations

import numpy as np


def check_tickets(tickets) -> np.ndarray:
    """The tickets as float64 (U,), or ``ValueError`` naming the first bad one: every user's tickets a finite number
    >= 0, and their sum > 0 (a user with 0 tickets has no share; its jobs run only on GPUs nobody else takes)."""
    t = np.asarray(tickets, dtype=np.float64)
    if t.ndim != 1 or len(t) == 0:
        raise ValueError("tickets must be a non-empty list of numbers, one per user")
    if (bad := np.flatnonzero(~np.isfinite(t) | (t < 0))).size:
        raise ValueError(f"tickets of user {int(bad[0])} must be a finite number >= 0, got {t[bad[0]]}")
    if not t.sum() > 0:
        raise ValueError(f"tickets must sum to a positive number, got sum {t.sum():g}")
    return t


def water_fill(tickets: np.ndarray, demand: np.ndarray, capacity: float) -> np.ndarray:
    """Max-min fair shares by tickets under demands: float64 (U,), GPUs.

    Every user gets ``capacity x tickets / sum(tickets)`` of the users not yet capped, a user whose demand is below
    that gets its demand, and what it leaves is shared again among the others, until none is capped. Users with 0
    tickets get nothing.

    Examples
    --------
    Two users with equal tickets on 8 GPUs, the first demanding 2: it gets 2, the second the other 6.

    >>> water_fill(np.array([1.0, 1.0]), np.array([2.0, 10.0]), 8.0).tolist()
    [2.0, 6.0]
    """
    t = np.asarray(tickets, dtype=np.float64)
    d = np.asarray(demand, dtype=np.float64)
    share = np.zeros(len(t))
    open_ = (t > 0) & (d > 0)
    left = float(capacity)
    while open_.any() and left > 1e-12:
        offer = left * t / t[open_].sum()
        capped = open_ & (d - share <= offer)
        if not capped.any():
            share[open_] += offer[open_]
            break
        left -= float((d - share)[capped].sum())
        share[capped] = d[capped]
        open_ &= ~capped
    return share


def jain_index(x) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` of non-negative values: 1 when all are equal, 1/n when one
    holds everything (NaN for no values or all zero).

    Examples
    --------
    >>> jain_index([1, 1, 1, 1]), jain_index([1, 0, 0, 0]), round(jain_index([1, 2, 3]), 6)
    (1.0, 0.25, 0.857143)
    """
    v = np.asarray(x, dtype=np.float64)
    square = float((v ** 2).sum())
    return float(v.sum() ** 2 / (len(v) * square)) if len(v) and square > 0 else float("nan")
