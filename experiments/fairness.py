"""Fair shares between users (Gandiva-Fair): each user's GPU time against its fair share, and trading's gain.

Usage::

    python -m experiments.fairness [--cluster 8:0:8] [--users 4] [--tickets 1,1,1,1] [--jobs-per-user 15]
        [--workload FILE.csv --user-column user] [--multi-gpu] [--gpus-per-node 4] [--hours 6]
        [--quantum-s 360] [--window-s 3600] [--price-point 0.5] [--tolerance 0.01] [--seeds 0-2]
        [--jobs N | --dask ADDRESS] [--resume] [--quick] --output DIR

Each seed is one workload run twice on the time engine by :class:`fgdopt.fairshare.GandivaFair`, once without
trading and once with it, for ``--hours`` on a Gavel cluster (``--cluster`` V100:P100:K80 GPUs in nodes of
``--gpus-per-node``). The workload: ``--users`` users, each with ``--jobs-per-user`` jobs of Gavel's generator
(:func:`fgdopt.hetero.gavel_jobs`, a static batch: job types and, with ``--multi-gpu``, 1 to 8 GPUs), the jobs
ranked by their speedup of the cluster's first GPU type over its last and the users given them in that order (user
0 the least sped-up jobs); or, with ``--workload``, a CSV of ``job_type`` (a Gavel name), ``scale_factor`` and a
user column (``--user-column``; users numbered in order of first appearance). Every job is submitted at 0 and
lasts the whole run (a steady backlog: each user's demand is the same throughout, so shares are comparable over
time). Users share by ``--tickets`` (default equal).

Measured per run, over windows of ``--window-s`` and over the whole run (from the scheduler's log of quanta):

* ``jain_gpu_time``: Jain's index, over the users, of the GPU time each received over its fair share (max-min fair
  by tickets under its demand; 1: every user exactly at its share), the mean over windows, and ``jain_min`` the
  worst window; ``jain_value``: the same of the work each did over the work its fair share would give it (its GPUs
  of each type times its jobs' mean speed there);
* ``throughput``: work done per second (V100-seconds per second: the V100s' worth of training the cluster did);
* ``min_user_ratio``: the least, over the users, of the work it did with trading over the work it did without (rows
  with trading; 1 in the others); ``throughput_gain_pct`` the gain of trading; ``claim_held``: the paper's claim that
  trading raises efficiency without lowering any user below its fair share, checked on this run: a gain > 0 and
  ``min_user_ratio >= 1 - tolerance`` (``--tolerance`` 0.01: the stride's rounding over a finite run).

Writes ``DIR/fairness.csv`` (``seed, trading, cluster, users, jain_gpu_time, jain_min, jain_value, throughput,
throughput_gain_pct, min_user_ratio, claim_held, trades, migrations, quanta, wall_s``), ``DIR/fairness_series.csv``
(``seed, trading, window_end_h, jain_gpu_time, jain_value, throughput``), ``DIR/fairness_users.csv`` (per run and
user: ``tickets, fair_gpus``, ``gpus``, ``work_per_s``, ``fair_work_per_s``: the work of its fair share at its jobs'
mean speeds, the valuation trading uses, and ``speedup``) and ``DIR/fairness.png`` (Jain's index over time and each
user's work with and without trading). ``--quick``: 8:0:8 GPUs, 4 users of 10 jobs, 3 hours, seed 0.
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
    existing_file,
    gavel_dir,
    integer,
    output_dir,
    parse_seeds,
    positive,
    positive_int,
    real,
    study_parser,
)
from experiments.executors import add_dask_option, add_resume_option, content_digest, run_and_write
from experiments.hetero import parse_cluster
from experiments.outputs import printed
from fgdopt.fairshare import GandivaFair, check_tickets, jain_index
from fgdopt.hetero import GPU_TYPES, JOB_TYPES, HeteroJobs, gavel_jobs, load_throughputs
from fgdopt.hetero.jobs import gavel_cluster
from fgdopt.hetero.throughputs import SCALE_FACTORS
from fgdopt.timeline import simulate
from fgdopt.timeline.jobs import JobSet
from fgdopt.traces import check_csv_rows

TOLERANCE = 0.01
"""How far below its work without trading a user may fall for the claim to hold (the default of ``--tolerance``)."""
KEYS = ("seed", "trading")
COLUMNS = (*KEYS, "cluster", "users", "jain_gpu_time", "jain_min", "jain_value", "throughput", "throughput_gain_pct",
           "min_user_ratio", "claim_held", "trades", "migrations", "quanta", "wall_s")
SERIES = (*KEYS, "window_end_h", "jain_gpu_time", "jain_value", "throughput")
USERS = (*KEYS, "user", "tickets", "fair_gpus", "gpus", "work_per_s", "fair_work_per_s", "speedup")


def parse_tickets(text: str) -> list[float]:
    """``--tickets``: numbers >= 0, comma-separated, one per user, summing to a positive number."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"tickets {text!r}: expected numbers, comma-separated, e.g. 1,1,2") from None
    try:
        check_tickets(values)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"tickets {text!r}: {exc}") from None
    return values


def parse_price_point(text: str) -> float:
    """``--price-point``: a number strictly between 0 and 1."""
    value = real(0, 1, strict=True)(text)
    if value == 1:
        raise argparse.ArgumentTypeError(f"expected a number > 0 and < 1, got {text!r}")
    return value


def read_workload(path: str, column: str) -> tuple[list[str], list[int], list[int]]:
    """Job types (names), scale factors (GPUs, one of Gavel's :data:`~fgdopt.hetero.throughputs.SCALE_FACTORS`)
    and users (numbered by first appearance) of a workload CSV; ``ValueError`` naming the file and the column or row
    at fault (also: an empty file, not text, a row with more or fewer fields than the header)."""
    check_csv_rows(path)
    frame = pd.read_csv(path)
    missing = [c for c in ("job_type", "scale_factor", column) if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: no column {missing[0]!r} (columns: {', '.join(map(str, frame.columns))})")
    if not len(frame):
        raise ValueError(f"{path}: no jobs")
    if (bad := np.flatnonzero(~frame.job_type.isin(JOB_TYPES))).size:
        raise ValueError(f"{path}: row {int(bad[0])}: job_type {frame.job_type.iloc[bad[0]]!r} is not one of Gavel's")
    scale = pd.to_numeric(frame.scale_factor, errors="coerce")
    if (bad := np.flatnonzero(~scale.isin(SCALE_FACTORS))).size:
        raw = frame.scale_factor.iloc[bad[0]]
        raise ValueError(f"{path}: row {int(bad[0])}: scale_factor {'empty' if pd.isna(raw) else repr(str(raw))} is "
                         f"not one of Gavel's GPU counts {', '.join(map(str, SCALE_FACTORS))}")
    if (bad := np.flatnonzero(frame[column].isna().to_numpy())).size:
        raise ValueError(f"{path}: row {int(bad[0])}: no {column}")
    users = pd.factorize(frame[column])[0]
    return frame.job_type.tolist(), scale.astype(int).tolist(), users.tolist()


def make_workload(table, gpus: dict, seed: int, users: int, per_user: int, multi_gpu: bool,
                  workload: tuple | None) -> tuple[HeteroJobs, np.ndarray]:
    """The jobs and each job's user (module docstring)."""
    if workload is not None:
        names, scale, user = workload
        n = len(names)
        trace = HeteroJobs([JOB_TYPES.index(a) for a in names], scale, np.ones(n), np.zeros(n))
        return trace, np.asarray(user, dtype=np.int64)
    trace = gavel_jobs(table, users * per_user, math.inf, seed=seed, multi_gpu=multi_gpu)
    types = tuple(gpus)
    thr = trace.throughputs(table, types)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.nan_to_num(thr[:, 0] / thr[:, -1], nan=0.0, posinf=np.inf)
    user = np.empty(len(trace), dtype=np.int64)
    user[np.lexsort((np.arange(len(trace)), ratio))] = np.repeat(np.arange(users), per_user)
    return trace, user


def quantum_windows(ends: np.ndarray, window_s: float) -> np.ndarray:
    """The windows of the series over quanta ending at ``ends`` (seconds, increasing): per window, the index one past
    its last quantum; a window closes with the last quantum ending at or before each multiple of ``window_s``
    (seconds) and the last holds the rest of the run. None is empty: a window shorter than a quantum adds none, one
    longer than the run is the whole run."""
    cuts = np.searchsorted(ends, np.arange(window_s, ends[-1], window_s), side="right")
    windows = np.unique(np.append(cuts, len(ends)))
    return windows[windows > 0]


def run_seed(seed: int, gpus: dict, users: int, tickets: tuple, per_user: int, multi_gpu: bool, per_node: int,
             hours: float, quantum_s: float, window_s: float, price_point: float, tolerance: float,
             workload: tuple | None = None, data_dir: str | None = None) -> dict:
    """Both runs of one seed (without, then with trading): their rows, series rows and user rows."""
    gpus = {g: c for g, c in gpus.items() if c > 0}
    table = load_throughputs(data_dir)
    trace, user = make_workload(table, gpus, seed, users, per_user, multi_gpu, workload)
    types = tuple(gpus)
    jobs, speed = trace.to_jobset(table, types)
    jobs = JobSet(jobs.tasks, jobs.submit_s, np.full(len(jobs), math.inf))
    cluster = gavel_cluster(gpus, per_node)
    label = ":".join(str(gpus.get(g, 0)) for g in GPU_TYPES)
    horizon = quantum_s * max(1, round(hours * 3600 / quantum_s))
    rows, series, per_user_rows, work = [], [], [], {}
    for trading in (False, True):
        t0 = time.perf_counter()
        mech = GandivaFair(user, np.asarray(tickets), speed, types, trading=trading, price_point=price_point)
        simulate(cluster, jobs, "best-fit", "fifo", seed=seed, mechanism=mech.loop(quantum_s), speed=speed, frag=False,
                 until_s=horizon, restart_s=lambda g: 0.0)
        log = mech.log
        span = np.array([q.end_s - q.start_s for q in log])
        gpu_s = np.array([q.gpu_s.sum(axis=1) for q in log])                        # (quanta, users)
        work_s = np.array([q.work_s.sum(axis=1) for q in log])
        fair_s = np.array([q.fair.sum(axis=1) for q in log]) * span[:, None]        # GPU-seconds of fair share
        fair_work = np.array([(q.fair * q.value).sum(axis=1) for q in log]) * span[:, None]
        ends = np.array([q.end_s for q in log])
        windows = quantum_windows(ends, window_s)
        jains, values = [], []
        for lo, hi in zip(np.concatenate(([0], windows[:-1])), windows, strict=True):
            on = fair_s[lo:hi].sum(axis=0) > 0
            jains.append(jain_index(gpu_s[lo:hi].sum(axis=0)[on] / fair_s[lo:hi].sum(axis=0)[on]))
            values.append(jain_index(work_s[lo:hi].sum(axis=0)[on] / fair_work[lo:hi].sum(axis=0)[on]))
            series.append({"seed": seed, "trading": trading, "window_end_h": ends[hi - 1] / 3600,
                           "jain_gpu_time": jains[-1], "jain_value": values[-1],
                           "throughput": work_s[lo:hi].sum() / span[lo:hi].sum()})
        total = span.sum()
        work[trading] = work_s.sum(axis=0) / total
        thr = np.array([q.value for q in log]).mean(axis=0)
        for u in range(len(tickets)):
            per_user_rows.append({"seed": seed, "trading": trading, "user": u, "tickets": tickets[u],
                                  "fair_gpus": fair_s[:, u].sum() / total, "gpus": gpu_s[:, u].sum() / total,
                                  "work_per_s": work[trading][u], "fair_work_per_s": fair_work[:, u].sum() / total,
                                  "speedup": thr[u, 0] / thr[u, -1] if thr[u, -1] > 0 else math.nan})
        rows.append({"seed": seed, "trading": trading, "cluster": label, "users": len(tickets),
                     "jain_gpu_time": float(np.mean(jains)), "jain_min": float(np.min(jains)),
                     "jain_value": float(np.mean(values)), "throughput": float(work_s.sum() / total),
                     "trades": sum(len(q.trades) for q in log), "migrations": mech.migrations, "quanta": len(log),
                     "wall_s": time.perf_counter() - t0})
    base, traded = rows
    gain = 100 * (traded["throughput"] / base["throughput"] - 1)
    active = work[False] > 0
    ratio = float((work[True][active] / work[False][active]).min()) if active.any() else math.nan
    base.update(throughput_gain_pct=0.0, min_user_ratio=1.0, claim_held=None)
    traded.update(throughput_gain_pct=gain, min_user_ratio=ratio, claim_held=bool(gain > 0 and ratio >= 1 - tolerance))
    return {"rows": rows, "series": series, "users": per_user_rows}


def plot(series: pd.DataFrame, users: pd.DataFrame, path: Path) -> None:
    """Left: Jain's index of GPU time over fair share and of work over the work of the fair share, against time, per
    arm (mean over seeds). Right: each user's work per second with and without trading (mean over seeds)."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    for k, (trading, rows) in enumerate(series.groupby("trading")):
        arm = "with trading" if trading else "without trading"
        mean = rows.groupby("window_end_h")[["jain_gpu_time", "jain_value"]].mean()
        left.plot(mean.index, mean.jain_gpu_time, "o-", color=f"C{k}", label=f"GPU time, {arm}")
        left.plot(mean.index, mean.jain_value, "s--", color=f"C{k}", label=f"work, {arm}")
    left.set_xlabel("time (h)")
    left.set_ylabel("Jain's index over fair share")
    left.legend(fontsize=7)
    work = users.groupby(["user", "trading"]).work_per_s.mean().unstack("trading")
    at = np.arange(len(work))
    for k, trading in enumerate(work.columns):
        right.bar(at + 0.4 * k - 0.2, work[trading].to_numpy(), 0.4,
                  label="with trading" if trading else "without trading")
    right.set_xticks(at, [f"user {u}" for u in work.index])
    right.set_ylabel("work per second (V100s)")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(results: list[dict], out: Path) -> pd.DataFrame:
    """``fairness.csv``, ``fairness_series.csv``, ``fairness_users.csv`` and ``fairness.png`` into ``out``."""
    frame = pd.DataFrame([r for res in results for r in res["rows"]], columns=list(COLUMNS))
    series = pd.DataFrame([r for res in results for r in res["series"]], columns=list(SERIES))
    users = pd.DataFrame([r for res in results for r in res["users"]], columns=list(USERS))
    frame.to_csv(out / "fairness.csv", index=False)
    series.to_csv(out / "fairness_series.csv", index=False)
    users.to_csv(out / "fairness_users.csv", index=False)
    if len(frame):
        plot(series, users, out / "fairness.png")
    return frame


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.fairness", __doc__)
    parser.add_argument("--cluster", type=parse_cluster, default=parse_cluster("8:0:8"),
                        help="GPUs V100:P100:K80 (default: 8:0:8)")
    parser.add_argument("--users", type=integer(1, 64), default=4, help="users (default: 4)")
    parser.add_argument("--tickets", type=parse_tickets, default=None,
                        help="each user's tickets, comma-separated (default: equal)")
    parser.add_argument("--jobs-per-user", type=positive_int, default=15, help="jobs per user (default: 15)")
    parser.add_argument("--workload", type=existing_file, default=None,
                        help="a CSV of job_type, scale_factor and a user column instead of the generated jobs")
    parser.add_argument("--user-column", default="user", help="the user column of --workload (default: user)")
    parser.add_argument("--multi-gpu", action="store_true", help="generated jobs of 1 to 8 GPUs (Gavel's -m)")
    parser.add_argument("--gpus-per-node", type=integer(1, 8), default=4, help="GPUs per node (default: 4)")
    parser.add_argument("--hours", type=positive, default=6.0,
                        help="hours run, rounded to whole quanta, at least one (default: 6)")
    parser.add_argument("--quantum-s", type=positive, default=360.0, help="seconds per quantum (default: 360)")
    parser.add_argument("--window-s", type=positive, default=3600.0,
                        help="seconds per window of the series (default: 3600)")
    parser.add_argument("--price-point", type=parse_price_point, default=0.5,
                        help="where the trading price lies between the two users' speedups (default: 0.5)")
    parser.add_argument("--tolerance", type=real(0, 1), default=TOLERANCE,
                        help="how far below its work without trading a user may fall for the claim to hold "
                        "(default: 0.01)")
    parser.add_argument("--seeds", type=parse_seeds, default=[0, 1, 2], help="seeds, A-B or a,b (default: 0-2)")
    parser.add_argument("--quick", action="store_true", help="8:0:8, 4 users of 10 jobs, 3 hours, seed 0"
                                                             " (an option written on the command line wins)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default: 1)")
    add_dask_option(parser)
    add_resume_option(parser)
    parser.add_argument("--data-dir", type=gavel_dir, default=None,
                        help="Gavel's throughputs folder (default: $FGDOPT_GAVEL)")
    parser.add_argument("--output", type=output_dir, required=True, help="folder for fairness.csv and fairness.png")
    args = parser.parse_args(argv)
    if args.quick:
        parser.quick(args, cluster=parse_cluster("8:0:8"), users=4, jobs_per_user=10, hours=3.0, seeds=[0])
    workload = None
    if args.workload is not None:
        if ignored := [f"--{d.replace('_', '-')}" for d in ("users", "jobs_per_user", "multi_gpu")
                       if d in parser.written()]:
            parser.error(f"--workload: its file gives the users and their jobs; drop {', '.join(ignored)}")
        try:
            workload = read_workload(str(args.workload), args.user_column)
        except ValueError as exc:
            parser.error(f"--workload: {exc}")
        args.users = max(workload[2]) + 1
        args.seeds = args.seeds[:1]                        # the workload is the same for every seed
    tickets = args.tickets if args.tickets is not None else [1.0] * args.users
    if len(tickets) != args.users:
        parser.error(f"--tickets: {len(tickets)} values for {args.users} users")
    per_node = args.gpus_per_node
    if args.multi_gpu and max(args.cluster.values()) < 8:
        parser.error("--cluster: with --multi-gpu a job asks for up to 8 GPUs of one type")
    if workload is not None and (big := max(workload[1])) > (most := max(args.cluster.values())):
        parser.error(f"--workload: row {workload[1].index(big)}: scale_factor {big}: no GPU type of --cluster has "
                     f"that many (at most {most}); the job would never run")
    try:
        table = load_throughputs(None if args.data_dir is None else str(args.data_dir))
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    data_dir = None if args.data_dir is None else str(args.data_dir)
    cells = [(s, args.cluster, args.users, tuple(tickets), args.jobs_per_user, args.multi_gpu, per_node, args.hours,
              args.quantum_s, args.window_s, args.price_point, args.tolerance, workload, data_dir)
             for s in args.seeds]
    keys = [(*c[:-2], content_digest(str(args.workload)) if workload else None, content_digest(table.source))
            for c in cells]
    frame, code = run_and_write("fairness", run_seed, cells, args, keys, write_outputs, parser.prog)
    if code:
        return code
    print(printed(frame, digits=3))
    return 0


if __name__ == "__main__":
    from experiments.fairness import main as importable_main  # its functions pickle by name (Dask workers)

    sys.exit(importable_main())
