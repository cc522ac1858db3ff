"""The engine's one-by-one path for rounds of few jobs gives what the vectorized path gives, to the last bit.

One threshold chooses the path: :data:`fgdopt.timeline.placement.BULK_MIN` (evictions, starts and re-rates one by
one instead of in one vectorized pass). Each property runs one random instance twice, once with every round one by
one (threshold above any round's size) and once with none (threshold 0), and compares everything the run produced
and everything Gavel keeps.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgdopt.timeline.placement as placement
from fgdopt.defrag import Move
from fgdopt.hetero.jobs import gavel_cluster
from fgdopt.hetero.rounds import ROUND_S, Gavel
from fgdopt.model import TaskSet
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.clock import Clock
from fgdopt.timeline.preemption import Checkpointing, MechanismBase, RoundPlan
from fgdopt.timeline.rounds import RoundLoop
from formulations.hetero import round_allocator

RESULT_FIELDS = ("status", "start_s", "finish_s", "node", "preemptions", "run_s", "busy_s", "work_s", "lost_s",
                 "overhead_s")
GAVEL_STATE = ("_t", "_w", "_deficit", "_x", "_speed")


def _run(seed: int, n: int, policy: str, whole_steps: bool, restart: float, fast: bool):
    """A random Gavel run on 2 + 3 GPUs of two types in nodes of 2 (multi-GPU jobs, some over two nodes), every
    round on the fast paths (``fast``) or none."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.choice([0.0, 100.0, 360.0, 900.0, 2500.0, 4000.0, 6000.0], n))
    duration = np.where(rng.random(n) < 0.5, rng.uniform(50, 900, n), rng.uniform(3000, 20000, n)).round()
    jobs = JobSet(TaskSet([0] * n, [0] * n, rng.choice([1, 1, 1, 2, 3], n), [1000] * n), submit, duration)
    gpus = {"a": 2, "b": 3}
    speed = {"a": rng.choice([0.0, 1.0, 2.5], n), "b": np.ones(n)}
    spread = {"a": speed["a"] * 0.75, "b": np.full(n, 0.5)}
    gavel = Gavel(round_allocator(policy, speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus),
                  shuffle_seed=None if policy.endswith("-aware") else seed, spread_speed=spread,
                  step_rate=rng.choice([0.5, 0.999, 3.0, 7.0], n) if whole_steps else None)
    loop = RoundLoop(gavel, round_s=ROUND_S, span=True)
    big = 10**9 if fast else 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(placement, "BULK_MIN", big)
        result = simulate(gavel_cluster(gpus, 2), jobs, "best-fit", "fifo", mechanism=loop, speed=speed,
                          restart_s=lambda g: restart * g)
    return result, gavel


# 15 examples (each two runs of up to 16 jobs): a vectorized eviction that misses a third job's GPUs fails on every
# hypothesis seed tried (1, 2, 3)
@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 16), st.sampled_from(["las", "las-aware", "makespan-aware"]),
       st.booleans(), st.sampled_from([0.0, 7.5]))
def test_the_fast_paths_give_the_general_paths_run(seed, n, policy, whole_steps, restart):
    """On random instances (single and multi-GPU jobs, jobs over two nodes, restart costs or none, whole steps or
    not), the run with every round on the fast paths and the run with none agree on every job's times, nodes and
    counters, the series, and Gavel's times received, deficits, X and speeds, bit for bit."""
    fast, kept = _run(seed, n, policy, whole_steps, restart, True)
    general, control = _run(seed, n, policy, whole_steps, restart, False)
    for name in RESULT_FIELDS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(general, name), err_msg=name)
    assert fast.series.equals(general.series)
    assert fast.instants == general.instants and fast.events == general.events
    for name in GAVEL_STATE:
        np.testing.assert_array_equal(getattr(kept, name), getattr(control, name), err_msg=name)
    assert kept.lps == control.lps and kept.solves == control.solves


def test_a_round_of_one_job_by_hand():
    """One job of 1,000 s of work at speed 2 on type ``a`` (1 GPU), 0.5 steps per second of work: a round of 360 s
    does ``floor(0.5 x 2 x 360)`` = 360 steps, 720 s of work, so the job runs two whole rounds (720 + 720 s of
    work is past its 1,000 s: in the second its 280 s of work left, 140 steps, take 140 s) and finishes at
    360 + 140 = 500 s, on the fast path as on the general one."""
    jobs = JobSet(TaskSet([0], [0], [1], [1000]), [0.0], [1000.0])
    speed = {"a": np.array([2.0])}
    for fast in (True, False):
        gavel = Gavel(round_allocator("las-aware", speed, jobs, {"a": 1}), speed, jobs.duration_s, ("a",),
                      step_rate=np.array([0.5]))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(placement, "BULK_MIN", 10**9 if fast else 0)
            r = simulate(gavel_cluster({"a": 1}), jobs, "best-fit", "fifo", mechanism=RoundLoop(gavel, ROUND_S),
                         speed=speed, restart_s=lambda g: 0.0)
        assert r.finish_s.tolist() == [500.0]
        assert float(gavel._t[0, 0]) == ROUND_S / 2 + 360.0 + 140.0   # half a round, then each round's steps' time


class _HalfRerated(MechanismBase):
    """At the first instant, start every job on its own node (job ``j`` on node ``j``, GPU 0) and re-rate the
    first half of them to speed 0.5 in the same plan."""

    name, owns_starts = "half-rerated", True
    checkpointing = Checkpointing(transparent=True)

    def __init__(self, n: int):
        self.n, self.done = n, False

    def plan(self, view):
        if self.done:
            return None
        self.done = True
        return RoundPlan(admits=tuple(Move(j, j, (0,)) for j in range(self.n)),
                         rates=tuple((j, 0.5) for j in range(self.n // 2)))


@pytest.mark.parametrize("bulk_min", [0, 10**9])
def test_a_start_rerated_in_the_same_plan_by_hand(bulk_min):
    """10 jobs of 100 s of work, each on its own 1-GPU node at time 0, jobs 0-4 re-rated to speed 0.5 by the plan
    that starts them: jobs 5-9 finish at 100 s, jobs 0-4 at 100 / 0.5 = 200 s, on the vectorized path as on the
    one-by-one path. On the vectorized path the re-rated jobs' start pushes no finish event (the re-rate's is
    theirs): 10 events pushed in all, one per job."""
    n = 10
    jobs = JobSet(TaskSet([0] * n, [0] * n, [1] * n, [1000] * n), [0.0] * n, [100.0] * n)
    pushed, at_many = [], Clock.at_many

    def counted(clock, times, owners):
        pushed.extend(owners)
        at_many(clock, times, owners)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(placement, "BULK_MIN", bulk_min)
        mp.setattr(Clock, "at_many", counted)
        r = simulate(gavel_cluster({"a": n}, 1), jobs, "best-fit", "fifo", mechanism=_HalfRerated(n))
    assert r.finish_s.tolist() == [200.0] * 5 + [100.0] * 5
    if bulk_min == 0:
        assert sorted(pushed) == list(range(n))
