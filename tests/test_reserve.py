"""Bounded reservations for whole-node jobs (:mod:`fgdopt.policies.reserve`) and finish-align
(:mod:`fgdopt.policies.drain_fit`): hand-worked cases, the bound, and the schedules' validity over random instances.

Every node below has 64 cores and 256 GiB, so only GPUs decide where a job fits; every job asks for one core."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgdopt.frag import Workload
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import make_policy
from fgdopt.policies.reserve import Reserving
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import recorded_run, rejected_jobs, validate_schedule


def nodes(*gpus: int) -> Cluster:
    """Nodes of these GPU counts (64 cores, 256 GiB each)."""
    return Cluster([64000] * len(gpus), [262144] * len(gpus), list(gpus), ["V100"] * len(gpus))


def jobset(*rows: tuple) -> JobSet:
    """Jobs ``(num_gpu, gpu_milli, submit_s, duration_s)``, one core each."""
    ng, gm, sub, dur = (list(c) for c in zip(*rows, strict=True))
    return JobSet(TaskSet([1000] * len(rows), [0] * len(rows), ng, gm), sub, dur)


def starving() -> JobSet:
    """One 8-GPU node; 20 jobs of 1 GPU and 10 s submitted every 5 s (0, 5, ..., 95), then an 8-GPU job of 10 s
    submitted at 1 (the last job)."""
    return jobset(*((1, 1000, 5.0 * i, 10.0) for i in range(20)), (8, 1000, 1.0, 10.0))


def waits(jobs: JobSet, policy, queue: str = "backfill") -> np.ndarray:
    cluster = nodes(8)
    _, sched = recorded_run(cluster, jobs, policy, queue)
    validate_schedule(cluster, jobs, sched)
    return sched.start_s - jobs.submit_s


def reserving(jobs: JobSet, wait_s: float, max_nodes: int, inner: str = "best-fit") -> Reserving:
    return Reserving(make_policy(inner, ranks=np.arange(1)), jobs, wait_s=wait_s, max_nodes=max_nodes)


def test_a_reservation_ends_the_starvation_of_a_whole_node_job():
    """:func:`starving`. Without a reservation two 1-GPU jobs overlap at every instant, the node is never empty
    until the last one ends at 95 + 10 = 105: the 8-GPU job waits 104 s, the others 0; mean 104 / 21 = 4.952 s.
    With a reservation at once (``wait_s = 0``, one node): at 5 the 8-GPU job has waited 4 s and reserves the node,
    which drains at 10 (the job of 0 ends); the job of 5 would end at 15 > 10 and is refused. At 10 the node is
    empty and the 8-GPU job (submitted first) starts, 10-20; the jobs of 5, 10, 15 and 20 start at 20 (waits 15,
    10, 5, 0) and the rest at submission: (9 + 15 + 10 + 5) / 21 = 39 / 21 = 1.857 s."""
    jobs = starving()
    plain = waits(jobs, "best-fit")
    assert plain[-1] == 104 and plain[:-1].tolist() == [0.0] * 20
    assert plain.mean() == pytest.approx(104 / 21)
    held = waits(jobs, reserving(jobs, 0.0, 1))
    assert held[-1] == 9 and held[1:5].tolist() == [15, 10, 5, 0] and held[5:-1].tolist() == [0.0] * 15
    assert held.mean() == pytest.approx(39 / 21)


def test_the_wait_bound_delays_the_reservation_and_can_stop_it():
    """:func:`starving` with ``wait_s = 50``: the 8-GPU job reserves only once it has waited 50 s, at the first
    placement after 51, the job of 55: the node drains at 60 (the job of 50), the job of 55 would end at 65 and is
    refused. The 8-GPU job starts at 60 (wait 59), 60-70; the jobs of 55, 60, 65, 70 start at 70 (waits 15, 10, 5,
    0): mean (59 + 30) / 21 = 4.238 s. With ``wait_s = 200`` (beyond the last submission) or ``max_nodes = 0`` no
    reservation is made: the run of best-fit alone, 104 / 21."""
    jobs = starving()
    late = waits(jobs, reserving(jobs, 50.0, 1))
    assert late[-1] == 59 and late[11:15].tolist() == [15, 10, 5, 0] and late[:11].tolist() == [0.0] * 11
    assert late.mean() == pytest.approx(89 / 21)
    for wait_s, max_nodes in ((200.0, 1), (0.0, 0)):
        assert waits(jobs, reserving(jobs, wait_s, max_nodes)).tolist() == waits(jobs, "best-fit").tolist()


def test_the_node_bound_reserves_one_node_for_the_oldest_job():
    """Two 8-GPU nodes ranked in index order: j0 (7 GPUs, 0-30) takes node 0, j1 (7 GPUs, 0-20) node 1 (node 0 has
    one GPU left). Two 8-GPU jobs A (at 1) and B (at 2), 10 s each; C (1 GPU, at 3, 100 s). ``max_nodes = 2``: A
    reserves node 1 (drains at 20), B node 0 (30); C would end at 103 on either and is refused. At 20 A starts on
    node 1 (wait 19); B now reserves node 0 (both drain at 30: the lowest index); C still refused. At 30 both
    nodes are empty: B takes node 0 (wait 28), C node 1 (wait 27). ``max_nodes = 1``: only A reserves (node 1);
    C takes node 0's free GPU at 3 (wait 0, until 103); once A started, B reserves node 1 (drains at 30 < 103) and
    starts there at 30 (wait 28): the bound let C pass."""
    jobs = jobset((7, 1000, 0, 30), (7, 1000, 0, 20), (8, 1000, 1, 10), (8, 1000, 2, 10), (1, 1000, 3, 100))
    cluster = nodes(8, 8)

    def run(max_nodes):
        policy = Reserving(make_policy("best-fit", ranks=np.arange(2)), jobs, wait_s=0.0, max_nodes=max_nodes)
        _, sched = recorded_run(cluster, jobs, policy, "backfill")
        validate_schedule(cluster, jobs, sched)
        return (sched.start_s - jobs.submit_s).tolist(), sched.node.tolist()

    assert run(2) == ([0, 0, 19, 28, 27], [0, 1, 1, 0, 1])
    assert run(1) == ([0, 0, 19, 28, 0], [0, 1, 1, 1, 0])


def test_what_ends_before_the_reservation_backfills_and_older_jobs_pass():
    """One 8-GPU node, reservations at once for one node. j0 (1 GPU, 0-10); W (8 GPUs, at 1, 10 s) reserves the
    node, which drains at 10; s (1 GPU, at 2, 5 s) ends at 7 <= 10 and starts at once; l (1 GPU, at 3, 10 s) would
    end at 13 > 10: it waits for W (10-20) and starts at 20 (wait 17).
    One 4-GPU node under ``fifo``: a (half a GPU, at 9, 2 s) is older than b (4 GPUs, at 9, input order after a),
    so b's reservation does not hold it back: a 9-11, b 11-17 (a reservation that held a back would leave the
    blocking head refused forever)."""
    jobs = jobset((1, 1000, 0, 10), (8, 1000, 1, 10), (1, 1000, 2, 5), (1, 1000, 3, 10))
    assert waits(jobs, reserving(jobs, 0.0, 1)).tolist() == [0, 9, 0, 17]
    jobs = jobset((1, 500, 9, 2), (4, 1000, 9, 6))
    _, sched = recorded_run(nodes(4), jobs, Reserving(make_policy("best-fit"), jobs, wait_s=0.0, max_nodes=1), "fifo")
    assert sched.start_s.tolist() == [9, 11]


def test_a_younger_job_of_the_same_shape_may_take_the_reserved_node():
    """One 4-GPU node; A (1 GPU, 0-15); B (4 GPUs, at 10, 14 s) reserves the node (drains at 15); C (4 GPUs, at 13,
    5 s) has the same shape and, under ``area-aged``, the lower key (4000 x 5 + 8000 x 13 = 124,000 against
    4000 x 14 + 8000 x 10 = 136,000), so it heads the shape's queue. At 15 the node is empty and C, a whole-node job
    whose home it is, is not held back: C 15-20 (wait 2), then B 20-34 (wait 10). (Held back, C would be refused
    and its shape marked unfit, and B, behind it, never offered.)"""
    jobs = jobset((1, 1000, 0, 15), (4, 1000, 10, 14), (4, 1000, 13, 5))
    _, sched = recorded_run(nodes(4), jobs, Reserving(make_policy("best-fit"), jobs, wait_s=0.0, max_nodes=1),
                            "area-aged")
    validate_schedule(nodes(4), jobs, sched)
    assert sched.start_s.tolist() == [0, 20, 15]


def test_finish_align_puts_a_job_where_the_node_drains_with_it():
    """Nodes of 2 and 3 GPUs ranked in index order. j0 (1 GPU, 0-100): both nodes empty, every score ties (100 s
    of extension or misalignment), so the tie policy decides: best-fit node 0 (less left over), FGD node 1 (as
    ``fgd`` alone). Best-fit ties: j1 (2 GPUs, 0-20) fits node 1 only. j2 (1 GPU, at 1, 15 s, ends 16), each node
    with one GPU free: both drain after 16, so drain-fit's extensions tie at 0, best-fit ties (both full after),
    node 0 by rank; finish-align's misalignments are |16 - 100| = 84 s (1 window of 60 s) on node 0 and
    |16 - 20| = 4 s (0 windows) on node 1: node 1, which then drains at 20 with both its jobs."""
    jobs = jobset((1, 1000, 0, 100), (2, 1000, 0, 20), (1, 1000, 1, 15))
    cluster = nodes(2, 3)

    def placed(name):
        policy = make_policy(name, ranks=np.arange(2), workload=Workload.from_tasks(jobs.tasks))
        _, sched = recorded_run(cluster, jobs, policy, "backfill")
        validate_schedule(cluster, jobs, sched)
        return sched.node.tolist()

    assert placed("drain-fit") == [0, 1, 0] and placed("finish-align") == [0, 1, 1]
    assert placed("fgd")[0] == placed("drain-fit-fgd")[0] == placed("finish-align-fgd")[0] == 1


@pytest.mark.parametrize(("make", "option"), [
    (lambda p, j: Reserving(p, j, wait_s=-1.0), "wait_s"),
    (lambda p, j: Reserving(p, j, wait_s=float("nan")), "wait_s"),
    (lambda p, j: Reserving(p, j, max_nodes=1.5), "max_nodes"),
    (lambda p, j: Reserving(p, j, max_nodes=-1), "max_nodes"),
])
def test_bad_bounds_name_the_parameter(make, option):
    jobs = starving()
    with pytest.raises(ValueError, match=option) as info:
        make(make_policy("best-fit"), jobs)
    assert "\n" not in str(info.value)


def test_bad_window_names_the_parameter():
    from fgdopt.policies.drain_fit import FinishAlign

    with pytest.raises(ValueError, match="window_s"):
        FinishAlign(window_s=0.0)


def test_bad_study_options_stop_with_one_line(capsys):
    from experiments.schedule import main

    for option, value in (("--reserve-nodes", "-1"), ("--reserve-wait", "-5")):
        with pytest.raises(SystemExit) as info:
            main(["--trace", "default", option, value])
        assert info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert option in err[-1]


@st.composite
def instances(draw):
    gpus = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3))
    n = draw(st.integers(1, 12))
    rows = [(draw(st.sampled_from([0, 1, 1, 2, 4, 8])), draw(st.sampled_from([1000, 1000, 500])),
             float(draw(st.integers(0, 30))), float(draw(st.integers(1, 40)))) for _ in range(n)]
    rows = [(g, 0 if g == 0 else 1000 if g > 1 else m, s, d) for g, m, s, d in rows]
    return nodes(*gpus), jobset(*rows), draw(st.sampled_from([0.0, 3.0, 50.0])), draw(st.integers(0, 3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(["best-fit", "fgd", "finish-align", "drain-fit"]),
       st.sampled_from(["backfill", "area-aged", "fifo"]))
def test_every_reserving_schedule_is_valid_and_starts_every_admitted_job(inst, inner, queue):
    """Whatever the cluster, jobs, bound, inner policy and queue: the run is a valid schedule (replayed on the
    ``ClusterState``), every job that fits an empty node starts exactly once at or after its submission and the
    others never; with ``max_nodes = 0`` it is the inner policy's run. (Durations of at least 1 s: a zero-duration
    job started in the same instant as another job on its node is a separate disagreement between the engine and
    ``validate_schedule``, with every policy.)"""
    cluster, jobs, wait_s, max_nodes = inst
    workload = Workload.from_tasks(jobs.tasks)

    def run(mx):
        policy = Reserving(make_policy(inner, workload=workload), jobs, wait_s=wait_s, max_nodes=mx)
        _, sched = recorded_run(cluster, jobs, policy, queue)
        validate_schedule(cluster, jobs, sched)
        return sched

    sched = run(max_nodes)
    admitted = ~rejected_jobs(cluster, jobs)
    assert np.isfinite(sched.start_s[admitted]).all() and np.isnan(sched.start_s[~admitted]).all()
    assert (sched.start_s[admitted] >= jobs.submit_s[admitted]).all()
    _, plain = recorded_run(cluster, jobs, make_policy(inner, workload=workload), queue)
    assert np.array_equal(run(0).start_s, plain.start_s, equal_nan=True)


@pytest.mark.parametrize("window_s", [0.0, -1.0, float("inf"), float("nan")])
def test_finish_align_window_must_be_a_positive_number_of_seconds(window_s):
    from fgdopt.policies.drain_fit import FinishAlign

    with pytest.raises(ValueError, match="window_s must be a positive number of seconds"):
        FinishAlign(window_s=window_s)
    assert FinishAlign(window_s=0.5).window_s == 0.5


def test_a_gang_waits_whole_for_the_nodes_open_to_it():
    """Two 2-GPU nodes (ranks: node 0 first). At 0: A (1 GPU, 100 s) and B (1 GPU, 50 s), 40 cores each, start on
    nodes 0 and 1; W (2 GPUs, 10 s: a whole-node job) waits and reserves node 1, which drains at T = 50. At 1 the
    gang G (2 parts of 1 GPU, 100 s) would end after T, so node 1 is closed to it, and node 0 holds one part only: G
    is refused whole (its first part once went to node 0, and its second found no open node: the run stopped with a
    RuntimeError). W starts at 50 on node 1, G at 60, when W ends."""
    jobs = JobSet(TaskSet([40_000, 40_000, 1000, 1000], [0] * 4, [1, 1, 2, 1], [1000] * 4, workers=[1, 1, 1, 2]),
                  [0.0, 0.0, 0.0, 1.0], [100.0, 50.0, 10.0, 100.0])
    cluster = nodes(2, 2)
    _, sched = recorded_run(cluster, jobs, Reserving(make_policy("best-fit", ranks=np.arange(2)), jobs, wait_s=0.0,
                                                     max_nodes=1), "backfill")
    validate_schedule(cluster, jobs, sched)
    assert sched.start_s.tolist() == [0.0, 0.0, 50.0, 60.0] and sched.node[:3].tolist() == [0, 1, 1]


def test_a_gang_of_whole_node_parts_reserves_no_home():
    """Only a job in one part is a whole-node job (module docstring, step 1): of two 8-GPU jobs, the gang of two
    such parts has no homes, the single one has both nodes."""
    from fgdopt.state import ClusterState

    jobs = JobSet(TaskSet([1000, 1000], [0, 0], [8, 8], [1000, 1000], workers=[2, 1]), [0.0, 0.0], [10.0, 10.0])
    policy = reserving(jobs, wait_s=0.0, max_nodes=1)
    policy._setup(ClusterState(nodes(8, 8), jobs.tasks))
    assert {j: homes.tolist() for j, homes in policy.homes.items()} == {1: [0, 1]}
