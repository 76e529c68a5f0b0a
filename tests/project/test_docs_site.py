"""The documentation site builds with warnings as errors: every page in the navigation, every link between
pages, every docstring of the API reference parsed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: a project-wide check: CI's second step (`python -m pytest -m "checks and not slow"`), not the default run
pytestmark = pytest.mark.checks

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir",
                          str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    page = (tmp_path / "site" / "reference" / "studies" / "index.html").read_text()
    assert "param_importances" in page and "should_prune" in page  # generated from the docstrings


def test_no_check_of_the_build_is_turned_off():
    """Strict fails only on what warns: no link check is set to ignore, no docstring check is off."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["strict"] is True
    checks = {f"{group}.{name}": level for group, levels in config.get("validation", {}).items()
              for name, level in levels.items()}
    assert not {k: v for k, v in checks.items() if v != "warn"}, checks
    python = next(p["mkdocstrings"] for p in config["plugins"] if isinstance(p, dict) and "mkdocstrings" in p)
    options = python["handlers"]["python"]["options"].get("docstring_options", {})
    assert not {k: v for k, v in options.items() if k.startswith("warn_") and v is not True}, options


def test_every_document_is_in_the_navigation():
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def pages(item):
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for v in item.values():
                yield from pages(v)
        else:
            for v in item:
                yield from pages(v)

    listed = set(pages(nav))
    present = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert present == listed, (present - listed, listed - present)


def test_the_api_reference_shows_sphinx_roles_as_code(tmp_path):
    """The docstrings' Sphinx roles (``:class:`~graphbo.Space```) reach the site as code alone, a ``~`` target
    as its last name, and nothing else of the page changes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sphinx_roles", ROOT / "docs" / "hooks" / "sphinx_roles.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    html = ("see :class:<code>~graphbo.spaces.Space</code> and :meth:<code>Optimizer.ask</code>; "
            ":meth:<code>Screening.bound &lt;graphbo.models.base.Screening.bound&gt;</code>; "
            "a ratio 1:2 and <code>:class:</code> as text")
    assert hook.strip_roles(html) == ("see <code>Space</code> and <code>Optimizer.ask</code>; "
                                      "<code>Screening.bound</code>; "
                                      "a ratio 1:2 and <code>:class:</code> as text")
