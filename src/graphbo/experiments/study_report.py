"""``graphbo report STUDY.db``: the report of one study file, read-only.

A study file is what :class:`graphbo.Study`, ``graphbo.minimize(..., storage=PATH)`` or ``graphbo run``
write. The report (markdown, its PNGs in ``img/`` beside it) gives the method, seed and direction, the
trial counts, the best value and configuration in the variables' own values, the ten best trials, the
best-so-far curve in the study's direction (:func:`plot_best_so_far`), for COMBO each variable's
effect from the optimizer state stored at its last fit (:func:`variable_effects`), and for every method each
variable's importance (:func:`graphbo.importance.param_importances`).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..outcomes import hypervolume_trace, pareto_mask, reference_point

from .._lazy import require
from ..importance import MIN_OBSERVATIONS, trial_importances
from ..storage.info import load_study_file, read_study_info
from ..study import space_from_description
from .report import _plot_beta, _stored_beta, apply_scale, check_log, make_img_dir, value_scale

__all__ = ["study_summary", "variable_effects", "plot_best_so_far", "plot_relevance", "write_study_report",
           "TOP"]

#: how many of the best trials the report lists
TOP = 10


def variable_effects(meta: dict[str, Any]) -> tuple[str, dict[str, float]] | None:
    """Each variable's effect in a COMBO study's stored optimizer state, with what it is.

    ``("relevance", {name: r_i})`` when the state holds COMBO's relevance
    (:attr:`graphbo.optimizers.COMBO.relevance`: ``1 - rho_i``, ``rho_i`` the mean correlation between
    distinct values of variable ``i`` under its kernel factor, averaged over the posterior samples of the
    last fit; 0 no effect, 1 every change matters). ``("beta", {name: beta_i})`` when it holds only the
    posterior mean of the diffusion parameters ``beta_i`` (COMBO Eq. 5; graphbo 0.1 stored them as
    ``relevance``), which read the opposite way: small ``beta_i``, strong effect. The relevance is not
    recomputed from ``beta``: the mean over samples of ``1 - rho_i(beta_i)`` is not ``1 - rho_i`` of the
    mean ``beta_i``. ``None`` for other methods, or before COMBO's first fit.
    """
    state = (meta.get("optimizer_state") or {}).get("method") or {}
    if not isinstance(state, dict):
        return None
    relevance = state.get("relevance")
    if isinstance(state.get("beta"), dict) and isinstance(relevance, dict) and relevance:
        return "relevance", {str(k): float(v) for k, v in relevance.items()}
    beta = _stored_beta(state)
    if beta:
        return "beta", {str(k): float(v) for k, v in beta.items()}
    return None


def _told_order(trial: Any) -> tuple[bool, int, int]:
    return (trial.tell_order is None, trial.tell_order if trial.tell_order is not None else 0, trial.number)


def study_summary(path: str | os.PathLike) -> dict[str, Any]:
    """What the report shows, read-only: ``info`` (:func:`graphbo.storage.info.read_study_info`), ``complete``
    (the complete trials in the order they were told), ``values`` and ``best_so_far`` (in the study's
    direction) over them, ``best`` (the best trial, the first told of equal ones, or ``None``), ``top``
    (the :data:`TOP` best trials), ``failed`` trials and ``effects`` (:func:`variable_effects`).

    Raises :class:`~graphbo.storage.StorageError` when ``path`` is not a readable graphbo study.
    """
    info = read_study_info(path)
    stored = load_study_file(path)
    maximize = info["direction"] == "maximize"
    every = sorted((t for t in stored.trials if t.status == "complete" and t.value is not None), key=_told_order)
    feasible = [all(c <= 0 for c in t.attrs.get("constraints", ())) for t in every]
    complete = [t for t, ok in zip(every, feasible) if ok]  # the best is a feasible trial
    values = np.array([t.value for t in complete], dtype=float)
    if values.size:
        best_so_far = np.fmax.accumulate(values) if maximize else np.fmin.accumulate(values)
    else:
        best_so_far = values
    sign = -1.0 if maximize else 1.0
    ranked = sorted(complete, key=lambda t: (sign * float(t.value or 0.0), _told_order(t)))  # complete: a value
    return {"info": info, "complete": complete, "values": values, "best_so_far": best_so_far,
            "best": ranked[0] if ranked else None, "top": ranked[:TOP],
            "failed": [t for t in stored.trials if t.status == "failed"],
            "effects": variable_effects(stored.meta), "every": every, "feasible": np.array(feasible, dtype=bool),
            "space": space_from_description(stored.meta.get("space"))}


def _pyplot() -> Any:
    matplotlib = require("matplotlib", "the report's plots", extra="report")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_best_so_far(best_so_far: Any, direction: str, *, path: str, log: str = "auto", title: str = "") -> str:
    """Best value so far against complete evaluations (in the order told), the y scale chosen by
    :func:`~graphbo.experiments.report.value_scale` from ``log``; returns matplotlib's name of it."""
    check_log(log)
    plt = _pyplot()
    y = np.asarray(best_so_far, dtype=float)
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    ax.step(np.arange(1, y.size + 1), y, where="post", color="tab:blue")
    ax.plot(np.arange(1, y.size + 1), y, ".", color="tab:blue", markersize=3)
    yscale = apply_scale(ax, value_scale(y, log), values=y)
    ax.set_xlabel("complete evaluations")
    ax.set_ylabel(f"best value so far ({'highest' if direction == 'maximize' else 'lowest'})")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return yscale


def plot_relevance(relevance: dict[str, float], path: str, *, title: str = "") -> None:
    """Bars of each variable's relevance (0 to 1; :func:`variable_effects`), in the space's order."""
    plt = _pyplot()
    names = list(relevance)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.3 * len(names) + 2), 3.2))
    ax.bar(range(len(names)), [relevance[n] for n in names], color="tab:blue")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("relevance 1 − ρ_i (grows with effect)", fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _cell(value: Any, width: int = 60) -> str:
    """A value as a markdown table cell: strings bare, numbers, booleans and None as Python writes them,
    others as JSON; ``|`` escaped, long ones cut."""
    if isinstance(value, str):
        text = value
    elif value is None or isinstance(value, (bool, int, float, np.generic)):
        text = repr(value.item() if isinstance(value, np.generic) else value)
    else:
        text = json.dumps(value, default=str)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _variable_names(info: dict[str, Any], trials: list[Any]) -> list[str] | None:
    """The variables' names when configurations are flat (a graphbo space), else ``None`` (architectures)."""
    space = info.get("space")
    if isinstance(space, list) and all(isinstance(d, dict) and "name" in d for d in space):
        names = [str(d["name"]) for d in space]
        if all(isinstance(t.config, dict) and set(t.config) <= set(names) for t in trials):
            return names
    return None


def _fmt_value(v: float) -> str:
    return format(float(v), ".10g")


def write_study_report(path: str | os.PathLike, out: str | None = None, *, log: str = "auto",
                       title: str | None = None, notes: str | None = None) -> str:
    """Write the markdown report of the study file ``path`` (default: ``STUDY.md`` beside it) and its PNGs
    (``img/<report stem>_best_so_far.png``, ``..._relevance.png`` or ``..._beta.png`` for COMBO) beside the
    report; return the report's path. ``log``: the best-so-far plot's y scale (``auto``, ``on``, ``off``;
    :func:`~graphbo.experiments.report.value_scale`). The study is only read.
    """
    check_log(log)
    path = os.fspath(path)
    s = study_summary(path)
    info, best = s["info"], s["best"]
    out = out or os.path.splitext(path)[0] + ".md"
    out_dir = os.path.dirname(out) or "."
    img_dir = os.path.join(out_dir, "img")
    make_img_dir(img_dir)
    stem = os.path.splitext(os.path.basename(out))[0]
    name = os.path.splitext(os.path.basename(path))[0]
    options = info.get("method_options") or {}
    lines = [f"# {title or 'Study ' + name}", "",
             f"Generated by `graphbo report {path}{'' if log == 'auto' else ' --log ' + log}` (read-only).", ""]
    if notes:
        lines += [notes.strip(), ""]
    lines += ["| | |", "|---|---|",
              f"| method | {_cell(info.get('method'))}"
              + (f" ({_cell(json.dumps(options, sort_keys=True), 200)})" if options else "") + " |",
              f"| seed | {_cell(info.get('seed'))} |",
              (f"| directions | {', '.join(info['directions'])} |" if info.get("directions") else
               f"| direction | {info['direction']} |"),
              f"| trials | {info['n_trials']}: {info['n_complete']} complete, "
              f"{info['n_failed'] - info.get('n_pruned', 0)} failed, "
              + (f"{info['n_pruned']} pruned, " if info.get("n_pruned") else "") +
              f"{info['n_running']} running |",
              f"| created | {_cell(info.get('created'))} (graphbo {_cell(info.get('graphbo_version'))}) |", ""]
    n_constraints = int(info.get("n_constraints") or 0)
    if n_constraints:
        n_ok = int(s["feasible"].sum())
        lines += [f"{n_ok} of {len(s['every'])} complete trials are feasible (each of their {n_constraints} "
                  "constraint values <= 0); the best values below are those of the feasible trials.", ""]
    if info.get("directions"):
        lines += _pareto_section(s, info, img_dir, out_dir, stem, name)
    elif best is None:
        lines += ["No trial has completed yet." if not s["every"] else "No complete trial is feasible.", ""]
    else:
        lines += [f"Best value: {_fmt_value(best.value)} (trial {best.number}).", "",
                  "Best configuration:", "", "| variable | value |", "|---|---|"]
        config = best.config if isinstance(best.config, dict) else {"configuration": best.config}
        lines += [f"| {_cell(k)} | {_cell(v, 200)} |" for k, v in config.items()]
        lines += _top_table(s["top"], _variable_names(info, s["complete"]))
        curve = os.path.join(img_dir, f"{stem}_best_so_far.png")
        yscale = plot_best_so_far(s["best_so_far"], info["direction"], path=curve, log=log, title=name)
        lines += ["## Best so far", "",
                  f"The best value after each complete evaluation, in the order they were told ({yscale} y axis; "
                  "`--log auto` draws positive values spanning more than two decades on a log axis, `--log on` "
                  "always, symmetric-log where values are not all positive).", "",
                  f"![best so far ({yscale})]({os.path.relpath(curve, out_dir)})", ""]
    if s["failed"]:
        lines += ["## Failed trials", ""]  # pruned ones included, their error says "pruned at step k"
        lines += [f"- trial {t.number}: {_cell(t.error or 'no message', 200)}" for t in s["failed"][:5]]
        lines += ([f"- and {len(s['failed']) - 5} more"] if len(s["failed"]) > 5 else []) + [""]
    lines += _effects_section(s["effects"], img_dir, out_dir, stem, name)
    lines += _importance_section(s, info, img_dir, out_dir, stem, name)
    with open(out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return out


def _pareto_section(s: dict[str, Any], info: dict[str, Any], img_dir: str, out_dir: str, stem: str,
                    name: str) -> list[str]:
    """Several objectives: the Pareto front as a table, a plot of it (the first two objectives) and the
    hypervolume after each complete evaluation."""
    directions = list(info["directions"])
    every, ok = s["every"], s["feasible"]
    if not ok.any():
        return ["No complete trial is feasible yet." if every else "No trial has completed yet.", ""]
    signs = np.array([-1.0 if d == "maximize" else 1.0 for d in directions])
    Y = np.array([t.attrs["values"] for t in every], dtype=float)
    Ymin = Y * signs
    ref = reference_point(Ymin[ok])
    front_mask = np.zeros(len(every), dtype=bool)
    front_mask[np.flatnonzero(ok)[pareto_mask(Ymin[ok])]] = True
    trace = hypervolume_trace(Ymin, ok, ref=ref)
    front = [t for t, m in zip(every, front_mask) if m]
    names = _variable_names(info, every)
    heads = names if names is not None else ["configuration"]
    objectives = [f"objective {i} ({d})" for i, d in enumerate(directions)]
    lines = [f"Pareto front: {len(front)} trials; hypervolume {_fmt_value(trace[-1])} against the reference point "
             f"{[_fmt_value(v) for v in ref * signs]} (each objective's worst feasible value moved out by a tenth "
             "of its range).", "", "## Pareto front", "",
             "| trial | " + " | ".join(objectives + [_cell(n) for n in heads]) + " |",
             "|---" * (len(objectives) + len(heads) + 1) + "|"]
    for t in sorted(front, key=lambda t: list(t.attrs["values"])):
        cells = [_fmt_value(v) for v in t.attrs["values"]]
        config = [t.config.get(n) for n in heads] if names is not None else [t.config]
        lines.append(f"| {t.number} | " + " | ".join(cells + [_cell(v) for v in config]) + " |")
    plt = _pyplot()
    image = os.path.join(img_dir, f"{stem}_pareto_front.png")
    fig, ax = plt.subplots(figsize=(5.0, 4.0))
    ax.plot(Y[ok & ~front_mask, 0], Y[ok & ~front_mask, 1], ".", color="0.6", label="feasible trials")
    if (~ok).any():
        ax.plot(Y[~ok, 0], Y[~ok, 1], "x", color="tab:red", markersize=4, label="infeasible trials")
    order = np.argsort(Y[front_mask, 0])
    ax.plot(Y[front_mask, 0][order], Y[front_mask, 1][order], "o-", color="tab:blue", label="Pareto front")
    ax.set_xlabel(objectives[0])
    ax.set_ylabel(objectives[1])
    ax.legend(fontsize=7)
    ax.set_title(name, fontsize=9)
    fig.tight_layout()
    fig.savefig(image, dpi=110)
    plt.close(fig)
    curve = os.path.join(img_dir, f"{stem}_hypervolume.png")
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    ax.step(np.arange(1, trace.size + 1), trace, where="post", color="tab:blue")
    ax.set_xlabel("complete evaluations")
    ax.set_ylabel("hypervolume (higher is better)")
    ax.set_title(name, fontsize=9)
    fig.tight_layout()
    fig.savefig(curve, dpi=110)
    plt.close(fig)
    shown = "" if len(directions) == 2 else f" (the first two of {len(directions)} objectives)"
    return lines + ["", f"![Pareto front{shown}]({os.path.relpath(image, out_dir)})", "",
                    "## Hypervolume", "", "The hypervolume of the feasible trials after each complete evaluation, in "
                    "the order they were told, against the reference point above.", "",
                    f"![hypervolume]({os.path.relpath(curve, out_dir)})", ""]


def _importance_section(s: dict[str, Any], info: dict[str, Any], img_dir: str, out_dir: str, stem: str,
                        name: str) -> list[str]:
    """Each variable's importance (:func:`graphbo.importance.param_importances`, seed 0) for the first
    objective, as a table and a bar plot; nothing for an architecture space or with too few complete trials."""
    space, every = s["space"], s["every"]
    if space is None or len(every) < MIN_OBSERVATIONS:
        return []
    n_objectives = len(info.get("directions") or ["one"])
    importances = trial_importances(space, every, n_objectives=n_objectives, seed=0)
    image = os.path.join(img_dir, f"{stem}_importance.png")
    plt = _pyplot()
    names = list(importances)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(names) + 1.5), 3.2))
    ax.bar(range(len(names)), [importances[n] for n in names], color="tab:green")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("importance (sums to 1)", fontsize=8)
    ax.set_title(f"parameter importance, {name}", fontsize=9)
    fig.tight_layout()
    fig.savefig(image, dpi=110)
    plt.close(fig)
    which = "" if n_objectives == 1 else " of the first objective"
    text = (f"Each variable's share of the variation{which} that it explains on its own: the variance of its "
            "main effect on the mean of a GP fitted to the complete trials (the model of COMBO on a discrete "
            "space, of BO-FM on a mixed one, whichever method ran the study), over uniform draws from the space, "
            "divided by the sum over the variables (`Study.param_importances()`, seed 0; docs/importance.md).")
    return (["## Parameter importance", "", text, "", f"![parameter importance]({os.path.relpath(image, out_dir)})",
             "", "| variable | importance |", "|---|---|"]
            + [f"| {_cell(n)} | {importances[n]:.3f} |" for n in names] + [""])


def _top_table(top: list[Any], names: list[str] | None) -> list[str]:
    heads = names if names is not None else ["configuration"]
    lines = ["", f"## The {len(top)} best trials", "",
             "| rank | trial | value | " + " | ".join(_cell(n) for n in heads) + " |", "|---" * (len(heads) + 3) + "|"]
    for rank, t in enumerate(top, 1):
        cells = [_cell(t.config.get(n, "")) for n in heads] if names is not None else [_cell(t.config, 120)]
        lines.append(f"| {rank} | {t.number} | {_fmt_value(t.value)} | " + " | ".join(cells) + " |")
    return lines + [""]


def _effects_section(effects: tuple[str, dict[str, float]] | None, img_dir: str, out_dir: str, stem: str,
                     name: str) -> list[str]:
    if effects is None:
        return []
    kind, values = effects
    if kind == "relevance":
        image = os.path.join(img_dir, f"{stem}_relevance.png")
        plot_relevance(values, image, title=f"COMBO relevance, {name}")
        text = ("Each variable's relevance at COMBO's last fit: 1 − ρ_i, ρ_i the mean correlation between distinct "
                "values of the variable under its kernel factor, averaged over the posterior samples "
                "(`COMBO.relevance`). 0: the model finds no effect; 1: every change of the variable matters.")
        order = sorted(values, key=lambda n: -values[n])
    else:
        image = os.path.join(img_dir, f"{stem}_beta.png")
        _plot_beta(name, [values], image)
        text = ("This study's COMBO state holds the posterior mean of each variable's diffusion parameter β_i "
                "(COMBO Eq. 5) at the last fit, not its relevance. β_i reads the opposite way to a relevance: "
                "a small β_i is a strong effect, a large one makes the variable's kernel factor constant.")
        order = sorted(values, key=lambda n: values[n])
    head = "relevance" if kind == "relevance" else "β_i"
    return (["## Variables", "", text, "", f"![COMBO {head} of each variable]({os.path.relpath(image, out_dir)})", "",
             f"| variable | {head} |", "|---|---|"]
            + [f"| {_cell(n)} | {values[n]:.4g} |" for n in order] + [""])
