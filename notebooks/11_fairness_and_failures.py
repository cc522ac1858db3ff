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
# # 11. Fair shares and failures over time
#
# **Learning goal:** see two things a real GPU cluster does to jobs that a placement study leaves out: several
# users share it, each owed a fair share of GPU time; and its hardware fails and drifts. This notebook covers both
# on fgdopt's time engine. For failures and drift: measure what a failed node or GPU costs a job (the work since its
# last checkpoint, for every part of a gang), how often to checkpoint (Young/Daly's interval), and what placing jobs
# away from slow GPUs buys.

# %%
import numpy as np
import pandas as pd

from experiments.failures import SWEEP, sweep_jobs
from fgdopt.model import Cluster, TaskSet
from fgdopt.timeline import JobSet, simulate
from fgdopt.timeline.failures import (
    GPU_MTBF_S,
    NODE_MTBF_S,
    FailureLog,
    FailureModel,
    FailuresAndDrift,
    SpeedModel,
    failure_trace,
    job_mtbf_s,
    young_daly_s,
)
from fgdopt.timeline.preemption import Checkpointing, Outage

# %% [markdown]
# ## Failures and drift
#
# A failure takes a node (its CPU, memory and GPUs) or one GPU out of service until it is repaired. Every job with
# a part there stops, loses the progress it made since its last completed checkpoint, pays a restart cost when it
# starts again, and waits in the queue meanwhile. The default rates come from Meta's Llama 3 report (419 unexpected
# interruptions in 54 days on 16,384 H100 GPUs, 58.7% of them attributed to GPUs): one failure per GPU every
# 86,332 hours and per 8-GPU node every 15,338 hours.

# %%
pd.Series({"GPU MTBF (h)": GPU_MTBF_S / 3600, "node MTBF (h)": NODE_MTBF_S / 3600,
           "an 8-GPU job on one node (h)": job_mtbf_s(1, 8) / 3600,
           "a 1,024-GPU job on 128 nodes (h)": job_mtbf_s(128, 1024) / 3600}).round(1)

# %% [markdown]
# ### A failure by hand
#
# Two V100 nodes of 4 GPUs run one gang: two parts of 4 GPUs, one per node, 10,000 s of work, checkpointing every
# 1,000 s at 100 s each. At 3,500 s node 1 fails for 1,000 s. The gang has completed three checkpoints (at 1,100,
# 2,200 and 3,300 s) and worked 200 s since: both parts lose those 200 s, though node 0 never failed. It waits for
# the repair (it needs both nodes), restarts at 4,500 s after a 30 s restart and finishes its 7,000 s left with six
# more checkpoints at 12,130 s.

# %%
cluster = Cluster([32_000] * 2, [65_536] * 2, [4] * 2, ["V100"] * 2)
gang = JobSet(TaskSet([1000], [0], [4], [1000], workers=[2]), [0.0], [10_000.0])
mech = FailuresAndDrift(FailureLog([(3_500.0, Outage(1, (0, 1, 2, 3), True))], repair_s=1_000.0),
                        checkpointing=Checkpointing(1_000.0, 100.0))
r = simulate(cluster, gang, "best-fit", "fifo", mechanism=mech)
pd.Series({"finish (s)": r.finish_s[0], "lost (s, each of 8 GPUs)": r.lost_s[0],
           "checkpoints and restart (s)": r.overhead_s[0], "run time (s)": r.run_s[0]})

# %% [markdown]
# ### A seeded failure trace
#
# Failures are Poisson processes per node and per GPU, drawn lazily from one seeded generator: the trace depends on
# the cluster and the seed only, never on the schedule. Here on 64 nodes of 8 GPUs with the rates divided by 100
# (to see a few in a month). Fewer are carried out than the rates give: a failure drawn for a resource already out of
# service (a GPU of a failed node, a node with a failed GPU) is dropped.

# %%
big = Cluster([96_000] * 64, [786_432] * 64, [8] * 64, ["V100"] * 64)
fast = FailureModel(NODE_MTBF_S / 100, GPU_MTBF_S / 100, repair_s=6 * 3600, seed=1)
month = 30 * 24 * 3600
trace = failure_trace(big, fast, month)
expected = month * (64 / fast.node_mtbf_s + 512 / fast.gpu_mtbf_s)
print(f"{len(trace)} failures in 30 days ({expected:.1f} expected), {trace['whole_node'].sum()} of them nodes")
trace.head()

# %% [markdown]
# ### How often to checkpoint: Young/Daly
#
# Checkpointing often costs checkpoint time; rarely, lost work. For a job that fails every `M` seconds on average
# and spends `delta` seconds per checkpoint, Young's interval `sqrt(2 delta M)` minimises the sum. Below: 150 gangs
# of 2 x 8 GPUs on 32 nodes, failures scaled so that a gang fails every 12 h, checkpoints of 60 s, at a quarter,
# once and four times Young/Daly's interval (the same failures in every run). The least time lost is at
# Young/Daly's interval.

# %%
s = SWEEP
c32, gangs = sweep_jobs(150, seed=42)
scale = 1 / ((s["workers"] / NODE_MTBF_S + s["workers"] * s["gpus"] / GPU_MTBF_S) * s["job_mtbf_h"] * 3600)
model = FailureModel(NODE_MTBF_S / scale, GPU_MTBF_S / scale, repair_s=6 * 3600, seed=42)
best = young_daly_s(60.0, job_mtbf_s(2, 16, model.node_mtbf_s, model.gpu_mtbf_s))
rows = []
for ratio in (0.25, 1.0, 4.0):
    run = simulate(c32, gangs, "best-fit", "fifo", frag=False,
                   mechanism=FailuresAndDrift(model, checkpointing=Checkpointing(ratio * best, 60.0)))
    rows.append({"interval (min)": ratio * best / 60, "lost (%)": 100 * run.lost_s.sum() / gangs.duration_s.sum(),
                 "checkpoints + restarts (%)": 100 * run.overhead_s.sum() / gangs.duration_s.sum()})
sweep = pd.DataFrame(rows).assign(**{"waste (%)": lambda f: f["lost (%)"] + f["checkpoints + restarts (%)"]})
sweep.round(2)

# %% [markdown]
# ### Slow GPUs and health-aware placement
#
# Identical GPUs run 5-10% apart, and some are stragglers. Each GPU gets a speed factor (uniform in [0.9, 1] here,
# 10% of them at half that), and a job runs at its slowest GPU (a gang at its slowest part's). `health-aware`
# places a job, where it can, on GPUs of factor 0.8 or more, and otherwise as best-fit does.

# %%
rng = np.random.default_rng(0)
n = 400
nodes = Cluster([64_000] * 16, [262_144] * 16, [8] * 16, ["V100"] * 16)
num = rng.choice([1, 1, 2, 4, 8], n)
jobs = JobSet(TaskSet([4000] * n, [8192] * n, num, np.where((num == 1) & (rng.random(n) < 0.5), 500, 1000)),
              np.cumsum(rng.exponential(40.0, n)), rng.exponential(3_000.0, n))
speeds = SpeedModel(spread=0.1, stragglers=0.1, straggler_factor=0.5, seed=0)
runs = {}
for policy in ("best-fit", "health-aware"):
    run = simulate(nodes, jobs, policy, "backfill", frag=False,
                   mechanism=FailuresAndDrift(speeds=speeds, cluster=nodes, checkpointing=Checkpointing()))
    gpus = jobs.tasks.gpu_demand / 1000
    runs[policy] = {"speed (work / run time, GPU-weighted)": (gpus * jobs.duration_s).sum() / (gpus * run.run_s).sum(),
                    "mean JCT (s)": float(np.mean(run.finish_s - jobs.submit_s)),
                    "mean wait (s)": float(np.mean(run.start_s - jobs.submit_s))}
pd.DataFrame(runs).round(3)

# %% [markdown]
# Health-aware placement keeps jobs off the stragglers while healthy GPUs are free; when they are all busy a job
# goes where best-fit would send it (a policy must place a job wherever it fits), so under load the gain shrinks,
# and long jobs placed early on healthy GPUs can leave the stragglers to the jobs that come later. The study
# `python -m experiments.failures --quick --output out/` measures both on openb and on a gang workload.
