"""MIG workloads: openb nodes with MIG GPUs, openb tasks mapped to MIG profiles, adversarial MIG instances.

The mapping (:func:`map_to_profiles`), per task of the trace, for a MIG GPU model (:mod:`fgdopt.mig.slices`):

* CPU-only task: unchanged;
* sharing task (``0 < gpu_milli < 1000``): the smallest profile whose compute fraction covers ``gpu_milli``
  (A100: 1g if <= 142, 2g if <= 285, 3g if <= 428, 4g if <= 571, else 7g); its ``gpu_milli`` becomes the
  profile's compute code, so the task names its profile explicitly;
* whole-GPU task (``gpu_milli = 1000``, k GPUs): the full-GPU profile on each of its k GPUs;
* ``gpu_spec`` is dropped (every GPU of a MIG cluster is of the one MIG model).

CPU and memory of tasks and nodes are the trace's; every node keeps its GPU count and gets the MIG model.

Units: CPU milli-cores, memory MiB, GPU demand as profile codes (milli-GPU), slices = memory slices.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fgdopt.inflation import arrived_count
from fgdopt.instance import Instance
from fgdopt.mig.slices import MIG_MODELS
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState
from fgdopt.suites import SHAPE_KEYS, _node_mix, apportion, openb_shapes

DEFAULT_MIG_MODEL = "A100-40GB"
_BATCH = 256


def map_to_profiles(tasks: TaskSet, model: str = DEFAULT_MIG_MODEL) -> TaskSet:
    """``tasks`` with each GPU demand replaced by its profile's compute code on ``model`` (module docstring).

    Examples
    --------
    >>> t = map_to_profiles(TaskSet([1000] * 4, [0] * 4, [0, 1, 1, 2], [0, 300, 1000, 1000], ["", "T4", "", ""]))
    >>> t.gpu_milli.tolist(), t.gpu_spec.tolist()
    ([0, 428, 1000, 1000], ['', '', '', ''])
    """
    mig = MIG_MODELS[model]
    codes = np.array([mig.profile_for(int(m)).milli if m else 0 for m in tasks.gpu_milli.tolist()], dtype=np.int64)
    return TaskSet(tasks.cpu_milli, tasks.memory_mib, tasks.num_gpu, codes, [""] * len(tasks), tasks.names)


def mig_cluster(n_nodes: int, model: str = DEFAULT_MIG_MODEL, node_types=None) -> Cluster:
    """``n_nodes`` openb nodes (the node mix of :func:`fgdopt.suites.random_instance`), GPUs made ``model``."""
    if model not in MIG_MODELS:
        raise ValueError(f"unknown MIG model {model!r}; choose one of {sorted(MIG_MODELS)}")
    types = _node_mix(node_types)
    counts = apportion(types["count"].to_numpy(), n_nodes)
    rows = np.repeat(np.arange(len(types)), counts)
    names = [f"{types.index[r]}-{model}-{k}" for r, c in zip(range(len(types)), counts, strict=True) for k in range(c)]
    return Cluster(types["cpu_milli"].to_numpy()[rows], types["memory_mib"].to_numpy()[rows],
                   types["gpu"].to_numpy()[rows], [model] * len(rows), names=tuple(names))


def mig_shapes(cluster: Cluster, model: str = DEFAULT_MIG_MODEL) -> pd.DataFrame:
    """openb's task shapes mapped to ``model``'s profiles, merged, restricted to those that fit an empty node."""
    raw = openb_shapes()
    mapped = map_to_profiles(TaskSet(*(raw[k].to_numpy() for k in SHAPE_KEYS)), model)
    frame = pd.DataFrame({k: getattr(mapped, k) for k in SHAPE_KEYS}).assign(count=raw["count"].to_numpy())
    frame = frame.groupby(list(SHAPE_KEYS), as_index=False)["count"].sum()
    frame = frame.sort_values(["count", *SHAPE_KEYS], ascending=[False] + [True] * len(SHAPE_KEYS))
    probe = TaskSet(*(frame[k].to_numpy() for k in SHAPE_KEYS))
    state = ClusterState(cluster, probe)
    keep = np.array([bool(state.feasible_nodes(t).any()) for t in probe], dtype=bool)
    return frame[keep].reset_index(drop=True)


def task_slices(cluster: Cluster, tasks: TaskSet) -> np.ndarray:
    """Memory slices each task takes (on the cluster's first model; :func:`mig_instance` has one model)."""
    mig = MIG_MODELS[cluster.models[0]]
    return np.array([n * mig.profile_for(m).size if n else 0
                     for n, m in zip(tasks.num_gpu.tolist(), tasks.gpu_milli.tolist(), strict=True)], dtype=np.int64)


def capacity_slices(cluster: Cluster) -> int:
    """Memory slices of a single-model MIG cluster."""
    return MIG_MODELS[cluster.models[0]].n_slices * cluster.total_gpus


def mig_instance(n_nodes: int, seed: int, ratio: float = 1.3, model: str = DEFAULT_MIG_MODEL, node_types=None,
                 name: str | None = None) -> Instance:
    """A MIG instance: :func:`mig_cluster` and openb tasks mapped to profiles, drawn up to ``ratio`` x slices.

    Tasks are drawn i.i.d. from :func:`mig_shapes` with probability proportional to their trace count (the law of
    drawing uniformly from the trace), in batches from ``numpy.random.default_rng(seed)``; drawing stops at the
    first task that would lift the requested memory slices above ``ratio`` x the cluster's slices (dropped).
    The arrival order is the draw order.

    Examples
    --------
    >>> inst = mig_instance(4, seed=0)
    >>> inst.cluster.models, int(task_slices(inst.cluster, inst.tasks).sum()) <= 1.3 * capacity_slices(inst.cluster)
    (('A100-40GB',), True)
    """
    cluster = mig_cluster(n_nodes, model, node_types)
    shapes = mig_shapes(cluster, model)
    sizes = task_slices(cluster, TaskSet(*(shapes[k].to_numpy() for k in SHAPE_KEYS)))
    p = shapes["count"].to_numpy() / shapes["count"].sum()
    rng = np.random.default_rng(seed)
    limit, total, rows = ratio * capacity_slices(cluster), 0, []
    while True:
        batch = rng.choice(len(shapes), size=_BATCH, p=p)
        cum = total + np.cumsum(sizes[batch])
        stop = np.flatnonzero(cum > limit)
        if stop.size:
            rows.extend(batch[:stop[0]].tolist())
            break
        rows.extend(batch.tolist())
        total = int(cum[-1])
    names = tuple(f"mig-{i}" for i in range(len(rows)))
    tasks = TaskSet(*(shapes[k].to_numpy()[rows] for k in SHAPE_KEYS), names=names)
    return Instance(name or f"mig-{model}-n{n_nodes}-r{ratio:g}-s{seed}", cluster, tasks)


def arrived_prefix(instance: Instance, pct: float) -> Instance:
    """The tasks arrived by ``pct`` percent of the cluster's slices (prefix with cumulative slices <= pct %)."""
    n = arrived_count(np.cumsum(task_slices(instance.cluster, instance.tasks)), pct, capacity_slices(instance.cluster))
    return Instance(f"{instance.name}-a{pct:g}", instance.cluster, instance.tasks.take(np.arange(n)))


# -- adversarial instances with known optima ----------------------------------------------------------------
def _one_node(gpus: int, *codes: int, model: str = DEFAULT_MIG_MODEL) -> tuple[Cluster, TaskSet]:
    cluster = Cluster([64000], [1 << 20], [gpus], [model], names=("mig-node",))
    tasks = TaskSet([1000] * len(codes), [1024] * len(codes), [1 if c else 0 for c in codes], list(codes))
    return cluster, tasks


def adv_mig_spread() -> Instance:
    """Two A100-40GB GPUs; 2g, 2g, then a full 7g task. Optimum 12 slices (both 2g on one GPU, 7g on the
    other); spreading the 2g instances over both GPUs strands 6 + 6 free slices and rejects the 7g: 4."""
    return Instance("adv-mig-spread", *_one_node(2, 285, 285, 1000))


def adv_mig_start_trap() -> Instance:
    """One A100-40GB GPU; 1g, 3g, 3g. A 3g instance starts only at slice 0 or 4: the 1g at any start blocks one
    of them. Optimum 8 slices (reject the 1g, two 3g); accepting the 1g first gives 1 + 4 = 5."""
    return Instance("adv-mig-start-trap", *_one_node(1, 142, 428, 428))


def adv_mig_alignment() -> Instance:
    """One A100-40GB GPU; 1g, 1g, 4g, 2g. The 4g starts only at slice 0. Optimum 7 slices: 4g at 0, 2g at 4, one
    1g at 6 (slice 7 takes no 1g); first-fit puts the 1g instances at 0 and 1 and then rejects the 4g: 1+1+2 = 4."""
    return Instance("adv-mig-alignment", *_one_node(1, 142, 142, 571, 285))


MIG_KNOWN_OPTIMA = {"adv-mig-spread": 12, "adv-mig-start-trap": 8, "adv-mig-alignment": 7}
"""Optimal accepted memory slices of the adversarial MIG instances (worked out in their docstrings)."""


def mig_adversarial_instances() -> list[Instance]:
    return [adv_mig_spread(), adv_mig_start_trap(), adv_mig_alignment()]
