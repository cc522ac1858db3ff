"""Descriptive statistics of a cluster and a task list (the trace statistics table)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fgdopt.model import Cluster, TaskSet

SHAPE_CLASSES = ("cpu-only", "sharing <=250", "sharing 251-500", "sharing 501-999", "whole-GPU (1)", "multi-GPU")
"""Task classes by GPU demand: CPU-only, three tiers of GPU sharing (milli-GPU), one whole GPU, several."""


def shape_class(num_gpu: np.ndarray, gpu_milli: np.ndarray) -> np.ndarray:
    """The :data:`SHAPE_CLASSES` entry of every task (object array of str)."""
    num_gpu, gpu_milli = np.asarray(num_gpu), np.asarray(gpu_milli)
    conditions = [num_gpu == 0, (num_gpu == 1) & (gpu_milli <= 250), (num_gpu == 1) & (gpu_milli <= 500),
                  (num_gpu == 1) & (gpu_milli < 1000), num_gpu == 1, num_gpu > 1]
    return np.select(conditions, SHAPE_CLASSES, default="?").astype(object)


def trace_statistics(cluster: Cluster, tasks: TaskSet, pod_phase: np.ndarray | None = None) -> pd.DataFrame:
    """The statistics table: one row per (section, metric) with an integer or float ``value``.

    Parameters
    ----------
    cluster, tasks : the trace as loaded by :func:`fgdopt.traces.load_openb`.
    pod_phase : the trace's ``pod_phase`` column (aligned with ``tasks``), for the by-phase rows and the
        share of GPU capacity that the production run had allocated to Running GPU tasks.
    """
    rows: list[tuple[str, str, float]] = [
        ("cluster", "nodes", cluster.n_nodes),
        ("cluster", "GPUs", cluster.total_gpus),
        ("cluster", "GPU models", len(cluster.models)),
        ("cluster", "node types", len(set(zip(cluster.cpu_milli.tolist(), cluster.memory_mib.tolist(),
                                              cluster.gpu.tolist(), cluster.model.tolist(), strict=True)))),
    ]
    rows += [("cluster", f"GPUs of model {m}", int(cluster.gpu[cluster.model == m].sum())) for m in cluster.models]
    classes = shape_class(tasks.num_gpu, tasks.gpu_milli)
    rows.append(("tasks", "tasks", len(tasks)))
    rows += [("tasks", name, int((classes == name).sum())) for name in SHAPE_CLASSES]
    rows.append(("tasks", "with gpu_spec", int((tasks.gpu_spec != "").sum())))
    rows.append(("tasks", "GPU demand (GPUs)", tasks.gpu_demand.sum() / 1000))
    shapes = set(zip(tasks.cpu_milli.tolist(), tasks.num_gpu.tolist(), tasks.gpu_milli.tolist(), strict=True))
    rows.append(("tasks", "distinct shapes (cpu, num_gpu, gpu_milli)", len(shapes)))
    if pod_phase is not None:
        phase = np.asarray(pod_phase, dtype=object)
        rows += [("pod_phase", str(p), int((phase == p).sum())) for p in sorted(set(phase.tolist()))]
        running_gpu = tasks.gpu_demand[(phase == "Running") & (tasks.num_gpu > 0)].sum()
        rows.append(("pod_phase", "Running GPU demand / capacity (%)",
                     round(100 * running_gpu / cluster.gpu_capacity_milli, 2)))
    return pd.DataFrame(rows, columns=["section", "metric", "value"])
