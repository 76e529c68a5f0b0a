import numpy as np
import pytest

import graphbo as gb

FAST = dict(n_restarts=3, n_random=2000, n_spray=10, n_starts=8)


def space():
    return gb.Space({"a": gb.Categorical(["p", "q", "r"]), "x": gb.Continuous(-1, 1), "b": gb.Binary(),
                     "n": gb.Integer(1, 1000, log=True)})


def f(c):
    shift = {"p": 0.3, "q": -0.5, "r": 0.0}[c["a"]]
    return (c["x"] - shift) ** 2 + (0.5 if c["b"] else 0.0) + (0.3 if c["a"] != "q" else 0.0) \
        + 0.1 * (np.log10(c["n"]) - 1.0) ** 2


def run(seed, budget=16, **kw):
    opt = gb.BOFM(space(), seed=seed, n_initial=5, **(FAST | kw))
    for _ in range(budget):
        c = opt.ask()
        opt.tell(c, f(c))
    return opt


def test_bofm_improves_on_random_search_and_respects_the_space():
    opt = run(0, budget=20)
    sp = space()
    for h in opt.history:
        sp.validate(h.config)
        assert isinstance(h.config["n"], int)
    rs = gb.minimize(f, space(), method="rs", budget=20, seed=0)
    assert opt.best.value < 0.05
    assert opt.best.value < rs.best.value
    assert opt.best.config["a"] == "q" and opt.best.config["b"] is False


def test_bofm_is_seeded():
    a, b = run(1, budget=8), run(1, budget=8)
    assert [h.config for h in a.history] == [h.config for h in b.history]


@pytest.mark.parametrize("kernel", ["moddif", "general", "fnn", "prodlap", "addlap"])
def test_every_kernel_runs_inside_bofm(kernel):
    opt = run(2, budget=7, kernel=kernel)
    assert opt.n_told == 7 and np.isfinite(opt.y).all()
    assert opt.model.params is not None


def test_log_y_fits_on_the_log_scale():
    opt = run(3, budget=7, log_y=True)
    y = opt.y
    assert opt.model.transform_value(float(y.min())) == pytest.approx(
        (np.log(y.min() - opt.model._shift) - opt.model._mu) / opt.model._sd)
