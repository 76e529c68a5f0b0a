"""``graphbo report STUDY.db`` (experiments/study_report.py) on real studies, and the ``--log`` option and
the paper's line of the comparison reports."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import graphbo
from graphbo import Binary, Categorical, Space
from graphbo.cli import main
from graphbo.experiments.report import _plot_convergence, collect, paper_lines, value_scale, write_report
from graphbo.experiments.study_report import TOP, plot_best_so_far, study_summary, write_study_report
from graphbo.storage.info import read_study_info

pytest.importorskip("matplotlib")


SPACE = Space({"a": Binary(), "b": Binary(), "c": Binary(), "d": Binary(), "colour": Categorical(["red", "blue"])})
FAST = {"n_burn": 5, "n_samples": 2, "n_random": 300, "n_spray": 5, "n_starts": 3}


def cost(config):
    """Lowest (0.5) at a=b=False, c=True, colour=blue; positive everywhere."""
    return 0.5 + 4.0 * config["a"] + 2.0 * config["b"] + (not config["c"]) + 0.25 * (config["colour"] == "red")


def growth(config):
    """Positive, from 1 to 10^5: a maximised study whose values span five decades."""
    return 10.0 ** (config["a"] + config["b"] + config["c"] + config["d"] + (config["colour"] == "blue"))


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    folder = tmp_path_factory.mktemp("studies")
    combo = graphbo.minimize(cost, SPACE, method="combo", budget=12, seed=0, n_initial=6,
                             storage=folder / "combo.db", **FAST)
    rs = graphbo.minimize(growth, SPACE, method="rs", budget=12, seed=1, direction="maximize",
                          storage=folder / "rs.db")
    return folder, combo, rs


def table(text: str, header: str) -> list[list[str]]:
    """The rows (cells) of the markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def best_value_in(text: str) -> float:
    return float(re.search(r"^Best value: (\S+) \(trial (\d+)\)\.$", text, re.M)[1])


def test_combo_study_report_names_the_best_value_configuration_and_relevance(studies):
    folder, result, _ = studies
    path = write_study_report(folder / "combo.db")
    assert Path(path) == folder / "combo.md"  # beside the study by default
    text = Path(path).read_text()
    info = read_study_info(folder / "combo.db")
    assert best_value_in(text) == info["best_value"] == result.best_value
    # the best configuration in the variables' own values (booleans and strings, not grid coordinates)
    assert dict(table(text, "| variable | value |")) == {k: repr(v) if not isinstance(v, str) else v
                                                        for k, v in result.best_params.items()}
    assert "| direction | minimize |" in text and "| trials | 12: 12 complete, 0 failed, 0 running |" in text
    top = table(text, "| rank | trial | value |")
    values = [float(r[2]) for r in top]
    assert len(top) == TOP and values == sorted(values) and values[0] == result.best_value
    assert values == sorted(t.value for t in result.trials)[:TOP]
    assert (folder / "img" / "combo_best_so_far.png").is_file()
    # COMBO's effect of each variable, as the optimizer itself reports it at its last fit
    effects = dict(table(text, "| variable | relevance |") if "| variable | relevance |" in text
                   else table(text, "| variable | β_i |"))
    kind = "relevance" if "| variable | relevance |" in text else "beta"
    expected = getattr(result.optimizer, kind)
    assert set(effects) == set(SPACE.names)
    assert {k: float(v) for k, v in effects.items()} == pytest.approx(expected, rel=1e-3, abs=1e-12)
    assert (folder / "img" / f"combo_{kind}.png").is_file()


def test_maximised_random_search_report_has_no_relevance(studies):
    folder, _, result = studies
    out = folder / "rs_report" / "r.md"
    out.parent.mkdir()
    text = Path(write_study_report(folder / "rs.db", out=str(out))).read_text()
    assert "| direction | maximize |" in text
    assert best_value_in(text) == max(t.value for t in result.trials) == read_study_info(folder / "rs.db")["best_value"]
    values = [float(r[2]) for r in table(text, "| rank | trial | value |")]
    assert values == sorted(values, reverse=True)  # best first: the highest
    assert "## Variables" not in text
    # parameter importance, for any method: the study's own numbers, largest first
    shown = table(text, "| variable | importance |")
    expected = result.param_importances()
    assert [r[0] for r in shown] == list(expected)
    assert [float(r[1]) for r in shown] == pytest.approx(list(expected.values()), abs=5e-4)
    assert sorted(p.name for p in (out.parent / "img").iterdir()) == ["r_best_so_far.png", "r_importance.png"]


def test_best_so_far_follows_the_direction(studies):
    folder, _, result = studies
    s = study_summary(folder / "rs.db")
    told = [t.value for t in sorted(result.trials, key=lambda t: t.number)]
    assert list(s["best_so_far"]) == list(np.maximum.accumulate(told))


def test_the_log_option_sets_the_axis_scale(studies, tmp_path):
    folder, _, _ = studies
    spans = np.array([2.0e4, 3.0e3, 3.0e3, 15.0, 1.0])  # positive, over four decades
    narrow = np.array([3.0, 2.5, 2.0])
    signed = np.array([4.0, -1.0, -30.0])
    scales = {(name, log): plot_best_so_far(y, "minimize", path=str(tmp_path / f"{name}_{log}.png"), log=log)
              for name, y in [("spans", spans), ("narrow", narrow), ("signed", signed)]
              for log in ("auto", "on", "off")}
    assert scales == {("spans", "auto"): "log", ("spans", "on"): "log", ("spans", "off"): "linear",
                      ("narrow", "auto"): "linear", ("narrow", "on"): "log", ("narrow", "off"): "linear",
                      ("signed", "auto"): "linear", ("signed", "on"): "symlog", ("signed", "off"): "linear"}
    # and through the command line: the scale used is named in the report (the study's values are positive)
    for log, scale in [("on", "log"), ("off", "linear")]:
        out = tmp_path / f"cli_{log}.md"
        assert main(["report", str(folder / "rs.db"), "--log", log, "--out", str(out)]) == 0
        assert f"![best so far ({scale})]" in out.read_text()
    with pytest.raises(ValueError, match="log"):
        value_scale([1.0], "sometimes")


def test_a_path_that_is_not_a_study_is_one_line(tmp_path, capsys, studies):
    text_file = tmp_path / "notes.db"
    text_file.write_text("not a database\n")
    assert main(["report", str(text_file)]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not a graphbo study" in err and "Traceback" not in err
    assert main(["report", str(tmp_path / "missing.db")]) != 0
    assert "no such file or folder" in capsys.readouterr().err
    folder = studies[0]
    assert main(["report", str(folder / "combo.db"), str(tmp_path)]) != 0  # a study goes alone
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "notes.md").exists()


def test_comparison_plot_draws_the_papers_value_and_takes_the_log_option(tmp_path):
    from graphbo.experiments.runner import RunSpec, run

    run(RunSpec(benchmark="branin", method="sa", seed=0, budget=100, n_initial=2, benchmark_options={},
                method_options={}), str(tmp_path / "branin" / "sa" / "seed0.db"))
    runs = collect(str(tmp_path))["branin"]
    assert paper_lines("branin", runs) == {"sa": 0.4659}  # COMBO's Table 2, SA at budget 100
    axes = {log: _plot_convergence("branin", runs, str(tmp_path / f"{log}.png"), log=log,
                                   paper=paper_lines("branin", runs)) for log in ("on", "off", "auto")}
    # the run's best so far goes from 15.1 to 0.41: positive, within two decades, so auto keeps a linear axis
    assert {log: ax.get_yscale() for log, ax in axes.items()} == {"on": "log", "off": "linear", "auto": "linear"}
    paper = [line for line in axes["off"].get_lines() if line.get_label() == "sa, paper"]
    assert len(paper) == 1 and set(paper[0].get_ydata()) == {0.4659}
    text = Path(write_report(str(tmp_path), out=str(tmp_path / "r.md"), log="off")).read_text()
    assert "dotted line" in text and "--log off" in text and (tmp_path / "img" / "branin_convergence.png").is_file()


def test_without_matplotlib_the_report_is_one_line_and_leaves_no_empty_folder(studies, tmp_path, monkeypatch):
    from graphbo._lazy import MissingExtraError

    folder, _, _ = studies
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)  # as if the extra were not installed
    out = tmp_path / "r" / "report.md"
    out.parent.mkdir()
    with pytest.raises(MissingExtraError, match=r"graphbo\[report\]"):
        write_study_report(folder / "rs.db", out=str(out))
    assert not (out.parent / "img").exists() and not out.exists()
