"""Checks for exercise 02 (RMSNorm): the learner's rms_norm, LayerNorm rebuilt from it, one question.

    ✅ rms_norm: all 9 cases match the reference (max abs error below 1e-02, tolerance 3e-02)
    ❌ rms_norm: 3 of 9 cases differ from the reference
       ✗ a batch of rows (3×5) with a positive offset: max abs error 0.92 > tolerance 1e-04
       Hint: your output matches dividing by the *mean* of x, squared ...

The cases are chosen so that each realistic mistake shows on at least one of them: an offset batch
(mean instead of mean square, the wrong axis), tiny values (eps outside the square root), a row of
zeros (no eps), eps = 1e-5 and 1e-2 on values small enough for eps to matter (eps ignored), float16
activations whose squares overflow float16 (no float32 upcast), bfloat16 activations (the result
cast back to the input's dtype, not to float16), a weight.
Half-precision cases are compared with a tolerance of one rounding step of their dtype, and their
output must come back in that dtype, as torch's own norms do. Computing a bfloat16 input in bfloat16
itself is not caught: it lands within about one rounding step of the exact answer, as close as a
float32 computation rounded to bfloat16 (tests/mutants/ex02.py keeps the measurement).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import norms
from ..i18n import N_
from .allowed import BASIC, Allowed
from .core import Case, CaseResult, CheckReport, FunctionCheck, Message, compare_tensor
from .forbidden import COURSE_NORMS, TORCH_NORMS, Forbidden
from .questions import MultipleChoice
from .registry import Exercise, Graded

__all__ = [
    "EXERCISE",
    "FORBIDDEN",
    "RMS_NORM_CHECK",
    "LN_VIA_RMS_CHECK",
    "SHIFT_QUESTION",
    "check_rms_norm",
    "check_layer_norm_via_rms_norm",
]

# An output of size up to 4 is rounded to steps of 2**-9 ≈ 2e-3 in float16 (10 fraction bits) and of
# 2**-6 ≈ 1.6e-2 in bfloat16 (7 fraction bits); a correct half-precision result is within one such step.
HALF_TOLERANCES = {torch.float16: 4e-3, torch.bfloat16: 3e-2}
_HALF = (torch.float16, torch.bfloat16)


@dataclass
class DtypeCase(Case):
    """A case that also says the input's dtype (a half-precision one brings its own tolerance too)."""

    dtype: torch.dtype = torch.float32


class DtypeNormCheck(FunctionCheck):
    """A FunctionCheck that knows about dtypes: a float16/bfloat16 input must give an output of its own
    dtype (computed in float32, cast back), as torch's own norms do. Exercise 06 checks Gemma's RMSNorm with it."""

    def compare(self, case, output) -> CaseResult:
        want = getattr(case, "dtype", None)
        if isinstance(output, torch.Tensor) and want in _HALF and output.dtype != want:
            tolerance = self.tolerance_for(case)
            err, _ = compare_tensor(output, case.expected, tolerance)
            return CaseResult(
                case.name,
                False,
                err,
                tolerance,
                Message(
                    N_("returned {dtype} for a {input_dtype} input"), dtype=_name(output.dtype), input_dtype=_name(want)
                ),
                mistake=_CAST_BACK,
            )
        return super().compare(case, output)


_NAN_HINT = N_(
    "NaN means a square root of a negative number or 0 / 0. Take the mean of the *squares* "
    "(never negative) and add eps inside the root: x / sqrt(mean(x**2) + eps), so a row of zeros gives 0."
)
_IN_PLACE_HINT = N_("work on a copy; do not use in-place ops like x.mul_() on the input.")


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


_CAST_BACK = N_(
    "compute in float32 (good), then cast the result back to the input's own dtype with .to(x.dtype) (not .half(): "
    "a bfloat16 input comes back as bfloat16), as torch's norms do, so the next layer gets the dtype it expects."
)


# ----------------------------------------------------------------------------------------------------
# what both tasks forbid
# ----------------------------------------------------------------------------------------------------
FORBIDDEN = Forbidden(
    calls=TORCH_NORMS + COURSE_NORMS,
    hint=N_(
        "use basic tensor operations, as the exercise asks (mean, sqrt, rsqrt, arithmetic, .float(), .to(...)): "
        "divide by the square root of the mean of the squares."
    ),
    why="the notebook: 'not torch.nn.functional.rms_norm or layer_norm'; torch's other norms and the course's own "
    "norms compute RMSNorm or LayerNorm too (LayerNorm of the row [x, -x] is RMSNorm of x).",
    # this exercise does not forbid torch's variance: a LayerNorm built on rms_norm may centre with it
    allowed=BASIC + Allowed(frozenset(("aten::var", "aten::var_mean", "aten::std", "aten::std_mean"))),
)


# ----------------------------------------------------------------------------------------------------
# rms_norm(x, weight=None, eps=1e-6)
# ----------------------------------------------------------------------------------------------------
def _rms_ref(x, weight=None, eps=1e-6):
    """The exact answer: the reference RMSNorm in float64 (from the input's own, possibly rounded, values)."""
    return norms.rms_norm(x.double(), None if weight is None else weight.double(), eps)


def _rms_norm_cases(g: torch.Generator) -> list:
    def randn(*shape):
        return torch.randn(*shape, generator=g)

    specs = [
        (N_("the seed's vector [4, 6, 2, 8]"), (torch.tensor([4.0, 6.0, 2.0, 8.0]), None, 1e-6), torch.float32),
        (N_("a batch of rows (3×5) with a positive offset"), (randn(3, 5) * 2 + 3, None, 1e-6), torch.float32),
        (N_("a random 3-d tensor (2×3×8) with a weight"), (randn(2, 3, 8), randn(8), 1e-6), torch.float32),
        (
            N_("a row of zeros next to a row of ones"),
            (torch.stack([torch.zeros(4), torch.ones(4)]), None, 1e-6),
            torch.float32,
        ),
        (N_("tiny values (scale 1e-3), where eps = 1e-6 matters"), (randn(2, 8) * 1e-3, None, 1e-6), torch.float32),
        (N_("small values (scale 3e-3) with eps = 1e-5"), (randn(2, 8) * 3e-3, None, 1e-5), torch.float32),
        (N_("values of scale 0.03 with eps = 0.01 (eps dominates)"), (randn(2, 8) * 0.03, None, 1e-2), torch.float32),
        (
            N_("float16 activations of size ~1000 (their squares overflow float16)"),
            ((randn(2, 16) * 1000).half(), None, 1e-6),
            torch.float16,
        ),
        (N_("bfloat16 activations (2×16)"), ((randn(2, 16) * 3).bfloat16(), None, 1e-6), torch.bfloat16),
    ]
    cases = []
    for name, args, dtype in specs:
        tolerance = HALF_TOLERANCES.get(dtype)
        cases.append(DtypeCase(name, args, _rms_ref(*args), dtype=dtype, tolerance=tolerance))
    return cases


def _rms_mean_not_square(x, weight=None, eps=1e-6):
    x = x.double()
    return _gain(x / torch.sqrt(x.mean(-1, keepdim=True) + eps), weight)


def _rms_square_of_mean(x, weight=None, eps=1e-6):
    x = x.double()
    return _gain(x / torch.sqrt(x.mean(-1, keepdim=True) ** 2 + eps), weight)


def _rms_centred(x, weight=None, eps=1e-6):
    x = x.double()
    c = x - x.mean(-1, keepdim=True)
    return _gain(c / torch.sqrt((c * c).mean(-1, keepdim=True) + eps), weight)


def _rms_eps_outside(x, weight=None, eps=1e-6):
    x = x.double()
    return _gain(x / (torch.sqrt((x * x).mean(-1, keepdim=True)) + eps), weight)


def _rms_wrong_axis(x, weight=None, eps=1e-6):
    x = x.double()
    return _gain(x * torch.rsqrt((x * x).mean(0, keepdim=True) + eps), weight)


def _rms_no_weight(x, weight=None, eps=1e-6):
    return _rms_ref(x, None, eps)


def _rms_fixed_eps(x, weight=None, eps=1e-6):
    return _rms_ref(x, weight, 1e-6)


def _rms_no_upcast(x, weight=None, eps=1e-6):
    """Everything in the input's dtype: in float16, x*x overflows to inf for |x| > 256 and the output is 0."""
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight.to(y.dtype)


def _gain(y, weight):
    return y if weight is None else y * weight.double()


RMS_NORM_CHECK = DtypeNormCheck(
    name="rms_norm",
    make_cases=_rms_norm_cases,
    tolerance=1e-4,
    hint=N_(
        "over the last dim (dim=-1, keepdim=True): mean of the squares, eps inside the square root, divide, "
        "multiply by weight if given; for float16/bfloat16 input compute in float32 and cast back."
    ),
    mistakes={
        N_(
            "your output matches dividing by sqrt(mean(x)), the mean of x itself. RMSNorm uses the mean of the "
            "*squares*: (x * x).mean(dim=-1, keepdim=True)."
        ): _rms_mean_not_square,
        N_(
            "your output matches dividing by the *mean* of x, squared (mean(x)**2). RMSNorm squares first and "
            "then averages: (x * x).mean(dim=-1, keepdim=True), the mean of the squares."
        ): _rms_square_of_mean,
        N_(
            "your output matches LayerNorm (you subtracted the mean). RMSNorm does not centre: divide x itself by "
            "sqrt(mean(x**2) + eps)."
        ): _rms_centred,
        N_(
            "your output matches adding eps *outside* the square root, sqrt(mean(x**2)) + eps. RMSNorm divides by "
            "sqrt(mean(x**2) + eps); the two differ when the mean square is close to eps (tiny values)."
        ): _rms_eps_outside,
        N_(
            "your output matches reducing over the wrong axis (dim 0, across rows). Each row (token) is normalized "
            "on its own: reduce over the last dim, dim=-1, with keepdim=True."
        ): _rms_wrong_axis,
        N_("your output matches RMSNorm without the weight. Multiply by weight when it is given."): _rms_no_weight,
        N_(
            "your output matches computing in float16 itself: x * x overflows float16 (max 65504) for |x| > 256, "
            "the mean square becomes inf and every output 0. Compute in float32, h = x.float(), and return "
            "the result .to(x.dtype)."
        ): _rms_no_upcast,
        N_(
            "your output matches eps = 1e-6 whatever eps is given: use the eps argument, sqrt(mean(x**2) + eps)."
        ): _rms_fixed_eps,
    },
    reference=_rms_ref,
    nan_hint=_NAN_HINT,
    in_place_hint=_IN_PLACE_HINT,
    forbidden=FORBIDDEN,
)


def check_rms_norm(fn, seed: int = 0) -> CheckReport:
    """Check a learner's `rms_norm(x, weight=None, eps=1e-6)` against the reference."""
    return RMS_NORM_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# layer_norm_via_rms_norm(x, weight=None, eps=1e-5): LN(x) = RMSNorm(x - mean(x)), same gain, same eps
# ----------------------------------------------------------------------------------------------------
def _ln_ref(x, weight=None, eps=1e-5):
    return norms.layer_norm(x.double(), None if weight is None else weight.double(), None, eps)


def _ln_via_rms_cases(g: torch.Generator) -> list:
    def randn(*shape):
        return torch.randn(*shape, generator=g)

    specs = [
        (N_("the seed's vector [4, 6, 2, 8]"), (torch.tensor([4.0, 6.0, 2.0, 8.0]), None, 1e-5)),
        (N_("a batch of rows (4×6) with an offset of 100"), (randn(4, 6) * 10 + 100, None, 1e-5)),
        (N_("a random 3-d tensor (2×3×8) with a weight"), (randn(2, 3, 8) * 3 - 2, randn(8), 1e-5)),
        (N_("a constant row [7, 7, 7, 7] (variance 0)"), (torch.full((2, 4), 7.0), None, 1e-5)),
        (N_("a nearly constant row with eps = 1e-3"), (1.0 + 1e-2 * randn(2, 8), None, 1e-3)),
    ]
    return [DtypeCase(name, args, _ln_ref(*args), dtype=torch.float32) for name, args in specs]


def _ln_not_centred(x, weight=None, eps=1e-5):
    return _rms_ref(x, weight, eps)


def _ln_centred_wrong_axis(x, weight=None, eps=1e-5):
    return _rms_ref(x.double() - x.double().mean(0, keepdim=True), weight, eps)


def _ln_default_eps(x, weight=None, eps=1e-5):
    return _ln_ref(x, weight, 1e-6)


LN_VIA_RMS_CHECK = DtypeNormCheck(
    name="layer_norm_via_rms_norm",
    make_cases=_ln_via_rms_cases,
    tolerance=1e-4,
    hint=N_(
        "subtract each row's mean, x - x.mean(dim=-1, keepdim=True), then call your rms_norm on that with the "
        "same weight and eps: the mean square of centred values is exactly the variance."
    ),
    mistakes={
        N_(
            "your output matches RMSNorm of x itself: subtract each row's mean first, "
            "x - x.mean(dim=-1, keepdim=True), then apply rms_norm."
        ): _ln_not_centred,
        N_(
            "your output matches centring over the wrong axis (dim 0, the mean of each column). LayerNorm "
            "subtracts each row's own mean: x.mean(dim=-1, keepdim=True)."
        ): _ln_centred_wrong_axis,
        N_(
            "your output matches eps = 1e-6, rms_norm's default, instead of the eps given: pass it on, "
            "rms_norm(centred, weight, eps)."
        ): _ln_default_eps,
    },
    reference=_ln_ref,
    nan_hint=_NAN_HINT,
    in_place_hint=_IN_PLACE_HINT,
    forbidden=FORBIDDEN,
)


def check_layer_norm_via_rms_norm(fn, seed: int = 0) -> CheckReport:
    """Check a learner's `layer_norm_via_rms_norm(x, weight=None, eps=1e-5)` against LayerNorm (no bias)."""
    return LN_VIA_RMS_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# the question, the registry
# ----------------------------------------------------------------------------------------------------
SHIFT_QUESTION = MultipleChoice(
    id="ex02.shift",
    prompt=N_(
        "The same constant c is added to every feature of a token, x -> x + c, and c grows very large "
        "(think c = 1000 for x = [4, 6, 2, 8]). What do LayerNorm's and RMSNorm's outputs (no gain, ε ignored) "
        "approach?"
    ),
    choices={
        "a": N_("LayerNorm: LN(x), unchanged; RMSNorm: all zeros"),
        "b": N_("LayerNorm: all ones; RMSNorm: RMSNorm(x), unchanged"),
        "c": N_("LayerNorm: LN(x), unchanged; RMSNorm: all ones"),
        "d": N_("both approach all ones: the shift swamps the token's own values"),
    },
    answer="c",
    explanation=N_(
        "LayerNorm subtracts the mean, so a shift of any size cancels: LN(x + c) = LN(x). RMSNorm does "
        "not centre: for a large c every feature and the RMS are all close to c, so every output tends to c / c = 1 "
        "and the token's own pattern is squeezed out. For [4, 6, 2, 8]: [0.730, 1.095, 0.365, 1.461] at c = 0, "
        "already [0.923, 1.055, 0.791, 1.187] at c = 10."
    ),
    wrong_hints={
        "a": N_(
            "dividing by a huge RMS does not give zeros, because the numerator x + c grows just as fast: each "
            "output tends to c / c = 1."
        ),
        "b": N_(
            "it is the other way round: LayerNorm subtracts the mean, so a shift cancels for it; RMSNorm does not "
            "centre, so the shift takes over."
        ),
        "d": N_(
            "LayerNorm subtracts the mean before it divides, so a shift of any size cancels: LN(x + c) = LN(x) "
            "exactly, for c = 10 or c = 1000."
        ),
    },
)

EXERCISE = Exercise(
    "ex02_rmsnorm",
    graded=[
        Graded("rms_norm", "rms_norm", 3),
        Graded("layer_norm_via_rms_norm", "layer_norm_via_rms_norm", 2),
        Graded("ex02.shift", "answer_shift", 1),
    ],
    checks=[RMS_NORM_CHECK, LN_VIA_RMS_CHECK],
    questions=[SHIFT_QUESTION],
)
