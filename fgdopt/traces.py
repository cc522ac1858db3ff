"""The Alibaba PAI GPU cluster trace 2023 ("openb"): locate, download, verify and load it.

The CSVs are never part of this repository. They are looked up in, in this order: the ``data_dir``
argument, the ``FGDOPT_DATA`` environment variable, ``~/.cache/fgdopt/openb``. Fetch them with::

    python -m fgdopt.traces download

which downloads ``alibaba/clusterdata`` / ``cluster-trace-gpu-v2023/csv`` at a pinned commit and
checks every file's SHA-256.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sys
import tempfile
import urllib.request
from contextvars import ContextVar
from pathlib import Path

import pandas as pd

from fgdopt.datasets import Dataset, find, folder, sha256_of
from fgdopt.model import NODE_FIELDS, TASK_FIELDS, Cluster, TaskSet

COMMIT = "7a6c496e4f4b6ce6150be8f881cb051bf2abff42"
BASE_URL = f"https://raw.githubusercontent.com/alibaba/clusterdata/{COMMIT}/cluster-trace-gpu-v2023/csv"
NODE_FILE = "openb_node_list_gpu_node.csv"

VARIANTS = (
    "default",
    "cpu0", "cpu037", "cpu050", "cpu072", "cpu100", "cpu200", "cpu235", "cpu250", "cpu300",
    "gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100",
    "multigpu20", "multigpu30", "multigpu40", "multigpu50",
    "gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
)
"""The 24 pod lists of openb (``openb_pod_list_<variant>.csv``)."""

TIMED_VARIANTS = tuple(v for v in VARIANTS if not v.startswith("multigpu"))
"""The variants whose pod list carries each pod's times (``creation_time``, ``deletion_time``, ``scheduled_time``):
the streams of the time engine come from these (the ``multigpu*`` lists give shapes only)."""


def check_timed(*variants: str) -> None:
    """Raise ``ValueError`` (one line naming them) if some of ``variants`` have no pod times
    (:data:`TIMED_VARIANTS`): the rule of every stream over time.

    Examples
    --------
    >>> check_timed("default", "cpu050")
    >>> check_timed("default", "multigpu20")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: openb multigpu20: no pod times (the pod list gives shapes only); a stream over time needs all or ...
    """
    if untimed := [v for v in variants if v in VARIANTS and v not in TIMED_VARIANTS]:
        raise ValueError(f"openb {', '.join(untimed)}: no pod times (the pod list gives shapes only); a stream over "
                         f"time needs all or one of {', '.join(TIMED_VARIANTS)}")

SHA256 = {
    "openb_node_list_all_node.csv": "5a85c2af79c66a1efff8bbcbda430400aae56d8431370d738480967e1a9c6b15",
    "openb_node_list_gpu_node.csv": "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5",
    "openb_pod_list_cpu0.csv": "1bc3fd9ee5c1468ccd018f624d9222746e08d59f963f66b925804734271c0eaa",
    "openb_pod_list_cpu037.csv": "8ed554026d041b15ff21ddc104d9a21dbd9a93c496262fa23ef7b5be27e220dc",
    "openb_pod_list_cpu050.csv": "747f43247bffc2b0bb081d7f61f0705ca8d390dafc0b647e642c92f3baf3ba1e",
    "openb_pod_list_cpu072.csv": "f8a2b031461b54d7b9f06d55473c2371eb3357b78a255c646bdca5e0833a8a2f",
    "openb_pod_list_cpu100.csv": "bec1c33fbdde61fd463877534ec79b393aec73e1cbb22d55fab9f166ac480982",
    "openb_pod_list_cpu200.csv": "b7e9d8a1a601da84d6e0b4110b19ef5001be5e4796d33e7b82f166ba95161f87",
    "openb_pod_list_cpu235.csv": "87bebd4d012faa8305ce1fd82737f51cf03361aac28b75d42e34aa656d7f4ee0",
    "openb_pod_list_cpu250.csv": "134c21ff96d57533df8a37b67632972884fec9396e77cd0898ddc370cc8e607d",
    "openb_pod_list_cpu300.csv": "76528825f40ee662cb098b3b6e683c1efd9f87a0c8af7e628df1f32c639636d1",
    "openb_pod_list_default.csv": "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8",
    "openb_pod_list_gpushare100.csv": "12dbc07d6a49bf8641e2275a2ff5bf7be74b5df7d148d531e135b140b95f9a3d",
    "openb_pod_list_gpushare20.csv": "9be2d0efb52e242c32e23dd184cc5fcc1983478c6c9c02cbb6b4b62925c0ffcd",
    "openb_pod_list_gpushare40.csv": "d83ce79a4eb6987524bedbb0c65e41aed3a36bf6c1b78b86234c3687a07e1d40",
    "openb_pod_list_gpushare60.csv": "d31809628128a1f24491086eda4af3e23882b9213d3ef57a56ee2d1af69492fe",
    "openb_pod_list_gpushare80.csv": "88b6649369ced40d0fde287d2498ea61ff4b05fccba8bdc95daf6042f2f8431e",
    "openb_pod_list_gpuspec05.csv": "8f1c0ef7e4e511e982bd2818898ba22ee6d273bf5fce124b7ace285b5928cf4e",
    "openb_pod_list_gpuspec10.csv": "2dc7e4cb9480484f08539720b433a9ec9ab5d76b396f3f7557c53a2ff78a7611",
    "openb_pod_list_gpuspec20.csv": "6b9b89ab8913c1c074e994e98f548cf1a872fc5f76f2442ca8cd514a478b00a9",
    "openb_pod_list_gpuspec25.csv": "9d030679a2ccd7e27a7ec9ff15baff34480d22a0012515691fc187e3f35ee68c",
    "openb_pod_list_gpuspec33.csv": "eca4f746db1e5b25864ad021b55ece3943e101a3ebd4574d09dcb95c46117652",
    "openb_pod_list_multigpu20.csv": "d9ec6f6c74fb980cc0b81239470c6353fceea077ea9abd610003b604c7cc2b01",
    "openb_pod_list_multigpu30.csv": "a5e479c6444b1d83eef848159cf00c3cfa13441b2d1e2c113c391b91f1cc5b11",
    "openb_pod_list_multigpu40.csv": "32c9e8731ca07ef96108aa65f2a289bb9aacb47f642ed9e3789f99b242df60eb",
    "openb_pod_list_multigpu50.csv": "206f2f5959db30ecb7c44e7f13197c8ec50b7a35558ad3777cc3662ef0fe5373",
}
"""SHA-256 of every CSV at :data:`COMMIT`."""

POD_EXTRA_COLUMNS = ("name", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
NODE_EXTRA_COLUMNS = ("sn",)


def pod_file(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"unknown openb variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    return f"openb_pod_list_{variant}.csv"


OPENB = Dataset("openb", "FGDOPT_DATA", NODE_FILE, "the openb trace", "python -m fgdopt.traces download", SHA256)
"""The openb trace as a data set (:mod:`fgdopt.datasets`): ``$FGDOPT_DATA``, else ``~/.cache/fgdopt/openb``."""


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The openb directory: ``path``, else ``$FGDOPT_DATA``, else ``~/.cache/fgdopt/openb``
    (:func:`fgdopt.datasets.folder`)."""
    return folder(OPENB, path)


def find_openb() -> Path | None:
    """The openb folder as the tests and the notebooks look it up: :func:`data_dir` if it holds the node list, else
    ``None`` (:func:`fgdopt.datasets.find`)."""
    return find(OPENB)


def check_csv_rows(path: str | os.PathLike, what: str = "row") -> int:
    """Check that every row of the CSV file ``path`` has as many fields as its header (a file cut off, a stray or
    a missing comma); returns the number of rows (blank lines are skipped, as pandas does).

    Raises
    ------
    ValueError : one line naming the file, the row (0-based, as the ``what`` rows of the error messages of the
        readers; and its line number) and the field counts; or an empty file (no header).
    """
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if not header:
                raise ValueError(f"{path}: empty file; expected a header line and rows")
            rows = 0
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    more = "more" if len(row) > len(header) else "fewer"
                    raise ValueError(f"{path}: {what} {rows} (line {reader.line_num}) has {len(row)} fields, "
                                     f"{more} than the {len(header)} of the header ({','.join(header)})")
                rows += 1
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: not a CSV file ({exc})") from None
    return rows


def _read_csv(path: Path, required: tuple[str, ...], extra: tuple[str, ...]) -> pd.DataFrame:
    """Read a trace CSV, checking its columns; an absent ``gpu_spec`` column (multigpu*) means "any"."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found; run `python -m fgdopt.traces download` or set FGDOPT_DATA to the openb folder")
    check_csv_rows(path)
    frame = pd.read_csv(path, keep_default_na=False, dtype={"gpu_spec": str, "model": str})
    unknown = set(frame.columns) - set(required) - set(extra)
    if "gpu_spec" in required and "gpu_spec" not in frame.columns:
        frame["gpu_spec"] = ""
    missing = set(required) - set(frame.columns)
    if unknown or missing:
        wrong = [f"{what} column{'s' * (len(cols) > 1)} {', '.join(sorted(cols))}"
                 for what, cols in (("unknown", unknown), ("missing", missing)) if cols]
        raise ValueError(f"{path.name}: {' and '.join(wrong)}; the file needs {', '.join(required)}")
    return frame


def trace_files(variant: str = "default", data_dir_: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """The two CSVs :func:`load_openb` reads for ``variant``: the node list and the pod list."""
    folder = data_dir(data_dir_)
    return folder / NODE_FILE, folder / pod_file(variant)


def is_published(variant: str = "default", data_dir_: str | os.PathLike | None = None) -> bool:
    """Whether the two CSVs of ``variant`` (:func:`trace_files`) are the published ones (their :data:`SHA256`),
    not a user's own files in the openb format: what the paper's figures may be compared with."""
    return all(path.is_file() and sha256_of(path) == SHA256[path.name] for path in trace_files(variant, data_dir_))


def read_pods(variant: str = "default", data_dir_: str | os.PathLike | None = None) -> pd.DataFrame:
    """The raw pod list of ``variant`` as a DataFrame (all trace columns, including phase and times)."""
    return _read_csv(data_dir(data_dir_) / pod_file(variant), TASK_FIELDS, POD_EXTRA_COLUMNS)


def read_nodes(data_dir_: str | os.PathLike | None = None) -> pd.DataFrame:
    """The raw GPU node list as a DataFrame."""
    return _read_csv(data_dir(data_dir_) / NODE_FILE, NODE_FIELDS, NODE_EXTRA_COLUMNS)


def load_openb(variant: str = "default", data_dir: str | os.PathLike | None = None) -> tuple[Cluster, TaskSet]:
    """Load the openb GPU nodes and the pod list ``variant`` as a (Cluster, TaskSet).

    Parameters
    ----------
    variant : one of :data:`VARIANTS` (``default``, ``cpu*``, ``gpushare*``, ``multigpu*``, ``gpuspec*``).
    data_dir : folder of the CSVs (default: ``$FGDOPT_DATA`` or ``~/.cache/fgdopt/openb``).

    Raises
    ------
    ValueError : unknown variant, unknown / missing columns, invalid values (row and field named), a pod list of no
        pods or a node list of no GPUs (every study measures against the GPU capacity; the file named).
    FileNotFoundError : the CSV is not there (the message says how to fetch it).

    Examples
    --------
    >>> cluster, tasks = load_openb()  # doctest: +SKIP
    >>> cluster.n_nodes, cluster.total_gpus, len(tasks)  # doctest: +SKIP
    (1213, 6212, 8152)
    """
    pods = read_pods(variant, data_dir)
    nodes = read_nodes(data_dir)
    node_path, pod_path = trace_files(variant, data_dir)
    try:
        cluster = Cluster(nodes["cpu_milli"].to_numpy(), nodes["memory_mib"].to_numpy(), nodes["gpu"].to_numpy(),
                          nodes["model"].to_numpy(), names=tuple(nodes["sn"]) if "sn" in nodes else ())
    except ValueError as exc:
        raise ValueError(f"{node_path}: {exc}") from None
    try:
        tasks = TaskSet(pods["cpu_milli"].to_numpy(), pods["memory_mib"].to_numpy(), pods["num_gpu"].to_numpy(),
                        pods["gpu_milli"].to_numpy(), pods["gpu_spec"].to_numpy(),
                        names=tuple(pods["name"]) if "name" in pods else ())
    except ValueError as exc:
        raise ValueError(f"{pod_path}: {exc}") from None
    if len(tasks) == 0:
        raise ValueError(f"{pod_path}: no pods (a header only); a pod list needs at least one")
    if cluster.total_gpus == 0:
        raise ValueError(f"{node_path}: no GPUs ({'no nodes' if len(cluster) == 0 else 'every node has gpu 0'}); "
                         "the node list needs a GPU (the studies measure against the GPU capacity)")
    return cluster, tasks


class DownloadError(OSError):
    """The trace could not be fetched; the message (one line) names the URL tried and how to place the files by
    hand (``FGDOPT_DATA``)."""


def fetch_file(url: str, path: Path, sha256: str | None, hint: str) -> Path:
    """Download ``url`` to ``path`` through a temporary file beside it, keeping it only if its SHA-256 is ``sha256``
    (None: a source that publishes no checksum; the file is kept as fetched).

    Raises
    ------
    DownloadError : ``url`` could not be fetched (no network, HTTP error); the one-line message names the URL,
        the reason and then ``hint`` (how to place the file by hand). Nothing partial is left behind.
    ValueError : the file's checksum is wrong (it is deleted).
    """
    try:
        with (tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".part") as tmp,
              urllib.request.urlopen(url, timeout=60) as response):
            shutil.copyfileobj(response, tmp)
    except OSError as exc:          # urllib.error.URLError (no network, DNS, HTTP error), timeouts
        if "tmp" in locals():
            Path(tmp.name).unlink(missing_ok=True)
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"could not download {url} ({reason}); {hint}") from exc
    got = sha256_of(Path(tmp.name))
    if sha256 is not None and got != sha256:
        os.unlink(tmp.name)
        raise ValueError(f"{path.name}: checksum mismatch (got {got}, expected {sha256})")
    os.replace(tmp.name, path)
    return path


def download(dest: str | os.PathLike | None = None, base_url: str = BASE_URL, files: list[str] | None = None,
             progress: bool = True) -> Path:
    """Fetch the openb CSVs into ``dest`` (default :func:`data_dir`), verifying each SHA-256.

    Files already present with the right checksum are skipped.

    Parameters
    ----------
    dest : target folder (default: ``$FGDOPT_DATA``, else ``~/.cache/fgdopt/openb``).
    base_url : where the CSVs are served (default: GitHub ``alibaba/clusterdata`` at the pinned commit).
    files : the file names to fetch (default: every file of the trace).
    progress : show a progress bar on stderr.

    Returns
    -------
    The folder holding the files.

    Raises
    ------
    DownloadError : a file could not be fetched (no network, HTTP error); nothing partial is left behind.
    ValueError : an unknown file name, or a file with a wrong checksum (rejected, not left behind).
    """
    from tqdm import tqdm

    target = data_dir(dest)
    target.mkdir(parents=True, exist_ok=True)
    names = files or sorted(SHA256)
    for name in tqdm(names, desc="openb", unit="file", disable=not progress, file=sys.stderr):
        if name not in SHA256:
            raise ValueError(f"unknown openb file {name!r}")
        path = target / name
        if path.is_file() and sha256_of(path) == SHA256[name]:
            continue
        fetch_file(f"{base_url}/{name}", path, SHA256[name],
                   f"place the openb CSVs ({', '.join(sorted(SHA256)[:2])}, ...) by hand in a folder and point "
                   f"FGDOPT_DATA at it (export FGDOPT_DATA=/path/to/openb), or in {target}; "
                   "`python -m fgdopt.traces verify` checks them")
    return target


COMMAND: ContextVar[tuple[str, str] | None] = ContextVar("fgdopt_command", default=None)
"""While a dispatcher runs a module's command (the ``fgdopt`` command, :mod:`experiments.cli`): the module's own
name for it and the command as typed, e.g. ``("python -m experiments.timeline", "fgdopt timeline")``. The
:class:`OneLineParser` built meanwhile under the first name takes the second, so its errors name what was typed."""


def command_name(prog: str) -> str:
    """``prog`` (``python -m MODULE``), or the command as typed when a dispatcher runs it (:data:`COMMAND`)."""
    typed = COMMAND.get()
    return typed[1] if typed is not None and typed[0] == prog else prog


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors are one line, ``PROG: error: MESSAGE`` on stderr, exit 2
    (argparse's format without the usage lines; ``--help`` shows them): the parser of every fgdopt command. Its
    ``prog`` is the command as typed when a dispatcher runs it (:data:`COMMAND`)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.prog = command_name(self.prog)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def check_dest(parser: argparse.ArgumentParser, dest: str | None) -> None:
    """Stop (``parser.error``) when the ``--dest`` folder of a download is a file."""
    if dest is not None and Path(dest).exists() and not Path(dest).is_dir():
        parser.error(f"argument --dest: {dest!r} is a file; expected a folder")


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m fgdopt.traces", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dl = sub.add_parser("download", help="fetch the openb CSVs at the pinned commit")
    dl.add_argument("--dest", default=None, help="target folder (default: $FGDOPT_DATA or ~/.cache/fgdopt/openb)")
    dl.add_argument("--base-url", default=BASE_URL, help="where the CSVs are served (default: GitHub, pinned)")
    sub.add_parser("verify", help="check the SHA-256 of the local CSVs")
    args = parser.parse_args(argv)
    if args.command == "download":
        check_dest(parser, args.dest)
        try:
            print(download(args.dest, args.base_url))
        except DownloadError as exc:
            print(f"{parser.prog} download: {exc}", file=sys.stderr)
            return 2
        return 0
    bad = 0
    for name, digest in sorted(SHA256.items()):
        path = data_dir() / name
        status = "missing" if not path.is_file() else ("ok" if sha256_of(path) == digest else "MISMATCH")
        bad += status != "ok"
        print(f"{status:8} {name}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
