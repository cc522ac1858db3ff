"""The node-schedule decomposition's ceiling: each subset's least engine-run wait, the most its bound can reach.

Hand cases where the subsets decide the bound (values derived in the docstrings), the ceiling against the
decomposition bound and the traps' optima, and subsets proven at once when a run of them waits nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from fgdopt import Cluster
from fgdopt.timeline import JobSet
from fgdopt.timeline.suites import time_suite, trap_instances
from formulations.schedule.nodedecomp import nodedecomp_bound, subset_ceilings
from tests.test_schedule_bounds_nodes import _gpu_jobs


def two_pairs() -> tuple[Cluster, JobSet]:
    """One node of one GPU; jobs 0 (3 s) and 1 (1 s) submitted at 0, jobs 2 (3 s) and 3 (1 s) at 100.

    Each pair shares the GPU: shortest first, the 1-s job starts on submission and the 3-s job waits 1 s (the other
    order makes the 1-s job wait 3 s), and a pair ends by 4 s after its submission, before the next pair: the
    optimum total wait is 1 + 1 = 2 s, mean 2 / 4 = 0.5 s. Subsets {0, 1} and {2, 3} keep each pair: their optima
    sum to 2 s, the whole optimum. Subsets {0, 2} and {1, 3} hold jobs 100 s apart, which never meet: each waits 0
    (its ceiling), so any bound on them is 0.
    """
    return _gpu_jobs(1, 1, [(1, 0, 3), (1, 0, 1), (1, 100, 3), (1, 100, 1)])


def drain() -> tuple[Cluster, JobSet]:
    """Four nodes of 4 GPUs; four 3-GPU jobs at 0 (30 s), one 4-GPU job at 10 s (100 s): optimum mean wait 4 s.

    (Derived in ``tests/test_schedule_bounds_nodes.py``: the 4-GPU job waits for a node to drain, 20 s, over five
    jobs.) The engine runs reach it (the 3-GPU jobs take one node each at 0, the 4-GPU job waits until 30 s), so
    the whole set's ceiling is 20 s. Apart, the 3-GPU jobs (one per node) and the 4-GPU job (alone) wait 0.
    """
    return _gpu_jobs(4, 4, [(3, 0, 30), (3, 0, 30), (3, 0, 30), (3, 0, 30), (4, 10, 100)])


def test_ceilings_are_the_least_run_wait_of_each_subset():
    """Two pairs: FIFO makes each 3-s job run first (the 1-s job waits 3 s); shortest first waits 1 s per pair:
    the ceilings are the least, 1 s each; crosswise, 0 each."""
    cluster, jobs = two_pairs()
    totals, runs = subset_ceilings(cluster, jobs, [np.array([0, 1]), np.array([2, 3])])
    assert totals.tolist() == [1.0, 1.0]
    waits = [float((r.start_s - jobs.take(s).submit_s).sum()) for r, s in zip(runs, ([0, 1], [2, 3]), strict=True)]
    assert waits == [1.0, 1.0]
    totals, _ = subset_ceilings(cluster, jobs, [np.array([0, 2]), np.array([1, 3])])
    assert totals.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(("subsets", "wait", "iterations"), [([[0, 1], [2, 3]], 0.5, None),
                                                            ([[0, 2], [1, 3]], 0.0, 0)])
def test_the_subsets_decide_the_bound(subsets, wait, iterations):
    """Pairs together: the bound meets the optimum (0.5 s) and its ceiling; crosswise: 0, proven without column
    generation (every subset has a run that waits 0)."""
    cluster, jobs = two_pairs()
    b = nodedecomp_bound(cluster, jobs, subsets=[np.array(s) for s in subsets])
    assert b.status == "optimal" and b.wait_s == pytest.approx(wait, rel=1e-5, abs=1e-9)
    assert b.info["ceiling_wait_s"] == wait
    if iterations is not None:
        assert b.info["iterations"] == iterations
    else:
        assert b.info["iterations"] >= 1


def test_drain_needs_the_draining_jobs_together():
    """The drain case: as one subset, bound = ceiling = the optimum 4 s; the 4-GPU job apart from the jobs that
    hold the nodes, the ceiling (and so the bound) is 0."""
    cluster, jobs = drain()
    whole = nodedecomp_bound(cluster, jobs, subsets=[np.arange(5)])
    assert whole.status == "optimal" and whole.wait_s == pytest.approx(4.0, rel=1e-5)
    assert whole.info["ceiling_wait_s"] == 4.0
    apart = nodedecomp_bound(cluster, jobs, subsets=[np.arange(4), np.array([4])])
    assert apart.status == "optimal" and apart.wait_s == 0.0 and apart.info == {
        "subsets": 2, "iterations": 0, "ceiling_wait_s": 0.0}


@pytest.mark.parametrize("inst", [time_suite("small-time")[0], *trap_instances()], ids=lambda i: i.name)
def test_bound_at_most_ceiling_and_ceiling_at_least_optimum(inst):
    """Bound <= ceiling on every subset size; on the traps the one-subset ceiling is at least the hand-derived
    optimal mean wait (mean JCT minus mean duration)."""
    for size in (5, len(inst.jobs)):
        b = nodedecomp_bound(inst.cluster, inst.jobs, subset_size=size, time_limit=0.5, pricing_limit=0.1)
        assert 0.0 <= b.wait_s <= b.info["ceiling_wait_s"] + 1e-9
    if "mean-jct" in inst.optimum:
        optimum = inst.optimum["mean-jct"] - float(inst.jobs.duration_s.mean())
        assert b.info["ceiling_wait_s"] >= optimum - 1e-9


def test_a_bound_above_its_ceiling_raises(monkeypatch):
    """A subset bound above the wait of a validated run of that subset is a wrong bound: the call stops."""
    import formulations.schedule.nodedecomp as nodedecomp

    monkeypatch.setattr(nodedecomp, "_subset_bound", lambda *args: (1.5, "optimal", 1))   # each pair's run: 1 s
    cluster, jobs = two_pairs()
    with pytest.raises(AssertionError, match="above the total wait"):
        nodedecomp_bound(cluster, jobs, subsets=[np.array([0, 1]), np.array([2, 3])])
