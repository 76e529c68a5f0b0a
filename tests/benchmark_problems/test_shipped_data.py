"""The COMBO paper's MaxSAT instances ship with graphbo: found by name, installed by the wheel, unchanged."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from graphbo.benchmarks import load_benchmark
from graphbo.benchmarks.maxsat import INSTANCES, MaxSAT, instance_path, read_wcnf

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "graphbo" / "benchmarks" / "data" / "maxsat"


@pytest.mark.parametrize("name,n_vars", [("maxsat28", 28), ("maxsat43", 43), ("maxsat60", 60)])
def test_each_instance_loads_by_name_with_the_papers_size(name, n_vars, monkeypatch):
    monkeypatch.delenv("GRAPHBO_MAXSAT_DIR", raising=False)
    bench = load_benchmark("maxsat", path=name)
    assert bench.name == name and len(bench.space) == n_vars
    assert Path(bench.path).parent == DATA
    # the file name (with or without .wcnf) names the same instance
    assert MaxSAT(INSTANCES[name]).path == bench.path == MaxSAT(INSTANCES[name][:-5]).path


def test_shipped_files_match_the_checksums_in_their_readme():
    listed = dict((name, digest) for digest, name in
                  re.findall(r"^([0-9a-f]{64})  (\S+)$", (DATA / "README.md").read_text(), flags=re.M))
    assert sorted(listed) == sorted(INSTANCES.values()) == sorted(p.name for p in DATA.glob("*.wcnf"))
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


def test_graphbo_maxsat_dir_comes_before_the_shipped_copy(tmp_path, monkeypatch):
    (tmp_path / INSTANCES["maxsat28"]).write_text("p wcnf 3 2\n1 1 -2 0\n2 3 0\n")
    (tmp_path / "mine.wcnf").write_text("p wcnf 2 1\n1 1 2 0\n")
    monkeypatch.setenv("GRAPHBO_MAXSAT_DIR", str(tmp_path))
    assert MaxSAT("maxsat28").name == "maxsat3"           # the folder's file, not the shipped one
    assert MaxSAT("mine").name == "maxsat2"                # any instance in the folder, by name
    monkeypatch.setenv("GRAPHBO_MAXSAT_DIR", str(tmp_path / "empty"))
    assert MaxSAT("maxsat28").name == "maxsat28"          # not there: the shipped copy


def test_unknown_names_and_missing_paths_are_one_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.*maxsat28, maxsat43, maxsat60"):
        MaxSAT("nope")
    # a path to a missing file is never replaced by a shipped instance of the same name
    with pytest.raises(FileNotFoundError, match="no such .wcnf file"):
        MaxSAT(tmp_path / INSTANCES["maxsat28"])


def test_graphbo_run_maxsat_by_instance_name(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("GRAPHBO_MAXSAT_DIR", None)
    out = subprocess.run([sys.executable, "-m", "graphbo", "run", "maxsat", "--wcnf", "maxsat28", "--method", "rs",
                          "--budget", "3", "--storage", str(tmp_path / "m.db")],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "maxsat28" in out.stdout


def test_the_wheel_contains_the_instances_and_their_readme(tmp_path):
    pytest.importorskip("setuptools")
    # built from a copy, so that the build's own folders stay out of the working tree
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation",
                          "-w", str(tmp_path / "wheel"), "-q"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    (wheel,) = (tmp_path / "wheel").glob("graphbo-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"graphbo/benchmarks/data/maxsat/{f}" for f in [*INSTANCES.values(), "README.md"]}
    assert shipped <= names
    with zipfile.ZipFile(wheel) as z:
        for f in INSTANCES.values():
            assert z.read(f"graphbo/benchmarks/data/maxsat/{f}") == (DATA / f).read_bytes()
