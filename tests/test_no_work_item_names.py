"""The product speaks to its users: no internal work-item names (a session's or an issue's number) in the
source, the docs, the README, the changelog, the benchmark scripts or the tests."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK_ITEM = re.compile(r"\b(?:session|issue)s? (?:#\s*)?\d", re.IGNORECASE)


def test_no_file_names_a_work_item():
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "src" / "graphbo").rglob("*.py"), *(ROOT / "tests").glob("*.py"),
             *(ROOT / "benchmarks").glob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
             for path in files for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if WORK_ITEM.search(line)]
    assert not found, "\n".join(found[:20])
