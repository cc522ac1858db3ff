"""Your own policy: a policy written in a file outside the package runs by its ``module:attribute`` spec through
gap (inline, local processes and Dask), openb and frontier, with the rows of the same policy registered in-process;
bad specs and failing policies stop the study with one line naming them; ``fgdopt.plugins`` resolves specs."""

from __future__ import annotations

import os
import sys
import textwrap

import pandas as pd
import pytest

from experiments import frontier, gap, openb
from fgdopt.plugins import SpecError, check_call, is_spec, resolve_spec
from fgdopt.policies import make_policy, register_policy, unregister_policy
from fgdopt.suites import adversarial_instances
from fgdopt.traces import NODE_FILE, pod_file

MODULE = "fgdopt_test_user_policies"
SPEC = f"{MODULE}:MostLoaded"
TIMES = ["wall_s", "cpu_s"]
SOURCE = textwrap.dedent('''
    """Policies of a user, outside the fgdopt package."""
    import os
    import time
    from pathlib import Path

    from fgdopt.policies.base import RankedPolicy


    class MostLoaded(RankedPolicy):
        """The feasible node with the least free GPU capacity; ties to the lowest node rank."""

        name = "most-loaded"

        def score(self, state, task, nodes):
            return -state.gpu_left[nodes].sum(axis=1)


    def wrong_signature(state, task):
        return None


    class Infeasible:
        """Node 0, GPU 0 for every task: sooner or later the task does not fit there."""

        def __init__(self, **options):
            pass

        def __call__(self, state, task):
            return 0, (0,) * task.num_gpu


    class Raises:
        def __init__(self, **options):
            pass

        def __call__(self, state, task):
            raise RuntimeError("boom")


    def gate(**options):
        """MostLoaded, but from the third construction on it waits for the file $GATE_DIR/go (marking
        $GATE_DIR/waiting): a run to stop midway. Each construction appends a line to $GATE_DIR/count."""
        folder = Path(os.environ["GATE_DIR"])
        with (folder / "count").open("a") as f:
            f.write("x\\n")
        if len((folder / "count").read_text().split()) >= 3:
            while not (folder / "go").exists():
                (folder / "waiting").touch()
                time.sleep(0.05)
        return MostLoaded(**options)
''')


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory):
    """The user's folder on ``sys.path`` and ``PYTHONPATH`` (so that subprocesses and workers import it too)."""
    folder = tmp_path_factory.mktemp("user")
    (folder / f"{MODULE}.py").write_text(SOURCE)
    sys.path.insert(0, str(folder))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), old) if p)
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop(MODULE, None)
    if old is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = old


@pytest.fixture
def registered(user_dir):
    """The same policy registered in-process as ``most-loaded``."""
    register_policy("most-loaded", resolve_spec(SPEC))
    yield "most-loaded"
    unregister_policy("most-loaded")


def untimed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in TIMES if c in frame.columns])


def renamed(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    return untimed(frame).replace({column: {SPEC: "most-loaded"}})


CONFIG = dict(methods=("milp-cbc", "lp"), time_limit=10.0, seed=0, threads=None)


def test_gap_runs_a_spec_inline_and_in_processes_with_the_registered_rows(registered):
    instances = adversarial_instances()
    local = gap.run(instances, gap.Config(policies=("fgd", registered), **CONFIG), jobs=1)
    by_spec = gap.run(instances, gap.Config(policies=("fgd", SPEC), **CONFIG), jobs=1)
    in_pool = gap.run(instances, gap.Config(policies=("fgd", SPEC), **CONFIG), jobs=2)
    assert set(by_spec["method"]) >= {"fgd", SPEC}
    pd.testing.assert_frame_equal(renamed(by_spec, "method"), untimed(local))
    pd.testing.assert_frame_equal(untimed(in_pool), untimed(by_spec))


def test_a_built_in_class_by_spec_gives_the_built_in_rows():
    instances = adversarial_instances()
    builtin = gap.run(instances, gap.Config(policies=("best-fit", "random"), **CONFIG), jobs=1)
    specs = ("fgdopt.policies.best_fit:BestFit", "fgdopt.policies.random_choice:RandomFit")
    by_spec = gap.run(instances, gap.Config(policies=specs, **CONFIG), jobs=1)
    names = dict(zip(specs, ("best-fit", "random"), strict=True))
    pd.testing.assert_frame_equal(untimed(by_spec).replace({"method": names}), untimed(builtin))


def test_gap_runs_a_spec_on_dask_with_the_registered_rows(registered):
    distributed = pytest.importorskip("distributed")
    instances = adversarial_instances()[:4]
    local = gap.run(instances, gap.Config(policies=(registered,), **CONFIG), jobs=1)
    # a worker started now inherits PYTHONPATH (the user's folder) and imports the spec itself; one worker process
    # is enough for that (tests/test_dask.py checks that two workers give the local rows, in order)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        remote = gap.run(instances, gap.Config(policies=(SPEC,), **CONFIG), dask=cl.scheduler_address)
    pd.testing.assert_frame_equal(renamed(remote, "method"), untimed(local))


@pytest.mark.trace
def test_openb_runs_a_spec_with_the_registered_rows(registered, openb_dir, tmp_path, capsys):
    # the openb files cut to their first 60 nodes and 600 pods: the same study, a twentieth of the replay
    small = tmp_path / "openb"
    small.mkdir()
    for name, rows in ((NODE_FILE, 60), (pod_file("default"), 600)):
        pd.read_csv(openb_dir / name, dtype=str, keep_default_na=False).head(rows).to_csv(small / name, index=False)
    argv = ["--seeds", "42", "--data-dir", str(small)]
    assert openb.main([*argv, "--policies", SPEC, "--output", str(tmp_path / "spec")]) == 0
    assert "| default | most-loaded | 1 |" in capsys.readouterr().out      # the spec's rows by its name attribute
    assert openb.main([*argv, "--policies", registered, "--output", str(tmp_path / "reg")]) == 0
    for name in ("summary.csv", "curves.csv"):
        spec, reg = (pd.read_csv(tmp_path / run / name) for run in ("spec", "reg"))
        assert set(spec["policy"]) == {"most-loaded"}
        pd.testing.assert_frame_equal(untimed(spec), untimed(reg))


@pytest.mark.trace
def test_frontier_runs_a_spec_with_the_registered_rows(registered, openb_dir):
    args = (["default"], [42], [80, 90])
    kwargs = {"time_limit": 10, "data_dir": str(openb_dir), "threads": None, "nodes": 12}
    spec, capacity = frontier.frontier(*args, policies=("fgd", SPEC), **kwargs)
    reg, _ = frontier.frontier(*args, policies=("fgd", registered), **kwargs)
    assert capacity == {"default": 24000}
    assert spec["method"].tolist()[:3] == ["fgd", SPEC, "config-types"]
    pd.testing.assert_frame_equal(renamed(spec, "method"), untimed(reg))


def last_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1]


@pytest.mark.parametrize(("spec", "message"), [
    ("mymod.MyPolicy", "unknown policy 'mymod.MyPolicy' (valid: fgd, "),
    ("fgdopt_no_such_module:MyPolicy", "policy 'fgdopt_no_such_module:MyPolicy': module 'fgdopt_no_such_module' "
     "not found"),
    (f"{MODULE}:NoSuchPolicy", f"policy '{MODULE}:NoSuchPolicy': module '{MODULE}' has no attribute 'NoSuchPolicy'"),
    (f"{MODULE}:wrong_signature", f"policy '{MODULE}:wrong_signature': must accept the keyword arguments seed, "
     "workload, ranks, gpu_choice, topology"),
    (f"{MODULE}:", f"policy '{MODULE}:': expected 'module:attribute'"),
])
def test_a_bad_spec_is_one_line_naming_it(user_dir, tmp_path, capsys, spec, message):
    with pytest.raises(SystemExit) as stop:
        gap.main(["--instances", "small", "--policies", f"fgd,{spec}", "--output", str(tmp_path)])
    assert stop.value.code == 2
    line = last_error_line(capsys)
    assert line.startswith("python -m experiments.gap: error: argument --policies: ")
    assert message in line
    assert not (tmp_path / "gap.csv").exists()                    # refused before any work


@pytest.mark.parametrize(("attribute", "message"), [
    ("Infeasible", "policy '{spec}' chose (0, (0,)) for task "),
    ("Raises", "policy '{spec}' raised RuntimeError on task 0 ("),
])
def test_a_failing_policy_stops_the_study_in_one_line_and_keeps_what_finished(user_dir, tmp_path, capsys,
                                                                               attribute, message):
    spec = f"{MODULE}:{attribute}"
    folder = tmp_path / "instances"
    folder.mkdir()
    for inst in adversarial_instances()[:3]:
        inst.save(folder / f"{inst.name}.json")
    argv = ["--instances", str(folder), "--methods", "lp", "--jobs", "1", "--output", str(tmp_path / "out")]
    assert gap.main([*argv, "--policies", "fgd"]) == 0
    first = pd.read_csv(tmp_path / "out" / "gap.csv")
    capsys.readouterr()
    assert gap.main([*argv, "--resume", "--policies", "fgd"]) == 0     # all three reused
    code = gap.main([*argv, "--policies", f"fgd,{spec}"])
    line = last_error_line(capsys)
    assert code == 2 and line.startswith("python -m experiments.gap: instance ")
    assert message.format(spec=spec) in line and "\n" not in line
    if attribute == "Infeasible":
        assert "where it does not fit: task " in line
    kept = pd.read_csv(tmp_path / "out" / "gap.csv")          # the earlier complete CSV, not replaced by a partial one
    pd.testing.assert_frame_equal(kept, first)
    # without --output nothing is kept, and the line is the same
    assert gap.main(["--instances", str(folder), "--methods", "lp", "--jobs", "1", "--policies", spec]) == 2
    assert message.format(spec=spec) in last_error_line(capsys)


def test_resolve_spec_and_check_call(user_dir, tmp_path):
    assert is_spec(SPEC) and not is_spec("fgd")
    assert resolve_spec("fgdopt.policies:make_policy") is make_policy
    from fgdopt.policies.base import RankedPolicy

    assert resolve_spec("fgdopt.policies.base:RankedPolicy.node_ranks") is RankedPolicy.node_ranks
    path = tmp_path / "mine.py"
    path.write_text("def discipline(*, seed):\n    return seed\n")
    fn = resolve_spec(f"{path}:discipline", kind="queue discipline")
    assert check_call(fn, "x", ["seed"])(seed=3) == 3
    with pytest.raises(SpecError, match=r"queue discipline 'x': must accept the keyword arguments ranks"):
        check_call(fn, "x", ["ranks"], kind="queue discipline")
    with pytest.raises(SpecError, match=r"file .*absent.py not found"):
        resolve_spec(f"{tmp_path / 'absent.py'}:x")
    with pytest.raises(SpecError, match="expected 'module:attribute'"):
        resolve_spec(":x")
    assert make_policy(SPEC, seed=1).name == "most-loaded"
    by_path = make_policy(f"{user_dir / (MODULE + '.py')}:MostLoaded", seed=1)     # a file path as the module
    assert by_path.name == "most-loaded" and type(by_path).__module__.startswith("fgdopt_user_")
    with pytest.raises(ValueError, match="reserved"):
        register_policy("fgd", resolve_spec(SPEC))
