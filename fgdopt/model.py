"""The immutable data model: a :class:`Cluster` of nodes and a :class:`TaskSet` of tasks.

Units (docs/semantics.md "Units and data"): CPU in milli-cores (``cpu_milli``), memory in MiB (``memory_mib``),
GPU in milli-GPU (one GPU = 1000). Every GPU of a node has capacity 1000.

Both classes hold one numpy array per field, made read-only, so a value can be shared between
policies, formulations and experiments without defensive copies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

GPU_MILLI = 1000
"""Capacity of one GPU in milli-GPU."""

MAX_GPUS_PER_NODE = 16
"""The most GPUs a node may hold, and so the most GPUs one task (or one part of a gang) may ask for."""

NODE_FIELDS = ("cpu_milli", "memory_mib", "gpu", "model")
TASK_FIELDS = ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec")


def spec_allows(gpu_spec: str, model: str) -> bool:
    """Whether a task's ``gpu_spec`` (``""`` = any, else models joined by ``|``) admits ``model``."""
    return gpu_spec == "" or model in gpu_spec.split("|")


def _spec(text: str) -> str:
    """A ``gpu_spec`` as :func:`spec_allows` reads it: its models stripped of blanks, empty ones dropped.

    >>> _spec(" T4 | V100 "), _spec("T4||V100|"), _spec(" ")
    ('T4|V100', 'T4|V100', '')
    """
    return "|".join(part for part in (p.strip() for p in text.split("|")) if part)


def _frozen_array(values, dtype) -> np.ndarray:
    arr = np.array(values, dtype=dtype)
    arr.setflags(write=False)
    return arr


def _not_a_number(values) -> tuple[int, object] | None:
    """The first (row, value) of the one-dimensional ``values`` that is no number: a bool, a text that does not read
    as one, anything else (a text that reads as a number comes after, if there is no worse); None if none."""
    texts = None
    for i, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)):
            return i, v
        try:
            float(v)
        except (TypeError, ValueError):
            return i, v
        if texts is None and isinstance(v, str):
            texts = (i, v)
    return texts


def _int_column(name: str, values, kind: str) -> np.ndarray:
    """``values`` as a read-only int64 array; ``ValueError`` naming the row for non-integers or negatives."""
    try:
        arr = np.asarray(values, dtype=np.float64 if np.asarray(values).dtype.kind in "fO" else None)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1 or arr.dtype.kind not in "iuf":
        if np.ndim(values) == 1 and (bad := _not_a_number(values)) is not None:
            raise ValueError(f"{kind} row {bad[0]}: field {name!r} must be an integer, got {bad[1]!r}")
        raise ValueError(f"{kind}: field {name!r} must be a one-dimensional column of integers")
    if arr.dtype.kind == "f" and (bad := np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))).size:
        raise ValueError(f"{kind} row {int(bad[0])}: field {name!r} must be an integer, got {arr[bad[0]]:g}")
    if (neg := np.flatnonzero(arr < 0)).size:
        raise ValueError(f"{kind} row {int(neg[0])}: field {name!r} is negative ({arr[neg[0]]})")
    return _frozen_array(arr, np.int64)


@dataclass(frozen=True, eq=False)
class Cluster:
    """A set of GPU nodes (rows). Arrays are read-only and share one length.

    Attributes
    ----------
    cpu_milli : int64 array, CPU capacity per node in milli-cores.
    memory_mib : int64 array, memory capacity per node in MiB.
    gpu : int64 array, number of GPUs per node (0..16), each of capacity 1000 milli-GPU.
    model : object array of str, GPU model per node (e.g. ``"G2"``, ``"T4"``).
    names : tuple of node names (defaults to ``node-<i>``).

    Examples
    --------
    Two nodes: 32 cores, 64 GiB and two T4s; 16 cores, 64 GiB and one V100.

    >>> cluster = Cluster(cpu_milli=[32000, 16000], memory_mib=[65536, 65536], gpu=[2, 1], model=["T4", "V100"])
    >>> cluster.n_nodes, cluster.total_gpus, cluster.gpu_capacity_milli       # capacity in milli-GPU
    (2, 3, 3000)
    """

    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    gpu: np.ndarray
    model: np.ndarray
    names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        n = len(self.cpu_milli)
        for name in NODE_FIELDS:
            if len(getattr(self, name)) != n:
                raise ValueError(f"node field {name!r} has length {len(getattr(self, name))}, expected {n}")
        for name in ("cpu_milli", "memory_mib", "gpu"):
            object.__setattr__(self, name, _int_column(name, getattr(self, name), "node"))
        over = np.flatnonzero(self.gpu > MAX_GPUS_PER_NODE)
        if over.size:
            raise ValueError(f"node row {int(over[0])}: field 'gpu' is {int(self.gpu[over[0]])} > {MAX_GPUS_PER_NODE}")
        models = [str(m) for m in self.model]
        for i, m in enumerate(models):
            if "|" in m:
                raise ValueError(f"node row {i}: field 'model' must not contain '|' ({m!r})")
        object.__setattr__(self, "model", _frozen_array(models, object))
        names = tuple(self.names) if self.names else tuple(f"node-{i}" for i in range(n))
        if len(names) != n:
            raise ValueError(f"{len(names)} node names for {n} nodes")
        object.__setattr__(self, "names", names)

    @classmethod
    def from_records(cls, records: Iterable[Mapping], names: Sequence[str] | None = None) -> Cluster:
        """Build from dicts with keys ``cpu_milli, memory_mib, gpu, model`` (a ``sn`` key names the node)."""
        records = list(records)
        cols = _columns(records, NODE_FIELDS, "node", optional=("sn", "name"))
        if names is None:
            names = [r.get("sn", r.get("name", f"node-{i}")) for i, r in enumerate(records)]
        return cls(**cols, names=tuple(str(x) for x in names))

    def to_records(self) -> list[dict]:
        return [
            {"cpu_milli": int(c), "memory_mib": int(m), "gpu": int(g), "model": str(mo)}
            for c, m, g, mo in zip(self.cpu_milli, self.memory_mib, self.gpu, self.model, strict=True)
        ]

    def __len__(self) -> int:
        return len(self.cpu_milli)

    @property
    def n_nodes(self) -> int:
        return len(self)

    @property
    def max_gpus(self) -> int:
        """Width of per-GPU arrays: the largest GPU count of any node (at least 1)."""
        return max(1, int(self.gpu.max(initial=0)))

    @property
    def total_gpus(self) -> int:
        return int(self.gpu.sum())

    @property
    def gpu_capacity_milli(self) -> int:
        """Total GPU capacity in milli-GPU."""
        return GPU_MILLI * self.total_gpus

    @cached_property
    def models(self) -> tuple[str, ...]:
        """Distinct GPU models, sorted."""
        return tuple(sorted(set(self.model.tolist())))

    @cached_property
    def model_index(self) -> np.ndarray:
        """Index of each node's model in :attr:`models`."""
        lookup = {m: i for i, m in enumerate(self.models)}
        index = np.array([lookup[m] for m in self.model], dtype=np.int64)
        index.setflags(write=False)
        return index

    def subset(self, rows: Sequence[int] | np.ndarray) -> Cluster:
        rows = np.asarray(rows, dtype=np.int64)
        return Cluster(self.cpu_milli[rows], self.memory_mib[rows], self.gpu[rows], self.model[rows],
                       tuple(self.names[i] for i in rows))

    def __repr__(self) -> str:
        return f"Cluster({self.n_nodes} nodes, {self.total_gpus} GPUs, models={list(self.models)})"


class Task(NamedTuple):
    """One task's demand (a row of a :class:`TaskSet`): milli-cores, MiB, GPU count, milli-GPU per GPU, allowed
    GPU models, and ``workers``: a *gang* of ``workers > 1`` identical parts, each of the demand before it, each on
    one node (parts may share a node), all started and ended together."""

    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: str = ""
    workers: int = 1

    @property
    def gpu_demand(self) -> int:
        """Total GPU demand in milli-GPU (``workers * num_gpu * gpu_milli``)."""
        return self.workers * self.num_gpu * self.gpu_milli

    @property
    def part(self) -> Task:
        """One part of the task (itself when ``workers == 1``): the demand each part places on its node."""
        return self if self.workers == 1 else self._replace(workers=1)

    @property
    def kind(self) -> str:
        """``"cpu"`` (no GPU), ``"sharing"`` (fraction of one GPU) or ``"whole"`` (k full GPUs)."""
        if self.num_gpu == 0:
            return "cpu"
        return "sharing" if self.gpu_milli < GPU_MILLI else "whole"


@dataclass(frozen=True, eq=False)
class TaskSet:
    """A list of tasks (rows), in arrival order. Arrays are read-only and share one length.

    Attributes
    ----------
    cpu_milli : int64 array, CPU demand in milli-cores.
    memory_mib : int64 array, memory demand in MiB.
    num_gpu : int64 array, number of GPUs (0..16) of each part.
    gpu_milli : int64 array, demand per GPU in milli-GPU (0 for CPU-only tasks, 1..999 for sharing
        tasks, 1000 for whole-GPU tasks).
    gpu_spec : object array of str, allowed GPU models joined by ``|`` (``""`` = any; blanks around a model are
        dropped: ``"T4 | V100"`` is ``"T4|V100"``).
    names : tuple of task names (defaults to ``task-<i>``).
    workers : int64 array, parts of each task (default 1; >= 1): a task of ``workers > 1`` is a *gang* of that
        many identical parts, each of the demand above and each on one node (:class:`Task`). CPU, memory and GPU
        fields are per part.

    Examples
    --------
    Half a GPU with 4 cores; two whole T4 GPUs with 8 cores; a CPU-only task of 2 cores.

    >>> tasks = TaskSet(cpu_milli=[4000, 8000, 2000], memory_mib=[1024, 2048, 512], num_gpu=[1, 2, 0],
    ...                 gpu_milli=[500, 1000, 0], gpu_spec=["", "T4", ""])
    >>> [task.kind for task in tasks], tasks.gpu_demand.tolist()                # demand in milli-GPU
    (['sharing', 'whole', 'cpu'], [500, 2000, 0])
    """

    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    gpu_spec: np.ndarray = field(default=None)
    names: tuple[str, ...] = field(default=())
    workers: np.ndarray = field(default=None)

    def __post_init__(self) -> None:
        n = len(self.cpu_milli)
        if self.gpu_spec is None:
            object.__setattr__(self, "gpu_spec", [""] * n)
        for name in TASK_FIELDS:
            if len(getattr(self, name)) != n:
                raise ValueError(f"task field {name!r} has length {len(getattr(self, name))}, expected {n}")
        if self.workers is None:
            object.__setattr__(self, "workers", np.ones(n, dtype=np.int64))
        if len(self.workers) != n:
            raise ValueError(f"task field 'workers' has length {len(self.workers)}, expected {n}")
        for name in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "workers"):
            object.__setattr__(self, name, _int_column(name, getattr(self, name), "task"))
        if (bad := np.flatnonzero(self.workers < 1)).size:
            raise ValueError(f"task row {int(bad[0])}: field 'workers' must be >= 1, got {int(self.workers[bad[0]])}")
        _check_task_shapes(self.num_gpu, self.gpu_milli)
        raw = ["" if (s is None or (isinstance(s, float) and np.isnan(s))) else str(s) for s in self.gpu_spec]
        clean = {text: _spec(text) for text in set(raw)}                   # a few distinct specs, many tasks
        specs = [clean[text] for text in raw]
        object.__setattr__(self, "gpu_spec", _frozen_array(specs, object))
        names = tuple(self.names) if self.names else tuple(f"task-{i}" for i in range(n))
        if len(names) != n:
            raise ValueError(f"{len(names)} task names for {n} tasks")
        object.__setattr__(self, "names", names)

    @classmethod
    def from_records(cls, records: Iterable[Mapping], names: Sequence[str] | None = None) -> TaskSet:
        """Build from dicts with keys ``cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec][, workers]``."""
        records = list(records)
        cols = _columns(records, (*TASK_FIELDS, "workers"), "task", optional=("name",),
                        defaults={"gpu_spec": "", "workers": 1})
        if names is None:
            names = [r.get("name", f"task-{i}") for i, r in enumerate(records)]
        return cls(**cols, names=tuple(str(x) for x in names))

    def to_records(self) -> list[dict]:
        """One dict per task; ``workers`` only where it is not 1."""
        return [{k: v for k, v in t._asdict().items() if k != "workers" or v != 1} for t in self]

    def __len__(self) -> int:
        return len(self.cpu_milli)

    def __getitem__(self, i: int) -> Task:
        return Task(int(self.cpu_milli[i]), int(self.memory_mib[i]), int(self.num_gpu[i]),
                    int(self.gpu_milli[i]), str(self.gpu_spec[i]), int(self.workers[i]))

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def gpu_demand(self) -> np.ndarray:
        """Total GPU demand per task in milli-GPU (all its parts)."""
        return self.workers * self.num_gpu * self.gpu_milli

    @cached_property
    def has_gangs(self) -> bool:
        """Whether some task has ``workers > 1``."""
        return bool((self.workers > 1).any())

    def take(self, rows: Sequence[int] | np.ndarray) -> TaskSet:
        """The tasks at ``rows`` (in that order; repeats allowed)."""
        rows = np.asarray(rows, dtype=np.int64)
        return TaskSet(self.cpu_milli[rows], self.memory_mib[rows], self.num_gpu[rows], self.gpu_milli[rows],
                       self.gpu_spec[rows], tuple(self.names[i] for i in rows), self.workers[rows])

    def __repr__(self) -> str:
        return f"TaskSet({len(self)} tasks, GPU demand {int(self.gpu_demand.sum())} milli-GPU)"


def _check_task_shapes(num_gpu: np.ndarray, gpu_milli: np.ndarray) -> None:
    def fail(rows: np.ndarray, msg: str) -> None:
        i = int(rows[0])
        raise ValueError(f"task row {i}: {msg} (num_gpu={int(num_gpu[i])}, gpu_milli={int(gpu_milli[i])})")

    if (bad := np.flatnonzero(gpu_milli > GPU_MILLI)).size:
        fail(bad, "field 'gpu_milli' must lie in 0..1000")
    if (bad := np.flatnonzero(num_gpu > MAX_GPUS_PER_NODE)).size:
        fail(bad, f"field 'num_gpu' must lie in 0..{MAX_GPUS_PER_NODE}")
    if (bad := np.flatnonzero((num_gpu == 0) & (gpu_milli != 0))).size:
        fail(bad, "a CPU-only task (num_gpu=0) must have gpu_milli=0")
    if (bad := np.flatnonzero((num_gpu > 0) & (gpu_milli == 0))).size:
        fail(bad, "a GPU task must have gpu_milli > 0")
    if (bad := np.flatnonzero((num_gpu > 1) & (gpu_milli != GPU_MILLI))).size:
        fail(bad, "a multi-GPU task must ask for whole GPUs (num_gpu>1 needs gpu_milli=1000); "
                  "a sharing task must have num_gpu=1")


def _columns(records: list[Mapping], fields: Sequence[str], kind: str, optional: Sequence[str] = (),
             defaults: Mapping | None = None) -> dict[str, list]:
    defaults = dict(defaults or {})
    allowed = set(fields) | set(optional)
    cols: dict[str, list] = {f: [] for f in fields}
    for i, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            raise ValueError(f"{kind} row {i}: expected an object of fields {list(fields)}, got {rec!r}")
        unknown = set(rec) - allowed
        if unknown:
            raise ValueError(f"{kind} row {i}: unknown field(s) {sorted(unknown)}; expected {list(fields)}")
        for f in fields:
            if f in rec:
                cols[f].append(rec[f])
            elif f in defaults:
                cols[f].append(defaults[f])
            else:
                raise ValueError(f"{kind} row {i}: missing field {f!r}")
    return cols
