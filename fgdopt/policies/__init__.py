"""The online placement policies of SPEC "Online placement" and their registry.

Each policy is a callable ``policy(state, task) -> (node, gpu_ids) | None`` that reads a
:class:`~fgdopt.state.ClusterState` without mutating it (see :mod:`fgdopt.policies.base` for the
protocol and the node-rank tie rule, and each module for its score). The paper's six policies score
nodes as the reference simulator's Kubernetes plugins of the same name do (integer scores 0..100):

=====================  ==========================================================
``fgd``                least fragmentation increase (:mod:`~fgdopt.policies.fgd`)
``best-fit``           least normalized leftover (:mod:`~fgdopt.policies.best_fit`)
``dot-product``        least free·demand alignment (:mod:`~fgdopt.policies.dot_product`)
``gpu-packing``        used GPUs, then used nodes, then idle nodes (:mod:`~fgdopt.policies.gpu_packing`)
``gpu-clustering``     nodes hosting the same GPU kind (:mod:`~fgdopt.policies.gpu_clustering`)
``random``             uniform feasible node and GPU (:mod:`~fgdopt.policies.random_choice`)
``fgd-exact``          fgdopt's FGD on exact deltas, best-fit ties (:mod:`~fgdopt.policies.fgd`)
``unified-device``     best-fit on pooled GPUs (:mod:`~fgdopt.policies.unified_device`)
``per-gpu-dimension``  best-fit with fixed per-GPU vectors (:mod:`~fgdopt.policies.per_gpu_dimension`)
=====================  ==========================================================
"""

from __future__ import annotations

import numpy as np

from fgdopt.frag import Workload
from fgdopt.policies.base import GPU_CHOICES, Choice, Policy
from fgdopt.policies.best_fit import BestFit
from fgdopt.policies.dot_product import DotProduct
from fgdopt.policies.fgd import FGD, FGDExact
from fgdopt.policies.gpu_clustering import GpuClustering
from fgdopt.policies.gpu_packing import GpuPacking
from fgdopt.policies.mig import MIG_POLICIES, MigFGD
from fgdopt.policies.per_gpu_dimension import PerGpuDimension
from fgdopt.policies.random_choice import RandomFit
from fgdopt.policies.unified_device import UnifiedDevice
from fgdopt.topology import TopologyMap

POLICY_NAMES = ("fgd", "best-fit", "dot-product", "gpu-packing", "gpu-clustering", "random", "fgd-exact",
                "unified-device", "per-gpu-dimension")

PAPER_POLICIES = ("random", "dot-product", "gpu-clustering", "gpu-packing", "best-fit", "fgd")
"""The six policies of the paper's figures, in its order (each as the reference simulator's plugin)."""

_CLASSES = {cls.name: cls for cls in (BestFit, DotProduct, GpuPacking, GpuClustering, RandomFit,
                                      UnifiedDevice, PerGpuDimension)}
_NEEDS_WORKLOAD = {cls.name: cls for cls in (FGD, FGDExact)}
# MIG clusters (fgdopt.policies.mig): mig-fgd, mig-first-fit, mig-best-fit, mig-greedy
MIG_POLICY_NAMES = tuple(MIG_POLICIES)
_CLASSES.update({n: c for n, c in MIG_POLICIES.items() if c is not MigFGD})
_NEEDS_WORKLOAD[MigFGD.name] = MigFGD
WORKLOAD_POLICIES = tuple(_NEEDS_WORKLOAD)
"""The policies that need the target workload M (``make_policy(..., workload=...)``)."""


def make_policy(name: str, *, seed: int = 0, workload: Workload | None = None,
                ranks: np.ndarray | None = None, gpu_choice: str = "lowest-index",
                topology: TopologyMap | None = None) -> Policy:
    """A fresh policy ``name`` with its own generator seeded by ``seed``.

    Parameters
    ----------
    name : one of :data:`POLICY_NAMES`.
    seed : seeds the policy's random draws and, unless ``ranks`` is given, the node ranks of its tie
        rule (drawn once, at the first call).
    workload : the target workload M; required by ``fgd`` and ``fgd-exact`` (build it from the task
        list before inflation: ``Workload.from_tasks(tasks)``), ignored by the others.
    ranks : explicit node ranks (a permutation of ``0..n_nodes-1``; ties go to the lowest).
    gpu_choice : the GPUs a whole-GPU task takes inside the chosen node, one of :data:`GPU_CHOICES`
        (``lowest-index``, the reference's, by default; ``topo-fgd`` for ``fgd`` / ``fgd-exact`` only;
        ``per-gpu-dimension`` only has ``lowest-index``); see :mod:`fgdopt.policies.base`.
    topology : the node types' GPU interconnects (:class:`~fgdopt.topology.TopologyMap`), default the
        shipped openb assumption; read by ``best-ring`` and ``topo-fgd`` only.

    Raises
    ------
    ValueError : unknown name (the message lists the valid ones), FGD without a workload, ranks that
        are not a permutation, or a GPU choice the policy does not have.
    """
    options = {"gpu_choice": gpu_choice, "topology": topology}
    if name in _NEEDS_WORKLOAD:
        if workload is None:
            raise ValueError(f"policy {name!r} needs the target workload (Workload.from_tasks of the trace)")
        return _NEEDS_WORKLOAD[name](workload, seed=seed, ranks=ranks, **options)
    if name not in _CLASSES:
        raise ValueError(f"unknown policy {name!r}; valid names: {', '.join(POLICY_NAMES)}")
    return _CLASSES[name](seed=seed, ranks=ranks, **options)


__all__ = ["GPU_CHOICES", "MIG_POLICY_NAMES", "PAPER_POLICIES", "POLICY_NAMES", "WORKLOAD_POLICIES", "Choice", "Policy",
           "make_policy"]
