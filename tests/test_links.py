"""Every relative link a learner or instructor can click resolves: in the notebooks' Markdown cells (JupyterLab opens a
relative link from the notebook's own folder) and in every Markdown page of the repository. The Japanese edition links
to its own pages wherever one exists (tools/translate.py rewrites the links; English only where there is none)."""

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import translate

# [text](target) and <a href="target">, skipping images' data URIs; the target ends at a space or ")"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|href=\"([^\"]+)\"")
EXTERNAL = ("http://", "https://", "mailto:", "#", "data:")

FOLDERS = ("chapters", "exercises", "solutions", "ja/chapters", "ja/exercises", "ja/solutions")  # both editions
NOTEBOOKS = sorted(p for d in FOLDERS for p in (ROOT / d).glob("*.ipynb"))
PAGES = sorted(
    p
    for p in ROOT.rglob("*.md")
    if not any(part in {".venv", "node_modules", "artifacts", ".git", ".pytest_cache"} for part in p.parts)
)


def links_in(text: str) -> list:
    return [a or b for a, b in LINK.findall(text)]


def markdown_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    return path.read_text(encoding="utf-8")


def broken_links(path: Path) -> list:
    broken = []
    for target in links_in(markdown_of(path)):
        if target.startswith(EXTERNAL):
            continue
        file = target.split("#", 1)[0].split("?", 1)[0]
        if not (path.parent / file).exists():
            broken.append(target)
    return broken


@pytest.mark.parametrize("path", NOTEBOOKS + PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    assert broken_links(path) == [], f"{path.relative_to(ROOT)} links to files that do not exist"


def test_the_link_check_finds_links_and_catches_a_broken_one(tmp_path):
    assert len(PAGES) >= 10 and len(NOTEBOOKS) >= 19
    page = tmp_path / "page.md"
    (tmp_path / "there.ipynb").write_text("{}")
    page.write_text(
        '[ok](there.ipynb) [web](https://example.org) ![img](data:x) [gone](missing.ipynb#top) <a href="nope.md">'
    )
    assert links_in(page.read_text()) == ["there.ipynb", "https://example.org", "missing.ipynb#top", "nope.md"]
    assert broken_links(page) == ["missing.ipynb#top", "nope.md"]


def english_with_a_counterpart(text: str, folder: str) -> list:
    """The links of a page in `folder` (repository-relative) to an English document that has a Japanese counterpart."""
    found = []
    for target in links_in(text):
        file = target.split("#", 1)[0].split("?", 1)[0]
        if target.startswith(EXTERNAL) or not file:
            continue
        repo_path = os.path.normpath(os.path.join(folder, file)).replace(os.sep, "/")
        counterpart = translate.target_of(repo_path)
        if counterpart and (ROOT / counterpart).exists():
            found.append(f"{target} (the Japanese edition has {counterpart})")
    return found


JAPANESE = [p for p in NOTEBOOKS + PAGES if p.relative_to(ROOT).parts[0] == "ja" or p.name == "README.ja.md"]


@pytest.mark.parametrize("path", JAPANESE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_japanese_edition_links_to_its_own_pages(path):
    folder = path.parent.relative_to(ROOT).as_posix()
    assert english_with_a_counterpart(markdown_of(path), folder) == [], (
        f"{path.relative_to(ROOT)} links to English documents; fix tools/translate.py (rewrite_links) or the links in "
        "i18n/ja/, then `make translations`"
    )


def test_the_japanese_link_check_catches_a_link_to_the_english_edition():
    assert len(JAPANESE) >= 20 and ROOT / "README.ja.md" in JAPANESE
    text = (
        "[`00`](chapters/00_welcome.ipynb) [ja](ja/chapters/00_welcome.ipynb) [g](docs/grading.md#top) "
        "[n](docs/numerics.md) [i](instructor/README.md) [r](README.md) [w](https://example.org)"
    )
    assert english_with_a_counterpart(text, ".") == [
        "chapters/00_welcome.ipynb (the Japanese edition has ja/chapters/00_welcome.ipynb)",
        "docs/grading.md#top (the Japanese edition has ja/docs/grading.md)",
        "instructor/README.md (the Japanese edition has ja/instructor/README.md)",
        "README.md (the Japanese edition has README.ja.md)",
    ]
    # from ja/instructor/, ../chapters/ is the Japanese chapter and ../../chapters/ the English one
    assert english_with_a_counterpart("[a](../chapters/00_welcome.ipynb)", "ja/instructor") == []
    assert english_with_a_counterpart("[a](../../chapters/00_welcome.ipynb)", "ja/instructor") != []


CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.ipynb"))


def last_cell_links(path: Path) -> list:
    return links_in(nbformat.read(path, as_version=4).cells[-1].source)


@pytest.mark.parametrize("chapter", CHAPTERS[1:], ids=lambda p: p.stem)
def test_each_chapter_ends_with_links_to_its_exercise_and_the_next_chapter(chapter):
    number = chapter.name[:2]
    exercise = next(e for e in EXERCISES if e.name.startswith(f"ex{number}_"))
    links = last_cell_links(chapter)
    assert f"../exercises/{exercise.name}" in links, f"{chapter.name}: the last cell should link its exercise"
    later = [c for c in CHAPTERS if c.name[:2] > number]
    if later:
        assert later[0].name in links, f"{chapter.name}: the last cell should link {later[0].name}"


def test_chapter_00_opens_with_a_course_map_that_agrees_with_the_instructor_guide():
    first = nbformat.read(CHAPTERS[0], as_version=4).cells[0].source
    rows = [r for r in first.splitlines() if re.match(r"\| \d\d \|", r)]
    assert [r[2:4] for r in rows] == [c.name[:2] for c in CHAPTERS], "one row per chapter, in order"
    links = links_in(first)
    assert [c.name for c in CHAPTERS[1:]] == [t for t in links if not t.startswith("../")]
    assert [f"../exercises/{e.name}" for e in EXERCISES] == [t for t in links if t.startswith("../exercises/")]
    assert "01_layernorm_by_hand.ipynb" in last_cell_links(CHAPTERS[0])
    # the minutes are the instructor guide's session lengths, chapter by chapter
    guide = (ROOT / "instructor" / "README.md").read_text(encoding="utf-8")
    sessions = dict(re.findall(r"\| \[(\d\d)_[^\]]+\]\([^)]+\) \| [^|]+\| ([^|]+?) min \|", guide))
    minutes = {r[2:4]: r.rstrip(" |").rsplit("|", 1)[1].strip() for r in rows}
    assert minutes == sessions, "the course map's minutes differ from instructor/README.md"


def test_each_instructor_page_plans_the_time_the_guide_and_the_course_map_give():
    """The session length in instructor/README.md (and so in chapter 00's course map) is the page's own timing."""
    guide = (ROOT / "instructor" / "README.md").read_text(encoding="utf-8")
    sessions = dict(re.findall(r"\| \[(\d\d)_[^\]]+\]\([^)]+\) \| [^|]+\| ([^|]+?) min \|", guide))
    assert len(sessions) == len(CHAPTERS)
    for page in sorted((ROOT / "instructor").glob("[0-9][0-9]_*.md")):
        heading = re.search(r"^## Suggested timing \((\S+) min", page.read_text(encoding="utf-8"), re.M)
        assert heading, f"{page.name}: no '## Suggested timing (N min ...)' heading"
        assert heading.group(1) == sessions[page.name[:2]], f"{page.name} plans {heading.group(1)} min"
