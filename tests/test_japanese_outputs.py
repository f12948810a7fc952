"""No English where Japanese belongs: every stored output of the Japanese edition, and every catalog message.

A learner of the Japanese edition reads Japanese in the prose (tests/test_translations.py keeps it so) and, as much,
in what the cells print: tables, verdicts, progress bars, a check's feedback, a quiz's answer, a figure's alt text.
This test reads every output stored in ja/**/*.ipynb (streams, text/plain, Markdown, HTML, alt text) and every
msgstr of the Japanese message catalogs, and fails on an English word that is not on the allowlist below:

* the names the glossary keeps in English (`keep_english`: LayerNorm, QK-Norm, softmax, Pre-LN, ...);
* names of models, libraries, people and units (Gemma, PyTorch, Wortsman, nats, ms);
* code: anything in backticks or a code listing, an identifier (`layer_norm`, `x.mean`, `eps=`), Python's values
  (True, None, nan) and the short names of maths (mean, std, max, sqrt, ln) that formulas print, and the course's
  own identifiers that a learner types: variants, recipes and presets (`qk_norm`, `gemma2`, `quick`).

A new English label fails here: translate it (a `strings:` entry of the notebook's translation, or `_()` and the
catalog) rather than growing the allowlist. The last tests plant an English header and show that it is caught.
"""

from __future__ import annotations

import html
import re

import nbformat
import pytest
import yaml
from babel.messages.pofile import read_po

from course_utils.checks.registry import all_exercises
from course_utils.data import VOCABULARY
from course_utils.display import text_table, text_width
from course_utils.experiments import EXTRA_VARIANTS, PRESETS, VARIANTS
from course_utils.recipes import RECIPES

from conftest import ROOT

GLOSSARY = yaml.safe_load((ROOT / "i18n" / "ja" / "glossary.yaml").read_text(encoding="utf-8"))
NAMES = {  # models, libraries, tools, people, places of publication, units: names stay as they are written
    *"GPT Llama LLaMA Gemma OLMo Qwen Qwen2 GLM GLM-4 MiniMax MiniMax-M2 DeepSeek DeepSeek-V3 PaLM BERT ViT nGPT Grok"
    " StreamingLLM Air".split(),
    *"Hugging Face Jupyter JupyterLab JupyterHub Colab Binder PyTorch NumPy matplotlib ipywidgets nbval nbgrader"
    " numpy pytest Python CUDA CPU GPU AVX AVX2 AVX-512 Linux macOS Windows transformers google-deepmind zai-org"
    " Megatron-Bridge deepseek-ai tqdm".split(),
    *"Adam SGD Xavier Karpathy Wortsman Rybakov Dehghani Zhai Xiao Kim Groeneveld Loshchilov Ginsburg Hsieh Sun Chen"
    " Zhu Liu LeCun He Ba Xiong Ioffe Szegedy Cauchy Schwarz et al arXiv".split(),
    *"MLA QKV Proj FC1 FC2 RMS LN BN CNN LLM SwiGLU GeGLU ReLU GELU InstanceNorm QK".split(),
    *"JSON CSV PDF PNG JPEG zip ID MB GB Markdown nbformat bubblewrap segfault Apple Metal MPS".split(),
    *"nats nat ms LM".split(),
    "vs",  # as the source textbook writes it: 「Pre-Norm vs Post-Norm」
}
CODE = {  # Python's values and the short names of maths and tensor methods that printed formulas use
    *"True False None nan inf NaN".split(),
    *"mean std var max min sum sqrt rsqrt log ln exp cos tanh pow mul add sub div abs".split(),
    *"eps atol rtol dtype cpu cuda gamma beta torch x params tril triu autocast os en ja cap".split(),
    *"return def lambda import assert".split(),  # Python keywords, in a hint that shows a line of code
    *"lr wd pp".split(),  # the letters of formulas in the check questions: (1 − lr·wd), diag(p) − ppᵀ
    *"BEGIN END SOLUTION wrong-exercise".split(),  # the answer key's markers, a gradebook's status value
}
PHRASES = [p for p in GLOSSARY["keep_english"] if " " in p] + ["multi-query attention"]
# the learner's own function names, which a check's verdict line starts with (「statistics：…」)
FUNCTIONS = {graded.function for exercise in all_exercises() for graded in exercise.graded}
# and the tokens of the course's corpus (「copy v4 v2 = v4 v2 .」)
IDENTIFIERS = {*VARIANTS, *EXTRA_VARIANTS, *RECIPES, *PRESETS, *FUNCTIONS, *VOCABULARY}
# a library's own error message, quoted verbatim beside the course's translated one (chapter 03: 「torch: Expected…」)
LIBRARY_MESSAGE = re.compile(r"^torch: .*$", re.M)
ALLOWED = set(GLOSSARY["keep_english"]) | NAMES | CODE | IDENTIFIERS

# a word of two or more letters, not part of an identifier, a path, a number, a call or an attribute
WORD = re.compile(r"(?<![A-Za-z0-9_./\\=`'@#\[-])[A-Za-z][A-Za-z'-]*[A-Za-z](?![A-Za-z0-9_(./=`\[-]|'s\b)")
CAMEL_CASE = re.compile(r"[A-Z][a-z]+[A-Z][A-Za-z]*")  # a class name: RotaryEmbedding, ValueError
FENCE = re.compile(r"```.*?```", re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S)
TAG = re.compile(r"<[^>]+>")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
URL = re.compile(r"https?://\S+")


def visible_text(text: str, kind: str) -> str:
    """The words a reader sees in one output: tags, styles, code, formulas, link targets and URLs left out."""
    if kind == "text/html":
        text = re.sub(r"<(style|script)\b[^>]*>.*?</\1>", " ", text, flags=re.S | re.I)
        text = re.sub(r"<code>.*?</code>", " ", text, flags=re.S)
    text = LIBRARY_MESSAGE.sub(" ", text)
    text = FENCE.sub(" ", text)
    text = CODE_SPAN.sub(" ", text)
    text = MATH.sub(" ", text)
    text = LINK_TARGET.sub("]", text)
    text = URL.sub(" ", text)
    return html.unescape(TAG.sub(" ", text))


def english_words(text: str, kind: str = "text/plain") -> list[str]:
    """Each English word of `text` that the allowlist does not name, with a little of its context."""
    seen = visible_text(text, kind)
    for phrase in PHRASES:
        seen = seen.replace(phrase, " ")
    found = []
    for m in WORD.finditer(seen):
        word = m.group(0)
        if word in ALLOWED or word.rstrip("s") in ALLOWED or CAMEL_CASE.fullmatch(word):
            continue
        found.append(f"{word!r} in …{seen[max(0, m.start() - 20) : m.end() + 20]!r}…")
    return found


def is_source_listing(output) -> bool:
    """`show_source` output: a function's code, which stays as the package writes it."""
    data = output.get("data", {})
    return "Verbatim" in data.get("text/latex", "") or 'class="highlight"' in data.get("text/html", "")


def stored_texts(notebook):
    """(cell id, kind, text) for every output a reader of the stored notebook sees."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if is_source_listing(output):
                continue
            if output.output_type == "stream":
                yield cell.get("id"), "stream", output.text
            for kind in ("text/plain", "text/markdown", "text/html"):
                if kind in output.get("data", {}):
                    yield cell.get("id"), kind, output.data[kind]
            alt = output.get("metadata", {}).get("image/png", {}).get("alt")
            if alt:
                yield cell.get("id"), "alt text", alt


JA_NOTEBOOKS = sorted((ROOT / "ja").rglob("*.ipynb"))
CATALOGS = sorted((ROOT / "course_utils" / "locale" / "ja" / "LC_MESSAGES").glob("*.po"))


@pytest.mark.parametrize("path", JA_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_japanese_outputs_have_no_english(path):
    notebook = nbformat.read(path, as_version=4)
    problems = [
        f"{cell} ({kind}): {word}" for cell, kind, text in stored_texts(notebook) for word in english_words(text, kind)
    ]
    assert not problems, f"{len(problems)} English word(s) in stored outputs:\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: p.name)
def test_catalog_messages_have_no_english(path):
    with path.open("rb") as f:
        catalog = read_po(f)
    problems = [
        f"{message.id!r}: {word}"
        for message in catalog
        if message.id and message.string
        for text in ([message.string] if isinstance(message.string, str) else message.string)
        for word in english_words(re.sub(r"\{[^{}]*\}", " ", text))
    ]
    assert not problems, f"{len(problems)} English word(s) in {path.name}:\n" + "\n".join(problems[:40])


SEPARATOR = re.compile(r"(?<= )\|(?= |$)|(?<=-)\+(?=-)")


def misaligned_tables(text: str) -> list[str]:
    """Printed tables (lines with " | " columns and a "-+-" rule) whose separators do not line up on screen.

    The position of a separator is measured in display columns (`text_width`), as a monospaced font shows it."""
    problems, block = [], []
    for line in [*text.splitlines(), ""]:
        marks = [text_width(line[: m.start()]) for m in SEPARATOR.finditer(line)]
        if marks:
            block.append((line, marks))
            continue
        if len(block) > 1 and len({len(marks) for _, marks in block}) == 1:
            first = block[0][1]
            problems += [f"{line!r} has its columns at {marks}, not {first}" for line, marks in block if marks != first]
        block = []
    return problems


ALL_NOTEBOOKS = sorted(
    p for folder in ("chapters", "exercises", "solutions", "ja") for p in (ROOT / folder).rglob("*.ipynb")
)


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_printed_tables_line_up(path):
    notebook = nbformat.read(path, as_version=4)
    problems = [
        f"{cell}: {problem}"
        for cell, kind, text in stored_texts(notebook)
        if kind in ("stream", "text/plain")
        for problem in misaligned_tables(text)
    ]
    assert not problems, "printed tables out of line (pad with course_utils.display.pad or text_table):\n" + "\n".join(
        problems[:20]
    )


def test_a_table_padded_by_len_is_caught_and_text_table_lines_up():
    by_len = f"{'名前':<8} | 値\n{'-' * 8}-+---\n{'ゲイン':<8} | 1.0"
    assert misaligned_tables(by_len)
    assert not misaligned_tables(text_table(["名前", "値"], [["ゲイン", "1.0"], ["weight", "0.5"]]))


def _notebook_with(text: str, kind: str = "stream") -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("print(table)")
    if kind == "stream":
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    else:
        cell.outputs = [nbformat.v4.new_output("display_data", data={kind: text, "text/plain": "表"})]
    return nbformat.v4.new_notebook(cells=[cell])


@pytest.mark.parametrize(
    "planted, kind, caught",
    [
        ("variant | 学習率 | final loss\nbaseline | 0.01 | 2.17", "stream", "final"),
        ("<table><tr><th>verdict</th></tr><tr><td>✓ 良好</td></tr></table>", "text/html", "verdict"),
        ("**(c)**：正解です。The layer has no state.", "text/markdown", "layer"),
        ("判定: agrees 5, wrong 2", "stream", "agrees"),
        ("この講座の実装: batch_norm needs more than 1 value", "stream", "needs"),
    ],
)
def test_a_planted_english_header_is_caught(planted, kind, caught):
    found = [w for _, k, t in stored_texts(_notebook_with(planted, kind)) for w in english_words(t, k)]
    assert any(repr(caught) in w for w in found), found


def test_names_code_and_formulas_are_left_alone():
    japanese = (
        "LayerNormとRMSNormの比較（Pre-LN vs Post-LN、Gemma 2のsoftcap）：`layer_norm(x, eps=1e-5)` は"
        " $\\sqrt{\\mathrm{mean}(x^2)}$ と同じです。x.mean(dim=-1) は True、qk_norm の学習率 0.01、"
        "[第02章](02_rmsnorm.ipynb)"
    )
    assert english_words(japanese, "text/markdown") == []
    assert english_words("<pre><code>def f(x): return x</code></pre><b>表</b>", "text/html") == []
