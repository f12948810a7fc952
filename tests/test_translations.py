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
import unicodedata

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


# ------------------------------------------------------------------------------------------------------------------
# the style guide (i18n/ja/style.md) on every Japanese Markdown cell or section and every Japanese string literal
# ------------------------------------------------------------------------------------------------------------------

JA_CHAR = r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff々〆]"
JA_BEFORE = r"[\u3001\u3002\u300c-\u300f\uff08\uff1a\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff々〆]"  # or 、。「」（：
JA_NUMBER = r"(?:[-−+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?|\{\})"  # a number, or a {placeholder} of a string literal
STYLE_RULES = [  # (what style.md asks, the pattern of a relapse), on prose: code, formulas and links are left out
    (
        "no space between Japanese and a number: 統計量4個, 8個の演算子",
        re.compile(rf"{JA_BEFORE}(?: +{JA_NUMBER} *| *{JA_NUMBER} +){JA_CHAR}"),
    ),
    ("no space before %: 56%", re.compile(r"(?:\d|\{\}) +%")),
    ("seconds are 秒: 30秒, not 30 s", re.compile(r"(?:\d|\{\}) ?s(?![A-Za-z0-9_(])")),
    (
        "「、」「。」 in a Japanese sentence, not an ASCII comma or semicolon",
        re.compile(rf"{JA_CHAR} *[,;]|[,;] *{JA_CHAR}"),
    ),
    ("→ in a Japanese sentence, not ->", re.compile(rf"{JA_CHAR} *->|-> *{JA_CHAR}")),
    ("full-width （ ） around Japanese, not ( )", re.compile(rf"\([^()\n]*{JA_CHAR}[^()\n]*\)")),
    ("months in digits: 2024年3月, not 2024年三月", re.compile(r"[0-9]年[一二三四五六七八九十]+月")),
    ("half-width digits and 、。, never ０-９ ，．", re.compile(r"[０-９，．]")),
    ("no あなた / 私たち: address the learner without pronouns (「〜してみてください」)", re.compile(r"あなた|私たち")),
]
MARKDOWN_STYLE_RULES = [  # printed labels of code cells keep the program-output form 「平均: 0.5」
    (
        "「：」 in a Japanese sentence, not an ASCII colon",
        re.compile(rf"{JA_CHAR} *:(?!//)|(?<![A-Za-z0-9/]):[ \t]*{JA_CHAR}"),
    ),
    ("「**(c)**：」 after a bold option label, not an ASCII colon", re.compile(r"\*\*\([a-z0-9]\)\*\*:")),
]
EMPHASIS = re.compile(r"(?<![*A-Za-z0-9_])\*(?!\s)[^*\n]+?(?<!\s)\*(?![*A-Za-z0-9_])")
JA_ITALIC = re.compile(rf"(?<!\*)\*(?![\s*])[^*\n]*?{JA_CHAR}[^*\n]*?(?<![\s*])\*(?!\*)")  # *…* around Japanese
CALQUES = [  # word-for-word translations the style guide's 逐語訳ではなく rules out, with what to write instead
    ("黙って", "エラーも出さずに / 気づかないうちに"),
    ("で割った大きさ", "約半分に / 2分の1に"),
    ("倍小さ", "N分の1に"),
    ("どのビットも", "まったく"),
    ("声の大きい", "突出した"),
    ("気づかれずに", "見過ごされやすい"),
    ("連鎖の全サイズ", "テンソル全体を扱う演算子"),
]


def _is_punctuation(ch: str) -> bool:
    """CommonMark's punctuation: Unicode P* and S* categories (「（）」、。 included)."""
    return unicodedata.category(ch)[0] in "PS"


def unrendered_bold(prose: str) -> list[str]:
    """`**` pairs that CommonMark will not render as bold, as happens after 「）」 in Japanese.

    An opening `**` must be left-flanking and a closing one right-flanking: `**正規化（LayerNorm）**から` fails,
    because the closing run follows punctuation （）） and precedes a letter （か）, so it cannot close."""
    found = []
    runs = [m for m in re.finditer(r"(?<!\*)\*\*(?!\*)", prose)]
    for opening, closing in zip(runs[::2], runs[1::2]):
        for run, side in ((opening, "opening"), (closing, "closing")):
            before = prose[run.start() - 1] if run.start() else " "
            after = prose[run.end()] if run.end() < len(prose) else " "
            if side == "opening":
                ok = not after.isspace() and (not _is_punctuation(after) or before.isspace() or _is_punctuation(before))
            else:
                ok = not before.isspace() and (not _is_punctuation(before) or after.isspace() or _is_punctuation(after))
            if not ok:
                text = prose[max(0, opening.start() - 8) : closing.end() + 8]
                found.append(f"bold that does not render ({side} ** next to punctuation): {text!r}")
    return found


def _prose(markdown: str) -> str:
    """The prose of a Markdown text: code blocks and spans, formulas, link targets, tags and URLs left out."""
    text = translate.FENCE.sub(" ⟦⟧ ", markdown)
    text = translate.CODE_SPAN.sub("⟦⟧", text)
    text = translate.MATH.sub("⟦⟧", text)
    text = re.sub(r"\]\(\s*<?[^)\s>]+>?[^)]*\)", "]", text)
    return translate.TAG.sub(" ", translate.URL.sub(" ", text))


def style_problems(japanese: str, kind: str, english: str | None = None) -> list[str]:
    """What style.md's rules find in one Japanese text. kind: "markdown" (a cell or a page section), "literal" (the
    text of a Japanese string literal of a code cell, as the built notebook has it) or "fragment" (one `strings:`
    value, checked against its English fragment: plain text must not gain *asterisks* the English does not have)."""
    found = []
    if kind == "fragment":
        if english is not None and "*" not in english:
            found += [
                f"literal asterisks in plain text (use 「」): {m.group(0)!r}" for m in EMPHASIS.finditer(japanese)
            ]
        return found
    text = _prose(japanese) if kind == "markdown" else re.sub(r"\{[^{}\n]*\}", "{}", japanese)
    for rule, pattern in STYLE_RULES + (MARKDOWN_STYLE_RULES if kind == "markdown" else []):
        for m in pattern.finditer(text):
            found.append(f"{rule}: {text[max(0, m.start() - 12) : m.end() + 12]!r}")
    for calque, instead in CALQUES:
        if calque in text:
            found.append(f"calque 「{calque}」 (write {instead})")
    if kind == "markdown":
        found += unrendered_bold(text)
        found += [
            f"「」 for emphasis, not *italics* (kana and kanji have no italic): {m.group(0)!r}"
            for m in JA_ITALIC.finditer(text)
        ]
    return found


def japanese_texts(source):
    """(where, kind, Japanese, English) for every translated text of one document."""
    entries = translate.load_entries(source)
    for unit in translate.units(source):
        entry = entries.get(unit.key)
        if not isinstance(entry, dict):
            continue
        where = f"{translate.rel(source)} `{unit.key}`"
        if unit.kind == "markdown" and isinstance(entry.get("ja"), str):
            yield where, "markdown", entry["ja"], unit.english
        elif unit.kind == "code" and isinstance(entry.get("strings"), dict):
            code, _ = translate.apply_strings(unit.english, entry["strings"])
            for literal in translate.code_literals(code):
                if re.search(JA_CHAR, literal):
                    yield where, "literal", literal, None
            for en, ja in entry["strings"].items():
                if isinstance(ja, str):
                    yield where, "fragment", ja, en


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: translate.rel(p))
def test_japanese_follows_the_style_guide(source):
    problems = [f"{where}: {p}" for where, kind, ja, en in japanese_texts(source) for p in style_problems(ja, kind, en)]
    assert not problems, f"{len(problems)} relapse(s) of i18n/ja/style.md:\n" + "\n".join(problems[:25])


@pytest.mark.parametrize(
    "japanese, kind, rule",
    [
        ("統計量 4 個を計算します。", "markdown", "no space between Japanese and a number"),
        ("f\"{len(ops)}個の演算子、{ops.count('mean')} 回のリダクション\"", "literal", "no space between Japanese"),
        ("誤差はわずか0.07 %です。", "markdown", "no space before %"),
        ("約30 sかかります。", "markdown", "seconds are 秒"),
        ("平均, 分散を求めます。", "markdown", "ASCII comma"),
        ("系列を変える -> 系列0が動く", "literal", "not ->"),
        ("特徴量ごとの (平均, 標本分散) を返します。", "literal", "full-width （ ）"),
        ("公開コード（2024年三月）は", "markdown", "months in digits"),
        ("カーネルをあなた自身として実行します。", "markdown", "no あなた"),
        ("**レイヤー正規化（LayerNorm）**から学びます。", "markdown", "bold that does not render"),
        ("値は*そのもの*です。", "markdown", "not *italics*"),
        ("1 + w*そのもの*です。", "markdown", "not *italics*"),
        ("- **(c)**: 3/4 倍に小さくなる", "markdown", "after a bold option label"),
        ("注意: これは誤りです。", "markdown", "ASCII colon"),
        ("トークンは黙って消えます。", "markdown", "calque 「黙って」"),
        ("約2で割った大きさになる", "literal", "calque 「で割った大きさ」"),
    ],
)
def test_each_style_rule_catches_its_relapse(japanese, kind, rule):
    assert any(rule in p for p in style_problems(japanese, kind)), style_problems(japanese, kind)


def test_style_rules_leave_code_formulas_labels_and_good_japanese_alone():
    good = (
        "LayerNormは768個の数を `x.mean(dim=-1, keepdim=True)` で平均し、$x = [4, 6, 2, 8]$ では平均5です。"
        "誤差は0.07%、実行は約30秒です（2024年3月）。**(c)**：3/4倍。lr 0.3 で log 16 を下回ります。\n"
        "**レイヤー正規化**（LayerNorm）と「不偏」分散、*Attention Is All You Need*、**（c）** です。\n"
        "```bash\nmake lab     # 統計量 4 個, -> (平均)\n```\n[次へ](02_next.ipynb)"
    )
    assert style_problems(good, "markdown") == []
    assert style_problems('f"{name:17s} 結果の平均: {m:.3f}（{n}個）"', "literal") == []  # label colon, format spec
    assert style_problems("*不偏*分散", "fragment", "*unbiased* variance") == []  # the English emphasizes too
    assert style_problems("*不偏*分散", "fragment", "unbiased variance") != []  # plain text gained asterisks


def test_first_mentions_name_the_japanese_term():
    """The glossary's rule: the first mention is レイヤー正規化（LayerNorm）, バッチ正規化（BatchNorm）."""
    firsts = {
        ("chapters/00_welcome.ipynb", "ch00-00"): ["レイヤー正規化（LayerNorm）", "バッチ正規化（BatchNorm）"],
        ("chapters/01_layernorm_by_hand.ipynb", "ch01-00"): ["レイヤー正規化（LayerNorm）"],
        ("chapters/03_batchnorm_vs_layernorm.ipynb", "ch03-00"): [
            "バッチ正規化（BatchNorm）",
            "レイヤー正規化（LayerNorm）",
        ],
    }
    for (doc, key), forms in firsts.items():
        ja = translate.load_entries(ROOT / doc)[key]["ja"].replace("**", "")  # 「**レイヤー正規化**（LayerNorm）」 too
        for form in forms:
            assert form in ja, f"{doc} `{key}` should introduce {form}"


# the one-term-per-concept pairs of issue 26: the preferred form, and a relapse the glossary must catch
ONE_TERM_PAIRS = [
    ("乗り切る", "QK-Normはすべての学習率で生き残る"),
    ("学習率感度", "QK-NormのLR感度は低い"),
    ("対数目盛", "対数軸で示した図"),
    ("一様な推測", "一様に当て推量した損失"),
    ("ずるをしない", "公正なモデルの下限"),
    ("LMヘッド", "埋め込みからLM headまで"),
    ("推論時", "学習時と評価時の差"),
    ("良好", "それ以外はokです"),
    ("全ヘッド一括", "全幅のQK-Normと比べます"),
    ("ワンホット", "注意がone-hotになります"),
]


@pytest.mark.parametrize("preferred, relapse", ONE_TERM_PAIRS)
def test_one_term_per_concept_is_enforced(course, rules, preferred, relapse):
    """Each pair is in the glossary, and the check that runs over every translation file catches the other form,
    in a Markdown cell and in a code-cell string alike."""
    assert translate.forbidden_terms(preferred, rules) == [] and translate.forbidden_terms(relapse, rules) != []
    root, path, entries = course
    entries["c-md"]["ja"] += relapse
    entries["c-code"]["strings"] = {"mean of the result: ": relapse + ": "}
    path.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    problems = translate.review(root / "chapters" / "01_x.ipynb", root, rules=rules).problems
    assert [p.split("`")[1] for p in problems if "forbidden term" in p] == ["c-md", "c-code"], problems


def test_drawings_and_commented_code_blocks_may_be_translated():
    english = "```\nx ──► RMSNorm per head (× gain)   (= 4 for d_h = 16)\n```\n"
    english += "```bash\nmake lab     # opens JupyterLab\n```"
    good = "```\nx ──► ヘッドごとのRMSNorm（× ゲイン）   （d_h = 16 なら4）\n```\n"
    good += "```bash\nmake lab     # JupyterLabを開く\n```"
    assert translate.differences(english, good) == []
    assert translate.differences(english, good.replace("なら4", "なら5")) != []  # a number of a drawing
    assert translate.differences(english, good.replace("d_h = 16", "dh = 16")) != []  # a name in a drawing
    assert translate.differences(english, good.replace("make lab ", "make labs")) != []  # the command itself
    # Japanese numerals for English words: "falls by 2" is 2分の1, "March 2024" is 2024年3月
    assert translate.differences("it falls by about 2 (March 2024)", "約2分の1になる（2024年3月）") == []
    assert translate.differences("it falls by about 2", "約3分の1になる") != []
