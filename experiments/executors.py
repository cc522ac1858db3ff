"""Where a study's independent runs execute: inline, in a local process pool (``--jobs N``) or on an existing Dask
distributed cluster (``--dask ADDRESS``).

The studies hand :func:`run_all` the pool that :func:`executor` yields and get the results in job order, whatever
the order of completion, so a run gives the same rows wherever it ran. A job is a top-level function of an
importable module and its arguments: process pools and Dask workers unpickle the function by name (so a study run
as ``python -m`` calls the ``main`` of its importable module, not of its ``__main__`` copy). Dask workers
should run one thread each (``dask worker ADDRESS --nthreads 1``): the solvers are multi-threaded themselves, and
HiGHS keeps one thread pool per process (:func:`formulations.backends.highs_threads`).
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

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


def run_all(pool: Executor | None, fn: Callable[..., Any], jobs: Sequence[tuple],
            done: Callable[[int], None] | None = None) -> list:
    """``[fn(*job) for job in jobs]``, run in ``pool`` (all submitted at once) or inline when it is None.

    Parameters
    ----------
    pool : from :func:`executor`.
    fn : a top-level function of an importable module.
    jobs : the argument tuples.
    done : called with a job's index as it completes (progress bars); in completion order in a pool.

    Returns
    -------
    The results in the order of ``jobs``. The first job to fail raises its exception here, and the jobs not yet
    started are cancelled.
    """
    results: list = [None] * len(jobs)
    if pool is None:
        for k, job in enumerate(jobs):
            results[k] = fn(*job)
            if done is not None:
                done(k)
        return results
    futures = {pool.submit(fn, *job): k for k, job in enumerate(jobs)}
    try:
        for future in as_completed(futures):
            k = futures[future]
            results[k] = future.result()
            if done is not None:
                done(k)
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    return results
