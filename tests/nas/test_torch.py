"""Realising NASBOT architectures in PyTorch, training them, and the architecture objectives."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from graphbo.nas.domain.architecture import Architecture
from graphbo.nas.training.objectives import NASObjective, SyntheticArchitectureObjective, architecture_features
from graphbo.nas.training.torch_model import build_module, layer_output_shapes, task_of, topological_order
from graphbo.nas.training.training import (
    TrainValData,
    load_csv_data,
    load_diabetes_data,
    load_digits_data,
    load_image_folder_or_npz,
    train,
    train_and_evaluate,
)


# ---------------------------------------------------------------------------
# hand-made networks
# ---------------------------------------------------------------------------


def mlp_chain(decision="softmax", units=32):
    return Architecture(kind="mlp", labels=["ip", "relu", "tanh", decision, "op"],
                        units=[None, units, units, None, None],
                        edges=[(0, 1), (1, 2), (2, 3), (3, 4)])


def mlp_branching():
    # ip -> relu(5) -> crelu(3) -+-> softmax -> op
    #   \-> tanh(4) -------------+-> elu(6) -> softmax -> op
    labels = ["ip", "relu", "crelu", "tanh", "elu", "softmax", "softmax", "op"]
    units = [None, 5, 3, 4, 6, None, None, None]
    edges = [(0, 1), (1, 2), (0, 3), (2, 4), (3, 4), (2, 5), (4, 6), (5, 7), (6, 7)]
    return Architecture(kind="mlp", labels=labels, units=units, edges=edges)


def cnn_resnet():
    # ip -> conv3(8) -> res3(8) -> res5(16, s2) -> max-pool -+-> fc(20) -> softmax -+-> op
    #                          \-> avg-pool -> conv5(4, s2) -+                      |
    #                                              \-> softmax ---------------------+
    labels = ["ip", "conv3", "res3", "res5", "max-pool", "avg-pool", "conv5", "fc", "softmax", "softmax", "op"]
    units = [None, 8, 8, 16, None, None, 4, 20, None, None, None]
    strides = [None, 1, 1, 2, None, None, 2, None, None, None, None]
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (2, 5), (5, 6), (4, 7), (6, 7), (7, 8), (6, 9), (8, 10), (9, 10)]
    return Architecture(kind="cnn", labels=labels, units=units, edges=edges, strides=strides)


def capture_outputs(module, x):
    """Run ``module`` on ``x`` and return every layer's output (by layer index)."""
    got = {}
    hooks = [module.layers[k].register_forward_hook(lambda m, i, o, k=k: got.__setitem__(int(k), o))
             for k in module.layers]
    try:
        y = module(x)
    finally:
        for h in hooks:
            h.remove()
    return y, got


# ---------------------------------------------------------------------------
# build_module
# ---------------------------------------------------------------------------


def test_mlp_chain_shapes_and_task():
    m = build_module(mlp_chain(), (64,), n_outputs=10, seed=0)
    y = m(torch.randn(7, 64))
    assert y.shape == (7, 10)
    assert m.task == "classification"
    # classification output is a log-probability vector
    assert torch.allclose(y.exp().sum(1), torch.ones(7), atol=1e-5)
    reg = build_module(mlp_chain("linear"), 10, n_outputs=1, seed=0)
    assert reg.task == "regression" and reg(torch.randn(3, 10)).shape == (3, 1)


def test_branching_concat_and_crelu_width():
    arch = mlp_branching()
    m = build_module(arch, (9,), n_outputs=4, seed=1)
    assert m.shapes[2] == (6,)  # crelu with 3 units outputs 6 features
    assert m.layers["4"].linear.in_features == 6 + 4  # concat(crelu(3), tanh(4))
    x = torch.randn(11, 9)
    y, out = capture_outputs(m, x)
    assert y.shape == (11, 4)
    # crelu = concat(relu(z), relu(-z)) of its 3 pre-activations z
    z = m.layers["2"].linear(out[1])
    assert torch.allclose(out[2], torch.cat([F.relu(z), F.relu(-z)], 1))
    # layer 4 (elu) sees its parents' outputs concatenated in index order
    pre = m.layers["4"].linear(torch.cat([out[2], out[3]], 1))
    assert torch.allclose(out[4], F.elu(pre))
    # the output averages the two decision layers' probabilities
    p = (F.softmax(out[5], 1) + F.softmax(out[6], 1)) / 2
    assert torch.allclose(y, p.log(), atol=1e-6)


def test_regression_decision_layers_are_averaged():
    arch = Architecture(kind="mlp", labels=["ip", "relu", "linear", "linear", "op"], units=[None, 6, None, None, None],
                        edges=[(0, 1), (1, 2), (1, 3), (0, 3), (2, 4), (3, 4)])
    m = build_module(arch, (5,), n_outputs=2, seed=0)
    x = torch.randn(4, 5)
    y, out = capture_outputs(m, x)
    assert y.shape == (4, 2)
    assert torch.allclose(y, (out[2] + out[3]) / 2)
    assert m.layers["3"].in_features == 6 + 5  # decision layer 3 concatenates relu(6) and the raw input


def test_cnn_res_blocks_stride_pool_and_predicted_shapes():
    arch = cnn_resnet()
    m = build_module(arch, (3, 8, 8), n_outputs=10, seed=0)
    x = torch.randn(5, 3, 8, 8)
    y, out = capture_outputs(m, x)
    assert y.shape == (5, 10)
    for i, o in out.items():
        assert tuple(o.shape[1:]) == m.shapes[i], i
    assert m.shapes[3] == (16, 4, 4)  # res5 at stride 2 halves 8x8
    assert m.shapes[4] == (16, 2, 2)  # max-pool at stride 2
    assert m.shapes[6] == (4, 2, 2)  # avg-pool (8->4) then conv5 at stride 2 (4->2)
    res_same, res_proj = m.layers["2"], m.layers["3"]
    assert isinstance(res_same.shortcut, torch.nn.Identity)  # 8 -> 8 channels, stride 1
    proj = res_proj.shortcut[0]
    assert isinstance(proj, torch.nn.Conv2d) and proj.kernel_size == (1, 1) and proj.stride == (2, 2)
    assert res_proj.conv1.kernel_size == (5, 5) and res_proj.conv2.kernel_size == (5, 5)
    assert res_proj.conv1.stride == (2, 2) and res_proj.conv2.stride == (1, 1)
    # the block is relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut(x))
    res_same.eval()
    h = out[1]
    with torch.no_grad():
        manual = F.relu(res_same.bn2(res_same.conv2(F.relu(res_same.bn1(res_same.conv1(h))))) + h)
        assert torch.allclose(res_same(h), manual, atol=1e-5)
    # fc global-average-pools each image parent, then concatenates: 16 + 4 channels
    assert m.layers["7"].linear.in_features == 20
    assert m.layers["9"].in_features == 4


def test_odd_image_sizes_round_up():
    arch = Architecture(kind="cnn", labels=["ip", "conv3", "max-pool", "conv3", "softmax", "op"],
                        units=[None, 4, None, 4, None, None], edges=[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5)],
                        strides=[None, 2, None, 1, None, None])
    m = build_module(arch, (1, 7, 7), n_outputs=3, seed=0)
    assert layer_output_shapes(arch, (1, 7, 7), n_outputs=3) == m.shapes
    assert m.shapes[1] == (4, 4, 4) and m.shapes[2] == (1, 4, 4) and m.shapes[3] == (4, 4, 4)
    _, out = capture_outputs(m, torch.randn(2, 1, 7, 7))
    assert tuple(out[3].shape[1:]) == (4, 4, 4)


def test_concatenating_images_of_different_sizes_raises():
    arch = Architecture(kind="cnn", labels=["ip", "conv3", "conv3", "conv3", "softmax", "op"],
                        units=[None, 4, 4, 4, None, None], edges=[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5)],
                        strides=[None, 2, 1, 1, None, None])
    with pytest.raises(ValueError, match="different image sizes"):
        build_module(arch, (1, 8, 8), n_outputs=10)
    with pytest.raises(ValueError, match="different image sizes"):
        SyntheticArchitectureObjective("cnn")(arch)
    # the same branches at equal strides are fine
    arch = Architecture.from_dict({**arch.to_dict(), "strides": [None, 2, 2, 1, None, None]})
    assert build_module(arch, (1, 8, 8), n_outputs=10).shapes[3] == (4, 4, 4)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["edges"].append([3, 1]), "cycle"),
    (lambda d: d["labels"].__setitem__(1, "conv3"), "label 'conv3'"),
    (lambda d: d["units"].__setitem__(2, None), "positive integer number of units"),
    (lambda d: d["labels"].__setitem__(3, "relu"), "decision layer 3"),
    (lambda d: d["labels"].__setitem__(0, "relu"), "exactly one 'ip'"),
    (lambda d: d["edges"].remove([1, 2]), "no (parents|children)"),
])
def test_invalid_mlps_raise(change, message):
    d = mlp_chain().to_dict()
    d = {k: list(v) for k, v in d.items() if k != "kind"} | {"kind": "mlp"}
    d["edges"] = [list(e) for e in d["edges"]]
    change(d)
    with pytest.raises(ValueError, match=message):
        build_module(Architecture.from_dict(d), (8,), n_outputs=3)


def test_fc_feeding_a_conv_and_bad_stride_raise():
    arch = Architecture(kind="cnn", labels=["ip", "fc", "conv3", "softmax", "op"], units=[None, 8, 4, None, None],
                        edges=[(0, 1), (1, 2), (2, 3), (3, 4)])
    with pytest.raises(ValueError, match="needs images"):
        build_module(arch, (1, 8, 8), n_outputs=10)
    arch = Architecture(kind="cnn", labels=["ip", "conv3", "softmax", "op"], units=[None, 4, None, None],
                        edges=[(0, 1), (1, 2), (2, 3)], strides=[None, 3, None, None])
    with pytest.raises(ValueError, match="stride 3"):
        build_module(arch, (1, 8, 8), n_outputs=10)


def test_seeded_init_is_deterministic_and_leaves_global_rng_alone():
    state = torch.get_rng_state()
    a = build_module(cnn_resnet(), (1, 8, 8), n_outputs=10, seed=3)
    b = build_module(cnn_resnet().to_dict(), (1, 8, 8), n_outputs=10, seed=3)
    c = build_module(cnn_resnet(), (1, 8, 8), n_outputs=10, seed=4)
    assert torch.equal(torch.get_rng_state(), state)
    pa, pb, pc = (torch.cat([p.flatten() for p in m.parameters()]) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)


def test_topological_order_and_task():
    arch = mlp_branching()
    order = topological_order(arch)
    pos = {v: k for k, v in enumerate(order)}
    assert all(pos[a] < pos[b] for a, b in arch.edges)
    assert task_of(arch) == "classification" and task_of(mlp_chain("linear")) == "regression"
    mixed = Architecture(kind="mlp", labels=["ip", "softmax", "linear", "op"], units=[None] * 4,
                         edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    with pytest.raises(ValueError, match="all be 'softmax'"):
        task_of(mixed)


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    return load_digits_data(0)


def test_mlp_trains_on_digits_and_is_reproducible(digits):
    arch = Architecture(kind="mlp", labels=["ip", "relu", "relu", "softmax", "op"], units=[None, 64, 32, None, None],
                        edges=[(0, 1), (1, 2), (2, 3), (3, 4)])
    state = torch.get_rng_state()
    r1 = train(arch, digits, epochs=4, seed=0)
    assert torch.equal(torch.get_rng_state(), state)
    assert r1.epochs_run == 4 and len(r1.history) == 4 and r1.stopped == "epochs"
    assert r1.error == min(r1.history) < 0.25  # accuracy > 0.75; chance is 0.1
    r2 = train(arch, digits, epochs=4, seed=0)
    assert r2.history == r1.history
    r3 = train(arch, digits, epochs=4, seed=1)
    assert r3.history != r1.history
    assert train_and_evaluate(arch.to_dict(), digits, epochs=4, seed=0) == r1.error
    assert torch.get_num_threads() >= 1


def test_regression_on_diabetes_beats_the_mean():
    data = load_diabetes_data(0)
    assert abs(data.y_train.mean()) < 1e-6 and abs(data.y_train.std() - 1) < 1e-5
    arch = Architecture(kind="mlp", labels=["ip", "relu", "linear", "op"], units=[None, 32, None, None],
                        edges=[(0, 1), (1, 2), (2, 3)])
    err = train_and_evaluate(arch, data, epochs=15, seed=0)
    mean_mse = float(((data.y_valid - data.y_train.mean()) ** 2).mean())
    assert math.isfinite(err) and err < 0.8 * mean_mse


def test_early_stopping_time_limit_and_mismatches(digits):
    arch = mlp_chain(units=16)
    r = train(arch, digits, epochs=50, max_seconds=0.0)
    assert r.epochs_run == 1 and r.stopped == "time"
    r = train(arch, digits, epochs=200, patience=2, lr=0.05)
    assert r.stopped == "early-stopping" and r.epochs_run == r.best_epoch + 2 < 200
    with pytest.raises(ValueError, match="regression network"):
        train(mlp_chain("linear"), digits, epochs=1)
    with pytest.raises(ValueError, match="CNN cannot be trained"):
        train(cnn_resnet(), digits, epochs=1)


def test_cnn_objective_trains_and_caches():
    obj = NASObjective("cnn", epochs=3, seed=0)
    arch = Architecture(kind="cnn", labels=["ip", "conv3", "max-pool", "res3", "softmax", "op"],
                        units=[None, 16, None, 16, None, None], edges=[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)],
                        strides=[None, 1, None, 2, None, None])
    err = obj(arch.to_dict())
    assert 0.0 <= err < 0.5  # well above chance (0.9 error) after three epochs
    t = time.perf_counter()
    assert obj(arch) == err and time.perf_counter() - t < 0.05  # cached
    with pytest.raises(ValueError, match="needs a CNN"):
        obj(mlp_chain())
    with pytest.raises(ValueError, match="regression task"):
        NASObjective("mlp-reg")(mlp_chain("softmax"))


# ---------------------------------------------------------------------------
# data loaders
# ---------------------------------------------------------------------------


def test_digits_split_is_fixed_by_the_seed():
    a, b, c = load_digits_data(0), load_digits_data(0), load_digits_data(1)
    assert np.array_equal(a.y_valid, b.y_valid) and not np.array_equal(a.y_valid, c.y_valid)
    im = load_digits_data(0, images=True)
    assert im.input_shape == (1, 8, 8) and a.input_shape == (64,) and im.kind == "cnn"
    assert len(a.y_train) + len(a.y_valid) == 1797 and a.n_outputs == 10
    assert np.array_equal(im.y_valid, a.y_valid)


def test_csv_loader(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.randn(40, 3)
    lines = ["a,label,b,c"] + [f"{r[0]},{'yes' if r[0] + r[1] > 0 else 'no'},{r[1]},{r[2]}" for r in x]
    path = tmp_path / "d.csv"
    path.write_text("\n".join(lines) + "\n")
    d = load_csv_data(path, "label", task="classification", seed=0)
    assert d.classes == ["no", "yes"] and d.input_shape == (3,) and len(d.y_valid) == 8
    assert abs(d.x_train.mean(0)).max() < 1e-5
    num = tmp_path / "n.csv"
    num.write_text("a;b;c\n" + "".join(f"{r[0]};{r[1]};{r[2]}\n" for r in x))
    r = load_csv_data(num, 0, task="regression", delimiter=";")  # column "a" as the target
    assert r.task == "regression" and r.input_shape == (2,)
    assert abs(r.y_train.mean()) < 1e-6 and abs(r.y_train.std() - 1) < 1e-5
    with pytest.raises(ValueError, match="no column named 'z'"):
        load_csv_data(path, "z")
    with pytest.raises(ValueError, match="column 'label' holds 'yes'"):
        load_csv_data(path, "a", task="regression")


def test_npz_and_image_folder_loaders(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.randint(0, 256, size=(30, 6, 5)).astype(np.uint8)
    y = np.array(["cat", "dog", "owl"] * 10)
    np.savez(tmp_path / "img.npz", x=x, y=y)
    d = load_image_folder_or_npz(tmp_path / "img.npz", seed=0)
    assert d.input_shape == (1, 6, 5) and d.n_outputs == 3 and d.classes == ["cat", "dog", "owl"]
    assert len(d.y_valid) == 6
    np.savez(tmp_path / "split.npz", x=x, y=y, x_valid=x[:4], y_valid=y[:4])
    s = load_image_folder_or_npz(tmp_path / "split.npz")
    assert len(s.y_train) == 30 and list(s.y_valid) == [0, 1, 2, 0]

    from PIL import Image

    for k, name in enumerate(["a", "b"]):
        (tmp_path / "folder" / name).mkdir(parents=True)
        for j in range(5):
            Image.fromarray(np.full((4, 4), 40 * k + j, dtype=np.uint8)).save(tmp_path / "folder" / name / f"{j}.png")
    f = load_image_folder_or_npz(tmp_path / "folder", valid_fraction=0.2)
    assert f.input_shape == (1, 4, 4) and f.classes == ["a", "b"] and len(f.y_valid) == 2
    with pytest.raises(ValueError, match="arrays 'x' and 'y'"):
        np.savez(tmp_path / "bad.npz", images=x)
        load_image_folder_or_npz(tmp_path / "bad.npz")


def test_trainvaldata_rejects_bad_labels():
    with pytest.raises(ValueError, match="different shapes"):
        TrainValData(x_train=np.zeros((4, 3)), y_train=np.zeros(4), x_valid=np.zeros((2, 5)), y_valid=np.zeros(2),
                     task="regression")
    with pytest.raises(ValueError, match=r"integers in 0..2"):
        TrainValData(x_train=np.zeros((4, 3)), y_train=[0, 1, 2, 1], x_valid=np.zeros((2, 3)), y_valid=[0, 5],
                     task="classification", classes=[0, 1, 2])


# ---------------------------------------------------------------------------
# synthetic objective
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("domain", ["mlp-class", "mlp-reg", "cnn"])
def test_synthetic_objective_is_deterministic_and_orders_networks(domain):
    obj = SyntheticArchitectureObjective(domain)
    best = obj.optimal_architecture()
    assert obj(best) == 0.0 and SyntheticArchitectureObjective(domain)(best.to_dict()) == 0.0
    dec = "linear" if domain == "mlp-reg" else "softmax"
    if domain == "cnn":
        bad = Architecture(kind="cnn", labels=["ip", "conv7", dec, "op"], units=[None, 8, None, None],
                           edges=[(0, 1), (1, 2), (2, 3)],
                           strides=[None, 1, None, None])
        near = Architecture.from_dict({**best.to_dict(), "units": [u if u is None else 48 for u in best.units]})
    else:
        bad = Architecture(kind="mlp", labels=["ip", "logistic", dec, "op"], units=[None, 8, None, None],
                           edges=[(0, 1), (1, 2), (2, 3)])
        near = Architecture.from_dict({**best.to_dict(), "labels": best.labels[:3] + ["tanh"] + best.labels[4:]})
    values = [obj(best), obj(near), obj(bad)]
    assert values[0] < values[1] < values[2] and values[2] > 0.85
    assert [obj(best), obj(near), obj(bad)] == values  # deterministic
    t = time.perf_counter()
    for _ in range(100):
        obj(near)
    assert time.perf_counter() - t < 1.0


def test_synthetic_features():
    f = architecture_features(cnn_resnet())
    # longest path ip-1-2-3-4-7-8-op = 7 hops; 12 edges on 11 layers -> 2 skips;
    # reductions: res5 s2 + max-pool = 2 (the other branch: avg-pool + conv5 s2 = 2)
    assert f["depth"] == 7 and f["skips"] == 2 and f["decision"] == 2 and f["reductions"] == 2
    # good labels among conv3, res3, res5, conv5, fc: 3 of 5
    assert f["good_fraction"] == pytest.approx(3 / 5)
    assert f["log_units"] == pytest.approx(np.mean(np.log2([8, 8, 16, 4, 20])))


def test_a_last_batch_of_one_sample_is_folded_into_the_previous_batch():
    # batch norm cannot train on a single sample; 65 samples at batch size 64 must still work
    rng = np.random.RandomState(0)
    data = TrainValData(x_train=rng.randn(65, 1, 4, 4), y_train=rng.randint(0, 2, 65), x_valid=rng.randn(9, 1, 4, 4),
                        y_valid=rng.randint(0, 2, 9),
                        task="classification", classes=[0, 1])
    arch = Architecture(kind="cnn", labels=["ip", "conv3", "softmax", "op"], units=[None, 4, None, None],
                        edges=[(0, 1), (1, 2), (2, 3)],
                        strides=[None, 1, None, None])
    r = train(arch, data, epochs=2, batch_size=64)
    assert r.epochs_run == 2 and 0.0 <= r.error <= 1.0


def test_objectives_with_the_same_settings_share_trainings_on_bundled_data():
    arch = mlp_chain("linear", units=8)
    a = NASObjective("mlp-reg", epochs=2, seed=3)
    b = NASObjective("mlp-reg", epochs=2, seed=3)
    assert b.details(arch) is a.details(arch)  # one training, shared
    other_epochs = NASObjective("mlp-reg", epochs=3, seed=3).details(arch)
    other_seed = NASObjective("mlp-reg", epochs=2, seed=4).details(arch)
    assert other_epochs is not a.details(arch) and other_seed is not a.details(arch)
    assert other_epochs.epochs_run == 3 and other_seed.error != a.details(arch).error
    # own data or a time limit: nothing shared (the values are the data's or the clock's)
    own = NASObjective("mlp-reg", data=a.data, epochs=2, seed=3)
    timed = NASObjective("mlp-reg", epochs=2, seed=3, max_seconds=60)
    assert own.details(arch) is not a.details(arch) and timed.details(arch) is not a.details(arch)
    assert own(arch) == a(arch)  # deterministic training: sharing changes no value
