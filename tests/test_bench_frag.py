"""Benchmarks of the fragmentation evaluator on openb (run with ``pytest tests/test_bench_frag.py
--benchmark-enable``; without the flag each runs once as a plain test, untimed)."""

from __future__ import annotations

import numpy as np
import pytest

from fgdopt.frag import Workload, cluster_fragmentation, fragmentation_delta
from fgdopt.state import ClusterState


@pytest.fixture(scope="module")
def half_full(openb_default):
    """The openb cluster with the first half of the default tasks placed first-fit, lowest GPU ids."""
    cluster, tasks = openb_default
    state = ClusterState(cluster, tasks)
    for i in range(len(tasks) // 2):
        task = tasks[i]
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if nodes.size:
            node = int(nodes[0])
            gpus = np.flatnonzero(state.gpu_left[node] >= task.gpu_milli)[: task.num_gpu]
            state.place(i, node, tuple(gpus.tolist()))
    return state


@pytest.mark.parametrize("threshold", [0.95, 1.0], ids=["35-shapes", "91-shapes"])
def test_bench_cluster_fragmentation(benchmark, half_full, threshold):
    workload = Workload.from_tasks(half_full.tasks, threshold)
    report = benchmark(cluster_fragmentation, half_full, workload)
    assert 0 < report.total <= report.idle


def test_bench_delta_every_gpu(benchmark, half_full):
    """FGD's inner loop for a sharing task: one hypothetical placement per (node, GPU)."""
    workload = Workload.from_tasks(half_full.tasks)
    n, g = half_full.gpu_left.shape
    nodes = np.repeat(np.arange(n), g)
    mask = np.tile(np.eye(g, dtype=bool), (n, 1))
    deltas = benchmark(fragmentation_delta, half_full, workload, 4000, 250, nodes, mask)
    assert deltas.shape == (n * g,)
