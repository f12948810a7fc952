"""Immediate, friendly checks for the exercise notebooks, and the registry the instructors' grader reads.

    core        the framework: Case, FunctionCheck (evaluate, judge_case, diagnose, report), CheckReport
    forbidden   what each task forbids (Forbidden), the static scan and the runtime trace that find it
    questions   MultipleChoice: the exercises' and chapters' multiple-choice questions
    registry    Graded, Exercise, exercise_registry(), all_exercises(), find_question(), check_choice()
    ex01 ...    one module per exercise: its cases, reference, named mistakes, hints, questions and
                registry entry (EXERCISE), and the check_* functions its notebook calls

An exercise notebook imports the checks of its own exercise and the question check:

    from course_utils.checks import check_choice
    from course_utils.checks.ex02 import check_layer_norm_via_rms_norm, check_rms_norm

Importing this package loads the framework only; an exercise's module loads when it is imported.
"""

from .core import (
    Case,
    CaseResult,
    CheckReport,
    FunctionCheck,
    WrongOutputStructure,
    changed_in_place,
    compare_tensor,
    describe_exception,
    upper_bound,
)
from .forbidden import Forbidden
from .questions import MultipleChoice
from .registry import Exercise, Graded, GradedItem, all_exercises, check_choice, exercise_registry, find_question

__all__ = [
    "Case",
    "CaseResult",
    "CheckReport",
    "FunctionCheck",
    "WrongOutputStructure",
    "changed_in_place",
    "compare_tensor",
    "describe_exception",
    "upper_bound",
    "Forbidden",
    "MultipleChoice",
    "Exercise",
    "Graded",
    "GradedItem",
    "all_exercises",
    "check_choice",
    "exercise_registry",
    "find_question",
]
