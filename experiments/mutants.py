"""A mutation pass over the time engine: one-line changes to the code, and whether the tests catch each one.

Usage::

    python -m experiments.mutants [--sample 60] [--seed 0] [--timeout 180] [--tests tests/test_timeline.py ...]
        [--paths fgdopt/timeline fgdopt/hetero formulations/hetero.py] [--list] [--output DIR]

A *mutant* changes one token of the code (never a string, a comment or an f-string): a comparison flipped
(``<`` / ``<=``, ``>`` / ``>=``, ``==`` / ``!=``), ``+`` / ``-`` swapped, a term dropped (``a + b`` -> ``a``),
an integer constant off by one, ``min`` / ``max`` (and ``np.minimum`` / ``np.maximum``) swapped, ``and`` / ``or``
swapped, a ``side="left"`` / ``"right"`` swapped. Every candidate of the files under ``--paths`` is listed (line
numbers of lines that ``raise`` are skipped: their messages); ``--sample`` of them are drawn with ``--seed`` (the
same draw for the same code, so that runs before and after new tests compare), each applied to a copy of the
repository (``git ls-files``) and judged by the test files ``--tests`` (``pytest -x``, under ``nice``, at most
``--timeout`` seconds: a timeout counts as caught). Prints one line per mutant and the count caught; with
``--output``, writes ``mutants.csv`` (``file, line, kind, before, after, outcome, seconds, failed``: the first
test that failed). ``--only FILE:LINE ...`` reruns some of the drawn mutants.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from experiments.args import non_negative_int, output_dir, positive, positive_int, study_parser
from experiments.outputs import staged

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("fgdopt/timeline", "fgdopt/hetero", "formulations/hetero.py")
TESTS = ("tests/test_timeline.py", "tests/test_preemption.py", "tests/test_hetero_time.py", "tests/test_hetero.py",
         "tests/test_mig_time.py")
SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "+": "-", "-": "+",
         "min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum", "and": "or", "or": "and",
         '"left"': '"right"', '"right"': '"left"'}
VALUE_ENDS = {")", "]"}


@dataclass(frozen=True)
class Mutant:
    """Replace ``before`` by ``after`` at ``line`` (1-based), columns ``[start, end)`` of ``file``."""

    file: str
    line: int
    start: int
    end: int
    before: str
    after: str
    kind: str

    def apply(self, text: str) -> str:
        lines = text.splitlines(keepends=True)
        row = lines[self.line - 1]
        assert row[self.start:self.end] == self.before, (self, row)
        lines[self.line - 1] = row[:self.start] + self.after + row[self.end:]
        return "".join(lines)


def candidates(path: Path, rel: str) -> list[Mutant]:
    """Every mutant of one file (module docstring)."""
    text = path.read_text()
    lines = text.splitlines()
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    out: list[Mutant] = []
    depth = 0                                                      # inside an f-string
    for k, tok in enumerate(tokens):
        name = tokenize.tok_name[tok.type]
        if name == "FSTRING_START":
            depth += 1
        elif name == "FSTRING_END":
            depth -= 1
        if depth or tok.start[0] != tok.end[0] or tok.start[0] > len(lines) or "raise " in lines[tok.start[0] - 1]:
            continue
        (row, col), (_, end) = tok.start, tok.end
        prev = tokens[k - 1] if k else None
        binary = prev is not None and (prev.type in (tokenize.NAME, tokenize.NUMBER) or prev.string in VALUE_ENDS)
        if tok.type == tokenize.OP and tok.string in SWAPS and (tok.string not in "+-" or binary):
            out.append(Mutant(rel, row, col, end, tok.string, SWAPS[tok.string], "flip"))
            nxt, after = tokens[k + 1], tokens[k + 2] if k + 2 < len(tokens) else None
            if tok.string in "+-" and nxt.type in (tokenize.NAME, tokenize.NUMBER) and after is not None \
                    and (after.string in (")", ",", "]") or after.type == tokenize.NEWLINE) and nxt.start[0] == row:
                out.append(Mutant(rel, row, col, nxt.end[1], lines[row - 1][col:nxt.end[1]], "", "drop"))
        elif tok.type == tokenize.NAME and tok.string in SWAPS or tok.type == tokenize.STRING and tok.string in SWAPS:
            out.append(Mutant(rel, row, col, end, tok.string, SWAPS[tok.string], "swap"))
        elif tok.type == tokenize.NUMBER and tok.string.isdigit():
            out.append(Mutant(rel, row, col, end, tok.string, str(int(tok.string) + 1), "off-by-one"))
    return out


def all_candidates(paths: list[str]) -> list[Mutant]:
    files: list[Path] = []
    for p in paths:
        target = ROOT / p
        files += sorted(target.rglob("*.py")) if target.is_dir() else [target]
    return [m for f in files for m in candidates(f, str(f.relative_to(ROOT)))]


def run_mutant(copy: Path, mutant: Mutant, tests: list[str], timeout: float) -> tuple[str, float, str]:
    """``caught``, ``survived``, ``timeout`` (caught) or ``invalid`` (does not compile), seconds taken, and the
    first test that failed."""
    path = copy / mutant.file
    original = path.read_text()
    mutated = mutant.apply(original)
    try:
        compile(mutated, str(path), "exec")
    except SyntaxError:
        return "invalid", 0.0, ""
    path.write_text(mutated)
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    failed = ""
    try:
        done = subprocess.run(["nice", "-n", "10", sys.executable, "-m", "pytest", "-x", "-q", "-p",
                               "no:cacheprovider", "-rf", *tests], cwd=copy, env=env, capture_output=True,
                              text=True, timeout=timeout)
        outcome = "survived" if done.returncode == 0 else "caught"
        failed = next((line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED ")),
                      "" if done.returncode == 0 else done.stdout.strip().splitlines()[-1:][0][:80])
    except subprocess.TimeoutExpired:
        outcome = "timeout"
    finally:
        path.write_text(original)
    return outcome, time.perf_counter() - t0, failed


def main(argv: list[str] | None = None) -> int:
    parser = study_parser("experiments.mutants", __doc__)
    parser.add_argument("--paths", nargs="+", default=list(PATHS), help="files and folders to mutate")
    parser.add_argument("--tests", nargs="+", default=list(TESTS), help="test files that judge each mutant")
    parser.add_argument("--sample", type=positive_int, default=60, help="mutants drawn (default: 60)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seed of the draw (default: 0)")
    parser.add_argument("--timeout", type=positive, default=180.0, help="seconds per mutant (default: 180)")
    parser.add_argument("--list", action="store_true", help="only print the drawn mutants")
    parser.add_argument("--only", nargs="+", default=None, metavar="FILE:LINE",
                        help="run only the drawn mutants at these places")
    parser.add_argument("--output", type=output_dir, default=None, help="folder for mutants.csv")
    args = parser.parse_args(argv)
    for p in [*args.paths, *args.tests]:
        if not (ROOT / p).exists():
            parser.error(f"{p}: not found under {ROOT}")
    pool = all_candidates(args.paths)
    drawn = sorted(random.Random(args.seed).sample(pool, min(args.sample, len(pool))),
                   key=lambda m: (m.file, m.line, m.start))
    if args.only is not None:
        drawn = [m for m in drawn if f"{m.file}:{m.line}" in args.only]
    print(f"{len(pool)} candidate mutants, {len(drawn)} drawn (seed {args.seed})", file=sys.stderr)
    if args.list:
        for m in drawn:
            print(f"{m.file}:{m.line}: {m.kind} {m.before!r} -> {m.after!r}")
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="fgdopt-mutants-") as tmp:
        copy = Path(tmp)
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.split()
        for name in listed:
            if (ROOT / name).is_file():
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, copy / name)
        for k, m in enumerate(drawn):
            outcome, seconds, failed = run_mutant(copy, m, args.tests, args.timeout)
            rows.append({"file": m.file, "line": m.line, "kind": m.kind, "before": m.before, "after": m.after,
                         "outcome": outcome, "seconds": round(seconds, 1), "failed": failed})
            print(f"[{k + 1}/{len(drawn)}] {outcome:8} {m.file}:{m.line}: {m.before!r} -> {m.after!r} "
                  f"({seconds:.0f} s) {failed}", flush=True)
    frame = pd.DataFrame(rows)
    valid = frame[frame.outcome != "invalid"]
    caught = int(valid.outcome.isin(["caught", "timeout"]).sum())
    print(f"caught {caught} of {len(valid)} mutants ({len(frame) - len(valid)} invalid)")
    if args.output is not None:
        with staged(args.output) as out:
            frame.to_csv(out / "mutants.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
