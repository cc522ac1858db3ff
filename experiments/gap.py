"""Optimality gaps: every online policy against the offline optimum and its proven bounds.

Usage::

    python -m experiments.gap --instances small [--methods ...] [--time-limit 10] [--jobs N | --dask ADDRESS]
                              [--output DIR [--resume]] [--format markdown|csv] [--seed 0]
    python -m experiments.gap --quick --output DIR      # 8 small instances, 5 s per solver run: about a minute

For each instance of the suite (``small``, ``medium``, ``openb-sample`` or a folder of instance JSON files) it
places the tasks in arrival order with every policy, solves the offline problem exactly and with every
relaxation, and prints

1. a per-instance table: each policy's allocated GPUs and its gap to the optimum; where the optimum is not
   proven, the gap is the interval [vs best incumbent, vs best bound];
2. a summary per policy: mean / max gap, instances where it is optimal, instances where it allocates more or fewer
   GPUs than FGD;
3. the fragmentation rate (the shared evaluator) of every final placement.

The exact methods form a portfolio, run in the order given: each is warm-started from the best placement found
so far (policies first), and once one proves optimality the later exact methods do not run (no row). The
default is CBC on the aggregated model (proves most small instances in under a second), then the configuration
MILP (proves in seconds the instances whose nodes run out of CPU before GPU, where the aggregated model's bound is
weak; ``skipped`` after 2-7.3 s on 8-GPU nodes, which have millions of configurations), then HiGHS.
``unified-device`` (its bound is never below capacity on these instances) and ``cpsat`` (much weaker than the
MILPs beyond 16 nodes) are available through ``--methods``. Every solver run gets ``--time-limit`` seconds of
wall time. ``--jobs N`` solves N instances side by side in local processes, ``--dask ADDRESS`` on the workers of
a Dask distributed cluster (:mod:`experiments.executors`); the rows are the same. An instance with no tasks
has optimum 0: every policy allocates 0 and its fragmentation rate is empty (no workload to measure it against);
an instance file with no nodes, or two files of one instance name, are refused before any work. An instance with
gangs (tasks of ``workers > 1``) is solved by the exact model (``milp-cbc``, ``milp-highs``, ``cpsat``); the other
methods report it ``skipped`` (no gap).

``--policies`` also takes ``module:attribute`` specs of your own policies (:mod:`fgdopt.policies`, "Your own
policy"): the fastest way to your policy's certified gap table. Its rows and columns are headed by its ``name``
attribute if it has one (:func:`fgdopt.policies.policy_labels`), else by the spec.

``--quick`` solves :data:`QUICK_SPECS` and :data:`QUICK_ADVERSARIAL` of the ``small`` suite (2 to 6 nodes) with
at most 5 s per solver run: about a minute on 2 cores.

``--output DIR`` writes ``gap.csv`` (one row per instance and method), the tables as Markdown (``gap.md``) and
``gap.png`` (per instance, each policy's allocation against the optimum and its bound,
:func:`fgdopt.plot.plot_gap`); each instance's
rows are kept in ``DIR/.runs/gap`` as they finish (:class:`experiments.executors.RunJournal`), ``--resume`` solves
only the instances not yet there with the same inputs, and a run stopped early writes ``gap.csv`` of the
instances that finished
(only where no file of that name is there yet: the outputs of an earlier complete run stay). CSV columns:
``instance, method, kind`` (policy / exact / relaxation / flawed), ``allocated_milli`` (the row's placement, empty
for pure bounds), ``bound_milli`` (exact and relaxation rows: the method's own proven bound, empty if it has none;
policy and flawed rows: the instance's best proven bound), ``status`` (policies: ``heuristic``; solvers:
``optimal``, ``feasible``, ``time_limit``, ``infeasible``, ``skipped``, ``error``), ``gap_pct`` (``100 (bound_milli
- allocated_milli) / bound_milli``; for a relaxation, how far its bound lies above the best incumbent),
``frag_rate`` (percent), ``wall_s``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from experiments.args import (
    names,
    non_negative_int,
    output_dir,
    parse_policies,
    positive,
    positive_int,
    study_parser,
    unknown_name,
)
from experiments.executors import (
    RunJournal,
    SweepInterrupted,
    add_dask_option,
    add_resume_option,
    executor,
    policy_digest,
    run_all,
    stop_message,
)
from experiments.outputs import staged
from fgdopt.cpus import usable_cpus
from fgdopt.frag import Workload, cluster_fragmentation
from fgdopt.instance import Instance
from fgdopt.plot import plot_gap
from fgdopt.policies import POLICY_NAMES, PolicyError, SpecError, policy_labels
from fgdopt.simulate import run_online
from fgdopt.state import validate
from fgdopt.suites import SUITES, load_suite_dir, suite
from formulations import EXACT, METHODS, solve

CSV_COLUMNS = ["instance", "method", "kind", "allocated_milli", "bound_milli", "status", "gap_pct", "frag_rate",
               "wall_s", "nodes", "gpus", "tasks", "incumbent_milli", "best_bound_milli", "bound_by", "claimed_milli"]
"""``gap.csv``'s columns: one row per instance and method, with the instance's size, best incumbent and best
bound repeated on each row so that every table can be rebuilt from the file alone."""
DEFAULT_METHODS = ("milp-cbc", "config-milp", "milp-highs", "lp", "config-lp", "unified-device-milp",
                   "per-gpu-dimension-milp")
QUICK_SPECS = (("G2x8", 2), ("T4x2", 4), ("P100x2", 4), ("V100x4", 4), ("openb", 4), ("G2x8+T4x2+P100x2", 6))
"""(mix, nodes) of the generated ``small`` instances that ``--quick`` solves (:data:`fgdopt.suites.SMALL_SPECS`)."""
QUICK_ADVERSARIAL = ("adv-pack-trap", "adv-cpu-starvation")
"""The hand-made instances ``--quick`` adds: greedy loses there (:func:`fgdopt.suites.adversarial_instances`)."""
QUICK_TIME_LIMIT = 5.0
"""Seconds per solver run under ``--quick`` (at most; a smaller ``--time-limit`` is kept)."""
OUTPUTS = ("gap.csv", "gap.md", "gap.png")
"""The files the study writes into ``--output``."""


def quick_instances(instances: list[Instance]) -> list[Instance]:
    """The instances of the ``small`` suite that ``--quick`` solves (:data:`QUICK_SPECS`, :data:`QUICK_ADVERSARIAL`),
    in suite order."""
    prefixes = tuple(f"rand-{mix}-n{n}-" for mix, n in QUICK_SPECS)
    return [i for i in instances if i.name.startswith(prefixes) or i.name in QUICK_ADVERSARIAL]


def parse_instances(text: str) -> str | Path:
    """``--instances``: a suite name (:data:`fgdopt.suites.SUITES`) or a folder of instance JSON files.

    Raises
    ------
    argparse.ArgumentTypeError : a file, a path that does not exist, or an unknown suite name (with the closest
        one); one line.
    """
    if text in SUITES:
        return text
    path = Path(text)
    if path.is_dir():
        return path
    expected = f"a suite ({', '.join(SUITES)}) or a folder of instance JSON files"
    if path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is a file; expected {expected} (put the file in a folder)")
    if os.sep in text or text.endswith(".json"):
        raise argparse.ArgumentTypeError(f"{text!r} not found; expected {expected}")
    raise unknown_name("instance suite", text, SUITES, "or a folder of instance JSON files")


@dataclass(frozen=True)
class Config:
    methods: tuple[str, ...]
    policies: tuple[str, ...]
    time_limit: float
    seed: int
    threads: int | None


def _pct(num: float, den: float) -> float:
    return 100.0 * num / den if den else 0.0


def instance_rows(instance: Instance, config: Config, progress=None) -> list[dict]:
    """All rows of one instance: the policies, then the solver methods (see the module docstring)."""
    # no tasks: nothing to place, and no workload to score FGD or the fragmentation with
    workload = Workload.from_tasks(instance.tasks) if len(instance.tasks) else None

    def frag_rate(placement) -> float | None:
        if placement is None or workload is None:
            return None
        return 100.0 * cluster_fragmentation(validate(instance.cluster, instance.tasks, placement), workload).rate

    def tick(method: str) -> None:
        if progress is not None:
            progress.set_postfix_str(f"{instance.name} / {method}", refresh=False)
            progress.update()

    rows: list[dict] = []
    warm, warm_milli, proven = None, -1, False
    for name in config.policies:
        if workload is None:
            placement, allocated, wall_s = None, 0, 0.0
        else:
            try:
                result = run_online(instance.cluster, instance.tasks, name, seed=config.seed, workload=workload)
            except PolicyError as exc:
                raise PolicyError(f"instance {instance.name}: {exc}") from exc
            placement, allocated, wall_s = result.placement, result.allocated_milli, result.wall_s
        if allocated > warm_milli:
            warm, warm_milli = placement, allocated
        rows.append({"method": name, "kind": "policy", "allocated_milli": allocated, "status": "heuristic",
                     "frag_rate": frag_rate(placement), "wall_s": wall_s})
        tick(name)
    for method in config.methods:
        if proven and method in EXACT:  # the portfolio stops at the first proof of optimality
            tick(method)
            continue
        sol = solve(instance, method, time_limit=config.time_limit, warm_start=warm, threads=config.threads)
        has_placement = sol.placement is not None
        if sol.kind == "exact" and has_placement and sol.objective > warm_milli:
            warm, warm_milli = sol.placement, sol.objective
        proven |= sol.kind == "exact" and sol.status == "optimal"
        rows.append({"method": method, "kind": sol.kind, "allocated_milli": sol.objective if has_placement else None,
                     "own_bound": sol.bound, "status": sol.status, "claimed_milli": sol.claimed,
                     "frag_rate": frag_rate(sol.placement), "wall_s": sol.wall_s})
        tick(method)

    incumbent = max((r["allocated_milli"] for r in rows if r["allocated_milli"] is not None), default=0)
    trivial = min(int(instance.tasks.gpu_demand.sum()), instance.cluster.gpu_capacity_milli)
    bounds = [(r["own_bound"], r["method"]) for r in rows
              if r.get("own_bound") is not None and r["kind"] in ("exact", "relaxation")]
    best_bound, bound_by = min([*bounds, (trivial, "min(demand, capacity)")], key=lambda b: b[0])
    if best_bound < incumbent:  # every placement was validated, so this is a bug in a bound
        raise RuntimeError(f"{instance.name}: bound {best_bound} of {bound_by} is below a feasible {incumbent}")
    for r in rows:
        own = r.pop("own_bound", None)
        r["bound_milli"] = own if r["kind"] in ("exact", "relaxation") else best_bound
        # a bound without a placement is measured against the best incumbent; a flawed run that placed nothing
        # (skipped, error) has no gap
        ref = r["allocated_milli"] if r["allocated_milli"] is not None or r["kind"] == "flawed" else incumbent
        r["gap_pct"] = None if r["bound_milli"] is None or ref is None else _pct(r["bound_milli"] - ref,
                                                                                 r["bound_milli"])
        r.update(instance=instance.name, nodes=instance.cluster.n_nodes, gpus=instance.cluster.total_gpus,
                 tasks=len(instance.tasks), incumbent_milli=incumbent, best_bound_milli=best_bound,
                 bound_by=bound_by)
    return rows


def run_key(instance: Instance, config: Config) -> dict:
    """The inputs of one instance's rows (its content and the study's parameters): its :class:`RunJournal` key."""
    return {"instance": instance.to_dict(),
            "config": asdict(config) | {"policies": [policy_digest(p) for p in config.policies]}}


def run(instances: list[Instance], config: Config, jobs: int = 1, dask: str | None = None,
        journal: RunJournal | None = None) -> pd.DataFrame:
    """Rows of every instance as a DataFrame (columns :data:`CSV_COLUMNS`), in the
    order of ``instances``: inline, in ``jobs`` local processes or on the Dask cluster at ``dask``
    (:func:`experiments.executors.executor`). With a ``journal``, each instance's rows are kept as they finish and
    the instances already there are not solved again.

    Raises
    ------
    SweepInterrupted : with a journal, a run failed or was interrupted; ``partial`` holds the frame of the
        instances that finished.
    """
    per_instance = len(config.policies) + len(config.methods)
    keys = [run_key(inst, config) for inst in instances]
    with (tqdm(total=len(instances) * per_instance, desc="gap", unit="run", file=sys.stderr,
               disable=None) as progress, executor(jobs, dask) as pool):
        inline = pool is None                     # inline: the bar advances per method of the runs it solves
        reused = {k for k in range(len(instances)) if journal is not None and journal.load(keys[k])[0]}

        def done(k: int) -> None:
            if not inline or k in reused:
                progress.set_postfix_str(instances[k].name, refresh=False)
                progress.update(per_instance)

        calls = [(inst, config, progress if inline else None) for inst in instances]
        try:
            parts = run_all(pool, instance_rows, calls, done, journal=journal, keys=keys)
        except SweepInterrupted as stop:
            stop.partial = frame(stop.finished())
            raise
    return frame(parts)


def frame(parts: list[list[dict]]) -> pd.DataFrame:
    """The rows of the instances' results ``parts`` (each from :func:`instance_rows`) as one frame."""
    return pd.DataFrame([row for part in parts for row in part], columns=CSV_COLUMNS)


# -- tables ------------------------------------------------------------------------------------

def _gpus(milli: float) -> str:
    return f"{milli / 1000:.2f}"


def _policy_gap(alloc: float, incumbent: float, bound: float) -> str:
    """The gap to the optimum in percent: exact when proven, else [vs incumbent, vs bound]."""
    lo, hi = _pct(incumbent - alloc, incumbent), _pct(bound - alloc, bound)
    return f"{hi:.2f}" if incumbent >= bound else f"[{lo:.2f}, {hi:.2f}]"


def instance_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per instance: size, each policy's GPUs (gap %), the optimum / incumbent and the best bound."""
    out = []
    for name, g in df.groupby("instance", sort=False):
        first = g.iloc[0]
        proven = first.incumbent_milli >= first.best_bound_milli
        row = {"instance": name, "nodes": first.nodes, "GPUs": first.gpus, "tasks": first.tasks}
        for r in g[g.kind == "policy"].itertuples():
            row[r.method] = (f"{_gpus(r.allocated_milli)} "
                             f"({_policy_gap(r.allocated_milli, first.incumbent_milli, first.best_bound_milli)})")
        exact = g[g.kind == "exact"]
        status = ",".join(sorted(set(exact.status))) if len(exact) else "none"
        row["optimum (or incumbent)"] = f"{_gpus(first.incumbent_milli)} ({'optimal' if proven else status})"
        row["best bound"] = f"{_gpus(first.best_bound_milli)} ({first.bound_by})"
        out.append(row)
    return pd.DataFrame(out).fillna("")


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per policy: mean / max gap (vs best bound, and vs best incumbent), optimal count, wins / losses vs FGD
    (instances where it allocates more / fewer GPUs than FGD; empty for FGD itself). The printed tables head these
    columns in words (:data:`HEADINGS`)."""
    pol = df[df.kind == "policy"].copy()
    pol["gap_lo"] = [_pct(i - a, i) for i, a in zip(pol.incumbent_milli, pol.allocated_milli, strict=True)]
    pol["optimal"] = (pol.allocated_milli >= pol.best_bound_milli)
    fgd = pol[pol.method == "fgd"].set_index("instance").allocated_milli
    out = []
    for name, g in pol.groupby("method", sort=False):
        vs = g.set_index("instance").allocated_milli - fgd.reindex(g.instance).to_numpy() if len(fgd) else None
        against = vs is not None and name != "fgd"          # FGD against itself: no wins, no losses
        out.append({"policy": name, "mean gap % (vs bound)": round(g.gap_pct.mean(), 3),
                    "max gap % (vs bound)": round(g.gap_pct.max(), 3),
                    "mean gap % (vs incumbent)": round(g.gap_lo.mean(), 3),
                    "proven optimal": f"{int(g.optimal.sum())}/{len(g)}",
                    "wins vs FGD": int((vs > 0).sum()) if against else "",
                    "losses vs FGD": int((vs < 0).sum()) if against else ""})
    return pd.DataFrame(out)


HEADINGS = {"optimum (or incumbent)": "optimum (or best found)",
            "mean gap % (vs bound)": "mean gap to the bound (%)", "max gap % (vs bound)": "max gap to the bound (%)",
            "mean gap % (vs incumbent)": "mean gap to the best found (%)", "proven optimal": "optimal (proven)",
            "wins vs FGD": "more GPUs than FGD", "losses vs FGD": "fewer GPUs than FGD"}
"""The headings of the printed and Markdown tables in words (the tables' column -> heading)."""


def bounds_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per solver method: status, allocated / bound (GPUs), the remaining gap and wall time, per instance."""
    sol = df[df.kind != "policy"]
    out = pd.DataFrame({
        "instance": sol.instance, "method": sol.method, "kind": sol.kind, "status": sol.status,
        "allocated GPUs": [_gpus(a) if pd.notna(a) else "" for a in sol.allocated_milli],
        "bound GPUs": [_gpus(b) if k in ("exact", "relaxation") and pd.notna(b) else ""
                       for b, k in zip(sol.bound_milli, sol.kind, strict=True)],
        "gap %": sol.gap_pct.round(3), "wall s": sol.wall_s.round(2),
    })
    out["claimed GPUs"] = [_gpus(c) if pd.notna(c) else "" for c in sol.claimed_milli]
    return out


def frag_table(df: pd.DataFrame) -> pd.DataFrame:
    """Fragmentation rate (%) of every final placement: one row per instance, one column per method."""
    have = df[df.frag_rate.notna()]
    return have.pivot_table(index="instance", columns="method", values="frag_rate", sort=False).round(2).reset_index()


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.gap", __doc__)
    parser.add_argument("--instances", type=parse_instances, default=None,
                        help=f"one of {', '.join(SUITES)} or a folder of instance JSON files (default: small)")
    parser.add_argument("--quick", action="store_true",
                        help=f"{len(QUICK_SPECS) + len(QUICK_ADVERSARIAL)} small instances, at most "
                        f"{QUICK_TIME_LIMIT:g} s per solver run (about a minute on 2 cores)")
    parser.add_argument("--methods", type=names(METHODS, "method"), default=list(DEFAULT_METHODS),
                        help=f"comma-separated solver methods from {', '.join(METHODS)} "
                        f"(default: {','.join(DEFAULT_METHODS)})")
    parser.add_argument("--policies", type=parse_policies, default=list(POLICY_NAMES),
                        help="comma-separated online policies: names or module:attribute specs of your own "
                        "(default: all built-in)")
    parser.add_argument("--time-limit", type=positive, default=10.0, help="seconds per solver run (default: 10)")
    parser.add_argument("--jobs", type=positive_int, default=usable_cpus(),
                        help="instances solved in parallel (default: the number of cores)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--threads", type=positive_int, default=None, help="solver threads (default: all cores)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="suite and policy seed (default: 0)")
    parser.add_argument("--output", type=output_dir, default=None,
                        help="write gap.csv, the tables (gap.md) and the figure (gap.png) here")
    parser.add_argument("--format", choices=("markdown", "csv"), default="markdown")
    args = parser.parse_args(argv)

    methods = tuple(args.methods)
    policies = tuple(args.policies)
    if args.resume and args.output is None:
        parser.error("--resume needs --output (the folder of the finished runs)")
    if args.quick and args.instances is not None:
        parser.error("--quick solves its own instances of the small suite; drop --instances")
    source = "small" if args.instances is None else args.instances
    try:
        instances = suite(source, seed=args.seed) if source in SUITES else load_suite_dir(source)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(f"argument --instances: {exc}")
    time_limit = args.time_limit
    if args.quick:
        instances, time_limit = quick_instances(instances), min(time_limit, QUICK_TIME_LIMIT)
    config = Config(methods, policies, time_limit, args.seed, args.threads)
    journal = RunJournal.for_study(args.output, "gap", resume=args.resume)
    try:
        df = run(instances, config, args.jobs, args.dask, journal)
    except SweepInterrupted as stop:
        with staged(args.output, partial=True) as tmp:
            stop.partial.to_csv(tmp / "gap.csv", index=False)
        return stop_message(stop, parser.prog)
    except (PolicyError, SpecError) as exc:   # without --output: nothing was kept
        return stop_message(exc, parser.prog)
    df["method"] = df["method"].replace(policy_labels(policies))     # a policy of your own by its name

    tables = {"instances": instance_table(df), "summary": summary_table(df), "bounds": bounds_table(df),
              "fragmentation": frag_table(df)}
    tables = {key: table.rename(columns=HEADINGS) for key, table in tables.items()}
    titles = {"instances": "Allocated GPUs per policy (gap to the optimum, %; [low, high] where not proven)",
              "summary": "Summary per policy", "bounds": "Exact, relaxed and flawed formulations",
              "fragmentation": "Fragmentation rate of the final placements (%)"}
    csv = df[CSV_COLUMNS]
    if args.format == "csv":
        print(csv.to_csv(index=False), end="")
    else:
        for key, table in tables.items():
            print(f"## {titles[key]}\n\n{table.to_markdown(index=False)}\n")
    if args.output is not None:
        with staged(args.output) as tmp:
            csv.to_csv(tmp / "gap.csv", index=False)
            (tmp / "gap.md").write_text("".join(f"## {titles[k]}\n\n{t.to_markdown(index=False)}\n\n"
                                                for k, t in tables.items()))
            if len(csv):
                plot_gap(csv, tmp / "gap.png")
    return 0


if __name__ == "__main__":
    from experiments.gap import main as importable_main  # its functions and classes pickle by name (Dask workers)

    sys.exit(importable_main())
