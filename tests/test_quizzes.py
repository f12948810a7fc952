"""Check questions that make a learner think: balanced options, and a reason for every option.

A quiz whose right answer is the longest option can be passed without reading the chapter (in the first
version of the course, 20 of the 23 chapter questions were such). These tests read every question the
course asks: the chapters' end-of-chapter questions (course_utils/questions/chNN.py, which each chapter shows
with `show_quiz("chNN")`) and the exercises' graded questions (the MultipleChoice objects in course_utils.checks).
"""

import importlib
import pkgutil
import re
from collections import Counter

import nbformat
import pytest

import course_utils.checks
from course_utils.checks import MultipleChoice
from course_utils.questions import chapter_questions

from conftest import ROOT

MAX_SHARE_LONGEST = 0.40  # the right answer may be the longest option in at most this share of questions
MAX_SHARE_PER_RANK = 0.40  # nor may any one length rank (longest, second longest, ...) hold it more often
MIN_REASON_CHARS = 40  # a reason that teaches is a sentence, not "wrong" or "no"


def exercise_questions():
    found = {}
    for info in pkgutil.iter_modules(course_utils.checks.__path__):
        module = importlib.import_module(f"course_utils.checks.{info.name}")
        for value in vars(module).values():
            items = value if isinstance(value, list | tuple) else [value]
            for q in items:
                if isinstance(q, MultipleChoice):
                    found[q.id] = q
    return list(found.values())


CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
QUIZ_CALL = re.compile(r'^show_quiz\("(ch\d\d)"\)$', re.M)


def quiz_calls(path) -> list[str]:
    """The chapters a notebook's `show_quiz("chNN")` calls show, in order."""
    cells = nbformat.read(path, as_version=4).cells
    return [m for c in cells if c.cell_type == "code" for m in QUIZ_CALL.findall(c.source)]


CHAPTER_QUESTIONS = {p.stem: [q for ch in quiz_calls(p) for q in chapter_questions(ch)] for p in CHAPTERS}
ALL = [q for qs in CHAPTER_QUESTIONS.values() for q in qs] + exercise_questions()


def test_every_chapter_shows_its_own_questions_once():
    """Chapter NN's notebook ends with `show_quiz("chNN")`, and every question's id names its chapter."""
    for path in CHAPTERS[1:]:  # the welcome asks none
        chapter = f"ch{path.name[:2]}"
        assert quiz_calls(path) == [chapter], f"{path.name}: show_quiz({chapter!r}) once"
        assert all(q.id.startswith(f"{chapter}.") for q in chapter_questions(chapter))
    assert quiz_calls(CHAPTERS[0]) == []
    with pytest.raises(ValueError, match="ch01"):
        chapter_questions("1")
    with pytest.raises(ValueError, match="no check questions"):
        chapter_questions("ch99")


def test_every_question_is_found():
    chapters_with_quiz = [name for name, qs in CHAPTER_QUESTIONS.items() if qs]
    assert len(chapters_with_quiz) >= len(CHAPTERS) - 1  # every chapter but the welcome asks questions
    assert sum(map(len, CHAPTER_QUESTIONS.values())) >= 20
    assert len(ALL) - sum(map(len, CHAPTER_QUESTIONS.values())) >= 5  # and every exercise asks at least one
    assert len({q.id for q in ALL}) == len(ALL), "question ids must be unique"


@pytest.mark.parametrize("q", ALL, ids=lambda q: q.id)
def test_every_option_has_a_reason_that_teaches(q):
    assert q.answer in q.choices
    assert len(q.choices) >= 3
    assert len(q.explanation) >= MIN_REASON_CHARS, f"{q.id}: explain why ({q.answer}) is right"
    wrong = set(q.choices) - {q.answer}
    assert set(q.wrong_hints) == wrong, f"{q.id}: a wrong_hints entry for each of {sorted(wrong)}"
    for letter, why in q.wrong_hints.items():
        assert len(why) >= MIN_REASON_CHARS, f"{q.id} ({letter}): say why this option is wrong, in a sentence"
        assert why != q.explanation
    texts = [" ".join(t.lower().split()) for t in q.choices.values()]
    assert len(set(texts)) == len(texts), f"{q.id}: two options say the same"


def longest_is_right(q) -> bool:
    lengths = {k: len(v) for k, v in q.choices.items()}
    return lengths[q.answer] == max(lengths.values())


def test_the_right_answer_is_not_given_away_by_its_length():
    longest = [q.id for q in ALL if longest_is_right(q)]
    share = len(longest) / len(ALL)
    print(f"right answer is the longest option in {len(longest)}/{len(ALL)} questions ({share:.0%})")
    assert share <= MAX_SHARE_LONGEST, f"the right answer is the longest option in {longest}"


def length_rank(q) -> int:
    """1 when the right answer is the longest option, 2 when one option is longer, and so on (ties share a rank)."""
    right = len(q.choices[q.answer])
    return 1 + sum(len(v) > right for v in q.choices.values())


def test_no_length_rank_gives_the_right_answer_away():
    """Avoiding "pick the longest" is not enough: if the answer is usually the second longest, that is the tell."""
    ranks = Counter(length_rank(q) for q in ALL)
    print(f"length rank of the right answer over {len(ALL)} questions: {dict(sorted(ranks.items()))}")
    rank, count = ranks.most_common(1)[0]
    assert count / len(ALL) <= MAX_SHARE_PER_RANK, f"the right answer has length rank {rank} in {count}/{len(ALL)}"


def test_the_right_answer_is_not_always_at_the_same_letter():
    letters = Counter(q.answer for q in ALL)
    assert len(letters) >= 3, letters
    assert max(letters.values()) / len(ALL) <= 0.5, letters
    for name, qs in CHAPTER_QUESTIONS.items():
        if len(qs) >= 3:
            assert len({q.answer for q in qs}) >= 2, f"{name}: every answer is ({qs[0].answer})"


def test_the_checks_catch_a_quiz_that_gives_itself_away():
    """The two measures above, on a made-up quiz that breaks them, so they cannot pass vacuously."""
    give_away = MultipleChoice(
        "demo.q",
        "?",
        {"a": "no", "b": "the right answer, explained at length so that it stands out", "c": "yes"},
        "b",
        "it is right because it is right, and this sentence is long enough.",
        {"a": "wrong"},
    )
    assert longest_is_right(give_away) and length_rank(give_away) == 1
    with pytest.raises(AssertionError):
        test_every_option_has_a_reason_that_teaches(give_away)


def test_a_question_is_one_output_with_a_live_and_a_static_rendering():
    """One bundle per question: the widget in JupyterLab, its Markdown twin where there is no widget (the stored
    file: `nbtools.strip_volatile` drops widget views), and the answer only after Check in the live one."""
    import nbformat

    from course_utils import quiz
    from course_utils.nbtools import WIDGET_VIEW, strip_volatile

    q = ALL[0]
    bundle = quiz.question_bundle(3, q)
    assert set(bundle) == {WIDGET_VIEW, "text/markdown", "text/plain"}
    assert bundle["text/markdown"].startswith("**Question 3.**") and "<details>" in bundle["text/markdown"]
    assert bundle["text/plain"].startswith("[Answer box for question 3")

    from ipywidgets.widgets.widget import _instances  # noqa: PLC2701 (ipywidgets 8's live widgets by model id: no public API)

    box = _instances[bundle[WIDGET_VIEW]["model_id"]]
    prompt, radio, (button, result) = box.children[0], box.children[1], box.children[2].children
    assert "Question 3." in prompt.value and q.explanation not in prompt.value  # the question, not the answer
    assert [value for _, value in radio.options] == list(q.choices) and result.value == ""
    wrong = next(k for k in q.choices if k != q.answer)
    radio.value = wrong
    button.click()
    assert result.value.startswith("❌") and q.wrong_hints[wrong] in result.value
    radio.value = q.answer
    button.click()
    assert result.value.startswith("✅")

    cell = nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("display_data", data=dict(bundle))])
    stored = strip_volatile(nbformat.v4.new_notebook(cells=[cell])).cells[0].outputs
    assert len(stored) == 1 and set(stored[0]["data"]) == {"text/markdown", "text/plain"}
