"""nbgrader source assignments from the course's answer keys, graded like `python -m course_utils.grade`.

    python tools/nbgrader_assignments.py OUT                 # solutions/*.ipynb -> OUT/source/<exercise>/
    python tools/nbgrader_assignments.py OUT --lang ja       # the Japanese edition (ja/solutions/)
    python tools/nbgrader_assignments.py OUT --seed 4242 ex01_layernorm ex02_rmsnorm

OUT becomes an nbgrader course directory: `OUT/nbgrader_config.py` and one assignment per exercise,
`OUT/source/ex01_layernorm/ex01_layernorm.ipynb`, ... From there nbgrader's own commands take over
(`nbgrader generate_assignment ex01_layernorm`, `nbgrader autograde ex01_layernorm`, ...; docs/grading.md,
"Grading with nbgrader instead").

What the generator does to an answer key, cell by cell:

    a code cell with a `### BEGIN SOLUTION` region   an autograded answer cell: nbgrader replaces the region
                                                     with `# YOUR CODE HERE` / `raise NotImplementedError()`,
                                                     exactly as course_utils.exercises does for exercises/
    a Markdown cell with a solution region           the free-text answer ("YOUR ANSWER HERE"): a manually
                                                     graded answer worth 0 points, because the course's grader
                                                     does not grade it either (it collects it for the instructor)
    every other cell                                 as it is (the learner's own checks stay where they are)

The solution regions are the course's (course_utils.exercises.strip_solutions decides what is one, and rejects
a broken marker); tests/test_nbgrader.py checks that nbgrader's release of each notebook is the course's exercise
notebook, cell for cell, followed by the grading cells.

At the end of the notebook come the grading cells: one read-only cell that defines the course's grading step,
then one autograder test cell per graded item of the exercise's registry entry (course_utils/checks/exNN.py),
worth that item's points. A test cell does what the course's grader does for that item, with the grader's own
code: it builds the grader's request for the item (course_utils.grading.run's inputs, from the instructor's
seed, hidden from learners in a `### BEGIN HIDDEN TESTS` region), calls the learner's function through the
grader's messenger (course_utils.grading.kernel), scans the executed cells for forbidden calls
(course_utils.checks.forbidden.notebook_hits) and judges the answer with course_utils.grading.judge. It prints
the verdict (the feedback's text) and its value is the points earned: the item's points or 0, since the
course's grader gives each item all or nothing. nbgrader 0.9 reads a test cell's value as its score when it is a
number (nbgrader.utils.determine_grade: partial credit), gives 0 to a cell that raised or wrote to stderr, and
full points otherwise; the value makes the score explicit, and the cell keeps the learner's stderr to itself.

Unlike the course's grader, nbgrader runs all of this in the learner's own kernel, with no sandbox: code in the
notebook can change what the grading cells compute. docs/grading.md says what that means.
"""

from __future__ import annotations

import argparse
import ast
import copy
import secrets
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_utils import nbtools  # noqa: E402
from course_utils.checks import exercise_registry  # noqa: E402
from course_utils.exercises import MarkerError, make_exercise, strip_solutions  # noqa: E402
from course_utils.grading.run import column_name  # noqa: E402

__all__ = ["build", "source_notebook", "grade_id", "EDITIONS", "CELL_TIMEOUT"]

EDITIONS = {"en": ROOT / "solutions", "ja": ROOT / "ja" / "solutions"}
CELL_TIMEOUT = 60  # seconds per cell: the course grader's default --cell-timeout (one cell, one graded call)
SCHEMA = 3  # nbgrader's cell metadata schema (nbgrader >= 0.6)
HIDDEN = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")

# The grading step, defined once per notebook in a read-only cell. It runs the course grader's own pieces in the
# kernel (docs/grading.md: "Grading with nbgrader instead"), so it must stay in step with course_utils.grading.
HEADER = {
    "en": (
        "# Grading with nbgrader: the cells below judge this notebook's functions as the course's grader\n"
        "# (python -m course_utils.grade) does: its inputs, its call, its forbidden-call scan and its verdict,\n"
        "# each item worth its points in the course's registry. Each test cell's value is the points it earns.\n"
        "# Do not edit these cells.\n"
    ),
    "ja": (
        "# nbgraderによる採点：この下のセルは、このノートブックの関数を講座の採点ツール\n"
        "# （python -m course_utils.grade）と同じ方法で判定します。採点ツールの入力、呼び出し、\n"
        "# 禁じられた呼び出しのスキャン、判定を使い、各項目には講座の登録どおりの点数が付きます。\n"
        "# 各テストのセルの値が、そのセルで得た点数です。これらのセルは編集しないでください。\n"
    ),
}
TEST_COMMENT = {
    "en": "# {column}: {points} point(s). The course's check of {what}, on the instructor's inputs.",
    "ja": "# {column}：{points}点。講師の入力で行う、講座の{what}のチェックです。",
}
WHAT = {
    "en": {"function": "`{function}`", "choice": "the answer of `{function}`"},
    "ja": {"function": "`{function}`", "choice": "`{function}` の解答"},
}
SETUP = """\
def _course_nbgrader_item(exercise, check_id, seed, lang):
    import contextlib, io, json, pathlib, tempfile, warnings
    from course_utils.checks import exercise_registry, forbidden
    from course_utils.grading import kernel
    from course_utils.grading.judge import judge
    from course_utils.grading.run import kernel_request
    from course_utils.i18n import using

    kind, graded, check = next(i for i in exercise_registry(exercise).items() if i.graded.check == check_id)
    cells = list(get_ipython().history_manager.input_hist_raw)  # the cells as they ran, in order
    static = forbidden.notebook_hits(check, cells, graded.function) if kind == "function" else []
    with tempfile.TemporaryDirectory() as io_dir:
        request, answer = pathlib.Path(io_dir, "request.json"), pathlib.Path(io_dir, "answer.json")
        request.write_text(json.dumps(kernel_request(kind, check, seed)), encoding="utf-8")
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")  # nbgrader gives 0 to a test cell that writes to stderr
            kernel.call_learner_function(globals(), graded.function, str(request), str(answer))
        reply = json.loads(answer.read_text(encoding="utf-8"))
    with using(lang):
        report = judge(kind, graded, check, reply, seed, forbidden=static)
        print(report.text())
    return float(graded.points) if report.passed else 0.0
"""

CONFIG = """\
# nbgrader's configuration for the course's exercises, written by tools/nbgrader_assignments.py.
c = get_config()  # noqa: F821

# c.CourseDirectory.course_id = "your-course"  # needed for nbgrader's exchange (release/collect), not for grading
# The stubs nbgrader puts in place of a solution region: the same as the course's exercises/ notebooks.
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
# Seconds per cell when autograding: the course grader's default --cell-timeout (a cell, or one graded call).
c.Execute.timeout = {timeout}
c.Execute.interrupt_on_timeout = True
"""


def grade_id(exercise: str, check: str) -> str:
    """nbgrader's id of a graded item: the course grader's CSV column with '-' for '.' (ex01-layer_norm,
    ex01-variance), since nbgrader ids allow letters, digits, '_' and '-' only."""
    return column_name(exercise, check).replace(".", "-")


def _nbgrader(grade_id: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA, "solution": solution}
    if grade:
        meta["points"] = points
    return meta


def _defined(source: str) -> list:
    """The top-level functions and classes a code cell defines, in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _test_source(exercise: str, item, seed: int, lang: str) -> str:
    graded = item.graded
    what = WHAT[lang][item.kind].format(function=graded.function)
    comment = TEST_COMMENT[lang].format(
        column=column_name(exercise, graded.check), points=f"{graded.points:g}", what=what
    )
    return "\n".join(
        [
            comment,
            HIDDEN[0],
            f"_course_nbgrader_item({exercise!r}, {graded.check!r}, seed={seed}, lang={lang!r})",
            HIDDEN[1],
        ]
    )


def source_notebook(solution: Path, seed: int, lang: str = "en"):
    """The nbgrader source notebook for one answer key (see the module docstring)."""
    exercise = solution.stem
    if not 0 < seed < 2**31:
        raise ValueError(f"the seed must be between 1 and 2**31 - 1 (0 is the learners' own): {seed}")
    registry = exercise_registry(exercise)
    nb = nbtools.read(solution)
    prefix = exercise.split("_", 1)[0]
    free_text = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if cell.cell_type not in ("code", "markdown"):
            continue
        where = f"{solution.name} cell {index}"
        if strip_solutions(cell.source, cell.cell_type, where) == cell.source:
            continue  # no solution region (strip_solutions raised MarkerError on a broken one)
        if cell.cell_type == "markdown":
            free_text += 1
            cell.metadata["nbgrader"] = _nbgrader(
                f"{prefix}-free-text-{free_text}", grade=True, solution=True, points=0
            )
        else:
            names = _defined(cell.source) or [f"cell{index}"]
            cell.metadata["nbgrader"] = _nbgrader(f"{prefix}-answer-{names[0]}", solution=True)
    graded_functions = {item.graded.function for item in registry.items()}
    defined = {name for cell in nb.cells if cell.cell_type == "code" for name in _defined(cell.source)}
    missing = sorted(graded_functions - defined)
    if missing:
        raise ValueError(f"{solution.name}: the registry grades {', '.join(missing)}, which no cell defines")
    setup = nbformat.v4.new_code_cell(HEADER[lang] + SETUP.rstrip("\n"))
    setup.metadata["nbgrader"] = _nbgrader(f"{prefix}-course-grading", locked=True)
    nb.cells.append(setup)
    for item in registry.items():
        test = nbformat.v4.new_code_cell(_test_source(exercise, item, seed, lang))
        test.metadata["nbgrader"] = _nbgrader(
            grade_id(exercise, item.graded.check), grade=True, locked=True, points=float(item.graded.points)
        )
        nb.cells.append(test)
    course = copy.deepcopy(make_exercise(solution).metadata["course"])
    course["generated_from"] = f"{solution.parent.relative_to(ROOT).as_posix()}/{solution.name}"
    course["note"] = "nbgrader source assignment written by tools/nbgrader_assignments.py; edit the solution instead"
    nb.metadata["course"] = course
    return nbtools.strip_volatile(nb)


def build(out: Path, lang: str = "en", seed: int | None = None, only=None) -> dict:
    """Write OUT/nbgrader_config.py and OUT/source/<exercise>/<exercise>.ipynb; returns {exercise: notebook path}.
    `only`: exercise ids (or file names) to limit it to; ValueError for one that names no answer key."""
    seed = secrets.randbelow(2**31 - 2) + 1 if seed is None else seed
    keys = sorted(EDITIONS[lang].glob("ex*.ipynb"))
    wanted = {Path(name).stem for name in only} if only else {k.stem for k in keys}
    unknown = sorted(wanted - {k.stem for k in keys})
    if unknown:
        raise ValueError(f"no exercise {', '.join(unknown)}; the known ones are: {', '.join(k.stem for k in keys)}")
    notebooks = {key.stem: source_notebook(key, seed, lang) for key in keys if key.stem in wanted}
    out.mkdir(parents=True, exist_ok=True)
    (out / "nbgrader_config.py").write_text(CONFIG.format(timeout=CELL_TIMEOUT), encoding="utf-8")
    written = {}
    for exercise, nb in notebooks.items():
        path = out / "source" / exercise / f"{exercise}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbtools.write(nb, path)
        written[exercise] = path
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the nbgrader course directory to write (created if needed)")
    parser.add_argument("only", nargs="*", help="exercise ids (default: all)")
    parser.add_argument("--lang", choices=sorted(EDITIONS), default="en", help="the edition (default: en)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the hidden inputs (default: random, not 0)")
    args = parser.parse_args(argv)
    seed = secrets.randbelow(2**31 - 2) + 1 if args.seed is None else args.seed
    try:
        written = build(args.out, args.lang, seed, args.only)
    except (ValueError, MarkerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for exercise, path in written.items():
        print(f"{exercise}: {path}")
    print(f"nbgrader course directory {args.out} ({args.lang}); the hidden inputs' seed is {seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
