"""Architecture domain, OTMANN distance and NASBOT kernel (Kandasamy et al. 2018)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.optimize import linprog

from graphbo.kernels.otmann import OTMANNKernel, otmann_kernel, project_psd
from graphbo.nas.distance import kernel as eq4
from graphbo.nas.domain.architecture import (
    Architecture,
    InvalidArchitectureError,
    structural_groups,
)
from graphbo.nas.domain.constraints import Constraints
from graphbo.nas.domain.generate import random_architecture, random_cnn, random_mlp
from graphbo.nas.distance.otmann import (
    DEFAULT_NU_STRS,
    OTMANN,
    cnn_label_mismatch,
    mlp_label_mismatch,
    otmann_distance,
    otmann_distances,
)


def cnn(labels, units, edges, strides=None):
    if strides is None:
        strides = [1 if l.startswith(("conv", "res")) else None for l in labels]
    return Architecture(kind="cnn", labels=labels, units=units, edges=edges, strides=strides)


def mlp(labels, units, edges):
    return Architecture(kind="mlp", labels=labels, units=units, edges=edges)


def chain(n):
    return [(i, i + 1) for i in range(n - 1)]


def fig3_pair():
    """The two CNNs of Fig. 3: layer 2 on the left (16 conv3 filters) is split into
    two parallel layers of 8 filters on the right; both feed 32 conv3 filters."""
    left = cnn(["ip", "conv3", "conv3", "conv3", "max-pool", "fc", "softmax", "op"],
               [None, 16, 16, 32, None, 64, None, None], chain(8))
    right = cnn(["ip", "conv3", "conv3", "conv3", "conv3", "max-pool", "fc", "softmax", "op"],
                [None, 16, 8, 8, 32, None, 64, None, None],
                [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8)])
    return left, right


def permuted(arch, rng):
    """The same network with its layers renumbered."""
    perm = rng.permutation(arch.n_layers)  # old index i -> new index perm[i]
    inv = np.argsort(perm)
    return Architecture(kind=arch.kind, labels=[arch.labels[i] for i in inv], units=[arch.units[i] for i in inv],
                        edges=[(int(perm[a]), int(perm[b])) for a, b in arch.edges],
                        strides=None if arch.strides is None else [arch.strides[i] for i in inv])


def mutate(arch, rng):
    """A nearby valid network: one layer's units scaled, or a label swapped within its group."""
    labels, units = list(arch.labels), list(arch.units)
    i = int(rng.choice([k for k, u in enumerate(units) if u is not None]))
    if rng.random() < 0.5:
        units[i] = max(8, int(units[i] * rng.choice([0.875, 1.125, 1.5])))
    elif arch.kind == "cnn":
        labels[i] = str(rng.choice(["conv3", "conv5", "conv7", "res3", "res5", "res7"])) \
            if labels[i] != "fc" else "fc"
    else:
        labels[i] = str(rng.choice(["relu", "elu", "tanh", "logistic", "softplus"]))
    out = Architecture(kind=arch.kind, labels=labels, units=units, edges=arch.edges, strides=arch.strides)
    out.validate()
    return out


# --------------------------------------------------------------------------------------
# architecture domain
# --------------------------------------------------------------------------------------

def test_layer_masses_follow_section3_and_appendix_a3():
    # ip -> conv3(16) -> {conv3(16), res5(16)} -> conv3(32) -> max-pool -> fc(64) -> {fc(128), softmax}
    a = cnn(["ip", "conv3", "conv3", "res5", "conv3", "max-pool", "fc", "fc", "softmax", "softmax", "op"],
            [None, 16, 16, 16, 32, None, 64, 128, None, None, None],
            [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 6), (6, 7), (6, 8), (7, 9),
             (8, 10), (9, 10)])
    a.validate()
    m = a.layer_masses()
    assert m[1] == 1 * 16  # the input emits one channel
    assert m[2] == 16 * 16
    assert m[3] == 2 * 16 * 16  # res = two conv layers
    assert m[4] == 32 * (16 + 16)  # Fig. 1b: lm(5) = 32 x (16 + 16)
    assert m[5] == 32  # pooling: its incoming channels
    assert m[6] == pytest.approx(0.1 * 64 * 32)  # CNN fc times 0.1
    assert m[7] == pytest.approx(0.1 * 128 * 64)
    proc = m[[1, 2, 3, 4, 5, 6, 7]].sum()
    assert m[0] == m[10] == pytest.approx(0.1 * proc)  # zeta = 0.1
    assert m[8] == m[9] == pytest.approx(0.1 * proc / 2)  # shared by the decision layers
    assert a.total_mass() == pytest.approx(proc * 1.3)
    assert a.processing_mass() == pytest.approx(proc)


def test_small_networks_get_the_minimum_non_processing_mass():
    a = mlp(["ip", "relu", "linear", "op"], [None, 8, None, None], chain(4))
    m = a.layer_masses()
    assert m[1] == 8
    assert m[0] == m[2] == m[3] == 100.0  # max(0.1 * 8, 100), authors' code


def test_mlp_masses_use_concatenated_inputs():
    a = mlp(["ip", "relu", "tanh", "elu", "linear", "op"], [None, 10, 20, 30, None, None],
            [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5)])
    m = a.layer_masses()
    assert list(m[1:4]) == [10, 20, 30 * (10 + 20)]  # MLP hidden layers are not scaled


def test_path_lengths_shortest_longest_random_walk_and_groups():
    # ip -> relu(1) -> tanh(2) -> relu(3) -> linear(4) -> op, plus the skip 1 -> 3
    a = mlp(["ip", "relu", "tanh", "relu", "linear", "op"], [None, 8, 8, 8, None, None],
            chain(6) + [(1, 3)])
    P = a.path_lengths("all")  # columns ip-sp, ip-lp, ip-rw, op-sp, op-lp, op-rw
    np.testing.assert_allclose(P[1], [1, 1, 1, 3, 4, 3.5])
    np.testing.assert_allclose(P[3], [2, 3, 2.5, 2, 2, 2])
    np.testing.assert_allclose(P[0], [0, 0, 0, 4, 5, 4.5])
    np.testing.assert_allclose(P[5], [4, 5, 4.5, 0, 0, 0])
    # only hops through sigmoid layers count: layer 1 reaches op via tanh(2) or not
    S = a.path_lengths("sigmoid")
    np.testing.assert_allclose(S[1, 3:], [0, 1, 0.5])
    np.testing.assert_allclose(S[3, :3], [0, 1, 0.5])
    R = a.path_lengths("rectifier")
    np.testing.assert_allclose(R[1], [1, 1, 1, 2, 2, 2])
    np.testing.assert_allclose(R[5], [2, 2, 2, 0, 0, 0])
    assert a.path_length_features().shape == (6, 6 * 3)
    with pytest.raises(ValueError, match="unknown group"):
        a.path_lengths("conv")


def test_path_lengths_do_not_depend_on_layer_numbering():
    rng = np.random.default_rng(3)
    a = random_cnn(rng, n_layers=15)
    b = permuted(a, rng)
    assert b != a
    # compare as multisets of rows (masses and all path lengths together)
    fa = np.column_stack([a.layer_masses(), a.path_length_features()])
    fb = np.column_stack([b.layer_masses(), b.path_length_features()])
    np.testing.assert_allclose(np.sort(fa, axis=0), np.sort(fb, axis=0))
    assert a.total_mass() == pytest.approx(b.total_mass())


def test_image_sizes_from_strides_and_pooling():
    a = cnn(["ip", "conv3", "conv3", "max-pool", "conv5", "fc", "softmax", "op"],
            [None, 8, 8, None, 16, 32, None, None], chain(8),
            strides=[None, 1, 2, None, 2, None, None, None])
    assert a.image_sizes() == [1, 1, 2, 4, 8, None, None, None]


def test_json_round_trip_and_dot():
    a = cnn(["ip", "conv3", "conv5", "avg-pool", "fc", "softmax", "op"],
            [None, 16, 64, None, 32, None, None], chain(7),
            strides=[None, 1, 2, None, None, None, None])
    b = Architecture.from_json(a.to_json())
    assert b == a and b.layer_masses().tolist() == a.layer_masses().tolist()
    dot = a.to_dot()
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert '"2: conv5, 64, /2"' in dot and '"1: conv3, 16"' in dot and '"3: avg-pool"' in dot
    assert dot.count("->") == a.n_edges
    assert "n5 -> n6;" in dot
    assert "(" in a.to_dot(show_mass=True)


def _valid_cnn_parts():
    return (["ip", "conv3", "conv3", "max-pool", "fc", "softmax", "op"],
            [None, 16, 16, None, 32, None, None], chain(7),
            [None, 1, 1, None, None, None, None])


@pytest.mark.parametrize("change, message", [
    (lambda L, U, E, S: E.append((4, 1)), "cycle"),
    (lambda L, U, E, S: E.append((2, 2)), "self loop"),
    (lambda L, U, E, S: E.append((2, 9)), "outside"),
    (lambda L, U, E, S: L.__setitem__(3, "min-pool"), "unknown label"),
    (lambda L, U, E, S: L.__setitem__(6, "softmax"), "exactly one 'op'"),
    (lambda L, U, E, S: (L.append("ip"), U.append(None), S.append(None)), "exactly one 'ip'"),
    (lambda L, U, E, S: (L.append("conv3"), U.append(8), S.append(1), E.append((1, 7))),
     "no path to the output"),
    (lambda L, U, E, S: (L.append("conv3"), U.append(8), S.append(1), E.append((7, 2))),
     "not reachable from the input"),
    (lambda L, U, E, S: (E.remove((4, 5)), E.remove((5, 6)), E.append((4, 6)),
                         E.append((3, 5)), E.append((5, 4))), "decision"),
    (lambda L, U, E, S: E.append((4, 6)), "not a decision layer"),
    (lambda L, U, E, S: U.__setitem__(2, None), "positive number of units"),
    (lambda L, U, E, S: U.__setitem__(2, 0), "positive number of units"),
    (lambda L, U, E, S: U.__setitem__(3, 8), "units must be None"),
    (lambda L, U, E, S: S.__setitem__(2, 3), "stride 1 or 2"),
    (lambda L, U, E, S: S.__setitem__(4, 1), "stride must be None"),
    (lambda L, U, E, S: E.append((0, 3)), "must be convolutional"),
    (lambda L, U, E, S: E.append((1, 4)), "different image sizes"),
    (lambda L, U, E, S: (L.__setitem__(3, "conv3"), U.__setitem__(3, 8), S.__setitem__(3, 1),
                         L.__setitem__(2, "fc"), S.__setitem__(2, None)), "flattened"),
    (lambda L, U, E, S: S.pop(), "strides for"),
])
def test_validity_checks_reject_invalid_cnns_with_a_message(change, message):
    L, U, E, S = _valid_cnn_parts()
    assert cnn(L, U, E, S).validity_error() is None
    change(L, U, E, S)
    a = Architecture(kind="cnn", labels=L, units=U, edges=E, strides=S)
    err = a.validity_error()
    assert err is not None and message in err, err
    with pytest.raises(InvalidArchitectureError, match=message.split("'")[0]):
        a.validate()
    assert not a.is_valid()


def test_validity_checks_mlp_specific_rules():
    ok = mlp(["ip", "relu", "linear", "op"], [None, 8, None, None], chain(4))
    assert ok.is_valid() and ok.task == "regression"
    mixed = mlp(["ip", "relu", "linear", "softmax", "op"], [None, 8, None, None, None],
                [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4)])
    assert "mix" in mixed.validity_error()
    conv_in_mlp = mlp(["ip", "conv3", "linear", "op"], [None, 8, None, None], chain(4))
    assert "unknown label 'conv3'" in conv_in_mlp.validity_error()
    linear_cnn = cnn(["ip", "conv3", "linear", "op"], [None, 8, None, None], chain(4))
    assert "unknown label 'linear'" in linear_cnn.validity_error()
    strided = Architecture(kind="mlp", labels=["ip", "relu", "linear", "op"], units=[None, 8, None, None],
                           edges=chain(4),
                           strides=[None, 2, None, None])
    assert "no strides" in strided.validity_error()
    no_decision = mlp(["ip", "relu", "op"], [None, 8, None], chain(3))
    assert "decision layer" in no_decision.validity_error()
    assert "unknown kind" in Architecture(kind="rnn", labels=["ip", "op"], units=[None, None],
                                          edges=[(0, 1)]).validity_error()


def test_constraints_defaults_and_each_limit():
    c = Constraints()
    assert (c.max_layers, c.max_mass, c.max_in_degree, c.max_out_degree, c.max_edges,
            c.max_units, c.min_units) == (60, 1e8, 5, 5, 200, 1024, 8)
    base = random_cnn(0, n_layers=12)
    assert c(base) and c.check(base) is None
    assert "exceed the maximum of 60" in c.violation(random_cnn(0, n_layers=61))
    fan = mlp(["ip"] + ["relu"] * 6 + ["linear", "op"], [None] + [8] * 6 + [None, None],
              [(0, i) for i in range(1, 7)] + [(i, 7) for i in range(1, 7)] + [(7, 8)])
    assert "layer 7 (linear) has in-degree 6" in c.violation(fan)
    assert "layer 0 (ip) has out-degree 6" in Constraints(max_in_degree=None).violation(fan)
    assert "edges exceed" in Constraints(max_edges=10).violation(fan)
    big = mlp(["ip", "relu", "relu", "linear", "op"], [None, 1024, 2048, None, None], chain(5))
    assert "2048 units > 1024" in c.violation(big)
    small = mlp(["ip", "relu", "linear", "op"], [None, 4, None, None], chain(4))
    assert "4 units < 8" in c.violation(small)
    heavy = mlp(["ip"] + ["relu"] * 4 + ["linear", "op"], [None] + [1024] * 4 + [None, None], chain(7))
    assert heavy.total_mass() > 3e6
    assert "mass" in Constraints(max_mass=1e6).violation(heavy)
    assert Constraints().violation(heavy) is None
    assert "fewer than the minimum" in Constraints(min_layers=10).violation(small)
    deep = cnn(["ip", "conv3", "max-pool", "max-pool", "max-pool", "fc", "softmax", "op"],
               [None, 8, None, None, None, 16, None, None], chain(8))
    assert "downsampled by 8" in Constraints(max_halvings=2).violation(deep)
    assert Constraints(max_halvings=3).violation(deep) is None
    # structural problems are reported before the limits
    bad = cnn(["ip", "fc", "softmax", "op"], [None, 8, None, None], chain(4))
    assert "convolutional" in c.check(bad) and not c(bad)


def test_random_generator_yields_valid_networks_of_the_requested_size():
    for kind in ("cnn", "mlp"):
        for n in (5, 9, 20, 60, 110):
            for seed in range(5):
                a = random_architecture(kind, seed, n_layers=n)
                assert a.n_layers == n
                a.validate()
    assert random_mlp(0, n_layers=8, task="classification").task == "classification"


# --------------------------------------------------------------------------------------
# label-mismatch matrices
# --------------------------------------------------------------------------------------

def test_cnn_label_mismatch_is_table4_with_the_res_rule():
    M = cnn_label_mismatch()
    assert M.cost("conv3", "conv5") == 0.2 and M.cost("conv3", "conv7") == 0.3
    assert M.cost("conv5", "conv7") == 0.2 and M.cost("max-pool", "avg-pool") == 0.25
    assert M.cost("res5", "res7") == 0.2
    assert M.cost("res3", "conv3") == pytest.approx(0.1)
    assert M.cost("res3", "conv7") == pytest.approx(0.9 * 0.3 + 0.1)
    for a, b in [("conv3", "max-pool"), ("fc", "conv3"), ("fc", "softmax"), ("ip", "op"),
                 ("res3", "avg-pool"), ("softmax", "op")]:
        assert M.cost(a, b) == np.inf
    assert M.triangle_violations() == []  # the condition of Thm. 3


def test_mlp_label_mismatch_is_table5():
    M = mlp_label_mismatch()
    assert M.cost("relu", "elu") == 0.1 and M.cost("crelu", "softplus") == 0.1
    assert M.cost("tanh", "logistic") == 0.1 and M.cost("leaky-relu", "tanh") == 0.25
    assert M.cost("linear", "relu") == np.inf and M.cost("linear", "softmax") == np.inf
    assert M.cost("ip", "op") == np.inf
    assert M.triangle_violations() == []
    # a matrix that breaks the condition is detected
    bad = cnn_label_mismatch(conv_costs={(3, 5): 0.1, (3, 7): 0.5, (5, 7): 0.1})
    assert ("conv3", "conv5", "conv7") in bad.triangle_violations()


# --------------------------------------------------------------------------------------
# OTMANN distance
# --------------------------------------------------------------------------------------

def _program3_by_linprog(a1, a2, nu, M):
    """Program (3) solved as a generic LP over Z (n1 x n2), with the infinite label
    costs as forced zeros and C_str assembled from the per-group path lengths."""
    groups = structural_groups(a1.kind)
    C_str = np.zeros((a1.n_layers, a2.n_layers))
    for g in groups:
        P1, P2 = a1.path_lengths(g), a2.path_lengths(g)
        for i in range(a1.n_layers):
            for j in range(a2.n_layers):
                C_str[i, j] += np.abs(P1[i] - P2[j]).sum() / 6
    C_str /= len(groups)
    C_lmm = np.array([[M.cost(x, y) for y in a2.labels] for x in a1.labels])
    m1, m2 = a1.layer_masses(), a2.layer_masses()
    n1, n2 = len(m1), len(m2)
    finite = np.isfinite(C_lmm)
    # objective: <Z, C_lmm + nu C_str> + sum_i (m1_i - sum_j Z_ij) + sum_j (m2_j - sum_i Z_ij)
    c = np.where(finite, C_lmm + nu * C_str - 2.0, 0.0).ravel()
    A = np.zeros((n1 + n2, n1 * n2))
    for i in range(n1):
        A[i, i * n2:(i + 1) * n2] = 1
    for j in range(n2):
        A[n1 + j, j::n2] = 1
    bounds = [(0, None) if f else (0, 0) for f in finite.ravel()]
    res = linprog(c, A_ub=A, b_ub=np.concatenate([m1, m2]), bounds=bounds, method="highs")
    assert res.success
    return res.fun + m1.sum() + m2.sum()


@pytest.mark.parametrize("kind", ["cnn", "mlp"])
def test_ot_formulation_matches_program3_solved_as_an_lp(kind):
    rng = np.random.default_rng(11)
    otm = OTMANN(kind)
    for trial in range(6):
        a1 = random_architecture(kind, rng, n_layers=int(rng.integers(5, 11)))
        a2 = mutate(a1, rng) if trial % 2 else random_architecture(kind, rng, n_layers=int(rng.integers(5, 11)))
        for nu in (0.1, 0.5, 2.0):
            want = _program3_by_linprog(a1, a2, nu, otm.label_mismatch)
            got = otm.distance(a1, a2, nu_str=nu)
            assert got.d == pytest.approx(want, rel=1e-6, abs=1e-6)
            assert got.d_bar == pytest.approx(want / (a1.total_mass() + a2.total_mass()), rel=1e-6, abs=1e-9)


def test_plan_is_feasible_for_program6_and_costs_d():
    rng = np.random.default_rng(5)
    a1, a2 = random_cnn(rng, n_layers=9), random_cnn(rng, n_layers=11)
    otm = OTMANN("cnn")
    r = otm.distance(a1, a2, nu_str=0.3, return_plan=True)
    Z = r.plan
    np.testing.assert_allclose(Z.sum(1), np.append(a1.layer_masses(), a2.total_mass()), rtol=1e-9)
    np.testing.assert_allclose(Z.sum(0), np.append(a2.layer_masses(), a1.total_mass()), rtol=1e-9)
    C_lmm, C_str = otm.cost_matrices(a1, a2)
    C = np.ones((a1.n_layers + 1, a2.n_layers + 1))
    C[-1, -1] = 0
    C[:-1, :-1] = C_lmm + 0.3 * C_str
    assert (Z * C).sum() == pytest.approx(r.d, rel=1e-9)
    assert Z.min() >= -1e-9


@pytest.mark.parametrize("kind", ["cnn", "mlp"])
def test_symmetric_nonnegative_and_zero_on_identical_networks(kind):
    rng = np.random.default_rng(2)
    otm = OTMANN(kind)
    for _ in range(8):
        a = random_architecture(kind, rng, n_layers=int(rng.integers(5, 25)))
        b = random_architecture(kind, rng, n_layers=int(rng.integers(5, 25)))
        d_ab, db_ab = otm.distances(a, b)
        d_ba, db_ba = otm.distances(b, a)
        np.testing.assert_allclose(d_ab, d_ba, rtol=1e-9)
        np.testing.assert_allclose(db_ab, db_ba, rtol=1e-9)
        assert (d_ab > 0).all() and (db_ab > 0).all() and (db_ab <= 1).all()
        same, same_bar = otm.distances(a, Architecture.from_json(a.to_json()))
        assert np.all(same <= 1e-9 * a.total_mass()) and np.all(same_bar <= 1e-9)
        # the same network with its layers renumbered is at distance 0 too
        d_perm, _ = otm.distances(a, permuted(a, rng))
        assert np.all(d_perm <= 1e-9 * a.total_mass())


def test_distance_grows_with_structural_weight_and_units():
    base = random_cnn(7, n_layers=12)
    near = mutate(base, np.random.default_rng(0))
    otm = OTMANN("cnn")
    d, _ = otm.distances(base, random_cnn(8, n_layers=12), nu_strs=(0.0, 0.1, 0.4, 1.6))
    assert np.all(np.diff(d) >= -1e-9)  # the objective is non-decreasing in nu_str
    assert otm.distance(base, near).d < otm.distance(base, random_cnn(8, n_layers=12)).d


@pytest.mark.parametrize("kind", ["cnn", "mlp"])
def test_triangle_inequality_for_d(kind):
    """Thm. 3: d is a pseudo-distance when M satisfies the triangle inequality."""
    rng = np.random.default_rng(21)
    nets = [random_architecture(kind, rng, n_layers=int(rng.integers(5, 16))) for _ in range(10)]
    nets += [mutate(nets[0], rng) for _ in range(3)] + [mutate(nets[1], rng) for _ in range(3)]
    nus = (0.1, 0.2, 0.5, 0.8, 3.0)
    D, _ = otmann_distances(nets, nu_strs=nus)
    n = len(nets)
    checked = 0
    for i, j, k in itertools.permutations(range(n), 3):
        slack = D[:, i, j] + D[:, j, k] - D[:, i, k]
        assert np.all(slack >= -1e-9 * D[:, i, k].max()), (i, j, k, slack)
        checked += 1
    assert checked == n * (n - 1) * (n - 2)


def test_normalised_distance_is_bounded_but_not_a_metric():
    """Sec. 3: d_bar <= 1, and it 'does not satisfy the triangle inequality'."""
    rng = np.random.default_rng(0)
    nets = [random_cnn(int(s), n_layers=int(rng.integers(5, 14))) for s in range(25)]
    _, Db = otmann_distances(nets, nu_strs=(0.1, 0.5, 0.8))
    assert Db.min() >= 0 and Db.max() <= 1
    worst = max((Db[:, i, k] - Db[:, i, j] - Db[:, j, k]).max()
                for i, j, k in itertools.permutations(range(len(nets)), 3))
    assert worst > 1e-4


def test_fig3_networks_are_at_distance_zero():
    left, right = fig3_pair()
    left.validate(), right.validate()
    assert left.total_mass() == right.total_mass()
    otm = OTMANN("cnn")
    for nu in (0.1, 0.5, 0.8, 5.0):
        r = otm.distance(left, right, nu_str=nu, return_plan=True)
        assert abs(r.d) < 1e-9 and abs(r.d_bar) < 1e-12
        Z = r.plan
        # left layer 2 (16 filters) is split between right layers 2 and 3 (8 each)
        assert Z[2, 2] == pytest.approx(128) and Z[2, 3] == pytest.approx(128)
        assert Z[3, 4] == pytest.approx(left.layer_masses()[3])
        assert Z[:-1, -1].sum() == pytest.approx(0, abs=1e-9)  # nothing unassigned
    # and a real change is seen: 8 + 16 filters instead of 8 + 8
    right2 = Architecture(kind="cnn", labels=right.labels, units=[None, 16, 8, 16, 32, None, 64, None, None],
                          edges=right.edges, strides=right.strides)
    assert otm.distance(left, right2).d > 100


def test_pairwise_matrices_match_single_pairs_and_reuse_features():
    rng = np.random.default_rng(4)
    X = [random_mlp(rng, n_layers=int(rng.integers(4, 12))) for _ in range(5)]
    Y = [random_mlp(rng, n_layers=int(rng.integers(4, 12))) for _ in range(3)]
    otm = OTMANN("mlp")
    D, Db = otm.pairwise(X, nu_strs=DEFAULT_NU_STRS)
    assert D.shape == Db.shape == (4, 5, 5)
    assert np.all(D == D.transpose(0, 2, 1)) and np.all(np.diagonal(D, axis1=1, axis2=2) == 0)
    DXY, DbXY = otm.pairwise(X, Y, nu_strs=(0.2, 0.8))
    assert DXY.shape == (2, 5, 3)
    for i, j in [(0, 0), (4, 2), (2, 1)]:
        r = otm.distance(X[i], Y[j], nu_str=0.8)
        assert DXY[1, i, j] == pytest.approx(r.d, rel=1e-12) and DbXY[1, i, j] == pytest.approx(r.d_bar)
    r = otm.distance(X[1], X[3], nu_str=0.4)
    assert D[2, 1, 3] == pytest.approx(r.d, rel=1e-12)
    d, db = otmann_distance(X[1], X[3], nu_str=0.4)
    assert d == pytest.approx(r.d) and db == pytest.approx(r.d_bar)
    assert any(k[0] == "otmann-labels" for k in X[0]._cache if isinstance(k, tuple))


def test_otmann_rejects_invalid_or_mismatched_networks():
    bad = cnn(["ip", "fc", "softmax", "op"], [None, 8, None, None], chain(4))
    good = random_cnn(0, n_layers=8)
    with pytest.raises(InvalidArchitectureError, match="convolutional"):
        otmann_distance(good, bad)
    with pytest.raises(InvalidArchitectureError, match="different kinds"):
        otmann_distances([good, random_mlp(0, n_layers=6)])
    with pytest.raises(InvalidArchitectureError, match="compares cnn"):
        OTMANN("cnn").distance(good, random_mlp(0, n_layers=6))


# --------------------------------------------------------------------------------------
# kernel
# --------------------------------------------------------------------------------------

def test_kernel_is_eq4():
    rng = np.random.default_rng(1)
    X = [random_cnn(rng, n_layers=int(rng.integers(5, 12))) for _ in range(6)]
    kern = OTMANNKernel("cnn")
    D, Db = kern.distances(X)
    assert D.shape == (4, 6, 6) and D.dtype == torch.float64
    alpha, alpha_bar = 0.7, 1.3
    beta = np.array([1e-4, 2e-4, 0.0, 5e-5])
    beta_bar = np.array([1.0, 0.5, 2.0, 0.1])
    K = kern.gram(D, Db, alpha=alpha, alpha_bar=alpha_bar, beta=beta, beta_bar=beta_bar)
    i, j = 1, 4
    want = alpha * np.exp(-(beta * D[:, i, j].numpy()).sum()) + \
        alpha_bar * np.exp(-(beta_bar * Db[:, i, j].numpy() ** 2).sum())
    assert float(K[i, j]) == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(torch.diagonal(K).numpy(), alpha + alpha_bar)
    # batched hyper-parameters (posterior samples)
    KS = otmann_kernel(D, Db, alpha=torch.tensor([alpha, 2.0]), alpha_bar=torch.tensor([alpha_bar, 0.0]),
                       beta=torch.tensor(np.stack([beta, beta])), beta_bar=torch.tensor(np.stack([beta_bar, beta_bar])))
    assert KS.shape == (2, 6, 6)
    torch.testing.assert_close(KS[0], K)
    torch.testing.assert_close(KS[1], 2.0 * torch.exp(-torch.tensordot(torch.tensor(beta), D, 1)))
    # direct call on architectures
    K2 = kern(X, alpha=alpha, alpha_bar=alpha_bar, beta=beta, beta_bar=beta_bar)
    torch.testing.assert_close(K2, K)


def _eq4_by_hand(D, Db, alpha, alpha_bar, beta, beta_bar, p, p_bar):
    """Eq. 4 entry by entry, with plain Python floats."""
    m, n1, n2 = D.shape
    K = np.empty((n1, n2))
    for i in range(n1):
        for j in range(n2):
            s = sum(float(beta[k]) * max(float(D[k, i, j]), 0.0) ** p for k in range(m))
            sb = sum(float(beta_bar[k]) * max(float(Db[k, i, j]), 0.0) ** p_bar for k in range(m))
            K[i, j] = float(alpha) * np.exp(-s) + float(alpha_bar) * np.exp(-sb)
    return K


@pytest.mark.parametrize("p, p_bar", [(1.0, 2.0), (2.0, 1.0), (1.5, 0.5)])
def test_eq4_function_equals_the_formula_on_random_distances(p, p_bar):
    rng = np.random.default_rng(int(10 * p + p_bar))
    m, n1, n2, S = 4, 7, 5, 3
    D = rng.uniform(0.0, 80.0, size=(m, n1, n2))
    Db = rng.uniform(0.0, 1.0, size=(m, n1, n2))
    D[0, 0, 0] = -1e-12  # round-off below 0 counts as 0
    alpha, alpha_bar = rng.uniform(0.1, 3.0, size=S), rng.uniform(0.1, 3.0, size=S)
    beta, beta_bar = rng.uniform(0.0, 0.05, size=(S, m)), rng.uniform(0.0, 4.0, size=(S, m))
    want = np.stack([_eq4_by_hand(D, Db, alpha[s], alpha_bar[s], beta[s], beta_bar[s], p, p_bar) for s in range(S)])
    # NumPy in, NumPy out; one sample or all at once
    got = eq4.otmann_kernel(D, Db, alpha=alpha, alpha_bar=alpha_bar, beta=beta, beta_bar=beta_bar, p=p, p_bar=p_bar)
    assert isinstance(got, np.ndarray) and got.shape == (S, n1, n2)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    one = eq4.otmann_kernel(D, Db, alpha=alpha[1], alpha_bar=alpha_bar[1], beta=beta[1], beta_bar=beta_bar[1], p=p,
                            p_bar=p_bar)
    assert one.shape == (n1, n2)
    np.testing.assert_allclose(one, want[1], rtol=1e-13, atol=0)
    # torch in, torch out, the same numbers; the kernel layer's function is this one
    got_t = eq4.otmann_kernel(torch.tensor(D), torch.tensor(Db), alpha=torch.tensor(alpha),
                              alpha_bar=torch.tensor(alpha_bar),
                              beta=torch.tensor(beta), beta_bar=torch.tensor(beta_bar), p=p, p_bar=p_bar)
    assert isinstance(got_t, torch.Tensor) and got_t.dtype == torch.float64
    np.testing.assert_allclose(got_t.numpy(), want, rtol=1e-13, atol=0)
    assert torch.equal(otmann_kernel(D, Db, alpha=alpha, alpha_bar=alpha_bar, beta=beta, beta_bar=beta_bar, p=p,
                                     p_bar=p_bar), got_t)
    # mixed batching: shared beta, batched alpha
    mixed = eq4.otmann_kernel(D, Db, alpha=alpha, alpha_bar=0.5, beta=beta[0], beta_bar=beta_bar[0], p=p, p_bar=p_bar)
    want_mixed = np.stack([_eq4_by_hand(D, Db, alpha[s], 0.5, beta[0], beta_bar[0], p, p_bar) for s in range(S)])
    np.testing.assert_allclose(mixed, want_mixed, rtol=1e-13, atol=0)
    # the two halves compose to the kernel, and leave their inputs alone
    E, Eb = eq4.kernel_exponents(D, Db, beta=beta, beta_bar=beta_bar, p=p, p_bar=p_bar)
    E0, Eb0 = E.copy(), Eb.copy()
    assert np.array_equal(eq4.kernel_from_exponents(E, Eb, alpha=alpha, alpha_bar=alpha_bar), got)
    assert np.array_equal(E, E0) and np.array_equal(Eb, Eb0)
    Ep, Ebp = eq4.kernel_exponents(eq4.powered(D, p), eq4.powered(Db, p_bar), beta=beta, beta_bar=beta_bar, p=1.0,
                                   p_bar=1.0)
    assert np.array_equal(Ep, E) and np.array_equal(Ebp, Eb)


def test_eq4_rejects_mismatched_shapes():
    D = np.zeros((4, 2, 3))
    with pytest.raises(ValueError, match="D and D_bar"):
        eq4.otmann_kernel(D, np.zeros((4, 3, 2)), alpha=1.0, alpha_bar=1.0, beta=np.ones(4), beta_bar=np.ones(4))
    with pytest.raises(ValueError, match="beta"):
        eq4.otmann_kernel(D, D, alpha=1.0, alpha_bar=1.0, beta=np.ones(3), beta_bar=np.ones(4))
    with pytest.raises(ValueError, match="alpha"):
        eq4.otmann_kernel(D, D, alpha=np.ones((2, 2)), alpha_bar=1.0, beta=np.ones(4), beta_bar=np.ones(4))


def test_gp_kernel_is_the_eq4_function():
    from graphbo.models.otmann_gp import OTMANNGP, OTMANNHyperSample

    rng = np.random.default_rng(4)
    X = [random_mlp(rng, n_layers=int(rng.integers(4, 10))) for _ in range(5)]
    gp = OTMANNGP("mlp", p=1.0, p_bar=2.0)
    D, Db = OTMANN("mlp").pairwise(X, None, nu_strs=gp.nu_strs)
    def sample():
        log_alpha, log_alpha_bar, log_noise = rng.normal(size=3)
        return OTMANNHyperSample(mean=0.0, log_alpha=log_alpha, log_alpha_bar=log_alpha_bar, log_noise=log_noise,
                                 log_beta=rng.uniform(-9, -3, 4), log_beta_bar=rng.uniform(-1, 1, 4))

    samples = [sample() for _ in range(3)]
    K = gp._kernel(D, Db, samples)
    for s, smp in enumerate(samples):
        np.testing.assert_allclose(K[s], _eq4_by_hand(D, Db, smp.alpha, smp.alpha_bar, smp.beta, smp.beta_bar,
                                                      1.0, 2.0), rtol=1e-13, atol=0)


def test_project_psd_repairs_indefinite_and_keeps_psd():
    K = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    P = project_psd(K)
    np.testing.assert_allclose(P, 1.5 * np.ones((2, 2)), atol=1e-12)
    rng = np.random.default_rng(0)
    A = rng.normal(size=(8, 8))
    S = A + A.T
    lam = np.linalg.eigvalsh(S)
    assert lam.min() < -0.1
    P = project_psd(torch.tensor(S))
    assert isinstance(P, torch.Tensor)
    lp = np.linalg.eigvalsh(P.numpy())
    assert lp.min() >= -1e-10
    # the projection moves K by exactly its negative spectrum (nearest PSD matrix)
    assert np.linalg.norm(P.numpy() - S) == pytest.approx(np.sqrt((lam[lam < 0] ** 2).sum()))
    np.testing.assert_allclose(lp[lp > 1e-8], np.sort(lam[lam > 0]), rtol=1e-9)
    # a PSD matrix comes back untouched
    G = A @ A.T
    assert project_psd(G) is G
    Gt = torch.tensor(G)
    assert project_psd(Gt) is Gt
    # batches: only the indefinite member changes
    B = torch.stack([torch.tensor(G), torch.tensor(S)])
    PB = project_psd(B)
    assert torch.equal(PB[0], B[0]) and torch.allclose(PB[1], P)


def test_kernel_gram_with_psd_repair_is_choleskyable():
    rng = np.random.default_rng(9)
    X = [random_mlp(rng, n_layers=int(rng.integers(4, 14))) for _ in range(12)]
    kern = OTMANNKernel("mlp")
    D, Db = kern.distances(X)
    K = kern.gram(D, Db, alpha=1.0, alpha_bar=1.0, beta=np.full(4, 1e-3), beta_bar=np.full(4, 3.0), psd=True)
    assert torch.linalg.eigvalsh(K).min() >= -1e-10
    torch.linalg.cholesky(K + 1e-8 * torch.eye(12, dtype=torch.float64))
