"""The rules of the time engine, its mechanisms, Gavel's round scheduler and the statistics, each pinned by a
hand-worked case: the expected numbers are derived in the docstrings from the rule (docs/semantics.md "Time", the module
docstrings), so that changing a rule changes a number here.

Only the public surface is used: :func:`fgdopt.timeline.simulate` and what it returns, :class:`JobSet`, the
mechanism and discipline names, :mod:`fgdopt.timeline.metrics`, and the public functions of :mod:`fgdopt.hetero`
(the engine's internals may move). Every cluster node below has 64 cores and 256 GiB, so only GPUs decide where a
job fits; every job asks for one core."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fgdopt.hetero.metrics import finish_time_fairness, hetero_stats, jobs_present_at_arrival
from fgdopt.hetero.rounds import Gavel
from fgdopt.interference import Interference
from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import STATUSES, JobSet, simulate
from fgdopt.timeline.mechanisms import make_mechanism
from fgdopt.timeline.metrics import run_stats, sample_series, time_average, time_integral
from fgdopt.timeline.rounds import RoundLoop
from formulations.hetero import proportional_throughput, water_fill


def nodes(*gpus: int, model: str = "T4") -> Cluster:
    """Nodes of these GPU counts (64 cores, 256 GiB each)."""
    return Cluster([64000] * len(gpus), [262144] * len(gpus), list(gpus), [model] * len(gpus))


def jobset(*rows: tuple, priority=None) -> JobSet:
    """Jobs ``(num_gpu, gpu_milli, submit_s, duration_s)``, one core each, named j0, j1, ..."""
    ng, gm, sub, dur = (list(c) for c in zip(*rows, strict=True))
    tasks = TaskSet([1000] * len(rows), [0] * len(rows), ng, gm, names=tuple(f"j{k}" for k in range(len(rows))))
    return JobSet(tasks, sub, dur, priority=priority)


def status(result) -> list[str]:
    return [STATUSES[s] for s in result.status]


def run(cluster, jobs, queue="fifo", policy="best-fit", **options):
    """:func:`simulate` with the nodes ranked in index order (ties to the lowest node)."""
    return simulate(cluster, jobs, policy, queue, ranks=np.arange(cluster.n_nodes), **options)


# -- one instant ------------------------------------------------------------------------------------------------

def test_finishes_leave_before_the_submissions_of_the_same_instant_when_nothing_queues():
    """One GPU, no queue (``none``): j0 runs 0-10; j1 arrives at 10. The instant at 10 first lets j0 leave, then
    j1 arrives and finds the GPU free: it starts at 10 and ends at 15 (were submissions first, j1 would be
    dropped). j2 arrives at 12 while j1 runs: dropped. Instants: 0, 10, 12, 15."""
    r = run(nodes(1), jobset((1, 1000, 0, 10), (1, 1000, 10, 5), (1, 1000, 12, 1)), queue="none")
    assert status(r) == ["finished", "finished", "dropped"]
    assert r.start_s[:2].tolist() == [0, 10] and r.finish_s[:2].tolist() == [10, 15]
    assert r.instants == 4 and r.series["time_s"].tolist() == [0, 10, 12, 15]
    assert r.series["running"].tolist() == [1, 1, 1, 0] and run_stats(r)["dropped"] == 1


def test_submissions_of_one_instant_arrive_in_input_order():
    """One GPU, no queue: j0 (10 s) and j1 (1 s) both arrive at 0; input order decides, j0 starts and j1 is
    dropped; listed the other way round, the 1 s job runs and the 10 s one is dropped."""
    r = run(nodes(1), jobset((1, 1000, 0, 10), (1, 1000, 0, 1)), queue="none")
    assert status(r) == ["finished", "dropped"] and r.finish_s[0] == 10
    r = run(nodes(1), jobset((1, 1000, 0, 1), (1, 1000, 0, 10)), queue="none")
    assert status(r) == ["finished", "dropped"] and r.finish_s[0] == 1


def test_a_zero_duration_job_leaves_within_its_instant_and_frees_its_gpu_at_once():
    """One GPU, FIFO: j0 (0 s) and j1 (5 s) at 0. j0 starts and finishes at 0; a further instant at 0 frees the GPU
    and j1 starts at 0, ends at 5 (had j0's finish waited for a later instant, j1 would start later or never)."""
    r = run(nodes(1), jobset((1, 1000, 0, 0), (1, 1000, 0, 5)))
    assert r.start_s.tolist() == [0, 0] and r.finish_s.tolist() == [0, 5]


def test_a_job_that_fits_no_empty_node_is_rejected_and_an_endless_one_never_leaves():
    """Nodes of 1 GPU: a 2-GPU job can never fit (rejected at submission, never queued, no start); on a node of no
    GPUs every GPU job is rejected (not a crash) and the CPU job runs. A job of infinite duration keeps running; a
    measured job that never finishes leaves the makespan undefined (NaN), though a CPU job finished at 5."""
    r = run(nodes(1), jobset((2, 1000, 0, 5), (1, 1000, 1, math.inf), (0, 0, 0, 5)))
    assert status(r) == ["rejected", "running", "finished"] and np.isnan(r.start_s[0]) and r.node[0] == -1
    stats = run_stats(r)
    assert (stats["rejected"], stats["unfinished"], stats["jobs"]) == (1, 1, 3) and np.isnan(stats["makespan_s"])
    r = run(nodes(0), jobset((1, 500, 0, 5), (0, 0, 0, 5)))
    assert status(r) == ["rejected", "finished"] and np.isnan(run_stats(r)["alloc_time_avg_pct"])


# -- disciplines -----------------------------------------------------------------------------------------------

def test_fifo_blocks_behind_its_head_and_backfill_does_not():
    """Two GPUs. j0 (1 GPU) 0-10; j1 (2 GPUs, 5 s) at 1 waits for j0; j2 (1 GPU, 3 s) at 2 fits the free GPU.
    FIFO: j2 waits behind j1 (starts when j1 ends, 15 -> 18). Backfill: j2 starts at 2, ends at 5; j1 at 10."""
    jobs = jobset((1, 1000, 0, 10), (2, 1000, 1, 5), (1, 1000, 2, 3))
    fifo, back = run(nodes(2), jobs, "fifo"), run(nodes(2), jobs, "backfill")
    assert fifo.start_s.tolist() == [0, 10, 15] and fifo.finish_s.tolist() == [10, 15, 18]
    assert back.start_s.tolist() == [0, 10, 2] and back.finish_s.tolist() == [10, 15, 5]
    assert run_stats(fifo)["mean_wait_s"] == pytest.approx((0 + 9 + 13) / 3)
    assert run_stats(back)["mean_wait_s"] == pytest.approx(3.0)


def test_sjf_takes_the_shortest_and_smallest_the_least_gpu_demand():
    """One GPU held by j0 until 10. Waiting: j1 (whole GPU, 2 s, at 1) and j2 (0.6 GPU, 8 s, at 2). ``sjf``: j1
    first (10-12), then j2 (12-20). ``smallest``: j2 first (0.6 < 1 GPU; 10-18), then j1, which needs the whole
    GPU, at 18 (18-20). ``fifo``: submission order, as sjf here."""
    jobs = jobset((1, 1000, 0, 10), (1, 1000, 1, 2), (1, 600, 2, 8))
    assert run(nodes(1), jobs, "sjf").start_s.tolist() == [0, 10, 12]
    assert run(nodes(1), jobs, "smallest").start_s.tolist() == [0, 18, 10]
    assert run(nodes(1), jobs, "fifo").start_s.tolist() == [0, 10, 12]


def test_area_takes_the_least_gpu_seconds():
    """One GPU held by j0 until 10. Waiting: j1 (whole GPU, 5 s, at 1: area 1000 x 5 = 5000 milli-GPU s) and j2
    (0.6 GPU, 8 s, at 2: area 600 x 8 = 4800). ``area``: j2 first (10-18), then j1, which needs the whole GPU,
    at 18. ``sjf``: j1 first (5 < 8 s; 10-15), then j2 (15-23)."""
    jobs = jobset((1, 1000, 0, 10), (1, 1000, 1, 5), (1, 600, 2, 8))
    assert run(nodes(1), jobs, "area").start_s.tolist() == [0, 18, 10]
    assert run(nodes(1), jobs, "sjf").start_s.tolist() == [0, 10, 15]
    # j1 0.6 GPU for 10 s (area 6000), j2 a whole GPU for 5 s (5000): ``area`` takes j2 (10-15) then j1 (15-25);
    # ``smallest`` (GPU demand alone) takes j1 (10-20) then j2 at 20
    jobs = jobset((1, 1000, 0, 10), (1, 600, 1, 10), (1, 1000, 2, 5))
    assert run(nodes(1), jobs, "area").start_s.tolist() == [0, 15, 10]
    assert run(nodes(1), jobs, "smallest").start_s.tolist() == [0, 10, 20]


def test_whole_first_gives_a_freed_node_to_the_widest_job():
    """One 2-GPU node held by j0 (2 GPUs) until 10. Waiting: j1 (1 GPU, 1 s, at 1), j2 (2 GPUs, 3 s, at 2), j3
    (1 GPU, 1 s, at 3). ``whole-first``: j2 first (2 GPUs; 10-13), then j1 and j3 side by side at 13.
    ``sjf``/``backfill``: j1 and j3 take the node at 10 (10-11) and j2 starts at 11."""
    jobs = jobset((2, 1000, 0, 10), (1, 1000, 1, 1), (2, 1000, 2, 3), (1, 1000, 3, 1))
    assert run(nodes(2), jobs, "whole-first").start_s.tolist() == [0, 13, 10, 13]
    assert run(nodes(2), jobs, "sjf").start_s.tolist() == [0, 10, 11, 10]
    assert run(nodes(2), jobs, "backfill").start_s.tolist() == [0, 10, 11, 10]


def test_drain_fit_puts_a_job_where_it_does_not_delay_the_drain():
    """Nodes of 3 and 4 GPUs, ranked in index order. j0 (4 GPUs, 0-1) takes node 1; j1 (2 GPUs, 0-10) node 0;
    j2 (3 GPUs, at 2, 100 s) node 1 (2-102). Now each node has one GPU free; node 0 drains at 10, node 1 at 102.
    j3 (1 GPU, at 3, 50 s, ends 53): ``best-fit`` ties (both nodes full after) and takes node 0 by rank, which then
    drains at 53; ``drain-fit`` extends node 0 by 53 - 10 = 43 s and node 1 by 0, so takes node 1. j4 (3 GPUs,
    at 4, 1 s) needs node 0 whole: at 10 under drain-fit (wait 6), at 53 under best-fit (wait 49)."""
    jobs = jobset((4, 1000, 0, 1), (2, 1000, 0, 10), (3, 1000, 2, 100), (1, 1000, 3, 50), (3, 1000, 4, 1))
    drain = run(nodes(3, 4), jobs, "backfill", "drain-fit")
    assert drain.node.tolist() == [1, 0, 1, 1, 0] and drain.start_s.tolist() == [0, 0, 2, 3, 10]
    best = run(nodes(3, 4), jobs, "backfill", "best-fit")
    assert best.node.tolist() == [1, 0, 1, 0, 0] and best.start_s.tolist() == [0, 0, 2, 3, 53]


def test_drain_fit_keeps_the_latest_end_and_forgets_drained_nodes():
    """Two 2-GPU nodes. j0 (2 GPUs, 0-1) takes node 0, j1 (1 GPU, 0-100) node 1. j2 (1 GPU, at 2, ends 7): node 0
    (empty again) extends by 5, node 1 by 0: node 1. j3 (1 GPU, at 3, ends 53): node 0 (node 1 full). j4 (1 GPU, at
    8, 72 s, ends 80), each node one GPU free: node 0 drains at 53 (+27), node 1 still at 100, the latest end, not
    j2's 7 (+0): node 1.
    Two 1-GPU nodes: j0 (0-1) node 0, j1 (0-5) node 1; j2 (at 10, 5 s): both nodes drained in the past, so both
    extend by 5 (not 15 - 1 and 15 - 5): the tie goes to node 0."""
    jobs = jobset((2, 1000, 0, 1), (1, 1000, 0, 100), (1, 1000, 2, 5), (1, 1000, 3, 50), (1, 1000, 8, 72))
    assert run(nodes(2, 2), jobs, "backfill", "drain-fit").node.tolist() == [0, 1, 1, 0, 1]
    jobs = jobset((1, 1000, 0, 1), (1, 1000, 0, 5), (1, 1000, 10, 5))
    assert run(nodes(1, 1), jobs, "backfill", "drain-fit").node.tolist() == [0, 1, 0]


def test_drain_fit_without_a_time_is_best_fit():
    """Called by the timeless protocol (no ``now``, no ``work_s``), every extension is 0: best-fit's choice, the
    fuller node (node 1 holds a 1-GPU job; a second 1-GPU job fills it)."""
    from fgdopt.model import Task
    from fgdopt.policies import make_policy
    from fgdopt.state import ClusterState

    state = ClusterState(nodes(2, 2), TaskSet([1000], [0], [1], [1000]))
    state.place(0, 1, (0,))
    policy = make_policy("drain-fit", ranks=np.arange(2))
    assert policy(state, Task(1000, 0, 1, 1000)) == (1, (1,))


def test_duration_keys_hold_cpu_only_and_endless_jobs():
    """A CPU-only job has area 0 (not NaN) even when it runs forever; an endless job sorts after finite ones of its
    width; a sharing job (0.5 GPU) counts as 0 GPUs for ``whole-first``."""
    from fgdopt.timeline.queues import least_area_first, widest_first

    jobs = jobset((0, 0, 0, math.inf), (1, 1000, 0, 3), (1, 1000, 0, math.inf), (1, 500, 0, 1), (2, 1000, 0, 9))
    area = least_area_first(jobs)
    assert area[0] == 1.0 and area[1] == pytest.approx(3000.75) and area[2] == math.inf
    assert np.argsort(widest_first(jobs), kind="stable").tolist() == [4, 1, 2, 3, 0]   # j3 (1 s) before j0 (inf)


def test_area_aged_ages_the_gpu_area():
    """``area-aged`` (key area + 8000 x submit): jA (1 GPU, 20 s, at 1; area 20,000, key 28,000) and jB (0.5 GPU,
    5 s, at 5; area 2,500, key 42,500) wait for j0 (one GPU until 10). ``area`` starts jB at 10 (10-15), then jA at
    15; ``area-aged`` starts jA at 10 (at t = 10: 20,000 - 8000 x 9 = -52,000 < 2,500 - 8000 x 5 = -37,500), then
    jB at 30."""
    aged = jobset((1, 1000, 0, 10), (1, 1000, 1, 20), (1, 500, 5, 5))
    assert run(nodes(1), aged, "area").start_s.tolist() == [0, 15, 10]
    assert run(nodes(1), aged, "area-aged").start_s.tolist() == [0, 10, 30]


def test_a_job_runs_at_the_speed_of_its_gpu_model():
    """``duration_s`` is work at speed 1: 100 s of work on a K80 of speed 0.5 takes 200 s; at speed 2 it takes 50."""
    jobs = jobset((1, 1000, 0, 100))
    assert run(nodes(1, model="K80"), jobs, speed={"K80": np.array([0.5])}).finish_s[0] == 200
    assert run(nodes(1, model="V100"), jobs, speed={"V100": np.array([2.0])}).finish_s[0] == 50


# -- mechanisms ------------------------------------------------------------------------------------------------

def _crowd(*late: tuple, priority_late: int = 1) -> tuple[Cluster, JobSet]:
    """Two nodes of 2 GPUs, filled by low-priority jobs: j0 (2 GPUs, from 0) on node 0, j1 (1 GPU, from 0) and j2
    (1 GPU, 100 s of work, from 50) on node 1 (best-fit, ties to node 0); then the ``late`` high-priority jobs."""
    rows = [(2, 1000, 0, 1000), (1, 1000, 0, 1000), (1, 1000, 50, 100), *late]
    return nodes(2, 2), jobset(*rows, priority=[0, 0, 0, *[priority_late] * len(late)])


def test_priority_preemption_takes_the_fewest_victims_then_the_least_progress_lost():
    """A 1-GPU high-priority job at 100: every node frees a GPU with one victim; the progress lost (milli-GPU x s
    since the last checkpoint, none within 1800 s) is j0 2000 x 100, j1 1000 x 100, j2 1000 x 50: j2 goes. Its 50 s
    are lost; it restarts when the high-priority job ends (120) after Helios' 7 s restart and does its 100 s again:
    finish 227. With transparent checkpoints nothing would be lost anywhere: the tie goes to the lowest node, j0 is
    preempted, keeps its 100 s and resumes at 120 after the 30 s restart of 2 GPUs: 120 + 30 + 900 = 1050.
    A 2-GPU job instead: node 0 needs one victim (j0), node 1 two (j1, j2; 150,000 lost < 200,000): the fewest
    wins, j0 is preempted."""
    cluster, jobs = _crowd((1, 1000, 100, 20))
    r = run(cluster, jobs, mechanism="priority")
    assert r.preemptions.tolist() == [0, 0, 1, 0] and r.start_s[3] == 100 and r.node[3] == 1
    assert r.finish_s[2] == 227 and r.lost_s[2] == 50 and r.overhead_s[2] == 7
    t = run(cluster, jobs, mechanism="transparent")
    assert t.preemptions.tolist() == [1, 0, 0, 0] and t.finish_s[0] == 1050 and t.lost_s[0] == 0
    cluster, jobs = _crowd((2, 1000, 100, 20))
    r = run(cluster, jobs, mechanism="priority")
    assert r.preemptions.tolist() == [1, 0, 0, 0] and r.node[3] == 0
    assert r.finish_s[0] == 120 + 30 + 1000            # 2 GPUs: Helios' 30 s restart; 100 s of progress lost


def test_checkpoints_decide_what_a_preemption_loses():
    """As above with a checkpoint every 30 s (no cost): at 100, j1 has run 100 s (checkpoints at 30, 60, 90: 10 s
    to lose, 10,000 milli-GPU s) and j2 50 s (checkpoint at 30: 20 s, 20,000): now j1 is the victim. It keeps 90 s,
    restarts at 120 with 7 s and its last 910 s: it ends at 1037; 10 s lost, 7 s overhead."""
    cluster, jobs = _crowd((1, 1000, 100, 20))
    r = run(cluster, jobs, mechanism=make_mechanism("priority", checkpoint_s=30.0))
    assert r.preemptions.tolist() == [0, 1, 0, 0] and r.finish_s[1] == 1037
    assert r.lost_s[1] == 10 and r.overhead_s[1] == 7


def test_checkpoints_cost_time_but_not_at_the_finish_and_bound_the_loss():
    """Checkpoints every 30 s of progress, 5 s each. Alone, 100 s of work takes checkpoints at 30, 60 and 90 (none at
    the finish): 115 s. Preempted at 80 (a high-priority job, 10 s): two cycles of 35 s are done (60 s kept, 10 s of
    overhead), 10 s into the third are lost; it restarts at 90 after 7 s with 40 s of work and one checkpoint: 142.
    Overhead 10 + 7 + 5 = 22 s, lost 10 s."""
    mech = make_mechanism("priority", checkpoint_s=30.0, checkpoint_cost_s=5.0)
    alone = run(nodes(1), jobset((1, 1000, 0, 100)), mechanism=mech)
    assert alone.finish_s[0] == 115 and alone.overhead_s[0] == 15
    r = run(nodes(1), jobset((1, 1000, 0, 100), (1, 1000, 80, 10), priority=[0, 1]), mechanism=mech)
    assert r.preemptions.tolist() == [1, 0] and r.finish_s.tolist() == [142, 90]
    assert r.lost_s[0] == 10 and r.overhead_s[0] == 22


def test_tiresias_counts_the_attained_service_of_every_gpu():
    """Tiresias: attained service = GPUs x seconds run; above 3250 GPU-s a job drops to queue 1 and a queue-0 job
    preempts it. A 4-GPU job from 0 on a 4-GPU node has attained 4 x 1000 = 4000 at 1000: the 1-GPU job arriving
    then preempts it (transparently; 4 GPUs restart in 30 s): the small job runs 1000-1100, the big one resumes at
    1100 and does its last 1000 s after 30 s: 2130. Arriving at 800 instead (3200 GPU-s, still queue 0) it waits
    until 2000 (counted per job, 1000 or 800 s would never demote it)."""
    late = run(nodes(4), jobset((4, 1000, 0, 2000), (1, 1000, 1000, 100)), mechanism="tiresias")
    assert late.preemptions.tolist() == [1, 0] and late.start_s[1] == 1000 and late.finish_s.tolist() == [2130, 1100]
    early = run(nodes(4), jobset((4, 1000, 0, 2000), (1, 1000, 800, 100)), mechanism="tiresias")
    assert early.preemptions.tolist() == [0, 0] and early.start_s[1] == 2000


def test_affinode_suspends_the_cheapest_gpu_of_sharing_jobs():
    """Three GPUs holding sharing jobs of 0.5, 0.6 and 0.7 GPU (best-fit: each on its own GPU); 1.2 GPUs free in
    total, no GPU free: a whole-GPU job (100 s, at 10) is blocked by fragmentation. Affinode suspends the least
    GPU share that frees a GPU: the 0.5 job. The whole-GPU job runs 10-110; the suspended job fits again at 110 and
    resumes after 7 + 7 s (suspend, restore) with its 990 s left: 1114."""
    r = run(nodes(3), jobset((1, 500, 0, 1000), (1, 600, 0, 1000), (1, 700, 0, 1000), (1, 1000, 10, 100)),
            mechanism="affinode")
    assert r.suspensions.tolist() == [1, 0, 0, 0] and r.start_s[3] == 10 and r.finish_s[3] == 110
    assert r.finish_s[0] == 1114 and r.overhead_s[0] == 14 and r.lost_s[0] == 0


def test_a_job_re_rated_during_its_restart_keeps_what_is_left_of_the_restart_cost():
    """One GPU, transparent priority preemption, interference factor 0.5 between classes 0 and 1. j0 (0.5 GPU, 100 s,
    class 0) runs from 0; j1 (whole GPU, priority 1, 10 s) preempts it at 20 (20 s kept); j1 ends at 30 and j0
    restarts with its 7 s restart cost. At 33, j2 (0.5 GPU, class 1, 50 s) joins its GPU: both run at half speed.
    j0 is re-rated 3 s into its restart: 4 s of it are left, then 80 s of work at 0.5. j2 ends at 33 + 100 = 133;
    by then j0 has done (100 - 4) x 0.5 = 48 s of work (68 in all) and runs its last 32 s alone: it ends at 165,
    with 3 + 4 = 7 s of overhead (restarting the cost at the re-rate would end at 166.5; dropping it, at 163)."""
    jobs = jobset((1, 500, 0, 100), (1, 1000, 20, 10), (1, 500, 33, 50), priority=[0, 1, 0])
    inter = Interference([0, 0, 1], {"T4": [[1.0, 0.5], [0.5, 1.0]]})
    r = run(nodes(1), jobs, mechanism="transparent", interference=inter)
    assert r.preemptions.tolist() == [1, 0, 0] and r.finish_s.tolist() == [165, 30, 133]
    assert r.overhead_s[0] == pytest.approx(7) and r.lost_s[0] == 0


# -- statistics ------------------------------------------------------------------------------------------------

def _staggered():
    """A node of 2 GPUs, FIFO, 100 s jobs at 0, 10, 20 and 100: j0 0-100, j1 10-110, j2 100-200 (the GPU j0 frees),
    j3 110-210. Waits 0, 0, 80, 10; JCTs 100, 100, 180, 110."""
    jobs = jobset((1, 1000, 0, 100), (1, 1000, 10, 100), (1, 1000, 20, 100), (1, 1000, 100, 100))
    return run(nodes(2), jobs)


def test_wait_and_jct_percentiles_interpolate_linearly():
    """numpy's linear percentiles over 4 values sit at 3q/100 between the sorted ones. Waits [0, 0, 10, 80]: p50 5,
    p95 10 + 0.85 x 70 = 69.5, p99 10 + 0.97 x 70 = 77.9. JCTs [100, 100, 110, 180]: mean 122.5, p50 105, p95
    169.5, p99 177.9; makespan 210 (the last finish). Time averages over the window (0, last submission 100):
    allocation 2 GPUs except 0-10 (1 GPU), (10 x 1000 + 90 x 2000) / 100 / 2000 = 95%; one job pending 20-100:
    0.8."""
    stats = run_stats(_staggered())
    assert [stats[f"p{q}_wait_s"] for q in (50, 95, 99)] == pytest.approx([5, 69.5, 77.9])
    assert stats["mean_jct_s"] == 122.5
    assert [stats[f"p{q}_jct_s"] for q in (50, 95, 99)] == pytest.approx([105, 169.5, 177.9])
    assert stats["makespan_s"] == 210 and stats["alloc_time_avg_pct"] == pytest.approx(95)
    assert (stats["rejected"], stats["unfinished"], stats["measured"]) == (0, 0, 4)
    assert stats["pending_time_avg"] == pytest.approx(0.8) and stats["p99_jct_s_gpu1"] == pytest.approx(177.9)


def test_finish_time_fairness_with_staggered_arrivals():
    """rho = JCT / (work / share), share = 1/N of the 2 GPUs (at most the job's whole time), N = jobs present at the
    arrival, itself included, a job finished at that very instant not counted. j0: N 1, share 1, rho 100/100 = 1;
    j1: N 2, share 1, rho 1; j2: N 3, share 2/3, alone 150 s, rho 180/150 = 1.2; j3 at 100, when j0 leaves: N 3,
    rho 110/150. Jain: (sum rho)^2 / (4 sum rho^2). Utilization over the makespan 0-210:
    (10 x 1 + 190 x 2 + 10 x 1 ... ) GPUs: 1 GPU 0-10 and 200-210, 2 GPUs 10-200: (20 + 380) / 210 / 2."""
    r = _staggered()
    speed, gpus = {"T4": np.ones(4)}, {"T4": 2}
    assert jobs_present_at_arrival(r.jobs.submit_s, r.finish_s).tolist() == [1, 2, 3, 3]
    rho = np.array([1, 1, 1.2, 110 / 150])
    assert finish_time_fairness(r, speed, gpus) == pytest.approx(rho)
    stats = hetero_stats(r, speed, gpus)
    assert stats["mean_rho"] == pytest.approx(rho.mean()) and stats["max_rho"] == pytest.approx(1.2)
    assert stats["jain_rho"] == pytest.approx(rho.sum() ** 2 / (4 * (rho ** 2).sum()))
    assert stats["makespan_s"] == 210 and stats["p95_jct_s"] == pytest.approx(169.5)
    assert stats["utilization"] == pytest.approx(400 / 210 / 2)


def test_blocked_by_fragmentation_counts_what_the_free_total_could_hold():
    """Two 1-GPU nodes each hold a 0.6 GPU job for an hour: 0.8 GPU free in total, 0.4 per GPU. A 0.7 GPU job waits:
    it fits no GPU but the free total holds it, so it is blocked (1 job, 700 milli-GPU) for one hour; a 0.9 job
    beside it is not (0.8 - 0.7 < 0.9): 1 job-hour."""
    jobs = jobset((1, 600, 0, 3600), (1, 600, 0, 3600), (1, 700, 0, 10), (1, 900, 0, 10))
    r = run(nodes(1, 1), jobs, "backfill")
    first = r.series.iloc[0]
    assert (first.blocked_jobs, first.blocked_milli, first.pending) == (1, 700, 2)
    assert run_stats(r)["blocked_job_hours"] == pytest.approx(1.0)


def test_time_integrals_and_samples_of_a_step_series():
    """Steps 2 from 0 and 4 from 10: over (5, 15), 5 x 2 + 5 x 4 = 30, average 3; over an empty window, the value
    there. Sampling a run every 4 s takes the state after the last instant at or before each sample (j0 runs 0-10
    then nothing: 1 GPU at 0, 4, 8; 0 at 12)."""
    t, v = np.array([0.0, 10.0]), np.array([2.0, 4.0])
    assert time_integral(t, v, (5, 15)) == 30 and time_average(t, v, (5, 15)) == 3
    assert time_average(t, v, (12, 12)) == 4 and time_integral(t, v, (-5, 5)) == 10
    r = run(nodes(1), jobset((1, 1000, 0, 10)))
    s = sample_series(r.series, 4.0, 12.0)
    assert s["time_s"].tolist() == [0, 4, 8, 12] and s["alloc_milli"].tolist() == [1000, 1000, 1000, 0]


# -- Gavel's rounds --------------------------------------------------------------------------------------------

def _rounds(jobs: JobSet, cluster: Cluster, round_s: float = 100.0) -> tuple:
    """The round scheduler with an equal share X = 1/n of the one type for the n jobs present, no restart cost."""
    sched = RoundLoop(Gavel(lambda present, view: np.full((len(present), 1), 1 / len(present)),
                            {"T4": np.ones(len(jobs))}, jobs.duration_s, ("T4",)), round_s=round_s)
    r = simulate(cluster, jobs, "best-fit", "fifo", ranks=np.arange(cluster.n_nodes), mechanism=sched,
                 restart_s=lambda gpus: 0.0, frag=False)
    return r, sched


def test_gavel_rounds_alternate_by_priority_x_over_the_share_received():
    """One GPU, two 500 s jobs at 0, X = 0.5 each, rounds of 100 s. Priority X W / t, t counted from half a round
    (50) per job, W the type's total (100 at first): round 0 ties (1 and 1), arrival order: j0. Then j1 (0.5 x 200 /
    50 = 2 against 0.5 x 200 / 150), then ties again (j0), and so on: j0 runs 0, 200, 400, 600, 800 and ends at
    900; j1 runs 100, ..., 700 and, alone (X recomputed when j0 leaves, 1 for j1), 900-1000. Each is preempted 4
    times; X is computed twice; 10 rounds run."""
    r, sched = _rounds(jobset((1, 1000, 0, 500), (1, 1000, 0, 500)), nodes(1))
    assert r.finish_s.tolist() == [900, 1000] and r.preemptions.tolist() == [4, 4]
    assert (sched.policy.solves, sched.rounds) == (2, 10)


def test_gavel_arrivals_wait_for_the_round_and_early_finishes_idle_their_gpus():
    """Two GPUs: j0 (30 s) and j1 (1000 s) run in round 0, which lasts until 100 (its longest run). j2 arrives at
    10 and waits for the next round; the GPU j0 frees at 30 idles until then: j2 runs from 100."""
    r, _ = _rounds(jobset((1, 1000, 0, 30), (1, 1000, 0, 1000), (1, 1000, 10, 50)), nodes(2))
    assert r.start_s.tolist() == [0, 0, 100] and r.finish_s[0] == 30 and r.finish_s[2] == 150
    assert r.series.set_index("time_s").loc[30, "alloc_milli"] == 1000


def test_water_filling_and_proportional_throughput():
    """Water filling gives every job the same normalized share lam = s y / w until its time saturates: scales
    [1, 2, 1] on 2 GPUs, lam 2/3: y = [2/3, 1/3, 2/3]; scales [1, 1, 4] on 4 GPUs: the two small jobs saturate
    (y = 1), the 2 GPUs left give the big one 2/4. Gavel's proportional policy: throughputs [2, 1] with 3 and 1
    GPUs: 2 x 3/4 + 1 x 1/4 = 1.75; enough GPUs for all: every y is 1."""
    assert water_fill(np.array([1, 2, 1]), np.ones(3), 2.0) == pytest.approx([2 / 3, 1 / 3, 2 / 3])
    assert water_fill(np.array([1, 1, 4]), np.ones(3), 4.0) == pytest.approx([1, 1, 0.5])
    assert water_fill(np.array([1, 1]), np.ones(2), 2.0).tolist() == [1, 1]
    assert proportional_throughput(np.array([[2.0, 1.0]]), np.array([3, 1])) == pytest.approx([1.75])


# -- jobs from the openb trace -------------------------------------------------------------------------------------

@pytest.mark.trace
def test_openb_jobs_keep_their_pods_shape_and_priority_and_repeat_the_trace_pattern(openb_dir):
    """:func:`fgdopt.timeline.openb_jobs` with the trace's arrival pattern: every job (service, warm start, stream)
    has the shape of the pod its name ends with and the priority of that pod's QoS; the stream replays the L stream
    pods' creation offsets, compressed, and wraps after L with a gap of the mean gap: submit[L] - submit[L - 1] =
    (submit[L - 1] - submit[0]) / (L - 1). Measured: the stream jobs submitted in the window (10% of the last
    submission to the last)."""
    from fgdopt.timeline import openb_jobs
    from fgdopt.timeline.sources import QOS_PRIORITY
    from fgdopt.traces import load_openb, read_pods

    _, jobs = openb_jobs("default", 0.9, 8100, seed=3, arrivals="trace", data_dir=openb_dir)
    _, pods = load_openb("default", openb_dir)
    qos = read_pods("default", openb_dir)["qos"].tolist()
    row = {name: k for k, name in enumerate(pods.names)}
    of = np.array([row[name.rsplit(":", 1)[-1]] for name in jobs.tasks.names])
    for field in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli"):
        assert np.array_equal(getattr(jobs.tasks, field), getattr(pods, field)[of]), field
    assert jobs.priority.tolist() == [QOS_PRIORITY[qos[k]] for k in of]
    stream = np.array([name.startswith("job:") for name in jobs.tasks.names])
    sub = jobs.submit_s[stream]
    first = of[stream][0]
    wrap = int(np.flatnonzero(of[stream] == first)[1])                    # L: the stream pods, once each
    assert np.all(np.diff(sub) >= 0) and sub[0] == 0
    assert sub[wrap] - sub[wrap - 1] == pytest.approx((sub[wrap - 1] - sub[0]) / (wrap - 1), rel=1e-9)
    lo, hi = jobs.window_s
    assert (lo, hi) == pytest.approx((0.1 * sub[-1], sub[-1]))
    assert np.array_equal(jobs.measured, stream & (jobs.submit_s >= lo) & (jobs.submit_s <= hi))


def test_hetero_generators_take_their_boundaries(gavel_table):
    """Zero jobs is an empty trace, not an error, for Gavel's generator and for the openb job classes; half a step
    of work is a job (work > 0), no work is not."""
    from fgdopt.hetero import HeteroJobs, gavel_jobs
    from fgdopt.hetero.interference import openb_classes

    assert len(openb_classes(0, seed=1)) == 0 and len(gavel_jobs(gavel_table, 0, 1.0)) == 0
    assert len(HeteroJobs([0], [1], [0.5], [0.0])) == 1
    with pytest.raises(ValueError, match="total_steps"):
        HeteroJobs([0], [1], [0.0], [0.0])


@pytest.mark.parametrize("mechanism", ["none", "transparent"])
def test_a_run_far_out_in_time_is_checked_at_the_clocks_resolution(mechanism):
    """One GPU; A (1e15 s) and B (1 ms) at 0, in that order: B starts when A ends, at 1e15 s, where float64 times
    are multiples of 1/8 s, so B's recorded run is 0 or 125 ms, not 1 ms. The run's consistency check compares each
    job's run time with its work to within what the clock resolves there (it raised on this run); B still finishes
    once, with its whole work done."""
    cluster = Cluster([8000], [8192], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 2, [1024] * 2, [1, 1], [1000, 1000]), [0.0, 0.0], [1e15, 1e-3])
    r = simulate(cluster, jobs, "best-fit", "fifo", mechanism=make_mechanism(mechanism))
    assert r.status.tolist() == [STATUSES.index("finished")] * 2
    assert r.start_s.tolist() == [0.0, 1e15] and r.finish_s[1] - r.start_s[1] in (0.0, 0.125)
    assert r.work_s[1] == pytest.approx(1e-3)


@pytest.mark.parametrize("load", [0.9, 1.3])
def test_openb_stream_offers_the_load_asked(openb_dir, load):
    """With the trace's arrival pattern and one job per stream pod (L of them, found where the pattern wraps), the
    offered load is exactly the one asked: the services' GPUs plus the stream's GPU-seconds over its span, over the
    cluster's capacity (the stream's rate makes up what the services leave of ``load``)."""
    from fgdopt.timeline import openb_jobs
    from fgdopt.timeline.sources import SERVICE_S

    _, probe = openb_jobs("default", 0.9, 8100, seed=3, arrivals="trace", data_dir=openb_dir)
    pods = [name.rsplit(":", 1)[-1] for name in probe.tasks.names if name.startswith("job:")]
    n = pods.index(pods[0], 1)
    cluster, jobs = openb_jobs("default", load, n, seed=3, arrivals="trace", data_dir=openb_dir)
    stream = np.array([name.startswith("job:") for name in jobs.tasks.names])
    services = jobs.duration_s > SERVICE_S
    demand = jobs.tasks.gpu_demand
    offered = demand[services].sum() + (demand * jobs.duration_s)[stream].sum() / jobs.submit_s[stream][-1]
    assert stream.sum() == n and offered / cluster.gpu_capacity_milli == pytest.approx(load, rel=1e-9)


def test_openb_stream_of_one_job(openb_dir):
    """One stream job is a valid stream (``n_jobs >= 1``) in both arrival patterns; none is refused
    in one line."""
    from fgdopt.timeline import openb_jobs

    for arrivals in ("poisson", "trace"):
        _, jobs = openb_jobs("default", 0.9, 1, seed=0, arrivals=arrivals, data_dir=openb_dir)
        stream = [k for k, name in enumerate(jobs.tasks.names) if name.startswith("job:")]
        assert len(stream) == 1
    with pytest.raises(ValueError, match="need n_jobs >= 1"):
        openb_jobs("default", 0.9, 0, data_dir=openb_dir)


def test_a_load_whose_warm_start_outgrows_a_run_stops_before_any_draw(openb_dir, capsys):
    """Load 1,000 on openb default: the stream's rate times its mean lifetime is a warm start of about 8 million
    jobs (Little's law), more than a run holds; ``openb_jobs`` refuses it before drawing anything, and a study stops
    at the door in one line naming ``--load`` (it ran past 90 s building the warm start)."""
    from experiments.args import MAX_TRACE_JOBS
    from experiments.timeline import main
    from fgdopt.timeline import openb_jobs

    with pytest.raises(ValueError, match=r"load 1000.0: about 8,0\d\d,\d\d\d jobs"):
        openb_jobs("default", 1000.0, 1, seed=42, data_dir=openb_dir, max_jobs=MAX_TRACE_JOBS)
    with pytest.raises(SystemExit) as exit_:
        main(["--quick", "--load", "1000", "--data-dir", str(openb_dir), "--output", "unused"])
    assert exit_.value.code == 2
    assert "error: argument --load: openb default, seed 42: load 1000.0: about 8," in capsys.readouterr().err
