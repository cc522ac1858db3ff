"""Shanghai AI Lab Acme 2024 (``trace_seren.csv`` or ``trace_kalos.csv``; InternLM/AcmeTrace, NSDI'24).

Columns used: ``job_id, user, node_num, gpu_num, cpu_num, submit_time, duration`` (totals per job; times ISO
date-times with a zone, ``duration`` seconds); Kalos' ``mem_per_pod_GB`` (memory per node, GB) is used where present.
Rule (as Helios, :func:`~fgdopt.workloads.convert.common.node_gang_jobs`): ``workers = node_num``, each of
``ceil(gpu_num / node_num)`` whole GPUs and ``ceil(cpu_num / node_num)`` cores; memory ``mem_per_pod_GB * 1024``
MiB per worker (Seren, without that column: 0, memory never limits); ``gpu_spec`` empty (both clusters have one
GPU model, the A100). Rows without a submission, a duration or a node count are dropped. No node list.
"""

from __future__ import annotations

import numpy as np

from fgdopt.workloads.convert.common import Conversion, node_gang_jobs, numbers, read_table

COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "submit_time", "duration")


def convert(paths: list[str]) -> Conversion:
    (path,) = paths
    raw = read_table(path, COLUMNS, dtype={"job_id": str, "user": str})
    has_mem = "mem_per_pod_GB" in raw.columns
    memory = np.ceil(np.nan_to_num(numbers(raw, path, "mem_per_pod_GB")) * 1024) if has_mem else None
    conv = node_gang_jobs(raw, path, memory_mib=memory)
    conv.assumed.append("memory_mib = mem_per_pod_GB x 1024 per worker" if has_mem else
                        "memory_mib 0 per worker (no mem_per_pod_GB column: memory never limits)")
    return conv
