"""The GP linear algebra (graphbo.models.gp): ``robust_cholesky`` adds the smallest jitter that works, only to the
matrices of a batch that need it. Its removal is guarded in tests/models/test_mutation_guards.py too."""

import pytest
import torch

from graphbo.models import robust_cholesky


def test_robust_cholesky_adds_jitter_only_where_needed():
    v = torch.randn(6, 2, dtype=torch.float64)
    singular = v @ v.T  # rank 2
    good = singular + torch.eye(6, dtype=torch.float64)
    L = robust_cholesky(torch.stack([good, singular]))
    assert torch.allclose(L[0] @ L[0].T, good)
    assert torch.isfinite(L[1]).all()
    assert torch.allclose(L[1] @ L[1].T, singular, atol=1e-3 * float(singular.diagonal().mean()))


def test_robust_cholesky_repairs_a_matrix_that_fails_at_its_first_pivot():
    # info = 1 (the first leading minor is not positive): the smallest jitter that works is used
    C = torch.tensor([[0.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    L = robust_cholesky(C)
    assert torch.isfinite(L).all()
    jittered = L @ L.T
    assert float(jittered[0, 0]) == pytest.approx(1e-8, rel=1e-6)  # 1e-8 * mean(diag) = 1e-8
    assert float(jittered[1, 1]) == pytest.approx(2.0 + 1e-8)
    batch = robust_cholesky(torch.stack([C, torch.eye(2, dtype=torch.float64)]))
    torch.testing.assert_close(batch[0], L)
    torch.testing.assert_close(batch[1], torch.eye(2, dtype=torch.float64))
