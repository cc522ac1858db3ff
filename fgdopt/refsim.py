"""The reference simulator's own run, step by step: load it and replay fgdopt's policy along it.

The paper's Kubernetes-based simulator was run once with FGD on the openb default trace at ratio 1.3
(pods shuffled, workload tuned up to 1.3 x GPU capacity), and every decision was logged: the pod that
arrived, the node it went to (or ``FAILED``) and the cluster fragmentation F(M) after the step. The
node ranks of its tie rule were inferred from the decisions. The files are never part of this
repository; they are looked up in the ``directory`` argument, the ``FGDOPT_REFSIM`` environment
variable, or ``~/.cache/fgdopt/refsim`` (:data:`REFSIM`).

:func:`load_refsim` turns the log into fgdopt values (the arrival order as a :class:`TaskSet`, the
reference's node of every step, its F(M) after every step, the node ranks); :func:`follow` replays a
policy along the log -- at each step it records the policy's own choice, then places the task where
the reference did, so one early difference does not derail every later comparison.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.datasets import Dataset, folder, verify
from fgdopt.frag import Workload, node_fragmentations
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import make_policy
from fgdopt.state import UNPLACED, ClusterState

LOG_FILE = "fgd_default_ratio1.3_log.csv.gz"
RANK_FILE = "fgd_default_ratio1.3_node_rank.csv"
CLONE_MARK = "-tuned-"
REFERENCE_ALLOC_PCT = 100.0 * 5_919_410 / 6_212_000
"""The run's final GPU allocation in percent (its README: 5,919,410 of 6,212,000 milli-GPU)."""


def paper_allocation() -> pd.DataFrame:
    """The published GPU allocation of the paper's six policies per trace variant (the replay's targets).

    Columns ``trace, policy, alloc_ratio_100, alloc_ratio_130``: percent of GPU capacity at 100% and 130%
    arrived workload, mean over seeds 42-51, from the results published with the paper's simulator
    (17 of the 24 variants: those of the paper's figures).
    """
    return pd.read_csv(files("fgdopt") / "data" / "paper_alloc.csv", comment="#")


REFSIM = Dataset("refsim", "FGDOPT_REFSIM", RANK_FILE, "the reference simulator's logged run",
                 "python -m experiments.refsim --help (it says how the run is logged)",
                 {LOG_FILE: "95b479ee9fd3c7e35a0a872e227826141f5274b31df43067652d251e2f6273c0",
                  RANK_FILE: "444726648b0dd0a96b9abb79d29a71dc74186705b4e33aca0d5de3185dfa0d57"})
"""The logged run as a data set (:mod:`fgdopt.datasets`): ``$FGDOPT_REFSIM``, else ``~/.cache/fgdopt/refsim``."""


def refsim_dir(directory: str | os.PathLike | None = None) -> Path:
    """Where the reference run's files are: ``directory``, ``$FGDOPT_REFSIM``, else ``~/.cache/fgdopt/refsim``
    (:func:`fgdopt.datasets.folder`)."""
    return folder(REFSIM, directory)


@dataclass(frozen=True, eq=False)
class RefsimRun:
    """One logged run of the reference simulator, in fgdopt's terms.

    Attributes
    ----------
    tasks : the arrivals in order (trace tasks, then clones named ``NAME-tuned-K``).
    node : int64 (n_steps,), the node index each arrival went to, -1 when it failed.
    frag_after : float64 (n_steps,), cluster F(M) in milli-GPU after each step, as the reference printed it.
    ranks : int64 (n_nodes,), the node ranks of the run's tie rule (``ranks[node]``, lowest wins).
    """

    tasks: TaskSet
    node: np.ndarray
    frag_after: np.ndarray
    ranks: np.ndarray

    def allocated_pct(self, cluster: Cluster) -> float:
        """The run's final GPU allocation in percent of capacity, from its decisions."""
        placed = self.node != UNPLACED
        return 100.0 * int(self.tasks.gpu_demand[placed].sum()) / cluster.gpu_capacity_milli


def load_refsim(cluster: Cluster, trace: TaskSet, directory: str | os.PathLike | None = None) -> RefsimRun:
    """Read the reference run against ``cluster`` and ``trace`` (the openb GPU nodes and default pod list).

    Raises
    ------
    FileNotFoundError : the log or rank file is missing (the message names the folder).
    ValueError : the log names a pod or node that ``trace`` / ``cluster`` does not have.
    """
    where = refsim_dir(directory)
    for name in (LOG_FILE, RANK_FILE):
        if not (where / name).is_file():
            raise FileNotFoundError(f"{name} not found in {where} (set FGDOPT_REFSIM to the refsim folder)")
    verify(REFSIM, where)
    log = pd.read_csv(where / LOG_FILE)
    node_index = {name: i for i, name in enumerate(cluster.names)}
    task_index = {name: i for i, name in enumerate(trace.names)}

    def lookup(table: dict, name: str, kind: str) -> int:
        if name not in table:
            raise ValueError(f"the reference log names {kind} {name!r}, which the loaded trace does not have")
        return table[name]

    pods = log["pod"].astype(str)
    source = [lookup(task_index, p.split(CLONE_MARK)[0], "pod") for p in pods]
    tasks = trace.take(source)
    tasks = TaskSet(tasks.cpu_milli, tasks.memory_mib, tasks.num_gpu, tasks.gpu_milli, tasks.gpu_spec, tuple(pods))
    node = np.array([UNPLACED if n == "FAILED" else lookup(node_index, n, "node") for n in log["node"]])
    ranks_frame = pd.read_csv(where / RANK_FILE)
    ranks = np.empty(cluster.n_nodes, dtype=np.int64)
    ranks[[lookup(node_index, n, "node") for n in ranks_frame["node"]]] = ranks_frame["rank"].to_numpy()
    return RefsimRun(tasks, node, log["frag_amount_after"].to_numpy(dtype=np.float64), ranks)


def follow(run: RefsimRun, cluster: Cluster, workload: Workload, policy_name: str = "fgd") -> pd.DataFrame:
    """Replay ``policy_name`` along the reference's decisions, one row per step.

    At each step the policy (built with the run's node ranks) chooses for the arriving task on the
    reference's state so far; then the task is placed where the reference placed it, on the GPUs the
    policy would take on that node. Columns: ``step``, ``node`` (the policy's choice, -1 = none),
    ``reference`` (the log's node), ``match``, ``frag_after`` (the shared evaluator's F(M) after the
    reference's placement, milli-GPU), ``reference_frag_after`` (the log's) and ``placed`` (whether the
    reference's node could be followed: False where it was infeasible here).
    """
    policy = make_policy(policy_name, workload=workload, ranks=run.ranks)
    state = ClusterState(cluster, run.tasks)
    frag = node_fragmentations(state, workload)
    chosen = np.full(len(run.tasks), UNPLACED)
    placed = np.ones(len(run.tasks), dtype=bool)
    frag_after = np.empty(len(run.tasks))
    for i in range(len(run.tasks)):
        task = run.tasks[i]
        choice = policy(state, task)
        if choice is not None:
            chosen[i] = choice[0]
        target = int(run.node[i])
        if target != UNPLACED:
            if state.fits(task, target):
                state.place(i, target, policy.gpus(state, task, target))
                frag[target] = node_fragmentations(state, workload, np.array([target]))[0]
            else:
                placed[i] = False
        frag_after[i] = frag.sum()
    return pd.DataFrame({"step": np.arange(len(run.tasks)), "node": chosen, "reference": run.node,
                         "match": chosen == run.node, "frag_after": frag_after,
                         "reference_frag_after": run.frag_after, "placed": placed})
