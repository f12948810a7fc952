"""`make slides`: every chapter becomes a reveal.js deck that is a real presentation.

The decks are built here with exactly the nbconvert flags the Makefile's `slides` target uses, then read
back: the number of slides a presenter steps through must be sensible, the deck must follow the chapter's
slide metadata (a `slide` cell opens a horizontal slide, a `subslide` a vertical one, `skip` cells are left
out, `notes` become speaker notes), and every slide must open with a heading. Every deck also carries speaker notes
for the presenter (chosen from the chapter's instructor page) and fragment steps for a live session: the answer to
each "Predict, then run" question appears only on the next key press.
"""

import json
import re
import shlex
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import slide_assets

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
MIN_SLIDES, MAX_SLIDES = 5, 60


def makefile_slide_flags():
    """The `SLIDES_FLAGS := ...` line of the Makefile, so the test builds what `make slides` builds."""
    text = (ROOT / "Makefile").read_text()
    match = re.search(r"^SLIDES_FLAGS\s*:?=\s*(.+)$", text, re.M)
    assert match, "the Makefile must define SLIDES_FLAGS for its slides target"
    flags = shlex.split(match.group(1))
    assert flags[:2] == ["--to", "slides"]
    return flags


def build_decks(notebooks, out_dir, with_assets: bool = False):
    """The decks as `make slides` builds them: the Makefile's flags and the offline flags of tools/slide_assets.py
    (assets/ next to the decks); with_assets also copies the pinned assets there, so that the decks run."""
    if with_assets:
        slide_assets.install(out_dir / "assets")
    cmd = [
        sys.executable,
        "-m",
        "nbconvert",
        *makefile_slide_flags(),
        *slide_assets.offline_flags("assets"),
        "--output-dir",
        str(out_dir),
        *map(str, notebooks),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return {nb.stem: out_dir / f"{nb.stem}.slides.html" for nb in notebooks}


class Deck(HTMLParser):
    """The slide structure of a reveal.js deck: nested <section>s inside <div class="slides">."""

    def __init__(self, html: str):
        super().__init__()
        self.in_slides = False
        self.depth = 0
        self.open_cells = []  # per open <section>: how many cells it holds directly
        self.horizontal = 0  # top-level sections (left/right in reveal.js)
        self.slides = []  # the slides a presenter steps through: sections that hold cells
        self.cells = 0
        self.notes = 0
        self.notes_text = []  # the text of each speaker note, as the speaker view shows it
        self.in_notes = False
        self.fragments = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag == "div" and "slides" in classes:
            self.in_slides = True
        if not self.in_slides:
            return
        if tag == "section":
            self.depth += 1
            self.horizontal += self.depth == 1
            self.open_cells.append(0)
        elif tag == "aside" and "notes" in classes:
            self.notes += 1
            self.notes_text.append("")
            self.in_notes = True
        elif tag == "div" and "jp-Cell" in classes and not self.in_notes:  # speaker notes are not on the slide
            self.cells += 1
            self.open_cells[-1] += 1
        if "fragment" in classes:
            self.fragments += 1

    def handle_data(self, data):
        if self.in_notes:
            self.notes_text[-1] += data

    def handle_endtag(self, tag):
        if tag == "aside":
            self.in_notes = False
        if self.in_slides and tag == "section":
            held = self.open_cells.pop()
            if held:
                self.slides.append(held)
            self.depth -= 1


def slide_types(nb):
    return [c.get("metadata", {}).get("slideshow", {}).get("slide_type", "-") for c in nb["cells"]]


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    return build_decks(CHAPTERS, tmp_path_factory.mktemp("slides"))


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_is_a_real_deck(decks, path):
    nb = json.loads(path.read_text())
    types = slide_types(nb)
    deck = Deck(decks[path.stem].read_text())

    assert MIN_SLIDES <= len(deck.slides) <= MAX_SLIDES, (
        f"{path.name}: {len(deck.slides)} slides; mark section starts `slide` and sub-sections `subslide` "
        f"(View -> Cell Toolbar / the property inspector's Slide Type) so the deck has {MIN_SLIDES}-{MAX_SLIDES}"
    )
    # the deck follows the metadata: the first cell always opens a slide
    opens_horizontal = types.count("slide") + (types[0] != "slide")
    opens_slide = opens_horizontal + types.count("subslide")
    assert deck.horizontal == opens_horizontal
    assert len(deck.slides) == opens_slide
    assert deck.notes == types.count("notes")
    assert deck.cells == len(types) - types.count("skip") - types.count("notes"), "skip cells must be left out"
    assert deck.fragments >= types.count("fragment")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_slide_opens_with_a_heading(path):
    nb = json.loads(path.read_text())
    for i, (cell, kind) in enumerate(zip(nb["cells"], slide_types(nb))):
        if kind in ("slide", "subslide") or i == 0:
            source = "".join(cell["source"]).lstrip()
            assert cell["cell_type"] == "markdown" and source.startswith("#"), (
                f"{path.name} cell {i} opens a {kind if kind != '-' else 'first'} slide but is not a Markdown heading"
            )


def test_the_deck_reader_follows_slide_metadata(tmp_path):
    """The reader above against a tiny notebook whose structure is known: it can tell a wrong deck."""
    import nbformat

    def md(text, kind=None):
        cell = nbformat.v4.new_markdown_cell(text)
        if kind:
            cell.metadata["slideshow"] = {"slide_type": kind}
        return cell

    cells = [
        md("# Title", "slide"),
        md("hidden", "skip"),
        md("## Part A", "slide"),
        md("### A.1", "subslide"),
        md("a point", "fragment"),
        md("say this aloud", "notes"),
        md("## Part B", "slide"),
        md("more"),
    ]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))
    deck = Deck(build_decks([path], tmp_path / "out")["tiny"].read_text())
    assert deck.horizontal == 3  # Title | Part A (+ A.1 below it) | Part B
    assert deck.slides == [1, 1, 2, 2]  # cells per slide: Title; Part A; A.1 + fragment; Part B + more
    assert (deck.cells, deck.notes, deck.fragments) == (6, 1, 1)  # 8 cells less the skipped one and the notes
    assert [plain(text) for text in deck.notes_text] == ["say this aloud"]
    assert "hidden" not in (tmp_path / "out" / "tiny.slides.html").read_text().split('class="slides"')[1]


# --------------------------------------------------------------------------------------------------
# speaker notes and fragment steps: a deck to present from, not a wall of prose
# --------------------------------------------------------------------------------------------------
MIN_NOTES, MIN_FRAGMENTS = 3, 2
PREDICT = "**Predict, then run.**"


def plain(text: str) -> str:
    """Text without Markdown's emphasis and code marks and with single spaces, so that a cell's source and its
    rendered HTML compare equal."""
    return " ".join(re.sub(r"[*`_\\]", "", text).split())


def notes_cells(nb):
    return [c for c, kind in zip(nb["cells"], slide_types(nb)) if kind == "notes"]


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_deck_has_speaker_notes_and_fragment_steps(decks, path):
    """At least 3 speaker notes and 2 fragment steps per deck, and every `notes` cell's text is in the deck's notes
    (reveal.js shows them in the speaker view, key S)."""
    nb = json.loads(path.read_text())
    deck = Deck(decks[path.stem].read_text())
    assert deck.notes >= MIN_NOTES, f"{path.name}: {deck.notes} speaker notes; add `notes` cells"
    assert deck.fragments >= MIN_FRAGMENTS, f"{path.name}: {deck.fragments} fragments; mark answer cells `fragment`"
    shown = [plain(text) for text in deck.notes_text]
    for cell in notes_cells(nb):
        text = plain("".join(cell["source"]))
        assert text and any(text in note for note in shown), f"{path.name}: {cell['id']} not in the notes"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_notes_and_fragments_are_placed_for_a_live_session(path):
    """A note is Markdown and sits on its slide before the slide's first fragment (reveal.js shows a note inside a
    fragment only once that fragment is revealed); the answer to every "Predict, then run" question is a fragment, so
    the room sees the question alone first."""
    nb = json.loads(path.read_text())
    cells, types = nb["cells"], slide_types(nb)
    ids = [c["id"] for c in cells]
    assert len(ids) == len(set(ids)), f"{path.name}: cell ids must be unique"
    fragment_seen = False
    for i, (cell, kind) in enumerate(zip(cells, types)):
        if kind in ("slide", "subslide"):
            fragment_seen = False
        fragment_seen |= kind == "fragment"
        if kind == "notes":
            assert cell["cell_type"] == "markdown", f"{path.name} cell {i}: speaker notes are Markdown cells"
            assert not fragment_seen, f"{path.name} cell {i}: move the note before its slide's first fragment"
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and source.startswith(PREDICT):
            assert types[i + 1] == "fragment", f"{path.name} cell {i + 1}: the answer to a prediction is a fragment"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_speaker_notes_bring_no_new_numbers(path):
    """Every number a note states is already in the chapter (its text or its stored outputs) or its instructor
    page: the notes point at what was measured, they do not measure anything."""
    nb = json.loads(path.read_text())
    known = [(INSTRUCTOR / f"{path.stem}.md").read_text()]
    for cell, kind in zip(nb["cells"], slide_types(nb)):
        if kind != "notes":
            known.append("".join(cell["source"]))
            for out in cell.get("outputs", []):
                known.append("".join(out.get("text", "")))
                known.extend("".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))
    known = "\n".join(known)
    for cell in notes_cells(nb):
        for number in re.findall(r"\d+(?:\.\d+)*", "".join(cell["source"])):
            assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", known), (
                f"{path.name}: note {cell['id']} says {number}, which neither the chapter nor its guide states"
            )


# --------------------------------------------------------------------------------------------------
# the instructor guide that goes with the decks
# --------------------------------------------------------------------------------------------------
INSTRUCTOR = ROOT / "instructor"
GUIDE_SECTIONS = [
    "## Learning goals",
    "## Suggested timing",
    "## What to draw on the board",
    "## Where learners stumble",
    "## Check questions",
]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_an_instructor_page(path):
    page = INSTRUCTOR / f"{path.stem}.md"
    assert page.exists(), f"write instructor/{page.name} (see instructor/README.md for the parts every page has)"
    text = page.read_text()
    for heading in GUIDE_SECTIONS:
        assert heading in text, f"{page.name} lacks a '{heading}' section"
    assert "docs/grading.md" in text, f"{page.name} should link the grading guide"
    assert f"({page.name})" in (INSTRUCTOR / "README.md").read_text(), f"instructor/README.md does not list {page.name}"


def test_check_question_answers_match_the_chapters():
    """Each page gives, for question N, the letter the chapter's quiz accepts (pages go stale otherwise)."""
    for page in sorted(INSTRUCTOR.glob("[0-9][0-9]_*.md")):
        chapter = ROOT / "chapters" / f"{page.stem}.ipynb"
        assert chapter.exists(), f"{page.name} has no chapter"
        shown = "\n".join(
            "".join(o.get("data", {}).get("text/markdown", ""))
            for c in json.loads(chapter.read_text())["cells"]
            for o in c.get("outputs", [])
        )
        answers = re.findall(
            r"\*\*Question (\d+)\.\*\*.*?<summary>Show the answer</summary>\s*\*\*\((\w)\)\*\*", shown, re.S
        )
        on_page = re.findall(r"^(\d+)\. \*\*.*?→\s+\*\*\((\w)\)", page.read_text(), re.M | re.S)
        assert on_page == answers, f"{page.name}: answers {on_page} vs the chapter's {answers}"


def test_the_decks_load_nothing_from_the_network(decks):
    """Every script and style sheet of a deck points at the assets folder next to it, never at a CDN."""
    for path in decks.values():
        html = path.read_text()
        remote = re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"(https?://[^\"]+)\"", html)
        assert remote == [], f"{path.name} loads {remote}"
        assert 'src="assets/requirejs/require.js"' in html and "assets/reveal.js/dist/reveal.js" in html
        assert "import mermaid" not in html


def test_the_decks_typeset_each_equation_once_and_whole(decks):
    """MathJax is configured once, breaks no line by itself (a hidden slide measures 0 wide, and its equations broke
    at every operator), and a slide change queues its re-render behind the typesetting in progress (started at once,
    it drew equations twice). tests/test_browser.py checks the result on screen."""
    for path in decks.values():
        html = path.read_text()
        assert html.count("MathJax.Hub.Config(") == 1, path.name
        assert "linebreaks: {automatic: false}" in html and "automatic: true" not in html, path.name
        assert 'MathJax.Hub.Queue(["Rerender", MathJax.Hub, event.currentSlide])' in html, path.name
        assert "MathJax.Hub.Rerender(" not in html, f"{path.name} re-renders outside MathJax's queue"


def test_long_code_lines_wrap_on_the_slide(decks):
    """A line of code or output longer than the slide wraps instead of running off its right edge (chapter 03's
    padded_batch lost the ends of its docstring and of its randn call)."""
    for path in decks.values():
        html = path.read_text()
        style = re.search(r"\.reveal \.jp-InputArea-editor pre, \.reveal \.jp-OutputArea-output pre \{([^}]*)\}", html)
        assert style and "white-space: pre-wrap" in style.group(1), path.name


def test_slide_assets_are_pinned_and_verified(tmp_path):
    """The lock pins exact versions with sha512 integrity; a tarball that differs from the lock is refused."""
    packages = slide_assets.lock()
    assert set(packages) == {"reveal.js", "mathjax", "requirejs", "jquery"}
    for spec in packages.values():
        assert re.fullmatch(r"\d+\.\d+\.\d+", spec["version"]) and spec["integrity"].startswith("sha512-")
        assert spec["tarball"].startswith("https://registry.npmjs.org/") and spec["version"] in spec["tarball"]
    spec = dict(packages["requirejs"])
    good = slide_assets.tarball("requirejs", spec)
    (tmp_path / f"requirejs-{spec['version']}.tgz").write_bytes(good + b"tampered")
    with pytest.raises(ValueError, match="the lock says"):
        slide_assets.tarball("requirejs", spec, cache=tmp_path)


def test_instructor_links_resolve():
    for page in INSTRUCTOR.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to a missing {target}"
