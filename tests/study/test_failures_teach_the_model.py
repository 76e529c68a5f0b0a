"""Failed evaluations teach the model: by default a failure is told as the worst complete value so far, so a run
whose objective fails in a region spends its budget elsewhere."""

from __future__ import annotations

import pytest

import graphbo as gb
from graphbo.study import Study

SPACE = gb.Space({"kernel": gb.Categorical(["a", "b", "c", "d"]), "x": gb.Continuous(0.0, 1.0),
                  "k": gb.Ordinal(list(range(20)))})


def region_fails(c):
    if c["kernel"] == "a":
        raise RuntimeError("fails")
    return (c["x"] - 0.3) ** 2 + 0.01 * abs(c["k"] - 7) + {"b": 0.3, "c": 0.1, "d": 0.2}[c["kernel"]]


def test_each_failure_is_told_the_worst_value_completed_before_it(tmp_path):
    result = gb.minimize(region_fails, SPACE, method="bofm", budget=16, seed=1, storage=str(tmp_path / "s.db"),
                         n_initial=6)
    seen = []
    for t in sorted(result.trials, key=lambda t: t.number):
        if t.status == "failed":
            assert t.penalty == (max(seen) if seen else None)
        else:
            seen.append(t.value)
    assert any(t.penalty is not None for t in result.trials)
    # a resumed study replays the stored penalties: the optimizer was told the same values
    with Study(SPACE, "bofm", storage=str(tmp_path / "s.db"), seed=1, n_initial=6) as study:
        assert study.optimizer.n_told == sum(t.status == "complete" or t.penalty is not None for t in result.trials)


def test_a_maximising_study_is_told_the_lowest_value():
    def up(c):
        if c["k"] > 15:
            raise RuntimeError("fails")
        return float(c["k"])

    result = gb.minimize(up, SPACE, method="rs", budget=30, seed=0, direction="maximize")
    completed = []
    for t in sorted(result.trials, key=lambda t: t.number):
        if t.status == "failed":
            assert t.penalty == (min(completed) if completed else None)
        else:
            completed.append(t.value)


@pytest.mark.slow
def test_a_failing_region_costs_fewer_evaluations_when_the_model_is_told():
    """The measured effect (benchmarks/failing_region.py): with failures told, fewer of them, over 3 seeds."""
    failed = {}
    for setting in (None, "worst"):
        failed[setting] = sum(sum(t.status == "failed" for t in gb.minimize(
            region_fails, SPACE, method="bofm", budget=25, seed=s, failure_value=setting).trials) for s in range(3))
    assert failed["worst"] < failed[None] / 2


@pytest.mark.parametrize("value", ["bad", float("nan"), True])
def test_failure_value_is_a_number_worst_or_none(value):
    with pytest.raises((TypeError, ValueError), match="failure_value"):
        gb.minimize(region_fails, SPACE, method="rs", budget=3, failure_value=value)


def test_no_suggestion_repeats_another_up_to_a_thousandth_of_every_continuous_range():
    import numpy as np

    import graphbo as gb
    from graphbo.optimizers.base import Optimizer

    space = gb.Space({"lr": gb.Continuous(1e-3, 1.0, log=True), "bins": gb.Categorical([63, 127, 255])})

    class Stubborn(Optimizer):
        """Suggests the same point again and again, moved by less than the rounding."""

        name = "stubborn"

        def _suggest(self):
            row = self.space.to_index({"lr": 0.10962, "bins": 63})
            row[0] += self.rng.uniform(0, 1e-5)
            return row

    opt = Stubborn(space, seed=0, n_initial=0)
    seen = set()
    for _ in range(6):
        cfg = opt.ask()
        key = (round(float(np.log(cfg["lr"])), 2), cfg["bins"])
        assert key not in seen  # one suggestion near (0.10962, 63), then others
        seen.add(key)
        opt.mark_failed(cfg)


def two_objectives_region_fails(c):
    if c["kernel"] == "a":
        raise RuntimeError("fails")
    base = {"b": 0.3, "c": 0.1, "d": 0.2}[c["kernel"]]
    return {"values": [(c["x"] - 0.3) ** 2 + base, c["k"] / 20.0], "constraints": [c["x"] - 0.8]}


def test_with_several_objectives_and_constraints_a_failure_is_told_each_worst_value(tmp_path):
    path = str(tmp_path / "mo.db")
    result = gb.minimize(two_objectives_region_fails, SPACE, method="bofm", budget=16, seed=1, storage=path,
                         n_initial=6, directions=["minimize", "maximize"], n_constraints=1)
    complete = []
    for t in sorted(result.trials, key=lambda t: t.number):
        if t.status == "failed":
            if not complete:
                assert "imputed" not in t.attrs  # nothing to impute from: only excluded
                continue
            assert t.attrs["imputed"] == {"values": [max(c[0] for c, _ in complete), min(c[1] for c, _ in complete)],
                                          "constraints": [max(k[0] for _, k in complete)]}
        else:
            complete.append((t.attrs["values"], t.attrs["constraints"]))
    imputed = [t for t in result.trials if "imputed" in t.attrs]
    assert imputed and all(t.status == "failed" for t in imputed)
    told = len(complete) + len(imputed)
    # a resumed study replays the imputed outcomes: the optimizer is told the same evaluations
    with Study(SPACE, "bofm", storage=path, seed=1, n_initial=6, directions=["minimize", "maximize"],
               n_constraints=1) as study:
        assert study.optimizer.n_told == told
        assert all(t.status == "complete" for t in study.pareto_front)  # failures never enter the results


def test_with_several_objectives_failure_value_none_only_excludes(tmp_path):
    result = gb.minimize(two_objectives_region_fails, SPACE, method="bofm", budget=12, seed=1, n_initial=6,
                         directions=["minimize", "maximize"], n_constraints=1, failure_value=None)
    assert not any("imputed" in t.attrs for t in result.trials)
    assert any(t.status == "failed" for t in result.trials)
