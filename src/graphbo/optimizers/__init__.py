"""Optimizers: COMBO and baselines, all with one ask/tell protocol.

TPE and GPSampler (gp-optuna), SMAC and BOHB wrap Optuna and SMAC3, BOCS-SDP solves its relaxations with cvxpy and
BODi fits its GP with BoTorch, imported only when used (``pip install "graphbo[tpe]"`` / ``"graphbo[smac]"`` /
``"graphbo[bocs]"`` / ``"graphbo[botorch]"``).
"""

import inspect

from .base import Observation, Optimizer, signature_without
from .bocs import BOCS
from .bocs_sdp import BOCSSDP
from .bodi import BODi
from .bohb import BOHB
from .bofm import BOFM, bofm_variant
from .cocabo import CoCaBO, CoCaBOLearnedMix, CoCaBOMix0, CoCaBOMix1
from .combo import COMBO
from .nasbot import NASBOT, NASEvolution, NASRandom
from .optuna_gp import OptunaGP
from .random_search import RandomSearch
from .regularized_evolution import RegularizedEvolution
from .simulated_annealing import SimulatedAnnealing
from .smac import SMAC
from .tpe import TPE
from .treebo import TreeBO



def with_trust_region(cls: type, name: str) -> type:
    """``cls`` with ``trust_region`` on by default (CASMOPOLITAN-style methods ``combo-tr`` and ``bofm-tr``):
    ``trust_region=True`` or a dict of trust-region options; ``False`` is refused (use ``cls.name``)."""

    def __init__(self, space, *, trust_region=True, **options):
        if trust_region is False:
            raise ValueError(f"trust_region: {name} always has a trust region; use method {cls.name!r} for none")
        cls.__init__(self, space, trust_region=trust_region, **options)

    sig = signature_without(cls, "trust_region")
    params = list(sig.parameters.values())
    params.append(inspect.Parameter("trust_region", inspect.Parameter.KEYWORD_ONLY, default=True))
    setattr(__init__, "__signature__", sig.replace(parameters=params))
    return type(f"{cls.__name__}_TR", (cls,), {"__init__": __init__, "name": name,
                                                "__doc__": f"{cls.__name__} with a CASMOPOLITAN trust region."})


METHODS = {
    "combo": COMBO,
    "bofm": BOFM,
    # CASMOPOLITAN-style trust regions (Wan et al. 2021) on COMBO's and BO-FM's models (docs/trust_regions.md)
    "combo-tr": with_trust_region(COMBO, "combo-tr"),
    "bofm-tr": with_trust_region(BOFM, "bofm-tr"),
    # uniform random configurations of a Space; not NASBOT's "rand" below (RAND: its EA fed random values)
    "rs": RandomSearch,
    "sa": SimulatedAnnealing,
    "re": RegularizedEvolution,
    "bocs": BOCS,
    # BOCS with the SDP-relaxation acquisition (COMBO's "BOCS-SDP"); `bocs` is BOCS-SA
    "bocs-sdp": BOCSSDP,
    # BODi (Deshwal et al., AISTATS 2023): GP on Hamming distances to a random dictionary, COMBO's successor
    "bodi": BODi,
    "tpe": TPE,
    # Optuna's GPSampler (Matern-5/2 GP, log-EI): the GP-BO practitioners run, as a peer
    "gp-optuna": OptunaGP,
    "smac": SMAC,
    # BOHB through SMAC3's multi-fidelity facade: asks come with a fidelity (epochs), see graphbo.benchmarks.fidelity
    "bohb": BOHB,
    # CoCaBO (Ru et al. 2020) and the mixture weights BO-FM compares (its CoCaBO-0.0/0.5/1.0): `cocabo` is
    # CoCaBO-0.5 (its default mixture weight), `cocabo-0` and `cocabo-1` fix the others
    "cocabo": CoCaBO,
    "cocabo-0": CoCaBOMix0,
    "cocabo-1": CoCaBOMix1,
    "cocabo-learn": CoCaBOLearnedMix,
    # NASBOT (Kandasamy et al. 2018) and its baselines RAND and EA (App. C.1), on a graphbo.nas.ArchitectureSpace
    "nasbot": NASBOT,
    "rand": NASRandom,
    "ea": NASEvolution,
    # TreeBO (Jenatton et al. 2017), NASBOT's baseline that searches feed-forward networks only
    "treebo": TreeBO,
}

# BO-FM with each kernel by name, as the paper's tables compare them (bofm-modlap, bofm-prodlap, ...)
from ..kernels.frequency_modulated import KERNELS as _FM_KERNELS  # noqa: E402

METHODS.update({f"bofm-{k}": bofm_variant(k) for k in _FM_KERNELS})

# method="auto" is not a key of METHODS: it names no class of its own but is resolved, where a run starts,
# to one of combo, combo-tr, bofm, bofm-tr, nasbot from the space and the budget (auto.py, docs/auto.md)
from .auto import AUTO, choose_method, resolve_method  # noqa: E402

__all__ = ["Optimizer", "Observation", "COMBO", "RandomSearch", "SimulatedAnnealing", "RegularizedEvolution",
           "BOCS", "BOCSSDP", "BODi", "BOHB", "BOFM", "TPE", "OptunaGP", "SMAC", "CoCaBO", "NASBOT", "NASRandom", "NASEvolution", "TreeBO", "METHODS",
           "AUTO", "choose_method", "resolve_method"]
