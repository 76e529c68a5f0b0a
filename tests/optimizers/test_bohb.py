"""BOHB (SMAC3's multi-fidelity facade) behind graphbo's ask/tell, and multi-fidelity runs in the runner.

A cheap synthetic multi-fidelity benchmark stands in for NAS + SGD:
``value = f(config) + offset / epochs`` with ``evaluate(config, epochs=k)``,
so a low fidelity ranks configurations exactly as the full one (with
``offset > 0`` it overestimates their values, with ``offset < 0`` it
underestimates them). SMAC's acquisition maximiser runs small
(``n_challengers=200``, one local search) to keep the file fast.
"""

import math
import shutil

import numpy as np
import pytest

pytest.importorskip("smac")

import graphbo as gb  # noqa: E402
from graphbo.benchmarks import REGISTRY, BenchmarkInfo  # noqa: E402
from graphbo.experiments.report import collect  # noqa: E402
from graphbo.experiments.runner import RunSpec, compare, fidelity_best_so_far, run  # noqa: E402
from graphbo.storage import read_run  # noqa: E402
from graphbo.optimizers import METHODS, RandomSearch  # noqa: E402
from graphbo.optimizers.bohb import BOHB, hyperband_fidelities  # noqa: E402

from support import BOHB_FAST as FAST, ToyMF, toy_f, toy_space  # noqa: E402


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setitem(REGISTRY, "toy-mf",
                        BenchmarkInfo(name="toy-mf", target="support:ToyMF", summary="multi-fidelity toy"))


def drive(opt, bench, n):
    """``n`` sequential asks; returns ``[(config, fidelity, value)]``."""
    out = []
    for _ in range(n):
        config, k = opt.ask_with_fidelity()
        value = bench.evaluate(config, epochs=k)["value"]
        opt.tell(config, value, fidelity=k)
        out.append((config, k, value))
    return out


def test_fidelities_are_hyperbands_budgets_rounded_to_epochs():
    assert hyperband_fidelities(9) == (1, 3, 9)
    assert hyperband_fidelities(25) == (1, 3, 8, 25)  # the BO-FM authors' HpBandSter setting (0.5 .. 25.5)
    assert hyperband_fidelities(8) == (1, 3, 8)
    assert hyperband_fidelities(27, min_fidelity=3) == (3, 9, 27)
    assert hyperband_fidelities(4, min_fidelity=4) == (4,)
    with pytest.raises(ValueError, match="same number of epochs"):
        hyperband_fidelities(8, eta=2)  # budgets 0.53 and 1.06 both round to 1 epoch
    with pytest.raises(ValueError, match="max_fidelity"):
        hyperband_fidelities(0)
    with pytest.raises(ValueError, match="needs max_fidelity"):
        BOHB(toy_space(), seed=0)


def test_asks_follow_hyperband_brackets_and_successive_halving():
    bench = ToyMF(max_fidelity=9, offset=-1.0)  # low fidelities look *better*: they must not count as best
    opt = BOHB(bench.space, seed=0, max_fidelity=9, n_initial=4, **FAST)
    assert opt.fidelity_levels == (1, 3, 9)
    trace = drive(opt, bench, 22)  # one Hyperband iteration: brackets (9@1, 3@3, 1@9), (5@3, 1@9), (3@9)
    ks = [k for _, k, _ in trace]
    assert ks == [1] * 9 + [3] * 3 + [9] + [3] * 5 + [9] + [9] * 3
    for config, _, _ in trace:
        bench.space.validate(config)
    # graphbo's shared initial design opens the first bracket: the same configurations as random search's
    rs = RandomSearch(bench.space, seed=0, n_initial=4)
    for (c, _, _), r in zip(trace[:4], [rs.ask() for _ in range(4)]):  # ConfigSpace rounds floats to ~13 digits
        assert (c["c"], c["n"]) == (r["c"], r["n"])
        assert (c["x"], c["lr"]) == pytest.approx((r["x"], r["lr"]), rel=1e-9, abs=1e-12)

    def key(c):
        return tuple(sorted(c.items()))

    def best_of(rows, n):
        return {key(c) for c, _, _ in sorted(rows, key=lambda r: r[2])[:n]}

    # successive halving: the best third of a stage is evaluated at the next fidelity
    assert {key(c) for c, _, _ in trace[9:12]} == best_of(trace[0:9], 3)
    assert {key(trace[12][0])} == best_of(trace[9:12], 1)
    assert {key(trace[18][0])} == best_of(trace[13:18], 1)
    assert len({key(c) for c, _, _ in trace[19:22]}) == 3  # the last bracket: new configurations at full fidelity
    # told data: everything, with fidelities; best: full fidelity only
    assert opt.n_told == 22 and opt.told_fidelities.tolist() == ks
    full = [v for _, k, v in trace if k == 9]
    assert opt.best.value == min(full) > min(v for _, _, v in trace)
    assert opt.smac.runhistory.finished == 22


def test_same_seed_same_asks_other_seed_other_asks():
    bench = ToyMF()
    runs = [drive(BOHB(bench.space, seed=s, max_fidelity=9, n_initial=2, **FAST), bench, 23) for s in (5, 5, 6)]
    assert runs[0] == runs[1]
    assert [c for c, _, _ in runs[0]] != [c for c, _, _ in runs[2]]
    assert [k for _, k, _ in runs[0]] == [k for _, k, _ in runs[2]]  # the schedule does not depend on the seed


def test_tell_validates_and_failures_are_never_promoted():
    bench = ToyMF()
    opt = BOHB(bench.space, seed=1, max_fidelity=9, n_initial=3, **FAST)
    asked = opt.ask(9)
    assert opt.last_fidelities == [1] * 9 and opt.last_fidelity == 1
    with pytest.raises(ValueError, match="fidelity must be one of"):
        opt.tell(asked[0], 1.0, fidelity=2)
    with pytest.raises(ValueError, match="not finite"):
        opt.tell(asked[0], float("nan"), fidelity=1)
    with pytest.raises(ValueError, match="give the fidelity"):
        opt.tell(bench.space.sample(1, seed=99)[0], 1.0)  # nothing pending for it
    assert opt.n_told == 0
    values = [bench.evaluate(c, epochs=1)["value"] for c in asked]
    order = np.argsort(values)
    failed = {int(i) for i in order[:3]}  # the three best crash
    for i, (c, v) in enumerate(zip(asked, values)):
        if i in failed:
            opt.mark_failed(c)  # the fidelity of its pending trial
        else:
            opt.tell(c, v)
    promoted = opt.ask(3)
    assert opt.last_fidelities == [3, 3, 3]
    key = lambda c: tuple(sorted(c.items()))  # noqa: E731
    assert {key(c) for c in promoted} == {key(asked[int(i)]) for i in order[3:6]}
    assert [k for _, k in opt.failed] == [1, 1, 1]
    statuses = [v.status.name for v in opt.smac.runhistory.values()]
    assert statuses.count("CRASHED") == 3 and statuses.count("RUNNING") == 3


def test_bohb_beats_random_search_for_the_same_cost():
    """15 full-evaluation equivalents (135 epochs): BOHB's best full-fidelity value beats random search's best of
    15 evaluations on average over seeds (means of the best found ~0.05 against ~0.3)."""
    bench = ToyMF(max_fidelity=9, offset=1.0)
    wins, gaps = 0, []
    for seed in range(3):
        opt = BOHB(bench.space, seed=seed, max_fidelity=9, n_initial=4, **FAST)
        used = 0
        while used < 15 * 9:
            (config, k, _), = drive(opt, bench, 1)
            used += k
        rs = RandomSearch(bench.space, seed=seed, n_initial=4)
        rs_best = min(toy_f(rs.ask()) for _ in range(15))
        bohb_best = opt.best.value - bench.offset / 9
        opt.close()
        wins += bohb_best < rs_best
        gaps.append(rs_best - bohb_best)
    assert wins >= 2 and np.mean(gaps) > 0.05


def test_runner_records_fidelities_counts_full_evaluations_and_resumes(tmp_path, toy_registered, monkeypatch):
    spec = RunSpec(benchmark="toy-mf", method="bohb", seed=0, budget=12, n_initial=4, benchmark_options={},
                   method_options=FAST)
    full = tmp_path / "full.db"
    summary = run(spec, str(full))
    data = read_run(full)
    head, evals = data.head, data.evals
    assert head["max_fidelity"] == 9
    ks = [e["fidelity"] for e in evals]
    assert set(ks) == {1, 3, 9} and ks[:13] == [1] * 9 + [3] * 3 + [9]
    # the budget counts full-fidelity-equivalent evaluations: 12 x 9 epochs, the last evaluation crosses it
    assert sum(ks) >= 12 * 9 > sum(ks[:-1])
    assert summary["n"] == len(evals) > 12
    for e in evals:
        assert e["value"] == pytest.approx(toy_f(e["config"]) + 1.0 / e["fidelity"])
    curve = fidelity_best_so_far(evals, 9, budget=12)
    within = [e for j, e in enumerate(evals) if sum(ks[:j + 1]) <= 12 * 9]
    assert curve[-1] == summary["best"] == min(e["value"] for e in within if e["fidelity"] == 9)
    assert math.isnan(curve[0])  # 1 full evaluation's worth: 9 epochs at fidelity 1, none at 9 yet
    assert np.all(np.diff(np.array(curve)[~np.isnan(curve)]) <= 0)

    reference = [(e["config"], e["fidelity"], e["value"]) for e in evals]
    for cut in (12, 13, 23):  # before a promotion to the last stage, before a new bracket, inside a stage
        calls = []

        def interrupted(self, config, epochs=None, _original=ToyMF.evaluate):
            if len(calls) == cut:  # a kill while evaluation `cut` runs: its trial is left running
                raise KeyboardInterrupt
            calls.append(epochs)
            return _original(self, config, epochs)

        path = tmp_path / f"cut{cut}.db"
        with monkeypatch.context() as m:
            m.setattr(ToyMF, "evaluate", interrupted)
            with pytest.raises(KeyboardInterrupt):
                run(spec, str(path))
        resumed = run(spec, str(path))
        assert resumed["resumed_from"] == cut
        assert [(e["config"], e["fidelity"], e["value"]) for e in read_run(path).evals] == reference

    # compare skips the finished run (counted in full evaluations, not trials); the report uses full fidelities
    out = tmp_path / "cmp"
    (out / "bohb").mkdir(parents=True)
    shutil.copy(full, out / "bohb" / "seed0.db")
    assert compare([spec], str(out), log=lambda s: None) == []
    (r,) = collect(str(out))["toy-mf"]["bohb"]
    assert r["finished"] and len(r["best_so_far"]) == 12 and r["best_so_far"][-1] == summary["best"]


def test_multi_fidelity_method_needs_a_benchmark_with_fidelities(tmp_path):
    assert METHODS["bohb"] is BOHB
    with pytest.raises(ValueError, match="has none"):
        run(RunSpec(benchmark="branin", method="bohb", seed=0, budget=3, n_initial=2, benchmark_options={},
                    method_options=FAST), str(tmp_path / "b.db"))
    with pytest.raises(ValueError, match="chooses a fidelity"):
        gb.minimize(toy_f, toy_space(), method="bohb", budget=3, max_fidelity=9)


def test_nas_sgd_with_bohb_trains_at_the_asked_epochs(tmp_path):
    """The BO-FM NAS + SGD benchmark (digits, a 3-epoch schedule): 2 full-evaluation equivalents."""
    pytest.importorskip("torch")
    spec = RunSpec(benchmark="nas-sgd", method="bohb", seed=0, budget=2, n_initial=2, benchmark_options={"epochs": 3},
                   method_options=FAST)
    path = tmp_path / "nas.db"
    summary = run(spec, str(path))
    data = read_run(path)
    head, evals = data.head, data.evals
    assert head["max_fidelity"] == 3
    assert [e["fidelity"] for e in evals] == [1, 1, 1, 3]  # bracket 0 of fidelities (1, 3)
    assert evals[3]["config"] in [e["config"] for e in evals[:3]]
    assert summary["best"] == evals[3]["value"]
    assert 0.0 < evals[3]["value"] < 1.1
