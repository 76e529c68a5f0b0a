"""Expected hypervolume improvement (graphbo.acquisition.hypervolume) in closed form for two objectives."""

import numpy as np
import pytest
import torch

from graphbo.outcomes import hypervolume


def test_the_closed_form_ehvi_is_the_mean_hypervolume_improvement_of_gaussian_draws():
    from graphbo.acquisition.hypervolume import expected_hypervolume_improvement_2d

    rng = np.random.default_rng(0)
    front = np.array([[0.2, 0.9], [0.5, 0.5], [0.8, 0.1], [0.6, 0.7]])  # the last is dominated
    ref = np.array([1.2, 1.1])
    base = hypervolume(front, ref)
    mean1, mean2 = np.array([[0.3, 0.9, 1.5]]), np.array([[0.4, 0.05, 0.2]])
    var1, var2 = np.array([[0.04, 0.01, 0.09]]), np.array([[0.09, 0.04, 0.01]])
    exact = expected_hypervolume_improvement_2d(torch.tensor(mean1), torch.tensor(var1), mean2=torch.tensor(mean2),
                                                var2=torch.tensor(var2), front=front, ref=ref)
    draws = 4000
    for i in range(3):
        y1 = rng.normal(mean1[0, i], np.sqrt(var1[0, i]), draws)
        y2 = rng.normal(mean2[0, i], np.sqrt(var2[0, i]), draws)
        mc = np.mean([hypervolume(np.vstack([front, [a, b]]), ref) - base for a, b in zip(y1, y2)])
        assert float(exact[i]) == pytest.approx(mc, abs=0.01, rel=0.03)
