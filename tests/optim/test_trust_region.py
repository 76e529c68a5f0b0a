"""Trust regions (CASMOPOLITAN, Wan et al. 2021): the state machine's rules, regions, and COMBO/BO-FM with them."""

import json
import math

import numpy as np
import pytest

import graphbo as gb
from graphbo.optim.graph_local_search import optimize_acquisition_on_graph
from graphbo.optim.mixed import optimize_acquisition_mixed
from graphbo.optim.trust_region import DEFAULTS, Region, TrustRegion, window_steps
from graphbo.optimizers import METHODS
from graphbo.study import Study
from support import binary_space

COMBO_FAST = {"n_burn": 5, "n_samples": 2, "n_random": 300, "n_spray": 5, "n_starts": 3}
BOFM_FAST = {"n_restarts": 2, "n_random": 300, "n_spray": 5, "n_starts": 3}
SMALL_TR = {"radius_init": 4, "fail_tol": 2, "succ_tol": 2}


def onemax(c):
    return -float(sum(c.values()))


def categorical_three_binaries_log_integer_space():
    return gb.Space({"a": gb.Categorical(["p", "q", "r"]), "b": gb.Binary(), "c": gb.Binary(), "d": gb.Binary(),
                     "x": gb.Continuous(-1, 1), "n": gb.Integer(1, 1000, log=True)})


def mixed_f(c):
    return (c["x"] - 0.3) ** 2 + 0.5 * (c["a"] != "q") + c["b"] + c["c"] - c["d"] + 0.1 * np.log10(c["n"])


def row(space, k=0):
    r = np.zeros(len(space), dtype=space.row_dtype)
    r[:k] = 1
    return r


# -- the state machine ---------------------------------------------------------------------------

def test_counters_start_after_the_initial_design_and_the_centre_is_the_best_point():
    space = binary_space(12)
    tr = TrustRegion(space, n_initial=3)
    events = [tr.observe(row(space, k), v) for k, v in [(1, 5.0), (2, 3.0), (3, 4.0)]]
    assert events == ["initial"] * 3
    assert tr.best_value == 3.0 and np.array_equal(tr.centre, row(space, 2))
    assert tr.observe(row(space, 4), 4.0) == "failure" and tr.n_failure == 1
    assert tr.observe(row(space, 5), 1.0) == "success" and (tr.n_success, tr.n_failure) == (1, 0)
    assert np.array_equal(tr.centre, row(space, 5))


def test_an_improvement_below_the_relative_threshold_is_a_failure():
    space = binary_space(12)
    tr = TrustRegion(space, n_initial=1)
    tr.observe(row(space, 0), 100.0)
    # 1e-3 * |100| = 0.1: 99.95 improves the best (it becomes the centre) but counts as a failure
    assert tr.observe(row(space, 1), 99.95) == "failure"
    assert tr.best_value == 99.95
    assert tr.observe(row(space, 2), 99.95 - 0.2) == "success"


def test_succ_tol_successes_expand_and_fail_tol_failures_shrink_by_the_factor():
    space = gb.Space({**{f"x{i}": gb.Binary() for i in range(40)}, "z": gb.Continuous(0, 1)})
    tr = TrustRegion(space, n_initial=1)
    assert (tr.radius, tr.radius_max, tr.length) == (20, 30, 0.8)  # CASMOPOLITAN's defaults (radius_max <= 30)
    r = row(space)
    tr.observe(r, 0.0)
    value = 0.0
    for expected in [30, 30]:  # floor(min(1.5 * 20, 30)) = 30, then capped
        events = []
        for _ in range(DEFAULTS["succ_tol"]):
            value -= 1.0
            events.append(tr.observe(r, value))
        assert events == ["success", "success", "expand"]
        assert tr.radius == expected and tr.n_success == 0
    assert tr.length == pytest.approx(1.6)  # min(1.5 * 1.2, 1.6)
    # a failure between successes resets the success count
    tr.observe(r, value - 1)
    tr.observe(r, value + 5)
    assert (tr.n_success, tr.n_failure) == (0, 1)
    for _ in range(DEFAULTS["fail_tol"] - 2):
        assert tr.observe(r, value + 5) == "failure"
    assert tr.observe(r, value + 5) == "shrink"
    assert tr.radius == math.floor(30 / 1.5) and tr.length == pytest.approx(1.6 / 1.5) and tr.n_failure == 0


def test_shrinking_to_the_minimum_radius_restarts_with_a_new_random_design():
    space = binary_space(12)
    tr = TrustRegion(space, n_initial=3, radius_init=4, fail_tol=2)
    for k, v in enumerate([3.0, 2.0, 1.0]):
        tr.observe(row(space, k), v)
    radii, events = [], []
    for _ in range(6):
        events.append(tr.observe(row(space, 5), 9.0))
        radii.append(tr.radius)
    # 4 -> floor(4 / 1.5) = 2 -> floor(2 / 1.5) = 1 <= radius_min = 1: restart at initial size
    assert events == ["failure", "shrink", "failure", "restart", "initial", "initial"]
    assert radii == [4, 2, 2, 4, 4, 4]
    assert tr.n_restarts == 1 and tr.restart_pending
    # the new region forgets the old centre: its first observations (even worse ones) define it
    assert tr.best_value == 9.0 and tr.n_observed == 2
    rng = np.random.default_rng(0)
    exclude = {row(space, k).tobytes() for k in range(3)}
    design = [tr.design_row(exclude, rng) for _ in range(3)]
    assert tr.design_row(exclude, rng) is None and not tr.restart_pending
    keys = {d.tobytes() for d in design}
    assert len(keys) == 3 and not keys & exclude


def test_a_continuous_box_at_its_minimum_length_restarts():
    space = gb.Space({"x": gb.Continuous(0, 1), "y": gb.Continuous(0, 1)})
    tr = TrustRegion(space, n_initial=1, fail_tol=1, length_init=0.1, length_min=0.05)
    tr.observe(np.array([0.5, 0.5]), 0.0)
    assert tr.observe(np.array([0.1, 0.1]), 1.0) == "shrink" and tr.length == pytest.approx(0.1 / 1.5)
    assert tr.observe(np.array([0.1, 0.1]), 1.0) == "restart"  # max(0.0667 / 1.5, 0.05) = 0.05 <= 0.05
    assert tr.length == 0.1 and tr.centre is None


def test_state_is_plain_json_and_restores_exactly():
    space = categorical_three_binaries_log_integer_space()
    tr = TrustRegion(space, n_initial=2, fail_tol=1)
    rng = np.random.default_rng(1)
    for r in space.sample_index(6, rng):
        tr.observe(r, float(rng.random()))
    copy = TrustRegion(space, n_initial=2, fail_tol=1)
    copy.load_state(json.loads(json.dumps(tr.state())))
    assert copy.state() == tr.state()
    assert np.array_equal(copy.region().lower, tr.region().lower)


def test_options_are_checked_and_errors_name_them():
    with pytest.raises(ValueError, match="unknown option.*'radius'"):
        TrustRegion(binary_space(12), 3, radius=3)
    with pytest.raises(ValueError, match="radius_init"):
        TrustRegion(binary_space(12), 3, radius_init=13)  # more than the 12 variables
    with pytest.raises(ValueError, match="factor"):
        TrustRegion(binary_space(12), 3, factor=1.0)
    with pytest.raises(ValueError, match="trust_region"):
        gb.COMBO(binary_space(12), trust_region={"fail_tolerance": 3})
    with pytest.raises(TypeError, match="trust_region"):
        gb.BOFM(categorical_three_binaries_log_integer_space(), trust_region="yes")
    with pytest.raises(ValueError, match="trust_region"):
        METHODS["combo-tr"](binary_space(12), trust_region=False)
    # one or two discrete variables: the default minimum still leaves one shrink before a restart
    tr = TrustRegion(gb.Space({"a": gb.Binary(), "x": gb.Continuous(0, 1)}), 2)
    assert (tr.radius_init, tr.radius_min) == (1, 0)


# -- regions and the acquisition optimisers ------------------------------------------------------

def test_region_samples_lie_in_the_ball_and_box_and_reach_its_edge():
    space = categorical_three_binaries_log_integer_space()
    centre = space.to_index({"a": "q", "b": 1, "c": 0, "d": 1, "x": 0.9, "n": 10})
    region = Region(space, centre, radius=2, length=0.2)
    rows = region.sample(2000, np.random.default_rng(0))
    assert region.contains(rows).all()
    dist = region.distance(rows)
    assert dist.max() == 2 and dist.min() == 0
    x = rows[:, space.continuous_indices]
    assert (x >= region.lower - 1e-12).all() and (x <= region.upper + 1e-12).all()
    assert region.upper[0] == 1.0  # clipped to the unit interval
    far = centre.copy()
    far[1:4] = 1 - far[1:4]
    assert not region.contains(far[None])[0]


def test_window_steps_round_the_box_side_onto_the_ordinal_grid():
    # an ordinal of k values sits at unit coordinates i / (k - 1); a box of side L reaches L (k - 1) / 2 steps,
    # half a step more by rounding, and at least one step
    assert window_steps(0.8, np.array([1017, 201, 3, 4])).tolist() == [406, 80, 1, 1]
    assert window_steps(0.8, np.array([5])).tolist() == [2]
    assert window_steps(1e-3, np.array([1017])).tolist() == [1]
    assert window_steps(2.0, np.array([11])).tolist() == [10]


def ordinal_space():
    return gb.Space({"i": gb.Ordinal(list(range(200))), "j": gb.Ordinal(list(range(60))), "a": gb.Categorical(list("pqrs")),
                     "b": gb.Binary(), "c": gb.Binary()})


def test_ordinals_lie_in_the_box_not_the_ball():
    space = ordinal_space()
    centre = space.to_index({"i": 190, "j": 30, "a": "p", "b": 0, "c": 0})
    region = Region(space, centre, radius=1, length=0.2)
    i, j = (space.names.index(n) for n in "ij")
    assert set(region.window.tolist()) == {i, j} and i not in region.disc.tolist()
    rows = region.sample(3000, np.random.default_rng(0))
    assert region.contains(rows).all()
    # i: 0.2 * 199 / 2 + 1/2 -> 20 steps, clipped at the top of the range; j: 0.2 * 59 / 2 + 1/2 -> 6 steps
    assert (rows[:, i].min(), rows[:, i].max()) == (170, 199)
    assert (rows[:, j].min(), rows[:, j].max()) == (24, 36)
    assert region.distance(rows).max() == 1  # moving the ordinals costs no Hamming distance
    both = centre.copy()
    both[i], both[j] = 175, 35
    assert region.distance(both[None])[0] == 0 and region.contains(both[None])[0]
    far = centre.copy()
    far[i] = 169
    assert not region.contains(far[None])[0]
    # "hamming": an ordinal is one more ball variable, free to take any value once it differs
    ball = Region(space, centre, radius=1, length=0.2, ordinals="hamming")
    assert ball.window.size == 0 and ball.contains(far[None])[0] and ball.distance(both[None])[0] == 2
    assert not ball.contains(both[None])[0]
    with pytest.raises(ValueError, match="ordinals"):
        Region(space, centre, radius=1, ordinals="steps")


def test_an_ordinal_box_shrinks_by_the_factor_and_restarts_at_the_minimum_length():
    space = gb.Space({"i": gb.Ordinal(list(range(200))), "j": gb.Ordinal(list(range(100)))})
    tr = TrustRegion(space, n_initial=1, fail_tol=1)
    assert tr.has_continuous and not tr.has_discrete
    tr.observe(np.array([100, 50]), 0.0)
    assert tr.region().steps.tolist() == [80, 40]  # 0.8 of each range
    tr.observe(np.array([0, 0]), 1.0)  # a failure: shrink
    assert tr.length == pytest.approx(0.8 / 1.5) and tr.region().steps.tolist() == [53, 26]
    events = [tr.observe(np.array([0, 0]), 1.0) for _ in range(20)]
    assert "restart" in events
    assert tr.n_restarts == 1
    # with ordinals in the ball the same space has no box, and the radius decides
    tr2 = TrustRegion(space, n_initial=1, ordinals="hamming")
    assert tr2.has_discrete and not tr2.has_continuous and tr2.radius_init == 2


def test_combo_tr_suggestions_on_long_ordinals_stay_in_their_box():
    space = ordinal_space()

    def f(c):
        return ((c["i"] - 120) / 50) ** 2 + ((c["j"] - 10) / 20) ** 2 + (c["a"] != "q") + c["b"]

    opt = METHODS["combo-tr"](space, seed=0, n_initial=4, trust_region={"fail_tol": 2, "length_init": 0.3},
                              **COMBO_FAST)
    checked = run_checking_regions(opt, f, 24, batch=2)
    assert checked >= 8
    assert opt.trust_region.length != 0.3 or opt.trust_region.n_restarts > 0


def score_sum(rows):
    rows = np.asarray(rows, dtype=float)
    return rows.sum(axis=1)  # maximised far from the centre: every constraint is active


def test_graph_local_search_stays_in_the_region():
    space = binary_space(16)
    centre = np.zeros(16, dtype=np.int64)
    region = Region(space, centre, radius=3)
    rng = np.random.default_rng(0)
    exclude = {centre.tobytes()}
    row_, value = optimize_acquisition_on_graph(score_sum, space, rng=rng, incumbent=centre, exclude=exclude,
                                                n_random=200, region=region)
    assert region.distance(row_[None])[0] == 3 and value == 3.0  # the best vertex of the ball
    # a ball whose every vertex is excluded: no vertex outside it is returned
    small = Region(space, centre, radius=1)
    ball = [centre] + [np.eye(16, dtype=np.int64)[i] for i in range(16)]
    with pytest.raises(gb.SpaceExhaustedError):
        optimize_acquisition_on_graph(score_sum, space, rng=rng, incumbent=centre, exclude={b.tobytes() for b in ball},
                                      n_random=200, region=small)


def test_mixed_search_stays_in_the_region():
    import torch

    space = categorical_three_binaries_log_integer_space()
    centre = space.to_index({"a": "p", "b": 0, "c": 0, "d": 0, "x": 0.0, "n": 30})
    region = Region(space, centre, radius=2, length=0.3)

    def acq(rows):
        return torch.as_tensor(rows, dtype=torch.float64).sum(dim=1)

    row_, _ = optimize_acquisition_mixed(acq, space, rng=np.random.default_rng(0), incumbent=centre, exclude=set(),
                                         n_random=300, n_spray=5, n_starts=4, region=region)
    assert region.contains(row_[None])[0]
    assert region.distance(row_[None])[0] == 2  # the ball's edge
    assert row_[space.continuous_indices][0] == pytest.approx(region.upper[0])  # the box's edge


# -- the optimizers ------------------------------------------------------------------------------

def run_checking_regions(opt, f, budget, batch):
    """Runs ``opt`` in batches, asserting that every model-based suggestion lies in the region of its ask
    (not the initial designs, nor a batch in which an exhausted ball forced a restart)."""
    checked = 0
    while opt.n_told < budget:
        tr = opt.trust_region
        region, restarts = tr.region(), tr.n_restarts
        model_turn = not opt._initial and not tr.queue and not tr.restart_pending and region is not None
        configs = opt.ask(batch)
        if model_turn and tr.n_restarts == restarts:
            for c in configs:
                assert region.contains(opt.space.to_index(c)[None])[0], (c, region.radius)
                checked += 1
        for c in configs:
            opt.tell(c, f(c))
    return checked


def test_combo_tr_suggestions_stay_in_the_region_and_it_restarts():
    opt = METHODS["combo-tr"](binary_space(12), seed=0, n_initial=4, trust_region=SMALL_TR, **COMBO_FAST)
    checked = run_checking_regions(opt, onemax, 40, batch=2)
    assert checked >= 10
    assert opt.trust_region.n_restarts >= 1 or opt.trust_region.radius != 4


def test_bofm_tr_suggestions_stay_in_the_region():
    opt = METHODS["bofm-tr"](categorical_three_binaries_log_integer_space(), seed=0, n_initial=4,
                             trust_region={"radius_init": 2, "fail_tol": 2, "length_init": 0.2}, **BOFM_FAST)
    checked = run_checking_regions(opt, mixed_f, 20, batch=2)
    assert checked >= 6


def test_same_seed_same_run():
    def trace(seed):
        opt = METHODS["combo-tr"](binary_space(12), seed=seed, n_initial=4, trust_region=SMALL_TR, **COMBO_FAST)
        for _ in range(16):
            c = opt.ask()
            opt.tell(c, onemax(c))
        return [o.config for o in opt.history], opt.trust_region.state()

    assert trace(3) == trace(3)
    assert trace(3)[0] != trace(4)[0]


def test_trust_region_false_is_plain_combo():
    a = gb.COMBO(binary_space(12), seed=1, n_initial=3, **COMBO_FAST)
    b = gb.COMBO(binary_space(12), seed=1, n_initial=3, trust_region=False, **COMBO_FAST)
    for _ in range(6):
        ca, cb = a.ask(), b.ask()
        assert ca == cb
        a.tell(ca, onemax(ca))
        b.tell(cb, onemax(cb))
    assert "trust_region" not in a.get_state()["method"]


@pytest.mark.parametrize("method, space, f, fast, tr", [
    ("combo-tr", binary_space(12), onemax, COMBO_FAST, SMALL_TR),
    ("bofm-tr", categorical_three_binaries_log_integer_space(), mixed_f, BOFM_FAST, {"radius_init": 2, "fail_tol": 2}),
])
def test_a_reopened_sqlite_study_continues_as_an_uninterrupted_one(tmp_path, method, space, f, fast, tr):
    options = dict(fast, n_initial=4, trust_region=tr)
    budget, before = (22, 15) if method == "combo-tr" else (12, 8)

    def step(study, n):
        for t in study.ask(n):
            study.tell(t, f(t.config))

    with Study(space, method, storage=str(tmp_path / "whole.db"), seed=5, **options) as whole:
        while whole.n_finished < before:
            step(whole, 2)
        pending = whole.ask(2)  # evaluations in flight at the interruption
        whole.tell(pending[0], f(pending[0].config))
        state_then = whole.optimizer.trust_region.state()
        whole.tell(pending[1], f(pending[1].config))
        while whole.n_finished < budget:
            step(whole, 2)
        expected = [(t.config, t.value) for t in whole.trials]
        final_state = whole.optimizer.trust_region.state()

    path = str(tmp_path / "split.db")
    with Study(space, method, storage=path, seed=5, **options) as first:
        while first.n_finished < before:
            step(first, 2)
        pending = first.ask(2)
        first.tell(pending[0], f(pending[0].config))  # pending[1] is left running
    with Study(space, method, storage=path, seed=5, **options) as second:
        assert second.optimizer.trust_region.state() == state_then
        if method == "combo-tr":
            assert state_then["n_restarts"] + final_state["n_restarts"] > 0 or state_then["radius"] != 4
        (again,) = [t for t in second.trials if t.status == "running"]
        second.tell(again, f(again.config))
        while second.n_finished < budget:
            step(second, 2)
        assert [(t.config, t.value) for t in second.trials] == expected
        assert second.optimizer.trust_region.state() == final_state


def test_an_exhausted_ball_restarts_the_region():
    # radius 2 of 6 bits: 22 vertices; without failures enough to shrink, the ball runs out first
    opt = METHODS["combo-tr"](binary_space(6), seed=0, n_initial=3, trust_region={"radius_init": 2, "fail_tol": 40},
                              **COMBO_FAST)
    seen = set()
    for _ in range(34):
        c = opt.ask()
        key = tuple(c.values())
        assert key not in seen
        seen.add(key)
        opt.tell(c, onemax(c))
    assert opt.trust_region.n_restarts >= 1
