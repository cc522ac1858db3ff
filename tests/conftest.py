"""Shared fixtures. Tests that need the openb trace use ``openb_dir``: it skips when the CSVs are
missing, unless ``FGDOPT_REQUIRE_DATA=1`` (as in CI), where a missing trace is a failure. Tests that need an
optional module use :func:`require_module` (the same rule: skip, or fail under ``FGDOPT_REQUIRE_DATA=1``)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest

from fgdopt.traces import find_openb


def require_module(name: str) -> ModuleType:
    """``import name``; if that fails, skip the calling test, or fail it under ``FGDOPT_REQUIRE_DATA=1`` (as in CI,
    where the dev extra installs every optional module and a broken import must not turn into a green skip)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if os.environ.get("FGDOPT_REQUIRE_DATA") == "1":
            pytest.fail(f"FGDOPT_REQUIRE_DATA=1 but {name} cannot be imported: {exc}", pytrace=False)
        pytest.skip(f"{name} not available: {exc}")


@pytest.fixture(scope="session")
def openb_dir() -> Path:
    """``$FGDOPT_DATA`` (or the download cache), else ``../shared/data/openb`` beside the repo:
    :func:`fgdopt.traces.find_openb`, the lookup the notebooks use too."""
    found = find_openb()
    if found is None:
        if os.environ.get("FGDOPT_REQUIRE_DATA") == "1":
            pytest.fail("FGDOPT_REQUIRE_DATA=1 but the openb trace was not found (set FGDOPT_DATA)")
        pytest.skip("openb trace not available (set FGDOPT_DATA)")
    return found


@pytest.fixture(scope="session")
def refsim_path(openb_dir) -> Path:
    """The reference simulator's logged run: ``$FGDOPT_REFSIM``, else ``refsim/`` beside the openb folder."""
    from fgdopt.refsim import LOG_FILE, refsim_dir

    found = next((c for c in (refsim_dir(), openb_dir.parent / "refsim") if (c / LOG_FILE).is_file()), None)
    if found is None:
        if os.environ.get("FGDOPT_REQUIRE_DATA") == "1":
            pytest.fail("FGDOPT_REQUIRE_DATA=1 but the reference run was not found (set FGDOPT_REFSIM)")
        pytest.skip("reference run not available (set FGDOPT_REFSIM)")
    return found


@pytest.fixture(scope="session")
def openb_default(openb_dir):
    """(Cluster, TaskSet) of the default pod list."""
    from fgdopt.traces import load_openb

    return load_openb("default", openb_dir)
