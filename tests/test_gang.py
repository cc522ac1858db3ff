"""Gang jobs (``workers > 1``): the data model, all-or-nothing placement in ClusterState, part-by-part placement by
every policy, the engine (admission, start and finish at once, reservation under backfill, preemption, cross-node
slowdown), conservation over random gang workloads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.frag import Workload
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import make_policy
from fgdopt.policies.gang import choose_parts
from fgdopt.state import UNPLACED, ClusterState, InfeasiblePlacement, validate
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.engine import FINISHED, REJECTED, RUNNING

TWO_BY_8 = Cluster([64000, 64000], [262144, 262144], [8, 8], ["A100", "A100"])


def _state(cluster, **cols) -> ClusterState:
    n = len(cols["cpu_milli"])
    cols.setdefault("memory_mib", [0] * n)
    return ClusterState(cluster, TaskSet(**cols))


# -- data model ------------------------------------------------------------------------------------------------

def test_workers_default_one_and_demand_counts_every_part():
    t = TaskSet([1000, 2000], [0, 0], [2, 1], [1000, 500], workers=[4, 1])
    assert TaskSet([1000], [0], [1], [500]).workers.tolist() == [1]
    assert t.gpu_demand.tolist() == [8000, 500]                       # 4 parts x 2 GPUs; one sharing task
    assert t[0].workers == 4 and t[0].part.workers == 1 and t[0].part.num_gpu == 2
    assert t.take([0, 0]).workers.tolist() == [4, 4]
    assert TaskSet.from_records(t.to_records()).workers.tolist() == [4, 1]
    assert "workers" not in t.to_records()[1]                        # 1 is the default: left out


def test_sixteen_gpu_nodes_and_parts():
    c = Cluster([128000], [1 << 20], [16], ["H100"])
    state = _state(c, cpu_milli=[1000], num_gpu=[16], gpu_milli=[1000])
    state.place(0, 0, tuple(range(16)))
    assert state.gpu_left.sum() == 0


# -- ClusterState ----------------------------------------------------------------------------------------------

def test_a_gangs_parts_are_placed_all_or_none():
    # 2 x 8-GPU nodes; task 0 a gang of 2 x 8 GPUs, task 1 a gang of 3 x 4 GPUs.
    state = _state(TWO_BY_8, cpu_milli=[1000, 1000], num_gpu=[8, 4], gpu_milli=[1000, 1000], workers=[2, 3])
    before = (state.cpu_left.copy(), state.gpu_left.copy(), state.revision)
    # part 1 of task 1 on node 0 again: GPUs 0-3 are held by part 0 -> the whole gang is refused, nothing changed
    with pytest.raises(InfeasiblePlacement, match=r"task 1 \(task-1\), part 1: GPU 0 of node 0 has 0 milli left"):
        state.place_parts(1, [(0, (0, 1, 2, 3)), (0, (0, 1, 2, 3)), (1, (0, 1, 2, 3))])
    assert (state.cpu_left == before[0]).all() and (state.gpu_left == before[1]).all()
    assert state.revision == before[2] and state.node_of[1] == UNPLACED
    with pytest.raises(InfeasiblePlacement, match="2 part"):
        state.place_parts(1, [(0, (0, 1, 2, 3)), (1, (0, 1, 2, 3))])
    with pytest.raises(InfeasiblePlacement, match="is a gang of 2 workers: it is placed by place_parts"):
        state.place(0, 0, tuple(range(8)))
    # parts may share a node: two parts on node 0, one on node 1
    state.place_parts(1, [(0, (0, 1, 2, 3)), (0, (4, 5, 6, 7)), (1, (0, 1, 2, 3))])
    assert state.cpu_left.tolist() == [62000, 63000]                 # each part takes its own CPU
    assert state.held_milli(1) == 12000 and state.allocated_milli == 12000
    assert state.revision == before[2] + 3 and state.last_node == 1
    assert validate(TWO_BY_8, state.tasks, state.placement()).allocated_milli == 12000   # replays the parts
    state.remove(1)                                                  # every part at once
    assert (state.gpu_left == 1000).all() and state.cpu_left.tolist() == [64000, 64000]
    assert state.parts(1) == ()


def test_part_counts_hand_worked():
    # node 0: 32000 milli-cores, 8 GPUs; a part of 10000 milli-cores and 2 GPUs: min(32000 // 10000, 8 // 2) = 3.
    # node 1: GPUs [1000, 600, 300] after a sharing task of 400 on GPU 1 and 700 on GPU 2; sharing parts of 300:
    # floor(1000/300) + floor(600/300) + floor(300/300) = 3 + 2 + 1 = 6.
    c = Cluster([32000, 64000], [1024, 1024], [8, 3], ["A", "B"])
    state = _state(c, cpu_milli=[10000, 0, 0, 100], num_gpu=[2, 1, 1, 1], gpu_milli=[1000, 400, 700, 300],
                   workers=[5, 1, 1, 9])
    state.place(1, 1, (1,))
    state.place(2, 1, (2,))
    assert state.part_counts(state.tasks[0]).tolist() == [3, 0]      # node 1: 1 free GPU < 2
    assert state.part_counts(state.tasks[3]).tolist() == [9, 6]      # node 0: min(320 by CPU, 8 x 3 = 24), capped at 9
    assert state.parts_fit(state.tasks[3]) and not state.parts_fit(state.tasks[0])   # 15 >= 9; 3 < 5


@st.composite
def _instances(draw):
    n = draw(st.integers(1, 4))
    gpus = draw(st.lists(st.integers(0, 16), min_size=n, max_size=n))
    cpus = draw(st.lists(st.integers(1, 8), min_size=n, max_size=n))
    cluster = Cluster([8000 * c for c in cpus], [1024] * n, gpus, ["A"] * n)
    shape = draw(st.sampled_from([(0, 0), (1, 300), (1, 500), (1, 1000), (2, 1000), (4, 1000), (8, 1000)]))
    workers = draw(st.integers(2, 6))
    cpu = draw(st.sampled_from([0, 1000, 4000]))
    pre = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from([(1, 200), (1, 700), (2, 1000)])),
                        max_size=6))
    return cluster, (cpu, *shape, workers), pre


def _prefilled(cluster, gang, pre) -> ClusterState:
    """A state with the tasks of ``pre`` placed where they fit (best-fit GPUs), and the gang (last task) pending."""
    cpu, num_gpu, milli, workers = gang
    tasks = TaskSet([1000] * len(pre) + [cpu], [0] * (len(pre) + 1), [s[0] for _, s in pre] + [num_gpu],
                    [s[1] for _, s in pre] + [milli], workers=[1] * len(pre) + [workers])
    state = ClusterState(cluster, tasks)
    fit = make_policy("best-fit", seed=0)
    for i, (node, _) in enumerate(pre):
        if state.fits(tasks[i], node):
            one = state.copy()
            one.cpu_left[:] = -1
            one.cpu_left[node] = state.cpu_left[node]                   # the policy may only pick ``node``
            state.place(i, *fit(one, tasks[i]))
    return state


@settings(max_examples=300, deadline=None)
@given(_instances(), st.sampled_from(["fgd", "best-fit", "random", "gpu-packing", "gpu-clustering", "dot-product"]))
def test_every_policy_places_a_gang_part_by_part_iff_it_fits(instance, policy):
    """parts_fit (the count) agrees with the parts placed one by one by any policy, the state is left as it
    was, and the chosen parts are accepted by place_parts (the one rule)."""
    cluster, gang, pre = instance
    state = _prefilled(cluster, gang, pre)
    g = len(pre)
    task = state.tasks[g]
    pol = make_policy(policy, seed=1, workload=Workload.from_tasks(state.tasks))
    before = (state.cpu_left.copy(), state.mem_left.copy(), state.gpu_left.copy())
    # an independent count: place parts greedily, lowest feasible node first, through the one rule
    probe, placed = state.copy(), 0
    for _ in range(task.workers):
        nodes = np.flatnonzero(probe.feasible_nodes(task.part))
        if len(nodes) == 0:
            break
        choice = make_policy("best-fit", ranks=np.arange(cluster.n_nodes))(probe, task.part)
        probe.hold(task.part, *choice)
        placed += 1
    assert state.parts_fit(task) == (placed == task.workers)
    parts = choose_parts(pol, state, task)
    assert (state.cpu_left == before[0]).all() and (state.gpu_left == before[2]).all()
    assert (parts is not None) == state.parts_fit(task)
    if parts is not None:
        state.place_parts(g, parts)
        assert len(state.parts(g)) == task.workers
        assert (state.gpu_left >= 0).all() and (state.cpu_left >= 0).all()
        state.remove(g)
        assert (state.cpu_left == before[0]).all() and (state.gpu_left == before[2]).all()


def test_online_replay_places_gangs_all_or_nothing():
    # tasks arrive and never leave: a 1-GPU task, a gang of 2 x 8 GPUs (one node is no longer empty: it fails,
    # nothing of it is placed), a gang of 2 x 4 GPUs: best-fit puts the first part beside the 1-GPU task (7 free
    # GPUs, the tightest fit), where the second no longer fits (3 free): it goes to the other node.
    from fgdopt.simulate import run_online
    tasks = TaskSet([1000] * 3, [0] * 3, [1, 8, 4], [1000] * 3, workers=[1, 2, 2])
    out = run_online(TWO_BY_8, tasks, "best-fit", seed=0)
    assert out.placement.node[1] == UNPLACED and out.allocated_milli == 1000 + 8000
    (first, _), (second, _) = out.state.parts(2)
    assert first == out.placement.node[0] and second == 1 - first
    validate(TWO_BY_8, tasks, out.placement)


def test_a_policy_that_leaves_a_part_unallocated_leaves_the_gang_unallocated():
    """One node of 2 GPUs: a 600-milli task, then a gang of 2 x 300 milli. per-gpu-dimension pins every sharing part
    to GPU 0: the first part fits there (900), the second does not (GPU 1 is free, but its fixed vector never uses
    it), so the view leaves the gang unallocated, as it leaves a task. The gang fits (300 on each GPU), and the
    part-by-part rule stopped the run with a RuntimeError ("a policy must place a task wherever it fits") although
    the policy protocol lets any policy answer None; best-fit places both parts."""
    from fgdopt.simulate import run_online
    cluster = Cluster([8000], [8192], [2], ["T4"])
    tasks = TaskSet([1000, 1000], [0, 0], [1, 1], [600, 300], workers=[1, 2])
    flawed = run_online(cluster, tasks, "per-gpu-dimension")
    assert flawed.placement.node.tolist() == [0, UNPLACED] and flawed.allocated_milli == 600
    assert flawed.state.gpu_left[0].tolist() == [400, 1000]
    best = run_online(cluster, tasks, "best-fit")
    assert best.state.parts(1) == ((0, (0,)), (0, (1,))) and best.allocated_milli == 1200


# -- the engine ------------------------------------------------------------------------------------------------

def _jobs(rows, workers=None, priority=None):
    """rows: (num_gpu, gpu_milli, submit_s, duration_s), each part 1000 milli-cores."""
    num, milli, submit, duration = zip(*rows, strict=True)
    tasks = TaskSet([1000] * len(rows), [0] * len(rows), num, milli, workers=workers)
    return JobSet(tasks, submit, duration, priority=priority)


def test_a_two_by_eight_gang_waits_for_two_free_nodes_and_frees_both_at_once():
    # A (1 GPU, 0-100 s) holds one node; gang G (2 x 8 GPUs, submitted at 1 s, 50 s) needs both nodes empty:
    # it starts at 100 s when A leaves, on nodes 0 and 1, and both are free again at 150 s.
    jobs = _jobs([(1, 1000, 0.0, 100.0), (8, 1000, 1.0, 50.0)], workers=[1, 2])
    r = simulate(TWO_BY_8, jobs, "best-fit", "backfill")
    assert r.start_s.tolist() == [0.0, 100.0] and r.finish_s.tolist() == [100.0, 150.0]
    series = r.series.set_index("time_s")
    assert series.loc[100.0, "alloc_milli"] == 16000 and series.loc[150.0, "alloc_milli"] == 0
    held = simulate(TWO_BY_8, jobs, "best-fit", "backfill", until_s=120.0)
    assert held.status.tolist() == [FINISHED, RUNNING]
    assert sorted(n for n, _ in held.state.parts(1)) == [0, 1]
    assert all(gpus == tuple(range(8)) for _, gpus in held.state.parts(1))


def test_a_gang_larger_than_the_cluster_is_rejected_at_arrival():
    # 3 parts of 8 GPUs: 2 nodes hold 2 -> rejected; 4 parts of 4 GPUs fit (2 per node); 3 parts of 8 GPUs
    # and 17 GPUs' worth of 1-GPU parts (17 > 16 GPUs) -> rejected.
    jobs = _jobs([(8, 1000, 0.0, 10.0), (4, 1000, 0.0, 10.0), (1, 1000, 0.0, 10.0)], workers=[3, 4, 17])
    r = simulate(TWO_BY_8, jobs, "fgd", "backfill")
    assert r.status.tolist() == [REJECTED, FINISHED, REJECTED]
    assert r.start_s[1] == 0.0 and len({n for n, _ in simulate(TWO_BY_8, jobs, "fgd", "backfill",
                                                              until_s=5.0).state.parts(1)}) == 2


def _starving():
    """A holds a node 0-100 s; gang G (2 x 8, 50 s) arrives at 1 s; small jobs S1 (50 s) and S2 (120 s), 100 s each,
    1 GPU. Best-fit puts each small job beside the other 1-GPU job (the tighter node), so one node is never empty:
    under plain backfill G waits for S2 to end at 220 s."""
    return _jobs([(1, 1000, 0.0, 100.0), (8, 1000, 1.0, 50.0), (1, 1000, 50.0, 100.0), (1, 1000, 120.0, 100.0)],
                 workers=[1, 2, 1, 1])


@pytest.mark.parametrize(("reserve", "starts"), [
    (float("inf"), [0.0, 220.0, 50.0, 120.0]),   # plain backfill: S1 and S2 pass G (which could starve)
    (0.0, [0.0, 100.0, 150.0, 150.0]),           # reserved at once: nothing passes G, which starts when A leaves
    (60.0, [0.0, 150.0, 50.0, 200.0]),           # S1 passes (G waited 49 s < 60 at 50 s), S2 does not
])
def test_backfill_reservation_keeps_a_gang_from_starving(reserve, starts):
    r = simulate(TWO_BY_8, _starving(), "best-fit", "backfill", gang_reserve_s=reserve)
    assert r.start_s.tolist() == starts
    # the stated bound: once reserved (submit + reserve), G waits at most the longest run then in progress
    if reserve < float("inf"):
        assert r.start_s[1] <= 1.0 + reserve + 100.0


def test_jobs_behind_a_reserved_gang_start_in_the_pass_that_starts_it():
    # 3 x 8-GPU nodes: A1 and A2 (8 GPUs each, 0-100 s) fill two; gang G (2 x 8, 50 s) arrives at 1 s and is
    # reserved at once; S (1 GPU, 10 s, at 2 s) is behind it and waits although the third node is free. At 100 s G
    # starts on two nodes, and the same pass starts S on the third (not at G's finish, 150 s).
    three = Cluster([64000] * 3, [262144] * 3, [8] * 3, ["A100"] * 3)
    jobs = _jobs([(8, 1000, 0.0, 100.0), (8, 1000, 0.0, 100.0), (8, 1000, 1.0, 50.0), (1, 1000, 2.0, 10.0)],
                 workers=[1, 1, 2, 1])
    r = simulate(three, jobs, "best-fit", "backfill", gang_reserve_s=0.0)
    assert r.start_s.tolist() == [0.0, 0.0, 100.0, 100.0]
    assert simulate(three, jobs, "best-fit", "backfill").start_s.tolist() == [0.0, 0.0, 100.0, 2.0]


def test_a_gang_behind_a_fifo_head_is_judged_whole():
    # A and B (5 GPUs each, 0-100 s) leave 3 free GPUs on each node. Under FIFO, H (8 GPUs, at 1 s) blocks the
    # queue; G (3 parts of 2 GPUs, at 2 s) is never tried: one part fits each node (3 // 2 = 1), but 2 parts < 3,
    # so G fits no way and is blocked by fragmentation: of the 6000 free milli-GPU, G's 6000 could be held, H's
    # 8000 not -> blocked_jobs 1, blocked_milli 6000 (a one-part check would call G fitting: 0).
    jobs = _jobs([(5, 1000, 0.0, 100.0), (5, 1000, 0.0, 100.0), (8, 1000, 1.0, 10.0), (2, 1000, 2.0, 10.0)],
                 workers=[1, 1, 1, 3])
    r = simulate(TWO_BY_8, jobs, "best-fit", "fifo")
    row = r.series.set_index("time_s").loc[2.0]
    assert (row["blocked_jobs"], row["blocked_milli"]) == (1, 6000)
    assert r.start_s.tolist() == [0.0, 0.0, 100.0, 100.0]        # at 100 s: H on one empty node, G (3 x 2) on the other


def test_preempting_one_part_stops_the_whole_gang():
    # G (2 x 8 GPUs, priority 0) runs from 0 s on both nodes. H (1 GPU, priority 1) arrives at 10 s: the priority
    # mechanism evicts G (seen at its first part's node); both parts stop, 10 s of progress lost for each of the
    # 16 GPUs (160 GPU-s). H runs 10-20 s; G restarts at 20 s and pays Helios' 60 s restart for 16 GPUs:
    # 20 + 60 + 100 = 180 s.
    jobs = _jobs([(8, 1000, 0.0, 100.0), (1, 1000, 10.0, 10.0)], workers=[2, 1], priority=[0, 1])
    r = simulate(TWO_BY_8, jobs, "best-fit", "backfill", mechanism="priority")
    assert r.preemptions.tolist() == [1, 0] and r.lost_s.tolist() == [10.0, 0.0]
    assert r.start_s.tolist() == [0.0, 10.0] and r.finish_s.tolist() == [180.0, 20.0]
    assert r.overhead_s[0] == 60.0
    from fgdopt.timeline.metrics import run_stats
    assert run_stats(r)["lost_gpu_s"] == 160.0
    mid = simulate(TWO_BY_8, jobs, "best-fit", "backfill", mechanism="priority", until_s=15.0)
    assert mid.state.parts(0) == () and int(mid.state.gpu_left.sum()) == 15000   # only H holds a GPU


def test_cross_node_slowdown():
    # G (2 x 8 GPUs) must span both nodes: 100 s x 1.5 = 150 s; H (2 x 4 GPUs) fits one node under best-fit
    # (the second part goes beside the first): no slowdown.
    jobs = _jobs([(8, 1000, 0.0, 100.0), (4, 1000, 200.0, 100.0)], workers=[2, 2])
    r = simulate(TWO_BY_8, jobs, "best-fit", "backfill", gang_slowdown=1.5)
    assert r.finish_s.tolist() == [150.0, 300.0]
    assert simulate(TWO_BY_8, jobs, "best-fit", "backfill").finish_s.tolist() == [100.0, 300.0]
    with pytest.raises(ValueError, match="gang_slowdown must be a finite number >= 1"):
        simulate(TWO_BY_8, jobs, "best-fit", "backfill", gang_slowdown=0.5)


# 20 examples (was 40): each is three runs of 40 jobs, about 30% of them gangs
@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["fgd", "best-fit", "random"]),
       st.sampled_from(["backfill", "fifo", "sjf"]), st.sampled_from([float("inf"), 0.0, 50.0]),
       st.sampled_from(["none", "priority", "transparent", "tiresias", "affinode"]))
def test_conservation_with_gangs(seed, policy, queue, reserve, mechanism):
    """Random workloads with gangs: every run passes TimelineResult.check (the final state replayed by the one
    rule, every finished job did its work), each gang holds all its parts while running and none otherwise, every
    finished job ran its duration, and no resource went negative at any recorded instant."""
    rng = np.random.default_rng(seed)
    n = 40
    cluster = Cluster([32000] * 4, [65536] * 4, [8, 8, 4, 16], ["A"] * 4)
    shape = rng.integers(0, 4, n)
    num = np.array([1, 1, 2, 8])[shape]
    milli = np.array([500, 1000, 1000, 1000])[shape]
    workers = np.where(rng.random(n) < 0.3, rng.integers(2, 7, n), 1)
    tasks = TaskSet(rng.integers(1, 8, n) * 1000, rng.integers(0, 4, n) * 1024, num, milli, workers=workers)
    jobs = JobSet(tasks, np.sort(rng.uniform(0, 200, n)), rng.uniform(1, 100, n), priority=rng.integers(0, 2, n))
    for until in (60.0, 120.0, float("inf")):
        r = simulate(cluster, jobs, policy, queue, seed=seed, gang_reserve_s=reserve, mechanism=mechanism,
                     until_s=until)                                   # check() runs inside
        state = r.state
        assert (state.cpu_left >= 0).all() and (state.mem_left >= 0).all() and (state.gpu_left >= 0).all()
        for j in range(n):
            parts = state.parts(j)
            assert len(parts) == (tasks.workers[j] if r.status[j] == RUNNING and tasks.workers[j] > 1 else
                                  (1 if r.status[j] == RUNNING else 0))
        assert (r.series["alloc_milli"] >= 0).all()
        assert r.series["alloc_milli"].max() <= cluster.gpu_capacity_milli
        done = r.status == FINISHED
        assert np.allclose(r.busy_s[done], jobs.duration_s[done], atol=1e-6)          # speed 1: run = work
        assert np.allclose(r.run_s[done], r.busy_s[done] + r.lost_s[done] + r.overhead_s[done], atol=1e-6)
        no_evict = done & (r.preemptions == 0) & (r.suspensions == 0)
        assert np.allclose(r.finish_s[no_evict] - r.start_s[no_evict], jobs.duration_s[no_evict], atol=1e-6)
        if until == float("inf"):
            too_big = r.status == REJECTED
            empty = ClusterState(cluster, tasks)
            assert all(not empty.parts_fit(tasks[j]) for j in np.flatnonzero(too_big))
            assert not (r.status == RUNNING).any()
