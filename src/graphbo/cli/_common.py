"""Helpers shared by the subcommands of the ``graphbo`` command.

Default output paths, the per-evaluation progress lines, the options that
configure a built-in benchmark (``--wcnf``, ``--lamda``, ``--epochs``,
``--instance-seed``), ``--threads``, ``--option KEY=VALUE`` parsing, and running
(or continuing) a study file for ``graphbo run --storage`` and ``graphbo resume``.
Heavy modules (torch) are imported inside the functions that need them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

from ..threads import DEFAULT_THREADS


def default_path(name: str, method: str, seed: int, suffix: str) -> str:
    """``runs/NAME-METHOD-seedS-TIME.SUFFIX``: where a run writes when given no path."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"{name}-{method}-seed{seed}-{stamp}.{suffix}")


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """``--threads N``: torch and BLAS threads while the optimiser suggests."""
    parser.add_argument("--threads", type=positive_int, default=DEFAULT_THREADS,
                        help=f"torch and BLAS threads (default: {DEFAULT_THREADS}; one thread is fastest for "
                             "graphbo's small matrices)")


def add_benchmark_arguments(parser: argparse.ArgumentParser, seed_name: str) -> None:
    """The options that configure a built-in benchmark; ``seed_name`` names the seed the instance seed
    defaults to (``seed``, ``run seed``)."""
    parser.add_argument("--wcnf", default=None, help="path of a .wcnf instance (maxsat)")
    parser.add_argument("--lamda", type=float, default=None, help="regularisation (ising, contamination)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="training epochs per evaluation (benchmarks that train networks: nas-*, nasbinary)")
    parser.add_argument("--instance-seed", type=int, default=None,
                        help=f"problem-instance seed of random benchmarks (default: {seed_name} mod 5)")


def benchmark_options(args: argparse.Namespace, seed: int) -> dict:
    """Constructor options of the benchmark ``args.benchmark`` for one run seed."""
    import importlib
    import inspect

    from ..benchmarks import REGISTRY

    info = REGISTRY[args.benchmark]
    module, cls = info.target.split(":")
    params = inspect.signature(getattr(importlib.import_module(module), cls)).parameters
    opts: dict = {}
    if "path" in params:
        opts["path"] = args.wcnf
    if "lamda" in params and args.lamda is not None:
        opts["lamda"] = args.lamda
    if getattr(args, "epochs", None) is not None:
        if "epochs" not in params:
            raise ValueError(f"--epochs applies to benchmarks that train networks, not {args.benchmark!r}")
        if args.epochs < 1:
            raise ValueError(f"--epochs must be >= 1, got {args.epochs}")
        opts["epochs"] = args.epochs
    if "seed" in params:
        # 5 random problem instances, crossed with the run seeds (the paper's 25 = 5 x 5 design)
        opts["seed"] = seed % 5 if args.instance_seed is None else args.instance_seed
    return opts


def parse_method_options(items: list[str] | None) -> dict:
    """``["ard=false", "kappa=3"]`` -> ``{"ard": False, "kappa": 3}``: values are read as JSON
    (numbers, true/false, null, lists) and otherwise kept as strings."""
    options: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--option takes KEY=VALUE, got {item!r}")
        own_flag = {"seed": "--seeds", "n_initial": "--n-initial"}.get(key)
        if own_flag:
            raise ValueError(f"--option {key}: use {own_flag}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def progress(quiet: bool, best: float | None = None) -> Callable[..., None]:
    """A ``minimize`` callback printing one line per complete evaluation (a header before the first)."""
    state = [float("inf") if best is None else best, True]

    def callback(number, config, value, optimizer, seconds):
        state[0] = min(state[0], value)
        if not quiet:
            if state[1]:
                print(f"{'trial':>6} {'value':>12} {'best':>12} {'seconds':>8}")
                state[1] = False
            print(f"{number + 1:>6} {value:>12.5g} {state[0]:>12.5g} {seconds:>8.2f}", flush=True)

    return callback


def minimize_study(prog: str, objective: Callable[[dict], Any], space: Any, path: str, method: str, budget: int,
                   seed: int, method_options: dict, args: argparse.Namespace) -> int:
    """Run (or continue) the study in ``path`` on ``objective`` (a benchmark or a user's function);
    Ctrl-C leaves it resumable. Returns the exit code."""
    from ..loop import minimize
    from ..study import StorageError, read_study_info
    from ..threads import limit_threads

    if args.workers < 1 or (args.timeout is not None and args.timeout <= 0):
        print(f"{prog}: --workers must be >= 1 and --timeout > 0", file=sys.stderr)
        return 2
    try:
        best = read_study_info(path).get("best_value") if os.path.exists(path) else None
        with limit_threads(args.threads):
            result = minimize(objective, space, method, budget=budget, seed=seed,
                              callback=progress(args.quiet, best),
                              storage=path, n_workers=args.workers, timeout=args.timeout, **method_options)
    except StorageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted; the finished trials are saved in {path}; continue with "
              f"`graphbo resume {path}`", file=sys.stderr)
        return 130
    if result.best is None:
        print(f"every evaluation failed ({result.n_failed}); see the trials in {path}")
        return 1
    print(f"best value {result.best.value:.6g} at {json.dumps(result.best.config, default=str)}"
          + (f" ({result.n_failed} failed evaluations)" if result.n_failed else ""))
    print(f"study saved in {path}")
    return 0
