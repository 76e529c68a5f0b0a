"""``method="auto"``: the rule of graphbo.optimizers.auto and its docs/auto.md table,
``resolve_method``, and ``graphbo compare --methods auto``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import graphbo as gb
from graphbo.benchmarks import load_benchmark
from graphbo.optimizers import METHODS
from graphbo.storage.info import read_study_info
from graphbo.study import Study
from graphbo.optimizers.auto import (AUTO, TR_MIN_BUDGET, TR_MIN_DIMENSIONS, choose_method, dimensions,
                                     resolve_method)
from support import binary_space

LARGE_BUDGET = max(200, TR_MIN_BUDGET)
SMALL_BUDGET = TR_MIN_BUDGET - 1


def binaries_continuous_space(n_binary: int, n_continuous: int) -> gb.Space:
    variables = {f"b{i}": gb.Binary() for i in range(n_binary)}
    variables.update({f"c{i}": gb.Continuous(-1.0, 1.0) for i in range(n_continuous)})
    return gb.Space(variables)


def test_thresholds_are_sane():
    # below radius_init (20) the region spans every discrete space until it first shrinks (docs/trust_regions.md)
    assert TR_MIN_DIMENSIONS > 20
    assert TR_MIN_BUDGET > 1


@pytest.mark.parametrize("budget", [None, 1, SMALL_BUDGET, LARGE_BUDGET])
def test_small_binary_space_gets_combo_for_any_budget(budget):
    assert choose_method(binary_space(8), budget) == "combo"


def test_high_dimensional_binary_space_gets_combo_with_a_trust_region():
    space = binary_space(50)
    assert choose_method(space, LARGE_BUDGET) == "combo-tr"
    assert choose_method(space, TR_MIN_BUDGET) == "combo-tr"
    assert choose_method(space, None) == "combo-tr"  # budget unknown: the space decides


def test_small_budget_drops_the_trust_region():
    assert choose_method(binary_space(50), SMALL_BUDGET) == "combo"
    assert choose_method(load_benchmark("ackley53").space, SMALL_BUDGET) == "bofm"


def test_dimension_threshold_is_where_the_rule_switches():
    below, at = TR_MIN_DIMENSIONS - 1, TR_MIN_DIMENSIONS
    assert choose_method(binary_space(below), LARGE_BUDGET) == "combo"
    assert choose_method(binary_space(at), LARGE_BUDGET) == "combo-tr"
    assert choose_method(binaries_continuous_space(below - 2, 2), LARGE_BUDGET) == "bofm"
    assert choose_method(binaries_continuous_space(at - 2, 2), LARGE_BUDGET) == "bofm-tr"


def test_single_valued_variables_do_not_count_as_dimensions():
    variables = {f"x{i}": gb.Binary() for i in range(TR_MIN_DIMENSIONS - 1)}
    variables.update({f"fixed{i}": gb.Categorical(["only"]) for i in range(5)})
    space = gb.Space(variables)
    assert dimensions(space) == TR_MIN_DIMENSIONS - 1
    assert choose_method(space, LARGE_BUDGET) == "combo"


def test_a_budget_that_covers_the_space_gets_no_trust_region():
    space = binary_space(TR_MIN_DIMENSIONS)
    assert choose_method(space, space.size) == "combo"
    assert choose_method(space, space.size - 1) == "combo-tr"


def test_small_mixed_space_gets_bofm():
    assert choose_method(binaries_continuous_space(2, 2), LARGE_BUDGET) == "bofm"
    assert choose_method(binaries_continuous_space(2, 2), None) == "bofm"


def test_mixed_53_dimensional_ackley_gets_bofm_with_a_trust_region():
    space = load_benchmark("ackley53").space
    assert dimensions(space) == 53
    assert choose_method(space, LARGE_BUDGET) == "bofm-tr"


@pytest.mark.parametrize("budget", [None, 5, LARGE_BUDGET])
def test_architecture_space_gets_nasbot(budget):
    from graphbo.nas import ArchitectureSpace

    assert choose_method(ArchitectureSpace("mlp-class"), budget) == "nasbot"


def test_every_choice_is_a_method():
    from graphbo.nas import ArchitectureSpace

    spaces = [binary_space(3), binary_space(60), binaries_continuous_space(1, 1), binaries_continuous_space(40, 3),
              ArchitectureSpace("cnn")]
    choices = {choose_method(s, b) for s in spaces for b in (None, 2, SMALL_BUDGET, LARGE_BUDGET)}
    assert choices == {"combo", "combo-tr", "bofm", "bofm-tr", "nasbot"}
    assert choices <= set(METHODS)


def test_invalid_inputs_name_the_argument():
    with pytest.raises(ValueError, match="budget"):
        choose_method(binary_space(3), 0)
    with pytest.raises(TypeError, match="budget"):
        choose_method(binary_space(3), "many")
    with pytest.raises(TypeError, match="space"):
        choose_method({"x": [0, 1]}, 10)


def test_resolve_method_leaves_other_names_unchanged():
    space = binary_space(50)
    for name in ("combo", "bofm", "rs", "COMBO", "combo-tr", "tpe"):
        assert resolve_method(name, space, budget=LARGE_BUDGET) == name
    assert resolve_method("auto", space, budget=LARGE_BUDGET) == "combo-tr"
    assert resolve_method("Auto", space, budget=SMALL_BUDGET) == "combo"
    assert AUTO == "auto" and AUTO not in METHODS  # resolved before METHODS is indexed


def test_resolve_method_rejects_unknown_names_naming_the_argument():
    with pytest.raises(ValueError, match=r"method: unknown method 'bayes'.*'auto'"):
        resolve_method("bayes", binary_space(3), budget=10)
    with pytest.raises(TypeError, match="method"):
        resolve_method(None, binary_space(3), budget=10)


# -- graphbo compare --------------------------------------------------------------------------------------
def test_compare_default_methods_use_auto_with_the_budget():
    from graphbo.benchmarks import load_benchmark
    from graphbo.cli.compare import default_methods

    labs = load_benchmark("labs").space
    assert default_methods(labs, LARGE_BUDGET) == "combo-tr,rs"
    assert default_methods(labs, SMALL_BUDGET) == "combo,rs"
    assert default_methods(load_benchmark("nas-synthetic").space, LARGE_BUDGET) == "nasbot,rand,ea,treebo"


def test_compare_accepts_auto_and_stores_the_resolved_method(tmp_path, monkeypatch, capsys):
    from graphbo.cli.parser import main
    from graphbo.storage.info import read_study_info

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    code = main(["compare", "branin", "--methods", "auto,combo,rs", "--seeds", "0", "--budget", "3",
                 "--n-initial", "2", "--out", str(tmp_path / "cmp")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "auto chose combo for branin with budget 3" in out
    assert "2 runs (combo, rs x 1 seeds)" in out  # auto and combo are one method here, run once
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == ["combo", "rs"]
    assert read_study_info(tmp_path / "cmp" / "combo" / "seed0.db")["method"] == "combo"


def test_compare_rejects_an_unknown_method_listing_auto(tmp_path, capsys):
    from graphbo.cli.parser import main

    code = main(["compare", "branin", "--methods", "auto,bayes", "--seeds", "0", "--budget", "3",
                 "--out", str(tmp_path / "cmp")])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown method(s) ['bayes']" in err and "'auto'" in err


# -- auto as the default of minimize, Study and graphbo run --------------------------------------------------
def test_study_defaults_to_auto_with_its_budget(tmp_path):
    assert Study(binary_space(50), auto_budget=TR_MIN_BUDGET).method == "combo-tr"
    assert Study(binary_space(50), auto_budget=TR_MIN_BUDGET - 1).method == "combo"
    assert Study(binary_space(50)).method == "combo-tr"
    assert Study(binary_space(5), "AUTO").method == "combo"


def test_reopened_auto_study_keeps_its_method(tmp_path):
    path = str(tmp_path / "s.db")
    with Study(binary_space(50), storage=path, seed=0, auto_budget=10) as s:
        assert s.method == "combo"
    with Study(binary_space(50), storage=path, auto_budget=500) as s:  # a longer budget: still combo
        assert s.method == "combo"
    assert read_study_info(path)["method"] == "combo"


def test_minimize_default_is_auto_resolved_with_the_budget(tmp_path):
    path = str(tmp_path / "m.db")
    result = gb.minimize(lambda c: float(sum(c.values())), binary_space(30), budget=3, seed=0, storage=path)
    assert read_study_info(path)["method"] == "combo"  # budget 3 < TR_MIN_BUDGET
    assert len(result.trials) == 3


def test_make_optimizer_takes_auto():
    from graphbo.loop import make_optimizer
    assert make_optimizer("auto", binary_space(50), seed=0).name == "combo-tr"


def test_run_help_and_default(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "graphbo", "run", "--help"], capture_output=True, text=True, env=env)
    assert "auto" in out.stdout
    out = subprocess.run([sys.executable, "-m", "graphbo", "run", "labs", "--budget", "3", "--quiet", "--storage",
                          "s.db"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert read_study_info(tmp_path / "s.db")["method"] == "combo"
    out = subprocess.run([sys.executable, "-m", "graphbo", "run", "labs", "--budget", "4", "--quiet", "--storage",
                          "s.db", "--method", "auto"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    info = read_study_info(tmp_path / "s.db")
    assert info["method"] == "combo" and info["n_complete"] == 4
