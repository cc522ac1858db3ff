"""The optimality frontier of the online study: every paper policy against a certified offline optimum of the
same arrived tasks, on the whole openb cluster, at several arrived-workload points.

Usage::

    python -m experiments.frontier --trace default|all|NAME --seeds 42-51 --points 80,90,100,110,120,130 \\
        [--policies fgd,best-fit,mypkg.mymod:MyPolicy] [--jobs N | --dask ADDRESS] [--time-limit 60] [--tol 0.001] \\
        --output DIR [--resume]
    python -m experiments.frontier --quick --output DIR     # seed 42 at 100% and 130%, 10 s per optimum

For every trace and seed, each policy (default :data:`~fgdopt.policies.PAPER_POLICIES`) is replayed exactly as in
``experiments.openb`` (:func:`fgdopt.simulate.replay`, ratio 1.3); the arrived prefix at each point (the same
tasks for every policy: the arrival order depends on the seed only, which is checked) is an offline instance,
solved by ``config-types`` (:mod:`formulations.typeconfig`). The points of one (trace, seed) run in increasing
order in one process, each from the previous point's columns (the prefixes are nested on one cluster) and with the
better of the best policy's placement and the previous optimum as warm start.

Writes ``DIR/frontier.csv``, one row per (trace, seed, point, method): ``kind`` is ``policy`` or ``optimum``;
``allocated_milli`` the policy's allocation (its curve row) or the optimum's incumbent; ``bound_milli`` the
optimum's proven bound at that point (on every row); ``gap_pct`` = (bound - allocated) / capacity in percent;
``wall_s`` the replay's or the solve's wall seconds. Also ``DIR/frontier.png`` (allocation against arrived
workload, a line per policy, the optimum as a band from incumbent to bound; the first trace) and prints the
headline: at the last point FGD leaves X GPUs unallocated where no placement of the same tasks leaves fewer
than Y — only where the bound is below capacity and within the tolerance of the incumbent; otherwise it states
the measured bound, incumbent and gap. Progress goes to stderr. ``--nodes K`` replays on the first K nodes only (a
quick check). ``--quick``: seed 42, points 100 and 130, 10 s per optimum (about half a minute on 2 cores; an option
written on the command line wins). ``--jobs N`` runs the replays, then the chains, N at a time in local processes,
``--dask ADDRESS`` on the workers of a Dask distributed cluster (:mod:`experiments.executors`); the rows are the
same. ``--policies`` replaces the paper's six by names or ``module:attribute`` specs of your own
(:mod:`fgdopt.policies`, "Your own policy"); the headline is about ``fgd`` if it is among them, else the first. Each
(trace, seed) is kept in ``DIR/.runs/frontier`` as its chain finishes (:class:`experiments.executors.RunJournal`):
``--resume`` skips those already there with the same inputs, and a run stopped early writes ``frontier.csv`` of
those that finished (only where no file of that name is there yet: the outputs of an earlier complete run stay).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from experiments.args import (
    check_paths,
    non_negative,
    openb_dir,
    output_dir,
    parse_policies,
    parse_seeds,
    parse_traces,
    positive,
    positive_int,
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
from experiments.outputs import printed, staged
from fgdopt.frag import Workload
from fgdopt.instance import Instance
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.plot import plot_frontier
from fgdopt.policies import PAPER_POLICIES, PolicyError, SpecError, policy_labels
from fgdopt.simulate import replay
from fgdopt.state import Placement
from fgdopt.traces import load_openb, trace_files

COLUMNS = ("trace", "seed", "arrived_pct", "method", "kind", "allocated_milli", "bound_milli", "gap_pct", "wall_s")
METHOD = "config-types"
RATIO = 1.3


OUTPUTS = ("frontier.csv", "frontier.png")
"""The files the study writes into ``--output``."""


def threads_option(text: str) -> int | None:
    """``--threads``: a count >= 1, or ``default`` (None: HiGHS's own choice)."""
    return None if text == "default" else positive_int(text)


def parse_points(text: str) -> list[int]:
    """``"80,90,100"`` -> [80, 90, 100] (arrived GPU demand in percent of capacity, 0..130)."""
    try:
        points = sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        points = []
    if not points or points[0] < 0 or points[-1] > round(100 * RATIO):
        raise argparse.ArgumentTypeError(f"expected integers in 0..{round(100 * RATIO)} separated by commas, "
                                         f"got {text!r}")
    return points


def first_nodes(cluster: Cluster, nodes: int | None) -> Cluster:
    """``cluster``'s first ``nodes`` nodes (``--nodes``; None: all of them).

    Raises
    ------
    ValueError : they hold no GPU (one line naming the option).
    """
    if nodes is None:
        return cluster
    head = cluster.subset(np.arange(min(nodes, cluster.n_nodes)))
    if head.total_gpus == 0:
        raise ValueError(f"argument --nodes: the first {nodes} node(s) of the node list hold no GPU")
    return head


def replay_cell(trace: str, seed: int, policy: str, points: list[int], data_dir: str | None,
                nodes: int | None = None) -> dict:
    """Replay one (trace, seed, policy) (on the first ``nodes`` nodes of the cluster, if given); the arrival order
    (``source``), the arrived prefix (tasks, placement) at each point and its allocation (milli-GPU).

    The allocation is the prefix's, the tasks the optimum sees: not the replay's curve, whose last row is its final
    state, past the last point where the trace alone brings more (a few nodes of ``--nodes``, a small cluster)."""
    cluster, tasks = load_openb(trace, data_dir)
    cluster = first_nodes(cluster, nodes)
    try:
        result = replay(cluster, tasks, policy, seed, RATIO, Workload.from_tasks(tasks))
    except PolicyError as exc:
        raise PolicyError(f"openb {trace} seed {seed}: {exc}") from exc
    prefix = {p: result.prefix(p) for p in points}
    return {"trace": trace, "seed": seed, "policy": policy, "cluster": cluster, "source": result.source,
            "alloc": {p: int(placed.allocated_milli(arrived)) for p, (arrived, placed) in prefix.items()},
            "prefix": prefix, "wall_s": result.wall_s}


def extended(placement: Placement, n_tasks: int) -> Placement:
    """A placement of a prefix's first tasks as a placement of a longer prefix of ``n_tasks`` (the rest unplaced)."""
    more = n_tasks - len(placement.node)
    return Placement(np.concatenate([placement.node, np.full(more, -1, dtype=np.int64)]),
                     (*placement.gpus, *((),) * more))


def optimum_chain(trace: str, seed: int, points: list[int], cluster: Cluster, prefixes: dict[int, TaskSet],
                  warms: dict[int, Placement], time_limit: float, tol: float, threads: int | None = 1) -> list[dict]:
    """``config-types`` on the arrived prefixes at ``points`` of one (trace, seed), in increasing order, with
    ``threads`` HiGHS threads (None: HiGHS's default; a process keeps the count of its first HiGHS run).

    The prefixes are nested on one cluster, so every column generated at a point is a column at the next: each
    run starts from the previous one's :class:`~formulations.typeconfig.ColumnPool`, and its warm start is the
    better of the best policy's placement (``warms``) and the previous point's optimum placement."""
    from formulations.typeconfig import solve_type_configs

    out, pool, previous = [], None, None
    for pct in sorted(points):
        tasks = prefixes[pct]
        warm = warms[pct]
        if previous is not None:
            carried = extended(previous, len(tasks))
            if carried.allocated_milli(tasks) > warm.allocated_milli(tasks):
                warm = carried
        instance = Instance(f"{trace}-s{seed}-{pct}pct", cluster, tasks)
        t0, c0 = time.perf_counter(), time.process_time()
        sol, pool = solve_type_configs(instance, METHOD, time_limit, warm, threads, tol, pool)
        previous = sol.placement
        out.append({"trace": trace, "seed": seed, "arrived_pct": pct, "method": METHOD, "kind": "optimum",
                    "allocated_milli": sol.objective, "bound_milli": sol.bound, "wall_s": time.perf_counter() - t0,
                    "cpu_s": time.process_time() - c0, "status": sol.status, "info": sol.info})
    return out


def group_rows(policy_rows: list[dict], capacity: int, *chain: Any) -> dict:
    """One (trace, seed) of the study, finished: its policy rows (passed through), the capacity of its cluster
    (milli-GPU) and the optimum rows of :func:`optimum_chain` ``(*chain)``; the unit the journal keeps."""
    return {"policy_rows": policy_rows, "capacity": capacity, "optima": optimum_chain(*chain)}


def frontier(traces: list[str], seeds: list[int], points: list[int], jobs: int = 1, time_limit: float = 60.0,
             tol: float = 0.001, data_dir: str | None = None, threads: int | None = 1,
             nodes: int | None = None, dask: str | None = None, policies: Sequence[str] = PAPER_POLICIES,
             journal: RunJournal | None = None) -> tuple[pd.DataFrame, dict]:
    """Run the study; returns the frame of :data:`COLUMNS` (plus ``status`` and ``cpu_s`` of the optima) and the
    capacity of each trace (milli-GPU). ``threads``: HiGHS threads of each optimum; ``nodes``: replay on the
    trace's first ``nodes`` nodes only (a quick check; None: the whole cluster); ``jobs`` local processes or the
    Dask cluster at ``dask`` run the replays and the chains (:func:`experiments.executors.executor`);
    ``policies``: names or ``module:attribute`` specs (default: the paper's six). With a ``journal``, each
    (trace, seed) is kept as its chain finishes, and those already there are neither replayed nor solved again.

    Raises
    ------
    RuntimeError : two policies' replays of one (trace, seed) do not share their arrival order.
    SweepInterrupted : with a journal, a run failed or was interrupted; ``partial`` holds ``(frame, capacity)``
        of the (trace, seed) pairs that finished.
    """
    policies = tuple(policies)
    groups = [(t, s) for t in traces for s in seeds]
    keys = {g: {"trace": g[0], "seed": g[1], "points": points, "time_limit": time_limit, "tol": tol,
                "data": content_digest(*trace_files(g[0], data_dir)), "threads": threads, "nodes": nodes,
                "policies": [policy_digest(p) for p in policies]} for g in groups}
    finished = {g: journal.load(keys[g]) for g in groups} if journal is not None else {}
    todo = [g for g in groups if not finished.get(g, (False, None))[0]]
    previously = [finished[g][1] for g in groups if g not in todo]
    with executor(jobs, dask) as pool:
        cells = [(t, s, p, points, data_dir, nodes) for t, s in todo for p in policies]
        with tqdm(total=len(cells), desc="replays", unit="run", file=sys.stderr) as bar:
            try:
                replays = run_all(pool, replay_cell, cells, lambda _: bar.update())
            except BaseException as exc:
                if journal is None:
                    raise
                stop = SweepInterrupted([None] * len(todo), [False] * len(todo), exc)
                stop.partial = study_frame(previously, policies)
                raise stop from exc
        by_cell: dict[tuple[str, int], list[dict]] = {}
        for rep in replays:
            by_cell.setdefault((rep["trace"], rep["seed"]), []).append(rep)
        solves = []
        for (trace, seed), reps in by_cell.items():
            first = reps[0]
            for rep in reps[1:]:
                if not np.array_equal(rep["source"], first["source"]):
                    raise RuntimeError(f"{trace} seed {seed}: {rep['policy']} and {first['policy']} replay "
                                       "different arrival orders; the arrived prefix is not policy-independent")
            rows = [{"trace": trace, "seed": seed, "arrived_pct": p, "method": rep["policy"], "kind": "policy",
                     "allocated_milli": rep["alloc"][p], "wall_s": rep["wall_s"]} for rep in reps for p in points]
            warms = {p: max(reps, key=lambda r: r["alloc"][p])["prefix"][p][1] for p in points}
            prefixes = {p: first["prefix"][p][0] for p in points}
            # one warm-started chain per (trace, seed): each point gets one process, and the previous point's pool
            solves.append((rows, first["cluster"].gpu_capacity_milli, trace, seed, points, first["cluster"], prefixes,
                           warms, time_limit, tol, threads))
        with tqdm(total=len(solves), desc="optima", unit="chain", file=sys.stderr) as bar:
            try:
                done = run_all(pool, group_rows, solves, lambda _: bar.update(), journal=journal,
                               keys=[keys[(job[2], job[3])] for job in solves])
            except SweepInterrupted as stop:
                stop.partial = study_frame(previously + stop.finished(), policies)
                raise
    results = {g: finished[g][1] for g in groups if g not in todo}
    results.update({(job[2], job[3]): r for job, r in zip(solves, done, strict=True)})
    return study_frame([results[g] for g in groups], policies)


def study_frame(results: list[dict], policies: Sequence[str]) -> tuple[pd.DataFrame, dict]:
    """The study's frame and capacities (as :func:`frontier` returns them) from finished :func:`group_rows`."""
    rows = [row for r in results for row in r["policy_rows"]]
    optima = [o for r in results for o in r["optima"]]
    capacity = {o["trace"]: r["capacity"] for r in results for o in r["optima"]}
    bounds = {(o["trace"], o["seed"], o["arrived_pct"]): o["bound_milli"] for o in optima}
    frame = pd.DataFrame(rows + [{k: v for k, v in o.items() if k != "info"} for o in optima],
                         columns=[*COLUMNS, "status", "cpu_s"])
    frame["bound_milli"] = [bounds[key] for key in zip(frame["trace"], frame["seed"], frame["arrived_pct"],
                                                        strict=True)]
    cap = frame["trace"].map(capacity)
    frame["gap_pct"] = 100.0 * (frame["bound_milli"] - frame["allocated_milli"]) / cap
    order = {m: k for k, m in enumerate((*policies, METHOD))}
    frame = frame.assign(_m=frame["method"].map(order)).sort_values(["trace", "seed", "arrived_pct", "_m"])
    return frame.drop(columns="_m").reset_index(drop=True)[[*COLUMNS, "status", "cpu_s"]], capacity


def headline(frame: pd.DataFrame, capacity: dict, tol: float = 0.001, policy: str = "fgd") -> list[str]:
    """Per trace, at the last point (means over seeds, GPUs): what ``policy`` leaves unallocated and what the
    optimum certifies. The sentence "no placement can leave fewer than Y" is printed only where it means
    something: Y = capacity - bound > 0 on every seed and bound - incumbent within ``tol`` x capacity on every
    seed; otherwise the measured bound, incumbent and gap are stated as what they are."""
    lines = []
    for trace, tf in frame.groupby("trace", sort=False):
        pct = int(tf["arrived_pct"].max())
        at = tf[tf["arrived_pct"] == pct]
        opt = at[at["kind"] == "optimum"]
        cap = capacity[trace]
        gpus = cap // GPU_MILLI
        left = (cap - at.loc[at["method"] == policy, "allocated_milli"]).mean() / GPU_MILLI
        floor = (cap - opt["bound_milli"]) / GPU_MILLI
        best = (cap - opt["allocated_milli"]).mean() / GPU_MILLI
        gap = (opt["bound_milli"] - opt["allocated_milli"]) / GPU_MILLI
        statuses = ", ".join(sorted(set(opt["status"])))
        head = f"openb {trace}, {pct}% arrived ({len(opt)} seed(s)): {policy} leaves {left:.1f} GPUs unallocated; "
        if (floor > 0).all() and (gap <= tol * cap / GPU_MILLI).all():
            lines.append(head + f"no placement of the same arrived tasks can leave fewer than {floor.mean():.1f} "
                         f"(the best placement found leaves {best:.1f}, within {gap.mean():.1f} GPUs of the bound, "
                         f"{100 * tol:g}% of capacity at most; capacity {gpus} GPUs).")
        elif (floor > 0).any():
            lines.append(head + f"the optimum is NOT certified to {100 * tol:g}% of capacity: the bound leaves at "
                         f"least {floor.mean():.1f} idle, the best placement found {best:.1f} "
                         f"(gap {gap.max():.1f} GPUs at worst, status {statuses}; capacity {gpus} GPUs).")
        else:
            lines.append(head + f"the optimum's bound stayed at capacity ({gpus} GPUs, status {statuses}), so this "
                         "run certifies no lower limit on the idle "
                         f"GPUs; the best placement found leaves {best:.1f}.")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.frontier", __doc__)
    parser.add_argument("--trace", type=parse_traces, default=["default"],
                        help="comma-separated variants, a family (cpu, gpushare, multigpu, gpuspec) or all")
    parser.add_argument("--seeds", type=parse_seeds, default=list(range(42, 52)),
                        help="seeds as a range A-B or a list a,b,c (default: 42-51)")
    parser.add_argument("--points", type=parse_points, default=[80, 90, 100, 110, 120, 130],
                        help="arrived-workload points in percent of capacity (default: 80,90,100,110,120,130)")
    parser.add_argument("--time-limit", type=positive, default=60.0, help="seconds per optimum (default: 60)")
    parser.add_argument("--tol", type=non_negative, default=0.001,
                        help="stop an optimum once bound - incumbent <= tol x capacity (default: 0.001)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--threads", type=threads_option, default=1,
                        help="HiGHS threads per optimum, or 'default' for HiGHS's own choice (default: 1)")
    parser.add_argument("--nodes", type=positive_int, default=None,
                        help="replay on the cluster's first NODES nodes only (a quick check; default: all)")
    parser.add_argument("--policies", type=parse_policies, default=list(PAPER_POLICIES),
                        help="comma-separated policies: names or module:attribute specs of your own "
                        "(default: the paper's six)")
    parser.add_argument("--output", type=output_dir, required=True, help="folder for frontier.csv and frontier.png")
    add_resume_option(parser)
    parser.add_argument("--quick", action="store_true", help="seed 42, points 100 and 130, 10 s per optimum (an "
                        "option written on the command line wins)")
    args = parser.parse_args(argv)
    if args.quick:
        parser.quick(args, seeds=[42], points=[100, 130], time_limit=10.0)
    args.data_dir = None if args.data_dir is None else str(args.data_dir)
    check_paths(parser, args.output, OUTPUTS, {})
    try:                                                   # a missing or broken trace stops here, in one line
        for trace in args.trace:
            first_nodes(load_openb(trace, args.data_dir)[0], args.nodes)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))

    journal = RunJournal.for_study(args.output, "frontier", resume=args.resume)
    try:
        frame, capacity = frontier(args.trace, args.seeds, args.points, args.jobs, args.time_limit, args.tol,
                                   args.data_dir, args.threads, args.nodes, args.dask, args.policies, journal)
    except SweepInterrupted as stop:
        with staged(args.output, partial=True) as tmp:
            stop.partial[0][list(COLUMNS)].to_csv(tmp / "frontier.csv", index=False)
        return stop_message(stop, parser.prog)
    except (PolicyError, SpecError) as exc:
        return stop_message(exc, parser.prog)
    labels = policy_labels(args.policies)                  # a policy of your own by its name
    frame["method"] = frame["method"].replace(labels)
    trace = args.trace[0]
    with staged(args.output) as tmp:
        frame[list(COLUMNS)].to_csv(tmp / "frontier.csv", index=False)
        plot_frontier(frame[frame["trace"] == trace], capacity[trace], tmp / "frontier.png",
                      f"openb {trace}: online policies vs the offline optimum")
    opt = frame[frame["kind"] == "optimum"]
    gpus = {"allocated_milli": "best found (GPUs)", "bound_milli": "proven bound (GPUs)", "gap_pct": "gap (%)"}
    in_gpus = {c: opt[c] / GPU_MILLI for c in ("allocated_milli", "bound_milli")}
    print(printed(opt[["trace", "seed", "arrived_pct", *gpus, "wall_s", "cpu_s", "status"]].assign(**in_gpus), gpus,
                  digits=3))
    lead = "fgd" if "fgd" in args.policies else labels[args.policies[0]]
    print("\n".join(headline(frame, capacity, args.tol, lead)))
    return 0


if __name__ == "__main__":
    from experiments.frontier import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
