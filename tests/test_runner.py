import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from graphbo.experiments.report import collect, write_report
from graphbo.experiments.runner import RunSpec, TraceError, compare, parse_seeds, read_trace, run

FAST = {"n_burn": 5, "n_samples": 2, "n_random": 300, "n_spray": 5, "n_starts": 3}


def spec(method="combo", seed=0, budget=14):
    return RunSpec("branin", method, seed, budget, 3, {}, FAST if method == "combo" else {})


def configs(path):
    _, evals, _ = read_trace(path)
    return [(e["config"], e["value"]) for e in evals]


def test_parse_seeds():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("1,5,7-8") == [1, 5, 7, 8]
    with pytest.raises(ValueError):
        parse_seeds("5-2")


def test_killed_run_resumes_to_the_same_trace(tmp_path):
    full = tmp_path / "full.jsonl"
    run(spec(), str(full))
    reference = configs(full)
    assert len(reference) == 14
    rng = np.random.default_rng(0)
    for attempt in range(3):
        path = tmp_path / f"killed{attempt}.jsonl"
        code = (
            "import sys, json; from graphbo.experiments.runner import RunSpec, run; "
            f"run(RunSpec('branin', 'combo', 0, 14, 3, {{}}, {FAST!r}), {str(path)!r})"
        )
        proc = subprocess.Popen([sys.executable, "-c", code])
        # wait until a random number of evaluations is on disk, then SIGKILL
        target = int(rng.integers(2, 12))
        deadline = time.time() + 60
        while time.time() < deadline:
            if path.exists() and path.read_text().count("\n") >= target + 1:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done_before = len(read_trace(str(path))[1])
        assert done_before < 14
        summary = run(spec(), str(path))
        assert summary["resumed_from"] == done_before
        assert configs(path) == reference


def test_a_line_cut_short_is_dropped_and_rerun(tmp_path):
    path = tmp_path / "t.jsonl"
    run(spec("rs", budget=8), str(path), compact=False)
    full = configs(path)
    text = path.read_text().splitlines(keepends=True)
    path.write_text("".join(text[:5]) + text[5][: len(text[5]) // 2])  # crash while writing eval 4
    run(spec("rs", budget=8), str(path))
    assert configs(path) == full


def test_foreign_or_mismatched_traces_raise_and_stay_untouched(tmp_path):
    path = tmp_path / "t.jsonl"
    run(spec("rs", budget=4), str(path))
    before = path.read_bytes()
    with pytest.raises(TraceError, match="different run"):
        run(spec("rs", seed=1, budget=4), str(path))
    assert path.read_bytes() == before
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text("hello\nworld\n")
    with pytest.raises(TraceError, match="not a graphbo trace"):
        run(spec("rs", budget=4), str(foreign))
    assert foreign.read_text() == "hello\nworld\n"
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"type": "run", "format": 999, "spec": {}}) + "\n")
    with pytest.raises(TraceError, match="newer"):
        run(spec("rs", budget=4), str(newer))


def test_compare_skips_finished_runs_and_report_aggregates(tmp_path):
    specs = [spec(m, s, budget=6) for m in ("combo", "rs") for s in (0, 1)]
    out = tmp_path / "cmp"
    first = compare(specs, str(out), n_workers=2)
    assert len(first) == 4
    mtimes = {p: os.path.getmtime(p) for p in out.rglob("*.jsonl")}
    assert compare(specs, str(out), n_workers=2) == []
    assert {p: os.path.getmtime(p) for p in out.rglob("*.jsonl")} == mtimes
    data = collect(str(out))
    assert set(data["branin"]) == {"combo", "rs"}
    for method, runs in data["branin"].items():
        for r in runs:
            assert r["finished"] and len(r["best_so_far"]) == 6
            values = [v for _, v in configs(out / method / f"seed{r['seed']}.jsonl")]
            assert r["best_so_far"][-1] == min(values)
    report = write_report(str(out), out=str(tmp_path / "r.md"))
    text = open(report).read()
    best_rs = [min(v for _, v in configs(out / "rs" / f"seed{s}.jsonl")) for s in (0, 1)]
    row = next(l for l in text.splitlines() if l.startswith("| rs |"))
    shown_mean, shown_se = (float(x) for x in row.split("|")[2].split("±"))
    assert shown_mean == pytest.approx(np.mean(best_rs), abs=1e-2)
    assert shown_se == pytest.approx(np.std(best_rs, ddof=1) / np.sqrt(2), abs=1e-2)
    assert (tmp_path / "img" / "branin_convergence.png").stat().st_size > 1000
    assert (tmp_path / "img" / "branin_combo_beta.png").exists()


def test_report_row_of_a_method_with_only_unfinished_runs(tmp_path):
    """A run stopped before its budget is counted apart and left out of the mean and the wall-clock."""
    out = tmp_path / "cmp"
    run(spec("rs", 0, budget=6), str(out / "rs" / "seed0.jsonl"))
    cut = out / "sa" / "seed0.jsonl"
    run(spec("sa", 0, budget=6), str(cut), compact=False)
    lines = cut.read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[:4]))  # header + 3 evaluations of 6: a run killed midway
    text = open(write_report(str(out), out=str(tmp_path / "r.md"))).read()
    cells = [c.strip() for c in next(l for l in text.splitlines() if l.startswith("| sa |")).split("|")[1:-1]]
    assert cells[1] == "–" and cells[2] == "0 (+1 unfinished)" and cells[5] == "–"
    rs = [c.strip() for c in next(l for l in text.splitlines() if l.startswith("| rs |")).split("|")[1:-1]]
    assert rs[2] == "1" and rs[5].endswith(" s") and "nan" not in text


def test_report_puts_the_difference_from_the_paper_in_standard_errors(tmp_path):
    """At the paper's budget (Branin: 100) the SA row carries (ours - paper) / combined s.e."""
    from graphbo.experiments.paper_numbers import paper_number

    out = tmp_path / "cmp"
    compare([spec("sa", s, budget=100) for s in (0, 1, 2)], str(out))
    text = open(write_report(str(out), out=str(tmp_path / "r.md"))).read()
    best = [min(v for _, v in configs(out / "sa" / f"seed{s}.jsonl")) for s in (0, 1, 2)]
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
    import graphbo as gb
    from graphbo.loop import make_optimizer

    space = gb.Space({f"x{i}": gb.Binary() for i in range(8)})
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


def test_a_finished_trace_keeps_the_state_on_its_last_line_only(tmp_path):
    path = tmp_path / "t.jsonl"
    first = run(spec("sa", budget=6), str(path))
    lines = [json.loads(l) for l in path.read_text().splitlines()]
    assert ["state" in r for r in lines[1:]] == [False] * 5 + [True]
    before = path.read_bytes()
    again = run(spec("sa", budget=6), str(path))  # finished: nothing rerun, nothing rewritten
    assert again["resumed_from"] == 6 and again["best"] == first["best"]
    assert path.read_bytes() == before


def test_a_run_locked_by_another_process_is_refused_and_left_alone(tmp_path):
    import fcntl
    import subprocess
    import sys

    from graphbo.experiments.runner import RunLockedError

    path = tmp_path / "t.jsonl"
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
    run(spec("rs", budget=4), str(path))  # the lock died with its process
    assert len(configs(path)) == 4


def test_compare_defaults_to_the_benchmarks_own_methods(tmp_path):
    from graphbo.cli import main as cli_main

    out = tmp_path / "cmp"
    assert cli_main(["compare", "nas-synthetic", "--seeds", "0", "--budget", "2", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["ea", "nasbot", "rand"]
    out2 = tmp_path / "cmp2"
    assert cli_main(["compare", "func2c", "--seeds", "0", "--budget", "2", "--out", str(out2)]) == 0
    assert sorted(p.name for p in out2.iterdir()) == ["bofm", "rs"]


def test_epochs_option_reaches_networks_and_is_refused_elsewhere(tmp_path, capsys):
    from graphbo.cli import main as cli_main

    out = tmp_path / "nas"
    assert cli_main(["compare", "nas-mlp", "--methods", "rand", "--seeds", "0", "--budget", "1",
                     "--epochs", "1", "--out", str(out)]) == 0
    head, evals, _ = read_trace(str(out / "rand" / "seed0.jsonl"))
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
    text = open(report).read()
    png = tmp_path / "img" / "nas_synthetic_best_network.png"
    assert f"Best network over all runs: {best[1]}, seed {best[2]}, value {best[0]:.4g}" in text
    assert "img/nas_synthetic_best_network.png" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a benchmark whose configurations are not networks gets no such picture
    assert cli_main(["compare", "branin", "--methods", "rs", "--seeds", "0", "--budget", "3",
                     "--out", str(tmp_path / "b")]) == 0
    assert "Best network" not in open(write_report(str(tmp_path / "b"), out=str(tmp_path / "b.md"))).read()
    # several folders make one report with a section per benchmark
    assert cli_main(["report", str(tmp_path / "b"), str(out), "--out", str(tmp_path / "both.md")]) == 0
    both = open(tmp_path / "both.md").read()
    assert "## branin" in both and "## nas-synthetic" in both and "those folders" in both
    assert cli_main(["report", str(out), str(tmp_path / "missing")]) == 2
    (tmp_path / "notes.md").write_text("Trained on **bundled data**.\n")
    assert cli_main(["report", str(out), "--out", str(tmp_path / "n.md"), "--notes", str(tmp_path / "notes.md")]) == 0
    noted = open(tmp_path / "n.md").read()
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
    assert cli_main(["compare", "func2c", "--methods", "cocabo-0.5", "--seeds", "0", "--budget", "11",
                     "--n-initial", "10", "--option", "ard=true", "--option", "kappa=3", "--out", str(out)]) == 0
    head, evals, _ = read_trace(str(out / "cocabo-0.5" / "seed0.jsonl"))
    assert head["spec"]["method_options"] == {"ard": True, "kappa": 3} and len(evals) == 11
    _, opt = make_run(RunSpec(**head["spec"]))
    assert opt.kernel.ard is True and opt.kappa == 3.0
    assert cli_main(["compare", "func2c", "--methods", "cocabo-0.5", "--seeds", "0", "--budget", "11",
                     "--option", "no_such_option=1", "--out", str(tmp_path / "bad")]) == 2
    assert "does not take {'no_such_option': 1}" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    assert cli_main(["compare", "func2c", "--option", "ard", "--out", str(tmp_path / "bad2")]) == 2
    assert "--option takes KEY=VALUE" in capsys.readouterr().err


def test_compare_refuses_a_finished_trace_of_other_options_instead_of_skipping_it(tmp_path, capsys):
    """A finished trace used to be skipped as 'finished' whatever options it was made with."""
    from graphbo.cli import main as cli_main

    out = tmp_path / "cmp"
    args = ["compare", "branin", "--methods", "sa", "--seeds", "0", "--budget", "3", "--out", str(out)]
    assert cli_main(args) == 0
    trace = out / "sa" / "seed0.jsonl"
    before = trace.read_bytes()
    assert cli_main(args + ["--option", "cooling=0.5"]) == 2
    assert "belongs to a different run" in capsys.readouterr().err
    assert trace.read_bytes() == before
    assert cli_main(args) == 0 and "skip sa seed 0: finished" in capsys.readouterr().out
    assert cli_main(args + ["--option", "n_initial=1"]) == 2
    assert "use --n-initial" in capsys.readouterr().err
