"""Shared fixtures. Tests that need the openb trace use ``openb_dir``, those that need Gavel's throughput table
``gavel_table``: they skip when the data is missing, unless ``FGDOPT_REQUIRE_DATA=1`` (as in CI), where a missing
data set is a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fgdopt.traces import NODE_FILE, data_dir

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_SHARED = SHARED / "openb"


def _find(candidates, marker: str) -> Path | None:
    """The first folder of ``candidates`` (the configured one, then ``../shared/data/...``) holding ``marker``."""
    return next((c for c in candidates if (c / marker).is_file()), None)


def _require(found: Path | None, what: str, env: str) -> Path:
    """``found``, else skip the test (fail it under ``FGDOPT_REQUIRE_DATA=1``)."""
    if found is None:
        if os.environ.get("FGDOPT_REQUIRE_DATA") == "1":
            pytest.fail(f"FGDOPT_REQUIRE_DATA=1 but {what} was not found (set {env})")
        pytest.skip(f"{what} not available (set {env})")
    return found


def _find_openb() -> Path | None:
    """``$FGDOPT_DATA`` (or the download cache), else ``../shared/data/openb`` beside the repo."""
    return _find((data_dir(), DEFAULT_SHARED), NODE_FILE)


@pytest.fixture(scope="session")
def openb_dir() -> Path:
    return _require(_find_openb(), "the openb trace", "FGDOPT_DATA")


@pytest.fixture(scope="session")
def gavel_table():
    """Gavel's throughput table: ``$FGDOPT_GAVEL`` (or the download cache), else ``../shared/data/gavel``."""
    from fgdopt.hetero.throughputs import FILE, gavel_dir, read_throughputs

    found = _require(_find((gavel_dir(), SHARED / "gavel"), FILE), "Gavel's throughput table", "FGDOPT_GAVEL")
    return read_throughputs(found / FILE)


@pytest.fixture(scope="session")
def refsim_path(openb_dir) -> Path:
    """The reference simulator's logged run: ``$FGDOPT_REFSIM``, else ``refsim/`` beside the openb folder."""
    from fgdopt.refsim import LOG_FILE, refsim_dir

    return _require(_find((refsim_dir(), openb_dir.parent / "refsim"), LOG_FILE), "the reference run",
                    "FGDOPT_REFSIM")


@pytest.fixture(scope="session")
def openb_default(openb_dir):
    """(Cluster, TaskSet) of the default pod list."""
    from fgdopt.traces import load_openb

    return load_openb("default", openb_dir)
