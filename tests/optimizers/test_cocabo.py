"""CoCaBO (Ru et al. 2020): mixture kernel, EXP3 agents, the ask/tell protocol and its variants."""

import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.benchmarks.mixed_synthetic import Func2C
from graphbo.optimizers import METHODS
from graphbo.optimizers.cocabo import CoCaBO, CoCaBOKernel, exp3_gamma, exp3_probabilities

FAST = dict(n_restarts=2, n_random=500)


def categorical_ordinal_log_scaled_space():
    return gb.Space({
        "c": gb.Categorical(["a", "b", "c"]),
        "o": gb.Ordinal([1, 2, 4, 8]),
        "lr": gb.Continuous(1e-5, 1e-1, log=True),
        "n": gb.Integer(1, 1000, log=True),
        "x": gb.Continuous(-3.0, 2.0),
    })


def mixed_objective(cfg):
    return ((math.log10(cfg["lr"]) + 3) ** 2 + (0.0 if cfg["c"] == "b" else 1.0)
            + 0.3 * abs(math.log(cfg["n"]) - 3) + (cfg["x"] - 0.5) ** 2 + 0.1 * cfg["o"])


def run(opt, objective, budget):
    configs, values = [], []
    for _ in range(budget):
        cfg = opt.ask()
        configs.append(cfg)
        values.append(objective(cfg))
        opt.tell(cfg, values[-1])
    return configs, values


# -- kernel -------------------------------------------------------------------------------------------------------
def random_inputs(n, n_cat=(3, 5), n_cont=2, seed=0):
    rng = np.random.default_rng(seed)
    V = torch.tensor(np.stack([rng.integers(k, size=n) for k in n_cat], 1), dtype=torch.long)
    C = torch.tensor(rng.random((n, n_cont)), dtype=torch.float64)
    V[5:10], C[5:10] = V[:5], C[:5]  # duplicates: a Gram matrix with rank deficiency
    return V, C


@pytest.mark.parametrize("mix", [0.0, 0.5, 1.0, "learn"])
@pytest.mark.parametrize("ard", [True, False])
@pytest.mark.parametrize("cont_kernel", ["matern52", "rbf"])
def test_gram_matrix_is_psd(mix, ard, cont_kernel):
    kern = CoCaBOKernel(2, 2, mix=mix, ard=ard, cont_kernel=cont_kernel)
    V, C = random_inputs(60)
    for seed in range(3):
        params = kern.random_params(np.random.default_rng(seed))
        K = kern(params, V, C)
        assert torch.allclose(K, K.T)
        assert torch.allclose(torch.diagonal(K), kern.diag(params, V, C=C))
        eig = torch.linalg.eigvalsh(K)
        assert eig.min() > -1e-10 * eig.max()


def test_kernel_matches_the_paper_formula_by_hand():
    kern = CoCaBOKernel(2, 1, mix=0.3, ard=False, cont_kernel="matern52")
    ls = 0.4
    params = torch.tensor([math.log(ls)], dtype=torch.float64)
    V = torch.tensor([[0, 1], [0, 2]])
    C = torch.tensor([[0.1], [0.5]], dtype=torch.float64)
    K = kern(params, V, C)
    kh = 0.5  # one of two categories agrees
    r = 0.4 / ls
    kx = (1 + math.sqrt(5) * r + 5 / 3 * r * r) * math.exp(-math.sqrt(5) * r)
    assert float(K[0, 1]) == pytest.approx(0.7 * (kh + kx) + 0.3 * kh * kx)
    assert float(K[0, 0]) == pytest.approx(0.7 * 2 + 0.3)
    # the reference code's normalised sum halves the additive part: k(z, z) = 1
    half = CoCaBOKernel(2, 1, mix=0.3, ard=False, normalize_sum=True)
    assert float(half(params, V, C)[0, 1]) == pytest.approx(0.35 * (kh + kx) + 0.3 * kh * kx)
    assert float(half(params, V, C)[0, 0]) == pytest.approx(1.0)


def test_overlap_kernel_ard_weights():
    kern = CoCaBOKernel(3, 0, mix=1.0, ard=True)
    params = torch.tensor([math.log(1.0), math.log(2.0), math.log(5.0)], dtype=torch.float64)
    V1 = torch.tensor([[0, 0, 0]])
    V2 = torch.tensor([[0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 0]])
    C = torch.zeros(1, 0, dtype=torch.float64)
    K = kern(params, V1, C, V2, torch.zeros(4, 0, dtype=torch.float64))
    assert K[0].tolist() == pytest.approx([1 / 8, 2 / 8, 5 / 8, 1.0])


def test_kernel_rejects_bad_options():
    with pytest.raises(ValueError, match="mix"):
        CoCaBOKernel(1, 1, mix=1.5)
    with pytest.raises(ValueError, match="mix"):
        CoCaBOKernel(1, 1, mix="auto")
    with pytest.raises(ValueError, match="cont_kernel"):
        CoCaBOKernel(1, 1, cont_kernel="linear")


# -- EXP3 ---------------------------------------------------------------------------------------------------------
def test_exp3_gamma_and_probabilities():
    assert exp3_gamma(1, 100) == 0.0
    assert exp3_gamma(5, 150) == pytest.approx(math.sqrt(5 * math.log(5) / ((math.e - 1) * 100)))
    assert exp3_gamma(17, 3) == 1.0  # capped: a tiny budget explores uniformly
    p = exp3_probabilities(np.log([1.0, 3.0]), 0.2)
    assert p.tolist() == pytest.approx([0.8 * 0.25 + 0.1, 0.8 * 0.75 + 0.1])
    assert exp3_probabilities(np.array([1e4, 0.0]), 0.0).tolist() == pytest.approx([1.0, 0.0])  # no overflow


def test_bandit_update_follows_exp3_with_the_best_value_per_category():
    space = Func2C().space
    bench = Func2C()
    opt = CoCaBO(space, seed=0, n_initial=4, budget=30, **FAST)
    run(opt, bench, 4)
    assert all(np.all(lw == 0) for lw in opt.log_weights)  # the initial design does not update the agents
    cfg = opt.ask()
    ht, probs = opt._bandit_pending[opt.space.to_index(cfg).tobytes()][1:]
    before = [lw.copy() for lw in opt.log_weights]
    value = bench(cfg)
    opt.tell(cfg, value)
    for j, name in enumerate(["h1", "h2"]):
        assert cfg[name] == ht[j]
        same = [v for c, v in zip([o.config for o in opt.history], opt.y) if c[name] == cfg[name]]
        reward = -min(same)
        expected = before[j].copy()
        expected[ht[j]] += opt.gammas[j] * reward / (probs[j][ht[j]] * opt.n_arms[j])
        assert opt.log_weights[j] == pytest.approx(expected)
    assert not opt._bandit_pending


# -- the optimizer ------------------------------------------------------------------------------------------------
def test_respects_the_space_and_never_repeats():
    space = categorical_ordinal_log_scaled_space()
    opt = CoCaBO(space, seed=1, n_initial=5, **FAST)
    configs, values = run(opt, mixed_objective, 14)
    for cfg in configs:
        space.validate(cfg)
        assert isinstance(cfg["n"], int) and 1 <= cfg["n"] <= 1000
        assert 1e-5 <= cfg["lr"] <= 1e-1 and -3.0 <= cfg["x"] <= 2.0
    assert len({tuple(space.to_index(c)) for c in configs}) == len(configs)
    assert opt.best.value == min(values)


def test_reproducible_from_the_seed():
    space = categorical_ordinal_log_scaled_space()
    a, _ = run(CoCaBO(space, seed=3, n_initial=4, **FAST), mixed_objective, 9)
    b, _ = run(CoCaBO(categorical_ordinal_log_scaled_space(), seed=3, n_initial=4, **FAST), mixed_objective, 9)
    c, _ = run(CoCaBO(categorical_ordinal_log_scaled_space(), seed=4, n_initial=4, **FAST), mixed_objective, 9)
    assert a == b
    assert a != c


def test_resume_from_state_continues_identically():
    bench = Func2C()
    full = CoCaBO(bench.space, seed=5, n_initial=4, budget=20, **FAST)
    run(full, bench, 8)
    state = full.get_state()
    rest_full, _ = run(full, bench, 3)

    resumed = CoCaBO(bench.space, seed=5, n_initial=4, budget=20, **FAST)
    for obs in full.history[:8]:
        resumed.tell(obs.config, obs.value)
    resumed.set_state(state)
    rest_resumed, _ = run(resumed, bench, 3)
    assert rest_resumed == rest_full


@pytest.mark.slow  # a quality check (an optimisation run to a budget): run with -m slow
@pytest.mark.parametrize("seed", [0, 1])
def test_improves_clearly_on_its_initial_design_on_func2c(seed):
    bench = Func2C()
    opt = CoCaBO(bench.space, seed=seed, n_initial=8, budget=30, n_restarts=2, n_random=1000)
    _, values = run(opt, bench, 30)
    assert min(values) < min(values[:8]) - 0.1
    assert min(values) < 0.05


def test_learned_mix_stays_in_the_unit_interval_and_ei_works():
    bench = Func2C()
    opt = CoCaBO(bench.space, mix="learn", acquisition="ei", seed=2, n_initial=5, **FAST)
    assert opt.mix_used is None
    run(opt, bench, 8)
    assert 0.0 < opt.mix_used < 1.0


def test_refit_interval_reuses_hyper_parameters():
    bench = Func2C()
    opt = CoCaBO(bench.space, seed=0, n_initial=4, refit_interval=3, **FAST)
    run(opt, bench, 5)  # first suggestion: fitted
    params = opt.model.params.clone()
    run(opt, bench, 2)  # suggestions 2 and 3: reused
    assert torch.equal(opt.model.params, params)
    run(opt, bench, 1)  # suggestion 4: re-fitted (3 suggestions since the last fit)
    assert not torch.equal(opt.model.params, params)


def test_purely_categorical_and_purely_continuous_spaces():
    cat = gb.Space({"a": gb.Categorical(list("pqrs")), "b": gb.Ordinal([0, 1, 2])})
    configs, _ = run(CoCaBO(cat, seed=0, n_initial=3, **FAST), lambda c: "pqrs".index(c["a"]) + c["b"], 10)
    assert len({(c["a"], c["b"]) for c in configs}) == 10
    cont = gb.Space({"x": gb.Continuous(0.0, 1.0), "y": gb.Continuous(0.0, 1.0)})
    _, values = run(CoCaBO(cont, seed=0, n_initial=4, **FAST),
                    lambda c: (c["x"] - 0.7) ** 2 + (c["y"] - 0.2) ** 2, 14)
    assert min(values) < min(values[:4])


def test_registered_variants():
    space = Func2C().space
    assert METHODS["cocabo"] is CoCaBO
    for name, mix in [("cocabo", 0.5), ("cocabo-0", 0.0), ("cocabo-1", 1.0), ("cocabo-learn", None)]:
        opt = METHODS[name](space, seed=0)
        assert isinstance(opt, CoCaBO) and opt.kernel.mix == mix
    assert METHODS["cocabo-0"] is not METHODS["cocabo-1"]
    # one name per method: cocabo is CoCaBO-0.5 (its default mixture weight)
    assert "cocabo-0.0" not in METHODS and "cocabo-1.0" not in METHODS and "cocabo-0.5" not in METHODS
    with pytest.raises(ValueError, match="fixed"):
        METHODS["cocabo-1"](space, mix=0.5)


def test_rejects_bad_options():
    space = Func2C().space
    with pytest.raises(ValueError, match="acquisition"):
        CoCaBO(space, acquisition="pi")
    with pytest.raises(ValueError, match="budget"):
        CoCaBO(space, budget=0)
    with pytest.raises(ValueError, match="mix"):
        CoCaBO(space, mix=2)
