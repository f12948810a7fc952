"""Check questions at the end of each chapter: multiple choice with explanations.

`show_quiz(questions)` renders every question as Markdown with the answer folded in a
<details> block (readable in any static rendering), and, in a live session, radio buttons with a
"Check" button that explains why an answer is right or wrong.
"""

from __future__ import annotations

from .checks import MultipleChoice

__all__ = ["MultipleChoice", "question_markdown", "show_quiz"]


def question_markdown(number: int, q: MultipleChoice) -> str:
    choices = "\n".join(f"- **({k})** {v}" for k, v in q.choices.items())
    return (
        f"**Question {number}.** {q.prompt}\n\n{choices}\n\n"
        f"<details><summary>Show the answer</summary>\n\n**({q.answer})**: {q.explanation}\n\n</details>"
    )


def feedback(q: MultipleChoice, letter) -> str:
    if letter is None:
        return "Pick an answer first."
    ok, why = q.grade(letter)
    return ("✅ Right: " if ok else "❌ Not quite: ") + why


def show_quiz(questions) -> None:
    """Display the questions: static Markdown, plus an interactive answer box per question."""
    from IPython.display import Markdown, display

    for i, q in enumerate(questions, 1):
        display(Markdown(question_markdown(i, q)))
        try:
            import ipywidgets as w
        except ImportError:  # pragma: no cover - ipywidgets is pinned
            continue
        from .widgets import widget_bundle

        radio = w.RadioButtons(
            options=[(f"({k}) {v}", k) for k, v in q.choices.items()], value=None, layout=w.Layout(width="auto")
        )
        button = w.Button(description="Check", button_style="primary")
        result = w.HTML()

        def on_click(_b, q=q, radio=radio, result=result):
            result.value = feedback(q, radio.value)

        button.on_click(on_click)
        box = w.VBox([radio, w.HBox([button, result])])
        display(
            widget_bundle(box, f"[Answer box for question {i}: run this cell in JupyterLab to answer it.]"), raw=True
        )
