"""Synergy's simulator study: CPU- and memory-aware GPU scheduling (fair, greedy, tune) on fgdopt's time engine.

Usage::

    python -m experiments.synergy [--policies FIFO+tune,...] [--loads 6,9] [--split 20,70,10] [--multi-gpu]
        [--seeds 42] [--window 4000:5000] [--bound-every N] [--profiles PATH]
        [--jobs N | --dask ADDRESS] [--resume] [--quick] --output DIR

Each run is Synergy's workload (``msr-fiddle/synergy`` at 1bb2bed6, ``simulator/``; :mod:`fgdopt.synergy.jobs`,
drawn as its simulator draws it for the seed, load and class split) on its cluster (16 servers of 8 GPUs, 24
cores, 500 GB) under one of its schedulers, ``FIFO``, ``SRTF``, ``LAS`` or ``FTF``, each ``+fair``
(GPU-proportional CPU and memory), ``+greedy`` (Synergy-Greedy; Synergy names it by the bare scheduler, ``FIFO``,
also accepted) or ``+tune`` (Synergy-Tune), run on the engine's round loop by :class:`fgdopt.synergy.rounds.Synergy`.
Jobs ``--window`` (Synergy's 4000-4999) are measured; the run stops at the first round after they all finished
(or after the last generated arrival: then ``finished`` is below the window's size and the figures are over the
jobs that did). ``--bound-every N``: Synergy-OPT's LP (:mod:`formulations.synergy`) every N-th round, a certified
bound asserted at least the round's achieved throughput.

Writes ``DIR/synergy.csv``, one row per run: ``policy``, ``load`` (jobs/hour), ``split`` (``20/70/10``), ``seed``,
``multi_gpu``, ``finished`` (measured jobs that finished), ``mean_jct_s``, ``p99_jct_s`` (numpy's linear
percentile), ``makespan_s`` (first measured arrival to last measured finish), ``utilization`` (GPU time held over
the cluster's until the run stopped), ``rounds``, ``bound_rounds``, ``opt_gap_pct`` (mean of (bound - achieved) /
bound over the bounded rounds), ``wall_s``, ``cpu_s``; ``DIR/synergy_jobs.csv`` (the run's keys and ``name,
model, submit_s, finish_s, jct_s`` per measured job); ``DIR/synergy.png`` (mean JCT against load, one line per
policy; one bar per policy for a single load). ``--quick``: FIFO+fair/greedy/tune at 9 jobs/h, jobs 400-599 (about
20 CPU s).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import check_trace_jobs, output_dir, parse_seeds, positive_int, real_list, study_parser
from experiments.executors import add_dask_option, add_resume_option, content_digest, run_and_write
from experiments.outputs import printed, write_runs
from fgdopt.synergy.jobs import TASK_MODELS, synergy_jobs
from fgdopt.synergy.profiles import DATA_FILE, ENV, ProfileError, load_profiles
from fgdopt.synergy.rounds import parse_policy, run_synergy

KEYS = ("policy", "load", "split", "seed", "multi_gpu")
COLUMNS = (*KEYS, "finished", "mean_jct_s", "p99_jct_s", "makespan_s", "utilization", "rounds", "bound_rounds",
           "opt_gap_pct", "wall_s", "cpu_s")
DEFAULT_POLICIES = ("FIFO+fair", "FIFO+greedy", "FIFO+tune", "LAS+fair", "LAS+greedy", "LAS+tune")
TAIL_H = 1500.0
"""Hours of arrivals generated past the measured window's last job (Synergy's stream is endless)."""


def parse_policies(text: str) -> list[str]:
    """``--policies``: Synergy names, comma-separated (``FIFO`` = ``FIFO+greedy``)."""
    out = []
    for name in (p.strip() for p in text.split(",") if p.strip()):
        try:
            parse_policy(name if "+" in name else f"{name}+greedy")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        out.append(name)
    if not out:
        raise argparse.ArgumentTypeError("no policy given")
    return out


def parse_split(text: str) -> tuple[int, int, int]:
    """``--split``: three non-negative integer percentages of image, language, speech jobs summing to 100."""
    try:
        parts = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"split {text!r}: expected three integers, e.g. 20,70,10") from None
    if len(parts) != 3 or min(parts) < 0 or sum(parts) != 100:
        raise argparse.ArgumentTypeError(f"split {text!r}: expected three percentages >= 0 summing to 100")
    return parts


def parse_window(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(p) for p in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"window {text!r}: expected START:END job ids") from None
    if not 0 <= lo < hi:
        raise argparse.ArgumentTypeError(f"window {text!r}: expected 0 <= START < END")
    return lo, hi


def trace_length(load: float, window: tuple[int, int]) -> int:
    """Jobs of Synergy's stream a run at ``load`` jobs/hour generates for the measured ids ``window``: up to its end,
    then :data:`TAIL_H` hours of arrivals."""
    return window[1] + math.ceil(load * TAIL_H)


def run_cell(policy: str, load: float, split: tuple, seed: int, multi_gpu: bool, window: tuple[int, int],
             bound_every: int, profiles: str | None = None) -> dict:
    """One run: its row of synergy.csv and its measured jobs (as records)."""
    t0, c0 = time.perf_counter(), time.process_time()
    table = load_profiles(profiles)
    lo, hi = window
    n = trace_length(load, window)
    frame = synergy_jobs(n, load, split, seed=seed, multi_gpu=multi_gpu, table=table).frame
    measured = np.zeros(n, dtype=bool)
    measured[lo:hi] = True
    name = policy if "+" in policy else f"{policy}+greedy"
    result, loop = run_synergy(frame, name, measured=measured, log_every=bound_every)
    mech = loop.policy
    gap, bounded = math.nan, 0
    if bound_every:
        from formulations.synergy import check_rounds
        recs = check_rounds(mech.round_log, frame, table)
        bounded = len(recs)
        if recs:
            gap = 100 * float(np.mean([(r["bound"] - r["achieved"]) / r["bound"] for r in recs]))
    jobs = result.job_frame()[measured]
    done = jobs[jobs.finish_s.notna()]
    end = loop.stopped_s if math.isfinite(loop.stopped_s) else float(np.nanmax(result.finish_s))
    held = float((mech.attained_s * frame["gpus"].to_numpy()).sum())
    row = {"policy": policy, "load": load, "split": "/".join(map(str, split)), "seed": seed, "multi_gpu": multi_gpu,
           "finished": len(done), "mean_jct_s": float(done.jct_s.mean()),
           "p99_jct_s": float(np.percentile(done.jct_s, 99)) if len(done) else math.nan,
           "makespan_s": float(done.finish_s.max() - jobs.submit_s.min()) if len(done) else math.nan,
           "utilization": held / (mech.servers * 8 * end) if end > 0 else math.nan,
           "rounds": loop.rounds, "bound_rounds": bounded, "opt_gap_pct": gap,
           "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    per_job = done.assign(model=frame["model"].to_numpy()[done.index])[["name", "model", "submit_s", "finish_s",
                                                                          "jct_s"]]
    return {"row": row, "jobs": per_job.assign(**{k: row[k] for k in KEYS}).to_dict("records")}


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Mean JCT of the measured jobs (hours; mean over seeds) per policy: against load, one line and marker per
    policy, when the runs hold two loads or more; else one bar per policy with its value written on it ("no job
    finished" where none of the measured jobs did: its mean is NaN). A policy whose means equal an earlier one's at
    every load is named so in the legend (its line would hide under the other's)."""
    from matplotlib.figure import Figure

    from fgdopt.plot import RUN_MARKERS, _save

    means = frame.groupby(["policy", "load"], sort=False)["mean_jct_s"].mean() / 3600
    policies = list(dict.fromkeys(frame["policy"]))
    loads = sorted(frame["load"].unique())
    curves = [means[p].reindex(loads).to_numpy() for p in policies]
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.subplots()
    if len(loads) == 1:
        bars = ax.bar(range(len(policies)), [c[0] for c in curves], 0.7,
                      color=[f"C{k}" for k in range(len(policies))], edgecolor="black", linewidth=0.5)
        ax.bar_label(bars, labels=[f"{c[0]:.2f} h" for c in curves], fontsize=7, padding=2)   # NaN: no label
        for k, curve in enumerate(curves):
            if not np.isfinite(curve[0]):
                ax.text(k, 0, "no job finished", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(policies)), policies, fontsize=8)
        ax.set_xlabel(f"policy (load {loads[0]:g} jobs/hour)")
    else:
        n = len(policies)
        for k, (policy, curve) in enumerate(zip(policies, curves, strict=True)):
            twin = next((policies[i] for i in range(k) if np.allclose(curves[i], curve, equal_nan=True)), None)
            ax.plot(loads, curve, marker=RUN_MARKERS[k % len(RUN_MARKERS)], color=f"C{k}",
                    linewidth=1.1 + 1.2 * (n - 1 - k) / max(n - 1, 1),       # the first widest, under the others
                    label=policy if twin is None else f"{policy} (same as {twin})")
        ax.set_xlabel("load (jobs/hour)")
        ax.legend(fontsize=7)
    ax.set_ylabel("mean JCT of the measured jobs (h)")
    ax.set_title("Synergy's schedulers: mean JCT", fontsize=9)
    ax.grid(alpha=0.3)
    _save(fig, path)


def write_outputs(results: list[dict], out: Path) -> pd.DataFrame:
    """``synergy.csv``, ``synergy_jobs.csv`` and ``synergy.png`` of ``results`` into the folder ``out``."""
    return write_runs(results, out, "synergy", COLUMNS, KEYS, plot)


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.synergy", __doc__)
    parser.add_argument("--policies", type=parse_policies, default=list(DEFAULT_POLICIES),
                        help="Synergy's names, comma-separated: FIFO|SRTF|LAS|FTF then +fair|+greedy|+tune "
                        f"(default: {','.join(DEFAULT_POLICIES)})")
    parser.add_argument("--loads", type=real_list(0.0), default=[6.0, 9.0], help="jobs/hour (default: 6,9)")
    parser.add_argument("--split", type=parse_split, default=(20, 70, 10),
                        help="percent image,language,speech jobs (default: 20,70,10)")
    parser.add_argument("--multi-gpu", action="store_true",
                        help="multi-GPU jobs (Synergy's trace-less synthetic mode); default single-GPU")
    parser.add_argument("--seeds", type=parse_seeds, default=[42], help="seeds, A-B or a,b (default: 42)")
    parser.add_argument("--window", type=parse_window, default=(4000, 5000),
                        help="measured job ids START:END (default: 4000:5000)")
    parser.add_argument("--bound-every", type=positive_int, default=None,
                        help="Synergy-OPT's bound every N-th round (default: none)")
    parser.add_argument("--profiles", default=None,
                        help=f"a profile JSON file or a Synergy checkout (default: ${ENV}, else {DATA_FILE.name})")
    parser.add_argument("--quick", action="store_true", help="FIFO+fair/greedy/tune, 9 jobs/h, jobs 400-599"
                                                             " (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--output", type=output_dir, required=True, help="folder for synergy.csv, .png")
    args = parser.parse_args(argv)
    if args.quick:
        parser.quick(args, policies=["FIFO+fair", "FIFO+greedy", "FIFO+tune"], loads=[9.0], window=(400, 600))
    check_trace_jobs(parser, "--window", args.window[1], args.window[1], "ids up to the window's end")
    for load in args.loads:
        check_trace_jobs(parser, "--loads", load, trace_length(load, args.window),
                         f"ids up to --window's end {args.window[1]}, then {TAIL_H:,.0f} hours of arrivals")
    try:                                                   # a bad profile file or a missing model stops here
        table = load_profiles(args.profiles)
        for models in TASK_MODELS:
            for model in models:
                table[model]
    except ProfileError as exc:
        parser.error(f"--profiles: {exc}" if args.profiles is not None else str(exc))
    profiles = None if args.profiles is None else str(Path(args.profiles).resolve())
    cells = [(p, load, tuple(args.split), s, args.multi_gpu, tuple(args.window), args.bound_every or 0, profiles)
             for p in args.policies for load in args.loads for s in args.seeds]
    source = table.source if Path(table.source).is_file() else None
    digest = content_digest(source) if source else table.source
    keys = [(*c[:7], digest) for c in cells]
    frame, code = run_and_write("synergy", run_cell, cells, args, keys, write_outputs, parser.prog)
    if code:
        return code
    print(printed(frame, digits=3))
    return 0


if __name__ == "__main__":
    from experiments.synergy import main as importable_main  # its functions pickle by name (Dask workers)
    sys.exit(importable_main())
