"""BO-FM's fast paths compute the same model as the plain ones.

* warm-started ML-II fits (``restart_every > 1``) reach the cold fit's optimum, follow their
  schedule, fall back to the full restarts when the warm start ends worse than the default
  point, and keep their count through an optimizer's saved state;
* the blocked, no-autograd Gram matrix (:meth:`FMKernel.fm_gram_inplace`) and the table
  diagonal equal the autograd Gram matrix of Eq. (5), for every FM kernel, on complete graphs
  (constant projectors) and path graphs, across several row blocks;
* the backward pass of the FM product (division by a factor, or prefix and suffix products
  when a factor is zero) gives the numerical gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.kernels import frequency_modulated as fm
from graphbo.kernels.frequency_modulated import FMKernel
from graphbo.models.mixed_gp import MixedGP


def _categorical_binary_integer_two_continuous_space() -> gb.Space:
    return gb.Space({"a": gb.Categorical(["x", "y", "z"]), "b": gb.Binary(), "c": gb.Integer(0, 6),
                     "u": gb.Continuous(0.0, 1.0), "v": gb.Continuous(0.0, 1.0)})


def _data(space: gb.Space, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = space.sample_index(n, rng).astype(float)
    y = (np.sin(4 * X[:, 3]) + (X[:, 4] - 0.3) ** 2 + 0.3 * X[:, 0] - 0.2 * X[:, 1] + 0.05 * (X[:, 2] - 3) ** 2
         + 0.01 * rng.normal(size=n))
    return X, y


def _kernel(space: gb.Space, name: str = "modlap") -> FMKernel:
    spectra = [space.variables[j].spectrum for j in space.discrete_indices]
    return FMKernel(name, spectra, n_continuous=len(space.continuous_indices))


def test_warm_fit_reaches_the_cold_optimum_and_predicts_the_same():
    space = _categorical_binary_integer_two_continuous_space()
    X, y = _data(space, 40)
    Xq = space.sample_index(30, np.random.default_rng(5)).astype(float)
    cold = MixedGP(_kernel(space), space, n_restarts=6, restart_every=1)
    warm = MixedGP(_kernel(space), space, n_restarts=6, restart_every=10)
    for model in (cold, warm):
        model.fit(X[:-1], y[:-1], rng=np.random.default_rng(1))  # both: full restarts at the first fit
    assert cold.fit_info["warm"] is False and warm.fit_info["warm"] is False
    cold.fit(X, y, rng=np.random.default_rng(2))
    warm.fit(X, y, rng=np.random.default_rng(2))
    assert cold.fit_info["warm"] is False and cold.fit_info["n_run"] >= 6
    assert warm.fit_info["warm"] is True and warm.fit_info["n_run"] == 1
    assert warm.fit_info["objective"] == pytest.approx(cold.fit_info["objective"], abs=1e-4)
    pc, pw = cold.posterior(Xq), warm.posterior(Xq)
    assert torch.allclose(pc.mean, pw.mean, atol=1e-3)
    assert torch.allclose(pc.variance, pw.variance, atol=1e-3)


def test_restart_schedule():
    space = _categorical_binary_integer_two_continuous_space()
    X, y = _data(space, 30)
    model = MixedGP(_kernel(space), space, n_restarts=3, restart_every=3)
    warm = []
    for n in range(20, 27):
        model.fit(X[:n], y[:n], rng=np.random.default_rng(n))
        warm.append(model.fit_info["warm"])
    assert warm == [False, True, True, False, True, True, False]


def test_a_warm_start_worse_than_the_default_point_runs_the_restarts():
    space = _categorical_binary_integer_two_continuous_space()
    X, y = _data(space, 30)
    model = MixedGP(_kernel(space), space, n_restarts=4, restart_every=10, maxiter=1)
    model.fit(X, y, rng=np.random.default_rng(0))
    # a previous optimum far from the data (tiny signal, huge noise): one L-BFGS-B iteration
    # cannot get below the default point's objective, so the warm fit must not be kept
    model.params = torch.tensor([6.0] * model.kernel.size + [-6.0, 2.0, 3.0], dtype=torch.float64)
    model.warm_fits = 0
    model.fit(X, y, rng=np.random.default_rng(1))
    assert model.fit_info["warm"] is False
    assert model.fit_info["n_run"] == 4 and model.warm_fits == 0
    default = torch.cat([model.kernel.default_params(), torch.tensor([0.0, -4.0, 0.0], dtype=torch.float64)])
    assert not torch.allclose(model.params, torch.tensor([6.0] * model.kernel.size + [-6.0, 2.0, 3.0],
                                                         dtype=torch.float64))
    assert model.fit_info["objective"] < float("inf") and default.numel() == model.params.numel()


def test_bofm_state_keeps_the_warm_fit_count():
    space = _categorical_binary_integer_two_continuous_space()
    X, y = _data(space, 16)
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


def test_restart_every_is_validated_by_name():
    space = _categorical_binary_integer_two_continuous_space()
    with pytest.raises(ValueError, match="restart_every"):
        MixedGP(_kernel(space), space, restart_every=0)


@pytest.mark.parametrize("name", ["modlap", "moddif", "fnn", "general"])
def test_blocked_gram_and_diagonal_equal_eq5(name, monkeypatch):
    space = _categorical_binary_integer_two_continuous_space()
    kernel = _kernel(space, name)
    assert any(c is not None for cs in kernel._es_const for c in cs)  # complete graphs: constant projectors
    assert any(all(c is None for c in cs[1:]) and len(cs) > 2 for cs in kernel._es_const)  # the path graph
    monkeypatch.setattr(fm, "_BLOCK_ENTRIES", 7 * 23)  # several blocks of 7 rows, the last one short
    rng = np.random.default_rng(3)
    A, B = space.sample_index(45, rng).astype(float), space.sample_index(23, rng).astype(float)
    gp = MixedGP(kernel, space)
    V1, C1 = gp.split(A)
    V2, C2 = gp.split(B)
    for _ in range(3):
        params = torch.tensor(rng.normal(0.0, 1.0, kernel.size))
        reference = kernel.gram(params, kernel.pairs(V1, C1, V2=V2, C2=C2))  # autograd path, all pairs at once
        fast = kernel(params, V1, C1, V2, C2)  # no gradient needed: the blocked path
        assert torch.allclose(fast, reference, rtol=1e-9, atol=1e-15)  # path graphs: cancellation
        square = kernel.gram(params, kernel.pairs(V1, C1))
        assert torch.allclose(kernel.diag(params, V1, C=C1), torch.diagonal(square), rtol=1e-9, atol=1e-15)


def _product_inputs(zero_factor: bool) -> tuple[torch.Tensor, ...]:
    rng = np.random.default_rng(7)
    var = torch.tensor([0, 0, 1, 1, 1, 2])
    J, T, P = var.numel(), 9, 3
    a = torch.tensor(rng.uniform(1.0, 2.0, J), requires_grad=True)
    b = torch.tensor(rng.uniform(0.2, 1.0, J), requires_grad=True)
    x = torch.tensor(rng.uniform(0.0, 2.0, T), requires_grad=True)
    norms = torch.tensor(rng.uniform(0.5, 1.5, P), requires_grad=True)
    G = torch.tensor(rng.uniform(0.1, 1.0, (J, T)))
    if zero_factor:
        G[var == 1, 4] = 0.0  # variable 1's factor is exactly 0 at pair 4
    return a, b, x, norms, G, var


@pytest.mark.parametrize("zero_factor", [False, True])
@pytest.mark.parametrize("exp", [False, True])
def test_fm_product_gradient(zero_factor, exp):
    a, b, x, norms, G, var = _product_inputs(zero_factor)
    K = fm._fm_product(a, b, x, norms, G, var, exp)
    assert (K[4] == 0) == zero_factor
    assert torch.autograd.gradcheck(lambda a, b, x, n: fm._fm_product(a, b, x, n, G, var, exp),
                                    (a, b, x, norms))


def test_lockstep_close_ends_threads_left_inside_an_l_bfgs_b_call():
    """D.1's per-start L-BFGS-B threads are kept for a whole acquisition optimisation; a run interrupted
    while they wait for answers (Ctrl-C in the main thread) must not leave close() waiting for them."""
    import threading
    import time
    import types

    import torch

    from graphbo.optim import lockstep

    cont = np.array([1, 2])

    def acquisition(rows):
        return -(rows[:, 1:] - 0.3).square().sum(1)

    lock = lockstep.Lockstep(acquisition, cont, threads=True)
    rows = np.tile(np.array([0.0, 0.9, 0.1]), (4, 1))
    x, v = lock.run(rows, maxiter=50)  # a normal run first: the threads are reused afterwards
    assert np.allclose(x, 0.3, atol=1e-4) and np.all(v <= 1e-8)
    original = threading.Condition.wait_for

    def interrupted(cond, predicate, timeout=None):
        original(cond, predicate, timeout)
        raise KeyboardInterrupt  # what Ctrl-C does while the main thread waits for the requests

    lock._posted.wait_for = types.MethodType(interrupted, lock._posted)
    threads = list(lock._threads)
    with pytest.raises(KeyboardInterrupt):
        lock.run(rows, maxiter=50)
    assert all(t.is_alive() for t in threads)  # each is inside its L-BFGS-B call, waiting for an answer
    t0 = time.monotonic()
    lock.close()
    assert time.monotonic() - t0 < 5.0
    assert not any(t.is_alive() for t in threads)
    assert torch.is_tensor(acquisition(torch.zeros(1, 3)))


@pytest.mark.parametrize("order", ["consecutive", "interleaved"])
def test_split_takes_the_columns_without_aliasing_the_rows(order):
    """Consecutive discrete and continuous columns are sliced (a column gather of a large pool is slow),
    others gathered; either way the parts are the right columns, the continuous part keeps the autograd
    graph of a tensor input, and neither part is a view of the caller's rows."""
    space = _categorical_binary_integer_two_continuous_space() if order == "consecutive" else gb.Space(
        {"u": gb.Continuous(0.0, 1.0), "a": gb.Categorical(["x", "y", "z"]), "v": gb.Continuous(0.0, 1.0),
         "b": gb.Binary()})
    model = MixedGP(_kernel(space), space)
    X = torch.tensor(space.sample_index(6, np.random.default_rng(1)).astype(float), requires_grad=True)
    V, C = model.split(X)
    disc, cont = space.discrete_indices, space.continuous_indices
    assert torch.equal(V, X.detach()[:, disc].long()) and V.dtype == torch.long
    assert torch.equal(C.detach(), X.detach()[:, cont])
    C.sum().backward()
    assert torch.equal(X.grad[:, cont], torch.ones(6, cont.size, dtype=X.dtype))
    assert torch.all(X.grad[:, disc] == 0)
    before = X.detach().clone()
    with torch.no_grad():
        C += 1.0
        V += 1
    assert torch.equal(X.detach(), before)


def test_projector_grid_cache_is_keyed_by_the_index_values():
    """The last small grid is kept (the acquisition optimiser asks for the same rows many times); a change of
    any index value, in either set, gives the grid of the new values, never the kept one."""
    space = _categorical_binary_integer_two_continuous_space()
    kernel = _kernel(space)
    rng = np.random.default_rng(3)
    V1 = torch.as_tensor(space.sample_index(5, rng)[:, space.discrete_indices].astype(np.int64))
    V2 = torch.as_tensor(space.sample_index(7, rng)[:, space.discrete_indices].astype(np.int64))
    first = kernel._grid_pairs(V1, V2)
    assert kernel._grid_pairs(V1.clone(), V2.clone())[2] is first[2]  # equal values: the kept grid
    for changed in (0, 1):
        W1, W2 = V1.clone(), V2.clone()
        (W1 if changed == 0 else W2)[2, 0] = ((W1 if changed == 0 else W2)[2, 0] + 1) % 3
        i, j, G = kernel._grid_pairs(W1, W2)
        assert torch.equal(G, kernel._projector_grid(W1, W2))
        assert not torch.equal(G, first[2])
        assert torch.equal(i, torch.arange(5).repeat_interleave(7)) and torch.equal(j, torch.arange(7).repeat(5))
