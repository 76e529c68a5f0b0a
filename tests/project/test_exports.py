"""The public names: every name of ``graphbo.__all__`` resolves, lazily, to one object with one name.

``graphbo/__init__.py`` maps each public name to the module that defines it and imports it on
first access (PEP 562); ``graphbo/__init__.pyi`` declares the same names for type checkers;
``docs/api.md`` lists them. These tests keep the four in step, check that ``import graphbo``
stays light, and that no two different public objects of graphbo and its integrations share a
name (the core kernel is ``graphbo.GraphDiffusionKernel``; the GPyTorch one is
``graphbo.integrations.gpytorch.DiffusionKernel``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import graphbo

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "graphbo"

#: what ``import graphbo`` and resolving all of ``graphbo.__all__`` must not import: the optional extras
OPTIONAL = ("optuna", "smac", "botorch", "gpytorch", "ConfigSpace", "yaml", "matplotlib", "dask", "distributed",
            "xgboost", "numba")


def test_every_public_name_resolves_to_an_object_of_that_name():
    assert graphbo.__all__ == sorted(graphbo._EXPORTS)
    assert len(graphbo.__all__) == len(set(graphbo.__all__))
    for name in graphbo.__all__:
        obj = getattr(graphbo, name)
        module = importlib.import_module(graphbo._EXPORTS[name])
        assert getattr(module, name) is obj, name
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__name__ == name, (name, obj.__name__)  # no aliases: the object's own name


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'DiffusionKernel'"):
        graphbo.DiffusionKernel  # noqa: B018 - renamed GraphDiffusionKernel
    with pytest.raises(ImportError):
        exec("from graphbo import DiffusionKernel", {})


def test_dir_lists_the_public_names():
    public = {n for n in dir(graphbo) if not n.startswith("_") and not inspect.ismodule(getattr(graphbo, n))}
    assert public == set(graphbo.__all__)


def test_star_import_gives_exactly_all():
    namespace: dict = {}
    exec("from graphbo import *", namespace)
    assert {n for n in namespace if n != "__builtins__"} == set(graphbo.__all__)


def test_every_optimizer_of_methods_is_exported():
    from graphbo.optimizers import METHODS

    for key, cls in METHODS.items():
        # variants (bofm-<kernel>, cocabo-<mix>) are subclasses of an exported class with a fixed option
        exported = next((c for c in cls.__mro__ if c.__name__ in graphbo._EXPORTS), None)
        assert exported is not None and getattr(graphbo, exported.__name__) is exported, key
        if exported is not cls:
            assert re.fullmatch(r"[a-z]+-.+", key), key
    for name in ("Optimizer", "Observation"):
        assert name in graphbo.__all__


def test_the_stub_declares_the_same_names_from_the_same_modules():
    tree = ast.parse((PACKAGE / "__init__.pyi").read_text())
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1, ast.unparse(node)
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name}: re-export it as 'X as X'"
                declared[alias.name] = f"graphbo.{node.module}"
    assert declared == graphbo._EXPORTS


def test_the_api_docs_list_every_public_name_with_its_module():
    text = (ROOT / "docs" / "api.md").read_text()
    rows = dict(re.findall(r"^\| `([A-Za-z_]\w*)` \| `([\w.]+)` \|", text, flags=re.M))
    missing = sorted(set(graphbo.__all__) - set(rows))
    assert not missing, f"docs/api.md does not list {missing}"
    for name in graphbo.__all__:
        assert rows[name] == graphbo._EXPORTS[name], name


def test_import_graphbo_is_light_and_resolving_all_names_imports_no_optional_extra():
    code = (
        "import sys, graphbo\n"
        "heavy = [m for m in ('torch', 'numpy', 'scipy', *OPTIONAL) if m in sys.modules]\n"
        "assert not heavy, f'import graphbo imported {heavy}'\n"
        "for name in graphbo.__all__: getattr(graphbo, name)\n"
        "extras = [m for m in OPTIONAL if m in sys.modules]\n"
        "assert not extras, f'resolving graphbo.__all__ imported {extras}'\n"
    ).replace("OPTIONAL", repr(OPTIONAL))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# -- unique names ------------------------------------------------------------------------------------------
def _public(module_name: str) -> dict[str, object]:
    module = pytest.importorskip(module_name) if module_name != "graphbo" else graphbo
    return {name: getattr(module, name) for name in module.__all__}


def test_public_names_are_pairwise_distinct_across_graphbo_and_its_integrations():
    pytest.importorskip("gpytorch")
    pytest.importorskip("optuna")
    modules = ["graphbo", "graphbo.integrations.gpytorch", "graphbo.integrations.optuna"]
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for module_name in modules:
        for name, obj in _public(module_name).items():
            if name in seen and seen[name][1] is not obj:
                clashes.append(f"{name}: {seen[name][0]} and {module_name}")
            seen.setdefault(name, (module_name, obj))
    assert not clashes, clashes


def test_the_diffusion_kernels_have_different_names():
    gpytorch_integration = pytest.importorskip("graphbo.integrations.gpytorch")
    from graphbo.kernels import GraphDiffusionKernel

    assert graphbo.GraphDiffusionKernel is GraphDiffusionKernel
    assert gpytorch_integration.DiffusionKernel.__name__ == "DiffusionKernel"
    assert gpytorch_integration.DiffusionKernel is not GraphDiffusionKernel
    assert "DiffusionKernel" not in graphbo.__all__
