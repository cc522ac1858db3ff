"""CPU-aware allocation (:mod:`fgdopt.cpu_aware`): the lending rules, the mechanism on the engine, the openb mapping."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.cpu_aware import RULES, CpuAware, CpuProfiles, lend, openb_cpu_profiles
from fgdopt.model import Cluster, TaskSet
from fgdopt.synergy.profiles import CPU_LEVELS, load_profiles
from fgdopt.timeline import simulate
from fgdopt.timeline.engine import FINISHED
from fgdopt.timeline.jobs import JobSet

HUNGRY = [1, 2, 3, 3, 3, 3, 3, 3, 3]   # speed 1, 2, 3 at 1, 2, 3 cores per GPU, flat beyond; ideal 3
FLAT = [1] * 9                          # no use for CPU; ideal 1
TWO = CpuProfiles([0, 1], ("hungry", "flat"), [HUNGRY, FLAT], [3.0, 1.0])


def _two_jobs(work_a: float = 300.0, work_b: float = 100.0):
    """One node of 8 cores and 2 GPUs; jobs A (hungry) and B (flat), 1 GPU and 1 core each, both at 0."""
    cluster = Cluster([8000], [100_000], [2], ["V100"])
    jobs = JobSet(TaskSet([1000, 1000], [1000, 1000], [1, 1], [1000, 1000]), [0.0, 0.0], [work_a, work_b])
    return cluster, jobs


@pytest.mark.parametrize(("rule", "finish_a", "lent_core_s", "cores"), [
    ("request", 300.0, 0.0, [1.0, 1.0]),
    ("proportional", 100.0, 600.0, [4.0, 4.0]),
    ("synergy", 100.0, 200.0, [3.0, 1.0]),
])
def test_two_jobs_on_one_node_by_hand(rule, finish_a, lent_core_s, cores):
    """8 cores, 2 GPUs: the GPU-proportional share is 4 cores per GPU; the requests (1 + 1) leave 6 cores.

    * ``request``: nothing lent, both at speed 1: A (300 s of work) ends at 300 s, B at 100 s.
    * ``proportional``: each may use 4 cores: 3 more each, 6 in all = the leftover, so both get 4. A runs at
      HUNGRY(4) / HUNGRY(1) = 3 and ends at 300 / 3 = 100 s; B (flat) at speed 1 ends at 100 s too; 6 cores lent
      for 100 s = 600 core-s.
    * ``synergy``: A may use its ideal 3 cores (2 more), B its ideal 1 (none): A gets 2 cores, speed 3, ends at
      100 s; 2 cores lent for 100 s = 200 core-s.
    """
    cluster, jobs = _two_jobs()
    mech = CpuAware(TWO, rule, cluster)
    result = simulate(cluster, jobs, "best-fit", "fifo", mechanism=mech)
    assert result.finish_s.tolist() == [finish_a, 100.0]
    assert mech.lent_core_s == pytest.approx(lent_core_s)
    assert mech.cores.tolist() == cores
    assert result.work_s.tolist() == [300.0, 100.0]                       # every job did its work, no more


def test_a_job_left_alone_gets_more_when_its_neighbour_leaves():
    """4 cores, 2 GPUs (2 per GPU), A (hungry) and B (flat) ask 1 core each: leftover 2. ``proportional``: each
    may use 2, so A gets 1 more (speed 2) and B 1 more. B (100 s) leaves at 100 s; A is then alone with 3 cores
    free, its share still 2 per GPU: speed 2 until its 300 s of work are done: 300 / 2 = 150 s. With ``synergy``
    A may use 3: it gets 2 (speed 3) from the start, so 300 / 3 = 100 s."""
    cluster = Cluster([4000], [100_000], [2], ["V100"])
    jobs = JobSet(TaskSet([1000, 1000], [1000, 1000], [1, 1], [1000, 1000]), [0.0, 0.0], [300.0, 100.0])
    prop = simulate(cluster, jobs, "best-fit", "fifo", mechanism=CpuAware(TWO, "proportional", cluster))
    syn = simulate(cluster, jobs, "best-fit", "fifo", mechanism=CpuAware(TWO, "synergy", cluster))
    assert prop.finish_s.tolist() == [150.0, 100.0]
    assert syn.finish_s.tolist() == [100.0, 100.0]


def test_speed_changes_mid_run_keep_the_progress_made():
    """8 cores, 2 GPUs, ``synergy``: A (hungry, 600 s of work, 1 core) alone from 0 gets 2 more cores (its ideal 3),
    speed 3. At 100 s (300 s of work done) C arrives: 1 GPU, 6 cores requested, leaving 8 - 1 - 6 = 1 core, so A
    drops to 2 cores, speed 2. C (flat, 50 s) ends at 150 s; A then gets its 3 cores again (speed 3): at 150 s it
    has done 300 + 2 x 50 = 400 s of work, the other 200 s take 200 / 3 s: A ends at 150 + 66.67 s."""
    cluster = Cluster([8000], [100_000], [2], ["V100"])
    jobs = JobSet(TaskSet([1000, 6000], [1000, 1000], [1, 1], [1000, 1000]), [0.0, 100.0], [600.0, 50.0])
    result = simulate(cluster, jobs, "best-fit", "fifo", mechanism=CpuAware(TWO, "synergy", cluster))
    assert result.finish_s[1] == 150.0
    assert result.finish_s[0] == pytest.approx(150.0 + 200.0 / 3)
    assert result.work_s.tolist() == [600.0, 50.0]


def test_lend_rules_by_hand():
    """Two jobs asking 1 core each, each may use 3, 3 cores left. ``proportional``: they ask 2 + 2 = 4 more, 3 are
    there: each gets 3/4 of its 2, 1.5. ``synergy``: gains of A for its 1st and 2nd core 0.5 and 0.1, of B 0.2 and
    0.8: core 1 to A (0.5 > 0.2), core 2 to B (0.2 > A's 0.1), core 3 to B (0.8 > 0.1): A 1, B 2."""
    table = {0: [1.0, 1.5, 1.6], 1: [1.0, 1.2, 2.0]}

    def gain(k, cores):
        return table[k][int(cores) - 1]

    request, want = np.array([1.0, 1.0]), np.array([3.0, 3.0])
    assert lend("proportional", 3.0, request, want).tolist() == [1.5, 1.5]
    assert lend("synergy", 3.0, request, want, gain).tolist() == [1.0, 2.0]
    assert lend("request", 3.0, request, want).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="unknown CPU rule 'nope'"):
        lend("nope", 3.0, request, want)


def test_profiles_speed_is_the_profile_ratio_and_bad_profiles_stop():
    """res18 (Synergy: 1 at 3 cores, 2.4 at 9): 9 cores on 1 GPU over a 3-core request is 2.4; 2 GPUs with 6 cores
    are 3 per GPU. A 0.5-core request reads the 1-core level (the lowest)."""
    table = load_profiles()
    prof = CpuProfiles.from_table(table, np.array([0, -1]), ("res18",))
    assert prof.speed(0, cores=9.0, gpus=1.0, request=3.0) == pytest.approx(2.4)
    assert prof.speed(0, cores=6.0, gpus=2.0, request=6.0) == 1.0
    assert prof.speed(0, cores=0.5, gpus=1.0, request=0.5) == 1.0
    assert prof.speed(1, cores=24.0, gpus=1.0, request=1.0) == 1.0                # not CPU-sensitive
    assert prof.ideal.tolist() == [9.0] and len(prof.rate[0]) == len(CPU_LEVELS)
    with pytest.raises(ValueError, match="job models must be -1 or in 0..0"):
        CpuProfiles([1], ("x",), [FLAT], [1.0])
    with pytest.raises(ValueError, match="finite and > 0"):
        CpuProfiles([0], ("x",), [[0.0] * 9], [1.0])
    with pytest.raises(ValueError, match="unknown CPU rule"):
        CpuAware(TWO, "nope", Cluster([8000], [1], [2], ["V100"]))


def test_openb_mapping_is_seeded_and_skips_cpu_only_jobs():
    tasks = TaskSet([1000] * 6, [0] * 6, [1, 0, 1, 2, 0, 1], [500, 0, 1000, 1000, 0, 1000])
    table = load_profiles()
    a, b = openb_cpu_profiles(tasks, table, 7), openb_cpu_profiles(tasks, table, 7)
    assert a.job_model.tolist() == b.job_model.tolist()
    assert (a.job_model[[1, 4]] == -1).all() and (a.job_model[[0, 2, 3, 5]] >= 0).all()
    assert a.models == table.models


def _random_run(data, rule):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    nodes, n = int(rng.integers(1, 4)), int(rng.integers(1, 12))
    gpus = rng.integers(1, 5, nodes)
    cluster = Cluster(rng.integers(4, 33, nodes) * 1000, [100_000] * nodes, gpus, ["V100"] * nodes)
    num = rng.integers(0, 3, n)
    milli = np.where(num == 1, rng.choice([250, 500, 1000], n), np.where(num > 1, 1000, 0))
    tasks = TaskSet(rng.integers(1, 5, n) * 1000, [1000] * n, num, milli)
    jobs = JobSet(tasks, np.sort(rng.integers(0, 50, n)).astype(float), rng.integers(1, 200, n).astype(float))
    rates = np.sort(rng.uniform(0.5, 3.0, (3, len(CPU_LEVELS))), axis=1)
    prof = CpuProfiles(np.where(num > 0, rng.integers(0, 3, n), -1), ("a", "b", "c"), rates,
                       rng.choice(CPU_LEVELS, 3).astype(float))
    return cluster, jobs, prof


class Audited(CpuAware):
    """CpuAware that checks, after every plan, that no node's jobs hold more cores than it has."""

    def plan(self, view):
        out = super().plan(view)
        state = view.state
        running = np.flatnonzero(state.node_of >= 0)
        held = np.bincount(state.node_of[running], weights=np.where(
            state.tasks.gpu_demand[running] > 0, self.cores[running], state.tasks.cpu_milli[running] / 1000.0),
            minlength=self.cluster.n_nodes)
        assert (held <= self.cluster.cpu_milli / 1000.0 + 1e-9).all(), held
        return out


@settings(max_examples=30, deadline=None)
@given(st.data(), st.sampled_from(RULES[1:]))
def test_lending_conserves_work_and_never_overcommits_a_node(data, rule):
    """Random clusters, jobs and monotone profiles: every finished job did exactly its work (the engine's check),
    no node's jobs ever hold more cores than it has, lending never slows a job (it ran at most its work's time), and
    ``request`` is the run without the mechanism, bit for bit."""
    cluster, jobs, prof = _random_run(data, rule)
    result = simulate(cluster, jobs, "best-fit", "fifo", mechanism=Audited(prof, rule, cluster))
    done = result.status == FINISHED
    assert np.allclose(result.work_s[done], jobs.duration_s[done])
    assert (result.run_s[done] <= jobs.duration_s[done] + 1e-6).all()
    plain = simulate(cluster, jobs, "best-fit", "fifo")
    base = simulate(cluster, jobs, "best-fit", "fifo", mechanism=CpuAware(prof, "request", cluster))
    assert np.array_equal(plain.finish_s, base.finish_s, equal_nan=True)


def test_study_table_pairs_each_run_with_its_request_run():
    """jct_ratio: the mean over the jobs finished in both runs of JCT over JCT under ``request``. Request JCTs
    100, 200, NaN (unfinished); synergy 50, 200, 10: the third job is not in both, so (0.5 + 1.0) / 2 = 0.75. A run of
    another policy has no request twin: NaN."""
    from experiments.cpu_aware import COLUMNS, table

    def run(policy, rule, jct):
        row = dict.fromkeys(COLUMNS, 0.0) | {"trace": "default", "seed": 42, "load": 0.9, "policy": policy,
                                              "rule": rule, "jct_ratio": np.nan}
        return {"row": row, "jct": np.array(jct, dtype=np.float64)}

    frame = table([run("fgd", "request", [100, 200, np.nan]), run("fgd", "synergy", [50, 200, 10]),
                   run("best-fit", "synergy", [1, 1, 1])])
    assert frame["jct_ratio"].tolist()[:2] == [1.0, 0.75]
    assert np.isnan(frame["jct_ratio"].iloc[2])


def test_figure_of_runs_where_no_job_finished(tmp_path, laid_out):
    """A stream none of whose jobs fits the cluster (openb-format CSVs of your own) finishes no job: mean JCT NaN,
    F(M) 100. The figure set its y limit to NaN (matplotlib's ValueError after every run had finished); now the
    unmeasured values are left out and the JCT axis spans (0, 1)."""
    from fgdopt.plot import plot_cpu_aware

    runs = pd.DataFrame({"load": 1.1, "policy": "fgd", "rule": list(RULES), "mean_jct_s": np.nan,
                         "frag_time_avg_pct": 100.0})
    plot_cpu_aware(runs, tmp_path / "cpu_aware.png")
    jct, frag = laid_out[0].axes
    assert jct.get_ylim() == (0.0, 1.0) and frag.get_ylim() == pytest.approx((0.0, 115.0))
