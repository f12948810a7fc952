"""The verdict on one graded item, computed in the grader's process from what the kernel sent back.

The learner's kernel only ran the function (course_utils.grading.run); its answer is a JSON file that
the learner's code could have forged. Nothing in it is trusted: every value goes through the strict
decoder of course_utils.grading.kernel (plain numbers, strings and freshly built tensors only), an
object the kernel could not send as data fails the case, and the verdict itself is the reference
check's own `judge_case` / `report` (or the question's `judge_answer`) from course_utils.checks, the
code the learner's notebook checks with, running here, where no notebook can patch it.
"""

from __future__ import annotations

import difflib
import math

from ..checks.core import shown
from ..i18n import _
from .kernel import FormatError, Unsupported, decode

__all__ = ["judge"]


def judge(kind: str, graded, check, answer: dict, seed: int, forbidden=()):
    """A CheckReport for one graded item from the kernel's answer (never trusts its contents).

    `forbidden` are the forbidden calls that the grader's static scan of the notebook found in the function
    (course_utils.checks.forbidden); the kernel's trace of the calls adds the ones it recorded (evidence: a
    kernel can leave a call out, but cannot add a name the check does not forbid). Either gives ❌. A trace
    that could not vouch for the calls (the kernel's `tampered`), or ops and library calls outside the task's
    allowlist (the kernel's `ops` and `library`, checks/allowed.py), mark the item for the instructor's review.
    """
    report = _verdict(kind, graded, check, answer, seed)
    if kind != "function":
        return report
    from ..checks.forbidden import confirmed, merge, trace_names

    traced = trace_names(check, answer.get("trace"))
    vouched = isinstance(answer.get("trace"), list) and answer.get("tampered") == []
    report = check.with_forbidden(report, merge(confirmed(forbidden, traced, vouched), traced))
    return check.with_review(report, answer.get("tampered"), answer.get("ops"), answer.get("library"))


def _verdict(kind: str, graded, check, answer: dict, seed: int):
    from ..checks import CheckReport

    name = getattr(check, "name", None) or check.id
    hint = getattr(check, "hint", "")
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
    if status == "not-callable":
        return CheckReport(
            name,
            "error",
            message=_("`{function}` is a {type}, not a function").format(
                function=graded.function, type=str(answer.get("type"))[:60]
            ),
            hint=_("define `{function}` with `def`, as the exercise does.").format(function=graded.function),
        )
    if status == "not-implemented":
        return CheckReport(name, "not-implemented")
    if status == "raised":
        cases = check.cases(seed) if kind == "function" else []
        call = answer.get("call")
        on = (
            _(" (on case: {case})").format(case=shown(cases[call].name))
            if isinstance(call, int) and 0 <= call < len(cases)
            else ""
        )
        return CheckReport(
            name,
            "error",
            hint=hint or _("the function must return the answer without raising."),
            message=_("raised {type}: {message}{on}").format(
                type=str(answer.get("type"))[:60], message=str(answer.get("message"))[:300], on=on
            ),
        )
    results = answer.get("results") if status == "ok" else None
    if not isinstance(results, list):
        message = str(answer.get("message") or _("the grader got no answer from the notebook's kernel"))
        return CheckReport(
            name,
            "error",
            message=_("could not be called: {message}").format(message=message[:300]),
            hint=_("keep the function at the top level of a cell, and do not redefine Python's builtins."),
        )
    if kind == "choice":
        given = _decoded(results[0].get("output") if results and isinstance(results[0], dict) else None)
        if isinstance(given, Unsupported) or given is _UNREADABLE:
            given = f"<{getattr(given, 'type_name', 'unreadable value')}>"
        return check.judge_answer(given)
    cases = check.cases(seed)
    if len(results) != len(cases):
        return CheckReport(name, "error", message=_("the kernel answered for the wrong number of cases"), hint=hint)
    verdicts = [_judge_case(check, case, result) for case, result in zip(cases, results)]
    return check.report(verdicts)


_UNREADABLE = object()


def _decoded(data):
    try:
        return decode(data)
    except (FormatError, ValueError, TypeError, KeyError, OverflowError):
        return _UNREADABLE


def _unsupported_inside(value):
    if isinstance(value, Unsupported):
        return value
    if isinstance(value, (list, tuple)):
        return next((u for u in map(_unsupported_inside, value) if u is not None), None)
    if isinstance(value, dict):
        return next((u for u in map(_unsupported_inside, value.values()) if u is not None), None)
    return None


def _judge_case(check, case, result):
    """The verdict on one case: the kernel's answer decoded strictly, then judged by the check's own
    `judge_case`, the code the learner's notebook checks with."""
    from ..checks import CaseResult

    tol = check.tolerance_for(case)
    output = _decoded(result.get("output")) if isinstance(result, dict) else _UNREADABLE
    if output is _UNREADABLE:
        return CaseResult(case.name, False, math.inf, tol, _("the output could not be read as plain data"))
    odd = _unsupported_inside(output)
    if odd is not None:
        return CaseResult(
            case.name,
            False,
            math.inf,
            tol,
            _("returned {type}, not a tensor or plain numbers: return the tensor itself").format(type=odd.type_name),
        )
    after = result.get("args_after")
    after = tuple(_decoded(a) for a in after) if isinstance(after, list) else ()
    return check.judge_case(case, output, after)
