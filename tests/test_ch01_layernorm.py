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


def test_the_variance_question_options_are_the_numbers_they_claim():
    """ex01.variance: the options are LN([4, 6, 2, 8]) scaled by sqrt(3/4) (right), sqrt(4/3) and 3/4."""
    import re

    q = ex01.VARIANCE_QUESTION
    right = norms.layer_norm(torch.tensor([4.0, 6.0, 2.0, 8.0], dtype=torch.float64), eps=0.0)
    unbiased = (right.new_tensor([-1.0, 1.0, -3.0, 3.0])) / torch.sqrt(right.new_tensor(20 / 3))

    def numbers(letter):
        return torch.tensor([float(v) for v in re.findall(r"-?\d+\.\d+", q.choices[letter])[:4]], dtype=torch.float64)

    assert torch.allclose(numbers(q.answer), unbiased, atol=6e-4)
    assert torch.allclose(numbers("a"), right * (4 / 3) ** 0.5, atol=6e-4)
    assert torch.allclose(numbers("c"), right * 0.75, atol=6e-4)
    assert "6.667" in q.wrong_hints["a"]  # tests/test_checks.py relies on it


def test_the_explorer_figure_is_readable_and_described():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_utils import widgets
    from course_utils.figures import figure_problems

    for kwargs in ({}, {"gamma": -2.5, "beta": 4.0, "eps": 10.0}):
        fig = widgets.draw_layer_norm([4.0, 6.0, 2.0, 8.0], **kwargs)
        assert figure_problems(fig) == []
        plt.close(fig)
    alt = widgets.alt_layer_norm([4.0, 6.0, 2.0, 8.0])
    assert "mean 5.00" in alt and "[-0.45, 0.45, -1.34, 1.34]" in alt
