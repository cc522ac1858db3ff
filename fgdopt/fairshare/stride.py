"""Gang-aware stride scheduling of one group of GPUs (Gandiva-Fair, EuroSys'20, section 4.1).

Stride scheduling (Waldspurger, 1995): every client has a *pass*; at each quantum the client of lowest pass runs and
its pass grows by its *stride*, a constant over its tickets. Gandiva-Fair makes it *gang-aware*: a quantum fills all
the GPUs of a group at once, a job takes all its GPUs or none, and a job that ran for a quantum on ``k`` GPUs
advances its pass by ``k / tickets`` (it used ``k`` GPU-quanta). So over many quanta every job's GPU time is in
proportion to its tickets, whatever its size.

The choice of one quantum (:func:`gang_stride`): the jobs by increasing pass (ties: lower index), each taken if its
GPUs fit in those left. As the whole group is free at the start of a quantum, the job of lowest pass always runs
(a large job cannot be starved by small ones: its pass stays while they advance).
"""

from __future__ import annotations

import numpy as np


def gang_stride(pass_: np.ndarray, need: np.ndarray, capacity: int) -> np.ndarray:
    """The jobs to run for one quantum on ``capacity`` GPUs: int64 indices into ``pass_``, in the order chosen.

    Parameters
    ----------
    pass_ : float (m,), each job's pass (``inf`` for a job with no tickets: it runs only on GPUs left over).
    need : int (m,), GPUs each job takes at once (its gang).
    capacity : GPUs of the group.
    """
    order = np.lexsort((np.arange(len(pass_)), pass_))
    chosen = []
    left = int(capacity)
    for k, g in zip(order.tolist(), np.asarray(need)[order].tolist(), strict=True):
        if g <= left:
            chosen.append(k)
            left -= g
            if left == 0:
                break
    return np.asarray(chosen, dtype=np.int64)


def advance(pass_: np.ndarray, need: np.ndarray, tickets: np.ndarray, ran: np.ndarray) -> None:
    """Advance in place the pass of the jobs ``ran`` (indices) by one quantum: ``need / tickets`` each (``inf``
    with no tickets)."""
    with np.errstate(divide="ignore"):
        pass_[ran] += np.asarray(need, dtype=np.float64)[ran] / np.asarray(tickets, dtype=np.float64)[ran]


def stride_shares(tickets: np.ndarray, need: np.ndarray, capacity: int, quanta: int) -> np.ndarray:
    """Every job's GPU-quanta over ``quanta`` quanta of gang-aware stride scheduling, from passes all 0: float64 (m,).

    The reference loop of the property tests and of the worked examples (:class:`~fgdopt.fairshare.scheduler.
    GandivaFair` keeps its passes across quanta the same way)."""
    pass_ = np.zeros(len(tickets))
    got = np.zeros(len(tickets))
    need = np.asarray(need, dtype=np.int64)
    for _ in range(quanta):
        ran = gang_stride(pass_, need, capacity)
        got[ran] += need[ran]
        advance(pass_, need, tickets, ran)
    return got
