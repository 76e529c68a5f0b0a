"""Every code block of README.md and docs/*.md runs, or says why it does not.

Rules (also in docs/architecture.md, "Documentation that runs"):

* ``python`` blocks of one document run in order in one interpreter (later blocks use the names of
  earlier ones, as a reader's session would), in a fresh folder;
* ``bash`` / ``sh`` blocks run with ``bash -e`` in the same folder;
* a block whose previous line ends in a file name in backticks followed by a colon (``space.yaml``:)
  is that file's content: it is written there instead of being run;
* ``<!-- not run: REASON -->`` on the line before a block (blank lines allowed) skips it; the reason
  must be given;
* budgets are made small here, not in the docs: ``budget=N`` / ``n_trials=N`` / ``range(N)`` become at
  most 4 in Python, ``--budget N`` at most 3 (added where a run or comparison has none) and
  ``--seeds A-B`` one seed on the command line.

Other blocks (no language, ``text``, ``yaml``, ``json``) are data or output, not code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

#: a project-wide check: CI's second step (`python -m pytest -m "checks and not slow"`), not the default run
pytestmark = pytest.mark.checks

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = {"python", "bash", "sh"}
DATA = {"", "text", "yaml", "json"}
SMALL_PYTHON = 4
SMALL_BUDGET = 3

NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")
FILE_LINE = re.compile(r"`(?P<path>[\w./-]+\.\w+)`:\s*$")


@dataclass
class Block:
    document: Path
    line: int          # 1-based line of the opening fence
    language: str
    text: str
    skip: str | None   # the reason it is not run
    file: str | None   # the file it is the content of

    @property
    def label(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def blocks_of(document: Path) -> list[Block]:
    lines = document.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = re.match(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$", lines[i])
        if not opening:
            i += 1
            continue
        end = i + 1
        while not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        skip = NOT_RUN.match(before)
        file = FILE_LINE.search(before)
        found.append(Block(document, i + 1, opening["lang"], textwrap.dedent("\n".join(lines[i + 1:end])) + "\n",
                           skip["reason"] if skip else None, file["path"] if file else None))
        i = end + 1
    return found


def small_python(text: str) -> str:
    for name in ("budget", "n_trials"):
        text = re.sub(rf"\b{name}=(\d+)", lambda m: f"{name}={min(int(m[1]), SMALL_PYTHON)}", text)
    return re.sub(r"\brange\((\d+)\)", lambda m: f"range({min(int(m[1]), SMALL_PYTHON)})", text)


def small_shell(text: str) -> str:
    text = re.sub(r"--budget (\d+)", lambda m: f"--budget {min(int(m[1]), SMALL_BUDGET)}", text)
    text = re.sub(r"--seeds (\d+)-\d+", r"--seeds \1", text)
    # a run or comparison without --budget would take the paper's (hundreds of evaluations)
    return re.sub(r"^(graphbo (?:run|compare) (?:(?!--budget)[^#\n])*?)(\s*(?:#.*)?)$",
                  rf"\1 --budget {SMALL_BUDGET}\2", text, flags=re.M)


ALL = [b for d in DOCUMENTS for b in blocks_of(d)]


def test_every_block_is_code_or_data_and_every_skip_has_a_reason():
    assert ALL, "no code blocks found"
    unknown = [f"{b.label} ({b.language})" for b in ALL if b.language not in CODE | DATA]
    assert not unknown, f"blocks in a language the docs test does not know: {unknown}"
    assert not [b.label for b in ALL if b.skip is not None and len(b.skip) < 10], "say why a block is not run"


def test_the_rules_find_what_they_should(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("`a.yaml`:\n\n```yaml\nx: 1\n```\n<!-- not run: needs a GPU -->\n\n  ```python\n  y = 1\n  ```\n")
    file_block, skipped = blocks_of(doc)
    assert (file_block.file, file_block.text, file_block.skip) == ("a.yaml", "x: 1\n", None)
    assert (skipped.language, skipped.text, skipped.skip, skipped.line) == ("python", "y = 1\n", "needs a GPU", 8)
    assert small_python("minimize(f, s, budget=100); range(50); range(3)") == \
        "minimize(f, s, budget=4); range(4); range(3)"
    assert small_shell("graphbo compare x --seeds 0-24 --budget 100") == "graphbo compare x --seeds 0 --budget 3"
    assert small_shell("graphbo run x --seed 0   # a note\ngraphbo report r --out a.md\n") == \
        "graphbo run x --seed 0 --budget 3   # a note\ngraphbo report r --out a.md\n"


def environment(folder: Path) -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env.get("PYTHONPATH", "")])
    env.pop("GRAPHBO_MAXSAT_DIR", None)
    return env


# the blocks run in __main__'s own namespace, so that their functions pickle for process pools
DRIVER = """
import __main__, json, sys
for label, source in json.load(open(sys.argv[1])):
    exec(compile(source, label, "exec"), __main__.__dict__)
"""


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if any(b.language in CODE for b in blocks_of(d))],
                         ids=lambda d: d.name)
def test_document_code_runs(document, tmp_path):
    blocks = [b for b in blocks_of(document) if b.skip is None]
    for b in blocks:
        if b.file is not None:
            (tmp_path / b.file).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / b.file).write_text(b.text)
    code = [b for b in blocks if b.file is None and b.language in CODE]
    python = [(b.label, small_python(b.text)) for b in code if b.language == "python"]
    env = environment(tmp_path)
    if python:
        (tmp_path / "_blocks.json").write_text(json.dumps(python))
        out = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path / "_blocks.json")], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, f"{document.name}'s Python blocks failed:\n{out.stderr[-4000:]}"
    for b in code:
        if b.language == "python":
            continue
        out = subprocess.run(["bash", "-e", "-c", small_shell(b.text)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, f"{b.label} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
