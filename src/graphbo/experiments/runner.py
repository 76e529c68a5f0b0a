"""Resumable benchmark runs and method comparisons.

A run is one (benchmark, method, seed) with a budget. Its trace is a
JSON-lines file: a first ``run`` line describing it, then one ``eval`` line
per evaluation, written and flushed to disk before the next suggestion, with
the optimizer's state after that evaluation (:meth:`Optimizer.get_state`).
Resuming replays the recorded evaluations through ``tell`` and restores the
last state, so a killed run continues exactly where it stopped and loses at
most the evaluation in flight. A finished run is skipped.

When a run finishes, its trace is compacted: the optimizer state is kept on
the last line only (all that resuming or extending it needs), which keeps
committed result files small (BOCS's state is tens of kilobytes per line).

A multi-fidelity method (``multi_fidelity = True``: BOHB) needs a benchmark
with fidelities (:mod:`graphbo.benchmarks.fidelity`): each asked
configuration is evaluated with ``bench.evaluate(config, epochs=k)`` at the
fidelity ``k`` the method chose, each eval line records ``"fidelity": k``,
the run line records ``"max_fidelity"``, and the budget counts
full-fidelity-equivalent evaluations (the sum of ``k / max_fidelity``), as
BO-FM plots BOHB (Sec. 5.3: "BOHB on 100-th evaluation is the result of BOHB
having consumed 2,500 epochs (25 epochs x 100)"). Resuming replays the eval
lines through ``tell(config, value, fidelity=k)``.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from ..benchmarks import load_benchmark

__all__ = ["RunSpec", "run", "compare", "read_trace", "compact_trace", "TraceError", "RunLockedError", "parse_seeds",
           "trace_finished", "fidelity_best_so_far"]

FORMAT_VERSION = 1


class TraceError(ValueError):
    """A trace file is malformed or belongs to a different run."""


@dataclass(frozen=True)
class RunSpec:
    """What identifies a run; its trace must match it to be resumed."""

    benchmark: str
    method: str
    seed: int
    budget: int
    n_initial: int
    benchmark_options: dict[str, Any] = field(default_factory=dict)
    method_options: dict[str, Any] = field(default_factory=dict)

    def key(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items()}


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,3,7"`` -> [0, 3, 7]; mixtures allowed."""
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part[1:]:
            a, b = part.split("-", 1) if not part.startswith("-") else (part, part)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError(f"bad seed range {part!r}")
            seeds.extend(range(lo, hi + 1))
        else:
            seeds.append(int(part))
    if not seeds:
        raise ValueError(f"no seeds in {text!r}")
    return seeds


def read_trace(path: str) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """Parse a trace: ``(run line, eval lines, byte length of the complete lines)``.

    A last line cut short by a crash is ignored (its length is not counted);
    any other malformed line raises :class:`TraceError`.
    """
    with open(path, "rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    complete = lines[:-1]  # the text after the last newline is incomplete (or empty)
    good_len = sum(len(l) + 1 for l in complete)
    if not complete:
        raise TraceError(f"{path}: empty trace")
    try:
        records = [json.loads(l) for l in complete]
    except json.JSONDecodeError as exc:
        raise TraceError(f"{path}: not a graphbo trace ({exc})") from None
    head = records[0]
    if not isinstance(head, dict) or head.get("type") != "run":
        raise TraceError(f"{path}: not a graphbo trace (first line is not a run description)")
    if head.get("format", FORMAT_VERSION) > FORMAT_VERSION:
        raise TraceError(f"{path}: written by a newer graphbo (format {head.get('format')})")
    evals = records[1:]
    for i, r in enumerate(evals):
        if r.get("type") != "eval" or r.get("i") != i:
            raise TraceError(f"{path}: line {i + 2} is not evaluation {i}")
    return head, evals, good_len


def make_run(spec: RunSpec):
    """The benchmark and the optimizer a spec describes (method options included)."""
    from ..loop import make_optimizer

    bench_kwargs = dict(spec.benchmark_options)
    bench = load_benchmark(spec.benchmark, **bench_kwargs)
    opt = make_optimizer(spec.method, bench.space, seed=spec.seed, n_initial=spec.n_initial,
                         **benchmark_method_options(bench, spec.method), **spec.method_options)
    return bench, opt


def benchmark_method_options(bench, method: str) -> dict[str, Any]:
    """Options a benchmark hands to a method: its validity test to regularized evolution
    (NAS cells: "only valid cells", COMBO supplement 4.4.4); its full fidelity to a
    multi-fidelity method (BOHB), which needs a benchmark with fidelities."""
    if method.lower() == "re" and callable(getattr(bench, "is_valid", None)):
        return {"is_valid": bench.is_valid}
    if _multi_fidelity_method(method):
        from ..benchmarks.fidelity import max_fidelity

        top = max_fidelity(bench)
        if top is None:
            raise ValueError(f"method {method!r} chooses a fidelity (epochs) per evaluation, but benchmark "
                             f"{getattr(bench, 'name', type(bench).__name__)!r} has none (it needs max_fidelity "
                             "and evaluate(config, epochs=k), see graphbo.benchmarks.fidelity)")
        return {"max_fidelity": top}
    return {}


def _multi_fidelity_method(method: str) -> bool:
    from ..optimizers import METHODS

    return bool(getattr(METHODS.get(method.lower()), "multi_fidelity", False))


def trace_finished(head: dict[str, Any], evals: list[dict[str, Any]], budget: int) -> bool:
    """Whether a trace has used its budget: ``budget`` evaluations, or for a multi-fidelity run
    (a ``max_fidelity`` on its run line) ``budget`` full-fidelity-equivalent evaluations."""
    top = head.get("max_fidelity")
    if top is None:
        return len(evals) >= budget
    return sum(int(r["fidelity"]) for r in evals) >= budget * int(top)


def fidelity_best_so_far(evals: list[dict[str, Any]], max_fidelity: int, budget: int) -> list[float]:
    """Best-so-far curve of a multi-fidelity trace against full-fidelity-equivalent evaluations.

    Entry ``x - 1`` (``x = 1 .. budget``) is the lowest value evaluated at
    ``max_fidelity`` among the evaluations completed within ``x * max_fidelity``
    units (epochs) -- an evaluation at fidelity ``k`` costs ``k / max_fidelity``
    evaluations; NaN before the first full-fidelity evaluation. Lower-fidelity
    values never count, and neither does the evaluation that crosses the budget.
    """
    curve, used, best, j = [], 0, math.inf, 0
    for x in range(1, budget + 1):
        while j < len(evals) and used + int(evals[j]["fidelity"]) <= x * max_fidelity:
            used += int(evals[j]["fidelity"])
            if int(evals[j]["fidelity"]) == max_fidelity:
                best = min(best, float(evals[j]["value"]))
            j += 1
        curve.append(best if best < math.inf else math.nan)
    return curve


class RunLockedError(RuntimeError):
    """Another process is writing this run's trace."""


def run(spec: RunSpec, path: str, log: Callable[[str], None] | None = None, compact: bool = True) -> dict[str, Any]:
    """Run (or resume, or skip) one benchmark run; returns a summary.

    ``compact=False`` keeps the state on every line of a finished trace.
    The trace is locked (``PATH.lock``, an advisory ``flock``) while the run
    writes it: a second process given the same run raises
    :class:`RunLockedError` instead of interleaving its lines, so two
    comparisons over the same directory can run side by side.
    """
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(f"{path}: being written by another process") from None
        try:
            return _run_locked(spec, path, log, compact)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _check_same_run(head: dict[str, Any], spec: RunSpec, path: str) -> None:
    if head.get("spec") != json.loads(json.dumps(spec.key())):
        raise TraceError(f"{path}: belongs to a different run ({head.get('spec')}), not {spec.key()}")


def _run_locked(spec: RunSpec, path: str, log: Callable[[str], None] | None, compact: bool) -> dict[str, Any]:
    bench, opt = make_run(spec)
    evals: list[dict[str, Any]] = []
    if os.path.exists(path):
        head, evals, good_len = read_trace(path)
        _check_same_run(head, spec, path)
        for r in evals:
            if "fidelity" in r:
                opt.tell(r["config"], r["value"], fidelity=r["fidelity"])
            else:
                opt.tell(r["config"], r["value"])
        if evals:
            opt.set_state(evals[-1]["state"])
        with open(path, "r+b") as fh:  # drop a line cut short by a crash
            fh.truncate(good_len)
    else:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        head = {"type": "run", "format": FORMAT_VERSION, "spec": spec.key(),
                "benchmark_label": getattr(bench, "name", spec.benchmark),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        if getattr(opt, "multi_fidelity", False):
            head["max_fidelity"] = opt.max_fidelity
        with open(path, "x") as fh:
            fh.write(json.dumps(head) + "\n")
    if getattr(opt, "multi_fidelity", False):
        return _run_fidelity(spec, path, log, compact, bench, opt, evals)
    start_n = len(evals)
    with open(path, "a") as fh:
        for i in range(start_n, spec.budget):
            t0 = time.perf_counter()
            config = opt.ask()
            t1 = time.perf_counter()
            value = float(bench(config))
            t2 = time.perf_counter()
            opt.tell(config, value)
            rec = {"type": "eval", "i": i, "config": config, "value": value,
                   "suggest_seconds": round(t1 - t0, 6), "evaluate_seconds": round(t2 - t1, 6),
                   "state": opt.get_state()}
            fh.write(json.dumps(rec, default=_jsonable) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            evals.append(rec)
            if log and ((i + 1) % 10 == 0 or i + 1 == spec.budget):
                log(f"{spec.benchmark} {spec.method} seed {spec.seed}: {i + 1}/{spec.budget} best {opt.best.value:.5g}")
    if compact:
        compact_trace(path)
    return {"path": path, "n": spec.budget, "resumed_from": start_n, "best": opt.best.value}


def _run_fidelity(spec: RunSpec, path: str, log: Callable[[str], None] | None, compact: bool, bench, opt,
                  evals: list[dict[str, Any]]) -> dict[str, Any]:
    """The loop of a multi-fidelity method: ``spec.budget`` counts full-fidelity-equivalent evaluations.

    Each asked ``(config, k)`` is evaluated with ``bench.evaluate(config, epochs=k)``
    and its line records ``"fidelity": k``. The run stops once the fidelities
    add up to ``spec.budget * max_fidelity`` (the last evaluation may cross
    it; :func:`fidelity_best_so_far` does not count that one).
    """
    from ..benchmarks.fidelity import evaluate_at_fidelity

    top = int(opt.max_fidelity)
    target = spec.budget * top
    used = sum(int(r["fidelity"]) for r in evals)
    start_n = len(evals)
    with open(path, "a") as fh:
        i = start_n
        while used < target:
            t0 = time.perf_counter()
            config, k = opt.ask_with_fidelity()
            t1 = time.perf_counter()
            value = evaluate_at_fidelity(bench, config, k)
            t2 = time.perf_counter()
            opt.tell(config, value, fidelity=k)
            used += k
            rec = {"type": "eval", "i": i, "config": config, "value": value, "fidelity": k,
                   "suggest_seconds": round(t1 - t0, 6), "evaluate_seconds": round(t2 - t1, 6),
                   "state": opt.get_state()}
            fh.write(json.dumps(rec, default=_jsonable) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            evals.append(rec)
            i += 1
            if log and (i % 10 == 0 or used >= target):
                best = opt.best
                log(f"{spec.benchmark} {spec.method} seed {spec.seed}: {used / top:.4g}/{spec.budget} full "
                    f"evaluations ({i} at fidelities) best {best.value if best else float('nan'):.5g}")
    if compact:
        compact_trace(path)
    curve = fidelity_best_so_far(evals, top, spec.budget)
    return {"path": path, "n": len(evals), "resumed_from": start_n, "best": curve[-1] if curve else math.nan,
            "full_evaluations": used / top}


def compact_trace(path: str) -> bool:
    """Drop the optimizer state from every eval line but the last; atomic.

    Returns whether the file changed. The run and its resumability are
    unaffected: resuming restores the state of the last line only.
    """
    head, evals, good_len = read_trace(path)
    if not any("state" in r for r in evals[:-1]):
        return False
    tmp = path + ".compact.tmp"
    with open(tmp, "w") as fh:
        fh.write(json.dumps(head) + "\n")
        for j, r in enumerate(evals):
            if j < len(evals) - 1:
                r = {k: v for k, v in r.items() if k != "state"}
            fh.write(json.dumps(r) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return True


def _jsonable(x):
    try:
        import numpy as np

        if isinstance(x, np.generic):
            return x.item()
    except ImportError:  # pragma: no cover
        pass
    return str(x)


def _run_job(spec: RunSpec, path: str, threads: int) -> dict[str, Any]:
    """One run in a worker process, with ``threads`` torch and BLAS threads.

    Parallel runs share the cores: more threads per run than cores per run
    only adds contention (BOCS's small matrix products slowed down several
    times with OpenBLAS's default threads on 2 busy cores).
    """
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    with threadpool_limits(limits=threads):
        return run(spec, path)


def trace_path(out_dir: str, spec: RunSpec) -> str:
    return os.path.join(out_dir, spec.method, f"seed{spec.seed}.jsonl")


def compare(
    specs: Iterable[RunSpec],
    out_dir: str,
    n_workers: int = 1,
    threads_per_worker: int = 1,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Run every spec (skipping finished ones) in parallel processes; traces go under ``out_dir``."""
    specs = list(specs)
    existing: dict[str, bool] = {}  # trace path -> finished
    for spec in specs:  # every existing trace must belong to its spec before anything runs
        path = trace_path(out_dir, spec)
        if os.path.exists(path):
            head, evals, _ = read_trace(path)
            _check_same_run(head, spec, path)
            existing[path] = trace_finished(head, evals, spec.budget)
    todo = []
    for spec in specs:
        path = trace_path(out_dir, spec)
        if existing.get(path):
            compact_trace(path)
            log(f"skip {spec.method} seed {spec.seed}: finished")
            continue
        todo.append((spec, path))
    results = []
    if n_workers <= 1:
        for spec, path in todo:
            try:
                results.append(run(spec, path, log=log))
            except RunLockedError:
                log(f"skip {spec.method} seed {spec.seed}: running in another process")
                continue
            log(f"done {spec.method} seed {spec.seed}: best {results[-1]['best']:.5g}")
        return results
    with ProcessPoolExecutor(max_workers=n_workers) as pool:
        futures = {pool.submit(_run_job, spec, path, threads_per_worker): spec for spec, path in todo}
        for fut in as_completed(futures):
            spec = futures[fut]
            try:
                res = fut.result()
            except RunLockedError:
                log(f"skip {spec.method} seed {spec.seed}: running in another process")
                continue
            except Exception as exc:  # one failed run must not stop the others
                log(f"FAILED {spec.method} seed {spec.seed}: {type(exc).__name__}: {exc}")
                continue
            results.append(res)
            log(f"done {spec.method} seed {spec.seed}: best {res['best']:.5g} (resumed at {res['resumed_from']})")
    return results
