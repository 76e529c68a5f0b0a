"""How far each method's proposals land from its incumbent: the Hamming distance of every model-based suggestion
to the best configuration found before it, per method, in three phases of a run.

    python benchmarks/proposal_distance.py data/runs/broad/dev --problems pbo-20 pbo-7 pbo-10

Reads run files or packed tables (as ``graphbo report`` does). For each run, every evaluation after the initial
design (``--n-initial``, default 10) is compared with the incumbent at the time it was made (the best of the
evaluations before it); the distance is the number of variables whose values differ. Printed per problem and
method: the median distance over evaluations 11-20, 21-50 and 51-100 (the median over the runs of each run's
median), the number of improvements per run and their median distance. ``--problems`` keeps the benchmark ids
that start with one of the given prefixes (``pbo-20`` matches ``pbo-20(dimension=36)``).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np

from graphbo.experiments.report import benchmark_id, run_files_under
from graphbo.storage.packed import PACKED_SUFFIX, read_packed
from graphbo.storage.runs import read_run

PHASES = ((10, 20), (20, 50), (50, 100))


def distances(evals: list[dict], n_initial: int) -> tuple[list[int], list[int]]:
    """Per evaluation after the first ``n_initial``: the number of differing variables to the incumbent then;
    and the distances of the evaluations that improved on it."""
    names = list(evals[0]["config"])
    X = np.array([[e["config"][k] for k in names] for e in evals], dtype=object)
    y = np.array([e["value"] for e in evals], dtype=float)
    out, improving = [], []
    for i in range(n_initial, len(evals)):
        best = int(np.nanargmin(y[:i]))
        d = int(sum(a != b for a, b in zip(X[i], X[best])))
        out.append(d)
        if y[i] < np.nanmin(y[:i]):
            improving.append(d)
    return out, improving


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("roots", nargs="+", help="run folders or packed tables")
    p.add_argument("--problems", nargs="*", default=None, help="benchmark-id prefixes to keep")
    p.add_argument("--n-initial", type=int, default=10)
    args = p.parse_args(argv)
    table: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for root in args.roots:
        for path in run_files_under(root):
            for run in (read_packed(path) if path.endswith(PACKED_SUFFIX) else [read_run(path)]):
                spec = run.head.get("spec", {})
                bench = benchmark_id(spec, run.head.get("benchmark_label"))
                if args.problems and not any(bench.startswith(q) for q in args.problems):
                    continue
                if len(run.evals) <= args.n_initial:
                    continue
                table[bench][spec.get("method", "?")].append(distances(run.evals, args.n_initial))
    if not table:
        print("no runs found", file=sys.stderr)
        return 1
    print("| problem | method | runs | median distance, evaluations 11-20 / 21-50 / 51-100 | improvements per run |"
          " median distance of an improvement |")
    print("|---|---|---|---|---|---|")
    for bench in sorted(table):
        for method in sorted(table[bench]):
            runs = table[bench][method]
            phases = []
            for lo, hi in PHASES:
                meds = [np.median(d[lo - args.n_initial:hi - args.n_initial]) for d, _ in runs
                        if len(d) > lo - args.n_initial]
                phases.append(f"{np.median(meds):g}" if meds else "–")
            improving = [d for _, imp in runs for d in imp]
            print(f"| {bench} | {method} | {len(runs)} | {' / '.join(phases)} | "
                  f"{len(improving) / len(runs):.1f} | {np.median(improving) if improving else float('nan'):g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
