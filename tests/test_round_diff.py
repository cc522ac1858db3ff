"""The round loop's diff (:meth:`fgdopt.timeline.rounds.RoundLoop._place`) on nodes of a type the policy does not
know, and the order of the round's runs, by hand."""

from __future__ import annotations

import numpy as np

from fgdopt.hetero.rounds import ROUND_S, Gavel
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState
from fgdopt.timeline.rounds import RoundLoop


def _loop_on(cluster: Cluster, tasks: TaskSet) -> tuple[RoundLoop, ClusterState]:
    """A round loop of Gavel on the one type ``a`` (X never asked for) and an empty state of ``cluster``."""
    n = len(tasks)
    loop = RoundLoop(Gavel(lambda ids, view: None, {"a": np.ones(n)}, np.ones(n), ("a",)), round_s=ROUND_S)
    return loop, ClusterState(cluster, tasks)


def test_a_job_on_a_node_of_no_known_type_that_the_decision_leaves_out_is_preempted():
    """Node 0 is of type a (the policy's only type), node 1 of type c (none of the policy's: node type -1). Job 0 (1
    GPU) runs on node 1; the decision runs only job 1, on a. Job 0 is not in the decision, so it is preempted (a job
    outside the decision must not count as keeping the type -1 of its node); job 1 takes node 0's GPU 0."""
    cluster = Cluster([64000] * 2, [262144] * 2, [1, 1], ["a", "c"])
    loop, state = _loop_on(cluster, TaskSet([0] * 2, [0] * 2, [1, 1], [1000] * 2))
    state.place(0, 1, (0,))
    node_type, of_type, type_gpus = loop._types(cluster)
    assert node_type.tolist() == [0, -1] and type_gpus == (1,)
    plan, placed = loop._place(state, np.array([0]), {1: 0}, node_type, of_type)
    assert plan.victims == (0,)
    assert [(m.task, m.node, m.gpus) for m in plan.admits] == [(1, 0, (0,))]
    assert placed.runs == {1: 0}


def test_the_runs_are_the_kept_jobs_then_the_admitted_ones_in_placement_order():
    """Four 1-GPU nodes of type a; jobs 0 and 2 run on nodes 0 and 1. The decision (given in the order 3, 2, 1) keeps
    job 2 and admits jobs 1 and 3; job 0, left out, is preempted. The free nodes, all with one free GPU, are taken by
    index: job 1 on node 0 (freed by job 0), job 3 on node 2. The round's runs list job 2 first, then 1, then 3 (the
    order Gavel adds the time they received in)."""
    cluster = Cluster([64000] * 4, [262144] * 4, [1] * 4, ["a"] * 4)
    loop, state = _loop_on(cluster, TaskSet([0] * 4, [0] * 4, [1] * 4, [1000] * 4))
    state.place(0, 0, (0,))
    state.place(2, 1, (0,))
    node_type, of_type, _ = loop._types(cluster)
    plan, placed = loop._place(state, np.array([0, 2]), {3: 0, 2: 0, 1: 0}, node_type, of_type)
    assert plan.victims == (0,)
    assert [(m.task, m.node, m.gpus) for m in plan.admits] == [(1, 0, (0,)), (3, 2, (0,))]
    assert list(placed.runs.items()) == [(2, 0), (1, 0), (3, 0)]
