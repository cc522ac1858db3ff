"""What a newcomer reads at the command line, word for word: the summaries two studies print on tiny inputs worked
out by hand, the ``fgdopt --help`` listing (plain sentences: no cut text, no markup, no internal wording), errors that
name the command as typed and the closest valid name, and a policy of one's own under its own name."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from experiments import cli, gap, timeline
from experiments.args import names, parse_policies, study_parser, unknown_name
from fgdopt.suites import adversarial_instances

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,submit_s,duration_s"
TICKET_WORD = re.compile(r"\biss" r"ues?\b", re.IGNORECASE)
"""The word no help text, docstring or comment may use (spelt in two pieces so that this file does not match)."""
NODE = '{"nodes": [{"cpu_milli": 32000, "memory_mib": 65536, "gpu": 2, "model": "T4"}]}'


def test_timeline_prints_its_runs_and_the_idle_gpus_in_words(tmp_path, capsys):
    """One node of 2 GPUs; at 0 arrive a (half a GPU, 100 s), b (1 GPU, 50 s) and c (2 GPUs, 20 s), at 30 s d (CPU
    only, 10 s). FIFO: a and b start at 0; c needs both GPUs whole, and a holds half of one until 100 s, so c starts
    at 100 s; d queues behind c (FIFO) and starts at 100 s too. Waits 0, 0, 100, 70 s: mean 42.5 s, 99th percentile
    (linear) 70 + 0.97 x 30 = 99.1 s; JCTs 100, 50, 120, 80 s: mean 87.5 s. The window is the submissions' span
    [0, 30] s, in which 1.5 of 2 GPUs are allocated: 75%. Its two instants (10 and 20 s) hold a, b running and c
    waiting: placed afresh, c alone takes 2 GPUs, a and b 1.5, so the optimum uses 0.5 GPU more, proven. One run
    per policy: the file is one fixed job set (the default seeds do not repeat it)."""
    workload = tmp_path / "h.csv"
    workload.write_text("\n".join([HEADER, "a,1000,0,1,500,,0,100", "b,1000,0,1,1000,,0,50", "c,2000,0,2,1000,,0,20",
                                   "d,1000,0,0,0,,30,10"]) + "\n")
    (tmp_path / "cluster.json").write_text(NODE)
    assert cli.main(["timeline", "--workload", str(workload), "--cluster", str(tmp_path / "cluster.json"),
                     "--policies", "fgd,best-fit", "--queue", "fifo", "--instants", "2",
                     "--output", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.splitlines()
    cpu = [line.rsplit(maxsplit=1)[0] for line in lines[:3]]          # the last column, CPU seconds, varies
    assert [" ".join(line.split()) for line in cpu] == [
        "trace seed policy queue mechanism jobs rejected mean wait (s) 99th pct wait (s) mean JCT (s) "
        "GPUs allocated (% time avg) job-hours blocked by frag. CPU",
        "h 42 fgd fifo none 4 0 42.50 99.10 87.50 75.00 0.00",
        "h 42 best-fit fifo none 4 0 42.50 99.10 87.50 75.00 0.00"]
    assert lines[3:] == [
        "fgd, fifo queue: placed afresh, the same jobs would use 0.5 more GPUs on average over 2 sampled instants "
        "(the optimum is proven)",
        "best-fit, fifo queue: placed afresh, the same jobs would use 0.5 more GPUs on average over 2 sampled "
        "instants (the optimum is proven)"]
    assert len(pd.read_csv(tmp_path / "out" / "timeline.csv")) == 2


def test_timeline_idle_line_where_the_optimum_is_not_proven():
    """Incumbent 2.0 and bound 2.5 GPUs against 1.5 allocated at one instant: 0.5 to 1.0 more GPUs."""
    results = [{"optimum": [{"question": "placement", "policy": "fgd", "queue": "backfill", "mechanism": "priority",
                             "current_milli": 1500, "incumbent_milli": 2000, "bound_milli": 2500}]}]
    assert timeline.idle_lines(results) == [
        "fgd, backfill queue, evictions by priority: placed afresh, the same jobs would use 0.5 to 1.0 more GPUs on "
        "average over 1 sampled instant (0.5 with the best placement found, 1.0 at its proven bound)"]


def test_a_workload_runs_once_per_seed_asked(tmp_path):
    workload = tmp_path / "w.csv"
    workload.write_text("\n".join([HEADER, "a,1000,0,1,500,,0,100"]) + "\n")
    (tmp_path / "cluster.json").write_text(NODE)
    argv = ["--workload", str(workload), "--cluster", str(tmp_path / "cluster.json"), "--policies", "fgd",
            "--queue", "fifo", "--instants", "0", "--output", str(tmp_path / "out")]
    assert timeline.main(argv) == 0
    assert pd.read_csv(tmp_path / "out" / "timeline.csv")["seed"].tolist() == [42]
    assert timeline.main([*argv, "--seeds", "1-3"]) == 0
    assert pd.read_csv(tmp_path / "out" / "timeline.csv")["seed"].tolist() == [1, 2, 3]


SUMMARY = """\
## Summary per policy

| policy   |   mean gap to the bound (%) |   max gap to the bound (%) |   mean gap to the best found (%) | optimal (proven)   |   more GPUs than FGD |   fewer GPUs than FGD |
|:---------|----------------------------:|---------------------------:|---------------------------------:|:-------------------|---------------------:|----------------------:|
| fgd      |                       0     |                          0 |                            0     | 2/2                |                      |                       |
| best-fit |                      40.789 |                         50 |                           40.789 | 0/2                |                    0 |                     2 |
"""  # noqa: E501
"""Two hand-made instances (:func:`fgdopt.suites.adversarial_instances`): adv-pack-trap, optimum 1.9 GPUs, fgd
1.9 and best-fit 1.3 (gap 0.6 / 1.9 = 31.579%); adv-cpu-starvation, optimum 4 GPUs, fgd 4, best-fit 2 (50%).
best-fit: mean (31.579 + 50) / 2 = 40.789%, max 50%, fewer GPUs than FGD on both; FGD against itself: blank."""


def test_gap_prints_its_summary_in_words_and_draws_gap_png(tmp_path, capsys):
    folder = tmp_path / "instances"
    folder.mkdir()
    for inst in adversarial_instances():
        if inst.name in ("adv-pack-trap", "adv-cpu-starvation"):
            inst.save(folder / f"{inst.name}.json")
    assert cli.main(["gap", "--instances", str(folder), "--methods", "milp-cbc,lp", "--policies", "fgd,best-fit",
                     "--jobs", "1", "--output", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert SUMMARY in out
    assert "| adv-pack-trap      |       1 |      2 |       4 | 1.90 (0.00) | 1.30 (31.58) | 1.90 (optimal)" in out
    png = (tmp_path / "out" / "gap.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_gap_quick_solves_eight_small_instances():
    chosen = gap.quick_instances(__import__("fgdopt.suites", fromlist=["suite"]).suite("small"))
    assert [i.name for i in chosen] == ["rand-G2x8-n2-r1.3-s0", "rand-T4x2-n4-r1.3-s5", "rand-P100x2-n4-r1.3-s8",
                                        "rand-V100x4-n4-r1.3-s11", "rand-openb-n4-r1.3-s14",
                                        "rand-G2x8+T4x2+P100x2-n6-r1.3-s20", "adv-pack-trap", "adv-cpu-starvation"]


# -- help and errors ---------------------------------------------------------------------------

def test_help_is_plain_full_sentences(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "..." not in out and "`" not in out and not TICKET_WORD.search(out)
    listing = out.split("commands:\n", 1)[1]
    entries = re.split(r"\n  (?=\S)", "\n" + listing)[1:]
    assert len(entries) == len(cli.COMMANDS)
    for entry in entries:
        text = " ".join(entry.split("(python -m")[0].split()[1:])
        assert text.endswith((".", "?", ")")), entry               # a whole sentence, never cut
    assert ("gap Optimality gaps: every online policy against the offline optimum and its proven bounds."
            in " ".join(out.split()))
    assert ("trace-stats Print the statistics table of an openb trace variant (without the pod_phase rows for the "
            "multigpu* pod lists, which give the shapes only)." in " ".join(out.split()))


def _exit_code(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as stop:
        return stop.code


def test_errors_name_the_command_as_typed(capsys):
    for argv, prog in ((["timeline", "--load", "0"], "fgdopt timeline"), (["replay", "--ratio", "0"], "fgdopt replay"),
                       (["traces", "download", "--dest", __file__], "fgdopt traces")):
        assert _exit_code(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{prog}: error: argument "), err
    with pytest.raises(SystemExit):
        timeline.main(["--load", "0"])
    assert capsys.readouterr().err.startswith("python -m experiments.timeline: error: argument --load: expected")
    assert study_parser("experiments.gap", "").prog == "python -m experiments.gap"     # the dispatcher's name is gone


def test_a_misspelt_name_gets_the_closest_valid_one(capsys):
    assert cli.main(["gaap"]) == 2
    assert capsys.readouterr().err.startswith(
        "fgdopt: error: unknown command 'gaap': did you mean gap? (valid: gap, replay, openb, ")
    assert str(unknown_name("policy", "best-fti", ["fgd", "best-fit"])) == \
        "unknown policy 'best-fti': did you mean best-fit? (valid: fgd, best-fit)"
    assert str(unknown_name("policy", "zzz", ["fgd", "best-fit"], "or a module:attribute spec")) == \
        "unknown policy 'zzz' (valid: fgd, best-fit, or a module:attribute spec)"
    with pytest.raises(Exception, match=r"^unknown rule 'requests': did you mean request\? \(valid: request, used\)$"):
        names(["request", "used"], "rule")("request,requests")
    with pytest.raises(Exception, match=r"^unknown policy 'best-fti': did you mean best-fit\? \(valid: fgd, "):
        parse_policies("fgd,best-fti")
    for argv, message in (
            (["timeline", "--queue", "fifu"], "argument --queue: unknown queue discipline 'fifu': did you mean fifo?"),
            (["timeline", "--mechanism", "priorty"], "unknown mechanism 'priorty': did you mean priority?"),
            (["openb", "--trace", "defualt"], "unknown trace variant 'defualt': did you mean default?"),
            (["gap", "--instances", "smal"], "unknown instance suite 'smal': did you mean small? (valid: small, "
                                             "medium, openb-sample, or a folder of instance JSON files)"),
            (["gap", "--format", "mdown"], "argument --format: unknown format 'mdown': did you mean markdown?"),
            (["defrag", "--suite", "smal"], "argument --suite: unknown suite 'smal': did you mean small?")):
        assert _exit_code([*argv, "--output", "unused"]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.splitlines()) == 1, err


MINE = '''
from fgdopt.policies.base import RankedPolicy


class MostLoaded(RankedPolicy):
    name = "most-loaded"

    def score(self, state, task, nodes):
        return -state.gpu_left[nodes].sum(axis=1)


class Nameless(MostLoaded):
    name = None
'''


def test_a_policy_of_your_own_heads_its_columns_by_its_name(tmp_path, capsys):
    from fgdopt.policies import policy_labels

    (tmp_path / "mine.py").write_text(MINE)
    spec, nameless = f"{tmp_path / 'mine.py'}:MostLoaded", f"{tmp_path / 'mine.py'}:Nameless"
    assert policy_labels(["fgd", spec, nameless]) == {"fgd": "fgd", spec: "most-loaded", nameless: nameless}
    assert policy_labels(["most-loaded", spec]) == {"most-loaded": "most-loaded", spec: spec}   # no two alike
    inst = adversarial_instances()[0]
    inst.save(tmp_path / f"{inst.name}.json")
    assert gap.main(["--instances", str(tmp_path), "--methods", "lp", "--policies", f"fgd,{spec}", "--jobs", "1",
                     "--format", "csv"]) == 0
    assert set(pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))["method"]) == {"fgd", "most-loaded",
                                                                                             "lp"}


def test_every_source_file_is_free_of_issue_wording():
    root = Path(__file__).resolve().parents[1]
    hits = [f"{p.relative_to(root)}:{n}" for folder in ("fgdopt", "formulations", "experiments", "docs", "notebooks",
                                                          "tests")
            for p in sorted((root / folder).rglob("*")) if p.suffix in (".py", ".md", ".rst", ".ipynb")
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if TICKET_WORD.search(line)]
    assert hits == []


def test_hetero_prints_hours_as_its_figure_does():
    """Mean JCT 60,000 s = 16.67 h and 30,000 s = 8.33 h (las is 2.00x las-aware); 95th percentile 100,000 s =
    27.78 h and 90,000 s = 25.00 h; makespan 1,000,000 s = 277.78 h; utilization 0.5 = 50%. No batch: the
    makespan bound column (all NaN) is left out."""
    from experiments.hetero import ratio_lines, run_table

    frame = pd.DataFrame({
        "policy": ["las", "las-aware"], "cluster": ["12:12:12"] * 2, "lambda_per_hour": [0.5, 0.5], "seed": [0, 0],
        "measured_jobs": [200, 200], "mean_jct_s": [60_000.0, 30_000.0], "p95_jct_s": [100_000.0, 90_000.0],
        "makespan_s": [1e6, 1e6], "mean_rho": [1.2, 1.1], "max_rho": [3.0, 2.0], "jain_rho": [0.9, 0.95],
        "utilization": [0.5, 0.6], "preemptions": [3, 4], "makespan_bound_s": [float("nan")] * 2,
        "wall_s": [2.0, 3.0], "solves": [10, 12], "steps": ["whole", "whole"]})
    assert [" ".join(line.split()) for line in run_table(frame).splitlines()] == [
        "policy cluster jobs/hour seed measured jobs mean JCT (h) 95th pct JCT (h) makespan (h) mean rho max rho "
        "Jain index of rho GPUs busy (%) preemptions wall (s) LP solves steps",
        "las 12:12:12 0.50 0 200 16.67 27.78 277.78 1.20 3.00 0.90 50.00 3 2.00 10 whole",
        "las-aware 12:12:12 0.50 0 200 8.33 25.00 277.78 1.10 2.00 0.95 60.00 4 3.00 12 whole"]
    assert ratio_lines(frame) == ["at 0.5 jobs/hour, mean JCT without heterogeneity awareness: las 2.00x las-aware"]


def test_a_printed_table_shows_a_small_number_as_it_is_not_as_zero():
    """A rate of 0.004 jobs/hour read 0.00 in the hetero table (two decimals): a number that would read 0 is printed
    with two significant digits instead; zero, and every other number, with two decimals as before."""
    from experiments.outputs import printed

    frame = pd.DataFrame({"lambda_per_hour": [0.004, 0.00001234, 0.0, 3.14159, -0.001]})
    assert printed(frame, {"lambda_per_hour": "jobs/hour"}).split() == [
        "jobs/hour", "0.004", "1.2e-05", "0.00", "3.14", "-0.001"]
