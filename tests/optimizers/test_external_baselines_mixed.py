"""TPE (optuna) and SMAC (SMAC3) on mixed spaces, and failed evaluations.

Each test skips when its package is missing. SMAC's local search is slow on
continuous variables (~1 s a suggestion here), so its runs are short.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import graphbo as gb

PACKAGES = {"tpe": "optuna", "smac": "smac"}
BUDGET = {"tpe": 30, "smac": 8}  # asks per run (2 of them the shared random design)


def make(method, space, seed, n_initial):
    pytest.importorskip(PACKAGES[method])
    if method == "tpe":
        from graphbo.optimizers.tpe import TPE

        return TPE(space, seed=seed, n_initial=n_initial)
    from graphbo.optimizers.smac import SMAC

    return SMAC(space, seed=seed, n_initial=n_initial, n_challengers=1000)


def rounded_integers_mixed_space():
    return gb.Space(
        {
            "lr": gb.Continuous(1e-4, 1.0, log=True),
            "x": gb.Continuous(-2.0, 3.0),
            "n": gb.Integer(1, 1000, log=True),  # rounded continuous (IntegerRange)
            "w": gb.Integer(0, 500),  # wide: rounded continuous too
            "c": gb.Categorical(["a", "b", "c"]),
            "o": gb.Ordinal([1, 2, 4]),
        }
    )


def f_mixed(c):
    """Independent of ``lr`` and ``n``: their proposals show the sampling scale."""
    return (c["x"] - 1.0) ** 2 + 0.001 * abs(c["w"] - 100) + "abc".index(c["c"]) + abs(c["o"] - 2)


def run(opt, f, budget):
    configs = []
    for _ in range(budget):
        c = opt.ask()
        configs.append(c)
        opt.tell(c, f(c))
    return configs


@pytest.mark.parametrize("method", ["tpe", "smac"])
def test_mixed_space_bounds_integers_log_scale_and_reproducibility(method):
    space = rounded_integers_mixed_space()
    assert isinstance(space["n"], gb.spaces.IntegerRange) and isinstance(space["w"], gb.spaces.IntegerRange)
    opt = make(method, space, seed=0, n_initial=2)
    configs = run(opt, f_mixed, BUDGET[method])
    for c in configs:
        space.validate(c)  # bounds, categories, integrality
        assert 1e-4 <= c["lr"] <= 1.0 and -2.0 <= c["x"] <= 3.0
        for name in ("n", "w"):
            assert type(c[name]) is int, (name, c[name])
        assert 1 <= c["n"] <= 1000 and 0 <= c["w"] <= 500
    assert len({json.dumps(c, sort_keys=True) for c in configs}) == len(configs)
    assert opt.n_told == len(configs) and not opt._trials  # every trial the library proposed was completed

    # log scale honoured in the method's own proposals: lr and n do not matter, so they are
    # spread over their range; on a log scale about half lie below the geometric midpoints
    # (1e-2, ~32), on a linear scale about 1% and 3%.
    own = configs[2:]
    low = sum(c["lr"] < 1e-2 for c in own) + sum(c["n"] < 32 for c in own)
    assert low >= 0.2 * 2 * len(own), (low, len(own))
    if method == "tpe":
        d = opt.study.trials[-1].distributions
        assert d["lr"].log and not d["x"].log and d["n"].log and d["n"].step == 1 and not d["w"].log
        # the model-based part is working on the continuous variable as well
        assert min(abs(c["x"] - 1.0) for c in own) < 0.2
    else:
        cs = opt.configspace
        assert cs["lr"].log and not cs["x"].log and cs["n"].log and not cs["w"].log

    # the same seed gives the same configurations, also in another process (another PYTHONHASHSEED)
    n = 6
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import test_external_baselines_mixed as T; "
        f"opt = T.make({method!r}, T.rounded_integers_mixed_space(), seed=0, n_initial=2); "
        f"print(json.dumps(T.run(opt, T.f_mixed, {n})))"
    )
    env = dict(os.environ, PYTHONHASHSEED="4321")
    proc = subprocess.run(
        [sys.executable, "-c", script, str(Path(__file__).parent)], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == configs[:n]


def discrete_space_of_12():  # 2 * 2 * 3 = 12 configurations
    return gb.Space({"a": gb.Binary(), "b": gb.Binary(), "c": gb.Categorical(["x", "y", "z"])})


def f_small(c):
    return float(c["a"]) + float(c["b"]) + "xyz".index(c["c"])


def key(c):
    return tuple(sorted(c.items()))


@pytest.mark.parametrize("method", ["tpe", "smac"])
def test_failed_configurations_are_recorded_and_never_proposed_again(method):
    space = discrete_space_of_12()
    opt = make(method, space, seed=1, n_initial=2)
    asked = [opt.ask() for _ in range(4)]  # 2 from the random design, 2 from the method
    failed = [asked[0], asked[3]]  # one the method did not propose, one it did
    for c in asked:
        if c in failed:
            opt.mark_failed(c)
        else:
            opt.tell(c, f_small(c))
    rest = run(opt, f_small, space.size - 4)  # every other configuration, each once
    assert len({key(c) for c in asked + rest}) == space.size
    assert not any(c in failed for c in rest)
    with pytest.raises(gb.SpaceExhaustedError):
        opt.ask()
    assert opt.n_told == space.size - 2

    def to_config(params):  # library parameters are value indices of the discrete variables
        return {n: space[n].value_at(params[n]) for n in space.names}

    if method == "tpe":
        trials = opt.study.trials
        assert all(t.state.name in ("COMPLETE", "FAIL") for t in trials)  # nothing left running
        complete = [t for t in trials if t.state.name == "COMPLETE"]
        assert len(complete) == space.size - 2
        assert sorted(t.value for t in complete) == sorted(opt.y)
        fails = [to_config(t.params) for t in trials if t.state.name == "FAIL"]
        for c in failed:  # recorded as FAIL (possibly also TPE's duplicate re-proposals of them)
            assert c in fails
        # the FAIL trial of a TPE proposal is that very trial, not an added one
        assert not any(to_config(t.params) == asked[3] for t in complete)
    else:
        statuses = {}
        for k, v in opt.smac.runhistory.items():
            config = opt.smac.runhistory.get_config(k.config_id)
            statuses.setdefault(key(to_config(config)), set()).add(v.status.name)
        for c in failed:
            assert statuses[key(c)] == {"CRASHED"}
        assert sum(s == {"SUCCESS"} for s in statuses.values()) == space.size - 2
        assert all(math.isinf(v.cost) for v in opt.smac.runhistory.values() if v.status.name == "CRASHED")


def test_tpe_failures_through_minimize_show_up_as_fail():
    pytest.importorskip("optuna")
    space = gb.Space({"x": gb.Continuous(0.0, 1.0), "c": gb.Categorical(["ok", "bad"])})

    def objective(c):
        if c["c"] == "bad":
            raise RuntimeError("diverged")
        return (c["x"] - 0.3) ** 2

    # failure_value=None: failures are not told a penalty, so TPE records them as Optuna's FAIL
    result = gb.minimize(objective, space, method="tpe", budget=16, seed=3, n_initial=4, failure_value=None)
    study = result.optimizer.study
    n_bad = sum(t.status == "failed" for t in result.trials)
    assert n_bad >= 1
    states = [t.state.name for t in study.trials]
    assert "RUNNING" not in states
    fails = [t for t in study.trials if t.state.name == "FAIL"]
    assert len(fails) >= n_bad and all(t.params["c"] == 1 for t in fails)  # index of "bad"
    assert states.count("COMPLETE") == len(result.history) == 16 - n_bad


@pytest.mark.parametrize("method", ["tpe", "smac"])
def test_mixed_space_uses_the_observations(method):
    """After 2 random evaluations, the method gets close to the optimum x=1 (a random
    point is within 0.2 of it with probability 0.08)."""
    space = gb.Space({"x": gb.Continuous(-2.0, 3.0), "c": gb.Categorical(["a", "b"])})
    opt = make(method, space, seed=0, n_initial=2)
    configs = run(opt, lambda c: (c["x"] - 1.0) ** 2 + (c["c"] == "b"), BUDGET[method])
    assert min(abs(c["x"] - 1.0) for c in configs[2:]) < 0.2
