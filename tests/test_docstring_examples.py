"""Every docstring example (numpydoc ``Examples``, ``>>>``) of fgdopt, formulations and experiments runs and prints
what it shows. A newcomer copies these first; an example nobody runs goes stale when the code moves on."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                 for package in ("fgdopt", "formulations", "experiments")
                 for path in (ROOT / package).rglob("*.py") if ">>>" in path.read_text())


def test_the_examples_are_found():
    assert len(MODULES) >= 40 and {"fgdopt.frag", "formulations.highs", "experiments.args"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples fail (output above)"
