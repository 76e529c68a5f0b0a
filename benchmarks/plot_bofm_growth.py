"""Plot BO-FM's seconds per suggestion against n on the 53-variable Ackley (docs/measurements.md).

    python benchmarks/plot_bofm_growth.py [--out docs/img/bofm_suggestion_growth.png]

Reads ``benchmarks/results/bofm_growth_h200.json`` (CPU, before and after ``acq_optimizer="typewise"``)
and ``benchmarks/results/gpu_crossover.json`` (run 2: the same code on the CPU and on the GPU). All were
measured on the device machine (nvidia-h200 kind) on 2026-11-27, each case in its own process, one
thread; the median seconds of 3 suggestions (fit + acquisition) at each n, log-log. A case that did
not finish within its time limit (CPU before, n = 200 and 400) or was not run (GPU, n = 50 and 200)
breaks its line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def lines() -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    growth = json.loads((RESULTS / "bofm_growth_h200.json").read_text())["cases"]
    names = {"before": "CPU, before (acq_optimizer='supplement', 576d6e6)", "after": "CPU, after ('typewise', c559de0)"}
    for key, r in growth.items():
        problem, n, label = key.split("@")
        if problem == "ackley53":
            out.setdefault(names[label], []).append((int(n[2:]), r["total_s"]))
    gpu = json.loads((RESULTS / "gpu_crossover.json").read_text())["runs"]["run2"]["cases"]
    for name, data in gpu.items():
        method, label, n = name.split("_")
        if method == "bofm" and label == "dev":
            for r in data.values():
                out.setdefault("GPU (H200), after", []).append((int(n), r["total_s"]))
    return {k: sorted(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"
                                         / "bofm_suggestion_growth.png"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(6, 4))
    sizes = [50, 100, 200, 400, 800]
    for name, pts in lines().items():
        have = dict(pts)
        # a missing case (over its time limit) breaks the line instead of being bridged
        ax.plot(sizes, [have.get(n, float("nan")) for n in sizes], marker="o", label=name)
    ax.annotate("before, n = 200 and 400:\nover 230 s per case (not finished)", xy=(0.03, 0.62),
                xycoords="axes fraction", va="top", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.set_xlabel("n (evaluations told)")
    ax.set_ylabel("seconds per suggestion (median of 3)")
    ax.set_title("BO-FM on the 53-variable Ackley")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
