"""Command line: ``graphbo run``, ``graphbo resume``, ``graphbo benchmarks``, ...

Heavy modules (torch) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Callable, Sequence

__all__ = ["main", "load_objective", "ImportedObjective", "ObjectiveError"]


def _cmd_benchmarks(args: argparse.Namespace) -> int:
    from .benchmarks import REGISTRY

    width = max(len(n) for n in REGISTRY)
    for name, info in REGISTRY.items():
        needs = " ".join(f"--{'wcnf' if k == 'path' else k} PATH" for k in info.needs)
        print(f"{name:<{width}}  {info.summary}" + (f"  [needs {needs}]" if needs else ""))
    return 0


def _default_trace(name: str, method: str, seed: int) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"{name}-{method}-seed{seed}-{stamp}.jsonl")


def _cmd_run(args: argparse.Namespace) -> int:
    if args.space is not None or args.objective is not None:
        if args.benchmark is not None:
            print(f"graphbo run: give either a benchmark ({args.benchmark!r}) or --space FILE --objective "
                  "MODULE:FUNCTION, not both", file=sys.stderr)
            return 2
        return _run_user(args)
    if args.benchmark is None:
        print("graphbo run: give a benchmark (see `graphbo benchmarks`) or your own problem with "
              "--space FILE --objective MODULE:FUNCTION", file=sys.stderr)
        return 2
    from .benchmarks import REGISTRY, load_benchmark

    if args.benchmark not in REGISTRY:
        print(f"graphbo run: unknown benchmark {args.benchmark!r}; available: {sorted(REGISTRY)}", file=sys.stderr)
        return 2
    if args.benchmark == "maxsat" and not args.wcnf:
        print("graphbo run maxsat: give the instance with --wcnf PATH", file=sys.stderr)
        return 2
    try:
        bench = load_benchmark(args.benchmark, **_benchmark_options(args, args.seed))
    except (ValueError, FileNotFoundError) as exc:
        print(f"graphbo run: {exc}", file=sys.stderr)
        return 2
    if args.method is None:  # combo; the architecture benchmarks default to nasbot
        args.method = getattr(bench, "default_method", "combo")
    budget = args.budget if args.budget is not None else bench.default_budget
    n_initial = args.n_initial if args.n_initial is not None else bench.default_n_initial
    if budget < 1 or n_initial < 0:
        print("graphbo run: --budget must be >= 1 and --n-initial >= 0", file=sys.stderr)
        return 2
    if args.storage:
        return _run_study(args, bench, budget, n_initial)
    if args.workers != 1 or args.timeout is not None:
        print("graphbo run: --workers and --timeout need --storage PATH (a study file)", file=sys.stderr)
        return 2
    trace_path = args.trace or _default_trace(bench.name, args.method, args.seed)
    if os.path.exists(trace_path):
        print(f"graphbo run: {trace_path} exists; choose another --trace (nothing is overwritten)", file=sys.stderr)
        return 2

    from .loop import make_optimizer
    from .optimizers.combo import torch_threads

    try:
        opt = make_optimizer(args.method, bench.space, seed=args.seed, n_initial=n_initial)
    except (ValueError, TypeError) as exc:  # TypeError: a method for another kind of space
        print(f"graphbo run: {exc}", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(trace_path) or ".", exist_ok=True)
    meta = {"type": "run", "benchmark": bench.name, "method": args.method, "seed": args.seed,
            "budget": budget, "n_initial": n_initial, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if not args.quiet:
        print(f"graphbo: {args.method} on {bench.name}, budget {budget} ({n_initial} initial), seed {args.seed}")
        print(f"{'eval':>6} {'value':>12} {'best':>12} {'seconds':>8}")
    with open(trace_path, "x") as trace, torch_threads(args.threads):
        trace.write(json.dumps(meta) + "\n")
        trace.flush()
        for i in range(budget):
            t0 = time.perf_counter()
            config = opt.ask()
            t1 = time.perf_counter()
            value = float(bench(config))
            t2 = time.perf_counter()
            opt.tell(config, value)
            rec = {"type": "eval", "i": i, "config": config, "value": value, "best": opt.best.value,
                   "suggest_seconds": round(t1 - t0, 6), "evaluate_seconds": round(t2 - t1, 6)}
            trace.write(json.dumps(rec, default=str) + "\n")
            trace.flush()
            if not args.quiet:
                print(f"{i + 1:>6} {value:>12.5g} {opt.best.value:>12.5g} {t2 - t0:>8.2f}", flush=True)
    best = opt.best
    print(f"best value {best.value:.6g} at {json.dumps(best.config, default=str)}")
    print(f"trace written to {trace_path}")
    return 0


def _progress(quiet: bool, best: float | None = None):
    """A ``minimize`` callback printing one line per complete evaluation (a header before the first)."""
    best = [float("inf") if best is None else best, True]

    def callback(number, config, value, optimizer, seconds):
        best[0] = min(best[0], value)
        if not quiet:
            if best[1]:
                print(f"{'trial':>6} {'value':>12} {'best':>12} {'seconds':>8}")
                best[1] = False
            print(f"{number + 1:>6} {value:>12.5g} {best[0]:>12.5g} {seconds:>8.2f}", flush=True)

    return callback


def _minimize_study(prog: str, objective, space, path: str, method: str, budget: int, seed: int,
                    method_options: dict, args: argparse.Namespace) -> int:
    """Run (or continue) the study in ``path`` on ``objective`` (a benchmark or a user's function);
    Ctrl-C leaves it resumable."""
    from .loop import minimize
    from .optimizers.combo import torch_threads
    from .study import StorageError, read_study_info

    if args.workers < 1 or (args.timeout is not None and args.timeout <= 0):
        print(f"{prog}: --workers must be >= 1 and --timeout > 0", file=sys.stderr)
        return 2
    try:
        best = read_study_info(path).get("best_value") if os.path.exists(path) else None
        with torch_threads(args.threads):
            result = minimize(objective, space, method, budget=budget, seed=seed,
                              callback=_progress(args.quiet, best),
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


def _run_study(args: argparse.Namespace, bench, budget: int, n_initial: int) -> int:
    """``graphbo run --storage PATH``: a study file that ``graphbo resume`` can continue."""
    from .study import StorageError, Study, read_study_info

    path = args.storage
    bench_options = _benchmark_options(args, args.seed)
    attrs = {"benchmark": args.benchmark, "benchmark_options": bench_options, "budget": budget}
    method_options = {"n_initial": n_initial}
    try:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            info = read_study_info(path)
            stored = info["user_attrs"]
            if stored.get("benchmark") != args.benchmark or stored.get("benchmark_options") != json.loads(
                    json.dumps(bench_options)):
                other = (f"{stored['benchmark']} {stored.get('benchmark_options', '')}" if "benchmark" in stored
                         else f"objective {stored['objective']}" if "objective" in stored else "another objective")
                print(f"graphbo run: {path} is a study of {other}, not of {args.benchmark} {bench_options}; "
                      "choose another --storage (nothing is overwritten)", file=sys.stderr)
                return 2
            with Study(bench.space, args.method, storage=path, seed=args.seed, **method_options) as study:
                if stored.get("budget") != budget:
                    study.set_user_attr("budget", budget)  # what `graphbo resume` continues to
            print(f"graphbo: continuing {path} ({info['n_complete'] + info['n_failed']} finished trials)")
        else:
            with Study(bench.space, args.method, storage=path, seed=args.seed, **method_options) as study:
                for key, value in attrs.items():
                    study.set_user_attr(key, value)
    except (StorageError, ValueError, TypeError) as exc:
        print(f"graphbo run: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(f"graphbo: {args.method} on {bench.name}, budget {budget} ({n_initial} initial), seed {args.seed}, "
              f"{args.workers} worker(s), study {path}")
    return _minimize_study("graphbo run", bench, bench.space, path, args.method, budget, args.seed, method_options,
                           args)


def _cmd_resume(args: argparse.Namespace) -> int:
    from .benchmarks import REGISTRY, load_benchmark
    from .study import StorageError, read_study_info

    try:
        info = read_study_info(args.path)
    except StorageError as exc:
        print(f"graphbo resume: {exc}", file=sys.stderr)
        return 2
    attrs = info.get("user_attrs") or {}
    if "objective" in attrs:
        return _resume_user(args, info, attrs)
    name = attrs.get("benchmark")
    if name not in REGISTRY:
        print(f"graphbo resume: {args.path} was not created by `graphbo run ... --storage` (it names no built-in "
              f"benchmark{'' if name is None else f'; it names {name!r}'} and no objective), and a study does not "
              "store its objective; continue it from Python with graphbo.minimize(objective, space, method=..., "
              "seed=..., "
              f"storage={args.path!r}) and the same space, method ({info['method']}), seed ({info['seed']}) and "
              f"options ({info['method_options']})", file=sys.stderr)
        return 2
    try:
        bench = load_benchmark(name, **attrs.get("benchmark_options", {}))
    except (ValueError, FileNotFoundError, TypeError) as exc:
        print(f"graphbo resume: cannot rebuild benchmark {name!r} of {args.path}: {exc}", file=sys.stderr)
        return 2
    budget = args.budget if args.budget is not None else int(attrs.get("budget", bench.default_budget))
    if budget < 1:
        print("graphbo resume: --budget must be >= 1", file=sys.stderr)
        return 2
    finished = info["n_complete"] + info["n_failed"]
    if not args.quiet:
        print(f"graphbo: resuming {args.path}: {info['method']} on {name}, seed {info['seed']}, "
              f"{finished}/{budget} finished, {info['n_running']} interrupted")
    return _minimize_study("graphbo resume", bench, bench.space, args.path, info["method"], budget, info["seed"],
                           info["method_options"], args)


# -- a user's own problem: --space FILE --objective MODULE:FUNCTION ------------------------------------------
#: random initial evaluations of `graphbo run --space` when --n-initial is not given (the optimizers' default)
_USER_N_INITIAL = 10

#: objectives already imported in this process, by (spec, search path)
_LOADED: dict = {}


class ObjectiveError(ValueError):
    """An ``--objective`` spec that cannot be imported; the message is one line."""


def _split_spec(spec: str) -> tuple[str, str, bool]:
    """``(module or file, attribute path, is_file)`` of ``MODULE:ATTR`` or ``path/to/file.py:ATTR``."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ObjectiveError(f"--objective must be MODULE:FUNCTION or path/to/file.py:FUNCTION, got {spec!r}")
    if not all(part.isidentifier() for part in attr.split(".")):
        raise ObjectiveError(f"--objective {spec!r}: {attr!r} is not a Python name (FUNCTION or OBJECT.METHOD)")
    is_file = target.endswith(".py") or "/" in target or os.sep in target
    if not is_file and not all(part.isidentifier() for part in target.split(".")):
        raise ObjectiveError(f"--objective {spec!r}: {target!r} is neither a module name (package.module) nor a "
                             ".py file")
    return target, attr, is_file


def _import_error_line(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}"


def load_objective(spec: str, search_path: Sequence[str] = ()) -> "Callable":
    """The callable named by ``spec`` (``package.module:function``, ``module:obj.method`` or
    ``path/to/file.py:function``), importing its module.

    ``search_path`` folders are put at the front of ``sys.path`` first (the
    ``graphbo`` command passes the current directory). Raises
    :class:`ObjectiveError` with a one-line message when the module or file is
    missing, its import fails, the attribute is missing or is not callable.
    """
    import importlib
    import importlib.util
    import zlib

    key = (spec, tuple(search_path))
    if key in _LOADED:
        return _LOADED[key]
    target, attr, is_file = _split_spec(spec)
    for folder in reversed(list(search_path)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    if is_file:
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise ObjectiveError(f"objective file {target} not found")
        stem = os.path.splitext(os.path.basename(path))[0]
        private = f"_graphbo_objective_{zlib.crc32(path.encode())}"
        where = target
        module = next((m for m in (sys.modules.get(stem), sys.modules.get(private))
                       if m is not None and os.path.abspath(getattr(m, "__file__", None) or "") == path), None)
        if module is None:  # import it under its own name if free
            name = stem if stem.isidentifier() and stem not in sys.modules else private
            folder = os.path.dirname(path)
            if folder not in sys.path:
                sys.path.insert(0, folder)  # its sibling modules
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None:
                raise ObjectiveError(f"objective file {target} cannot be imported as a Python module")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            try:
                module_spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[name]
                raise ObjectiveError(f"importing objective file {target} failed: {_import_error_line(exc)}") from None
    else:
        where = f"module {target!r}"
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (target == exc.name or target.startswith(exc.name + ".")):
                raise ObjectiveError(
                    f"objective module {target!r} not found (searched the current directory {os.getcwd()} and "
                    "sys.path; set PYTHONPATH, or give path/to/file.py:FUNCTION)") from None
            raise ObjectiveError(f"importing objective module {target!r} failed: {_import_error_line(exc)}") from None
        except Exception as exc:
            raise ObjectiveError(f"importing objective module {target!r} failed: {_import_error_line(exc)}") from None
    obj = module
    for i, part in enumerate(attr.split(".")):
        if not hasattr(obj, part):
            owner = where if i == 0 else f"{'.'.join(attr.split('.')[:i])!r} in {where}"
            names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                           and getattr(v, "__module__", None) == module.__name__)
            hint = f"; it defines {', '.join(names[:10])}" if names and i == 0 else ""
            raise ObjectiveError(f"objective {spec!r}: {owner} has no attribute {part!r}{hint}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ObjectiveError(f"objective {spec!r} is not callable (it is of type {type(obj).__name__}); it must be a "
                             "function taking a configuration dict and returning a number")
    _LOADED[key] = obj
    return obj


class ImportedObjective:
    """A user's objective named by its import spec; pickled as the spec, so worker processes re-import it."""

    def __init__(self, spec: str, search_path: Sequence[str] = ()):
        self.spec = spec
        self.search_path = tuple(search_path)
        self._function = None

    def resolve(self) -> "Callable":
        if self._function is None:
            self._function = load_objective(self.spec, self.search_path)
        return self._function

    def __call__(self, config):
        return self.resolve()(config)

    def __getstate__(self):
        return {"spec": self.spec, "search_path": self.search_path}

    def __setstate__(self, state):
        self.spec, self.search_path, self._function = state["spec"], tuple(state["search_path"]), None

    def __repr__(self) -> str:
        return f"ImportedObjective({self.spec!r})"


def _stored_spec(spec: str) -> str:
    """``spec`` with a file path made absolute, so that `graphbo resume` finds it from any folder."""
    target, attr, is_file = _split_spec(spec)
    return f"{os.path.abspath(target)}:{attr}" if is_file else spec


def _default_storage(name: str, method: str, seed: int) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"{name}-{method}-seed{seed}-{stamp}.db")


def _run_user(args: argparse.Namespace) -> int:
    """``graphbo run --space FILE --objective SPEC``: a study of the user's own function."""
    prog = "graphbo run"
    if args.space is None or args.objective is None:
        missing = "--objective MODULE:FUNCTION" if args.space is not None else "--space FILE"
        print(f"{prog}: --space and --objective go together; give {missing} too", file=sys.stderr)
        return 2
    benchmark_only = [flag for flag, value in (("--wcnf", args.wcnf), ("--lamda", args.lamda), ("--epochs", args.epochs),
                                               ("--instance-seed", args.instance_seed), ("--trace", args.trace))
                      if value is not None]
    if benchmark_only:
        print(f"{prog}: {', '.join(benchmark_only)} apply to benchmarks only; with --space the run is a study file "
              "(--storage PATH)", file=sys.stderr)
        return 2
    if args.budget is None:
        print(f"{prog}: give the number of evaluations with --budget N", file=sys.stderr)
        return 2
    n_initial = args.n_initial if args.n_initial is not None else _USER_N_INITIAL
    if args.budget < 1 or n_initial < 0:
        print(f"{prog}: --budget must be >= 1 and --n-initial >= 0", file=sys.stderr)
        return 2
    if args.workers < 1 or (args.timeout is not None and args.timeout <= 0):
        print(f"{prog}: --workers must be >= 1 and --timeout > 0", file=sys.stderr)
        return 2
    from .spaces.io import SpaceFileError, load_space, space_to_dict

    try:
        space = load_space(args.space)
    except SpaceFileError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if args.method is None:
        args.method = "combo" if space.is_discrete else "bofm"
    cwd = os.getcwd()
    try:
        load_objective(args.objective, [cwd])  # errors name the spec as given
        spec = _stored_spec(args.objective)
        objective = ImportedObjective(spec, [cwd])
        objective.resolve()
    except ObjectiveError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    name = os.path.splitext(os.path.basename(args.space))[0]
    path = args.storage or _default_storage(name, args.method, args.seed)
    space_dict = space_to_dict(space)
    attrs = {"objective": spec, "objective_cwd": cwd, "space": space_dict,
             "space_file": os.path.abspath(args.space), "budget": args.budget}
    method_options = {"n_initial": n_initial}
    from .study import StorageError, Study, read_study_info

    try:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            info = read_study_info(path)
            stored = info["user_attrs"]
            if stored.get("objective") != spec or stored.get("space") != space_dict:
                if stored.get("objective") == spec:
                    what = f"{spec} on another space"
                elif "objective" in stored:
                    what = f"objective {stored['objective']}"
                elif "benchmark" in stored:
                    what = f"benchmark {stored['benchmark']}"
                else:
                    what = "another objective"
                print(f"{prog}: {path} is a study of {what}, not of {spec} on {args.space}; choose another "
                      "--storage (nothing is overwritten)", file=sys.stderr)
                return 2
            with Study(space, args.method, storage=path, seed=args.seed, **method_options) as study:
                if stored.get("budget") != args.budget:
                    study.set_user_attr("budget", args.budget)
            print(f"graphbo: continuing {path} ({info['n_complete'] + info['n_failed']} finished trials)")
        else:
            with Study(space, args.method, storage=path, seed=args.seed, **method_options) as study:
                for key, value in attrs.items():
                    study.set_user_attr(key, value)
    except (StorageError, ValueError, TypeError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(f"graphbo: {args.method} on {args.space} minimising {args.objective}, budget {args.budget} "
              f"({n_initial} initial), seed {args.seed}, {args.workers} worker(s), study {path}")
    return _minimize_study(prog, objective, space, path, args.method, args.budget, args.seed, method_options, args)


def _resume_user(args: argparse.Namespace, info: dict, attrs: dict) -> int:
    """`graphbo resume` of a study written by `graphbo run --space ... --objective ...`."""
    from .spaces.io import SpaceFileError, space_from_dict

    prog = "graphbo resume"
    spec = attrs["objective"]
    try:
        space = space_from_dict(attrs.get("space"), source=f"{args.path} (its stored space)")
    except SpaceFileError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    search = [os.getcwd()] + [d for d in [attrs.get("objective_cwd")] if isinstance(d, str) and d != os.getcwd()]
    try:
        objective = ImportedObjective(spec, search)
        objective.resolve()
    except ObjectiveError as exc:
        print(f"{prog}: {args.path}: cannot re-import its objective: {exc}", file=sys.stderr)
        return 2
    budget = args.budget if args.budget is not None else int(attrs.get("budget", 0))
    if budget < 1:
        print(f"{prog}: --budget must be >= 1", file=sys.stderr)
        return 2
    if not args.quiet:
        finished = info["n_complete"] + info["n_failed"]
        print(f"graphbo: resuming {args.path}: {info['method']} minimising {spec}, seed {info['seed']}, "
              f"{finished}/{budget} finished, {info['n_running']} interrupted")
    return _minimize_study(prog, objective, space, args.path, info["method"], budget, info["seed"],
                           info["method_options"], args)


def _benchmark_options(args: argparse.Namespace, seed: int) -> dict:
    """Constructor options of the benchmark for one run seed."""
    import inspect

    from .benchmarks import REGISTRY

    info = REGISTRY[args.benchmark]
    module, cls = info.target.split(":")
    import importlib

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


def _default_compare_methods(benchmark: str) -> str:
    """The method of the paper a benchmark comes from, and its random-search baseline."""
    from .benchmarks import load_benchmark

    space = load_benchmark(benchmark).space if benchmark != "maxsat" else None
    if space is None:
        return "combo,rs"
    if type(space).__name__ == "ArchitectureSpace":
        return "nasbot,rand,ea"
    return "bofm,rs" if len(getattr(space, "continuous_indices", ())) else "combo,rs"


def _parse_method_options(items: list[str] | None) -> dict:
    """``["ard=false", "kappa=3"]`` -> ``{"ard": False, "kappa": 3}``: values are read as JSON
    (numbers, true/false, null, lists) and otherwise kept as strings."""
    import json

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


def _cmd_compare(args: argparse.Namespace) -> int:
    from .benchmarks import REGISTRY
    from .experiments.runner import RunSpec, TraceError, compare, make_run, parse_seeds

    if args.benchmark not in REGISTRY:
        print(f"graphbo compare: unknown benchmark {args.benchmark!r}; see `graphbo benchmarks`", file=sys.stderr)
        return 2
    if args.benchmark == "maxsat" and not args.wcnf:
        print("graphbo compare maxsat: give the instance with --wcnf PATH", file=sys.stderr)
        return 2
    from .optimizers import METHODS

    if args.methods is None:
        args.methods = _default_compare_methods(args.benchmark)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        print(f"graphbo compare: unknown method(s) {unknown}; choose from {sorted(METHODS)}", file=sys.stderr)
        return 2
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as exc:
        print(f"graphbo compare: {exc}", file=sys.stderr)
        return 2
    from .benchmarks import load_benchmark

    try:
        probe = load_benchmark(args.benchmark, **_benchmark_options(args, seeds[0]))
    except (ValueError, FileNotFoundError) as exc:
        print(f"graphbo compare: {exc}", file=sys.stderr)
        return 2
    budget = args.budget or probe.default_budget
    n_initial = args.n_initial if args.n_initial is not None else probe.default_n_initial
    try:
        method_options = _parse_method_options(args.option)
    except ValueError as exc:
        print(f"graphbo compare: {exc}", file=sys.stderr)
        return 2
    specs = [RunSpec(args.benchmark, m, s, budget, n_initial, _benchmark_options(args, s), dict(method_options))
             for m in methods for s in seeds]
    if method_options:
        for spec in specs[:: len(seeds)]:  # one construction per method: a wrong option fails now, not in a worker
            try:
                make_run(spec)
            except (TypeError, ValueError) as exc:
                print(f"graphbo compare: method {spec.method!r} does not take {method_options}: {exc}", file=sys.stderr)
                return 2
    print(f"graphbo compare: {len(specs)} runs ({', '.join(methods)} x {len(seeds)} seeds), budget {budget}, "
          f"{args.workers} worker(s), traces under {args.out}", flush=True)
    try:
        compare(specs, args.out, n_workers=args.workers, log=lambda m: print(m, flush=True))
    except TraceError as exc:
        print(f"graphbo compare: {exc}; give these runs another --out", file=sys.stderr)
        return 2
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from .experiments.report import write_report

    missing = [d for d in args.dir if not os.path.isdir(d)]
    if missing:
        print(f"graphbo report: no such folder {', '.join(missing)}", file=sys.stderr)
        return 2
    notes = None
    if args.notes is not None:
        try:
            with open(args.notes) as fh:
                notes = fh.read()
        except OSError as exc:
            print(f"graphbo report: cannot read --notes: {exc}", file=sys.stderr)
            return 2
    path = write_report(args.dir, out=args.out, title=args.title, notes=notes)
    print(f"report written to {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphbo", description="Bayesian optimisation on graphs (COMBO).")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("benchmarks", help="list the built-in benchmarks")
    p.set_defaults(func=_cmd_benchmarks)

    p = sub.add_parser(
        "run", help="optimise a built-in benchmark, or your own function over a space file",
        description="Optimise a built-in benchmark (`graphbo run BENCHMARK`), or your own function over a space "
                    "file (`graphbo run --space space.yaml --objective package.module:function --budget N`; see "
                    "docs/spaces.md). The function takes a configuration dict and returns the value to minimise.")
    p.add_argument("benchmark", nargs="?", default=None,
                   help="benchmark name (see `graphbo benchmarks`); omit it with --space")
    p.add_argument("--space", default=None,
                   help="YAML or JSON space file (instead of a benchmark; needs --objective and --budget)")
    p.add_argument("--objective", default=None,
                   help="the function to minimise, MODULE:FUNCTION (importable from the current directory or "
                        "PYTHONPATH) or path/to/file.py:FUNCTION")
    p.add_argument("--method", default=None,
                   help="combo (default; with --space: combo for discrete spaces, bofm for mixed ones), bofm, rs, "
                        "sa, re, bocs, tpe, smac")
    p.add_argument("--budget", type=int, default=None,
                   help="evaluations, initial ones included (default: the paper's; required with --space)")
    p.add_argument("--n-initial", type=int, default=None,
                   help=f"random initial evaluations (default: the paper's; {_USER_N_INITIAL} with --space)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wcnf", default=None, help="path of a .wcnf instance (maxsat)")
    p.add_argument("--lamda", type=float, default=None, help="regularisation (ising, contamination)")
    p.add_argument("--epochs", type=int, default=None,
                   help="training epochs per evaluation (benchmarks that train networks: nas-*, nasbinary)")
    p.add_argument("--instance-seed", type=int, default=None,
                   help="problem-instance seed of random benchmarks (default: seed mod 5)")
    p.add_argument("--trace", default=None, help="JSON-lines trace file (default: runs/NAME-METHOD-seedS-TIME.jsonl)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    p.add_argument("--quiet", action="store_true", help="print only the result")
    p.add_argument("--storage", default=None,
                   help="SQLite study file instead of a trace: crash-safe, continued by `graphbo resume PATH` "
                        "(with --space a study is always written; default runs/SPACE-METHOD-seedS-TIME.db)")
    p.add_argument("--workers", type=int, default=1,
                   help="parallel evaluations (processes; needs --storage or --space)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per evaluation; longer ones are recorded as failed (needs --storage or --space)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("resume", help="continue a study file written by `graphbo run --storage`")
    p.add_argument("path", help="the study's SQLite file")
    p.add_argument("--budget", type=int, default=None, help="total evaluations (default: the study's budget)")
    p.add_argument("--workers", type=int, default=1, help="parallel evaluations (processes)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per evaluation; longer ones fail")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    p.add_argument("--quiet", action="store_true", help="print only the result")
    p.set_defaults(func=_cmd_resume)

    p = sub.add_parser("compare", help="run several methods x seeds on a benchmark (resumable, parallel)")
    p.add_argument("benchmark")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods (default: the paper's method and random search for the benchmark: "
                        "combo,rs for discrete, bofm,rs for mixed, nasbot,rand,ea for architecture benchmarks)")
    p.add_argument("--seeds", default="0-4", help="e.g. 0-24 or 0,3,5")
    p.add_argument("--budget", type=int, default=None)
    p.add_argument("--n-initial", type=int, default=None)
    p.add_argument("--out", required=True, help="folder for the traces (METHOD/seedS.jsonl)")
    p.add_argument("--workers", type=int, default=1, help="parallel processes")
    p.add_argument("--wcnf", default=None, help="path of a .wcnf instance (maxsat)")
    p.add_argument("--lamda", type=float, default=None, help="regularisation (ising, contamination)")
    p.add_argument("--epochs", type=int, default=None,
                   help="training epochs per evaluation (benchmarks that train networks: nas-*, nasbinary)")
    p.add_argument("--instance-seed", type=int, default=None,
                   help="problem-instance seed of random benchmarks (default: run seed mod 5)")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="keyword argument for every method's constructor, value read as JSON "
                        "(e.g. --option ard=true); repeatable. Recorded in each trace: give such runs their own --out")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("report", help="markdown table and plots from comparison traces")
    p.add_argument("dir", nargs="+", help="folder(s) of comparison traces")
    p.add_argument("--out", default=None, help="markdown file (default: report.md in the first DIR)")
    p.add_argument("--title", default="Results")
    p.add_argument("--notes", default=None, help="markdown file whose text goes under the report's header")
    p.set_defaults(func=_cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
