"""The paper's tables, figures and inline numbers, from the cached study results alone.

:func:`render` reads ``paper/results/<study>/*.csv`` (written by :mod:`experiments.paper`) and returns every
generated item: Markdown tables and the few numbers the prose quotes. :func:`write_report` writes them to
``paper/tables/<name>.md``, draws ``paper/figures/<name>.png``, and refills the generated blocks of
``paper/paper.md``, which are delimited as

* ``<!-- table:NAME -->`` ... ``<!-- /table -->`` (a table, on lines of their own), and
* ``<!-- value:NAME -->`` ... ``<!-- /value -->`` (a number inside a sentence).

Nothing here runs a study or needs the openb trace: the openb capacity comes from the shipped node-type table
and the paper's published allocations from :func:`fgdopt.refsim.paper_allocation`. Units: allocations in
percent of the cluster's GPU capacity, GPUs = milli-GPU / 1000.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from experiments import frontier, gap, topology
from fgdopt.model import GPU_MILLI
from fgdopt.plot import (
    plot_curves,
    plot_defrag,
    plot_failures,
    plot_frontier,
    plot_frontier_variants,
    plot_hetero,
    plot_interference,
    plot_mig,
    plot_timeline,
    plot_topology_misplaced,
    plot_variant_grid,
)
from fgdopt.policies import PAPER_POLICIES, POLICY_NAMES
from fgdopt.refsim import paper_allocation
from fgdopt.suites import openb_node_types
from fgdopt.timeline.failures import job_mtbf_s, young_daly_s

PAPER_DIR = Path(__file__).resolve().parents[1] / "paper"
BLOCK = re.compile(r"(<!-- (table|value):([\w-]+) -->)(.*?)(<!-- /\2 -->)", re.DOTALL)
BEST_FIRST = tuple(reversed(PAPER_POLICIES))        # fgd, best-fit, gpu-packing, gpu-clustering, dot-product, random


def openb_capacity_milli() -> int:
    """The openb GPU cluster's capacity (milli-GPU), from the shipped node-type table."""
    types = openb_node_types()
    return int((types["gpu"] * types["count"]).sum()) * GPU_MILLI


def _csv(results: Path, study: str, name: str) -> pd.DataFrame | None:
    path = results / study / name
    return pd.read_csv(path) if path.is_file() else None


def _seeds(seeds: pd.Series) -> str:
    values = sorted(set(int(s) for s in seeds))
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}–{values[-1]}"
    return ", ".join(map(str, values))


def _span(values: pd.Series) -> str:
    """``min–max`` of ``values`` (two decimals), or the one value when they are all equal."""
    lo, hi = f"{values.min():.2f}", f"{values.max():.2f}"
    return lo if lo == hi else f"{lo}–{hi}"


def _ordered(frame: pd.DataFrame, order: tuple[str, ...] = POLICY_NAMES) -> list[str]:
    present = list(dict.fromkeys(frame["policy"]))
    return [p for p in order if p in present] + [p for p in present if p not in order]


# -- the replay against the paper ----------------------------------------------------------------------------

def fidelity_default(results: Path) -> dict[str, str]:
    """GPU allocation at 130% on the default trace per policy, against the paper's 10-seed mean."""
    summary = _csv(results, "replay-default", "summary.csv")
    if summary is None:
        return {}
    paper = paper_allocation().query("trace == 'default'").set_index("policy")["alloc_ratio_130"]
    lines = ["| policy | allocation at 130% (%), mean [min–max] | paper (%) | difference | unallocated GPUs |",
             "|:--|--:|--:|--:|--:|"]
    diffs = {}
    for policy in _ordered(summary):
        part = summary[summary["policy"] == policy]
        mean = part["alloc_ratio_130"].mean()
        ref, diff = "–", ""
        if policy in paper.index:
            diffs[policy] = mean - paper[policy]
            ref, diff = f"{paper[policy]:.2f}", f"{diffs[policy]:+.2f}"
        lines.append(f"| {policy} | {mean:.2f} [{part['alloc_ratio_130'].min():.2f}–"
                     f"{part['alloc_ratio_130'].max():.2f}] | {ref} | {diff} | "
                     f"{part['unallocated_gpus_130'].mean():.1f} |")
    worst = max(diffs, key=lambda p: abs(diffs[p]))
    return {"fidelity_default": "\n".join(lines),
            "default_seeds": _seeds(summary["seed"]),
            "default_max_diff": f"{abs(diffs[worst]):.2f}",
            "default_fgd_unallocated":
                f"{summary.loc[summary['policy'] == 'fgd', 'unallocated_gpus_130'].mean():.1f}"}


def fidelity_variants(results: Path) -> dict[str, str]:
    """Per trace variant: each paper policy's allocation at 130% (mean over the run's seeds), the paper's
    deviation where it publishes the variant, and FGD's margin over the best baseline."""
    summary = _csv(results, "replay-variants", "summary.csv")
    if summary is None:
        return {}
    paper = paper_allocation().set_index(["trace", "policy"])["alloc_ratio_130"]
    mean = summary.groupby(["trace", "policy"], sort=False)["alloc_ratio_130"].mean().unstack("policy")
    policies = _ordered(summary, BEST_FIRST)
    lines = ["| trace | " + " | ".join(policies) + " | FGD margin | mean abs. deviation from paper |",
             "|:--" + "|--:" * (len(policies) + 2) + "|"]
    deviations, margins = [], {}
    for trace, row in mean.iterrows():
        devs = [abs(row[p] - paper[(trace, p)]) for p in policies if (trace, p) in paper.index]
        deviations += devs
        if "fgd" in policies:
            margins[trace] = row["fgd"] - max(row[p] for p in policies if p not in ("fgd", "fgd-exact"))
        lines.append(f"| {trace} | " + " | ".join(f"{row[p]:.2f}" for p in policies)
                     + f" | {margins.get(trace, float('nan')):+.2f} | "
                     + (f"{sum(devs) / len(devs):.2f}" if devs else "–") + " |")
    dev = pd.Series(deviations)
    return {"fidelity_variants": "\n".join(lines),
            "variants_count": str(len(mean)),
            "variants_seeds": _seeds(summary["seed"]),
            "variants_fgd_leads": str(sum(m > 0 for m in margins.values())),
            "variants_published": str(sum(t in paper.index.get_level_values(0) for t in mean.index)),
            "variants_mad": f"{dev.mean():.2f}", "variants_max_dev": f"{dev.max():.2f}",
            "variants_min_margin": f"{min(margins.values()):.2f}",
            "variants_max_margin": f"{max(margins.values()):.2f}"}


def refsim_table(results: Path) -> dict[str, str]:
    """Step-by-step agreement with the reference simulator's logged FGD run."""
    frame = _csv(results, "refsim", "refsim.csv")
    if frame is None:
        return {}
    r = frame.iloc[0]
    table = ("| arrivals | same node as the reference | largest F(M) difference (milli-GPU) | fgdopt's own run "
             "| reference |\n|--:|--:|--:|--:|--:|\n"
             f"| {r.steps:,} | {r.same_node:,} ({100 * r.same_node / r.steps:.2f}%) | {r.max_frag_diff_milli:.3f} | "
             f"{r.own_alloc_pct:.2f}% | {r.reference_alloc_pct:.2f}% |")
    return {"refsim": table, "refsim_same": f"{r.same_node:,}", "refsim_steps": f"{r.steps:,}"}


def runtime_table(results: Path) -> dict[str, str]:
    """Replay time per policy on the full openb default trace at ratio 1.3 (one seed)."""
    frame = _csv(results, "runtime", "bench_replay.csv")
    if frame is None:
        return {}
    lines = ["| policy | arrivals | runs | CPU s | wall s | arrivals per CPU second (median) |",
             "|:--|--:|--:|--:|--:|--:|"]
    for policy in _ordered(frame):
        part = frame[frame["policy"] == policy]
        lines.append(f"| {policy} | {part['tasks'].iloc[0]:,} | {len(part)} | {_span(part['cpu_s'])} | "
                     f"{_span(part['wall_s'])} | {part['tasks'].iloc[0] / part['cpu_s'].median():,.0f} |")
    fgd = frame.loc[frame["policy"] == "fgd", "cpu_s"]
    return {"runtime": "\n".join(lines), "runtime_fgd_cpu": f"{fgd.median():.1f}"}


# -- the optimum ---------------------------------------------------------------------------------------------

def _gap(results: Path, study: str, key: str) -> dict[str, str]:
    frame = _csv(results, study, "gap.csv")
    if frame is None:
        return {}
    first = frame.groupby("instance", sort=False).first()
    proven = int((first["incumbent_milli"] >= first["best_bound_milli"]).sum())
    summary = gap.summary_table(frame).drop(columns=["mean gap % (vs incumbent)"])
    fgd = frame.loc[frame["method"] == "fgd", "gap_pct"]
    open_gap = 100.0 * (first["best_bound_milli"] - first["incumbent_milli"]) / first["best_bound_milli"].clip(lower=1)
    unproven = len(first) - proven
    still_open = (f"on the other {unproven} the best bound is at most {open_gap.max():.3f}% above the best placement"
                  if unproven else "no proof is left open")
    return {f"gap_{key}": summary.to_markdown(index=False), f"gap_{key}_instances": str(len(first)),
            f"gap_{key}_proven": str(proven), f"gap_{key}_fgd_mean": f"{fgd.mean():.1f}", f"gap_{key}_open": still_open}


def frontier_table(results: Path) -> dict[str, str]:
    """The full-scale frontier: each policy's allocation and the optimum's incumbent and bound, per point."""
    frame = _csv(results, "frontier", "frontier.csv")
    if frame is None:
        return {}
    capacity = openb_capacity_milli()
    # frontier.csv has no status column: an optimum is proven where its incumbent meets its bound, certified where
    # bound - incumbent is within 0.1 % of capacity (the study's tolerance)
    gap = frame["bound_milli"] - frame["allocated_milli"]
    status = np.where(gap <= 0, "optimal", np.where(gap <= 0.001 * capacity, "within 0.1%", "open"))
    frame = frame.assign(status=status)
    policies = list(dict.fromkeys(frame.loc[frame["kind"] == "policy", "method"]))
    lines = ["| trace | arrived % | seeds | " + " | ".join(f"{p} GPUs" for p in policies)
             + " | optimum GPUs (incumbent) | bound GPUs | bound − incumbent | status |",
             "|:--|--:|--:" + "|--:" * (len(policies) + 3) + "|:--|"]
    for (trace, pct), part in frame.groupby(["trace", "arrived_pct"], sort=False):
        opt = part[part["kind"] == "optimum"]
        cells = [f"{part.loc[part['method'] == p, 'allocated_milli'].mean() / GPU_MILLI:.1f}" for p in policies]
        incumbent, bound = opt["allocated_milli"] / GPU_MILLI, opt["bound_milli"] / GPU_MILLI
        lines.append(f"| {trace} | {pct} | {part['seed'].nunique()} | " + " | ".join(cells)
                     + f" | {incumbent.mean():.2f} | {bound.mean():.2f} | {(bound - incumbent).mean():.2f} | "
                     + ", ".join(sorted(set(opt["status"]))) + " |")
    capacities = dict.fromkeys(frame["trace"], capacity)
    default = frame[frame["trace"] == "default"] if (frame["trace"] == "default").any() else frame
    return {"frontier": "\n".join(lines),
            "frontier_headline": " ".join(frontier.headline(default, capacities)),
            **frontier_variants(frame, capacity)}


def frontier_variants(frame, capacity: int, policy: str = "fgd", tol: float = 0.001) -> dict[str, str]:
    """Per trace variant and point (means over seeds, GPUs): what ``policy`` leaves unallocated against the
    certified floor (capacity - bound: no placement of the same arrived tasks leaves fewer), the best placement
    found, and the certified gap (bound - incumbent) in % of capacity; how many points are certified within
    ``tol`` of capacity."""
    points = sorted(frame["arrived_pct"].unique())
    head = ["variant"] + [f"{p}%: {label}" for p in points for label in (f"{policy} idle", "floor", "gap %")]
    lines = ["| " + " | ".join(head) + " |", "|:--" + "|--:" * (len(head) - 1) + "|"]
    opt = frame[frame["kind"] == "optimum"]
    gap = (opt["bound_milli"] - opt["allocated_milli"]) / capacity
    certified = int((gap <= tol + 1e-12).sum())
    for trace, part in frame.groupby("trace", sort=False):
        cells = []
        for p in points:
            at = part[part["arrived_pct"] == p]
            o = at[at["kind"] == "optimum"]
            idle = (capacity - at.loc[at["method"] == policy, "allocated_milli"]).mean() / GPU_MILLI
            floor = (capacity - o["bound_milli"]).mean() / GPU_MILLI
            worst = 100.0 * ((o["bound_milli"] - o["allocated_milli"]) / capacity).max()
            cells += [f"{idle:.1f}", f"{floor:.1f}", f"{worst:.3f}" + ("" if worst <= 100 * tol + 1e-9 else " (open)")]
        lines.append(f"| {trace} | " + " | ".join(cells) + " |")
    return {"frontier_variants": "\n".join(lines), "frontier_certified": f"{certified} of {len(opt)}",
            "frontier_variant_count": str(frame["trace"].nunique())}


# -- the other fragmentation sources -------------------------------------------------------------------------

def defrag_table(results: Path) -> dict[str, str]:
    """Per method and move budget, summed over the instances: admitted GPUs, and on how many instances the method
    admits as much as the exact optimum (where the exact run proved it)."""
    frame = _csv(results, "defrag", "defrag.csv")
    if frame is None:
        return {}
    exact = frame[frame["kind"] == "exact"]
    proven = exact[exact["status"] == "optimal"].set_index(["trace", "policy", "budget"])["admitted_milli"]
    budgets = sorted(frame["budget"].unique())
    lines = ["| method | " + " | ".join(f"K = {b}" for b in budgets) + " |", "|:--" + "|--:" * len(budgets) + "|"]
    for method, part in frame.groupby("method", sort=False):
        cells = []
        for b in budgets:
            rows = part[part["budget"] == b].set_index(["trace", "policy", "budget"])["admitted_milli"]
            at_opt = proven.reindex(rows.index).dropna()
            hits = int((rows.reindex(at_opt.index) >= at_opt).sum())
            cells.append(f"{rows.sum() / GPU_MILLI:.2f} ({hits}/{len(at_opt)})")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return {"defrag": "\n".join(lines), "defrag_instances": str(frame["trace"].nunique()),
            "defrag_exact_runs": str(len(exact)), "defrag_exact_proven": str(int((exact["status"] == "optimal").sum()))}


def mig_table(results: Path) -> dict[str, str]:
    """Accepted memory slices per method as a percentage of the best exact incumbent, per size and arrival."""
    frame = _csv(results, "mig", "mig.csv")
    if frame is None:
        return {}
    lines = ["| nodes | arrival % | instances | " + " | ".join(["method", "accepted slices (% of optimum)",
                                                                   "status"]) + " |", "|--:|--:|--:|:--|--:|:--|"]
    for (nodes, arrival), part in frame.groupby(["nodes", "arrival"], sort=False):
        best = part[part["kind"] == "exact"].groupby("instance")["accepted_slices"].max()
        for method, rows in part[part["kind"] != "bound"].groupby("method", sort=False):
            share = (rows.set_index("instance")["accepted_slices"] / best.reindex(rows["instance"])).mean()
            status = ", ".join(sorted(set(rows["status"]))) if (rows["kind"] == "exact").all() else ""
            lines.append(f"| {nodes} | {arrival} | {len(rows)} | {method} | {100 * share:.1f} | {status} |")
    exact = frame[frame["kind"] == "exact"]
    return {"mig": "\n".join(lines), "mig_exact_runs": str(len(exact)),
            "mig_exact_proven": str(int((exact["status"] == "optimal").sum()))}


def topology_tables(results: Path) -> dict[str, str]:
    replays = _csv(results, "topology", "topology.csv")
    exact = _csv(results, "topology", "topology_exact.csv")
    if replays is None or exact is None:
        return {}
    return {"topology": topology.summary_table(replays), "topology_exact": topology.exact_table(exact)}


# -- over time ------------------------------------------------------------------------------------------------

def timeline_tables(results: Path) -> dict[str, str]:
    """Per offered load, policy and queue (means over seeds): time-averaged allocation, wait, JCT, job-hours blocked
    by fragmentation, and at the sampled instants the GPUs placement leaves idle and the pending GPUs admissible
    without moving, each as [against the incumbent, against the bound] of the certified optimum."""
    runs = _csv(results, "timeline", "timeline.csv")
    optimum = _csv(results, "timeline", "optimum.csv")
    if runs is None or optimum is None:
        return {}
    keys = ["load", "policy", "queue"]
    gap_ = optimum.assign(lo=(optimum["incumbent_milli"] - optimum["current_milli"]) / GPU_MILLI,
                          hi=(optimum["bound_milli"] - optimum["current_milli"]) / GPU_MILLI)
    per = gap_.groupby([*keys, "question"])[["lo", "hi"]].mean()
    lines = ["| load | policy | queue | allocation % (time avg) | mean wait s | p99 wait s | mean JCT s | "
             "blocked job-hours | GPUs idle by placement | pending GPUs admissible without moves |",
             "|--:|:--|:--|--:|--:|--:|--:|--:|--:|--:|"]
    for (load, policy, queue), part in runs.groupby(keys, sort=True):
        cells = []
        for question in ("placement", "admission"):
            lo, hi = per.loc[(load, policy, queue, question)] if (load, policy, queue, question) in per.index \
                else (float("nan"), float("nan"))
            cells.append(f"[{lo:.1f}, {hi:.1f}]")
        lines.append(f"| {load:g} | {policy} | {queue} | {part['alloc_time_avg_pct'].mean():.2f} | "
                     f"{part['mean_wait_s'].mean():,.1f} | {part['p99_wait_s'].mean():,.0f} | "
                     f"{part['mean_jct_s'].mean():,.0f} | {part['blocked_job_hours'].mean():,.1f} | "
                     + " | ".join(cells) + " |")
    proven = optimum[optimum["question"] == "placement"]
    gap_gpus = (proven["bound_milli"] - proven["incumbent_milli"]) / GPU_MILLI
    items = {"timeline": "\n".join(lines), "timeline_runs": str(len(runs)),
             "timeline_seeds": _seeds(runs["seed"]), "timeline_measured": f"{int(runs['measured'].max()):,}",
             "timeline_instants": str(len(proven)), "timeline_opt_gap_max": f"{gap_gpus.max():.1f}",
             "timeline_certified": str(int((gap_gpus <= 0.001 * openb_capacity_milli() / GPU_MILLI).sum())),
             "timeline_opt_wall_max": f"{optimum['wall_s'].max():.0f}",
             "timeline_top_load": f"{runs['load'].max():g}"}
    # the comparisons the prose quotes: backfill at the highest load, FIFO at load 0.9 (means over seeds)
    mean = runs.groupby(keys).mean(numeric_only=True)
    calm = mean[(mean["pending_time_avg"] == 0) & (mean.index.get_level_values("load") < 1)]
    items["timeline_knob"] = ", ".join(f"{row.alloc_time_avg_pct:.2f}% at load {load:g} ({policy}, {queue})"
                                       for (load, policy, queue), row in calm.groupby(level="load").head(1).iterrows())
    idle = per.xs("placement", level="question")
    top = runs["load"].max()
    for policy in ("fgd", "best-fit", "random"):
        name = policy.replace("-", "_")
        for key, (load, queue, column, fmt) in {
                "alloc": (top, "backfill", "alloc_time_avg_pct", "{:.2f}"),
                "multi_wait": (top, "backfill", "mean_wait_s_multi", "{:,.0f}"),
                "sharing_wait": (top, "backfill", "mean_wait_s_sharing", "{:,.0f}"),
                "wait": (top, "backfill", "mean_wait_s", "{:,.0f}"),
                "fifo_alloc": (top, "fifo", "alloc_time_avg_pct", "{:.1f}"),
                "fifo09_wait": (0.9, "fifo", "mean_wait_s", "{:,.0f}")}.items():
            if (load, policy, queue) in mean.index:
                items[f"timeline_{key}_{name}"] = fmt.format(mean.loc[(load, policy, queue), column])
        if (top, policy, "backfill") in idle.index:
            lo, hi = idle.loc[(top, policy, "backfill")]
            items[f"timeline_idle_{name}"] = f"{lo:.0f}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}"
    return items


def bench_timeline_values(results: Path) -> dict[str, str]:
    """The time engine's speed on the whole openb cluster (FGD and best-fit, backfill, load 0.9)."""
    frame = _csv(results, "bench-timeline", "bench_timeline.csv")
    if frame is None:
        return {}
    lines = ["| stream jobs | jobs | policy | events | CPU s | wall s | events per CPU second | CPU µs per job |",
             "|--:|--:|:--|--:|--:|--:|--:|--:|"]
    for row in frame.itertuples():
        lines.append(f"| {row.stream_jobs:,} | {row.jobs:,} | {row.policy} | {row.events:,} | {row.cpu_s:.2f} | "
                     f"{row.wall_s:.2f} | {row.events_per_s:,.0f} | {row.us_per_job:.0f} |")
    fgd = frame[frame["policy"] == "fgd"].set_index("stream_jobs")
    return {"bench_timeline": "\n".join(lines), "bench_timeline_fgd_20k": f"{fgd.loc[20000, 'cpu_s']:.1f}"
            if 20000 in fgd.index else "n/a"}


def preemption_table(results: Path) -> dict[str, str]:
    """Per offered load and mechanism (means over seeds): allocation, wait, JCT, pending GPU-hours over the window
    (from the sampled series), job-hours blocked by fragmentation, evictions, GPU-hours lost and spent on overhead,
    thrashed jobs."""
    runs = _csv(results, "preemption", "timeline.csv")
    series = _csv(results, "preemption", "series.csv")
    if runs is None or series is None:
        return {}
    fifo_runs, fifo_series = _csv(results, "preemption-fifo", "timeline.csv"), _csv(results, "preemption-fifo",
                                                                                      "series.csv")
    if fifo_runs is not None and fifo_series is not None:        # FIFO without a mechanism, on the same jobs
        runs, series = pd.concat([runs, fifo_runs]), pd.concat([series, fifo_series])
    runs = runs.assign(mechanism=runs["queue"] + " / " + runs["mechanism"])
    series = series.assign(mechanism=series["queue"] + " / " + series["mechanism"])
    keys = ["load", "mechanism"]
    step = series.groupby([*keys, "seed"])["time_s"].diff().median()
    pending_h = (series.groupby([*keys, "seed"])["pending_milli"].sum() * step / GPU_MILLI / 3600
                 ).groupby(keys).mean()
    lines = ["| load | queue / mechanism | allocation % | mean wait s | p99 wait s | mean JCT s | p99 JCT s | "
             "pending GPU-hours | blocked job-hours | preemptions | suspensions | migrations | lost GPU-hours | "
             "overhead GPU-hours | thrashed jobs |",
             "|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    mean = runs.groupby(keys, sort=False).mean(numeric_only=True)
    for (load, mechanism), row in mean.sort_index(level="load", sort_remaining=False).iterrows():
        lines.append(f"| {load:g} | {mechanism} | {row.alloc_time_avg_pct:.2f} | {row.mean_wait_s:,.0f} | "
                     f"{row.p99_wait_s:,.0f} | {row.mean_jct_s:,.0f} | {row.p99_jct_s:,.0f} | "
                     f"{pending_h.loc[(load, mechanism)]:,.0f} | "
                     f"{row.blocked_job_hours:,.1f} | {row.preemptions:,.0f} | {row.suspensions:,.0f} | "
                     f"{row.migrations:,.0f} | "
                     f"{row.lost_gpu_s / 3600:,.1f} | {row.overhead_gpu_s / 3600:,.1f} | {row.thrashed_jobs:,.0f} |")
    items = {"preemption": "\n".join(lines), "preemption_runs": str(len(runs)),
             "preemption_measured": f"{int(runs['measured'].max()):,}"}
    top = runs["load"].max()
    wanted = {(top, f"backfill / {m}") for m in ("none", "affinode", "priority", "transparent")}
    if wanted <= set(mean.index):
        none, aff = mean.loc[(top, "backfill / none")], mean.loc[(top, "backfill / affinode")]
        prio, trans = mean.loc[(top, "backfill / priority")], mean.loc[(top, "backfill / transparent")]
        cut = 100 * (1 - aff.blocked_job_hours / none.blocked_job_hours) if none.blocked_job_hours else 0.0
        items.update({
            "preemption_top_load": f"{top:g}", "preemption_quiet": str(int(mean.loc[mean.index.get_level_values(
                "load") < 1, ["preemptions", "suspensions", "migrations"]].to_numpy().sum())),
            "preemption_blocked_cut": f"{cut:.0f}", "preemption_blocked_none": f"{none.blocked_job_hours:,.0f}",
            "preemption_blocked_affinode": f"{aff.blocked_job_hours:,.0f}",
            "preemption_alloc_none": f"{none.alloc_time_avg_pct:.2f}", "preemption_alloc_affinode":
            f"{aff.alloc_time_avg_pct:.2f}",
            "preemption_pending_none": f"{pending_h.loc[(top, 'backfill / none')]:,.0f}",
            "preemption_pending_affinode": f"{pending_h.loc[(top, 'backfill / affinode')]:,.0f}",
            "preemption_suspensions": f"{aff.suspensions:,.0f}",
            "preemption_overhead_affinode": f"{aff.overhead_gpu_s / 3600:,.1f}",
            "preemption_priority_n": f"{prio.preemptions:,.0f}", "preemption_priority_thrashed":
            f"{prio.thrashed_jobs:,.0f}", "preemption_priority_lost": f"{prio.lost_gpu_s / 3600:,.1f}",
            "preemption_transparent_n": f"{trans.preemptions:,.0f}",
            "preemption_wait_none": f"{none.mean_wait_s:,.0f}", "preemption_wait_priority": f"{prio.mean_wait_s:,.0f}",
            "preemption_wait_transparent": f"{trans.mean_wait_s:,.0f}"})
    if {(top, "backfill / tiresias"), (top, "fifo / none")} <= set(mean.index):
        tir, fifo, none = (mean.loc[(top, k)] for k in ("backfill / tiresias", "fifo / none", "backfill / none"))
        items.update({f"preemption_{name}_{what}": f"{row[column]:,.0f}"
                      for name, row in (("tiresias", tir), ("fifo", fifo), ("backfill", none))
                      for what, column in (("jct", "mean_jct_s"), ("p99jct", "p99_jct_s"))})
        items["preemption_tiresias_n"] = f"{tir.preemptions:,.0f}"
    if (top, "backfill / migrate") in mean.index:
        mig = mean.loc[(top, "backfill / migrate")]
        items.update({"preemption_migrate_n": f"{mig.migrations:,.0f}",
                      "preemption_blocked_migrate": f"{mig.blocked_job_hours:,.0f}",
                      "preemption_alloc_migrate": f"{mig.alloc_time_avg_pct:.2f}",
                      "preemption_overhead_migrate": f"{mig.overhead_gpu_s / 3600:,.1f}"})
    return items


def mig_time_table(results: Path) -> dict[str, str]:
    """MIG over time, backfilling (means over the MIG policies and seeds): per load and operation (the dynamic layout
    without and with ``mig-repack`` re-layouts, the static partition), evictions per run, GPU-hours lost, waits,
    JCT, allocation and job-hours blocked by fragmentation; and the FIFO means the prose quotes."""
    runs = _csv(results, "mig-time", "timeline.csv")
    if runs is None:
        return {}
    runs = runs.assign(operation=np.where(runs["layout"].str.startswith("static"), "static",
                                          np.where(runs["mechanism"] == "mig-repack", "dynamic + mig-repack",
                                                   "dynamic")))
    runs = runs[(runs["layout"] == "dynamic") | (runs["mechanism"] == "none")]   # static runs never re-lay out
    mean = runs.groupby(["queue", "load", "operation"]).mean(numeric_only=True)
    lines = ["| load | operation | evictions per run | GPU-hours lost | mean wait s | p99 wait s | mean JCT s | "
             "allocation % | blocked job-hours |", "|--:|:--|--:|--:|--:|--:|--:|--:|--:|"]
    order = ("dynamic", "dynamic + mig-repack", "static")
    for (queue, load, operation), row in sorted(mean.iterrows(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                                order.index(kv[0][2]))):
        if queue != "backfill":
            continue
        lines.append(f"| {load:g} | {operation} | {row.evictions:.2f} | {row.lost_gpu_s / 3600:.2f} | "
                     f"{row.mean_wait_s:,.0f} | {row.p99_wait_s:,.0f} | {row.mean_jct_s:,.0f} | "
                     f"{row.alloc_time_avg_pct:.1f} | {row.blocked_job_hours:,.0f} |")
    items = {"mig_time": "\n".join(lines), "mig_time_runs": str(len(runs)),
             "mig_time_jobs": f"{int(runs['jobs'].mean()):,}", "mig_time_seeds": _seeds(runs["seed"])}
    for queue in ("backfill", "fifo"):
        for load in sorted(runs["load"].unique()):
            for operation in order:
                if (queue, load, operation) not in mean.index:
                    continue
                row = mean.loc[(queue, load, operation)]
                key = f"mig_time_{queue}_{str(load).replace('.', '')}_{operation.split()[0]}" + (
                    "_repack" if "repack" in operation else "")
                items[f"{key}_wait"] = f"{row.mean_wait_s:,.0f}"
                items[f"{key}_evictions"] = f"{row.evictions:.2f}"
    return items


def _gavel_crosscheck(results: Path) -> pd.DataFrame | None:
    """Gavel's own simulator's runs (``paper/results/gavel-crosscheck/gavel.csv``, made outside fgdopt's
    environment; see ``paper/README.md``), keyed as fgdopt's ``hetero.csv``."""
    gavel = _csv(results, "gavel-crosscheck", "gavel.csv")
    if gavel is None:
        return None
    return gavel.rename(columns={"avg_jct_s": "gavel_jct_s", "wall_s": "gavel_wall_s"})


def _pair(results: Path) -> pd.DataFrame | None:
    """Gavel's pair over Figure 8's rates: the ``hetero`` study and, past saturation, ``hetero-saturated``."""
    parts = [f for f in (_csv(results, "hetero", "hetero.csv"), _csv(results, "hetero-saturated", "hetero.csv"))
             if f is not None]
    return pd.concat(parts, ignore_index=True) if parts else None


def _all_seeds(results: Path) -> pd.DataFrame | None:
    """Gavel's pair over Figure 8's rates, every seed run: :func:`_pair` (seed 0) and ``hetero-seeds`` (seeds 1
    and 2), each (policy, rate, seed) once."""
    parts = [f for f in (_pair(results), _csv(results, "hetero-seeds", "hetero.csv")) if f is not None]
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True).drop_duplicates(["policy", "lambda_per_hour", "seed"])


def _seed_gains(runs: pd.DataFrame) -> pd.DataFrame:
    """The gain ``las`` / ``las-aware`` (mean JCT) of every (rate, seed) where both ran: columns ``lambda_per_hour,
    seed, gain``."""
    wide = runs.pivot_table(index=["lambda_per_hour", "seed"], columns="policy", values="mean_jct_s")
    wide = wide.dropna(subset=[p for p in ("las", "las-aware") if p in wide.columns])
    if not {"las", "las-aware"} <= set(wide.columns):
        return pd.DataFrame(columns=["lambda_per_hour", "seed", "gain"])
    return (wide["las"] / wide["las-aware"]).rename("gain").reset_index()


def _gavel_top(fig8: dict) -> dict[str, str]:
    """Gavel's own largest gain (las over las-aware) over its Figure 8 runs, and its rate."""
    gains = [(rate, row.gavel_jct_s / fig8[(rate, "las-aware")].gavel_jct_s) for (rate, policy), row in fig8.items()
             if policy == "las" and (rate, "las-aware") in fig8]
    if not gains:
        return {}
    rate, top = max(gains, key=lambda g: g[1])
    return {"hetero_gavel_ratio_top": f"{top:.2f}", "hetero_gavel_ratio_top_rate": f"{rate:g}"}


def _gain_cell(by_rate, rate: float) -> str:
    """The gain at ``rate`` over its seeds: mean (min-max), with the number of seeds; empty where none ran both."""
    if rate not in by_rate.groups:
        return ""
    g = by_rate.get_group(rate)
    return f"{g.mean():.2f}x ({g.min():.2f}-{g.max():.2f}, {len(g)} seeds)"


def _pair_cell(rows: dict, column: str) -> str:
    """``column`` of the ``las`` and ``las-aware`` rows, as whole numbers ("not run" where a row is missing)."""
    return ", ".join(f"{getattr(rows[p], column):.0f}" if p in rows else "not run" for p in ("las", "las-aware"))


def hetero_multi_table(results: Path) -> dict[str, str]:
    """Multi-GPU jobs (Gavel's continuous-multiple trace): ``las`` and ``las-aware`` run as Gavel's simulator runs a
    job over several servers (consolidated throughput, study ``hetero-multi``) against Gavel's own runs (``multi``
    rows of the cross-check), and at Gavel's unconsolidated throughput (``hetero-multi-spread``)."""
    same = _csv(results, "hetero-multi", "hetero.csv")
    spread = _csv(results, "hetero-multi-spread", "hetero.csv")
    gavel = _gavel_crosscheck(results)
    if same is None or gavel is None:
        return {}
    policies = ("las", "las-aware")

    def jct(frame: pd.DataFrame | None, rate: str, column: str) -> dict:
        return {} if frame is None else dict(zip(zip(frame[rate], frame["policy"], strict=True), frame[column],
                                                          strict=True))

    theirs = jct(gavel[gavel["config"] == "multi"], "rate_per_hour", "gavel_jct_s")
    ours, slow = jct(same, "lambda_per_hour", "mean_jct_s"), jct(spread, "lambda_per_hour", "mean_jct_s")
    lines = ["| jobs/hour | las mean JCT h | las-aware mean JCT h | las / las-aware | Gavel: las h | "
             "Gavel: las-aware h | fgdopt vs Gavel (las, aware) | unconsolidated: las h | "
             "unconsolidated: las-aware h | unconsolidated: las / las-aware |",
             "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    devs: dict[float, list[float]] = {}                     # per rate: fgdopt's JCT over Gavel's - 1 (las, aware)
    ratio_devs: dict[float, float] = {}                      # per rate: |fgdopt's gain over Gavel's - 1|
    slowdowns = []

    def cells(table: dict, rate: float) -> list[str]:
        got = [table.get((rate, p)) for p in policies]
        return [f"{v / 3600:.2f}" if v is not None else "-" for v in got] + [
            f"{got[0] / got[1]:.2f}x" if None not in got else "-"]

    for rate in sorted({r for r, _ in ours}):
        devs[rate] = [ours[(rate, p)] / theirs[(rate, p)] - 1 for p in policies
                      if (rate, p) in ours and (rate, p) in theirs]
        if all((rate, p) in ours and (rate, p) in theirs for p in policies):
            ratio_devs[rate] = abs(ours[(rate, "las")] / ours[(rate, "las-aware")]
                                   / (theirs[(rate, "las")] / theirs[(rate, "las-aware")]) - 1)
        slowdowns += [slow[(rate, p)] / ours[(rate, p)] for p in policies if (rate, p) in slow and (rate, p) in ours]
        lines.append(f"| {rate:g} | " + " | ".join(cells(ours, rate)) + " | " + " | ".join(cells(theirs, rate)[:2])
                     + " | " + ", ".join(f"{100 * d:+.2f}%" for d in devs[rate]) + " | "
                     + " | ".join(cells(slow, rate)) + " |")
    top = max(devs)                                          # the highest rate, the knee: reported on its own
    below = [abs(d) for rate, ds in devs.items() if rate < top for d in ds]
    below_ratio = [d for rate, d in ratio_devs.items() if rate < top]
    return {"hetero_multi": "\n".join(lines), "hetero_multi_points": str(sum(map(len, devs.values()))),
            "hetero_multi_points_below": str(len(below)),
            "hetero_multi_below_rate": f"{max((r for r in devs if r < top), default=top):g}",
            "hetero_multi_max_dev_below": f"{100 * max(below):.2f}" if below else "n/a",
            "hetero_multi_ratio_max_dev_below": f"{100 * max(below_ratio):.2f}" if below_ratio else "n/a",
            "hetero_multi_top_rate": f"{top:g}",
            "hetero_multi_top_dev": ", ".join(f"{100 * d:+.1f}%" for d in devs[top]),
            "hetero_multi_top_ratio_dev": f"{100 * ratio_devs[top]:.1f}" if top in ratio_devs else "n/a",
            "hetero_multi_spread_min": f"{min(slowdowns):.2f}" if slowdowns else "n/a",
            "hetero_multi_spread_max": f"{max(slowdowns):.2f}" if slowdowns else "n/a"}


SATURATION_RATE = 4.4
"""Arrival rate (jobs/hour) from which the accepted deviation from Gavel's Figure 8 loosens (2% below it, 5% from
it): about where the jobs present outnumber the 108 GPUs of 36:36:36."""


def hetero_tables(results: Path) -> dict[str, str]:
    """Heterogeneous GPUs: Gavel's pair (agnostic and aware max-min fairness) over the arrival rates against Gavel's
    own simulator, every other policy at three rates, and the static batch's makespans against its certified
    bound."""
    pair = _pair(results)
    others = _csv(results, "hetero-policies", "hetero.csv")
    items: dict[str, str] = {}
    if pair is not None:
        mean = pair.groupby(["lambda_per_hour", "policy"]).mean(numeric_only=True)
        gavel = _gavel_crosscheck(results)
        fig8 = {} if gavel is None else {(row.rate_per_hour, row.policy): row for row in gavel[
            (gavel["config"] == "fig8") & (gavel["seed"] == 0)].itertuples()}
        gains = _seed_gains(_all_seeds(results))
        by_rate = gains.groupby("lambda_per_hour")["gain"]
        lines = ["| jobs/hour | las mean JCT h | las-aware mean JCT h | las / las-aware | Gavel: las h | "
                 "Gavel: las-aware h | fgdopt vs Gavel (las, aware) | wall s: fgdopt (las, aware) | "
                 "wall s: Gavel (las, aware) | las / las-aware over seeds: mean (min-max) |",
                 "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
        ratios, devs, walls, gavel_ratios = [], [], [], []
        split: dict[bool, list[float]] = {False: [], True: []}     # |JCT deviation| below / from 4.4 jobs/h
        ratio_devs: list[float] = []                                  # |fgdopt's las/las-aware over Gavel's - 1|
        for rate in sorted(pair["lambda_per_hour"].unique()):
            ours = {p: mean.loc[(rate, p)] for p in ("las", "las-aware") if (rate, p) in mean.index}
            theirs = {p: fig8[(rate, p)] for p in ("las", "las-aware") if (rate, p) in fig8}
            dev = {p: ours[p].mean_jct_s / theirs[p].gavel_jct_s - 1 for p in ours if p in theirs}
            for d in dev.values():
                devs.append(abs(d))
                split[rate >= SATURATION_RATE].append(abs(d))
            walls += [row.wall_s for row in ours.values()]
            gain = ""
            if len(ours) == 2:
                ratios.append((rate, ours["las"].mean_jct_s / ours["las-aware"].mean_jct_s))
                gain = f"{ratios[-1][1]:.2f}x"
                if len(theirs) == 2:
                    gavel_ratios.append(theirs["las"].gavel_jct_s / theirs["las-aware"].gavel_jct_s)
                    ratio_devs.append(abs(ratios[-1][1] / gavel_ratios[-1] - 1))

            jct = [f"{ours[p].mean_jct_s / 3600:.2f}" if p in ours else "not run" for p in ("las", "las-aware")]
            gavel_jct = [f"{theirs[p].gavel_jct_s / 3600:.2f}" if p in theirs else "" for p in ("las", "las-aware")]
            gavel_wall = _pair_cell(theirs, "gavel_wall_s") if theirs else ""
            lines.append(f"| {rate:g} | {jct[0]} | {jct[1]} | {gain} | {gavel_jct[0]} | {gavel_jct[1]} | "
                         + ", ".join(f"{100 * dev[p]:+.2f}%" if p in dev else "-" for p in ("las", "las-aware"))
                         + f" | {_pair_cell(ours, 'wall_s')} | {gavel_wall} | {_gain_cell(by_rate, rate)} |")
        beyond = [] if gavel is None else [
            (rate, fig8[(rate, "las")].gavel_jct_s / fig8[(rate, "las-aware")].gavel_jct_s) for rate, _ in fig8
            if rate > max(r for r, _ in ratios) and (rate, "las") in fig8 and (rate, "las-aware") in fig8]
        if beyond:
            top = max(beyond, key=lambda r: r[1])
            span = f"{min(r for r, _ in beyond):g} to {max(r for r, _ in beyond):g}"
            items.update({"hetero_gavel_beyond_max": f"{top[1]:.2f}", "hetero_gavel_beyond_rate": f"{top[0]:g}",
                          "hetero_gavel_beyond_rates": span})
        best = max(ratios, key=lambda r: r[1])
        items.update({"hetero_gain": "\n".join(lines), "hetero_seeds": _seeds(pair["seed"]),
                      "hetero_all_seeds": _seeds(gains["seed"]) if len(gains) else "none",
                      "hetero_seed_gain_spread": f"{100 * (by_rate.max() / by_rate.min() - 1).max():.1f}"
                      if len(gains) else "n/a",
                      "hetero_ratio_min": f"{min(r for _, r in ratios):.2f}",
                      "hetero_ratio_max": f"{best[1]:.2f}", "hetero_ratio_max_rate": f"{best[0]:g}",
                      "hetero_rates": f"{min(r for r, _ in ratios):g} to {max(r for r, _ in ratios):g}",
                      "hetero_wall_median": f"{np.median(walls):.0f}", "hetero_wall_max": f"{max(walls):.0f}",
                      "hetero_xcheck_points": str(len(devs)),
                      "hetero_gavel_ratio_min": f"{min(gavel_ratios):.2f}" if gavel_ratios else "n/a",
                      "hetero_gavel_ratio_max": f"{max(gavel_ratios):.2f}" if gavel_ratios else "n/a",
                      "hetero_xcheck_max_dev": f"{100 * max(devs):.2f}" if devs else "n/a",
                      "hetero_xcheck_max_dev_below": f"{100 * max(split[False]):.2f}" if split[False] else "n/a",
                      "hetero_xcheck_max_dev_saturated": f"{100 * max(split[True]):.2f}" if split[True] else "n/a",
                      "hetero_ratio_max_dev": f"{100 * max(ratio_devs):.2f}" if ratio_devs else "n/a",
                      **_gavel_top(fig8)})
    points = _csv(results, "bench-hetero", "bench_hetero_points.csv")
    if points is not None:
        for row in points.itertuples():
            name = f"hetero_point_{str(row.rate).replace('.', '')}_{row.policy.replace('-', '_')}"
            items[f"{name}_cpu"] = f"{row.cpu_s:.0f}"
            items[f"{name}_wall"] = f"{row.wall_s:.0f}"
        if "carry_s" in points:
            lines = ["| jobs/hour | policy | wall s | allocation LPs | rest of the rounds' decisions | "
                     "carrying them out | the rest |", "|--:|:--|--:|--:|--:|--:|--:|"]
            for row in points.itertuples():
                rest = row.wall_s - row.lp_s - row.decide_s - row.carry_s
                lines.append(f"| {row.rate:g} | {row.policy} | {row.wall_s:.1f} | {row.lp_s:.1f} | "
                             f"{row.decide_s:.1f} | {row.carry_s:.1f} | {rest:.1f} |")
            items["hetero_point_split"] = "\n".join(lines)
    if others is not None:
        frame = others if pair is None else pd.concat([others, pair[pair["lambda_per_hour"].isin(
            others["lambda_per_hour"])]])
        cont = frame[np.isfinite(frame["lambda_per_hour"])]
        mean = cont.groupby(["lambda_per_hour", "policy"]).mean(numeric_only=True)
        order = ("fifo", "gandiva", "las", "las-aware", "ftf", "ftf-aware", "makespan", "makespan-aware")
        lines = ["| jobs/hour | policy | mean JCT h | p95 JCT h | mean rho | max rho | Jain's index of rho | "
                 "utilization | type changes (preemptions) | wall s |", "|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for (rate, policy), row in sorted(mean.iterrows(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
            lines.append(f"| {rate:g} | {policy} | {row.mean_jct_s / 3600:.2f} | {row.p95_jct_s / 3600:.1f} | "
                         f"{row.mean_rho:.2f} | {row.max_rho:.2f} | {row.jain_rho:.3f} | {row.utilization:.3f} | "
                         f"{row.preemptions:,.0f} | {row.wall_s:.0f} |")
        items["hetero_policies"] = "\n".join(lines)
        batch = others[~np.isfinite(others["lambda_per_hour"])]
        if len(batch):
            bmean = batch.groupby("policy").mean(numeric_only=True)
            lines = ["| policy | makespan h | certified bound h | makespan / bound | mean JCT h |",
                     "|:--|--:|--:|--:|--:|"]
            for policy in [p for p in order if p in bmean.index]:
                row = bmean.loc[policy]
                lines.append(f"| {policy} | {row.makespan_s / 3600:.1f} | {row.makespan_bound_s / 3600:.1f} | "
                             f"{row.makespan_s / row.makespan_bound_s:.3f} | {row.mean_jct_s / 3600:.1f} |")
            items.update({"hetero_batch": "\n".join(lines),
                          "hetero_batch_jobs": f"{int(batch['measured_jobs'].max()):,}",
                          "hetero_batch_best": f"{(bmean['makespan_s'] / bmean['makespan_bound_s']).min():.3f}"})
    return items


def interference_table(results: Path) -> dict[str, str]:
    """Interference on openb (means over seeds): per load and policy (the interference-aware FGD per weight),
    allocation without interference, and with it the sharing jobs' slowdown, share slowed, GPU time lost, mean JCT
    (sharing jobs and all jobs) and its change against the same policy without interference."""
    runs = _csv(results, "interference", "interference.csv")
    if runs is None:
        return {}
    runs = runs.assign(weight=runs["weight"].fillna(-1.0))
    keys = ["load", "policy", "weight"]
    on = runs[runs["interference"] == "on"].groupby(keys).mean(numeric_only=True)
    off = runs[runs["interference"] == "off"].groupby(keys).mean(numeric_only=True)
    lines = ["| load | policy | allocation % (no interference) | mean slowdown | slowed % | GPU time lost % | "
             "sharing mean JCT s | vs no interference | all jobs mean JCT s | vs no interference |",
             "|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for (load, policy, weight), row in on.iterrows():
        name = policy if weight < 0 else f"{policy} w={weight:g}"
        base = off.loc[(load, policy, weight)] if (load, policy, weight) in off.index else None
        alloc = f"{base.alloc_time_avg_pct:.2f}" if base is not None else ""
        vs = (f"{100 * (row.mean_jct_s_sharing / base.mean_jct_s_sharing - 1):+.1f}%",
              f"{100 * (row.mean_jct_s / base.mean_jct_s - 1):+.1f}%") if base is not None else ("", "")
        lines.append(f"| {load:g} | {name} | {alloc} | {row.mean_slowdown:.2f} | {row.slowed_pct:.0f} | "
                     f"{row.lost_gpu_pct:.1f} | {row.mean_jct_s_sharing:,.0f} | {vs[0]} | {row.mean_jct_s:,.0f} | "
                     f"{vs[1]} |")
    items = {"interference": "\n".join(lines), "interference_seeds": _seeds(runs["seed"]),
             "interference_runs": str(len(runs))}
    for load in sorted(runs["load"].unique()):
        tag = str(load).replace(".", "")
        if (load, "fgd", -1.0) in on.index:
            fgd = on.loc[(load, "fgd", -1.0)]
            items[f"interference_fgd_slowdown_{tag}"] = f"{fgd.mean_slowdown:.2f}"
            items[f"interference_fgd_slowed_{tag}"] = f"{fgd.slowed_pct:.0f}"
        aware = on.xs("fgd-interference", level="policy") if "fgd-interference" in on.index.get_level_values(
            "policy") else None
        if aware is not None and load in aware.index.get_level_values("load") and (load, "fgd", -1.0) in on.index:
            part = aware.loc[load]
            base_alloc = off.loc[(load, "fgd", -1.0)].alloc_time_avg_pct
            free = part[off.loc[load].loc[[("fgd-interference", w) for w in part.index]].alloc_time_avg_pct.to_numpy()
                        >= base_alloc - 0.05]                      # weights that cost no allocation (0.05 point)
            if len(free):
                w = free["mean_slowdown"].idxmin()
                items[f"interference_free_weight_{tag}"] = f"{w:g}"
                items[f"interference_free_slowdown_{tag}"] = f"{free.loc[w].mean_slowdown:.2f}"
                cut = 1 - free.loc[w].mean_jct_s_sharing / on.loc[(load, "fgd", -1.0)].mean_jct_s_sharing
                items[f"interference_free_jct_{tag}"] = f"{100 * cut:.1f}"
    return items


CHECKPOINT_COST_S = 60.0
"""The failures study's checkpoint cost (its ``--checkpoint-cost-s`` default), s."""


def failures_tables(results: Path) -> dict[str, str]:
    """Failures and drift (means over seeds, loads and queues): per workload, policy and scenario, failures, job
    stops, lost GPU-hours and share, mean JCT and its slowdown, speed; the checkpoint interval sweep against
    Young/Daly's, and its best interval."""
    runs, sweep = _csv(results, "failures", "failures.csv"), _csv(results, "failures", "interval.csv")
    items: dict[str, str] = {}
    if runs is not None:
        runs = runs.assign(scenario=np.where(runs["scenario"] == "failures",
                                             "failures / " + runs["mtbf_scale"].map("{:g}".format), runs["scenario"]))
        mean = runs.groupby(["workload", "policy", "scenario"], sort=False).mean(numeric_only=True)
        lines = ["| workload | policy | scenario | failures | jobs stopped | lost GPU-h | lost % of work | "
                 "mean JCT s | JCT slowdown | speed (measured) | speed (all) |",
                 "|:--|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for (workload, policy, scenario), row in mean.iterrows():
            lines.append(f"| {workload} | {policy} | {scenario} | {row.failures:,.0f} | {row.stopped:,.0f} | "
                         f"{row.lost_gpu_h:,.1f} | {row.lost_pct:.3f} | {row.mean_jct_s:,.0f} | "
                         f"{row.jct_slowdown:.3f} | {row.mean_speed:.3f} | {row.speed_all:.3f} |")
        items.update({"failures": "\n".join(lines), "failures_seeds": _seeds(runs["seed"]),
                      "failures_runs": str(len(runs)), "failures_jobs": f"{int(runs['measured'].max()):,}"})
        for workload in mean.index.get_level_values("workload").unique():
            part = mean.loc[workload]
            if ("health-aware", "drift") in part.index and ("best-fit", "drift") in part.index:
                aware, fit = part.loc[("health-aware", "drift")], part.loc[("best-fit", "drift")]
                items[f"failures_health_{workload}"] = (
                    f"speed {fit.speed_all:.3f} to {aware.speed_all:.3f} over all jobs, {fit.mean_speed:.3f} to "
                    f"{aware.mean_speed:.3f} over the measured ones, mean JCT "
                    f"{100 * (aware.mean_jct_s / fit.mean_jct_s - 1):+.1f}%")
    if sweep is not None and len(sweep):
        mean = sweep.groupby("ratio").mean(numeric_only=True)
        lines = ["| interval / Young-Daly | interval min | lost % | checkpoints % | restarts % | waste % |",
                 "|--:|--:|--:|--:|--:|--:|"]
        for ratio, row in mean.iterrows():
            lines.append(f"| {ratio:g} | {row.checkpoint_s / 60:.1f} | {row.lost_pct:.2f} | {row.checkpoint_pct:.2f} | "
                         f"{row.restart_pct:.2f} | {row.waste_pct:.2f} |")
        best = mean["waste_pct"].idxmin()
        one_gpu = young_daly_s(CHECKPOINT_COST_S, job_mtbf_s(1, 1)) / 3600
        items.update({"failures_interval": "\n".join(lines), "failures_best_ratio": f"{best:g}",
                      "failures_yd_one_gpu_h": f"{one_gpu:.0f}",
                      "failures_yd_min": f"{mean['young_daly_s'].iloc[0] / 60:.1f}",
                      "failures_best_waste": f"{mean.loc[best, 'waste_pct']:.2f}",
                      "failures_sweep_failures": f"{mean['failures'].mean():,.0f}"})
    return items


def schedule_tables(results: Path) -> dict[str, str]:
    """How far from optimal over time: per objective and method on ``small-time`` (mean and max gap against the
    proven bound, proven count, wins), the headline values, and the full-scale bound beside the runs."""
    from experiments.schedule import bound_tables, method_summary

    items: dict[str, str] = {}
    frame = _csv(results, "schedule", "schedule.csv")
    if frame is not None:
        parts = [method_summary(part).assign(objective=obj) for obj, part in frame.groupby("objective", sort=False)]
        table = pd.concat(parts)[["objective", "method", "mean_gap_pct", "max_gap_pct", "proven", "wins"]]
        items["schedule_small"] = table.to_markdown(index=False)
        opt = frame[frame["method"] == "optimum"]
        for obj, tag in (("mean-jct", "jct"), ("makespan", "makespan")):
            part = opt[opt["objective"] == obj]
            items[f"schedule_proven_{tag}"] = f"{int((part['status'] == 'optimal').sum())} of {len(part)}"
            items[f"schedule_worst_gap_{tag}"] = f"{part['gap_pct'].max():.2f}"
        items["schedule_max_wall"] = f"{opt['wall_s'].max():.1f}"
        jct = frame[frame["objective"] == "mean-jct"]
        worst = jct[jct["status"] == "engine"].groupby("instance")["value"].max()
        best_known = jct[jct["method"] == "optimum"].set_index("instance")["value"]
        matters = (worst > 1.01 * best_known.reindex(worst.index)).sum()
        items["schedule_matters"] = f"{int(matters)} of {len(worst)}"
        cost = results / "schedule" / "run.json"
        if cost.is_file():
            import json

            run = json.loads(cost.read_text())
            items["schedule_suite_wall"] = f"{run['wall_s'] / 60:.1f}"
            items["schedule_suite_cpu"] = f"{run['cpu_s'] / 60:.1f}"
    for study, key in (("schedule-bound", "schedule_bound"), ("schedule-bound-seeds", "schedule_bound_seeds")):
        one = _csv(results, study, "schedule-bound.csv")
        if one is not None:
            items[key] = bound_tables(one, _csv(results, study, "diagnostics.csv"),
                                      _csv(results, study, "profile.csv")).strip()
    medium = _csv(results, "schedule-medium", "interval.csv")
    if medium is not None:
        from experiments.schedule import certified_gap_pct
        gap = medium["ratio"].map(certified_gap_pct)
        shown = medium[["trace", "best_run_method", "best_run_wait_s", "best_bound_method", "best_bound_wait_s"]]
        shown = shown.rename(columns={"trace": "instance"}).assign(gap_pct=gap)
        diag = _csv(results, "schedule-medium", "diagnostics.csv")
        if diag is not None and (diag["quantity"] == "ceiling_pooled_cp_s").any():
            cp = diag[diag["quantity"] == "ceiling_pooled_cp_s"].set_index("trace")["value_s"]
            shown = shown.assign(pooled_cp_s=shown["instance"].map(cp))
            share = shown["pooled_cp_s"] / shown["best_run_wait_s"]
            items["schedule_medium_pooled_cp"] = f"{100 * share.min():.0f}-{100 * share.max():.0f}"
            items["schedule_medium_pooled_cp_ratio"] = f"{1 / share.max():.1f}-{1 / share.min():.1f}"
        items["schedule_medium"] = shown.round({"best_run_wait_s": 1, "best_bound_wait_s": 2, "gap_pct": 1,
                                                "pooled_cp_s": 1}).to_markdown(index=False)
        items["schedule_medium_certified"] = f"{int((gap <= 10).sum())} of {len(gap)}"
        items["schedule_medium_gap"] = f"{gap.min():.0f}-{gap.max():.0f}"
        cost = results / "schedule-medium" / "run.json"
        if cost.is_file():
            import json

            items["schedule_medium_wall"] = f"{json.loads(cost.read_text())['wall_s']:.0f}"
    bound = _schedule_bound(results, "schedule-bound.csv")
    if bound is not None:
        diag = _schedule_bound(results, "diagnostics.csv")
        rows = bound[bound["status"] != "run"]
        items["schedule_bound_max_wall"] = f"{rows['wall_s'].max():.0f}"
        items["schedule_bound_max_cpu"] = f"{rows['cpu_s'].max():.0f}"
        interval = _schedule_bound(results, "interval.csv")
        if interval is not None:
            runs = bound[bound["status"] == "run"].groupby(["load", "seed"]).size().rename("runs")
            shown = interval.drop(columns="trace").join(runs, on=["load", "seed"])
            shown = shown.round({"best_run_wait_s": 1, "best_bound_wait_s": 2, "ratio": 1})
            items["schedule_interval"] = shown.to_markdown(index=False)
            items["schedule_interval_points"] = f"{len(interval)}"
            items["schedule_ratio_max"] = f"{interval['ratio'].max():.0f}"
            items["schedule_ratio_min"] = f"{interval['ratio'].min():.1f}"
        if diag is not None:
            wide = diag.pivot_table(index=["load", "seed"], columns="quantity", values="value_s")
            split = wide[["best_run_s", "best_bound_s", "ceiling_pooled_s", "ceiling_per_type_s", "ceiling_repack_s",
                          "capacity_s", "non_migration_s", "order_and_placement_s"]].round(1)
            items["schedule_split"] = split.reset_index().to_markdown(index=False)
            items["schedule_diag_max_wall"] = f"{wide['diagnostics_wall_s'].max():.0f}"
            over = wide[wide.index.get_level_values("load") > 1]          # above capacity: the ceiling is positive
            below = over["best_run_s"] / over["capacity_s"]
            items["schedule_ceiling_below"] = f"{below.min():.1f}-{below.max():.1f}"
    return items


SCHEDULE_BOUND_STUDIES = ("schedule-bound", "schedule-bound-seeds")
"""The full-scale schedule studies (``experiments.schedule --trace``): seed 42 at loads 1.1 and 1.2 with every
policy and queue, and the other points with the queues that came closest there; the interval table and figure show
every point of both."""


def _schedule_bound(results: Path, name: str) -> pd.DataFrame | None:
    """``name`` of every study of :data:`SCHEDULE_BOUND_STUDIES` that has it, as one frame sorted by load and seed
    (each point's rows in their written order)."""
    parts = [f for study in SCHEDULE_BOUND_STUDIES if (f := _csv(results, study, name)) is not None]
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True).sort_values(["load", "seed"], kind="stable", ignore_index=True)


def pollux_tables(results: Path) -> dict[str, str]:
    """Pollux on the engine (the committed cross-check runs): per workload at job load 1.0, each policy's mean JCT
    beside the authors' own (``pollux``: the mean over its seeds, and their range); per job load, ``pollux``'s
    deviation from the authors' and its order against ``tiresias`` and ``optimus`` run by run; the largest
    deviations over every run."""
    det = _csv(results, "pollux-crosscheck", "pollux-deterministic.csv")
    seeded = _csv(results, "pollux-crosscheck", "pollux-seeded.csv")
    if det is None or seeded is None:
        return {}
    order_of = {w: int(w.rsplit("-", 1)[1]) for w in set(det["workload"]) | set(seeded["workload"])}
    runs = pd.concat([det, seeded])
    one = runs[runs["load"] == 1.0]
    wide = one.pivot_table(index="workload", columns="policy", values="mean_jct_s")
    ref = one.pivot_table(index="workload", columns="policy", values="ref_mean_jct_s")
    order = sorted(wide.index, key=order_of.__getitem__)
    spread = seeded[seeded["load"] == 1.0].groupby("workload")["mean_jct_s"].agg(["min", "max", "count"])
    table = pd.DataFrame({"workload": order}).set_index("workload")
    for policy in ("pollux", "tiresias", "optimus"):
        table[f"{policy} (s)"] = wide.loc[order, policy].round(1)
        if policy == "pollux":
            table["seeds"] = spread.loc[order, "count"].astype(int)
            table["range over seeds (s)"] = [f"{lo:.0f}–{hi:.0f}" if n > 1 else "" for lo, hi, n in
                                             spread.loc[order].itertuples(index=False)]
        table[f"authors' {policy} (s)"] = ref.loc[order, policy].round(1)
    baselines = det.pivot_table(index=["load", "workload"], columns="policy", values="mean_jct_s")
    rows = seeded.join(baselines, on=["load", "workload"])
    rows["ordered"] = (rows["mean_jct_s"] < rows["tiresias"]) & (rows["tiresias"] < rows["optimus"])
    authors = _csv(results, "pollux-crosscheck", "reference.csv")
    if authors is not None:                     # the order of the three in the authors' own results, run by run
        theirs = authors.pivot_table(index=["load", "workload"], columns="policy", values="mean_jct_s")
        theirs = rows[["load", "workload"]].join(theirs, on=["load", "workload"])
        rank = ["mean_jct_s", "tiresias", "optimus"]
        rows["as_authors"] = [tuple(np.argsort(a)) == tuple(np.argsort(b)) for a, b in zip(
            rows[rank].to_numpy(), theirs[["pollux", "tiresias", "optimus"]].to_numpy(), strict=True)]
    else:
        rows["as_authors"] = False
    loads = rows.groupby("load").agg(workloads=("workload", "nunique"), runs=("workload", "size"),
                                     seeds=("seed", _seeds), err_lo=("ref_err_pct", "min"),
                                     err_hi=("ref_err_pct", "max"), ordered=("ordered", "sum"),
                                     as_authors=("as_authors", "sum"))
    loads = pd.DataFrame({
        "job load": [f"{x:.1f}" for x in loads.index], "workloads": loads["workloads"],
        "runs (seeds)": [f"{n} ({s})" for n, s in zip(loads["runs"], loads["seeds"], strict=True)],
        "pollux vs the authors' (%)": [f"{lo:+.2f} to {hi:+.2f}" for lo, hi in zip(loads["err_lo"], loads["err_hi"],
                                                                                    strict=True)],
        "pollux < tiresias < optimus": [f"{o} of {n}" for o, n in zip(loads["ordered"], loads["runs"], strict=True)],
        "the three in the authors' order": [f"{o} of {n}" for o, n in zip(loads["as_authors"], loads["runs"],
                                                                          strict=True)]})
    at1 = rows[rows["load"] == 1.0]
    coverage = []
    for load in sorted(det["load"].unique()):
        part = seeded[seeded["load"] == load].groupby("seed")["workload"].nunique()
        runs_at = ", ".join(f"seed {seed} on {n} workload{'s' if n > 1 else ''}" for seed, n in part.items())
        coverage.append(f"load {load:.1f}: {runs_at or 'not run'}")
    rel = (spread["max"] - spread["min"]) / seeded[seeded["load"] == 1.0].groupby("workload")["mean_jct_s"].mean()
    return {"pollux_table": table.reset_index().to_markdown(index=False),
            "pollux_loads": loads.to_markdown(index=False, disable_numparse=True),
            "pollux_det_runs": f"{len(det)}", "pollux_det_max_err": f"{det['ref_err_pct'].abs().max():.1g}",
            "pollux_runs": f"{len(seeded)}", "pollux_coverage": "; ".join(coverage),
            "pollux_err_lo": f"{at1['ref_err_pct'].min():+.2f}", "pollux_err_hi": f"{at1['ref_err_pct'].max():+.2f}",
            "pollux_err_all": f"{seeded['ref_err_pct'].abs().max():.2f}",
            "pollux_seed_spread": f"{100 * rel.max():.1f}" if (spread["count"] > 1).any() else "n/a",
            "pollux_ordered": f"{int(rows['ordered'].sum())} of {len(rows)}",
            "pollux_as_authors": f"{int(rows['as_authors'].sum())} of {len(rows)}"}


def singularity_frame(results: Path) -> pd.DataFrame | None:
    """Per workload and job load: ``singularity``'s run (``results/singularity/singularity.csv``) beside
    ``tiresias`` (``pollux-deterministic.csv``) and ``pollux`` (``pollux-seeded.csv``, the mean over its seeds): mean
    JCT, makespan (s), utilization and restarts of each, columns ``<metric>_<policy>``."""
    sing = _csv(results, "singularity", "singularity.csv")
    det = _csv(results, "pollux-crosscheck", "pollux-deterministic.csv")
    seeded = _csv(results, "pollux-crosscheck", "pollux-seeded.csv")
    if sing is None or det is None or seeded is None:
        return None
    runs = pd.concat([sing, det[det["policy"] == "tiresias"], seeded])
    wide = runs.pivot_table(index=["load", "workload"], columns="policy",
                            values=["mean_jct_s", "makespan_s", "utilization", "restarts"], aggfunc="mean")
    wide.columns = [f"{metric}_{policy}" for metric, policy in wide.columns]
    return wide.dropna().reset_index()


def singularity_tables(results: Path) -> dict[str, str]:
    """Singularity's elasticity against ``tiresias`` and ``pollux`` on Pollux's workloads (4.12): per job load, the
    mean over its workloads of each policy's mean JCT and makespan, and ``singularity`` against ``tiresias`` run by
    run (range of the change, %, and how many runs it is lower in)."""
    frame = singularity_frame(results)
    if frame is None:
        return {}
    frame["jct_pct"] = 100 * (frame["mean_jct_s_singularity"] / frame["mean_jct_s_tiresias"] - 1)
    frame["span_pct"] = 100 * (frame["makespan_s_singularity"] / frame["makespan_s_tiresias"] - 1)
    rows = []
    for load, part in frame.groupby("load"):
        three = ("pollux", "tiresias", "singularity")
        row = {"job load": f"{load:.1f}", "workloads": len(part),
               "mean JCT (h): pollux / tiresias / singularity": " / ".join(
                   f"{part[f'mean_jct_s_{policy}'].mean() / 3600:.2f}" for policy in three),
               "makespan (h): the same": " / ".join(f"{part[f'makespan_s_{policy}'].mean() / 3600:.1f}"
                                                    for policy in three)}
        row["singularity vs tiresias, JCT (%)"] = (f"{part['jct_pct'].min():+.1f} to {part['jct_pct'].max():+.1f} "
                                                    f"(lower in {int((part['jct_pct'] < 0).sum())})")
        row["singularity vs tiresias, makespan (%)"] = (f"{part['span_pct'].min():+.1f} to "
                                                         f"{part['span_pct'].max():+.1f} (lower in "
                                                         f"{int((part['span_pct'] < 0).sum())})")
        row["utilization, tiresias / singularity"] = (f"{part['utilization_tiresias'].mean():.2f} / "
                                                      f"{part['utilization_singularity'].mean():.2f}")
        rows.append(row)
    at1 = frame[frame["load"] == 1.0]
    loads = frame.groupby("load")[["mean_jct_s_singularity", "mean_jct_s_tiresias", "makespan_s_singularity",
                                   "makespan_s_tiresias"]].mean()
    gain = 100 * (loads["mean_jct_s_singularity"] / loads["mean_jct_s_tiresias"] - 1)
    span = 100 * (loads["makespan_s_singularity"] / loads["makespan_s_tiresias"] - 1)
    behind = 100 * (frame["mean_jct_s_singularity"] / frame["mean_jct_s_pollux"] - 1)
    return {"singularity_table": pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True),
            "singularity_runs": f"{len(frame)}",
            "singularity_jct_lower": f"{int((frame['jct_pct'] < 0).sum())} of {len(frame)}",
            "singularity_span_lower": f"{int((frame['span_pct'] < 0).sum())} of {len(frame)}",
            "singularity_jct_gain": f"{gain.min():+.1f}% to {gain.max():+.1f}%",
            "singularity_span_gain": f"{span.min():+.1f}% to {span.max():+.1f}%",
            "singularity_pollux_behind": f"{behind.min():.0f}% to {behind.max():.0f}%",
            "singularity_pollux_lower": f"{int((behind < 0).sum())} of {len(frame)}",
            "singularity_restarts": f"{at1['restarts_singularity'].sum():,.0f} against "
                                    f"{at1['restarts_tiresias'].sum():,.0f}"}


def singularity_runs(results: Path) -> pd.DataFrame | None:
    """The rows of the Singularity figure: ``singularity``'s runs, ``tiresias``'s and ``pollux``'s (every seed) on the
    same workloads at the same job loads."""
    sing = _csv(results, "singularity", "singularity.csv")
    det = _csv(results, "pollux-crosscheck", "pollux-deterministic.csv")
    seeded = _csv(results, "pollux-crosscheck", "pollux-seeded.csv")
    if sing is None or det is None or seeded is None:
        return None
    pairs = sing[["workload", "load"]].drop_duplicates()
    return pd.concat([seeded.merge(pairs, on=["workload", "load"]),
                      det[det["policy"] == "tiresias"].merge(pairs, on=["workload", "load"]), sing],
                     ignore_index=True)


SYNERGY_README = (21.876600555555555, 156.93307777777775)
"""Synergy's README default run (FIFO+tune, 9 jobs/h, split 20/70/10, jobs 4000-4999): mean and p99 JCT, hours."""


def synergy_twin(ref: pd.DataFrame | None, policy: str, load: float, finished: int) -> pd.Series | None:
    """Synergy's own run (a row of ``results/synergy-crosscheck/synergy.csv``) of fgdopt's ``policy`` at ``load``
    if it stopped where fgdopt's did, else None: every measured job finished (``stop = window``), or, when fgdopt
    stopped after its last generated arrival, at the same round (``run_synergy.py --last-job``, ``stop = last-job
    N``) with the same ``finished`` count of measured jobs. Synergy names its greedy policy by the bare scheduler."""
    if ref is None:
        return None
    name = policy[:-len("+greedy")] if policy.endswith("+greedy") else policy
    twin = ref[(ref["policy"] == name) & (ref["load"] == load)]
    stop = twin["stop"].astype(str)
    twin = twin[(stop == "window") | (stop.str.startswith("last-job") & (twin["finished_in_window"] == finished))]
    return twin.iloc[0] if len(twin) else None


def synergy_tables(results: Path) -> dict[str, str]:
    """Synergy on the engine (``results/synergy``): per policy and load, mean and p99 JCT beside Synergy's own
    simulator (``results/synergy-crosscheck``, where present; Synergy names its greedy policy by the bare
    scheduler), and the README default run's deviation."""
    ours = _csv(results, "synergy", "synergy.csv")
    if ours is None:
        return {}
    ref = _csv(results, "synergy-crosscheck", "synergy.csv")
    rows = []
    for r in ours.itertuples():
        twin = synergy_twin(ref, r.policy, r.load, r.finished)
        rows.append({"policy": r.policy, "load (jobs/h)": r.load, "finished": r.finished,
                     "mean JCT (h)": round(r.mean_jct_s / 3600, 2),
                     "Synergy's mean (h)": "" if twin is None else round(twin["mean_jct_s"] / 3600, 2),
                     "p99 JCT (h)": round(r.p99_jct_s / 3600, 1),
                     "Synergy's p99 (h)": "" if twin is None else round(twin["p99_jct_s"] / 3600, 1),
                     "OPT gap (%)": max(round(r.opt_gap_pct, 2), 0.0) + 0.0, "CPU s": round(r.cpu_s, 1),
                     "Synergy's CPU s": "" if twin is None else round(twin["cpu_s"], 1)})
    out = {"synergy_table": pd.DataFrame(rows).to_markdown(index=False)}
    default = ours[(ours["policy"] == "FIFO+tune") & (ours["load"] == 9.0)]
    if len(default):
        mean, p99 = default["mean_jct_s"].iloc[0] / 3600, default["p99_jct_s"].iloc[0] / 3600
        out.update({"synergy_default_mean": f"{mean:.3f}", "synergy_default_p99": f"{p99:.2f}",
                    "synergy_default_err": f"{round(100 * (mean / SYNERGY_README[0] - 1), 2) + 0.0:+.2f}% and "
                                           f"{round(100 * (p99 / SYNERGY_README[1] - 1), 2) + 0.0:+.2f}%",
                    "synergy_default_cpu": f"{default['cpu_s'].iloc[0]:.1f}"})
    return out


FAIRNESS_STUDIES = {"fairness": "1 GPU each", "fairness-multi": "1 to 8 GPUs"}
"""The Gandiva-Fair studies (``results/<name>/fairness.csv``) and their workloads in words."""


def _fairness_runs(results: Path, name: str = "fairness.csv") -> pd.DataFrame | None:
    frames = [f.assign(jobs=words) for study, words in FAIRNESS_STUDIES.items()
              if (f := _csv(results, study, name)) is not None]
    return pd.concat(frames, ignore_index=True) if frames else None


def fairness_tables(results: Path) -> dict[str, str]:
    """Gandiva-Fair (``results/fairness``, ``results/fairness-multi``): per workload and seed, Jain's index of GPU
    time over fair share without trading, the throughput without and with trading, its gain, the least user's work
    with trading over its work without and which user that is (0: the least sped up), and whether the paper's claim
    held; the claim's count and ranges, and the users' work against trading's valuation of their fair shares (their
    GPUs of each type at their jobs' mean speeds) without trading, and with trading for the users left below."""
    from experiments.fairness import TOLERANCE

    runs = _fairness_runs(results)
    if runs is None:
        return {}
    users = _fairness_runs(results, "fairness_users.csv")
    work = users.pivot_table(index=["jobs", "seed", "user"], columns="trading", values="work_per_s")
    valued = users[~users["trading"]].set_index(["jobs", "seed", "user"])["fair_work_per_s"]   # trading's valuation
    ratio = work[True] / work[False]
    least = ratio.groupby(level=["jobs", "seed"]).idxmin()                           # (jobs, seed, user)
    below = ratio < 1 - TOLERANCE                                                    # (the paper's profile's)
    rows = []
    for (jobs, seed), pair in runs.groupby(["jobs", "seed"], sort=False):
        base, traded = pair[~pair["trading"]].iloc[0], pair[pair["trading"]].iloc[0]
        rows.append({"jobs": jobs, "GPUs V100:P100:K80": base["cluster"], "seed": seed,
                     "Jain, no trading": f"{base['jain_gpu_time']:.3f}", "worst window": f"{base['jain_min']:.3f}",
                     "throughput, no trading (V100s)": round(base["throughput"], 2),
                     "with trading": round(traded["throughput"], 2),
                     "gain (%)": round(traded["throughput_gain_pct"], 1),
                     "least user, traded / not": f"{traded['min_user_ratio']:.3f}",
                     "that user": least[jobs, seed][2],
                     "claim held": "yes" if traded["claim_held"] else "no"})
    traded = runs[runs["trading"]]
    base = runs[~runs["trading"]]
    held = traded["claim_held"].astype(str).str.lower() == "true"
    gain = traded["throughput_gain_pct"]
    return {"fairness_table": pd.DataFrame(rows).to_markdown(index=False),
            "fairness_held": f"{int(held.sum())} of {len(held)}",
            "fairness_gain": f"{gain.min():.1f}% to {gain.max():.1f}%",
            "fairness_least": f"{traded['min_user_ratio'].min():.3f}",
            "fairness_jain": f"{base['jain_gpu_time'].min():.3f}",
            "fairness_jain_traded": f"{traded['jain_gpu_time'].min():.2f} to {traded['jain_gpu_time'].max():.2f}",
            "fairness_realized": _range(work[False] / valued),
            "fairness_below_valued": _range((work[True] / valued)[below]),
            "fairness_below_by": f"{100 * (1 - ratio[below].max()):.1f}% to {100 * (1 - ratio[below].min()):.1f}%"}


def _range(values: pd.Series) -> str:
    return f"{values.min():.3f} to {values.max():.3f}" if len(values) else "none"


ITEMS: tuple[Callable[[Path], dict[str, str]], ...] = (
    fidelity_default, fidelity_variants, refsim_table, runtime_table,
    lambda r: _gap(r, "gap-small", "small"), lambda r: _gap(r, "gap-medium", "medium"),
    frontier_table, defrag_table, mig_table, topology_tables, timeline_tables, bench_timeline_values,
    preemption_table, mig_time_table, hetero_tables, hetero_multi_table, interference_table, schedule_tables,
    pollux_tables, singularity_tables, synergy_tables, fairness_tables, failures_tables)
"""Every generator of generated items, in paper order."""


def render(results: Path) -> dict[str, str]:
    """Every generated item (tables and inline values) from the cached ``results``; studies not cached yet
    contribute nothing."""
    items: dict[str, str] = {}
    for make in ITEMS:
        items.update(make(results))
    return items


def fill(text: str, items: dict[str, str]) -> str:
    """``text`` with every generated block replaced by its item; a block without an item says how to make it."""
    def replace(match: re.Match) -> str:
        opening, kind, name, _, closing = match.groups()
        body = items.get(name, "*(not generated yet: run `python -m experiments.paper --quick`)*")
        return f"{opening}\n{body}\n{closing}" if kind == "table" else f"{opening}{body}{closing}"
    return BLOCK.sub(replace, text)


def table_files(items: dict[str, str]) -> dict[str, str]:
    """The contents of ``paper/tables/``: one ``NAME.md`` per table, and ``values.md`` listing the inline
    values."""
    files = {f"{name}.md": body + "\n" for name, body in items.items() if "\n" in body}
    values = [f"| {name} | {body} |" for name, body in items.items() if "\n" not in body]
    files["values.md"] = "\n".join(["| value | text |", "|:--|:--|", *values]) + "\n"
    return files


def draw_figures(results: Path, figures: Path) -> list[Path]:
    """The paper's figures from the cached results (those whose study has run)."""
    figures.mkdir(parents=True, exist_ok=True)
    drawn = []
    curves = _csv(results, "replay-default", "curves.csv")
    if curves is not None:
        drawn.append(plot_curves(curves, "alloc_ratio", figures / "alloc_curves.png",
                                 "openb default, ratio 1.3: GPU allocation", zoom=(100, 130)))
    variants = _csv(results, "replay-variants", "summary.csv")
    if variants is not None:
        drawn.append(plot_variant_grid(variants, figures / "variants.png", "GPU allocation at 130% per trace variant"))
    front = _csv(results, "frontier", "frontier.csv")
    if front is not None:
        default = front[front["trace"] == "default"] if (front["trace"] == "default").any() else front
        drawn.append(plot_frontier(default, openb_capacity_milli(), figures / "frontier.png",
                                   "openb default: policies against the optimum"))
        if front["trace"].nunique() > 1:
            drawn.append(plot_frontier_variants(front, openb_capacity_milli(), figures / "frontier_variants.png",
                                                "Unallocated GPUs at 130%: FGD against the certified floor"))
    moves = _csv(results, "defrag", "defrag.csv")
    if moves is not None:
        # one panel: every instance's state counts as one sample of the suite (means over instances)
        drawn.append(plot_defrag(moves.assign(trace="small suite, mean over instances"), figures / "defrag.png",
                                 "Admitted GPUs against moves"))
    mig, mig_curves = _csv(results, "mig", "mig.csv"), _csv(results, "mig", "mig_curves.csv")
    if mig is not None and mig_curves is not None:
        drawn.append(plot_mig(mig, mig_curves, figures / "mig.png", "MIG slices (A100-40GB)"))
    topo = _csv(results, "topology", "topology.csv")
    if topo is not None:
        drawn.append(plot_topology_misplaced(topo, figures / "topology.png", "openb, ratio 1.3"))
    runs, series, optimum = (_csv(results, "timeline", name) for name in ("timeline.csv", "series.csv", "optimum.csv"))
    if runs is not None and series is not None and optimum is not None:
        top = series[series["load"] == series["load"].max()]               # the left panel: the highest load
        first = top.iloc[0]
        drawn.append(plot_timeline(top, runs, optimum, openb_capacity_milli(), figures / "timeline.png",
                                   f"openb {first['trace']}, load {first['load']:g}, seed {first['seed']}"))
    runs, series = _csv(results, "preemption", "timeline.csv"), _csv(results, "preemption", "series.csv")
    if runs is not None and series is not None:
        top = series[series["load"] == series["load"].max()]
        first = top.iloc[0]
        none = pd.DataFrame(columns=[*top.columns[:6], "time_s", "question", "incumbent_milli", "bound_milli"])
        drawn.append(plot_timeline(top, runs, none, openb_capacity_milli(), figures / "preemption.png",
                                   f"openb {first['trace']}, {first['policy']} / {first['queue']}, load "
                                   f"{first['load']:g}, seed {first['seed']}"))
    inter = _csv(results, "interference", "interference.csv")
    if inter is not None:
        drawn.append(plot_interference(inter, figures / "interference.png"))
    fails = _csv(results, "failures", "failures.csv")
    if fails is not None:
        sweep = _csv(results, "failures", "interval.csv")
        drawn.append(plot_failures(fails, pd.DataFrame() if sweep is None else sweep, figures / "failures.png"))
    bound, diag = _csv(results, "schedule-bound", "schedule-bound.csv"), _csv(results, "schedule-bound",
                                                                                 "diagnostics.csv")
    if bound is not None and diag is not None:
        from experiments.schedule import plot_interval

        drawn.append(plot_interval(bound, diag, figures / "interval.png"))
    bound, diag = _schedule_bound(results, "schedule-bound.csv"), _schedule_bound(results, "diagnostics.csv")
    if bound is not None and diag is not None:
        from experiments.schedule import plot_interval_points

        drawn.append(plot_interval_points(bound, diag, figures / "interval-points.png"))
    starts = _csv(results, "schedule", "starts.csv")
    if starts is not None:
        drawn.append(_schedule_gantt(_csv(results, "schedule", "schedule.csv"), starts, figures / "gantt.png"))
    pair, others = _all_seeds(results), _csv(results, "hetero-policies", "hetero.csv")
    if pair is not None or others is not None:
        frame = pd.concat([f for f in (pair, others) if f is not None])
        gavel = _gavel_crosscheck(results)
        if gavel is not None:                   # Gavel's own Figure 8 runs, beside fgdopt's
            gavel = gavel[gavel["config"] == "fig8"].rename(columns={"rate_per_hour": "lambda_per_hour",
                                                                      "gavel_jct_s": "mean_jct_s"})
        drawn.append(plot_hetero(frame, figures / "hetero.png", gavel))
    runs = pollux_runs(results)
    if runs is not None:
        from experiments.pollux import plot as plot_pollux

        plot_pollux(runs, figures / "pollux.png")
        drawn.append(figures / "pollux.png")
    runs = singularity_runs(results)
    if runs is not None:
        from experiments.pollux import plot as plot_pollux

        plot_pollux(runs, figures / "singularity.png")
        drawn.append(figures / "singularity.png")
    single = _csv(results, "fairness", "fairness.csv")
    if single is not None:
        from experiments.fairness import plot as plot_fairness

        plot_fairness(_csv(results, "fairness", "fairness_series.csv"),
                      _csv(results, "fairness", "fairness_users.csv"), figures / "fairness.png")
        drawn.append(figures / "fairness.png")
    return drawn


def pollux_runs(results: Path) -> pd.DataFrame | None:
    """The committed ``pollux`` runs (``pollux-seeded.csv``) and fgdopt's ``tiresias`` and ``optimus`` runs of the
    same workloads at the same job loads (from ``pollux-deterministic.csv``): the rows of the Pollux figure, every
    policy averaged over the same workloads at a load."""
    det = _csv(results, "pollux-crosscheck", "pollux-deterministic.csv")
    seeded = _csv(results, "pollux-crosscheck", "pollux-seeded.csv")
    if det is None or seeded is None:
        return None
    pairs = seeded[["workload", "load"]].drop_duplicates()
    return pd.concat([seeded, det.merge(pairs, on=["workload", "load"])], ignore_index=True)


def _schedule_gantt(frame: pd.DataFrame, starts: pd.DataFrame, path: Path) -> Path:
    """The Gantt figure of 4.11: the generated ``small-time`` instance (at most 14 GPUs, mean JCT) where the best run is
    furthest above the optimum, that run above the optimum's schedule."""
    from fgdopt.plot import plot_gantt
    from fgdopt.timeline.schedule import Schedule
    from fgdopt.timeline.suites import time_suite

    suite = {i.name: i for i in time_suite("small-time") if not i.optimum and i.cluster.total_gpus <= 14}
    jct = frame[(frame["objective"] == "mean-jct") & frame["instance"].isin(list(suite))]
    best = jct[jct["status"] == "engine"].groupby("instance")["value"].min()
    opt = jct[jct["method"] == "optimum"].set_index("instance")["value"]
    name = str(((best - opt) / opt).idxmax())
    inst = suite[name]
    rows = starts[(starts["instance"] == name) & (starts["objective"] == "mean-jct")]
    schedules = {}
    for method, part in sorted(rows.groupby("method", sort=False), key=lambda kv: kv[0] == "optimum"):
        gpus = tuple(() if not isinstance(s, str) and pd.isna(s) else tuple(int(float(g)) for g in str(s).split())
                     for s in part["gpus"])
        schedules[method] = Schedule(part["start_s"].to_numpy(), part["node"].to_numpy(), gpus)
    gap = 100 * (best[name] - opt[name]) / opt[name]
    return plot_gantt(inst.cluster, inst.jobs, schedules, path,
                      f"{name}: best run ({gap:.1f}% above) against the optimal schedule (mean JCT)")


def write_report(results: Path, paper: Path = PAPER_DIR) -> list[Path]:
    """Write ``paper/tables/*.md``, ``paper/figures/*.png`` and refill ``paper/paper.md``; returns the files."""
    items = render(results)
    tables = paper / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    written = []
    for name, body in table_files(items).items():
        path = tables / name
        path.write_text(body)
        written.append(path)
    written += draw_figures(results, paper / "figures")
    source = paper / "paper.md"
    if source.is_file():
        source.write_text(fill(source.read_text(), items))
        written.append(source)
    return written
