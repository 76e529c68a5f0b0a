"""The ``graphbo`` command line: ``graphbo run``, ``graphbo resume``, ``graphbo benchmarks``,
``graphbo compare``, ``graphbo report`` (also ``python -m graphbo ...``).

One module per subcommand; :mod:`graphbo.cli.parser` puts them together.
Heavy modules (torch) are imported only by the commands that need them.
"""

from __future__ import annotations

from .parser import build_parser, main

__all__ = ["main", "build_parser"]
