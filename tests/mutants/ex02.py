"""Exercise 02 (RMSNorm): rms_norm(x, weight=None, eps=1e-6) and layer_norm_via_rms_norm(x, weight=None, eps=1e-5)."""

import torch

HALF = (torch.float16, torch.bfloat16)


def _upcast(x):
    return x.float() if x.dtype in HALF else x


def _finish(x, y, weight):
    """Multiply by the gain (in the compute dtype) and cast back to the input's dtype, as the task asks."""
    if weight is not None:
        y = y * weight.to(y.dtype)
    return y.to(x.dtype)


def _mean_square(h, dim=-1):
    return (h * h).mean(dim=dim, keepdim=True)


# ----------------------------------------------------------------------------------------------------
# rms_norm(x, weight=None, eps=1e-6)
# ----------------------------------------------------------------------------------------------------
def rms_norm_with_sum_and_sqrt(x, weight=None, eps=1e-6):
    """Correct: float32 for every input, sum / n, division by the square root, gain folded in."""
    h = x.to(torch.float32) if x.dtype != torch.float64 else x
    n = h.shape[-1]
    denominator = torch.sqrt(h.pow(2).sum(dim=-1, keepdim=True) / n + eps)
    gain = 1.0 if weight is None else weight.to(h.dtype)
    return (h * gain / denominator).to(x.dtype)


def rms_norm_mean_not_square(x, weight=None, eps=1e-6):
    """Divides by sqrt(mean(x)), the mean of x itself, not of its squares."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt(h.mean(dim=-1, keepdim=True) + eps), weight)


def rms_norm_square_of_mean(x, weight=None, eps=1e-6):
    """Divides by sqrt(mean(x)**2): squares the mean instead of averaging the squares."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt(h.mean(dim=-1, keepdim=True) ** 2 + eps), weight)


def rms_norm_centred(x, weight=None, eps=1e-6):
    """Subtracts the mean first: LayerNorm without a bias, not RMSNorm."""
    h = _upcast(x)
    c = h - h.mean(dim=-1, keepdim=True)
    return _finish(x, c / torch.sqrt(_mean_square(c) + eps), weight)


def rms_norm_l2_normalize(x, weight=None, eps=1e-6):
    """Divides by the L2 norm, sqrt(sum(x**2)), instead of the root of the *mean* square."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt((h * h).sum(dim=-1, keepdim=True) + eps), weight)


def rms_norm_eps_outside_sqrt(x, weight=None, eps=1e-6):
    """Adds eps outside the square root: sqrt(mean(x**2)) + eps."""
    h = _upcast(x)
    return _finish(x, h / (torch.sqrt(_mean_square(h)) + eps), weight)


def rms_norm_clamped_mean_square(x, weight=None, eps=1e-6):
    """Keeps the mean square away from 0 with max(ms, eps) (clamp_min) instead of adding eps."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt(_mean_square(h).clamp_min(eps)), weight)


def rms_norm_eps_squared(x, weight=None, eps=1e-6):
    """Adds eps² to the mean square (eps read as a floor on the RMS) instead of eps."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt(_mean_square(h) + eps * eps), weight)


def rms_norm_sqrt_eps_outside(x, weight=None, eps=1e-6):
    """Adds √eps to the RMS, sqrt(ms) + sqrt(eps), instead of eps inside the square root."""
    h = _upcast(x)
    return _finish(x, h / (torch.sqrt(_mean_square(h)) + eps**0.5), weight)


def rms_norm_no_eps(x, weight=None, eps=1e-6):
    """Leaves eps out: divides by sqrt(mean(x**2))."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt(_mean_square(h)), weight)


def rms_norm_hard_coded_eps(x, weight=None, eps=1e-6):
    """Ignores the eps argument and always uses 1e-6."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt(_mean_square(h) + 1e-6), weight)


def rms_norm_wrong_axis(x, weight=None, eps=1e-6):
    """Averages the squares over dim 0 (across rows) instead of the last dim."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt(_mean_square(h, dim=0) + eps), weight)


def rms_norm_ignores_weight(x, weight=None, eps=1e-6):
    """Never multiplies by the weight."""
    h = _upcast(x)
    return _finish(x, h / torch.sqrt(_mean_square(h) + eps), None)


def rms_norm_weight_before_normalizing(x, weight=None, eps=1e-6):
    """Multiplies by the weight first and normalizes the product."""
    h = _upcast(x)
    if weight is not None:
        h = h * weight.to(h.dtype)
    return (h / torch.sqrt(_mean_square(h) + eps)).to(x.dtype)


def rms_norm_no_upcast(x, weight=None, eps=1e-6):
    """Computes in the input's own dtype: in float16, x * x overflows for |x| > 256."""
    y = x / torch.sqrt(_mean_square(x) + eps)
    return y if weight is None else y * weight.to(y.dtype)


def rms_norm_never_casts_back(x, weight=None, eps=1e-6):
    """Computes in float32 and returns float32 for a float16 or bfloat16 input."""
    h = _upcast(x)
    y = h / torch.sqrt(_mean_square(h) + eps)
    return y if weight is None else y * weight.to(y.dtype)


def rms_norm_casts_back_to_float16(x, weight=None, eps=1e-6):
    """Casts every half-precision result to float16 (.half()), also for bfloat16 input."""
    h = _upcast(x)
    y = h / torch.sqrt(_mean_square(h) + eps)
    if weight is not None:
        y = y * weight.to(y.dtype)
    return y.half() if x.dtype in HALF else y


def rms_norm_upcasts_only_float16(x, weight=None, eps=1e-6):
    """Upcasts float16 but computes bfloat16 in bfloat16 (about one rounding step off)."""
    h = x.float() if x.dtype == torch.float16 else x
    return _finish(x, h / torch.sqrt(_mean_square(h) + eps), weight)


# ----------------------------------------------------------------------------------------------------
# layer_norm_via_rms_norm(x, weight=None, eps=1e-5): LayerNorm without a shift, as RMSNorm of x - mean(x)
# ----------------------------------------------------------------------------------------------------
def _rms(x, weight, eps):
    """A right rms_norm, as the learner's task 1 would give them."""
    h = _upcast(x)
    return _finish(x, h * torch.rsqrt(_mean_square(h) + eps), weight)


def layer_norm_via_centred_rms_by_sums(x, weight=None, eps=1e-5):
    """Correct: centre with sum / n, then the right rms_norm."""
    centred = x - x.sum(dim=-1, keepdim=True) / x.shape[-1]
    return rms_norm_with_sum_and_sqrt(centred, weight, eps)


def ln_via_rms_not_centred(x, weight=None, eps=1e-5):
    """RMSNorm of x itself: forgets to subtract the mean."""
    return _rms(x, weight, eps)


def ln_via_rms_centred_over_columns(x, weight=None, eps=1e-5):
    """Subtracts each column's mean (dim 0) instead of each row's."""
    return _rms(x - x.mean(dim=0, keepdim=True), weight, eps)


def ln_via_rms_centred_by_global_mean(x, weight=None, eps=1e-5):
    """Subtracts one mean of the whole tensor instead of each row's."""
    return _rms(x - x.mean(), weight, eps)


def ln_via_rms_unbiased(x, weight=None, eps=1e-5):
    """Rescales to the unbiased variance: divides by the n - 1 standard deviation."""
    n = x.shape[-1]
    c = x - x.mean(dim=-1, keepdim=True)
    y = c / torch.sqrt((c * c).sum(dim=-1, keepdim=True) / (n - 1) + eps)
    return y if weight is None else y * weight


def ln_via_rms_hard_coded_eps(x, weight=None, eps=1e-5):
    """Calls rms_norm without passing eps on, so it uses rms_norm's default 1e-6."""
    return _rms(x - x.mean(dim=-1, keepdim=True), weight, 1e-6)


def ln_via_rms_eps_outside_sqrt(x, weight=None, eps=1e-5):
    """An rms_norm with eps outside the square root, on the centred x."""
    c = x - x.mean(dim=-1, keepdim=True)
    y = c / (torch.sqrt(_mean_square(c)) + eps)
    return y if weight is None else y * weight


def ln_via_rms_ignores_weight(x, weight=None, eps=1e-5):
    """Does not pass the weight on to rms_norm."""
    return _rms(x - x.mean(dim=-1, keepdim=True), None, eps)


def ln_via_rms_weight_before_centring(x, weight=None, eps=1e-5):
    """Multiplies by the weight first, then centres and normalizes the product."""
    h = x if weight is None else x * weight
    return _rms(h - h.mean(dim=-1, keepdim=True), None, eps)


CORRECT = {"rms_norm": rms_norm_with_sum_and_sqrt, "layer_norm_via_rms_norm": layer_norm_via_centred_rms_by_sums}
MUTANTS = {
    "rms_norm": [
        rms_norm_mean_not_square,
        rms_norm_square_of_mean,
        rms_norm_centred,
        rms_norm_l2_normalize,
        rms_norm_eps_outside_sqrt,
        rms_norm_clamped_mean_square,
        rms_norm_eps_squared,
        rms_norm_sqrt_eps_outside,
        rms_norm_no_eps,
        rms_norm_hard_coded_eps,
        rms_norm_wrong_axis,
        rms_norm_ignores_weight,
        rms_norm_weight_before_normalizing,
        rms_norm_no_upcast,
        rms_norm_never_casts_back,
        rms_norm_casts_back_to_float16,
    ],
    "layer_norm_via_rms_norm": [
        ln_via_rms_not_centred,
        ln_via_rms_centred_over_columns,
        ln_via_rms_centred_by_global_mean,
        ln_via_rms_unbiased,
        ln_via_rms_hard_coded_eps,
        ln_via_rms_eps_outside_sqrt,
        ln_via_rms_ignores_weight,
        ln_via_rms_weight_before_centring,
    ],
}

# A mistake no output comparison can catch, kept here with the measurement that says why (see the test that
# uses it): computing a bfloat16 RMSNorm in bfloat16 lands within about one bfloat16 rounding step of the exact
# answer, as close as the right float32 computation's half step. Only float16 overflows.
WITHIN_ROUNDING = {"rms_norm": [rms_norm_upcasts_only_float16]}
