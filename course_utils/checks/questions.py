"""Multiple-choice questions: the key, an explanation, and a hint for each wrong answer.

In an exercise the learner answers with a function that returns a letter (so that the instructors'
grader can call it in the learner's kernel), or with the letter itself, and the check prints one line:

    ✅ ex01.variance: correct. The unbiased variance is n/(n-1) times the biased one, ...
    ❌ ex01.variance: not quite. They differ by the factor n/(n-1): compute both for [4, 6, 2, 8] ...

The report's own text (what the grader's feedback shows) says the same in its words:

    ❌ ex01.variance: the chosen answer is not the right one
       Hint: They differ by the factor n/(n-1): compute both for [4, 6, 2, 8] ...

The chapters' end-of-chapter questions (course_utils/questions/chNN.py, shown by course_utils.quiz) are
MultipleChoice objects too.

A question's texts are English, marked with `N_` where an exercise or a chapter defines them; `prompt_text()`,
`choice_texts()`, `explanation_text()` and `grade()` give them in the current language (course_utils.i18n),
and the verdict is translated where it is printed. A question written in a notebook (an instructor's own) is not
in the catalog and is shown as written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..i18n import N_, _
from .core import CaseResult, CheckReport, Message, describe_exception, shown
from .render import show as show_verdict

__all__ = ["MultipleChoice"]


@dataclass(frozen=True)
class MultipleChoice:
    """A multiple-choice question: the key, an explanation, and a hint per wrong answer."""

    id: str  # "exNN.topic" in an exercise: the prefix names the exercise that asks it
    prompt: str
    choices: dict[str, str]  # letter -> text
    answer: str
    explanation: str
    wrong_hints: dict[str, str] = field(default_factory=dict)

    def prompt_text(self) -> str:
        """The question, in the current language."""
        return shown(self.prompt)

    def choice_texts(self) -> dict:
        """{letter: option}, in the current language."""
        return {letter: shown(text) for letter, text in self.choices.items()}

    def explanation_text(self) -> str:
        """Why the key is right, in the current language."""
        return shown(self.explanation)

    def grade(self, given) -> tuple[bool, str]:
        """(right?, why) in the current language: the explanation for the key, the wrong answer's hint otherwise."""
        ok, why = self.verdict(given)
        return ok, shown(why)

    def verdict(self, given) -> tuple:
        """(right?, why) with `why` in English (the catalog's msgid, translated where it is shown)."""
        letter = _letter(given)
        if letter not in self.choices:
            return False, Message(
                N_("answer with one of {letters}, got {given}"),
                letters=", ".join(repr(c) for c in self.choices),
                given=_shown(given),
            )
        if letter == self.answer:
            return True, self.explanation
        return False, self.wrong_hints.get(letter, N_("reread the question and the chapter's section on it."))

    def judge_answer(self, given) -> CheckReport:
        """The verdict on an answer already in hand: the notebook's check and the grader both judge here."""
        ok, why = self.verdict(given)
        case = CaseResult(self.id, ok, 0.0 if ok else math.inf, 0.0, "" if ok else why)
        return CheckReport(
            self.id,
            "passed" if ok else "failed",
            [case],
            hint=why,
            # a choice is right or wrong as a whole: the report says so (no cases, no reference), then `why` once
            message=Message(N_("correct: {why}"), why=why) if ok else N_("the chosen answer is not the right one"),
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
                message=Message(N_("raised {exception}"), exception=describe_exception(exc)),
                hint=N_('return the letter of your answer, for example return "b".'),
            )
        return self.judge_answer(given)

    def __call__(self, answer) -> CheckReport:
        """Check `answer` and print the verdict in one line."""
        report = self.evaluate(answer)
        if report.status == "passed":
            show_verdict(_("✅ {id}: correct. {why}").format(id=self.id, why=_sentence(report.hint)))
        elif report.status == "failed":
            show_verdict(_("❌ {id}: not quite. {why}").format(id=self.id, why=_sentence(report.hint)))
        else:
            show_verdict(report.text())
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


def _sentence(why) -> str:
    """The reason as a sentence after "correct." / "not quite.": capitalized when it is shown in English (its msgid
    starts in lower case), as translated otherwise (a translation is written as it must be shown)."""
    text = shown(why)
    return _capital(text) if text == str(why) else text
