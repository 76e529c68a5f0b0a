"""Helpers shared by several test modules (importable as ``support``: pytest puts this folder on the path)."""

import math
import sqlite3
from pathlib import Path

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
