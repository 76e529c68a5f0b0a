"""``graphbo report --suite``: ranks, means and curves of a suite, checked against the run files.

Real ``graphbo compare`` runs (random search and simulated annealing on two cheap problems, two seeds,
six evaluations); the numbers in the written file are recomputed here from the SQLite run files
directly (``sqlite3``, not graphbo's readers) and ranked with SciPy.
"""

from __future__ import annotations

import math
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import rankdata

from graphbo.experiments.report import average_ranks, curve_scale

pytest.importorskip("matplotlib")

PROBLEMS = ("branin", "int-rosenbrock")
METHODS = ("rs", "sa")


def graphbo(*args, cwd):
    proc = subprocess.run([sys.executable, "-m", "graphbo", *args], capture_output=True, text=True, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite")
    for problem in PROBLEMS:
        graphbo("compare", problem, "--methods", ",".join(METHODS), "--seeds", "0-1", "--budget", "6",
                "--n-initial", "2", "--out", str(root / "runs" / problem), cwd=root)
    return root


def best_found(db: Path, n: int = 6) -> float:
    with sqlite3.connect(db) as con:
        values = [v for (v,) in con.execute("SELECT value FROM trials WHERE status = 'complete'")]
    assert len(values) == n
    return min(values)


def expected(root: Path):
    """Mean and s.e. of the best found per problem and method, and the ranks, from the run files alone."""
    cells = {}
    for problem in PROBLEMS:
        for method in METHODS:
            best = [best_found(root / "runs" / problem / method / f"seed{s}.db") for s in (0, 1)]
            cells[problem, method] = (float(np.mean(best)), float(np.std(best, ddof=1) / math.sqrt(2)))
    ranks = {}
    for problem in PROBLEMS:
        r = rankdata([cells[problem, m][0] for m in METHODS], method="average")
        ranks.update({(problem, m): float(x) for m, x in zip(METHODS, r)})
    mean_rank = {m: float(np.mean([ranks[p, m] for p in PROBLEMS])) for m in METHODS}
    return cells, ranks, mean_rank


def table_rows(text: str, header_start: str) -> list[list[str]]:
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_the_written_means_and_ranks_equal_those_of_the_run_files(suite):
    out = suite / "docs" / "beyond.md"
    graphbo("report", str(suite / "runs"), "--suite", "--out", str(out), "--title", "Beyond", cwd=suite)
    text = out.read_text()
    cells, ranks, mean_rank = expected(suite)

    written_rank = {row[0]: row for row in table_rows(text, "| method | mean rank")}
    assert set(written_rank) == set(METHODS)
    for m in METHODS:
        assert float(written_rank[m][1]) == pytest.approx(mean_rank[m], abs=0.005)
        assert int(written_rank[m][2]) == len(PROBLEMS)
        assert int(written_rank[m][3]) == sum(ranks[p, m] == min(ranks[p, o] for o in METHODS) for p in PROBLEMS)

    rows = {row[0]: row for row in table_rows(text, "| problem | budget")}
    assert set(rows) == set(PROBLEMS)
    for p in PROBLEMS:
        assert rows[p][1] == "6" and rows[p][2] == "2"
        for j, m in enumerate(METHODS):
            cell = rows[p][3 + j]
            mean, se, rank = re.search(r"(-?[\d.]+) ± ([\d.]+) \(([\d.]+)\)", cell).groups()
            digits = len(mean.split(".")[1])
            assert float(mean) == pytest.approx(cells[p, m][0], abs=0.51 * 10 ** -digits)
            assert float(se) == pytest.approx(cells[p, m][1], abs=0.51 * 10 ** -digits)
            assert float(rank) == ranks[p, m]
            assert cell.startswith("**") == (ranks[p, m] == min(ranks[p, o] for o in METHODS))

    # one PNG per problem beside the file, linked from it
    for p in PROBLEMS:
        png = out.parent / "img" / f"beyond_{p.replace('-', '_')}_curves.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(img/{png.name})" in text


def test_ranks_after_fewer_evaluations_are_those_of_the_first_trials(suite):
    out = suite / "after3.md"
    graphbo("report", str(suite / "runs"), "--suite", "--at", "3", "--out", str(out), cwd=suite)
    text = out.read_text()
    assert "--at 3" in text
    cells = {}
    for p in PROBLEMS:
        for m in METHODS:
            best = []
            for s in (0, 1):
                with sqlite3.connect(suite / "runs" / p / m / f"seed{s}.db") as con:
                    values = [v for (v,) in con.execute("SELECT value FROM trials ORDER BY number LIMIT 3")]
                best.append(min(values))
            cells[p, m] = float(np.mean(best))
    ranks = {}
    for p in PROBLEMS:
        r = rankdata([cells[p, m] for m in METHODS], method="average")
        ranks.update({(p, m): float(x) for m, x in zip(METHODS, r)})
    rows = {row[0]: row for row in table_rows(text, "| problem | evaluations")}
    assert set(rows) == set(PROBLEMS)
    for p in PROBLEMS:
        assert rows[p][1] == "3"
        for j, m in enumerate(METHODS):
            mean, rank = re.search(r"(-?[\d.]+) ± [\d.]+ \(([\d.]+)\)", rows[p][3 + j]).groups()
            digits = len(mean.split(".")[1])
            assert float(mean) == pytest.approx(cells[p, m], abs=0.51 * 10 ** -digits)
            assert float(rank) == ranks[p, m]
    after = text.split("## Mean rank after 3 evaluations")[1]
    written = {row[0]: float(row[1]) for row in table_rows(after, "| method | mean rank")}
    assert written == {m: pytest.approx(np.mean([ranks[p, m] for p in PROBLEMS]), abs=0.005) for m in METHODS}
    # the budget's own tables are still there, first
    assert text.index("## Mean rank\n") < text.index("## Mean rank after 3")


def test_at_needs_suite_and_a_positive_count(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "graphbo", "report", "--at", "3", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "--at needs --suite" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "graphbo", "report", "--suite", "--at", "0", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "positive" in proc.stderr


def test_the_default_file_is_in_the_runs_folder_not_the_docs(suite):
    proc = graphbo("report", str(suite / "runs"), "--suite", cwd=suite)
    assert (suite / "runs" / "suite.md").is_file()
    assert str(suite / "runs" / "suite.md") in proc.stdout
    assert not (suite / "docs" / "suite.md").exists()


def test_ties_share_the_mean_of_their_ranks():
    assert average_ranks({"a": 1.0, "b": 1.0, "c": 3.0}) == {"a": 1.5, "b": 1.5, "c": 3.0}
    rng = np.random.default_rng(0)
    values = rng.integers(0, 4, size=12).astype(float)  # many ties
    ranks = average_ranks({f"m{i}": v for i, v in enumerate(values)})
    np.testing.assert_array_equal([ranks[f"m{i}"] for i in range(12)], rankdata(values, method="average"))


def _runs(curves, benchmark=("no-such-benchmark", {})):
    return {"m": [{"finished": True, "best_so_far": np.asarray(c, dtype=float), "benchmark": benchmark}
                  for c in curves]}


def test_the_curves_scale():
    # a benchmark that knows its optimum: regret on a log scale
    assert curve_scale(_runs([[5.0, 1.0]], benchmark=("branin", {}))) == "regret"
    # no known optimum: log scale only for positive values spanning more than two decades
    assert curve_scale(_runs([[500.0, 4.0]])) == "log"
    assert curve_scale(_runs([[50.0, 4.0]])) == "linear"
    assert curve_scale(_runs([[500.0, -4.0]])) == "linear"


def test_an_unfinished_run_is_left_out_and_named(suite, tmp_path):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(suite / "runs" / "branin", runs / "branin", ignore=shutil.ignore_patterns("*.lock"))
    with sqlite3.connect(runs / "branin" / "sa" / "seed1.db") as con:  # seed 1 of sa cut to 4 of 6 evaluations
        con.execute("DELETE FROM trials WHERE number >= 4")
    out = tmp_path / "s.md"
    graphbo("report", str(runs), "--suite", "--out", str(out), cwd=tmp_path)
    text = out.read_text()
    assert "left out: branin sa (1)." in text
    (row,) = table_rows(text, "| problem | budget")
    sa_alone = best_found(suite / "runs" / "branin" / "sa" / "seed0.db")
    mean = re.search(r"(-?[\d.]+) \(", row[4]).group(1)  # one seed: a mean without ± s.e.
    assert "±" not in row[4] and float(mean) == pytest.approx(sa_alone, abs=0.51 * 10 ** -len(mean.split(".")[1]))
    assert row[2] == "1–2"


def test_auto_is_reported_as_one_method_under_the_name_auto(tmp_path):
    # auto resolves to combo on branin (2 discrete variables) and is stored under that name; the report
    # with --auto shows those runs as `auto`, with their numbers, and no `combo` column beside them.
    runs = tmp_path / "runs"
    out = graphbo("compare", "branin", "--methods", "auto,rs", "--seeds", "0", "--budget", "5", "--n-initial", "2",
                  "--out", str(runs / "branin"), cwd=tmp_path)
    assert "auto chose combo" in out.stdout
    assert (runs / "branin" / "combo" / "seed0.db").exists()
    # a seeded benchmark: each seed's instance has its own options, and auto's choice is the same for all
    out = graphbo("compare", "contamination", "--methods", "auto,rs", "--seeds", "0-1", "--budget", "3",
                  "--n-initial", "2", "--out", str(runs / "contamination"), cwd=tmp_path)
    assert "auto chose combo " in out.stdout  # 25 variables, but a budget below 100: no trust region
    graphbo("report", "--suite", "--auto", str(runs), "--out", str(tmp_path / "s.md"), cwd=tmp_path)
    text = (tmp_path / "s.md").read_text()
    table = text[text.index("## Best value at the budget"):text.index("## Best so far")]
    header = next(line for line in table.splitlines() if line.startswith("| problem"))
    assert [c.strip() for c in header.strip("|").split("|")][3:] == ["auto", "rs"]
    assert "branin: `combo`" in text and "contamination: `combo`" in text
    row = next(line for line in table.splitlines() if line.startswith("| branin"))
    auto_cell = row.strip("|").split("|")[3]
    mean = re.search(r"-?\d+\.\d+", auto_cell).group()
    assert float(mean) == pytest.approx(best_found(runs / "branin" / "combo" / "seed0.db", 5),
                                        abs=0.51 * 10 ** -len(mean.split(".")[1]))
    # without --auto the same runs keep their stored name
    graphbo("report", "--suite", str(runs), "--out", str(tmp_path / "plain.md"), cwd=tmp_path)
    plain = (tmp_path / "plain.md").read_text()
    assert "| combo |" in plain and "| auto |" not in plain


def test_auto_needs_suite(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "graphbo", "report", "--auto", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "--auto needs --suite" in proc.stderr



def test_combine_auto_moves_the_chosen_runs_and_names_the_problems_it_cannot_combine():
    from graphbo.experiments.report import combine_auto

    def run(name, budget, options=None):
        return {"benchmark": (name, options or {}), "budget": budget, "finished": True}

    data = {
        # 50 binary variables: combo-tr from budget 100 on, combo below (docs/auto.md)
        "labs": {"combo-tr": [run("labs", 150)], "rs": [run("labs", 150)]},
        "labs-mixed-budgets": {"combo-tr": [run("labs", 150)], "rs": [run("labs", 50)]},
        "labs-without-its-choice": {"combo": [run("labs", 150)], "rs": [run("labs", 150)]},
        "unknown": {"rs": [run("no-such-benchmark", 10)]},
    }
    chosen, skipped = combine_auto(data)
    assert chosen == {"labs": "combo-tr"}
    assert set(data["labs"]) == {"auto", "rs"} and len(data["labs"]["auto"]) == 1
    assert set(skipped) == {"labs-mixed-budgets", "labs-without-its-choice", "unknown"}
    assert "combo, combo-tr" in skipped["labs-mixed-budgets"]
    assert "no runs of combo-tr" in skipped["labs-without-its-choice"]
    assert set(data["labs-without-its-choice"]) == {"combo", "rs"}  # left as stored


def test_a_problem_without_a_finished_run_gets_a_sentence_not_an_empty_plot(suite, tmp_path):
    import shutil

    runs = tmp_path / "runs"
    for problem in PROBLEMS:
        shutil.copytree(suite / "runs" / problem, runs / problem, ignore=shutil.ignore_patterns("*.lock"))
    for db in (runs / "branin").glob("*/seed*.db"):  # every branin run cut to 4 of 6 evaluations
        with sqlite3.connect(db) as con:
            con.execute("DELETE FROM trials WHERE number >= 4")
    out = tmp_path / "s.md"
    graphbo("report", str(runs), "--suite", "--out", str(out), cwd=tmp_path)
    text = out.read_text()
    assert "### branin" not in text and "branin rs (2)" in text  # left out, and named
    pngs = sorted(p.name for p in (tmp_path / "img").iterdir())
    assert pngs == ["s_int_rosenbrock_curves.png"], pngs
    graphbo("report", str(runs / "branin"), "--out", str(tmp_path / "c" / "report.md"), cwd=tmp_path)
    text = (tmp_path / "c" / "report.md").read_text()
    assert "No run of this benchmark has finished yet: no curve is drawn." in text
    assert not list((tmp_path / "c" / "img").glob("*convergence*"))
