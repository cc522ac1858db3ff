"""Sphinx configuration of fgdopt's documentation (``python -m sphinx -W --keep-going -q -b html docs
docs/_build/html``, as the README and ``.ci/run`` say).

Sphinx with numpydoc: the docstrings are numpydoc sections with Sphinx cross-reference roles (``:func:``,
``:class:``, ``:data:``), which Sphinx resolves as written. The notebooks are rendered by myst-nb, executed at build
time (they are committed without outputs).
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                       # this checkout's packages, before any installed copy
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)  # kernels
os.environ.setdefault("MPLBACKEND", "Agg")

project = "fgdopt"
author = "fgdopt developers"
copyright = "fgdopt developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.viewcode", "numpydoc", "myst_nb"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "jupyter_execute", "notebooks/*.py"]

autosummary_generate = True
# a package documents what it defines; what its __init__ re-exports is documented where it is defined
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True,
                           "ignore-module-all": True}
autodoc_typehints = "none"                          # the numpydoc sections state types and units
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_merge_streams = True
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type", "misc.highlighting_failure"]

html_theme = "alabaster"
html_title = "fgdopt"


def _not_generic_alias(original):
    """``tuple[int, ...]`` passes ``isinstance(x, type)``: let the data documenter, not the class one, take the
    type aliases (``Choice``, ``MigChoice``, ``Column``)."""

    def can_document_member(member, membername, isattr, parent):
        return not isinstance(member, types.GenericAlias) and original(member, membername, isattr, parent)

    return classmethod(lambda cls, *args: can_document_member(*args))


def _one_template_environment():
    """numpydoc (1.x) builds a new Jinja environment, and so compiles its docstring template again, for each of the
    ~4,800 objects it renders: half of the build's time. Hand it one environment, whose compiled template Jinja
    caches (the loader is the same for every object of a build)."""
    import numpydoc.docscrape_sphinx as docscrape_sphinx

    make = docscrape_sphinx.SandboxedEnvironment
    built = {}
    docscrape_sphinx.SandboxedEnvironment = lambda loader: built.setdefault("env", make(loader=loader))


def setup(app):
    from sphinx.ext.autodoc import ClassDocumenter

    ClassDocumenter.can_document_member = _not_generic_alias(ClassDocumenter.can_document_member)
    _one_template_environment()
