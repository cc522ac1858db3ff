"""Alibaba openb (``cluster-trace-gpu-v2023``, :mod:`fgdopt.traces`): a pod list ``openb_pod_list_<variant>.csv`` and
the node list ``openb_node_list_gpu_node.csv``.

Pods (``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, creation_time, deletion_time,
scheduled_time``, times in seconds) are single-node jobs: submission ``creation_time``, ``duration_s =
deletion_time - scheduled_time``; pods never scheduled or never deleted are dropped (counted). Nodes: ``sn,
cpu_milli, memory_mib, gpu, model``. The ``multigpu*`` lists have no times: every pod is dropped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.workloads.convert.common import Conversion, check_duration, numbers, read_table, rebase

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "creation_time",
               "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


def convert(paths: list[str]) -> Conversion:
    pods = [p for p in paths if "node_list" not in Path(p).name]
    node = [p for p in paths if "node_list" in Path(p).name]
    if len(pods) != 1 or len(node) > 1:
        raise ValueError(f"openb takes one openb_pod_list_*.csv and optionally openb_node_list_gpu_node.csv, "
                         f"got {paths}")
    path = pods[0]
    raw = read_table(path, POD_COLUMNS, dtype={"name": str, "gpu_spec": str})
    created, deleted = numbers(raw, path, "creation_time"), numbers(raw, path, "deletion_time")
    scheduled = numbers(raw, path, "scheduled_time")
    duration = deleted - scheduled
    check_duration(duration, path, "deletion_time")
    keep = ~(np.isnan(created) | np.isnan(duration))
    jobs = pd.DataFrame({"name": raw["name"], "submit_s": created, "duration_s": duration,
                         **{c: raw[c].to_numpy() for c in ("num_gpu", "gpu_milli", "cpu_milli", "memory_mib")},
                         "gpu_spec": raw["gpu_spec"].fillna("")})[keep]
    jobs["submit_s"] = rebase(jobs["submit_s"].to_numpy())
    nodes = None
    if node:
        n = read_table(node[0], NODE_COLUMNS, dtype={"sn": str, "model": str})
        nodes = [{"cpu_milli": int(c), "memory_mib": int(m), "gpu": int(g), "model": str(mo), "name": str(s)}
                 for s, c, m, g, mo in zip(n["sn"], n["cpu_milli"], n["memory_mib"], n["gpu"], n["model"], strict=True)]
    return Conversion(jobs.reset_index(drop=True), nodes, len(raw),
                      {"never scheduled or never deleted": int((~keep).sum())},
                      ["duration_s = deletion_time - scheduled_time; every pod is one single-node job"])
