"""BO-FM's acquisition optimisation: supplement D.1's per-start alternation, a start whose hill-climbing
step stays polished at once."""

import numpy as np
import pytest
import scipy.optimize
import torch

import graphbo as gb
import graphbo.optim.lockstep as lockstep
import graphbo.optim.mixed as mixed
from graphbo.optim.mixed import optimize_acquisition_mixed


def ordinals_categorical_two_continuous_space():
    return gb.Space({**{f"d{i}": gb.Ordinal(list(range(5))) for i in range(3)}, "b": gb.Categorical(list("pqr")),
                     "x": gb.Continuous(0.0, 1.0), "z": gb.Continuous(0.0, 1.0)})


def rugged(seed):
    """A random table over the discrete part times a smooth, discrete-dependent continuous bump with
    its own centre (some centres outside [0, 1], so that the optimum can sit on a bound)."""
    space = ordinals_categorical_two_continuous_space()
    disc, cont = space.discrete_indices, space.continuous_indices
    g = np.random.default_rng(seed)
    n = 5**3 * 3
    radix = torch.tensor([75, 15, 3, 1])
    table = torch.as_tensor(g.normal(size=n))
    centre = torch.as_tensor(g.uniform(-0.3, 1.3, size=(n, 2)))
    width = torch.as_tensor(g.uniform(0.5, 3.0, size=(n, 2)))

    def acquisition(rows):
        k = rows[:, disc].round().long() @ radix
        d = (rows[:, cont] - centre[k]) * width[k]
        return table[k] - torch.log1p(d.square().sum(1)) + 0.3 * torch.sin(3 * rows[:, cont[0]] * rows[:, cont[1]])

    return space, acquisition


def projected_gradient(acquisition, space, row):
    cont = space.continuous_indices
    r = torch.as_tensor(row[None], dtype=torch.float64).clone()
    c = r[:, cont].clone().requires_grad_(True)
    r[:, cont] = c
    (g,) = torch.autograd.grad(acquisition(r).sum(), c)
    x, g = c.detach().numpy()[0], g.numpy()[0]
    return np.clip(x + g, 0.0, 1.0) - x  # zero at a stationary point or where the ascent direction leaves [0, 1]


@pytest.mark.parametrize("rel_tol", [1e-6, 0.5])  # 0.5: the alternation stops early, the polish moves far
@pytest.mark.parametrize("seed", range(4))
def test_the_search_returns_a_type_wise_local_maximum(seed, rel_tol):
    space, acquisition = rugged(seed)
    score = lambda rows: acquisition(torch.as_tensor(np.asarray(rows, dtype=float))).numpy()  # noqa: E731
    row, value = optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(seed),
                                            incumbent=space.sample_index(1, seed)[0], exclude=set(),
                                            n_random=20, n_spray=5, n_starts=4, rel_tol=rel_tol)
    assert value == pytest.approx(float(score(row[None])[0]))
    # discrete: no one-variable move (continuous part fixed) is better
    nbrs, _ = space.neighbor_index_batch(row[None])
    assert float(score(nbrs).max()) <= value + 1e-12
    # continuous: a stationary point, or pushing against a bound
    assert np.abs(projected_gradient(acquisition, space, row)).max() < 1e-4
    # and a full L-BFGS-B from there gains nothing
    cont = space.continuous_indices

    def neg(x):
        r = row.copy()
        r[cont] = x
        return -float(score(r[None])[0])

    res = scipy.optimize.minimize(neg, row[cont], method="L-BFGS-B", bounds=[(0, 1)] * cont.size)
    assert -res.fun <= value + 1e-7


def test_the_search_finds_the_maximum_of_a_separable_acquisition():
    space = ordinals_categorical_two_continuous_space()
    disc, cont = space.discrete_indices, space.continuous_indices
    target = torch.tensor([4.0, 0.0, 2.0, 1.0], dtype=torch.float64)

    def acquisition(rows):
        return -(rows[:, disc] - target).abs().sum(1) - ((rows[:, cont] - torch.tensor([0.3, 1.4])) ** 2).sum(1)

    for seed in range(3):
        row, value = optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(seed),
                                                incumbent=space.sample_index(1, seed)[0], exclude=set(),
                                                n_random=2, n_spray=0, n_starts=2)
        np.testing.assert_array_equal(row[disc], target.numpy())
        np.testing.assert_allclose(row[cont], [0.3, 1.0], atol=1e-5)  # z's optimum 1.4 lies beyond its bound


def test_the_search_respects_exclude_and_takes_no_method_argument():
    space, acquisition = rugged(3)
    kw = dict(incumbent=space.sample_index(1, 0)[0], n_random=50, n_spray=5, n_starts=4)
    best, _ = optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(0), exclude=set(), **kw)
    other, _ = optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(0), exclude={best.tobytes()},
                                          **kw)
    assert other.tobytes() != best.tobytes()
    # one procedure: the choice between three (method="typewise", ...) was removed
    with pytest.raises(TypeError, match="method"):
        optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(0), exclude=set(),
                                   **(kw | {"method": "typewise"}))


def test_a_start_whose_discrete_part_stays_is_polished_instead_of_creeping_on_an_ill_conditioned_ridge(
        monkeypatch):
    """Once the discrete part stays, D.1's literal rounds take one L-BFGS-B iteration per round, each
    restarted without curvature, so on a narrow continuous ridge they creep for many rounds (184
    one-iteration calls on this case, measured before those rounds were removed); the search polishes
    such a start at once and reaches the maximum with one iteration per discrete move at most."""
    space = ordinals_categorical_two_continuous_space()
    disc, cont = space.discrete_indices, space.continuous_indices
    target = torch.tensor([2.0, 1.0, 3.0, 0.0], dtype=torch.float64)
    A = torch.tensor([[1.0, 0.98], [0.98, 1.0]], dtype=torch.float64)  # condition number about 100

    def acquisition(rows):
        d = rows[:, cont] - torch.tensor([0.55, 0.45])
        return -(rows[:, disc] - target).abs().sum(1) - ((d @ A) * d).sum(1)

    one_iteration, polishes = [], []
    real_run = lockstep.Lockstep.run

    def counting_run(self, rows, maxiter):
        (one_iteration if maxiter == 1 else polishes).append(rows.shape[0])
        return real_run(self, rows, maxiter)

    monkeypatch.setattr(lockstep.Lockstep, "run", counting_run)
    row, value = optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(5),
                                            incumbent=space.sample_index(1, 5)[0], exclude=set(),
                                            n_random=30, n_spray=0, n_starts=4)
    np.testing.assert_array_equal(row[disc], target.numpy())
    np.testing.assert_allclose(row[cont], [0.55, 0.45], atol=1e-3)
    assert value >= -1e-9  # the maximum is 0
    # a start makes at most 3 * 4 + 1 discrete moves here (three ordinals of 5 levels, a categorical),
    # each followed by one L-BFGS-B iteration; the rest is one polishing run of the 4 starts
    assert sum(one_iteration) <= 4 * 13
    assert polishes == [4]


def test_bofm_fits_with_the_weak_priors_and_the_paper_s_plain_likelihood_stays_a_model_choice():
    """``BOFM(prior=...)`` was removed: in few dimensions BO-FM fits with the weak priors (which tied with
    or beat the marginal likelihood alone, docs/bofm_benchmarks.md), and a run that still passes the option
    is told so. The paper's text, the marginal likelihood alone, is ``MixedGP(prior="none")``."""
    from graphbo.kernels.frequency_modulated import FMKernel
    from graphbo.models.mixed_gp import MixedGP

    space = gb.Space({"a": gb.Categorical(["p", "q", "r"]), "x": gb.Continuous(-1, 1), "b": gb.Binary()})

    def f(c):
        return (c["x"] - {"p": 0.3, "q": -0.5, "r": 0.0}[c["a"]]) ** 2 + (0.5 if c["b"] else 0.0)

    opt = gb.BOFM(space, seed=0, n_initial=5, n_restarts=2, n_random=500, n_spray=10, n_starts=6)
    for _ in range(14):
        c = opt.ask()
        opt.tell(c, f(c))
    assert (opt.prior, opt.kernel.prior, opt.model.prior) == ("weak", "weak", "weak")
    assert opt.best.value < 0.1
    with pytest.raises(TypeError, match="prior"):
        gb.BOFM(space, prior="none")
    spectra = [space.variables[j].spectrum for j in space.discrete_indices]
    plain = MixedGP(FMKernel("modlap", spectra, n_continuous=len(space.continuous_indices)), space, n_restarts=2,
                    prior="none")
    plain.fit(opt.X, opt.y, rng=np.random.default_rng(0))
    assert plain.prior == "none" and torch.isfinite(plain.params).all()


def test_bofm_has_one_acquisition_optimiser_and_no_option_to_choose_it():
    """``acq_optimizer`` ("typewise", "supplement", "batched") was removed: the former default is the
    one optimiser, and a run that still passes the option is told so, not silently ignored."""
    space = gb.Space({"a": gb.Categorical(["p", "q", "r"]), "x": gb.Continuous(-1, 1)})
    with pytest.raises(TypeError, match="acq_optimizer"):
        gb.BOFM(space, acq_optimizer="typewise")
    assert not hasattr(gb.BOFM(space), "acq_optimizer")


@pytest.mark.parametrize("max_rounds", [1000, 4])  # 4: some starts run out of their own rounds
@pytest.mark.parametrize("seed", range(3))
def test_converged_starts_polished_together_end_where_each_alone_ends(seed, max_rounds, monkeypatch):
    """Converged starts wait for one polish in lockstep until no start moves. A start's own steps do not
    depend on when it is polished: with an acquisition whose value at a row does not depend on the batch,
    every start ends exactly where it ends when alone (where the polish comes at once), and the first
    polishing L-BFGS-B run takes every start."""
    space, acquisition = rugged(seed)
    score = lambda rows: acquisition(torch.as_tensor(np.asarray(rows, dtype=float))).numpy()  # noqa: E731
    starts = space.sample_index(8, np.random.default_rng(seed)).astype(float)
    polishes = []
    real_run = lockstep.Lockstep.run

    def counting_run(self, rows, maxiter):
        if maxiter > 1:
            polishes.append(rows.shape[0])
        return real_run(self, rows, maxiter)

    monkeypatch.setattr(lockstep.Lockstep, "run", counting_run)
    together, values = mixed._alternate_per_start(acquisition, space, starts, score(starts), score, max_rounds,
                                                  1e-6)
    n_polishes = len(polishes)
    for i in range(starts.shape[0]):
        alone, value = mixed._alternate_per_start(acquisition, space, starts[i:i + 1], score(starts[i:i + 1]), score,
                                                  max_rounds, 1e-6)
        np.testing.assert_array_equal(together[i], alone[0])
        assert values[i] == value[0]
    if max_rounds == 1000:  # the first polish waits for the last start to converge and takes all of them
        assert polishes[0] == starts.shape[0]
        assert n_polishes < starts.shape[0]
