"""The command line as a newcomer meets it: --version, python -m graphbo, help built from the
method registry, argument validation, one-line errors (a missing extra included), the benchmark's
natural method, resumable default runs with Ctrl-C, and what `compare` prints in parallel.

The CLI tests run the real command in a subprocess (``python -m graphbo ...``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from importlib import metadata

import pytest

import graphbo
from graphbo.cli._common import natural_method, seed_list
from graphbo.cli.compare import default_methods

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def cli(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "graphbo", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=timeout)


def with_missing(module: str, argv: list[str], cwd) -> subprocess.CompletedProcess:
    """``graphbo ARGV`` in a process where ``import MODULE`` fails (a ``None`` entry in ``sys.modules``)."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            f"from graphbo.cli import main\nraise SystemExit(main({argv!r}))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=ENV,
                          timeout=300)


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


# -- 1. version, python -m graphbo, description, method help --------------------------------------------
def test_version_flag_matches_the_installed_package():
    out = cli("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"graphbo {graphbo.__version__}"
    assert graphbo.__version__ == metadata.version("graphbo")


def test_python_m_graphbo_without_a_command_is_a_one_line_usage_error():
    out = cli()
    assert out.returncode == 2
    assert "graphbo" in one_line(out.stderr) and "command" in out.stderr


def test_description_names_the_three_methods_not_only_combo():
    out = cli("--help")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "(COMBO)" not in text
    for method in ("COMBO", "BO-FM", "NASBOT"):
        assert method in text


@pytest.mark.parametrize("command", ["run", "compare"])
def test_method_help_lists_every_registered_method(command):
    from graphbo.optimizers import METHODS

    out = cli(command, "--help")
    assert out.returncode == 0, out.stderr
    words = set(re.findall(r"[\w.-]+", out.stdout))
    missing = [name for name in METHODS if name not in words]
    assert not missing, missing


# -- 2. validation -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, option", [
    (["compare", "branin", "--budget", "0"], "--budget"),
    (["compare", "branin", "--budget", "-1"], "--budget"),
    (["run", "branin", "--budget", "-1"], "--budget"),
    (["run", "branin", "--budget", "0"], "--budget"),
    (["compare", "branin", "--seeds", "0..3"], "--seeds"),
    (["compare", "branin", "--seeds", "3-1"], "--seeds"),
    (["compare", "branin", "--seeds", "-2"], "--seeds"),
    (["compare", "branin", "--workers", "0"], "--workers"),
    (["run", "branin", "--workers", "0"], "--workers"),
    (["run", "branin", "--timeout", "-1"], "--timeout"),
    (["run", "branin", "--timeout", "0"], "--timeout"),
    (["run", "branin", "--n-initial", "-1"], "--n-initial"),
])
def test_bad_arguments_are_one_argparse_error_naming_the_option(tmp_path, argv, option):
    if argv[0] == "compare":
        argv = argv + ["--out", "cmp"]
    out = cli(*argv, cwd=tmp_path)
    assert out.returncode == 2
    line = one_line(out.stderr)
    assert line.startswith(f"graphbo {argv[0]}: {option}"), line
    assert out.stdout == ""
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cmp").exists()  # nothing ran


def test_seed_forms():
    assert seed_list("3") == [3]
    assert seed_list("0-4") == [0, 1, 2, 3, 4]
    assert seed_list("0-2,7, 9") == [0, 1, 2, 7, 9]
    for bad in ("0..3", "", "a", "4-2", "-1"):
        with pytest.raises(Exception, match="inclusive range"):
            seed_list(bad)


# -- 3. errors a user can act on -----------------------------------------------------------------------------
def test_missing_extra_of_a_method_is_one_pip_line(tmp_path):
    argv = ["run", "branin", "--method", "tpe", "--budget", "3", "--storage", "s.db"]
    out = with_missing("optuna", argv, tmp_path)
    assert out.returncode == 1, out.stderr
    assert one_line(out.stderr).endswith('pip install "graphbo[tpe]"')
    debug = with_missing("optuna", argv + ["--debug"], tmp_path)  # also after the subcommand
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_missing_extra_imported_bare_is_named_from_the_package_metadata(tmp_path):
    """`graphbo report` imports matplotlib without a message of its own: the extra comes from graphbo's
    declared requirements (matplotlib is in the "report" extra)."""
    made = cli("compare", "branin", "--methods", "rs", "--seeds", "0", "--budget", "2", "--out", "cmp", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    out = with_missing("matplotlib", ["report", "cmp", "--out", "r.md"], tmp_path)
    assert out.returncode == 1
    line = one_line(out.stderr)
    assert line.startswith("graphbo report:") and line.endswith('pip install "graphbo[report]"'), line


def test_require_and_extra_of():
    from graphbo._lazy import MissingExtraError, extra_of, require

    assert extra_of("sklearn.svm") == ("scikit-learn", "benchmarks")
    assert extra_of("yaml") == ("pyyaml", "yaml")
    assert extra_of("numpy") == ("numpy", None)  # a core dependency
    assert extra_of("graphbo_no_such_module") is None
    assert require("json", "X").dumps(1) == "1"
    with pytest.raises(MissingExtraError, match=r'^Thing needs graphbo_absent: pip install "graphbo\[xyz\]"$'):
        require("graphbo_absent", "Thing", extra="xyz")
    with pytest.raises(ImportError):  # still an ImportError for code that catches those
        require("graphbo_absent", "Thing", extra="xyz")


def test_an_unexpected_error_is_one_line_without_traceback_unless_debug(tmp_path):
    (tmp_path / "cmp" / "rs").mkdir(parents=True)
    (tmp_path / "a_file").write_text("")
    out = cli("report", "cmp", "--out", "a_file/r.md", cwd=tmp_path)  # its folder is a file: an OSError
    assert out.returncode == 1
    line = one_line(out.stderr)
    assert line.startswith("graphbo report: NotADirectoryError: ") and "--debug" in line, line
    debug = cli("--debug", "report", "cmp", "--out", "a_file/r.md", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr


# -- 4. the benchmark's natural method ---------------------------------------------------------------------------
@pytest.mark.parametrize("benchmark, method", [("func2c", "bofm"), ("branin", "combo"), ("nas-synthetic", "nasbot")])
def test_run_without_method_uses_the_benchmarks_natural_method_as_compare_does(tmp_path, benchmark, method):
    from graphbo.benchmarks import load_benchmark
    from graphbo.storage.info import read_study_info

    space = load_benchmark(benchmark).space
    assert natural_method(space) == method
    assert default_methods(space).split(",")[0] == method  # compare's first method is the same one
    out = cli("run", benchmark, "--budget", "2", "--quiet", "--storage", "s.db", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert read_study_info(tmp_path / "s.db")["method"] == method


# -- 5. every run is resumable; Ctrl-C saves -------------------------------------------------------------------
def stored_trials(path) -> dict[int, tuple]:
    from graphbo.storage import SQLiteStorage

    return {t.number: (t.status, t.config, t.value) for t in SQLiteStorage(str(path)).load().trials}


def test_default_run_is_a_study_that_ctrl_c_saves_and_resume_finishes(tmp_path):
    # SIGINT at its default in the child, even when the tests run in a background job (which ignores it)
    proc = subprocess.Popen([sys.executable, "-m", "graphbo", "run", "branin", "--budget", "30"],
                            cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = proc.stdout.readline()
    path = re.search(r"study (\S+)$", first.strip()).group(1)  # the path comes first
    assert path.startswith("runs/branin-combo-seed0-") and path.endswith(".db"), first
    assert (tmp_path / path).exists()
    rows = 0
    while rows < 4:  # four trials told
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        rows += line.split()[0].isdigit()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert one_line(err).endswith(f"continue with: graphbo resume {path}"), err
    before = {n: t for n, t in stored_trials(tmp_path / path).items() if t[0] == "complete"}
    assert 4 <= len(before) < 30

    resumed = cli("resume", path, "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    after = stored_trials(tmp_path / path)
    assert sorted(after) == list(range(30)) and all(t[0] == "complete" for t in after.values())
    assert all(after[n] == t for n, t in before.items())  # the earlier trials are kept as they were


# -- 6. compare in parallel, summary counts ----------------------------------------------------------------------
def test_parallel_compare_prints_each_runs_best_and_a_consistent_summary(tmp_path):
    out = cli("compare", "branin", "--methods", "rs", "--seeds", "0-1", "--budget", "12", "--workers", "2",
              "--out", "cmp", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for seed in (0, 1):
        assert re.search(rf"^branin rs seed {seed}: 10/12 best \S+$", out.stdout, re.M), out.stdout
        assert re.search(rf"^done rs seed {seed}: best \S+", out.stdout, re.M), out.stdout
    assert out.stdout.strip().splitlines()[-1] == "graphbo compare: 2/2 runs finished under cmp"
    again = cli("compare", "branin", "--methods", "rs", "--seeds", "0-1", "--budget", "12", "--workers", "2",
                "--out", "cmp", cwd=tmp_path)
    assert again.returncode == 0
    assert again.stdout.count("finished") == 3 and "2/2 runs finished" in again.stdout  # two skips, one summary


def test_a_budget_below_the_finished_trials_is_refused(tmp_path):
    """What made "16/12 finished" possible: a study run again with a smaller budget recorded that budget."""
    from graphbo.storage.info import read_study_info

    assert cli("run", "branin", "--method", "rs", "--budget", "4", "--storage", "s.db", "--quiet",
               cwd=tmp_path).returncode == 0
    out = cli("run", "branin", "--method", "rs", "--budget", "2", "--storage", "s.db", cwd=tmp_path)
    assert out.returncode == 2
    assert "already has 4 finished trials" in one_line(out.stderr)
    info = read_study_info(tmp_path / "s.db")
    assert info["user_attrs"]["budget"] == 4 and info["n_complete"] == 4
