"""How a check's verdict reaches the learner: printed text, or in Jupyter one output with an HTML twin.

A check's verdict is plain text (`CheckReport.text()`), with a little Markdown-like markup in the catalog's
sentences: `code`, *emphasis*, and **strong**. Printed, that text is what a terminal, the instructors' grader,
the tests (capsys) and a stored `stream` output show. In JupyterLab, a printed (stream) output has two faults:
its `pre` wraps long lines anywhere, inside words ("tolera" / "nce"), because JupyterLab's stylesheet gives
every output `pre` `word-break: break-all`; and the asterisks of *outside* are shown as they are.

So, in a Jupyter kernel, `show(text)` displays one output with two renderings of the same text:

    text/plain   exactly the text `print` would write (without the final newline): what nbval, the grader's
                 and the tests' readers, and a front end without HTML see
    text/html    `html_of(text)`: the same text, escaped, in a `<pre>` that wraps at spaces
                 (`white-space: pre-wrap; word-break: normal; overflow-wrap: break-word`: a word longer than
                 the line still breaks, so nothing runs off the screen), without a margin (it stands where
                 printed text would), with the markup turned into <code>, <em> and <strong>

Why HTML and not Markdown: the text holds what a learner wrote (a function's name, an exception's message)
and formulas such as `x / sqrt(mean(x**2) + eps)`. Markdown would need every `*`, `_`, `<`, `|`, `#` and the
leading spaces of the indented lines escaped, and its `$`s would still reach MathJax, which typesets the
Markdown of an output. In HTML, `html.escape` makes any text inert (a `<script>` shows as text), the spaces
and line breaks stay as they are in a `pre`, and MathJax skips a `pre` (its `skipHtmlTags`, in MathJax 2
and 3; the classes `mathjax_ignore` and `tex2jax_ignore` say the same a second time). JupyterLab's
sanitizer, which an untrusted notebook's stored HTML passes through, keeps every tag and style used here.

Where nobody renders HTML, `show` prints, exactly as before: outside IPython (a terminal, a script, the
tests), in a terminal IPython, and in the grader's kernel (COURSE_GRADING=1, set by course_utils.grading),
whose preamble caps what a cell prints and counts it: a displayed output would escape that cap.
"""

from __future__ import annotations

import html
import os
import re
import sys

__all__ = ["html_of", "in_jupyter", "show", "visible_text"]

# the container: a pre that wraps at spaces (inline styles beat JupyterLab's `.jp-OutputArea-output pre` rule,
# whose word-break: break-all splits words), sits where printed text would (JupyterLab gives an HTML output's
# top-level pre a margin of 1.5em 2em), and that MathJax leaves alone
PRE_OPEN = (
    '<pre class="course-check mathjax_ignore tex2jax_ignore" '
    'style="white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; margin: 0">'
)
PRE_CLOSE = "</pre>"
# a code span in a span: JupyterLab styles a <code> that is not a pre's child as inline code, in the theme's colours
# (a background that sets it off from the rest of the pre, which is in the code font too)
CODE_OPEN, CODE_CLOSE = "<span><code>", "</code></span>"

# `code`: backticks around text on one line. Inside it, nothing is markup.
CODE = re.compile(r"`([^`\n]+)`")
# **strong** and *emphasis*: the opening marks follow the start of a line, a space or an opening bracket and
# come right before text; the closing marks come right after text and before the end, a space or punctuation.
# So the stars of formulas stay stars: x**2, (x * x), mean(x)**2, 0 * log 0, f(*args, **kwargs).
STRONG = re.compile(r"(?<![\w*\\])\*\*(?=[^\s*])([^*\n]*?[^\s*])\*\*(?![\w*])")
EMPHASIS = re.compile(r"(?<![\w*\\])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![\w*])")


def in_jupyter() -> bool:
    """Whether this runs in a Jupyter kernel whose outputs a front end renders (not the grader's kernel)."""
    if os.environ.get("COURSE_GRADING") == "1":
        return False
    ipython = sys.modules.get("IPython")  # never imported here: a script or a test has no IPython to ask
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None  # a terminal IPython has no kernel


def show(text: str) -> None:
    """Show a check's verdict: one output with text/plain and text/html in Jupyter, printed text elsewhere."""
    if not in_jupyter():
        print(text)
        return
    from IPython.display import display

    display({"text/plain": str(text), "text/html": html_of(text)}, raw=True)


def html_of(text: str) -> str:
    """The verdict as HTML: escaped, its markup turned into tags, in a `pre` that wraps at spaces."""
    return PRE_OPEN + _marked_up(str(text)) + PRE_CLOSE


def visible_text(text: str) -> str:
    """What a reader sees of `html_of(text)`: the text without its markup's backticks and stars (the test of
    the rendered output in a browser compares with this)."""
    parts = []
    for i, piece in enumerate(CODE.split(str(text))):
        parts.append(piece if i % 2 else EMPHASIS.sub(r"\1", STRONG.sub(r"\1", piece)))
    return "".join(parts)


def _marked_up(text: str) -> str:
    """The text escaped for HTML, then `code`, **strong** and *emphasis* turned into tags.

    Escaping comes first, so the only tags in the result are the ones added here: nothing a learner wrote can
    become one. The patterns find the same marks in the escaped text as in the plain one (`visible_text`):
    escaping turns only <, > and & into entities, and none of them is a star, a backtick or a word character.
    The escaped text is split at the code spans (the odd pieces), so that a star inside code stays a star."""
    parts = []
    for i, piece in enumerate(CODE.split(html.escape(text, quote=False))):
        if i % 2:
            parts.append(CODE_OPEN + piece + CODE_CLOSE)
        else:
            parts.append(EMPHASIS.sub(r"<em>\1</em>", STRONG.sub(r"<strong>\1</strong>", piece)))
    return "".join(parts)
