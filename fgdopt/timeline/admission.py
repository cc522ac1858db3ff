"""Admission at submission: which jobs the cluster can never hold, and why (docs/semantics.md, "Time", step 2).

A job whose shape fits no *empty* node is **rejected** at its submission: it is never queued, gets no start and
leaves every objective. This module is the one place that decides it and names the reason; the engine
(:func:`fgdopt.timeline.simulate`, its ``reason`` per job) and the schedule check
(:func:`fgdopt.timeline.schedule.rejected_jobs`) both ask :func:`rejection_reasons`.

The reason is the first test, in the order of :data:`REJECT_REASONS`, that leaves no node of the cluster (each
test narrows the nodes the previous ones left):

==============  =======================================================================================
``gpu_spec``    no node has a GPU model the job's ``gpu_spec`` allows (GPU jobs only)
``gpus``        no node of an allowed model has ``num_gpu`` GPUs
``gpu_milli``   those nodes have the GPUs, but no ``gpu_milli`` share of them is offered (MIG: no instance
                of that size)
``cpu``         no node left has ``cpu_milli`` milli-cores
``memory``      no node left has ``memory_mib`` MiB
``workers``     a gang: its ``workers`` parts do not fit the empty cluster together (each empty node holds
                as many parts as its CPU, memory and GPUs allow)
==============  =======================================================================================

A job that passes every test fits some empty node (the rule of :meth:`fgdopt.state.ClusterState.feasible_nodes`,
which is asked for the GPU test, so MIG and every later rule are the same here), and its reason is ``""``.
``dropped`` jobs (the ``none`` discipline, no queue) fit an empty node but found no room at their arrival: their
reason is ``busy`` (:data:`DROPPED_REASON`).
"""

from __future__ import annotations

import numpy as np

from fgdopt.model import Cluster, Task, TaskSet
from fgdopt.state import ClusterState

REJECT_REASONS = {
    "gpu_spec": "no node has a GPU model its gpu_spec allows",
    "gpus": "no node of an allowed GPU model has num_gpu GPUs",
    "gpu_milli": "no node offers gpu_milli of a GPU (MIG: no instance of that size)",
    "cpu": "no node that holds its GPUs (if any) has cpu_milli milli-cores",
    "memory": "no node that holds its GPUs (if any) and its CPU has memory_mib MiB",
    "workers": "the gang's workers do not fit the empty cluster together",
}
"""Why a job is rejected at submission (module docstring), in the order the tests are made."""
DROPPED_REASON = "busy"
"""The reason of a dropped job: it fits an empty node, but no node had room at its arrival (``none`` queue)."""


def rejection_reasons(cluster: Cluster, tasks: TaskSet, *, spans: bool = False) -> np.ndarray:
    """Why each task fits no empty node of ``cluster``: a key of :data:`REJECT_REASONS`, or ``""`` where it fits.

    A gang (``task.workers > 1``) whose single part fits is rejected with ``workers`` when its parts do not fit the
    empty cluster together (:meth:`~fgdopt.state.ClusterState.parts_fit`, the state's one rule).

    Parameters
    ----------
    cluster, tasks : the nodes and the job shapes (one per job, or the distinct shapes).
    spans : the mechanism may place a whole-GPU job over several nodes of one model
        (:meth:`~fgdopt.state.ClusterState.parts_fit`): such a job is admitted when it fits that way.

    Returns
    -------
    object array of str, one per task.
    """
    empty = ClusterState(cluster, tasks)                       # a MIG cluster brings its MIG layout
    reasons = np.full(len(tasks), "", dtype=object)
    for i, t in enumerate(tasks):
        if empty.feasible_nodes(t).any() or (spans and empty.parts_fit(t)):
            if not empty.parts_fit(t):                      # a gang whose parts do not fit together
                reasons[i] = "workers"
            continue
        nodes = np.ones(cluster.n_nodes, dtype=bool)
        if t.num_gpu:
            nodes = empty.spec_mask(t.gpu_spec)
            if not nodes.any():
                reasons[i] = "gpu_spec"
                continue
            nodes = nodes & (cluster.gpu >= t.num_gpu)
            if not nodes.any():
                reasons[i] = "gpus"
                continue
            nodes = nodes & empty.feasible_nodes(Task(0, 0, t.num_gpu, t.gpu_milli, t.gpu_spec))
            if not nodes.any():
                reasons[i] = "gpu_milli"
                continue
        nodes = nodes & (cluster.cpu_milli >= t.cpu_milli)
        if not nodes.any():
            reasons[i] = "cpu"
            continue
        reasons[i] = "memory"                                    # the last test: feasible_nodes said no
    return reasons


def reason_lines(reasons: np.ndarray) -> list[str]:
    """One terminal line per reason present in ``reasons`` (``""`` skipped): ``N job(s) rejected: <why>``, in
    the order of :data:`REJECT_REASONS`, then ``busy`` (dropped)."""
    keys, counts = np.unique(np.asarray(reasons, dtype=str), return_counts=True)
    count = dict(zip(keys.tolist(), counts.tolist(), strict=True))
    lines = [f"{count[k]} job(s) rejected ({k}): {why}" for k, why in REJECT_REASONS.items() if k in count]
    if DROPPED_REASON in count:
        lines.append(f"{count[DROPPED_REASON]} job(s) dropped ({DROPPED_REASON}): no node had room at the arrival")
    return lines
