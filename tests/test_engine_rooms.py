"""The time engine's objects alone (clock, pending queue) and the mechanism registry: hand-worked cases, and the
engine docstring's smallest mechanism run as written."""

from __future__ import annotations

import heapq
import random
import re

import numpy as np
import pytest

from fgdopt.model import Cluster, TaskSet
from fgdopt.plugins import SpecError
from fgdopt.timeline import JobSet, engine, simulate
from fgdopt.timeline.clock import Clock
from fgdopt.timeline.mechanisms import (
    MECHANISM_NAMES,
    make_mechanism,
    mechanism_factory,
    register_mechanism,
    unregister_mechanism,
)
from fgdopt.timeline.pending import UNFIT, PendingQueue, Shapes


def test_the_clock_drops_stale_events_and_breaks_ties_by_scheduling_order():
    # owner 0 at 5 s, owner 1 at 3 s, owner 2 at 3 s, then owner 0 again at 3 s: its 5 s event is stale; the three
    # events at 3 s come out in scheduling order (1, 2, 0); a cancelled owner's event never comes out
    clock = Clock(4)
    clock.at(5.0, 0)
    clock.at(3.0, 1)
    clock.at(3.0, 2)
    clock.at(3.0, 0)
    clock.at(4.0, 3)
    clock.cancel(3)
    assert clock.next_event() == 3.0
    assert list(clock.due(3.0)) == [1, 2, 0]
    assert clock.next_event() == float("inf") and not clock.pending()


def test_the_pending_queue_orders_by_key_and_counts_the_blocked_jobs():
    # four jobs of two shapes (500 and 300 milli-GPU); keys put job 3 first; both shapes unfit: with 900 milli-GPU
    # free, smallest demand first, the two 300s (600) and no 500 (600 + 500 > 900) are blocked by fragmentation
    tasks = TaskSet([1000] * 4, [0] * 4, [1] * 4, [500, 300, 500, 300])
    queue = PendingQueue(Shapes(tasks), np.array([1.0, 1.0, 1.0, 0.0]), np.zeros(4), tasks.gpu_demand)
    for j in range(4):
        queue.enqueue(j)
    assert queue.queued() == [3, 0, 1, 2]
    assert queue.pending == 4 and queue.pending_milli == 1600
    queue.set_unfit(0)
    queue.set_unfit(1)
    assert queue.fit.tolist() == [UNFIT, UNFIT] and not queue.cands
    assert queue.blocked(900) == (2, 600)
    assert queue.first_unfit(2) == [3, 0]
    queue.withdraw(0)                                              # inside its shape's heap (not its head)
    assert queue.present().tolist() == [3, 1, 2] and queue.pending_milli == 1100


def test_jobs_withdrawn_from_inside_the_queue_leave_the_others_in_key_order():
    """One shape, jobs keyed from 0-9 with submissions 0-2 s, queued in a random order: after withdrawing a random
    subset of them in a random order (most from inside the heap), the rest are still a heap and come out by (key,
    submission, job), as if the withdrawn ones had never been queued. 400 seeded cases (about 1 in 14 needs the
    moved entry to rise towards the root)."""
    for seed in range(400):
        rnd = random.Random(seed)
        n = rnd.randint(1, 40)
        keys = np.array([float(rnd.randint(0, 9)) for _ in range(n)])
        submit = np.array([float(rnd.randrange(3)) for _ in range(n)])
        tasks = TaskSet([1000] * n, [0] * n, [1] * n, [500] * n)
        queue = PendingQueue(Shapes(tasks), keys, submit, tasks.gpu_demand)
        order = rnd.sample(range(n), n)
        for j in order:
            queue.enqueue(j)
        gone = set(rnd.sample(order, rnd.randrange(n)))
        for j in rnd.sample(sorted(gone), len(gone)):
            queue.withdraw(j)
        bucket = list(queue.buckets.get(0, []))
        assert all(bucket[(i - 1) // 2] <= bucket[i] for i in range(1, len(bucket))), seed      # still a heap
        left = sorted((keys[j], submit[j], j) for j in range(n) if j not in gone)
        assert [heapq.heappop(bucket)[2] for _ in range(len(bucket))] == [j for *_, j in left], seed
        assert queue.pending == len(left)


def _docstring_mechanism():
    """The smallest mechanism of the engine's module docstring, executed as written."""
    code = re.search(r"::\n\n((?:    .*\n|\n)+)", engine.__doc__).group(1)
    namespace: dict = {}
    exec("\n".join(line[4:] for line in code.splitlines()), namespace)
    return namespace["ClearNodeZero"]


def test_the_docstring_mechanism_runs_as_written():
    # one GPU; job 0 (low priority, 100 s) runs from 0; job 1 (high, 5 s) arrives at 10 and evicts it transparently:
    # job 0 keeps its 10 s, restarts when job 1 leaves at 15 after Helios' 7 s and needs 90 s more: 15 + 7 + 90 = 112
    one = Cluster([8000], [1024], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 2, [0] * 2, [1] * 2, [1000] * 2), [0.0, 10.0], [100.0, 5.0], priority=[0, 1])
    r = simulate(one, jobs, "best-fit", "fifo", mechanism=_docstring_mechanism()())
    assert r.finish_s.tolist() == [112.0, 15.0]
    assert r.preemptions.tolist() == [1, 0] and r.overhead_s.tolist() == [7.0, 0.0] and r.mechanism == "clear-node-0"


def test_mechanisms_register_by_name_and_by_spec():
    cls = _docstring_mechanism()
    register_mechanism("clear-node-0", lambda **_: cls())
    try:
        assert make_mechanism("clear-node-0").name == "clear-node-0"
        with pytest.raises(ValueError, match="reserved"):
            register_mechanism("priority", lambda **_: cls())
    finally:
        unregister_mechanism("clear-node-0")
    with pytest.raises(ValueError, match="unknown mechanism 'clear-node-0'"):
        make_mechanism("clear-node-0")
    # the MIG mechanism is built in, beside the others; a spec may name a factory or a ready object
    repack = make_mechanism("mig-repack", checkpoint_s=60.0)
    assert "mig-repack" in MECHANISM_NAMES and type(repack).__module__ == "fgdopt.timeline.preemption"
    assert repack.checkpointing.interval_s == 60.0
    assert make_mechanism("fgdopt.timeline.preemption:mig_repack").name == "mig-repack"
    with pytest.raises(SpecError, match="no attribute"):
        mechanism_factory("fgdopt.timeline.preemption:nothing")
    with pytest.raises(SpecError, match="must accept the keyword arguments checkpoint_s"):
        make_mechanism("fgdopt.timeline.preemption:Checkpointing")
    register_mechanism("not-one", lambda **_: 3)
    try:
        with pytest.raises(SpecError, match="without name, checkpointing, plan"):
            make_mechanism("not-one")
    finally:
        unregister_mechanism("not-one")
