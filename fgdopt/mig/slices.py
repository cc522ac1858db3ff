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
:func:`fgdopt.mig.suites.mig_instance` writes the code itself into the tasks, so the mapping is explicit.

Units: a *slice* is a memory slice; a GPU's occupancy is an 8-bit mask (bit q set = memory slice q used).

This module imports only :mod:`fgdopt.model`: :class:`~fgdopt.state.ClusterState` reads :class:`MigLayout` from it.
"""

from __future__ import annotations

import itertools
import math
import re
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
        if not self.starts:                                   # a static layout without this profile
            return np.full(256, -1, dtype=np.int64)
        occ = np.arange(256)[:, None]
        free = (occ & self.masks[None, :]) == 0
        return np.where(free.any(axis=1), np.array(self.starts)[free.argmax(axis=1)], -1)

    @cached_property
    def fits(self) -> np.ndarray:
        """(256,) bool: some allowed start is free in a GPU of that occupancy mask."""
        return self.first_start >= 0


@dataclass(frozen=True)
class MigModel:
    """A MIG-capable GPU model: ``n_slices`` memory slices and its profiles (smallest first).

    ``layout`` is ``None`` for the dynamic model (instances created on demand at any allowed free start); a static
    model (:func:`static_model_name`) holds its fixed instances as ``((profile name, start), ...)``, and each of its
    profiles allows only the starts of its own instances there; ``base`` is the hardware model's name."""

    name: str
    n_slices: int
    profiles: tuple[MigProfile, ...]
    layout: tuple[tuple[str, int], ...] | None = None
    base: str = ""

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
    return MigModel(name, N_SLICES[name], tuple(profiles), None, name)


class _Models(dict):
    """The models of :data:`PROFILE_TABLE` by name; a static-layout name (:func:`static_model_name`) is looked up
    too (``MIG_MODELS[name]``, ``name in MIG_MODELS``) without being listed (iteration gives the hardware models)."""

    def __missing__(self, name: str) -> MigModel:
        model = _static_model(name)
        if model is None:
            raise KeyError(name)
        return model

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or (isinstance(name, str) and _static_model(name) is not None)


MIG_MODELS: dict[str, MigModel] = _Models({name: _model(name) for name in PROFILE_TABLE})
"""Every MIG model of :data:`PROFILE_TABLE`, by model name (a node's ``model`` field); static-layout names resolve
too (:func:`static_model_name`)."""


# -- static layouts ------------------------------------------------------------------------------------------------
# A *static* MIG operation partitions every GPU once into fixed GPU instances; a task then takes a free instance of
# exactly its profile and nothing is ever re-laid out. It is a property of the hardware configuration, so it lives in
# the node's ``model`` string, like the GPU type: ``"A100-40GB[3g.20gb@4+2g.10gb@0+1g.5gb@2+1g.5gb@3]"`` is an
# A100-40GB whose every GPU holds those four instances (profile@start). The NVIDIA GPU Operator applies one MIG
# configuration per node (its ``nvidia.com/mig.config`` label, a config of NVIDIA/mig-parted), so one layout per node
# is the operation modelled here. Because a static model is an ordinary :class:`MigModel` whose profiles allow only
# the starts of the node's instances, the one feasibility rule (:mod:`fgdopt.state`), the MIG policies and the MIG
# evaluator apply to it unchanged.

MIG_CONFIGS: dict[str, tuple[tuple[int, int], ...]] = {
    # name: ((compute slices "g", start), ...) of the instances on every GPU; the names and instance counts are
    # those of NVIDIA/mig-parted's example configs (all-1g.5gb: 7, all-2g.10gb: 3, all-3g.20gb: 2, all-4g.20gb: 1,
    # all-7g.40gb: 1, all-balanced: 2 x 1g + 1 x 2g + 1 x 3g); the starts are fgdopt's choice (allowed, disjoint)
    "all-1g": tuple((1, s) for s in range(7)),
    "all-2g": ((2, 0), (2, 2), (2, 4)),
    "all-3g": ((3, 0), (3, 4)),
    "all-4g": ((4, 0),),
    "all-7g": ((7, 0),),
    "all-balanced": ((3, 4), (2, 0), (1, 2), (1, 3)),
}
"""Named per-GPU layouts of the 8-slice models (A100-40GB, A100-80GB, H100-80GB), by compute slices and start."""

_STATIC = re.compile(r"^(?P<base>[^\[\]]+)\[(?P<layout>[^\[\]]*)\]$")
_STATIC_CACHE: dict[str, MigModel | None] = {}


def static_model_name(model: str, layout) -> str:
    """The node model of ``model`` statically partitioned into ``layout``: a :data:`MIG_CONFIGS` name or
    ``((profile name, start), ...)``.

    >>> static_model_name("A100-40GB", "all-balanced")
    'A100-40GB[3g.20gb@4+2g.10gb@0+1g.5gb@2+1g.5gb@3]'
    """
    base = MIG_MODELS[model]
    if isinstance(layout, str):
        if base.n_slices != 8 or layout not in MIG_CONFIGS:
            raise ValueError(f"no MIG config {layout!r} for {model} (configs of 8-slice models: {sorted(MIG_CONFIGS)})")
        by_compute = {p.compute: p.name for p in base.profiles if p.requestable}
        layout = tuple((by_compute[c], s) for c, s in MIG_CONFIGS[layout])
    name = f"{model}[{'+'.join(f'{p}@{int(s)}' for p, s in layout)}]"
    if _static_model(name) is None:
        raise ValueError(f"{name}: not a valid static layout (profiles of {model}, allowed starts, disjoint slices)")
    return name


def _static_model(name: str) -> MigModel | None:
    """The static model named ``name`` (:func:`static_model_name`), or None if it is not a valid one."""
    if name in _STATIC_CACHE:
        return _STATIC_CACHE[name]
    model = None
    match = _STATIC.match(name)
    if match and match["base"] in PROFILE_TABLE and match["layout"]:
        base = dict.__getitem__(MIG_MODELS, match["base"])
        by_name = {p.name: p for p in base.profiles}
        try:
            layout = tuple((p, int(s)) for p, s in (item.split("@") for item in match["layout"].split("+")))
        except ValueError:
            layout = None
        used, ok = 0, layout is not None
        for prof, start in layout or ():
            p = by_name.get(prof)
            if p is None or start not in p.starts or used & slice_mask(start, p.size):
                ok = False
                break
            used |= slice_mask(start, p.size)
        if ok:
            profiles = tuple(MigProfile(p.name, p.compute, p.size, tuple(sorted(s for q, s in layout if q == p.name)),
                                        p.milli, p.requestable) for p in base.profiles)
            model = MigModel(name, base.n_slices, profiles, layout, base.name)
    _STATIC_CACHE[name] = model
    return model


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


# -- the exact one-GPU re-layout ---------------------------------------------------------------------------------

def _pack(items: list[MigProfile], used: int) -> bool:
    """Whether the instances ``items`` fit, each at an allowed start, into the slices free in ``used``."""
    if not items:
        return True
    first, rest = items[0], items[1:]
    return any(not used & mask and _pack(rest, used | mask) for mask in first.masks.tolist())


def relayouts(model: MigModel, tenants: list[tuple[MigProfile, int]], profile: MigProfile) -> tuple[int, list]:
    """The re-layouts of one GPU of ``model`` holding its ``tenants`` ((profile, start) each) and one more instance of
    ``profile`` that move the fewest tenants: (that number, [(start of the new instance, moved tenant indices), ...]);
    (-1, []) if no layout holds them all. 0 moved means the instance fits in place.

    Examples
    --------
    >>> from fgdopt.mig.slices import MIG_MODELS
    >>> a100 = MIG_MODELS["A100-40GB"]
    >>> one_g, three_g = a100.profiles[0], a100.profiles[3]
    >>> relayouts(a100, [(one_g, 1), (one_g, 5)], three_g)     # 1g at 1 and 5: move one of them
    (1, [(0, (0,)), (4, (1,))])
    """
    masks = [slice_mask(s, p.size) for p, s in tenants]
    if sum(p.size for p, _ in tenants) + profile.size > model.n_slices:
        return -1, []
    best, options = math.inf, []
    for start, new in zip(profile.starts, profile.masks.tolist(), strict=True):
        forced = [i for i, m in enumerate(masks) if m & new]
        rest = [i for i in range(len(tenants)) if i not in forced]
        for k in range(len(rest) + 1):
            if len(forced) + k > best:
                break
            hits = []
            for extra in itertools.combinations(rest, k):
                moved = (*forced, *extra)
                stay = 0
                for i, m in enumerate(masks):
                    if i not in moved:
                        stay |= m
                items = sorted((tenants[i][0] for i in moved), key=lambda p: -p.size)
                if _pack(items, stay | new):
                    hits.append((start, tuple(sorted(moved))))
            if hits:
                if len(forced) + k < best:
                    best, options = len(forced) + k, []
                options.extend(hits)
                break
    return (int(best), options) if options else (-1, [])
