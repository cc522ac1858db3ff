"""The fragmentation evaluator: docs/semantics.md's worked example, hand-worked states, reference == vectorized."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.frag import (
    CATEGORIES,
    Workload,
    cluster_fragmentation,
    fragmentation_after,
    fragmentation_delta,
    node_fragmentation,
    node_fragmentations,
)
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState

# the worked example of docs/semantics.md workload: A (sharing 500), B (one whole GPU), C (CPU-only).
SPEC_W = Workload.from_shapes([(4000, 1, 500, 0.5), (8000, 1, 1000, 0.3), (2000, 0, 0, 0.2)])
EMPTY = TaskSet([], [], [], [])


def state_of(gpu_left_rows, cpu_left, models=None) -> ClusterState:
    """A state whose nodes have exactly the given free GPU capacities and free CPU."""
    n_gpus = [len(r) for r in gpu_left_rows]
    models = models or ["T4"] * len(n_gpus)
    cluster = Cluster([max(c, 1) * 2 for c in cpu_left], [1 << 20] * len(n_gpus), n_gpus, models)
    state = ClusterState(cluster, EMPTY)
    for i, row in enumerate(gpu_left_rows):
        state.gpu_left[i, : len(row)] = row
    state.cpu_left[:] = cpu_left
    return state


def both_forms(gpu_left, cpu_left, workload, model=None) -> float:
    """The reference value, after checking the vectorized form agrees with it."""
    ref = node_fragmentation(gpu_left, cpu_left, workload, model)
    state = state_of([gpu_left], [cpu_left], [model or "T4"])
    assert node_fragmentations(state, workload)[0] == pytest.approx(ref)
    return ref


def test_spec_worked_example():
    # A fits GPU 1 (600 >= 500): fragment 100; B needs a free GPU: 700; C is CPU-only: 700.
    assert both_forms([100, 600], 16000, SPEC_W) == pytest.approx(0.5 * 100 + 0.3 * 700 + 0.2 * 700)
    assert both_forms([100, 600], 16000, SPEC_W) == pytest.approx(400.0)


def test_all_free_node():
    # A and B fit with no GPU below their demand; only C (CPU-only) sees the 2000 idle milli-GPU.
    assert both_forms([1000, 1000], 16000, SPEC_W) == pytest.approx(0.2 * 2000)


def test_cpu_lacking_node():
    # A fits (cpu 5000 >= 4000): fragment 300; B has a free GPU but lacks CPU (q4): 1300; C: 1300.
    assert both_forms([1000, 300], 5000, SPEC_W) == pytest.approx(0.5 * 300 + 0.3 * 1300 + 0.2 * 1300)


def test_whole_gpu_shapes():
    w = Workload.from_shapes([(1000, 2, 1000, 0.6), (1000, 1, 250, 0.4)])
    # 2 free GPUs: the 2-GPU shape fits and sees every partly used GPU (700 + 200) as fragment;
    # the 250-milli shape only sees the 200 GPU.
    assert both_forms([1000, 1000, 700, 200], 64000, w) == pytest.approx(0.6 * 900 + 0.4 * 200)
    # one free GPU left: the 2-GPU shape cannot be hosted, all 1900 idle is fragment for it.
    assert both_forms([1000, 700, 200], 64000, w) == pytest.approx(0.6 * 1900 + 0.4 * 200)


def test_gpu_spec_no_access():
    w = Workload.from_shapes([(1000, 1, 500, 0.5), (1000, 1, 500, 0.5)], gpu_specs=["V100M16", ""])
    # On a T4 node the V100M16-only shape has no access: all 1400 idle; the other sees the 400 GPU.
    assert both_forms([1000, 400], 10000, w, model="T4") == pytest.approx(0.5 * 1400 + 0.5 * 400)
    assert both_forms([1000, 400], 10000, w, model="V100M16") == pytest.approx(400.0)


def test_cpu_only_workload_and_lack_both():
    assert both_forms([500, 0], 1000, Workload.from_shapes([(2000, 0, 0, 1.0)])) == pytest.approx(500.0)
    # Neither GPU fits 500 and the CPU lacks too (q1): the whole 700 is fragment.
    assert both_forms([400, 300], 1000, Workload.from_shapes([(4000, 1, 500, 1.0)])) == pytest.approx(700.0)


def test_node_without_gpus():
    assert both_forms([], 4000, SPEC_W) == 0.0


def test_breakdown_of_cpu_lacking_node():
    report = cluster_fragmentation(state_of([[1000, 300]], [5000]), SPEC_W)
    assert report.breakdown == pytest.approx({
        "q1_lack_both": 0.0,
        "q2_lack_gpu": 0.5 * 300,          # A's fragment on the 300 GPU
        "q3_satisfied": 0.5 * 1000,        # A's usable part
        "q4_lack_cpu": 0.3 * 1300,         # B fits the GPUs but not the CPU
        "x_satisfied": 0.2 * 1300,         # C's CPU fits
        "x_lack_cpu": 0.0,
        "no_access": 0.0,
    })
    assert report.total == pytest.approx(800.0)
    assert report.idle == 1300
    assert report.rate == pytest.approx(800 / 1300)


def test_breakdown_categories_q1_and_no_access():
    w = Workload.from_shapes([(4000, 1, 500, 0.5), (1000, 1, 100, 0.5)], gpu_specs=["", "V100M32"])
    report = cluster_fragmentation(state_of([[400, 300]], [1000]), w)
    assert report.breakdown["q1_lack_both"] == pytest.approx(0.5 * 700)
    assert report.breakdown["no_access"] == pytest.approx(0.5 * 700)
    assert report.total == pytest.approx(700.0)


def test_workload_from_tasks_threshold():
    tasks = TaskSet([1, 1, 1, 1, 2, 2, 3, 3, 4, 5], [0] * 10, [1] * 4 + [0] * 6, [500] * 4 + [0] * 6)
    full = Workload.from_tasks(tasks, 1.0)
    assert len(full) == 5 and full.counts.tolist() == [4, 2, 2, 1, 1]
    # 4 + 2 = 6 < 7 <= 8: the 70% threshold keeps three shapes; ties broken as the reference does, by
    # (cpu_milli, gpu_milli, num_gpu, gpu_spec) descending: of the two shapes counted twice, cpu 3 first.
    w = Workload.from_tasks(tasks, 0.7)
    assert w.cpu_milli.tolist() == [1, 3, 2] and w.popularity.tolist() == pytest.approx([0.5, 0.25, 0.25])
    assert Workload.from_tasks(tasks, 0.5).cpu_milli.tolist() == [1, 3]
    with pytest.raises(ValueError, match="threshold"):
        Workload.from_tasks(tasks, 0.0)


def test_openb_empty_cluster_fragmentation(openb_default):
    cluster, tasks = openb_default
    workload = Workload.from_tasks(tasks)
    assert len(workload) == 35 and int(workload.counts.sum()) == 7766
    report = cluster_fragmentation(ClusterState(cluster, tasks), workload)
    assert report.total == pytest.approx(866_232.55, abs=0.01)
    assert report.rate == pytest.approx(0.13945, abs=5e-6)
    assert sum(report.breakdown.values()) == pytest.approx(report.idle)


# -- properties ------------------------------------------------------------------------------

MODELS = ("T4", "G2", "P100")
SPECS = ("", "T4", "G2|P100")


@st.composite
def workloads(draw) -> Workload:
    shapes, specs = [], []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["cpu", "sharing", "whole"]))
        cpu = draw(st.integers(0, 16)) * 1000
        if kind == "cpu":
            shapes.append((cpu, 0, 0, draw(st.integers(1, 10))))
        elif kind == "sharing":
            shapes.append((cpu, 1, draw(st.integers(1, 999)), draw(st.integers(1, 10))))
        else:
            shapes.append((cpu, draw(st.integers(1, 4)), 1000, draw(st.integers(1, 10))))
        specs.append(draw(st.sampled_from(SPECS)))
    return Workload.from_shapes(shapes, gpu_specs=specs)


gpu_levels = st.sampled_from([0, 100, 250, 300, 500, 600, 999, 1000]) | st.integers(0, 1000)
node_states = st.tuples(st.lists(gpu_levels, max_size=8), st.integers(0, 20) .map(lambda c: c * 1000),
                        st.sampled_from(MODELS))


@settings(max_examples=150, deadline=None)
@given(workloads(), st.lists(node_states, min_size=1, max_size=6))
def test_vectorized_equals_reference(workload, nodes):
    state = state_of([g for g, _, _ in nodes], [c for _, c, _ in nodes], [m for _, _, m in nodes])
    vectorized = node_fragmentations(state, workload)
    report = cluster_fragmentation(state, workload)
    for k, (gpu_left, cpu_left, model) in enumerate(nodes):
        ref = node_fragmentation(gpu_left, cpu_left, workload, model)
        assert vectorized[k] == pytest.approx(ref, abs=1e-6)
        assert report.per_node[k] == pytest.approx(ref, abs=1e-6)
        assert -1e-9 <= ref <= sum(gpu_left) + 1e-9          # 0 <= F_n <= idle(n)
    assert report.total == pytest.approx(vectorized.sum(), abs=1e-6)
    assert sum(report.breakdown.values()) == pytest.approx(report.idle, abs=1e-6)
    assert set(report.breakdown) == set(CATEGORIES)
    assert report.total == pytest.approx(report.idle - report.breakdown["q3_satisfied"], abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(workloads(), st.lists(node_states, min_size=1, max_size=4), st.data())
def test_delta_equals_difference(workload, nodes, data):
    """fragmentation_delta == F after - F before, computed by placing into a copied state."""
    state = state_of([g for g, _, _ in nodes], [c for _, c, _ in nodes], [m for _, _, m in nodes])
    node = data.draw(st.integers(0, len(nodes) - 1))
    n_gpus = len(nodes[node][0])
    chosen = data.draw(st.lists(st.integers(0, max(n_gpus - 1, 0)), unique=True, max_size=n_gpus))
    # a placement the node could take: no chosen GPU and no CPU goes below zero
    milli = data.draw(st.integers(0, min((nodes[node][0][g] for g in chosen), default=1000)))
    cpu = data.draw(st.integers(0, nodes[node][1]))
    mask = np.zeros((1, state.gpu_left.shape[1]), dtype=bool)
    mask[0, chosen] = True
    delta = fragmentation_delta(state, workload, cpu, milli, np.array([node]), mask)
    before = cluster_fragmentation(state, workload).total
    after_state = state.copy()
    after_state.gpu_left[node, chosen] -= milli
    after_state.cpu_left[node] -= cpu
    after = cluster_fragmentation(after_state, workload).total
    assert delta[0] == pytest.approx(after - before, abs=1e-6)
    # F_n' is bit for bit what the evaluator gives the placed node, alone or in a batch of all nodes: FGD's
    # cache relies on it (a placement that changes nothing must score a delta of exactly 0)
    placed = node_fragmentations(after_state, workload)
    assert fragmentation_after(state, workload, cpu, milli, np.array([node]), mask)[0] == placed[node]
    assert node_fragmentations(after_state, workload, np.array([node]))[0] == placed[node]
    if cpu == 0 and (milli == 0 or not chosen):
        assert delta[0] == 0.0


@pytest.mark.parametrize("popularity", [[-0.5, 1.5], [0.5, 0.4]])
def test_a_workload_needs_non_negative_popularities_summing_to_one(popularity):
    with pytest.raises(ValueError, match="popularities must be >= 0 and sum to 1"):
        Workload(np.array([1000, 1000]), np.array([1, 1]), np.array([500, 1000]), ("", ""), np.array(popularity),
                 np.array([1, 1]))


@pytest.mark.parametrize("popularity", [(-1.0, 2.0), (0.0, 0.0)])
def test_workload_from_shapes_needs_non_negative_popularities_with_a_positive_sum(popularity):
    with pytest.raises(ValueError, match="popularities must be >= 0 with a positive sum"):
        Workload.from_shapes([(1000, 1, 500, popularity[0]), (1000, 1, 1000, popularity[1])])
