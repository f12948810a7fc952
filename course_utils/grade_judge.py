"""The verdict on one graded item, computed in the grader's process from what the kernel sent back.

The learner's kernel only ran the function (course_utils.grade_run); its answer is a JSON file that
the learner's code could have forged. Nothing in it is trusted: every value goes through the strict
decoder of course_utils.grade_kernel (plain numbers, strings and freshly built tensors only), an object
the kernel could not send as data fails the case, and the comparison itself is the reference check's
own `compare` / `report` from course_utils.checks, running here, where no notebook can patch it.
"""

from __future__ import annotations

import difflib
import math

from . import grade_kernel

__all__ = ["judge"]


def judge(kind: str, graded, check, answer: dict, seed: int):
    """A CheckReport for one graded item from the kernel's answer (never trusts its contents)."""
    from .checks import CaseResult, CheckReport

    name = getattr(check, "name", None) or check.id
    hint = getattr(check, "hint", "")
    status = answer.get("status")
    if status == "grader":
        return CheckReport(
            name, "error", message=str(answer.get("message")), hint="this is the grader's limitation, not yours"
        )
    if status == "missing":
        defined = (
            [str(d) for d in answer.get("defined", []) if isinstance(d, str)]
            if isinstance(answer.get("defined"), list)
            else []
        )
        close = difflib.get_close_matches(graded.function, defined, n=2, cutoff=0.5)
        also = f" (the notebook defines {', '.join(f'`{c}`' for c in close)}: was it renamed?)" if close else ""
        return CheckReport(
            name,
            "error",
            message=f"`{graded.function}` is not defined in the notebook{also}",
            hint=f"keep the function's name `{graded.function}` and its arguments as the exercise gives them.",
        )
    if status == "not-callable":
        return CheckReport(
            name,
            "error",
            message=f"`{graded.function}` is a {str(answer.get('type'))[:60]}, not a function",
            hint=f"define `{graded.function}` with `def`, as the exercise does.",
        )
    if status == "not-implemented":
        return CheckReport(name, "not-implemented")
    if status == "raised":
        cases = check.cases(seed) if kind == "function" else []
        call = answer.get("call")
        on = f" (on case: {cases[call].name})" if isinstance(call, int) and 0 <= call < len(cases) else ""
        return CheckReport(
            name,
            "error",
            hint=hint or "the function must return the answer without raising.",
            message=f"raised {str(answer.get('type'))[:60]}: {str(answer.get('message'))[:300]}{on}",
        )
    results = answer.get("results") if status == "ok" else None
    if not isinstance(results, list):
        message = str(answer.get("message") or "the grader got no answer from the notebook's kernel")
        return CheckReport(
            name,
            "error",
            message=f"could not be called: {message[:300]}",
            hint="keep the function at the top level of a cell, and do not redefine Python's builtins.",
        )
    if kind == "choice":
        given = _decoded(results[0].get("output") if results and isinstance(results[0], dict) else None)
        if isinstance(given, grade_kernel.Unsupported) or given is _UNREADABLE:
            given = f"<{getattr(given, 'type_name', 'unreadable value')}>"
        ok, why = check.grade(given)
        case = CaseResult(check.id, ok, 0.0 if ok else math.inf, 0.0, "" if ok else why)
        return CheckReport(
            check.id, "passed" if ok else "failed", [case], hint=why, message=f"correct: {why}" if ok else ""
        )
    cases = check.cases(seed)
    if len(results) != len(cases):
        return CheckReport(name, "error", message="the kernel answered for the wrong number of cases", hint=hint)
    verdicts = [_judge_case(check, case, result) for case, result in zip(cases, results)]
    return check.report(verdicts)


_UNREADABLE = object()


def _decoded(data):
    try:
        return grade_kernel.decode(data)
    except (grade_kernel.FormatError, ValueError, TypeError, KeyError, OverflowError):
        return _UNREADABLE


def _unsupported_inside(value):
    if isinstance(value, grade_kernel.Unsupported):
        return value
    if isinstance(value, (list, tuple)):
        return next((u for u in map(_unsupported_inside, value) if u is not None), None)
    if isinstance(value, dict):
        return next((u for u in map(_unsupported_inside, value.values()) if u is not None), None)
    return None


def _judge_case(check, case, result):
    import torch

    from .checks import CaseResult

    tol = getattr(check, "tolerance", 0.0)
    output = _decoded(result.get("output")) if isinstance(result, dict) else _UNREADABLE
    if output is _UNREADABLE:
        return CaseResult(case.name, False, math.inf, tol, "the output could not be read as plain data")
    odd = _unsupported_inside(output)
    if odd is not None:
        return CaseResult(
            case.name,
            False,
            math.inf,
            tol,
            f"returned {odd.type_name}, not a tensor or plain numbers: return the tensor itself",
        )
    try:
        verdict = check.compare(case, output)
    except Exception as exc:
        return CaseResult(case.name, False, math.inf, tol, f"the output could not be compared ({type(exc).__name__})")
    after = result.get("args_after")
    after = [_decoded(a) for a in after] if isinstance(after, list) else []
    changed = any(
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and (a.shape != b.shape or not torch.equal(a, b.to(a.dtype)))
        for a, b in zip(after, case.args)
    )
    if verdict.passed and changed:
        return CaseResult(case.name, False, verdict.error, tol, "your function changed its input tensor in place")
    return verdict
