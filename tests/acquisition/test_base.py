"""The acquisition functions' upper bounds (``AcquisitionFunction.upper_bound``, graphbo.acquisition.base), as
log-EI and the confidence bound compute them from the model's screening: never below the score, and not the
score itself. The branch and bound that uses them is tested in tests/optim/test_bounded.py."""

import numpy as np
import pytest

from graphbo.acquisition.confidence_bound import NegativeLowerConfidenceBound
from graphbo.acquisition.ei import LogExpectedImprovement
from support import combo_bound_cases, fitted_combo


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("n", [15, 60])
def test_upper_bounds_hold_for_every_candidate(case, n):
    space, f = combo_bound_cases()[case]
    opt = fitted_combo(space, f, n, seed=case)
    rows = space.sample_index(3000, np.random.default_rng(7))
    for acq in (LogExpectedImprovement(opt.model), NegativeLowerConfidenceBound(opt.model, kappa=1.5)):
        exact = acq(rows).numpy()
        bound = acq.upper_bound(rows).numpy()
        assert np.all(bound >= exact - 1e-10 * (1 + np.abs(exact)))
        assert np.any(bound > exact + 1e-6)  # a bound, not the score itself
