"""The experiment runner: runs are studies (resume, lock), comparisons and reports."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from graphbo.experiments.report import collect, write_report
from graphbo.experiments.runner import RunSpec, TraceError, compare, make_run, parse_seeds, run
from graphbo.storage import StorageError, read_run
from support import binary_space, counts  # (finished, running) trials of a study another process writes

FAST = {"n_burn": 5, "n_samples": 2, "n_random": 300, "n_spray": 5, "n_starts": 3}
ROOT = Path(__file__).resolve().parents[2]
#: a finished run committed by graphbo 0.1's runner (a JSON-lines trace, compacted): SA on Branin, seed 0
COMMITTED_TRACE = ROOT / "tests" / "fixtures" / "graphbo-0.1-branin-sa-seed0.jsonl"
COMMITTED_SPEC = RunSpec(benchmark="branin", method="sa", seed=0, budget=100, n_initial=2, benchmark_options={},
                         method_options={})


def spec(method="combo", seed=0, budget=14):
    return RunSpec(benchmark="branin", method=method, seed=seed, budget=budget, n_initial=3, benchmark_options={},
                   method_options=FAST if method == "combo" else {})


def configs(path):
    return [(e["config"], e["value"]) for e in read_run(path).evals]


def test_parse_seeds():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("1,5,7-8") == [1, 5, 7, 8]
    with pytest.raises(ValueError):
        parse_seeds("5-2")


def test_killed_run_resumes_to_the_same_trace(tmp_path):
    full = tmp_path / "full.db"
    run(spec(), str(full))
    reference = configs(full)
    assert len(reference) == 14
    rng = np.random.default_rng(0)
    for attempt in range(3):
        path = tmp_path / f"killed{attempt}.db"
        code = (
            "from graphbo.experiments.runner import RunSpec, run; "
            f"run(RunSpec(benchmark='branin', method='combo', seed=0, budget=14, n_initial=3, "
            f"benchmark_options={{}}, method_options={FAST!r}), {str(path)!r})"
        )
        proc = subprocess.Popen([sys.executable, "-c", code])
        # wait until a random number of evaluations is committed, then SIGKILL
        target = int(rng.integers(2, 12))
        deadline = time.time() + 60
        while time.time() < deadline and counts(path)[0] < target:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done_before = len(read_run(path).evals)
        assert target <= done_before < 14
        summary = run(spec(), str(path))
        assert summary["resumed_from"] == done_before
        assert configs(path) == reference
        assert [t for t in os.listdir(tmp_path) if t.startswith(f"killed{attempt}.db-")] == []


def test_an_evaluation_cut_short_is_done_again_with_the_same_configuration(tmp_path, monkeypatch):
    """Ctrl-C (or a kill) during an evaluation leaves its trial running; the resume evaluates it first."""
    from graphbo.benchmarks.branin import Branin

    full = tmp_path / "full.db"
    run(spec("combo", budget=8), str(full))
    calls = []

    def interrupted(self, config):
        if len(calls) == 5:
            raise KeyboardInterrupt
        calls.append(config)
        return original(self, config)

    original = Branin.__call__
    path = tmp_path / "cut.db"
    monkeypatch.setattr(Branin, "__call__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(spec("combo", budget=8), str(path))
    monkeypatch.undo()
    assert counts(path) == (5, 1)
    assert run(spec("combo", budget=8), str(path))["resumed_from"] == 5
    assert configs(path) == configs(full)


def test_foreign_or_mismatched_runs_raise_and_stay_untouched(tmp_path):
    from graphbo.study import Study

    path = tmp_path / "t.db"
    run(spec("rs", budget=4), str(path))
    before = path.read_bytes()
    with pytest.raises(TraceError, match="different run"):
        run(spec("rs", seed=1, budget=4), str(path))
    assert path.read_bytes() == before
    assert isinstance(TraceError("x"), StorageError) and isinstance(TraceError("x"), ValueError)
    foreign = tmp_path / "foreign.db"
    foreign.write_text("hello\nworld\n")
    with pytest.raises(TraceError, match="not a graphbo run study file"):
        run(spec("rs", budget=4), str(foreign))
    assert foreign.read_text() == "hello\nworld\n"
    newer_db = tmp_path / "newer.db"
    shutil.copy(path, newer_db)
    conn = sqlite3.connect(newer_db)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
    conn.commit()
    conn.close()
    newer_bytes = newer_db.read_bytes()
    with pytest.raises(TraceError, match="newer graphbo"):
        run(spec("rs", budget=4), str(newer_db))
    assert newer_db.read_bytes() == newer_bytes
    study = tmp_path / "study.db"  # a study, but not a benchmark run
    import graphbo as gb

    Study(gb.Space({"a": gb.Binary()}), "rs", storage=str(study), seed=0).close()
    with pytest.raises(TraceError, match="not a graphbo benchmark run"):
        run(spec("rs", budget=4), str(study))


def test_compare_skips_finished_runs_and_report_aggregates(tmp_path):
    specs = [spec(m, s, budget=6) for m in ("combo", "rs") for s in (0, 1)]
    out = tmp_path / "cmp"
    first = compare(specs, str(out), n_workers=2)
    assert len(first) == 4
    assert sorted(str(p.relative_to(out)) for p in out.rglob("seed*")) == [
        f"{m}/seed{s}.db{x}" for m in ("combo", "rs") for s in (0, 1) for x in ("", ".lock")]
    mtimes = {p: os.path.getmtime(p) for p in out.rglob("*.db")}
    assert compare(specs, str(out), n_workers=2) == []
    assert {p: os.path.getmtime(p) for p in out.rglob("*.db")} == mtimes
    data = collect(str(out))
    assert set(data["branin"]) == {"combo", "rs"}
    for method, runs in data["branin"].items():
        for r in runs:
            assert r["finished"] and len(r["best_so_far"]) == 6
            values = [v for _, v in configs(out / method / f"seed{r['seed']}.db")]
            assert r["best_so_far"][-1] == min(values)
    report = write_report(str(out), out=str(tmp_path / "r.md"))
    text = Path(report).read_text()
    best_rs = [min(v for _, v in configs(out / "rs" / f"seed{s}.db")) for s in (0, 1)]
    row = next(l for l in text.splitlines() if l.startswith("| rs |"))
    shown_mean, shown_se = (float(x) for x in row.split("|")[2].split("±"))
    assert shown_mean == pytest.approx(np.mean(best_rs), abs=1e-2)
    assert shown_se == pytest.approx(np.std(best_rs, ddof=1) / np.sqrt(2), abs=1e-2)
    assert (tmp_path / "img" / "branin_convergence.png").stat().st_size > 1000
    assert (tmp_path / "img" / "branin_combo_beta.png").exists()
    assert not list(out.rglob("*-wal")) and not list(out.rglob("*-shm"))  # reading left nothing beside the runs


def test_report_row_of_a_method_with_only_unfinished_runs(tmp_path):
    """A run stopped before its budget is counted apart and left out of the mean and the wall-clock."""
    out = tmp_path / "cmp"
    run(spec("rs", 0, budget=6), str(out / "rs" / "seed0.db"))
    cut = out / "sa" / "seed0.db"
    run(spec("sa", 0, budget=6), str(cut))
    conn = sqlite3.connect(cut)
    conn.execute("DELETE FROM trials WHERE number >= 3")  # 3 evaluations of 6: a run killed midway
    conn.commit()
    conn.close()
    text = Path(write_report(str(out), out=str(tmp_path / "r.md"))).read_text()
    cells = [c.strip() for c in next(l for l in text.splitlines() if l.startswith("| sa |")).split("|")[1:-1]]
    assert cells[1] == "–" and cells[2] == "0 (+1 unfinished)" and cells[5] == "–"
    rs = [c.strip() for c in next(l for l in text.splitlines() if l.startswith("| rs |")).split("|")[1:-1]]
    assert rs[2] == "1" and rs[5].endswith(" s") and "nan" not in text


def test_a_trace_of_graphbo_before_1_0_is_refused_unchanged_and_left_out_of_reports(tmp_path):
    """graphbo 1.0 reads run study files only; a JSON-lines trace of an earlier version gets one line naming the
    packed data set its runs were converted into, and a report does not count it."""
    out = tmp_path / "cmp"
    old = out / "sa" / "seed0.jsonl"
    old.parent.mkdir(parents=True)
    shutil.copy(COMMITTED_TRACE, old)
    before = old.read_bytes()
    with pytest.raises(TraceError, match="JSON-lines trace of graphbo before 1.0.*data/runs"):
        read_run(old)
    with pytest.raises(TraceError, match="not a graphbo run study file"):
        run(COMMITTED_SPEC, str(old))
    assert old.read_bytes() == before
    run(RunSpec(benchmark="branin", method="sa", seed=1, budget=5, n_initial=2, benchmark_options={},
                method_options={}), str(out / "sa" / "seed1.db"))
    assert [r["seed"] for r in collect(str(out))["branin"]["sa"]] == [1]


def test_a_run_repeats_the_run_committed_by_graphbo_0_1(tmp_path):
    """The same spec gives the 100 evaluations that graphbo 0.1's runner committed in the fixture: the
    suggestions of a seed did not change with the storage."""
    path = tmp_path / "sa" / "seed0.db"
    assert run(COMMITTED_SPEC, str(path))["resumed_from"] == 0
    committed = [json.loads(line) for line in COMMITTED_TRACE.read_text().splitlines()[1:]]
    assert configs(path) == [(e["config"], e["value"]) for e in committed]


def test_report_puts_the_difference_from_the_paper_in_standard_errors(tmp_path):
    """At the paper's budget (Branin: 100) the SA row carries (ours - paper) / combined s.e."""
    from graphbo.experiments.paper_numbers import paper_number

    out = tmp_path / "cmp"
    compare([spec("sa", s, budget=100) for s in (0, 1, 2)], str(out))
    text = Path(write_report(str(out), out=str(tmp_path / "r.md"))).read_text()
    best = [min(v for _, v in configs(out / "sa" / f"seed{s}.db")) for s in (0, 1, 2)]
    pm, pse = paper_number("branin", "sa", budget=100)
    se = np.std(best, ddof=1) / np.sqrt(3)
    expected = (np.mean(best) - pm) / np.hypot(se, pse)
    cells = [c.strip() for c in next(l for l in text.splitlines() if l.startswith("| sa |")).split("|")]
    assert cells[4] == f"{pm:.4f} ± {pse:.4f}"
    assert float(cells[5]) == pytest.approx(expected, abs=0.051)


def test_versus_paper_handles_exact_optima_and_single_runs():
    from graphbo.experiments.report import _versus_paper

    assert _versus_paper((-195.65, 0.0), (-195.65, 0.0)) == "0"
    assert _versus_paper((-195.65275, 0.0), (-195.65, 0.0)) == "0"  # the paper's rounding
    assert _versus_paper((-195.66, 0.0), (-195.65, 0.0)) == "-inf"
    assert _versus_paper((-190.0, 0.0), (-195.65, 0.0)) == "+inf"
    assert _versus_paper((1.0, float("nan")), (0.0, 1.0)) == "–"
    assert _versus_paper((1.0, 3.0), (0.0, 4.0)) == "+0.2"


@pytest.mark.parametrize("method, options", [
    ("combo", FAST), ("rs", {}), ("sa", {}), ("re", {}),
    ("bocs", {"n_burn": 50, "n_gibbs": 5, "sa_steps": 50}),
])
def test_state_round_trip_gives_identical_continuations(method, options):
    """Replaying the told data and restoring get_state() continues exactly like the original."""
    from graphbo.loop import make_optimizer

    space = binary_space(8)
    f = lambda c: sum((i + 1) * (1 if c[f"x{i}"] else -1) * (-1) ** i for i in range(8)) / 10.0
    a = make_optimizer(method, space, seed=3, n_initial=4, **options)
    for _ in range(9):
        c = a.ask()
        a.tell(c, f(c))
    state = json.loads(json.dumps(a.get_state()))
    b = make_optimizer(method, space, seed=3, n_initial=4, **options)
    for obs in a.history:
        b.tell(obs.config, obs.value)
    b.set_state(state)
    for _ in range(5):
        ca, cb = a.ask(), b.ask()
        assert ca == cb
        a.tell(ca, f(ca))
        b.tell(cb, f(cb))


def test_a_finished_run_keeps_only_the_latest_state_and_is_not_rewritten(tmp_path):
    path = tmp_path / "t.db"
    bocs = RunSpec(benchmark="ising", method="bocs", seed=0, budget=6, n_initial=3,
                   benchmark_options={"lamda": 0.0, "seed": 0},
                   method_options={"n_burn": 50, "n_gibbs": 5, "sa_steps": 50})
    first = run(bocs, str(path))
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*), COUNT(state) FROM trials").fetchone() == (6, 0)
    state = conn.execute("SELECT value FROM meta WHERE key = 'optimizer_state'").fetchone()[0]
    conn.close()
    assert len(state) > 10_000  # BOCS's state, stored once: the file is far smaller than 6 copies
    assert path.stat().st_size < 4 * len(state)
    before = path.read_bytes()
    again = run(bocs, str(path))  # finished: nothing rerun, nothing rewritten
    assert again["resumed_from"] == 6 and again["best"] == first["best"]
    assert path.read_bytes() == before


def test_a_run_locked_by_another_process_is_refused_and_left_alone(tmp_path):
    from graphbo.experiments.runner import RunLockedError

    path = tmp_path / "t.db"
    holder = subprocess.Popen(  # a real second process holding the run's lock
        [sys.executable, "-c", "import fcntl, sys, time; fh = open(sys.argv[1], 'a'); "
         "fcntl.flock(fh, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)", str(path) + ".lock"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError, match="another process"):
            run(spec("rs", budget=4), str(path))
        assert not path.exists()
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    run(spec("rs", budget=4), str(path))  # the lock died with its process
    assert len(configs(path)) == 4


def test_multi_fidelity_runs_record_fidelities_and_resume_a_cut_evaluation(tmp_path, monkeypatch):
    """BOHB: each trial's fidelity is a trial attribute; the budget counts full-fidelity equivalents; an
    evaluation interrupted midway is redone at the same fidelity and the run ends as an uninterrupted one;
    a 0.1 BOHB trace is migrated with its fidelities."""
    pytest.importorskip("smac")
    from graphbo.benchmarks import REGISTRY, BenchmarkInfo
    from support import BOHB_FAST, ToyMF

    monkeypatch.setitem(REGISTRY, "toy-mf",
                        BenchmarkInfo(name="toy-mf", target="support:ToyMF", summary="multi-fidelity toy"))
    mf = RunSpec(benchmark="toy-mf", method="bohb", seed=0, budget=6, n_initial=4, benchmark_options={},
                 method_options=BOHB_FAST)
    full = tmp_path / "full.db"
    summary = run(mf, str(full))
    data = read_run(full)
    ks = [e["fidelity"] for e in data.evals]
    assert data.head["max_fidelity"] == 9 and set(ks) <= {1, 3, 9}
    assert sum(ks) >= 6 * 9 > sum(ks[:-1]) and summary["full_evaluations"] == sum(ks) / 9
    reference = [(e["config"], e["fidelity"], e["value"]) for e in data.evals]

    calls = []
    original = ToyMF.evaluate

    def interrupted(self, config, epochs=None):
        if len(calls) == 11:
            raise KeyboardInterrupt
        calls.append(epochs)
        return original(self, config, epochs)

    path = tmp_path / "cut.db"
    monkeypatch.setattr(ToyMF, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(mf, str(path))
    monkeypatch.setattr(ToyMF, "evaluate", original)
    assert counts(path) == (11, 1)
    assert run(mf, str(path))["resumed_from"] == 11
    assert [(e["config"], e["fidelity"], e["value"]) for e in read_run(path).evals] == reference



def test_compare_defaults_to_the_benchmarks_own_methods(tmp_path):
    from graphbo.cli import main as cli_main

    out = tmp_path / "cmp"
    assert cli_main(["compare", "nas-synthetic", "--seeds", "0", "--budget", "2", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["ea", "nasbot", "rand", "treebo"]
    out2 = tmp_path / "cmp2"
    assert cli_main(["compare", "func2c", "--seeds", "0", "--budget", "2", "--out", str(out2)]) == 0
    assert sorted(p.name for p in out2.iterdir()) == ["bofm", "rs"]


def test_epochs_option_reaches_networks_and_is_refused_elsewhere(tmp_path, capsys):
    from graphbo.cli import main as cli_main

    out = tmp_path / "nas"
    assert cli_main(["compare", "nas-mlp", "--methods", "rand", "--seeds", "0", "--budget", "1",
                     "--epochs", "1", "--out", str(out)]) == 0
    data = read_run(out / "rand" / "seed0.db")
    head, evals = data.head, data.evals
    assert head["spec"]["benchmark_options"]["epochs"] == 1 and len(evals) == 1
    assert cli_main(["compare", "branin", "--seeds", "0", "--budget", "2", "--epochs", "3",
                     "--out", str(tmp_path / "b")]) == 2
    assert "--epochs applies to benchmarks that train networks" in capsys.readouterr().err
    assert cli_main(["run", "nas-mlp", "--method", "rand", "--budget", "1", "--epochs", "0", "--quiet"]) == 2


def test_report_draws_the_best_network_of_an_architecture_benchmark(tmp_path):
    from graphbo.cli import main as cli_main

    out = tmp_path / "nas"
    assert cli_main(["compare", "nas-synthetic", "--methods", "rand,ea", "--seeds", "0-1", "--budget", "12",
                     "--out", str(out)]) == 0
    data = collect(str(out))
    runs = data["nas-synthetic"]
    best = min((r["best_value"], m, r["seed"]) for m, rs in runs.items() for r in rs)
    assert all(r["best_value"] == r["best_so_far"][-1] for rs in runs.values() for r in rs)
    report = write_report(str(out), out=str(tmp_path / "r.md"))
    text = Path(report).read_text()
    png = tmp_path / "img" / "nas_synthetic_best_network.png"
    assert f"Best network over all runs: {best[1]}, seed {best[2]}, value {best[0]:.4g}" in text
    assert "img/nas_synthetic_best_network.png" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a benchmark whose configurations are not networks gets no such picture
    assert cli_main(["compare", "branin", "--methods", "rs", "--seeds", "0", "--budget", "3",
                     "--out", str(tmp_path / "b")]) == 0
    assert "Best network" not in Path(write_report(str(tmp_path / "b"), out=str(tmp_path / "b.md"))).read_text()
    # several folders make one report with a section per benchmark
    assert cli_main(["report", str(tmp_path / "b"), str(out), "--out", str(tmp_path / "both.md")]) == 0
    both = Path(tmp_path / "both.md").read_text()
    assert "## branin" in both and "## nas-synthetic" in both and "those folders" in both
    assert cli_main(["report", str(out), str(tmp_path / "missing")]) == 2
    (tmp_path / "notes.md").write_text("Trained on **bundled data**.\n")
    assert cli_main(["report", str(out), "--out", str(tmp_path / "n.md"), "--notes", str(tmp_path / "notes.md")]) == 0
    noted = Path(tmp_path / "n.md").read_text()
    assert noted.index("Trained on **bundled data**.") < noted.index("## nas-synthetic")
    assert cli_main(["report", str(out), "--notes", str(tmp_path / "absent.md")]) == 2


def test_convergence_plot_styles_tell_up_to_40_methods_apart():
    """matplotlib's colour cycle repeats after 10; an 11-method BO-FM plot once drew two methods alike."""
    from graphbo.experiments.report import method_style

    styles = [method_style(i) for i in range(40)]
    assert len(set(styles)) == 40
    assert styles[0] == (0, "-") and styles[10] == (0, "--")


def test_compare_passes_method_options_to_every_run_and_refuses_unknown_ones(tmp_path, capsys):
    from graphbo.cli import main as cli_main
    from graphbo.experiments.runner import RunSpec, make_run

    out = tmp_path / "ard"
    assert cli_main(["compare", "func2c", "--methods", "cocabo", "--seeds", "0", "--budget", "11",
                     "--n-initial", "10", "--option", "ard=true", "--option", "kappa=3", "--out", str(out)]) == 0
    data = read_run(out / "cocabo" / "seed0.db")
    head, evals = data.head, data.evals
    assert head["spec"]["method_options"] == {"ard": True, "kappa": 3} and len(evals) == 11
    _, opt = make_run(RunSpec(**head["spec"]))
    assert opt.kernel.ard is True and opt.kappa == 3.0
    assert cli_main(["compare", "func2c", "--methods", "cocabo", "--seeds", "0", "--budget", "11",
                     "--option", "no_such_option=1", "--out", str(tmp_path / "bad")]) == 2
    assert "does not take {'no_such_option': 1}" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    assert cli_main(["compare", "func2c", "--option", "ard", "--out", str(tmp_path / "bad2")]) == 2
    assert "--option takes KEY=VALUE" in capsys.readouterr().err


def test_compare_passes_benchmark_options_and_refuses_unknown_or_flagged_ones(tmp_path, capsys):
    from graphbo.cli import main as cli_main

    out = tmp_path / "path"
    assert cli_main(["compare", "pestcontrol", "--methods", "rs", "--seeds", "0-1", "--budget", "3",
                     "--n-initial", "2", "--benchmark-option", "graph=path", "--out", str(out)]) == 0
    for seed in (0, 1):
        spec = read_run(out / "rs" / f"seed{seed}.db").head["spec"]
        assert spec["benchmark_options"] == {"seed": seed, "graph": "path"}
        bench, _ = make_run(RunSpec(**spec))
        assert all(v.kind == "ordinal" for v in bench.space.variables)
    assert list(collect(str(out), show=False)) == ["pestcontrol(graph=path)"]
    for option, message in [("colour=1", "takes no option 'colour'"), ("seed=2", "use --instance-seed"),
                            ("lamda=1", "use --lamda"), ("graph", "--benchmark-option takes KEY=VALUE"),
                            ("graph=ring", "graph must be one of")]:
        assert cli_main(["compare", "pestcontrol", "--methods", "rs", "--seeds", "0", "--budget", "3",
                         "--benchmark-option", option, "--out", str(tmp_path / "bad")]) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "bad").exists()


def test_compare_refuses_a_finished_trace_of_other_options_instead_of_skipping_it(tmp_path, capsys):
    """A finished trace used to be skipped as 'finished' whatever options it was made with."""
    from graphbo.cli import main as cli_main

    out = tmp_path / "cmp"
    args = ["compare", "branin", "--methods", "sa", "--seeds", "0", "--budget", "3", "--out", str(out)]
    assert cli_main(args) == 0
    trace = out / "sa" / "seed0.db"
    before = trace.read_bytes()
    assert cli_main(args + ["--option", "cooling=0.5"]) == 2
    assert "belongs to a different run" in capsys.readouterr().err
    assert trace.read_bytes() == before
    assert cli_main(args) == 0 and "skip sa seed 0: finished" in capsys.readouterr().out
    assert cli_main(args + ["--option", "n_initial=1"]) == 2
    assert "use --n-initial" in capsys.readouterr().err
