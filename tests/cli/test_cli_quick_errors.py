"""Input errors of the command line are answered before the models are imported (PyTorch, the optimizers):
a wrong method, a missing or foreign study file, a malformed objective spec. Checked in a fresh interpreter by
what it imported, not by a wall-clock limit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import graphbo as gb

PROBE = """
import json, sys
from graphbo.cli.parser import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "torch": "torch" in sys.modules, "optimizers": "graphbo.optimizers" in sys.modules}))
"""


def run_cli(args, cwd):
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=cwd, timeout=300)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "space.yaml").write_text("variables:\n  a: {type: integer, low: 0, high: 3}\n")
    (tmp_path / "notes.txt").write_text("not a study\n")
    return tmp_path


@pytest.mark.parametrize("args,message", [
    (["run", "branin", "--method", "combp"], "unknown method 'combp'"),
    (["run", "--space", "space.yaml", "--objective", "obj.f", "--budget", "5"], "--objective must be MODULE:FUNCTION"),
    (["resume", "runs/nope.db"], "no such study file"),
    (["resume", "notes.txt"], "not a graphbo study"),
    (["report", "notes.txt"], "not a graphbo study"),
])
def test_an_input_error_is_answered_before_the_models_are_imported(folder, args, message):
    out, err = run_cli(args, folder)
    assert out["rc"] in (1, 2) and message in err
    assert not out["torch"] and not out["optimizers"]


def test_the_light_list_of_method_names_is_the_optimizers_own():
    from graphbo.method_names import METHOD_NAMES
    from graphbo.optimizers import METHODS

    assert sorted(METHOD_NAMES) == sorted(METHODS)
    with pytest.raises(ValueError, match="unknown method 'combp'"):
        gb.Study(gb.Space({"a": gb.Binary()}), "combp")


def test_printed_configurations_round_floats_to_twelve_digits():
    from graphbo.cli._common import config_text

    assert config_text(None, {"x": -5 + 81 * 0.1, "y": "a", "z": [0.1 + 0.2, 2]}) == '{"x": 3.1, "y": "a", "z": [0.3, 2]}'
