"""Known constraints: rules on the configuration that say which configurations may be suggested at all.

A known constraint is given with the space (``Space(..., constraints=[...])``): either a Python callable
``config -> bool`` (True: allowed) or an expression over the variable names, such as
``"x + y <= 10"`` or ``"not (kernel == 'linear' and degree > 1)"``. Expressions are stored with a study
and can be written in space files; a callable lives only in the process that made it.

Expressions are parsed once with :mod:`ast` and evaluated by the small interpreter below, never by
``eval``: numbers, strings, ``True``/``False``/``None``, variable names, tuples and lists of these,
arithmetic (``+ - * / // % **``, the exponent bounded), comparisons (chained too, ``in``/``not in``),
``and``/``or``/``not``, ``x if c else y`` and the functions ``abs``, ``min``, ``max``. Anything else is
refused where the expression is given, with the part that is not allowed.
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = ["KnownConstraint", "check_constraints"]

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
            ast.NotIn: lambda a, b: a not in b}
_FUNCTIONS: dict[str, Callable[..., Any]] = {"abs": abs, "min": min, "max": max}
#: the largest exponent ``**`` takes (a rule, not a way to make the interpreter compute for hours)
MAX_EXPONENT = 64
#: the largest intermediate integer (in bits) and string (in characters) an expression may build
MAX_INT_BITS = 4096
MAX_STRING = 10_000
#: the longest expression accepted
MAX_LENGTH = 10_000


class KnownConstraint:
    """One rule on the configuration: :meth:`allows` says whether a configuration may be suggested.

    Parameters
    ----------
    rule : str or callable
        An expression over the variable names (module docstring), or a function ``config -> bool``.
    names : sequence of str, optional
        The space's variable names: an expression that uses another name is refused here.
    """

    def __init__(self, rule: str | Callable[[Mapping[str, Any]], Any], names: Sequence[str] | None = None):
        if isinstance(rule, KnownConstraint):
            rule = rule.rule
        self.rule: str | Callable[[Mapping[str, Any]], Any] = rule
        if isinstance(rule, str):
            if len(rule) > MAX_LENGTH:
                raise ValueError(f"constraint {rule[:60]!r}... has {len(rule):,} characters; at most {MAX_LENGTH:,}")
            try:
                tree = ast.parse(rule.strip(), mode="eval")
                names_used = _names(tree.body, rule)
            except SyntaxError as exc:
                raise ValueError(f"constraint {rule!r} is not an expression: {exc.msg}") from None
            except (RecursionError, MemoryError):
                raise ValueError(f"constraint {rule[:60]!r}... is nested too deeply") from None
            self._tree: ast.Expression | None = tree
            self.names = sorted(names_used)
            if names is not None:
                unknown = [n for n in self.names if n not in names]
                if unknown:
                    raise ValueError(f"constraint {rule!r} names {unknown[0]!r}, which is not a variable of the "
                                     f"space (variables: {list(names)})")
            self.description = rule.strip()
        elif callable(rule):
            self._tree = None
            self.names = []
            self.description = str(getattr(rule, "description", None) or getattr(rule, "__qualname__", None)
                                   or type(rule).__name__)
        else:
            raise TypeError(f"a constraint must be an expression (str) or a function config -> bool, got {rule!r}")

    @property
    def is_expression(self) -> bool:
        """Whether the rule is an expression (storable) rather than a Python callable."""
        return self._tree is not None

    def allows(self, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` satisfies the rule. An expression that fails on it (a division by zero, a
        comparison of a string with a number) raises ``ValueError`` naming the rule and the configuration."""
        try:
            if self._tree is None:
                return bool(self.rule(dict(config)))  # type: ignore[operator]
            return bool(_evaluate(self._tree.body, config))
        except (ArithmeticError, TypeError, ValueError, KeyError, RecursionError, MemoryError) as exc:
            raise ValueError(f"constraint {self.description!r} cannot be evaluated on {dict(config)!r}: "
                             f"{type(exc).__name__}: {exc}") from None

    __call__ = allows

    def allows_columns(self, columns: Mapping[str, np.ndarray], configs: Callable[[], list[dict[str, Any]]]) -> np.ndarray:
        """:meth:`allows` of many configurations at once: ``columns`` maps each variable name to its values
        (one per configuration), ``configs`` gives the configurations as dicts. An expression is evaluated on
        whole columns with NumPy; a function, or an expression that raises or warns on the columns (a division
        by zero), configuration by configuration (so the error names the configuration)."""
        if self._tree is not None:
            try:
                with np.errstate(all="raise"):
                    out = _evaluate_columns(self._tree.body, columns)
                n = len(next(iter(columns.values()))) if columns else 0
                mask: np.ndarray = np.broadcast_to(np.asarray(out, dtype=bool), (n,)).copy()
                return mask
            except (ArithmeticError, TypeError, ValueError, KeyError, FloatingPointError):
                pass
        return np.fromiter((self.allows(c) for c in configs()), dtype=bool)

    def __repr__(self) -> str:
        return f"KnownConstraint({self.description!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KnownConstraint) and self.rule == other.rule

    def __hash__(self) -> int:
        return hash(self.description)


def check_constraints(constraints: Any, names: Sequence[str]) -> tuple[KnownConstraint, ...]:
    """``constraints`` (``None``, one rule or a list of rules) as a tuple of :class:`KnownConstraint`."""
    if constraints is None:
        return ()
    if isinstance(constraints, (str, KnownConstraint)) or callable(constraints):
        constraints = [constraints]
    if not isinstance(constraints, (list, tuple)):
        raise TypeError(f"constraints must be a list of expressions or functions config -> bool, got {constraints!r}")
    return tuple(KnownConstraint(c, names) for c in constraints)


def _not_allowed(node: ast.AST, text: str) -> ValueError:
    part = ast.get_source_segment(text, node) or type(node).__name__
    return ValueError(f"constraint {text!r}: {part!r} is not allowed in a constraint (numbers, strings, variable "
                      "names, arithmetic, comparisons, and/or/not, if-else, abs/min/max)")


def _names(node: ast.AST, text: str) -> set[str]:
    """The variable names an expression uses; ``ValueError`` for any construct the interpreter does not take."""
    if isinstance(node, ast.Name):
        return set() if node.id in ("True", "False", "None") else {node.id}
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float, str, bool, type(None))):
            raise _not_allowed(node, text)
        return set()
    if isinstance(node, (ast.Tuple, ast.List)):
        children: list[ast.AST] = list(node.elts)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        children = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)):
        children = [node.operand]
    elif isinstance(node, ast.BoolOp):
        children = list(node.values)
    elif isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        children = [node.left, *node.comparators]
    elif isinstance(node, ast.IfExp):
        children = [node.test, node.body, node.orelse]
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
          and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)
          and (len(node.args) == 1 if node.func.id == "abs" else len(node.args) >= 2)):
        children = list(node.args)
    else:
        raise _not_allowed(node, text)
    out: set[str] = set()
    for child in children:
        out |= _names(child, text)
    return out


def _logical(values: list[Any], how: Callable[..., Any]) -> Any:
    out = np.asarray(values[0]).astype(bool)
    for v in values[1:]:
        out = how(out, np.asarray(v).astype(bool))
    return out


def _evaluate_columns(node: ast.AST, columns: Mapping[str, np.ndarray]) -> Any:
    """:func:`_evaluate` on columns: each name is an array of values, the result an array (or a scalar)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        return columns[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        raise TypeError("a tuple is evaluated per configuration")  # `x in (...)` is handled in Compare
    if isinstance(node, ast.BinOp):
        left, right = _evaluate_columns(node.left, columns), _evaluate_columns(node.right, columns)
        for side in (left, right):
            if not _numeric(side):
                if isinstance(node.op, ast.Add) and _textual(left) and _textual(right):
                    continue
                raise TypeError("arithmetic on non-numbers is evaluated per configuration")
        # Python adds booleans as the integers 0 and 1; NumPy's boolean + is a logical or
        left, right = (np.asarray(v, dtype=np.int64) if isinstance(v, np.ndarray) and v.dtype.kind == "b" else v
                       for v in (left, right))
        if isinstance(node.op, ast.Pow) and np.max(np.abs(np.asarray(right, dtype=float))) > MAX_EXPONENT:
            raise ValueError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        v = _evaluate_columns(node.operand, columns)
        if isinstance(node.op, ast.Not):
            return np.logical_not(np.asarray(v).astype(bool))
        if not _numeric(v):
            raise TypeError("a sign of a non-number")
        if isinstance(v, np.ndarray) and v.dtype.kind == "b":
            v = v.astype(np.int64)
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BoolOp):
        values = [_evaluate_columns(v, columns) for v in node.values]
        return _logical(values, np.logical_and if isinstance(node.op, ast.And) else np.logical_or)
    if isinstance(node, ast.Compare):
        left = _evaluate_columns(node.left, columns)
        parts = []
        for op, comp in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(comp, (ast.Tuple, ast.List)):
                    raise TypeError("`in` a non-literal is evaluated per configuration")
                options = [_evaluate(e, {}) for e in comp.elts] if all(isinstance(e, ast.Constant) for e in comp.elts) \
                    else None
                if options is None:
                    raise TypeError("`in` a tuple of names is evaluated per configuration")
                hit = np.isin(np.asarray(left, dtype=object), np.asarray(options, dtype=object))
                parts.append(hit if isinstance(op, ast.In) else ~hit)
                left = None
                continue
            right = _evaluate_columns(comp, columns)
            if left is None:
                raise TypeError("a chain after `in` is evaluated per configuration")
            if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and not (_numeric(left) and _numeric(right)):
                raise TypeError("ordering of non-numbers is evaluated per configuration")
            parts.append(np.asarray(_COMPARE[type(op)](left, right)).astype(bool))
            left = right
        return _logical(parts, np.logical_and)
    if isinstance(node, ast.IfExp):
        test = np.asarray(_evaluate_columns(node.test, columns)).astype(bool)
        return np.where(test, _evaluate_columns(node.body, columns), _evaluate_columns(node.orelse, columns))
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        args = [_evaluate_columns(a, columns) for a in node.args]
        if not all(_numeric(a) for a in args) or not args:
            raise TypeError("a function of non-numbers is evaluated per configuration")
        if node.func.id == "abs":
            if len(args) != 1:
                raise TypeError("abs takes one argument")
            return np.abs(args[0])
        fold = np.minimum if node.func.id == "min" else np.maximum
        out = args[0]
        for a in args[1:]:
            out = fold(out, a)
        return out
    raise AssertionError(f"unchecked node {type(node).__name__}")  # pragma: no cover - _names refuses it first


def _numeric(v: Any) -> bool:
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "iufb"
    return isinstance(v, (int, float)) and not isinstance(v, bool) or isinstance(v, bool)


def _textual(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, np.ndarray) and v.dtype.kind in "UO")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) or type(v).__module__ == "numpy"


def _bounded(v: Any) -> Any:
    """``v``, or ``ValueError`` for an integer or a string beyond :data:`MAX_INT_BITS` / :data:`MAX_STRING`."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > MAX_INT_BITS:
        raise ValueError(f"an intermediate integer has more than {MAX_INT_BITS} bits")
    if isinstance(v, str) and len(v) > MAX_STRING:
        raise ValueError(f"an intermediate string has more than {MAX_STRING:,} characters")
    return v


def _evaluate(node: ast.AST, config: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        return config[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_evaluate(e, config) for e in node.elts)
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, config), _evaluate(node.right, config)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent {right!r} is beyond {MAX_EXPONENT}")
        if isinstance(node.op, ast.Mult) and not (_is_number(left) and _is_number(right)):
            raise TypeError("only numbers can be multiplied in a constraint")
        if isinstance(node.op, ast.Mod) and not (_is_number(left) and _is_number(right)):
            raise TypeError("only numbers have a remainder in a constraint")
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        v = _evaluate(node.operand, config)
        return (not v) if isinstance(node.op, ast.Not) else (-v if isinstance(node.op, ast.USub) else +v)
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_evaluate(v, config) for v in node.values)
        return any(_evaluate(v, config) for v in node.values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, config)
        for op, comp in zip(node.ops, node.comparators):
            right = _evaluate(comp, config)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _evaluate(node.body if _evaluate(node.test, config) else node.orelse, config)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        function: Callable[..., Any] = _FUNCTIONS[node.func.id]
        return function(*(_evaluate(a, config) for a in node.args))
    raise AssertionError(f"unchecked node {type(node).__name__}")  # pragma: no cover - _names refuses it first
