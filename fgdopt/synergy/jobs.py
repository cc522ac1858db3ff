"""Synergy's workload generator, draw for draw: job lengths, Poisson arrivals, the model of each job.

Followed from ``msr-fiddle/synergy`` at commit 1bb2bed6 (``simulator/``), default mode (``runner.py``:
``exponential=True``, ``sum_attempts=True``, seed 42, ``random.seed(seed)`` before every run):

- Lengths (``helpers/parse_philly_trace_full.py`` + ``helpers/utils.get_gavel_like_iter``): each trace job that
  passes the parser's filter gets ``60 * 10 ** uniform(3, 4)`` if ``random() >= 0.8`` else
  ``60 * 10 ** uniform(1.5, 3)`` "iterations" of 1 s, drawn in trace order from ``random.seed(seed)`` when the job
  pickle is built (the trace contributes only how many jobs pass; the pickle is then loaded by the measured run,
  which re-seeds). Job ``k`` takes pickle entry ``k % n_trace``.
- Arrivals (``Workload.generate_next_job``, ``utils.poisson_next_arrival_time``): the measured run draws, per job,
  the gap ``ceil(-log(1 - random()) / jobs_per_hour * 3600)`` s after the previous arrival (the first after 0),
  then the class (next item).
- Model (``jobs/model_zoo.ModelZoo.get_job_class``, ``ModelAssignment.OVERALL``): one ``randint(0, 9)`` is drawn
  and discarded; the task (image, language, speech) whose share so far is furthest below its split percentage
  (``percent/100 - task_jobs/all_jobs``, ties in that order) is chosen, and within it models go round-robin:
  image alexnet, res18, res50, mobilenet, shufflenet; language gnmt, transformer, lstm; speech m5, deepspeech.
- Work (``Workload.add_synergy_profile``): ``total_iterations = int(length / iter_time)`` with the model's
  ``iter_time`` (s per iteration at the GPU-proportional share); demands ``gpus * cpus``, ``gpus * mem`` of the
  model's 1-GPU profile, capped at one server (then the speed-up is scaled down linearly, as Synergy does).
- ``multi_gpu=True`` is Synergy's trace-less synthetic mode (``cluster_job_log=None``), the only one of its modes
  that draws multi-GPU demands without the Philly trace: per job the gap, the length, the GPU count
  (``utils.get_job_gpu_demand``: ``u = uniform(0, 1)``; 8 if ``u >= 0.95``, 4 if ``u >= 0.8``, 2 if ``u >= 0.7``,
  else 1), then the class, all from the one seeded stream.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pandas as pd

from fgdopt.synergy.profiles import ProfileTable, load_profiles

TASKS = ("image", "language", "speech")
"""Synergy's task classes, in the order of its ``ModelZoo.create_default_tasks``."""

TASK_MODELS = (("alexnet", "res18", "res50", "mobilenet", "shufflenet"), ("gnmt", "transformer", "lstm"),
               ("m5", "deepspeech"))
"""Models of each task, in ``ModelZoo.create_default_models`` order (class ids 0..9 in this order)."""

SERVER = (8, 24, 500.0, 500.0)
"""One server of Synergy's default cluster (``configs/default_cluster.ini``): GPUs, CPU cores, DRAM GB, storage MB/s."""

DEFAULT_TRACE_JOBS = 30_000
"""Jobs of the stand-in trace that reproduces Synergy's published default output (see ``/work/shared/ANCHORS.md``);
any count above the last job id used gives the same jobs."""


def gavel_like_length(rng: random.Random) -> float:
    """One draw of Synergy's ``get_gavel_like_iter``: a job length in seconds (two draws of ``rng``)."""
    if rng.random() >= 0.8:
        return 60 * (10 ** rng.uniform(3, 4))
    return 60 * (10 ** rng.uniform(1.5, 3))


def poisson_gap_s(rng: random.Random, jobs_per_hour: float) -> int:
    """Synergy's ``poisson_next_arrival_time``: the next inter-arrival gap in whole seconds (one draw)."""
    return math.ceil(-math.log(1.0 - rng.random()) / jobs_per_hour * 60 * 60)


def gpu_demand(rng: random.Random) -> int:
    """Synergy's ``get_job_gpu_demand`` (one draw): 1, 2, 4 or 8 GPUs with probability 0.7, 0.1, 0.15, 0.05."""
    u = rng.uniform(0, 1)
    return 8 if u >= 0.95 else 4 if u >= 0.8 else 2 if u >= 0.7 else 1


class _ModelZoo:
    """Synergy's ``ModelZoo`` with ``ModelAssignment.OVERALL``: the class of the next job from the split so far."""

    def __init__(self, split: tuple[float, float, float]):
        self.percent = tuple(split)
        self.task_jobs = [0, 0, 0]
        self.priority = [0.0, 0.0, 0.0]
        self.next_model = [0, 0, 0]

    def next(self, rng: random.Random) -> tuple[int, str]:
        rng.randint(0, sum(len(m) for m in TASK_MODELS) - 1)    # drawn and discarded, as Synergy does
        task = sorted(range(3), key=lambda t: self.priority[t], reverse=True)[0]
        models = TASK_MODELS[task]
        model = models[self.next_model[task] % len(models)]
        self.next_model[task] += 1
        # the job arrives (``add_runnable_job``) before the next one is generated: the split is updated now
        self.task_jobs[task] += 1
        total = sum(self.task_jobs)
        self.priority = [p / 100 - n / total for p, n in zip(self.percent, self.task_jobs, strict=True)]
        return task, model


@dataclass(frozen=True, eq=False)
class SynergyJobs:
    """Jobs of a Synergy workload, in id order.

    Attributes
    ----------
    frame : one row per job: ``name`` (job id), ``submit_s`` (arrival, s), ``model``, ``task``, ``gpus``,
        ``iterations`` (total iterations), ``iter_time_s`` (s per iteration at the GPU-proportional share),
        ``duration_s`` (= iterations * iter_time_s, the run time at the proportional share), ``cpus``,
        ``mem_gb`` and ``sspeed`` (the job's ideal demand in CPU cores, GB and storage MB/s, all its GPUs
        together), ``speedup`` (its speed at
        the ideal demand over the proportional share), ``length_s`` (the drawn length before rounding to
        iterations).
    """

    frame: pd.DataFrame

    def __len__(self) -> int:
        return len(self.frame)


def synergy_jobs(n_jobs: int, jobs_per_hour: float, split: tuple[float, float, float] = (20, 70, 10), *,
                 seed: int = 42, multi_gpu: bool = False, trace_jobs: int = DEFAULT_TRACE_JOBS,
                 table: ProfileTable | None = None, server: tuple = SERVER) -> SynergyJobs:
    """The first ``n_jobs`` jobs (ids 0..n_jobs-1) Synergy's simulator generates for this load, split and seed.

    Parameters
    ----------
    n_jobs : jobs to generate (Synergy generates until its measured window, ids 4000-4999 by default, is done).
    jobs_per_hour : Poisson arrival rate (> 0).
    split : percent of image, language, speech jobs (Synergy's ``model_class_split``).
    seed : Synergy's ``--seed`` (42).
    multi_gpu : Synergy's trace-less synthetic mode (multi-GPU demands); else the default trace mode.
    trace_jobs : jobs passing the trace filter (the pickle's length), trace mode only.
    table : profiles (default :func:`~fgdopt.synergy.profiles.load_profiles`).
    server : one server's (GPUs, CPU cores, DRAM GB, storage MB/s), to cap a job's demand as Synergy does.
    """
    if not jobs_per_hour > 0:
        raise ValueError(f"jobs_per_hour={jobs_per_hour}; expected > 0")
    if len(split) != 3 or any(s < 0 for s in split) or sum(split) <= 0:
        raise ValueError(f"split={split}; expected three non-negative percentages")
    table = table or load_profiles()
    lengths: list[float] = []
    if not multi_gpu:
        pickle_rng = random.Random(seed)
        lengths = [gavel_like_length(pickle_rng) for _ in range(min(n_jobs, trace_jobs))]
    rng = random.Random(seed)
    zoo = _ModelZoo(split)
    rows, arrival = [], 0
    for k in range(n_jobs):
        arrival += poisson_gap_s(rng, jobs_per_hour)
        if multi_gpu:
            length, gpus = gavel_like_length(rng), gpu_demand(rng)
        else:
            length, gpus = lengths[k % trace_jobs], 1
        task, model = zoo.next(rng)
        rows.append(_with_profile(k, arrival, length, gpus, task, model, table, server))
    return SynergyJobs(pd.DataFrame(rows))


def _with_profile(k: int, arrival: int, length: float, gpus: int, task: int, model: str, table: ProfileTable,
                  server: tuple) -> dict:
    """Synergy's ``add_synergy_profile``: demand capped at one server, speed-up scaled down when capped."""
    profile = table[model]
    per_gpus, per_cpus, per_mem, per_sspeed = server
    speedup = profile.speedup
    demand = [gpus * profile.cpus, gpus * profile.mem_gb, gpus * profile.storage_mbps]
    update = False
    for i, cap in enumerate((per_cpus, per_mem, per_sspeed)):
        if demand[i] > cap:
            demand[i], update = cap, True
            if gpus > per_gpus:
                demand[i], speedup, update = gpus * (cap / per_gpus), 1.0, False
    cpus, mem, sspeed = demand
    if update:
        ideal, fair = gpus * profile.cpus, gpus * (per_cpus / per_gpus)
        if ideal == fair:
            raise ValueError(f"job {k} ({model}): capped demand with ideal CPU = fair CPU")
        speedup = 1 + (speedup - 1) / (ideal - fair) * (cpus - fair)
    iterations = int(length / profile.iter_time_s)
    return {"name": k, "submit_s": float(arrival), "model": model, "task": TASKS[task], "gpus": gpus,
            "iterations": iterations, "iter_time_s": profile.iter_time_s,
            "duration_s": iterations * profile.iter_time_s, "cpus": float(cpus), "mem_gb": float(mem),
            "sspeed": float(sspeed),
            "speedup": float(speedup), "length_s": length}
