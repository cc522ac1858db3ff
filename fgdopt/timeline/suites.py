"""Instance suites over time: small job sets whose optimal schedule is in reach, and hand-made traps.

* :func:`random_time_instance` -- openb nodes of the types with at most 4 GPUs (:data:`SMALL_NODE_TYPES`, in
  their openb proportions: with 8-GPU nodes a few dozen jobs of 0.75 GPU on average never contend) and jobs
  with openb shapes (:func:`fgdopt.suites.openb_shapes`, only those that fit an empty node), heavy-tailed
  lifetimes scaled to minutes (log-normal, median :data:`MEDIAN_S`, sigma :data:`SIGMA`, whole seconds clipped to
  [:data:`MIN_S`, :data:`MAX_S`]) and Poisson arrivals (whole seconds) at an offered load over the arrival span:
  the jobs' whole GPU work (GPU demand x lifetime) is ``load`` times the GPU capacity times the span from the first
  to the expected last arrival (a few dozen jobs never reach a steady state, so the load is that of the batch).
  Deterministic per seed; no trace needed.
* :func:`trap_instances` -- hand-made instances where an online discipline or placement provably loses, each with
  its optimum (mean JCT and makespan, seconds) derived in its docstring: :data:`KNOWN_OPTIMA`.
* :func:`pinned_nodes_family` -- whole-node jobs against nodes pinned by 5-GPU jobs: the optimum (with the pins
  on time) in closed form, every pooled relaxation's optimum 0.
* :func:`time_suite` -- the named suites :data:`TIME_SUITES`: ``small-time`` (24 generated instances, 6-16
  nodes, 24-48 jobs, loads 1.6, 1.8 and 2.0, 30% whole-node jobs and one long pin per four nodes, where the
  schedule matters and the optimum is mostly proven; and the traps) and ``medium-time`` (:data:`MEDIUM_SPECS`:
  8 instances of 16-64 nodes of every openb type and 300-1,000 jobs at loads 1.2 and 1.3, 30% whole-node jobs and
  one long pin per eight nodes, so that jobs wait in every schedule: run and bounded by the full-scale methods,
  ``python -m experiments.schedule --instances medium-time --scale``; CP-SAT alone proves nothing at this size).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fgdopt.model import Cluster, TaskSet
from fgdopt.suites import SHAPE_KEYS, _cluster_of, apportion, fitting_shapes, openb_node_types, openb_shapes
from fgdopt.timeline.jobs import JobSet

MEDIAN_S, SIGMA, MIN_S, MAX_S = 240.0, 1.0, 10.0, 3600.0
"""Lifetimes of generated jobs: log-normal of median 4 minutes and sigma 1, in whole seconds within [10 s, 1 h]."""
SMALL_LOADS = (1.6, 1.8, 2.0)
"""Offered loads of the generated ``small-time`` instances."""
SMALL_WHOLE_SHARE = 0.3
"""The share of whole-node jobs in the generated ``small-time`` instances."""
SMALL_PIN_EVERY = 4
"""The generated ``small-time`` instances have one long pin per this many nodes."""
SMALL_NODE_TYPES = ("T4x2-104c", "P100x2-16c", "V100M16x4-32c", "P100x2-64c", "V100M16x1-8c", "T4x4-96c")
"""The openb node types of the generated clusters (weighted by their node counts in openb)."""
SMALL_SIZES = ((6, 24), (8, 24), (8, 30), (10, 30), (12, 36), (12, 40), (16, 40), (16, 48))
"""(nodes, jobs) of the generated ``small-time`` instances (each at every load of :data:`SMALL_LOADS`)."""
MEDIUM_SPECS = ((16, 300, 1.3), (16, 500, 1.2), (24, 400, 1.3), (24, 700, 1.2), (32, 600, 1.3), (32, 1000, 1.2),
                (48, 1000, 1.3), (64, 1000, 1.2))
"""(nodes, jobs, load) of the ``medium-time`` instances, seeded 0, 1, ... in this order: at least 9 jobs per node
(a job lasts minutes, so the arrivals span several lifetimes and the load is not only that of one batch) and loads
near the top of 0.9-1.3, where every schedule makes jobs wait."""
MEDIUM_WHOLE_SHARE = 0.3
"""The share of whole-node jobs in the ``medium-time`` instances."""
MEDIUM_PIN_EVERY = 8
"""The ``medium-time`` instances have one long pin per this many nodes."""
TIME_SUITES = ("small-time", "medium-time", "traps")


@dataclass(frozen=True, eq=False)
class TimeInstance:
    """A named cluster and job set; ``optimum`` maps objectives to their hand-derived optimum (traps only);
    ``definition`` holds the arguments that regenerate a generated instance (:func:`random_time_instance`'s)."""

    name: str
    cluster: Cluster
    jobs: JobSet
    optimum: dict = field(default_factory=dict)
    definition: dict = field(default_factory=dict)


def random_time_instance(n_nodes: int, n_jobs: int, load: float, seed: int, name: str | None = None, *,
                         node_types: tuple[str, ...] = SMALL_NODE_TYPES, whole_share: float = 0.0, pins: int = 0
                         ) -> TimeInstance:
    """``n_nodes`` openb nodes and ``n_jobs`` jobs at offered ``load`` (module docstring), seeded by ``seed``.

    ``node_types``: the openb types drawn from (in their openb proportions). ``whole_share``: each job is, with
    this probability, a *whole-node* job instead (all the GPUs of a node drawn at random, 1 core and 1 GiB).
    ``pins``: the first this many jobs become *pins*, one whole GPU each, submitted at 0 for :data:`MAX_S`
    seconds (they hold part of a node for long, as the 5-GPU jobs of :func:`pinned_nodes_family`). Both draw
    from a second generator seeded by ``(seed, 1)``, so that without them the instance is the one of ``seed``
    alone."""
    if n_nodes < 1 or n_jobs < 1 or load <= 0 or not 0 <= whole_share <= 1 or not 0 <= pins <= n_jobs:
        raise ValueError(f"need n_nodes >= 1, n_jobs >= 1, load > 0, 0 <= whole_share <= 1 and 0 <= pins <= "
                         f"n_jobs (got {n_nodes}, {n_jobs}, {load}, {whole_share}, {pins})")
    rng = np.random.default_rng(seed)
    types = openb_node_types().loc[list(node_types)]
    cluster = _cluster_of(types, apportion(types["count"].to_numpy(), n_nodes))
    shapes = fitting_shapes(cluster, openb_shapes())
    weights = shapes["count"].to_numpy(dtype=np.float64)
    rows = rng.choice(len(shapes), size=n_jobs, p=weights / weights.sum())
    cols = {k: shapes[k].to_numpy()[rows].copy() for k in SHAPE_KEYS}
    life = np.clip(np.round(MEDIAN_S * np.exp(SIGMA * rng.standard_normal(n_jobs))), MIN_S, MAX_S)
    if whole_share > 0 or pins > 0:
        extra = np.random.default_rng([seed, 1])
        whole = extra.random(n_jobs) < whole_share
        whole[:pins] = False
        node = extra.integers(cluster.n_nodes, size=n_jobs)
        cols["num_gpu"][whole], cols["gpu_milli"][whole] = cluster.gpu[node[whole]], 1000
        pin = np.arange(n_jobs) < pins
        cols["num_gpu"][pin], cols["gpu_milli"][pin] = 1, 1000
        for k, v in (("cpu_milli", 1000), ("memory_mib", 1024), ("gpu_spec", "")):
            cols[k][whole | pin] = v
        life[pin] = MAX_S
    tasks = TaskSet(*(cols[k] for k in SHAPE_KEYS), names=tuple(f"j{i}" for i in range(n_jobs)))
    work = float((tasks.gpu_demand * life).sum())
    span = work / (load * cluster.gpu_capacity_milli) if work > 0 else MEDIAN_S * n_jobs
    rate = max(n_jobs - 1, 1) / span
    submit = np.floor(np.cumsum(rng.exponential(1.0 / rate, size=n_jobs)))
    submit -= submit[0]
    submit[:pins] = 0.0
    definition = {"n_nodes": n_nodes, "n_jobs": n_jobs, "load": load, "seed": seed, "node_types": node_types,
                  "whole_share": whole_share, "pins": pins}
    return TimeInstance(name or f"time-n{n_nodes}-j{n_jobs}-l{load:g}-s{seed}", cluster,
                        JobSet(tasks, submit, life), definition=definition)


def _one_node(gpus: int, n_nodes: int = 1) -> Cluster:
    return Cluster([32_000] * n_nodes, [65_536] * n_nodes, [gpus] * n_nodes, ["T4"] * n_nodes)


def _jobs(*rows: tuple) -> JobSet:
    """Jobs from ``(num_gpu, gpu_milli, submit_s, duration_s)`` (1 core, 1 GiB each)."""
    n = len(rows)
    tasks = TaskSet([1000] * n, [1024] * n, [r[0] for r in rows], [r[1] for r in rows],
                    names=tuple(f"{chr(65 + i)}" for i in range(n)))
    return JobSet(tasks, [r[2] for r in rows], [r[3] for r in rows])


def trap_shortest_first() -> TimeInstance:
    """One whole GPU, three whole-GPU jobs submitted at 0 with durations 3, 1, 2 s (in that order).

    FIFO runs them in order: finishes 3, 4, 6, mean JCT 13/3. Shortest first: 1, 3, 6, mean 10/3, the optimum
    (on one machine shortest-processing-time first minimizes the total completion time). Makespan 6 in every
    order without idle time.
    """
    return TimeInstance("trap-shortest-first", _one_node(1), _jobs((1, 1000, 0, 3), (1, 1000, 0, 1),
                                                                  (1, 1000, 0, 2)),
                        {"mean-jct": 10 / 3, "makespan": 6.0})


def trap_head_of_line() -> TimeInstance:
    """FIFO's head of line: one node of 2 GPUs; A (1 GPU, submitted 0, 10 s), B (2 GPUs, 1, 10 s), C (1 GPU, 2,
    2 s).

    FIFO: A 0-10; B waits for both GPUs, 10-20; C waits behind B, 20-22: JCTs 10, 19, 20, mean 49/3. Optimum:
    A 0-10, C 2-4 on the other GPU, B 10-20: JCTs 10, 19, 2, mean 31/3 = 10.33. It is optimal: A and C start
    on submission; B overlaps A, so it starts after A ends (>= 10) or A starts after B ends (>= 11, then A's JCT
    is >= 21 and the sum >= 10 + 21 + 2 > 31). Makespan: B and A cannot overlap, so the later of them ends at
    >= 20 (A first: B ends >= 20; B first: A ends >= 21); 20 is reached by the optimum above.
    """
    return TimeInstance("trap-head-of-line", _one_node(2), _jobs((1, 1000, 0, 10), (2, 1000, 1, 10),
                                                                (1, 1000, 2, 2)),
                        {"mean-jct": 31 / 3, "makespan": 20.0})


def trap_wait_beats_start() -> TimeInstance:
    """Waiting beats starting: one whole GPU; A (whole GPU, submitted 0, 100 s), B (whole GPU, 1, 1 s).

    Every engine discipline starts A at 0, so B waits until 100: JCTs 100, 100, mean 100. Leaving the GPU idle
    for one second: B 1-2, A 2-102: JCTs 102 and 1, mean 51.5, the optimum (A first costs B >= 99 s of wait;
    B first makes A start >= 2). Makespan: A first, 0-100, then B 100-101: 101 (B first ends at >= 102).
    """
    return TimeInstance("trap-wait-beats-start", _one_node(1), _jobs((1, 1000, 0, 100), (1, 1000, 1, 1)),
                        {"mean-jct": 51.5, "makespan": 101.0})


def trap_sharing_fragments() -> TimeInstance:
    """A sharing job placed where it fragments the GPU a later whole-GPU job needs: one node of 2 GPUs; S1, S2
    (0.5 GPU each, submitted 0 and 1, 100 s), W (whole GPU, 2, 10 s).

    S2 beside S1 on one GPU leaves the other whole for W: everyone starts on submission, JCTs 100, 100, 10,
    mean 70 (the trivial bound: each JCT is at least its duration), so it is optimal. S2 on the other GPU
    blocks W until 100 (JCT 108, mean 102.67). Makespan 101 (S2 ends at >= 101).
    """
    return TimeInstance("trap-sharing-fragments", _one_node(2), _jobs((1, 500, 0, 100), (1, 500, 1, 100),
                                                                     (1, 1000, 2, 10)),
                        {"mean-jct": 70.0, "makespan": 101.0})


def trap_spread_delays_multi() -> TimeInstance:
    """A placement choice that delays a multi-GPU job: two nodes of 2 GPUs; A, B (1 GPU each, submitted 0 and 1,
    100 s), M (2 GPUs on one node, 2, 10 s).

    B beside A leaves a whole node for M: everyone starts on submission, mean JCT (100 + 100 + 10) / 3 = 70, the
    trivial bound, so optimal. B on the other node (spreading, or a packing score that prefers the emptier
    node) blocks M until 100: JCT 108, mean 102.67. Makespan 101 (B ends at >= 101).
    """
    return TimeInstance("trap-spread-delays-multi", _one_node(2, 2), _jobs((1, 1000, 0, 100), (1, 1000, 1, 100),
                                                                          (2, 1000, 2, 10)),
                        {"mean-jct": 70.0, "makespan": 101.0})


def pinned_nodes_family(n_nodes: int = 4, n_pinned: int = 3, n_jobs: int = 40, duration_s: float = 100.0,
                        gap_s: float = 50.0, pin_s: float | None = None) -> TimeInstance:
    """Whole-node jobs against nodes pinned by 5-GPU jobs: the optimum in closed form, the pooled bound far below.

    ``n_nodes`` nodes of 8 GPUs (32 cores, 64 GiB); ``n_pinned`` jobs of 5 GPUs (``P0``, ...) submitted at 0 for
    ``pin_s`` seconds (default: past the last start below), then ``n_jobs`` jobs of 8 GPUs (``W0``, ...) submitted
    at ``k gap_s`` (k = 0, 1, ...) for ``duration_s`` seconds (1 core and 1 GiB each).

    Among the schedules that start the pins on arrival (the background-on-time class), the optimal mean wait of
    the 8-GPU jobs is ``mean_k (L_k - k gap_s)`` with ``L_k = max(k gap_s, L_{k-m} + duration_s)`` (``L_k = k gap_s``
    for ``k < m``), ``m = n_nodes - n_pinned``. Proof: a pinned node has 3 GPUs free while its pin runs, so at most
    ``m`` 8-GPU jobs run at once. Sort the 8-GPU jobs by start, ``S_(0) <= S_(1) <= ...``: (i) ``S_(k) >=
    S_(k-m) + duration_s``, since the jobs ``(k-m) .. k`` all started by ``S_(k)`` and, were ``S_(k-m)`` later than
    ``S_(k) - duration_s``, ``m + 1`` of them would run at ``S_(k)``; (ii) ``S_(k) >= k gap_s``, since ``k + 1`` jobs
    have started by ``S_(k)``, each after its submission, and the ``(k+1)``-th submission is ``k gap_s``. By
    induction ``S_(k) >= L_k``, so the total wait is at least ``sum_k (L_k - k gap_s)``; starting the jobs in
    submission order, each at once on a free node, reaches it (every engine run does: the pins take one node
    each, and an 8-GPU job fits only an empty unpinned node). The pins wait 0, so over every job the optimal
    mean wait is ``n_jobs / (n_jobs + n_pinned)`` times the above.

    Defaults (4 nodes, 3 pinned, 40 jobs of 100 s every 50 s): ``m = 1``, ``L_k = 100 k``, waits ``50 k``, mean
    ``50 * 39 / 2 = 975 s`` over the 8-GPU jobs, ``975 * 40 / 43 = 906.98 s`` over every job
    (:data:`PINNED_FAMILY_WAIT`). The pooled view sees ``32 - 15 = 17`` free GPUs, and at most two 8-GPU jobs
    overlap when each starts at its submission (``duration_s = 2 gap_s``): starting everything at once fits the
    pooled capacities, so every pooled relaxation's optimum is 0.
    """
    if not 0 <= n_pinned < n_nodes or n_jobs < 1 or duration_s <= 0 or gap_s < 0:
        raise ValueError(f"need 0 <= n_pinned < n_nodes, n_jobs >= 1, duration_s > 0, gap_s >= 0 (got {n_pinned}, "
                         f"{n_nodes}, {n_jobs}, {duration_s}, {gap_s})")
    m = n_nodes - n_pinned
    start = np.zeros(n_jobs)
    for k in range(n_jobs):
        start[k] = max(k * gap_s, start[k - m] + duration_s) if k >= m else k * gap_s
    pin = pin_s if pin_s is not None else float(start[-1] + duration_s)
    rows = [(5, 1000, 0.0, pin)] * n_pinned + [(8, 1000, k * gap_s, duration_s) for k in range(n_jobs)]
    tasks = TaskSet([1000] * len(rows), [1024] * len(rows), [r[0] for r in rows], [r[1] for r in rows],
                    names=tuple([f"P{i}" for i in range(n_pinned)] + [f"W{k}" for k in range(n_jobs)]))
    jobs = JobSet(tasks, [r[2] for r in rows], [r[3] for r in rows])
    wait = float((start - gap_s * np.arange(n_jobs)).sum())
    return TimeInstance(f"pinned-n{n_nodes}-p{n_pinned}-j{n_jobs}", _one_node(8, n_nodes), jobs,
                        {"mean-wait-on-time": wait / (n_jobs + n_pinned), "stream-mean-wait": wait / n_jobs})


PINNED_FAMILY_WAIT = 975 * 40 / 43
"""The hand-derived optimal mean wait (s) over every job of :func:`pinned_nodes_family` with its defaults, among
the schedules that start the pins on arrival."""


def trap_instances() -> list[TimeInstance]:
    """The hand-made traps, each with its hand-derived optimum."""
    return [trap_shortest_first(), trap_head_of_line(), trap_wait_beats_start(), trap_sharing_fragments(),
            trap_spread_delays_multi()]


KNOWN_OPTIMA = {inst.name: inst.optimum for inst in trap_instances()}
"""Trap name -> {objective: optimum in seconds}."""


def time_suite(name: str, seed: int = 0) -> list[TimeInstance]:
    """The suite ``name`` (:data:`TIME_SUITES`); ``seed`` offsets the generated instances' seeds.

    ``small-time``: every (nodes, jobs) of :data:`SMALL_SIZES` at every load of :data:`SMALL_LOADS`, with
    :data:`SMALL_WHOLE_SHARE` whole-node jobs and one pin per :data:`SMALL_PIN_EVERY` nodes
    (:func:`random_time_instance`), then the traps. ``medium-time``: every (nodes, jobs, load) of
    :data:`MEDIUM_SPECS`, on every openb node type (8-GPU nodes included), with :data:`MEDIUM_WHOLE_SHARE`
    whole-node jobs and one pin per :data:`MEDIUM_PIN_EVERY` nodes."""
    if name == "traps":
        return trap_instances()
    if name == "small-time":
        return [random_time_instance(n, j, load, seed + k, whole_share=SMALL_WHOLE_SHARE,
                                     pins=max(1, n // SMALL_PIN_EVERY))
                for k, ((n, j), load) in enumerate((s, load) for s in SMALL_SIZES for load in SMALL_LOADS)
                ] + trap_instances()
    if name == "medium-time":
        types = tuple(openb_node_types().index)
        return [random_time_instance(n, j, load, seed + k, node_types=types, whole_share=MEDIUM_WHOLE_SHARE,
                                     pins=max(1, n // MEDIUM_PIN_EVERY))
                for k, (n, j, load) in enumerate(MEDIUM_SPECS)]
    raise ValueError(f"unknown time suite {name!r}; choose one of {', '.join(TIME_SUITES)}")
