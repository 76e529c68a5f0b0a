"""Space files (YAML/JSON), ConfigSpace conversion, and `graphbo run --space ... --objective ...`."""

import json
import os
import pickle
import sqlite3
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import graphbo as gb
from graphbo import objective_loading
from graphbo.cli import main as cli_main
from graphbo.objective_loading import ImportedObjective, ObjectiveError, load_objective
from graphbo.spaces import IntegerRange
from graphbo.spaces.io import SpaceFileError, load_space, save_space, space_from_dict, space_to_dict
from graphbo.study import describe_space


# -- every variable type, written and read back ----------------------------------------------------
def every_type_space():
    return gb.Space({
        "flag": gb.Binary(),
        "opt": gb.Categorical(["sgd", "yes", "null", "1.5", 3, 2.5, None, False]),
        "batch": gb.Ordinal([16, 32, 64], edge_weight=2.5),
        "tier": gb.Ordinal(["low", "mid", "high"]),
        "act": gb.GraphVariable(["relu", "elu", "tanh", "gelu"],
                                [[0, 1, 0, 2], [1, 0, 0.5, 0], [0, 0.5, 0, 0], [2, 0, 0, 0]]),
        "lr": gb.Continuous(1e-4, 0.1, log=True),
        "mom": gb.Continuous(-0.5, 0.99),
        "layers": gb.Integer(1, 8),                   # an ordinal over 1..8
        "wide": gb.Integer(0, 500),                   # a rounded range (more than 64 values)
        "units": gb.Integer(8, 1024, log=True),       # a log-scaled rounded range
        "narrow_range": IntegerRange(2, 6),           # a range although narrow: `encoding: range`
        "long_ordinal": gb.Ordinal(list(range(-5, 95))),  # 100 consecutive integers as a path graph
    })


def assert_same_space(a, b):
    assert a.names == b.names
    assert describe_space(a) == describe_space(b)  # classes, values, bounds, log, adjacency hashes
    for name in a.names:
        va, vb = a[name], b[name]
        assert type(va) is type(vb), name
        if hasattr(va, "values"):
            assert [(type(v), v) for v in va.values] == [(type(v), v) for v in vb.values], name
            assert np.array_equal(va.adjacency, vb.adjacency), name
        else:
            assert (va.low, va.high, va.log) == (vb.low, vb.high, vb.log), name
    for config in a.sample(20, seed=0):
        assert np.array_equal(a.to_index(config), b.to_index(config))
        assert b.from_index(b.to_index(config)) == a.from_index(a.to_index(config))


@pytest.mark.parametrize("ext", [".yaml", ".yml", ".json"])
def test_round_trip_of_every_variable_type(tmp_path, ext):
    space = every_type_space()
    path = tmp_path / f"space{ext}"
    save_space(space, path)
    loaded = load_space(path)
    assert_same_space(space, loaded)
    assert space_to_dict(loaded) == space_to_dict(space)
    # the file is the documented schema
    text = path.read_text()
    data = json.loads(text) if ext == ".json" else __import__("yaml").safe_load(text)
    v = data["variables"]
    assert v["flag"] == {"type": "binary"}
    assert v["batch"] == {"type": "ordinal", "values": [16, 32, 64], "edge_weight": 2.5}
    assert v["act"]["edges"] == [["relu", "elu"], ["relu", "gelu", 2.0], ["elu", "tanh", 0.5]]
    assert v["layers"] == {"type": "integer", "low": 1, "high": 8}
    assert v["units"] == {"type": "integer", "low": 8, "high": 1024, "log": True}
    assert v["narrow_range"] == {"type": "integer", "low": 2, "high": 6, "encoding": "range"}
    assert v["long_ordinal"] == {"type": "integer", "low": -5, "high": 94, "encoding": "ordinal"}
    assert v["lr"] == {"type": "continuous", "low": 1e-4, "high": 0.1, "log": True}


def test_dict_round_trip_and_example_from_the_docs(tmp_path):
    space = every_type_space()
    assert_same_space(space, space_from_dict(space_to_dict(space)))
    path = tmp_path / "space.yaml"
    path.write_text(textwrap.dedent("""\
        variables:
          lr: {type: continuous, low: 1.0e-4, high: 0.1, log: true}
          optimizer: {type: categorical, choices: [sgd, adam]}
          layers: {type: integer, low: 1, high: 8}
          dropout: {type: continuous, low: 1e-3, high: 0.5}   # PyYAML reads 1e-3 as a string: accepted
          act:
            type: graph
            values: [relu, elu, tanh]
            adjacency: [[0, 1, 0], [1, 0, 0.5], [0, 0.5, 0]]
        """))
    s = load_space(path)
    assert s.names == ("lr", "optimizer", "layers", "dropout", "act")
    assert isinstance(s["lr"], gb.Continuous) and s["lr"].log and (s["lr"].low, s["lr"].high) == (1e-4, 0.1)
    assert s["optimizer"].values == ("sgd", "adam") and type(s["optimizer"]) is gb.Categorical
    assert type(s["layers"]) is gb.Ordinal and s["layers"].values == tuple(range(1, 9))
    assert s["dropout"].low == 1e-3
    edges = space_from_dict({"variables": {"act": {"type": "graph", "values": ["relu", "elu", "tanh"],
                                                   "edges": [["relu", "elu"], ["tanh", "elu", 0.5]]}}})
    assert np.array_equal(s["act"].adjacency, edges["act"].adjacency)
    assert gb.load_space is load_space and gb.save_space is save_space


# -- validation: every error names the file, the variable and the field ----------------------------------------
CONT = {"type": "continuous", "low": 0.0, "high": 1.0}
BAD_VARIABLES = [
    ({"type": "float", "low": 0, "high": 1}, ["unknown type 'float'", "continuous"]),
    ({"low": 0, "high": 1}, ["missing field 'type'"]),
    ({"type": "continuous", "low": 0}, ["missing field 'high'"]),
    ({**CONT, "lg": True}, ["unknown key 'lg'", "allowed: type, low, high, log"]),
    ({"type": "continuous", "low": 1.0, "high": 1.0}, ["low must be < high", "low=1.0", "high=1.0"]),
    ({"type": "integer", "low": 9, "high": 3}, ["low must be < high"]),
    ({"type": "continuous", "low": 0.0, "high": 1.0, "log": True}, ["log: true needs low > 0"]),
    ({**CONT, "log": "yes please"}, ["log must be true or false"]),
    ({"type": "continuous", "low": "abc", "high": 1}, ["low must be a number", "'abc'"]),
    ({"type": "continuous", "low": True, "high": 2}, ["low must be a number"]),
    ({"type": "continuous", "low": 0, "high": float("inf")}, ["high must be finite"]),
    ({"type": "integer", "low": 1.5, "high": 4}, ["low must be an integer", "1.5"]),
    ({"type": "integer", "low": 1, "high": 4, "encoding": "graph"}, ["encoding must be one of auto, ordinal, range"]),
    ({"type": "integer", "low": 1, "high": 4, "log": True, "encoding": "ordinal"}, ["cannot be combined with log"]),
    ({"type": "categorical", "choices": "abc"}, ["choices must be a list"]),
    ({"type": "categorical", "choices": []}, ["choices is empty"]),
    ({"type": "categorical", "choices": ["a", "b", "a"]}, ["duplicate value 'a'"]),
    ({"type": "categorical", "choices": [1, 1.0]}, ["duplicate value 1.0 (equal to 1)"]),
    ({"type": "categorical", "choices": ["a", [1, 2]]}, ["value [1, 2] is not a string, number, boolean or null"]),
    ({"type": "categorical"}, ["missing field 'choices'"]),
    ({"type": "ordinal", "values": [1, 2], "edge_weight": -1}, ["edge_weight must be positive"]),
    ({"type": "ordinal", "choices": [1, 2]}, ["unknown key 'choices'"]),
    ({"type": "binary", "choices": [0, 1]}, ["unknown key 'choices' for type binary"]),
    ({"type": "graph", "values": ["a", "b"]}, ["exactly one of 'edges'"]),
    ({"type": "graph", "values": ["a", "b"], "edges": [["a", "b"]], "adjacency": [[0, 1], [1, 0]]},
     ["exactly one of 'edges'"]),
    ({"type": "graph", "values": ["a", "b"], "edges": [["a", "c"]]}, ["edges[0]", "'c' is not one of the values"]),
    ({"type": "graph", "values": ["a", "b"], "edges": [["a", "a"]]}, ["edges[0] is a self-loop on 'a'"]),
    ({"type": "graph", "values": ["a", "b"], "edges": [["a", "b", 0]]}, ["edges[0] has weight 0"]),
    ({"type": "graph", "values": ["a", "b"], "edges": [["a", "b"], ["b", "a"]]}, ["edges[1] repeats the edge"]),
    ({"type": "graph", "values": ["a", "b"], "edges": [["a"]]}, ["edges[0] must be [u, v] or [u, v, weight]"]),
    ({"type": "graph", "values": ["a", "b", "c"], "edges": [["a", "b"]]}, ["the graph is disconnected"]),
    ({"type": "graph", "values": ["a", "b"], "adjacency": [[0, 1], [2, 0]]}, ["adjacency is not symmetric"]),
    ({"type": "graph", "values": ["a", "b"], "adjacency": [[0, 1]]}, ["adjacency must be a 2 x 2"]),
    ("continuous", ["the definition must be a mapping"]),
]


@pytest.mark.parametrize("spec, expected", BAD_VARIABLES)
def test_invalid_variables_are_named(tmp_path, spec, expected):
    good = {"ok": {"type": "binary"}}
    d = {"variables": {**good, "x": spec}}
    with pytest.raises(SpaceFileError) as err:
        space_from_dict(d)
    msg = str(err.value)
    assert msg.startswith("space: variable 'x': "), msg
    for part in expected:
        assert part in msg, msg
    # the same through a file: the message starts with the file name
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(SpaceFileError) as err:
        load_space(path)
    assert str(err.value).startswith(f"{path}: variable 'x': ")
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("d, expected", [
    ({"variables": {}}, "'variables' must be a non-empty mapping"),
    ({"variables": [{"type": "binary"}]}, "'variables' must be a non-empty mapping"),
    ({"vars": {"x": {"type": "binary"}}}, "unknown top-level key 'vars'"),
    ({"version": 2, "variables": {"x": {"type": "binary"}}}, "unsupported version 2"),
    ({"version": 1}, "missing top-level key 'variables'"),
    (["x"], "a space must be a mapping"),
])
def test_invalid_top_level(d, expected):
    with pytest.raises(SpaceFileError, match=expected):
        space_from_dict(d, source="s.yaml")


def test_file_errors(tmp_path):
    def error(name, text):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(SpaceFileError) as err:
            load_space(path)
        assert str(err.value).startswith(str(path)), str(err.value)
        return str(err.value)

    assert "no such space file" in str(pytest.raises(SpaceFileError, load_space, tmp_path / "none.yaml").value)
    assert "unknown space-file extension '.txt'" in error("s.txt", "variables: {}")
    assert "invalid YAML at line 2, column 20" in error("s.yaml", "variables:\n  x: {type: binary}}\n")
    assert "invalid JSON at line 1" in error("s.json", '{"variables": {"x": }}')
    assert "duplicate key 'x'" in error("d.yaml", "variables:\n  x: {type: binary}\n  x: {type: binary}\n")
    assert "duplicate key 'x'" in error("d.json", '{"variables": {"x": {"type": "binary"}, "x": {"type": "binary"}}}')
    assert "the file is empty" in error("e.yaml", "")
    # the YAML loader builds plain data only: no Python objects
    msg = error("evil.yaml", "variables: !!python/object/apply:os.system ['echo hacked']\n")
    assert "invalid YAML" in msg
    # a variable error in a YAML file names the file and the variable
    msg = error("v.yaml", "variables:\n  lr: {type: continuous, low: 0.1, high: 0.01}\n")
    assert "variable 'lr': low must be < high" in msg


def test_values_that_files_cannot_hold_are_refused(tmp_path):
    space = gb.Space({"pair": gb.Categorical([(1, 2), (3, 4)])})
    with pytest.raises(SpaceFileError, match=r"variable 'pair': value \(1, 2\) \(tuple\) cannot be written"):
        save_space(space, tmp_path / "s.yaml")
    assert not (tmp_path / "s.yaml").exists()


# -- ConfigSpace -----------------------------------------------------------------------------------------------
def test_configspace_conversion_of_all_kinds():
    CS = pytest.importorskip("ConfigSpace")
    from graphbo.spaces.configspace import from_configspace, to_configspace

    cs = CS.ConfigurationSpace(seed=0)
    cs.add([
        CS.CategoricalHyperparameter("optimizer", ["sgd", "adam", "rmsprop"]),
        CS.OrdinalHyperparameter("batch", [16, 32, 64, 128]),
        CS.UniformFloatHyperparameter("lr", 1e-4, 1e-1, log=True),
        CS.UniformFloatHyperparameter("momentum", 0.0, 0.99),
        CS.UniformIntegerHyperparameter("layers", 1, 6),
        CS.UniformIntegerHyperparameter("units", 16, 4096, log=True),
        CS.Constant("activation", "relu"),
    ])
    space = from_configspace(cs)
    assert set(space.names) == {"optimizer", "batch", "lr", "momentum", "layers", "units", "activation"}
    assert type(space["optimizer"]) is gb.Categorical and space["optimizer"].values == ("sgd", "adam", "rmsprop")
    assert type(space["batch"]) is gb.Ordinal and space["batch"].values == (16, 32, 64, 128)
    assert type(space["lr"]) is gb.Continuous and space["lr"].log and (space["lr"].low, space["lr"].high) == (1e-4, 0.1)
    assert type(space["momentum"]) is gb.Continuous and not space["momentum"].log
    assert type(space["layers"]) is gb.Ordinal and space["layers"].values == tuple(range(1, 7))
    units = space["units"]
    assert type(units) is IntegerRange and units.log and (units.low, units.high) == (16, 4096)
    assert type(space["activation"]) is gb.Categorical and space["activation"].values == ("relu",)
    # every sampled configuration is valid in ConfigSpace too, and back
    back = to_configspace(space)
    for config in space.sample(10, seed=1):
        CS.Configuration(back, values=config).check_valid_configuration()
    assert_same_space(space, from_configspace(back))
    # the converted space is usable by an optimizer, and writable as a file
    result = gb.minimize(lambda c: c["lr"] + c["layers"], space, method="rs", budget=5, seed=0)
    assert len(result.history) == 5
    assert_same_space(space, space_from_dict(space_to_dict(space)))


def test_configspace_errors_name_the_hyperparameter():
    CS = pytest.importorskip("ConfigSpace")
    from graphbo.spaces.configspace import from_configspace, to_configspace

    cs = CS.ConfigurationSpace()
    kernel = CS.CategoricalHyperparameter("kernel", ["rbf", "poly"])
    degree = CS.UniformFloatHyperparameter("degree", 2, 5)
    cs.add([kernel, degree, CS.EqualsCondition(kernel, degree, 3.0)])
    with pytest.raises(ValueError, match="hyper-parameter 'kernel' is conditional on 'degree', which is continuous"):
        from_configspace(cs)

    cs = CS.ConfigurationSpace()
    cs.add([CS.NormalFloatHyperparameter("noise", mu=0.0, sigma=1.0, lower=-3.0, upper=3.0)])
    with pytest.raises(ValueError, match="hyper-parameter 'noise' is a NormalFloatHyperparameter"):
        from_configspace(cs)

    cs = CS.ConfigurationSpace()
    cs.add([CS.CategoricalHyperparameter("w", ["a", "b"], weights=[0.2, 0.8])])
    with pytest.warns(UserWarning, match="'w': the categorical weights"):
        assert from_configspace(cs)["w"].values == ("a", "b")
    with pytest.raises(TypeError):
        from_configspace({"a": [1, 2]})
    with pytest.raises(ValueError, match="variable 'g' is a GraphVariable"):
        to_configspace(gb.Space({"g": gb.GraphVariable(["a", "b"], [[0, 1], [1, 0]])}))


# -- importing a user's objective ------------------------------------------------------------------------------
OBJECTIVE_SOURCE = textwrap.dedent("""\
    import math

    OFFSET = 0.25

    def objective(config):
        value = (math.log10(config["lr"]) + 2.0) ** 2 + (config["layers"] - 3) ** 2
        value += {"sgd": 1.0, "adam": 0.0, "rmsprop": 0.5}[config["optimizer"]]
        value += OFFSET if config["shuffle"] else 0.0
        return value + 0.1 * config["batch"] / 64 + {"relu": 0.0, "elu": 0.3, "tanh": 0.6}[config["act"]]
    """)

SPACE_YAML = textwrap.dedent("""\
    variables:
      lr: {type: continuous, low: 1.0e-4, high: 0.1, log: true}
      optimizer: {type: categorical, choices: [sgd, adam, rmsprop]}
      layers: {type: integer, low: 1, high: 8}
      shuffle: {type: binary}
      batch: {type: ordinal, values: [16, 32, 64], edge_weight: 2.0}
      act: {type: graph, values: [relu, elu, tanh], edges: [[relu, elu], [elu, tanh, 0.5]]}
    """)


def reference_objective():
    namespace: dict = {}
    exec(OBJECTIVE_SOURCE, namespace)
    return namespace["objective"]


def test_load_objective_from_module_and_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(objective_loading, "_LOADED", {})
    (tmp_path / "gbt_objmod_a.py").write_text(OBJECTIVE_SOURCE + "\nclass Holder:\n    f = staticmethod(objective)\n"
                                              "NUMBER = 3\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "gbt_objmod_b.py").write_text(OBJECTIVE_SOURCE)
    config = {"lr": 0.01, "layers": 5, "optimizer": "sgd", "shuffle": True, "batch": 32, "act": "elu"}
    expected = reference_objective()(config)
    f = load_objective("gbt_objmod_a:objective", [str(tmp_path)])
    assert f(config) == expected
    assert load_objective("pkg.gbt_objmod_b:objective", [str(tmp_path)])(config) == expected
    assert load_objective("gbt_objmod_a:Holder.f", [str(tmp_path)])(config) == expected
    assert load_objective(f"{tmp_path}/pkg/gbt_objmod_b.py:objective")(config) == expected
    # picklable as its spec, for worker processes
    ref = ImportedObjective("gbt_objmod_a:objective", [str(tmp_path)])
    again = pickle.loads(pickle.dumps(ref))
    assert again._function is None and again(config) == expected

    def error(spec):
        with pytest.raises(ObjectiveError) as err:
            load_objective(spec, [str(tmp_path)])
        return str(err.value)

    assert "objective module 'gbt_no_such_module' not found" in error("gbt_no_such_module:f")
    msg = error("gbt_objmod_a:objectiv")
    assert "module 'gbt_objmod_a' has no attribute 'objectiv'" in msg and "it defines Holder, objective" in msg
    assert "'gbt_objmod_a:NUMBER' is not callable (it is of type int)" in error("gbt_objmod_a:NUMBER")
    assert "must be MODULE:FUNCTION" in error("gbt_objmod_a")
    assert "objective file missing.py not found" in error("missing.py:f")
    (tmp_path / "gbt_objmod_bad.py").write_text("import gbt_dependency_that_is_missing\n")
    assert ("importing objective module 'gbt_objmod_bad' failed: ModuleNotFoundError: "
            "No module named 'gbt_dependency_that_is_missing'") in error("gbt_objmod_bad:f")
    (tmp_path / "gbt_syntax.py").write_text("def f(:\n")
    assert "SyntaxError" in error(f"{tmp_path}/gbt_syntax.py:f") and "line 1" in error(f"{tmp_path}/gbt_syntax.py:f")


# -- the command line ---------------------------------------------------------------------------------------------
def graphbo_command():
    """The installed `graphbo` script; else the module run without the current directory on sys.path
    (so that importing the objective from the current directory is graphbo's doing, as with the script)."""
    script = Path(sys.executable).with_name("graphbo")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-P", "-m", "graphbo"] if sys.version_info >= (3, 11) else [sys.executable, "-m", "graphbo"]


def run_cli(*args, cwd):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([*graphbo_command(), *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600)


def stored_trials(path):
    conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT number, config, status, value FROM trials ORDER BY number").fetchall()
        attrs = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'user_attrs'").fetchone()[0])
    finally:
        conn.close()
    return [(n, json.loads(c), s, v) for n, c, s, v in rows], attrs


def test_cli_run_optimizes_a_module_function_over_a_yaml_space(tmp_path):
    (tmp_path / "space.yaml").write_text(SPACE_YAML)
    (tmp_path / "gbt_user_objective.py").write_text(OBJECTIVE_SOURCE)
    out = run_cli("run", "--space", "space.yaml", "--objective", "gbt_user_objective:objective", "--method", "rs",
                  "--budget", 6, "--seed", 2, "--storage", "study.db", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    trials, attrs = stored_trials(tmp_path / "study.db")
    f = reference_objective()
    space = load_space(tmp_path / "space.yaml")
    assert [t[0] for t in trials] == list(range(6)) and all(t[2] == "complete" for t in trials)
    for _, config, _, value in trials:
        space.validate(config)
        assert value == f(config)
    assert len({json.dumps(c, sort_keys=True) for _, c, _, _ in trials}) == 6
    best = min(trials, key=lambda t: t[3])
    shown = {k: float(f"{v:.12g}") if isinstance(v, float) else v for k, v in best[1].items()}  # 12 digits
    assert f"best value {best[3]:.6g} at {json.dumps(shown)}" in out.stdout
    numbers = [int(words[0]) for words in map(str.split, out.stdout.splitlines()) if words and words[0].isdigit()]
    assert numbers == [t[0] for t in trials]  # progress lines, as for benchmarks, numbered as the study file
    assert attrs["objective"] == "gbt_user_objective:objective" and attrs["budget"] == 6
    assert space_from_dict(attrs["space"]) is not None and attrs["space"] == space_to_dict(space)


def test_cli_run_a_file_objective_then_resume_from_elsewhere(tmp_path):
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    (work / "problems").mkdir()
    (work / "problems" / "my_problem.py").write_text(OBJECTIVE_SOURCE)
    space = space_from_dict(__import__("yaml").safe_load(SPACE_YAML))
    save_space(space, work / "space.json")
    out = run_cli("run", "--space", "space.json", "--objective", "problems/my_problem.py:objective",
                  "--method", "sa", "--budget", 4, "--seed", 0, "--n-initial", 2, "--quiet", cwd=work)
    assert out.returncode == 0, out.stderr
    studies = list((work / "runs").glob("space-sa-seed0-*.db"))  # the default study file
    assert len(studies) == 1 and f"study saved in {os.path.join('runs', studies[0].name)}" in out.stdout
    first, attrs = stored_trials(studies[0])
    stored_file, _, function = attrs["objective"].rpartition(":")
    assert len(first) == 4 and function == "objective"
    assert Path(stored_file).resolve() == (work / "problems" / "my_problem.py").resolve()

    out = run_cli("resume", studies[0], "--budget", 7, "--trust-stored-objective", cwd=other)
    assert out.returncode == 0, out.stderr
    assert "resuming" in out.stdout and "4/7 finished" in out.stdout
    trials, attrs = stored_trials(studies[0])
    f = reference_objective()
    assert trials[:4] == first and len(trials) == 7
    for _, config, status, value in trials:
        assert status == "complete" and value == f(config)
    best = min(t[3] for t in trials)
    assert f"best value {best:.6g}" in out.stdout


def test_cli_errors_are_one_line(tmp_path):
    (tmp_path / "space.yaml").write_text(SPACE_YAML)
    (tmp_path / "bad.yaml").write_text("variables:\n  lr: {type: real, low: 0, high: 1}\n")
    (tmp_path / "gbt_err_objective.py").write_text(OBJECTIVE_SOURCE)
    out = run_cli("run", "--space", "space.yaml", "--objective", "gbt_err_objective:objectve", "--budget", 3,
                  cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr
    assert "has no attribute 'objectve'" in out.stderr and "it defines objective" in out.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("argv, expected", [
    (["run", "branin", "--space", "space.yaml", "--objective", "gbt_cli_obj:objective", "--budget", "3"],
     "not both"),
    (["run", "--budget", "3"], "give a benchmark"),
    (["run", "--space", "space.yaml", "--budget", "3"], "give --objective MODULE:FUNCTION too"),
    (["run", "--objective", "gbt_cli_obj:objective", "--budget", "3"], "give --space FILE too"),
    (["run", "--space", "space.yaml", "--objective", "gbt_cli_obj:objective"], "--budget N"),
    (["run", "--space", "space.yaml", "--objective", "gbt_cli_obj:objective", "--budget", "3", "--wcnf", "x.wcnf"],
     "--wcnf apply to benchmarks only"),
    (["run", "--space", "space.yaml", "--objective", "gbt_cli_obj:objective", "--budget", "3",
      "--benchmark-option", "graph=path"], "--benchmark-option apply to benchmarks only"),
    (["run", "--space", "bad.yaml", "--objective", "gbt_cli_obj:objective", "--budget", "3"],
     "bad.yaml: variable 'lr': unknown type 'real'"),
    (["run", "--space", "none.yaml", "--objective", "gbt_cli_obj:objective", "--budget", "3"],
     "none.yaml: no such space file"),
    (["run", "--space", "space.yaml", "--objective", "gbt_no_such_module:objective", "--budget", "3"],
     "objective module 'gbt_no_such_module' not found"),
    (["run", "--space", "space.yaml", "--objective", "gbt_cli_obj:OFFSET", "--budget", "3"],
     "'gbt_cli_obj:OFFSET' is not callable (it is of type float)"),
    (["run", "--space", "space.yaml", "--objective", "gbt_cli_obj:objective", "--budget", "3", "--method", "combo"],
     "COMBO handles discrete variables only"),
    (["run", "--space", "space.yaml", "--objective", "gbt_cli_obj:objective", "--budget", "3", "--method", "combo"],
     "use method 'bofm' for a mixed space (graphbo.BOFM, --method bofm on the command line)"),
    (["run", "--space", "space.yaml", "--objective", "gbt_cli_obj:objective", "--budget", "0"], "--budget must be"),
])
def test_cli_usage_errors(tmp_path, monkeypatch, capsys, argv, expected):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(objective_loading, "_LOADED", {})
    (tmp_path / "space.yaml").write_text(SPACE_YAML)
    (tmp_path / "bad.yaml").write_text("variables:\n  lr: {type: real, low: 0, high: 1}\n")
    (tmp_path / "gbt_cli_obj.py").write_text(OBJECTIVE_SOURCE)
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and err.strip().count("\n") == 0, err
    assert not (tmp_path / "runs").exists()


def test_cli_storage_of_another_problem_is_refused_and_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(objective_loading, "_LOADED", {})
    (tmp_path / "space.yaml").write_text(SPACE_YAML)
    (tmp_path / "gbt_cli_obj2.py").write_text(OBJECTIVE_SOURCE + "\ndef other(config):\n    return 1.0\n")
    base = ["run", "--space", "space.yaml", "--method", "rs", "--budget", "3", "--quiet", "--storage", "s.db"]
    assert cli_main(base + ["--objective", "gbt_cli_obj2:objective"]) == 0
    before = (tmp_path / "s.db").read_bytes()
    capsys.readouterr()
    assert cli_main(base + ["--objective", "gbt_cli_obj2:other"]) == 2
    assert "s.db is a study of objective gbt_cli_obj2:objective" in capsys.readouterr().err
    (tmp_path / "space2.yaml").write_text(SPACE_YAML.replace("high: 8", "high: 9"))
    assert cli_main(base[:2] + ["space2.yaml"] + base[3:] + ["--objective", "gbt_cli_obj2:objective"]) == 2
    assert "on another space" in capsys.readouterr().err
    assert cli_main(["run", "branin", "--method", "rs", "--budget", "3", "--quiet", "--storage", "s.db"]) == 2
    assert "s.db is a study of objective gbt_cli_obj2:objective, not of branin" in capsys.readouterr().err
    assert (tmp_path / "s.db").read_bytes() == before
    # the same command with a larger budget continues it, in two worker processes
    assert cli_main(base[:-4] + ["5", "--quiet", "--storage", "s.db", "--workers", "2",
                                 "--objective", "gbt_cli_obj2:objective"]) == 0
    trials, attrs = stored_trials(tmp_path / "s.db")
    f = reference_objective()
    assert len(trials) == 5 and attrs["budget"] == 5
    assert all(s == "complete" and v == f(c) for _, c, s, v in trials)
    # a resume whose objective cannot be imported any more fails cleanly
    (tmp_path / "gbt_cli_obj2.py").unlink()
    monkeypatch.setattr(objective_loading, "_LOADED", {})
    monkeypatch.delitem(sys.modules, "gbt_cli_obj2")
    capsys.readouterr()
    assert cli_main(["resume", "s.db", "--budget", "6", "--trust-stored-objective"]) == 2
    err = capsys.readouterr().err
    assert "cannot re-import its objective" in err and "'gbt_cli_obj2' not found" in err
    assert len(stored_trials(tmp_path / "s.db")[0]) == 5


def test_combo_names_an_integer_range_for_what_it_is():
    import graphbo as gb

    space = gb.Space({"n": gb.Integer(1, 1000), "b": gb.Binary(), "x": gb.Continuous(0.0, 1.0)})
    with pytest.raises(ValueError) as err:
        gb.COMBO(space)
    text = str(err.value)
    assert "'n' is an integer range" in text and "'x' is continuous" in text and "'n' is continuous" not in text
    assert "--method bofm" in text
