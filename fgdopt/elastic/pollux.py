"""Pollux's scheduling policy: a seeded genetic search for the allocation of best fair goodput, every interval.

As ``pollux.py`` of ``petuum/adaptdl`` ``simulator/`` (``c793c708``) defines it, on a cluster of equal nodes:

* **Jobs** in increasing GPU-seconds attained, then submission; each may take up to ``max(2 x the most replicas it
  has been measured on, 1)`` GPUs (at most 64 and ``max batch // min local batch``; NCF: 1).
* **Speedup** of a job on ``n`` nodes and ``r`` GPUs: its goodput there (its fitted model,
  :class:`~fgdopt.elastic.goodput.GoodputModel`, batch size optimized) over its goodput on its fair share, ``ceil(G /
  J)`` GPUs on one node (``G`` GPUs, ``J`` jobs); a job not yet measured: ``r / ceil(G / J)``. A model's speedups
  are rounded to :data:`SPEEDUP_DECIMALS` decimals (not in Pollux): they come from ``exp`` and ``log``, whose
  float64 results numpy computes differently, by a few units in the last place, on different CPUs (its own SIMD
  code where AVX-512 is present, the C library elsewhere), and the search, which compares states by sums of
  speedups, would otherwise take other draws on another machine.
* **Objectives** of a state (GPUs of every job on every node), both maximized: the power mean (exponent -1) of the
  jobs' speedups x ``4 / G`` (+ 1e-3), each of a job whose allocation changes scaled by ``max(age - 30 restarts, 0)
  / (age + 30)`` (the restart penalty; ``age`` its seconds since submission); and the cluster utility, the sum of
  speedups over the GPUs of the nodes in use.
* **Search**: NSGA-II (rank and crowding survival, binary tournaments, duplicates eliminated) of 100 states over 100
  generations, seeded with the previous interval's final population (jobs matched by name; the first interval: the
  current allocation alone). Offspring: one-point crossover over jobs; mutation (each job reset to its current
  allocation w.p. 0.1; w.p. 0.1 a job's entries zeroed w.p. 0.1 each; an entry raised to a uniform draw between its
  value and the node's GPUs w.p. ``p1 + p2 - p1 p2``, ``p1 = 1 / J`` where the node has a free GPU, ``p2 = 1 /``
  the jobs already on it); repair (on each node only the first job, in job order, spanning several nodes keeps
  GPUs there; a job's GPUs over its cap dropped node by node in random order; a node's GPUs over capacity dropped
  from the last jobs). The pick: the state of best power mean.

Pollux draws from numpy's global generator, unseeded; here one ``numpy.random.Generator`` per planner, seeded. The
NSGA-II is fgdopt's own (pymoo 0.4's semantics as documented: ranks by non-dominated sorting, crowding distance, a
tournament compares rank then crowding).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fgdopt.elastic.jobs import Allocations, ElasticJob

POP, GENERATIONS = 100, 100
"""Pollux's NSGA-II population and generations per interval."""
DELAY_S = 30.0
"""The restart delay the objective charges, seconds."""
P = -1.0
"""Exponent of the power mean (more negative: fairer)."""
SPEEDUP_DECIMALS = 9
"""Decimals a model's speedup keeps (module docstring): far above the few-ulp (~1e-16 relative) differences between
CPUs, far below any difference between configurations that matters (measured on the toy jobs of the tests: 5%)."""


def cap_of(job: ElasticJob, total_gpus: int) -> int:
    """Most GPUs ``job`` may take now."""
    if job.app.name == "ncf":
        return 1
    return min(max(2 * job.max_profiled_replicas, 1), total_gpus, job.app.max_batch_size // job.app.min_local_bsz)


def speedup_table(job: ElasticJob, nodes: int, cap: int, fair: int) -> np.ndarray:
    """Speedup of ``job`` on (n nodes, r GPUs), float (nodes + 1, cap + 1) (0 where n = 0 or n > r), relative to
    its goodput with ``fair`` GPUs on one node (module docstring)."""
    table = np.zeros((nodes + 1, cap + 1))
    model = job.model()
    if model is None:
        table[1:, :] = np.arange(cap + 1) / fair
        return np.triu(table)
    app = job.app
    rng = (app.min_local_bsz, app.max_local_bsz)
    base = model.optimize(1, fair, app.max_batch_size, rng)[0]
    r, n = np.meshgrid(np.arange(1, cap + 1), np.arange(1, nodes + 1))
    ok = n <= r
    if ok.any():
        good = model.optimize(n[ok], r[ok], app.max_batch_size, rng)[0]
        table[n[ok], r[ok]] = np.round(good / base, SPEEDUP_DECIMALS)
    return table


def _nondominated_ranks(f: np.ndarray) -> np.ndarray:
    """Front index of every row of ``f`` (two minimized objectives), 0 the non-dominated: in lexicographic order
    each point joins the first front none of whose members dominates it (per front, the least second objective so
    far is all that decides, and it grows from front to front)."""
    order = np.lexsort((f[:, 1], f[:, 0])).tolist()
    first, second = f[:, 0].tolist(), f[:, 1].tolist()
    least: list[float] = []                              # per front: its least second objective
    at: list[float] = []                                 # ... and the first objective of the point holding it
    rank = np.empty(len(f), dtype=np.int64)
    for i in order:
        a, b = first[i], second[i]
        k = bisect.bisect_left(least, b)
        while k < len(least) and least[k] == b and at[k] < a:   # equal second objective, better first: dominated
            k += 1
        if k == len(least):
            least.append(b)
            at.append(a)
        else:
            least[k], at[k] = b, a
        rank[i] = k
    return rank


def keys_of(states: np.ndarray) -> list[bytes]:
    """One bytes key per state (its entries' bytes), for duplicate elimination."""
    raw = np.ascontiguousarray(states).tobytes()
    size = len(raw) // len(states) if len(states) else 0
    return [raw[i:i + size] for i in range(0, len(raw), size)] if size else [b""] * len(states)


def _crowding(f: np.ndarray) -> np.ndarray:
    """Crowding distance of the rows of one front (inf at the extremes)."""
    n = len(f)
    if n <= 2:
        return np.full(n, np.inf)
    dist = np.zeros(n)
    for m in range(f.shape[1]):
        order = np.argsort(f[:, m], kind="stable")
        span = f[order[-1], m] - f[order[0], m]
        dist[order[0]] = dist[order[-1]] = np.inf
        if span > 0:
            dist[order[1:-1]] += (f[order[2:], m] - f[order[:-2], m]) / span
    return dist


@dataclass
class PolluxPlanner:
    """``pollux`` (module docstring); ``seed`` seeds the search."""

    seed: int = 0
    generations: int = GENERATIONS
    pop_size: int = POP
    name: str = "pollux"
    _rng: np.random.Generator | None = None
    _prev: tuple | None = None                     # (states, job names) of the last interval's population
    _tables: dict = field(default_factory=dict)    # job name -> (model, cap, fair, table)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def _table(self, job: ElasticJob, nodes: int, cap: int, fair: int) -> np.ndarray:
        model = job.model()
        hit = self._tables.get(job.name)
        if hit is not None and hit[0] is model and hit[1:3] == (cap, fair):
            return hit[3]
        table = speedup_table(job, nodes, cap, fair)
        self._tables[job.name] = (model, cap, fair, table)
        return table

    def __call__(self, now: float, jobs: Sequence[ElasticJob], current: Allocations,
                 nodes: Sequence[int]) -> Allocations:
        rng = self._rng
        jobs = sorted(jobs, key=lambda j: (j.attained_gpu_s, j.submit_s))
        names = [j.name for j in jobs]
        n_jobs, n_nodes = len(jobs), len(nodes)
        node_gpus = np.asarray(nodes, dtype=np.int64)
        total = int(node_gpus.sum())
        base = np.zeros((n_jobs, n_nodes), dtype=np.int64)
        for i, k in enumerate(names):
            for node in current.get(k, ()):
                base[i, node] += 1
        fair = math.ceil(total / n_jobs)
        caps = np.array([cap_of(j, total) for j in jobs])
        width = int(caps.max())
        tables = np.zeros((n_jobs, n_nodes + 1, width + 1))
        for i, j in enumerate(jobs):
            t = self._table(j, n_nodes, int(caps[i]), fair)
            tables[i, :, : t.shape[1]] = t
        age = np.array([now - j.submit_s for j in jobs])
        restarts = np.array([j.restarts or 0 for j in jobs])
        penalty = np.maximum(age - restarts * DELAY_S, 0.0) / (age + DELAY_S)
        scale = node_gpus.max() / total                  # a node's share of the cluster, per GPU: 1 / 64 x 16
        rows = np.arange(n_jobs)

        def evaluate(states: np.ndarray) -> np.ndarray:
            count = np.count_nonzero(states, axis=2)
            reps = states.sum(axis=2)
            speed = tables[rows, count, np.minimum(reps, width)]
            scaled = speed * scale * np.where((states != base).any(axis=2), penalty, 1.0)
            mean = (((scaled + 1e-3) ** P).sum(axis=1) / n_jobs) ** (1.0 / P)
            used = (node_gpus * (states.sum(axis=1) > 0)).sum(axis=1)
            utility = np.where(used > 0, speed.sum(axis=1) / np.maximum(used, 1), 0.0)
            return np.column_stack([-mean, -utility])

        def repair(states: np.ndarray) -> np.ndarray:
            spans = np.count_nonzero(states, axis=2) > 1
            extra = np.cumsum((states > 0) & spans[:, :, None], axis=1) > 1
            states = np.where(extra, 0, states)
            draws = rng.random(states.shape)                           # drawn for every entry, used where over
            over = np.nonzero(states.sum(axis=2) > caps)                # (state, job) over its cap: drop GPUs
            if len(over[0]):                                           # keep GPUs in a random order of the nodes
                order = np.argsort(draws[over], axis=1)
                lines = np.arange(len(order))[:, None]
                kept = np.minimum(np.cumsum(states[over][lines, order], axis=1), caps[over[1], None])
                kept[:, 1:] -= kept[:, :-1].copy()
                sub = np.empty_like(kept)
                sub[lines, order] = kept
                states[over] = sub
            full = np.nonzero((states.sum(axis=1) > node_gpus).any(axis=1))[0]   # states with a node over capacity
            if len(full):                                              # the last jobs give up GPUs there
                kept = np.minimum(np.cumsum(states[full], axis=1), node_gpus)
                kept[:, 1:] -= kept[:, :-1].copy()
                states[full] = kept
            return states

        def mutate(states: np.ndarray) -> np.ndarray:
            k = len(states)
            reset, pick = rng.random((k, n_jobs)) < 0.1, rng.random((k, n_jobs)) < 0.1
            states = np.where(reset[:, :, None], base, states)
            states = np.where(pick[:, :, None] & (rng.random(states.shape) < 0.1), 0, states)
            free = (node_gpus - states.sum(axis=1) >= 1)[:, None, :]   # (k, 1, nodes)
            p1 = free / n_jobs                                         # 1 / J on a node with a free GPU
            m2 = (states > 0) & free
            p2 = m2 / np.maximum(m2.sum(axis=1, keepdims=True), 1)
            hit = rng.random(states.shape) < p1 + p2 - p1 * p2
            raised = rng.integers(states, node_gpus[None, None, :] + 1)
            return np.where(hit, raised, states)

        def unique(states: np.ndarray, seen: set[bytes]) -> np.ndarray:
            """The states not in ``seen`` (added to it), each once."""
            keep = []
            for i, key in enumerate(keys_of(states)):
                if key not in seen:
                    seen.add(key)
                    keep.append(i)
            return states[keep]

        if self._prev is None:
            pop = base[None].copy()
        else:
            prev_states, prev_names = self._prev
            where = {k: i for i, k in enumerate(prev_names)}
            pop = np.zeros((len(prev_states), n_jobs, n_nodes), dtype=np.int64)
            dst = [i for i, k in enumerate(names) if k in where]
            pop[:, dst] = prev_states[:, [where[names[i]] for i in dst]]
        pop = unique(repair(pop), set())
        fit = evaluate(pop)
        rank = _nondominated_ranks(fit)
        crowd = np.zeros(len(pop))
        for _ in range(self.generations):
            children = []
            have = 0
            seen = set(keys_of(pop))
            for _ in range(100):                                         # until enough new offspring
                need = self.pop_size - have
                a = self._tournament(rank, crowd, 2 * ((need + 1) // 2))
                pa, pb = pop[a[0::2]], pop[a[1::2]]
                cut = rng.integers(n_jobs, size=len(pa))[:, None] > np.arange(n_jobs)[None, :]
                ca = np.where(cut[:, :, None], pb, pa)
                cb = np.where(cut[:, :, None], pa, pb)
                kids = repair(mutate(np.concatenate([ca, cb])))
                kids = unique(kids, seen)
                children.append(kids[:need])
                have += len(children[-1])
                if have >= self.pop_size:
                    break
            merged = np.concatenate([pop, *children])
            mfit = np.concatenate([fit, evaluate(merged[len(pop):])])
            pop, fit, rank, crowd = self._survive(merged, mfit)
        self._prev = (pop, names)
        best = int(np.argmin(fit[:, 0]))
        return {k: np.repeat(np.arange(n_nodes), pop[best, i]).tolist() for i, k in enumerate(names)
                if pop[best, i].any()}

    def _tournament(self, rank: np.ndarray, crowd: np.ndarray, count: int) -> np.ndarray:
        """``count`` winners of binary tournaments (lower rank, then larger crowding, then a coin)."""
        a = self._rng.integers(len(rank), size=count)
        b = self._rng.integers(len(rank), size=count)
        rank_a, rank_b, crowd_a, crowd_b = rank[a], rank[b], crowd[a], crowd[b]
        same = rank_b == rank_a
        better_b = (rank_b < rank_a) | (same & (crowd_b > crowd_a))
        better_b |= same & (crowd_b == crowd_a) & (self._rng.random(count) < 0.5)
        return np.where(better_b, b, a)

    def _survive(self, states: np.ndarray, fit: np.ndarray) -> tuple:
        """The best ``pop_size`` by front, the last front cut by crowding distance."""
        rank = _nondominated_ranks(fit)
        crowd = np.zeros(len(states))
        keep: list[int] = []
        for r in range(rank.max() + 1):
            front = np.flatnonzero(rank == r)
            crowd[front] = _crowding(fit[front])
            if len(keep) + len(front) <= self.pop_size:
                keep.extend(front.tolist())
            else:
                order = front[np.argsort(-crowd[front], kind="stable")]
                keep.extend(order[: self.pop_size - len(keep)].tolist())
            if len(keep) >= self.pop_size:
                break
        keep_arr = np.asarray(keep)
        return states[keep_arr], fit[keep_arr], rank[keep_arr], crowd[keep_arr]

