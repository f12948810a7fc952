"""Check questions at the end of each chapter: multiple choice with an explanation for every option.

`show_quiz("ch01")` shows chapter 01's questions (course_utils/questions/ch01.py) in the current language, and
`show_quiz([MultipleChoice(...), ...])` shows any others. It displays each question once, as one output with two
renderings of it (one mimebundle):

* **live** (JupyterLab with a running kernel): the widget, which shows the question, its options as radio
  buttons and a "Check" button; the answer and the reason for the chosen option appear only after Check;
* **static** (the stored notebook on GitHub, nbconvert, the slide decks, JupyterLab before the cell is run): the
  bundle's Markdown, with the options listed and the answer folded in a <details> block.

A front end shows the richest rendering it can: JupyterLab prefers the widget view to Markdown, and where there is
no widget (the stored file keeps no widget views, see `course_utils.nbtools`) the Markdown is what remains.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .checks import MultipleChoice
from .i18n import _
from .questions import chapter_questions

if TYPE_CHECKING:
    import ipywidgets

__all__ = ["MultipleChoice", "question_markdown", "question_bundle", "show_quiz"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def question_markdown(number: int, q: MultipleChoice) -> str:
    choices = "\n".join(f"- **({k})** {v}" for k, v in q.choice_texts().items())
    show = _("Show the answer")
    return (
        f"{_question(number)} {q.prompt_text()}\n\n{choices}\n\n"
        f"<details><summary>{show}</summary>\n\n"
        + _("**({letter})**: {explanation}").format(letter=q.answer, explanation=q.explanation_text())
        + "\n\n</details>"
    )


def _question(number: int) -> str:
    """The question's bold label, "**Question 1.**" (a translation keeps the Markdown)."""
    return _("**Question {number}.**").format(number=number)


def feedback(q: MultipleChoice, letter: str | None) -> str:
    if letter is None:
        return _("Pick an answer first.")
    ok, why = q.grade(letter)
    return (_("✅ Right: {why}") if ok else _("❌ Not quite: {why}")).format(why=why)


def _answer_box(number: int, q: MultipleChoice) -> ipywidgets.VBox:
    """The live rendering: the question (Markdown turned into HTML, maths typeset), radio buttons, Check."""
    import ipywidgets as w
    import mistune

    prompt = w.HTMLMath(mistune.html(f"{_question(number)} {q.prompt_text()}"))
    radio = w.RadioButtons(
        options=[(f"({k}) {v}", k) for k, v in q.choice_texts().items()], value=None, layout=w.Layout(width="auto")
    )
    button = w.Button(description=_("Check"), button_style="primary", layout=w.Layout(flex="0 0 auto", width="auto"))
    result = w.HTMLMath()

    def on_click(_b: object) -> None:
        result.value = feedback(q, radio.value)

    button.on_click(on_click)
    return w.VBox([prompt, radio, w.HBox([button, result])])


def question_bundle(number: int, q: MultipleChoice) -> dict[str, Any]:
    """One question as one display bundle: the widget view, its Markdown twin, and a one-line text fallback."""
    bundle: dict[str, Any] = {
        "text/markdown": question_markdown(number, q),
        "text/plain": _("[Answer box for question {number}: run this cell in JupyterLab to answer it.]").format(
            number=number
        ),
    }
    try:
        box = _answer_box(number, q)
    except ImportError:  # pragma: no cover - ipywidgets and mistune are pinned
        return bundle
    bundle[WIDGET_VIEW] = {"version_major": 2, "version_minor": 0, "model_id": box.model_id}
    return bundle


def show_quiz(questions: str | Iterable[MultipleChoice]) -> None:
    """Display each question once: a widget in a live session, Markdown with the answer folded everywhere else.

    `show_quiz("ch01")` shows chapter 01's questions (course_utils/questions/ch01.py), in the current language;
    a list of `MultipleChoice` shows those (an instructor's own questions, written in a notebook)."""
    from IPython.display import display

    if isinstance(questions, str):
        questions = chapter_questions(questions)
    for i, q in enumerate(questions, 1):
        display(question_bundle(i, q), raw=True)
