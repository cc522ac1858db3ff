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
# # 10. Your trace
#
# **Learning goal:** bring a public GPU-cluster trace (Helios, Philly, Acme, PAI 2020, the 2026 spot-GPU trace, an
# SWF log) into fgdopt's open job format, read what the converter kept, dropped and assumed, see how much of the
# work sits in multi-node *gangs*, and run the time engine on it.
#
# A converter turns a trace's raw files into one table, one row per job (`fgdopt.workloads.format`): when it is
# submitted (`submit_s`), how long it runs (`duration_s`), and its shape: `workers` identical parts, each of
# `num_gpu` GPUs (or `gpu_milli` of one GPU), `cpu_milli` milli-cores and `memory_mib` MiB. The command line does
# the same as the cells below: `python -m experiments.convert --format helios --input cluster_log.csv --output DIR`.
#
# The raw traces are large downloads (`python -m fgdopt.workloads.download --list` shows their pinned addresses);
# here we use the small Helios-shaped fixture the converter's tests use: 27 rows, 25 of them jobs the converter
# keeps, a few of those on two nodes.

# %%
from experiments.traces import FIXTURE_DIR
from fgdopt.workloads import stats
from fgdopt.workloads.convert import convert

conversion = convert("helios", [FIXTURE_DIR / "helios" / "cluster_log.csv"])
summary = conversion.summary("helios", ["cluster_log.csv"])
print(f"{summary['rows_read']} rows read, {summary['jobs_kept']} jobs kept, dropped: {summary['dropped']}")
for line in summary["assumed"]:
    print("assumed:", line)
assert (summary["rows_read"], summary["jobs_kept"]) == (27, 25)
conversion.jobs.head(6)

# %% [markdown]
# Helios gives each job's total GPUs and its node count; the converter's rule is `workers = node_num` parts of
# `ceil(gpu_num / node_num)` GPUs. Job `j0` asked for 16 GPUs on 2 nodes: two workers of 8 GPUs. Job `j4` asked for
# 3 GPUs on 2 nodes, which does not split evenly: two workers of 2 GPUs (the summary counts it as rounded up).
# Helios has no memory column, so `memory_mib` is 0 (memory never limits) — the summary says so.
#
# ## Where the GPU-hours are
#
# A job's GPU-hours are workers x GPUs per worker x hours. Gangs are few jobs but much of the work:

# %%
table = stats.shapes(conversion.jobs)
info = stats.summary(conversion.jobs)
print(f"{info['gangs']} gangs of {info['jobs']} jobs hold {info['gang_gpu_hours']:.1f} of "
      f"{info['gpu_hours']:.1f} GPU-hours")
table

# %% [markdown]
# ## On the time engine
#
# `read_workload` reads the open format (CSV or Parquet) and checks every row; an error is one line naming the
# file, the row and the field. The time engine places each part of a job on one node (parts may share one); a
# gang's parts start together and are freed together, so a gang waits until all its parts fit at once. Here we run
# the whole fixture, gangs included, on two 8-GPU nodes, where some jobs must wait, and compare the mean wait of
# gangs and of single-node jobs:

# %%
import numpy as np

from fgdopt.model import Cluster
from fgdopt.timeline import simulate
from fgdopt.timeline.jobs import jobs_from_frame

frame = conversion.jobs
cluster = Cluster([128_000] * 2, [1 << 20] * 2, [8] * 2, ["GPU"] * 2)
result = simulate(cluster, jobs_from_frame(frame, "helios fixture"), "best-fit", "backfill", frag=False)
jobs = result.job_frame()
print(result.counts())
gang = jobs["workers"] > 1
print(f"mean wait: gangs {np.nanmean(jobs['wait_s'][gang]):.0f} s, single-node jobs "
      f"{np.nanmean(jobs['wait_s'][~gang]):.0f} s; makespan {np.nanmax(result.finish_s):.0f} s")
jobs.loc[gang, ["name", "workers", "submit_s", "start_s", "finish_s", "wait_s"]]

# %% [markdown]
# Under plain backfill a gang that needs both nodes whole lets smaller jobs pass it. `gang_reserve_s` bounds that:
# once the first pending gang has waited so many seconds, no job behind it starts before it (the studies'
# `--gang-reserve-s`). `gang_slowdown` (`--gang-slowdown`) slows a gang whose parts span several nodes:

# %%
for reserve, slowdown in ((np.inf, 1.0), (0.0, 1.0), (np.inf, 1.2)):
    run = simulate(cluster, jobs_from_frame(frame, "helios fixture"), "best-fit", "backfill", frag=False,
                   gang_reserve_s=reserve, gang_slowdown=slowdown).job_frame()
    g = run["workers"] > 1
    print(f"gang_reserve_s={reserve}, gang_slowdown={slowdown}: mean wait gangs {np.nanmean(run['wait_s'][g]):.0f} s, "
          f"single-node jobs {np.nanmean(run['wait_s'][~g]):.0f} s, makespan {np.nanmax(run['finish_s']):.0f} s")

# %% [markdown]
# ## When a job cannot run at all
#
# A job whose shape fits no *empty* node is rejected at its submission, and `jobs.csv` says why (`status`
# `rejected`, `reason` one of `gpu_spec`, `gpus`, `gpu_milli`, `cpu`, `memory`, `workers`). On nodes of 4 GPUs the
# jobs whose parts ask more than 4 GPUs are rejected for `gpus`: the five 8-GPU jobs and the gangs `j0` (2 workers of
# 8 GPUs) and `j3` (2 of 6); on one 8-GPU node, the gangs whose two parts do not fit together are rejected for
# `workers`:

# %%
from fgdopt.timeline.admission import reason_lines

small = Cluster([128_000] * 4, [1 << 20] * 4, [4] * 4, ["GPU"] * 4)
run = simulate(small, jobs_from_frame(frame, "helios fixture"), "best-fit", "backfill", frag=False).job_frame()
print("\n".join(reason_lines(run["reason"].to_numpy())))
too_big = run.loc[run["reason"] == "gpus"]
per_part = frame.set_index("name")["num_gpu"]
assert set(too_big["name"]) == set(per_part.index[per_part > 4]) and {"j0", "j3"} <= set(too_big["name"])
one = Cluster([128_000], [1 << 20], [8], ["GPU"])
alone = simulate(one, jobs_from_frame(frame, "helios fixture"), "best-fit", "backfill", frag=False).job_frame()
print("\n".join(reason_lines(alone["reason"].to_numpy())))
alone.loc[alone["status"] == "rejected", ["name", "workers", "status", "reason"]]

# %% [markdown]
# **Next:** convert your own trace (`python -m experiments.convert --format F --input FILES --output DIR`) and
# compare policies and queues on it with `python -m experiments.traces --workload DIR --output OUT`. The page
# "Your trace" of the documentation lists the columns of the format and each converter's rule.
