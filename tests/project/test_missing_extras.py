"""A missing optional dependency in the Python API is one line naming the ``pip install`` that adds it.

Each test hides the module (``sys.modules[name] = None`` makes ``import name`` raise ImportError) and calls
the public function that needs it.
"""

import sys
import warnings

import numpy as np
import pytest

import graphbo as gb
from graphbo._lazy import MissingExtraError


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


def test_configspace_conversion_names_the_configspace_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ConfigSpace", None)
    with pytest.raises(MissingExtraError) as info:
        gb.from_configspace(object())
    assert one_line(info.value) == ('converting a ConfigurationSpace needs configspace: '
                                    'pip install "graphbo[configspace]"')
    with pytest.raises(MissingExtraError, match=r'pip install "graphbo\[configspace\]"$'):
        gb.to_configspace(gb.Space({"a": gb.Binary()}))


def test_drawing_an_architecture_names_the_report_extra(monkeypatch):
    from graphbo.nas.domain.plot import draw_architecture

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError) as info:
        draw_architecture({"layers": []})
    assert one_line(info.value) == 'drawing an architecture needs matplotlib: pip install "graphbo[report]"'


def test_report_plots_name_the_report_extra(monkeypatch, tmp_path):
    from graphbo.experiments import report

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError) as info:
        report._plot_convergence("branin", {}, str(tmp_path / "c.png"))
    assert one_line(info.value) == "the report's plots needs matplotlib: pip install \"graphbo[report]\""
    assert not (tmp_path / "c.png").exists()


def test_external_methods_name_their_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    space = gb.Space({"a": gb.Categorical(["x", "y", "z"])})
    with pytest.raises(MissingExtraError) as info:
        gb.TPE(space, seed=0)
    assert one_line(info.value) == 'TPE needs optuna: pip install "graphbo[tpe]"'
    assert info.value.name == "optuna"  # the module that was missing, for the command line's message


def test_without_pot_otmann_warns_once_in_one_line_and_gives_the_same_distances(monkeypatch):
    from graphbo.nas.distance import otmann
    from graphbo.nas.domain.generate import random_architecture

    rng = np.random.default_rng(3)
    pairs = [(random_architecture("cnn", rng, n_layers=6),
              random_architecture("cnn", rng, n_layers=8)) for _ in range(3)]
    with_pot = [otmann.OTMANN("cnn").distance(a, b, nu_str=0.4).d for a, b in pairs]

    monkeypatch.setattr(otmann, "_SOLVER", None)
    monkeypatch.setitem(sys.modules, "ot", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        without = [otmann.OTMANN("cnn").distance(a, b, nu_str=0.4).d for a, b in pairs]
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and one_line(messages[0]).startswith("OTMANN's fast transport solver needs pot: "
                                                                   "pip install pot")
    assert without == pytest.approx(with_pot, rel=1e-6)
    monkeypatch.setattr(otmann, "_SOLVER", None)  # the next user of OTMANN finds POT again
