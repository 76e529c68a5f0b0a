import math
import subprocess
import sys

import numpy as np
import pytest

from graphbo.storage.info import load_study_file

from graphbo.benchmarks import REGISTRY, load_benchmark
from graphbo.benchmarks.branin import branin
from graphbo.benchmarks.maxsat import MaxSAT, read_wcnf


def test_branin_minimisers_and_grid_minimum():
    for x1, x2 in [(-math.pi, 12.275), (math.pi, 2.275), (9.42478, 2.475)]:
        assert branin(x1, x2) == pytest.approx(0.397887, abs=1e-5)
    b = load_benchmark("branin")
    assert b.grid_minimum() == pytest.approx(0.40377, abs=1e-5)
    assert b({"x1": 0.0, "x2": 0.0}) == pytest.approx(branin(-5.0, 0.0))
    assert b({"x1": 1.0, "x2": 1.0}) == pytest.approx(branin(10.0, 15.0))
    assert len(b.space["x1"].values) == 51 and b.space["x1"].edge_weight == 50.0
    rng = np.random.default_rng(0)
    for row in b.space.sample_index(5, rng):
        config = b.space.from_index(row)
        native = b.native_config(config)
        assert -5.0 <= native["x1"] <= 10.0 and 0.0 <= native["x2"] <= 15.0
        assert b(config) == pytest.approx(branin(native["x1"], native["x2"]))


def write(tmp_path, text):
    p = tmp_path / "t.wcnf"
    p.write_text(text)
    return p


def test_maxsat_by_hand(tmp_path):
    # clauses: (x1 v x2) w=1, (-x1) w=2, (x2 v -x3) w=3, (x3) w=6
    p = write(tmp_path, "c toy\np wcnf 3 4\n1 1 2 0\n2 -1 0\n3 2 -3 0\n6 3 0\n")
    b = MaxSAT(p)
    w = np.array([1, 2, 3, 6.0])
    z = (w - w.mean()) / w.std()
    assert b.name == "maxsat3" and len(b.space) == 3
    # all false: clauses 2 and 3 satisfied
    assert b({"x1": False, "x2": False, "x3": False}) == pytest.approx(-(z[1] + z[2]))
    # all true: clauses 1, 3, 4 satisfied
    assert b({"x1": True, "x2": True, "x3": True}) == pytest.approx(-(z[0] + z[2] + z[3]))


@pytest.mark.parametrize(
    "text, match",
    [("1 1 2 0\n", "before the 'p wcnf' header"), ("p wcnf 2 1\n1 1 3 0\n", "out of range"),
     ("p wcnf 2 1\n1 1 2\n", "does not end with 0"), ("p cnf 2 1\n1 2 0\n", "expected 'p wcnf"),
     ("p wcnf 2 1\nx 1 2 0\n", "not a weighted clause")],
)
def test_malformed_wcnf_names_the_line(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        read_wcnf(write(tmp_path, text))


def test_missing_wcnf_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such .wcnf"):
        MaxSAT(tmp_path / "absent.wcnf")


def test_maxsat28_instance(maxsat28_path):
    b = MaxSAT(maxsat28_path)
    n, w, clauses = read_wcnf(maxsat28_path)
    assert n == 28 and b.name == "maxsat28"
    assert b.weights.mean() == pytest.approx(0.0, abs=1e-12) and b.weights.std() == pytest.approx(1.0)
    # all-false assignment satisfies exactly the clauses with a negative literal
    has_neg = np.array([np.any(c < 0) for c in clauses])
    zero = {f"x{i + 1}": False for i in range(28)}
    assert b(zero) == pytest.approx(-b.weights[has_neg].sum())


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "graphbo", *args], capture_output=True, text=True, cwd=cwd)


def test_python_m_graphbo_help_lists_the_subcommands():
    out = cli("--help")
    assert out.returncode == 0, out.stderr
    for command in ("benchmarks", "run", "resume", "compare", "report"):
        assert command in out.stdout


def test_cli_lists_benchmarks():
    out = cli("benchmarks")
    assert out.returncode == 0
    for name in REGISTRY:
        assert name in out.stdout


def test_cli_run_writes_a_study_file(tmp_path):
    path = tmp_path / "t.db"
    out = cli("run", "branin", "--budget", "5", "--seed", "1", "--storage", str(path))
    assert out.returncode == 0, out.stderr
    stored = load_study_file(path)
    assert stored.meta["seed"] == 1
    trials = stored.trials
    assert [t.number for t in trials] == list(range(5)) and all(t.status == "complete" for t in trials)
    b = load_benchmark("branin")
    for t in trials:
        assert t.value == pytest.approx(b(t.config))
    assert "best value" in out.stdout and "     4 " in out.stdout  # trials numbered from 0 (Trial.number)
    # --trace, graphbo 0.1's JSON-lines output, is gone
    gone = cli("run", "branin", "--budget", "2", "--trace", str(tmp_path / "t.jsonl"))
    assert gone.returncode == 2 and "--trace" in gone.stderr and not (tmp_path / "t.jsonl").exists()


def test_cli_run_maxsat_needs_a_path(tmp_path):
    out = cli("run", "maxsat", "--budget", "3")
    assert out.returncode == 2 and "--wcnf" in out.stderr
    out = cli("run", "nosuch")
    assert out.returncode == 2 and "unknown benchmark" in out.stderr


def test_shipped_maxsat_instances_are_registered(tmp_path):
    """`graphbo run maxsat28` after install: the registry's names load the shipped files (no --wcnf)."""
    for n in (28, 43, 60):
        b = load_benchmark(f"maxsat{n}")
        same = MaxSAT(f"maxsat{n}")
        assert b.name == f"maxsat{n}" and len(b.space.names) == n
        row = b.space.sample_index(1, np.random.default_rng(n))[0]
        config = b.space.from_index(row)
        assert b(config) == same(config)
    out = cli("run", "maxsat28", "--budget", "2", "--quiet", "--storage", "t.db", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
