"""Bad input stops at the door: every study, run in-process as ``fgdopt COMMAND ARGS`` (:func:`experiments.cli.main`),
ends a bad option or input file with exit code 2 and one line on stderr naming it (the command as typed, then the
option, file, row or field, and for a misspelt name the closest valid one), no traceback, before any work:
the output folder (its previous outputs and run journal) is left exactly as it was. Then the two ways a sweep used
to go stale or lose results: ``--resume`` after the workload file is edited reruns (the journal is keyed by the
file's content), and a sweep that fails leaves the outputs of the previous one untouched and keeps its finished
runs for ``--resume``.

Each study has one parametrized test over its list of bad inputs; a new study adds its entry to :data:`CASES`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from experiments import cli, timeline

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,submit_s,duration_s"
GOOD_ROWS = ["a,1000,0,1,500,,0,100", "b,1000,0,1,1000,,5,50", "c,2000,0,2,1000,,5,20"]
NODE = {"cpu_milli": 32000, "memory_mib": 65536, "gpu": 2, "model": "T4"}


def _inputs(root: Path) -> dict[str, str]:
    """Input files and folders, good and bad, under ``root``; their names are what the cases below refer to."""
    files = {
        "workload.csv": "\n".join([HEADER, *GOOD_ROWS]),
        "one-too-many.csv": "\n".join([HEADER, GOOD_ROWS[0], GOOD_ROWS[1] + ",7", GOOD_ROWS[2]]),
        "one-too-few.csv": "\n".join([HEADER, GOOD_ROWS[0], "b,1000,0,1,1000,,5"]),
        "no-rows.csv": HEADER,
        "no-duration.csv": "\n".join([HEADER.removesuffix(",duration_s"), "a,1000,0,1,500,,0"]),
        "empty.csv": "",
        "twice.csv": "\n".join([HEADER, GOOD_ROWS[0], GOOD_ROWS[0]]),
        "cluster.json": json.dumps({"nodes": [NODE]}),
        "no-nodes.json": json.dumps({"nodes": []}),
        "a-list.json": json.dumps([NODE]),
        "not-json.json": '{"nodes": [',
        "node-not-object.json": json.dumps({"nodes": [[32000, 65536, 2, "T4"]], "tasks": []}),
        "suite-no-nodes/x.json": json.dumps({"name": "x", "nodes": [], "tasks": [
            {"cpu_milli": 1000, "memory_mib": 0, "num_gpu": 1, "gpu_milli": 1000}]}),
        "suite-list/x.json": json.dumps([]),
        "suite-bad-node/x.json": json.dumps({"nodes": [[1, 2, 3, "T4"]], "tasks": []}),
        "cut-openb/openb_node_list_gpu_node.csv": "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,8,V100M32\n"
                                                  "n1,96000,78",
        "cut-openb/openb_pod_list_default.csv": "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,1000",
        "openb-16/openb_node_list_gpu_node.csv": "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,8,G2\n"
                                                 "n1,96000,786432,16,MI300",
        "openb-16/openb_pod_list_default.csv": "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,4,1000",
        "openb-16/openb_pod_list_multigpu50.csv": "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,4,1000",
        "cut-gavel/simulation_throughputs.json": '{"v100": {"(\'ResNet-18 (batch size 16)\', 1)": {"null": 5.',
        "mapping-list.json": "[1]",
        "synergy-models/toy_1.py": "class toy_1:\n    def update_stats(self):\n" + "".join(
            f"        self.{k} = 1\n" for k in ("cpus", "mem", "speed", "batch", "placement_penalty", "speedup",
                                               "iter_time"))
        + "        self.tput = [" + ",".join(["[1, 1, 1, 1, 1]"] * 9) + "]",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n" if text else "")
    return {name: str(root / name) for name in files} | {
        "missing": str(root / "missing"), "a-file": str(root / "workload.csv"),
        **{d: str(root / d) for d in ("cut-openb", "openb-16", "cut-gavel", "suite-no-nodes", "suite-list",
                                      "suite-bad-node", "synergy-models")}}


W = ["--policies", "fgd", "--queue", "fifo", "--seeds", "1", "--instants", "0"]
"""A small timeline command line: the cases below add what is wrong with it."""

CASES: dict[str, list[tuple[list[str], str]]] = {
    # study: [(arguments, with {file} placeholders and OUT for the output folder; what the one line must name)]
    "openb": [(["--seeds", "5-2"], "--seeds"), (["--ratio", "-1"], "--ratio"), (["--jobs", "0"], "--jobs"),
              (["--trace", "nope"], "--trace"), (["--policies", "nope"], "nope"),
              (["--policies", "fgd,best-fti"], "argument --policies: unknown policy 'best-fti': did you mean best-fit? "
                                               "(valid: fgd, best-fit, "),
              (["--data-dir", "{missing}"], "--data-dir"),
              (["--data-dir", "{cut-openb}"], "openb_node_list_gpu_node.csv: row 1 (line 3) has 3 fields")],
    "timeline": [(["--seeds", "5-2", "--workload", "{workload.csv}", "--cluster", "{cluster.json}"], "--seeds"),
                 (["--time-limit", "-1"], "--time-limit"), (["--load", "0.9,0"], "--load"),
                 (["--sample", "0"], "--sample"), (["--n-jobs", "0"], "--n-jobs"), (["--instants", "-1"], "--instants"),
                 (["--checkpoint-s", "0"], "--checkpoint-s"), (["--queue", "nope"], "nope"),
                 (["--mechanism", "nope"], "nope"), (["--mig-nodes", "0"], "--mig-nodes"),
                 ([*W, "--workload", "{one-too-many.csv}", "--cluster", "{cluster.json}"],
                  "one-too-many.csv: job row 1 (line 3) has 9 fields, more than the 8 of the header"),
                 ([*W, "--workload", "{one-too-few.csv}", "--cluster", "{cluster.json}"],
                  "one-too-few.csv: job row 1 (line 3) has 7 fields, fewer"),
                 ([*W, "--workload", "{no-rows.csv}", "--cluster", "{cluster.json}"], "no-rows.csv: no jobs"),
                 ([*W, "--workload", "{empty.csv}", "--cluster", "{cluster.json}"], "empty.csv: empty file"),
                 ([*W, "--workload", "{twice.csv}", "--cluster", "{cluster.json}"],
                  "twice.csv: job row 1: field 'name' 'a' is the name of job row 0 too"),
                 ([*W, "--workload", "{workload.csv}", "--cluster", "{no-nodes.json}"], "no-nodes.json: no nodes"),
                 ([*W, "--workload", "{workload.csv}", "--cluster", "{a-list.json}"], "a-list.json"),
                 ([*W, "--workload", "{workload.csv}", "--cluster", "{not-json.json}"], "not-json.json"),
                 ([*W, "--workload", "{workload.csv}", "--cluster", "{node-not-object.json}"], "node row 0"),
                 ([*W, "--workload", "{no-duration.csv}", "--cluster", "{cluster.json}"],
                  "no-duration.csv: missing column duration_s; expected name, submit_s, duration_s, num_gpu, "
                  "gpu_milli, cpu_milli, memory_mib, workers, gpu_spec, priority, user"),
                 (["--queue", "fifu"], "argument --queue: unknown queue discipline 'fifu': did you mean fifo? "
                                       "(valid: fifo, backfill, sjf, smallest, area, area-aged, whole-first, none, "
                                       "or a module:attribute spec)"),
                 ([*W, "--workload", "{missing}", "--cluster", "{cluster.json}"], "--workload"),
                 ([*W, "--workload", "{workload.csv}"], "--workload and --cluster"),
                 ([*W, "--workload", "OUT/jobs.csv", "--cluster", "{cluster.json}"],
                  "argument --workload: 'OUT/jobs.csv' is in the output folder"),
                 ([*W, "--data-dir", "{cut-openb}"], "openb_node_list_gpu_node.csv: row 1")],
    "hetero": [(["--gpus-per-node", "0"], "--gpus-per-node"), (["--gpus-per-node", "9"], "--gpus-per-node"),
               (["--multi-gpu", "--spread-throughput", "maybe"], "--spread-throughput"),
               (["--rates", "1,-2"], "--rates"),
               (["--round-s", "-360"], "--round-s"), (["--window", "5:3"], "--window"),
               (["--cluster", "0:0:0"], "--cluster"), (["--batch", "-1"], "--batch"), (["--seeds", "5-2"], "--seeds"),
               (["--policies", "las,nope"], "nope"), (["--jobs", "0"], "--jobs"),
               (["--data-dir", "{cut-gavel}"], "simulation_throughputs.json: not valid JSON")],
    "interference": [(["--n-jobs", "0"], "--n-jobs"), (["--weights", "-1"], "--weights"),
                     (["--interference", "maybe"], "--interference"), (["--load", "-0.5"], "--load"),
                     (["--policies", "nope"], "nope"), (["--gavel-dir", "{cut-gavel}"], "not valid JSON")],
    "failures": [(["--node-mtbf-h", "0"], "argument --node-mtbf-h: expected a number of hours > 0 or inf, got '0'"),
                 (["--gpu-mtbf-h", "-3"], "argument --gpu-mtbf-h: expected a number of hours > 0 or inf, got '-3'"),
                 (["--straggler-factor", "0"],
                  "argument --straggler-factor: expected a finite number > 0 and <= 1, got '0'"),
                 (["--workload", "gangs"], "unknown workload 'gangs': did you mean gang?")],
    "gap": [(["--instances", "{missing}"], "missing' not found; expected a suite (small, medium, openb-sample) or a "
                                            "folder of instance JSON files"),
            (["--instances", "{a-file}"],
             "argument --instances: '{a-file}' is a file; expected a suite (small, medium, openb-sample) or a folder "
             "of instance JSON files (put the file in a folder)"),
            (["--instances", "smal"], "argument --instances: unknown instance suite 'smal': did you mean small? "
                                      "(valid: small, medium, openb-sample, or a folder of instance JSON files)"),
            (["--quick", "--instances", "small"], "--quick solves its own instances of the small suite; drop "
                                                  "--instances"),
            (["--methods", "magic"], "--methods"),
            (["--time-limit", "-1"], "--time-limit"), (["--threads", "0"], "--threads"), (["--jobs", "0"], "--jobs"),
            (["--seed", "-1"], "--seed"),
            (["--instances", "{suite-no-nodes}"], "x.json: no nodes"),
            (["--instances", "{suite-list}"], "x.json: instance: expected a JSON object"),
            (["--instances", "{suite-bad-node}"], "x.json: node row 0: expected an object")],
    "frontier": [(["--points", "80,140"], "--points"), (["--tol", "-0.1"], "--tol"),
                 (["--time-limit", "0"], "--time-limit"), (["--threads", "0"], "--threads"),
                 (["--nodes", "0"], "--nodes"), (["--seeds", "5-2"], "--seeds"),
                 (["--data-dir", "{cut-openb}"], "row 1")],
    "defrag": [(["--at", "0"], "--at"), (["--budgets", "-1"], "--budgets"), (["--solver", "gurobi"], "--solver"),
               (["--slices", "-1"], "--slices"), (["--suite", "nope"], "--suite"), (["--seeds", "x"], "--seeds"),
               (["--time-limit", "0"], "--time-limit"), (["--data", "{cut-openb}"], "row 1"),
               (["--suite", "small", "--trace", "cpu050", "--seeds", "1"],
                "--suite runs on the suite's instances, not the trace; drop --trace, --seeds")],
    "mig": [(["--nodes", "0"], "--nodes"), (["--ratio", "0"], "--ratio"), (["--seeds", "2-1"], "--seeds"),
            (["--threads", "0"], "--threads")],
    "topology": [(["--mapping", "{mapping-list.json}"], "mapping-list.json: expected a JSON object"),
                 (["--mapping", "{missing}"], "--mapping"), (["--exact-nodes", "0"], "--exact-nodes"),
                 (["--exact-time", "-1"], "--exact-time"), (["--bench", "-1"], "--bench"),
                 (["--seeds", "5-2"], "--seeds"), (["--data", "{cut-openb}"], "row 1"),
                 # a 16-GPU node has no shipped topology: the replays stopped with a ValueError traceback
                 (["--data", "{openb-16}"], "openb-16/openb_node_list_gpu_node.csv: node 1 (n1): no topology for "
                                            "model 'MI300' with 16 GPUs")],
    "schedule": [(["--objective", "mean-flow"], "mean-flow"), (["--time-limit", "-1"], "--time-limit"),
                 (["--instances", "huge"], "--instances"), (["--jobs", "0"], "--jobs"),
                 (["--workload", "{missing}", "--cluster", "{cluster.json}"], "--workload"),
                 (["--workload", "{workload.csv}"], "--workload and --cluster"),
                 (["--workload", "{workload.csv}", "--cluster", "{not-json.json}"], "not-json.json"),
                 (["--workload", "{one-too-many.csv}", "--cluster", "{cluster.json}"], "one-too-many.csv: job row 1"),
                 (["--trace", "default", "--load", "0.9,0"], "--load"), (["--trace", "default", "--seeds", "5-2"],
                                                                        "--seeds"),
                 (["--trace", "default", "--data-dir", "{cut-openb}"], "row 1"),
                 (["--scale"], "--scale"), (["--trace", "default", "--scale"], "--scale"),
                 (["--workload", "{workload.csv}", "--cluster", "{cluster.json}", "--scale", "--time-limit", "0"],
                  "--time-limit"),
                 (["--trace", "default", "--time-limit", "-5"], "--time-limit"),
                 (["--trace", "default", "--lns-time-limit", "0"], "--lns-time-limit"),
                 (["--workload", "{workload.csv}", "--cluster", "{cluster.json}", "--scale", "--lns-time-limit",
                   "-1"], "--lns-time-limit")],
    "cpu-aware": [(["--rules", "request,nope"], "nope"), (["--load", "0"], "--load"), (["--n-jobs", "0"], "--n-jobs"),
                  (["--profiles", "{missing}"], "--profiles"), (["--profiles", "{not-json.json}"], "not-json.json"),
                  (["--data-dir", "{cut-openb}"], "row 1")],
    "pollux": [(["--policies", "pollux,nope"], "nope"), (["--generations", "0"], "--generations"),
               (["--seeds", "5-2"], "--seeds"), (["--jobs", "0"], "--jobs"), (["--pollux-dir", "{missing}"],
                                                                                "--pollux-dir"),
               (["--workloads", "{suite-list}", "--pollux-dir", "{cut-openb}"], "--workloads: no workload files")],
    "synergy": [(["--profiles", "{not-json.json}"], "not-json.json: does not parse"),
                (["--profiles", "{synergy-models}"], "unknown Synergy model 'alexnet'"),
                (["--loads", "9,0"], "--loads"), (["--loads", "-6"], "--loads"), (["--split", "20,70"], "--split"),
                (["--split", "50,70,10"], "--split"),
                (["--policies", "FIFO+tune,FIFO+magic"], "FIFO+magic"), (["--window", "5:3"], "--window"),
                (["--bound-every", "0"], "--bound-every"), (["--jobs", "0"], "--jobs")],
    "refsim": [(["--policy", "nope"], "nope"), (["--data-dir", "{missing}"], "--data-dir")],
    "paper": [(["--only", "nope"], "--only"), (["--rerun", "nope"], "--rerun")],
    "trace-stats": [(["--variant", "nope"], "--variant"), (["--data-dir", "{cut-openb}"], "row 1")],
    "bench-replay": [(["--repeats", "0"], "--repeats"), (["--trace", "nope"], "--trace")],
    "bench-timeline": [(["--sizes", "0"], "--sizes"), (["--load", "0"], "--load")],
    "bench-hetero": [(["--cluster", "1:2"], "--cluster"), (["--repeat", "0"], "--repeat"),
                     (["--policies", "nope"], "nope")],
    "bench-defrag": [(["--first", "0"], "--first"), (["--nodes", "0"], "--nodes")],
    "bench-formulations": [(["--time-limit", "0"], "--time-limit"), (["--methods", "magic"], "--methods")],
    "mutants": [(["--sample", "0"], "--sample"), (["--timeout", "-1"], "--timeout"),
                (["--tests", "tests/nope.py"], "tests/nope.py: not found")],
    "traces": [(["fetch"], "invalid choice"), (["download", "--dest", "{a-file}"], "argument --dest")],
}
OUTPUT_OPTION = {"paper": "--results", "trace-stats": None, "bench-formulations": None, "traces": None}
"""The option naming a study's output folder (default ``--output``; None: it writes no folder)."""


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("study", sorted(CASES))
def test_bad_input_ends_in_one_line_and_exit_2_and_touches_nothing(study, tmp_path, capsys, monkeypatch):
    files = _inputs(tmp_path)
    out = tmp_path / "OUT"
    (out / ".runs" / study).mkdir(parents=True)
    (out / "summary.csv").write_text("results of an earlier run\n")
    (out / "jobs.csv").write_text("\n".join([HEADER, *GOOD_ROWS]) + "\n")
    (out / ".runs" / study / "0123.pkl").write_bytes(b"a finished run")
    before, beside = _snapshot(out), sorted(p.name for p in tmp_path.iterdir())
    option = OUTPUT_OPTION.get(study, "--output")
    cases = list(CASES[study])
    if option is not None:
        cases.append(([option, files["a-file"]], f"argument {option}"))     # an output folder that is a file
    monkeypatch.chdir(tmp_path)
    for args, names in cases:
        argv = [re.sub(r"\{([^}]+)\}", lambda m: files[m.group(1)], a.replace("OUT", str(out))) for a in args]
        if option is not None and option not in argv:
            argv += [option, str(out)]
        try:
            code = cli.main([study, *argv])
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2, (argv, err)
        assert len(lines) == 1 and "Traceback" not in err, (argv, err)
        expected = re.sub(r"\{([^}]+)\}", lambda m: files[m.group(1)], names.replace("OUT", str(out)))
        assert expected in lines[0], (argv, lines[0])
        assert lines[0].startswith(f"fgdopt {study}"), lines[0]              # the command as typed
        assert _snapshot(out) == before, argv
        assert sorted(p.name for p in tmp_path.iterdir()) == beside, argv        # no temporary folder left


def _timeline(tmp_path: Path, workload: Path, *more: str) -> pd.DataFrame:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"nodes": [NODE]}))
    assert timeline.main([*W, "--workload", str(workload), "--cluster", str(cluster), "--output",
                          str(tmp_path / "out"), *more]) == 0
    return pd.read_csv(tmp_path / "out" / "timeline.csv")


def test_resume_reruns_a_run_whose_workload_file_was_edited(tmp_path):
    """Three jobs on one node of 2 GPUs, FIFO: ``a`` (1 GPU at half share, 100 s from 0), ``b`` (1 GPU, 50 s from 5)
    and ``c`` (2 GPUs, 20 s from 5). ``a`` and ``b`` run at once (JCTs 100 and 50 s); ``c`` waits for both GPUs,
    free at 100 s, and finishes at 120 s (JCT 115 s): mean JCT 265 / 3. Edited to durations 10x, ``c`` starts at
    1000 s, ends at 1200 s: JCTs 1000, 500, 1195, mean 2695 / 3. ``--resume`` must give the edited file's numbers,
    not the journal's run of the old file (its key was the file's path)."""
    workload = tmp_path / "w.csv"
    workload.write_text("\n".join([HEADER, *GOOD_ROWS]) + "\n")
    assert _timeline(tmp_path, workload)["mean_jct_s"].iloc[0] == pytest.approx(265 / 3)
    frame = pd.read_csv(workload)
    frame.assign(duration_s=frame["duration_s"] * 10).to_csv(workload, index=False)
    assert _timeline(tmp_path, workload, "--resume")["mean_jct_s"].iloc[0] == pytest.approx(2695 / 3)


FAILING = '''
from fgdopt.policies import PolicyError


class Fails:
    def __init__(self, **options):
        pass

    def __call__(self, state, task):
        raise PolicyError("this policy always fails")
'''


def test_a_failing_sweep_keeps_the_previous_outputs_and_its_finished_runs(tmp_path, capsys, monkeypatch):
    """A sweep of fgd (finishes) then a failing policy: exit 2 with the policy's one line; the outputs of the
    earlier complete run are not replaced by the partial ones, and the fgd run is in the journal (``--resume``
    does not run it again)."""
    workload = tmp_path / "w.csv"
    workload.write_text("\n".join([HEADER, *GOOD_ROWS]) + "\n")
    first = _timeline(tmp_path, workload)
    before = _snapshot(tmp_path / "out")
    (tmp_path / "failing_policy.py").write_text(FAILING)
    argv = ["--policies", f"fgd,{tmp_path / 'failing_policy.py'}:Fails", "--queue", "fifo", "--seeds", "1",
            "--instants", "0", "--workload", str(workload), "--cluster", str(tmp_path / "cluster.json"), "--output",
            str(tmp_path / "out")]
    capsys.readouterr()
    assert timeline.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("this policy always fails") and "Traceback" not in "\n".join(err)
    after = _snapshot(tmp_path / "out")
    assert {k: v for k, v in after.items() if not k.startswith(".runs")} == \
        {k: v for k, v in before.items() if not k.startswith(".runs")}

    def refuse(*args, **kwargs):
        raise AssertionError("a finished run ran again")

    monkeypatch.setattr(timeline, "run_cell", refuse)
    pd.testing.assert_frame_equal(_timeline(tmp_path, workload, "--resume").drop(columns=["wall_s", "cpu_s"]),
                                  first.drop(columns=["wall_s", "cpu_s"]))


def test_outputs_move_into_place_only_when_complete(tmp_path):
    """:func:`experiments.outputs.staged`: files written in the block replace the output's only when the block ends
    without error; a partial write (a stopped sweep) adds files but replaces none; nothing is left beside."""
    from experiments.outputs import staged

    out = tmp_path / "out"
    with staged(out) as tmp:
        (tmp / "a.csv").write_text("first\n")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "b.csv").write_text("first\n")
    assert (out / "a.csv").read_text() == "first\n" and (out / "sub" / "b.csv").read_text() == "first\n"
    with pytest.raises(RuntimeError), staged(out) as tmp:
        (tmp / "a.csv").write_text("second\n")
        raise RuntimeError("the study failed after writing a.csv")
    assert (out / "a.csv").read_text() == "first\n"
    with staged(out, partial=True) as tmp:
        (tmp / "a.csv").write_text("partial\n")
        (tmp / "c.csv").write_text("partial\n")
    assert (out / "a.csv").read_text() == "first\n" and (out / "c.csv").read_text() == "partial\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError), staged(tmp_path / "file"):
        pass
