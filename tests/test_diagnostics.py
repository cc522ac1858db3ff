"""The diagnostics over time (fgdopt.timeline.diagnostics), the free re-packing mechanism (ceiling c) and the
pinned-nodes family (fgdopt.timeline.suites): hand-worked values, and properties over random instances."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.diagnostics import pooled_list_schedule, wait_split, zero_wait_profile
from fgdopt.timeline.preemption import FreeRepack
from fgdopt.timeline.schedule import Schedule, objective_value, recorded_run, validate_schedule
from fgdopt.timeline.suites import PINNED_FAMILY_WAIT, pinned_nodes_family, random_time_instance


def _jobs(rows, specs=None) -> JobSet:
    """Jobs from ``(num_gpu, gpu_milli, submit_s, duration_s)`` (1 core, 1 GiB each)."""
    n = len(rows)
    tasks = TaskSet([1000] * n, [1024] * n, [r[0] for r in rows], [r[1] for r in rows], specs or [""] * n,
                    names=tuple(f"J{i}" for i in range(n)))
    return JobSet(tasks, [r[2] for r in rows], [r[3] for r in rows])


def _nodes(gpus, models) -> Cluster:
    return Cluster([32_000] * len(gpus), [65_536] * len(gpus), list(gpus), list(models))


def test_zero_wait_profile_by_hand():
    """One node of 2 GPUs; A [0, 10), B [5, 15), C [6, 8), one GPU each. GPU demand: 1000 on [0, 5), 2000 on
    [5, 6), 3000 on [6, 8), 2000 on [8, 10), 1000 on [10, 15): peak 3000 = 1.5 x 2000, above capacity 2 s."""
    prof = zero_wait_profile(_nodes([2], ["T4"]), _jobs([(1, 1000, 0, 10), (1, 1000, 5, 10), (1, 1000, 6, 2)]))
    gpu = prof[(prof["group"] == "all") & (prof["resource"] == "gpu")].iloc[0]
    assert (gpu["peak"], gpu["peak_frac"], gpu["above_s"], gpu["jobs"]) == (3000, 1.5, 2.0, 3)
    cpu = prof[(prof["group"] == "all") & (prof["resource"] == "cpu")].iloc[0]
    assert (cpu["peak"], cpu["above_s"]) == (3000, 0.0)
    assert set(prof["group"]) == {"all"}              # every job fits the one type


def test_profile_groups_count_confined_jobs_against_their_types():
    """A T4 node and a V100 node of 1 GPU each; two whole-GPU V100 jobs at once and one job of any model. The
    ``all`` group holds 3000 on 2000 milli-GPU; the V100 group (its confined jobs: the two V100 ones) holds 2000
    on 1000: both above capacity for the 10 s they overlap."""
    jobs = _jobs([(1, 1000, 0, 10), (1, 1000, 0, 10), (1, 1000, 0, 10)], ["V100", "V100", ""])
    prof = zero_wait_profile(_nodes([1, 1], ["T4", "V100"]), jobs).set_index(["group", "resource"])
    v100 = prof.loc[("V100x1-32c", "gpu")]
    assert (v100["jobs"], v100["peak_frac"], v100["above_s"]) == (2, 2.0, 10.0)
    assert prof.loc[("all", "gpu"), "peak_frac"] == 1.5
    assert ("T4x1-32c", "gpu") not in prof.index          # no job is confined to T4


def test_pooled_list_schedule_by_hand():
    """Pooled 2 GPUs, A [0, 10), B from 5, C from 6 (1 GPU, 2 s): C does not fit at 6 (A and B hold both), A
    leaves at 10, C starts then: waits 0, 0, 4, mean 4/3. Per type on a T4 and a V100 node (1 GPU each): two
    V100 jobs at 0 (10 s) take turns in the V100 pool (waits 0 and 10, mean 5) while the single pool (a) runs
    both at once (mean 0)."""
    s = pooled_list_schedule(_nodes([2], ["T4"]), _jobs([(1, 1000, 0, 10), (1, 1000, 5, 10), (1, 1000, 6, 2)]))
    assert s.start_s.tolist() == [0, 5, 10] and s.mean_wait_s == pytest.approx(4 / 3)
    two = _nodes([1, 1], ["T4", "V100"])
    jobs = _jobs([(1, 1000, 0, 10), (1, 1000, 0, 10)], ["V100", "V100"])
    assert pooled_list_schedule(two, jobs, per_type=True).mean_wait_s == 5.0
    assert pooled_list_schedule(two, jobs, per_type=False).mean_wait_s == 0.0


def test_gangs_count_every_part_and_a_gang_that_cannot_run_is_left_out():
    """Two CPU nodes of 32 cores. A gang of 2 parts of 20 cores and a 30-core job, both at 0 for 100 s: pooled,
    they hold 70 of 64 cores, so one waits 100 s (mean 50, ceilings (a) and (b)); counting the gang as one part
    (20 cores) the ceilings said 0, below the pooled LP's bound, and ``experiments.schedule --scale`` stopped
    calling the bound wrong. A gang of 3 parts of 17 cores (two do not share a node) is rejected: the profile and
    the ceilings leave it out as the engine does. No GPU asked of no GPU: a peak fraction of 0 (it said inf)."""
    cluster = Cluster([32_000] * 2, [65_536] * 2, [0, 0], ["", ""])
    tasks = TaskSet([20_000, 30_000, 17_000], [1024] * 3, [0] * 3, [0] * 3, [""] * 3, workers=[2, 1, 3])
    jobs = JobSet(tasks, [0, 0, 0], [100, 100, 100])
    prof = zero_wait_profile(cluster, jobs).set_index("resource")
    assert (prof.loc["cpu", "jobs"], prof.loc["cpu", "peak"], prof.loc["cpu", "above_s"]) == (2, 70_000, 100.0)
    assert prof.loc["memory", "peak"] == 3 * 1024
    assert (prof.loc["gpu", "capacity"], prof.loc["gpu", "peak"], prof.loc["gpu", "peak_frac"]) == (0, 0, 0.0)
    for per_type in (False, True):
        s = pooled_list_schedule(cluster, jobs, per_type=per_type)
        assert s.start_s[:2].tolist() in ([0, 100], [100, 0]) and np.isnan(s.start_s[2])
        assert s.mean_wait_s == 50.0


def test_sjf_order_by_hand():
    """One pooled GPU; A (0, 10 s), then B (1, 5 s) and C (1, 1 s): shortest first runs C at 10, B at 11 (waits
    0, 10, 9: mean 19/3); in submission order B at 10 and C at 15 (waits 0, 9, 14: mean 23/3)."""
    jobs = _jobs([(1, 1000, 0, 10), (1, 1000, 1, 5), (1, 1000, 1, 1)])
    one = _nodes([1], ["T4"])
    assert pooled_list_schedule(one, jobs, order="sjf").mean_wait_s == pytest.approx(19 / 3)
    assert pooled_list_schedule(one, jobs, order="fifo").mean_wait_s == pytest.approx(23 / 3)


def _pooled_feasible(cluster, jobs, start) -> bool:
    """Whether the jobs held over [start, start + duration) fit the pooled capacities at every start."""
    d = np.column_stack([jobs.tasks.gpu_demand, jobs.tasks.cpu_milli, jobs.tasks.memory_mib])
    cap = np.array([cluster.gpu.sum() * 1000, cluster.cpu_milli.sum(), cluster.memory_mib.sum()])
    end = start + jobs.duration_s
    for t in np.unique(start[np.isfinite(start)]):
        on = (start <= t) & (end > t)
        if (d[on].sum(axis=0) > cap).any():
            return False
    return True


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 6), st.integers(5, 30), st.sampled_from([0.7, 1.0, 1.5]), st.integers(0, 10_000))
def test_ceilings_on_random_instances(n_nodes, n_jobs, load, seed):
    """On random instances: the list schedules start every job at or after its submission, (a) fits the pooled
    capacities at every start, both are finite; the zero-wait profile is above a pooled capacity at some moment
    exactly when (a) makes some job wait (were every wait 0, (a) would be the zero-wait schedule); the split sums
    to the run's wait, each part at least 0."""
    inst = random_time_instance(n_nodes, n_jobs, load, seed)
    for per_type in (False, True):
        s = pooled_list_schedule(inst.cluster, inst.jobs, per_type=per_type, order="sjf")
        assert np.isfinite(s.mean_wait_s)
        assert (s.start_s >= inst.jobs.submit_s).all()
        if not per_type:
            assert _pooled_feasible(inst.cluster, inst.jobs, s.start_s)
    # the profile and the list schedule agree: zero wait fits the pools at every moment exactly when (a) is 0
    prof = zero_wait_profile(inst.cluster, inst.jobs)
    over = (prof[prof["group"] == "all"]["above_s"] > 0).any()
    assert over == (pooled_list_schedule(inst.cluster, inst.jobs, order="fifo").mean_wait_s > 0)
    _, run = recorded_run(inst.cluster, inst.jobs, "best-fit", "sjf")
    r = objective_value(inst.jobs, run, "mean-wait")
    a = pooled_list_schedule(inst.cluster, inst.jobs).mean_wait_s
    split = wait_split(r, a, r / 2)
    assert sum(split.values()) == pytest.approx(r)
    assert min(split.values()) >= 0


def test_wait_split_by_hand():
    """R = 100, A = 30, M = 60: capacity 30, non-migration 100 - 60 = 40, order and placement 30. A ceiling (c)
    above the run (M = 120) leaves no non-migration part; A above R makes it all capacity."""
    assert wait_split(100, 30, 60) == {"capacity_s": 30, "non_migration_s": 40, "order_and_placement_s": 30}
    assert wait_split(100, 30, 120) == {"capacity_s": 30, "non_migration_s": 0, "order_and_placement_s": 70}
    assert wait_split(100, 150, 60) == {"capacity_s": 100, "non_migration_s": 0, "order_and_placement_s": 0}


class _Spread:
    """Place on the feasible node with the most free milli-GPU (ties: lowest index), lowest GPUs."""

    name = "spread"

    def __call__(self, state, task):
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if not nodes.size:
            return None
        n = int(nodes[np.argmax(state.gpu_left[nodes].sum(axis=1))])
        gpus = np.flatnonzero(state.gpu_left[n] >= task.gpu_milli)[:task.num_gpu]
        return n, tuple(int(g) for g in gpus)


def test_free_repack_clears_a_node_by_hand():
    """Two nodes of 2 GPUs; A, B (1 GPU, submitted 0 and 1, 100 s), M (2 GPUs, submitted 2, 10 s). Spreading
    puts B on the other node, so M waits until A ends at 100 (wait 98, mean 98/3). With free re-packing, at 2
    node 0 (1000 milli-GPU used, as node 1; lowest index) is cleared: M starts there at once and A moves beside B
    (mean wait 0, one migration)."""
    cluster = _nodes([2, 2], ["T4", "T4"])
    jobs = _jobs([(1, 1000, 0, 100), (1, 1000, 1, 100), (2, 1000, 2, 10)])
    plain = simulate(cluster, jobs, _Spread(), "fifo", frag=False)
    assert np.nanmean(plain.start_s - jobs.submit_s) == pytest.approx(98 / 3)
    moved = simulate(cluster, jobs, _Spread(), "fifo", frag=False, mechanism=FreeRepack())
    assert moved.start_s.tolist() == [0, 1, 2] and moved.finish_s.tolist() == [100, 101, 12]
    assert moved.migrations.tolist() == [1, 0, 0] and moved.node[2] == 0


def test_pinned_family_engine_runs_equal_the_closed_form():
    """:func:`pinned_nodes_family` with its defaults: every engine run (placements and queues) has the
    hand-derived optimal mean wait 975 * 40 / 43 s over every job, 975 s over the 8-GPU jobs; the runs validate;
    starting every job at its submission fits the pooled capacities (so the pooled optimum is 0)."""
    inst = pinned_nodes_family()
    assert inst.optimum["mean-wait-on-time"] == pytest.approx(PINNED_FAMILY_WAIT)
    assert inst.optimum["stream-mean-wait"] == 975.0
    for policy in ("fgd", "best-fit"):
        for queue in ("fifo", "backfill", "sjf"):
            _, sched = recorded_run(inst.cluster, inst.jobs, policy, queue)
            validate_schedule(inst.cluster, inst.jobs, sched)
            assert objective_value(inst.jobs, sched, "mean-wait") == pytest.approx(PINNED_FAMILY_WAIT)
    assert _pooled_feasible(inst.cluster, inst.jobs, inst.jobs.submit_s.astype(float))
    prof = zero_wait_profile(inst.cluster, inst.jobs)
    assert (prof["above_s"] == 0).all()
    assert pooled_list_schedule(inst.cluster, inst.jobs).mean_wait_s == 0.0


def test_pinned_family_general_closed_form():
    """Two free nodes, 10 jobs of 100 s every 20 s: L = 0, 20, 100, 120, 200, 220, ...: waits 0, 0, 60, 60,
    120, 120, 180, 180, 240, 240 (mean 120 over the 8-GPU jobs); the engine reaches it."""
    inst = pinned_nodes_family(n_nodes=5, n_pinned=3, n_jobs=10, duration_s=100, gap_s=20)
    assert inst.optimum["stream-mean-wait"] == 120.0
    _, sched = recorded_run(inst.cluster, inst.jobs, "best-fit", "fifo")
    stream = np.arange(len(inst.jobs)) >= 3
    assert (sched.start_s - inst.jobs.submit_s)[stream].mean() == 120.0
    assert isinstance(sched, Schedule)
