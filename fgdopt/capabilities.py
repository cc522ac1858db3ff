"""Capabilities of :class:`~fgdopt.state.ClusterState`: what the base feasibility rule does not know.

The base rule (docs/semantics.md "Feasibility") is plain: a task fits a node when the node's CPU (milli-cores) and
memory (MiB) left cover the task's, its GPU model is admitted by ``gpu_spec``, and ``num_gpu`` of its GPUs each have
``gpu_milli`` milli-GPU left. A *capability* changes one part of that rule, for the states that have it, through the
hooks of :class:`Capability`; a state holds a tuple of them (:func:`capabilities_for`) and consults each hook's
holders, so a new kind of resource is one new class here, not one more branch in every method of the state:

- :class:`MigSlices`: the GPU part on a MIG cluster, an instance of the task's profile at a free allowed start
  (memory slices, :mod:`fgdopt.mig.slices`) on each of its GPUs instead of milli-GPU left;
- :class:`ElasticCount`: elastic tasks, whose GPU count is the placement's (at least one), not the shape's.

Placements of several parts (:meth:`~fgdopt.state.ClusterState.place_parts`, by the task's split,
:mod:`fgdopt.splits`) -- a whole-GPU task over several nodes (form ``"span"``), a gang of ``workers > 1`` parts
(``"workers"``), an ownerless part (:meth:`~fgdopt.state.ClusterState.hold`, ``"hold"``) -- are judged part by
part by the same rule; a capability that cannot judge a form refuses it (:meth:`Capability.allows`): MIG refuses all
three, an elastic task refuses ``"workers"``.

A capability is an immutable rule shared by a state and its copies; the per-state data it needs (``slices``,
``starts_of``) it keeps on the state (:meth:`Capability.attach`, :meth:`Capability.copy_into`), as public
attributes of :class:`~fgdopt.state.ClusterState`. This module imports only :mod:`fgdopt.model` and
:mod:`fgdopt.mig.slices`, the layers below the state.
"""

from __future__ import annotations

import numpy as np

from fgdopt.mig.slices import FULL_MASK, MigLayout, is_mig
from fgdopt.model import GPU_MILLI, Cluster, Task, TaskSet

FORMS = ("span", "workers", "hold")
"""The placements of several parts or of none (module docstring) a capability may refuse."""


class Capability:
    """One change to the base rule; every hook defaults to "no change", so a capability overrides only its own.

    Every hook's ``state`` is the :class:`~fgdopt.state.ClusterState` consulting it (not annotated: this module is
    below the state and does not import it).

    Attributes
    ----------
    owns_gpus : its :meth:`gpu_fit` and :meth:`check_gpus` replace the per-GPU milli-GPU test (at most one
        capability of a state owns it). ``gpu_left`` still loses ``gpu_milli`` per GPU held, so the milli-GPU views
        stay meaningful.
    vectorized : the state's vectorized passes over plain arrays (:meth:`~fgdopt.state.ClusterState.place_many`,
        ``remove_many``, ``shapes_fit_node``, ``fits_without``, ``fits_without_each``) are exact with it on; if any
        capability says False, or has a :meth:`take` or :meth:`give_back` hook (which those passes do not call),
        they go task by task through ``place`` / ``remove`` / ``check``.
    """

    owns_gpus: bool = False
    vectorized: bool = True

    def attach(self, state) -> None:
        """Create this capability's per-state data on the new, empty ``state``."""

    def copy_into(self, state, new) -> None:
        """Copy this capability's per-state data of ``state`` to its copy ``new``."""

    def allows(self, form: str, i: int | None) -> bool:
        """Whether task ``i`` (``None``: a :meth:`~fgdopt.state.ClusterState.hold`) may be placed in ``form``
        (:data:`FORMS`)."""
        return True

    def shape(self, i: int, task: Task, n_gpus: int) -> Task | str:
        """The demand task ``i`` (shape ``task``) has when placed on ``n_gpus`` GPUs in all, or why it cannot be."""
        return task

    def gpu_fit(self, state, task: Task) -> np.ndarray:
        """(n_nodes,) bool: the GPU part of :meth:`~fgdopt.state.ClusterState.feasible_nodes` (``owns_gpus``)."""
        raise NotImplementedError

    def check_gpus(self, state, task: Task, node: int, gpus: tuple[int, ...] | None,
                   starts: tuple[int, ...] | None) -> str | None:
        """The GPU part of :meth:`~fgdopt.state.ClusterState.check` on ``node`` (``owns_gpus``): why ``task`` cannot
        take ``gpus`` (any, if None) at ``starts``, or None."""
        raise NotImplementedError

    def take(self, state, i: int, task: Task, node: int, gpus: tuple[int, ...],
             starts: tuple[int, ...] | None) -> None:
        """Record that task ``i``, of demand ``task``, was placed on ``node`` and ``gpus`` (checked already).

        Called for every part of every task placed (:meth:`~fgdopt.state.ClusterState.place`,
        ``place_parts``); a capability with this hook or :meth:`give_back` keeps what it records per task, so it
        refuses the forms of several parts (:meth:`allows`), as :class:`MigSlices` does."""

    def give_back(self, state, i: int, task: Task, node: int, gpus: tuple[int, ...]) -> None:
        """Undo :meth:`take` of task ``i`` (before the state forgets its node and GPUs)."""

    def starts(self, state) -> tuple | None:
        """:class:`~fgdopt.state.Placement` ``starts`` of every task (None: not this capability's)."""
        return None

    def starts_of_task(self, state, i: int) -> tuple[int, ...] | None:
        """The ``starts`` that place task ``i`` again exactly where it is (None: not this capability's)."""
        return None


class MigSlices(Capability):
    """The MIG slice rule (:mod:`fgdopt.mig.slices`) as the GPU part of feasibility on a MIG cluster.

    Per-state data: ``state.slices``, int64 (n_nodes, max_gpus), memory-slice occupancy mask per GPU (absent GPUs:
    all set), and ``state.starts_of``, the start slice of each task's instance on each of its GPUs. A task fits a
    GPU when an allowed start of its profile (the smallest covering ``gpu_milli``) has its slices free; ``place``
    takes the lowest such start unless ``starts`` are given. Gangs, spans and holds are not modelled on MIG.
    """

    owns_gpus = True
    vectorized = False

    def __init__(self, layout: MigLayout):
        self.layout = layout

    def attach(self, state) -> None:
        cluster = state.cluster
        gpu_ids = np.arange(cluster.max_gpus)
        state.slices = np.where(gpu_ids[None, :] < cluster.gpu[:, None], 0, FULL_MASK).astype(np.int64)
        state.starts_of = [()] * len(state.tasks)

    def copy_into(self, state, new) -> None:
        new.slices, new.starts_of = state.slices.copy(), list(state.starts_of)

    def allows(self, form: str, i: int | None) -> bool:
        return False

    def gpu_fit(self, state, task: Task) -> np.ndarray:
        return self.layout.fit(state.slices, task.gpu_milli).sum(axis=1) >= task.num_gpu

    def check_gpus(self, state, task: Task, node: int, gpus: tuple[int, ...] | None,
                   starts: tuple[int, ...] | None) -> str | None:
        """The task's profile at an allowed, free start per GPU (the lowest free one where ``starts`` is None)."""
        prof = self.layout.profile(node, task.gpu_milli)
        occ = state.slices[node]
        if gpus is None:
            if int(prof.fits[occ].sum()) >= task.num_gpu:
                return None
            return f"MIG: no {task.num_gpu} GPU(s) with a free {prof.name} start on node {node}"
        if len(gpus) != task.num_gpu or len(set(gpus)) != len(gpus):
            return f"needs {task.num_gpu} distinct GPU id(s), got {tuple(gpus)}"
        if starts is not None and len(starts) != len(gpus):
            return f"{len(gpus)} GPU(s) but {len(starts)} start slice(s)"
        for k, g in enumerate(gpus):
            if not 0 <= g < state.cluster.gpu[node]:
                return f"GPU {g} does not exist on node {node} ({int(state.cluster.gpu[node])} GPUs)"
            s = int(prof.first_start[occ[g]]) if starts is None else starts[k]
            if s not in prof.starts:
                return f"MIG: {prof.name} cannot start at slice {s} (allowed {prof.starts})" if starts is not None \
                    else f"MIG: no free {prof.name} start on GPU {g} of node {node}"
            if int(occ[g]) & int(prof.masks[prof.starts.index(s)]):
                return f"MIG: {prof.name} at slice {s} overlaps used slices {int(occ[g]):08b} of GPU {g}, node {node}"
        return None

    def take(self, state, i: int, task: Task, node: int, gpus: tuple[int, ...],
             starts: tuple[int, ...] | None) -> None:
        if not gpus:
            return
        prof = self.layout.profile(node, task.gpu_milli)
        if starts is None:
            starts = tuple(int(prof.first_start[state.slices[node, g]]) for g in gpus)
        for g, s in zip(gpus, starts, strict=True):
            state.slices[node, g] |= int(prof.masks[prof.starts.index(s)])
        state.starts_of[i] = starts

    def give_back(self, state, i: int, task: Task, node: int, gpus: tuple[int, ...]) -> None:
        if not gpus:
            return
        prof = self.layout.profile(node, task.gpu_milli)
        for g, s in zip(gpus, state.starts_of[i], strict=True):
            state.slices[node, g] &= ~int(prof.masks[prof.starts.index(s)])
        state.starts_of[i] = ()

    def starts(self, state) -> tuple:
        return tuple(state.starts_of)

    def starts_of_task(self, state, i: int) -> tuple[int, ...]:
        return state.starts_of[i]


class ElasticCount(Capability):
    """Elastic tasks: a whole-GPU task whose GPU count each placement sets (at least one), judged as its shape with
    that count; its CPU and memory are held once. ``mask`` (bool per task, read-only) marks them."""

    def __init__(self, mask: np.ndarray):
        self.mask = mask

    def allows(self, form: str, i: int | None) -> bool:
        return form != "workers" or i is None or not self.mask[i]

    def shape(self, i: int, task: Task, n_gpus: int) -> Task | str:
        if not self.mask[i]:
            return task
        if n_gpus < 1:
            return "an elastic task holds a GPU or more"
        return task._replace(num_gpu=n_gpus)


def elastic_mask(tasks: TaskSet, elastic) -> np.ndarray:
    """The read-only ``elastic`` mask of :class:`~fgdopt.state.ClusterState` (all False when None); ``ValueError``
    unless it is one bool per task and every elastic task is whole-GPU."""
    mask = np.zeros(len(tasks), dtype=bool) if elastic is None else np.array(elastic, dtype=bool)
    if mask.shape != (len(tasks),):
        raise ValueError(f"elastic mask has shape {mask.shape}, expected ({len(tasks)},)")
    if (bad := np.flatnonzero(mask & ((tasks.gpu_milli != GPU_MILLI) | (tasks.num_gpu < 1)))).size:
        raise ValueError(f"task {int(bad[0])} ({tasks.names[int(bad[0])]}): an elastic task must be whole-GPU")
    mask.setflags(write=False)
    return mask


def capabilities_for(cluster: Cluster, elastic: np.ndarray) -> tuple[Capability, ...]:
    """The capabilities of a state of ``cluster`` whose elastic tasks are ``elastic`` (:func:`elastic_mask`):
    :class:`MigSlices` on a MIG cluster, :class:`ElasticCount` when some task is elastic; empty for the plain
    rule."""
    caps: list[Capability] = []
    if is_mig(cluster):
        caps.append(MigSlices(MigLayout(cluster)))
    if elastic.any():
        caps.append(ElasticCount(elastic))
    return tuple(caps)
