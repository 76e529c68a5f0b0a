"""Mutation score of graphbo's kernels, models and acquisition functions, from a uniform sample of mutants.

    pip install mutmut==3.8.1
    python benchmarks/mutation_sample.py --n 400 --seed 1 --out benchmarks/results/mutation_sample.json

``[tool.mutmut]`` in ``pyproject.toml`` names the modules mutated (``kernels/``,
``models/``, ``acquisition/``) and the unit tests run against each mutant (mutmut runs only those that
call the mutated function, and stops at the first failure). mutmut generates about 6,400 mutants
there; the core functions (the slice sampler's sweep, the FM kernel's Gram matrix) are called by
most tests, so a full run takes many hours on two cores. This script draws ``--n`` of them uniformly
at random (``--seed``), runs mutmut on exactly those, and reports the counts and the score: the
fraction of the sampled mutants that the tests kill (a timeout counts as killed; survivors, "no tests"
-- functions no selected test calls -- and any other status count as not killed), with a Wilson 95 %
interval: an unbiased estimate of the full run's score. The script stops with an error if mutmut
fails or leaves a sampled mutant unchecked (an interrupted run would score a biased subset, since
mutmut runs the fastest mutants first). Run from the repository root; mutmut's work folder ``mutants/`` is git-ignored.

Rerunning with the same arguments runs the same mutants again (mutmut keeps earlier results only
while its configuration is unchanged).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import time
from collections import Counter


def mutmut(*args: str) -> str:
    """Output of ``mutmut ARGS`` (run in this interpreter's environment); exits on failure."""
    proc = subprocess.run([sys.executable, "-m", "mutmut", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"mutmut {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def statuses() -> dict[str, str]:
    """``{mutant name: status}`` of every mutant mutmut knows (``mutmut results --all true``)."""
    out = {}
    for line in mutmut("results", "--all", "true").splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            out[name] = status
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``k / n``."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=400, help="mutants to sample")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-children", type=int, default=1, help="parallel mutmut workers")
    ap.add_argument("--out", default=None, help="write the counts and the survivors as JSON here")
    ap.add_argument("--report-only", action="store_true", help="summarise the sample's current results, run nothing")
    args = ap.parse_args()

    if not args.report_only:
        # `mutmut run` first generates the mutants and records which tests call which function; with a
        # name that matches no mutant it stops right after that (an assertion), which is all we need here
        subprocess.run([sys.executable, "-m", "mutmut", "run", "graphbo.no-such-mutant"], capture_output=True)
    names = sorted(statuses())
    if not names:
        sys.exit("mutmut knows no mutants: run `mutmut run` from the repository root once and retry")
    sample = sorted(random.Random(args.seed).sample(names, min(args.n, len(names))))
    start = time.time()
    if not args.report_only:
        run = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children),
                              *sample])
        if run.returncode != 0:
            sys.exit(f"mutmut run failed (exit code {run.returncode}); rerun to continue")
    status = statuses()
    counts = Counter(status[m] for m in sample)
    if counts.get("not checked", 0):
        sys.exit(f"{counts['not checked']} sampled mutants are not checked yet; rerun to continue")
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    judged = len(sample)
    low, high = wilson(killed, judged)
    result = {
        "date": time.strftime("%Y-%m-%d"), "mutants": len(names), "sample": len(sample), "seed": args.seed,
        "counts": dict(counts), "score": killed / judged if judged else float("nan"), "score_95": [low, high],
        "seconds": round(time.time() - start),
        "survived": [m for m in sample if status[m] == "survived"],
        "no_tests": [m for m in sample if status[m] == "no tests"],
    }
    print(f"{len(names)} mutants, {len(sample)} sampled: {dict(counts)}")
    print(f"mutation score {result['score']:.3f} (95 % interval {low:.3f}-{high:.3f})")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
