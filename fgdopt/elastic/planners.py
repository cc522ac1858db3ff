"""The elastic policies by name: their planners (:data:`PLANNERS`, :func:`make_planner`) and their jobs
(:func:`make_jobs`): those of :mod:`fgdopt.elastic.policies`,
Pollux's (:mod:`fgdopt.elastic.pollux`) and Singularity's (:mod:`fgdopt.elastic.singularity`).

Examples
--------
>>> type(make_planner("tiresias")).__name__
'Tiresias'
"""

from __future__ import annotations

import pandas as pd

from fgdopt.elastic.applications import Application
from fgdopt.elastic.jobs import GPUS, NODES, ElasticJob
from fgdopt.elastic.policies import Optimus, Planner, Tiresias
from fgdopt.elastic.pollux import PolluxPlanner
from fgdopt.elastic.singularity import Singularity, SlicedJob


def make_planner(name: str, seed: int = 0) -> Planner:
    """The planner ``name`` (:data:`PLANNERS`; ``seed`` seeds Pollux's search)."""
    if name == "singularity":
        return Singularity()
    if name == "tiresias":
        return Tiresias()
    if name == "optimus":
        return Optimus()
    if name == "pollux":
        return PolluxPlanner(seed=seed)
    raise ValueError(f"unknown elastic policy {name!r}; valid names: {', '.join(PLANNERS)}")


PLANNERS = ("pollux", "optimus", "tiresias", "singularity")
"""The planners, in the order of the study's tables."""


def make_jobs(frame: pd.DataFrame, apps: dict[str, Application], policy: str,
              cluster_gpus: int = NODES * GPUS) -> list[ElasticJob]:
    """The jobs of a workload as ``policy`` runs them (Pollux's ``Cluster``): ``tiresias`` keeps the workload's
    GPU count and batch size, ``optimus`` its batch size, ``pollux`` neither (but NCF's batch is 32,768);
    ``singularity`` keeps both, the GPU count as the world size of a job that may run time-sliced on fewer GPUs
    (:class:`fgdopt.elastic.singularity.SlicedJob`).

    Raises
    ------
    ValueError : one line naming the job, for an unknown application, or where ``policy`` keeps what the
        application cannot run: a batch size outside its validated range, a GPU count above ``cluster_gpus`` (the
        job would wait for ever), or one whose local batch (per GPU) is below the least measured.
    """
    jobs = []
    for row in frame.itertuples(index=False):
        if row.application not in apps:
            raise ValueError(f"workload job {row.name}: unknown application {row.application!r} "
                             f"(known: {', '.join(apps)})")
        app = apps[row.application]
        fixed = policy in ("tiresias", "singularity")
        replicas = int(row.num_replicas) if fixed else None
        batch = int(row.batch_size) if fixed or policy == "optimus" else (32768 if app.name == "ncf" else None)
        if policy != "pollux" and not app.init_batch_size <= batch <= app.max_batch_size:
            raise ValueError(f"workload job {row.name}: batch_size {batch} outside {app.name}'s validated range "
                             f"{app.init_batch_size}..{app.max_batch_size} ({policy} keeps it)")
        if fixed and replicas > cluster_gpus:
            raise ValueError(f"workload job {row.name}: num_replicas {replicas} above the cluster's {cluster_gpus} "
                             f"GPUs ({policy} keeps it)")
        if fixed and (local := app.fixed_batch(batch, replicas)[0]) < app.min_local_bsz:
            raise ValueError(f"workload job {row.name}: batch_size {batch} on num_replicas {replicas} is "
                             f"{local} per GPU, below {app.name}'s least measured {app.min_local_bsz} ({policy} "
                             "keeps both)")
        kind = SlicedJob if policy == "singularity" else ElasticJob
        jobs.append(kind(str(row.name), app, float(row.time), replicas, batch))
    return jobs
