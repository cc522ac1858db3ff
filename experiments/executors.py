"""Where a study's independent runs execute: inline, in a local process pool (``--jobs N``) or on an existing Dask
distributed cluster (``--dask ADDRESS``).

The studies hand :func:`run_all` the pool that :func:`executor` yields and get the results in job order, whatever
the order of completion, so a run gives the same rows wherever it ran. A job is a top-level function of an
importable module and its arguments: process pools and Dask workers unpickle the function by name (so a study run
as ``python -m`` calls the ``main`` of its importable module, not of its ``__main__`` copy). Dask workers
should run one thread each (``dask worker ADDRESS --nthreads 1``): the solvers are multi-threaded themselves, and
HiGHS keeps one thread pool per process (:func:`formulations.highs.highs_threads`).

Resumable sweeps. A :class:`RunJournal` keeps each finished run's result in the output folder as it completes
(``DIR/.runs/STUDY/KEY.pkl``, written atomically; KEY hashes the run's inputs, which the study states as a
JSON-able value). Given a journal, :func:`run_all` loads the runs already there instead of running them (the
study's ``--resume``), saves the others as they finish, and when a run fails or the sweep is interrupted (Ctrl-C,
a killed worker) raises :class:`SweepInterrupted` holding the results that did finish, so that the study writes
valid CSVs of those before it stops (:func:`stop_message`), where they replace no earlier output
(:func:`experiments.outputs.staged`). A study adopts it in three steps::

    journal = RunJournal.for_study(args.output, "openb", resume=args.resume)    # add_resume_option(parser)
    try:
        results = run_all(pool, run_cell, cells, done, journal=journal, keys=keys)   # keys: content_digest of files
    except SweepInterrupted as stop:
        with staged(args.output, partial=True) as tmp:
            write_outputs(stop.finished(), tmp)
        return stop_message(stop)

A study whose runs are one flat list of cells does all of that with :func:`run_cells` (pool, journal and progress
bar from its ``--jobs``, ``--dask``, ``--resume`` and ``--output``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import multiprocessing
import os
import pickle
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from fgdopt.plugins import SpecError
from fgdopt.policies import PolicyError

DASK_MISSING = "--dask needs the 'distributed' package: pip install fgdopt[dask]"


def dask_address(text: str) -> str:
    """The ``--dask`` argument type: the scheduler address, once ``distributed`` is known to be importable.

    Raises
    ------
    argparse.ArgumentTypeError : ``distributed`` is not installed (the message says how to install it).
    """
    if importlib.util.find_spec("distributed") is None:
        raise argparse.ArgumentTypeError(DASK_MISSING)
    return text


def add_dask_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--dask ADDRESS`` (default: none, the local ``--jobs`` pool) to a study's command line."""
    parser.add_argument("--dask", type=dask_address, default=None, metavar="ADDRESS",
                        help="run on the Dask distributed cluster of this scheduler (e.g. tcp://host:8786) "
                        "instead of local processes; --jobs is then ignored")


@contextmanager
def executor(jobs: int = 1, dask: str | None = None) -> Iterator[Executor | None]:
    """The pool a study runs its jobs in, shut down on exit.

    Parameters
    ----------
    jobs : local worker processes (started with ``spawn``: a forked child inherits the solver thread pools of
        this process and can hang); 1 or less runs inline. Ignored when ``dask`` is given.
    dask : address of a running Dask scheduler (``tcp://HOST:8786``): the jobs run on its workers, each job a
        separate task (``pure=False``: never merged with an identical call).

    Yields
    ------
    A :class:`concurrent.futures.Executor`, or None for inline runs.

    Raises
    ------
    ImportError : ``dask`` is given and ``distributed`` is not installed.
    """
    if dask is not None:
        try:
            from distributed import Client
        except ImportError:
            raise ImportError(DASK_MISSING) from None
        with Client(dask) as client:
            threads = client.nthreads()
            if any(n > 1 for n in threads.values()):
                warnings.warn(f"Dask workers with several threads ({sorted(set(threads.values()))}) run jobs side by "
                              "side in one process; start them with --nthreads 1", stacklevel=3)
            yield client.get_executor(pure=False)
    elif jobs > 1:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            yield pool
    else:
        yield None


class RunJournal:
    """The finished runs of one study's sweep in its output folder: one pickle per run, keyed by its inputs.

    Parameters
    ----------
    folder : where the results go, normally ``OUTPUT/.runs/STUDY`` (:meth:`for_study`).
    resume : reuse the runs already in ``folder`` (``--resume``); otherwise they are not reused, so a sweep
        without ``--resume`` starts afresh. They are never deleted: a failing sweep loses nothing, and a later
        ``--resume`` reuses every run whose inputs (its key) match.

    Notes
    -----
    A run's key is the SHA-256 of its inputs as canonical JSON (:meth:`key`) with the code's digest
    (:func:`code_digest`): the study passes, per job, every input that changes its result (the job's arguments, its
    parameters; not the worker count), with each input file as the digest of its content (:func:`content_digest`),
    not its path: a file edited since is a new run, and so is every run after any change to the code that computes
    it (a result of older code, e.g. without a diagnostic added since, is never reused).
    Results are pickled (any picklable value, e.g. rows and DataFrames) to a temporary file renamed into place, so a run
    killed while writing leaves no half file; a file that does not unpickle (written by another version of the
    code) counts as not finished.
    """

    def __init__(self, folder: str | os.PathLike, *, resume: bool = False):
        self.folder = Path(folder)
        self.resume = resume

    @classmethod
    def for_study(cls, output: str | os.PathLike | None, study: str, *, resume: bool = False) -> RunJournal | None:
        """The journal of ``study`` in the output folder ``output`` (``OUTPUT/.runs/STUDY``); None without one."""
        return None if output is None else cls(Path(output) / ".runs" / study, resume=resume)

    @staticmethod
    def key(inputs: Any) -> str:
        """The hex SHA-256 of ``inputs`` as JSON (sorted keys; tuples as lists, paths and other objects as str)."""
        text = json.dumps(inputs, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, inputs: Any) -> Path:
        return self.folder / f"{self.key({'code': code_digest(), 'inputs': inputs})}.pkl"

    def load(self, inputs: Any) -> tuple[bool, Any]:
        """``(True, result)`` for a finished run with these inputs, else ``(False, None)``."""
        if not self.resume:
            return False, None
        path = self._path(inputs)
        try:
            with path.open("rb") as f:
                return True, pickle.load(f)
        except FileNotFoundError:
            return False, None
        except Exception:                       # unreadable (another code version): run it again
            return False, None

    def save(self, inputs: Any, result: Any) -> None:
        """Keep ``result`` as the finished run with these inputs (atomic: a temporary file renamed into place)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(inputs)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with tmp.open("wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)

    def __len__(self) -> int:
        """The finished runs in the folder (reused or not)."""
        return sum(1 for _ in self.folder.glob("*.pkl"))


CODE_PACKAGES = ("fgdopt", "formulations", "experiments")
"""The packages whose Python sources make up :func:`code_digest`."""
_CODE: list[str] = []


def code_digest() -> str:
    """The hex SHA-256 of every Python source of :data:`CODE_PACKAGES` (relative path and content, in path order):
    what a :class:`RunJournal` key holds of the code. Computed once per process."""
    if not _CODE:
        root = Path(__file__).resolve().parents[1]
        whole = hashlib.sha256()
        for path in sorted(p for package in CODE_PACKAGES for p in (root / package).rglob("*.py")):
            whole.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE.append(whole.hexdigest())
    return _CODE[0]


_DIGESTS: dict[tuple[str, int, int], str] = {}


def content_digest(*paths: str | os.PathLike | None) -> str | None:
    """The hex SHA-256 of the contents of the files ``paths`` (in order; None when no path is given): the form in
    which an input file enters a :class:`RunJournal` key. Cached per (path, size, mtime)."""
    files = [Path(p) for p in paths if p is not None]
    if not files:
        return None
    whole = hashlib.sha256()
    for path in files:
        stat = path.stat()
        cache = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if cache not in _DIGESTS:
            one = hashlib.sha256()
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    one.update(block)
            _DIGESTS[cache] = one.hexdigest()
        whole.update(_DIGESTS[cache].encode())
    return whole.hexdigest()


def policy_digest(name: str) -> str | list:
    """A policy (or discipline) name as it enters a :class:`RunJournal` key: a built-in name as is; a
    ``module:attribute`` spec with the digest of its module's source file, so that editing the code reruns it."""
    if ":" not in name:
        return name
    module = name.partition(":")[0].strip()
    if module.endswith(".py"):
        source: str | None = module
    else:
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        source = found.origin if found is not None and found.origin not in (None, "built-in", "frozen") else None
    return [name, content_digest(source) if source is not None and Path(source).is_file() else None]


class SweepInterrupted(Exception):
    """A sweep stopped before its end: a run failed, or it was interrupted (Ctrl-C, a killed worker).

    Its ``__cause__`` is the original exception and its message the cause's one line.

    Attributes
    ----------
    results : list
        One entry per job, in job order: the result of every job that finished (run now or loaded from the
        journal), None for the others.
    done : list of bool
        Which jobs finished.
    partial : Any
        Free for the study to attach what it built from the finished results (e.g. a frame), before re-raising.
    """

    def __init__(self, results: list, done: list[bool], cause: BaseException):
        super().__init__(f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__)
        self.results, self.done, self.partial = results, done, None

    def finished(self) -> list:
        """The results of the finished jobs, in job order."""
        return [r for r, ok in zip(self.results, self.done, strict=True) if ok]


class StudyError(Exception):
    """A run whose inputs cannot give a result (e.g. a rate its cluster cannot keep up with): one line, no
    traceback (:func:`stop_message`)."""


USER_ERRORS = (PolicyError, SpecError, StudyError, KeyboardInterrupt)
"""Causes a study reports in one line (:func:`stop_message`); any other failure keeps its traceback."""


def stop_message(error: BaseException, prog: str = "error") -> int:
    """Report a stopped study: one line on stderr for a :data:`USER_ERRORS` cause, and the exit code.

    Parameters
    ----------
    error : a :class:`SweepInterrupted`, or a :data:`USER_ERRORS` instance raised outside a journaled sweep.
    prog : the line's prefix.

    Returns
    -------
    130 after Ctrl-C, 2 after a policy or spec error.

    Raises
    ------
    BaseException : the cause itself when it is not one of :data:`USER_ERRORS` (a bug keeps its traceback).
    """
    cause = error.__cause__ if isinstance(error, SweepInterrupted) and error.__cause__ is not None else error
    if not isinstance(cause, USER_ERRORS):
        raise cause
    if isinstance(cause, KeyboardInterrupt):
        print(f"{prog}: interrupted; the finished runs are written (rerun with --resume to continue)",
              file=sys.stderr)
        return 130
    print(f"{prog}: {cause}", file=sys.stderr)
    return 2


def add_resume_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--resume``: keep the runs already finished in the output folder (same inputs) and run the rest."""
    parser.add_argument("--resume", action="store_true",
                        help="skip the runs already finished in the output folder with the same inputs "
                        "(kept in OUTPUT/.runs/); without it the sweep starts afresh")


def run_cells(study: str, fn: Callable[..., Any], cells: Sequence[tuple], args: argparse.Namespace,
              keys: Sequence[Any] | None = None) -> list:
    """:func:`run_all` of ``cells`` in the pool of ``args.jobs`` / ``args.dask``, with the journal of ``study`` in
    ``args.output`` (``args.resume``) and a progress bar; raises :class:`SweepInterrupted` as :func:`run_all`."""
    journal = RunJournal.for_study(args.output, study, resume=args.resume)
    with executor(args.jobs, args.dask) as pool, tqdm(total=len(cells), desc="runs", unit="run",
                                                       file=sys.stderr) as bar:
        return run_all(pool, fn, cells, lambda _: bar.update(), journal=journal, keys=keys)


def run_and_write(study: str, fn: Callable[..., Any], cells: Sequence[tuple], args: argparse.Namespace,
                  keys: Sequence[Any] | None, write: Callable[[list, Path], Any], prog: str) -> tuple[Any, int]:
    """A flat sweep from start to files: :func:`run_cells`, then ``write(results, folder)`` into a folder staged
    beside ``args.output`` (:func:`experiments.outputs.staged`: its files move into place once all are written;
    without ``args.output``, a temporary folder that is dropped). Returns (what ``write`` returned, 0). A stopped
    sweep writes its finished runs only where ``args.output`` has no file of the same name, reports itself in one
    line (:func:`stop_message`) and returns (None, its exit code)."""
    from experiments.outputs import staged

    def folder(partial: bool = False):
        return staged(args.output, partial=partial) if args.output is not None else _scratch()

    try:
        results = run_cells(study, fn, cells, args, keys)
    except SweepInterrupted as stop:
        with folder(partial=True) as tmp:
            write(stop.finished(), tmp)
        return None, stop_message(stop, prog)
    with folder() as tmp:
        return write(results, tmp), 0


@contextmanager
def _scratch() -> Iterator[Path]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def run_all(pool: Executor | None, fn: Callable[..., Any], jobs: Sequence[tuple],
            done: Callable[[int], None] | None = None, *, journal: RunJournal | None = None,
            keys: Sequence[Any] | None = None) -> list:
    """``[fn(*job) for job in jobs]``, run in ``pool`` (all submitted at once) or inline when it is None.

    Parameters
    ----------
    pool : from :func:`executor`.
    fn : a top-level function of an importable module.
    jobs : the argument tuples.
    done : called with a job's index as it completes (progress bars); in completion order in a pool, and for the
        jobs loaded from the journal first.
    journal : keeps each finished job's result as it completes, and gives back those already there
        (:class:`RunJournal`).
    keys : with ``journal``: per job, the JSON-able inputs its result depends on (default: the job tuple itself,
        when its arguments are plain values).

    Returns
    -------
    The results in the order of ``jobs``.

    Raises
    ------
    SweepInterrupted : with a journal, when a job fails or the sweep is interrupted (``__cause__``: the original
        exception; the finished results attached). The jobs not yet started are cancelled.
    BaseException : without a journal, the first job to fail raises its exception here, and the jobs not yet
        started are cancelled.
    """
    results: list = [None] * len(jobs)
    finished = [False] * len(jobs)
    if journal is not None:
        keys = list(jobs) if keys is None else list(keys)
        if len(keys) != len(jobs):
            raise ValueError(f"{len(keys)} keys for {len(jobs)} jobs")
        for k in range(len(jobs)):
            finished[k], results[k] = journal.load(keys[k])
            if finished[k] and done is not None:
                done(k)

    def complete(k: int, result: Any) -> None:
        results[k], finished[k] = result, True
        if journal is not None:
            journal.save(keys[k], result)
        if done is not None:
            done(k)

    todo = [k for k in range(len(jobs)) if not finished[k]]
    futures: dict = {}
    try:
        if pool is None:
            for k in todo:
                complete(k, fn(*jobs[k]))
        else:
            futures = {pool.submit(fn, *jobs[k]): k for k in todo}
            for future in as_completed(futures):
                complete(futures[future], future.result())
    except BaseException as exc:
        for future in futures:
            future.cancel()
        if journal is None:
            raise
        raise SweepInterrupted(results, finished, exc) from exc
    return results
