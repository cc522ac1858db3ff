"""The registry of the engine's mechanisms: the built-in names, names registered in a process, and
``module:attribute`` specs (:func:`make_mechanism`; the mechanisms themselves: :mod:`fgdopt.timeline.preemption`,
:mod:`fgdopt.timeline.failures`).

Examples
--------
>>> make_mechanism("priority", checkpoint_s=600).checkpointing.interval_s
600
>>> "failures" in MECHANISM_NAMES
True
"""

from __future__ import annotations

from collections.abc import Callable

from fgdopt.plugins import SpecError, check_call, is_spec, resolve_spec
from fgdopt.timeline.failures import failures
from fgdopt.timeline.preemption import (
    AffinodeSuspension,
    Checkpointing,
    FreeRepack,
    Mechanism,
    MigrationDefrag,
    NoMechanism,
    PriorityPreemption,
    TiresiasLAS,
    mig_repack,
)

MECHANISM_KEYWORDS = ("checkpoint_s", "checkpoint_cost_s")
"""The keyword arguments :func:`make_mechanism` passes to a mechanism factory (seconds: the checkpoint interval
and the cost of one checkpoint; a factory may take ``**options`` for those it ignores)."""


def _priority(*, checkpoint_s: float, checkpoint_cost_s: float) -> Mechanism:
    return PriorityPreemption("priority", Checkpointing(checkpoint_s, checkpoint_cost_s))


def _transparent(**_) -> Mechanism:
    return PriorityPreemption("transparent", Checkpointing(transparent=True))


def _fresh(cls: type) -> Callable[..., Mechanism]:
    """The factory of a mechanism class built with its defaults (the checkpoint keywords ignored)."""
    return lambda **_: cls()


_BUILTIN: dict[str, Callable[..., Mechanism]] = {
    "none": _fresh(NoMechanism), "priority": _priority, "transparent": _transparent,
    "affinode": _fresh(AffinodeSuspension), "tiresias": _fresh(TiresiasLAS), "migrate": _fresh(MigrationDefrag),
    "repack": _fresh(FreeRepack),
    "mig-repack": mig_repack, "failures": failures,
}
MECHANISM_NAMES = tuple(_BUILTIN)
"""The built-in mechanisms (the docstrings of :mod:`fgdopt.timeline.preemption` and :mod:`fgdopt.timeline.failures`)."""

_REGISTERED: dict[str, Callable[..., Mechanism]] = {}


def register_mechanism(name: str, factory: Callable[..., Mechanism]) -> None:
    """Make ``factory`` available as mechanism ``name`` in this process (``make_mechanism(name)``,
    ``simulate(..., mechanism=name)``); as :func:`fgdopt.policies.register_policy` does for policies.

    Parameters
    ----------
    name : a new name without a colon (colons mark ``module:attribute`` specs).
    factory : called with the keywords of :data:`MECHANISM_KEYWORDS`, returning a :class:`Mechanism`.

    Raises
    ------
    ValueError : the name is built in or holds a colon; the factory's signature does not take the keywords.
    """
    if is_spec(name) or name in _BUILTIN:
        raise ValueError(f"cannot register mechanism {name!r}: built-in names and names with ':' are reserved")
    _REGISTERED[name] = check_call(factory, name, MECHANISM_KEYWORDS, kind="mechanism")


def unregister_mechanism(name: str) -> None:
    """Remove a mechanism added by :func:`register_mechanism` (no error if it is not registered)."""
    _REGISTERED.pop(name, None)


def mechanism_factory(name: str) -> Callable[..., Mechanism]:
    """The factory of a built-in or registered name or of a ``module:attribute`` spec, imported and checked now
    (a spec may also name a ready mechanism object: it is then used as it is).

    Raises
    ------
    ValueError : an unknown name (the message lists the valid ones); :class:`~fgdopt.plugins.SpecError` for a spec
        that does not import or names neither a factory taking :data:`MECHANISM_KEYWORDS` nor a mechanism.
    """
    entry = _REGISTERED.get(name) or _BUILTIN.get(name)
    if entry is None and not is_spec(name):
        raise ValueError(f"unknown mechanism {name!r}; valid names: {', '.join((*MECHANISM_NAMES, *_REGISTERED))}, "
                         "or a module:attribute spec")
    if entry is not None:
        return entry
    obj = resolve_spec(name, kind="mechanism")
    if hasattr(obj, "plan") and not isinstance(obj, type):
        return lambda **_: obj
    return check_call(obj, name, MECHANISM_KEYWORDS, kind="mechanism")


def make_mechanism(name: str, *, checkpoint_s: float = 1800.0, checkpoint_cost_s: float = 0.0) -> Mechanism:
    """The mechanism ``name`` (:data:`MECHANISM_NAMES`, a name added by :func:`register_mechanism`, or a
    ``module:attribute`` spec, :func:`mechanism_factory`); ``checkpoint_s`` / ``checkpoint_cost_s`` set the
    checkpoint interval and cost (seconds) of ``priority`` and ``mig-repack``.

    Raises
    ------
    ValueError : unknown name; :class:`~fgdopt.plugins.SpecError` for a bad spec or a factory that returns no
        mechanism.
    """
    mech = mechanism_factory(name)(checkpoint_s=checkpoint_s, checkpoint_cost_s=checkpoint_cost_s)
    missing = [a for a in ("name", "checkpointing", "plan") if not hasattr(mech, a)]
    if missing:
        raise SpecError(f"mechanism {name!r}: the factory returned a {type(mech).__name__} without "
                        f"{', '.join(missing)} (see fgdopt.timeline.preemption.Mechanism)")
    return mech
