"""Immediate, friendly checks for the exercise notebooks.

A check runs the learner's function on several cases, compares each result with the reference
implementation in float64, and prints one line per case plus a verdict:

    ✅ layer_norm: all 7 cases match the reference (max abs error 2.4e-07, tolerance 1e-04)
    ❌ layer_norm: 2 of 7 cases differ from the reference
       ✗ a batch of rows (3×5): max abs error 0.118 > tolerance 1e-04
       Hint: your output matches LayerNorm with the *unbiased* variance (dividing by n - 1) ...

When the output matches a known mistake (unbiased variance, the wrong axis, eps outside the square
root, ...) the hint names that mistake. A function that still raises NotImplementedError gets one
"not implemented yet" line; any other exception is reported by its type and message, not a traceback.

Checks are data (`FunctionCheck`): the cases are generated from a seed, calling the learner's function
is separate from comparing its output (`compare`), so the instructors' grader can call the function in
the learner's kernel and compare in its own process with the same code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from . import norms

__all__ = [
    "Case",
    "CaseResult",
    "CheckReport",
    "FunctionCheck",
    "MultipleChoice",
    "CHECKS",
    "QUESTIONS",
    "GRADED",
    "Graded",
    "exercise_registry",
    "find_question",
    "check_layer_norm",
    "check_statistics",
    "check_choice",
]


# ----------------------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------------------
@dataclass
class Case:
    """One call of the learner's function: positional args, and the reference's output for them."""

    name: str
    args: tuple
    expected: Any = None


@dataclass
class CaseResult:
    name: str
    passed: bool
    error: float  # max abs error (inf when the output could not be compared)
    tolerance: float
    note: str = ""  # why it failed, in words
    mistake: str | None = None  # the known mistake this output matches, if any


@dataclass
class CheckReport:
    """What a check found. `check_*` functions print it; the grader reads its fields."""

    name: str
    status: str  # "passed" | "failed" | "not-implemented" | "error"
    cases: list = field(default_factory=list)
    hint: str = ""
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def max_error(self) -> float:
        return max((c.error for c in self.cases), default=math.inf)

    @property
    def fraction_passed(self) -> float:
        if not self.cases:
            return 0.0
        return sum(c.passed for c in self.cases) / len(self.cases)

    def text(self) -> str:
        if self.status == "not-implemented":
            return (
                f"⏳ {self.name}: not implemented yet. "
                "Replace `raise NotImplementedError()` with your code, then run this cell again."
            )
        if self.status == "error":
            return f"❌ {self.name}: {self.message}\n   Hint: {self.hint}"
        tol = max((c.tolerance for c in self.cases), default=0.0)
        if self.status == "passed":
            if len(self.cases) == 1 and self.message:
                return f"✅ {self.name}: {self.message}"
            which = "the one case matches" if len(self.cases) == 1 else f"all {len(self.cases)} cases match"
            return (
                f"✅ {self.name}: {which} the reference "
                f"(max abs error {_upper_bound(self.max_error)}, tolerance {tol:.0e})"
            )
        failed = [c for c in self.cases if not c.passed]
        lines = [f"❌ {self.name}: {len(failed)} of {len(self.cases)} cases differ from the reference"]
        for c in failed:
            lines.append(f"   ✗ {c.name}: {c.note}")
        lines.append(f"   Hint: {self.hint}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"CheckReport({self.name!r}, status={self.status!r}, cases={len(self.cases)})"

    def _ipython_display_(self):
        """The check already printed this report; showing it again as the cell's value would repeat it."""


def _upper_bound(v: float) -> str:
    """A float32 rounding error varies in its last digits between CPUs; its order of magnitude does not."""
    if v == 0:
        return "0"
    return f"below 1e{math.ceil(math.log10(v)):+03d}"


def _fmt(v: float) -> str:
    return "inf" if not math.isfinite(v) else f"{v:.1e}"


# ----------------------------------------------------------------------------------------------------
# comparing tensors
# ----------------------------------------------------------------------------------------------------
def _as_tensor(out) -> torch.Tensor | None:
    if isinstance(out, torch.Tensor):
        return out.detach().to("cpu")
    try:
        t = torch.as_tensor(out)
    except Exception:
        return None
    return t if t.is_floating_point() or t.dtype in (torch.int32, torch.int64) else None


def compare_tensor(got, expected: torch.Tensor, tolerance: float) -> tuple[float, str]:
    """(max abs error, problem in words or '') of an output against the float64 expected tensor."""
    t = _as_tensor(got)
    if t is None:
        return math.inf, f"returned {type(got).__name__}, expected a tensor"
    if tuple(t.shape) != tuple(expected.shape):
        return math.inf, f"returned shape {tuple(t.shape)}, expected {tuple(expected.shape)}"
    t = t.to(torch.float64)
    if not torch.isfinite(expected).all():
        raise ValueError("compare_tensor: the expected tensor must be finite")
    if not torch.isfinite(t).all():
        bad = "NaN" if torch.isnan(t).any() else "inf"
        return math.inf, f"output contains {bad}"
    err = float((t - expected.to(torch.float64)).abs().max()) if t.numel() else 0.0
    if err > tolerance:
        return err, f"max abs error {_fmt(err)} > tolerance {_fmt(tolerance)}"
    return err, ""


# ----------------------------------------------------------------------------------------------------
# function checks
# ----------------------------------------------------------------------------------------------------
@dataclass
class FunctionCheck:
    """A check of one learner function against a reference.

    make_cases(generator) -> list[Case] builds the inputs (with `expected` filled from the reference).
    mistakes maps a hint to a wrong implementation; an output that matches one names it.
    """

    name: str
    make_cases: Callable[[torch.Generator], list]
    tolerance: float
    hint: str
    mistakes: dict = field(default_factory=dict)
    nan_hint: str = (
        "your output contains NaN or inf: look for a division by zero (a statistic of 0 on a constant "
        "input); eps inside the square root keeps the denominator positive."
    )

    def cases(self, seed: int = 0) -> list:
        g = torch.Generator().manual_seed(seed)
        return self.make_cases(g)

    def compare(self, case: Case, output) -> CaseResult:
        err, note = compare_tensor(output, case.expected, self.tolerance)
        if not note:
            return CaseResult(case.name, True, err, self.tolerance)
        for hint, wrong in self.mistakes.items():
            try:
                wrong_out = wrong(*case.args)
            except Exception:
                continue
            if not torch.isfinite(wrong_out).all():  # NaN - NaN is NaN, which no comparison rejects
                continue
            werr, wnote = compare_tensor(output, wrong_out.to(torch.float64), self.tolerance)
            close_to_reference = wrong_out.shape == case.expected.shape and bool(
                torch.allclose(wrong_out.double(), case.expected, atol=self.tolerance, rtol=0)
            )
            if not wnote and not close_to_reference:
                return CaseResult(case.name, False, err, self.tolerance, note, mistake=hint)
        return CaseResult(case.name, False, err, self.tolerance, note)

    def evaluate(self, fn, seed: int = 0) -> CheckReport:
        """Call fn on every case (in this process) and compare; never raises for the learner's bugs."""
        if not callable(fn):
            return CheckReport(
                self.name, "error", message=f"expected a function, got {type(fn).__name__}", hint=self.hint
            )
        results = []
        for case in self.cases(seed):
            args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in case.args)
            try:
                out = fn(*args)
            except NotImplementedError:
                return CheckReport(self.name, "not-implemented")
            except Exception as exc:  # the learner's bug, reported in one line
                return CheckReport(
                    self.name,
                    "error",
                    message=f"raised {type(exc).__name__}: {exc} (on case: {case.name})",
                    hint=self.hint,
                )
            result = self.compare(case, out)
            changed = [
                i
                for i, (a, b) in enumerate(zip(args, case.args))
                if isinstance(a, torch.Tensor) and not torch.equal(a, b)
            ]
            if result.passed and changed:
                result = CaseResult(
                    case.name, False, result.error, self.tolerance, "your function changed its input tensor in place"
                )
            results.append(result)
        return self.report(results)

    def report(self, results: list) -> CheckReport:
        if all(r.passed for r in results):
            return CheckReport(self.name, "passed", results)
        failed = [r for r in results if not r.passed]
        named = next((r.mistake for r in failed if r.mistake), None)
        if named:
            hint = named
        elif any("NaN" in r.note or "inf" in r.note for r in failed):
            hint = self.nan_hint
        elif any("in place" in r.note for r in failed):
            hint = "work on a copy (x - mean creates a new tensor); do not use in-place ops like x.sub_() on the input."
        else:
            hint = self.hint
        return CheckReport(self.name, "failed", results, hint=hint)

    def __call__(self, fn, seed: int = 0) -> CheckReport:
        report = self.evaluate(fn, seed)
        print(report.text())
        return report


# ----------------------------------------------------------------------------------------------------
# LayerNorm
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
        ("the seed's vector [4, 6, 2, 8]", (torch.tensor([4.0, 6.0, 2.0, 8.0]), None, None, 1e-5)),
        ("a batch of rows (3×5)", (randn(3, 5) * 3 + 1, None, None, 1e-5)),
        ("a constant row [7, 7, 7, 7] (variance 0)", (torch.full((2, 4), 7.0), None, None, 1e-5)),
        ("large values (scale 1000, offset 500)", (randn(4, 16) * 1000 + 500, None, None, 1e-5)),
        ("a nearly constant row with eps = 1e-3", (1.0 + 1e-3 * randn(2, 8), None, None, 1e-3)),
        ("a random 3-d tensor (2×3×6) with gamma and beta", (randn(2, 3, d), randn(d), randn(d), 1e-5)),
        ("gamma = std, beta = mean undoes the normalization", _undo_case(randn(d) * 2 + 3)),
    ]
    return [Case(name, args, _ln_ref(*args)) for name, args in specs]


def _undo_case(row: torch.Tensor):
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
    hint="compute mean and variance over the last dim (dim=-1, keepdim=True), divide by n (unbiased=False), "
    "put eps inside the square root, then multiply by gamma and add beta.",
    nan_hint="NaN appears where the variance is 0 (a constant row): 0 / sqrt(0) is undefined. Add eps to the "
    "variance inside the square root: sqrt(var + eps).",
    mistakes={
        "your output matches LayerNorm with the *unbiased* variance (dividing by n - 1). "
        "LayerNorm uses the biased variance: x.var(dim=-1, unbiased=False), or ((x - mean)**2).mean(-1).": _ln_unbiased,
        "your output matches normalizing over the wrong axis (dim 0, across rows). LayerNorm normalizes each "
        "row on its own: reduce over the last dim (dim=-1).": _ln_wrong_axis,
        "your output matches adding eps *outside* the square root, std + eps. LayerNorm divides by "
        "sqrt(var + eps); the difference shows when the variance is close to eps.": _ln_eps_outside,
        "your output matches LayerNorm without gamma and beta. After normalizing, multiply by gamma "
        "(weight) and add beta (bias) when they are given.": _ln_no_affine,
    },
)


def check_layer_norm(fn, seed: int = 0) -> CheckReport:
    """Check a learner's `layer_norm(x, gamma=None, beta=None, eps=1e-5)` against the reference."""
    return LAYER_NORM_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# the statistics LayerNorm computes: mean, biased variance, std (the seed's [4, 6, 2, 8] -> 5, 5, sqrt(5))
# ----------------------------------------------------------------------------------------------------
def _statistics_cases(g: torch.Generator) -> list:
    vectors = [
        ("mean, variance and std of [4, 6, 2, 8]", torch.tensor([4.0, 6.0, 2.0, 8.0])),
        ("a random vector of 7 values", torch.randn(7, generator=g) * 3 + 1),
        ("a constant vector [7, 7, 7]", torch.full((3,), 7.0)),
        ("a random vector of 50 values", torch.randn(50, generator=g) * 10 - 4),
    ]
    cases = []
    for name, v in vectors:
        x = v.double()
        mean = x.mean()
        variance = ((x - mean) ** 2).mean()
        cases.append(Case(name, (v,), torch.stack([mean, variance, variance.sqrt()])))
    return cases


class _StatisticsCheck(FunctionCheck):
    """Compares a (mean, variance, std) triple, and recognizes the n - 1 variance."""

    def compare(self, case: Case, output) -> CaseResult:
        try:
            values = torch.tensor([float(v) for v in output], dtype=torch.float64)
        except Exception:
            return CaseResult(
                case.name, False, math.inf, self.tolerance, "return a tuple of three numbers: (mean, variance, std)"
            )
        err, note = compare_tensor(values, case.expected, self.tolerance)
        if not note:
            return CaseResult(case.name, True, err, self.tolerance)
        n = case.args[0].numel()
        unbiased = case.expected[1].item() * n / (n - 1)
        if len(values) == 3 and n > 1 and abs(values[1].item() - unbiased) < self.tolerance * max(1.0, unbiased):
            return CaseResult(
                case.name,
                False,
                err,
                self.tolerance,
                note,
                mistake=(
                    "your variance divides by n - 1 (for [4, 6, 2, 8]: 20/3 ≈ 6.667). LayerNorm divides the sum of "
                    "squared deviations by n (20 / 4 = 5)."
                ),
            )
        return CaseResult(case.name, False, err, self.tolerance, note)


STATISTICS_CHECK = _StatisticsCheck(
    name="statistics",
    make_cases=_statistics_cases,
    tolerance=1e-4,
    hint="mean = sum / n; variance = mean of the squared deviations (divide by n); std = sqrt(variance).",
)


def check_statistics(fn) -> CheckReport:
    """Check a function statistics(x) returning (mean, variance, std) of a 1-d tensor, as LayerNorm computes them."""
    return STATISTICS_CHECK(fn)


# ----------------------------------------------------------------------------------------------------
# multiple choice
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MultipleChoice:
    """A multiple-choice question: the key, an explanation, and a hint per wrong answer."""

    id: str
    prompt: str
    choices: dict  # letter -> text
    answer: str
    explanation: str
    wrong_hints: dict = field(default_factory=dict)

    def grade(self, given) -> tuple[bool, str]:
        letter = str(given).strip().lower().strip("().") if given is not None else ""
        if letter not in self.choices:
            return False, f"answer with one of {', '.join(repr(c) for c in self.choices)}, got {given!r}"
        if letter == self.answer:
            return True, self.explanation
        return False, self.wrong_hints.get(letter, "reread the question and the chapter's section on it.")


QUESTIONS = {
    "ex01.variance": MultipleChoice(
        id="ex01.variance",
        prompt="You compute LayerNorm with torch.var(x, dim=-1) (torch's default, unbiased) instead of the "
        "biased variance. What happens?",
        choices={
            "a": "Nothing: the two variances are equal for any vector.",
            "b": "The output is scaled by sqrt((n-1)/n): slightly too small, most visibly for short vectors.",
            "c": "The output is no longer centred at mean 0.",
            "d": "The output becomes NaN for constant vectors.",
        },
        answer="b",
        explanation="the unbiased variance is n/(n-1) times the biased one, so dividing by its square root "
        "shrinks every output by sqrt((n-1)/n): 0.866 for n = 4, 0.9993 for n = 768. The mean is "
        "still subtracted, so the output stays centred.",
        wrong_hints={
            "a": "they differ by the factor n/(n-1): compute both for [4, 6, 2, 8] (5 vs 6.667).",
            "c": "the mean is subtracted the same way in both cases; only the divisor changes.",
            "d": "eps keeps the denominator positive for constant vectors in both versions.",
        },
    )
}


def check_choice(question_id: str, fn) -> CheckReport:
    """Check a multiple-choice answer; fn returns the chosen letter (or is the letter itself)."""
    q = find_question(question_id)
    try:
        given = fn() if callable(fn) else fn
    except NotImplementedError:
        report = CheckReport(q.id, "not-implemented")
        print(report.text())
        return report
    ok, why = q.grade(given)
    case = CaseResult(q.id, ok, 0.0 if ok else math.inf, 0.0, "" if ok else why)
    report = CheckReport(q.id, "passed" if ok else "failed", [case], hint=why, message=f"correct: {why}" if ok else "")
    print(f"✅ {q.id}: correct. {_capital(why)}" if ok else f"❌ {q.id}: not quite. {_capital(why)}")
    return report


def _capital(s: str) -> str:
    return s[:1].upper() + s[1:]


# ----------------------------------------------------------------------------------------------------
# the registry: what each exercise grades, and with how many points
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Graded:
    """One graded item of an exercise: the learner's function `function` is judged by check `check`
    (a FunctionCheck name in CHECKS, or a MultipleChoice id in QUESTIONS), worth `points`."""

    check: str
    function: str
    points: float


CHECKS = {check.name: check for check in (LAYER_NORM_CHECK, STATISTICS_CHECK)}

# Exercise NN's checks live in course_utils/checks_exNN.py (ex01's in this module). Such a module defines
# CHECKS (name -> FunctionCheck), QUESTIONS (id -> MultipleChoice, ids prefixed "exNN.") and
# GRADED (list of Graded); `exercise_registry("exNN_topic")` loads it.
GRADED = {
    "ex01_layernorm": [
        Graded("statistics", "statistics", 1),
        Graded("layer_norm", "layer_norm", 3),
        Graded("ex01.variance", "answer_variance_pitfall", 1),
    ]
}


def _exercise_module(prefix: str):
    """The module holding exercise `prefix`'s checks ("ex01" -> this module, "ex02" -> checks_ex02)."""
    import importlib
    import sys

    if prefix == "ex01":
        return sys.modules[__name__]
    return importlib.import_module(f"{__package__}.checks_{prefix}")


def exercise_registry(exercise_id: str) -> dict:
    """{"graded": [Graded...], "checks": {...}, "questions": {...}} for an exercise id like 'ex02_rmsnorm'."""
    prefix = exercise_id.split("_", 1)[0]
    module = _exercise_module(prefix)
    graded = module.GRADED[exercise_id] if isinstance(module.GRADED, dict) else module.GRADED
    questions = {k: v for k, v in module.QUESTIONS.items() if k.startswith(prefix + ".")}
    return {"graded": list(graded), "checks": dict(module.CHECKS), "questions": questions}


def find_question(question_id: str) -> MultipleChoice:
    prefix = question_id.split(".", 1)[0]
    return _exercise_module(prefix).QUESTIONS[question_id]
