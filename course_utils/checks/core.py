"""The check framework: run a learner's function on cases, compare with the reference, name the mistake.

A check runs the learner's function on several cases, compares each result with the reference
implementation in float64, and prints one line per case plus a verdict:

    ✅ layer_norm: all 7 cases match the reference (max abs error 2.4e-07, tolerance 1e-04)
    ❌ layer_norm: 2 of 7 cases differ from the reference
       ✗ a batch of rows (3×5): max abs error 0.118 > tolerance 1e-04
       Hint: your output matches LayerNorm with the *unbiased* variance (dividing by n - 1) ...

The pieces, in the order a check uses them:

    Case             one call: the arguments, and the reference's output for them
    compare_tensor   one output against one expected tensor: the error, or the problem in words
    FunctionCheck    the cases, the tolerance, the hints and the named mistakes of one learner function:
                       run         calls the learner's function on every case (here, in the notebook): a
                                   CallOutcome, which the grader instead decodes from the learner's kernel
                       verdict     the verdict on a CallOutcome, wherever it came from (evaluate = run + verdict)
                       judge_case  the verdict on one output
                       diagnose    names the known mistake an output matches (the one such loop)
                       report      turns the cases' verdicts into the check's verdict and hint
    CaseResult       the verdict on one case, with reason codes (Problem) that logic reads instead of its words
    CheckReport      the verdict on the whole check
    forbidden        what a task asks the learner not to call (checks/forbidden.py): a function that calls
                     it gets ❌ naming the call, whatever its outputs (`with_forbidden`)
    show_verdict     how the verdict reaches the learner (checks/render.py): printed, or in Jupyter one output
                     whose text/plain is that same text and whose text/html wraps at spaces

Calling the learner's function is kept apart from judging its output, so that the instructors' grader
can call the function in the learner's kernel and judge the output in its own process with this very
code (course_utils.grading).

Nothing here raises for a learner's bug. A function that raises, returns NaN, a wrong shape, a string,
or an object whose methods raise gets ❌ and a one-line reason; a function that still raises
NotImplementedError gets one "not implemented yet" line.

Every sentence a learner reads comes from the message catalog (course_utils.i18n, domain `checks`), in the
language of the moment it is shown: a report, a case's note and a hint hold the English (str), and `text()`
translates them. Text with values in it is a `Message`, English as a str, that remembers its msgid and fields
(`shown` fills the translated msgid); text held in data (a check's hints, its mistakes, its cases' names, a
question's options) is marked with `N_` where it is defined.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Self

import torch

from ..i18n import N_, _
from . import forbidden as _forbidden
from .forbidden import Forbidden
from .render import show as show_verdict

if TYPE_CHECKING:
    from ..tracing import CallTrace

__all__ = [
    "Case",
    "CallOutcome",
    "CaseResult",
    "CheckReport",
    "FunctionCheck",
    "Joined",
    "Message",
    "Problem",
    "Status",
    "WrongOutputStructure",
    "changed_in_place",
    "compare_tensor",
    "describe_exception",
    "shown",
    "upper_bound",
]


# ----------------------------------------------------------------------------------------------------
# text in the learner's language
# ----------------------------------------------------------------------------------------------------
class Text(str):
    """English text (the str itself, what the checks store and compare) that can also be shown translated:
    `shown(text)`, or any f-string / format() of it, gives it in the current language (course_utils.i18n)."""

    def shown(self) -> str:
        raise NotImplementedError

    def __format__(self, spec: str) -> str:
        return format(self.shown(), spec)


class Message(Text):
    """A msgid filled with fields: `Message(N_("returned {type}, expected a tensor"), type="str")` is the English
    "returned str, expected a tensor"; shown, it is the catalog's translation of the msgid, filled with the fields
    (each str field shown too, so a case's name or a nested Message is translated as well)."""

    msgid: str
    fields: dict[str, Any]

    def __new__(cls, msgid: str, **fields: Any) -> Self:
        english = msgid.format(**{k: str(v) if isinstance(v, Text) else v for k, v in fields.items()})
        self = super().__new__(cls, english)
        self.msgid, self.fields = msgid, fields
        return self

    def shown(self) -> str:
        return _(self.msgid).format(**{k: shown(v) for k, v in self.fields.items()})

    def __reduce__(self) -> tuple[Callable[..., Text], tuple[Any, ...]]:
        return (_message, (self.msgid, self.fields))


def _message(msgid: str, fields: dict[str, Any]) -> Message:
    return Message(msgid, **fields)


class Problem(Message):
    """A Message that says what is wrong with an output, with a reason code that logic reads instead of the words:
    "type", "shape", "non-finite", "tolerance" (compare_tensor), "structure" (a wrong tuple), "in-place", "unread"
    (an output the grader's kernel could not send as data), "uncomparable"; and "raised", a report's message."""

    reason: str

    def __new__(cls, reason: str, msgid: str, **fields: Any) -> Self:
        self = super().__new__(cls, msgid, **fields)
        self.reason = reason
        return self

    def __reduce__(self) -> tuple[Callable[..., Text], tuple[Any, ...]]:
        return (_problem, (self.reason, self.msgid, self.fields))


def _problem(reason: str, msgid: str, fields: dict[str, Any]) -> Problem:
    return Problem(reason, msgid, **fields)


def reasons_of(note: object) -> frozenset[str]:
    """The reason codes of a case's note: a Problem's own, or those of the Problems joined in it."""
    if isinstance(note, Problem):
        return frozenset((note.reason,))
    if isinstance(note, Joined):
        return frozenset().union(*(reasons_of(p) for p in note.parts))
    return frozenset()


class Joined(Text):
    """Texts joined by a separator ("; " between a case's notes), each shown in the current language."""

    sep: str
    parts: tuple[str, ...]

    def __new__(cls, sep: str, parts: Iterable[str]) -> Self:
        parts = tuple(parts)
        self = super().__new__(cls, sep.join(str(p) for p in parts))
        self.sep, self.parts = sep, parts
        return self

    def shown(self) -> str:
        return self.sep.join(shown(p) for p in self.parts)

    def __reduce__(self) -> tuple[Callable[..., Text], tuple[Any, ...]]:
        return (Joined, (self.sep, self.parts))


def shown(text: Any) -> Any:
    """`text` in the current language: a Message filled in, a plain str looked up in the catalog (it is its own
    translation when the catalog does not have it: a function's name, a learner's exception message); any other
    value unchanged. Called where the text is shown, never at import."""
    if isinstance(text, Text):
        return text.shown()
    if isinstance(text, str):
        return _(text) if text else text
    return text


# ----------------------------------------------------------------------------------------------------
# cases and results
# ----------------------------------------------------------------------------------------------------
@dataclass
class Case:
    """One call of the learner's function: positional args, and the reference's output for them.

    `tolerance` is this case's own (None: the check's), for a case that needs another one, such as
    a float16 input, whose correct output is only exact to one rounding step of float16.
    """

    name: str
    args: tuple[Any, ...]
    expected: Any = None
    tolerance: float | None = None


@dataclass
class CaseResult:
    name: str
    passed: bool
    error: float  # max abs error (inf when the output could not be compared)
    tolerance: float
    note: str = ""  # why it failed, in words (a Problem, or Problems joined, carry reason codes: `reasons`)
    mistake: str | None = None  # the hint of the known mistake this output matches, if any

    @property
    def reasons(self) -> frozenset[str]:
        """Why it failed, as codes ("non-finite", "in-place", ...: Problem): what logic reads, never the words."""
        return reasons_of(self.note)


Status = Literal["passed", "failed", "not-implemented", "error"]
"""A check's verdict: every case matched; some case differed; the function still raises NotImplementedError; it
raised, or is not a function (or a question was not answered)."""


@dataclass
class CheckReport:
    """What a check found. `check_*` functions show its text (`show_verdict`); the grader reads its fields."""

    name: str
    status: Status
    cases: list[CaseResult] = field(default_factory=list)
    hint: str = ""
    message: str = ""
    forbidden: list[str] = field(default_factory=list)  # the forbidden calls the function makes (checks/forbidden.py)
    forbidden_hint: str = ""
    review: list[str] = field(default_factory=list)  # why the calls need the instructor's eyes (REVIEW_REASONS' codes)
    unlisted: list[str] = field(default_factory=list)  # the ops and library calls outside the task's allowlist

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
        """The verdict in words, in the current language (the English text is the catalog's msgid)."""
        verdict = self._verdict_text()
        if not self.review:
            return verdict
        why = "; ".join(review_reasons(self.review, self.unlisted))
        return (
            verdict
            + "\n"
            + "   "
            + _(
                "⚠ Not verified: {why}. What this function calls cannot be checked, so your instructor will look at it."
            ).format(why=why)
        )

    def _verdict_text(self) -> str:
        name = shown(self.name)
        if self.forbidden:
            return self._forbidden_text(name)
        if self.status == "not-implemented":
            return _(
                "⏳ {name}: not implemented yet. "
                "Replace `raise NotImplementedError()` with your code, then run this cell again."
            ).format(name=name)
        if self.status == "error":
            return (
                _("❌ {name}: {message}").format(name=name, message=shown(self.message)) + "\n" + _hint_line(self.hint)
            )
        tol = max((c.tolerance for c in self.cases), default=0.0)
        if self.status == "passed":
            if len(self.cases) == 1 and self.message:
                return _("✅ {name}: {message}").format(name=name, message=shown(self.message))
            error = shown(upper_bound(self.max_error))
            if len(self.cases) == 1:
                return _(
                    "✅ {name}: the one case matches the reference (max abs error {error}, tolerance {tol:.0e})"
                ).format(name=name, error=error, tol=tol)
            return _(
                "✅ {name}: all {n} cases match the reference (max abs error {error}, tolerance {tol:.0e})"
            ).format(name=name, n=len(self.cases), error=error, tol=tol)
        if len(self.cases) == 1 and self.message:  # right or wrong as a whole (a question's answer): no cases
            return (
                _("❌ {name}: {message}").format(name=name, message=shown(self.message)) + "\n" + _hint_line(self.hint)
            )
        failed = [c for c in self.cases if not c.passed]
        lines = [
            _("❌ {name}: {failed} of {total} cases differ from the reference").format(
                name=name, failed=len(failed), total=len(self.cases)
            )
        ]
        lines += [_case_line(c) for c in failed]
        lines.append(_hint_line(self.hint))
        return "\n".join(lines)

    def _forbidden_text(self, name: str) -> str:
        """❌ naming the first forbidden call, the others, the hint, then what the outputs showed anyway."""
        first, *others = self.forbidden
        lines = [_("❌ {name}: uses {call}, which this task asks you to write yourself").format(name=name, call=first)]
        if others:
            lines.append("   " + _("It also uses {calls}.").format(calls=", ".join(others)))
        lines.append(_hint_line(self.forbidden_hint))
        failed = [c for c in self.cases if not c.passed]
        if self.message:
            message = shown(self.message)
            said = (
                _("it {message}").format(message=message)
                if getattr(self.message, "reason", "") == "raised"
                else message
            )
            lines.append("   " + _("Apart from that, {said}.").format(said=said))
        elif self.cases and not failed:
            if len(self.cases) == 1:
                lines.append("   " + _("Apart from that, the one case matches the reference."))
            else:
                lines.append("   " + _("Apart from that, all {n} cases match the reference.").format(n=len(self.cases)))
        elif failed:
            lines.append(
                "   "
                + _("Apart from that, {failed} of {total} cases differ from the reference:").format(
                    failed=len(failed), total=len(self.cases)
                )
            )
            lines += [_case_line(c) for c in failed]
            if self.hint and self.hint != self.forbidden_hint:
                lines.append(_hint_line(self.hint))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"CheckReport({self.name!r}, status={self.status!r}, cases={len(self.cases)})"

    def _ipython_display_(self) -> None:
        """The check already showed this report; showing it again as the cell's value would repeat it."""


REVIEW_REASONS = {  # why what a function calls needs a person's eyes: course_utils.tracing's `tampered`, and more
    "tracing-off": N_("the trace of its calls was switched off or replaced"),
    "threads": N_("threads of the notebook's own ran beside it"),
    "unlisted": N_("it computes with {names}, which this task's list of basic operations does not name"),
}


def review_codes(codes: object) -> list[str]:
    """The known review codes in `codes` (a trace's `tampered`, or what a kernel sent), each once."""
    if not isinstance(codes, (list, tuple)):
        return []
    out: list[str] = []
    for code in codes[:20]:
        if isinstance(code, str) and code in REVIEW_REASONS and code not in out:
            out.append(code)
    return out


def review_reasons(codes: object, unlisted: Sequence[object] = ()) -> list[str]:
    """Each review code's reason in words, in the current language (`unlisted`: the names the "unlisted" one
    names)."""
    names = ", ".join(str(n) for n in (unlisted or ())[:20])
    return [_(REVIEW_REASONS[code]).format(names=names) for code in review_codes(codes)]


def _hint_line(hint: str) -> str:
    return "   " + _("Hint: {hint}").format(hint=shown(hint))


def _case_line(case: CaseResult) -> str:
    return "   " + _("✗ {case}: {note}").format(case=shown(case.name), note=shown(case.note))


def upper_bound(v: float) -> str:
    """The order of magnitude of a rounding error: "below 1e-06" (a Message, translated where it is shown).

    Even that varies between CPU kinds (exercise 04's post_ln_block was below 1e-06 with one kernel setting of the
    CPU matrix and below 1e-05 with another: tools/cpu_matrix.py), so nbval does not compare it in the stored
    outputs (tests/nbval_sanitize.cfg)."""
    if v == 0:
        return "0"
    return Message(N_("below 1e{exponent:+03d}"), exponent=math.ceil(math.log10(v)))


def _fmt(v: float) -> str:
    return "inf" if not math.isfinite(v) else f"{v:.1e}"


def describe_exception(exc: BaseException) -> str:
    """'ValueError: its message', for any exception (a learner's exception may fail even to print)."""
    try:
        message = str(exc)
    except Exception:
        message = N_("(its message could not be read)")
    return Joined(": ", (type(exc).__name__, message))


# ----------------------------------------------------------------------------------------------------
# comparing tensors
# ----------------------------------------------------------------------------------------------------
def _as_tensor(out: object) -> torch.Tensor | None:
    if isinstance(out, torch.Tensor):
        return out.detach().to("cpu")
    try:
        t = torch.as_tensor(out)
    except Exception:
        return None
    return t if t.is_floating_point() or t.dtype in (torch.int32, torch.int64) else None


def compare_tensor(got: object, expected: torch.Tensor, tolerance: float) -> tuple[float, str]:
    """(max abs error, problem in words or '') of an output against the float64 expected tensor."""
    t = _as_tensor(got)
    if t is None:
        return math.inf, Problem("type", N_("returned {type}, expected a tensor"), type=type(got).__name__)
    if tuple(t.shape) != tuple(expected.shape):
        return math.inf, Problem(
            "shape",
            N_("returned shape {shape}, expected {expected}"),
            shape=tuple(t.shape),
            expected=tuple(expected.shape),
        )
    t = t.to(torch.float64)
    if not torch.isfinite(expected).all():
        raise ValueError("compare_tensor: the expected tensor must be finite")
    if not torch.isfinite(t).all():
        bad = "NaN" if torch.isnan(t).any() else "inf"
        return math.inf, Problem("non-finite", N_("output contains {bad}"), bad=bad)
    err = float((t - expected.to(torch.float64)).abs().max()) if t.numel() else 0.0
    if err > tolerance:
        return err, Problem(
            "tolerance", N_("max abs error {error} > tolerance {tolerance}"), error=_fmt(err), tolerance=_fmt(tolerance)
        )
    return err, ""


def changed_in_place(before: tuple[Any, ...], after: Sequence[Any]) -> bool:
    """Whether a call changed one of its tensor arguments: `before` are the case's arguments, `after`
    the copies the function received, as they were when it returned."""
    return any(
        isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and not _same(a, b.to(a.dtype))
        for a, b in zip(after, before)
    )


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shapes and values, NaN equal to NaN (torch.equal says a NaN differs from itself)."""
    if a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        nan = a.isnan()
        return torch.equal(nan, b.isnan()) and torch.equal(a[~nan], b[~nan])
    return torch.equal(a, b)


def _copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments for one call, each tensor cloned, so that no call can change a case."""
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


class WrongOutputStructure(Exception):
    """An output that is not what the function must return (a tensor where a tuple was due, ...);
    its message says so in words (a Message: `problem_text(exc)` keeps it translatable)."""


def problem_text(exc: BaseException) -> str:
    """The message of a WrongOutputStructure as it was raised (a Message stays one)."""
    return exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)


# ----------------------------------------------------------------------------------------------------
# what calling a learner's function gave
# ----------------------------------------------------------------------------------------------------
CallStatus = Literal["ok", "raised", "not-implemented", "not-a-function"]
"""How calling a learner's function on a check's cases ended (CallOutcome.status)."""


@dataclass
class CallOutcome:
    """What calling a learner's function on a check's cases gave: the one thing that both places that call it
    produce (FunctionCheck.run in the notebook; the grader's judge, decoding what the learner's kernel sent), and
    the one thing FunctionCheck.verdict judges.

    status        "ok": `results` holds one (output, arguments as the call left them) per case, or a CaseResult
                  for an output the grader's kernel could not send as data; "raised": `exception` ("ValueError:
                  its message") on case number `call`; "not-implemented"; "not-a-function" (`type_name`)
    hits ... library_seen   what the runtime trace of the calls saw (course_utils.tracing.CallTrace's fields):
                  the forbidden calls, why it cannot vouch for them, every ATen op, every direct library call
    """

    status: CallStatus
    results: list[tuple[Any, tuple[Any, ...]] | CaseResult] = field(default_factory=list)
    exception: str = ""
    call: int | None = None
    type_name: str = ""
    hits: list[str] | None = field(default_factory=list)  # None: the kernel sent no trace
    tampered: list[str] = field(default_factory=list)
    ops_seen: list[str] = field(default_factory=list)
    library_seen: list[str] = field(default_factory=list)

    def saw(self, trace: object) -> None:
        """Take what a trace saw (a CallTrace, or a nullcontext that saw nothing)."""
        for name in ("hits", "tampered", "ops_seen", "library_seen"):
            setattr(self, name, list(getattr(trace, name, [])))


# ----------------------------------------------------------------------------------------------------
# function checks
# ----------------------------------------------------------------------------------------------------
@dataclass
class FunctionCheck:
    """A check of one learner function against a reference.

    name           the check's name (usually the learner's function's), its key in the exercise's registry
    make_cases     make_cases(generator) -> list[Case], with `expected` filled from the reference
    tolerance      the largest abs error allowed (a Case may bring its own)
    hint           what to do, shown when the output matches no named mistake
    mistakes       {hint: wrong implementation}: an output that matches one gets its hint (`diagnose`)
    reference      the right implementation: reference(*case.args) is case.expected, up to the tolerance
    parts          the names of the tensors the function returns as a tuple ("y", "running_mean", ...);
                   empty when it returns one tensor
    nan_hint       shown when an output contains NaN or inf and matches no named mistake
    in_place_hint  shown when the function changed one of its input tensors
    forbidden      what the task asks the learner not to call (Forbidden, checks/forbidden.py); the
                   reference itself is always forbidden. A function that calls one gets ❌ naming it.
    """

    name: str
    make_cases: Callable[[torch.Generator], list[Case]]
    tolerance: float
    hint: str
    mistakes: dict[str, Callable[..., Any]] = field(default_factory=dict)
    reference: Callable[..., Any] | None = None
    parts: tuple[str, ...] = ()
    nan_hint: str = N_(
        "your output contains NaN or inf: look for a division by zero (a statistic of 0 on a constant "
        "input); eps inside the square root keeps the denominator positive."
    )
    in_place_hint: str = N_(
        "work on a copy (x - mean creates a new tensor); do not use in-place ops like x.sub_() on the input."
    )
    forbidden: Forbidden | None = None

    # ------------------------------------------------------------------------------------------------
    # the cases
    # ------------------------------------------------------------------------------------------------
    def cases(self, seed: int = 0) -> list[Case]:
        """The cases for `seed`: 0 is the learners' (the notebook's), the grader draws others."""
        g = torch.Generator().manual_seed(seed)
        return self.make_cases(g)

    def tolerance_for(self, case: Case) -> float:
        return self.tolerance if case.tolerance is None else case.tolerance

    # ------------------------------------------------------------------------------------------------
    # judging one output
    # ------------------------------------------------------------------------------------------------
    def split_output(self, output: object) -> list[Any]:
        """The output as the list of its parts, one per name in `parts` (the output itself when the
        function returns one tensor). WrongOutputStructure if it does not have that structure."""
        if not self.parts:
            return [output]
        if not isinstance(output, (tuple, list)) or len(output) != len(self.parts):
            what = (
                type(output).__name__
                if not isinstance(output, (tuple, list))
                else Message(N_("{n} values"), n=len(output))
            )
            raise WrongOutputStructure(
                Problem(
                    "structure",
                    N_("returned {what}; expected a tuple ({parts})"),
                    what=what,
                    parts=", ".join(self.parts),
                )
            )
        return list(output)

    def expected_parts(self, case: Case) -> list[Any]:
        return list(case.expected) if self.parts else [case.expected]

    def compare(self, case: Case, output: object) -> CaseResult:
        """The verdict on one output: each part against the reference's and, when one differs, the
        named mistake that the output matches (`diagnose`)."""
        tolerance = self.tolerance_for(case)
        try:
            got = self.split_output(output)
        except WrongOutputStructure as problem:
            return CaseResult(case.name, False, math.inf, tolerance, problem_text(problem))
        errors: list[float] = []
        notes: list[str] = []
        failed: list[int] = []
        for i, (got_part, expected_part) in enumerate(zip(got, self.expected_parts(case))):
            err, note = compare_tensor(got_part, expected_part, tolerance)
            errors.append(err)
            if note:
                failed.append(i)
                notes.append(Joined(": ", (self.parts[i], note)) if self.parts else note)
        worst = max(errors)
        if not failed:
            return CaseResult(case.name, True, worst, tolerance)
        mistake = self.diagnose(case, got, failed, tolerance)
        return CaseResult(
            case.name, False, worst, tolerance, notes[0] if len(notes) == 1 else Joined("; ", notes), mistake=mistake
        )

    def diagnose(self, case: Case, got: list[Any], failed: list[int], tolerance: float) -> str | None:
        """The hint of the first named mistake that explains this output, or None.

        `got` is the output's parts, `failed` the indices of those that differ from the reference. A
        mistake explains the output when each failed part matches that part of the mistake's output,
        and the mistake's part itself differs from the reference (a mistake that changes nothing on
        this case proves nothing). A mistake that raises, returns another structure, or has a value
        that is not finite in a part compared here (NaN - NaN is NaN, which no tolerance rejects),
        cannot be the diagnosis: it is skipped, and it never makes the check raise.

        Every exercise's checks name their mistakes with this one loop.
        """
        expected = self.expected_parts(case)
        for hint, mistake in self.mistakes.items():
            try:
                if self._explains(mistake, case, got, expected, failed, tolerance):
                    return hint
            except Exception:  # a mistake that cannot be evaluated on this case explains nothing
                continue
        return None

    def _explains(
        self,
        mistake: Callable[..., Any],
        case: Case,
        got: list[Any],
        expected: list[Any],
        failed: list[int],
        tolerance: float,
    ) -> bool:
        wrong = self.split_output(mistake(*_copies(case.args)))
        for i in failed:
            w, e = _float64(wrong[i]), _float64(expected[i])
            if not (torch.isfinite(w).all() and torch.isfinite(e).all()):
                return False
            if compare_tensor(got[i], w, tolerance)[1]:
                return False  # the learner's part is not the mistake's
            if w.shape == e.shape and torch.allclose(w, e, atol=tolerance, rtol=0):
                return False  # the mistake gives the right answer here
        return True

    def judge_case(self, case: Case, output: object, args_after: tuple[Any, ...]) -> CaseResult:
        """The verdict on one case, from the learner's output and the arguments as the call left them.

        Both places that judge a learner's output come here: `evaluate` (the check in the notebook) and
        the instructors' grader (course_utils.grading.judge, on what the learner's kernel sent back).
        """
        try:
            result = self.compare(case, output)
            if result.passed and changed_in_place(case.args, args_after):
                return CaseResult(
                    case.name,
                    False,
                    result.error,
                    result.tolerance,
                    Problem("in-place", N_("your function changed its input tensor in place")),
                )
            return result
        except Exception as exc:  # an output so odd that comparing it fails (a tensor subclass that raises, ...)
            return CaseResult(
                case.name,
                False,
                math.inf,
                self.tolerance_for(case),
                Problem("uncomparable", N_("the output could not be compared ({type})"), type=type(exc).__name__),
            )

    # ------------------------------------------------------------------------------------------------
    # running the check in the notebook
    # ------------------------------------------------------------------------------------------------
    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """Call the learner's function on one case's arguments (copies). This is the one place where a
        check in the notebook runs learner code; the grader runs it in the learner's kernel instead
        (course_utils.grading.kernel)."""
        return fn(*args)

    def evaluate(self, fn: object, seed: int = 0) -> CheckReport:
        """Call fn on every case (in this process) and judge each output; never raises for the learner's bugs."""
        static = _forbidden.static_hits(self, fn) if callable(fn) else []
        return self.verdict(self.run(fn, seed), seed, static)

    def run(self, fn: object, seed: int = 0) -> CallOutcome:
        """Call fn on every case of `seed`, in this process, under a trace of its calls: the CallOutcome that the
        grader's kernel sends as data (course_utils.grading.kernel) and its judge decodes."""
        if not callable(fn):
            return CallOutcome("not-a-function", type_name=type(fn).__name__)
        trace = _forbidden.trace_for(self)
        outcome = CallOutcome("ok")
        for number, case in enumerate(self.cases(seed)):
            args = _copies(case.args)
            try:
                with trace:  # records the forbidden calls this call really makes
                    output = self.call(fn, args)
            except NotImplementedError:
                outcome = CallOutcome("not-implemented")
                break
            except (Exception, SystemExit) as exc:  # the learner's bug, reported in one line
                outcome = CallOutcome("raised", exception=describe_exception(exc), call=number)
                break
            outcome.results.append((output, args))
        outcome.saw(trace)
        return outcome

    def verdict(self, outcome: CallOutcome, seed: int = 0, static: Sequence[str] = ()) -> CheckReport:
        """The check's verdict on what calling the learner's function gave, wherever it ran: in this process
        (`evaluate`) or in the learner's kernel, decoded by the grader (course_utils.grading.judge). `static` are
        the forbidden names a static scan found in the function (checks/forbidden.py)."""
        if outcome.status == "not-implemented":
            return CheckReport(self.name, "not-implemented")
        if outcome.status == "not-a-function":
            report = CheckReport(
                self.name,
                "error",
                message=Message(
                    N_("`{function}` is a {type}, not a function"), function=self.name, type=outcome.type_name
                ),
                hint=Message(N_("define `{function}` with `def`, as the exercise does."), function=self.name),
            )
            return report
        cases = self.cases(seed)
        if outcome.status == "raised":
            on = cases[outcome.call].name if isinstance(outcome.call, int) and 0 <= outcome.call < len(cases) else "?"
            report = CheckReport(
                self.name,
                "error",
                message=Problem(
                    "raised", N_("raised {exception} (on case: {case})"), exception=outcome.exception, case=on
                ),
                hint=self.hint,
            )
        else:
            verdicts = [
                result if isinstance(result, CaseResult) else self.judge_case(case, *result)
                for case, result in zip(cases, outcome.results)
            ]
            report = self.report(verdicts)
        traced = _forbidden.trace_names(self, outcome.hits)
        vouched = isinstance(outcome.hits, list) and not outcome.tampered  # hits None: no trace came back
        report = self.with_forbidden(report, _forbidden.merge(_forbidden.confirmed(static, traced, vouched), traced))
        return self.with_review(report, outcome.tampered, outcome.ops_seen, outcome.library_seen)

    def traced(self, report: CheckReport, trace: CallTrace) -> CheckReport:
        """The report marked for review from what a trace of the learner's calls saw in this process."""
        return self.with_review(report, trace.tampered, trace.ops_seen, trace.library_seen)

    def with_review(
        self, report: CheckReport, codes: object, ops: Iterable[object] = (), library: Iterable[object] = ()
    ) -> CheckReport:
        """The report, marked for the instructor's review when the trace could not vouch for the calls (`codes`:
        course_utils.tracing's `tampered`), or saw ops or library calls outside the task's allowlist (`ops`,
        `library`: checks/allowed.py). The verdict and the points stay what they are."""
        from .allowed import unlisted

        report.review = [code for code in review_codes(codes) if code != "unlisted"]  # that one is decided here
        report.unlisted = unlisted(self, ops, library) if report.status != "not-implemented" else []
        if report.unlisted:
            report.review.append("unlisted")
        return report

    def with_forbidden(self, report: CheckReport, names: list[str]) -> CheckReport:
        """The verdict for a function that makes forbidden calls (`names`): ❌ naming them, whatever its
        outputs, which the report still shows. The notebook's check and the grader both end here."""
        if not names or report.status == "not-implemented":
            return report
        forbidden_hint = _forbidden.forbidden_hint(self)
        return CheckReport(
            self.name,
            "error" if report.status == "error" else "failed",  # "error": it also raised
            report.cases,
            hint=report.hint if report.status != "passed" else forbidden_hint,
            message=report.message if report.status == "error" else "",
            forbidden=list(names),
            forbidden_hint=forbidden_hint,
        )

    def report(self, results: list[CaseResult]) -> CheckReport:
        """The check's verdict from its cases' verdicts. The hint, first that applies: the named mistake
        an output matched, the NaN hint, the in-place hint, the check's general hint."""
        if all(r.passed for r in results):
            return CheckReport(self.name, "passed", results)
        failed = [r for r in results if not r.passed]
        named = next((r.mistake for r in failed if r.mistake), None)
        if named:
            hint = named
        elif any("non-finite" in r.reasons for r in failed):
            hint = self.nan_hint
        elif any("in-place" in r.reasons for r in failed):
            hint = self.in_place_hint
        else:
            hint = self.hint
        return CheckReport(self.name, "failed", results, hint=hint)

    def __call__(self, fn: object, seed: int = 0) -> CheckReport:
        report = self.evaluate(fn, seed)
        show_verdict(report.text())
        return report


def _float64(value: object) -> torch.Tensor:
    t = _as_tensor(value)
    if t is None:
        raise WrongOutputStructure(f"not a tensor: {type(value).__name__}")
    return t.to(torch.float64)
