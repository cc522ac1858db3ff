"""Alibaba PAI 2020 (alibaba/clusterdata ``cluster-trace-gpu-v2020``): ``pai_job_table``, ``pai_task_table`` and
``pai_machine_spec`` (headerless CSVs; the column names are the trace's README's).

Each row of ``pai_task_table`` (``job_name, task_name, inst_num, status, start_time, end_time, plan_cpu, plan_mem,
plan_gpu, gpu_type``) becomes one job (a PAI job with a parameter-server task and a worker task becomes two):
``workers = inst_num``; per worker ``plan_cpu`` (percent of a core) x 10 milli-cores, ``plan_mem`` (GB) x 1024 MiB,
``plan_gpu`` (percent of a GPU) / 100 GPUs (below 1: a share of one GPU, ``gpu_milli = plan_gpu x 10``; above 1 and
not whole: rounded up, counted); ``gpu_spec`` = ``gpu_type`` where a machine of ``pai_machine_spec`` has that model
(``MISC`` and unknown types: any). Submission = the task's ``start_time`` (the trace gives no queueing time),
``duration_s = end_time - start_time``; tasks without both times are dropped. ``user`` comes from
``pai_job_table`` (``job_name, inst_id, user, status, start_time, end_time``). Nodes: ``pai_machine_spec``
(``machine, gpu_type, cap_cpu`` cores, ``cap_mem`` GB, ``cap_gpu``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.workloads.convert.common import Conversion, check_duration, gpu_shape, numbers, read_table, rebase

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem",
                "plan_gpu", "gpu_type")
MACHINE_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")


def _pick(paths: list[str], word: str) -> str:
    found = [p for p in paths if word in Path(p).name]
    if len(found) != 1:
        raise ValueError(f"pai2020 takes pai_job_table, pai_task_table and pai_machine_spec; {len(found)} file(s) "
                         f"named *{word}* among {paths}")
    return found[0]


def convert(paths: list[str]) -> Conversion:
    job_path, task_path, spec_path = (_pick(paths, w) for w in ("job_table", "task_table", "machine_spec"))
    tasks = read_table(task_path, TASK_COLUMNS, header=False, dtype={"job_name": str, "task_name": str,
                                                                      "gpu_type": str})
    jobs = read_table(job_path, JOB_COLUMNS, header=False, dtype={"job_name": str, "user": str})
    spec = read_table(spec_path, MACHINE_COLUMNS, header=False, dtype={"machine": str, "gpu_type": str})
    start, end = numbers(tasks, task_path, "start_time"), numbers(tasks, task_path, "end_time")
    duration = end - start
    check_duration(duration, task_path, "end_time")
    inst = numbers(tasks, task_path, "inst_num")
    if (bad := np.flatnonzero(inst < 1)).size:
        raise ValueError(f"{task_path}: row {int(bad[0])}: field 'inst_num' is {inst[bad[0]]:g} (workers 0)")
    keep = ~(np.isnan(duration) | np.isnan(inst))
    num_gpu, gpu_milli, rounded = gpu_shape(numbers(tasks, task_path, "plan_gpu") / 100)
    models = set(spec["gpu_type"].dropna())
    gpu_type = tasks["gpu_type"].fillna("").to_numpy(dtype=object)
    known = np.isin(gpu_type, list(models)) & (num_gpu > 0)
    user = tasks["job_name"].map(jobs.drop_duplicates("job_name").set_index("job_name")["user"]).fillna("")
    out = pd.DataFrame({"name": (tasks["job_name"] + "/" + tasks["task_name"]).to_numpy(), "submit_s": start,
                        "duration_s": duration, "num_gpu": num_gpu, "gpu_milli": gpu_milli,
                        "cpu_milli": np.round(np.nan_to_num(numbers(tasks, task_path, "plan_cpu")) * 10),
                        "memory_mib": np.ceil(np.nan_to_num(numbers(tasks, task_path, "plan_mem")) * 1024),
                        "workers": np.nan_to_num(inst, nan=1).astype(np.int64),
                        "gpu_spec": np.where(known, gpu_type, ""), "user": user.to_numpy()})[keep]
    out["submit_s"] = rebase(out["submit_s"].to_numpy())
    nodes = [{"cpu_milli": int(c * 1000), "memory_mib": int(m * 1024), "gpu": int(g), "model": str(t), "name": str(n)}
             for n, t, c, m, g in zip(spec["machine"], spec["gpu_type"].fillna("none"), spec["cap_cpu"],
                                      spec["cap_mem"], spec["cap_gpu"].fillna(0), strict=True)]
    return Conversion(out.reset_index(drop=True), nodes, len(tasks),
                      {"no start_time or end_time": int((~keep).sum())}, [
                          "one job per task (job_name/task_name), workers = inst_num",
                          "submission = the task's start_time (no queueing time in the trace)",
                          f"plan_gpu above 100 and not whole rounded up to whole GPUs ({rounded} task(s))",
                          f"gpu_spec = gpu_type where a machine has it, else any "
                          f"({int(((~known) & (num_gpu > 0))[keep].sum())} GPU task(s) of another type)"])
