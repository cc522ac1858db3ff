"""Jobs with work: a job type, a scale factor (GPUs) and total steps, and Gavel's generator of them.

A job of :class:`HeteroJobs` does not have a duration: it has ``total_steps`` and finishes when they are done
at the throughput (steps/s, :mod:`fgdopt.hetero.throughputs`) of where it runs — alone on ``scale_factor``
GPUs of one type, or beside another job on the same GPUs. ``duration_s`` is only the run time the generator
drew (alone on V100s), kept for reference.

:func:`gavel_jobs` reproduces the synthetic trace of Gavel's simulator (``stanford-futuredata/gavel`` at commit
``c4fa4009``) draw for draw, for the same seed and rate. What it follows, exactly:

- ``scheduler/scheduler.py``, ``Scheduler._initialize_seeds``: jobs are drawn from ``random.Random(seed + 2)``,
  inter-arrival times from ``random.Random(seed + 3)`` (Python's Mersenne Twister, so the streams are Gavel's).
- ``Scheduler.simulate`` (continuous trace, ``lam`` given): the first job arrives at 0 s, each next one an
  exponential gap later, ``_sample_arrival_time_delta(1 / lam)`` = ``-log(1 - u) / (1 / lam)``, where Gavel's
  ``lam`` is the mean gap in seconds and its sweep (``scripts/sweeps/run_sweep_continuous.py``) sets
  ``lam = 3600 / (jobs per hour)``; a rate of ``inf`` here is Gavel's ``lam = 0``, every job at 0 s
  (a static batch, no gap drawn).
- ``scheduler/utils.py``, ``generate_job`` with its defaults as ``simulate`` calls it (one ``rng`` for
  everything, ``always_generate_scale_factor=True``, reference worker type ``v100``), per job in this order:
  (1) the scale factor, ``_generate_scale_factor`` (Philly): ``r = uniform(0, 1)``; 2 GPUs if
  ``0.7 <= r <= 0.8``, else 4 if ``0.8 <= r <= 0.95``, else 8 if ``r >= 0.95``, else 1 — drawn for every job,
  and set back to 1 unless ``multi_gpu`` (Gavel's ``--generate-multi-gpu-jobs``; its Figure 8 trace is
  single-GPU); (2) the duration, ``_generate_duration`` (Philly): if ``random() >= 0.8``,
  ``60 * 10 ** uniform(3, 4)`` s, else ``60 * 10 ** uniform(1.5, 3)`` s; (3) the job type, ``choice(JobTable)``
  over the 26 types of :data:`~fgdopt.hetero.throughputs.JOB_TYPES` (``scheduler/job_table.py`` order), redrawn
  until the type is distributed when the scale factor exceeds 1; (4) ``total_steps = duration * `` the type's
  isolated V100 throughput at its scale factor; (5) with ``multi_priority``, ``r = uniform(0, 1)`` and weight 5
  if ``r <= 0.2``, else 1. SLOs (``SLO_rng``) and the ``simulate_steady_state`` warm start are not reproduced.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

import numpy as np
import pandas as pd

from fgdopt.hetero.throughputs import DISTRIBUTED, GPU_TYPES, JOB_TYPES, SCALE_FACTORS, ThroughputTable
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.timeline.jobs import JobSet

REFERENCE_GPU = "v100"
"""The GPU type on which a generated job's duration is converted into steps (Gavel's ``reference_worker_type``)."""


def _array(values, dtype, what: str, n: int | None = None) -> np.ndarray:
    arr = np.array(values, dtype=dtype)
    if arr.ndim != 1 or (n is not None and len(arr) != n):
        raise ValueError(f"job field {what!r} must be one-dimensional of length {n}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class HeteroJobs:
    """Jobs in input order, each with a type, a scale factor, its work in steps and a submission time.

    Attributes
    ----------
    job_type : int64 (n,), index into :data:`~fgdopt.hetero.throughputs.JOB_TYPES`.
    scale_factor : int64 (n,), GPUs the job runs on at once (all of one type), in
        :data:`~fgdopt.hetero.throughputs.SCALE_FACTORS`.
    total_steps : float64 (n,), work in steps (> 0).
    submit_s : float64 (n,), submission time in seconds (finite, >= 0).
    priority_weight : float64 (n,), Gavel's priority weight (> 0; default 1).
    duration_s : float64 (n,), the run time alone on V100s the steps were derived from, in seconds (NaN if
        unknown; information only).

    Examples
    --------
    >>> jobs = HeteroJobs([JOB_TYPES.index("A3C")], [1], [1000.0], [0.0])
    >>> len(jobs), jobs.type_names
    (1, ('A3C',))
    """

    job_type: np.ndarray
    scale_factor: np.ndarray
    total_steps: np.ndarray
    submit_s: np.ndarray
    priority_weight: np.ndarray | None = None
    duration_s: np.ndarray | None = None

    def __post_init__(self) -> None:
        job_type = _array(self.job_type, np.int64, "job_type")
        n = len(job_type)
        fields = {
            "job_type": job_type,
            "scale_factor": _array(self.scale_factor, np.int64, "scale_factor", n),
            "total_steps": _array(self.total_steps, np.float64, "total_steps", n),
            "submit_s": _array(self.submit_s, np.float64, "submit_s", n),
            "priority_weight": _array(np.ones(n) if self.priority_weight is None else self.priority_weight,
                                      np.float64, "priority_weight", n),
            "duration_s": _array(np.full(n, np.nan) if self.duration_s is None else self.duration_s, np.float64,
                                 "duration_s", n),
        }
        steps, submit = fields["total_steps"], fields["submit_s"]
        checks = (("job_type", (job_type < 0) | (job_type >= len(JOB_TYPES)), f"in 0..{len(JOB_TYPES) - 1}"),
                  ("scale_factor", ~np.isin(fields["scale_factor"], SCALE_FACTORS), f"in {SCALE_FACTORS}"),
                  ("total_steps", ~(steps > 0) | ~np.isfinite(steps), "a finite number > 0"),
                  ("submit_s", ~(submit >= 0) | ~np.isfinite(submit), "a finite number >= 0"),
                  ("priority_weight", ~(fields["priority_weight"] > 0), "a number > 0"))
        for name, bad, want in checks:
            if (rows := np.flatnonzero(bad)).size:
                raise ValueError(f"job row {int(rows[0])}: field {name!r} must be {want}, got {fields[name][rows[0]]}")
        for name, arr in fields.items():
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return len(self.job_type)

    @property
    def type_names(self) -> tuple[str, ...]:
        """Each job's type name."""
        return tuple(JOB_TYPES[a] for a in self.job_type.tolist())

    def throughputs(self, table: ThroughputTable, gpu_types=GPU_TYPES) -> np.ndarray:
        """Each job's isolated throughput (steps/s, at its scale factor) per GPU type: float64 (n, len(gpu_types))."""
        return table.matrix(self.job_type, self.scale_factor, gpu_types)

    def take(self, rows) -> HeteroJobs:
        """The jobs at ``rows`` (in that order)."""
        rows = np.asarray(rows, dtype=np.int64)
        return HeteroJobs(self.job_type[rows], self.scale_factor[rows], self.total_steps[rows], self.submit_s[rows],
                          self.priority_weight[rows], self.duration_s[rows])

    def to_jobset(self, table: ThroughputTable, gpu_types=GPU_TYPES, *, measured=None,
                  window_s: tuple[float, float] | None = None,
                  gpu_milli: int = GPU_MILLI) -> tuple[JobSet, dict[str, np.ndarray]]:
        """The jobs for the time engine (:func:`fgdopt.timeline.simulate`) and their speeds by GPU type.

        Job ``i`` becomes a task of ``scale_factor[i]`` whole GPUs (no CPU or memory demand, named after its type)
        whose ``duration_s`` is its work in seconds on :data:`REFERENCE_GPU` (``total_steps`` over the V100
        throughput) and whose ``gpu_spec`` names the types where it runs (empty: all of them), and ``speed[g][i]``
        = throughput on ``g`` / V100 throughput (0 where it does not run). So a run on type ``g`` takes
        ``total_steps / throughput`` seconds, as in Gavel.

        Parameters
        ----------
        table : the throughputs. gpu_types : the cluster's GPU types (its nodes' ``model``).
        measured : bool (n,) jobs whose JCT is measured (default all). window_s : the run's measurement window.
        gpu_milli : each job's demand per GPU (default a whole GPU; 500 packs two jobs to a GPU, with
            :meth:`interference` for their slowdowns).

        Returns
        -------
        (JobSet, ``{gpu type: float64 (n,)}``): pass the second as ``simulate(..., speed=...)``.

        Raises
        ------
        ValueError : a job without a V100 throughput, or one that runs on none of ``gpu_types``.
        """
        thr = np.nan_to_num(self.throughputs(table, gpu_types), nan=0.0)
        ref = self.throughputs(table, [REFERENCE_GPU])[:, 0]
        if (bad := np.flatnonzero(~(ref > 0))).size:
            raise ValueError(f"job {int(bad[0])} has no {REFERENCE_GPU} throughput")
        n = len(self)
        runs = thr > 0                                       # a job may only be placed where it runs
        if (nowhere := np.flatnonzero(~runs.any(axis=1))).size:
            j = int(nowhere[0])
            raise ValueError(f"job {j} ({self.type_names[j]!r} on {self.scale_factor[j]} GPUs) runs on none of the "
                             f"GPU types {', '.join(gpu_types)}")
        spec = ["" if row.all() else "|".join(g for g, ok in zip(gpu_types, row, strict=True) if ok) for row in runs]
        tasks = TaskSet(np.zeros(n, np.int64), np.zeros(n, np.int64), self.scale_factor, np.full(n, gpu_milli), spec,
                        names=tuple(f"{name}#{i}" for i, name in enumerate(self.type_names)))
        jobs = JobSet(tasks, self.submit_s, self.total_steps / ref, measured=measured, window_s=window_s)
        return jobs, {g: thr[:, k] / ref for k, g in enumerate(gpu_types)}

    def spread_speed(self, table: ThroughputTable, gpu_types=GPU_TYPES) -> dict[str, np.ndarray]:
        """Each job's speed per GPU type when its GPUs span servers (Gavel's unconsolidated throughputs, over its
        V100 throughput as in :meth:`to_jobset`): ``{gpu type: float64 (n,)}``, for
        :class:`~fgdopt.hetero.rounds.Gavel` ``spread_speed`` (:func:`fgdopt.hetero.gang.spread_speeds`)."""
        from fgdopt.hetero.gang import spread_speeds

        ref = self.throughputs(table, [REFERENCE_GPU])[:, 0]
        return spread_speeds(table, self.job_type, self.scale_factor, gpu_types, ref)

    def interference(self, table: ThroughputTable, gpu_types=GPU_TYPES):
        """Gavel's co-location throughputs as an :class:`~fgdopt.interference.Interference` (classes: the
        job types) for jobs packed two to a GPU: ``factor[g][a, b]`` = the throughput of ``a`` beside ``b`` on ``g``
        over its throughput alone (scale factor 1, Gavel's pairs), but at least 1/2: a pair that runs worse packed
        (or not at all, out of memory) is time-sliced instead, each getting half the GPU (Gandiva's choice between
        packing and time-slicing)."""
        from fgdopt.hetero.interference import colocation_factors
        from fgdopt.interference import Interference

        return Interference(self.job_type, colocation_factors(table, gpu_types))

    def to_frame(self) -> pd.DataFrame:
        """The jobs as a DataFrame: ``job_type`` (name), ``scale_factor``, ``total_steps``, ``submit_s``,
        ``priority_weight``, ``duration_s``."""
        return pd.DataFrame({"job_type": self.type_names, "scale_factor": self.scale_factor,
                             "total_steps": self.total_steps, "submit_s": self.submit_s,
                             "priority_weight": self.priority_weight, "duration_s": self.duration_s})

    def __repr__(self) -> str:
        return f"HeteroJobs({len(self)} jobs, submit 0..{self.submit_s.max(initial=0):.0f} s)"


def gavel_cluster(gpus: dict[str, int], gpus_per_node: int = 4) -> Cluster:
    """A heterogeneous cluster: per GPU type (node ``model``), its GPUs in nodes of ``gpus_per_node`` (the last
    node of a type holds the rest), with CPU and memory that never bind.

    Examples
    --------
    >>> c = gavel_cluster({"v100": 6, "k80": 4})
    >>> c.gpu.tolist(), c.model.tolist()
    ([4, 2, 4], ['v100', 'v100', 'k80'])
    """
    if not 1 <= gpus_per_node <= 8:
        raise ValueError(f"gpus_per_node must be in 1..8, got {gpus_per_node}")
    sizes, models = [], []
    for g, count in gpus.items():
        if count < 0:
            raise ValueError(f"GPU type {g!r}: {count} GPUs")
        full, rest = divmod(int(count), gpus_per_node)
        sizes += [gpus_per_node] * full + ([rest] if rest else [])
        models += [g] * (full + bool(rest))
    if not sizes:
        raise ValueError(f"a cluster needs GPUs, got {dict(gpus)}")
    big = np.full(len(sizes), 10**9, dtype=np.int64)
    return Cluster(big, big, sizes, models, names=tuple(f"{m}-{i}" for i, m in enumerate(models)))


def _scale_factor(rng: random.Random) -> int:
    """Gavel's ``utils._generate_scale_factor`` (the Philly distribution of GPUs per job)."""
    r = rng.uniform(0, 1)
    if 0.7 <= r <= 0.8:
        return 2
    if 0.8 <= r <= 0.95:
        return 4
    return 8 if r >= 0.95 else 1


def _duration_s(rng: random.Random) -> float:
    """Gavel's ``utils._generate_duration`` (Philly): seconds, log-uniform over two ranges of minutes."""
    if rng.random() >= 0.8:
        return 60 * (10 ** rng.uniform(3, 4))
    return 60 * (10 ** rng.uniform(1.5, 3))


def iter_gavel_jobs(table: ThroughputTable, rate_per_hour: float, seed: int = 0, *, multi_gpu: bool = False,
                    multi_priority: bool = False) -> Iterator[tuple[int, int, float, float, float, float]]:
    """Gavel's synthetic continuous trace, one job at a time and without end, as its simulator draws it while it runs.

    Yields ``(job_type, scale_factor, total_steps, submit_s, priority_weight, duration_s)`` per job, in submission
    order; the first ``n`` are exactly the jobs of :func:`gavel_jobs` with ``n_jobs=n`` (same draws, same order,
    whatever ``n``: the job stream and the gap stream are separate generators, and the gap after a job is drawn only
    when the next job is asked for). Parameters as :func:`gavel_jobs`; a rate of ``math.inf`` submits every job at
    0 s.

    Examples
    --------
    >>> from itertools import islice
    >>> first = list(islice(iter_gavel_jobs(load_throughputs(), 3.0, seed=0), 10))  # doctest: +SKIP
    """
    if not rate_per_hour > 0:
        raise ValueError(f"rate_per_hour must be > 0 (math.inf for a static batch), got {rate_per_hour}")
    job_rng, gap_rng = random.Random(seed + 2), random.Random(seed + 3)
    mean_gap_s = 3600.0 / rate_per_hour                     # Gavel's ``lam``
    distributed = [a for a, d in enumerate(DISTRIBUTED) if d]
    v100 = table.gpu_index([REFERENCE_GPU])[0]
    submit = 0.0
    while True:
        scale = _scale_factor(job_rng)
        duration = _duration_s(job_rng)
        if not multi_gpu:
            scale = 1
        while True:
            a = job_rng.choice(range(len(JOB_TYPES)))
            if scale == 1 or a in distributed:
                break
        steps = duration * float(table.isolated[a, SCALE_FACTORS.index(scale), v100])
        weight = 5.0 if multi_priority and job_rng.uniform(0, 1) <= 0.2 else 1.0
        yield a, scale, steps, submit, weight, duration
        if mean_gap_s > 0:
            submit += -math.log(1.0 - gap_rng.random()) / (1.0 / mean_gap_s)


def take_jobs(stream: Iterator[tuple], n_jobs: int) -> HeteroJobs:
    """The next ``n_jobs`` jobs of a stream of :func:`iter_gavel_jobs` as :class:`HeteroJobs`."""
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    rows = list(islice(stream, n_jobs))
    cols = list(zip(*rows, strict=True)) if rows else [[]] * 6
    return HeteroJobs(*cols)


def gavel_kinds(multi_gpu: bool) -> list[tuple[int, int, int]]:
    """The kinds of job :func:`iter_gavel_jobs` may draw, as ``(job type, scale factor index, scale factor)``: each
    job type at 1 GPU, and with ``multi_gpu`` each distributed type at 2, 4 and 8 GPUs."""
    return [(a, s, scale) for s, scale in enumerate(SCALE_FACTORS if multi_gpu else (1,))
            for a in range(len(JOB_TYPES)) if scale == 1 or DISTRIBUTED[a]]


def check_table(table: ThroughputTable, *, multi_gpu: bool) -> None:
    """Check that every kind of job :func:`iter_gavel_jobs` may draw (:func:`gavel_kinds`) has a positive
    :data:`REFERENCE_GPU` throughput in ``table``: a drawn duration becomes steps at it.

    Raises
    ------
    ValueError : one line naming the table's file and the first job type and scale factor without it.
    """
    ref = table.gpu_index([REFERENCE_GPU])[0]
    for a, s, scale in gavel_kinds(multi_gpu):
        if not table.isolated[a, s, ref] > 0:
            raise ValueError(f"{table.source}: {JOB_TYPES[a]!r} on {scale} GPU{'s' * (scale > 1)} has no positive "
                             f"{REFERENCE_GPU} throughput, which Gavel's trace needs (a drawn duration becomes steps "
                             "at it)")


def check_cluster(table: ThroughputTable, gpus: dict[str, int], *, multi_gpu: bool, whole: bool = True) -> None:
    """Check that every kind of job :func:`iter_gavel_jobs` may draw (:func:`gavel_kinds`) runs on the cluster
    ``gpus`` (GPU type -> count): it has a positive throughput on a type with GPUs — with ``whole``, with at least as
    many GPUs as it asks for (a job's GPUs are of one type).

    Raises
    ------
    ValueError : one line naming the first job type and scale factor that runs nowhere on ``gpus``, and where it runs.

    Examples
    --------
    >>> check_cluster(load_throughputs(), {"k80": 16}, multi_gpu=True)   # doctest: +SKIP
    Traceback (most recent call last):
    ValueError: Gavel's trace has jobs of 'ResNet-50 (batch size 128)' on 2 GPUs, which run on v100, p100 only, and
    the cluster (16 k80) has no such type with 2 GPUs or more
    """
    types = tuple(gpus)
    thr = table.isolated[:, :, table.gpu_index(types)]
    counts = np.array([gpus[g] for g in types])
    for a, s, scale in gavel_kinds(multi_gpu):
        if not ((thr[a, s] > 0) & (counts >= (scale if whole else 1))).any():
            name = JOB_TYPES[a]
            where = [g for g in GPU_TYPES if table.throughput(name, scale, g) > 0]
            have = ", ".join(f"{gpus[g]} {g}" for g in types)
            raise ValueError(f"Gavel's trace has jobs of {name!r} on {scale} GPU{'s' * (scale > 1)}, which run "
                             f"on {', '.join(where) or 'no GPU type'} only, and the cluster ({have}) has no such "
                             f"type{f' with {scale} GPUs or more' if whole and scale > 1 else ''}")


def gavel_jobs(table: ThroughputTable, n_jobs: int, rate_per_hour: float, seed: int = 0, *,
               multi_gpu: bool = False, multi_priority: bool = False) -> HeteroJobs:
    """Gavel's synthetic continuous trace: ``n_jobs`` jobs with Poisson arrivals at ``rate_per_hour`` jobs/hour.

    The module docstring lists what is followed from Gavel's code; with the same ``seed`` and rate the jobs and
    arrival times are the ones Gavel's simulator generates (``simulate_scheduler_with_generated_jobs.py -l
    3600/rate --seed seed [-m]``). The first ``n_jobs`` of :func:`iter_gavel_jobs`.

    Parameters
    ----------
    table : the throughputs; a job's steps are its drawn duration (seconds) times its V100 throughput (steps/s).
    n_jobs : number of jobs.
    rate_per_hour : arrival rate in jobs per hour (> 0); ``math.inf`` submits every job at 0 s (static batch).
    seed : Gavel's seed (jobs from ``random.Random(seed + 2)``, gaps from ``random.Random(seed + 3)``).
    multi_gpu : keep the drawn scale factors (1, 2, 4, 8 GPUs); else every job has 1 GPU (Gavel's default).
    multi_priority : 20% of the jobs get priority weight 5 (Gavel's ``--generate-multi-priority-jobs``).

    Examples
    --------
    >>> jobs = gavel_jobs(load_throughputs(), 1000, rate_per_hour=3.0, seed=0)  # doctest: +SKIP
    """
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    return take_jobs(iter_gavel_jobs(table, rate_per_hour, seed, multi_gpu=multi_gpu,
                                     multi_priority=multi_priority), n_jobs)
