"""The notebooks and their jupytext pairs (``notebooks/jupytext.toml``: ``ipynb,py:percent``) tell the same story.

Edit either side, then ``jupytext --sync notebooks/*.ipynb``. These tests fail when a pair disagrees, when a
notebook has no pair (or a pair no notebook), and check what every notebook promises its reader: a learning goal in
its first cell, no stored outputs (the notebooks are committed cleared; nbmake executes them), no private names.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
IPYNB = sorted(NOTEBOOKS.glob("*.ipynb"))


def cells(notebook) -> list[tuple[str, str]]:
    """(cell type, source without trailing blank lines) of every cell."""
    return [(cell.cell_type, cell.source.rstrip()) for cell in notebook.cells]


def test_config_pairs_ipynb_with_py_percent():
    config = tomllib.loads((NOTEBOOKS / "jupytext.toml").read_text())
    assert config["formats"] == "ipynb,py:percent"


def test_every_notebook_has_its_pair_and_no_pair_is_orphaned():
    assert len(IPYNB) >= 4
    pairs = {p.stem for p in NOTEBOOKS.glob("*.py")}
    assert pairs == {p.stem for p in IPYNB}
    assert not any(name.startswith("test_") or name.endswith("_test") for name in pairs)   # never collected by pytest


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_pair_has_the_same_cells(path):
    notebook, text = jupytext.read(path), jupytext.read(path.with_suffix(".py"), fmt="py:percent")
    mine, theirs = cells(notebook), cells(text)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        assert a == b, f"{path.name} and its .py differ at cell {k}; run `jupytext --sync notebooks/{path.name}`"
    assert len(mine) == len(theirs), f"{path.name}: {len(mine)} cells, its .py {len(theirs)}"


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_reader_promises(path):
    notebook = jupytext.read(path)
    first = notebook.cells[0]
    assert first.cell_type == "markdown" and "**Learning goal:**" in first.source
    assert all(not cell.get("outputs") and cell.get("execution_count") is None
               for cell in notebook.cells if cell.cell_type == "code"), f"{path.name} has stored outputs"
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    imports = re.findall(r"^\s*(?:from\s+(\S+)\s+)?import\s+(.+)$", code, flags=re.MULTILINE)
    for module, names in imports:
        assert not re.search(r"(^|[.,\s])_", f"{module} {names}"), f"{path.name} imports a private name: {names}"
