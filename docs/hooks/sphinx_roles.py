"""MkDocs hook: show the docstrings' Sphinx roles as plain code in the API reference.

graphbo's docstrings are numpydoc with Sphinx cross-reference roles (``:class:`~graphbo.Space```), which
mkdocstrings renders as the role's text followed by the code. This hook drops the role and, as Sphinx shows
them, keeps a ``~`` target's last component and a titled role's (``title <target>``) title.
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:meth|class|func|mod|attr|data|exc|obj):(<code>)(~?)([^<]*)(</code>)")


_TITLED = re.compile(r"(.*?)\s*&lt;[^&]*&gt;$")


def _shown(match: re.Match) -> str:
    target = match.group(3)
    titled = _TITLED.fullmatch(target)
    if titled:  # :meth:`title <target>` shows its title
        target = titled.group(1)
    elif match.group(2):
        target = target.rsplit(".", 1)[-1]
    return f"{match.group(1)}{target}{match.group(4)}"


def strip_roles(html: str) -> str:
    """``html`` with each rendered Sphinx role reduced to its code (``~`` targets to their last name)."""
    return _ROLE.sub(_shown, html)


def on_page_content(html: str, **kwargs: object) -> str:
    return strip_roles(html)
