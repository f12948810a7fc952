"""A check's verdict as the learner sees it (course_utils/checks/render.py).

Outside a Jupyter kernel (a terminal, these tests, the grader's kernel) the verdict is printed exactly as before.
In a kernel it is one output with text/plain (that same text) and text/html: escaped, so nothing a learner wrote
can become markup or maths; in a `pre` that wraps at spaces; with the catalog's `code`, *emphasis* and **strong**
as tags, while the stars of formulas (x**2, x * x) stay stars.
"""

import re
import sys
import types
from html.parser import HTMLParser

import nbformat
import pytest
from babel.messages.pofile import read_po

from course_utils.checks import render

from conftest import ROOT

HOSTILE = "raised ValueError: <script>alert('x')</script> & <b>bold</b> *x* $\\alpha$ a_b_c `y` 2**3"


class Tags(HTMLParser):
    """The tags of an HTML fragment, in order, with their attributes, and the text it shows."""

    def __init__(self, fragment: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.open = [], [], []
        self.feed(fragment)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open.pop() == tag, f"</{tag}> closes nothing that is open"

    def handle_data(self, data):
        self.text.append(data)

    def shown(self) -> str:
        return "".join(self.text)


def test_hostile_text_is_escaped_and_shown_as_written():
    """Tags, entities and maths delimiters in a learner's message come out as text: one pre, no other markup
    than the emphasis and the code span the text asks for."""
    page = render.html_of(HOSTILE)
    tags = Tags(page)
    assert [t for t, _ in tags.tags] == ["pre", "em", "span", "code"]
    assert "<script" not in page and "<b>" not in page
    assert "&lt;script&gt;alert('x')&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert "$\\alpha$" in page and "a_b_c" in page and "2**3" in page  # shown as written, never markup
    assert tags.shown() == render.visible_text(HOSTILE) == HOSTILE.replace("*x*", "x").replace("`y`", "y")


def test_the_html_wraps_at_spaces_and_keeps_mathjax_out():
    """The pre's own style beats JupyterLab's `word-break: break-all` (words cut anywhere); MathJax skips a pre."""
    pre = Tags(render.html_of("❌ x: max abs error 0.118 > tolerance 1e-04")).tags[0]
    assert pre[0] == "pre"
    style = dict(rule.split(":") for rule in pre[1]["style"].replace(" ", "").split(";") if rule)
    assert style == {"white-space": "pre-wrap", "word-break": "normal", "overflow-wrap": "break-word", "margin": "0"}
    assert {"mathjax_ignore", "tex2jax_ignore"} <= set(pre[1]["class"].split())


@pytest.mark.parametrize(
    "text, tagged",
    [
        ("the *unbiased* variance", "the <em>unbiased</em> variance"),
        ("the *input of each sub-layer* and", "the <em>input of each sub-layer</em> and"),
        ("(the *sum*), and", "(the <em>sum</em>), and"),
        ("a **strong** word", "a <strong>strong</strong> word"),
        ("x / sqrt(mean(x**2) + eps); sqrt(mean(x**2)) + eps", "x / sqrt(mean(x**2) + eps); sqrt(mean(x**2)) + eps"),
        ("(x * x).mean(dim=-1) and 0 * log 0", "(x * x).mean(dim=-1) and 0 * log 0"),
        ("mean(x)**2 and f(*args, **kwargs)", "mean(x)**2 and f(*args, **kwargs)"),
        ("x*x overflows", "x*x overflows"),
        ("adds `(grad ** 2).sum()` to", "adds <span><code>(grad ** 2).sum()</code></span> to"),
        ("`*not em*` but *em*", "<span><code>*not em*</code></span> but <em>em</em>"),
        ("*two\nlines*", "*two\nlines*"),
        ("|s| <= a & b", "|s| &lt;= a &amp; b"),
    ],
)
def test_markup_becomes_tags_and_formulas_keep_their_stars(text, tagged):
    assert render.html_of(text).removeprefix(render.PRE_OPEN).removesuffix(render.PRE_CLOSE) == tagged
    assert Tags(render.html_of(text)).shown() == render.visible_text(text)


def catalog_texts():
    with (ROOT / "course_utils/locale/ja/LC_MESSAGES/checks.po").open("rb") as f:
        catalog = read_po(f)
    for message in catalog:
        for text in (message.id, message.string):
            yield from [text] if isinstance(text, str) else text


def test_every_check_message_renders_as_balanced_html_that_shows_its_text():
    """Each sentence of the checks' catalog, English and Japanese: tags that close, the text shown unchanged
    but for the markup, and no markup star left (a star that stays is part of a formula: next to a space, a
    bracket or a word character, never `*word*`)."""
    texts = [t for t in catalog_texts() if t]
    assert len(texts) > 300
    emphasized = 0
    for text in texts:
        tags = Tags(render.html_of(text))  # raises on a tag that does not close
        assert tags.shown() == render.visible_text(text), text
        assert not re.search(r"(?<![\w*])\*[^\s*][^*\n]*[^\s*]\*(?![\w*])", tags.shown()), text
        emphasized += any(t == "em" for t, _ in tags.tags)
    assert emphasized >= 20  # the hints' *squares*, *unbiased*, *outside*, ...


def test_show_prints_outside_a_kernel(capsys, monkeypatch):
    monkeypatch.delenv("COURSE_GRADING", raising=False)
    render.show(HOSTILE)
    assert capsys.readouterr().out == HOSTILE + "\n"


class FakeShell:
    kernel = object()


@pytest.fixture
def displayed(monkeypatch):
    """What `show` displays, with a kernel's shell standing in for get_ipython() (None: a terminal IPython)."""
    calls = []
    display = types.ModuleType("IPython.display")
    display.display = lambda *args, **kwargs: calls.append((args, kwargs))
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: FakeShell()
    ipython.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    monkeypatch.delenv("COURSE_GRADING", raising=False)
    return calls


def test_show_displays_text_and_html_in_a_kernel(displayed, capsys):
    render.show(HOSTILE)
    assert capsys.readouterr().out == ""
    assert displayed == [(({"text/plain": HOSTILE, "text/html": render.html_of(HOSTILE)},), {"raw": True})]


def test_show_prints_in_the_graders_kernel_and_in_a_terminal_ipython(displayed, capsys, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING", "1")  # the grader's kernel caps and counts what is printed
    render.show("❌ a")
    monkeypatch.delenv("COURSE_GRADING")
    sys.modules["IPython"].get_ipython = lambda: types.SimpleNamespace()  # a terminal shell: no kernel
    render.show("❌ b")
    assert capsys.readouterr().out == "❌ a\n❌ b\n" and displayed == []


def run_in_kernel(source: str) -> list:
    """The outputs of one cell run in a real kernel (it inherits this process's environment)."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    return nb.cells[0].outputs


CELL = """
from course_utils.checks.ex01 import check_layer_norm
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    raise ValueError("<i>not</i> *this* $x$")
print("before")
report = check_layer_norm(layer_norm)
"""


@pytest.mark.slow
def test_a_check_in_a_kernel_is_one_rich_output_whose_text_is_the_printed_one(capsys):
    """In a real kernel: the text printed before stays a stream, the verdict is one display_data whose text/plain
    is what the check prints here (outside a kernel) and whose text/html is that text rendered."""
    namespace: dict = {}
    exec(CELL.replace('print("before")', ""), namespace)
    printed = capsys.readouterr().out
    assert printed.startswith("❌ layer_norm: raised ValueError: <i>not</i> *this* $x$")
    outputs = run_in_kernel(CELL)
    assert [o.output_type for o in outputs] == ["stream", "display_data"]
    assert outputs[0].text == "before\n"
    assert outputs[1].data == {"text/plain": printed.removesuffix("\n"), "text/html": render.html_of(printed[:-1])}


@pytest.mark.slow
def test_the_graders_kernel_gets_the_printed_text(monkeypatch):
    """COURSE_GRADING=1 (course_utils.grading's kernels): the verdict is printed, a stream that the grader's
    preamble caps and counts, as before."""
    monkeypatch.setenv("COURSE_GRADING", "1")
    outputs = run_in_kernel(CELL)
    assert [o.output_type for o in outputs] == ["stream"]
    assert outputs[0].text.startswith("before\n❌ layer_norm: raised ValueError: <i>not</i> *this* $x$")
