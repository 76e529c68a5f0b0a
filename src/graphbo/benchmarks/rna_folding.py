"""RNA inverse folding with ViennaRNA: find a sequence whose minimum-free-energy structure is a target.

The target is a secondary structure in dot-bracket notation of length ``n``; the search space is the
sequence, ``n`` :class:`~graphbo.Categorical` variables over the nucleotides ``A, C, G, U``. The value is

.. math::

    f(s) = \\frac{d_H\\big(t,\\ \\mathrm{MFE}(s)\\big)}{n}
           + w \\,\\big(E(s, t) - E(s, \\mathrm{MFE}(s))\\big),

``d_H`` the number of positions where the dot-bracket strings of the target ``t`` and of the MFE
structure of ``s`` differ (the usual structure distance of inverse-folding benchmarks, e.g. RNAinverse
and the Eterna100 papers), ``E(s, x)`` the free energy (kcal/mol) of ``s`` folded into ``x``, and ``w``
the ``energy_weight`` (default ``0``: the plain normalised Hamming distance, in ``[0, 1]``). The energy
gap is ``>= 0`` and is ``0`` when the target is an MFE structure of ``s``: with ``w > 0`` it rewards
sequences that come close to folding into the target even while the MFE structure is another one.
``f = 0`` means solved. The MFE structures come from ViennaRNA (Lorenz et al., "ViennaRNA Package 2.0",
Algorithms Mol. Biol. 6:26, 2011) with its default model (Turner 2004 parameters, 37 C, dangles 2), via
the ``viennarna`` package (``pip install "graphbo[rna]"``).

Targets (:data:`TARGETS`): five puzzles of the Eterna100 benchmark (Anderson-Lee et al., "Principles
for predicting RNA secondary structure design difficulty", J. Mol. Biol. 428, 2016), in its version 2
for the Vienna 2 folding engine (Koodli et al., "Redesigning the Eterna100 for the Vienna 2 folding
engine", bioRxiv 2021.08.26.457839), with the puzzle numbers of that list. Each comes with one player
solution from the Eterna100-V2 list (as copied in ``lemerleau/aRNAque``,
``data/Eterna100/V2/eterna_V2.csv``) that ViennaRNA 2.8 folds exactly into the target, so the optimum
``0`` is attained.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._lazy import require
from .._validation import check_float
from ..spaces import Categorical, Space
from .base import Benchmark

__all__ = ["RNAFolding", "TARGETS", "NUCLEOTIDES", "hamming", "check_dot_bracket"]

NUCLEOTIDES = ("A", "C", "G", "U")

#: key -> (Eterna100 number and name, target structure, a sequence that folds into it under ViennaRNA 2.8)
TARGETS: dict[str, tuple[str, str, str]] = {
    "simple-hairpin": ("Eterna100 #1, Simple Hairpin", "(((((......)))))", "GGGGGGGGGGGCCCCC"),
    "frog-foot": ("Eterna100 #10, Frog Foot", "..........((((....))))((((....))))((((...))))",
                  "AAAAAAAAAACUGUGAAAAUGGGUUAGAAAUAGCGAGCAAAGCUC"),
    "inforna-16": ("Eterna100 #11, InfoRNA test 16", "((((((.((((((((....))))).)).).))))))",
                   "UAAAACGAGAAAAACGAAAGUUUUAUCAUGGUUUUA"),
    "stickshift": ("Eterna100 #26, stickshift", "..((((((((.....)).))))))..", "AAAUGUGAAUGAAAAAUAUUAUAUAA"),
    "tripod5": ("Eterna100 #40, Tripod5", "..((((((((.....))))((((.....))))))))..",
                "AAGCCCCAUUGAAAAGAUGGUAUGAAAAGUACGGGUAA"),
}


def _viennarna() -> Any:
    """ViennaRNA's Python module ``RNA``, or the one-line missing-extra error."""
    return require("RNA", "RNA folding (ViennaRNA's Python module)", extra="rna")


def check_dot_bracket(structure: Any) -> str:
    """``structure`` if it is a balanced dot-bracket string of ``(``, ``)`` and ``.``; else ``ValueError``."""
    if not isinstance(structure, str) or not structure:
        raise ValueError(f"target must be a non-empty dot-bracket string or one of {sorted(TARGETS)}, "
                         f"got {structure!r}")
    depth = 0
    for i, ch in enumerate(structure):
        if ch not in "().":
            raise ValueError(f"target: character {ch!r} at position {i} is not '(', ')' or '.'")
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            raise ValueError(f"target: ')' at position {i} closes no '('")
    if depth:
        raise ValueError(f"target: {depth} '(' left unclosed")
    return structure


def hamming(a: str, b: str) -> int:
    """Number of positions where two equally long strings differ."""
    if len(a) != len(b):
        raise ValueError(f"hamming: lengths differ ({len(a)} and {len(b)})")
    return sum(x != y for x, y in zip(a, b))


class RNAFolding(Benchmark):
    """Inverse folding of one target structure; see the module docstring.

    Parameters
    ----------
    target : str, default "tripod5"
        A key of :data:`TARGETS` or a dot-bracket string.
    energy_weight : float, default 0.0
        ``w >= 0`` of the energy-gap term (kcal/mol).
    """

    name = "rna-folding"
    default_budget = 200
    default_n_initial = 20
    optimum = 0.0

    def __init__(self, target: str = "tripod5", energy_weight: float = 0.0) -> None:
        _viennarna()  # fail early, with the one-line pip message, if the extra is missing
        #: a sequence that folds into the target (for the targets of :data:`TARGETS`)
        self.known_solution: str | None = None
        if isinstance(target, str) and target in TARGETS:
            self.target_name, self.target, self.known_solution = TARGETS[target]
        else:
            self.target = check_dot_bracket(target)
            self.target_name = "user target"
        self.energy_weight = check_float("energy_weight", energy_weight, minimum=0.0)
        self.n = len(self.target)
        self.space = Space({f"s{i}": Categorical(list(NUCLEOTIDES)) for i in range(self.n)})

    @staticmethod
    def _compound(sequence: str) -> Any:
        """ViennaRNA's fold compound of ``sequence`` with the default model (not its global settings).

        Nothing of ViennaRNA is kept on the instance, so a benchmark pickles (process pools)."""
        rna = _viennarna()
        return rna.fold_compound(sequence, rna.md())

    def fold(self, sequence: str) -> tuple[str, float]:
        """The MFE structure of ``sequence`` and its free energy (kcal/mol)."""
        structure, mfe = self._compound(sequence).mfe()
        return str(structure), float(mfe)

    def sequence_of(self, config: Mapping[str, Any]) -> str:
        """The nucleotide string of a configuration."""
        self.space.validate(config)
        return "".join(str(config[f"s{i}"]) for i in range(self.n))

    def value_of_sequence(self, sequence: str) -> float:
        """``f`` of the module docstring for a string over ``ACGU``."""
        if len(sequence) != self.n or any(ch not in NUCLEOTIDES for ch in sequence):
            raise ValueError(f"sequence must be {self.n} letters of ACGU, got {sequence!r}")
        structure, mfe = self.fold(sequence)
        value = hamming(self.target, structure) / self.n
        if self.energy_weight:
            gap = float(self._compound(sequence).eval_structure(self.target)) - mfe
            value += self.energy_weight * max(gap, 0.0)
        return value

    def __call__(self, config: Mapping[str, Any]) -> float:
        return self.value_of_sequence(self.sequence_of(config))

    def evaluate_index(self, row: Any) -> float:
        idx = np.asarray(row, dtype=np.int64).reshape(-1)
        if idx.shape[0] != self.n or np.any((idx < 0) | (idx >= len(NUCLEOTIDES))):
            raise ValueError(f"rna-folding: row must hold {self.n} indices in 0..3, got {idx.tolist()!r}")
        return self.value_of_sequence("".join(NUCLEOTIDES[i] for i in idx))
