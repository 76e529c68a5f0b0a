"""COMBO's learned log scale for long positive ordinals (graphbo.models.ordinal_warp)."""

import json
import math

import numpy as np
import pytest

import graphbo as gb
from graphbo.kernels import GraphDiffusionKernel
from graphbo.models.diffusion_gp import DiffusionGP
from graphbo.models.ordinal_warp import log_path_adjacency, log_path_spectrum, log_warp_candidates
from graphbo.spaces.variables import path_edge_weight

FAST = {"n_burn": 20, "n_samples": 3, "n_random": 300, "n_spray": 5, "n_starts": 3}


def test_the_log_path_has_log_spaced_edges_and_the_default_paths_length():
    values = list(range(1, 201))
    adj = log_path_adjacency(values)
    weights = adj[np.arange(199), np.arange(1, 200)]
    lengths = 1 / np.sqrt(weights)
    # the whole path is as long as the evenly spaced default: 199 edges of length 1 / sqrt(w_0)
    assert lengths.sum() == pytest.approx(199 / math.sqrt(path_edge_weight(200)))
    # each edge's length is proportional to the log of its values' ratio
    gaps = np.log(np.arange(2, 201) / np.arange(1, 200))
    assert np.allclose(lengths / lengths.sum(), gaps / gaps.sum())
    assert lengths[0] / lengths[-1] == pytest.approx(math.log(2) / math.log(200 / 199))
    assert np.array_equal(adj, adj.T) and np.count_nonzero(adj) == 2 * 199
    spectrum = log_path_spectrum(values)
    lap = np.diag(adj.sum(1)) - adj
    u, lam = spectrum.eigenvectors, spectrum.eigenvalues
    assert np.allclose(u @ np.diag(lam) @ u.T, lap, atol=1e-8)


@pytest.mark.parametrize("values", [
    list(range(1, 12)),  # a short path keeps unit edges
    list(range(0, 200)),  # zero has no logarithm
    list(range(100, 300)),  # less than a decade
    [True, False] * 10,
    [str(v) for v in range(1, 200)],
    list(range(200, 0, -1)),  # not increasing
])
def test_no_log_path_where_a_log_scale_has_no_meaning(values):
    assert log_path_adjacency(values) is None and log_path_spectrum(values) is None


def test_candidates_are_default_ordinals_with_a_log_path():
    space = gb.Space({"a": gb.Ordinal(list(range(1, 201))), "b": gb.Ordinal(list(range(0, 200))),
                      "c": gb.Ordinal(list(range(1, 201)), edge_weight=2.0), "d": gb.Binary(),
                      "e": gb.Ordinal([0.001 * 1.1 ** i for i in range(50)])})
    assert log_warp_candidates(space.variables) == [0, 4]


def gibbs_choices(f, log_design, seed):
    """The graph the model chooses at three successive fits to ~25 points of ``f`` on 1..200."""
    space = gb.Space({"n": gb.Ordinal(list(range(1, 201))), "c": gb.Binary()})
    rng = np.random.default_rng(seed)
    if log_design:  # a design dense at the low end, as a run closing in on a small optimum
        idx = np.unique(np.round(np.exp(rng.uniform(0, math.log(200), 30)))).astype(int) - 1
    else:
        idx = np.unique(rng.integers(0, 200, 30))
    X = np.stack([idx, rng.integers(0, 2, idx.size)], 1)
    y = np.array([f(float(i + 1)) + 0.3 * c for i, c in X])
    gp = DiffusionGP(GraphDiffusionKernel([v.spectrum for v in space.variables]), n_burn=30, n_samples=3,
                     warps={0: log_path_spectrum(space.variables[0].values)})
    choices = []
    for _ in range(3):
        gp.fit(X, y, rng=rng)
        choices.append(bool(gp.warp[0]))
        assert gp.kernel is gp._kernel_for(gp.warp)
    return choices


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_model_chooses_the_log_path_for_a_log_scale_function_and_the_even_one_otherwise(seed):
    assert gibbs_choices(lambda v: math.sin(2 * math.log(v)), True, seed) == [True] * 3
    assert gibbs_choices(lambda v: math.sin(v / 30), False, seed) == [False] * 3


def log_space():
    return gb.Space({"width": gb.Ordinal(list(range(4, 257))), "k": gb.Ordinal(list(range(0, 40))),
                     "act": gb.Categorical(["relu", "tanh"])})


def log_f(c):
    return (math.log2(c["width"]) - 3.0) ** 2 + 0.01 * (c["k"] - 20) ** 2 + (c["act"] == "tanh")


def test_combo_reports_its_choice_and_resumes_it():
    opt = gb.COMBO(log_space(), seed=0, n_initial=6, **FAST)
    assert opt.ordinal_scales == {"width": "linear"}  # the chain starts on the evenly spaced path
    for _ in range(14):
        c = opt.ask()
        opt.tell(c, log_f(c))
    scales = opt.ordinal_scales
    assert set(scales) == {"width"} and scales["width"] in ("log", "linear")
    state = json.loads(json.dumps(opt.get_state()))
    assert state["method"]["warp"] == [scales["width"] == "log"]
    again = gb.COMBO(log_space(), seed=0, n_initial=6, **FAST)
    for o in opt.history:  # the told data is replayed, then the state restored
        again.tell(o.config, o.value)
    again.set_state(state)
    assert again.ordinal_scales == scales
    assert again.kernel is again.model._kernel_for(np.array(state["method"]["warp"]))
    assert again.ask() == opt.ask()
    off = gb.COMBO(log_space(), seed=0, n_initial=6, warp_ordinals=False, **FAST)
    for o in opt.history:
        off.tell(o.config, o.value)
    with pytest.warns(UserWarning, match="warp_ordinals differs"):
        off.set_state(state)


def test_warp_off_or_nothing_to_warp_is_plain_combo():
    off = gb.COMBO(log_space(), seed=0, n_initial=4, warp_ordinals=False, **FAST)
    assert off.model.warp_positions.size == 0 and off.ordinal_scales == {}
    assert "warp" not in json.dumps(off.get_state())
    space = gb.Space({"k": gb.Ordinal(list(range(0, 40))), "b": gb.Binary()})

    def trace(warp):
        opt = gb.COMBO(space, seed=2, n_initial=4, warp_ordinals=warp, **FAST)
        for _ in range(8):
            c = opt.ask()
            opt.tell(c, (c["k"] - 7) ** 2 + c["b"])
        return [o.config for o in opt.history]

    assert trace(True) == trace(False)
    with pytest.raises(TypeError, match="warp_ordinals"):
        gb.COMBO(space, warp_ordinals="yes")
