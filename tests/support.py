"""Helpers shared by several test modules (importable as ``support``: pytest puts this folder on the path)."""

import math
import sqlite3
from pathlib import Path

import numpy as np

import graphbo as gb
from graphbo.benchmarks.base import Benchmark

#: BOHB options that keep its runs short in tests
BOHB_FAST = {"n_challengers": 200, "local_search_iterations": 1}
CATS = {"a": 0.0, "b": 0.4, "c": 0.8}


def toy_space():
    """x: continuous [-1, 1], lr: log continuous [1e-4, 1], c: categorical a/b/c, n: ordinal 1-5."""
    return gb.Space({
        "x": gb.Continuous(-1.0, 1.0),
        "lr": gb.Continuous(1e-4, 1.0, log=True),
        "c": gb.Categorical(list(CATS)),
        "n": gb.Ordinal([1, 2, 3, 4, 5]),
    })


def toy_f(config):
    return ((config["x"] - 0.3) ** 2 + 0.1 * (math.log10(config["lr"]) + 2.0) ** 2
            + CATS[config["c"]] + 0.05 * abs(config["n"] - 2))


def binary_space(d):
    """``d`` binary variables ``x0``, ..., ``x{d-1}``."""
    return gb.Space({f"x{i}": gb.Binary() for i in range(d)})


def ordinal6_categorical_binary_space():
    """a: ordinal 0-5, b: categorical x/y/z, c: binary (36 configurations)."""
    return gb.Space({"a": gb.Ordinal(list(range(6))), "b": gb.Categorical(["x", "y", "z"]), "c": gb.Binary()})



def categorical_binary_integer_two_continuous_space():
    """a: categorical x/y/z, b: binary, c: integer 0-6 (a path graph), u and v: continuous [0, 1]."""
    return gb.Space({"a": gb.Categorical(["x", "y", "z"]), "b": gb.Binary(), "c": gb.Integer(0, 6),
                     "u": gb.Continuous(0.0, 1.0), "v": gb.Continuous(0.0, 1.0)})


def categorical_binary_integer_two_continuous_data(n, seed=0):
    """``n`` random index rows of :func:`categorical_binary_integer_two_continuous_space` and a smooth function of
    every column, with a little noise."""
    rng = np.random.default_rng(seed)
    X = categorical_binary_integer_two_continuous_space().sample_index(n, rng).astype(float)
    y = (np.sin(4 * X[:, 3]) + (X[:, 4] - 0.3) ** 2 + 0.3 * X[:, 0] - 0.2 * X[:, 1] + 0.05 * (X[:, 2] - 3) ** 2
         + 0.01 * rng.normal(size=n))
    return X, y


def fm_kernel(space, name="modlap", **options):
    """The FM kernel ``name`` (BO-FM's) of ``space``: its discrete variables' spectra and its continuous count."""
    from graphbo.kernels.frequency_modulated import FMKernel

    return FMKernel(name, [space.variables[j].spectrum for j in space.discrete_indices],
                    n_continuous=len(space.continuous_indices), **options)


def split_rows(space, rows):
    """Index rows of ``space`` as an FM kernel takes them: the discrete columns (long) and the continuous ones."""
    import torch

    rows = torch.as_tensor(rows)
    return rows[:, space.discrete_indices].long(), rows[:, space.continuous_indices]

def combo_bound_cases():
    """(space, objective) pairs on which COMBO's bounds are checked: twelve binary variables ``b0``, ...,
    ``b11``; a 30-value ordinal ``o``, a categorical ``c`` of five, a binary ``b`` and a 12-value ordinal ``p``."""
    binary = gb.Space({f"b{i}": gb.Binary() for i in range(12)})
    mixed = gb.Space({"o": gb.Ordinal(list(range(30))), "c": gb.Categorical(list("abcde")),
                      "b": gb.Binary(), "p": gb.Ordinal(list(range(12)))})
    return [
        (binary, lambda c: float(sum((i % 3 - 1) * v for i, v in enumerate(c.values())) + 0.3 * c["b0"] * c["b1"])),
        (mixed, lambda c: float((c["o"] - 17) ** 2 / 50 + (c["c"] == "d") + c["b"] * 0.5 + abs(c["p"] - 3) / 4)),
    ]


def fitted_combo(space, objective, n, seed):
    """COMBO (a short chain) told ``n`` evaluations of ``objective``, its model fitted to them."""
    opt = gb.COMBO(space, seed=seed, n_initial=n, n_burn=10, n_samples=3)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, objective(c))
    opt.mark_failed(opt.ask())  # fits the model
    return opt


def fitted_bofm(space, objective, n, *, seed, **options):
    """BO-FM told ``n`` evaluations of ``objective`` (its initial design), its model fitted to them."""
    opt = gb.BOFM(space, seed=seed, n_initial=n, **options)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, objective(c))
    opt.mark_failed(opt.ask())  # fits the model
    return opt


def bofm_screening_cases():
    """(space, objective) pairs on which BO-FM's screening is checked: eight binaries, an ordinal, a categorical
    and two continuous variables; six binaries and an ordinal (no continuous variable); ten binaries and one
    continuous variable (the bound's one-hot encoding is the index rows themselves)."""
    mixed = gb.Space([(f"b{i}", gb.Binary()) for i in range(8)]
                     + [("o", gb.Ordinal(list(range(7)))), ("c", gb.Categorical(list("abcd"))),
                        ("x", gb.Continuous(-1.0, 1.0)), ("z", gb.Continuous(0.0, 2.0))])
    discrete = gb.Space([(f"b{i}", gb.Binary()) for i in range(6)] + [("o", gb.Ordinal(list(range(9))))])

    def f_mixed(c):
        return float(sum((i % 3 - 1) * c[f"b{i}"] for i in range(8)) + (c["o"] - 4) ** 2 / 8
                     + (c["c"] == "b") + (c["x"] - 0.3) ** 2 + 0.5 * np.sin(3 * c["z"]))

    def f_discrete(c):
        return float(sum((i % 2) * c[f"b{i}"] for i in range(6)) + abs(c["o"] - 2) / 3)

    binary = gb.Space([(f"b{i}", gb.Binary()) for i in range(10)] + [("x", gb.Continuous(-1.0, 1.0))])

    def f_binary(c):
        return float(sum((i % 3 - 1) * c[f"b{i}"] for i in range(10)) + 2 * (c["x"] - 0.3) ** 2)

    return [(mixed, f_mixed), (discrete, f_discrete), (binary, f_binary)]


def fitted_bofm_case(case, n, seed, kernel="modlap"):
    """:func:`fitted_bofm` on the ``case``-th of :func:`bofm_screening_cases` (a small pool: 500 rows, 5 starts)."""
    space, f = bofm_screening_cases()[case]
    return fitted_bofm(space, f, n, seed=seed, kernel=kernel, n_random=500, n_starts=5)


#: a 5-cycle's adjacency matrix
RING = [[1 if abs(i - j) in (1, 4) else 0 for j in range(5)] for i in range(5)]


def binaries_ordinal_categorical_ring_space(continuous):
    """b0-b3: binary, o: ordinal 0-5, c: categorical a-d, g: a graph variable on a 5-cycle; with ``continuous``,
    x: continuous [-1, 1] and z: continuous [0, 2] too."""
    variables = [(f"b{i}", gb.Binary()) for i in range(4)] + [
        ("o", gb.Ordinal(list(range(6)))), ("c", gb.Categorical(list("abcd"))),
        ("g", gb.GraphVariable(list("vwxyz"), RING))]
    if continuous:
        variables += [("x", gb.Continuous(-1.0, 1.0)), ("z", gb.Continuous(0.0, 2.0))]
    return gb.Space(variables)


def fitted_bofm_on_ring(kernel, continuous, n=25, seed=0):
    """:func:`fitted_bofm` with the FM kernel ``kernel`` on :func:`binaries_ordinal_categorical_ring_space`."""

    def objective(c):
        value = sum((i % 3 - 1) * c[f"b{i}"] for i in range(4)) + (c["o"] - 3) ** 2 / 6 + (c["c"] == "b")
        value += 0.3 * "vwxyz".index(c["g"])
        if "x" in c:
            value += (c["x"] - 0.3) ** 2 + 0.5 * np.sin(3 * c["z"])
        return float(value)

    return fitted_bofm(binaries_ordinal_categorical_ring_space(continuous), objective, n, seed=seed, kernel=kernel,
                       n_random=300, n_starts=4, n_restarts=2)

class ToyMF(Benchmark):
    """Multi-fidelity toy: ``f(config) + offset / epochs``; ``max_fidelity`` epochs is a full evaluation."""

    name = "toy-mf"

    def __init__(self, max_fidelity=9, offset=1.0):
        self.space = toy_space()
        self.max_fidelity = int(max_fidelity)
        self.offset = float(offset)
        self.calls = []

    def evaluate(self, config, epochs=None):
        epochs = self.max_fidelity if epochs is None else epochs
        assert 1 <= epochs <= self.max_fidelity
        self.space.validate(config)
        self.calls.append(epochs)
        return {"value": toy_f(config) + self.offset / epochs, "epochs": epochs}

    def __call__(self, config):
        return self.evaluate(config)["value"]


def counts(path):
    """(finished, running) trials of a study being written by another process."""
    try:
        conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
        try:
            return conn.execute("SELECT COUNT(*) - COUNT(finished), COUNT(finished) FROM trials").fetchone()[::-1]
        finally:
            conn.close()
    except sqlite3.Error:  # not created yet
        return 0, 0
