"""The paper command: its cache rule, its block filling, and the committed tables being exactly what it generates."""

from __future__ import annotations

import json
import re

import pytest

from experiments import paper, report

PAPER_MD = report.PAPER_DIR / "paper.md"


def test_fill_replaces_tables_and_values_and_keeps_the_markers():
    text = ("A <!-- value:x -->old<!-- /value --> b.\n<!-- table:t -->\n| old |\n<!-- /table -->\n"
            "<!-- table:missing -->\n<!-- /table -->\n")
    out = report.fill(text, {"x": "4.2", "t": "| a |\n|--|\n| 1 |"})
    assert out.startswith("A <!-- value:x -->4.2<!-- /value --> b.\n<!-- table:t -->\n| a |\n|--|\n| 1 |\n"
                          "<!-- /table -->\n")
    assert "not generated yet" in out
    assert report.fill(out, {"x": "4.2", "t": "| a |\n|--|\n| 1 |"}) == out           # idempotent


def test_table_files_split_tables_from_values():
    files = report.table_files({"t": "| a |\n|--|", "v": "7", "w": "x y"})
    assert files == {"t.md": "| a |\n|--|\n", "values.md": "| value | text |\n|:--|:--|\n| v | 7 |\n| w | x y |\n"}


def test_a_study_is_cached_only_for_the_same_inputs_and_files(tmp_path):
    study = paper.Study("s", "refsim", ("--a", "1"), ("--a", "2"), ("out.csv",))
    assert not paper.cached(study, "quick", tmp_path)
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "inputs.json").write_text(json.dumps(paper._inputs(study, "quick")))
    assert not paper.cached(study, "quick", tmp_path)                  # the kept file is missing
    (tmp_path / "s" / "out.csv").write_text("x\n1\n")
    assert paper.cached(study, "quick", tmp_path)
    assert not paper.cached(study, "full", tmp_path)                   # other arguments: rerun


def test_a_failing_study_raises_and_leaves_the_cache_alone(tmp_path):
    study = paper.Study("bad", "refsim", ("--no-such-option",), (), ("refsim.csv",))
    with pytest.raises(RuntimeError, match="study bad failed"):
        paper.run_study(study, "quick", tmp_path)
    assert not (tmp_path / "bad").exists()


def test_the_committed_tables_are_what_the_cached_results_generate():
    items = report.render(paper.RESULTS_DIR)
    for study in paper.STUDIES:                                         # every study's results are committed
        assert paper.cached(study, "quick"), f"{study.name}: run python -m experiments.paper --quick"
    expected = report.table_files(items)
    on_disk = {p.name: p.read_text() for p in (report.PAPER_DIR / "tables").glob("*.md")}
    assert on_disk == expected
    text = PAPER_MD.read_text()
    assert report.fill(text, items) == text
    names = {m.group(3) for m in report.BLOCK.finditer(text)}
    assert names <= set(items), f"paper.md blocks without a generated item: {sorted(names - set(items))}"


def test_the_figures_paper_md_shows_exist():
    for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", PAPER_MD.read_text()):
        assert (report.PAPER_DIR / target).is_file(), target


FIGURE_LIMITS = {"max_width_px": 1820, "max_height_px": 1300, "aspect": (0.75, 3.2)}
"""Every figure of the paper at the size a reader sees it (page width, 130 dpi): at most 14 inches wide (a
two-panel figure), no taller than 10 inches, width / height within ``aspect``; nothing cut at the edges."""


def test_every_paper_figure_is_readable_at_page_width(tmp_path, recwarn):
    from PIL import Image

    from fgdopt.plot import overflow_px

    drawn = report.draw_figures(paper.RESULTS_DIR, tmp_path)
    shown = {m.group(1) for m in re.finditer(r"!\[[^]]*\]\(figures/([^)]+)\)", PAPER_MD.read_text())}
    assert shown == {p.name for p in drawn}                      # the report draws every figure the paper shows
    assert not [w for w in recwarn.list if "past the figure's edge" in str(w.message)]
    lo, hi = FIGURE_LIMITS["aspect"]
    for path in drawn:
        width, height = Image.open(path).size
        assert width <= FIGURE_LIMITS["max_width_px"] and height <= FIGURE_LIMITS["max_height_px"], (path, width)
        assert lo <= width / height <= hi, (path.name, width, height)
        committed = report.PAPER_DIR / "figures" / path.name
        assert Image.open(committed).size == (width, height), f"{path.name}: rerun python -m experiments.paper"
    # the check itself: a title longer than its figure is wide is caught
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4.5))
    fig.subplots().set_title("Admitted GPUs against moves — small suite, mean over instances / fgd, 16 nodes")
    fig.tight_layout()
    assert overflow_px(fig) > 10


def test_figure8_seeds_are_counted_once(tmp_path):
    """The full profile runs seeds 0-2 in ``hetero`` and 1-2 again in ``hetero-seeds``: each (policy, rate, seed)
    counts once (the figure's means over seeds weigh each seed once), and at 1 jobs/h the gains over seeds are 2, 3
    and 4 (las 2x, 3x, 4x las-aware's 1 h)."""
    import pandas as pd

    from experiments import report

    def write(name, seeds):
        rows = [{"policy": p, "lambda_per_hour": 1.0, "seed": s,
                 "mean_jct_s": (2 + s) * 3600.0 if p == "las" else 3600.0} for s in seeds for p in ("las", "las-aware")]
        (tmp_path / name).mkdir()
        pd.DataFrame(rows).to_csv(tmp_path / name / "hetero.csv", index=False)

    write("hetero", [0, 1, 2])
    write("hetero-seeds", [1, 2])
    runs = report._all_seeds(tmp_path)
    assert sorted(runs["seed"].tolist()) == [0, 0, 1, 1, 2, 2]
    gains = report._seed_gains(runs)
    assert gains["seed"].tolist() == [0, 1, 2] and gains["gain"].tolist() == [2.0, 3.0, 4.0]



def test_the_readme_gap_summary_is_the_committed_small_study():
    """The README's summary table quotes ``paper/results/gap-small`` (the study section 4.2 reports): each of its rows
    is that policy's row of :func:`experiments.gap.summary_table`, column for column, and its count of proven
    instances is the study's."""
    import pandas as pd

    from experiments import gap

    readme = (report.PAPER_DIR.parent / "README.md").read_text()
    block = readme[readme.index("| policy | mean gap to the bound (%) |"):].split("\n\n", 1)[0].splitlines()
    columns = [c.strip() for c in block[0].strip("|").split("|")]
    runs = pd.read_csv(paper.RESULTS_DIR / "gap-small" / "gap.csv")
    summary = gap.summary_table(runs).rename(columns=gap.HEADINGS).set_index("policy")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in block[2:]]
    assert len(rows) == 5
    for policy, *cells in rows:
        for column, cell in zip(columns[1:], cells, strict=True):
            want = summary.loc[policy, column]
            same = cell == want if isinstance(want, str) else float(cell) == pytest.approx(want, abs=5e-4)
            assert same, (policy, column, cell, want)
    closed = (runs.incumbent_milli == runs.best_bound_milli).groupby(runs.instance).all()
    assert closed.all() and f"({len(closed)} instances, all proven optimal;" in readme


def test_the_gap_sentence_names_the_open_proofs_only_where_there_are(tmp_path):
    """Instance a is proven (incumbent = bound = 10 GPUs); b is open (incumbent 9.9, bound 10: 1% above)."""
    import pandas as pd

    (tmp_path / "s").mkdir()
    rows = [{"instance": name, "method": "fgd", "kind": "policy", "allocated_milli": 9000, "gap_pct": 10.0,
             "incumbent_milli": found, "best_bound_milli": 10000} for name, found in (("a", 10000), ("b", 9900))]
    pd.DataFrame(rows).to_csv(tmp_path / "s" / "gap.csv", index=False)
    items = report._gap(tmp_path, "s", "k")
    assert (items["gap_k_proven"], items["gap_k_instances"]) == ("1", "2")
    assert items["gap_k_open"] == "on the other 1 the best bound is at most 1.000% above the best placement"
    pd.DataFrame(rows[:1]).to_csv(tmp_path / "s" / "gap.csv", index=False)
    assert report._gap(tmp_path, "s", "k")["gap_k_open"] == "no proof is left open"
