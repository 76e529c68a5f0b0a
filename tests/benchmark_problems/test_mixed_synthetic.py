"""Func2C, Func3C (CoCaBO) and Ackley5C (BO-FM): values by hand, spaces, optima."""

import math

import numpy as np
import pytest

from graphbo.benchmarks import REGISTRY, load_benchmark
from graphbo.benchmarks.mixed_synthetic import Ackley5C, Func2C, Func3C
from graphbo.spaces import Categorical, Continuous

# Component functions written out independently of the module.
CAMEL_MIN = -1.0316284534898774  # six-hump camel, at (0.0898420, -0.7126564) and its negation


def rosen(a, b):
    return 100 * (b - a**2) ** 2 + (1 - a) ** 2


def camel(a, b):
    return 4 * a**2 - 2.1 * a**4 + a**6 / 3 + a * b - 4 * b**2 + 4 * b**4


def beale_fn(a, b):
    return (1.5 - a + a * b) ** 2 + (2.25 - a + a * b**2) ** 2 + (2.625 - a + a * b**3) ** 2


def test_component_functions_at_known_points():
    assert rosen(1, 1) == 0 and rosen(0, 0) == 1 and rosen(-1, 1) == 4
    assert beale_fn(3, 0.5) == 0 and beale_fn(0, 0) == pytest.approx(14.203125)
    assert camel(0.0898420137, -0.7126564033) == pytest.approx(CAMEL_MIN, abs=1e-9)
    assert camel(1, 1) == pytest.approx(4 - 2.1 + 1 / 3 + 1)


def test_func2c_by_hand():
    f = Func2C()
    # x = (0, 0) -> z = (0, 0): R = 1/300, C = 0, B = 14.203125/50
    R, C, B = 1 / 300, 0.0, 14.203125 / 50
    assert f({"x1": 0.0, "x2": 0.0, "h1": 0, "h2": 0}) == pytest.approx(2 * R)
    assert f({"x1": 0.0, "x2": 0.0, "h1": 0, "h2": 1}) == pytest.approx(R + C)
    assert f({"x1": 0.0, "x2": 0.0, "h1": 2, "h2": 4}) == pytest.approx(2 * B)
    for h2 in (2, 3, 4):  # every h2 >= 2 selects Beale
        assert f({"x1": 0.0, "x2": 0.0, "h1": 1, "h2": h2}) == pytest.approx(C + B)
    # x = (0.5, 0.5) -> z = (1, 1): Rosenbrock's minimiser
    z = (1.0, 1.0)
    assert f({"x1": 0.5, "x2": 0.5, "h1": 0, "h2": 1}) == pytest.approx(rosen(*z) / 300 + camel(*z) / 10)
    assert f({"x1": 0.5, "x2": 0.5, "h1": 0, "h2": 0}) == pytest.approx(0.0, abs=1e-15)
    # x = (-0.7, 0.3) -> z = (-1.4, 0.6)
    z = (-1.4, 0.6)
    assert f({"x1": -0.7, "x2": 0.3, "h1": 2, "h2": 1}) == pytest.approx(beale_fn(*z) / 50 + camel(*z) / 10)
    # the optimum, at the camel minimiser halved
    best = {"x1": 0.0898420137 / 2, "x2": -0.7126564033 / 2, "h1": 1, "h2": 1}
    assert f(best) == pytest.approx(0.2 * CAMEL_MIN, abs=1e-9)
    assert f.optimum == pytest.approx(-0.2063257, abs=1e-7)
    assert f(f.optimal_config) == pytest.approx(f.optimum, abs=1e-12)


def test_func3c_by_hand():
    f = Func3C()
    # x = (0.5, 0) -> z = (1, 0): R = 100/300, C = (4 - 2.1 + 1/3)/10, B = 4.453125/50
    R, C, B = 1 / 3, (4 - 2.1 + 1 / 3) / 10, 4.453125 / 50
    assert beale_fn(1, 0) == pytest.approx(4.453125)
    base = {"x1": 0.5, "x2": 0.0}
    assert f({**base, "h1": 0, "h2": 0, "h3": 0}) == pytest.approx(2 * R + 5 * C)
    assert f({**base, "h1": 1, "h2": 2, "h3": 1}) == pytest.approx(C + B + 2 * R)
    assert f({**base, "h1": 2, "h2": 1, "h3": 2}) == pytest.approx(B + C + 2 * B)
    assert f({**base, "h1": 2, "h2": 4, "h3": 3}) == pytest.approx(B + B + 3 * B)
    z = (0.4, -1.8)
    cfg = {"x1": 0.2, "x2": -0.9, "h1": 1, "h2": 0, "h3": 0}
    assert f(cfg) == pytest.approx(camel(*z) / 10 + rosen(*z) / 300 + 5 * camel(*z) / 10)
    best = {"x1": -0.0898420137 / 2, "x2": 0.7126564033 / 2, "h1": 1, "h2": 1, "h3": 0}
    assert f(best) == pytest.approx(0.7 * CAMEL_MIN, abs=1e-9)
    assert f.optimum == pytest.approx(-0.7221399, abs=1e-7)
    assert f(f.optimal_config) == pytest.approx(f.optimum, abs=1e-12)


def ackley6(z):
    z = np.asarray(z, dtype=float)
    return (-20 * math.exp(-0.2 * math.sqrt(np.mean(z**2))) - math.exp(np.mean(np.cos(2 * math.pi * z)))
            + 20 + math.e)


def test_ackley5c_by_hand():
    f = Ackley5C()
    opt = {"x1": 0.0, "h1": 8, "h2": 8, "h3": 8, "h4": 8, "h5": 8}
    assert f(opt) == pytest.approx(0.0, abs=1e-12) and f.optimum == 0.0
    # all coordinates 1: cos(2 pi) = 1, so f = 20 (1 - exp(-0.2))
    ones = {"x1": 1.0, **{f"h{i}": 16 for i in range(1, 6)}}
    assert f(ones) == pytest.approx(20 * (1 - math.exp(-0.2)))
    # z = (-1, -1, 1, 0, 0, 0): rms sqrt(1/2), all cosines 1
    cfg = {"x1": -1.0, "h1": 0, "h2": 16, "h3": 8, "h4": 8, "h5": 8}
    assert f(cfg) == pytest.approx(20 * (1 - math.exp(-0.2 * math.sqrt(0.5))))
    # h -> h/8 - 1
    cfg = {"x1": 0.3, "h1": 3, "h2": 11, "h3": 5, "h4": 0, "h5": 14}
    assert f(cfg) == pytest.approx(ackley6([0.3, -0.625, 0.375, -0.375, -1.0, 0.75]))


@pytest.mark.parametrize("cls, n_cont, choices", [(Func2C, 2, (3, 5)), (Func3C, 2, (3, 5, 4)),
                                                  (Ackley5C, 1, (17,) * 5)])
def test_spaces(cls, n_cont, choices):
    b = cls()
    vars_ = b.space.variables
    assert len(vars_) == n_cont + len(choices)
    for v in vars_[:n_cont]:
        assert isinstance(v, Continuous) and (v.low, v.high, v.log) == (-1.0, 1.0, False)
    for v, k in zip(vars_[n_cont:], choices):
        assert type(v) is Categorical and v.n_values == k and list(v.values) == list(range(k))
        assert np.array_equal(v.adjacency, np.ones((k, k)) - np.eye(k))  # complete graph
    assert b.default_budget == 200 and b.default_n_initial == 10
    with pytest.raises(ValueError):
        b({**b.optimal_config, "x1": 1.5})
    with pytest.raises(ValueError):
        b({**b.optimal_config, "h1": choices[0]})


@pytest.mark.parametrize("name, cls", [("func2c", Func2C), ("func3c", Func3C), ("ackley5c", Ackley5C)])
def test_registry_and_determinism(name, cls):
    assert REGISTRY[name].needs == ()
    b = load_benchmark(name)
    assert isinstance(b, cls) and b.name == name
    cfgs = b.space.sample(20, seed=3)
    vals = [b(c) for c in cfgs]
    assert vals == [b(c) for c in cfgs] == [cls()(c) for c in cfgs]
    assert all(math.isfinite(v) for v in vals)
    # the row path (unit coordinates for x) agrees with the config path
    rows = np.array([b.space.to_index(c) for c in cfgs])
    assert np.allclose([b.evaluate_index(r) for r in rows], vals, rtol=1e-12, atol=1e-12)
    assert np.allclose(b.evaluate_batch(rows), vals, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", [Func2C, Func3C, Ackley5C])
def test_random_search_never_beats_the_optimum(cls):
    b = cls()
    rows = b.space.sample_index(200_000, seed=0)
    vals = b.evaluate_batch(rows)
    assert vals.min() >= b.optimum - 1e-12
    # and the claimed optimum is attained
    assert b(b.optimal_config) == pytest.approx(b.optimum, abs=1e-12)
    # a fine grid around the minimiser with the best categoricals does not beat it either
    if cls is not Ackley5C:
        g = np.linspace(0.0, 1.0, 401)
        u1, u2 = np.meshgrid(g, g, indexing="ij")
        best = b.space.to_index(b.optimal_config)
        grid = np.repeat(best[None, :], u1.size, axis=0)
        grid[:, 0], grid[:, 1] = u1.ravel(), u2.ravel()
        gv = b.evaluate_batch(grid)
        assert gv.min() >= b.optimum - 1e-12 and gv.min() <= b.optimum + 1e-3
