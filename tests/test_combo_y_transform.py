"""COMBO's ``y_transform`` option and the value transforms behind it (graphbo.models.transforms)."""

import numpy as np
import pytest

import graphbo as gb
from scipy import stats

from graphbo.models.transforms import TAIL_FENCE, log_values, power_values, tail_values, transform_values
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


@pytest.mark.parametrize("how", ["log", "power", "tail"])
def test_y_transform_fits_the_model_on_the_transformed_values_and_suggests_as_combo_told_them(how):
    space, configs, values = _data()
    a = COMBO(space, seed=3, n_initial=1, n_burn=20, n_samples=3, y_transform=how)
    b = COMBO(space, seed=3, n_initial=1, n_burn=20, n_samples=3)
    for c, v, t in zip(configs, values, transform_values(np.array(values), how)):
        a.tell(c, v)
        b.tell(c, float(t))
    first_a, first_b = a.ask(), b.ask()  # the one initial-design point, then the model's suggestion
    assert first_a == first_b
    sa, sb = a.ask(), b.ask()
    assert sa == sb
    assert np.allclose(a.model.train_targets, transform_values(np.array(values), how))
    assert a.best.value == min(values)  # the user's values are kept as told


def test_y_transform_is_validated():
    with pytest.raises(ValueError, match="y_transform"):
        COMBO(_space(), y_transform="sqrt")
    with pytest.raises(ValueError, match="y_transform"):
        transform_values(np.array([1.0, 2.0]), "sqrt")


def test_power_values_is_yeo_johnson_of_the_standardised_values_by_maximum_likelihood():
    rng = np.random.default_rng(0)
    y = np.exp(rng.normal(0.0, 1.0, 200))  # a long right tail, as of losses with diverging runs
    out = power_values(y)
    z = (y - y.mean()) / y.std()
    lam = stats.yeojohnson_normmax(z)
    assert lam < 1.0  # the tail is compressed
    assert np.allclose(out, stats.yeojohnson(z, lmbda=lam), atol=1e-6)
    assert np.array_equal(np.argsort(out), np.argsort(y))
    assert abs(stats.skew(out)) < abs(stats.skew(y)) / 4
    sym = rng.normal(0.0, 1.0, 400)  # already normal: almost the identity after standardising
    assert np.allclose(power_values(sym), (sym - sym.mean()) / sym.std(), atol=0.15)


def test_power_values_edge_cases():
    assert np.array_equal(power_values(np.full(5, 3.0)), np.zeros(5))
    assert np.allclose(power_values(np.array([1.0, 3.0])), [-1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        power_values(np.array([1.0, np.nan, 2.0]))


def test_tail_values_leaves_the_bulk_alone_and_compresses_the_upper_outliers_logarithmically():
    rng = np.random.default_rng(1)
    bulk = rng.normal(1.0, 0.2, 40)
    y = np.concatenate([bulk, [5.0, 30.0, 400.0]])  # three diverging runs
    out = tail_values(y)
    q1, q3 = np.percentile(y, [25, 75])
    fence = q3 + TAIL_FENCE * (q3 - q1)
    inside = y <= fence
    assert inside.sum() >= 40 and np.array_equal(out[inside], y[inside])  # the best and the bulk: exactly as told
    assert np.allclose(out[~inside], fence + (q3 - q1) * np.log1p((y[~inside] - fence) / (q3 - q1)))
    assert np.array_equal(np.argsort(out, kind="stable"), np.argsort(y, kind="stable"))
    assert out.max() < fence + 10 * (q3 - q1) < 5.0  # 400, 2000 IQRs above the fence, ends under 10 above it
    # continuous with slope 1 at the fence: the worst value moved to just above it (the quartiles stay) barely moves
    eps = 1e-4 * (q3 - q1)
    y2 = y.copy()
    y2[-1] = fence + eps
    assert np.percentile(y2, 75) == q3 and np.percentile(y2, 25) == q1
    near = tail_values(y2)[-1]
    assert fence < near < fence + eps and near == pytest.approx(fence + eps - eps ** 2 / (2 * (q3 - q1)), rel=1e-9)


def test_tail_values_is_the_identity_without_upper_outliers():
    rng = np.random.default_rng(2)
    y = rng.normal(0.0, 1.0, 60)
    y = y[y < np.percentile(y, 75) + 1.4 * (np.percentile(y, 75) - np.percentile(y, 25))]
    assert np.array_equal(tail_values(y), y)
    low = np.concatenate([rng.normal(0.0, 0.1, 30), [-50.0]])  # an outlier on the good side is kept as it is
    assert np.array_equal(tail_values(low), low)


def test_tail_values_edge_cases():
    assert tail_values(np.array([])).size == 0
    ties = np.array([1.0] * 10 + [1e6])  # IQR 0: no scale to measure an outlier by
    assert np.array_equal(tail_values(ties), ties)
    almost = np.array([1.0] * 5 + [1.0 + 2.0 ** -52] * 5 + [2.0, 100.0])  # IQR one rounding step: the same
    assert np.array_equal(tail_values(almost), almost)
    y = np.array([3.0, 1.0, 2.0, 100.0, 2.5])
    before = y.copy()
    tail_values(y)
    assert np.array_equal(y, before)  # the caller's array is not modified
    with pytest.raises(ValueError, match="finite"):
        tail_values(np.array([1.0, np.inf, 2.0, 3.0]))
