"""nbgrader, run for real on the source assignments of tools/nbgrader_assignments.py, must grade like the course.

One nbgrader course directory in a temporary folder: the generator writes the source assignments, nbgrader's own
commands release them (`nbgrader generate_assignment`), grade what learners hand in (`nbgrader autograde`, with the
venv's kernel) and write the feedback (`nbgrader generate_feedback`). The learners are the everyday ones of
tests/test_grade.py, in ex01 and ex02: the full solution, the untouched notebook, a named mistake, a forbidden
shortcut (and, in ex01, a wrong choice, a renamed function and a right function that writes to stderr). The
course's grader (`python -m course_utils.grade`, as tests/test_grade.py runs it) grades the very same files, and
every submission's score, item by item, must be what the course's grader gave it.

Every exercise's solution goes through the same run (and ex03's and ex04's untouched notebooks), so each one is
proven gradable by nbgrader; ex05 and ex06, whose notebooks sweep and train, are graded with their solution only.
Each test cell must print the course grader's verdict word for word. The Japanese edition's ex01 is generated and
graded too, its verdicts in Japanese.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from test_grade import EPS_OUTSIDE, FORBIDDEN_CALL, WRONG_CHOICE, replace_def

from course_utils.checks import exercise_registry
from course_utils.exercises import make_exercise
from course_utils.grading import sandbox
from course_utils.grading.run import column_name

from conftest import ROOT, completed

sys.path.insert(0, str(ROOT / "tools"))
import nbgrader_assignments as generator

VENV_BIN = Path(sys.executable).parent
SEED = 4242  # the hidden inputs' seed in the test cells; the course's grader runs with the same one

UNBIASED = """\
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    variance = ((x - mean) ** 2).sum(dim=-1, keepdim=True) / (x.shape[-1] - 1)
    y = (x - mean) / torch.sqrt(variance + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y
"""

RMS_CENTRED = """\
def rms_norm(x, weight=None, eps=1e-6):
    h = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    c = h - h.mean(dim=-1, keepdim=True)
    y = c / torch.sqrt((c * c).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.to(y.dtype)
    return y.to(x.dtype)
"""

RMS_FORBIDDEN = """\
def rms_norm(x, weight=None, eps=1e-6):
    return torch.nn.functional.rms_norm(x, x.shape[-1:], weight, eps)
"""

# right, but writes to stderr and warns: nbgrader gives 0 to a test cell that writes to stderr, the course's grader
# full points; the test cells keep the learner's stderr to themselves
NOISY = """\
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    import sys, warnings
    print("computing layer_norm", file=sys.stderr)
    warnings.warn("my layer_norm is slow")
    mean = x.mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(((x - mean) ** 2).mean(dim=-1, keepdim=True) + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y
"""

# the kernel nbgrader runs, printed by a cell of one submission: it must be the venv's Python
KERNEL_PROBE = "import sys\nprint('kernel python:', sys.executable)"

# Who hands in what, besides "solved" (the full solution, in every exercise): {exercise: {student: changes}}.
# "blank" is the untouched notebook as nbgrader released it; the others are the solution with changes, each
# (function, source): that function's cell replaced by `source`, or (None, source): a code cell added at the top.
PLAN = {
    "ex01_layernorm": {
        "blank": [(None, KERNEL_PROBE)],
        "unbiased": [("layer_norm", UNBIASED)],  # a named mistake
        "solved_noisy": [("layer_norm", NOISY)],
        "forbidden_call": [("layer_norm", FORBIDDEN_CALL)],  # torch's layer_norm, which the task forbids
        "wrong_choice": [("answer_variance_pitfall", WRONG_CHOICE)],
        "renamed": [("layer_norm", "def my_layer_norm(x, gamma=None, beta=None, eps=1e-5):\n    return x")],
    },
    "ex02_rmsnorm": {
        "blank": [],
        "rms_centred": [("rms_norm", RMS_CENTRED)],  # a named mistake
        "forbidden_call": [("rms_norm", RMS_FORBIDDEN)],
    },
    "ex03_batchnorm": {"blank": []},
    "ex04_residual_norms": {"blank": []},
    "ex05_qk_norm": {},  # these two run for minutes (sweeps, training): their solution only
    "ex06_recipes": {},
}
EXERCISES = sorted(p.stem for p in (ROOT / "solutions").glob("ex*.ipynb"))


# ------------------------------------------------------------------------------------------------------
# running nbgrader
# ------------------------------------------------------------------------------------------------------
def jupyter_env(home: Path) -> dict:
    """nbgrader's environment: the venv's commands first (nbgrader runs `alembic` from PATH), Jupyter's folders in
    the test's own (no instructor's config or kernels), and the venv's kernelspec preferred."""
    env = dict(os.environ)
    env.update(
        {
            "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_DATA_DIR": str(home / "data"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTER_PREFER_ENV_PATH": "1",
            "IPYTHONDIR": str(home / "ipython"),
        }
    )
    return env


def nbgrader(*args, course: Path, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(VENV_BIN / "nbgrader"), *map(str, args)],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"nbgrader {' '.join(map(str, args))}:\n{proc.stdout}\n{proc.stderr}"
    return proc


# ------------------------------------------------------------------------------------------------------
# submissions: the released notebook, filled in
# ------------------------------------------------------------------------------------------------------
def solution_cells(nb) -> list:
    return [i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution")]


def solved(released, key: Path):
    """The released notebook with the answer key's code and words in every solution cell (what a learner who solved
    everything hands in); the key's cells come first in the source notebook, so they line up by index."""
    nb, answers = nbformat.from_dict(released), completed(key)
    for i in solution_cells(nb):
        nb.cells[i].source = answers.cells[i].source
    return nb


def submissions(course: Path, solutions: Path, plan: dict) -> dict:
    """Write submitted/<student>/<exercise>/<exercise>.ipynb as `plan` says; returns {(student, exercise): nb}."""
    written = {}
    for exercise, students in plan.items():
        released = nbformat.read(course / "release" / exercise / f"{exercise}.ipynb", as_version=4)
        key = solutions / f"{exercise}.ipynb"
        for student, changes in {"solved": [], **students}.items():
            nb = nbformat.from_dict(released) if student == "blank" else solved(released, key)
            for function, source in changes:
                if function is None:
                    nb.cells.insert(0, nbformat.v4.new_code_cell(source))
                else:
                    replace_def(nb, function, source)
            path = course / "submitted" / student / exercise / f"{exercise}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, str(path))
            written[(student, exercise)] = nb
    return written


def nbgrader_scores(course: Path, keys) -> dict:
    """{(student, exercise): (total, {course grader column: points})} from nbgrader's gradebook."""
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student, exercise in keys:
            items = {
                column_name(exercise, g.check): gb.find_grade(
                    generator.grade_id(exercise, g.check), exercise, exercise, student
                ).score
                for g in exercise_registry(exercise).graded
            }
            scores[(student, exercise)] = (gb.find_submission(exercise, student).score, items)
    return scores


def course_scores(csv_path: Path) -> dict:
    """{(learner, exercise): (status, total, {column: points})} from the course grader's gradebook."""
    with open(csv_path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {
        (r["learner"], r["exercise"]): (
            r["status"],
            float(r["total"]),
            {
                column_name(r["exercise"], g.check): float(r[column_name(r["exercise"], g.check)])
                for g in exercise_registry(r["exercise"]).graded
            },
        )
        for r in rows
    }


def course_grader(*args, cwd: Path) -> subprocess.Popen:
    """The course's grader, started in the background (as tests/test_grade.py's run_grader runs it: in its sandbox
    where bubblewrap runs), so that it grades while nbgrader does."""
    unsandboxed = () if sandbox.available()[0] else ("--no-sandbox",)
    return subprocess.Popen(
        [sys.executable, "-m", "course_utils.grade", *map(str, args), *unsandboxed],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def grade_both(root: Path, lang: str, plan: dict) -> dict:
    """Generate, release, submit, autograde and write feedback with nbgrader, while the course's grader grades the
    same files (one job: nbgrader autogrades one notebook at a time). `plan`: {exercise: {student: changes}}, the
    students beyond "solved" (and "blank", when the plan names it with no changes). Returns what the tests compare."""
    course, env = root / "course", jupyter_env(root / "jupyter")
    exercises = sorted(plan)
    generator.build(course, lang=lang, seed=SEED, only=exercises)
    for exercise in exercises:
        nbgrader("generate_assignment", exercise, course=course, env=env)
    subs = submissions(course, generator.EDITIONS[lang], plan)
    grader = course_grader(
        *("submitted", "--out", root / "grades.csv", "--jobs", 1, "--seed", SEED, "--lang", lang), cwd=course
    )
    try:
        for exercise in exercises:
            nbgrader("autograde", exercise, course=course, env=env)
            nbgrader("generate_feedback", exercise, course=course, env=env)
        out, err = grader.communicate(timeout=900)
    finally:
        if grader.poll() is None:
            grader.kill()
    assert grader.returncode == 0, out + err
    return {
        "root": root,
        "course": course,
        "keys": sorted(subs),
        "nbgrader": nbgrader_scores(course, subs),
        "grader": course_scores(root / "grades.csv"),
    }


def verdicts(run: dict, student: str, exercise: str) -> dict:
    """{grade id: what the test cell printed} in nbgrader's autograded notebook."""
    nb = nbformat.read(run["course"] / "autograded" / student / exercise / f"{exercise}.ipynb", as_version=4)
    return {
        cell.metadata["nbgrader"]["grade_id"]: "".join(o.get("text", "") for o in cell.outputs).rstrip("\n")
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code"
    }


def assert_the_course_graders_words(run: dict) -> None:
    """Each test cell printed, word for word, the course grader's verdict on that item (its feedback's text, kept
    in its state file next to the gradebook)."""
    from course_utils.grading.cli import State

    rows = {(r.learner, r.exercise): r for r in State(run["root"] / "grades.state.jsonl").entries.values()}
    for student, exercise in run["keys"]:
        printed = verdicts(run, student, exercise)
        expected = {generator.grade_id(exercise, item.check): item.text for item in rows[(student, exercise)].items}
        assert printed == expected, (student, exercise)


@pytest.fixture(scope="module")
def english(tmp_path_factory):
    return grade_both(tmp_path_factory.mktemp("nbgrader-en"), "en", PLAN)


@pytest.fixture(scope="module")
def japanese(tmp_path_factory):
    plan = {"ex01_layernorm": {"eps_outside": [("layer_norm", EPS_OUTSIDE)]}}  # a named mistake, and the solution
    return grade_both(tmp_path_factory.mktemp("nbgrader-ja"), "ja", plan)


# ------------------------------------------------------------------------------------------------------
# the tests
# ------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_nbgrader_gives_every_submission_the_course_graders_points_item_by_item(english):
    assert sorted(PLAN) == EXERCISES  # a new exercise needs its line in PLAN
    assert len(english["keys"]) == len(EXERCISES) + sum(map(len, PLAN.values()))
    for key in english["keys"]:
        total, items = english["nbgrader"][key]
        status, expected_total, expected_items = english["grader"][key]
        assert status == "graded", (key, status)
        assert items == expected_items, key
        assert total == expected_total, key


@pytest.mark.slow
def test_the_submissions_span_full_marks_nothing_and_lost_points(english):
    """The comparison above means something: each exercise's solution earns its maximum, the untouched notebook 0,
    and every mistake loses some points but not all (so each is judged, item by item)."""
    for (student, exercise), (total, _) in english["nbgrader"].items():
        full = exercise_registry(exercise).max_points
        if student.startswith("solved"):
            assert total == full, (student, exercise)
        elif student == "blank":
            assert total == 0, exercise
        else:
            assert 0 < total < full, (student, exercise, total)


@pytest.mark.slow
def test_feedback_for_every_submission_with_the_verdicts(english):
    course = english["course"]
    for student, exercise in english["keys"]:
        html = course / "feedback" / student / exercise / f"{exercise}.html"
        assert html.is_file(), html
    text = (course / "feedback" / "forbidden_call" / "ex01_layernorm" / "ex01_layernorm.html").read_text("utf-8")
    assert "uses torch.nn.functional.layer_norm, which this task asks you to write yourself" in text
    text = (course / "feedback" / "renamed" / "ex01_layernorm" / "ex01_layernorm.html").read_text("utf-8")
    assert "`layer_norm` is not defined in the notebook" in text


@pytest.mark.slow
def test_each_test_cell_prints_the_course_graders_verdict(english):
    assert_the_course_graders_words(english)


@pytest.mark.slow
def test_nbgrader_runs_the_venvs_kernel(english):
    nb = nbformat.read(english["course"] / "autograded" / "blank" / "ex01_layernorm" / "ex01_layernorm.ipynb", 4)
    printed = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert f"kernel python: {sys.executable}" in printed


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_nbgraders_release_is_the_course_exercise_plus_the_grading_cells(english, exercise):
    """Learners get from nbgrader what exercises/ hands out: the same cells (solution regions replaced by the same
    stubs), then the read-only grading cells, whose inputs' seed is hidden."""
    released = nbformat.read(english["course"] / "release" / exercise / f"{exercise}.ipynb", as_version=4)
    exercise_nb = make_exercise(ROOT / "solutions" / f"{exercise}.ipynb")
    n = len(exercise_nb.cells)
    assert [(c.cell_type, c.source) for c in released.cells[:n]] == [(c.cell_type, c.source) for c in exercise_nb.cells]
    grading = released.cells[n:]
    assert len(grading) == 1 + len(exercise_registry(exercise).graded)
    assert all(c.metadata["nbgrader"]["locked"] for c in grading)
    assert not any(str(SEED) in c.source or "HIDDEN" in c.source for c in released.cells)
    assert released.metadata["course"]["exercise"] == exercise


@pytest.mark.slow
def test_the_japanese_edition_grades_alike_with_japanese_feedback(japanese):
    for key in japanese["keys"]:
        total, items = japanese["nbgrader"][key]
        status, expected_total, expected_items = japanese["grader"][key]
        assert (status, items, total) == ("graded", expected_items, expected_total), key
    assert japanese["nbgrader"][("solved", "ex01_layernorm")][0] == 5
    assert_the_course_graders_words(japanese)  # the course grader's feedback, graded with --lang ja
    verdict = verdicts(japanese, "eps_outside", "ex01_layernorm")["ex01-layer_norm"]
    assert re.search(r"[\u3040-\u30ff]", verdict)  # kana: the test cell's verdict is in Japanese
    html = (japanese["course"] / "feedback" / "eps_outside" / "ex01_layernorm" / "ex01_layernorm.html").read_text(
        "utf-8"
    )
    assert verdict.splitlines()[0] in html
    released = nbformat.read(japanese["course"] / "release" / "ex01_layernorm" / "ex01_layernorm.ipynb", 4)
    handed_out = nbformat.read(ROOT / "ja" / "exercises" / "ex01_layernorm.ipynb", 4)
    n = len(handed_out.cells)
    assert [c.source for c in released.cells[:n]] == [c.source for c in handed_out.cells]


# ------------------------------------------------------------------------------------------------------
# the generator alone (fast)
# ------------------------------------------------------------------------------------------------------
def test_every_graded_item_has_a_test_cell_worth_its_points_and_free_text_is_worth_0(tmp_path):
    written = generator.build(tmp_path, seed=SEED)
    assert sorted(written) == EXERCISES
    assert (tmp_path / "nbgrader_config.py").is_file()
    for exercise, path in written.items():
        nb = nbformat.read(path, as_version=4)
        meta = [c.metadata.get("nbgrader") for c in nb.cells]
        tests = {m["grade_id"]: m["points"] for m in meta if m and m["grade"] and not m["solution"]}
        assert tests == {generator.grade_id(exercise, g.check): g.points for g in exercise_registry(exercise).graded}
        free = [m for c, m in zip(nb.cells, meta) if m and c.cell_type == "markdown"]
        assert all(m["grade"] and m["solution"] and m["points"] == 0 for m in free)
        assert len(free) == sum(c.source.strip() == "YOUR ANSWER HERE" for c in make_exercise(path).cells)


def test_the_command_writes_a_course_directory_and_refuses_an_unknown_exercise(tmp_path, capsys):
    assert generator.main([str(tmp_path / "out"), "ex02_rmsnorm", "--seed", "7"]) == 0
    assert [p.name for p in (tmp_path / "out" / "source").iterdir()] == ["ex02_rmsnorm"]
    assert generator.main([str(tmp_path / "other"), "ex09_nothing"]) == 2
    assert "no exercise ex09_nothing" in capsys.readouterr().err
    with pytest.raises(ValueError, match="seed"):
        generator.build(tmp_path / "zero", seed=0)
