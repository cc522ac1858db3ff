"""Microsoft Philly (msr-fiddle/philly-traces): ``cluster_job_log`` (JSON) and ``cluster_machine_list`` (CSV
without a suffix).

``cluster_job_log`` is a JSON list of jobs ``{jobid, user, vc, status, submitted_time, attempts: [{start_time,
end_time, detail: [{ip, gpus: [...]}]}]}`` (times ``YYYY-MM-DD HH:MM:SS``). Rule: a job's shape is that of its
**last attempt**: ``workers`` = the machines in its ``detail``, each of as many whole GPUs as the busiest of them
holds (uneven spreads rounded up, counted); ``duration_s`` = that attempt's end - start; submission =
``submitted_time``. Jobs without an attempt or without times are dropped. Philly gives no CPU, memory or GPU
model per job: ``cpu_milli`` 0, ``memory_mib`` 0, ``gpu_spec`` empty.

``cluster_machine_list`` (``machineId, number of GPUs, single GPU mem``) gives the nodes: ``gpu`` = number of GPUs,
``model`` = the GPU memory (e.g. ``12GB``), CPU and memory 0 (the jobs ask none).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.workloads.convert.common import Conversion, check_duration, read_table, rebase, seconds

MACHINE_COLUMNS = ("machineId", "number of GPUs", "single GPU mem")
JOB_FIELDS = ("jobid", "user", "submitted_time", "attempts")


def convert(paths: list[str]) -> Conversion:
    logs = [p for p in paths if "machine" not in Path(p).name]
    machines = [p for p in paths if p not in logs]
    if len(logs) != 1 or len(machines) > 1:
        raise ValueError(f"philly takes cluster_job_log and optionally cluster_machine_list, got {paths}")
    path = logs[0]
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a JSON job log ({exc})") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of jobs, got a {type(data).__name__}")
    for i, job in enumerate(data):
        if not isinstance(job, dict) or (missing := [f for f in JOB_FIELDS if f not in job]):
            raise ValueError(f"{path}: row {i}: missing field(s) {missing if isinstance(job, dict) else JOB_FIELDS}")
    last = [job["attempts"][-1] if job["attempts"] else {} for job in data]
    frame = pd.DataFrame({"start": [a.get("start_time") for a in last], "end": [a.get("end_time") for a in last],
                          "submit": [job["submitted_time"] for job in data]})
    gpus = [[len(d.get("gpus", ())) for d in a.get("detail", ())] for a in last]
    workers = np.array([len(g) for g in gpus], dtype=np.int64)
    per = np.array([max(g, default=0) for g in gpus], dtype=np.int64)
    total = np.array([sum(g) for g in gpus], dtype=np.int64)
    start, end = seconds(frame["start"], path, "start_time"), seconds(frame["end"], path, "end_time")
    submit = seconds(frame["submit"], path, "submitted_time")
    duration = end - start
    check_duration(duration, path, "end_time")
    keep = ~(np.isnan(duration) | np.isnan(submit)) & (workers > 0)
    jobs = pd.DataFrame({"name": [str(job["jobid"]) for job in data], "submit_s": submit, "duration_s": duration,
                         "num_gpu": per, "gpu_milli": np.where(per > 0, 1000, 0), "cpu_milli": 0, "memory_mib": 0,
                         "workers": np.maximum(workers, 1), "user": [str(job["user"] or "") for job in data]})[keep]
    jobs["submit_s"] = rebase(jobs["submit_s"].to_numpy())
    nodes = None
    if machines:
        m = read_table(machines[0], MACHINE_COLUMNS, dtype={"machineId": str, "single GPU mem": str})
        nodes = [{"cpu_milli": 0, "memory_mib": 0, "gpu": int(g), "model": str(mem).replace(" ", ""), "name": str(n)}
                 for n, g, mem in zip(m["machineId"], m["number of GPUs"], m["single GPU mem"], strict=True)]
    uneven = int((per * workers != total)[keep].sum())
    return Conversion(jobs.reset_index(drop=True), nodes, len(data),
                      {"no attempt, no times or no machine": int((~keep).sum())}, [
                          "the last attempt is the job: workers = its machines, each as many GPUs as the busiest "
                          f"({uneven} uneven job(s) rounded up)",
                          "cpu_milli 0, memory_mib 0, gpu_spec empty (Philly gives none per job)",
                          "nodes: CPU and memory 0, model = the GPU memory of the machine list"])
