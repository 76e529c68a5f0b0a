"""TreeBO (Jenatton et al. 2017), NASBOT's feed-forward baseline: the tree, the model, the optimizer."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from graphbo.nas.domain.architecture import Architecture
from graphbo.nas.domain.space import ArchitectureSpace
from graphbo.optimizers import METHODS
from graphbo.optimizers.treebo import Chain, FeedForwardTree, TreeBO, TreeGP, chain_of


def _chains(tree, n, seed):
    rng = np.random.default_rng(seed)
    return [tree.sample(rng) for _ in range(n)]


def _run(opt, objective, budget):
    for _ in range(budget):
        config = opt.ask()
        opt.tell(config, objective(opt.space.architecture(config)))
    return opt


def depth_width(arch: Architecture) -> float:
    """Minimum 0 at 4 hidden layers of 128 units: ((d - 4) / 2)^2 + mean_i (log2 u_i - 7)^2 / 4."""
    c = chain_of(arch)
    assert c is not None
    return ((c.depth - 4) / 2) ** 2 + float(np.mean([(math.log2(u) - 7) ** 2 for u in c.units])) / 4


def depth_small_units(arch: Architecture) -> float:
    """Minimum 0 at 4 hidden layers of 8 units: ((d - 4) / 2)^2 + mean_i (log2 u_i - 3) / 2 (linear in
    the log-units, what TreeBO's shared linear part models)."""
    c = chain_of(arch)
    assert c is not None
    return ((c.depth - 4) / 2) ** 2 + float(np.mean([math.log2(u) - 3 for u in c.units])) / 2


# -- the tree ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("domain", ["mlp-reg", "cnn"])
def test_chains_round_trip_and_the_pool_is_in_the_tree(domain):
    space = ArchitectureSpace(domain)
    tree = FeedForwardTree(space, max_depth=12)
    for c in _chains(tree, 50, 0):
        arch = tree.to_architecture(c)
        assert chain_of(arch) == c
        assert 1 <= c.depth <= 12
    for arch in space.initial_pool():
        assert chain_of(arch) is not None
    # renumbering the layers gives the same chain
    arch = space.initial_pool()[0]
    perm = np.random.default_rng(1).permutation(arch.n_layers)
    inv = {int(old): new for new, old in enumerate(perm)}
    renumbered = Architecture(kind=arch.kind, labels=[arch.labels[i] for i in perm],
                              units=[arch.units[i] for i in perm],
                              edges=[(inv[a], inv[b]) for a, b in arch.edges],
                              strides=None if arch.strides is None else [arch.strides[i] for i in perm])
    assert chain_of(renumbered) == chain_of(arch)


def test_a_network_with_a_skip_connection_is_not_a_chain():
    arch = ArchitectureSpace("mlp-class").initial_pool()[0]
    skip = Architecture(kind=arch.kind, labels=list(arch.labels), units=list(arch.units),
                        edges=list(arch.edges) + [(1, 3)])
    assert skip.validity_error() is None
    assert chain_of(skip) is None


def test_perturbations_are_one_move_away_and_well_formed():
    tree = FeedForwardTree(ArchitectureSpace("cnn"), max_depth=10)
    rng = np.random.default_rng(0)
    for c in _chains(tree, 30, 2):
        for _ in range(10):
            p = tree.perturb(c, rng)
            if p is None:
                continue
            assert abs(p.depth - c.depth) <= 1 and p != c
            if p.depth == c.depth:
                assert sum(a != b for a, b in zip(zip(p.labels, p.units, p.strides), zip(c.labels, c.units, c.strides))) == 1
            assert p.labels[0] in ("conv3", "conv5", "conv7", "res3", "res5", "res7")
            first_fc = p.labels.index("fc") if "fc" in p.labels else p.depth
            assert all(l == "fc" for l in p.labels[first_fc:])


# -- the model ----------------------------------------------------------------------------------------------
def test_the_model_learns_a_function_of_depth_and_width_across_depths():
    """Train on even depths only: unseen (odd) depths are predicted through the shared layer nodes."""
    space = ArchitectureSpace("mlp-reg")
    tree = FeedForwardTree(space, max_depth=10)
    pool = _chains(tree, 400, 3)
    train = [c for c in pool if c.depth % 2 == 0][:60]
    test = [c for c in pool if c.depth % 2 == 1][:100]
    f = lambda c: depth_width(tree.to_architecture(c))  # noqa: E731
    y = np.array([f(c) for c in train])
    model = TreeGP(tree).fit(train, y, rng=np.random.default_rng(0))
    truth = np.array([f(c) for c in test])
    pred = model.posterior(test).mean[0].numpy() * model._sd + model._mu
    rmse = float(np.sqrt(np.mean((pred - truth) ** 2)))
    prior = float(np.sqrt(np.mean((y.mean() - truth) ** 2)))
    assert rmse < 0.4 * prior, (rmse, prior)


def test_posterior_variance_is_small_at_data_and_fantasies_shrink_it():
    tree = FeedForwardTree(ArchitectureSpace("mlp-class"), max_depth=8)
    X = _chains(tree, 20, 4)
    y = np.array([depth_width(tree.to_architecture(c)) for c in X])
    model = TreeGP(tree).fit(X, y, rng=np.random.default_rng(0))
    noise = math.exp(model.hyperparameters["log_noise"])
    far = [c for c in _chains(tree, 40, 5) if c not in X][:5]
    post = model.posterior(X + far)
    assert torch.all(post.variance >= 0)
    assert float(post.variance[0, :20].max()) <= 2 * noise + 1e-3
    before = model.posterior(far).variance[0]
    model.add_fantasies(far[:1])
    after = model.posterior(far).variance[0]
    assert float(after[0]) < 0.5 * float(before[0])
    assert torch.allclose(model.posterior(X).mean, post.mean[:, :20], atol=1e-6)  # believer leaves the mean


# -- the optimizer --------------------------------------------------------------------------------------------
def test_treebo_is_registered_and_checks_its_options_by_name():
    assert METHODS["treebo"] is TreeBO
    space = ArchitectureSpace("mlp-reg")
    for name, value, error in [("max_depth", 0, ValueError), ("max_depth", 58, ValueError),
                               ("units_grid", [4], ValueError), ("units_grid", "64", ValueError),
                               ("n_candidates", 0, ValueError), ("n_restarts", 1.5, TypeError)]:
        with pytest.raises(error, match=name):
            TreeBO(space, **{name: value})


def test_treebo_is_reproducible_from_its_seed():
    space = ArchitectureSpace("mlp-class")

    def configs(seed):
        opt = _run(TreeBO(space, seed=seed, max_depth=10, n_candidates=100, n_initial=4), depth_width, 9)
        return [o.config for o in opt.history]

    a = configs(0)
    assert a == configs(0)
    assert a[4:] != configs(1)[4:]


@pytest.mark.parametrize("domain", ["mlp-reg", "cnn"])
def test_suggestions_are_new_valid_feed_forward_networks(domain):
    space = ArchitectureSpace(domain)
    opt = TreeBO(space, seed=0, max_depth=8, n_initial=3, n_candidates=100)
    asked = []
    for _ in range(10):
        config = opt.ask()
        arch = space.architecture(config)  # raises if outside the space
        chain = chain_of(arch)
        assert chain is not None
        asked.append(chain)
        opt.tell(config, float(arch.n_layers) + 0.01 * len(asked))
    assert len(set(asked)) == len(asked)
    assert all(c.depth <= 8 for c in asked[3:])
    batch = opt.ask(3)  # pending networks are not suggested twice
    assert len({chain_of(space.architecture(c)) for c in batch}) == 3


def test_treebo_beats_random_chains_on_a_function_of_depth_and_units():
    space = ArchitectureSpace("mlp-reg")
    tree = FeedForwardTree(space, max_depth=12)
    budget, treebo, rand = 16, [], []
    for seed in range(3):
        opt = _run(TreeBO(space, seed=seed, max_depth=12, n_initial=5, n_candidates=200), depth_small_units, budget)
        treebo.append(opt.best.value)
        rand.append(min(depth_small_units(tree.to_architecture(c)) for c in _chains(tree, budget, 100 + seed)))
    assert np.mean(treebo) < 0.5 * np.mean(rand), (treebo, rand)


def test_a_tiny_comparison_run_returns_runs_of_the_right_types(tmp_path):
    from graphbo.experiments.runner import RunSpec, compare
    from graphbo.storage.runs import read_run

    spec = RunSpec(benchmark="nas-synthetic", method="treebo", seed=0, budget=5, n_initial=3,
                   method_options={"max_depth": 6, "n_candidates": 50})
    [res] = compare([spec], str(tmp_path), log=lambda s: None)
    assert res["n"] == 5 and isinstance(res["best"], float)
    data = read_run(res["path"])
    assert len(data.evals) == 5
    space = ArchitectureSpace("cnn")
    for e in data.evals:
        assert isinstance(e["value"], float) and math.isfinite(e["value"])
        assert chain_of(space.architecture(e["config"])) is not None
    assert min(e["value"] for e in data.evals) == res["best"]
