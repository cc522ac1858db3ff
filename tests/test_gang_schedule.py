"""The exact schedule model (CP-SAT) with gangs against brute force on tiny instances, and a hand-worked case."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fgdopt.model import Cluster, TaskSet
from fgdopt.state import ClusterState
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import objective_value, recorded_run, rejected_jobs, validate_schedule

pytest.importorskip("ortools")
from formulations.schedule.exact import solve_exact  # noqa: E402

CLUSTER = Cluster([4000, 4000], [1024, 1024], [2, 2], ["A", "A"])


def brute_force_mean_jct(cluster: Cluster, jobs: JobSet) -> float:
    """The least mean JCT over every schedule with integer starts (the model's unit is 1 s here, and the
    left-shift argument puts an optimal schedule's starts on submissions and finishes, all integers), every job's
    parts spread over the nodes in every way (counts per node). Jobs are whole-GPU or CPU-only, so a node's load
    at every second (CPU, memory, GPUs in use) within its capacity is feasibility: jobs holding whole GPUs over
    intervals can always be given fixed GPU ids when their count never exceeds the node's (interval graphs are
    perfect: hand out the freed GPUs in start order)."""
    tasks = jobs.tasks
    rows = np.flatnonzero(~rejected_jobs(cluster, jobs))
    r = jobs.submit_s.astype(int)
    p = jobs.duration_s.astype(int)
    horizon = int(r[rows].max() + p[rows].sum()) + 1
    cap = np.stack([cluster.cpu_milli, cluster.memory_mib, cluster.gpu], axis=1)          # (nodes, 3)
    empty = ClusterState(cluster, tasks)
    options = []
    for j in rows.tolist():
        most = empty.part_counts(tasks[j])
        spreads = [c for c in itertools.product(*(range(int(m) + 1) for m in most)) if sum(c) == tasks.workers[j]]
        need = np.array([tasks.cpu_milli[j], tasks.memory_mib[j], tasks.num_gpu[j]])
        options.append([np.outer(c, need) for c in spreads])                               # (nodes, 3) each
    best = math.inf
    load = np.zeros((horizon + int(p.max()), cluster.n_nodes, 3), dtype=np.int64)

    def search(k: int, total: int) -> None:
        nonlocal best
        if total >= best:
            return
        if k == len(rows):
            best = total
            return
        j = int(rows[k])
        for s in range(int(r[j]), horizon):
            if total + s + p[j] - r[j] >= best:
                break
            for use in options[k]:
                window = load[s:s + p[j]]
                if (window + use <= cap).all():
                    window += use
                    search(k + 1, total + s + p[j] - r[j])
                    window -= use

    search(0, 0)
    return best / len(rows)


def _jobs(rows, workers):
    """rows: (cpu_milli, num_gpu, submit_s, duration_s), whole GPUs."""
    cpu, num, submit, duration = zip(*rows, strict=True)
    tasks = TaskSet(cpu, [0] * len(rows), num, [1000 if g else 0 for g in num], workers=workers)
    return JobSet(tasks, submit, duration)


def test_hand_worked_gang_schedule():
    # 2 nodes x 2 GPUs. A (1 GPU, 0-2 s). G: 2 parts of 2 GPUs (both nodes whole), submitted at 0, 1 s.
    # Either A first (A 0-2, G 2-3: JCTs 2 and 3, mean 2.5) or G first (G 0-1, A 1-3: JCTs 1 and 3, mean 2).
    jobs = _jobs([(1000, 1, 0, 2), (1000, 2, 0, 1)], workers=[1, 2])
    run = solve_exact(CLUSTER, jobs, time_limit=20, threads=1)
    assert run.status == "optimal"
    validate_schedule(CLUSTER, jobs, run.schedule)
    assert objective_value(jobs, run.schedule, "mean-jct") == 2.0 == brute_force_mean_jct(CLUSTER, jobs)
    assert run.schedule.start_s.tolist() == [1.0, 0.0]
    assert sorted(n for n, _ in run.schedule.parts[1]) == [0, 1]


@pytest.mark.parametrize("seed", range(12))
def test_exact_model_matches_brute_force_on_tiny_gang_instances(seed):
    rng = np.random.default_rng(seed)
    n = 4                                                # 10 of the 12 seeds contend (optimum > mean duration)
    rows = [(int(rng.choice([1000, 2000])), int(rng.choice([0, 1, 1, 2])), int(rng.integers(0, 2)),
             int(rng.integers(1, 4))) for _ in range(n)]
    workers = rng.choice([1, 2, 2, 3], n).tolist()
    jobs = _jobs(rows, workers)
    run = solve_exact(CLUSTER, jobs, time_limit=30, threads=1, seed=0)
    assert run.status == "optimal"
    validate_schedule(CLUSTER, jobs, run.schedule)                   # every gang's parts replayed by the one rule
    value = objective_value(jobs, run.schedule, "mean-jct")
    assert value == pytest.approx(brute_force_mean_jct(CLUSTER, jobs), abs=1e-9)
    # an engine run is a schedule too: the exact value is at most its
    _, engine = recorded_run(CLUSTER, jobs, "best-fit", "backfill")
    validate_schedule(CLUSTER, jobs, engine)
    assert value <= objective_value(jobs, engine, "mean-jct") + 1e-9


# -- the static exact model (maximize allocated milli-GPU) -------------------------------------------------------

def brute_force_allocation(cluster: Cluster, tasks: TaskSet) -> int:
    """The most milli-GPU any feasible placement allocates: every task unplaced or spread over the nodes in every
    way (parts per node), whole-GPU and CPU-only tasks only, so each node's CPU, memory and GPU count within its
    capacity is feasibility (whole GPUs are interchangeable)."""
    cap = np.stack([cluster.cpu_milli, cluster.memory_mib, cluster.gpu], axis=1)
    empty = ClusterState(cluster, tasks)
    options = []
    for t in tasks:
        most = empty.part_counts(t)
        spreads = [c for c in itertools.product(*(range(int(m) + 1) for m in most)) if sum(c) == t.workers]
        options.append([np.zeros_like(cap)] + [np.outer(c, [t.cpu_milli, t.memory_mib, t.num_gpu]) for c in spreads])
    best = 0
    for pick in itertools.product(*(range(len(o)) for o in options)):
        use = sum(options[i][k] for i, k in enumerate(pick))
        if (use <= cap).all():
            best = max(best, sum(int(tasks.gpu_demand[i]) for i, k in enumerate(pick) if k))
    return best


@pytest.mark.parametrize("seed", range(10))
def test_static_exact_model_with_gangs_matches_brute_force(seed):
    from fgdopt.instance import Instance
    from fgdopt.state import validate
    from formulations.exact import run_exact
    rng = np.random.default_rng(100 + seed)
    cluster = Cluster([8000, 8000, 6000], [4096] * 3, [4, 4, 2], ["A", "A", "A"])
    n = 5
    tasks = TaskSet(rng.choice([1000, 2000, 3000], n), rng.choice([0, 1024], n), rng.choice([1, 2, 4], n),
                    [1000] * n, workers=rng.choice([1, 2, 3], n))
    sol = run_exact(Instance("gangs", cluster, tasks), "milp-highs", "highs", time_limit=30)
    assert sol.status == "optimal"
    validate(cluster, tasks, sol.placement)                          # every gang whole (place_parts) or absent
    assert sol.objective == sol.bound == brute_force_allocation(cluster, tasks)


def test_static_exact_model_sharing_gang_on_one_gpu():
    # one node, one GPU: a gang of 3 parts of 300 milli-GPU shares it (900), and a 200 task fits beside it
    # (1100 > 1000: it cannot); a gang of 2 x 600 cannot fit at all. Optimum 900 + 0 = 900, beside a lone 100 -> 1000.
    from fgdopt.instance import Instance
    from fgdopt.state import validate
    from formulations.exact import run_exact
    cluster = Cluster([8000], [1024], [1], ["A"])
    tasks = TaskSet([100] * 4, [0] * 4, [1] * 4, [300, 200, 600, 100], workers=[3, 1, 2, 1])
    sol = run_exact(Instance("sharing-gang", cluster, tasks), "milp-highs", "highs", time_limit=30)
    assert sol.status == "optimal" and sol.objective == 1000
    validate(cluster, tasks, sol.placement)
    assert [g for _, g in sol.placement.spans[0]] == [(0,), (0,), (0,)] and sol.placement.node[2] == -1


def test_starts_csv_gives_every_part_of_a_gang(tmp_path):
    """``starts.csv`` gave a gang's first part only (its node and GPUs), so a gang of 2 x 2 GPUs on two 2-GPU nodes
    read as 2 GPUs of node 0; every part is written as NODE:ID+ID. The gang (2 x 2 GPUs, 10 s) and a 1-GPU job of
    5 s, both at 0: the gang holds the cluster, so the small job runs first or after (the optimum: first, 0-5)."""
    import pandas as pd

    from experiments.schedule import main

    work, nodes = tmp_path / "w.csv", tmp_path / "c.json"
    work.write_text("name,submit_s,duration_s,num_gpu,cpu_milli,memory_mib,workers\ng,0,10,2,1000,1024,2\n"
                    "s,0,5,1,1000,1024,1\n")
    nodes.write_text('{"nodes": [' + ", ".join(['{"cpu_milli": 8000, "memory_mib": 8192, "gpu": 2, "model": "T4"}']
                                               * 2) + "]}")
    assert main(["--workload", str(work), "--cluster", str(nodes), "--objective", "mean-jct", "--policies",
                 "best-fit", "--queue", "fifo", "--time-limit", "10", "--output", str(tmp_path / "o")]) == 0
    starts = pd.read_csv(tmp_path / "o" / "starts.csv", dtype={"gpus": str}).set_index(["method", "job"])
    assert starts.loc[("optimum", "g"), ["start_s", "node", "gpus"]].tolist() == [5.0, 0, "0:0+1 1:0+1"]
    small = starts.loc[("optimum", "s")]
    assert small["start_s"] == 0.0 and small["gpus"] in ("0", "1")                  # a plain job: its ids only
    assert starts.loc[("best-fit/fifo", "g"), "gpus"] == "0:0+1 1:0+1"


@pytest.mark.parametrize("workers", [[3, 1, 1], [2, 1, 1]])
def test_free_repacking_leaves_gangs_where_they_are(workers):
    """Ceiling (c)'s free re-packing beside a gang: it neither clears a node for a gang nor moves one (a gang is
    placed in parts, by ``place_parts``; the rule re-places single parts). It crashed on the gang (found by the time
    sweep: ``--scale`` on any workload with gangs); now every job finishes and the gang never migrates."""
    from fgdopt.timeline import simulate
    from fgdopt.timeline.jobtable import FINISHED
    from fgdopt.timeline.preemption import FreeRepack

    cluster = Cluster([32000], [65536], [4], ["A100"])
    tasks = TaskSet([8000, 500, 500], [4096, 1024, 1024], [1, 1, 1], [700, 700, 500], ["", "A100|T4", ""],
                    workers=workers)
    jobs = JobSet(tasks, [0.0, 0.0, 0.0], [10.0, 30.0, 100.0])
    r = simulate(cluster, jobs, "fgd", "backfill", seed=0, frag=False, mechanism=FreeRepack())
    assert (r.status == FINISHED).all() and r.migrations[0] == 0


@pytest.mark.parametrize("parts", [
    (((0, (0,)), (1, (0,))),),                       # one list for two jobs
    (((1, (0,)), (0, (0,))), ()),                    # the gang's first part is not its node and GPUs
])
def test_a_schedule_refuses_parts_that_disagree_with_its_jobs(parts):
    from fgdopt.timeline.schedule import Schedule

    with pytest.raises(ValueError, match="one list per job, its first part the job's node and GPUs"):
        Schedule([0.0, 0.0], [0, 1], [(0,), (0,)], parts)
    assert Schedule([0.0, 0.0], [0, 1], [(0,), (0,)], (((0, (0,)), (1, (0,))), ())).parts[1] == ()
