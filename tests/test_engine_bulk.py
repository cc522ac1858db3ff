"""The time engine's bulk step (a plan's evictions and placements in one pass) against the job-by-job step it replaces:
:meth:`ClusterState.place_many` / :meth:`~ClusterState.remove_many`, :meth:`JobTable.evict_many` /
:meth:`~JobTable.start_many` and :meth:`PendingQueue.withdraw_many` leave the same state as :meth:`place` /
:meth:`remove`, :meth:`evict` + :meth:`stop` / :meth:`begin` + :meth:`launch` and :meth:`withdraw` one by one (the
engine's digests in ``test_engine_regression.py`` cover whole runs)."""

from __future__ import annotations

import numpy as np
import pytest

from fgdopt.defrag import Move
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState, InfeasiblePlacement
from fgdopt.timeline import JobSet
from fgdopt.timeline.jobtable import RUNNING, JobTable
from fgdopt.timeline.pending import PendingQueue, Shapes
from fgdopt.timeline.preemption import Checkpointing, GangMove, NoMechanism

CLUSTER = Cluster([16000, 32000, 8000, 24000], [65536, 131072, 16384, 65536], [2, 4, 1, 8],
                  ["T4", "V100", "T4", "V100"])


def _state_of(s: ClusterState) -> tuple:
    return (s.cpu_left.tolist(), s.mem_left.tolist(), s.gpu_left.tolist(), s.node_of.tolist(), list(s.gpus_of),
            s.revision, s.last_node)


@pytest.mark.parametrize("seed", range(40))
def test_place_and_remove_many_match_one_by_one(seed):
    """Random feasible batches (whole-GPU, sharing and CPU-only tasks, several on one node): placing, then removing
    a random subset, in one pass each, leaves every array, ``revision`` and ``last_node`` as the single steps do."""
    rng = np.random.default_rng(seed)
    n = 30
    num_gpu = rng.choice([0, 1, 1, 2], n)
    milli = np.where(num_gpu == 1, rng.choice([300, 500, 1000], n), np.where(num_gpu > 1, 1000, 0))
    tasks = TaskSet(rng.choice([500, 1000], n), rng.choice([512, 1024], n), num_gpu, milli,
                    rng.choice(["", "V100", "T4|V100"], n))
    one, many = ClusterState(CLUSTER, tasks), ClusterState(CLUSTER, tasks)
    batch = []
    for i in rng.permutation(n).tolist():                  # a feasible batch: what the single steps can place
        nodes = np.flatnonzero(one.feasible_nodes(tasks[i]))
        if len(nodes):
            node = int(rng.choice(nodes))
            gpus = tuple(np.flatnonzero(one.gpu_left[node] >= tasks.gpu_milli[i])[:tasks.num_gpu[i]].tolist())
            one.place(i, node, gpus)
            batch.append((i, node, gpus))
    ids, nodes, gpus = zip(*batch, strict=True)
    many.place_many(ids, nodes, gpus)
    assert _state_of(many) == _state_of(one)
    out = [i for i, _, _ in batch if rng.random() < 0.5]
    for i in out:
        one.remove(i)
    assert many.remove_many(out).tolist() == [n for i, n, _ in batch if i in set(out)]
    assert _state_of(many) == _state_of(one)


def test_place_many_infeasible_raises():
    """Two whole-GPU tasks on the 1-GPU node 2: the batch does not fit, and the error is :meth:`place`'s own."""
    tasks = TaskSet([1000, 1000], [512, 512], [1, 1], [1000, 1000])
    state = ClusterState(CLUSTER, tasks)
    with pytest.raises(InfeasiblePlacement, match="GPU 0 of node 2 has 0 milli left"):
        state.place_many([0, 1], [2, 2], [(0,), (0,)])


@pytest.mark.parametrize(("cpu", "mem", "field"), [(5000, 512, "CPU"), (1000, 10000, "memory")])
def test_place_many_checks_cpu_and_memory(cpu, mem, field):
    """Two sharing tasks on node 2 (8,000 milli-cores, 16,384 MiB): their GPU parts fit (300 + 300 milli on GPU 0),
    but 2 x 5,000 milli-cores or 2 x 10,000 MiB do not; the batch raises :meth:`place`'s error on the second task
    and the first stays placed, as one by one."""
    tasks = TaskSet([cpu, cpu], [mem, mem], [1, 1], [300, 300])
    state = ClusterState(CLUSTER, tasks)
    with pytest.raises(InfeasiblePlacement, match=field):
        state.place_many([0, 1], [2, 2], [(0,), (0,)])
    assert state.node_of.tolist() == [2, -1]
    assert (int(state.cpu_left[2]), int(state.mem_left[2])) == (8000 - cpu, 16384 - mem)


@pytest.mark.parametrize("ckpt", [Checkpointing(transparent=True), Checkpointing(),
                                  Checkpointing(interval_s=20.0, cost_s=2.0)])
def test_evict_and_start_many_match_one_by_one(ckpt):
    """Three jobs of 100 s of work running since 10 s at speed 2 with start costs 0, 5 and 40 s, evicted at 40 s
    (elapsed 30 s), then started again on nodes 1, 0, 1 at 60 s: every array equal to the single steps'. Worked
    for the transparent rule: job 0 keeps 30 s of run time (60 s of work at speed 2), job 1 keeps 25 s (50), job 2
    is still in its 40 s start cost (keeps 0, 30 s of overhead); next runs: 100 - 60 = 40, 50 and 100 s of work
    at the node's speed."""
    tasks = TaskSet([1000] * 3, [512] * 3, [1] * 3, [1000] * 3)
    jobs = JobSet(tasks, np.zeros(3), np.full(3, 100.0))
    pace = np.array([[2.0, 1.0], [2.0, 0.5], [2.0, 4.0]])
    tables = [JobTable(jobs, pace, np.array([0, 1]), ckpt) for _ in range(2)]
    for t in tables:
        t.next_cost[:] = [0.0, 5.0, 40.0]
        for j in range(3):
            t.begin(j, 10.0, 0, 0)
            t.launch(j, 10.0)
    one, many = tables
    for j in range(3):
        one.evict(j, 40.0, "preempt", lambda g: 7.0)
        one.stop(j, 40.0)
    many.evict_many(np.arange(3), 40.0, "preempt", lambda g: 7.0)
    nodes = np.array([1, 0, 1])
    walls = [(one.begin(j, 60.0, int(nodes[j]), 0), one.launch(j, 60.0))[1] for j in range(3)]
    assert many.start_many(np.arange(3), 60.0, nodes, np.zeros(3, dtype=np.int64)).tolist() == walls
    for name, a in vars(one).items():
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(getattr(many, name), a, err_msg=name)
    if ckpt.transparent:
        assert one.saved.tolist() == [60.0, 50.0, 0.0] and one.overhead_s.tolist() == [0.0, 5.0, 30.0]
        assert one.run_work.tolist() == [40.0, 50.0, 100.0] and (one.status == RUNNING).all()


@pytest.mark.parametrize("ckpt", [Checkpointing(transparent=True), Checkpointing(),
                                  Checkpointing(interval_s=20.0, cost_s=2.0)])
def test_rerate_many_matches_one_by_one(ckpt):
    """Four jobs of 100 s of work started at 10 s at speed 2 with start costs 0, 5, 40 and 0 s, re-rated at 30 s
    (elapsed 20 s) to 1, 3, 0.5 and 0: every array and every finish equal to :meth:`JobTable.rerate`'s, one by one.
    Worked (no checkpoint costs): job 0 kept 20 s at speed 2 (40 of work), 60 left at speed 1: ends at 90 s; job 1
    kept 15 s (30), 70 left at speed 3; job 2 is still in its start cost (20 s of it left, no work yet): ends at
    30 + 20 + 100 / 0.5 = 250 s; job 3 at rate 0 has no end."""
    tasks = TaskSet([1000] * 4, [512] * 4, [1] * 4, [1000] * 4)
    jobs = JobSet(tasks, np.zeros(4), np.full(4, 100.0))
    tables = [JobTable(jobs, np.full((4, 1), 2.0), np.array([0]), ckpt) for _ in range(2)]
    for t in tables:
        t.next_cost[:] = [0.0, 5.0, 40.0, 0.0]
        for j in range(4):
            t.begin(j, 10.0, 0, 0)
            t.launch(j, 10.0)
    one, many = tables
    rates = np.array([1.0, 3.0, 0.5, 0.0])
    ends = [one.rerate(j, 30.0, float(r)) for j, r in enumerate(rates)]
    assert many.rerate_many(np.arange(4), 30.0, rates).tolist() == ends
    for name, a in vars(one).items():
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(getattr(many, name), a, err_msg=name)
    if ckpt.transparent:
        assert ends[0] == 90.0 and ends[2] == 250.0 and ends[3] == float("inf")
        assert one.saved.tolist() == [40.0, 30.0, 0.0, 40.0] and one.run_cost.tolist() == [0.0, 0.0, 20.0, 0.0]


def test_withdraw_many_matches_one_by_one():
    """Twenty jobs of two shapes queued in a random order, ten withdrawn: the same jobs left, in the same queue
    order, with the same counts."""
    rng = np.random.default_rng(3)
    n = 20
    tasks = TaskSet([1000] * n, [512] * n, [1] * n, rng.choice([500, 1000], n))
    keys, submit = rng.integers(0, 5, n).astype(float), rng.uniform(0, 10, n).round()
    queues = [PendingQueue(Shapes(tasks), keys, submit, tasks.gpu_demand) for _ in range(2)]
    for j in rng.permutation(n).tolist():
        for q in queues:
            q.enqueue(j)
    out = rng.choice(n, 10, replace=False).tolist()
    for j in out:
        queues[0].withdraw(j)
    queues[1].withdraw_many(out)
    assert queues[1].queued() == queues[0].queued() and len(queues[0].queued()) == 10
    assert (queues[1].pending, queues[1].pending_milli) == (queues[0].pending, queues[0].pending_milli)
    assert sorted(queues[1].waiting().tolist()) == sorted(queues[0].queued())


def test_clock_at_many_drops_stale_events_keeps_order():
    """300 owners scheduled at 1000 - k s, then 290 of them cancelled (stale) and owners 0-4 scheduled again at 5,
    5, 3, 7, 1 s: the push past 256 stale events drops them, and the clock yields the live events by time, then
    scheduling order: owner 4 at 1 s, owner 2 at 3 s, owners 0 and 1 at 5 s, owner 3 at 7 s, then owners 290-299 at
    710 down to 701 s in reverse."""
    from fgdopt.timeline.clock import Clock

    clock = Clock(300)
    clock.at_many([1000.0 - k for k in range(300)], list(range(300)))
    for k in range(290):
        clock.cancel(k)
    clock.at_many([5.0, 5.0, 3.0, 7.0, 1.0], [0, 1, 2, 3, 4])
    assert len(clock.heap) == 15                               # the 290 stale events are gone
    order = []
    while clock.pending():
        t = clock.next_event()
        order += [(t, o) for o in clock.due(t)]
    assert order == [(1.0, 4), (3.0, 2), (5.0, 0), (5.0, 1), (7.0, 3)] + [(1000.0 - k, k) for k in range(299, 289, -1)]


def _placer(cluster: Cluster, tasks: TaskSet):
    """A Placer over ``cluster`` with ``tasks`` submitted at 0 s, 100 s of work each, speed 1 on every model."""
    from fgdopt.policies import make_policy
    from fgdopt.timeline.clock import Clock
    from fgdopt.timeline.placement import Placer

    n = len(tasks)
    jobs = JobSet(tasks, np.zeros(n), np.full(n, 100.0))
    models = sorted(set(cluster.model.tolist()))
    table = JobTable(jobs, np.ones((n, len(models))), np.array([models.index(m) for m in cluster.model]),
                     Checkpointing(transparent=True))
    shapes = Shapes(tasks)
    pending = PendingQueue(shapes, np.zeros(n), np.zeros(n), tasks.gpu_demand)
    return Placer(ClusterState(cluster, tasks), make_policy("best-fit"), False, "best-fit", shapes, table, Clock(n),
                  pending, None)


def test_bulk_steps_take_every_part_of_a_gang():
    """Job 0 (2 GPUs) over nodes 0 and 2 (the T4 nodes: GPU 1 of node 0, GPU 0 of node 2) and job 1 (1 GPU) on node
    1, started and evicted in one pass each: every GPU of both parts comes back, both parts' nodes are freed and
    marked changed, and ``remove_many`` on its own gives back the empty state as well."""
    tasks = TaskSet([1000, 1000], [512, 512], [2, 1], [1000, 1000])
    gang = ((0, (1,)), (2, (0,)))
    state = ClusterState(CLUSTER, tasks)
    state.place_parts(0, gang)
    state.place(1, 1, (3,))
    assert state.remove_many([0, 1]).tolist() == [0, 1]
    assert _state_of(state)[:5] == _state_of(ClusterState(CLUSTER, tasks))[:5] and state.spans(range(2)) is None
    placer = _placer(CLUSTER, tasks)
    placer.start_many([GangMove(0, *gang[0], gang), Move(1, 1, (3,))])
    assert placer.state.parts(0) == gang and int(placer.state.gpu_left[2, 0]) == 0
    placer.freed.clear()
    placer.evict_many([0, 1], "preempt", lambda g: 0.0, NoMechanism())
    assert placer.freed == {0, 1, 2} and (placer.node_revision[[0, 1, 2]] > 0).all()
    assert _state_of(placer.state)[:5] == _state_of(ClusterState(CLUSTER, tasks))[:5]


def test_bulk_moves_of_jobs_in_several_parts_match_one_by_one():
    """Job 0, a gang of two 1-GPU workers, both on V100 node 3 (GPUs 1, 2), started alone; then nine jobs in one
    pass -- job 1 (3 GPUs) over the V100 nodes 1 (GPUs 0, 1) and 3 (GPU 0), its CPU and memory on node 1, and jobs
    2-9 (1 GPU each) on node 1 (GPUs 2, 3), node 3 (GPUs 3-7) and node 0 (GPU 0) -- and all ten evicted in one pass:
    state, parts, demands, revisions per node, nodes touched and freed, counters and job table as job by job.
    ``revision``: 2 steps for the gang (one per part), 1 for job 1 (a span), 1 for each other: 11 after the starts,
    22 after the evictions."""
    tasks = TaskSet([1000] * 10, [512] * 10, [1, 3] + [1] * 8, [1000] * 10, workers=[2] + [1] * 9)
    gang = ((3, (1,)), (3, (2,)))
    span = ((1, (0, 1)), (3, (0,)))
    where = [(1, (2,)), (1, (3,)), *((3, (g,)) for g in range(3, 8)), (0, (0,))]
    moves = [GangMove(1, *span[0], span, ((1000, 512), (0, 0))),
             *(Move(j, *w) for j, w in zip(range(2, 10), where, strict=True))]
    one, many = _placer(CLUSTER, tasks), _placer(CLUSTER, tasks)
    for placer in (one, many):
        placer.start(0, gang)
    for m in moves:
        one.start(m.task, (m.node, m.gpus), getattr(m, "parts", None), getattr(m, "demands", None))
    many.start_many(moves)

    def same(a, b):
        sa, sb = a.state, b.state
        assert _state_of(sa) == _state_of(sb) and sa.parts_of == sb.parts_of and sa.demand_of == sb.demand_of
        assert a.node_revision.tolist() == b.node_revision.tolist() and (a.touched, a.freed) == (b.touched, b.freed)
        assert (a.alloc, a.running) == (b.alloc, b.running) and a.clock.live.tolist() == b.clock.live.tolist()
        for name, arr in vars(a.jobs).items():
            if isinstance(arr, np.ndarray):
                np.testing.assert_array_equal(getattr(b.jobs, name), arr, err_msg=name)

    same(one, many)
    assert one.state.revision == 11 and one.state.parts(1) == span and one.state.held_demand(0) == ((1000, 512),) * 2
    assert one.node_revision.tolist() == [11, 5, 0, 10]      # gang 1-2, job 1 3, 2 4, 3 5 (node 1), 4-8 6-10, 9 11
    for j in range(10):
        one.evict(j, "preempt", lambda g: 0.0, NoMechanism())
    many.evict_many(np.arange(10), "preempt", lambda g: 0.0, NoMechanism())
    same(one, many)
    assert one.state.revision == 22 and one.freed == {0, 1, 3}
    assert _state_of(one.state)[:5] == _state_of(ClusterState(CLUSTER, tasks))[:5]
