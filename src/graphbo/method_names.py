"""The names of graphbo's built-in methods, without importing them: the command line checks a ``--method`` in a
blink.

``graphbo.optimizers.METHODS`` maps the same names to the optimizer classes (a test keeps the two equal); a
method added to ``METHODS`` at run time is known to ``Study`` and ``minimize``, which check against
``METHODS`` itself.
"""

from __future__ import annotations

__all__ = ["AUTO", "METHOD_NAMES", "check_method_name"]

#: the method name that asks for the rule of ``graphbo.optimizers.auto.choose_method``
AUTO = "auto"

#: every key of ``graphbo.optimizers.METHODS``
METHOD_NAMES = (
    "combo", "bofm", "combo-tr", "bofm-tr", "rs", "sa", "re", "bocs", "bocs-sdp", "bodi", "tpe", "gp-optuna",
    "smac", "bohb", "cocabo", "cocabo-0", "cocabo-1", "cocabo-learn",
    "nasbot", "rand", "ea", "treebo", "bofm-adddif", "bofm-addlap", "bofm-fnn", "bofm-general", "bofm-modlap",
    "bofm-moddif", "bofm-prodlap", "bofm-proddif",
)


def check_method_name(method: object) -> str:
    """``method`` if it is ``"auto"`` or a method name (any case); ``ValueError`` naming the choices otherwise."""
    if not isinstance(method, str) or (method.lower() != AUTO and method.lower() not in METHOD_NAMES):
        raise ValueError(f"unknown method {method!r}; choose {AUTO!r} or one of {sorted(METHOD_NAMES)}")
    return method
