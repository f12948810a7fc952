"""Multiple-choice questions: the key, an explanation, and a hint for each wrong answer.

In an exercise the learner answers with a function that returns a letter (so that the instructors'
grader can call it in the learner's kernel), or with the letter itself, and the check prints one line:

    ✅ ex01.variance: correct. The unbiased variance is n/(n-1) times the biased one, ...
    ❌ ex01.variance: not quite. They differ by the factor n/(n-1): compute both for [4, 6, 2, 8] ...

The chapters' end-of-chapter questions (course_utils.quiz) are MultipleChoice objects too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .core import CaseResult, CheckReport, describe_exception

__all__ = ["MultipleChoice"]


@dataclass(frozen=True)
class MultipleChoice:
    """A multiple-choice question: the key, an explanation, and a hint per wrong answer."""

    id: str  # "exNN.topic" in an exercise: the prefix names the exercise that asks it
    prompt: str
    choices: dict  # letter -> text
    answer: str
    explanation: str
    wrong_hints: dict = field(default_factory=dict)

    def grade(self, given) -> tuple[bool, str]:
        """(right?, why): the explanation for the key, the wrong answer's hint otherwise."""
        letter = _letter(given)
        if letter not in self.choices:
            return False, f"answer with one of {', '.join(repr(c) for c in self.choices)}, got {_shown(given)}"
        if letter == self.answer:
            return True, self.explanation
        return False, self.wrong_hints.get(letter, "reread the question and the chapter's section on it.")

    def judge_answer(self, given) -> CheckReport:
        """The verdict on an answer already in hand: the notebook's check and the grader both judge here."""
        ok, why = self.grade(given)
        case = CaseResult(self.id, ok, 0.0 if ok else math.inf, 0.0, "" if ok else why)
        return CheckReport(
            self.id, "passed" if ok else "failed", [case], hint=why, message=f"correct: {why}" if ok else ""
        )

    def evaluate(self, answer) -> CheckReport:
        """The verdict on `answer`, a letter or a function returning one; never raises for the learner's bugs."""
        try:
            given = answer() if callable(answer) else answer
        except NotImplementedError:
            return CheckReport(self.id, "not-implemented")
        except (Exception, SystemExit) as exc:
            return CheckReport(
                self.id,
                "error",
                message=f"raised {describe_exception(exc)}",
                hint='return the letter of your answer, for example return "b".',
            )
        return self.judge_answer(given)

    def __call__(self, answer) -> CheckReport:
        """Check `answer` and print the verdict in one line."""
        report = self.evaluate(answer)
        if report.status == "passed":
            print(f"✅ {self.id}: correct. {_capital(report.hint)}")
        elif report.status == "failed":
            print(f"❌ {self.id}: not quite. {_capital(report.hint)}")
        else:
            print(report.text())
        return report


def _letter(given) -> str:
    """'b' for "b", "(B)", " b. "; '' for None or for what cannot even be turned into text."""
    if given is None:
        return ""
    try:
        return str(given).strip().lower().strip("().")
    except Exception:
        return ""


def _shown(given) -> str:
    try:
        return repr(given)
    except Exception:
        return f"a {type(given).__name__}"


def _capital(s: str) -> str:
    return s[:1].upper() + s[1:]
