"""Inputs nobody tuned for, as a new user brings them: every study gives correct results or one clear line, and
its figures stay readable.

* A list option of a study is the set of points of its sweep: a value written twice (``--seeds 0,0``,
  ``--policies fgd,fgd``, ``--load 0.9,0.90``) is one point, run once, so that a run is not repeated (twice the
  work) and a mean over seeds does not count one seed twice. The order written is kept.
* The completion-time CDF of the timeline figure: on a log axis only when the times span a decade (over less, a
  log axis labels every tick alike, "1e9, 1e9, ..."), and a time below 1 s drawn at 1 s is said on the axis.
"""

from __future__ import annotations

import pandas as pd
import pytest
from matplotlib.figure import Figure

from experiments import timeline
from experiments.args import int_list, parse_policies, parse_seeds, real_list
from fgdopt.plot import plot_timeline


@pytest.fixture
def saved(monkeypatch):
    """The figures saved while the test runs."""
    figures: list[Figure] = []
    original = Figure.savefig

    def keep(self, *args, **kwargs):
        figures.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


def test_repeated_values_are_one_point_of_the_sweep():
    assert parse_seeds("0,0") == [0]
    assert parse_seeds("3-3,3,1-4") == [3, 1, 2, 4]         # order of first appearance
    assert int_list(1)("16,64,16") == [16, 64]
    assert real_list(0.0)("0.9,1.1,0.90") == [0.9, 1.1]
    assert parse_policies("fgd,best-fit,fgd") == ["fgd", "best-fit"]
    assert timeline.parse_queues("backfill,fifo,backfill") == ["backfill", "fifo"]


def _cdf_axis(tmp_path, saved, jct_s: list[float]):
    """The CDF panel of the timeline figure of one run whose jobs (submitted at 0) complete in ``jct_s``."""
    keys = {"trace": "w", "seed": 42, "load": float("nan"), "policy": "fgd", "queue": "fifo", "mechanism": "none"}
    series = pd.DataFrame([{**keys, "time_s": 60.0 * i, "alloc_milli": 1000, "pending_milli": 0} for i in range(3)])
    runs = pd.DataFrame([{**keys, "mean_wait_s": 0.0}])
    optimum = pd.DataFrame(columns=[*keys, "time_s", "question", "incumbent_milli", "bound_milli"])
    jobs = pd.DataFrame([{**keys, "submit_s": 0.0, "finish_s": t} for t in jct_s])
    plot_timeline(series, runs, optimum, 8000, tmp_path / "t.png", "t", jobs=jobs)
    (fig,) = saved
    return fig.axes[1]


def test_cdf_of_completion_times_within_a_decade_is_linear_with_distinct_ticks(tmp_path, saved):
    """Completion times 1e9 s to 1e9 + 190 s (one very long job ahead of the others): a log axis would label
    its ticks all "1e9"; the linear axis shows the 190 s between them."""
    cdf = _cdf_axis(tmp_path, saved, [1e9, 1e9 + 92, 1e9 + 190])
    assert cdf.get_xscale() == "linear"
    assert cdf.get_xlabel() == "Job completion time (s)"
    line = cdf.get_lines()[0]
    assert list(line.get_xdata()) == [1e9, 1e9 + 92, 1e9 + 190]


def test_cdf_on_a_log_axis_says_where_it_draws_times_below_one_second(tmp_path, saved):
    """Completion times 0 s (a zero-duration job) and 50 s span a decade: a log axis, the 0 drawn at 1 s and
    the label says so."""
    cdf = _cdf_axis(tmp_path, saved, [0.0, 50.0])
    assert cdf.get_xscale() == "log"
    assert cdf.get_xlabel() == "Job completion time (s, log scale; below 1 s drawn at 1 s)"
    assert list(cdf.get_lines()[0].get_xdata()) == [1.0, 50.0]
