"""Claims about training runs, checked in front of the learner: ✓ or ✗ for each, and never a crash.

A chapter that trains states what its runs show ("QK-Norm ends with a lower loss than the baseline") and checks
it on the run the learner just made:

    check_claims("ch05.top", {
        "QK-Norm ends with a lower loss than the baseline": less(qk.final_loss, baseline.final_loss),
        "the baseline's largest logit passed 10,000": more(baseline.max_attn_logit, 1e4),
    })

prints one line per claim, ✓ or ✗. A claim is a comparison of a measured value with a bound (`more`, `less`,
`at_least`, `at_most`; `&` joins two into one that holds when both do), so its *margin* (how far the value is
from its bound) can be shown and recorded, not only its verdict. A plain bool is a claim too, with no margin.

Why a ✗ can happen on your machine and not on ours: training amplifies the last bits in which two machines'
float kernels differ (CPUs with and without AVX-512, ARM, GPUs add the same numbers in different orders), so a
run near a threshold can land on the other side. Every claim of the course was measured on a matrix of CPU
kernels, thread counts and seeds, and its bound chosen with a margin (docs/numerics.md); a ✗ is still possible
on hardware the matrix does not cover. So `check_claims` never raises in a learner's session: on a ✗ it says
what your run measured, what the stored run measured, and why they can differ. The course's own tests make it
strict (COURSE_STRICT_CLAIMS=1, set by the root conftest.py and by `make execute`): there a ✗ is an error.

The stored run's values come from `stored_claims.json` next to this file, written by `make execute` (each
`check_claims` call appends its values to the file that COURSE_CLAIMS_LOG names; course_utils.nbtools collects
them). The CPU-matrix tests read the same log to report each claim's tightest margin.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TextIO

from .i18n import N_, _, ngettext

__all__ = ["Comparison", "more", "less", "at_least", "at_most", "check_claims", "STRICT_ENV", "LOG_ENV"]

STRICT_ENV = "COURSE_STRICT_CLAIMS"  # "1": a claim that does not hold raises (the course's tests, `make execute`)
LOG_ENV = "COURSE_CLAIMS_LOG"  # a file: every checked claim is appended to it as one JSON line
STORED = Path(__file__).resolve().parent / "stored_claims.json"
Operator = Literal[">", ">=", "<", "<="]
OPERATORS: dict[Operator, str] = {">": N_("more than"), ">=": N_("at least"), "<": N_("less than"), "<=": N_("at most")}


@dataclass(frozen=True)
class Comparison:
    """`value op bound`, e.g. more(ratio, 100): true or false, and how far from flipping (`margin`)."""

    value: float
    op: Operator
    bound: float

    def __post_init__(self) -> None:
        if self.op not in OPERATORS:
            raise ValueError(f"op must be one of {list(OPERATORS)}, got {self.op!r}")

    def __bool__(self) -> bool:
        v, b = float(self.value), float(self.bound)
        if math.isnan(v) or math.isnan(b):
            return False
        return {">": v > b, ">=": v >= b, "<": v < b, "<=": v <= b}[self.op]

    @property
    def margin(self) -> float:
        """How far the value is on the right side of its bound, relative to the bound: 0.2 means that the value
        could move by 20 % of the bound before the claim flips; negative when the claim does not hold. Against a
        bound of 0 (`less(a - b, 0)`) there is no scale to be relative to, and the margin is the plain gap."""
        v, b = float(self.value), float(self.bound)
        if math.isnan(v) or math.isnan(b):
            return -math.inf
        gap = v - b if self.op in (">", ">=") else b - v
        if math.isinf(gap):
            return gap
        return gap / abs(b) if b != 0 else gap

    def parts(self) -> list[Comparison]:
        return [self]

    def __and__(self, other: Comparison | AllOf) -> AllOf:
        return AllOf(tuple(self.parts()) + tuple(_parts(other)))

    def describe(self) -> str:
        """'18.5, needed more than 10' (in the current language)."""
        return _("{value}, needed {op} {bound}").format(
            value=_number(self.value), op=_(OPERATORS[self.op]), bound=_number(self.bound)
        )


@dataclass(frozen=True)
class AllOf:
    """Several comparisons that must all hold: `more(a, 4) & more(b, 4)`. Its margin is the smallest one."""

    comparisons: tuple[Comparison, ...]

    def __bool__(self) -> bool:
        return all(bool(c) for c in self.comparisons)

    @property
    def margin(self) -> float:
        return min(c.margin for c in self.comparisons)

    def parts(self) -> list[Comparison]:
        return list(self.comparisons)

    def __and__(self, other: Comparison | AllOf) -> AllOf:
        return AllOf(self.comparisons + tuple(_parts(other)))

    def describe(self) -> str:
        return _("; ").join(c.describe() for c in self.comparisons)


Claim = Comparison | AllOf | bool
"""What check_claims checks: a comparison, several that must all hold, or a plain bool (no margin)."""


def _parts(claim: object) -> list[Comparison]:
    if isinstance(claim, (Comparison, AllOf)):
        return claim.parts()
    raise TypeError(f"only comparisons can be joined with &, got {type(claim).__name__}")


def more(value, bound) -> Comparison:
    """value > bound."""
    return Comparison(float(value), ">", float(bound))


def at_least(value, bound) -> Comparison:
    """value >= bound."""
    return Comparison(float(value), ">=", float(bound))


def less(value, bound) -> Comparison:
    """value < bound."""
    return Comparison(float(value), "<", float(bound))


def at_most(value, bound) -> Comparison:
    """value <= bound."""
    return Comparison(float(value), "<=", float(bound))


def _number(v) -> str:
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.2e}"


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "") == "1"


@cache
def stored_values() -> dict[str, Any]:
    """{key: [[[value, op, bound], ...] for each claim] of the stored run}; {} when the file is missing."""
    try:
        return json.loads(STORED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _values(claim: object) -> list[list[Any]]:
    if isinstance(claim, (Comparison, AllOf)):
        return [[c.value, c.op, c.bound] for c in claim.parts()]
    return []


def _log(key: str, claims: dict[str, Claim], preset: str | None) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as log:
        for i, (text, claim) in enumerate(claims.items()):
            entry = {
                "key": key,
                "index": i,
                "text": text,
                "holds": bool(claim),
                "margin": claim.margin if isinstance(claim, (Comparison, AllOf)) else None,
                "values": _values(claim),
                "preset": preset,
            }
            log.write(json.dumps(entry, allow_nan=True) + "\n")


def check_claims(
    key: str,
    claims: dict[str, Claim],
    *,
    preset: str | None = None,
    measured_on: str = "quick",
    out: TextIO | None = None,
) -> None:
    """Print ✓ or ✗ for each claim ({text: Comparison, AllOf or bool}); explain a ✗; never raise for a learner.

    key names the claims in `stored_claims.json` (e.g. "ch05.top"), where the stored run's values are.
    preset: the preset the runs used. The claims were measured on `measured_on` (the quick CPU preset): under
    another preset (a GPU's), they are shown as expectations, with a note, and never raise, even in the tests.
    """
    out = sys.stdout if out is None else out
    if not isinstance(claims, dict) or not claims:
        raise TypeError("check_claims needs a dict {claim text: comparison or bool} with at least one claim")
    _log(key, claims, preset)
    other_preset = preset is not None and preset != measured_on
    failed = []
    for i, (text, claim) in enumerate(claims.items()):
        holds = bool(claim)
        print(f"{'✓' if holds else '✗'} {text}", file=out)
        if not holds:
            failed.append(text)
            print("    " + _explain_one(key, i, claim), file=out)
    if other_preset:
        print(
            _(
                "(These claims were measured on the {measured} preset, on a CPU; your run used the {preset} preset, "
                "where they are what to expect, not a guarantee.)"
            ).format(measured=measured_on, preset=preset),
            file=out,
        )
    if not failed or other_preset:  # under another preset the note above says all there is to say
        return
    if strict():
        raise AssertionError(f"{len(failed)} claim(s) of {key!r} do not hold: " + "; ".join(failed))
    n = len(failed)
    summary = ngettext(
        "{n} of {total} claims does not hold in your run.", "{n} of {total} claims do not hold in your run.", n
    ).format(n=n, total=len(claims))
    why = _(
        "Your machine's run differs from the stored one: training amplifies the last bits in which CPUs and "
        "GPUs differ (their float kernels add the same numbers in different orders), so a run close to a "
        "threshold can land on the other side. Chapter 00 explains why; the rest of this notebook runs as usual."
    )
    print(_("{summary} {why}").format(summary=summary, why=why), file=out)


def _explain_one(key: str, index: int, claim: Claim) -> str:
    if not isinstance(claim, (Comparison, AllOf)):
        return _("your run: false")
    mine = _("your run: {values}").format(values=claim.describe())
    stored = stored_values().get(key)
    if not stored or index >= len(stored) or len(stored[index]) != len(claim.parts()):
        return mine
    theirs = ", ".join(_number(value) for value, *_op_and_bound in stored[index])
    return mine + "; " + _("the stored run: {values}").format(values=theirs)
