"""Interference-aware FGD: FGD's fragmentation delta plus a weighted slowdown of the jobs that would share a GPU.

GPU sharing packs jobs onto partly used GPUs, which is what keeps fragmentation low, and co-located jobs slow each
other (:mod:`fgdopt.interference`). :class:`InterferenceFGD` is FGD (:mod:`fgdopt.policies.fgd`, the
reference's integer score and node-rank ties) whose *sharing* tasks (``num_gpu = 1``, ``0 < gpu_milli < 1000``) are
scored per GPU, not per node, on a cost in milli-GPU::

    cost(n, g) = delta(n, g) + weight * slowdown(n, g)
    score(n, g) = int(100 * sigmoid(-cost / 1000))            (FGD's score of a delta)

* ``delta(n, g) = F_n'(M) - F_n(M)``, the fragmentation delta of the one evaluator (:mod:`fgdopt.frag`) for the
  task on GPU ``g`` of node ``n``: the very number FGD scores (milli-GPU);
* ``slowdown(n, g)``, milli-GPU, the allocated GPU capacity whose work the placement throws away per second of
  co-location, summed over the jobs ``o`` already on GPU ``g`` (``m`` = milli-GPU per GPU, ``f = factor[model of
  n]`` of the :class:`~fgdopt.interference.Interference`, ``c`` = class)::

      slowdown(n, g) = sum_o [ m_j (1 - f[c_j, c_o]) + m_o (1 - f[c_o, c_j]) ]

  the new job ``j`` loses ``1 - f[c_j, c_o]`` of its speed beside ``o`` and ``o`` loses ``1 - f[c_o, c_j]``; each
  loss is weighted by the job's share of the GPU, so a 500-milli job slowed to half speed wastes 250 milli-GPU.
  It is exact for one co-tenant; with several it is the first-order (pairwise sum) form of the engine's product
  model and, for factors <= 1, an upper bound on the marginal loss (``1 - prod x <= sum (1 - x)`` and the
  co-tenants' current speeds are <= 1). A GPU with no co-tenant (or a model without factors) costs 0.
* ``weight`` (dimensionless, >= 0): how many milli-GPU of fragmentation one milli-GPU of slowed capacity is worth.
  ``weight = 0`` is FGD, choice for choice (the same node, the same GPU, the same ranks); at weight 1 a milli-GPU
  lost to slowdown counts as one lost to fragmentation.

The node's score is its best GPU's, its GPU the lowest-indexed one reaching it; the node of highest score wins,
ties to the lowest rank (:func:`~fgdopt.policies.base.pick`), as in FGD. With ``weight > 0`` ties (within a node and
between nodes) first go to the least slowdown, then as FGD: the integer score saturates (every cost above about
4,600 milli-GPU scores 0), and without this rule a large weight would make every co-located option tie at 0 and
leave the choice among them to the node ranks instead of to the slowdown. CPU-only and whole-GPU tasks share no GPU
and are placed by FGD unchanged. The policy is *job-aware* (``job_aware = True``): the time engine calls it
``policy(state, task, job=j)`` to know the job's class; called without ``job`` it has no class and behaves as FGD.

Caches. (i) Fragmentation: FGD's snapshot and node versions (:meth:`FGD._sync`) and, per sharing shape
``(cpu_milli, gpu_milli)``, ``F_n'(M)`` of every GPU of every node with the version it was computed for (computed
once per distinct free capacity of a node, as FGD does, and shared by the GPUs with that capacity); only the stale
feasible nodes are re-evaluated. (ii) Co-tenants: per (node, GPU, class) the number of sharing jobs and their
milli-GPU, kept incrementally from ``state.node_of`` / ``state.gpus_of`` (read-only): on each call the jobs whose
``node_of`` changed since the last call are found with one vectorized comparison, and their old and new GPUs
updated; if ``state.revision`` moved by more than those jobs account for (one ``place`` or ``remove`` each; a job
that left and came back would be invisible), or the state is another object, the table is rebuilt from scratch.
The slowdown of a call is then a (nodes x GPUs x classes) contraction over the nodes with a co-tenant only.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np

from fgdopt.frag import Workload, fragmentation_after
from fgdopt.interference import Interference
from fgdopt.model import GPU_MILLI, Task
from fgdopt.policies.base import TIE_TOL, Choice, pick
from fgdopt.policies.fgd import FGD
from fgdopt.state import ClusterState
from fgdopt.topology import TopologyMap


def is_sharing(task: Task) -> bool:
    """A task that takes part of one GPU (the tasks the engine's interference slows)."""
    return task.num_gpu == 1 and 0 < task.gpu_milli < GPU_MILLI


class InterferenceFGD(FGD):
    """FGD whose sharing tasks pay ``weight`` x the slowdown they cause (module docstring).

    Parameters
    ----------
    workload : the target workload M (as FGD).
    interference : the jobs' classes and co-location factors; ``len(interference.job_class)`` must be the number of
        jobs of the run's state (``state.tasks``).
    weight : milli-GPU of fragmentation per milli-GPU of slowed capacity (>= 0, finite); 0 is FGD.
    seed, ranks : as FGD (node ranks of the tie rule).
    gpu_choice : ``lowest-index`` or ``best-ring`` (whole-GPU tasks; ``topo-fgd`` is not offered).
    topology : as FGD.

    Raises
    ------
    ValueError : a negative or non-finite weight, an unknown GPU choice.
    """

    name = "fgd-interference"
    gpu_choices = ("lowest-index", "best-ring")
    job_aware = True

    def __init__(self, workload: Workload, interference: Interference, weight: float = 1.0, seed: int = 0,
                 ranks: np.ndarray | None = None, *, gpu_choice: str = "lowest-index",
                 topology: TopologyMap | None = None):
        super().__init__(workload, seed, ranks, gpu_choice=gpu_choice, topology=topology)
        weight = float(weight)
        if not (np.isfinite(weight) and weight >= 0):
            raise ValueError(f"{self.name}: weight must be a finite number >= 0, got {weight}")
        self.interference = interference
        self.weight = weight
        self._share_cluster = None

    # -- caches ------------------------------------------------------------------------------
    def _setup(self, state: ClusterState) -> None:
        """Per-cluster tables: loss matrices per node model, the co-tenant table, the per-shape GPU caches."""
        cluster = state.cluster
        inter = self.interference
        n_jobs = len(state.tasks)
        if len(inter.job_class) != n_jobs:
            raise ValueError(f"{self.name}: interference gives {len(inter.job_class)} job classes for {n_jobs} jobs")
        models, model_of = np.unique(cluster.model.astype(str), return_inverse=True)
        n_cls = max([int(inter.job_class.max(initial=0)) + 1]
                    + [m.shape[0] for m in (*inter.factor.values(), inter.default) if m is not None])
        loss = np.zeros((len(models), n_cls, n_cls))                 # 1 - factor; 0 for a model without factors
        for k, m in enumerate(models.tolist()):
            mat = inter.factor.get(m, inter.default)
            if mat is not None:
                loss[k, :mat.shape[0], :mat.shape[1]] = 1.0 - mat
        self._loss, self._model_of = loss, model_of.astype(np.int64)
        tasks = state.tasks
        self._sharing = (tasks.num_gpu == 1) & (tasks.gpu_milli > 0) & (tasks.gpu_milli < GPU_MILLI)
        self._milli = tasks.gpu_milli.astype(np.int64)
        self._cls = inter.job_class
        shape = (cluster.n_nodes, state.gpu_left.shape[1], n_cls)
        self._count = np.zeros(shape, dtype=np.int64)                # sharing jobs per (node, GPU, class)
        self._mass = np.zeros(shape, dtype=np.int64)                 # their milli-GPU
        self._tenants = np.zeros(shape[:2], dtype=np.int64)          # sharing jobs per (node, GPU)
        self._node_of = np.full(n_jobs, -1, dtype=np.int64)          # node_of as last seen
        self._gpu_of = np.full(n_jobs, -1, dtype=np.int64)           # the GPU of a placed sharing job
        self._tseen: tuple[weakref.ref | None, int] = (None, -1)
        self._after: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._share_cluster = cluster

    def _add(self, jobs: np.ndarray, nodes: np.ndarray, gpus: np.ndarray, sign: int) -> None:
        cls = self._cls[jobs]
        np.add.at(self._count, (nodes, gpus, cls), sign)
        np.add.at(self._mass, (nodes, gpus, cls), sign * self._milli[jobs])
        np.add.at(self._tenants, (nodes, gpus), sign)

    def _rebuild(self, state: ClusterState) -> None:
        """The co-tenant table from scratch."""
        for arr in (self._count, self._mass, self._tenants):
            arr[...] = 0
        self._node_of[:] = state.node_of
        self._gpu_of[:] = -1
        jobs = np.flatnonzero((state.node_of >= 0) & self._sharing)
        gpus = np.fromiter((state.gpus_of[j][0] for j in jobs.tolist()), dtype=np.int64, count=len(jobs))
        self._gpu_of[jobs] = gpus
        self._add(jobs, state.node_of[jobs], gpus, 1)

    def _sync_tenants(self, state: ClusterState) -> None:
        """Bring the co-tenant table up to date with ``state`` (module docstring, "Caches")."""
        (ref, revision), self._tseen = self._tseen, (weakref.ref(state), state.revision)
        if ref is None or ref() is not state:
            self._rebuild(state)
            return
        if revision == state.revision:
            return
        changed = np.flatnonzero(state.node_of != self._node_of)
        ops = int((self._node_of[changed] >= 0).sum() + (state.node_of[changed] >= 0).sum())
        if state.revision - revision != ops:
            self._rebuild(state)
            return
        moved = changed[self._sharing[changed]]
        gone = moved[self._node_of[moved] >= 0]
        self._add(gone, self._node_of[gone], self._gpu_of[gone], -1)
        self._gpu_of[gone] = -1
        came = moved[state.node_of[moved] >= 0]
        gpus = np.fromiter((state.gpus_of[j][0] for j in came.tolist()), dtype=np.int64, count=len(came))
        self._gpu_of[came] = gpus
        self._add(came, state.node_of[came], gpus, 1)
        self._node_of[changed] = state.node_of[changed]

    def _gpu_after(self, state: ClusterState, task: Task, nodes: np.ndarray) -> np.ndarray:
        """F_n'(M) of ``task`` on every GPU of each of ``nodes`` (NaN where it does not fit): (k, G)."""
        key = (task.cpu_milli, task.gpu_milli)
        n, g = state.gpu_left.shape
        cache = self._after.get(key)
        if cache is None:
            cache = self._after[key] = (np.full((n, g), np.nan), np.full(n, -1, dtype=np.int64))
        after, version = cache
        stale = nodes[version[nodes] != self._version[nodes]]
        if len(stale):
            gl = state.gpu_left[stale]
            same = gl[:, :, None] == gl[:, None, :]                              # (k, G, G)
            first = np.argmax(same, axis=2)                                      # the first GPU of equal capacity
            rows, gpus = np.nonzero((gl >= task.gpu_milli) & (first == np.arange(g)[None, :]))
            mask = np.zeros((len(rows), g), dtype=bool)
            mask[np.arange(len(rows)), gpus] = True
            rep = np.full((len(stale), g), np.nan)
            rep[rows, gpus] = fragmentation_after(state, self.workload, task.cpu_milli, task.gpu_milli,
                                                  stale[rows], mask)
            fresh = rep[np.arange(len(stale))[:, None], first]
            fresh[gl < task.gpu_milli] = np.nan
            after[stale] = fresh
            version[stale] = self._version[stale]
        return after[nodes]

    def slowdown(self, state: ClusterState, job: int, nodes: np.ndarray) -> np.ndarray:
        """The slowdown (milli-GPU, module docstring) of job ``job`` on every GPU of each of ``nodes`` beside the
        sharing jobs placed there in ``state``: float (k, G)."""
        if self._share_cluster is not state.cluster:
            self._setup(state)
        self._sync_tenants(state)
        out = np.zeros((len(nodes), state.gpu_left.shape[1]))
        busy = np.flatnonzero(self._tenants[nodes].any(axis=1))
        if len(busy):
            at = nodes[busy]
            c = int(self._cls[job])
            loss = self._loss[self._model_of[at]]                               # (b, C, C)
            own = loss[:, c, :]                                                  # j beside each class
            theirs = loss[:, :, c]                                               # each class beside j
            out[busy] = (self._milli[job] * np.einsum("bgc,bc->bg", self._count[at], own)
                         + np.einsum("bgc,bc->bg", self._mass[at], theirs))
        return out

    # -- the policy --------------------------------------------------------------------------
    def __call__(self, state: ClusterState, task: Task, job: int | None = None) -> Choice | None:
        if not is_sharing(task):
            return super().__call__(state, task)
        nodes = np.flatnonzero(state.feasible_nodes(task))
        if len(nodes) == 0:
            return None
        self._sync(state)
        if self._share_cluster is not state.cluster:
            self._setup(state)
        after = self._gpu_after(state, task, nodes)
        fits = ~np.isnan(after)
        cost = np.where(fits, after - self._frag[nodes][:, None], 0.0)
        if job is not None and self.weight:
            slow = self.slowdown(state, int(job), nodes)
            score = np.where(fits, self._score(cost + self.weight * slow), -np.inf)
            best = score.max(axis=1)
            slow = np.where(score >= best[:, None] - TIE_TOL, slow, np.inf)    # ties: the least slowdown first
            least = slow.min(axis=1)
            gpu = np.argmax(slow <= least[:, None] + TIE_TOL, axis=1)           # then the lowest GPU

            def then(tied: np.ndarray) -> np.ndarray:
                return -least[np.searchsorted(nodes, tied)]
        else:                                                                   # FGD's choice exactly
            score = np.where(fits, self._score(cost), -np.inf)
            best = score.max(axis=1)
            gpu = np.argmax(score >= best[:, None] - TIE_TOL, axis=1)           # the lowest GPU reaching the best
            then = self._then(state, task)
        node = pick(nodes, best, self.node_ranks(state), then)
        k = int(np.searchsorted(nodes, node))
        g = int(gpu[k])
        row = state.gpu_left[node].copy()
        row[g] -= task.gpu_milli
        self._expected = (node, row, int(state.cpu_left[node]) - task.cpu_milli, float(after[k, g]))
        return node, (g,)


def interference_fgd(interference: Interference, weight: float = 1.0) -> Callable[..., InterferenceFGD]:
    """A policy factory (:data:`fgdopt.policies.FACTORY_KEYWORDS`) of :class:`InterferenceFGD` for ``interference``
    and ``weight``: ``register_policy("fgd-interference", interference_fgd(inter, 1.0))``, or call it with the
    keywords of :func:`~fgdopt.policies.make_policy` (``workload`` required).

    Examples
    --------
    >>> from fgdopt.frag import Workload
    >>> inter = Interference([0, 1], {"T4": [[1.0, 0.5], [0.5, 1.0]]})
    >>> make = interference_fgd(inter, weight=2.0)
    >>> policy = make(seed=1, workload=Workload.from_shapes([(0, 1, 500, 1.0)]))
    >>> policy.name, policy.weight, policy.job_aware
    ('fgd-interference', 2.0, True)
    """
    def factory(*, seed: int = 0, workload: Workload | None = None, ranks: np.ndarray | None = None,
                gpu_choice: str = "lowest-index", topology: TopologyMap | None = None) -> InterferenceFGD:
        if workload is None:
            raise ValueError("policy 'fgd-interference' needs the target workload (Workload.from_tasks of the trace)")
        return InterferenceFGD(workload, interference, weight, seed, ranks, gpu_choice=gpu_choice, topology=topology)

    return factory
