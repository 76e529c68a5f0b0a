"""Plot COMBO's seconds per suggestion against n from the suggestion-growth results (docs/measurements.md).

    python benchmarks/plot_suggestion_growth.py [--out docs/img/combo_suggestion_growth.png]

Reads ``benchmarks/results/suggestion_growth.json`` (before and after the speed-ups at large n, 7aa962c against the code
of 2026-11-25) and ``benchmarks/results/suggestion_growth_prior.json`` (the authors' sampler of ``beta``,
3a0ec31, against the paper's prior, 2026-11-26) and ``benchmarks/results/suggestion_growth_2026-11-27d.json``
(9c15746 against the code of 2026-11-27 evening); one line per code version, mean seconds per suggestion of a
resumed run on wMaxSAT28, log-log. The rows were measured in different runs on a shared machine: compare
lines of one file, not across files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
LABELS = {("suggestion_growth.json", "baseline"): "before the speed-ups (7aa962c)",
          ("suggestion_growth.json", "current"): "the speed-ups (2026-11-25)",
          ("suggestion_growth_prior.json", "baseline"): "authors' beta sampler (3a0ec31, 2026-11-26)",
          ("suggestion_growth_prior.json", "current"): "paper's beta prior (2026-11-26)",
          ("suggestion_growth_2026-11-27d.json", "baseline"): "9c15746 (2026-11-27)",
          ("suggestion_growth_2026-11-27d.json", "current"): "fewer passes, tighter bounds (2026-11-27)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"
                                         / "combo_suggestion_growth.png"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (name, code), label in LABELS.items():
        rows = [r for r in json.loads((RESULTS / name).read_text()) if r["code"] == code]
        by_n: dict[int, list[float]] = {}
        for r in rows:  # a size measured twice (3 and 5 suggestions): the mean over every suggestion
            by_n.setdefault(int(r["n"]), []).extend(r["times_s"])
        ns = sorted(by_n)
        ax.plot(ns, [sum(by_n[n]) / len(by_n[n]) for n in ns], marker="o", label=label,
                linestyle="-" if code == "current" else "--")
    ax.axhline(3.0, color="grey", linewidth=0.8, linestyle=":")
    ax.text(52, 3.2, "target at n = 400: 3 s", fontsize=8, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("told evaluations n (training rows capped at 500)")
    ax.set_ylabel("seconds per suggestion (mean)")
    ax.set_title("COMBO on wMaxSAT28, resumed run, one thread")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
