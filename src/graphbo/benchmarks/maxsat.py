"""Weighted maximum satisfiability from a ``.wcnf`` file (COMBO supplement Sec. 4.3).

One binary variable per boolean variable of the formula. Clause weights are
standardised by their mean and standard deviation, and the objective is the
negated sum of the weights of the satisfied clauses (so lower is better, and
unsatisfiable-by-weight clauses with negative standardised weight count too,
as in the paper). The three instances of the paper are
``maxcut-johnson8-2-4.clq.wcnf`` (28 variables), ``maxcut-hamming8-2.clq.wcnf``
(43) and ``frb-frb10-6-4.wcnf`` (60); graphbo ships them as package data
(``graphbo/benchmarks/data/maxsat``, with their source and licence in its
README) under the names ``maxsat28``, ``maxsat43`` and ``maxsat60``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import numpy as np

from ..spaces import Binary, Space
from .base import Benchmark

__all__ = ["MaxSAT", "read_wcnf", "INSTANCES", "instance_path"]

#: the paper's instances by graphbo name -> file name (shipped in ``graphbo/benchmarks/data/maxsat``)
INSTANCES = {
    "maxsat28": "maxcut-johnson8-2-4.clq.wcnf",
    "maxsat43": "maxcut-hamming8-2.clq.wcnf",
    "maxsat60": "frb-frb10-6-4.wcnf",
}

#: environment variable naming a folder searched for instance files before the shipped copies
DIR_VARIABLE = "GRAPHBO_MAXSAT_DIR"


def instance_path(path: str | os.PathLike) -> Path:
    """The ``.wcnf`` file ``path`` names: an existing file; else, for a bare name (no folder), a file of
    that name (``.wcnf`` added if missing) in ``$GRAPHBO_MAXSAT_DIR``, then the shipped copy of the
    paper's instance. The paper's instances go by their file names (``maxcut-johnson8-2-4.clq.wcnf``)
    or graphbo's names (``maxsat28``, ``maxsat43``, ``maxsat60``).

    Raises ``FileNotFoundError`` naming the path and the instance names when it is none of these.
    """
    given = Path(os.fspath(path))
    if given.is_file():
        return given
    name = str(path)
    if given.name == name:  # a bare name, not a path to a missing file
        file = INSTANCES.get(name.lower(), name if name.endswith(".wcnf") else name + ".wcnf")
        folder = os.environ.get(DIR_VARIABLE)
        if folder and (Path(folder) / file).is_file():
            return Path(folder) / file
        shipped = resources.files("graphbo.benchmarks").joinpath("data").joinpath("maxsat").joinpath(file)
        if file in INSTANCES.values() and shipped.is_file():
            return Path(str(shipped))
    raise FileNotFoundError(f"MaxSAT: no such .wcnf file: {path} (give a path, or one of the shipped "
                            f"instances {', '.join(INSTANCES)})")


def read_wcnf(path: str | os.PathLike) -> tuple[int, np.ndarray, list[np.ndarray]]:
    """Parse a weighted CNF file in DIMACS ``wcnf`` format.

    Returns ``(n_variables, weights, clauses)``, each clause an array of
    non-zero signed literals (``+i`` is variable ``i`` true, ``-i`` false, 1-based).
    Raises ``ValueError`` naming the file and line for malformed input.
    """
    n_vars = None
    weights: list[float] = []
    clauses: list[np.ndarray] = []
    with open(path, "rt") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.split()
            if not parts or parts[0] == "c":
                continue
            if parts[0] == "p":
                if len(parts) < 4 or parts[1] != "wcnf":
                    raise ValueError(f"{path}:{lineno}: expected 'p wcnf NVARS NCLAUSES', got {line.strip()!r}")
                n_vars = int(parts[2])
                continue
            if n_vars is None:
                raise ValueError(f"{path}:{lineno}: clause before the 'p wcnf' header")
            try:
                nums = [float(parts[0])] + [int(p) for p in parts[1:]]
            except ValueError:
                raise ValueError(f"{path}:{lineno}: not a weighted clause: {line.strip()!r}") from None
            if nums[-1] != 0:
                raise ValueError(f"{path}:{lineno}: clause does not end with 0: {line.strip()!r}")
            lits = np.array(nums[1:-1], dtype=np.int64)
            if lits.size == 0 or np.any(np.abs(lits) > n_vars):
                raise ValueError(f"{path}:{lineno}: literal out of range 1..{n_vars}: {line.strip()!r}")
            weights.append(nums[0])
            clauses.append(lits)
    if n_vars is None:
        raise ValueError(f"{path}: no 'p wcnf' header")
    if not clauses:
        raise ValueError(f"{path}: no clauses")
    return n_vars, np.asarray(weights, dtype=float), clauses


class MaxSAT(Benchmark):
    """Weighted MaxSAT over binary variables ``x1 .. xN``.

    Parameters
    ----------
    path : path to a ``.wcnf`` file, or a shipped instance of the paper by name (``"maxsat28"``,
        ``"maxsat43"``, ``"maxsat60"``) or file name; see :func:`instance_path`.
    """

    default_budget = 270
    default_n_initial = 20

    def __init__(self, path: str | os.PathLike):
        path = instance_path(path)
        n_vars, weights, clauses = read_wcnf(path)
        self.path = str(path)
        self.name = f"maxsat{n_vars}"
        self.weights = (weights - weights.mean()) / weights.std() if weights.std() > 0 else weights - weights.mean()
        width = max(c.size for c in clauses)
        # literal matrix: variable index (0-based) and wanted value, padded with a never-satisfied slot
        self._var = np.zeros((len(clauses), width), dtype=np.int64)
        self._want = np.zeros((len(clauses), width), dtype=bool)
        self._valid = np.zeros((len(clauses), width), dtype=bool)
        for k, c in enumerate(clauses):
            self._var[k, : c.size] = np.abs(c) - 1
            self._want[k, : c.size] = c > 0
            self._valid[k, : c.size] = True
        self.space = Space({f"x{i + 1}": Binary() for i in range(n_vars)})

    def satisfied(self, row) -> np.ndarray:
        """Boolean mask of the satisfied clauses for an assignment (index row of 0/1)."""
        x = np.asarray(row, dtype=bool)
        return np.any((x[self._var] == self._want) & self._valid, axis=1)

    def evaluate_index(self, row) -> float:
        return float(-np.sum(self.weights[self.satisfied(row)]))
