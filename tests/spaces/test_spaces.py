import numpy as np
import pytest

import graphbo as gb


def binary_categorical_ordinal_cycle_space():
    adj = [[0, 1, 0, 2], [1, 0, 1, 0], [0, 1, 0, 1], [2, 0, 1, 0]]  # weighted 4-cycle
    return gb.Space({
        "b": gb.Binary(),
        "c": gb.Categorical(["red", "green", "blue"]),
        "o": gb.Ordinal([1, 2, 4, 8]),
        "g": gb.GraphVariable(["n", "e", "s", "w"], adj),
    })


def test_round_trip_and_size():
    space = binary_categorical_ordinal_cycle_space()
    assert space.size == 2 * 3 * 4 * 4
    for config in space.sample(50, seed=1):
        row = space.to_index(config)
        assert space.from_index(row) == config
    assert space.to_index({"b": True, "c": "blue", "o": 8, "g": "w"}).tolist() == [1, 2, 3, 3]
    assert space.to_index({"b": 0, "c": "red", "o": 1, "g": "n"}).tolist() == [0, 0, 0, 0]


def test_sampling_is_seeded_and_uniform():
    space = binary_categorical_ordinal_cycle_space()
    assert space.sample(20, seed=3) == space.sample(20, seed=3)
    assert space.sample(20, seed=3) != space.sample(20, seed=4)
    rows = space.sample_index(40000, seed=0)
    counts = np.bincount(rows[:, 2], minlength=4) / len(rows)
    assert np.allclose(counts, 0.25, atol=0.01)


def test_neighbours_follow_each_graph():
    space = binary_categorical_ordinal_cycle_space()
    config = {"b": False, "c": "green", "o": 2, "g": "n"}
    nbrs = space.neighbors(config)
    changed = {}
    for nb in nbrs:
        diff = [k for k in config if nb[k] != config[k]]
        assert len(diff) == 1
        changed.setdefault(diff[0], set()).add(nb[diff[0]])
    assert changed == {"b": {True}, "c": {"red", "blue"}, "o": {1, 4}, "g": {"e", "w"}}
    rows, owner = space.neighbor_index_batch(np.stack([space.to_index(config)] * 3))
    assert len(rows) == 3 * len(nbrs) and set(owner.tolist()) == {0, 1, 2}


def test_path_graph_ends_have_one_neighbour():
    space = gb.Space({"o": gb.Ordinal(["lo", "mid", "hi"])})
    assert space.neighbors({"o": "lo"}) == [{"o": "mid"}]
    assert sorted(n["o"] for n in space.neighbors({"o": "mid"})) == ["hi", "lo"]


def test_random_walk_stays_within_distance():
    space = gb.Space({f"v{i}": gb.Ordinal(list(range(10))) for i in range(5)})
    start = np.full(5, 5)
    ends = space.random_walk_index(start, 2, n=500, seed=0)
    assert np.abs(ends - start).sum(axis=1).max() <= 2
    assert (np.abs(ends - start).sum(axis=1) == 2).any()


def test_laplacian_and_spectrum_are_cached():
    var = gb.Ordinal([1, 2, 3], edge_weight=2.0)
    assert np.allclose(var.laplacian, [[2, -2, 0], [-2, 4, -2], [0, -2, 2]])
    assert var.spectrum is var.spectrum
    lam, u = var.spectrum.eigenvalues, var.spectrum.eigenvectors
    assert np.allclose(u @ np.diag(lam) @ u.T, var.laplacian)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: gb.Categorical([]), "empty"),
        (lambda: gb.Categorical(["a", "b", "a"]), "duplicate value 'a'"),
        (lambda: gb.Ordinal([1, 2, 2]), "duplicate value 2"),
        (lambda: gb.GraphVariable(["a", "b"], [[0, 1], [2, 0]]), "not symmetric"),
        (lambda: gb.GraphVariable(["a", "b"], [[0, -1], [-1, 0]]), "negative edge weight -1"),
        (lambda: gb.GraphVariable(["a", "b", "c"], [[0, 1, 0], [1, 0, 0], [0, 0, 0]]), "disconnected"),
        (lambda: gb.GraphVariable(["a", "b"], [[0, 1]]), "shape"),
        (lambda: gb.Space({"x": gb.Binary(), "y": "not a variable"}), "'y'"),
    ],
)
def test_bad_definitions_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_duplicate_names_raise():
    b = gb.Binary()
    with pytest.raises(ValueError, match="'x'"):
        gb.Space([("x", gb.Binary()), ("x", gb.Binary())])
    gb.Space({"a": b})
    with pytest.raises(ValueError, match="already used under the name 'a'"):
        gb.Space({"z": b})


@pytest.mark.parametrize(
    "config, match",
    [
        ({"b": True, "c": "red", "o": 1}, "missing variable.*'g'"),
        ({"b": True, "c": "red", "o": 1, "g": "n", "zz": 3}, "unknown variable.*'zz'"),
        ({"b": True, "c": "purple", "o": 1, "g": "n"}, "'c'.*'purple'"),
        ({"b": True, "c": "red", "o": 3, "g": "n"}, "'o'.*value 3"),
        ({"b": [1], "c": "red", "o": 1, "g": "n"}, "'b'"),
    ],
)
def test_bad_configs_raise(config, match):
    with pytest.raises(ValueError, match=match):
        binary_categorical_ordinal_cycle_space().validate(config)


def categorical_continuous_integers_space():
    return gb.Space({
        "c": gb.Categorical(["a", "b"]),
        "lr": gb.Continuous(1e-4, 1e-1, log=True),
        "x": gb.Continuous(-2.0, 3.0),
        "depth": gb.Integer(1, 10),              # narrow: an ordinal path graph
        "units": gb.Integer(8, 1024, log=True),  # wide/log: continuous with rounding
    })


def test_integer_representation_depends_on_the_range():
    assert isinstance(gb.Integer(1, 10), gb.Ordinal)
    assert gb.Integer(1, 10).values == tuple(range(1, 11))
    wide = gb.Integer(0, 1000)
    assert not isinstance(wide, gb.Ordinal) and wide.kind == "integer"
    assert gb.Integer(1, 10, log=True).kind == "integer"


def test_mixed_rows_scale_continuous_values_to_the_unit_interval():
    space = categorical_continuous_integers_space()
    assert space.row_dtype == np.float64 and space.size == float("inf")
    assert space.continuous_indices.tolist() == [1, 2, 4] and space.discrete_indices.tolist() == [0, 3]
    row = space.to_index({"c": "b", "lr": 1e-2, "x": 0.5, "depth": 3, "units": 64})
    assert row[0] == 1 and row[3] == 2
    assert row[1] == pytest.approx(2 / 3) and row[2] == pytest.approx(0.5)
    assert row[4] == pytest.approx(np.log(64 / 8) / np.log(1024 / 8))
    back = space.from_index(row)
    assert back["c"] == "b" and back["depth"] == 3 and back["units"] == 64
    assert back["lr"] == pytest.approx(1e-2) and back["x"] == pytest.approx(0.5)


def test_mixed_sampling_is_seeded_in_bounds_and_canonical_for_rounded_integers():
    space = categorical_continuous_integers_space()
    rows = space.sample_index(500, seed=0)
    assert np.array_equal(rows, space.sample_index(500, seed=0))
    for cfg in space.sample(200, seed=1):
        assert 1e-4 <= cfg["lr"] <= 1e-1 and -2 <= cfg["x"] <= 3
        assert isinstance(cfg["units"], int) and 8 <= cfg["units"] <= 1024
        # a rounded integer's unit coordinate is the integer's own: rows of equal configs are equal
        assert space.to_index(cfg)[4] == pytest.approx(space.to_index(space.from_index(space.to_index(cfg)))[4])
    u = rows[:, 4]
    assert np.allclose(u, space.variables[4].snap(u))


@pytest.mark.parametrize("config, match", [
    ({"c": "a", "lr": 0.5, "x": 0.0, "depth": 1, "units": 8}, "'lr'.*outside"),
    ({"c": "a", "lr": 0.01, "x": "big", "depth": 1, "units": 8}, "'x'.*not a number"),
    ({"c": "a", "lr": 0.01, "x": 0.0, "depth": 1, "units": 8.5}, "'units'.*not an integer"),
    ({"c": "a", "lr": 0.01, "x": 0.0, "depth": 11, "units": 8}, "'depth'"),
])
def test_mixed_configs_are_validated(config, match):
    with pytest.raises(ValueError, match=match):
        categorical_continuous_integers_space().validate(config)


@pytest.mark.parametrize("make, match", [
    (lambda: gb.Continuous(1.0, 1.0), "low < high"),
    (lambda: gb.Continuous(0.0, 1.0, log=True), "low > 0"),
    (lambda: gb.Integer(1.5, 4), "integer bounds"),
])
def test_bad_continuous_definitions(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_combo_refuses_continuous_variables_and_points_to_bofm():
    with pytest.raises(ValueError, match="BOFM"):
        gb.COMBO(categorical_continuous_integers_space())
