"""The packed run data set: runs packed and read back are the runs, reports made from it are the reports made
from the run files, and the committed data set is whole."""

from __future__ import annotations

import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphbo.experiments.report import collect, write_report
from graphbo.experiments.runner import RunSpec, compare
from graphbo.storage import TraceError, read_run
from graphbo.storage.packed import PACKED_SUFFIX, pack_runs, read_packed, verify_manifest

ROOT = Path(__file__).resolve().parents[2]
FAST = {"n_burn": 5, "n_samples": 2, "n_random": 300, "n_spray": 5, "n_starts": 3}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Real runs: COMBO (which stores its betas) and simulated annealing on Branin, two seeds each."""
    out = tmp_path_factory.mktemp("runs") / "group" / "branin"
    specs = [RunSpec(benchmark="branin", method=m, seed=s, budget=8, n_initial=3, benchmark_options={},
                     method_options=FAST if m == "combo" else {}) for m in ("combo", "sa") for s in (0, 1)]
    compare(specs, str(out), log=lambda _: None)
    return out.parents[1]


def _pack(runs, out):
    files = sorted(runs.rglob("seed*.db"))
    return pack_runs([(str(p.relative_to(runs)), read_run(p)) for p in files], str(out), commit="abc",
                     command="test"), files


def test_packed_runs_read_back_as_the_runs(runs, tmp_path):
    manifest, files = _pack(runs, tmp_path / "data")
    table = tmp_path / "data" / ("group/branin" + PACKED_SUFFIX)
    assert manifest["tables"]["group/branin" + PACKED_SUFFIX]["runs"] == 4
    packed = {r.path.split("#")[1]: r for r in read_packed(table)}
    assert sorted(packed) == ["combo/seed0.db", "combo/seed1.db", "sa/seed0.db", "sa/seed1.db"]
    for path in files:
        original = read_run(path)
        back = packed[str(path.relative_to(runs / "group" / "branin"))]
        assert back.head == original.head
        assert [(e["config"], e["value"]) for e in back.evals] == [(e["config"], e["value"]) for e in original.evals]
        for a, b in zip(back.evals, original.evals):
            assert a["suggest_seconds"] == pytest.approx(b["suggest_seconds"], abs=1e-6)
        if original.head["spec"]["method"] == "combo":
            assert back.state["method"]["beta"] == original.state["method"]["beta"]


def test_a_report_from_the_packed_table_is_the_report_from_the_run_files(runs, tmp_path):
    _pack(runs, tmp_path / "data")
    from_files = collect(str(runs), show=False)
    from_table = collect(str(tmp_path / "data"), show=False)
    assert from_files.keys() == from_table.keys()
    for bench in from_files:
        for method, rows in from_files[bench].items():
            other = from_table[bench][method]
            assert [(r["seed"], r["best_value"], r["best_params"], list(r["best_so_far"]), r["beta"]) for r in rows] \
                == [(r["seed"], r["best_value"], r["best_params"], list(r["best_so_far"]), r["beta"]) for r in other]
    a = write_report(str(runs), str(tmp_path / "a" / "report.md"))
    b = write_report(str(tmp_path / "data"), str(tmp_path / "b" / "report.md"))
    strip = lambda p: Path(p).read_text().split("\n", 3)[3]  # noqa: E731 (the first lines name the folder)
    assert strip(a) == strip(b)


def test_the_manifest_finds_a_changed_missing_or_unlisted_table(runs, tmp_path):
    data = tmp_path / "data"
    _pack(runs, data)
    assert verify_manifest(str(data)) == []
    table = data / ("group/branin" + PACKED_SUFFIX)
    extra = data / ("other/x" + PACKED_SUFFIX)
    extra.parent.mkdir()
    shutil.copy(table, extra)
    with lzma.open(table, "at") as fh:
        fh.write(json.dumps({"run": "x"}) + "\n")
    assert verify_manifest(str(data)) == [f"group/branin{PACKED_SUFFIX}: its SHA-256 differs from the manifest's",
                                          f"other/x{PACKED_SUFFIX}: not in the manifest"]
    table.unlink()
    assert f"group/branin{PACKED_SUFFIX}: missing" in verify_manifest(str(data))


def test_files_that_are_not_packed_tables_are_refused(tmp_path):
    text = tmp_path / ("x" + PACKED_SUFFIX)
    text.write_text("plain text")
    with pytest.raises(TraceError, match="not a packed run table"):
        read_packed(text)
    newer = tmp_path / ("y" + PACKED_SUFFIX)
    with lzma.open(newer, "wt") as fh:
        fh.write(json.dumps({"packed_runs": 99}) + "\n")
    with pytest.raises(TraceError, match="newer graphbo"):
        read_packed(newer)


def test_the_committed_data_set_matches_its_manifest():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "pack_runs.py"), "--out",
                             str(ROOT / "data" / "runs"), "--verify"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
