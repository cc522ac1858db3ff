"""The pooled ceiling by CP-SAT (:mod:`formulations.schedule.pooledcp`) and the study's checks against it.

Hand-worked optima (derived in each docstring), a cross-check against the engine's schedules and the two pooled
bounds on random instances (hypothesis), real times off the grid, determinism and bad input.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from experiments import schedule as study
from fgdopt import Cluster, TaskSet
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import recorded_run, validate_schedule
from formulations.schedule import pooled_bound, pooled_record
from formulations.schedule.pooledcp import check, grid_unit, solve, whole_rows
from formulations.schedule.rigid import rigid_bound
from tests.test_schedule_bounds_rigid import _instances


def _jobs(n_gpus: int, rows: list[tuple[int, int, float, float]], n_nodes: int = 1) -> tuple[Cluster, JobSet]:
    """``n_nodes`` nodes of ``n_gpus`` GPUs; jobs ``(num_gpu, gpu_milli, submit_s, duration_s)``, 1 core, 1 GiB."""
    cluster = Cluster([64_000] * n_nodes, [262_144] * n_nodes, [n_gpus] * n_nodes, ["V100"] * n_nodes)
    n = len(rows)
    tasks = TaskSet([1000] * n, [1024] * n, [g for g, _, _, _ in rows], [m for _, m, _, _ in rows])
    return cluster, JobSet(tasks, [s for _, _, s, _ in rows], [d for _, _, _, d in rows])


def test_dual_feasible_rows_make_shares_above_half_wait():
    """Two GPUs; three jobs of 600 milli-GPU at 0 for 10 s. Pooled milli-GPU (1800 <= 2000) lets all start at 0
    (``dff=()``: mean wait 0). Counted by ``u_1`` each holds a whole GPU, so one waits 10 s: optimum 10/3 s, proven.
    The integer rows count 600 as ``u_1`` 1 x 2, ``u_2`` 1/2 x 6 and ``u_3`` 2/3 x 12 against 2 GPUs x 2, 6 and 12."""
    cluster, jobs = _jobs(2, [(1, 600, 0.0, 10.0)] * 3)
    names, demand, cap = whole_rows(cluster, jobs)
    assert names == ("gpu", "cpu", "memory", "gpu-u1", "gpu-u2", "gpu-u3")
    assert demand[0].tolist() == [600, 1000, 1024, 2, 3, 8] and cap[3:].tolist() == [4, 12, 24]
    plain = solve(cluster, jobs, dff=(), deterministic_s=5)
    assert plain.status == "optimal" and plain.mean_wait_s == 0.0
    counted = solve(cluster, jobs, deterministic_s=5)
    assert counted.status == "optimal" and counted.mean_wait_s == pytest.approx(10 / 3)
    assert sorted(counted.start_s.tolist()) == [0.0, 0.0, 10.0]


def test_shortest_first_on_one_gpu():
    """One GPU; at 0 a whole-GPU job of 10 s and one of 1 s: the short one first, the long one at 1: mean wait 1/2 s
    (the other order waits 10 / 2)."""
    cluster, jobs = _jobs(1, [(1, 1000, 0.0, 10.0), (1, 1000, 0.0, 1.0)])
    s = solve(cluster, jobs, deterministic_s=5)
    assert s.status == "optimal" and s.start_s.tolist() == [1.0, 0.0] and s.mean_wait_s == 0.5
    late = JobSet(jobs.tasks, [0.0, 100.0], [10.0, 1.0])          # submitted past every job's end: no wait
    s = solve(cluster, late, deterministic_s=5)
    assert s.status == "optimal" and s.start_s.tolist() == [0.0, 100.0] and s.mean_wait_s == 0.0


def test_real_times_off_the_grid_stay_feasible():
    """Submissions at 0.25 s and a duration of 1 microsecond are not whole milliseconds: the grid is 1 s, submissions
    and durations rounded up, so every real run lies in its grid run and no job starts before its submission. A job
    that fits no node (3 GPUs on 2-GPU nodes) gets no start."""
    cluster, jobs = _jobs(2, [(2, 1000, 0.25, 1e-6), (2, 1000, 0.25, 2.5), (1, 1000, 0.0, 2.5),
                              (3, 1000, 0.0, 1.0)])
    s = solve(cluster, jobs, deterministic_s=5)
    assert s.unit_s == 1.0 and s.status == "optimal"
    assert np.isnan(s.start_s[3]) and (s.start_s[:3] >= jobs.submit_s[:3]).all()
    assert s.mean_wait_s == pytest.approx(float(np.mean(s.start_s[:3] - jobs.submit_s[:3])))


def test_far_times_coarsen_the_grid():
    """Two jobs submitted at 5e17 s for 5e17 s: a horizon of 1.5e18 s times 2 jobs overflows CP-SAT's integers on a
    1 s grid (:func:`grid_unit` coarsens it ten by ten until it fits); on one GPU the second waits the first's
    5e17 s."""
    assert grid_unit(np.array([0.0, 5.0]), np.array([1.0, 2.0])) == 1.0
    assert grid_unit(np.array([0.5]), np.array([0.25])) == 0.01
    cluster, jobs = _jobs(1, [(1, 1000, 5e17, 5e17), (1, 1000, 5e17, 5e17)])
    s = solve(cluster, jobs, deterministic_s=5)
    assert s.unit_s == 10.0 and s.status == "optimal"
    assert sorted(s.start_s.tolist()) == [5e17, 1e18] and s.mean_wait_s == 2.5e17


def test_check_names_the_row_above_capacity():
    with pytest.raises(AssertionError, match="4 of gpu-u1 at unit 0, above the capacity 2"):
        check(np.array([0, 0]), np.array([1, 1]), np.array([[1, 2], [1, 2]]), np.array([4, 2]), ("gpu", "gpu-u1"))
    check(np.array([0, 1]), np.array([1, 1]), np.array([[1, 2], [1, 2]]), np.array([4, 2]), ("gpu", "gpu-u1"))


def test_bad_budget_is_refused():
    cluster, jobs = _jobs(1, [(1, 1000, 0.0, 1.0)])
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="deterministic_s must be a positive number"):
            solve(cluster, jobs, deterministic_s=bad)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_instances())
def test_between_the_pooled_bounds_and_the_engine(instance):
    """On random instances (whole and sharing jobs, whole seconds): the pooled LP and rigid starts are at most the
    CP-SAT pooled schedule (it keeps all their rows), and a proven pooled optimum is at most every engine run (each
    validated by replay: a schedule of the cluster keeps every pooled row, and its starts are whole seconds)."""
    cluster, jobs = instance
    s = solve(cluster, jobs, deterministic_s=5)
    assert s.status in ("optimal", "feasible")
    assert pooled_record(pooled_bound(cluster, jobs, step_s=1.0)).wait_s <= s.mean_wait_s + 1e-6
    assert rigid_bound(cluster, jobs, intervals=32, max_iter=60).wait_s <= s.mean_wait_s + 1e-9
    if s.status == "optimal":
        for policy, queue in (("best-fit", "sjf"), ("fgd", "fifo")):
            _, run = recorded_run(cluster, jobs, policy, queue)
            validate_schedule(cluster, jobs, run)
            assert s.mean_wait_s <= float(np.nanmean(run.start_s - jobs.submit_s)) + 1e-9


def test_deterministic():
    """The same instance twice: the same starts (one thread, a deterministic time limit)."""
    rng = np.random.default_rng(3)
    rows = [(int(g), 1000, float(t), float(d)) for g, t, d in zip(rng.integers(1, 9, 30), rng.integers(0, 200, 30),
                                                                    rng.integers(10, 200, 30), strict=True)]
    cluster, jobs = _jobs(8, rows, n_nodes=2)
    a, b = solve(cluster, jobs, deterministic_s=0.3), solve(cluster, jobs, deterministic_s=0.3)
    assert np.array_equal(a.start_s, b.start_s) and a.status == b.status


def test_study_checks_bounds_against_the_ceiling(monkeypatch):
    """``check_pooled_bounds``: ``bound-rigid`` above the CP-SAT ceiling raises (it keeps the dual-feasible rows),
    above the list schedules it does not (those may break them); ``bound-all`` is checked against both. No CP-SAT
    ceiling on a point of more than :data:`~experiments.schedule.POOLED_CP_MAX_JOBS` jobs; at the cap, two 1 s jobs
    on one GPU wait 1/2 s on average."""
    point = SimpleNamespace(load=1.2, seed=0)
    diag = [{"quantity": "ceiling_pooled_s", "value_s": 5.0}, {"quantity": "ceiling_per_type_s", "value_s": 6.0},
            {"quantity": "ceiling_pooled_cp_s", "value_s": 8.0}]
    study.check_pooled_bounds([{"method": "bound-rigid", "mean_wait_s": 7.0}], diag, point)
    with pytest.raises(AssertionError, match=r"bound-rigid \(9 s\) above the CP-SAT pooled schedule's 8 s"):
        study.check_pooled_bounds([{"method": "bound-rigid", "mean_wait_s": 9.0}], diag, point)
    with pytest.raises(AssertionError, match=r"bound-all \(5.5 s\) above a pooled list schedule"):
        study.check_pooled_bounds([{"method": "bound-all", "mean_wait_s": 5.5}], diag, point)
    study.check_pooled_bounds([{"method": "bound-rigid", "mean_wait_s": 9.0}], diag[:2], point)
    monkeypatch.setattr(study, "POOLED_CP_MAX_JOBS", 1)
    cluster, jobs = _jobs(1, [(1, 1000, 0.0, 1.0)] * 2)
    assert study.pooled_cp_ceiling(SimpleNamespace(cluster=cluster, jobs=jobs, seed=0)) is None
    monkeypatch.setattr(study, "POOLED_CP_MAX_JOBS", 2)
    quantity, value, method, _ = study.pooled_cp_ceiling(SimpleNamespace(cluster=cluster, jobs=jobs, seed=0))
    assert quantity == "ceiling_pooled_cp_s" and value == 0.5 and "(optimal, " in method
    from formulations.schedule import pooledcp

    monkeypatch.setattr(pooledcp, "solve", lambda *a, **k: SimpleNamespace(mean_wait_s=math.nan, status="unknown",
                                                                            wall_s=1.0))
    _, value, method, _ = study.pooled_cp_ceiling(SimpleNamespace(cluster=cluster, jobs=jobs, seed=0))
    assert math.isnan(value) and "(none found, unknown, " in method              # said, not dropped
