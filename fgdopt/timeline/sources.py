"""Jobs from the openb trace at a chosen offered load (docs/semantics.md "Time").

The trace's own clock cannot load the cluster: with every pod alive from ``creation_time`` to ``deletion_time``
the concurrent GPU demand of openb default never exceeds 65.6 of 6212 GPUs. Its shapes and lifetimes can. What
:func:`openb_jobs` does, exactly:

Lifetimes (:func:`trace_lifetimes`). A pod that ran lives ``deletion_time - scheduled_time`` seconds. A pod that
never ran (``pod_phase`` Pending, no ``scheduled_time``: 897 of 8152 in default) keeps its shape, and its lifetime
is drawn (seeded) from the lifetimes of the pods of its ``qos`` class that ran (of all pods that ran, if its class
has none): dropping them would drop the hardest shapes of the trace. A lifetime of 0 stays 0 (the engine runs it
for no time; openb has none, its shortest is 4 s).

Services and stream. The lifetimes are heavy-tailed: 86 pods of default live longer than a day and hold 90.9% of
all GPU-time (the longest 145 days); the median BE pod lives 4 minutes, LS 15. Pods longer than ``service_s``
(default one day) are *services*: a background of exactly those pods, submitted at time 0 with their own lifetimes
(they outlive any window simulated here: 106.4 GPUs in default). The other pods are the *stream*: each job of the
run is one of their (shape, lifetime) rows, drawn uniformly with replacement.

Offered load. rho = (B + lambda E[a d]) / C, where C is the cluster's GPU capacity, B the services' GPU demand,
a the GPU demand and d the lifetime of a stream row (E over the stream rows), lambda the arrival rate: the stream
rate is ``lambda = (rho C - B) / E[a d]``, and ``n_jobs`` arrivals span ``H = n_jobs / lambda`` seconds. With
``arrivals="poisson"`` the gaps are exponential with mean ``1 / lambda``; with ``arrivals="trace"`` the stream
pods arrive in ``creation_time`` order with the trace's own gaps, repeated as often as needed (each repetition
starts one mean gap after the previous one ends), and scaled so that ``n_jobs`` arrivals span ``H``.

Warm start. Jobs of a day's lifetime cannot reach their steady share within a window of hours, so a run that
started empty would sit far below its load (a peer simulator run here on 20,000 such jobs at "load 0.9" never had
more than 14.4% of the GPUs busy). With ``warm=True`` (default) the run starts from the stationary population of
an infinite-server queue with these arrivals (M/G/inf): a Poisson number ``lambda E[d]`` of stream rows, drawn with
probability proportional to their lifetime, each with a remaining lifetime uniform on (0, d), submitted at time 0.
The offered load is then rho from the first second (in expectation) instead of ramping up over a day.

Measurement. Services and warm-start jobs are not measured. The measurement window is ``[warmup T, T]``, T the last
stream arrival (about H; ``warmup`` default 0.1): time averages are taken over it, and the stream jobs submitted in
it are the measured jobs. With nothing queued, the time-averaged allocation over the window is the load (checked in
the tests).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline.jobs import JobSet
from fgdopt.traces import check_timed, load_openb, read_pods, trace_files
from fgdopt.workloads.convert.common import check_duration

SERVICE_S = 86_400.0
"""Pods living longer than this (seconds) are the background services (one day)."""

ARRIVALS = ("poisson", "trace")

QOS_PRIORITY = {"LS": 1, "Guaranteed": 1, "Burstable": 0, "BE": 0}
"""Priority of each ``qos`` class of openb for priority preemption (higher outranks lower): latency-sensitive (LS)
and Kubernetes' Guaranteed pods outrank best-effort (BE) and Burstable ones. openb default has 4,647 LS, 3,398 BE,
100 Burstable and 7 Guaranteed pods; an unknown class gets 0."""


def trace_lifetimes(variant: str = "default", data_dir: str | os.PathLike | None = None,
                    rng: np.random.Generator | None = None) -> tuple[TaskSet, np.ndarray, np.ndarray, np.ndarray]:
    """The trace's tasks (name order of the file), each pod's lifetime in seconds, its ``creation_time`` and its
    priority (:data:`QOS_PRIORITY` of its ``qos``).

    Pods that never ran get a lifetime drawn from the pods of their ``qos`` class that ran (module docstring),
    with ``rng`` (default: seed 0).
    """
    check_timed(variant)
    rng = np.random.default_rng(0) if rng is None else rng
    _, tasks = load_openb(variant, data_dir)
    pods = read_pods(variant, data_dir)
    qos = pods["qos"].to_numpy()
    lived = _seconds(pods, "deletion_time") - _seconds(pods, "scheduled_time")
    check_duration(lived, trace_files(variant, data_dir)[1], "deletion_time")     # the converter's check
    life = fill_lifetimes(lived, qos, rng)
    priority = np.array([QOS_PRIORITY.get(q, 0) for q in qos], dtype=np.int64)
    return tasks, life, pods["creation_time"].to_numpy(dtype=np.float64), priority


def _seconds(pods: pd.DataFrame, column: str) -> np.ndarray:
    """A time column of the pod list in seconds, NaN where empty (a pod that never ran has no ``scheduled_time``;
    one still pending at the trace's end has no ``deletion_time`` either)."""
    return pd.to_numeric(pods[column].replace("", np.nan), errors="coerce").to_numpy(dtype=np.float64)


def fill_lifetimes(life: np.ndarray, qos: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``life`` (seconds, NaN for the pods that never ran) with every NaN drawn from the lifetimes of the pods of
    the same ``qos`` class that ran (of all pods that ran, if its class has none), classes in sorted order: the
    rule of the module docstring, shared by :func:`trace_lifetimes` and the openb converter
    (:mod:`fgdopt.workloads.convert.openb`). Returns a new array."""
    life = np.array(life, dtype=np.float64)
    ran = np.isfinite(life)
    for cls in np.unique(qos[~ran]):
        todo = np.flatnonzero(~ran & (qos == cls))
        pool = life[ran & (qos == cls)]
        pool = pool if len(pool) else life[ran]
        life[todo] = rng.choice(pool, size=len(todo))
    return life


def openb_jobs(variant: str = "default", load: float = 0.9, n_jobs: int = 20_000, *, seed: int = 0,
               arrivals: str = "poisson", service_s: float = SERVICE_S, warm: bool = True, warmup: float = 0.1,
               data_dir: str | os.PathLike | None = None, max_jobs: float = math.inf) -> tuple[Cluster, JobSet]:
    """The openb cluster and ``n_jobs`` stream jobs at offered load ``load`` (module docstring).

    Parameters
    ----------
    variant : the openb pod list (:data:`fgdopt.traces.VARIANTS`).
    load : offered load rho (services included), a fraction of the GPU capacity (0.9 = 90%).
    n_jobs : stream arrivals (the services and the warm start come on top).
    seed : seeds every draw (lifetimes of unscheduled pods, rows, gaps, warm start).
    arrivals : ``"poisson"`` or ``"trace"`` (the trace's creation-time pattern, compressed).
    service_s : pods living longer than this are the background services.
    warm : start from the stationary population (module docstring); False starts empty.
    warmup : the measurement window starts at ``warmup`` times the last arrival.
    data_dir : the openb folder (default ``$FGDOPT_DATA``).
    max_jobs : the most jobs the run may hold, the warm start's expected size (stream rate x mean lifetime, Little's
        law) included, checked before anything is drawn (a load of 1,000 would warm-start 8 million jobs).

    Returns
    -------
    (cluster, jobs): jobs in input order: services, warm start, then the stream in submission order; each job's
    priority is its pod's (:data:`QOS_PRIORITY`).

    Raises
    ------
    ValueError : unknown arrivals, a load the services alone exceed, no stream rows, ``n_jobs < 1``, more than
        ``max_jobs`` jobs.
    """
    if arrivals not in ARRIVALS:
        raise ValueError(f"unknown arrivals {arrivals!r}; choose one of {', '.join(ARRIVALS)}")
    if n_jobs < 1 or not 0 <= warmup < 1:
        raise ValueError(f"need n_jobs >= 1 and 0 <= warmup < 1 (got {n_jobs}, {warmup})")
    rng = np.random.default_rng(seed)
    cluster, _ = load_openb(variant, data_dir)
    tasks, life, created, priority = trace_lifetimes(variant, data_dir, rng)
    cap = cluster.gpu_capacity_milli
    service = np.flatnonzero(life > service_s)
    stream = np.flatnonzero(life <= service_s)
    if not len(stream):
        raise ValueError(f"openb {variant}: no pod lives {service_s} s or less; nothing to stream")
    background = float(tasks.gpu_demand[service].sum())
    if load * cap <= background:
        raise ValueError(f"load {load} is at most what the {len(service)} services hold "
                         f"({100 * background / cap:.2f}% of capacity)")
    work = tasks.gpu_demand[stream] * life[stream]                       # milli-GPU x s per stream row
    rate = (load * cap - background) / work.mean()                       # arrivals per second
    horizon = n_jobs / rate
    expected = len(service) + n_jobs + (rate * float(life[stream].mean()) if warm else 0.0)
    if expected > max_jobs:
        raise ValueError(f"load {load}: about {expected:,.0f} jobs (services, stream and a warm start of the stream's "
                         f"rate times its mean lifetime), more than the {max_jobs:,.0f} a run can hold")
    if arrivals == "poisson":
        rows = stream[rng.integers(len(stream), size=n_jobs)]
        submit = np.cumsum(rng.exponential(1.0 / rate, size=n_jobs))
    else:
        by_time = stream[np.argsort(created[stream], kind="stable")]
        offsets = created[by_time] - created[by_time[0]]
        span = offsets[-1] + (offsets[-1] / max(len(by_time) - 1, 1) or 1.0)
        k = np.arange(n_jobs)
        rows = by_time[k % len(by_time)]
        raw = offsets[k % len(by_time)] + span * (k // len(by_time))
        submit = raw * (horizon / raw[-1]) if raw[-1] > 0 else np.linspace(0.0, horizon, n_jobs)
    parts = [(service, np.zeros(len(service)), life[service], "")]
    if warm:
        n_warm = rng.poisson(rate * life[stream].mean())
        weights = life[stream] / life[stream].sum()
        drawn = stream[rng.choice(len(stream), size=n_warm, p=weights)]
        parts.append((drawn, np.zeros(n_warm), rng.uniform(0.0, 1.0, n_warm) * life[drawn], "warm:"))
    parts.append((rows, submit, life[rows], "job:"))
    idx = np.concatenate([p[0] for p in parts])
    names = tuple(f"{prefix}{k}:{tasks.names[r]}" if prefix else tasks.names[r]
                  for rows_, _, _, prefix in parts for k, r in enumerate(rows_))
    shapes = tasks.take(idx)
    window = (warmup * float(submit[-1]), float(submit[-1]))
    measured = np.zeros(len(idx), dtype=bool)
    measured[len(idx) - n_jobs:] = (submit >= window[0]) & (submit <= window[1])
    jobs = JobSet(TaskSet(shapes.cpu_milli, shapes.memory_mib, shapes.num_gpu, shapes.gpu_milli, shapes.gpu_spec,
                          names), np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]),
                  measured, window, priority[idx])
    return cluster, jobs
