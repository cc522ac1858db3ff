"""Alibaba spot-GPU trace 2026 (alibaba/clusterdata ``cluster-trace-v2026-spot-gpu``): ``job_info_df.csv`` and
``node_info_df.csv``.

``job_info_df.csv``: ``job_name, organization, gpu_model, cpu_request`` (vCPUs), ``gpu_request`` (GPUs),
``worker_num``, ``submit_time`` (seconds from the first job), ``duration`` (s), ``job_type`` (high-priority or
spot). Rule: ``workers = worker_num``, each with ``gpu_request`` GPUs and ``cpu_request`` cores (the requests
are read per worker: an instance is one pod; a fraction below one GPU is a share of one GPU, above one and not
whole it is rounded up, counted); ``gpu_spec = gpu_model``; ``priority`` 1 for high-priority jobs (``job_type``
starting ``HP`` or ``High``), 0 for spot jobs; ``user = organization``; no memory: ``memory_mib`` 0.
``node_info_df.csv``: ``node_name, gpu_model, gpu_capacity_num, cpu_num`` (vCPUs); memory 0 (the jobs ask none).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.workloads.convert.common import Conversion, check_duration, gpu_shape, numbers, read_table, rebase

JOB_COLUMNS = ("job_name", "organization", "gpu_model", "cpu_request", "gpu_request", "worker_num", "submit_time",
               "duration", "job_type")
NODE_COLUMNS = ("node_name", "gpu_model", "gpu_capacity_num", "cpu_num")


def convert(paths: list[str]) -> Conversion:
    job_paths = [p for p in paths if "job" in Path(p).name]
    node_paths = [p for p in paths if "node" in Path(p).name]
    if len(job_paths) != 1 or len(node_paths) > 1:
        raise ValueError(f"spot2026 takes job_info_df.csv and optionally node_info_df.csv, got {paths}")
    path = job_paths[0]
    raw = read_table(path, JOB_COLUMNS, dtype={"job_name": str, "organization": str, "gpu_model": str,
                                               "job_type": str})
    submit, duration = numbers(raw, path, "submit_time"), numbers(raw, path, "duration", low=None)
    check_duration(duration, path, "duration")
    workers = numbers(raw, path, "worker_num")
    if (bad := np.flatnonzero(workers < 1)).size:
        raise ValueError(f"{path}: row {int(bad[0])}: field 'worker_num' is {workers[bad[0]]:g} (workers 0)")
    keep = ~(np.isnan(submit) | np.isnan(duration) | np.isnan(workers))
    num_gpu, gpu_milli, rounded = gpu_shape(numbers(raw, path, "gpu_request"))
    high = raw["job_type"].fillna("").str.strip().str.lower().str.startswith(("hp", "high")).to_numpy()
    jobs = pd.DataFrame({"name": raw["job_name"].to_numpy(), "submit_s": submit, "duration_s": duration,
                         "num_gpu": num_gpu, "gpu_milli": gpu_milli,
                         "cpu_milli": np.round(np.nan_to_num(numbers(raw, path, "cpu_request")) * 1000),
                         "memory_mib": 0, "workers": np.nan_to_num(workers, nan=1).astype(np.int64),
                         "gpu_spec": np.where(num_gpu > 0, raw["gpu_model"].fillna("").to_numpy(), ""),
                         "priority": high.astype(np.int64),
                         "user": raw["organization"].fillna("").to_numpy()})[keep]
    jobs["submit_s"] = rebase(jobs["submit_s"].to_numpy())
    nodes = None
    if node_paths:
        n = read_table(node_paths[0], NODE_COLUMNS, dtype={"node_name": str, "gpu_model": str})
        nodes = [{"cpu_milli": int(c * 1000), "memory_mib": 0, "gpu": int(g), "model": str(m), "name": str(name)}
                 for name, m, g, c in zip(n["node_name"], n["gpu_model"], n["gpu_capacity_num"], n["cpu_num"],
                                          strict=True)]
    return Conversion(jobs.reset_index(drop=True), nodes, len(raw),
                      {"no submit_time, duration or worker_num": int((~keep).sum())}, [
                          "workers = worker_num; gpu_request and cpu_request are per worker",
                          f"gpu_request above 1 and not whole rounded up ({rounded} job(s))",
                          "priority 1 for high-priority (HP) jobs, 0 for spot jobs; user = organization",
                          "memory_mib 0 (the trace gives no memory; nodes too)"])
