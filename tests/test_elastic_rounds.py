"""Elastic jobs on the one round loop: what :class:`fgdopt.timeline.rounds.RoundLoop` does with a decision by GPU
count per node (``Decision.parts``) and with speeds set within a round (``Pace.later``), by hand; every planner of
:mod:`fgdopt.elastic.planners` through :class:`fgdopt.elastic.rounds.ElasticRounds` with its progress conserved at
every round; and the engine's runs equal to Pollux's own interval loop (``tests/pollux_oracle.py``) on its workloads.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import require_pollux

from fgdopt.elastic.applications import Application, load_applications
from fgdopt.elastic.jobs import ElasticJob, read_workload
from fgdopt.elastic.planners import PLANNERS, make_jobs, make_planner
from fgdopt.elastic.pollux import PolluxPlanner
from fgdopt.elastic.rounds import ElasticRounds, pollux_cluster, simulate_elastic
from fgdopt.model import TaskSet
from fgdopt.state import ClusterState
from fgdopt.timeline.engine import Engine
from fgdopt.timeline.jobs import JobSet
from fgdopt.timeline.rounds import Decision, Pace, RoundLoop, RoundView
from tests.pollux_oracle import run_intervals
from tests.test_elastic import Fixed, write_toy


class Script:
    """A round policy that plays ``rounds``: time -> (parts, rates, later); nothing at a time not listed."""

    name, gpu_types = "script", ("T4",)

    def __init__(self, rounds: dict):
        self.rounds, self.decided = rounds, []

    def decide(self, view):
        self.decided.append(view.now)
        return Decision(parts=self.rounds.get(view.now, ({},))[0])

    def pace(self, view, placed):
        _, rates, later = self.rounds.get(view.now, ({}, (), ()))
        return Pace(view.now + view.round_s, rates, later)


def test_a_decision_by_gpu_counts_keeps_moves_preempts_and_admits_and_speeds_change_within_a_round():
    """Two nodes of 2 GPUs; elastic jobs A (40 s of work), B (10), C (15), all at 0; rounds every 10 s from 10 s.

    * 10 s: A on 2 GPUs of node 0 at speed 0.5, then 1.125 from 12 s; B on 1 of node 1 at speed 0, then 2.5 from
      15 s (speeds set within the round): B's 10 s of work take 15..19, it finishes at 19; A has done 1 + 9 = 10 by
      20.
    * 20 s: A re-sized to 1 GPU on each node (a move: released, then the lowest free GPUs, node 0 GPU 0 and node 1
      GPU 0); C admitted on 1 GPU of node 1 after it (GPU 1). Both at speed 1: A has done 20 by 30, C 10.
    * 30 s: A given nothing (preempted, it waits holding nothing); C given the same count (kept on GPU 1 although
      GPU 0 is free then): it finishes its 5 left at 35.
    * 40 s: A admitted on both GPUs of node 1 at speed 2: its 20 left take 10 s, it finishes at 50.

    Without the first round at 10 s (no round at 0), the wake-ups at 12 and 15 s in time order, the move or the
    kept GPU, these change."""
    rounds = {10.0: ({0: ((0, 2),), 1: ((1, 1),)}, ((0, 0.5), (1, 0.0)), ((15.0, 1, 2.5), (12.0, 0, 1.125))),
              20.0: ({0: ((0, 1), (1, 1)), 2: ((1, 1),)}, ((0, 1.0), (2, 1.0)), ()),
              30.0: ({2: ((1, 1),)}, (), ()),
              40.0: ({0: ((1, 2),)}, ((0, 2.0),), ())}
    script = Script(rounds)
    loop = RoundLoop(script, round_s=10.0, grid=True, first_s=10.0, elastic=np.ones(3, dtype=bool))
    jobs = JobSet(TaskSet([0] * 3, [0] * 3, [1] * 3, [1000] * 3), [0.0] * 3, [40.0, 10.0, 15.0])
    engine = Engine(pollux_cluster((2, 2)), jobs, "best-fit", "fifo", mechanism=loop, frag=False,
                    restart_s=lambda g: 0.0)
    held = {}
    while engine.step(until=100.0):                     # a job stranded pending would keep rounds going
        held[engine.now] = {j: engine.state.parts(j) for j in range(3) if engine.state.parts(j)}
    assert engine.next_time() == float("inf")
    result = engine.result()
    result.check()
    assert sorted(held) == [0.0, 10.0, 12.0, 15.0, 19.0, 20.0, 30.0, 35.0, 40.0, 50.0]
    assert result.finish_s.tolist() == pytest.approx([50.0, 19.0, 35.0], abs=1e-9)
    assert held[10.0] == {0: ((0, (0, 1)),), 1: ((1, (0,)),)}
    assert held[20.0] == {0: ((0, (0,)), (1, (0,))), 2: ((1, (1,)),)}
    assert held[30.0] == {2: ((1, (1,)),)} and held[40.0] == {0: ((1, (0, 1)),)}
    assert result.migrations.tolist() == [1, 0, 0] and result.preemptions.tolist() == [1, 0, 0]
    assert script.decided == [10.0, 20.0, 30.0, 40.0, 50.0] and loop.rounds == 4   # 50 s: nothing left


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Application:
    return Application.load(write_toy(tmp_path_factory.mktemp("traces")), max_epochs=2, max_local_bsz=64)


def _planner(policy: str):
    """``policy``'s planner; Pollux's search on one generation of a population of 10 (its default 100 costs ten times
    more and only changes which valid plans the checks see)."""
    return PolluxPlanner(seed=1, generations=1, pop_size=10) if policy == "pollux" else make_planner(policy)


@pytest.mark.parametrize("policy", PLANNERS)
def test_every_planner_on_the_round_loop_conserves_progress_at_every_round(toy, policy, monkeypatch):
    """Four jobs of the toy application (1,200 units, 1 unit/s on their world size) at 0, 0, 100 and 700 s, of 1, 2,
    2 and 1 GPUs, on 2 nodes of 2 GPUs, under each planner. At every round, before it decides: the engine's
    progress of every job equals the job model's (``ElasticJob.progress``: the speeds set within the last interval
    did exactly its stretches' work), the GPUs the engine holds are the last plan's, node by node
    (:meth:`ElasticRounds.verify`), within the cluster's 4. At the end every job did its 1,200 units and finished
    when Pollux's interval loop says."""
    frame = pd.DataFrame({"name": ["a", "b", "c", "d"], "time": [0, 0, 100, 700], "application": "toy",
                          "num_replicas": [1, 2, 2, 1], "batch_size": 64})
    seen = []
    decide = ElasticRounds.decide

    def spy(self, view):
        work = view.engine.work_s
        progress = np.array([j.progress for j in self.jobs])
        held = sum(len(g) for i in range(len(self.jobs)) for _, g in view.engine.state.parts(i))
        seen.append((view.now, work.copy(), progress, held))
        decision = decide(self, view)                              # verify() first
        assert sum(n for parts in decision.parts.values() for _, n in parts) <= 4
        return decision

    monkeypatch.setattr(ElasticRounds, "decide", spy)
    result, peak = simulate_elastic(make_jobs(frame, {"toy": toy}, policy), _planner(policy), nodes=(2, 2))
    monkeypatch.undo()
    oracle = run_intervals(make_jobs(frame, {"toy": toy}, policy), _planner(policy), nodes=(2, 2))
    assert len(seen) >= 20 and seen[0][0] == 60.0
    for now, work, progress, held in seen:
        assert work == pytest.approx(progress, rel=1e-9, abs=1e-6), now
        assert 0 <= held <= 4
    assert result.work_s == pytest.approx(np.full(4, 1200.0), rel=1e-12) and (peak <= 2).all()
    assert result.finish_s == pytest.approx(oracle.job_frame().finish_s.to_numpy(), abs=1e-5)


@pytest.mark.parametrize("name", ["workload-1", pytest.param("workload-6", marks=pytest.mark.extended)])
def test_the_engine_runs_pollux_workloads_as_its_interval_loop(name):
    """The first 40 jobs of Pollux's workload at load 1.0 on its cluster under ``tiresias``, ``optimus`` and
    ``singularity``: every job finishes on the engine when Pollux's interval loop (the oracle) completes it, after
    as many restarts (workload-6 is a further point: ``extended``). (``pollux``'s search costs about a second per
    simulated hour even on a few jobs: it is held to the oracle on the toy application, above and in
    ``test_elastic``.)"""
    root = require_pollux()
    apps = load_applications(root)
    frame = read_workload(root / "workloads" / f"{name}.csv").iloc[:40]
    for policy in ("tiresias", "optimus", "singularity"):
        oracle = run_intervals(make_jobs(frame, apps, policy), make_planner(policy)).job_frame()
        jobs = make_jobs(frame, apps, policy)
        result, _ = simulate_elastic(jobs, make_planner(policy))
        assert result.finish_s == pytest.approx(oracle.finish_s.to_numpy(), abs=1e-5), policy
        assert [j.restarts or 0 for j in jobs] == oracle.restarts.tolist(), policy
        assert not np.isnan(result.finish_s).any()


def test_a_job_complete_but_still_running_keeps_its_gpus_to_its_finish(toy):
    """A job whose model completed (``ElasticJob.done``) while the engine still runs it at a round (its finish a
    float's width after the round's start) is asked of no planner, and keeps exactly the GPUs it holds (2 on node
    0): preempting it would leave it waiting for rounds that never place it again."""
    job, other = ElasticJob("a", toy, 0.0, replicas=1, batch_size=64), ElasticJob("b", toy, 0.0, replicas=1,
                                                                                  batch_size=64)
    job.completion_s = 119.0
    state = ClusterState(pollux_cluster((2, 2)), TaskSet([0, 0], [0, 0], [1, 1], [1000, 1000]), np.ones(2, bool))
    state.place(0, 0, (0, 1))
    policy = ElasticRounds([job, other], Fixed([1]), nodes=(2, 2))
    policy._held = {"a": [0, 0]}
    view = RoundView(SimpleNamespace(state=state), 120.0, 60.0, np.array([0]), np.array([0, 1]), True,
                     np.zeros(0, np.int64), (4,), 1)
    assert policy.decide(view).parts == {0: ((0, 2),), 1: ((1, 1),)}
