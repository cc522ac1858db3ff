"""The mutable allocation state and docs/semantics.md "Feasibility" — the single source of truth.

Everything that asks "does this task fit there?" calls :func:`gpu_fits` (the GPU part, vectorized)
or :meth:`ClusterState.feasible_nodes` / :meth:`ClusterState.check` (the whole rule); everything that
changes the state calls :meth:`ClusterState.place` (one part) / :meth:`ClusterState.place_parts` (several) /
:meth:`ClusterState.remove`, or their bulk forms :meth:`ClusterState.place_many` / :meth:`ClusterState.remove_many`;
:func:`validate` re-checks a finished placement from scratch by replaying it through them.

**Parts.** A placed task is a tuple of parts ``((node, gpus), ...)`` (``parts_of[i]``), each holding
``(cpu_milli, memory_mib)`` on its node (``demand_of[i]``, one pair per part) and the task's ``gpu_milli`` on each of
its GPUs; a task on one node is a one-part tuple. ``node_of[i]`` and ``gpus_of[i]`` are its first part (the arrays
the hot paths and the policies read). Placing, removing, the bulk moves, :meth:`ClusterState.held_demand` and
:meth:`ClusterState.held_milli` have one code path over parts: each part is judged by the one rule on the state with
the earlier parts placed, then takes (gives back) its CPU, memory and GPUs on its node, then the capabilities'
``take`` (``give_back``) hooks. What is specific to a form of task is its *split* (:mod:`fgdopt.splits`): how many
parts, which demand each holds, whether they may share a node, how far ``revision`` advances -- ``SPAN`` (one part,
or a whole-GPU task over distinct nodes of one GPU model, its CPU and memory on the first part: one step) and
``WORKERS`` (a *gang* of ``workers > 1`` identical parts, nodes may repeat: one step per part).
:meth:`ClusterState.parts_fit` asks a split whether a task fits now in some parts.

The rule here is the plain one (CPU milli-cores and memory MiB per node, milli-GPU per GPU); what changes it -- MIG
slices, elastic GPU counts (an *elastic* task, whose GPU count a scheduler chooses at each placement, is judged as
its shape with that count) -- is a *capability* (:mod:`fgdopt.capabilities`) that every method consults through one
small hook interface, so a new kind of resource is a new capability, not a branch in each method; a capability may
refuse a split's form (MIG refuses both multi-part forms).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from fgdopt.capabilities import Capability, MigSlices, capabilities_for, elastic_mask
from fgdopt.model import GPU_MILLI, Cluster, Task, TaskSet, spec_allows
from fgdopt.splits import split_of

UNPLACED = -1


def gpu_fits(gpu_left: np.ndarray, num_gpu, gpu_milli) -> np.ndarray:
    """Whether GPU demand ``num_gpu x gpu_milli`` fits the per-GPU free capacity ``gpu_left``.

    ``gpu_left`` has the GPUs on its last axis (milli-GPU; absent GPUs padded with 0). A sharing
    demand (``num_gpu=1, gpu_milli<1000``) needs one GPU with ``gpu_left >= gpu_milli``; a whole-GPU
    demand needs ``num_gpu`` GPUs with ``gpu_left == 1000``; a CPU-only demand always fits. All three
    are ``count(gpu_left >= gpu_milli) >= num_gpu``, which broadcasts over shapes and nodes.
    """
    if type(num_gpu) is int and num_gpu == 1:       # one GPU (a task's, not an array of them): some GPU fits
        return (gpu_left >= gpu_milli).any(axis=-1)
    return (gpu_left >= gpu_milli).sum(axis=-1) >= num_gpu


def fitting_gpus(gpu_left_row: np.ndarray, gpu_milli: int) -> np.ndarray:
    """Ids of the GPUs of one node that can take ``gpu_milli`` more (ascending)."""
    return (gpu_left_row >= gpu_milli).nonzero()[0]


def _add_milli(row: np.ndarray, gpus: tuple[int, ...], milli: int) -> None:
    """Add ``milli`` (milli-GPU; negative: take) to the GPUs ``gpus`` (distinct ids) of one node's row of
    ``gpu_left``, in place: a loop, cheaper than a fancy index for the few GPUs of one task."""
    for g in gpus:
        row[g] += milli


class InfeasiblePlacement(ValueError):
    """A placement that breaks docs/semantics.md "Feasibility"; the message names the task and the reason."""


@dataclass(frozen=True, eq=False)
class Placement:
    """Where every task went: ``node[i]`` (``-1`` = unallocated) and ``gpus[i]`` (GPU ids on it).

    On a MIG cluster (:mod:`fgdopt.mig.slices`) ``starts[i]`` holds the start memory slice of the task's instance on
    each of ``gpus[i]``; ``None`` (the default, and always on other clusters) lets :meth:`ClusterState.place`
    take the lowest free allowed start. ``spans[i]``, when not empty, holds the ``((node, gpus), ...)`` of a task
    placed in several parts (:meth:`ClusterState.place_parts`: over several nodes, or a gang's parts, one per
    worker); ``node[i]`` and ``gpus[i]`` are its first part; ``None`` (the default) when no task is. ``demands[i]``,
    when not empty, holds the ``((cpu_milli, memory_mib), ...)`` the task holds on each of its parts' nodes where
    that is not its split's (chosen at its placement, :attr:`ClusterState.demand_of`); ``None`` (the default) when
    no task has one (each holds its split's)."""

    node: np.ndarray
    gpus: tuple[tuple[int, ...], ...]
    starts: tuple[tuple[int, ...], ...] | None = None
    spans: tuple | None = None
    demands: tuple | None = None

    def __post_init__(self) -> None:
        node = np.array(self.node, dtype=np.int64)
        node.setflags(write=False)
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "gpus", tuple(tuple(int(g) for g in gs) for gs in self.gpus))
        if self.starts is not None:
            object.__setattr__(self, "starts", tuple(tuple(int(s) for s in ss) for ss in self.starts))
            if len(self.starts) != len(node):
                raise ValueError(f"placement has {len(node)} nodes but {len(self.starts)} start lists")
        if len(self.gpus) != len(node):
            raise ValueError(f"placement has {len(node)} nodes but {len(self.gpus)} GPU lists")
        if self.spans is not None and len(self.spans) != len(node):
            raise ValueError(f"placement has {len(node)} nodes but {len(self.spans)} span lists")
        if self.demands is not None and len(self.demands) != len(node):
            raise ValueError(f"placement has {len(node)} nodes but {len(self.demands)} demand lists")

    @classmethod
    def empty(cls, n_tasks: int) -> Placement:
        return cls(np.full(n_tasks, UNPLACED), ((),) * n_tasks)

    @property
    def placed(self) -> np.ndarray:
        """Boolean mask of the allocated tasks."""
        return self.node != UNPLACED

    def allocated_milli(self, tasks: TaskSet) -> int:
        """Allocated GPU demand in milli-GPU."""
        return int(tasks.gpu_demand[self.placed].sum())

    def to_records(self) -> list[dict]:
        return [{"node": int(n), "gpus": list(g)} for n, g in zip(self.node, self.gpus, strict=True)]


class ClusterState:
    """Free capacity of every node and the placement of every task of ``tasks``.

    Attributes
    ----------
    cpu_left : int64 (n_nodes,), free CPU in milli-cores.
    mem_left : int64 (n_nodes,), free memory in MiB.
    gpu_left : int64 (n_nodes, max_gpus), free milli-GPU per GPU; absent GPUs are padded with 0,
        so they never fit a demand and add nothing to a sum.
    node_of : int64 (n_tasks,), node of each task's first part or -1.
    gpus_of : list of tuples, GPU ids of each task's first part.
    parts_of : list, each task's ``((node, gpus), ...)``, one per part (``()``: not placed; module docstring).
        :meth:`parts` reads it.

    **Gangs.** A task of ``workers > 1`` (:class:`~fgdopt.model.Task`) is placed by :meth:`place_parts`: each part
    takes the task's CPU, memory and GPUs on its node, exactly as a task of that shape placed there would, so every
    view of the state (free capacity per node and GPU, and the fragmentation evaluator :mod:`fgdopt.frag`, which
    reads only those) sees each part as one task on its node. :meth:`remove` frees all parts at once.
    :meth:`part_counts` counts the parts each node could take now, :meth:`parts_fit` whether the gang fits.
    elastic : bool (n_tasks,), read-only: the *elastic* tasks (default none). An elastic task is whole-GPU; its
        shape's ``num_gpu`` is not a count it must hold: each :meth:`place` / :meth:`place_parts` places it on the
        number of GPUs given (at least one; its CPU and memory once, on the first node), judged by the one rule as
        its shape with that count (an elastic job's allocation, which a scheduler changes by removing the task and
        placing it again). :meth:`held_milli` is what a task holds.
    demand_of : list, each task's ``((cpu_milli, memory_mib), ...)``, one per part (``()``: not placed): its
        split's (:meth:`fgdopt.splits.Split.held`), or the demand chosen at placement (``demand=`` of
        :meth:`place`, ``demands=`` of :meth:`place_parts`): such a task holds those amounts of CPU (milli-cores) and
        memory (MiB) on its parts' nodes instead of its shape's (a
        scheduler that sizes each job's CPU and memory per round, Synergy's, :mod:`fgdopt.synergy.rounds`); each is
        judged by the one rule and :meth:`remove` gives them back. :meth:`held_demand` is what any task holds. A
        :class:`Placement` records them (``demands``), and :func:`validate` replays them.
    revision : how many steps :meth:`place` / :meth:`place_parts` / :meth:`remove` changed the state by (one per
        placement or removal, one per part for a gang: :meth:`revision_steps`); ``last_node`` the node the latest
        change touched (-1 before any; a gang's last part, a span's first). Caches use them to see what changed since
        they looked.
    capabilities : tuple of :class:`~fgdopt.capabilities.Capability`, the changes to the base rule this state
        makes (:func:`~fgdopt.capabilities.capabilities_for`; empty for the plain rule). Every method consults
        them through their hooks: the GPU part of the rule (``owns_gpus``), the demand of a task at a placement
        (``shape``), what a placement takes and gives back, which forms of placement are allowed.
    mig : :class:`~fgdopt.mig.slices.MigLayout` on a MIG cluster (every model MIG), else ``None``. Only then
        (:class:`~fgdopt.capabilities.MigSlices`):
    slices : int64 (n_nodes, max_gpus), memory-slice occupancy mask per GPU (absent GPUs: all set);
    starts_of : list of tuples, start slice of each task's instance on each of its GPUs. On a MIG node the
        GPU part of feasibility is the slice rule (an allowed start of the task's profile whose slices
        are free, :mod:`fgdopt.mig.slices`) instead of ``gpu_left >= gpu_milli``; ``gpu_left`` still loses
        ``gpu_milli`` (the profile's compute code) per GPU, so the milli-GPU views stay meaningful.

    Examples
    --------
    Two T4 nodes; a task of two whole GPUs fits only node 0, a half-GPU task goes to GPU 0 of node 1.

    >>> from fgdopt.model import Cluster, TaskSet
    >>> cluster = Cluster([32000, 16000], [65536, 65536], [2, 1], ["T4", "T4"])
    >>> tasks = TaskSet([8000, 4000], [2048, 1024], [2, 1], [1000, 500])
    >>> state = ClusterState(cluster, tasks)
    >>> state.feasible_nodes(tasks[0]).tolist()
    [True, False]
    >>> state.place(0, 0, (0, 1))
    >>> state.place(1, 1, (0,))
    >>> state.gpu_left.tolist(), state.cpu_left.tolist(), state.allocated_milli    # milli-GPU, milli-cores
    ([[0, 0], [500, 0]], [24000, 12000], 2500)
    """

    def __init__(self, cluster: Cluster, tasks: TaskSet, elastic: np.ndarray | None = None):
        self.cluster = cluster
        self.tasks = tasks
        self.elastic = elastic_mask(tasks, elastic)
        self.cpu_left = cluster.cpu_milli.copy()
        self.mem_left = cluster.memory_mib.copy()
        gpu_ids = np.arange(cluster.max_gpus)
        self.gpu_left = np.where(gpu_ids[None, :] < cluster.gpu[:, None], GPU_MILLI, 0).astype(np.int64)
        self.node_of = np.full(len(tasks), UNPLACED, dtype=np.int64)
        self.gpus_of: list[tuple[int, ...]] = [()] * len(tasks)
        self.parts_of: list[tuple[tuple[int, tuple[int, ...]], ...]] = [()] * len(tasks)
        self.demand_of: list[tuple[tuple[int, int], ...]] = [()] * len(tasks)
        self._split_of = [split_of(w) for w in tasks.workers.tolist()]
        self._per_part = np.array([s.each_part_revises for s in self._split_of], dtype=bool)
        self.revision = 0
        self.last_node = UNPLACED
        self._spec_masks: dict[str, np.ndarray] = {}
        self._use(capabilities_for(cluster, self.elastic))
        for cap in self.capabilities:
            cap.attach(self)

    def _use(self, caps: tuple[Capability, ...]) -> None:
        """Hold ``caps`` and, per hook, those that change it (so the plain rule consults none)."""
        self.capabilities = caps
        owners = [c for c in caps if c.owns_gpus]
        if len(owners) > 1:
            raise ValueError(f"two capabilities own the GPU rule: {owners}")
        self._gpu_rule: Capability | None = owners[0] if owners else None
        self.mig = next((c.layout for c in caps if isinstance(c, MigSlices)), None)
        self._shapers = tuple(c for c in caps if type(c).shape is not Capability.shape)
        self._takers = tuple(c for c in caps if type(c).take is not Capability.take)
        self._givers = tuple(c for c in caps if type(c).give_back is not Capability.give_back)
        self._vectorized = all(c.vectorized for c in caps) and not self._takers and not self._givers

    def _allows(self, form: str, i: int | None) -> bool:
        """Whether every capability allows task ``i`` in ``form`` (:data:`fgdopt.capabilities.FORMS`)."""
        return all(c.allows(form, i) for c in self.capabilities)

    def _starts_of_task(self, i: int) -> tuple[int, ...] | None:
        """The ``starts`` that place task ``i`` again exactly where it is (None: the lowest free, or no slices)."""
        return None if self._gpu_rule is None else self._gpu_rule.starts_of_task(self, i)

    def _shape(self, i: int, task: Task, n_gpus: int) -> Task | str:
        """The demand of task ``i`` (shape ``task``) placed on ``n_gpus`` GPUs in all, or why it cannot be."""
        for cap in self._shapers:
            task = cap.shape(i, task, n_gpus)
            if isinstance(task, str):
                break
        return task

    # -- feasibility -------------------------------------------------------------------------
    def spec_mask(self, gpu_spec: str) -> np.ndarray:
        """Boolean mask of the nodes whose GPU model ``gpu_spec`` admits (cached per spec)."""
        mask = self._spec_masks.get(gpu_spec)
        if mask is None:
            mask = np.array([spec_allows(gpu_spec, m) for m in self.cluster.model], dtype=bool)
            mask.setflags(write=False)
            self._spec_masks[gpu_spec] = mask
        return mask

    def feasible_nodes(self, task: Task) -> np.ndarray:
        """Boolean mask of the nodes where ``task`` fits now (docs/semantics.md "Feasibility")."""
        ok = (self.cpu_left >= task.cpu_milli) & (self.mem_left >= task.memory_mib)
        if task.num_gpu:
            ok &= self.spec_mask(task.gpu_spec)
            if self._gpu_rule is None:
                ok &= gpu_fits(self.gpu_left, task.num_gpu, task.gpu_milli)
            else:
                ok &= self._gpu_rule.gpu_fit(self, task)
        return ok

    def shapes_fit_node(self, shapes: TaskSet, rows: np.ndarray, node: int) -> np.ndarray:
        """Boolean mask: does each task ``shapes[rows]`` fit ``node`` now (the rule of :meth:`feasible_nodes`,
        vectorized over tasks instead of nodes)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not self._vectorized:
            return np.array([self.fits(shapes[int(r)], node) for r in rows], dtype=bool)
        num_gpu = shapes.num_gpu[rows]
        ok = (self.cpu_left[node] >= shapes.cpu_milli[rows]) & (self.mem_left[node] >= shapes.memory_mib[rows])
        ok &= gpu_fits(self.gpu_left[node][None, :], num_gpu, shapes.gpu_milli[rows][:, None])
        model = self.cluster.model[node]
        specs = shapes.gpu_spec[rows]
        return ok & ((num_gpu == 0) | np.array([spec_allows(s, model) for s in specs], dtype=bool))

    def fits_without(self, task: Task, node: int, victims) -> bool:
        """Whether ``task`` would fit ``node`` if the placed tasks ``victims`` (all on ``node``) left it: the rule of
        :meth:`check` on the node's free capacity plus theirs (the state is not changed)."""
        victims = [int(v) for v in victims]
        if not self._vectorized:                                   # remove, ask, put back exactly
            saved = [(v, self.gpus_of[v], self._starts_of_task(v)) for v in victims]
            for v in victims:
                self.remove(v)
            ok = self.fits(task, node)
            for v, gpus, starts in saved:
                self.place(v, node, gpus, starts)
            return ok
        tasks = self.tasks
        cpu, mem = self._held(victims)
        if self.cpu_left[node] + cpu.sum() < task.cpu_milli:
            return False
        if self.mem_left[node] + mem.sum() < task.memory_mib:
            return False
        if task.num_gpu == 0:
            return True
        if not self.spec_mask(task.gpu_spec)[node]:
            return False
        row = self.gpu_left[node].copy()
        for v in victims:
            row[list(self.gpus_of[v])] += tasks.gpu_milli[v]
        return bool(gpu_fits(row, task.num_gpu, task.gpu_milli))

    def fits_without_each(self, task: Task, victims) -> np.ndarray:
        """For every placed task ``v`` of ``victims``: whether ``task`` would fit ``v``'s node if ``v`` alone left
        it, i.e. ``fits_without(task, node_of[v], [v])`` for all of them at once (bool array; the same rule)."""
        victims = np.asarray(victims, dtype=np.int64)
        if not self._vectorized:
            return np.array([self.fits_without(task, int(self.node_of[v]), [v]) for v in victims.tolist()], dtype=bool)
        tasks = self.tasks
        nodes = self.node_of[victims]
        cpu, mem = self._held(victims)
        ok = (self.cpu_left[nodes] + cpu >= task.cpu_milli) & (self.mem_left[nodes] + mem >= task.memory_mib)
        if task.num_gpu == 0:
            return ok
        ok &= self.spec_mask(task.gpu_spec)[nodes]
        left = np.flatnonzero(ok)                                  # the GPU rule where CPU and memory fit
        gpus = [self.gpus_of[v] for v in victims[left].tolist()]
        count = np.fromiter(map(len, gpus), dtype=np.int64, count=len(gpus))
        rows = self.gpu_left[nodes[left]]                          # a copy (fancy indexing): each victim's GPUs back
        np.add.at(rows, (np.repeat(np.arange(len(left)), count),
                         np.fromiter(itertools.chain.from_iterable(gpus), dtype=np.int64, count=int(count.sum()))),
                  np.repeat(tasks.gpu_milli[victims[left]], count))
        ok[left] = gpu_fits(rows, task.num_gpu, task.gpu_milli)
        return ok

    def fits(self, task: Task, node: int) -> bool:
        """Whether ``task`` fits ``node`` now (some choice of GPUs exists)."""
        return self.check(task, node) is None

    def check(self, task: Task, node: int, gpus: tuple[int, ...] | None = None,
              starts: tuple[int, ...] | None = None) -> str | None:
        """Why ``task`` cannot go to ``node`` (on ``gpus`` if given; MIG: at ``starts`` if given), or ``None``."""
        if not 0 <= node < self.cluster.n_nodes:
            return f"node {node} does not exist"
        if self.cpu_left[node] < task.cpu_milli:
            return f"CPU: {task.cpu_milli} milli-cores asked, {int(self.cpu_left[node])} left on node {node}"
        if self.mem_left[node] < task.memory_mib:
            return f"memory: {task.memory_mib} MiB asked, {int(self.mem_left[node])} left on node {node}"
        if task.num_gpu == 0:
            return None if not gpus else "a CPU-only task takes no GPU"
        if not self.spec_mask(task.gpu_spec)[node]:
            return f"GPU model {self.cluster.model[node]!r} not in gpu_spec {task.gpu_spec!r}"
        if self._gpu_rule is not None:
            return self._gpu_rule.check_gpus(self, task, node, gpus, starts)
        row = self.gpu_left[node]
        if gpus is None:
            if gpu_fits(row, task.num_gpu, task.gpu_milli):
                return None
            return f"GPU: no {task.num_gpu} GPU(s) with {task.gpu_milli} milli free on node {node}"
        if len(gpus) != task.num_gpu or len(set(gpus)) != len(gpus):
            return f"needs {task.num_gpu} distinct GPU id(s), got {tuple(gpus)}"
        for g in gpus:
            if not 0 <= g < self.cluster.gpu[node]:
                return f"GPU {g} does not exist on node {node} ({int(self.cluster.gpu[node])} GPUs)"
            if row[g] < task.gpu_milli:
                return f"GPU {g} of node {node} has {int(row[g])} milli left, {task.gpu_milli} asked"
        return None

    # -- mutation ----------------------------------------------------------------------------
    def place(self, i: int, node: int, gpus: tuple[int, ...], starts: tuple[int, ...] | None = None, *,
              demand: tuple[int, int] | None = None) -> None:
        """Place task ``i`` in one part, on ``node`` using GPUs ``gpus`` (MIG: at ``starts``, default the lowest free
        allowed start on each GPU); raises :class:`InfeasiblePlacement`. ``demand``: the ``(cpu_milli, memory_mib)``
        it holds instead of its shape's, judged by the same rule. The one-part case of :meth:`place_parts`, without
        its split (the hot path of every run)."""
        if self.node_of[i] != UNPLACED:
            raise InfeasiblePlacement(f"task {i} is already placed on node {int(self.node_of[i])}")
        task = self.tasks[i]
        if task.workers != 1:
            raise InfeasiblePlacement(f"task {i} ({self.tasks.names[i]}) is a gang of {task.workers} workers: it is "
                                      "placed by place_parts")
        gpus = tuple(map(int, gpus))
        if self._shapers and isinstance(task := self._shape(i, task, len(gpus)), str):   # e.g. elastic: count = len
            raise InfeasiblePlacement(f"task {i} ({self.tasks.names[i]}): {task}")
        if demand is not None:
            demand = _chosen(i, demand)
            task = task._replace(cpu_milli=demand[0], memory_mib=demand[1])
        if starts is not None:
            if self._gpu_rule is None and starts:
                raise InfeasiblePlacement(f"task {i} ({self.tasks.names[i]}): start slices on a non-MIG cluster")
            starts = tuple(int(s) for s in starts)
        reason = self.check(task, node, gpus, starts)
        if reason is not None:
            raise InfeasiblePlacement(f"task {i} ({self.tasks.names[i]}): {reason}")
        self._take_part(i, task, node, gpus, starts)
        self.node_of[i] = node                      # _record of one part, inline (the hot path): one revision step
        self.gpus_of[i] = gpus
        self.parts_of[i] = ((int(node), gpus),)
        self.demand_of[i] = ((task.cpu_milli, task.memory_mib),)
        self.revision += 1
        self.last_node = node

    def place_parts(self, i: int, parts, *, demands=None) -> None:
        """Place task ``i`` in the parts ``((node, gpus), ...)``, as its split says (module docstring): a gang
        (``workers > 1``) one part per worker, nodes may repeat, each the task's :attr:`~fgdopt.model.Task.part`; any
        other task over distinct nodes of one GPU model, whole GPUs only, ``num_gpu`` GPUs in all, its CPU and memory
        on the first part's node. ``demands``: one ``(cpu_milli, memory_mib)`` per part, held instead of the split's.

        Each part is judged by the one rule (:meth:`check`) on the state with the earlier parts placed. All parts are
        placed, or none (raises :class:`InfeasiblePlacement` naming the part and the reason, the state unchanged);
        :meth:`remove` takes them all away. ``revision`` and ``last_node`` advance as the split says."""
        parts = tuple((int(node), tuple(int(g) for g in gpus)) for node, gpus in parts)
        name = f"task {i} ({self.tasks.names[i]})"
        if demands is not None:
            demands = tuple(_chosen(i, d) for d in demands)
            if len(demands) != len(parts):
                raise InfeasiblePlacement(f"{name}: {len(demands)} demand(s) for {len(parts)} part(s)")
        if self.node_of[i] != UNPLACED:
            raise InfeasiblePlacement(f"task {i} is already placed on node {int(self.node_of[i])}")
        pieces = self._split_of[i].pieces(self, i, parts, demands)
        if isinstance(pieces, str):
            raise InfeasiblePlacement(f"{name}: {pieces}")
        for k, ((node, gpus), piece) in enumerate(zip(parts, pieces, strict=True)):
            if (reason := self.check(piece, node, gpus)) is not None:
                for (back, gpus_back), held in zip(parts[:k], pieces[:k], strict=True):
                    self._give_part(i, held.gpu_milli, back, gpus_back, (held.cpu_milli, held.memory_mib))
                raise InfeasiblePlacement(f"{name}, part {k}: {reason}")
            self._take_part(i, piece, node, gpus, None)
        self._record(i, parts, tuple((piece.cpu_milli, piece.memory_mib) for piece in pieces))

    def _take_part(self, i: int, piece: Task, node: int, gpus: tuple[int, ...], starts) -> None:
        """Take one part of task ``i``, of demand ``piece``, on ``node`` and ``gpus`` (checked already), after the
        capabilities' :meth:`~fgdopt.capabilities.Capability.take`."""
        for cap in self._takers:
            cap.take(self, i, piece, node, gpus, starts)
        self.cpu_left[node] -= piece.cpu_milli
        self.mem_left[node] -= piece.memory_mib
        if gpus:
            _add_milli(self.gpu_left[node], gpus, -piece.gpu_milli)

    def _give_part(self, i: int, milli: int, node: int, gpus: tuple[int, ...], held: tuple[int, int]) -> None:
        """Give back one part of task ``i``: ``held`` CPU and memory on ``node``, ``milli`` on each of ``gpus``, then
        the capabilities' :meth:`~fgdopt.capabilities.Capability.give_back`."""
        self.cpu_left[node] += held[0]
        self.mem_left[node] += held[1]
        if gpus:
            _add_milli(self.gpu_left[node], gpus, milli)
        for cap in self._givers:
            cap.give_back(self, i, self.tasks[i], node, gpus)

    def _record(self, i: int, parts: tuple, held: tuple) -> None:
        """Task ``i`` now holds ``parts`` with ``held`` CPU and memory each; ``revision`` and ``last_node`` advance
        (:meth:`_advance`)."""
        self.node_of[i], self.gpus_of[i] = parts[0]
        self.parts_of[i] = parts
        self.demand_of[i] = held
        self._advance(i, parts)

    def revision_steps(self, ids: np.ndarray) -> np.ndarray:
        """How far ``revision`` advances when each placed task of ``ids`` (int64) is removed (as it did at its
        placement): one step per part for a gang, else one (:attr:`~fgdopt.splits.Split.each_part_revises`); int64."""
        parts_of = self.parts_of
        return self._steps(ids, np.fromiter((len(parts_of[i]) for i in ids.tolist()), np.int64, len(ids)))

    def _steps(self, ids, n_parts):
        """:meth:`revision_steps` of tasks ``ids`` placed in ``n_parts`` parts each (vectorized)."""
        return np.where(self._per_part[ids], n_parts, 1)

    def _advance(self, i: int, parts: tuple) -> None:
        """``revision`` and ``last_node`` after task ``i`` in ``parts`` was placed or removed: one step per part its
        split counts (:attr:`Split.each_part_revises`; the first part only, else)."""
        steps = parts if self._split_of[i].each_part_revises else parts[:1]
        self.revision += len(steps)
        self.last_node = steps[-1][0]

    def hold(self, part: Task, node: int, gpus: tuple[int, ...]) -> None:
        """Take the demand of ``part`` (a task with ``workers == 1``) on ``node`` and ``gpus``, owned by no task:
        a gang's earlier parts while its later ones are chosen (:func:`fgdopt.policies.gang.choose_parts`; every hold
        is given back by :meth:`release` before the gang is placed), or a failed node or GPU while it is out of
        service (:meth:`fgdopt.timeline.placement.Placer.take_out`). Judged by the one rule (raises
        :class:`InfeasiblePlacement`). ``revision`` advances and ``last_node`` is ``node``, as for :meth:`place`."""
        gpus = tuple(int(g) for g in gpus)
        if part.workers != 1 or not self._allows("hold", None):
            raise InfeasiblePlacement("hold takes one part (workers == 1) on a non-MIG cluster")
        if (reason := self.check(part, node, gpus)) is not None:
            raise InfeasiblePlacement(f"part on node {node}: {reason}")
        self._take_part(-1, part, node, gpus, None)             # owned by no task (-1): no capability takes
        self.revision += 1
        self.last_node = node

    def release(self, part: Task, node: int, gpus: tuple[int, ...]) -> None:
        """Give back a :meth:`hold` (the same ``part``, ``node`` and ``gpus``)."""
        self._give_part(-1, part.gpu_milli, node, tuple(int(g) for g in gpus), (part.cpu_milli, part.memory_mib))
        self.revision += 1
        self.last_node = node

    def part_counts(self, task: Task) -> np.ndarray:
        """How many parts of ``task`` (each its CPU, memory and ``num_gpu x gpu_milli``) every node could take now,
        together, capped at ``task.workers`` (int64 per node).

        Identical parts on one node need ``k x cpu_milli`` CPU and ``k x memory_mib`` memory; a whole-GPU part
        takes ``num_gpu`` free GPUs, so ``k`` of them need ``k x num_gpu`` free GPUs; a sharing part takes
        ``gpu_milli`` of one GPU, so GPU ``g`` holds ``floor(gpu_left[g] / gpu_milli)`` of them. The count is the
        least of these, 0 where ``gpu_spec`` excludes the node's model. Placing one part on a node lowers its count by
        exactly one, so the parts can be placed one by one (any feasible node each time) iff the counts sum to at
        least ``workers`` (:meth:`parts_fit` of a gang)."""
        if not self._allows("workers", None):
            raise ValueError("gangs are not supported on a MIG cluster")
        count = np.full(self.cluster.n_nodes, task.workers, dtype=np.int64)
        if task.cpu_milli:
            np.minimum(count, self.cpu_left // task.cpu_milli, out=count)
        if task.memory_mib:
            np.minimum(count, self.mem_left // task.memory_mib, out=count)
        if task.num_gpu:
            np.minimum(count, (self.gpu_left // task.gpu_milli).sum(axis=1) // task.num_gpu, out=count)
            count[~self.spec_mask(task.gpu_spec)] = 0
        return count

    def parts_fit(self, task: Task) -> bool:
        """Whether ``task`` fits now in the parts its split allows (:meth:`place_parts`): a gang's ``workers`` parts
        together (:meth:`part_counts`); any other task on one node, or, whole-GPU, over several nodes of one GPU
        model (its CPU and memory on one of them, ``num_gpu`` free GPUs on them in all)."""
        return split_of(task.workers).fits(self, task)

    def held_milli(self, i: int) -> int:
        """Milli-GPU task ``i`` holds now (0: not placed): ``gpu_milli`` on each GPU of each of its parts (its shape's
        GPU demand, or, for an elastic task, its GPUs')."""
        return int(self.tasks.gpu_milli[i]) * sum(len(gpus) for _, gpus in self.parts_of[i])

    def parts(self, i: int) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """Where task ``i`` is: ``((node, gpus), ...)``, one per part (empty: not placed)."""
        return self.parts_of[i]

    def held_demand(self, i: int) -> tuple[tuple[int, int], ...]:
        """The ``(cpu_milli, memory_mib)`` task ``i`` holds on each of its parts' nodes (:meth:`parts`; empty: not
        placed): the demand chosen at its placement, else its split's (module docstring)."""
        return self.demand_of[i]

    def _held(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """CPU (milli-cores) and memory (MiB) each placed task of ``ids`` holds on its first node (int64 arrays)."""
        demand_of = self.demand_of
        first = [demand_of[i][0] for i in ids]
        return (np.fromiter((c for c, _ in first), np.int64, len(first)),
                np.fromiter((m for _, m in first), np.int64, len(first)))

    def remove(self, i: int) -> None:
        """Undo the placement of task ``i``: every part given back, ``revision`` and ``last_node`` as its placement
        advanced them."""
        parts = self.parts_of[i]
        if not parts:
            raise ValueError(f"task {i} is not placed")
        milli = self.tasks.gpu_milli[i]
        for (node, gpus), held in zip(parts, self.demand_of[i], strict=True):
            self._give_part(i, milli, node, gpus, held)
        self.node_of[i] = UNPLACED
        self.gpus_of[i] = self.parts_of[i] = self.demand_of[i] = ()
        self._advance(i, parts)

    def place_many(self, ids, nodes, gpus, demands=None, *, spans=None) -> None:
        """Place tasks ``ids`` on ``nodes`` using GPUs ``gpus`` (one tuple per task), as :meth:`place` one after
        the other would, in one vectorized pass: the same state, ``revision`` and ``last_node``. ``demands``: one
        ``(cpu_milli, memory_mib)`` per task, held instead of its shape's (``demand=`` of :meth:`place`), or None
        (every task its shape's). ``spans``: one entry per task, ``()`` for a task in one part (``nodes`` and
        ``gpus``), else its parts as :meth:`place_parts` takes them (its entry of ``nodes`` and ``gpus`` its first
        part's, of ``demands`` one pair per part, or None: its split's), or None (every task in one part).

        All parts of all tasks are judged at once, each by the one rule on the state with the earlier parts placed,
        before anything changes; where a part of the batch does not fit (or a capability is not ``vectorized``, as
        on a MIG cluster) the tasks are placed one by one, so the error is :meth:`place_parts`'s own."""
        ids, first = np.asarray(ids, dtype=np.int64), np.asarray(nodes, dtype=np.int64)
        if len(ids) == 0:
            return
        order, gpus, tasks = ids.tolist(), list(map(tuple, gpus)), self.tasks
        spans = [()] * len(order) if spans is None else list(spans)
        if demands is not None:
            demands = [(None if ds is None else tuple(_chosen(i, d) for d in ds)) if span else (_chosen(i, ds),)
                       for i, ds, span in zip(order, demands, spans, strict=True)]
        parts = [((node, gs),) for node, gs in zip(first.tolist(), gpus, strict=True)]
        spread = [k for k, span in enumerate(spans) if span]      # in several parts: each part's demand by its split
        for k in spread:
            parts[k] = tuple((int(node), tuple(map(int, gs))) for node, gs in spans[k])
        pieces = {k: self._split_of[order[k]].pieces(self, order[k], parts[k], None if demands is None
                                                     else demands[k]) for k in spread}
        single = np.ones(len(order), dtype=bool)
        single[spread] = False
        rows = ids[single]
        ok = (self._vectorized and len(set(order)) == len(order) and (self.node_of[ids] == UNPLACED).all()
              and (tasks.workers[rows] == 1).all() and not any(isinstance(p, str) for p in pieces.values()))
        if ok:                                      # per part: its task, node, GPUs, CPU, memory, GPU count
            if demands is not None:
                cpu = np.fromiter((demands[k][0][0] for k in np.flatnonzero(single).tolist()), np.int64, len(rows))
                mem = np.fromiter((demands[k][0][1] for k in np.flatnonzero(single).tolist()), np.int64, len(rows))
            else:
                cpu, mem = tasks.cpu_milli[rows], tasks.memory_mib[rows]
            owner, nodes, want = rows, first[single], tasks.num_gpu[rows]
            if spread:
                many = [p for k in spread for p in pieces[k]]
                owner = np.concatenate([owner, np.repeat(ids[spread], [len(parts[k]) for k in spread])])
                nodes = np.concatenate([nodes, [node for k in spread for node, _ in parts[k]]]).astype(np.int64)
                cpu = np.concatenate([cpu, [p.cpu_milli for p in many]]).astype(np.int64)
                mem = np.concatenate([mem, [p.memory_mib for p in many]]).astype(np.int64)
                want = np.concatenate([want, [p.num_gpu for p in many]]).astype(np.int64)
                gpus = [gs for k, gs in enumerate(gpus) if single[k]] + [gs for k in spread for _, gs in parts[k]]
            ok = self._take_many(owner, nodes, gpus, cpu, mem, want)
        if not ok:
            for k, (i, span) in enumerate(zip(order, spans, strict=True)):
                held = None if demands is None else demands[k]
                if span:
                    self.place_parts(i, span, demands=held)
                else:
                    self.place(i, *parts[k][0], demand=None if held is None else held[0])
            return
        parts_of, gpus_of, demand_of = self.parts_of, self.gpus_of, self.demand_of
        held = iter(zip(cpu.tolist(), mem.tolist(), strict=True))  # the single tasks' first (in order), then parts
        for k, (i, ps) in enumerate(zip(order, parts, strict=True)):
            parts_of[i], gpus_of[i] = ps, ps[0][1]
            demand_of[i] = tuple((p.cpu_milli, p.memory_mib) for p in pieces[k]) if k in pieces else (next(held),)
        self.node_of[ids] = first
        n_parts = np.fromiter(map(len, parts), np.int64, len(parts))
        self.revision += int(self._steps(ids[:-1], n_parts[:-1]).sum())
        self._advance(order[-1], parts[-1])

    def _take_many(self, owner: np.ndarray, nodes: np.ndarray, gpus: list, cpu: np.ndarray, mem: np.ndarray,
                   want: np.ndarray) -> bool:
        """Take parts, one per row (their task ``owner``, on ``nodes``, GPUs ``gpus``, ``cpu`` milli-cores, ``mem``
        MiB, ``want`` GPUs asked), if each fits by the one rule on the state with the earlier rows taken
        (capacities only shrink: every prefix fits iff the whole batch does); returns whether they were taken (else
        the state is unchanged)."""
        tasks = self.tasks
        counts = np.fromiter(map(len, gpus), np.int64, len(gpus))
        if not (((nodes >= 0) & (nodes < self.cluster.n_nodes)).all() and (counts == want).all()):
            return False
        flat_node = np.repeat(nodes, counts)
        flat_gpu = np.fromiter(itertools.chain.from_iterable(gpus), np.int64, int(counts.sum()))
        if len(flat_gpu):
            has = counts > 0
            spec = tasks.gpu_spec[owner]
            if not (((flat_gpu >= 0) & (flat_gpu < self.cluster.gpu[flat_node])).all()
                    and ((counts <= 1).all() or all(len(set(gs)) == len(gs) for gs in gpus if len(gs) > 1))
                    and all(self.spec_mask(s)[nodes[(spec == s) & has]].all() for s in set(spec[has].tolist()))):
                return False
        cpu_left, mem_left, gpu_left = self.cpu_left.copy(), self.mem_left.copy(), self.gpu_left.copy()
        np.subtract.at(cpu_left, nodes, cpu)
        np.subtract.at(mem_left, nodes, mem)
        np.subtract.at(gpu_left, (flat_node, flat_gpu), np.repeat(tasks.gpu_milli[owner], counts))
        if not ((cpu_left >= 0).all() and (mem_left >= 0).all() and (gpu_left >= 0).all()):
            return False
        self.cpu_left[:], self.mem_left[:], self.gpu_left[:] = cpu_left, mem_left, gpu_left
        return True

    def remove_many(self, ids) -> np.ndarray:
        """Undo the placements of tasks ``ids`` as :meth:`remove` one after the other would (every part given back,
        ``revision`` and ``last_node`` the same), in one vectorized pass; returns their first parts' nodes."""
        ids = np.asarray(ids, dtype=np.int64)
        nodes = self.node_of[ids].copy()
        order = ids.tolist()
        if not self._vectorized or len(set(order)) != len(order) or (nodes == UNPLACED).any():
            for i in order:
                self.remove(i)
            return nodes
        if len(ids) == 0:
            return nodes
        parts = [self.parts_of[i] for i in order]
        n_parts = np.fromiter(map(len, parts), np.int64, len(parts))
        flat = [p for ps in parts for p in ps]
        held = np.fromiter(itertools.chain.from_iterable(itertools.chain.from_iterable(map(self.demand_of.__getitem__,
                                                                                          order))),
                           np.int64, 2 * len(flat)).reshape(len(flat), 2)
        flat_nodes, gpus = zip(*flat, strict=True)
        node = np.fromiter(flat_nodes, np.int64, len(flat))
        counts = np.fromiter(map(len, gpus), np.int64, len(gpus))
        np.add.at(self.cpu_left, node, held[:, 0])
        np.add.at(self.mem_left, node, held[:, 1])
        np.add.at(self.gpu_left, (np.repeat(node, counts),
                                  np.fromiter(itertools.chain.from_iterable(gpus), np.int64, int(counts.sum()))),
                  np.repeat(np.repeat(self.tasks.gpu_milli[ids], n_parts), counts))
        self.node_of[ids] = UNPLACED
        for i in order:
            self.gpus_of[i] = self.parts_of[i] = self.demand_of[i] = ()
        self.revision += int(self._steps(ids[:-1], n_parts[:-1]).sum())
        self._advance(order[-1], parts[-1])
        return nodes

    # -- views -------------------------------------------------------------------------------
    @property
    def idle_milli(self) -> np.ndarray:
        """Free GPU capacity per node in milli-GPU."""
        return self.gpu_left.sum(axis=1)

    @property
    def allocated_milli(self) -> int:
        """Allocated GPU capacity in milli-GPU."""
        return self.cluster.gpu_capacity_milli - int(self.gpu_left.sum())

    def placement(self) -> Placement:
        starts = None if self._gpu_rule is None else self._gpu_rule.starts(self)
        rows = range(len(self.node_of))
        chosen = [()] * len(rows)                   # the demands that are not the split's: chosen at placement
        cpu, mem = self.tasks.cpu_milli.tolist(), self.tasks.memory_mib.tolist()
        for i in np.flatnonzero(self.node_of != UNPLACED).tolist():
            if self.demand_of[i] != self._split_of[i].held(cpu[i], mem[i], len(self.parts_of[i])):
                chosen[i] = self.demand_of[i]
        return Placement(self.node_of.copy(), tuple(self.gpus_of), starts, self.spans(rows),
                         tuple(chosen) if any(chosen) else None)

    def spans(self, rows) -> tuple | None:
        """For :class:`Placement` ``spans``: the parts of each task of ``rows`` placed in several parts (``()`` for
        the others), or None when none is."""
        spans = tuple(ps if len(ps) > 1 else () for ps in map(self.parts_of.__getitem__, map(int, rows)))
        return spans if any(spans) else None

    def copy(self) -> ClusterState:
        new = ClusterState.__new__(ClusterState)
        new.cluster, new.tasks = self.cluster, self.tasks
        new.cpu_left, new.mem_left, new.gpu_left = self.cpu_left.copy(), self.mem_left.copy(), self.gpu_left.copy()
        new.node_of, new.gpus_of = self.node_of.copy(), list(self.gpus_of)
        new.parts_of, new.demand_of = list(self.parts_of), list(self.demand_of)
        new._split_of, new._per_part = self._split_of, self._per_part
        new.elastic = self.elastic
        new.revision, new.last_node = self.revision, self.last_node
        new._spec_masks = self._spec_masks
        new._use(self.capabilities)
        for cap in self.capabilities:
            cap.copy_into(self, new)
        return new

    def __repr__(self) -> str:
        placed = int((self.node_of != UNPLACED).sum())
        return (f"ClusterState({self.cluster.n_nodes} nodes, {placed}/{len(self.tasks)} tasks placed, "
                f"{self.allocated_milli}/{self.cluster.gpu_capacity_milli} milli-GPU allocated)")


def _chosen(i: int, demand) -> tuple[int, int]:
    """A demand chosen at placement as ``(cpu_milli, memory_mib)`` ints; :class:`InfeasiblePlacement` unless both
    are whole numbers >= 0."""
    cpu, mem = demand
    if cpu != int(cpu) or mem != int(mem) or cpu < 0 or mem < 0:
        raise InfeasiblePlacement(f"task {i}: demand {tuple(demand)} is not whole milli-cores and MiB >= 0")
    return int(cpu), int(mem)


def validate(cluster: Cluster, tasks: TaskSet, placement: Placement, elastic: np.ndarray | None = None
             ) -> ClusterState:
    """Re-check a whole placement from scratch and return the state it produces (``elastic``: the elastic tasks,
    :class:`ClusterState`).

    Every placed task is replayed through :meth:`ClusterState.place` on an empty cluster (with the CPU and memory
    chosen at its placement, if ``placement.demands`` has them), so the placement is judged by the one feasibility
    rule whatever produced it. Since tasks never leave, the order does not matter: capacities only add up.

    Raises
    ------
    InfeasiblePlacement
        naming the first task whose placement breaks a rule (unknown node or GPU, wrong GPU count,
        CPU / memory / GPU capacity exceeded, GPU model not allowed).

    Examples
    --------
    >>> from fgdopt.model import Cluster, TaskSet
    >>> c = Cluster([8000], [1024], [1], ["T4"])
    >>> t = TaskSet([1000, 1000], [0, 0], [1, 1], [600, 600])
    >>> validate(c, t, Placement([0, -1], [(0,), ()])).allocated_milli
    600
    """
    if len(placement.node) != len(tasks):
        raise InfeasiblePlacement(f"placement covers {len(placement.node)} tasks, the task set has {len(tasks)}")
    state = ClusterState(cluster, tasks, elastic)
    for i in np.flatnonzero(placement.node != UNPLACED):
        demands = None if placement.demands is None else (placement.demands[i] or None)
        if placement.spans is not None and placement.spans[i]:
            if placement.spans[i][0] != (int(placement.node[i]), placement.gpus[i]):
                raise InfeasiblePlacement(f"task {int(i)}: its first part is not its node and GPUs")
            state.place_parts(int(i), placement.spans[i], demands=demands)
            continue
        if demands is not None and len(demands) != 1:
            raise InfeasiblePlacement(f"task {int(i)}: {len(demands)} demands for its one part")
        state.place(int(i), int(placement.node[i]), placement.gpus[i],
                    None if placement.starts is None else placement.starts[i],
                    demand=None if demands is None else demands[0])
    for i in np.flatnonzero(placement.node == UNPLACED):
        if placement.gpus[i]:
            raise InfeasiblePlacement(f"task {int(i)} is unallocated but lists GPUs {placement.gpus[i]}")
    return state
