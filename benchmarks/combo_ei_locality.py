"""Where COMBO's expected improvement points, against the incumbent's surroundings, on a run's trace.

    OMP_NUM_THREADS=1 python benchmarks/combo_ei_locality.py BENCHMARK STUDY_FILE [--n 60]
        [--y-transform none,tail,power] [--scales 0.005,0.02,0.05,0.1,0.3] [--samples 5000] [--json OUT]

COMBO (the default options, seed 0) is told the first ``--n`` complete trials of ``STUDY_FILE`` (a run of
any method on the registered benchmark ``BENCHMARK``, e.g. under results/beyond/hpo-surface/) and asked
for one suggestion, once per ``--y-transform``. Printed for each:

* ``chosen``: the suggestion, its log-EI and its true value, and how many of its ordinal variables (of
  more than 10 values) sit at an end of their range;
* per scale ``s``: the best log-EI among ``--samples`` perturbations of the incumbent in which every
  ordinal variable of more than 10 values moves by a rounded ``N(0, (s * its number of values)^2)``
  step (clipped to its range; the other variables as the incumbent's), with the true value there and
  the mean true value of the perturbations.

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
    ap.add_argument("study_file")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--y-transform", default="none,tail,power")
    ap.add_argument("--scales", default="0.005,0.02,0.05,0.1,0.3")
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from graphbo.acquisition.ei import LogExpectedImprovement
    from graphbo.benchmarks import load_benchmark
    from graphbo.optimizers.combo import COMBO
    from graphbo.study import load_study_file

    torch.set_num_threads(1)
    bench = load_benchmark(args.benchmark)
    space = bench.space
    trials = [t for t in load_study_file(args.study_file).trials if t.status == "complete"][: args.n]
    if len(trials) < 2:
        print(f"{args.study_file}: fewer than 2 complete trials", file=sys.stderr)
        return 2
    sizes = np.array([v.n_values for v in space.variables])
    long = np.flatnonzero(sizes > 10)
    out = []
    for how in args.y_transform.split(","):
        opt = COMBO(space, seed=0, n_initial=1, y_transform=how)
        for t in trials:
            opt.tell(t.config, t.value)
        opt.ask()  # the one initial-design point; the next ask fits the model
        chosen = opt.ask()
        row = space.to_index(chosen)
        acq = LogExpectedImprovement(opt.model)
        inc = opt.X[int(np.argmin(opt.y))]
        ends = int(sum(row[j] in (0, sizes[j] - 1) for j in long))
        rec = {"y_transform": how, "n": len(trials), "chosen": chosen, "chosen_log_ei": opt.last_acquisition_value,
               "chosen_true": float(bench(chosen)), "chosen_at_range_ends": ends,
               "incumbent_true": float(opt.y.min()), "scales": []}
        print(f"{how}: n={len(trials)} incumbent {rec['incumbent_true']:.4f}; chosen log-EI "
              f"{rec['chosen_log_ei']:.3f}, true {rec['chosen_true']:.4f}, {ends}/{long.size} long ordinals at a "
              f"range end: {chosen}")
        rng = np.random.default_rng(0)
        for scale in (float(s) for s in args.scales.split(",")):
            rows = np.repeat(inc[None], args.samples, 0).astype(np.int64)
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
