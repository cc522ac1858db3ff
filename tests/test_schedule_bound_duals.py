"""The bound certified by any row duals (:func:`formulations.schedule.bound.dual_bound`), and the pooled LP's use of it
when the interior point method stops early or short of its tolerances."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import formulations.schedule.bound as bound_module
from fgdopt import Cluster, TaskSet
from fgdopt.timeline import JobSet
from formulations.highs import build_highs, highs_lp, solve
from formulations.schedule.bound import dual_bound, pooled_bound


def test_docstring_example():
    """``min x`` s.t. ``x >= 2``: duals 1 -> 2; 3 -> scaled to 1 -> 2; -1 -> clipped to 0 -> 0."""
    one = sp.csc_matrix(np.array([[1.0]]))
    args = (np.array([1.0]), np.array([0.0]), np.array([np.inf]), np.array([2.0]), np.array([np.inf]), one)
    assert [dual_bound(*args, np.array([y])) for y in (1.0, 3.0, -1.0)] == [2.0, 2.0, 0.0]


def _random_lp(rng: np.random.Generator):
    """A feasible, bounded LP: rows around a point of the box, some sides infinite; columns in ``[0, 5]`` or
    ``[0, inf)`` with a positive cost (so the objective is bounded below)."""
    m, n = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    a = np.round(rng.normal(size=(m, n)), 2) * (rng.random((m, n)) < 0.7)
    infinite = rng.random(n) < 0.4
    col_lo, col_hi = np.zeros(n), np.where(infinite, np.inf, 5.0)
    cost = np.where(infinite, rng.random(n) + 0.1, rng.normal(size=n))
    x0 = rng.random(n) * 3
    ax = a @ x0
    row_lo = np.where(rng.random(m) < 0.3, -np.inf, ax - rng.random(m))
    row_hi = np.where(rng.random(m) < 0.3, np.inf, ax + rng.random(m))
    return cost, col_lo, col_hi, row_lo, row_hi, sp.csc_matrix(a)


def test_exact_duals_give_the_optimum_and_any_duals_at_most_it():
    """On 40 random LPs solved by HiGHS (simplex): its duals certify its optimum (1e-7), and 20 perturbations of
    them (noise, sign flips, scaling) certify at most it."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        lp = _random_lp(rng)
        res = solve(build_highs(highs_lp(*lp), options={"solver": "simplex"}), duals=True)
        assert res.status == "optimal"
        opt = res.objective
        assert dual_bound(*lp, res.row_duals) == pytest.approx(opt, abs=1e-7 * max(1.0, abs(opt)))
        for _ in range(20):
            y = res.row_duals * rng.choice([0.0, 0.5, 2.0, -1.0]) + rng.normal(size=len(res.row_duals))
            assert dual_bound(*lp, y) <= opt + 1e-7 * max(1.0, abs(opt))


def test_pooled_lp_stopped_early_keeps_a_certified_bound(monkeypatch):
    """Stopped after 6 interior-point iterations, the pooled LP reports ``time_limit`` with the bound its duals
    certify: above 0 (the trivial bound), at most the LP's optimum. Two nodes of two GPUs; 30 one-GPU jobs, one a
    second, of 10-16 s (measured: 9.2 s of the optimum's 16.1 s)."""
    cluster = Cluster([64_000] * 2, [262_144] * 2, [2] * 2, ["V100"] * 2)
    tasks = TaskSet([1000] * 30, [1024] * 30, [1] * 30, [1000] * 30)
    jobs = JobSet(tasks, [float(i) for i in range(30)], [10.0 + i % 7 for i in range(30)])
    full = pooled_bound(cluster, jobs, step_s=1.0)
    assert full.status == "optimal"

    def stopped(h, *args, **kwargs):
        h.setOptionValue("ipm_iteration_limit", 6)
        return solve(h, *args, **kwargs)

    monkeypatch.setattr(bound_module, "solve", stopped)
    early = pooled_bound(cluster, jobs, step_s=1.0)
    assert early.status == "time_limit"
    assert 1.0 < early.mean_wait_s <= full.mean_wait_s


def test_the_pinned_bound_sees_the_background_hold_the_gpu():
    """One GPU; a pinned background job holds it over [0, 100) s; a counted 1-GPU job of 10 s submitted at 0 can
    start at 100 at the earliest (wait 100 s). The pooled LP on 1 s steps proves 99.5 s (its last step may hold part
    of the job), on 5 s steps 97.5 s: both at most the optimum. Two pinned jobs on that GPU at once: no schedule
    runs them on time (status ``infeasible``)."""
    cluster = Cluster([8000], [8192], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 3, [0] * 3, [1] * 3, [1000] * 3), [0.0, 0.0, 0.0], [100.0, 10.0, 100.0])
    counted, pinned = np.array([False, True, False]), np.array([True, False, False])
    for step_s, wait in ((1.0, 99.5), (5.0, 97.5)):
        b = pooled_bound(cluster, jobs, counted=counted, pinned=pinned, step_s=step_s, slack_s=200.0)
        assert b.status == "optimal" and wait - 1e-3 <= b.mean_wait_s <= wait
    both = pooled_bound(cluster, jobs, counted=counted, pinned=np.array([True, False, True]), step_s=1.0)
    assert both.status == "infeasible"


def test_a_rejected_background_job_holds_nothing():
    """Two 1-GPU nodes. A background job of 2 GPUs fits no node: rejected, it never runs, so pinning it at its
    submission takes nothing from the pooled capacity, and the counted 1-GPU job submitted beside it waits nothing
    (as in every run, which starts it at once). Charged its 2,000 milli-GPU over [0, 100) s, the pooled GPU was full
    over the counted job's whole window and the bound 20 s, above every run it is valid for."""
    cluster = Cluster([8000] * 2, [8192] * 2, [1] * 2, ["T4"] * 2)
    jobs = JobSet(TaskSet([1000] * 2, [0] * 2, [2, 1], [1000] * 2), [0.0, 0.0], [100.0, 10.0])
    b = pooled_bound(cluster, jobs, counted=np.array([False, True]), pinned=np.array([True, False]), step_s=1.0)
    assert (b.status, b.jobs, b.mean_wait_s) == ("optimal", 1, 0.0)
