"""The plan types of :mod:`fgdopt.timeline.preemption` and the engine's one dispatch over them: each type checked
when built (one line naming the bad field), the engine refusing anything else, and each type carried out in a
hand-worked run whose figures tell the types apart (so a change to the dispatch shows)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fgdopt.defrag import Move
from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.preemption import (
    PLAN_TYPES,
    Checkpointing,
    EvictPlan,
    GangMove,
    MechanismBase,
    MigratePlan,
    Outage,
    OutagePlan,
    Plan,
    PreemptPlan,
    RoundPlan,
    StartPlan,
    SuspendPlan,
)

# -- checked when built --------------------------------------------------------------------------------------------

BAD = [
    (lambda: PreemptPlan(-1, ()), "PreemptPlan.job: -1"),
    (lambda: SuspendPlan(1.5, ()), "SuspendPlan.job: 1.5"),
    (lambda: EvictPlan(True, ()), "EvictPlan.job: True"),
    (lambda: PreemptPlan(0, [1, 2]), "PreemptPlan.victims: a list, not a tuple"),
    (lambda: SuspendPlan(0, (1, -1)), r"SuspendPlan.victims\[1\]: -1"),
    (lambda: EvictPlan(0, (1,), where=[0, (0,)]), "EvictPlan.where: a list"),
    (lambda: MigratePlan(moves=[Move(0, 0, (0,))]), "MigratePlan.moves: a list"),
    (lambda: MigratePlan(admits=(Move(0, 0, (0,)), (1, 0, (1,)))), r"MigratePlan.admits\[1\]: \(1, 0, \(1,\)\)"),
    (lambda: RoundPlan(victims=(np.int64(3), "4")), r"RoundPlan.victims\[1\]: '4'"),
    (lambda: RoundPlan(admits=(None,)), r"RoundPlan.admits\[0\]: None"),
    (lambda: RoundPlan(moves=((0, 0, (0,)),)), r"RoundPlan.moves\[0\]"),
    (lambda: RoundPlan(rates=[(0, 1.0)]), "RoundPlan.rates: a list"),
    (lambda: RoundPlan(rates=((0, -0.5),)), r"RoundPlan.rates\[0\]: \(0, -0.5\)"),
    (lambda: RoundPlan(rates=((0, 1.0), (1, math.nan))), r"RoundPlan.rates\[1\]: \(1, nan\)"),
    (lambda: RoundPlan(rates=((0, math.inf),)), r"RoundPlan.rates\[0\]: \(0, inf\)"),
    (lambda: RoundPlan(rates=((-1, 1.0),)), r"RoundPlan.rates\[0\]: \(-1, 1.0\)"),
    (lambda: OutagePlan(victims=(0,), down=((0, (1,)),)), r"OutagePlan.down\[0\]: \(0, \(1,\)\)"),
    (lambda: OutagePlan(up=Outage(0, (1,))), "OutagePlan.up: a Outage, not a tuple"),
]


@pytest.mark.parametrize("build, message", BAD)
def test_a_bad_field_is_one_line_naming_it(build, message):
    with pytest.raises(ValueError, match=message) as err:
        build()
    assert "\n" not in str(err.value)


def test_good_plans_build_and_are_frozen_records_of_their_own_fields():
    gang = GangMove(2, 0, (0,), ((0, (0,)), (1, (0,))))
    plans = [PreemptPlan(1, (0,)), SuspendPlan(np.int64(1), (0,)), EvictPlan(1, (0,), where=(0, (0,), (0,))),
             MigratePlan(moves=(Move(0, 0, (1,)),), admits=(gang,)),
             RoundPlan(victims=(0,), admits=(Move(1, 0, (0,)),), rates=((1, 0.5), (2, 0))),
             OutagePlan(victims=(0,), down=(Outage(0, (0,)),), up=(Outage(1, (0, 1), True),))]
    assert tuple(type(p) for p in plans) == PLAN_TYPES
    assert [p.how for p in plans[:3]] == ["preempt", "suspend", "evict"]
    assert not hasattr(plans[4], "down") and not hasattr(plans[5], "admits") and not hasattr(plans[0], "rates")
    for p in plans:
        assert isinstance(p, Plan)
        with pytest.raises(AttributeError):
            p.victims = ()                                            # frozen
    with pytest.raises(TypeError, match="one of its kinds"):
        StartPlan(1, (0,))


# -- carried out by the engine -------------------------------------------------------------------------------------

class _Scripted(MechanismBase):
    """Returns the plans of ``script`` (time -> plan) at their times, once each."""

    def __init__(self, script: dict, **hooks):
        self.name, self.checkpointing, self.script, self.every_instant = "scripted", Checkpointing(), dict(script), True
        for k, v in hooks.items():
            setattr(self, k, v)

    def plan(self, view):
        return self.script.pop(view.now, None)

    def wake_s(self, view):
        return min((t for t in self.script if t > view.now), default=math.inf)


def _run(script, jobs: list[tuple[float, float]], gpus: int = 1, until_s: float = math.inf, **hooks):
    """Jobs of one whole GPU each, ``(submit s, duration s)``, on one node of ``gpus`` GPUs, FIFO, restarts at
    Helios' cost (7 s for one GPU), no checkpoints (an eviction loses the run's progress)."""
    n = len(jobs)
    tasks = TaskSet([1000] * n, [0] * n, [1] * n, [1000] * n)
    js = JobSet(tasks, [s for s, _ in jobs], [d for _, d in jobs])
    cluster = Cluster([8000], [1024], [gpus], ["T4"])
    return simulate(cluster, js, "best-fit", "fifo", mechanism=_Scripted(script, **hooks), frag=False,
                    until_s=until_s)


def test_preempt_plan():
    """Job 0 (100 s) runs from 0; job 1 (10 s) arrives at 10 on the full GPU and preempts it: job 1 runs 10-20, job
    0, its 10 s lost, restarts at 20 after 7 s: 20 + 7 + 100 = 127."""
    r = _run({10.0: PreemptPlan(1, (0,))}, [(0.0, 100.0), (10.0, 10.0)])
    assert r.finish_s.tolist() == [127.0, 20.0]
    assert (r.preemptions.tolist(), r.suspensions.tolist(), r.evictions.tolist()) == ([1, 0], [0, 0], [0, 0])
    assert r.lost_s.tolist() == [10.0, 0.0]


def test_suspend_plan():
    """The same with a suspension (transparent, suspend 3 s + restore 4 s): job 0 keeps its 10 s, resumes at 20 after
    7 s: 20 + 7 + 90 = 117."""
    r = _run({10.0: SuspendPlan(1, (0,))}, [(0.0, 100.0), (10.0, 10.0)], suspend_s=3.0, restore_s=4.0)
    assert r.finish_s.tolist() == [117.0, 20.0]
    assert (r.preemptions.tolist(), r.suspensions.tolist(), r.evictions.tolist()) == ([0, 0], [1, 0], [0, 0])
    assert r.lost_s.tolist() == [0.0, 0.0]


def test_evict_plan():
    """A MIG re-layout's eviction: the checkpoint rule of a preemption (127 s, 10 s lost), counted as an eviction."""
    r = _run({10.0: EvictPlan(1, (0,))}, [(0.0, 100.0), (10.0, 10.0)])
    assert r.finish_s.tolist() == [127.0, 20.0]
    assert (r.preemptions.tolist(), r.suspensions.tolist(), r.evictions.tolist()) == ([0, 0], [0, 0], [1, 0])


def test_start_plan_where():
    """``where`` names the GPU: job 0 (running for ever) starts on GPU 1 of two, where best-fit would take GPU 0."""
    r = _run({0.0: PreemptPlan(0, (), where=(0, (1,)))}, [(0.0, math.inf)], gpus=2, owns_starts=True, until_s=10.0)
    assert r.state.gpus_of[0] == (1,) and r.start_s.tolist() == [0.0]
    assert _run({}, [(0.0, math.inf)], gpus=2, until_s=10.0).state.gpus_of[0] == (0,)


def test_migrate_plan():
    """Two GPUs, only the plans start jobs: job 0 admitted on GPU 0 at 0; at 10 it moves to GPU 1 (transparent, 5 s
    without progress: 10 + 5 + 90 = 105) and job 1 is admitted on GPU 0 (10-20)."""
    script = {0.0: MigratePlan(admits=(Move(0, 0, (0,)),)),
              10.0: MigratePlan(moves=(Move(0, 0, (1,)),), admits=(Move(1, 0, (0,)),))}
    r = _run(script, [(0.0, 100.0), (10.0, 10.0)], gpus=2, migrate_s=5.0, owns_starts=True)
    assert r.finish_s.tolist() == [105.0, 20.0]
    assert (r.migrations.tolist(), r.preemptions.tolist()) == ([1, 0], [0, 0])


def test_round_plan_preempts_admits_then_rates():
    """A round at 10: job 0 preempted (10 s lost; it restarts at 30, when job 1 is done: 30 + 7 + 100 = 137), job 1
    admitted on GPU 0 and re-rated to 0.5 (10 s of work: 10-30)."""
    plan = RoundPlan(victims=(0,), admits=(Move(1, 0, (0,)),), rates=((1, 0.5),))
    r = _run({10.0: plan}, [(0.0, 100.0), (10.0, 10.0)])
    assert r.finish_s.tolist() == [137.0, 30.0]
    assert (r.preemptions.tolist(), r.migrations.tolist()) == ([1, 0], [0, 0])


def test_round_plan_of_rates_only():
    """A round of speeds only at 10: job 0 did 10 s, its other 90 s at 0.5 take 180 s: 190."""
    r = _run({10.0: RoundPlan(rates=((0, 0.5),))}, [(0.0, 100.0)])
    assert r.finish_s.tolist() == [190.0]
    assert r.preemptions.tolist() == [0]


def test_outage_plan():
    """GPU 0 of two fails at 10 with job 0 on it: job 0 is preempted (10 s lost) and restarts at once on GPU 1
    (10 + 7 + 100 = 117); job 1 (arriving at 20) waits until GPU 0 is back at 50 (50-60)."""
    down = Outage(0, (0,))
    r = _run({10.0: OutagePlan(victims=(0,), down=(down,)), 50.0: OutagePlan(up=(down,))},
             [(0.0, 100.0), (20.0, 10.0)], gpus=2)
    assert r.finish_s.tolist() == [117.0, 60.0]
    assert r.start_s[1] == 50.0 and r.preemptions.tolist() == [1, 0]


class _NotAPlan:
    victims = ()


@pytest.mark.parametrize("plan", [Plan(), _NotAPlan(), ("preempt", 1, (0,))])
def test_the_engine_refuses_anything_but_a_plan_type(plan):
    with pytest.raises(TypeError, match=r"mechanism 'scripted' returned a \w+, not a plan \(one of PreemptPlan") as err:
        _run({10.0: plan}, [(0.0, 100.0), (10.0, 10.0)])
    assert "\n" not in str(err.value)
