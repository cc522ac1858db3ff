"""Elastic jobs run interval by interval under a planner (Pollux's ``Cluster.step`` loop).

Every ``interval_s`` (Pollux: 60 s) from time 0: every job holding GPUs runs the interval
(:meth:`~fgdopt.elastic.jobs.ElasticJob.advance`); then the planner (:mod:`fgdopt.elastic.policies`) is asked for
the allocations of the jobs then active (submitted, not complete), and each job whose allocation changed is
re-allocated (a restart delay for a new one, all GPUs released for none). A job submitted within an interval waits
for its end; a job completes within an interval, at the second its last epoch ends, and its GPUs stay idle until
the interval ends. The run ends when every job has completed.

This is the discrete loop of Pollux's simulator; :mod:`fgdopt.elastic.onengine` runs the same planner calls on
fgdopt's event engine (the same finish times). :meth:`ElasticResult.check` verifies a run (work conservation,
capacity).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fgdopt.elastic.jobs import RESTART_S, ElasticJob, placement_of
from fgdopt.elastic.policies import Allocations, Planner

INTERVAL_S = 60.0
"""Pollux's scheduling interval, seconds."""
NODES, GPUS = 16, 4
"""Pollux's cluster: 16 nodes of 4 GPUs."""


@dataclass(frozen=True, eq=False)
class ElasticResult:
    """Outcome of :func:`run_intervals`.

    Attributes
    ----------
    jobs : the jobs, in their final state. policy : the planner's name. finish_s : the engine's finish times
        (:func:`fgdopt.elastic.onengine.simulate_elastic`), None on the interval loop.
    series : DataFrame, one row per interval: ``time_s`` (its end), ``used_gpus`` (allocated after the plan),
        ``active`` (jobs active).
    peak : the most GPUs allocated on any node at any plan. nodes : GPUs per node.
    wall_s, cpu_s : wall and CPU seconds of the run.
    """

    jobs: list[ElasticJob]
    policy: str
    series: pd.DataFrame
    peak: np.ndarray
    nodes: tuple[int, ...]
    wall_s: float
    cpu_s: float
    finish_s: np.ndarray | None = None

    def job_frame(self) -> pd.DataFrame:
        """One row per job: ``name, submit_s, finish_s, jct_s, restarts, gpu_s`` (seconds; GPU-seconds held); the
        finish is ``finish_s`` where given (the engine's), else the jobs' completion."""
        submit = np.array([j.submit_s for j in self.jobs])
        finish = (np.array([math.nan if j.completion_s is None else j.completion_s for j in self.jobs])
                  if self.finish_s is None else np.asarray(self.finish_s, dtype=np.float64))
        return pd.DataFrame({"name": [j.name for j in self.jobs], "submit_s": submit, "finish_s": finish,
                             "jct_s": finish - submit, "restarts": [j.restarts or 0 for j in self.jobs],
                             "gpu_s": [j.attained_gpu_s for j in self.jobs]})

    def stats(self) -> dict[str, float]:
        """``mean_jct_s, p99_jct_s, makespan_s`` (seconds; p99 by linear interpolation) and ``utilization`` (GPU
        time allocated over capacity until the last completion, as a fraction)."""
        frame = self.job_frame()
        jct = frame.jct_s.to_numpy()
        makespan = float(frame.finish_s.max())
        capacity = sum(self.nodes) * makespan
        return {"mean_jct_s": float(jct.mean()), "p99_jct_s": float(np.percentile(jct, 99)),
                "makespan_s": makespan, "utilization": float(frame.gpu_s.sum() / capacity) if capacity else 0.0}

    def check(self) -> None:
        """Raise ``AssertionError`` unless every job completed having done exactly its work (progress), no earlier
        than its submission, held GPUs exactly its restart delays plus its progressing time, and no node ever held
        more GPUs than it has."""
        for j in self.jobs:
            if j.completion_s is None or j.completion_s < j.submit_s:
                raise AssertionError(f"job {j.name} did not complete, or completed before its submission")
            if not math.isclose(j.progress, j.work, rel_tol=1e-12):
                raise AssertionError(f"job {j.name} made progress {j.progress}, its work is {j.work}")
            if not math.isclose(j.held_s, j.delay_s + j.busy_s, rel_tol=1e-12, abs_tol=1e-9):
                raise AssertionError(f"job {j.name} held GPUs {j.held_s} s, not its delays plus progress")
        if (self.peak > np.asarray(self.nodes)).any():
            raise AssertionError(f"nodes {np.flatnonzero(self.peak > np.asarray(self.nodes)).tolist()} over capacity")


def check_plan(plan: Allocations, names: set[str], nodes: Sequence[int], now: float, name: str) -> np.ndarray:
    """GPUs used per node by ``plan``; ``ValueError`` (one line) if it allocates to a job not in ``names``, to a
    node that does not exist, or more GPUs than a node has."""
    used = np.zeros(len(nodes), dtype=np.int64)
    for k, alloc in plan.items():
        if k not in names:
            raise ValueError(f"{name}: allocated GPUs at {now} s to {k!r}, not an active job")
        if alloc and (min(alloc) < 0 or max(alloc) >= len(nodes)):
            raise ValueError(f"{name}: job {k} allocated to a node outside 0..{len(nodes) - 1} at {now} s")
        np.add.at(used, alloc, 1)
    if (used > np.asarray(nodes)).any():
        bad = int(np.flatnonzero(used > np.asarray(nodes))[0])
        raise ValueError(f"{name}: node {bad} given {used[bad]} GPUs of {nodes[bad]} at {now} s")
    return used


def plan_interval(planner: Planner, live: list[ElasticJob], held: Allocations, nodes: Sequence[int], now: float,
                  restart_s: float, name: str) -> tuple[Allocations, np.ndarray]:
    """One plan at an interval's end: ``planner``'s allocations of the ``live`` jobs (their ``held`` ones passed
    in), checked (:func:`check_plan`); every job whose allocation changed is re-allocated (its restart delay).
    Returns (the plan, GPUs used per node)."""
    names = {j.name for j in live}
    held = {k: v for k, v in held.items() if k in names}
    plan = planner(now, live, held, nodes)
    used = check_plan(plan, names, nodes, now, name)
    for job in live:
        if plan.get(job.name) != held.get(job.name):
            job.reallocate(placement_of(plan.get(job.name, [])), restart_s)
    return plan, used


def run_intervals(jobs: Sequence[ElasticJob], planner: Planner, nodes: Sequence[int] = (GPUS,) * NODES,
                  interval_s: float = INTERVAL_S, restart_s: float = RESTART_S,
                  until_s: float = math.inf) -> ElasticResult:
    """Run ``jobs`` (fresh, in workload order) under ``planner`` on nodes of ``nodes`` GPUs (module docstring).

    Raises
    ------
    ValueError : the planner gave a node more GPUs than it has, or an unknown node or job (one line).
    RuntimeError : the run passed ``until_s`` with jobs not complete.
    """
    wall0, cpu0 = time.perf_counter(), time.process_time()
    nodes = tuple(int(g) for g in nodes)
    jobs = list(jobs)
    held: Allocations = {}
    peak = np.zeros(len(nodes), dtype=np.int64)
    rows = []
    name = getattr(planner, "name", type(planner).__name__)
    now, live = 0.0, []
    while True:
        for job in live:                              # live: the jobs active at the last plan
            if job.placement:
                job.advance(now, interval_s)
        now += interval_s
        live = [j for j in jobs if j.submit_s <= now and not j.done]
        if not live:
            if all(j.done for j in jobs):
                break
            continue
        if now > until_s:
            raise RuntimeError(f"{name}: {len(live)} jobs not complete at {until_s} s")
        held, used = plan_interval(planner, live, held, nodes, now, restart_s, name)
        np.maximum(peak, used, out=peak)
        rows.append((now, int(used.sum()), len(live)))
    series = pd.DataFrame(rows, columns=["time_s", "used_gpus", "active"])
    result = ElasticResult(jobs, name, series, peak, nodes, time.perf_counter() - wall0, time.process_time() - cpu0)
    result.check()
    return result
