"""The offline scheduling problem: hand-worked optima, bounds, the replay check, the study's command line."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.schedule import main
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import InfeasiblePlacement
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import Schedule, objective_value, recorded_run, rejected_jobs, validate_schedule
from fgdopt.timeline.suites import (
    KNOWN_OPTIMA,
    MEDIUM_SPECS,
    SMALL_PIN_EVERY,
    random_time_instance,
    time_suite,
    trap_instances,
)
from formulations.schedule import pooled_bound, solve_schedule
from formulations.schedule.bound import default_step
from formulations.schedule.exact import _sorted_labels, solve_exact, time_unit


def one_gpu(gpus: int = 1) -> Cluster:
    return Cluster([32_000], [65_536], [gpus], ["T4"])


def jobs_of(*rows) -> JobSet:
    """Jobs from (num_gpu, gpu_milli, submit_s, duration_s), 1 core and 1 GiB each."""
    n = len(rows)
    return JobSet(TaskSet([1000] * n, [1024] * n, [r[0] for r in rows], [r[1] for r in rows]),
                  [r[2] for r in rows], [r[3] for r in rows])


@pytest.mark.parametrize("inst", trap_instances(), ids=lambda i: i.name)
@pytest.mark.parametrize("objective", ["mean-jct", "makespan"])
def test_traps_reach_their_hand_derived_optimum(inst, objective):
    """Each trap's optimum is derived in its docstring (fgdopt.timeline.suites); the model proves exactly it,
    and its schedule replays on the ClusterState."""
    res = solve_schedule(inst.cluster, inst.jobs, objective, 20.0)
    assert res.status == "optimal"
    assert res.value == pytest.approx(KNOWN_OPTIMA[inst.name][objective])
    assert res.bound == pytest.approx(res.value)
    validate_schedule(inst.cluster, inst.jobs, res.schedule)


def test_engine_loses_where_the_traps_say():
    """Head of line: FIFO gives JCTs 10, 19, 20 (C waits behind B until 20), mean 49/3; backfill starts C at 2:
    31/3. Waiting beats starting: every discipline starts A at 0, B waits 99 s: JCTs 100 and 100, mean 100
    (the optimum, 51.5, idles the GPU for a second)."""
    traps = {i.name: i for i in trap_instances()}
    hol = traps["trap-head-of-line"]
    _, fifo = recorded_run(hol.cluster, hol.jobs, "best-fit", "fifo")
    _, back = recorded_run(hol.cluster, hol.jobs, "best-fit", "backfill")
    assert objective_value(hol.jobs, fifo, "mean-jct") == pytest.approx(49 / 3)
    assert objective_value(hol.jobs, back, "mean-jct") == pytest.approx(31 / 3)
    wait = traps["trap-wait-beats-start"]
    for q in ("fifo", "backfill", "sjf"):
        _, s = recorded_run(wait.cluster, wait.jobs, "fgd", q)
        assert objective_value(wait.jobs, s, "mean-jct") == pytest.approx(100.0)


def test_two_sharing_jobs_on_one_gpu():
    """One GPU. 0.6 + 0.4 GPU share it: both run 0-10, mean JCT 10. 0.6 + 0.6 do not: one runs 0-10, the other
    10-20, mean JCT 15, makespan 20; the model places the sharing pair on the same GPU."""
    both = jobs_of((1, 600, 0, 10), (1, 400, 0, 10))
    res = solve_schedule(one_gpu(), both, "mean-jct", 10.0)
    assert (res.status, res.value) == ("optimal", pytest.approx(10.0))
    assert res.schedule.gpus == ((0,), (0,))
    apart = jobs_of((1, 600, 0, 10), (1, 600, 0, 10))
    assert solve_schedule(one_gpu(), apart, "mean-jct", 10.0).value == pytest.approx(15.0)
    assert solve_schedule(one_gpu(), apart, "makespan", 10.0).value == pytest.approx(20.0)


def test_rejected_jobs_leave_both_sides():
    """A 2-GPU job on a 1-GPU node fits no empty node: rejected by the engine and the model alike; the mean JCT
    is over the one other job (5 s)."""
    jobs = jobs_of((2, 1000, 0, 100), (1, 1000, 0, 5))
    assert rejected_jobs(one_gpu(), jobs).tolist() == [True, False]
    res = solve_schedule(one_gpu(), jobs, "mean-jct", 5.0)
    assert math.isnan(res.schedule.start_s[0]) and res.value == pytest.approx(5.0)
    _, run = recorded_run(one_gpu(), jobs, "best-fit", "fifo")
    assert objective_value(jobs, run, "mean-jct") == pytest.approx(5.0)


SHARED_SPEC = (4, 20, 1.0, 1)
"""The generated instance whose mean-JCT optimum (441.05 s, proven) both the ordering check and the forced time
limit read: its pooled LP bound (436.69 s) is strictly below the optimum and the best engine run (443.65 s)
strictly above (measured; on ``(4, 20, 0.7, 0)`` and ``(6, 30, 1.3, 8)`` the LP meets the optimum)."""


def _engine_runs_and_solve(spec, time_limit, threads=2):
    """The instance ``spec``, the schedules of its four engine runs (fgd and best-fit, FIFO and shortest first),
    their mean JCTs and the exact model's mean-JCT run hinted with the best of them (``threads`` CP-SAT workers)."""
    inst = random_time_instance(*spec)
    runs = [recorded_run(inst.cluster, inst.jobs, p, q)[1] for p in ("fgd", "best-fit") for q in ("fifo", "sjf")]
    values = [objective_value(inst.jobs, s, "mean-jct") for s in runs]
    return inst, values, solve_schedule(inst.cluster, inst.jobs, "mean-jct", time_limit,
                                        hint=runs[int(np.argmin(values))], threads=threads)


@pytest.fixture(scope="module")
def shared_solve():
    """:func:`_engine_runs_and_solve` on :data:`SHARED_SPEC`, solved once for the tests that read it, by one CP-SAT
    worker (it proves the optimum in 1.3 CPU s; two workers took 2.2-2.3, measured)."""
    return _engine_runs_and_solve(SHARED_SPEC, 60.0, threads=1)


@pytest.mark.parametrize("spec", [SHARED_SPEC, pytest.param((4, 20, 0.7, 0), marks=pytest.mark.extended),
                                  pytest.param((6, 30, 1.3, 8), marks=pytest.mark.extended)])
def test_bound_optimum_and_engine_runs_are_ordered(spec, request):
    """On small generated instances: LP bound <= model bound <= optimum <= every engine run (same rejected jobs),
    and the optimal schedule replays event by event. The default run checks :data:`SHARED_SPEC`; the two others
    are further runs of the same check (``extended``)."""
    inst, values, res = (request.getfixturevalue("shared_solve") if spec == SHARED_SPEC
                         else _engine_runs_and_solve(spec, 30.0))
    validate_schedule(inst.cluster, inst.jobs, res.schedule)
    assert res.bound <= res.value + 1e-9
    assert res.value <= min(values) + 1e-9
    lp = pooled_bound(inst.cluster, inst.jobs)
    assert lp.status == "optimal"
    assert lp.mean_jct_s <= res.value + 1e-6 if res.status == "optimal" else lp.mean_jct_s <= res.bound + 1e-6
    if res.status == "optimal":
        assert objective_value(inst.jobs, res.schedule, "mean-jct") == pytest.approx(res.value)


def test_pooled_bound_two_jobs_one_gpu():
    """Two whole-GPU 10 s jobs at 0 on one GPU: the optimum is 10 and 20, mean 15. The pooled LP (1 s grid) is at
    most that and above the trivial 10: its preemptive relaxation is 15 too (mean busy times 5 and 15, or both
    shared: 10 and 10, plus p/2), and the grid costs at most one step per job."""
    b = pooled_bound(one_gpu(), jobs_of((1, 1000, 0, 10), (1, 1000, 0, 10)), step_s=1.0)
    assert b.status == "optimal"
    assert 14.0 - 1e-6 <= b.mean_jct_s <= 15.0 + 1e-9
    assert b.mean_wait_s == pytest.approx(b.mean_jct_s - 10.0)


def test_pooled_bound_counts_jobs_smaller_than_one_interval():
    """Four whole-GPU 1 s jobs at 0 on one GPU, grid D = 1 s, window slack 3 s (intervals 0..3). Each job's work is
    exactly one interval of the pooled GPU (d p / (cap D) = 1), so the capacity rows hold one job's work per
    interval, and the LP's best spreads the work over intervals 0..3: the work's interval starts sum to at least
    0 + 1 + 2 + 3 = 6, and C_j >= (its work's mean interval start) + p/2 with each such start at least 1/2, so
    sum C_j >= 6 + 4 x 1/2 = 8: mean JCT 2 (mean wait 1), less the solver's 1e-6 safety. Without those rows all
    four would run in interval 0: the trivial bound 1. The optimum runs them one after another: 1, 2, 3, 4, mean
    2.5."""
    jobs = jobs_of(*[(1, 1000, 0, 1)] * 4)
    b = pooled_bound(one_gpu(), jobs, step_s=1.0, slack_s=3.0)
    assert b.status == "optimal"
    assert b.mean_jct_s == pytest.approx(2.0, abs=1e-5) and b.mean_wait_s == pytest.approx(1.0, abs=1e-5)
    assert b.mean_jct_s <= solve_schedule(one_gpu(), jobs, "mean-jct", 10.0).value == pytest.approx(2.5)


def test_pooled_bound_with_long_jobs_stays_below_the_optimum():
    """One whole GPU; A (100 s) and B (10 s) at 0, C (10 s) at 5. Optimum: B 0-10, C 10-20, A 20-120: JCTs 10, 15,
    120, mean 145/3 = 48.33 (A first costs B and C 100 s each; B, A, C costs C 105). With a 1 s window slack A is
    *long* (100 >= 2 x its window), so it enters through its group's column; the bound stays below 48.33 and above
    the trivial 40 (B and C cannot both run at once, nor beside A)."""
    jobs = jobs_of((1, 1000, 0, 100), (1, 1000, 0, 10), (1, 1000, 5, 10))
    assert solve_schedule(one_gpu(), jobs, "mean-jct", 10.0).value == pytest.approx(145 / 3)
    b = pooled_bound(one_gpu(), jobs, step_s=1.0, slack_s=1.0)
    assert b.status == "optimal" and 40.0 < b.mean_jct_s <= 145 / 3 + 1e-9


def test_pooled_bound_on_jobs_ten_million_times_longer_than_others():
    """One whole GPU; A and B (1e7 s each) at 0, C (1 s) at 1, D (30 s) at 30. Waiting for the short ones is best:
    C 1-2, D 30-60, A 60-(1e7 + 60), B after A: waits 60, 1e7 + 60, 0, 0, mean 2,500,030 s (starting A at 0 makes
    C, D and B wait about 1e7 s each: mean about 7.5e6). The default grid (290 s) gives A and B about 69,000
    columns each; the LP is solved in seconds (with its work rows as equations, HiGHS' presolve spent minutes on
    them, past its time limit), and its bound is at most the optimum and within one step per job of it."""
    jobs = jobs_of((1, 1000, 0, 1e7), (1, 1000, 0, 1e7), (1, 1000, 1, 1), (1, 1000, 30, 30))
    b = pooled_bound(one_gpu(), jobs, time_limit=20.0)
    assert b.status == "optimal" and b.step_s == 290.0 and b.columns > 100_000
    assert 2_500_030 - 290 <= b.mean_wait_s <= 2_500_030


def test_pooled_bound_grid_of_a_few_long_jobs():
    """A tiny workload of long jobs. Three jobs of 20,000 s at 0: windows of 40,000 s (twice the median duration),
    on a 1 s grid 120,000 columns, within MAX_COLUMNS: the default step stays 1 s, each window a row of 40,000
    entries (over which HiGHS' presolve ran 277 s under a 5 s limit while the work rows were equations). Two
    whole-GPU jobs of 1e5 s at 0 on one GPU: one waits 1e5 s, mean wait 5e4; the default step grows to 3 s (1 and
    2 s exceed MAX_COLUMNS with windows of 2e5 s), and the bound is within one step of it."""
    p = np.array([20_000.0, 20_000.0, 10.0])
    assert default_step(np.zeros(3), p, 2 * 20_000.0, np.ones((3, 3))) == 1.0
    b = pooled_bound(one_gpu(), jobs_of((1, 1000, 0, 1e5), (1, 1000, 0, 1e5)), time_limit=5.0)
    assert (b.status, b.step_s, b.columns) == ("optimal", 3.0, 2 * 66_667 + 4)
    assert 5e4 - 3 <= b.mean_wait_s <= 5e4


def test_forced_time_limit_gives_a_true_bound(shared_solve):
    """A stop after almost no search is reported ``time_limit`` with the hint as incumbent and a bound at most
    the proven optimum (:data:`SHARED_SPEC`'s, solved once by :func:`shared_solve`)."""
    inst, _, full = shared_solve
    runs = [recorded_run(inst.cluster, inst.jobs, "best-fit", q)[1] for q in ("fifo", "backfill")]
    hint = min(runs, key=lambda s: objective_value(inst.jobs, s, "mean-jct"))
    stopped = solve_schedule(inst.cluster, inst.jobs, "mean-jct", 0.0, hint=hint, deterministic_time=0.0)
    assert full.status == "optimal"
    assert stopped.status == "time_limit"
    assert stopped.bound <= full.value + 1e-9 <= stopped.value + 1e-9
    assert stopped.gap_pct > 0


def test_a_pooled_bound_stopped_by_its_time_limit_says_so():
    """With no time, HiGHS stops before an optimum: the status is ``time_limit`` (not ``error``) and the bound
    falls back to the trivial one, the mean duration: 1 s for the four 1 s jobs (2 when solved, above)."""
    b = pooled_bound(one_gpu(), jobs_of(*[(1, 1000, 0, 1)] * 4), step_s=1.0, slack_s=3.0, time_limit=0.0)
    assert b.status == "time_limit" and b.mean_jct_s == 1.0 and b.mean_wait_s == 0.0


def test_the_exact_search_gets_what_the_model_build_left_of_its_limit(monkeypatch):
    """``solve_exact``'s limit covers the model build and the search: CP-SAT gets the limit less the seconds
    already spent, at least 0. A clock that advances 100 s at every reading makes the build take 100 s of a 60 s
    limit: nothing is left, so the search stops at once (``time_limit``, no schedule), where the same instance with
    the same limit is proven optimal when the clock is true (``test_forced_time_limit_gives_a_true_bound``)."""
    inst = random_time_instance(4, 20, 1.0, 1)
    real, readings = time.perf_counter, itertools.count()
    monkeypatch.setattr(time, "perf_counter", lambda: real() + 100.0 * next(readings))
    run = solve_exact(inst.cluster, inst.jobs, "mean-jct", 60.0)
    monkeypatch.undo()
    assert next(readings) >= 2 and run.status == "time_limit" and run.schedule is None


def test_a_hint_is_relabelled_to_the_symmetry_rules():
    """Two identical nodes of 2 GPUs; jobs in order 0, 1, 2 (sharing, 0.5 GPU, all at 0 for 10 s): job 0 on node 0
    GPU 1, job 1 on node 1 GPU 0, job 2 on node 0 GPU 0. Relabelled by the first job that uses each: node 0 (job 0)
    stays node 0, node 1 (job 1) stays node 1; on node 0, GPU 1 (job 0) becomes GPU 0 and GPU 0 (job 2) becomes
    GPU 1; on node 1, GPU 0 stays. The result is still a feasible schedule, and the model's rules hold: a node's
    GPU g > 0 is used only after its GPU g - 1 (job 0 on GPU 0 before job 2 on GPU 1)."""
    cluster = Cluster([32_000] * 2, [65_536] * 2, [2, 2], ["T4"] * 2)
    jobs = jobs_of((1, 500, 0, 10), (1, 500, 0, 10), (1, 500, 0, 10))
    hint = Schedule(np.zeros(3), np.array([0, 1, 0]), ((1,), (0,), (0,)))
    validate_schedule(cluster, jobs, hint)
    sorted_ = _sorted_labels(hint, cluster, np.arange(3))
    assert sorted_.node.tolist() == [0, 1, 0] and sorted_.gpus == ((0,), (0,), (1,))
    assert sorted_.start_s.tolist() == [0.0, 0.0, 0.0]
    validate_schedule(cluster, jobs, sorted_)


def test_a_zero_duration_job_is_placed_and_removed_within_its_instant():
    """One GPU; A (whole GPU, 0 s) and B (whole GPU, 10 s), both submitted at 0; B runs 0-10 and A starts at 10, the
    instant B finishes. The replay at 10: B's finish, A's start, then A's own finish at its start; the state ends
    empty. JCTs 10 (A: 10 - 0) and 10 (B): mean 10, makespan 10."""
    jobs = jobs_of((1, 1000, 0, 0), (1, 1000, 0, 10))
    schedule = Schedule(np.array([10.0, 0.0]), np.array([0, 0]), ((0,), (0,)))
    end = validate_schedule(one_gpu(), jobs, schedule)
    assert end.gpu_left.tolist() == [[1000]] and (end.node_of < 0).all()
    assert objective_value(jobs, schedule, "mean-jct") == 10.0 and objective_value(jobs, schedule, "makespan") == 10.0


def test_a_zero_duration_job_frees_its_gpus_for_a_job_started_at_the_same_instant():
    """One node of 2 GPUs; A (2 GPUs, 0 s) and B (1 GPU, 10 s) at 0. The engine's pass at 0 starts A, whose finish
    is a further instant at 0 (SPEC "Time"), and its pass starts B on a GPU A held: both start at 0. The replay
    placed both before A's removal and refused the engine's own run (found by random ``--scale`` workloads). A
    zero-duration job still needs room beside the jobs running across its instant: A at 5 while B runs is
    refused."""
    cluster = Cluster([32_000], [65_536], [2], ["T4"])
    jobs = jobs_of((2, 1000, 0, 0), (1, 1000, 0, 10))
    _, run = recorded_run(cluster, jobs, "best-fit", "fifo")
    assert run.start_s.tolist() == [0.0, 0.0] and run.gpus == ((0, 1), (0,))
    validate_schedule(cluster, jobs, run)
    with pytest.raises(InfeasiblePlacement, match="at 5.0 s: task 0"):
        validate_schedule(cluster, jobs, Schedule([5.0, 0.0], [0, 0], ((0, 1), (0,))))


def test_the_exact_model_places_zero_duration_jobs_as_the_replay_does():
    """Zero-duration jobs held nothing in CP-SAT's cumulatives (intervals of size 0), so it started one on a GPU
    share a running job held and its schedule failed the replay (found by random ``--scale`` workloads). One GPU,
    jobs of 600 milli-GPU: B (10 s) at 0, A (0 s) at 5: A waits for B's end, mean JCT (5 + 10) / 2. Two zero-duration
    jobs and B at 0 all start at 0 (mean 10 / 3). Two GPUs: A (both whole, 0 s) and B (one, 10 s) at 0 both start
    at 0 (mean 5). Each is proven optimal and replayed (:func:`solve_schedule` validates)."""
    two = Cluster([32_000], [65_536], [2], ["T4"])
    for cluster, jobs, starts, mean in (
            (one_gpu(), jobs_of((1, 600, 5, 0), (1, 600, 0, 10)), [10.0, 0.0], 7.5),
            (one_gpu(), jobs_of((1, 600, 0, 0), (1, 600, 0, 0), (1, 600, 0, 10)), [0.0, 0.0, 0.0], 10 / 3),
            (two, jobs_of((2, 1000, 0, 0), (1, 1000, 0, 10)), [0.0, 0.0], 5.0)):
        res = solve_schedule(cluster, jobs, "mean-jct", 10.0)
        assert res.status == "optimal" and res.schedule.start_s.tolist() == starts
        assert res.value == pytest.approx(mean) and res.bound == pytest.approx(mean)


def test_solves_are_deterministic():
    inst = random_time_instance(4, 20, 0.7, 0)
    a, b = (solve_schedule(inst.cluster, inst.jobs, "makespan", 20.0, seed=3) for _ in range(2))
    assert (a.status, a.value, a.bound) == (b.status, b.value, b.bound)
    r1, r2 = (recorded_run(inst.cluster, inst.jobs, "fgd", "backfill", seed=5)[1] for _ in range(2))
    assert np.array_equal(r1.start_s, r2.start_s, equal_nan=True) and r1.gpus == r2.gpus


def test_a_start_meeting_a_finish_up_to_float_rounding_is_one_instant():
    """One node of 4 cores. A (4 cores, no GPU) from 12.556 s for 0.647 s, B (4 cores) submitted at 13.203 s for
    1 s: B starts as A ends, without waiting; mean JCT (0.647 + 1) / 2 s. Counted in milliseconds, A starts at
    12556 x 0.001 = 12.556000000000001 s and ends at 13.203000000000001 s in floats: that finish and B's start are
    one instant of the replay (else B would start beside A, and the exact model's optimum failed its own replay
    check). A millisecond later, A overlaps B. The model's starts are read back as the submissions are: no wait,
    not 1e-15 s."""
    cluster = Cluster([4000], [65_536], [1], ["T4"])
    jobs = JobSet(TaskSet([4000] * 2, [1024] * 2, [0] * 2, [0] * 2), [12.556, 13.203], [0.647, 1.0])
    a = 12556 * 0.001
    assert a + 0.647 > 13.203
    validate_schedule(cluster, jobs, Schedule([a, 13.203], [0, 0], ((), ())))
    with pytest.raises(InfeasiblePlacement, match="CPU"):
        validate_schedule(cluster, jobs, Schedule([12.557, 13.203], [0, 0], ((), ())))
    res = solve_schedule(cluster, jobs, "mean-jct", 10.0, threads=1)
    assert res.status == "optimal" and res.value == pytest.approx((0.647 + 1) / 2)
    assert res.schedule.start_s.tolist() == [12.556, 13.203] and res.mean_wait_s == 0.0     # read as k / 1000 s


@st.composite
def _millisecond_instances(draw):
    """1-2 nodes of 4 cores and 1-2 GPUs; 2-6 jobs (CPU-only, sharing, whole GPUs) with times in whole milliseconds,
    some submitted together, some of zero duration."""
    n_nodes = draw(st.integers(1, 2))
    cluster = Cluster([4000] * n_nodes, [65_536] * n_nodes, [draw(st.integers(1, 2)) for _ in range(n_nodes)],
                      ["T4"] * n_nodes)
    rows = draw(st.lists(st.tuples(st.sampled_from([(0, 0), (1, 500), (1, 1000), (2, 1000)]),
                                   st.sampled_from([1000, 4000]), st.sampled_from([0, 0, 1283, 12_556]),
                                   st.sampled_from([0, 647, 5000, 27_667])), min_size=2, max_size=6))
    tasks = TaskSet([c for _, c, _, _ in rows], [1024] * len(rows), [g for (g, _), _, _, _ in rows],
                    [m for (_, m), _, _, _ in rows])
    return cluster, JobSet(tasks, [s / 1000 for _, _, s, _ in rows], [d / 1000 for _, _, _, d in rows])


@settings(max_examples=8, deadline=None)
@given(_millisecond_instances())
def test_the_optimum_of_millisecond_times_replays_below_every_run(case):
    """Times in whole milliseconds: the exact model's schedule replays (its own check, in ``solve_schedule``) and is
    proven, its value at most a FIFO run's, which no bound exceeds."""
    cluster, jobs = case
    _, run = recorded_run(cluster, jobs, "best-fit", "fifo")
    res = solve_schedule(cluster, jobs, "mean-jct", 10.0, threads=1)
    if (~rejected_jobs(cluster, jobs)).any():
        assert res.status == "optimal" and res.bound <= res.value <= objective_value(jobs, run, "mean-jct") + 1e-9


def test_replay_rejects_infeasible_schedules():
    """Two whole-GPU jobs overlapping on the one GPU; a start before the submission; an admitted job never
    started: each is named."""
    c, jobs = one_gpu(), jobs_of((1, 1000, 0, 10), (1, 1000, 5, 10))
    validate_schedule(c, jobs, Schedule([0, 10], [0, 0], ((0,), (0,))))
    with pytest.raises(InfeasiblePlacement, match="at 5.0 s: task 1"):
        validate_schedule(c, jobs, Schedule([0, 5], [0, 0], ((0,), (0,))))
    with pytest.raises(InfeasiblePlacement, match="before its submission"):
        validate_schedule(c, jobs, Schedule([0, 4], [0, 0], ((0,), (0,))))
    with pytest.raises(InfeasiblePlacement, match="never starts"):
        validate_schedule(c, jobs, Schedule([0, np.nan], [0, -1], ((0,), ())))


def test_time_unit_keeps_the_problem_exact():
    assert time_unit(np.array([0, 5, 12])) == 1.0
    assert time_unit(np.array([0.5, 1.25])) == 0.01
    with pytest.raises(ValueError, match="milliseconds"):
        time_unit(np.array([0.0001]))


def test_suites_are_seeded_and_sized():
    small = time_suite("small-time")
    assert 20 <= len(small) <= 40
    again = time_suite("small-time")
    assert all(np.array_equal(a.jobs.submit_s, b.jobs.submit_s) for a, b in zip(small, again, strict=True))
    generated = [i for i in small if not i.optimum]
    assert all(4 <= i.cluster.n_nodes <= 16 and 20 <= len(i.jobs) <= 80 for i in generated)
    for inst in generated:                          # one long pin per four nodes, first, and whole-node jobs
        pins = max(1, inst.cluster.n_nodes // SMALL_PIN_EVERY)
        t = inst.jobs.tasks
        assert (inst.jobs.submit_s[:pins] == 0).all() and (inst.jobs.duration_s[:pins] == 3600).all()
        assert (t.num_gpu[:pins] == 1).all() and (t.gpu_milli[:pins] == 1000).all()
    def whole(inst):                                # all the GPUs of a node, 1 core and 1 GiB
        t = inst.jobs.tasks
        return int((np.isin(t.num_gpu, inst.cluster.gpu) & (t.gpu_milli == 1000) & (t.cpu_milli == 1000)
                    & (t.memory_mib == 1024))[max(1, inst.cluster.n_nodes // SMALL_PIN_EVERY):].sum())

    assert 0.25 <= sum(map(whole, generated)) / sum(len(i.jobs) for i in generated) <= 0.35


def test_medium_suite_is_in_its_ranges_seeded_and_makes_jobs_wait():
    """``medium-time``: 8-16 instances of 16-64 nodes (8-GPU nodes among them), 100-1,000 jobs, loads 0.9-1.3,
    each regenerated from its recorded definition; one long pin per eight nodes first, about 30% whole-node jobs;
    and on the smallest instance the engine's best queue (best-fit, shortest first) makes jobs wait: 48.2 s
    mean (14,460 s of wait over 300 jobs, measured; 85% of it on the 8-GPU whole-node jobs waiting for a node to
    drain)."""
    medium = time_suite("medium-time")
    assert 8 <= len(medium) <= 16 and len(medium) == len(MEDIUM_SPECS)
    assert all(16 <= i.cluster.n_nodes <= 64 and 100 <= len(i.jobs) <= 1000 for i in medium)
    assert all(0.9 <= i.definition["load"] <= 1.3 for i in medium)
    assert [(i.cluster.n_nodes, len(i.jobs), i.definition["load"]) for i in medium] == list(MEDIUM_SPECS)
    assert all((i.cluster.gpu == 8).any() for i in medium)
    again = random_time_instance(**medium[3].definition)
    assert again.name == medium[3].name and np.array_equal(again.jobs.submit_s, medium[3].jobs.submit_s)
    assert np.array_equal(again.jobs.duration_s, medium[3].jobs.duration_s)
    assert np.array_equal(again.jobs.tasks.num_gpu, medium[3].jobs.tasks.num_gpu)
    for inst in medium:
        pins, t = inst.definition["pins"], inst.jobs.tasks
        assert pins == max(1, inst.cluster.n_nodes // 8)
        assert (inst.jobs.duration_s[:pins] == 3600).all() and (t.num_gpu[:pins] == 1).all()
    whole = sum(int((np.isin(t.num_gpu, i.cluster.gpu) & (t.gpu_milli == 1000) & (t.cpu_milli == 1000)
                     & (t.memory_mib == 1024))[i.definition["pins"]:].sum()) for i in medium for t in [i.jobs.tasks])
    assert 0.25 <= whole / sum(len(i.jobs) for i in medium) <= 0.35
    small = min(medium, key=lambda i: len(i.jobs) * i.cluster.n_nodes)
    _, sched = recorded_run(small.cluster, small.jobs, "best-fit", "sjf")
    assert objective_value(small.jobs, sched, "mean-wait") == pytest.approx(48.2, abs=0.05)


def test_cli_jobs_1_equals_jobs_2_and_keeps_other_files(tmp_path):
    keep = tmp_path / "one" / "mine.txt"
    keep.parent.mkdir()
    keep.write_text("keep")
    args = ["--instances", "traps", "--policies", "best-fit", "--queue", "fifo,sjf", "--time-limit", "10"]
    assert main([*args, "--jobs", "1", "--output", str(tmp_path / "one")]) == 0
    assert main([*args, "--jobs", "2", "--output", str(tmp_path / "two")]) == 0
    one, two = (pd.read_csv(tmp_path / d / "schedule.csv").drop(columns="wall_s") for d in ("one", "two"))
    pd.testing.assert_frame_equal(one, two)
    assert (one[one["method"] == "optimum"]["status"] == "optimal").all()
    assert keep.read_text() == "keep" and (tmp_path / "one" / "gantt.png").is_file()




def test_cli_starts_say_which_job_is_rejected_and_why(tmp_path):
    """The workload of test_rejected_jobs_leave_both_sides as files: job a (2 GPUs) fits no node of one GPU."""
    import json

    (tmp_path / "w.csv").write_text("name,submit_s,duration_s,num_gpu,cpu_milli,memory_mib\n"
                                    "a,0,100,2,0,0\nb,0,5,1,0,0\n")
    (tmp_path / "c.json").write_text(json.dumps({"nodes": one_gpu().to_records()}))
    assert main(["--workload", str(tmp_path / "w.csv"), "--cluster", str(tmp_path / "c.json"), "--policies",
                 "best-fit", "--queue", "fifo", "--time-limit", "5", "--output", str(tmp_path / "o")]) == 0
    starts = pd.read_csv(tmp_path / "o" / "starts.csv", keep_default_na=False)
    assert starts[["job", "node", "status", "reason"]].values.tolist() == [
        ["a", -1, "rejected", "gpus"], ["b", 0, "finished", ""]] * 4   # 2 objectives x (the optimum, the best run)


def test_the_value_table_shows_every_digit_of_large_times():
    """Jobs submitted at 10^12 s: the makespans of fifo (10^12 + 22 s) and of the optimum (10^12 + 17 s) both read
    "1e+12" in schedule.md (Markdown's 6 significant digits), hiding the 5 s between them."""
    from experiments.schedule import tables

    frame = pd.DataFrame({"instance": ["far"] * 2, "objective": ["makespan"] * 2, "method": ["fgd/fifo", "optimum"],
                          "value": [1e12 + 22, 1e12 + 17], "bound": [1e12 + 17] * 2,
                          "status": ["engine", "optimal"], "gap_pct": [5e-10, 0.0], "wall_s": [0.1, 0.1]})
    row = next(line for line in tables(frame).splitlines() if line.startswith("| far"))
    assert [c.strip() for c in row.strip("|").split("|")] == ["far", "1000000000022", "1000000000017",
                                                              "1000000000017", "optimal"]
