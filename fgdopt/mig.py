"""NVIDIA Multi-Instance GPU (MIG): the profile table, as data, and the slice rule.

Source: NVIDIA Multi-Instance GPU User Guide, section "Supported MIG Profiles"
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html): the profile tables of
A30-24GB, A100-SXM4-40GB / -80GB and H100-80GB and their placement diagrams (the same placements that
``nvidia-smi mig -lgipp`` prints, section "Getting Started with MIG"). A placement is ``{starts}:size`` in
*memory slices* (NVML ``nvmlGpuInstancePlacement_t``: ``start`` = index of the first occupied memory slice,
``size`` = number of memory slices occupied). A GPU has 8 memory slices (A30: 4); two GPU instances on one GPU
may not share a memory slice.

:data:`PROFILE_TABLE` is the ONE encoding of the table. The ``+me`` (media extension) variants have the geometry
of their base profile and are left out (one per GPU; no task of the model asks for media engines).

How a task asks for a profile (the one data model: a MIG task is an ordinary :class:`~fgdopt.model.Task`).
Every profile has a *compute code* ``milli = floor(1000 * compute_slices / max_compute_slices)`` (A100: 1g 142,
2g 285, 3g 428, 4g 571, 7g 1000; A30: 1g 250, 2g 500, 4g 1000). On a MIG node a task with per-GPU demand
``gpu_milli`` takes, on each of its ``num_gpu`` GPUs, the *smallest* profile whose compute fraction covers
``gpu_milli`` (``1000 * compute >= max_compute * gpu_milli``, i.e. ``milli >= gpu_milli``): a whole-GPU task
(``gpu_milli = 1000``) takes the full-GPU profile on each GPU; a sharing task one instance on one GPU. Of two
profiles with equal compute the smaller memory one wins, so the double-memory 1g profiles (``1g.10gb`` on
A100-40GB, ...) are in the table but never asked for by this rule (:attr:`MigProfile.requestable`).
:func:`fgdopt.migsuites.mig_instance` writes the code itself into the tasks, so the mapping is explicit.

Units: a *slice* is a memory slice; a GPU's occupancy is an 8-bit mask (bit q set = memory slice q used).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fgdopt.model import GPU_MILLI, Cluster

FULL_MASK = 0xFF
"""Occupancy of an absent GPU (padding in per-GPU arrays): every slice used, so nothing fits it."""

PROFILE_TABLE: dict[str, tuple[tuple[str, int, int, tuple[int, ...]], ...]] = {
    # model: (profile name, compute slices "g", memory slices (size), allowed start slices)
    "A100-40GB": (("1g.5gb", 1, 1, (0, 1, 2, 3, 4, 5, 6)), ("1g.10gb", 1, 2, (0, 2, 4, 6)),
                  ("2g.10gb", 2, 2, (0, 2, 4)), ("3g.20gb", 3, 4, (0, 4)), ("4g.20gb", 4, 4, (0,)),
                  ("7g.40gb", 7, 8, (0,))),
    "A100-80GB": (("1g.10gb", 1, 1, (0, 1, 2, 3, 4, 5, 6)), ("1g.20gb", 1, 2, (0, 2, 4, 6)),
                  ("2g.20gb", 2, 2, (0, 2, 4)), ("3g.40gb", 3, 4, (0, 4)), ("4g.40gb", 4, 4, (0,)),
                  ("7g.80gb", 7, 8, (0,))),
    "H100-80GB": (("1g.10gb", 1, 1, (0, 1, 2, 3, 4, 5, 6)), ("1g.20gb", 1, 2, (0, 2, 4, 6)),
                  ("2g.20gb", 2, 2, (0, 2, 4)), ("3g.40gb", 3, 4, (0, 4)), ("4g.40gb", 4, 4, (0,)),
                  ("7g.80gb", 7, 8, (0,))),
    "A30-24GB": (("1g.6gb", 1, 1, (0, 1, 2, 3)), ("2g.12gb", 2, 2, (0, 2)), ("4g.24gb", 4, 4, (0,))),
}
"""NVIDIA MIG User Guide, "Supported MIG Profiles" (see the module docstring), without the ``+me`` variants."""

N_SLICES = {"A100-40GB": 8, "A100-80GB": 8, "H100-80GB": 8, "A30-24GB": 4}
"""Memory slices per GPU."""


def slice_mask(start: int, size: int) -> int:
    """Bit mask of the memory slices ``start`` to ``start + size - 1`` (inclusive).

    >>> bin(slice_mask(4, 4))
    '0b11110000'
    """
    return ((1 << size) - 1) << start


_POPCOUNT = np.array([bin(k).count("1") for k in range(256)], dtype=np.int64)


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile: ``name``, ``compute`` slices, ``size`` in memory slices, allowed ``starts``,
    ``milli`` its compute code (module docstring) and whether the covering rule ever asks for it."""

    name: str
    compute: int
    size: int
    starts: tuple[int, ...]
    milli: int
    requestable: bool

    @cached_property
    def masks(self) -> np.ndarray:
        """(S,) int64 slice masks of the allowed starts, in start order."""
        return np.array([slice_mask(s, self.size) for s in self.starts], dtype=np.int64)

    @cached_property
    def first_start(self) -> np.ndarray:
        """(256,) int64: lowest allowed start free in a GPU of that occupancy mask, -1 if none."""
        occ = np.arange(256)[:, None]
        free = (occ & self.masks[None, :]) == 0
        return np.where(free.any(axis=1), np.array(self.starts)[free.argmax(axis=1)], -1)

    @cached_property
    def fits(self) -> np.ndarray:
        """(256,) bool: some allowed start is free in a GPU of that occupancy mask."""
        return self.first_start >= 0


@dataclass(frozen=True)
class MigModel:
    """A MIG-capable GPU model: ``n_slices`` memory slices and its profiles (smallest first)."""

    name: str
    n_slices: int
    profiles: tuple[MigProfile, ...]

    @property
    def full(self) -> MigProfile:
        """The full-GPU profile (every slice)."""
        return self.profiles[-1]

    @property
    def full_mask(self) -> int:
        return (1 << self.n_slices) - 1

    def profile_for(self, gpu_milli: int) -> MigProfile:
        """The smallest profile whose compute fraction covers ``gpu_milli`` (module docstring).

        >>> [MIG_MODELS["A100-40GB"].profile_for(m).name for m in (100, 142, 143, 500, 1000)]
        ['1g.5gb', '1g.5gb', '2g.10gb', '4g.20gb', '7g.40gb']
        """
        if not 0 < gpu_milli <= GPU_MILLI:
            raise ValueError(f"{self.name}: no MIG profile for gpu_milli={gpu_milli}")
        return next(p for p in self.profiles if p.requestable and p.milli >= gpu_milli)

    def free_slices(self, occupancy: np.ndarray) -> np.ndarray:
        """Free memory slices of GPUs with the given occupancy masks (absent GPUs: 0)."""
        return self.n_slices - _POPCOUNT[np.asarray(occupancy) & self.full_mask]


def _model(name: str) -> MigModel:
    rows = PROFILE_TABLE[name]
    max_compute = max(r[1] for r in rows)
    profiles = []
    for prof, compute, size, starts in rows:
        smaller_mem = any(c == compute and s < size for _, c, s, _ in rows)
        profiles.append(MigProfile(prof, compute, size, starts, GPU_MILLI * compute // max_compute, not smaller_mem))
    return MigModel(name, N_SLICES[name], tuple(profiles))


MIG_MODELS: dict[str, MigModel] = {name: _model(name) for name in PROFILE_TABLE}
"""Every MIG model of :data:`PROFILE_TABLE`, by model name (a node's ``model`` field)."""


def profile_codes(model: str) -> tuple[int, ...]:
    """The compute codes (``gpu_milli``) of the requestable profiles of ``model``, smallest first."""
    return tuple(p.milli for p in MIG_MODELS[model].profiles if p.requestable)


class MigLayout:
    """The MIG view of one cluster whose every node model is in :data:`MIG_MODELS` (lookup tables per model).

    Attributes
    ----------
    models : the cluster's :class:`MigModel` per ``cluster.models`` index.
    model_index : (n_nodes,) index into ``models`` of each node.
    """

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.models = tuple(MIG_MODELS[m] for m in cluster.models)
        self.model_index = cluster.model_index
        self._tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def tables(self, gpu_milli: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For per-GPU demand ``gpu_milli``: (J, 256) first free start (-1 none), (J,) size, (J,) profile milli."""
        tab = self._tables.get(gpu_milli)
        if tab is None:
            profs = [m.profile_for(gpu_milli) for m in self.models]
            tab = (np.stack([p.first_start for p in profs]), np.array([p.size for p in profs]),
                   np.array([p.milli for p in profs]))
            self._tables[gpu_milli] = tab
        return tab

    def fit(self, occupancy: np.ndarray, gpu_milli: int, nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
        """(K, G) bool: may one instance for ``gpu_milli`` start on each GPU of ``nodes`` (occupancy (K, G))?"""
        first, _, _ = self.tables(gpu_milli)
        return first[self.model_index[nodes][:, None], occupancy] >= 0

    def profile(self, node: int, gpu_milli: int) -> MigProfile:
        return self.models[self.model_index[node]].profile_for(gpu_milli)

    def free_slices(self, occupancy: np.ndarray, nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
        """(K, G) free memory slices."""
        n_slices = np.array([m.n_slices for m in self.models])[self.model_index[nodes]]
        full = (1 << n_slices) - 1
        return n_slices[:, None] - _POPCOUNT[occupancy & full[:, None]]

    def capacity_slices(self) -> int:
        """Memory slices of the whole cluster."""
        return int(sum(self.models[j].n_slices * g for j, g in zip(self.model_index, self.cluster.gpu, strict=True)))

    def task_slices(self, node: int, num_gpu: int, gpu_milli: int) -> int:
        """Memory slices a task takes on ``node`` (0 for CPU-only)."""
        return num_gpu * self.profile(node, gpu_milli).size if num_gpu else 0


def is_mig(cluster: Cluster) -> bool:
    """Whether the cluster is a MIG cluster: every node's model is in :data:`MIG_MODELS`.

    Raises
    ------
    ValueError : some but not all models are MIG models (a mixed cluster is not modelled).
    """
    flags = [m in MIG_MODELS for m in cluster.models]
    if any(flags) and not all(flags):
        raise ValueError(f"mixed MIG / non-MIG cluster: models {cluster.models}")
    return bool(flags) and all(flags)
