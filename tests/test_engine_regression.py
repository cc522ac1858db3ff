"""The time engine's regression oracle: bit-for-bit digests of representative runs, stored from the engine as it was
before it was split into objects (commit c3c6cfc), compared with the engine of today.

Every case runs :func:`fgdopt.timeline.simulate` on a small seeded job stream (synthetic, or openb when the trace is
there) and hashes, byte for byte, every per-job array of the :class:`~fgdopt.timeline.TimelineResult` (status,
start, finish, node and every counter), its series, its snapshots (time, jobs, running count, placement), its event
and instant counts, names and the final placement. The cases cover every queue discipline, every mechanism (with
checkpoint costs, Tiresias' starvation knob, migration, MIG re-layout and the static MIG partition), speeds by GPU
model, co-location interference (with the interference-aware policy), Gavel's rounds, ``until_s`` and snapshots.

Regenerate the stored digests only from an engine known to be right (``python tests/test_engine_regression.py
--write``, run from the repository root with ``PYTHONPATH=.``); without ``--write`` the script compares every case,
the test's and the longer openb runs the test leaves out, and prints the ones that differ.
The one import that moved with the refactor (the ``Interference`` value) is looked up at either place, so that the
same file runs on the old and the new tree.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.mechanisms import make_mechanism
from fgdopt.timeline.preemption import TiresiasLAS

try:
    from fgdopt.interference import Interference
except ImportError:                                       # the tree before the refactor
    from fgdopt.timeline.interference import Interference

MECHANISMS = ("none", "priority", "transparent", "affinode", "tiresias", "migrate")
SNAPS = (50.0, 200.0, 399.0)
"""The snapshot instants of the synthetic runs, s."""
DIGESTS = Path(__file__).with_name("engine_digests.json")

ARRAYS = ("status", "start_s", "finish_s", "node", "preemptions", "suspensions", "lost_s", "overhead_s", "thrashed",
          "migrations", "run_s", "busy_s", "work_s", "evictions")


def digest(r) -> str:
    """sha256 over everything a run reports (module docstring), bytes as computed."""
    h = hashlib.sha256()
    for name in ARRAYS:
        a = np.ascontiguousarray(getattr(r, name))
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    h.update(",".join(r.series.columns).encode())
    for col in r.series.columns:
        h.update(np.ascontiguousarray(r.series[col].to_numpy(dtype=np.float64)).tobytes())
    for s in r.snapshots:
        h.update(f"{s.time_s!r}:{s.running}:{len(s.tasks)}".encode())
        h.update(np.ascontiguousarray(s.jobs, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(s.placement.node, dtype=np.int64).tobytes())
        h.update(repr((s.placement.gpus, s.placement.starts)).encode())
    h.update(f"{r.events}:{r.instants}:{r.policy}:{r.queue}:{r.mechanism}".encode())
    h.update(np.ascontiguousarray(r.state.node_of, dtype=np.int64).tobytes())
    final = r.state.placement()
    h.update(repr((final.gpus, final.starts)).encode())
    return h.hexdigest()


def mixed(seed: int, n: int = 160, mean_s: float = 60.0, span_s: float = 400.0, forever: bool = True):
    """A small mixed cluster (three GPU models) and a random stream: CPU-only, sharing and whole-GPU jobs, two
    priorities, two jobs with the GPU spec of one model, a few infinite and zero durations."""
    rng = np.random.default_rng(seed)
    k = 10
    cluster = Cluster(rng.choice([16000, 32000, 64000], k), np.full(k, 262144), rng.choice([1, 2, 4, 8], k),
                      rng.choice(["V100", "T4", "P100"], k))
    kind = rng.choice(3, n, p=[0.15, 0.6, 0.25])
    num_gpu = np.where(kind == 0, 0, np.where(kind == 1, 1, rng.choice([1, 2, 4], n)))
    gpu_milli = np.where(kind == 0, 0, np.where(kind == 1, rng.choice([100, 250, 300, 500, 700], n), 1000))
    spec = ["" for _ in range(n)]
    for j in np.flatnonzero(num_gpu > 0)[:2]:
        spec[j] = "T4"
    tasks = TaskSet(rng.choice([1000, 2000, 4000], n), rng.choice([1024, 4096], n), num_gpu, gpu_milli, spec)
    duration = rng.exponential(mean_s, n).round() + 1
    duration[rng.integers(n)] = 0.0
    duration[rng.integers(n)] = np.inf if forever else 1e4
    jobs = JobSet(tasks, np.sort(rng.uniform(0, span_s, n).round()), duration, priority=rng.choice([0, 1], n))
    return cluster, jobs


def interference_of(cluster: Cluster, n: int, seed: int):
    rng = np.random.default_rng(seed + 100)
    c = 5
    return Interference(rng.integers(c, size=n), {"V100": rng.uniform(0.5, 1.0, (c, c))},
                        default=rng.uniform(0.5, 1.0, (c, c)))


def speeds_of(cluster: Cluster, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 200)
    return {m: rng.uniform(0.25, 1.5, n) for m in sorted(set(cluster.model.tolist()))}


G1, G2, G3, G4, G7 = 142, 285, 428, 571, 1000                 # A100-40GB compute codes of 1g, 2g, 3g, 4g, 7g


def mig_run(seed: int):
    rng = np.random.default_rng(seed)
    cluster = Cluster([64000] * 3, [1 << 20] * 3, [2, 1, 2], ["A100-40GB"] * 3)
    n = 60
    milli = rng.choice([0, G1, G1, G1, G2, G3, G4, G7], size=n)
    tasks = TaskSet([4000] * n, [1024] * n, (milli > 0).astype(int), milli)
    jobs = JobSet(tasks, np.round(rng.uniform(0, 600, n)), np.round(rng.exponential(300, n)) + 1,
                  priority=rng.choice([0, 1], n))
    return cluster, jobs


def static(cluster: Cluster, configs: list[str]) -> Cluster:
    from fgdopt.mig.slices import static_model_name

    models = [static_model_name(m, c) for m, c in zip(cluster.model, configs, strict=True)]
    return Cluster(cluster.cpu_milli, cluster.memory_mib, cluster.gpu, models, names=cluster.names)


def gavel(policy: str, seed: int, packed: bool = False):
    from fgdopt.hetero.jobs import gavel_cluster
    from fgdopt.hetero.rounds import ROUND_S, Gavel
    from fgdopt.timeline.rounds import RoundLoop
    from formulations.hetero import round_allocator

    rng = np.random.default_rng(seed)
    gpus = {"fast": 3, "slow": 2}
    n = 14
    tasks = TaskSet([0] * n, [0] * n, rng.choice([1, 1, 1, 2], n), [1000] * n)
    jobs = JobSet(tasks, np.sort(rng.uniform(0, 3000, n).round()), rng.uniform(300, 4000, n).round())
    speed = {"fast": rng.uniform(1.0, 3.0, n), "slow": np.ones(n)}
    mech = RoundLoop(Gavel(round_allocator(policy, speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus),
                           shuffle_seed=None if policy.endswith("-aware") else seed + 5), round_s=ROUND_S)
    return simulate(gavel_cluster(gpus, 2), jobs, "best-fit", "fifo", mechanism=mech, speed=speed,
                    snapshots=(500.0, 2500.0))


def synthetic_cases() -> dict[str, Callable]:
    cases: dict[str, Callable] = {}
    for seed in (0, 1):
        c, j = mixed(seed)
        for queue in ("fifo", "backfill", "sjf", "smallest", "none"):
            for policy in ("fgd", "best-fit"):
                cases[f"mixed{seed}-{policy}-{queue}"] = (
                    lambda c=c, j=j, p=policy, q=queue: simulate(c, j, p, q, seed=3, snapshots=SNAPS))
        for mech in (*MECHANISMS[1:], "mig-repack"):
            for queue in ("backfill", "fifo"):
                cases[f"mixed{seed}-{mech}-{queue}"] = (
                    lambda c=c, j=j, m=mech, q=queue: simulate(c, j, "fgd", q, seed=3, mechanism=m, snapshots=SNAPS))
        cases[f"mixed{seed}-priority-ckptcost"] = lambda s=seed: simulate(
            *mixed(s, forever=False), "best-fit", "backfill", mechanism=make_mechanism("priority", checkpoint_s=40.0,
                                                                    checkpoint_cost_s=3.0))
        cases[f"mixed{seed}-tiresias-starve"] = lambda c=c, j=j: simulate(
            c, j, "fgd", "backfill", mechanism=TiresiasLAS(thresholds=(200.0, 2000.0), starvation=1.5))
        cases[f"mixed{seed}-until-nofrag"] = lambda c=c, j=j: simulate(
            c, j, "gpu-packing", "backfill", until_s=250.0, frag=False, snapshots=(100.0, 300.0))
        cases[f"mixed{seed}-speed"] = lambda c=c, j=j, s=seed: simulate(
            c, j, "fgd", "backfill", speed=speeds_of(c, len(j), s), mechanism="transparent")
        c, j = mixed(seed, forever=False)             # an infinite run re-rated by interference has no finish
        cases[f"mixed{seed}-interference"] = lambda c=c, j=j, s=seed: simulate(
            c, j, "fgd", "backfill", interference=interference_of(c, len(j), s), snapshots=SNAPS)
        cases[f"mixed{seed}-interference-speed-tiresias"] = lambda c=c, j=j, s=seed: simulate(
            c, j, "best-fit", "fifo", interference=interference_of(c, len(j), s), speed=speeds_of(c, len(j), s),
            mechanism="tiresias")
        cases[f"mixed{seed}-interference-aware"] = lambda c=c, j=j, s=seed: _aware(c, j, s)
        cases[f"mixed{seed}-overload-priority"] = lambda s=seed: simulate(
            *mixed(s + 10, n=220, mean_s=150.0, span_s=200.0), "fgd", "backfill", mechanism="priority")
        cases[f"mixed{seed}-overload-affinode"] = lambda s=seed: simulate(
            *mixed(s + 10, n=220, mean_s=150.0, span_s=200.0), "best-fit", "sjf", mechanism="affinode")
    for seed in (0, 1, 2):
        c, j = mig_run(seed)
        for policy in ("mig-fgd", "mig-first-fit", "mig-best-fit", "mig-greedy"):
            for mech in ("none", "mig-repack"):
                cases[f"mig{seed}-{policy}-{mech}"] = lambda c=c, j=j, p=policy, m=mech, s=seed: simulate(
                    c, j, p, "backfill", seed=s, mechanism=m, snapshots=(100.0, 400.0))
        cases[f"mig{seed}-static"] = lambda c=c, j=j: simulate(
            static(c, ["all-balanced", "all-7g", "all-1g"]), j, "mig-first-fit", "fifo", snapshots=(100.0,))
    for policy in ("las", "las-aware", "ftf-aware"):
        cases[f"gavel-{policy}"] = lambda p=policy: gavel(p, 4)
    return cases


def _aware(c, j, s):
    from fgdopt.frag import Workload
    from fgdopt.policies.interference import interference_fgd

    inter = interference_of(c, len(j), s)
    policy = interference_fgd(inter, 1.0)(seed=s, workload=Workload.from_tasks(j.tasks), ranks=None,
                                          gpu_choice="lowest-index", topology=None)
    return simulate(c, j, policy, "backfill", interference=inter)


def openb_cases(data_dir, full: bool = False) -> dict[str, Callable]:
    """openb at load 1.1 (the cluster and its warm start, then 100 stream jobs up to the last submission); ``full``:
    400 stream jobs to the end and every mechanism (a minute of CPU: the script's ``--full``, not the test)."""
    from fgdopt.timeline import openb_jobs

    n, mechs = (400, MECHANISMS) if full else (100, ("priority", "affinode", "migrate"))
    cluster, jobs = openb_jobs("default", 1.1, n, seed=7, data_dir=data_dir)
    until = math.inf if full else float(jobs.submit_s.max())
    cases: dict[str, Callable] = {}
    for mech in mechs:
        cases[f"openb{n}-{mech}"] = lambda m=mech: simulate(cluster, jobs, "fgd", "backfill", seed=7, mechanism=m,
                                                            snapshots=(20.0,), until_s=until)
    cases[f"openb{n}-fifo-best-fit"] = lambda: simulate(cluster, jobs, "best-fit", "fifo", seed=7, until_s=until)
    return cases


def all_digests(data_dir=None) -> dict[str, str]:
    cases = synthetic_cases()
    if data_dir is not None:
        cases.update(openb_cases(data_dir))
        cases.update(openb_cases(data_dir, full=True))
    return {name: digest(run()) for name, run in cases.items()}


def _stored() -> dict[str, str]:
    return json.loads(DIGESTS.read_text())


@pytest.mark.parametrize("name", sorted(synthetic_cases()))
def test_synthetic_runs_are_bit_for_bit_those_stored(name):
    assert digest(synthetic_cases()[name]()) == _stored()[name]


def test_openb_runs_are_bit_for_bit_those_stored(openb_dir):
    stored = _stored()
    got = {name: digest(run()) for name, run in openb_cases(openb_dir).items()}
    assert got == {name: stored[name] for name in got}


if __name__ == "__main__":
    from fgdopt.traces import find_openb

    found = all_digests(find_openb())
    if "--write" in sys.argv:
        DIGESTS.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"{len(found)} digests written to {DIGESTS}")
    else:
        stored = _stored()
        bad = sorted(k for k in found if stored.get(k) != found[k])
        print(f"{len(found) - len(bad)} of {len(found)} cases identical; differ: {bad}")
        sys.exit(1 if bad else 0)
