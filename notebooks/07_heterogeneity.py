# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 7. Heterogeneous GPUs, fairness and interference
#
# **Learning goal:** see why a scheduler that knows *which GPU type* a job runs fastest on finishes jobs sooner, how
# Gavel (OSDI'20) writes its policies as linear programs over an allocation matrix X, how rounds turn X into a
# schedule on fgdopt's time engine, and what sharing a GPU costs when co-located jobs slow each other.
#
# Until now every GPU was as good as any other. Gavel measured 26 deep-learning job types on three GPU generations
# (V100, P100, K80): a job's **throughput** (training steps per second) depends on the type, and not by the same
# factor for every job. A job has **work** (steps), not a duration; it finishes when its steps are done at the
# throughput of where it ran.

# %%
import math

import numpy as np
import pandas as pd

from fgdopt.hetero import GPU_TYPES, JOB_TYPES, gavel_jobs, load_throughputs
from fgdopt.hetero.jobs import REFERENCE_GPU, gavel_cluster
from fgdopt.hetero.metrics import hetero_stats
from fgdopt.hetero.rounds import ROUND_S, Gavel
from fgdopt.model import TaskSet
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.rounds import RoundLoop
from formulations.hetero import allocate, round_allocator, solve_allocation

table = load_throughputs()          # $FGDOPT_GAVEL, the download cache, or ../shared/data/gavel
table

# %% [markdown]
# ## A. Speed-ups differ by job type
#
# The V100 is faster than the K80 for most jobs, by 2x to nearly 12x. The Recommendation jobs are the exception in
# Gavel's measurements: on a V100 they run at 0.66-1.05 times their K80 speed, and fastest on the P100. That spread is
# what a heterogeneity-aware scheduler exploits: give the V100s to the jobs that gain most from them.

# %%
iso = table.isolated[:, 0, table.gpu_index(GPU_TYPES)]          # steps/s alone on one GPU, (26, 3)
speedup = pd.DataFrame({"V100 / K80": iso[:, 0] / iso[:, 2], "P100 / K80": iso[:, 1] / iso[:, 2]},
                       index=JOB_TYPES).sort_values("V100 / K80")
slower = speedup.index[speedup["V100 / K80"] < 1.1]
assert all(name.startswith("Recommendation") for name in slower) and speedup["V100 / K80"].min() < 0.7
assert 2 < speedup.drop(slower)["V100 / K80"].min() and 11 < speedup["V100 / K80"].max() < 12
speedup.iloc[[0, 1, 2, -3, -2, -1]].round(2)

# %% [markdown]
# ## B. An allocation X by hand
#
# `X[i, j]` is the fraction of time job `i` runs on GPU type `j`. Take one GPU of each of two types, `fast` and
# `slow`, and four jobs: two run 10x slower on `slow` (throughputs 1 and 0.1 steps/s), two hardly care (1 and 0.9).
# **Max-min fairness** (Gavel's `las`) maximizes the smallest *normalized* throughput: a job's throughput under X
# over what an equal share of every type would give it (its `G_j / G` of each type: 0.55 and 0.95 steps/s).
# Heterogeneity-*agnostic* (`las`), every type looks the same: each job gets a quarter of each GPU and exactly half
# of its equal-share throughput (four jobs share two GPUs). *Aware* (`las-aware`), the slow GPU goes to the jobs
# that hardly care, and every job gets more: 0.633 of its equal-share throughput instead of 0.5.

# %%
T = np.array([[1.0, 0.1], [1.0, 0.1], [1.0, 0.9], [1.0, 0.9]])      # steps/s: jobs x types (fast, slow)
for policy in ("las", "las-aware"):
    a = solve_allocation(policy, T, [1, 1, 1, 1], [1, 1], gpu_types=("fast", "slow"))
    normalized = (a.x * T).sum(axis=1) / (T @ [0.5, 0.5])
    print(f"{policy:9s} {a.status}: X = {a.x.round(3).tolist()}\n{'':19s}normalized throughputs {normalized.round(3)}")
    assert np.allclose(normalized, 0.5 if policy == "las" else 0.6333, atol=1e-3)

# %% [markdown]
# By hand for `las-aware`: if the two choosy jobs share the fast GPU equally and nothing else, each gets
# `f / 0.55` with `f` its fast share; the two others split the rest of the fast GPU and all of the slow one. Equal
# normalized throughputs `t` for all four: `2 * 0.55 t` of the fast GPU goes to the choosy jobs, and the others need
# `0.95 t` steps/s each out of `1 - 1.1 t` fast-GPU time and one slow GPU at 0.9:
# `2 * 0.95 t = (1 - 1.1 t) + 0.9`, so `t = 1.9 / 3.0 = 0.633`.
#
# ## C. Rounds realize X on the time engine
#
# X is a fraction of time; a cluster runs whole jobs. Gavel's mechanism cuts time into **rounds** (360 s) and, at
# each, runs the jobs that have received the least of their X so far (`fgdopt.hetero.rounds.Gavel`, a round
# policy written from Gavel's simulator: X is recomputed when jobs arrive or leave, but at most every 1,920 s; the
# engine's round loop, `fgdopt.timeline.rounds.RoundLoop`, keeps the rounds and places its choice). On fgdopt's
# engine a job's `duration_s` is its work at speed 1 and `speed` gives its speed per GPU model; the engine conserves
# every job's work and checks it on every run. The four jobs, each with 2 hours of work at speed 1:

# %%
gpus = {"fast": 1, "slow": 1}
jobs = JobSet(TaskSet([0] * 4, [0] * 4, [1] * 4, [1000] * 4), [0.0] * 4, [7200.0] * 4)
speed = {"fast": T[:, 0], "slow": T[:, 1]}
rows = []
for policy in ("las", "las-aware"):
    mech = RoundLoop(Gavel(round_allocator(policy, speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus),
                           shuffle_seed=None if policy.endswith("aware") else 5), round_s=ROUND_S)
    r = simulate(gavel_cluster(gpus), jobs, "best-fit", "fifo", mechanism=mech, speed=speed, restart_s=lambda g: 0.0)
    rows.append({"policy": policy, **{f"job {i} JCT (h)": r.finish_s[i] / 3600 for i in range(4)},
                 "mean JCT (h)": r.finish_s.mean() / 3600, "rounds": mech.rounds,
                 "type changes": int(r.preemptions.sum())})
pd.DataFrame(rows).round(2)

# %% [markdown]
# ## D. Gavel's experiment, small
#
# `gavel_jobs` reproduces Gavel's synthetic trace draw for draw (Poisson arrivals, Philly durations, its 26 job
# types). Gavel's Figure 8 runs it on 36 V100 + 36 P100 + 36 K80 and measures jobs 4,000 to 5,000; here a third of
# the cluster and jobs 60 to 120 (seconds to run). `python -m experiments.hetero` does the full sweep; paper section
# 4.10 compares it with Gavel's own simulator (average JCTs within 1.5%).
#
# Gavel's simulator runs **whole steps**: in a round a job does `int(throughput x 360)` training steps (or what is
# left), and the time it received, which its priority divides, is those steps' time. `step_rate` (each job's
# steps per second of work: its V100 throughput, the type whose speed is 1) turns that on, as `experiments.hetero`
# does by default; without it a job runs the whole round at its speed.

# %%
gpus = {"v100": 12, "p100": 12, "k80": 12}
trace = gavel_jobs(table, 160, rate_per_hour=1.0, seed=0)
measured = np.zeros(len(trace), dtype=bool)
measured[60:120] = True
jobs, speed = trace.to_jobset(table, tuple(gpus), measured=measured)
steps_per_s = trace.throughputs(table, [REFERENCE_GPU])[:, 0]      # steps per second of work
rows = []
for policy in ("las", "las-aware", "makespan-aware"):
    mech = RoundLoop(Gavel(round_allocator(policy, speed, jobs, gpus), speed, jobs.duration_s, tuple(gpus),
                           shuffle_seed=None if policy.endswith("aware") else 5, step_rate=steps_per_s),
                     round_s=ROUND_S)
    r = simulate(gavel_cluster(gpus), jobs, "best-fit", "fifo", mechanism=mech, speed=speed, frag=False,
                 restart_s=lambda g: 0.0)
    rows.append({"policy": policy, **hetero_stats(r, speed, gpus), "cpu_s": r.cpu_s})
fifo = simulate(gavel_cluster(gpus), jobs, "best-fit", "fifo", speed=speed, frag=False)
rows.append({"policy": "fifo", **hetero_stats(fifo, speed, gpus), "cpu_s": fifo.cpu_s})
small = pd.DataFrame(rows).set_index("policy")
small.assign(mean_jct_h=small.mean_jct_s / 3600)[["mean_jct_h", "mean_rho", "jain_rho", "utilization",
                                                  "preemptions", "cpu_s"]].round(3)

# %% [markdown]
# The aware policy finishes the measured jobs sooner on average than the agnostic one, with the same GPUs: it moves
# each job to the type where it gains most. `rho` is Themis' finish-time fairness (JCT over the time alone on a 1/N
# share of the cluster; below 1 is better than an equal partition).
#
# ## E. A certified bound: the makespan of a static batch
#
# With every job present at time 0, averaging *any* schedule's use of the GPU types over its makespan gives a
# feasible X that finishes every job by then. So the smallest M for which some X finishes every job's steps within M
# (one LP, `makespan-aware`) is a **lower bound** on every schedule's makespan.

# %%
batch = gavel_jobs(table, 40, rate_per_hour=math.inf, seed=1)
bound_s = allocate("makespan-aware", table, batch, gpus).bound
bjobs, bspeed = batch.to_jobset(table, tuple(gpus))
for policy in ("las", "makespan-aware"):
    mech = RoundLoop(Gavel(round_allocator(policy, bspeed, bjobs, gpus), bspeed, bjobs.duration_s, tuple(gpus),
                           shuffle_seed=None if policy.endswith("aware") else 5,
                           step_rate=batch.throughputs(table, [REFERENCE_GPU])[:, 0]), round_s=ROUND_S)
    r = simulate(gavel_cluster(gpus), bjobs, "best-fit", "fifo", mechanism=mech, speed=bspeed, frag=False,
                 restart_s=lambda g: 0.0)
    makespan = float(np.nanmax(r.finish_s))
    assert makespan >= bound_s * (1 - 1e-9)
    print(f"{policy:15s} makespan {makespan / 3600:6.1f} h, certified bound {bound_s / 3600:6.1f} h, "
          f"ratio {makespan / bound_s:.2f}")

# %% [markdown]
# ## F. Interference: what sharing a GPU costs
#
# Gavel also measured every pair of job types *co-located* on one GPU. Packing two jobs per GPU (Gandiva's idea)
# doubles the jobs a cluster holds, but each runs slower: here the factor by which a job runs beside another, on a
# V100 (below 0.5 the pair is better time-sliced, which `interference` takes as the floor).

# %%
inter = trace.interference(table, tuple(gpus))
factor = inter.factor["v100"]
names = ["ResNet-50 (batch size 64)", "Transformer (batch size 64)", "A3C", "CycleGAN"]
idx = [JOB_TYPES.index(n) for n in names]
pd.DataFrame(factor[np.ix_(idx, idx)], index=names, columns=names).round(2)

# %% [markdown]
# On the engine, `simulate(..., interference=...)` re-rates a job whenever a companion joins or leaves its GPU. The
# same small trace, each job asking for half a GPU and packed by `gpu-packing`, against the whole-GPU FIFO run:

# %%
packed_jobs, packed_speed = trace.to_jobset(table, tuple(gpus), measured=measured, gpu_milli=500)
jct_h = {}
for name, inter_ in (("packed, no slowdown", None), ("packed, Gavel's slowdowns", inter)):
    r = simulate(gavel_cluster(gpus), packed_jobs, "gpu-packing", "backfill", speed=packed_speed, frag=False,
                 interference=inter_)
    s = hetero_stats(r, packed_speed, gpus)
    jct_h[name] = s["mean_jct_s"] / 3600
    print(f"{name:26s} mean JCT {jct_h[name]:6.1f} h, utilization {s['utilization']:.2f}")
    if inter_ is None:
        assert (r.start_s == packed_jobs.submit_s)[measured].all()        # no measured job waits for a GPU
jct_h["whole GPUs, FIFO"] = small.loc["fifo", "mean_jct_s"] / 3600
print(f"{'whole GPUs, FIFO':26s} mean JCT {jct_h['whole GPUs, FIFO']:6.1f} h")
assert 1.25 < jct_h["packed, Gavel's slowdowns"] / jct_h["packed, no slowdown"] < 1.4
assert jct_h["whole GPUs, FIFO"] < jct_h["packed, no slowdown"]

# %% [markdown]
# "No slowdown" is what capacity-only accounting (fragmentation, allocated GPUs) assumes; with Gavel's measured pairs
# the same packed jobs take about a third longer. Packing pays only when jobs queue for GPUs: at this light load no
# measured job waits, so even without slowdown packing gains nothing over whole GPUs, and the mean JCTs differ by
# where the jobs land. Neither packing nor FIFO here knows GPU types, so both leave jobs on K80s that a
# heterogeneity-aware scheduler would move. Which jobs meet on a GPU matters as much as how many: a placement that
# knows the pairs can choose companions that slow each other least.
