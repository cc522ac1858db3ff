"""plot_node_gpus: the bars show each task's milli-GPU per GPU and the free part, on a hand-built state."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from fgdopt import Cluster, ClusterState, TaskSet
from fgdopt.plot import plot_node_gpus


def node_state() -> ClusterState:
    """Node 0: 4 GPUs. Task 0 (300) and task 1 (500) share GPU 0, task 2 takes GPUs 2 and 3 whole, task 3 is
    CPU-only; GPU 1 is free. Node 1 hosts task 4 (200 on its GPU 0)."""
    cluster = Cluster(cpu_milli=[32000, 8000], memory_mib=[65536, 65536], gpu=[4, 1], model=["V100M16", "T4"])
    tasks = TaskSet([1000, 1000, 4000, 6000, 1000], [1024] * 5, [1, 1, 2, 0, 1], [300, 500, 1000, 0, 200])
    state = ClusterState(cluster, tasks)
    for i, node, gpus in ((0, 0, (0,)), (1, 0, (0,)), (2, 0, (2, 3)), (3, 0, ()), (4, 1, (0,))):
        state.place(i, node, gpus)
    return state


def bars(ax) -> dict[str, list[tuple[float, float, float]]]:
    """label -> [(x centre, bottom, height)] of every bar container on ``ax``."""
    out = {}
    for container in ax.containers:
        out[container.get_label()] = [(round(p.get_x() + p.get_width() / 2, 6), p.get_y(), p.get_height())
                                      for p in container.patches]
    return out


def test_bar_heights_are_used_and_free_milli_gpu():
    state = node_state()
    ax = plot_node_gpus(state, 0)
    drawn = bars(ax)
    assert set(drawn) == {"task 0", "task 1", "task 2", "free"}          # CPU-only task 3 and node 1's task 4: no bar
    assert drawn["task 0"] == [(0, 0, 300)]
    assert drawn["task 1"] == [(0, 300, 500)]                           # stacked on task 0
    assert drawn["task 2"] == [(2, 0, 1000), (3, 0, 1000)]              # one segment per GPU it takes
    assert drawn["free"] == [(0, 800, 200), (1, 0, 1000), (2, 1000, 0), (3, 1000, 0)]
    used = np.zeros(4)
    for label, segments in drawn.items():
        if label != "free":
            for x, _, height in segments:
                used[int(x)] += height
    assert used.tolist() == (1000 - state.gpu_left[0]).tolist() == [800, 0, 1000, 1000]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["GPU 0", "GPU 1", "GPU 2", "GPU 3"]
    assert ax.get_ylim() == (0, 1000)
    assert "CPU-only tasks [3]" in ax.get_title() and "20000/32000 milli-cores free" in ax.get_title()


def test_draws_on_given_axes_and_keeps_task_colours():
    state = node_state()
    ax = Figure().subplots()
    assert plot_node_gpus(state, 1, ax=ax, title="node 1") is ax
    drawn = bars(ax)
    assert drawn == {"task 4": [(0, 0, 200)], "free": [(0, 200, 800)]}
    assert ax.get_title() == "node 1"
    colour = ax.containers[0].patches[0].get_facecolor()
    other = plot_node_gpus(state, 0)
    assert other.containers[0].patches[0].get_facecolor() != colour        # task 0 (C0) vs task 4 (C4)
