import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MAXSAT_DIR = Path(os.environ.get("GRAPHBO_MAXSAT_DIR", SHARED / "data" / "maxsat"))


@pytest.fixture
def maxsat28_path():
    path = MAXSAT_DIR / "maxcut-johnson8-2-4.clq.wcnf"
    if not path.is_file():
        pytest.skip(f"MaxSAT instance not found at {path} (set GRAPHBO_MAXSAT_DIR)")
    return path
