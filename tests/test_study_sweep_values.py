"""A list option of a study is the set of points of its sweep: a value written twice (``--seeds 0,0``,
``--policies fgd,fgd``, ``--load 0.9,0.90``) is one point, run once, so that a run is not repeated (twice the
work) and a mean over seeds does not count one seed twice. The order written is kept."""

from __future__ import annotations

from experiments import timeline
from experiments.args import int_list, parse_policies, parse_seeds, real_list


def test_repeated_values_are_one_point_of_the_sweep():
    assert parse_seeds("0,0") == [0]
    assert parse_seeds("3-3,3,1-4") == [3, 1, 2, 4]         # order of first appearance
    assert int_list(1)("16,64,16") == [16, 64]
    assert real_list(0.0)("0.9,1.1,0.90") == [0.9, 1.1]
    assert parse_policies("fgd,best-fit,fgd") == ["fgd", "best-fit"]
    assert timeline.parse_queues("backfill,fifo,backfill") == ["backfill", "fifo"]
