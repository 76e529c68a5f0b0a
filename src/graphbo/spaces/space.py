"""The search space: named discrete variables and their graph Cartesian product.

A configuration is a ``dict`` of native values (``{"lr": 0.1, "opt": "adam"}``);
internally it is an *index row*, one value index per variable, in the order
the variables were given. :class:`Space` converts between the two, validates
configurations at the boundary, samples uniformly and lists graph neighbours
on the product graph (COMBO Sec. 2.1: two configurations are adjacent when
they differ in one variable whose two values are adjacent in its sub-graph).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .conditions import INACTIVE_UNIT, check_conditions, topological_order, with_inactive_vertex
from .constraints import check_constraints
from .variables import AnyVariable, Continuous, Variable

#: configurations, and the seed that draws them, on which :meth:`Space.function_rule_fingerprints` records
#: each function rule's verdicts
FINGERPRINT_SAMPLES = 256
FINGERPRINT_SEED = 20261129

__all__ = ["Space", "MAX_REJECTION", "MAX_ENUMERATED"]

#: ``Space.size`` of a conditional space enumerates at most this many assignments of the parents (else ``inf``)
MAX_ENUMERATED = 1_000_000

#: rejection sampling under known constraints gives up when fewer than one draw in this many is allowed
MAX_REJECTION = 1000


def as_generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A NumPy generator from a seed, or the generator itself."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


class Space:
    """A search space of named variables: discrete ones (each with a graph) and continuous ones.

    Parameters
    ----------
    variables : mapping of str to Variable
        Variable name -> variable, in the order used for index rows.
    constraints : list of str or callable, optional
        Known constraints: rules a configuration must satisfy to be suggested at all, each an expression
        over the variable names (``"x + y <= 10"``) or a function ``config -> bool``
        (:mod:`graphbo.spaces.constraints`). Sampling draws only allowed configurations, and no optimizer
        suggests one that a rule refuses. A rule that names an inactive variable does not apply.
    conditions : dict, optional
        Conditional variables: ``{variable: {parent: value or list of values}}``, the variable active only
        when every parent is active and takes one of the values (:mod:`graphbo.spaces.conditions`, which
        also gives the kernels' rule for an inactive variable). Configurations hold their active variables.

    Examples
    --------
    >>> import graphbo as gb
    >>> space = gb.Space({"x": gb.Ordinal([1, 2, 3]), "c": gb.Categorical(["a", "b"])})
    >>> space.to_index({"x": 2, "c": "b"})
    array([1, 1])
    >>> space.from_index([0, 1])
    {'x': 1, 'c': 'b'}
    """

    def __init__(self, variables: Mapping[str, AnyVariable] | Iterable[tuple[str, AnyVariable]],
                 *, constraints: Sequence[str | Callable[[Mapping[str, Any]], Any]] | None = None,
                 conditions: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        if isinstance(variables, Mapping):
            items = list(variables.items())
        elif isinstance(variables, (str, bytes)) or not isinstance(variables, Iterable):
            raise TypeError("Space: variables must be a dict of variable names to variables (or a list of "
                            f"(name, variable) pairs), got {variables!r} ({type(variables).__name__})")
        else:
            items = list(variables)
            for item in items:
                if not (isinstance(item, tuple) and len(item) == 2):
                    raise TypeError("Space: variables must be a dict of variable names to variables (or a list of "
                                    f"(name, variable) pairs); an entry is {item!r}")
        if not items:
            raise ValueError("Space: variables is empty; at least one variable is needed")
        names: set[str] = set()
        for name, var in items:
            if not isinstance(name, str) or not name:
                raise ValueError(f"Space: variable names must be non-empty strings, got {name!r}")
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: no file, report or terminal can hold it
                raise ValueError(f"Space: variable name {name!r} is not valid Unicode text (a lone surrogate)") \
                    from None
            if name in names:
                raise ValueError(f"Space: duplicate variable name {name!r}")
            if not isinstance(var, (Variable, Continuous)):
                raise ValueError(
                    f"Space: variable {name!r} must be a graphbo variable (Binary, Categorical, Ordinal, "
                    f"GraphVariable, Continuous, Integer), got {var!r}"
                )
            if var.name is not None and var.name != name:
                raise ValueError(
                    f"Space: variable object {var!r} is already used under the name {var.name!r}; "
                    f"create a new one for {name!r}"
                )
            names.add(name)
        for name, var in items:
            var.name = name
        #: the variables as given (a conditional discrete one without its inactive vertex)
        self._declared: dict[str, AnyVariable] = dict(items)
        #: ``{variable: {parent: values}}`` (:mod:`graphbo.spaces.conditions`); empty without conditions
        self.conditions = check_conditions(conditions, self._declared)
        self._variables: dict[str, AnyVariable] = dict(items)
        for child in self.conditions:
            var = self._declared[child]
            if isinstance(var, Variable):
                ext = with_inactive_vertex(var)
                ext.name = child
                self._variables[child] = ext
        self.names: tuple[str, ...] = tuple(self._variables)
        #: number of values of each variable (0 for continuous ones)
        self.n_values = np.array([v.n_values for v in self._variables.values()], dtype=np.int64)
        #: positions of the discrete (graph) and continuous variables in a row
        self.discrete_indices = np.array([j for j, v in enumerate(self._variables.values()) if isinstance(v, Variable)],
                                         dtype=np.int64)
        self.continuous_indices = np.array(
            [j for j, v in enumerate(self._variables.values()) if isinstance(v, Continuous)], dtype=np.int64)
        #: a row holds value indices (int64) in a discrete space; with continuous variables it is float64,
        #: holding value indices for discrete variables and unit coordinates in [0, 1] for continuous ones
        self.row_dtype = np.float64 if self.continuous_indices.size else np.int64
        #: the known constraints (:class:`graphbo.spaces.constraints.KnownConstraint`), empty without
        self.constraints = check_constraints(constraints, self.names)
        position = {n: j for j, n in enumerate(self.names)}
        #: per conditional variable, in an order where parents come first: its position, and each parent's
        #: position with the value indices that activate it
        self._condition_rows = [
            (position[child], [(position[p], np.array([self._declared[p].index_of(v) for v in vals]))  # type: ignore[union-attr]
                               for p, vals in self.conditions[child].items()])
            for child in topological_order(self.conditions, list(self.names)) if child in self.conditions]
        #: values drawn per variable when sampling (a conditional variable's inactive vertex is never drawn)
        self._draw_values = np.array([v.n_values for v in self._declared.values()], dtype=np.int64)

    # -- container protocol -------------------------------------------------
    @property
    def variables(self) -> list[AnyVariable]:
        """The variables in row order (discrete ones at :attr:`discrete_indices`, continuous ones at
        :attr:`continuous_indices`)."""
        return list(self._variables.values())

    def __getitem__(self, name: str) -> AnyVariable:
        return self._variables[name]

    def __len__(self) -> int:
        return len(self._variables)

    def __iter__(self) -> Iterator[str]:
        return iter(self._variables)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {v!r}" for k, v in self._declared.items())
        rules = f", constraints={[c.description for c in self.constraints]!r}" if self.constraints else ""
        conds = f", conditions={ {k: {p: list(v) for p, v in c.items()} for k, c in self.conditions.items()}!r}" \
            if self.conditions else ""
        return f"Space({{{inner}}}{rules}{conds})"

    @property
    def declared_variables(self) -> list[AnyVariable]:
        """The variables as given, in row order (a conditional discrete variable without its inactive vertex)."""
        return list(self._declared.values())

    # -- conditions ---------------------------------------------------------
    def active_mask(self, rows: np.ndarray) -> np.ndarray:
        """Which variable is active in each index row, ``(m, d)`` booleans (all True without conditions)."""
        rows = np.asarray(rows).reshape(-1, len(self))
        active = np.ones(rows.shape, dtype=bool)
        for j, parents in self._condition_rows:
            on = np.ones(rows.shape[0], dtype=bool)
            for p, allowed in parents:
                on &= active[:, p] & np.isin(rows[:, p].astype(np.int64), allowed)
            active[:, j] = on
        return active

    def canonical(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` (a copy) with every conditional variable in canonical form: an inactive one on its inactive
        vertex (a continuous one at unit 0.5), an active one off it (moved to its first value)."""
        rows = np.array(rows, dtype=self.row_dtype).reshape(-1, len(self))
        if not self._condition_rows:
            return rows
        active = np.ones(rows.shape, dtype=bool)
        for j, parents in self._condition_rows:  # parents first: a parent's value is final when its child is set
            on = np.ones(rows.shape[0], dtype=bool)
            for p, allowed in parents:
                on &= active[:, p] & np.isin(rows[:, p].astype(np.int64), allowed)
            active[:, j] = on
            if self.n_values[j] > 0:
                inactive_index = self.n_values[j] - 1
                rows[~on, j] = inactive_index
                rows[on & (rows[:, j] == inactive_index), j] = 0
            else:
                rows[~on, j] = INACTIVE_UNIT
        return rows

    @property
    def is_discrete(self) -> bool:
        return self.continuous_indices.size == 0

    @property
    def size(self) -> int | float:
        """Number of configurations (vertices of the product graph) as an int; ``inf`` with continuous variables."""
        if not self.is_discrete:
            return math.inf
        if self.constraints:
            return self._allowed_size()
        if self.conditions:
            return self._conditional_size()
        out = 1
        for k in self.n_values:
            out *= int(k)
        return out

    def _allowed_size(self) -> int | float:
        """The number of configurations the known constraints allow, counted over every row when there are at
        most :data:`MAX_ENUMERATED` of them (else the count without the constraints, an upper bound)."""
        cached: int | None = self.__dict__.get("_allowed_count")
        if cached is not None:
            return cached
        total = 1
        for k in self._draw_values:
            total *= int(k)
        if total > MAX_ENUMERATED:
            return self._conditional_size() if self.conditions else total
        grids = np.stack(np.meshgrid(*[np.arange(int(k)) for k in self._draw_values], indexing="ij"),
                         -1).reshape(-1, len(self))
        rows = np.unique(self.canonical(grids), axis=0) if self.conditions else grids
        count = int(self.allowed_rows(rows).sum())
        self.__dict__["_allowed_count"] = count
        return count

    def _conditional_size(self) -> int | float:
        """The number of canonical rows: the parents' canonical assignments enumerated (``inf`` beyond
        :data:`MAX_ENUMERATED` of them), times the other variables' values where active."""
        parents = sorted({self.names.index(p) for c in self.conditions.values() for p in c})
        combos = 1
        for p in parents:
            combos *= int(self.n_values[p])
            if combos > MAX_ENUMERATED:
                return math.inf
        grids = np.stack(np.meshgrid(*[np.arange(int(self.n_values[p])) for p in parents], indexing="ij"),
                         -1).reshape(-1, len(parents))
        rows = np.zeros((grids.shape[0], len(self)), dtype=np.int64)
        rows[:, parents] = grids
        canon = self.canonical(rows)
        keep = np.all(canon[:, parents] == rows[:, parents], axis=1)  # each parent assignment once, canonical
        active = self.active_mask(canon[keep])
        others = [j for j in range(len(self)) if j not in parents]
        draw = self._draw_values
        total = 0
        for act in active:
            count = 1
            for j in others:
                count *= int(draw[j]) if act[j] else 1
            total += count
        return total

    # -- validation and encoding ------------------------------------------
    def validate(self, config: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` naming the problem if ``config`` is not in the space."""
        self.to_index(config)

    def to_index(self, config: Mapping[str, Any]) -> np.ndarray:
        """Row of a configuration (see :attr:`row_dtype`); ``ValueError`` for missing, extra or unknown values."""
        if not isinstance(config, Mapping):
            raise ValueError(f"a configuration must be a dict of variable name -> value, got {config!r}")
        extra = [k for k in config if k not in self._variables]
        if extra:
            raise ValueError(f"configuration {dict(config)!r} has unknown variable(s) {extra!r}")
        if self.conditions:
            return self._conditional_to_index(config)
        missing = [n for n in self.names if n not in config]
        if missing:
            raise ValueError(f"configuration {dict(config)!r} is missing variable(s) {missing!r}")
        return np.array([var.index_of(config[n]) if isinstance(var, Variable) else var.to_unit(config[n])
                         for n, var in self._variables.items()], dtype=self.row_dtype)

    def _conditional_to_index(self, config: Mapping[str, Any]) -> np.ndarray:
        row = np.zeros(len(self), dtype=self.row_dtype)
        filled = {n for n in self.names if n not in self.conditions}
        missing = [n for n in filled if n not in config]
        if missing:
            raise ValueError(f"configuration {dict(config)!r} is missing variable(s) {sorted(missing)!r}")
        for j, (n, var) in enumerate(self._declared.items()):
            if n in filled:
                row[j] = var.index_of(config[n]) if isinstance(var, Variable) else var.to_unit(config[n])
        active = np.ones(len(self), dtype=bool)
        for j, parents in self._condition_rows:
            name = self.names[j]
            on = all(active[p] and int(row[p]) in allowed for p, allowed in parents)
            active[j] = on
            var = self._declared[name]
            if on and name not in config:
                raise ValueError(f"configuration {dict(config)!r} is missing variable {name!r}, which is active "
                                 f"(its conditions {self._condition_text(name)} hold)")
            if not on and name in config:
                raise ValueError(f"configuration {dict(config)!r} gives variable {name!r}, which is inactive (its "
                                 f"conditions {self._condition_text(name)} do not hold); leave it out")
            if on:
                row[j] = var.index_of(config[name]) if isinstance(var, Variable) else var.to_unit(config[name])
            else:
                row[j] = self.n_values[j] - 1 if isinstance(var, Variable) else INACTIVE_UNIT
        return row

    def _condition_text(self, name: str) -> str:
        return " and ".join(f"{p} in {list(v)!r}" for p, v in self.conditions[name].items())

    def from_index(self, row: Iterable[int]) -> dict[str, Any]:
        """Configuration of an index row."""
        row = np.asarray(row, dtype=self.row_dtype).reshape(-1)
        if row.shape[0] != len(self):
            raise ValueError(f"index row has {row.shape[0]} entries, the space has {len(self)} variables")
        disc = self.discrete_indices
        bad = (row[disc] < 0) | (row[disc] >= self.n_values[disc])
        if np.any(bad):
            j = int(disc[np.flatnonzero(bad)[0]])
            raise ValueError(
                f"index {row[j]} is out of range for variable {self.names[j]!r} with {int(self.n_values[j])} values"
            )
        if self.conditions:  # of the canonical row: an active variable on its inactive vertex takes its first value
            canon = self.canonical(row[None])[0]
            active = self.active_mask(canon[None])[0]
            return {n: var.value_at(int(x)) if isinstance(var, Variable) else var.from_unit(float(x))
                    for (n, var), x, on in zip(self._declared.items(), canon, active) if on}
        return {n: var.value_at(int(x)) if isinstance(var, Variable) else var.from_unit(float(x))
                for (n, var), x in zip(self._variables.items(), row)}

    # -- known constraints ---------------------------------------------------
    def allows(self, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` satisfies every known constraint (always True for a space without); a rule that
        names a variable ``config`` does not hold (an inactive one) does not apply."""
        return all(c.allows(config) for c in self.constraints if all(n in config for n in c.names))

    def allowed_rows(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask of the index rows (``(m, d)``) whose configurations every known constraint allows."""
        rows = np.asarray(rows).reshape(-1, len(self))
        ok = np.ones(rows.shape[0], dtype=bool)
        if not self.constraints or not rows.shape[0]:
            return ok
        columns = self._columns(rows)
        active = self.active_mask(rows) if self.conditions else None
        position = {n: j for j, n in enumerate(self.names)}
        for rule in self.constraints:
            applies = ok.copy()
            if active is not None:  # a rule on an inactive variable does not apply
                for n in rule.names:
                    applies &= active[:, position[n]]
            todo = np.flatnonzero(applies)
            if not todo.size:
                continue
            sub = {k: v[todo] for k, v in columns.items()}
            ok[todo] = rule.allows_columns(sub, lambda: [self.from_index(r) for r in rows[todo]])
        return ok

    def _columns(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Each variable's values at ``rows``, as arrays (numbers as int or float arrays, other values as objects)."""
        out: dict[str, np.ndarray] = {}
        for j, (name, var) in enumerate(self._declared.items()):
            if isinstance(var, Variable):
                values = list(var.values) + ([var.values[0]] if name in self.conditions else [])  # inactive: a filler
                numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                              for v in values)
                # numbers as float64: int64 arithmetic would wrap around where Python's integers do not
                table = np.asarray(values, dtype=float) if numeric else np.asarray(values, dtype=object)
                out[name] = table[rows[:, j].astype(np.int64)]
            else:
                out[name] = np.array([var.from_unit(float(u)) for u in rows[:, j]])
        return out

    # -- sampling -----------------------------------------------------------
    def sample_index(self, n: int, seed: int | np.random.Generator | None = None) -> np.ndarray:
        """``n`` index rows drawn uniformly (with replacement) among the allowed configurations, shape
        ``(n, n_variables)``.

        With known constraints the draws are rejection-sampled; ``ValueError`` when fewer than one in
        :data:`MAX_REJECTION` draws is allowed (the rules allow almost nothing).
        """
        rng = as_generator(seed)
        if not self.constraints:
            return self._sample_unconstrained(n, rng)
        out: list[np.ndarray] = []
        drawn, have = 0, 0
        while have < n:
            batch = self._sample_unconstrained(max(64, 2 * (n - have)), rng)
            drawn += batch.shape[0]
            ok = batch[self.allowed_rows(batch)]
            out.append(ok[: n - have])
            have += out[-1].shape[0]
            if have < n and drawn > MAX_REJECTION * max(n, 1) and drawn >= 10_000:
                raise ValueError(f"the space's constraints allow {have} of {drawn} random configurations; "
                                 f"fewer than 1 in {MAX_REJECTION} is too few to sample "
                                 f"(constraints: {[c.description for c in self.constraints]})")
        return np.concatenate(out)[:n] if out else self._sample_unconstrained(0, rng)

    def function_rule_fingerprints(self, n: int = FINGERPRINT_SAMPLES) -> dict[str, str]:
        """For each known constraint given as a Python function (expressions are stored as their text): its
        verdicts on ``n`` configurations drawn uniformly from the space with a fixed seed, packed into a hex
        string. A study stores them, so that resuming it with a different function of the same name is
        refused instead of silently changing which configurations may be suggested."""
        functions = [c for c in self.constraints if not c.is_expression]
        if not functions:
            return {}
        configs = [self.from_index(r) for r in self._sample_unconstrained(n, np.random.default_rng(FINGERPRINT_SEED))]
        return {c.description: np.packbits([c.allows(cfg) for cfg in configs]).tobytes().hex() for c in functions}

    def _sample_unconstrained(self, n: int, rng: np.random.Generator) -> np.ndarray:
        u = rng.random((n, len(self)))
        if self.is_discrete:
            return self.canonical((u * self._draw_values).astype(np.int64))
        cont = self.continuous_indices
        unit = u[:, cont]  # the continuous columns' uniform draws, before ``u`` becomes the index rows
        rows = np.floor(np.multiply(u, np.maximum(self._draw_values, 1), out=u), out=u)  # in place: large pools
        for k, j in enumerate(cont):
            rows[:, j] = self.variables[j].snap(unit[:, k])
        return self.canonical(rows) if self.conditions else rows

    def sample(self, n: int = 1, seed: int | np.random.Generator | None = None) -> list[dict[str, Any]]:
        """``n`` configurations drawn uniformly from the space."""
        return [self.from_index(r) for r in self.sample_index(n, seed)]

    # -- graph structure ----------------------------------------------------
    def neighbor_index(self, row: Iterable[int]) -> np.ndarray:
        """All neighbours of an index row on the product graph, shape ``(n_neighbors, n_variables)``."""
        row = np.asarray(row, dtype=self.row_dtype).reshape(-1)
        blocks = []
        for j in self.discrete_indices:
            nb = self._moves(j)[int(row[j])]
            if nb.size:
                block = np.repeat(row[None, :], nb.size, axis=0)
                block[:, j] = nb
                blocks.append(block)
        if not blocks:
            return np.empty((0, len(self)), dtype=self.row_dtype)
        out = np.concatenate(blocks, axis=0)
        if self.conditions:
            out = self.canonical(out)
            out = np.unique(out[np.any(out != row, axis=1)], axis=0)
        return out

    def neighbor_index_batch(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All neighbours of many index rows at once.

        Returns
        -------
        neighbors : ndarray, shape (N, n_variables)
        owner : ndarray, shape (N,)
            ``owner[i]`` is the position in ``rows`` of the row that ``neighbors[i]`` is adjacent to.
        """
        rows = np.asarray(rows, dtype=self.row_dtype)
        nbrs, owners = [], []
        for j, table in enumerate(self._neighbor_tables):
            if table.shape[1] == 0:
                continue
            cand = table[rows[:, j].astype(np.int64)]  # (B, max_degree), -1 where padded
            b, s = np.nonzero(cand >= 0)
            block = rows[b].copy()
            block[:, j] = cand[b, s]
            nbrs.append(block)
            owners.append(b)
        if not nbrs:
            return np.empty((0, len(self)), dtype=self.row_dtype), np.empty(0, dtype=np.int64)
        out, owner = np.concatenate(nbrs), np.concatenate(owners)
        if self.conditions:  # canonical, without the rows themselves (a move the canonical form undoes)
            out = self.canonical(out)
            moved = np.any(out != rows[owner], axis=1)
            out, owner = out[moved], owner[moved]
        return out, owner

    @property
    def _neighbor_tables(self) -> list[np.ndarray]:
        tables = self.__dict__.get("_nbr_tables")
        if tables is None:
            tables = []
            for j, var in enumerate(self._variables.values()):
                if not isinstance(var, Variable):
                    tables.append(np.empty((0, 0), dtype=np.int64))
                    continue
                moves = self._moves(j)
                deg = max((len(nb) for nb in moves), default=0)
                table = -np.ones((var.n_values, deg), dtype=np.int64)
                for i, nb in enumerate(moves):
                    table[i, : len(nb)] = nb
                tables.append(table)
            self.__dict__["_nbr_tables"] = tables
        return tables

    def _moves(self, j: int) -> tuple[np.ndarray, ...]:
        """The values variable ``j`` can move to from each of its values along one edge: its graph's neighbours;
        for a conditional variable, those of its own graph (never onto its inactive vertex, a move the
        canonical form would undo), and none from the inactive vertex (the parents switch it on)."""
        var = self.variables[j]
        name = self.names[j]
        if name not in self.conditions or not isinstance(var, Variable):
            return var.neighbor_lists  # type: ignore[union-attr]
        declared = self._declared[name]
        assert isinstance(declared, Variable)
        return tuple(declared.neighbor_lists) + (np.empty(0, dtype=np.int64),)

    def neighbors(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Configurations adjacent to ``config``: one variable moved along one edge of its graph."""
        return [self.from_index(r) for r in self.neighbor_index(self.to_index(config))]

    def random_walk_index(
        self, row: Iterable[int], n_steps: int, *, n: int, seed: int | np.random.Generator | None = None
    ) -> np.ndarray:
        """``n`` endpoints of ``n_steps``-step random walks from ``row``: all within graph distance ``n_steps``.

        Each step changes one uniformly chosen variable to a uniformly chosen
        neighbouring value (the spray vertices of COMBO supplement Sec. 3).
        """
        rng = as_generator(seed)
        rows = np.repeat(np.asarray(row, dtype=self.row_dtype).reshape(1, -1), n, axis=0)
        movable = [j for j, v in enumerate(self._variables.values()) if v.n_values > 1]
        if not movable:
            return rows
        for _ in range(n_steps):
            cols = rng.choice(movable, size=n)
            for r in range(n):
                j = cols[r]
                nb = self._moves(j)[int(rows[r, j])]
                if nb.size:  # an inactive variable does not move (only conditional spaces have one)
                    rows[r, j] = nb[rng.integers(nb.size)]
        return self.canonical(rows) if self.conditions else rows
