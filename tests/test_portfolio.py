"""The schedule portfolio (formulations.schedule.portfolio): named, validated candidates, best first."""

from __future__ import annotations

import pytest

from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import validate_schedule
from formulations.schedule.portfolio import run


def test_candidates_are_named_validated_and_best_first():
    """One GPU; j0 (whole GPU, at 0, 10 s), j1 (at 1, 8 s), j2 (at 2, 2 s). ``fifo``: j1 10-18, j2 18-20, waits
    0, 9, 16: mean 25/3. ``sjf``: j2 10-12, j1 12-20, waits 0, 11, 8: mean 19/3. ``area`` orders as sjf here
    (same demand). Best first: sjf and area (19/3, input order between equals), then fifo."""
    cluster = Cluster([32_000], [65_536], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 3, [1024] * 3, [1] * 3, [1000] * 3), [0.0, 1.0, 2.0], [10.0, 8.0, 2.0])
    found = run(cluster, jobs, policies=["best-fit"], queues=["fifo", "sjf", "area"])
    assert [c.method for c in found] == ["best-fit/sjf", "best-fit/area", "best-fit/fifo"]
    assert [c.mean_wait_s for c in found] == pytest.approx([19 / 3, 19 / 3, 25 / 3])
    assert found[0].schedule.start_s.tolist() == [0.0, 12.0, 10.0]
    for c in found:
        validate_schedule(cluster, jobs, c.schedule)
        assert c.cpu_s >= 0


def test_the_study_options_name_the_new_orders_and_policy():
    """``--queue area,whole-first`` and ``--policies drain-fit`` parse (the study's argument types); the portfolio
    runs drain-fit under area: one GPU, as in the first case area orders j2 (2 s) before j1 (8 s): mean 19/3."""
    from experiments.args import parse_policies
    from experiments.timeline import parse_queues

    assert parse_queues("area,whole-first") == ["area", "whole-first"]
    assert parse_policies("drain-fit,fgd") == ["drain-fit", "fgd"]
    cluster = Cluster([32_000], [65_536], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 3, [1024] * 3, [1] * 3, [1000] * 3), [0.0, 1.0, 2.0], [10.0, 8.0, 2.0])
    [found] = run(cluster, jobs, policies=["drain-fit"], queues=["area"])
    assert found.method == "drain-fit/area" and found.mean_wait_s == pytest.approx(19 / 3)
