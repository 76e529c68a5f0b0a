"""BO-FM on a torch device: ``device=`` on BOFM and MixedGP.

The CUDA comparison runs only where a GPU is present (it passed on an H200 through
benchmarks/gpu_crossover.sh, docs/measurements.md "GPU"); the CPU checks show that an
explicit device takes the same path as the default and that the state saved on one device
restores on another.
"""

import json

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.models.mixed_gp import MixedGP
from graphbo.optimizers import METHODS
from graphbo.study import Study
from support import fm_kernel

FAST = dict(n_restarts=3, n_random=2000, n_spray=10, n_starts=8)
CUDA = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="no CUDA device on this machine (torch.cuda.is_available() is False)")


def categorical_binary_ordinal_two_continuous_space():
    return gb.Space({"a": gb.Categorical(["p", "q", "r"]), "x": gb.Continuous(-1, 1), "b": gb.Binary(),
                     "k": gb.Ordinal([1, 2, 4, 8]), "y": gb.Continuous(0, 2)})


def f(c):
    shift = {"p": 0.3, "q": -0.5, "r": 0.0}[c["a"]]
    return (c["x"] - shift) ** 2 + (c["y"] - 1.2) ** 2 + (0.5 if c["b"] else 0.0) + 0.05 * c["k"]


def run(budget=15, seed=4, **kw):
    opt = gb.BOFM(categorical_binary_ordinal_two_continuous_space(), seed=seed, n_initial=5, **(FAST | kw))
    for _ in range(budget):
        c = opt.ask()
        opt.tell(c, f(c))
    return opt


def probe_rows(sp, n=30):
    return sp.sample_index(n, np.random.default_rng(123)).astype(float)


def test_explicit_cpu_gives_the_same_run_and_posterior_as_the_default():
    default, cpu = run(), run(device="cpu")
    assert [h.config for h in cpu.history] == [h.config for h in default.history]
    assert torch.equal(cpu.model.params, default.model.params)
    rows = probe_rows(default.space)
    pd, pc = default.model.posterior(rows), cpu.model.posterior(rows)
    assert torch.equal(pc.mean, pd.mean) and torch.equal(pc.variance, pd.variance)
    # the run learned something: the posterior is not the prior (a model that was never fitted would be)
    assert default.model.fit_info["n_run"] >= 1 and float(pd.variance.min()) < float(pd.variance.max())


@pytest.mark.parametrize("method", ["bofm", "bofm-tr", "bofm-modlap", "bofm-prodlap"])
def test_invalid_device_is_refused_naming_the_argument(method):
    with pytest.raises(ValueError, match=r"^device must be"):
        METHODS[method](categorical_binary_ordinal_two_continuous_space(), device="tpu")
    with pytest.raises(TypeError, match=r"^device must be"):
        METHODS[method](categorical_binary_ordinal_two_continuous_space(), device=0)
    # the variants pass the option on: an explicit CPU device reaches the model and the kernel
    opt = METHODS[method](categorical_binary_ordinal_two_continuous_space(), device="cpu")
    assert opt.model.device.type == "cpu" and opt.kernel.device.type == "cpu"


def test_unavailable_cuda_is_refused_naming_the_argument():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is available here")
    with pytest.raises(ValueError, match=r"^device must be a device available.*is_available\(\) is False"):
        gb.BOFM(categorical_binary_ordinal_two_continuous_space(), device="cuda")
    with pytest.raises(ValueError, match=r"^device must be"):
        MixedGP(fm_kernel(categorical_binary_ordinal_two_continuous_space()),
                categorical_binary_ordinal_two_continuous_space(), device="cuda")


def test_model_tensors_live_on_the_requested_device():
    opt = run(budget=8, device="cpu")
    m, k = opt.model, opt.kernel
    # the conditioned model's tensors (the standardised targets have no public name) and the kernel's tables
    tensors = [m.params, m.cholesky, m.alpha, *m.conditioned_inputs, m._ys, m.kernel_params, m.signal_variance,
               m.constant_mean, *k.lam, *k.U, *k._es_tables, k._es_var, k._es_lam, k._spec_lam, k.default_params(),
               k.random_params(np.random.default_rng(0))]
    assert all(t.device.type == "cpu" for t in tensors)
    post = m.posterior(probe_rows(opt.space, 5))
    assert post.mean.device.type == "cpu" and post.variance.device.type == "cpu"


def test_state_is_plain_floats_and_restores_on_another_device():
    """A run saved with one device (here "cpu") resumes with another (None): the state goes through
    JSON, and the resumed run makes the same next suggestions as the uninterrupted one."""
    sp = categorical_binary_ordinal_two_continuous_space()
    a = gb.BOFM(sp, seed=7, n_initial=5, device="cpu", **FAST)
    for _ in range(9):
        c = a.ask()
        a.tell(c, f(c))
    state = json.loads(json.dumps(a.get_state()))  # fails on a tensor left in the state
    assert all(isinstance(v, float) for v in state["method"]["params"])
    b = gb.BOFM(categorical_binary_ordinal_two_continuous_space(), seed=7, n_initial=5, **FAST)
    for h in a.history:
        b.tell(h.config, h.value)
    b.set_state(state)
    assert b.model.params.device == b.model.device and torch.equal(b.model.params, a.model.params)
    for _ in range(3):
        ca, cb = a.ask(), b.ask()
        assert ca == cb
        a.tell(ca, f(ca))
        b.tell(cb, f(cb))


def test_study_resumes_on_another_device_through_runtime_options(tmp_path):
    """``device`` in ``runtime_options`` is not stored, so a study started with it resumes without it."""
    path = str(tmp_path / "bofm.db")
    with Study(categorical_binary_ordinal_two_continuous_space(), "bofm", storage=path, seed=2,
               runtime_options={"device": "cpu"}, n_initial=4, **FAST) as study:
        for _ in range(6):
            t = study.ask()
            study.tell(t, f(t.config))
        assert study.optimizer.model.device.type == "cpu"
    with Study(categorical_binary_ordinal_two_continuous_space(), "bofm", storage=path, seed=2, n_initial=4,
               **FAST) as study:
        assert study.n_finished == 6
        for _ in range(2):
            t = study.ask()
            study.tell(t, f(t.config))
        assert study.n_finished == 8


@CUDA
def test_cuda_matches_cpu_within_rounding():
    cpu = run(budget=12)
    gpu = gb.BOFM(categorical_binary_ordinal_two_continuous_space(), seed=4, n_initial=5, device="cuda", **FAST)
    assert gpu.model.device.type == "cuda" and gpu.kernel._es_var.device.type == "cuda"
    # the same data and hyper-parameters: the same posterior up to floating-point rounding
    for h in cpu.history:
        gpu.tell(h.config, h.value)
    # the run's last fit did not see its last evaluation: both are conditioned on all of it here
    cpu.model.condition(cpu.X, cpu.y)
    gpu.model.params = cpu.model.params.to("cuda")
    gpu.model.condition(cpu.X, cpu.y)
    assert gpu.model.cholesky.device.type == "cuda"
    rows = probe_rows(cpu.space)
    pc, pg = cpu.model.posterior(rows), gpu.model.posterior(rows)
    assert pg.mean.device.type == "cuda"
    np.testing.assert_allclose(pg.mean.cpu().numpy(), pc.mean.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(pg.variance.cpu().numpy(), pc.variance.numpy(), rtol=1e-7, atol=1e-10)
    # ML-II from the same starting points reaches the same optimum on both devices
    sp = categorical_binary_ordinal_two_continuous_space()
    fits = [MixedGP(fm_kernel(sp, device=dev), sp, n_restarts=3, device=dev).fit(cpu.X, cpu.y, rng=np.random.default_rng(0))
            for dev in ("cpu", "cuda")]
    assert fits[1].fit_info["objective"] == pytest.approx(fits[0].fit_info["objective"], rel=1e-4, abs=1e-4)
    # a real run on the device: model tensors stay there and the suggestions are valid
    full = run(budget=12, device="cuda")
    assert full.model.params.device.type == "cuda" and full.model.cholesky.device.type == "cuda"
    for h in full.history:
        full.space.validate(h.config)
    with pytest.raises(ValueError, match=r"^device is 'cuda'"):
        MixedGP(fm_kernel(sp), sp, device="cuda")
