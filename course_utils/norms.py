"""Reference implementations of LayerNorm, RMSNorm and BatchNorm, written to be read.

Each function states its formula, validates its input with an error that names the problem, and
computes in float32 when the input is float16 or bfloat16 (the sums of squares overflow or lose
precision in half precision), then casts the result back to the input's dtype. That is what
torch's own kernels do, and the tests compare these functions with `torch.nn.functional` on many
shapes, dtypes and eps values.

    layer_norm(x)  = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias     over the last dim
    rms_norm(x)    =  x / sqrt(mean(x**2) + eps) * weight                   over the last dim
    dynamic_tanh(x) = tanh(alpha * x) * weight + bias                       elementwise: no statistics at all
    batch_norm(x)  = (x - mean_B(x)) / sqrt(var_B(x) + eps) * weight + bias over every dim but the last

`var` is always the *biased* variance (divide by n, not n - 1): the normalization uses the
statistics of exactly these numbers, not an estimate of a population's. Only BatchNorm's running
variance, which *is* such an estimate, uses n - 1.
"""

from __future__ import annotations

import math
from numbers import Real

import torch
from torch import nn

from .i18n import _

__all__ = ["layer_norm", "rms_norm", "batch_norm", "LayerNorm", "RMSNorm", "BatchNorm", "DynamicTanh", "gain_of"]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


# ----------------------------------------------------------------------------------------------------
# input validation: every message names the argument and what was wrong with it
# ----------------------------------------------------------------------------------------------------
def _check_input(x, name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(_("{name}: x must be a torch.Tensor, got {type}").format(name=name, type=type(x).__name__))
    if not x.is_floating_point():
        raise TypeError(
            _(
                "{name}: x has dtype {dtype}, but normalization needs a floating-point tensor (convert with x.float())"
            ).format(name=name, dtype=x.dtype)
        )
    if x.dim() == 0:
        raise ValueError(
            _("{name}: x is a 0-d tensor (a single number); it needs at least one dimension to normalize over").format(
                name=name
            )
        )


def _check_eps(eps, name: str) -> None:
    if isinstance(eps, bool) or not isinstance(eps, Real):
        raise TypeError(_("{name}: eps must be a real number, got {type}").format(name=name, type=type(eps).__name__))
    if not math.isfinite(eps):
        raise ValueError(_("{name}: eps must be finite, got {eps}").format(name=name, eps=eps))
    if eps < 0:
        raise ValueError(
            _("{name}: eps must be >= 0 (it is added to a variance), got {eps}").format(name=name, eps=eps)
        )


def _check_param(p, label: str, features: int, name: str) -> None:
    if p is None:
        return
    if not isinstance(p, torch.Tensor):
        raise TypeError(
            _("{name}: {label} must be a torch.Tensor or None, got {type}").format(
                name=name, label=label, type=type(p).__name__
            )
        )
    if tuple(p.shape) != (features,):
        raise ValueError(
            _("{name}: {label} has shape {shape}, expected ({features},) to match the last dim of x").format(
                name=name, label=label, shape=tuple(p.shape), features=features
            )
        )
    if not p.is_floating_point():
        raise TypeError(
            _("{name}: {label} has dtype {dtype}, expected a floating-point tensor").format(
                name=name, label=label, dtype=p.dtype
            )
        )


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    """float16/bfloat16 are computed in float32; float32 and float64 in themselves."""
    return torch.float32 if x.dtype in _LOW_PRECISION else x.dtype


# ----------------------------------------------------------------------------------------------------
# the three norms
# ----------------------------------------------------------------------------------------------------
def layer_norm(x: torch.Tensor, weight=None, bias=None, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dim: each vector (one token) is centred and scaled by its own statistics.

    Args:
        x: float tensor of shape (..., D), at least 1-d.
        weight: optional gain gamma of shape (D,).
        bias: optional shift beta of shape (D,).
        eps: added to the variance *inside* the square root, so a constant vector gives 0, not NaN.
    """
    _check_input(x, "layer_norm")
    _check_eps(eps, "layer_norm")
    _check_param(weight, "weight", x.shape[-1], "layer_norm")
    _check_param(bias, "bias", x.shape[-1], "layer_norm")
    h = x.to(_compute_dtype(x))
    mean = h.mean(dim=-1, keepdim=True)
    var = ((h - mean) ** 2).mean(dim=-1, keepdim=True)  # biased: divide by D
    y = (h - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight.to(y.dtype)
    if bias is not None:
        y = y + bias.to(y.dtype)
    return y.to(x.dtype)


def rms_norm(x: torch.Tensor, weight=None, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dim: scale each vector by its root mean square; no centring, no bias.

    Args:
        x: float tensor of shape (..., D), at least 1-d.
        weight: optional gain of shape (D,).
        eps: added to the mean square inside the square root.
    """
    _check_input(x, "rms_norm")
    _check_eps(eps, "rms_norm")
    _check_param(weight, "weight", x.shape[-1], "rms_norm")
    h = x.to(_compute_dtype(x))
    mean_square = (h * h).mean(dim=-1, keepdim=True)
    y = h * torch.rsqrt(mean_square + eps)
    if weight is not None:
        y = y * weight.to(y.dtype)
    return y.to(x.dtype)


def batch_norm(
    x: torch.Tensor,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    training: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> torch.Tensor:
    """BatchNorm with features in the last dim: statistics per feature over every other axis.

    x is (N, D) or (N, T, D). In training mode the output uses the batch's own mean and biased
    variance, and the running statistics (if given) are updated in place, exactly as torch does:

        running_mean <- (1 - momentum) * running_mean + momentum * batch_mean
        running_var  <- (1 - momentum) * running_var  + momentum * batch_var_unbiased   (n - 1)

    In eval mode the output uses the running statistics instead, so one sample's output no longer
    depends on its batch mates.
    """
    _check_input(x, "batch_norm")
    _check_eps(eps, "batch_norm")
    if x.dim() not in (2, 3):
        raise ValueError(
            _("batch_norm: x must be (N, D) or (N, T, D), got a {dim}-d tensor of shape {shape}").format(
                dim=x.dim(), shape=tuple(x.shape)
            )
        )
    features = x.shape[-1]
    _check_param(weight, "weight", features, "batch_norm")
    _check_param(bias, "bias", features, "batch_norm")
    _check_param(running_mean, "running_mean", features, "batch_norm")
    _check_param(running_var, "running_var", features, "batch_norm")
    if (running_mean is None) != (running_var is None):
        raise ValueError(_("batch_norm: give both running_mean and running_var, or neither"))
    if isinstance(momentum, bool) or not isinstance(momentum, Real) or not 0.0 <= momentum <= 1.0:
        raise ValueError(
            _("batch_norm: `momentum` must be a number in [0, 1], got {momentum!r}").format(momentum=momentum)
        )

    h = x.to(_compute_dtype(x))
    dims = tuple(range(x.dim() - 1))  # every axis but the features
    count = x.numel() // features  # values per feature: N, or N * T
    if training:
        if count < 2:
            raise ValueError(
                _(
                    "batch_norm: training mode needs more than 1 value per feature to compute a variance, got input "
                    "shape {shape}"
                ).format(shape=tuple(x.shape))
            )
        mean = h.mean(dim=dims)
        var = ((h - mean) ** 2).mean(dim=dims)  # biased, used to normalize
        if running_mean is not None:
            with torch.no_grad():
                unbiased = var * (count / (count - 1))
                running_mean.mul_(1 - momentum).add_(momentum * mean.to(running_mean.dtype))
                running_var.mul_(1 - momentum).add_(momentum * unbiased.to(running_var.dtype))
    else:
        if running_mean is None:
            raise ValueError(_("batch_norm: eval mode (training=False) needs running_mean and running_var"))
        mean = running_mean.to(h.dtype)
        var = running_var.to(h.dtype)
    y = (h - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight.to(y.dtype)
    if bias is not None:
        y = y + bias.to(y.dtype)
    return y.to(x.dtype)


# ----------------------------------------------------------------------------------------------------
# module forms: the same functions with their parameters and buffers
# ----------------------------------------------------------------------------------------------------
class LayerNorm(nn.Module):
    """`layer_norm` with a learnable gain (init 1) and shift (init 0)."""

    def __init__(self, d: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        _check_eps(eps, "LayerNorm")
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}, bias={self.bias is not None}"


class RMSNorm(nn.Module):
    """`rms_norm` with a learnable gain initialized to 1.

    plus_one=True is Gemma's form: the stored parameter w starts at 0 and the gain is (1 + w). At the start the
    two forms compute the same thing, and under Adam without weight decay they train identically (the gradient
    with respect to w is the same either way). They part ways under weight decay, which pulls w towards 0: a
    plain gain decays towards 0 (switching the feature off), a (1 + w) gain towards 1 (leaving it alone).
    """

    def __init__(self, d: int, eps: float = 1e-6, plus_one: bool = False):
        super().__init__()
        _check_eps(eps, "RMSNorm")
        self.eps, self.plus_one = eps, plus_one
        self.weight = nn.Parameter(torch.zeros(d) if plus_one else torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, gain_of(self), self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}" + (", gain=1+w" if self.plus_one else "")


def gain_of(norm: nn.Module) -> torch.Tensor:
    """The gain a norm layer multiplies by: its weight, or 1 + weight for the plus_one (Gemma) form.

    Gemma's 1 + w is formed in float32 at least, as the reference code does (`1.0 + self.weight.float()` in
    transformers' GemmaRMSNorm): with bfloat16 parameters, 1 + w rounded to bfloat16 would lose w's last digits
    (w near 0 has many more of them than 1 + w can hold), and about one output in five would end one bfloat16
    step away from the reference's."""
    weight = norm.weight
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"{type(norm).__name__} has no weight tensor")
    if not getattr(norm, "plus_one", False):
        return weight
    return weight.to(torch.promote_types(weight.dtype, torch.float32)) + 1


class DynamicTanh(nn.Module):
    """DyT (Zhu, Chen, He, LeCun and Liu 2025, arXiv 2503.10622): a norm layer's place, without statistics.

        DyT(x) = weight * tanh(alpha * x) + bias        alpha: one learnable scalar, initialized to alpha0

    It reads no mean and no variance: each element is squashed on its own, so nothing bounds the vector's
    size as a whole; tanh bounds every element to [-1, 1] before the gain. The paper's observation is that
    trained LayerNorms map their inputs along S-shaped curves, which tanh imitates. The official code
    (jiachenzhu/DyT, dynamic_tanh.py) initializes alpha to 0.5, weight to 1 and bias to 0.
    """

    def __init__(self, d: int, alpha0: float = 0.5, bias: bool = True):
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(float(alpha0)))
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(self.alpha * x) * self.weight
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, alpha={self.alpha.item():g}, bias={self.bias is not None}"


class BatchNorm(nn.Module):
    """`batch_norm` with gain, shift and running statistics; `.train()` / `.eval()` switch the mode."""

    def __init__(self, d: int, momentum: float = 0.1, eps: float = 1e-5):
        super().__init__()
        _check_eps(eps, "BatchNorm")
        self.eps, self.momentum = eps, momentum
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))
        self.register_buffer("running_mean", torch.zeros(d))
        self.register_buffer("running_var", torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            training=self.training,
            momentum=self.momentum,
            eps=self.eps,
        )

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, momentum={self.momentum}, eps={self.eps}"
