"""Reading a space file's text into plain data, in bounded time and memory, running nothing.

The file may come from someone else. It is read only if it is a regular file of at most
:data:`~graphbo.spaces.limits.MAX_FILE_BYTES`; JSON is parsed by :mod:`json`, YAML by a subclass of
PyYAML's ``SafeLoader`` (plain data only: ``!!python`` tags are refused) that also

- refuses nesting deeper than :data:`~graphbo.spaces.limits.MAX_DEPTH` (before PyYAML's own recursion
  would end in a ``RecursionError``),
- counts the nodes the document expands to, an alias counting as a copy of its anchor's node, and
  stops at :data:`~graphbo.spaces.limits.MAX_NODES` (a "billion laughs" chain of 9 aliases 9 levels
  deep is refused after reading its 1 KB, instead of growing to gigabytes when walked or quoted;
  a JSON file's nodes are counted after parsing, which is fast),
- refuses an alias to a node that contains it (a recursive structure), and keys given twice.

Every error is a :class:`~graphbo.spaces.limits.SpaceFileError` naming the file (and the line for YAML).
"""

from __future__ import annotations

import functools
import json
import os
import stat
from typing import Any

from .limits import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, SpaceFileError, short_repr

__all__ = ["read_text", "parse_json", "parse_yaml", "import_yaml"]


def read_text(path: str) -> str:
    """The UTF-8 text of ``path``: a regular file of at most ``MAX_FILE_BYTES`` bytes."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SpaceFileError(f"{path}: no such space file") from None
    except OSError as exc:
        raise SpaceFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):  # a folder, a FIFO (open would wait for a writer), a device
        raise SpaceFileError(f"{path}: not a regular file")
    too_big = (f"{path}: the file is larger than {MAX_FILE_BYTES:,} bytes, the limit for a space file "
               "(graphbo.spaces.limits.MAX_FILE_BYTES)")
    if info.st_size > MAX_FILE_BYTES:
        raise SpaceFileError(too_big)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)  # the file may have grown since stat
    except OSError as exc:
        raise SpaceFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise SpaceFileError(too_big)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpaceFileError(f"{path}: cannot be read (not UTF-8 text: {exc.reason} at byte {exc.start})") from None


def _too_deep(path: str, at: str = "") -> SpaceFileError:
    return SpaceFileError(f"{path}: lists and mappings nested more than {MAX_DEPTH} levels deep{at}; "
                          "a space file needs 5")


def _check_shape(data: Any, path: str) -> None:
    """Nesting depth of lists/dicts at most ``MAX_DEPTH`` and at most ``MAX_NODES`` nodes (keys counted, as in YAML)."""
    n_nodes, stack = 0, [(data, 1)]
    while stack:
        node, level = stack.pop()
        n_nodes += 1 + (len(node) if isinstance(node, dict) else 0)
        if n_nodes > MAX_NODES:
            raise _too_many(path)
        if isinstance(node, (list, dict)):
            if level > MAX_DEPTH:
                raise _too_deep(path)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))


def _too_many(path: str, at: str = "", aliases: str = "") -> SpaceFileError:
    return SpaceFileError(f"{path}: the file holds more than {MAX_NODES:,} values (scalars, lists and mappings"
                          f"{aliases}){at}, the limit for a space file (graphbo.spaces.limits.MAX_NODES)")


def parse_json(text: str, path: str) -> Any:
    """The data of a JSON space file; keys given twice and nesting deeper than ``MAX_DEPTH`` are errors."""

    def no_duplicates(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in pairs:
            if k in out:
                raise SpaceFileError(f"{path}: duplicate key {short_repr(k)}")
            out[k] = v
        return out

    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise SpaceFileError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise _too_deep(path) from None
    except SpaceFileError:
        raise
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise SpaceFileError(f"{path}: invalid JSON: {str(exc)[:200]}") from None
    _check_shape(data, path)
    return data


def import_yaml(path: str) -> Any:
    """PyYAML, or a SpaceFileError naming ``path`` that says how to install it."""
    try:
        import yaml
    except ImportError:
        raise SpaceFileError(f"{path}: reading or writing YAML needs PyYAML (pip install pyyaml); "
                             "or write the space as .json") from None
    return yaml


@functools.lru_cache(maxsize=None)
def _loader_class(yaml: Any) -> Any:
    """A ``yaml.SafeLoader`` subclass with the bounds of the module docstring (one per PyYAML module)."""

    class BoundedSafeLoader(yaml.SafeLoader):  # type: ignore[misc]
        def __init__(self, stream: str, path: str) -> None:
            super().__init__(stream)
            self.path = path
            self.depth = 0
            self.n_nodes = 0
            self.sizes: dict[int, int] = {}  # id(anchored node) -> nodes it expands to, once complete

        def _line(self) -> str:
            return f" (line {self.peek_event().start_mark.line + 1})"

        def _count(self, n: int) -> None:
            self.n_nodes += n
            if self.n_nodes > MAX_NODES:
                raise _too_many(self.path, self._line(), ", each alias counting as a copy of its anchor's value")

        def fetch_flow_collection_start(self, token_class: Any) -> None:
            # refuse deep `[[[...` / `{{{...` in the scanner: its look-ahead for simple keys costs
            # O(levels) per token, about a second for 1000 open brackets, before the composer sees any
            if self.flow_level >= MAX_DEPTH:
                raise _too_deep(self.path, f" (line {self.get_mark().line + 1})")
            super().fetch_flow_collection_start(token_class)

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                node = self.anchors.get(self.peek_event().anchor)
                if node is not None:  # an undefined alias is PyYAML's own error
                    if id(node) not in self.sizes:
                        raise SpaceFileError(f"{self.path}: alias *{self.peek_event().anchor} is used inside "
                                             f"its own anchor's value{self._line()} (a recursive structure)")
                    self._count(self.sizes[id(node)])
                return super().compose_node(parent, index)
            anchored = self.peek_event().anchor is not None
            nested = not self.check_event(yaml.ScalarEvent)  # a list or a mapping
            if nested and self.depth >= MAX_DEPTH:
                raise _too_deep(self.path, self._line())
            self.depth += nested
            start = self.n_nodes
            self._count(1)
            node = super().compose_node(parent, index)
            self.depth -= nested
            if anchored:
                self.sizes[id(node)] = self.n_nodes - start
            return node

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise SpaceFileError(f"{loader.path}: line {key_node.start_mark.line + 1}: a mapping key must be a "
                                     f"scalar, got {short_repr(key)}") from None
            if key in out:
                raise SpaceFileError(f"{loader.path}: line {key_node.start_mark.line + 1}: duplicate key "
                                     f"{short_repr(key)}")
            out[key] = loader.construct_object(value_node, deep=True)
        return out

    BoundedSafeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return BoundedSafeLoader


def parse_yaml(text: str, path: str) -> Any:
    """The data of a YAML space file, read by a bounded ``SafeLoader`` (see the module docstring)."""
    yaml = import_yaml(path)
    loader = _loader_class(yaml)(text, path)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = str(getattr(exc, "problem", None) or exc)[:200]
        raise SpaceFileError(f"{path}: invalid YAML{at}: {problem}") from None
    except SpaceFileError:
        raise
    except ValueError as exc:  # e.g. an integer of more than 4300 digits, which int() refuses
        raise SpaceFileError(f"{path}: invalid YAML: {str(exc)[:200]}") from None
    finally:
        loader.dispose()
