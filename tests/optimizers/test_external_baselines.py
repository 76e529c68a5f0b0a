"""The external baselines TPE (optuna) and SMAC (SMAC3) behind graphbo's ask/tell.

Each test skips when its package is missing (``pip install "graphbo[tpe]"`` /
``"graphbo[smac]"``). SMAC runs with ``n_challengers=1000`` (SMAC's default is
10000) to keep the file quick; its suggestions cost ~0.3 s each even so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import graphbo as gb

PACKAGES = {"tpe": "optuna", "smac": "smac"}


def _cls(method):
    pytest.importorskip(PACKAGES[method])
    if method == "tpe":
        from graphbo.optimizers.tpe import TPE

        return TPE
    from graphbo.optimizers.smac import SMAC

    return SMAC


def make(method, space, seed, n_initial):
    cls = _cls(method)
    kwargs = {"n_challengers": 1000} if method == "smac" else {}
    return cls(space, seed=seed, n_initial=n_initial, **kwargs)


def discrete_space_of_48():  # 2 * 2 * 3 * 4 = 48 configurations
    return gb.Space(
        {"a": gb.Binary(), "b": gb.Binary(), "c": gb.Categorical(["x", "y", "z"]), "d": gb.Ordinal([1, 2, 3, 4])}
    )


def f_small(c):
    return float(c["a"]) + float(not c["b"]) + "xyz".index(c["c"]) + abs(c["d"] - 3)


def run(opt, f, budget):
    configs = []
    for _ in range(budget):
        c = opt.ask()
        configs.append(c)
        opt.tell(c, f(c))
    return configs


def key(c):
    return tuple(sorted(c.items()))


METHODS = ["tpe", "smac"]


@pytest.mark.parametrize("method", METHODS)
def test_respects_space_never_repeats_and_reproduces(method, capfd):
    space = discrete_space_of_48()
    opt = make(method, space, seed=3, n_initial=5)
    configs = run(opt, f_small, 25)
    for c in configs:
        space.validate(c)
    assert len({key(c) for c in configs}) == 25
    assert opt.n_told == 25 and opt.best.value == min(f_small(c) for c in configs)
    # the libraries' logging is silenced
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    # the same seed gives the same sequence, also in another process with another
    # PYTHONHASHSEED (a shorter run is a prefix)
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import test_external_baselines as T; "
        f"opt = T.make({method!r}, T.discrete_space_of_48(), seed=3, n_initial=5); "
        "print(json.dumps(T.run(opt, T.f_small, 12)))"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    proc = subprocess.run(
        [sys.executable, "-c", script, str(Path(__file__).parent)], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == configs[:12]


@pytest.mark.parametrize("method", METHODS)
def test_exhausts_a_tiny_space_without_repeats(method):
    space = gb.Space({"a": gb.Binary(), "b": gb.Binary(), "c": gb.Categorical(["x", "y", "z"])})
    opt = make(method, space, seed=0, n_initial=3)
    configs = run(opt, lambda c: float(c["a"]) + float(c["b"]) + "xyz".index(c["c"]), space.size)
    assert len({key(c) for c in configs}) == space.size == 12
    with pytest.raises(gb.SpaceExhaustedError):
        opt.ask()


@pytest.mark.parametrize("method", METHODS)
def test_initial_design_is_shared_with_combo(method):
    for seed in (0, 7):
        opt = make(method, discrete_space_of_48(), seed=seed, n_initial=6)
        combo = gb.COMBO(discrete_space_of_48(), seed=seed, n_initial=6)
        assert [opt.ask() for _ in range(6)] == [combo.ask() for _ in range(6)]


def discrete_space_of_3200():  # 8 * 16 * 25 = 3200 configurations
    return gb.Space(
        {
            "b0": gb.Binary(),
            "b1": gb.Binary(),
            "b2": gb.Binary(),
            "c0": gb.Categorical(list("abcd")),
            "c1": gb.Categorical(list("abcd")),
            "o0": gb.Ordinal(list(range(5))),
            "o1": gb.Ordinal(list(range(5))),
        }
    )


def f_mixed(c):
    """Separable, minimum 0 at b=(F, T, F), c=("c", "a"), o=(3, 1); uniform mean about 5.9."""
    return (
        float(c["b0"])
        + float(not c["b1"])
        + float(c["b2"])
        + float(c["c0"] != "c")
        + float(c["c1"] != "a")
        + abs(c["o0"] - 3)
        + abs(c["o1"] - 1)
    )


@pytest.mark.parametrize("method", METHODS)
def test_uses_the_observations(method):
    """After 10 shared random evaluations, the next 10 are clearly better than random search's.

    Averaged over two seeds, random search's evaluations 11-20 have mean ~6.2 here;
    TPE's ~3.9 and SMAC's ~4.2. A wrapper that ignored the told values would behave
    like random search (standard error of a 20-value mean ~0.3), so the margin of
    1.0 separates the two.
    """
    seeds, n_initial, budget = (0, 1), 10, 20
    tail, tail_random = [], []
    for seed in seeds:
        opt = make(method, discrete_space_of_3200(), seed=seed, n_initial=n_initial)
        run(opt, f_mixed, budget)
        rs = gb.RandomSearch(discrete_space_of_3200(), seed=seed, n_initial=n_initial)
        run(rs, f_mixed, budget)
        np.testing.assert_array_equal(opt.y[:n_initial], rs.y[:n_initial])  # shared initial design
        tail.extend(opt.y[n_initial:])
        tail_random.extend(rs.y[n_initial:])
    assert np.mean(tail) <= np.mean(tail_random) - 1.0, (np.mean(tail), np.mean(tail_random))


@pytest.mark.parametrize("method", METHODS)
def test_pending_suggestions_are_not_repeated(method):
    """Asks before any tell (initial design and model-based alike): all distinct, told in any order,
    and the library ends up with exactly the told evaluations (no dangling or duplicated trials)."""
    space = discrete_space_of_48()
    opt = make(method, space, seed=1, n_initial=3)
    asked = [opt.ask() for _ in range(6)]
    assert len({key(c) for c in asked}) == 6
    for c in reversed(asked):
        opt.tell(c, f_small(c))
    configs = asked + run(opt, f_small, 4)
    assert len({key(c) for c in configs}) == 10 and opt.n_told == 10
    if method == "smac":
        rh = opt.smac.runhistory
        assert len(rh) == 10 and all(v.status.name == "SUCCESS" for v in rh.values())
    else:
        complete = [t for t in opt.study.trials if t.state.name == "COMPLETE"]
        assert len(complete) == 10 and all(t.state.name in ("COMPLETE", "FAIL") for t in opt.study.trials)
        assert sorted(t.value for t in complete) == sorted(opt.y)


def test_smac_output_directory_is_temporary():
    cls = _cls("smac")
    opt = cls(discrete_space_of_48(), seed=0, n_initial=2)
    out = Path(opt._tmpdir.name)
    assert out.is_dir()
    assert Path(os.getcwd()).resolve() not in out.resolve().parents
    assert not Path("smac3_output").exists()
    opt.close()
    assert not out.exists()


@pytest.mark.parametrize("method, module", [("tpe", "optuna"), ("smac", "smac")])
def test_missing_package_names_the_extra(method, module, monkeypatch):
    import importlib

    mod = importlib.import_module(f"graphbo.optimizers.{method}")
    cls = mod.TPE if method == "tpe" else mod.SMAC
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(ImportError, match=rf'pip install "graphbo\[{method}\]"'):
        cls(discrete_space_of_48(), seed=0)


@pytest.mark.parametrize("method", METHODS)
def test_graph_and_single_valued_variables_negative_values(method):
    ring = np.roll(np.eye(5), 1, axis=1)
    space = gb.Space(
        {"g": gb.GraphVariable(list("pqrst"), ring + ring.T), "one": gb.Categorical(["only"]), "o1": gb.Ordinal([9])}
    )
    opt = make(method, space, seed=2, n_initial=2)
    configs = run(opt, lambda c: -1e6 * "pqrst".index(c["g"]), 5)
    assert len({key(c) for c in configs}) == 5
    assert opt.best.value == -4e6
