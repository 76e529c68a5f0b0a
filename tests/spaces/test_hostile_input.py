"""Space definitions from someone else: every hostile input ends in one clear error,
in bounded time and memory, and runs nothing.

The caps are those of :mod:`graphbo.spaces.limits` (documented in docs/spaces.md, "Limits and untrusted
files"). Memory is checked with tracemalloc (Python and NumPy allocations) or, for the alias bomb, in a
child process with a 2 GiB address-space limit, so a regression fails fast instead of exhausting the machine.
"""

import json
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc

import pytest

import graphbo as gb
from graphbo.spaces import limits
from graphbo.spaces.io import SpaceFileError, load_space, space_from_dict

yaml = pytest.importorskip("yaml")  # imported here, not first inside a tracemalloc-timed call


def alias_chain(levels=9, width=9):
    """A "billion laughs" chain: level ``i`` lists ``width`` aliases of level ``i - 1`` (``width**levels`` leaves)."""
    lines = ["  l0: &l0 [" + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def bounded(fn, seconds=1.0, megabytes=64):
    """Call ``fn`` (which must raise SpaceFileError); return the message, checking its time and peak memory."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(SpaceFileError) as err:
            fn()
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < seconds, f"took {elapsed:.2f} s"
    assert peak < megabytes * 2**20, f"peak {peak / 2**20:.0f} MiB"
    message = str(err.value)
    assert len(message) < 600, message[:1000]  # a message quotes user values only in part
    return message


# -- YAML alias bombs ------------------------------------------------------------------------------
BOMB_CHILD = textwrap.dedent("""
    import resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    from graphbo.spaces.io import load_space
    start = time.perf_counter()
    try:
        load_space(sys.argv[1])
        print("LOADED")
    except BaseException as exc:
        print(type(exc).__name__, str(exc)[:300])
    print(f"seconds={time.perf_counter() - start:.3f}")
    # this image's peak (VmHWM): ru_maxrss would keep the forked parent's peak across exec
    hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
    print(f"maxrss_kib={int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
""")


@pytest.mark.parametrize("where", ["version", "choices"])
def test_an_alias_bomb_fails_fast_in_bounded_memory(tmp_path, where):
    # a 1 KB file that expands to 9^9 = 387 million strings; graphbo 0.1 took 20-120 s and 3.4 GB to fail
    if where == "version":
        text = "version:\n" + alias_chain() + "\nvariables:\n  x: {type: binary}\n"
    else:
        text = "variables:\n  x:\n    type: categorical\n    choices:\n" + textwrap.indent(alias_chain(), "    ") + "\n"
    path = write(tmp_path, "bomb.yaml", text)
    assert path.stat().st_size < 1200
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", BOMB_CHILD, str(path)], capture_output=True, text=True,
                         timeout=120, env=env).stdout
    lines = out.splitlines()
    assert lines[0].startswith("SpaceFileError") and "alias" in lines[0], out
    assert str(path) in lines[0]
    seconds = float(lines[1].split("=")[1])
    maxrss_mib = int(lines[2].split("=")[1]) / 1024
    assert seconds < 1.0, out
    assert maxrss_mib < 300, out  # the interpreter and NumPy included


def test_an_alias_bomb_in_process_is_bounded_too(tmp_path):
    path = write(tmp_path, "bomb.yaml", "version:\n" + alias_chain(levels=7) + "\nvariables:\n  x: {type: binary}\n")
    message = bounded(lambda: load_space(path))
    assert "holds more than 65,536 values (scalars, lists and mappings, each alias counting as a copy" in message


def test_too_many_values_in_a_json_file_are_refused(tmp_path):
    items = ", ".join(["1"] * 70_000)
    path = write(tmp_path, "many.json", f'{{"variables": {{"x": {{"type": "binary"}}}}, "version": [{items}]}}')
    message = bounded(lambda: load_space(path), seconds=5.0, megabytes=100)
    assert message.startswith(f"{path}: the file holds more than 65,536 values (scalars, lists and mappings)")


def test_too_many_plain_values_in_a_yaml_file_are_refused_while_reading(tmp_path, monkeypatch):
    # PyYAML's safe (pure-Python) parser takes about 0.15 ms a node on a slow machine, so 65,536 nodes take
    # about 10 s; the count is checked here with a cap of 1,000, on a file of 70,000 plain scalars
    monkeypatch.setattr("graphbo.spaces.reading.MAX_NODES", 1000)
    items = ", ".join(["1"] * 70_000)
    path = write(tmp_path, "many.yaml", f"variables: {{x: {{type: binary}}}}\nversion: [{items}]\n")
    message = bounded(lambda: load_space(path), seconds=2.0)
    assert message.startswith(f"{path}: the file holds more than 1,000 values (scalars, lists and mappings, each alias")
    assert "(line 2)" in message


def test_a_recursive_alias_is_refused(tmp_path):
    path = write(tmp_path, "loop.yaml", "variables: &v\n  x: {type: binary}\n  y: *v\n")
    assert "recursive" in bounded(lambda: load_space(path))
    path = write(tmp_path, "loop2.yaml", "version: &a [1, *a]\nvariables:\n  x: {type: binary}\n")
    assert "alias *a is used inside its own anchor's value" in bounded(lambda: load_space(path))


def test_small_anchors_and_merge_keys_still_work(tmp_path):
    path = write(tmp_path, "anchors.yaml", textwrap.dedent("""
        variables:
          a: {type: categorical, choices: &acts [relu, elu, tanh]}
          b: {type: categorical, choices: *acts}
          lr: &bounds {type: continuous, low: 0.001, high: 0.1}
          wd:
            <<: *bounds
            log: true
    """))
    space = load_space(path)
    assert space["a"].values == space["b"].values == ("relu", "elu", "tanh")
    assert (space["wd"].low, space["wd"].high, space["wd"].log) == (0.001, 0.1, True)


# -- nesting and size --------------------------------------------------------------------------------
@pytest.mark.parametrize("ext, text", [
    (".yaml", "variables:\n  x: {type: binary}\nversion: " + "[" * 100_000 + "]" * 100_000 + "\n"),
    (".yaml", "variables:\n  x: {type: binary}\nversion: " + "{a: " * 5_000 + "1" + "}" * 5_000 + "\n"),
    (".json", '{"variables": {"x": {"type": "binary"}}, "version": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    (".json", '{"variables": {"x": {"type": "binary"}}, "version": ' + "[" * 100 + "]" * 100 + "}"),
])
def test_deep_nesting_is_a_clear_error(tmp_path, ext, text):
    path = write(tmp_path, "deep" + ext, text)
    message = bounded(lambda: load_space(path), seconds=0.5)
    assert message.startswith(f"{path}: lists and mappings nested more than 32 levels deep")


def test_nesting_up_to_the_cap_is_read(tmp_path):
    # 32 levels of lists inside a value: read, then refused by the schema (not by the reader)
    depth = limits.MAX_DEPTH - 3  # the top mapping, `variables` and the variable's mapping are 3 levels
    text = '{"variables": {"x": {"type": "categorical", "choices": ' + "[" * depth + "]" * depth + "}}}"
    message = str(pytest.raises(SpaceFileError, load_space, write(tmp_path, "ok.json", text)).value)
    assert "is not a string, number, boolean or null" in message


def test_an_enormous_file_is_refused_before_it_is_parsed(tmp_path):
    space = '{"variables": {"x": {"type": "binary"}}}'
    path = write(tmp_path, "big.json", space + " " * (2 * limits.MAX_FILE_BYTES))
    message = bounded(lambda: load_space(path), seconds=0.5, megabytes=8)
    assert message == f"{path}: the file is larger than 1,048,576 bytes, the limit for a space file " \
                      "(graphbo.spaces.limits.MAX_FILE_BYTES)"
    # just under the cap: read as usual
    path = write(tmp_path, "padded.json", space + " " * (limits.MAX_FILE_BYTES - len(space)))
    assert load_space(path).names == ("x",)


def test_a_folder_or_binary_file_is_a_clear_error(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    assert str(pytest.raises(SpaceFileError, load_space, tmp_path / "dir.yaml").value).endswith("not a regular file")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in str(pytest.raises(SpaceFileError, load_space, tmp_path / "bin.json").value)


@pytest.mark.parametrize("ext", [".yaml", ".json"])
def test_an_integer_of_thousands_of_digits_is_a_space_file_error(tmp_path, ext):
    digits = "7" * 5000
    text = (f"version: {digits}\nvariables:\n  x: {{type: binary}}\n" if ext == ".yaml"
            else f'{{"version": {digits}, "variables": {{"x": {{"type": "binary"}}}}}}')
    message = bounded(lambda: load_space(write(tmp_path, "long" + ext, text)))
    assert "invalid" in message and "4300" in message


def test_huge_values_are_quoted_only_in_part(tmp_path):
    name = "n" * 500_000
    path = write(tmp_path, "name.json", json.dumps({"variables": {name: {"type": "binary", "extra": 1}}}))
    message = bounded(lambda: load_space(path))
    assert "unknown key 'extra' for type binary" in message and "nnn..." in message
    version = list(range(100_000))
    message = bounded(lambda: space_from_dict({"version": version, "variables": {"x": {"type": "binary"}}}))
    assert message.startswith("space: unsupported version [0, 1, 2,")


@pytest.mark.parametrize("spec", [{"type": ["binary"]}, {"type": {"a": 1}},
                                  {"type": "integer", "low": 0, "high": 3, "encoding": ["ordinal"]}])
def test_unhashable_fields_are_schema_errors(spec):
    message = bounded(lambda: space_from_dict({"variables": {"x": spec}}))
    assert message.startswith("space: variable 'x': ")


# -- variables too large for a dense graph ---------------------------------------------------------
@pytest.mark.parametrize("spec, field", [
    ({"type": "categorical", "choices": list(range(10**6))}, "choices has 1,000,000 values"),
    ({"type": "ordinal", "values": list(range(10**5))}, "values has 100,000 values"),
    ({"type": "graph", "values": list(range(10**5)), "edges": [[0, 1]]}, "values has 100,000 values"),
    ({"type": "integer", "low": 0, "high": 10**9, "encoding": "ordinal"}, "encoding: ordinal over 1,000,000,001"),
])
def test_a_variable_with_too_many_values_is_refused_before_allocation(spec, field):
    # dense adjacencies of 7 TiB, 75 GiB, 75 GiB and 7 EiB
    message = bounded(lambda: space_from_dict({"variables": {"big": spec}}), seconds=2.0, megabytes=16)
    assert message.startswith(f"space: variable 'big': {field}")
    assert "at most 2048 values" in message


def test_the_discrete_variables_together_are_capped():
    spec = {"type": "integer", "low": 1, "high": 1500, "encoding": "ordinal"}
    variables = {"a": spec, "b": spec, "c": spec}
    message = bounded(lambda: space_from_dict({"variables": variables}), seconds=5.0, megabytes=100)
    assert message.startswith("space: variable 'b': the discrete variables so far have 4,500,000 adjacency entries")
    assert "at most 4,194,304" in message
    one = space_from_dict({"variables": {"a": spec}})  # one such variable is fine
    assert one["a"].n_values == 1500


def test_a_long_edge_list_stops_at_the_first_repeat():
    # a list longer than the k (k - 1) / 2 pairs must repeat one: the walk ends within that many edges
    edges = [["a", "b"]] * 10**6
    message = bounded(lambda: space_from_dict({"variables": {"g": {"type": "graph", "values": ["a", "b", "c"],
                                                                   "edges": edges}}}))
    assert message == "space: variable 'g': edges[1] repeats the edge 'a' - 'b'"


@pytest.mark.parametrize("make, arg", [
    (lambda: gb.Categorical(range(10**6)), "Categorical: choices has 1,000,000 values"),
    (lambda: gb.Ordinal(range(10**12)), "Ordinal: values has 1,000,000,000,000 values"),
    (lambda: gb.GraphVariable(list(range(3000)), None), "GraphVariable: values has 3,000 values"),
    (lambda: gb.Integer(0, 10**12, max_ordinal=10**13), "Integer: low .. high has 1,000,000,000,001 values"),
])
def test_the_python_api_has_the_same_cap(make, arg):
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="at most 2048") as err:
            make()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value).startswith(arg)
    assert peak < 64 * 2**20


def test_the_largest_allowed_variable_is_built():
    var = gb.Ordinal(range(limits.MAX_VALUES))
    assert var.n_values == 2048 and var.adjacency.shape == (2048, 2048)


# -- bounds and names ------------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("variables:\n  lr: {type: continuous, low: .nan, high: 1}\n",
     "variable 'lr': low must be finite, got nan"),
    ("variables:\n  lr: {type: continuous, low: 0, high: .inf}\n", "variable 'lr': high must be finite, got inf"),
    ("variables:\n  lr: {type: continuous, low: 1, high: 0.5}\n",
     "variable 'lr': low must be < high, got low=1, high=0.5"),
    ("variables:\n  n: {type: integer, low: 5, high: 5}\n", "variable 'n': low must be < high"),
    ("variables:\n  lr: {type: continuous, low: 0, high: 1, log: true}\n", "variable 'lr': log: true needs low > 0"),
    ("variables:\n  x: {type: binary}\n  x: {type: binary}\n", "line 3: duplicate key 'x'"),
    ("variables:\n  '': {type: binary}\n", "variable names must be non-empty strings, got ''"),
    ("variables:\n  1: {type: binary}\n", "variable names must be non-empty strings, got 1"),
    ("variables:\n  null: {type: binary}\n", "variable names must be non-empty strings, got None"),
    ("variables:\n  true: {type: binary}\n", "variable names must be non-empty strings, got True"),
    ("variables:\n  ? [a, b]\n  : {type: binary}\n", "line 2: a mapping key must be a scalar, got ['a', 'b']"),
])
def test_bad_bounds_and_names_are_clear_errors(tmp_path, text, message):
    path = write(tmp_path, "space.yaml", text)
    assert message in bounded(lambda: load_space(path))


def test_json_nan_bounds_and_duplicate_names(tmp_path):
    path = write(tmp_path, "nan.json", '{"variables": {"lr": {"type": "continuous", "low": NaN, "high": 1}}}')
    assert "variable 'lr': low must be finite, got nan" in bounded(lambda: load_space(path))
    path = write(tmp_path, "dup.json", '{"variables": {"x": {"type": "binary"}, "x": {"type": "binary"}}}')
    assert bounded(lambda: load_space(path)) == f"{path}: duplicate key 'x'"


@pytest.mark.parametrize("make, message", [
    (lambda: gb.Continuous(float("nan"), 1.0), "Continuous: need finite low < high, got low=nan"),
    (lambda: gb.Continuous(1.0, 0.0), "Continuous: need finite low < high, got low=1.0, high=0.0"),
    (lambda: gb.Space({"": gb.Binary()}), "Space: variable names must be non-empty strings, got ''"),
    (lambda: gb.Space({3: gb.Binary()}), "Space: variable names must be non-empty strings, got 3"),
    (lambda: gb.Space([("a", gb.Binary()), ("a", gb.Binary())]), "Space: duplicate variable name 'a'"),
])
def test_the_python_api_names_bad_bounds_and_names(make, message):
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value).startswith(message)


# -- nothing runs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("tag", [
    "!!python/object/apply:os.system [{cmd}]",
    "!!python/object/apply:subprocess.check_call [[sh, -c, {cmd}]]",
    "!!python/object/new:os.system [{cmd}]",
    "!!python/name:os.system",
    "!!python/module:os",
])
def test_python_tags_are_refused_and_nothing_runs(tmp_path, tag):
    marker = tmp_path / "ran"
    cmd = f"'touch {marker}'"
    path = write(tmp_path, "evil.yaml", f"version: {tag.format(cmd=cmd)}\nvariables:\n  x: {{type: binary}}\n")
    message = bounded(lambda: load_space(path))
    assert "invalid YAML" in message and "could not determine a constructor for the tag" in message
    assert not marker.exists()


def test_an_integer_too_large_for_a_float_in_a_space_file_is_one_line(tmp_path):
    import json as _json

    for kind in ("integer", "continuous"):
        path = tmp_path / f"{kind}.json"
        path.write_text(_json.dumps({"variables": {"x": {"type": kind, "low": 1, "high": int("9" * 401)}}}))
        with pytest.raises(SpaceFileError, match=r"variable 'x': high is an integer of about 40\d digits"):
            load_space(str(path))


def test_a_variable_name_that_is_not_valid_text_is_refused_where_it_is_given(tmp_path):
    import json as _json

    path = tmp_path / "s.json"
    path.write_text(_json.dumps({"variables": {"x\ud800y": {"type": "binary"}}}))
    with pytest.raises(SpaceFileError, match=r"s.json: Space: variable name .* is not valid Unicode text"):
        load_space(str(path))
    with pytest.raises(ValueError, match="lone surrogate"):
        gb.Space({"x\ud800": gb.Binary()})


def test_a_garbage_rollback_journal_is_named_and_a_writer_recovers_it(tmp_path):
    import graphbo as gb
    from graphbo.storage.base import HotJournalError
    from graphbo.storage.info import read_study_info

    space = gb.Space({"a": gb.Ordinal([0, 1, 2])})
    path = tmp_path / "s.db"
    with gb.Study(space, "rs", storage=path, seed=0) as study:
        study.tell(study.ask(), 1.5)
    journal = tmp_path / "s.db-journal"
    journal.write_bytes(b"\xa5" * 4096)  # not a journal SQLite wrote (a first byte of 0 would not count as hot)
    with pytest.raises(HotJournalError, match=r"s\.db-journal.*graphbo resume"):
        read_study_info(path)  # a reader cannot roll it back, and says so (not "read-only")
    assert journal.exists()
    with gb.Study(space, storage=path) as study:  # a writer lets SQLite recover it
        assert [t.value for t in study.trials] == [1.5]
    assert not journal.exists() and read_study_info(path)["n_complete"] == 1
