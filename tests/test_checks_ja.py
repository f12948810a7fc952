"""The exercises' checks speak Japanese when asked (issue 15): the catalog of the domain `checks`.

Every check module is imported in English (the test session's language); `i18n.using("ja")` must still switch what
the checks print, because each text is translated where it is shown, never at import. For each exercise:

* a blank function (`raise NotImplementedError()`) gets the Japanese "not implemented yet" line;
* one named mistake gets its hint as the catalog's msgstr, not the English;
* a passing output gets the Japanese ✅ verdict, and each question's right answer its Japanese explanation;
* every text a check defines (hints, named mistakes, forbidden-call hints, cases' names, questions) is in the
  catalog with a translation, so no English is left when the language is Japanese.
"""

from __future__ import annotations

import pickle
import re

import pytest
from babel.messages.pofile import read_po

from course_utils import i18n
from course_utils.checks import all_exercises, find_question
from course_utils.checks.core import Joined, Message, shown, upper_bound

PO = i18n.LOCALE_DIR / "ja" / "LC_MESSAGES" / "checks.po"
EXERCISES = all_exercises()
# msgids whose Japanese is the same text on purpose: the name of a diagram, as the Japanese notebook writes it
SAME_IN_BOTH = {"Norm {letter}"}


@pytest.fixture(scope="module")
def po() -> dict:
    with PO.open("rb") as f:
        return {m.id: m.string for m in read_po(f) if m.id}


def _ids(exercises):
    return [e.id for e in exercises]


def _blank(*args, **kwargs):
    raise NotImplementedError()


def _function_checks(exercise):
    return [item.check for item in exercise.items() if item.kind == "function"]


def _questions(exercise):
    return [item.check for item in exercise.items() if item.kind == "choice"]


def _texts(exercise):
    """Every text the exercise's checks and questions define for a learner to read."""
    for check in _function_checks(exercise):
        yield from (check.hint, check.nan_hint, check.in_place_hint, *check.mistakes)
        if check.forbidden is not None:
            yield check.forbidden.hint
        yield from (case.name for case in check.cases(0))
    for q in _questions(exercise):
        yield from (q.prompt, *q.choices.values(), q.explanation, *q.wrong_hints.values())


def _msgids(text):
    """The catalog's msgids behind a text: a Message's own and those of its str fields, or the text itself."""
    if isinstance(text, Message):
        yield text.msgid
        for value in text.fields.values():
            if isinstance(value, str):
                yield from _msgids(value)
    elif isinstance(text, Joined):
        for part in text.parts:
            yield from _msgids(part)
    elif re.search(r"[A-Za-z]{2}", text):  # words, not a bare number or symbol
        yield text


@pytest.mark.parametrize("exercise", EXERCISES, ids=_ids(EXERCISES))
def test_every_text_of_the_checks_is_translated(exercise, po):
    missing, untranslated = [], []
    for text in _texts(exercise):
        for msgid in _msgids(text):
            if msgid not in po:
                missing.append(msgid)
            elif not po[msgid] or (po[msgid] == msgid and msgid not in SAME_IN_BOTH):
                untranslated.append(msgid)
        with i18n.using("ja"):
            if re.search(r"[A-Za-z]{3}", str(text)) and shown(text) == str(text):
                untranslated.append(str(text))
    assert missing == [], "run `python tools/catalog.py --domain checks`"
    assert untranslated == []


@pytest.mark.parametrize("exercise", EXERCISES, ids=_ids(EXERCISES))
def test_a_blank_function_is_not_implemented_yet_in_japanese(exercise, po, capsys):
    msgid = (
        "⏳ {name}: not implemented yet. "
        "Replace `raise NotImplementedError()` with your code, then run this cell again."
    )
    for check in _function_checks(exercise):
        with i18n.using("ja"):
            report = check(_blank)
        printed = capsys.readouterr().out.strip()
        assert report.status == "not-implemented"
        assert printed == po[msgid].format(name=check.name)
        assert "まだ実装されていません" in printed and "not implemented" not in printed
        assert report.text() == msgid.format(name=check.name)  # back in English outside the block
    for q in _questions(exercise):
        with i18n.using("ja"):
            text = q.evaluate(_blank).text()
        assert text == po[msgid].format(name=q.id)


def _plain_mistake(exercise):
    """The first named mistake of the exercise whose hint is a plain msgid, with its check."""
    for check in _function_checks(exercise):
        for hint, wrong in check.mistakes.items():
            if not isinstance(hint, Message):
                return check, hint, wrong
    raise AssertionError(f"{exercise.id} names no mistake")


@pytest.mark.parametrize("exercise", EXERCISES, ids=_ids(EXERCISES))
def test_a_named_mistake_gets_its_japanese_hint(exercise, po):
    check, hint, wrong = _plain_mistake(exercise)
    report = check.evaluate(wrong)  # judged in English ...
    assert report.hint == hint, f"{check.name}: the mistake is not named by its own hint"
    english = report.text()
    with i18n.using("ja"):  # ... and shown in Japanese
        japanese = report.text()
    assert po[hint] and po[hint] != hint
    assert po[hint] in japanese and hint not in japanese
    assert hint in english and po[hint] not in english
    assert "ヒント：" in japanese and "Hint:" not in japanese


def _right_output(case):
    """The reference's output for a case, in the dtype a half-precision case asks for."""
    dtype = getattr(case, "dtype", None)
    return case.expected.to(dtype) if dtype is not None else case.expected


@pytest.mark.parametrize("exercise", EXERCISES, ids=_ids(EXERCISES))
def test_a_passing_output_gets_the_japanese_verdict(exercise, po):
    for check in _function_checks(exercise):
        # the reference's own outputs, judged as the grader judges a kernel's answer
        cases = check.cases(0)
        report = check.report([check.judge_case(case, _right_output(case), case.args) for case in cases])
        assert report.passed, check.name
        with i18n.using("ja"):
            text = report.text()
        msgid = "✅ {name}: all {n} cases match the reference (max abs error {error}, tolerance {tol:.0e})"
        if len(cases) == 1:
            msgid = "✅ {name}: the one case matches the reference (max abs error {error}, tolerance {tol:.0e})"
        with i18n.using("ja"):
            error = shown(upper_bound(report.max_error))
        tol = max(c.tolerance for c in report.cases)
        assert text == po[msgid].format(name=check.name, n=len(cases), error=error, tol=tol)
        assert text.startswith(f"✅ {check.name}：") and "参照実装と一致" in text
        assert report.text().startswith(f"✅ {check.name}: ")  # English outside the block


@pytest.mark.parametrize("exercise", EXERCISES, ids=_ids(EXERCISES))
def test_questions_answer_in_japanese(exercise, po, capsys):
    for q in _questions(exercise):
        with i18n.using("ja"):
            right = find_question(q.id)(q.answer)
            wrong_letter = next(letter for letter in q.choices if letter != q.answer)
            find_question(q.id)(wrong_letter)
            ok, why = q.grade(wrong_letter)
            assert q.prompt_text() == po[q.prompt]
            assert q.choice_texts() == {k: po[v] for k, v in q.choices.items()}
            assert q.explanation_text() == po[q.explanation]
        right_line, wrong_line = capsys.readouterr().out.strip().split("\n")
        assert right.passed
        assert right_line == po["✅ {id}: correct. {why}"].format(id=q.id, why=po[q.explanation])
        assert wrong_line == po["❌ {id}: not quite. {why}"].format(id=q.id, why=po[q.wrong_hints[wrong_letter]])
        assert not ok and why == po[q.wrong_hints[wrong_letter]]
        assert q.grade(wrong_letter) == (False, q.wrong_hints[wrong_letter])  # English again


@pytest.mark.parametrize("exercise", EXERCISES, ids=_ids(EXERCISES))
def test_a_wrong_choice_is_not_a_case_against_a_reference(exercise, po):
    """What the grader's feedback shows for a wrong choice (the report's text): the chosen answer is not the right
    one, then the hint for that answer, once; no "cases" and no "reference implementation", which a choice has not."""
    for q in _questions(exercise):
        for letter in [c for c in q.choices if c != q.answer] + ["z"]:
            report = q.judge_answer(letter)
            english = report.text()
            with i18n.using("ja"):
                japanese = report.text()
                hint = shown(report.hint)
            assert english == f"❌ {q.id}: the chosen answer is not the right one\n   Hint: {report.hint}"
            verdict = po["❌ {name}: {message}"].format(name=q.id, message=po["the chosen answer is not the right one"])
            assert japanese == verdict + "\n   " + po["Hint: {hint}"].format(hint=hint)
            assert japanese.startswith(f"❌ {q.id}：選んだ答えは正解ではありません\n   ヒント：")
            assert english.count(str(report.hint)) == 1 and japanese.count(hint) == 1
            assert "reference" not in english and "case" not in english
            assert "参照実装" not in japanese and "ケース" not in japanese and _no_english_sentence(hint)
        assert q.judge_answer(q.answer).text().startswith(f"✅ {q.id}: correct: ")


def _no_english_sentence(text: str) -> bool:
    """A hint shown in Japanese: no English sentence left in it (a value such as 'z' or a formula may remain)."""
    return not re.search(r"[A-Za-z]{4,} [A-Za-z]{4,}", text)


def test_case_lines_and_notes_are_translated_where_shown(po):
    """A failed case's name and note, the error's bound, and an exception's report all switch language."""
    from course_utils.checks import ex01

    report = ex01.LAYER_NORM_CHECK.evaluate(lambda x, gamma=None, beta=None, eps=1e-5: x.sum())
    english = report.text()
    with i18n.using("ja"):
        japanese = report.text()
    note = report.cases[0].note
    assert isinstance(note, Message) and str(note).startswith("returned shape ")
    assert str(note) in english and str(note) not in japanese
    assert po["the seed's vector [4, 6, 2, 8]"] in japanese
    assert po["✗ {case}: {note}"].split("{")[0] in japanese

    raised = ex01.LAYER_NORM_CHECK.evaluate(lambda *args: 1 / 0)
    with i18n.using("ja"):
        assert "ZeroDivisionError: division by zero が発生しました（ケース：" in raised.text()
    assert "raised ZeroDivisionError: division by zero (on case: " in raised.text()


def test_messages_stay_english_data():
    """A Message is its English text (what the checks compare and store), pickles, and formats in the language."""
    m = upper_bound(2.4e-7)
    assert m == "below 1e-06" and isinstance(m, str)
    assert pickle.loads(pickle.dumps(m)) == m and pickle.loads(pickle.dumps(m)).msgid == m.msgid
    assert f"{m}" == "below 1e-06"
    with i18n.using("ja"):
        assert f"{m}" == "1e-06 未満" and str(m) == "below 1e-06"
        assert shown("") == ""  # never the catalog's header
