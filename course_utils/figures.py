"""Figures a training room can read, and that say something without being seen.

Every figure in the course is shown with `show(fig, alt=...)` instead of `plt.show()`. It does three things:

1. It refuses a figure that a room cannot read from the back row: text smaller than `MIN_FONT_PT`
   (10 pt), or a data axis without a label. The error names what is wrong, so the notebook that made
   the figure fails to execute (and `make test` fails) until it is fixed.
2. It displays the PNG with alt text: `alt` becomes the image's `alt` metadata (the key that
   `IPython.display.Image(alt=...)` writes) and its `text/plain` representation, in place of
   matplotlib's "<Figure size 640x480 with 1 Axes>". A screen reader, a text-only rendering and nbval's
   comparison of stored outputs all see a sentence that says what the figure shows.
3. It closes the figure, so the inline backend does not show it a second time.

Importing this module sets the course's font sizes (`STYLE`), which are all at least 10 pt, and lets matplotlib
draw Japanese (the Japanese edition's titles and labels, course_utils/i18n.py): DejaVu Sans stays the first font, so
English figures are unchanged, and IPAexGothic (the `matplotlib-fontja` package) draws the glyphs DejaVu Sans lacks.
"""

from __future__ import annotations

import logging
import unicodedata
from typing import TYPE_CHECKING, Any

import matplotlib
from matplotlib.text import Text

from .i18n import _

if TYPE_CHECKING:
    from IPython.display import DisplayHandle
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

__all__ = ["MIN_FONT_PT", "STYLE", "figure_bundle", "figure_problems", "show", "use_course_style"]

MIN_FONT_PT = 10.0

STYLE: dict[RcKeyType, float] = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "legend.title_fontsize": 10,
    "figure.titlesize": 13,
}


JAPANESE_FONT = "IPAexGothic"  # bundled by matplotlib-fontja


def use_course_style() -> None:
    """Set matplotlib's default font sizes to the course's (every one at least MIN_FONT_PT), and the Japanese
    fallback font (see use_japanese_fallback)."""
    matplotlib.rcParams.update(STYLE)
    use_japanese_fallback()


def use_japanese_fallback() -> bool:
    """Draw text in DejaVu Sans (matplotlib's default, as before), falling back glyph by glyph to IPAexGothic for
    the Japanese that DejaVu Sans lacks. False, and nothing changed, when matplotlib-fontja is not installed
    (English figures still work; Japanese ones would show boxes)."""
    try:
        import matplotlib_fontja  # noqa: F401  (registers IPAexGothic; it also makes it the only family)
    except ImportError:
        return False
    params = matplotlib.rcParams
    sans = [name for name in params["font.sans-serif"] if name != JAPANESE_FONT]
    first = sans[0] if sans else "DejaVu Sans"
    params["font.sans-serif"] = [first, JAPANESE_FONT, *sans[1:]]
    # matplotlib falls back glyph by glyph only along the families named in font.family (a generic name such as
    # "sans-serif" resolves to one font), so both are named
    params["font.family"] = [first, JAPANESE_FONT]
    # IPAexGothic has one weight: bold Japanese is drawn regular, which matplotlib would log (to stderr, an output
    # that nbval compares) for every bold English title, although DejaVu Sans draws those in bold as before
    logger = logging.getLogger("matplotlib.font_manager")
    if not any(isinstance(f, _OneWeightFilter) for f in logger.filters):
        logger.addFilter(_OneWeightFilter())
    return True


class _OneWeightFilter(logging.Filter):
    """Drops matplotlib's "Failed to find font weight bold for IPAexGothic" (the font has no other weight)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        return not (
            message.startswith("findfont: Failed to find font weight") and JAPANESE_FONT in map(str, record.args or ())
        )


use_course_style()


def _is_data_axes(ax: Axes) -> bool:
    """An axes that plots data on visible axes (not a drawing with its axes switched off, not a colorbar)."""
    if not ax.axison or not ax.get_visible() or hasattr(ax, "_colorbar"):
        return False
    return bool(ax.lines or ax.collections or ax.images or ax.patches or ax.containers)


def figure_problems(fig: Figure) -> list[str]:
    """What would make `fig` hard to read in a room: small text, and data axes without labels."""
    problems = []
    fig.canvas.draw()  # lay out tick labels and legends, so that every text has its final size
    small: dict[float, list[str]] = {}
    for text in fig.findobj(Text):
        size = float(text.get_fontsize())  # in points, once drawn (the stubs also allow a name such as "large")
        if text.get_visible() and text.get_text().strip() and size < MIN_FONT_PT - 1e-9:
            small.setdefault(round(size, 1), []).append(text.get_text().strip()[:30])
    for size, texts in sorted(small.items()):
        problems.append(f"{len(texts)} text(s) at {size:g} pt, below {MIN_FONT_PT:g} pt: {texts[:3]}")
    for i, ax in enumerate(fig.axes):
        if not _is_data_axes(ax):
            continue
        name = f"axes {i}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        if not ax.get_xlabel().strip() and not _shares_label(ax, "x"):
            problems.append(f"{name} has no x-axis label")
        if not ax.get_ylabel().strip() and not _shares_label(ax, "y"):
            problems.append(f"{name} has no y-axis label")
    return problems


def _shares_label(ax: Axes, which: str) -> bool:
    """True when `ax` shares this axis with a labelled axes of the same row/column, or the figure labels it."""
    fig = ax.figure
    sup = getattr(fig, "_supxlabel" if which == "x" else "_supylabel", None)
    if sup is not None and sup.get_text().strip():
        return True
    group = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
    for other in group.get_siblings(ax):
        if other is not ax and (other.get_xlabel() if which == "x" else other.get_ylabel()).strip():
            return True
    return False


def _japanese_beside_math(fig: Figure) -> None:
    """Draw a text that mixes Japanese with a formula ("ブロック $l$") in the Japanese font.

    matplotlib draws the text around `$…$` in one font, without the glyph-by-glyph fallback of plain text, so
    DejaVu Sans would show boxes for the Japanese; the formula itself keeps mathtext's italic. English texts, and
    Japanese ones without a formula, are left as they are."""
    if JAPANESE_FONT not in matplotlib.rcParams["font.family"]:
        return
    for text in fig.findobj(Text):
        s = text.get_text()
        if s.count("$") >= 2 and any(unicodedata.east_asian_width(ch) in ("W", "F") for ch in s):
            text.set_fontfamily(JAPANESE_FONT)


def figure_bundle(fig: Figure, alt: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(data, metadata) of a display_data output: the PNG, and `alt` as its alt text and plain text."""
    from IPython.core.pylabtools import print_figure

    alt = " ".join(_(alt).split())  # an N_() constant (ex03's QUIZ_ALT) in the learner's language; other text as is
    if not alt:
        raise ValueError("give the figure alt text: one or two sentences that say what it shows")
    _japanese_beside_math(fig)
    problems = figure_problems(fig)
    if problems:
        raise ValueError("this figure is hard to read in a room:\n  - " + "\n  - ".join(problems))
    png = print_figure(fig, fmt="png", bbox_inches="tight", base64=True)
    return {"image/png": png, "text/plain": _("[Figure: {alt}]").format(alt=alt)}, {"image/png": {"alt": alt}}


def show(fig: Figure, alt: str, display_id: bool = False) -> DisplayHandle | None:
    """Check `fig`, display it with alt text, close it. Returns the display handle when display_id=True."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    try:
        data, metadata = figure_bundle(fig, alt)
    finally:
        plt.close(fig)
    return display(data, metadata=metadata, raw=True, display_id=display_id or None)
