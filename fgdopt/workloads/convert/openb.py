"""Alibaba openb (``cluster-trace-gpu-v2023``, :mod:`fgdopt.traces`): a pod list ``openb_pod_list_<variant>.csv`` and
the node list ``openb_node_list_gpu_node.csv``.

Pods (``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, creation_time, deletion_time,
scheduled_time``, times in seconds) are single-node jobs, submitted at ``creation_time``, as the time engine's
openb streams read them (:mod:`fgdopt.timeline.sources`): a pod that ran lives ``deletion_time - scheduled_time``;
a pod that never ran (no ``scheduled_time``) keeps its shape and gets a lifetime drawn with seed 0 from the pods of
its ``qos`` class that ran (:func:`~fgdopt.timeline.sources.fill_lifetimes`); ``priority`` is its class's
(:data:`~fgdopt.timeline.sources.QOS_PRIORITY`). Pods without a ``creation_time`` are dropped (the ``multigpu*``
lists have no times: every pod). Nodes: ``sn, cpu_milli, memory_mib, gpu, model``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.timeline.sources import QOS_PRIORITY, fill_lifetimes
from fgdopt.workloads.convert.common import Conversion, check_duration, numbers, read_table, rebase

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "creation_time",
               "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


def convert(paths: list[str]) -> Conversion:
    pods = [p for p in paths if "node_list" not in Path(p).name]
    node = [p for p in paths if "node_list" in Path(p).name]
    if len(pods) != 1 or len(node) > 1:
        raise ValueError(f"openb takes one openb_pod_list_*.csv and optionally openb_node_list_gpu_node.csv, "
                         f"got {paths}")
    path = pods[0]
    raw = read_table(path, POD_COLUMNS, dtype={"name": str, "gpu_spec": str, "qos": str})
    created = numbers(raw, path, "creation_time")
    life = numbers(raw, path, "deletion_time") - numbers(raw, path, "scheduled_time")
    check_duration(life, path, "deletion_time")
    keep = ~np.isnan(created)
    qos = raw["qos"].fillna("").to_numpy(dtype=object)
    drawn = int((keep & np.isnan(life)).sum())
    life[keep] = fill_lifetimes(life[keep], qos[keep], np.random.default_rng(0))
    jobs = pd.DataFrame({"name": raw["name"], "submit_s": created, "duration_s": life,
                         **{c: raw[c].to_numpy() for c in ("num_gpu", "gpu_milli", "cpu_milli", "memory_mib")},
                         "gpu_spec": raw["gpu_spec"].fillna(""),
                         "priority": [QOS_PRIORITY.get(q, 0) for q in qos]})[keep]
    jobs["submit_s"] = rebase(jobs["submit_s"].to_numpy())
    nodes = None
    if node:
        n = read_table(node[0], NODE_COLUMNS, dtype={"sn": str, "model": str})
        nodes = [{"cpu_milli": int(c), "memory_mib": int(m), "gpu": int(g), "model": str(mo), "name": str(s)}
                 for s, c, m, g, mo in zip(n["sn"], n["cpu_milli"], n["memory_mib"], n["gpu"], n["model"], strict=True)]
    return Conversion(jobs.reset_index(drop=True), nodes, len(raw), {"no creation_time": int((~keep).sum())}, [
        "every pod is one single-node job; duration_s = deletion_time - scheduled_time",
        f"{drawn} pod(s) never ran: lifetime drawn (seed 0) from the pods of their qos class that ran",
        "priority from qos (LS and Guaranteed 1, BE and Burstable 0)"])
