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
# # 9. Jobs whose speed depends on what they hold: CPU cores (Synergy) and GPUs and batch size (Pollux)
#
# **Learning goal:** see that a GPU job's speed is not a property of the job alone: it depends on the CPU cores it
# gets (Synergy, OSDI'22, measured it for a dozen models) and on how many GPUs it runs on and with what batch size
# (Pollux, OSDI'21: goodput = throughput x statistical efficiency); and measure, on an openb-like cluster on
# fgdopt's time engine, what lending a node's idle cores by a job's profile changes in allocation, fragmentation
# F(M) and job completion time (JCT).
#
# Until now a job ran at one speed wherever it ran. Here the **mechanism** of the time engine re-rates running jobs
# whenever what they hold changes; the engine keeps the progress made at the old speed (its `check` verifies that
# every finished job did exactly its work).

# %%
import numpy as np
import pandas as pd

from fgdopt.cpu_aware import RULES, CpuAware, CpuProfiles, openb_cpu_profiles
from fgdopt.elastic.goodput import GoodputModel, PerfParams
from fgdopt.model import Cluster, TaskSet
from fgdopt.suites import random_instance
from fgdopt.synergy.profiles import CPU_LEVELS, load_profiles
from fgdopt.timeline import JobSet, run_stats, simulate

table = load_profiles()          # Synergy's 1bb2bed6 profiles, the committed checksummed copy
pd.DataFrame({"ideal cores per GPU": [table[m].cpus for m in table.models],
              "speed-up there": [table[m].speedup for m in table.models]}, index=list(table.models))

# %% [markdown]
# ## A. A profile: throughput against CPU cores per GPU
#
# Each row is normalised to the model's throughput at Synergy's GPU-proportional share (3 cores and 62.5 GB per
# GPU on its 8-GPU, 24-core servers). Image models (ResNet-18, AlexNet, ShuffleNet) decode and augment images on the
# CPU: at the proportional memory share they run 2-2.4x faster with 9 cores per GPU (alexnet and shufflenet reach
# 2.9x with more memory too). Language models hardly care.

# %%
curves = pd.DataFrame({m: [table[m].normalized_rate(c, 62.5) for c in CPU_LEVELS] for m in table.models},
                      index=pd.Index(CPU_LEVELS, name="cores per GPU"))
at9 = curves.loc[9]
assert at9[["res18", "alexnet", "shufflenet"]].between(2, 2.4).all() and (at9[["gnmt", "bert"]] == 1).all()
assert all(round(table[m].speedup, 1) == 2.9 for m in ("alexnet", "shufflenet"))     # with more memory too
curves[["res18", "alexnet", "shufflenet", "res50", "gnmt", "bert"]]

# %% [markdown]
# ## B. Lending a node's idle cores, by hand
#
# fgdopt keeps every job's *request* as the one feasibility rule reserves it (what placement and F(M) see). The
# mechanism `CpuAware` lends the cores nobody requested to the GPU jobs on the node, by one of three rules:
# `request` (nothing lent), `proportional` (up to the job's GPU share of the node's cores, Synergy's `+fair`) and
# `synergy` (up to what its profile benefits from, a core at a time to the biggest speed gain).
#
# One node of 8 cores and 2 GPUs; job A (speed 1, 2, 3 at 1, 2, 3 cores, flat beyond; 300 s of work) and job B (no
# use for CPU; 100 s), each requesting 1 core. `proportional` gives both their share, 4 cores (6 lent); `synergy`
# gives A its 3 (2 lent) and B nothing: A ends at 100 s either way, with a third of the cores lent.

# %%
cluster = Cluster([8000], [100_000], [2], ["V100"])
jobs = JobSet(TaskSet([1000, 1000], [1000, 1000], [1, 1], [1000, 1000]), [0.0, 0.0], [300.0, 100.0])
two = CpuProfiles([0, 1], ("hungry", "flat"), [[1, 2, 3, 3, 3, 3, 3, 3, 3], [1] * 9], [3.0, 1.0])
rows = []
for rule in RULES:
    mech = CpuAware(two, rule, cluster)
    result = simulate(cluster, jobs, "best-fit", "fifo", mechanism=mech)
    rows.append({"rule": rule, "A ends (s)": result.finish_s[0], "B ends (s)": result.finish_s[1],
                 "cores lent (core-s)": mech.lent_core_s, "A's cores": mech.cores[0], "B's cores": mech.cores[1]})
lent = pd.DataFrame(rows).set_index("rule")
assert (lent["A ends (s)"].tolist(), lent["cores lent (core-s)"].tolist()) == ([300, 100, 100], [0, 600, 200])
assert (lent.loc["proportional", ["A's cores", "B's cores"]] == 4).all() and lent.loc["synergy", "A's cores"] == 3
lent

# %% [markdown]
# ## C. On an openb-like cluster
#
# A small slice: 24 openb nodes (their CPU:GPU ratios, from 4 to 128 cores per GPU) and openb task shapes
# (`fgdopt.suites.random_instance`, committed data), arriving over 4 hours with exponential lifetimes (mean 1 h,
# an assumption: the committed data carries no lifetimes). Every GPU job is one of Synergy's models, drawn
# uniformly (seeded). openb pods already request many cores (median 12 per GPU, above most models' ideal), so the
# question is how much idle CPU each rule spends for what gain. `python -m experiments.cpu_aware` runs the same on
# the full openb timeline.

# %%
inst = random_instance(24, seed=3, ratio=1.2)
rng = np.random.default_rng(0)
n = len(inst.tasks)
stream = JobSet(inst.tasks, np.sort(rng.uniform(0, 4 * 3600, n)), rng.exponential(3600, n))
prof = openb_cpu_profiles(inst.tasks, table, seed=0)
cores = inst.cluster.cpu_milli.sum() / 1000
rows = []
for rule in RULES:
    mech = CpuAware(prof, rule, inst.cluster)
    result = simulate(inst.cluster, stream, "fgd", "backfill", seed=0, mechanism=mech)
    stats = run_stats(result)
    rows.append({"rule": rule, "mean JCT (h)": stats["mean_jct_s"] / 3600,
                 "allocated GPUs (% time avg)": stats["alloc_time_avg_pct"],
                 "F(M) (% of capacity)": 100 * stats["frag_time_avg"] / inst.cluster.gpu_capacity_milli,
                 "cores lent (% of cluster, time avg)": 100 * mech.lent_core_s
                 / (result.series["time_s"].iloc[-1] * cores)})
pd.DataFrame(rows).set_index("rule").round(3)

# %% [markdown]
# ## D. Pollux: goodput of two hand-made applications
#
# Pollux picks each job's GPU count and batch size. Its model: throughput (samples/s) from a step-time model
# (compute + network, `PerfParams`), times statistical efficiency, which falls as the batch grows unless the
# gradient is noisy (large variance `var` over its square `sqr`). Two hand-made applications: `wide` (cheap
# network, noisy gradient: it scales) and `narrow` (costly all-reduce, clean gradient: it does not).

# %%
wide = GoodputModel(PerfParams(0.02, 0.001, 0.05, 0.01, 0.005, 0.001, 2.0), grad=(1.0, 50.0), init_batch_size=64)
narrow = GoodputModel(PerfParams(0.02, 0.001, 0.5, 0.1, 0.2, 0.05, 2.0), grad=(1.0, 1.0), init_batch_size=64)
gpus = np.arange(1, 5)
best = {name: np.array(m.optimize(np.ones(4), gpus, 1024, (16, 256))[0])
        for name, m in (("wide", wide), ("narrow", narrow))}
speedup = pd.DataFrame({name: g / g[0] for name, g in best.items()}, index=pd.Index(gpus, name="GPUs (1 node)"))
speedup.round(2)

# %% [markdown]
# Four GPUs to split between them: Pollux's objective (here the plain sum of speed-ups; Pollux uses a generalised
# mean) is best where the GPUs go to the application that turns them into goodput.

# %%
splits = pd.DataFrame([{"wide GPUs": k, "narrow GPUs": 4 - k,
                        "sum of speed-ups": speedup["wide"].get(k, 0.0) + speedup["narrow"].get(4 - k, 0.0)}
                       for k in range(1, 4)])
assert splits.loc[splits["sum of speed-ups"].idxmax(), "wide GPUs"] == 3
splits.round(3)
