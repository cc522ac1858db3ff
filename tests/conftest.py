"""Shared fixtures. Tests that need the openb trace use ``openb_dir``, those that need Gavel's throughput table
``gavel_table``, those that need an optional module :func:`require_module`: they skip when it is missing, unless
``FGDOPT_REQUIRE_DATA=1`` (as in CI), where a missing data set or module is a failure. Those that need Pollux's
simulator folder call :func:`require_pollux` (a failure under ``FGDOPT_REQUIRE_POLLUX=1``)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

from fgdopt.cpus import usable_cpus
from fgdopt.traces import find_openb

# One Hypothesis profile for every run. Hypothesis loads a profile of its own, "ci", wherever a CI variable is set
# (`CI`, even empty): derandomized examples, no deadline, no too-slow health check. CI then drew other examples than a
# developer's run, one of them a failure scenario of 5 CPU minutes (test_failures), and its time could not be seen
# here. Now every run draws the same examples (derandomized: a failure is reproduced by running the test again), with
# no deadline (timings are the benchmarks' business). `--hypothesis-profile=explore` draws fresh random examples and
# keeps failing ones in .hypothesis/, to search further.
settings.register_profile("fgdopt", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fgdopt")


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one worker per CPU this process may use (a container's quota, not its host's CPU count)."""
    return usable_cpus()


def _find(candidates, marker: str) -> Path | None:
    """The first folder of ``candidates`` holding ``marker``."""
    return next((c for c in candidates if (c / marker).is_file()), None)


def _require(found: Path | None, what: str, env: str) -> Path:
    """``found``, else skip the test (fail it under ``FGDOPT_REQUIRE_DATA=1``)."""
    if found is None:
        if os.environ.get("FGDOPT_REQUIRE_DATA") == "1":
            pytest.fail(f"FGDOPT_REQUIRE_DATA=1 but {what} was not found (set {env})")
        pytest.skip(f"{what} not available (set {env})")
    return found


def require_pollux() -> Path:
    """Pollux's simulator folder (:func:`fgdopt.elastic.applications.find_pollux`), else skip the calling test, or
    fail it under ``FGDOPT_REQUIRE_POLLUX=1`` (as in CI)."""
    from fgdopt.elastic.applications import find_pollux

    root = find_pollux()
    if root is None:
        if os.environ.get("FGDOPT_REQUIRE_POLLUX") == "1":
            pytest.fail("FGDOPT_REQUIRE_POLLUX=1 but Pollux's simulator folder was not found (set FGDOPT_POLLUX)",
                        pytrace=False)
        pytest.skip("Pollux's simulator folder not available (set FGDOPT_POLLUX to petuum/adaptdl's simulator/ at "
                    "c793c708, branch osdi21-artifact)")
    return root


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
    """``$FGDOPT_DATA``, else the download cache: :func:`fgdopt.traces.find_openb`, the lookup the notebooks use
    too."""
    return _require(find_openb(), "the openb trace", "FGDOPT_DATA")


@pytest.fixture(scope="session")
def gavel_table():
    """Gavel's throughput table: ``$FGDOPT_GAVEL``, else the download cache (:func:`fgdopt.hetero.find_gavel`)."""
    from fgdopt.hetero.throughputs import FILE, find_gavel, read_throughputs

    return read_throughputs(_require(find_gavel(), "Gavel's throughput table", "FGDOPT_GAVEL") / FILE)


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


@pytest.fixture
def own_openb(tmp_path):
    """A writer of a user's own trace in the openb format in ``tmp_path``: ``own_openb(nodes, pods)`` writes the node
    list (rows ``sn,cpu_milli,memory_mib,gpu,model``; default one 2-GPU T4 node) and the default pod list (rows of
    ``name,...,scheduled_time`` as the published one; default one pod of half a GPU living 100 s) and returns the
    folder, as ``--data-dir`` takes it."""

    def write(nodes=("n0,32000,65536,2,T4",), pods=("p0,4000,8192,1,500,,LS,Running,0,100,0",)) -> Path:
        (tmp_path / "openb_node_list_gpu_node.csv").write_text(
            "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"{row}\n" for row in nodes))
        (tmp_path / "openb_pod_list_default.csv").write_text(
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
            "scheduled_time\n" + "".join(f"{row}\n" for row in pods))
        return tmp_path

    return write


@pytest.fixture
def saved(monkeypatch):
    """The figures saved while the test runs (every study writes its PNG through ``Figure.savefig``)."""
    from matplotlib.figure import Figure

    figures: list[Figure] = []
    original = Figure.savefig

    def keep(self, *args, **kwargs):
        figures.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


@pytest.fixture
def laid_out(monkeypatch):
    """The figures saved while the test runs, laid out (``tight_layout``, the cut-edge check of
    :func:`fgdopt.plot._save`) but not rendered to PNG, for tests that read axes, legends and texts only (``saved``
    also writes the PNG; tests/test_paper.py renders every paper figure)."""
    from matplotlib.figure import Figure

    figures: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: figures.append(self))
    return figures
