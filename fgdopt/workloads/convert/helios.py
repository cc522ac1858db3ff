"""SenseTime Helios (``cluster_log.csv`` of one cluster: Earth, Saturn, Uranus, Venus; S-Lab-System-Group/HeliosData).

Columns used: ``job_id, user, gpu_num, cpu_num, node_num, submit_time, duration`` (``gpu_num`` and ``cpu_num`` are
the job's totals, ``duration`` its run time in seconds, times date-time strings). Rule: ``workers = node_num``,
each of ``ceil(gpu_num / node_num)`` whole GPUs and ``ceil(cpu_num / node_num)`` cores (e.g. ``gpu_num`` 16 on
``node_num`` 2: 2 workers of 8 GPUs). Helios gives no memory and no GPU model: ``memory_mib`` 0 (memory never
limits) and ``gpu_spec`` empty. Rows without a submission time, a duration or a node count are dropped. No node
list.
"""

from __future__ import annotations

from fgdopt.workloads.convert.common import Conversion, node_gang_jobs, read_table

COLUMNS = ("job_id", "user", "gpu_num", "cpu_num", "node_num", "submit_time", "duration")


def convert(paths: list[str]) -> Conversion:
    (path,) = paths
    raw = read_table(path, COLUMNS, dtype={"job_id": str, "user": str})
    conv = node_gang_jobs(raw, path, memory_mib=None)
    conv.assumed += ["memory_mib 0 per worker (Helios gives no memory: memory never limits)",
                     "gpu_spec empty (Helios gives no GPU model)"]
    return conv
