"""``--dask ADDRESS``: the three studies on a local Dask cluster (two worker processes of one thread) give exactly
the rows of the local run, wall times aside; without ``distributed`` the option fails in one line."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO

import pandas as pd
import pytest
from conftest import require_module

from experiments import frontier, gap, openb
from experiments.executors import DASK_MISSING, executor
from fgdopt.simulate import replay
from fgdopt.suites import adversarial_instances
from fgdopt.traces import load_openb

TIMES = ["wall_s", "cpu_s"]
GAP_METHODS = ("milp-cbc", "config-milp", "milp-highs", "lp", "config-lp")


@pytest.fixture(scope="module")
def address():
    distributed = require_module("distributed")      # missing: skip, or fail under FGDOPT_REQUIRE_DATA=1 (CI)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def untimed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in TIMES if c in frame.columns])


def test_gap_on_dask_equals_the_local_run(address):
    instances = adversarial_instances()
    config = gap.Config(GAP_METHODS, ("fgd", "best-fit", "random", "fgd-exact"), 10.0, 0, None)
    local = gap.run(instances, config, jobs=1)
    remote = gap.run(instances, config, dask=address)
    assert local["instance"].unique().tolist() == [i.name for i in instances]
    assert (local.loc[local["kind"] == "exact", "status"] == "optimal").all()
    pd.testing.assert_frame_equal(untimed(remote), untimed(local))


def run_module(module: str, argv: list[str]) -> str:
    """Stdout of ``python -m module *argv``: the study's module is ``__main__`` there, and the workers must still
    find its functions (``experiments.openb.run_cell`` calls a cached loader that does not pickle by value)."""
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, check=True).stdout


def test_the_gap_command_runs_on_dask(address, tmp_path, capsys):
    for inst in adversarial_instances()[:3]:
        inst.save(tmp_path / f"{inst.name}.json")
    argv = ["--instances", str(tmp_path), "--methods", "milp-cbc,lp", "--format", "csv"]
    assert gap.main([*argv, "--jobs", "1"]) == 0
    local = pd.read_csv(StringIO(capsys.readouterr().out))
    remote = pd.read_csv(StringIO(run_module("experiments.gap", [*argv, "--dask", address])))
    assert len(local) == 3 * (len(gap.POLICY_NAMES) + 2)
    pd.testing.assert_frame_equal(untimed(remote), untimed(local))


@pytest.mark.trace
@pytest.mark.extended
def test_the_openb_command_on_dask_equals_the_local_run(address, openb_dir, tmp_path, capsys):
    argv = ["--policies", "random,best-fit", "--seeds", "42", "--data-dir", str(openb_dir)]
    assert openb.main([*argv, "--output", str(tmp_path / "local")]) == 0
    table = run_module("experiments.openb", [*argv, "--output", str(tmp_path / "dask"), "--dask", address])
    assert "| default | best-fit | 1 |" in table and "| default | best-fit | 1 |" in capsys.readouterr().out
    for name in ("summary.csv", "curves.csv"):
        local, remote = (pd.read_csv(tmp_path / run / name) for run in ("local", "dask"))
        pd.testing.assert_frame_equal(untimed(remote), untimed(local))
    summary = pd.read_csv(tmp_path / "dask" / "summary.csv")
    assert list(zip(summary["policy"], summary["seed"], strict=True)) == [("random", 42), ("best-fit", 42)]
    # the figure itself, independently of the command: the library's replay of (random, seed 42)
    cluster, tasks = load_openb("default", openb_dir)
    last = replay(cluster, tasks, "random", seed=42).at(130)
    assert summary.loc[0, "unallocated_gpus_130"] == pytest.approx(last.unallocated_gpus)
    assert last.unallocated_gpus == pytest.approx((cluster.gpu_capacity_milli - last.alloc_milli) / 1000)


@pytest.mark.trace
def test_frontier_on_dask_equals_the_local_run(address, openb_dir):
    args = (["default"], [42], [80, 90])            # six policy cells and two optima: work for both workers
    kwargs = {"time_limit": 10, "data_dir": str(openb_dir), "threads": None, "nodes": 12}
    local, capacity = frontier.frontier(*args, jobs=1, **kwargs)
    remote, remote_capacity = frontier.frontier(*args, dask=address, **kwargs)
    assert remote_capacity == capacity == {"default": 24000}
    assert (local.loc[local["kind"] == "optimum", "status"] == "optimal").all()
    pd.testing.assert_frame_equal(untimed(remote), untimed(local))


@pytest.mark.parametrize(("required", "outcome"), [("1", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_a_missing_distributed_fails_in_ci_and_skips_elsewhere(monkeypatch, required, outcome):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now raises ImportError
    monkeypatch.setenv("FGDOPT_REQUIRE_DATA", required)
    with pytest.raises(outcome, match="distributed"):
        require_module("distributed")


def test_without_distributed_the_option_fails_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now raises ImportError
    with pytest.raises(SystemExit) as stop:
        gap.main(["--dask", "tcp://127.0.0.1:8786"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(DASK_MISSING)
    with pytest.raises(ImportError, match=r"pip install fgdopt\[dask\]"), executor(dask="tcp://127.0.0.1:8786"):
        pass
