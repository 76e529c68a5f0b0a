"""Several objectives, black-box constraints and known constraints: graphbo against Optuna's samplers.

    python benchmarks/outcomes_suite.py list
    python benchmarks/outcomes_suite.py run [--seeds 0-4] [--budget 60] [--only PROBLEM ...] [--out results/outcomes]
    python benchmarks/outcomes_suite.py timing [--n 100]           # seconds per suggestion, 2 objectives vs 1
    python benchmarks/outcomes_suite.py pack [--out data/outcomes_suite.jsonl.xz]
    python benchmarks/outcomes_suite.py report [--data data/outcomes_suite.jsonl.xz] [--md docs/outcomes_suite.md]

Four families, each problem a public benchmark or one of the COMBO paper's problems:

- multi-objective: contamination control (25 binary variables; cost against the summed probability of
  violating the safety threshold, COMBO Sec. 5.2), pest control (25 categorical variables of 5 values; price paid
  against the infested fraction, COMBO Sec. 5.2 / CASMOPOLITAN), COCO's ``bbob-biobj-mixint`` function 1 in
  dimension 10 (8 integer variables of 2-16 values and 2 continuous ones; Tusar et al. 2019);
- black-box constraints: contamination control's cost subject to its summed excess risk
  ``sum_i (P(z_i >= u_i) - epsilon) <= 0`` (the term COMBO adds as a penalty, here a constraint the objective
  returns), and pest control's price subject to an infested fraction of at most 3;
- conditional: a support-vector classifier on scikit-learn's digits with scikit-learn's own conditional
  parameters (``gamma`` for rbf/poly/sigmoid, ``degree`` for poly, ``coef0`` for poly/sigmoid; 3-fold CV error);
  Optuna's samplers get the same space define-by-run;
- known constraints: pest control's COMBO objective (price plus infested fraction) with a rule known in
  advance: at most 16 of the 25 stations spray (about 1 random plan in 20 is allowed).

Methods: graphbo's ``auto`` (its defaults: COMBO or BO-FM with ParEGO for several objectives, the constrained
expected improvement for black-box constraints, rule-aware acquisition for known ones), Optuna's
``GPSampler``, ``TPESampler`` and (several objectives) ``NSGAIISampler`` with their defaults, given the
constraints through ``constraints_func`` (known rules too: Optuna has no other way to take them), and random
search (graphbo's ``rs``, which samples only configurations the known rules allow). Every method of a seed
starts from the same ``n_initial`` (10) random configurations (Optuna's enqueued). Each (problem, method, seed)
run is written as ``OUT/PROBLEM/METHOD/seedS.json`` when it finishes; ``run`` skips finished runs, so the same
command continues an interrupted suite.

Scores: several objectives, the hypervolume of the feasible evaluations after the budget, each objective
normalised to [0, 1] by the best and worst feasible values any run of any method found on the problem,
against the reference point (1.1, 1.1); constraints, the best feasible value at the budget (a run with no
feasible evaluation ranks last). Ranks are per problem and seed (ties share the mean rank), averaged per
family.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

N_INITIAL = 10


# -- problems -------------------------------------------------------------------------------------------
class Problem:
    """A problem: ``space``, ``evaluate(config) -> (values, constraints)`` (values minimised), its family."""

    family = ""
    directions: list[str] = ["minimize"]
    n_constraints = 0

    def __init__(self) -> None:
        self.space: Any = None

    def evaluate(self, config: dict) -> tuple[list[float], list[float]]:
        raise NotImplementedError


class ContaminationCostRisk(Problem):
    family = "multi-objective"
    directions = ["minimize", "minimize"]

    def __init__(self) -> None:
        from graphbo.benchmarks.contamination import Contamination

        self.bench = Contamination(seed=0)
        self.space = self.bench.space

    def risks(self, config: dict) -> tuple[np.ndarray, float]:
        row = self.space.to_index(config)
        violated = np.mean(self.bench.contamination(row.astype(float)) >= self.bench.threshold, axis=1)
        return row, violated

    def evaluate(self, config):
        row, violated = self.risks(config)
        return [float(row.sum()), float(violated.sum())], []


class ContaminationConstrained(ContaminationCostRisk):
    family = "black-box constraints"
    directions = ["minimize"]
    n_constraints = 1

    def evaluate(self, config):
        row, violated = self.risks(config)
        return [float(row.sum())], [float(np.sum(violated - self.bench.epsilon))]


class PestPriceInfested(Problem):
    family = "multi-objective"
    directions = ["minimize", "minimize"]

    def __init__(self) -> None:
        from graphbo.benchmarks.pest_control import PestControl

        self.bench = PestControl(seed=0)
        self.space = self.bench.space

    def parts(self, config: dict) -> tuple[float, float]:
        row = self.space.to_index(config)
        total = self.bench.evaluate_index(row)
        price = self.bench.price_paid(row)
        return float(price), float(total - price)

    def evaluate(self, config):
        return list(self.parts(config)), []


class PestConstrained(PestPriceInfested):
    family = "black-box constraints"
    directions = ["minimize"]
    n_constraints = 1

    def evaluate(self, config):
        price, infested = self.parts(config)
        return [price], [infested - 3.0]


class PestKnownRule(PestPriceInfested):
    family = "known constraints"
    directions = ["minimize"]
    MAX_SPRAYING = 16

    def __init__(self) -> None:
        super().__init__()
        import graphbo as gb

        names = list(self.bench.space.names)
        rule = " + ".join(f"({n} != 0)" for n in names) + f" <= {self.MAX_SPRAYING}"
        self.space = gb.Space({n: v for n, v in zip(names, _fresh_variables(self.bench.space))}, constraints=[rule])

    def evaluate(self, config):
        price, infested = self.parts(config)
        return [price + infested], []


class BiobjMixint(Problem):
    family = "multi-objective"
    directions = ["minimize", "minimize"]

    def __init__(self) -> None:
        import cocoex
        import graphbo as gb

        self._suite = cocoex.Suite("bbob-biobj-mixint", "", "dimensions:10 function_indices:1 instance_indices:1")
        self.problem = next(iter(self._suite))
        lower, upper = np.asarray(self.problem.lower_bounds), np.asarray(self.problem.upper_bounds)
        n_int = int(self.problem.number_of_integer_variables)
        variables = {}
        for i in range(len(lower)):
            if i < n_int:
                variables[f"z{i}"] = gb.Ordinal(list(range(int(lower[i]), int(upper[i]) + 1)))
            else:  # COCO's box is [-100, 100]; its optima lie in [-5, 5], where BBOB's search domain is
                variables[f"x{i}"] = gb.Continuous(-5.0, 5.0)
        self.space = gb.Space(variables)
        self.names = list(variables)

    def evaluate(self, config):
        x = np.array([float(config[n]) for n in self.names])
        return [float(v) for v in self.problem(x)], []


class SvcDigitsConditional(Problem):
    family = "conditional"
    directions = ["minimize"]

    def __init__(self) -> None:
        from graphbo.benchmarks.sklearn_tuning import SklearnTuning

        self.bench = SklearnTuning("svc-digits-conditional")
        self.space = self.bench.space

    def evaluate(self, config):
        return [self.bench(config)], []


def _fresh_variables(space: Any) -> list[Any]:
    """New variable objects equal to ``space``'s (a variable belongs to one space)."""
    import copy

    out = []
    for v in space.variables:
        w = copy.copy(v)
        w.name = None
        out.append(w)
    return out


PROBLEMS: dict[str, Callable[[], Problem]] = {
    "mo-contamination": ContaminationCostRisk,
    "mo-pest": PestPriceInfested,
    "mo-biobj-mixint": BiobjMixint,
    "con-contamination": ContaminationConstrained,
    "con-pest": PestConstrained,
    "known-pest": PestKnownRule,
    "cond-svc-digits": SvcDigitsConditional,
}


ALL_METHODS = ["auto", "auto-ehvi", "gp-optuna", "tpe", "nsga2", "rs"]


def methods_for(problem: Problem) -> list[str]:
    several = len(problem.directions) > 1
    return ["auto", "gp-optuna", "tpe"] + (["nsga2"] if several else []) + ["rs"]


# -- one run --------------------------------------------------------------------------------------------
def initial_configs(problem: Problem, seed: int) -> list[dict]:
    return problem.space.sample(N_INITIAL, np.random.default_rng([20261129, seed]))


def run_graphbo(problem: Problem, method: str, seed: int, budget: int) -> list[dict]:
    import graphbo as gb

    records: list[dict] = []
    several = len(problem.directions) > 1
    study = gb.Study(problem.space, "auto" if method == "auto-ehvi" else method, seed=seed, auto_budget=budget, n_initial=N_INITIAL,
                     initial_configs=initial_configs(problem, seed),
                     directions=problem.directions if several else None,
                     n_constraints=problem.n_constraints or None)
    if method == "auto-ehvi":  # the expected hypervolume improvement instead of ParEGO's scalarisation
        study.optimizer.set_outcomes(2, problem.n_constraints, acquisition="ehvi")
    with study:
        while study.n_finished < budget:
            t0 = time.perf_counter()
            trial = study.ask()
            t1 = time.perf_counter()
            values, cons = problem.evaluate(trial.config)
            study.tell(trial, values if several else values[0], constraints=cons if cons else None)
            records.append({"config": trial.config, "values": values, "constraints": cons,
                            "suggest_seconds": round(t1 - t0, 4)})
        method_name = study.method
    return records if not method.startswith("auto") else [dict(r, method=method_name) for r in records]


def _distributions(space: Any) -> dict[str, Any]:
    from optuna import distributions as d

    from graphbo.spaces.variables import Continuous, Ordinal

    out = {}
    for name, var in zip(space.names, space.declared_variables):  # a conditional variable's own values
        if isinstance(var, Continuous):
            out[name] = d.FloatDistribution(var.low, var.high, log=var.log)
        elif isinstance(var, Ordinal) and all(isinstance(v, (int, np.integer)) for v in var.values) and \
                list(var.values) == list(range(int(var.values[0]), int(var.values[0]) + len(var.values))):
            out[name] = d.IntDistribution(int(var.values[0]), int(var.values[-1]))
        else:
            out[name] = d.CategoricalDistribution(list(var.values))
    return out


def run_optuna(problem: Problem, method: str, seed: int, budget: int) -> list[dict]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    known = list(getattr(problem.space, "constraints", ()))

    def constraints_func(trial: Any) -> list[float]:
        return list(trial.user_attrs["constraints"])

    constrained = bool(problem.n_constraints or known)
    kwargs: dict[str, Any] = {"seed": seed}
    if constrained:
        kwargs["constraints_func"] = constraints_func
    sampler = {"gp-optuna": optuna.samplers.GPSampler, "tpe": optuna.samplers.TPESampler,
               "nsga2": optuna.samplers.NSGAIISampler}[method](**kwargs)
    several = len(problem.directions) > 1
    study = optuna.create_study(directions=problem.directions, sampler=sampler)
    for config in initial_configs(problem, seed):
        study.enqueue_trial(config)
    dists = _distributions(problem.space)
    records: list[dict] = []
    for _ in range(budget):
        t0 = time.perf_counter()
        trial = study.ask() if problem.space.conditions else study.ask(dists)
        if problem.space.conditions:  # define-by-run: a parameter is suggested only where it is active
            _suggest_active(trial, problem.space, dists)
        t1 = time.perf_counter()
        config = dict(trial.params)
        values, cons = problem.evaluate(config)
        rule = [0.0 if rule.allows(config) else 1.0 for rule in known]
        trial.set_user_attr("constraints", list(cons) + rule)
        study.tell(trial, values if several else values[0])
        records.append({"config": config, "values": values, "constraints": list(cons) + rule,
                        "suggest_seconds": round(t1 - t0, 4)})
    return records


def optuna_distributions() -> Any:
    from optuna import distributions

    return distributions


def _suggest_active(trial: Any, space: Any, dists: dict[str, Any]) -> None:
    """Suggest the parameters of ``trial`` parents first, each only when its conditions hold."""
    from graphbo.spaces.conditions import topological_order

    for name in topological_order(space.conditions, list(space.names)):
        parents = space.conditions.get(name, {})
        if all(p in trial.params and trial.params[p] in values for p, values in parents.items()):
            d = dists[name]
            if isinstance(d, optuna_distributions().FloatDistribution):
                trial.suggest_float(name, d.low, d.high, log=d.log)
            elif isinstance(d, optuna_distributions().IntDistribution):
                trial.suggest_int(name, d.low, d.high, log=d.log)
            else:
                trial.suggest_categorical(name, list(d.choices))


def run_one(problem_id: str, method: str, seed: int, budget: int, out: Path) -> Path:
    path = out / problem_id / method / f"seed{seed}.json"
    if path.exists():
        return path
    problem = PROBLEMS[problem_id]()
    t0 = time.perf_counter()
    if method in ("auto", "auto-ehvi", "rs"):
        records = run_graphbo(problem, method, seed, budget)
    else:
        records = run_optuna(problem, method, seed, budget)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"problem": problem_id, "method": method, "seed": seed, "budget": budget,
                               "directions": problem.directions, "n_constraints": problem.n_constraints,
                               "family": problem.family, "seconds": round(time.perf_counter() - t0, 2),
                               "evaluations": records}, default=_plain))
    os.replace(tmp, path)
    return path


def _plain(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o).__name__)


# -- scores -----------------------------------------------------------------------------------------------
def _feasible(run: dict) -> np.ndarray:
    return np.array([all(c <= 0 for c in e["constraints"]) for e in run["evaluations"]], dtype=bool)


def _values(run: dict) -> np.ndarray:
    signs = np.array([-1.0 if d == "maximize" else 1.0 for d in run["directions"]])
    return np.array([e["values"] for e in run["evaluations"]], dtype=float) * signs


def scores(runs: list[dict]) -> dict[tuple[str, str, int], float]:
    """Each run's score, higher is better: normalised hypervolume, or minus the best feasible value."""
    from graphbo.outcomes import hypervolume

    out: dict[tuple[str, str, int], float] = {}
    by_problem: dict[str, list[dict]] = {}
    for r in runs:
        by_problem.setdefault(r["problem"], []).append(r)
    for problem, group in by_problem.items():
        if len(group[0]["directions"]) > 1:
            pooled = np.vstack([_values(r)[_feasible(r)] for r in group])
            lo, hi = pooled.min(axis=0), pooled.max(axis=0)
            span = np.where(hi > lo, hi - lo, 1.0)
            for r in group:
                Y = (_values(r)[_feasible(r)] - lo) / span
                out[(problem, r["method"], r["seed"])] = hypervolume(Y, np.full(Y.shape[1], 1.1)) if len(Y) else 0.0
        else:
            for r in group:
                y = _values(r)[_feasible(r), 0]
                out[(problem, r["method"], r["seed"])] = -float(y.min()) if y.size else -math.inf
    return out


def _ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def report(runs: list[dict], command: str) -> str:
    sc = scores(runs)
    problems = sorted({r["problem"] for r in runs}, key=list(PROBLEMS).index)
    families: dict[str, list[str]] = {}
    for p in problems:
        families.setdefault(next(r["family"] for r in runs if r["problem"] == p), []).append(p)
    lines = ["# Several objectives and constraints: graphbo against Optuna", "",
             f"Generated by `{command}` from the packed runs. Scores: hypervolume of the feasible evaluations "
             "(objectives normalised by the best and worst feasible values any run found; reference point 1.1), or "
             "the best feasible value (lower is better); mean ± standard error over seeds. Ranks: per problem and "
             "seed, 1 is best. Every method of a seed starts from the same 10 random configurations; 60 "
             "evaluations. Optuna's samplers are given a known rule as a constraint they evaluate (they have no "
             "other way to take one); with a conditional space they suggest define-by-run. `auto-ehvi` is graphbo's "
             "`auto` with the expected hypervolume improvement instead of ParEGO's scalarisation. The problems and "
             "methods are described in the docstring of `benchmarks/outcomes_suite.py`.", ""]
    family_ranks: dict[str, dict[str, list[float]]] = {}
    for family, members in families.items():
        lines += [f"## {family}", ""]
        methods = [m for m in ["auto", "auto-ehvi", "gp-optuna", "tpe", "nsga2", "rs"] if any(
            r["method"] == m and r["problem"] in members for r in runs)]
        lines += ["| problem | seeds | " + " | ".join(methods) + " |", "|---" * (len(methods) + 2) + "|"]
        for p in members:
            seeds = sorted({r["seed"] for r in runs if r["problem"] == p})
            complete = [s for s in seeds if all((p, m, s) in sc for m in methods)]
            cells = []
            several = len(next(r["directions"] for r in runs if r["problem"] == p)) > 1
            for m in methods:
                v = np.array([sc[(p, m, s)] for s in complete])
                v = v if several else -v
                finite = v[np.isfinite(v)]
                text = "-" if not finite.size else f"{finite.mean():.4g} ± {finite.std(ddof=1) / math.sqrt(finite.size) if finite.size > 1 else 0:.2g}"
                if finite.size < v.size:
                    text += f" ({v.size - finite.size} infeasible)"
                cells.append(text)
            for s in complete:
                for m, rk in zip(methods, _ranks([sc[(p, m, s)] for m in methods])):
                    family_ranks.setdefault(family, {}).setdefault(m, []).append(rk)
            lines.append(f"| {p} | {len(complete)} | " + " | ".join(cells) + " |")
        ranks = family_ranks.get(family, {})
        lines += ["", "Mean rank: " + ", ".join(f"{m} {np.mean(ranks[m]):.2f}" for m in methods if m in ranks), ""]
    lines += _first_feasible_table(runs, problems)
    lines += ["## Seconds per suggestion", "", "Median over every suggestion after the initial design.", "",
              "| problem | " + " | ".join(ALL_METHODS) + " |", "|---" * (len(ALL_METHODS) + 1) + "|"]
    for p in problems:
        cells = []
        for m in ALL_METHODS:
            t = [e["suggest_seconds"] for r in runs if r["problem"] == p and r["method"] == m
                 for e in r["evaluations"][N_INITIAL:]]
            cells.append(f"{np.median(t):.3g}" if t else "-")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _first_feasible_table(runs: list[dict], problems: list[str]) -> list[str]:
    """Per black-box-constrained problem and method: the evaluations until the first feasible one (median over the
    seeds that found one, and how many did not), and the median of the largest constraint value over the
    evaluations after the initial design and before that first feasible one (how close the search stays to the
    feasible region while it has none)."""
    constrained = [p for p in problems if any(r["problem"] == p and r["n_constraints"] for r in runs)]
    if not constrained:
        return []
    lines = ["## Finding a feasible configuration", "",
             "Evaluations until the first feasible one (median over seeds; in brackets the seeds that found none "
             "in the budget), and the median of the largest constraint value over the evaluations after the "
             "initial design made before it (0 is the boundary of the feasible region).", "",
             "| problem | " + " | ".join(ALL_METHODS) + " |", "|---" * (len(ALL_METHODS) + 1) + "|"]
    for p in constrained:
        cells = []
        for m in ALL_METHODS:
            mine = [r for r in runs if r["problem"] == p and r["method"] == m]
            if not mine:
                cells.append("-")
                continue
            firsts, before, missed = [], [], 0
            for r in mine:
                worst = [max(e["constraints"]) for e in r["evaluations"]]
                first = next((i for i, c in enumerate(worst) if c <= 0), None)
                if first is None:
                    missed += 1
                else:
                    firsts.append(first + 1)
                before += worst[N_INITIAL:len(worst) if first is None else first]
            text = f"{np.median(firsts):g}" if firsts else "-"
            text += f" ({missed} none)" if missed else ""
            text += f"; {np.median(before):.3g}" if before else ""
            cells.append(text)
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return lines + [""]


# -- timing -----------------------------------------------------------------------------------------------
def timing(n: int, repeats: int) -> dict[str, float]:
    """Seconds per COMBO suggestion at ``n`` told evaluations, two objectives against one, in one process."""
    from graphbo.optimizers import COMBO

    problem = ContaminationCostRisk()
    rng = np.random.default_rng(0)
    configs = problem.space.sample(n, rng)
    told = [(c, problem.evaluate(c)[0]) for c in configs]
    out: dict[str, list[float]] = {"one objective": [], "two objectives": []}
    for r in range(repeats):
        for key, k in (("one objective", 1), ("two objectives", 2)):
            opt = COMBO(problem.space, seed=r, n_initial=0)
            if k == 2:
                opt.set_outcomes(2)
            for c, v in told:
                opt.tell(c, v if k == 2 else v[0])
            t0 = time.perf_counter()
            opt.ask()
            out[key].append(time.perf_counter() - t0)
    med = {k: float(np.median(v)) for k, v in out.items()}
    med["ratio"] = med["two objectives"] / med["one objective"]
    return med


# -- command line ---------------------------------------------------------------------------------------
def _seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    import torch

    torch.set_num_threads(1)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    r = sub.add_parser("run")
    r.add_argument("--seeds", default="0-4")
    r.add_argument("--budget", type=int, default=60)
    r.add_argument("--only", nargs="*", default=None)
    r.add_argument("--methods", default=None, help="comma-separated; default every method of each problem")
    r.add_argument("--out", default="results/outcomes")
    t = sub.add_parser("timing")
    t.add_argument("--n", type=int, default=100)
    t.add_argument("--repeats", type=int, default=5)
    k = sub.add_parser("pack")
    k.add_argument("--results", default="results/outcomes")
    k.add_argument("--out", default="data/outcomes_suite.jsonl.xz")
    w = sub.add_parser("report")
    w.add_argument("--data", default="data/outcomes_suite.jsonl.xz")
    w.add_argument("--md", default="docs/outcomes_suite.md")
    args = p.parse_args(argv)
    if args.cmd == "list":
        for pid, cls in PROBLEMS.items():
            print(f"{pid:20s} {cls.family}")
        return 0
    if args.cmd == "run":
        out = Path(args.out)
        for seed in _seeds(args.seeds):
            for pid in (args.only or list(PROBLEMS)):
                problem_methods = methods_for(PROBLEMS[pid]()) if args.methods is None else args.methods.split(",")
                for m in problem_methods:
                    t0 = time.perf_counter()
                    run_one(pid, m, seed, args.budget, out)
                    print(f"[{time.strftime('%H:%M:%S')}] seed {seed} {pid} {m}: {time.perf_counter() - t0:.0f} s",
                          flush=True)
        return 0
    if args.cmd == "timing":
        print(json.dumps(timing(args.n, args.repeats), indent=2))
        return 0
    if args.cmd == "pack":
        runs = [json.loads(f.read_text()) for f in sorted(Path(args.results).glob("*/*/seed*.json"))]
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with lzma.open(args.out, "wt") as fh:
            for run in runs:
                fh.write(json.dumps(run, sort_keys=True) + "\n")
        print(f"{len(runs)} runs packed into {args.out}")
        return 0
    with lzma.open(args.data, "rt") as fh:
        runs = [json.loads(line) for line in fh]
    Path(args.md).write_text(report(runs, "python benchmarks/outcomes_suite.py report"))
    print(f"report written to {args.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
