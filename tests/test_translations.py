"""The Japanese edition cannot drift from the English one.

Every English notebook and page has a translation file (i18n/ja/...yaml) whose entries carry the hash of the English
they were made from: a stale or missing entry fails here, as does a translation whose numbers, inline code, formulas,
code blocks or link targets differ from the English, or that uses a term the glossary forbids. The generated ja/
files must be what tools/translate.py builds from today's sources, and a Japanese code cell may differ from the
English one only inside the string literals its translation declares. The last tests prove, on a small repository
made in a temporary folder, that each of these failures is caught.
"""

import io
import json
import re
import sys
import tokenize

import nbformat
import pytest
import yaml

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import translate

SOURCES = translate.sources()


@pytest.fixture(scope="module")
def rules():
    return translate.glossary()


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: translate.rel(p))
def test_translation_is_complete_fresh_and_consistent(source, rules):
    report = translate.review(source, rules=rules)
    lines = [
        f"{kind}: {line}" for kind in ("missing", "stale", "orphans", "problems") for line in getattr(report, kind)
    ]
    assert not lines, (
        f"{len(lines)} problem(s); `python tools/translate.py todo {translate.rel(source)}`:\n" + "\n".join(lines[:25])
    )


def test_the_japanese_edition_is_built_from_todays_sources():
    assert translate.build(check=True) == [], "run `make translations` (python tools/translate.py build) and commit"


def _code_tokens(code: str) -> list:
    """The tokens of a cell with the text of its string literals blanked (so only code is compared)."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        name = tokenize.tok_name[tok.type]
        if tok.type == tokenize.STRING:
            out.append(("STRING", tok.string[: len(tok.string) - len(tok.string.lstrip("rbfuRBFU"))]))
        elif name == "FSTRING_MIDDLE":
            out.append(("FSTRING_MIDDLE", ""))
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            out.append((name, tok.string))
    return out


@pytest.mark.parametrize("source", translate.notebook_sources(), ids=lambda p: translate.rel(p))
def test_japanese_code_differs_only_in_declared_strings(source):
    target = ROOT / translate.target_of(translate.rel(source))
    english, japanese = nbformat.read(source, as_version=4), nbformat.read(target, as_version=4)
    assert [(c.cell_type, c.get("id")) for c in japanese.cells] == [(c.cell_type, c.get("id")) for c in english.cells]
    entries = translate.load_entries(source)
    for en, ja in zip(english.cells, japanese.cells):
        if en.cell_type != "code":
            continue
        strings = (entries.get(en.id) or {}).get("strings") or {}
        assert _code_tokens(ja.source) == _code_tokens(en.source), f"{en.id}: the code itself differs"
        undone = ja.source
        for en_text, ja_text in sorted(strings.items(), key=lambda kv: -len(kv[1])):
            undone = undone.replace(ja_text, en_text)
        assert undone == en.source, f"{en.id}: the Japanese cell differs beyond its declared strings"


def test_the_edition_is_marked_japanese():
    assert (ROOT / "ja" / ".course_lang").read_text(encoding="utf-8").strip() == "ja"
    for path in sorted((ROOT / "ja").rglob("*.ipynb")):
        edition = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("course_edition", {})
        assert edition.get("lang") == "ja", f"{path.relative_to(ROOT)} lacks metadata.course_edition.lang"


def test_glossary_is_usable_and_never_forbids_its_own_forms(rules):
    data = yaml.safe_load(translate.GLOSSARY.read_text(encoding="utf-8"))
    terms = data["terms"]
    assert len(terms) >= 30 and {"LayerNorm", "RMSNorm", "QK-Norm", "softmax"} <= set(data["keep_english"])
    preferred = [t["ja"] for t in terms]
    assert len(set(preferred)) == len(preferred), "one Japanese form per term"
    for term in terms:
        assert term["source"] in ("seed", "practice") and term["ja"].strip()
    for form in preferred:
        assert translate.forbidden_terms(form, rules) == [], f"the glossary forbids its own form {form!r}"
    for name in ("レイヤー正規化", "残差接続", "学習率", "ウォームアップ"):
        assert name in preferred


# ------------------------------------------------------------------------------------------------------------------
# the checks catch what they must: a small course in a temporary folder
# ------------------------------------------------------------------------------------------------------------------

MARKDOWN = "## 1. Four numbers\n\nTake $x = [4, 6, 2, 8]$: `layer_norm` gives 0.447 ([next](02_next.ipynb))."
CODE = 'print(f"mean of the result: {m:.3f}")\nlabel = "pre"'


@pytest.fixture
def course(tmp_path):
    (tmp_path / "chapters").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(MARKDOWN, id="c-md"), nbformat.v4.new_code_cell(CODE, id="c-code")]
    nbformat.write(nb, tmp_path / "chapters" / "01_x.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "chapters" / "02_next.ipynb")
    units = {u.key: u for u in translate.units(tmp_path / "chapters" / "01_x.ipynb")}
    entries = {
        "c-md": {
            "en": units["c-md"].hash,
            "ja": "## 1. 四つの数\n\n$x = [4, 6, 2, 8]$ では `layer_norm` が 0.447 を返します"
            "（[次へ](02_next.ipynb)）。",
        },
        "c-code": {"en": units["c-code"].hash, "strings": {"mean of the result: ": "結果の平均: "}},
    }
    (tmp_path / "i18n" / "ja" / "chapters").mkdir(parents=True)
    path = tmp_path / "i18n" / "ja" / "chapters" / "01_x.yaml"
    path.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    return tmp_path, path, entries


def _review(root):
    return translate.review(root / "chapters" / "01_x.ipynb", root, rules=[("レイヤー正規化", re.compile("層正規化"))])


def test_a_correct_translation_passes(course):
    root, _, _ = course
    report = _review(root)
    assert report.ok(), (report.missing, report.stale, report.problems)
    target, nb = translate.build_notebook(root / "chapters" / "01_x.ipynb", root)
    assert target == root / "ja" / "chapters" / "01_x.ipynb"
    assert nb.cells[1].source == 'print(f"結果の平均: {m:.3f}")\nlabel = "pre"'
    assert "[次へ](02_next.ipynb)" in nb.cells[0].source  # the Japanese chapter links the Japanese next chapter


def test_a_stale_translation_is_caught(course):
    root, _, _ = course
    nb = nbformat.read(root / "chapters" / "01_x.ipynb", as_version=4)
    nb.cells[0].source = MARKDOWN.replace("Take", "Now take")  # the English changed after the translation
    nbformat.write(nb, root / "chapters" / "01_x.ipynb")
    assert [s.split(":")[0] for s in _review(root).stale] == ["chapters/01_x.ipynb `c-md`"]


def test_a_missing_translation_and_an_orphan_are_caught(course):
    root, path, entries = course
    entries["c-gone"] = entries.pop("c-md")
    path.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    report = _review(root)
    assert report.missing == ["chapters/01_x.ipynb `c-md`"] and len(report.orphans) == 1


@pytest.mark.parametrize(
    "change, what",
    [
        (("0.447", "0.477"), "numbers"),  # a slip in a number
        (("$x = [4, 6, 2, 8]$", "$x = [4, 6, 8]$"), "formulas"),
        (("`layer_norm`", "`layernorm`"), "inline code"),
        (("(02_next.ipynb)", "(03_next.ipynb)"), "links"),
        (("四つの数", "4つの数"), "numbers"),  # "Four" must not become a new digit
        (("が 0.447", "が 層正規化の 0.447"), "forbidden term"),
    ],
)
def test_a_changed_number_formula_code_link_or_term_is_caught(course, change, what):
    root, path, entries = course
    entries["c-md"]["ja"] = entries["c-md"]["ja"].replace(*change)
    path.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    problems = _review(root).problems
    assert len(problems) == 1 and what in problems[0], problems


@pytest.mark.parametrize(
    "strings, what",
    [
        ({'label = "pre"': 'label = "前"'}, "outside a string literal"),  # code, not a string's text
        ({"mean of the result: {m:.3f}": "結果の平均: {m:.2f}"}, "placeholders differ"),
        ({"median": "中央値"}, "is not in the cell's code"),
    ],
)
def test_a_code_change_beyond_a_string_is_caught(course, strings, what):
    root, path, entries = course
    entries["c-code"]["strings"] = strings
    path.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    problems = _review(root).problems
    assert any(what in p for p in problems), problems


def test_links_are_rewritten_to_the_japanese_counterparts():
    text = "[ex](../exercises/ex01_layernorm.ipynb) [top](../README.md) [code](../course_utils/norms.py) [w](https://x.org)"
    assert translate.rewrite_links(text, "chapters/01.ipynb", "ja/chapters/01.ipynb") == (
        "[ex](../exercises/ex01_layernorm.ipynb) [top](../../README.ja.md) [code](../../course_utils/norms.py) "
        "[w](https://x.org)"
    )
    assert translate.rewrite_links("[c](chapters/00_welcome.ipynb)", "README.md", "README.ja.md") == (
        "[c](ja/chapters/00_welcome.ipynb)"
    )
    # a link whose text is code is a link like any other; code spans and code blocks are left as written
    text = "[`00_welcome`](chapters/00_welcome.ipynb) `[x](chapters/a.ipynb)`\n```\n[y](docs/grading.md)\n```\n"
    rewritten = text.replace("](chapters/00", "](ja/chapters/00")
    assert translate.rewrite_links(text, "README.md", "README.ja.md") == rewritten
    assert translate.rewrite_links("[`g`](../docs/grading.md)", "instructor/x.md", "ja/instructor/x.md") == (
        "[`g`](../docs/grading.md)"
    )
    assert translate.rewrite_links("[`n`](../docs/numerics.md)", "instructor/x.md", "ja/instructor/x.md") == (
        "[`n`](../../docs/numerics.md)"
    )


def test_pages_are_cut_at_headings_and_join_back():
    text = "intro\n# Title\n\nbody\n```\n# not a heading\n```\n## Title\nmore\n## Title\nend\n"
    sections = translate.page_sections(text)
    assert [k for k, _ in sections] == ["top", "title", "title-2", "title-3"]
    assert "".join(t for _, t in sections) == text
