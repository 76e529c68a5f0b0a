"""Lazy attribute exports for package ``__init__`` modules (PEP 562), so imports stay light, and the
one-line error of a missing optional dependency (``pip install "graphbo[extra]"``)."""

from __future__ import annotations

import importlib
import re
from typing import Any, Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a name to the module defining it.

    A name is imported on first access and then cached in the package's ``namespace``.
    """

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


# -- optional dependencies ------------------------------------------------------------------------------
#: import name -> distribution name, where the two differ (the others are the same)
_DISTRIBUTIONS = {"ot": "pot", "sklearn": "scikit-learn", "yaml": "pyyaml", "xgboost": "xgboost-cpu",
                  "distributed": "dask", "configspace": "configspace"}

#: the pip line every missing-extra message ends in
PIP_LINE = 'pip install "graphbo[{extra}]"'


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message is one line ending in ``pip install "graphbo[extra]"``."""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extra_of(module: str) -> tuple[str, str | None] | None:
    """``(distribution, extra)`` of the top-level module ``module`` among graphbo's declared requirements
    (its installed metadata): ``extra`` is ``None`` for a core dependency; ``None`` if graphbo does not
    require it."""
    from importlib import metadata

    top = module.split(".")[0]
    dist = _normal(_DISTRIBUTIONS.get(top.lower(), top))
    try:
        requirements = metadata.requires("graphbo") or []
    except metadata.PackageNotFoundError:
        return None
    core, extras = False, []
    for req in requirements:
        name = re.match(r"\s*([A-Za-z0-9._-]+)", req)
        if name is None or _normal(name.group(1)) != dist:
            continue
        marker = re.search(r"""extra\s*==\s*["']([^"']+)["']""", req)
        if marker is None:
            core = True
        elif marker.group(1) != "test":
            extras.append(marker.group(1))
    if core:
        return dist, None
    return (dist, extras[0]) if extras else None


def missing_extra_message(exc: BaseException) -> str | None:
    """The one line to show for ``exc`` if it (or an error it was raised from) is a missing optional
    dependency: a message already naming ``pip install "graphbo[...]"``, or a ``ModuleNotFoundError`` of a
    module graphbo requires; ``None`` otherwise."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ImportError):
            for line in str(error).splitlines():
                if 'pip install "graphbo[' in line:
                    return line.strip()
            name = getattr(error, "name", None)
            found = extra_of(name) if isinstance(name, str) and name else None
            if found is not None:
                dist, extra = found
                if extra is None:
                    return f"graphbo needs {dist}, which is not installed: pip install {dist}"
                return f"this needs {dist}, which is not installed: " + PIP_LINE.format(extra=extra)
        error = error.__cause__ or error.__context__
    return None


def require(module: str, what: str, extra: str | None = None) -> Any:
    """Import the optional dependency ``module`` for ``what`` (e.g. ``"TPE"``), or raise
    :class:`MissingExtraError` with one line naming the ``pip install "graphbo[extra]"`` that installs it
    (``extra`` defaults to the one graphbo's metadata declares for the module)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        found = extra_of(module)
        extra = extra or (found[1] if found else None)
        dist = found[0] if found else module.split(".")[0]
        line = PIP_LINE.format(extra=extra) if extra else f"pip install {dist}"
        raise MissingExtraError(f"{what} needs {dist}: {line}", name=module) from exc
