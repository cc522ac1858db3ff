"""Instances: a named (Cluster, TaskSet) pair, stored as JSON.

The format::

    {"name": "tiny",
     "nodes": [{"cpu_milli": 96000, "memory_mib": 393216, "gpu": 8, "model": "G2"}, ...],
     "tasks": [{"cpu_milli": 4000, "memory_mib": 8192, "num_gpu": 1, "gpu_milli": 500, "gpu_spec": ""}, ...]}

``gpu_spec`` may be omitted (any model); an optional ``workers`` (default 1) makes a task a gang of that many
identical parts (:class:`fgdopt.model.Task`). Units: milli-cores, MiB, GPUs, milli-GPU per GPU.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from fgdopt.model import Cluster, TaskSet


@dataclass(frozen=True, eq=False)
class Instance:
    """A placement problem: ``cluster`` and the ``tasks`` to place (in arrival order)."""

    name: str
    cluster: Cluster
    tasks: TaskSet

    def to_dict(self) -> dict:
        return {"name": self.name, "nodes": self.cluster.to_records(), "tasks": self.tasks.to_records()}

    @classmethod
    def from_dict(cls, data: dict) -> Instance:
        if not isinstance(data, dict):
            raise ValueError(f"instance: expected a JSON object with keys name, nodes, tasks, got a "
                             f"{type(data).__name__}")
        for key in ("nodes", "tasks"):
            if key in data and not isinstance(data[key], list):
                raise ValueError(f"instance: {key!r} must be a list of objects, got a {type(data[key]).__name__}")
        unknown = set(data) - {"name", "nodes", "tasks"}
        if unknown:
            raise ValueError(f"instance: unknown key(s) {sorted(unknown)}; expected name, nodes, tasks")
        for key in ("nodes", "tasks"):
            if key not in data:
                raise ValueError(f"instance: missing key {key!r}")
        return cls(str(data.get("name", "instance")), Cluster.from_records(data["nodes"]),
                   TaskSet.from_records(data["tasks"]))

    def save(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Instance:
        """The instance of a JSON file (named by its ``name``, else by the file's name without ``.json``).

        Raises
        ------
        FileNotFoundError : no such file.
        ValueError : one line naming the file: not JSON, not an object, an unknown or missing key, a bad node or
            task field (its row named), or no nodes.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"instance file {path} not found")
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from None
        if isinstance(data, dict) and "name" not in data:     # unnamed: the file's name (not one "instance" each)
            data = {"name": path.stem, **data}
        try:
            instance = cls.from_dict(data)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: {exc}") from None
        if instance.cluster.n_nodes == 0:
            raise ValueError(f"{path}: no nodes (an instance needs at least one node; its optimum would be "
                             "trivially 0)")
        return instance

    def __repr__(self) -> str:
        return f"Instance({self.name!r}, {self.cluster!r}, {self.tasks!r})"
