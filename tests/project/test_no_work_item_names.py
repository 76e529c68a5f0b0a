"""The product speaks to its users: no internal work-item names (a session's or an issue's number) in the
source, the docs, the README, the changelog, the benchmark scripts or the tests."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK_ITEM = re.compile(r"(?:session|issue)s?[ _-]?(?:#\s*)?\d", re.IGNORECASE)


def test_no_file_names_a_work_item():
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "src" / "graphbo").rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
             *(ROOT / "benchmarks").glob("*.py"), *(ROOT / "benchmarks").glob("*.sh"),
             *(ROOT / "benchmarks" / "results").glob("*.md"), *(ROOT / "benchmarks" / "results").glob("*.txt"),
             *(ROOT / "data").rglob("*.md"), ROOT / "pyproject.toml"]
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
             for path in files for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if WORK_ITEM.search(line)]
    assert not found, "\n".join(found[:20])


def test_no_committed_file_is_named_after_a_work_item():
    names = [p.relative_to(ROOT) for p in (ROOT / "benchmarks").rglob("*") if p.is_file()]
    names += [p.relative_to(ROOT) for p in (ROOT / "data").rglob("*") if p.is_file()]
    names += [p.relative_to(ROOT) for p in (ROOT / "tests").rglob("*") if p.is_file()]
    assert not [str(n) for n in names if WORK_ITEM.search(n.name)]
