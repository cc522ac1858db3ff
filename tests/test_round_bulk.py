"""A round's reallocation in one pass against the same moves one by one (:meth:`Placer.evict_many`,
:meth:`~Placer.start_many`, :meth:`~Placer.rerate_many` as the round loop calls them, through
:func:`fgdopt.timeline.engine._reallocate`): random jobs on a random cluster run, a random part of them is preempted,
some of those and some waiting ones are placed on free GPUs, some of the placed ones re-rated in the same instant.
Some jobs of several GPUs are placed over several nodes of one GPU model (a :class:`GangMove`, with or without its
parts' CPU and memory), some of one node as a one-part :class:`GangMove`; half the runs have a gang (never placed) and
so slow every job over several nodes by ``gang_slowdown`` = 1.5 (the other half: no gang, no slowdown). The state, the
job table, the counters, the nodes' revisions and the finish events the clock yields (times and order) are those of
:meth:`Placer.evict`, :meth:`~Placer.start` and :meth:`~Placer.rerate` one job at a time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.defrag import Move
from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import engine, placement
from fgdopt.timeline.preemption import GangMove, NoMechanism
from tests.test_engine_bulk import _placer


def _world(draw_seed: int):
    """A cluster of 3-6 nodes (1-4 GPUs each, two models) and 6-14 jobs of 1-3 GPUs (seeded); with even odds, one
    more job, a gang of two 1-GPU workers (it makes the run one with gangs)."""
    rng = np.random.default_rng(draw_seed)
    k = int(rng.integers(3, 7))
    gpus = rng.integers(1, 5, k)
    cluster = Cluster([64000] * k, [262144] * k, gpus.tolist(), ["A" if i % 2 else "B" for i in range(k)])
    n = int(rng.integers(6, 15))
    gang = int(rng.random() < 0.5)
    tasks = TaskSet([1000] * (n + gang), [512] * (n + gang), rng.integers(1, 4, n).tolist() + [1] * gang,
                    [1000] * (n + gang), workers=[1] * n + [2] * gang)
    return rng, cluster, tasks, n


def _spread(free: list[list[int]], model: np.ndarray, need: int, rng) -> tuple | None:
    """Parts ``((node, gpus), ...)`` over at least two nodes of one random GPU model, ``need`` free GPUs in all
    (each node's lowest, taken off ``free``), or None if that model's nodes do not hold them."""
    kind = rng.choice(["A", "B"])
    nodes = [node for node in rng.permutation(len(free)).tolist() if model[node] == kind and free[node]]
    parts, left = [], need
    for node in nodes:
        if left:
            take = min(left, len(free[node]), need - 1)     # never all on one node
            parts.append((node, tuple(free[node][:take])))
            left -= take
    if left:
        return None
    for node, gs in parts:
        del free[node][:len(gs)]
    return tuple(parts)


def _free_moves(state, jobs, rng) -> list:
    """Each job of ``jobs`` in turn: a job of several GPUs, at random, over several nodes of one model
    (:func:`_spread`; a :class:`GangMove`, half of them with random CPU and memory on each part); else on a random
    node with room, its lowest free GPUs (those that fit), a :class:`Move` or, at random, a one-part
    :class:`GangMove` with or without its CPU and memory."""
    free = [np.flatnonzero(state.gpu_left[node] == 1000).tolist() for node in range(state.cluster.n_nodes)]
    moves = []
    for j in jobs:
        need = int(state.tasks.num_gpu[j])
        if need > 1 and rng.random() < 0.5 and (parts := _spread(free, state.cluster.model, need, rng)):
            demands = tuple((int(rng.integers(0, 3)) * 500, 256) for _ in parts) if rng.random() < 0.5 else None
            moves.append(GangMove(j, *parts[0], parts, demands))
            continue
        nodes = [node for node, gs in enumerate(free) if len(gs) >= need]
        if nodes:
            node = int(rng.choice(nodes))
            at = (node, tuple(free[node][:need]))
            kind = rng.random()
            moves.append(Move(j, *at) if kind < 0.6 else GangMove(j, *at, (at,), ((2000, 256),) if kind < 0.8
                                                                   else None))
            del free[node][:need]
    return moves


def _snapshot(placer) -> tuple:
    """Everything a reallocation changes, the clock's live events in the order it yields them."""
    s, jobs = placer.state, placer.jobs
    table = {name: arr.tobytes() for name, arr in vars(jobs).items() if isinstance(arr, np.ndarray)}   # bit for bit
    heap = sorted(e for e in placer.clock.heap if placer.clock.live[e[2]] == e[1])
    return (s.gpu_left.tolist(), s.cpu_left.tolist(), s.node_of.tolist(), s.parts_of, s.demand_of, s.revision,
            s.last_node, placer.node_revision.tolist(), placer.alloc, placer.running, sorted(placer.freed),
            sorted(placer.touched), table, [(t, owner) for t, _, owner in heap],
            {s: sorted(b) for s, b in placer.queue.buckets.items()})


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_a_rounds_reallocation_in_one_pass_matches_one_by_one(seed):
    runs = []
    for bulk_min in (1, 10**9):                               # the one-pass paths, then every job one by one
        rng, cluster, tasks, n = _world(seed)
        placer = _placer(cluster, tasks)
        placer.gang_slowdown = 1.5                            # slows a job over several nodes iff a gang
        original, placement.BULK_MIN = placement.BULK_MIN, bulk_min
        try:
            placer.queue.enqueue_many(list(range(n)))
            first = _free_moves(placer.state, rng.permutation(n).tolist(), rng)
            placer.queue.withdraw_many([m.task for m in first])
            placer.clock.now = 10.0
            placer.start_many(first)
            placer.clock.now = 25.0
            running = [m.task for m in first]
            victims = tuple(j for j in running if rng.random() < 0.6)
            out = [j for j in range(n) if j not in running or j in victims]
            rng.shuffle(out)
            state = placer.state.copy()
            state.remove_many(list(victims))                  # the victims' GPUs free for the new placements
            admits = tuple(_free_moves(state, out, rng))
            rated = tuple((m.task, float(rng.choice([0.0, 0.5, 2.0]))) for m in admits if rng.random() < 0.5)
            engine._reallocate((), victims, admits, placer, placer.queue, lambda g: 3.0, NoMechanism(),
                               rerated=frozenset(j for j, _ in rated))
            if rated:
                placer.rerate_many(np.array([j for j, _ in rated]), np.array([r for _, r in rated]))
        finally:
            placement.BULK_MIN = original
        runs.append(_snapshot(placer))
    assert runs[0] == runs[1]


def test_a_gang_starts_from_a_plan_one_by_one_as_in_one_pass():
    """A gang of two 1-GPU workers planned over two 2-GPU nodes (GPU 0 of each) starts the same way one by one
    (:meth:`Placer.start` takes a plan's parts for a gang) and in one pass: both parts held, both nodes changed."""
    cluster = Cluster([64000] * 2, [262144] * 2, [2, 2], ["A", "A"])
    tasks = TaskSet([1000], [512], [1], [1000], workers=[2])
    parts = ((0, (0,)), (1, (0,)))
    runs = []
    for bulk_min in (1, 10**9):
        placer = _placer(cluster, tasks)
        original, placement.BULK_MIN = placement.BULK_MIN, bulk_min
        try:
            placer.queue.enqueue_many([0])
            placer.queue.withdraw_many([0])
            placer.start_many([GangMove(0, *parts[0], parts, None)])
        finally:
            placement.BULK_MIN = original
        assert placer.state.parts(0) == parts
        runs.append(_snapshot(placer))
    assert runs[0] == runs[1]
