"""Node configurations: exact GPU packing, their enumeration and the configuration MILP (cross-checked against
brute force with the other exact methods in ``test_formulations``)."""

from __future__ import annotations

import math

import pytest

from fgdopt.instance import Instance
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import validate
from fgdopt.suites import random_instance
from formulations import solve
from formulations.aggregate import aggregate
from formulations.configs import (
    Columns,
    TooManyConfigurations,
    decode,
    encode,
    enumerate_columns,
    master_model,
    node_configurations,
    pack_sharing,
    run_config_milp,
)


def test_pack_sharing_beats_first_fit_decreasing():
    # FFD: [49, 49], [26, 26, 25], [25] -> 3 GPUs; 49+26+25 twice fills exactly 2.
    gpus = pack_sharing((49, 49, 26, 26, 25, 25), 100)
    assert len(gpus) == 2 and sorted(map(sum, gpus)) == [100, 100]
    assert pack_sharing((), 100) == ()
    assert pack_sharing((60, 50, 50, 40), 100) == ((60, 40), (50, 50))


def cpu_bound_instance() -> Instance:
    # Two nodes of 2 GPUs and 10 cores; three 1-GPU tasks of 6 cores: one per node, 2 GPUs. The aggregated
    # model's LP counts CPU per node as a sum (10 / 6 tasks per node -> 3 GPUs); the configuration LP does not.
    cluster = Cluster([10000, 10000], [8192, 8192], [2, 2], ["A", "A"])
    tasks = TaskSet([6000] * 3, [1024] * 3, [1] * 3, [1000] * 3)
    return Instance("cpu-bound", cluster, tasks)


def test_configuration_lp_sees_cpu():
    instance = cpu_bound_instance()
    assert solve(instance, "lp").bound == 3000
    assert solve(instance, "config-lp").bound == 2000
    sol = solve(instance, "config-milp")
    assert (sol.status, sol.objective, sol.bound) == ("optimal", 2000, 2000)
    assert sorted(sol.placement.node.tolist()) == [-1, 0, 1]


def test_node_configurations_hand_worked():
    # One node, 2 GPUs, 32 cores; shapes 700 (x2), 300 (x1), 2-GPU whole (x1). Maximal contents:
    # {700, 700, 300} (GPUs 700+300 | 700) and {2-GPU task}; {700, 300} alone is not maximal.
    cluster = Cluster([32000], [8192], [2], ["A"])
    tasks = TaskSet([1000] * 4, [0] * 4, [1, 1, 1, 2], [700, 700, 300, 1000])
    agg = aggregate(Instance("hand", cluster, tasks))
    configs, visited = node_configurations(agg, 0)
    by_shape = {tuple(int(c) for c in row) for row in configs}
    shares = [s.gpu_milli for s in agg.shapes]
    assert len(configs) == 2 and visited == 7  # contents: 0-2 x 700 with 0-1 x 300 (6), the 2-GPU task alone
    expected = {tuple(2 if m == 700 else 1 if m == 300 else 0 for m in shares),
                tuple(1 if m == 1000 else 0 for m in shares)}
    assert by_shape == expected
    with pytest.raises(TooManyConfigurations):
        node_configurations(agg, 0, limit=1)


def test_every_configuration_decodes_to_a_valid_placement():
    instance = random_instance(4, 11, node_types={"V100M16x4-32c": 1})
    agg = aggregate(instance)
    columns = enumerate_columns(agg)
    assert len(columns.mat) > 100
    for c in range(0, len(columns.mat), 7):  # one configuration on the first node
        one = Columns(columns.kind[c:c + 1], columns.mat[c:c + 1])
        placement = decode(agg, one, [1])
        state = validate(instance.cluster, instance.tasks, placement)
        assert state.placement().allocated_milli(instance.tasks) == int(columns.mat[c] @ agg.demand_units) * agg.unit


def test_warm_start_is_encoded_and_kept():
    instance = cpu_bound_instance()
    agg = aggregate(instance)
    columns = enumerate_columns(agg)
    warm = solve(instance, "milp-cbc").placement
    start = encode(agg, columns, warm)
    master_model(agg, columns.kind, columns.mat, integer=True).check(start)
    assert decode(agg, columns, start[: len(columns.mat)]).allocated_milli(instance.tasks) == 2000
    assert solve(instance, "config-milp", warm_start=warm).objective == 2000


def test_too_many_configurations_is_skipped():
    instance = random_instance(2, 0, node_types={"G2x8-96c": 1})  # one 8-GPU type: 15,742 maximal configurations
    sol = run_config_milp(instance, "config-milp", limit=50_000)  # 93,348 contents to visit
    assert (sol.status, sol.placement, sol.bound) == ("skipped", None, None)
    assert "more than 50000" in sol.info["reason"]


def test_the_time_limit_stops_the_enumeration():
    """The enumeration counts in the time limit: with 0.3 s the run stops inside it, ``time_limit``, the warm start as
    its placement and no bound. It ran on to its 150,000 contents and said ``skipped`` (measured: 2.7 s with the
    packings cached, 15 s on a fresh process, for a 0.01 s limit)."""
    from fgdopt.simulate import run_online

    instance = random_instance(16, 5)
    warm = run_online(instance.cluster, instance.tasks, "fgd").placement
    sol = run_config_milp(instance, "config-milp", time_limit=0.3, warm_start=warm)
    assert (sol.status, sol.objective, sol.bound) == ("time_limit", warm.allocated_milli(instance.tasks), None)
    assert "the time limit stopped the enumeration" in sol.info["reason"] and sol.wall_s < 1.5
    validate(instance.cluster, instance.tasks, sol.placement)


@pytest.mark.parametrize("seed", [11, 12])
def test_column_generation_meets_the_enumerated_configuration_lp(seed):
    # Two independent routes to the configuration LP: every maximal configuration enumerated vs priced columns.
    from formulations.backends import solve_model

    instance = random_instance(6, seed, node_types={"V100M16x4-32c": 1, "P100x2-16c": 1})
    agg = aggregate(instance)
    columns = enumerate_columns(agg)
    full = solve_model(master_model(agg, columns.kind, columns.mat, integer=False), "highs", 30)
    assert full.status == "optimal"
    assert solve(instance, "config-lp", time_limit=30).bound == math.floor(full.bound + 1e-6) * agg.unit
    assert solve(instance, "config-milp", time_limit=30).objective <= math.floor(full.bound + 1e-6) * agg.unit
