"""Chapter 01 / exercise 01: the claims the chapter and the exercise's model answers make about γ, β and ε.

* γ and β are per feature and shared by every token, μ and σ belong to each token: γ = σ, β = μ of one token
  gives that token back, not a token of another scale (BatchNorm's per-feature statistics can be undone).
* ε inside the square root vs ε added to σ: the same forward pass on a constant row, but finite gradients
  against NaN (d√v/dv is infinite at v = 0, and 0 · ∞ = NaN).
"""

import pytest
import torch
import torch.nn.functional as F

from course_utils import norms
from course_utils.checks import ex01


def ln_eps_inside(x, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps)


def ln_eps_on_std(x, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / (torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True)) + eps)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gamma_and_beta_undo_layernorm_for_one_token_only(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, generator=g, dtype=dtype) * 2 + 3
    tokens = torch.stack([x, 10 * x, x / 4])
    mu, sigma = x.mean(), ((x - x.mean()) ** 2).mean().sqrt()
    out = norms.layer_norm(tokens, sigma.expand(8), mu.expand(8), eps=0.0)
    for row in out:  # every token, whatever its scale, comes out as x
        assert torch.allclose(row, x, atol=1e-5)
    assert not torch.allclose(out[1], 10 * x, atol=1.0)
    # BatchNorm: statistics per feature, like γ and β, so γ_j = σ_j, β_j = μ_j gives the whole batch back
    bn_mu, bn_sigma = tokens.mean(0), ((tokens - tokens.mean(0)) ** 2).mean(0).sqrt()
    assert torch.allclose(norms.batch_norm(tokens, weight=bn_sigma, bias=bn_mu, eps=0.0), tokens, atol=1e-4)


def test_eps_placement_same_forward_but_nan_gradient_on_a_constant_row():
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0])  # a loss that is not symmetric in the features
    grads = {}
    for name, fn in (("inside", ln_eps_inside), ("on std", ln_eps_on_std)):
        x = torch.full((4,), 7.0, requires_grad=True)
        y = fn(x)
        assert torch.equal(y.detach(), torch.zeros(4))  # the forward pass cannot tell them apart
        (y * weights).sum().backward()
        grads[name] = x.grad
    assert torch.isfinite(grads["inside"]).all() and grads["inside"].abs().max() > 0
    assert torch.isnan(grads["on std"]).all()
    # torch and the course's reference put ε inside the root: finite, and equal to the hand-written one
    for fn in (lambda x: F.layer_norm(x, (4,)), norms.layer_norm):
        x = torch.full((4,), 7.0, requires_grad=True)
        (fn(x) * weights).sum().backward()
        assert torch.allclose(x.grad, grads["inside"], rtol=1e-4)


def test_the_checks_undo_case_is_named_for_what_it_shows():
    names = [case.name for case in ex01._layer_norm_cases(torch.Generator().manual_seed(0))]
    assert "gamma = this row's std, beta = its mean: recovers this one row" in names
    assert not any("undoes the normalization" in name for name in names)
