"""The node-aware lower bounds of the offline schedule: the configuration LP and the node-schedule decomposition.

Hand-worked instances (values derived in each docstring), validity against the proven optimum (or any validated
schedule) on the traps and part of ``small-time``, time limits, determinism, and the configuration knapsack
against brute force.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fgdopt import Cluster, TaskSet
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import recorded_run, validate_schedule
from fgdopt.timeline.suites import time_suite, trap_instances
from formulations.schedule import pooled_bound, solve_schedule
from formulations.schedule.configlp import LINE_SEARCH, busy_edges, config_bound, knapsack
from formulations.schedule.nodedecomp import nodedecomp_bound, window_subsets
from formulations.schedule.record import BoundRecord, pooled_record


def _gpu_jobs(n_nodes: int, gpus: int, rows: list[tuple[int, float, float]]) -> tuple[Cluster, JobSet]:
    """``n_nodes`` nodes of ``gpus`` whole GPUs; jobs ``(num_gpu, submit_s, duration_s)`` of whole GPUs."""
    cluster = Cluster([64_000] * n_nodes, [262_144] * n_nodes, [gpus] * n_nodes, ["V100"] * n_nodes)
    n = len(rows)
    tasks = TaskSet([1000] * n, [1024] * n, [g for g, _, _ in rows], [1000] * n)
    return cluster, JobSet(tasks, [s for _, s, _ in rows], [d for _, _, d in rows])


def pins() -> tuple[Cluster, JobSet]:
    """Three 5-GPU jobs pin three 8-GPU nodes against an 8-GPU job: optimum mean wait 2.5 s, pooled bound 0.

    Three nodes of 8 GPUs; at t = 0 three 5-GPU jobs of 100 s and one 8-GPU job of 10 s. No two of the four share
    a node (5 + 5 > 8, 5 + 8 > 8), so one of them waits. The only job that can end before 100 s is the 8-GPU one
    (at 10 s at the earliest), so whoever waits, waits at least 10 s: total >= 10. Reached by the 8-GPU job on
    the third node 0-10 and the third 5-GPU job there 10-110: mean wait 10 / 4 = 2.5 s. Pooled, starting
    everything at once uses 3 * 5 + 8 = 23 <= 24 GPUs (CPU and memory ample): every pooled relaxation gives 0.
    """
    return _gpu_jobs(3, 8, [(5, 0, 100), (5, 0, 100), (5, 0, 100), (8, 0, 10)])


def drain() -> tuple[Cluster, JobSet]:
    """A whole-node job must wait for a node to drain: optimum mean wait 4 s, pooled bound 0.

    Four nodes of 4 GPUs; four 3-GPU jobs submitted at 0 (30 s) and a 4-GPU job at 10 s (100 s). No two 3-GPU
    jobs share a node (6 > 4) and none shares with the 4-GPU job (7 > 4). If all four 3-GPU jobs start at 0, the
    4-GPU job waits until the first ends: 30 - 10 = 20 s. If it starts at ``S < 30`` instead, the node it uses
    runs no 3-GPU job during ``[S, S + 100)``, so one 3-GPU job either ends by ``S < 30`` (impossible: it is
    30 s long and submitted at 0) or starts at ``>= S + 100 >= 110``: a wait of at least 110 s. So the optimum
    total wait is 20 s, mean 20 / 5 = 4 s. Pooled: 4 * 3 + 4 = 16 GPUs, the whole cluster: 0.
    """
    return _gpu_jobs(4, 4, [(3, 0, 30), (3, 0, 30), (3, 0, 30), (3, 0, 30), (4, 10, 100)])


@pytest.mark.parametrize(("make", "optimum", "grid"), [(pins, 2.5, {}),
                                                       (drain, 4.0, {"intervals": 8, "horizon_s": 80.0})])
def test_hand_cases_pooled_zero_node_aware_exact(make, optimum, grid):
    cluster, jobs = make()
    exact = solve_schedule(cluster, jobs, time_limit=30)
    assert exact.status == "optimal" and exact.mean_wait_s == pytest.approx(optimum)
    pooled = pooled_record(pooled_bound(cluster, jobs, step_s=1.0))
    assert pooled.status == "optimal" and pooled.wait_s == 0.0
    config = config_bound(cluster, jobs, **grid)
    assert config.status == "optimal" and config.wait_s == pytest.approx(optimum, rel=1e-5)
    assert config.wait_s <= optimum
    decomp = nodedecomp_bound(cluster, jobs)
    assert decomp.status == "optimal" and decomp.wait_s == pytest.approx(optimum, rel=1e-5)
    assert decomp.wait_s <= optimum
    for b in (pooled, config, decomp):
        assert isinstance(b, BoundRecord) and b.valid_for == "all"
        assert b.jct_s == pytest.approx(b.wait_s + float(jobs.duration_s.mean()))


def _instances():
    """The traps and ``time-n8-j24-l1.8-s4`` of ``small-time`` (CP-SAT proves its optimum, 2.417 s, in about 1 CPU
    s, and the configuration bound meets it: the tightest of the suite's checks, measured over all 24), then, as
    further runs of the same check (``extended``), four more of ``small-time``."""
    small = time_suite("small-time")
    return [small[4], *trap_instances(), *(pytest.param(small[i], marks=pytest.mark.extended) for i in (0, 3, 5, 9))]


@pytest.mark.slow
@pytest.mark.parametrize("inst", _instances(), ids=lambda i: i.name)
def test_bounds_below_every_schedule_and_the_optimum(inst):
    """Every bound is at most the wait of the exact model's schedule (validated by replay; the optimum when
    proven), of an engine run (``best-fit/sjf``, validated here: on a loaded machine the exact model may stop
    without a schedule) and of the trap's hand-derived optimum."""
    res = solve_schedule(inst.cluster, inst.jobs, time_limit=4, deterministic_time=20)
    _, run = recorded_run(inst.cluster, inst.jobs, "best-fit", "sjf")
    validate_schedule(inst.cluster, inst.jobs, run)
    best = float(np.nanmean(run.start_s - inst.jobs.submit_s))
    if np.isfinite(res.mean_wait_s):
        best = min(best, res.mean_wait_s)
    if "mean-jct" in inst.optimum:
        best = min(best, inst.optimum["mean-jct"] - float(inst.jobs.duration_s.mean()))
    # the node decomposition proves the traps in < 0.05 s; on time-n8-j24-l1.8-s4 it stops on its limit at the
    # optimum, 2.417 s, given 0.5, 1 or 2 s (measured)
    for b in (config_bound(inst.cluster, inst.jobs, time_limit=20),
              config_bound(inst.cluster, inst.jobs, time_limit=20, busy_share=0.5, max_iter=3,
                           line_search=LINE_SEARCH),
              nodedecomp_bound(inst.cluster, inst.jobs, time_limit=1, pricing_limit=0.5)):
        assert b.wait_s >= 0
        assert b.wait_s <= best + 1e-9, (b.name, b.wait_s, best)


def test_config_bound_sees_the_traps_optima():
    """On the one-GPU traps the configuration bound meets the optimum (shortest first: 1/3 (0 + 1 + 3) = 4/3 s),
    on an even grid and on a grid with most intervals on the busy moments (all of ``[0, 6)``)."""
    inst = trap_instances()[0]
    for share in (0.0, 0.8):
        b = config_bound(inst.cluster, inst.jobs, intervals=64, busy_share=share)
        assert b.status == "optimal" and b.wait_s == pytest.approx(4 / 3, rel=1e-5)


def test_time_limits_give_valid_bounds():
    cluster, jobs = pins()
    stopped = config_bound(cluster, jobs, time_limit=0.0)
    assert stopped.status == "time_limit" and stopped.wait_s == 0.0
    one = config_bound(cluster, jobs, max_iter=1)
    assert one.status == "iteration_limit" and 0.0 <= one.wait_s <= 2.5
    stopped = nodedecomp_bound(cluster, jobs, time_limit=0.0)
    assert stopped.status == "time_limit" and 0.0 <= stopped.wait_s <= 2.5
    inst = time_suite("small-time")[2]
    short = nodedecomp_bound(inst.cluster, inst.jobs, time_limit=0.3, pricing_limit=0.05)  # it needs > 2 s
    assert short.status == "time_limit" and 0.0 <= short.wait_s <= 154.9  # best-fit/sjf's wait (validated)


def test_busy_edges_hand_case():
    """The docstring's example: [0, 100) in 4 intervals, half of them on the busy [0, 50): ``F(t) = t / 200 +
    min(t, 50) / 100``, so ``F^-1(k / 4)`` = 0, 50/3, 100/3, 50, 100; below capacity the grid is even."""
    start, end = np.array([0.0]), np.array([50.0])
    edges = busy_edges(0.0, 100.0, 4, start, end, np.array([4]), 4.0, 0.5)
    assert edges == pytest.approx([0, 50 / 3, 100 / 3, 50, 100])
    assert busy_edges(0.0, 100.0, 4, start, end, np.array([3]), 4.0, 0.5) == pytest.approx([0, 25, 50, 75, 100])


def test_line_search_gives_a_bound_where_the_first_duals_give_none():
    """Stopped after one round, the master's duals give L <= 0 on the drain case; the best point on the segment
    from 0 to them is positive, and stays below the optimum (4 s). Uneven grids stay valid and exact there."""
    cluster, jobs = drain()
    plain = config_bound(cluster, jobs, intervals=8, horizon_s=80.0, max_iter=1)
    searched = config_bound(cluster, jobs, intervals=8, horizon_s=80.0, max_iter=1, line_search=LINE_SEARCH)
    assert plain.status == searched.status == "iteration_limit"
    assert plain.wait_s == 0.0 and 0.5 < searched.wait_s <= 4.0
    again = config_bound(cluster, jobs, intervals=8, horizon_s=80.0, max_iter=1, line_search=LINE_SEARCH)
    assert again.wait_s == searched.wait_s
    in_out = config_bound(cluster, jobs, intervals=8, horizon_s=80.0, line_search=LINE_SEARCH, in_out=True)
    assert in_out.status == "optimal" and in_out.wait_s == pytest.approx(4.0, rel=1e-5)   # the same LP optimum
    uneven = config_bound(cluster, jobs, intervals=8, horizon_s=80.0, busy_share=0.5, line_search=LINE_SEARCH)
    assert uneven.status == "optimal" and uneven.wait_s <= 4.0
    stopped = config_bound(cluster, jobs, time_limit=0.0, line_search=LINE_SEARCH)
    assert stopped.status == "time_limit" and stopped.wait_s == 0.0


def test_subgradient_steps_raise_a_stopped_bound():
    """On the pins case (optimum 2.5 s) one round leaves L <= 0 on the whole segment to the master's duals;
    projected subgradient steps from there reach a positive bound, below the optimum, deterministically."""
    cluster, jobs = pins()
    searched = config_bound(cluster, jobs, max_iter=1, line_search=LINE_SEARCH)
    climbed = [config_bound(cluster, jobs, max_iter=1, line_search=LINE_SEARCH, ascent_steps=20) for _ in range(2)]
    assert searched.wait_s == 0.0
    assert 1.0 < climbed[0].wait_s <= 2.5 and climbed[0].wait_s == climbed[1].wait_s
    assert climbed[0].status == "iteration_limit"


def test_bounds_are_deterministic():
    inst = time_suite("small-time")[1]
    a, b = (config_bound(inst.cluster, inst.jobs) for _ in range(2))
    assert a.wait_s == b.wait_s and a.info["iterations"] == b.info["iterations"]
    # subsets of 8: 7 column-generation rounds over 3 subsets in 0.17 CPU s (subsets of 10: 15 rounds, 0.51 s)
    c, d = (nodedecomp_bound(inst.cluster, inst.jobs, subset_size=8) for _ in range(2))
    assert c.wait_s == d.wait_s and c.status == d.status == "optimal"


def test_window_subsets_are_disjoint_runs_in_submission_order():
    inst = time_suite("small-time")[1]
    rows = np.arange(len(inst.jobs))
    subs = window_subsets(inst.jobs, rows, 7)
    assert [len(s) for s in subs] == [7, 7, 7, 3]
    flat = np.concatenate(subs)
    assert sorted(flat.tolist()) == rows.tolist()
    assert (np.diff(inst.jobs.submit_s[flat]) >= 0).all()
    with pytest.raises(ValueError, match="disjoint"):
        nodedecomp_bound(inst.cluster, inst.jobs, subsets=[rows[:3], rows[2:5]])


def test_knapsack_matches_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(30):
        n_q = int(rng.integers(1, 4))
        weights = np.column_stack([rng.integers(0, 5, n_q), rng.integers(1, 9, n_q)])
        prices = np.round(rng.random((3, n_q)) * 10, 2)
        cap_h, cap_u = int(rng.integers(1, 9)), int(rng.integers(1, 17))
        value, counts = knapsack(weights, prices, cap_h, cap_u)
        for k in range(3):
            best = 0.0
            for a in itertools.product(range(cap_u + 1), repeat=n_q):
                a = np.array(a)
                if (a @ weights <= [cap_h, cap_u]).all():
                    best = max(best, float(a @ prices[k]))
            assert value[k] == pytest.approx(best)
            assert (counts[k] @ weights <= [cap_h, cap_u]).all()
            assert float(counts[k] @ prices[k]) == pytest.approx(best)


def test_half_gpu_jobs_share_a_gpu():
    """One node of one GPU; two 500 milli-GPU jobs at t = 0 (100 s) share the GPU: optimum wait 0, so every
    bound is 0 (the dual-feasible function counts each as half a GPU, not a whole one). With a third such job
    one waits 100 s: mean 100 / 3, which the configuration LP meets (at most two halves per GPU at a time)."""
    cluster = Cluster([32_000], [65_536], [1], ["T4"])
    two = JobSet(TaskSet([1000] * 2, [1024] * 2, [1, 1], [500, 500]), [0, 0], [100, 100])
    assert config_bound(cluster, two).wait_s == 0.0
    assert nodedecomp_bound(cluster, two).wait_s == 0.0
    three = JobSet(TaskSet([1000] * 3, [1024] * 3, [1, 1, 1], [500, 500, 500]), [0, 0, 0], [100, 100, 100])
    assert config_bound(cluster, three).wait_s == pytest.approx(100 / 3, rel=1e-5)
    assert nodedecomp_bound(cluster, three).wait_s == pytest.approx(100 / 3, rel=1e-5)


@pytest.mark.parametrize(("milli", "wait_s"), [(500, 0.0), (501, 5.0)])
def test_config_bound_at_half_a_gpu(milli, wait_s):
    """Two jobs of ``milli`` on one GPU for 10 s, both submitted at 0: two halves share it (optimum 0 s), two jobs
    above half a GPU run one after the other (mean wait 5 s). The configuration LP's half-GPU counts prove exactly
    that: at most the optimum, and tight."""
    cluster = Cluster([8000], [8192], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 2, [0] * 2, [1] * 2, [milli] * 2), [0.0, 0.0], [10.0, 10.0])
    bound = config_bound(cluster, jobs, intervals=8)
    assert bound.status == "optimal" and wait_s - 1e-4 <= bound.wait_s <= wait_s


def test_config_bound_on_two_job_classes_below_the_hand_optimum():
    """One 2-GPU node; at 0 a 2-GPU job A and two 501-milli jobs B, C, at 5 s a 600-milli job D, all of 10 s. No two
    of B, C, D share a GPU and A needs both: the best is B, C at 0, A at 10, D at 20 (waits 10 + 15, mean 6.25 s;
    every other order waits more). The configuration LP over its two classes (whole-node, above half a GPU)
    converges below it (4.84 s measured: the LP lets a job's work split across configurations)."""
    cluster = Cluster([8000], [8192], [2], ["T4"])
    jobs = JobSet(TaskSet([1000] * 4, [0] * 4, [2, 1, 1, 1], [1000, 501, 501, 600]), [0.0, 0.0, 0.0, 5.0],
                  [10.0] * 4)
    bound = config_bound(cluster, jobs, intervals=16)
    assert bound.info["classes"] == 2 and bound.status == "optimal"
    assert 4.8 <= bound.wait_s <= 6.25
    _, sched = recorded_run(cluster, jobs, "best-fit", "fifo")
    validate_schedule(cluster, jobs, sched)
    assert float((sched.start_s - jobs.submit_s).mean()) >= 6.25


@pytest.mark.parametrize("gpus", [0, 1])
def test_config_bound_of_cpu_only_jobs(gpus):
    """Jobs without GPUs form no class of the configuration LP (with none at all it priced an empty class table:
    IndexError, found by ``experiments.schedule --scale`` on a CPU-only cluster). One node of 4 cores; three
    CPU-only jobs of 3 cores at t = 0 (100 s): pooled, 4/3 of a job runs at a time, so the LP starts job 2 a third
    at 0 and two thirds at 100 s, job 3 two thirds at 100 and a third at 200 s: mean wait (0 + 66.7 + 133.3) / 3;
    the optimum runs them one by one (100 s)."""
    cluster = Cluster([4000], [65_536], [gpus], ["T4" if gpus else ""])
    jobs = JobSet(TaskSet([3000] * 3, [1024] * 3, [0] * 3, [0] * 3), [0, 0, 0], [100, 100, 100])
    b = config_bound(cluster, jobs)
    assert b.status == "optimal" and b.wait_s == pytest.approx(200 / 3, rel=1e-4)
    assert b.wait_s <= solve_schedule(cluster, jobs, time_limit=10).mean_wait_s == pytest.approx(100.0)


def test_config_bound_counts_a_multi_gpu_job_by_all_its_gpus():
    """One 4-GPU node; at 0 a 2-GPU job and three 600-milli jobs, all of 10 s. No two 600s share a GPU, so all four
    need 5 GPUs: one waits 10 s (optimum mean 2.5 s, proven). Only the half-GPU counts see it (2 x 2 + 3 x 2 = 10
    halves > 8; the milli-GPUs, 3,800 <= 4,000, fit): the LP's bound is above 0 (1.25 s measured) and at most the
    optimum. Counting the 2-GPU job as one GPU's two halves made the bound 0."""
    cluster = Cluster([8000], [8192], [4], ["T4"])
    jobs = JobSet(TaskSet([1000] * 4, [0] * 4, [2, 1, 1, 1], [1000, 600, 600, 600]), [0.0] * 4, [10.0] * 4)
    assert solve_schedule(cluster, jobs, "mean-jct", 10.0).mean_wait_s == pytest.approx(2.5)
    bound = config_bound(cluster, jobs, intervals=8)
    assert bound.status == "optimal" and 1.2 <= bound.wait_s <= 2.5
