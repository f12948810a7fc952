"""The registry: what each exercise grades, with how many points, and where its checks and questions live.

Exercise NN's checks live in course_utils/checks/exNN.py, which ends with its registry entry:

    EXERCISE = Exercise(
        "ex02_rmsnorm",                                    # the notebook's name: the grader's exercise id
        graded=[Graded("rms_norm", "rms_norm", 3), ...],   # check or question id, learner's function, points
        checks=[RMS_NORM_CHECK, ...],                      # FunctionChecks
        questions=[SHIFT_QUESTION],                        # MultipleChoice, ids "ex02.<topic>"
    )

`exercise_registry("ex02_rmsnorm")` loads one exercise's entry, `all_exercises()` every exercise's,
`find_question("ex02.shift")` one question, and `check_choice("ex02.shift", answer)` checks an answer.
The instructors' grader needs nothing else to grade an exercise. A tool that walks every graded
function (a test, a mutation suite) starts from `all_exercises()` and `Exercise.items()`: each function
item's check holds its reference, its case generator (`cases(seed)`) and its named mistakes.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .core import CheckReport, FunctionCheck
from .questions import MultipleChoice

__all__ = ["Graded", "GradedItem", "Exercise", "exercise_registry", "all_exercises", "find_question", "check_choice"]

_MODULE_NAME = re.compile(r"ex\d\d")


@dataclass(frozen=True)
class Graded:
    """One graded item of an exercise: the learner's function `function` is judged by `check` (the name
    of one of the exercise's FunctionChecks, or the id of one of its questions), worth `points`."""

    check: str
    function: str
    points: float


class GradedItem(NamedTuple):
    """A graded item with what judges it: kind "function" (a FunctionCheck) or "choice" (a MultipleChoice)."""

    kind: str
    graded: Graded
    check: FunctionCheck | MultipleChoice


@dataclass(frozen=True, init=False)
class Exercise:
    """One exercise's registry entry: its graded items in order, and its checks and questions, given as lists and
    kept as dicts by name (a check's `name`, a question's `id`)."""

    id: str
    graded: tuple[Graded, ...]
    checks: dict[str, FunctionCheck]
    questions: dict[str, MultipleChoice]

    def __init__(
        self,
        id: str,
        graded: Iterable[Graded],
        checks: Iterable[FunctionCheck] = (),
        questions: Iterable[MultipleChoice] = (),
    ) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "graded", tuple(graded))
        object.__setattr__(self, "checks", {check.name: check for check in checks})
        object.__setattr__(self, "questions", {question.id: question for question in questions})
        prefix = self.id.split("_", 1)[0]
        wrong = [qid for qid in self.questions if not qid.startswith(prefix + ".")]
        if wrong:
            raise ValueError(f"{self.id}: question ids must start with {prefix + '.'!r}: {wrong}")
        self.items()  # every graded item names a check or a question

    def items(self) -> list[GradedItem]:
        """The graded items in order, each with the FunctionCheck or MultipleChoice that judges it."""
        items = []
        for graded in self.graded:
            if graded.check in self.questions:
                items.append(GradedItem("choice", graded, self.questions[graded.check]))
            elif graded.check in self.checks:
                items.append(GradedItem("function", graded, self.checks[graded.check]))
            else:
                raise KeyError(f"{self.id}: graded item {graded.check!r} is neither a check nor a question")
        return items

    @property
    def max_points(self) -> float:
        return float(sum(graded.points for graded in self.graded))


def _exercise_module(prefix: str):
    """The module holding exercise `prefix`'s checks: "ex02" -> course_utils.checks.ex02."""
    if not _MODULE_NAME.fullmatch(prefix):
        raise KeyError(f"{prefix!r} does not name an exercise (exNN)")
    return importlib.import_module(f"{__package__}.{prefix}")


def exercise_registry(exercise_id: str) -> Exercise:
    """The registry entry of an exercise id like 'ex02_rmsnorm' (ImportError or KeyError if there is none)."""
    exercise = _exercise_module(exercise_id.split("_", 1)[0]).EXERCISE
    if exercise.id != exercise_id:
        raise KeyError(f"no exercise {exercise_id!r} (its module registers {exercise.id!r})")
    return exercise


def all_exercises() -> list[Exercise]:
    """Every exercise's registry entry, in order (one module checks/exNN.py each)."""
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if _MODULE_NAME.fullmatch(m.name))
    return [_exercise_module(name).EXERCISE for name in names]


def find_question(question_id: str) -> MultipleChoice:
    """The question with this id ('ex01.variance'), from its exercise's registry entry."""
    return _exercise_module(question_id.split(".", 1)[0]).EXERCISE.questions[question_id]


def check_choice(question_id: str, answer) -> CheckReport:
    """Check a multiple-choice answer and print the verdict; `answer` returns the chosen letter (or is it)."""
    return find_question(question_id)(answer)
