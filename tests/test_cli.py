"""The ``fgdopt`` command: its subcommands are the studies (one table entry each), run with the studies' own
parsers; ``--help`` lists them; pyproject declares it; every study module with a ``main`` has a subcommand."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from experiments import cli, gap
from fgdopt.suites import adversarial_instances

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_declares_the_console_script():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, attribute = scripts["fgdopt"].partition(":")
    assert (module, attribute) == ("experiments.cli", "main")


def test_help_lists_every_study(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, module in cli.COMMANDS.items():
        assert f"  {name} " in out and f"(python -m {module})" in out
    assert "Optimality gaps: every online policy" in out
    assert cli.main([]) == 2 and "commands:" in capsys.readouterr().err
    assert cli.main(["no-such-study"]) == 2
    assert capsys.readouterr().err == ("fgdopt: error: unknown command 'no-such-study' (valid: "
                                       f"{', '.join(cli.COMMANDS)}); fgdopt --help describes them\n")


def test_every_study_with_a_main_is_a_subcommand():
    studies = set()
    for path in (ROOT / "experiments").glob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body):
            studies.add(f"experiments.{path.stem}")
    assert studies - {"experiments.cli"} == set(cli.COMMANDS.values()) - {"fgdopt.traces"}


def test_a_subcommand_is_its_study(tmp_path, capsys):
    for inst in adversarial_instances()[:2]:
        inst.save(tmp_path / f"{inst.name}.json")
    argv = ["--instances", str(tmp_path), "--methods", "lp", "--policies", "fgd,best-fit", "--format", "csv",
            "--jobs", "1"]
    assert gap.main(argv) == 0
    direct = capsys.readouterr().out
    assert cli.main(["gap", *argv]) == 0
    via_cli = capsys.readouterr().out
    strip = [[cell for k, cell in enumerate(line.split(",")) if k != 8] for line in direct.splitlines()]  # wall_s
    assert strip == [[cell for k, cell in enumerate(line.split(",")) if k != 8] for line in via_cli.splitlines()]
    with pytest.raises(SystemExit) as stop:
        cli.main(["replay", "--help"])
    assert stop.value.code == 0 and "--resume" in capsys.readouterr().out
