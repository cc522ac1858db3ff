"""The pending queue's bookkeeping against the plain reading of its docstring: the first ``k`` jobs of the unfit
shapes in queue order under any sequence of queue operations (its cache ``first_unfit`` keeps up to date), and the
gang reservation, which only a gang takes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.pending import UNFIT, PendingQueue, Shapes

N = 8
TASKS = TaskSet([1000] * N, [512] * N, [1] * N, [500, 1000] * 4)
"""Eight jobs of two shapes (500 and 1000 milli-GPU), shape ``j % 2``."""

operation = st.one_of(
    st.tuples(st.just("enqueue"), st.integers(0, N - 1)),
    st.tuples(st.just("enqueue_many"), st.lists(st.integers(0, N - 1), max_size=5, unique=True)),
    st.tuples(st.just("withdraw"), st.integers(0, N - 1)),
    st.tuples(st.just("withdraw_many"), st.lists(st.integers(0, N - 1), min_size=2, max_size=N, unique=True)),
    st.tuples(st.just("set_unfit"), st.integers(0, 1)),
    st.tuples(st.just("first_unfit"), st.sampled_from([2, 2, 2, 3])),   # mostly one k: the cache is kept
)


@settings(max_examples=120, deadline=None)
@given(keys=st.lists(st.integers(0, 2), min_size=N, max_size=N), first=st.permutations(range(N)),
       ops=st.lists(operation, min_size=20, max_size=60))
def test_first_unfit_is_the_queue_orders_first_k_of_the_unfit_shapes(keys, first, ops):
    """From a queue of every job (queued in a random order), random enqueues, withdrawals (one by one and in bulk),
    shapes marked unfit and reads of ``first_unfit(k)``: every read equals the first ``k`` entries ``(key, submit,
    job)`` of the pending jobs of the unfit shapes, sorted afresh; the counts follow the jobs in the queue."""
    shapes = Shapes(TASKS)
    submit = np.arange(N, dtype=np.float64) % 5
    queue = PendingQueue(shapes, np.array(keys, dtype=np.float64), submit, TASKS.gpu_demand)
    queue.enqueue_many(list(first))
    pending: set[int] = set(first)
    for op, arg in ops:
        if op == "enqueue" and arg not in pending:
            queue.enqueue(arg)
            pending.add(arg)
        elif op == "enqueue_many":
            fresh = [j for j in arg if j not in pending]
            queue.enqueue_many(fresh)
            pending |= set(fresh)
        elif op == "withdraw" and arg in pending:
            queue.withdraw(arg)
            pending.discard(arg)
        elif op == "withdraw_many":
            out = [j for j in arg if j in pending]
            queue.withdraw_many(out)
            pending -= set(out)
        elif op == "set_unfit" and arg in queue.buckets:
            queue.set_unfit(arg)
        elif op == "first_unfit":
            unfit = [j for j in pending if queue.fit[shapes.of[j]] == UNFIT]
            expected = sorted((keys[j], submit[j], j) for j in unfit)[:arg]
            assert queue.first_unfit(arg) == [j for _, _, j in expected]
        assert queue.pending == len(pending)
        assert queue.pending_milli == int(TASKS.gpu_demand[sorted(pending)].sum())


def test_first_unfit_follows_the_bulk_paths():
    """Sixteen jobs of two shapes (job ``j`` of shape ``j % 2``), all queued with keys 15 - j (job 15 first), shape 0
    unfit: the first two unfit jobs are 14 and 12. Withdrawing 8 jobs at once (the bulk path), 12 among them, leaves
    14 and 10 first; queuing 12 again with others at once (``enqueue_many``: it falls between the two) puts it
    second; queuing job 0 alone (key 15) changes nothing. Then with every unfit job but 14 withdrawn, the first two
    are 14 alone, and job 0 queued again (last in order) is the second."""
    n = 16
    tasks = TaskSet([1000] * n, [512] * n, [1] * n, [500, 1000] * 8)
    queue = PendingQueue(Shapes(tasks), np.arange(n, 0, -1, dtype=np.float64) - 1, np.zeros(n), tasks.gpu_demand)
    queue.enqueue_many(list(range(n)))
    queue.set_unfit(0)
    assert queue.first_unfit(2) == [14, 12]
    queue.withdraw_many([12, 0, 1, 3, 5, 7, 9, 11])
    assert queue.first_unfit(2) == [14, 10]
    queue.enqueue_many([1, 12, 3])
    assert queue.first_unfit(2) == [14, 12]
    queue.enqueue(0)
    assert queue.first_unfit(2) == [14, 12] and queue.first_unfit(3) == [14, 12, 10]
    queue.withdraw_many([0, 2, 4, 6, 8, 10, 12, 1])
    assert queue.first_unfit(2) == [14]
    queue.enqueue_many([0])
    assert queue.first_unfit(2) == [14, 0]


def test_only_a_gang_is_reserved():
    """One 3-GPU node; A (2 GPUs, 0-100 s), then B (2 GPUs, at 1 s) and C (1 GPU, at 2 s, 50 s), backfilling with
    reservations at once (``gang_reserve_s`` 0). B is no gang, so nothing is reserved: C takes the free GPU at 2 s
    and B starts when A leaves, at 100 s. With B a gang of two 1-GPU workers instead, B is reserved at 1 s: C, behind
    it, waits, and starts at 100 s in the pass that starts B (the free GPU goes to nobody before)."""
    cluster = Cluster([8000], [8192], [3], ["T4"])
    plain = JobSet(TaskSet([1000] * 3, [1024] * 3, [2, 2, 1], [1000] * 3), [0.0, 1.0, 2.0], [100.0, 100.0, 50.0])
    assert simulate(cluster, plain, "best-fit", "backfill", gang_reserve_s=0.0).start_s.tolist() == [0.0, 100.0, 2.0]
    gang = JobSet(TaskSet([1000] * 3, [1024] * 3, [2, 1, 1], [1000] * 3, workers=[1, 2, 1]), [0.0, 1.0, 2.0],
                  [100.0, 100.0, 50.0])
    assert simulate(cluster, gang, "best-fit", "backfill", gang_reserve_s=0.0).start_s.tolist() == [0.0, 100.0, 100.0]


def test_blocked_counts_jobs_of_a_single_milli_gpu():
    """Unfit shapes of 1 and 400 milli-GPU (three jobs each) against 803 free milli-GPU: smallest first, all three
    1-milli jobs (3) and then two of the 400s (800) would fit that total: 5 jobs, 803 milli. A job of one milli-GPU is
    a job with GPU demand (the count left it out at first)."""
    tasks = TaskSet([1000] * 6, [512] * 6, [1] * 6, [1, 400] * 3)
    queue = PendingQueue(Shapes(tasks), np.zeros(6), np.zeros(6), tasks.gpu_demand)
    queue.enqueue_many(list(range(6)))
    queue.set_unfit(0)
    queue.set_unfit(1)
    assert queue.blocked(803) == (5, 803)
