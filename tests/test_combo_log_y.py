"""COMBO's ``log_y`` option and the value transform behind it (graphbo.models.transforms.log_values)."""

import numpy as np
import pytest

import graphbo as gb
from graphbo.models.transforms import log_values
from graphbo.optimizers.combo import COMBO


def test_log_values_is_bo_fm_s_transform_and_keeps_the_order():
    y = np.array([3.0, 0.5, 10.0, 0.7, 2.0])
    out = log_values(y)
    span = 9.5
    assert np.allclose(out, np.log(y - 0.5 + 1e-3 * span))
    assert np.array_equal(np.argsort(out), np.argsort(y))
    assert out.argmin() == 1 and out[1] == pytest.approx(np.log(1e-3 * span))
    # a long tail is compressed: the worst value is closer to the rest than it was
    assert (out[2] - out[0]) / (out[0] - out[3]) < (y[2] - y[0]) / (y[0] - y[3])


def test_log_values_edge_cases():
    assert np.all(np.isfinite(log_values(np.full(4, 2.5))))
    assert np.array_equal(log_values(np.array([7.0])), np.array([7.0]))
    with pytest.raises(ValueError, match="finite"):
        log_values(np.array([1.0, np.inf]))


def _space():
    return gb.Space([(f"v{i}", gb.Ordinal(list(range(12)))) for i in range(3)] + [("c", gb.Categorical(["a", "b", "c"]))])


def _data(seed: int = 0, n: int = 15):
    rng = np.random.default_rng(seed)
    space = _space()
    configs = space.sample(n, rng)
    values = [float(np.exp(0.4 * sum((c[f"v{i}"] - 4) ** 2 for i in range(3)) / 10) + (c["c"] == "b")) for c in configs]
    return space, configs, values


def test_log_y_fits_the_model_on_the_transformed_values_and_suggests_as_combo_told_them():
    space, configs, values = _data()
    a = COMBO(space, seed=3, n_initial=1, n_burn=20, n_samples=3, log_y=True)
    b = COMBO(space, seed=3, n_initial=1, n_burn=20, n_samples=3)
    for c, v, t in zip(configs, values, log_values(np.array(values))):
        a.tell(c, v)
        b.tell(c, float(t))
    first_a, first_b = a.ask(), b.ask()  # the one initial-design point, then the model's suggestion
    assert first_a == first_b
    sa, sb = a.ask(), b.ask()
    assert sa == sb
    assert np.allclose(a.model.train_targets, log_values(np.array(values)))
    assert a.best.value == min(values)  # the user's values are kept as told


def test_log_y_is_validated():
    with pytest.raises(TypeError, match="log_y"):
        COMBO(_space(), log_y="yes")
