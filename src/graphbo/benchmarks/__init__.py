"""Benchmark objectives from the papers, each a callable plus its Space.

:data:`REGISTRY` describes them without importing them, so listing is cheap.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .base import Benchmark

__all__ = ["Benchmark", "REGISTRY", "BenchmarkInfo", "load_benchmark"]


@dataclass(frozen=True, kw_only=True)
class BenchmarkInfo:
    name: str
    target: str  # "module:Class"
    summary: str
    needs: tuple[str, ...] = ()  # required constructor arguments (CLI options)
    defaults: tuple[tuple[str, Any], ...] = ()  # constructor arguments used when not given


REGISTRY: dict[str, BenchmarkInfo] = {
    "branin": BenchmarkInfo(
        name="branin", target="graphbo.benchmarks.branin:Branin",
        summary="Branin on a 51x51 grid of two ordinal variables (COMBO supp. 4.2.1); budget 100, 2 initial",
    ),
    "maxsat": BenchmarkInfo(
        name="maxsat", target="graphbo.benchmarks.maxsat:MaxSAT",
        summary="weighted MaxSAT from a .wcnf file, standardised weights (COMBO supp. 4.3); budget 270, 20 initial",
        needs=("path",),
    ),
    **{f"maxsat{n}": BenchmarkInfo(
        name=f"maxsat{n}", target="graphbo.benchmarks.maxsat:MaxSAT",
        summary=f"the COMBO paper's weighted MaxSAT instance with {n} variables, shipped with graphbo (COMBO "
                "supp. 4.3, Table 2); budget 270, 20 initial",
        defaults=(("path", f"maxsat{n}"),),
    ) for n in (28, 43, 60)},
    "contamination": BenchmarkInfo(
        name="contamination", target="graphbo.benchmarks.contamination:Contamination",
        summary="contamination control, 25 binary stages (as the reference code), 100 Monte-Carlo samples (COMBO "
                "supp. 4.1.2); budget 270, 20 initial",
    ),
    "ising": BenchmarkInfo(
        name="ising", target="graphbo.benchmarks.ising:Ising",
        summary="Ising sparsification, 24 binary edges of a 4x4 grid, exact KL (COMBO supp. 4.1.1); budget 170, 20 "
                "initial",
    ),
    "pestcontrol": BenchmarkInfo(
        name="pestcontrol", target="graphbo.benchmarks.pest_control:PestControl",
        summary="pest control, 25 stations with 5 categorical choices (COMBO supp. 4.2.2); budget 320, 20 initial",
    ),
    "nasbinary": BenchmarkInfo(
        name="nasbinary", target="graphbo.benchmarks.nas_binary:NASBinary",
        summary="NAS on a binary cell, 31 bits (21 edges + 5x2 op bits), val. error + 0.02 FLOPs ratio, CPU training "
                "on sklearn digits by default (COMBO supp. 4.4); budget 260, 10 initial",
    ),
    "func2c": BenchmarkInfo(
        name="func2c", target="graphbo.benchmarks.mixed_synthetic:Func2C",
        summary="Func2C, 2 continuous in [-1,1] + categoricals (3, 5) choosing scaled Rosenbrock/camel/Beale terms "
                "(CoCaBO; BO-FM Tab. 1); budget 200, 10 initial",
    ),
    "func3c": BenchmarkInfo(
        name="func3c", target="graphbo.benchmarks.mixed_synthetic:Func3C",
        summary="Func3C, 2 continuous in [-1,1] + categoricals (3, 5, 4) choosing scaled Rosenbrock/camel/Beale terms "
                "(CoCaBO; BO-FM Tab. 1); budget 200, 10 initial",
    ),
    "ackley5c": BenchmarkInfo(
        name="ackley5c", target="graphbo.benchmarks.mixed_synthetic:Ackley5C",
        summary="Ackley5C, 6-D Ackley with 1 continuous in [-1,1] + 5 categoricals of 17 grid points (BO-FM Sec. 5.1, "
                "Tab. 1); budget 200, 10 initial",
    ),
    "svm": BenchmarkInfo(
        name="svm", target="graphbo.benchmarks.svm:SVM",
        summary="NuSVR hyper-parameters (3 categorical, 3 log-continuous; BO-FM Tab. 2), mean test RMSE of 5 random "
                "7:3 splits of sklearn's diabetes data (Boston was removed from sklearn), standardised target; budget "
                "200, 10 initial",
    ),
    "xgboost": BenchmarkInfo(
        name="xgboost", target="graphbo.benchmarks.xgboost_hpo:XGBoostHPO",
        summary="XGBoost hyper-parameters (1 ordinal, 3 categorical, 4 continuous; BO-FM Tab. 3), best test error "
                "over 50 rounds on a stratified 7:3 split of sklearn's digits (needs xgboost-cpu); budget 100, 10 "
                "initial",
    ),
    "nas-sgd": BenchmarkInfo(name="nas-sgd", target="graphbo.benchmarks.nas_sgd:NASSGD",
                             summary="NASNet-style block (8 ops x 4 states, input-pair graphs, 3 stacked) + 6 SGD "
                                     "hyper-parameters, val. error + 0.02 FLOPs ratio, CPU training on sklearn digits "
                                     "or FashionMNIST idx files (BO-FM supp. D.2); budget 200, 10 initial"),
    "int-rosenbrock": BenchmarkInfo(
        name="int-rosenbrock", target="graphbo.benchmarks.integer_synthetic:IntRosenbrock",
        summary="Rosenbrock on [-2, 2]^3 over 3 ordinal integers of 200 levels each (not from the papers; long "
                "ordinal paths); budget 100, 10 initial",
    ),
    "int-styblinski": BenchmarkInfo(
        name="int-styblinski", target="graphbo.benchmarks.integer_synthetic:IntStyblinskiTang",
        summary="Styblinski-Tang on [-5, 5]^3 over 3 ordinal integers of 200 levels each (not from the papers; long "
                "ordinal paths); budget 100, 10 initial",
    ),
    "nas-mlp": BenchmarkInfo(
        name="nas-mlp", target="graphbo.benchmarks.nas_architectures:NASMLP",
        summary="NASBOT domain: MLP architectures (labelled DAGs) for regression on sklearn's diabetes, val. MSE of "
                "the standardised target, CPU training (NASBOT Sec. 5); methods nasbot, rand, ea; budget 100, 10 "
                "initial (pool)",
    ),
    "nas-mlp-class": BenchmarkInfo(
        name="nas-mlp-class", target="graphbo.benchmarks.nas_architectures:NASMLPClass",
        summary="NASBOT domain: MLP architectures classifying sklearn's 8x8 digits, val. error, CPU training; methods "
                "nasbot, rand, ea; budget 100, 10 initial (pool)",
    ),
    "nas-cnn": BenchmarkInfo(
        name="nas-cnn", target="graphbo.benchmarks.nas_architectures:NASCNN",
        summary="NASBOT domain: CNN architectures classifying sklearn's 8x8 digit images, val. error, CPU training; "
                "methods nasbot, rand, ea; budget 100, 10 initial (pool)",
    ),
    "nas-synthetic": BenchmarkInfo(
        name="nas-synthetic", target="graphbo.benchmarks.nas_architectures:NASSynthetic",
        summary="NASBOT domain: CNN architectures, cheap synthetic objective of depth, width, skips, labels, decision "
                "layers and downsampling (minimum 0; for tests and speed); methods nasbot, rand, ea; budget 100, 10 "
                "initial",
    ),
    "labs": BenchmarkInfo(
        name="labs", target="graphbo.benchmarks.labs:LABS",
        summary="LABS, 50 binary spins, minus the merit factor n^2/(2E) (as MCBO and Bounce; not from the papers); "
                "proven optimum -8.1699 (E = 153); budget 200, 20 initial",
    ),
    "ackley53": BenchmarkInfo(
        name="ackley53", target="graphbo.benchmarks.ackley_mixed:Ackley53",
        summary="Ackley over 50 binary (0/1) + 3 continuous in [-1,1] (CASMOPOLITAN, MCBO, Bounce; not from the "
                "papers); minimum 0 at the origin; budget 200, 20 initial",
    ),
    "hpo-surface": BenchmarkInfo(
        name="hpo-surface", target="graphbo.benchmarks.hpo_surface:HPOSurface",
        summary="synthetic hyper-parameter surface (a stand-in, not measured): 4 ordinal integers of 200-1017 levels, "
                "2 categoricals, 1 binary; exact optimum by brute force; budget 150, 10 initial",
    ),
    "rna-folding": BenchmarkInfo(
        name="rna-folding", target="graphbo.benchmarks.rna_folding:RNAFolding",
        summary="RNA inverse folding of Eterna100 #40 Tripod5 (38 nt), categoricals over ACGU, normalised Hamming "
                "distance of ViennaRNA's MFE structure to the target (needs graphbo[rna]); optimum 0; budget 200, 20 "
                "initial",
    ),
    "grid-ordinal": BenchmarkInfo(
        name="grid-ordinal", target="graphbo.benchmarks.grid_functions:GridOrdinal",
        summary="a classic test function "
                "(function=ackley|rastrigin|levy|griewank|michalewicz|rosenbrock|styblinski|schwefel|zakharov) over "
                "dims ordinal variables of levels evenly spaced points; budget 100, 10 initial",
    ),
    "grid-categorical": BenchmarkInfo(
        name="grid-categorical", target="graphbo.benchmarks.grid_functions:GridCategorical",
        summary="a classic test function over dims categorical variables of levels choices, each choice a grid point "
                "through a random permutation (permutation_seed); budget 100, 10 initial",
    ),
    "bbob-mixint": BenchmarkInfo(
        name="bbob-mixint", target="graphbo.benchmarks.coco_mixint:MixInt",
        summary="COCO's bbob-mixint function (1-24) in dimension 5-160: 4/5 integer variables (2-16 values, ordinal), "
                "1/5 continuous (Tusar et al. 2019; needs graphbo[coco]); budget 100, 10 initial",
    ),
    "sklearn-tuning": BenchmarkInfo(
        name="sklearn-tuning", target="graphbo.benchmarks.sklearn_tuning:SklearnTuning",
        summary="a scikit-learn model tuned by 3-fold CV on a bundled data set "
                "(task=rf-wine|hgb-cancer|svc-digits|hgb-diabetes); budget 100, 10 initial",
    ),
}

# IOH's PBO problems F1-F25 (needs graphbo[ioh]), each as pbo-<id>, negated for minimisation.
from .ioh_pbo import PBO_PROBLEMS as _PBO_PROBLEMS  # noqa: E402  # a table only; ioh is imported on use

REGISTRY.update({
    f"pbo-{pid}": BenchmarkInfo(
        name=f"pbo-{pid}", target=f"graphbo.benchmarks.ioh_pbo:PBO{pid}",
        summary=f"IOH PBO F{pid} {title}, 64 bits, instance 1, ioh's value negated (Doerr et al. 2020; needs "
                "graphbo[ioh]); budget 200, 20 initial",
    )
    for pid, title in _PBO_PROBLEMS.items()
})


def load_benchmark(name: str, **kwargs: Any) -> Benchmark:
    """Instantiate a registered benchmark by name."""
    try:
        info = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; available: {sorted(REGISTRY)}") from None
    for key, value in info.defaults:
        if kwargs.get(key) is None:
            kwargs[key] = value
    missing = [k for k in info.needs if kwargs.get(k) is None]
    if missing:
        raise ValueError(f"benchmark {name!r} needs {missing!r}")
    module, cls = info.target.split(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)
