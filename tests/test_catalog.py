"""The message catalogs of course_utils (issue 15): complete, compiled, faithful, and actually used.

* Every domain's `.po` file have a Japanese msgstr for every msgid of the code, nothing fuzzy or left over, and
  their committed `.mo` equals the compiled `.po` (tools/catalog.py --check, run here through its functions).
* Every msgstr keeps its msgid's `{placeholders}` (with their format specs), numbers, inline code spans, symbols
  and English names, starts with the same Markdown marker, and uses no form the glossary forbids.
* `i18n.using("ja")` switches what is shown at render time, although the modules were imported in English: the
  quiz's button and feedback, a figure's title (drawn without missing glyphs), the grader's feedback file.
* The language rules: set_language > COURSE_LANG > a `.course_lang` marker above the working folder > the notebook's
  own (its first cell's COURSE_NOTEBOOK_LANG: tests/test_first_cell.py) > English, and an unknown language is refused.
* The catalog tool itself fails on an out-of-date catalog (a tiny package in tmp_path).
"""

from __future__ import annotations

import io
import re
import shutil
import sys
import warnings
from collections import Counter

import pytest
import yaml

from course_utils import i18n

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import catalog

GLOSSARY = ROOT / "i18n" / "ja" / "glossary.yaml"
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
CODE = re.compile(r"`[^`\n]+`")
SYMBOLS = "✅❌⏳⏹✓✗γβεμστℓ√±→²|$"
MARKDOWN_START = re.compile(r"^(#+ |- |\*\*|\| |\[)")


def _messages(domain: str):
    po = catalog.po_path(domain)
    if not po.exists():
        if domain == "checks":
            pytest.skip(
                "course_utils/locale/ja/LC_MESSAGES/checks.po does not exist yet: helper 'checks' writes it "
                "(python tools/catalog.py --domain checks); the domain course_utils is tested without it"
            )
        pytest.fail(f"{po.relative_to(ROOT)} is missing: run `python tools/catalog.py`")
    return [m for m in catalog.read_catalog(po) if m.id]


def _pairs(domain: str):
    """(English, Japanese) for every form of every message (a plural message gives one pair per form)."""
    for m in _messages(domain):
        ids = m.id if isinstance(m.id, (list, tuple)) else [m.id]
        strings = m.string if isinstance(m.string, (list, tuple)) else [m.string]
        for k, ja in enumerate(strings):
            yield ids[min(k, len(ids) - 1)], ja


# ------------------------------------------------------------------------------------------------------
# the catalogs
# ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("domain", catalog.DOMAINS)
def test_catalog_is_complete_and_compiled(domain):
    _messages(domain)  # skips the checks domain until it exists
    assert catalog.problems(domain) == []


@pytest.mark.parametrize("domain", catalog.DOMAINS)
def test_domains_split_the_package(domain):
    files = catalog.sources(domain)
    assert files, f"no source files in domain {domain}"
    others = [p for d in catalog.DOMAINS if d != domain for p in catalog.sources(d)]
    assert not set(files) & set(others)
    assert (ROOT / "course_utils" / "quiz.py" in files) == (domain == "course_utils")
    assert (ROOT / "course_utils" / "questions" / "ch01.py" in files) == (domain == "questions")


@pytest.mark.parametrize("domain", catalog.DOMAINS)
def test_translations_keep_placeholders_numbers_code_and_symbols(domain):
    problems = []
    for en, ja in _pairs(domain):
        holders_en, holders_ja = PLACEHOLDER.findall(en), PLACEHOLDER.findall(ja)
        if Counter(holders_en) != Counter(holders_ja):
            problems.append(f"{en!r}: placeholders {holders_en} became {holders_ja}")
        bare_en, bare_ja = PLACEHOLDER.sub(" ", en), PLACEHOLDER.sub(" ", ja)
        if Counter(NUMBER.findall(bare_en)) != Counter(NUMBER.findall(bare_ja)):
            problems.append(f"{en!r}: numbers {NUMBER.findall(bare_en)} became {NUMBER.findall(bare_ja)}")
        if Counter(CODE.findall(en)) != Counter(CODE.findall(ja)):
            problems.append(f"{en!r}: inline code {CODE.findall(en)} became {CODE.findall(ja)}")
        for symbol in SYMBOLS:
            if symbol_count(en, symbol) != ja.count(symbol):
                problems.append(f"{en!r}: {symbol!r} appears {en.count(symbol)} times, {ja.count(symbol)} in {ja!r}")
        start_en, start_ja = MARKDOWN_START.match(en), MARKDOWN_START.match(ja)
        if (start_en and start_en.group(1)) != (start_ja and start_ja.group(1)):
            problems.append(f"{en!r}: starts with a different Markdown marker in {ja!r}")
        if en.count("\n") != ja.count("\n"):
            problems.append(f"{en!r}: {en.count(chr(10))} line breaks, {ja.count(chr(10))} in {ja!r}")
    assert problems == []


def symbol_count(en: str, symbol: str) -> int:
    """How often the Japanese must show `symbol`: as often as the English does, and an English "epsilon" is an ε
    there too (machine epsilon is マシンε, as chapter 02 writes it; the glossary keeps no katakana for it)."""
    return en.count(symbol) + (en.count("epsilon") if symbol == "ε" else 0)


def test_placeholder_check_can_fail():
    """The comparisons above catch a lost placeholder, a changed number and a translated code span."""
    en, ja = "`{function}` did not return within {seconds} s after 2 calls", "{function} が 3 回で返りませんでした"
    assert Counter(PLACEHOLDER.findall(en)) != Counter(PLACEHOLDER.findall(ja))
    assert Counter(NUMBER.findall(PLACEHOLDER.sub(" ", en))) != Counter(NUMBER.findall(PLACEHOLDER.sub(" ", ja)))
    assert Counter(CODE.findall(en)) != Counter(CODE.findall(ja))
    assert symbol_count("ε is the machine epsilon", "ε") == 2 and symbol_count("no symbol here", "ε") == 0


def _glossary():
    return yaml.safe_load(GLOSSARY.read_text(encoding="utf-8"))


@pytest.mark.parametrize("domain", catalog.DOMAINS)
def test_no_form_the_glossary_forbids(domain):
    terms = _glossary()["terms"]
    found = [
        f"{ja!r} uses {pattern!r}, forbidden for {term['en']!r} (use {term['ja']!r})"
        for en, ja in _pairs(domain)
        for term in terms
        for pattern in term.get("forbidden") or []
        if re.search(pattern, ja)
    ]
    assert found == []


@pytest.mark.parametrize("domain", catalog.DOMAINS)
def test_english_names_stay_english(domain):
    names = [str(n) for n in _glossary()["keep_english"]]
    lost = [
        f"{en!r}: {name!r} is missing from {ja!r}"
        for en, ja in _pairs(domain)
        for name in names
        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", en) and name not in ja
    ]
    assert lost == []


# ------------------------------------------------------------------------------------------------------
# what a learner sees, switched at render time
# ------------------------------------------------------------------------------------------------------
def _question():
    from course_utils.quiz import MultipleChoice

    return MultipleChoice(
        "ex00.q", "Which one divides by n?", {"a": "the biased variance", "b": "the unbiased variance"}, "a", "It is."
    )


def test_quiz_speaks_japanese_when_asked():
    from course_utils import quiz

    q = _question()
    with i18n.using("ja"):
        assert quiz.feedback(q, None) == "先に答えを選んでください。"
        assert quiz.feedback(q, "a").startswith("✅ 正解です。")
        assert quiz.feedback(q, "b").startswith("❌ まだ違います。")
        markdown = quiz.question_markdown(1, q)
        assert markdown.startswith("**問1.** Which one divides by n?")
        assert "<summary>答えを見る</summary>" in markdown
        bundle = quiz.question_bundle(2, q)
        assert bundle["text/plain"].startswith("[問2の解答欄")
        box = quiz._answer_box(1, q)
        button = box.children[2].children[0]
        assert button.description == "答え合わせ"
    # and English again outside the block, as the stored notebooks show it
    assert quiz.feedback(q, None) == "Pick an answer first."
    assert quiz.question_markdown(1, q).startswith("**Question 1.** ")
    assert quiz._answer_box(1, q).children[2].children[0].description == "Check"


def test_figure_title_in_japanese_without_missing_glyphs():
    import matplotlib
    import matplotlib.pyplot as plt

    from course_utils import figures, stability_plots

    assert figures.use_japanese_fallback(), "matplotlib-fontja is not installed: Japanese figures would show boxes"
    assert matplotlib.rcParams["font.family"][0] == "DejaVu Sans"  # English figures are drawn as before
    with i18n.using("ja"):
        fig = stability_plots.softcap_curves()
    try:
        ax = fig.axes[0]
        assert ax.get_title() == "softcap：小さなロジットではほぼ恒等写像、±τ を超えない"
        assert ax.get_xlabel() == "生のロジット s"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert figures.figure_problems(fig) == []
        missing = [str(w.message) for w in caught if "missing from" in str(w.message)]
        assert missing == [], missing
    finally:
        plt.close(fig)
    english = stability_plots.softcap_curves()
    try:
        assert english.axes[0].get_title() == "Softcapping: nearly the identity for small logits, never beyond ±τ"
    finally:
        plt.close(english)


def test_bold_text_logs_nothing(caplog):
    """IPAexGothic has no bold: matplotlib's warning about it would land on stderr, in the notebooks' outputs."""
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    from course_utils import recipe_cards

    font_manager.fontManager._findfont_cached.cache_clear()  # matplotlib warns once per font it looks up
    with caplog.at_level("WARNING", logger="matplotlib"):
        for lang in ("en", "ja"):
            with i18n.using(lang):
                fig = recipe_cards.draw_recipe_cards()  # bold titles
            fig.canvas.draw()
            plt.close(fig)
    assert [r.getMessage() for r in caplog.records] == []


def _graded_row():
    from course_utils.grading.run import ItemResult, Result

    return Result.from_json(
        {
            "path": "submissions/alice/ex01_layernorm.ipynb",
            "learner": "alice",
            "exercise": "ex01_layernorm",
            "status": "graded",
            "reason": "all checks passed",
            "sha256": "0" * 64,
            "items": [
                ItemResult("ex01.variance", points=1.0, earned=1.0, status="passed", text="✅ variance").__dict__
            ],
            "total": 1.0,
            "max": 1.0,
            "free_text": [{"prompt": "Why n?", "answer": "Because."}],
        }
    )


def test_grader_feedback_file_in_japanese(tmp_path):
    from course_utils.grading import cli

    with i18n.using("ja"):
        assert cli.write_feedback([_graded_row()], tmp_path / "ja") == []
    text = (tmp_path / "ja" / "alice.md").read_text(encoding="utf-8")
    assert text.startswith("# aliceさんへのフィードバック\n")
    assert "## ex01_layernorm：1 / 1点" in text
    assert "| チェック | 得点 | 判定 |" in text
    assert "### 記述式の解答（講師が読みます）" in text
    assert (tmp_path / "ja" / "_free_text_answers.md").read_text(encoding="utf-8").startswith("# 記述式の解答")
    cli.write_feedback([_graded_row()], tmp_path / "en")
    assert (tmp_path / "en" / "alice.md").read_text(encoding="utf-8").startswith("# Feedback for alice\n")


def test_grader_writes_japanese_feedback_end_to_end(tmp_path):
    """`--lang ja` on a real submission of the Japanese edition (ja/solutions/ex01, its solved notebook): the
    feedback file, the CSV's reason and the summary."""
    import csv
    import subprocess

    learner = tmp_path / "submissions" / "alice"
    learner.mkdir(parents=True)
    shutil.copy(ROOT / "ja" / "solutions" / "ex01_layernorm.ipynb", learner)
    out = tmp_path / "grades.csv"
    command = [sys.executable, "-m", "course_utils.grade", str(learner.parent), "--out", str(out), "--lang", "ja"]
    proc = subprocess.run(command + ["--jobs", "1"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    feedback = (tmp_path / "feedback" / "alice.md").read_text(encoding="utf-8")
    assert feedback.startswith("# aliceさんへのフィードバック\n")
    assert "- 状態：**採点済み**：すべてのチェックに合格" in feedback  # the status in words, not the CSV's code
    with open(out, encoding="utf-8") as f:
        assert [row["reason"] for row in csv.DictReader(f)] == ["すべてのチェックに合格"]
    assert "提出物1件：採点済み1件" in proc.stdout


def test_grader_lang_flag(monkeypatch):
    from course_utils.grading import cli, run

    assert cli._parser().parse_args(["x.ipynb"]).lang == "en"
    assert cli._parser().parse_args(["x.ipynb", "--lang", "ja"]).lang == "ja"
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["x.ipynb", "--lang", "fr"])
    assert "--lang" in cli._parser().format_help()
    seen = {}

    def fake_main(args, argv):
        seen["language"] = i18n.language()
        return 0

    monkeypatch.setattr(cli, "_main", fake_main)
    assert cli.main(["x.ipynb", "--lang", "ja"]) == 0
    assert seen["language"] == "ja"
    assert run.kernel_env("ja")["COURSE_LANG"] == "ja"
    assert run.kernel_env()["COURSE_LANG"] == "en"


# ------------------------------------------------------------------------------------------------------
# the language rules
# ------------------------------------------------------------------------------------------------------
@pytest.fixture
def automatic(monkeypatch):
    """No language chosen in code or in the environment: the marker rule decides."""
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.delenv(i18n.NOTEBOOK_ENV, raising=False)
    before = i18n._chosen
    i18n.set_language(None)
    yield monkeypatch
    i18n._chosen = before


def test_marker_file_above_the_folder_chooses_japanese(tmp_path, automatic):
    (tmp_path / "ja").mkdir()
    (tmp_path / "ja" / i18n.MARKER).write_text("ja\n", encoding="utf-8")
    (tmp_path / "ja" / "chapters").mkdir()
    automatic.chdir(tmp_path / "ja" / "chapters")
    assert i18n.language() == "ja"
    assert i18n._("Check") == "答え合わせ"
    automatic.chdir(tmp_path)
    assert i18n.language() == "en"
    assert i18n._("Check") == "Check"


def test_course_lang_beats_the_marker_and_set_language_beats_both(tmp_path, automatic):
    (tmp_path / i18n.MARKER).write_text("ja", encoding="utf-8")
    automatic.chdir(tmp_path)
    automatic.setenv("COURSE_LANG", "en")
    assert i18n.language() == "en"
    automatic.setenv("COURSE_LANG", "ja")
    automatic.chdir(tmp_path.parent)
    assert i18n.language() == "ja"
    with i18n.using("en"):
        assert i18n.language() == "en"
        assert i18n._("Check") == "Check"
    assert i18n.language() == "ja"


def test_unknown_language_is_refused(tmp_path, automatic):
    with pytest.raises(ValueError, match="unknown course language"):
        i18n.set_language("fr")
    with pytest.raises(ValueError):
        with i18n.using("de"):
            pass
    automatic.setenv("COURSE_LANG", "fr")
    with pytest.raises(ValueError, match="unknown course language"):
        i18n.language()
    automatic.delenv("COURSE_LANG")
    (tmp_path / i18n.MARKER).write_text("klingon", encoding="utf-8")
    automatic.chdir(tmp_path)
    with pytest.raises(ValueError, match="unknown course language"):
        i18n.language()


# ------------------------------------------------------------------------------------------------------
# the tool fails on an out-of-date catalog
# ------------------------------------------------------------------------------------------------------
def test_catalog_tool_finds_every_kind_of_staleness(tmp_path, monkeypatch):
    package = tmp_path / "course_utils"
    (package / "checks").mkdir(parents=True)
    (package / "checks" / "__init__.py").write_text("", encoding="utf-8")
    module = package / "m.py"
    module.write_text('from .i18n import _\n\nprint(_("Hello {name}").format(name="x"))\n', encoding="utf-8")
    monkeypatch.setattr(catalog, "ROOT", tmp_path)
    monkeypatch.setattr(catalog, "PACKAGE", package)
    monkeypatch.setattr(catalog, "LOCALE_DIR", package / "locale")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    domain = "course_utils"

    assert any("is missing" in p for p in catalog.problems(domain))
    quiet = io.StringIO()
    assert catalog.build(domain, out=quiet) == 1  # one msgid to translate
    assert any("'Hello {name}' has no translation" in p for p in catalog.problems(domain))

    po = catalog.po_path(domain)

    def edit(string, fuzzy=False):
        translated = catalog.read_catalog(po)
        translated["Hello {name}"].string = string
        translated["Hello {name}"].flags = {"python-brace-format", "fuzzy"} if fuzzy else set()
        po.write_bytes(catalog.po_bytes(translated))

    edit("こんにちは、{name}")
    assert any("differs from compiling" in p for p in catalog.problems(domain))  # the .mo is older than the .po
    catalog.build(domain, out=quiet)
    assert catalog.problems(domain) == []
    edit("こんにちは、{name}", fuzzy=True)
    catalog.build(domain, out=quiet)
    assert any("fuzzy" in p for p in catalog.problems(domain))
    edit("こんにちは、{name}")
    catalog.build(domain, out=quiet)

    module.write_text('from .i18n import _\n\nprint(_("Goodbye"))\nprint(_(f"{1} apples"))\n', encoding="utf-8")
    found = catalog.problems(domain)
    assert any("no entry for 'Goodbye'" in p for p in found)
    assert any("'Hello {name}' is no longer in the code" in p for p in found)
    assert any("an f-string given to _()" in p for p in found)
    assert catalog.main(["--check", "--domain", domain]) == 1
