"""The one NAS training loop (graphbo.nas.training.training.train_module) and the benchmarks built on it.

Each benchmark's evaluation is compared with a reference loop written out here
(plain PyTorch, the benchmark's own network and data): same seed, same value,
bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("sklearn")
torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from graphbo.benchmarks import nas_binary, nas_sgd  # noqa: E402
from graphbo.nas.domain.architecture import Architecture  # noqa: E402
from graphbo.nas.training.torch_model import build_module  # noqa: E402
from graphbo.threads import limit_threads  # noqa: E402
from graphbo.nas.training.training import (  # noqa: E402
    _batches,
    load_diabetes_data,
    patience_rule,
    train,
    train_module,
    window_rule,
)


# -- stopping rules and batches --------------------------------------------------------------------
def test_patience_rule_counts_from_the_first_best():
    stop = patience_rule(2)
    assert not stop([0.5])
    assert not stop([0.5, 0.4, 0.45])
    assert stop([0.5, 0.4, 0.45, 0.41])
    assert stop([0.3, 0.3, 0.3])  # a tie does not renew the best
    up = patience_rule(1, higher_is_better=True)
    assert not up([0.1, 0.2]) and up([0.1, 0.2, 0.2])


def test_window_rule_needs_strictly_worse_values():
    stop = window_rule(2, higher_is_better=True)
    assert not stop([0.9, 0.8])  # not enough epochs yet
    assert stop([0.9, 0.8, 0.7])
    assert not stop([0.9, 0.9, 0.8])  # a tie is not worse
    assert not stop([0.5, 0.9, 0.8, 0.95])
    low = window_rule(1)
    assert low([0.2, 0.3]) and not low([0.2, 0.2]) and not low([0.3, 0.2])


@pytest.mark.parametrize("n, size, policy, want", [
    (10, 4, "fold", [(0, 4), (4, 8), (8, 10)]),
    (9, 4, "fold", [(0, 4), (4, 9)]),
    (9, 4, "skip", [(0, 4), (4, 8)]),
    (9, 4, "keep", [(0, 4), (4, 8), (8, 9)]),
    (1, 4, "fold", [(0, 1)]),
    (1, 4, "skip", []),
])
def test_last_batch_policies(n, size, policy, want):
    assert _batches(n, size, policy) == want


# -- the loop itself ---------------------------------------------------------------------------------
class _Blowup(nn.Module):
    """A linear model whose outputs overflow after ``ok_steps`` forward passes in training mode."""

    def __init__(self, ok_steps):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.calls, self.ok_steps = 0, ok_steps

    def forward(self, x):
        if self.training:
            self.calls += 1
            if self.calls > self.ok_steps:
                return self.lin(x) * math.inf
        return self.lin(x)


def test_loop_restores_rng_and_threads_and_stops_on_a_nonfinite_loss():
    x = torch.randn(20, 3, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long()
    model = _Blowup(ok_steps=3)
    state, threads = torch.get_rng_state(), torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        run = train_module(lambda: model, x, y, validate=lambda m: 0.5, loss_fn=nn.CrossEntropyLoss(), epochs=5,
                           batch_size=4, seed=1, stop_on_nonfinite_loss=True, n_threads=1)
        assert torch.get_num_threads() == 2  # the caller's setting is back
    finally:
        torch.set_num_threads(threads)
    assert run.stopped == "diverged" and run.history == [] and model.calls == 4
    assert torch.equal(torch.get_rng_state(), state)
    # without the check the loop trains on; every epoch is validated
    run = train_module(lambda: _Blowup(ok_steps=3), x, y, validate=lambda m: 0.5, loss_fn=nn.CrossEntropyLoss(),
                       epochs=3, batch_size=4, seed=1)
    assert run.stopped == "epochs" and run.history == [0.5] * 3
    with pytest.raises(ValueError, match="optimizer"):
        train_module(lambda: model, x, y, validate=lambda m: 0.0, loss_fn=nn.CrossEntropyLoss(), epochs=1,
                     batch_size=4, seed=0, optimizer="rmsprop")


# -- each caller against a reference loop written out here ---------------------------------------------
def test_train_equals_a_reference_loop():
    data = load_diabetes_data(seed=2)
    arch = Architecture(kind="mlp", labels=["ip", "relu", "tanh", "linear", "op"], units=[None, 16, 8, None, None],
                        edges=[(0, 1), (1, 2), (2, 3), (3, 4)])
    got = train(arch, data, epochs=3, batch_size=50, lr=0.01, seed=7, optimizer="sgd", weight_decay=1e-3)

    with limit_threads(1), torch.random.fork_rng(devices=[]):  # the loop trains on one thread; so does the reference
        torch.manual_seed(7)
        model = build_module(arch, data.input_shape, n_outputs=data.n_outputs)
        gen = torch.Generator().manual_seed(8)
        x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)[:, None]
        xv, yv = torch.from_numpy(data.x_valid), torch.from_numpy(data.y_valid)[:, None]
        opt = torch.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-3)
        history = []
        for _ in range(3):
            model.train()
            order = torch.randperm(x.shape[0], generator=gen)
            for s in range(0, x.shape[0], 50):  # 354 samples: no last batch of one
                idx = order[s:s + 50]
                opt.zero_grad()
                nn.MSELoss()(model(x[idx]), y[idx]).backward()
                opt.step()
            model.eval()
            with torch.no_grad():
                history.append(float(((model(xv) - yv).double() ** 2).sum()) / yv.numel())
    assert got.history == history and got.error == min(history)


def test_nas_binary_equals_a_reference_loop():
    bench = nas_binary.NASBinary(epochs=2, seed=1)
    row = bench.initial_index()[4]
    ops, adj = bench.cell(row)
    arch_code, repeat = 12345, 0
    got = bench._train_once(ops, adj, arch_code, repeat)

    x, y, xv, yv = bench._tensors()
    seed = int(np.random.SeedSequence([1, arch_code, repeat]).generate_state(1, np.uint64)[0] >> 1)
    with limit_threads(1), torch.random.fork_rng(devices=[]):  # the loop trains on one thread; so does the reference
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        model = nas_binary._Network(ops, adj, bench.shape, bench.n_ch_base, bench.n_cells)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=5e-5)
        accs = []
        for _ in range(2):
            model.train()
            order = torch.randperm(x.shape[0], generator=gen)
            for s in range(0, x.shape[0], 100):
                idx = order[s:s + 100]
                opt.zero_grad()
                nn.CrossEntropyLoss()(model(x[idx]), y[idx]).backward()
                opt.step()
            model.eval()
            with torch.no_grad():
                correct = sum(int((model(xv[s:s + 1000]).argmax(1) == yv[s:s + 1000]).sum())
                              for s in range(0, xv.shape[0], 1000))
            accs.append(correct / xv.shape[0])
    assert got == max(accs)


def test_nas_sgd_equals_a_reference_loop():
    bench = nas_sgd.NASSGD(epochs=3, seed=2, augment=True)
    cfg = {"lr": 0.03, "momentum": 0.9, "weight_decay": 1e-4, "lr_gamma": 0.3,
           "milestone1_ratio": 0.3, "milestone2_ratio": 0.5,
           "s1_op1": "conv3x3", "s1_op2": "id", "s2_op1": "id", "s2_op2": "id",
           "s3_op1": "conv1x1", "s3_op2": "maxpool3x3", "s4_op1": "sepconv3x3", "s4_op2": "id",
           "s2_inputs": "(-1,0)", "s3_inputs": "(-1,1)", "s4_inputs": "(0,3)", "output": 3}
    block = bench.block(cfg)
    hp = {k: float(cfg[k]) for k in nas_sgd.HYPERPARAMETERS}
    got, diverged = bench._train_once(block, hp, 2, 1)  # 2 of the 3 epochs of the schedule

    x, y, xv, yv = bench._tensors()
    seed = int(np.random.SeedSequence([2, 1]).generate_state(1, np.uint64)[0] >> 1)
    with limit_threads(1), torch.random.fork_rng(devices=[]):  # the loop trains on one thread; so does the reference
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        model = nas_sgd._Network(block, bench.shape, bench.pool_padding)
        opt = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
        for epoch in range(2):
            for group in opt.param_groups:
                group["lr"] = nas_sgd.scheduled_lr(epoch, 0.03, gamma=0.3, ratio1=0.3, ratio2=0.5, total_epochs=3)
            model.train()
            order = torch.randperm(x.shape[0], generator=gen)
            for s in range(0, x.shape[0], 32):  # 899 samples: no last batch of one
                idx = order[s:s + 32]
                xb = nas_sgd._augment(x[idx], gen, 4, bench._fill)
                opt.zero_grad()
                nn.CrossEntropyLoss()(model(xb), y[idx]).backward()
                opt.step()
        model.eval()
        with torch.no_grad():
            correct = sum(int((model(xv[s:s + 1000]).argmax(1) == yv[s:s + 1000]).sum())
                          for s in range(0, xv.shape[0], 1000))
    assert not diverged and got == 1.0 - correct / xv.shape[0]
