"""fgdopt: placing GPU-sharing workloads on GPU clusters, and how far heuristics are from optimal.

Core library: the data model (:class:`Cluster`, :class:`TaskSet`), the allocation state and the
one feasibility rule (:class:`ClusterState`, :func:`validate`), the one fragmentation evaluator
(:class:`Workload`, :func:`cluster_fragmentation`) and the openb trace loader. No solver is
imported here; exact models live in the ``formulations`` package.
"""

from fgdopt.cpus import single_threaded_blas
from fgdopt.frag import (
    CATEGORIES,
    FragmentationReport,
    Workload,
    cluster_fragmentation,
    fragmentation_delta,
    node_fragmentation,
    node_fragmentations,
)
from fgdopt.instance import Instance
from fgdopt.model import GPU_MILLI, Cluster, Task, TaskSet
from fgdopt.state import ClusterState, InfeasiblePlacement, Placement, validate

single_threaded_blas()          # small matrices in loops: BLAS threads only spin (fgdopt.cpus)


def __getattr__(name: str):
    # load_openb is imported on first use: `python -m fgdopt.traces` must not find fgdopt.traces already imported
    if name == "load_openb":
        from fgdopt.traces import load_openb

        return load_openb
    raise AttributeError(f"module 'fgdopt' has no attribute {name!r}")


__all__ = [
    "CATEGORIES", "GPU_MILLI", "Cluster", "ClusterState", "FragmentationReport", "InfeasiblePlacement",
    "Instance", "Placement", "Task", "TaskSet", "Workload", "cluster_fragmentation",
    "fragmentation_delta", "load_openb", "node_fragmentation", "node_fragmentations", "validate",
]
