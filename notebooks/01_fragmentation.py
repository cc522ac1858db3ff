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
# # 1. What is GPU fragmentation?
#
# **Learning goal:** compute the statistical fragmentation F(M) of a node by hand and with `fgdopt`'s evaluator, read
# its breakdown by category, and see how it changes as a GPU fills up, the landscape FGD descends.
#
# This notebook teaches the *statistical* fragmentation measure of "Beware of Fragmentation" (Weng et al., ATC'23)
# as fgdopt implements it (`fgdopt.frag`, docs/semantics.md "Fragmentation").
#
# A node has GPUs of 1000 milli-GPU each. A task asks for a fraction of one GPU (`gpu_milli` < 1000), for whole
# GPUs, or for no GPU at all. Free GPU capacity is *fragmented* for a task when the task cannot use it: the GPU
# is too small, the node lacks CPU, or the GPU model is not allowed. Since we do not know which task comes next,
# we weigh each task shape by its popularity in the workload.

# %%
from fgdopt import Cluster, ClusterState, TaskSet, Workload, cluster_fragmentation, node_fragmentation

# %% [markdown]
# ## the worked example of docs/semantics.md
#
# A node with two GPUs that have 100 and 600 milli-GPU free and 16 free cores. The workload has three shapes:
# A (4 cores, half a GPU, 50% of tasks), B (8 cores, one whole GPU, 30%), C (2 cores, CPU-only, 20%).

# %%
workload = Workload.from_shapes([(4000, 1, 500, 0.5), (8000, 1, 1000, 0.3), (2000, 0, 0, 0.2)])
workload.to_frame()

# %% [markdown]
# * A fits GPU 1 (600 >= 500); the 100 left on GPU 0 is too small for it: **100** fragmented.
# * B needs a completely free GPU; there is none: all **700** free milli-GPU are fragmented for it.
# * C uses no GPU: every free GPU is fragmented from its point of view: **700**.
#
# F = 0.5 * 100 + 0.3 * 700 + 0.2 * 700 = 400 milli-GPU.

# %%
f = node_fragmentation([100, 600], 16000, workload)
assert abs(f - 400) < 1e-9
f

# %% [markdown]
# ## The breakdown by category
#
# `cluster_fragmentation` is the vectorized evaluator that every policy and experiment uses. It also splits the
# free capacity into the paper's categories; everything except `q3_satisfied` is fragment.

# %%
cluster = Cluster(cpu_milli=[16000], memory_mib=[65536], gpu=[2], model=["T4"])
running = TaskSet(cpu_milli=[0, 0], memory_mib=[0, 0], num_gpu=[1, 1], gpu_milli=[900, 400])
state = ClusterState(cluster, running)
state.place(0, 0, (0,))             # 900 milli-GPU on GPU 0: 100 left
state.place(1, 0, (1,))             # 400 milli-GPU on GPU 1: 600 left
print(state.gpu_left[0], int(state.cpu_left[0]))
report = cluster_fragmentation(state, workload)
assert abs(report.total - 400) < 1e-9
report.total, report.rate, report.breakdown

# %% [markdown]
# `rate` is F divided by the free milli-GPU (400 / 700). The fragment is `q2_lack_gpu` (A and B see too little GPU)
# plus `x_satisfied` (C fits, but the GPUs it leaves idle count as fragment); `q3_satisfied` is the part A can use.
#
# ## How fragmentation changes as a GPU fills up
#
# Fill GPU 1 of an otherwise empty 2-GPU node, 10 milli-GPU at a time, and watch the node's fragmentation:
#
# * at 0 used, only C counts the 2000 idle milli-GPU: F = 0.2 · 2000 = 400;
# * from the first milli used, GPU 1 is no longer whole: B counts its rest as fragment, F jumps;
# * past 500 used, A no longer fits GPU 1 either: a second jump;
# * in between, F falls as the rest of GPU 1 shrinks; when GPU 1 is full only C's view of GPU 0 remains, 200.
#
# F never reaches zero here: C, the CPU-only shape, counts every idle GPU. FGD places each task where F grows least,
# i.e. it prefers the bottoms of these valleys (a GPU filled exactly, or a leftover the popular shapes still fit).

# %%
import matplotlib.pyplot as plt
import numpy as np

used = np.arange(0, 1001, 10)
frag = [node_fragmentation([1000, 1000 - u], 16000, workload) for u in used]
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(used, frag)
ax.set_xlabel("milli-GPU used on GPU 1")
ax.set_ylabel("F_n(M), milli-GPU")
ax.set_title("Node fragmentation seen by workload A/B/C")
fig.tight_layout()
at = dict(zip(used.tolist(), frag, strict=True))
print({u: round(at[u], 1) for u in (0, 10, 500, 510, 1000)})
assert [round(at[u], 6) for u in (0, 10, 500, 510, 1000)] == [400, 695, 450, 690, 200]

# %% [markdown]
# ## The openb trace
#
# With the Alibaba PAI trace available (`FGDOPT_DATA`, else the cache `python -m fgdopt.traces download` fills:
# `find_openb` looks where the tests look), the workload M is
# the trace's most popular task shapes, and the *empty* openb cluster is already about 14% fragmented (the cell
# prints the exact figure): CPU-only tasks and nodes short of CPU see GPUs they cannot use. Without the trace the
# cell says so and stops there, unless `FGDOPT_REQUIRE_DATA=1` (as in CI), where a missing trace is an error.

# %%
import os

from fgdopt.traces import find_openb, load_openb

try:
    cluster, tasks = load_openb("default", find_openb())   # None (not found): the error names where to put it
except FileNotFoundError as exc:
    if os.environ.get("FGDOPT_REQUIRE_DATA") == "1":
        raise RuntimeError(f"FGDOPT_REQUIRE_DATA=1 but the openb trace is missing: {exc}") from exc
    print(f"The openb trace is not available, this last step is skipped.\n{exc}")
else:
    openb_workload = Workload.from_tasks(tasks)
    report = cluster_fragmentation(ClusterState(cluster, tasks), openb_workload)
    print(f"{len(openb_workload)} shapes, F = {report.total:,.2f} milli-GPU, rate {100 * report.rate:.3f}%")
