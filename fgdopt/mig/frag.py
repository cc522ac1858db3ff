"""The MIG form of the statistical fragmentation measure (docs/semantics.md "Fragmentation" carried over to slices).

It is the one evaluator, :func:`fgdopt.frag.fragmentation_rows`, called with its ``mig_fit`` option: the
amounts are free *memory slices* per GPU instead of free milli-GPU, and GPU g counts as usable by shape m
iff some allowed start of m's profile (:mod:`fgdopt.mig.slices`) lies in g's free slices. So, for node n and shape m:

* m is CPU-only, or n cannot host m's GPU demand, or m's CPU does not fit: F_n(m) = free slices of n;
* otherwise F_n(m) = the free slices of the GPUs where no allowed start of m's profile is free (for a
  whole-GPU shape: every partly used GPU).

F_n(M) = sum_m p_m F_n(m) with the workload's popularities, F(M) = sum_n F_n(M) (slices); the rate divides by
the free slices. Example: two A100-40GB GPUs each with two free slices cannot host a 3g.20gb instance
(4 slices at start 0 or 4): for M = {3g} all four free slices are fragment.
"""

from __future__ import annotations

import numpy as np

from fgdopt.frag import Workload, fragmentation_rows, node_access
from fgdopt.mig.slices import MigLayout
from fgdopt.state import ClusterState


def shape_fit_tables(workload: Workload, layout: MigLayout) -> np.ndarray:
    """(J, M, 256) bool: may shape m's profile start on a GPU of model j with that occupancy mask?

    CPU-only shapes get ``True`` (unused: the evaluator gives them the node's free slices). Cached per
    (layout, workload).
    """
    cache = layout.__dict__.setdefault("_shape_fit", {})
    key = id(workload)
    hit = cache.get(key)
    if hit is not None and hit[0] is workload:
        return hit[1]
    tab = np.ones((len(layout.models), len(workload), 256), dtype=bool)
    for j, model in enumerate(layout.models):
        for m, (num, milli) in enumerate(zip(workload.num_gpu.tolist(), workload.gpu_milli.tolist(), strict=True)):
            if num:
                tab[j, m] = model.profile_for(milli).fits
    cache[key] = (workload, tab)
    return tab


def mig_rows(workload: Workload, layout: MigLayout, occupancy: np.ndarray, cpu_left: np.ndarray,
             nodes: np.ndarray, access: np.ndarray) -> np.ndarray:
    """F_n(M) in memory slices for K hypothetical node states at once.

    Parameters
    ----------
    occupancy : (K, G) int64 slice-occupancy masks (absent GPUs all set).
    cpu_left : (K,) free milli-cores.
    nodes : (K,) the node each row is a state of (its GPU model).
    access : (M, K) bool, :func:`fgdopt.frag.node_access` of ``nodes``.

    Returns
    -------
    (K,) float64 array.
    """
    tab = shape_fit_tables(workload, layout)
    mj = layout.model_index[nodes]
    fit = tab[mj[None, :, None], np.arange(len(workload))[:, None, None], occupancy[None, :, :]]
    return fragmentation_rows(workload, layout.free_slices(occupancy, nodes), cpu_left, access, mig_fit=fit)


def mig_node_fragmentations(state: ClusterState, workload: Workload, rows: np.ndarray | None = None) -> np.ndarray:
    """F_n(M) in memory slices of every node of a MIG ``state`` (or of ``rows``).

    Raises
    ------
    ValueError : the state's cluster is not a MIG cluster.

    Examples
    --------
    >>> from fgdopt.model import Cluster, TaskSet
    >>> c = Cluster([64000, 64000], [1 << 20] * 2, [1, 1], ["A100-40GB"] * 2)
    >>> t = TaskSet([1000] * 4, [0] * 4, [1] * 4, [571, 285, 571, 285])   # 4g, 2g, 4g, 2g
    >>> s = ClusterState(c, t)
    >>> for i, n in enumerate([0, 0, 1, 1]):
    ...     s.place(i, n, (0,))
    >>> w = Workload.from_shapes([(1000, 1, 428, 1.0)])                   # 3g.20gb
    >>> mig_node_fragmentations(s, w).tolist()                            # 2 + 2 free slices, no 3g start
    [2.0, 2.0]
    """
    if state.mig is None:
        raise ValueError("not a MIG cluster: every node model must be one of fgdopt.mig.slices.MIG_MODELS")
    nodes = np.arange(state.cluster.n_nodes) if rows is None else np.asarray(rows)
    return mig_rows(workload, state.mig, state.slices[nodes], state.cpu_left[nodes], nodes,
                    node_access(workload, state, nodes))


def mig_fragmentation(state: ClusterState, workload: Workload) -> tuple[float, int, float]:
    """Cluster MIG fragmentation: (F(M) in slices, free slices, rate = F / free, 0 when nothing is free)."""
    total = float(mig_node_fragmentations(state, workload).sum())
    free = int(state.mig.free_slices(state.slices).sum())
    return total, free, total / free if free else 0.0
