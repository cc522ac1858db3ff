"""Synergy's per-model resource profiles (OSDI'22): a pinned, checksummed copy, or a checkout's model files.

Synergy's simulator (``msr-fiddle/synergy`` at :data:`COMMIT`, ``simulator/models/*.py``, MIT licence) describes
each DNN model by a Python class per GPU count (``res18_1`` = ResNet-18 on 1 GPU). fgdopt keeps all of them in one
small JSON file, ``fgdopt/data/synergy_profiles.json`` (its ``source`` and ``license`` keys carry the repository,
commit and MIT notice), whose SHA-256 is pinned here (:data:`SHA256`). :func:`load_profiles` reads, in this order:
the ``path`` argument, the ``FGDOPT_SYNERGY`` environment variable (a checkout of the repository, its
``simulator/`` or its ``simulator/models/`` folder: the ``*_N.py`` files are parsed without being run), else the
committed file. ``python -m fgdopt.synergy.profiles SRC_MODELS_DIR`` rewrites the committed file from a checkout.

What a profile means (Synergy's ``jobs/job.py``, ``jobs/model.py`` and ``jobs/workload.py``): the ``tput`` matrix
is the model's throughput normalised to its throughput at the GPU-proportional share (3 CPU cores and 62.5 GB per
GPU on Synergy's 8-GPU, 24-core, 500 GB servers); row ``i`` is ``CPU_LEVELS[i]`` CPU cores per GPU, column ``j``
``MEM_LEVELS_GB[j]`` GB of memory per GPU (the 1-GPU files have the five columns; the 2- and 4-GPU files have four,
which fgdopt reads as the last four levels, 62.5 to 250 GB). ``cpus``/``mem_gb`` are the per-GPU demand that
reaches the best throughput, ``speedup`` that throughput (the speed-up over the proportional share), ``iter_time_s``
the seconds per iteration at the proportional share. Synergy's simulator reads only the 1-GPU files (``*_1``) and
uses them for every GPU count (``Model.use_scores_from_tput``); :meth:`ProfileTable.rate` does the same by default.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from fgdopt.datasets import Dataset, folder

COMMIT = "1bb2bed6edc9c5f953d0b7f0a40e4fdad053489c"
REPO = "msr-fiddle/synergy"
ENV = "FGDOPT_SYNERGY"
SYNERGY = Dataset("synergy", ENV, "README.md", "Synergy's checkout",
                  f"git clone https://github.com/{REPO} ~/.cache/fgdopt/synergy && git -C ~/.cache/fgdopt/synergy "
                  f"checkout {COMMIT}")
"""A checkout of Synergy as a data set (:mod:`fgdopt.datasets`); without one, the committed copy of its profiles."""
DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "synergy_profiles.json"
SHA256 = "0e27b3442b6afe6475371bf478a885b24755abf44450e2a821573c0f97c6e80e"
"""SHA-256 of the committed :data:`DATA_FILE`."""

CPU_LEVELS = (1, 2, 3, 4, 5, 6, 9, 12, 24)
"""CPU cores per GPU of the rows of a ``tput`` matrix (Synergy's ``Job.cpu_val``)."""

MEM_LEVELS_GB = (20.83, 62.5, 125.0, 187.5, 250.0)
"""GB of memory per GPU of the columns of a 5-column ``tput`` matrix (Synergy's ``Job.mem_val``)."""

FIELDS = ("cpus", "mem", "speed", "batch", "placement_penalty", "speedup", "iter_time")
"""The scalar attributes every model file sets in ``update_stats`` (besides ``tput``)."""


class ProfileError(ValueError):
    """A profile file that does not parse, or an unknown model; the message is one line naming the file or model."""


@dataclass(frozen=True, eq=False)
class Profile:
    """One model at one GPU count, as Synergy's model file states it.

    Attributes
    ----------
    name : model name without the GPU suffix (``res18``).
    gpus : GPUs the file is for (the ``_N`` suffix).
    cpus : CPU cores per GPU that reach the best throughput (Synergy's ideal CPU demand per GPU).
    mem_gb : GB of DRAM per GPU of the ideal demand.
    storage_mbps : storage bandwidth per GPU of the ideal demand, MB/s (``speed``).
    batch : batch size (samples per iteration).
    placement_penalty : speed factor when the job's GPUs span servers (1 = none).
    speedup : throughput at the ideal demand over throughput at the GPU-proportional share (dimensionless).
    iter_time_s : seconds per iteration at the GPU-proportional share.
    tput : float64 (9, C), read-only, normalised throughput at ``CPU_LEVELS[i]`` cores and the ``j``-th memory
        level per GPU (:attr:`mem_levels_gb`).
    """

    name: str
    gpus: int
    cpus: float
    mem_gb: float
    storage_mbps: float
    batch: int
    placement_penalty: float
    speedup: float
    iter_time_s: float
    tput: np.ndarray

    def __post_init__(self) -> None:
        for attr, name, low, strict in (("gpus", "gpus", 1, False), ("cpus", "cpus", 0, False),
                                        ("mem_gb", "mem", 0, False), ("storage_mbps", "speed", 0, False),
                                        ("batch", "batch", 1, False),
                                        ("placement_penalty", "placement_penalty", 0, True),
                                        ("speedup", "speedup", 0, True), ("iter_time_s", "iter_time", 0, True)):
            value = getattr(self, attr)                    # named as the model files and the JSON name it
            if not (math.isfinite(value) and (value > low if strict else value >= low)):
                raise ProfileError(f"{self.key}: field {name!r} must be a finite number {'>' if strict else '>='} "
                                   f"{low}, got {value}")
        tput = np.array(self.tput, dtype=np.float64)
        if tput.ndim != 2 or tput.shape[0] != len(CPU_LEVELS) or tput.shape[1] not in (4, 5):
            raise ProfileError(f"{self.key}: tput matrix of shape {tput.shape}; expected (9, 5) or (9, 4)")
        if np.any(tput < 0) or not np.all(np.isfinite(tput)):
            raise ProfileError(f"{self.key}: tput matrix has a negative or non-finite entry")
        tput.setflags(write=False)
        object.__setattr__(self, "tput", tput)

    @property
    def key(self) -> str:
        """``name_gpus``, the model file's stem."""
        return f"{self.name}_{self.gpus}"

    @property
    def mem_levels_gb(self) -> tuple[float, ...]:
        """GB per GPU of the columns of :attr:`tput`."""
        return MEM_LEVELS_GB[len(MEM_LEVELS_GB) - self.tput.shape[1]:]

    def normalized_rate(self, cpus_per_gpu: float, mem_gb_per_gpu: float) -> float:
        """Normalised throughput (1 = GPU-proportional share) at the largest profiled levels not above the given
        CPU cores and GB per GPU; 0 below the lowest level (the job cannot run)."""
        i = int(np.searchsorted(CPU_LEVELS, cpus_per_gpu + 1e-9, side="right")) - 1
        j = int(np.searchsorted(self.mem_levels_gb, mem_gb_per_gpu + 1e-9, side="right")) - 1
        return 0.0 if i < 0 or j < 0 else float(self.tput[i, j])

    def to_json(self) -> dict:
        return {"name": self.name, "gpus": self.gpus, "cpus": self.cpus, "mem": self.mem_gb,
                "speed": self.storage_mbps, "batch": self.batch, "placement_penalty": self.placement_penalty,
                "speedup": self.speedup, "iter_time": self.iter_time_s, "tput": self.tput.tolist()}


@dataclass(frozen=True, eq=False)
class ProfileTable:
    """All of Synergy's model profiles, keyed by ``name_gpus`` (``res18_1``); read-only.

    Examples
    --------
    >>> table = load_profiles()
    >>> table["res18"].speedup, table["res18"].cpus
    (2.4, 9.0)
    >>> table.rate("res18", 1, 3, 62.5), table.rate("res18", 1, 9, 62.5), table.rate("res18", 2, 6, 125.0)
    (1.0, 2.4, 1.0)
    """

    profiles: Mapping[str, Profile]
    source: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "profiles", MappingProxyType(dict(sorted(self.profiles.items()))))

    def __getitem__(self, model: str) -> Profile:
        """The profile of ``model`` (``res18`` means ``res18_1``); :class:`ProfileError` naming an unknown one."""
        key = model if re.fullmatch(r".+_\d+", model) else f"{model}_1"
        try:
            return self.profiles[key]
        except KeyError:
            known = sorted({p.name for p in self.profiles.values()})
            raise ProfileError(f"unknown Synergy model {model!r} (known: {', '.join(known)})") from None

    def __len__(self) -> int:
        return len(self.profiles)

    @property
    def models(self) -> tuple[str, ...]:
        """Model names (without GPU suffix), sorted."""
        return tuple(sorted({p.name for p in self.profiles.values()}))

    def rate(self, model: str, gpus: int, cpus: float, mem_gb: float, per_gpu_file: bool = False) -> float:
        """Normalised throughput of ``model`` on ``gpus`` GPUs holding ``cpus`` CPU cores and ``mem_gb`` GB in all.

        1.0 is the speed at the GPU-proportional share (3 cores and 62.5 GB per GPU); the job's seconds per
        iteration are ``iter_time_s / rate``. The profile is the 1-GPU file's, as Synergy's simulator uses it
        for every GPU count, unless ``per_gpu_file`` asks for the ``model_<gpus>`` file.
        """
        if gpus < 1:
            raise ValueError(f"gpus={gpus}; expected >= 1")
        profile = self[f"{model}_{gpus}"] if per_gpu_file else self[model]
        return profile.normalized_rate(cpus / gpus, mem_gb / gpus)


_ALLOWED_OPS = {ast.Add: float.__add__, ast.Sub: float.__sub__, ast.Mult: float.__mul__, ast.Div: float.__truediv__}


def _value(node: ast.AST, where: str):
    """Evaluate the literal arithmetic of a model file (numbers, + - * /, ``int()``, ``np.array([...])``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, where)
    if isinstance(node, ast.BinOp) and type(node.op) in _ALLOWED_OPS:
        left, right = _value(node.left, where), _value(node.right, where)
        out = _ALLOWED_OPS[type(node.op)](float(left), float(right))
        return int(out) if isinstance(left, int) and isinstance(right, int) and not isinstance(node.op, ast.Div) \
            else out
    if isinstance(node, ast.List):
        return [_value(e, where) for e in node.elts]
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        fn = ast.unparse(node.func)
        if fn == "int":
            return int(_value(node.args[0], where))
        if fn in ("np.array", "numpy.array"):
            return _value(node.args[0], where)
    raise ProfileError(f"{where}: cannot evaluate {ast.unparse(node)!r} (line {getattr(node, 'lineno', '?')})")


def parse_model_file(path: str | os.PathLike) -> Profile:
    """Read one of Synergy's ``models/<name>_<gpus>.py`` files without running it.

    Raises
    ------
    ProfileError : the file is not Python, has no ``update_stats`` setting :data:`FIELDS` and ``tput``, or its
        name is not ``<name>_<gpus>.py``.
    """
    path = Path(path)
    m = re.fullmatch(r"(.+)_(\d+)\.py", path.name)
    if not m:
        raise ProfileError(f"{path}: not a Synergy model file name (<model>_<gpus>.py)")
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError) as exc:
        raise ProfileError(f"{path}: does not parse ({' '.join(str(exc).split())})") from None
    values: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == "self" and target.attr in (*FIELDS, "tput"):
                values[target.attr] = _value(node.value, str(path))
    missing = [f for f in (*FIELDS, "tput") if f not in values]
    if missing:
        raise ProfileError(f"{path}: does not set {', '.join(missing)} in update_stats")
    return Profile(name=m.group(1), gpus=int(m.group(2)), cpus=float(values["cpus"]), mem_gb=float(values["mem"]),
                   storage_mbps=float(values["speed"]), batch=int(values["batch"]),
                   placement_penalty=float(values["placement_penalty"]), speedup=float(values["speedup"]),
                   iter_time_s=float(values["iter_time"]), tput=np.array(values["tput"], dtype=np.float64))


def _models_dir(path: Path) -> Path:
    for candidate in (path / "simulator" / "models", path / "models", path):
        if candidate.is_dir() and any(candidate.glob("*_1.py")):
            return candidate
    raise ProfileError(f"{path}: no Synergy model files (*_1.py) in it, its models/ or its simulator/models/")


def read_models_dir(path: str | os.PathLike) -> ProfileTable:
    """Parse every ``<name>_<gpus>.py`` of a Synergy checkout (or its ``simulator/`` or ``simulator/models/``)."""
    folder = _models_dir(Path(path))
    files = sorted(p for p in folder.glob("*_*.py") if re.fullmatch(r".+_\d+\.py", p.name))
    return ProfileTable({(p := parse_model_file(f)).key: p for f in files}, source=str(folder))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_json(path: str | os.PathLike, sha256: str | None = None) -> ProfileTable:
    """Read a profile file written by :func:`write_json`; with ``sha256``, refuse a file whose digest differs."""
    path = Path(path)
    if sha256 is not None and _sha256(path) != sha256:
        raise ProfileError(f"{path}: checksum mismatch (got {_sha256(path)}, expected {sha256})")
    try:
        doc = json.loads(path.read_text())
        entries = doc["models"]
        return ProfileTable({key: Profile(name=e["name"], gpus=int(e["gpus"]), cpus=float(e["cpus"]),
                                          mem_gb=float(e["mem"]), storage_mbps=float(e["speed"]),
                                          batch=int(e["batch"]), placement_penalty=float(e["placement_penalty"]),
                                          speedup=float(e["speedup"]), iter_time_s=float(e["iter_time"]),
                                          tput=np.array(e["tput"], dtype=np.float64))
                             for key, e in entries.items()}, source=str(path))
    except ProfileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ProfileError(f"{path}: does not parse as a Synergy profile file ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())})") from None


def write_json(table: ProfileTable, path: str | os.PathLike, license_text: str = "") -> Path:
    """Write ``table`` as the committed JSON layout (source repository, commit, licence, models)."""
    doc = {"source": f"https://github.com/{REPO} commit {COMMIT}, simulator/models/*_N.py "
                     "(converted by python -m fgdopt.synergy.profiles)",
           "license": license_text.strip().splitlines() if license_text else [],
           "cpu_levels": list(CPU_LEVELS), "mem_levels_gb": list(MEM_LEVELS_GB),
           "models": {key: p.to_json() for key, p in table.profiles.items()}}
    path = Path(path)
    head = json.dumps({k: v for k, v in doc.items() if k != "models"}, indent=1)[:-2]
    models = ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in doc["models"].items())
    path.write_text(f'{head},\n"models": {{\n{models}\n}}\n}}\n')
    return path


def load_profiles(path: str | os.PathLike | None = None) -> ProfileTable:
    """Synergy's profiles: from ``path`` (a JSON profile file or a checkout / models folder), else from
    ``$FGDOPT_SYNERGY`` (a checkout), else the committed copy (its SHA-256 checked against :data:`SHA256`).

    Raises
    ------
    ProfileError : one line naming the file that does not parse, or the folder without model files (a folder of
        ``$FGDOPT_SYNERGY``: the variable named, with the command that fetches a checkout).
    """
    from_env = path is None and bool(os.environ.get(ENV))
    if from_env:
        path = folder(SYNERGY)
    if path is None:
        return _committed()
    path = Path(path)
    try:
        if not path.exists():
            raise ProfileError(f"{path}: no such Synergy profile file or folder")
        return read_models_dir(path) if path.is_dir() else read_json(path)
    except ProfileError as exc:
        if not from_env:
            raise
        raise ProfileError(f"{ENV}: {exc}; set it to a checkout of {REPO} (`{SYNERGY.command}`) or unset it to read "
                           "the committed profiles") from None


_CACHE: dict[str, ProfileTable] = {}


def _committed() -> ProfileTable:
    if "committed" not in _CACHE:
        _CACHE["committed"] = read_json(DATA_FILE, sha256=SHA256)
    return _CACHE["committed"]


def main(argv: list[str] | None = None) -> int:
    """``python -m fgdopt.synergy.profiles MODELS_DIR [LICENSE]``: rewrite the committed JSON from a checkout."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(main.__doc__, file=sys.stderr)
        return 2
    try:
        table = read_models_dir(argv[0])
    except ProfileError as exc:
        print(f"python -m fgdopt.synergy.profiles: error: {exc}", file=sys.stderr)
        return 2
    license_text = Path(argv[1]).read_text() if len(argv) > 1 else ""
    out = write_json(table, DATA_FILE, license_text)
    print(f"{len(table)} profiles -> {out} sha256 {_sha256(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
