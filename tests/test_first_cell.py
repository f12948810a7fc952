"""Every notebook's first code cell is tools/first_cell.py's template: the set-up of a notebook opened on its own.

The template names the repository and the tag of pyproject.toml, so a version bump is `python tools/first_cell.py`;
this test fails for any notebook (chapters, solutions, exercises, both editions) whose cell differs. The cell's
language line is rule 4 of course_utils/i18n.py, tested below; tests/test_lone_notebook.py runs the cell for real.
"""

import shutil
import sys
import tomllib

import nbformat
import pytest

from course_utils import i18n, nbtools

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import first_cell
import translate

EVERY_NOTEBOOK = first_cell.notebooks(first_cell.SOURCE_FOLDERS + first_cell.GENERATED_FOLDERS)


def test_every_notebook_folder_is_covered():
    assert len(EVERY_NOTEBOOK) == 2 * (7 + 6 + 6)
    assert {p.relative_to(ROOT).parts[0] for p in EVERY_NOTEBOOK} == {"chapters", "solutions", "exercises", "ja"}


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_first_code_cell_is_the_template(path):
    assert first_cell.problems(path) == []


def test_the_template_installs_the_courses_own_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    en, ja = first_cell.source("en"), first_cell.source("ja")
    assert f'"git+{project["urls"]["Repository"]}@v{project["version"]}"' in en
    assert '"--no-deps"' in en and '"-q"' in en, "the package alone (Colab's torch stays), quietly"
    assert 'os.environ["COURSE_NOTEBOOK_LANG"] = "en"' in en and 'os.environ["COURSE_NOTEBOOK_LANG"] = "ja"' in ja
    assert en.replace('= "en"', '= "ja"') == ja, "the editions differ in the language literal only"
    assert translate.apply_strings(en, {'"en"': '"ja"'}) == (ja, [])


def test_a_stale_or_missing_cell_is_reported(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "chapters").mkdir()
    path = tmp_path / "chapters" / "01_x.ipynb"
    nb = nbtools.read(ROOT / "chapters" / "01_layernorm_by_hand.ipynb")
    nbtools.write(nb, path)
    assert first_cell.problems(path, tmp_path) == []
    nb.cells[1].source = nb.cells[1].source.replace("@v0.1.0", "@v0.0.9")
    nbtools.write(nb, path)
    assert first_cell.problems(path, tmp_path) == [
        "chapters/01_x.ipynb: `first-cell` differs from the template: run `python tools/first_cell.py`"
    ]
    del nb.cells[1]
    nbtools.write(nb, path)
    assert "the first code cell is not `first-cell`" in first_cell.problems(path, tmp_path)[0]


def notebook(*counts):
    """A title cell, then one code cell per count, each with an execute_result of the same count."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title")])
    for n in counts:
        out = nbformat.v4.new_output("execute_result", data={"text/plain": str(n)}, execution_count=n)
        nb.cells.append(nbformat.v4.new_code_cell(f"{n}", execution_count=n, outputs=[out]))
    return nb


def counts(nb):
    return [(c.execution_count, [o.get("execution_count") for o in c.outputs]) for c in nbtools.code_cells(nb)]


def test_placing_the_cell_numbers_the_notebook_as_an_execution_would():
    nb = notebook(1, 2)
    assert first_cell.place(nb, "print()")
    assert nb.cells[1].id == first_cell.CELL_ID and nb.cells[1].metadata == first_cell.METADATA
    assert counts(nb) == [(1, []), (2, [2]), (3, [3])]
    assert not first_cell.place(nb, "print()"), "placing it again changes nothing"
    assert first_cell.place(nb, "print(1)") and counts(nb) == [(1, []), (2, [2]), (3, [3])]


def test_a_generated_notebook_is_settled_once():
    nb = notebook(1, 2)  # what a generator writes: the new cell unexecuted, the others with their old counts
    nb.cells.insert(1, nbformat.v4.new_code_cell("x", id=first_cell.CELL_ID, execution_count=None))
    first_cell.settle(nb)
    assert counts(nb) == [(1, []), (2, [2]), (3, [3])]
    first_cell.settle(nb)
    assert counts(nb) == [(1, []), (2, [2]), (3, [3])]


def test_the_translation_entry_is_replaced_after_the_title():
    text = "# header\nch-00:\n  en: abc\n  ja: |-\n    # 題\nfirst-cell:\n  en: old\n  strings: {}\nch-02:\n  en: d\n"
    new = first_cell.with_entry(text, "first-cell:\n  en: new\n")
    assert new == "# header\nch-00:\n  en: abc\n  ja: |-\n    # 題\nfirst-cell:\n  en: new\nch-02:\n  en: d\n"


# ------------------------------------------------------------------------------------------------------------------
# rule 4 of course_utils/i18n.py: the notebook's own language, below COURSE_LANG and the marker
# ------------------------------------------------------------------------------------------------------------------
@pytest.fixture
def automatic(monkeypatch):
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.delenv(i18n.NOTEBOOK_ENV, raising=False)
    before = i18n._chosen
    i18n.set_language(None)
    yield monkeypatch
    i18n._chosen = before


def test_a_lone_notebook_speaks_its_own_language(tmp_path, automatic):
    automatic.chdir(tmp_path)  # no .course_lang above (Colab's /content)
    assert i18n.language() == "en"
    automatic.setenv(i18n.NOTEBOOK_ENV, "ja")
    assert i18n.language() == "ja" and i18n._("Check") == "答え合わせ"
    automatic.setenv(i18n.NOTEBOOK_ENV, "fr")
    assert i18n.language() == "en", "a value the course does not know: English, no error in a learner's face"


def test_the_marker_and_course_lang_beat_the_notebooks_language(tmp_path, automatic):
    (tmp_path / i18n.MARKER).write_text("ja", encoding="utf-8")
    automatic.chdir(tmp_path)
    automatic.setenv(i18n.NOTEBOOK_ENV, "en")  # an English notebook in a room whose checks speak Japanese
    assert i18n.language() == "ja"
    automatic.setenv("COURSE_LANG", "en")  # the grader's --lang
    assert i18n.language() == "en"
