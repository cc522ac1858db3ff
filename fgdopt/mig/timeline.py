"""MIG over time: re-layout evictions (``mig-repack``), the static partition, openb jobs as profiles.

The model. On a MIG cluster (:mod:`fgdopt.mig.slices`) a running job holds one GPU instance per GPU at a fixed start
slice for its whole run: an instance cannot be moved or resized while its job runs. Two ways of operating the GPUs:

*Dynamic layout* (fgdopt's MIG model, and NVIDIA's dynamic MIG: one GPU instance can be created or destroyed while
the others of the GPU keep running). A job's instance is created at an allowed free start of its profile when it
starts, destroyed when it leaves. Over time a GPU can hold enough free memory slices for a profile at no allowed
start (A100: a 3g.20gb needs slices 0-3 or 4-7; 1g instances at slices 1 and 5 leave six slices free and block
both). A pending job blocked only by this *alignment* can run there only if the GPU is re-laid out, i.e. some of its
tenants' instances are destroyed and created again elsewhere, which stops their jobs.

* ``none`` (no mechanism): blocked jobs wait (the engine's behaviour).
* ``mig-repack`` (:class:`~fgdopt.timeline.preemption.MigRepack`, an eviction mechanism beside the others; its re-layout
  search :func:`~fgdopt.mig.slices.relayouts`): for the first pending job, in queue order, that fits no node, is one
  instance smaller than a whole GPU (a sharing job) and has the CPU and memory it needs free on some node, a re-layout
  of ONE GPU of such a node (the unit NVIDIA reconfigures) that holds the job *and every current tenant of the GPU*: a
  choice of new starts for some tenants (the moved ones, the *victims*) and a start for the job such that all instances
  sit at allowed starts on disjoint slices. Tenants whose instance keeps its start are not touched. Exact: for each
  allowed start s of the job's profile, the tenants overlapping s must move; the smallest set of further tenants to move
  is searched by increasing size (a GPU holds at most 7 instances) and each candidate is checked by packing the moved
  instances into the slices left (backtracking over allowed starts). Over every GPU the plan of fewest victims wins;
  ties: least progress lost (milli-GPU seconds, the checkpoint rule), then lowest node, GPU, start. The victims are
  evicted with the checkpoint rule of preemption (:class:`~fgdopt.timeline.preemption.Checkpointing`, every
  ``checkpoint_s`` = 30 min of progress by default; progress since the last checkpoint is lost) and counted as
  *evictions*; the job starts at the planned start; the victims re-queue (keeping their queue place) and restart, with
  the restart cost (Helios: 7 s), wherever the run's policy puts them (the planned layout guarantees them room on the
  same GPU right after the plan). Requiring the re-layout to hold every tenant makes a re-layout a repair of alignment,
  never a preemption for capacity: the GPU had the room. A job started or evicted by a plan at an instant is not a
  victim again at that instant (no ping-pong). Only dynamic nodes are re-laid out. What is not modelled: the seconds a
  reconfiguration itself takes (NVIDIA: a GPU instance is created in about a second), and whole-GPU jobs (a full-GPU
  instance needs an empty GPU; emptying one is preemption or migration).

*Static partition* (:func:`static_cluster`, :func:`mix_configs`). Every GPU is partitioned once into fixed
instances (a per-node configuration, as the NVIDIA GPU Operator applies a mig-parted config per node: the node's
``model`` becomes a static model, :func:`fgdopt.mig.slices.static_model_name`); a job takes a free instance of
exactly its profile, and nothing is ever re-laid out. The layouts are chosen from the workload's profile mix by
:func:`mix_configs`. A job whose profile no node offers is rejected at submission (the engine's rule).

The jobs (:func:`mig_openb_jobs`): openb's stream pods (lifetime at most a day) mapped to the profiles of a MIG model
(:func:`fgdopt.mig.suites.map_to_profiles`), at an offered load in *memory slices*, on :func:`fgdopt.mig.suites.
mig_cluster` nodes. Units: seconds, memory slices, milli-GPU as profile compute codes (what ``gpu_left`` and the
engine's allocation count).
"""

from __future__ import annotations

import os

import numpy as np

from fgdopt.mig.slices import MIG_CONFIGS, MIG_MODELS, static_model_name
from fgdopt.mig.suites import DEFAULT_MIG_MODEL, map_to_profiles, mig_cluster
from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState
from fgdopt.timeline.jobs import JobSet
from fgdopt.timeline.sources import SERVICE_S, trace_lifetimes

LAYOUTS = ("dynamic", "static")
"""How the study operates the MIG GPUs (module docstring)."""

MENU = (*MIG_CONFIGS, "4g-2g-1g")
"""The per-GPU configurations :func:`mix_configs` chooses from (:data:`fgdopt.mig.slices.MIG_CONFIGS` and 4g@0 + 2g@4 +
1g@6, the largest combination with a 4g instance)."""

_EXTRA = {"4g-2g-1g": ((4, 0), (2, 4), (1, 6))}


# -- the static partition ----------------------------------------------------------------------------------------

def config_layout(model: str, config: str) -> tuple[tuple[str, int], ...]:
    """The per-GPU instances ((profile name, start), ...) of ``config`` (:data:`MENU`) on ``model``."""
    base = MIG_MODELS[model]
    spec = _EXTRA.get(config) or MIG_CONFIGS.get(config)
    if spec is None or base.n_slices != 8:
        raise ValueError(f"no MIG config {config!r} for {model}; choose one of {', '.join(MENU)} (8-slice models)")
    by_compute = {p.compute: p for p in base.profiles if p.requestable}
    return tuple((by_compute[c].name, s) for c, s in spec)


def mix_configs(cluster: Cluster, demand: dict[str, float], menu=MENU) -> list[str]:
    """One configuration of ``menu`` per node, chosen from the profile mix ``demand`` (profile name -> any weight,
    e.g. slice-seconds). Greedy: every profile's target is its share of the cluster's slices; nodes, most GPUs first
    (then by index), take the configuration that covers the most of the targets still open (slices of a profile's
    instances, up to its open target; ties: menu order), and the targets shrink by what it supplies."""
    model = cluster.models[0]
    total = sum(demand.values())
    slices = MIG_MODELS[model].n_slices
    open_ = {p: w / total * slices * cluster.total_gpus for p, w in demand.items()}
    sizes = {p.name: p.size for p in MIG_MODELS[model].profiles}
    supply = []
    for c in menu:
        per = {}
        for p, _ in config_layout(model, c):
            per[p] = per.get(p, 0) + sizes[p]
        supply.append(per)
    out = [""] * cluster.n_nodes
    for n in sorted(range(cluster.n_nodes), key=lambda n: (-int(cluster.gpu[n]), n)):
        g = int(cluster.gpu[n])
        gains = [sum(min(max(open_.get(p, 0.0), 0.0), g * v) for p, v in per.items()) for per in supply]
        k = int(np.argmax(gains))
        out[n] = menu[k]
        for p, v in supply[k].items():
            open_[p] = open_.get(p, 0.0) - g * v
    return out


def static_cluster(cluster: Cluster, configs) -> Cluster:
    """``cluster`` with every node statically partitioned: ``configs`` one :data:`MENU` name per node (or one for
    all); each node's model becomes :func:`fgdopt.mig.slices.static_model_name` of its layout."""
    configs = [configs] * cluster.n_nodes if isinstance(configs, str) else list(configs)
    models = [static_model_name(m, config_layout(m, c)) for m, c in zip(cluster.model, configs, strict=True)]
    return Cluster(cluster.cpu_milli, cluster.memory_mib, cluster.gpu, models, names=cluster.names)


def profile_demand(jobs: JobSet, model: str = DEFAULT_MIG_MODEL) -> dict[str, float]:
    """Slice-seconds asked per profile by the measured jobs of finite duration (profile name -> slices x s)."""
    mig = MIG_MODELS[model]
    out: dict[str, float] = {}
    t = jobs.tasks
    for k in np.flatnonzero(jobs.measured & np.isfinite(jobs.duration_s) & (t.num_gpu > 0)):
        p = mig.profile_for(int(t.gpu_milli[k]))
        out[p.name] = out.get(p.name, 0.0) + int(t.num_gpu[k]) * p.size * float(jobs.duration_s[k])
    return out


# -- the jobs ------------------------------------------------------------------------------------------------------

def mig_openb_jobs(n_nodes: int = 32, load: float = 0.9, n_jobs: int = 3000, *, seed: int = 0,
                   model: str = DEFAULT_MIG_MODEL, variant: str = "default", service_s: float = SERVICE_S,
                   warmup: float = 0.1, data_dir: str | os.PathLike | None = None) -> tuple[Cluster, JobSet]:
    """A dynamic MIG cluster of ``n_nodes`` :func:`~fgdopt.mig.suites.mig_cluster` nodes and ``n_jobs`` stream jobs.

    As :func:`fgdopt.timeline.sources.openb_jobs` (Poisson arrivals, a stationary warm start, the measurement window
    after ``warmup``), with three differences: the pods are mapped to ``model``'s profiles; only the stream pods
    (lifetime at most ``service_s``) whose shape fits an empty node of the cluster are drawn (openb's day-long
    services would fill a small cluster; shapes needing more GPUs than any node has would only be rejected); and the
    offered load counts memory slices: rate = load x slices of the cluster / E[slices x lifetime] of a stream row.

    """
    rng = np.random.default_rng(seed)
    cluster = mig_cluster(n_nodes, model)
    tasks, life, _, priority = trace_lifetimes(variant, data_dir, rng)
    tasks = map_to_profiles(tasks, model)
    mig = MIG_MODELS[model]
    size = np.array([n * mig.profile_for(int(m)).size if n else 0
                     for n, m in zip(tasks.num_gpu.tolist(), tasks.gpu_milli.tolist(), strict=True)], dtype=np.float64)
    empty = ClusterState(cluster, tasks)
    fits: dict[tuple, bool] = {}
    ok = np.zeros(len(tasks), dtype=bool)
    for k, t in enumerate(tasks):
        key = (t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli)
        if key not in fits:
            fits[key] = bool(empty.feasible_nodes(t).any())
        ok[k] = fits[key]
    stream = np.flatnonzero((life <= service_s) & ok)
    rate = load * mig.n_slices * cluster.total_gpus / float((size[stream] * life[stream]).mean())
    rows = stream[rng.integers(len(stream), size=n_jobs)]
    submit = np.cumsum(rng.exponential(1.0 / rate, size=n_jobs))
    n_warm = rng.poisson(rate * life[stream].mean())
    drawn = stream[rng.choice(len(stream), size=n_warm, p=life[stream] / life[stream].sum())]
    idx = np.concatenate([drawn, rows])
    names = (*(f"warm:{k}:{tasks.names[r]}" for k, r in enumerate(drawn)),
             *(f"job:{k}:{tasks.names[r]}" for k, r in enumerate(rows)))
    window = (warmup * float(submit[-1]), float(submit[-1]))
    measured = np.zeros(len(idx), dtype=bool)
    measured[n_warm:] = (submit >= window[0]) & (submit <= window[1])
    shapes = tasks.take(idx)
    jobs = JobSet(TaskSet(shapes.cpu_milli, shapes.memory_mib, shapes.num_gpu, shapes.gpu_milli, shapes.gpu_spec,
                          names), np.concatenate([np.zeros(n_warm), submit]),
                  np.concatenate([rng.uniform(0.0, 1.0, n_warm) * life[drawn], life[rows]]), measured, window,
                  priority[idx])
    return cluster, jobs
