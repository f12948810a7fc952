"""Checks for exercise 01 (LayerNorm): the statistics LayerNorm computes, LayerNorm forward, one question.

    ✅ layer_norm: all 9 cases match the reference (max abs error below 1e-06, tolerance 1e-04)
    ❌ layer_norm: 7 of 9 cases differ from the reference
       ✗ a batch of rows (3×5): max abs error 1.8e-01 > tolerance 1.0e-04
       Hint: your output matches LayerNorm with the *unbiased* variance (dividing by n - 1) ...

The cases are chosen so that each realistic mistake shows on at least one of them: the seed's vector
[4, 6, 2, 8] (the unbiased variance), a batch of rows (the wrong axis), a constant row (no eps), a
nearly constant row with eps = 1e-3, a thousand times its variance (eps outside the square root, eps
ignored), gamma and beta together and each one alone (no affine, one of them skipped or raising).
tests/test_mutations.py holds every check to this, with realistic wrong implementations, at 31 seeds.
"""

from __future__ import annotations

import torch

from .. import norms
from ..i18n import N_
from .allowed import BASIC
from .core import Case, CheckReport, FunctionCheck, Message, WrongOutputStructure
from .forbidden import COURSE_NORMS, TORCH_NORMS, VARIANCE, Forbidden
from .questions import MultipleChoice
from .registry import Exercise, Graded

__all__ = [
    "EXERCISE",
    "FORBIDDEN",
    "LAYER_NORM_CHECK",
    "STATISTICS_CHECK",
    "VARIANCE_QUESTION",
    "check_layer_norm",
    "check_statistics",
]


# ----------------------------------------------------------------------------------------------------
# what both tasks forbid
# ----------------------------------------------------------------------------------------------------
FORBIDDEN = Forbidden(
    calls=VARIANCE + TORCH_NORMS + COURSE_NORMS,
    hint=N_(
        "use basic tensor operations, as the exercise asks (mean, sum, sqrt, arithmetic): the variance is the "
        "mean of the squared deviations from the mean, ((x - mean) ** 2).mean(...)."
    ),
    why="the notebook: 'Use only basic tensor operations (mean, sum, sqrt, arithmetic): not "
    "torch.nn.functional.layer_norm, torch.var or torch.std'. numpy's and statistics' variances are torch.var "
    "by another name; torch's other norms (RMSNorm of a centred row, BatchNorm or InstanceNorm of a transpose) "
    "and the course's own norms compute LayerNorm too.",
    allowed=BASIC,
)


# ----------------------------------------------------------------------------------------------------
# layer_norm(x, gamma=None, beta=None, eps=1e-5)
# ----------------------------------------------------------------------------------------------------
def _ln_ref(x, weight=None, bias=None, eps=1e-5):
    return norms.layer_norm(
        x.double(), None if weight is None else weight.double(), None if bias is None else bias.double(), eps
    )


def _layer_norm_cases(g: torch.Generator) -> list:
    def randn(*shape):
        return torch.randn(*shape, generator=g)

    d = 6
    specs = [
        (N_("the seed's vector [4, 6, 2, 8]"), (torch.tensor([4.0, 6.0, 2.0, 8.0]), None, None, 1e-5)),
        (N_("a batch of rows (3×5)"), (randn(3, 5) * 3 + 1, None, None, 1e-5)),
        (N_("a constant row [7, 7, 7, 7] (variance 0)"), (torch.full((2, 4), 7.0), None, None, 1e-5)),
        (N_("large values (scale 1000, offset 500)"), (randn(4, 16) * 1000 + 500, None, None, 1e-5)),
        (N_("a nearly constant row with eps = 1e-3"), (1.0 + 1e-3 * randn(2, 8), None, None, 1e-3)),
        (N_("a random 3-d tensor (2×3×6) with gamma and beta"), (randn(2, 3, d), randn(d), randn(d), 1e-5)),
        (N_("gamma without beta (beta=None)"), (randn(3, d) * 2 - 1, randn(d) + 2, None, 1e-5)),
        (N_("beta without gamma (gamma=None)"), (randn(3, d) * 2 - 1, None, randn(d), 1e-5)),
        (N_("gamma = this row's std, beta = its mean: recovers this one row"), _undo_case(randn(d) * 2 + 3)),
        (N_("rows whose variance equals eps = 0.01"), (_rows_with_variance(randn(3, 8), 0.01) + 5, None, None, 1e-2)),
    ]
    return [Case(name, args, _ln_ref(*args)) for name, args in specs]


def _rows_with_variance(rows: torch.Tensor, variance: float) -> torch.Tensor:
    """The rows rescaled so that each one's (biased) variance is `variance`: eps then weighs as much as the
    variance, so that var + eps and max(var, eps) or var + eps² differ by a factor √2 or so, at every seed."""
    centred = rows - rows.mean(-1, keepdim=True)
    return centred / centred.pow(2).mean(-1, keepdim=True).sqrt() * variance**0.5


def _undo_case(row: torch.Tensor):
    """gamma and beta set to this row's own std and mean give the row back; they would not give back a row of
    another scale (gamma and beta are shared by every row, the statistics are not)."""
    mean = row.mean()
    std = torch.sqrt(((row - mean) ** 2).mean() + 1e-5)
    d = row.shape[0]
    return (row, std.expand(d).clone(), mean.expand(d).clone(), 1e-5)


def _ln_unbiased(x, weight=None, bias=None, eps=1e-5):
    x = x.double()
    y = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=True) + eps)
    return _affine(y, weight, bias)


def _ln_wrong_axis(x, weight=None, bias=None, eps=1e-5):
    x = x.double()
    y = (x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, keepdim=True, unbiased=False) + eps)
    return _affine(y, weight, bias)


def _ln_eps_outside(x, weight=None, bias=None, eps=1e-5):
    x = x.double()
    y = (x - x.mean(-1, keepdim=True)) / (torch.sqrt(x.var(-1, keepdim=True, unbiased=False)) + eps)
    return _affine(y, weight, bias)


def _ln_no_affine(x, weight=None, bias=None, eps=1e-5):
    return _ln_ref(x, None, None, eps)


def _ln_fixed_eps(x, weight=None, bias=None, eps=1e-5):
    return _ln_ref(x, weight, bias, 1e-5)


def _affine(y, weight, bias):
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y


LAYER_NORM_CHECK = FunctionCheck(
    name="layer_norm",
    make_cases=_layer_norm_cases,
    tolerance=1e-4,
    hint=N_(
        "compute mean and variance over the last dim (dim=-1, keepdim=True), divide by n (unbiased=False), "
        "put eps inside the square root, then multiply by gamma and add beta, each when it is given (either may be "
        "None without the other)."
    ),
    nan_hint=N_(
        "NaN appears where the variance is 0 (a constant row): 0 / sqrt(0) is undefined. Add eps to the "
        "variance inside the square root: sqrt(var + eps)."
    ),
    mistakes={
        N_(
            "your output matches LayerNorm with the *unbiased* variance (dividing by n - 1). "
            "LayerNorm uses the biased variance: ((x - mean) ** 2).mean(dim=-1, keepdim=True)."
        ): _ln_unbiased,
        N_(
            "your output matches normalizing over the wrong axis (dim 0, across rows). LayerNorm normalizes each "
            "row on its own: reduce over the last dim (dim=-1)."
        ): _ln_wrong_axis,
        N_(
            "your output matches adding eps *outside* the square root, std + eps. LayerNorm divides by "
            "sqrt(var + eps); the difference shows when the variance is close to eps."
        ): _ln_eps_outside,
        N_(
            "your output matches LayerNorm without gamma and beta. After normalizing, multiply by gamma "
            "(weight) and add beta (bias) when they are given."
        ): _ln_no_affine,
        N_(
            "your output matches eps = 1e-5 whatever eps is given: use the eps argument, sqrt(var + eps)."
        ): _ln_fixed_eps,
    },
    reference=_ln_ref,
    forbidden=FORBIDDEN,
)


def check_layer_norm(fn, seed: int = 0) -> CheckReport:
    """Check a learner's `layer_norm(x, gamma=None, beta=None, eps=1e-5)` against the reference."""
    return LAYER_NORM_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# statistics(x) -> (mean, variance, std), as LayerNorm computes them: [4, 6, 2, 8] -> 5, 5, sqrt(5)
# ----------------------------------------------------------------------------------------------------
def _statistics_ref(x):
    x = x.double()
    mean = x.mean()
    variance = ((x - mean) ** 2).mean()
    return mean, variance, variance.sqrt()


def _statistics_cases(g: torch.Generator) -> list:
    vectors = [
        (N_("mean, variance and std of [4, 6, 2, 8]"), torch.tensor([4.0, 6.0, 2.0, 8.0])),
        (N_("a random vector of 7 values"), torch.randn(7, generator=g) * 3 + 1),
        (N_("a constant vector [7, 7, 7]"), torch.full((3,), 7.0)),
        (N_("a random vector of 50 values"), torch.randn(50, generator=g) * 10 - 4),
    ]
    return [Case(name, (v,), _statistics_ref(v)) for name, v in vectors]


def _statistics_unbiased(x):
    """The n - 1 variance (torch.var's default) and its square root."""
    x = x.double()
    n = x.numel()
    variance = ((x - x.mean()) ** 2).sum() / (n - 1)
    return x.mean(), variance, variance.sqrt()


class _NumbersCheck(FunctionCheck):
    """A check of a function that returns a tuple of plain numbers (floats, or one-element tensors)."""

    def split_output(self, output) -> list:
        try:
            values = [torch.tensor(float(v), dtype=torch.float64) for v in output]
        except Exception:
            values = None
        if values is None or len(values) != len(self.parts):
            raise WrongOutputStructure(
                Message(N_("return a tuple of three numbers: ({parts})"), parts=", ".join(self.parts))
            )
        return values


STATISTICS_CHECK = _NumbersCheck(
    name="statistics",
    make_cases=_statistics_cases,
    tolerance=1e-4,
    hint=N_("mean = sum / n; variance = mean of the squared deviations (divide by n); std = sqrt(variance)."),
    mistakes={
        N_(
            "your variance divides by n - 1 (for [4, 6, 2, 8]: 20/3 ≈ 6.667). LayerNorm divides the sum of "
            "squared deviations by n (20 / 4 = 5)."
        ): _statistics_unbiased
    },
    reference=_statistics_ref,
    parts=("mean", "variance", "std"),
    forbidden=FORBIDDEN,
)


def check_statistics(fn) -> CheckReport:
    """Check a function statistics(x) returning (mean, variance, std) of a 1-d tensor, as LayerNorm computes them."""
    return STATISTICS_CHECK(fn)


# ----------------------------------------------------------------------------------------------------
# the question, the registry
# ----------------------------------------------------------------------------------------------------
VARIANCE_QUESTION = MultipleChoice(
    id="ex01.variance",
    prompt=N_(
        "A colleague's LayerNorm computes the variance with torch.var(x, dim=-1), which divides by n - 1. "
        "For x = [4, 6, 2, 8] (ε ignored) the right output is [-0.447, 0.447, -1.342, 1.342]. What does the "
        "colleague's version return?"
    ),
    choices={
        "a": N_("[-0.516, 0.516, -1.549, 1.549]: scaled up by sqrt(4/3)"),
        "b": N_("[-0.387, 0.387, -1.162, 1.162]: smaller by sqrt(3/4)"),
        "c": N_("[-0.335, 0.335, -1.006, 1.006]: smaller by 3/4"),
        "d": N_("the same four numbers: dividing by n - 1 matters only for long vectors"),
    },
    answer="b",
    explanation=N_(
        "the unbiased variance is n/(n-1) = 4/3 times the biased one (20/3 instead of 5), so dividing by "
        "its square root shrinks every output by sqrt(3/4) ≈ 0.866. The mean is still subtracted, so the output stays "
        "centred. For n = 768 the factor is 0.99935, which is why the mistake hides in a real model."
    ),
    wrong_hints={
        "a": N_(
            "dividing by n - 1 makes the variance larger (20/3 ≈ 6.667 instead of 5), and a larger divisor makes "
            "the outputs smaller, not larger."
        ),
        "c": N_(
            "3/4 is the ratio of the two variances, but LayerNorm divides by the square root of the variance: the "
            "outputs shrink by sqrt(3/4) ≈ 0.866."
        ),
        "d": N_(
            "it is the other way round: the factor sqrt((n-1)/n) is 0.866 for n = 4 and close to 1 (0.99935) only "
            "for long vectors such as n = 768."
        ),
    },
)

EXERCISE = Exercise(
    "ex01_layernorm",
    graded=[
        Graded("statistics", "statistics", 1),
        Graded("layer_norm", "layer_norm", 3),
        Graded("ex01.variance", "answer_variance_pitfall", 1),
    ],
    checks=[LAYER_NORM_CHECK, STATISTICS_CHECK],
    questions=[VARIANCE_QUESTION],
)
