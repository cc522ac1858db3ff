"""The online placement policies of docs/semantics.md "Online placement" and their registry.

Each policy is a callable ``policy(state, task) -> (node, gpu_ids) | None`` that reads a
:class:`~fgdopt.state.ClusterState` without mutating it (see :mod:`fgdopt.policies.base` for the
protocol and the node-rank tie rule, and each module for its score). The paper's six policies score
nodes as the reference simulator's Kubernetes plugins of the same name do (integer scores 0..100):

=====================  ==========================================================
``fgd``                least fragmentation increase (:mod:`~fgdopt.policies.fgd`)
``best-fit``           least normalized leftover (:mod:`~fgdopt.policies.best_fit`)
``dot-product``        least free·demand alignment (:mod:`~fgdopt.policies.dot_product`)
``gpu-packing``        used GPUs, then used nodes, then idle nodes (:mod:`~fgdopt.policies.gpu_packing`)
``gpu-clustering``     nodes hosting the same GPU kind (:mod:`~fgdopt.policies.gpu_clustering`)
``random``             uniform feasible node and GPU (:mod:`~fgdopt.policies.random_choice`)
``fgd-exact``          fgdopt's FGD on exact deltas, best-fit ties (:mod:`~fgdopt.policies.fgd`)
``unified-device``     best-fit on pooled GPUs (:mod:`~fgdopt.policies.unified_device`)
``per-gpu-dimension``  best-fit with fixed per-GPU vectors (:mod:`~fgdopt.policies.per_gpu_dimension`)
=====================  ==========================================================

Over time only, ``drain-fit`` and ``finish-align`` (:data:`TIME_POLICY_NAMES`, :mod:`~fgdopt.policies.drain_fit`):
least extension of a node's drain time (the latest end of its running jobs), or least misalignment of the job's end
with it (nodes drain together), best-fit ties (``drain-fit-fgd``, ``finish-align-fgd``: FGD ties); *time-aware*
policies that the time engine calls with the clock and the job's run time (the tie policy when called without
them). The reservation wrapper for whole-node jobs, :class:`~fgdopt.policies.reserve.Reserving`, is built per run
from the jobs, so it is not in the registry.

Over time only, ``health-aware`` (:data:`HEALTH_POLICY_NAMES`, :mod:`~fgdopt.policies.health`): best-fit on the
nodes where a task gets only healthy GPUs (speed factor at least 0.8); the time engine gives it the per-GPU speed
factors of a run with them (:mod:`fgdopt.timeline.failures`; best-fit without them).

On MIG clusters, ``mig-fgd``, ``mig-first-fit``, ``mig-best-fit`` and ``mig-greedy`` (:data:`MIG_POLICY_NAMES`,
:mod:`fgdopt.policies.mig`, on the slice rule of :mod:`fgdopt.mig.slices`).

Not in the registry, since it needs the run's jobs: :class:`~fgdopt.policies.interference.InterferenceFGD`, FGD plus
a weighted slowdown of the jobs a sharing task would join on a GPU (built per run from the jobs' co-location
classes, :func:`~fgdopt.policies.interference.interference_fgd`; a *job-aware* policy of the time engine).

Your own policy
---------------
A policy is any object built by a *factory* (a class or a function) that :func:`make_policy` calls with the
keyword arguments ``seed``, ``workload``, ``ranks``, ``gpu_choice`` and ``topology`` (below; a factory may take
``**options`` for those it ignores). The object is called once per arriving task::

    policy(state, task) -> (node, gpu_ids) | None

* ``state`` is the :class:`~fgdopt.state.ClusterState` of the run; a policy reads it and never mutates it. What
  it may read: ``state.cpu_left`` (milli-cores), ``state.mem_left`` (MiB) and ``state.gpu_left`` (milli-GPU,
  one row per node, one column per GPU slot) of every node, ``state.cluster`` (capacities and GPU models),
  ``state.feasible_nodes(task)`` (the one feasibility rule of docs/semantics.md "Feasibility", a boolean mask over
  nodes) and ``state.fits(task, node)``.
* ``task`` is a :class:`~fgdopt.model.Task` (``cpu_milli``, ``memory_mib``, ``num_gpu``, ``gpu_milli``,
  ``gpu_spec``).
* It returns the node index and the ids of the GPUs that each receive ``task.gpu_milli`` (``()`` for a
  CPU-only task; one GPU for a sharing task; ``num_gpu`` completely free GPUs for a whole-GPU task), or
  ``None`` to leave the task unallocated. A choice where the task does not fit stops the run with a
  :class:`PolicyError` naming the policy and the task.
* A *gang* (a task of ``workers > 1`` identical parts) needs nothing of the policy: it is placed part by part, the
  policy called once per part (``task.workers == 1``) on the state with the earlier parts held
  (:func:`fgdopt.policies.gang.choose_parts`).

The factory's keyword arguments: ``seed`` (int) seeds the policy's own random draws; ``workload`` is the target
workload M (:class:`~fgdopt.frag.Workload`, built from the trace before inflation), the input of the one
evaluator (:func:`fgdopt.frag.fragmentation_delta`, :func:`~fgdopt.frag.fragmentation_after`,
:func:`~fgdopt.frag.node_fragmentations`); ``ranks`` (an int array or None) are the node ranks of the tie rule
(:mod:`fgdopt.policies.base`: :func:`~fgdopt.policies.base.pick`, :class:`~fgdopt.policies.base.RankedPolicy`,
which takes all five keywords, keeps M as ``self.workload``, and whose subclasses only implement
``score(state, task, nodes)``); ``gpu_choice`` and ``topology`` pick the GPUs of
a whole-GPU task (:data:`GPU_CHOICES`; a policy without that choice should raise ``ValueError`` for any
``gpu_choice`` but ``"lowest-index"``).

A policy is named either by its registered name (:data:`POLICY_NAMES`, or one added in this process with
:func:`register_policy`) or by a ``module:attribute`` spec (:mod:`fgdopt.plugins`), ``"mypkg.mymod:MyPolicy"``
or ``"path/to/mine.py:MyPolicy"``: every study that takes ``--policies`` accepts specs, and since the spec
string is what travels to ``--jobs`` processes and ``--dask`` workers, each worker imports the module itself.
Rows and tables name a policy by the string given, except a spec whose object has a ``name`` attribute (a
non-empty string, e.g. the class attribute below): that name heads its rows and columns, unless another policy of
the same run has that name too (:func:`policy_labels`). A minimal policy, the most-loaded feasible node::

    from fgdopt.policies.base import RankedPolicy

    class MostLoaded(RankedPolicy):
        name = "most-loaded"

        def score(self, state, task, nodes):                 # higher is better; ties go to the lowest rank
            return -state.gpu_left[nodes].sum(axis=1)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fgdopt.frag import Workload
from fgdopt.plugins import SpecError, check_call, is_spec, resolve_spec
from fgdopt.policies.base import GPU_CHOICES, Choice, Policy, PolicyError
from fgdopt.policies.best_fit import BestFit
from fgdopt.policies.dot_product import DotProduct
from fgdopt.policies.drain_fit import DrainFit, DrainFitFGD, FinishAlign, FinishAlignFGD
from fgdopt.policies.fgd import FGD, FGDExact
from fgdopt.policies.gpu_clustering import GpuClustering
from fgdopt.policies.gpu_packing import GpuPacking
from fgdopt.policies.health import HealthAware
from fgdopt.policies.mig import MigBestFit, MigFGD, MigFirstFit, MigGreedy
from fgdopt.policies.per_gpu_dimension import PerGpuDimension
from fgdopt.policies.random_choice import RandomFit
from fgdopt.policies.unified_device import UnifiedDevice
from fgdopt.topology import TopologyMap

POLICY_NAMES = ("fgd", "best-fit", "dot-product", "gpu-packing", "gpu-clustering", "random", "fgd-exact",
                "unified-device", "per-gpu-dimension")

PAPER_POLICIES = ("random", "dot-product", "gpu-clustering", "gpu-packing", "best-fit", "fgd")
"""The six policies of the paper's figures, in its order (each as the reference simulator's plugin)."""

_CLASSES = {cls.name: cls for cls in (BestFit, DotProduct, GpuPacking, GpuClustering, RandomFit,
                                      UnifiedDevice, PerGpuDimension)}
_NEEDS_WORKLOAD = {cls.name: cls for cls in (FGD, FGDExact)}
TIME_POLICY_NAMES = (DrainFit.name, FinishAlign.name, DrainFitFGD.name, FinishAlignFGD.name)
"""The time-aware policies (the time engine gives them the clock and the job's run time; docs/semantics.md, "Time")."""
_CLASSES.update({DrainFit.name: DrainFit, FinishAlign.name: FinishAlign})
_NEEDS_WORKLOAD.update({DrainFitFGD.name: DrainFitFGD, FinishAlignFGD.name: FinishAlignFGD})
HEALTH_POLICY_NAMES = (HealthAware.name,)
"""The health-aware policies (the time engine gives them the per-GPU speed factors; :mod:`fgdopt.policies.health`)."""
_CLASSES[HealthAware.name] = HealthAware
# MIG clusters (fgdopt.policies.mig)
MIG_POLICY_NAMES = (MigFGD.name, MigFirstFit.name, MigBestFit.name, MigGreedy.name)
_CLASSES.update({cls.name: cls for cls in (MigFirstFit, MigBestFit, MigGreedy)})
_NEEDS_WORKLOAD[MigFGD.name] = MigFGD
WORKLOAD_POLICIES = tuple(_NEEDS_WORKLOAD)
"""The policies that need the target workload M (``make_policy(..., workload=...)``)."""


FACTORY_KEYWORDS = ("seed", "workload", "ranks", "gpu_choice", "topology")
"""The keyword arguments :func:`make_policy` passes to a policy factory (a registered or ``module:attribute`` one)."""

_REGISTERED: dict[str, Callable[..., Policy]] = {}


def register_policy(name: str, factory: Callable[..., Policy]) -> None:
    """Make ``factory`` available as policy ``name`` in this process (e.g. ``make_policy(name)``).

    Parameters
    ----------
    name : a new name without a colon (colons mark ``module:attribute`` specs).
    factory : a class or function called with the keywords of :data:`FACTORY_KEYWORDS`, returning a policy.

    Raises
    ------
    ValueError : the name is built in or holds a colon; the factory's signature does not take the keywords.

    Notes
    -----
    The registration lives in this process only: local worker processes (``--jobs``) and Dask workers do not see
    it. A study run with workers names the policy by its ``module:attribute`` spec instead.
    """
    if is_spec(name) or name in _CLASSES or name in _NEEDS_WORKLOAD:
        raise ValueError(f"cannot register policy {name!r}: built-in names and names with ':' are reserved")
    _REGISTERED[name] = check_call(factory, name, FACTORY_KEYWORDS, kind="policy")


def unregister_policy(name: str) -> None:
    """Remove a policy added by :func:`register_policy` (no error if it is not registered)."""
    _REGISTERED.pop(name, None)


def policy_factory(name: str) -> Callable[..., Policy]:
    """The factory of a registered name or a ``module:attribute`` spec, imported and checked now.

    Raises
    ------
    SpecError : a spec that cannot be imported or whose factory does not take :data:`FACTORY_KEYWORDS`.
    ValueError : an unknown name (the message lists the valid ones).
    """
    if is_spec(name):
        return check_call(resolve_spec(name, kind="policy"), name, FACTORY_KEYWORDS, kind="policy")
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name in _NEEDS_WORKLOAD or name in _CLASSES:
        return _make_builtin
    raise ValueError(f"unknown policy {name!r}; valid names: {', '.join((*POLICY_NAMES, *_REGISTERED))}, "
                     "or a module:attribute spec")


def needs_workload(name: str) -> bool:
    """Whether policy ``name`` may read the target workload M: the FGD policies, and every policy that is not
    built in (it cannot be known, so callers build M for it)."""
    return name in _NEEDS_WORKLOAD or (name not in _CLASSES)


def policy_labels(names: list[str] | tuple[str, ...]) -> dict[str, str]:
    """How rows and tables name the policies ``names`` of one run: a ``module:attribute`` spec whose object has a
    ``name`` attribute (a non-empty string) by that name, every other policy by the string given. A name that
    would be the label of two policies (or is already another policy's name) is not used: the spec stays.

    Examples
    --------
    >>> policy_labels(["fgd", "best-fit"])
    {'fgd': 'fgd', 'best-fit': 'best-fit'}

    Raises
    ------
    SpecError : a spec that cannot be imported (as :func:`policy_factory`).
    """
    own = {n: getattr(resolve_spec(n, kind="policy"), "name", None) if is_spec(n) else n for n in names}
    wanted = [label for label in own.values() if isinstance(label, str) and label]
    return {n: label if isinstance(label, str) and label and (not is_spec(n) or wanted.count(label) == 1) else n
            for n, label in own.items()}


def parse_policy_names(text: str) -> list[str]:
    """The policies of a comma-separated list, each checked by :func:`policy_factory` (specs imported now).

    Examples
    --------
    >>> parse_policy_names("fgd, best-fit")
    ['fgd', 'best-fit']

    Raises
    ------
    ValueError : an unknown name or a bad spec (:class:`~fgdopt.plugins.SpecError`); one line naming it.
    """
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise ValueError("no policy given")
    for name in names:
        policy_factory(name)
    return names


def make_policy(name: str, *, seed: int = 0, workload: Workload | None = None,
                ranks: np.ndarray | None = None, gpu_choice: str = "lowest-index",
                topology: TopologyMap | None = None) -> Policy:
    """A fresh policy ``name`` with its own generator seeded by ``seed``.

    Parameters
    ----------
    name : one of :data:`POLICY_NAMES`, a name added by :func:`register_policy`, or a ``module:attribute``
        spec (:mod:`fgdopt.plugins`) of a factory taking the keyword arguments below (see "Your own policy" in
        this module's docstring).
    seed : seeds the policy's random draws and, unless ``ranks`` is given, the node ranks of its tie
        rule (drawn once, at the first call).
    workload : the target workload M; required by ``fgd`` and ``fgd-exact`` (build it from the task
        list before inflation: ``Workload.from_tasks(tasks)``), ignored by the other built-in policies.
    ranks : explicit node ranks (a permutation of ``0..n_nodes-1``; ties go to the lowest).
    gpu_choice : the GPUs a whole-GPU task takes inside the chosen node, one of :data:`GPU_CHOICES`
        (``lowest-index``, the reference's, by default; ``topo-fgd`` for ``fgd`` / ``fgd-exact`` only;
        ``per-gpu-dimension`` only has ``lowest-index``); see :mod:`fgdopt.policies.base`.
    topology : the node types' GPU interconnects (:class:`~fgdopt.topology.TopologyMap`), default the
        shipped openb assumption; read by ``best-ring`` and ``topo-fgd`` only.

    Raises
    ------
    ValueError : unknown name (the message lists the valid ones), FGD without a workload, ranks that
        are not a permutation, or a GPU choice the policy does not have.
    SpecError : a ``module:attribute`` spec that does not import, or whose factory does not take the keyword
        arguments above, or does not return a callable (a :class:`ValueError` too).
    """
    options = {"seed": seed, "workload": workload, "ranks": ranks, "gpu_choice": gpu_choice, "topology": topology}
    factory = policy_factory(name)
    if factory is _make_builtin:
        return _make_builtin(name, **options)
    policy = factory(**options)
    if not callable(policy):
        raise SpecError(f"policy {name!r}: the factory returned a {type(policy).__name__}, not a callable "
                        "policy(state, task)")
    return policy


def _make_builtin(name: str, *, seed: int, workload: Workload | None, ranks: np.ndarray | None, gpu_choice: str,
                  topology: TopologyMap | None) -> Policy:
    options = {"gpu_choice": gpu_choice, "topology": topology}
    if name in _NEEDS_WORKLOAD:
        if workload is None:
            raise ValueError(f"policy {name!r} needs the target workload (Workload.from_tasks of the trace)")
        return _builtin_class(_NEEDS_WORKLOAD[name])(workload, seed=seed, ranks=ranks, **options)
    return _builtin_class(_CLASSES[name])(seed=seed, ranks=ranks, **options)


def _builtin_class(entry: type | str) -> type:
    """A built-in policy class, or the class a built-in ``module:attribute`` entry names (imported now)."""
    return resolve_spec(entry, kind="policy") if isinstance(entry, str) else entry


__all__ = ["FACTORY_KEYWORDS", "GPU_CHOICES", "HEALTH_POLICY_NAMES", "MIG_POLICY_NAMES", "PAPER_POLICIES",
           "POLICY_NAMES", "TIME_POLICY_NAMES", "WORKLOAD_POLICIES", "Choice", "Policy", "PolicyError", "SpecError",
           "make_policy", "needs_workload", "parse_policy_names", "policy_factory", "policy_labels", "register_policy",
           "unregister_policy"]
