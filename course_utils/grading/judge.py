"""The verdict on one graded item, computed in the grader's process from what the kernel sent back.

The learner's kernel only ran the function (course_utils.grading.run); its answer is a JSON file that
the learner's code could have forged. Nothing in it is trusted: every value goes through the strict
decoder of course_utils.grading.kernel (plain numbers, strings and freshly built tensors only), an
object the kernel could not send as data fails the case, and the verdict itself is the reference
check's own `FunctionCheck.verdict` on the decoded CallOutcome (or the question's `judge_answer`) from
course_utils.checks, the code the learner's notebook checks with, running here, where no notebook can patch it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast

from ..checks.core import CallOutcome, Case, CaseResult, CheckReport, FunctionCheck, Joined, Problem
from ..i18n import N_, _
from .kernel import FormatError, Unsupported, decode

if TYPE_CHECKING:
    from ..checks.questions import MultipleChoice
    from ..checks.registry import Graded

__all__ = ["judge"]


def judge(
    kind: str,
    graded: Graded,
    check: FunctionCheck | MultipleChoice,
    answer: dict[str, Any],
    seed: int,
    forbidden: Sequence[str] = (),
) -> CheckReport:
    """A CheckReport for one graded item from the kernel's answer (never trusts its contents).

    A function's answer is decoded into the CallOutcome that the learner's check builds in the notebook, and
    judged by the same FunctionCheck.verdict. `forbidden` are the forbidden calls that the grader's static scan
    of the notebook found in the function (course_utils.checks.forbidden); the kernel's trace of the calls adds
    the ones it recorded (evidence: a kernel can leave a call out, but cannot add a name the check does not
    forbid). Either gives ❌. A trace that could not vouch for the calls (the kernel's `tampered`), or ops and
    library calls outside the task's allowlist (`ops`, `library`: checks/allowed.py), mark the item for the
    instructor's review.
    """
    name = check.name if isinstance(check, FunctionCheck) else check.id
    status = answer.get("status")
    if status == "missing":
        defined = (
            [str(d) for d in answer.get("defined", []) if isinstance(d, str)]
            if isinstance(answer.get("defined"), list)
            else []
        )
        close = difflib.get_close_matches(graded.function, defined, n=2, cutoff=0.5)
        names = ", ".join(f"`{c}`" for c in close)
        also = _(" (the notebook defines {names}: was it renamed?)").format(names=names) if close else ""
        return CheckReport(
            name,
            "error",
            message=_("`{function}` is not defined in the notebook{also}").format(function=graded.function, also=also),
            hint=_("keep the function's name `{function}` and its arguments as the exercise gives them.").format(
                function=graded.function
            ),
        )
    if kind == "choice":  # the registry's kind: "choice" is a MultipleChoice's, "function" a FunctionCheck's
        question = cast("MultipleChoice", check)
        if status == "raised":
            message = Joined(": ", (str(answer.get("type"))[:60], str(answer.get("message"))[:300]))
            return CheckReport(name, "error", message=Problem("raised", N_("raised {exception}"), exception=message))
        results = answer.get("results") if status == "ok" else None
        if not isinstance(results, list):
            return _no_answer(name, answer)
        given = _decoded(results[0].get("output") if results and isinstance(results[0], dict) else None)
        if isinstance(given, Unsupported) or given is _UNREADABLE:
            given = f"<{getattr(given, 'type_name', 'unreadable value')}>"
        return question.judge_answer(given)
    function_check = cast(FunctionCheck, check)
    outcome = _outcome(function_check, answer, seed)
    if outcome is None:
        return _no_answer(name, answer)
    return function_check.verdict(outcome, seed, forbidden)


def _no_answer(name: str, answer: dict[str, Any]) -> CheckReport:
    message = str(answer.get("message") or _("the grader got no answer from the notebook's kernel"))
    return CheckReport(
        name,
        "error",
        message=_("could not be called: {message}").format(message=message[:300]),
        hint=_("keep the function at the top level of a cell, and do not redefine Python's builtins."),
    )


def _strings(value: object, most: int) -> list[str]:
    return [v for v in value[:most] if isinstance(v, str)] if isinstance(value, list) else []


class _Seen(TypedDict):
    """What the kernel's trace of the calls saw, as CallOutcome's fields."""

    hits: list[str] | None
    tampered: list[str]
    ops_seen: list[str]
    library_seen: list[str]


def _outcome(check: FunctionCheck, answer: dict[str, Any], seed: int) -> CallOutcome | None:
    """The kernel's answer for a function, decoded strictly into a CallOutcome; None when it is no answer."""
    status = answer.get("status")
    seen: _Seen = {
        "hits": answer.get("trace") if isinstance(answer.get("trace"), list) else None,  # None: cannot vouch
        "tampered": _strings(answer.get("tampered"), 20),
        "ops_seen": _strings(answer.get("ops"), 500),
        "library_seen": _strings(answer.get("library"), 500),
    }
    if status == "not-callable":
        return CallOutcome("not-a-function", type_name=str(answer.get("type"))[:60], **seen)
    if status == "not-implemented":
        return CallOutcome("not-implemented", **seen)
    if status == "raised":
        exception = Joined(": ", (str(answer.get("type"))[:60], str(answer.get("message"))[:300]))
        call = answer.get("call") if type(answer.get("call")) is int else None
        return CallOutcome("raised", exception=exception, call=call, **seen)
    results = answer.get("results") if status == "ok" else None
    if not isinstance(results, list):
        return None
    cases = check.cases(seed)
    if len(results) != len(cases):
        return CallOutcome(
            "ok",
            [
                CaseResult(
                    c.name,
                    False,
                    math.inf,
                    check.tolerance_for(c),
                    _("the kernel answered for the wrong number of cases"),
                )
                for c in cases
            ],
            **seen,
        )
    return CallOutcome("ok", [_case_output(check, c, r) for c, r in zip(cases, results)], **seen)


_UNREADABLE = object()


def _decoded(data: object) -> Any:
    try:
        return decode(data)
    except (FormatError, ValueError, TypeError, KeyError, OverflowError):
        return _UNREADABLE


def _unsupported_inside(value: object) -> Unsupported | None:
    if isinstance(value, Unsupported):
        return value
    if isinstance(value, (list, tuple)):
        return next((u for u in map(_unsupported_inside, value) if u is not None), None)
    if isinstance(value, dict):
        return next((u for u in map(_unsupported_inside, value.values()) if u is not None), None)
    return None


def _case_output(check: FunctionCheck, case: Case, result: object) -> tuple[Any, tuple[Any, ...]] | CaseResult:
    """One case's (output, arguments after the call), decoded strictly; a CaseResult for an output that the kernel
    could not send as plain data (never compared)."""
    tol = check.tolerance_for(case)
    output = _decoded(result.get("output")) if isinstance(result, dict) else _UNREADABLE
    if output is _UNREADABLE or not isinstance(result, dict):
        return CaseResult(
            case.name, False, math.inf, tol, Problem("unread", N_("the output could not be read as plain data"))
        )
    odd = _unsupported_inside(output)
    if odd is not None:
        return CaseResult(
            case.name,
            False,
            math.inf,
            tol,
            Problem(
                "unread",
                N_("returned {type}, not a tensor or plain numbers: return the tensor itself"),
                type=odd.type_name,
            ),
        )
    after = result.get("args_after")
    after = tuple(_decoded(a) for a in after) if isinstance(after, list) else ()
    return output, after
