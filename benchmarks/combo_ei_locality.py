"""Where COMBO's expected improvement points, against the incumbent's surroundings, on a run's trace.

    OMP_NUM_THREADS=1 python benchmarks/combo_ei_locality.py BENCHMARK STUDY_FILE [--n 60]
        [--scales 0.005,0.02,0.05,0.1,0.3] [--samples 5000] [--json OUT]
    python benchmarks/combo_ei_locality.py BENCHMARK STUDY_FILE [STUDY_FILE ...] --ends-only [--skip 20]

``--ends-only`` reads the runs alone: for the trials after the first ``--skip`` (the shared initial design)
of each study file, the mean number of ordinal variables of more than 10 values set to an end of their
range, the share of trials with two or more such ends, and the number of values above 1.

COMBO (the default options, seed 0, no initial design of its own) is told the first ``--n`` complete trials
of ``STUDY_FILE`` (a run of any method on the registered benchmark ``BENCHMARK``, e.g. under
data/runs/beyond/hpo-surface/; values as COMBO minimises them, negated for a maximising study) and asked
for one suggestion. Printed:

* ``chosen``: the suggestion, its log-EI and its true value, and how many of its ordinal variables (of
  more than 10 values) sit at an end of their range;
* per scale ``s``: the best log-EI among ``--samples`` perturbations of the incumbent in which every
  ordinal variable of more than 10 values moves by a rounded ``N(0, (s * its number of values)^2)``
  step (clipped to its range; the other variables as the incumbent's), with the true value there and
  the mean true value of the first 200 perturbations.

If the chosen point has a higher log-EI than every local perturbation while its true value is far worse,
the model (not the acquisition optimiser) sends the search away from the incumbent: the GP's posterior
far from the data (its mean and variance at the ranges' ends) makes EI prefer it.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benchmark")
    ap.add_argument("study_file", nargs="+")
    ap.add_argument("--ends-only", action="store_true")
    ap.add_argument("--skip", type=int, default=20)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--scales", default="0.005,0.02,0.05,0.1,0.3")
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from graphbo.acquisition.ei import LogExpectedImprovement
    from graphbo.benchmarks import load_benchmark
    from graphbo.optimizers.combo import COMBO
    from graphbo.spaces import Ordinal
    from graphbo.storage.base import stored_direction
    from graphbo.storage.info import load_study_file

    torch.set_num_threads(1)
    bench = load_benchmark(args.benchmark)
    space = bench.space
    sizes = np.array([v.n_values for v in space.variables])
    long = np.array([j for j, v in enumerate(space.variables) if isinstance(v, Ordinal) and v.n_values > 10], int)
    if args.ends_only:
        for path in args.study_file:
            done = [t for t in load_study_file(path).trials if t.status == "complete"][args.skip:]
            rows = np.array([space.to_index(t.config) for t in done]).reshape(-1, len(space))
            ends = ((rows[:, long] == 0) | (rows[:, long] == sizes[long] - 1)).sum(axis=1)
            print(f"{path}: {len(done)} trials after the first {args.skip}: {ends.mean():.2f} range ends per trial, "
                  f"{(ends >= 2).mean():.2f} with two or more, {sum(t.value > 1 for t in done)} values above 1")
        return 0
    if len(args.study_file) != 1:
        print("one STUDY_FILE, or --ends-only", file=sys.stderr)
        return 2
    stored = load_study_file(args.study_file[0])
    sign = -1.0 if stored_direction(stored.meta) == "maximize" else 1.0
    trials = [t for t in stored.trials if t.status == "complete"][: args.n]
    if len(trials) < 2:
        print(f"{args.study_file[0]}: fewer than 2 complete trials", file=sys.stderr)
        return 2
    out = []
    opt = COMBO(space, seed=0, n_initial=0)
    for t in trials:
        opt.tell(t.config, sign * t.value)
    chosen = opt.ask()  # no initial design and nothing pending: the model's own suggestion
    row = space.to_index(chosen)
    acq = LogExpectedImprovement(opt.model)
    inc = opt.X[int(np.argmin(opt.y))]
    ends = int(sum(row[j] in (0, sizes[j] - 1) for j in long))
    rec = {"n": len(trials), "chosen": chosen, "chosen_log_ei": opt.last_acquisition_value,
           "chosen_true": float(bench(chosen)), "chosen_at_range_ends": ends,
           "incumbent_true": float(opt.y.min()), "scales": []}
    print(f"n={len(trials)} incumbent {rec['incumbent_true']:.4f}; chosen log-EI "
          f"{rec['chosen_log_ei']:.3f}, true {rec['chosen_true']:.4f}, {ends}/{long.size} long ordinals at a "
          f"range end: {chosen}")
    rng = np.random.default_rng(0)
    for scale in (float(s) for s in args.scales.split(",")):
        rows = np.repeat(inc[None], args.samples, 0).astype(space.row_dtype)
        for j in long:
            step = np.round(rng.normal(0.0, scale * sizes[j], args.samples))
            rows[:, j] = np.clip(inc[j] + step, 0, sizes[j] - 1)
        scores = np.asarray(acq(rows), dtype=float)
        k = int(np.argmax(scores))
        best_true = float(bench(space.from_index(rows[k])))
        mean_true = float(np.mean([bench(space.from_index(r)) for r in rows[:200]]))
        rec["scales"].append({"scale": scale, "best_log_ei": float(scores[k]), "true_there": best_true,
                              "mean_true": mean_true})
        print(f"  scale {scale:<6g} best log-EI {scores[k]:8.3f}  true there {best_true:.4f}  "
              f"mean true of the perturbations {mean_true:.4f}")
    out.append(rec)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
