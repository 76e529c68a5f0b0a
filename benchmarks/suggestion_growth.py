"""Seconds per suggestion against the number of evaluations n, as a user's resumed run sees it.

    python benchmarks/suggestion_growth.py --method combo --sizes 50 100 200 400 800 \\
        [--history state|told] [--maxsat PATH] [--baseline-ref GITREF] [--suggestions 5] [--out FILE.json]

For each n, in a fresh process (so the peak memory is that case's own):

1. an optimiser is told ``n`` distinct random configurations and fits once (COMBO: ``--burn``
   slice-sampling burn-in sweeps; untimed: this is the earlier session's work);
2. its state (:meth:`Optimizer.get_state`) goes to a new optimiser that is told the same data,
   as ``graphbo resume`` does;
3. the next ``--suggestions`` suggestions are timed, each evaluated and told, so the first
   fit after the resume counts and ``n`` grows as in a real run.

With ``--history told`` the optimiser is instead told ``n`` distinct random evaluations without
having asked for them (an earlier study's trials, or a worker joining a running study) and its
first ``--suggestions`` suggestions are timed, the first one (its first fit, burn-in included)
reported apart (``first_s``) from the median of the others.

The mean wall seconds of those suggestions and the process's peak resident memory are
reported. With ``--baseline-ref``, every case is also run on that git revision (checked out
in a temporary worktree, imported instead of this checkout), alternating with the current
code, so before and after share the machine's state.

Problems: COMBO on wMaxSAT28 (``--maxsat``: a .wcnf file; default the shipped instance), BO-FM on the 53-dimensional mixed Ackley (``ackley53``) when the
registry has it, else Func3C. One torch thread unless ``--threads`` says otherwise.

With ``--device D`` (``cpu``, ``cuda``, ...) the optimiser's GP runs on that torch device; COMBO's
slice sampler stays on the CPU either way (NumPy tables), its posterior over the acquisition's
candidates moves. To find the ``n`` from which a GPU pays, run the same ``--sizes`` once without
and once with ``--device cuda`` on the GPU machine (docs/measurements.md, "GPU"). ``--device`` with a
``--baseline-ref`` older than the optimisers' ``device=`` option fails in the baseline's process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from bofm_speed import _where  # noqa: E402 (this folder is on sys.path when the script runs)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _benchmark(method: str, maxsat: str | None):
    from graphbo.benchmarks import REGISTRY, load_benchmark

    if method == "combo":
        return "maxsat28", load_benchmark("maxsat", path=maxsat or "maxsat28")  # the shipped instance by default
    name = "ackley53" if "ackley53" in REGISTRY else "func3c"
    return name, load_benchmark(name)


def _optimizer(method: str, space, seed: int, n: int, burn: int, device: str | None = None):
    import graphbo as gb

    extra = {} if device is None else {"device": device}  # unset: runs with revisions that predate it
    if method == "combo":
        return gb.COMBO(space, seed=seed, n_initial=n, n_burn=burn, **extra)
    return gb.BOFM(space, seed=seed, n_initial=n, **extra)


def _timed_suggestions(opt, bench, suggestions: int) -> list[float]:
    """Wall seconds of each of the next ``suggestions`` asks of ``opt``, each evaluated and told."""
    times = []
    for _ in range(suggestions):
        t0 = time.perf_counter()
        c = opt.ask()
        times.append(time.perf_counter() - t0)
        opt.tell(c, bench(c))
    return times


def run_told_case(method: str, n: int, suggestions: int, seed: int, burn: int, maxsat: str | None,
                  device: str | None = None) -> dict:
    """One case in this process: tell ``n`` random evaluations never asked for, time the next suggestions."""
    import graphbo as gb

    name, bench = _benchmark(method, maxsat)
    # n_initial=0: revisions before told evaluations counted towards the initial design asked 10 random ones first
    opt = _optimizer(method, bench.space, seed, 0, burn, device)
    source = gb.RandomSearch(bench.space, seed=seed + 1)
    for config in source.ask(n):
        opt.tell(config, bench(config))
    times = _timed_suggestions(opt, bench, suggestions)
    rest = times[1:] or times
    return {"method": method, "problem": name, "n": n, "history": "told", "first_s": times[0],
            "mean_s": statistics.mean(rest), "median_s": statistics.median(rest), "times_s": times,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "device": device or "default",
            "graphbo": _where(getattr(gb, "__file__", "?"))}


def run_case(method: str, n: int, suggestions: int, seed: int, burn: int, maxsat: str | None,
             device: str | None = None) -> dict:
    """One case in this process: fit at ``n`` (untimed), resume, time ``suggestions`` suggestions."""
    import graphbo as gb

    name, bench = _benchmark(method, maxsat)
    opt = _optimizer(method, bench.space, seed, n, burn, device)
    told = []
    for _ in range(n):
        c = opt.ask()
        v = bench(c)
        opt.tell(c, v)
        told.append((c, v))
    t0 = time.perf_counter()
    opt.mark_failed(opt.ask())  # the earlier session's first fit
    first_fit = time.perf_counter() - t0
    state = opt.get_state()

    resumed = _optimizer(method, bench.space, seed, n, burn, device)
    for c, v in told:
        resumed.tell(c, v)
    resumed.set_state(state)
    times = _timed_suggestions(resumed, bench, suggestions)
    return {"method": method, "problem": name, "n": n, "mean_s": statistics.mean(times),
            "median_s": statistics.median(times), "times_s": times, "first_fit_s": first_fit,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "device": device or "default",
            "graphbo": _where(getattr(gb, "__file__", "?"))}


def _subprocess_case(args: argparse.Namespace, n: int, src: str | None) -> dict:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(args.threads))
    if src is not None:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--case", str(n), "--method", args.method,
           "--suggestions", str(args.suggestions), "--seed", str(args.seed), "--burn", str(args.burn),
           "--threads", str(args.threads), "--history", args.history]
    if args.maxsat:
        cmd += ["--maxsat", os.path.abspath(args.maxsat)]
    if args.device:
        cmd += ["--device", args.device]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", choices=("combo", "bofm"), default="combo")
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200, 400, 800])
    ap.add_argument("--suggestions", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--burn", type=int, default=100, help="COMBO burn-in sweeps of the untimed first fit")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--history", choices=("state", "told"), default="state",
                    help="state: resume from a stored fit; told: n evaluations told without asks, first fit timed")
    ap.add_argument("--maxsat", default=None, help="wMaxSAT28 .wcnf file (COMBO)")
    ap.add_argument("--baseline-ref", default=None, help="git revision to time alongside (e.g. a commit before)")
    ap.add_argument("--device", default=None,
                    help="torch device of the GP (COMBO(device=...), BOFM(device=...)), e.g. cuda; unset: the default")
    ap.add_argument("--out", default=None, help="append the rows to this JSON file")
    ap.add_argument("--case", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case is not None:
        import torch

        torch.set_num_threads(args.threads)
        case = run_told_case if args.history == "told" else run_case
        print(json.dumps(case(args.method, args.case, args.suggestions, args.seed, args.burn, args.maxsat,
                              args.device)))
        return

    worktree = None
    if args.baseline_ref:
        worktree = tempfile.mkdtemp(prefix="graphbo-baseline-")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", worktree, args.baseline_ref],
                       check=True, capture_output=True)
    versions = [("current", os.path.join(ROOT, "src"))] + ([("baseline", os.path.join(worktree, "src"))]
                                                           if worktree else [])
    rows = []
    print(f"{'code':<9} {'method':<6} {'problem':<9} {'n':>5} {'mean s':>8} {'median s':>9} {'peak MiB':>9}"
          + (f" {'first s':>8}" if args.history == "told" else ""))
    try:
        for n in args.sizes:
            for label, src in versions:
                r = _subprocess_case(args, n, src)
                r.update(code=label, ref=args.baseline_ref if label == "baseline" else "HEAD+worktree",
                         date=time.strftime("%Y-%m-%d"), load_avg=os.getloadavg()[0], threads=args.threads)
                rows.append(r)
                print(f"{label:<9} {r['method']:<6} {r['problem']:<9} {n:>5} {r['mean_s']:>8.2f} "
                      f"{r['median_s']:>9.2f} {r['peak_mib']:>9.0f}"
                      + (f" {r['first_s']:>8.2f}" if "first_s" in r else ""), flush=True)
                if args.out:
                    _append(args.out, r)
    finally:
        if worktree:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", worktree], capture_output=True)


def _append(path: str, row: dict) -> None:
    rows = []
    if os.path.exists(path):
        with open(path) as fh:
            rows = json.load(fh)
    rows.append(row)
    with open(path, "w") as fh:
        json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
