"""Heterogeneous GPUs, interference and Gavel's rounds on the time engine: hand-worked timelines and properties."""

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.hetero.jobs import gavel_cluster
from fgdopt.hetero.rounds import ROUND_S, Gavel
from fgdopt.interference import Interference
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import PolicyError
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.rounds import RoundLoop, RoundView
from formulations.hetero import round_allocator

TWO_TYPES = Cluster([8000, 8000], [1024, 1024], [1, 1], ["fast", "slow"])


def whole(*gpus):
    n = len(gpus)
    return TaskSet([0] * n, [0] * n, list(gpus), [1000] * n)


def test_a_job_runs_at_the_speed_of_its_gpu_model():
    jobs = JobSet(whole(1, 1), [0.0, 0.0], [10.0, 10.0])
    r = simulate(TWO_TYPES, jobs, "best-fit", "fifo", speed={"fast": [1.0, 1.0], "slow": [0.5, 0.25]})
    on_slow = int(np.flatnonzero(r.node == 1)[0])
    assert r.finish_s[1 - on_slow] == 10.0
    assert r.finish_s[on_slow] == {0: 20.0, 1: 40.0}[on_slow]
    assert r.work_s.tolist() == [10.0, 10.0]
    assert r.busy_s[on_slow] == r.finish_s[on_slow]


def test_speed_zero_is_refused_and_unknown_models_named():
    jobs = JobSet(whole(1), [0.0], [10.0])
    one_slow = Cluster([8000], [1024], [1], ["slow"])
    with pytest.raises(PolicyError, match="speed is 0"):
        simulate(one_slow, jobs, "best-fit", "fifo", speed={"slow": [0.0]})
    with pytest.raises(ValueError, match="'k80'"):
        simulate(one_slow, jobs, "best-fit", "fifo", speed={"k80": [1.0]})


def test_preemption_at_half_speed_keeps_the_progress_made():
    # job 0 (low priority, 1 GPU) runs on the slow GPU at speed 0.5 from 0; job 1 (high) arrives at 4 and evicts it
    # transparently: job 0 kept 2 s of work; with a 7 s restart it runs again at 14 (job 1 done) and needs 16 s more
    one_slow = Cluster([8000], [1024], [1], ["slow"])
    jobs = JobSet(whole(1, 1), [0.0, 4.0], [10.0, 5.0], priority=[0, 1])
    r = simulate(one_slow, jobs, "best-fit", "fifo", mechanism="transparent", speed={"slow": [0.5, 0.5]})
    assert r.finish_s.tolist() == [14.0 + 7.0 + 16.0, 14.0]
    assert r.overhead_s[0] == 7.0 and r.lost_s[0] == 0.0 and r.preemptions.tolist() == [1, 0]


def test_interference_slows_both_jobs_while_they_share_a_gpu():
    # two half-GPU jobs on one GPU at factor 0.5: job 0 does 2 s alone, then 8 s at half speed (16 s) -> 18;
    # job 1 does 8 s of its 10 in those 16 s, then 2 s alone -> 20
    one = Cluster([8000], [1024], [1], ["T4"])
    jobs = JobSet(TaskSet([0, 0], [0, 0], [1, 1], [500, 500]), [0.0, 2.0], [10.0, 10.0])
    r = simulate(one, jobs, "best-fit", "fifo", interference=Interference([0, 1], {"T4": np.full((2, 2), 0.5)}))
    assert r.finish_s.tolist() == [18.0, 20.0]
    assert r.work_s.tolist() == [10.0, 10.0]
    plain = simulate(one, jobs, "best-fit", "fifo")
    assert plain.finish_s.tolist() == [10.0, 12.0]


def test_interference_factors_are_per_class_and_per_model():
    inter = Interference([0, 1, 1], {"T4": [[1.0, 0.6], [0.9, 0.8]]})
    assert inter.slowdown("T4", 0, [1, 2]) == pytest.approx(0.36)
    assert inter.slowdown("T4", 1, [0]) == 0.9
    assert inter.slowdown("V100", 1, [0, 2]) == 1.0
    with pytest.raises(ValueError, match="square"):
        Interference([0, 2], {"T4": [[1.0, 0.6], [0.9, 0.8]]})
    with pytest.raises(ValueError, match="> 0"):
        Interference([0], {"T4": [[0.0]]})


def test_interference_needs_transparent_checkpoints():
    jobs = JobSet(TaskSet([0], [0], [1], [500]), [0.0], [10.0])
    with pytest.raises(ValueError, match="transparent"):
        simulate(Cluster([8000], [1024], [1], ["T4"]), jobs, "best-fit", "fifo", mechanism="priority",
                 interference=Interference([0], {"T4": [[0.5]]}))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 30), st.sampled_from([200, 300, 500, 1000]),
                          st.integers(0, 2)), min_size=1, max_size=14),
       st.lists(st.floats(0.3, 1.0), min_size=9, max_size=9), st.sampled_from(["fgd", "best-fit", "random"]))
def test_interference_conserves_work_and_time(rows, factors, policy):
    """Every job finishes its work; run time = busy + overhead; the GPU-seconds run equal the allocation integral."""
    cluster = Cluster([8000, 8000], [1024, 1024], [2, 1], ["T4", "V100"])
    tasks = TaskSet([0] * len(rows), [0] * len(rows), [1] * len(rows), [r[2] for r in rows])
    jobs = JobSet(tasks, [float(r[0]) for r in rows], [float(r[1]) for r in rows])
    inter = Interference([r[3] for r in rows], {"T4": np.reshape(factors, (3, 3))})
    r = simulate(cluster, jobs, policy, "backfill", interference=inter, speed={"V100": np.full(len(rows), 2.0)},
                 snapshots=np.arange(0.5, 60.0, 3.0))          # each re-places the running jobs by the one rule
    assert (r.status == 0).all()                               # every job finished (check() verified the rest)
    assert len(r.snapshots) == 20
    np.testing.assert_allclose(r.work_s, jobs.duration_s)
    t, alloc = r.series.time_s.to_numpy(), r.series.alloc_milli.to_numpy()
    integral = float((alloc[:-1] * np.diff(t)).sum()) / 1000
    assert integral == pytest.approx(float((r.run_s * tasks.gpu_demand / 1000).sum()), rel=1e-9, abs=1e-6)


def gavel_run(submit, duration, policy="las", gpus=None, step_rate=None):
    """Whole-GPU jobs under Gavel's rounds with ``policy`` on one type ``a`` of ``gpus`` GPUs (speed 1); with
    ``step_rate`` (steps per second of work, per job), in whole steps."""
    gpus = gpus or {"a": 1}
    jobs = JobSet(whole(*[1] * len(submit)), submit, duration)
    speed = {"a": np.ones(len(submit))}
    gavel = Gavel(round_allocator(policy, speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus),
                  step_rate=None if step_rate is None else np.asarray(step_rate, dtype=np.float64))
    loop = RoundLoop(gavel, round_s=ROUND_S)
    return simulate(gavel_cluster(gpus), jobs, "best-fit", "fifo", mechanism=loop, speed=speed,
                    restart_s=lambda g: 0.0), loop


def test_gavel_rounds_alternate_two_jobs_by_hand():
    # X = 1/2 each; priorities X / (t / W) with t starting at 180 s: job 0 runs 0-360, job 1 360-720, job 0 720-860
    # (done); X is recomputed at 860 (the last reset was at 0), job 1 runs its last 140 s: 860-1000
    r, mech = gavel_run([0.0, 0.0], [500.0, 500.0])
    assert r.finish_s.tolist() == [860.0, 1000.0]
    assert r.preemptions.tolist() == [1, 1]
    assert mech.policy.solves == 2 and mech.rounds == 4    # rounds at 0, 360, 720 and 860 s


def test_gavel_waits_1920_s_between_solves_and_breaks_ties_by_deficit():
    # job 1 (at 100 s) enters X at the round of 360 s (the last solve was at 0) and finishes at 820; job 2 (at 900)
    # waits for the first round at least 1,920 s after that solve (2,620 s) and then outranks job 0 on its deficit
    r, mech = gavel_run([0.0, 100.0, 900.0], [5000.0, 100.0, 100.0])
    assert r.finish_s[1] == 820.0
    assert r.start_s[2] == 2620.0 and r.finish_s[2] == 2720.0
    assert mech.policy.solves == 4           # at 0, 360 and 2,620 s, and once more after job 2 left


def test_whole_steps_by_hand():
    # Gavel's whole steps: at 0.999 steps/s job 1 does int(0.999 x 360) = 359 steps a round, in 359 / 0.999 s, and
    # idles to the round's end (job 0, at 1 step/s, fills its 360 s): after two rounds it has 718 of its 999 steps;
    # the last 281 take 281 / 0.999 s from 720 s; continuously both finish at 1,000 s
    last = 720.0 + (1000.0 - 2 * 359 / 0.999)
    r, _ = gavel_run([0.0, 0.0], [1000.0, 1000.0], gpus={"a": 2}, step_rate=[1.0, 0.999])
    assert r.finish_s.tolist() == pytest.approx([1000.0, last], rel=1e-12)
    assert last == pytest.approx(720.0 + 281 / 0.999, rel=1e-12)
    assert gavel_run([0.0, 0.0], [1000.0, 1000.0], gpus={"a": 2})[0].finish_s.tolist() == [1000.0, 1000.0]


def test_whole_steps_set_the_time_received_and_so_the_priorities():
    # one GPU, X = 1/2 each: job 0 runs 0-360 s (360 whole steps at 1 step/s), job 1 from 360 s, 359 steps at
    # 0.999 steps/s in 359 / 0.999 s; its time received is that, less than job 0's 360 s, so it outranks job 0 in
    # round 3 and does its last 100 s of work there; run continuously, the two tie at 720 s, job 0 wins on arrival
    # order (both deficits 0) and job 1 does its last 99.36 s from 1,080 s
    work = 359 / 0.999 + 100.0
    r, _ = gavel_run([0.0, 0.0], [5000.0, work], step_rate=[1.0, 0.999])
    assert r.finish_s[1] == pytest.approx(360.0 + 359 / 0.999 + 100.0, rel=1e-12)
    assert gavel_run([0.0, 0.0], [5000.0, work])[0].finish_s[1] == pytest.approx(1080.0 + work - 360.0, rel=1e-12)


def test_whole_steps_time_received_is_each_runs_own():
    # two GPUs, three jobs at X = 2/3: jobs 0 and 1 run first (ties: arrival order); job 0 does 360 steps in 360 s,
    # job 1 359 steps in 359 / 0.999 s, so job 1 has received less time and runs in round 2 beside job 2 (which has
    # received none): it does its last 100 s from 360 s. Were the round's runs credited alike (say their mean), jobs
    # 0 and 1 would tie again and job 0 would run, leaving job 1 to round 3.
    work = 359 / 0.999 + 100.0
    r, _ = gavel_run([0.0, 0.0, 0.0], [5000.0, work, 5000.0], gpus={"a": 2}, step_rate=[1.0, 0.999, 0.998])
    assert r.finish_s[1] == pytest.approx(460.0, rel=1e-12)


def test_whole_steps_a_job_whose_last_steps_fill_a_round_finishes_when_they_are_done():
    # job 1 at 0.0625 steps/s (22 steps a round, in 352 s) has exactly 22 steps of work (352 s): its remaining steps
    # fit the round (Gavel's min(num_steps, remaining)), so it finishes at 352 s, not at the round's end (360 s, set
    # by job 0's 360 steps)
    r, _ = gavel_run([0.0, 0.0], [1000.0, 352.0], gpus={"a": 2}, step_rate=[1.0, 0.0625])
    assert r.finish_s[1] == 352.0
    assert r.start_s[0] == 0.0 and r.preemptions[0] == 0


def test_gavel_aware_beats_agnostic_when_speeds_differ():
    # two jobs, one fast and one slow GPU; job 0 runs 4x faster on "fast", job 1 only 1.25x: the aware policy gives
    # "fast" to job 0, the agnostic one splits both types evenly; both finish later under the agnostic X
    gpus = {"fast": 1, "slow": 1}
    jobs = JobSet(whole(1, 1), [0.0, 0.0], [3600.0, 3600.0])
    speed = {"fast": np.array([1.0, 1.0]), "slow": np.array([0.25, 0.8])}
    ends = {}
    for policy in ("las", "las-aware"):
        mech = RoundLoop(Gavel(round_allocator(policy, speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus),
                               shuffle_seed=None if policy.endswith("aware") else 5), round_s=ROUND_S)
        r = simulate(gavel_cluster(gpus), jobs, "best-fit", "fifo", mechanism=mech, speed=speed,
                     restart_s=lambda g: 0.0)
        ends[policy] = r.finish_s.mean()
    assert ends["las-aware"] < ends["las"]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 4000), st.floats(0.1, 1.0), st.sampled_from([1, 2])),
                min_size=1, max_size=12),
       st.sampled_from(["las", "las-aware", "makespan-aware", "ftf-aware"]))
def test_gavel_rounds_conserve_work_on_random_traces(rows, policy):
    """Every job finishes its work (check() verifies times and the final state); the state validates at instants
    across the run (each snapshot re-places the running jobs by the one rule); none runs before it arrives or on
    more GPUs of a type than the type has."""
    gpus = {"v100": 2, "k80": 2}
    jobs = JobSet(whole(*[r[3] for r in rows]), [float(r[0]) for r in rows], [float(r[1]) for r in rows])
    speed = {"v100": np.ones(len(rows)), "k80": np.array([r[2] for r in rows])}
    mech = RoundLoop(Gavel(round_allocator(policy, speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus),
                           shuffle_seed=None if policy.endswith("aware") else 5), round_s=ROUND_S)
    r = simulate(gavel_cluster(gpus, 2), jobs, "best-fit", "fifo", mechanism=mech, speed=speed,
                 restart_s=lambda g: 0.0, snapshots=np.arange(100.0, 8000.0, 370.0))
    assert (r.status == 0).all() and len(r.snapshots) == 22
    assert (r.start_s >= jobs.submit_s).all()
    np.testing.assert_allclose(r.work_s, jobs.duration_s)
    assert (r.series.alloc_milli <= 4000).all()


def test_gavel_stop_by_hand():
    # the alternation above (job 0 done at 860 s, job 1 at 1000 s), stopped after job 0: the round at 860 s, where the
    # scheduler sees job 0 gone, stops the run; job 1 is preempted there and never runs again; job 0's figures are
    # those of the full run; a third job arriving at 900 s is only queued. stop_by_s = 500 stops at the round of
    # 720 s, the first after it, with both jobs unfinished
    jobs = JobSet(whole(1, 1, 1), [0.0, 0.0, 900.0], [500.0, 500.0, 10.0])
    speed = {"a": np.ones(3)}
    for stop_by, finish, stopped in ((np.inf, [860.0, np.nan, np.nan], 860.0), (500.0, [np.nan] * 3, 720.0)):
        mech = RoundLoop(Gavel(round_allocator("las", speed, jobs, {"a": 1}), speed, jobs.duration_s, ("a",)),
                         round_s=ROUND_S, stop_after=[0], stop_by_s=stop_by)
        r = simulate(gavel_cluster({"a": 1}), jobs, "best-fit", "fifo", mechanism=mech, speed=speed,
                     restart_s=lambda g: 0.0)
        np.testing.assert_array_equal(r.finish_s, finish)
        assert mech.stopped_s == stopped and (r.series.time_s.to_numpy()[-1] == 900.0)
        assert r.series.alloc_milli.to_numpy()[-1] == 0


def test_a_job_that_runs_half_its_time_on_each_type_finishes_when_its_work_is_done():
    # X = 1/2 of each type for both jobs; one GPU of each type, job speeds 1 (fast) and 1/2 (slow), 540 s of work:
    # round 1 (0-360 s) job 0 fast (360 s of work), job 1 slow (180 s); round 2 they swap (Gavel's priorities), and
    # both have done exactly 540 s of work at 720 s
    gpus = {"fast": 1, "slow": 1}
    jobs = JobSet(whole(1, 1), [0.0, 0.0], [540.0, 540.0])
    speed = {"fast": np.ones(2), "slow": np.full(2, 0.5)}
    half = lambda present, view: np.full((len(present), 2), 0.5)    # noqa: E731 (X by hand)
    mech = RoundLoop(Gavel(half, speed, jobs.duration_s, ("fast", "slow")), round_s=ROUND_S)
    r = simulate(gavel_cluster(gpus), jobs, "best-fit", "fifo", mechanism=mech, speed=speed, restart_s=lambda g: 0.0)
    assert r.finish_s.tolist() == [720.0, 720.0]
    assert r.node.tolist() == [1, 0]                     # the last run of each: job 0 on slow, job 1 on fast
    assert r.preemptions.tolist() == [1, 1] and mech.rounds == 2


def _choose_by_hand(x, t, deficit, w, in_x, thr, need, left, order):
    """Gavel's choice (``fgdopt.hetero.rounds`` docstring) job by job: per type in ``order``, the jobs by decreasing
    (priority, deficit, X), then arrival; a job takes the type if it has none yet, runs there and fits what is left."""
    chosen = {}
    for g in order:
        prio = [0.0 if not in_x[i] or x[i, g] == 0 or thr[i, g] == 0 else
                (x[i, g] * w[g] / t[i, g] if w[g] > 0 else x[i, g] * 1e9) for i in range(len(x))]
        room = left[g]
        for i in sorted(range(len(x)), key=lambda i: (-prio[i], -deficit[i, g], -x[i, g], i)):
            if room and i not in chosen and thr[i, g] > 0 and need[i] <= room:
                chosen[i] = g
                room -= need[i]
    return chosen


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 40), st.booleans(), st.booleans())
def test_gavel_choice_matches_the_rule_by_hand(seed, n, one_gpu, shuffle):
    """The round's choice (one-GPU jobs: each type's first jobs at once, sorted only when they do not all fit; else
    job by job) is the rule by hand, ties included (X, deficits and times drawn from few values)."""
    rng = np.random.default_rng(seed)
    gpus = {"a": int(rng.integers(1, 6)), "b": int(rng.integers(1, 6)), "c": int(rng.integers(1, 4))}
    thr = rng.choice([0.0, 0.5, 1.0], size=(n, 3), p=[0.2, 0.4, 0.4])
    thr[thr.sum(axis=1) == 0, 1] = 1.0
    need = np.ones(n, dtype=np.int64) if one_gpu else rng.integers(1, 4, n)
    speed = {g: thr[:, k] for k, g in enumerate(gpus)}
    mech = Gavel(lambda ids, view: None, speed, np.ones(n), tuple(gpus), shuffle_seed=seed if shuffle else None)
    mech._x[:] = rng.choice([0.0, 0.25, 0.5], size=(n, 3))
    mech._t[:] = rng.choice([180.0, 360.0, 540.0], size=(n, 3))
    mech._deficit[:] = rng.choice([-1.0, 0.0, 2.0], size=(n, 3))
    mech._w[:] = rng.choice([0.0, 720.0], size=3)
    mech._in_x[:] = rng.random(n) < 0.9
    order = list(range(3))
    if shuffle:
        random.Random(seed).shuffle(order)
    left = [int(gpus[g]) for g in gpus]
    want = _choose_by_hand(mech._x, mech._t, mech._deficit, mech._w, mech._in_x, thr, need.tolist(), left, order)
    got = mech._choose(np.arange(n), need, left)
    assert got == want


class _Eager(Gavel):
    """Every X solved at its recomputation and every deficit term added at once (the form before X was lazy)."""

    def _reset(self, now, present, view):
        super()._reset(now, present, view)
        self._settle()


def _random_gavel(seed: int, n: int, gpus: dict, eager: bool, policy: str, until_s: float = math.inf):
    # a quiet stretch (jobs now and then, short and long: recomputations whose X nobody reads, some of whose jobs
    # leave), then a burst that congests the cluster and has the choice read X and every deficit owed
    rng = np.random.default_rng(seed)
    early = n // 2
    submit = np.concatenate((np.sort(rng.choice([0.0, 200.0, 700.0, 2500.0, 4000.0], early)),
                             np.full(n - early, 6000.0)))
    duration = np.where(rng.random(n) < 0.5, rng.uniform(100, 800, n), rng.uniform(8000, 20000, n)).round()
    jobs = JobSet(TaskSet([0] * n, [0] * n, rng.choice([1, 1, 2], n), [1000] * n), submit, duration)
    speed = {"a": rng.choice([1.0, 2.0], n), "b": np.ones(n)}
    cls = _Eager if eager else Gavel
    mech = cls(round_allocator(policy, speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus),
               shuffle_seed=None if policy.endswith("-aware") else seed,
               step_rate=rng.choice([0.5, 0.999, 3.0], n) if seed % 2 else None)
    r = simulate(gavel_cluster(gpus, 2), jobs, "best-fit", "fifo", mechanism=RoundLoop(mech, round_s=ROUND_S),
                 speed=speed, restart_s=lambda g: 0.0, until_s=until_s)
    return r, mech


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31), st.integers(2, 14), st.sampled_from(["las-aware", "las", "makespan-aware"]),
       st.sampled_from([3000.0, 6500.0, 9000.0, math.inf]))
def test_x_solved_when_read_gives_the_schedule_of_x_solved_at_once(seed, n, policy, until_s):
    """X is solved only when the choice reads it (:class:`Gavel`): on random instances, congested or not,
    every job starts, finishes, ends on the node and is preempted as when each X is solved at its recomputation and
    every deficit term added then, to the last bit; the eager run solves every X, the lazy one at most as many. A run
    stopped while jobs are present has, once the lazy one's X is read, the same X and deficits for them."""
    gpus = {"a": 2, "b": 2}
    lazy, mech = _random_gavel(seed, n, gpus, False, policy, until_s)
    eager, control = _random_gavel(seed, n, gpus, True, policy, until_s)
    for field in ("start_s", "finish_s", "node", "preemptions"):
        np.testing.assert_array_equal(getattr(lazy, field), getattr(eager, field))
    assert control.lps == control.solves == mech.solves and mech.lps <= mech.solves
    if mech._current is not None:
        mech._settle()
        here = mech._known
        np.testing.assert_array_equal(mech._deficit[here], control._deficit[here])
        np.testing.assert_array_equal(mech._x[here], control._x[here])


def test_deficits_add_each_recomputations_x_by_hand():
    # jobs 1 and 4 present at the recomputation at 0 s, X row (job / 10, 0); job 1 then runs 360 s on type 0; job 2
    # arrives (an index between theirs) and is present at the next one, at 1,920 s, with no row in the first X.
    # Deficit = X x elapsed - (time run since the last one): job 1 0.1 x 1920 - 360 = -168, job 4 0.4 x 1920 = 768,
    # job 2 0 (not in that X)
    class Engine:
        def work_of(self, js):
            return np.zeros(len(js))

    def view(now):
        none = np.zeros(0, np.int64)
        return RoundView(Engine(), now, ROUND_S, none, none, False, none, (6, 6), 0)

    x_of = lambda ids, view: np.column_stack([ids / 10.0, np.zeros(len(ids))])    # noqa: E731 (X by hand)
    mech = Gavel(x_of, {"a": np.ones(6), "b": np.ones(6)}, np.ones(6), ("a", "b"))
    half = ROUND_S / 2
    mech._known[[1, 4]], mech._t[[1, 4]] = True, half
    mech._reset(0.0, np.array([1, 4]), view(0.0))
    mech._t[1, 0] += 360.0
    mech._known[2], mech._t[2] = True, half
    mech._reset(1920.0, np.array([1, 2, 4]), view(1920.0))
    mech._settle()
    assert mech._deficit[[1, 2, 4], 0].tolist() == [0.1 * 1920 - 360.0, 0.0, 0.4 * 1920]
    assert (mech._deficit[:, 1] == 0).all() and mech.lps == 2 and mech.solves == 2


def test_an_uncongested_cluster_solves_no_lp():
    # three 1-GPU jobs, never more present than the 4 GPUs of type a: each round every job in X takes a GPU whatever
    # X says, so no X is read; X is recomputed (Gavel's count) as in the congested case above (job 2 waits for the
    # recomputation at 2,520 s, the first round 1,920 s after the one at 360 s), and never solved
    r, mech = gavel_run([0.0, 100.0, 900.0], [5000.0, 100.0, 100.0], "las-aware", {"a": 4})
    assert mech.policy.solves == 4 and mech.policy.lps == 0
    assert r.finish_s.tolist() == [5000.0, 460.0, 2620.0]


def test_a_recomputation_due_a_hair_past_last_plus_1920_s_is_made():
    """Found by ``test_gavel_rounds_conserve_work_on_random_traces``: the last recomputation is at 2,280.2692656667336
    s (job 0's finish), job 5 arrives at 2,281 s on the idle cluster and waits for the next one, due 1,920 s later; but
    ``last + 1920`` rounds to a float whose distance from ``last`` is below 1,920, so a scheduler woken there found
    the recomputation not yet allowed and never woke again (job 5 pending forever). It wakes at the first float at
    which it is allowed (one up), and job 5 runs its 1 s there."""
    rows = [(0, 2046, 0.9966083616537094, 2), (1, 1, 1.0, 1), (1, 1, 0.5, 2), (1, 198, 0.849609375, 2),
            (361, 1, 1.0, 1), (2281, 1, 1.0, 1)]
    gpus = {"v100": 2, "k80": 2}
    jobs = JobSet(whole(*[r[3] for r in rows]), [float(r[0]) for r in rows], [float(r[1]) for r in rows])
    speed = {"v100": np.ones(len(rows)), "k80": np.array([r[2] for r in rows])}
    mech = RoundLoop(Gavel(round_allocator("las-aware", speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus)),
                     round_s=ROUND_S)
    r = simulate(gavel_cluster(gpus, 2), jobs, "best-fit", "fifo", mechanism=mech, speed=speed,
                 restart_s=lambda g: 0.0)
    last = 2280.2692656667336
    assert r.finish_s[0] == last and (last + 1920.0) - last < 1920.0
    assert (r.status == 0).all()
    assert r.start_s[5] == math.nextafter(last + 1920.0, math.inf) and r.finish_s[5] == r.start_s[5] + 1.0
