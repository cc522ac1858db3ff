"""MIG over time (fgdopt.mig.timeline): re-layout evictions worked by hand, the exact one-GPU re-layout, the static
partition through the one feasibility rule, and properties on random small MIG instances."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.mig.slices import MIG_MODELS, relayouts, static_model_name
from fgdopt.mig.timeline import mig_openb_jobs, mix_configs, static_cluster
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState
from fgdopt.timeline import JobSet, run_stats, simulate
from fgdopt.timeline.engine import REJECTED
from fgdopt.timeline.metrics import time_integral

A100 = Cluster([64000], [1 << 20], [1], ["A100-40GB"])
G1, G2, G3, G4, G7 = 142, 285, 428, 571, 1000                 # A100-40GB compute codes of 1g, 2g, 3g, 4g, 7g


def _blocked_3g(f_submit: float) -> JobSet:
    """One A100: 1g jobs A-E at t=0 take slices 0-4 (A, C, D, E for 10 s; B for 1000 s), F (1g, 1000 s) and G (1g,
    10 s) at ``f_submit`` take slices 5 and 6 (or, at t=0, in input order); from t=15 only B (slice 1) and F
    (slice 5) run: six slices free, but a 3g (slices 0-3 or 4-7) fits at neither start. X, a 3g of 100 s, arrives at
    t=20."""
    tasks = TaskSet([1000] * 8, [1024] * 8, [1] * 8, [G1] * 7 + [G3], names=tuple("ABCDEFGX"))
    return JobSet(tasks, [0, 0, 0, 0, 0, f_submit, f_submit, 20], [10, 1000, 10, 10, 10, 1000, 10, 100])


def test_without_a_relayout_the_blocked_3g_waits_for_a_tenant_to_leave():
    for queue in ("fifo", "backfill"):
        r = simulate(A100, _blocked_3g(5.0), "mig-first-fit", queue)
        assert r.start_s[7] == 1000.0 and r.finish_s[7] == 1100.0          # B leaves at 1000: slices 0-3 free
        assert r.evictions.sum() == 0 and run_stats(r)["evictions"] == 0


def test_repack_evicts_exactly_the_tenant_that_loses_least():
    jobs = _blocked_3g(5.0)
    # at t=20 moving B (start 0 for X) would lose 20 s of B's progress, moving F (start 4) 15 s: F is the victim
    at20 = simulate(A100, jobs, "mig-first-fit", "fifo", mechanism="mig-repack", until_s=20.0)
    assert at20.state.starts_of[7] == (4,) and at20.state.starts_of[1] == (1,)
    assert at20.state.starts_of[5] == (0,)                  # F re-queued and restarted at once at the lowest free 1g
    assert at20.state.slices[0, 0] == 0b11110011
    for queue in ("fifo", "backfill"):
        r = simulate(A100, jobs, "mig-first-fit", queue, mechanism="mig-repack")
        assert r.evictions.tolist() == [0, 0, 0, 0, 0, 1, 0, 0] and r.preemptions.sum() == 0
        assert r.start_s[7] == 20.0 and r.finish_s[7] == 120.0
        assert r.lost_s[5] == 15.0 and r.overhead_s[5] == 7.0           # no checkpoint in 15 s; Helios' 7 s restart
        assert r.finish_s[5] == 20.0 + 7.0 + 1000.0 and r.run_s[5] == 15.0 + 1007.0
        stats = run_stats(r)
        assert stats["evictions"] == 1 and stats["thrashed_jobs"] == 0
        assert stats["lost_gpu_s"] == pytest.approx(0.142 * 15.0)
        assert stats["overhead_gpu_s"] == pytest.approx(0.142 * 7.0)


def test_repack_ties_go_to_the_lowest_start():
    # F also from t=0 (slice 5): B and F lose 20 s each; the tie goes to start 0, so B moves (to slice 4)
    at20 = simulate(A100, _blocked_3g(0.0), "mig-first-fit", "fifo", mechanism="mig-repack", until_s=20.0)
    assert at20.evictions.tolist() == [0, 1, 0, 0, 0, 0, 0, 0]
    assert at20.state.starts_of[7] == (0,) and at20.state.starts_of[1] == (4,) and at20.state.starts_of[5] == (5,)


def test_relayouts_of_one_gpu():
    a100 = MIG_MODELS["A100-40GB"]
    one, two, three, four = (a100.profile_for(m) for m in (G1, G2, G3, G4))
    assert relayouts(a100, [(one, 1), (one, 5)], three) == (1, [(0, (0,)), (4, (1,))])
    # 1g at 0, 2, 4, 6: a 3g at 0 leaves 5 and 7 for the two moved 1g, and slice 7 takes no 1g; at 4 it leaves 1 and 3
    assert relayouts(a100, [(one, 0), (one, 2), (one, 4), (one, 6)], three) == (2, [(4, (2, 3))])
    assert relayouts(a100, [(four, 0), (two, 4)], two) == (-1, [])     # 8 slices asked, but 2g never starts at 6
    assert relayouts(a100, [(one, 0)], three) == (0, [(4, ())])         # fits in place
    assert relayouts(a100, [(four, 0), (two, 4)], four) == (-1, [])     # more slices than the GPU has


def test_the_static_partition_refuses_a_profile_it_has_no_free_instance_of():
    balanced = static_cluster(A100, "all-balanced")
    assert balanced.model[0] == "A100-40GB[3g.20gb@4+2g.10gb@0+1g.5gb@2+1g.5gb@3]"
    tasks = TaskSet([1000] * 6, [1024] * 6, [1] * 6, [G3, G3, G1, G1, G1, G4])
    s = ClusterState(balanced, tasks)
    s.place(0, 0, (0,))
    assert s.starts_of[0] == (4,)                                      # the layout's one 3g instance
    assert s.check(tasks[1], 0) == "MIG: no 1 GPU(s) with a free 3g.20gb start on node 0"   # slices 0-3 are free
    assert s.check(tasks[1], 0, (0,), (0,)) == "MIG: 3g.20gb cannot start at slice 0 (allowed (4,))"
    s.place(2, 0, (0,))
    s.place(3, 0, (0,))
    assert (s.starts_of[2], s.starts_of[3]) == ((2,), (3,))
    assert not s.fits(tasks[4], 0)                   # slices 0-1 free, but they are the 2g instance
    jobs = JobSet(tasks, [0.0] * 6, [10.0] * 6)
    for policy in ("mig-first-fit", "mig-best-fit", "mig-fgd", "mig-greedy"):
        r = simulate(balanced, jobs, policy, "backfill")
        assert r.start_s[:5].tolist() == [0.0, 10.0, 0.0, 0.0, 10.0] and r.status[5] == REJECTED   # no 4g instance
    dyn = simulate(A100, jobs.take(range(5)), "mig-first-fit", "backfill")
    assert dyn.start_s.tolist() == [0.0, 0.0, 10.0, 10.0, 10.0]   # dynamic: both 3g at once, the 1g after them


def test_static_model_names_are_checked():
    with pytest.raises(ValueError, match="not a valid static layout"):
        static_model_name("A100-40GB", (("3g.20gb", 0), ("4g.20gb", 0)))        # overlapping instances
    with pytest.raises(ValueError, match="no MIG config"):
        static_model_name("A100-40GB", "all-9g")
    assert "A100-40GB[1g.5gb@7]" not in MIG_MODELS                                  # 1g never starts at 7
    assert list(MIG_MODELS) == ["A100-40GB", "A100-80GB", "H100-80GB", "A30-24GB"]   # static names are not listed


def test_mix_configs_follow_the_profile_mix():
    two = Cluster([64000] * 2, [1 << 20] * 2, [1, 1], ["A100-40GB"] * 2)
    # targets: 8 slices of 3g and 8 of 7g; all-3g and all-7g both cover 8, all-3g comes first in the menu
    assert mix_configs(two, {"3g.20gb": 1.0, "7g.40gb": 1.0}) == ["all-3g", "all-7g"]
    assert mix_configs(two, {"7g.40gb": 1.0}) == ["all-7g", "all-7g"]


def _random_mig(seed: int):
    rng = np.random.default_rng(seed)
    cluster = Cluster([64000] * 2, [1 << 20] * 2, [int(rng.integers(1, 3)), 2], ["A100-40GB"] * 2)
    n = int(rng.integers(6, 25))
    milli = rng.choice([0, G1, G1, G2, G3, G4, G7], size=n)
    tasks = TaskSet([4000] * n, [1024] * n, (milli > 0).astype(int), milli)
    jobs = JobSet(tasks, np.round(rng.uniform(0, 200, n)), np.round(rng.exponential(300, n)) + 1)
    return cluster, jobs


# 20 examples (was 40): each is three runs of the same crowded MIG workload
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), queue=st.sampled_from(["fifo", "backfill"]),
       policy=st.sampled_from(["mig-first-fit", "mig-best-fit", "mig-fgd", "mig-greedy"]))
def test_mig_runs_validate_and_only_repack_evicts(seed, queue, policy):
    cluster, jobs = _random_mig(seed)
    instants = np.unique(jobs.submit_s)                       # the state validated after each arrival instant
    runs = {"none": simulate(cluster, jobs, policy, queue, seed=seed, snapshots=instants),
            "mig-repack": simulate(cluster, jobs, policy, queue, seed=seed, snapshots=instants, mechanism="mig-repack"),
            "static": simulate(static_cluster(cluster, ["all-balanced", "all-7g"]), jobs, policy, queue, seed=seed,
                               snapshots=instants)}
    for name, r in runs.items():
        assert r.preemptions.sum() == r.suspensions.sum() == r.migrations.sum() == 0
        assert (r.evictions.sum() > 0) <= (name == "mig-repack")
        # GPU-time: every job's milli-GPU seconds are its duration plus what it lost and spent (check() per job too)
        end = float(r.series["time_s"].iloc[-1])
        integral = time_integral(r.series["time_s"].to_numpy(), r.series["alloc_milli"].to_numpy(), (0.0, end))
        spent = jobs.tasks.gpu_demand * np.where(r.status == REJECTED, 0.0, jobs.duration_s + r.lost_s + r.overhead_s)
        assert integral == pytest.approx(float(spent.sum()), rel=1e-9, abs=1e-6)
    victims = runs["mig-repack"].evictions > 0
    assert (jobs.tasks.gpu_milli[victims] < G7).all()           # only sharing instances are ever moved


def test_the_property_instances_do_relayout():
    # the random instances above are crowded enough that mig-repack evicts on some of them, and not on all
    counts = [int(simulate(*_random_mig(seed), "mig-first-fit", "fifo", mechanism="mig-repack").evictions.sum())
              for seed in range(40)]
    assert 0 < sum(c > 0 for c in counts) < len(counts), counts


def test_repack_on_a_non_mig_cluster_changes_nothing():
    c = Cluster([8000], [1024], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 3, [0] * 3, [1] * 3, [600, 600, 300]), [0.0, 0.0, 1.0], [10.0, 5.0, 2.0])
    a, b = simulate(c, jobs, "best-fit", "fifo"), simulate(c, jobs, "best-fit", "fifo", mechanism="mig-repack")
    assert a.series.equals(b.series) and np.array_equal(a.finish_s, b.finish_s) and b.evictions.sum() == 0


def test_mig_openb_jobs(openb_dir):
    cluster, jobs = mig_openb_jobs(8, 0.9, 400, seed=3, data_dir=openb_dir)
    assert cluster.models == ("A100-40GB",) and jobs.measured.sum() > 300
    codes = {0, G1, G2, G3, G4, G7}
    assert set(jobs.tasks.gpu_milli.tolist()) <= codes and set(jobs.tasks.gpu_spec.tolist()) == {""}
    r = simulate(cluster, jobs, "mig-fgd", "backfill", mechanism="mig-repack")
    assert r.counts()["rejected"] == 0                          # only shapes an empty node can hold are drawn
