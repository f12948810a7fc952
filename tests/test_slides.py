"""`make slides`: every chapter becomes a reveal.js deck that is a real presentation.

The decks are built here by tools/slides.py, the code `make slides` runs, then read back: the number of slides a
presenter steps through must be sensible, the deck must follow the chapter's slide metadata (a `slide` cell opens a
horizontal slide, a `subslide` a vertical one, `skip` cells are left out), and every slide must open with a heading.
Every deck also carries speaker notes for the presenter and fragment steps for a live session: the answer to each
"Predict, then run" question appears only on the next key press. The notes live on the chapter's instructor page
(its "Speaker notes (shown in the deck)" section), never in a learner's notebook: tools/slides.py puts each back
after the chapter cell its heading names, in both editions. Headings keep their case and figures their alt text.
"""

import json
import re
import sys
from html.parser import HTMLParser

import nbformat
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import slide_assets
import slides

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
JA_CHAPTERS = sorted((ROOT / "ja" / "chapters").glob("*.ipynb"))
MIN_SLIDES, MAX_SLIDES = 5, 60


def build_decks(notebooks, out_dir, with_assets: bool = False):
    """The decks as `make slides` builds them (tools/slides.py: the chapter with its speaker notes put back, nbconvert
    with the course's flags and template, assets/ next to the decks); with_assets also copies the pinned assets
    there, so that the decks run (tests/test_browser.py)."""
    if with_assets:
        slide_assets.install(out_dir / "assets")
    return slides.build_decks(notebooks, out_dir).decks


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
def builds(tmp_path_factory):
    """Every deck `make slides` builds, by the function it runs: {folder: Build} for ".", "no-code", "ja" and
    "ja/no-code" (the assets are not copied: nothing here opens a deck)."""
    return slides.build_all(tmp_path_factory.mktemp("slides"), install_assets=False)


@pytest.fixture(scope="module")
def decks(builds):
    """The English decks with the code, by chapter stem."""
    return builds["."].decks


def every_deck(builds):
    """(chapter notebook, deck) for every deck of both editions, with and without the code."""
    for chapters, folder, _ in slides.SETS:
        for stem, deck in builds[folder].decks.items():
            yield ROOT / chapters / f"{stem}.ipynb", deck


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_is_a_real_deck(decks, path):
    types = slide_types(slides.deck_notebook(path))  # the chapter with its speaker notes
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
    assert deck.notes == types.count("notes") == len(slides.speaker_notes(path))
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


def tiny_course(tmp_path, note_after="a1", extra_cells=()):
    """A one-chapter course: chapters/tiny.ipynb and instructor/tiny.md, whose one speaker note follows `note_after`."""

    def md(text, kind=None, cell_id=None):
        cell = nbformat.v4.new_markdown_cell(text)
        if kind:
            cell.metadata["slideshow"] = {"slide_type": kind}
        if cell_id:
            cell.id = cell_id
        return cell

    cells = [
        md("# Title", "slide"),
        md("hidden", "skip"),
        md("## Part A", "slide"),
        md("### A.1", "subslide", "a1"),
        md("a point", "fragment"),
        md("## Part B", "slide"),
        md("more"),
        *(md(*c) for c in extra_cells),
    ]
    path = tmp_path / "chapters" / "tiny.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))
    (tmp_path / "instructor").mkdir()
    (tmp_path / "instructor" / "tiny.md").write_text(
        "# Tiny\n\n## Learning goals\n\nNone.\n\n## Speaker notes (shown in the deck)\n\nThe notes.\n\n"
        f"### After `{note_after}` · A.1\n\nsay this aloud\n"
    )
    return path


def test_the_deck_reader_follows_slide_metadata(tmp_path):
    """The reader above against a tiny notebook whose structure is known: it can tell a wrong deck. Its speaker
    note comes from its instructor page and lands right after the cell the note's heading names."""
    path = tiny_course(tmp_path)
    deck = Deck(build_decks([path], tmp_path / "out")["tiny"].read_text())
    assert deck.horizontal == 3  # Title | Part A (+ A.1 below it) | Part B
    assert deck.slides == [1, 1, 2, 2]  # cells per slide: Title; Part A; A.1 + fragment; Part B + more
    assert (deck.cells, deck.notes, deck.fragments) == (6, 1, 1)  # 7 cells less the skipped one
    assert [plain(text) for text in deck.notes_text] == ["say this aloud"]
    assert "hidden" not in (tmp_path / "out" / "tiny.slides.html").read_text().split('class="slides"')[1]
    deck_nb = slides.deck_notebook(path)
    ids = [c.id for c in deck_nb.cells]
    assert ids[ids.index("a1") + 1] == "a1-note-1"  # right after its cell, before A.1's fragment
    assert slide_types(deck_nb).count("notes") == 1 and not slides.notes_cells(nbformat.read(path, as_version=4))


def test_a_note_whose_cell_is_gone_stops_the_build(tmp_path, monkeypatch, capsys):
    """A note anchored to a cell id the chapter no longer has fails loudly, naming the note and the cell; so does a
    chapter that holds a `notes` cell again (learners would read it)."""
    path = tiny_course(tmp_path / "gone", note_after="a9-deleted")
    with pytest.raises(slides.NotesError, match=r"a9-deleted.*no longer"):
        build_decks([path], tmp_path / "out")
    path = tiny_course(tmp_path / "inline", extra_cells=[("the answer is 4", "notes", "b-notes")])
    with pytest.raises(slides.NotesError, match=r"b-notes.*learners would read"):
        build_decks([path], tmp_path / "out")
    monkeypatch.setattr(slides, "ROOT", tmp_path / "gone")  # `make slides` says so and exits with 1
    assert slides.main([str(tmp_path / "decks")]) == 1
    assert "a9-deleted" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# speaker notes and fragment steps: a deck to present from, not a wall of prose
# --------------------------------------------------------------------------------------------------
MIN_NOTES, MIN_FRAGMENTS = 3, 2
PREDICT = "**Predict, then run.**"


def plain(text: str) -> str:
    """Text without Markdown's emphasis and code marks and with single spaces, so that a cell's source and its
    rendered HTML compare equal."""
    return " ".join(re.sub(r"[*`_\\]", "", text).split())


LEARNER_FOLDERS = ("chapters", "exercises", "solutions")
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def test_no_learner_notebook_holds_speaker_notes():
    """JupyterLab shows a `notes` cell to learners as ordinary text, and a note often answers the "Predict, then
    run" question right below it. The notes live on the instructor pages (tools/slides.py puts them in the decks)."""
    notebooks = [p for f in LEARNER_FOLDERS for root in (ROOT, ROOT / "ja") for p in sorted((root / f).glob("*.ipynb"))]
    assert len(notebooks) >= 2 * len(CHAPTERS)
    held = {
        str(p.relative_to(ROOT)): [c["id"] for c in slides.notes_cells(nbformat.read(p, as_version=4))]
        for p in notebooks
    }
    held = {name: ids for name, ids in held.items() if ids}
    assert not held, f"speaker notes in learner notebooks (move them to instructor/NN_topic.md): {held}"


@pytest.mark.parametrize("path", CHAPTERS + JA_CHAPTERS, ids=lambda p: "/".join(p.parts[-3:]))
def test_every_chapter_has_speaker_notes_that_find_their_cells(path):
    """Each chapter's page gives its deck at least 3 notes, in the chapter's language, each anchored to a cell the
    chapter has (slides.deck_notebook raises otherwise); the Japanese page shows the same Japanese text."""
    notes = slides.speaker_notes(path)
    assert len(notes) >= MIN_NOTES, f"{path.name}: {len(notes)} speaker notes; add some to its instructor page"
    slides.deck_notebook(path)
    if slides.course_of(path)[1] == "ja":
        page = (ROOT / "ja" / "instructor" / f"{path.stem}.md").read_text()
        assert [n.anchor for n in notes] == [n.anchor for n in slides.speaker_notes(ROOT / "chapters" / path.name)]
        for note in notes:
            assert JAPANESE.search(note.text), f"{note.heading}: not translated (i18n/ja/instructor/{path.stem}.yaml)"
            assert note.text in page and f"`{note.anchor}`" in note.heading, note.heading


@pytest.mark.slow
def test_every_deck_carries_every_note_of_its_chapter(builds):
    """All four decks of a chapter (both editions, with and without code) carry its notes, in order, each whole, and
    nothing else in their speaker view (reveal.js shows them with key S)."""
    checked = 0
    for path, deck_path in every_deck(builds):
        deck = Deck(deck_path.read_text())
        notes = slides.speaker_notes(path)
        shown = [plain(text) for text in deck.notes_text]
        assert len(shown) == len(notes), f"{deck_path}: {len(shown)} notes for the page's {len(notes)}"
        for note, text in zip(notes, shown):
            assert plain(note.text) in text, f"{deck_path}: {note.heading} is not in the deck's notes:\n{text}"
        checked += len(notes)
    assert checked >= 4 * MIN_NOTES * len(CHAPTERS)


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_deck_has_speaker_notes_and_fragment_steps(decks, path):
    """At least 3 speaker notes and 2 fragment steps per deck (reveal.js shows the notes in the speaker view)."""
    deck = Deck(decks[path.stem].read_text())
    assert deck.notes >= MIN_NOTES, f"{path.name}: {deck.notes} speaker notes; add notes to its instructor page"
    assert deck.fragments >= MIN_FRAGMENTS, f"{path.name}: {deck.fragments} fragments; mark answer cells `fragment`"


@pytest.mark.parametrize("path", CHAPTERS + JA_CHAPTERS, ids=lambda p: "/".join(p.parts[-3:]))
def test_notes_and_fragments_are_placed_for_a_live_session(path):
    """In the deck, a note sits on its slide before the slide's first fragment (reveal.js shows a note inside a
    fragment only once that fragment is revealed); the answer to every "Predict, then run" question is a fragment,
    so the room sees the question alone first."""
    nb = slides.deck_notebook(path)
    cells, types = nb["cells"], slide_types(nb)
    ids = [c["id"] for c in cells]
    assert len(ids) == len(set(ids)), f"{path.name}: cell ids must be unique"
    fragment_seen = False
    for i, (cell, kind) in enumerate(zip(cells, types)):
        if kind in ("slide", "subslide"):
            fragment_seen = False
        fragment_seen |= kind == "fragment"
        if kind == "notes":
            assert not fragment_seen, f"{path.name}: move the note {cell['id']} before its slide's first fragment"
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and source.startswith(PREDICT):
            assert types[i + 1] == "fragment", f"{path.name} cell {i + 1}: the answer to a prediction is a fragment"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_speaker_notes_bring_no_new_numbers(path):
    """Every number a note states is already in the chapter (its text or its stored outputs) or in the rest of its
    instructor page: the notes point at what was measured, they do not measure anything."""
    nb = json.loads(path.read_text())
    page = (INSTRUCTOR / f"{path.stem}.md").read_text()
    known = [page.split(f"## {slides.NOTES_SECTION}")[0]]
    for cell in nb["cells"]:
        known.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            known.append("".join(out.get("text", "")))
            known.extend("".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))
    known = "\n".join(known)
    for note in slides.speaker_notes(path):
        for number in re.findall(r"\d+(?:\.\d+)*", note.text):
            assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", known), (
                f"{path.name}: the note {note.heading} says {number}, which neither the chapter nor its guide states"
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
    f"## {slides.NOTES_SECTION}",
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


def test_the_decks_load_nothing_from_the_network(builds):
    """Every script and style sheet of every deck points at the shared assets folder, never at a CDN."""
    for path, deck in every_deck(builds):
        html = deck.read_text()
        remote = re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"(https?://[^\"]+)\"", html)
        assert remote == [], f"{deck} loads {remote}"
        assets = "../" * (len(deck.parent.relative_to(builds["."].decks[path.stem].parent).parts)) + "assets"
        assert f'src="{assets}/requirejs/require.js"' in html and f"{assets}/reveal.js/dist/reveal.js" in html, deck
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


HEADING_CASE = re.compile(
    r"\.reveal \.slides h1, \.reveal \.slides h2, \.reveal \.slides h3,\s*"
    r"\.reveal \.slides h4, \.reveal \.slides h5, \.reveal \.slides h6 \{\s*text-transform: none;\s*\}"
)


def test_headings_keep_their_case(builds):
    """reveal.js's white theme uppercases h1-h6 ("γ and β" showed as "Γ AND Β", "ε:" as "E:"); every deck overrides
    it with a rule more specific than the theme's. tests/test_browser.py reads the computed style in Chromium."""
    for _, deck in every_deck(builds):
        html = deck.read_text()
        assert HEADING_CASE.search(html), f"{deck}: headings are uppercased by the theme"
        assert html.index("text-transform: none") < html.index("</head>"), deck


class Images(HTMLParser):
    def __init__(self, html: str):
        super().__init__()
        self.alts = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.alts.append(dict(attrs).get("alt"))


def stored_alts(path) -> list:
    """The alt text the notebook stores for each of its figures (course_utils/figures.py `show`), in order."""
    nb = nbformat.read(path, as_version=4)
    return [
        out.get("metadata", {}).get(kind, {}).get("alt")
        for cell in nb.cells
        for out in cell.get("outputs", [])
        for kind in out.get("data", {})
        if kind in ("image/png", "image/jpeg")
    ]


def test_every_figure_in_a_deck_has_its_alt_text(builds):
    """Each figure of each deck carries the alt text its notebook stores (nbconvert's template dropped it, wrote "No
    description has been provided for this image" and warned 28 times per `make slides`)."""
    figures = 0
    for path, deck in every_deck(builds):
        stored = stored_alts(path)
        assert all(stored), f"{path}: a figure without alt text; show it with course_utils.figures.show(fig, alt=...)"
        assert Images(deck.read_text()).alts == stored, deck
        figures += len(stored)
    assert figures >= 4 * len(CHAPTERS)
    for folder, build in builds.items():
        assert "Alternative text" not in build.log, f"{folder}: {build.log}"


def test_make_slides_runs_the_deck_builder():
    """The Makefile's slides target builds through tools/slides.py (what these tests build), not nbconvert directly."""
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^slides:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe, "the Makefile has no slides target"
    assert "tools/slides.py $(SLIDES_DIR)" in recipe.group(1) and "nbconvert" not in recipe.group(1)


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
