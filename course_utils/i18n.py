"""The course speaks English (the source) and Japanese: which one, and the message catalog for learner-facing text.

Every sentence that `course_utils` shows a learner (a check's verdict and hint, "not implemented yet", the quiz's
buttons, a widget's labels, a figure's title, the grader's feedback) is written in English and wrapped in `_()`:

    from .i18n import _
    print(_("✅ Right: {why}").format(why=why))

`_()` looks the English up in the gettext catalog of the current language
(`course_utils/locale/ja/LC_MESSAGES/{course_utils,checks,questions}.po`, compiled to the `.mo` files next to them) and
returns it unchanged when there is no translation. Call it where the text is shown, not at import time, so the
language can differ between a check and the next one (the grader switches it per feedback file); text stored in
data at import time is marked with `N_()` (for the catalog) and translated with `_()` where it is shown.

The language, first match wins:

1. `set_language("ja")` (or `with using("ja"):`), e.g. the grader's `--lang ja`;
2. the environment variable `COURSE_LANG` (`en` or `ja`), which the grader also passes to its kernels;
3. a `.course_lang` file in the current folder or a folder above it: `ja/.course_lang` holds `ja`, so a kernel
   started for a notebook of the Japanese edition (its cwd is the notebook's folder) speaks Japanese;
4. the notebook's own language, `COURSE_NOTEBOOK_LANG`, which the first cell of every notebook sets ("en", or "ja"
   in the Japanese edition): a notebook opened on its own (in Colab, or downloaded) has no `.course_lang` above it,
   and still speaks its edition's language. It ranks below the marker, so a room that puts a `.course_lang` holding
   `ja` above the English notebooks keeps their checks in Japanese (a `COURSE_LANG` set by the cell would override
   it); tools/first_cell.py writes the cell;
5. English.
"""

from __future__ import annotations

import contextlib
import gettext
import os
from functools import cache, lru_cache
from pathlib import Path

__all__ = [
    "LANGUAGES",
    "DOMAINS",
    "LOCALE_DIR",
    "MARKER",
    "NOTEBOOK_ENV",
    "language",
    "folder_language",
    "set_language",
    "using",
    "_",
    "N_",
    "ngettext",
]

LANGUAGES = ("en", "ja")
# one catalog per part of the package: the exercises' checks and hints (course_utils/checks/), the chapters' check
# questions (course_utils/questions/) and everything else
DOMAINS = ("course_utils", "checks", "questions")
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
MARKER = ".course_lang"
NOTEBOOK_ENV = "COURSE_NOTEBOOK_LANG"

_chosen: str | None = None


def _check(lang: str) -> str:
    lang = (lang or "").strip().lower()
    if lang not in LANGUAGES:
        raise ValueError(f"unknown course language {lang!r}: choose one of {', '.join(LANGUAGES)}")
    return lang


@lru_cache(maxsize=64)
def _marker_language(folder: str) -> str | None:
    for parent in (Path(folder), *Path(folder).parents):
        marker = parent / MARKER
        if marker.is_file():
            return _check(marker.read_text(encoding="utf-8"))
    return None


def language() -> str:
    """The language messages are shown in now: "en" or "ja" (see the module's docstring for the rules)."""
    if _chosen is not None:
        return _chosen
    if os.environ.get("COURSE_LANG"):
        return _check(os.environ["COURSE_LANG"])
    try:
        here = os.getcwd()
    except OSError:  # the folder was removed under us
        here = None
    marked = _marker_language(here) if here is not None else None
    if marked:
        return marked
    notebook = (os.environ.get(NOTEBOOK_ENV) or "").strip().lower()
    return notebook if notebook in LANGUAGES else "en"


def folder_language(folder) -> str:
    """The edition a folder belongs to: the language of the `.course_lang` marker in it or a folder above it
    (ja/solutions -> "ja"), else English. The grader reads a submission against the notebooks of its own edition."""
    return _marker_language(str(Path(folder).resolve())) or "en"


def set_language(lang: str | None) -> None:
    """Show messages in `lang` from now on ("en" or "ja"); None goes back to the automatic choice."""
    global _chosen
    _chosen = None if lang is None else _check(lang)


@contextlib.contextmanager
def using(lang: str | None):
    """`with using("ja"): ...` shows the messages of that block in Japanese, then restores the previous choice."""
    global _chosen
    before = _chosen
    set_language(lang)
    try:
        yield
    finally:
        _chosen = before


@cache
def catalog(lang: str) -> gettext.NullTranslations:
    """The compiled catalogs of one language, chained (English has none: its messages are the catalogs' keys)."""
    chain = gettext.NullTranslations()
    if lang != "en":
        for domain in reversed(DOMAINS):
            part = gettext.translation(domain, localedir=str(LOCALE_DIR), languages=[lang], fallback=True)
            part.add_fallback(chain)
            chain = part
    return chain


def _(message: str) -> str:
    """`message` (English) in the current language; unchanged when it has no translation."""
    return catalog(language()).gettext(message)


def N_(message: str) -> str:
    """Marks English text for the catalog without translating it yet: for messages stored in data at import time
    (a check's hints, a question's options) that `_()` translates where they are shown."""
    return message


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for n, in the current language (Japanese has one form)."""
    return catalog(language()).ngettext(singular, plural, n)
