"""`graphbo export --optuna`: a graphbo study read back by the real Optuna, trial for trial."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

import graphbo as gb
from graphbo.cli import main

optuna = pytest.importorskip("optuna")


def _integer_ordinal_categorical_log_binary_space():
    return gb.Space({"n": gb.Integer(1, 40), "k": gb.Ordinal([1, 2, 4, 8]), "act": gb.Categorical(["relu", "tanh"]),
                     "lr": gb.Continuous(1e-4, 1e-1, log=True), "b": gb.Binary()})


def _objective(c):
    if c["n"] == 7:
        raise RuntimeError("seven is unlucky")
    return (c["n"] - 20) ** 2 / 100 + math.log10(c["lr"]) ** 2 + (c["act"] == "tanh") + 0.1 * c["k"] + c["b"]


def test_exported_study_has_the_same_trials(tmp_path):
    path = tmp_path / "study.db"
    res = gb.minimize(_objective, _integer_ordinal_categorical_log_binary_space(), method="rs", budget=25, seed=3,
                      storage=path)
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    assert main(["export", str(path), "--optuna", url]) == 0
    loaded = optuna.load_study(study_name="study", storage=url)
    assert loaded.direction == optuna.study.StudyDirection.MINIMIZE
    assert len(loaded.trials) == len(res.trials)
    by_number = {t.user_attrs["graphbo_number"]: t for t in loaded.trials}
    for t in res.trials:
        o = by_number[t.number]
        assert o.params == {k: (v if not isinstance(v, np.generic) else v.item()) for k, v in t.config.items()}
        if t.status == "complete":
            assert o.state == optuna.trial.TrialState.COMPLETE and o.value == pytest.approx(t.value)
        else:
            assert o.state == optuna.trial.TrialState.FAIL and "unlucky" in o.user_attrs["error"]
    assert loaded.best_value == pytest.approx(res.best.value)
    d = loaded.trials[0].distributions
    assert isinstance(d["n"], optuna.distributions.IntDistribution) and (d["n"].low, d["n"].high) == (1, 40)
    assert isinstance(d["k"], optuna.distributions.CategoricalDistribution)  # 1, 2, 4, 8 is not a grid
    assert isinstance(d["lr"], optuna.distributions.FloatDistribution) and d["lr"].log
    # a second export under the same name is refused by Optuna, nothing overwritten
    assert main(["export", str(path), "--optuna", url]) == 1
    assert len(optuna.load_study(study_name="study", storage=url).trials) == len(res.trials)


def test_not_a_study_is_one_line(tmp_path, capsys):
    bad = tmp_path / "x.db"
    sqlite3.connect(bad).close()
    assert main(["export", str(bad), "--optuna", f"sqlite:///{tmp_path / 'o.db'}"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "graphbo export" in err[0]


def test_maximising_study_keeps_its_direction(tmp_path):
    from graphbo.experiments.optuna_export import export_to_optuna

    path = tmp_path / "max.db"
    res = gb.minimize(lambda c: 0.0 if c["n"] == 7 else -_objective(c), _integer_ordinal_categorical_log_binary_space(),
                      method="rs", budget=8, seed=0, storage=path, direction="maximize")
    study = export_to_optuna(path, f"sqlite:///{tmp_path / 'o.db'}", study_name="m")
    assert study.direction == optuna.study.StudyDirection.MAXIMIZE
    assert study.best_value == pytest.approx(res.best_value)
    assert study.best_value == pytest.approx(max(t.value for t in res.trials if t.status == "complete"))


def test_an_export_left_unfinished_is_replaced_and_if_exists_chooses_for_a_finished_one(tmp_path):
    from graphbo.experiments.optuna_export import EXPORT_DONE, export_to_optuna

    path = tmp_path / "study.db"
    res = gb.minimize(_objective, _integer_ordinal_categorical_log_binary_space(), method="rs", budget=12, seed=3,
                      storage=path)
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    # what a killed export leaves: the study under its final name, marked unfinished, with some trials
    partial = optuna.create_study(storage=url, study_name="study")
    partial.set_user_attr(EXPORT_DONE, False)
    partial.add_trial(optuna.trial.create_trial(value=1.0, params={}, distributions={}))
    assert main(["export", str(path), "--optuna", url]) == 0
    loaded = optuna.load_study(study_name="study", storage=url)
    assert len(loaded.trials) == len(res.trials) and loaded.user_attrs[EXPORT_DONE] is True
    assert export_to_optuna(path, url, study_name="study", if_exists="skip").user_attrs[EXPORT_DONE] is True
    assert main(["export", str(path), "--optuna", url, "--if-exists", "replace"]) == 0
    assert len(optuna.get_all_study_names(url)) == 1
    assert len(optuna.load_study(study_name="study", storage=url).trials) == len(res.trials)



def test_conditional_multi_objective_constrained_and_pruned_studies_export_as_optuna_has_them(tmp_path):
    from graphbo.experiments.optuna_export import export_to_optuna

    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    # a conditional variable: an inactive one has no parameter (Optuna's define-by-run trials alike)
    space = gb.Space({"k": gb.Categorical(["rbf", "lin"]), "g": gb.Ordinal([1, 2, 3])},
                     conditions={"g": {"k": ["rbf"]}})
    gb.minimize(lambda c: c.get("g", 0) + (c["k"] == "lin"), space, method="rs", budget=4, seed=0,
                storage=tmp_path / "c.db")
    exported = export_to_optuna(tmp_path / "c.db", url, study_name="c")
    assert sorted(map(str, (t.params for t in exported.trials))) == sorted(
        ["{'k': 'lin'}", "{'k': 'rbf', 'g': 1}", "{'k': 'rbf', 'g': 2}", "{'k': 'rbf', 'g': 3}"])
    # several objectives and constraints: Optuna's directions, values and "constraints" system attribute
    flat = gb.Space({"a": gb.Ordinal([1, 2, 3, 4])})
    gb.minimize(lambda c: {"values": [c["a"], -c["a"]], "constraints": [c["a"] - 2.5]}, flat, method="rs",
                budget=4, seed=0, storage=tmp_path / "m.db", directions=["minimize", "maximize"], n_constraints=1)
    exported = export_to_optuna(tmp_path / "m.db", url, study_name="m")
    assert exported.directions == [optuna.study.StudyDirection.MINIMIZE, optuna.study.StudyDirection.MAXIMIZE]
    for t in exported.trials:
        assert t.values == [t.params["a"], -t.params["a"]]
        assert t.system_attrs["constraints"] == [t.params["a"] - 2.5]
    # a pruned trial is Optuna's PRUNED, with its intermediate values
    study = gb.Study(flat, "rs", storage=tmp_path / "p.db", seed=0)
    first = study.ask()
    study.report(first, 3.0, step=1)
    study.prune(first)
    study.close()
    (trial,) = export_to_optuna(tmp_path / "p.db", url, study_name="p").trials
    assert trial.state == optuna.trial.TrialState.PRUNED and trial.intermediate_values == {1: 3.0}


def _fields(t):
    """A trial's stored fields; times without their zone (an RDB storage keeps UTC times naive)."""
    naive = [None if d is None else d.replace(tzinfo=None) for d in (t.datetime_start, t.datetime_complete)]
    return (t.number, t.state, t.values, t.params, t.distributions, t.user_attrs, t.system_attrs,
            t.intermediate_values, *naive)


def test_the_one_transaction_export_stores_what_optunas_add_trials_stores(tmp_path):
    from graphbo.experiments.optuna_export import _add_trials_in_one_transaction, export_to_optuna

    studies = []
    gb.minimize(_objective, _integer_ordinal_categorical_log_binary_space(), method="rs", budget=25, seed=3,
                storage=tmp_path / "plain.db")  # failures too
    studies.append(tmp_path / "plain.db")
    flat = gb.Space({"a": gb.Ordinal([1, 2, 3, 4])})
    gb.minimize(lambda c: {"values": [c["a"], -c["a"]], "constraints": [c["a"] - 2.5]}, flat, method="rs",
                budget=4, seed=0, storage=tmp_path / "m.db", directions=["minimize", "maximize"], n_constraints=1)
    studies.append(tmp_path / "m.db")
    study = gb.Study(flat, "rs", storage=tmp_path / "p.db", seed=0)
    first = study.ask()
    study.report(first, 3.0, step=1)
    study.prune(first)
    study.tell(study.ask(), 2.0)
    study.close()
    studies.append(tmp_path / "p.db")
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    for path in studies:
        fast = export_to_optuna(path, url, study_name=path.stem)  # an RDB storage: one transaction
        by_optuna = export_to_optuna(path, optuna.storages.InMemoryStorage(),
                                     study_name=path.stem)  # Optuna's add_trials
        reread = optuna.load_study(study_name=path.stem, storage=url)
        assert [_fields(t) for t in reread.trials] == [_fields(t) for t in by_optuna.trials] != []
        assert [_fields(t) for t in fast.trials] == [_fields(t) for t in by_optuna.trials]
        assert reread.user_attrs == by_optuna.user_attrs

    # the Optuna installed here has the schema the one-transaction path writes (else exports fall back, slowly)
    new = optuna.create_study(storage=url, study_name="empty")
    assert _add_trials_in_one_transaction(optuna, new, [optuna.trial.create_trial(value=1.0)]) is True
    assert [t.value for t in optuna.load_study(study_name="empty", storage=url).trials] == [1.0]
