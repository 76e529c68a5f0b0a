"""Intermediate values and pruning: the pruners' rules, and studies that stop evaluations early."""

import numpy as np
import pytest

import graphbo as gb
from graphbo.pruners import MedianPruner, SuccessiveHalvingPruner
from graphbo.storage.info import read_study_info

SPACE = gb.Space({"a": gb.Ordinal(list(range(20))), "b": gb.Categorical(list("wxyz"))})


def curve_objective(steps_used):
    """A learning curve falling to its final value; raises TrialPruned when the study says so."""

    def objective(config):
        final = (config["a"] - 7) ** 2 / 10 + (config["b"] == "x")
        for t in range(1, 21):
            gb.report(final + 5.0 / t, t)
            if gb.should_prune():
                steps_used.append(t)
                raise gb.TrialPruned()
        steps_used.append(20)
        return final

    return objective


def test_the_median_rule():
    others = [{1: 1.0, 2: 0.5}, {1: 2.0, 2: 1.0}, {1: 3.0}]
    pruner = MedianPruner(n_startup_trials=3)
    assert pruner.prune({1: 2.5}, others, pruned=[], step=1)  # 2.5 > median(1, 2, 3) = 2
    assert not pruner.prune({1: 1.5}, others, pruned=[], step=1)
    assert not pruner.prune({1: 2.0}, others, pruned=[], step=1)  # equal to the median: kept
    # at step 2 the median is 0.75; the trial's best value so far counts, not its value at the step
    assert not pruner.prune({1: 0.6, 2: 0.9}, others, pruned=[], step=2)
    assert pruner.prune({1: 1.6, 2: 0.9}, others, pruned=[], step=2)
    assert not pruner.prune({1: 9.0, 5: 9.0}, others, pruned=[], step=5)  # no finished trial reported at step 5
    # fewer complete trials than that
    assert not MedianPruner(n_startup_trials=4).prune({1: 2.5}, others, pruned=[], step=1)
    assert not MedianPruner(n_startup_trials=0, n_warmup_steps=2).prune({1: 2.5}, others, pruned=[], step=1)
    every_other = MedianPruner(n_startup_trials=0, interval_steps=2)
    assert not every_other.prune({1: 2.5}, others, pruned=[], step=1)
    assert every_other.prune({1: 2.5, 2: 2.5}, others, pruned=[], step=2)


def test_asynchronous_successive_halving():
    pruner = SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    assert pruner.rungs(10) == [1, 3, 9]
    others = [{1: v} for v in (1.0, 2.0, 3.0, 4.0, 5.0)]
    # six values at rung 1 (its own included): the best 6 // 3 = 2 go on
    assert not pruner.prune({1: 1.5}, others, pruned=[], step=1)
    assert pruner.prune({1: 2.5}, others, pruned=[], step=1)
    assert not pruner.prune({1: 2.5, 2: 0.1}, others, pruned=[], step=2)  # step 2 is no rung: nothing decided
    assert not pruner.prune({1: 0.5}, [], pruned=[], step=1)  # alone at a rung: the best of one goes on
    # rung 3 (step 3), decided on the best value up to it
    assert pruner.prune({1: 1.5, 3: 1.4}, [{1: 1.0, 3: 0.5}, {1: 1.2, 3: 0.6}], pruned=[{1: 1.1, 3: 0.7}], step=3)
    # pruned trials' values count at a rung (ASHA), but not in the median rule (as Optuna)
    assert pruner.prune({1: 2.5}, [], pruned=[{1: v} for v in (1.0, 2.0, 3.0, 4.0, 5.0)], step=1)
    assert not MedianPruner(n_startup_trials=0).prune({1: 2.5}, [], pruned=[{1: 1.0}, {1: 2.0}], step=1)


def test_a_run_with_a_pruner_stops_bad_curves_and_keeps_the_best(tmp_path):
    with_pruner, without = [], []
    pruned = gb.minimize(curve_objective(with_pruner), SPACE, budget=25, seed=0, pruner=gb.MedianPruner(),
                         storage=tmp_path / "s.db")
    full = gb.minimize(curve_objective(without), SPACE, budget=25, seed=0)
    assert sum(without) == 25 * 20
    assert sum(with_pruner) < 0.8 * sum(without)
    assert pruned.best_value == full.best_value == 0.0
    study = gb.Study(SPACE, storage=tmp_path / "s.db")
    stopped = study.pruned_trials
    assert stopped and not study.failed_trials and len(stopped) == sum(1 for s in with_pruner if s < 20)
    for t in stopped:
        step = t.attrs["pruned"]
        curve = {int(k): v for k, v in t.attrs["intermediate"].items()}
        assert max(curve) == step and t.error == f"pruned at step {step}"
        assert t.penalty == curve[step]  # the model is told the last reported value
    complete = study.complete_trials
    assert all(len(t.attrs["intermediate"]) == 20 for t in complete)
    info = read_study_info(tmp_path / "s.db")
    assert info["n_pruned"] == len(stopped) and info["n_failed"] == len(stopped)


def test_ask_and_tell_with_reports_against_stored_curves(tmp_path):
    path = tmp_path / "s.db"
    with gb.Study(SPACE, "rs", storage=path, seed=0) as study:
        for k in range(5):
            t = study.ask()
            for step in (1, 2):
                study.report(t, float(k) / step, step=step)
            study.tell(t, float(k) / 3)
    with gb.Study(SPACE, storage=path, pruner=gb.MedianPruner()) as study:  # resumed: the stored curves count
        t = study.ask()
        study.report(t, 1.5, step=1)
        assert not study.should_prune(t)  # median at step 1 of 0..4 is 2
        study.report(t, 9.0, step=1)  # a step's first value counts
        study.report(t, 2.5, step=2)  # best so far 1.5 > median(0, .5, 1, 1.5, 2) = 1
        assert study.should_prune(t)
        done = study.prune(t)
        assert done.status == "failed" and done.attrs == {"pruned": 2, "intermediate": {"1": 1.5, "2": 2.5}}
        assert done.penalty == 2.5
        with pytest.raises(ValueError, match="not running|already"):
            study.report(t, 1.0, step=3)
        t2 = study.ask()
        with pytest.raises(ValueError, match="finite"):
            study.report(t2, float("nan"), step=1)
        with pytest.raises(ValueError, match="step"):
            study.report(t2, 1.0, step=-1)
        with pytest.raises(ValueError, match="running trial"):
            asked = [t.config for t in study.trials]
            study.report(next(c for c in SPACE.sample(50, seed=5) if c not in asked), 1.0, step=1)


def test_report_outside_a_study_does_nothing():
    gb.report(1.0, 1)
    assert gb.should_prune() is False
    steps: list[int] = []
    assert curve_objective(steps)({"a": 7, "b": "w"}) == 0.0 and steps == [20]


def test_pruned_trials_are_not_an_objective_that_fails():
    def always(config):
        raise gb.TrialPruned()

    result = gb.minimize(always, SPACE, budget=12, seed=0, method="rs", stop_after_failures=3)
    assert len(result.trials) == 12 and all(t.attrs.get("pruned", 0) is None for t in result.trials)


def test_pruner_arguments_are_checked():
    with pytest.raises(ValueError, match="n_workers=1"):
        gb.minimize(lambda c: 1.0, SPACE, budget=4, n_workers=2, pruner=gb.MedianPruner())
    with pytest.raises(ValueError, match="one objective"):
        gb.Study(SPACE, directions=["minimize", "minimize"], pruner=gb.MedianPruner())
    with pytest.raises(TypeError, match="pruner must be"):
        gb.Study(SPACE, pruner="median")
    with pytest.raises(ValueError, match="reduction_factor"):
        SuccessiveHalvingPruner(reduction_factor=1)


def test_a_real_training_run_is_pruned_by_its_validation_curve():
    """SGD on scikit-learn's digits, one epoch per step: the pruner stops some runs and the best survives."""
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.3, random_state=0)
    space = gb.Space({"alpha": gb.Continuous(1e-6, 1.0, log=True), "loss": gb.Categorical(["hinge", "log_loss"])})
    epochs: list[int] = []

    def objective(config):
        model = SGDClassifier(alpha=config["alpha"], loss=config["loss"], random_state=0)
        for epoch in range(1, 11):
            model.partial_fit(X_tr, y_tr, classes=np.arange(10))
            error = 1.0 - model.score(X_va, y_va)
            gb.report(error, epoch)
            if gb.should_prune():
                epochs.append(epoch)
                raise gb.TrialPruned()
        epochs.append(10)
        return error

    result = gb.minimize(objective, space, budget=14, seed=0, method="rs",
                         pruner=gb.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3))
    stopped = [t for t in result.trials if "pruned" in t.attrs]
    assert stopped and all(t.attrs["pruned"] < 10 for t in stopped)
    assert sorted(epochs) == sorted([10] * (14 - len(stopped)) + [t.attrs["pruned"] for t in stopped])
    complete = [t.value for t in result.trials if t.status == "complete"]
    assert result.best_value == min(complete) < 0.1  # a good model among those trained to the end


def test_a_maximising_study_prunes_the_low_curves_and_ignores_failed_ones():
    with gb.Study(SPACE, "rs", seed=0, direction="maximize", pruner=gb.MedianPruner(n_startup_trials=5)) as study:
        for k in range(5):  # accuracies 0.5 .. 0.9 at step 1
            t = study.ask()
            study.report(t, 0.5 + 0.1 * k, step=1)
            study.tell(t, 0.5 + 0.1 * k)
        crashed = study.ask()
        study.report(crashed, 0.99, step=1)
        study.fail(crashed, "boom")  # a crash keeps its curve but is not compared against
        low, high = study.ask(), study.ask()
        study.report(low, 0.6, step=1)
        study.report(high, 0.8, step=1)
        assert study.should_prune(low) and not study.should_prune(high)  # the median accuracy is 0.7
    with gb.Study(SPACE, "rs", seed=0, pruner=gb.MedianPruner(n_startup_trials=6)) as study:
        for k in range(5):
            t = study.ask()
            study.report(t, float(k), step=1)
            study.tell(t, float(k))
        crashed = study.ask()
        study.report(crashed, 0.0, step=1)
        study.fail(crashed, "boom")
        t = study.ask()
        study.report(t, 10.0, step=1)
        assert not study.should_prune(t)  # five complete trials: fewer than the six to start with
