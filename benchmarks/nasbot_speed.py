"""Seconds per NASBOT suggestion at n = 10, 30 and 100 evaluated networks (CNN domain).

NASBOT runs on the synthetic CNN objective (``nas-synthetic``) with the paper's
EA budget (``n_EA(t) = clip(25 sqrt(t), 50, 500)`` acquisition evaluations,
``N_mut = clip(3 sqrt(n_EA), 5, 100)`` mutations per round) and the default
model (10 posterior samples per suggestion, 100 burn-in sweeps at the first
fit). Every suggestion is timed; for each requested ``n`` the script reports
the median over the ``--repeats`` suggestions made with ``n, n + 1, ...``
evaluated networks, split into

* ``distances``: OTMANN distances (the EA's candidates against the evaluated
  networks, the new row of the last evaluated network, pending networks);
* ``fit``: slice sampling of the GP hyper-parameters and conditioning;
* ``acquisition``: the evolutionary algorithm (mutations, validity checks)
  and the GP predictions and EI, without their distances.

The total is reported in wall-clock and in process (CPU) seconds; the split is
in CPU seconds (``model.clock = time.process_time``), summed over threads. On a
shared machine the wall clock also counts the time the process waited for a core.

BLAS and torch use one thread. The OTMANN distances use ``--n-jobs`` threads
(``BatchOTMANN.n_jobs``; default ``min(2, os.cpu_count())``, 1 = serial) and the
transport solver ``--solver`` (``BatchOTMANN.solver``: ``numba``, the compiled
batched solver of ``graphbo.nas.distance.transport_jit``; ``pot``, one POT call per
problem; ``auto``, numba when it is installed).

The evaluated networks are NASBOT's own: by default one run goes from the
initial pool to ``max(n) + repeats`` evaluations (``--history nasbot``, a few
minutes). ``--history rand`` fills the history up to each ``n`` with RAND's
networks first (quicker; networks drift larger than NASBOT's).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/nasbot_speed.py [--ns 10 30 100] [--repeats 5]
        [--history nasbot|rand] [--seed 0] [--n-jobs 2] [--solver auto|pot|numba]
        [--out benchmarks/results/nasbot_speed.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from graphbo.nas.training.objectives import SyntheticArchitectureObjective  # noqa: E402
from graphbo.nas.domain.space import ArchitectureSpace  # noqa: E402
from graphbo.optimizers.nasbot import NASBOT, NASRandom  # noqa: E402

__all__ = ["run", "main"]

KEYS = ("total", "cpu", "distances", "fit", "acquisition")


def make_nasbot(space, seed, n_jobs=None, solver="auto"):
    opt = NASBOT(space, seed=seed)
    opt.model.clock = time.process_time  # the split in CPU seconds
    if n_jobs is not None:
        opt.model.batch.n_jobs = max(1, int(n_jobs))
    opt.model.batch.solver = solver
    return opt


def timed_ask(opt: NASBOT) -> tuple[dict, dict]:
    w0, c0 = time.perf_counter(), time.process_time()
    solves0 = opt.model.batch.solves
    config = opt.ask()
    rec = dict(opt.last_timing)  # CPU seconds (make_nasbot)
    rec["total"] = time.perf_counter() - w0
    rec["cpu"] = time.process_time() - c0
    rec["solves"] = opt.model.batch.solves - solves0
    return config, rec


def run(ns: list[int], repeats: int, history: str, seed: int, log=print, n_jobs=None, solver="auto") -> dict:
    space = ArchitectureSpace("cnn")
    f = SyntheticArchitectureObjective("cnn")
    records: dict[int, list[dict]] = {n: [] for n in ns}
    layers: dict[int, float] = {}
    if history == "nasbot":
        opt = make_nasbot(space, seed, n_jobs, solver)
        last = max(ns) + repeats
        while opt.n_told < last:
            n = opt.n_told
            if n < 10:
                config = opt.ask()
                rec = None
            else:
                config, rec = timed_ask(opt)
            opt.tell(config, f(config))
            for m in ns:
                if rec is not None and m <= n < m + repeats:
                    rec["n"] = n
                    records[m].append(rec)
                    layers[m] = float(np.mean([a.n_layers for a in opt.architectures]))
            if rec is not None and (n % 10 == 0 or any(m <= n < m + repeats for m in ns)):
                log(f"n={n:4d}  {rec['total']:7.2f} s wall  {rec['cpu']:7.2f} s cpu  "
                    f"(cpu: distances {rec['distances']:.2f}, fit {rec['fit']:.2f}, acquisition {rec['acquisition']:.2f}; "
                    f"n_EA {int(rec['ea_evaluations'])}, {rec['solves']} OT solves)", flush=True)
    else:
        for m in ns:
            rand = NASRandom(space, seed=seed)
            while rand.n_told < m:
                c = rand.ask()
                rand.tell(c, f(c))
            opt = make_nasbot(space, seed, n_jobs, solver)
            for obs in rand.history:
                opt.tell(obs.config, obs.value)
            config, _ = timed_ask(opt)  # first fit (burn-in) and the evaluated networks' distances
            opt.tell(config, f(config))
            for r in range(repeats):
                config, rec = timed_ask(opt)
                rec["n"] = opt.n_told
                records[m].append(rec)
                opt.tell(config, f(config))
                log(f"n={opt.n_told - 1:4d}  {rec['total']:7.2f} s wall  {rec['cpu']:7.2f} s cpu  "
                    f"(cpu: distances {rec['distances']:.2f}, fit {rec['fit']:.2f}, "
                    f"acquisition {rec['acquisition']:.2f}; n_EA {int(rec['ea_evaluations'])})", flush=True)
            layers[m] = float(np.mean([a.n_layers for a in opt.architectures]))
    summary = {}
    for m in ns:
        recs = records[m]
        summary[str(m)] = {
            **{k: statistics.median(r[k] for r in recs) for k in KEYS},
            "ea_evaluations": statistics.median(r["ea_evaluations"] for r in recs),
            "ot_solves": statistics.median(r["solves"] for r in recs),
            "mean_layers": layers.get(m),
            "suggestions": [{k: r[k] for k in (*KEYS, "n", "ea_evaluations", "solves")} for r in recs],
        }
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ns", type=int, nargs="+", default=[10, 30, 100])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--history", choices=("nasbot", "rand"), default="nasbot")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-jobs", type=int, default=None,
                   help="threads for the OTMANN distances (default min(2, cpu count); 1 = serial)")
    p.add_argument("--solver", choices=("auto", "pot", "numba"), default="auto",
                   help="transport solver of the OTMANN distances (default auto: numba when installed)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "nasbot_speed.json"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=1)
    except ImportError:  # pragma: no cover
        limits = None
    t0 = time.perf_counter()
    n_jobs = args.n_jobs if args.n_jobs is not None else min(2, os.cpu_count() or 1)
    from graphbo.nas.distance import transport_jit

    solver = args.solver if args.solver != "auto" else ("numba" if transport_jit.AVAILABLE else "pot")
    t1 = time.perf_counter()
    if solver == "numba":  # compile (or load from numba's cache) before timing anything
        warm = make_nasbot(ArchitectureSpace("cnn"), 0, 1, "numba").model.batch
        pool = ArchitectureSpace("cnn").initial_pool()
        warm.cross(pool, pool)
    compile_s = time.perf_counter() - t1
    summary = run(sorted(args.ns), args.repeats, args.history, args.seed, n_jobs=n_jobs, solver=solver)
    del limits
    print()
    print(f"NASBOT seconds per suggestion, CNN domain, synthetic objective, 1 BLAS thread, "
          f"{n_jobs} OTMANN thread(s), {solver} transport solver, median of {args.repeats}")
    print(f"{'':>11} {'total':>15}  {'CPU split':>27}")
    print(f"{'n':>5} {'n_EA':>5} {'wall':>7} {'cpu':>7} {'distances':>10} {'GP fit':>7} {'EA+acq':>7} "
          f"{'OT solves':>9} {'layers':>6}")
    for n, s in summary.items():
        print(f"{n:>5} {s['ea_evaluations']:>5.0f} {s['total']:>7.2f} {s['cpu']:>7.2f} {s['distances']:>10.2f} "
              f"{s['fit']:>7.2f} {s['acquisition']:>7.2f} {s['ot_solves']:>9.0f} {s['mean_layers']:>6.1f}")
    out = {
        "benchmark": "nasbot_speed", "domain": "cnn", "objective": "nas-synthetic", "history": args.history,
        "seed": args.seed, "repeats": args.repeats, "threads": 1,
        "otmann_threads": n_jobs, "solver": solver,
        "solver_warmup_seconds": compile_s,
        "machine": {"platform": platform.platform(), "python": sys.version.split()[0], "cpus": os.cpu_count(),
                    "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None},
        "seconds_total_run": time.perf_counter() - t0,
        "results": summary,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
