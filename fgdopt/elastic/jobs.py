"""Elastic training jobs: progress by goodput over epochs, on an allocation that may change (Pollux's job model).

A job trains :class:`~fgdopt.elastic.applications.Application` ``app`` until ``app.completion_epoch`` is done: its
*work* is ``app.progress(completion_epoch + 1)`` progress units. Holding a placement (replicas per node) at total
batch size ``B`` = replicas x atomic batch x (accumulation steps + 1), during epoch ``e`` it makes progress at the
*goodput* ``gain / step`` per second: ``step`` the seconds of one optimizer step (the measured step time plus the
compute part, step minus sync, once per accumulation step) and ``gain = (var + sqr) / (var / s + sqr)`` with
``s = B / init_batch_size`` and (sqr, var) the application's gradient statistics of epoch ``e`` at ``B``. This is
the ``Job.step`` of Pollux's ``simulator.py`` (``petuum/adaptdl`` at ``c793c708``), kept to its arithmetic:

* a new allocation costs a **restart delay** (``restart_s``, Pollux's 30 s) of held time without progress;
* an epoch boundary reached within an interval is crossed after ``round((next - progress) / goodput)`` seconds
  (whole seconds, Python's rounding), the progress set to the boundary's; the goodput then changes with the
  epoch's statistics, and the batch size is chosen again;
* the job completes at the boundary after its completion epoch.

The job is *elastic* when it has no target batch size (``batch_size`` None, Pollux's own jobs): its batch size is
the goodput optimum of its fitted model (:mod:`fgdopt.elastic.goodput`) for its placement; jobs of Optimus and
Tiresias keep the workload's batch size. Workload files are the simulator's CSVs (``name, time, application,
num_replicas, batch_size``): :func:`read_workload`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.elastic.applications import Application, pollux_dir, read_table
from fgdopt.elastic.goodput import GoodputModel, fit_perf_params

RESTART_S = 30.0
"""Pollux's re-allocation delay, seconds (``Job.reallocate``)."""
INTERVAL_S = 60.0
"""Pollux's scheduling interval, seconds."""
NODES, GPUS = 16, 4
"""Pollux's cluster: 16 nodes of 4 GPUs."""
LOADS = {0.5: "workloads-0.5", 1.0: "workloads", 1.5: "workloads-1.5", 2.0: "workloads-2.0"}
"""Pollux's job loads and their workload folders."""
WORKLOAD_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


Allocations = dict[str, list[int]]
"""A plan of an elastic planner: job name -> the node of each of its GPUs (one entry per GPU)."""


def placement_of(allocation: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """Replicas per node, in allocation order: each run of equal node ids in the allocation (one node id per GPU,
    as Pollux's policies return them) is one entry."""
    out: list[int] = []
    for i, node in enumerate(allocation):
        if i and node == allocation[i - 1]:
            out[-1] += 1
        else:
            out.append(1)
    return tuple(out)


def packed(replicas: int, per_node: int) -> tuple[int, ...]:
    """Replicas per node of ``replicas`` GPUs on the fewest nodes of ``per_node`` GPUs (full nodes, then the rest)."""
    return (per_node,) * (replicas // per_node) + ((replicas % per_node,) if replicas % per_node else ())


@dataclass(eq=False)
class ElasticJob:
    """One job and its state (module docstring); times in seconds from the start of the run.

    Attributes
    ----------
    name, app, submit_s : the job, its application, its submission time.
    replicas, batch_size : the workload's GPU count and total batch size (None: chosen by the scheduler).
    placement : replicas per node now (``()``: none held). atomic_bsz, accum : the current batch configuration.
    epoch, progress : epochs done and progress made (progress units). completion_s : when it completed (None).
    rescale_s : restart delay still to pay. attained_gpu_s : GPU-seconds held. held_s, delay_s, busy_s : seconds
    holding GPUs, of them in restart delay, and of them progressing. restarts : re-allocations after the first.
    """

    name: str
    app: Application
    submit_s: float
    replicas: int | None = None
    batch_size: int | None = None
    placement: tuple[int, ...] = ()
    atomic_bsz: int = 0
    accum: int = 0
    epoch: int = 0
    progress: float = 0.0
    completion_s: float | None = None
    rescale_s: float = 0.0
    attained_gpu_s: float = 0.0
    held_s: float = 0.0
    delay_s: float = 0.0
    busy_s: float = 0.0
    restarts: int | None = None
    grad: tuple[float, float] | None = None
    profile: dict = field(default_factory=dict)
    _model: GoodputModel | None = None
    _fitted: int = 0

    @property
    def last_epoch(self) -> int:
        """The epoch after which the job completes (the application's completion epoch)."""
        return self.app.completion_epoch(self.batch_size or self.app.init_batch_size)

    @property
    def work(self) -> float:
        """Progress units to complete."""
        return self.app.progress(self.last_epoch + 1)

    @property
    def done(self) -> bool:
        return self.completion_s is not None

    @property
    def max_profiled_replicas(self) -> int:
        return max((k[1] for k in self.profile), default=0)

    def model(self) -> GoodputModel | None:
        """The goodput model fitted to the job's measurements so far (None before the first)."""
        if not self.profile:
            return None
        if self._fitted != len(self.profile):                   # refit on new measurements
            keys = np.array(list(self.profile), dtype=np.float64)
            vals = np.array(list(self.profile.values()), dtype=np.float64)
            perf = fit_perf_params(keys[:, 0], keys[:, 1], keys[:, 2], vals[:, 0] - vals[:, 1], vals[:, 0])
            self._model, self._fitted = GoodputModel(perf, self.grad, self.app.init_batch_size), len(self.profile)
        elif self._model.grad != self.grad:
            self._model = GoodputModel(self._model.perf, self.grad, self.app.init_batch_size)
        return self._model

    def rebatch(self) -> None:
        """Choose the batch configuration for the current placement (Pollux's ``update_local_bsz``)."""
        app = self.app
        parts = tuple(p for p in self.placement if p)
        nodes, replicas = len(parts), sum(parts)
        if self.batch_size is None and self.profile:
            _, atomic, accum = self.model().optimize(nodes, replicas, app.max_batch_size,
                                                     (app.min_local_bsz, app.max_local_bsz))
            self.atomic_bsz = min(int(atomic), int(app.max_batch_size / (replicas * (int(accum) + 1))))
            self.accum = int(accum)
            return
        target = self.batch_size if self.batch_size is not None else max(app.init_batch_size,
                                                                         app.min_local_bsz * replicas)
        self.atomic_bsz, self.accum = app.fixed_batch(target, replicas)

    def reallocate(self, placement: tuple[int, ...], restart_s: float = RESTART_S) -> None:
        """Take ``placement`` (replicas per node; ``()`` releases every GPU); a non-empty one starts the restart
        delay."""
        if placement:
            self.placement = tuple(placement)
            self.rebatch()
            self.rescale_s = restart_s
            self.restarts = 0 if self.restarts is None else self.restarts + 1
        else:
            self.placement, self.atomic_bsz = (), 0

    def goodput(self, parts: tuple[int, ...] | None = None) -> float:
        """Progress units per second in the current epoch at the current batch configuration on ``parts``
        (replicas per node, no zeros; default: the current placement), as the module docstring computes it; records
        the gradient statistics and the step time measured (the job's profile). :meth:`advance` asks it for every
        stretch (a subclass may run at another speed: :class:`fgdopt.elastic.singularity.SlicedJob`)."""
        app = self.app
        parts = tuple(p for p in self.placement if p) if parts is None else parts
        nodes, replicas = len(parts), sum(parts)
        batch = replicas * self.atomic_bsz * (self.accum + 1)
        step, sync = app.step_time(parts, self.atomic_bsz)
        sqr, var = app.grad_stats(batch, self.epoch)
        gain = (var + sqr) / (var / (batch / app.init_batch_size) + sqr)
        self.grad = (sqr, var)
        self.profile.setdefault((nodes, replicas, self.atomic_bsz), (step, sync))
        return gain / (step + (step - sync) * self.accum)

    def advance(self, now: float, seconds: float, segments: list | None = None) -> None:
        """Run ``seconds`` from ``now`` on the current placement (module docstring); each stretch of constant speed
        (the restart delay, an epoch's part) is appended to ``segments`` if given, as (start, end, progress)."""
        if not self.placement or self.done:
            return
        gpus = sum(self.placement)
        delay = min(self.rescale_s, seconds)
        if segments is not None and delay > 0:
            segments.append((now, now + delay, 0.0))
        self.rescale_s -= delay
        self.attained_gpu_s += delay * gpus
        self.held_s += delay
        self.delay_s += delay
        clock, seconds = now + delay, seconds - delay
        app = self.app
        while seconds > 0 and not self.done:
            goodput = self.goodput()
            boundary = app.progress(self.epoch + 1)
            before = self.progress
            if self.progress + goodput * seconds < boundary:
                self.progress += goodput * seconds
                used = seconds
            else:
                self.epoch += 1
                used = round(float((boundary - self.progress) / goodput))
                if self.epoch > self.last_epoch:
                    self.completion_s = clock + used
                self.progress = boundary
            if segments is not None:
                segments.append((clock, clock + used, self.progress - before))
            clock += used
            seconds -= used
            self.attained_gpu_s += used * gpus
            self.held_s += used
            self.busy_s += used
            self.rebatch()


def read_workload(path: str | os.PathLike) -> pd.DataFrame:
    """One of Pollux's workload files: at least one job, ``time`` a number >= 0 (seconds), ``num_replicas`` and
    ``batch_size`` integers >= 1, each ``name`` once (``ValueError``: one line naming the file, and the row and field
    of a bad value; rows count from 1 after the header)."""
    path = Path(path)
    frame = read_table(path, WORKLOAD_COLUMNS)
    if frame.empty:
        raise ValueError(f"{path}: no jobs (only a header)")
    for col in ("time", "num_replicas", "batch_size"):
        values = pd.to_numeric(frame[col], errors="coerce")
        whole = "" if col == "time" else "an integer"
        bad = values.isna() | (values < (0 if col == "time" else 1)) | (bool(whole) & (values != values.round()))
        if (rows := np.flatnonzero(bad)).size:
            raise ValueError(f"{path}: row {int(rows[0]) + 1}: field {col!r} must be {whole or 'a number'} >= "
                             f"{0 if col == 'time' else 1}, got {frame[col].tolist()[rows[0]]!r}")
    if (again := np.flatnonzero(frame["name"].astype(str).duplicated())).size:
        row = int(again[0])
        name = str(frame["name"].iloc[row])
        first = int(np.flatnonzero(frame["name"].astype(str) == name)[0])
        raise ValueError(f"{path}: row {row + 1}: field 'name': {name!r} repeats row {first + 1}'s (each job "
                         "needs its own name)")
    return frame


def workload_files(spec: str | os.PathLike | float, root: str | os.PathLike | None = None) -> tuple[float, list[Path]]:
    """(job load, workload files) of ``spec``: one of :data:`LOADS` (its folder in Pollux's simulator folder) or a
    folder of workload files (load 1.0 unless the folder's name ends in ``-<load>``). Files in name order by their
    number (``workload-2`` before ``workload-10``)."""
    try:
        load = float(spec)
    except (TypeError, ValueError):
        load = None
    if load is not None:
        if load not in LOADS:
            raise ValueError(f"--workloads: job load {spec} is not one of Pollux's ({', '.join(map(str, LOADS))})")
        folder = pollux_dir(root) / LOADS[load]
    else:
        folder = Path(spec)
        tail = folder.name.rsplit("-", 1)
        try:
            load = float(tail[1]) if len(tail) == 2 else 1.0
        except ValueError:
            load = 1.0
    files = sorted(folder.glob("*.csv"), key=lambda p: (len(p.stem), p.stem))
    if not files:
        raise ValueError(f"--workloads: no workload files (*.csv) in {folder}")
    return load, files
