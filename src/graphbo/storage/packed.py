"""Benchmark runs packed into a compact, versioned data set: what the committed reports are made from.

A folder of run files (``FOLDER/METHOD/seedS.db``, as ``graphbo compare --out FOLDER`` writes them) packs into one
LZMA-compressed JSON-lines table per comparison folder, ``OUT/FOLDER.runs.jsonl.xz``, one line per run:

- ``run``: the run file's path below the comparison's folder (``combo/seed0.db``);
- ``head``: the run's description (:class:`~graphbo.storage.runs.RunData`'s ``head``: spec, label, ...);
- ``beta``: COMBO's posterior mean ``beta_i`` at the end of the run, the one part of the optimizer state a
  report shows (``null`` for the other methods);
- ``keys``: the variable names, when every configuration is a flat dictionary of them (else ``null`` and each
  configuration is stored whole);
- ``trials``: one row per complete evaluation, in the order the optimizer learnt them:
  ``[config, value, suggest_seconds, evaluate_seconds]`` (plus ``fidelity`` for a multi-fidelity run), the
  configuration as its values in the order of ``keys``. Values are stored exactly; the two times are rounded
  to 0.1 ms.

``OUT/MANIFEST.json`` lists every table with its SHA-256, its run and trial counts, and the format, graphbo
version, commit and command that packed it; :func:`verify_manifest` checks the tables against it.
:func:`read_packed` reads a table back into :class:`~graphbo.storage.runs.RunData`, one per run.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
from collections import defaultdict
from typing import Any, Iterable, Sequence

from .base import TraceError, graphbo_version
from .runs import RunData

__all__ = ["PACKED_SUFFIX", "PACK_FORMAT", "pack_runs", "read_packed", "verify_manifest"]

PACKED_SUFFIX = ".runs.jsonl.xz"
#: the newest packed-table format this graphbo reads
PACK_FORMAT = 1
MANIFEST = "MANIFEST.json"
#: times are stored to this many decimals of a second
_TIME_DECIMALS = 6


def _beta(state: dict[str, Any] | None) -> dict[str, float] | None:
    method = (state or {}).get("method") or {}
    beta = method.get("beta") if isinstance(method, dict) else None
    return beta if isinstance(beta, dict) else None


def _flat_keys(evals: Sequence[dict[str, Any]]) -> list[str] | None:
    """The variable names if every configuration is a flat dictionary with the same names, else ``None``."""
    if not evals or not all(isinstance(e["config"], dict) for e in evals):
        return None
    keys = list(evals[0]["config"])
    flat = all(list(e["config"]) == keys and not any(isinstance(v, (dict, list)) for v in e["config"].values())
               for e in evals)
    return keys if flat else None


def pack_run(run: RunData, name: str) -> dict[str, Any]:
    """One line of a packed table: the run ``run``, stored as ``name`` below its benchmark's folder."""
    keys = _flat_keys(run.evals)
    fidelity = any("fidelity" in e for e in run.evals)
    rows = []
    for e in run.evals:
        config = [e["config"][k] for k in keys] if keys is not None else e["config"]
        row = [config, e["value"], round(float(e["suggest_seconds"]), _TIME_DECIMALS),
               round(float(e["evaluate_seconds"]), _TIME_DECIMALS)]
        if fidelity:
            row.append(e.get("fidelity"))
        rows.append(row)
    return {"run": name, "head": run.head, "beta": _beta(run.state), "keys": keys, "fidelity": fidelity,
            "trials": rows}


def unpack_run(line: dict[str, Any], path: str) -> RunData:
    """The :class:`RunData` of one line of the packed table ``path``."""
    keys, fidelity = line["keys"], line.get("fidelity", False)
    evals = []
    for i, row in enumerate(line["trials"]):
        config = dict(zip(keys, row[0])) if keys is not None else row[0]
        e = {"i": i, "config": config, "value": row[1], "suggest_seconds": row[2], "evaluate_seconds": row[3]}
        if fidelity:
            e["fidelity"] = row[4]
        evals.append(e)
    state = None if line.get("beta") is None else {"method": {"beta": line["beta"]}}
    return RunData(path=f"{path}#{line['run']}", head=line["head"], evals=evals, state=state)


def read_packed(path: str | os.PathLike) -> list[RunData]:
    """The runs of the packed table ``path``, in the order they were packed. Raises
    :class:`~graphbo.storage.base.TraceError` for a file that is not one, or of a newer format."""
    path = os.fspath(path)
    try:
        with lzma.open(path, "rt", encoding="utf-8") as fh:
            lines = [json.loads(text) for text in fh if text.strip()]
    except (OSError, lzma.LZMAError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: not a packed run table ({exc})") from None
    if not lines or not isinstance(lines[0], dict) or lines[0].get("packed_runs") is None:
        raise TraceError(f"{path}: not a packed run table (no header line)")
    fmt = lines[0]["packed_runs"]
    if not isinstance(fmt, int) or fmt > PACK_FORMAT:
        raise TraceError(f"{path}: written by a newer graphbo (packed format {fmt!r}; this graphbo reads up to "
                         f"{PACK_FORMAT}); upgrade graphbo to read it")
    try:
        return [unpack_run(line, path) for line in lines[1:]]
    except (KeyError, TypeError, IndexError) as exc:
        raise TraceError(f"{path}: corrupt packed run table ({type(exc).__name__}: {exc})") from None


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pack_runs(runs: Iterable[tuple[str, RunData]], out: str, *, commit: str | None = None,
              command: str | None = None) -> dict[str, Any]:
    """Pack ``runs``, pairs of (path below ``out``'s data set, run), e.g. ``("combo-paper/maxsat28/combo/seed0.db",
    run)``, into one table per comparison folder (the path without its ``METHOD/seedS.db``, as ``graphbo
    compare --out`` names it) under ``out``, and write ``out/MANIFEST.json`` (merged with the entries of tables
    packed before). Returns the manifest."""
    tables: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rel, run in runs:
        parts = rel.replace(os.sep, "/").split("/")
        if len(parts) < 3:
            raise ValueError(f"{rel}: expected FOLDER/.../METHOD/seedS.db (a run in a comparison's folder)")
        tables["/".join(parts[:-2])].append(pack_run(run, "/".join(parts[-2:])))
    manifest_path = os.path.join(out, MANIFEST)
    manifest: dict[str, Any] = {"format": PACK_FORMAT, "tables": {}}
    if os.path.exists(manifest_path):
        with open(manifest_path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    for table, lines in sorted(tables.items()):
        lines.sort(key=lambda line: line["run"])
        rel = table + PACKED_SUFFIX
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with lzma.open(tmp, "wt", encoding="utf-8", preset=9 | lzma.PRESET_EXTREME) as fh:
            fh.write(json.dumps({"packed_runs": PACK_FORMAT}) + "\n")
            for line in lines:
                fh.write(json.dumps(line, separators=(",", ":")) + "\n")
        os.replace(tmp, path)
        manifest["tables"][rel] = {"sha256": _sha256(path), "runs": len(lines),
                                   "trials": sum(len(line["trials"]) for line in lines),
                                   "graphbo_version": graphbo_version(), "commit": commit, "command": command}
    manifest["format"] = PACK_FORMAT
    manifest["tables"] = dict(sorted(manifest["tables"].items()))
    with open(manifest_path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    os.replace(manifest_path + ".tmp", manifest_path)
    return manifest


def verify_manifest(out: str) -> list[str]:
    """The problems of the data set under ``out`` against its manifest (a table missing, changed, or not
    listed); empty if it is whole."""
    with open(os.path.join(out, MANIFEST), encoding="utf-8") as fh:
        manifest = json.load(fh)
    problems = []
    for rel, entry in manifest["tables"].items():
        path = os.path.join(out, rel)
        if not os.path.exists(path):
            problems.append(f"{rel}: missing")
        elif _sha256(path) != entry["sha256"]:
            problems.append(f"{rel}: its SHA-256 differs from the manifest's")
    listed = set(manifest["tables"])
    for root, _, files in os.walk(out):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), out).replace(os.sep, "/")
            if rel.endswith(PACKED_SUFFIX) and rel not in listed:
                problems.append(f"{rel}: not in the manifest")
    return problems
