"""AlloX (Le et al., EuroSys'20) as Gavel's simulator runs it: jobs matched to (worker, position) slots at least cost.

AlloX places single-GPU jobs on a hybrid cluster so as to minimise their average completion time. A worker (one
GPU) runs its jobs one after another; a job ``i`` that runs ``k``-th from the *end* of worker ``w``'s queue
delays ``k`` jobs (itself and the ``k - 1`` after it) by its processing time ``p[i, w]``, so the sum of completion
times is the sum over jobs of ``k p[i, w]``, plus each job's waiting time so far ``d[i]``. Choosing for every job a
worker and a position is then a min-cost bipartite matching of jobs to the slots ``(position k, worker w)``, cost
``k p[i, w] + d[i]`` (:func:`allox_costs`), solved exactly by the Hungarian method
(:func:`scipy.optimize.linear_sum_assignment`). Each worker runs first the job of its largest ``k``.

This module follows Gavel's ``allox`` policy (``scheduler/policies/allox.py`` of ``stanford-futuredata/gavel`` at
commit ``c4fa4009``, ``AlloXPolicy``, ``alpha = 1``) step for step:

* **Which jobs.** A job that was first on a worker at the previous recomputation (its row of X sums to 1) keeps
  its X and its worker until it finishes (*held*); the others, unheld or new, are matched: the oldest
  ``max(int(alpha m), n)`` of the ``m`` of them (all of them at ``alpha = 1``), by decreasing time since arrival
  (ties: by job index), ``n`` the workers not held.
* **The costs.** ``p[i, w]`` is the job's remaining work over its throughput on the worker's type (seconds; a
  throughput of 0 counts as ``1e-10``), ``d[i]`` its time since arrival (seconds). The workers are taken type by
  type in the order of the types' names (Gavel's ``flatten`` sorts them: ``k80``, ``p100``, ``v100``), each
  type's free GPUs in a row, and the slot columns position by position: column ``(k - 1) n + w`` is position
  ``k`` from the end on worker ``w``, ``k = 1 .. m``.
* **The allocation.** The job first on each worker (its largest ``k``) gets ``X = 1`` on that worker's type, every
  other matched job 0; those queued behind are matched again at the next recomputation, with the work and waiting
  times of then. Gavel's round policy then runs X (:class:`~fgdopt.hetero.rounds.Gavel`: a job of ``X = 0``
  still runs on a GPU nobody of positive X wants), and recomputes it as for its other policies.

Because a held job keeps its X, AlloX's X depends on its previous X: it must be computed at *every* recomputation,
in order. :class:`AlloXGavel` is Gavel's round policy doing that (the plain :class:`~fgdopt.hetero.rounds.Gavel`
solves an X only when the choice reads it, and skips a recomputation none of whose jobs is still present then), and
counting the time a run received with Gavel's rounding, which decides among the many jobs AlloX leaves tied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from fgdopt.hetero.rounds import Gavel, Moment
from fgdopt.timeline.jobs import JobSet
from fgdopt.timeline.rounds import Placed, RoundView

ZERO_THROUGHPUT = 1e-10
"""The throughput (per second) Gavel's AlloX puts in place of 0, so that a job's time there is finite but huge."""


def allox_costs(processing_s: np.ndarray, waited_s: np.ndarray) -> np.ndarray:
    """AlloX's cost matrix: ``C[i, (k - 1) n + w] = k p[i, w] + d[i]``, for k from 1 to m.

    Parameters
    ----------
    processing_s : float (m, n), each job's processing time on each worker (seconds).
    waited_s : float (m,), each job's time since arrival (seconds).

    Returns
    -------
    float (m, m n): the cost of job ``i`` at position ``k`` from the end of worker ``w`` (seconds), computed as
    Gavel does (``k * p`` first, then ``+ d``), so that the matching breaks ties as Gavel's does.
    """
    p = np.asarray(processing_s, dtype=np.float64)
    m, n = p.shape
    k = np.arange(1, m + 1, dtype=np.float64)
    return (k[None, :, None] * p[:, None, :]).reshape(m, m * n) + np.asarray(waited_s, dtype=np.float64)[:, None]


def allox_match(processing_s: np.ndarray, waited_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least-cost matching of jobs to (worker, position) slots (module docstring).

    Parameters
    ----------
    processing_s : float (m, n), each job's processing time on each worker (seconds), ``p > 0``.
    waited_s : float (m,), each job's time since arrival (seconds).

    Returns
    -------
    ``(worker, position)``, int (m,) each: the job's worker (column of ``processing_s``) and its place in that
    worker's queue from the front, by decreasing ``k`` (0: runs first; Gavel's ``len(queue) - 1 - (k - 1)``, which
    is the same at an optimum, whose ``k`` on a worker are ``1 .. len(queue)``). Every job is matched when
    ``n >= 1``; with ``n = 0`` both are -1 (no worker).
    """
    p = np.asarray(processing_s, dtype=np.float64)
    m, n = p.shape
    worker, position = np.full(m, -1, dtype=np.int64), np.full(m, -1, dtype=np.int64)
    if m == 0 or n == 0:
        return worker, position
    rows, cols = linear_sum_assignment(allox_costs(p, waited_s))
    worker[rows] = cols % n
    order = rows[np.lexsort((cols, cols % n))][::-1]        # by worker, then from the front (largest k first)
    starts = np.r_[True, worker[order][1:] != worker[order][:-1]]
    at = np.arange(len(order))
    position[order] = at - np.maximum.accumulate(np.where(starts, at, 0))   # place within its worker's queue
    return worker, position


class AlloX:
    """AlloX's allocation, recomputation after recomputation (module docstring); it remembers which jobs it holds.

    Parameters
    ----------
    gpu_types : the GPU types, in X's column order.
    capacity : int (k,), the GPUs (workers) of each type.
    alpha : the share of the unheld jobs considered (the oldest ``max(int(alpha m), n)``; Gavel's default 1: all).
    """

    def __init__(self, gpu_types: Sequence[str], capacity: np.ndarray, alpha: float = 1.0) -> None:
        self.gpu_types = tuple(gpu_types)
        self.capacity = np.asarray(capacity, dtype=np.int64)
        if self.capacity.shape != (len(self.gpu_types),) or (self.capacity < 0).any():
            raise ValueError(f"capacity {capacity!r}: expected {len(self.gpu_types)} GPU counts >= 0")
        if not alpha > 0:
            raise ValueError(f"alpha {alpha!r}: expected a number > 0")
        self.alpha = alpha
        self.held: dict[int, int] = {}                     # job -> the type (column) it holds, X = 1 there

    def allocate(self, jobs: np.ndarray, throughput: np.ndarray, remaining: np.ndarray,
                 waited_s: np.ndarray) -> np.ndarray:
        """X for the jobs present now (and the held jobs remembered for the next call).

        Parameters
        ----------
        jobs : int (m,), the jobs present, by index ascending (their identities across calls).
        throughput : float (m, k), each job's throughput on each type (work per second, any unit).
        remaining : float (m,), each job's remaining work (the same unit times seconds).
        waited_s : float (m,), seconds since each job arrived.

        Returns
        -------
        float (m, k): 1 on the type of each job held or first on a worker, 0 elsewhere.
        """
        jobs = np.asarray(jobs, dtype=np.int64)
        thr = np.asarray(throughput, dtype=np.float64)
        x = np.zeros((len(jobs), len(self.gpu_types)))
        held = {j: self.held[j] for j in jobs.tolist() if j in self.held}
        rows = {j: r for r, j in enumerate(jobs.tolist())}
        for j, g in held.items():
            x[rows[j], g] = 1.0
        free = self.capacity - np.bincount(np.fromiter(held.values(), np.int64, len(held)),
                                           minlength=len(self.gpu_types))
        types = sorted(range(len(self.gpu_types)), key=self.gpu_types.__getitem__)    # Gavel: by name
        worker_type = np.repeat(types, free[types])
        unheld = np.array([r for r, j in enumerate(jobs.tolist()) if j not in held], dtype=np.int64)
        waited = np.asarray(waited_s, dtype=np.float64)[unheld]
        unheld = unheld[np.argsort(-waited, kind="stable")][:max(int(self.alpha * len(unheld)), len(worker_type))]
        speed = thr[np.ix_(unheld, worker_type)]
        speed[speed == 0.0] = ZERO_THROUGHPUT
        worker, position = allox_match(np.asarray(remaining, dtype=np.float64)[unheld, None] / speed,
                                       np.asarray(waited_s, dtype=np.float64)[unheld])
        first = position == 0
        x[unheld[first], worker_type[worker[first]]] = 1.0
        held.update(zip(jobs[unheld[first]].tolist(), worker_type[worker[first]].tolist(), strict=True))
        self.held = held
        return x


def allox_allocator(speed: Mapping[str, np.ndarray], jobs: JobSet, cluster: Mapping[str, int], alpha: float = 1.0, *,
                    total_steps: np.ndarray | None = None, steps_per_s: np.ndarray | None = None,
                    step_rate: np.ndarray | None = None):
    """An allocator for :class:`AlloXGavel`: AlloX's X for the jobs present, from the engine's view of them.

    By default a job's throughput on a type is its ``speed`` there and its remaining work ``duration_s - work``
    (seconds of work at speed 1, :meth:`fgdopt.hetero.HeteroJobs.to_jobset`), so its processing time is Gavel's
    remaining steps over steps per second up to rounding. With ``total_steps`` (n,), ``steps_per_s`` (n, k; the
    types in ``cluster`` order) and ``step_rate`` (n,, steps per second of work), for runs in whole steps, it is
    Gavel's own arithmetic: ``(total_steps - steps done) / steps_per_s``, the steps done ``work x step_rate``
    rounded to the whole number they are. The rounding matters: past the knee, jobs tied up to the last bits decide
    the matching (36:36:36 at 4.8 jobs/hour: +2.03% mean JCT against Gavel's own run in seconds of work, every
    job's JCT to 1e-3 s in steps). The waiting time is ``now - submit_s``.

    The allocator is computed at every recomputation by :class:`AlloXGavel` (``recompute``) and returns that X when
    the round loop reads it; called for an instant it was not computed at, it raises ``RuntimeError`` (a loop that
    skips recomputations would change AlloX's held jobs).
    """
    gpu_types = tuple(cluster)
    if (total_steps is None) != (steps_per_s is None) or (total_steps is None) != (step_rate is None):
        raise ValueError("total_steps, steps_per_s and step_rate go together (Gavel's units), or none of them")
    if total_steps is None:
        thr = np.column_stack([np.asarray(speed[g], dtype=np.float64) for g in gpu_types])
    else:
        thr = np.asarray(steps_per_s, dtype=np.float64)
        total, rate = np.asarray(total_steps, dtype=np.float64), np.asarray(step_rate, dtype=np.float64)
    policy = AlloX(gpu_types, np.array([cluster[g] for g in gpu_types], dtype=np.int64), alpha)
    computed: dict[float, np.ndarray] = {}

    def recompute(present: np.ndarray, view: Moment) -> None:
        if total_steps is None:
            remaining = np.maximum(jobs.duration_s[present] - view.work_of(present), 1e-9)
        else:
            remaining = total[present] - np.round(view.work_of(present) * rate[present])
        computed[view.now] = policy.allocate(present, thr[present], remaining, view.now - jobs.submit_s[present])

    def allocate(present: np.ndarray, view: Moment) -> np.ndarray:
        if view.now not in computed:
            raise RuntimeError(f"allox: no X computed at the recomputation at {view.now} s (AlloX's X depends on "
                               "its previous X: run it with fgdopt.hetero.allox.AlloXGavel)")
        for t in [t for t in computed if t < view.now]:  # read in time order: the older ones are never read again
            del computed[t]
        return computed[view.now]

    allocate.recompute = recompute
    allocate.policy = policy
    return allocate


class AlloXGavel(Gavel):
    """Gavel's round policy (:class:`~fgdopt.hetero.rounds.Gavel`, on the engine's round loop) for AlloX, with two
    changes.

    * X is computed at every recomputation, in order (``allocate.recompute(present, moment)``,
      :func:`allox_allocator`), because AlloX's X depends on its previous one; the policy reads it as it reads any
      policy's.
    * In whole steps, the time a run received is its finish instant minus the round's start, ``(now + t) - now``
      in float64, as Gavel's clock computes it (``finish_time - current_round_start_time``), not its steps' time
      ``t`` itself. The two differ in the last bits only, but under AlloX many waiting jobs have ``X = 0`` and the
      same time received (the same job type, run for the same whole rounds), and Gavel's choice among them is
      decided by those bits (after the time received, by arrival order). With ``t``, fgdopt's mean JCT on 12:12:12
      at 1.8 jobs/hour is 19.5% above Gavel's (75,158.8 s against 62,889.5 s, processing times in seconds of work);
      with Gavel's rounding, +0.028%, and the same to 1e-14 with the processing times in steps as well.
    """

    _round_start: float = 0.0

    def _reset(self, now: float, present: np.ndarray, view: RoundView) -> None:
        super()._reset(now, present, view)
        self.allocate.recompute(present, Moment(now, present, view.engine.work_of(present)))

    def pace(self, view: RoundView, placed: Placed):
        self._round_start = view.now
        return super().pace(view, placed)

    def _whole_steps(self, round_s: float, js: np.ndarray, thr: np.ndarray, left: np.ndarray, cost: np.ndarray,
                     fresh: np.ndarray):
        rates, took = super()._whole_steps(round_s, js, thr, left, cost, fresh)
        return rates, (self._round_start + took) - self._round_start     # exact: now + it is now + took rounded
