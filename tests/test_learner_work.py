"""No course command destroys a learner's work, and an exercise can start over (course_utils/learner_work.py).

The commands that rewrite notebooks (`make exercises`, `make execute`, `make translations`) go through
`keep_a_copy`: a notebook whose cells differ from what is about to be written, and which git does not hold as it
is, is copied to backups/ first. `make reset EX=ex01` starts an exercise over with the same kind of copy. The tests
work in a copy of the course's exercise files (with and without git), never in the checkout itself.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from course_utils import exercises, learner_work, nbtools

from conftest import ROOT

NAME = "ex01_layernorm.ipynb"
MINE = "def layer_norm(x, gamma=None, beta=None, eps=1e-5):\n    return 'my own attempt'  # learner's work\n"


def course_copy(tmp_path: Path, git: bool = False) -> Path:
    root = tmp_path / "course"
    for folder in ("solutions", "exercises"):
        (root / folder).mkdir(parents=True)
        shutil.copy(ROOT / folder / NAME, root / folder / NAME)
    if git:
        run = dict(cwd=root, check=True, capture_output=True)
        subprocess.run(["git", "init", "-q"], **run)
        subprocess.run(["git", "add", "."], **run)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "course"], **run)
    return root


def edit_answer(path: Path, source: str = MINE) -> None:
    nb = nbtools.read(path)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "NotImplementedError" in c.source)
    cell.source = source
    nbtools.write(nb, path)


def backups(root: Path) -> list:
    return sorted((root / learner_work.BACKUPS).rglob("*.ipynb"))


def test_regenerating_keeps_a_copy_of_the_learners_answers(tmp_path, capsys):
    root = course_copy(tmp_path)
    target = root / "exercises" / NAME
    edit_answer(target)
    exercises.generate(root, only=["ex01_layernorm"])
    (copy,) = backups(root)
    assert copy.parent == root / "backups" / "exercises"
    assert re.fullmatch(r"ex01_layernorm-\d{8}-\d{6}\.ipynb", copy.name)
    assert "learner's work" in copy.read_text()
    assert "learner's work" not in target.read_text()  # the exercise is regenerated as asked
    assert f"a copy is in backups/exercises/{copy.name}" in capsys.readouterr().out


def test_nothing_is_copied_when_there_is_no_work(tmp_path):
    root = course_copy(tmp_path)
    target = root / "exercises" / NAME
    exercises.generate(root, only=["ex01_layernorm"])  # untouched
    nb = nbtools.read(target)
    for cell in nb.cells:  # outputs alone are not work: a re-executed notebook is not copied
        if cell.cell_type == "code":
            cell.outputs = []
    nbtools.write(nb, target)
    exercises.generate(root, only=["ex01_layernorm"])
    assert backups(root) == []


def test_a_file_git_holds_as_it_is_is_not_copied_but_a_changed_one_is(tmp_path):
    root = course_copy(tmp_path, git=True)
    target = root / "exercises" / NAME
    solution = root / "solutions" / NAME
    nb = nbtools.read(solution)  # the maintainer changes the solution: the committed exercise is out of date
    nb.cells[0].source += "\n\nA new sentence from the maintainer."
    nbtools.write(nb, solution)
    assert learner_work.keep_a_copy(target, exercises.make_exercise(solution, None), root) is None
    edit_answer(target)  # now the learner's answers are in it, and git does not have them
    copy = learner_work.keep_a_copy(target, exercises.make_exercise(solution, None), root)
    assert copy is not None and "learner's work" in copy.read_text()


def test_reset_starts_over_and_keeps_the_old_one(tmp_path, capsys):
    root = course_copy(tmp_path)
    target = root / "exercises" / NAME
    edit_answer(target)
    assert learner_work.reset("ex01", root=root) == target
    (copy,) = backups(root)
    assert "learner's work" in copy.read_text()
    fresh = exercises.make_exercise(root / "solutions" / NAME, None)
    assert learner_work.cells(nbtools.read(target)) == learner_work.cells(fresh)
    said = capsys.readouterr().out
    assert "is kept in backups/exercises/" in said and "Reload" in said
    learner_work.reset("ex01_layernorm", root=root)  # twice in the same second: two copies, none overwritten
    assert len(backups(root)) == 2


def test_reset_names_the_known_exercises_when_the_id_is_wrong(tmp_path):
    root = course_copy(tmp_path)
    with pytest.raises(exercises.UnknownExercise, match="ex01"):
        learner_work.reset("ex9", root=root)
    assert backups(root) == []


def test_the_reset_command_line(tmp_path):
    assert learner_work.main(["reset", "ex99"]) == 2


def test_every_notebook_writer_keeps_learners_work():
    """Every place in the course's own code that rewrites a notebook a learner may have changed goes through
    keep_a_copy (or writes what it just executed from that same file, or writes outside the learner's folders)."""
    allowed = {
        "course_utils/nbtools.py": "the writer itself; execute() rewrites a notebook with its own cells, run",
        "course_utils/learner_work.py": "reset: a copy is made just before",
        "tools/slides.py": "temporary deck notebooks under artifacts/",
        "tools/cpu_matrix.py": "temporary copies in a tmp folder",
        "tools/nbgrader_assignments.py": "an nbgrader course folder the instructor names",
        "tools/build_site.py": "the website's staging copies under artifacts/.cache/site-src",
    }
    writers = {}
    for path in [*ROOT.glob("course_utils/**/*.py"), *ROOT.glob("tools/*.py")]:
        text = path.read_text()
        if re.search(r"\b(nbtools|nbformat)\.write\(", text):
            writers[path.relative_to(ROOT).as_posix()] = text
    for name, text in writers.items():
        if name in allowed:
            continue
        assert "keep_a_copy(" in text, f"{name} writes notebooks without learner_work.keep_a_copy"


def test_a_damaged_notebook_is_kept_and_regenerated(tmp_path):
    root = course_copy(tmp_path)
    target = root / "exercises" / NAME
    target.write_text('{"cells": [ this is not JSON any more')
    exercises.generate(root, only=["ex01_layernorm"])  # no traceback: the damaged file is copied, then rewritten
    (copy,) = backups(root)
    assert copy.read_text().startswith('{"cells": [ this is not JSON')
    assert nbtools.read(target).cells


def test_reset_speaks_the_editions_language(tmp_path, capsys):
    root = course_copy(tmp_path)
    (root / "ja").mkdir()
    shutil.copytree(root / "solutions", root / "ja" / "solutions")
    shutil.copytree(root / "exercises", root / "ja" / "exercises")
    assert learner_work.reset("ex01", lang="ja", root=root) == root / "ja" / "exercises" / NAME
    said = capsys.readouterr().out
    assert "配布されたときの状態" in said and "handed out" not in said
