"""The package's import graph, read from the source (ast): no cycles, and ``fgdopt/state.py`` (the one feasibility
rule) imports nothing above it."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import fgdopt

ROOT = Path(fgdopt.__file__).parent
SPEC = re.compile(r"^(fgdopt(?:\.\w+)+):\w+$")
STATE_MAY_IMPORT = {"fgdopt.model", "fgdopt.capabilities", "fgdopt.splits", "fgdopt.mig", "fgdopt.mig.slices"}
"""What ``fgdopt.state`` may import, directly or not: the data model, its capabilities, the splits of a task in
several parts and the MIG slice rule (whose package ``__init__`` imports nothing)."""


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package at ``root``: dotted name -> file."""
    out = {}
    for path in root.rglob("*.py"):
        name = ".".join((root.name, *path.relative_to(root).with_suffix("").parts))
        out[name.removesuffix(".__init__")] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports anywhere in its file (module level or in a function), and those it names
    by a ``module:attribute`` string (imported at its first use): each ``from a.b import c`` counts as ``a.b.c`` when
    that is a module, else as ``a.b``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (m := SPEC.match(node.value)):
            out.add(m.group(1))
    return {m for m in out if m in known} - {name}


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package modules it imports (:func:`imports`)."""
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


@functools.cache
def package_graph() -> dict[str, set[str]]:
    """:func:`graph` of fgdopt, read once."""
    return graph(ROOT)


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], 0
    for start in sorted(g):
        if start in index:
            continue
        work = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def reach(g: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in g[todo.pop()] - seen:
            seen.add(w)
            todo.append(w)
    return seen


def test_the_cycle_finder_finds_a_planted_cycle(tmp_path):
    # a -> b -> c -> a through a function-level import and a module:attribute string; d -> a is no cycle
    pkg = tmp_path / "fgdopt"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from fgdopt import b\n")
    (pkg / "b.py").write_text("def f():\n    from fgdopt.c import x\n")
    (pkg / "c.py").write_text("SPEC = 'fgdopt.a:thing'\n")
    (pkg / "d.py").write_text("import fgdopt.a\n")
    g = graph(pkg)
    assert g["fgdopt.b"] == {"fgdopt.c"} and g["fgdopt.c"] == {"fgdopt.a"}
    assert cycles(g) == [["fgdopt.a", "fgdopt.b", "fgdopt.c"]]
    (pkg / "c.py").write_text("")
    assert cycles(graph(pkg)) == []


def test_the_package_has_no_import_cycles():
    assert cycles(package_graph()) == []


def test_the_state_imports_nothing_above_it():
    g = package_graph()
    assert reach(g, "fgdopt.state") <= STATE_MAY_IMPORT, sorted(reach(g, "fgdopt.state") - STATE_MAY_IMPORT)
    assert g["fgdopt.mig"] == set()                        # importing fgdopt.mig.slices runs this __init__
