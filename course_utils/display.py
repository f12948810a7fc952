"""Small display helpers for the chapters: compare two tensors, show a function's source, print aligned tables.

Printed tables pad by display width, not by `len`: a Japanese character takes two columns of a monospaced font
(its East Asian width is "W", wide, or "F", full-width), so `f"{name:>12}"` misaligns every Japanese label.
`pad`, `text_table` and `Table` all measure text with `text_width`.

`text_table` prints; `Table` is a value a notebook cell shows, as HTML in Jupyter and as aligned text elsewhere
(chapter 06's tables of runs, and the tables of a stability sweep, `records.SweepResult`).
"""

from __future__ import annotations

import html
import inspect
import re
import unicodedata

import torch

from .i18n import _
from .palette import GREEN, VERMILLION

__all__ = ["cmp", "show_source", "text_width", "pad", "text_table", "Table"]

_NUMBER = re.compile(r"^[-−+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?%?$|^[-−+]?(?:nan|inf)$", re.IGNORECASE)


def text_width(text: str) -> int:
    """The columns `text` takes in a monospaced font: 2 per wide or full-width character, 0 per combining mark."""
    width = 0
    for ch in str(text):
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def pad(text, width: int, align: str = "<") -> str:
    """`text` padded with spaces to `width` display columns: align "<" (left), ">" (right) or "^" (centre).

    The display-width twin of `f"{text:<{width}}"`; text that is already wider is returned whole."""
    text = str(text)
    gap = max(0, width - text_width(text))
    if align == ">":
        return " " * gap + text
    if align == "^":
        return " " * (gap // 2) + text + " " * (gap - gap // 2)
    return text + " " * gap


def text_table(header, rows, align: str | None = None, sep: str = " | ") -> str:
    """Rows of cells as aligned text: a header line, a rule, one line per row. Cells are shown with `str`.

    align: one of "<", ">", "^" per column (e.g. "<>>"); by default a column whose body cells are all numbers
    ("0.367", "1e-05", "56%", "nan") is right-aligned and any other column left-aligned."""
    header = [str(h) for h in header]
    body = [[str(c) for c in row] for row in rows]
    if any(len(row) != len(header) for row in body):
        raise ValueError(f"every row needs {len(header)} cells, one per column of the header")
    if align is None:
        align = "".join(
            ">" if body and all(_NUMBER.match(r[i].strip()) for r in body) else "<" for i in range(len(header))
        )
    if len(align) != len(header):
        raise ValueError(f"align needs one of < > ^ per column: got {align!r} for {len(header)} columns")
    widths = [max(text_width(c) for c in column) for column in zip(header, *body)]
    lines = [sep.join(pad(c, w, a) for c, w, a in zip(line, widths, align)).rstrip() for line in (header, *body)]
    rule = sep.replace(" ", "-").replace("|", "+").join("-" * w for w in widths)
    return "\n".join([lines[0], rule, *lines[1:]])


class Table:
    """A list of dict rows (column header -> cell text) shown as an HTML table in Jupyter and as aligned text
    elsewhere. In HTML a cell that starts with ✓ is green and one that starts with ✗ vermillion (Okabe-Ito). Every
    table of the course lists runs, so an empty one reads "(no runs)"."""

    def __init__(self, rows: list, title: str = ""):
        self.rows, self.title = rows, title

    def text(self) -> str:
        """The rows as aligned text (text_table, every column left-aligned), without the title."""
        if not self.rows:
            return _("(no runs)")
        cols = list(self.rows[0])
        return text_table(cols, [[r[c] for c in cols] for r in self.rows], align="<" * len(cols))

    def html(self) -> str:
        """The rows as an HTML <table>, without the title."""
        if not self.rows:
            return "<p>" + html.escape(_("(no runs)")) + "</p>"
        cols = list(self.rows[0])
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)

        def cell(value: str) -> str:
            colour = GREEN if value.startswith("✓") else VERMILLION if value.startswith("✗") else None
            style = f" style='color:{colour};font-weight:bold'" if colour else ""
            return f"<td{style}>{html.escape(str(value))}</td>"

        body = "".join("<tr>" + "".join(cell(r[c]) for c in cols) + "</tr>" for r in self.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self) -> str:
        return (self.title + "\n" if self.title else "") + self.text()

    def _repr_html_(self) -> str:
        title = f"<b>{html.escape(self.title)}</b>" if self.title else ""
        return f"<div>{title}{self.html()}</div>"


def cmp(name: str, ours: torch.Tensor, theirs: torch.Tensor, atol: float = 1e-5) -> bool:
    """Print whether two tensors are exactly equal, close (within atol), and their max difference.

    In the spirit of Karpathy's cmp(): one line that tells you how far apart two results are.
    Returns True when they are close.
    """
    a, b = ours.detach().double(), theirs.detach().double()
    if a.shape != b.shape:
        print(
            _("{name} | shapes differ: {ours} vs {theirs}").format(
                name=pad(name, 28), ours=tuple(a.shape), theirs=tuple(b.shape)
            )
        )
        return False
    exact = bool(torch.equal(ours.detach().cpu(), theirs.detach().cpu()))
    diff = float((a - b).abs().max()) if a.numel() else 0.0
    close = diff <= atol
    print(
        _("{name} | exact: {exact:5s} | close (atol {atol:.0e}): {close:5s} | max diff: {diff:.1e}").format(
            name=pad(name, 28), exact=str(exact), atol=atol, close=str(close), diff=diff
        )
    )
    return close


def show_source(obj) -> None:
    """Show the source of a function or class with syntax highlighting (plain text outside Jupyter)."""
    source = inspect.getsource(obj)
    try:
        from IPython.display import Code, display

        display(Code(source, language="python"))
    except ImportError:  # pragma: no cover
        print(source)
