"""Resumable benchmark runs and method comparisons.

A run is one (benchmark, method, seed) with a budget. It is a
:class:`~graphbo.study.Study` kept in an SQLite file through
:mod:`graphbo.storage` (``OUT/METHOD/seedS.db`` in a comparison): the study's
user attribute ``"run"`` describes it (the :class:`RunSpec`, the benchmark's
label, the start time and, for a multi-fidelity method, ``max_fidelity``; see
:mod:`graphbo.storage.runs`), and each evaluation is a trial, recorded
``running`` when asked and ``complete`` (value, suggestion and evaluation
seconds) before the next suggestion. Resuming is the study's: finished trials
are replayed through ``tell``, the latest optimizer state is restored, and an
evaluation cut short by a kill is done again with the same configuration, so
a killed run continues with exactly the suggestions an uninterrupted run would
have made. A finished run is skipped. A run keeps only its latest optimizer
state (not one per trial), which keeps files small (BOCS's state is tens of
kilobytes), and a closed run file is left in rollback-journal mode, so that
reading it (``graphbo report``) leaves nothing beside it.

A multi-fidelity method (``multi_fidelity = True``: BOHB) needs a benchmark
with fidelities (:mod:`graphbo.benchmarks.fidelity`): each trial is evaluated
with ``bench.evaluate(config, epochs=k)`` at the fidelity ``k`` the method
chose (the trial attribute ``"fidelity"``), and the budget counts
full-fidelity-equivalent evaluations (the sum of ``k / max_fidelity``), as
BO-FM plots BOHB (Sec. 5.3: "BOHB on 100-th evaluation is the result of BOHB
having consumed 2,500 epochs (25 epochs x 100)").
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from ..benchmarks import load_benchmark
from ..parallel import watch_parent
from ..storage import SQLiteStorage, StorageError, TraceError, Trial, find_run, read_run
from ..storage.jsonio import plain
from ..storage.runs import RUN_ATTR, RunData, evaluations
from ..threads import limit_threads

if TYPE_CHECKING:  # pragma: no cover
    from ..study import Study

__all__ = ["RunSpec", "run", "compare", "read_run", "TraceError", "RunLockedError", "parse_seeds",
           "trace_finished", "fidelity_best_so_far", "make_run", "run_path"]


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """What identifies a run; its stored run must match it to be resumed."""

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


def trace_finished(head: dict[str, Any], evals: list[dict[str, Any]], *, budget: int) -> bool:
    """Whether a trace has used its budget: ``budget`` evaluations, or for a multi-fidelity run
    (a ``max_fidelity`` on its run line) ``budget`` full-fidelity-equivalent evaluations."""
    top = head.get("max_fidelity")
    if top is None:
        return len(evals) >= budget
    return sum(int(r["fidelity"]) for r in evals) >= budget * int(top)


def fidelity_best_so_far(evals: list[dict[str, Any]], max_fidelity: int, *, budget: int) -> list[float]:
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
    """Another process is running this run."""


def run(spec: RunSpec, path: str, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run (or resume, or skip) one benchmark run in the study file ``path``; returns a summary
    (``path``, ``n`` evaluations, ``resumed_from``, ``best``; ``full_evaluations`` for a multi-fidelity run).

    The run is locked (``PATH.lock``, an
    advisory ``flock``) while it runs: a second process given the same run
    raises :class:`RunLockedError`, so two comparisons over the same directory
    can run side by side.
    """
    db = os.fspath(path)
    os.makedirs(os.path.dirname(db) or ".", exist_ok=True)
    with open(db + ".lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(f"{db}: being run by another process") from None
        try:
            return _run_locked(spec, path, log)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _existing_run(spec: RunSpec, path: str) -> RunData | None:
    """The run stored in ``path`` (``None`` if there is none), read without changes.
    Raises :class:`TraceError` if it is unreadable or belongs to a different run."""
    found = find_run(path)
    if found is None:
        return None
    data = read_run(found)
    if data.head.get("spec") != plain(spec.key()):
        raise TraceError(f"{found}: belongs to a different run ({data.head.get('spec')}), not {spec.key()}")
    return data


def _run_locked(spec: RunSpec, path: str, log: Callable[[str], None] | None) -> dict[str, Any]:
    db = os.fspath(path)
    bench = load_benchmark(spec.benchmark, **spec.benchmark_options)
    data = _existing_run(spec, path)
    if data is not None and trace_finished(data.head, data.evals, budget=spec.budget):  # finished: only read
        return _summary(spec, data, resumed_from=len(data.evals))
    with _open_run(spec, bench, db) as study:
        resumed_from = study.n_finished
        _evaluate_to_budget(spec, bench, study, log)
        data = RunData(path=db, head=study.user_attrs[RUN_ATTR], evals=evaluations(study.trials), state=None)
    return _summary(spec, data, resumed_from)


@contextlib.contextmanager
def _open_run(spec: RunSpec, bench, db: str, **head: Any) -> Iterator[Study]:
    """The run's study in the file ``db``: opened if it exists, else created with the run's description
    (plus ``head``) as its user attribute ``"run"``. Closed on exit, with its optimizer's resources
    (SMAC's temporary folder)."""
    from ..study import Study  # imports the models: only when a run runs

    runtime = benchmark_method_options(bench, spec.method)
    description = {"spec": spec.key(), "benchmark_label": getattr(bench, "name", spec.benchmark),
                   "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if "max_fidelity" in runtime:
        description["max_fidelity"] = int(runtime["max_fidelity"])
    description.update(head)
    store = SQLiteStorage(db, trial_states=False, keep_wal=False)
    try:
        study = Study(bench.space, spec.method, storage=store, seed=spec.seed, user_attrs={RUN_ATTR: description},
                      runtime_options=runtime, n_initial=spec.n_initial, **spec.method_options)
    except TraceError:
        raise
    except StorageError as exc:
        raise TraceError(str(exc)) from None
    try:
        with study:
            yield study
    finally:
        close = getattr(study.optimizer, "close", None)
        if callable(close):
            close()


def _cost(trial: Trial) -> int:
    """What an evaluation uses of the budget, in fidelity units (1 for a single-fidelity method)."""
    return int(trial.attrs.get("fidelity", 1))


#: a run's progress line (``log``): every this many evaluations, ...
LOG_EVERY = 10
#: ... after an evaluation that ends this many seconds or more after the run's last line (slow evaluations or
#: suggestions, e.g. NASBOT's training), and after the last evaluation
LOG_SECONDS = 30.0


def _evaluate_to_budget(spec: RunSpec, bench, study: Study, log: Callable[[str], None] | None) -> None:
    """Ask, evaluate and tell until the budget is used: ``spec.budget`` evaluations, or for a multi-fidelity
    method ``spec.budget * max_fidelity`` epochs (the last evaluation may cross it;
    :func:`fidelity_best_so_far` does not count that one). ``log`` gets a progress line with the best so far
    (``BENCHMARK METHOD seed S: N/BUDGET best V``) every :data:`LOG_EVERY` evaluations, after one that ends
    :data:`LOG_SECONDS` after the previous line, and at the end."""
    from ..benchmarks.fidelity import evaluate_at_fidelity

    top = study.user_attrs[RUN_ATTR].get("max_fidelity")
    target = spec.budget * (top or 1)
    used = sum(_cost(t) for t in study.trials if t.status != "running")
    last_line = time.monotonic()
    while used < target:
        trial = study.ask()
        t0 = time.perf_counter()
        k = trial.attrs.get("fidelity")
        value = float(bench(trial.config)) if k is None else evaluate_at_fidelity(bench, trial.config, fidelity=k)
        study.tell(trial, value, seconds=time.perf_counter() - t0)
        used += _cost(trial)
        n = study.n_finished
        if log and (n % LOG_EVERY == 0 or used >= target or time.monotonic() - last_line >= LOG_SECONDS):
            last_line = time.monotonic()
            best = study.optimizer.best
            best_value = best.value if best else math.nan
            where = (f"{n}/{spec.budget}" if top is None else
                     f"{used / top:.4g}/{spec.budget} full evaluations ({n} at fidelities)")
            log(f"{spec.benchmark} {spec.method} seed {spec.seed}: {where} best {best_value:.5g}")


def _summary(spec: RunSpec, data: RunData, resumed_from: int) -> dict[str, Any]:
    out = {"path": data.path, "n": len(data.evals), "resumed_from": resumed_from}
    top = data.head.get("max_fidelity")
    if top is None:
        out["best"] = min((float(e["value"]) for e in data.evals), default=math.nan)
    else:
        curve = fidelity_best_so_far(data.evals, int(top), budget=spec.budget)
        out["best"] = curve[-1] if curve else math.nan
        out["full_evaluations"] = sum(int(e["fidelity"]) for e in data.evals) / int(top)
    return out


def _run_job(spec: RunSpec, path: str, threads: int, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One run in a worker process, with ``threads`` torch and BLAS threads.

    Parallel runs share the cores: more threads per run than cores per run
    only adds contention (BOCS's small matrix products slowed down several
    times with OpenBLAS's default threads on 2 busy cores).
    """
    with limit_threads(threads):
        return run(spec, path, log=log)


def run_path(out_dir: str, spec: RunSpec) -> str:
    """The study file of a run in a comparison: ``OUT/METHOD/seedS.db``."""
    return os.path.join(out_dir, spec.method, f"seed{spec.seed}.db")


def compare(
    specs: Iterable[RunSpec],
    out_dir: str,
    *,
    n_workers: int = 1,
    threads_per_worker: int = 1,
    log: Callable[[str], None] = print,
    worker_log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every spec (skipping finished ones) in parallel processes; run files go under ``out_dir``.

    ``log`` gets the progress of runs in this process (every :data:`LOG_EVERY` evaluations or
    :data:`LOG_SECONDS` seconds, with the best so far) and a line per run done; with ``n_workers > 1`` the runs' progress goes to ``worker_log`` (called in the
    worker processes, so it must be picklable: a module-level function), if given.

    Every existing run must belong to its
    spec before anything runs: otherwise :class:`TraceError`.
    """
    specs = list(specs)
    finished: dict[str, bool] = {}  # run path -> finished
    for spec in specs:
        path = run_path(out_dir, spec)
        data = _existing_run(spec, path)
        if data is not None:
            finished[path] = trace_finished(data.head, data.evals, budget=spec.budget)
    todo = []
    for spec in specs:
        path = run_path(out_dir, spec)
        if finished.get(path):
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
    pool = ProcessPoolExecutor(max_workers=n_workers, initializer=watch_parent, initargs=(os.getpid(),))
    try:
        futures = {pool.submit(_run_job, spec, path, threads_per_worker, worker_log): spec for spec, path in todo}
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
    except BaseException:  # Ctrl-C (or anything else): no queued run starts, the runs in flight stop
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return results


#: seconds the runs in flight get to stop after Ctrl-C (their evaluation in flight stays running, to be
#: resumed) before their processes are killed
STOP_GRACE = 2.0


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued runs of ``pool`` and stop its workers: SIGINT (each run closes its study, the
    evaluation in flight left running for the resume), then SIGKILL after :data:`STOP_GRACE` seconds or at a
    second Ctrl-C."""
    processes = list(getattr(pool, "_processes", {}).values())  # the executor has no public list of them
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        with contextlib.suppress(OSError):
            os.kill(p.pid, signal.SIGINT)
    deadline = time.monotonic() + STOP_GRACE
    try:
        for p in processes:
            p.join(max(0.0, deadline - time.monotonic()))
    except KeyboardInterrupt:  # a second Ctrl-C: at once
        pass
    for p in processes:
        if p.is_alive():
            with contextlib.suppress(OSError):
                os.kill(p.pid, signal.SIGKILL)
            p.join(1.0)
