"""Time-limited solver stops: the ``time_limit`` branches of CBC and HiGHS (status, CBC's bound parsed from its log),
the gap table's ``[lo, hi]`` interval that depends on them, and ``solve()``'s ``error`` path.

The instance is ``rand-V100x4-n8-r1.3-s12`` of the ``small`` suite: 8 V100x4 nodes (32-core, so CPU binds before GPU)
and 56 tasks. The configuration MILP proves its optimum, 27,190 milli-GPU, in well under a second (its bound meets
its objective, asserted below); the aggregated MILP cannot: measured on 2 shared cores, CBC and HiGHS both still
stopped on the limit after 40 s (bounds 28,080 and 27,820), so a 1 s limit stops them for sure. It leaves room for
their root node on a loaded machine: at the backends' floor of 0.5 s both already have an incumbent and a bound
below the trivial one (warm-started: CBC 23,150 and 28,110, HiGHS 25,980 and 27,950; HiGHS's whole run, model build
included, took 0.28 CPU s; measured). Solver threads stay at their defaults (HiGHS keeps the thread count of its
first run in a process)."""

from __future__ import annotations

import re
from io import StringIO

import pandas as pd
import pytest

from experiments import gap
from fgdopt.simulate import run_online
from fgdopt.suites import random_instance
from formulations import solve

LIMIT_S = 1.0
"""Seconds given to the aggregated MILP; it needs more than 40 s (module docstring)."""


@pytest.fixture(scope="module")
def hard():
    """The instance, its proven optimum (by the configuration MILP) and FGD's placement (the warm start)."""
    # rand-V100x4-n8-r1.3-s12 of the small suite: random_instance(8, 12) on the V100M16x4-32c node type
    inst = random_instance(8, 12, node_types={"V100M16x4-32c": 1}, name="rand-V100x4-n8-r1.3-s12")
    proof = solve(inst, "config-milp", time_limit=30)
    # a proof, not a copied number: the solver's own optimal status with its bound equal to its objective
    assert (proof.status, proof.bound) == ("optimal", proof.objective)
    assert proof.objective == 27_190       # regression pin of that proof (docs/results.md: 27.19 GPUs, config-milp)
    return inst, proof.objective, run_online(inst.cluster, inst.tasks, "fgd").placement


@pytest.mark.parametrize("method", ["milp-cbc", "milp-highs"])
def test_a_time_limited_stop_reports_time_limit_and_a_true_bound(hard, method):
    inst, optimum, warm = hard
    sol = solve(inst, method, time_limit=LIMIT_S, warm_start=warm)
    assert sol.status == "time_limit" and sol.info["solver_status"] == "time_limit"
    # a true bound: no feasible placement beats it, in particular not the proven optimum ...
    assert sol.bound >= optimum
    # ... and not trivial: the LP-based bound lies below min(demand, capacity) (32 GPUs)
    assert sol.bound < min(inst.cluster.gpu_capacity_milli, int(inst.tasks.gpu_demand.sum()))
    # the incumbent is at least the warm start and at most the optimum; not proven, so strictly below the bound
    assert warm.allocated_milli(inst.tasks) <= sol.objective <= optimum <= sol.bound
    assert sol.objective < sol.bound
    assert sol.gap == pytest.approx((sol.bound - sol.objective) / sol.bound) and sol.gap > 0


def test_a_cpsat_stop_before_any_bound_reports_no_bound():
    """CP-SAT stopped before its search bounds the objective (here right after presolve; a 0.5 s limit on 64 openb
    nodes stopped there too) leaves its response's default bound, 0. It was reported as the proven bound of an
    instance whose optimum is 1600 milli-GPU (:func:`~formulations.exact.run_exact`, and so ``solve``, ``solve_mig``
    and the defragmentation models); a gap study then stops on a bound below a feasible run."""
    from fgdopt.instance import Instance
    from fgdopt.model import Cluster, TaskSet
    from formulations.exact import run_exact

    instance = Instance("hand", Cluster([32000], [8192], [2], ["A"]), TaskSet([1000] * 4, [0] * 4, [1] * 4,
                                                                              [700, 300, 600, 600]))
    sol = run_exact(instance, "cpsat", "cpsat", 10, options={"stop_after_presolve": True})
    assert (sol.status, sol.objective, sol.bound) == ("time_limit", None, None)
    assert solve(instance, "cpsat", time_limit=10).bound == 1600


def test_cbc_without_a_start_still_reports_its_bound(hard):
    # no warm start and the same limit: CBC may stop with or without an incumbent; either way its log's bound is parsed
    inst, optimum, _ = hard
    sol = solve(inst, "milp-cbc", time_limit=LIMIT_S)
    assert sol.status == "time_limit" and sol.bound is not None and sol.bound >= optimum
    assert sol.objective is None or sol.objective <= optimum


def test_the_gap_table_prints_the_interval_of_a_time_limited_run(hard, tmp_path, capsys):
    inst, optimum, _ = hard
    inst.save(tmp_path / f"{inst.name}.json")
    assert gap.main(["--instances", str(tmp_path), "--methods", "milp-cbc", "--policies", "fgd,best-fit",
                     "--time-limit", str(LIMIT_S), "--jobs", "1", "--format", "csv"]) == 0
    df = pd.read_csv(StringIO(capsys.readouterr().out))
    cbc = df[df.method == "milp-cbc"].iloc[0]
    assert cbc.status == "time_limit" and cbc.bound_milli >= optimum
    incumbent, bound = cbc.incumbent_milli, cbc.best_bound_milli
    assert incumbent < bound and bound == cbc.bound_milli and cbc.bound_by == "milp-cbc"
    # the same run as the Markdown tables: each policy's cell is "GPUs ([vs incumbent, vs bound])"
    table = gap.instance_table(df)
    for policy in ("fgd", "best-fit"):
        alloc = int(df[df.method == policy].iloc[0].allocated_milli)
        lo, hi = 100 * (incumbent - alloc) / incumbent, 100 * (bound - alloc) / bound   # semantics: gap vs each side
        assert table.loc[0, policy] == f"{alloc / 1000:.2f} ([{lo:.2f}, {hi:.2f}])"
        assert lo < hi
    assert table.loc[0, "optimum (or incumbent)"] == f"{incumbent / 1000:.2f} (time_limit)"
    summary = gap.summary_table(df).set_index("policy")
    pol = df[df.kind == "policy"].set_index("method")
    assert summary.loc["fgd", "mean gap % (vs bound)"] == round(pol.loc["fgd", "gap_pct"], 3)
    assert summary.loc["fgd", "mean gap % (vs incumbent)"] == round(
        100 * (incumbent - pol.loc["fgd", "allocated_milli"]) / incumbent, 3)
    assert summary.loc["fgd", "proven optimal"] == "0/1"          # an open interval is never counted optimal


def test_the_markdown_output_carries_the_interval(hard, tmp_path, capsys):
    inst, _, _ = hard
    inst.save(tmp_path / f"{inst.name}.json")
    assert gap.main(["--instances", str(tmp_path), "--methods", "milp-highs", "--policies", "fgd",
                     "--time-limit", str(LIMIT_S), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(f"| {inst.name}"))
    lo, hi = map(float, re.search(r"\(\[([0-9.]+), ([0-9.]+)\]\)", row).groups())
    assert 0 <= lo < hi and "(time_limit)" in row


def test_a_solver_failure_is_status_error(monkeypatch):
    """A CBC binary that exits at once without a solution: the backend reports ``error`` (not ``time_limit``: the
    limit was not reached), and ``solve()`` turns a library failure (RuntimeError / OSError) into ``error`` too."""
    import importlib

    import pulp

    front = importlib.import_module("formulations.solve")   # the module (the package re-exports its function)

    inst = random_instance(2, 0)
    monkeypatch.setattr(pulp.PULP_CBC_CMD, "pulp_cbc_path", "/bin/false")   # exits 1 at once, writes nothing
    sol = solve(inst, "milp-cbc", time_limit=30)
    assert (sol.status, sol.objective, sol.bound) == ("error", None, None)

    def broken(*args, **kwargs):
        raise OSError("solver library missing")

    monkeypatch.setattr(front, "run_exact", broken)
    sol = solve(inst, "milp-highs", time_limit=5)
    assert (sol.status, sol.kind, sol.objective) == ("error", "exact", None)
    assert "solver library missing" in sol.info["error"]
