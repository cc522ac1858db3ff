"""Pollux's application traces: measured step times by placement and batch size, and validation curves by epoch.

Pollux's simulator (``petuum/adaptdl``, branch ``osdi21-artifact``, commit ``c793c708``, ``simulator/``, Apache-2.0)
models six training jobs from measurements kept in ``traces/<application>/``:

* ``placements.csv`` (``placement, local_bsz, step_time, sync_time``): seconds per step (and of it, gradient
  synchronization) for a placement written as digits, one per node, each the replicas (GPUs) there (``244`` = 2 + 4
  + 4 GPUs on 3 nodes), at a local batch size;
* ``scalability.csv`` (``num_nodes, num_replicas, local_bsz, step_time, sync_time``): more (larger) configurations;
* ``validation-<batch size>.csv`` (``progress, iteration, metric, grad_sqr, grad_var``): per epoch of a run at that
  total batch size, the progress and iterations done after the epoch and the gradient statistics during it.

:class:`Application` answers what the simulator asks (:meth:`~Application.step_time`, :meth:`~Application.grad_stats`,
:meth:`~Application.progress`, :meth:`~Application.iterations`) with the same interpolations as its
``applications.py``: linear in the local batch size within a measured placement, else linear over the Delaunay
tessellation of (nodes, replicas, local batch size) of the per-configuration means plus the scalability rows (scipy's
``LinearNDInterpolator``, the points in the simulator's order); linear in the batch size between validated batch
sizes. Answers are cached per argument, as there.

The traces are not part of fgdopt: :func:`find_pollux` finds the simulator's folder (:data:`POLLUX`:
``$FGDOPT_POLLUX``, else ``~/.cache/fgdopt/pollux``) and :func:`load_applications` reads it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.datasets import Dataset, find, require, verify

COMMIT = "c793c708"
"""The commit of ``petuum/adaptdl`` (branch ``osdi21-artifact``) whose simulator this module follows."""

MAX_EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}
"""Epochs each application trains for (its completion epoch is the last, as no target metric is set)."""
MAX_LOCAL_BSZ = {"yolov3": 8}
"""Largest local batch size where it is not the largest measured one."""
TRACE_FILES = ("placements.csv", "scalability.csv")


ENV = "FGDOPT_POLLUX"
"""Environment variable naming the folder of Pollux's simulator (the one holding ``traces/`` and ``workloads/``)."""
POLLUX = Dataset(
    "pollux", ENV, "traces/bert/placements.csv", "Pollux's simulator folder",
    f"git clone https://github.com/petuum/adaptdl ~/.cache/fgdopt/adaptdl && git -C ~/.cache/fgdopt/adaptdl checkout "
    f"{COMMIT} && ln -s ~/.cache/fgdopt/adaptdl/simulator ~/.cache/fgdopt/pollux",
    {f"traces/{app}/{name}": digest for app, pair in {
        "bert": ("982811b611bc8447a078289939a2ccafc1f76c06e1e8ebcc4f4866a8e8fcdc0f",
                 "d3fac874d45f501b8126cd1a5238f9f53eec4a1ac17cc1a5133f1a17fc891943"),
        "cifar10": ("e77d1d8781e2e48c3952580bdf705f3be4f27cbbdcd0a2087eb152224a271b6b",
                    "d4bd0dd8ab0df8ce76bbd788b210637dd204937cd4a18f112577f2a812634152"),
        "deepspeech2": ("0908c53bfc20123ad60ad6c4984cfcdf53a623773f4e44e9f01d58305e5379b7",
                        "d49ed2ecb5f3b3f1204ef2200eb8a0f36e373830ae54833e2318085f7d237316"),
        "imagenet": ("ac3d88937f40680c367ec83c7610eda088b8d60806e15cf3a4699fa1d15cb1e8",
                     "ca4970f3461c816237daaa4f37635cf07e78ee7a78df87788543b6e7b094e681"),
        "ncf": ("012f861bd2acc57f5f7d09c7878082905ba0150660b9f5aeae9291d025527874",
                "2c773498098fbaedbbb90d21b1b765876896b7ec0a37b543bbdcbf0ef7f066a4"),
        "yolov3": ("6ffceb8996e3fd57e47e550fdffc21eec7d7e34de1d806d8b3568734eaec0013",
                   "feb460a4afaa48073fbd3387b7aa610b414166b0e68ff66d4374a73ed4b930bc"),
    }.items() for name, digest in zip(TRACE_FILES, pair, strict=True)})
"""Pollux's simulator folder as a data set (:mod:`fgdopt.datasets`): ``$FGDOPT_POLLUX``, else
``~/.cache/fgdopt/pollux``; the SHA-256 of the application traces at :data:`COMMIT` are pinned."""


def find_pollux() -> Path | None:
    """The simulator's folder, ``$FGDOPT_POLLUX`` else ``~/.cache/fgdopt/pollux``, if it holds the traces
    (:func:`fgdopt.datasets.find`)."""
    return find(POLLUX)


def pollux_dir(path: str | os.PathLike | None = None) -> Path:
    """``path`` or :func:`find_pollux`'s folder, its traces checked against the pinned SHA-256.

    Raises
    ------
    DataNotFound : one line naming the variable to set and the command that fetches it.
    ChecksumMismatch : one line naming the file whose digest is not the pinned one.
    """
    found = require(POLLUX, path)
    verify(POLLUX, found)
    return found


def read_table(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """A CSV file with at least ``columns`` (``ValueError`` naming the file otherwise)."""
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read: {exc}") from None
    if missing := [c for c in columns if c not in frame.columns]:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    return frame


def _lerp(x: np.ndarray, y: np.ndarray, at: float) -> np.ndarray:
    """Linear interpolation of rows ``y`` over sorted ``x`` at ``at`` as scipy's ``interp1d`` computes it (the
    segment found by a left search, so a breakpoint is reached from the segment below it)."""
    hi = int(np.clip(np.searchsorted(x, at, side="left"), 1, len(x) - 1))
    lo = hi - 1
    if not x[lo] <= at <= x[hi]:
        raise ValueError(f"local batch size {at} outside the measured range [{x[0]}, {x[-1]}]")
    slope = (y[hi] - y[lo]) / (x[hi] - x[lo])
    return slope * (at - x[lo]) + y[lo]


@dataclass(eq=False)
class Application:
    """One of Pollux's applications (module docstring): its measurements and the simulator's interpolations.

    Attributes
    ----------
    name : the application (its trace folder's name).
    validation : ``{batch size: DataFrame}`` in increasing batch size, one row per epoch (columns ``progress``,
        ``iteration``, ``metric``, ``grad_sqr``, ``grad_var``).
    placements, scalability : the step-time measurements (seconds).
    init_batch_size, max_batch_size : the smallest and largest validated total batch sizes (samples).
    min_local_bsz, max_local_bsz : the range of local (per-GPU) batch sizes (samples).
    max_epochs : epochs to train.
    """

    name: str
    validation: dict[int, pd.DataFrame]
    placements: pd.DataFrame
    scalability: pd.DataFrame
    max_epochs: int
    max_local_bsz: int
    init_batch_size: int = 0
    max_batch_size: int = 0
    min_local_bsz: int = 0
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.validation = dict(sorted(self.validation.items()))
        self.init_batch_size, self.max_batch_size = min(self.validation), max(self.validation)
        self.min_local_bsz = int(self.placements.local_bsz.min())
        self._sizes = np.array(list(self.validation), dtype=np.float64)
        self._curves = {k: {c: v[c].to_numpy(np.float64) for c in ("progress", "iteration", "grad_sqr", "grad_var")}
                        for k, v in self.validation.items()}
        self._by_id = {}
        for pid, rows in self.placements.groupby("placement", sort=False):
            rows = rows.sort_values("local_bsz", kind="stable")
            self._by_id[int(pid)] = (rows.local_bsz.to_numpy(np.float64),
                                     rows[["step_time", "sync_time"]].to_numpy(np.float64))
        self._nd = None

    @classmethod
    def load(cls, folder: str | os.PathLike, max_epochs: int | None = None,
             max_local_bsz: int | None = None) -> Application:
        """Read one application's trace folder (``ValueError`` naming the file on a bad or missing one)."""
        folder = Path(folder)
        validation = {}
        for path in folder.glob("validation-*.csv"):
            try:
                size = int(path.stem.split("-")[-1])
            except ValueError:
                raise ValueError(f"{path}: the batch size in the file name is not an integer") from None
            validation[size] = read_table(path, ("progress", "iteration", "metric", "grad_sqr", "grad_var"))
        if not validation:
            raise ValueError(f"{folder}: no validation-<batch size>.csv")
        placements = read_table(folder / "placements.csv", ("placement", "local_bsz", "step_time", "sync_time"))
        placements["num_nodes"] = placements.placement.map(lambda p: len(str(p)))
        placements["num_replicas"] = placements.placement.map(lambda p: sum(map(int, str(p))))
        scalability = read_table(folder / "scalability.csv",
                            ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"))
        epochs = max_epochs or min(map(len, validation.values()))
        return cls(folder.name, validation, placements, scalability, epochs,
                   max_local_bsz or int(placements.local_bsz.max()))

    # -- validation curves ------------------------------------------------------------------------------------------

    def _bracket(self, batch_size: float) -> tuple[int, int]:
        """The validated batch sizes just below and above ``batch_size`` (equal when it is one)."""
        sizes = self._sizes
        if not sizes[0] <= batch_size <= sizes[-1]:
            raise ValueError(f"{self.name}: batch size {batch_size} outside the validated range "
                             f"[{int(sizes[0])}, {int(sizes[-1])}]")
        hi = int(np.searchsorted(sizes, batch_size, side="left"))
        lo = hi if sizes[hi] == batch_size else hi - 1
        return int(sizes[lo]), int(sizes[hi])

    def _mix(self, batch_size: float, column: str, row: int) -> float:
        lo, hi = self._bracket(batch_size)
        a, b = self._curves[lo][column][row], self._curves[hi][column][row]
        if lo == hi:
            return a
        return ((batch_size - lo) * b + (hi - batch_size) * a) / (hi - lo)

    def progress(self, epoch: int) -> float:
        """Progress (the simulator's unit: iterations at the initial batch size, scaled by statistical gain) when
        ``epoch`` epochs are done: the least over the validated batch sizes."""
        key = ("progress", epoch)
        if key not in self._cache:
            self._cache[key] = 0.0 if epoch == 0 else min(c["progress"][epoch - 1] for c in self._curves.values())
        return self._cache[key]

    def completion_epoch(self, batch_size: float) -> int:
        """The epoch after which the job is done (no target metric: the last)."""
        return self.max_epochs - 1

    def iterations(self, batch_size: float, epoch: int) -> float:
        """Iterations done after ``epoch`` epochs at ``batch_size`` (interpolated between validated sizes)."""
        key = ("iteration", batch_size, epoch)
        if key not in self._cache:
            self._cache[key] = self._mix(batch_size, "iteration", epoch)
        return self._cache[key]

    def grad_stats(self, batch_size: float, epoch: int) -> tuple[float, float]:
        """(gradient square, gradient variance) during ``epoch`` at ``batch_size``."""
        key = ("grad", batch_size, epoch)
        if key not in self._cache:
            self._cache[key] = (self._mix(batch_size, "grad_sqr", epoch), self._mix(batch_size, "grad_var", epoch))
        return self._cache[key]

    # -- throughput -------------------------------------------------------------------------------------------------

    def step_time(self, placement: tuple[int, ...], local_bsz: float) -> tuple[float, float]:
        """(step time, sync time) in seconds of one step at ``local_bsz`` on ``placement`` (replicas per node; the
        zero entries are dropped; the placement is read as its lexicographically smallest rotation)."""
        key = (placement, local_bsz)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        parts = tuple(p for p in placement if p)
        canon = min(parts[i:] + parts[:i] for i in range(len(parts)))
        pid = int("".join(map(str, canon)))
        if pid in self._by_id:
            xs, ys = self._by_id[pid]
            out = _lerp(xs, ys, float(local_bsz))
        else:
            out = self._tessellation()([min(len(canon), 16), sum(canon), local_bsz])[0]
        if not np.isfinite(out).all():
            raise ValueError(f"{self.name}: no throughput for placement {placement} at local batch size {local_bsz}")
        self._cache[key] = hit = (float(out[0]), float(out[1]))
        return hit

    def _tessellation(self):
        if self._nd is None:
            from scipy.interpolate import LinearNDInterpolator

            xs, ys = ["num_nodes", "num_replicas", "local_bsz"], ["step_time", "sync_time"]
            means = self.placements[xs + ys].groupby(xs, as_index=False).mean()
            points = pd.concat([means, self.scalability[xs + ys]], ignore_index=True)
            self._nd = LinearNDInterpolator(points[xs].to_numpy(np.float64), points[ys].to_numpy(np.float64))
        return self._nd

    def fixed_batch(self, batch_size: int, replicas: int, one_replica_accum: bool = False) -> tuple[int, int]:
        """(atomic batch size, accumulation steps) that run ``batch_size`` on ``replicas`` GPUs (Pollux's
        ``update_local_bsz`` for a target batch size): the local batch rounded up, split in as few steps as keep
        each within ``max_local_bsz``; one replica with a batch above the initial one accumulates at least once
        (``one_replica_accum`` forces that for every batch size, as Optimus' predictor does); capped so that the
        steps hold at most ``max_batch_size``."""
        local = math.ceil(batch_size / replicas - 1e-8)
        accum = math.ceil(local / self.max_local_bsz - 1e-8) - 1
        if replicas == 1 and (one_replica_accum or batch_size > self.init_batch_size):
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        return min(atomic, int(self.max_batch_size / (replicas * (accum + 1)))), accum


def load_applications(path: str | os.PathLike | None = None) -> dict[str, Application]:
    """Pollux's six applications from the simulator's folder (:func:`pollux_dir`), by name."""
    traces = pollux_dir(path) / "traces"
    return {name: Application.load(traces / name, epochs, MAX_LOCAL_BSZ.get(name))
            for name, epochs in MAX_EPOCHS.items()}
