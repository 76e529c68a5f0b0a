"""A candidate default against the current one, paired by problem and seed, with the statistics.

    python benchmarks/paired.py --candidate data/runs/broad-combo-matern52 --baseline data/runs/broad \\
        --method combo --baseline-method combo,auto [--at 100]

Both sides are run folders (``graphbo compare`` / ``benchmarks/broad_suite.py run`` output, or their packed
tables). On each problem the candidate's runs (``--method``) are paired by seed with the baseline's runs of the
first of ``--baseline-method`` that has a finished run of that seed (``combo,auto``: a plain ``combo`` run
where there is one, else ``auto``'s, which is ``combo`` on those problems): same seed, same initial design. Every objective is minimised,
so a negative difference means the candidate found better.

Per problem: the per-seed differences of the best value after ``--at`` evaluations (default: at the budget),
their mean and its standard error, and how many seeds the candidate won, lost and tied. Over problems: the
Wilcoxon signed-rank test of the per-problem standardised mean differences (mean difference over the pooled
standard deviation of the two sides' best values: scale-free, so problems of any range count alike), and the
sign test over every (problem, seed) pair that is not tied. Problems are named as in the runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np
from scipy.stats import binomtest, wilcoxon

from graphbo.experiments.report import collect


def _best(run: dict[str, Any], at: int | None) -> float | None:
    curve = run["best_so_far"]
    if not run["finished"] or (at is not None and len(curve) < at):
        return None
    return float(curve[-1 if at is None else at - 1])


def _by_seed(runs: list[dict[str, Any]], at: int | None) -> dict[int, float]:
    out = {}
    for r in runs:
        b = _best(r, at)
        if b is not None:
            out[int(r["seed"])] = b
    return out


def paired_table(candidate: dict, baseline: dict, method: str, baseline_methods: list[str],
                 at: int | None) -> list[dict[str, Any]]:
    """One row per problem that both sides ran: the paired differences and their summary."""
    rows = []
    for bench in sorted(candidate):
        if method not in candidate[bench] or bench not in baseline:
            continue
        cand = _by_seed(candidate[bench][method], at)
        base, source = {}, {}
        for m in reversed(baseline_methods):  # the first listed method wins where several have a seed
            for seed, value in _by_seed(baseline[bench].get(m, []), at).items():
                base[seed], source[seed] = value, m
        if not base:
            continue
        base_method = "/".join(m for m in baseline_methods if m in {source[s] for s in set(cand) & set(base)})
        seeds = sorted(set(cand) & set(base))
        if not seeds:
            continue
        diff = np.array([cand[s] - base[s] for s in seeds])
        both = np.array([cand[s] for s in seeds] + [base[s] for s in seeds])
        pooled = math.sqrt((np.var([cand[s] for s in seeds], ddof=1) + np.var([base[s] for s in seeds], ddof=1)) / 2) \
            if len(seeds) > 1 else float("nan")
        rows.append({
            "problem": bench, "baseline": base_method, "seeds": seeds, "diff": diff,
            "candidate_mean": float(np.mean([cand[s] for s in seeds])), "baseline_mean": float(np.mean([base[s] for s in seeds])),
            "mean": float(diff.mean()), "se": float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else float("nan"),
            "better": int((diff < 0).sum()), "worse": int((diff > 0).sum()), "tied": int((diff == 0).sum()),
            "effect": float(diff.mean() / pooled) if pooled and np.isfinite(pooled) and pooled > 0 else 0.0,
            "range": float(np.ptp(both)),
        })
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Wilcoxon over the problems' standardised effects and the sign test over the untied pairs."""
    effects = np.array([r["effect"] for r in rows])
    better = sum(r["better"] for r in rows)
    worse = sum(r["worse"] for r in rows)
    tied = sum(r["tied"] for r in rows)
    nonzero = effects[effects != 0]
    w = wilcoxon(nonzero) if nonzero.size >= 1 else None
    return {"problems": len(rows), "better": better, "worse": worse, "tied": tied,
            "mean_effect": float(effects.mean()) if effects.size else float("nan"),
            "problems_better": int((effects < 0).sum()), "problems_worse": int((effects > 0).sum()),
            "wilcoxon_p": float(w.pvalue) if w is not None else float("nan"),
            "sign_p": float(binomtest(better, better + worse).pvalue) if better + worse else float("nan")}


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--candidate", nargs="+", required=True, help="run folder(s) of the candidate")
    p.add_argument("--baseline", nargs="+", required=True, help="run folder(s) of the current default")
    p.add_argument("--method", required=True, help="the candidate's method name in its runs")
    p.add_argument("--baseline-method", default="auto",
                   help="comma-separated: the baseline's method, the first one a problem has runs of")
    p.add_argument("--at", type=int, default=None, help="compare after this many evaluations (default: the budget)")
    args = p.parse_args(argv)
    candidate, baseline = collect(args.candidate), collect(args.baseline)
    rows = paired_table(candidate, baseline, args.method, args.baseline_method.split(","), args.at)
    if not rows:
        print("no problem has runs on both sides with the same seeds", file=sys.stderr)
        return 1
    print("| problem | baseline | candidate − baseline, per seed | mean ± s.e. | candidate / baseline mean | "
          "better / worse / tied |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        per_seed = ", ".join(f"{d:+.4g}" for d in r["diff"])
        print(f"| {r['problem']} | {r['baseline']} | {per_seed} | {_fmt(r['mean'])} ± {_fmt(r['se'])} | "
              f"{_fmt(r['candidate_mean'])} / {_fmt(r['baseline_mean'])} | {r['better']} / {r['worse']} / {r['tied']} |")
    s = summary(rows)
    print()
    print(f"{s['problems']} problems; candidate better on {s['problems_better']}, worse on {s['problems_worse']} "
          f"(mean standardised difference {s['mean_effect']:+.3f}); Wilcoxon signed-rank over problems p = "
          f"{s['wilcoxon_p']:.3g}. Seeds: {s['better']} better, {s['worse']} worse, {s['tied']} tied; "
          f"sign test p = {s['sign_p']:.3g}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
