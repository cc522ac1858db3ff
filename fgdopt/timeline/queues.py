"""Queue disciplines: the order in which pending jobs are offered to the placement policy.

The engine (:mod:`fgdopt.timeline.engine`) splits scheduling as Blox does: *admission* (a job that fits no
empty node is rejected at submission; the engine's rule), *order* (this module) and *placement* (the policy,
:func:`fgdopt.policies.make_policy`). A discipline is a small object with

``name``
    how studies and CSVs call it;
``keys(jobs) -> float64 array``
    one sort key per job of a :class:`~fgdopt.timeline.jobs.JobSet`; pending jobs are offered in increasing
    key, equal keys in submission order (then input order);
``blocking``
    if True, only the head of the queue may start: when it does not fit, nothing behind it starts (strict
    FIFO); if False, every pending job that fits starts, in key order (backfilling);
``drops``
    if True there is no queue: a job that does not fit at its submission is dropped (the paper's online
    protocol: a task that fits nowhere is unallocated).

===============  ========================================================================================
``fifo``         submission order, blocking: the head that does not fit blocks the rest
``backfill``     submission order, every job that fits starts
``sjf``          shortest ``duration_s`` first (oracle durations), every job that fits starts
``smallest``     least GPU demand (``num_gpu x gpu_milli``) first, then least CPU, every job that fits starts
``area``         least GPU-area (GPU demand x ``duration_s``, milli-GPU seconds) first, then shortest, every job
                 that fits starts (oracle durations)
``area-aged``    least GPU-area minus :data:`AGE_MILLI` x the seconds waited first (a wide job that has waited moves
                 ahead), every job that fits starts
``whole-first``  most GPUs (``num_gpu``, whole-GPU jobs before sharing ones) first, then shortest, every job that
                 fits starts: a freed node goes to the widest waiting job before narrow ones can split it
``none``         no queue: placed at submission or dropped
===============  ========================================================================================

A discipline of one's own is any object with these three attributes and the method; studies take it as a
``module:attribute`` spec (``--queue backfill,mypkg.queues:Oldest``; :func:`fgdopt.plugins.resolve_spec`), the
attribute a discipline object or a class called without arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fgdopt.plugins import SpecError, is_spec, resolve_spec
from fgdopt.timeline.jobs import JobSet


class Discipline(Protocol):
    """A queue discipline (see module docstring)."""

    name: str
    blocking: bool
    drops: bool

    def keys(self, jobs: JobSet) -> np.ndarray: ...


def submission_order(jobs: JobSet) -> np.ndarray:
    """Equal keys: the queue is in submission order."""
    return np.zeros(len(jobs))


def shortest_first(jobs: JobSet) -> np.ndarray:
    """The oracle run time ``duration_s`` (seconds)."""
    return np.asarray(jobs.duration_s, dtype=np.float64)


def smallest_first(jobs: JobSet) -> np.ndarray:
    """GPU demand (milli-GPU), ties by CPU (milli-cores, below 10^6 on any node, so one float key holds both)."""
    return jobs.tasks.gpu_demand * 1e6 + jobs.tasks.cpu_milli.astype(np.float64)


def _duration_tie(jobs: JobSet) -> np.ndarray:
    """``duration_s`` mapped increasingly into [0, 1] by ``d / (1 + d)`` (``inf`` to 1): a tie-break term."""
    duration = np.asarray(jobs.duration_s, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(duration), duration / (1.0 + duration), 1.0)


def gpu_area(jobs: JobSet) -> np.ndarray:
    """GPU demand (milli-GPU) x ``duration_s`` (seconds): milli-GPU seconds; a CPU-only job's is 0 even if it runs
    forever."""
    demand = np.asarray(jobs.tasks.gpu_demand, dtype=np.float64)
    duration = np.asarray(jobs.duration_s, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(demand > 0, demand * duration, 0.0)


def least_area_first(jobs: JobSet) -> np.ndarray:
    """:func:`gpu_area`, ties (CPU-only jobs: area 0) by duration: the tie term (< 1 milli-GPU-second) only orders
    jobs whose areas differ by less than that."""
    return gpu_area(jobs) + _duration_tie(jobs)


AGE_MILLI = 8000.0
"""``area-aged``: the GPU area (milli-GPU seconds) a job's key loses per second it has waited: a whole 8-GPU node's
milli-GPU (2000, 8000, 32000 and 128000 gave 80.7, 78.2, 83.1 and 105.9 s of mean wait with fgd on openb default,
20,000 jobs, load 1.1, seed 42)."""


def aged_area(jobs: JobSet) -> np.ndarray:
    """``gpu_area + AGE_MILLI x submit_s``: at every instant t the order of ``gpu_area - AGE_MILLI x (t -
    submit_s)`` (the ``w t`` term is common to every pending job, so linear aging is a static key); ties in
    submission order."""
    return gpu_area(jobs) + AGE_MILLI * np.asarray(jobs.submit_s, dtype=np.float64)


def widest_first(jobs: JobSet) -> np.ndarray:
    """Most GPUs first: ``-num_gpu`` (sharing jobs count 0), ties by ``duration_s`` (seconds).

    GPU counts are spaced by 2 and the duration tie term lies in [0, 1], so one float key holds both.
    """
    whole = np.where(jobs.tasks.gpu_milli >= 1000, jobs.tasks.num_gpu, 0).astype(np.float64)
    return -2.0 * whole + _duration_tie(jobs)


@dataclass(frozen=True)
class Ordered:
    """A discipline whose order is ``key(jobs)`` (module docstring); the built-in ones are all of this form."""

    name: str
    key: Callable[[JobSet], np.ndarray]
    blocking: bool = False
    drops: bool = False

    def keys(self, jobs: JobSet) -> np.ndarray:
        return self.key(jobs)


DISCIPLINES = {
    "fifo": Ordered("fifo", submission_order, blocking=True),
    "backfill": Ordered("backfill", submission_order),
    "sjf": Ordered("sjf", shortest_first),
    "smallest": Ordered("smallest", smallest_first),
    "area": Ordered("area", least_area_first),
    "area-aged": Ordered("area-aged", aged_area),
    "whole-first": Ordered("whole-first", widest_first),
    "none": Ordered("none", submission_order, drops=True),
}
"""The built-in disciplines by name."""

QUEUE_NAMES = tuple(DISCIPLINES)


def make_discipline(name: str) -> Discipline:
    """The discipline called ``name`` (one of :data:`QUEUE_NAMES`, or a ``module:attribute`` spec).

    Raises
    ------
    ValueError : unknown name (the message lists the valid ones); :class:`~fgdopt.plugins.SpecError` for a spec
        that does not import or names no discipline.
    """
    if is_spec(name):
        obj = resolve_spec(name, kind="queue discipline")
        obj = obj() if isinstance(obj, type) else obj
        missing = [a for a in ("name", "blocking", "drops", "keys") if not hasattr(obj, a)]
        if missing:
            raise SpecError(f"queue discipline {name!r} has no {', '.join(missing)} (see fgdopt.timeline.queues)")
        return obj
    if name not in DISCIPLINES:
        raise ValueError(f"unknown queue discipline {name!r}; valid names: {', '.join(QUEUE_NAMES)}")
    return DISCIPLINES[name]
