"""Regenerate the paper: every study it reports, its tables and its figures.

Usage::

    python -m experiments.paper [--quick] [--only NAMES] [--rerun NAMES|all] [--results DIR]

Each study of :data:`STUDIES` is one run of an experiment module (``python -m experiments.<module> ...
--output DIR``) in its own process. Its output files are cached under ``paper/results/<study>/`` with the
run's inputs (``inputs.json``: module, arguments, profile, fgdopt's trace checksums) and costs (``run.json``:
wall and CPU seconds); a study is rerun only when its inputs changed, or when ``--rerun`` names it (do that
after changing code it depends on). Then :func:`experiments.report.write_report` rewrites
``paper/tables/*.md``, ``paper/figures/*.png`` and the generated blocks of ``paper/paper.md`` from the
cached results alone, so no number in the paper is typed by hand.

``--quick`` (the profile the committed paper uses) keeps every study small enough that the whole command runs
in about two hours on 2 cores from an empty cache; without it the full grids run (hours; see each study's
``full`` arguments, or give ``--dask ADDRESS`` to the study modules directly). Studies that need the openb
trace fail with a one-line hint when it is absent.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from experiments.args import names, output_dir, study_parser
from experiments.report import PAPER_DIR, write_report
from fgdopt.traces import SHA256

RESULTS_DIR = PAPER_DIR / "results"
PAPER_SIX = "random,dot-product,gpu-clustering,gpu-packing,best-fit,fgd"
MIG_POLICIES = "mig-fgd,mig-first-fit,mig-best-fit,mig-greedy"
GAVEL_RATES = "0.4,0.5,0.8,1,1.2,1.6,2,2.4,2.5,2.8,3,3.2,3.5,3.6,4"
"""Arrival rates (jobs/hour) of the heterogeneity study below saturation: Gavel's Figure 8 grid (0.4 to 6.0 by 0.4) up
to 4, and the other rates at which Gavel's own simulator was run for the cross-check (``results/gavel-crosscheck``)."""
SATURATED_RATES = "4.4,4.8,5.2,5.6,6"
"""The rest of Gavel's Figure 8 grid, past about 4.5 jobs/hour, where the queue grows (its own study,
``hetero-saturated``: a run there stops once its measured jobs have finished, as Gavel's does, and costs far more)."""

SEED_ARGS = ("--rates", f"{GAVEL_RATES},{SATURATED_RATES}", "--seeds", "1,2", "--policies", "las,las-aware",
             "--jobs", "2")
"""Figure 8's other seeds (1 and 2) over its whole grid, in both profiles: the report's gain spread over seeds."""

MULTI_RATES = "0.5,1,1.5,2,2.5,3"
"""Arrival rates (jobs/hour) of the multi-GPU study (Gavel's Figure 9 sweeps 0 to 3) where Gavel's own simulator was
run for the cross-check; the window (jobs 300-499) is short enough to run both simulators here."""
MULTI_ARGS = ("--multi-gpu", "--rates", MULTI_RATES, "--seeds", "0", "--window", "300:500", "--policies",
              "las,las-aware", "--jobs", "1")
"""The multi-GPU studies' arguments (both profiles): 36:36:36 in 1-GPU nodes, as Gavel's multi-GPU sweeps."""
SPREAD_RATES = "0.5,1,1.5,2"
"""Rates of the multi-GPU study at the unconsolidated throughputs: a spread job runs slower, so the cluster saturates
earlier (at 3 jobs/hour Gavel's own runs keep its GPUs 90% and 94% busy)."""

FAIR_MULTI_ARGS = ("--multi-gpu", "--cluster", "16:0:16", "--jobs-per-user", "10")
"""Gandiva-Fair with gangs of 1 to 8 GPUs on 4-GPU nodes (8-GPU jobs go to the central scheduler)."""

SEED_POINTS = "43:1.1,44:1.1,42:1.0,43:1.2,44:1.2,43:1.0,44:1.0"
"""The (seed, load) points of the full-scale schedule study beyond seed 42 at loads 1.1 and 1.2, most wanted first:
the other seeds at the headline load 1.1, seed 42 at 1.0 (its loads 1.0-1.2 complete), the other seeds at 1.2,
then at 1.0."""
SEED_GRID = ("--n-jobs", "20000", "--policies", "fgd,best-fit,drain-fit", "--queue", "area,area-aged", "--time-limit",
             "600", "--jobs", "1")
"""The grid at those points, chosen from seed 42's (3 policies x 6 queues cost about 1,900 CPU s a point): the two
queues of every best run there (area, area-aged), each policy with and without reservations, the search, every
bound and the diagnostics."""

MEDIUM_ARGS = ("--instances", "medium-time", "--scale", "--time-limit", "60", "--lns-time-limit", "30", "--jobs", "2")
"""The ``medium-time`` suite (8 instances of 16-64 nodes and 300-1,000 jobs) run and bounded by the full-scale
methods, every bound at most 60 s a point, the search 30 CP-SAT seconds."""


@dataclass(frozen=True)
class Study:
    """One cached experiment run: ``python -m experiments.<module> <args> --output DIR``.

    ``quick`` and ``full`` are the arguments of the two profiles; ``keep`` the output files the report reads
    (everything else the run writes is dropped from the cache).
    """

    name: str
    module: str
    quick: tuple[str, ...]
    full: tuple[str, ...]
    keep: tuple[str, ...]


STUDIES: tuple[Study, ...] = (
    Study("replay-default", "openb",
          ("--trace", "default", "--seeds", "42-44", "--jobs", "2"),
          ("--trace", "default", "--seeds", "42-51", "--jobs", "2"),
          ("summary.csv", "curves.csv")),
    Study("replay-variants", "openb",
          ("--trace", "all", "--seeds", "42", "--policies", PAPER_SIX, "--jobs", "2"),
          ("--trace", "all", "--seeds", "42-51", "--policies", PAPER_SIX + ",fgd-exact", "--jobs", "2"),
          ("summary.csv",)),
    Study("refsim", "refsim", (), (), ("refsim.csv",)),
    Study("runtime", "bench_replay", (), ("--repeats", "5"), ("bench_replay.csv",)),
    Study("gap-small", "gap",
          ("--instances", "small", "--time-limit", "10", "--jobs", "2"),
          ("--instances", "small", "--time-limit", "60", "--jobs", "2"),
          ("gap.csv",)),
    Study("gap-medium", "gap",
          ("--instances", "medium", "--methods", "config-types", "--time-limit", "30", "--jobs", "2"),
          ("--instances", "medium", "--methods", "config-types,milp-cbc", "--time-limit", "300", "--jobs", "2"),
          ("gap.csv",)),
    Study("frontier", "frontier",
          ("--trace", "all", "--seeds", "42", "--points", "100,130", "--jobs", "2"),
          ("--trace", "all", "--seeds", "42-51", "--points", "80,90,100,110,120,130", "--jobs", "2"),
          ("frontier.csv",)),
    Study("defrag", "defrag",
          ("--suite", "small", "--policies", "fgd", "--budgets", "1,2", "--time-limit", "5"),
          ("--trace", "default", "--seeds", "42", "--at", "100", "--budgets", "0,10,50,100,500"),
          ("defrag.csv",)),
    Study("mig", "mig", ("--quick", "--nodes", "16"), ("--nodes", "16,64"), ("mig.csv", "mig_curves.csv")),
    Study("topology", "topology",
          ("--quick", "--trace", "default,multigpu50", "--seeds", "42", "--jobs", "2"),
          ("--trace", "default,multigpu50", "--seeds", "42-44", "--jobs", "2"),
          ("topology.csv", "topology_exact.csv")),
    Study("timeline", "timeline",
          ("--trace", "default", "--load", "0.7,0.9,1.1", "--policies", "fgd,best-fit,random", "--queue",
           "fifo,backfill", "--seeds", "42", "--n-jobs", "10000", "--instants", "2", "--time-limit", "30",
           "--jobs", "2"),
          ("--trace", "default", "--load", "0.7,0.9,1.1", "--policies", "fgd,best-fit,random", "--queue",
           "fifo,backfill", "--seeds", "42-44", "--n-jobs", "20000", "--instants", "3", "--time-limit", "60",
           "--jobs", "2"),
          ("timeline.csv", "optimum.csv", "series.csv")),
    Study("bench-timeline", "bench_timeline", (), (), ("bench_timeline.csv",)),
    Study("preemption", "timeline",
          ("--trace", "default", "--load", "0.9,1.1", "--policies", "fgd", "--queue", "backfill", "--mechanism",
           "none,priority,transparent,affinode,tiresias,migrate", "--seeds", "42", "--n-jobs", "5000",
           "--instants", "0", "--jobs", "2"),
          ("--trace", "default", "--load", "0.9,1.1", "--policies", "fgd", "--queue", "backfill", "--mechanism",
           "none,priority,transparent,affinode,tiresias,migrate", "--seeds", "42-44", "--n-jobs", "20000", "--instants",
           "0", "--jobs", "2"),
          ("timeline.csv", "series.csv")),
    Study("preemption-fifo", "timeline",
          ("--trace", "default", "--load", "0.9,1.1", "--policies", "fgd", "--queue", "fifo", "--mechanism", "none",
           "--seeds", "42", "--n-jobs", "5000", "--instants", "0", "--jobs", "2"),
          ("--trace", "default", "--load", "0.9,1.1", "--policies", "fgd", "--queue", "fifo", "--mechanism", "none",
           "--seeds", "42-44", "--n-jobs", "20000", "--instants", "0", "--jobs", "2"),
          ("timeline.csv", "series.csv")),
    Study("mig-time", "timeline",
          ("--mig", "A100-40GB", "--mig-nodes", "32", "--load", "0.9,1.1", "--policies", MIG_POLICIES, "--queue",
           "fifo,backfill", "--mechanism", "none,mig-repack", "--layout", "dynamic,static", "--seeds", "42,43",
           "--n-jobs", "4000", "--sample", "600", "--instants", "0", "--jobs", "2"),
          ("--mig", "A100-40GB", "--mig-nodes", "32", "--load", "0.9,1.1", "--policies", MIG_POLICIES, "--queue",
           "fifo,backfill", "--mechanism", "none,mig-repack", "--layout", "dynamic,static", "--seeds", "42-44",
           "--n-jobs", "20000", "--sample", "600", "--instants", "0", "--jobs", "2"),
          ("timeline.csv",)),
    Study("interference", "interference",
          ("--seeds", "42-44", "--load", "0.9,1.1", "--n-jobs", "5000", "--jobs", "2"),
          ("--seeds", "42-51", "--load", "0.9,1.1", "--n-jobs", "20000", "--jobs", "2"),
          ("interference.csv",)),
    Study("failures", "failures",
          ("--n-jobs", "2000", "--seeds", "42", "--policies", "fgd,best-fit,health-aware", "--mtbf-scale", "1,20",
           "--jobs", "2"),
          ("--n-jobs", "20000", "--seeds", "42-44", "--policies", "fgd,best-fit,health-aware", "--queue",
           "backfill,fifo", "--mtbf-scale", "1,20", "--jobs", "2"),
          ("failures.csv", "interval.csv")),
    Study("cpu-aware", "cpu_aware",
          ("--load", "0.9,1.1", "--policies", "fgd,best-fit", "--seeds", "42", "--n-jobs", "3000"),
          ("--load", "0.9,1.1", "--policies", "fgd,best-fit", "--seeds", "42-44", "--n-jobs", "20000", "--jobs", "2"),
          ("cpu_aware.csv",)),
    Study("hetero", "hetero",
          ("--rates", GAVEL_RATES, "--seeds", "0", "--policies", "las,las-aware", "--jobs", "2"),
          ("--rates", GAVEL_RATES, "--seeds", "0-2", "--policies", "las,las-aware", "--jobs", "2"),
          ("hetero.csv",)),
    Study("hetero-saturated", "hetero",
          ("--rates", SATURATED_RATES, "--seeds", "0", "--policies", "las,las-aware", "--jobs", "2"),
          ("--rates", SATURATED_RATES, "--seeds", "0-2", "--policies", "las,las-aware", "--jobs", "2"),
          ("hetero.csv",)),
    Study("hetero-seeds", "hetero", SEED_ARGS, SEED_ARGS, ("hetero.csv",)),
    Study("hetero-multi", "hetero", (*MULTI_ARGS, "--spread-throughput", "consolidated"),
          (*MULTI_ARGS, "--spread-throughput", "consolidated"), ("hetero.csv",)),
    Study("hetero-multi-spread", "hetero", (*MULTI_ARGS, "--rates", SPREAD_RATES),
          (*MULTI_ARGS, "--rates", SPREAD_RATES), ("hetero.csv",)),
    Study("bench-hetero", "bench_hetero", ("--sizes", "50,200,1000", "--repeat", "1", "--points", "0.4,3,5.6,6"),
          ("--sizes", "50,200,1000", "--repeat", "3", "--points", "1,3"),
          ("bench_hetero.csv", "bench_hetero_points.csv")),
    Study("hetero-policies", "hetero",
          ("--rates", "1,2,3", "--seeds", "0", "--batch", "500", "--policies",
           "fifo,gandiva,ftf,ftf-aware,makespan-aware", "--jobs", "2"),
          ("--rates", GAVEL_RATES, "--seeds", "0-2", "--batch", "500", "--policies",
           "fifo,gandiva,ftf,ftf-aware,makespan-aware", "--jobs", "2"),
          ("hetero.csv",)),
    Study("fairness", "fairness", ("--seeds", "0-9", "--jobs", "2"), ("--seeds", "0-29", "--jobs", "2"),
          ("fairness.csv", "fairness_series.csv", "fairness_users.csv")),
    Study("fairness-multi", "fairness", (*FAIR_MULTI_ARGS, "--seeds", "0-9", "--jobs", "2"),
          (*FAIR_MULTI_ARGS, "--seeds", "0-29", "--jobs", "2"),
          ("fairness.csv", "fairness_series.csv", "fairness_users.csv")),
    Study("schedule", "schedule", ("--instances", "small-time", "--time-limit", "60", "--jobs", "2"),
          ("--instances", "small-time", "--time-limit", "60", "--jobs", "2"), ("schedule.csv", "starts.csv")),
    Study("schedule-bound", "schedule",
          ("--trace", "default", "--load", "1.1,1.2", "--n-jobs", "20000", "--seeds", "42", "--policies",
           "fgd,best-fit,drain-fit", "--queue", "fifo,backfill,sjf,smallest,area,area-aged", "--time-limit", "600",
           "--jobs", "2"),
          ("--trace", "default", "--load", "1.0,1.1,1.2", "--n-jobs", "20000", "--seeds", "42-44", "--policies",
           "fgd,best-fit,drain-fit", "--queue", "fifo,backfill,sjf,smallest,area,area-aged", "--time-limit", "600",
           "--jobs", "2"),
          ("schedule-bound.csv", "interval.csv", "diagnostics.csv", "profile.csv")),
    Study("schedule-bound-seeds", "schedule", ("--trace", "default", "--points", SEED_POINTS, *SEED_GRID),
          ("--trace", "default", "--points", SEED_POINTS, *SEED_GRID),
          ("schedule-bound.csv", "interval.csv", "diagnostics.csv", "profile.csv")),
    Study("schedule-medium", "schedule", MEDIUM_ARGS, MEDIUM_ARGS,
          ("schedule-bound.csv", "interval.csv", "diagnostics.csv")),
)
"""The studies of the paper, in the order they run."""


def _inputs(study: Study, profile: str) -> dict:
    return {"module": f"experiments.{study.module}", "args": list(getattr(study, profile)), "profile": profile,
            "trace_sha256": dict(sorted(SHA256.items()))}


def cached(study: Study, profile: str, results: Path = RESULTS_DIR) -> bool:
    """Whether ``results/<study>/`` holds every kept file of a run with this profile's inputs."""
    out = results / study.name
    try:
        previous = json.loads((out / "inputs.json").read_text())
    except (OSError, ValueError):
        return False
    return previous == _inputs(study, profile) and all((out / name).is_file() for name in study.keep)


def run_study(study: Study, profile: str, results: Path = RESULTS_DIR) -> dict:
    """Run ``study`` in its own process and cache its kept files; returns its costs (wall and CPU seconds).

    Raises
    ------
    RuntimeError
        If the study exits non-zero (its last lines of output are in the message); the cache is untouched.
    """
    out = results / study.name
    scratch = results / f".{study.name}.running"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    command = [sys.executable, "-m", f"experiments.{study.module}", *getattr(study, profile), "--output", str(scratch)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(scratch / "log.txt", "w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    costs = {"wall_s": round(time.perf_counter() - start, 1),
             "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)}
    if code != 0:
        tail = "".join((scratch / "log.txt").read_text().splitlines(keepends=True)[-5:])
        raise RuntimeError(f"study {study.name} failed ({' '.join(command[2:])}), exit {code}:\n{tail}")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in study.keep:
        shutil.move(scratch / name, out / name)
    shutil.rmtree(scratch)
    (out / "inputs.json").write_text(json.dumps(_inputs(study, profile), indent=1) + "\n")
    (out / "run.json").write_text(json.dumps(costs) + "\n")
    return costs


def _names(text: str) -> set[str]:
    known = [s.name for s in STUDIES]
    return set(known) if text.strip() == "all" else set(names(known, "study")(text))


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.paper", __doc__)
    parser.add_argument("--quick", action="store_true", help="small settings (the committed paper's profile)")
    parser.add_argument("--only", type=_names, default=None, help="comma-separated studies to run (default: all)")
    parser.add_argument("--rerun", type=_names, default=set(), help="studies to rerun even if cached, or 'all'")
    parser.add_argument("--results", type=output_dir, default=RESULTS_DIR, help="cache folder (default: paper/results)")
    parser.add_argument("--report-only", action="store_true", help="only rewrite tables, figures and paper.md")
    args = parser.parse_args(argv)
    profile = "quick" if args.quick else "full"
    start = time.perf_counter()
    if not args.report_only:
        for study in STUDIES:
            if args.only is not None and study.name not in args.only:
                continue
            if study.name not in args.rerun and cached(study, profile, args.results):
                print(f"{study.name}: cached", file=sys.stderr)
                continue
            print(f"{study.name}: running experiments.{study.module} ...", file=sys.stderr, flush=True)
            try:
                costs = run_study(study, profile, args.results)
            except RuntimeError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            print(f"{study.name}: {costs['wall_s']} s wall, {costs['cpu_s']} s CPU", file=sys.stderr)
    written = write_report(args.results)
    print(f"wrote {len(written)} tables and figures and paper/paper.md in {time.perf_counter() - start:.0f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
