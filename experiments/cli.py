"""The ``fgdopt`` command: one subcommand per study, each the very parser of its ``python -m experiments.X``.

Usage::

    fgdopt --help                      # the subcommands, each with the first line of its module's docstring
    fgdopt gap --instances small       # = python -m experiments.gap --instances small
    fgdopt replay --seeds 42-51 --output out/

A subcommand is one entry of :data:`COMMANDS` (name -> module with a ``main(argv) -> int | None``): adding a
study is one line there. The modules are imported only when their subcommand runs, and ``--help`` reads their
docstrings from the source without importing them (the solvers load in seconds). As under ``python -m``, the
current directory comes first on ``sys.path``, so ``--policies mymod:MyPolicy`` finds ``./mymod.py``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import sys
import textwrap

COMMANDS: dict[str, str] = {
    "gap": "experiments.gap",
    "replay": "experiments.openb",
    "openb": "experiments.openb",
    "frontier": "experiments.frontier",
    "topology": "experiments.topology",
    "defrag": "experiments.defrag",
    "mig": "experiments.mig",
    "timeline": "experiments.timeline",
    "hetero": "experiments.hetero",
    "interference": "experiments.interference",
    "failures": "experiments.failures",
    "cpu-aware": "experiments.cpu_aware",
    "schedule": "experiments.schedule",
    "pollux": "experiments.pollux",
    "synergy": "experiments.synergy",
    "fairness": "experiments.fairness",
    "refsim": "experiments.refsim",
    "paper": "experiments.paper",
    "trace-stats": "experiments.trace_stats",
    "convert": "experiments.convert",
    "trace-study": "experiments.traces",
    "bench-replay": "experiments.bench_replay",
    "bench-formulations": "experiments.bench_formulations",
    "bench-defrag": "experiments.bench_defrag",
    "bench-timeline": "experiments.bench_timeline",
    "bench-hetero": "experiments.bench_hetero",
    "bench-convert": "experiments.bench_convert",
    "make-shape-table": "experiments.make_shape_table",
    "mutants": "experiments.mutants",
    "traces": "fgdopt.traces",
}
"""Subcommand -> module whose ``main(argv)`` it runs (``replay`` and ``openb`` are the same study)."""


def plain(text: str) -> str:
    """Docstring text as plain words: the markup of literals (double backquotes) and of Sphinx roles (a role name
    between colons before a backquoted target) dropped, the text kept.

    >>> plain("Run ``python -m experiments.gap`` (:mod:`fgdopt.policies`, :func:`~fgdopt.simulate.replay`).")
    'Run python -m experiments.gap (fgdopt.policies, replay).'
    """
    text = re.sub(r":[a-z]+:`~[\w.]*?(\w+)`", r"\1", text)
    return re.sub(r":[a-z]+:`([^`]*)`|``([^`]*)``|`([^`]*)`", lambda m: next(g for g in m.groups() if g is not None),
                  text)


def summary(module: str) -> str:
    """The first sentence of ``module``'s docstring in plain words (:func:`plain`), read from its source without
    importing it ("" if none)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    with open(spec.origin, encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    return plain(re.split(r"(?<=[.!?])\s+(?=[A-Z(])", paragraph)[0])


def usage() -> str:
    """The text of ``fgdopt --help``: the subcommands, what each does and the module each runs."""
    width = max(map(len, COMMANDS))
    lines = ["usage: fgdopt COMMAND [OPTIONS]", "",
             "GPU-cluster placement studies: FGD, packing heuristics and certified optima. Each command is a study",
             "run as python -m MODULE, with the same options: fgdopt COMMAND --help lists them.", "", "commands:"]
    for name, module in COMMANDS.items():
        lines += textwrap.wrap(summary(module), 110, initial_indent=f"  {name:<{width}}  ",
                               subsequent_indent=" " * (width + 4))
        lines.append(f"  {'':<{width}}  (python -m {module})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run ``fgdopt COMMAND ARGS``: the study's own ``main(ARGS)``; its exit code (0 when it returns None).

    Returns
    -------
    The study's exit code; 2 for an unknown command (with the list of commands on stderr), 0 for ``--help``.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        from experiments.args import unknown_name

        print(f"fgdopt: error: {unknown_name('command', command, COMMANDS)}; fgdopt --help describes them",
              file=sys.stderr)
        return 2
    if os.getcwd() not in sys.path:             # as `python -m`: modules of the current directory import
        sys.path.insert(0, os.getcwd())
    from fgdopt.traces import COMMAND

    module = COMMANDS[command]
    token = COMMAND.set((f"python -m {module}", f"fgdopt {command}"))   # its errors name the command as typed
    try:
        code = importlib.import_module(module).main(rest)
    finally:
        COMMAND.reset(token)
    return 0 if code is None else int(code)


if __name__ == "__main__":
    sys.exit(main())
