"""Topology: ring bandwidth on the DGX-1 graph, the GPU-choice option, topology fragmentation, the exact price."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from fgdopt.frag import Workload, cluster_fragmentation, fragmentation_by_category, node_fragmentation
from fgdopt.instance import Instance
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import make_policy
from fgdopt.simulate import replay, run_online
from fgdopt.state import ClusterState, validate
from fgdopt.suites import random_instance
from fgdopt.topology import SHIPPED, TopologyMap, dgx1_v100, gpus_mask, ring_bandwidth, ring_report
from formulations.topology import solve_topology

DGX = dgx1_v100()


# -- ring bandwidth on the DGX-1 V100 hybrid cube-mesh ------------------------------------------------------
# NVLink pairs (25 GB/s per link): NV2 = 50 on 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 (they form the ring
# 0-3-2-1-5-6-7-4-0); NV1 = 25 on 0-1, 0-2, 1-3, 2-6, 3-7, 4-5, 4-6, 5-7; every other pair crosses the
# sockets over PCIe (SYS, 8 GB/s).

@pytest.mark.parametrize(("gpus", "gbps"), [
    ((0, 3), 50.0),            # one NV2 pair: the 2-ring a-b-a uses that link
    ((0, 1), 25.0),            # NV1
    ((0, 5), 8.0),             # no NVLink: SYS
    ((0, 1, 2, 3), 25.0),      # only 3 NV2 pairs inside (0-3, 1-2, 2-3): any 4-cycle uses an NV1 edge; 0-3-2-1-0 = 25
    ((0, 1, 2, 4), 8.0),       # GPU 4 reaches 1 and 2 only by SYS, and a ring gives it two neighbours
    ((0, 3, 4, 7), 25.0),      # 0-3 NV2, 3-7 NV1, 7-4 NV2, 4-0 NV2
    ((0, 1, 2), 25.0),         # triangle 0-1 NV1, 1-2 NV2, 2-0 NV1
    (tuple(range(8)), 50.0),   # the NV2 ring 0-3-2-1-5-6-7-4-0
])
def test_dgx1_ring_bandwidth(gpus, gbps):
    assert DGX.ring_of(gpus) == gbps
    assert ring_bandwidth(DGX.bandwidth, gpus) == gbps


def test_dgx1_best_rings_and_brute_force():
    # best 2-ring: an NV2 pair (50); 3 and 4: 25 (the NV2 pairs form one 8-cycle, no triangle or 4-cycle);
    # 8: the NV2 8-cycle (50)
    assert DGX.best_ring(2) == 50 and DGX.best_ring(3) == 25 and DGX.best_ring(4) == 25 and DGX.best_ring(8) == 50
    for gpus in [(0, 1, 2, 4, 5), (1, 2, 5, 6), (0, 2, 4, 6, 7)]:
        brute = max(min(DGX.bandwidth[a, b] for a, b in zip(p, p[1:] + p[:1], strict=True))
                    for p in itertools.permutations(gpus))
        assert DGX.ring_of(gpus) == brute


def test_best_free_set_prefers_ring_then_lowest_indices():
    assert DGX.best_free_set(0xFF, 2) == (0, 3)
    # GPUs 1, 2, 4, 5, 6, 7 free: NV2 pairs among them 1-2, 1-5, 4-7, 5-6, 6-7; lowest ids first
    assert DGX.best_free_set(gpus_mask((1, 2, 4, 5, 6, 7)), 2) == (1, 2)
    # only GPUs 0, 1, 5 free: 0-1 NV1 (25), 1-5 NV2 (50), 0-5 SYS
    assert DGX.best_free_set(gpus_mask((0, 1, 5)), 2) == (1, 5)
    with pytest.raises(ValueError):
        DGX.best_free_set(gpus_mask((0,)), 2)


def test_mapping_is_replaceable(tmp_path):
    default = TopologyMap.default()
    assert default.lookup("G2", 8).name == "dgx1-v100" and default.lookup("T4", 2).name == "pcie-2"
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"G2": "pcie-8", "x2": "pcie-2"}))
    assert TopologyMap.load(path).lookup("G2", 8).name == "pcie-8"
    with pytest.raises(ValueError):
        TopologyMap.from_dict({"G2": "pcie-4"}).lookup("G2", 8)      # 4-GPU graph for an 8-GPU node
    with pytest.raises(ValueError):
        TopologyMap.from_dict({"G2": "no-such-board"})
    assert set(SHIPPED) >= {"dgx1-v100", "nvswitch-8", "pcie-8", "pcie-4", "pcie-2"}


# -- GPU choice ----------------------------------------------------------------------------------------

def _multi_instance() -> Instance:
    inst = random_instance(6, seed=3, node_types={"G2x8-96c": 1})
    extra = TaskSet([8000] * 6, [1024] * 6, [2, 4, 2, 3, 2, 4], [1000] * 6)
    both = TaskSet(np.concatenate([extra.cpu_milli, inst.tasks.cpu_milli]),
                   np.concatenate([extra.memory_mib, inst.tasks.memory_mib]),
                   np.concatenate([extra.num_gpu, inst.tasks.num_gpu]),
                   np.concatenate([extra.gpu_milli, inst.tasks.gpu_milli]),
                   np.concatenate([extra.gpu_spec, inst.tasks.gpu_spec]))
    # 20 trace-like tasks first break the lowest GPUs, then the multi-GPU tasks arrive, then the rest
    order = np.concatenate([np.arange(6, 26), np.arange(6), np.arange(26, len(both))])
    return Instance("multi", inst.cluster, both.take(order))


@pytest.mark.parametrize("policy", ["fgd", "best-fit", "gpu-packing", "gpu-clustering", "random", "dot-product"])
def test_lowest_index_is_the_default_bit_for_bit(policy):
    inst = _multi_instance()
    a = run_online(inst.cluster, inst.tasks, policy, seed=5)
    b = run_online(inst.cluster, inst.tasks, policy, seed=5, gpu_choice="lowest-index")
    assert np.array_equal(a.placement.node, b.placement.node) and a.placement.gpus == b.placement.gpus


def test_best_ring_on_nvswitch_equals_lowest_index_and_improves_dgx1():
    inst = _multi_instance()
    nvswitch = TopologyMap.from_dict({"x8": "nvswitch-8"})
    low = run_online(inst.cluster, inst.tasks, "fgd", seed=1)
    same = run_online(inst.cluster, inst.tasks, "fgd", seed=1, gpu_choice="best-ring", topology=nvswitch)
    assert same.placement.gpus == low.placement.gpus       # every set ties at 300 GB/s: lowest indices
    ring = run_online(inst.cluster, inst.tasks, "fgd", seed=1, gpu_choice="best-ring")
    topo = TopologyMap.default().for_cluster(inst.cluster)
    before = ring_report(topo, inst.tasks.num_gpu, low.placement.node, low.placement.gpus)
    after = ring_report(topo, inst.tasks.num_gpu, ring.placement.node, ring.placement.gpus)
    assert np.array_equal(low.placement.node, ring.placement.node)      # node choice unchanged
    assert ring.placement.gpus != low.placement.gpus                    # ... the GPU choice is not
    assert before.n_tasks == after.n_tasks == 6
    # regression pins (seed-fixed run): lowest-index gives the 2-GPU tasks 20 and 24 an NV1 pair (25 GB/s) where an
    # NV2 pair (50) was free; best-ring gives every multi-GPU task the best ring of its size
    assert before.task[before.misplaced].tolist() == [20, 24] and after.n_misplaced == 0
    assert after.mean_ring_gbps > before.mean_ring_gbps
    validate(inst.cluster, inst.tasks, ring.placement)


def _dgx_with_free(free: tuple[int, ...], policy: str, gpu_choice: str) -> tuple[int, ...]:
    """The GPUs a 2-GPU task gets from ``policy`` on one DGX-1 node whose only free GPUs are ``free`` (the others
    each hold a whole-GPU task); M = {2 whole GPUs: 0.5, 4 whole GPUs: 0.5}."""
    used = [g for g in range(8) if g not in free]
    n = len(used) + 1
    cluster = Cluster([96000], [393216], [8], ["G2"])
    tasks = TaskSet([1000] * n, [1024] * n, [1] * len(used) + [2], [1000] * n)
    state = ClusterState(cluster, tasks)
    for i, g in enumerate(used):
        state.place(i, 0, (g,))
    workload = Workload.from_shapes([(1000, 2, 1000, 0.5), (1000, 4, 1000, 0.5)])
    node, gpus = make_policy(policy, workload=workload, gpu_choice=gpu_choice)(state, tasks[len(used)])
    assert node == 0
    return gpus


def test_gpu_choices_pick_different_sets_hand_worked():
    # Free GPUs 0, 1, 3, 4 of a DGX-1. Their pairs: 0-3 and 0-4 NV2 (50 GB/s), 0-1 and 1-3 NV1 (25), 1-4, 3-4 SYS (8).
    free = (0, 1, 3, 4)
    assert [DGX.ring_of(p) for p in ((0, 1), (0, 3), (0, 4), (1, 3), (1, 4), (3, 4))] == [25, 50, 50, 25, 8, 8]
    for policy in ("fgd", "best-fit", "gpu-packing"):
        assert _dgx_with_free(free, policy, "lowest-index") == (0, 1)   # the two lowest free GPUs
        assert _dgx_with_free(free, policy, "best-ring") == (0, 3)      # 50 GB/s: (0, 3), (0, 4); lowest ids
    # topo-fgd: F_n(m) is idle when no free set reaches the best ring of m's size (2 GPUs: 50, 4 GPUs: 25), else the
    # partly used GPUs' free milli-GPU (none here). Before: (0, 3) serves the 2-GPU shape (0); the only 4-set
    # {0, 1, 3, 4} has ring 8 (GPU 4 has one non-SYS neighbour) -> 4000. F = 0.5 * 0 + 0.5 * 4000 = 2000.
    # After a pair, 2 GPUs are left (2000 idle): the 4-GPU shape cannot fit (2000), the 2-GPU shape is served only
    # if the two left form an NV2 pair. Left {0, 4} after (1, 3) and {0, 3} after (1, 4): F = 1000 (delta -1000);
    # every other pair leaves an NV1 or SYS pair: F = 2000 (delta 0). Tie (1, 3) / (1, 4): the better ring, 25 > 8.
    assert _dgx_with_free(free, "fgd", "topo-fgd") == (1, 3)
    assert _dgx_with_free(free, "fgd-exact", "topo-fgd") == (1, 3)


def test_topo_fgd_is_valid_and_gpu_choice_is_checked():
    inst = _multi_instance()
    res = run_online(inst.cluster, inst.tasks, "fgd", seed=2, gpu_choice="topo-fgd")
    validate(inst.cluster, inst.tasks, res.placement)
    low = run_online(inst.cluster, inst.tasks, "fgd", seed=2)
    topo = TopologyMap.default().for_cluster(inst.cluster)
    # regression pins (seed-fixed run): lowest-index leaves 2 of the 6 multi-GPU tasks on a slower ring than the best
    # of their size, topo-fgd none
    assert ring_report(topo, inst.tasks.num_gpu, low.placement.node, low.placement.gpus).n_misplaced == 2
    assert ring_report(topo, inst.tasks.num_gpu, res.placement.node, res.placement.gpus).n_misplaced == 0
    with pytest.raises(ValueError):
        make_policy("best-fit", gpu_choice="topo-fgd")
    with pytest.raises(ValueError):
        make_policy("per-gpu-dimension", gpu_choice="best-ring")


def test_replay_threads_gpu_choice():
    inst = _multi_instance()
    a = replay(inst.cluster, inst.tasks, "best-fit", seed=4)
    b = replay(inst.cluster, inst.tasks, "best-fit", seed=4, gpu_choice="best-ring")
    assert np.array_equal(a.placement.node, b.placement.node)
    assert a.placement.gpus != b.placement.gpus          # the option reached the policy's GPU choice


# -- topology fragmentation ----------------------------------------------------------------------------
# Workload: A = 2 whole GPUs (p = 0.5), B = a 500-milli share (p = 0.5); one DGX-1 node with 16 cores free.

W = Workload.from_shapes([(1000, 2, 1000, 0.5), (1000, 1, 500, 0.5)])


def _dgx_state(gpu_left: list[int]) -> tuple[ClusterState, object]:
    cluster = Cluster([16000], [1024], [8], ["G2"])
    state = ClusterState(cluster, TaskSet([], [], [], []))
    state.gpu_left[0] = gpu_left
    return state, TopologyMap.default().for_cluster(cluster)


def test_topology_fragmentation_hand_worked():
    # GPUs 0, 1 free (their pair is NV1: 25 < best 50), GPU 2 has 500 left, the rest used: idle = 2500.
    # docs/semantics.md: A fits (2 free GPUs), fragment = GPUs with < 1000 left = 500; B fits, fragment = GPUs < 500 = 0
    #   -> F = 0.5 * 500 + 0.5 * 0 = 250.
    # topology form: no free pair reaches 50 GB/s, so A cannot be hosted well: F(A) = idle = 2500
    #   -> F = 0.5 * 2500 + 0 = 1250, all of A's share in q2_lack_gpu.
    left = [1000, 1000, 500, 0, 0, 0, 0, 0]
    state, topo = _dgx_state(left)
    assert node_fragmentation(left, 16000, W) == 250
    assert node_fragmentation(left, 16000, W, topology=DGX) == 1250
    assert cluster_fragmentation(state, W).total == 250
    report = cluster_fragmentation(state, W, topology=topo)
    assert report.total == 1250 and report.breakdown["q2_lack_gpu"] == 1250
    assert fragmentation_by_category(state, W, topology=topo).sum() == 2500      # categories still sum to idle
    # GPUs 0 and 3 free instead (NV2, 50 GB/s = best): the topology form equals the plain measure, 250
    left = [1000, 0, 500, 1000, 0, 0, 0, 0]
    state, topo = _dgx_state(left)
    assert node_fragmentation(left, 16000, W, topology=DGX) == 250
    assert cluster_fragmentation(state, W, topology=topo).total == 250


def test_topology_fragmentation_matches_reference_on_random_states():
    rng = np.random.default_rng(0)
    w = Workload.from_shapes([(1000, 2, 1000, 0.3), (1000, 4, 1000, 0.2), (2000, 1, 1000, 0.2),
                              (1000, 1, 300, 0.2), (500, 0, 0, 0.1)])
    for _ in range(30):
        left = rng.choice([0, 200, 700, 1000, 1000, 1000], size=8).tolist()
        state, topo = _dgx_state(left)
        ref = node_fragmentation(left, 16000, w, topology=DGX)
        assert cluster_fragmentation(state, w, topology=topo).total == pytest.approx(ref)
        assert ref >= node_fragmentation(left, 16000, w) - 1e-9


# -- the exact price of topology ----------------------------------------------------------------------

def test_exact_with_rule_never_above_without():
    # one 2-socket PCIe box: best 3-ring = 12 (inside a socket), best 2-ring = 16 (a PIX pair).
    # two 3-GPU tasks and one 2-GPU task fill 8 GPUs without the rule (8000 milli); with it the 3-sets sit in
    # one socket each, leaving one GPU per socket, which form no PIX pair: 6000.
    cluster = Cluster([96000], [393216], [8], ["G2"])
    tasks = TaskSet([1000] * 3, [1024] * 3, [3, 3, 2], [1000] * 3)
    inst = Instance("pcie-price", cluster, tasks)
    topo = TopologyMap.from_dict({"x8": "pcie-8"}).for_cluster(cluster)
    free = solve_topology(inst, topo, best_ring=False, time_limit=20)
    rule = solve_topology(inst, topo, best_ring=True, time_limit=20)
    assert (free.status, free.objective) == ("optimal", 8000)
    assert (rule.status, rule.objective) == ("optimal", 6000)
    assert ring_report(topo, tasks.num_gpu, rule.placement.node, rule.placement.gpus).n_misplaced == 0


def test_exact_rule_on_a_dgx1_instance():
    inst = _multi_instance()
    small = Instance("dgx-small", inst.cluster.subset([0]), inst.tasks.take(np.arange(12, 30)))
    topo = TopologyMap.default().for_cluster(small.cluster)
    free = solve_topology(small, topo, best_ring=False, time_limit=20)
    rule = solve_topology(small, topo, best_ring=True, time_limit=20)
    # the 18 tasks ask 24,810 milli-GPU of one 8-GPU node, among them two 4-GPU whole tasks (8000 cores each of 96000);
    # on the 4-cycles 0-1-2-3 and 4-5-6-7 (rings 25 GB/s = the best 4-ring) they fill the node: 8000 with the rule too
    assert sorted(small.tasks.num_gpu[small.tasks.gpu_milli == 1000].tolist())[-2:] == [4, 4]
    assert DGX.ring_of((0, 1, 2, 3)) == DGX.ring_of((4, 5, 6, 7)) == DGX.best_ring(4) == 25
    assert (free.status, free.objective, free.bound) == ("optimal", 8000, 8000)
    assert (rule.status, rule.objective, rule.bound) == ("optimal", 8000, 8000)
    assert ring_report(topo, small.tasks.num_gpu, rule.placement.node, rule.placement.gpus).n_misplaced == 0


def test_study_names_a_policy_of_your_own_and_its_error_names_the_seed(tmp_path, capsys):
    """The rows carried the spec (a path) of a policy with a ``name``; its error did not say which trace and seed."""
    from experiments.topology import main
    from tests.test_frontier import MINE

    (tmp_path / "openb_node_list_gpu_node.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,8,G2\n")
    pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,4000,8192,4,1000\n"
    (tmp_path / "openb_pod_list_default.csv").write_text(pods)
    (tmp_path / "openb_pod_list_multigpu50.csv").write_text(pods)
    (tmp_path / "mine.py").write_text(MINE)
    common = ["--trace", "default", "--seeds", "1", "--jobs", "1", "--exact-seeds", "0", "--exact-nodes", "1",
              "--data", str(tmp_path), "--output", str(tmp_path / "out")]
    assert main([*common, "--policies", f"{tmp_path / 'mine.py'}:Named"]) == 0
    assert set(pd.read_csv(tmp_path / "out" / "topology.csv")["policy"]) == {"my-fit"}
    assert main([*common, "--policies", f"{tmp_path / 'mine.py'}:wrong"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m experiments.topology: openb default seed 1: policy ")


@pytest.mark.parametrize(("gpus", "said"), [((1, 2), "GPUs must be 0..G-1"), (tuple(range(9)), "1 <= G <= 8")])
def test_a_topology_numbers_its_gpus_from_zero_and_holds_at_most_eight(gpus, said):
    """GPUs 1 and 2 (no GPU 0), or nine GPUs 0..8, each fully linked: refused in one line, though every pair has a
    valid edge (each rule alone refuses; a check that needed both broken refused neither)."""
    import networkx as nx

    from fgdopt.topology import Topology

    graph = nx.Graph()
    graph.add_edges_from(itertools.combinations(gpus, 2), kind="PIX", gbps=10.0)
    with pytest.raises(ValueError, match=said.replace(".", r"\.")):
        Topology("bad", graph)


@pytest.mark.parametrize("edge", [None, {"kind": "Ethernet", "gbps": 10.0}, {"kind": "PIX", "gbps": 0.0},
                                  {"kind": "PIX"}])
def test_every_pair_of_gpus_needs_a_valid_link(edge):
    """Three GPUs, pairs 0-1 and 0-2 linked (PIX, 10 Gb/s), pair 1-2 missing, of an unknown kind, or of no
    bandwidth: refused in one line naming the pair (each fault alone)."""
    import networkx as nx

    from fgdopt.topology import Topology

    graph = nx.Graph()
    graph.add_edges_from([(0, 1), (0, 2)], kind="PIX", gbps=10.0)
    graph.add_node(1)
    graph.add_node(2)
    if edge is not None:
        graph.add_edge(1, 2, **edge)
    with pytest.raises(ValueError, match="GPUs 1 and 2 need an edge"):
        Topology("bad", graph)


def test_a_whole_board_is_well_linked_for_every_size():
    """On an empty DGX-1 every size of ring reaches its best (the empty board holds it), the 7- and 8-GPU rings
    included; with GPU 0 busy no 8-GPU ring exists, and a 7-GPU ring over the other seven is the best 7-ring only if
    the best one avoids GPU 0 (checked against ``best_ring_by_size`` and ``ring`` directly)."""
    full = gpus_mask(range(8))
    assert all(DGX.well_linked[k, full] for k in range(9))
    rest = gpus_mask(range(1, 8))
    assert not DGX.well_linked[8, rest]
    assert DGX.well_linked[7, rest] == (DGX.ring[rest] >= DGX.best_ring_by_size[7])
