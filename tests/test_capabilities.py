"""The capabilities of ClusterState (fgdopt/capabilities.py): which a state holds, each hook by hand, and a property:
any sequence of place / remove (and refused attempts) leaves the state equal to one rebuilt from scratch with the
placements that survive, on the plain rule and on each capability (MIG slices, elastic counts, gangs and spans)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgdopt.capabilities import Capability, ElasticCount, MigSlices, capabilities_for, elastic_mask
from fgdopt.mig.slices import MIG_MODELS, slice_mask
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.state import UNPLACED, ClusterState, InfeasiblePlacement, validate

PLAIN = Cluster([16000, 32000, 8000], [65536, 131072, 16384], [2, 4, 0], ["T4", "V100M16", ""])
MIG = Cluster([64000, 32000], [1 << 20, 1 << 19], [2, 1], ["A100-40GB", "A30-24GB"])
GANGS = Cluster([32000, 32000, 16000], [1 << 18, 1 << 18, 1 << 17], [4, 4, 2], ["A100", "A100", "A100"])


# -- which capabilities a state holds ------------------------------------------------------------------------

def test_a_plain_state_consults_no_capability():
    tasks = TaskSet([1000], [0], [1], [500])
    state = ClusterState(PLAIN, tasks)
    assert state.capabilities == () and state.mig is None and state.placement().starts is None
    assert ClusterState(PLAIN, tasks, np.array([False])).capabilities == ()   # a mask with no elastic task: none


def test_mig_and_elastic_states_hold_their_capability():
    mig = ClusterState(MIG, TaskSet([1000], [0], [1], [142]))
    assert [type(c) for c in mig.capabilities] == [MigSlices] and mig.mig is mig.capabilities[0].layout
    tasks = TaskSet([1000, 1000], [0, 0], [1, 2], [1000, 1000])
    el = ClusterState(GANGS, tasks, np.array([False, True]))
    assert [type(c) for c in el.capabilities] == [ElasticCount]
    assert capabilities_for(GANGS, elastic_mask(tasks, [True, True]))[0].mask.tolist() == [True, True]
    with pytest.raises(ValueError, match="two capabilities own the GPU rule"):
        el._use((MigSlices(mig.mig), MigSlices(mig.mig)))


# -- each hook by hand ---------------------------------------------------------------------------------------

def test_mig_hooks_hand_worked():
    """A100-40GB node 0 (2 GPUs), A30-24GB node 1 (1 GPU). A 3g task (428) at slice 4 sets 0b11110000 on its GPU;
    a 4g (571) only starts at 0, so it still fits that GPU and fills it (0xFF); then a 1g (142) fits only GPU 1 of
    node 0 (its slices 0..6 free) and node 1 (A30 1g.6gb: 250 >= 142). ``gpu_left`` still loses ``gpu_milli``."""
    tasks = TaskSet([1000] * 4, [0] * 4, [1] * 4, [428, 571, 142, 142])
    state = ClusterState(MIG, tasks)
    cap = state.capabilities[0]
    assert state.slices.tolist() == [[0, 0], [0, 0xFF]]                          # node 1's absent GPU: all used
    state.place(0, 0, (0,), (4,))
    assert state.slices[0].tolist() == [0b11110000, 0] and state.starts_of[0] == (4,)
    assert cap.check_gpus(state, tasks[1], 0, (0,), None) is None                 # 4g at 0: free
    assert cap.check_gpus(state, tasks[1], 0, (0,), (4,)) == "MIG: 4g.20gb cannot start at slice 4 (allowed (0,))"
    assert cap.check_gpus(state, tasks[0], 0, (0,), (4,)).startswith("MIG: 3g.20gb at slice 4 overlaps used slices")
    state.place(1, 0, (0,))
    assert state.slices[0].tolist() == [0xFF, 0] and state.starts_of[1] == (0,)
    assert state.gpu_left[0].tolist() == [1000 - 428 - 571, 1000]
    assert cap.gpu_fit(state, tasks[2]).tolist() == [True, True]
    assert cap.check_gpus(state, tasks[2], 0, (0,), None) == "MIG: no free 1g.5gb start on GPU 0 of node 0"
    assert cap.check_gpus(state, tasks[2], 0, (0, 1), None) == "needs 1 distinct GPU id(s), got (0, 1)"
    assert cap.check_gpus(state, tasks[2]._replace(num_gpu=2), 0, (1, 1), None) == \
        "needs 2 distinct GPU id(s), got (1, 1)"
    assert cap.check_gpus(state, tasks[2], 0, (2,), None) == "GPU 2 does not exist on node 0 (2 GPUs)"
    assert cap.check_gpus(state, tasks[2], 0, (1,), (0, 1)) == "1 GPU(s) but 2 start slice(s)"
    state.place(2, 0, (1,))
    assert state.slices[0, 1] == 0b1 and state.placement().starts[2] == (0,)
    copy = state.copy()
    copy.remove(2)
    assert state.slices[0, 1] == 0b1 and copy.slices[0, 1] == 0 and state.starts_of[2] == (0,)
    assert copy.starts_of[2] == ()
    state.remove(0)
    assert state.slices[0].tolist() == [0b00001111, 0b1] and state.starts_of[0] == ()
    assert not any(cap.allows(form, 0) for form in ("span", "workers", "hold"))
    whole = ClusterState(MIG, TaskSet([1000], [0], [2], [1000]))
    with pytest.raises(InfeasiblePlacement, match="may span nodes"):
        whole.place_parts(0, ((0, (0,)), (1, (0,))))
    assert whole.node_of[0] == UNPLACED
    two = ClusterState(Cluster([64000] * 2, [1 << 20] * 2, [2, 2], ["A100-40GB"] * 2), TaskSet([0], [0], [3], [1000]))
    assert not two.parts_fit(two.tasks[0])               # 3 GPUs: on no one node, and MIG refuses a span
    with pytest.raises(ValueError, match="gangs are not supported on a MIG cluster"):
        whole.part_counts(whole.tasks[0])


def test_mig_fits_without_puts_the_victims_back_at_their_starts():
    """Two 2g (285) at slices 4 and 6 leave 0..3 free: a 7g (1000) fits only without both, and asking leaves them at
    4 and 6 (not at the lowest free start, 0), the revision advanced by a remove and a place each."""
    tasks = TaskSet([1000] * 3, [0] * 3, [1] * 3, [285, 285, 1000])
    state = ClusterState(Cluster([8000], [1024], [1], ["A100-40GB"]), tasks)
    state.place(0, 0, (0,), (4,))
    state.place(1, 0, (0,), (2,))
    three_g = TaskSet([1000], [0], [1], [428])[0]
    assert state.gpu_left[0, 0] == 430 and state.feasible_nodes(three_g).tolist() == [False]   # plain rule: 430 >= 428
    assert not state.fits_without(tasks[2], 0, [0]) and state.fits_without(tasks[2], 0, [0, 1])
    assert state.fits_without_each(tasks[2], [0, 1]).tolist() == [False, False]
    assert state.starts_of[:2] == [(4,), (2,)] and state.slices[0, 0] == slice_mask(4, 2) | slice_mask(2, 2)
    tasks_1g = TaskSet([1000], [0], [1], [142])
    assert state.shapes_fit_node(tasks_1g, [0], 0).tolist() == [True]


def test_elastic_hooks_hand_worked():
    """Task 1 is elastic (shape: 2 GPUs): placed on 3 it is judged as 3 x 1000 milli and holds 3000; 0 GPUs is
    refused with a reason; it may span nodes but not be a gang of workers; task 0 keeps its shape."""
    tasks = TaskSet([1000, 2000], [0, 0], [1, 2], [1000, 1000])
    cap = ElasticCount(elastic_mask(tasks, [False, True]))
    first = tasks[0]
    assert cap.shape(0, first, 3) is first
    assert cap.shape(1, tasks[1], 1).num_gpu == 1 and cap.shape(1, tasks[1], 3).num_gpu == 3
    assert cap.shape(1, tasks[1], 0) == "an elastic task holds a GPU or more"
    assert cap.allows("span", 1) and not cap.allows("workers", 1) and cap.allows("workers", 0)
    assert cap.allows("workers", None) and cap.allows("hold", None)
    state = ClusterState(GANGS, tasks, cap.mask)
    state.place(1, 0, (0, 1, 2))
    assert state.held_milli(1) == 3000 and state.gpu_left[0].tolist() == [0, 0, 0, 1000]
    assert state.cpu_left[0] == 30000
    with pytest.raises(InfeasiblePlacement, match="needs 1 distinct GPU"):
        state.place(0, 1, (0, 1))
    state.remove(1)
    state.place_parts(1, ((0, (0, 1, 2, 3)), (1, (0,))))
    assert state.held_milli(1) == 5000 and state.cpu_left.tolist() == [30000, 32000, 16000]


class _NoSpans(Capability):
    """Refuses tasks over several nodes (a stand-in for a resource that cannot be split over nodes)."""

    def allows(self, form, i):
        return form != "span"


def test_every_capability_must_allow_a_form():
    """Elastic task 0 may span nodes by :class:`ElasticCount`; with a second capability refusing spans it may not."""
    tasks = TaskSet([1000], [0], [1], [1000])
    state = ClusterState(GANGS, tasks, np.array([True]))
    state._use((*state.capabilities, _NoSpans()))
    with pytest.raises(InfeasiblePlacement, match="may span nodes"):
        state.place_parts(0, ((0, (0,)), (1, (0,))))
    state._use(state.capabilities[:1])
    state.place_parts(0, ((0, (0,)), (1, (0,))))
    assert state.held_milli(0) == 2000


class _Ledger(Capability):
    """A capability that records the hooks called (what a new kind of resource would see)."""

    def __init__(self):
        self.calls = []

    def take(self, state, i, task, node, gpus, starts):
        self.calls.append(("take", i, node, gpus))

    def give_back(self, state, i, task, node, gpus):
        self.calls.append(("give_back", i, node, gpus))

    def copy_into(self, state, new):
        self.calls.append(("copy",))

    def allows(self, form, i):
        return False                                    # take / give_back see one-node placements only


def test_a_new_capability_is_consulted_by_every_method_without_a_branch_for_it():
    tasks = TaskSet([1000, 1000], [0, 0], [1, 1], [500, 1000], workers=[1, 2])
    state = ClusterState(GANGS, tasks)
    ledger = _Ledger()
    state._use((ledger,))
    state.place(0, 0, (1,))
    state.remove(0)
    state.place_many([0], [2], [(0,)])                   # a capability that takes: placed one by one, through it
    state.copy()
    with pytest.raises(InfeasiblePlacement, match="hold takes one part"):
        state.hold(tasks[0], 0, (0,))
    with pytest.raises(InfeasiblePlacement, match="a gang cannot be placed"):
        state.place_parts(1, [(0, (0,)), (1, (0,))])
    assert not state.parts_fit(TaskSet([0], [0], [5], [1000])[0])        # 5 of the 10 GPUs: a span, refused
    assert ledger.calls == [("take", 0, 0, (1,)), ("give_back", 0, 0, (1,)), ("take", 0, 2, (0,)), ("copy",)]
    assert not state._vectorized and state._takers == (ledger,) and state._shapers == ()


# -- the property: incremental == rebuilt from scratch ---------------------------------------------------------

def _rebuilt(state: ClusterState) -> dict:
    """The free capacity the surviving placements of ``state`` leave, summed from scratch (independently of
    ``place`` / ``remove``): per part its CPU and memory on its node (a span: once, on the first node), gpu_milli per
    GPU held, MIG slices from the recorded starts."""
    c, t = state.cluster, state.tasks
    cpu, mem = c.cpu_milli.copy(), c.memory_mib.copy()
    gpu = np.where(np.arange(c.max_gpus)[None, :] < c.gpu[:, None], GPU_MILLI, 0)
    slices = np.where(np.arange(c.max_gpus)[None, :] < c.gpu[:, None], 0, 0xFF) if state.mig is not None else None
    for i in np.flatnonzero(state.node_of != UNPLACED).tolist():
        parts = state.parts(i)
        for k, (node, gpus) in enumerate(parts):
            if k == 0 or t.workers[i] > 1:
                cpu[node] -= t.cpu_milli[i]
                mem[node] -= t.memory_mib[i]
            for g in gpus:
                gpu[node, g] -= t.gpu_milli[i]
            if slices is not None:
                prof = MIG_MODELS[c.model[node]].profile_for(int(t.gpu_milli[i])) if gpus else None
                for g, s in zip(gpus, state.starts_of[i], strict=True):
                    assert not slices[node, g] & slice_mask(s, prof.size)
                    slices[node, g] |= slice_mask(s, prof.size)
    return {"cpu": cpu, "mem": mem, "gpu": gpu, "slices": slices}


def _snapshot(state: ClusterState) -> tuple:
    p = state.placement()
    return (state.cpu_left.tolist(), state.mem_left.tolist(), state.gpu_left.tolist(), p.node.tolist(), p.gpus,
            p.starts, p.spans, None if state.mig is None else state.slices.tolist())


def _assert_equal_to_rebuilt(state: ClusterState, elastic) -> None:
    want = _rebuilt(state)
    assert state.cpu_left.tolist() == want["cpu"].tolist() and state.mem_left.tolist() == want["mem"].tolist()
    assert state.gpu_left.tolist() == want["gpu"].tolist()
    if state.mig is not None:
        assert state.slices.tolist() == want["slices"].tolist()
    replay = validate(state.cluster, state.tasks, state.placement(), elastic)      # place / place_parts / workers
    assert _snapshot(replay) == _snapshot(state)
    assert [replay.held_milli(i) for i in range(len(state.tasks))] == [state.held_milli(i)
                                                                       for i in range(len(state.tasks))]


def _gpus(draw, state: ClusterState, node: int, k: int, taken=()) -> tuple[int, ...]:
    """``k`` GPU ids of ``node``: mostly among those with the most milli-GPU left and not ``taken``, else any (then
    they may not fit; fewer than ``k`` on a small node)."""
    ids = list(range(int(state.cluster.gpu[node])))
    if draw(st.integers(0, 3)):
        ids = sorted((g for g in ids if g not in taken), key=lambda g: -state.gpu_left[node, g])
        return tuple(ids[:k])
    return tuple(draw(st.permutations(ids))[:k])


def _random_parts(draw, state: ClusterState, i: int) -> tuple:
    """Parts for a gang or a span of task ``i``: random nodes, GPUs by :func:`_gpus` (they may not fit)."""
    t = state.tasks
    n_parts = int(t.workers[i]) if t.workers[i] > 1 else draw(st.integers(2, 3))
    parts, taken = [], set()
    for _ in range(n_parts):
        node = draw(st.integers(0, state.cluster.n_nodes - 1))
        k = int(t.num_gpu[i]) if t.workers[i] > 1 else draw(st.integers(1, 2))
        gpus = _gpus(draw, state, node, k, {g for n, g in taken if n == node})
        taken |= {(node, g) for g in gpus}
        parts.append((node, gpus))
    return tuple(parts)


def _step(draw, state: ClusterState, i: int) -> None:
    """Remove task ``i`` if placed, else try a random placement of it (refused ones must change nothing)."""
    if state.node_of[i] != UNPLACED:
        state.remove(i)
        return
    t, c = state.tasks, state.cluster
    node = draw(st.integers(0, c.n_nodes - 1))
    before = _snapshot(state)
    try:
        if t.workers[i] > 1 or (t.gpu_milli[i] == GPU_MILLI and draw(st.booleans()) and draw(st.booleans())):
            parts = _random_parts(draw, state, i)
            state.place_parts(i, parts)
            return
        k = int(t.num_gpu[i]) if not state.elastic[i] else draw(st.integers(0, max(1, int(c.gpu[node]))))
        gpus = _gpus(draw, state, node, k)
        starts = None
        if state.mig is not None and gpus and draw(st.booleans()):
            prof = state.mig.profile(node, int(t.gpu_milli[i]))
            starts = tuple(draw(st.sampled_from(prof.starts)) for _ in gpus)
        state.place(i, node, gpus, starts)
    except InfeasiblePlacement:
        assert _snapshot(state) == before                                  # all or nothing


def _tasks(draw, mig: bool) -> TaskSet:
    n = draw(st.integers(3, 8))
    codes = [142, 285, 428, 571, 1000] if mig else [0, 100, 300, 500, 700, 1000, 1000, 1000]
    milli = draw(st.lists(st.sampled_from(codes), min_size=n, max_size=n))
    num = [0 if m == 0 else (draw(st.integers(1, 2)) if m == 1000 else 1) for m in milli]
    workers = [1] * n if mig else [draw(st.sampled_from([1, 1, 2, 3])) if m == 1000 else 1 for m in milli]
    cpu = draw(st.lists(st.integers(0, 12000), min_size=n, max_size=n))
    mem = draw(st.lists(st.integers(0, 1 << 16), min_size=n, max_size=n))
    return TaskSet(cpu, mem, num, milli, workers=workers)


@pytest.mark.parametrize("kind", ["plain", "mig", "elastic", "gangs"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_place_remove_sequences_equal_the_state_rebuilt_from_the_survivors(kind, data):
    draw = data.draw
    cluster = {"plain": PLAIN, "mig": MIG, "elastic": GANGS, "gangs": GANGS}[kind]
    tasks = _tasks(draw, kind == "mig")
    if kind == "plain":
        tasks = TaskSet(tasks.cpu_milli, tasks.memory_mib, tasks.num_gpu, tasks.gpu_milli)   # no gangs
    elastic = None
    if kind == "elastic":
        whole = (tasks.gpu_milli == GPU_MILLI) & (tasks.workers == 1)
        elastic = whole & np.array(draw(st.lists(st.booleans(), min_size=len(tasks), max_size=len(tasks))))
    state = ClusterState(cluster, tasks, elastic)
    for i in draw(st.lists(st.integers(0, len(tasks) - 1), min_size=6, max_size=30)):
        _step(draw, state, i)
        _assert_equal_to_rebuilt(state, elastic)
    copy = state.copy()
    for i in np.flatnonzero(state.node_of != UNPLACED).tolist():
        copy.remove(i)
    assert copy.allocated_milli == 0 and (copy.cpu_left == cluster.cpu_milli).all()
    _assert_equal_to_rebuilt(state, elastic)                                  # the copy's removals left it intact


def _stores(state: ClusterState) -> tuple:
    """Everything a placement or removal changes: free capacity, every task's parts and held demand, revision."""
    return (state.cpu_left.tolist(), state.mem_left.tolist(), state.gpu_left.tolist(), state.node_of.tolist(),
            state.gpus_of, state.parts_of, state.demand_of, state.revision, state.last_node,
            None if state.mig is None else (state.slices.tolist(), state.starts_of))


def _move(draw, state: ClusterState, i: int, chosen: bool) -> tuple:
    """A random move of unplaced task ``i``: ``(i, parts, demands)``, in one part or (a gang, or a whole-GPU task
    sometimes) several; ``demands`` one random ``(cpu_milli, memory_mib)`` per part if ``chosen`` (it may not fit)."""
    t, c = state.tasks, state.cluster
    if t.workers[i] > 1 or (state.mig is None and t.gpu_milli[i] == GPU_MILLI and draw(st.booleans())):
        parts = _random_parts(draw, state, i)
    else:
        node = draw(st.integers(0, c.n_nodes - 1))
        k = int(t.num_gpu[i]) if not state.elastic[i] else draw(st.integers(1, max(1, int(c.gpu[node]))))
        parts = ((node, _gpus(draw, state, node, k)),)
    demands = tuple((draw(st.integers(0, 8000)), draw(st.integers(0, 1 << 15))) for _ in parts) if chosen else None
    return i, parts, demands


def _place_one(state: ClusterState, move: tuple) -> None:
    i, parts, demands = move
    if len(parts) > 1:
        state.place_parts(i, parts, demands=demands)
    else:
        state.place(i, *parts[0], demand=None if demands is None else demands[0])


@pytest.mark.parametrize("kind", ["plain", "mig", "elastic", "gangs"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bulk_moves_equal_the_same_moves_one_by_one(kind, data):
    """A reallocation of random single- and multi-part tasks (some placed tasks out, then moves in) in bulk
    (``remove_many``, then one ``place_many`` of all parts of all moves) leaves the state -- free CPU, memory and
    milli-GPU per GPU, every task's parts and held demand, ``revision`` and ``last_node``, MIG slices -- exactly as
    the same removals and placements one by one; a last move that does not fit raises the same error in both,
    after the same earlier moves. The placement replayed (:func:`validate`, with the demands it reports as chosen)
    gives the same state."""
    draw = data.draw
    cluster = {"plain": PLAIN, "mig": MIG, "elastic": GANGS, "gangs": GANGS}[kind]
    tasks = _tasks(draw, kind == "mig")
    if kind != "gangs":
        tasks = TaskSet(tasks.cpu_milli, tasks.memory_mib, tasks.num_gpu, tasks.gpu_milli)   # no gangs
    elastic = None
    if kind == "elastic":
        elastic = (tasks.gpu_milli == GPU_MILLI) & np.array(draw(st.lists(st.booleans(), min_size=len(tasks),
                                                                         max_size=len(tasks))))
    state = ClusterState(cluster, tasks, elastic)
    for i in draw(st.lists(st.integers(0, len(tasks) - 1), max_size=12)):
        _step(draw, state, i)
    one, many = state.copy(), state.copy()
    out = draw(st.permutations(np.flatnonzero(state.node_of != UNPLACED).tolist()))
    out = out[:draw(st.integers(0, len(out)))]
    for i in out:
        one.remove(i)
    assert many.remove_many(out).tolist() == state.node_of[out].tolist()
    assert _stores(many) == _stores(one)
    chosen = draw(st.booleans())
    moves = []
    for i in draw(st.permutations(np.flatnonzero(one.node_of == UNPLACED).tolist())):
        move = _move(draw, one, i, chosen)
        try:
            _place_one(one, move)
        except InfeasiblePlacement as exc:
            error = str(exc)                                      # the last move: it does not fit
            moves.append(move)
            break
        moves.append(move)
    else:
        error = None
    if not moves:
        return
    ids = [i for i, _, _ in moves]
    spans = [parts if len(parts) > 1 else () for _, parts, _ in moves]
    demands = [ds if len(ds) > 1 else ds[0] for _, _, ds in moves] if chosen else None
    if error is None:
        many.place_many(ids, [p[0][0] for _, p, _ in moves], [p[0][1] for _, p, _ in moves], demands, spans=spans)
    else:
        with pytest.raises(InfeasiblePlacement) as caught:
            many.place_many(ids, [p[0][0] for _, p, _ in moves], [p[0][1] for _, p, _ in moves], demands,
                            spans=spans)
        assert str(caught.value) == error
    assert _stores(many) == _stores(one)
    placement = many.placement()                    # the demands chosen at placement, and only those, replayed
    assert chosen or placement.demands is None
    replay = validate(cluster, tasks, placement, elastic)
    assert _stores(replay)[:7] == _stores(many)[:7]
