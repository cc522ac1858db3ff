"""Elastic jobs placed on the engine (fgdopt.elastic.rounds): the GPUs the ``ClusterState`` holds for each job are
its planner's allocation, node by node, at every instant; re-allocations are moves of the job's gang; work is kept.

The toy application of ``test_elastic`` makes 1 progress unit per second wherever it runs; its jobs do 1,200.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgdopt.elastic.applications import Application
from fgdopt.elastic.jobs import ElasticJob
from fgdopt.elastic.rounds import ElasticRounds, elastic_loop, pollux_cluster, simulate_elastic
from fgdopt.model import TaskSet
from fgdopt.state import ClusterState, InfeasiblePlacement, validate
from fgdopt.timeline.engine import Engine
from tests.pollux_oracle import run_intervals
from tests.test_elastic import Fixed, write_toy


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Application:
    return Application.load(write_toy(tmp_path_factory.mktemp("traces")), max_epochs=2, max_local_bsz=64)


def _job(toy, name: str, submit_s: float = 0.0) -> ElasticJob:
    return ElasticJob(name, toy, submit_s, replicas=1, batch_size=64)


@pytest.fixture
def held(monkeypatch):
    """What the state holds after every instant of the engine (its plans carried out): a list of (time, {job: its
    parts})."""
    seen: list = []
    step = Engine.step

    def spy(self, until=math.inf):
        went = step(self, until)
        if went:
            names = self.jobs.tasks.names
            seen.append((self.now, {names[i]: self.state.parts(i) for i in range(len(names)) if self.state.parts(i)}))
        return went

    monkeypatch.setattr(Engine, "step", spy)
    return seen


def test_a_reallocation_over_two_nodes_is_placed_there_and_loses_its_restart_delay(toy, held):
    """One job of 1,200 units on 2 nodes of 4 GPUs. Given GPUs 0 and 1 of node 0 at 60 s, it restarts for 30 s and
    progresses from 90 s: alone it completes at 1,290 s. Re-allocated at 300 s to 2 GPUs on each node ([0, 0, 1,
    1]), it holds from 300 s exactly GPUs 0-1 of node 0 and 0-1 of node 1 (its old GPUs released, then the new gang
    placed), pays the 30 s delay again and completes at 1,320 s: exactly 30 s later, the same 1,200 units done."""
    stay, _ = simulate_elastic([_job(toy, "a")], Fixed([0, 0]), nodes=(4, 4))
    held.clear()
    moved, _ = simulate_elastic([_job(toy, "a")], Fixed([0, 0], [0, 0, 1, 1], switch_s=300), nodes=(4, 4))
    assert stay.finish_s.tolist() == [1290.0] and moved.finish_s.tolist() == [1320.0]
    assert moved.work_s.tolist() == [1200.0] and moved.migrations.tolist() == [1]
    assert moved.run_s.tolist() == [1320.0 - 60.0]                       # held (placed) from 60 s to its finish
    during = {t: parts.get("a") for t, parts in held}                    # the moved run's checks
    assert during[60.0] == ((0, (0, 1)),)                                # after the plan at 60 s
    assert during[240.0] == ((0, (0, 1)),)
    assert during[300.0] == ((0, (0, 1)), (1, (0, 1)))                   # after the plan at 300 s
    assert during[1260.0] == ((0, (0, 1)), (1, (0, 1)))
    assert during[1320.0] is None and moved.state.parts(0) == ()        # released at its finish


def test_two_jobs_swap_full_nodes_within_one_interval(toy, held):
    """Two jobs fill 2 nodes of 2 GPUs (a on node 0, b on node 1) and swap them at 300 s: feasible only because the
    plan releases both before placing either. Each then holds the other's node and completes at 1,320 s."""
    class Swap:
        name = "swap"

        def __call__(self, now, jobs, current, nodes):
            first = now < 300
            return {j.name: [0, 0] if (j.name == "a") == first else [1, 1] for j in jobs}

    result, peak = simulate_elastic([_job(toy, "a"), _job(toy, "b")], Swap(), nodes=(2, 2))
    assert result.finish_s.tolist() == [1320.0, 1320.0] and result.migrations.tolist() == [1, 1]
    at = dict(held)
    assert at[240.0] == {"a": ((0, (0, 1)),), "b": ((1, (0, 1)),)}
    assert at[300.0] == {"a": ((1, (0, 1)),), "b": ((0, (0, 1)),)}
    assert peak.tolist() == [2, 2]


def test_a_job_given_no_gpus_waits_unplaced(toy, held):
    """A job allocated nothing from 300 s to 600 s is preempted (not placed, holding nothing, at no speed) and
    admitted again at 600 s with its 30 s delay: it progresses 60..90 delay, 90..300 (210 units), 630.. the other
    990: complete at 1,620 s."""
    class Pause:
        name = "pause"

        def __call__(self, now, jobs, current, nodes):
            return {j.name: [] if 300 <= now < 600 else [1] for j in jobs}

    result, _ = simulate_elastic([_job(toy, "a")], Pause(), nodes=(2, 2))
    assert result.finish_s.tolist() == [1620.0] and result.work_s.tolist() == [1200.0]
    assert result.preemptions.tolist() == [1]
    at = dict(held)
    assert at[240.0] == {"a": ((1, (0,)),)} and at[300.0] == {} and at[540.0] == {} and at[600.0] == {"a": ((1, (0,)),)}


class RandomPlanner:
    """Every interval, each active job keeps its allocation (probability 1/3) or gets a new one: 0 to 4 GPUs on at
    most 2 nodes with GPUs not yet given, drawn from a generator seeded by (seed, time, jobs), so that the interval
    loop and the engine see the same plans. ``plans`` records them."""

    name = "random"

    def __init__(self, seed: int):
        self.seed, self.plans = seed, []

    def __call__(self, now, jobs, current, nodes):
        rng = random.Random(f"{self.seed}/{now}/{','.join(j.name for j in jobs)}")
        free = list(nodes)
        keep = {j.name for j in jobs if j.name in current and rng.random() < 1 / 3}
        for k in keep:
            for n in current[k]:
                free[n] -= 1
        out = {k: list(current[k]) for k in keep}
        for job in jobs:
            if job.name in keep:
                continue
            chosen = sorted(rng.sample([n for n in range(len(nodes)) if free[n]], min(2, sum(f > 0 for f in free))))
            alloc = [n for n in chosen for _ in range(rng.randint(0, free[n]))][:rng.randint(0, 4)]
            for n in alloc:
                free[n] -= 1
            if alloc:
                out[job.name] = alloc
        self.plans.append((now, {k: list(v) for k, v in out.items()}))
        return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 900), min_size=1, max_size=5), st.integers(0, 2**16),
       st.sampled_from([(2, 2), (2, 2, 2), (1, 3, 4)]))
def test_random_changing_allocations_are_held_exactly_and_conserve_work(toy, submits, seed, nodes):
    """Random jobs under :class:`RandomPlanner` (allocations that change size and nodes, drop to nothing and come
    back, swap GPUs) on small clusters. On the engine: the state holds each job's allocation node by node before and
    after every plan (:meth:`ElasticRounds.verify` before every plan, the ``held`` spy after every instant); at every
    instant the allocated milli-GPU is exactly that of
    the allocations in force of the jobs not yet finished, within 0 and the capacity (no resource negative); every
    job does its 1,200 units (``TimelineResult.check``) and finishes when the interval loop says it completes."""
    names = [f"j{i}" for i in range(len(submits))]
    loop_planner, engine_planner = RandomPlanner(seed), RandomPlanner(seed)
    def fresh():
        return [_job(toy, k, s) for k, s in zip(names, submits, strict=True)]

    loop = run_intervals(fresh(), loop_planner, nodes=nodes)
    result, peak = simulate_elastic(fresh(), engine_planner, nodes=nodes)
    assert engine_planner.plans == loop_planner.plans                            # the same planner calls
    assert result.finish_s == pytest.approx(loop.job_frame().finish_s.to_numpy(), abs=1e-5)
    assert result.work_s == pytest.approx(np.full(len(names), 1200.0), rel=1e-12)
    assert (peak <= np.asarray(nodes)).all()
    times = np.array([t for t, _ in engine_planner.plans])
    finish = dict(zip(names, result.finish_s, strict=True))
    series = result.series
    assert ((series.alloc_milli >= 0) & (series.alloc_milli <= 1000 * sum(nodes))).all()
    for t, alloc in zip(series.time_s, series.alloc_milli, strict=True):
        k = np.searchsorted(times, t, side="right") - 1
        force = engine_planner.plans[k][1] if k >= 0 else {}
        assert alloc == 1000 * sum(len(a) for name, a in force.items() if finish[name] > t), t


def test_the_check_catches_gpus_other_than_the_allocation(toy):
    """:meth:`ElasticRounds.verify` fails when a job holds other nodes or counts than its allocation, and when a
    job allocated GPUs holds none before it completes; it passes on the state of the allocation."""
    jobs = [_job(toy, "a"), _job(toy, "b")]
    mech = ElasticRounds(jobs, Fixed([0]), nodes=(2, 2))
    mech._held = {"a": [0, 1, 1], "b": []}
    state = ClusterState(pollux_cluster((2, 2)), TaskSet([0, 0], [0, 0], [1, 1], [1000, 1000]), np.ones(2, bool))
    with pytest.raises(AssertionError, match="allocated 3 GPUs at 60.0 s but holds none"):
        mech.verify(state, 60.0)
    state.place_parts(0, ((0, (1,)), (1, (0, 1))))
    mech.verify(state, 60.0)
    state.remove(0)
    state.place_parts(0, ((0, (0, 1)), (1, (0,))))                      # the count per node swapped
    with pytest.raises(AssertionError, match=r"holds \{0: 2, 1: 1\}"):
        mech.verify(state, 60.0)
    state.remove(0)
    state.place_parts(0, ((0, (1,)), (1, (0, 1))))
    state.place(1, 0, (0,))                                            # b holds a GPU it was not given
    with pytest.raises(AssertionError, match="elastic job b holds"):
        mech.verify(state, 60.0)


def test_elastic_tasks_in_the_one_rule():
    """An elastic task (one whole GPU per replica) is placed on any number of GPUs >= 1, on one node or as a gang,
    its CPU and memory once; a non-elastic one only on its count; a placement holding elastic gangs validates with
    the mask and not without it; only whole-GPU tasks may be elastic."""
    cluster = pollux_cluster((4, 4))
    tasks = TaskSet([1000, 0], [10, 0], [1, 2], [1000, 1000])
    state = ClusterState(cluster, tasks, np.array([True, False]))
    state.place(0, 0, (0, 1, 2))
    assert state.held_milli(0) == 3000 and int(state.cpu_left[0]) == 48_000 - 1000
    state.remove(0)
    state.place_parts(0, ((0, (0, 1, 2, 3)), (1, (0, 1, 2))))                  # 7 GPUs over two nodes
    assert state.held_milli(0) == 7000 and int(state.gpu_left.sum()) == 1000
    with pytest.raises(InfeasiblePlacement, match="GPU"):                      # one GPU left, two asked
        state.place(1, 1, (3, 3))
    placement = state.placement()
    assert validate(cluster, tasks, placement, state.elastic).held_milli(0) == 7000
    with pytest.raises(InfeasiblePlacement, match="hold 7 GPUs, 1 asked"):
        validate(cluster, tasks, placement)
    state.remove(0)
    with pytest.raises(InfeasiblePlacement, match="an elastic task holds a GPU or more"):
        state.place(0, 0, ())
    with pytest.raises(InfeasiblePlacement, match="needs 2 distinct GPU"):
        state.place(1, 0, (0, 1, 2))
    assert state.held_milli(0) == 0 and state.held_milli(1) == 0
    with pytest.raises(ValueError, match="an elastic task must be whole-GPU"):
        ClusterState(cluster, TaskSet([0], [0], [1], [500]), np.array([True]))


def test_snapshots_of_elastic_jobs_stop_with_one_line(toy):
    """Snapshots hold job shapes, which an elastic job's GPUs are not: asking for one stops before the run."""
    from fgdopt.timeline import simulate

    loop, work = elastic_loop([_job(toy, "a")], Fixed([0]), nodes=(2, 2))
    with pytest.raises(ValueError, match="sets jobs' GPU counts"):
        simulate(pollux_cluster((2, 2)), work, "best-fit", "fifo", mechanism=loop, snapshots=np.array([60.0, 120.0]))
