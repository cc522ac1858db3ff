"""Topology-aware placement on the openb traces: how many multi-GPU tasks each policy misplaces, and the price.

Usage::

    python -m experiments.topology --trace default,multigpu50 --seeds 42-44 [--quick] [--resume] --output DIR \\
        [--policies fgd,best-fit] [--mapping FILE.json] [--jobs N | --dask ADDRESS] \\
        [--exact-nodes 2,3 --exact-seeds 0-2]
    python -m experiments.topology --trace default,multigpu50 --seeds 42 --policies fgd,best-fit --bench 3

Every (trace, seed) is replayed at ratio 1.3 (the paper's protocol, :func:`fgdopt.simulate.replay`) by each
policy with each GPU choice: ``lowest-index`` (the reference's) and ``best-ring`` for every policy, and
``topo-fgd`` for ``fgd``. Node topologies come from :data:`fgdopt.topology.DEFAULT_MAPPING` (an assumption,
the trace has none) or ``--mapping``. Writes:

* ``DIR/topology.csv``: one row per replay, columns :data:`COLUMNS`: ``alloc_ratio_130`` (%),
  ``multi_gpu_tasks`` (placed tasks of >= 2 GPUs), ``misplaced_tasks`` (of those, ring slower than the best
  ring of that size on an empty node of the type), ``mean_ring_gbps`` (GB/s per direction), ``wall_s``
  (replay wall seconds) and ``cpu_s`` (its CPU seconds);
* ``DIR/topology_exact.csv``: the offline optimum with and without the best-ring rule on small DGX-1 instances
  of multi-GPU-heavy tasks (:mod:`formulations.topology`; drawn from the :data:`EXACT_TRACE` variant whatever
  ``--trace`` is, so its file must be in the openb folder too), columns :data:`EXACT_COLUMNS`;
* ``DIR/topology_misplaced.png`` (misplaced share against allocation, per policy and GPU choice) and
  ``DIR/topology_node.png`` (one node's GPU graph with a misplaced task's GPUs highlighted);
* a Markdown summary on stdout (means over seeds).

Each finished replay is kept in ``DIR/.runs/topology`` (:class:`experiments.executors.RunJournal`, keyed by the
trace's and the mapping's contents): ``--resume`` replays only the cells not yet there.

``--bench R`` only times ``best-ring`` against ``lowest-index`` replays (``DIR/topology_bench.csv``).

``--quick`` replays ``fgd``, ``best-fit`` and ``random`` only and solves 2-node instances with 10 s per solve
(measured: see ``paper/topology.md``). Exact solves use one thread.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import (
    check_paths,
    existing_file,
    int_list,
    non_negative_int,
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
from experiments.outputs import staged
from fgdopt.frag import Workload
from fgdopt.plot import plot_topology_misplaced, plot_topology_node
from fgdopt.policies import PAPER_POLICIES, PolicyError, policy_labels
from fgdopt.simulate import replay
from fgdopt.topology import TopologyMap, ring_report
from fgdopt.traces import load_openb, trace_files

COLUMNS = ("trace", "seed", "policy", "gpu_choice", "alloc_ratio_130", "multi_gpu_tasks", "misplaced_tasks",
           "mean_ring_gbps", "wall_s", "cpu_s")
EXACT_COLUMNS = ("instance", "nodes", "gpus", "tasks", "multi_gpu_tasks", "rule", "status", "objective_milli",
                 "bound_milli", "misplaced_tasks", "wall_s")
QUICK_POLICIES = ("fgd", "best-fit", "random")
OUTPUTS = ("topology.csv", "topology_exact.csv", "topology_misplaced.png", "topology_node.png", "topology_bench.csv")
"""The files the study writes into ``--output``."""


def cells(policies: list[str]) -> list[tuple[str, str]]:
    """(policy, gpu_choice) pairs: both general choices for every policy, ``topo-fgd`` for FGD."""
    out = [(p, g) for p in policies for g in ("lowest-index", "best-ring")]
    out += [(p, "topo-fgd") for p in policies if p in ("fgd", "fgd-exact")]
    return out


def run_cell(trace: str, seed: int, policy: str, gpu_choice: str, data_dir: str | None,
             mapping: str | None) -> dict:
    """One replay at ratio 1.3 and its ring figures (a row of ``topology.csv``)."""
    cluster, tasks = load_openb(trace, data_dir)
    topo_map = TopologyMap.load(mapping) if mapping else TopologyMap.default()
    workload = Workload.from_tasks(tasks)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        res = replay(cluster, tasks, policy, seed, 1.3, workload, gpu_choice=gpu_choice, topology=topo_map)
    except PolicyError as exc:
        raise PolicyError(f"openb {trace} seed {seed}: {exc}") from exc
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    report = ring_report(topo_map.for_cluster(cluster), res.tasks.num_gpu, res.placement.node, res.placement.gpus)
    return {"trace": trace, "seed": seed, "policy": policy, "gpu_choice": gpu_choice,
            "alloc_ratio_130": float(res.curves["alloc_ratio"].iloc[-1]), "multi_gpu_tasks": report.n_tasks,
            "misplaced_tasks": report.n_misplaced, "mean_ring_gbps": report.mean_ring_gbps, "wall_s": wall,
            "cpu_s": cpu}


EXACT_TRACE = "multigpu50"
"""The openb variant whose tasks the exact instances draw (the most multi-GPU tasks)."""


def exact_rows(nodes: list[int], seeds: list[int], time_limit: float, data_dir: str | None) -> list[dict]:
    """The price of topology at the optimum: each small instance solved with and without the best-ring rule."""
    from formulations.topology import solve_topology, topology_instance

    _, tasks = load_openb(EXACT_TRACE, data_dir)
    topo_map = TopologyMap.default()
    rows = []
    for n in nodes:
        for seed in seeds:
            inst = topology_instance(tasks, n, seed)
            topo = topo_map.for_cluster(inst.cluster)
            for rule in (False, True):
                sol = solve_topology(inst, topo, best_ring=rule, time_limit=time_limit, threads=1)
                rep = ring_report(topo, inst.tasks.num_gpu, sol.placement.node, sol.placement.gpus)
                rows.append({"instance": inst.name, "nodes": n, "gpus": inst.cluster.total_gpus,
                             "tasks": len(inst.tasks), "multi_gpu_tasks": int((inst.tasks.num_gpu >= 2).sum()),
                             "rule": "best-ring" if rule else "any-set", "status": sol.status,
                             "objective_milli": sol.objective, "bound_milli": sol.bound,
                             "misplaced_tasks": rep.n_misplaced, "wall_s": sol.wall_s})
    return rows


def bench(traces: list[str], seed: int, policies: list[str], repeats: int, data_dir: str | None) -> pd.DataFrame:
    """Replay time of ``best-ring`` against ``lowest-index``: each (trace, policy) replayed ``repeats`` times per
    choice, the two choices alternating; one row per (trace, policy, choice) with the min and median of the wall
    and CPU seconds (``time.process_time``) of :func:`~fgdopt.simulate.replay` (topology tables built before)."""
    topo_map = TopologyMap.default()
    rows = []
    for trace in traces:
        cluster, tasks = load_openb(trace, data_dir)
        workload = Workload.from_tasks(tasks)
        topo_map.for_cluster(cluster)
        for policy in policies:
            times: dict[str, list[tuple[float, float]]] = {"lowest-index": [], "best-ring": []}
            for _ in range(repeats):
                for choice in times:
                    t0, c0 = time.perf_counter(), time.process_time()
                    replay(cluster, tasks, policy, seed, 1.3, workload, gpu_choice=choice, topology=topo_map)
                    times[choice].append((time.perf_counter() - t0, time.process_time() - c0))
            for choice, t in times.items():
                wall, cpu = np.array(t).T
                rows.append({"trace": trace, "policy": policy, "gpu_choice": choice, "wall_min_s": wall.min(),
                             "wall_median_s": float(np.median(wall)), "cpu_min_s": cpu.min(),
                             "cpu_median_s": float(np.median(cpu))})
    return pd.DataFrame(rows)


def summary_table(frame: pd.DataFrame) -> str:
    """Markdown: per trace, policy and GPU choice, means over seeds."""
    g = frame.groupby(["trace", "policy", "gpu_choice"], sort=False)
    out = g[["alloc_ratio_130", "multi_gpu_tasks", "misplaced_tasks", "mean_ring_gbps", "wall_s", "cpu_s"]].mean()
    out["misplaced_pct"] = 100 * g["misplaced_tasks"].sum() / g["multi_gpu_tasks"].sum().clip(lower=1)
    lines = ["| trace | policy | gpu choice | alloc % @130 | multi-GPU placed | misplaced | misplaced % | "
             "mean ring GB/s | wall s | CPU s |", "|:--|:--|:--|--:|--:|--:|--:|--:|--:|--:|"]
    for (trace, policy, choice), r in out.iterrows():
        lines.append(f"| {trace} | {policy} | {choice} | {r.alloc_ratio_130:.2f} | {r.multi_gpu_tasks:.1f} | "
                     f"{r.misplaced_tasks:.1f} | {r.misplaced_pct:.1f} | {r.mean_ring_gbps:.1f} | {r.wall_s:.2f} | "
                     f"{r.cpu_s:.2f} |")
    return "\n".join(lines)


def exact_table(frame: pd.DataFrame) -> str:
    lines = ["| instance | GPUs | tasks | multi-GPU | optimum any set | optimum best ring | price % | status |",
             "|:--|--:|--:|--:|--:|--:|--:|:--|"]
    for name, part in frame.groupby("instance", sort=False):
        free, rule = part[part.rule == "any-set"].iloc[0], part[part.rule == "best-ring"].iloc[0]
        price = 100 * (free.objective_milli - rule.objective_milli) / free.objective_milli
        lines.append(f"| {name} | {free.gpus} | {free.tasks} | {free.multi_gpu_tasks} | {free.objective_milli} | "
                     f"{rule.objective_milli} | {price:.2f} | {free.status}/{rule.status} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = study_parser("experiments.topology", __doc__)
    ap.add_argument("--trace", type=parse_traces, default=["default", "multigpu50"],
                    help="openb variants, comma-separated, a family or all (default: default,multigpu50)")
    ap.add_argument("--seeds", type=parse_seeds, default=[42, 43, 44], help="seeds, A-B or a,b (default: 42-44)")
    ap.add_argument("--policies", type=parse_policies, default=None,
                    help="comma-separated names or module:attribute specs (default: the paper's six; --quick: three)")
    ap.add_argument("--quick", action="store_true",
                    help="fgd, best-fit and random, 2-node exact instances, 10 s per solve (an option written on the "
                    "command line wins)")
    ap.add_argument("--mapping", type=existing_file, default=None,
                    help="JSON model -> topology name (default: the shipped assumption)")
    ap.add_argument("--exact-nodes", type=int_list(1), default=None,
                    help="node counts of the exact instances (default 2-4; quick 2)")
    ap.add_argument("--exact-seeds", type=parse_seeds, default=[0, 1, 2],
                    help="seeds of the exact instances (default: 0-2)")
    ap.add_argument("--exact-time", type=positive, default=None,
                    help="seconds per exact solve (default 60; quick 10)")
    ap.add_argument("--jobs", type=positive_int, default=2, help="worker processes (default: 2)")
    add_dask_option(ap)
    ap.add_argument("--bench", type=non_negative_int, default=0, metavar="REPEATS",
                    help="only time best-ring against lowest-index replays (first seed), REPEATS per choice")
    ap.add_argument("--data", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    ap.add_argument("--output", type=output_dir, default=Path("out/topology"),
                    help="folder for the CSVs and PNGs (default: out/topology)")
    add_resume_option(ap)
    args = ap.parse_args(argv)
    args.data = None if args.data is None else str(args.data)
    mapping = None if args.mapping is None else str(args.mapping)
    check_paths(ap, args.output, OUTPUTS, {"--mapping": mapping})
    try:                                                   # bad data stops here, in one line, before any work
        for trace in args.trace:
            cluster, _ = load_openb(trace, args.data)
        if not args.bench:
            try:
                load_openb(EXACT_TRACE, args.data)
            except (OSError, ValueError) as exc:
                raise ValueError(f"the exact instances draw from {EXACT_TRACE} whatever --trace is: {exc}") from None
        topo_map = TopologyMap.load(mapping) if mapping else TopologyMap.default()
        try:                                               # every node has a topology (one node list: all traces)
            topo_map.for_cluster(cluster)
        except ValueError as exc:
            raise ValueError(f"{trace_files(args.trace[0], args.data)[0]}: {exc}") from None
    except (OSError, ValueError) as exc:
        ap.error(str(exc))
    traces, seeds = args.trace, args.seeds
    policies = args.policies if args.policies else list(QUICK_POLICIES if args.quick else PAPER_POLICIES)
    if args.bench:
        table = bench(traces, seeds[0], policies, args.bench, args.data)
        with staged(args.output) as out:
            table.to_csv(out / "topology_bench.csv", index=False)
        print(table.to_markdown(index=False, floatfmt=".2f"))
        return 0
    jobs = [(t, s, p, g, args.data, mapping) for t in traces for s in seeds for p, g in cells(policies)]
    keys = [(t, s, policy_digest(p), g, content_digest(*trace_files(t, d)), content_digest(m))
            for t, s, p, g, d, m in jobs]
    journal = RunJournal.for_study(args.output, "topology", resume=args.resume)
    start = time.perf_counter()
    try:
        with executor(args.jobs, args.dask) as pool:
            rows = run_all(pool, run_cell, jobs, journal=journal, keys=keys)
    except SweepInterrupted as stop:
        with staged(args.output, partial=True) as out:
            pd.DataFrame(stop.finished(), columns=list(COLUMNS)).to_csv(out / "topology.csv", index=False)
        return stop_message(stop, ap.prog)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["policy"] = frame["policy"].replace(policy_labels(policies))       # a policy of your own by its name
    print(f"## Replays ({len(rows)}, {time.perf_counter() - start:.1f} s wall)\n\n{summary_table(frame)}\n")

    nodes = args.exact_nodes or ([2] if args.quick else [2, 3, 4])
    limit = args.exact_time or (10.0 if args.quick else 60.0)
    t0 = time.perf_counter()
    exact = pd.DataFrame(exact_rows(nodes, args.exact_seeds, limit, args.data), columns=list(EXACT_COLUMNS))
    print(f"## Price of topology at the optimum ({time.perf_counter() - t0:.1f} s wall)\n\n{exact_table(exact)}\n")
    with staged(args.output) as out:
        frame.to_csv(out / "topology.csv", index=False)
        plot_topology_misplaced(frame, out / "topology_misplaced.png", title="openb, ratio 1.3")
        exact.to_csv(out / "topology_exact.csv", index=False)
        _node_figure(traces[0], seeds[0], args.data, mapping, out / "topology_node.png")
    print(f"total {time.perf_counter() - start:.1f} s wall", file=sys.stderr)
    return 0


def _node_figure(trace: str, seed: int, data_dir: str | None, mapping: str | None, path: Path) -> None:
    """Replay fgd with lowest-index and draw the node of its first misplaced task (else its first multi-GPU task)."""
    cluster, tasks = load_openb(trace, data_dir)
    topo_map = TopologyMap.load(mapping) if mapping else TopologyMap.default()
    res = replay(cluster, tasks, "fgd", seed, 1.3, gpu_choice="lowest-index", topology=topo_map)
    topo = topo_map.for_cluster(cluster)
    rep = ring_report(topo, res.tasks.num_gpu, res.placement.node, res.placement.gpus)
    if rep.n_tasks == 0:
        return
    pick = int(np.flatnonzero(rep.misplaced)[0]) if rep.n_misplaced else 0
    task, node = int(rep.task[pick]), int(rep.node[pick])
    plot_topology_node(topo.of(node), res.placement.gpus[task], path,
                       title=f"{trace} seed {seed}: fgd task {task} on node {node} ({cluster.model[node]}), "
                             f"ring {rep.ring_gbps[pick]:g} GB/s, best {rep.best_gbps[pick]:g}")


if __name__ == "__main__":
    raise SystemExit(main())
