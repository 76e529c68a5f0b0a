"""COMBO on a torch device: ``COMBO(device=...)``.

The slice sampler works on NumPy tables on the CPU whatever the device; the posterior over the
acquisition's candidates (the Gram matrices, their factors and the predictions) runs on the
device. The CUDA case runs only where a GPU is present (benchmarks/gpu_crossover.sh runs it; it passed on
an H200, docs/measurements.md "GPU").
"""

import numpy as np
import pytest
import torch

import graphbo as gb

CUDA = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="no CUDA device on this machine (torch.cuda.is_available() is False)")
FAST = dict(n_burn=20, n_samples=3, n_random=500, n_spray=5, n_starts=3)


def categorical_binaries_warpable_ordinal_space():
    # a warpable ordinal (positive, > 11 values, spanning decades) exercises the graph choice's kernels too
    return gb.Space({"a": gb.Categorical(["p", "q", "r"]), "b": gb.Binary(), "c": gb.Binary(),
                     "w": gb.Ordinal([2 ** k for k in range(13)]), "k": gb.Ordinal([0, 1, 2, 3])})


def f(c):
    shift = {"p": 0.3, "q": -0.5, "r": 0.0}[c["a"]]
    return shift + 0.4 * c["b"] - 0.2 * c["c"] + 0.1 * (np.log2(c["w"]) - 4) ** 2 + 0.05 * c["k"]


def run(budget=14, seed=3, **kw):
    opt = gb.COMBO(categorical_binaries_warpable_ordinal_space(), seed=seed, n_initial=6, **(FAST | kw))
    for _ in range(budget):
        c = opt.ask()
        opt.tell(c, f(c))
    return opt


def probe_rows(sp, n=40):
    return sp.sample_index(n, np.random.default_rng(11))


def test_explicit_cpu_gives_the_same_run_and_posterior_as_the_default():
    default, cpu = run(), run(device="cpu")
    assert [h.config for h in cpu.history] == [h.config for h in default.history]
    assert cpu.model.kernel.device.type == "cpu"
    rows = probe_rows(default.space)
    pd, pc = default.model.posterior(rows), cpu.model.posterior(rows)
    assert torch.equal(pc.mean, pd.mean) and torch.equal(pc.variance, pd.variance)
    # the run was fitted: the posterior is not the prior's constant variance
    assert float(pd.variance.min()) < float(pd.variance.max())


@CUDA
def test_cuda_matches_cpu_within_rounding_and_stays_on_the_device():
    cpu = run()
    gpu = gb.COMBO(categorical_binaries_warpable_ordinal_space(), seed=3, n_initial=6, device="cuda", **FAST)
    assert gpu.model.kernel.device.type == "cuda"
    for h in cpu.history:
        gpu.tell(h.config, h.value)
    # the same samples on the same data (the run's last fit did not see its last evaluation: both
    # are conditioned on all of it here): the same posterior up to floating-point rounding
    cpu.model.condition(cpu.X, cpu.y, samples=cpu.model.samples)
    gpu.model.set_warp(cpu.model.warp)
    gpu.model.condition(cpu.X, cpu.y, samples=cpu.model.samples)
    rows = probe_rows(cpu.space)
    pc, pg = cpu.model.posterior(rows), gpu.model.posterior(rows)
    assert pg.mean.device.type == "cuda"
    np.testing.assert_allclose(pg.mean.cpu().numpy(), pc.mean.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(pg.variance.cpu().numpy(), pc.variance.numpy(), rtol=1e-7, atol=1e-10)
    # a real run on the device, both graph choices of the warped ordinal included
    full = run(device="cuda")
    assert full.model.kernel.device.type == "cuda"
    for warp in (np.array([False]), np.array([True])):
        full.model.set_warp(warp)
        assert full.model.kernel.device.type == "cuda"
    for h in full.history:
        full.space.validate(h.config)
    assert len({tuple(sorted(h.config.items())) for h in full.history}) == len(full.history)
