"""Objects named by a ``module:attribute`` spec: the user's own code, imported where it runs.

A *spec* names one attribute of one module, ``"mypkg.mymod:MyPolicy"``: the module part is a dotted module name
importable in the running interpreter (on ``sys.path``, e.g. through ``PYTHONPATH`` or an installed package) or
the path of a Python file (``"policies/mine.py:MyPolicy"``, relative to the current directory); the attribute
part is a name, or a dotted path inside the module (``"mymod:Holder.factory"``). The spec is a string, so it is
what travels to local worker processes and Dask workers; each worker imports it itself (every machine needs the
module: the same file path, or the module installed).

:func:`resolve_spec` is the one resolver: :func:`fgdopt.policies.make_policy` calls it for policy names that
hold a colon, and any other registry (queue disciplines, ...) can call it with its own ``kind`` for its messages.
Every failure is a :class:`SpecError` whose message is one line naming the spec and what went wrong.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


class SpecError(ValueError):
    """A ``module:attribute`` spec that cannot be used; the message is one line naming the spec."""


def is_spec(name: str) -> bool:
    """Whether ``name`` is a ``module:attribute`` spec rather than a registered name (it holds a colon).

    Examples
    --------
    >>> is_spec("fgd"), is_spec("mypkg.mymod:MyPolicy")
    (False, True)
    """
    return ":" in name


def _import_file(path: Path, spec: str, kind: str):
    """The module of a Python file, imported once per process under a name derived from its resolved path."""
    path = path.resolve()
    name = "fgdopt_user_" + "".join(c if c.isalnum() else "_" for c in str(path.with_suffix("")))
    if name in sys.modules:
        return sys.modules[name]
    if not path.is_file():
        raise SpecError(f"{kind} {spec!r}: file {path} not found")
    loader_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module          # classes of the file pickle by this name in this process
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise SpecError(f"{kind} {spec!r}: importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def resolve_spec(spec: str, *, kind: str = "object") -> Any:
    """The object a ``module:attribute`` spec names (see the module docstring), imported now.

    Parameters
    ----------
    spec : ``"package.module:attribute"`` or ``"path/to/file.py:attribute"``.
    kind : what the spec stands for, used in the messages (``"policy"``, ``"queue discipline"``, ...).

    Returns
    -------
    The attribute (any object; callers check what they need, e.g. with :func:`check_call`).

    Raises
    ------
    SpecError : no colon or an empty side, a module that is not found or fails to import, a missing attribute;
        one line naming the spec.
    """
    module_name, colon, attribute = spec.partition(":")
    module_name, attribute = module_name.strip(), attribute.strip()
    if not colon or not module_name or not attribute:
        raise SpecError(f"{kind} {spec!r}: expected 'module:attribute' (e.g. 'mypkg.mymod:MyPolicy')")
    if module_name.endswith(".py"):
        module = _import_file(Path(module_name), spec, kind)
    else:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):   # the spec's module itself is missing
                raise SpecError(f"{kind} {spec!r}: module {module_name!r} not found (is its folder on sys.path or "
                                "PYTHONPATH, or the package installed?)") from exc
            raise SpecError(f"{kind} {spec!r}: importing {module_name!r} failed: {exc}") from exc
        except Exception as exc:
            raise SpecError(f"{kind} {spec!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}") \
                from exc
    obj: Any = module
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SpecError(f"{kind} {spec!r}: module {module_name!r} has no attribute {attribute!r}") from None
    return obj


def check_call(obj: Any, spec: str, keywords: Iterable[str], *, kind: str = "object") -> Callable:
    """``obj`` if it is callable with the keyword arguments ``keywords`` (all of them, by name), else an error.

    Parameters
    ----------
    obj : what :func:`resolve_spec` returned.
    spec : its spec, for the message.
    keywords : the keyword arguments the caller will pass.
    kind : as in :func:`resolve_spec`.

    Raises
    ------
    SpecError : ``obj`` is not callable, or its signature does not accept those keywords (one line naming the
        spec, the keywords and the reason).
    """
    keywords = tuple(keywords)
    if not callable(obj):
        raise SpecError(f"{kind} {spec!r}: {type(obj).__name__} object is not callable")
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):             # builtins without a signature: trust them
        return obj
    try:
        signature.bind(**dict.fromkeys(keywords))
    except TypeError as exc:
        raise SpecError(f"{kind} {spec!r}: must accept the keyword arguments {', '.join(keywords)} "
                        f"(or **kwargs); {obj.__name__ if hasattr(obj, '__name__') else obj}{signature}: "
                        f"{exc}") from None
    return obj


__all__ = ["SpecError", "check_call", "is_spec", "resolve_spec"]
