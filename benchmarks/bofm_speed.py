"""Seconds per BO-FM suggestion (ML-II fit + acquisition) at the paper's settings.

    OMP_NUM_THREADS=1 python benchmarks/bofm_speed.py [--problem func3c|nas-sgd|ackley53|all]
        [--sizes 50 100 200] [--repeats 5] [--kernel modlap] [--baseline-ref GITREF]
        [--device cuda] [--n-random 20000] [--json benchmarks/results/bofm_speed.json]

For each problem and each ``n`` of ``--sizes`` (default: ``--n``, 100): ``n`` told
random evaluations, one untimed suggestion (the run's first fit, with the ML-II
restarts), then ``repeats`` timed suggestions; each refits the GP and optimises EI
from the best 40 of BOFM's default pool (20,000 random + 50 spray points since 2026-11-27;
supplement D.1 and revisions before it: 100,000 random) or ``--n-random``. Every
suggestion is withdrawn with ``mark_failed`` before the next, so each one sees the
same ``n`` told points and no pending ones. Reported: median (and mean) wall and CPU
seconds of the timed suggestions, the untimed first suggestion's seconds, whether each
fit was warm (previous optimum only, ``restart_every``) and the process's peak
resident memory (``resource.getrusage``). Each (problem, n) runs in a fresh process,
so the peak memory is that case's own.

With ``--baseline-ref GITREF`` every case also runs on that git revision (checked out
in a temporary ``git worktree``, imported through ``PYTHONPATH`` instead of this
checkout), alternating with the current code, so before and after share the
machine's state; the entries are keyed ``PROBLEM@n=N@LABEL``. The 53-dimensional
Ackley is built here (same space, same formula) when the revision's registry lacks it.

With ``--device D`` (``cpu``, ``cuda``, ``cuda:1``, ...) the GP runs on that torch device
(``BOFM(device=D)``); the default leaves ``device`` unset (CPU, and runs with revisions
that predate the option). To find the ``n`` from which a GPU pays, run the same
``--sizes`` once without and once with ``--device cuda`` on the GPU machine and compare
``total_s`` (docs/measurements.md, "GPU").

With ``--n-random N`` the pool has ``N`` random rows (``BOFM(n_random=N)``; e.g. 100000, D.1's, for
the paper's procedure on the current code).

With ``--label L`` the entries are keyed ``PROBLEM@L`` (for a baseline run of
older code, e.g. ``PYTHONPATH=/path/to/old/src ... --label before-0dd22a3``).

Problems:

* ``func3c``: Func3C (2 continuous + 3 categorical), told its true values.
* ``ackley53``: the 53-dimensional mixed Ackley (50 binary + 3 continuous), told its true values.
* ``nas-sgd``: the architecture + SGD space of BO-FM Sec. 5.3 (12 discrete
  variables, three of them graph variables, + 6 continuous). No network is
  trained: the told values are a cheap deterministic function of the
  configuration (:func:`synthetic_nas_value`), since only the suggestion
  time is measured.

The BO-FM paper's code took about 176 s per suggestion on a server CPU
(9.27 h for 190 suggestions, supplement D.2); the target is at most 10 s
on 2 cores. Results (medians and every repeat) are merged into the JSON file,
one entry per problem.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

import graphbo as gb
from graphbo.benchmarks import load_benchmark
from graphbo.benchmarks.nas_sgd import NASSGD, OPERATIONS

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bofm_speed.json"
ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ("func3c", "nas-sgd", "ackley53")


def _where(module_file: str) -> str:
    """Where graphbo was imported from, without this machine's paths: ``src/graphbo`` of this checkout, or
    a baseline revision's temporary worktree."""
    here = Path(__file__).resolve().parents[1]
    path = Path(module_file).resolve().parent
    return str(path.relative_to(here)) if path.is_relative_to(here) else "baseline worktree (temporary)"


def ackley53() -> tuple[Any, Any]:
    """The registry's ``ackley53`` (space, objective), or the same built here for revisions without it."""
    try:
        bench = load_benchmark("ackley53")
        return bench.space, bench
    except ValueError:
        from graphbo.benchmarks.mixed_synthetic import ackley

        bits, cont = [f"b{i}" for i in range(50)], [f"x{j}" for j in range(3)]
        space = gb.Space([(n, gb.Binary()) for n in bits] + [(n, gb.Continuous(-1.0, 1.0)) for n in cont])

        def objective(c: Mapping[str, Any]) -> float:
            return float(ackley(np.array([float(bool(c[n])) for n in bits] + [float(c[n]) for n in cont])))

        return space, objective


def synthetic_nas_value(bench: NASSGD, config: Mapping[str, Any]) -> float:
    """A deterministic stand-in for the trained network's objective (no training).

    FLOPs penalty of the block (as in the real objective) + a smooth bowl in the
    SGD hyper-parameters + a per-operation cost, so the GP sees structure in
    every variable.
    """
    v = bench.flops_penalty(config)
    v += 0.05 * (math.log10(config["lr"]) + 1.5) ** 2 + 2.0 * (config["momentum"] - 0.9) ** 2
    v += 0.01 * (math.log10(config["weight_decay"]) + 4.0) ** 2 + 0.1 * (config["lr_gamma"] - 0.3) ** 2
    v += 0.05 * (config["milestone1_ratio"] - 0.5) ** 2 + 0.05 * config["milestone1_ratio"] * config["milestone2_ratio"]
    ops = [config[f"s{k}_op{m}"] for k in range(1, 5) for m in (1, 2)]
    v += 0.004 * sum(OPERATIONS.index(o) % 3 for o in ops) + 0.01 * (config["output"] - 2) ** 2
    return float(v)


def measure(problem: str, n: int, repeats: int, kernel: str, seed: int = 0,
            device: str | None = None, n_random: int | None = None) -> dict[str, Any]:
    if problem == "func3c":
        bench = load_benchmark("func3c")
        space, objective = bench.space, bench
    elif problem == "nas-sgd":
        nas = NASSGD()
        space, objective = nas.space, lambda c: synthetic_nas_value(nas, c)
    elif problem == "ackley53":
        space, objective = ackley53()
    else:
        raise ValueError(f"unknown problem {problem!r}")
    # device only when asked for: older revisions (--baseline-ref) have no such option
    opt = gb.BOFM(space, kernel=kernel, seed=seed, n_initial=n, **({} if device is None else {"device": device}),
                  **({} if n_random is None else {"n_random": n_random}))
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, objective(c))
    t0, c0 = time.perf_counter(), time.process_time()
    opt.mark_failed(opt.ask())  # the run's first fit (ML-II restarts), untimed in the medians
    first_s, first_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    fits, acqs, cpus, fit_cpus, acq_cpus, warm = [], [], [], [], [], []
    for _ in range(repeats):
        t0 = time.process_time()
        c = opt.ask()
        cpus.append(time.process_time() - t0)
        warm.append(getattr(opt.model, "fit_info", {}).get("warm"))
        fits.append(opt.last_timing["fit"])
        acqs.append(opt.last_timing["acquisition"])
        if "fit_cpu" in opt.last_timing:  # older graphbo versions time wall seconds only
            fit_cpus.append(opt.last_timing["fit_cpu"])
            acq_cpus.append(opt.last_timing["acquisition_cpu"])
        opt.mark_failed(c)  # withdraw it: the next suggestion sees the same n points and nothing pending
    tot = [f + a for f, a in zip(fits, acqs)]
    return {
        "problem": problem,
        "n": n,
        "kernel": kernel,
        "seed": seed,
        "device": device or "cpu",
        "n_random": n_random,
        "repeats": repeats,
        "n_variables": len(space),
        "n_continuous": int(len(space.continuous_indices)),
        "fit_s": statistics.median(fits),
        "acquisition_s": statistics.median(acqs),
        "total_s": statistics.median(tot),
        "total_mean_s": statistics.fmean(tot),
        "first_s": first_s,
        "first_cpu_s": first_cpu_s,
        "warm_fits": warm,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "graphbo": _where(gb.__file__),
        "fit_s_all": fits,
        "acquisition_s_all": acqs,
        "total_s_all": tot,
        # CPU seconds of this process per suggestion: less sensitive than wall time to other jobs on the machine
        "cpu_s": statistics.median(cpus),
        "cpu_s_all": cpus,
        "fit_cpu_s": statistics.median(fit_cpus) if fit_cpus else None,
        "acquisition_cpu_s": statistics.median(acq_cpus) if acq_cpus else None,
    }


def _environment(label: str) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "torch_threads": torch.get_num_threads(),
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "label": label,
    }


def _print(r: dict[str, Any], label: str) -> None:
    print(f"{label:<10} {r['problem']:<9} {r.get('device', 'cpu'):<6} "
          f"n={r['n']:<4} fit {r['fit_s']:6.2f} s  acquisition {r['acquisition_s']:6.2f} s  "
          f"total {r['total_s']:6.2f} s (mean {r.get('total_mean_s', r['total_s']):.2f}; CPU {r['cpu_s']:.2f})  "
          f"first {r.get('first_s', float('nan')):6.2f} s  peak {r.get('peak_mib', float('nan')):5.0f} MiB  "
          f"load {os.getloadavg()[0]:.1f}", flush=True)


def _case_in_subprocess(args: argparse.Namespace, problem: str, n: int, src: str | None) -> dict[str, Any]:
    """One (problem, n) case in a fresh Python process, importing graphbo from ``src`` when given."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    if src is not None:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--case", problem, "--n", str(n),
           "--repeats", str(args.repeats), "--kernel", args.kernel, "--seed", str(args.seed)]
    if args.device is not None:
        cmd += ["--device", args.device]
    if args.n_random is not None:
        cmd += ["--n-random", str(args.n_random)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if out.returncode:
        raise RuntimeError(f"case {problem} n={n} ({src or 'this checkout'}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", choices=[*PROBLEMS, "all"], default="all")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="several n (overrides --n)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--kernel", default="modlap")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None, help="torch device of the GP (BOFM(device=...)), e.g. cuda")
    ap.add_argument("--n-random", type=int, default=None,
                    help="random pool rows (BOFM(n_random=...)); default BOFM's own")
    ap.add_argument("--json", default=str(DEFAULT_JSON), help="results file ('' to skip writing)")
    ap.add_argument("--label", default="",
                    help="stored with the results; a non-empty label also keys them as PROBLEM@LABEL "
                         "(e.g. a baseline run of older code next to the current numbers)")
    ap.add_argument("--baseline-ref", default=None,
                    help="git revision to time alongside, case by case (e.g. a commit before a change)")
    ap.add_argument("--case", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 1))
    if args.case is not None:  # one case, for the parent process: a JSON line on stdout
        print(json.dumps(measure(args.case, args.n, args.repeats, args.kernel, args.seed, args.device,
                                 args.n_random)))
        return
    problems = list(PROBLEMS) if args.problem == "all" else [args.problem]
    sizes = args.sizes or [args.n]
    keyed: list[tuple[str, dict[str, Any], str]] = []  # (key, result, label)
    if args.baseline_ref is None and args.sizes is None:  # the original single-process mode
        for problem in problems:
            r = measure(problem, args.n, args.repeats, args.kernel, args.seed, args.device, args.n_random)
            _print(r, args.label or "current")
            keyed.append((problem + (f"@{args.label}" if args.label else ""), r, args.label))
    else:
        worktree = None
        versions: list[tuple[str, str | None]] = [(args.label or "current", None)]
        if args.baseline_ref:
            worktree = tempfile.mkdtemp(prefix="graphbo-bofm-baseline-")
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", worktree, args.baseline_ref],
                           check=True, capture_output=True)
            versions.append((f"baseline-{args.baseline_ref}", os.path.join(worktree, "src")))
        try:
            for problem in problems:
                for n in sizes:
                    for label, src in versions:
                        r = _case_in_subprocess(args, problem, n, src)
                        _print(r, label)
                        keyed.append((f"{problem}@n={n}@{label}", r, label))
        finally:
            if worktree:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", worktree],
                               capture_output=True)
    if args.json:
        path = Path(args.json)
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        for key, r, label in keyed:
            data[key] = r | {"environment": _environment(label)}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
