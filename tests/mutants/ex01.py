"""Exercise 01 (LayerNorm): statistics(x) and layer_norm(x, gamma=None, beta=None, eps=1e-5)."""

import math

import torch


# ----------------------------------------------------------------------------------------------------
# statistics(x) -> (mean, variance, std) of a 1-d tensor, as LayerNorm computes them
# ----------------------------------------------------------------------------------------------------
def statistics_in_plain_python(x):
    """Correct: plain Python floats, one value at a time."""
    values = [float(v) for v in x.tolist()]
    mean = math.fsum(values) / len(values)
    variance = math.fsum((v - mean) ** 2 for v in values) / len(values)
    return mean, variance, math.sqrt(variance)


def statistics_unbiased(x):
    """Divides the squared deviations by n - 1 (torch.var's default) instead of n."""
    mean = x.mean()
    variance = ((x - mean) ** 2).sum() / (x.numel() - 1)
    return mean.item(), variance.item(), variance.sqrt().item()


def statistics_std_from_unbiased_variance(x):
    """Biased variance, but the std of the unbiased one (x.std()'s default)."""
    mean = x.mean()
    squares = ((x - mean) ** 2).sum()
    return mean.item(), (squares / x.numel()).item(), (squares / (x.numel() - 1)).sqrt().item()


def statistics_no_square_root(x):
    """Returns the variance as the std (forgets the square root)."""
    mean = x.mean()
    variance = ((x - mean) ** 2).mean()
    return mean.item(), variance.item(), variance.item()


def statistics_not_centred(x):
    """Variance as the mean of x**2: forgets to subtract the mean."""
    variance = (x**2).mean()
    return x.mean().item(), variance.item(), variance.sqrt().item()


def statistics_sum_not_mean(x):
    """Variance as the sum of the squared deviations: forgets to divide by n."""
    mean = x.mean()
    variance = ((x - mean) ** 2).sum()
    return mean.item(), variance.item(), variance.sqrt().item()


def statistics_hard_coded_example(x):
    """Returns the worked example's answer for [4, 6, 2, 8] (5, 5, √5) whatever x is."""
    return 5.0, 5.0, math.sqrt(5.0)


# ----------------------------------------------------------------------------------------------------
# layer_norm(x, gamma=None, beta=None, eps=1e-5)
# ----------------------------------------------------------------------------------------------------
def _centred(x):
    return x - x.mean(dim=-1, keepdim=True)


def _biased_var(x):
    return (_centred(x) ** 2).mean(dim=-1, keepdim=True)


def _affine(y, gamma, beta):
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def layer_norm_with_rsqrt_of_sums(x, gamma=None, beta=None, eps=1e-5):
    """Correct: sums divided by n, rsqrt, and the gain and shift fused."""
    n = x.shape[-1]
    mean = x.sum(dim=-1, keepdim=True) / n
    centred = x - mean
    y = centred * torch.rsqrt(centred.pow(2).sum(dim=-1, keepdim=True) / n + eps)
    scale = 1.0 if gamma is None else gamma
    shift = 0.0 if beta is None else beta
    return y * scale + shift


def layer_norm_unbiased(x, gamma=None, beta=None, eps=1e-5):
    """Normalizes with the unbiased variance (divides by n - 1)."""
    n = x.shape[-1]
    var = (_centred(x) ** 2).sum(dim=-1, keepdim=True) / (n - 1)
    return _affine(_centred(x) / torch.sqrt(var + eps), gamma, beta)


def layer_norm_wrong_axis(x, gamma=None, beta=None, eps=1e-5):
    """Mean and variance over dim 0 (across rows) instead of the last dim."""
    mean = x.mean(dim=0, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=0, keepdim=True)
    return _affine((x - mean) / torch.sqrt(var + eps), gamma, beta)


def layer_norm_global_statistics(x, gamma=None, beta=None, eps=1e-5):
    """One mean and variance for the whole tensor (no dim) instead of one per row."""
    mean = x.mean()
    var = ((x - mean) ** 2).mean()
    return _affine((x - mean) / torch.sqrt(var + eps), gamma, beta)


def layer_norm_eps_outside_sqrt(x, gamma=None, beta=None, eps=1e-5):
    """Adds eps to the std, sqrt(var) + eps, instead of inside the square root."""
    return _affine(_centred(x) / (torch.sqrt(_biased_var(x)) + eps), gamma, beta)


def layer_norm_no_eps(x, gamma=None, beta=None, eps=1e-5):
    """Leaves eps out: divides by sqrt(var)."""
    return _affine(_centred(x) / torch.sqrt(_biased_var(x)), gamma, beta)


def layer_norm_hard_coded_eps(x, gamma=None, beta=None, eps=1e-5):
    """Ignores the eps argument and always uses 1e-5."""
    return _affine(_centred(x) / torch.sqrt(_biased_var(x) + 1e-5), gamma, beta)


def layer_norm_no_square_root(x, gamma=None, beta=None, eps=1e-5):
    """Divides by var + eps instead of sqrt(var + eps)."""
    return _affine(_centred(x) / (_biased_var(x) + eps), gamma, beta)


def layer_norm_not_centred(x, gamma=None, beta=None, eps=1e-5):
    """Divides x itself, not x - mean, by the standard deviation."""
    return _affine(x / torch.sqrt(_biased_var(x) + eps), gamma, beta)


def layer_norm_ignores_gamma_and_beta(x, gamma=None, beta=None, eps=1e-5):
    """Never applies gamma or beta."""
    return _centred(x) / torch.sqrt(_biased_var(x) + eps)


def layer_norm_missing_gain(x, gamma=None, beta=None, eps=1e-5):
    """Adds beta but never multiplies by gamma."""
    return _affine(_centred(x) / torch.sqrt(_biased_var(x) + eps), None, beta)


def layer_norm_missing_bias(x, gamma=None, beta=None, eps=1e-5):
    """Multiplies by gamma but never adds beta."""
    return _affine(_centred(x) / torch.sqrt(_biased_var(x) + eps), gamma, None)


def layer_norm_raises_when_beta_is_none(x, gamma=None, beta=None, eps=1e-5):
    """Applies y * gamma + beta whenever gamma is given: a TypeError when beta is None."""
    y = _centred(x) / torch.sqrt(_biased_var(x) + eps)
    if gamma is not None:
        y = y * gamma + beta
    return y


def layer_norm_affine_only_when_both_are_given(x, gamma=None, beta=None, eps=1e-5):
    """Skips gamma and beta unless both are given."""
    y = _centred(x) / torch.sqrt(_biased_var(x) + eps)
    if gamma is not None and beta is not None:
        y = y * gamma + beta
    return y


def layer_norm_beta_only_with_gamma(x, gamma=None, beta=None, eps=1e-5):
    """Applies beta only inside the gamma branch: beta without gamma is ignored."""
    y = _centred(x) / torch.sqrt(_biased_var(x) + eps)
    if gamma is not None:
        y = y * gamma
        if beta is not None:
            y = y + beta
    return y


def layer_norm_shift_before_scale(x, gamma=None, beta=None, eps=1e-5):
    """Adds beta before multiplying by gamma: (y + beta) * gamma."""
    y = _centred(x) / torch.sqrt(_biased_var(x) + eps)
    if beta is not None:
        y = y + beta
    if gamma is not None:
        y = y * gamma
    return y


def layer_norm_clamped_variance(x, gamma=None, beta=None, eps=1e-5):
    """Keeps the variance away from 0 with max(var, eps) (var.clamp_min(eps)) instead of adding eps."""
    return _affine(_centred(x) / torch.sqrt(_biased_var(x).clamp_min(eps)), gamma, beta)


def layer_norm_eps_squared(x, gamma=None, beta=None, eps=1e-5):
    """Adds eps² to the variance (eps read as a std's floor) instead of eps."""
    return _affine(_centred(x) / torch.sqrt(_biased_var(x) + eps**2), gamma, beta)


def layer_norm_sqrt_eps_outside(x, gamma=None, beta=None, eps=1e-5):
    """Adds √eps to the std, sqrt(var) + sqrt(eps), instead of eps inside the square root."""
    return _affine(_centred(x) / (torch.sqrt(_biased_var(x)) + eps**0.5), gamma, beta)


def layer_norm_gamma_and_beta_swapped(x, gamma=None, beta=None, eps=1e-5):
    """Swaps the roles of gamma and beta: y * beta + gamma."""
    return _affine(_centred(x) / torch.sqrt(_biased_var(x) + eps), beta, gamma)


def layer_norm_affine_before_normalizing(x, gamma=None, beta=None, eps=1e-5):
    """Applies gamma and beta to x, then normalizes (the normalization undoes most of them)."""
    x = _affine(x, gamma, beta)
    return _centred(x) / torch.sqrt(_biased_var(x) + eps)


# Not here: a one-pass variance, mean(x²) - mean(x)². It is right in exact arithmetic and loses digits in float32
# only when the offset is large next to the spread; a case that rejects it by 10x the tolerance at every seed
# (offset/spread near 300) leaves an honest float32 layer_norm within 5x of the tolerance. Measured, left out.
CORRECT = {"statistics": statistics_in_plain_python, "layer_norm": layer_norm_with_rsqrt_of_sums}
MUTANTS = {
    "statistics": [
        statistics_unbiased,
        statistics_std_from_unbiased_variance,
        statistics_no_square_root,
        statistics_not_centred,
        statistics_sum_not_mean,
        statistics_hard_coded_example,
    ],
    "layer_norm": [
        layer_norm_unbiased,
        layer_norm_wrong_axis,
        layer_norm_global_statistics,
        layer_norm_eps_outside_sqrt,
        layer_norm_no_eps,
        layer_norm_hard_coded_eps,
        layer_norm_no_square_root,
        layer_norm_not_centred,
        layer_norm_ignores_gamma_and_beta,
        layer_norm_missing_gain,
        layer_norm_missing_bias,
        layer_norm_raises_when_beta_is_none,
        layer_norm_affine_only_when_both_are_given,
        layer_norm_beta_only_with_gamma,
        layer_norm_shift_before_scale,
        layer_norm_clamped_variance,
        layer_norm_eps_squared,
        layer_norm_sqrt_eps_outside,
        layer_norm_gamma_and_beta_swapped,
        layer_norm_affine_before_normalizing,
    ],
}
