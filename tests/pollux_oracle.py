"""Pollux's own interval loop (its simulator's ``Cluster.step``), kept as a test oracle for the engine's runs of
elastic jobs (:func:`fgdopt.elastic.rounds.simulate_elastic`: the same planner calls, the same finish times).

Every ``interval_s`` (Pollux: 60 s) from time 0: every job holding GPUs runs the interval
(:meth:`~fgdopt.elastic.jobs.ElasticJob.advance`); then the planner (:mod:`fgdopt.elastic.policies`) is asked for
the allocations of the jobs then active (submitted, not complete), and each job whose allocation changed is
re-allocated (a restart delay for a new one, all GPUs released for none;
:func:`fgdopt.elastic.rounds.plan_interval`). A job submitted within an interval waits for its end; a job completes
within an interval, at the second its last epoch ends, and its GPUs stay idle until the interval ends. The run ends
when every job has completed. :meth:`~fgdopt.elastic.results.ElasticResult.check` verifies a run (work
conservation, capacity).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fgdopt.elastic.jobs import GPUS, INTERVAL_S, NODES, RESTART_S, ElasticJob
from fgdopt.elastic.policies import Allocations, Planner
from fgdopt.elastic.results import ElasticResult
from fgdopt.elastic.rounds import plan_interval


def run_intervals(jobs: Sequence[ElasticJob], planner: Planner, nodes: Sequence[int] = (GPUS,) * NODES,
                  interval_s: float = INTERVAL_S, restart_s: float = RESTART_S,
                  until_s: float = math.inf) -> ElasticResult:
    """Run ``jobs`` (fresh, in workload order) under ``planner`` on nodes of ``nodes`` GPUs (module docstring);
    the result's ``series`` has one row per interval: ``time_s`` (its end), ``used_gpus`` (allocated after the
    plan), ``active`` (jobs active).

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
