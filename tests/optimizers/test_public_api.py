"""The public constructors: the space first, everything else by keyword, every argument checked at the boundary.

Every optimizer (each class of ``graphbo.optimizers.METHODS``, the variants with a fixed kernel or
mixture weight, and the base classes) takes the space positionally and its options by keyword, with
the same names for what they share (``seed``, ``n_initial``, ``initial_configs``). A wrong argument
raises a ``ValueError`` (right type, value not allowed) or ``TypeError`` (wrong type) whose message
names the argument, before anything else happens. Likewise the Optuna samplers.
"""

from __future__ import annotations

import inspect
import math

import pytest

import graphbo as gb
from graphbo.nas.domain.space import ArchitectureSpace
from graphbo.optimizers import (BOCS, BOFM, BOHB, COMBO, METHODS, NASBOT, SMAC, TPE, CoCaBO, NASEvolution, NASRandom,
                                Optimizer, RegularizedEvolution, SimulatedAnnealing)
from graphbo.optimizers.nasbot import NASOptimizer

#: packages an optimizer needs beyond graphbo's core
EXTRAS = {"TPE": "optuna", "OptunaGP": "optuna", "SMAC": "smac", "BOHB": "smac", "BODi": "botorch"}
#: options an optimizer needs (BOHB: the full fidelity)
REQUIRED = {"BOHB": {"max_fidelity": 9}}

CLASSES = sorted({*METHODS.values(), Optimizer, NASOptimizer}, key=lambda c: c.__name__)
IDS = [c.__name__ for c in CLASSES]


def _space_for(cls):
    if issubclass(cls, NASOptimizer):
        return ArchitectureSpace("mlp-reg")
    return gb.Space({"a": gb.Binary(), "b": gb.Binary(), "c": gb.Binary()})


def _config_for(space):
    if isinstance(space, ArchitectureSpace):
        return space.initial_pool()[-1].to_dict()
    return {"a": True, "b": False, "c": True}


def make(cls, space=None, **kwargs):
    """``cls`` on a space it takes, with the options it needs; skipped when its package is missing."""
    name = next((c.__name__ for c in cls.__mro__ if c.__name__ in EXTRAS), None)
    if name is not None:
        pytest.importorskip(EXTRAS[name])
    required = next((REQUIRED[c.__name__] for c in cls.__mro__ if c.__name__ in REQUIRED), {})
    return cls(_space_for(cls) if space is None else space, **{**required, **kwargs})


# -- the signature -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_space_first_and_everything_else_keyword_only(cls):
    params = list(inspect.signature(cls).parameters.values())
    assert params[0].name == "space" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for p in params[1:]:
        assert p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD), (cls, p)
    names = {p.name: p for p in params}
    assert (names["seed"].default, names["n_initial"].default, names["initial_configs"].default) == (None, 10, None)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_positional_arguments_after_the_space_are_refused(cls):
    with pytest.raises(TypeError, match="positional"):
        cls(_space_for(cls), 0)
    with pytest.raises(TypeError, match="positional"):
        cls(_space_for(cls), 0, 10)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_an_unknown_option_is_refused_by_name(cls):
    with pytest.raises(TypeError, match="n_intial"):
        make(cls, n_intial=5)


# -- the shared arguments ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_the_shared_names_are_accepted_everywhere(cls):
    space = _space_for(cls)
    config = _config_for(space)
    opt = make(cls, space, seed=3, n_initial=2, initial_configs=[config])
    assert opt.seed == 3 and opt.space is space
    if cls is Optimizer or cls is NASOptimizer:
        return  # no method of their own; the initial design is set up all the same
    first = opt.ask()
    assert list(opt.space.to_index(first)) == list(opt.space.to_index(config))  # initial_configs come first


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
@pytest.mark.parametrize("name, value, error", [
    ("seed", -1, ValueError),
    ("seed", "zero", TypeError),
    ("seed", 1.5, TypeError),
    ("n_initial", -1, ValueError),
    ("n_initial", "ten", TypeError),
    ("n_initial", True, TypeError),
    ("initial_configs", {"a": True}, TypeError),
    ("initial_configs", [1], TypeError),
    ("initial_configs", "a=1", TypeError),
])
def test_a_wrong_shared_argument_names_itself(cls, name, value, error):
    with pytest.raises(error, match=name):
        make(cls, **{name: value})


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_a_wrong_space_names_the_space(cls):
    with pytest.raises(TypeError, match="space must be"):
        make(cls, {"a": gb.Binary()})
    if issubclass(cls, NASOptimizer):  # a domain name is accepted in place of the space
        with pytest.raises(ValueError, match="space must be .* domain name"):
            make(cls, "mlp-regression")


def test_a_configuration_outside_the_space_is_refused_at_construction():
    with pytest.raises(ValueError, match="'a'"):
        COMBO(_space_for(COMBO), initial_configs=[{"a": 2, "b": False, "c": True}])


# -- each optimizer's own options ------------------------------------------------------------------------------
CASES = [
    # (class or METHODS key, options, error, pattern the message matches)
    ("gp-optuna", {"max_retries": -1}, ValueError, "max_retries"),
    ("gp-optuna", {"n_startup_trials": -1}, ValueError, "n_startup_trials"),
    ("gp-optuna", {"deterministic_objective": 1}, TypeError, "deterministic_objective"),
    (COMBO, {"n_burn": -1}, ValueError, "n_burn must be >= 0, got -1"),
    (COMBO, {"n_samples": 0}, ValueError, "n_samples"),
    (COMBO, {"n_random": "many"}, TypeError, "n_random must be an integer"),
    (COMBO, {"n_spray": -1}, ValueError, "n_spray"),
    (COMBO, {"n_starts": 0}, ValueError, "n_starts"),
    (COMBO, {"device": "tpu"}, ValueError, r"device must be .*'cpu'.*'cuda'.*got 'tpu'"),
    (COMBO, {"device": 3}, TypeError, "device must be"),
    (BOFM, {"kernel": 0}, ValueError, r"kernel must be one of \[.*'modlap'.*\], got 0"),
    (BOFM, {"kernel": "lap"}, ValueError, "kernel must be one of"),
    (BOFM, {"n_restarts": 0}, ValueError, "n_restarts"),
    (BOFM, {"log_y": "yes"}, TypeError, "log_y must be True or False"),
    (BOFM, {"n_random": 0}, ValueError, "n_random"),
    ("bofm-moddif", {"kernel": "modlap"}, TypeError, "fixes the kernel"),
    ("bofm-moddif", {"n_spray": -1}, ValueError, "n_spray"),
    (SimulatedAnnealing, {"cooling": 0.0}, ValueError, r"cooling must be > 0"),
    (SimulatedAnnealing, {"cooling": 1.5}, ValueError, r"cooling must be <= 1"),
    (SimulatedAnnealing, {"initial_temperature": -1.0}, ValueError, "initial_temperature"),
    (SimulatedAnnealing, {"initial_temperature": "hot"}, TypeError, "initial_temperature must be a number"),
    (RegularizedEvolution, {"population_size": 0}, ValueError, "population_size"),
    (RegularizedEvolution, {"population_size": 5, "sample_size": 6}, ValueError,
     r"sample_size must be <= population_size \(5\), got 6"),
    (RegularizedEvolution, {"is_valid": True}, TypeError, "is_valid must be callable"),
    (RegularizedEvolution, {"mutation": "two"}, ValueError, r"mutation must be one of \['one', 'pair'\]"),
    (RegularizedEvolution, {"mutation_std": 0.0}, ValueError, "mutation_std must be > 0"),
    (BOCS, {"lam": math.nan}, ValueError, "lam must be finite"),
    (BOCS, {"n_burn": 0, "n_gibbs": 0}, ValueError, r"n_burn \+ n_gibbs"),
    (BOCS, {"n_gibbs": -1}, ValueError, "n_gibbs"),
    (BOCS, {"sa_restarts": 0}, ValueError, "sa_restarts"),
    (BOCS, {"sa_steps": 2.5}, TypeError, "sa_steps"),
    (BOCS, {"sa_initial_temperature": 0}, ValueError, "sa_initial_temperature"),
    (BOCS, {"sa_cooling": 2}, ValueError, "sa_cooling"),
    ("bodi", {"n_dictionary": 0}, ValueError, "n_dictionary must be >= 1"),
    ("bodi", {"n_candidates": "many"}, TypeError, "n_candidates must be an integer"),
    ("bodi", {"n_restarts": 0}, ValueError, "n_restarts"),
    ("bodi", {"n_local_steps": -1}, ValueError, "n_local_steps must be >= 0"),
    ("bodi", {"max_train": 5}, ValueError, "max_train"),
    (TPE, {"max_retries": -1}, ValueError, "max_retries"),
    (TPE, {"n_startup_trials": -1}, ValueError, "n_startup_trials"),
    (TPE, {"n_ei_candidates": 0}, ValueError, "n_ei_candidates"),
    (TPE, {"multivariate": 1}, TypeError, "multivariate must be True or False"),
    (TPE, {"constant_liar": None}, TypeError, "constant_liar"),
    (SMAC, {"n_trees": 0}, ValueError, "n_trees"),
    (SMAC, {"n_challengers": 0}, ValueError, "n_challengers"),
    (SMAC, {"random_probability": 1.5}, ValueError, "random_probability must be <= 1"),
    (SMAC, {"retrain_after": 0}, ValueError, "retrain_after"),
    (SMAC, {"max_retries": -1}, ValueError, "max_retries"),
    (BOHB, {"max_fidelity": None}, ValueError, "max_fidelity must be given"),
    (BOHB, {"max_fidelity": 0}, ValueError, "max_fidelity must be >= 1"),
    (BOHB, {"min_fidelity": 0}, ValueError, "min_fidelity"),
    (BOHB, {"eta": 1}, ValueError, "eta must be >= 2"),
    (BOHB, {"min_points_in_model": 0}, ValueError, "min_points_in_model"),
    (BOHB, {"random_probability": -0.1}, ValueError, "random_probability"),
    (BOHB, {"local_search_iterations": 0}, ValueError, "local_search_iterations"),
    (CoCaBO, {"mix": 2}, ValueError, r"mix must be a number in \[0, 1\] or 'learn'"),
    (CoCaBO, {"mix": "half"}, ValueError, "mix"),
    (CoCaBO, {"acquisition": "pi"}, ValueError, r"acquisition must be one of \['ei', 'lcb', 'ucb'\]"),
    (CoCaBO, {"kappa": -1}, ValueError, "kappa"),
    (CoCaBO, {"budget": 0}, ValueError, "budget"),
    (CoCaBO, {"ard": "yes"}, TypeError, "ard must be True or False"),
    (CoCaBO, {"normalize_sum": 0}, TypeError, "normalize_sum"),
    (CoCaBO, {"cont_kernel": "linear"}, ValueError, r"cont_kernel must be one of \['matern52', 'rbf'\]"),
    (CoCaBO, {"n_restarts": 0}, ValueError, "n_restarts"),
    (CoCaBO, {"refit_interval": 0}, ValueError, "refit_interval"),
    (CoCaBO, {"n_random": 0}, ValueError, "n_random"),
    (CoCaBO, {"n_starts": 0}, ValueError, "n_starts"),
    ("cocabo-1", {"mix": 0.5}, ValueError, "fixed"),
    ("cocabo-learn", {"budget": -5}, ValueError, "budget"),
    (NASBOT, {"nu_strs": [0.1, -1.0]}, ValueError, r"nu_strs\[1\] must be >= 0"),
    (NASBOT, {"nu_strs": 0.1}, TypeError, "nu_strs must be a sequence"),
    (NASBOT, {"n_burn": -1}, ValueError, "n_burn"),
    (NASBOT, {"n_samples": 0}, ValueError, "n_samples"),
    (NASBOT, {"ea_evaluations": 0}, ValueError, "ea_evaluations"),
    (NASBOT, {"ea_start": "everything"}, ValueError, r"ea_start must be one of"),
    (NASRandom, {"ea_evaluations": 2.5}, TypeError, "ea_evaluations"),
    (NASRandom, {"ea_start": "pools"}, ValueError, "ea_start"),
    (NASEvolution, {"n_mutations": 0}, ValueError, "n_mutations"),
    (NASEvolution, {"max_mutation_tries": 0}, ValueError, "max_mutation_tries"),
    ("treebo", {"max_depth": 0}, ValueError, "max_depth must be >= 1"),
    ("treebo", {"units_grid": [4]}, ValueError, "units_grid must be >= 8"),
    ("treebo", {"n_candidates": 0}, ValueError, "n_candidates"),
    ("treebo", {"n_restarts": 2.5}, TypeError, "n_restarts"),
]


def _cls(entry):
    return METHODS[entry] if isinstance(entry, str) else entry


@pytest.mark.parametrize("entry, options, error, pattern", CASES,
                         ids=[f"{e if isinstance(e, str) else e.__name__}-{'-'.join(o)}" for e, o, _, _ in CASES])
def test_a_wrong_option_names_itself(entry, options, error, pattern):
    with pytest.raises(error, match=pattern):
        make(_cls(entry), **options)


def test_every_method_has_its_options_checked():
    covered = {_cls(entry) for entry, *_ in CASES}
    for name, cls in METHODS.items():
        own = [p for p in inspect.signature(cls).parameters
               if p not in ("space", "seed", "n_initial", "initial_configs")]
        assert not own or any(issubclass(cls, c) for c in covered), name


def test_variants_validate_what_they_fix():
    from graphbo.optimizers.bofm import bofm_variant
    from graphbo.optimizers.cocabo import cocabo_variant

    with pytest.raises(ValueError, match="kernel must be one of"):
        bofm_variant("lap")
    with pytest.raises(ValueError, match="mix"):
        cocabo_variant(1.5)
    assert "kernel" not in inspect.signature(METHODS["bofm-moddif"]).parameters
    assert "mix" not in inspect.signature(METHODS["cocabo-1"]).parameters


def test_checked_values_are_kept_in_their_canonical_types():
    opt = SimulatedAnnealing(_space_for(SimulatedAnnealing), seed=4.0, n_initial=3.0, cooling=1)
    assert opt.seed == 4 and type(opt.seed) is int and type(opt.cooling) is float
    assert len(opt._initial) == 3


# -- the Optuna samplers ------------------------------------------------------------------------------------------
SAMPLER_CASES = [
    ({"seed": -1}, ValueError, "seed must be >= 0"),
    ({"seed": "x"}, TypeError, "seed must be an integer"),
    ({"n_startup_trials": -1}, ValueError, "n_startup_trials"),
    ({"exclude_failed": 1}, TypeError, "exclude_failed must be True or False"),
    ({"optimizer_kwargs": [("n_burn", 5)]}, TypeError, "optimizer_kwargs must be a dict"),
    ({"optimizer_kwargs": {"seed": 1}}, ValueError, "optimizer_kwargs may not set \\['seed'\\]"),
    ({"optimizer_kwargs": {"n_random": 0}}, ValueError, "optimizer_kwargs .*n_random must be >= 1"),
    ({"optimizer_kwargs": {"n_burnin": 5}}, TypeError, "optimizer_kwargs .*n_burnin"),
    ({"n_startup": 5}, TypeError, "n_startup"),
]


@pytest.fixture(params=["COMBOSampler", "BOFMSampler"])
def sampler_cls(request):
    pytest.importorskip("optuna")
    from graphbo.integrations import optuna as integration

    return getattr(integration, request.param)


@pytest.mark.parametrize("options, error, pattern", SAMPLER_CASES, ids=[next(iter(o)) for o, _, _ in SAMPLER_CASES])
def test_a_wrong_sampler_argument_names_itself(sampler_cls, options, error, pattern):
    with pytest.raises(error, match=pattern):
        sampler_cls(**options)


def test_sampler_arguments_are_keyword_only_and_their_own_options_checked(sampler_cls):
    with pytest.raises(TypeError, match="positional"):
        sampler_cls(0)
    own, method_option = (("max_values", {"n_burn": -1}) if sampler_cls.__name__ == "COMBOSampler"
                          else ("max_ordinal", {"kernel": "lap"}))
    with pytest.raises(ValueError, match=f"{own} must be >= 1"):
        sampler_cls(**{own: 0})
    with pytest.raises(ValueError, match=next(iter(method_option))):
        sampler_cls(optimizer_kwargs=method_option)
    sampler = sampler_cls(seed=2, n_startup_trials=3, exclude_failed=False, optimizer_kwargs={"n_random": 100},
                          **{own: 5})
    assert (sampler.seed, sampler.n_startup_trials, sampler.exclude_failed, getattr(sampler, own)) == (2, 3, False, 5)
    assert sampler.optimizer_kwargs == {"n_random": 100}
