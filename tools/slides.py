"""The chapters' reveal.js decks, with their speaker notes: what `make slides` runs, and what the tests build.

    python tools/slides.py artifacts/slides [nbconvert options]

writes four decks per chapter: artifacts/slides/NN_topic.slides.html (with the code), no-code/ (outputs only,
for a lecture), and the Japanese edition's in ja/ and ja/no-code/; the pinned reveal.js, MathJax, require.js and
jQuery go to artifacts/slides/assets/ (tools/slide_assets.py), so the decks open from the file system with no
network. Options after the folder go to nbconvert (the Makefile's SLIDES_EXTRA).

**Speaker notes live on the chapter's instructor page, never in the chapter.** JupyterLab shows a `notes` cell to
learners as ordinary text, answers to the "Predict, then run" questions included. The section
`## Speaker notes (shown in the deck)` of instructor/NN_topic.md holds one `###` section per note; its heading
names the chapter cell the note follows, ``### After `ch01-02` · 1. Four numbers, by hand`` (or precedes:
``### Before `ch01-02` ...``), then, for the reader, the title of the note's slide. The section's text under the
heading is the note. Before nbconvert runs, each chapter is copied to a temporary deck notebook with its notes
put back as `notes` cells at those places, so reveal.js shows them in the speaker view (key S). A note whose cell
no longer exists stops the build with its name; so does a chapter that holds a `notes` cell again.

The Japanese decks take the Japanese text of each note from the page's translation file,
i18n/ja/instructor/NN_topic.yaml (the same text ja/instructor/NN_topic.md shows; a note not yet translated stays
English there and here, and `python tools/translate.py check` lists it). Its heading is the translated heading.

The decks themselves come from tools/slide_template/offline_reveal (nbconvert's reveal template with the course's
changes: headings keep their case, figures keep their alt text, offline assets, MathJax fixes).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import slide_assets  # noqa: E402
import translate  # noqa: E402

# nbconvert's options for every deck: reveal.js slides, no In/Out prompts, long slides scroll, "slide 3 of 15"
FLAGS = ["--to", "slides", "--no-prompt", "--SlidesExporter.reveal_scroll=True", "--SlidesExporter.reveal_number=c/t"]

# (chapters folder, decks folder under the output folder, with the code); the assets folder is shared
SETS = [
    ("chapters", ".", True),
    ("chapters", "no-code", False),
    ("ja/chapters", "ja", True),
    ("ja/chapters", "ja/no-code", False),
]

NOTES_SECTION = "Speaker notes (shown in the deck)"
NOTE_HEADING = re.compile(r"^###\s+(After|Before)\s+`([^`\s]+)`")


class NotesError(ValueError):
    """A speaker note that cannot be placed, or a chapter that holds speaker notes itself."""


@dataclass(frozen=True)
class Note:
    key: str  # the note's section key on the page (and in its translation file)
    place: str  # "after" or "before" the anchor cell
    anchor: str  # the chapter cell id
    text: str  # the Markdown the speaker view shows: the section without its heading
    heading: str  # the section's heading line, for messages


def course_of(notebook: Path) -> tuple[Path, str]:
    """(the course's root folder, the edition's language) of a chapter: chapters/x.ipynb or ja/chapters/x.ipynb."""
    path = Path(notebook).resolve()
    if path.parent.parent.name == translate.LANG and path.parent.name == "chapters":
        return path.parents[2], translate.LANG
    return path.parents[1], "en"


def instructor_page(notebook: Path) -> Path:
    root, _ = course_of(notebook)
    return root / "instructor" / f"{Path(notebook).stem}.md"


def _body(section: str) -> str:
    """A section without its heading line: the note's text."""
    return section.split("\n", 1)[1].strip() if "\n" in section else ""


def page_notes(page: Path) -> list[Note]:
    """The notes of an English instructor page: every `###` section of its "Speaker notes" section, in order."""
    notes, inside = [], False
    for key, text in translate.page_sections(Path(page).read_text(encoding="utf-8")):
        first = text.split("\n", 1)[0].rstrip()
        if first.startswith("## "):
            inside = first[3:].strip() == NOTES_SECTION
            continue
        if not inside:
            continue
        match = NOTE_HEADING.match(first)
        if not match:
            raise NotesError(
                f'{page}: "{first}": each speaker note is a `###` section whose heading names its cell, '
                '"### After `<cell id>` · <slide title>" (or "### Before ..."), with no heading inside'
            )
        if not _body(text):
            raise NotesError(f"{page}: the speaker note `{first}` is empty")
        notes.append(Note(key, match.group(1).lower(), match.group(2), _body(text), first))
    return notes


def speaker_notes(notebook: Path) -> list[Note]:
    """The notes of a chapter's deck, in the chapter's language (the English page's notes; for ja/chapters/x.ipynb
    their Japanese text from i18n/ja/instructor/x.yaml). No page, no notes."""
    root, lang = course_of(notebook)
    page = instructor_page(notebook)
    if not page.exists():
        return []
    notes = page_notes(page)
    if lang == "en":
        return notes
    entries = translate.load_entries(page, root)
    units = {u.key: u for u in translate.units(page)}
    out = []
    for note in notes:
        entry = entries.get(note.key)
        if isinstance(entry, dict) and isinstance(entry.get("ja"), str) and entry["ja"].strip():
            text = translate.translated_markdown(units[note.key], entry)
            if not text.startswith("### ") or not _body(text):
                raise NotesError(
                    f"{translate.rel(translate.translation_file(page, root), root)} `{note.key}`: a note's translation"
                    " starts with its translated `###` heading, then the note"
                )
            note = Note(note.key, note.place, note.anchor, _body(text), text.split("\n", 1)[0])
        out.append(note)
    return out


def notes_cells(nb) -> list:
    return [c for c in nb.cells if c.get("metadata", {}).get("slideshow", {}).get("slide_type") == "notes"]


def insert_notes(nb, notes: list[Note], where: str = "the chapter", page: str = "its instructor page"):
    """A copy of `nb` with each note as a Markdown `notes` cell right after (or before) its anchor cell; notes on the
    same cell keep the page's order. Raises NotesError when an anchor names no cell, or when `nb` holds notes."""
    held = notes_cells(nb)
    if held:
        raise NotesError(
            f"{where} holds speaker notes ({', '.join(c.get('id', '?') for c in held)}): learners would read them. "
            f"Move each into the '{NOTES_SECTION}' section of {page}"
        )
    ids = [c.get("id") for c in nb.cells]
    gone = [n for n in notes if n.anchor not in ids]
    if gone:
        raise NotesError(
            "".join(
                f"{page}: the speaker note `{n.heading}` is anchored to cell `{n.anchor}`, which {where} no longer "
                "has; name the cell it should follow now\n"
                for n in gone
            ).rstrip()
        )
    before = {i: [] for i in ids}
    after = {i: [] for i in ids}
    for n, note in enumerate(notes):
        cell = nbformat.v4.new_markdown_cell(note.text)
        cell.id = f"{note.anchor}-note-{n + 1}"
        cell.metadata["slideshow"] = {"slide_type": "notes"}
        (after if note.place == "after" else before)[note.anchor].append(cell)
    cells = [new for cell in nb.cells for new in (*before[cell.get("id")], cell, *after[cell.get("id")])]
    return nbformat.NotebookNode({**nb, "cells": cells})


def deck_notebook(notebook: Path):
    """The notebook a chapter's deck is built from: the chapter with its speaker notes put back."""
    root, _ = course_of(notebook)
    nb = nbformat.read(str(notebook), as_version=4)
    page = instructor_page(notebook)
    name = page.relative_to(root).as_posix() if page.is_relative_to(root) else str(page)
    where = Path(notebook).resolve().relative_to(root).as_posix()
    return insert_notes(nb, speaker_notes(notebook), where, name)


@dataclass
class Build:
    decks: dict  # chapter stem -> the deck's path
    log: str  # nbconvert's messages


def build_decks(notebooks, out_dir: Path, code: bool = True, assets: str = "assets", extra=()) -> Build:
    """One deck per notebook in out_dir, from its deck notebook, by one nbconvert run; `assets` is the assets folder
    relative to out_dir. Raises when nbconvert fails."""
    out_dir = Path(out_dir)
    notebooks = [Path(p) for p in notebooks]
    stems = [p.stem for p in notebooks]
    assert len(set(stems)) == len(stems), f"two notebooks share a name: {stems}"
    with tempfile.TemporaryDirectory(prefix="decks-") as tmp:
        inputs = []
        for path in notebooks:
            inputs.append(Path(tmp) / path.name)
            nbformat.write(deck_notebook(path), str(inputs[-1]))
        cmd = [
            sys.executable,
            "-m",
            "nbconvert",
            *FLAGS,
            *([] if code else ["--no-input"]),
            *slide_assets.offline_flags(assets),
            *extra,
            "--output-dir",
            str(out_dir),
            *map(str, inputs),
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        raise RuntimeError(f"nbconvert failed ({result.returncode}):\n{log[-4000:]}")
    return Build({s: out_dir / f"{s}.slides.html" for s in stems}, log)


def build_all(out_dir: Path, extra=(), install_assets: bool = True, root: Path | None = None) -> dict:
    """Every deck of both editions, as `make slides` builds them: {deck set folder: Build}."""
    out_dir, root = Path(out_dir), root or ROOT
    builds = {}
    for chapters, folder, code in SETS:
        target = out_dir / folder
        prefix = os.path.relpath(out_dir / "assets", target).replace(os.sep, "/")
        notebooks = sorted((root / chapters).glob("*.ipynb"))
        if notebooks:
            builds[folder] = build_decks(notebooks, target, code, prefix, extra)
    if install_assets:
        print("slide assets: " + (", ".join(slide_assets.install(out_dir / "assets")) or "up to date"))
    return builds


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    out_dir, extra = Path(args[0]), args[1:]
    try:
        builds = build_all(out_dir, extra)
    except NotesError as err:
        print(f"make slides: {err}", file=sys.stderr)
        return 1
    for chapters, folder, _ in SETS:
        build = builds.get(folder)
        if build is None:
            continue
        notes = sum(len(speaker_notes(ROOT / chapters / f"{stem}.ipynb")) for stem in build.decks)
        print(build.log.rstrip())
        print(f"{(out_dir / folder).as_posix()}: {len(build.decks)} decks, {notes} speaker notes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
