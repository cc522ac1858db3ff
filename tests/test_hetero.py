"""Heterogeneous GPUs, the foundations: Gavel's throughput table, jobs with work and Gavel's generator,
and the policies over X as LPs, on hand-worked instances."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.hetero import (
    DISTRIBUTED,
    GPU_TYPES,
    JOB_TYPES,
    Allocation,
    HeteroJobs,
    allocation_violation,
    check_allocation,
    gavel_jobs,
    read_throughputs,
)
from fgdopt.hetero import throughputs as tp
from fgdopt.hetero.jobs import iter_gavel_jobs, take_jobs
from formulations.backends import solve_model
from formulations.hetero import (
    POLICIES,
    _max_min,
    allocate,
    central_totals,
    isolated_share,
    proportional_throughput,
    solve_allocation,
    water_fill,
)
from formulations.linear import INF, LinearModel

GAVEL_CLUSTER = {"v100": 36, "p100": 36, "k80": 36}


# -- the data -----------------------------------------------------------------------------------------------
def test_table_known_values(gavel_table):
    t = gavel_table
    assert t.gpu_types[:3] == GPU_TYPES
    assert set(t.gpu_types[3:]) == {f"{g}_unconsolidated" for g in GPU_TYPES}
    # the README's example, exact values of the file
    assert t.throughput("ResNet-50 (batch size 64)", 1, "v100") == 4.394774823323071
    assert t.throughput("ResNet-50 (batch size 64)", 1, "p100") == 2.6194694075770055
    assert t.throughput("ResNet-50 (batch size 64)", 1, "k80") == 0.6190282202246573
    # co-located pairs are stored both ways round
    assert t.pair("ResNet-50 (batch size 64)", "A3C", 1, "v100") == (2.950603089845603, 1.6837215567338348)
    assert t.pair("A3C", "ResNet-50 (batch size 64)", 1, "v100") == (1.6837215567338348, 2.950603089845603)
    # measured zero (does not fit on K80), and not measured at all (A3C is not distributed)
    assert t.throughput("ResNet-50 (batch size 128)", 2, "k80") == 0.0
    assert math.isnan(t.throughput("A3C", 2, "v100"))


def test_table_coverage(gavel_table):
    iso = gavel_table.isolated[:, :, :3]                    # consolidated types
    measured = ~np.isnan(iso)
    assert measured[:, 0].all()                             # every type at 1 GPU on every GPU type
    for s in range(1, 4):                                   # 19 distributed types at 2, 4, 8 GPUs
        assert (measured[:, s].all(axis=1) == np.array(DISTRIBUTED)).all()
    col = gavel_table.colocated[..., 0, :3, 0]              # scale 1: all 26 x 26 pairs measured
    assert not np.isnan(col).any()
    assert np.array_equal(gavel_table.colocated[..., 0], np.swapaxes(gavel_table.colocated, 0, 1)[..., 1],
                          equal_nan=True)
    assert not gavel_table.isolated.flags.writeable
    with pytest.raises(KeyError, match="unknown GPU type"):
        gavel_table.gpu_index(["a100"])


def test_missing_data_skips_unless_required(monkeypatch, tmp_path):
    from conftest import _find, _require

    assert _find((tmp_path,), tp.FILE) is None
    monkeypatch.setenv("FGDOPT_REQUIRE_DATA", "1")
    with pytest.raises(pytest.fail.Exception, match="FGDOPT_REQUIRE_DATA=1 but Gavel's throughput table"):
        _require(None, "Gavel's throughput table", "FGDOPT_GAVEL")
    monkeypatch.delenv("FGDOPT_REQUIRE_DATA")
    with pytest.raises(pytest.skip.Exception, match="set FGDOPT_GAVEL"):
        _require(None, "Gavel's throughput table", "FGDOPT_GAVEL")


def test_loader_reports_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m fgdopt.hetero download"):
        read_throughputs(tmp_path / tp.FILE)
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps({g: {"('NoSuchNet', 1)": {"null": 1.0}} for g in GPU_TYPES}))
    with pytest.raises(ValueError, match="NoSuchNet"):
        read_throughputs(bad)


def test_gavel_dir_order(tmp_path, monkeypatch):
    monkeypatch.setenv("FGDOPT_GAVEL", str(tmp_path))
    assert tp.gavel_dir() == tmp_path and tp.gavel_dir("x") == tp.Path("x")
    monkeypatch.delenv("FGDOPT_GAVEL")
    assert tp.gavel_dir() == tp.Path.home() / ".cache" / "fgdopt" / "gavel"


def test_download_without_network_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import urllib.error

    from fgdopt import traces

    def offline(url, timeout=None):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(traces.urllib.request, "urlopen", offline)
    assert tp.main(["download", "--dest", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"python -m fgdopt.hetero download: could not download {tp.URL} ")
    assert "FGDOPT_GAVEL" in lines[0] and str(tmp_path) in lines[0] and "by hand" in lines[0]
    assert list(tmp_path.iterdir()) == []                   # no partial file left behind


def test_download_from_local_server_checks_the_sha(gavel_table, tmp_path):
    import functools
    import http.server
    import threading

    src = gavel_table.source.parent
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(src))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        path = tp.download(tmp_path, url=f"http://127.0.0.1:{server.server_port}/{tp.FILE}")
        assert tp.sha256_of(path) == tp.SHA256
        with pytest.raises(ValueError, match="checksum mismatch"):
            tp.download(tmp_path / "other", url=f"http://127.0.0.1:{server.server_port}/LICENSE")
        assert list((tmp_path / "other").iterdir()) == []
    finally:
        server.shutdown()


# -- jobs with work and Gavel's generator ---------------------------------------------------------------------
def test_jobs_validate_rows():
    with pytest.raises(ValueError, match="job row 1: field 'total_steps'"):
        HeteroJobs([0, 0], [1, 1], [10.0, 0.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="job row 0: field 'scale_factor'"):
        HeteroJobs([0], [3], [10.0], [0.0])


def test_generator_is_gavels_draw_for_draw(gavel_table):
    # Expected values printed by Gavel's own code (scheduler/utils.py generate_job with random.Random(seed + 2),
    # Scheduler._sample_arrival_time_delta with random.Random(seed + 3), lam = 3600 / rate), run once here
    # on 6000 jobs x 4 settings: every job type, scale factor, step count and arrival time was bit-identical.
    jobs = gavel_jobs(gavel_table, 4, rate_per_hour=1.0, seed=0)
    assert jobs.type_names == ("ResNet-18 (batch size 64)", "Transformer (batch size 16)",
                               "Recommendation (batch size 2048)", "Recommendation (batch size 8192)")
    assert jobs.total_steps.tolist() == [1646636.2758419, 343170.46864225325, 16034.37819420177, 20989.313058424774]
    assert jobs.submit_s.tolist() == [0.0, 978.344291641206, 3807.099310116383, 5470.17078262555]
    multi = gavel_jobs(gavel_table, 4, rate_per_hour=1.0, seed=2, multi_gpu=True)
    assert multi.scale_factor.tolist() == [1, 1, 4, 1]
    assert multi.type_names[2] == "LM (batch size 40)" and multi.total_steps[2] == 392153.4806139889
    # steps = drawn duration x V100 throughput at the job's scale factor
    v100 = multi.throughputs(gavel_table, ("v100",))[:, 0]
    np.testing.assert_allclose(multi.total_steps, multi.duration_s * v100, rtol=1e-15)


def test_generator_is_deterministic_and_seeded(gavel_table):
    a = gavel_jobs(gavel_table, 300, 4.0, seed=7, multi_gpu=True, multi_priority=True)
    b = gavel_jobs(gavel_table, 300, 4.0, seed=7, multi_gpu=True, multi_priority=True)
    c = gavel_jobs(gavel_table, 300, 4.0, seed=8, multi_gpu=True, multi_priority=True)
    assert a.to_frame().equals(b.to_frame())
    assert not a.to_frame().equals(c.to_frame())
    static = gavel_jobs(gavel_table, 10, math.inf, seed=0)
    assert (static.submit_s == 0).all()
    with pytest.raises(ValueError, match="rate_per_hour"):
        gavel_jobs(gavel_table, 10, 0.0)


def test_generator_distributions(gavel_table):
    n, rate = 20_000, 3.0
    jobs = gavel_jobs(gavel_table, n, rate, seed=0, multi_gpu=True, multi_priority=True)
    gaps = np.diff(jobs.submit_s)
    mean_gap = 3600.0 / rate                                # 1200 s
    # Poisson arrivals: exponential gaps with mean 3600 / rate (4 standard errors)
    assert abs(gaps.mean() - mean_gap) < 4 * mean_gap / math.sqrt(len(gaps))
    p = math.exp(-1.0)                                      # P(gap > mean) of an exponential
    assert abs((gaps > mean_gap).mean() - p) < 4 * math.sqrt(p * (1 - p) / len(gaps))
    counts = np.bincount((jobs.submit_s // 3600).astype(int))[:-1]   # jobs per whole hour
    assert abs(counts.mean() - rate) < 4 * math.sqrt(rate / len(counts))
    assert abs(counts.var() / counts.mean() - 1) < 0.1      # Poisson counts: variance = mean
    # Philly scale factors: 1 (70%), 2 (10%), 4 (15%), 8 (5%)
    for s, q in ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05)):
        assert abs((jobs.scale_factor == s).mean() - q) < 4 * math.sqrt(q * (1 - q) / n)
    assert np.array(DISTRIBUTED)[jobs.job_type[jobs.scale_factor > 1]].all()
    # Philly durations: 80% log-uniform over 10^1.5..10^3 min, 20% over 10^3..10^4 min
    minutes = np.log10(jobs.duration_s / 60)
    assert minutes.min() >= 1.5 and minutes.max() <= 4
    long = minutes >= 3
    assert abs(long.mean() - 0.2) < 4 * math.sqrt(0.16 / n)
    assert abs(np.median(minutes[~long]) - 2.25) < 0.05 and abs(np.median(minutes[long]) - 3.5) < 0.05
    # 20% high priority; single-GPU job types uniform over the 26
    assert abs((jobs.priority_weight == 5).mean() - 0.2) < 4 * math.sqrt(0.16 / n)
    single = gavel_jobs(gavel_table, n, rate, seed=1)
    freq = np.bincount(single.job_type, minlength=len(JOB_TYPES)) / n
    assert (single.scale_factor == 1).all()
    assert np.abs(freq - 1 / 26).max() < 5 * math.sqrt((1 / 26) * (25 / 26) / n)


# -- X and its feasibility -------------------------------------------------------------------------------------
def test_allocation_violation_names_the_constraint():
    x = np.array([[0.6, 0.6], [0.2, 0.0]])
    assert allocation_violation(x, [1, 1], [1, 1]) == pytest.approx({"negative": 0, "job_time": 0.2, "capacity": 0})
    with pytest.raises(ValueError, match="'job_time'"):
        check_allocation(x, [1, 1], [1, 1])
    with pytest.raises(ValueError, match="'capacity'"):
        check_allocation(np.array([[0.5, 0.0], [0.5, 0.0]]), [2, 1], [1, 1])
    with pytest.raises(ValueError, match="optimal allocation needs its X"):
        Allocation("las", None, ("v100",), "optimal", 1.0, 1.0, 0.0)


# -- the policies, by hand --------------------------------------------------------------------------------------
# Two single-GPU jobs, one V100 and two K80s (G = (1, 2)); throughputs (steps/s) A = (4, 1), B = (3, 2).
# Proportional throughputs (equal share G_j / G of each type): P_A = (4 + 2) / 3 = 2, P_B = (3 + 4) / 3 = 7/3,
# so the normalized coefficients are c_A = T_A / P_A = (2, 1/2), c_B = T_B / P_B = (9/7, 6/7). Both jobs prefer
# the single V100; the K80s are plentiful, so at the optimum both run all the time (a1 = 1 - a0, b1 = 1 - b0)
# and share the V100 (a0 + b0 = 1): A = 2 a0 + (1 - a0) / 2 = 1/2 + 3/2 a0, B = 9/7 (1 - a0) + 6/7 a0 =
# 9/7 - 3/7 a0. Max-min: equal, 1/2 + 3/2 a0 = 9/7 - 3/7 a0, a0 (27/14) = 11/14, a0 = 11/27, t = 10/9.
HAND_T = np.array([[4.0, 1.0], [3.0, 2.0]])
HAND_G = np.array([1.0, 2.0])
HAND_TYPES = ("v100", "k80")


def test_las_aware_by_hand():
    assert proportional_throughput(HAND_T, HAND_G).tolist() == pytest.approx([2.0, 7 / 3])
    a = solve_allocation("las-aware", HAND_T, [1, 1], HAND_G, gpu_types=HAND_TYPES)
    assert a.status == "optimal" and a.info["gavel"] == "max_min_fairness_perf"
    assert a.objective == pytest.approx(10 / 9, rel=1e-7) and a.bound == pytest.approx(10 / 9, rel=1e-7)
    np.testing.assert_allclose(a.x, [[11 / 27, 16 / 27], [16 / 27, 11 / 27]], atol=1e-7)
    check_allocation(a.x, [1, 1], HAND_G)
    # the agnostic policy sees 3 GPUs for 2 jobs: both run all the time, split 1:2 as the GPUs (Gavel's choice)
    b = solve_allocation("las", HAND_T, [1, 1], HAND_G, gpu_types=HAND_TYPES)
    assert b.status == "optimal" and b.objective == pytest.approx(1.0)
    np.testing.assert_allclose(b.x, [[1 / 3, 2 / 3], [1 / 3, 2 / 3]], atol=1e-12)
    # and what that costs in steps/s: A gets 2 instead of 1/2 + 3/2 * 11/27 ... times P_A
    assert b.effective_throughput(HAND_T).tolist() == pytest.approx([2.0, 7 / 3])
    assert a.effective_throughput(HAND_T).tolist() == pytest.approx([20 / 9, 70 / 27])


def test_ftf_by_hand_static_batch():
    # Nothing run yet (elapsed 0): rho_i = I_i / thr_i, I_i the isolated-share throughput. The isolated share
    # gives each job G_j / (2 * 1) = (1/2, 1), scaled to sum 1: (1/3, 2/3), so I = (2, 7/3) = P above, and
    # min max rho = 1 / (max-min of thr_i / I_i) = 1 / (10/9) = 0.9 at the same X.
    np.testing.assert_allclose(isolated_share([1, 1], HAND_G), [[1 / 3, 2 / 3], [1 / 3, 2 / 3]])
    a = solve_allocation("ftf-aware", HAND_T, [1, 1], HAND_G, gpu_types=HAND_TYPES, steps_remaining=[100.0, 50.0])
    assert a.status == "optimal"
    assert a.objective == pytest.approx(0.9, rel=1e-6) and a.bound <= a.objective <= a.bound * (1 + 1e-6)
    np.testing.assert_allclose(a.x, [[11 / 27, 16 / 27], [16 / 27, 11 / 27]], atol=1e-6)


def test_ftf_with_history_beats_random_feasible_allocations():
    # Jobs that already waited: rho_i = (e_i + R_i / thr_i) / (a_i + R_i / I_i) is not linear; the Dinkelbach
    # iteration's rho must be no worse than any feasible X (sampled) and within its certified gap.
    T = np.array([[4.0, 1.0, 0.5], [3.0, 2.0, 1.0], [2.0, 2.0, 2.0], [5.0, 0.0, 1.0]])
    s, G = np.array([1, 2, 1, 1]), np.array([2.0, 1.0, 2.0])
    R, e, iso = np.array([4e4, 1e4, 2e4, 3e4]), np.array([0.0, 3600.0, 600.0, 7200.0]), np.array([0, 1e3, 0, 5e3])
    a = solve_allocation("ftf-aware", T, s, G, steps_remaining=R, elapsed_s=e, isolated_elapsed_s=iso,
                         gpu_types=("v100", "p100", "k80"))
    assert a.status == "optimal" and a.bound <= a.objective <= a.bound * (1 + 1e-6)
    denom = iso + R / (T * isolated_share(s, G)).sum(axis=1)
    assert ((e + R / a.effective_throughput(T)) / denom).max() == pytest.approx(a.objective)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        x = rng.random(T.shape) * (T > 0)
        x /= max(1.0, x.sum(axis=1).max(), (s @ x / G).max())           # scaled into feasibility
        thr = (T * x).sum(axis=1)
        assert ((e + R / thr) / denom).max() >= a.bound * (1 - 1e-9)


def test_makespan_bound_by_hand():
    # One V100, one K80; A = (3, 1) steps/s, B = (2, 1), 300 steps each. Best static X: both run all the time,
    # A a0 of its time on the V100 and B the rest: A = 3 a0 + (1 - a0) = 1 + 2 a0, B = 2 (1 - a0) + a0 = 2 - a0,
    # equal at a0 = 1/3: 5/3 steps/s each, 300 / (5/3) = 180 s. A schedule reaches it (A on the V100 for 60 s
    # then the K80 for 120 s: 180 + 120 steps; B the other way round: 60 + 240), and no schedule does better.
    T, G, R = np.array([[3.0, 1.0], [2.0, 1.0]]), np.array([1.0, 1.0]), np.array([300.0, 300.0])
    a = solve_allocation("makespan-aware", T, [1, 1], G, gpu_types=("v100", "k80"), steps_remaining=R)
    assert a.status == "optimal" and a.objective == pytest.approx(180.0, rel=1e-7) == a.bound
    np.testing.assert_allclose(a.x, [[1 / 3, 2 / 3], [2 / 3, 1 / 3]], atol=1e-7)
    # a job pinned to one GPU type throughout does worse: A on the V100 (100 s) and B on the K80 (300 s), or
    # A on the K80 (300 s) and B on the V100 (150 s): 300 s either way
    pinned = [max(R[0] / T[0, i], R[1] / T[1, 1 - i]) for i in (0, 1)]
    assert pinned == [300.0, 300.0] and min(pinned) >= a.objective
    # the agnostic makespan assumes V100 speed everywhere: both at 3 and 2 steps/s on 2 GPUs -> 150 s claimed
    b = solve_allocation("makespan", T, [1, 1], G, gpu_types=("v100", "k80"), steps_remaining=R)
    assert b.objective == pytest.approx(150.0) and np.allclose(b.x[:, 0], b.x[:, 1])


@pytest.mark.parametrize("policy", ["las", "ftf", "makespan"])
def test_agnostic_equals_aware_on_a_homogeneous_cluster(gavel_table, policy):
    jobs = gavel_jobs(gavel_table, 60, math.inf, seed=3)                # single-GPU: X is unique for las
    cluster = {"v100": 24}
    agnostic, aware = allocate(policy, gavel_table, jobs, cluster), allocate(f"{policy}-aware", gavel_table, jobs,
                                                                           cluster)
    assert agnostic.status == aware.status == "optimal"
    assert agnostic.objective == pytest.approx(aware.objective, rel=1e-6)
    if policy == "las":                                      # 60 jobs, 24 GPUs: each gets 24 / 60 of the time
        np.testing.assert_allclose(agnostic.x, aware.x, atol=1e-7)
        np.testing.assert_allclose(aware.x, 0.4, atol=1e-7)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_is_feasible_and_optimal_on_gavels_cluster(gavel_table, policy):
    jobs = gavel_jobs(gavel_table, 150, math.inf, seed=0, multi_gpu=True, multi_priority=True)
    a = allocate(policy, gavel_table, jobs, GAVEL_CLUSTER)
    assert a.status == "optimal" and a.gpu_types == GPU_TYPES and a.x.shape == (150, 3)
    assert max(allocation_violation(a.x, jobs.scale_factor, [36, 36, 36]).values()) <= 1e-6
    if policy.endswith("-aware"):
        assert a.bound == pytest.approx(a.objective, rel=1e-6)
    else:                                                    # Gavel's (ECOS's) equal split over the types
        np.testing.assert_allclose(a.x, a.x[:, :1].repeat(3, axis=1), atol=1e-12)
    if policy == "las":                                      # the water-filling totals attain the optimum
        assert (jobs.scale_factor * a.x.sum(axis=1) / jobs.priority_weight).min() == pytest.approx(a.objective)


def test_agnostic_makespan_realized_at_true_throughputs_is_worse(gavel_table):
    jobs = gavel_jobs(gavel_table, 80, math.inf, seed=1)
    T = jobs.throughputs(gavel_table)
    agn, aw = allocate("makespan", gavel_table, jobs, GAVEL_CLUSTER), allocate("makespan-aware", gavel_table, jobs,
                                                                              GAVEL_CLUSTER)
    # the agnostic X, realized at the true throughputs, finishes later than the aware bound
    realized = (jobs.total_steps / agn.effective_throughput(T)).max()
    assert realized > aw.objective * 1.2


def test_the_max_min_lp_built_from_arrays_is_pulps_to_the_bit():
    """``_max_min`` hands HiGHS its LP from arrays (``solve_lp_arrays``); through PuLP (``solve_model``) the same
    LinearModel gives the same X and t to the last bit (the interior point method's point inside the optimal face
    depends on the column and row order, which both keep), on random instances with zero coefficients."""
    rng = np.random.default_rng(7)
    for _ in range(25):
        n, k = int(rng.integers(1, 60)), int(rng.integers(1, 4))
        c = rng.choice([0.0, 0.3, 1.0, 2.5], size=(n, k)) * rng.random((n, k))
        c[c.sum(axis=1) == 0, 0] = 1.0
        scale, cap = rng.choice([1.0, 2.0, 8.0], size=n), np.full(k, float(rng.choice([4, 36])))
        kappa = 1.0 / c.max()
        model = LinearModel("hetero-maxmin")
        xs = model.add_vars(n * k, ub=1.0, integer=False).reshape(n, k)
        t = int(model.add_vars(1, ub=INF, integer=False, obj=1.0)[0])
        for i in range(n):
            model.add_row(xs[i], 1.0, hi=1.0)
            model.add_row(np.append(xs[i], t), np.append(c[i] * kappa, -1.0), lo=0.0)
        for j in range(k):
            model.add_row(xs[:, j], scale, hi=float(cap[j]))
        raw = solve_model(model, "highs", time_limit=60, threads=1, options={"solver": "ipm", "run_crossover": "off"})
        status, x, level = _max_min(c, scale, cap, 60.0, 1, central=True)
        assert status == raw.status
        if status == "optimal":
            assert np.array_equal(x, np.clip(raw.values[xs], 0.0, 1.0)) and level == raw.values[t] / kappa


def test_lazy_stream_gives_the_eager_jobs(gavel_table):
    """:func:`iter_gavel_jobs` is Gavel's endless trace: its first n jobs are :func:`gavel_jobs` of n (same draws,
    same order), whatever n, and taking more later continues the same stream (multi-GPU and weights drawn too)."""
    for rate, seed, multi in ((3.0, 0, False), (5.6, 2, True), (math.inf, 1, True)):
        eager = gavel_jobs(gavel_table, 120, rate, seed=seed, multi_gpu=multi, multi_priority=multi).to_frame()
        stream = iter_gavel_jobs(gavel_table, rate, seed=seed, multi_gpu=multi, multi_priority=multi)
        head, tail = take_jobs(stream, 45).to_frame(), take_jobs(stream, 75).to_frame()
        lazy = pd.concat([head, tail], ignore_index=True)
        pd.testing.assert_frame_equal(lazy, eager, check_exact=True)
        assert gavel_jobs(gavel_table, 0, rate, seed=seed).to_frame().empty
    with pytest.raises(ValueError, match="rate_per_hour must be > 0"):
        next(iter_gavel_jobs(gavel_table, 0.0))


def test_water_fill():
    # 1-, 2- and 8-GPU jobs on 6 GPUs. Level lam = s_i y_i for every unsaturated job: all three, lam = 6 / 3 = 2
    # > 1 saturates the 1-GPU job; the other two, lam = (6 - 1) / 2 = 2.5 > 2 saturates the 2-GPU job; the 8-GPU
    # job alone, lam = (6 - 3) / 1 = 3 <= 8: y = (1, 1, 3/8), using 1 + 2 + 3 = 6 GPUs.
    np.testing.assert_allclose(water_fill([1, 2, 8], [1, 1, 1], 6.0), [1.0, 1.0, 3 / 8])
    # weights: w = (1, 3) on 2 GPUs for two 4-GPU jobs: lam (1 + 3) = 2, y = lam w / 4 = (1/8, 3/8)
    np.testing.assert_allclose(water_fill([4, 4], [1, 3], 2.0), [1 / 8, 3 / 8])
    assert water_fill([1, 1], [1, 1], 5.0).tolist() == [1.0, 1.0]


@given(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=12), st.integers(1, 40),
       st.lists(st.sampled_from([1.0, 5.0]), min_size=12, max_size=12))
@settings(max_examples=25, deadline=None)
def test_water_fill_attains_the_pooled_lp_optimum(scale, gpus, weights):
    """``las`` solves no LP (its X is the water-filling totals): their level equals the pooled LP's optimum
    ``max t, s_i y_i / w_i >= t``, and they use at most the pooled GPUs."""
    s, w = np.array(scale, dtype=np.float64), np.array(weights[:len(scale)])
    y = water_fill(s, w, float(gpus))
    status, _, t = _max_min((s / w)[:, None], s, np.array([float(gpus)]), 60.0, 1)
    assert status == "optimal"
    assert (s * y / w).min() == pytest.approx(t, rel=1e-6)
    assert (s * y).sum() <= gpus * (1 + 1e-9) and (y <= 1).all()


def test_central_totals_by_hand():
    # an 8-GPU and a 1-GPU job on 3 x 36 GPUs: t* = 1, the 1-GPU job at y = 1, the 8-GPU one free in [1/8, 1]; the
    # barrier 3 log y + log(1 - y) + log(8 y - 1) + 3 log(107 - 8 y) is stationary where 3/y - 1/(1 - y) + 8/(8y - 1)
    # - 24/(107 - 8y) = 0, y = 0.79977... (ECOS, in Gavel's policy, returns 0.8008)
    y = central_totals(np.array([8.0, 1.0]), np.ones(2), 108.0, 3)
    assert y[1] == 1.0
    assert 3 / y[0] - 1 / (1 - y[0]) + 8 / (8 * y[0] - 1) - 24 / (107 - 8 * y[0]) == pytest.approx(0.0, abs=1e-7)
    assert y[0] == pytest.approx(0.79978, abs=1e-5)
    # on 6 GPUs the 8-GPU job ranges over [1/8, 5/8] (the 1-GPU one takes 1): strictly inside; on 1.5 GPUs the
    # capacity binds (t* = G / n = 0.75 < 1): the unique water-filling totals (0.75 / 8, 0.75); one scale factor: 1
    assert 1 / 8 < central_totals(np.array([8.0, 1.0]), np.ones(2), 6.0, 3)[0] < 5 / 8
    np.testing.assert_allclose(central_totals(np.array([8.0, 1.0]), np.ones(2), 1.5, 3), [0.75 / 8, 0.75])
    assert central_totals(np.array([2.0, 2.0]), np.ones(2), 108.0, 3).tolist() == [1.0, 1.0]


@given(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=30), st.integers(1, 120))
@settings(max_examples=40, deadline=None)
def test_central_totals_are_optimal_and_inside_the_face(scale, gpus):
    """The totals attain the pooled LP's optimum (the water-filling level), use at most the GPUs, and every job not
    pinned by the optimum is strictly inside its range (neither at its least total nor at 1)."""
    s = np.array(scale, dtype=np.float64)
    y, level = central_totals(s, np.ones(len(s)), float(gpus), 3), (s * water_fill(s, np.ones(len(s)), gpus)).min()
    assert (s * y).min() == pytest.approx(level, rel=1e-9) and (s * y).sum() <= gpus * (1 + 1e-12)
    free = (s > s.min()) & (s.min() * len(s) < gpus)
    assert ((y[free] > level / s[free]) & (y[free] < 1)).all()


def test_bad_inputs():
    with pytest.raises(ValueError, match="unknown policy"):
        solve_allocation("gandiva", HAND_T, [1, 1], HAND_G)
    with pytest.raises(ValueError, match="needs steps_remaining"):
        solve_allocation("makespan-aware", HAND_T, [1, 1], HAND_G)
    with pytest.raises(ValueError, match="job 1 has no positive throughput"):
        solve_allocation("las-aware", np.array([[1.0, 1.0], [0.0, 1.0]]), [1, 1], np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="assumes the v100 throughput"):
        solve_allocation("ftf", HAND_T, [1, 1], HAND_G, gpu_types=("p100", "k80"), steps_remaining=[1.0, 1.0])


@pytest.mark.parametrize(("raw", "said"), [
    ([1, 2], "expected a JSON object"),                                      # not an object
    ({g: 1.0 for g in GPU_TYPES}, "expected a JSON object"),                 # an object, but not of objects
    ({g: {"('ResNet-18 (batch size 16)', 1)": {"null": 1.0, "('ResNet-18 (batch size 16)', 2)": [1.0, 1.0]}}
      for g in GPU_TYPES}, "not a same-scale pair"),                         # partners of other scales
    ({g: {"('ResNet-18 (batch size 16)', 1)": {"null": 1.0, "('ResNet-18 (batch size 32)', 1)": [1.0]}}
      for g in GPU_TYPES}, "not a same-scale pair"),                         # one number, not a pair
])
def test_loader_refuses_each_malformed_layout_alone(tmp_path, raw, said):
    """Each fault of the table's layout alone gives one line naming the file."""
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=said):
        read_throughputs(bad)


def test_gavel_cluster_takes_eight_gpu_nodes_and_a_type_with_none():
    """Nodes of 8 GPUs are in range (1..8), and a GPU type of 0 GPUs gives no node: 10 V100 on 8-GPU nodes are an 8
    and a 2, and 0 K80 none."""
    from fgdopt.hetero.jobs import gavel_cluster

    c = gavel_cluster({"v100": 10, "k80": 0}, gpus_per_node=8)
    assert c.gpu.tolist() == [8, 2] and c.model.tolist() == ["v100", "v100"]
    with pytest.raises(ValueError, match="gpus_per_node must be in 1..8"):
        gavel_cluster({"v100": 10}, gpus_per_node=9)


def test_verify_reads_ok_for_the_pinned_table_and_mismatch_for_another(gavel_table, tmp_path, monkeypatch, capsys):
    """``python -m fgdopt.hetero verify`` on the pinned table: ``ok``, exit 0; on a file of other bytes in its place:
    ``MISMATCH``, exit 1."""
    assert tp.main(["verify"]) == 0 and capsys.readouterr().out.startswith("ok ")
    (tmp_path / tp.FILE).write_text("{}")
    monkeypatch.setenv("FGDOPT_GAVEL", str(tmp_path))
    assert tp.main(["verify"]) == 1 and capsys.readouterr().out.startswith("MISMATCH ")
