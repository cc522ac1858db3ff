"""Resumable sweeps: a sweep killed midway (Ctrl-C) leaves a valid CSV of the runs that finished, and ``--resume``
completes it to the CSV of an uninterrupted run without redoing them; the journal's own contract."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from experiments import frontier, gap, openb
from experiments.executors import RunJournal, SweepInterrupted, run_all
from fgdopt.suites import adversarial_instances
from tests.test_plugins import MODULE, untimed, user_dir  # noqa: F401  (the fixture)


def _square(x: int) -> int:
    if x == 3:
        raise KeyboardInterrupt
    return x * x


def test_the_journal_keeps_finished_runs_and_reports_an_interruption(tmp_path):
    journal = RunJournal(tmp_path / "j")
    with pytest.raises(SweepInterrupted) as stop:
        run_all(None, _square, [(1,), (2,), (3,), (4,)], journal=journal)
    assert stop.value.finished() == [1, 4] and stop.value.done == [True, True, False, False]
    assert isinstance(stop.value.__cause__, KeyboardInterrupt) and len(journal) == 2
    calls = []
    resumed = run_all(None, lambda x: calls.append(x) or -x, [(1,), (2,), (3,), (4,)],
                      journal=RunJournal(tmp_path / "j", resume=True))
    assert resumed == [1, 4, -3, -4] and calls == [3, 4]
    fresh = RunJournal(tmp_path / "j")                            # without resume: a fresh sweep, nothing deleted
    assert fresh.load((1,)) == (False, None) and len(fresh) == 4
    assert RunJournal.key({"a": (1, 2), "b": None}) == RunJournal.key({"b": None, "a": [1, 2]})


def test_a_run_of_other_code_is_never_reused(tmp_path, monkeypatch):
    """The journal key holds the code's digest: the same inputs under edited code (a new digest) run again, and the
    digest covers every source of the three packages (an edit anywhere changes it)."""
    from experiments import executors

    journal = RunJournal(tmp_path / "j", resume=True)
    journal.save((1,), "old code's result")
    assert journal.load((1,)) == (True, "old code's result")
    monkeypatch.setattr(executors, "_CODE", ["another digest"])
    assert journal.load((1,)) == (False, None)
    monkeypatch.setattr(executors, "_CODE", [])
    first = executors.code_digest()
    assert len(first) == 64 and executors.code_digest() == first
    read = Path.read_bytes
    edited = Path(executors.__file__).resolve()
    monkeypatch.setattr(Path, "read_bytes", lambda p: read(p) + (b"# edited" if p == edited else b""))
    monkeypatch.setattr(executors, "_CODE", [])
    assert executors.code_digest() != first                            # one file's content changed


def test_a_killed_gap_sweep_resumes_to_the_uninterrupted_csv(user_dir, tmp_path, monkeypatch):  # noqa: F811
    folder = tmp_path / "instances"
    folder.mkdir()
    for inst in adversarial_instances()[:4]:
        inst.save(folder / f"{inst.name}.json")
    gate = tmp_path / "gate"
    gate.mkdir()
    argv = ["--instances", str(folder), "--methods", "milp-cbc,lp", "--jobs", "1",
            "--policies", f"best-fit,{MODULE}:gate", "--format", "csv"]
    monkeypatch.setenv("GATE_DIR", str(gate))
    env = dict(os.environ, PYTHONFAULTHANDLER="1")                   # SIGABRT dumps its threads' stacks
    # the gate policy (one construction per instance) waits from its third on: Ctrl-C there, two instances done
    # Ctrl-C's default action in the child, as in a terminal: a child inherits an ignored SIGINT (a shell's
    # background job, some CI runners), and Python then installs no KeyboardInterrupt (this test waited 60 s and
    # failed under `trap "" INT`)
    proc = subprocess.Popen([sys.executable, "-m", "experiments.gap", *argv, "--output", str(tmp_path / "out")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not (gate / "waiting").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)                                   # Ctrl-C
    _, err = _communicate_or_dump(proc)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].endswith("interrupted; the finished runs are written "
                                                 "(rerun with --resume to continue)")
    partial = pd.read_csv(tmp_path / "out" / "gap.csv")
    names = sorted(p.stem for p in folder.glob("*.json"))
    assert list(partial.columns) == gap.CSV_COLUMNS and partial["instance"].unique().tolist() == names[:2]

    (gate / "go").touch()
    constructions = len((gate / "count").read_text().split())
    assert gap.main([*argv, "--output", str(tmp_path / "out"), "--resume"]) == 0
    assert len((gate / "count").read_text().split()) == constructions + 2     # only the last two instances ran
    assert gap.main([*argv, "--output", str(tmp_path / "whole")]) == 0
    resumed, whole = (pd.read_csv(tmp_path / run / "gap.csv") for run in ("out", "whole"))
    assert len(whole) == 4 * 4
    pd.testing.assert_frame_equal(untimed(resumed), untimed(whole))


def _communicate_or_dump(proc: subprocess.Popen, timeout: float = 60.0) -> tuple[str, str]:
    """``proc.communicate`` within ``timeout`` seconds; past it, the process's signal masks and, through
    faulthandler (SIGABRT), every thread's stack go into the failure message, and nothing is left running."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{proc.pid}/status").read_text().splitlines()
        masks = [line for line in status if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate()
        raise AssertionError(f"no exit {timeout:g} s after Ctrl-C; {masks}; stdout {out[-2000:]}; "
                             f"stderr {err[-6000:]}") from None


def _refuse(*args):
    raise AssertionError("a finished run ran again")


@pytest.mark.trace
def test_openb_resume_reuses_the_finished_cells(openb_dir, tmp_path, monkeypatch):
    """One cell (best-fit, seed 42) runs; ``--resume`` reads it back and runs nothing; another ratio is another
    input, so its cell runs again. (Several cells per sweep: test_frontier_resume_reuses_the_finished_seeds.)"""
    argv = ["--policies", "best-fit", "--seeds", "42", "--data-dir", str(openb_dir), "--output", str(tmp_path)]
    assert openb.main(argv) == 0
    summary, curves = pd.read_csv(tmp_path / "summary.csv"), pd.read_csv(tmp_path / "curves.csv")
    monkeypatch.setattr(openb, "run_cell", _refuse)
    assert openb.main([*argv, "--resume"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "summary.csv"), summary)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "curves.csv"), curves)
    with pytest.raises(AssertionError, match="ran again"):          # another input (the ratio): runs again
        openb.main([*argv, "--resume", "--ratio", "1.2"])


@pytest.mark.trace
def test_frontier_resume_reuses_the_finished_seeds(openb_dir, tmp_path, monkeypatch):
    argv = ["--seeds", "42,43", "--points", "80,90", "--nodes", "12", "--time-limit", "10", "--policies",
            "fgd,best-fit", "--data-dir", str(openb_dir), "--output", str(tmp_path)]
    assert frontier.main(argv) == 0
    first = pd.read_csv(tmp_path / "frontier.csv")
    monkeypatch.setattr(frontier, "replay_cell", _refuse)
    monkeypatch.setattr(frontier, "optimum_chain", _refuse)
    assert frontier.main([*argv, "--resume"]) == 0
    pd.testing.assert_frame_equal(untimed(pd.read_csv(tmp_path / "frontier.csv")), untimed(first))
    assert set(first["seed"]) == {42, 43} and len(first) == 2 * 2 * 3
