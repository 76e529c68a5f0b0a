"""The benchmarks beyond the papers: LABS, the 53-D mixed Ackley, the integer-heavy
hyper-parameter surface, RNA inverse folding (ViennaRNA) and IOH's PBO problems."""

import math
import pickle
import subprocess
import sys

import numpy as np
import pytest

from graphbo._lazy import MissingExtraError
from graphbo.benchmarks import REGISTRY, load_benchmark
from graphbo.benchmarks.ackley_mixed import Ackley53
from graphbo.benchmarks.hpo_surface import ACTIVATIONS, OPTIMIZERS, HPOSurface
from graphbo.benchmarks.labs import LABS, OPTIMAL_ENERGY, energy, merit_factor
from graphbo.storage.info import load_study_file


def all_bits(n):
    return (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1


# -- LABS -----------------------------------------------------------------------------------------
def test_labs_by_hand():
    # s = (+1, +1, -1): C_1 = 1 - 1 = 0, C_2 = -1, E = 1, F = 9 / 2
    assert energy([1, 1, 0]) == 1
    assert LABS(3).evaluate_index([1, 1, 0]) == pytest.approx(-4.5)
    # all +1, n = 4: C = (3, 2, 1), E = 14, F = 16 / 28
    assert LABS(4).evaluate_index([1, 1, 1, 1]) == pytest.approx(-16 / 28)
    # Barker 13 (+++++--++-+-+): every |C_k| <= 1, C_k = 0 for odd k, so E = 6 and F = 169 / 12
    barker = [1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1]
    assert energy(barker) == 6
    assert LABS(13)({f"x{i}": bool(b) for i, b in enumerate(barker)}) == pytest.approx(-169 / 12)


def test_labs_optimal_energies_by_brute_force():
    for n in range(3, 17):
        bits = all_bits(n)
        assert energy(bits).min() == OPTIMAL_ENERGY[n], n
        assert LABS(n).evaluate_batch(bits).min() == pytest.approx(LABS(n).optimum)
    assert LABS(50).optimum == pytest.approx(-2500 / 306)  # E*(50) = 153
    assert LABS(67).optimum is None


def test_labs_symmetries_and_space():
    b = LABS()
    assert len(b.space) == 50 and b.name == "labs"
    x = np.random.default_rng(0).integers(0, 2, size=(20, 50))
    v = b.evaluate_batch(x)
    assert np.allclose(v, b.evaluate_batch(1 - x)) and np.allclose(v, b.evaluate_batch(x[:, ::-1]))
    assert np.allclose(v, [b(b.space.from_index(r)) for r in x])
    assert np.all(v >= b.optimum)
    assert np.allclose(-v, merit_factor(x))


def test_labs_validation_names_the_argument():
    with pytest.raises(ValueError, match="n must be >= 3"):
        LABS(2)
    with pytest.raises(ValueError, match="0, 1"):
        LABS(3).evaluate_index([0, 2, 1])


# -- 53-D mixed Ackley ------------------------------------------------------------------------------
def ackley_by_hand(z):
    z = np.asarray(z, dtype=float)
    return (-20 * math.exp(-0.2 * math.sqrt(np.mean(z * z))) - math.exp(np.mean(np.cos(2 * math.pi * z)))
            + 20 + math.e)


def test_ackley53_optimum_and_location():
    b = Ackley53()
    assert len(b.space) == 53 and b.space.is_discrete is False
    assert b.optimum == 0.0 and b(b.optimal_config) == pytest.approx(0.0, abs=1e-12)
    assert b.evaluate_index(b.space.to_index(b.optimal_config)) == pytest.approx(0.0, abs=1e-12)
    for name in ("b0", "b17", "b49"):  # one bit on: 20 (1 - exp(-0.2 sqrt(1/53)))
        c = dict(b.optimal_config, **{name: True})
        assert b(c) == pytest.approx(20 * (1 - math.exp(-0.2 * math.sqrt(1 / 53))))
    for name in ("x0", "x2"):
        for x in (-1e-3, 1e-3, 0.5):
            assert b(dict(b.optimal_config, **{name: x})) > 1e-9
    rows = b.space.sample_index(300, seed=1)
    assert np.all(b.evaluate_batch(rows) > 0)


def test_ackley53_values_by_hand():
    b = Ackley53()
    rng = np.random.default_rng(3)
    for _ in range(5):
        bits = rng.integers(0, 2, 50)
        x = rng.uniform(-1, 1, 3)
        config = {**{f"b{i}": bool(v) for i, v in enumerate(bits)}, **{f"x{j}": float(v) for j, v in enumerate(x)}}
        expect = ackley_by_hand(np.concatenate([bits, x]))  # bits as 0/1 themselves, x on [-1, 1]
        assert b(config) == pytest.approx(expect, rel=1e-12)
        assert b.evaluate_index(b.space.to_index(config)) == pytest.approx(expect, rel=1e-9)


# -- integer-heavy hyper-parameter surface ---------------------------------------------------------
@pytest.fixture(scope="module")
def hpo():
    return HPOSurface()


def test_hpo_space_is_integer_heavy(hpo):
    sizes = {n: int(hpo.space[n].n_values) for n in ("lr_step", "batch_size", "width", "epochs")}
    assert sizes == {"lr_step": 301, "batch_size": 497, "width": 1017, "epochs": 200}
    assert all(hpo.space[n].kind == "ordinal" for n in sizes)
    assert hpo.space["optimizer"].kind == "categorical" and hpo.space["batch_norm"].kind == "binary"


def test_hpo_surface_splits_into_the_blocks_the_solver_uses(hpo):
    # f(l, b, w, e) = g(l, b) + h(w, e) for fixed choices: exchanging the (w, e) blocks keeps the sum
    rng = np.random.default_rng(0)
    for _ in range(20):
        opt, act = rng.choice(list(OPTIMIZERS)), rng.choice(list(ACTIVATIONS))
        bn = bool(rng.integers(2))
        l1, l2 = rng.integers(0, 301, 2)
        b1, b2 = rng.integers(16, 513, 2)
        w1, w2 = rng.integers(8, 1025, 2)
        e1, e2 = rng.integers(1, 201, 2)

        def f(lr, bs, w, e):
            return float(hpo.value(lr_step=lr, batch_size=bs, width=w, epochs=e, optimizer=opt, activation=act,
                                   batch_norm=bn))

        assert f(l1, b1, w1, e1) + f(l2, b2, w2, e2) == pytest.approx(f(l1, b1, w2, e2) + f(l2, b2, w1, e1))


def test_hpo_optimum_is_a_minimum(hpo):
    best, config = hpo.optimum, hpo.optimal_config
    assert hpo(config) == pytest.approx(best)
    row = hpo.space.to_index(config)
    for j, var in enumerate(hpo.space.variables):  # every neighbour in the product graph is worse
        for k in range(var.n_values):
            if k != row[j] and (var.kind != "ordinal" or abs(k - row[j]) == 1):
                other = row.copy()
                other[j] = k
                assert hpo.evaluate_index(other) > best
    for other in hpo.space.sample_index(3000, seed=2):
        assert hpo.evaluate_index(other) >= best
    # the optimum is inside the ranges, not on an edge
    assert 0 < config["lr_step"] < 300 and 16 < config["batch_size"] < 512
    assert 8 < config["width"] < 1024 and 1 < config["epochs"] < 200


def test_hpo_learning_rate_follows_the_batch_size(hpo):
    def best_lr_step(batch):
        values = hpo.value(lr_step=np.arange(301), batch_size=batch, width=128, epochs=50, optimizer="sgd",
                           activation="relu", batch_norm=False)
        return int(np.argmin(values))

    small, large = best_lr_step(32), best_lr_step(256)
    # linear scaling: 8 times the batch, log10(8) higher log10 lr, i.e. 60 log10(8) = 54 steps
    assert large - small == pytest.approx(60 * math.log10(8), abs=1)


# -- RNA inverse folding ---------------------------------------------------------------------------
def test_rna_known_solutions_fold_into_their_targets():
    pytest.importorskip("RNA")
    from graphbo.benchmarks.rna_folding import TARGETS, RNAFolding

    for key, (_, structure, solution) in TARGETS.items():
        b = RNAFolding(key)
        assert b.n == len(structure) == len(solution)
        assert b.fold(solution)[0] == structure
        assert b.value_of_sequence(solution) == 0.0 == b.optimum
        config = {f"s{i}": ch for i, ch in enumerate(solution)}
        assert b(config) == 0.0 == b.evaluate_index(b.space.to_index(config))


def test_rna_value_by_hand():
    pytest.importorskip("RNA")
    from graphbo.benchmarks.rna_folding import RNAFolding

    b = RNAFolding()  # Tripod5, 38 nt, 24 paired positions
    assert b.target.count("(") == b.target.count(")") == 12
    poly_a = "A" * 38  # A pairs with nothing: the MFE structure is open, 24 positions differ
    assert b.fold(poly_a)[0] == "." * 38
    assert b.value_of_sequence(poly_a) == pytest.approx(24 / 38)
    weighted = RNAFolding(energy_weight=0.5)
    gap = weighted._compound(poly_a).eval_structure(b.target) - 0.0  # the open structure has energy 0
    assert gap > 0 and weighted.value_of_sequence(poly_a) == pytest.approx(24 / 38 + 0.5 * gap)
    assert weighted.value_of_sequence(weighted.known_solution) == 0.0
    hairpin = RNAFolding("((((....))))")
    assert hairpin.n == 12 and hairpin.known_solution is None
    assert hairpin.value_of_sequence("GGGGAAAACCCC") == 0.0  # a GC stem closes the loop
    assert pickle.loads(pickle.dumps(b)).value_of_sequence(poly_a) == b.value_of_sequence(poly_a)


@pytest.mark.parametrize("target, match", [("(()", "unclosed"), ("())(", "closes no"), ("((x))", "'x'"),
                                           ("", "dot-bracket")])
def test_rna_bad_target_is_named(target, match):
    pytest.importorskip("RNA")
    from graphbo.benchmarks.rna_folding import RNAFolding

    with pytest.raises(ValueError, match=match):
        RNAFolding(target)


def test_rna_without_viennarna_is_one_line(monkeypatch):
    from graphbo.benchmarks.rna_folding import RNAFolding

    monkeypatch.setitem(sys.modules, "RNA", None)  # as if viennarna were not installed
    with pytest.raises(MissingExtraError, match=r'pip install "graphbo\[rna\]"') as info:
        RNAFolding()
    assert "\n" not in str(info.value)


# -- IOH's PBO problems ----------------------------------------------------------------------------
def test_pbo_table_matches_ioh_and_the_registry():
    ioh = pytest.importorskip("ioh")
    from graphbo.benchmarks.ioh_pbo import PBO_PROBLEMS

    assert PBO_PROBLEMS == dict(ioh.problem.PBO.problems)
    for pid in PBO_PROBLEMS:
        assert REGISTRY[f"pbo-{pid}"].target == f"graphbo.benchmarks.ioh_pbo:PBO{pid}"


def test_pbo_values_are_ioh_values_negated():
    pytest.importorskip("ioh")
    rng = np.random.default_rng(0)
    one_max, leading_ones = load_benchmark("pbo-1"), load_benchmark("pbo-2")
    assert one_max.name == "pbo-1" and len(one_max.space) == 64 and one_max.optimum == -64.0
    for x in rng.integers(0, 2, size=(10, 64)):
        assert one_max.evaluate_index(x) == -x.sum()
        leading = int(np.argmin(x)) if not x.all() else 64
        assert leading_ones.evaluate_index(x) == -leading
    assert one_max.evaluate_index(np.zeros(64, int)) == 0.0 and math.copysign(1, one_max.evaluate_index(
        np.zeros(64, int))) == 1.0  # no -0.0
    # ioh's LABS is the merit factor: the same as graphbo's LABS
    ioh_labs, labs = load_benchmark("pbo-18", dimension=50), LABS(50)
    assert ioh_labs.optimum is None
    for x in rng.integers(0, 2, size=(10, 50)):
        assert ioh_labs.evaluate_index(x) == pytest.approx(labs.evaluate_index(x), rel=1e-12)


def test_pbo_trap_optimum_only_on_whole_blocks():
    pytest.importorskip("ioh")
    from graphbo.benchmarks.ioh_pbo import PBO

    whole = PBO(24, dimension=65)
    assert whole.optimum == whole.evaluate_index(np.ones(65, int)) == -13.0
    partial = PBO(24, dimension=64)
    assert partial.optimum is None
    # ioh reports 8.75 (all ones) here, which the all-zero string beats
    assert partial.evaluate_index(np.zeros(64, int)) < partial.evaluate_index(np.ones(64, int)) == -8.75


def test_pbo_arguments_and_pickling():
    pytest.importorskip("ioh")
    from graphbo.benchmarks.ioh_pbo import PBO

    with pytest.raises(ValueError, match="dimension=50"):
        PBO(21, dimension=50)  # the triangular Ising model needs a perfect square
    with pytest.raises(ValueError, match="problem must be <= 25"):
        PBO(26)
    b = load_benchmark("pbo-22", dimension=16, instance=2)
    x = np.random.default_rng(1).integers(0, 2, 16)
    copy = pickle.loads(pickle.dumps(b))
    assert type(copy).__name__ == "PBO22" and copy.evaluate_index(x) == b.evaluate_index(x)


def test_pbo_without_ioh_is_one_line(monkeypatch):
    from graphbo.benchmarks.ioh_pbo import PBO

    monkeypatch.setitem(sys.modules, "ioh", None)
    with pytest.raises(MissingExtraError, match=r'pip install "graphbo\[ioh\]"'):
        PBO(18)


# -- registry and command line ---------------------------------------------------------------------
@pytest.mark.parametrize("name, module", [("labs", None), ("ackley53", None), ("hpo-surface", None),
                                          ("rna-folding", "RNA"), ("pbo-19", "ioh")])
def test_registered_and_loadable(name, module):
    if module:
        pytest.importorskip(module)
    assert REGISTRY[name].needs == ()
    b = load_benchmark(name)
    assert b.name == name and b.optimum is not None
    rows = b.space.sample_index(5, seed=0)
    values = [b.evaluate_index(r) for r in rows]
    assert all(math.isfinite(v) and v >= b.optimum - 1e-12 for v in values)
    assert values == pytest.approx([b(b.space.from_index(r)) for r in rows])


def test_cli_runs_labs(tmp_path):
    path = tmp_path / "labs.db"
    out = subprocess.run([sys.executable, "-m", "graphbo", "run", "labs", "--budget", "5", "--seed", "2",
                          "--storage", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    evals = [{"config": t.config, "value": t.value} for t in load_study_file(path).trials]
    assert len(evals) == 5
    b = LABS()
    for e in evals:
        assert e["value"] == pytest.approx(b(e["config"])) and e["value"] >= b.optimum
