"""The figures a new user meets: every study that reads a user's workload (``timeline`` and ``schedule`` with
``--workload FILE --cluster FILE``, ``pollux`` with ``--workloads FOLDER``) draws data in every panel of its figure,
with finite axis limits and no "nan" in any text; and the parts of the timeline and Gantt figures that make them
readable (one legend for every panel, bars for one load, stacked GPU sharers, the optimum on the run's nodes)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from conftest import require_pollux
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from fgdopt.model import Cluster, TaskSet
from fgdopt.plot import _gpu_bands, _job_colours, plot_timeline
from fgdopt.timeline import JobSet
from fgdopt.timeline.schedule import Schedule, objective_value, recorded_run, relabel_like, validate_schedule


@pytest.fixture
def saved(laid_out):
    """These tests read the figures' axes, legends and texts: laid out, not rendered (conftest's ``laid_out``)."""
    return laid_out


def _files(tmp_path):
    """A workload of 16 jobs (CPU-only, shared, whole and 2-GPU jobs) and a cluster of two identical 2-GPU T4 nodes
    and a 1-GPU P100 node."""
    cluster = tmp_path / "cluster.json"
    t4 = {"cpu_milli": 32000, "memory_mib": 65536, "gpu": 2, "model": "T4"}
    cluster.write_text(json.dumps({"nodes": [t4, t4, {"cpu_milli": 16000, "memory_mib": 65536, "gpu": 1,
                                                      "model": "P100"}]}))
    rng = np.random.default_rng(3)
    n = 16
    frame = pd.DataFrame({"name": [f"j{i}" for i in range(n)], "cpu_milli": rng.choice([1000, 4000], n),
                          "memory_mib": 0, "num_gpu": rng.choice([0, 1, 1, 2], n), "gpu_spec": ""})
    frame["gpu_milli"] = np.where(frame["num_gpu"] == 0, 0, np.where(frame["num_gpu"] == 2, 1000,
                                                                     rng.choice([300, 500, 1000], n)))
    frame["submit_s"] = np.sort(np.round(rng.uniform(0, 100, n)))
    frame["duration_s"] = np.round(rng.exponential(30, n)) + 5
    workload = tmp_path / "my_jobs.csv"
    frame.to_csv(workload, index=False)
    return workload, cluster


def _draws_data(ax) -> bool:
    """Whether ``ax`` holds a line with a finite point, a collection with a finite vertex or a bar of positive
    size."""
    for line in ax.get_lines():
        if np.isfinite(np.asarray(line.get_xydata(), dtype=float)).all(axis=1).any():
            return True
    for coll in ax.collections:
        for path in coll.get_paths():
            if len(path.vertices) and np.isfinite(path.vertices).all(axis=1).any():
                return True
    return any(isinstance(p, Rectangle) and np.isfinite([p.get_x(), p.get_y(), p.get_width(), p.get_height()]).all()
               and p.get_width() != 0 and p.get_height() != 0 for p in ax.patches)


def check_figure(fig: Figure) -> None:
    """Every visible panel of ``fig`` draws data within finite limits; no text of the figure says ``nan``."""
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert panels
    for ax in panels:
        assert _draws_data(ax), f"empty panel {ax.get_title()!r}"
        assert np.isfinite(ax.get_xlim()).all() and np.isfinite(ax.get_ylim()).all(), ax.get_title()
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert not [t for t in texts if re.search(r"\bnan\b", t, re.IGNORECASE)], texts


def test_timeline_figure_on_a_user_workload(tmp_path, saved):
    from experiments import timeline as study

    workload, cluster = _files(tmp_path)
    assert study.main(["--workload", str(workload), "--cluster", str(cluster), "--policies", "fgd,best-fit",
                       "--queue", "fifo,backfill", "--seeds", "1", "--instants", "1", "--time-limit", "10",
                       "--sample", "5", "--output", str(tmp_path / "out")]) == 0
    (fig,) = saved
    check_figure(fig)
    assert fig.get_suptitle() == "workload my_jobs.csv, seed 1"
    left, cdf, waits = fig.axes
    assert len(left.get_lines()) >= 8                     # allocation and pending demand of the 4 runs
    # legends below the panels serve them all: the line styles and the optimum, then a run per entry
    styles, legend = ([t.get_text() for t in leg.get_texts()] for leg in fig.legends)
    runs = ["fgd / fifo", "fgd / backfill", "best-fit / fifo", "best-fit / backfill"]
    assert [label.split(" (same curves as")[0] for label in legend] == runs
    assert styles == ["GPU allocated", "pending GPU demand", "optimum of the jobs present: incumbent (up to its bound)"]
    assert all(leg.get_window_extent().y1 < min(ax.get_window_extent().y0 for ax in fig.axes) for leg in fig.legends)
    # a user's workload has one (missing) load: the waits are bars, one per run, on a linear axis
    assert waits.get_yscale() == "linear" and len(waits.patches) == 4
    table = pd.read_csv(tmp_path / "out" / "timeline.csv").set_index(["policy", "queue"])["mean_wait_s"]
    heights = [p.get_height() for p in waits.patches]
    assert heights == pytest.approx([table[tuple(r.split(" / "))] for r in runs])
    assert all(ax.get_title().count("\n") == 0 for ax in fig.axes)        # one-line panel titles


def test_timeline_figure_names_coinciding_runs_and_draws_loads_as_lines(tmp_path, saved):
    """Two runs with the same series, JCTs and waits are named as one curve; three loads give a log-scale line
    chart with a marker per run."""
    keys = {"trace": "t", "seed": 1, "mechanism": "none"}
    series = pd.DataFrame([{**keys, "load": load, "policy": p, "queue": "fifo", "time_s": 60.0 * i,
                            "alloc_milli": 500 * (i % 3), "pending_milli": 100 * i}
                           for load in (0.5, 0.9, 1.3) for p in ("a", "b") for i in range(30)])
    runs = pd.DataFrame([{**keys, "load": load, "policy": p, "queue": "fifo", "mean_wait_s": 10 * load}
                         for load in (0.5, 0.9, 1.3) for p in ("a", "b")])
    optimum = pd.DataFrame(columns=[*keys, "load", "policy", "queue", "time_s", "question", "incumbent_milli",
                                    "bound_milli"])
    plot_timeline(series, runs, optimum, 4000, tmp_path / "t.png", "t")
    (fig,) = saved
    check_figure(fig)
    labels = [t.get_text() for t in fig.legends[1].get_texts()]
    assert labels[:2] == ["a / fifo", "b / fifo (same curves as a / fifo)"]
    waits = fig.axes[-1]
    assert waits.get_yscale() == "log"
    markers = {line.get_marker() for line in waits.get_lines()}
    assert markers == {"o", "s"}
    widths = [line.get_linewidth() for line in fig.axes[0].get_lines()]
    assert widths[0] > widths[-1]                          # the later run drawn thinner, on top


def _overlap(a: Rectangle, b: Rectangle) -> float:
    w = min(a.get_x() + a.get_width(), b.get_x() + b.get_width()) - max(a.get_x(), b.get_x())
    h = min(a.get_y() + a.get_height(), b.get_y() + b.get_height()) - max(a.get_y(), b.get_y())
    return max(w, 0.0) * max(h, 0.0)


def test_schedule_gantt_on_a_user_workload(tmp_path, saved):
    from experiments import schedule as study

    workload, cluster = _files(tmp_path)
    assert study.main(["--workload", str(workload), "--cluster", str(cluster), "--objective", "mean-jct",
                       "--queue", "fifo,backfill", "--time-limit", "10", "--output", str(tmp_path / "out")]) == 0
    (fig,) = saved
    check_figure(fig)
    top, bottom = fig.axes
    for ax in (top, bottom):
        assert "node:GPU" in ax.get_ylabel()
        assert [t.get_text() for t in ax.get_yticklabels()] == ["0:0  T4", "0:1  T4", "1:0  T4", "1:1  T4",
                                                                "2:0  P100"]
        assert any(t.get_text() for t in ax.get_xticklabels())     # time ticks on both panels
        bars = [p for p in ax.patches if isinstance(p, Rectangle)]
        assert all(_overlap(a, b) < 1e-9 for i, a in enumerate(bars) for b in bars[i + 1:])   # sharers stacked
    assert bottom.get_title(loc="left").startswith("optimum: mean JCT")
    assert fig.get_suptitle() == "workload my_jobs.csv, mean-jct: best run against the optimum"
    # a job keeps its colour in both panels; 13 GPU jobs (3 CPU-only), each in the legend under its name
    (legend,) = fig.legends
    names = [t.get_text() for t in legend.get_texts()]
    colours = {tuple(p.get_facecolor()) for ax in (top, bottom) for p in ax.patches}
    assert len(names) == 13 and len(colours) == 13
    assert any(t.get_text() in names for t in top.texts)            # names on the bars wide enough
    # the optimum is drawn renumbered onto the run's nodes and GPUs (relabel_like): rebuild both schedules from
    # starts.csv (the solver's own numbering) and find each job's bars on the rows the relabelled schedule gives
    from experiments.timeline import load_cluster
    from fgdopt.timeline import read_workload

    nodes, jobs = load_cluster(cluster), read_workload(workload)
    starts = pd.read_csv(tmp_path / "out" / "starts.csv")
    gpus = [() if pd.isna(x) else tuple(int(float(g)) for g in str(x).split()) for x in starts["gpus"]]
    run, opt = (Schedule(part["start_s"].to_numpy(), part["node"].to_numpy(), [gpus[i] for i in part.index])
                for _, part in sorted(starts.groupby("method"), key=lambda kv: kv[0] == "optimum"))
    first = np.concatenate([[0], np.cumsum(nodes.gpu)])
    colour = _job_colours(len(jobs))

    def expected(sched: Schedule) -> dict:
        return {tuple(colour[j]): {int(first[sched.node[j]]) + g for g in sched.gpus[j]}
                for j in range(len(jobs)) if sched.gpus[j]}

    def drawn(ax) -> dict:
        rows: dict = {}
        for p in ax.patches:                                        # a band's top lies within 0.4 of its row
            rows.setdefault(tuple(p.get_facecolor()), set()).add(round(p.get_y()))
        return rows

    aligned = relabel_like(nodes, opt, run)
    assert drawn(top) == expected(run) and drawn(bottom) == expected(aligned)


def test_pollux_figure_on_a_user_workload_folder(tmp_path, saved):
    require_pollux()
    from experiments import pollux as study

    folder = tmp_path / "mine"
    folder.mkdir()
    pd.DataFrame({"name": ["a-0", "a-1", "b-2"], "time": [0, 120, 400], "application": ["cifar10", "cifar10", "bert"],
                  "num_replicas": [4, 8, 2], "batch_size": [2048, 2048, 384]}).to_csv(folder / "w.csv", index=False)
    assert study.main(["--workloads", str(folder), "--policies", "tiresias,optimus", "--output",
                       str(tmp_path / "out")]) == 0
    (fig,) = saved
    check_figure(fig)


def test_gpu_bands_stack_the_sharers_of_a_gpu():
    # one GPU. A 300 [0,10) takes [0,300); B 300 [0,5) [300,600); C 300 [0,10) [600,900). At 5 B leaves and
    # D 400 [5,10) arrives (A + C + D = 1000: feasible): free are [300,600) and [900,1000), no contiguous 400, so D
    # is drawn at the top, [600,1000) (over C). E 200 [10,12) alone: [0,200).
    cluster = Cluster([32000], [1024], [1], ["T4"])
    tasks = TaskSet([0] * 5, [0] * 5, [1] * 5, [300, 300, 300, 400, 200])
    jobs = JobSet(tasks, [0.0] * 5, [10.0, 5.0, 10.0, 5.0, 2.0])
    sched = Schedule([0.0, 0.0, 0.0, 5.0, 10.0], [0] * 5, [(0,)] * 5)
    assert _gpu_bands(cluster, jobs, sched) == {(0, 0): 0, (1, 0): 300, (2, 0): 600, (3, 0): 600, (4, 0): 0}
    # on the second GPU of a 2-GPU node after a 1-GPU node, the row is 2
    two = Cluster([32000, 32000], [1024] * 2, [1, 2], ["T4"] * 2)
    one = Schedule([0.0], [1], [(1,)])
    assert _gpu_bands(two, JobSet(TaskSet([0], [0], [1], [500]), [0.0], [1.0]), one) == {(0, 2): 0}


def test_job_colours_are_distinct():
    for n in (5, 20, 21, 60, 200):
        colours = _job_colours(n)
        assert len(colours) == n and len(set(colours)) == n


TWO_TYPES = Cluster([32000, 32000, 32000, 16000], [65536] * 4, [2, 2, 2, 1], ["T4", "T4", "T4", "P100"])


def test_relabel_like_undoes_a_permutation_of_identical_nodes():
    # jobs 0..3; the reference puts 0 on node 0 GPU 0, 1 on node 1 GPUs (0, 1), 2 on node 2 GPU 1, 3 on node 3
    # (the P100). The other schedule is the same up to the swap T4 nodes 0 <-> 2 and GPU 0 <-> 1 of node 1.
    ref = Schedule([0.0, 1.0, 2.0, 3.0], [0, 1, 2, 3], [(0,), (0, 1), (1,), (0,)])
    other = Schedule([0.0, 1.0, 2.0, 3.0], [2, 1, 0, 3], [(0,), (1, 0), (1,), (0,)])
    back = relabel_like(TWO_TYPES, other, ref)
    assert back.node.tolist() == [0, 1, 2, 3]
    assert [sorted(g) for g in back.gpus] == [[0], [0, 1], [1], [0]]
    # a job on a T4 node in one and on the P100 in the other: nodes of different types are never exchanged
    cross = Schedule([0.0, 1.0, 2.0, 3.0], [3, 1, 2, 0], [(0,), (0, 1), (1,), (0,)])
    assert relabel_like(TWO_TYPES, cross, ref).node.tolist()[0] == 3
    # GPUs of one node: job 0 on GPU 1 where the reference has GPU 0 -> renumbered to GPU 0
    shifted = Schedule([0.0, 1.0, 2.0, 3.0], [0, 1, 2, 3], [(1,), (0, 1), (0,), (0,)])
    assert relabel_like(TWO_TYPES, shifted, ref).gpus == ((0,), (0, 1), (1,), (0,))


def test_relabel_like_recovers_a_permuted_engine_run():
    """An engine run, its identical nodes and each node's GPUs permuted at random: still valid, and relabelled onto
    the run it is the original again (every job on the same node and GPUs; same objectives)."""
    rng = np.random.default_rng(0)
    cluster = Cluster([32000] * 6, [65536] * 6, [4, 4, 4, 2, 2, 1], ["V100"] * 3 + ["T4"] * 2 + ["P100"])
    n = 40
    gpus = rng.choice([0, 1, 1, 2, 4], n)
    tasks = TaskSet(rng.choice([1000, 4000], n), [0] * n, gpus,
                    np.where(gpus == 1, rng.choice([250, 500, 1000], n), np.where(gpus == 0, 0, 1000)))
    jobs = JobSet(tasks, np.sort(rng.uniform(0, 200, n)), rng.uniform(10, 100, n))
    _, run = recorded_run(cluster, jobs, "fgd", "backfill")
    for _ in range(10):
        node_perm = np.concatenate([rng.permutation([0, 1, 2]), 3 + rng.permutation([0, 1]), [5]])
        gpu_perm = [rng.permutation(int(g)) for g in cluster.gpu]
        moved = Schedule(run.start_s, np.where(run.node >= 0, node_perm[np.maximum(run.node, 0)], -1),
                         tuple(tuple(int(gpu_perm[node_perm[m]][g]) for g in gs) if m >= 0 else ()
                               for m, gs in zip(run.node.tolist(), run.gpus, strict=True)))
        validate_schedule(cluster, jobs, moved)
        back = relabel_like(cluster, moved, run)
        validate_schedule(cluster, jobs, back)
        assert back.node.tolist() == run.node.tolist()
        assert [sorted(g) for g in back.gpus] == [sorted(g) for g in run.gpus]
        assert objective_value(jobs, back, "mean-jct") == objective_value(jobs, run, "mean-jct")


def test_workload_fixture_is_readable(tmp_path):
    """The workload above parses as the studies read it, with CPU-only, shared and 2-GPU jobs (the premise of the
    figure tests)."""
    from fgdopt.timeline import read_workload

    workload, _ = _files(tmp_path)
    tasks = read_workload(workload).tasks
    assert len(tasks) == 16 and int((tasks.gpu_milli == 0).sum()) == 3 and int((tasks.num_gpu == 2).sum()) == 3
    assert int(((tasks.gpu_milli > 0) & (tasks.gpu_milli < 1000)).sum()) == 6


def test_a_gang_is_drawn_and_relabelled_on_every_part():
    """A gang of two 1-GPU parts on T4 nodes 0 and 2 (job 1, a 500 share, on node 1): the Gantt rows hold both parts
    (rows 0 and 4: node 0 GPU 0, node 2 GPU 0), and the schedule with nodes 0 and 2 exchanged, relabelled onto it,
    has the same parts again and stays valid."""
    tasks = TaskSet([1000, 1000], [0, 0], [1, 1], [1000, 500], workers=[2, 1])
    jobs = JobSet(tasks, [0.0, 0.0], [10.0, 5.0])
    ref = Schedule([0.0, 0.0], [0, 1], [(0,), (0,)], (((0, (0,)), (2, (0,))), ()))
    validate_schedule(TWO_TYPES, jobs, ref)
    assert _gpu_bands(TWO_TYPES, jobs, ref) == {(0, 0): 0, (0, 4): 0, (1, 2): 0}
    swapped = Schedule([0.0, 0.0], [2, 1], [(0,), (0,)], (((2, (0,)), (0, (0,))), ()))
    back = relabel_like(TWO_TYPES, swapped, ref)
    validate_schedule(TWO_TYPES, jobs, back)
    assert sorted(back.parts[0]) == sorted(ref.parts[0]) and back.node.tolist() == [0, 1]


def test_gantt_leaves_a_rejected_job_out_of_its_legend(tmp_path, laid_out):
    """A job that fits no node (2 GPUs on a 1-GPU node) never starts: no bar, so no legend entry either (the legend
    listed it); the caption counts it beside the CPU-only job."""
    from fgdopt.plot import plot_gantt

    cluster = Cluster([8000], [8192], [1], ["T4"])
    jobs = JobSet(TaskSet([1000] * 3, [0] * 3, [1, 2, 0], [500, 1000, 0], names=("a", "big", "cpu")), [0.0] * 3,
                  [10.0] * 3)
    sched = Schedule([0.0, math.nan, 0.0], [0, -1, 0], [(0,), (), ()])
    plot_gantt(cluster, jobs, {"run": sched}, tmp_path / "gantt.png")
    (fig,) = laid_out
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["a"]
    caption = " ".join(t.get_text() for t in fig.texts)
    assert "1 CPU-only job(s) not drawn" in caption and "1 job(s) never started (rejected) not drawn" in caption


def test_relabel_like_counts_every_node_of_a_type():
    """Jobs 0 and 1 on T4 nodes 0 and 2 in the reference, on nodes 1 and 0 in the other schedule: the relabelling
    maps 1 -> 0 and 0 -> 2 (node 0, the type's first, counts as any other), putting both jobs where the reference
    has them."""
    ref = Schedule([0.0, 0.0], [0, 2], [(0,), (0,)])
    other = Schedule([0.0, 0.0], [1, 0], [(0,), (0,)])
    assert relabel_like(TWO_TYPES, other, ref).node.tolist() == [0, 2]
