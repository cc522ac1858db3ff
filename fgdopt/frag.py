"""The statistical fragmentation measure of docs/semantics.md "Fragmentation" — the one evaluator.

A :class:`Workload` M is a set of task shapes with popularities ``p_m`` (summing to 1). The
fragmentation of node n seen by shape m, ``F_n(m)``, is the node's free GPU capacity (milli-GPU)
that m cannot use; ``F_n(M) = sum_m p_m F_n(m)`` and the cluster's ``F(M) = sum_n F_n(M)``.

Two implementations of one formula live here on purpose: :func:`node_fragmentation` is the
reference, a literal transcription of docs/semantics.md over plain sequences; :func:`fragmentation_rows` is the
vectorized form that everything else (cluster totals, FGD's deltas, experiments) calls. The tests
check they agree on every state.

**Topology option** (``topology=``, off by default). With a node's GPU interconnect known
(:mod:`fgdopt.topology`), a shape m of ``k >= 2`` whole GPUs can use node n only if n's completely free
GPUs hold a ``k``-set whose ring reaches the best ring of ``k`` GPUs on an empty node of n's type. When
they hold ``k`` or more free GPUs but no such set, n counts as unable to host m's GPU demand: F_n(m) =
idle(n), category ``q2_lack_gpu`` (or ``q1_lack_both`` when the CPU does not fit either). Every other
shape, and every node where a best-ring set is free, is judged exactly as without the option. The
option only narrows "can host", so the topology form is never below the measure of docs/semantics.md.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from fgdopt.model import GPU_MILLI, TaskSet, spec_allows
from fgdopt.state import ClusterState, gpu_fits

if TYPE_CHECKING:
    from fgdopt.topology import ClusterTopology, Topology

CATEGORIES = ("q1_lack_both", "q2_lack_gpu", "q3_satisfied", "q4_lack_cpu",
              "x_satisfied", "x_lack_cpu", "no_access")
"""Where each shape's view of a node's free GPU capacity falls; all but ``q3_satisfied`` is fragment."""

DEFAULT_POPULARITY_THRESHOLD = 0.95


@dataclass(frozen=True, eq=False)
class Workload:
    """The target workload M: distinct task shapes and their popularity.

    Attributes
    ----------
    cpu_milli, num_gpu, gpu_milli : int64 arrays (M,), the shape (milli-cores, GPUs, milli-GPU per GPU).
    gpu_spec : tuple of str (M,), allowed GPU models joined by ``|`` (``""`` = any).
    popularity : float64 array (M,), summing to 1.
    counts : int64 array (M,), how many tasks had the shape (1 each when built from shapes).

    Examples
    --------
    Shapes as ``(cpu_milli, num_gpu, gpu_milli, popularity)``; :meth:`from_tasks` counts them in a task list.

    >>> w = Workload.from_shapes([(4000, 1, 500, 0.5), (8000, 1, 1000, 0.3), (2000, 0, 0, 0.2)])
    >>> len(w), w.gpu_milli.tolist(), w.popularity.tolist()
    (3, [500, 1000, 0], [0.5, 0.3, 0.2])
    """

    cpu_milli: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    gpu_spec: tuple[str, ...]
    popularity: np.ndarray
    counts: np.ndarray
    _access: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for name in ("cpu_milli", "num_gpu", "gpu_milli", "counts"):
            arr = np.asarray(getattr(self, name), dtype=np.int64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        pop = np.asarray(self.popularity, dtype=np.float64)
        pop.setflags(write=False)
        object.__setattr__(self, "popularity", pop)
        object.__setattr__(self, "gpu_spec", tuple(self.gpu_spec))
        m = len(pop)
        if not all(len(getattr(self, f)) == m for f in ("cpu_milli", "num_gpu", "gpu_milli", "gpu_spec", "counts")):
            raise ValueError("workload fields must share one length")
        if m == 0:
            raise ValueError("a workload needs at least one shape")
        if np.any(pop < 0) or not np.isclose(pop.sum(), 1.0):
            raise ValueError(f"popularities must be >= 0 and sum to 1 (sum = {pop.sum():.6f})")

    @classmethod
    def from_tasks(cls, tasks: TaskSet, threshold: float = DEFAULT_POPULARITY_THRESHOLD) -> Workload:
        """Group ``tasks`` by shape and keep the most popular ones (docs/semantics.md "Fragmentation").

        Shapes are sorted as the reference simulator sorts them: by count, descending, ties by
        ``(cpu_milli, gpu_milli, num_gpu, gpu_spec)``, descending; they are kept until their cumulative
        count first reaches ``threshold`` of all tasks (``threshold=1`` keeps every shape). Popularity is
        computed as there too, ``(count / n_tasks) / (kept / n_tasks)``, to the last bit.
        A gang (``workers > 1``) counts once, as the shape of one part: F_n(m) asks whether one part fits node n
        (each part sits on one node, and every placed part is a task on its node in the state).

        Examples
        --------
        >>> from fgdopt.model import TaskSet
        >>> w = Workload.from_tasks(TaskSet([1, 1, 1, 2], [0] * 4, [1, 1, 1, 0], [500, 500, 500, 0]), 0.7)
        >>> len(w), w.popularity.tolist()
        (1, [1.0])
        """
        if not 0 < threshold <= 1:
            raise ValueError(f"popularity threshold must lie in (0, 1], got {threshold}")
        if len(tasks) == 0:
            raise ValueError("cannot build a workload from an empty task set")
        counts = Counter(zip(tasks.cpu_milli.tolist(), tasks.num_gpu.tolist(), tasks.gpu_milli.tolist(),
                             tasks.gpu_spec.tolist(), strict=True))
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0][0], kv[0][2], kv[0][1], kv[0][3]), reverse=True)
        cum = np.cumsum([c for _, c in ranked])
        keep = int(np.searchsorted(cum, threshold * len(tasks) - 1e-9)) + 1
        kept = ranked[:keep]
        shape_counts = np.array([c for _, c in kept])
        return cls(
            cpu_milli=[s[0] for s, _ in kept], num_gpu=[s[1] for s, _ in kept],
            gpu_milli=[s[2] for s, _ in kept], gpu_spec=[s[3] for s, _ in kept],
            popularity=(shape_counts / len(tasks)) / (shape_counts.sum() / len(tasks)), counts=shape_counts,
        )

    @classmethod
    def from_shapes(cls, shapes: Sequence[tuple[int, int, int, float]],
                    gpu_specs: Sequence[str] | None = None) -> Workload:
        """Build from ``(cpu_milli, num_gpu, gpu_milli, popularity)`` tuples (popularities normalized).

        Examples
        --------
        >>> w = Workload.from_shapes([(4000, 1, 500, 0.5), (8000, 1, 1000, 0.3), (2000, 0, 0, 0.2)])
        >>> w.popularity.tolist()
        [0.5, 0.3, 0.2]
        """
        if not shapes:
            raise ValueError("a workload needs at least one shape")
        cpu, num, milli, pop = (np.array(col) for col in zip(*shapes, strict=True))
        TaskSet(cpu, np.zeros_like(cpu), num, milli)  # validates the shapes
        specs = tuple(gpu_specs) if gpu_specs is not None else ("",) * len(shapes)
        pop = pop.astype(np.float64)
        if np.any(pop < 0) or pop.sum() <= 0:
            raise ValueError("popularities must be >= 0 with a positive sum")
        return cls(cpu, num, milli, specs, pop / pop.sum(), np.ones(len(shapes), dtype=np.int64))

    def __len__(self) -> int:
        return len(self.popularity)

    def access(self, models: Sequence[str]) -> np.ndarray:
        """Boolean (M, len(models)): may shape m use GPU model j? (CPU-only shapes: never.)"""
        key = tuple(models)
        acc = self._access.get(key)
        if acc is None:
            acc = np.array([[n > 0 and spec_allows(s, mo) for mo in key]
                            for n, s in zip(self.num_gpu.tolist(), self.gpu_spec, strict=True)], dtype=bool)
            acc = acc.reshape(len(self), len(key))
            acc.setflags(write=False)
            self._access[key] = acc
        return acc

    def to_frame(self):
        """The shapes as a pandas DataFrame (one row per shape, most popular first)."""
        import pandas as pd

        return pd.DataFrame({"cpu_milli": self.cpu_milli, "num_gpu": self.num_gpu, "gpu_milli": self.gpu_milli,
                             "gpu_spec": self.gpu_spec, "count": self.counts, "popularity": self.popularity})


# -- the reference form ----------------------------------------------------------------------

def node_fragmentation(gpu_left: Sequence[float], cpu_left: float, workload: Workload,
                       model: str | None = None, topology: Topology | None = None) -> float:
    """Fragmentation F_n(M) of one node, in milli-GPU: the definition of docs/semantics.md, literally.

    Parameters
    ----------
    gpu_left : free milli-GPU of each GPU of the node (only real GPUs, no padding needed).
    cpu_left : free CPU of the node in milli-cores.
    workload : the target workload M.
    model : the node's GPU model; ``None`` means every ``gpu_spec`` admits it.
    topology : the node's :class:`~fgdopt.topology.Topology` for the topology form (module docstring).

    Examples
    --------
    the worked example of docs/semantics.md:

    >>> w = Workload.from_shapes([(4000, 1, 500, 0.5), (8000, 1, 1000, 0.3), (2000, 0, 0, 0.2)])
    >>> round(node_fragmentation([100, 600], 16000, w), 6)
    400.0
    """
    idle = float(sum(gpu_left))
    total = 0.0
    for cpu, num, milli, spec, p in zip(workload.cpu_milli.tolist(), workload.num_gpu.tolist(),
                                        workload.gpu_milli.tolist(), workload.gpu_spec,
                                        workload.popularity.tolist(), strict=True):
        if num == 0 or model is not None and not spec_allows(spec, model):
            frag = idle
        else:
            if milli < GPU_MILLI:
                can_host = any(g >= milli for g in gpu_left)
            else:
                free = [g for g, left in enumerate(gpu_left) if left == GPU_MILLI]
                can_host = len(free) >= num
                if can_host and topology is not None and num >= 2:
                    best = topology.best_ring(num)
                    can_host = any(topology.ring_of(s) >= best for s in itertools.combinations(free, num))
            frag = float(sum(g for g in gpu_left if g < milli)) if can_host and cpu_left >= cpu else idle
        total += p * frag
    return total


# -- the vectorized form ---------------------------------------------------------------------

def _shape_views(workload: Workload, gpu_left: np.ndarray, cpu_left: np.ndarray, linked: np.ndarray | None = None,
                 mig_fit: np.ndarray | None = None):
    """Per (shape, row): idle, unusable-GPU sum, and the masks that sort it into categories.

    ``linked`` (M, K) bool, the topology option: may shape m's GPUs get a best ring on row k?
    ``mig_fit`` (M, K, G) bool, the MIG form: may shape m's profile start on GPU g of row k? (``gpu_left`` then
    holds free memory slices, :mod:`fgdopt.mig.frag`.)"""
    idle = gpu_left.sum(axis=-1)                                            # (K,)
    milli = workload.gpu_milli[:, None, None]
    if mig_fit is None:
        small = np.where(gpu_left[None, :, :] < milli, gpu_left[None, :, :], 0).sum(axis=-1)  # (M, K)
        fits_gpu = gpu_fits(gpu_left[None, :, :], workload.num_gpu[:, None], milli)           # (M, K)
    else:  # MIG: a GPU is too small for m when no allowed start of m's profile is free on it
        small = np.where(mig_fit, 0, gpu_left[None, :, :]).sum(axis=-1)
        fits_gpu = mig_fit.sum(axis=-1) >= workload.num_gpu[:, None]
    if linked is not None:
        fits_gpu &= linked
    cpu_ok = cpu_left[None, :] >= workload.cpu_milli[:, None]              # (M, K)
    return idle, small, fits_gpu, cpu_ok


def fragmentation_rows(workload: Workload, gpu_left: np.ndarray, cpu_left: np.ndarray,
                       access: np.ndarray, linked: np.ndarray | None = None,
                       mig_fit: np.ndarray | None = None) -> np.ndarray:
    """F_n(M) in milli-GPU for K node states at once.

    Parameters
    ----------
    gpu_left : (K, G) free milli-GPU per GPU (absent GPUs padded with 0).
    cpu_left : (K,) free milli-cores.
    access : (M, K) bool, whether shape m may use row k's GPU model (``Workload.access``).
    linked : (M, K) bool or None, the topology option: whether row k's free GPUs hold a best-ring set
        for shape m (:meth:`ClusterTopology.linked`); ``None`` is the measure of docs/semantics.md.
    mig_fit : (M, K, G) bool or None, the MIG form (:mod:`fgdopt.mig.frag`): ``gpu_left`` is then free memory
        slices per GPU and GPU g is usable by shape m iff ``mig_fit[m, k, g]`` (its profile has a free start).

    Returns
    -------
    (K,) float64 array: the sum of :func:`category_rows` over every category but ``q3_satisfied``.
    """
    return fragment_total(category_rows(workload, gpu_left, cpu_left, access, linked, mig_fit))


_FRAGMENT = np.array([k != "q3_satisfied" for k in CATEGORIES])


def _sequential_sum(values: np.ndarray, axis: int) -> np.ndarray:
    """Left-to-right sum along ``axis`` (``np.sum`` sums pairwise in blocks, so its rounding depends on the
    array's shape; a running sum does not)."""
    return np.cumsum(values, axis=axis).take(-1, axis=axis)


def category_rows(workload: Workload, gpu_left: np.ndarray, cpu_left: np.ndarray, access: np.ndarray,
                  linked: np.ndarray | None = None, mig_fit: np.ndarray | None = None) -> np.ndarray:
    """Per row and category of :data:`CATEGORIES`: milli-GPU, shape (K, 7); arguments as :func:`fragmentation_rows`.

    Each row sums to the node's free GPU capacity. Every shape m adds ``p_m * amount`` to its category in
    workload order, left to right, as the reference simulator accumulates them (its floating-point rounding,
    so that integer scores truncated near a boundary come out as there); a shape that fits (quadrant III)
    adds its unusable GPUs to ``q2_lack_gpu`` and the rest to ``q3_satisfied``.
    """
    idle, small, fits_gpu, cpu_ok = _shape_views(workload, gpu_left, cpu_left, linked, mig_fit)
    p = workload.popularity[:, None]
    gpu_shape = (workload.num_gpu > 0)[:, None]
    host = access & fits_gpu
    q3 = gpu_shape & host & cpu_ok
    # the category each shape's fragment goes to (quadrant III: its unusable GPUs, to q2_lack_gpu)
    where = np.where(gpu_shape, np.where(access, np.where(cpu_ok, _Q2, np.where(fits_gpu, _Q4, _Q1)), _NO_ACCESS),
                     np.where(cpu_ok, _X_SATISFIED, _X_LACK_CPU))
    value = p * np.where(q3, small, idle[None, :])
    amounts = np.zeros(where.shape + (len(CATEGORIES),))
    flat = amounts.reshape(-1, len(CATEGORIES))
    flat[np.arange(flat.shape[0]), where.ravel()] = value.ravel()
    amounts[..., _Q3] = np.where(q3, p * (idle[None, :] - small), 0.0)
    return _sequential_sum(amounts, axis=0)


_Q1, _Q2, _Q3, _Q4, _X_SATISFIED, _X_LACK_CPU, _NO_ACCESS = range(len(CATEGORIES))


def fragment_total(by_category: np.ndarray) -> np.ndarray:
    """F_n(M) of category rows (K, 7): every category but ``q3_satisfied``, summed left to right."""
    return _sequential_sum(by_category[:, _FRAGMENT], axis=1)


def node_access(workload: Workload, state: ClusterState, rows: np.ndarray | None = None) -> np.ndarray:
    """(M, K) access matrix of the state's nodes (``rows`` of them, default all)."""
    idx = state.cluster.model_index if rows is None else state.cluster.model_index[rows]
    return workload.access(state.cluster.models)[:, idx]


def topology_links(workload: Workload, state: ClusterState, gpu_left: np.ndarray, rows: np.ndarray | None,
                   topology: ClusterTopology | None) -> np.ndarray | None:
    """The ``linked`` argument of :func:`fragmentation_rows` for ``gpu_left`` of nodes ``rows`` (None: no option)."""
    if topology is None:
        return None
    nodes = np.arange(state.cluster.n_nodes) if rows is None else np.asarray(rows)
    return topology.linked(workload.num_gpu, gpu_left, nodes)


def node_fragmentations(state: ClusterState, workload: Workload, rows: np.ndarray | None = None,
                        topology: ClusterTopology | None = None) -> np.ndarray:
    """F_n(M) in milli-GPU of every node of ``state`` (or of ``rows``); ``topology`` for the topology form."""
    sel = slice(None) if rows is None else rows
    gl = state.gpu_left[sel]
    return fragmentation_rows(workload, gl, state.cpu_left[sel], node_access(workload, state, rows),
                              topology_links(workload, state, gl, rows, topology))


@dataclass(frozen=True)
class FragmentationReport:
    """Cluster fragmentation: ``total`` and ``idle`` in milli-GPU, ``rate`` = total / idle (0 if no idle),
    ``breakdown`` maps each of :data:`CATEGORIES` to milli-GPU (they sum to ``idle``), ``per_node`` F_n(M)."""

    total: float
    idle: float
    rate: float
    breakdown: dict[str, float]
    per_node: np.ndarray

    @classmethod
    def of(cls, by_category: np.ndarray) -> FragmentationReport:
        """The report of per-node category amounts ``(n_nodes, len(CATEGORIES))`` (milli-GPU)."""
        per_node = fragment_total(by_category)
        total = float(per_node.sum())
        idle = float(by_category.sum())
        breakdown = {k: float(v) for k, v in zip(CATEGORIES, by_category.sum(axis=0), strict=True)}
        return cls(total=total, idle=idle, rate=total / idle if idle else 0.0, breakdown=breakdown, per_node=per_node)


def fragmentation_by_category(state: ClusterState, workload: Workload, rows: np.ndarray | None = None,
                              topology: ClusterTopology | None = None) -> np.ndarray:
    """Per node (``rows`` of them, default all) and category of :data:`CATEGORIES`: milli-GPU, shape (K, 7).

    Each row sums to the node's free GPU capacity; its entries other than ``q3_satisfied`` sum to F_n(M).
    ``topology`` selects the topology form (module docstring).
    """
    sel = slice(None) if rows is None else rows
    gl = state.gpu_left[sel]
    return category_rows(workload, gl, state.cpu_left[sel], node_access(workload, state, rows),
                         topology_links(workload, state, gl, rows, topology))


def cluster_fragmentation(state: ClusterState, workload: Workload,
                          topology: ClusterTopology | None = None) -> FragmentationReport:
    """Fragmentation of the whole cluster with its breakdown by category (``topology``: the topology form): a
    :class:`FragmentationReport`: ``total`` in milli-GPU, ``rate`` = total / idle milli-GPU (0..1).

    Examples
    --------
    >>> from fgdopt.model import Cluster, TaskSet
    >>> c = Cluster([16000], [1024], [2], ["T4"])
    >>> s = ClusterState(c, TaskSet([], [], [], []))
    >>> w = Workload.from_shapes([(4000, 1, 500, 0.5), (8000, 1, 1000, 0.3), (2000, 0, 0, 0.2)])
    >>> r = cluster_fragmentation(s, w)
    >>> r.total, r.rate, r.breakdown["x_satisfied"]
    (400.0, 0.2, 400.0)
    """
    return FragmentationReport.of(fragmentation_by_category(state, workload, topology=topology))


def fragmentation_after(state: ClusterState, workload: Workload, cpu_milli: int, gpu_milli: int,
                        nodes: np.ndarray, gpu_mask: np.ndarray, topology: ClusterTopology | None = None) -> np.ndarray:
    """F_n'(M) (milli-GPU) of each node after a hypothetical placement, for K placements at once.

    Parameters
    ----------
    cpu_milli, gpu_milli : the task's CPU demand and per-GPU demand.
    nodes : (K,) node of each hypothetical placement (a node may repeat, once per GPU choice).
    gpu_mask : (K, G) bool, the GPUs that would receive ``gpu_milli``.
    topology : the topology form of F_n(M) (module docstring).

    Returns
    -------
    (K,) float64 array, bit for bit what :func:`node_fragmentations` gives once the placement is made.
    Feasibility is the caller's business.
    """
    gpu_after = state.gpu_left[nodes] - gpu_mask * gpu_milli
    cpu_after = state.cpu_left[nodes] - cpu_milli
    return fragmentation_rows(workload, gpu_after, cpu_after, node_access(workload, state, nodes),
                              topology_links(workload, state, gpu_after, nodes, topology))


def fragmentation_delta(state: ClusterState, workload: Workload, cpu_milli: int, gpu_milli: int,
                        nodes: np.ndarray, gpu_mask: np.ndarray,
                        before: np.ndarray | None = None, topology: ClusterTopology | None = None) -> np.ndarray:
    """Increase of F_n(M) (milli-GPU) if a task were placed: :func:`fragmentation_after` minus ``before``.

    ``before`` is F_n(M) of ``nodes`` now, if the caller has it cached (of the same ``topology`` form); the
    other arguments are those of :func:`fragmentation_after`.
    """
    if before is None:
        before = node_fragmentations(state, workload, nodes, topology)
    return fragmentation_after(state, workload, cpu_milli, gpu_milli, nodes, gpu_mask, topology) - before
