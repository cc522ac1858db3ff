"""The one HiGHS builder (:mod:`formulations.highs`) on hand-worked LPs and MILPs with known optima."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp

from formulations.highs import (
    MIN_TIME_LIMIT_S,
    add_columns,
    build_highs,
    highs_lp,
    highs_threads,
    linear_lp,
    new_highs,
    rows_lp,
    run_until,
    set_start,
    solve,
)
from formulations.linear import LinearModel

INF = np.inf
# max x + y  s.t.  x + 2y <= 4,  3x + y <= 6,  x, y >= 0: the rows meet at (8/5, 6/5), value 14/5; the vertices
# (2, 0) and (0, 2) give 2. Duals: y1 + 3 y2 = 1 and 2 y1 + y2 = 1 (both columns basic) -> y = (2/5, 1/5), and
# 4 y1 + 6 y2 = 14/5 (strong duality). The transposed matrix would give x + 3y <= 4, 2x + y <= 6: (14/5, 2/5), 16/5.
A_LP = [[1.0, 2.0], [3.0, 1.0]]
# max 5x + 4y  s.t.  6x + 4y <= 24,  x + 2y <= 6. LP: both rows tight at (3, 3/2), value 21. Both integer: x = 4
# forces y = 0 (20); x = 3 allows y <= 1 (19); x <= 2 gives at most 10 + 8 = 18: optimum 20 at (4, 0). Only x
# integer: x = 3, y = 3/2 is already the LP optimum: 21.
A_MIP = [[6.0, 4.0], [1.0, 2.0]]


def lp_of(fmt: str, maximize: bool = True):
    costs = [1.0, 1.0] if maximize else [-1.0, -1.0]
    return highs_lp(costs, [0, 0], [INF, INF], [-INF, -INF], [4, 6], sp.csr_matrix(A_LP).asformat(fmt),
                    maximize=maximize)


@pytest.mark.parametrize("fmt", ["csc", "csr"])
def test_hand_lp_optimum_values_and_duals(fmt):
    res = solve(build_highs(lp_of(fmt)), time_limit=10, duals=True)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(2.8, abs=1e-9) and res.bound == res.objective
    assert res.values == pytest.approx([1.6, 1.2], abs=1e-9)
    assert res.row_duals == pytest.approx([0.4, 0.2], abs=1e-9)
    assert solve(build_highs(lp_of(fmt))).row_duals is None                         # only when asked


def test_minimizing_the_negated_lp_gives_the_negated_optimum():
    res = solve(build_highs(lp_of("csc", maximize=False)), duals=True)
    assert res.status == "optimal" and res.objective == pytest.approx(-2.8, abs=1e-9)
    assert res.values == pytest.approx([1.6, 1.2], abs=1e-9)
    assert res.row_duals == pytest.approx([-0.4, -0.2], abs=1e-9)


@pytest.mark.parametrize(("integer", "optimum", "point"), [([True, True], 20.0, [4.0, 0.0]),
                                                           ([True, False], 21.0, [3.0, 1.5]),
                                                           (None, 21.0, [3.0, 1.5])])
def test_hand_mip_optimum_and_its_proven_bound(integer, optimum, point):
    lp = highs_lp([5, 4], [0, 0], [INF, INF], [-INF, -INF], [24, 6], sp.csr_matrix(A_MIP), integer, maximize=True)
    res = solve(build_highs(lp, options={"mip_rel_gap": 0.0}), time_limit=10)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(optimum, abs=1e-9) and res.bound == pytest.approx(optimum, abs=1e-9)
    assert res.values == pytest.approx(point, abs=1e-9)


def test_linear_model_and_arrays_build_the_same_model():
    lm = LinearModel("hand-mip")
    x = lm.add_vars(2, ub=INF, obj=[5.0, 4.0])
    lm.add_row(x, A_MIP[0], hi=24.0)
    lm.add_row(x, A_MIP[1], hi=6.0)
    res = solve(build_highs(linear_lp(lm)))
    assert (res.status, res.objective, res.values.tolist()) == ("optimal", 20.0, [4.0, 0.0])
    relaxed = solve(build_highs(linear_lp(lm.relaxed())))
    assert relaxed.objective == pytest.approx(21.0, abs=1e-9) and relaxed.bound == relaxed.objective


def test_columns_added_to_a_rows_only_model():
    h = build_highs(rows_lp([-INF, -INF], [4.0, 6.0]))
    add_columns(h, [-1.0], sp.csc_matrix([[1.0], [3.0]]))
    add_columns(h, [-1.0], sp.csc_matrix([[2.0], [1.0]]), upper=[1.0])                # y <= 1: x = 5/3, y = 1
    res = solve(h)
    assert res.status == "optimal" and res.objective == pytest.approx(-8 / 3, abs=1e-9)
    assert res.values == pytest.approx([5 / 3, 1.0], abs=1e-9)


def test_run_until_a_deadline_re_solves_and_stops_once_it_has_passed():
    h = build_highs(lp_of("csr"))
    assert run_until(h, time.perf_counter() - 1.0).status == "time_limit"
    res = run_until(h, time.perf_counter() + 10.0, duals=True)
    assert res.status == "optimal" and res.objective == pytest.approx(2.8, abs=1e-9)
    assert res.row_duals == pytest.approx([0.4, 0.2], abs=1e-9)
    h.changeColCost(0, 0.0)                                            # max y: (0, 2), value 2
    res = run_until(h, time.perf_counter() + 10.0)
    assert res.objective == pytest.approx(2.0, abs=1e-9) and res.row_duals is None


def test_infeasible_model_reports_nothing_found():
    lp = highs_lp([1.0], [1.0], [2.0], [-INF], [0.0], sp.csc_matrix([[1.0]]))       # x >= 1 and x <= 0
    res = solve(build_highs(lp))
    assert (res.status, res.objective, res.bound, res.values) == ("infeasible", None, None, None)


def test_mip_start_is_the_incumbent_when_the_search_is_cut_off():
    """With no node, heuristic or presolve allowed HiGHS finds nothing itself; the start (2, 2) (value 18,
    feasible: 20 <= 24, 6 <= 6) is then what it reports."""
    options = {"mip_max_nodes": 0, "mip_heuristic_effort": 0.0, "presolve": "off"}
    lp = highs_lp([5, 4], [0, 0], [INF, INF], [-INF, -INF], [24, 6], sp.csr_matrix(A_MIP), [True, True], maximize=True)
    assert solve(build_highs(lp, options=options)).objective is None
    h = build_highs(lp, options=options)
    set_start(h, [2.0, 2.0])
    res = solve(h)
    assert res.status == "time_limit" and res.objective == 18.0 and res.values.tolist() == [2.0, 2.0]


def hard_knapsack(seed: int = 0, n: int = 60, m: int = 40):
    """A random multi-dimensional 0-1 knapsack (minimize minus the profit) HiGHS does not close in seconds."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(m), 20)
    cols = np.concatenate([rng.choice(n, 20, replace=False) for _ in range(m)])
    a = sp.csc_matrix((rng.random(m * 20) * 3, (rows, cols)), shape=(m, n))
    return highs_lp(-rng.random(n) * 10, np.zeros(n), np.ones(n), np.full(m, -INF), np.full(m, 7.0), a, [True] * n)


def test_time_limited_mip_reports_its_incumbent_and_a_lower_bound():
    lp = hard_knapsack()
    res = solve(build_highs(lp, seed=3), time_limit=0.3)
    assert res.status == "time_limit"
    assert res.objective is not None and res.bound is not None and res.bound < res.objective
    x = res.values
    assert np.allclose(x, np.round(x)) and (x >= -1e-9).all() and (x <= 1 + 1e-9).all()
    a = sp.csc_matrix((lp.a_matrix_.value_, lp.a_matrix_.index_, lp.a_matrix_.start_), shape=(40, 60))
    assert (a @ x <= 7.0 + 1e-6).all() and res.objective == pytest.approx(float(lp.col_cost_ @ x), abs=1e-6)


def test_options_reach_the_solver():
    options = new_highs(threads=1, time_limit=12.5, seed=7, options={"mip_rel_gap": 0.0}).getOptions()
    assert options.output_flag is False
    assert (options.time_limit, options.random_seed, options.mip_rel_gap) == (12.5, 7, 0.0)
    first = highs_threads(None)                                        # the process's first count, kept
    assert options.threads == (0 if first is None else first)         # 0: HiGHS's own choice
    h = build_highs(lp_of("csc"))
    assert h.getOptions().time_limit == INF
    solve(h, time_limit=0.0)
    assert h.getOptions().time_limit == MIN_TIME_LIMIT_S


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"col_upper": [INF]}, "col_upper has 1 entries, the 2 x 2 matrix needs 2"),
    ({"row_lower": [-INF] * 3}, "row_lower has 3 entries, the 2 x 2 matrix needs 2"),
    ({"integrality": [True]}, "integrality has 1 entries"),
    ({"matrix": sp.coo_matrix(A_LP)}, "matrix format 'coo': pass CSC or CSR"),
])
def test_bad_input_names_the_array(kwargs, message):
    args = {"costs": [1.0, 1.0], "col_lower": [0, 0], "col_upper": [INF, INF], "row_lower": [-INF, -INF],
            "row_upper": [4, 6], "matrix": sp.csc_matrix(A_LP)} | kwargs
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        highs_lp(**args)
    with pytest.raises(ValueError, match="costs has 2 entries, the matrix 1 columns"):
        add_columns(build_highs(rows_lp([-INF], [1.0])), [1.0, 1.0], sp.csc_matrix([[1.0]]))


def test_a_matrix_index_out_of_range_is_rejected():
    """Row index 5 of a 2-row matrix: HiGHS refuses the model, which :func:`build_highs` turns into ValueError."""
    bad = sp.csc_matrix((np.array([1.0]), np.array([5], np.int32), np.array([0, 1, 1], np.int32)), shape=(2, 2))
    lp = highs_lp([1.0, 1.0], [0, 0], [1, 1], [-INF, -INF], [1, 1], bad)
    with pytest.raises(ValueError, match="HiGHS rejected the model"):
        build_highs(lp)
