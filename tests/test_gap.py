"""The optimality-gap command on a 3-instance suite with known optima."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pandas as pd
import pytest

from experiments import gap
from fgdopt.instance import Instance
from fgdopt.model import Cluster, TaskSet
from fgdopt.suites import KNOWN_OPTIMA, adversarial_instances

METHODS = "milp-highs,cpsat,lp,unified-device,config-lp,unified-device-milp,per-gpu-dimension-milp"


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory):
    """Three adversarial instances with known optima and ``no-tasks``, an instance of no tasks on one node."""
    folder = tmp_path_factory.mktemp("suite")
    chosen = [i for i in adversarial_instances() if i.name in ("adv-pack-trap", "adv-reject-500", "adv-gpu-spec")]
    assert len(chosen) == 3
    for inst in chosen:
        inst.save(folder / f"{inst.name}.json")
    Instance("no-tasks", Cluster([8000], [8192], [1], ["A"]), TaskSet([], [], [], [])).save(folder / "no-tasks.json")
    return folder


def run_gap(suite_dir, out, jobs: int) -> tuple[pd.DataFrame, str, Path]:
    """The gap study on ``suite_dir`` in ``jobs`` processes: its CSV, what it printed, its folder ``out``."""
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = gap.main(["--instances", str(suite_dir), "--methods", METHODS, "--time-limit", "20", "--output",
                         str(out), "--jobs", str(jobs)])
    assert code == 0
    return pd.read_csv(out / "gap.csv"), said.getvalue(), out


@pytest.fixture(scope="module")
def one_process(suite_dir, tmp_path_factory):
    """:func:`run_gap` in this process (``--jobs 1``), once for the tests that read it."""
    return run_gap(suite_dir, tmp_path_factory.mktemp("gap") / "a", 1)


@pytest.fixture(scope="module")
def two_processes(suite_dir, tmp_path_factory):
    """:func:`run_gap` with the instances in two worker processes (``--jobs 2``), once for the tests that read it."""
    return run_gap(suite_dir, tmp_path_factory.mktemp("gap") / "b", 2)


def test_gap_csv_is_truthful(one_process):
    df, stdout, folder = one_process
    assert list(df.columns) == gap.CSV_COLUMNS
    assert set(df.kind) == {"policy", "exact", "relaxation", "flawed"}
    for name, g in df[df.instance != "no-tasks"].groupby("instance"):   # no-tasks: test_empty_instances_...
        exact = g[g.kind == "exact"]
        assert (exact.status == "optimal").all()
        optimum = KNOWN_OPTIMA[name]
        assert (exact.allocated_milli == optimum).all()
        assert (exact.bound_milli == optimum).all()
        # every heuristic and flawed placement <= optimum <= every relaxation bound
        placed = g[g.kind.isin(["policy", "flawed"])]
        assert (placed.allocated_milli <= optimum).all()
        assert (g[g.kind == "relaxation"].bound_milli >= optimum).all()
        # a policy's gap is measured against the best proven bound, here the optimum
        pol = g[g.kind == "policy"]
        assert pol.gap_pct.to_numpy() == pytest.approx(100 * (optimum - pol.allocated_milli.to_numpy()) / optimum)
        assert (pol.status == "heuristic").all()
    # FGD loses on adv-reject-500 (every greedy policy does): its gap is printed
    fgd = df[(df.instance == "adv-reject-500") & (df.method == "fgd")].iloc[0]
    assert fgd.allocated_milli < KNOWN_OPTIMA["adv-reject-500"] and fgd.gap_pct > 0
    assert "## Summary per policy" in stdout and "| adv-reject-500" in stdout
    assert (folder / "gap.md").read_text().count("## ") == 4


def test_gap_is_reproducible(one_process, two_processes):
    first, second = one_process[0], two_processes[0]  # the second: instances in worker processes
    cols = [c for c in gap.CSV_COLUMNS if c != "wall_s"]
    pd.testing.assert_frame_equal(first[cols], second[cols])


def test_gap_rejects_unknown_method(suite_dir, capsys):
    with pytest.raises(SystemExit):
        gap.main(["--instances", str(suite_dir), "--methods", "magic"])
    assert "argument --methods: unknown method 'magic' (valid: milp-cbc, milp-highs, " in capsys.readouterr().err


def test_portfolio_stops_at_the_first_proof():
    # Two 2-GPU nodes of 10 cores, three 1-GPU tasks of 6 cores: optimum 2 GPUs (one task per node). The
    # aggregated LP sees 10/6 tasks per node (3 GPUs); the configuration MILP proves 2, so CBC does not run.
    cluster = Cluster([10000, 10000], [8192, 8192], [2, 2], ["A", "A"])
    instance = Instance("cpu-bound", cluster, TaskSet([6000] * 3, [1024] * 3, [1] * 3, [1000] * 3))
    config = gap.Config(("config-milp", "milp-cbc", "lp", "config-lp"), ("fgd", "random"), 10.0, 0, None)
    rows = pd.DataFrame(gap.instance_rows(instance, config)).set_index("method")
    assert "milp-cbc" not in rows.index
    assert rows.loc["config-milp", ["status", "allocated_milli", "bound_milli"]].tolist() == ["optimal", 2000, 2000]
    assert rows.loc["lp", "bound_milli"] == 3000 and rows.loc["lp", "gap_pct"] == pytest.approx(100 / 3)
    assert rows.loc["config-lp", "bound_milli"] == 2000
    assert (rows.best_bound_milli == 2000).all() and (rows.bound_by == "config-milp").all()
    assert (rows.loc[["fgd", "random"], "allocated_milli"] == 2000).all()


def test_empty_instances_have_optimum_zero(two_processes):
    # the suite folder holds an instance of no tasks beside real ones, run in worker processes; one of no nodes is
    # refused at the door (its optimum would be trivially 0, not a proof of anything)
    df, stdout, _ = two_processes
    assert df.instance.unique().tolist() == ["adv-gpu-spec", "adv-pack-trap", "adv-reject-500", "no-tasks"]
    empty = df[df.instance == "no-tasks"]
    assert (empty.allocated_milli.fillna(0) == 0).all() and (empty.bound_milli.fillna(0) == 0).all()
    assert (empty.gap_pct == 0).all()
    assert (empty[empty.kind == "exact"].status == "optimal").all()
    assert empty[empty.instance == "no-tasks"].frag_rate.isna().all()  # no workload to measure it against
    assert df[(df.instance == "adv-pack-trap") & (df.kind == "exact")].allocated_milli.tolist() == \
        [KNOWN_OPTIMA["adv-pack-trap"]]
    assert "| no-tasks " in stdout and "0.00 (optimal)" in stdout


def test_gang_instance_runs_every_method_that_takes_gangs():
    # Two 4-GPU nodes; a gang of 2 parts x 4 GPUs (8000 milli-GPU, the whole cluster) and a half GPU after it: the
    # optimum is the gang. The exact model takes gangs; the relaxations and flawed models, which do not, are
    # `skipped` rows with no gap (an instance with a gang stopped the study with a traceback before)
    cluster = Cluster([96000, 96000], [393216, 393216], [4, 4], ["G2", "G2"])
    tasks = TaskSet([4000, 4000], [8192, 8192], [4, 1], [1000, 500], workers=[2, 1])
    config = gap.Config(("config-milp", "milp-cbc", "lp", "unified-device-milp"), ("fgd", "best-fit"), 10.0, 0,
                        None)
    rows = pd.DataFrame(gap.instance_rows(Instance("gang", cluster, tasks), config)).set_index("method")
    assert rows.loc["milp-cbc", ["status", "allocated_milli", "bound_milli"]].tolist() == ["optimal", 8000, 8000]
    assert (rows.loc[["fgd", "best-fit"], "allocated_milli"] == 8000).all()
    skipped = rows.loc[["lp", "config-milp", "unified-device-milp"]]
    assert (skipped.status == "skipped").all() and skipped.allocated_milli.isna().all()
    assert skipped.gap_pct.isna().all()
    assert (rows.best_bound_milli == 8000).all() and (rows.bound_by == "milp-cbc").all()
