"""Defragmentation study: how many waiting GPUs a few moves admit, by heuristic and exactly.

Usage::

    python -m experiments.defrag --trace default --seeds 42-51 --at 100 --budgets 0,10,50,100,500 \\
        [--jobs N | --dask ADDRESS] [--resume] --output DIR
    python -m experiments.defrag --quick --output DIR     # fgd, budgets 0,10,50, 10 s per exact run

For every seed and replay policy (``--policies``, default ``fgd,best-fit``): replay the trace to ``--at``
percent arrived GPU demand (:func:`fgdopt.simulate.replay`, ratio 1.3), take the state and its failed tasks
as the waiting list (:class:`fgdopt.defrag.DefragProblem`), then for every budget run each heuristic of
:data:`fgdopt.defrag.HEURISTICS` (objective (b), FGD re-placement) on the whole cluster. On
``--slices`` seeded random slices of ``--slice-nodes`` nodes (the running tasks of those nodes, and the
waiting tasks that fit one of them), the heuristics and the exact model (:func:`formulations.defrag.solve_defrag`,
objective (b), warm-started from the best of: the heuristic plans, the exact plan of the previous, smaller
budget, and that plan extended by each heuristic with the moves left, :func:`fgdopt.defrag.extend_plan`) run
side by side.

``--quick``: seed 42, fgd only, budgets 0, 10 and 50, 10 s per exact run (about half a minute on 2 cores; an
option written on the command line wins).

``--jobs N`` runs the (seed, replay policy) pairs N at a time in local processes, ``--dask ADDRESS`` on a Dask
cluster (:mod:`experiments.executors`); the rows come back in the same order either way. With ``--output``,
``--resume`` keeps the pairs already finished in ``OUTPUT/.runs/defrag`` (the same trace files, policy source and
options) and runs the rest.

With ``--suite small``, the trace is replaced by the instances of :func:`fgdopt.suites.suite`: on the state
:func:`fgdopt.simulate.run_online` leaves with each policy (policy seed 0), its failed tasks waiting, the
heuristics and the exact model run at every budget (``trace`` = the instance name, ``at_pct`` 100); the options
of the trace study (:data:`TRACE_OPTIONS`: ``--trace``, ``--data``, ``--seeds``, ...) are refused beside it.

Writes ``DIR/defrag.csv`` (columns :data:`COLUMNS`: admitted and bound in milli-GPU, ``kind`` heuristic or exact,
``status`` the exact run's status or ``feasible`` for a heuristic plan, ``trace`` the trace or
``<trace>/slice<j>``, ``policy`` the replay policy, ``nodes`` the cluster size), ``DIR/defrag.png``
(:func:`fgdopt.plot.plot_defrag`) and ``DIR/defrag.md`` (the printed table). Progress goes to stderr.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from tqdm import tqdm

from experiments.args import (
    int_list,
    non_negative_int,
    openb_dir,
    output_dir,
    parse_policies,
    parse_seeds,
    positive,
    positive_int,
    real,
    study_parser,
)
from experiments.executors import (
    RunJournal,
    SweepInterrupted,
    add_dask_option,
    add_resume_option,
    content_digest,
    executor,
    policy_digest,
    run_all,
    stop_message,
)
from experiments.outputs import staged
from fgdopt.defrag import HEURISTICS, DefragProblem, PlanReport, defrag, extend_plan
from fgdopt.frag import Workload
from fgdopt.instance import Instance
from fgdopt.model import TaskSet
from fgdopt.policies import PolicyError, policy_labels
from fgdopt.simulate import replay, run_online
from fgdopt.state import UNPLACED, ClusterState, Placement, validate
from fgdopt.suites import SUITES, suite
from fgdopt.traces import VARIANTS, load_openb, trace_files

if TYPE_CHECKING:
    from formulations.defrag import DefragSolution

COLUMNS = ("trace", "seed", "at_pct", "method", "kind", "budget", "moves", "admitted_milli", "bound_milli",
           "status", "wall_s", "policy", "nodes")


SOLVERS = ("highs", "cbc", "cpsat")
"""The solvers of :func:`formulations.defrag.solve_defrag`."""


def slice_problem(problem: DefragProblem, nodes: np.ndarray) -> DefragProblem:
    """The sub-problem on ``nodes``: their running tasks and the waiting tasks that fit one of them empty."""
    cluster = problem.cluster.subset(nodes)
    remap = np.full(problem.cluster.n_nodes, UNPLACED, dtype=np.int64)
    remap[nodes] = np.arange(len(nodes))
    node = problem.placement.node
    running = np.flatnonzero((node != UNPLACED) & np.isin(node, nodes))
    empty = ClusterState(cluster, problem.tasks)
    waiting = [i for i in problem.waiting.tolist() if empty.feasible_nodes(problem.tasks[i]).any()]
    keep = np.concatenate([running, np.array(waiting, dtype=np.int64)])
    tasks: TaskSet = problem.tasks.take(keep)
    placement = Placement(np.concatenate([remap[node[running]], np.full(len(waiting), UNPLACED)]),
                          tuple(problem.placement.gpus[i] for i in running.tolist()) + ((),) * len(waiting))
    return DefragProblem(cluster, tasks, placement)


def _row(trace, seed, at, method, kind, budget, moves, admitted, bound, status, wall, policy, nodes) -> dict:
    return dict(zip(COLUMNS, (trace, seed, at, method, kind, budget, moves, admitted, bound, status, round(wall, 3),
                              policy, nodes), strict=True))


def best_report(candidates: Iterable[PlanReport | DefragSolution | None]) -> PlanReport | DefragSolution | None:
    """The candidate best on objective (b): most admitted milli-GPU, then fewest moves; the first of equals
    (None entries are skipped; None if nothing is left)."""
    return max((c for c in candidates if c is not None), key=lambda c: (c.admitted_milli, -c.moves), default=None)


def run_problem(problem: DefragProblem, workload: Workload, budgets: list[int], label: str, seed: int, at: float,
                policy: str, exact: bool, time_limit: float, threads: int, solver: str) -> list[dict]:
    """Rows of every heuristic (and, if ``exact``, the exact model) at every budget on one problem."""
    rows = []
    n = problem.cluster.n_nodes
    previous = None                                       # the exact plan of the last (smaller) budget
    for budget in sorted(budgets):
        reports = []
        for method in HEURISTICS:
            rep = defrag(problem, method, budget, workload, seed=seed)
            reports.append(rep)
            rows.append(_row(label, seed, at, method, "heuristic", budget, rep.moves, rep.admitted_milli, None,
                             "feasible", rep.wall_s, policy, n))
            print(f"[defrag] {label} seed={seed} {policy} K={budget} {method}: {rep.moves} moves, "
                  f"{rep.admitted_milli / 1000:.2f} GPUs ({rep.wall_s:.1f} s)", file=sys.stderr, flush=True)
        if exact and previous is not None and previous.moves < budget:   # the last exact plan, then each heuristic
            reports += [extend_plan(problem, previous.plan, method, budget, workload, seed=seed)
                        for method in HEURISTICS]
        best = best_report([previous, *reports])
        start = best.plan if best is not None else None
        if exact:
            from formulations.defrag import solve_defrag

            sol = solve_defrag(problem, "b", budget, solver=solver, time_limit=time_limit, threads=threads,
                               warm_start=start, workload=workload)
            if sol.plan is not None:
                previous = sol
            rows.append(_row(label, seed, at, f"exact-{solver}", "exact", budget, sol.moves, sol.admitted_milli,
                             sol.bound_milli, sol.status, sol.wall_s, policy, n))
            print(f"[defrag] {label} seed={seed} {policy} K={budget} exact: {sol.status}, {sol.moves} moves, "
                  f"{(sol.admitted_milli or 0) / 1000:.2f} GPUs, bound {(sol.bound_milli or 0) / 1000:.2f} "
                  f"({sol.wall_s:.1f} s)", file=sys.stderr, flush=True)
    return rows


def online_problem(instance: Instance, policy: str, seed: int = 0) -> DefragProblem:
    """The state :func:`fgdopt.simulate.run_online` leaves with ``policy`` (policy seed ``seed``) on
    ``instance``, its failed tasks waiting."""
    try:
        result = run_online(instance.cluster, instance.tasks, policy, seed=seed)
    except PolicyError as exc:
        raise PolicyError(f"instance {instance.name}: {exc}") from exc
    return DefragProblem(instance.cluster, instance.tasks, result.placement)


def run_suite(name: str, policies: list[str], budgets: list[int], time_limit: float, threads: int,
              solver: str) -> list[dict]:
    """Rows of :func:`run_problem` (exact included) on the state each policy leaves on each instance of
    :func:`fgdopt.suites.suite` ``name``; instances where nothing waits are skipped."""
    rows = []
    for instance in suite(name):
        for policy in policies:
            problem = online_problem(instance, policy)
            if len(problem.waiting) == 0:
                continue
            rows += run_problem(problem, Workload.from_tasks(instance.tasks), budgets, instance.name, 0, 100.0,
                                policy, True, time_limit, threads, solver)
    return rows


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """Admitted GPUs (mean over seeds) per (trace, policy, method) and budget, moves in parentheses."""
    stats = frame.groupby(["trace", "policy", "method", "budget"], sort=False).agg(
        admitted=("admitted_milli", "mean"), moves=("moves", "mean"), bound=("bound_milli", "mean"))
    cells = stats.apply(lambda r: f"{r.admitted / 1000:.2f} ({r.moves:.0f})"
                        + (f" ≤{r.bound / 1000:.2f}" if pd.notna(r.bound) else ""), axis=1)
    return cells.unstack("budget").reset_index()


TRACE_OPTIONS = ("trace", "data", "seeds", "at", "slices", "slice_nodes", "jobs", "dask")
"""The options of the trace study, which ``--suite`` does not read (its instances, policy seed 0, every node)."""
SLICE_NODES = 64
"""Nodes of an exact comparison's slice by default (fewer on a smaller cluster: all of them)."""


def main(argv: list[str] | None = None) -> int:
    ap = study_parser("experiments.defrag", __doc__)
    ap.add_argument("--trace", choices=VARIANTS, default="default", metavar="VARIANT",
                    help="openb variant (default: default)")
    ap.add_argument("--data", type=openb_dir, default=None,
                    help="openb directory (default: $FGDOPT_DATA or the cache)")
    ap.add_argument("--seeds", type=parse_seeds, default=[42], help="seeds, A-B or a,b (default: 42)")
    ap.add_argument("--at", type=real(0, 130, strict=True), default=100.0,
                    help="arrived GPU demand, percent of capacity (0 < AT <= 130; default: 100)")
    ap.add_argument("--budgets", type=int_list(0), default=[0, 10, 50, 100, 500],
                    help="move budgets (default: 0,10,50,100,500)")
    ap.add_argument("--policies", type=parse_policies, default=["fgd", "best-fit"],
                    help="replay policies whose states are defragmented: names or module:attribute specs "
                    "(default: fgd,best-fit)")
    ap.add_argument("--slices", type=non_negative_int, default=1,
                    help="exact comparisons per seed and policy, each on a random slice of the cluster (0: none; "
                    "default: 1)")
    ap.add_argument("--slice-nodes", type=positive_int, default=None,
                    help="nodes of each slice, at most the cluster's (default: 64, or every node of a smaller "
                    "cluster)")
    ap.add_argument("--time-limit", type=positive, default=60.0, help="seconds per exact run (default: 60)")
    ap.add_argument("--threads", type=positive_int, default=1, help="solver threads per exact run (default: 1)")
    ap.add_argument("--solver", choices=SOLVERS, default="highs",
                    help=f"one of {', '.join(SOLVERS)} (default: highs)")
    ap.add_argument("--output", type=output_dir, default=None,
                    help="folder for defrag.csv, defrag.md and defrag.png (default: print the table only)")
    ap.add_argument("--suite", choices=SUITES, default=None,
                    help="instead of the trace: run_online states of this suite")
    ap.add_argument("--jobs", type=positive_int, default=1,
                    help="(seed, policy) pairs run side by side (trace study)")
    add_dask_option(ap)
    add_resume_option(ap)
    ap.add_argument("--quick", action="store_true", help="seed 42, fgd, budgets 0,10,50, 10 s per exact run (an "
                    "option written on the command line wins)")
    args = ap.parse_args(argv)
    if args.resume and (args.output is None or args.suite):
        ap.error("--resume keeps the trace study's runs in --output DIR: give --output, without --suite")
    if args.suite and (trace_only := [f"--{d.replace('_', '-')}" for d in TRACE_OPTIONS if d in ap.written()]):
        ap.error(f"--suite runs on the suite's instances, not the trace; drop {', '.join(trace_only)}")
    if args.quick:
        ap.quick(args, seeds=[42], policies=["fgd"], budgets=[0, 10, 50], time_limit=10.0)
    args.data = None if args.data is None else str(args.data)
    budgets = args.budgets
    labels = policy_labels(args.policies)                 # a policy of your own by its name
    if args.suite:
        try:
            rows = run_suite(args.suite, args.policies, budgets, args.time_limit, args.threads, args.solver)
        except PolicyError as exc:
            return stop_message(exc, ap.prog)
        return _write(pd.DataFrame(rows, columns=list(COLUMNS)), args.output, f"suite {args.suite}", labels)
    try:                                                   # a missing or broken trace stops here, in one line
        cluster, _ = load_openb(args.trace, args.data)
    except (OSError, ValueError) as exc:
        ap.error(str(exc))
    if args.slice_nodes is None:
        args.slice_nodes = min(SLICE_NODES, cluster.n_nodes)
    elif args.slices and args.slice_nodes > cluster.n_nodes:
        ap.error(f"argument --slice-nodes: {args.slice_nodes} nodes, but the {args.trace} cluster has "
                 f"{cluster.n_nodes}")
    jobs = [(args.trace, args.data, seed, policy, args.at, budgets, args.slices, args.slice_nodes, args.time_limit,
             args.threads, args.solver) for seed in args.seeds for policy in args.policies]
    keys = [(trace, content_digest(*trace_files(trace, data)), seed, policy_digest(policy), *rest)
            for trace, data, seed, policy, *rest in jobs]    # a file or policy edited since is a new run
    journal = RunJournal.for_study(args.output, "defrag", resume=args.resume)
    try:
        with executor(args.jobs, args.dask) as pool, tqdm(total=len(jobs), desc="replays", unit="run",
                                                           file=sys.stderr) as bar:
            results = run_all(pool, trace_rows, jobs, lambda _: bar.update(), journal=journal, keys=keys)
    except (PolicyError, SweepInterrupted) as exc:         # one line naming the policy, the task and the seed; the
        return stop_message(exc, ap.prog)                  # finished runs stay in OUTPUT/.runs/defrag
    rows = [row for rows_ in results for row in rows_]
    return _write(pd.DataFrame(rows, columns=list(COLUMNS)), args.output, f"openb {args.trace}, {args.at:g}% arrived",
                  labels)


def trace_rows(trace: str, data: str | None, seed: int, policy: str, at: float, budgets: list[int], slices: int,
               slice_nodes: int, time_limit: float, threads: int, solver: str) -> list[dict]:
    """Rows of one (seed, replay policy) of the trace study: the heuristics on the whole cluster, then the
    heuristics and the exact model on ``slices`` random slices of ``slice_nodes`` nodes (module docstring)."""
    cluster, tasks = load_openb(trace, data)
    workload = Workload.from_tasks(tasks)
    t0 = time.perf_counter()
    try:
        result = replay(cluster, tasks, policy, seed, 1.3, workload)
    except PolicyError as exc:
        raise PolicyError(f"openb {trace} seed {seed}: {exc}") from exc
    tasks_p, placement_p = result.prefix(at)
    validate(cluster, tasks_p, placement_p)
    problem = DefragProblem(cluster, tasks_p, placement_p)
    print(f"[defrag] seed={seed} {policy}: replay {time.perf_counter() - t0:.1f} s, {len(problem.running)} running, "
          f"{len(problem.waiting)} waiting ({problem.waiting_milli() / 1000:.1f} GPUs)", file=sys.stderr, flush=True)
    rows = run_problem(problem, workload, budgets, trace, seed, at, policy, False, time_limit, threads, solver)
    rng = np.random.default_rng(seed)
    for j in range(slices):
        nodes = np.sort(rng.choice(cluster.n_nodes, size=slice_nodes, replace=False))
        rows += run_problem(slice_problem(problem, nodes), workload, budgets, f"{trace}/slice{j}", seed, at, policy,
                            True, time_limit, threads, solver)
    return rows


def _write(frame: pd.DataFrame, output: Path | None, title: str, labels: dict[str, str]) -> int:
    """Print the table; with ``output``, write ``defrag.csv``, ``defrag.md`` and ``defrag.png`` there (the replay
    policies named by ``labels``, :func:`fgdopt.policies.policy_labels`)."""
    frame = frame.assign(policy=frame["policy"].replace(labels))
    text = table(frame).to_markdown(index=False)
    print(text)
    if output:
        from fgdopt.plot import plot_defrag

        with staged(output) as out:
            frame.to_csv(out / "defrag.csv", index=False)
            (out / "defrag.md").write_text(text + "\n")
            plot_defrag(frame, out / "defrag.png", title=title)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
