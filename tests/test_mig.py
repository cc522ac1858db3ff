"""MIG: the profile table, the slice rule in the shared state, the MIG evaluator, policies and exact models."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fgdopt.frag import Workload
from fgdopt.instance import Instance
from fgdopt.mig.frag import mig_fragmentation, mig_node_fragmentations
from fgdopt.mig.slices import MIG_MODELS
from fgdopt.mig.suites import MIG_KNOWN_OPTIMA, mig_adversarial_instances, mig_instance, task_slices
from fgdopt.model import Cluster, TaskSet
from fgdopt.policies import MIG_POLICY_NAMES
from fgdopt.simulate import run_online
from fgdopt.state import ClusterState, InfeasiblePlacement, Placement, validate
from formulations.mig import brute_force, config_bound, solve_mig

# NVIDIA MIG User Guide, "Supported MIG Profiles" (placement diagrams; `nvidia-smi mig -lgipp` notation).
GUIDE = {
    "A100-40GB": {"1g.5gb": "{0,1,2,3,4,5,6}:1", "1g.10gb": "{0,2,4,6}:2", "2g.10gb": "{0,2,4}:2",
                  "3g.20gb": "{0,4}:4", "4g.20gb": "{0}:4", "7g.40gb": "{0}:8"},
    "A100-80GB": {"1g.10gb": "{0,1,2,3,4,5,6}:1", "1g.20gb": "{0,2,4,6}:2", "2g.20gb": "{0,2,4}:2",
                  "3g.40gb": "{0,4}:4", "4g.40gb": "{0}:4", "7g.80gb": "{0}:8"},
    "H100-80GB": {"1g.10gb": "{0,1,2,3,4,5,6}:1", "1g.20gb": "{0,2,4,6}:2", "2g.20gb": "{0,2,4}:2",
                  "3g.40gb": "{0,4}:4", "4g.40gb": "{0}:4", "7g.80gb": "{0}:8"},
    "A30-24GB": {"1g.6gb": "{0,1,2,3}:1", "2g.12gb": "{0,2}:2", "4g.24gb": "{0}:4"},
}


def test_every_profile_matches_the_guide():
    assert set(MIG_MODELS) == set(GUIDE)
    for name, model in MIG_MODELS.items():
        got = {p.name: "{" + ",".join(map(str, p.starts)) + "}:" + str(p.size) for p in model.profiles}
        assert got == GUIDE[name]
        assert model.n_slices == (4 if name == "A30-24GB" else 8)


def _two_plus_two() -> ClusterState:
    c = Cluster([64000], [1 << 20], [2], ["A100-40GB"])
    t = TaskSet([1000] * 5, [0] * 5, [1] * 5, [571, 285, 571, 285, 428])      # 4g, 2g, 4g, 2g, then 3g
    s = ClusterState(c, t)
    for i, g in enumerate([0, 0, 1, 1]):
        s.place(i, 0, (g,))
    return s


def test_two_plus_two_free_slices_strand_a_3g_task():
    s = _two_plus_two()
    assert s.slices[0].tolist() == [0b00111111, 0b00111111]                   # slices 6, 7 free on each GPU
    task = s.tasks[4]
    assert not s.feasible_nodes(task).any()
    with pytest.raises(InfeasiblePlacement, match="MIG"):
        s.place(4, 0, (0,))
    w = Workload.from_shapes([(1000, 1, 428, 1.0)])
    assert mig_node_fragmentations(s, w).tolist() == [4.0]                    # all 4 free slices stranded
    assert mig_fragmentation(s, w) == (4.0, 4, 1.0)
    w2 = Workload.from_shapes([(1000, 1, 428, 0.5), (1000, 1, 142, 0.5)])    # a 1g can use slice 6
    assert mig_node_fragmentations(s, w2).tolist() == [2.0]


def test_validate_rejects_overlap_and_disallowed_starts():
    c = Cluster([64000], [1 << 20], [1], ["A100-40GB"])
    t = TaskSet([1000] * 2, [0] * 2, [1, 1], [428, 428])
    ok = validate(c, t, Placement([0, 0], [(0,), (0,)], [(0,), (4,)]))
    assert ok.slices[0, 0] == 0xFF and ok.starts_of == [(0,), (4,)]
    with pytest.raises(InfeasiblePlacement, match="overlaps"):
        validate(c, t, Placement([0, 0], [(0,), (0,)], [(0,), (0,)]))
    with pytest.raises(InfeasiblePlacement, match="cannot start"):
        validate(c, t, Placement([0, -1], [(0,), ()], [(2,), ()]))
    s = validate(c, t, Placement([0, -1], [(0,), ()], [(4,), ()]))
    s.remove(0)
    assert s.slices[0, 0] == 0


def test_non_mig_clusters_are_untouched():
    c = Cluster([8000], [1024], [1], ["T4"])
    s = validate(c, TaskSet([1000], [0], [1], [600]), Placement([0], [(0,)]))
    assert s.mig is None and s.placement().starts is None


@pytest.mark.parametrize("inst", mig_adversarial_instances(), ids=lambda i: i.name)
def test_adversarial_optima_exact_and_brute_force(inst):
    opt = MIG_KNOWN_OPTIMA[inst.name]
    assert brute_force(inst) == opt
    for solver in ("cpsat", "highs"):
        sol = solve_mig(inst, solver, time_limit=10)
        assert (sol.status, sol.objective, sol.bound) == ("optimal", opt, opt)
    assert config_bound(inst).bound >= opt


def test_gpu_spec_pins_tasks_to_their_mig_model():
    """An A100-40GB node and an A30-24GB node, one GPU each; two full-GPU tasks pinned to the A30: one runs there
    (4g.24gb, 4 slices), the A100 may take neither. The exact models and the configuration bound ignored the pin
    (the models placed the second task on the A100, 8 + 4 slices, and validation refused it; the bound said 12)."""
    cluster = Cluster([8000, 8000], [1 << 20] * 2, [1, 1], ["A100-40GB", "A30-24GB"])
    inst = Instance("pinned", cluster, TaskSet([1000, 1000], [0, 0], [1, 1], [1000, 1000], ["A30-24GB"] * 2))
    assert brute_force(inst) == 4
    for solver in ("cpsat", "highs"):
        sol = solve_mig(inst, solver, time_limit=10)
        assert (sol.status, sol.objective, sol.bound) == ("optimal", 4, 4)
        assert sol.placement.node.tolist() in ([1, -1], [-1, 1])
    assert config_bound(inst).bound == 4


@st.composite
def mixed_instances(draw) -> Instance:
    """1-2 nodes of 0-2 GPUs of mixed MIG models, CPU and memory that bind; 1-4 tasks: CPU-only, any per-GPU demand
    (mapped to the smallest covering profile), one or two full GPUs, some pinned to models."""
    models = ["A100-40GB", "A30-24GB", "A100-80GB"]
    n = draw(st.integers(1, 2))
    nodes = draw(st.lists(st.tuples(st.sampled_from(models), st.integers(0, 2), st.sampled_from([4000, 12000]),
                                    st.sampled_from([2048, 1 << 20])), min_size=n, max_size=n))
    shapes = st.sampled_from([(0, 0), (1, 142), (1, 300), (1, 500), (1, 571), (1, 999), (1, 1000), (2, 1000)])
    tasks = draw(st.lists(st.tuples(shapes, st.sampled_from([0, 4000, 8000]), st.sampled_from([0, 1024, 2048]),
                                    st.sampled_from(["", "A30-24GB", "A100-40GB|A100-80GB"])), min_size=1, max_size=4))
    cluster = Cluster([c for _, _, c, _ in nodes], [m for _, _, _, m in nodes], [g for _, g, _, _ in nodes],
                      [mo for mo, _, _, _ in nodes])
    return Instance("mixed", cluster, TaskSet([c for _, c, _, _ in tasks], [m for _, _, m, _ in tasks],
                                              [s[0] for s, _, _, _ in tasks], [s[1] for s, _, _, _ in tasks],
                                              [sp if s[0] else "" for s, _, _, sp in tasks]))


@settings(max_examples=30, deadline=None)
@given(mixed_instances())
def test_exact_equals_brute_force_on_mixed_models_and_pins(inst):
    opt = brute_force(inst)
    for solver in ("cpsat", "highs"):
        sol = solve_mig(inst, solver, time_limit=10)
        assert (sol.status, sol.objective) == ("optimal", opt)
    assert config_bound(inst).bound >= opt


def test_first_fit_falls_into_the_alignment_trap():
    inst = [i for i in mig_adversarial_instances() if i.name == "adv-mig-alignment"][0]
    res = run_online(inst.cluster, inst.tasks, "mig-first-fit", workload=Workload.from_tasks(inst.tasks))
    assert int(task_slices(inst.cluster, inst.tasks)[res.placement.placed].sum()) == 4


def _tiny(data) -> Instance:
    model = data.draw(st.sampled_from(["A100-40GB", "A30-24GB"]))
    n = data.draw(st.integers(1, 2))
    gpus = data.draw(st.lists(st.integers(1, 2), min_size=n, max_size=n))
    codes = [0, *sorted({p.milli for p in MIG_MODELS[model].profiles})]
    k = data.draw(st.integers(1, 5))
    milli = data.draw(st.lists(st.sampled_from(codes), min_size=k, max_size=k))
    cpu = data.draw(st.lists(st.sampled_from([1000, 8000]), min_size=k, max_size=k))
    cluster = Cluster([12000] * n, [1 << 20] * n, gpus, [model] * n)
    tasks = TaskSet(cpu, [0] * k, [1 if m else 0 for m in milli], milli)
    return Instance("tiny", cluster, tasks)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_policy_le_exact_eq_brute_le_bound(data):
    inst = _tiny(data)
    sizes = task_slices(inst.cluster, inst.tasks)
    opt = brute_force(inst)
    sol = solve_mig(inst, "cpsat", time_limit=10)
    assert sol.status == "optimal" and sol.objective == opt
    assert config_bound(inst).bound >= opt
    w = Workload.from_tasks(inst.tasks)
    for name in MIG_POLICY_NAMES:
        res = run_online(inst.cluster, inst.tasks, name, workload=w)
        validate(inst.cluster, inst.tasks, res.placement)
        assert int(sizes[res.placement.placed].sum()) <= opt


def test_tasks_objective_and_study_instance():
    inst = mig_instance(2, seed=1)
    sol = solve_mig(inst, "cpsat", objective="tasks", time_limit=10)
    assert sol.info["unit"] == "tasks" and sol.objective == int(sol.placement.placed.sum())
    w = Workload.from_tasks(inst.tasks)
    fgd = run_online(inst.cluster, inst.tasks, "mig-fgd", workload=w)
    exact = solve_mig(inst, "cpsat", time_limit=10, warm_start=fgd.placement, proven_bound=config_bound(inst).bound)
    assert np.sum(task_slices(inst.cluster, inst.tasks)[fgd.placement.placed]) <= exact.objective <= exact.bound


@pytest.mark.parametrize(("ratio", "arrivals"), [(1.0, [100]), (0.5, [50]), (1.3, [100, 130])])
def test_mig_study_has_one_row_per_arrival_point(ratio, arrivals):
    # --ratio 1 solved the 100% prefix twice (two sets of identical rows); ratio <= 1 drew no curves (an empty panel)
    from experiments.mig import run

    frame, curves = run([1], [0], ratio, quick=True)
    assert sorted(set(frame["arrival"])) == arrivals
    assert len(frame) == len(arrivals) * (len(MIG_POLICY_NAMES) + 2)       # policies, the bound, exact-cpsat
    assert not frame.duplicated(["instance", "method"]).any()
    assert sorted(set(curves["method"])) == sorted(MIG_POLICY_NAMES)


# -- the MIG mapping and the instance builders (fgdopt.mig.suites) ------------------------------------------------
# Compute codes floor(1000 * g / max_g): A100 (max 7g) 1g 142, 2g 285, 3g 428, 4g 571, 7g 1000; A30 (max 4g) 1g 250,
# 2g 500, 4g 1000. A demand maps to the smallest code >= it.
@pytest.mark.parametrize(("model", "demands", "codes"), [
    ("A100-40GB", [1, 142, 143, 285, 286, 428, 429, 571, 572, 999],
                  [142, 142, 285, 285, 428, 428, 571, 571, 1000, 1000]),
    ("A30-24GB", [1, 250, 251, 500, 501, 999], [250, 250, 500, 500, 1000, 1000]),
])
def test_map_to_profiles_takes_the_smallest_covering_profile(model, demands, codes):
    from fgdopt.mig.suites import map_to_profiles

    n = len(demands) + 3
    # the sharing demands, then a CPU-only task, a whole-GPU task and a 2-GPU task, some with a GPU-type constraint
    tasks = TaskSet(list(range(1000, 1000 + n)), [64] * n, [1] * len(demands) + [0, 1, 2], [*demands, 0, 1000, 1000],
                    ["T4"] * (n - 1) + ["V100M16|G2"], names=tuple(f"t{i}" for i in range(n)))
    mapped = map_to_profiles(tasks, model)
    assert mapped.gpu_milli.tolist() == [*codes, 0, 1000, 1000]    # CPU-only stays 0, whole GPUs the full profile
    assert mapped.gpu_spec.tolist() == [""] * n                    # every GPU of a MIG cluster is the one model
    for field in ("cpu_milli", "memory_mib", "num_gpu"):
        assert getattr(mapped, field).tolist() == getattr(tasks, field).tolist()
    assert mapped.names == tasks.names


def test_mig_cluster_keeps_the_openb_node_mix():
    from fgdopt.mig.suites import mig_cluster

    # openb's node types by count: G2x8-96c 549, T4x2-104c 387, P100x2-16c 107, then 39 and fewer of 1213 nodes.
    # 8 nodes: quotas 3.62, 2.55, 0.71, 0.26, ...; floors 3 + 2 + 0 = 5; the 3 left go to the largest fractions
    # (0.71, 0.62, 0.55): 4 G2x8-96c, 3 T4x2-104c, 1 P100x2-16c, each keeping its cores, memory and GPU count.
    c = mig_cluster(8)
    assert c.gpu.tolist() == [8] * 4 + [2] * 3 + [2]
    assert c.cpu_milli.tolist() == [96000] * 4 + [104000] * 3 + [16000]
    assert c.memory_mib.tolist() == [393216] * 4 + [524288] * 3 + [122880]
    assert set(c.models) == {"A100-40GB"} and c.names[0] == "G2x8-96c-A100-40GB-0"
    assert set(mig_cluster(3, "A30-24GB").models) == {"A30-24GB"}
    with pytest.raises(ValueError, match="unknown MIG model"):
        mig_cluster(4, "T4")


@pytest.mark.parametrize("model", ["A100-40GB", "A30-24GB"])
def test_mig_instance_draws_up_to_the_ratio(model):
    from fgdopt.mig.suites import capacity_slices, mig_shapes

    inst = mig_instance(4, seed=3, model=model)
    assert inst.name == f"mig-{model}-n4-r1.3-s3"
    assert inst.to_dict() == mig_instance(4, seed=3, model=model).to_dict()          # seeded: the same instance
    assert inst.to_dict() != mig_instance(4, seed=4, model=model).to_dict()
    mig = MIG_MODELS[model]
    codes = {p.milli for p in mig.profiles if p.requestable}
    assert set(inst.tasks.gpu_milli[inst.tasks.num_gpu > 0].tolist()) <= codes
    assert set(inst.tasks.gpu_spec.tolist()) == {""}
    # every task is one of the mapped shapes that fit an empty node
    table = mig_shapes(inst.cluster, model)
    shapes = {tuple(r) for r in table[["cpu_milli", "memory_mib", "num_gpu", "gpu_milli"]].itertuples(index=False)}
    biggest = int(task_slices(inst.cluster, TaskSet(*(table[k].to_numpy() for k in ("cpu_milli", "memory_mib",
                                                                                     "num_gpu", "gpu_milli")))).max())
    assert {t for t in zip(inst.tasks.cpu_milli.tolist(), inst.tasks.memory_mib.tolist(), inst.tasks.num_gpu.tolist(),
                           inst.tasks.gpu_milli.tolist(), strict=True)} <= shapes
    # the stop rule: at most 1.3 x the slices, and the dropped next draw (at most the biggest shape) would pass it
    total, limit = int(task_slices(inst.cluster, inst.tasks).sum()), 1.3 * capacity_slices(inst.cluster)
    assert capacity_slices(inst.cluster) == mig.n_slices * inst.cluster.total_gpus
    assert limit - biggest < total <= limit


def test_mig_study_resumes_its_runs(tmp_path, capsys):
    """``--resume`` reuses the finished run of each node count and seed (``OUTPUT/.runs/mig``): the same rows, times
    included; without it the run starts afresh."""
    from experiments.mig import main

    argv = ["--quick", "--nodes", "1", "--seeds", "0", "--ratio", "1", "--output", str(tmp_path)]
    assert main(argv) == 0
    first = (tmp_path / "mig.csv").read_text()
    assert (tmp_path / "mig.png").is_file() and len(list((tmp_path / ".runs" / "mig").glob("*.pkl"))) == 1
    assert main([*argv, "--resume"]) == 0
    assert (tmp_path / "mig.csv").read_text() == first
    assert "1 nodes, seed 0, 100% arrived: slices accepted by" in capsys.readouterr().out


@pytest.mark.parametrize(("config", "instances"), [("all-1g", ["1g.5gb"] * 7), ("all-2g", ["2g.10gb"] * 3),
                                                   ("all-3g", ["3g.20gb"] * 2), ("all-4g", ["4g.20gb"]),
                                                   ("all-7g", ["7g.40gb"]),
                                                   ("all-balanced", ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"])])
def test_each_named_config_is_a_valid_static_layout_of_its_instances(config, instances):
    """mig-parted's example configs on an A100-40GB (their names and instance counts): each builds into a valid
    static layout (allowed starts, disjoint slices) of exactly those instances."""
    from fgdopt.mig.slices import static_model_name

    name = static_model_name("A100-40GB", config)
    assert sorted(item.split("@")[0] for item in name[name.index("[") + 1:-1].split("+")) == sorted(instances)


def test_a_ratio_below_the_first_task_stops_at_the_door(tmp_path, capsys):
    """``--ratio 1e-6`` on one node: the first task drawn (1 slice of the node's 8) is above the limit, so the instance
    has no task; the study stops in one line naming the ratio that draws one (it was a traceback from the first run,
    FGD's target workload of no task); that ratio runs."""
    from experiments.mig import main

    argv = ["--quick", "--nodes", "1", "--seeds", "0", "--output", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--ratio", "1e-6"])
    assert exc.value.code == 2 and not (tmp_path / "out").exists()
    assert capsys.readouterr().err.strip().endswith("error: argument --ratio: at 1e-06 x the memory slices of 1 node, "
                                                    "seed 0 draws no task (its first takes 0.125 of them); raise it "
                                                    "to 0.125 or more")
    assert main([*argv, "--ratio", "0.125"]) == 0
    assert "1 nodes, seed 0, 12% arrived: slices accepted by mig-fgd 8," in capsys.readouterr().out
