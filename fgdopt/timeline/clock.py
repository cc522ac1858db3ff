"""The clock of the time engine: the instant, the heap of timed events and the mechanism's wake-up.

:class:`Clock` knows nothing of what an event means. An event is ``(time, seq, owner)``: ``owner`` is a small
integer (the engine uses the job's index, and the event is the end of its current run), ``seq`` the order in which
events were scheduled (it breaks ties between equal times). An owner has at most one *live* event: scheduling a new
one for it, or :meth:`Clock.cancel`, makes the older one *stale*; stale events stay in the heap (no search) and are
dropped when they reach its top. Times are seconds.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from itertools import compress
from operator import itemgetter

import numpy as np


class Clock:
    """The instant ``now`` (s), the event heap with its stale-event rule (module docstring), and ``wake``, the time
    the mechanism asked to be woken at (``inf``: none).

    Parameters
    ----------
    owners : the number of owners (events are owned by ``0 .. owners - 1``).

    Examples
    --------
    >>> clock = Clock(2)
    >>> clock.at(5.0, 0); clock.at(3.0, 1); clock.at(4.0, 0)      # owner 0's event at 5 s is now stale
    >>> clock.next_event(), list(clock.due(4.0))
    (3.0, [])
    >>> list(clock.due(3.0)), list(clock.due(4.0)), clock.pending()
    ([1], [0], False)
    """

    def __init__(self, owners: int):
        self.now = 0.0
        self.wake = math.inf
        self.heap: list[tuple[float, int, int]] = []
        self.live = np.full(owners, -1, dtype=np.int64)        # seq of each owner's live event (-1: none)
        self.seq = 0

    def at(self, time_s: float, owner: int) -> None:
        """Schedule ``owner``'s event at ``time_s`` (its older event, if any, becomes stale)."""
        heapq.heappush(self.heap, (time_s, self.seq, owner))
        self.live[owner] = self.seq
        self.seq += 1

    def at_many(self, times_s: list[float], owners: list[int]) -> None:
        """:meth:`at` for each (time, owner) pair, in order (owners distinct). Where the stale events have come to
        outnumber the live ones (a bulk step evicts many runs), they are dropped first, in one pass: what the heap
        yields is unchanged (the same live events, by time then ``seq``)."""
        heap, live = self.heap, self.live
        seq = self.seq
        new = list(zip(times_s, range(seq, seq + len(owners)), owners, strict=True))
        if len(heap) > 256 and len(heap) > 2 * np.count_nonzero(live >= 0):
            own = np.fromiter(map(itemgetter(2), heap), np.int64, len(heap))
            keep = live[own] == np.fromiter(map(itemgetter(1), heap), np.int64, len(heap))
            heap[:] = [*compress(heap, keep.tolist()), *new]       # the live events and the new ones, heap-ordered
            heapq.heapify(heap)
        else:
            for event in new:
                heapq.heappush(heap, event)
        self.seq = seq + len(owners)
        live[owners] = np.arange(seq, self.seq)

    def cancel(self, owner: int) -> None:
        """``owner`` has no live event any more."""
        self.live[owner] = -1

    def pending(self) -> bool:
        """Whether a live event is waiting (the stale ones at the top are dropped)."""
        heap, live = self.heap, self.live
        while heap and live[heap[0][2]] != heap[0][1]:
            heapq.heappop(heap)
        return bool(heap)

    def next_event(self) -> float:
        """The time of the next live event (``inf``: none)."""
        return self.heap[0][0] if self.pending() else math.inf

    def due(self, time_s: float) -> Iterator[int]:
        """The owners of the live events at ``time_s``, in scheduling order, each taken off the heap as it is
        yielded (an event scheduled at ``time_s`` meanwhile is yielded too)."""
        heap, live = self.heap, self.live
        while heap and heap[0][0] == time_s:
            _, k, owner = heapq.heappop(heap)
            if live[owner] == k:
                yield owner
