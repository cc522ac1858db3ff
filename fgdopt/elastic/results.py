"""The outcome of a run of elastic jobs (:func:`fgdopt.elastic.rounds.simulate_elastic`): its jobs' finish times,
JCTs, restarts and GPU time, and the run's summary figures (:class:`ElasticResult`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fgdopt.elastic.jobs import ElasticJob


@dataclass(frozen=True, eq=False)
class ElasticResult:
    """Outcome of a run of elastic jobs.

    Attributes
    ----------
    jobs : the jobs, in their final state. policy : the planner's name. finish_s : the engine's finish times
        (:func:`fgdopt.elastic.rounds.simulate_elastic`; None: the jobs' own completions).
    series : DataFrame, one row per instant or interval (the run's).
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
