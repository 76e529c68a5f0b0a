"""A known constraint given as a Python function is stored by its name and its verdicts on fixed sample
configurations: resuming with another function of the same name is refused, the same function resumes."""

import pytest

import graphbo as gb
from graphbo.storage import StorageError


def space_with(rule):
    return gb.Space({"a": gb.Ordinal(list(range(10))), "b": gb.Ordinal(list(range(10)))}, constraints=[rule])


def small_sum(config):
    return config["a"] + config["b"] <= 12


def objective(config):
    return float((config["a"] - 3) ** 2 + (config["b"] - 7) ** 2)


def test_the_same_function_resumes_and_another_of_the_same_name_is_refused(tmp_path):
    path = tmp_path / "s.db"
    first = gb.minimize(objective, space_with(small_sum), method="rs", budget=5, seed=0, storage=path)
    assert all(small_sum(t.config) for t in first.trials)
    resumed = gb.minimize(objective, space_with(small_sum), method="rs", budget=8, seed=0, storage=path)
    assert len(resumed.trials) == 8

    def small_sum_changed(config):  # same name, other rule
        return config["a"] + config["b"] <= 4
    small_sum_changed.__qualname__ = small_sum.__qualname__
    before = path.read_bytes()
    with pytest.raises(StorageError, match=r"constraint function .*small_sum.* decides \d+ of 256"):
        gb.minimize(objective, space_with(small_sum_changed), method="rs", budget=10, seed=0, storage=path)
    assert path.read_bytes() == before  # refused before anything is written


def test_expressions_need_no_verdicts_and_the_fingerprint_is_reproducible():
    assert space_with("a + b <= 12").function_rule_fingerprints() == {}
    prints = space_with(small_sum).function_rule_fingerprints()
    assert list(prints) == [small_sum.__qualname__] and len(prints[small_sum.__qualname__]) == 64  # 256 bits
    assert prints == space_with(small_sum).function_rule_fingerprints()
    other = space_with(lambda c: c["a"] <= 4).function_rule_fingerprints()
    assert list(other.values()) != list(prints.values())
