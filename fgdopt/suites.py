"""Instance suites: trace-like generated instances, hand-made adversarial ones, and samples of openb.

Everything here produces :class:`~fgdopt.instance.Instance` values (a cluster and tasks in arrival
order), the input of the gap experiment and of every policy and formulation.

* :func:`openb_shapes` / :func:`openb_node_types` — the openb task-shape distribution and node types
  as small tables of counts shipped with the package (``fgdopt/data/*.csv``, computed once from the
  trace by ``python -m experiments.make_shape_table``); no trace needed.
* :func:`random_instance` — nodes of openb types, tasks drawn from the shape distribution until
  the GPU demand reaches ``ratio`` x capacity (docs/semantics.md "Workload inflation"), deterministic per seed.
* :func:`adversarial_instances` and :data:`KNOWN_OPTIMA` — tiny instances where greedy arrival-order
  policies provably lose, with their optimum (allocated milli-GPU) worked out by hand.
* :func:`suite` — the named suites :data:`SUITES` (``small``, ``medium``, ``openb-sample``);
  :func:`load_suite_dir` — a directory of instance JSON files.

Units: CPU in milli-cores, memory in MiB, GPU in milli-GPU (one GPU = 1000).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.inflation import draw_until
from fgdopt.instance import Instance
from fgdopt.model import GPU_MILLI, Cluster, TaskSet
from fgdopt.state import ClusterState

SHAPE_FILE = "openb_shapes.csv"
NODE_TYPE_FILE = "openb_node_types.csv"
SHAPE_KEYS = ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec")
"""Columns identifying a task shape in :func:`openb_shapes` (memory kept so drawn tasks are complete)."""
NODE_TYPE_KEYS = ("cpu_milli", "memory_mib", "gpu", "model")
"""Columns identifying a node type in :func:`openb_node_types`."""
SHAPE_CLASS_KEYS = ("cpu_milli", "num_gpu", "gpu_milli", "gpu_spec")
"""A task's shape class for stratified sampling (the trace's 91 shapes; memory ignored as in docs/semantics.md)."""

DEFAULT_RATIO = 1.3
SUITES = ("small", "medium", "openb-sample")
SAMPLE_SCALES = (100, 20)
"""``openb-sample`` keeps 1/100 and 1/20 of the trace's nodes and tasks."""

_BATCH = 256  # tasks drawn per batch while inflating; fixed, so the draws depend on the seed only


# -- the shipped tables ------------------------------------------------------------------------
@cache
def _read_table(file: str) -> pd.DataFrame:
    with resources.files("fgdopt").joinpath("data").joinpath(file).open("r") as fh:
        return pd.read_csv(fh, keep_default_na=False, dtype={"gpu_spec": str, "model": str})


def openb_shapes() -> pd.DataFrame:
    """The task shapes of openb ``default`` with their frequency.

    Returns
    -------
    DataFrame with columns ``cpu_milli`` (milli-cores), ``memory_mib`` (MiB), ``num_gpu``, ``gpu_milli``
    (milli-GPU per GPU), ``gpu_spec`` (``""`` = any model) and ``count`` (tasks of that shape in the
    trace; they sum to 8152), most frequent first.
    """
    return _read_table(SHAPE_FILE).copy()


def node_type_label(cpu_milli: int, gpu: int, model: str) -> str:
    """Short unique name of an openb node type, e.g. ``G2x8-96c`` (model, GPUs, cores).

    >>> node_type_label(96000, 8, "G2")
    'G2x8-96c'
    """
    return f"{model}x{gpu}-{cpu_milli // 1000}c"


def openb_node_types() -> pd.DataFrame:
    """The 15 GPU node types of openb with their number of nodes.

    Returns
    -------
    DataFrame indexed by :func:`node_type_label` (index name ``label``) with columns ``cpu_milli``
    (milli-cores), ``memory_mib`` (MiB), ``gpu`` (GPUs per node), ``model`` and ``count`` (nodes of
    that type; they sum to 1213 nodes with 6212 GPUs), most frequent first.
    """
    table = _read_table(NODE_TYPE_FILE).copy()
    table.index = pd.Index([node_type_label(c, g, m) for c, g, m in
                            zip(table["cpu_milli"], table["gpu"], table["model"], strict=True)], name="label")
    return table


# -- building blocks ---------------------------------------------------------------------------
def apportion(weights, total: int) -> np.ndarray:
    """Split ``total`` items into integer counts proportional to ``weights`` (largest remainders).

    Every count is the floor or the ceiling of its exact quota ``total * w / sum(w)``; the leftover
    items go to the largest fractional parts, ties to the lower index. Deterministic.

    >>> apportion([549, 387, 107], 8).tolist()
    [4, 3, 1]
    """
    weights = np.asarray(weights, dtype=np.float64)
    if total < 0 or weights.size == 0 or (weights < 0).any() or weights.sum() <= 0:
        raise ValueError(f"cannot apportion {total} items over weights {weights.tolist()}")
    quota = total * weights / weights.sum()
    counts = np.floor(quota).astype(np.int64)
    order = np.argsort(-(quota - counts), kind="stable")
    counts[order[: total - int(counts.sum())]] += 1
    return counts


def _node_mix(node_types: pd.DataFrame | Mapping[str, float] | None) -> pd.DataFrame:
    """Node-type rows with a weight column ``count`` from a table, a label -> weight mapping or None."""
    types = openb_node_types()
    if node_types is None:
        return types
    if isinstance(node_types, pd.DataFrame):
        missing = set(NODE_TYPE_KEYS) - set(node_types.columns)
        if missing or "count" not in node_types:
            raise ValueError(f"node_types table needs columns {list(NODE_TYPE_KEYS)} and 'count'")
        return node_types
    unknown = set(node_types) - set(types.index)
    if unknown:
        raise ValueError(f"unknown node type(s) {sorted(unknown)}; openb types are {', '.join(types.index)}")
    mix = types.loc[list(node_types)].copy()
    mix["count"] = [node_types[label] for label in mix.index]
    return mix


def _mix_name(node_types: pd.DataFrame | Mapping[str, float] | None) -> str:
    if node_types is None:
        return "openb"
    if isinstance(node_types, pd.DataFrame):
        return "custom"
    weights = set(node_types.values())
    return "+".join(node_types if len(weights) == 1 else (f"{k}:{w:g}" for k, w in node_types.items()))


def _cluster_of(types: pd.DataFrame, counts: np.ndarray) -> Cluster:
    """``counts[i]`` nodes of type row ``i``, grouped by type in table order, named ``<label>-<k>``."""
    rows = np.repeat(np.arange(len(types)), counts)
    labels = [node_type_label(c, g, m) for c, g, m in zip(types["cpu_milli"], types["gpu"], types["model"],
                                                             strict=True)]
    names = [f"{labels[r]}-{k}" for r, c in zip(range(len(types)), counts, strict=True) for k in range(c)]
    return Cluster(types["cpu_milli"].to_numpy()[rows], types["memory_mib"].to_numpy()[rows],
                   types["gpu"].to_numpy()[rows], types["model"].to_numpy()[rows], names=tuple(names))


def _shape_tasks(shapes: pd.DataFrame, rows: np.ndarray, prefix: str) -> TaskSet:
    return TaskSet(*(shapes[k].to_numpy()[rows] for k in SHAPE_KEYS),
                   names=tuple(f"{prefix}{i}" for i in range(len(rows))))


def _concat(a: TaskSet, b: TaskSet) -> TaskSet:
    return TaskSet(*(np.concatenate([getattr(a, k), getattr(b, k)]) for k in SHAPE_KEYS), names=a.names + b.names)


def fitting_shapes(cluster: Cluster, shapes: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``shapes`` that fit at least one EMPTY node of ``cluster`` (docs/semantics.md "Feasibility")."""
    probe = TaskSet(*(shapes[k].to_numpy() for k in SHAPE_KEYS))
    state = ClusterState(cluster, probe)
    keep = [bool(state.feasible_nodes(task).any()) for task in probe]
    return shapes[np.array(keep, dtype=bool)].reset_index(drop=True)


def inflate(cluster: Cluster, base: TaskSet, rng: np.random.Generator, ratio: float = DEFAULT_RATIO,
            shapes: pd.DataFrame | None = None) -> TaskSet:
    """docs/semantics.md "Workload inflation": append drawn tasks to ``base`` up to ``ratio`` x capacity, then shuffle.

    Tasks are drawn i.i.d. from ``shapes`` (default :func:`openb_shapes`) with probability
    proportional to ``count`` — the same law as drawing uniformly with replacement from the trace —
    restricted to the shapes that fit some empty node of ``cluster`` (a task that fits no node
    would only pad the demand). Drawing stops at the first task that would lift the total GPU demand
    (``base`` included) above ``ratio * 1000 * total GPUs``; that task is dropped. The result is
    ``base`` + drawn tasks in an order shuffled by ``rng``; drawn tasks are named ``draw-<i>``.

    Raises
    ------
    ValueError : the cluster has no GPU, or no shape with a GPU demand fits it.
    """
    shapes = fitting_shapes(cluster, openb_shapes() if shapes is None else shapes)
    demand = (shapes["num_gpu"] * shapes["gpu_milli"]).to_numpy()
    if cluster.total_gpus == 0 or not (demand > 0).any():
        raise ValueError(f"cannot inflate a GPU workload on {cluster!r}: no GPU task shape fits it")
    drawn = draw_until(demand, int(base.gpu_demand.sum()), ratio * cluster.gpu_capacity_milli, rng,
                       weights=shapes["count"].to_numpy(), batch=_BATCH)
    tasks = _concat(base, _shape_tasks(shapes, drawn, "draw-"))
    return tasks.take(rng.permutation(len(tasks)))


# -- generated instances -----------------------------------------------------------------------
def random_instance(n_nodes: int, seed: int, ratio: float = DEFAULT_RATIO,
                    node_types: pd.DataFrame | Mapping[str, float] | None = None, name: str | None = None) -> Instance:
    """A trace-like instance: ``n_nodes`` openb nodes and tasks inflated to ``ratio`` x GPU capacity.

    Parameters
    ----------
    n_nodes : number of nodes (>= 1).
    seed : seeds the :class:`numpy.random.Generator` that draws and shuffles the tasks; the same
        arguments always give the same instance.
    ratio : target GPU demand / capacity (docs/semantics.md "Workload inflation"; 1.3 in the paper).
    node_types : the node mix — ``None`` for the openb GPU nodes (weights = node counts of
        :func:`openb_node_types`), a mapping ``label -> weight`` (e.g. ``{"G2x8-96c": 1, "T4x2-104c": 1}``),
        or a table with the columns of :func:`openb_node_types` (``count`` = weight). The nodes are
        split over the types by :func:`apportion` (exact proportions, not drawn), grouped by type.
    name : instance name; default ``rand-<mix>-n<nodes>-r<ratio>-s<seed>``.

    Returns
    -------
    Instance whose tasks follow :func:`openb_shapes` (see :func:`inflate`) with total GPU demand in
    ``(ratio * capacity - largest task demand, ratio * capacity]`` milli-GPU.

    Examples
    --------
    >>> inst = random_instance(2, seed=0, node_types={"T4x2-104c": 1})
    >>> inst.name, inst.cluster.total_gpus
    ('rand-T4x2-104c-n2-r1.3-s0', 4)
    >>> 5200 - 2000 < int(inst.tasks.gpu_demand.sum()) <= 5200  # largest task fitting a T4x2 node: 2 GPUs
    True
    """
    if n_nodes < 1:
        raise ValueError(f"n_nodes must be >= 1, got {n_nodes}")
    types = _node_mix(node_types)
    cluster = _cluster_of(types, apportion(types["count"].to_numpy(), n_nodes))
    rng = np.random.default_rng(seed)
    empty = TaskSet([], [], [], [])
    tasks = inflate(cluster, empty, rng, ratio)
    return Instance(name or f"rand-{_mix_name(node_types)}-n{n_nodes}-r{ratio:g}-s{seed}", cluster, tasks)


# -- adversarial instances ---------------------------------------------------------------------
def _nodes(*labels: str) -> Cluster:
    types = openb_node_types()
    rows = types.loc[list(labels)]
    return Cluster(rows["cpu_milli"].to_numpy(), rows["memory_mib"].to_numpy(), rows["gpu"].to_numpy(),
                   rows["model"].to_numpy(), names=tuple(f"{label}-{i}" for i, label in enumerate(labels)))


def _tasks(*rows: tuple) -> TaskSet:
    """Tasks from ``(cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec])`` tuples."""
    return TaskSet.from_records(dict(zip(SHAPE_KEYS, row, strict=False)) for row in rows)


def _sharing(milli: int, spec: str = "") -> tuple:
    return (4000, 8192, 1, milli, spec)


def adv_spread_slices() -> Instance:
    """Two GPUs, sharing tasks 500, 500, then 750 and 250 milli. Optimum 2000.

    One T4x2 node. Packing both 500s on one GPU leaves a free GPU for 750 + 250: everything fits,
    2000 milli (the optimum: the whole capacity). A policy that spreads the 500s over the two GPUs
    leaves two free 250-milli slices per GPU, while the 750 task needs three on one: it fails and
    only the 250 fits, 1250. (The best accept-if-fits run reaches 2000, the worst 1250.)
    """
    return Instance("adv-spread-slices", _nodes("T4x2-104c"),
                    _tasks(_sharing(500), _sharing(500), _sharing(750), _sharing(250)))


def adv_pack_trap() -> Instance:
    """Two GPUs, sharing tasks 400, 300, then 600, 600 milli. Optimum 1900.

    One T4x2 node; the mirror image of :func:`adv_spread_slices`. Spreading 400 and 300 over the two
    GPUs leaves 600 and 700 free: both 600s fit, 1900 milli (the optimum: every task). A policy that
    packs the 300 next to the 400 (best-fit, GPU packing) leaves 300 and 1000 free: one 600 fits,
    the other fails, 1300. (Accept-if-fits runs: worst 1300, best 1900.)
    """
    return Instance("adv-pack-trap", _nodes("T4x2-104c"),
                    _tasks(_sharing(400), _sharing(300), _sharing(600), _sharing(600)))


def adv_reject_500() -> Instance:
    """Three GPUs, sharing tasks 500, 500, 500 then 600, 600 milli. Optimum 2200.

    Nodes P100x2-16c and V100M16x1-8c. A 600 cannot share a GPU with a 500, so each placed 600
    takes a GPU of its own, and a GPU holds at most two 500s. Best: 500+500 on one GPU and each 600
    alone, 2200 milli — the third 500 must be REJECTED. Every policy that places a task whenever it
    fits accepts all three 500s, which then occupy at least two GPUs: at most one 600 follows, so
    at most 2100 (packing the 500s pairwise); spreading them over the three GPUs gives 1500.
    """
    return Instance("adv-reject-500", _nodes("P100x2-16c", "V100M16x1-8c"),
                    _tasks(*(_sharing(500),) * 3, *(_sharing(600),) * 2))


def adv_whole_after_sharing() -> Instance:
    """Four GPUs, sharing tasks of 300 milli x3, then two 2-GPU whole tasks. Optimum 4000.

    One V100M16x4 node. The two 2-GPU tasks fill the node (4000 milli, the capacity) if no sharing
    task was placed. Any accept-if-fits policy places the first 300 (it fits), so at most three
    GPUs stay free and at most one 2-GPU task follows: at most 900 + 2000 = 2900 (the 300s packed on
    one GPU). Spreading them on three GPUs leaves one free GPU, no 2-GPU task fits: 900.
    """
    return Instance("adv-whole-after-sharing", _nodes("V100M16x4-32c"),
                    _tasks(*(_sharing(300),) * 3, *((8000, 16384, 2, GPU_MILLI),) * 2))


def adv_node_spread() -> Instance:
    """Two 8-GPU nodes, sharing tasks 500, 500, then two 8-GPU tasks. Optimum 16000.

    Two G2x8 nodes. The two 8-GPU tasks take one whole node each (16000 milli, the capacity), so the
    optimum rejects the 500s. An accept-if-fits policy places the first 500, so at most one node
    stays idle: at most 1000 + 8000 = 9000 (both 500s on one node); a policy that spreads load over
    nodes puts one 500 on each node and no 8-GPU task fits: 1000.
    """
    return Instance("adv-node-spread", _nodes("G2x8-96c", "G2x8-96c"),
                    _tasks(_sharing(500), _sharing(500), *((32000, 65536, 8, GPU_MILLI),) * 2))


def adv_gpu_spec() -> Instance:
    """A gpu_spec trap: two 1-GPU nodes, sharing 500, 500 (any model), then a whole GPU on V100M16 only.

    Nodes V100M16x1-8c (index 0, small CPU) and A10x1-128c. Optimum 2000: both 500s on the A10 GPU,
    the V100M16-only task on the V100M16 GPU. A policy that puts a 500 on the V100M16 node — best-fit
    (it has less CPU left), or any rule breaking ties by the lowest node index — blocks the
    constrained task: 1000.
    """
    return Instance("adv-gpu-spec", _nodes("V100M16x1-8c", "A10x1-128c"),
                    _tasks(_sharing(500), _sharing(500), (4000, 8192, 1, GPU_MILLI, "V100M16")))


def adv_cpu_starvation() -> Instance:
    """A CPU-starvation trap: a CPU-only task, then a CPU-heavy and a CPU-light 2-GPU task. Optimum 4000.

    Nodes P100x2-64c (index 0) and P100x2-16c, 2 GPUs each. Tasks: CPU-only with 8000 milli-cores;
    2-GPU with 50000 (only the 64-core node can host it); 2-GPU with 16000 (needs the 16-core node's
    whole CPU, or 16000 left on the big one). Optimum 4000: the CPU-only task and the heavy task on
    the 64-core node (6000 left), the light one on the 16-core node. A policy that puts the CPU-only
    task where it fits most tightly — best-fit, dot-product — takes 8000 of the 16-core node's CPU:
    the heavy task then leaves 14000 < 16000 on the big node, the light task fails and the small
    node's two GPUs are stranded, 2000. (Accept-if-fits runs: worst 2000, best 4000.)
    """
    return Instance("adv-cpu-starvation", _nodes("P100x2-64c", "P100x2-16c"),
                    _tasks((8000, 8192, 0, 0), (50000, 16384, 2, GPU_MILLI), (16000, 16384, 2, GPU_MILLI)))


_ADVERSARIAL: tuple[Callable[[], Instance], ...] = (
    adv_spread_slices, adv_pack_trap, adv_reject_500, adv_whole_after_sharing, adv_node_spread, adv_gpu_spec,
    adv_cpu_starvation)

KNOWN_OPTIMA: dict[str, int] = {
    "adv-spread-slices": 2000,
    "adv-pack-trap": 1900,
    "adv-reject-500": 2200,
    "adv-whole-after-sharing": 4000,
    "adv-node-spread": 16000,
    "adv-gpu-spec": 2000,
    "adv-cpu-starvation": 4000,
}
"""Optimal allocated milli-GPU of every :func:`adversarial_instances` instance (see their docstrings)."""


def adversarial_instances() -> list[Instance]:
    """The hand-made instances where greedy arrival-order policies provably lose (optima: :data:`KNOWN_OPTIMA`)."""
    return [make() for make in _ADVERSARIAL]


# -- samples of the trace ----------------------------------------------------------------------
def _stratified(groups: pd.Series, scale: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted row positions: about 1/``scale`` of the rows, apportioned over the groups, drawn per group."""
    codes, uniques = pd.factorize(groups, sort=True)
    sizes = np.bincount(codes, minlength=len(uniques))
    take = apportion(sizes, round(len(groups) / scale))
    picked = [rng.choice(np.flatnonzero(codes == g), size=k, replace=False) for g, k in enumerate(take) if k]
    return np.sort(np.concatenate(picked))


def openb_sample(scale: int, seed: int = 0, ratio: float = DEFAULT_RATIO,
                 data_dir: str | os.PathLike | None = None) -> Instance:
    """A stratified 1/``scale`` sample of openb default, inflated to ``ratio`` (needs the trace).

    Nodes: ``round(1213 / scale)`` GPU nodes, apportioned over the node types by their counts and
    drawn without replacement within each type. Tasks: ``round(8152 / scale)`` tasks apportioned over
    the shape classes :data:`SHAPE_CLASS_KEYS` and drawn within each class; then docs/semantics.md "Workload
    inflation" (:func:`inflate`) to ``ratio`` x the sample's capacity, shuffled. Named
    ``openb-1in<scale>-r<ratio>-s<seed>``.
    """
    from fgdopt.traces import load_openb

    cluster, tasks = load_openb("default", data_dir)
    rng = np.random.default_rng([seed, scale])
    node_keys = pd.Series(list(zip(*(getattr(cluster, k) for k in NODE_TYPE_KEYS), strict=True)))
    task_keys = pd.Series(list(zip(*(getattr(tasks, k) for k in SHAPE_CLASS_KEYS), strict=True)))
    sample = cluster.subset(_stratified(node_keys, scale, rng))
    base = tasks.take(_stratified(task_keys, scale, rng))
    return Instance(f"openb-1in{scale}-r{ratio:g}-s{seed}", sample, inflate(sample, base, rng, ratio))


# -- suites ------------------------------------------------------------------------------------
_MIXES: dict[str, Mapping[str, float] | None] = {
    # short mix name (used in suite instance names) -> node_types of random_instance
    "openb": None,
    "G2x8": {"G2x8-96c": 1},
    "T4x2": {"T4x2-104c": 1},
    "P100x2": {"P100x2-16c": 1},
    "V100x4": {"V100M16x4-32c": 1},
    "G2x8+T4x2": {"G2x8-96c": 1, "T4x2-104c": 1},
    "G2x8+T4x2+P100x2": {"G2x8-96c": 1, "T4x2-104c": 1, "P100x2-16c": 1},
    "V100x4+P100x2": {"V100M16x4-32c": 1, "P100x2-16c": 1},
    "T4x4+V100M32x4": {"T4x4-96c": 1, "V100M32x4-48c": 1},
}

SMALL_SPECS: tuple[tuple[str, int], ...] = (
    ("G2x8", 2), ("G2x8", 4), ("G2x8", 8), ("G2x8", 16),
    ("T4x2", 2), ("T4x2", 4), ("T4x2", 8), ("T4x2", 16),
    ("P100x2", 4), ("P100x2", 8), ("P100x2", 16),
    ("V100x4", 4), ("V100x4", 8), ("V100x4", 12),
    ("openb", 4), ("openb", 8), ("openb", 12), ("openb", 16),
    ("G2x8+T4x2", 8), ("G2x8+T4x2", 16),
    ("G2x8+T4x2+P100x2", 6), ("G2x8+T4x2+P100x2", 12),
    ("V100x4+P100x2", 6), ("T4x4+V100M32x4", 4),
)
"""(mix, nodes) of the generated instances of the ``small`` suite (2-16 nodes)."""

MEDIUM_SPECS: tuple[tuple[str, int], ...] = (
    ("openb", 32), ("openb", 64), ("openb", 128),
    ("G2x8", 32), ("G2x8", 64), ("T4x2", 64), ("T4x2", 128), ("G2x8+T4x2", 96),
)
"""(mix, nodes) of the ``medium`` suite (32-128 nodes)."""


def _generated(specs: tuple[tuple[str, int], ...], seed: int, ratio: float) -> list[Instance]:
    """Instance ``i`` of ``specs`` uses the generator seed ``1000 * seed + i``; named ``rand-<mix>-n..-r..-s..``."""
    seeds = [1000 * seed + i for i in range(len(specs))]
    return [random_instance(n, s, ratio, _MIXES[mix], name=f"rand-{mix}-n{n}-r{ratio:g}-s{s}")
            for s, (mix, n) in zip(seeds, specs, strict=True)]


def suite(name: str, seed: int = 0, ratio: float = DEFAULT_RATIO,
          data_dir: str | os.PathLike | None = None) -> list[Instance]:
    """The instances of suite ``name`` (one of :data:`SUITES`).

    ``small``: :data:`SMALL_SPECS` (24 generated instances, 2-16 nodes) followed by
    :func:`adversarial_instances`; no trace needed. ``medium``: :data:`MEDIUM_SPECS` (8 instances,
    32-128 nodes). ``openb-sample``: :func:`openb_sample` at the scales :data:`SAMPLE_SCALES`
    (needs the trace; ``data_dir`` as in :func:`fgdopt.traces.load_openb`). ``seed`` changes the
    drawn tasks (and the sampled nodes), never the suite's shape.

    Raises
    ------
    ValueError : unknown suite name (the message lists the valid ones).
    """
    if name == "small":
        return _generated(SMALL_SPECS, seed, ratio) + adversarial_instances()
    if name == "medium":
        return _generated(MEDIUM_SPECS, seed, ratio)
    if name == "openb-sample":
        return [openb_sample(scale, seed, ratio, data_dir) for scale in SAMPLE_SCALES]
    raise ValueError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)} (or a directory of instance JSON)")


def load_suite_dir(path: str | os.PathLike) -> list[Instance]:
    """Every ``*.json`` instance file of the directory ``path``, sorted by file name.

    Raises
    ------
    FileNotFoundError : ``path`` is not a directory.
    ValueError : it holds no ``*.json`` file, a file is not a valid instance (names the file), or two files hold
        instances of one name (names both: the studies key their rows by it).
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"instance directory {folder} not found")
    files = sorted(p for p in folder.glob("*.json") if p.is_file())      # not a folder named x.json
    if not files:
        raise ValueError(f"no instance files (*.json) in {folder}")
    instances: list[Instance] = []
    first: dict[str, Path] = {}
    for file in files:
        instance = Instance.load(file)                # its errors name the file
        if (seen := first.setdefault(instance.name, file)) != file:
            raise ValueError(f"{file}: instance name {instance.name!r} is also that of {seen.name}; name each "
                             "instance apart")
        instances.append(instance)
    return instances
