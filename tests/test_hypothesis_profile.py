"""The suite's one Hypothesis profile (tests/conftest.py): every run draws the same examples, CI's included."""

from __future__ import annotations

import pytest
from hypothesis import settings


def test_every_run_draws_the_same_examples(request):
    """Hypothesis loads its own ``ci`` profile wherever a CI variable is set; the suite's profile replaces it (and
    Hypothesis' random ``default`` profile elsewhere): derandomized, no example database, no deadline. Only
    ``--hypothesis-profile=explore`` draws fresh random examples."""
    if request.config.getoption("hypothesis_profile", None) == "explore":
        pytest.skip("--hypothesis-profile=explore draws fresh examples")
    assert settings._current_profile == "fgdopt"
    assert settings.default.derandomize and settings.default.database is None and settings.default.deadline is None
