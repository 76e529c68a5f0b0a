"""The layer order of docs/architecture.md and the absence of import cycles, checked by
import-linter's contracts in ``.importlinter`` (a layers contract and an acyclic-siblings one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: a project-wide check: CI's second step (`python -m pytest -m "checks and not slow"`), not the default run
pytestmark = pytest.mark.checks

ROOT = Path(__file__).resolve().parents[2]
RUN_LINTER = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint(config: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN_LINTER, str(config), "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_imports_follow_the_documented_layers_and_have_no_cycles():
    pytest.importorskip("importlinter")
    done = lint(ROOT / ".importlinter")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 kept, 0 broken" in done.stdout


def test_the_contracts_catch_an_upward_import(tmp_path):
    """The same contracts on a copy of the package with one upward import added must fail."""
    pytest.importorskip("importlinter")
    import shutil

    pkg = tmp_path / "graphbo"
    shutil.copytree(ROOT / "src" / "graphbo", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    with open(pkg / "models" / "base.py", "a") as f:
        f.write("\nfrom ..optimizers import combo as _upward  # noqa\n")
    config = tmp_path / "contracts.ini"
    config.write_text((ROOT / ".importlinter").read_text())
    done = subprocess.run([sys.executable, "-c", RUN_LINTER, str(config), "--no-cache"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    assert "graphbo.models.base -> graphbo.optimizers" in done.stdout
