"""Synergy-OPT (OSDI'22) as a linear program: a certified upper bound on a round's throughput.

Synergy's ``opt_algo/synergy_opt.py`` (``Solver.SolveFirstLP``) chooses, for the jobs of a round, a distribution
``Y[j]`` over the cells of each job's profile matrix (CPU-core level x memory level per GPU, Synergy's
``Job.cpu_val`` x ``Job.mem_val``) with ``sum Y[j] = 1``, the cluster's CPU cores and memory as the only capacity
(servers are not modelled: it is a relaxation), every job at least its throughput at the GPU-proportional share,
and maximizes the sum of normalized throughputs. :func:`round_bound` builds that LP for one round with two more
configurations per job, the two points Synergy's simulator actually runs a job at (its whole demand at its
speed-up, and ``min(demand, proportional share)`` at speed 1), so that every allocation the simulator makes is a
feasible point and the LP optimum (HiGHS, :func:`formulations.backends.solve_lp_arrays`) bounds the throughput of
every policy's round from above.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fgdopt.synergy.profiles import CPU_LEVELS, Profile
from formulations.backends import solve_lp_arrays

FAIR_CPU, FAIR_MEM_GB = 3.0, 62.5
"""The GPU-proportional share per GPU of Synergy's server (24 cores, 500 GB, 8 GPUs)."""


def configurations(profile: Profile, gpus: int, cpus: float, mem_gb: float, speedup: float) -> np.ndarray:
    """Rows (CPU cores, GB, normalized throughput) a job may run at: every cell of its profile (levels times its
    GPUs), its whole demand at ``speedup``, and ``min(demand, proportional share)`` at 1."""
    levels_c = np.repeat(np.asarray(CPU_LEVELS, dtype=np.float64), profile.tput.shape[1])
    levels_m = np.tile(np.asarray(profile.mem_levels_gb, dtype=np.float64), profile.tput.shape[0])
    cells = np.column_stack([levels_c * gpus, levels_m * gpus, profile.tput.ravel()])
    sim = np.array([[cpus, mem_gb, speedup],
                    [min(cpus, FAIR_CPU * gpus), min(mem_gb, FAIR_MEM_GB * gpus), 1.0]])
    return np.vstack([cells, sim])


def round_bound(configs: Sequence[np.ndarray], cpu_capacity: float, mem_capacity_gb: float,
                time_limit: float = 30.0) -> float:
    """The optimum of Synergy-OPT's LP for one round's jobs (module docstring): the largest sum of normalized
    throughputs (1 = a job at the proportional share) with ``cpu_capacity`` cores and ``mem_capacity_gb`` GB in
    all. ``configs``: per job, :func:`configurations`. Raises RuntimeError unless HiGHS proves optimality."""
    if not configs:
        return 0.0
    sizes = np.array([len(c) for c in configs])
    allc = np.vstack(configs)
    n, cols = len(configs), len(allc)
    first = np.concatenate([[0], np.cumsum(sizes)])
    starts, idx, vals, lo, hi = [0], [], [], [], []
    for j in range(n):                                      # sum of Y[j] = 1
        idx.append(np.arange(first[j], first[j + 1]))
        vals.append(np.ones(sizes[j]))
        lo.append(1.0)
        hi.append(1.0)
        starts.append(starts[-1] + sizes[j])
    for j in range(n):                                      # at least the proportional share's throughput
        idx.append(np.arange(first[j], first[j + 1]))
        vals.append(allc[first[j]:first[j + 1], 2])
        lo.append(1.0)
        hi.append(np.inf)
        starts.append(starts[-1] + sizes[j])
    for r, cap in ((0, cpu_capacity), (1, mem_capacity_gb)):   # the cluster's cores and memory
        idx.append(np.arange(cols))
        vals.append(allc[:, r])
        lo.append(-np.inf)
        hi.append(float(cap))
        starts.append(starts[-1] + cols)
    raw = solve_lp_arrays(allc[:, 2].copy(), np.zeros(cols), np.full(cols, np.inf), np.array(lo), np.array(hi),
                          np.array(starts, dtype=np.int64), np.concatenate(idx).astype(np.int64),
                          np.concatenate(vals), time_limit=time_limit)
    if raw.status != "optimal" or raw.bound is None:
        raise RuntimeError(f"Synergy-OPT LP of {n} jobs: HiGHS ended {raw.status}")
    return float(raw.bound)


def check_rounds(round_log, frame, table, servers: int = 16, cpus_per_server: float = 24.0,
                 mem_per_server_gb: float = 500.0) -> list[dict]:
    """Synergy-OPT's bound for each logged round of a run (:class:`fgdopt.synergy.rounds.Synergy` ``round_log``),
    asserted at least the round's achieved throughput (sum of the speeds its jobs ran at); one record per round:
    ``time_s, jobs, achieved, bound``. ``frame``: the workload's rows; ``table``: the profiles."""
    models, gpus = frame["model"].to_numpy(), frame["gpus"].to_numpy()
    cpus, mem, speedup = (frame[c].to_numpy(dtype=np.float64) for c in ("cpus", "mem_gb", "speedup"))
    out = []
    for now, alloc in round_log:
        jobs = sorted(alloc)
        configs = [configurations(table[models[j]], int(gpus[j]), cpus[j], mem[j], speedup[j]) for j in jobs]
        bound = round_bound(configs, servers * cpus_per_server, servers * mem_per_server_gb)
        achieved = float(sum(alloc[j][0] for j in jobs))
        if achieved > bound * (1 + 1e-9) + 1e-6:
            raise AssertionError(f"round at {now} s: achieved throughput {achieved} above Synergy-OPT's bound {bound}")
        out.append({"time_s": now, "jobs": len(jobs), "achieved": achieved, "bound": bound})
    return out
