"""A graphbo study as an Optuna study, to look at in optuna-dashboard.

``export_to_optuna("study.db", "sqlite:///optuna.db")`` writes one Optuna study holding the
graphbo study's trials: the same configurations (in the variables' own values), values (in
the user's sign), states and direction. Optuna's distributions are chosen per variable from
the study's stored space description:

==========================================  ============================================
graphbo variable                            Optuna distribution
==========================================  ============================================
``Ordinal`` of integers ``a, a+s, ..., b``  ``IntDistribution(a, b, step=s)``
other ``Ordinal``, ``Categorical``,         ``CategoricalDistribution(values)`` (values
``Binary``, ``GraphVariable``               that are not JSON scalars as their ``str``)
``IntegerRange`` (``Integer`` beyond the    ``IntDistribution(low, high, log=log)``
ordinal limit)
``Continuous``                              ``FloatDistribution(low, high, log=log)``
==========================================  ============================================

An architecture space (NASBOT) has no per-variable parameters: its trials carry the
architecture's description as the user attribute ``config`` and no parameters. Every
exported trial keeps its graphbo number (``graphbo_number``), and failed ones their error.
The exported study is a copy: graphbo never reads it back.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
from typing import Any

from .._lazy import require
from ..storage import StorageError
from ..optimizers.tpe import _quiet_optuna
from ..storage.base import stored_direction
from ..storage.info import load_study_file

__all__ = ["export_to_optuna", "optuna_distributions"]

_SCALARS = (str, int, float, bool, type(None))


def _grid(values: list[Any]) -> tuple[int, int, int] | None:
    """``(low, high, step)`` if ``values`` are integers in one increasing arithmetic progression."""
    if len(values) < 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    step = values[1] - values[0]
    if step <= 0 or any(b - a != step for a, b in zip(values, values[1:])):
        return None
    return values[0], values[-1], step


def _choice(value: Any) -> Any:
    return value if isinstance(value, _SCALARS) else str(value)


def optuna_distributions(space_description: list[dict[str, Any]]) -> dict[str, Any]:
    """Optuna distributions by variable name for a stored space description (``graphbo.study.describe_space``).

    Raises ``ValueError`` for a variable class it does not know.
    """
    dist = require("optuna.distributions", "exporting to Optuna", "optuna")
    out: dict[str, Any] = {}
    for d in space_description:
        name, cls = d["name"], d["class"]
        if "values" in d:
            grid = _grid(d["values"]) if cls == "Ordinal" else None
            out[name] = (dist.IntDistribution(grid[0], grid[1], step=grid[2]) if grid is not None
                         else dist.CategoricalDistribution([_choice(v) for v in d["values"]]))
        elif cls == "IntegerRange":
            out[name] = dist.IntDistribution(int(d["low"]), int(d["high"]), log=bool(d.get("log", False)))
        elif cls == "Continuous":
            out[name] = dist.FloatDistribution(float(d["low"]), float(d["high"]), log=bool(d.get("log", False)))
        else:
            raise ValueError(f"variable {name!r}: no Optuna distribution for a graphbo {cls}")
    return out


def _time(text: str | None) -> _dt.datetime | None:
    return None if text is None else _dt.datetime.fromisoformat(text)


#: the Optuna study's user attribute that says its export finished (an export killed midway leaves it False)
EXPORT_DONE = "graphbo_export_complete"
IF_EXISTS = ("fail", "replace", "skip")


def export_to_optuna(path: str | os.PathLike, optuna_storage: str, *, study_name: str | None = None,
                     if_exists: str = "fail") -> Any:
    """Write the graphbo study at ``path`` as a new Optuna study in ``optuna_storage`` (an Optuna storage URL,
    e.g. ``"sqlite:///optuna.db"``) named ``study_name`` (default: the file's stem); returns the Optuna study.

    The study is marked unfinished (user attribute :data:`EXPORT_DONE` ``False``) until its last trial is
    written, and deleted if the export fails or is interrupted; one left unfinished by a killed export is
    replaced by the next export of that name. An existing finished study of that name: ``if_exists="fail"``
    (the default) raises :class:`~graphbo.storage.StorageError`, ``"replace"`` deletes it first, ``"skip"``
    returns it unchanged.

    Raises :class:`~graphbo.storage.StorageError` if ``path`` is not a graphbo study.
    """
    return _export(path, optuna_storage, study_name, if_exists=if_exists)[0]


def _export(path: str | os.PathLike, optuna_storage: str, study_name: str | None, *,
            if_exists: str) -> tuple[Any, int | None]:
    """:func:`export_to_optuna`, and the number of trials written (``None`` when an existing study was kept)."""
    if if_exists not in IF_EXISTS:
        raise ValueError(f"if_exists must be one of {list(IF_EXISTS)}, got {if_exists!r}")
    optuna = require("optuna", "exporting to Optuna", "optuna")
    path = os.fspath(path)
    stored = load_study_file(path)
    direction = stored_direction(stored.meta)
    if direction is None:
        raise StorageError(f"{path}: the stored direction {stored.meta.get('direction')!r} is damaged")
    description = stored.meta.get("space")
    per_variable = isinstance(description, list)
    distributions = optuna_distributions(description) if isinstance(description, list) else {}
    name = study_name or os.path.splitext(os.path.basename(path))[0]
    with _quiet_optuna(optuna):  # no "A new study created" line in the middle of graphbo's output
        existing = _existing(optuna, optuna_storage, name)
        if existing is not None:
            if existing.user_attrs.get(EXPORT_DONE) is False or if_exists == "replace":
                optuna.delete_study(study_name=name, storage=optuna_storage)
            elif if_exists == "skip":
                return existing, None
            else:
                raise StorageError(f"{optuna_storage}: has an Optuna study named {name!r} already; give another "
                                   "--study-name, or --if-exists replace (or skip)")
        directions = stored.meta.get("directions")
        if isinstance(directions, list) and len(directions) > 1:  # several objectives: one direction each
            study = optuna.create_study(storage=optuna_storage, study_name=name, directions=directions)
        else:
            study = optuna.create_study(storage=optuna_storage, study_name=name, direction=direction)
    try:
        study.set_user_attr(EXPORT_DONE, False)
        _write_trials(optuna, study, stored, per_variable, distributions)
        study.set_user_attr(EXPORT_DONE, True)
    except BaseException:
        with contextlib.suppress(Exception):
            optuna.delete_study(study_name=name, storage=optuna_storage)
        raise
    return study, len(stored.trials)


def _existing(optuna: Any, storage: str, name: str) -> Any:
    """The Optuna study ``name`` in ``storage``, or ``None``."""
    try:
        return optuna.load_study(study_name=name, storage=storage)
    except KeyError:  # Optuna's "no such study"
        return None


def _write_trials(optuna: Any, study: Any, stored: Any, per_variable: bool, distributions: dict[str, Any]) -> None:
    """Add the stored trials to the Optuna ``study``: in one transaction where the storage is an Optuna RDB
    storage of a known schema (:func:`_add_trials_in_one_transaction`), else by Optuna's ``add_trials``."""
    study.set_user_attr("graphbo_method", stored.meta.get("method"))
    study.set_user_attr("graphbo_seed", stored.meta.get("seed"))
    state = optuna.trial.TrialState
    states = {"complete": state.COMPLETE, "failed": state.FAIL, "running": state.RUNNING, "pruned": state.PRUNED}
    frozen = []
    for t in sorted(stored.trials, key=lambda t: t.number):
        attrs: dict[str, Any] = {"graphbo_number": t.number, **{k: _choice(v) for k, v in t.attrs.items()}}
        if t.error is not None:
            attrs["error"] = t.error
        if per_variable:  # the trial's active variables (a conditional one that is inactive has no value)
            params = {k: _choice(t.config[k]) for k in distributions if k in t.config}
        else:
            params, attrs["config"] = {}, str(t.config)
        complete = t.status == "complete"
        several = "values" in t.attrs
        system = {"constraints": list(t.attrs["constraints"])} if "constraints" in t.attrs else {}  # Optuna's key
        status = "pruned" if t.status == "failed" and "pruned" in t.attrs else t.status
        curve = {int(k): float(v) for k, v in (t.attrs.get("intermediate") or {}).items()}
        trial = optuna.trial.create_trial(
            state=states[status], value=t.value if complete and not several else None,
            intermediate_values=curve or None,
            values=list(t.attrs["values"]) if complete and several else None,
            params=params, distributions={k: distributions[k] for k in params} if per_variable else {},
            user_attrs=attrs, system_attrs=system)
        trial.datetime_start = _time(t.started)
        if t.status != "running":
            trial.datetime_complete = _time(t.finished)
        frozen.append(trial)
    if not _add_trials_in_one_transaction(optuna, study, frozen):
        study.add_trials(frozen)


#: the Optuna RDB schema (``RDBStorage.get_current_version()``) whose tables
#: :func:`_add_trials_in_one_transaction` writes; any other goes through Optuna's ``add_trials``
KNOWN_RDB_SCHEMA = "v3.2.0.a"


def _add_trials_in_one_transaction(optuna: Any, study: Any, frozen: list[Any]) -> bool:
    """Insert ``frozen`` into a new, empty study of an Optuna RDB storage in one transaction, as Optuna's
    ``add_trials`` would store them; ``False`` (nothing written) for any other storage or schema version.

    Optuna's ``add_trials`` commits each trial on its own and counts the study's earlier trials for every one,
    so its cost grows with the square of the trials (a 50,000-trial export did not end in 10 minutes);
    here every row of a table goes in one ``executemany``, with the values in Optuna's stored forms
    (``value_to_stored_repr``, the distributions' internal representation and JSON).
    """
    import json

    from optuna.distributions import distribution_to_json
    from optuna.storages import RDBStorage
    from optuna.storages._rdb import models

    backend = getattr(study._storage, "_backend", study._storage)  # Optuna wraps an RDBStorage in a cache
    if not isinstance(backend, RDBStorage) or backend.get_current_version() != KNOWN_RDB_SCHEMA:
        return False
    study_id = study._study_id
    if backend.get_n_trials(study_id) != 0:
        return False
    with backend.engine.begin() as conn:
        conn.execute(models.TrialModel.__table__.insert(), [
            {"number": i, "study_id": study_id, "state": t.state, "datetime_start": t.datetime_start,
             "datetime_complete": t.datetime_complete} for i, t in enumerate(frozen)])
        table = models.TrialModel.__table__
        ids = dict(conn.execute(table.select().with_only_columns(table.c.number, table.c.trial_id)
                                .where(table.c.study_id == study_id)).fetchall())
        values, params, user, system, curves = [], [], [], [], []
        for i, t in enumerate(frozen):
            trial_id = ids[i]
            for objective, value in enumerate(t.values or []):
                stored, kind = models.TrialValueModel.value_to_stored_repr(value)
                values.append({"trial_id": trial_id, "objective": objective, "value": stored, "value_type": kind})
            for name, value in t.params.items():
                dist = t.distributions[name]
                params.append({"trial_id": trial_id, "param_name": name, "param_value": dist.to_internal_repr(value),
                               "distribution_json": distribution_to_json(dist)})
            user += [{"trial_id": trial_id, "key": k, "value_json": json.dumps(v)} for k, v in t.user_attrs.items()]
            system += [{"trial_id": trial_id, "key": k, "value_json": json.dumps(v)} for k, v in t.system_attrs.items()]
            for step, value in t.intermediate_values.items():
                curve_value, curve_kind = models.TrialIntermediateValueModel.intermediate_value_to_stored_repr(value)
                curves.append({"trial_id": trial_id, "step": step, "intermediate_value": curve_value,
                               "intermediate_value_type": curve_kind})
        for model, rows in ((models.TrialValueModel, values), (models.TrialParamModel, params),
                            (models.TrialUserAttributeModel, user), (models.TrialSystemAttributeModel, system),
                            (models.TrialIntermediateValueModel, curves)):
            if rows:
                conn.execute(model.__table__.insert(), rows)
    return True
