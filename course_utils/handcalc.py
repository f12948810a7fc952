"""LayerNorm and RMSNorm computed by hand: exact fractions, square roots kept as surds (√5), every step.

    >>> s = layer_norm_steps([4, 6, 2, 8])
    >>> s.mean, s.variance, s.std
    (Fraction(5, 1), Fraction(5, 1), √5 ≈ 2.23607)
    >>> [round(v, 3) for v in s.normalized]
    [-0.447, 0.447, -1.342, 1.342]

In Jupyter the step objects render as a numbered derivation in LaTeX, the way you would write it on
paper. Numbers are exact while they can be: inputs become Fractions (0.1 is read as 1/10, not as the
nearest binary float), and a square root is simplified to a·√b with b square-free (√20 = 2√5).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .i18n import _

__all__ = ["Surd", "exact_sqrt", "layer_norm_steps", "rms_norm_steps", "LayerNormSteps", "RMSNormSteps"]

_MAX_FACTOR = 10**12  # above this we stop looking for square factors and fall back to a float


class Surd(float):
    """A square root kept exact: the float value, plus `coefficient * √radicand` (radicand square-free).

    It *is* a float (so arithmetic and comparisons work as usual) that also remembers its exact form
    for display: `Surd` of 5 prints as √5, of 20 as 2√5, of 9/4 as 3/2.
    """

    coefficient: Fraction
    radicand: int

    def __new__(cls, coefficient: Fraction, radicand: int):
        self = super().__new__(cls, float(coefficient) * math.sqrt(radicand))
        self.coefficient, self.radicand = Fraction(coefficient), int(radicand)
        return self

    @property
    def is_rational(self) -> bool:
        return self.radicand == 1

    def latex(self) -> str:
        c, r = self.coefficient, self.radicand
        if r == 1:
            return _frac_latex(c)
        root = rf"\sqrt{{{r}}}"
        if c == 1:
            return root
        if c.denominator == 1:
            return f"{c.numerator}{root}"
        num = "" if c.numerator == 1 else str(c.numerator)
        return rf"\frac{{{num}{root}}}{{{c.denominator}}}"

    def __repr__(self) -> str:
        c, r = self.coefficient, self.radicand
        if r == 1:
            return str(c)
        coef = "" if c == 1 else (f"{c}" if c.denominator == 1 else f"({c})")
        return f"{coef}√{r} ≈ {float(self):.6g}"

    __str__ = __repr__


def _square_free_split(n: int):
    """n = k**2 * m with m square-free; returns (k, m). Trial division, fine for course-sized numbers."""
    k, m, p = 1, n, 2
    while p * p <= m:
        while m % (p * p) == 0:
            m //= p * p
            k *= p
        p += 1 if p == 2 else 2
    return k, m


def exact_sqrt(q) -> Surd | float:
    """√q for a non-negative rational q, as a Surd; a plain float when q is too large to factor quickly."""
    q = Fraction(q)
    if q < 0:
        raise ValueError(f"exact_sqrt: negative number {q}")
    # √(p/d) = √(p·d) / d
    n = q.numerator * q.denominator
    if n == 0:
        return Surd(Fraction(0), 1)
    if n > _MAX_FACTOR:
        return math.sqrt(q)
    k, m = _square_free_split(n)
    return Surd(Fraction(k, q.denominator), m)


def _to_fraction(v: Any) -> Fraction:
    if isinstance(v, bool):
        raise TypeError("handcalc: booleans are not numbers to normalize")
    if isinstance(v, (int, Fraction)):
        return Fraction(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"handcalc: cannot normalize a non-finite value {v}")
        return Fraction(repr(v))  # 0.1 -> 1/10, the number the learner typed
    if hasattr(v, "item"):  # numpy / torch scalars
        return _to_fraction(v.item())
    raise TypeError(f"handcalc: expected numbers, got {type(v).__name__}")


def _values(values: Iterable[object]) -> list[Fraction]:
    xs = [_to_fraction(v) for v in values]
    if not xs:
        raise ValueError("handcalc: need at least one value")
    return xs


def _frac_latex(q) -> str:
    q = Fraction(q)
    if q.denominator == 1:
        return str(q.numerator)
    sign = "-" if q < 0 else ""
    return rf"{sign}\frac{{{abs(q.numerator)}}}{{{q.denominator}}}"


def _mean_latex(total, n, mean) -> str:
    """'\\frac{20}{4} = 5', but just '\\frac{55}{6}' when the fraction does not simplify."""
    raw = rf"\frac{{{_frac_latex(total)}}}{{{n}}}"
    simplified = _frac_latex(mean)
    return (
        raw
        if Fraction(total).denominator == 1 and Fraction(total, n) == mean and mean.denominator == n
        else f"{raw} = {simplified}"
    )


def _paren(q) -> str:
    s = _frac_latex(q)
    return f"({s})" if q < 0 or "frac" in s else s


def _divided_by(numerator: Fraction, root) -> str:
    """LaTeX for numerator / root, where root is a Surd or a float."""
    if isinstance(root, Surd):
        return rf"\frac{{{_frac_latex(numerator)}}}{{{root.latex()}}}"
    return rf"\frac{{{_frac_latex(numerator)}}}{{{float(root):.6g}}}"


def _normalized(parts: Sequence[Fraction], root: Surd | float) -> list[float]:
    if float(root) == 0.0:
        # all deviations are 0 and eps is 0: the textbook formula is 0/0; we report 0 as torch does with eps > 0
        return [0.0 for _ in parts]
    return [float(p) / float(root) for p in parts]


def _list_latex(items) -> str:
    return r"\left[" + ",\\ ".join(items) + r"\right]"


@dataclass(frozen=True)
class LayerNormSteps:
    """The hand computation of LayerNorm (no gain/shift): mean, deviations, variance, std, result."""

    values: tuple[Fraction, ...]
    eps: Fraction
    mean: Fraction
    deviations: tuple[Fraction, ...]
    variance: Fraction  # biased: divide by n
    std: Surd | float  # sqrt(variance + eps)
    normalized: list[float]

    def _repr_markdown_(self) -> str:
        n = len(self.values)
        xs = ", ".join(_frac_latex(v) for v in self.values)
        total = sum(self.values)
        dev_terms = ", ".join(f"{_frac_latex(v)} - {_paren(self.mean)}" for v in self.values)
        squares = " + ".join(f"{_paren(d)}^2" for d in self.deviations)
        eps_part = "" if self.eps == 0 else " + \\epsilon"
        std_value = f"{float(self.std):.4f}"
        steps = [
            _("1. Mean:"),
            _("2. Deviations:"),
            _("3. Variance (divide by n):"),
            _("4. Standard deviation:"),
            _("5. Normalized:"),
        ]
        lines = [
            _heading(_("**LayerNorm by hand** for $x = [{xs}]$ ({details})"), xs, n, self.eps),
            "",
            f"{steps[0]} $\\mu = {_mean_latex(total, n, self.mean)}$",
            f"{steps[1]} $x - \\mu = [{dev_terms}] = {_list_latex(_frac_latex(d) for d in self.deviations)}$",
            f"{steps[2]} $\\sigma^2 = \\frac{{{squares}}}{{{n}}} = {_frac_latex(self.variance)}$",
            f"{steps[3]} $\\sqrt{{\\sigma^2{eps_part}}} = {self._std_latex()} \\approx {std_value}$",
            f"{steps[4]} $\\hat{{x}} = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2{eps_part}}}}} = "
            f"{_list_latex(_divided_by(d, self.std) for d in self.deviations)} \\approx "
            f"{_list_latex(f'{v:.3f}' for v in self.normalized)}$",
        ]
        return "\n".join(lines)

    def _std_latex(self) -> str:
        return self.std.latex() if isinstance(self.std, Surd) else f"{float(self.std):.6g}"

    def __repr__(self) -> str:
        return (
            f"LayerNormSteps(mean={self.mean}, variance={self.variance}, std={self.std!r}, "
            f"normalized=[{', '.join(f'{v:.3f}' for v in self.normalized)}])"
        )


def _heading(template: str, xs: str, n: int, eps) -> str:
    """The bold first line of a hand computation, in the current language: "(n = 4, ε = 1e-05)"."""
    details = f"n = {n}" + ("" if eps == 0 else f", ε = {float(eps):g}")
    return template.format(xs=xs, details=details)


@dataclass(frozen=True)
class RMSNormSteps:
    """The hand computation of RMSNorm (no gain): squares, mean square, RMS, result."""

    values: tuple[Fraction, ...]
    eps: Fraction
    squares: tuple[Fraction, ...]
    mean_square: Fraction
    rms: Surd | float  # sqrt(mean_square + eps)
    normalized: list[float]

    def _repr_markdown_(self) -> str:
        n = len(self.values)
        xs = ", ".join(_frac_latex(v) for v in self.values)
        sq_terms = " + ".join(f"{_paren(v)}^2" for v in self.values)
        eps_part = "" if self.eps == 0 else " + \\epsilon"
        rms_latex = self.rms.latex() if isinstance(self.rms, Surd) else f"{float(self.rms):.6g}"
        steps = [_("1. Squares:"), _("2. Mean square (no mean is subtracted):"), _("3. RMS:"), _("4. Normalized:")]
        lines = [
            _heading(_("**RMSNorm by hand** for $x = [{xs}]$ ({details})"), xs, n, self.eps),
            "",
            f"{steps[0]} $x^2 = {_list_latex(_frac_latex(s) for s in self.squares)}$",
            f"{steps[1]} $\\frac{{{sq_terms}}}{{{n}}} = {_frac_latex(self.mean_square)}$",
            f"{steps[2]} $\\sqrt{{\\overline{{x^2}}{eps_part}}} = {rms_latex} \\approx {float(self.rms):.4f}$",
            f"{steps[3]} $\\frac{{x}}{{\\mathrm{{RMS}}}} = "
            f"{_list_latex(_divided_by(v, self.rms) for v in self.values)} \\approx "
            f"{_list_latex(f'{v:.3f}' for v in self.normalized)}$",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"RMSNormSteps(mean_square={self.mean_square}, rms={self.rms!r}, "
            f"normalized=[{', '.join(f'{v:.3f}' for v in self.normalized)}])"
        )


def layer_norm_steps(values: Iterable[object], eps: object = 0.0) -> LayerNormSteps:
    """Every step of LayerNorm on a short list of numbers, exact where possible."""
    xs = _values(values)
    e = _to_fraction(eps)
    if e < 0:
        raise ValueError(f"handcalc: eps must be >= 0, got {eps}")
    n = len(xs)
    mean = sum(xs, Fraction(0)) / n
    deviations = tuple(x - mean for x in xs)
    variance = sum((d * d for d in deviations), Fraction(0)) / n
    std = exact_sqrt(variance + e)
    return LayerNormSteps(tuple(xs), e, mean, deviations, variance, std, _normalized(deviations, std))


def rms_norm_steps(values: Iterable[object], eps: object = 0.0) -> RMSNormSteps:
    """Every step of RMSNorm on a short list of numbers, exact where possible."""
    xs = _values(values)
    e = _to_fraction(eps)
    if e < 0:
        raise ValueError(f"handcalc: eps must be >= 0, got {eps}")
    squares = tuple(x * x for x in xs)
    mean_square = sum(squares, Fraction(0)) / len(xs)
    rms = exact_sqrt(mean_square + e)
    return RMSNormSteps(tuple(xs), e, squares, mean_square, rms, _normalized(xs, rms))
