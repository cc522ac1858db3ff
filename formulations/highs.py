"""HiGHS, directly: one builder of ``highspy`` models from arrays, one way to create, run and read them.

Most formulations reach HiGHS through PuLP (:func:`formulations.backends.solve_model`, which reads the status,
bound and MIP start here too). The ones that hold a ``highspy`` model themselves are those re-solved many times
(column-generation masters, pricing MILPs, one node's MILP per leave budget) or too large to translate row by row
(the pooled interval LP of :mod:`formulations.schedule.bound`); they all build, run and read their models here:

* :func:`highs_lp` — a ``highspy.HighsLp`` from arrays: costs, column bounds, row bounds, a ``scipy.sparse``
  matrix (CSC or CSR, passed as is), integrality, sense; :func:`linear_lp` the same for a
  :class:`~formulations.linear.LinearModel` (maximized), :func:`rows_lp` one of rows only;
* :func:`new_highs` — a quiet ``highspy.Highs`` with the common options (threads, time limit, seed, the rest by
  name); :func:`build_highs` one holding a model;
* :func:`solve`, :func:`read_result` — run it and read a :class:`HighsResult` (status by :func:`highs_status`, the
  objective, the MIP's dual bound, the primal values, the row duals when asked); :func:`run_until` re-solves a
  model until a wall-clock deadline;
* :func:`add_columns`, :func:`set_start` — grow a model by columns, hand a MIP start.

Threads. HiGHS sets up its thread pool at its first run in a process and fails (status ``error``) any later run
asking for another count: :func:`highs_threads` keeps the first count asked for and every :func:`new_highs` uses
it. Time. Measured with highspy 1.14: an LP's ``time_limit`` counts the run time of every earlier run of the same
``Highs`` (an LP re-solved after 37 s of solving stopped at once under a 0.1 s limit), a MIP's the current run only
(a MIP re-run under 0.5 s ran 0.5 s again); :func:`run_until` accounts for the first, :func:`solve` does not.
No helper here widens a bound for the solver's tolerances: callers that report an LP optimum as a bound lower it
themselves (:data:`formulations.schedule.bound.SAFETY`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from formulations.linear import LinearModel

MIN_TIME_LIMIT_S = 0.05
"""Least ``time_limit`` (seconds) :func:`solve` gives a run: a limit at or below 0 would stop HiGHS before it reads
the model."""

_highs_threads: list[int | None] = []


def highs_threads(requested: int | None) -> int | None:
    """The thread count every HiGHS run of this process uses: the first one asked for (``None``: HiGHS's own).

    HiGHS sets up its thread pool at its first run in a process and fails (status error) any later run that
    asks for another count, so the first request wins and later requests are ignored.
    """
    if not _highs_threads:
        _highs_threads.append(requested)
    return _highs_threads[0]


def highs_status(highs) -> str:
    """The status of a finished HiGHS run, the one map of formulations: ``optimal``; ``infeasible`` (infeasible, or
    unbounded or infeasible); ``time_limit`` for every stop before the proof (the time, iteration or solution limit,
    an interrupt: what was found is a valid incumbent, the dual bound a valid bound); ``error`` otherwise."""
    import highspy

    ms = highspy.HighsModelStatus
    st = highs.getModelStatus()
    if st == ms.kOptimal:
        return "optimal"
    if st in (ms.kInfeasible, ms.kUnboundedOrInfeasible):
        return "infeasible"
    if st in (ms.kTimeLimit, ms.kIterationLimit, ms.kInterrupt, ms.kSolutionLimit):
        return "time_limit"
    return "error"


@dataclass(frozen=True)
class HighsResult:
    """What one HiGHS run found, in the model's units and sense.

    Attributes
    ----------
    status : ``optimal``, ``infeasible``, ``time_limit`` or ``error`` (:func:`highs_status`).
    objective : the objective of the solution found (None without one).
    bound : the proven bound on the optimum: a MIP's dual bound (also when stopped early; None if infinite), an LP's
        optimum (None unless optimal); None when infeasible or failed.
    values : the column values (n,) of the solution found, or None.
    row_duals : the row duals (m,) when asked for and valid, else None.
    """

    status: str
    objective: float | None
    bound: float | None
    values: np.ndarray | None
    row_duals: np.ndarray | None = None


def highs_lp(costs, col_lower, col_upper, row_lower, row_upper, matrix: sp.spmatrix | sp.sparray,
             integrality=None, maximize: bool = False):
    """A ``highspy.HighsLp``: optimize ``costs @ x`` over ``col_lower <= x <= col_upper`` and
    ``row_lower <= matrix @ x <= row_upper``.

    Parameters
    ----------
    costs, col_lower, col_upper : float (n,), in the model's units; ``-inf`` / ``inf`` for a free side.
    row_lower, row_upper : float (m,).
    matrix : ``scipy.sparse`` (m, n) in CSC (passed column-wise) or CSR (row-wise) format, its index order kept.
    integrality : bool (n,) or None: the integer columns (a model with none is an LP).
    maximize : maximize instead of minimize.

    Returns
    -------
    highspy.HighsLp

    Raises
    ------
    ValueError : an array's length differs from the matrix's columns or rows, or the matrix is neither CSC nor CSR.

    Examples
    --------
    Maximize ``x + y`` subject to ``x + 2y <= 4`` and ``3x + y <= 6``, ``x, y >= 0``: the two rows meet at
    ``(8/5, 6/5)``, value 14/5 = 2.8 (the other vertices give 2 at ``(2, 0)`` and ``(0, 2)``).

    >>> import numpy as np, scipy.sparse as sp
    >>> lp = highs_lp([1, 1], [0, 0], [np.inf, np.inf], [-np.inf, -np.inf], [4, 6],
    ...               sp.csr_matrix([[1.0, 2.0], [3.0, 1.0]]), maximize=True)
    >>> res = solve(build_highs(lp), time_limit=10)
    >>> res.status, round(res.objective, 9), np.round(res.values, 9).tolist()
    ('optimal', 2.8, [1.6, 1.2])
    """
    import highspy

    costs = np.asarray(costs, dtype=np.float64)
    arrays = {"costs": costs, "col_lower": col_lower, "col_upper": col_upper, "row_lower": row_lower,
              "row_upper": row_upper, "integrality": integrality}
    m, n = matrix.shape
    for name, arr in arrays.items():
        want = m if name.startswith("row") else n
        if arr is not None and len(arr) != want:
            raise ValueError(f"{name} has {len(arr)} entries, the {m} x {n} matrix needs {want}")
    if matrix.format not in ("csc", "csr"):
        raise ValueError(f"matrix format {matrix.format!r}: pass CSC or CSR")
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = costs
    lp.col_lower_ = np.asarray(col_lower, dtype=np.float64)
    lp.col_upper_ = np.asarray(col_upper, dtype=np.float64)
    lp.row_lower_ = np.asarray(row_lower, dtype=np.float64)
    lp.row_upper_ = np.asarray(row_upper, dtype=np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise if matrix.format == "csc" else highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = matrix.indptr.astype(np.int32, copy=False)
    lp.a_matrix_.index_ = matrix.indices.astype(np.int32, copy=False)
    lp.a_matrix_.value_ = matrix.data.astype(np.float64, copy=False)
    if integrality is not None and np.any(integrality):
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        lp.integrality_ = [kinds[bool(i)] for i in integrality]
    if maximize:
        lp.sense_ = highspy.ObjSense.kMaximize
    return lp


def linear_lp(model: LinearModel):
    """The ``highspy.HighsLp`` of ``model`` (maximized; its rows, in order, as a CSR matrix).

    Examples
    --------
    >>> lm = LinearModel("two")
    >>> x = lm.add_vars(2, ub=np.inf, integer=False, obj=1.0)
    >>> lm.add_row(x, [1.0, 2.0], hi=4.0); lm.add_row(x, [3.0, 1.0], hi=6.0)
    >>> round(solve(build_highs(linear_lp(lm))).objective, 9)
    2.8
    """
    rows = model.rows
    starts = np.concatenate([[0], np.cumsum([len(idx) for idx, _, _, _ in rows], dtype=np.int64)])
    index = np.concatenate([idx for idx, _, _, _ in rows]) if rows else np.zeros(0, dtype=np.int64)
    value = np.concatenate([c for _, c, _, _ in rows]) if rows else np.zeros(0)
    matrix = sp.csr_matrix((value.astype(np.float64), index.astype(np.int32), starts.astype(np.int32)),
                           shape=(len(rows), model.n_vars))
    return highs_lp(model.obj, model.lb, model.ub, [lo for _, _, lo, _ in rows], [hi for _, _, _, hi in rows],
                    matrix, model.integer, maximize=True)


def rows_lp(row_lower, row_upper):
    """A ``highspy.HighsLp`` of rows ``row_lower <= A x <= row_upper`` (m,) and no columns yet (minimized): the
    master of a column generation, which :func:`add_columns` then grows."""
    m = len(row_lower)
    return highs_lp(np.zeros(0), np.zeros(0), np.zeros(0), row_lower, row_upper, sp.csc_matrix((m, 0)))


def new_highs(threads: int | None = 1, time_limit: float | None = None, seed: int | None = None,
              options: dict | None = None):
    """A quiet, empty ``highspy.Highs``.

    Parameters
    ----------
    threads : threads asked for (None: HiGHS's own choice); the process keeps the first count asked for
        (:func:`highs_threads`).
    time_limit : seconds (None: HiGHS's default, none).
    seed : HiGHS's ``random_seed`` (None: its default, 0).
    options : further options by their HiGHS names (``setOptionValue``), set last.
    """
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if (count := highs_threads(threads)) is not None:
        h.setOptionValue("threads", int(count))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if seed is not None:
        h.setOptionValue("random_seed", int(seed))
    for key, value in (options or {}).items():
        h.setOptionValue(key, value)
    return h


def build_highs(lp, threads: int | None = 1, time_limit: float | None = None, seed: int | None = None,
                options: dict | None = None):
    """A :func:`new_highs` holding ``lp`` (a ``HighsLp``, e.g. from :func:`highs_lp`).

    Raises
    ------
    ValueError : HiGHS rejected the model (e.g. a column index out of range in the matrix).
    """
    import highspy

    h = new_highs(threads, time_limit, seed, options)
    if h.passModel(lp) == highspy.HighsStatus.kError:
        raise ValueError("HiGHS rejected the model (passModel failed)")
    return h


def read_result(highs, duals: bool = False) -> HighsResult:
    """The :class:`HighsResult` of the last run of ``highs``; ``duals``: read the row duals too.

    A model is a MIP when HiGHS ran its MIP solver on it (``mip_node_count >= 0``); its bound is then HiGHS's
    ``mip_dual_bound``.
    """
    status = highs_status(highs)
    if status not in ("optimal", "time_limit"):
        return HighsResult(status, None, None, None)
    info = highs.getInfo()
    mip = info.mip_node_count >= 0
    has = info.primal_solution_status == 2                     # kSolutionStatusFeasible
    solution = highs.getSolution() if has or duals else None
    values = np.array(solution.col_value) if has else None
    objective = float(info.objective_function_value) if has else None
    row_duals = np.asarray(solution.row_dual) if duals and info.dual_solution_status == 2 else None
    if mip:
        bound = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else None
    else:
        bound = objective if status == "optimal" else None
    return HighsResult(status, objective, bound, values, row_duals)


def last_row_duals(highs) -> np.ndarray | None:
    """The row duals of the last run of ``highs`` (m,), whatever HiGHS says of them (an interior-point run stopped
    early or short of its tolerances leaves them dual infeasible), or None when it left none or a non-finite one:
    for a bound that repairs them (:func:`formulations.schedule.bound.dual_bound`), never to be read as optimal."""
    duals = np.asarray(highs.getSolution().row_dual, dtype=np.float64)
    return duals if len(duals) == highs.getNumRow() and np.isfinite(duals).all() else None


def solve(highs, time_limit: float | None = None, duals: bool = False) -> HighsResult:
    """Run ``highs`` and read its :class:`HighsResult`.

    ``time_limit`` (seconds, at least :data:`MIN_TIME_LIMIT_S`; None: the limit already set) is HiGHS's option as
    is: a MIP run gets that many seconds, an LP re-solved on one object that many minus its earlier runs' (module
    docstring; :func:`run_until` gives it a deadline instead)."""
    if time_limit is not None:
        highs.setOptionValue("time_limit", max(float(time_limit), MIN_TIME_LIMIT_S))
    highs.run()
    return read_result(highs, duals)


def run_until(highs, deadline: float, duals: bool = False) -> HighsResult:
    """Run ``highs`` (a ``highspy.Highs`` being re-solved, e.g. a column-generation master) until the
    ``time.perf_counter()`` instant ``deadline`` and read its :class:`HighsResult` (status ``time_limit`` and
    nothing found when the deadline has already passed). HiGHS counts an LP's ``time_limit`` over every run of one
    object, so the limit is set past the time already spent."""
    left = deadline - time.perf_counter()
    if left <= 0:
        return HighsResult("time_limit", None, None, None)
    highs.setOptionValue("time_limit", highs.getRunTime() + left)
    highs.run()
    return read_result(highs, duals)


def add_columns(highs, costs, matrix: sp.csc_matrix, lower=None, upper=None) -> None:
    """Append the columns of ``matrix`` (CSC, as many rows as ``highs``' model; each column's entries handed in row
    order) with ``costs``, bounds ``lower`` (default 0) and ``upper`` (default ``inf``)."""
    costs = np.asarray(costs, dtype=np.float64)
    n = len(costs)
    if matrix.shape[1] != n:
        raise ValueError(f"costs has {n} entries, the matrix {matrix.shape[1]} columns")
    matrix = sp.csc_matrix(matrix)
    matrix.sort_indices()
    highs.addCols(n, costs, np.zeros(n) if lower is None else np.asarray(lower, dtype=np.float64),
                  np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=np.float64), matrix.nnz,
                  matrix.indptr[:-1].astype(np.int32), matrix.indices.astype(np.int32), matrix.data)


def set_start(highs, values) -> None:
    """Give ``highs`` the feasible column vector ``values`` (n,) as its MIP start."""
    import highspy

    sol = highspy.HighsSolution()
    sol.col_value = np.asarray(values, dtype=float).tolist()
    sol.value_valid = True
    highs.setSolution(sol)
