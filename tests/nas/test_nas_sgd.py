"""Joint NASNet-block + SGD hyper-parameter benchmark (BO-FM supp. D.2).

The space, the input-pair graphs and the learning-rate schedule are checked
against hand-worked values from the paper; FLOPs against an independent count
of the operations the built network actually runs; training on digits with a
couple of epochs; the idx reader on small files written here.
"""

from __future__ import annotations

import gzip
import math
import struct

import numpy as np
import pytest

pytest.importorskip("sklearn")
torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from graphbo.benchmarks import REGISTRY, load_benchmark  # noqa: E402
from graphbo.benchmarks.nas_sgd import (  # noqa: E402
    NASSGD, OPERATIONS, Block, _Network, load_fashion_mnist, read_idx, scheduled_lr,
)
from graphbo.spaces import Categorical, Continuous, GraphVariable, Ordinal  # noqa: E402

OPS8 = {"id", "conv1x1", "conv3x3", "conv5x5", "sepconv3x3", "sepconv5x5", "maxpool3x3", "maxpool5x5"}


@pytest.fixture(scope="module")
def bench():
    return NASSGD(epochs=2)


def light_config(**overrides):
    """A cheap block (ids, pools, 1x1 convs; S_1 and S_2 unused) with reasonable SGD settings."""
    cfg = {
        "lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4, "lr_gamma": 0.5,
        "milestone1_ratio": 1.0, "milestone2_ratio": 1.0,
        "s1_op1": "id", "s1_op2": "id", "s2_op1": "id", "s2_op2": "id",
        "s3_op1": "conv1x1", "s3_op2": "maxpool3x3", "s4_op1": "conv3x3", "s4_op2": "id",
        "s2_inputs": "(-1,0)", "s3_inputs": "(-1,0)", "s4_inputs": "(0,3)", "output": 3,
    }
    cfg.update(overrides)
    return cfg


# -- space -----------------------------------------------------------------------------------------
def test_space_variables_types_and_ranges(bench):
    space = bench.space
    assert len(space) == 18
    cont = {n: space[n] for n in space.names if isinstance(space[n], Continuous)}
    assert set(cont) == {"lr", "momentum", "weight_decay", "lr_gamma", "milestone1_ratio", "milestone2_ratio"}
    expected = {"lr": (1e-3, 0.1, True), "momentum": (0.8, 1.0, False), "weight_decay": (1e-6, 1e-2, True),
                "lr_gamma": (0.1, 0.9, False), "milestone1_ratio": (0.0, 1.0, False),
                "milestone2_ratio": (0.0, 1.0, False)}
    for name, (lo, hi, log) in expected.items():
        v = cont[name]
        assert (v.low, v.high, v.log) == pytest.approx((lo, hi, log)) and v.log is log, name
    ops = [n for n in space.names if n.endswith(("_op1", "_op2"))]
    assert ops == [f"s{k}_op{m}" for k in range(1, 5) for m in (1, 2)]
    for n in ops:
        assert type(space[n]) is Categorical and set(space[n].values) == OPS8
        np.testing.assert_array_equal(space[n].adjacency, np.ones((8, 8)) - np.eye(8))
    for k, nv in ((2, 3), (3, 6), (4, 9)):
        var = space[f"s{k}_inputs"]
        assert isinstance(var, GraphVariable) and var.n_values == nv
    assert "(-1,0)" not in space["s4_inputs"].values and "(-1,0)" in space["s3_inputs"].values
    assert isinstance(space["output"], Ordinal) and list(space["output"].values) == [1, 2, 3]
    np.testing.assert_array_equal(space["output"].adjacency, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    # the paper's count of discrete choices (Sec. 5.3)
    assert math.prod(int(v.n_values) for v in space.variables if v.n_values > 0) == 8_153_726_976
    assert len(space.discrete_indices) == 12 and len(space.continuous_indices) == 6


def test_input_pair_graph_of_s3_by_hand(bench):
    var = bench.space["s3_inputs"]
    assert list(var.values) == ["(-1,0)", "(-1,1)", "(-1,2)", "(0,1)", "(0,2)", "(1,2)"]
    # share one state and the other two differ by one (supp. D.2)
    expected = {("(-1,0)", "(-1,1)"), ("(-1,1)", "(-1,2)"), ("(-1,1)", "(0,1)"),
                ("(-1,2)", "(0,2)"), ("(0,1)", "(0,2)"), ("(0,2)", "(1,2)")}
    got = {(var.values[i], var.values[j]) for i, j in zip(*np.nonzero(np.triu(var.adjacency)))}
    assert got == expected
    s2 = bench.space["s2_inputs"]
    np.testing.assert_array_equal(s2.adjacency, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])  # (-1,0)-(-1,1)-(0,1)
    s4 = bench.space["s4_inputs"]
    assert s4.adjacency.sum() == 2 * 11
    i, j = list(s4.values).index("(0,3)"), list(s4.values).index("(1,3)")
    assert s4.adjacency[i, j] == 1


def test_registry_and_defaults():
    info = REGISTRY["nas-sgd"]
    assert info.needs == ()
    b = load_benchmark("nas-sgd")
    assert isinstance(b, NASSGD) and b.name == "nas-sgd"
    assert b.default_budget == 200 and b.default_n_initial == 10
    assert b.epochs == 8 and b.n_repeats == 1 and not b.augment
    p = NASSGD(paper_settings=True)
    assert p.epochs == 25 and p.n_repeats == 4


def test_block_decoding_and_live_states():
    blk = Block.from_config(light_config())
    assert blk.inputs == ((-1, 0), (-1, 0), (-1, 0), (0, 3)) and blk.output == 3
    assert blk.live_states() == [3, 4]  # S_1 and S_2 feed nothing
    blk = Block.from_config(light_config(s4_inputs="(1,2)", output=1))
    assert blk.live_states() == [1, 2, 4]
    blk = Block.from_config(light_config(s3_inputs="(1,2)", s2_inputs="(0,1)"))
    assert blk.live_states() == [1, 2, 3, 4]


# -- schedule --------------------------------------------------------------------------------------
def test_learning_rate_schedule_table5():
    # E = 25, r1 = 0.2, r2 = 0.5: reductions after epochs 5 and 25 * (0.2 + 0.8 * 0.5) = 15
    rates = [scheduled_lr(e, 0.1, gamma=0.5, ratio1=0.2, ratio2=0.5, total_epochs=25) for e in range(25)]
    assert rates == [0.1] * 5 + [0.05] * 10 + [0.025] * 10
    assert [scheduled_lr(e, 1.0, gamma=0.3, ratio1=0.0, ratio2=0.0,
                         total_epochs=4) for e in range(4)] == pytest.approx([0.09] * 4)
    assert [scheduled_lr(e, 1.0, gamma=0.3, ratio1=1.0, ratio2=0.7, total_epochs=4) for e in range(4)] == [1.0] * 4
    # E = 10, r1 = 0.35 (3.5 epochs), r2 = 1: epochs 1..3 at l, the rest at l gamma
    assert [scheduled_lr(e, 1.0, gamma=0.5, ratio1=0.35, ratio2=1.0,
                         total_epochs=10) for e in range(10)] == [1.0] * 3 + [0.5] * 7


def test_schedule_equals_multistep_lr_with_truncated_milestones():
    rng = np.random.default_rng(0)
    param = [torch.nn.Parameter(torch.zeros(1))]
    for _ in range(50):
        epochs = int(rng.integers(1, 30))
        r1, r2, gamma = rng.uniform(), rng.uniform(), rng.uniform(0.1, 0.9)
        if rng.uniform() < 0.2:
            r1 = 0.0
        opt = torch.optim.SGD(param, lr=0.1)
        milestones = [int(epochs * r1), int(epochs * (r1 + (1 - r1) * r2))]
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones, gamma=gamma)
        for e in range(epochs):
            assert scheduled_lr(e, 0.1, gamma=gamma, ratio1=r1, ratio2=r2,
                                total_epochs=epochs) == pytest.approx(opt.param_groups[0]["lr"]), \
                (epochs, r1, r2, e)
            opt.step()
            sched.step()


# -- FLOPs -----------------------------------------------------------------------------------------
class _CountFlops(TorchDispatchMode):
    """pthflops' rules, applied to the aten operations that actually run."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = str(func)
        first = out[0] if isinstance(out, (tuple, list)) else out
        if name.startswith("aten.convolution"):
            w, bias = args[1], args[2]
            self.total += (w.shape[1] * w.shape[2] * w.shape[3] + (bias is not None)) * first.numel()
        elif name.startswith("aten.add.Tensor"):
            self.total += first.numel()
        elif "max_pool2d" in name:
            k = args[1]
            self.total += (k[0] * k[1] - 1) * first.numel()
        elif "batch_norm" in name or name.startswith("aten.relu"):
            self.total += 2 * args[0].numel()
        elif name.startswith("aten.addmm"):
            self.total += args[1].shape[1] * first.numel()
        return out


def counted_flops(block, shape, padding):
    net = _Network(block, shape, padding).eval()
    counter = _CountFlops()
    with torch.no_grad(), counter:
        net(torch.zeros((1,) + tuple(shape)))
    return counter.total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flops_match_an_independent_count_of_the_built_network(bench, seed):
    for cfg in bench.space.sample(3, seed=seed):
        blk = bench.block(cfg)
        assert bench.flops(cfg) == counted_flops(blk, (1, 8, 8), 0)
    blk = bench.block(bench.space.sample(1, seed=seed + 10)[0])
    from graphbo.benchmarks.nas_sgd import network_flops
    assert network_flops(blk, shape=(1, 28, 28), pool_padding=1) == counted_flops(blk, (1, 28, 28), 1)


def test_flops_grow_with_heavier_operations_and_max_bounds_all(bench):
    order = ["id", "conv1x1", "sepconv3x3", "conv3x3", "conv5x5"]
    flops = [bench.flops(light_config(s4_op2=op)) for op in order]
    assert all(a < b for a, b in zip(flops, flops[1:])), flops
    assert bench.flops(light_config(s4_op2="maxpool3x3")) < bench.flops(light_config(s4_op2="maxpool5x5"))
    assert bench.flops(light_config(s4_op2="sepconv5x5")) < bench.flops(light_config(s4_op2="conv5x5"))
    # an operation of a dead state costs nothing
    assert bench.flops(light_config(s1_op1="conv5x5")) == bench.flops(light_config())
    heaviest = light_config(**{f"s{k}_op{m}": "conv5x5" for k in range(1, 5) for m in (1, 2)},
                            s2_inputs="(0,1)", s3_inputs="(1,2)", s4_inputs="(2,3)")
    assert bench.flops(heaviest) == bench.max_flops
    assert bench.flops_penalty(heaviest) == pytest.approx(0.02)
    samples = bench.space.sample(300, seed=7)
    ratios = np.array([bench.flops(c) / bench.max_flops for c in samples])
    assert np.all(ratios <= 1.0) and np.all(ratios > 0.0) and ratios.max() < 1.0


# -- training --------------------------------------------------------------------------------------
def test_training_is_reproducible_bounded_and_restores_threads():
    threads = torch.get_num_threads()
    cfg = light_config()
    r1 = NASSGD(epochs=2, seed=3).evaluate(cfg)
    assert torch.get_num_threads() == threads
    r2 = NASSGD(epochs=2, seed=3).evaluate(cfg)
    assert r1["value"] == r2["value"] and r1["errors"] == r2["errors"]
    assert 0.0 <= r1["value"] <= 1.02
    assert r1["value"] == pytest.approx(r1["error"] + 0.02 * r1["flops_ratio"])
    assert r1["diverged"] == [False] and r1["epochs"] == 2


def test_sensible_config_beats_degenerate_one():
    # a chain of 3x3 convolutions, S_k = id(S_k-2) + conv3x3(S_k-1); a decaying learning rate
    chain = dict(s1_op1="conv3x3", s1_op2="id", s2_inputs="(0,1)", s2_op1="conv3x3", s2_op2="id",
                 s3_inputs="(1,2)", s3_op1="id", s3_op2="conv3x3", s4_inputs="(2,3)", s4_op1="id", s4_op2="conv3x3")
    sensible = light_config(lr=0.02, momentum=0.9, lr_gamma=0.3, milestone1_ratio=0.5, milestone2_ratio=0.5, **chain)
    degenerate = light_config(lr=1e-3, momentum=0.8, **chain)
    b = NASSGD(epochs=3, seed=0)
    good = b.evaluate(sensible)
    bad = b.evaluate(degenerate, epochs=1)
    assert good["flops"] == bad["flops"]
    assert good["error"] < 0.35, good
    assert bad["value"] > good["value"] + 0.3, (good, bad)
    # the call interface returns the value (cached, no second training)
    assert b(sensible) == good["value"]


def test_budget_truncates_the_full_schedule():
    # With a constant learning rate (r1 = 1), one epoch of a 3-epoch run is a 1-epoch run:
    # same initialisation and batch order, same schedule.
    cfg = light_config(lr=0.02)
    short = NASSGD(epochs=3, seed=1).evaluate(cfg, epochs=1)
    assert short["epochs"] == 1
    assert short["value"] == NASSGD(epochs=1, seed=1)(cfg)
    with pytest.raises(ValueError, match="epochs"):
        NASSGD(epochs=2).evaluate(cfg, epochs=3)


def test_bad_input_is_rejected(bench):
    with pytest.raises(ValueError):
        bench(light_config(s4_inputs="(-1,0)"))
    with pytest.raises(ValueError):
        bench(light_config(lr=0.5))
    with pytest.raises(ValueError):
        NASSGD(epochs=0)


# -- FashionMNIST files ----------------------------------------------------------------------------
def write_idx(path, array: np.ndarray, compress: bool = False):
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(data)


def test_idx_reader_on_tiny_files(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    labels = np.array([3, 0, 9, 1, 3], dtype=np.uint8)
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", images, compress=True)
    write_idx(tmp_path / "train-labels-idx1-ubyte", labels)
    np.testing.assert_array_equal(read_idx(tmp_path / "train-images-idx3-ubyte.gz"), images)
    got = read_idx(tmp_path / "train-labels-idx1-ubyte")
    assert got.shape == (5,) and got.tolist() == [3, 0, 9, 1, 3]
    x, y = load_fashion_mnist(tmp_path)
    assert x.shape == (5, 1, 28, 28) and x.dtype == np.float32
    assert x[2, 0, 17, 4] == pytest.approx(images[2, 17, 4] / 255.0)
    assert y.tolist() == [3, 0, 9, 1, 3]
    # a big-endian int32 idx file
    ints = np.array([[1, -2], [70000, 4]], dtype=">i4")
    raw = bytes([0, 0, 0x0C, 2]) + struct.pack(">II", 2, 2) + ints.tobytes()
    (tmp_path / "ints.idx").write_bytes(raw)
    assert read_idx(tmp_path / "ints.idx").tolist() == [[1, -2], [70000, 4]]
    # broken files
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01" + struct.pack(">I", 3) + b"abc")
    with pytest.raises(ValueError, match="magic"):
        read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">I", 4) + b"abc")
    with pytest.raises(ValueError, match="shape"):
        read_idx(tmp_path / "short")
    with pytest.raises(FileNotFoundError):
        load_fashion_mnist(tmp_path / "nowhere")


def test_training_on_tiny_fashion_mnist_files(tmp_path):
    rng = np.random.default_rng(1)
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    labels = np.repeat(np.arange(10), 4).astype(np.uint8)
    images = rng.integers(0, 256, size=(40, 28, 28), dtype=np.uint8)
    write_idx(raw / "train-images-idx3-ubyte.gz", images, compress=True)
    write_idx(raw / "train-labels-idx1-ubyte.gz", labels, compress=True)
    b = NASSGD(data_path=tmp_path, epochs=1, n_repeats=1)
    assert b.data == "fashion-mnist" and b.augment and b.shape == (1, 28, 28)
    r = b.evaluate(light_config())
    assert 0.0 <= r["error"] <= 1.0 and r["error"] * 20 == pytest.approx(round(r["error"] * 20))
    assert r["value"] == NASSGD(data_path=tmp_path, epochs=1, n_repeats=1)(light_config())



def test_an_evaluation_reports_its_curve_and_a_study_prunes_it_mid_training():
    import graphbo as gb

    from graphbo.pruners import Pruner

    class PruneAtSecondEpoch(Pruner):
        """Prunes every trial once it has reported two epochs (the first trial included)."""

        def prune(self, curve, complete, pruned, step):
            return step >= 2

    config = light_config()
    value = NASSGD(epochs=4).evaluate(config)["value"]  # outside a study: reports go nowhere, nothing is pruned
    # validating after every epoch changes nothing of the training (validation draws no random number)
    bench = NASSGD(epochs=4)
    hp = {name: float(config[name]) for name in ("lr", "momentum", "weight_decay", "lr_gamma", "milestone1_ratio",
                                                 "milestone2_ratio")}
    errors = []
    plain = bench._train_once(bench.block(config), hp, 4, 0)
    watched = bench._train_once(bench.block(config), hp, 4, 0, lambda error, epoch: errors.append(error) is not None)
    assert plain == watched and len(errors) == 4 and errors[-1] == plain[0]
    # the first training's curve, in the value's terms; the last epoch's is the value (one repeat on digits)
    result = gb.minimize(lambda c: NASSGD(epochs=4).evaluate(c)["value"], NASSGD().space, method="rs", budget=1,
                         seed=0, initial_configs=[config], n_initial=1)
    (done,) = result.trials
    curve = {int(k): v for k, v in done.attrs["intermediate"].items()}
    assert sorted(curve) == [1, 2, 3, 4] and curve[4] == pytest.approx(value) and done.value == pytest.approx(value)
    pruned = gb.minimize(lambda c: NASSGD(epochs=4).evaluate(c)["value"], NASSGD().space, method="rs", budget=1,
                         seed=0, initial_configs=[config], n_initial=1, pruner=PruneAtSecondEpoch())
    (stopped,) = pruned.trials
    assert stopped.status == "failed" and "pruned" in stopped.attrs
    assert sorted(int(k) for k in stopped.attrs["intermediate"]) == [1, 2]  # stopped after the second epoch
