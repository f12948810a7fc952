"""exercises/ is generated from solutions/: regenerating must change nothing, and no solution may leak."""

import pytest

from course_utils import exercises, nbtools
from course_utils.exercises import MarkerError, strip_solutions

from conftest import ROOT


def test_exercises_are_up_to_date():
    assert exercises.generate(ROOT, check=True) == [], "run `make exercises` and commit exercises/"


def test_every_solution_has_an_exercise_and_back():
    solutions = {p.name for p in (ROOT / "solutions").glob("ex*.ipynb")}
    generated = {p.name for p in (ROOT / "exercises").glob("ex*.ipynb")}
    assert solutions and solutions == generated


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").glob("ex*.ipynb")), ids=lambda p: p.name)
def test_exercise_has_no_solution_and_knows_its_id(path):
    nb = nbtools.read(path)
    assert nb.metadata["course"]["exercise"] == path.stem
    text = "\n".join(c.source for c in nb.cells)
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "raise NotImplementedError()" in text
    solution = nbtools.read(ROOT / "solutions" / path.name)
    assert len(solution.cells) == len(nb.cells)


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").glob("ex*.ipynb")), ids=lambda p: p.name)
def test_exercise_stored_outputs_say_not_implemented(path):
    nb = nbtools.read(path)
    # a check's verdict is a display_data in a kernel (course_utils/checks/render.py): its text/plain is the text
    printed = "".join(
        o.get("text", "") or o.get("data", {}).get("text/plain", "") for c in nbtools.code_cells(nb) for o in c.outputs
    )
    assert "not implemented yet" in printed and "✅" not in printed


def test_strip_keeps_indentation():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n\nprint(1)"
    assert strip_solutions(src) == "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nprint(1)"


def test_strip_markdown_answer():
    assert strip_solutions("Q?\n### BEGIN SOLUTION\nsecret\n### END SOLUTION", "markdown") == "Q?\nYOUR ANSWER HERE"


@pytest.mark.parametrize(
    "src",
    [
        "### BEGIN SOLUTION\nx = 1",
        "x = 1\n### END SOLUTION",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
    ],
)
def test_unbalanced_markers_are_errors(src):
    with pytest.raises(MarkerError):
        strip_solutions(src, where="test")


def test_an_unknown_exercise_id_is_an_error_that_names_the_known_ones(capsys):
    assert exercises.main(["ex99_typo"]) == 2
    captured = capsys.readouterr()
    assert "wrote" not in captured.out
    assert "ex99_typo" in captured.err and "ex01_layernorm" in captured.err


def test_nothing_is_written_when_one_of_the_ids_is_unknown(tmp_path):
    (tmp_path / "solutions").mkdir()
    src = ROOT / "solutions" / "ex01_layernorm.ipynb"
    (tmp_path / "solutions" / src.name).write_bytes(src.read_bytes())
    with pytest.raises(ValueError, match="ex99_typo.*ex01_layernorm"):  # exercises.UnknownExercise
        exercises.generate(tmp_path, only=["ex01_layernorm", "ex99_typo"])
    assert not (tmp_path / "exercises").exists()
    assert exercises.generate(tmp_path, only=["ex01_layernorm.ipynb"]) == [src.name]  # a file name works too
    assert (tmp_path / "exercises" / src.name).exists()


def test_generator_detects_a_stale_exercise(tmp_path):
    (tmp_path / "solutions").mkdir()
    (tmp_path / "exercises").mkdir()
    src = ROOT / "solutions" / "ex01_layernorm.ipynb"
    (tmp_path / "solutions" / src.name).write_bytes(src.read_bytes())
    assert exercises.generate(tmp_path, check=True) == [src.name]  # missing
    exercises.generate(tmp_path)
    assert exercises.generate(tmp_path, check=True) == []
    nb = nbtools.read(tmp_path / "exercises" / src.name)
    nb.cells[0].source += "\nedited by hand"
    nbtools.write(nb, tmp_path / "exercises" / src.name)
    assert exercises.generate(tmp_path, check=True) == [src.name]
