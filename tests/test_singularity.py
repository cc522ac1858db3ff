"""Singularity's elasticity (fgdopt.elastic.singularity): jobs shrunk by time-slicing their replicas, and the planner
that shrinks jobs of low priority instead of preempting them.

The toy application of ``test_elastic`` (measured on every placement of up to 4 replicas) makes 1 progress unit per
second on its world size, wherever it runs (every placement steps in 1.0 s, no synchronization, gain 1); its jobs do
1,200 units in two epochs of 600.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgdopt.elastic.applications import Application, find_pollux, load_applications
from fgdopt.elastic.jobs import ElasticJob, packed, read_workload
from fgdopt.elastic.planners import make_jobs
from fgdopt.elastic.policies import Tiresias
from fgdopt.elastic.rounds import simulate_elastic
from fgdopt.elastic.singularity import SPLICE_OVERHEAD, Singularity, SlicedJob, sizes
from tests.pollux_oracle import run_intervals
from tests.test_elastic import Fixed, write_toy


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Application:
    """``test_elastic``'s toy, also measured on every placement of up to 4 replicas over up to 4 nodes."""
    folder = write_toy(tmp_path_factory.mktemp("traces"))
    table = pd.read_csv(folder / "placements.csv")
    more = pd.DataFrame([(p, b, 1.0, 0.0) for p in (13, 111, 112, 1111) for b in (16, 64)], columns=table.columns)
    pd.concat([table, more]).to_csv(folder / "placements.csv", index=False)
    return Application.load(folder, max_epochs=2, max_local_bsz=64)


def _sliced(toy, name: str = "a", world: int = 4, submit_s: float = 0.0, **kw) -> SlicedJob:
    return SlicedJob(name, toy, submit_s, replicas=world, batch_size=64, **kw)


@pytest.mark.parametrize(("overhead", "finish"), [(0.0, 2310.0), (SPLICE_OVERHEAD, 2371.0)])
def test_a_job_shrunk_from_4_to_2_gpus_runs_at_half_speed_less_the_overhead(toy, overhead, finish):
    """A job of world size 4 (1,200 units, 1 unit/s on 4 GPUs) on one node of 4 GPUs: planned at 60 s, it restarts
    until 90 s and does 210 units by 300 s; shrunk then to 2 GPUs it restarts until 330 s and runs at
    ``(1 - overhead) / 2`` unit/s. Without overhead (0.5 unit/s) its 990 units left take 1,980 s: complete at 2,310
    s. With 3% (0.485 unit/s): epoch 1 (390 units left) is crossed after round(390 / 0.485) = round(804.12) = 804 s,
    at 1,134 s, and epoch 2 (600 units) after round(1,237.11) = 1,237 s: complete at 2,371 s. Its GPU-seconds: 4 x
    240 (60..300 s) + 2 x (finish - 300). The same on fgdopt's engine. Not shrunk: 1,290 s."""
    plan = Fixed([0, 0, 0, 0], [0, 0], switch_s=300)
    job = _sliced(toy, overhead=overhead)
    result = run_intervals([job], plan, nodes=(4,))
    assert job.completion_s == finish and job.progress == job.work == 1200.0
    assert job.attained_gpu_s == 4 * 240 + 2 * (finish - 300)
    assert (job.delay_s, job.restarts) == (60.0, 1)
    on, _ = simulate_elastic([_sliced(toy, overhead=overhead)], plan, nodes=(4,))
    assert on.finish_s.tolist() == pytest.approx([finish], abs=1e-9)
    assert on.work_s.tolist() == pytest.approx([1200.0])
    whole = _sliced(toy, overhead=overhead)
    run_intervals([whole], Fixed([0, 0, 0, 0]), nodes=(4,))
    assert whole.completion_s == 1290.0 and result.stats()["makespan_s"] == finish


def test_bad_sliced_jobs_stop_with_one_line(toy):
    for kw, message in (({"overhead": 1.0}, "splicing overhead 1.0 outside"),
                        ({"overhead": -0.1}, "splicing overhead -0.1 outside"),
                        ({"world": 0}, "needs a world size >= 1")):
        with pytest.raises(ValueError, match=message):
            _sliced(toy, **kw)
    job = _sliced(toy, world=2)
    job.reallocate((3,))
    with pytest.raises(ValueError, match="3 GPUs for a world size of 2"):
        job.goodput()


def test_sliced_speed_on_pollux_jobs_is_tiresias_speed_on_the_world_size():
    """A job of workload-6 of world size 8 runs on 4 + 4 GPUs at exactly the speed of the same job as ``tiresias``
    runs it (the same batch configuration, Pollux's goodput); on 2 + 2 GPUs (2 replicas each) at 0.97 / 2 of its
    speed on 4 + 4 GPUs (its world size packed 4 to a node), on 3 GPUs (3 replicas on the most loaded) at 0.97 / 3."""
    root = find_pollux()
    if root is None:
        pytest.skip("Pollux's simulator folder not available (set FGDOPT_POLLUX)")
    frame = read_workload(root / "workloads" / "workload-6.csv")
    frame = frame[frame.num_replicas == 8].head(1)
    apps = load_applications(root)
    plain, sliced = make_jobs(frame, apps, "tiresias")[0], make_jobs(frame, apps, "singularity")[0]
    assert isinstance(sliced, SlicedJob) and not isinstance(plain, SlicedJob)
    for job in (plain, sliced):
        job.reallocate((4, 4))
    full = plain.goodput()
    assert (sliced.atomic_bsz, sliced.accum) == (plain.atomic_bsz, plain.accum)
    assert sliced.goodput() == full and packed(8, 4) == (4, 4)
    for placement, share in (((2, 2), 2), ((3,), 3)):
        sliced.reallocate(placement)
        assert sliced.goodput() == pytest.approx(full * (1 - SPLICE_OVERHEAD) / share, rel=1e-12)


def test_sizes_whole_jobs_first_then_sliced_ones():
    """By hand (world sizes in priority order, GPUs): [4, 2] on 4: the first fits whole, the second waits (no GPU
    left). [16, 8] on 10: 16 does not fit, 8 does (left 2), then 16 sliced on 2 (a divisor). [6, 4] on 5: 4 whole,
    6 on the 1 left. [3] on 2: 2 does not divide 3, so 1 GPU. [4, 2, 4] on 8: 4 and 2 whole, the last on 2."""
    assert sizes([4, 2], 4) == [4, 0]
    assert sizes([16, 8], 10) == [2, 8]
    assert sizes([6, 4], 5) == [1, 4]
    assert sizes([3], 2) == [1]
    assert sizes([4, 2, 4], 8) == [4, 2, 2]


def test_the_scheduler_admits_a_job_by_shrinking_a_low_priority_one(toy):
    """Two nodes of 4 GPUs, threshold 1,000 GPU-s. At 60 s, a and c (world size 4, nothing attained) take node 0
    and node 1 whole. By 120 s a has 240 GPU-s and c exactly 1,000 (queue 1); b (world size 2) arrives. Priority: a,
    b (queue 0), c. a and b fit whole (4 + 2), c does not (2 left): ``tiresias`` preempts it; here it is shrunk to
    2 GPUs, beside b on node 1, and a keeps its GPUs. When a completes (180 s), c grows back to 4, on node 0, b keeps
    its GPUs."""
    a, c = _sliced(toy, "a"), _sliced(toy, "c")
    b = _sliced(toy, "b", world=2, submit_s=100.0)
    planner = Singularity(threshold=1000.0)
    first = planner(60.0, [a, c], {}, [4, 4])
    assert first == {"a": [0, 0, 0, 0], "c": [1, 1, 1, 1]}
    a.attained_gpu_s, c.attained_gpu_s = 240.0, 1000.0
    second = planner(120.0, [a, b, c], first, [4, 4])
    assert second == {"a": [0, 0, 0, 0], "b": [1, 1], "c": [1, 1]}
    assert planner.q0 == ["a", "b"] and planner.q1 == ["c"]
    third = planner(180.0, [b, c], second, [4, 4])
    assert third == {"b": [1, 1], "c": [0, 0, 0, 0]}


def test_whole_jobs_are_placed_as_if_no_job_were_sliced(toy):
    """Two nodes of 4 GPUs; y (world size 8, queue 1) runs sliced on 2 + 2 GPUs ``[0, 0, 1, 1]``; z (world size 4)
    arrives in queue 0. z fits whole (4), y stays sliced on the 4 left: its count is unchanged, but z is placed
    first, on a whole node (node 0, the first of two with 4 free), and y, whose GPUs on node 0 are taken, moves to
    node 1. Keeping y first would split z over the two nodes."""
    y, z = _sliced(toy, "y", world=8), _sliced(toy, "z", world=4, submit_s=100.0)
    y.attained_gpu_s = 1000.0
    planner = Singularity(threshold=1000.0, q1=["y"])
    plan = planner(120.0, [y, z], {"y": [0, 0, 1, 1]}, [4, 4])
    assert plan == {"z": [0, 0, 0, 0], "y": [1, 1, 1, 1]}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 1500), st.sampled_from([1, 2, 4])), min_size=1, max_size=5))
def test_with_gpus_to_spare_singularity_runs_as_tiresias(toy, specs):
    """Up to 5 jobs of world size at most 4 on 5 nodes of 4 GPUs (20 GPUs: all of them fit at once): no job is ever
    sliced or kept waiting, and every job finishes when it does under ``tiresias``."""
    frame = pd.DataFrame({"name": [f"j{i}" for i in range(len(specs))], "time": [s for s, _ in specs],
                          "application": "toy", "num_replicas": [r for _, r in specs], "batch_size": 64})
    nodes = (4,) * 5
    sing = run_intervals(make_jobs(frame, {"toy": toy}, "singularity"), Singularity(), nodes=nodes)
    tir = run_intervals(make_jobs(frame, {"toy": toy}, "tiresias"), Tiresias(), nodes=nodes)
    assert sing.job_frame().finish_s.tolist() == tir.job_frame().finish_s.tolist()


class RandomSizes:
    """Every interval, each active job keeps its GPUs (probability 1/3) or gets 0 to its world size of them, on
    random nodes with GPUs not yet given; seeded by (seed, time, jobs), so the interval loop and the engine see the
    same plans."""

    name = "random-sizes"

    def __init__(self, seed: int):
        self.seed = seed

    def __call__(self, now, jobs, current, nodes):
        rng = random.Random(f"{self.seed}/{now}/{','.join(j.name for j in jobs)}")
        free = list(nodes)
        out = {j.name: list(current[j.name]) for j in jobs if j.name in current and rng.random() < 1 / 3}
        for alloc in out.values():
            for n in alloc:
                free[n] -= 1
        for job in jobs:
            if job.name not in out:
                want = rng.randint(0, job.replicas)
                alloc = []
                while len(alloc) < want and any(free):
                    n = rng.choice([n for n in range(len(nodes)) if free[n]])
                    alloc.append(n)
                    free[n] -= 1
                if alloc:
                    out[job.name] = sorted(alloc)
        return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 900), st.sampled_from([1, 2, 3, 4])), min_size=1, max_size=4),
       st.integers(0, 2**16), st.sampled_from([(2, 2), (4, 4), (1, 3, 4)]))
def test_random_shrink_and_grow_conserve_work(toy, specs, seed, nodes):
    """Sliced jobs (world size 1-4) shrunk and grown at random, to any count up to their world size. Each progressing
    stretch on ``G`` GPUs does ``G x seconds x W / (G ceil(W / G)) x (1 - 3%)`` GPU-seconds of full-size work
    (``x 1`` on all ``W``); summed, they are the job's work, ``W x 1,200`` GPU-seconds, to within the rounding of
    its two epoch crossings to whole seconds (half a second each, at most ``W`` GPU-seconds of work a second). On
    fgdopt's engine the same plans are held exactly, node by node, no GPU given twice (the engine's one rule and the
    mechanism's check), never more allocated than the cluster has, every job does its work and finishes when the
    interval loop says."""
    stretches: dict[str, list] = {}
    advance = SlicedJob.advance

    def spy(self, now, seconds, segments=None):
        mine: list = []
        advance(self, now, seconds, mine)
        stretches.setdefault(self.name, []).extend((sum(self.placement), s) for s in mine)
        if segments is not None:
            segments.extend(mine)

    def fresh():
        return [_sliced(toy, f"j{i}", w, s) for i, (s, w) in enumerate(specs)]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SlicedJob, "advance", spy)
        jobs = fresh()
        loop = run_intervals(jobs, RandomSizes(seed), nodes=nodes)
    for job in jobs:
        world = job.replicas
        done = 0.0
        for gpus, (start, end, gain) in stretches[job.name]:
            if gain > 0:
                share = 1.0 if gpus == world else world / (gpus * math.ceil(world / gpus)) * (1 - SPLICE_OVERHEAD)
                done += gpus * (end - start) * share
        assert abs(done - world * 1200.0) <= 0.5 * world * 2 + 1e-6, (job.name, done)
        assert job.progress == job.work == 1200.0
    result, peak = simulate_elastic(fresh(), RandomSizes(seed), nodes=nodes)
    assert result.finish_s == pytest.approx(loop.job_frame().finish_s.to_numpy(), abs=1e-5)
    assert result.work_s == pytest.approx(np.full(len(specs), 1200.0), rel=1e-12)
    assert (peak <= np.asarray(nodes)).all() and (loop.peak <= np.asarray(nodes)).all()
    assert (result.series.alloc_milli <= 1000 * sum(nodes)).all()


def test_study_unknown_policy_is_one_line_with_a_suggestion(tmp_path, capsys):
    """``experiments.pollux --policies singularty``: exit 2 before any run, one line naming the option and the
    closest policy; a file already in the output folder is kept."""
    from experiments.pollux import main

    out = tmp_path / "out"
    out.mkdir()
    (out / "pollux.csv").write_text("kept\n")
    with pytest.raises(SystemExit) as stop:
        main(["--policies", "singularty", "--output", str(out)])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --policies: unknown policy 'singularty': did you mean singularity?" in err[0]
    assert (out / "pollux.csv").read_text() == "kept\n"


def test_make_jobs_of_singularity_keep_world_size_and_batch(toy):
    frame = pd.DataFrame({"name": ["x"], "time": [5.0], "application": ["toy"], "num_replicas": [3],
                          "batch_size": [96]})
    (job,) = make_jobs(frame, {"toy": toy}, "singularity")
    assert isinstance(job, SlicedJob) and isinstance(job, ElasticJob)
    assert (job.replicas, job.batch_size, job.submit_s) == (3, 96, 5.0)
