"""What the prose names exists: every module, class or function the README, the documentation, the paper and the
notebooks name in backticks (``fgdopt.x.y``, ``formulations.x``, ``experiments.x``) imports, every file or folder of
the repository they name in backticks is there, and every relative Markdown link leads to a file. A newcomer who
follows a stale name gets an ImportError or a missing file; these checks catch the name when the code moves."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "paper").glob("*.md"),
                *(ROOT / "notebooks").glob("*.py")])
DOTTED = re.compile(r"`((?:fgdopt|formulations|experiments)(?:\.[A-Za-z_]\w*)+)(?:\(\))?`")
TOP = ("fgdopt/", "formulations/", "experiments/", "tests/", "notebooks/", "docs/", "paper/", ".ci/")
PATH = re.compile(r"`((?:" + "|".join(re.escape(t) for t in TOP) + r")[\w./-]*)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def resolves(name: str) -> bool:
    """Whether ``name`` is a module, or an attribute chain of the longest importable module prefix."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def there(path: str) -> bool:
    """Whether the repository holds ``path`` (a notebook may be named by its stem; built docs are not committed)."""
    return "_build" in path or (ROOT / path).exists() or (ROOT / f"{path}.py").exists()


def test_a_stale_name_is_caught():
    assert resolves("fgdopt.hetero.jobs.iter_gavel_jobs") and resolves("formulations.solve")
    assert not resolves("fgdopt.hetero.no_such_function") and not resolves("fgdopt.no_such_module")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_and_file_a_page_mentions_exists(page):
    text = page.read_text()
    stale = sorted({m for m in DOTTED.findall(text) if not resolves(m)})
    assert not stale, f"{page.name} names what does not import: {stale}"
    missing = sorted({p for p in PATH.findall(text) if not there(p)})
    assert not missing, f"{page.name} names files that are not in the repository: {missing}"
    links = [m for m in LINK.findall(text) if "://" not in m and not m.startswith("mailto:")]
    broken = sorted({m for m in links if not (page.parent / m).exists()})
    assert not broken, f"{page.name} links to files that are not there: {broken}"


@pytest.mark.parametrize("page", ["README.md", "docs/studies.md"])
def test_the_notebook_list_counts_every_notebook(page):
    """The pages that list what the notebooks teach name how many there are (docs/studies.md listed 4 of 11)."""
    count = len(list((ROOT / "notebooks").glob("*.ipynb")))
    assert f"the {count} notebooks" in " ".join((ROOT / page).read_text().split())
