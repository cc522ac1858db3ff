"""Gavel's measured throughputs (OSDI'20): locate, download, verify and load them as a frozen table.

The table is the one Gavel's simulator reads (``scheduler/simulation_throughputs.json`` of
``stanford-futuredata/gavel`` at :data:`COMMIT`, MIT licence): 26 job types at scale factors 1, 2, 4 and 8
GPUs on V100, P100 and K80, each job's throughput in steps per second alone on its GPUs (``isolated``) and
beside one other job type of the same scale factor on the same GPUs (``colocated``, space sharing). The file
is never part of this repository. It is looked up in, in this order: the ``path`` argument, the
``FGDOPT_GAVEL`` environment variable, ``~/.cache/fgdopt/gavel`` (:func:`gavel_dir`). Fetch it with::

    python -m fgdopt.hetero download

which downloads it at the pinned commit and checks its SHA-256 (:data:`SHA256`).

File layout (Gavel's ``utils.read_all_throughputs_json_v2`` reads the same): top-level keys are worker types
(``v100``, ``p100``, ``k80`` and ``<type>_unconsolidated``, a multi-GPU job whose GPUs sit on several
servers); under each, keys ``"('<job type>', <scale factor>)"``; under those, ``"null"`` is the isolated
throughput and every other key, a co-located job type of the same scale factor, maps to ``[own, other's]``
throughput. A throughput of 0 means the job does not run there (ResNet-50 batch 128 at 2, 4, 8 GPUs on K80).
Pairs that were not measured (a scale factor a job type is not distributed at, six ``k80_unconsolidated``
entries) are NaN in the table.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fgdopt.datasets import Dataset, find, folder, sha256_of
from fgdopt.traces import DownloadError, OneLineParser, check_dest, fetch_file

COMMIT = "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"
FILE = "simulation_throughputs.json"
URL = f"https://raw.githubusercontent.com/stanford-futuredata/gavel/{COMMIT}/scheduler/{FILE}"
SHA256 = "17111f7295f03265fd9e5118d7eba31e3dd9d6e50a2e215c13ad3d3f91f74381"
ENV = "FGDOPT_GAVEL"

JOB_TYPES = (
    *(f"ResNet-18 (batch size {b})" for b in (16, 32, 64, 128, 256)),
    *(f"ResNet-50 (batch size {b})" for b in (16, 32, 64, 128)),
    *(f"Transformer (batch size {b})" for b in (16, 32, 64, 128, 256)),
    *(f"LM (batch size {b})" for b in (5, 10, 20, 40, 80)),
    *(f"Recommendation (batch size {b})" for b in (512, 1024, 2048, 4096, 8192)),
    "A3C",
    "CycleGAN",
)
"""Gavel's 26 job types in the order of its ``scheduler/job_table.py`` ``JobTable`` (the generator draws from it)."""

DISTRIBUTED = tuple(not name.startswith(("Recommendation", "A3C", "CycleGAN")) for name in JOB_TYPES)
"""Per job type: may it run on more than one GPU (``JobTemplate.distributed`` in ``job_table.py``)."""

SCALE_FACTORS = (1, 2, 4, 8)
"""Scale factors (GPUs per job) of the table."""

GPU_TYPES = ("v100", "p100", "k80")
"""The GPU types of Gavel's clusters (consolidated: a job's GPUs on one server)."""


GAVEL = Dataset("gavel", ENV, FILE, "Gavel's throughput table", "python -m fgdopt.hetero download", {FILE: SHA256})
"""Gavel's table as a data set (:mod:`fgdopt.datasets`): ``$FGDOPT_GAVEL``, else ``~/.cache/fgdopt/gavel``."""


def gavel_dir(path: str | os.PathLike | None = None) -> Path:
    """The folder of the table: ``path``, else ``$FGDOPT_GAVEL``, else ``~/.cache/fgdopt/gavel``
    (:func:`fgdopt.datasets.folder`)."""
    return folder(GAVEL, path)


@dataclass(frozen=True, eq=False)
class ThroughputTable:
    """Gavel's measured throughputs, in steps per second, as read-only arrays.

    Attributes
    ----------
    gpu_types : worker types, :data:`GPU_TYPES` first, then the ``*_unconsolidated`` variants of the file.
    isolated : float64 (26, 4, G), throughput (steps/s) of job type ``a`` at scale factor ``SCALE_FACTORS[s]``
        alone on GPU type ``g``: ``isolated[a, s, g]``; NaN where not measured.
    colocated : float64 (26, 26, 4, G, 2), ``colocated[a, b, s, g]`` = (throughput of ``a``, throughput of ``b``)
        in steps/s when ``a`` and ``b`` (both at scale factor ``SCALE_FACTORS[s]``) share the GPUs; NaN where
        not measured.
    source : the file it was read from (None if built in memory).

    Job types are :data:`JOB_TYPES` in that order; scale factors :data:`SCALE_FACTORS`.

    Examples
    --------
    >>> table = load_throughputs()                                   # doctest: +SKIP
    >>> round(table.throughput("ResNet-50 (batch size 64)", 1, "v100"), 2)  # doctest: +SKIP
    4.39
    """

    gpu_types: tuple[str, ...]
    isolated: np.ndarray
    colocated: np.ndarray
    source: Path | None = None

    def __post_init__(self) -> None:
        n, s, g = len(JOB_TYPES), len(SCALE_FACTORS), len(self.gpu_types)
        iso = np.array(self.isolated, dtype=np.float64)
        col = np.array(self.colocated, dtype=np.float64)
        if iso.shape != (n, s, g) or col.shape != (n, n, s, g, 2):
            raise ValueError(f"throughput arrays of shape {iso.shape}, {col.shape}; expected {(n, s, g)}, "
                             f"{(n, n, s, g, 2)}")
        if np.any(iso < 0) or np.any(col < 0):
            raise ValueError("a throughput is negative")
        for arr in (iso, col):
            arr.setflags(write=False)
        object.__setattr__(self, "isolated", iso)
        object.__setattr__(self, "colocated", col)

    @staticmethod
    def _index(job_type: str, scale_factor: int) -> tuple[int, int]:
        try:
            return JOB_TYPES.index(job_type), SCALE_FACTORS.index(int(scale_factor))
        except ValueError:
            raise KeyError(f"unknown job type / scale factor ({job_type!r}, {scale_factor})") from None

    def gpu_index(self, gpu_types) -> np.ndarray:
        """Column of each GPU type name in ``gpu_types`` (KeyError naming an unknown one)."""
        unknown = [t for t in gpu_types if t not in self.gpu_types]
        if unknown:
            raise KeyError(f"unknown GPU type(s) {unknown}; the table has {', '.join(self.gpu_types)}")
        return np.array([self.gpu_types.index(t) for t in gpu_types], dtype=np.int64)

    def throughput(self, job_type: str, scale_factor: int, gpu_type: str) -> float:
        """Steps/s of ``job_type`` at ``scale_factor`` GPUs alone on ``gpu_type`` (NaN if not measured)."""
        a, s = self._index(job_type, scale_factor)
        return float(self.isolated[a, s, self.gpu_index([gpu_type])[0]])

    def pair(self, job_type: str, other: str, scale_factor: int, gpu_type: str) -> tuple[float, float]:
        """(steps/s of ``job_type``, of ``other``) when both, at ``scale_factor`` GPUs, share ``gpu_type`` GPUs."""
        a, s = self._index(job_type, scale_factor)
        b, _ = self._index(other, scale_factor)
        own, theirs = self.colocated[a, b, s, self.gpu_index([gpu_type])[0]]
        return float(own), float(theirs)

    def matrix(self, job_type: np.ndarray, scale_factor: np.ndarray, gpu_types=GPU_TYPES) -> np.ndarray:
        """Isolated throughputs (steps/s) of jobs on GPU types: float64 (n, len(gpu_types)).

        ``job_type`` holds indices into :data:`JOB_TYPES`, ``scale_factor`` GPUs per job (one of
        :data:`SCALE_FACTORS`). A job type not measured at its scale factor raises ``ValueError``.
        """
        job_type = np.asarray(job_type, dtype=np.int64)
        lookup = np.full(max(SCALE_FACTORS) + 1, -1, dtype=np.int64)
        lookup[list(SCALE_FACTORS)] = np.arange(len(SCALE_FACTORS))
        s = lookup[np.asarray(scale_factor, dtype=np.int64)]
        if np.any(s < 0):
            raise ValueError(f"scale factors must be among {SCALE_FACTORS}")
        out = self.isolated[job_type[:, None], s[:, None], self.gpu_index(gpu_types)[None, :]]
        if (bad := np.flatnonzero(np.isnan(out).any(axis=1))).size:
            i = int(bad[0])
            raise ValueError(f"job {i}: {JOB_TYPES[job_type[i]]!r} at scale factor {SCALE_FACTORS[s[i]]} has no "
                             f"measured throughput on {', '.join(gpu_types)}")
        return out

    def __repr__(self) -> str:
        return (f"ThroughputTable({len(JOB_TYPES)} job types x scale factors {SCALE_FACTORS} x "
                f"{', '.join(self.gpu_types)})")


@functools.cache
def _key(text: str) -> tuple[str, int]:
    """``"('ResNet-50 (batch size 64)', 1)"`` -> (job type, scale factor) (a Python tuple literal). Cached: the
    table's 200,000-odd keys are a hundred distinct texts."""
    job_type, scale_factor = ast.literal_eval(text)
    return str(job_type), int(scale_factor)


def read_throughputs(path: str | os.PathLike) -> ThroughputTable:
    """Parse Gavel's ``simulation_throughputs.json`` at ``path`` (module docstring for its layout).

    Raises
    ------
    FileNotFoundError : no such file (the message says how to fetch it).
    ValueError : not JSON (a file cut off), not an object of objects, a key names an unknown job type, scale factor
        or layout, a negative throughput (the file and the key named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run `python -m fgdopt.hetero download` or set "
                                f"{ENV} to the folder of {FILE}")
    try:
        raw = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON (cut off?): {exc}") from None
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise ValueError(f"{path}: expected a JSON object of GPU type -> {{job key: throughputs}}")
    unconsolidated = tuple(f"{g}_unconsolidated" for g in GPU_TYPES)
    extra = [w for w in unconsolidated if w in raw] + sorted(w for w in raw if w not in GPU_TYPES + unconsolidated)
    missing = [w for w in GPU_TYPES if w not in raw]
    if missing:
        raise ValueError(f"{path}: GPU type(s) {missing} missing")
    gpu_types = GPU_TYPES + tuple(extra)
    n, s, g = len(JOB_TYPES), len(SCALE_FACTORS), len(gpu_types)
    iso = np.full((n, s, g), np.nan)
    col = np.full((n, n, s, g, 2), np.nan)
    for k, worker in enumerate(gpu_types):
        for key, entries in raw[worker].items():
            try:
                a, sa = ThroughputTable._index(*_key(key))
                iso[a, sa, k] = float(entries["null"])
                for other, values in entries.items():
                    if other == "null":
                        continue
                    b, sb = ThroughputTable._index(*_key(other))
                    if sb != sa or len(values) != 2:
                        raise ValueError(f"co-located entry {other!r} is not a same-scale pair")
                    col[a, b, sa, k] = values
            except (KeyError, ValueError, SyntaxError, TypeError, AttributeError) as exc:
                raise ValueError(f"{path}: {worker} / {key}: {exc}") from None
    try:
        return ThroughputTable(gpu_types, iso, col, path)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def find_gavel() -> Path | None:
    """The table's folder as the tests, studies and notebooks look it up: :func:`gavel_dir` if it holds the file,
    else ``None`` (:func:`fgdopt.datasets.find`)."""
    return find(GAVEL)


def find_throughputs(path: str | os.PathLike | None = None) -> Path:
    """The table file: in ``path`` if given, else in :func:`find_gavel`'s folder (else where :func:`gavel_dir` says
    it should be, for the error message)."""
    if path is None and (found := find_gavel()) is not None:
        return found / FILE
    return gavel_dir(path) / FILE


def load_throughputs(path: str | os.PathLike | None = None) -> ThroughputTable:
    """Load the table from ``path``, else from :func:`find_gavel`'s folder."""
    return read_throughputs(find_throughputs(path))


def download(dest: str | os.PathLike | None = None, url: str = URL) -> Path:
    """Fetch the table into ``dest`` (default :func:`gavel_dir`), verifying its SHA-256; a verified copy is kept.

    Raises
    ------
    DownloadError : it could not be fetched (one line: the URL, the reason, how to place it by hand).
    ValueError : a wrong checksum (the file is rejected, not left behind).
    """
    target = gavel_dir(dest)
    target.mkdir(parents=True, exist_ok=True)
    path = target / FILE
    if path.is_file() and sha256_of(path) == SHA256:
        return path
    return fetch_file(url, path, SHA256, f"place {FILE} (Gavel, commit {COMMIT[:12]}) by hand in a folder and point "
                                         f"{ENV} at it (export {ENV}=/path/to/gavel), or in {target}; "
                                         "`python -m fgdopt.hetero verify` checks it")


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m fgdopt.hetero", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dl = sub.add_parser("download", help="fetch Gavel's throughput table at the pinned commit")
    dl.add_argument("--dest", default=None, help=f"target folder (default: ${ENV} or ~/.cache/fgdopt/gavel)")
    dl.add_argument("--url", default=URL, help="where the file is served (default: GitHub, pinned)")
    sub.add_parser("verify", help="check the SHA-256 of the local file")
    args = parser.parse_args(argv)
    if args.command == "download":
        check_dest(parser, args.dest)
        try:
            print(download(args.dest, args.url))
        except DownloadError as exc:
            print(f"{parser.prog} download: {exc}", file=sys.stderr)
            return 2
        return 0
    path = find_throughputs()
    status = "missing" if not path.is_file() else ("ok" if sha256_of(path) == SHA256 else "MISMATCH")
    print(f"{status:8} {path}")
    return 0 if status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
