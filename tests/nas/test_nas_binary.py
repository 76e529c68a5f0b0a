"""Binary-cell NAS benchmark (COMBO supplement Sec. 4.4).

Decoding, validity and FLOPs are checked against hand-worked examples; the
training is checked on scikit-learn's digits with a couple of epochs.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
torch = pytest.importorskip("torch")

from graphbo.benchmarks import REGISTRY, load_benchmark  # noqa: E402
from graphbo.benchmarks.nas_binary import INVALID_VALUE, NASBinary, decode, reduce_cell  # noqa: E402


def bits(s: str) -> np.ndarray:
    s = s.replace(" ", "").replace("|", "")
    assert len(s) == 31
    return np.array([int(c) for c in s])


# Layout: H1..H5 type bits (conv, large), then edges row by row:
#   IN->H1 H2 H3 H4 H5 OUT | H1->H2 H3 H4 H5 OUT | H2->H3 H4 H5 OUT | H3->H4 H5 OUT | H4->H5 OUT | H5->OUT
# Types: H1 conv3 (10), H2 maxpool3 (01), H3 conv5 (11), H4 id (00), H5 conv5 (11).
# Edges: IN->H1, IN->H5, H1->H3, H2->H4, H3->OUT, H4->OUT.
EXAMPLE = bits("10 01 11 00 11 | 100010 | 01000 | 0100 | 001 | 01 | 0")

# IN -> H1 -> OUT with H1 = conv3x3; other states unused.
SIMPLE = bits("10 00 00 00 00 | 100000 | 00001 | 0000 | 000 | 00 | 0")


@pytest.fixture(scope="module")
def bench():
    return NASBinary(epochs=2)


def test_space_and_registry(bench):
    assert len(bench.space) == 31
    assert all(v.n_values == 2 for v in bench.space.variables)
    assert bench.space.names[:4] == ("H1_conv", "H1_large", "H2_conv", "H2_large")
    assert bench.space.names[10] == "IN_H1" and bench.space.names[15] == "IN_OUT"
    assert bench.space.names[16] == "H1_H2" and bench.space.names[-1] == "H5_OUT"
    assert bench.name == "nasbinary" and "nasbinary" in REGISTRY
    assert bench.default_budget == 260 and bench.default_n_initial == 10


def test_decoding_by_hand():
    ops, adj = decode(EXAMPLE)
    assert ops == ["conv3", "maxpool3", "conv5", "id", "conv5"]
    expected = np.zeros((7, 7), dtype=int)  # states IN=0, H1..H5=1..5, OUT=6
    for i, j in [(0, 1), (0, 5), (1, 3), (2, 4), (3, 6), (4, 6)]:
        expected[i, j] = 1
    np.testing.assert_array_equal(adj, expected)
    # Only IN -> H1 -> H3 -> OUT lies on a path from IN to OUT.
    reduced = reduce_cell(adj)
    kept = np.zeros((7, 7), dtype=int)
    kept[0, 1] = kept[1, 3] = kept[3, 6] = 1
    np.testing.assert_array_equal(reduced, kept)


def test_config_dict_matches_index_row(bench):
    config = bench.space.from_index(EXAMPLE)
    assert config["H1_conv"] is True and config["H1_large"] is False
    assert config["IN_H5"] is True and config["H2_H4"] is True and config["IN_OUT"] is False
    np.testing.assert_array_equal(bench.space.to_index(config), EXAMPLE)


def test_invalid_cell_scores_documented_value_without_training():
    b = NASBinary(epochs=50)  # training would be slow; it must not happen
    b._train_once = lambda *a, **k: pytest.fail("an invalid cell must not be trained")
    # H1 -> H2 -> OUT, but nothing leaves IN.
    dead = bits("11 11 11 11 11 | 000000 | 10000 | 0001 | 000 | 00 | 0")
    assert reduce_cell(decode(dead)[1]) is None
    assert b.evaluate_index(dead) == INVALID_VALUE == pytest.approx(0.92)
    assert b.evaluate_index(np.zeros(31, dtype=int)) == INVALID_VALUE
    assert b(b.space.from_index(dead)) == INVALID_VALUE
    assert b.flops(dead) is None and b.flops_penalty(dead) == pytest.approx(0.02)


def test_flops_by_hand(bench):
    # digits: 1 x 8 x 8 input, 8 base channels, two cells. Rules: conv (C_in k^2 + 1) per output
    # element, BN and ReLU 2 each per element, k x k max-pool (k^2 - 1) per output element,
    # linear in*out, summing m inputs (m - 1) per element.
    stem = (1 * 9 + 1) * 8 * 64 + 2 * 512 + 2 * 512
    pool1 = 3 * 8 * 16
    trans = (8 + 1) * 16 * 16
    pool2 = 3 * 16 * 4
    fc = 16 * 2 * 2 * 10
    fixed = stem + pool1 + trans + pool2 + fc

    cell1 = (8 * 9 + 1) * 8 * 64 + 4 * 8 * 64  # conv3x3 + BN + ReLU on 8 x 8 x 8
    cell2 = (16 * 9 + 1) * 16 * 16 + 4 * 16 * 16  # on 16 x 4 x 4
    assert bench.flops(SIMPLE) == fixed + cell1 + cell2 == 88256

    # IN -> H1 (maxpool 3x3) -> OUT plus IN -> OUT: one pooling, one addition at OUT.
    skip = bits("01 00 00 00 00 | 100001 | 00001 | 0000 | 000 | 00 | 0")
    assert bench.flops(skip) == fixed + (8 * 512 + 512) + (8 * 256 + 256)

    # The most expensive cell: all edges, conv5x5 everywhere; H_k has k inputs, OUT has 6,
    # so 0 + 1 + 2 + 3 + 4 + 5 = 15 additions per element.
    def full_cell(c, hw):
        return 5 * ((c * 25 + 1) * c * hw + 4 * c * hw) + 15 * c * hw

    assert bench.max_flops == fixed + full_cell(8, 64) + full_cell(16, 16) == 1065408
    assert bench.flops(np.ones(31, dtype=int)) == bench.max_flops
    assert bench.flops_penalty(np.ones(31, dtype=int)) == pytest.approx(0.02)


def test_flops_penalty_range_and_dead_parts(bench):
    rng = np.random.default_rng(0)
    for row in rng.integers(0, 2, size=(300, 31)):
        p = bench.flops_penalty(row)
        assert 0.0 <= p <= 0.02
        if bench.flops(row) is not None:
            assert p < 0.02 or np.array_equal(row, np.ones(31))
    # Dead states do not count: EXAMPLE's network is IN -> conv3 -> conv5 -> OUT only.
    live = bits("10 00 11 00 00 | 100000 | 01000 | 0000 | 001 | 00 | 0")
    assert bench.flops(EXAMPLE) == bench.flops(live)


def test_cifar_network_shape():
    b = NASBinary(data="cifar10", data_dir="/nonexistent")  # data are read only when training
    assert b.n_cells == 3 and b.n_ch_base == 16 and b.shape == (3, 32, 32)
    assert 0 < b.flops(SIMPLE) < b.max_flops


def test_training_on_digits_is_better_than_chance_and_deterministic(bench):
    state = torch.get_rng_state()
    threads = torch.get_num_threads()
    d = bench.evaluate_details(SIMPLE)
    assert d["valid"] and 0.0 <= d["error"] <= 1.0
    assert d["error"] < 0.9
    assert d["value"] == pytest.approx(d["error"] + 0.02 * bench.flops(SIMPLE) / bench.max_flops)
    assert torch.equal(torch.get_rng_state(), state)  # global RNG untouched
    assert torch.get_num_threads() == threads
    # A fresh benchmark with the same seed retrains and gets the same value.
    again = NASBinary(epochs=2)
    assert again.evaluate_index(SIMPLE) == d["value"]
    # Unused type bits (H2..H5) do not change the network, nor the value.
    variant = SIMPLE.copy()
    variant[2:10] = 1
    assert again.evaluate_index(variant) == d["value"]


def test_load_benchmark_and_initial_cells():
    b = load_benchmark("nasbinary", epochs=1)
    init = b.initial_index()
    assert init.shape == (10, 31)
    for row in init:
        assert b.flops(row) is not None
    # cell 9 of the reference is the complete graph with conv5x5 everywhere
    np.testing.assert_array_equal(init[8], np.ones(31))


def test_reading_idx_and_cifar_files(tmp_path):
    import gzip
    import pickle

    from graphbo.benchmarks.nas_binary import _load_data

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    # idx format: two zero bytes, type code 0x08 (ubyte), number of dims, big-endian sizes, data
    with gzip.open(tmp_path / "train-images-idx3-ubyte.gz", "wb") as f:
        f.write(bytes([0, 0, 8, 3]) + b"".join(int(d).to_bytes(4, "big") for d in images.shape) + images.tobytes())
    with open(tmp_path / "train-labels-idx1-ubyte", "wb") as f:  # uncompressed is accepted too
        f.write(bytes([0, 0, 8, 1]) + (5).to_bytes(4, "big") + labels.tobytes())
    x, y = _load_data("fashion-mnist", tmp_path)
    assert x.shape == (5, 1, 28, 28) and x.dtype == np.float32
    np.testing.assert_allclose(x[2, 0], images[2] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y, labels)

    cifar = tmp_path / "cifar-10-batches-bin"
    cifar.mkdir()
    pixels = []
    for k in range(1, 6):  # the binary version: a label byte, then 3072 pixel bytes, per image
        data = rng.integers(0, 256, size=(2, 3072), dtype=np.uint8)
        pixels.append(data)
        labels_k = np.array([k, k + 1], dtype=np.uint8)
        np.concatenate([labels_k[:, None], data], axis=1).tofile(cifar / f"data_batch_{k}.bin")
    x, y = _load_data("cifar10", tmp_path)
    assert x.shape == (10, 3, 32, 32)
    np.testing.assert_allclose(x[3].reshape(-1), pixels[1][1] / 255.0, rtol=1e-6)  # channel-major rows
    np.testing.assert_array_equal(y, [1, 2, 2, 3, 3, 4, 4, 5, 5, 6])


class _Payload:
    """A pickle that runs a command when loaded (what a hostile CIFAR-10 folder could hold)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


def test_cifar_pickles_are_never_read_and_a_bad_binary_batch_is_refused(tmp_path):
    """The CIFAR-10 folder can come from a study file (graphbo resume re-reads its benchmark's data), so only
    the data set's binary version is read: the python version's pickles (here ones that run a command when
    unpickled) are not opened, and a file of the wrong size or with labels above 9 is refused."""
    import pickle

    from graphbo.benchmarks.nas_binary import _load_data

    marker = tmp_path / "pwned"
    cifar = tmp_path / "cifar-10-batches-py"
    cifar.mkdir()
    for k in range(1, 6):
        with open(cifar / f"data_batch_{k}", "wb") as f:
            pickle.dump({b"data": _Payload(marker), b"labels": [0]}, f, protocol=2)
    with pytest.raises(FileNotFoundError, match="binary version"):
        _load_data("cifar10", cifar)
    assert not marker.exists()
    binary = tmp_path / "bin"
    binary.mkdir()
    for k in range(1, 6):
        np.zeros(3073 * 2, dtype=np.uint8).tofile(binary / f"data_batch_{k}.bin")
    (binary / "data_batch_3.bin").write_bytes(b"\0" * 3000)  # cut short
    with pytest.raises(ValueError, match="not a CIFAR-10 binary batch"):
        _load_data("cifar10", binary)
    record = np.zeros(3073, dtype=np.uint8)
    record[0] = 200  # a label CIFAR-10 does not have
    record.tofile(binary / "data_batch_3.bin")
    with pytest.raises(ValueError, match="labels above 9"):
        _load_data("cifar10", binary)
