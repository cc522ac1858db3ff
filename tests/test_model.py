"""Data model validation and the instance JSON format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fgdopt.instance import Instance
from fgdopt.model import Cluster, Task, TaskSet, spec_allows


def test_task_kinds_and_demand():
    tasks = TaskSet([1000, 2000, 3000], [1, 2, 3], [0, 1, 4], [0, 250, 1000])
    assert [t.kind for t in tasks] == ["cpu", "sharing", "whole"]
    assert tasks.gpu_demand.tolist() == [0, 250, 4000]
    assert tasks[1] == Task(2000, 2, 1, 250, "")
    with pytest.raises(ValueError, match="read-only"):
        tasks.cpu_milli[0] = 5


def test_gpu_spec_models_are_stripped():
    # "T4 | V100" (a spec typed with blanks) allowed no model: the task was rejected on a V100 node
    tasks = TaskSet([1000, 1000], [0, 0], [1, 1], [1000, 500], [" T4 | V100 ", "A10||"])
    assert tasks.gpu_spec.tolist() == ["T4|V100", "A10"]
    assert spec_allows(tasks[0].gpu_spec, "V100")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"cpu_milli": [1000, -1]}, r"task row 1: field 'cpu_milli' is negative \(-1\)"),
    ({"memory_mib": [1, -5]}, r"task row 1: field 'memory_mib' is negative"),
    ({"gpu_milli": [1001, 0]}, r"task row 0: field 'gpu_milli' must lie in 0..1000"),
    ({"num_gpu": [2, 0], "gpu_milli": [500, 0]}, r"task row 0: a multi-GPU task must ask for whole GPUs"),
    ({"num_gpu": [0, 0], "gpu_milli": [500, 0]}, r"task row 0: a CPU-only task \(num_gpu=0\) must have gpu_milli=0"),
    ({"num_gpu": [17, 0], "gpu_milli": [1000, 0]}, r"task row 0: field 'num_gpu' must lie in 0..16"),
    ({"workers": [1, 0]}, r"task row 1: field 'workers' must be >= 1, got 0"),
    ({"workers": [1, -2]}, r"task row 1: field 'workers' is negative"),
    ({"workers": [1]}, r"task field 'workers' has length 1, expected 2"),
    ({"cpu_milli": [1.5, 2]}, r"task row 0: field 'cpu_milli' must be an integer, got 1.5$"),
    ({"memory_mib": [1, float("nan")]}, r"task row 1: field 'memory_mib' must be an integer, got nan$"),
    # a CSV column with a word, a JSON text or a bool: no row was named ("must hold integers")
    ({"gpu_milli": np.array(["500", "abc"], dtype=object)}, r"task row 1: field 'gpu_milli' must be an integer, "
                                                            r"got 'abc'$"),
    ({"cpu_milli": [1000, "1000"]}, r"task row 1: field 'cpu_milli' must be an integer, got '1000'$"),
    ({"memory_mib": [True, True]}, r"task row 0: field 'memory_mib' must be an integer, got True$"),
    ({"cpu_milli": [1]}, r"task field 'memory_mib' has length 2, expected 1"),
])
def test_taskset_rejects(kwargs, match):
    base = {"cpu_milli": [1000, 1000], "memory_mib": [1, 1], "num_gpu": [1, 0], "gpu_milli": [500, 0]}
    with pytest.raises(ValueError, match=match):
        TaskSet(**(base | kwargs))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"gpu": [17]}, r"node row 0: field 'gpu' is 17 > 16"),
    ({"cpu_milli": [-1]}, r"node row 0: field 'cpu_milli' is negative"),
    ({"model": ["A|B"]}, r"node row 0: field 'model' must not contain"),
])
def test_cluster_rejects(kwargs, match):
    base = {"cpu_milli": [1000], "memory_mib": [1], "gpu": [2], "model": ["T4"]}
    with pytest.raises(ValueError, match=match):
        Cluster(**(base | kwargs))


def test_records_reject_unknown_and_missing_fields():
    with pytest.raises(ValueError, match=r"task row 0: unknown field\(s\) \['gpus'\]"):
        TaskSet.from_records([{"cpu_milli": 1, "memory_mib": 1, "num_gpu": 1, "gpu_milli": 5, "gpus": 1}])
    with pytest.raises(ValueError, match="node row 1: missing field 'model'"):
        Cluster.from_records([{"cpu_milli": 1, "memory_mib": 1, "gpu": 1, "model": "T4"},
                              {"cpu_milli": 1, "memory_mib": 1, "gpu": 1}])


def test_cluster_views():
    c = Cluster([8000, 16000, 8000], [1, 1, 1], [2, 8, 0], ["T4", "G2", "T4"])
    assert (c.max_gpus, c.total_gpus, c.gpu_capacity_milli) == (8, 10, 10000)
    assert c.models == ("G2", "T4") and c.model_index.tolist() == [1, 0, 1]
    assert c.subset([1]).gpu.tolist() == [8]


def test_spec_allows():
    assert spec_allows("", "T4") and spec_allows("V100M16|T4", "T4")
    assert not spec_allows("V100M16|V100M32", "V100M")


def test_instance_json_round_trip(tmp_path):
    inst = Instance("tiny", Cluster([96000], [393216], [8], ["G2"]),
                    TaskSet([4000, 8000], [8192, 1024], [1, 2], [500, 1000], ["", "G2|T4"]))
    loaded = Instance.load(inst.save(tmp_path / "tiny.json"))
    assert loaded.to_dict() == inst.to_dict()
    assert json.loads((tmp_path / "tiny.json").read_text())["tasks"][1]["gpu_spec"] == "G2|T4"
    assert np.array_equal(loaded.tasks.gpu_milli, [500, 1000])


def test_instance_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        Instance.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ValueError, match="not valid JSON"):
        Instance.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['machines'\]"):
        Instance.from_dict({"name": "x", "machines": [], "tasks": []})
    with pytest.raises(ValueError, match="missing key 'tasks'"):
        Instance.from_dict({"name": "x", "nodes": []})
