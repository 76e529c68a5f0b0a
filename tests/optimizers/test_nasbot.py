"""NASBOT: architecture space, exact batched OTMANN, the OTMANN GP, NASBOT/RAND/EA, studies and the CLI."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import graphbo as gb
from graphbo.loop import minimize
from graphbo.models.otmann_gp import OTMANNGP, _psd_repair
from graphbo.nas.domain.architecture import Architecture, InvalidArchitectureError
from graphbo.nas.domain.constraints import Constraints
from graphbo.nas.domain.modifiers import mutate
from graphbo.nas.training.objectives import SyntheticArchitectureObjective
from graphbo.nas.distance.otmann import OTMANN
from graphbo.nas.distance.otmann_batch import BatchOTMANN, DistanceCache
from graphbo.nas.domain.space import ArchitectureSpace
from graphbo.optimizers import METHODS
from graphbo.optimizers.nasbot import NASBOT, NASEvolution, NASRandom
from graphbo.storage.info import load_study_file, read_study_info
from graphbo.study import StorageError, Study

TESTS = str(Path(__file__).resolve().parent)
DOMAIN = "mlp-class"  # the synthetic MLP objective separates methods quickly and its distances are cheap
#: small settings that keep a NASBOT step well under a second
FAST = {"n_burn": 20, "n_samples": 3, "ea_evaluations": 30}


def networks(domain, n, seed=0):
    """The initial pool followed by mutations of it: a realistic mix of networks."""
    space = ArchitectureSpace(domain)
    out = space.initial_pool()
    rng = np.random.default_rng(seed)
    while len(out) < n:
        child = mutate(out[int(rng.integers(len(out)))], rng, is_valid=space.constraints)
        if child is not None:
            out.append(child)
    return out[:n]


def run(opt, objective, budget):
    trace = []
    for _ in range(budget):
        config = opt.ask()
        value = objective(config)
        opt.tell(config, value)
        trace.append((json.dumps(config, sort_keys=True), value))
    return trace


# -- the architecture space ------------------------------------------------------------------------------
@pytest.mark.parametrize("domain", ["cnn", "mlp-reg", "mlp-class"])
def test_space_rows_round_trip_and_sampling(domain):
    space = ArchitectureSpace(domain)
    assert len(space.initial_pool()) == 10
    archs = space.initial_pool() + space.sample_architectures(15, seed=1)
    rows = [space.to_index(a.to_dict()) for a in archs]
    assert len({r.tobytes() for r in rows}) == len({json.dumps(a.to_dict()) for a in archs})
    for a, r in zip(archs, rows):
        assert r.dtype == np.int64 and space.from_index(r) == a.to_dict()
        assert space.from_index(r.tolist()) == a.to_dict()  # as read back from JSON
    for c in space.sample(5, seed=2):
        space.validate(c)
        assert json.loads(json.dumps(c)) == c
    assert space.sample(3, seed=7) == space.sample(3, seed=7)


def test_space_rejects_bad_networks_with_the_reason():
    space = ArchitectureSpace("cnn")
    good = space.initial_pool()[3].to_dict()
    cases = {
        "takes CNN networks": dict(good, kind="mlp"),
        "unknown key": dict(good, colour="red"),
        "missing key": {k: v for k, v in good.items() if k != "edges"},
        "not a pair": dict(good, edges=[[0, 1, 2]]),
        "unit counts for": dict(good, labels=good["labels"][:-1]),
        "cycle": dict(good, edges=good["edges"] + [[5, 2]]),
        "2000 units > 1024": dict(good, units=[u if u is None else 2000 for u in good["units"]]),
        "a dict": "conv3",
    }
    for message, bad in cases.items():
        with pytest.raises(ValueError, match=message):
            space.to_index(bad)
    mlp = ArchitectureSpace("mlp-reg")
    classifier = ArchitectureSpace("mlp-class").initial_pool()[0].to_dict()
    with pytest.raises(InvalidArchitectureError, match="'linear' decision layers"):
        mlp.to_index(classifier)
    tight = ArchitectureSpace("cnn", constraints=Constraints(max_layers=12))
    assert all(a.n_layers <= 12 for a in tight.initial_pool())
    with pytest.raises(InvalidArchitectureError, match="constraints: 27 layers exceed"):
        tight.to_index(space.initial_pool()[2])


def test_tell_validates_at_the_boundary_and_stores_nothing():
    opt = NASRandom(DOMAIN, seed=0)
    config = opt.ask()
    bad = dict(config, units=config["units"][:-1])
    with pytest.raises(ValueError, match="unit counts"):
        opt.tell(bad, 0.5)
    with pytest.raises(ValueError, match="not finite"):
        opt.tell(config, float("nan"))
    with pytest.raises(ValueError, match="takes MLP networks"):
        opt.tell(ArchitectureSpace("cnn").initial_pool()[0], 0.5)
    assert opt.n_told == 0 and opt.n_pending == 1
    opt.tell(Architecture.from_dict(config), 0.5)  # an Architecture object is accepted too
    assert opt.n_told == 1 and opt.n_pending == 0
    with pytest.raises(TypeError, match="ArchitectureSpace"):
        NASBOT(gb.Space({"x": gb.Binary()}))
    with pytest.raises(TypeError, match="graphbo.Space"):
        gb.COMBO(ArchitectureSpace("cnn"))


# -- exact batched OTMANN ----------------------------------------------------------------------------------
@pytest.mark.parametrize("domain", ["cnn", "mlp-reg"])
def test_batched_distances_equal_otmann_pairwise(domain):
    archs = networks(domain, 24, seed=3)
    cands = networks(domain, 36, seed=4)[18:]
    ot = OTMANN("cnn" if domain == "cnn" else "mlp")
    batch = BatchOTMANN(ot)
    D_ref, Db_ref = ot.pairwise(cands, archs)
    D, Db = batch.cross(cands, archs)
    assert D.shape == (4, len(cands), len(archs))
    np.testing.assert_allclose(D, D_ref, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(Db, Db_ref, rtol=1e-9, atol=1e-12)
    assert batch.solves < 4 * 2 * len(cands) * len(archs)  # classes and linear stretches save solves
    # the incremental cache gives the full symmetric matrices, reusing remembered candidate rows
    cache = DistanceCache(batch)
    cache.extend(archs[:10])
    cache.rows(archs[10:14])  # scored as candidates first...
    before = cache.pairs_computed
    cache.extend(archs[10:])  # ...then evaluated: only their distances to later networks are new
    assert cache.pairs_computed - before == sum(range(4)) + sum(range(14, 24))
    full, full_bar = ot.pairwise(archs)
    np.testing.assert_allclose(cache.D, full, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(cache.D_bar, full_bar, rtol=1e-9, atol=1e-12)
    assert np.array_equal(cache.D, cache.D.transpose(0, 2, 1)) and not cache.D[:, range(24), range(24)].any()


@pytest.mark.parametrize("domain", ["cnn", "mlp-reg"])
def test_batched_distances_threads_give_identical_results(domain):
    archs = networks(domain, 20, seed=6)
    cands = networks(domain, 27, seed=7)[13:]
    ot = OTMANN("cnn" if domain == "cnn" else "mlp")
    serial, threaded = BatchOTMANN(ot, n_jobs=1), BatchOTMANN(ot, n_jobs=2)
    assert BatchOTMANN(ot).n_jobs == min(2, os.cpu_count() or 1)
    D1, Db1 = serial.cross(cands, archs)
    D2, Db2 = threaded.cross(cands, archs)
    assert np.array_equal(D1, D2) and np.array_equal(Db1, Db2)  # bit for bit
    assert serial.solves == threaded.solves > 0
    D3, Db3 = BatchOTMANN(ot, n_jobs=3).cross(cands, threaded.stack(archs))  # uneven blocks, a stack
    assert np.array_equal(D1, D3) and np.array_equal(Db1, Db3)
    d1, _ = serial.cross(cands[:1], archs)  # one row: serial path whatever n_jobs
    d2, _ = threaded.cross(cands[:1], archs)
    assert np.array_equal(d1, d2) and np.array_equal(d1, D1[:, :1])


# -- the GP ---------------------------------------------------------------------------------------------
def test_gp_interpolates_its_data_and_its_gram_is_psd():
    archs = networks("cnn", 18, seed=5)
    y = np.array([SyntheticArchitectureObjective("cnn")(a) for a in archs])
    gp = OTMANNGP("cnn", n_burn=40, n_samples=5, noise_bounds=(1e-6, 1e-4))
    gp.fit(archs, y, rng=np.random.default_rng(0))
    assert len(gp.samples) == 5
    for s in gp.samples:
        assert np.isfinite([s.mean, s.log_alpha, s.log_alpha_bar, s.log_noise]).all()
        assert np.isfinite(s.log_beta).all() and np.isfinite(s.log_beta_bar).all()
        assert 1e-9 <= s.beta.min() and s.beta.max() <= 1e-3 and 0.1 <= s.beta_bar.min() <= s.beta_bar.max() <= 100
    post = gp.posterior(archs)
    mean, var = post.mean.numpy(), post.variance.numpy()
    assert mean.shape == var.shape == (5, 18)
    np.testing.assert_allclose(mean, np.broadcast_to(y, mean.shape), atol=0.02 * y.std())
    assert (var >= 0).all() and (var < 0.05 * y.var()).all()
    K = gp.training_gram()
    for k in K:
        lam = np.linalg.eigvalsh(k)
        assert lam.min() >= -1e-9 * lam.max()
    # away from the data the variance is larger
    new = networks("cnn", 40, seed=6)[30:]
    var_new = gp.posterior(new).variance.numpy()
    assert var_new.mean() > 10 * var.mean()


def test_indefinite_gram_matrices_are_projected():
    rng = np.random.default_rng(0)
    V = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    K = (V * np.array([-0.3, -1e-3, 0.5, 1.0, 2.0, 3.0])) @ V.T
    R = _psd_repair(K)
    lam = np.linalg.eigvalsh(R)
    assert lam.min() > -1e-12 and np.allclose(lam, np.sort([0, 0, 0.5, 1.0, 2.0, 3.0]), atol=1e-10)
    psd = (V * np.array([1e-3, 0.1, 0.5, 1.0, 2.0, 3.0])) @ V.T
    assert _psd_repair(psd) is psd  # PSD matrices are left alone


# -- NASBOT, RAND, EA -------------------------------------------------------------------------------------
def test_methods_are_registered_and_exported():
    assert METHODS["nasbot"] is NASBOT and METHODS["rand"] is NASRandom and METHODS["ea"] is NASEvolution
    assert gb.NASBOT is NASBOT and gb.ArchitectureSpace is ArchitectureSpace
    assert isinstance(NASBOT("cnn").space, ArchitectureSpace)


def test_initial_design_is_the_pool_then_suggestions_are_new_valid_and_distinct():
    space = ArchitectureSpace(DOMAIN)
    f = SyntheticArchitectureObjective(DOMAIN)
    opt = NASBOT(space, seed=1, **FAST)
    pool = [a.to_dict() for a in space.initial_pool()]
    for i in range(10):
        c = opt.ask()
        assert c == pool[i]
        opt.tell(c, f(c))
    batch = opt.ask(3)
    assert len(batch) == 3
    keys = [space.key(space.architecture(c)) for c in batch]
    told = {space.key(a) for a in opt.architectures}
    assert len(set(keys)) == 3 and not set(keys) & told
    for c in batch:
        space.validate(c)
    for c in batch:
        opt.tell(c, f(c))
    run(opt, f, 4)
    keys = [space.key(a) for a in opt.architectures]
    assert len(keys) == len(set(keys)) == 17
    t = opt.last_timing
    assert t["distances"] > 0 and t["fit"] >= 0 and t["acquisition"] > 0 and t["ea_evaluations"] == 30


@pytest.mark.parametrize("cls, options", [(NASRandom, {"ea_evaluations": 30}), (NASEvolution, {})])
def test_baselines_never_repeat_and_stay_valid(cls, options):
    space = ArchitectureSpace("cnn", constraints=Constraints(max_layers=30))
    f = SyntheticArchitectureObjective("cnn")
    opt = cls(space, seed=0, **options)
    run(opt, f, 24)
    keys = [space.key(a) for a in opt.architectures]
    assert len(set(keys)) == 24 and all(a.n_layers <= 30 for a in opt.architectures)
    more = opt.ask(4)
    assert len({space.key(space.architecture(c)) for c in more} - set(keys)) == 4


def test_nasbot_is_reproducible_and_its_state_round_trips():
    f = SyntheticArchitectureObjective(DOMAIN)
    a = NASBOT(DOMAIN, seed=3, **FAST)
    b = NASBOT(DOMAIN, seed=3, **FAST)
    trace_a = run(a, f, 12)
    assert run(b, f, 12) == trace_a
    assert run(NASBOT(DOMAIN, seed=4, **FAST), f, 12) != trace_a
    state = json.loads(json.dumps(a.get_state()))
    c = NASBOT(DOMAIN, seed=99, **FAST)
    for cfg, value in trace_a:
        c.tell(json.loads(cfg), value)
    c.set_state(state)
    nxt = a.ask()
    assert c.ask() == nxt
    for opt in (a, c):
        opt.tell(nxt, f(nxt))
    assert a.ask(2) == c.ask(2)  # pending networks (kriging believer) too
    ea = NASEvolution(DOMAIN, seed=1)
    trace = run(ea, f, 12)
    ea2 = NASEvolution(DOMAIN, seed=2)
    for cfg, value in trace:
        ea2.tell(json.loads(cfg), value)
    ea2.set_state(json.loads(json.dumps(ea.get_state())))
    assert ea.ask(3) == ea2.ask(3)


def test_nasbot_beats_rand_on_the_synthetic_objective():
    f = SyntheticArchitectureObjective(DOMAIN)
    best = {"nasbot": [], "rand": []}
    for seed in range(3):
        for name, cls, opts in (("nasbot", NASBOT, {"n_burn": 20, "n_samples": 4, "ea_evaluations": 40}),
                                ("rand", NASRandom, {"ea_evaluations": 40})):
            opt = cls(DOMAIN, seed=seed, **opts)
            run(opt, f, 16)
            best[name].append(opt.best.value)
    print(best)
    assert np.mean(best["nasbot"]) < np.mean(best["rand"]) - 0.1


# -- studies and the command line --------------------------------------------------------------------------
STUDY_OPTIONS = dict(FAST, n_initial=4)
STUDY_BUDGET = 9


def slow_synthetic(config):  # module level: importable by the killed subprocess
    time.sleep(0.05)
    return SyntheticArchitectureObjective(DOMAIN)(config)


def run_job(path, budget=STUDY_BUDGET):
    return minimize(slow_synthetic, ArchitectureSpace(DOMAIN), method="nasbot", budget=budget, seed=5, storage=path,
                    **STUDY_OPTIONS)


def study_trace(result):
    return [(json.dumps(o.config, sort_keys=True), o.value) for o in result.history]


def test_study_killed_and_resumed_continues_the_same_run(tmp_path):
    reference = study_trace(run_job(str(tmp_path / "full.db")))
    assert len(reference) == STUDY_BUDGET
    path = tmp_path / "killed.db"
    code = f"import sys; sys.path.insert(0, {TESTS!r}); import test_nasbot as t; t.run_job({str(path)!r})"
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
            done = conn.execute("SELECT COUNT(finished) FROM trials").fetchone()[0]
            conn.close()
        except sqlite3.Error:
            done = 0
        if done >= 6:  # past the initial pool: NASBOT's model is in the state
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    info = read_study_info(path)
    assert 6 <= info["n_complete"] < STUDY_BUDGET
    resumed = run_job(str(path))
    assert study_trace(resumed) == reference
    assert [t.number for t in resumed.trials] == list(range(STUDY_BUDGET))
    with pytest.raises(StorageError, match="another space"):
        Study(ArchitectureSpace("cnn"), "nasbot", storage=str(path), seed=5, **STUDY_OPTIONS)


def test_cli_run_writes_its_evaluations(tmp_path):
    path = tmp_path / "run.db"
    out = subprocess.run([sys.executable, "-m", "graphbo", "run", "nas-synthetic", "--method", "nasbot",
                          "--budget", "12", "--seed", "0", "--storage", str(path), "--quiet"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    stored = load_study_file(path)
    assert stored.meta["method"] == "nasbot"
    evals = [{"config": t.config, "value": t.value} for t in stored.trials if t.status == "complete"]
    assert len(evals) == 12
    space = ArchitectureSpace("cnn")
    f = SyntheticArchitectureObjective("cnn")
    keys = set()
    for r in evals:
        arch = space.architecture(r["config"])
        keys.add(space.key(arch))
        assert r["value"] == pytest.approx(f(arch))
    assert len(keys) == 12
    assert read_study_info(path)["best_value"] == pytest.approx(min(r["value"] for r in evals))
    listed = subprocess.run([sys.executable, "-m", "graphbo", "benchmarks"], capture_output=True, text=True)
    for name in ("nas-mlp", "nas-mlp-class", "nas-cnn", "nas-synthetic"):
        assert f"\n{name} " in "\n" + listed.stdout


@pytest.mark.parametrize("domain", ["cnn", "mlp-class"])
def test_drawing_places_every_edge_downwards(domain, tmp_path):
    from graphbo.nas.domain.plot import draw_architecture, layer_rows

    for arch in networks(domain, 20, seed=3)[10:]:  # mutations of the pool: branches, skips
        rows = layer_rows(arch)
        assert all(rows[b] > rows[a] for a, b in arch.edges)
        assert rows[arch.labels.index("ip")] == 0 and max(rows) == rows[arch.labels.index("op")]
    fig = draw_architecture(arch.to_dict(), str(tmp_path / "a.png"))
    assert len(fig.axes[0].texts) == len(arch.labels) + len(arch.edges)  # a box per layer, an arrow per edge
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
