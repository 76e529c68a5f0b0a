"""Seconds per BO-FM suggestion (ML-II fit + acquisition) at the paper's settings.

    python benchmarks/bofm_speed.py [--n 100] [--repeats 3] [--kernel modlap]

Func3C (2 continuous + 3 categorical) with ``n`` told random evaluations;
each suggestion refits the GP (10 restarts) and optimises EI from the best 40
of 100,000 random + 50 spray points. The BO-FM paper's code took about 176 s
per suggestion on a server CPU (9.27 h for 190 suggestions, supplement D.2).
"""

from __future__ import annotations

import argparse
import statistics
import warnings

import graphbo as gb
from graphbo.benchmarks import load_benchmark


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kernel", default="modlap")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    bench = load_benchmark("func3c")
    opt = gb.BOFM(bench.space, kernel=args.kernel, seed=0, n_initial=args.n)
    for _ in range(args.n):
        c = opt.ask()
        opt.tell(c, bench(c))
    fits, acqs = [], []
    for _ in range(args.repeats):
        opt.ask()
        fits.append(opt.last_timing["fit"])
        acqs.append(opt.last_timing["acquisition"])
    tot = [f + a for f, a in zip(fits, acqs)]
    print(f"func3c n={args.n} kernel={args.kernel}: fit {statistics.median(fits):.2f} s, "
          f"acquisition {statistics.median(acqs):.2f} s, total {statistics.median(tot):.2f} s (median of {args.repeats})")


if __name__ == "__main__":
    main()
