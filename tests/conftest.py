import os
from pathlib import Path

import pytest


@pytest.fixture
def maxsat28_path():
    """wMaxSAT28's file: from ``$GRAPHBO_MAXSAT_DIR`` when that is set, else the copy graphbo ships."""
    from graphbo.benchmarks.maxsat import instance_path

    folder = os.environ.get("GRAPHBO_MAXSAT_DIR")
    if folder:
        return Path(folder) / "maxcut-johnson8-2-4.clq.wcnf"
    return instance_path("maxsat28")
