"""Reports from comparison runs: tables in the papers' format, convergence plots.

``graphbo report DIR`` finds every run under ``DIR``: run study files
(``*/seed*.db``, read by :func:`graphbo.storage.read_run`) and packed run
tables (:mod:`graphbo.storage.packed`). It groups runs by
benchmark (with its options) and method, and writes a markdown file with,
per benchmark: mean +/- standard error of the best value at the budget over
finished runs, the paper's number beside it, the number of seeds, the mean
wall-clock per run; a convergence plot (best so far
against evaluations, mean +/- s.e. bands, the paper's number as a dotted
line, a log axis by ``log``: :func:`value_scale`); and for COMBO the posterior mean
of each ``beta_i`` at the end of the runs. A multi-fidelity run (BOHB) is
shown against full-fidelity-equivalent evaluations, with its full-fidelity
values only (:func:`~graphbo.experiments.runner.fidelity_best_so_far`).

``graphbo report --suite DIR`` reads the same runs as a suite (several
problems x methods x seeds, e.g. one ``graphbo compare --out DIR/PROBLEM`` per
problem) and writes :func:`write_suite_report`: each method's mean rank over
the problems, the mean best-found +/- s.e. per problem and method, and
best-so-far curves (median and quartiles over seeds).
"""

from __future__ import annotations

import functools
import glob
import json
import math
import os
from collections import defaultdict
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from .._lazy import require
from ..benchmarks import load_benchmark
from .paper_numbers import paper_number
from ..progress import progress_over
from ..storage import RunData, TraceError, read_run
from ..storage.packed import PACKED_SUFFIX, read_packed
from ..storage.runs import RUN_SUFFIX
from .runner import fidelity_best_so_far, trace_finished

__all__ = ["benchmark_id", "collect", "combine_auto", "write_report", "average_ranks", "suite_summary",
           "write_suite_report", "LOG_CHOICES", "check_log", "value_scale", "apply_scale", "curve_scale", "paper_lines"]


def benchmark_id(spec: dict[str, Any], label: str | None = None) -> str:
    """Display id of a run's benchmark: its name plus non-path options, e.g. ``ising(lamda=0.01)``.

    ``label`` is the benchmark object's own name (MaxSAT: ``maxsat28``). The
    instance seed of random benchmarks is not part of the id: runs over
    several instances are aggregated, as in the paper.
    """
    name = label or spec["benchmark"]
    opts = {k: v for k, v in spec.get("benchmark_options", {}).items() if k not in ("path", "seed")}
    if opts:
        name += "(" + ",".join(f"{k}={_fmt_opt(v)}" for k, v in sorted(opts.items())) + ")"
    return name


def _fmt_opt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def collect(root: str | Sequence[str], show: bool | None = None) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``{benchmark id: {method: [run summaries]}}`` for every run under ``root`` (one folder or several);
    a bar over the run files on a terminal (``show``: as :func:`graphbo.progress.progress_over`).

    A run summary is a dict: ``seed``, ``budget``, ``finished``, ``best_so_far`` (an array), ``seconds``,
    ``beta`` (COMBO's posterior mean ``beta_i`` by variable, else ``None``), ``best_params`` (the best
    configuration, as ``Study.best_params``; ``None`` if no value is finite), ``best_value`` and
    ``benchmark`` (its name and options)."""
    roots = [root] if isinstance(root, str) else list(root)
    out: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    paths = [p for r in roots for p in run_files_under(r)]
    for data in _runs(progress_over(paths, "reading runs", show=show)):
        head, evals, spec = data.head, data.evals, data.head["spec"]
        values = np.array([e["value"] for e in evals], dtype=float)
        last_state = data.state or {}
        if head.get("max_fidelity") is None:
            best_so_far = np.minimum.accumulate(values) if values.size else values
        else:  # multi-fidelity (BOHB): full-fidelity values against full-fidelity-equivalent evaluations
            best_so_far = np.array(fidelity_best_so_far(evals, int(head["max_fidelity"]), budget=spec["budget"]))
        out[benchmark_id(spec, head.get("benchmark_label"))][spec["method"]].append({
            "seed": spec["seed"],
            "budget": spec["budget"],
            "finished": trace_finished(head, evals, budget=spec["budget"]),
            "best_so_far": best_so_far,
            "seconds": float(sum(e["suggest_seconds"] + e["evaluate_seconds"] for e in evals)),
            # posterior mean beta_i of COMBO
            "beta": _stored_beta(last_state.get("method") or {}),
            "best_params": evals[int(np.nanargmin(values))]["config"] if np.isfinite(values).any() else None,
            "best_value": float(np.nanmin(values)) if np.isfinite(values).any() else float("nan"),
            "benchmark": (spec["benchmark"], dict(spec.get("benchmark_options", {}))),
        })
    return out


def _runs(paths: Iterable[str]) -> Iterator[RunData]:
    """The runs stored in ``paths`` (run files, and packed tables of many runs); unreadable files skipped."""
    for path in paths:
        try:
            yield from (read_packed(path) if path.endswith(PACKED_SUFFIX) else [read_run(path)])
        except TraceError:
            continue


def run_files_under(root: str) -> list[str]:
    """The run files under ``root`` (``**/seed*.db``) and packed run tables (``**/*.runs.jsonl.xz``,
    :mod:`graphbo.storage.packed`), sorted by name. ``root`` may be one table."""
    if root.endswith(PACKED_SUFFIX) and os.path.isfile(root):
        return [root]
    found = glob.glob(os.path.join(root, "**", f"seed*{RUN_SUFFIX}"), recursive=True)
    found += glob.glob(os.path.join(root, "**", f"*{PACKED_SUFFIX}"), recursive=True)
    return sorted(found)


def _mean_se(x: list[float]) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    se = float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else float("nan")
    return float(a.mean()), se


def _fmt(m: float, se: float, digits: int) -> str:
    return f"{m:.{digits}f} ± {se:.{digits}f}" if not math.isnan(se) else f"{m:.{digits}f}"


def _versus_paper(ours: tuple[float, float], paper: tuple[float, float]) -> str:
    """``ours - paper`` in combined standard errors, ``sqrt(se_ours^2 + se_paper^2)``.

    All objectives are minimised, so a negative number means ours is lower (better);
    ``|z| <= 2`` is "within two standard errors". Equal means with zero spread (an
    exact optimum found every time, say) read ``0``, ours rounded to the paper's
    printed decimals; a difference with zero spread reads ``±inf``; one run (no
    s.e.) gives ``–``.
    """
    (m, se), (pm, pse) = ours, paper
    if math.isnan(se):
        return "–"
    diff, scale = m - pm, math.hypot(se, pse)
    if scale == 0.0:
        # the paper prints rounded numbers (wMaxSAT60's optimum -195.6528 as -195.65): compare at its precision
        digits = len(repr(float(pm)).split(".")[1]) if "e" not in repr(float(pm)) else 12
        diff = round(m, digits) - pm
        return "0" if abs(diff) < 1e-12 else ("+inf" if diff > 0 else "-inf")
    return f"{diff / scale:+.1f}"


def _digits(values: list[float]) -> int:
    mag = max((abs(v) for v in values), default=1.0)
    return 4 if mag < 10 else (3 if mag < 100 else 2)


LINE_STYLES = ("-", "--", ":", "-.")
N_COLOURS = 10  # matplotlib's tab10


def method_style(i: int) -> tuple[int, str]:
    """(tab10 colour index, line style) of the i-th method in a plot: ten colours solid, then the
    same ten dashed, dotted and dash-dotted, so that up to 40 methods are told apart."""
    return i % N_COLOURS, LINE_STYLES[(i // N_COLOURS) % len(LINE_STYLES)]


#: the ``--log`` choices of ``graphbo report``: a log y axis when it helps (``auto``), always (``on``), never (``off``)
LOG_CHOICES = ("auto", "on", "off")
#: ``auto`` draws values on a log axis when they are positive and their largest is this many times their smallest
LOG_SPAN = 100.0



def make_img_dir(img_dir: str) -> None:
    """The report's image folder, made only once the plots can be drawn: without matplotlib, the one-line
    message of the missing extra and no empty folder."""
    require("matplotlib", "the report's plots", extra="report")
    os.makedirs(img_dir, exist_ok=True)

def check_log(log: str) -> str:
    """``log`` if it is one of :data:`LOG_CHOICES`; else ``ValueError`` naming the argument."""
    if log not in LOG_CHOICES:
        raise ValueError(f"log must be one of {', '.join(LOG_CHOICES)}, got {log!r}")
    return log


def value_scale(values: Any, log: str = "auto") -> str:
    """The y scale of best-so-far values: ``"log"``, ``"symlog"`` or ``"linear"``.

    ``auto``: ``log`` when every finite value is positive and they span more than two decades
    (:data:`LOG_SPAN`), else ``linear``; ``on``: ``log`` for positive values, ``symlog`` (logarithmic
    in ``|y|`` away from 0, linear near it) when some are zero or negative; ``off``: ``linear``.
    """
    check_log(log)
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if log == "off" or not v.size:
        return "linear"
    positive = bool(v.min() > 0)
    if log == "auto":
        return "log" if positive and v.max() / v.min() > LOG_SPAN else "linear"
    return "log" if positive else "symlog"


def apply_scale(ax: Any, scale: str, *, values: Any) -> str:
    """Set ``ax``'s y scale to ``scale`` (a :func:`value_scale` result, or ``"regret"``: log) and return
    matplotlib's name of it. ``symlog``'s linear band reaches the smallest non-zero ``|value|`` (at least a
    millionth of the largest), so that every value but 0 sits in the logarithmic part."""
    if scale in ("log", "regret"):
        ax.set_yscale("log")
    elif scale == "symlog":
        a = np.abs(np.asarray(values, dtype=float).ravel())
        a = a[np.isfinite(a) & (a > 0)]
        ax.set_yscale("symlog", linthresh=float(max(a.min(), 1e-6 * a.max())) if a.size else 1.0)
    return str(ax.get_yscale())


def paper_lines(bench: str, runs: dict[str, list[dict]]) -> dict[str, float]:
    """The paper's mean best value at the budget (:func:`~graphbo.experiments.paper_numbers.paper_number`)
    of each method with finished runs on ``bench``, where the paper reports one at the runs' budget."""
    budget = max((r["budget"] for rs in runs.values() for r in rs), default=None)
    out = {}
    for method, rs in runs.items():
        p = paper_number(bench, method, budget=budget)
        if p is not None and any(r["finished"] for r in rs):
            out[method] = float(p[0])
    return out


def _any_finished(runs: dict[str, list[dict]]) -> bool:
    """Whether any method has a finished run (the plots draw finished runs only)."""
    return any(r["finished"] for rs in runs.values() for r in rs)


def _plot_convergence(bench: str, runs: dict[str, list[dict]], path: str, log: str = "auto",
                      paper: dict[str, float] | None = None) -> Any:
    """Best so far against evaluations, mean +/- s.e. over the finished runs of each method, with the
    paper's mean at the budget (``paper``: :func:`paper_lines`) as a dotted line in the method's colour;
    the y scale is :func:`value_scale` of what is drawn. Returns the (closed) figure's axes."""
    matplotlib = require("matplotlib", "the report's plots", extra="report")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    check_log(log)
    paper = paper or {}
    fig, ax = plt.subplots(figsize=(7.5, 4))
    palette = getattr(plt.get_cmap("tab10"), "colors")  # a ListedColormap: its ten colours
    drawn, shown = 0, []
    for method, rs in sorted(runs.items()):
        done = [r["best_so_far"] for r in rs if r["finished"]]
        if not done:
            continue
        curves = np.stack(done)
        x = np.arange(1, curves.shape[1] + 1)
        m = curves.mean(0)
        se = curves.std(0, ddof=1) / np.sqrt(len(done)) if len(done) > 1 else np.zeros_like(m)
        colour_index, style = method_style(drawn)
        color = palette[colour_index]
        ax.plot(x, m, color=color, linestyle=style, label=f"{method} ({len(done)})")
        ax.fill_between(x, m - se, m + se, color=color, alpha=0.2)
        shown.append(m)
        if method in paper:
            ax.axhline(paper[method], color=color, linestyle=":", linewidth=1.2, label=f"{method}, paper")
            shown.append(np.array([paper[method]]))
        drawn += 1
    values = np.concatenate(shown) if shown else np.array([])
    apply_scale(ax, value_scale(values, log), values=values)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best value so far")
    ax.set_title(bench)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return ax


def _stored_beta(method_state: dict[str, Any]) -> dict[str, float] | None:
    """COMBO's posterior mean ``beta_i`` in a stored optimizer state (``beta``)."""
    beta = method_state.get("beta")
    return beta if isinstance(beta, dict) else None


def _plot_beta(bench: str, rel: list[dict[str, float]], path: str) -> None:
    matplotlib = require("matplotlib", "the report's plots", extra="report")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rel[0])
    vals = np.array([[r[n] for n in names] for r in rel])
    fig, ax = plt.subplots(figsize=(max(4, 0.25 * len(names) + 2), 3))
    ax.bar(range(len(names)), vals.mean(0), yerr=vals.std(0) / np.sqrt(len(rel)) if len(rel) > 1 else None)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("posterior mean β_i (small: strong effect)", fontsize=8)
    ax.set_title(f"COMBO beta, {bench}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _is_architecture(config: Any) -> bool:
    return isinstance(config, dict) and {"kind", "labels", "units", "edges"} <= set(config)


def _best_network(bench: str, runs: dict[str, list[dict]], img_dir: str, out_dir: str, slug: str) -> list[str]:
    """A picture of the best network found over all finished runs (architecture benchmarks)."""
    done = [(r["best_value"], m, r["seed"], r["best_params"]) for m, rs in runs.items() for r in rs
            if r["finished"] and _is_architecture(r["best_params"])]
    if not done:
        return []
    from ..nas.domain.plot import draw_architecture

    value, method, seed, config = min(done, key=lambda t: (t[0], t[1], t[2]))
    path = os.path.join(img_dir, f"{slug}_best_network.png")
    draw_architecture(config, path, title=f"{bench}: best network ({method}, seed {seed}, value {value:.4g})")
    n_layers = len(config["labels"])
    return [f"Best network over all runs: {method}, seed {seed}, value {value:.4g}, {n_layers} layers.", "",
            f"![best network on {bench}]({os.path.relpath(path, out_dir)})", ""]


def write_report(root: str | Sequence[str], out: str | None = None, *, title: str = "Results",
                 notes: str | None = None, log: str = "auto") -> str:
    """Write the markdown report of the runs under ``root`` (one folder or several), and
    its PNGs next to it; return its path. ``notes``: markdown put under the header (the
    conditions of the runs, say), so that it survives regenerating the report. ``log``: the
    convergence plots' y scale (:data:`LOG_CHOICES`, :func:`value_scale`)."""
    check_log(log)
    roots = [root] if isinstance(root, str) else list(root)
    data = collect(roots)
    out = out or os.path.join(roots[0], "report.md")
    root = " ".join(roots)
    img_dir = os.path.join(os.path.dirname(out) or ".", "img")
    make_img_dir(img_dir)
    command = f"graphbo report {root}" + ("" if log == "auto" else f" --log {log}")
    lines = [f"# {title}", "",
             f"Generated by `{command}` from the traces under {'that folder' if len(roots) == 1 else 'those folders'}. "
             "Best value at the budget, mean ± standard error over finished runs (seeds); "
             "the paper's mean ± s.e. beside it where it reports one (over 25 runs in COMBO's tables, 5 in BO-FM's). "
             "\"vs paper\" is ours minus the paper's mean in combined standard errors "
             "(sqrt(se_ours² + se_paper²)): negative is better (every objective is minimised), "
             "and |vs paper| ≤ 2 is within two standard errors. "
             "Wall-clock is the mean per run (suggestions plus evaluations). "
             "In the convergence plots a dotted line in a method's colour is the paper's mean at the budget.", ""]
    if notes:
        lines += [notes.strip(), ""]
    for bench in sorted(data):
        runs = data[bench]
        budgets = {r["budget"] for rs in runs.values() for r in rs}
        lines += [f"## {bench}", "", f"Budget: {', '.join(map(str, sorted(budgets)))} evaluations.", ""]
        rows = []
        allvals = []
        for method in sorted(runs):
            done = [r for r in runs[method] if r["finished"]]
            best = [float(r["best_so_far"][-1]) for r in done]
            allvals += best
            rows.append((method, done, best, len(runs[method]) - len(done)))
        d = _digits(allvals)
        lines += ["| method | ours | seeds | paper | vs paper | wall-clock / run |", "|---|---|---|---|---|---|"]
        for method, done, best, unfinished in rows:
            ours = _fmt(*_mean_se(best), d) if best else "–"
            p = paper_number(bench, method, budget=max(budgets))
            paper = _fmt(p[0], p[1], d) if p else "–"
            versus = _versus_paper(_mean_se(best), p) if (p and best) else "–"
            secs = f"{np.mean([r['seconds'] for r in done]):.0f} s" if done else "–"
            seeds = f"{len(done)}" + (f" (+{unfinished} unfinished)" if unfinished else "")
            lines.append(f"| {method} | {ours} | {seeds} | {paper} | {versus} | {secs} |")
        slug = "".join(c if c.isalnum() else "_" for c in bench)
        if not _any_finished(runs):
            lines += ["", "No run of this benchmark has finished yet: no curve is drawn.", ""]
            continue
        conv = os.path.join(img_dir, f"{slug}_convergence.png")
        _plot_convergence(bench, runs, conv, log=log, paper=paper_lines(bench, runs))
        lines += ["", f"![convergence on {bench}]({os.path.relpath(conv, os.path.dirname(out) or '.')})", ""]
        rel = [r["beta"] for r in runs.get("combo", []) if r["finished"] and r["beta"]]
        if rel:
            rp = os.path.join(img_dir, f"{slug}_combo_beta.png")
            _plot_beta(bench, rel, rp)
            lines += [f"![COMBO beta on {bench}]({os.path.relpath(rp, os.path.dirname(out) or '.')})", ""]
        lines += _best_network(bench, runs, img_dir, os.path.dirname(out) or ".", slug)
    with open(out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return out


# -- suites: ranks over problems ---------------------------------------------------------------------------
def average_ranks(values: dict[str, float]) -> dict[str, float]:
    """Rank of each key by its value, 1 for the lowest (every objective is minimised); tied values share
    the mean of the ranks they span (``{a: 1, b: 1, c: 3}`` -> ``{a: 1.5, b: 1.5, c: 3}``)."""
    order = sorted(values, key=lambda k: values[k])
    ranks: dict[str, float] = {}
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i: j + 1]:
            ranks[k] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def suite_summary(data: dict[str, dict[str, list[dict[str, Any]]]], at: int | None = None) -> dict[str, Any]:
    """Per problem and method the best values at the budget of the finished runs (with ``at``: after ``at``
    evaluations, of the finished runs that made that many), their mean and standard
    error, the method's rank on the problem (by mean, ties averaged: :func:`average_ranks`) and whether it
    is first or within two combined standard errors of the first (``mean - first <= 2 sqrt(se^2 + se_first^2)``,
    a missing s.e. counted as 0); per method the mean rank over the problems it ran on."""
    problems: dict[str, dict[str, dict[str, Any]]] = {}
    for bench in sorted(data):
        cells: dict[str, dict[str, Any]] = {}
        for method, runs in sorted(data[bench].items()):
            best = [float(r["best_so_far"][-1 if at is None else at - 1]) for r in runs
                    if r["finished"] and (at is None or len(r["best_so_far"]) >= at)]
            if best:
                m, se = _mean_se(best)
                cells[method] = {"best": best, "mean": m, "se": se, "unfinished": len(runs) - len(best)}
        if not cells:
            continue
        ranks = average_ranks({k: c["mean"] for k, c in cells.items()})
        first = min(cells.values(), key=lambda c: c["mean"])
        for method, c in cells.items():
            c["rank"], c["top_rank"] = ranks[method], min(ranks.values())
            gap = c["mean"] - first["mean"]
            c["near_first"] = bool(gap <= 2.0 * math.hypot(_zero_nan(c["se"]), _zero_nan(first["se"])))
        problems[bench] = cells
    methods = sorted({m for cells in problems.values() for m in cells})
    overall = {}
    for method in methods:
        mine = [cells[method] for cells in problems.values() if method in cells]
        overall[method] = {"mean_rank": float(np.mean([c["rank"] for c in mine])), "problems": len(mine),
                           "first": sum(c["rank"] == c["top_rank"] for c in mine),
                           "near_first": sum(c["near_first"] for c in mine)}
    return {"problems": problems, "methods": overall}


def _zero_nan(x: float) -> float:
    return 0.0 if math.isnan(x) else x


@functools.lru_cache(maxsize=None)
def _optimum_of(name: str, options_json: str) -> float | None:
    """The benchmark's known optimum (its ``optimum``), or ``None`` when it has none or cannot be loaded."""
    try:
        value = getattr(load_benchmark(name, **json.loads(options_json)), "optimum", None)
    except Exception:  # a missing extra or data file: the curves are drawn without regret
        return None
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _run_optimum(run: dict[str, Any]) -> float | None:
    name, options = run["benchmark"]
    return _optimum_of(name, json.dumps(options, sort_keys=True))


#: the name under which :func:`combine_auto` reports graphbo's ``method="auto"``
AUTO_NAME = "auto"

#: the smallest regret a log-scale plot shows; smaller ones (the optimum found, up to its printed digits) sit on it
REGRET_FLOOR = 1e-8


def curve_scale(runs: dict[str, list[dict]], log: str = "auto") -> str:
    """How a problem's best-so-far curves are drawn.

    ``auto``: ``"regret"`` when every finished run's benchmark knows its optimum (best so far minus the
    optimum, log scale), ``"log"`` when all values are positive and span more than two decades, else
    ``"linear"``. ``on``: ``"regret"`` where the optimum is known, else :func:`value_scale` with ``on``
    (``"log"``, or ``"symlog"`` for values that are not all positive). ``off``: ``"linear"``.
    """
    check_log(log)
    done = [r for rs in runs.values() for r in rs if r["finished"]]
    if log == "off":
        return "linear"
    if done and all(_run_optimum(r) is not None for r in done):
        return "regret"
    vals = np.concatenate([r["best_so_far"] for r in done]) if done else np.array([])
    return value_scale(vals, log)


def _auto_choice(name: str, options_json: str, budget: int) -> str | None:
    """The method ``method="auto"`` chooses for a benchmark's space and ``budget``
    (:func:`graphbo.optimizers.auto.choose_method`), or ``None`` when the benchmark cannot be loaded."""
    from ..optimizers.auto import choose_method

    try:
        space = load_benchmark(name, **json.loads(options_json)).space
    except Exception:  # a missing extra or data file: that problem keeps its method names
        return None
    return choose_method(space, budget)


def combine_auto(data: dict[str, dict[str, list[dict[str, Any]]]]) -> tuple[dict[str, str], dict[str, str]]:
    """Report graphbo's ``auto`` as one method, in place: on each problem the runs of the method that
    ``auto`` chooses for the problem's space and budget (``graphbo compare`` stores them under that name)
    move to ``"auto"``.

    The choice is recomputed with today's rule (docs/auto.md) from each run's benchmark (with its options,
    e.g. a seeded instance) and budget. Returns ``(chosen, skipped)``: ``{problem: chosen method}`` where
    runs moved, and ``{problem: reason}`` where none did although the problem has runs: its runs give
    different choices (e.g. budgets on both sides of a threshold), its benchmark cannot be loaded, none
    of its runs are of the chosen method, or it already has a method named ``auto``.
    """
    chosen: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for bench, methods in data.items():
        if AUTO_NAME in methods:
            skipped[bench] = f"a method is already named {AUTO_NAME}"
            continue
        runs = [r for rs in methods.values() for r in rs]
        keys = {(r["benchmark"][0], json.dumps(r["benchmark"][1], sort_keys=True), int(r["budget"])) for r in runs}
        choices = {_auto_choice(*key) for key in keys}  # one per instance (seeded benchmarks) and budget
        if None in choices:
            skipped[bench] = "its benchmark cannot be loaded here"
        elif len(choices) != 1:
            skipped[bench] = f"its runs' budgets or instances give different choices ({', '.join(sorted(str(c) for c in choices))})"
        elif (method := next(iter(choices))) not in methods:
            skipped[bench] = f"no runs of {method}, auto's choice"
        else:
            methods[AUTO_NAME] = methods.pop(method)
            chosen[bench] = method
    return chosen, skipped


def _plot_suite_curves(bench: str, runs: dict[str, list[dict]], path: str, log: str = "auto") -> str:
    """Best so far against evaluations, median and quartiles over the finished runs of each method; returns
    the scale used (:func:`curve_scale`)."""
    matplotlib = require("matplotlib", "the report's plots", extra="report")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale = curve_scale(runs, log)
    fig, ax = plt.subplots(figsize=(7.5, 4))
    palette = getattr(plt.get_cmap("tab10"), "colors")
    drawn: list[np.ndarray] = []
    for i, (method, rs) in enumerate(sorted(runs.items())):
        done = [r for r in rs if r["finished"]]
        if not done:
            continue
        length = min(len(r["best_so_far"]) for r in done)
        curves = np.stack([np.asarray(r["best_so_far"][:length], dtype=float) for r in done])
        if scale == "regret":
            opt = np.array([_run_optimum(r) for r in done], dtype=float)[:, None]
            curves = np.maximum(curves - opt, REGRET_FLOOR)
        q1, med, q3 = np.percentile(curves, [25, 50, 75], axis=0)
        x = np.arange(1, length + 1)
        colour_index, style = method_style(i)
        ax.plot(x, med, color=palette[colour_index], linestyle=style, label=f"{method} ({len(done)})")
        ax.fill_between(x, q1, q3, color=palette[colour_index], alpha=0.2)
        drawn.append(curves)
    apply_scale(ax, scale, values=np.concatenate([c.ravel() for c in drawn]) if drawn else np.array([]))
    ax.set_xlabel("evaluations")
    ax.set_ylabel("regret (best so far - optimum)" if scale == "regret" else "best value so far")
    ax.set_title(bench)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return scale


def write_suite_report(root: str | Sequence[str], out: str | None = None, *, title: str = "Suite",
                       notes: str | None = None, log: str = "auto", auto: bool = False,
                       at: Sequence[int] = ()) -> str:
    """Write the suite report of the runs under ``root`` (one folder or several; default file
    ``suite.md`` in the first) and its PNGs (``img/<file stem>_<problem>_curves.png`` next to it);
    return its path. See :func:`suite_summary` for the numbers, :func:`curve_scale` for ``log``,
    :func:`combine_auto` for ``auto``. ``at``: evaluation counts below the budget at which the ranks and
    best values are also given (the same runs, read after that many evaluations)."""
    check_log(log)
    at = sorted({int(n) for n in at})
    if any(n < 1 for n in at):
        raise ValueError(f"at: evaluation counts must be positive, got {at}")
    roots = [root] if isinstance(root, str) else list(root)
    data = collect(roots)
    chosen, skipped = combine_auto(data) if auto else ({}, {})
    summary = suite_summary(data)
    problems = summary["problems"]
    out = out or os.path.join(roots[0], "suite.md")
    out_dir = os.path.dirname(out) or "."
    img_dir = os.path.join(out_dir, "img")
    make_img_dir(img_dir)
    stem = os.path.splitext(os.path.basename(out))[0]
    command = (f"graphbo report --suite {' '.join(roots)}" + ("" if log == "auto" else f" --log {log}")
               + (" --auto" if auto else "") + "".join(f" --at {n}" for n in at))
    lines = [f"# {title}", "",
             f"Generated by `{command}` from the run files there. "
             "Every objective is minimised. On each problem the methods are ranked by their mean best value at "
             "the budget over finished runs (seeds), tied means sharing the mean of their ranks; a method's mean "
             "rank is over the problems it ran on. \"first or ≈\" counts the problems where the method is first or "
             "within two combined standard errors of the first (mean − first ≤ 2·sqrt(se² + se_first²)).", ""]
    if notes:
        lines += [notes.strip(), ""]
    if chosen:
        lines += [f"`{AUTO_NAME}` is graphbo's `method=\"auto\"`, shown under one name: on each problem, the runs of "
                  "the method it chooses for that space and budget ([auto.md](auto.md)): "
                  + "; ".join(f"{b}: `{m}`" for b, m in chosen.items()) + ".", ""]
    if skipped:
        lines += ["Problems where `auto` is not shown, under their stored names: "
                  + "; ".join(f"{b} ({why})" for b, why in skipped.items()) + ".", ""]
    lines += _suite_tables(data, summary)
    for n in at:
        lines += [""] + _suite_tables(data, suite_summary(data, at=n), at=n)
    unfinished = [f"{b} {m} ({n})" for b in sorted(data) for m, rs in sorted(data[b].items())
                  if (n := sum(not r["finished"] for r in rs))]
    if unfinished:
        lines += ["", "Unfinished runs (problem, method, how many), left out: " + ", ".join(unfinished) + "."]
    lines += ["", "## Best so far", "",
              "Median (line) and quartiles (band) over seeds. Where the benchmark knows its optimum the curve is the "
              f"regret (best so far minus the optimum) on a log scale, a regret below {REGRET_FLOOR:g} drawn at it; "
              "otherwise the best value, on a log scale where it is positive and spans more than two decades "
              "(`--log on`: always, symmetric-log where it is not positive; `--log off`: a linear scale "
              "throughout).", ""]
    for bench in problems:
        slug = "".join(c if c.isalnum() else "_" for c in bench)
        path = os.path.join(img_dir, f"{stem}_{slug}_curves.png")
        scale = _plot_suite_curves(bench, data[bench], path, log)
        lines += [f"### {bench}", "", f"![best so far on {bench} ({scale})]({os.path.relpath(path, out_dir)})", ""]
    with open(out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return out


def _suite_tables(data: dict[str, dict[str, list[dict[str, Any]]]], summary: dict[str, Any],
                  at: int | None = None) -> list[str]:
    """The mean-rank table and the best-value table of a :func:`suite_summary` (of the best values at the budget,
    or after ``at`` evaluations)."""
    problems, methods = summary["problems"], summary["methods"]
    when = "at the budget" if at is None else f"after {at} evaluations"
    lines = ["## Mean rank" + ("" if at is None else f" {when}"), "", "| method | mean rank | problems | first | first or ≈ |",
             "|---|---|---|---|---|"]
    for method in sorted(methods, key=lambda m: (methods[m]["mean_rank"], m)):
        o = methods[method]
        lines.append(f"| {method} | {o['mean_rank']:.2f} | {o['problems']} | {o['first']} | {o['near_first']} |")
    names = sorted(methods)
    lines += ["", f"## Best value {when}", "",
              "Mean ± standard error over seeds, the rank on the problem in brackets; bold: first; "
              "≈: within two standard errors of the first.", "",
              "| problem | " + ("budget" if at is None else "evaluations") + " | seeds | " + " | ".join(names) + " |", "|---" * (len(names) + 3) + "|"]
    for bench, cells in problems.items():
        d = _digits([v for c in cells.values() for v in c["best"]])
        budgets = sorted({r["budget"] for rs in data[bench].values() for r in rs}) if at is None else [at]
        seeds = sorted({len(c["best"]) for c in cells.values()})
        row = [bench, ", ".join(map(str, budgets)), "–".join(map(str, sorted({seeds[0], seeds[-1]})))]
        for method in names:
            c = cells.get(method)
            if c is None:
                row.append("–")
                continue
            text = f"{_fmt(c['mean'], c['se'], d)} ({c['rank']:g})"
            row.append(f"**{text}**" if c["rank"] == c["top_rank"] else (f"≈ {text}" if c["near_first"] else text))
        lines.append("| " + " | ".join(row) + " |")
    return lines
