"""Figures of the studies: the paper's line plots and bar charts, and pictures of one node's GPUs.

The ``plot_*`` functions of a study take the long-format frames its experiment writes and a path, and write
one PNG; :func:`plot_node_gpus` draws on given (or new) axes and returns them. Figures are built with
:class:`matplotlib.figure.Figure`, not pyplot, so they work under any (or no) display backend and leave
pyplot's global state alone.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fgdopt.model import GPU_MILLI

if TYPE_CHECKING:
    from fgdopt.state import ClusterState

METRIC_LABELS = {
    "alloc_ratio": "GPU allocation ratio (%)",
    "frag_rate": "GPU fragmentation rate (%)",
    "frag_milli": "GPU fragmentation (milli-GPU)",
    "unallocated_gpus": "Unallocated GPUs",
    "alloc_ratio_130": "GPU allocation at 130% arrival (%)",
}


DPI = 130
"""Resolution of every figure (dots per inch)."""


def overflow_px(fig: Figure) -> float:
    """How far (pixels at :data:`DPI`) the drawn content of ``fig`` (titles, labels, legends, axes) reaches past
    the canvas' edges: 0 when nothing is cut, e.g. a title longer than its figure is wide.

    Parameters
    ----------
    fig : a laid-out figure.

    Returns
    -------
    The largest overflow over the four edges, in pixels (0 if none).
    """
    FigureCanvasAgg(fig)                      # a renderer to measure texts with, as savefig draws them
    fig.set_dpi(DPI)
    tight = fig.get_tightbbox(fig.canvas.get_renderer())      # inches
    width, height = fig.get_size_inches()
    over = max(-tight.x0, -tight.y0, tight.x1 - width, tight.y1 - height, 0.0)
    return float(over * DPI)


def _save(fig: Figure, path: str | Path) -> Path:
    """Lay out ``fig``, write it to ``path`` (PNG at :data:`DPI`) and return the path.

    Warns (``UserWarning``) when content is cut at the figure's edge (more than 1 pixel, :func:`overflow_px`).
    """
    fig.tight_layout()
    return _save_laid_out(fig, path)


def _save_laid_out(fig: Figure, path: str | Path) -> Path:
    """:func:`_save` of a figure already laid out."""
    path = Path(path)
    over = overflow_px(fig)
    if over > 1.0:
        warnings.warn(f"{path.name}: content reaches {over:.0f} px past the figure's edge (cut)", stacklevel=3)
    fig.savefig(path, dpi=DPI)
    return path


def plot_curves(curves: pd.DataFrame, metric: str, path: str | Path, title: str = "",
                zoom: tuple[float, float] | None = None) -> Path:
    """One line per policy: ``metric`` (mean over seeds) against the arrived workload (%).

    ``curves`` needs columns ``policy, seed, arrived_pct`` and ``metric``; the min-max band over
    seeds is shaded. ``zoom=(x0, x1)`` adds a right panel restricted to that arrived range, with its
    own y scale, where close policies separate.
    """
    panels = 2 if zoom else 1
    fig = Figure(figsize=(7 * panels, 4.5))
    axes = fig.subplots(1, panels, squeeze=False)
    for k, ax in enumerate(axes[0]):
        for policy, frame in curves.groupby("policy", sort=False):
            stats = frame.groupby("arrived_pct")[metric].agg(["mean", "min", "max"])
            if k:
                stats = stats.loc[zoom[0]:zoom[1]]
            (line,) = ax.plot(stats.index, stats["mean"], label=policy, linewidth=1.6)
            ax.fill_between(stats.index, stats["min"], stats["max"], color=line.get_color(), alpha=0.15, linewidth=0)
        ax.set_xlabel("Arrived workload (% of cluster GPU capacity)")
        ax.set_ylabel(METRIC_LABELS.get(metric, metric))
        ax.grid(alpha=0.3)
        ax.set_title(f"{title} (zoom)" if k else title)
    if zoom:
        ax = axes[0][1]
        lo = curves[curves["arrived_pct"] >= zoom[0]].groupby(["policy", "arrived_pct"])[metric].mean()
        top = lo.groupby("policy").max().sort_values(ascending=False)
        ax.set_ylim(top.iloc[: min(len(top), 5)].min() - 3, top.max() + 1)   # the five best policies in view
    axes[0][0].legend(fontsize=8, ncol=2)
    return _save(fig, path)


def _bars(ax: Axes, summary: pd.DataFrame, traces: list[str], metric: str) -> None:
    """Grouped bars of ``metric`` on ``ax`` (see :func:`plot_family_bars`)."""
    frame = summary[summary["trace"].isin(traces)]
    stats = frame.groupby(["trace", "policy"], sort=False)[metric].agg(["mean", "min", "max"])
    policies = list(dict.fromkeys(frame["policy"]))
    means = stats["mean"]
    regular = means[means >= means.median() - 30]
    bottom = max(0.0, float(regular.min()) - 3) if len(regular) else 0.0
    width = 0.8 / max(1, len(policies))
    for j, policy in enumerate(policies):
        xs, heights, lo, hi = [], [], [], []
        for i, trace in enumerate(traces):
            if (trace, policy) in stats.index:
                row = stats.loc[(trace, policy)]
                xs.append(i + (j - (len(policies) - 1) / 2) * width)
                heights.append(row["mean"])
                lo.append(row["mean"] - row["min"])
                hi.append(row["max"] - row["mean"])
                if row["mean"] < bottom:
                    ax.text(xs[-1], bottom + 0.3, f"{row['mean']:.0f}", rotation=90, ha="center", va="bottom",
                            fontsize=7)
        ax.bar(xs, heights, width, yerr=[lo, hi], capsize=2, label=policy, color=f"C{j}")
    ax.set_xticks(range(len(traces)), traces)
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.set_ylim(bottom, min(100.0, float(stats["max"].max()) + 1))
    ax.grid(axis="y", alpha=0.3)


def plot_family_bars(summary: pd.DataFrame, traces: list[str], path: str | Path, title: str = "",
                     metric: str = "alloc_ratio_130") -> Path:
    """Grouped bars: one group per trace of ``traces``, one bar per policy, mean of ``metric`` over
    seeds with min-max whiskers (``summary`` has columns ``trace, policy, seed`` and ``metric``).

    The y axis starts a little below the lowest mean that is not an outlier (more than 30 points
    under the median), so close policies stay distinguishable; an outlier's bar is cut at the
    bottom and its value written on it.
    """
    fig = Figure(figsize=(max(6.0, 1.3 * len(traces) + 3), 4.5))
    ax = fig.subplots()
    _bars(ax, summary, traces, metric)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title)
    return _save(fig, path)


def plot_variant_grid(summary: pd.DataFrame, path: str | Path, title: str = "", metric: str = "alloc_ratio_130",
                      families: tuple[str, ...] = ("cpu", "gpushare", "multigpu", "gpuspec")) -> Path:
    """The trace variants at page width: a 2 x 2 grid, one panel per family of ``families`` (its variants after
    ``default``, the reference, where present), grouped bars as in :func:`plot_family_bars` and one legend.

    ``summary`` has columns ``trace, policy, seed`` and ``metric`` (``summary.csv`` of ``experiments.openb``);
    a variant belongs to the family its name starts with; families without a variant are left out.
    """
    traces = list(dict.fromkeys(summary["trace"]))
    head = ["default"] if "default" in traces else []
    panels = [(fam, head + [t for t in traces if t.startswith(fam)]) for fam in families]
    panels = [(fam, group) for fam, group in panels if len(group) > len(head)]
    cols = 2 if len(panels) > 1 else 1
    rows = -(-len(panels) // cols)
    fig = Figure(figsize=(6.5 * cols, 3.4 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, (fam, group) in zip(axes, panels, strict=False):
        _bars(ax, summary, group, metric)
        ax.set_title(f"{fam}* variants" + (" (default first)" if head else ""), fontsize=10)
        ax.tick_params(axis="x", labelsize=8, rotation=30)
        ax.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8, bbox_to_anchor=(0.5, 0.95),
               frameon=False)
    fig.suptitle(title, y=0.995)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return _save_laid_out(fig, path)


def plot_defrag(frame: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Admitted waiting GPUs against moves: one panel per ``trace`` (the whole cluster, each slice) and
    replay ``policy`` (if the column exists), one line per ``method`` through its budgets (mean over seeds
    of ``moves`` and ``admitted_milli`` / 1000). Exact runs also show their proven bound, dotted with hollow
    down-triangles, at x = the move budget (no plan of at most that many moves admits more; a budget whose run proved
    no bound is left out, so that one bound alone still shows).

    ``frame`` has the columns written by ``python -m experiments.defrag`` (``defrag.csv``).
    """
    keys = ["trace", "policy"] if "policy" in frame.columns else ["trace"]
    panels = list(dict.fromkeys(map(tuple, frame[keys].to_numpy().tolist())))
    cols = min(len(panels), 2)
    rows = -(-len(panels) // cols)
    fig = Figure(figsize=(6 * cols, 4.5 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes, panels, strict=False):
        part = frame[(frame[keys] == pd.Series(panel, index=keys)).all(axis=1)]
        trace = " / ".join(str(x) for x in panel)
        for method, sub in part.groupby("method", sort=False):
            stats = sub.groupby("budget")[["moves", "admitted_milli", "bound_milli"]].mean().sort_index()
            (line,) = ax.plot(stats["moves"], stats["admitted_milli"] / 1000, marker="o", markersize=3,
                              linewidth=1.4, label=method)
            bound = stats["bound_milli"].dropna() / 1000
            if len(bound):                       # at x = the budget: no plan of at most that many moves admits more
                ax.plot(bound.index, bound.to_numpy(), linestyle=":", marker="v", markersize=5, fillstyle="none",
                        color=line.get_color(), label=f"{method} bound (at its move budget)")
        ax.set_xlabel("Moved tasks")
        ax.set_ylabel("Admitted waiting GPUs")
        ax.grid(alpha=0.3)
        ax.set_title(f"{title}\n{trace}" if title else trace, fontsize=10)
        ax.legend(fontsize=7)
    return _save(fig, path)


def plot_frontier(frame: pd.DataFrame, capacity_milli: int, path: str | Path, title: str = "") -> Path:
    """Allocation against arrived workload: one line per policy and the offline optimum as a band from its
    incumbent to its proven bound (means over seeds; the frame of ``python -m experiments.frontier``).

    ``frame`` needs columns ``seed, arrived_pct, method, kind, allocated_milli, bound_milli`` (``kind`` is
    ``policy`` or ``optimum``); allocations are drawn in percent of ``capacity_milli`` (milli-GPU). The optimum is
    labelled on the plot; where its band is too thin to see (under :data:`THIN_BAND` of the axis height), the
    certified gap (bound - incumbent, GPUs and % of capacity) is printed at the point; the legend sits beside the
    axes, off the data.
    """
    fig = Figure(figsize=(8.5, 4.5))
    ax = fig.subplots()
    scale = 100.0 / capacity_milli
    for method, sub in frame[frame["kind"] == "policy"].groupby("method", sort=False):
        mean = sub.groupby("arrived_pct")["allocated_milli"].mean() * scale
        ax.plot(mean.index, mean.to_numpy(), marker="o", markersize=3, linewidth=1.4, label=method)
    opt = frame[frame["kind"] == "optimum"].groupby("arrived_pct")[["allocated_milli", "bound_milli"]].mean() * scale
    if len(opt):
        ax.fill_between(opt.index, opt["allocated_milli"], opt["bound_milli"], color="black", alpha=0.25,
                        linewidth=0, label="optimum: incumbent to bound")
        ax.plot(opt.index, opt["allocated_milli"], color="black", linewidth=1.6, marker="s", markersize=3.5,
                label="optimum: best placement found")
        ax.plot(opt.index, opt["bound_milli"], color="black", linewidth=1.0, linestyle="--",
                label="optimum: proven bound")
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + 0.06 * (high - low))  # room for the labels above the optimum
        span = ax.get_ylim()[1] - ax.get_ylim()[0]
        last = opt.index[-1]  # the label ends at the last point, above the line (it rises with the workload)
        ax.annotate("offline optimum", (last, opt.loc[last, "bound_milli"]), xytext=(-4, 8),
                    textcoords="offset points", ha="right", va="bottom", fontsize=8, fontweight="bold")
        for k, (x, row) in enumerate(opt.iterrows()):
            gap = row["bound_milli"] - row["allocated_milli"]
            if gap < THIN_BAND * span:
                gpus = gap / scale / GPU_MILLI
                ha = "left" if k == 0 and len(opt) > 1 else "right" if k == len(opt) - 1 else "center"
                ax.annotate(f"certified gap {gpus:.1f} GPUs ({gap:.3f}%)", (x, row["allocated_milli"]),
                            xytext=(0, -7), textcoords="offset points", ha=ha, va="top", fontsize=7, color="0.2",
                            bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "0.7",
                                  "linewidth": 0.5, "alpha": 0.9})
    ax.set_xlabel("Arrived workload (% of cluster GPU capacity)")
    ax.set_ylabel("GPU allocation (% of capacity)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title)
    return _save(fig, path)


THIN_BAND = 0.02
"""Below this share of the axis height, :func:`plot_frontier` prints the optimum's gap instead of relying on its
band (two points of openb's 6212 GPUs: a 0.1 % gap is 1/30 of a 3-point axis, invisible at 100 %)."""


def plot_frontier_variants(frame: pd.DataFrame, capacity_milli: int, path: str | Path, title: str = "",
                           policy: str = "fgd") -> Path:
    """Per trace variant at the last arrived point (means over seeds): the GPUs ``policy`` leaves unallocated
    (bar) against the certified floor, the fewest any placement of the same tasks can leave (capacity - bound,
    black tick), and the best placement found (hollow marker); variants whose gap is not certified within 0.1 %
    of capacity are marked with an asterisk. Frame: ``experiments.frontier``'s."""
    last = frame[frame["arrived_pct"] == frame.groupby("trace")["arrived_pct"].transform("max")]
    traces = list(dict.fromkeys(last["trace"]))
    fig = Figure(figsize=(max(7.0, 0.42 * len(traces) + 2.5), 4.5))
    ax = fig.subplots()
    x = np.arange(len(traces))
    idle = np.array([(capacity_milli - last[(last["trace"] == t) & (last["method"] == policy)]["allocated_milli"]
                      ).mean() / GPU_MILLI for t in traces])
    opt = last[last["kind"] == "optimum"].groupby("trace", sort=False)
    floor = np.array([(capacity_milli - opt.get_group(t)["bound_milli"]).mean() / GPU_MILLI for t in traces])
    found = np.array([(capacity_milli - opt.get_group(t)["allocated_milli"]).mean() / GPU_MILLI for t in traces])
    ax.bar(x, idle, color="C5", alpha=0.8, label=f"{policy}: unallocated GPUs")
    ax.scatter(x, found, marker="o", s=28, facecolors="none", edgecolors="black", zorder=3,
               label="best placement found: unallocated")
    ax.scatter(x, floor, marker="_", s=220, linewidths=2.2, color="black", zorder=4,
               label="certified floor (no placement leaves fewer)")
    certified = [(opt.get_group(t)["bound_milli"] - opt.get_group(t)["allocated_milli"]).max()
                 <= 0.001 * capacity_milli for t in traces]
    ax.set_xticks(x, [t if ok else t + "*" for t, ok in zip(traces, certified, strict=True)], rotation=60,
                  ha="right", fontsize=8)
    ax.set_ylabel("GPUs left unallocated")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title)
    return _save(fig, path)


def plot_topology_misplaced(frame: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Misplaced multi-GPU tasks (% of the placed ones) against GPU allocation at 130%: one panel per ``trace``,
    one marker per ``policy`` (colour) and ``gpu_choice`` (shape), means over seeds.

    ``frame`` has the columns of ``topology.csv`` (``python -m experiments.topology``).
    """
    markers = {"lowest-index": "o", "best-ring": "s", "topo-fgd": "^"}
    traces = list(dict.fromkeys(frame["trace"]))
    fig = Figure(figsize=(6 * len(traces), 4.5))
    axes = fig.subplots(1, len(traces), squeeze=False)[0]
    colours = {p: f"C{i}" for i, p in enumerate(dict.fromkeys(frame["policy"]))}
    for ax, trace in zip(axes, traces, strict=True):
        part = frame[frame["trace"] == trace]
        for (policy, choice), sub in part.groupby(["policy", "gpu_choice"], sort=False):
            share = 100 * sub["misplaced_tasks"].sum() / max(int(sub["multi_gpu_tasks"].sum()), 1)
            hollow = choice == "best-ring"          # topo-fgd often lands on the same point: keep it visible
            ax.scatter(sub["alloc_ratio_130"].mean(), share, marker=markers.get(choice, "x"),
                       s=90 if hollow else 45, label=f"{policy} / {choice}", linewidths=1.5,
                       facecolors="none" if hollow else colours[policy], edgecolors=colours[policy])
        ax.set_xlabel(METRIC_LABELS["alloc_ratio_130"])
        ax.set_ylabel("Misplaced multi-GPU tasks (%)")
        ax.grid(alpha=0.3)
        ax.set_title(f"{title} — {trace}" if title else trace)
        ax.legend(fontsize=7)
    return _save(fig, path)


def plot_topology_node(topology, gpus, path: str | Path, title: str = "") -> Path:
    """A node's GPU interconnect (:class:`fgdopt.topology.Topology`) drawn with networkx, ``gpus`` highlighted.

    NVLink / NVSwitch pairs are solid lines (width = GB/s), PCIe paths are omitted except between highlighted
    GPUs, where every pair is labelled with its kind.
    """
    import networkx as nx

    graph = topology.graph
    chosen = set(int(g) for g in gpus)
    pos = nx.circular_layout(graph)
    fig = Figure(figsize=(5.5, 5.5))
    ax = fig.subplots()
    fast = [(a, b) for a, b, k in graph.edges(data="kind") if k in ("NVLink", "NVSwitch")]
    widths = [graph.edges[e]["gbps"] / 25 for e in fast]
    nx.draw_networkx_edges(graph, pos, edgelist=fast, width=widths, edge_color="0.6", ax=ax)
    inside = [(a, b) for a, b in graph.edges if a in chosen and b in chosen]
    nx.draw_networkx_edges(graph, pos, edgelist=inside, width=2.5, edge_color="C3",
                           style=[("-" if graph.edges[e]["kind"] in ("NVLink", "NVSwitch") else "--") for e in inside],
                           ax=ax)
    nx.draw_networkx_edge_labels(graph, pos, edge_labels={e: f"{graph.edges[e]['kind']} {graph.edges[e]['gbps']:g}"
                                                          for e in inside}, font_size=7, ax=ax)
    nx.draw_networkx_nodes(graph, pos, node_color=["C3" if g in chosen else "C0" for g in graph.nodes],
                           node_size=600, ax=ax)
    nx.draw_networkx_labels(graph, pos, labels={g: f"GPU{g}" for g in graph.nodes}, font_size=8, font_color="white",
                            ax=ax)
    ax.set_title(title or topology.name, fontsize=8)
    ax.set_axis_off()
    return _save(fig, path)


def plot_mig(frame: pd.DataFrame, curves: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """The MIG study (``python -m experiments.mig``): left, each policy's accepted slices as a % of the exact
    optimum (best incumbent) per arrival; right, the online curve (accepted vs arrived memory slices, %).

    ``frame`` has the columns of ``mig.csv`` plus ``arrival`` (percent); ``curves`` has ``method``,
    ``arrived_pct``, ``accepted_pct``.
    """
    fig = Figure(figsize=(10, 4))
    left, right = fig.subplots(1, 2)
    pol = frame[frame["kind"] == "policy"]
    best = frame[frame["kind"] == "exact"].groupby("instance")["accepted_slices"].max()
    pol = pol.assign(ratio=100.0 * pol["accepted_slices"] / pol["instance"].map(best))
    table = pol.groupby(["arrival", "method"])["ratio"].mean().unstack("method")
    table.plot.bar(ax=left, rot=0)
    left.set_ylim(max(0.0, float(table.min().min()) - 5), 100.5)
    left.set_xlabel("arrived slices (% of capacity)")
    left.set_ylabel("accepted slices (% of exact optimum)")
    left.legend(fontsize=7)
    for k, (method, grp) in enumerate(curves.groupby("method")):   # styles: equal curves stay visible
        right.plot(grp["arrived_pct"], grp["accepted_pct"], label=method, linestyle=("-", "--", "-.", ":")[k % 4],
                   linewidth=1.6)
    right.plot([0, 130], [0, 130], ":", color="0.6", lw=0.8)
    right.set_xlabel("arrived slices (% of capacity)")
    right.set_ylabel("accepted slices (% of capacity)")
    right.legend(fontsize=7)
    fig.suptitle(title or "MIG placement: policies vs the exact optimum", fontsize=11)
    return _save(fig, path)


def plot_node_gpus(state: ClusterState, node: int, ax: Axes | None = None, title: str | None = None) -> Axes:
    """One bar per GPU of ``node`` in ``state`` (:class:`~fgdopt.state.ClusterState`): the milli-GPU each task
    uses on it, stacked (one segment per task, labelled ``task i``, coloured by task index so that the same task
    keeps its colour across pictures), and the free part on top (white, hatched, labelled ``free``), up to one GPU
    (1000 milli-GPU).

    Draws on ``ax`` if given, else on a new :class:`~matplotlib.figure.Figure`; returns the axes. Each task segment
    is one bar container labelled ``task i`` (its heights: the task's milli-GPU on each GPU it uses), the free part
    one container labelled ``free`` (heights: ``state.gpu_left[node]``). CPU-only tasks use no GPU: the title lists
    them, with the node's free CPU (milli-cores).
    """
    if ax is None:
        ax = Figure(figsize=(1.0 + 0.9 * max(int(state.cluster.gpu[node]), 1), 3.2)).subplots()
    n_gpus = int(state.cluster.gpu[node])
    xs = np.arange(n_gpus)
    bottom = np.zeros(n_gpus, dtype=np.int64)
    cpu_only = []
    for i in np.flatnonzero(state.node_of == node).tolist():
        gpus = list(state.gpus_of[i])
        if not gpus:
            cpu_only.append(i)
            continue
        heights = np.zeros(n_gpus, dtype=np.int64)
        heights[gpus] = int(state.tasks.gpu_milli[i])
        bars = ax.bar(xs[gpus], heights[gpus], 0.7, bottom=bottom[gpus], color=f"C{i % 10}", edgecolor="black",
                      linewidth=0.6, label=f"task {i}")
        ax.bar_label(bars, labels=[f"{i}"] * len(gpus), label_type="center", fontsize=7)
        bottom += heights
    free = state.gpu_left[node, :n_gpus]
    ax.bar(xs, free, 0.7, bottom=bottom, color="white", edgecolor="0.5", hatch="//", linewidth=0.6, label="free")
    ax.set_xticks(xs, [f"GPU {g}" for g in xs])
    ax.set_ylim(0, GPU_MILLI)
    ax.set_ylabel("milli-GPU")
    extra = f"; CPU-only tasks {cpu_only}" if cpu_only else ""
    cpu = f"{int(state.cpu_left[node])}/{int(state.cluster.cpu_milli[node])} milli-cores free"
    ax.set_title(title if title is not None else f"node {node} ({state.cluster.model[node]}): {cpu}{extra}",
                 fontsize=8)
    return ax


RUN_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""Markers of the runs of :func:`plot_timeline`, in run order (with the colours ``C0``, ``C1``, ...)."""
RUN_DASHES = ("-", "--", "-.", (0, (1, 1)))
"""Line styles of the runs' mean-wait lines in :func:`plot_timeline`."""


def _rows_like(frame: pd.DataFrame, key: dict) -> pd.DataFrame:
    """The rows of ``frame`` whose columns equal ``key``'s values, compared as text (as the CSVs write them); a
    missing value (NaN, e.g. the load of a user's workload, which has none) matches a missing one."""
    mask = np.ones(len(frame), dtype=bool)
    for k, v in key.items():
        column = frame[k]
        mask &= column.isna().to_numpy() if pd.isna(v) else (column.astype(str) == str(v)).fillna(False).to_numpy()
    return frame[mask]


def _marker_every(points: int, k: int, n: int) -> tuple[int, int]:
    """``markevery`` of run ``k`` of ``n`` on a curve of ``points`` points: about 10 markers, each run's shifted by
    ``k / n`` of the step, so that the markers of curves that coincide interleave instead of hiding each other."""
    step = max(1, points // 10)
    return (k * step) // n, step


def plot_timeline(series: pd.DataFrame, runs: pd.DataFrame, optimum: pd.DataFrame, capacity_milli: int,
                  path: str | Path, title: str = "", jobs: pd.DataFrame | None = None) -> Path:
    """Over time (the frames of ``python -m experiments.timeline``), one colour and marker per run (policy, queue
    and, where they vary, mechanism and MIG layout) in every panel, and legends for all panels below them (the runs;
    the line styles).

    Left: for the first (trace, seed, load) of ``series``, GPU allocation (solid) and pending GPU demand (dotted)
    in % of capacity against time (hours, minutes or seconds as the span asks), and the optimum of the jobs present
    at the sampled instants: its incumbent (hollow hexagon), a bar up to its proven bound (a cluster without GPUs:
    the panel says so). Middle (when ``jobs`` is
    given): the empirical CDF of the measured jobs' completion times for the same job set, on a log axis when they
    span a decade or more (a completion time below 1 s drawn at 1 s, as the axis label then says), else linear.
    Right: mean wait of the measured jobs (means over seeds, from ``runs``): against offered load (log scale) when
    ``runs`` holds two loads or more, else one bar per run (linear scale, the value written on it). Runs whose
    curves coincide with an earlier run's in every panel are named so in the legend; each later run is drawn thinner
    and its markers offset (:func:`_marker_every`), so that both stay visible. A missing load (NaN: a user's
    workload) is a key like any other.

    ``series`` needs ``trace, seed, load, policy, queue, time_s, alloc_milli, pending_milli``; ``runs`` the run
    keys and ``mean_wait_s``; ``optimum`` the run keys, ``time_s, question, incumbent_milli, bound_milli``;
    ``jobs`` the run keys, ``submit_s, finish_s`` and optionally ``measured`` (milli-GPU, seconds).
    """
    from matplotlib.lines import Line2D

    first = dict(series.iloc[0][["trace", "seed", "load"]])
    part, opt_part = _rows_like(series, first), _rows_like(optimum, first)
    opt_part = opt_part[opt_part["question"] == "placement"]
    by = [k for k in ("policy", "queue", "mechanism", "layout")
          if k in runs and (k in ("policy", "queue") or runs[k].nunique() > 1)]
    keys = list(dict.fromkeys(zip(*(runs[k] for k in by), strict=True)))
    names = [" / ".join(map(str, run)) for run in keys]
    scale = 100.0 / capacity_milli if capacity_milli else np.nan     # no GPUs: no allocation to draw
    lines = runs["load"].nunique(dropna=False) >= 2
    drawn = []                                                  # per run: its series, JCTs, waits and optimum
    for run in keys:
        key = dict(zip(by, run, strict=True))
        sub = _rows_like(part, key)
        jct = np.array([])
        if jobs is not None:
            mine = _rows_like(_rows_like(jobs, first), key)
            mine = mine[mine["measured"].astype(bool)] if "measured" in mine else mine
            jct = np.sort((mine["finish_s"] - mine["submit_s"]).dropna().to_numpy())
        wait = _rows_like(runs, key).groupby("load", dropna=False)["mean_wait_s"].mean()
        drawn.append((sub, jct, wait, _rows_like(opt_part, key)))

    def same(a: tuple, b: tuple) -> bool:
        return (np.array_equal(a[0][["time_s", "alloc_milli", "pending_milli"]].to_numpy(),
                               b[0][["time_s", "alloc_milli", "pending_milli"]].to_numpy())
                and np.array_equal(a[1], b[1]) and a[2].index.equals(b[2].index)
                and np.allclose(a[2].to_numpy(), b[2].to_numpy(), equal_nan=True)
                and np.array_equal(a[3][["incumbent_milli", "bound_milli"]].to_numpy(),
                                   b[3][["incumbent_milli", "bound_milli"]].to_numpy()))

    twin = [next((i for i in range(k) if same(drawn[i], drawn[k])), None) for k in range(len(keys))]

    all_jct = np.concatenate([d[1] for d in drawn]) if drawn else np.array([])
    # a log axis over less than a decade shows one tick label repeated (1e9, 1e9, ...): linear there
    log_jct = len(all_jct) > 0 and all_jct.max() >= 10 * max(all_jct.min(), 1.0)
    floor_jct = 1.0 if log_jct else -np.inf                     # a log axis draws a JCT below 1 s at 1 s
    panels = 3 if jobs is not None else 2
    fig = Figure(figsize=(5.2 * panels + 1, 5.4), dpi=DPI)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, panels, gridspec_kw={"width_ratios": [1.5] + [1] * (panels - 1)})
    ax, waits = axes[0], axes[-1]
    span = float(part["time_s"].max() - part["time_s"].min()) if len(part) else 0.0
    unit, per = ("hours", 3600.0) if span >= 7200 else ("minutes", 60.0) if span >= 120 else ("seconds", 1.0)
    dx = 0.01 * span / per
    n, handles = len(keys), []
    for k, (name, (sub, jct, wait, opt)) in enumerate(zip(names, drawn, strict=True)):
        style = {"color": f"C{k}", "marker": RUN_MARKERS[k % len(RUN_MARKERS)],
                 "linewidth": 1.1 + 1.2 * (n - 1 - k) / max(n - 1, 1)}   # the first run widest, under the others
        every = _marker_every(len(sub), k, n)
        (line,) = ax.plot(sub["time_s"] / per, sub["alloc_milli"] * scale, markevery=every, markersize=5, **style)
        ax.plot(sub["time_s"] / per, sub["pending_milli"] * scale, linestyle=":", markevery=every, markersize=3.5,
                markerfacecolor="none", **style)
        if len(opt):
            lo, hi = opt["incumbent_milli"] * scale, opt["bound_milli"] * scale
            ax.errorbar(opt["time_s"] / per + (k - (n - 1) / 2) * dx, lo, yerr=[np.zeros(len(lo)), hi - lo],
                        fmt="H", markersize=10, markerfacecolor="white", markeredgewidth=2, color=f"C{k}",
                        elinewidth=2.5, capsize=6, capthick=2, zorder=5)
        if jobs is not None and len(jct):
            axes[1].plot(np.maximum(jct, floor_jct), np.arange(1, len(jct) + 1) / len(jct), drawstyle="steps-post",
                         markevery=_marker_every(len(jct), k, n), markersize=5, **style)
        if lines:
            waits.plot(wait.index, np.maximum(wait.to_numpy(), 0.1), linestyle=RUN_DASHES[k % len(RUN_DASHES)],
                       markersize=6, **style)
        else:
            bar = waits.bar(k, float(wait.mean()), 0.7, color=f"C{k}", edgecolor="black", linewidth=0.5)
            waits.bar_label(bar, labels=[f"{float(wait.mean()):.1f} s"], fontsize=7, padding=2)
        line.set_label(name if twin[k] is None else f"{name} (same curves as {names[twin[k]]})")
        handles.append(line)
    ax.set_xlabel(f"Time ({unit})")
    ax.set_ylabel("% of GPU capacity")
    ax.grid(alpha=0.3)
    ax.set_title("GPU allocation and pending demand", fontsize=9)
    if not capacity_milli:                                      # said, not an empty panel
        ax.text(0.5, 0.5, "the cluster has no GPUs:\nno GPU allocation to draw", transform=ax.transAxes,
                ha="center", va="center", fontsize=9, color="0.3")
    if jobs is not None:
        if log_jct:
            axes[1].set_xscale("log")
        clipped = "; below 1 s drawn at 1 s" if log_jct and all_jct.min() < 1.0 else ""
        axes[1].set_xlabel(f"Job completion time (s{', log scale' if log_jct else ''}{clipped})")
        axes[1].set_ylabel("Fraction of measured jobs")
        axes[1].set_ylim(0, 1.02)
        axes[1].grid(alpha=0.3)
        axes[1].set_title("Completion time CDF", fontsize=9)
    if lines:
        loads = sorted(runs["load"].dropna().unique())
        if len(loads) <= 8:
            waits.set_xticks(loads, [f"{v:g}" for v in loads])
        waits.set_yscale("log")
        waits.set_xlabel("Offered load (fraction of GPU capacity)")
        waits.set_ylabel("Mean wait (s, log scale; 0 drawn at 0.1)")
        waits.set_title("Mean wait against offered load", fontsize=9)
    else:
        load = runs["load"].iloc[0]
        waits.set_xticks(range(n), names, rotation=20 if n > 2 else 0, ha="right" if n > 2 else "center", fontsize=7)
        waits.set_xlim(-0.6, n - 0.4)
        waits.set_ylim(0, 1.15 * max(max((float(d[2].mean()) for d in drawn), default=0.0), 1.0))
        waits.set_ylabel("Mean wait (s)")
        waits.set_title("Mean wait" + ("" if pd.isna(load) else f" at offered load {load:g}"), fontsize=9)
    waits.grid(alpha=0.3, axis="y" if not lines else "both")
    grey = {"color": "0.35"}
    styles = [Line2D([], [], linewidth=1.4, label="GPU allocated", **grey),
              Line2D([], [], linewidth=1.4, linestyle=":", label="pending GPU demand", **grey)]
    if len(opt_part):
        styles.append(Line2D([], [], linewidth=0, marker="H", markersize=9, markerfacecolor="white",
                             markeredgewidth=2, label="optimum of the jobs present: incumbent (up to its bound)",
                             **grey))
    renderer = fig.canvas.get_renderer()
    low = 0.0                                                   # two rows of legends below the panels: styles, runs
    for entries, ncol in ((styles, len(styles)), (handles, min(n, 4))):
        legend = fig.legend(handles=entries, loc="lower center", bbox_to_anchor=(0.5, low), ncol=ncol, fontsize=8,
                            frameon=False)
        low += legend.get_window_extent(renderer).height / (fig.get_figheight() * fig.dpi)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, low + 0.01, 1, 0.95 if title else 1))
    return _save_laid_out(fig, path)


def plot_hetero(runs: pd.DataFrame, path: str | Path, reference: pd.DataFrame | None = None) -> Path:
    """Heterogeneous GPUs (the frame of ``python -m experiments.hetero``), Gavel's Figure 8 form.

    Left: mean JCT (hours) of the measured jobs against the arrival rate (jobs/hour), one line per policy, means over
    seeds, heterogeneity-aware policies solid and the others dashed. Right: the same runs' finish-time fairness
    (mean rho). Static-batch rows (rate ``inf``) are left out. ``runs`` needs ``policy, lambda_per_hour,
    mean_jct_s, mean_rho``. ``reference``: another simulator's runs of the same points (``policy, lambda_per_hour,
    mean_jct_s``, e.g. Gavel's own), drawn on the left as crosses in each policy's colour (means over seeds).
    """
    runs = runs[np.isfinite(runs["lambda_per_hour"].astype(float))]
    fig = Figure(figsize=(11, 4.6))
    jct_ax, rho_ax = fig.subplots(1, 2)
    colour = {}
    for k, (policy, part) in enumerate(runs.groupby("policy", sort=False)):
        mean = part.groupby("lambda_per_hour")[["mean_jct_s", "mean_rho"]].mean()
        colour[policy] = f"C{k}"
        style = {"color": colour[policy], "marker": "o", "linestyle": "-" if policy.endswith("-aware") else "--",
                 "label": policy}
        jct_ax.plot(mean.index, mean["mean_jct_s"] / 3600, **style)
        rho_ax.plot(mean.index, mean["mean_rho"], **style)
    if reference is not None:
        for policy, part in reference[reference["policy"].isin(list(colour))].groupby("policy", sort=False):
            mean = part.groupby("lambda_per_hour")["mean_jct_s"].mean()
            jct_ax.plot(mean.index, mean / 3600, linestyle="none", marker="x", markersize=8, color=colour[policy],
                        label=f"{policy}: Gavel's simulator")
    jct_ax.set_ylabel("Mean JCT of the measured jobs (hours)")
    rho_ax.set_ylabel("Mean finish-time fairness rho")
    for ax in (jct_ax, rho_ax):
        ax.set_xlabel("Arrival rate (jobs/hour)")
        ax.grid(alpha=0.3)
    jct_ax.set_title("Average JCT (heterogeneity-aware: solid)", fontsize=9)
    rho_ax.set_title("rho = JCT / time alone on a 1/N share", fontsize=9)
    jct_ax.legend(fontsize=7, loc="upper left")
    return _save(fig, path)


def plot_cpu_aware(runs: pd.DataFrame, path: str | Path) -> Path:
    """CPU-aware allocation (the frame of ``python -m experiments.cpu_aware``): one column per load, mean JCT (h,
    top) and time-averaged F(M) (% of GPU capacity, bottom) by CPU rule, one line per policy (means over seeds and
    traces). ``runs`` needs ``load, policy, rule, mean_jct_s, frag_time_avg_pct``."""
    rules = list(dict.fromkeys(runs["rule"]))
    mean = runs.groupby(["load", "policy", "rule"], sort=False)[["mean_jct_s", "frag_time_avg_pct"]].mean()
    loads = sorted(runs["load"].unique())
    fig = Figure(figsize=(5.2 * max(len(loads), 1), 6.4))
    axes = np.array(fig.subplots(2, max(len(loads), 1), squeeze=False))
    for col, load in enumerate(loads):
        for k, policy in enumerate(dict.fromkeys(runs["policy"])):
            if (load, policy) not in mean.droplevel("rule").index:
                continue
            part = mean.loc[(load, policy)].reindex(rules)
            axes[0, col].plot(rules, part["mean_jct_s"] / 3600, marker="o", color=f"C{k}", label=policy)
            axes[1, col].plot(rules, part["frag_time_avg_pct"], marker="o", color=f"C{k}", label=policy)
        axes[0, col].set_title(f"load {load:g}", fontsize=9)
        axes[0, col].set_ylabel("Mean JCT (h)")
        axes[1, col].set_ylabel("Time-averaged F(M) (% of GPU capacity)")
        axes[1, col].set_xlabel("CPU rule (cores lent from the node's leftover)")
        for ax in axes[:, col]:
            # against the whole; a value not measured (no job finished: NaN) is left out, and all of them 0 or
            # unmeasured give the axis (0, 1)
            top = max((np.nanmax(y) for line in ax.get_lines() if np.isfinite(y := line.get_ydata()).any()),
                      default=0.0)
            ax.set_ylim(0, 1.15 * top if top > 0 else 1.0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def plot_interference(runs: pd.DataFrame, path: str | Path) -> Path:
    """The interference trade (the frame of ``python -m experiments.interference``): one panel per load, allocated
    GPUs against the sharing jobs' mean slowdown with interference (run time over work), one point per policy (means
    over seeds and traces); the interference-aware FGD's weights joined by a line and labelled. The allocation is the
    time average of the same policy's run *without* interference when the frame has it (what the placement packs:
    with interference, slowed jobs also hold their GPUs longer), else of the run with it. ``runs`` needs ``load,
    policy, weight, interference, alloc_time_avg_pct, mean_slowdown``.
    """
    runs = runs.assign(weight=runs["weight"].fillna(-1.0))
    keys = ["load", "policy", "weight"]
    on = runs[runs["interference"] == "on"].groupby(keys, sort=False)[["alloc_time_avg_pct", "mean_slowdown"]].mean()
    off = runs[runs["interference"] == "off"].groupby(keys)["alloc_time_avg_pct"].mean()
    clean = on.index.isin(off.index).all() and len(off)
    if clean:
        on["alloc_time_avg_pct"] = off.loc[on.index].to_numpy()
    on = on.reset_index()
    loads = sorted(on["load"].unique())
    fig = Figure(figsize=(5.2 * max(len(loads), 1), 4.4))
    axes = np.atleast_1d(fig.subplots(1, max(len(loads), 1)))
    for ax, load in zip(axes, loads, strict=False):
        part = on[on["load"] == load]
        for k, (policy, rows) in enumerate(part.groupby("policy", sort=False)):
            rows = rows.sort_values("weight")
            aware = bool((rows["weight"] >= 0).all())
            style = ({"marker": "s", "markersize": 4, "linestyle": "-"} if aware
                     else {"marker": "o", "markersize": 9, "linestyle": "none", "markerfacecolor": "none",
                           "markeredgewidth": 1.8})
            ax.plot(rows["alloc_time_avg_pct"], rows["mean_slowdown"], color=f"C{k}", label=policy, **style)
            if aware:
                for x, y, w in zip(rows["alloc_time_avg_pct"], rows["mean_slowdown"], rows["weight"], strict=True):
                    ax.annotate(f"w={w:g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7,
                                color=f"C{k}")
        what = "without interference" if clean else "with interference"
        ax.set_xlabel(f"Time-averaged allocated GPUs (% of capacity),\n{what}")
        ax.set_ylabel("Mean slowdown of sharing jobs (run time / work)")
        ax.set_title(f"load {load:g}: slowdown with interference", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


GANTT_LEGEND_JOBS = 48
"""Up to this many GPU jobs, :func:`plot_gantt` lists them in a legend (beyond, the names on the bars only)."""


def _job_colours(n: int) -> list[tuple[float, float, float, float]]:
    """``n`` distinct RGBA colours, one per job index: ``tab10`` up to 10 jobs, beyond that hues spread by the golden
    ratio over three lightness levels, so that neighbouring indices contrast and no two jobs share a hue step."""
    import colorsys

    import matplotlib

    if n <= 10:
        return [matplotlib.colormaps["tab10"](k) for k in range(n)]
    out = []
    for k in range(n):
        hue = (k * 0.618033988749895) % 1.0
        light, sat = (0.45, 0.55, 0.68)[k % 3], (0.85, 0.65, 0.75)[(k // 3) % 3]
        out.append((*colorsys.hls_to_rgb(hue, light, sat), 1.0))
    return out


def _gpu_bands(cluster, jobs, schedule) -> dict[tuple[int, int], int]:
    """Where each job sits inside the row of each of its GPUs (a gang's: of every part) in :func:`plot_gantt`:
    ``(job, row) -> offset`` (milli-GPU from the top of the row), ``row`` the GPU's index over the cluster (node by
    node).

    The jobs of one GPU, by start time, each take the lowest band ``[offset, offset + gpu_milli)`` of ``[0, 1000)``
    clear of the bands of the jobs it overlaps in time, so jobs sharing a GPU are stacked, each as tall as its share.
    Where the overlapping bands leave no contiguous gap (the shares of one GPU fragment over time), the job takes the
    top of the row (``1000 - gpu_milli``) and its bar overlaps another.
    """
    first = np.concatenate([[0], np.cumsum(cluster.gpu)])
    tenants: dict[int, list[int]] = {}
    for j in np.flatnonzero(schedule.node >= 0).tolist():
        parts = schedule.parts[j] if schedule.parts is not None and schedule.parts[j] else (
            (schedule.node[j], schedule.gpus[j]),)                # a gang: every part
        for node, gpus in parts:
            for g in gpus:
                tenants.setdefault(int(first[node]) + g, []).append(j)
    finish = schedule.finish_s(jobs)
    bands = {}
    for row, members in tenants.items():
        placed: list[tuple[float, float, int, int]] = []          # start, finish, offset, milli
        for j in sorted(members, key=lambda j: (schedule.start_s[j], j)):
            milli, start, end = int(jobs.tasks.gpu_milli[j]), schedule.start_s[j], finish[j]
            busy = sorted((o, o + m) for s, e, o, m in placed if s < end and start < e)
            offset = next((o for o in [0] + [hi for _, hi in busy]
                           if o + milli <= GPU_MILLI and all(hi <= o or o + milli <= lo for lo, hi in busy)),
                          GPU_MILLI - milli)
            placed.append((start, end, offset, milli))
            bands[(j, row)] = offset
    return bands


def plot_gantt(cluster, jobs, schedules: dict, path: str | Path, title: str = "") -> Path:
    """Gantt charts of schedules of one instance (a :class:`fgdopt.timeline.schedule.Schedule` per label of
    ``schedules``, e.g. a policy's run above the optimum's), one panel per schedule with its mean JCT and makespan.

    One row per GPU (``node:GPU``, the GPU's model beside it), a bar per job over ``[start, start + duration)`` on
    each of its GPUs. A GPU's row is split between the jobs sharing it, each a band as tall as its milli-GPU
    (:func:`_gpu_bands`). A job has one colour in every panel (:func:`_job_colours`), its name on bars wide enough
    and, up to :data:`GANTT_LEGEND_JOBS` jobs, in a legend. The panels after the first are renumbered onto the
    first's nodes and GPUs (:func:`fgdopt.timeline.schedule.relabel_like`: identical nodes and GPUs permuted to
    share the most job placements), so that the same placement is drawn on the same row. CPU-only jobs and jobs
    started in no panel (rejected) are not drawn, nor in the legend (the caption counts them). Time in seconds,
    ticks on every panel.
    """
    from matplotlib.patches import Patch

    from fgdopt.timeline.schedule import objective_value, relabel_like

    labels = list(schedules)
    schedules = {k: s if k == labels[0] else relabel_like(cluster, s, schedules[labels[0]])
                 for k, s in schedules.items()}
    rows = [(n, g) for n in range(cluster.n_nodes) for g in range(int(cluster.gpu[n]))]
    n_jobs = len(jobs)
    colours = _job_colours(n_jobs)
    names = [str(jobs.tasks.names[j]) if jobs.tasks.names else str(j) for j in range(n_jobs)]
    started = np.zeros(n_jobs, dtype=bool)                     # in some panel (a rejected job is in none)
    for sched in schedules.values():
        started |= np.asarray(sched.node) >= 0
    gpu_jobs = [j for j in range(n_jobs) if int(jobs.tasks.gpu_milli[j]) > 0 and started[j]]
    legend = 0 < len(gpu_jobs) <= GANTT_LEGEND_JOBS
    cols = 1 + (len(gpu_jobs) > 24) if legend else 0
    rows_in = min(0.34 * len(rows), 3.2)                        # inches of GPU rows per panel (a page at most)
    fig = Figure(figsize=(10 + 1.1 * cols, 1.2 + len(schedules) * (1.0 + rows_in)), dpi=DPI)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(schedules), 1, sharex=True, squeeze=False)[:, 0]
    bars = []                                                   # (axes, job, left, width, top, height) to label
    for ax, (label, sched) in zip(axes, schedules.items(), strict=True):
        bands = _gpu_bands(cluster, jobs, sched)
        for (j, k), offset in bands.items():
            share = int(jobs.tasks.gpu_milli[j]) / GPU_MILLI
            top = k - 0.4 + 0.8 * offset / GPU_MILLI
            ax.barh(top, jobs.duration_s[j], left=sched.start_s[j], height=0.8 * share, align="edge",
                    color=colours[j], edgecolor="black", linewidth=0.4)
            bars.append((ax, j, sched.start_s[j], jobs.duration_s[j], top, 0.8 * share))
        ax.set_yticks(range(len(rows)), [f"{n}:{g}  {cluster.model[n]}" for n, g in rows], fontsize=7)
        ax.set_ylim(len(rows) - 0.5, -0.5)                      # node 0 on top
        for k in range(1, len(rows)):
            if rows[k][0] != rows[k - 1][0]:                    # a line between nodes
                ax.axhline(k - 0.5, color="0.6", linewidth=0.6)
        ax.set_ylabel("node:GPU  model", fontsize=8)
        ax.set_xlabel("time (s)", fontsize=8)
        ax.tick_params(axis="x", labelbottom=True, labelsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(f"{label}: mean JCT {objective_value(jobs, sched, 'mean-jct'):.1f} s, "
                     f"makespan {objective_value(jobs, sched, 'makespan'):.1f} s", fontsize=9, loc="left")
    if legend:
        handles = [Patch(facecolor=colours[j], edgecolor="black", linewidth=0.4, label=names[j]) for j in gpu_jobs]
        fig.legend(handles=handles, loc="upper right", ncol=cols, fontsize=7, title="jobs", title_fontsize=8,
                   frameon=False)
    cpu_only = int((started & (jobs.tasks.gpu_milli == 0)).sum())
    never = int((~started).sum())
    caption = ("Each GPU's row is split between the jobs sharing it (band height = milli-GPU / 1000)"
               + (f"; {cpu_only} CPU-only job(s) not drawn" if cpu_only else "")
               + (f"; {never} job(s) never started (rejected) not drawn" if never else "") + ".")
    fig.text(0.01, 0.005, caption, fontsize=7, va="bottom")
    if title:
        fig.suptitle(title, fontsize=10)
    right = 1 - (1.1 * cols + 0.2) / fig.get_figwidth() if legend else 1
    fig.tight_layout(rect=(0, 0.03, right, 1))
    renderer = fig.canvas.get_renderer()
    for ax, j, left, width, top, height in bars:               # names on the bars they fit in
        x0, y0 = ax.transData.transform((left, top))
        x1, y1 = ax.transData.transform((left + width, top + height))
        r, g, b = colours[j][:3]
        ink = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"     # readable on dark bars
        text = ax.text(left + width / 2, top + height / 2, names[j], ha="center", va="center", fontsize=6, color=ink)
        box = text.get_window_extent(renderer)
        if box.width > abs(x1 - x0) - 2 or box.height > abs(y1 - y0):
            text.remove()
    return _save_laid_out(fig, path)


def plot_traces(shapes: pd.DataFrame, runs: pd.DataFrame, path: str | Path) -> Path:
    """Converted traces (the frames of ``python -m experiments.traces``): left, each workload's GPU-hours split
    into single-node jobs and gangs (% of its GPU-hours); right, the mean wait (s) of single-node jobs (solid) and
    of gangs (hatched) per workload, one bar per policy / queue, marked ``n/a`` where no job of the class started
    (its mean is NaN: not a wait of 0). ``shapes`` needs ``workload,
    class, gpu_hours``; ``runs`` needs ``workload, policy, queue, mean_wait_single_s, mean_wait_gang_s``."""
    workloads = list(dict.fromkeys(shapes["workload"]))
    hours = shapes.pivot_table(index="workload", columns="class", values="gpu_hours", aggfunc="sum",
                               fill_value=0.0).reindex(index=workloads, columns=["single", "gang"], fill_value=0.0)
    share = 100 * hours.div(hours.sum(axis=1).where(hours.sum(axis=1) > 0, 1.0), axis=0)
    fig = Figure(figsize=(11, 4.2))
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.6])
    x = np.arange(len(workloads))
    left.bar(x, share["single"], color="C0", label="single-node jobs")
    left.bar(x, share["gang"], bottom=share["single"], color="C3", label="gangs (workers > 1)")
    left.set_xticks(x, workloads, rotation=30, ha="right", fontsize=8)
    left.set_ylabel("GPU-hours (% of the workload's)")
    left.set_ylim(0, 118)
    left.legend(fontsize=7, loc="upper center", ncol=2)
    combos = list(dict.fromkeys(zip(runs["policy"], runs["queue"], strict=True)))
    mean = runs.groupby(["workload", "policy", "queue"], sort=False)[["mean_wait_single_s", "mean_wait_gang_s"]].mean()
    width = 0.8 / max(2 * len(combos), 1)
    missing = False
    for k, (policy, queue) in enumerate(combos):
        for c, (col, hatch) in enumerate((("mean_wait_single_s", None), ("mean_wait_gang_s", "//"))):
            values = np.array([mean[col].get((w, policy, queue), np.nan) for w in workloads], dtype=float)
            at = x - 0.4 + width * (2 * k + c + 0.5)
            right.bar(at, np.nan_to_num(values), width, color=f"C{k}", hatch=hatch,
                      edgecolor="black" if hatch else None, linewidth=0.4,
                      label=f"{policy} / {queue}" if c == 0 else None)
            for pos in at[np.isnan(values)]:             # no such job started: not a wait of 0
                right.text(pos, 0, "n/a", rotation=90, ha="center", va="bottom", fontsize=6, color="0.4")
                missing = True
    right.set_xticks(x, workloads, rotation=30, ha="right", fontsize=8)
    right.set_ylim(0, max(1.0, right.get_ylim()[1]))
    if missing:
        right.set_xlabel("n/a: no job of that class started", fontsize=7)
    right.set_ylabel("Mean wait (s): solid single-node, hatched gangs")
    right.grid(alpha=0.3, axis="y")
    if combos:
        right.legend(fontsize=7, loc="best")
    return _save(fig, path)


def plot_gap(frame: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Each policy's allocation against the certified optimum, one row per instance (the frame of
    ``python -m experiments.gap``, ``gap.csv``).

    Allocations are drawn in percent of the instance's best proven bound (100 % = the bound), so that instances of
    2 and 80 GPUs share one axis. A grey bracket spans where the optimum lies, from the best placement found (the
    incumbent, a black bar) to the bound; a proven optimum is a black diamond at 100 %. Each policy has its own
    marker, shifted up or down a little inside its row so that equal allocations stay visible. The right margin
    says, per instance, whether the optimum is proven or how wide the remaining interval is (percent of the bound).

    ``frame`` needs columns ``instance, kind, method, allocated_milli, incumbent_milli, best_bound_milli, gpus``
    (milli-GPU; ``kind == "policy"`` rows are the policies). An instance whose bound is 0 (no tasks) is drawn at
    100 %.
    """
    first = frame.drop_duplicates("instance").reset_index(drop=True)
    policies = list(dict.fromkeys(frame.loc[frame["kind"] == "policy", "method"]))
    rows = len(first)
    height = 2.0 + 0.3 * rows                             # inches: 0.3 a row, the legend below
    fig = Figure(figsize=(10, height))
    ax = fig.subplots()
    bound = first["best_bound_milli"].to_numpy(dtype=float)

    def pct(milli: np.ndarray) -> np.ndarray:
        return np.divide(100.0 * milli, bound, out=np.full(len(bound), 100.0), where=bound > 0)

    y = rows - 1 - np.arange(rows)                          # the first instance on top
    incumbent = pct(first["incumbent_milli"].to_numpy(dtype=float))
    proven = incumbent >= 100.0 - 1e-9
    open_, shut = (~proven).any(), proven.any()             # legend entries only for what is drawn
    ax.hlines(y[~proven], incumbent[~proven], 100.0, color="0.6", linewidth=5, alpha=0.6,
              label="optimum lies here (best found to proven bound)" if open_ else None)
    ax.plot(incumbent[~proven], y[~proven], "|", color="black", markersize=11, markeredgewidth=2,
            label="best placement found (not proven optimal)" if open_ else None)
    ax.plot(np.full(int(proven.sum()), 100.0), y[proven], "D", color="black", markersize=6, fillstyle="none",
            markeredgewidth=1.4, label="proven optimum" if shut else None)
    markers = "o^sv<>Ph*Xd"
    shift = np.linspace(-0.28, 0.28, len(policies)) if len(policies) > 1 else np.zeros(1)
    lowest = incumbent.min(initial=100.0)
    for k, policy in enumerate(policies):
        alloc = frame[(frame["kind"] == "policy") & (frame["method"] == policy)].set_index("instance")
        values = pct(alloc["allocated_milli"].reindex(first["instance"]).to_numpy(dtype=float))
        lowest = min(lowest, np.nanmin(values, initial=100.0))
        ax.plot(values, y + shift[k], markers[k % len(markers)], markersize=5, alpha=0.9, label=policy,
                linestyle="none")
    ax.axvline(100.0, color="black", linewidth=0.6, linestyle=":")
    ax.set_yticks(y, [f"{name} ({gpus} GPUs)" for name, gpus in zip(first["instance"], first["gpus"], strict=True)],
                  fontsize=7)
    ax.set_ylim(-0.7, rows - 0.3)
    span = 100.0 - lowest
    ax.set_xlim(lowest - max(0.05 * span, 0.5), 100.0 + max(0.02 * span, 0.25))
    for yy, inc, ok in zip(y, incumbent, proven, strict=True):
        ax.annotate("optimal" if ok else f"open {100.0 - inc:.1f}%", (1.0, yy), xycoords=("axes fraction", "data"),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=7, color="0.25")
    ax.set_xlabel("GPUs allocated, % of the instance's proven bound (nothing can allocate more than 100)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or "Online policies against the certified optimum, per instance")
    handles, labels = ax.get_legend_handles_labels()
    legend = fig.legend(handles, labels, loc="lower center", ncols=4, fontsize=7, frameon=False)
    FigureCanvasAgg(fig)                                    # the legend's measured height, no more, below the axes
    low = legend.get_window_extent(fig.canvas.get_renderer()).height / (height * fig.dpi)
    fig.tight_layout(rect=(0, low + 0.01, 1, 1))
    return _save_laid_out(fig, path)


def plot_failures(runs: pd.DataFrame, interval: pd.DataFrame, path: str | Path) -> Path:
    """The failures study (the frames of ``python -m experiments.failures``): one panel per workload, the mean JCT
    over the run without failures or drift (``jct_slowdown``) per policy and queue, one bar per scenario (failures at
    each MTBF scale, drift; means over seeds and loads); and a panel of the interval sweep, the time lost (% of the
    work: progress lost, checkpoints and restarts) against the checkpoint interval, one line per seed, Young/Daly's
    interval dashed. ``runs`` needs ``workload, policy, queue, scenario, mtbf_scale, jct_slowdown``; ``interval``
    needs ``seed, checkpoint_s, young_daly_s, waste_pct``.
    """
    shown = runs[runs["scenario"] != "none"].assign(
        bar=lambda f: np.where(f["scenario"] == "failures", "failures, MTBF / " + f["mtbf_scale"].map("{:g}".format),
                               "slow GPUs, drift"), group=lambda f: f["policy"] + "\n" + f["queue"])
    workloads = list(dict.fromkeys(shown["workload"]))
    panels = len(workloads) + (len(interval) > 0)
    fig = Figure(figsize=(min(4.6 * max(panels, 1), 14.0), 4.6))          # 14 inches at most (page width)
    axes = np.atleast_1d(fig.subplots(1, max(panels, 1)))
    for ax, workload in zip(axes, workloads, strict=False):
        table = (shown[shown["workload"] == workload].groupby(["group", "bar"], sort=False)["jct_slowdown"].mean()
                 .unstack("bar"))
        width = 0.8 / max(len(table.columns), 1)
        for k, bar in enumerate(table.columns):
            ax.bar(np.arange(len(table)) + (k - (len(table.columns) - 1) / 2) * width, table[bar], width,
                   label=bar, color=f"C{k}")
        ax.axhline(1.0, color="0.3", linewidth=0.8)
        low, high = float(np.nanmin(table.to_numpy())), float(np.nanmax(table.to_numpy()))
        ax.set_ylim(min(low, 1.0) - 0.02, high + 0.5 * (high - min(low, 1.0) + 0.02))   # room for the legend
        ax.set_xticks(np.arange(len(table)), table.index, fontsize=8)
        ax.set_ylabel("Mean JCT / without failures or drift")
        ax.set_title(f"{workload}: JCT slowdown", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", ncol=min(len(table.columns), 2))
        ax.grid(alpha=0.3, axis="y")
    if len(interval):
        ax = axes[-1]
        for k, (seed, rows) in enumerate(interval.groupby("seed")):
            rows = rows.sort_values("checkpoint_s")
            ax.plot(rows["checkpoint_s"] / 60, rows["waste_pct"], marker="o", color=f"C{k}", label=f"seed {seed}")
        ax.axvline(float(interval["young_daly_s"].iloc[0]) / 60, color="0.3", linestyle="--", label="Young/Daly")
        ax.set_xscale("log")
        ax.set_xlabel("Checkpoint interval (minutes)")
        ax.set_ylabel("Time lost (% of the work)")
        ax.set_title("gangs of 2 x 8 GPUs: lost, checkpoint and restart time", fontsize=9)
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
    return _save(fig, path)
