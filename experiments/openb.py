"""The paper's online study on the openb traces: every (trace, policy, seed) replayed at ratio 1.3.

Usage::

    python -m experiments.openb --trace default --policies fgd,best-fit --seeds 42-51 --ratio 1.3 \\
        --output DIR [--jobs N | --dask ADDRESS] [--resume]
    python -m experiments.openb --quick --output DIR    # the paper's six policies, default and gpushare40, seed 42

``--quick`` replays the paper's six policies (:data:`~fgdopt.policies.PAPER_POLICIES`) on ``default`` and
``gpushare40`` with seed 42 (:data:`QUICK`; about half a minute on one core); ``--trace``, ``--policies`` and
``--seeds`` given with it are kept. ``--trace`` takes variant names separated by commas, ``all`` (the 24
variants) or a family name (``cpu``, ``gpushare``, ``multigpu``, ``gpuspec``). Writes ``DIR/summary.csv`` (one
row per cell, ratios in percent), ``DIR/curves.csv`` (long format, one row per cell and arrived percentage),
``DIR/alloc.png`` and ``DIR/frag_rate.png`` (default trace, or the first one run: mean over seeds,
one line per policy), ``DIR/bars_<family>.png`` for each trace family present, and prints a Markdown
table (mean and min-max over seeds) on stdout, with the paper's published allocation at 130% beside
each of its six policies (:func:`fgdopt.refsim.paper_allocation`; at ratio 1.3, on the published trace files
only, not on CSVs of your own in ``--data-dir``); a progress bar goes to stderr. The policies score and break
ties as the reference simulator does; ``fgd-exact`` is fgdopt's exact-score FGD. ``--jobs N`` replays N cells
side by side in local processes, ``--dask ADDRESS`` on the workers of a Dask distributed cluster
(:mod:`experiments.executors`; each worker reads the trace from its own
``$FGDOPT_DATA`` unless ``--data-dir`` is given); the outputs are the same. ``--policies`` also takes
``module:attribute`` specs of your own policies (:mod:`fgdopt.policies`, "Your own policy"), named in the outputs by
their ``name`` attribute if they have one. The ``_130`` columns of
``summary.csv`` hold the end of the replay (``alloc_ratio_100`` is at 100% arrived, or at the end before it): the
whole trace is replayed, then clones up to ``--ratio`` (1.3: 130% of capacity), so a trace that alone brings more
than the ratio ends past it (the last row is the final state, docs/semantics.md). At 1.3 that is ``multigpu30``
(130.2%), ``multigpu40`` (152%) and ``multigpu50`` (183%); below 1 it is most traces (``default`` brings 98%).

Each finished cell is kept in ``DIR/.runs/openb`` as it completes (:class:`experiments.executors.RunJournal`);
``--resume`` replays only the cells not yet there with the same inputs. A run stopped early (Ctrl-C, a failing
policy, a killed worker) writes ``summary.csv`` and ``curves.csv`` of the cells that finished
(only where no file of that name is there yet: the outputs of an earlier complete run stay).
"""

from __future__ import annotations

import argparse
import sys
from functools import lru_cache
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from experiments.args import (
    FAMILIES,
    check_paths,
    family,
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
from fgdopt.plot import plot_curves, plot_family_bars
from fgdopt.policies import PAPER_POLICIES, POLICY_NAMES, PolicyError, policy_labels
from fgdopt.refsim import paper_allocation
from fgdopt.simulate import CURVE_COLUMNS, replay
from fgdopt.traces import is_published, load_openb, trace_files

OUTPUTS = ("summary.csv", "curves.csv", "alloc.png", "frag_rate.png", "bars_*.png")
"""The files the study writes into ``--output``."""
DEFAULTS = {"trace": ["default"], "policies": list(POLICY_NAMES), "seeds": list(range(42, 52))}
"""``--trace``, ``--policies`` and ``--seeds`` when not given."""
QUICK = {"trace": ["default", "gpushare40"], "policies": list(PAPER_POLICIES), "seeds": [42]}
"""``--trace``, ``--policies`` and ``--seeds`` under ``--quick`` when not given (12 replays)."""
SUMMARY_COLUMNS = ("trace", "policy", "seed", "alloc_ratio_100", "alloc_ratio_130", "unallocated_gpus_130",
                   "frag_rate_130", "wall_s")


@lru_cache(maxsize=4)
def _load(trace: str, data_dir: str | None):
    cluster, tasks = load_openb(trace, data_dir)
    return cluster, tasks, Workload.from_tasks(tasks)


def run_cell(trace: str, policy: str, seed: int, ratio: float,
             data_dir: str | None = None) -> tuple[dict, pd.DataFrame]:
    """Replay one (trace, policy, seed) cell; returns its summary row and its curves."""
    cluster, tasks, workload = _load(trace, data_dir)
    try:
        result = replay(cluster, tasks, policy, seed, ratio, workload)
    except PolicyError as exc:
        raise PolicyError(f"openb {trace} seed {seed}: {exc}") from exc
    last = result.curves.iloc[-1]
    row = {"trace": trace, "policy": policy, "seed": seed,
           "alloc_ratio_100": result.at(min(100, len(result.curves) - 1)).alloc_ratio,
           "alloc_ratio_130": last.alloc_ratio, "unallocated_gpus_130": last.unallocated_gpus,
           "frag_rate_130": last.frag_rate, "wall_s": result.wall_s}
    curves = result.curves.assign(trace=trace, policy=policy, seed=seed)
    return row, curves[["trace", "policy", "seed", *result.curves.columns]]


def sort_cells(frame: pd.DataFrame, rank, then: list[str]) -> pd.DataFrame:
    """Rows ordered by ``rank(trace, policy)`` (command-line order), then by the columns ``then``."""
    key = [rank(t, p) for t, p in zip(frame["trace"], frame["policy"], strict=True)]
    return frame.assign(_rank=key).sort_values(["_rank", *then]).drop(columns="_rank").reset_index(drop=True)


def table_columns(ratio: float) -> dict[str, str]:
    """The columns of the printed table: ``summary.csv``'s column -> its heading in words (``ratio``: ``--ratio``)."""
    end = f"at {100 * ratio:g}% arrived"
    return {"alloc_ratio_100": "GPUs allocated at 100% arrived (%)", "alloc_ratio_130": f"GPUs allocated {end} (%)",
            "unallocated_gpus_130": f"GPUs left idle {end}", "frag_rate_130": f"fragmentation rate {end} (%)",
            "wall_s": "seconds per replay"}


def markdown_table(summary: pd.DataFrame, paper: pd.DataFrame | None = None, ratio: float = 1.3) -> str:
    """Per (trace, policy): the mean over seeds of each column of :func:`table_columns`, with its range over the
    seeds in brackets when there are several, and the paper's published allocation at 130% where known (the
    difference to ours in parentheses)."""
    published = {} if paper is None else {(t, p): v for t, p, v in paper[["trace", "policy", "alloc_ratio_130"]]
                                         .itertuples(index=False)}
    columns = table_columns(ratio)
    lines = ["| trace | policy | seeds | " + " | ".join(columns.values()) + " | the paper's allocation (ours - its) |",
             "|---" * (4 + len(columns)) + "|"]
    for (trace, policy), frame in summary.groupby(["trace", "policy"], sort=False):
        cells = [f"{frame[m].mean():.2f}" + (f" [{frame[m].min():.2f}–{frame[m].max():.2f}]" if len(frame) > 1 else "")
                 for m in columns]
        known = published.get((trace, policy))
        ref = "" if known is None else f"{known:.2f} ({frame['alloc_ratio_130'].mean() - known:+.2f})"
        lines.append(f"| {trace} | {policy} | {len(frame)} | " + " | ".join(cells) + f" | {ref} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.openb", __doc__)
    parser.add_argument("--trace", type=parse_traces, default=None,
                        help="comma-separated variants (default, cpu050, ...), a family (cpu, gpushare, multigpu, "
                        "gpuspec) "
                        "or all (default: default)")
    parser.add_argument("--policies", type=parse_policies, default=None,
                        help=f"comma-separated policies: names or module:attribute specs of your own "
                        f"(default: all {len(POLICY_NAMES)} built-in)")
    parser.add_argument("--seeds", type=parse_seeds, default=None,
                        help="seeds as a range A-B or a list a,b,c (default: 42-51, as in the paper)")
    parser.add_argument("--quick", action="store_true",
                        help="the paper's six policies on default and gpushare40, seed 42 (about half a minute)")
    parser.add_argument("--ratio", type=positive, default=1.3,
                        help="inflate arrivals to this multiple of GPU capacity (default: 1.3); the whole trace "
                        "is replayed first, so a trace that alone brings more ends past it")
    parser.add_argument("--output", type=output_dir, required=True,
                        help="folder for summary.csv, curves.csv and the figures")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    args = parser.parse_args(argv)
    for option, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, option) is None:
            setattr(args, option, value)
    args.data_dir = None if args.data_dir is None else str(args.data_dir)
    check_paths(parser, args.output, OUTPUTS, {})
    try:
        for trace in args.trace:                  # fail before any work if a trace is missing or broken
            _load(trace, args.data_dir)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))

    cells = [(t, p, s, args.ratio, args.data_dir) for t in args.trace for p in args.policies for s in args.seeds]
    keys = [(t, policy_digest(p), s, r, content_digest(*trace_files(t, d))) for t, p, s, r, d in cells]
    journal = RunJournal.for_study(args.output, "openb", resume=args.resume)
    try:
        with tqdm(total=len(cells), desc="replays", unit="run", file=sys.stderr) as bar, \
                executor(args.jobs, args.dask) as pool:
            results = run_all(pool, run_cell, cells, lambda _: bar.update(), journal=journal, keys=keys)
    except SweepInterrupted as stop:
        with staged(args.output, partial=True) as tmp:
            write_outputs(stop.finished(), args, tmp, plots=False)
        return stop_message(stop, parser.prog)
    with staged(args.output) as tmp:
        summary = write_outputs(results, args, tmp)
    published = [t for t in args.trace if is_published(t, args.data_dir)]      # not a user's own files
    paper = paper_allocation() if args.ratio == 1.3 else None
    paper = None if paper is None else paper[paper["trace"].isin(published)]
    print(markdown_table(summary, paper, args.ratio))
    for line in past_the_ratio(results, args.ratio):
        print(line)
    return 0


def past_the_ratio(results: list[tuple[dict, pd.DataFrame]], ratio: float) -> list[str]:
    """One line per trace whose replay ended past ``ratio`` (the trace alone brings more; module docstring): what
    the table's columns "at {ratio}% arrived" hold there."""
    ends: dict[str, float] = {}
    for _, curves in results:
        last = curves.iloc[-1]
        ends[last["trace"]] = 100.0 * last["arrived_milli"] / (last["alloc_milli"] + last["idle_milli"])
    return [f"{trace}: the trace alone brings {end:.1f}% of the GPU capacity; its replays end there, and its columns "
            f"'at {100 * ratio:g}% arrived' hold that end" for trace, end in ends.items() if end > 100 * ratio + 0.5]


def write_outputs(results: list[tuple[dict, pd.DataFrame]], args: argparse.Namespace, out: Path,
                  plots: bool = True) -> pd.DataFrame:
    """Write ``summary.csv``, ``curves.csv`` (and with ``plots`` the figures) of the finished cells ``results``
    to the folder ``out``, rows in command-line order; returns the summary."""
    rows, curves = [row for row, _ in results], [curve for _, curve in results]

    def rank(trace: str, policy: str) -> tuple:
        return args.trace.index(trace), args.policies.index(policy)

    summary = sort_cells(pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)), rank, ["seed"])
    curves_df = sort_cells(pd.concat(curves, ignore_index=True), rank, ["seed", "arrived_pct"]) if curves else \
        pd.DataFrame(columns=["trace", "policy", "seed", *CURVE_COLUMNS])
    labels = policy_labels(args.policies)                 # a policy of your own by its name
    summary["policy"], curves_df["policy"] = summary["policy"].replace(labels), curves_df["policy"].replace(labels)

    summary.to_csv(out / "summary.csv", index=False)
    curves_df.to_csv(out / "curves.csv", index=False)
    if not plots:
        return summary
    main_trace = "default" if "default" in args.trace else args.trace[0]
    main_curves = curves_df[curves_df["trace"] == main_trace]
    zoom = (80, 100 * args.ratio)                   # the arrivals past 80%, if any
    plot_curves(main_curves, "alloc_ratio", out / "alloc.png", f"openb {main_trace}: GPU allocation",
                zoom=zoom if zoom[1] > zoom[0] else None)
    plot_curves(main_curves, "frag_rate", out / "frag_rate.png", f"openb {main_trace}: fragmentation rate")
    for fam in FAMILIES:
        traces = [t for t in args.trace if family(t) == fam]
        if traces:
            plot_family_bars(summary, traces, out / f"bars_{fam}.png",
                             f"openb {fam}* traces at {100 * args.ratio:g}% arrival")
    return summary


if __name__ == "__main__":
    from experiments.openb import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
