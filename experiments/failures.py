"""Failures and drift: what failed nodes and GPUs and slow GPUs cost over time, the checkpoint interval that loses least
against Young/Daly's, and what health-aware placement buys.

Usage::

    python -m experiments.failures [--workload openb,gang] [--load 0.9] [--seeds 42] [--n-jobs 2000]
        [--policies fgd,best-fit,health-aware] [--queue backfill] [--mtbf-scale 1,20] [--node-mtbf-h H]
        [--gpu-mtbf-h H] [--repair-h 6] [--checkpoint-s 1800] [--checkpoint-cost-s 60] [--spread 0.1]
        [--stragglers 0.05] [--straggler-factor 0.5] [--drift 0.02] [--intervals 0.25,0.5,1,2,4] [--sweep-jobs 400]
        [--jobs N | --dask ADDRESS] [--resume] [--quick] --output DIR

Every (workload, seed, load, policy, queue) runs three ways on the engine (:func:`fgdopt.timeline.simulate`, backfill
by default): ``none`` (no failure, every GPU at speed 1), ``failures`` (:class:`fgdopt.timeline.failures.FailureModel`:
node and GPU failures at the published rates, ``--node-mtbf-h`` / ``--gpu-mtbf-h``, default Llama 3's 15,338 h and
86,332 h, divided by each ``--mtbf-scale``, repaired after ``--repair-h``; checkpoints every ``--checkpoint-s``
seconds costing ``--checkpoint-cost-s``) and ``drift`` (:class:`fgdopt.timeline.failures.SpeedModel`: per-GPU speed
factors uniform in ``[1 - spread, 1]``, a share ``--stragglers`` at ``--straggler-factor`` times that, and an hourly
``--drift``; no failure). Workload ``openb``: :func:`fgdopt.timeline.sources.openb_jobs` (services, warm start,
``--n-jobs`` Poisson stream jobs at ``--load``, measured after a 10% warm-up) on the openb cluster; ``gang``: the same
with 30% of the measured GPU jobs made gangs of 2, 4 or 8 workers (:func:`experiments.bench_timeline.with_gangs`:
the same GPU-time).

Writes ``DIR/failures.csv``, one row per run: ``workload, seed, load, policy, queue, scenario, mtbf_scale`` and
``failures`` (carried out), ``stopped`` (job stops they caused), ``lost_gpu_h`` (progress thrown away, GPU-hours,
all jobs), ``overhead_gpu_h`` (checkpoint and restart time, GPU-hours), ``lost_pct`` (lost over the GPU-time of the
work, %), ``measured``, ``unfinished``, ``mean_jct_s`` (measured jobs), ``jct_slowdown`` (over the ``none`` run of
the same keys), ``mean_speed`` (the measured finished GPU jobs' work over run time, 1 = every run at full speed),
``speed_all`` (the same over every finished GPU job, warm start included, weighted by GPUs), ``wall_s``.

``DIR/interval.csv``: the checkpoint interval against Young/Daly's. A cluster of 32 nodes of 8 GPUs runs
``--sweep-jobs`` gangs of 2 workers x 8 GPUs (each gang on 2 whole nodes; work exponential, mean 24 h; Poisson
arrivals at load 0.7, fifo) under failures scaled so that a gang's mean time between failures
(:func:`fgdopt.timeline.failures.job_mtbf_s`: 2 nodes and 16 GPUs) is 12 h, repaired after ``--repair-h``, once per
interval ``ratio x sqrt(2 x checkpoint_cost_s x 12 h)`` for every ``--intervals`` ratio (the same failure trace for
all: it depends on the cluster and the seed only). One row per interval: ``seed, ratio, checkpoint_s,
young_daly_s, job_mtbf_s, failures, lost_pct, checkpoint_pct, restart_pct, waste_pct`` (of the gangs' work:
progress lost, checkpoints, restarts, their sum) and ``best`` (the interval of least waste of its seed).
``DIR/failures.png``: the JCT slowdown per policy and scenario, one panel per workload, and the waste against the
interval with Young/Daly's marked (:func:`fgdopt.plot.plot_failures`). Prints both tables.

``--quick``: 300 stream jobs, seed 42, policies fgd and health-aware, ``--mtbf-scale 20``, a sweep of 150 gangs at
ratios 0.25, 1, 4 (under two minutes on 2 cores). Each finished run is kept in ``DIR/.runs/``: ``--resume`` skips
the runs already there with the same inputs. Options under which a run would not end (a 1-GPU job, or a gang of the
sweep, taking more than :data:`MAX_SLOWDOWN` seconds per second of work in expectation: :func:`slowdown_error`) stop
at the door in one line.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.args import (
    check_stream_loads,
    fraction,
    names,
    openb_dir,
    output_dir,
    parse_policies,
    parse_seeds,
    positive,
    positive_int,
    real,
    real_list,
    study_parser,
)
from experiments.bench_timeline import with_gangs
from experiments.executors import add_dask_option, add_resume_option, content_digest, policy_digest, run_and_write
from experiments.outputs import printed
from experiments.timeline import parse_queues
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.plot import plot_failures
from fgdopt.timeline import JobSet, openb_jobs, simulate
from fgdopt.timeline.engine import FINISHED
from fgdopt.timeline.failures import (
    GPU_MTBF_S,
    HOUR_S,
    NODE_MTBF_S,
    FailureModel,
    FailuresAndDrift,
    SpeedModel,
    job_mtbf_s,
    young_daly_s,
)
from fgdopt.timeline.preemption import Checkpointing
from fgdopt.traces import load_openb, trace_files

WORKLOADS = ("openb", "gang")
SCENARIOS = ("none", "failures", "drift")
KEYS = ("workload", "seed", "load", "policy", "queue", "scenario", "mtbf_scale")
COLUMNS = (*KEYS, "failures", "stopped", "lost_gpu_h", "overhead_gpu_h", "lost_pct", "measured", "unfinished",
           "mean_jct_s", "jct_slowdown", "mean_speed", "speed_all", "wall_s")
INTERVAL_COLUMNS = ("seed", "ratio", "checkpoint_s", "young_daly_s", "job_mtbf_s", "failures", "lost_pct",
                    "checkpoint_pct", "restart_pct", "waste_pct", "best")
SWEEP = {"nodes": 32, "gpus": 8, "workers": 2, "work_h": 24.0, "load": 0.7, "job_mtbf_h": 12.0}
"""The interval sweep's cluster and gangs (module docstring)."""

parse_workloads = names(WORKLOADS, "workload")
MAX_SLOWDOWN = 1000.0
"""The most run time per second of work a run may ask, in expectation, of its least exposed job (a 1-GPU job; in the
sweep, its gangs; :func:`slowdown_error`): beyond it the engine would draw failures or drift steps for ages and the
run would not end (``--mtbf-scale 1e6``: a node fails every 55 s and a checkpoint every 1,800 s is never reached)."""


def expected_slowdown(mtbf_s: float, interval_s: float, cost_s: float) -> float:
    """Run time per second of work of a job that fails every ``mtbf_s`` seconds on average and checkpoints every
    ``interval_s`` seconds of work, ``cost_s`` seconds each (restarts and repairs aside): a cycle of ``interval_s +
    cost_s`` is retried until no failure cuts it, ``mtbf_s (exp((interval_s + cost_s) / mtbf_s) - 1)`` seconds in
    expectation (Daly 2006), for ``interval_s`` of work.

    >>> round(expected_slowdown(43_200.0, 2_276.84, 60.0), 4), expected_slowdown(math.inf, 1.0, 59.0)
    (1.0546, 60.0)
    """
    x = (interval_s + cost_s) / mtbf_s
    return math.inf if x > 700 else (interval_s + cost_s if x == 0 else mtbf_s * math.expm1(x)) / interval_s


def slowdown_error(args: argparse.Namespace) -> str | None:
    """One line naming the options that would ask more than :data:`MAX_SLOWDOWN` of a run (None: every run can end):
    a 1-GPU job under each ``--mtbf-scale`` (failures and checkpoints), the slowest GPU of the drift scenario, the
    sweep's gangs at each ``--intervals`` ratio."""
    def said(slow: float, who: str) -> str:
        return (f"{who} would take {slow:.3g} s per second of work in expectation (at most {MAX_SLOWDOWN:g}): "
                "its run would not end")

    for scale in args.mtbf_scale:
        mtbf = job_mtbf_s(1, 1, args.node_mtbf_h * HOUR_S / scale, args.gpu_mtbf_h * HOUR_S / scale)
        if (slow := expected_slowdown(mtbf, args.checkpoint_s, args.checkpoint_cost_s)) > MAX_SLOWDOWN:
            return (f"--mtbf-scale {scale:g}, --checkpoint-s {args.checkpoint_s:g}, --checkpoint-cost-s "
                    f"{args.checkpoint_cost_s:g}: " + said(slow, f"a 1-GPU job failing every {mtbf:.3g} s"))
    speed = (1 - args.spread) * (1 - args.drift) * (args.straggler_factor if args.stragglers > 0 else 1.0)
    if 1 / speed > MAX_SLOWDOWN:
        return (f"--straggler-factor {args.straggler_factor:g}, --spread {args.spread:g}, --drift {args.drift:g}: "
                + said(1 / speed, "a job on the slowest GPU"))
    mtbf = SWEEP["job_mtbf_h"] * HOUR_S
    for ratio in args.intervals:
        interval = ratio * young_daly_s(args.checkpoint_cost_s, mtbf)
        if (slow := expected_slowdown(mtbf, interval, args.checkpoint_cost_s)) > MAX_SLOWDOWN:
            return (f"--intervals {ratio:g} (checkpoints every {interval:.3g} s), --checkpoint-cost-s "
                    f"{args.checkpoint_cost_s:g}: " + said(slow, f"a gang of the sweep failing every {mtbf:g} s"))
    return None


def mtbf_hours(text: str) -> float:
    """The type of a mean time between failures option: hours > 0, or ``inf`` (never)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of hours > 0 or inf, got {text!r}")
    return value


def _lost(result, mech: FailuresAndDrift | None) -> dict:
    """Failures, stops, lost and overhead GPU-hours of a run (all jobs)."""
    gpus = result.jobs.tasks.gpu_demand / GPU_MILLI
    lost = float((gpus * result.lost_s).sum()) / HOUR_S
    work = float((gpus * np.where(np.isfinite(result.jobs.duration_s), result.work_s, 0.0)).sum()) / HOUR_S
    return {"failures": len(mech.log) if mech else 0, "stopped": int(sum(e["stopped"] for e in mech.log)) if mech
            else 0, "lost_gpu_h": lost, "overhead_gpu_h": float((gpus * result.overhead_s).sum()) / HOUR_S,
            "lost_pct": 100 * lost / work if work else math.nan}


def run_cell(workload: str, seed: int, load: float, policy: str, queue: str, scenario: str, scale: float,
             n_jobs: int, options: dict, data_dir: str | None = None) -> dict:
    """One run of failures.csv: its row and the JCT of every measured job (for the slowdown over ``none``)."""
    t0 = time.perf_counter()
    cluster, jobs = openb_jobs("default", load, n_jobs, seed=seed, data_dir=data_dir)
    if workload == "gang":
        jobs = with_gangs(jobs, 0.3, (2, 4, 8), seed)
    mech = None
    if scenario == "failures":
        model = FailureModel(options["node_mtbf_s"] / scale, options["gpu_mtbf_s"] / scale, options["repair_s"], seed)
        mech = FailuresAndDrift(model, checkpointing=Checkpointing(options["checkpoint_s"],
                                                                    options["checkpoint_cost_s"]))
    elif scenario == "drift":
        speeds = SpeedModel(options["spread"], options["stragglers"], options["straggler_factor"], options["drift"],
                            seed=seed)
        mech = FailuresAndDrift(speeds=speeds, cluster=cluster, checkpointing=Checkpointing())
    result = simulate(cluster, jobs, policy, queue, seed=seed, frag=False, mechanism=mech or "none")
    done = jobs.measured & (result.status == FINISHED)
    gpu = done & (jobs.tasks.num_gpu > 0) & (jobs.duration_s > 0)
    jct = np.where(done, result.finish_s - jobs.submit_s, np.nan)
    gpus = jobs.tasks.gpu_demand / GPU_MILLI
    ran = (result.status == FINISHED) & (gpus > 0) & (jobs.duration_s > 0)
    row = {"workload": workload, "seed": seed, "load": load, "policy": policy, "queue": queue, "scenario": scenario,
           "mtbf_scale": scale if scenario == "failures" else math.nan, **_lost(result, mech),
           "measured": int(jobs.measured.sum()), "unfinished": int((jobs.measured & (result.status != FINISHED)).sum()),
           "mean_jct_s": float(np.nanmean(jct)) if done.any() else math.nan, "jct_slowdown": math.nan,
           "mean_speed": float(jobs.duration_s[gpu].sum() / result.run_s[gpu].sum()) if gpu.any() else math.nan,
           "speed_all": float((gpus * jobs.duration_s)[ran].sum() / (gpus * result.run_s)[ran].sum())
           if ran.any() else math.nan,
           "wall_s": time.perf_counter() - t0}
    return {"row": row, "jct": jct}


def sweep_jobs(n_jobs: int, seed: int) -> tuple[Cluster, JobSet]:
    """The interval sweep's cluster and gangs (module docstring, :data:`SWEEP`)."""
    s = SWEEP
    cluster = Cluster([96_000] * s["nodes"], [786_432] * s["nodes"], [s["gpus"]] * s["nodes"], ["V100"] * s["nodes"])
    rng = np.random.default_rng(seed)
    work = rng.exponential(s["work_h"] * HOUR_S, n_jobs)
    slots = s["nodes"] // s["workers"]                                 # gangs the cluster runs at once
    submit = np.cumsum(rng.exponential(s["work_h"] * HOUR_S / (s["load"] * slots), n_jobs))
    tasks = TaskSet([8_000] * n_jobs, [65_536] * n_jobs, [s["gpus"]] * n_jobs, [GPU_MILLI] * n_jobs,
                    workers=[s["workers"]] * n_jobs)
    return cluster, JobSet(tasks, submit, work)


def sweep_cell(seed: int, ratio: float, n_jobs: int, options: dict) -> dict:
    """One run of interval.csv (module docstring): its row, ``best`` filled in by :func:`interval_table`."""
    s = SWEEP
    cluster, jobs = sweep_jobs(n_jobs, seed)
    gang_rate = s["workers"] / NODE_MTBF_S + s["workers"] * s["gpus"] / GPU_MTBF_S
    scale = 1.0 / (gang_rate * s["job_mtbf_h"] * HOUR_S)               # the gang's MTBF becomes job_mtbf_h
    model = FailureModel(NODE_MTBF_S / scale, GPU_MTBF_S / scale, options["repair_s"], seed)
    mtbf = job_mtbf_s(s["workers"], s["workers"] * s["gpus"], model.node_mtbf_s, model.gpu_mtbf_s)
    cost = options["checkpoint_cost_s"]
    best_s = young_daly_s(cost, mtbf)
    mech = FailuresAndDrift(model, checkpointing=Checkpointing(ratio * best_s, cost))
    result = simulate(cluster, jobs, "best-fit", "fifo", seed=seed, frag=False, mechanism=mech)
    work = float(jobs.duration_s.sum())
    restart = float(result.preemptions.sum()) * 60.0                 # helios_restart_s of 16 GPUs, per restart
    lost, over = float(result.lost_s.sum()), float(result.overhead_s.sum())
    return {"seed": seed, "ratio": ratio, "checkpoint_s": ratio * best_s, "young_daly_s": best_s, "job_mtbf_s": mtbf,
            "failures": len(mech.log), "lost_pct": 100 * lost / work, "checkpoint_pct": 100 * (over - restart) / work,
            "restart_pct": 100 * restart / work, "waste_pct": 100 * (lost + over) / work, "best": False}


def failures_table(results: list[dict]) -> pd.DataFrame:
    """The rows of the runs of ``results`` with ``jct_slowdown`` over the ``none`` run of the same keys."""
    base = {tuple(r["row"][k] for k in KEYS[:5]): r for r in results if r["row"]["scenario"] == "none"}
    rows = []
    for r in results:
        row = dict(r["row"])
        twin = base.get(tuple(row[k] for k in KEYS[:5]))
        if twin is not None:
            row["jct_slowdown"] = row["mean_jct_s"] / twin["row"]["mean_jct_s"]
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def interval_table(rows: list[dict]) -> pd.DataFrame:
    """The sweep's rows, ``best`` marking the interval of least waste of each seed."""
    frame = pd.DataFrame(rows, columns=list(INTERVAL_COLUMNS))
    if len(frame):
        frame["best"] = frame.index.isin(frame.groupby("seed")["waste_pct"].idxmin())
    return frame


def run_any(kind: str, *args) -> dict:
    """A cell of either table (``run`` or ``sweep``), so that one sweep runs both."""
    return {"kind": kind, **(run_cell(*args) if kind == "run" else {"row": sweep_cell(*args)})}


def write_outputs(results: list[dict], out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write ``failures.csv``, ``interval.csv`` and ``failures.png`` of ``results`` into the folder ``out``."""
    runs = failures_table([r for r in results if r["kind"] == "run"])
    sweep = interval_table([r["row"] for r in results if r["kind"] == "sweep"])
    runs.to_csv(out / "failures.csv", index=False)
    sweep.to_csv(out / "interval.csv", index=False)
    if len(runs) or len(sweep):
        plot_failures(runs, sweep, out / "failures.png")
    return runs, sweep


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.failures", __doc__)
    parser.add_argument("--workload", type=parse_workloads, default=list(WORKLOADS),
                        help="openb, gang or both (default: both)")
    parser.add_argument("--load", type=real_list(0.0), default=[0.9], help="offered loads (default: 0.9)")
    parser.add_argument("--seeds", type=parse_seeds, default=[42], help="seeds, A-B or a,b (default: 42)")
    parser.add_argument("--n-jobs", type=positive_int, default=2000, help="stream jobs per run (default: 2000)")
    parser.add_argument("--policies", type=parse_policies, default=["fgd", "best-fit", "health-aware"],
                        help="placement policies (default: fgd,best-fit,health-aware)")
    parser.add_argument("--queue", type=parse_queues, default=["backfill"], help="disciplines (default: backfill)")
    parser.add_argument("--mtbf-scale", type=real_list(0.0), default=[1.0, 20.0],
                        help="divide the MTBFs by each of these (default: 1,20)")
    parser.add_argument("--node-mtbf-h", type=mtbf_hours, default=NODE_MTBF_S / HOUR_S,
                        help=f"mean time between failures of a node, hours (default: {NODE_MTBF_S / HOUR_S:.0f})")
    parser.add_argument("--gpu-mtbf-h", type=mtbf_hours, default=GPU_MTBF_S / HOUR_S,
                        help=f"mean time between failures of a GPU, hours (default: {GPU_MTBF_S / HOUR_S:.0f})")
    parser.add_argument("--repair-h", type=real(0), default=6.0, help="repair time, hours (default: 6, assumed)")
    parser.add_argument("--checkpoint-s", type=positive, default=1800.0, help="checkpoint interval (default: 1800)")
    parser.add_argument("--checkpoint-cost-s", type=positive, default=60.0,
                        help="seconds one checkpoint takes, > 0: the sweep's intervals are ratios of Young/Daly's "
                        "sqrt(2 x cost x MTBF) (default: 60)")
    parser.add_argument("--spread", type=real(0, 0.99), default=0.1,
                        help="factors drawn in [1-spread, 1] (default: 0.1)")
    parser.add_argument("--stragglers", type=fraction, default=0.05, help="share of straggler GPUs (default: 0.05)")
    parser.add_argument("--straggler-factor", type=real(0, 1, strict=True), default=0.5,
                        help="a straggler's speed factor, > 0 (default: 0.5)")
    parser.add_argument("--drift", type=real(0, 0.99), default=0.02, help="hourly drift of a factor (default: 0.02)")
    parser.add_argument("--intervals", type=real_list(0.0), default=[0.25, 0.5, 1.0, 2.0, 4.0],
                        help="checkpoint intervals of the sweep, as ratios to Young/Daly's (default: 0.25,0.5,1,2,4)")
    parser.add_argument("--sweep-jobs", type=positive_int, default=400, help="gangs of the sweep (default: 400)")
    parser.add_argument("--quick", action="store_true", help="300 jobs, seed 42, fgd and health-aware, "
                        "--mtbf-scale 20, a sweep of 150 gangs at ratios 0.25,1,4"
                        " (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--data-dir", type=openb_dir, default=None, help="openb folder (default: $FGDOPT_DATA)")
    parser.add_argument("--output", type=output_dir, required=True,
                        help="folder for failures.csv, interval.csv and failures.png")
    args = parser.parse_args(argv)
    data_dir = None if args.data_dir is None else str(args.data_dir)
    if args.quick:
        parser.quick(args, n_jobs=300, seeds=[42], policies=["fgd", "health-aware"], mtbf_scale=[20.0],
                     sweep_jobs=150, intervals=[0.25, 1.0, 4.0])
    try:                                                   # a missing or broken data set stops here, in one line
        load_openb("default", data_dir)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    if (said := slowdown_error(args)) is not None:
        parser.error(said)
    if "openb" in args.workload:
        check_stream_loads(parser, ["default"], args.seeds, args.load, data_dir)
    options = {"node_mtbf_s": args.node_mtbf_h * HOUR_S, "gpu_mtbf_s": args.gpu_mtbf_h * HOUR_S,
               "repair_s": args.repair_h * HOUR_S, "checkpoint_s": args.checkpoint_s,
               "checkpoint_cost_s": args.checkpoint_cost_s, "spread": args.spread, "stragglers": args.stragglers,
               "straggler_factor": args.straggler_factor, "drift": args.drift}
    scenarios = [("none", 1.0), *(("failures", s) for s in args.mtbf_scale), ("drift", 1.0)]
    cells = [("run", w, s, ld, p, q, sc, k, args.n_jobs, options, data_dir) for w in args.workload
             for s in args.seeds for ld in args.load for p in args.policies for q in args.queue
             for sc, k in scenarios]
    cells += [("sweep", s, r, args.sweep_jobs, options) for s in args.seeds for r in args.intervals]
    digest = content_digest(*trace_files("default", data_dir))
    keys = [(*c[:4], policy_digest(c[4]), policy_digest(c[5]), *c[6:-2], sorted(c[-2].items()), digest)
            if c[0] == "run" else (*c[:-1], sorted(c[-1].items())) for c in cells]   # specs by their modules' content
    frames, code = run_and_write("failures", run_any, cells, args, keys, write_outputs, parser.prog)
    if code:
        return code
    runs, sweep = frames
    print(printed(runs[[*KEYS, "failures", "stopped", "lost_gpu_h", "lost_pct", "mean_jct_s", "jct_slowdown",
                        "mean_speed", "speed_all"]], digits=3))
    print(printed(sweep, digits=3))
    return 0


if __name__ == "__main__":
    from experiments.failures import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
