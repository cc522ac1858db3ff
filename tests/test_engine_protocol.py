"""The engine's contracts: every hook it calls on a mechanism is declared (:class:`Mechanism`, defaults in
:class:`MechanismBase`), the engine as a steppable object, and :class:`TimelineResult` as a validated record."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import math
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import fgdopt
from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.engine import Engine, TimelineResult
from fgdopt.timeline.preemption import HOOKS, Mechanism, MechanismBase, as_mechanism

ENGINE_FILES = ("timeline/engine.py", "timeline/placement.py")
MECHANISM_NAMES_IN_CODE = {"mech", "mechanism"}


def _mechanism_reads(path: Path) -> tuple[set[str], list[str]]:
    """The attributes read on a mechanism in ``path`` (``mech.x``, ``mechanism.x``, ``self.mech.x``), and every
    ``getattr`` / ``hasattr`` call on one (as ``file:line``)."""
    tree = ast.parse(path.read_text())

    def is_mechanism(node: ast.AST) -> bool:
        return ((isinstance(node, ast.Name) and node.id in MECHANISM_NAMES_IN_CODE)
                or (isinstance(node, ast.Attribute) and node.attr in MECHANISM_NAMES_IN_CODE
                    and isinstance(node.value, ast.Name) and node.value.id == "self"))

    reads, dynamic = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_mechanism(node.value):
            reads.add(node.attr)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and node.args and is_mechanism(node.args[0])):
            dynamic.append(f"{path.name}:{node.lineno}")
    return reads, dynamic


def test_the_engine_reads_only_declared_hooks_and_none_by_name():
    declared = set(Mechanism.__annotations__) | {n for n, v in vars(Mechanism).items()
                                                 if inspect.isfunction(v) and not n.startswith("_")}
    root = Path(fgdopt.__file__).parent
    reads = set()
    for name in ENGINE_FILES:
        found, dynamic = _mechanism_reads(root / name)
        assert dynamic == [], f"getattr/hasattr on a mechanism at {dynamic}"
        reads |= found
    assert reads, "the scan found no mechanism reads: it looks at the wrong names"
    assert reads <= declared, f"the engine reads undeclared hooks {sorted(reads - declared)}"
    assert set(HOOKS) == declared - {"name", "checkpointing", "plan"}
    assert all(hasattr(MechanismBase, hook) for hook in HOOKS)     # every optional hook has its default


def test_the_scan_sees_a_getattr_on_a_mechanism(tmp_path):
    # the scan itself can fail: a file reading a hook by name is caught, and its reads are seen
    bad = tmp_path / "bad.py"
    bad.write_text("def f(mech, self):\n    x = getattr(mech, 'span', False)\n    return self.mech.owns_starts\n")
    reads, dynamic = _mechanism_reads(bad)
    assert dynamic == ["bad.py:2"] and reads == {"owns_starts"}


def _package_classes():
    for info in pkgutil.walk_packages(fgdopt.__path__, "fgdopt."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name:
                yield cls


def test_every_mechanism_of_the_package_subclasses_the_base():
    mechanisms = [cls for cls in _package_classes()
                  if inspect.isfunction(vars(cls).get("plan"))
                  and "checkpointing" in vars(cls).get("__annotations__", {})
                  and cls is not Mechanism]
    assert len(mechanisms) >= 8                                    # the 6 of preemption, MIG's, the CPU-aware one
    assert [c.__name__ for c in mechanisms if not issubclass(c, MechanismBase)] == []


def test_a_plugin_with_the_three_required_members_gets_the_defaults():
    class Bare:
        name, checkpointing = "bare", None

        def plan(self, view):
            return None

    done = as_mechanism(Bare())
    assert isinstance(done, MechanismBase) and done.name == "bare"
    assert (done.owns_starts, done.every_instant, done.span, done.elastic, done.migrate_s) == (False,) * 3 + (None, 0)
    assert done.wake_s(None) == math.inf
    with pytest.raises(TypeError, match=r"^mechanism object has no name, checkpointing, plan "):
        as_mechanism(object())


def _two_jobs():
    # one GPU; job 0 (10 s) and job 1 (5 s) both at 0 under FIFO: job 0 runs 0-10, job 1 10-15
    c = Cluster([8000], [1024], [1], ["T4"])
    return c, JobSet(TaskSet([1000] * 2, [0] * 2, [1] * 2, [1000] * 2), [0.0, 0.0], [10.0, 5.0])


def test_the_engine_steps_one_instant_at_a_time_as_simulate_runs_them():
    c, jobs = _two_jobs()
    engine = Engine(c, jobs, "best-fit", "fifo")
    assert engine.next_time() == 0.0
    times = []
    while engine.step():
        times.append(engine.now)
    assert times == [0.0, 10.0, 15.0] and engine.next_time() == math.inf and not engine.step()
    stepped, whole = engine.result(), simulate(c, jobs, "best-fit", "fifo")
    for f in ("status", "start_s", "finish_s", "node", "run_s", "work_s"):
        assert np.array_equal(getattr(stepped, f), getattr(whole, f), equal_nan=True), f
    assert stepped.series.equals(whole.series) and (stepped.events, stepped.instants) == (4, 3)
    # run(until) stops after the last instant at or before it, and a result so far does not change afterwards
    engine = Engine(c, jobs, "best-fit", "fifo")
    early = engine.run(12.0)
    assert early.finish_s.tolist()[0] == 10.0 and math.isnan(early.finish_s[1]) and early.instants == 2
    assert engine.run().finish_s.tolist() == [10.0, 15.0] and math.isnan(early.finish_s[1])


def _fields(result: TimelineResult) -> dict:
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}


@pytest.mark.parametrize(("field", "value", "message"), [
    ("start_s", np.zeros(3), r"^TimelineResult\.start_s: expected an array of 2 entries of kind 'f', got shape \(3,\)"),
    ("status", np.zeros(2), r"^TimelineResult\.status: expected an array of 2 entries of kind 'i', got shape \(2,\), "
                            r"dtype float64$"),
    ("thrashed", None, r"^TimelineResult\.thrashed: expected an array of 2 entries of kind 'b', got NoneType$"),
    ("policy", 3, r"^TimelineResult\.policy: expected str, got int$"),
    ("events", -1, r"^TimelineResult\.events: a negative count$"),
])
def test_a_bad_field_of_a_result_is_named_in_one_line(field, value, message):
    c, jobs = _two_jobs()
    fields = _fields(simulate(c, jobs, "best-fit", "fifo"))
    TimelineResult(**fields)                                        # as built: valid
    with pytest.raises(ValueError, match=message):
        TimelineResult(**{**fields, field: value})
    with pytest.raises(TypeError):                                  # named fields only
        TimelineResult(*fields.values())


def test_a_result_with_other_series_columns_is_refused():
    c, jobs = _two_jobs()
    fields = _fields(simulate(c, jobs, "best-fit", "fifo"))
    with pytest.raises(ValueError, match=r"^TimelineResult\.series: expected columns time_s, "):
        TimelineResult(**{**fields, "series": fields["series"].drop(columns="frag_milli")})
