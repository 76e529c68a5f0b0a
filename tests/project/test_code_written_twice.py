"""Every pair of places in src/graphbo that share six or more lines is explained in docs/architecture.md,
"Code written twice", by the names of the functions or classes that hold them (the module's path for code
outside any). The pairs come from the `duplicates` command, a local tool: where it is not installed (CI)
the test is skipped."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

#: a project-wide check: CI's second step (`python -m pytest -m "checks and not slow"`), not the default run
pytestmark = pytest.mark.checks

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "graphbo"
ROW = re.compile(r"^D\d+ (?P<a>\S+):(?P<a0>\d+)-(?P<a1>\d+) ~ (?P<b>\S+):(?P<b0>\d+)-(?P<b1>\d+)\b")


def section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("## Code written twice")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def holder(path: str, first: int, last: int) -> str:
    """The innermost function or class that holds lines ``first``..``last`` of ``path`` (``Class.method``
    for a method), or ``graphbo/<path>`` for code outside any."""
    tree = ast.parse((PACKAGE / path).read_text())
    found: list[str] = []

    def visit(node: ast.AST, names: list[str], in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                if start <= first and last <= (child.end_lineno or child.lineno):
                    name = f"{names[-1]}.{child.name}" if in_class and names else child.name
                    found.append(name)
                    visit(child, [*names, child.name], isinstance(child, ast.ClassDef))
                    return
            visit(child, names, in_class)

    visit(tree, [], False)
    return found[-1] if found else f"graphbo/{path}"


def explained(name: str, text: str) -> bool:
    if name.startswith("graphbo/"):
        return f"`{name}`" in text
    return re.search(rf"`{re.escape(name)}[`.(]", text) is not None


def test_the_rule_names_the_holders():
    assert holder("optimizers/base.py", 1, 1) == "graphbo/optimizers/base.py"
    line = next(n for n, s in enumerate((PACKAGE / "optimizers" / "base.py").read_text().splitlines(), 1)
                if "def n_told" in s)
    assert holder("optimizers/base.py", line, line) == "Optimizer.n_told"
    assert explained("Optimizer.n_told", "the properties `Optimizer.n_told` / `n_pending`")
    assert not explained("run", "`runner`")


def test_every_pair_the_duplicate_checker_lists_is_explained():
    tool = shutil.which("duplicates")
    if tool is None:
        pytest.skip("the `duplicates` command is not installed here")
    out = subprocess.run([tool, "--repo", str(PACKAGE), "--most", "200", "--seconds", "120"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300).stdout
    assert "incomplete:" not in out, out
    assert "more pairs)" not in out, out
    text = section()
    unexplained = []
    for line in out.splitlines():
        row = ROW.match(line)
        if row is None:
            continue
        names = [holder(row["a"], int(row["a0"]), int(row["a1"])), holder(row["b"], int(row["b0"]), int(row["b1"]))]
        missing = [n for n in names if not explained(n, text)]
        if missing:
            unexplained.append(f"{line}  (not named: {', '.join(missing)})")
    assert not unexplained, "pairs docs/architecture.md does not explain:\n" + "\n".join(unexplained)
