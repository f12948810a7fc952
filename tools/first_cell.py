"""The first code cell of every notebook: a notebook opened on its own (Colab, a download) installs course_utils.

    python tools/first_cell.py           # write the cell into chapters/ and solutions/, then regenerate exercises/
                                         # and the Japanese edition (ja/) and number the new cell as an execution would
    python tools/first_cell.py --check   # exit 1 when a notebook's first code cell is not the template's

One template (TEMPLATE below) for every chapter and solution, and through the generators for every exercise and the
Japanese edition: the repository comes from pyproject.toml's `[project.urls] Repository`, the tag from its
`[project] version`, so a version bump is this command. The cell (course_utils/lone.py explains what it installs):

* sits right after the title cell, with the id `first-cell` and the slide type `skip` (no deck shows it);
* installs nothing where course_utils can be imported (the course's folder, after `make setup`), and prints nothing;
* states the notebook's language (`COURSE_NOTEBOOK_LANG`, rule 4 of course_utils/i18n.py): "en", and "ja" in the
  Japanese edition, through the `strings:` entry that this tool keeps in each i18n/ja/<notebook>.yaml.

Its stored execution count is 1 and it has no outputs, as a fresh execution leaves it, so inserting it shifts the
counts of the cells after it by one instead of re-executing the notebook (`make execute` would store the same).
tests/test_first_cell.py fails when a notebook's cell differs from the template; tests/test_lone_notebook.py runs a
chapter alone in a fresh virtual environment that lacks course_utils.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from course_utils import exercises, learner_work, nbtools  # noqa: E402

CELL_ID = "first-cell"
METADATA = {"slideshow": {"slide_type": "skip"}}
SOURCE_FOLDERS = ("chapters", "solutions")
GENERATED_FOLDERS = ("exercises", "ja/chapters", "ja/solutions", "ja/exercises")
# the one string literal that differs in the Japanese edition (tools/translate.py's `strings:`)
LANGUAGE_LITERAL = {"en": '"en"', "ja": '"ja"'}

TEMPLATE = """\
# Opened on its own (in Colab, or downloaded)? This cell installs the course's helper package, course_utils, at the
# course's version, and leaves the torch you have alone. In the course's own folder it installs nothing.
import importlib.util
import os
import subprocess
import sys

os.environ["COURSE_NOTEBOOK_LANG"] = {language}  # the checks' language where no COURSE_LANG or .course_lang chooses
if importlib.util.find_spec("course_utils") is None:
    source = os.environ.get("COURSE_UTILS_SOURCE", "git+{repository}@v{version}")
    quiet = ["-q", "--disable-pip-version-check", "--root-user-action=ignore", "--no-warn-conflicts"]
    subprocess.run([sys.executable, "-m", "pip", "install", *quiet, "--no-deps", source], check=True)
    importlib.invalidate_caches()
    from course_utils.lone import install_missing_requirements

    install_missing_requirements()"""


def project(root: Path = ROOT) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def source(lang: str = "en", root: Path = ROOT) -> str:
    """The cell's source for a notebook of the edition `lang`."""
    meta = project(root)
    return TEMPLATE.format(
        language=LANGUAGE_LITERAL[lang], repository=meta["urls"]["Repository"], version=meta["version"]
    )


def language_of(path: Path, root: Path = ROOT) -> str:
    return "ja" if Path(path).resolve().relative_to(root.resolve()).parts[0] == "ja" else "en"


def notebooks(folders, root: Path = ROOT) -> list[Path]:
    return [p for folder in folders for p in sorted((root / folder).glob("*.ipynb"))]


def _shift(cell, by: int) -> None:
    if cell.get("execution_count") is not None:
        cell.execution_count += by
    for out in cell.get("outputs", []):
        if out.get("output_type") == "execute_result" and out.get("execution_count") is not None:
            out.execution_count += by


def place(nb, text: str) -> bool:
    """Put the cell (source `text`) right after the title cell of `nb`, numbered 1, and number the code cells after
    it as an execution would (+1 when it is new); returns whether anything changed."""
    import nbformat

    at = next((i for i, c in enumerate(nb.cells) if c.get("id") == CELL_ID), None)
    if at is None:
        for cell in nb.cells:
            if cell.cell_type == "code":
                _shift(cell, 1)
        cell = nbformat.v4.new_code_cell(text, id=CELL_ID, metadata=dict(METADATA), execution_count=1)
        nb.cells.insert(1, cell)
        return True
    cell = nb.cells[at]
    before = (cell.source, cell.execution_count, cell.outputs, dict(cell.metadata))
    cell.source, cell.metadata = text, {**cell.metadata, **METADATA}
    settle(nb)
    return before != (cell.source, cell.execution_count, cell.outputs, dict(cell.metadata))


def settle(nb) -> None:
    """A generator left the cell unexecuted (its source is new to it, the cells after it keep their counts): count 1,
    no outputs, and the cells after it numbered from 2, as a fresh execution numbers them."""
    code = nbtools.code_cells(nb)
    if not code or code[0].get("id") != CELL_ID:
        return
    first, rest = code[0], code[1:]
    first.execution_count, first.outputs = 1, []
    counts = [c.execution_count for c in rest if c.execution_count is not None]
    if counts and min(counts) == 1:
        for cell in rest:
            _shift(cell, 1)


# ------------------------------------------------------------------------------------------------------------------
# the Japanese edition: the cell's entry in each translation file
# ------------------------------------------------------------------------------------------------------------------


def entry_text(root: Path = ROOT) -> str:
    import translate

    english = source("en", root)
    digest = translate.sha("\n".join(translate.code_literals(english)))
    en, ja = LANGUAGE_LITERAL["en"], LANGUAGE_LITERAL["ja"]
    return f"{CELL_ID}:\n  en: {digest}\n  strings:\n    '{en}': '{ja}'\n"


TOP_KEY = re.compile(r"^[^\s#][^:]*:")


def with_entry(text: str, entry: str) -> str:
    """A translation file's text with the cell's entry right after the first entry (the title's), replacing the old."""
    lines = text.splitlines(keepends=True)
    out, skipping = [], False
    for line in lines:  # drop the old entry
        if line.startswith(f"{CELL_ID}:"):
            skipping = True
            continue
        if skipping and TOP_KEY.match(line):
            skipping = False
        if not skipping:
            out.append(line)
    keys = [i for i, line in enumerate(out) if TOP_KEY.match(line)]
    at = keys[1] if len(keys) > 1 else len(out)
    return "".join(out[:at] + [entry] + out[at:])


def write_entries(root: Path = ROOT) -> list[str]:
    import translate

    changed = []
    entry = entry_text(root)
    for notebook in notebooks(SOURCE_FOLDERS, root):
        path = translate.translation_file(notebook, root)
        text = path.read_text(encoding="utf-8")
        new = with_entry(text, entry)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(translate.rel(path, root))
    return changed


# ------------------------------------------------------------------------------------------------------------------
# check and write
# ------------------------------------------------------------------------------------------------------------------


def problems(path: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with one notebook's first code cell (nothing: [])."""
    nb = nbtools.read(path)
    name = Path(path).resolve().relative_to(root.resolve()).as_posix()
    code = nbtools.code_cells(nb)
    if not code or code[0].get("id") != CELL_ID:
        return [f"{name}: the first code cell is not `{CELL_ID}`: run `python tools/first_cell.py`"]
    cell, found = code[0], []
    if nb.cells.index(cell) != 1:
        found.append(f"{name}: `{CELL_ID}` is not right after the title cell")
    if cell.source != source(language_of(path, root), root):
        found.append(f"{name}: `{CELL_ID}` differs from the template: run `python tools/first_cell.py`")
    if cell.metadata.get("slideshow") != METADATA["slideshow"]:
        found.append(f"{name}: `{CELL_ID}` must be skipped in the slides")
    if cell.execution_count != 1 or cell.outputs:
        found.append(f"{name}: `{CELL_ID}` is stored as a fresh execution leaves it (count 1, no outputs)")
    return found


def check(root: Path = ROOT) -> list[str]:
    return [p for path in notebooks(SOURCE_FOLDERS + GENERATED_FOLDERS, root) for p in problems(path, root)]


def write(root: Path = ROOT) -> list[str]:
    """Write the cell everywhere; returns the files changed."""
    import translate

    changed = []
    for path in notebooks(SOURCE_FOLDERS, root):
        nb = nbtools.read(path)
        if place(nb, source("en", root)):
            learner_work.keep_a_copy(path, nb, root)  # a learner's own cells in a chapter go to backups/ first
            nbtools.write(nb, path)
            changed.append(translate.rel(path, root))
    changed += write_entries(root)
    exercises.generate(root)
    translate.build(root)
    for path in notebooks(GENERATED_FOLDERS, root):
        nb = nbtools.read(path)
        before = nbtools.read(path)
        settle(nb)
        if nb != before:
            learner_work.keep_a_copy(path, nb, root)
            nbtools.write(nb, path)
            changed.append(translate.rel(path, root))
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when a notebook differs")
    args = parser.parse_args(argv)
    if args.check:
        found = check()
        print("\n".join(found) if found else "every notebook's first code cell is the template's")
        return 1 if found else 0
    changed = write()
    print("\n".join(changed) if changed else "nothing to change")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
