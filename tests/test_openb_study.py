"""The replay study command: its outputs, the paper column, and a clear error without the trace."""

from __future__ import annotations

import pandas as pd
import pytest

from experiments import openb


def test_a_missing_trace_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:                  # at the parser: before any work
        openb.main(["--seeds", "42", "--policies", "fgd", "--data-dir", str(tmp_path / "nowhere"),
                    "--output", str(tmp_path / "out")])
    code = stop.value.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0
    assert "argument --data-dir" in err and "not found" in err and "fgdopt.traces download" in err
    assert not (tmp_path / "out").exists()


def test_own_trace_files_are_not_compared_with_the_paper(tmp_path, capsys, own_openb):
    # openb-format CSVs of your own (one 2-GPU node, one pod of half a GPU): clones up to 130% fill both GPUs; the
    # paper's published allocation (95.39 for fgd on default) was printed beside them as if it applied
    own_openb()
    assert openb.main(["--policies", "fgd", "--seeds", "1", "--data-dir", str(tmp_path), "--output",
                       str(tmp_path / "out")]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    assert row == "| default | fgd | 1 | 100.00 | 100.00 | 0.00 | 0.00 | " + row.split(" | ")[-2] + " |  |"


def test_a_trace_that_alone_brings_more_than_the_ratio_is_said(tmp_path, capsys, own_openb):
    # one pod of half a GPU on 2 GPUs brings 25% alone: at --ratio 0.1 the table's "at 10% arrived" columns held
    # the state at 25% without a word
    own_openb()
    assert openb.main(["--policies", "fgd", "--seeds", "1", "--ratio", "0.1", "--data-dir", str(tmp_path),
                       "--output", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("| default | fgd | 1 | 25.00 | 25.00 | 1.50 |")
    assert out[-1] == ("default: the trace alone brings 25.0% of the GPU capacity; its replays end there, and its "
                       "columns 'at 10% arrived' hold that end")


@pytest.mark.trace
@pytest.mark.slow
def test_replay_study_writes_summary_and_compares_with_the_paper(openb_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert openb.main(["--trace", "default", "--policies", "random,fgd", "--seeds", "42",
                       "--data-dir", str(openb_dir), "--output", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert tuple(summary.columns) == openb.SUMMARY_COLUMNS
    assert summary["policy"].tolist() == ["random", "fgd"]
    rows = summary.set_index("policy")
    # regression pins (deterministic for seed 42): FGD allocates 5,923,130 and random 5,427,820 of the 6,212,000
    # milli-GPU at 130 % (docs/first_look.md: 95.35 %, 288.87 GPUs left; the paper's FGD mean, seeds 42-51: 95.39 %)
    assert rows.loc["fgd", "alloc_ratio_130"] == pytest.approx(100 * 5_923_130 / 6_212_000, abs=1e-9)
    assert rows.loc["random", "alloc_ratio_130"] == pytest.approx(100 * 5_427_820 / 6_212_000, abs=1e-9)
    for policy in ("fgd", "random"):   # unallocated GPUs = capacity (6212 GPUs) minus the allocation
        row = rows.loc[policy]
        assert row["unallocated_gpus_130"] == pytest.approx(6212 * (1 - row["alloc_ratio_130"] / 100))
    table = capsys.readouterr().out
    assert "| default | fgd | 1 |" in table and "95.39 (" in table and "87.47 (" in table
    assert (out / "alloc.png").stat().st_size > 0 and (out / "curves.csv").is_file()


@pytest.mark.trace
def test_a_ratio_below_the_zoom_runs_and_ends_at_the_final_state(openb_dir, tmp_path):
    """--ratio 0.5: no zoom panel (its 80%..50% range was empty: NaN axis limits), bars named by the ratio; gpushare100
    alone brings 63.6% of capacity, so its replay runs past 50% and its last row is the final state (semantics)."""
    out = tmp_path / "out"
    # random: the cheapest policy; nothing below depends on which one places the tasks
    assert openb.main(["--trace", "gpushare100", "--policies", "random", "--seeds", "42", "--ratio", "0.5",
                       "--data-dir", str(openb_dir), "--output", str(out)]) == 0
    curves = pd.read_csv(out / "curves.csv")
    assert curves["arrived_pct"].tolist() == list(range(51))
    assert curves["arrived_milli"].iloc[-1] == 3_952_670                # the whole trace: 63.6% of 6,212,000
    assert curves["arrived_milli"].iloc[-2] <= 49 / 100 * 6_212_000 < curves["arrived_milli"].iloc[-1]
    assert (out / "alloc.png").stat().st_size > 0 and (out / "bars_gpushare.png").is_file()
