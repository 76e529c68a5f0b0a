"""Loading a user's objective function from an import spec.

``graphbo run --space FILE --objective SPEC`` and ``graphbo resume`` name the
function to minimise by a spec: ``package.module:function``,
``module:object.method`` or ``path/to/file.py:function``. This module imports
it (:func:`load_objective`), wraps it so that it pickles as its spec for worker
processes (:class:`ImportedObjective`) and reports a spec that cannot be
imported with a one-line :class:`ObjectiveError`.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence

__all__ = ["load_objective", "ImportedObjective", "ObjectiveError", "stored_spec"]

#: objectives already imported in this process, by (spec, search path)
_LOADED: dict[tuple[str, tuple[str, ...]], Callable] = {}


class ObjectiveError(ValueError):
    """An ``--objective`` spec that cannot be imported; the message is one line."""


def _split_spec(spec: str) -> tuple[str, str, bool]:
    """``(module or file, attribute path, is_file)`` of ``MODULE:ATTR`` or ``path/to/file.py:ATTR``."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ObjectiveError(f"--objective must be MODULE:FUNCTION or path/to/file.py:FUNCTION, got {spec!r}")
    if not all(part.isidentifier() for part in attr.split(".")):
        raise ObjectiveError(f"--objective {spec!r}: {attr!r} is not a Python name (FUNCTION or OBJECT.METHOD)")
    is_file = target.endswith(".py") or "/" in target or os.sep in target
    if not is_file and not all(part.isidentifier() for part in target.split(".")):
        raise ObjectiveError(f"--objective {spec!r}: {target!r} is neither a module name (package.module) nor a "
                             ".py file")
    return target, attr, is_file


def _refuse_standard_library(spec: str, module: str) -> None:
    """An objective is the user's own code: a spec whose module is one of Python's standard library
    (``subprocess:run``, ``os:system``, ``builtins:exec``) is refused before anything is imported, so that a
    spec that came with a study file cannot turn a configuration into a command. A module of the user's that
    shadows a standard name (a ``test.py`` in the current folder) is not refused."""
    import importlib.util
    import sysconfig

    top = module.partition(".")[0]
    if top not in getattr(sys, "stdlib_module_names", ()) and top not in sys.builtin_module_names:
        return
    try:
        found = importlib.util.find_spec(top)  # where it would be imported from; runs nothing for a top-level name
    except (ImportError, ValueError):
        return
    origin = getattr(found, "origin", None) or ""
    stdlib = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    in_stdlib = origin in ("built-in", "frozen") or any(
        os.path.realpath(origin).startswith(folder + os.sep) and "site-packages" not in origin for folder in stdlib)
    if found is not None and in_stdlib:
        raise ObjectiveError(f"objective {spec!r} names a function of Python's standard library ({top}), not an "
                             "objective: give a function of your own (MODULE:FUNCTION or path/to/file.py:FUNCTION)")


def _import_error_line(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}"


def load_objective(spec: str, search_path: Sequence[str] = ()) -> Callable:
    """The callable named by ``spec`` (``package.module:function``, ``module:obj.method`` or
    ``path/to/file.py:function``), importing its module.

    ``search_path`` folders are put at the front of ``sys.path`` first (the
    ``graphbo`` command passes the current directory). Raises
    :class:`ObjectiveError` with a one-line message when the module or file is
    missing, its import fails, the attribute is missing or is not callable.
    """
    import importlib
    import importlib.util
    import zlib

    key = (spec, tuple(search_path))
    if key in _LOADED:
        return _LOADED[key]
    target, attr, is_file = _split_spec(spec)
    for folder in reversed(list(search_path)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    if is_file:
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise ObjectiveError(f"objective file {target} not found")
        stem = os.path.splitext(os.path.basename(path))[0]
        private = f"_graphbo_objective_{zlib.crc32(path.encode())}"
        where = target
        module = next((m for m in (sys.modules.get(stem), sys.modules.get(private))
                       if m is not None and os.path.abspath(getattr(m, "__file__", None) or "") == path), None)
        if module is None:  # import it under its own name if free
            name = stem if stem.isidentifier() and stem not in sys.modules else private
            folder = os.path.dirname(path)
            if folder not in sys.path:
                sys.path.insert(0, folder)  # its sibling modules
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None:
                raise ObjectiveError(f"objective file {target} cannot be imported as a Python module")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            try:
                module_spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[name]
                raise ObjectiveError(f"importing objective file {target} failed: {_import_error_line(exc)}") from None
    else:
        where = f"module {target!r}"
        _refuse_standard_library(spec, target)
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (target == exc.name or target.startswith(exc.name + ".")):
                raise ObjectiveError(
                    f"objective module {target!r} not found (searched the current directory {os.getcwd()} and "
                    "sys.path; set PYTHONPATH, or give path/to/file.py:FUNCTION)") from None
            raise ObjectiveError(f"importing objective module {target!r} failed: {_import_error_line(exc)}") from None
        except Exception as exc:
            raise ObjectiveError(f"importing objective module {target!r} failed: {_import_error_line(exc)}") from None
    obj = module
    for i, part in enumerate(attr.split(".")):
        if not hasattr(obj, part):
            owner = where if i == 0 else f"{'.'.join(attr.split('.')[:i])!r} in {where}"
            names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                           and getattr(v, "__module__", None) == module.__name__)
            hint = f"; it defines {', '.join(names[:10])}" if names and i == 0 else ""
            raise ObjectiveError(f"objective {spec!r}: {owner} has no attribute {part!r}{hint}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ObjectiveError(f"objective {spec!r} is not callable (it is of type {type(obj).__name__}); it must be a "
                             "function taking a configuration dict and returning a number")
    _LOADED[key] = obj
    return obj


class ImportedObjective:
    """A user's objective named by its import spec; pickled as the spec, so worker processes re-import it."""

    def __init__(self, spec: str, search_path: Sequence[str] = ()) -> None:
        self.spec = spec
        self.search_path = tuple(search_path)
        self._function: Callable | None = None

    def resolve(self) -> Callable:
        if self._function is None:
            self._function = load_objective(self.spec, self.search_path)
        return self._function

    def __call__(self, config: dict) -> Any:
        return self.resolve()(config)

    def __getstate__(self) -> dict:
        return {"spec": self.spec, "search_path": self.search_path}

    def __setstate__(self, state: dict) -> None:
        self.spec, self.search_path, self._function = state["spec"], tuple(state["search_path"]), None

    def __repr__(self) -> str:
        return f"ImportedObjective({self.spec!r})"


def stored_spec(spec: str) -> str:
    """``spec`` with a file path made absolute, so that `graphbo resume` finds it from any folder."""
    target, attr, is_file = _split_spec(spec)
    return f"{os.path.abspath(target)}:{attr}" if is_file else spec

