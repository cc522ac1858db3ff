"""The command-line dialect every study shares: its parser, its argument types and its checks of files and folders.

Every option is checked when the command line is parsed, before any work starts: a bad value ends the study with
one line on stderr naming the option and the value, and exit code 2 (:class:`StudyParser`)::

    python -m experiments.openb: error: argument --seeds: expected integers >= 0 or ranges A-B with A <= B, got '5-2'

The argument types are small functions of the text (``type=`` of ``add_argument``) raising
:class:`argparse.ArgumentTypeError` with that one line: counts and numbers within bounds (:func:`integer`,
:func:`real`), comma-separated lists of them and of integer ranges (:func:`int_list`, :func:`real_list`), names
from a registry (:func:`names`; :func:`parse_traces`, :func:`parse_policies`), and paths (:func:`existing_file`,
:func:`folder` and its :data:`openb_dir` / :data:`gavel_dir`, :func:`output_dir`, :func:`output_file`). A study builds
its parser with :func:`study_parser` and calls :func:`check_paths` so that no output replaces one of its input files.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NoReturn

from experiments.cli import plain
from fgdopt.plugins import SpecError, is_spec
from fgdopt.policies import MIG_POLICY_NAMES, POLICY_NAMES, policy_factory
from fgdopt.traces import TIMED_VARIANTS, VARIANTS, OneLineParser, check_timed, command_name

FAMILIES = ("gpushare", "multigpu", "gpuspec", "cpu")
"""The openb trace families: the variants whose names start with one of them."""


def unknown_name(what: str, name: str, known: Iterable[str], also: str = "") -> argparse.ArgumentTypeError:
    """The error of a name that is not among ``known``: one line naming it, the closest known name if one is near
    (a misspelling), and the valid ones (``also``: what else is accepted, e.g. ``"or a module:attribute spec"``).

    >>> str(unknown_name("policy", "best-fti", ["fgd", "best-fit"]))
    "unknown policy 'best-fti': did you mean best-fit? (valid: fgd, best-fit)"
    """
    known = list(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f": did you mean {close[0]}?" if close else ""
    valid = ", ".join(known) + (f", {also}" if also else "")
    return argparse.ArgumentTypeError(f"unknown {what} {name!r}{hint} (valid: {valid})")


def study_prog(module: str) -> str:
    """The name of the command that runs ``module``, for its messages: as typed under the ``fgdopt`` dispatcher
    (``fgdopt timeline``, :func:`fgdopt.traces.command_name`), else ``python -m MODULE``."""
    return command_name(f"python -m {module}")


class StudyParser(OneLineParser):
    """The parser of every study: its errors are one line, ``PROG: error: MESSAGE`` on stderr, exit 2; a value
    outside an option's ``choices`` is named with the closest valid one (:func:`unknown_name`). :meth:`quick` sets
    the values of ``--quick`` where the command line does not set them."""

    _argv: list[str] | None = None
    examples: str = ""
    """Command lines shown after the options by ``--help`` (as written: no re-wrapping)."""

    def format_help(self) -> str:
        """argparse's help, then the examples: a first small run (``--quick``, where the study has it, into
        ``out/NAME`` where it takes ``--output``) and the command lines of the study's docstring."""
        lines = []
        options = {option for action in self._actions for option in action.option_strings}
        if "--quick" in options:
            name = self.prog.split()[-1].split(".")[-1]
            output = f" --output out/{name}" if "--output" in options else ""
            lines.append(f"{self.prog} --quick{output}    # a first, small run")
        if self.examples:
            lines.append(self.examples)
        text = super().format_help()
        return text + "\nexamples:\n" + textwrap.indent("\n".join(lines), "  ") + "\n" if lines else text

    def parse_known_args(self, args=None, namespace=None):
        self._argv = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(args, namespace)

    def written(self) -> set[str]:
        """The destinations (``dest``) of the options written on the command line last parsed: it is parsed again
        with every default suppressed, so that only what it sets remains."""
        saved = [(action, action.default) for action in self._actions]
        defaults, self._defaults = self._defaults, {}
        try:
            for action, _ in saved:
                action.default = argparse.SUPPRESS
            found, _ = super().parse_known_args(self._argv, argparse.Namespace())
        finally:
            for action, default in saved:
                action.default = default
            self._defaults = defaults
        return set(vars(found))

    def quick(self, args: argparse.Namespace, **values) -> None:
        """Set ``--quick``'s ``values`` (``dest=value``) on ``args``, each unless its option was written on the
        command line: ``--quick --seeds 1-3`` runs the quick sweep on seeds 1 to 3 (an option written wins)."""
        written = self.written()
        for dest, value in values.items():
            if dest not in written:
                setattr(args, dest, value)

    def _check_value(self, action: argparse.Action, value) -> None:
        if action.choices is not None and value not in action.choices and isinstance(value, str):
            what = action.dest.replace("_", " ")
            raise argparse.ArgumentError(action, str(unknown_name(what, value, map(str, action.choices))))
        super()._check_value(action, value)


def usage_examples(doc: str | None) -> str:
    r"""The command lines a study's docstring shows: its first literal block (after ``::``, e.g. ``Usage::``) of
    ``python -m`` lines as written (dedented), else its first ``python -m ...`` literal; "" if none.

    >>> print(usage_examples("Study.\n\nUsage::\n\n    python -m experiments.x --seeds 1\n      --output DIR\n\nMore."))
    python -m experiments.x --seeds 1
      --output DIR
    >>> usage_examples("Study: ``python -m experiments.y --at 100\n--output DIR``.")
    'python -m experiments.y --at 100 --output DIR'
    """
    doc = doc or ""
    for block in re.finditer(r"::\n\n((?:(?: {4}.*)?\n)+)", doc + "\n"):
        lines = textwrap.dedent(block.group(1)).strip()
        if "python -m " in lines.partition("\n")[0]:
            return lines
    inline = re.search(r"``(python -m experiments\.[^`]+)``", doc)
    return " ".join(inline.group(1).split()) if inline else ""


def study_parser(module: str, doc: str | None) -> StudyParser:
    """The parser of ``python -m MODULE`` (``prog``: :func:`study_prog`) with the first paragraph of the module
    docstring, in plain words, as its description, and the docstring's command lines (:func:`usage_examples`)
    after the options in ``--help``."""
    parser = StudyParser(prog=study_prog(module), description=plain((doc or "").split("\n\n")[0]))
    parser.examples = usage_examples(doc)
    return parser


def _fail(what: str, text: str) -> NoReturn:
    raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")


def _bounds(minimum: float | None, maximum: float | None, strict: bool) -> str:
    parts = []
    if minimum is not None:
        parts.append(f"{'>' if strict else '>='} {minimum:g}")
    if maximum is not None:
        parts.append(f"<= {maximum:g}")
    return " and ".join(parts)


def integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """The type of an integer option within ``[minimum, maximum]`` (either may be None: unbounded)."""
    what = " ".join(filter(None, ("an integer", _bounds(minimum, maximum, False))))

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            _fail(what, text)
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            _fail(what, text)
        return value

    parse.__name__ = "integer"
    return parse


def real(minimum: float | None = None, maximum: float | None = None, *, strict: bool = False) -> Callable[[str], float]:
    """The type of a finite number option: ``> minimum`` (``strict``) or ``>= minimum``, and ``<= maximum``."""
    what = " ".join(filter(None, ("a finite number", _bounds(minimum, maximum, strict))))

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            _fail(what, text)
        if not math.isfinite(value) or (minimum is not None and (value <= minimum if strict else value < minimum)) \
                or (maximum is not None and value > maximum):
            _fail(what, text)
        return value

    parse.__name__ = "number"
    return parse


positive_int = integer(1)
"""Counts: workers, jobs, nodes, repeats (>= 1)."""
non_negative_int = integer(0)
"""Counts where 0 means none (instants, slices, a batch), seeds."""
positive = real(0, strict=True)
"""Durations, time limits, rates, loads, ratios, intervals (> 0, finite)."""
non_negative = real(0)
"""Tolerances and weights (>= 0, finite)."""
fraction = real(0, 1)
"""A share between 0 and 1 inclusive."""


def seconds_or_inf(text: str) -> float:
    """The type of a waiting time option: a number of seconds >= 0, or ``inf`` (never)."""
    try:
        value = float(text)
    except ValueError:
        _fail("a number of seconds >= 0 or inf", text)
    if not value >= 0:
        _fail("a number of seconds >= 0 or inf", text)
    return value


def add_gang_options(parser: argparse.ArgumentParser) -> None:
    """``--gang-reserve-s`` and ``--gang-slowdown``, passed to :func:`fgdopt.timeline.simulate` as
    ``gang_reserve_s`` and ``gang_slowdown`` (its docstring states the rules)."""
    parser.add_argument("--gang-reserve-s", type=seconds_or_inf, default=math.inf, metavar="S",
                        help="under backfill, once the first pending gang (workers > 1) in queue order has waited S "
                        "seconds, no job behind it starts before it (default: inf, plain backfill: a gang may wait "
                        "while smaller jobs pass)")
    parser.add_argument("--gang-slowdown", type=real(1), default=1.0, metavar="X",
                        help="run time factor of a gang whose parts span several nodes (>= 1; default: 1)")


def int_list(minimum: int = 0) -> Callable[[str], list[int]]:
    """The type of a list of integers ``>= minimum`` (>= 0): ``"42-51"`` (inclusive, ``A <= B``), ``"1,5,7"``, or
    both (``"1,4-6"``); the values in the order written, at least one, repeats dropped (``"3,3-4"`` -> 3, 4: a
    value is one point of a sweep, run once)."""
    what = f"integers >= {minimum} or ranges A-B with A <= B"

    def parse(text: str) -> list[int]:
        out: list[int] = []
        for part in text.split(","):
            lo, sep, hi = part.strip().partition("-")
            try:
                a, b = int(lo), int(hi) if sep else int(lo)
            except ValueError:
                _fail(what, text)
            if not minimum <= a <= b:
                _fail(what, text)
            out += range(a, b + 1)
        return list(dict.fromkeys(out))

    parse.__name__ = "integer list"
    return parse


parse_seeds = int_list(0)
"""``--seeds``: ``"42-51"`` -> 42..51 (inclusive); ``"1,5,7"`` -> [1, 5, 7]; the two forms combine."""


def real_list(minimum: float = 0.0, *, strict: bool = True) -> Callable[[str], list[float]]:
    """The type of a comma-separated list of finite numbers ``> minimum`` (``strict``) or ``>= minimum``, in the
    order written, repeats dropped (``"0.9,0.90"`` -> 0.9: a value is one point of a sweep, run once)."""
    one = real(minimum, strict=strict)
    what = f"finite numbers {_bounds(minimum, None, strict)} separated by commas"

    def parse(text: str) -> list[float]:
        parts = [p for p in text.split(",") if p.strip()]
        if not parts:
            _fail(what, text)
        try:
            return list(dict.fromkeys(one(p) for p in parts))
        except argparse.ArgumentTypeError:
            _fail(what, text)

    parse.__name__ = "number list"
    return parse


def names(choices: Iterable[str], what: str = "names") -> Callable[[str], list[str]]:
    """The type of a comma-separated list of names among ``choices`` (at least one; repeats dropped); ``what`` is
    one of them in words (``"method"``, ``"rule"``), for the message of an unknown name (:func:`unknown_name`)."""
    known = tuple(choices)

    def parse(text: str) -> list[str]:
        items = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
        if not items:
            raise unknown_name(what, text, known)
        for n in items:
            if n not in known:
                raise unknown_name(what, n, known)
        return items

    parse.__name__ = what
    return parse


def names_or_specs(text: str, known: Sequence[str], what: str,
                   load: Callable[[str], object] | None = None) -> list[str]:
    """Comma-separated names among ``known`` or ``module:attribute`` specs (at least one, in the order written,
    repeats dropped: each is one point of a sweep, run once).

    ``load(name)`` is called on every spec and every name not in ``known`` (a name added at run time, e.g. by
    :func:`fgdopt.policies.register_policy`): it imports and checks a spec, raising :class:`~fgdopt.plugins.SpecError`
    (whose one line is kept), or raises :class:`ValueError` for an unknown name. Without ``load``, only ``known``
    names are accepted and specs are not checked here.

    Raises
    ------
    argparse.ArgumentTypeError : an empty list, an unknown name (:func:`unknown_name`) or a bad spec; one line.
    """
    items = [n.strip() for n in text.split(",") if n.strip()]
    if not items:
        raise unknown_name(what, text, known, "or a module:attribute spec")
    for n in items:
        if n in known or (is_spec(n) and load is None):
            continue
        try:
            if load is None:
                raise ValueError(n)
            load(n)
        except SpecError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        except ValueError:
            raise unknown_name(what, n, known, "or a module:attribute spec") from None
    return list(dict.fromkeys(items))


def family(trace: str) -> str | None:
    """The family of an openb variant name (``None`` for ``default``)."""
    return next((f for f in FAMILIES if trace.startswith(f)), None)


def parse_traces(text: str) -> list[str]:
    """``--trace``: openb variants separated by commas, a family name (its variants) or ``all``."""
    if text.strip() == "all":
        return list(VARIANTS)
    out: list[str] = []
    for item in (i.strip() for i in text.split(",")):
        if item in FAMILIES:
            out += [v for v in VARIANTS if family(v) == item]
        elif item in VARIANTS:
            out.append(item)
        else:
            raise unknown_name("trace variant", item, [*VARIANTS, *FAMILIES, "all"])
    return list(dict.fromkeys(out))


def parse_timed_traces(text: str) -> list[str]:
    """``--trace`` of the studies over time: as :func:`parse_traces`, of the variants with pod times
    (:data:`~fgdopt.traces.TIMED_VARIANTS`; ``all`` is all of these)."""
    if text.strip() == "all":
        return list(TIMED_VARIANTS)
    traces = parse_traces(text)
    try:
        check_timed(*traces)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return traces


def parse_policies(text: str) -> list[str]:
    """The ``--policies`` argument type of every study: comma-separated names or ``module:attribute`` specs,
    each checked (specs imported) by :func:`fgdopt.policies.policy_factory` (:func:`names_or_specs`).

    Raises
    ------
    argparse.ArgumentTypeError : an unknown name (with the closest valid one) or a bad spec; one line naming it.
    """
    return names_or_specs(text, (*POLICY_NAMES, *MIG_POLICY_NAMES), "policy", policy_factory)


def parse_policy(text: str) -> str:
    """``--policy``: one policy name or ``module:attribute`` spec (:func:`parse_policies`)."""
    found = parse_policies(text)
    if len(found) != 1:
        raise argparse.ArgumentTypeError(f"expected one policy, got {text!r}")
    return found[0]


def existing_file(text: str) -> Path:
    """The type of an input file option: a readable file that exists."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is {'a folder' if path.is_dir() else 'not found'}; expected a file")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} cannot be read ({exc.strerror})") from None
    return path


def folder(what: str = "a folder") -> Callable[[str], Path]:
    """The type of an input folder option (a data folder): a folder that exists; ``what`` says what it should be."""

    def parse(text: str) -> Path:
        path = Path(text)
        if not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text!r} is {'a file' if path.is_file() else 'not found'}; "
                                             f"expected {what}")
        return path

    parse.__name__ = "folder"
    return parse


existing_dir = folder()
"""An input folder that exists."""
openb_dir = folder("the openb folder (`python -m fgdopt.traces download` fetches it)")
"""``--data-dir`` of the openb studies."""
gavel_dir = folder("the folder of Gavel's throughputs (`python -m fgdopt.hetero download` fetches it)")
"""``--data-dir`` / ``--gavel-dir`` of the heterogeneous-GPU studies."""


def output_dir(text: str) -> Path:
    """The type of ``--output``: a folder, or a path where one can be made (no file on the way)."""
    path = Path(text)
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                where = "" if p == path else f"{str(p)!r} in "
                raise argparse.ArgumentTypeError(f"{where}{text!r} is a file; expected a folder")
            break
    return path


def output_file(text: str) -> Path:
    """The type of an output file option (``--csv``): not a folder, in a folder that exists or can be made."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; expected a file name")
    output_dir(str(path.parent))
    return path


def check_stream_loads(parser: argparse.ArgumentParser, traces: Iterable[str], seeds: Iterable[int],
                       loads: Iterable[float], data_dir: str | None, option: str = "--load") -> None:
    """Stop (``parser.error``, one line naming ``option``) when the lowest offered load is at most what the background
    services of a (trace, seed) already hold: :func:`fgdopt.timeline.sources.openb_jobs` refuses it (the services
    are the pods living over a day, some drawn by the seed), checked here on one stream job per (trace, seed)
    before any run; or when the highest one would warm-start more than :data:`MAX_TRACE_JOBS` jobs. A trace whose
    pods cannot make a stream at any load stops with its own error, not ``option``'s."""
    from fgdopt.timeline.sources import openb_jobs

    low, high = min(loads), max(loads)
    for trace in traces:
        for seed in seeds:
            try:
                openb_jobs(trace, high, 1, seed=seed, data_dir=data_dir, max_jobs=MAX_TRACE_JOBS)
                openb_jobs(trace, low, 1, seed=seed, data_dir=data_dir)
            except ValueError as exc:
                try:                                   # 10 x capacity, above any background: the data fails
                    openb_jobs(trace, 10.0, 1, seed=seed, data_dir=data_dir)
                except ValueError as data:
                    said = str(data)
                    parser.error(said if said.startswith(f"openb {trace}:") else f"openb {trace}: {said}")
                parser.error(f"argument {option}: openb {trace}, seed {seed}: {exc}")


MAX_TRACE_JOBS = 5_000_000
"""The most jobs a study over time generates for one run (the whole trace is held in memory, a few hundred bytes a
job): more comes of a rate mistyped (per second for per hour), and would exhaust the memory rather than end."""


def check_trace_jobs(parser: argparse.ArgumentParser, option: str, value: float, jobs: int, counted: str) -> None:
    """Stop (``parser.error``, one line naming ``option`` and its ``value``) when a run would generate ``jobs`` jobs,
    more than :data:`MAX_TRACE_JOBS`; ``counted`` says how the study counts them (its tail of arrivals)."""
    if jobs > MAX_TRACE_JOBS:
        parser.error(f"argument {option}: at {value:g} a run generates {jobs:,} jobs ({counted}), more than the "
                     f"{MAX_TRACE_JOBS:,} it can hold; lower it")


def check_paths(parser: argparse.ArgumentParser, output: Path | None, writes: Sequence[str],
                inputs: dict[str, str | Path | None]) -> None:
    """Stop (``parser.error``) when an output file the study writes into ``output`` (``writes``: names, shell
    patterns allowed) would replace one of the input files ``inputs`` (option -> path) of the same command line."""
    if output is None:
        return
    folder = output.resolve()
    for option, path in inputs.items():
        if path is None:
            continue
        src = Path(path).resolve()
        if src.parent == folder and any(src.match(pattern) for pattern in writes):
            parser.error(f"argument {option}: {str(path)!r} is in the output folder and would be replaced by an "
                         f"output of the same name; copy it elsewhere or choose another --output")
