"""The engine's one round loop (:mod:`fgdopt.timeline.rounds`): its clock, its stop rule and its diff, with every
round policy ported onto it (Gavel's, :class:`fgdopt.hetero.rounds.Gavel`; Synergy's,
:class:`fgdopt.synergy.rounds.Synergy`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.hetero.jobs import gavel_cluster
from fgdopt.hetero.rounds import ROUND_S, Gavel
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState, validate
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.jobtable import FINISHED
from fgdopt.timeline.rounds import Decision, Pace, RoundLoop
from formulations.hetero import POLICIES, round_allocator

GPUS = {"v100": 3, "k80": 2}


def tiny(n: int = 8, seed: int = 1) -> tuple[JobSet, dict]:
    """``n`` jobs of 1 or 2 GPUs arriving over 1,500 s, 300 to 3,000 s of work at speed 1 on ``v100``, 0.3 to 1 on
    ``k80``."""
    rng = np.random.default_rng(seed)
    tasks = TaskSet([0] * n, [0] * n, rng.choice([1, 1, 2], n), [1000] * n)
    jobs = JobSet(tasks, np.sort(rng.uniform(0, 1500, n).round()), rng.uniform(300, 3000, n).round())
    return jobs, {"v100": np.ones(n), "k80": rng.uniform(0.3, 1.0, n)}


class Checked:
    """A round policy that checks, at the start of every round, the one rule (the running jobs' placement replayed
    from scratch gives the same free capacities) and the conservation of work and GPUs (each job's progress never
    falls and never passes its work; the GPUs held are those of the running jobs) before it asks ``policy``."""

    def __init__(self, policy, duration_s: np.ndarray):
        self.policy, self.duration_s = policy, duration_s
        self.name, self.gpu_types = policy.name, policy.gpu_types
        self.work = np.zeros(len(duration_s))
        self.rounds = 0

    def decide(self, view):
        state = view.engine.state
        again = validate(state.cluster, state.tasks, state.placement())
        assert (again.gpu_left == state.gpu_left).all() and (again.cpu_left == state.cpu_left).all()
        running = np.flatnonzero(state.node_of >= 0)
        assert set(running.tolist()) == set(view.running.tolist())
        held = 1000 * state.cluster.gpu.sum() - state.gpu_left.sum()
        assert held == state.tasks.gpu_demand[running].sum()
        work = view.engine.work_of(np.arange(len(self.work)))
        assert (work >= self.work).all() and (work <= self.duration_s * (1 + 1e-12)).all()
        self.work = work
        self.rounds += 1
        return self.policy.decide(view)

    def pace(self, view, placed):
        return self.policy.pace(view, placed)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("steps", [False, True])
def test_every_round_policy_keeps_the_one_rule_and_conserves_work_at_every_round(policy, steps):
    jobs, speed = tiny()
    gavel = Gavel(round_allocator(policy, speed, jobs, GPUS), speed, jobs.duration_s, tuple(GPUS),
                  shuffle_seed=None if policy.endswith("-aware") else 5,
                  step_rate=np.full(len(jobs.duration_s), 0.7) if steps else None)
    checked = Checked(gavel, jobs.duration_s)
    r = simulate(gavel_cluster(GPUS, 2), jobs, "best-fit", "fifo", mechanism=RoundLoop(checked, round_s=ROUND_S),
                 speed=speed, restart_s=lambda g: 0.0, frag=False)
    assert (r.status == FINISHED).all() and checked.rounds > 5
    np.testing.assert_allclose(r.work_s, jobs.duration_s)
    assert (r.series.alloc_milli <= 1000 * sum(GPUS.values())).all()


def test_the_clock_and_the_stop_by_hand():
    """Two 500 s jobs on one GPU, X = 1/2 each: rounds at 0, 360, 720 (job 0's last 140 s) and 860 s (job 1's
    last 140 s, alone). Stopped after job 0 with ``stop_by_s`` exactly 720 s: the round at 720 s is not after it and
    runs; the next, at 860 s, stops the run (job 1 preempted there, never finished). Without ``stop_by_s`` the
    round at 860 s stops it too (job 0 has left); ``stop_by_s`` 719 stops at 720 s, both unfinished."""
    jobs = JobSet(TaskSet([0] * 2, [0] * 2, [1] * 2, [1000] * 2), [0.0, 0.0], [500.0, 500.0])
    speed = {"a": np.ones(2)}

    def run(**stop):
        loop = RoundLoop(Gavel(lambda ids, view: np.full((len(ids), 1), 0.5), speed, jobs.duration_s, ("a",)),
                         round_s=ROUND_S, **stop)
        return simulate(gavel_cluster({"a": 1}), jobs, "best-fit", "fifo", mechanism=loop, speed=speed,
                        restart_s=lambda g: 0.0), loop

    r, loop = run()
    assert r.finish_s.tolist() == [860.0, 1000.0] and loop.rounds == 4 and math.isnan(loop.stopped_s)
    assert r.series.time_s.tolist() == [0.0, 360.0, 720.0, 860.0, 1000.0]
    for stop_by, stopped, finish in ((720.0, 860.0, [860.0, np.nan]), (math.inf, 860.0, [860.0, np.nan]),
                                     (719.0, 720.0, [np.nan, np.nan])):
        r, loop = run(stop_after=[0], stop_by_s=stop_by)
        assert loop.stopped_s == stopped
        np.testing.assert_array_equal(r.finish_s, finish)
        assert r.series.alloc_milli.to_numpy()[-1] == 0


def test_the_diff_keeps_places_largest_first_on_the_fullest_node_and_preempts():
    """Four 1-GPU nodes of type a (0-3) and two 2-GPU nodes of type b (4, 5); jobs 0 (1 GPU) and 1 (2 GPUs) run on
    nodes 0 and 4. The decision: job 0 stays on a (it keeps its GPU); job 1 goes to a, where no node holds its 2
    GPUs (no ``span``): it is preempted and left out; jobs 2 (2 GPUs) and 3 (1 GPU) go to b. Largest first: job 2
    takes node 4 (2 free once job 1 leaves, as node 5: the lower index), job 3 node 5 (the only free GPUs of b)."""
    cluster = Cluster([64000] * 6, [262144] * 6, [1, 1, 1, 1, 2, 2], ["a"] * 4 + ["b"] * 2)
    tasks = TaskSet([0] * 4, [0] * 4, [1, 2, 2, 1], [1000] * 4)
    state = ClusterState(cluster, tasks)
    state.place(0, 0, (0,))
    state.place(1, 4, (0, 1))
    loop = RoundLoop(Gavel(lambda ids, view: None, {"a": np.ones(4), "b": np.ones(4)}, np.ones(4), ("a", "b")),
                     round_s=ROUND_S)
    node_type, of_type, type_gpus = loop._types(cluster)
    assert type_gpus == (4, 4)
    plan, placed = loop._place(state, np.array([0, 1]), {0: 0, 1: 0, 2: 1, 3: 1}, node_type, of_type)
    assert plan.victims == (1,)
    assert [(m.task, m.node, m.gpus) for m in plan.admits] == [(2, 4, (0, 1)), (3, 5, (0,))]
    assert placed.runs == {0: 0, 2: 1, 3: 1}


@st.composite
def rounds(draw):
    """A cluster of two types, jobs running on it, and a decision for them and new ones."""
    per_node = draw(st.sampled_from([1, 2, 4]))
    nodes = draw(st.integers(2, 6))
    n = draw(st.integers(1, 14))
    need = draw(st.lists(st.sampled_from([1, 1, 2, 4]), min_size=n, max_size=n))
    wish = draw(st.lists(st.sampled_from([-1, 0, 1]), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**16))
    return per_node, nodes, need, wish, seed


@settings(max_examples=60, deadline=None)
@given(rounds(), st.booleans())
def test_a_bulk_reallocation_is_the_same_moves_one_by_one(case, span):
    """The loop's diff for a random decision, carried out as one bulk reallocation (every victim released at once,
    then every admitted job placed at once), leaves the state the same moves leave one by one; the kept jobs keep
    their GPUs, every placed job is on its type, and the one rule holds (the placement replayed from scratch)."""
    per_node, nodes, need, wish, seed = case
    rng = np.random.default_rng(seed)
    n = len(need)
    cluster = Cluster([64000] * 2 * nodes, [262144] * 2 * nodes, [per_node] * 2 * nodes,
                      ["a"] * nodes + ["b"] * nodes)
    tasks = TaskSet([0] * n, [0] * n, need, [1000] * n)
    bulk, single = ClusterState(cluster, tasks), ClusterState(cluster, tasks)
    for j in rng.permutation(n).tolist():             # some jobs running, each on one node
        fits = [k for k in range(2 * nodes) if (bulk.gpu_left[k, :per_node] == 1000).sum() >= need[j]]
        if fits and rng.random() < 0.6:
            k = int(rng.choice(fits))
            gpus = tuple(np.flatnonzero(bulk.gpu_left[k, :per_node] == 1000)[:need[j]].tolist())
            bulk.place(j, k, gpus)
            single.place(j, k, gpus)
    loop = RoundLoop(Gavel(lambda ids, view: None, {"a": np.ones(n), "b": np.ones(n)}, np.ones(n), ("a", "b")),
                     round_s=ROUND_S, span=span)
    node_type, of_type, type_gpus = loop._types(cluster)
    room = list(type_gpus)
    decision = {}
    for j in range(n):                               # a decision within each type's GPUs
        if wish[j] >= 0 and need[j] <= room[wish[j]]:
            decision[j] = wish[j]
            room[wish[j]] -= need[j]
    running = np.flatnonzero(bulk.node_of >= 0)
    before = {j: (int(bulk.node_of[j]), bulk.gpus_of[j]) for j in running.tolist()}
    plan, placed = loop._place(bulk, running, decision, node_type, of_type)
    bulk.remove_many(np.array(plan.victims, dtype=np.int64))
    plain = [m for m in plan.admits if not getattr(m, "parts", None)]
    bulk.place_many([m.task for m in plain], [m.node for m in plain], [m.gpus for m in plain])
    for m in plan.admits:
        if getattr(m, "parts", None):
            bulk.place_parts(m.task, m.parts)
    for v in plan.victims:
        single.remove(v)
    for m in plan.admits:
        if getattr(m, "parts", None):
            single.place_parts(m.task, m.parts)
        else:
            single.place(m.task, m.node, m.gpus)
    assert (bulk.gpu_left == single.gpu_left).all() and bulk.node_of.tolist() == single.node_of.tolist()
    assert list(bulk.gpus_of) == list(single.gpus_of)
    validate(cluster, tasks, bulk.placement())
    for j, g in placed.runs.items():
        assert decision[j] == g and all(node_type[node] == g for node, _ in bulk.parts(j))
        if j in before and j not in plan.victims:
            assert (int(bulk.node_of[j]), bulk.gpus_of[j]) == before[j]
    kept = set(placed.runs) - {m.task for m in plan.admits}
    assert set(plan.victims) == set(before) - kept and kept <= set(before)


def test_a_round_length_not_above_0_is_one_line():
    gavel = Gavel(lambda ids, view: None, {"a": np.ones(1)}, np.ones(1), ("a",))
    for bad in (0.0, -360.0, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"^round_s must be a finite number of seconds > 0, got"):
            RoundLoop(gavel, round_s=bad)


def test_a_decision_granting_more_gpus_than_exist_is_one_line():
    """Two 1-GPU jobs both given type a, which has one GPU."""

    class Greedy:
        name, gpu_types = "greedy", ("a",)

        def decide(self, view):
            return Decision({int(j): 0 for j in view.present})

        def pace(self, view, placed):
            return Pace(view.now + view.round_s)

    jobs = JobSet(TaskSet([0] * 2, [0] * 2, [1] * 2, [1000] * 2), [0.0, 0.0], [10.0, 10.0])
    with pytest.raises(ValueError, match=r"^round policy 'greedy' grants 2 GPUs of type 'a', which has 1$"):
        simulate(gavel_cluster({"a": 1}), jobs, "best-fit", "fifo", mechanism=RoundLoop(Greedy(), round_s=60.0))


@pytest.mark.parametrize("bad", [1, -1])
def test_a_decision_naming_an_unknown_gpu_type_is_one_line(bad):
    """Jobs 0 and 1 given type 0, job 2 type ``bad``, of a policy with one type: job 2 named (the first bad one)."""

    class Astray:
        name, gpu_types = "astray", ("a",)

        def decide(self, view):
            return Decision({0: 0, 1: 0, 2: bad})

        def pace(self, view, placed):
            return Pace(view.now + view.round_s)

    jobs = JobSet(TaskSet([0] * 3, [0] * 3, [1] * 3, [1000] * 3), [0.0] * 3, [10.0] * 3)
    with pytest.raises(ValueError, match=rf"^round policy 'astray': job 2 given GPU type {bad}, not one of the 1 "
                                         r"types$"):
        simulate(gavel_cluster({"a": 3}), jobs, "best-fit", "fifo", mechanism=RoundLoop(Astray(), round_s=60.0))


def test_an_unknown_round_policy_is_one_line():
    jobs, speed = tiny(2)
    with pytest.raises(ValueError, match=r"^unknown round policy 'lax'; choose one of las, las-aware"):
        round_allocator("lax", speed, jobs, GPUS)


class FirstOnNodeZero:
    """A round policy by node and GPUs: the first job present runs on node 0, GPU 0, at its speed."""

    name, gpu_types = "first-on-node-0", ("a",)

    def decide(self, view):
        return Decision(where={int(j): (0, (0,)) for j in view.present[:1]})

    def pace(self, view, placed):
        return Pace(view.now + view.round_s)


@pytest.mark.parametrize(("grid", "start", "finish"), [(True, [300.0, 900.0], [800.0, 1000.0]),
                                                        (False, [100.0, 700.0], [600.0, 800.0])])
def test_the_grid_and_a_decision_by_node_by_hand(grid, start, finish):
    """One GPU, rounds of 300 s; jobs 0 (500 s of work) and 1 (100 s) arrive at 100 s. On the grid the first round
    is at 300 s: job 0 runs 300-800 (kept on its GPU at 600 s, not preempted), job 1 from the round at 900 s to
    1,000 s. Off the grid rounds start at the arrival: job 0 100-600, job 1 at the round of 700 s."""
    jobs = JobSet(TaskSet([0] * 2, [0] * 2, [1] * 2, [1000] * 2), [100.0, 100.0], [500.0, 100.0])
    loop = RoundLoop(FirstOnNodeZero(), round_s=300.0, grid=grid)
    r = simulate(gavel_cluster({"a": 1}), jobs, "best-fit", "fifo", mechanism=loop, frag=False)
    assert r.start_s.tolist() == start and r.finish_s.tolist() == finish
    assert r.preemptions.tolist() == [0, 0] and loop.rounds == 3


@pytest.mark.parametrize("policy", [f"{base}+{mode}" for base in ("FIFO", "SRTF", "LAS", "FTF")
                                    for mode in ("fair", "greedy", "tune")])
def test_every_synergy_policy_keeps_the_one_rule_and_conserves_work_at_every_round(policy, monkeypatch):
    """Synergy's twelve policies on 6 of its jobs on 2 servers, every round checked as above (:class:`Checked`);
    every job finishes with its work done (and the ledger's own check passes, in ``run_synergy``)."""
    import fgdopt.synergy.rounds as synergy_rounds
    from fgdopt.synergy.jobs import synergy_jobs

    frame = synergy_jobs(6, 20.0).frame
    work = (frame.iterations * frame.iter_time_s).to_numpy()
    checked = []
    monkeypatch.setattr(synergy_rounds, "RoundLoop", lambda policy, **options: RoundLoop(
        checked.append(Checked(policy, work)) or checked[-1], **options))
    r, loop = synergy_rounds.run_synergy(frame, policy, servers=2)
    assert checked[0].rounds > 3 and np.isfinite(r.finish_s).all()
    np.testing.assert_allclose(r.work_s, work)
