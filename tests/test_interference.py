"""Interference-aware FGD (fgdopt.policies.interference), openb jobs mapped to Gavel's types
(fgdopt.hetero.interference) and the study experiments.interference: a hand-worked placement and its timeline,
weight 0 is FGD choice for choice, the co-tenant cache against a rebuild, the study's files and its --quick."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from fgdopt.frag import Workload
from fgdopt.hetero.interference import colocation_factors, gavel_model, openb_classes, openb_interference
from fgdopt.hetero.throughputs import JOB_TYPES
from fgdopt.interference import Interference
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import make_policy
from fgdopt.policies.interference import InterferenceFGD, interference_fgd
from fgdopt.state import ClusterState
from fgdopt.timeline import JobSet, simulate

ONE_NODE = Cluster([32000], [65536], [2], ["V100"])
# A and B: half a GPU each (classes 0 and 1, at half speed beside each other); C: one whole GPU (class 2)
HAND = TaskSet([0, 0, 0], [0, 0, 0], [1, 1, 1], [500, 500, 1000])
HAND_JOBS = JobSet(HAND, [0.0, 1.0, 2.0], [10.0, 10.0, 5.0])
HALF = np.ones((3, 3))
HALF[0, 1] = HALF[1, 0] = 0.5
HAND_INTER = Interference([0, 1, 2], {"V100": HALF})


def test_hand_worked_fgd_co_locates_and_the_aware_variant_spreads():
    # M = {half GPU: 2/3, whole GPU: 1/3}. A runs on GPU 0 ([500, 1000] free, F = 500/3: the whole-GPU shape cannot
    # use GPU 0's 500). B on GPU 0 -> [0, 1000], F = 0, delta -166.7, FGD score int(100 sigmoid(0.1667)) = 54;
    # B on GPU 1 -> [500, 500], the whole-GPU shape fits nowhere, F = 1000/3, delta +166.7, score 45.
    # Co-locating costs 500 (1 - 0.5) + 500 (1 - 0.5) = 500 milli-GPU of slowed capacity: at weight 2 the cost is
    # -166.7 + 1000 = 833.3, score int(100 sigmoid(-0.8333)) = 30 < 45, so B goes to GPU 1; at weight 0.5 the cost
    # is 83.3, score 47 > 45, B still joins A.
    workload = Workload.from_tasks(HAND)
    state = ClusterState(ONE_NODE, HAND)
    state.place(0, 0, (0,))
    fgd = make_policy("fgd", workload=workload)
    assert fgd(state, HAND[1]) == (0, (0,))
    for weight, gpu in ((0.0, 0), (0.5, 0), (2.0, 1)):
        assert InterferenceFGD(workload, HAND_INTER, weight)(state, HAND[1], job=1) == (0, (gpu,))
    aware = InterferenceFGD(workload, HAND_INTER, 2.0)
    np.testing.assert_array_equal(aware.slowdown(state, 1, np.array([0])), [[500.0, 0.0]])
    np.testing.assert_array_equal(aware.slowdown(state, 2, np.array([0])), [[0.0, 0.0]])   # class 2: factor 1
    state.place(1, 0, (1,))
    np.testing.assert_array_equal(aware.slowdown(state, 0, np.array([0])), [[0.0, 500.0]])  # A itself: factor 1
    # the timelines. FGD: A alone 0..1, then A and B at half speed; A has 9 s of work left at 1 s -> 19; B did 9 s
    # by 19 and finishes alone at 20; C takes the free GPU 2..7. JCT 19, 19, 5.
    r = simulate(ONE_NODE, HAND_JOBS, "fgd", "backfill", interference=HAND_INTER)
    assert (r.finish_s - HAND_JOBS.submit_s).tolist() == [19.0, 19.0, 5.0]
    assert r.start_s.tolist() == [0.0, 1.0, 2.0]
    # aware (weight 2): A 0..10 on GPU 0, B 1..11 on GPU 1, C waits for a whole GPU until A leaves: 10..15.
    # JCT 10, 10, 13: the sharing jobs run at full speed, the whole-GPU job waits 8 s (fewer GPUs allocated)
    r = simulate(ONE_NODE, HAND_JOBS, InterferenceFGD(workload, HAND_INTER, 2.0), "backfill", interference=HAND_INTER)
    assert (r.finish_s - HAND_JOBS.submit_s).tolist() == [10.0, 10.0, 13.0]
    assert r.start_s.tolist() == [0.0, 1.0, 10.0]
    assert r.run_s.tolist() == [10.0, 10.0, 5.0]


class Recorder:
    """Wraps a policy and records every (job, choice)."""

    job_aware = True

    def __init__(self, policy):
        self.policy, self.calls, self.name = policy, [], policy.name

    def __call__(self, state, task, job=None):
        aware = getattr(self.policy, "job_aware", False)
        choice = self.policy(state, task, job=job) if aware else self.policy(state, task)
        self.calls.append((job, choice))
        return choice


def random_run(seed: int, n: int = 160, mean_s: float = 60.0):
    """A small mixed cluster and a random job stream (CPU-only, sharing, whole-GPU jobs; priorities) with random
    interference factors in [1/2, 1] on two of its models."""
    rng = np.random.default_rng(seed)
    k = 10
    gpus = rng.choice([1, 2, 4, 8], k)
    cluster = Cluster(rng.choice([16000, 32000, 64000], k), np.full(k, 262144), gpus,
                      rng.choice(["V100", "T4", "P100"], k))
    kind = rng.choice(3, n, p=[0.15, 0.6, 0.25])
    num_gpu = np.where(kind == 0, 0, np.where(kind == 1, 1, rng.choice([1, 2, 4], n)))
    gpu_milli = np.where(kind == 0, 0, np.where(kind == 1, rng.choice([100, 250, 300, 500, 700], n), 1000))
    tasks = TaskSet(rng.choice([1000, 2000, 4000], n), rng.choice([1024, 4096], n), num_gpu, gpu_milli)
    jobs = JobSet(tasks, np.sort(rng.uniform(0, 400, n).round()), rng.exponential(mean_s, n).round() + 1,
                  priority=rng.choice([0, 1], n))
    c = 5
    inter = Interference(rng.integers(c, size=n), {"V100": rng.uniform(0.5, 1.0, (c, c))},
                         default=rng.uniform(0.5, 1.0, (c, c)))
    return cluster, jobs, inter


# seeds 1 and 2 are further runs of seed 0's check (extended tier); the default run also makes it on the openb
# cluster (test_weight_zero_is_fgd_on_the_openb_cluster)
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.extended),
                                  pytest.param(2, marks=pytest.mark.extended)])
def test_weight_zero_is_fgd_choice_for_choice(seed):
    cluster, jobs, inter = random_run(seed)
    workload = Workload.from_tasks(jobs.tasks)
    runs = []
    for policy in (make_policy("fgd", seed=seed, workload=workload), InterferenceFGD(workload, inter, 0.0, seed)):
        rec = Recorder(policy)
        r = simulate(cluster, jobs, rec, "backfill", seed=seed, interference=inter)
        runs.append((rec.calls, r))
    (fgd_calls, fgd), (aware_calls, aware) = runs
    assert len(fgd_calls) > 100 and sum(c is not None and len(c[1]) == 1 for _, c in fgd_calls) > 50
    assert aware_calls == fgd_calls
    np.testing.assert_array_equal(aware.finish_s, fgd.finish_s)
    np.testing.assert_array_equal(aware.node, fgd.node)


class CheckedFGD(InterferenceFGD):
    """Checks the incrementally kept co-tenant table against a rebuild from scratch at every call."""

    def _sync_tenants(self, state):
        super()._sync_tenants(state)
        kept = (self._count.copy(), self._mass.copy(), self._tenants.copy())
        self._rebuild(state)
        for a, b in zip(kept, (self._count, self._mass, self._tenants), strict=True):
            np.testing.assert_array_equal(a, b)
        self.checks = getattr(self, "checks", 0) + 1


@pytest.mark.parametrize("mechanism", ["none", "transparent"])
def test_the_co_tenant_cache_equals_a_rebuild(mechanism):
    cluster, jobs, inter = random_run(5, 200, mean_s=400.0)
    workload = Workload.from_tasks(jobs.tasks)
    policy = CheckedFGD(workload, inter, 1.0, seed=5)
    r = simulate(cluster, jobs, policy, "backfill", seed=5, interference=inter, mechanism=mechanism)
    assert policy.checks > 50
    assert r.counts()["finished"] == len(jobs)
    if mechanism == "transparent":
        assert r.preemptions.sum() > 0


def test_a_positive_weight_slows_fewer_jobs_on_random_runs():
    # over a few random runs, weight 5 shares GPUs less and loses less sharing run time than FGD
    lost = {"fgd": 0.0, "aware": 0.0}
    for seed in range(4):
        cluster, jobs, inter = random_run(seed)
        workload = Workload.from_tasks(jobs.tasks)
        for name, policy in (("fgd", make_policy("fgd", seed=seed, workload=workload)),
                             ("aware", InterferenceFGD(workload, inter, 5.0, seed))):
            r = simulate(cluster, jobs, policy, "backfill", seed=seed, interference=inter)
            lost[name] += float((r.run_s - jobs.duration_s).sum())
    assert lost["aware"] < lost["fgd"]


def test_factory_and_bad_input():
    workload = Workload.from_tasks(HAND)
    policy = interference_fgd(HAND_INTER, 2.0)(seed=0, workload=workload, ranks=None, gpu_choice="lowest-index",
                                               topology=None)
    assert isinstance(policy, InterferenceFGD) and policy.weight == 2.0
    with pytest.raises(ValueError, match="workload"):
        interference_fgd(HAND_INTER)(seed=0)
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="weight"):
            InterferenceFGD(workload, HAND_INTER, bad)
    with pytest.raises(ValueError, match="gpu_choice"):
        InterferenceFGD(workload, HAND_INTER, 1.0, gpu_choice="topo-fgd")
    state = ClusterState(ONE_NODE, HAND.take([0, 1]))
    with pytest.raises(ValueError, match="3 job classes for 2 jobs"):
        InterferenceFGD(workload, HAND_INTER, 1.0)(state, HAND[0], job=0)
    # no job index: no class, FGD's choice
    state = ClusterState(ONE_NODE, HAND)
    state.place(0, 0, (0,))
    assert InterferenceFGD(workload, HAND_INTER, 2.0)(state, HAND[1]) == (0, (0,))


def test_openb_classes_and_gavel_factors(gavel_table):
    cls = openb_classes(26_000, seed=3)
    counts = np.bincount(cls, minlength=len(JOB_TYPES))
    assert len(counts) == 26 and counts.min() > 850 and counts.max() < 1150            # uniform over the 26 types
    assert (openb_classes(10, seed=3) == cls[:10]).all() and not (openb_classes(10, seed=4) == cls[:10]).all()
    factors = colocation_factors(gavel_table)
    v100 = factors["v100"]
    assert v100.shape == (26, 26) and v100.min() == 0.5 and v100.max() <= 1.0
    a, b = JOB_TYPES.index("ResNet-50 (batch size 64)"), JOB_TYPES.index("A3C")
    own, _ = gavel_table.pair(JOB_TYPES[a], JOB_TYPES[b], 1, "v100")
    assert v100[a, b] == pytest.approx(max(own / gavel_table.throughput(JOB_TYPES[a], 1, "v100"), 0.5))
    cluster = Cluster([1000] * 3, [1000] * 3, [1, 1, 1], ["P100", "T4", "V100M32"])
    inter = openb_interference(cluster, 7, gavel_table, seed=3)
    assert (inter.job_class == openb_classes(7, seed=3)).all()
    assert set(inter.factor) == {"P100"} and np.array_equal(inter.factor["P100"], factors["p100"])
    assert np.array_equal(inter.default, v100)
    assert [gavel_model(m) for m in cluster.model] == ["p100", "v100", "v100"]


@pytest.mark.trace
def test_weight_zero_is_fgd_on_the_openb_cluster(openb_dir, gavel_table):
    from fgdopt.timeline import openb_jobs

    cluster, jobs = openb_jobs("default", 1.1, 300, seed=7, warm=False, data_dir=openb_dir)
    inter = openb_interference(cluster, len(jobs), gavel_table, seed=7)
    workload = Workload.from_tasks(jobs.tasks)
    calls = []
    for policy in (make_policy("fgd", seed=7, workload=workload), InterferenceFGD(workload, inter, 0.0, seed=7)):
        rec = Recorder(policy)
        simulate(cluster, jobs, rec, "backfill", seed=7, workload=workload, interference=inter, frag=False)
        calls.append(rec.calls)
    assert len(calls[0]) == len(jobs) and calls[1] == calls[0]


@pytest.mark.trace
@pytest.mark.slow
def test_quick_is_ten_runs_of_1000_jobs(openb_dir, gavel_table, tmp_path, monkeypatch):
    """--quick: load 1.1, seed 42, 1,000 jobs; fgd, best-fit, gpu-packing and the aware FGD at weights 0 and 1, each
    with and without interference: 10 runs (the cells handed to the runner; none is run here)."""
    from experiments import interference as study

    seen = {}

    def capture(name, run, cells, *rest):
        seen["cells"] = cells
        return None, 1

    monkeypatch.setattr(study, "run_and_write", capture)
    assert study.main(["--quick", "--data-dir", str(openb_dir), "--gavel-dir", str(gavel_table.source.parent),
                       "--output", str(tmp_path / "out")]) == 1
    cells = seen["cells"]
    assert len(cells) == 10 and {c[2] for c in cells} == {1.1} and {c[1] for c in cells} == {42}
    assert {c[6] for c in cells} == {1000}
    assert sorted({(c[3], None if c[4] != c[4] else c[4]) for c in cells}, key=str) == sorted(
        [("fgd", None), ("best-fit", None), ("gpu-packing", None), ("fgd-interference", 0.0),
         ("fgd-interference", 1.0)], key=str)


def test_study_writes_its_files(openb_dir, gavel_table, tmp_path, capsys, monkeypatch):
    from experiments import interference as study
    from fgdopt.timeline import openb_jobs

    # Without the warm start (about 8,600 jobs placed before the stream) the runs take a second, not fifteen.
    monkeypatch.setattr(study, "openb_jobs", functools.partial(openb_jobs, warm=False))
    out = tmp_path / "out"
    assert study.main(["--n-jobs", "60", "--load", "0.8", "--policies", "fgd,fgd-interference",
                       "--weights", "0", "--data-dir", str(openb_dir), "--gavel-dir",
                       str(gavel_table.source.parent), "--output", str(out)]) == 0
    frame = pd.read_csv(out / "interference.csv")
    assert tuple(frame.columns) == study.COLUMNS
    assert len(frame) == 4 and set(frame["interference"]) == {"on", "off"}
    assert (out / "interference.png").stat().st_size > 0
    frame["weight"] = frame["weight"].fillna(-1.0)
    on = frame[frame["interference"] == "on"].set_index(["policy", "weight"])
    metrics = ["alloc_time_avg_pct", "mean_jct_s", "mean_slowdown", "jct_ratio"]
    assert on.loc[("fgd", -1.0), metrics].tolist() == on.loc[("fgd-interference", 0.0), metrics].tolist()  # w=0: FGD
    off = frame[frame["interference"] == "off"]
    assert off["mean_slowdown"].tolist() == pytest.approx([1.0] * 2) and off["jct_ratio"].isna().all()
    assert (on["mean_slowdown"] > 1.0).all() and (on["jct_ratio"] > 1.0).all()
    assert "fgd-interference" in capsys.readouterr().out


def test_weights_without_the_aware_policy_are_refused(tmp_path, capsys):
    """``--policies fgd --weights 1`` ran FGD alone and dropped the weights without a word; it stops in one line."""
    from experiments import interference

    with pytest.raises(SystemExit) as stop:
        interference.main(["--policies", "fgd,best-fit", "--weights", "1", "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and not (tmp_path / "o").exists()
    assert err == ("python -m experiments.interference: error: --weights weighs fgd-interference's slowdown term: "
                   "give --policies with fgd-interference (the weights would be ignored)")


@pytest.mark.parametrize(("factor", "said"), [
    ([1.0, 0.5], "square matrix"),                          # one dimension
    ([[1.0, 0.5, 0.5], [0.8, 1.0, 1.0]], "square matrix"),  # two, not square
    ([[1.0]], "square matrix"),                             # square, but class 1 beyond it
    ([[1.0, 0.5], [0.8, 0.0]], "finite and > 0"),           # a zero factor
    ([[1.0, 0.5], [np.inf, 1.0]], "finite and > 0"),        # an infinite one
])
def test_interference_factors_are_checked_one_fault_at_a_time(factor, said):
    """Jobs of classes 0 and 1: a factor table that is not a square matrix covering both classes, or that holds a
    factor that is not finite and above 0, is refused in one line (each fault alone)."""
    with pytest.raises(ValueError, match=said):
        Interference([0, 1], {"T4": factor})
