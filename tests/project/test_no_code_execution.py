"""Nothing a user hands in is executed: a check over the source tree of ``src/graphbo``.

Read with :mod:`ast` (not grep, so ``model.eval()`` or a comment saying ``pickle.load`` is not a hit, and
``import pickle as p; p.loads(...)`` is), every module is checked for calls that turn data into code:

- ``eval``, ``exec``, ``compile`` and ``__import__`` (the builtins);
- unpickling: ``pickle``/``_pickle``/``cloudpickle``/``dill`` ``load``/``loads``/``Unpickler`` (also as a base
  class), ``joblib.load``,
  ``marshal.load(s)``, ``shelve.open``, ``pandas.read_pickle``;
- ``torch.load`` without ``weights_only=True``, ``numpy.load`` with ``allow_pickle`` other than ``False``;
- YAML other than the safe loaders: ``yaml.load``/``load_all``/``full_load``/``unsafe_load`` and any use of
  ``yaml.Loader``, ``FullLoader``, ``UnsafeLoader`` or their C versions (``yaml.safe_load`` and
  ``SafeLoader`` subclasses are what graphbo uses).

A legitimate use goes in :data:`ALLOWED` with its reason; an entry that no longer matches fails too.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "graphbo"

BUILTINS = {"eval", "exec", "compile", "__import__"}
FORBIDDEN_CALLS = {
    "builtins.eval", "builtins.exec", "builtins.compile", "builtins.__import__",
    *(f"{m}.{f}" for m in ("pickle", "_pickle", "cPickle", "cloudpickle", "dill")
      for f in ("load", "loads", "Unpickler")),
    "joblib.load", "marshal.load", "marshal.loads", "shelve.open", "pandas.read_pickle",
    "yaml.load", "yaml.load_all", "yaml.full_load", "yaml.full_load_all", "yaml.unsafe_load", "yaml.unsafe_load_all",
}
#: names that may not even be mentioned: loaders that construct arbitrary Python objects
FORBIDDEN_NAMES = {f"yaml.{n}" for n in ("Loader", "FullLoader", "UnsafeLoader", "CLoader", "CFullLoader",
                                         "CUnsafeLoader", "unsafe_load", "full_load")} \
    | {f"{m}.Unpickler" for m in ("pickle", "_pickle", "cPickle", "dill")}  # a subclass unpickles too

#: (path under src/graphbo, rule) -> why it is safe
ALLOWED: dict[tuple[str, str], str] = {}  # none: graphbo reads no pickle (CIFAR-10 in its binary version)


def _aliases(tree):
    """Local name -> dotted name it was imported as, for every absolute import in the module."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node, aliases):
    """``a.b.c`` of a Name/Attribute chain, its base resolved through the imports; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = aliases.get(node.id)
    if base is None:
        base = f"builtins.{node.id}" if not parts and node.id in BUILTINS else node.id
    return ".".join([base, *reversed(parts)])


def _keyword(call, name):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _is_constant(node, value):
    return isinstance(node, ast.Constant) and node.value is value


def violations(source, filename="<string>"):
    """``[(line, rule)]``: the calls and names of the module docstring found in ``source``."""
    tree = ast.parse(source, filename)
    aliases = _aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func, aliases)
            if name is None:
                continue
            short = name.removeprefix("builtins.")
            if name in FORBIDDEN_CALLS:
                found.append((node.lineno, short))
            elif name == "torch.load" and not _is_constant(_keyword(node, "weights_only"), True):
                found.append((node.lineno, "torch.load without weights_only=True"))
            elif name in ("numpy.load", "np.load"):
                allow = _keyword(node, "allow_pickle")
                if allow is not None and not _is_constant(allow, False):
                    found.append((node.lineno, "numpy.load with allow_pickle"))
        if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(getattr(node, "ctx", None), ast.Load):
            name = _dotted(node, aliases)
            if name in FORBIDDEN_NAMES:
                found.append((node.lineno, name))
    return sorted(set(found))


def source_files():
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_turns_user_data_into_code():
    assert len(source_files()) > 50  # the tree was found
    hits, used = [], set()
    for path in source_files():
        rel = path.relative_to(SRC).as_posix()
        for line, rule in violations(path.read_text(encoding="utf-8"), str(path)):
            if (rel, rule) in ALLOWED:
                used.add((rel, rule))
            else:
                hits.append(f"src/graphbo/{rel}:{line}: {rule}")
    assert not hits, "code execution on data:\n" + "\n".join(hits)
    assert used == set(ALLOWED), f"stale ALLOWED entries: {sorted(set(ALLOWED) - used)}"


# -- the checker itself finds what it should, and only that ---------------------------------------
@pytest.mark.parametrize("source, rule", [
    ("eval(text)", "eval"),
    ("exec(code, {})", "exec"),
    ("compile(src, 'f', 'exec')", "compile"),
    ("__import__(name)", "__import__"),
    ("import builtins\nbuiltins.eval(s)", "eval"),
    ("import pickle\npickle.loads(b)", "pickle.loads"),
    ("import pickle as p\np.load(fh)", "pickle.load"),
    ("from pickle import loads\nloads(b)", "pickle.loads"),
    ("from pickle import Unpickler as U\nU(fh).load()", "pickle.Unpickler"),
    ("import pickle\nclass R(pickle.Unpickler): pass\nR(fh).load()", "pickle.Unpickler"),
    ("import cloudpickle\ncloudpickle.loads(b)", "cloudpickle.loads"),
    ("import dill\ndill.load(fh)", "dill.load"),
    ("import joblib\njoblib.load(path)", "joblib.load"),
    ("import marshal\nmarshal.loads(b)", "marshal.loads"),
    ("import shelve\nshelve.open(path)", "shelve.open"),
    ("import pandas as pd\npd.read_pickle(path)", "pandas.read_pickle"),
    ("import torch\ntorch.load(path)", "torch.load without weights_only=True"),
    ("import torch\ntorch.load(path, weights_only=False)", "torch.load without weights_only=True"),
    ("from torch import load\nload(path, map_location='cpu')", "torch.load without weights_only=True"),
    ("import numpy as np\nnp.load(path, allow_pickle=True)", "numpy.load with allow_pickle"),
    ("import yaml\nyaml.load(text, Loader=yaml.SafeLoader)", "yaml.load"),
    ("def f(yaml):\n    return yaml.load(text, Loader=L)", "yaml.load"),  # yaml passed in, not imported
    ("import yaml\nyaml.unsafe_load(text)", "yaml.unsafe_load"),
    ("import yaml\nyaml.full_load(text)", "yaml.full_load"),
    ("import yaml\nclass L(yaml.Loader): pass", "yaml.Loader"),
    ("from yaml import UnsafeLoader", None),  # an import alone is not a use ...
    ("from yaml import UnsafeLoader\nx = UnsafeLoader", "yaml.UnsafeLoader"),  # ... its use is
    ("import yaml\nyaml.safe_load(yaml.dump(x, Dumper=yaml.CLoader))", "yaml.CLoader"),
])
def test_the_checker_finds(source, rule):
    rules = [r for _, r in violations(source)]
    assert rules == ([] if rule is None else [rule])


@pytest.mark.parametrize("source", [
    "model.eval()",
    "self.exec(x)",
    "import re\nre.compile('a+')",
    "import pickle\npickle.dumps(objective)",
    "import yaml\nyaml.safe_load(text)",
    "import yaml\nclass L(yaml.SafeLoader): pass\nL(text).get_single_data()",
    "import torch\ntorch.load(path, weights_only=True)",
    "import numpy as np\nnp.load(path, allow_pickle=False)",
    "import numpy as np\nnp.load(path)",
    "# pickle.loads(data) in a comment\n'eval(x) in a string'",
    "import importlib\nimportlib.import_module('json')",
])
def test_the_checker_passes(source):
    assert violations(source) == []
