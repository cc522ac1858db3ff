"""The one lookup of the data sets fgdopt reads but does not ship: where each is, what it must hold, its pinned
checksums and the command that fetches it.

Each module that reads a data set declares it as a :class:`Dataset` and finds it with the functions here:

==================================================  ===================  ==============================================
data set                                            variable             what
==================================================  ===================  ==============================================
:data:`fgdopt.traces.OPENB`                         ``FGDOPT_DATA``      the Alibaba PAI GPU trace 2023
:data:`fgdopt.hetero.throughputs.GAVEL`             ``FGDOPT_GAVEL``     Gavel's measured throughputs
:data:`fgdopt.elastic.applications.POLLUX`          ``FGDOPT_POLLUX``    Pollux's simulator folder (``petuum/adaptdl``)
:data:`fgdopt.synergy.profiles.SYNERGY`             ``FGDOPT_SYNERGY``   a checkout of ``msr-fiddle/synergy`` (else
                                                                         the committed copy of its profiles)
:data:`fgdopt.refsim.REFSIM`                        ``FGDOPT_REFSIM``    a logged run of the reference simulator
==================================================  ===================  ==============================================

A data set's folder is, in this order: the path given to the function that reads it, the environment variable,
``~/.cache/fgdopt/<name>`` (where the download commands put it). No path depends on where the source checkout sits.
:func:`find` gives the folder if it holds the set's marker file; :func:`require` raises, in one line naming the
variable and the command, when it does not; :func:`verify` checks the files present against the pinned SHA-256.
This module imports nothing of fgdopt.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

__all__ = ["ChecksumMismatch", "DataNotFound", "Dataset", "find", "folder", "require", "sha256_of", "verify"]

CACHE = Path("~/.cache/fgdopt")
"""Where the download commands put the data sets (``~`` expanded at each lookup)."""


class DataNotFound(FileNotFoundError):
    """A data set is not where the lookup looked (the message: one line, the variable and the command)."""


class ChecksumMismatch(ValueError):
    """A file of a data set is not the pinned one (the message: one line, the file and both digests)."""


@dataclass(frozen=True)
class Dataset:
    """One data set: its ``name`` (the cache folder's), the environment ``variable`` naming its folder, the
    ``marker`` file (relative) the folder must hold, ``what`` it is (in messages), the ``command`` that fetches it
    and the pinned SHA-256 of some of its files (relative path -> hex digest)."""

    name: str
    variable: str
    marker: str
    what: str
    command: str
    sha256: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha256", MappingProxyType(dict(self.sha256)))


def folder(data: Dataset, path: str | os.PathLike | None = None) -> Path:
    """Where ``data`` is looked for: ``path``, else its environment variable, else the download cache."""
    if path is not None:
        return Path(path)
    value = os.environ.get(data.variable)
    return Path(value) if value else (CACHE / data.name).expanduser()


def find(data: Dataset, path: str | os.PathLike | None = None) -> Path | None:
    """:func:`folder` if it holds the data set's marker file, else None."""
    where = folder(data, path)
    return where if (where / data.marker).is_file() else None


def require(data: Dataset, path: str | os.PathLike | None = None) -> Path:
    """:func:`find`'s folder.

    Raises
    ------
    DataNotFound : one line naming the folder looked in, the variable to set and the command that fetches it.
    """
    found = find(data, path)
    if found is None:
        raise DataNotFound(f"{data.what} not found in {folder(data, path)} (no {data.marker}): set {data.variable} "
                           f"to its folder, or fetch it with `{data.command}`")
    return found


def sha256_of(path: Path) -> str:
    """The SHA-256 of the file ``path`` (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(data: Dataset, where: str | os.PathLike | None = None) -> int:
    """Check the pinned files of ``data`` present in ``where`` (default :func:`require`'s folder) against
    their SHA-256; returns how many were checked.

    Raises
    ------
    ChecksumMismatch : one line naming the file, its digest and the pinned one.
    """
    root = require(data) if where is None else Path(where)
    checked = 0
    for rel, pinned in data.sha256.items():
        path = root / rel
        if path.is_file():
            if (got := sha256_of(path)) != pinned:
                raise ChecksumMismatch(f"{path}: SHA-256 {got}, not the pinned {pinned} ({data.name}: fetch it "
                                       f"again with `{data.command}`)")
            checked += 1
    return checked
