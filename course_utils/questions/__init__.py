"""The chapters' check questions, one module per chapter: `questions/ch01.py` holds chapter 01's `QUESTIONS`.

They live here, not in the notebooks, for the same reasons as the exercises' questions in `checks/exNN.py`:

* one source in English, its texts marked with `N_()`, and one translation path: `tools/catalog.py` extracts them
  into the `questions` gettext catalog (course_utils/locale/ja/LC_MESSAGES/questions.po), and `MultipleChoice`
  shows each text in the current language, so the English and Japanese notebooks run the same one-line cell;
* a notebook's cell stays short enough to read: `show_quiz("ch01")` (course_utils.quiz) shows them;
* tests read them as objects (tests/test_quizzes.py: balanced options, a reason for every option; the chapter tests
  check that the numbers in the options are what the code computes).

To add a question to a chapter, append a `MultipleChoice` to its `QUESTIONS` with an id `"chNN.<topic>"` and every
text in `N_()`, run `python tools/catalog.py` and translate the new entries of `questions.po`, then
`make execute NB="chapters/NN_x.ipynb ja/chapters/NN_x.ipynb"` to store the new output.
"""

from __future__ import annotations

import importlib
import re

from ..checks.questions import MultipleChoice

__all__ = ["chapter_questions"]


def chapter_questions(chapter: str) -> list[MultipleChoice]:
    """The check questions of `chapter` ("ch01" … "ch06"), in the order the notebook asks them."""
    if not re.fullmatch(r"ch\d\d", chapter):
        raise ValueError(f'name a chapter as "ch01" … "ch06", not {chapter!r}')
    try:
        module = importlib.import_module(f"{__name__}.{chapter}")
    except ModuleNotFoundError:
        raise ValueError(f"chapter {chapter!r} has no check questions (course_utils/questions/{chapter}.py)") from None
    return list(module.QUESTIONS)
