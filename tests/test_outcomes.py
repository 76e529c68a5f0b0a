"""Pareto fronts, hypervolume, ParEGO's scalarisation and the feasibility rule (graphbo.outcomes)."""

import itertools

import numpy as np
import pytest

from graphbo.outcomes import (as_outcome, check_directions, feasibility_first, feasible, hypervolume, pareto_mask,
                              parego_scalarize, reference_point, simplex_weights, violation, Outcome)


def brute_pareto(Y):
    n = len(Y)
    return np.array([not any(np.all(Y[j] <= Y[i]) and np.any(Y[j] < Y[i]) for j in range(n) if j != i)
                     for i in range(n)])


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_pareto_mask_matches_the_definition_with_ties(k):
    rng = np.random.default_rng(k)
    Y = rng.integers(0, 4, size=(40, k)).astype(float)  # many ties and duplicates
    assert np.array_equal(pareto_mask(Y), brute_pareto(Y))


def cells_dominated(Y, ref):
    """Hypervolume of integer points against an integer reference point, by counting unit cells."""
    count = 0
    for corner in itertools.product(*[range(int(lo), int(r)) for lo, r in zip(Y.min(axis=0), ref)]):
        if np.any(np.all(Y <= np.array(corner), axis=1)):
            count += 1
    return count


@pytest.mark.parametrize("k,seed", [(2, 0), (2, 1), (3, 0), (3, 1), (4, 2)])
def test_hypervolume_counts_the_dominated_cells(k, seed):
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 6, size=(12, k)).astype(float)
    ref = np.full(k, 6.0)
    assert hypervolume(Y, ref) == pytest.approx(cells_dominated(Y, ref))


def test_hypervolume_ignores_points_outside_the_reference_box():
    Y = np.array([[1.0, 1.0], [0.5, 5.0], [5.0, 0.5]])
    assert hypervolume(Y, [2.0, 2.0]) == pytest.approx(1.0)
    assert hypervolume(np.zeros((0, 2)), [1, 1]) == 0.0
    with pytest.raises(ValueError, match="2 objectives"):
        hypervolume(Y, [1.0, 1.0, 1.0])


def test_reference_point_is_dominated_by_every_observation():
    Y = np.array([[0.0, 3.0], [1.0, 1.0], [2.0, 1.0]])
    ref = reference_point(Y)
    assert np.all(Y < ref)
    assert np.allclose(ref, [2.2, 3.2])
    assert np.all(reference_point(np.array([[5.0, -2.0]])) > [5.0, -2.0])  # no range: still outside


def test_parego_minimiser_is_pareto_optimal_for_any_weights():
    rng = np.random.default_rng(3)
    Y = rng.random((60, 3))
    front = pareto_mask(Y)
    for _ in range(50):
        w = simplex_weights(3, rng)
        assert w.min() >= 0 and w.sum() == pytest.approx(1.0)
        assert front[int(np.argmin(parego_scalarize(Y, w)))]


def test_parego_reaches_the_inside_of_a_non_convex_front_which_a_weighted_sum_misses():
    t = np.linspace(0, 1, 9)
    line, bulge = np.stack([t, 1 - t], 1), np.stack([t, np.sqrt(1 - t ** 2)], 1)  # bulge: towards the worst corner
    weights = np.linspace(0.001, 0.999, 2000)

    def reached(Y, scalarize):
        return {int(np.argmin(scalarize(Y, np.array([w, 1 - w])))) for w in weights}

    assert reached(line, parego_scalarize) == set(range(9))
    assert reached(bulge, parego_scalarize) >= set(range(2, 9))
    assert reached(bulge, lambda Y, w: Y @ w) == {0, 8}


def test_feasibility_first_ranks_every_infeasible_row_behind_the_feasible_ones():
    y = np.array([5.0, 1.0, 3.0, -2.0, 0.0])
    C = np.array([[-1.0, 0.0], [2.0, -1.0], [-0.5, -0.5], [0.5, 0.5], [0.0, 0.0]])
    ok = feasible(C)
    assert ok.tolist() == [True, False, True, False, True]
    assert violation(C).tolist() == [0.0, 2.0, 0.0, 1.0, 0.0]
    out = feasibility_first(y, C)
    assert out[ok].tolist() == y[ok].tolist()
    assert out[~ok].min() > out[ok].max()
    assert out[3] < out[1]  # less violation ranks better


def test_outcomes_read_from_what_an_objective_returns():
    assert as_outcome([1, 2]) == Outcome((1, 2))
    assert as_outcome({"value": 1.5, "constraints": [0.1]}) == Outcome((1.5,), (0.1,))
    assert as_outcome({"values": np.array([1.0, 2.0])}) == Outcome((1.0, 2.0))
    for bad in ({"values": [1], "value": 2}, {"valeus": [1]}, {"values": "ab"}, {"values": [1], "constraints": 3}):
        with pytest.raises(TypeError):
            as_outcome(bad)
    assert check_directions(("minimize", "maximize")) == ["minimize", "maximize"]
    for bad in ("minimize", [], ["min"], None):
        with pytest.raises((TypeError, ValueError)):
            check_directions(bad)
