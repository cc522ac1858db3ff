"""The pending queue of the time engine: the discipline's order, the shape index and the fit/unfit bookkeeping.

Pending jobs are indexed by *shape* (CPU, memory, GPU count, milli-GPU, ``gpu_spec``, workers; :class:`Shapes`): one
heap per shape of ``(key, submit_s, job)``, ``key`` the discipline's (:mod:`fgdopt.timeline.queues`). A shape the
policy could not place is marked *unfit*; placements only take capacity away, so it stays unfit until a job leaves,
and then it can only fit on the node that job left: :meth:`PendingQueue.unblock` tests the unfit shapes against the
freed nodes only (:meth:`~fgdopt.state.ClusterState.shapes_fit_node`), and only those that fit there are offered
again. The other pending shapes are *candidates* (they may fit); a shape found to fit is remembered with a node
where it fits (its *witness*), re-checked only when that node changed. A backfilling pass therefore ends with every
pending shape unfit, and the next pass costs nothing until something leaves or arrives.

A *gang* shape (``workers > 1``) fits when all its parts fit together
(:meth:`~fgdopt.state.ClusterState.parts_fit`); an unfit gang can only fit again once a part fits a freed node, so
:meth:`PendingQueue.unblock` tests one part on the freed nodes, as for any shape. The *reservation* of a waiting gang
(:meth:`PendingQueue.reserved`, the engine's ``gang_reserve_s``): once the first pending gang in queue order has
waited ``gang_reserve_s`` seconds, a backfilling pass starts no job behind it in queue order until it starts.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable
from itertools import chain
from operator import itemgetter

import numpy as np
import pandas as pd

from fgdopt.model import TaskSet
from fgdopt.state import ClusterState

UNKNOWN, FIT, UNFIT = range(3)
"""What is known of a pending shape: nothing since it last changed, it fits (at its witness node), it fits no node."""


class Shapes:
    """The distinct job shapes of a :class:`~fgdopt.model.TaskSet` (the pending queue's index)."""

    def __init__(self, tasks: TaskSet):
        key = pd.MultiIndex.from_arrays([tasks.cpu_milli, tasks.memory_mib, tasks.num_gpu, tasks.gpu_milli,
                                         tasks.gpu_spec, tasks.workers])
        codes, uniques = pd.factorize(key, sort=False)
        self.of = codes.astype(np.int64)                            # shape id of every job
        first = np.full(len(uniques), -1, dtype=np.int64)
        first[self.of[::-1]] = np.arange(len(tasks))[::-1]          # the first job of every shape
        self.tasks = tasks.take(first)                              # one row per shape
        self.task = list(self.tasks)
        self.demand = self.tasks.gpu_demand.astype(np.int64)
        self.gangs = frozenset(np.flatnonzero(self.tasks.workers > 1).tolist())   # the gang shapes

    def __len__(self) -> int:
        return len(self.task)


class PendingQueue:
    """The pending jobs by shape, in the discipline's order (module docstring); ``pending`` and ``pending_milli``
    count them and their GPU demand (milli-GPU).

    Parameters
    ----------
    shapes : the run's shapes. keys : float64 (n,), the discipline's key of every job. submit_s : float64 (n,).
    demand : int (n,), every job's GPU demand, milli-GPU.
    """

    def __init__(self, shapes: Shapes, keys: np.ndarray, submit_s: np.ndarray, demand: np.ndarray):
        self.shapes, self.keys, self.submit, self.demand = shapes, keys, submit_s, demand
        self.buckets: dict[int, list[tuple[float, float, int]]] = {}   # shape -> heap of (key, submit, job)
        self.fit = np.full(len(shapes), UNKNOWN, dtype=np.int8)
        self.witness = np.full(len(shapes), -1, dtype=np.int64)       # a node where a FIT shape fits
        self.cands: set[int] = set()                                   # pending shapes that may fit
        self.unfit: set[int] = set()                                   # pending shapes that fit no node
        self.pending = self.pending_milli = 0
        self._top: list[tuple[float, float, int]] | None = None        # first_unfit's entries, kept up to date
        self._top_k = 0

    def __bool__(self) -> bool:
        return bool(self.buckets)

    def enqueue(self, j: int) -> None:
        """Job ``j`` joins the queue (at its submission, or evicted: it keeps its place by key and submission)."""
        s = int(self.shapes.of[j])
        entry = (self.keys[j], float(self.submit[j]), j)
        heapq.heappush(self.buckets.setdefault(s, []), entry)
        self.pending += 1
        self.pending_milli += int(self.demand[j])
        if self.fit[s] != UNFIT:
            self.cands.add(s)
        elif (top := self._top) is not None and (len(top) < self._top_k or entry < top[-1]):
            bisect.insort(top, entry)
            del top[self._top_k:]

    def enqueue_many(self, js: list[int]) -> None:
        """:meth:`enqueue` of every job of ``js`` (distinct), in order, with the per-job lookups done at once: the same
        queue."""
        if not js:
            return
        ids = np.asarray(js, dtype=np.int64)
        fit, buckets, cands, push = self.fit, self.buckets, self.cands, heapq.heappush
        for j, s, key, submit in zip(js, self.shapes.of[ids].tolist(), self.keys[ids].tolist(),
                                     self.submit[ids].tolist(), strict=True):
            entry = (key, submit, j)
            push(buckets.setdefault(s, []), entry)
            if fit[s] != UNFIT:
                cands.add(s)
            elif (top := self._top) is not None and (len(top) < self._top_k or entry < top[-1]):
                bisect.insort(top, entry)
                del top[self._top_k:]
        self.pending += len(js)
        self.pending_milli += int(self.demand[ids].sum())

    def withdraw(self, j: int) -> None:
        """Pending job ``j`` leaves the queue (to start)."""
        s = int(self.shapes.of[j])
        bucket = self.buckets[s]
        if self._top is not None and self.fit[s] == UNFIT and any(e[2] == j for e in self._top):
            self._top = None
        if bucket[0][2] == j:
            heapq.heappop(bucket)
        else:                       # a mechanism's beneficiary, inside the queue: out in O(log n) after a C scan
            i = bucket.index((self.keys[j], float(self.submit[j]), j))
            last = bucket.pop()
            if i < len(bucket):     # the last entry takes its slot and moves to where the heap order puts it
                bucket[i] = last
                heapq._siftup(bucket, i)
                heapq._siftdown(bucket, 0, i)
        self.pending -= 1
        self.pending_milli -= int(self.demand[j])
        if not bucket:
            del self.buckets[s]
            self.fit[s] = UNKNOWN
            self.cands.discard(s)
            self.unfit.discard(s)

    def withdraw_many(self, js: list[int]) -> None:
        """:meth:`withdraw` of every pending job of ``js`` (distinct), with one pass per shape's heap instead of a
        search per job: the same jobs left in the same order (a heap's layout is not its order)."""
        if len(js) < 8:
            for j in js:
                self.withdraw(j)
            return
        by_shape: dict[int, set[int]] = {}
        for j, s in zip(js, self.shapes.of[js].tolist(), strict=True):
            by_shape.setdefault(s, set()).add(j)
        for s, out in by_shape.items():
            bucket = self.buckets[s]
            if self._top is not None and self.fit[s] == UNFIT and any(e[2] in out for e in self._top):
                self._top = None
            kept = [e for e in bucket if e[2] not in out]
            if len(kept) != len(bucket) - len(out):
                raise KeyError(f"jobs {sorted(out)} are not all pending")
            heapq.heapify(kept)
            bucket[:] = kept
            self.pending -= len(out)
            self.pending_milli -= int(self.demand[list(out)].sum())
            if not bucket:
                del self.buckets[s]
                self.fit[s] = UNKNOWN
                self.cands.discard(s)
                self.unfit.discard(s)

    def set_unfit(self, s: int) -> None:
        """Shape ``s`` fits no node."""
        if self._top is not None and s not in self.unfit:
            self._top = heapq.nsmallest(self._top_k, self._top + self.buckets[s])
        self.fit[s] = UNFIT
        self.cands.discard(s)
        self.unfit.add(s)

    def unblock(self, state: ClusterState, freed: set[int]) -> None:
        """Jobs left ``freed`` nodes: the unfit shapes that fit one of them are candidates again."""
        unfit = self.unfit
        if freed and unfit:
            ids = np.fromiter(unfit, dtype=np.int64)
            if len(freed) > len(ids):                               # many nodes: each shape against all at once
                nodes = np.fromiter(freed, np.int64, len(freed))
                ok = np.array([state.feasible_nodes(self.shapes.task[s])[nodes].any() for s in ids.tolist()], bool)
            else:
                ok = np.zeros(len(ids), dtype=bool)
                for node in freed:
                    ok |= state.shapes_fit_node(self.shapes.tasks, ids, node)
            back = ids[ok].tolist()
            for s in back:
                unfit.discard(s)
                self.fit[s] = UNKNOWN
                self.cands.add(s)
            if back and self._top is not None and np.isin(self.shapes.of[[e[2] for e in self._top]], back).any():
                self._top = None

    def backfill_pass(self, try_start: Callable[[int, int], bool],
                      stop: Callable[[], tuple | None] | None = None) -> None:
        """Offer the head of every candidate shape, in queue order, to ``try_start(job, shape)`` (True: started;
        False: the shape is unfit now) until no candidate is left; with ``stop`` (the reservation, e.g.
        :meth:`reserved`: a queue entry ``(key, submit, job)`` or None, asked again once that job started), until
        the next one comes after the reserved entry in queue order."""
        buckets = self.buckets
        heap = [(buckets[s][0], s) for s in self.cands]
        heapq.heapify(heap)
        limit = stop() if stop is not None else None
        while heap:
            entry, s = heapq.heappop(heap)
            if limit is not None and entry > limit:
                return
            if try_start(entry[2], s):
                if entry == limit:
                    limit = stop()
                if s in buckets:
                    heapq.heappush(heap, (buckets[s][0], s))

    def reserved(self, now: float, wait_s: float) -> tuple | None:
        """The queue entry ``(key, submit, job)`` of the first pending gang in queue order if it has waited at least
        ``wait_s`` seconds at ``now`` (since its submission), else None (module docstring)."""
        heads = [self.buckets[s][0] for s in self.shapes.gangs if s in self.buckets]
        if not heads:
            return None
        head = min(heads)
        return head if now - head[1] >= wait_s else None

    def fifo_pass(self, try_start: Callable[[int, int], bool]) -> None:
        """Offer the head of the queue to ``try_start`` while it starts (a blocking discipline)."""
        buckets, fit = self.buckets, self.fit
        while buckets:
            (_, _, j), s = min((b[0], s) for s, b in buckets.items())
            if fit[s] == UNFIT or not try_start(j, s):
                return

    def refresh(self, state: ClusterState, touched: set[int]) -> None:
        """At the end of an instant: whether every candidate shape nobody tried (behind a FIFO head) fits, by its
        witness node if that node is untouched or still holds it, else by a search (none: unfit)."""
        fit, witness, task, gangs = self.fit, self.witness, self.shapes.task, self.shapes.gangs
        for s in list(self.cands):
            if gangs and s in gangs:                                # a gang: all its parts together, no witness
                if state.parts_fit(task[s]):
                    fit[s] = FIT
                else:
                    self.set_unfit(s)
                continue
            w = int(witness[s])
            if fit[s] == FIT and (w not in touched or state.shapes_fit_node(self.shapes.tasks, [s], w)[0]):
                continue
            where = np.flatnonzero(state.feasible_nodes(task[s]))
            if len(where):
                fit[s], witness[s] = FIT, where[0]
            else:
                self.set_unfit(s)

    def blocked(self, free_milli: int) -> tuple[int, int]:
        """Of the pending jobs with GPU demand whose shape fits no node, the most that ``free_milli`` could hold
        together, smallest demand first: (jobs, their milli-GPU)."""
        demand, buckets = self.shapes.demand, self.buckets
        jobs = milli = 0
        for d, s in sorted((int(demand[s]), s) for s in self.unfit if demand[s] > 0):
            k = min(len(buckets[s]), (free_milli - milli) // d)       # smallest first, within the free total
            if k == 0:
                break
            jobs += k
            milli += k * d
        return jobs, milli

    def first_unfit(self, k: int) -> list[int]:
        """The first ``k`` pending jobs, in queue order, whose shape fits no node (kept up to date between calls by
        every change of the unfit shapes' jobs: the first ``k`` of a set are unique, whatever the way to them)."""
        if self._top is None or self._top_k != k:
            buckets = self.buckets
            self._top, self._top_k = heapq.nsmallest(k, (e for s in self.unfit for e in buckets[s])), k
        return [e[2] for e in self._top]

    def queued(self) -> list[int]:
        """Every pending job, in queue order."""
        return [e[2] for e in sorted(e for b in self.buckets.values() for e in b)]

    def waiting(self) -> np.ndarray:
        """Every pending job, int64, in no given order (:meth:`queued` without its sort)."""
        job = itemgetter(2)
        return np.fromiter(chain.from_iterable(map(job, bucket) for bucket in self.buckets.values()), np.int64,
                           self.pending)

    def present(self) -> np.ndarray:
        """Every pending job in queue order (key, submission, index), int64."""
        ids = np.array([e[2] for bucket in self.buckets.values() for e in bucket], dtype=np.int64)
        if len(ids):
            ids = ids[np.lexsort((ids, self.submit[ids], self.keys[ids]))]
        return ids
