"""Failures and drift over time: failed nodes and GPUs, and per-GPU speed factors (a mechanism of the engine).

**Failures** (:class:`FailureModel`). Every node fails at rate ``1 / node_mtbf_s`` and every GPU at ``1 / gpu_mtbf_s``,
independently (Poisson processes, superposed into one seeded stream: :class:`FailureTrace`). A failure at ``t`` of a
resource in service takes it out of service until ``t + repair_s`` (:class:`~fgdopt.timeline.preemption.Outage`: a
node's CPU, memory and GPUs, or one GPU); a failure drawn for a resource already out (a GPU of a node that is out, a
node with a GPU out, the same GPU) is dropped. The trace depends on the cluster and the seed only, never on the
schedule. At the failure, every job with a part on the resource stops: it is preempted under the mechanism's
:class:`~fgdopt.timeline.preemption.Checkpointing`, so the progress since its last completed checkpoint is lost
for the whole job (every part of a gang: one failed worker idles and rolls back all the others), it pays the
restart cost when it starts again (:func:`~fgdopt.timeline.preemption.helios_restart_s`), and it returns to the
queue (counted in the run's ``preemptions``; ``lost_s`` is the progress thrown away, in seconds of run time). The
failed resource takes no job until it is repaired. Events fall on the engine's instants (the mechanism names the
next one, :meth:`FailuresAndDrift.wake_s`); while no job is running or pending the engine sleeps, and an event of
that time is carried out at the next instant, after its pass.

Published figures (the defaults):

* Llama 3 (Grattafiori et al., "The Llama 3 Herd of Models", 2024, section 3.3.4 and its table of interruptions): a
  54-day pre-training snapshot on 16,384 H100 GPUs (8 per server) had 419 unexpected interruptions, 58.7% of them
  attributed to GPUs (faulty GPUs, HBM3, SRAM, the GPU's system processor, ...). We take the GPU-attributed share
  as GPU failures and the rest (network, host, software) as node failures: per GPU, ``54 x 24 h x 16,384 / (0.587
  x 419)`` = 86,332 h (:data:`GPU_MTBF_S`); per 8-GPU node, ``54 x 24 h x 2,048 / (0.413 x 419)`` = 15,338 h
  (:data:`NODE_MTBF_S`). The same report names a diurnal throughput variation of 1-2% from mid-day temperatures
  (the default ``drift`` of 2%).
* Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters" (HPCA 2025, arXiv
  2410.21680; 11 months of two A100 clusters of Meta): a projected mean time to failure of about 47 days for an
  8-GPU job, about 8 h at 1,024 GPUs and 1.8 h at 16,384 (as quoted in Crusoe's "AutoClusters" note). An 8-GPU
  node failing every 47 days (1,128 h) is 14x the Llama 3 node rate: pass ``node_mtbf_s=47 * 86400`` for it.
* Repair time: none of the analyses above reports one; :data:`REPAIR_S` (6 h) is an assumption, to be varied.

The checkpoint interval that minimises the expected time lost (checkpoints plus lost progress) of a job that fails
at rate ``1 / M`` and spends ``delta`` seconds per checkpoint is Young's ``sqrt(2 delta M)`` (Young 1974, Daly 2006:
:func:`young_daly_s`; a job's ``M`` from its nodes and GPUs: :func:`job_mtbf_s`).

**Speed factors** (:class:`SpeedModel`). Identical GPUs run 5-10% apart (silicon variance, thermal throttling, ECC
page retirement: the project's failure-modes notes). Each GPU gets a factor drawn once, uniform in
``[1 - spread, 1]``; a share ``stragglers`` of the GPUs (drawn once) run at ``straggler_factor`` times that
(degraded GPUs that a health check would flag); and every ``drift_period_s`` each factor is redrawn around it,
times ``1 - drift x U`` (``U`` uniform in [0, 1], a fresh draw per GPU and period). A run starts at its job's
speed times the least factor among its GPUs (a gang: among all its parts'; :class:`~fgdopt.timeline.placement.
Placer`) and keeps that speed until it ends (a finish or a failure): a drift step changes the speed of the runs
that start after it, not of those running (the engine's re-rate keeps a run's progress as a checkpoint would, which
would hide failure losses). A *health-aware* policy sees the factors (:mod:`fgdopt.policies.health`).

:class:`FailuresAndDrift` is the mechanism (``simulate(..., mechanism=FailuresAndDrift(...))``; by name
``failures``: the published failure figures, no speed factors).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fgdopt.model import Cluster
from fgdopt.timeline.preemption import Checkpointing, MechanismBase, Outage, OutagePlan, View

HOUR_S = 3600.0
GPU_MTBF_S = 54 * 24 * HOUR_S * 16_384 / (0.587 * 419)
"""Mean time between failures of one GPU, s: Llama 3's GPU-attributed interruptions (module docstring), 86,332 h."""
NODE_MTBF_S = 54 * 24 * HOUR_S * 2_048 / ((1 - 0.587) * 419)
"""Mean time between failures of one node, s: Llama 3's other interruptions (module docstring), 15,338 h."""
REPAIR_S = 6 * HOUR_S
"""How long a failed node or GPU stays out of service, s: an assumption (module docstring)."""


def young_daly_s(checkpoint_cost_s: float, mtbf_s: float) -> float:
    """Young/Daly's checkpoint interval ``sqrt(2 x checkpoint_cost_s x mtbf_s)`` (s) that minimises the expected
    time lost to checkpoints and failures of a job failing every ``mtbf_s`` seconds on average.

    >>> young_daly_s(30.0, 15_000.0)
    948.6832980505138
    """
    return math.sqrt(2.0 * checkpoint_cost_s * mtbf_s)


def job_mtbf_s(nodes: float, gpus: float, node_mtbf_s: float = NODE_MTBF_S, gpu_mtbf_s: float = GPU_MTBF_S) -> float:
    """Mean time between failures (s) of a job on ``nodes`` nodes and ``gpus`` GPUs: ``1 / (nodes / node_mtbf_s + gpus
    / gpu_mtbf_s)`` (any one of them stops it; ``inf`` when neither fails)."""
    rate = nodes / node_mtbf_s + gpus / gpu_mtbf_s
    return math.inf if rate == 0 else 1.0 / rate


def _check_mtbf(what: str, value: float) -> None:
    if not (value > 0):                                   # NaN too
        raise ValueError(f"{what} must be a number of seconds > 0 (inf: never), got {value}")


@dataclass(frozen=True)
class FailureModel:
    """Node and GPU failures (module docstring): mean times between failures of one node and one GPU, the repair
    time and the seed of the trace, seconds (``inf``: that resource never fails)."""

    node_mtbf_s: float = NODE_MTBF_S
    gpu_mtbf_s: float = GPU_MTBF_S
    repair_s: float = REPAIR_S
    seed: int = 0

    def __post_init__(self) -> None:
        _check_mtbf("node_mtbf_s", self.node_mtbf_s)
        _check_mtbf("gpu_mtbf_s", self.gpu_mtbf_s)
        if not (0 <= self.repair_s < math.inf):
            raise ValueError(f"repair_s must be a finite number of seconds >= 0, got {self.repair_s}")

    def rates(self, cluster: Cluster) -> tuple[float, float]:
        """Failures per second on ``cluster``: of its nodes, and in all (its nodes and its GPUs).

        >>> from fgdopt.model import Cluster
        >>> FailureModel(node_mtbf_s=100.0, gpu_mtbf_s=400.0).rates(Cluster([8000] * 2, [1024] * 2, [4, 4], ["T4"] * 2))
        (0.02, 0.04)
        """
        node = cluster.n_nodes / self.node_mtbf_s
        return node, node + int(cluster.gpu.sum()) / self.gpu_mtbf_s


class FailureTrace:
    """The failures of ``model`` on ``cluster`` in time order, drawn lazily (module docstring): :meth:`peek` the next
    one that is carried out, :meth:`pop` it. Event ``k`` of the superposed stream comes ``Exp(total rate)`` after
    event ``k - 1``; it is a node failure with probability ``nodes / node_mtbf_s / total``, else a GPU failure, the
    node or GPU uniform among all. The draws are made in event order from one generator seeded by ``model.seed``, so
    the trace is the same however it is read."""

    def __init__(self, cluster: Cluster, model: FailureModel):
        self.cluster, self.model = cluster, model
        gpus = cluster.gpu.astype(np.int64)
        self._gpu_node = np.repeat(np.arange(cluster.n_nodes), gpus)          # flat GPU -> node, GPU id
        self._gpu_id = np.concatenate([np.arange(k) for k in gpus]) if gpus.sum() else np.zeros(0, np.int64)
        node_rate, self.rate = model.rates(cluster)
        self._node_share = node_rate / self.rate if self.rate > 0 else 0.0
        self._rng = np.random.default_rng(model.seed)
        self._node_until = np.full(cluster.n_nodes, -math.inf)              # out of service until, s
        self._gpu_until = np.full((cluster.n_nodes, max(cluster.max_gpus, 1)), -math.inf)
        self._t = 0.0
        self._next: tuple[float, Outage] | None = None

    def _draw(self) -> tuple[float, Outage]:
        """The next failure of the stream that is carried out (drawn ones on resources out of service dropped)."""
        rng, cluster = self._rng, self.cluster
        while True:
            self._t += rng.exponential(1.0 / self.rate)
            if rng.random() < self._node_share:
                node = int(rng.integers(cluster.n_nodes))
                gpus, whole = tuple(range(int(cluster.gpu[node]))), True
                free = self._node_until[node] <= self._t and (self._gpu_until[node] <= self._t).all()
            else:
                flat = int(rng.integers(len(self._gpu_node)))
                node, gpus, whole = int(self._gpu_node[flat]), (int(self._gpu_id[flat]),), False
                free = self._node_until[node] <= self._t and self._gpu_until[node, gpus[0]] <= self._t
            if free:
                end = self._t + self.model.repair_s
                if whole:
                    self._node_until[node] = end
                else:
                    self._gpu_until[node, gpus[0]] = end
                return self._t, Outage(node, gpus, whole)

    def peek(self) -> tuple[float, Outage] | None:
        """The next failure carried out, (time s, :class:`~fgdopt.timeline.preemption.Outage`), or None (never)."""
        if self.rate == 0:
            return None
        if self._next is None:
            self._next = self._draw()
        return self._next

    def pop(self) -> tuple[float, Outage]:
        """:meth:`peek`'s failure, taken off the trace."""
        event = self.peek()
        self._next = None
        return event


class FailureLog:
    """Given failures, replayed as :class:`FailureTrace` draws them (:meth:`peek`, :meth:`pop`): ``events``, pairs
    (time s, :class:`~fgdopt.timeline.preemption.Outage`) in time order, each out of service for ``repair_s`` seconds
    (e.g. a cluster's failure log, or a failure at a chosen instant). It is read once: one per run. An event must
    not fall on a resource still out of service (the engine then stops with a ``RuntimeError``)."""

    def __init__(self, events, repair_s: float = REPAIR_S):
        self.events = sorted((float(t), Outage(int(o.node), tuple(int(g) for g in o.gpus), bool(o.whole_node)))
                             for t, o in events)
        if not (0 <= repair_s < math.inf) or any(not (t >= 0 and math.isfinite(t)) for t, _ in self.events):
            raise ValueError(f"failure times and repair_s must be finite numbers of seconds >= 0, got {repair_s}")
        self.repair_s = repair_s
        self._k = 0

    def peek(self) -> tuple[float, Outage] | None:
        return self.events[self._k] if self._k < len(self.events) else None

    def pop(self) -> tuple[float, Outage]:
        self._k += 1
        return self.events[self._k - 1]


def failure_trace(cluster: Cluster, model: FailureModel, until_s: float) -> pd.DataFrame:
    """The failures of ``model`` on ``cluster`` up to ``until_s`` seconds: one row per failure carried out,
    ``time_s, node, gpus`` (the GPU ids, comma-separated), ``whole_node``, ``repaired_s``."""
    trace, rows = FailureTrace(cluster, model), []
    while (event := trace.peek()) is not None and event[0] <= until_s:
        t, out = trace.pop()
        rows.append({"time_s": t, "node": out.node, "gpus": ",".join(map(str, out.gpus)),
                     "whole_node": out.whole_node, "repaired_s": t + model.repair_s})
    return pd.DataFrame(rows, columns=["time_s", "node", "gpus", "whole_node", "repaired_s"])


@dataclass(frozen=True)
class SpeedModel:
    """Per-GPU speed factors (module docstring): ``spread`` of the factors drawn once, the share of ``stragglers``
    and their ``straggler_factor``, the ``drift`` of every ``drift_period_s`` seconds, the seed of the draws."""

    spread: float = 0.1
    stragglers: float = 0.0
    straggler_factor: float = 0.5
    drift: float = 0.0
    drift_period_s: float = HOUR_S
    seed: int = 0

    def __post_init__(self) -> None:
        if not (0 <= self.spread < 1 and 0 <= self.drift < 1 and 0 <= self.stragglers <= 1):
            raise ValueError(f"spread and drift must lie in [0, 1) and stragglers in [0, 1], got {self.spread}, "
                             f"{self.drift}, {self.stragglers}")
        if not (0 < self.straggler_factor <= 1):
            raise ValueError(f"a speed factor must be > 0 and <= 1: straggler_factor {self.straggler_factor}")
        if not (0 < self.drift_period_s < math.inf):
            raise ValueError(f"drift_period_s must be a finite number of seconds > 0, got {self.drift_period_s}")

    def base(self, cluster: Cluster) -> np.ndarray:
        """The factors drawn once, float64 (nodes, max GPUs) (absent GPUs: 1)."""
        rng = np.random.default_rng([self.seed, 0])
        shape = (cluster.n_nodes, max(cluster.max_gpus, 1))
        factors = 1.0 - self.spread * rng.random(shape)
        factors[rng.random(shape) < self.stragglers] *= self.straggler_factor
        factors[np.arange(shape[1])[None, :] >= cluster.gpu[:, None]] = 1.0
        return factors

    def at_step(self, base: np.ndarray, step: int, out: np.ndarray) -> None:
        """Write into ``out`` the factors of drift period ``step`` (``step x drift_period_s`` onwards) from ``base``."""
        if self.drift == 0:
            out[:] = base
            return
        rng = np.random.default_rng([self.seed, 1, step])
        np.multiply(base, 1.0 - self.drift * rng.random(base.shape), out=out)


@dataclass
class FailuresAndDrift(MechanismBase):
    """The mechanism of failures and speed factors (module docstring): ``failures`` (a :class:`FailureModel` drawn
    by :class:`FailureTrace`, or given ones, :class:`FailureLog`; None: none) and ``speeds`` (None: every factor 1;
    needs ``cluster``), under ``checkpointing``.

    Attributes
    ----------
    gpu_speed : float64 (nodes, max GPUs), every GPU's factor now, or None without ``speeds`` (the engine reads it).
    log : one dict per failure carried out: ``time_s, node, gpus, whole_node, stopped`` (the jobs it stopped).
    """

    failures: FailureModel | FailureLog | None = None
    speeds: SpeedModel | None = None
    cluster: Cluster | None = None
    checkpointing: Checkpointing = Checkpointing(interval_s=1800.0)
    name: str = "failures"
    every_instant = True
    gpu_speed: np.ndarray | None = field(default=None, init=False)
    log: list = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._trace: FailureTrace | None = None
        self._repairs: list[tuple[float, int, Outage]] = []               # heap of (time, seq, outage)
        self._seq = 0
        self._step = -1                                                    # the drift period of gpu_speed
        if self.speeds is not None:
            if self.cluster is None:
                raise ValueError("speed factors need the cluster: FailuresAndDrift(speeds=..., cluster=...)")
            self._base = self.speeds.base(self.cluster)
            self.gpu_speed = self._base.copy()
            self._step = 0
            self.speeds.at_step(self._base, 0, self.gpu_speed)

    def _events(self, cluster: Cluster) -> tuple[float, float, float]:
        """The next failure, repair and drift step times (s; inf: none)."""
        if self._trace is None and self.failures is not None:
            self._trace = (self.failures if isinstance(self.failures, FailureLog)
                           else FailureTrace(cluster, self.failures))
        nxt = self._trace.peek() if self._trace is not None else None
        return (nxt[0] if nxt else math.inf, self._repairs[0][0] if self._repairs else math.inf,
                (self._step + 1) * self.speeds.drift_period_s if self.speeds is not None and self.speeds.drift else
                math.inf)

    def wake_s(self, view: View) -> float:
        return min(self._events(view.state.cluster))

    def plan(self, view: View) -> OutagePlan | None:
        now, state = view.now, view.state
        fail_t, repair_t, drift_t = self._events(state.cluster)
        if drift_t <= now:                                                 # a drift step: the factors now
            self._step = int(now // self.speeds.drift_period_s)
            self.speeds.at_step(self._base, self._step, self.gpu_speed)
        if repair_t <= now and repair_t <= fail_t:                         # repairs first, in time order
            up = []
            while self._repairs and self._repairs[0][0] <= min(now, fail_t):
                up.append(heapq.heappop(self._repairs)[2])
            return OutagePlan(up=tuple(up))
        if fail_t > now:
            return None
        t, out = self._trace.pop()
        heapq.heappush(self._repairs, (t + self.failures.repair_s, self._seq, out))
        self._seq += 1
        stopped = _jobs_on(state, out)
        self.log.append({"time_s": t, "node": out.node, "gpus": ",".join(map(str, out.gpus)),
                         "whole_node": out.whole_node, "stopped": len(stopped)})
        return OutagePlan(victims=stopped, down=(out,))

    def failures_frame(self) -> pd.DataFrame:
        """:attr:`log` as a table."""
        return pd.DataFrame(self.log, columns=["time_s", "node", "gpus", "whole_node", "stopped"])


def _jobs_on(state, out: Outage) -> tuple[int, ...]:
    """The running jobs with a part on ``out``'s node (whole node) or GPU, in index order."""
    node, gpu = out.node, (None if out.whole_node else out.gpus[0])
    spread = [j for j, parts in enumerate(state.parts_of) if len(parts) > 1]     # a part maybe off the first node
    return tuple(j for j in sorted({*np.flatnonzero(state.node_of == node).tolist(), *spread})
                 if any(n == node and (gpu is None or gpu in gs) for n, gs in state.parts(j)))


def failures(*, checkpoint_s: float = 1800.0, checkpoint_cost_s: float = 0.0, **_) -> FailuresAndDrift:
    """The ``failures`` mechanism by name (:func:`~fgdopt.timeline.mechanisms.make_mechanism`): the published failure
    figures (:class:`FailureModel`'s defaults, seed 0), no speed factors, checkpoints every ``checkpoint_s`` seconds
    costing ``checkpoint_cost_s``."""
    return FailuresAndDrift(FailureModel(), checkpointing=Checkpointing(checkpoint_s, checkpoint_cost_s))
