"""Helpers shared by the subcommands of the ``graphbo`` command.

Default output paths, the per-evaluation progress lines (numbered by trial number, from 0, as the study file
and the log messages number them), configurations as printed (:func:`config_text`: the variables' own values,
or a benchmark's native domain), the options that
configure a built-in benchmark (``--wcnf``, ``--lamda``, ``--epochs``,
``--instance-seed``), ``--threads``, ``--option KEY=VALUE`` parsing, and running
(or continuing) a study file for ``graphbo run`` and ``graphbo resume``; the argument types that validate
``--budget``, ``--seeds``, ``--workers``, ``--timeout``; the natural method of a space; the method list
of the help texts, built from :data:`graphbo.optimizers.METHODS`.
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


def unused_path(path: str) -> str:
    """``path``, or ``path`` with ``-2``, ``-3``, ... before its suffix if it exists (two runs in one second)."""
    stem, suffix = os.path.splitext(path)
    candidate, k = path, 1
    while os.path.exists(candidate):
        k += 1
        candidate = f"{stem}-{k}{suffix}"
    return candidate


def resume_command(path: str) -> str:
    """The exact command that continues the study file ``path``: for a study of the user's own function, with
    ``--objective SPEC`` (the spec as stored by ``graphbo run``), since resume imports nothing the user did not
    name."""
    import shlex

    from ..storage.base import StorageError
    from ..storage.info import read_study_info

    command = f"graphbo resume {shlex.quote(path)}"
    try:
        attrs = read_study_info(path).get("user_attrs")
    except (StorageError, OSError):
        return command
    spec = attrs.get("objective") if isinstance(attrs, dict) else None
    return f"{command} --objective {shlex.quote(spec)}" if isinstance(spec, str) else command


def _int_at_least(text: str, minimum: int, wording: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be {wording}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 1."""
    return _int_at_least(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 0."""
    return _int_at_least(text, 0, ">= 0")


def positive_float(text: str) -> float:
    """An ``argparse`` type: a finite number > 0 (seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


#: what ``--seeds`` accepts, for its help and its errors
SEEDS_FORMS = "N, an inclusive range A-B (0-4 is 0,1,2,3,4), or a comma list of both (0-2,7)"


def seed_list(text: str) -> list[int]:
    """An ``argparse`` type: ``--seeds`` as :data:`SEEDS_FORMS` describes; seeds are >= 0."""
    from ..experiments.runner import parse_seeds

    try:
        seeds = parse_seeds(text)
    except ValueError:
        seeds = None
    if seeds is None or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: give {SEEDS_FORMS}; seeds are >= 0")
    return seeds


def natural_method(space: Any) -> str:
    """The method of the paper a space's kind comes from: ``nasbot`` for architectures, ``bofm`` for spaces with
    continuous variables (mixed), ``combo`` otherwise. What ``graphbo run`` and ``graphbo compare`` use when
    no method is given."""
    if type(space).__name__ == "ArchitectureSpace":
        return "nasbot"
    return "combo" if getattr(space, "is_discrete", True) else "bofm"


def method_names() -> str:
    """``auto`` and every method of :data:`graphbo.optimizers.METHODS`, aliases in brackets (``rs (random)``)."""
    from ..optimizers import METHODS

    first: dict[Any, list[str]] = {}
    for name, cls in METHODS.items():
        first.setdefault(cls, []).append(name)
    return "auto, " + ", ".join(names[0] + (f" ({', '.join(names[1:])})" if names[1:] else "")
                                for names in first.values())


def run_method(method: str | None, space: Any, budget: int, storage: str | None,
               args_outcomes: argparse.Namespace | None = None) -> str:
    """The method a ``graphbo run`` uses: ``method`` unless it is ``None`` or ``auto``; then the method of the
    existing study file ``storage`` (so a longer budget continues it), else
    :func:`graphbo.optimizers.auto.choose_method`'s for ``space`` and ``budget`` (docs/auto.md), without a trust
    region when ``args_outcomes`` gives several ``directions`` or ``n_constraints``."""
    from ..optimizers.auto import AUTO, choose_method

    if method is not None and method.lower() != AUTO:
        return method
    if storage and os.path.exists(storage):
        from ..storage.base import StorageError
        from ..storage.info import read_study_info

        try:
            kept = read_study_info(storage).get("method")
        except (StorageError, OSError):  # opening the study reports it
            kept = None
        if isinstance(kept, str):
            return kept
    directions = getattr(args_outcomes, "directions", None) or []
    several = len(directions) > 1 or bool(getattr(args_outcomes, "n_constraints", None))
    return choose_method(space, budget, single_objective=not several)


#: placeholder in a help text, replaced by :func:`method_names` when the help is shown
METHODS_PLACEHOLDER = "{methods}"


class MethodListFormatter(argparse.HelpFormatter):
    """Fills :data:`METHODS_PLACEHOLDER` with the registry's methods, only when ``--help`` is shown
    (building the list imports the optimizers, and so torch)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if text and METHODS_PLACEHOLDER in text:
            text = text.replace(METHODS_PLACEHOLDER, method_names())
        return text

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)  # keeps bofm-modlap whole


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
    parser.add_argument("--benchmark-option", action="append", metavar="KEY=VALUE", default=None,
                        help="keyword argument of the benchmark's constructor, value read as JSON (e.g. "
                             "--benchmark-option graph=path for pestcontrol); repeatable")


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
    for key, value in parse_key_values(getattr(args, "benchmark_option", None), "--benchmark-option").items():
        own_flag = BENCHMARK_FLAGS.get(key)
        if own_flag:
            raise ValueError(f"--benchmark-option {key}: use {own_flag}")
        if key not in params:
            raise ValueError(f"--benchmark-option {key}: benchmark {args.benchmark!r} takes no option {key!r}; "
                             f"it takes {sorted(k for k in params if k not in BENCHMARK_FLAGS)}")
        opts[key] = value
    return opts


# constructor options that have a flag of their own
BENCHMARK_FLAGS = {"path": "--wcnf", "lamda": "--lamda", "epochs": "--epochs", "seed": "--instance-seed"}


def parse_key_values(items: list[str] | None, flag: str) -> dict:
    """``["ard=false", "kappa=3"]`` -> ``{"ard": False, "kappa": 3}``: values are read as JSON
    (numbers, true/false, null, lists) and otherwise kept as strings; ``flag`` names the option in errors."""
    options: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"{flag} takes KEY=VALUE, got {item!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def parse_method_options(items: list[str] | None) -> dict:
    """``["ard=false", "kappa=3"]`` -> ``{"ard": False, "kappa": 3}``: values are read as JSON
    (numbers, true/false, null, lists) and otherwise kept as strings."""
    options = parse_key_values(items, "--option")
    for key in options:
        own_flag = {"seed": "--seeds", "n_initial": "--n-initial"}.get(key)
        if own_flag:
            raise ValueError(f"--option {key}: use {own_flag}")
    return options


def config_text(objective: Any, config: dict[str, Any]) -> str:
    """How the ``graphbo`` command prints a configuration: JSON of the variables' own values (NumPy numbers as
    numbers); for a benchmark whose variables are coordinates of another domain (a ``native_config(config)``
    method, e.g. a grid on ``[0, 1]`` standing for Branin's ``x1`` in ``[-5, 10]``), the native values first and
    the space's values after them."""
    from ..storage.jsonio import dumps

    text = dumps(_shown(config))
    native = getattr(objective, "native_config", None)
    if callable(native):
        return f"{dumps(_shown(native(config)))} (the space's values: {text})"
    return text


def _shown(value: Any) -> Any:
    """``value`` with every float at 12 significant digits, for printing: a grid value computed as
    ``-5 + 81 * 0.1`` shows as 3.1, not 3.1000000000000014 (the study stores the exact value)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shown(v) for v in value]
    return value


def progress(quiet: bool, best: float | None = None, direction: str = "minimize") -> Callable[..., None]:
    """A ``minimize`` callback printing one line per complete evaluation (a header before the first): the
    trial number (from 0, :attr:`graphbo.Trial.number`), its value, the best so far (the highest when
    ``direction`` is ``"maximize"``; ``best``: that of earlier sessions) and its seconds."""
    pick = max if direction == "maximize" else min
    state: list[Any] = [best, True]

    def callback(number, config, value, optimizer, seconds):
        state[0] = value if state[0] is None else pick(state[0], value)
        if not quiet:
            if state[1]:
                print(f"{'trial':>6} {'value':>12} {'best':>12} {'seconds':>8}")
                state[1] = False
            print(f"{number:>6} {value:>12.5g} {state[0]:>12.5g} {seconds:>8.2f}", flush=True)

    return callback


def minimize_study(prog: str, objective: Callable[[dict], Any], space: Any, path: str, method: str, budget: int,
                   seed: int, method_options: dict, args: argparse.Namespace) -> int:
    """Run (or continue) the study in ``path`` on ``objective`` (a benchmark or a user's function);
    Ctrl-C leaves it resumable. Returns the exit code."""
    from ..loop import minimize
    from ..storage.base import StorageError
    from ..storage.info import read_study_info
    from ..threads import limit_threads

    if args.workers < 1 or (args.timeout is not None and args.timeout <= 0):
        print(f"{prog}: --workers must be >= 1 and --timeout > 0", file=sys.stderr)
        return 2
    try:
        info = read_study_info(path) if os.path.exists(path) else {}
        finished = info.get("n_complete", 0) + info.get("n_failed", 0)
        if finished > budget:
            print(f"{prog}: {path} already has {finished} finished trials, more than the budget {budget}; give "
                  f"--budget {finished} or more", file=sys.stderr)
            return 2
        best = info.get("best_value")
        with limit_threads(args.threads):
            result = minimize(objective, space, method=method, budget=budget, seed=seed,
                              callback=progress(args.quiet, best, info.get("direction", "minimize")),
                              storage=path, n_workers=args.workers, timeout=args.timeout,
                              show_progress=False,  # the lines of `progress` are the command's progress
                              **method_options)
    except StorageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(("\n" if sys.stderr.isatty() else "") + f"{prog}: interrupted; the finished trials are saved; "
              f"continue with: {resume_command(path)}", file=sys.stderr, flush=True)
        return 130
    failed = f" ({result.n_failed} failed evaluations)" if result.n_failed else ""
    if len(result.directions) > 1 and result.pareto_front:
        print(f"Pareto front: {len(result.pareto_front)} trials, hypervolume {result.hypervolume():.6g} "
              f"(objectives {', '.join(result.directions)}){failed}")
        for t in result.pareto_front[:10]:
            print(f"  {t.attrs['values']} at {config_text(objective, t.config)}")
        print(f"study saved in {path}")
        return 0
    if result.best is None and result.n_constraints and result.n_complete:
        print(f"no feasible trial: each of the {result.n_complete} complete trials has a constraint value > 0; "
              f"see the trials in {path}")
        return 1
    if result.best is None:
        print(f"every evaluation failed ({result.n_failed}); see the trials in {path}")
        return 1
    print(f"best value {result.best.value:.6g} at {config_text(objective, result.best.config)}"
          + (f" ({result.n_failed} failed evaluations)" if result.n_failed else ""))
    print(f"study saved in {path}")
    return 0
