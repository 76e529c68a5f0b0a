"""graphbo's type hints are checked by mypy with the configuration of ``pyproject.toml`` ([tool.mypy]).

The configuration (which modules are strict and why) is documented in ``docs/api.md``, "Type checking".
A cold run takes about half a minute; later runs reuse ``.mypy_cache`` and take about a second.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: a project-wide check: CI's second step (`python -m pytest -m "checks and not slow"`), not the default run
pytestmark = pytest.mark.checks

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_reports_no_error():
    pytest.importorskip("mypy")
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
                          cwd=ROOT, capture_output=True, text=True, env=env)
    output = proc.stdout + proc.stderr
    print(output)
    assert proc.returncode == 0, f"mypy found errors (exit code {proc.returncode}):\n{output}"


def test_the_package_is_marked_typed_and_ships_the_marker_and_the_stub():
    package = ROOT / "src" / "graphbo"
    assert (package / "py.typed").is_file() and (package / "__init__.pyi").is_file()
    text = (ROOT / "pyproject.toml").read_text()
    assert 'graphbo = ["py.typed", "__init__.pyi"]' in text
