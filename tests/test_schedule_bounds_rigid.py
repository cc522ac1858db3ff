"""The rigid-start Lagrangian bound on pooled capacities (:mod:`formulations.schedule.rigid`).

Hand-worked instances (values derived in each docstring), the dual-feasible GPU counts against exact arithmetic,
validity against the proven optimum of every ``small-time`` instance and trap, and against engine runs on random
instances (hypothesis).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgdopt import Cluster, TaskSet
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import recorded_run, rejected_jobs, validate_schedule
from fgdopt.timeline.suites import time_suite, trap_instances
from formulations.schedule import pooled_bound, pooled_record
from formulations.schedule.configlp import config_bound
from formulations.schedule.rigid import _Prices, cheapest_starts, dff_count, dff_is_feasible, rigid_bound, usage

SMALL_TIME_JCT = {
    "time-n6-j24-l1.6-s0": 602.2083333333334, "time-n6-j24-l1.8-s1": 517.5, "time-n6-j24-l2-s2": 611.3333333333334,
    "time-n8-j24-l1.6-s3": 654.9583333333334, "time-n8-j24-l1.8-s4": 551.2916666666666,
    "time-n8-j24-l2-s5": 476.4583333333333, "time-n8-j30-l1.6-s6": 594.3666666666667,
    "time-n8-j30-l1.8-s7": 596.3666666666667, "time-n8-j30-l2-s8": 722.7666666666667,
    "time-n10-j30-l1.6-s9": 485.1333333333333, "time-n10-j30-l1.8-s10": 514.9666666666667,
    "time-n10-j30-l2-s11": 549.8, "time-n12-j36-l1.6-s12": 711.7222222222222,
    "time-n12-j36-l1.8-s13": 613.7222222222222, "time-n12-j36-l2-s14": 653.0555555555555,
    "time-n12-j40-l1.6-s15": 611.925, "time-n12-j40-l1.8-s16": 715.2, "time-n12-j40-l2-s17": 604.15,
    "time-n16-j40-l1.6-s18": 662.475, "time-n16-j40-l1.8-s19": 805.8, "time-n16-j40-l2-s20": 658.95,
    "time-n16-j48-l1.6-s21": 600.9166666666666, "time-n16-j48-l1.8-s22": 634.8125, "time-n16-j48-l2-s23": 622.375}
"""Mean JCT (seconds) of the exact model's schedule per ``small-time`` instance (``paper/results/schedule``,
``--time-limit 60``): the proven optimum for 17 of them, a validated schedule (at least the optimum) for the rest."""


def _jobs(n_gpus: int, rows: list[tuple[int, int, float, float]]) -> tuple[Cluster, JobSet]:
    """One node of ``n_gpus`` GPUs; jobs ``(num_gpu, gpu_milli, submit_s, duration_s)``."""
    cluster = Cluster([64_000], [262_144], [n_gpus], ["V100"])
    n = len(rows)
    tasks = TaskSet([1000] * n, [1024] * n, [g for g, _, _, _ in rows], [m for _, m, _, _ in rows])
    return cluster, JobSet(tasks, [s for _, _, s, _ in rows], [d for _, _, _, d in rows])


def test_dff_counts_hand_values_and_feasibility():
    """``u_1``: 500 -> 1/2, 501 -> 1, 499 -> 0; ``u_2``: 333 -> 0, 334 -> 1/2, 666 -> 1/2, 667 -> 1; whole -> 1.
    Every multiset of up to four shares fitting one GPU counts at most one GPU under ``u_1``, ``u_2``, ``u_3``
    (exact arithmetic), the shares drawn from the thresholds ``1000 i / (k + 1)`` (k = 1..3) and their neighbours,
    where the counts jump."""
    assert dff_count(np.array([500, 501, 499, 1000, 0]), 1).tolist() == [0.5, 1.0, 0.0, 1.0, 0.0]
    assert dff_count(np.array([333, 334, 666, 667, 1000]), 2).tolist() == [0.0, 0.5, 0.5, 1.0, 1.0]
    shares = sorted({1000 * i // (k + 1) + d for k in (1, 2, 3) for i in range(1, k + 1) for d in (-1, 0, 1)} | {1})
    for k in (1, 2, 3):
        for m in (2, 3, 4):
            for combo in itertools.combinations_with_replacement(shares, m):
                if sum(combo) <= 1000:
                    assert dff_is_feasible(k, list(combo)), (k, combo)


def test_shares_above_half_wait_where_pooled_milli_gpu_sees_room():
    """Two GPUs; three jobs of 600 milli-GPU on one GPU each, submitted at 0 for 10 s: optimum mean wait 10/3 s.

    Two such jobs never share a GPU (1200 > 1000), so one waits until another ends: total wait >= 10, met by
    starting it at 10. Pooled milli-GPU, 1800 <= 2000: the pooled LP gives 0. Counted by ``u_1`` each job holds a
    whole GPU; on the grid with an edge at 10 the averaged row of ``[0, 10)`` reads ``sum_j (10 - S_j) / 10 <= 2``,
    i.e. ``sum_j S_j >= 10``: the relaxation's optimum is the optimum, 10 / 3 s (the ascent stops near it)."""
    cluster, jobs = _jobs(2, [(1, 600, 0.0, 10.0)] * 3)
    assert pooled_record(pooled_bound(cluster, jobs, step_s=1.0)).wait_s == 0.0
    b = rigid_bound(cluster, jobs, intervals=4, horizon_s=40.0, busy_share=0.0, max_iter=400, time_limit=30)
    assert b.valid_for == "all" and b.name == "rigid"
    assert 0.97 * 10 / 3 <= b.wait_s <= 10 / 3
    assert b.jct_s == pytest.approx(b.wait_s + 10.0)
    plain = rigid_bound(cluster, jobs, intervals=4, horizon_s=40.0, busy_share=0.0, dff=(), max_iter=400)
    assert plain.status == "optimal" and plain.wait_s == 0.0           # milli-GPU alone: everyone at 0


def test_rigid_starts_beat_the_rate_relaxation():
    """One GPU; at 0 a whole-GPU job A of 10 s and a job B of 1 s: optimum mean wait 1/2 s (B first, A at 1).

    The relaxation on unit intervals over ``[0, 20)`` is exact here: with starts ``a, b`` in ``[0, 1]`` the row of
    ``[0, 1)`` reads ``(1 - a) + (1 - b) <= 1`` and that of ``[1, 2)`` ``1 + b <= 1`` (A covers it), so ``b = 0``,
    ``a >= 1``; and B later than 1 costs more than 1 (it cannot run inside A's 10 s). Mixing starts does not help
    (B at 0 with weight ``beta``, else at 10 behind A: rows ``[0, 1)`` and ``[10, 11)`` give a cost ``10 - 9 beta``).
    The ascent proves the value 1/2 (status ``optimal``); the pooled rate LP (a job may run at half speed) gives
    0.225 s on the same unit grid."""
    cluster, jobs = _jobs(1, [(1, 1000, 0.0, 10.0), (1, 1000, 0.0, 1.0)])
    b = rigid_bound(cluster, jobs, intervals=20, horizon_s=20.0, busy_share=0.0, max_iter=1000, time_limit=30)
    assert b.status == "optimal" and b.wait_s == pytest.approx(0.5, rel=1e-5) and b.wait_s <= 0.5
    assert pooled_bound(cluster, jobs, step_s=1.0).mean_wait_s == pytest.approx(0.225, rel=1e-4)


def test_cheapest_starts_and_usage_against_brute_force():
    """At random prices, every job's cheapest cost equals the minimum over a fine scan of starts (0.01 s steps;
    the candidates are exact, the scan can only be higher), and the usage of the chosen starts equals the overlap
    computed interval by interval."""
    rng = np.random.default_rng(5)
    edges = np.array([0.0, 1.0, 2.5, 3.0, 5.0, 8.0])
    y = rng.random((2, 5)) * 3
    prices = _Prices(edges, y)
    r = rng.random(12) * 4
    p = rng.random(12) * 4 + 0.1
    a = rng.random((12, 2))
    low, start = cheapest_starts(r, p, a, prices)
    assert (start >= r).all()
    for j in range(12):
        s = r[j] + np.arange(0, 10, 0.01)
        scan = s - r[j] + a[j] @ (prices.integral(s + p[j]) - prices.integral(s))
        at = start[j] - r[j] + a[j] @ (prices.integral(np.array([start[j] + p[j]])) -
                                       prices.integral(np.array([start[j]])))[:, 0]
        assert low[j] == pytest.approx(float(at[0]) if np.ndim(at) else float(at))
        assert low[j] <= scan.min() + 1e-9
        assert low[j] >= scan.min() - 0.01 * (1 + 3 * 3 * a[j].sum() / 0.5) - 1e-9
    u = usage(start, p, a, edges)
    lo, hi = edges[:-1], edges[1:]
    ov = np.clip(np.minimum(hi[None, :], (start + p)[:, None]) - np.maximum(lo[None, :], start[:, None]), 0, None)
    assert u == pytest.approx((a.T @ ov) / np.diff(edges), abs=1e-9)


@pytest.mark.parametrize("inst", [*time_suite("small-time")[:24], *trap_instances()], ids=lambda i: i.name)
def test_below_the_proven_optimum(inst):
    """At most the exact model's schedule (the proven optimum for most) of every ``small-time`` instance and the
    traps' hand-derived optima (a fixed number of ascent steps: deterministic)."""
    admitted = ~rejected_jobs(inst.cluster, inst.jobs)
    mean_p = float(inst.jobs.duration_s[admitted].mean())
    jct = SMALL_TIME_JCT.get(inst.name, inst.optimum.get("mean-jct"))
    b = rigid_bound(inst.cluster, inst.jobs, intervals=64, max_iter=150, time_limit=60)
    assert 0.0 <= b.wait_s <= jct - mean_p + 1e-9, (b.wait_s, jct - mean_p)


def test_reaches_the_optimum_on_a_trap():
    """The shortest-first trap (one GPU, optimum 4/3 s): the relaxation is exact there and the ascent proves it."""
    inst = trap_instances()[0]
    b = rigid_bound(inst.cluster, inst.jobs, intervals=64, max_iter=500)
    assert b.status == "optimal" and b.wait_s == pytest.approx(4 / 3, rel=1e-5)


def test_a_forced_time_limit_gives_a_valid_bound():
    """Stopped at once (``time_limit=0``: after the first step, at zero prices, whose starts overlap on the one GPU),
    the shortest-first trap's bound has status ``time_limit`` and stays within [0, 4/3] s, the optimum."""
    inst = trap_instances()[0]
    b = rigid_bound(inst.cluster, inst.jobs, intervals=64, time_limit=0.0)
    assert b.status == "time_limit" and b.info["iterations"] <= 1
    assert 0.0 <= b.wait_s <= 4 / 3


@st.composite
def _instances(draw):
    n_nodes = draw(st.integers(1, 3))
    gpus = draw(st.sampled_from([2, 4, 8]))
    n = draw(st.integers(2, 9))
    rows = []
    for _ in range(n):
        whole = draw(st.booleans())
        g = draw(st.integers(1, gpus)) if whole else 1
        m = 1000 if whole else draw(st.sampled_from([200, 340, 500, 600, 810]))
        rows.append((g, m, float(draw(st.integers(0, 20))), float(draw(st.integers(1, 30)))))
    cluster = Cluster([64_000] * n_nodes, [262_144] * n_nodes, [gpus] * n_nodes, ["V100"] * n_nodes)
    tasks = TaskSet([1000] * n, [1024] * n, [g for g, _, _, _ in rows], [m for _, m, _, _ in rows])
    return cluster, JobSet(tasks, [s for _, _, s, _ in rows], [d for _, _, _, d in rows])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_instances())
def test_below_every_engine_run(instance):
    """On random instances (whole-GPU and sharing jobs on 1-3 nodes) the bound is at most the mean wait of every
    engine run (each validated by replay)."""
    cluster, jobs = instance
    b = rigid_bound(cluster, jobs, intervals=32, max_iter=60)
    for policy, queue in (("best-fit", "sjf"), ("fgd", "fifo")):
        _, run = recorded_run(cluster, jobs, policy, queue)
        validate_schedule(cluster, jobs, run)
        assert b.wait_s <= float(np.nanmean(run.start_s - jobs.submit_s)) + 1e-9


def test_grid_bounds_share_the_counted_jobs_and_horizon():
    """Both time-grid bounds count the jobs some empty node holds: a 16-GPU job on 8-GPU nodes is left out, and the
    default horizon is the last submission plus a tenth of the submission span plus twice the median duration
    (10 + 1 + 2 * 20 = 51 s); a counted job that never ends is refused in one line by both."""
    from formulations.schedule.record import counted_jobs

    cluster = Cluster([64_000] * 2, [262_144] * 2, [8] * 2, ["V100"] * 2)
    jobs = JobSet(TaskSet([1000] * 3, [1024] * 3, [8, 16, 8], [1000] * 3), [0.0, 5.0, 10.0], [20.0, 20.0, 20.0])
    counted = counted_jobs(cluster, jobs, None, 8)
    assert counted.rows.tolist() == [0, 2] and (counted.t0, counted.horizon_s) == (0.0, 51.0)
    assert counted_jobs(cluster, jobs, 1e-6, 8).horizon_s == pytest.approx(8e-3)    # at least 1 ms per interval
    endless = JobSet(jobs.tasks, jobs.submit_s, [20.0, 20.0, np.inf])
    for bound in (config_bound, rigid_bound):
        with pytest.raises(ValueError, match="never finishes"):
            bound(cluster, endless)


def test_a_grid_finer_than_float64_resolves_at_1e15_s():
    """Five jobs submitted at 10^15 s + 0..4 s (float64 tells times 1/8 s apart there): the grid's 1,024 intervals
    over about 12 s had 941 of width 0, and the ascent divided by them (NaN usage, then an IndexError in the
    cheapest starts, a traceback from ``experiments.schedule --scale``). The edges are now distinct; the bound
    holds below the best schedule's mean wait (2.2 s: shortest first around the 2-GPU job)."""
    from formulations.schedule.configlp import busy_edges

    start = 1e15 + np.arange(5.0)
    end = start + np.array([10.0, 5.0, 1e-3, 3.0, 1.0])
    edges = busy_edges(1e15, 1e15 + 12.0, 1024, start, end, np.array([2, 4, 2, 2, 2]), 4.0, 0.5)
    assert (np.diff(edges) > 0).all() and edges[0] == 1e15 and edges[-1] == 1e15 + 12.0 and len(edges) == 97
    jobs = JobSet(TaskSet([1000] * 5, [1000] * 5, [1, 2, 1, 1, 1], [1000] * 5), start, end - start)
    bound = rigid_bound(Cluster([96_000], [786_432], [2], ["V100"]), jobs, time_limit=2.0)
    assert bound.status in ("optimal", "iteration_limit", "time_limit") and 0.5 < bound.wait_s <= 2.2
