"""Soak test of graphbo's reliability promises (docs/reliability.md): SIGKILLs at random moments,
concurrent writers, storage faults, misbehaving objectives and hostile input, each counted.

    OMP_NUM_THREADS=1 python benchmarks/soak.py --out benchmarks/results/soak.json   # a few minutes
    OMP_NUM_THREADS=1 python benchmarks/soak.py --kills 3 --seed 1                   # more kills per run

Everything runs in real processes on real SQLite files in a temporary folder (``--keep`` keeps it):

* **kills**: six runs of a cheap deterministic objective (sleeps 5-25 ms, value from the configuration)
  writing a study file: ``graphbo.minimize`` sequential with random search and with COMBO, with 2 process
  workers, with a Dask ``LocalCluster`` of 2 worker processes (made by the killed script, as a user's would
  be); ``graphbo run --space ... --objective ...`` sequential and with ``--workers 2``. Each is SIGKILLed
  ``--kills`` times at a random moment (after 1 to 4 new evaluations, then a random 0-150 ms), and resumed
  (``minimize`` again, ``graphbo resume --objective``) until its budget is done. Counted: evaluations lost
  (told before a kill, by the run's log or by the file read after the kill, but not complete with that value
  at the end), duplicated (a configuration with two finished trials), altered (a stored value other than
  the objective's), files failing SQLite's integrity check after a kill, worker processes that outlived a
  killed main process by 5 s; for the sequential runs, whether the trace equals an uninterrupted run with
  the same seed (random search and COMBO are deterministic).
* **concurrent writers**: a second writer while a trial is in flight, two ``minimize`` processes on one
  file, a lock left by a killed process, a lock from another host cleared with ``graphbo unlock``.
* **storage faults**: truncated, damaged, foreign, newer-format, text and folder paths, a read-only file
  and folder (as a process without the capabilities that let root ignore permissions), a full disk
  (``RLIMIT_FSIZE``), random bit flips; the error line and the file's sha256 before and after.
* **misbehaving objectives**: 14 ways, in this process and in 2 worker processes; each trial's record.
* **hostile input**: alias bomb, ``!!python`` tags, deep nesting, an enormous file, 10**6 categories and
  10**5 ordinal values, bad names and bounds, ConfigSpace conditions, objective specs naming the
  standard library, a study file edited to name ``subprocess:run``; each in its own process with its
  time and peak memory (``ru_maxrss``), and whether a marker file the input tries to create appeared.

It prints one table per part and writes everything as JSON to ``--out``. The exit status is 1 if any
count that must be 0 is not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np

SRC = str(Path(__file__).resolve().parents[1] / "src")

# -- the objective module the child processes import ----------------------------------------------------------------
OBJECTIVE_MODULE = '''
"""The soak's objectives: module level, so that process workers can unpickle them."""
import ctypes, os, signal, time

def value(config):
    """The deterministic value of a configuration."""
    return float(sum((i + 1) * (v - 2) ** 2 for i, v in enumerate(config[k] for k in sorted(config))))

def objective(config):
    time.sleep(0.005 + 0.02 * (hash(tuple(sorted(config.items()))) % 97) / 97)  # 5-25 ms, as work
    return value(config)

def swallow(seconds):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            time.sleep(0.02)
        except BaseException:  # the timeout's interruption included
            pass
    return 0.0

def misbehave(config):
    """One way of misbehaving per value of ``a`` below 14; a value above."""
    import numpy as np
    import torch
    a = config["a"]
    if a == 0: raise OverflowError("overflowed")
    if a == 1: return float("nan")
    if a == 2: return None
    if a == 3: return "1.0"
    if a == 4: return np.array([1.0, 2.0])
    if a == 5: return torch.tensor([1.0])
    if a == 6: return 10 ** 400
    if a == 7: time.sleep(60)
    if a == 8: os._exit(3)
    if a == 9: ctypes.string_at(0)
    if a == 10: os.kill(os.getpid(), signal.SIGKILL)
    if a == 11: return swallow(3.0 if config.get("here") else 60.0)
    if a == 12: raise SystemExit(4)
    if a == 13: return float("inf")
    return float(a)

def misbehave_here(config):
    """``misbehave`` without the ways that end the process it runs in."""
    return float(config["a"]) if config["a"] in (8, 9, 10) else misbehave(dict(config, here=True))
'''
MISBEHAVIOURS = {0: "raises OverflowError", 1: "returns NaN", 2: "returns None", 3: "returns a string",
                 4: "returns an array of 2", 5: "returns a tensor of shape (1,)", 6: "returns 10**400",
                 7: "sleeps past the timeout", 8: "calls os._exit(3)", 9: "segfaults", 10: "is SIGKILLed (OOM)",
                 11: "catches the timeout's interruption", 12: "raises SystemExit", 13: "returns inf"}

SPACE_YAML = "variables:\n" + "".join(f"  x{i}: {{type: ordinal, values: [0, 1, 2, 3, 4, 5, 6, 7]}}\n"
                                      for i in range(4))
SPACE_PY = "gb.Space({f'x{i}': gb.Ordinal(list(range(8))) for i in range(4)})"
SMALL_SPACE_PY = "gb.Space({f'x{i}': gb.Ordinal(list(range(5))) for i in range(4)})"
COMBO_OPTIONS = {"n_initial": 4, "n_burn": 20, "n_samples": 5, "n_random": 2000, "n_starts": 5}


def sha256(path) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if Path(path).is_file() else None


def fingerprint(path) -> str:
    """sha256 of a study file and its write-ahead log (where a running writer's changes are)."""
    h = hashlib.sha256()
    for p in (Path(path), Path(f"{path}-wal")):
        h.update(p.read_bytes() if p.is_file() else b"-")
    return h.hexdigest()


def env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
                PYTHONFAULTHANDLER="")


def source(code: str, cwd) -> str:
    """``code`` (after :data:`STUDY_PRELUDE`, if it starts with it, indented or not) with ``cwd`` on sys.path."""
    prelude = f"import sys; sys.path[:0] = [{SRC!r}, {str(cwd)!r}]\n"
    if code.startswith(STUDY_PRELUDE):
        return prelude + STUDY_PRELUDE + textwrap.dedent(code[len(STUDY_PRELUDE):])
    return prelude + textwrap.dedent(code)


def python(code: str, cwd, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """``code`` in a fresh Python process started in ``cwd`` (which is put on sys.path)."""
    return subprocess.run([sys.executable, "-c", source(code, cwd)], cwd=cwd, env=env(), capture_output=True,
                          text=True, timeout=timeout, **kw)


def python_popen(code: str, cwd, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", source(code, cwd)], cwd=cwd, env=env(), **kw)


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def stored(path) -> dict[int, tuple[str, str, float | None]]:
    """number -> (status, configuration as sorted JSON, value) of a study file, read with plain SQLite."""
    conn = sqlite3.connect(str(path), timeout=30)
    try:
        rows = conn.execute("SELECT number, status, config, value FROM trials").fetchall()
    except sqlite3.OperationalError as exc:  # being created by another process
        if "no such table" not in str(exc):
            raise
        rows = []
    finally:
        conn.close()
    return {n: (s, json.dumps(json.loads(c), sort_keys=True), v) for n, s, c, v in rows}


def integrity(path) -> str:
    conn = sqlite3.connect(str(path), timeout=30)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


# -- 1. kills -------------------------------------------------------------------------------------------------------
def minimize_code(path, log, method, budget, seed, workers, options, max_retries=1000, dask=False) -> str:
    """A script that runs ``graphbo.minimize`` and logs each told value; with ``dask``, on a Dask
    ``LocalCluster`` of ``workers`` processes made by the script (so the cluster dies with it)."""
    call = (f"gb.minimize(so.objective, space, {method!r}, budget={budget}, seed={seed}, storage={str(path)!r}, "
            f"n_workers={workers}, callback=told, max_retries={max_retries}, **{options!r}")
    if dask:
        run = f"""
        import distributed
        with distributed.LocalCluster(n_workers={workers}, processes=True, threads_per_worker=1,
                                      dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
            client.wait_for_workers({workers})
            r = {call}, executor=client.get_executor())
        """
    else:
        run = f"""
        r = {call})
        """
    return f"""
        import json, graphbo as gb, soak_objective as so
        space = {SMALL_SPACE_PY if method == "combo" else SPACE_PY}
        log = open({str(log)!r}, "a")
        def told(number, config, value, optimizer, seconds):  # called once the tell is stored
            log.write(json.dumps([number, value]) + "\\n")
            log.flush()
        {textwrap.dedent(run).strip().replace(chr(10), chr(10) + " " * 8)}
        print("done", r.n_complete, r.n_failed)
    """


def cli_argv(path, budget, seed, workers, resume: bool) -> list[str]:
    if resume:
        return ["resume", str(path), "--objective", "soak_objective:objective", "--workers", str(workers)]
    return ["run", "--space", "space.yaml", "--objective", "soak_objective:objective", "--method", "rs",
            "--budget", str(budget), "--seed", str(seed), "--storage", str(path), "--workers", str(workers)]


def logged(log: Path, cli: bool) -> dict[int, float]:
    """Trials told so far by the run's log: minimize's callback lines, or graphbo's progress lines
    (``number value best seconds``, trials numbered from 0, values to 5 significant digits)."""
    out: dict[int, float] = {}
    if not log.exists():
        return out
    for line in log.read_text().splitlines():
        try:
            if cli:
                parts = line.split()
                if len(parts) == 4 and parts[0].isdigit():
                    out[int(parts[0])] = float(parts[1])
            else:
                n, v = json.loads(line)
                out[int(n)] = float(v)
        except (ValueError, TypeError):  # a line cut by the kill
            pass
    return out


def group_gone(pgid: int, seconds: float = 5.0) -> bool:
    """Whether every process of the group ``pgid`` (a killed main process's workers) ends within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    os.killpg(pgid, signal.SIGKILL)  # do not leave them behind
    return False


def soak_run(work: Path, name: str, kind: str, method: str, budget: int, workers: int, kills: int,
             rng: np.random.Generator, seed: int) -> dict:
    from soak_objective import value  # type: ignore[import-not-found]

    path, log = work / f"{name}.db", work / f"{name}.log"
    options = COMBO_OPTIONS if method == "combo" else {"n_initial": 5}
    cli = kind == "cli"
    told_before_kill: dict[int, float] = {}
    killed = sessions = orphans = in_flight = 0
    bad_integrity: list[str] = []
    t0 = time.monotonic()
    while True:
        if cli:
            argv = [sys.executable, "-m", "graphbo", *cli_argv(path, budget, seed, workers, resume=sessions > 0)]
            out = open(log, "a")
            proc = subprocess.Popen(argv, cwd=work, env=env(), stdout=out, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
        else:
            out = None
            prelude = f"import sys; sys.path[:0] = [{SRC!r}, {str(work)!r}]\n"
            code = prelude + textwrap.dedent(minimize_code(path, log, method, budget, seed, workers, options,
                                                           dask=kind == "dask"))
            proc = subprocess.Popen([sys.executable, "-c", code], cwd=work, env=env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        sessions += 1
        if killed < kills:
            start = len(logged(log, cli))
            wait_for = int(rng.integers(1, 5))
            deadline = time.monotonic() + 600
            while proc.poll() is None and len(logged(log, cli)) < start + wait_for and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(float(rng.uniform(0.0, 0.15)))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                killed += 1
                orphans += 0 if group_gone(proc.pid) else 1
                check = integrity(path) if path.exists() else "ok"
                if check != "ok":
                    bad_integrity.append(check)
                told_before_kill.update(logged(log, cli))
                if path.exists():
                    after_kill = stored(path)
                    told_before_kill.update({n: v for n, (s, _, v) in after_kill.items() if s == "complete"})
                    in_flight += sum(s == "running" for s, _, _ in after_kill.values())
                if out:
                    out.close()
                continue
        _, err = proc.communicate(timeout=900)
        if out:
            out.close()
        if proc.returncode != 0:
            raise RuntimeError(f"{name}: session {sessions} ended with {proc.returncode}: {err[-2000:]}")
        final = stored(path)
        if sum(s != "running" for s, _, _ in final.values()) >= budget:
            break
    seconds = time.monotonic() - t0
    final = stored(path)
    complete = {n: (c, v) for n, (s, c, v) in final.items() if s == "complete"}
    tolerance = 1e-4 if cli else 0.0  # progress lines print 5 significant digits
    lost = sum(1 for n, v in told_before_kill.items()
               if n not in complete or abs(complete[n][1] - v) > tolerance * max(1.0, abs(v)))
    configs = [c for s, c, _ in final.values() if s != "running"]
    duplicated = len(configs) - len(set(configs))
    altered = sum(1 for c, v in complete.values() if v != value(json.loads(c)))
    how = {"cli": "graphbo run/resume", "dask": "graphbo.minimize on a Dask LocalCluster"}.get(kind, "graphbo.minimize")
    result = {"run": name, "how": how, "method": method,
              "workers": workers, "budget": budget, "kills": killed, "sessions": sessions,
              "told_before_a_kill": len(told_before_kill),
              "in_flight_at_kills": in_flight, "lost": lost, "duplicated": duplicated,
              "altered": altered, "complete": len(complete),
              "failed": sum(s == "failed" for s, _, _ in final.values()),
              "running": sum(s == "running" for s, _, _ in final.values()),
              "integrity_failures": len(bad_integrity), "orphan_workers": orphans, "seconds": round(seconds, 1)}
    if workers == 1:  # an uninterrupted run with the same seed
        ref = work / f"{name}-reference.db"
        if cli:
            done = subprocess.run([sys.executable, "-m", "graphbo", *cli_argv(ref, budget, seed, 1, False),
                                   "--quiet"], cwd=work, env=env(), capture_output=True, text=True, timeout=900)
        else:
            done = subprocess.run([sys.executable, "-c",
                                   f"import sys; sys.path[:0] = [{SRC!r}, {str(work)!r}]\n" + textwrap.dedent(
                                       minimize_code(ref, work / f"{name}-reference.log", method, budget, seed, 1,
                                                     options))],
                                  cwd=work, env=env(), capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{name} reference: {done.stderr[-2000:]}")
        reference = stored(ref)
        result["trace_equals_uninterrupted"] = (
            [(n, s, c, v) for n, (s, c, v) in sorted(final.items())]
            == [(n, s, c, v) for n, (s, c, v) in sorted(reference.items())])
    return result


# -- 2. concurrent writers ------------------------------------------------------------------------------------------
STUDY_PRELUDE = f"""
import json, os, sys, time
import graphbo as gb
from graphbo.storage.info import read_study_info
from graphbo.study import Study
from graphbo.storage import StorageError, SQLiteStorage, StudyLockedError
import soak_objective as so
space = {SPACE_PY}
"""


def concurrent(work: Path) -> list[dict]:
    rows = []
    # (a) a second writer while the first has a trial in flight
    path = work / "conc-a.db"
    writer = python_popen(STUDY_PRELUDE + f"""
        study = Study(space, "rs", storage={str(path)!r}, seed=0, n_initial=2)
        trial = study.ask()
        print("asked", flush=True)
        sys.stdin.readline()
        study.tell(trial, so.value(trial.config))
        study.close()
    """, work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert writer.stdout.readline().startswith("asked")
    before = fingerprint(path)
    second = python(STUDY_PRELUDE + f"""
        t0 = time.perf_counter()
        try:
            Study(space, "rs", storage={str(path)!r}, seed=0, n_initial=2)
            print("OPENED")
        except StorageError as exc:
            print(f"{{time.perf_counter() - t0:.3f}}", type(exc).__name__ + ": " + str(exc))
        print("reader sees running:", read_study_info({str(path)!r})["n_running"])
    """, work)
    after = fingerprint(path)
    seconds, error = second.stdout.splitlines()[0].split(" ", 1)
    writer.communicate("\n", timeout=60)
    rows.append({"case": "second writer while a trial is in flight", "result": error.split(":")[0],
                 "error": error, "seconds_to_refuse": float(seconds),
                 "reader": second.stdout.splitlines()[1], "sha256_before": before, "sha256_after": after,
                 "unchanged": before == after, "trials_after": len(stored(path))})
    # (b) two minimize processes on one file
    path = work / "conc-b.db"
    code = STUDY_PRELUDE + f"""
        print("ready", flush=True)
        sys.stdin.readline()  # both have imported graphbo; the second starts while the first runs
        try:
            r = gb.minimize(so.objective, space, method="rs", budget=12, seed=0, storage={str(path)!r}, n_initial=2)
            print("finished", r.n_complete)
        except StorageError as exc:
            print(type(exc).__name__ + ": " + str(exc), file=sys.stderr)
            sys.exit(3)
    """
    first = python_popen(code, work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    other = python_popen(code, work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert first.stdout.readline().startswith("ready") and other.stdout.readline().startswith("ready")
    first.stdin.write("\n")
    first.stdin.flush()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (path.exists() and any(
            s == "complete" for s, _, _ in stored(path).values())):
        time.sleep(0.02)
    out2, err2 = other.communicate("\n", timeout=120)
    out1, err1 = first.communicate(timeout=120)
    final = stored(path)
    configs = [c for _, c, _ in final.values()]
    rows.append({"case": "two minimize processes on one file", "result": f"exit {first.returncode} and "
                 f"{other.returncode}", "first": out1.strip(), "error": last_line(err2),
                 "error_lines": len(err2.strip().splitlines()), "integrity_error": "IntegrityError" in err1 + err2,
                 "trials": len(final), "distinct_configurations": len(set(configs)),
                 "duplicated": len(configs) - len(set(configs))})
    # (c) a lock left by a killed process
    path = work / "conc-c.db"
    dead = python_popen(STUDY_PRELUDE + f"""
        study = Study(space, "rs", storage={str(path)!r}, seed=0, n_initial=2)
        for _ in range(3):
            t = study.ask(); study.tell(t, so.value(t.config))
        study.ask()
        print("asked", flush=True)
        time.sleep(600)
    """, work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert dead.stdout.readline().startswith("asked")
    os.kill(dead.pid, signal.SIGKILL)
    dead.wait()
    again = python(STUDY_PRELUDE + f"""
        with Study(space, "rs", storage={str(path)!r}, seed=0, n_initial=2) as study:
            print(json.dumps([[t.number, t.crashes] for t in study.running_trials]))
    """, work)
    rows.append({"case": "a lock left by a SIGKILLed process", "result": "taken over" if again.returncode == 0
                 else last_line(again.stderr), "running_after_takeover": json.loads(again.stdout or "null")})
    # (d) a lock from another host: refused, cleared by `graphbo unlock`
    path = work / "conc-d.db"
    python(STUDY_PRELUDE + f"""
        with Study(space, "rs", storage={str(path)!r}, seed=0, n_initial=2) as study:
            t = study.ask(); study.tell(t, so.value(t.config))
    """, work)
    lock = {"pid": 4242, "host": "another-host.example", "process_start": 1, "since": "2026-01-01T00:00:00+00:00",
            "token": "x"}
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("INSERT INTO meta (key, value) VALUES ('writer', ?)", (json.dumps(lock),))
    conn.close()
    before = sha256(path)
    refused = python(STUDY_PRELUDE + f"""
        try:
            Study(space, "rs", storage={str(path)!r}, seed=0, n_initial=2)
        except StorageError as exc:
            print(type(exc).__name__ + ": " + str(exc))
    """, work)
    after = sha256(path)
    unlock = subprocess.run([sys.executable, "-m", "graphbo", "unlock", str(path)], cwd=work, env=env(),
                            capture_output=True, text=True, timeout=120)
    reopened = python(STUDY_PRELUDE + f"""
        with Study(space, "rs", storage={str(path)!r}, seed=0, n_initial=2) as study:
            print(study.n_finished)
    """, work)
    rows.append({"case": "a lock from another host", "result": refused.stdout.split(":")[0],
                 "error": refused.stdout.strip(), "sha256_before": before, "sha256_after": after,
                 "unchanged": before == after, "unlock": last_line(unlock.stdout),
                 "reopened_finished": reopened.stdout.strip()})
    return rows


# -- 3. storage faults ----------------------------------------------------------------------------------------------
NO_DAC = """
import ctypes, os
class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
if os.geteuid() == 0:  # drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: obey file permissions as root
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _Header(0x20080522, 0), (_Data * 2)()
    assert libc.capget(ctypes.byref(header), data) == 0
    for d in data:
        d.effective &= ~6; d.permitted &= ~6; d.inheritable &= ~6
    assert libc.capset(ctypes.byref(header), data) == 0
"""

OPEN_PROBE = STUDY_PRELUDE + """
try:
    with Study(space, "rs", storage=PATH, seed=0, n_initial=2) as study:
        print("OPENED", json.dumps([[t.number, t.status, t.value] for t in study.trials]))
except StorageError as exc:
    print(type(exc).__name__ + ": " + str(exc))
"""


def probe(work: Path, path: Path, no_dac: bool = False) -> str:
    """Open ``path`` as a study for writing: ``OPENED [trials]`` or the error line. In this process, or in a
    child without the capabilities that let root ignore file permissions."""
    if not no_dac:
        import graphbo as gb
        from graphbo.storage import StorageError
        from graphbo.study import Study

        space = gb.Space({f"x{i}": gb.Ordinal(list(range(8))) for i in range(4)})
        try:
            with Study(space, "rs", storage=str(path), seed=0, n_initial=2) as study:
                return "OPENED " + json.dumps([[t.number, t.status, t.value] for t in study.trials])
        except StorageError as exc:
            return type(exc).__name__ + ": " + str(exc)
    done = python(NO_DAC + OPEN_PROBE.replace("PATH", repr(str(path))), work)
    return last_line(done.stdout) if done.returncode == 0 else f"exit {done.returncode}: {last_line(done.stderr)}"


def storage_faults(work: Path, rng: np.random.Generator) -> tuple[list[dict], dict]:
    good = work / "good.db"
    python(STUDY_PRELUDE + f"""
        with Study(space, "rs", storage={str(good)!r}, seed=0, n_initial=2) as study:
            for _ in range(6):
                t = study.ask(); study.tell(t, so.value(t.config))
    """, work)
    data = good.read_bytes()
    cases: list[tuple[str, Path, bool]] = []

    def copy(name: str, sql: str | None = None) -> Path:
        p = work / name
        shutil.copy(good, p)
        if sql:
            conn = sqlite3.connect(str(p), isolation_level=None)
            conn.execute(sql)
            conn.execute("PRAGMA journal_mode = DELETE")
            conn.close()
        return p

    (work / "truncated.db").write_bytes(data[: len(data) * 6 // 10])
    cases.append(("truncated to 60%", work / "truncated.db", False))
    cases.append(("stored index -1", copy("neg.db", "UPDATE trials SET row = json_set(row, '$[0]', -1) "
                                                    "WHERE number = 1"), False))
    cases.append(("stored value not its index", copy("mismatch.db", "UPDATE trials SET config = "
                                                     "json_set(config, '$.x1', 99) WHERE number = 3"), False))
    cases.append(("finish time in year 6026", copy("year.db", "UPDATE trials SET finished = "
                                                   "'60' || substr(finished, 3) WHERE number = 0"), False))
    cases.append(("complete without a value", copy("value.db", "UPDATE trials SET value = NULL WHERE number = 5"),
                  False))
    cases.append(("newer format", copy("newer.db", "UPDATE meta SET value = '99' WHERE key = 'format'"), False))
    (work / "notes.db").write_text("not a study\n")
    cases.append(("a text file", work / "notes.db", False))
    conn = sqlite3.connect(str(work / "foreign.db"))
    conn.execute("CREATE TABLE foo (x)")
    conn.commit()
    conn.close()
    cases.append(("another program's database", work / "foreign.db", False))
    (work / "folder.db").mkdir()
    cases.append(("a folder", work / "folder.db", False))
    ro_file = work / "ro_file" / "s.db"
    ro_file.parent.mkdir()
    shutil.copy(good, ro_file)
    ro_file.chmod(0o444)
    cases.append(("a read-only file", ro_file, True))
    ro_dir = work / "ro_dir" / "s.db"
    ro_dir.parent.mkdir()
    shutil.copy(good, ro_dir)
    ro_dir.parent.chmod(0o555)
    cases.append(("a read-only folder", ro_dir, True))
    rows = []
    for case, path, no_dac in cases:
        before = sha256(path)
        line = probe(work, path, no_dac)
        after = sha256(path)
        rows.append({"case": case, "result": line.split(":")[0] if not line.startswith("OPENED") else "OPENED",
                     "error": line, "sha256_before": before, "sha256_after": after, "unchanged": before == after})
    ro_dir.parent.chmod(0o755)
    # a full disk: a file-size limit in a minimize process
    full = work / "full.db"
    done = python(STUDY_PRELUDE + f"""
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        told = []
        run = lambda budget: gb.minimize(so.value, space, method="rs", budget=budget, seed=1, storage={str(full)!r},
                                         n_initial=0, callback=lambda n, c, v, o, s: told.append([n, v]))
        run(3)
        limit = os.path.getsize({str(full)!r}) + 256 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        try:
            run(3000)
        except StorageError as exc:
            print(type(exc).__name__ + ": " + str(exc), file=sys.stderr)
        print(json.dumps(told))
    """, work)
    told = json.loads(done.stdout)
    kept = {n: v for n, (s, _, v) in stored(full).items() if s == "complete"}
    rows.append({"case": "a full disk (RLIMIT_FSIZE) during minimize", "result": last_line(done.stderr).split(":")[0],
                 "error": last_line(done.stderr), "told": len(told),
                 "told_and_kept": sum(1 for n, v in told if kept.get(n) == v),
                 "stored_not_told": len(set(kept) - {n for n, _ in told}), "integrity": integrity(full)})
    # random single-bit flips past the header
    original = probe(work, good)
    flips: dict[str, Any] = {"refused": 0, "opened unchanged": 0, "opened altered": 0, "files": []}
    for i in range(24):
        flipped = bytearray(data)
        pos = int(rng.integers(100, len(data)))
        bit = int(rng.integers(0, 8))
        flipped[pos] ^= 1 << bit
        path = work / f"flip{i}.db"
        path.write_bytes(bytes(flipped))
        before = sha256(path)
        line = probe(work, path)
        if line.startswith("OPENED"):
            result = "opened unchanged" if line == original else "opened altered"
        else:
            result = "refused"
        flips[result] += 1
        after = sha256(path)
        flips["files"].append({"byte": pos, "bit": bit, "result": result, "error": "" if result != "refused" else line,
                               "sha256_before": before, "sha256_after": after, "unchanged": before == after})
    return rows, flips


# -- 4. misbehaving objectives --------------------------------------------------------------------------------------
def misbehaving(work: Path) -> list[dict]:
    rows = []
    for where, fn, workers in (("this process", "misbehave_here", 1), ("2 process workers", "misbehave", 2)):
        path = work / f"misbehave-{workers}.db"
        done = python(f"""
            import json, time, graphbo as gb, soak_objective as so
            from graphbo import parallel
            parallel.TIMEOUT_GRACE = 1.0
            space = gb.Space({{"a": gb.Ordinal(list(range(18)))}})
            t0 = time.monotonic()
            r = gb.minimize(so.{fn}, space, method="rs", budget=18, seed=0, n_initial=18, timeout=1.0,
                            n_workers={workers}, storage={str(path)!r})
            import multiprocessing
            print(json.dumps({{"seconds": time.monotonic() - t0, "pools_left": len(multiprocessing.active_children()),
                              "trials": [[t.config["a"], t.status, t.error, t.value] for t in r.trials]}}))
        """, work, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"misbehaving objectives in {where}: {done.stderr[-2000:]}")
        out = json.loads(last_line(done.stdout))
        by_a = {a: (s, e, v) for a, s, e, v in out["trials"]}
        for a, what in MISBEHAVIOURS.items():
            if workers == 1 and a in (8, 9, 10):
                continue  # they end the process they run in: left running for the resume (see kills)
            status, error, value = by_a[a]
            rows.append({"objective": what, "where": where, "status": status, "error": error})
        rows.append({"objective": "(the 4 well-behaved ones)", "where": where,
                     "status": ",".join(sorted({by_a[a][0] for a in range(14, 18)})),
                     "error": f"run {out['seconds']:.1f} s, {len(by_a)} of 18 trials finished, "
                              f"{out['pools_left']} pool processes left"})
    return rows


# -- 5. hostile input -----------------------------------------------------------------------------------------------
HOSTILE_CHILD = """
import json, resource, sys, time, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a runaway case fails instead of swapping
import yaml
import graphbo as gb
from graphbo.spaces.io import load_space
try:
    import ConfigSpace  # imported before the timing
    import graphbo.spaces.configspace
except ImportError:
    pass
rows = []
def configspace_with_a_condition():
    import ConfigSpace as CS
    from graphbo.spaces.configspace import from_configspace
    cs = CS.ConfigurationSpace(seed=0)
    a, b = CS.CategoricalHyperparameter("a", ["x", "y"]), CS.UniformFloatHyperparameter("b", 0.0, 1.0)
    cs.add([a, b])
    cs.add(CS.EqualsCondition(b, a, "x"))
    return from_configspace(cs)
CALLS = {"file": load_space, "categorical": lambda n: gb.Categorical(range(n)),
         "ordinal": lambda n: gb.Ordinal(range(n)), "configspace": lambda _: configspace_with_a_condition()}
for case, kind, arg in json.loads(sys.argv[1]):
    tracemalloc.start()
    start = time.perf_counter()
    try:
        CALLS[kind](arg)
        result = "ACCEPTED"
    except BaseException as exc:
        result = type(exc).__name__ + ": " + str(exc)[:300]
    seconds, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rows.append({"input": case, "result": result, "seconds": seconds, "peak_mib": peak / 2**20})
print(json.dumps(rows))
"""


def hostile(work: Path) -> list[dict]:
    folder = work / "hostile"
    folder.mkdir()
    marker = folder / "PWNED"
    lines = ["version:", "  l0: &l0 [" + ", ".join(['"lol"'] * 9) + "]"]
    lines += [f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    files = {
        "alias bomb (9 levels of 9 aliases, 1 KB)": ("bomb.yaml",
                                                     "\n".join(lines) + "\nvariables:\n  x: {type: binary}\n"),
        "!!python/object/apply:os.system tag": ("tag.yaml", f"version: !!python/object/apply:os.system "
                                                            f"['touch {marker}']\nvariables:\n  x: {{type: binary}}\n"),
        "!!python/name:os.system tag": ("name.yaml",
                                        "version: !!python/name:os.system\nvariables:\n  x: {type: binary}\n"),
        "JSON nested 100,000 deep": ("deep.json", "[" * 100_000 + "]" * 100_000),
        "YAML nested 10,000 deep": ("deep.yaml", "a: " + "[" * 10_000 + "]" * 10_000 + "\n"),
        "a 2 MiB file": ("big.yaml", "variables:\n  x: {type: binary}\n" + "#" * (2 << 20) + "\n"),
        "10**6 categories (a 7 MB file)": ("cats.json", json.dumps({"variables": {"c": {"type": "categorical",
                                                                          "choices": list(range(10**6))}}})),
        "10**5 ordinal values": ("ords.json", json.dumps({"variables": {"o": {"type": "ordinal",
                                                                              "values": list(range(10**5))}}})),
        "duplicate names": ("dup.yaml", "variables:\n  x: {type: binary}\n  x: {type: binary}\n"),
        "an empty name": ("empty.yaml", "variables:\n  '': {type: binary}\n"),
        "NaN bound": ("nan.yaml", "variables:\n  lr: {type: continuous, low: .nan, high: 1}\n"),
        "inverted bounds": ("inv.yaml", "variables:\n  lr: {type: continuous, low: 1, high: 0.5}\n"),
    }
    calls = []
    for case, (name, text) in files.items():
        (folder / name).write_text(text)
        calls.append((case, "file", name))
    calls += [("Python API: Categorical of 10**6 choices", "categorical", 10**6),
              ("Python API: Ordinal of 10**5 values", "ordinal", 10**5)]
    try:
        import ConfigSpace  # noqa: F401

        calls.append(("ConfigSpace with a condition", "configspace", None))
    except ImportError:
        pass
    prelude = f"import sys; sys.path[:0] = [{SRC!r}]\n"
    done = subprocess.run([sys.executable, "-c", prelude + HOSTILE_CHILD, json.dumps(calls)], cwd=folder, env=env(),
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"hostile input: {done.stderr[-2000:]}")
    rows = json.loads(last_line(done.stdout))
    for r in rows:
        r["marker_created"] = marker.exists()
    # objective specs naming the standard library, on the command line and in a study file
    (folder / "space.yaml").write_text("variables:\n  touch: {type: ordinal, values: [0, 1]}\n"
                                       "  PWNED: {type: ordinal, values: [0, 1]}\n")
    (folder / "user_objective.py").write_text("def objective(config):\n    return float(sum(config.values()))\n")
    for spec in ("subprocess:run", "os:system"):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "graphbo", "run", "--space", "space.yaml", "--objective", spec,
                               "--method", "rs", "--budget", "2", "--storage", "spec.db"], cwd=folder, env=env(),
                              capture_output=True, text=True, timeout=120)
        rows.append({"input": f"graphbo run --objective {spec}", "result": last_line(done.stderr),
                     "seconds": time.perf_counter() - t0, "exit": done.returncode,
                     "marker_created": marker.exists(), "study_created": (folder / "spec.db").exists()})
    study = folder / "user.db"
    subprocess.run([sys.executable, "-m", "graphbo", "run", "--space", "space.yaml", "--objective",
                    "user_objective:objective", "--method", "rs", "--budget", "2", "--seed", "0", "--storage",
                    str(study), "--quiet"], cwd=folder, env=env(), capture_output=True, text=True, timeout=120)
    # edited as someone else could, through graphbo itself, so that the rows' checksums hold and the file
    # reaches the objective check (a raw SQL edit of the meta table is refused earlier, as corrupt)
    from graphbo.spaces import load_space
    from graphbo.storage.info import read_study_info
    from graphbo.study import Study

    info = read_study_info(str(study))
    with Study(load_space(folder / "space.yaml"), info["method"], storage=str(study), seed=info["seed"],
               **info["method_options"]) as edited:
        edited.set_user_attr("objective", "subprocess:run")
        edited.set_user_attr("budget", 4)
    conn = sqlite3.connect(str(study), isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    for flags in ([], ["--trust-stored-objective"]):
        before = sha256(study)
        done = subprocess.run([sys.executable, "-m", "graphbo", "resume", str(study), *flags], cwd=folder,
                              env=env(), capture_output=True, text=True, timeout=120)
        rows.append({"input": "graphbo resume of a file edited to name subprocess:run"
                              + (" --trust-stored-objective" if flags else ""),
                     "result": last_line(done.stderr)[:300], "exit": done.returncode,
                     "marker_created": marker.exists(), "unchanged": before == sha256(study)})
    return rows


# -- report ---------------------------------------------------------------------------------------------------------
def table(title: str, rows: list[dict], columns: list[str], width: int = 70) -> None:
    print(f"\n== {title}")
    cells = [[str(r.get(c, ""))[:width] for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=3, help="SIGKILLs per run (6 runs)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments and bit flips")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--parts", default="kills,concurrent,storage,objectives,hostile",
                        help="comma-separated parts to run")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    rng = np.random.default_rng(args.seed)
    work = Path(tempfile.mkdtemp(prefix="graphbo-soak-"))
    (work / "soak_objective.py").write_text(OBJECTIVE_MODULE)
    (work / "space.yaml").write_text(SPACE_YAML)
    sys.path[:0] = [SRC, str(work)]
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
                               "cpus": os.cpu_count(), "python": platform.python_version(),
                               "command": "python benchmarks/soak.py " + " ".join(sys.argv[1:]), "seed": args.seed}
    t0 = time.monotonic()
    try:
        if "kills" in parts:
            runs = [("rs-sequential", "minimize", "rs", 40, 1), ("combo-sequential", "minimize", "combo", 16, 1),
                    ("rs-2-workers", "minimize", "rs", 40, 2), ("rs-2-dask-workers", "dask", "rs", 40, 2),
                    ("cli-sequential", "cli", "rs", 30, 1),
                    ("cli-2-workers", "cli", "rs", 30, 2)]
            results["kills"] = [soak_run(work, name, kind, method, budget, workers, args.kills, rng, args.seed)
                                for name, kind, method, budget, workers in runs]
            table("SIGKILL at random moments, each resumed to the end", results["kills"],
                  ["run", "how", "method", "workers", "kills", "told_before_a_kill", "in_flight_at_kills", "lost",
                   "duplicated", "altered", "complete", "failed", "integrity_failures", "orphan_workers",
                   "trace_equals_uninterrupted", "seconds"])
        if "concurrent" in parts:
            results["concurrent"] = concurrent(work)
            table("Concurrent writers", results["concurrent"], ["case", "result", "unchanged", "seconds_to_refuse",
                                                                 "error"], width=110)
        if "storage" in parts:
            results["storage_faults"], results["bit_flips"] = storage_faults(work, rng)
            table("Storage faults (sha256 of the file before and after)", results["storage_faults"],
                  ["case", "result", "unchanged", "sha256_before", "error"], width=90)
            print("24 random bit flips:", {k: v for k, v in results["bit_flips"].items() if k != "files"},
                  "; refused files byte-identical after:",
                  sum(f["unchanged"] for f in results["bit_flips"]["files"] if f["result"] == "refused"))
        if "objectives" in parts:
            results["misbehaving_objectives"] = misbehaving(work)
            table("Misbehaving objectives", results["misbehaving_objectives"], ["objective", "where", "status",
                                                                                 "error"], width=90)
        if "hostile" in parts:
            results["hostile_input"] = hostile(work)
            for r in results["hostile_input"]:
                r["seconds"] = round(r.get("seconds", 0.0), 3)
                if "peak_mib" in r:
                    r["peak_mib"] = round(r["peak_mib"], 1)
            table("Hostile input", results["hostile_input"], ["input", "seconds", "peak_mib", "marker_created",
                                                              "result"], width=100)
    finally:
        for folder in (work / "ro_dir", ):
            if folder.exists():
                folder.chmod(0o755)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)
    results["seconds"] = round(time.monotonic() - t0, 1)
    failures = summary(results)
    results["failures"] = failures
    print(f"\n{len(failures)} failed checks" + "".join(f"\n  {f}" for f in failures) + f"; {results['seconds']} s")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1, default=str) + "\n")
    return 1 if failures else 0


def summary(results: dict) -> list[str]:
    """The checks that must hold, as messages for those that do not."""
    bad = []
    for r in results.get("kills", []):
        for key in ("lost", "duplicated", "altered", "running", "integrity_failures", "orphan_workers"):
            if r[key]:
                bad.append(f"{r['run']}: {key} = {r[key]}")
        if r.get("trace_equals_uninterrupted") is False and r["failed"] == 0:
            bad.append(f"{r['run']}: the resumed trace differs from an uninterrupted run")
    if "kills" in results and sum(r["kills"] for r in results["kills"]) < 10:
        bad.append("fewer than 10 kills")
    for r in results.get("concurrent", []):
        if r.get("unchanged") is False or r.get("duplicated") or r.get("integrity_error"):
            bad.append(f"concurrent: {r['case']}")
    for r in results.get("storage_faults", []):
        if r.get("unchanged") is False or r.get("result") == "OPENED" or r.get("stored_not_told") or (
                "told" in r and r["told_and_kept"] != r["told"]):
            bad.append(f"storage: {r['case']}")
    if results.get("bit_flips", {}).get("opened altered"):
        bad.append("a bit flip opened altered")
    if not all(f["unchanged"] for f in results.get("bit_flips", {}).get("files", []) if f["result"] == "refused"):
        bad.append("a refused bit-flipped file changed")  # one that opens is a study again: it gets written
    for r in results.get("misbehaving_objectives", []):
        if r["objective"].startswith("(") and (r["status"] != "complete" or "0 pool" not in r["error"]):
            bad.append(f"objectives in {r['where']}: the run did not go on cleanly")
        elif not r["objective"].startswith("(") and r["status"] != "failed":
            bad.append(f"objective that {r['objective']} in {r['where']}: {r['status']}")
    for r in results.get("hostile_input", []):
        if r.get("marker_created") or r.get("result") == "ACCEPTED" or r.get("unchanged") is False \
                or r.get("study_created"):
            bad.append(f"hostile: {r['input']}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
