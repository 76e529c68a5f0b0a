"""An objective that fails in a region: best value and failures with and without telling the model about them.

    python benchmarks/failing_region.py --out benchmarks/results/failing_region.json [--seeds 0-4] [--budget 30]

Each problem wraps a benchmark so that it raises in one region of its space: one category of a categorical
variable, an interval of an ordinal one, or a band of a continuous one. ``graphbo.minimize`` with its defaults
(``method="auto"``) runs it with ``failure_value=None`` (a failure only excludes its configuration) and with
``failure_value="worst"`` (the model is told the worst complete value so far), same seeds. Printed and written:
per problem and setting, the best value at the budget (mean ± s.e.) and the number of failed evaluations.

With ``--outcomes`` the problems have two objectives (one of them also a black-box constraint): the SVC's
validation error against ``log10 C`` (a simpler model), failing for the sigmoid kernel; the ordinal Ackley grid
against the mean level with ``x1 <= 7`` as a constraint, failing where ``x0`` is in 3..8. The score is the
hypervolume of the feasible Pareto front against a fixed reference point (higher is better), and
``failure_value="worst"`` tells the model each objective's and constraint's worst complete value so far.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

import graphbo as gb
from graphbo.benchmarks import load_benchmark
from graphbo.experiments.runner import parse_seeds


class FailingRegion:
    """``benchmark(config)``, raising ``RuntimeError`` where ``fails(config)``."""

    def __init__(self, name: str, options: dict, fails):
        self.problem = load_benchmark(name, **options)
        self.space = self.problem.space
        self.fails = fails

    def __call__(self, config):
        if self.fails(config):
            raise RuntimeError("this region fails")
        return self.problem(config)


#: problem -> (benchmark, options, failing region); none of them is in the broad suite's test half
PROBLEMS = {
    "svc-digits, kernel=sigmoid fails": ("sklearn-tuning", {"task": "svc-digits"},
                                         lambda c: c["kernel"] == "sigmoid"),
    "svc-digits, C > 30 fails": ("sklearn-tuning", {"task": "svc-digits"}, lambda c: c["C"] > 30.0),
    "ackley 5 x 11 levels, x0 in 3..8 fails": ("grid-ordinal", {"function": "ackley", "dims": 5, "levels": 11},
                                                lambda c: 3 <= c["x0"] <= 8),
    "mixint f10, z0 = 1 fails": ("bbob-mixint", {"function": 10, "dimension": 10}, lambda c: c["z0"] == 1),
}


class TwoObjectives(FailingRegion):
    """The failing ``benchmark`` and ``second(config)`` (both minimised), with ``constraint(config) <= 0`` as a
    black-box constraint when one is given."""

    def __init__(self, name: str, options: dict, fails, second, constraint=None):
        super().__init__(name, options, fails)
        self.second, self.constraint = second, constraint
        self.constrained = constraint is not None

    def __call__(self, config):
        values = [super().__call__(config), float(self.second(config))]
        return {"values": values, "constraints": [self.constraint(config)]} if self.constrained else values


#: problem -> (objective, reference point of the hypervolume)
OUTCOME_PROBLEMS = {
    "svc-digits: error and log10 C, kernel=sigmoid fails": (
        lambda: TwoObjectives("sklearn-tuning", {"task": "svc-digits"}, lambda c: c["kernel"] == "sigmoid",
                              lambda c: np.log10(c["C"])), [1.0, 3.0]),
    "ackley 5 x 11 and the mean level, x1 <= 7, x0 in 3..8 fails": (
        lambda: TwoObjectives("grid-ordinal", {"function": "ackley", "dims": 5, "levels": 11},
                              lambda c: 3 <= c["x0"] <= 8, lambda c: sum(c.values()) / len(c),
                              lambda c: c["x1"] - 7.0), [25.0, 11.0]),
}


def _outcomes(args, seeds, report) -> None:
    for name, (make, reference) in OUTCOME_PROBLEMS.items():
        objective = make()
        extra = {"n_constraints": 1} if objective.constrained else {}
        rows = {}
        for setting in (None, "worst"):
            volume, failed = [], []
            for seed in seeds:
                result = gb.minimize(objective, objective.space, budget=args.budget, seed=seed, failure_value=setting,
                                     directions=["minimize", "minimize"], stop_after_failures=None,
                                     show_progress=False, **extra)
                volume.append(result.hypervolume(reference) if result.pareto_front else 0.0)
                failed.append(sum(t.status == "failed" for t in result.trials))
            v = np.array(volume)
            rows[str(setting)] = {"hypervolume_mean": float(v.mean()), "hypervolume_se": float(v.std(ddof=1) /
                                                                                                np.sqrt(len(v))),
                                  "failed_mean": float(np.mean(failed)), "hypervolume": volume, "failed": failed,
                                  "method": result.method}
            print(f"{name:52} failure_value={str(setting):6} hypervolume {v.mean():.4g} ± "
                  f"{rows[str(setting)]['hypervolume_se']:.2g}  failed {np.mean(failed):.1f} of {args.budget}  "
                  f"({result.method})", flush=True)
        report["problems"][name] = rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--out", default=None)
    ap.add_argument("--outcomes", action="store_true", help="the two-objective (and constrained) problems")
    args = ap.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    report = {"command": "python benchmarks/failing_region.py " + " ".join(argv or sys.argv[1:]),
              "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "budget": args.budget,
              "seeds": seeds, "problems": {}}
    for name, (bench, options, fails) in ({} if args.outcomes else PROBLEMS).items():
        objective = FailingRegion(bench, options, fails)
        rows = {}
        for setting in (None, "worst"):
            best, failed = [], []
            for seed in seeds:
                result = gb.minimize(objective, objective.space, budget=args.budget, seed=seed, failure_value=setting,
                                     stop_after_failures=None, show_progress=False)
                best.append(result.best_value)
                failed.append(sum(t.status == "failed" for t in result.trials))
            b = np.array(best)
            rows[str(setting)] = {"best_mean": float(b.mean()), "best_se": float(b.std(ddof=1) / np.sqrt(len(b))),
                                  "failed_mean": float(np.mean(failed)), "best": best, "failed": failed,
                                  "method": result.method}
            print(f"{name:42} failure_value={str(setting):6} best {b.mean():.4g} ± {rows[str(setting)]['best_se']:.2g}"
                  f"  failed {np.mean(failed):.1f} of {args.budget}  ({result.method})", flush=True)
        report["problems"][name] = rows
    if args.outcomes:
        _outcomes(args, seeds, report)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
