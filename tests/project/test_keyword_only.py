"""Past its first one or two arguments, a public callable takes its arguments by name only.

As in scikit-learn and BoTorch, ``minimize(objective, space, method="combo", budget=50)`` and
``Integer(1, 64, log=True)``: what a call means does not hang on the order of its options, and an option
can be added or reordered without changing the meaning of existing calls. The test walks the ``__all__`` of
every public module of graphbo (no ``_`` in its dotted name) and checks each function's and class's
signature (a class's: its constructor's, a dataclass's included): at most two parameters that can be
given by position. A third positional parameter fails it unless it is in ``ALLOWED`` with its reason.
The public methods of those classes (their attributes without a leading ``_``, those of their graphbo base
classes included) are held to the same rule, ``self`` and ``cls`` not counted, with their own exceptions
in ``ALLOWED_METHODS``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

import graphbo

MAX_POSITIONAL = 2

#: the exceptions: the most positional parameters each may take, and why
ALLOWED = {
    # a NamedTuple is a tuple: its fields are its positions
    "graphbo.kernels.frequency_modulated.KernelPairs": 9,
    # compiled by numba, whose nopython functions have no keyword-only parameters
    "graphbo.nas.distance.transport_jit.transport_rows": 8,
    # one problem given as the triple of its data, as numerical libraries take it: the transport
    # problem (a, b, C), as POT's ot.emd(a, b, M), and the binary quadratic (c, b, Q) of c + b'x + x'Qx
    "graphbo.nas.distance.transport_jit.transport": 3,
    "graphbo.optim.sdp_relaxation.ising_form": 3,
    "graphbo.optim.sdp_relaxation.solve_sdp_relaxation": 3,
    "graphbo.optim.sdp_relaxation.minimize_binary_quadratic_sdp": 3,
    "graphbo.optim.sdp_relaxation.binary_quadratic_values": 3,
    # a network and the data it is trained or scored on, (model, x, y), as scikit-learn's score(X, y)
    "graphbo.nas.training.training.train_module": 3,
    "graphbo.nas.training.training.count_correct": 3,
    "graphbo.nas.training.training.sum_squared_error": 3,
}


#: the methods' exceptions, likewise
ALLOWED_METHODS = {
    # signature fixed by GPyTorch: Kernel.forward(x1, x2, diag=False, last_dim_is_batch=False, **params)
    "graphbo.integrations.gpytorch.DiffusionKernel.forward": 4,
    "graphbo.integrations.gpytorch.FrequencyModulatedKernel.forward": 4,
    # signature fixed by Optuna: the BaseSampler hooks, which Optuna calls by position
    "graphbo.integrations.optuna.GraphboSampler.sample_relative": 3,
    "graphbo.integrations.optuna.GraphboSampler.sample_independent": 4,
    "graphbo.integrations.optuna.GraphboSampler.after_trial": 4,
}


def n_positional(obj) -> int:
    """How many parameters of ``obj`` (a function, or a class's constructor) can be given by position."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in inspect.signature(obj).parameters.values())


def public_modules() -> list[str]:
    names = ["graphbo"]
    for info in pkgutil.walk_packages(graphbo.__path__, "graphbo.", onerror=lambda name: None):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def public_callables() -> dict[str, object]:
    """Every function and class of a public ``__all__``, once, under its defining module's name."""
    found: dict[str, object] = {}
    for module_name in public_modules():
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional extra that is not installed (MissingExtraError)
            continue
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if name.startswith("_") or not callable(obj):
                continue
            key = f"{getattr(obj, '__module__', module_name)}.{getattr(obj, '__qualname__', name)}"
            found.setdefault(key, obj)
    return found


CALLABLES = public_callables()


def public_methods() -> dict[str, tuple[object, int]]:
    """Every public method of a class in :data:`CALLABLES` or of one of its graphbo base classes, once, under
    ``module.Class.method`` of the class that defines it: the function and how many of its leading
    parameters the call binds (``self``, ``cls``). Properties and nested classes are not methods."""
    found: dict[str, tuple[object, int]] = {}
    for obj in CALLABLES.values():
        if not inspect.isclass(obj):
            continue
        for cls in obj.__mro__:
            if not cls.__module__.startswith("graphbo"):
                continue
            for name, attr in vars(cls).items():
                if name.startswith("_"):
                    continue
                if isinstance(attr, staticmethod):
                    function, bound = attr.__func__, 0
                elif isinstance(attr, classmethod):
                    function, bound = attr.__func__, 1
                elif inspect.isfunction(attr):
                    function, bound = attr, 1
                else:
                    continue
                found.setdefault(f"{cls.__module__}.{cls.__qualname__}.{name}", (function, bound))
    return found


METHODS = public_methods()


def n_method_positional(key: str) -> int:
    """How many arguments the method ``key`` takes by position, ``self`` or ``cls`` not counted."""
    function, bound = METHODS[key]
    return n_positional(function) - bound


def test_the_walk_finds_the_public_api():
    for key in ("graphbo.loop.minimize", "graphbo.study.Study", "graphbo.spaces.space.Space",
                "graphbo.spaces.variables.Integer", "graphbo.storage.base.Trial", "graphbo.loop.MinimizeResult",
                "graphbo.optimizers.combo.COMBO", "graphbo.acquisition.constrained.LogConstrainedExpectedImprovement",
                "graphbo.importance.param_importances", "graphbo.nas.domain.constraints.Constraints"):
        assert key in CALLABLES, key
    assert len(CALLABLES) > 300


def test_no_public_callable_takes_more_than_two_arguments_by_position():
    too_many = {}
    for key, obj in CALLABLES.items():
        try:
            n = n_positional(obj)
        except (TypeError, ValueError):  # no signature (a builtin)
            continue
        if n > ALLOWED.get(key, MAX_POSITIONAL):
            too_many[key] = n
    assert not too_many, (f"make the parameters past the first {MAX_POSITIONAL} keyword-only (`*,`; "
                          f"`@dataclass(kw_only=True)`): {too_many}")


def test_every_allowed_exception_is_still_needed():
    for key, most in ALLOWED.items():
        if key in CALLABLES:  # an optional extra may hide it (transport_rows without numba)
            assert MAX_POSITIONAL < n_positional(CALLABLES[key]) <= most, key


def test_the_walk_finds_the_public_methods():
    for key in ("graphbo.study.Study.tell", "graphbo.study.Study.report", "graphbo.models.base.Surrogate.fit",
                "graphbo.models.diffusion_gp.DiffusionGP.fit", "graphbo.pruners.Pruner.prune",
                "graphbo.kernels.frequency_modulated.FMKernel.diag", "graphbo.spaces.space.Space.random_walk_index",
                "graphbo.benchmarks.hpo_surface.HPOSurface.value"):  # a static method
        assert key in METHODS, key
    assert len(METHODS) > 300


def test_no_public_method_takes_more_than_two_arguments_by_position():
    too_many = {}
    for key in METHODS:
        n = n_method_positional(key)
        if n > ALLOWED_METHODS.get(key, MAX_POSITIONAL):
            too_many[key] = n
    assert not too_many, (f"make the parameters past the first {MAX_POSITIONAL} (after self) keyword-only "
                          f"(`*,`): {too_many}")


def test_every_allowed_method_exception_is_still_needed():
    for key, most in ALLOWED_METHODS.items():
        if key in METHODS:  # an optional extra may hide it (GPyTorch, Optuna)
            assert MAX_POSITIONAL < n_method_positional(key) <= most, key


def test_the_count_sees_positional_parameters_however_they_are_declared():
    def plain(a, b, c=1): ...

    def keyword_only(a, b, *, c=1): ...

    @dataclasses.dataclass
    class Positional:
        a: int
        b: int
        c: int = 0

    @dataclasses.dataclass(kw_only=True)
    class ByName:
        a: int
        b: int
        c: int = 0

    class Init:
        def __init__(self, a, b, c): ...

    assert [n_positional(f) for f in (plain, keyword_only, Positional, ByName, Init)] == [3, 2, 3, 0, 3]


def test_a_positional_option_is_a_type_error():
    import graphbo as gb

    space = gb.Space({"a": gb.Binary()})
    with pytest.raises(TypeError):
        gb.minimize(lambda c: 0.0, space, "rs")
    with pytest.raises(TypeError):
        gb.Study(space, "rs", None)
    with pytest.raises(TypeError):
        gb.Integer(1, 100, True)
    with pytest.raises(TypeError):
        gb.Space({"a": gb.Binary()}, ["a"])
    with pytest.raises(TypeError):
        gb.MedianPruner(n_startup_trials=0).prune({1: 2.5}, [{1: 1.0}], [], 1)
    study = gb.Study(space, "rs", seed=0)
    trial = study.ask()
    with pytest.raises(TypeError):
        study.report(trial, 1.0, 1)
