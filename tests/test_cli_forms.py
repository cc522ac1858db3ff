"""The command-line forms the README uses: ``--seeds 42-51`` / ``--seeds 1,3``, ``--trace all`` / a family / a list,
``--points 80,90``; each parser on its own, then wired into ``experiments.openb`` and ``experiments.frontier`` (the
study itself is stopped right after parsing: the studies are tested elsewhere)."""

from __future__ import annotations

import argparse

import pytest

from experiments import defrag as defrag_study
from experiments import frontier, openb, schedule
from experiments.args import parse_timed_traces
from experiments.openb import FAMILIES, parse_seeds, parse_traces
from fgdopt.timeline.sources import trace_lifetimes
from fgdopt.traces import VARIANTS


@pytest.mark.parametrize(("text", "seeds"), [
    ("42-51", list(range(42, 52))),     # the paper's ten seeds, both ends included
    ("1,3", [1, 3]),                    # a list: exactly these
    ("42", [42]),
    ("1,5-7", [1, 5, 6, 7]),            # the two forms combine
])
def test_seed_forms(text, seeds):
    assert parse_seeds(text) == seeds
    assert defrag_study.parse_seeds is parse_seeds       # one argument type for every study (experiments.args)


def test_trace_forms():
    assert parse_traces("all") == list(VARIANTS) and len(VARIANTS) == 24
    assert parse_traces("multigpu") == ["multigpu20", "multigpu30", "multigpu40", "multigpu50"]
    assert parse_traces("gpushare") == [f"gpushare{k}" for k in (20, 40, 60, 80, 100)]
    assert parse_traces("cpu") == ["cpu0", "cpu037", "cpu050", "cpu072", "cpu100", "cpu200", "cpu235", "cpu250",
                                   "cpu300"]
    assert parse_traces("gpuspec") == ["gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33"]
    # the four families and default partition the 24 variants
    assert sorted(["default", *(v for f in FAMILIES for v in parse_traces(f))]) == sorted(VARIANTS)
    assert parse_traces("default,multigpu50") == ["default", "multigpu50"]             # a list, in its order
    assert parse_traces("multigpu50,multigpu") == ["multigpu50", "multigpu20", "multigpu30", "multigpu40"]  # once
    with pytest.raises(argparse.ArgumentTypeError, match=r"^unknown trace variant 'nope' \(valid: default, cpu0, "):
        parse_traces("default,nope")


def test_studies_over_time_take_the_variants_with_pod_times():
    """The multigpu* pod lists give shapes only: ``all`` is the other 20 there, and a multigpu variant or family is
    one line naming it, before any work (the stream itself says so too, before reading the trace)."""
    assert parse_timed_traces("all") == [v for v in VARIANTS if not v.startswith("multigpu")]
    assert len(parse_timed_traces("all")) == 20 and parse_timed_traces("cpu,default")[-1] == "default"
    with pytest.raises(argparse.ArgumentTypeError, match=r"^openb multigpu50: no pod times"):
        parse_timed_traces("default,multigpu50")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^openb multigpu20, multigpu30, multigpu40, multigpu50: no "):
        parse_timed_traces("multigpu")
    with pytest.raises(ValueError, match=r"^openb multigpu30: no pod times"):
        trace_lifetimes("multigpu30", data_dir="/nonexistent")


@pytest.mark.trace
def test_schedule_bound_takes_a_variant_with_pod_times(openb_dir, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        schedule.main(["--trace", "multigpu20", "--data-dir", str(openb_dir), "--output", str(tmp_path / "o")])
    assert stop.value.code == 2 and not (tmp_path / "o").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "error: openb multigpu20: no pod times (the pod list gives shapes only); a stream over time needs all or one "
        "of default, cpu0, cpu037, cpu050, cpu072, cpu100, cpu200, cpu235, cpu250, cpu300, gpushare20, gpushare40, "
        "gpushare60, gpushare80, gpushare100, gpuspec05, gpuspec10, gpuspec20, gpuspec25, gpuspec33")


def test_point_forms():
    assert frontier.parse_points("80,90") == [80, 90]
    assert frontier.parse_points("130,80,90,80") == [80, 90, 130]          # sorted, once each
    for bad in ("", "131", "-10,80"):                                       # 0..130 (ratio 1.3) only
        with pytest.raises(argparse.ArgumentTypeError):
            frontier.parse_points(bad)


class Parsed(Exception):
    """Raised by the stand-ins below to stop a study right after its arguments were parsed."""


def test_openb_command_reads_the_readme_forms(monkeypatch, tmp_path):
    cells = []

    def run_all(pool, fn, jobs, done=None, **journal):
        cells.extend(jobs)
        raise Parsed

    monkeypatch.setattr(openb, "_load", lambda trace, data_dir: None)     # no trace needed to parse
    monkeypatch.setattr(openb, "run_all", run_all)
    with pytest.raises(Parsed):
        openb.main(["--trace", "multigpu", "--policies", "fgd,best-fit", "--seeds", "42-43", "--output",
                    str(tmp_path)])
    # (trace, policy, seed, ratio, data_dir) for every trace x policy x seed, in that nesting
    assert [c[:3] for c in cells] == [(t, p, s) for t in ("multigpu20", "multigpu30", "multigpu40", "multigpu50")
                                      for p in ("fgd", "best-fit") for s in (42, 43)]
    assert {c[3] for c in cells} == {1.3}
    cells.clear()
    with pytest.raises(Parsed):
        openb.main(["--trace", "all", "--policies", "random", "--seeds", "1,3", "--output", str(tmp_path)])
    assert [c[:3] for c in cells] == [(t, "random", s) for t in VARIANTS for s in (1, 3)]


def test_frontier_command_reads_the_readme_forms(monkeypatch, tmp_path):
    seen = {}

    def stand_in(traces, seeds, points, *args, **kwargs):
        seen.update(traces=traces, seeds=seeds, points=points)
        raise Parsed

    monkeypatch.setattr(frontier, "frontier", stand_in)
    with pytest.raises(Parsed):
        frontier.main(["--trace", "default,gpuspec", "--seeds", "42-44", "--points", "80,90", "--output",
                       str(tmp_path)])
    assert seen == {"traces": ["default", "gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33"],
                    "seeds": [42, 43, 44], "points": [80, 90]}


def test_a_pod_deleted_before_it_was_scheduled_is_named(own_openb):
    """A pod list row whose deletion_time precedes its scheduled_time stops in one line naming the file, the row and
    the field, as the openb converter says it (it was 'scale < 0' from a draw, naming none)."""
    data = own_openb(pods=("p0,4000,8192,1,500,,LS,Running,0,100,0", "p1,4000,8192,1,500,,LS,Running,100,50,100"))
    with pytest.raises(ValueError, match=r"openb_pod_list_default.csv: row 1: field 'deletion_time' gives a "
                                         r"negative duration \(-50 s\)"):
        trace_lifetimes("default", data_dir=data)
