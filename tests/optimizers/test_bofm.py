import numpy as np
import pytest

import graphbo as gb
from graphbo.acquisition import LogExpectedImprovement
from graphbo.benchmarks import load_benchmark
from support import categorical_binary_integer_two_continuous_data

FAST = dict(n_restarts=3, n_random=2000, n_spray=10, n_starts=8)


def categorical_binary_log_integer_space():
    return gb.Space({"a": gb.Categorical(["p", "q", "r"]), "x": gb.Continuous(-1, 1), "b": gb.Binary(),
                     "n": gb.Integer(1, 1000, log=True)})


def f(c):
    shift = {"p": 0.3, "q": -0.5, "r": 0.0}[c["a"]]
    return (c["x"] - shift) ** 2 + (0.5 if c["b"] else 0.0) + (0.3 if c["a"] != "q" else 0.0) \
        + 0.1 * (np.log10(c["n"]) - 1.0) ** 2


def run(seed, budget=16, **kw):
    opt = gb.BOFM(categorical_binary_log_integer_space(), seed=seed, n_initial=5, **(FAST | kw))
    for _ in range(budget):
        c = opt.ask()
        opt.tell(c, f(c))
    return opt


@pytest.mark.slow  # a quality check (an optimisation run to a budget): run with -m slow
def test_bofm_improves_on_random_search_and_respects_the_space():
    opt = run(0, budget=20)
    sp = categorical_binary_log_integer_space()
    for h in opt.history:
        sp.validate(h.config)
        assert isinstance(h.config["n"], int)
    rs = gb.minimize(f, categorical_binary_log_integer_space(), method="rs", budget=20, seed=0)
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
    assert opt.model.transform_outcome(float(y.min())) == pytest.approx(
        (np.log(y.min() - opt.model._shift) - opt.model._mu) / opt.model._sd)


# -- kriging believer: ask(n) with pending points ----------------------------------------------

BELIEVER = dict(n_restarts=3, n_random=3000, n_spray=20, n_starts=10)


def func2c_optimizer(seed=0, n_told=12):
    bench = load_benchmark("func2c")
    opt = gb.BOFM(bench.space, seed=seed, n_initial=n_told, **BELIEVER)
    for _ in range(n_told):
        c = opt.ask()
        opt.tell(c, bench(c))
    return opt


def distance(space, a, b):
    """Euclidean distance of the unit continuous coordinates + number of differing discrete values."""
    ra, rb = space.to_index(a), space.to_index(b)
    cont, disc = space.continuous_indices, space.discrete_indices
    return float(np.linalg.norm(ra[cont] - rb[cont]) + np.count_nonzero(ra[disc] != rb[disc]))


def test_ask_n_hallucinates_pending_points():
    """ask(2): the second suggestion comes from a model holding the first as a fantasy, and differs from a
    pending-unaware second suggestion (the first excluded, as before the believer) made from the same state."""
    believer, unaware = func2c_optimizer(seed=3), func2c_optimizer(seed=3)
    a1, a2 = believer.ask(2)
    assert believer.model.n_fantasies == 1
    assert believer.model.conditioned_inputs[0].shape[0] == believer.n_told + 1
    b1 = unaware.ask()
    assert b1 == a1  # same seed, same data, nothing pending: the same first suggestion
    unaware.mark_failed(b1)  # excluded but not pending: exactly the old behaviour for the second ask
    b2 = unaware.space.from_index(unaware._suggest())  # the acquisition's own choice (ask would move a repeat)
    assert unaware.model.n_fantasies == 0
    assert a2 != b2
    space = believer.space
    # without the believer the second suggestion stays next to the first; with it, it moves away
    assert distance(space, a1, b2) < 0.01
    assert distance(space, a1, a2) > 0.5
    # EI has collapsed at the pending point under the fantasy model
    def log_ei(opt, config):
        return float(LogExpectedImprovement(opt.model)(space.to_index(config)[None]))

    assert log_ei(believer, a1) < log_ei(unaware, a1) - 2.0  # at least e^2 less expected improvement


def test_batch_of_four_is_distinct_and_more_spread_than_pending_unaware_asks():
    believer, unaware = func2c_optimizer(seed=6), func2c_optimizer(seed=6)
    batch = believer.ask(4)
    assert believer.model.n_fantasies == 3
    seq = []
    for _ in range(4):
        seq.append(unaware.space.from_index(unaware._suggest()))  # the acquisition's own choice
        unaware.mark_failed(seq[-1])
    space = believer.space
    keys = {tuple(sorted(c.items())) for c in batch}
    assert len(keys) == 4
    assert not keys & {tuple(sorted(h.config.items())) for h in believer.history}

    def min_pairwise(configs):
        return min(distance(space, a, b) for i, a in enumerate(configs) for b in configs[i + 1:])

    # pending-unaware asks pile up at (practically) one point; the believer's batch is spread out
    assert min_pairwise(seq) < 0.01
    assert min_pairwise(batch) > 0.5
    # telling the batch leaves no fantasies behind
    bench = load_benchmark("func2c")
    for c in batch:
        believer.tell(c, bench(c))
    believer.ask()
    assert believer.model.n_fantasies == 0 and believer.model.conditioned_inputs[0].shape[0] == believer.n_told


def test_no_pending_points_no_fantasies():
    opt = func2c_optimizer(seed=5)
    c = opt.ask()
    assert opt.model.n_fantasies == 0 and opt.model.conditioned_inputs[0].shape[0] == opt.n_told
    assert np.array_equal(opt.model.conditioned_inputs[0].numpy(), opt.X[:, opt.space.discrete_indices])


def test_bofm_kernel_methods_fix_the_kernel():
    import graphbo as gb
    from graphbo.loop import make_optimizer

    space = gb.Space({"x": gb.Continuous(0, 1), "c": gb.Categorical(list("abc"))})
    for k in ("modlap", "moddif", "prodlap", "addlap"):
        opt = make_optimizer(f"bofm-{k}", space, seed=0)
        assert isinstance(opt, gb.BOFM) and opt.kernel.name == k
    with pytest.raises(TypeError, match="fixes the kernel"):
        make_optimizer("bofm-modlap", space, kernel="moddif")


def test_the_paper_methods_keep_d1s_pool_and_bofm_takes_the_smaller_default():
    from graphbo.loop import make_optimizer
    from graphbo.optimizers.bofm import PAPER_N_RANDOM

    space = gb.Space({"x": gb.Continuous(0, 1), "c": gb.Categorical(list("abc"))})
    assert PAPER_N_RANDOM == 100_000  # supplement D.1: "100000 randomly sampled points"
    assert gb.BOFM(space, seed=0).n_random == 20_000
    assert make_optimizer("bofm", space, seed=0).n_random == 20_000
    for k in ("modlap", "moddif", "addlap"):
        assert make_optimizer(f"bofm-{k}", space, seed=0).n_random == PAPER_N_RANDOM
    assert make_optimizer("bofm-modlap", space, seed=0, n_random=500).n_random == 500  # asked for: kept


def test_bofm_state_keeps_the_warm_fit_count(categorical_binary_integer_two_continuous_space):
    space = categorical_binary_integer_two_continuous_space
    X, y = categorical_binary_integer_two_continuous_data(16)
    opt = gb.BOFM(space, seed=0, n_initial=12, n_random=500, n_starts=4, n_restarts=2, restart_every=4)
    for row, v in zip(X[:12], y[:12]):
        opt.tell(space.from_index(row), float(v))
    for _ in range(2):
        config = opt.ask()
        opt.tell(config, 1.0)
    assert opt.model.warm_fits == 1
    state = opt.get_state()
    resumed = gb.BOFM(space, seed=0, n_initial=12, n_random=500, n_starts=4, n_restarts=2, restart_every=4)
    for obs in opt.history:
        resumed.tell(obs.config, obs.value)
    resumed.set_state(state)
    assert resumed.model.warm_fits == 1
    assert resumed.ask() == opt.ask()
    assert resumed.model.fit_info["warm"] is True and resumed.model.warm_fits == 2
