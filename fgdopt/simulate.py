"""Online replay of a task list through a policy (docs/semantics.md "Online placement", "Workload inflation").

Two entry points:

* :func:`run_online` places a finite task list in the given order (no inflation, no shuffle) -- the
  online side of an optimality-gap comparison;
* :func:`replay` is the paper's protocol as its simulator runs it: shuffle the trace, append inflated
  clones, place tasks one by one and sample the curves at every integer arrived-workload percentage.

Arrival order, exactly (:func:`arrival_order`): with ``rng = numpy.random.default_rng(seed)``, take
the trace's tasks in name order and shuffle them (``rng.permutation``); then draw trace tasks
uniformly with replacement (in batches of ``rng.integers``, from the name-ordered trace) and APPEND
each draw after the shuffled originals, starting from their total GPU demand ``D``. A draw is kept
while ``D + its gpu_milli <= ratio * capacity`` and then adds its total demand ``num_gpu * gpu_milli``
to ``D``; the first draw failing the test is discarded and drawing stops. Comparing the per-GPU
``gpu_milli`` rather than the total demand is the reference simulator's quirk, reproduced here: a
multi-GPU clone can carry the arrived demand a little past ``ratio``, and CPU-only draws never stop
the drawing. If the trace alone already exceeds the limit, or has no GPU demand, nothing is appended.

Node ranks (the tie rule of :mod:`fgdopt.policies.base`): after the arrival order, the same generator
draws ``rng.permutation(n_nodes)``, unless ranks are given. A policy given by name is built with
``make_policy(name, seed=seed, workload=workload, ranks=ranks)``, so its own draws (``random``) use a
generator seeded by ``seed`` too.

Sampling, exactly: the arrived workload after task i is ``A_i`` = the GPU demand (milli-GPU) of tasks
0..i, placed or not. The curve row for percentage p (0, 1, ..., ``round(100 * ratio)``) describes
the state after the longest prefix with ``A_i * 100 <= p * capacity`` (integer arithmetic), i.e. every
task that has arrived by p% -- including one landing exactly on p%. The last row is the final state
(every task arrived), even where the quirk above carried the arrived demand past ``ratio``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fgdopt.frag import CATEGORIES, FragmentationReport, Workload, fragmentation_by_category
from fgdopt.inflation import arrived_count, draw_until
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.policies import Policy, PolicyError, make_policy, needs_workload
from fgdopt.policies.gang import choose_parts
from fgdopt.state import ClusterState, InfeasiblePlacement, Placement
from fgdopt.topology import TopologyMap

CURVE_COLUMNS = ("arrived_pct", "arrived_milli", "tasks_arrived", "tasks_failed", "alloc_milli", "alloc_ratio",
                 "unallocated_gpus", "idle_milli", "frag_milli", "frag_rate", *CATEGORIES)
"""Columns of :attr:`ReplayResult.curves` (ratios in percent, amounts in milli-GPU, unallocated in GPUs)."""


@dataclass(frozen=True, eq=False)
class OnlineResult:
    """Outcome of :func:`run_online`: the placement, the final state, allocated milli-GPU, wall seconds."""

    placement: Placement
    state: ClusterState
    allocated_milli: int
    wall_s: float


@dataclass(frozen=True, eq=False)
class ReplayResult:
    """Outcome of :func:`replay`.

    Attributes
    ----------
    cluster : the cluster replayed on.
    tasks : the replayed task list in arrival order (the shuffled trace, then the clones).
    source : int64 array, index in the original trace of each replayed task.
    placement : where each replayed task went (judge it with ``validate(cluster, tasks, placement)``).
    curves : DataFrame, one row per arrived percentage, columns :data:`CURVE_COLUMNS`.
    log : DataFrame, one row per replayed task: ``task, source, cpu_milli, num_gpu, gpu_milli, node``
        (-1 = unallocated), ``gpus`` (ids joined by ``,``), ``arrived_milli``, ``alloc_milli`` (cumulative,
        after the task).
    policy, seed, ratio : what was run; ``wall_s`` the wall time of inflation + placement + sampling.
    """

    cluster: Cluster
    tasks: TaskSet
    source: np.ndarray
    placement: Placement
    curves: pd.DataFrame
    log: pd.DataFrame
    policy: str
    seed: int
    ratio: float
    wall_s: float

    def at(self, pct: int) -> pd.Series:
        """The curve row at arrived percentage ``pct``."""
        return self.curves.iloc[pct]

    def arrived(self, pct: float) -> int:
        """How many tasks have arrived by ``pct`` percent of GPU capacity (the curve's prefix rule)."""
        return arrived_count(self.log["arrived_milli"].to_numpy(), pct, self.cluster.gpu_capacity_milli)

    def prefix(self, pct: float) -> tuple[TaskSet, Placement]:
        """The tasks arrived by ``pct`` percent (in arrival order) and where each went.

        Tasks never leave, so this is the state of the replay at that point: judge it with
        ``validate(cluster, tasks, placement)``; the unplaced ones are the tasks that failed.
        """
        n = self.arrived(pct)
        return self.tasks.take(np.arange(n)), Placement(self.placement.node[:n], self.placement.gpus[:n])


def arrival_order(tasks: TaskSet, capacity_milli: int, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """Trace indices of the replayed tasks in arrival order: the shuffled trace, then the inflated clones.

    See the module docstring for the exact rule.

    Examples
    --------
    >>> t = TaskSet([1000] * 3, [0] * 3, [1, 0, 2], [500, 0, 1000], names=("c", "a", "b"))
    >>> rows = arrival_order(t, capacity_milli=4000, ratio=1.0, rng=np.random.default_rng(0))
    >>> sorted(rows[:3].tolist()), int(t.gpu_demand[rows].sum()) <= 4000 + 1000
    ([0, 1, 2], True)
    """
    by_name = np.argsort(np.array(tasks.names, dtype=object), kind="stable")
    shuffled = by_name[rng.permutation(len(tasks))]
    demand = tasks.gpu_demand[by_name]
    drawn = draw_until(demand, int(demand.sum()), ratio * capacity_milli, rng, check=tasks.gpu_milli[by_name])
    return np.concatenate([shuffled, by_name[drawn]])


def _place_all(state: ClusterState, policy: Policy, on_task=None, label: str | None = None) -> None:
    """Offer every task of ``state.tasks`` in order; ``on_task(i)`` after each one. A gang (``workers > 1``) is
    placed part by part by the policy (:func:`fgdopt.policies.gang.choose_parts`), all its parts or none.

    Raises
    ------
    PolicyError : the policy raised, or chose where the task does not fit (one line naming ``label``, else the
        policy's ``name``, and the task).
    """
    tasks = state.tasks
    gangs = tasks.has_gangs
    for i in range(len(tasks)):
        task = tasks[i]
        gang = gangs and task.workers > 1
        try:
            choice = choose_parts(policy, state, task) if gang else policy(state, task)
        except Exception as exc:
            raise PolicyError(f"policy {_label(policy, label)!r} raised {type(exc).__name__} on task {i} "
                              f"({tasks.names[i]}): {exc}") from exc
        if choice is not None:
            try:
                if gang:
                    state.place_parts(i, choice)
                else:
                    state.place(i, *choice)   # (node, gpus), or (node, gpus, starts) on MIG clusters
            except (InfeasiblePlacement, TypeError, ValueError, IndexError) as exc:
                raise PolicyError(f"policy {_label(policy, label)!r} chose {choice!r} for task {i} "
                                  f"({tasks.names[i]}), where it does not fit: {exc}") from None
        if on_task is not None:
            on_task(i)


def _label(policy: Policy, label: str | None) -> str:
    return label if label is not None else getattr(policy, "name", type(policy).__name__)


def run_online(cluster: Cluster, tasks: TaskSet, policy_name: str, *, seed: int = 0,
               workload: Workload | None = None, ranks: np.ndarray | None = None,
               gpu_choice: str = "lowest-index", topology: TopologyMap | None = None) -> OnlineResult:
    """Place ``tasks`` in the given order with policy ``policy_name`` (no inflation, no shuffle).

    ``workload`` defaults to ``Workload.from_tasks(tasks)`` (used by the FGD policies only); ``seed`` seeds the
    policy (its node ranks, unless ``ranks`` is given, and its random draws); ``gpu_choice`` and
    ``topology`` are :func:`~fgdopt.policies.make_policy`'s GPU-choice options.
    """
    start = time.perf_counter()
    if workload is None and needs_workload(policy_name):
        workload = Workload.from_tasks(tasks)
    policy = make_policy(policy_name, seed=seed, workload=workload, ranks=ranks, gpu_choice=gpu_choice,
                         topology=topology)
    state = ClusterState(cluster, tasks)
    _place_all(state, policy, label=policy_name)
    return OnlineResult(state.placement(), state, state.allocated_milli, time.perf_counter() - start)


def _sample_row(state: ClusterState, report: FragmentationReport, pct: int, arrived: int, n_arrived: int) -> dict:
    cap = state.cluster.gpu_capacity_milli
    alloc = state.allocated_milli
    failed = n_arrived - int((state.node_of[:n_arrived] >= 0).sum())
    return {"arrived_pct": pct, "arrived_milli": arrived, "tasks_arrived": n_arrived, "tasks_failed": failed,
            "alloc_milli": alloc, "alloc_ratio": 100.0 * alloc / cap, "unallocated_gpus": (cap - alloc) / GPU_MILLI,
            "idle_milli": report.idle, "frag_milli": report.total, "frag_rate": 100.0 * report.rate,
            **report.breakdown}


def replay(cluster: Cluster, tasks: TaskSet, policy: str | Policy, seed: int, ratio: float = 1.3,
           workload: Workload | None = None, *, ranks: np.ndarray | None = None,
           gpu_choice: str = "lowest-index", topology: TopologyMap | None = None) -> ReplayResult:
    """Shuffle ``tasks``, append clones up to ``ratio`` of the cluster's GPU capacity, place one by one.

    Parameters
    ----------
    cluster, tasks : the cluster and the trace's task list.
    policy : a name from :data:`~fgdopt.policies.POLICY_NAMES`, a registered name or a ``module:attribute``
        spec (built by :func:`~fgdopt.policies.make_policy` with ``seed``, ``workload`` and the node ranks), or
        a ready policy object (which keeps its own ranks).
    seed : seeds the arrival order and the node ranks, and the policy when given by name.
    ratio : target arrived GPU demand as a fraction of capacity (paper: 1.3).
    workload : target workload M for fragmentation (curves and FGD); default
        ``Workload.from_tasks(tasks)``, i.e. from the trace before inflation.
    ranks : explicit node ranks for the tie rule (default: drawn from the seeded generator).
    gpu_choice, topology : the GPU choice inside a node and the interconnects it reads, for a policy
        given by name (:func:`~fgdopt.policies.make_policy`; a policy object keeps its own).

    Returns
    -------
    ReplayResult with curves at every integer percentage 0..round(100 * ratio).

    Raises
    ------
    PolicyError : the policy raised, or chose a node where the task does not fit (one line naming both).
    ValueError : the cluster has no GPU (arrivals are measured against its GPU capacity).
    """
    start = time.perf_counter()
    cap = cluster.gpu_capacity_milli
    if cap == 0:
        raise ValueError(f"{cluster!r} has no GPU: a replay measures arrivals against the GPU capacity")
    workload = Workload.from_tasks(tasks) if workload is None else workload
    rng = np.random.default_rng(seed)
    source = arrival_order(tasks, cap, ratio, rng)
    if ranks is None:
        ranks = rng.permutation(cluster.n_nodes)
    label = policy if isinstance(policy, str) else None
    if isinstance(policy, str):
        policy = make_policy(policy, seed=seed, workload=workload, ranks=ranks, gpu_choice=gpu_choice,
                             topology=topology)
    run = tasks.take(source)
    arrived = np.cumsum(run.gpu_demand)
    pcts = np.arange(round(100 * ratio) + 1)
    sample_at = arrived_count(arrived, pcts, cap)                          # prefix length of each pct
    sample_at[-1] = len(run)                                               # the last row: the final state
    state = ClusterState(cluster, run)
    rows: list[dict] = []

    by_category = fragmentation_by_category(state, workload)     # kept up to date at each sample
    touched: set[int] = set()

    def sample_until(n_done: int) -> None:
        while len(rows) < len(pcts) and sample_at[len(rows)] <= n_done:
            if touched:
                changed = np.fromiter(touched, dtype=np.int64)
                by_category[changed] = fragmentation_by_category(state, workload, changed)
                touched.clear()
            n = int(sample_at[len(rows)])
            report = FragmentationReport.of(by_category)
            rows.append(_sample_row(state, report, len(rows), int(arrived[n - 1]) if n else 0, n))

    def on_task(i: int) -> None:
        if state.node_of[i] >= 0:
            touched.add(int(state.node_of[i]))
        sample_until(i + 1)

    sample_until(0)
    _place_all(state, policy, on_task, label)
    placement = state.placement()
    alloc_after = np.cumsum(np.where(placement.placed, run.gpu_demand, 0))   # tasks never leave
    log = pd.DataFrame({
        "task": np.arange(len(run)), "source": source, "cpu_milli": run.cpu_milli, "num_gpu": run.num_gpu,
        "gpu_milli": run.gpu_milli, "node": placement.node,
        "gpus": [",".join(map(str, g)) for g in placement.gpus], "arrived_milli": arrived, "alloc_milli": alloc_after,
    })
    curves = pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
    return ReplayResult(cluster, run, source, placement, curves, log, _label(policy, label), seed, ratio,
                        time.perf_counter() - start)
