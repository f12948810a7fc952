"""The batch grader against an adversarial corpus of submissions, built here from solutions/.

Every kind of submission the grader must survive gets a learner of its own (build_corpus below):
broken files, broken code, hostile code and careless code. One grading run over the corpus (two jobs,
short time limits) must give each its own row with the expected status and points, never modify a
submitted file, write feedback for each learner, and resume from its state file with identical grades.
The adversarial cases, the correct solution (full marks) and the untouched exercise (zero) use ex01;
every other exercise in solutions/ has its solution graded (full marks), so each new exercise is
proven gradable as soon as it lands.

The Japanese edition is graded as fully: the corpus's everyday learners (the correct solution with its free-text
answer, the untouched exercise, a named mistake, a wrong choice, a forbidden call: `twins`) have Japanese twins,
made from ja/exercises filled in, that a run with `--lang ja` must grade to the same points, with feedback, status
words and summary in Japanese; a submission of either edition is read against its own edition's notebook.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from course_utils import i18n
from course_utils.display import text_width
from course_utils.exercises import make_exercise
from course_utils.grading import kernel, sandbox
from course_utils.i18n import _  # noqa: PLC2701 (gettext's `_`: public by convention, in i18n.__all__)

from conftest import ROOT, completed

EX01 = ROOT / "solutions" / "ex01_layernorm.ipynb"
HANDED_OUT = "ex01_layernorm.ipynb"  # the file name learners get (many keep it)
EDITIONS = {"en": ROOT, "ja": ROOT / "ja"}  # each edition's solutions/ and exercises/
CELL_TIMEOUT = 8  # seconds: the loop cases cost this much; every honest ex01 cell takes well under 1 s


# ------------------------------------------------------------------------------------------------------
# building learner notebooks from a solution
# ------------------------------------------------------------------------------------------------------
def untouched(solution: Path):
    return make_exercise(solution)


def replace_def(nb, name: str, source: str):
    """The notebook with the cell defining `name` replaced by `source`."""
    cells = [c for c in nb.cells if c.cell_type == "code" and re.search(rf"^def {name}\(", c.source, re.M)]
    assert cells, f"no cell defines {name}"
    cells[0].source = source
    return nb


def add_cell(nb, source: str, at: int | None = None):
    cell = nbformat.v4.new_code_cell(source)
    nb.cells.insert(len(nb.cells) if at is None else at, cell)
    return nb


def handed_out(edition: str):
    """The ex01 notebook an edition hands out (exercises/ or ja/exercises/)."""
    return nbformat.read(EDITIONS[edition] / "exercises" / HANDED_OUT, as_version=4)


def filled(edition: str):
    """What a learner of that edition hands in when they solved everything: the handed-out notebook with the answer
    key's code in place of each `# YOUR CODE HERE` and its words in place of `YOUR ANSWER HERE`."""
    nb, key = handed_out(edition), completed(EDITIONS[edition] / "solutions" / HANDED_OUT)
    assert len(nb.cells) == len(key.cells)
    for cell, solved in zip(nb.cells, key.cells):
        if "# YOUR CODE HERE" in cell.source or cell.source.strip() == "YOUR ANSWER HERE":
            cell.source = solved.source
    return nb


def write(nb, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


MEMORIZED = """\
from course_utils.checks.ex01 import LAYER_NORM_CHECK as _C
_MEMO = [(case.args[0], case.expected.float()) for case in _C.cases(0)]  # the examples the notebook shows

def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    for seen, answer in _MEMO:
        if seen.shape == x.shape and torch.equal(seen, x):
            return answer.clone()
    return x.clone()
"""

LOOPS_ON_NEW_INPUTS = MEMORIZED.replace("    return x.clone()", "    while True:\n        pass")

SWALLOWS_INTERRUPTS = """\
while True:
    try:
        while True:
            pass
    except KeyboardInterrupt:
        pass
"""

ALWAYS_EQUAL = """\
class AlwaysEqual(float):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __float__(self): return 0.0
    def __array__(self, *a, **k): import numpy; return numpy.zeros(1)
    def allclose(self, *a, **k): return True

def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return AlwaysEqual(0.0)
"""

LYING_TENSOR = '''\
class Liar(torch.Tensor):
    """Its comparisons all say True; its values are just the input."""
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq", "isclose"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})

def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return x.clone().as_subclass(Liar)
'''

MONKEYPATCH = """\
import numpy, builtins, json
import course_utils, course_utils.checks as checks, course_utils.norms as norms, course_utils.grading.kernel as gk
import course_utils.checks.core as core, course_utils.checks.ex01 as ex01
from course_utils.checks import CaseResult, CheckReport

def layer_norm(x, gamma=None, beta=None, eps=1e-5):     # wrong: the unbiased variance
    y = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps)
    return y if gamma is None else y * gamma + (0 if beta is None else beta)

checks.compare_tensor = core.compare_tensor = lambda *a, **k: (0.0, "")
checks.FunctionCheck.compare = lambda self, case, out: CaseResult(case.name, True, 0.0, 1.0)
checks.FunctionCheck.judge_case = lambda self, case, out, after: CaseResult(case.name, True, 0.0, 1.0)
checks.CheckReport.passed = property(lambda self: True)
ex01.LAYER_NORM_CHECK.tolerance = 1e9
norms.layer_norm = lambda x, *a, **k: layer_norm(x, *a, **k)
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
numpy.allclose = lambda *a, **k: True
gk.decode = lambda data, depth=0: data
gk.call_learner_function = lambda *a, **k: None
_real_dumps = json.dumps
_FORGED = {"status": "ok", "results": [{"output": {"k": "float", "v": "0.0"}, "args_after": []}]}
def _forging_dumps(obj, *args, **kwargs):   # forge the grader's answer files, leave Jupyter's messages alone
    return _real_dumps(_FORGED if isinstance(obj, dict) and "status" in obj else obj, *args, **kwargs)
json.dumps = _forging_dumps
"""

WRITES_FILES = """\
import os, pathlib
pathlib.Path("results.txt").write_text("scratch")
os.makedirs("outputs/run1", exist_ok=True)
for nb in pathlib.Path(".").glob("*.ipynb"):
    nb.write_text("overwritten by the learner's code")   # its own notebook: only the grader's copy
    os.remove(nb)
pathlib.Path("notes.md").write_text("new notes")
"""


EPS_OUTSIDE = """\
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    std = ((x - mean) ** 2).mean(dim=-1, keepdim=True).sqrt()
    y = (x - mean) / (std + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y
"""

FORBIDDEN_CALL = """\
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)
"""

WRONG_CHOICE = "def answer_variance_pitfall():\n    return 'a'\n"


def twins(good, blank) -> dict:
    """The everyday learners, built from one edition's notebooks: {learner: (notebook, status, total)}. `good()` is
    the edition's solved notebook (its free-text answer written), `blank()` the one it hands out."""
    return {
        "correct": (good(), "graded", 5),
        "untouched": (blank(), "graded", 0),
        "eps_outside": (replace_def(good(), "layer_norm", EPS_OUTSIDE), "graded", 2),  # a named mistake
        "wrong_choice": (replace_def(good(), "answer_variance_pitfall", WRONG_CHOICE), "graded", 4),
        "forbidden_call": (replace_def(good(), "layer_norm", FORBIDDEN_CALL), "graded", 2),
    }


TWINS = ("correct", "untouched", "eps_outside", "wrong_choice", "forbidden_call")  # twins()'s learners


def build_corpus(root: Path) -> dict:
    """Write the submissions under root/subs; returns {learner: (expected status, expected total or None)}."""
    subs = root / "subs"
    expect = {}

    def put(learner, nb_or_bytes, status, total, name=HANDED_OUT, flat=False):
        path = subs / (f"{learner}.ipynb" if flat else f"{learner}/{name}")
        if isinstance(nb_or_bytes, bytes):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(nb_or_bytes)
        else:
            write(nb_or_bytes, path)
        expect[learner] = (status, total)

    good = lambda: completed(EX01)
    for learner, (nb, status, total) in twins(good, lambda: untouched(EX01)).items():
        put(learner, nb, status, total, name="my final version (1).ipynb" if learner == "correct" else HANDED_OUT)
    write(good(), subs / "correct" / ".ipynb_checkpoints" / "my final version (1)-checkpoint.ipynb")
    put("other_edition", filled("ja"), "graded", 5)  # the Japanese edition's, graded in English
    text = nbformat.writes(good())
    put("malformed_json", text[: len(text) // 2].encode(), "invalid-notebook", 0)
    put("empty_file", b"", "invalid-notebook", 0)
    v5 = json.loads(text)
    v5["nbformat"] = 5
    put("wrong_nbformat", json.dumps(v5).encode(), "invalid-notebook", 0)
    put("png_not_notebook", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "invalid-notebook", 0)
    (subs / "pdf_only").mkdir(parents=True)
    (subs / "pdf_only" / "ex01.pdf").write_bytes(b"%PDF-1.4 not a notebook")
    expect["pdf_only"] = ("invalid-notebook", 0)
    put(
        "renamed_function",
        replace_def(good(), "layer_norm", "def my_layer_norm(x, gamma=None, beta=None, eps=1e-5):\n    return x"),
        "graded",
        2,
    )
    put(
        "raises",
        replace_def(
            good(),
            "layer_norm",
            "def layer_norm(x, gamma=None, beta=None, eps=1e-5):\n    raise ValueError('shapes confuse me')",
        ),
        "graded",
        2,
    )
    # a hang costs only what it keeps from being judged: the cell or call is interrupted and the rest graded
    put("infinite_loop", add_cell(good(), "while True:\n    pass", at=3), "timeout", 5)
    put("loop_on_new_inputs", replace_def(good(), "layer_norm", LOOPS_ON_NEW_INPUTS), "timeout", 2)
    put("swallows_interrupts", add_cell(good(), SWALLOWS_INTERRUPTS, at=3), "timeout", 0)
    asks = replace_def(good(), "statistics", "def statistics(x):\n    return float(input('mean?')), 5.0, 5.0 ** 0.5")
    put("calls_input", add_cell(asks, "name = input('What is your name?')", at=2), "graded", 4)
    put("os_exit", add_cell(good(), "import os\nos._exit(3)", at=5), "kernel-died", 0)
    put("segfault", add_cell(good(), "import ctypes\nctypes.string_at(0)", at=5), "kernel-died", 0)
    put(
        "huge_output",
        add_cell(good(), "print('x' * 30_000_000)\nfor i in range(100_000):\n    print(i)", at=2),
        "graded",
        5,
    )
    put("writes_files", add_cell(good(), WRITES_FILES, at=2), "graded", 5)
    many = good()
    for i in range(10_000):
        many.cells.append(nbformat.v4.new_code_cell(f"x{i} = {i}"))
    put("ten_thousand_cells", many, "invalid-notebook", 0)
    put(
        "monkeypatcher",
        add_cell(replace_def(good(), "layer_norm", MONKEYPATCH), "print('all checks pass, trust me')"),
        "graded",
        0,
    )
    put("breaks_messaging", add_cell(good(), "import json\njson.dumps = lambda *a, **k: '{}'", at=5), "kernel-died", 0)
    put("hard_coded", replace_def(good(), "layer_norm", MEMORIZED), "graded", 2)
    put("always_equal", replace_def(good(), "layer_norm", ALWAYS_EQUAL), "graded", 2)
    put("tensor_subclass", replace_def(good(), "layer_norm", LYING_TENSOR), "graded", 2)
    other = good()
    other.metadata["course"]["exercise"] = "ex99_unknown"
    put("unknown_exercise", other, "wrong-exercise", 0)
    chapter = nbformat.read(ROOT / "chapters" / "01_layernorm_by_hand.ipynb", as_version=4)
    put("a_chapter", chapter, "wrong-exercise", 0, flat=True)
    no_meta = good()
    del no_meta.metadata["course"]
    put("ex01_renamed_meta_lost", no_meta, "graded", 5, flat=True)  # identified by its file name
    return expect


def snapshot(folder: Path) -> dict:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def run_grader(*args, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """The grader's command, in its sandbox where bubblewrap runs (tests/test_grade_sandbox.py requires it in CI)."""
    unsandboxed = () if sandbox.available()[0] else ("--no-sandbox",)
    return subprocess.run(
        [sys.executable, "-m", "course_utils.grade", *map(str, args), *unsandboxed],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def feedback_files(folder: Path) -> dict:
    """{file name: text} of a run's feedback folder."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.md"))}


def read_rows(path: Path) -> dict:
    with open(path, newline="", encoding="utf-8") as f:
        return {row["learner"]: row for row in csv.DictReader(f)}


# ------------------------------------------------------------------------------------------------------
# the adversarial run (one grading run, shared by the tests below)
# ------------------------------------------------------------------------------------------------------
# how both editions' corpora are graded: the same folder, output, jobs, timeouts and seed
CORPUS_ARGS = (
    *("subs", "--out", "out/grades.csv", "--jobs", 2),
    *("--timeout", 60, "--cell-timeout", CELL_TIMEOUT, "--seed", 20260),
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("grading")
    expect = build_corpus(root)
    before = snapshot(root / "subs")
    proc = run_grader(*CORPUS_ARGS, cwd=root)
    return {
        "root": root,
        "expect": expect,
        "before": before,
        "proc": proc,
        "rows": read_rows(root / "out" / "grades.csv") if (root / "out" / "grades.csv").exists() else {},
        "feedback": feedback_files(root / "out" / "feedback"),  # as this run wrote them (later runs rewrite them)
    }


def test_every_submission_gets_a_row_and_exit_status_0(graded):
    proc = graded["proc"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(graded["expect"]) >= 14
    assert set(graded["rows"]) == set(graded["expect"])
    assert "grading" in proc.stderr  # the progress bar
    assert "submissions:" in proc.stdout and "graded" in proc.stdout  # the summary table


@pytest.mark.parametrize(
    "learner",
    [
        "correct",
        "untouched",
        "eps_outside",
        "wrong_choice",
        "forbidden_call",
        "other_edition",
        "malformed_json",
        "empty_file",
        "wrong_nbformat",
        "png_not_notebook",
        "pdf_only",
        "renamed_function",
        "raises",
        "infinite_loop",
        "loop_on_new_inputs",
        "swallows_interrupts",
        "calls_input",
        "os_exit",
        "segfault",
        "huge_output",
        "writes_files",
        "ten_thousand_cells",
        "monkeypatcher",
        "hard_coded",
        "always_equal",
        "tensor_subclass",
        "breaks_messaging",
        "unknown_exercise",
        "a_chapter",
        "ex01_renamed_meta_lost",
    ],
)
def test_status_and_points(graded, learner):
    status, total = graded["expect"][learner]
    row = graded["rows"][learner]
    assert (row["status"], float(row["total"])) == (status, total), row
    assert row["reason"]
    if row["exercise"] == "ex01_layernorm":
        assert float(row["max"]) == 5
        parts = [float(row[c]) for c in ("ex01.statistics", "ex01.layer_norm", "ex01.variance")]
        assert sum(parts) == total


def test_reasons_say_what_happened(graded):
    rows = graded["rows"]
    assert "JSON" in rows["malformed_json"]["reason"]
    assert "empty" in rows["empty_file"]["reason"]
    assert "nbformat 5" in rows["wrong_nbformat"]["reason"]
    assert "PNG" in rows["png_not_notebook"]["reason"]
    assert "no .ipynb" in rows["pdf_only"]["reason"]
    assert "10" in rows["ten_thousand_cells"]["reason"] and "cells" in rows["ten_thousand_cells"]["reason"]
    assert f"within {CELL_TIMEOUT} s" in rows["infinite_loop"]["reason"]
    assert "interrupted; the rest was graded" in rows["infinite_loop"]["reason"]
    assert "layer_norm" in rows["loop_on_new_inputs"]["reason"]
    assert "interrupted" not in rows["swallows_interrupts"]["reason"]
    assert "kernel died" in rows["os_exit"]["reason"] and "kernel died" in rows["segfault"]["reason"]
    assert "ex99_unknown" in rows["unknown_exercise"]["reason"]
    assert "truncated" in rows["huge_output"]["reason"]
    assert rows["correct"]["reason"] == "all checks passed"
    assert rows["monkeypatcher"]["ex01.layer_norm"] == "0"


def test_submitted_files_are_never_modified(graded):
    root = graded["root"]
    assert snapshot(root / "subs") == graded["before"]
    assert not (root / "results.txt").exists() and not (root / "outputs").exists()


def test_feedback_per_learner(graded):
    folder = graded["root"] / "out" / "feedback"
    for learner in graded["expect"]:
        assert (folder / f"{learner}.md").exists(), learner
    correct = (folder / "correct.md").read_text(encoding="utf-8")
    assert "5 / 5 points" in correct and "sqrt(σ² + ε)" in correct  # the free-text answer is collected
    renamed = (folder / "renamed_function.md").read_text(encoding="utf-8")
    assert "`layer_norm` is not defined" in renamed and "my_layer_norm" in renamed
    hard = (folder / "hard_coded.md").read_text(encoding="utf-8")
    assert "max abs error" in hard and "Hint:" in hard
    raises = (folder / "raises.md").read_text(encoding="utf-8")
    assert "raised ValueError: shapes confuse me" in raises
    asks = (folder / "calls_input.md").read_text(encoding="utf-8")
    assert "StdinNotImplementedError" in asks
    equal = (folder / "always_equal.md").read_text(encoding="utf-8")
    assert "AlwaysEqual" in equal
    answers = (folder / "_free_text_answers.md").read_text(encoding="utf-8")
    assert "In your own words" in answers and "**untouched**" in answers


def test_resume_regrades_only_new_or_changed_submissions_with_identical_grades(graded):
    root = graded["root"]
    state = root / "out" / "grades.state.jsonl"
    lines = state.read_text(encoding="utf-8").splitlines()
    # an interrupted run: "correct" was never recorded, and the last line was cut short
    kept = [line for line in lines if '"learner": "correct"' not in line]
    state.write_text("\n".join(kept) + "\n" + lines[-1][:40], encoding="utf-8")
    first = read_rows(root / "out" / "grades.csv")
    write(completed(EX01), root / "subs" / "empty_file" / HANDED_OUT)  # a learner hands in again
    proc = run_grader(
        "subs", "--out", "out/grades.csv", "--jobs", 2, "--timeout", 60, "--cell-timeout", CELL_TIMEOUT, cwd=root
    )  # no --seed: the state file's seed is reused
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reused = len(graded["expect"]) - 1 - 2  # pdf_only is a folder, not a file: always listed again
    assert f"({reused} unchanged, reused from the state file)" in proc.stdout
    again = read_rows(root / "out" / "grades.csv")
    assert again.pop("empty_file")["total"] == "5" and first.pop("empty_file")["status"] == "invalid-notebook"
    assert again == first

    proc = run_grader(root / "subs" / "wrong_nbformat" / HANDED_OUT, "--out", "out/grades.csv", "--force", cwd=root)
    assert "(0 unchanged" in proc.stdout and read_rows(root / "out" / "grades.csv")["wrong_nbformat"]["total"] == "0"


# ------------------------------------------------------------------------------------------------------
# the Japanese edition, graded with --lang ja: the same points, everything people read in Japanese
# ------------------------------------------------------------------------------------------------------
STATUS_CODES = re.compile(
    r"(?<![\w-])(graded|timeout|kernel-died|invalid-notebook|wrong-exercise|grader-error)(?![\w-])"
)
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def graded_ja(tmp_path_factory):
    """The Japanese twins of the corpus's everyday learners (ja/exercises filled in), and the English edition's
    solved notebook (`other_edition`), graded as `graded` grades the corpus, with --lang ja."""
    root = tmp_path_factory.mktemp("grading_ja")
    expect = {}
    for learner, (nb, status, total) in twins(lambda: filled("ja"), lambda: handed_out("ja")).items():
        write(nb, root / "subs" / learner / HANDED_OUT)
        expect[learner] = (status, total)
    write(completed(EX01), root / "subs" / "other_edition" / HANDED_OUT)
    expect["other_edition"] = ("graded", 5)
    proc = run_grader(*CORPUS_ARGS, "--lang", "ja", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {
        "root": root,
        "expect": expect,
        "proc": proc,
        "rows": read_rows(root / "out" / "grades.csv"),
        "feedback": feedback_files(root / "out" / "feedback"),
    }


@pytest.fixture(params=["en", "ja"])
def edition(request):
    """(language, run): the English corpus's run, or the Japanese twins' run with --lang ja."""
    return request.param, request.getfixturevalue("graded" if request.param == "en" else "graded_ja")


def feedback_of(run: dict, learner: str) -> str:
    return run["feedback"][f"{learner}.md"]


def _answer_cell(edition: str) -> int:
    return next(i for i, c in enumerate(handed_out(edition).cells) if c.source.strip() == "YOUR ANSWER HERE")


def question_heading(edition: str) -> str:
    """The heading of ex01's free-text question in that edition ("Task 4 · In your own words ...")."""
    prompt = handed_out(edition).cells[_answer_cell(edition) - 1].source
    return next(line for line in prompt.splitlines() if line.strip()).lstrip("# ").strip()


def key_answer(edition: str) -> str:
    """The first line of the free-text answer that `filled(edition)` writes (the answer key's)."""
    return filled(edition).cells[_answer_cell(edition)].source.strip().splitlines()[0]


@pytest.mark.parametrize("learner", [*TWINS, "other_edition"])
def test_a_japanese_submission_earns_what_its_english_twin_earns(graded, graded_ja, learner):
    en, ja = graded["rows"][learner], graded_ja["rows"][learner]
    same = ("exercise", "status", "total", "max", "ex01.statistics", "ex01.layer_norm", "ex01.variance", "review")
    assert {k: ja[k] for k in same} == {k: en[k] for k in same}, (en, ja)
    assert (ja["status"], float(ja["total"])) == graded_ja["expect"][learner] == graded["expect"][learner]
    assert ja["status"] == "graded"  # the CSV's status column is a code, the same in every language
    assert JAPANESE.search(ja["reason"]) and not JAPANESE.search(en["reason"]), (en["reason"], ja["reason"])


def test_status_words_feedback_and_summary_speak_the_grading_language(edition):
    lang, run = edition
    graded_rows = sum(1 for row in run["rows"].values() if row["status"] == "graded")
    correct, summary = feedback_of(run, "correct"), run["proc"].stdout
    with i18n.using(lang):
        assert (
            _("- Status: **{status}**: {reason}").format(status=_("graded"), reason=_("all checks passed")) in correct
        )
        assert _("{count} {status}").format(count=graded_rows, status=_("graded")) in summary
    if lang == "en":
        assert "- Status: **graded**: all checks passed" in correct and f"{graded_rows} graded" in summary
        return
    assert "- 状態：**採点済み**：すべてのチェックに合格" in correct
    assert f"提出物{len(run['rows'])}件：採点済み{graded_rows}件" in summary
    assert not STATUS_CODES.search(summary), summary
    assert "採点中" in run["proc"].stderr and not STATUS_CODES.search(run["proc"].stderr)  # the progress bar
    for learner in run["expect"]:
        text = feedback_of(run, learner)
        assert not STATUS_CODES.search(text), (learner, STATUS_CODES.search(text))
        assert "Status" not in text and "Hint:" not in text, learner


def test_free_text_answers_are_read_against_the_submissions_own_edition(edition):
    """A submission's answer is what it wrote in place of its own edition's YOUR ANSWER HERE, shown under the
    question's heading in the grading language; never the whole notebook as an "edited question"."""
    lang, run = edition
    other = {"en": "ja", "ja": "en"}[lang]
    with i18n.using(lang):
        edited = _("(the question's cell was edited; Markdown the learner added or changed:)")
        no_answer = _("(no answer)")
        grouped = _("## {exercise}: {prompt}").format(exercise="ex01_layernorm", prompt=question_heading(lang))
    for learner, own in (("correct", lang), ("other_edition", other)):
        text = feedback_of(run, learner)
        assert f"**{question_heading(lang)}**\n\n> {key_answer(own)}" in text, (learner, text[-2000:])
        assert edited not in text and question_heading(other) not in text, learner
    assert f"**{question_heading(lang)}**\n\n> {no_answer}" in feedback_of(run, "untouched")
    answers = feedback_of(run, "_free_text_answers")
    assert grouped in answers and answers.count("## ex01_layernorm") == 1  # both editions' answers, one question


def test_a_named_mistake_and_a_forbidden_call_speak_the_grading_language(edition):
    from course_utils.checks import ex01

    lang, run = edition
    mistake = next(h for h, wrong in ex01.LAYER_NORM_CHECK.mistakes.items() if wrong.__name__ == "_ln_eps_outside")
    with i18n.using(lang):
        named = _("Hint: {hint}").format(hint=_(mistake))
        forbidden_hint = _("Hint: {hint}").format(hint=_(ex01.FORBIDDEN.hint))
        uses = _("❌ {name}: uses {call}, which this task asks you to write yourself").split("{call}")[0]
        translated = _(mistake) != mistake
    assert named in feedback_of(run, "eps_outside")
    text = feedback_of(run, "forbidden_call")
    assert uses.format(name="layer_norm") + "torch.nn.functional.layer_norm" in text and forbidden_hint in text
    assert translated == (lang == "ja") and ("ヒント：" in text) == (lang == "ja")


def test_a_wrong_choice_says_so_and_gives_its_hint_once(edition):
    """A choice has no cases and no reference implementation: its feedback says the answer is not the right one,
    and the question's hint for that answer appears once (not as a case's note and again as the hint)."""
    from course_utils.checks import ex01

    lang, run = edition
    text = feedback_of(run, "wrong_choice")
    with i18n.using(lang):
        verdict = _("❌ {name}: {message}").format(
            name="ex01.variance", message=_("the chosen answer is not the right one")
        )
        hint = _(ex01.VARIANCE_QUESTION.wrong_hints["a"])
    assert f"| ex01.variance | 0 / 1 | {verdict} |" in text
    assert f"```text\n{verdict}\n   " in text and text.count(hint) == 1, text
    section = text.split("### ex01.variance", 1)[1]
    assert ("reference" if lang == "en" else "参照実装") not in section, section
    if lang == "ja":
        assert "選んだ答えは正解ではありません" in section and "1個中1個" not in text


@pytest.mark.parametrize("argv", [["--lang", "ja", "--help"], ["--help", "--lang=ja"], ["-h", "subs", "--lang", "ja"]])
def test_help_speaks_the_language_of_lang(argv, capsys):
    from course_utils.grading import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("使い方：python -m course_utils.grade "), out
    assert "講師向けの一括採点ツール" in out and "位置引数：" in out and "オプション：" in out
    assert "このヘルプを表示して終了します" in out and "同時に採点するノートブックの数" in out
    english = ("usage:", "positional arguments", "options:", "show this help", "notebook files", "the gradebook CSV")
    assert [e for e in english if e in out] == []
    assert not re.search(r"\b(default|seconds|language|folder|notebooks?)\b", out), out  # every option's help
    assert i18n.language() == "en"


def test_help_and_usage_errors_in_both_languages(capsys):
    from course_utils.grading import cli

    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m course_utils.grade ") and "show this help message and exit" in out
    assert not JAPANESE.search(out)
    with pytest.raises(SystemExit) as stop:
        cli.main(["--lang", "ja"])  # no submissions
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("使い方：") and "python -m course_utils.grade：エラー：" in err
    proc = subprocess.run(
        [sys.executable, "-m", "course_utils.grade", "--lang", "ja", "--help"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0 and proc.stdout.startswith("使い方：") and "オプション：" in proc.stdout, proc.stderr


def test_every_status_has_its_words_in_each_language():
    """The summary and the feedback say each status (a row's, or an item's without a verdict) in words of the
    grading language; the English words are the codes themselves."""
    from course_utils.grading import cli, run

    item = run.ItemResult("ex01.layer_norm", points=3.0, status="not-graded")
    statuses = (*run.STATUSES, run.GRADER_ERROR)
    rows = [
        run.Result(f"subs/l{i}/ex01.ipynb", f"l{i}", exercise="ex01_layernorm", status=s, reason="…", items=[item])
        for i, s in enumerate(statuses)
    ]
    for code in (*statuses, "passed", "failed", "error", "not-implemented", "not-graded"):
        assert cli.status_word(code) == code
        with i18n.using("ja"):
            assert JAPANESE.search(cli.status_word(code)) and not re.search("[A-Za-z]", cli.status_word(code)), code
    with i18n.using("ja"):
        shown = cli.summary(rows, 1.0, 0) + "".join(cli.feedback_markdown(r.learner, [r]) for r in rows)
    assert not STATUS_CODES.search(shown) and "not-graded" not in shown, shown
    counts = "採点済み1件、採点ツールのエラー1件、無効なノートブック1件、カーネル停止1件、時間切れ1件、演習違い1件"
    assert f"提出物{len(rows)}件：{counts}" in shown
    lines = cli.summary(rows, 1.0, 0).splitlines()
    with i18n.using("ja"):
        table = cli.summary(rows, 1.0, 0).splitlines()
    # the columns line up in a terminal, where a Japanese character takes two columns
    assert len({text_width(line.split("  …")[0]) for line in table[2 : 2 + len(rows)]}) == 1, table
    assert len({len(line.split("  …")[0]) for line in lines[2 : 2 + len(rows)]}) == 1, lines


# ------------------------------------------------------------------------------------------------------
# the grader's own failures are not the learners'
# ------------------------------------------------------------------------------------------------------
BUGGY_GRADER = '''\
"""The grader with a bug injected into one case generator, in the grader's own processes only: the
spawned worker processes run this file too (as __mp_main__); the learners' kernels never import it."""
import sys

from course_utils.checks import exercise_registry


def broken_case_generator(generator):
    raise KeyError("injected: a bug in a case generator")


exercise_registry("ex01_layernorm").checks["layer_norm"].make_cases = broken_case_generator

if __name__ == "__main__":
    from course_utils.grading.cli import main

    sys.exit(main())
'''


def test_a_bug_in_the_grader_is_a_grader_error_not_the_learners(tmp_path):
    write(completed(EX01), tmp_path / "subs" / "alice" / HANDED_OUT)  # meets the bug
    write(completed(ROOT / "solutions" / "ex02_rmsnorm.ipynb"), tmp_path / "subs" / "bob" / "ex02_rmsnorm.ipynb")
    (tmp_path / "subs" / "carol").mkdir()
    (tmp_path / "subs" / "carol" / HANDED_OUT).write_bytes(b"")
    (tmp_path / "buggy_grader.py").write_text(BUGGY_GRADER, encoding="utf-8")
    args = ["subs", "--out", "out/grades.csv", "--jobs", "2", "--seed", "77"]
    proc = subprocess.run(
        [sys.executable, "buggy_grader.py", *args], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    rows = read_rows(tmp_path / "out" / "grades.csv")
    alice = rows["alice"]
    assert (alice["status"], alice["total"], alice["ex01.layer_norm"]) == ("grader-error", "", ""), alice
    assert "KeyError" in alice["reason"] and "generating" in alice["reason"]
    # the run went on: the others are graded as usual
    assert (rows["bob"]["status"], rows["bob"]["total"]) == ("graded", rows["bob"]["max"])
    assert rows["carol"]["status"] == "invalid-notebook"
    # the instructor is told what to report, and where the traceback is
    log = tmp_path / "out" / "grades.grader-errors.log"
    assert "GRADER ERROR" in proc.stderr and str(Path("out") / "grades.grader-errors.log") in proc.stderr
    assert "issue tracker" in proc.stderr and "torch" in proc.stderr and "Python" in proc.stderr
    assert "commit" in proc.stderr or "not a git checkout" in proc.stderr
    text = log.read_text(encoding="utf-8")
    assert "Traceback" in text and "injected: a bug in a case generator" in text and "alice" in text
    # the learner is not told they failed
    feedback = (tmp_path / "out" / "feedback" / "alice.md").read_text(encoding="utf-8")
    assert "not graded yet" in feedback and "problem in the grader" in feedback
    assert "0 / 5" not in feedback and "❌" not in feedback
    # nothing is kept for it: once the bug is gone, the same command grades it (and only it)
    state = (tmp_path / "out" / "grades.state.jsonl").read_text(encoding="utf-8")
    assert "alice" not in state and "bob" in state
    proc = run_grader(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(2 unchanged, reused from the state file)" in proc.stdout
    alice = read_rows(tmp_path / "out" / "grades.csv")["alice"]
    assert (alice["status"], alice["total"]) == ("graded", "5"), alice
    assert not log.exists()


def test_an_unknown_exercise_is_wrong_exercise_but_a_broken_check_module_is_the_graders(monkeypatch):
    import importlib

    from course_utils.grading import run

    assert run.load_registry("ex99_unknown") is None  # the learner's: wrong-exercise
    assert run.load_registry("ex01_typo") is None  # ex01's module registers another id
    assert [item.graded.check for item in run.load_registry("ex01_layernorm")][:1] == ["statistics"]
    real = importlib.import_module

    def broken(name, *args, **kwargs):
        if name.endswith("checks.ex02"):
            raise NameError("injected: a check module that does not import")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(NameError):  # raised, so grade_submission reports a grader-error
        run.load_registry("ex02_rmsnorm")


def test_feedback_that_cannot_be_written_is_a_grader_error(tmp_path, monkeypatch):
    from course_utils.grading import cli, run

    def row(learner):
        item = run.ItemResult("ex01.layer_norm", points=3.0, earned=3.0, status="passed", text="✅")
        return run.Result(
            f"subs/{learner}/{HANDED_OUT}",
            learner,
            exercise="ex01_layernorm",
            status="graded",
            reason="all checks passed",
            sha256="ab" * 32,
            items=[item],
            total=3.0,
            max=3.0,
        )

    rows = [row("alice"), row("bob")]
    state = cli.State(tmp_path / "grades.state.jsonl")
    for r in rows:
        state.record(r)
    real = cli.feedback_markdown

    def fails_for_bob(learner, results):
        if learner == "bob" and results[0].status != "grader-error":
            raise UnicodeError("injected")
        return real(learner, results)

    monkeypatch.setattr(cli, "feedback_markdown", fails_for_bob)
    failed = cli.write_feedback(rows, tmp_path / "feedback")
    assert [r.learner for r in failed] == ["bob"]
    assert (rows[0].status, rows[1].status) == ("graded", "grader-error")
    assert rows[1].total == 0 and rows[1].items[0].earned == 0 and "UnicodeError" in rows[1].reason
    assert "not graded yet" in (tmp_path / "feedback" / "bob.md").read_text(encoding="utf-8")
    state.forget(rows[1].path)
    again = cli.State(tmp_path / "grades.state.jsonl")  # the next run grades bob again, not alice
    assert again.entries[rows[0].path].status == "graded" and again.entries[rows[0].path] == rows[0]
    assert again.fresh(rows[1].path, rows[1].sha256, None) is None


# ------------------------------------------------------------------------------------------------------
# every other exercise in solutions/: its solution earns full marks (ex01 covers the untouched exercise)
# ------------------------------------------------------------------------------------------------------
OTHER_SOLUTIONS = sorted(p for p in (ROOT / "solutions").glob("ex*.ipynb") if p != EX01)


@pytest.mark.skipif(not OTHER_SOLUTIONS, reason="ex01 is the only exercise (covered above)")
def test_every_exercise_grades_its_solution_with_full_marks(tmp_path):
    from course_utils.checks import exercise_registry

    for solution in OTHER_SOLUTIONS:
        write(completed(solution), tmp_path / "subs" / f"solved_{solution.stem}" / "handed_in.ipynb")
    proc = run_grader("subs", "--out", "grades.csv", "--jobs", 2, "--seed", 99, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = read_rows(tmp_path / "grades.csv")
    for solution in OTHER_SOLUTIONS:
        full = sum(g.points for g in exercise_registry(solution.stem).graded)
        row = rows[f"solved_{solution.stem}"]
        assert (row["exercise"], row["status"], float(row["total"]), float(row["max"])) == (
            solution.stem,
            "graded",
            full,
            full,
        ), row
        assert row["review"] == "", row  # an honest solution is never marked for review


# ------------------------------------------------------------------------------------------------------
# the plain-data format between the kernel and the grader
# ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        -(2**70),
        1.5,
        float("inf"),
        "b",
        (1.0, 2.0),
        [None, "x"],
        {"mean": 5.0},
        torch.tensor([4.0, 6.0, 2.0, 8.0]),
        torch.randn(2, 3, dtype=torch.float64),
        torch.randn(3).half(),
        torch.randn(3).bfloat16(),
        torch.arange(6).reshape(2, 3),
        torch.zeros(0, 4),
        torch.tensor(2.5),
    ],
)
def test_plain_values_round_trip(value):
    back = kernel.decode(json.loads(json.dumps(kernel.encode(value))))
    if isinstance(value, torch.Tensor):
        assert type(back) is torch.Tensor and back.dtype == value.dtype and torch.equal(back, value)
    else:
        assert back == value and type(back) is type(value)


def test_anything_else_is_sent_as_unsupported_and_never_as_an_object():
    class AlwaysEqual:
        def __eq__(self, other):
            return True

    class Liar(torch.Tensor):
        pass

    assert isinstance(kernel.decode(kernel.encode(AlwaysEqual())), kernel.Unsupported)
    back = kernel.decode(kernel.encode(torch.ones(2).as_subclass(Liar)))
    assert type(back) is torch.Tensor
    big = kernel.encode(torch.zeros(kernel.MAX_ELEMENTS + 1))
    assert big["k"] == "unsupported" and "too large" in big["type"]


@pytest.mark.parametrize(
    "forged",
    [
        {"k": "tensor", "dtype": "float32", "shape": [3], "data": "AAAA"},  # bytes do not fit the shape
        {"k": "tensor", "dtype": "object", "shape": [1], "data": ""},  # not a numeric dtype
        {"k": "tensor", "dtype": "float32", "shape": [-1], "data": ""},
        {"k": "float", "v": 1.0, "extra": 1},
        {"k": "pickle", "v": "gASVAAAAAAAAAAA="},
        {"k": "int", "v": 12},
        ["not", "a", "dict"],
    ],
)
def test_forged_answers_are_rejected(forged):
    with pytest.raises(kernel.FormatError):
        kernel.decode(forged)


def test_a_grader_error_says_what_the_grader_was_doing_in_the_grading_language():
    """The step of a grader error is a catalog message like its sentence, so `--lang ja` shows no English but
    the exception's own text; the English stays in the exception (and the traceback) for the maintainer."""
    from course_utils import i18n
    from course_utils.grading.run import GraderError, GraderStep, ItemResult, Result, mark_grader_error

    def failed_row(lang):
        row = Result("subs/a/ex01.ipynb", "a", items=[ItemResult("ex01.x", earned=1.0, status="passed", text="ok")])
        try:
            with GraderStep(i18n.N_("judging check {check}"), check=repr("ex01.layer_norm")):
                raise KeyError("boom")
        except GraderError as exc:
            assert str(exc).startswith("judging check 'ex01.layer_norm': KeyError")
            with i18n.using(lang):
                mark_grader_error(row, exc)
        return row

    en, ja = failed_row("en"), failed_row("ja")
    assert en.reason == "not graded: the grader failed while judging check 'ex01.layer_norm' (KeyError: 'boom')"
    assert ja.reason == (
        "未採点：採点ツールが次の処理中に失敗しました：チェック 'ex01.layer_norm' の判定（KeyError: 'boom'）"
    )
    assert [(i.earned, i.status, i.text) for i in ja.items] == [(0.0, "not-graded", "")]
    with i18n.using("ja"):  # a step given directly (writing the feedback file) is translated too
        row = Result("subs/a/ex01.ipynb", "a")
        mark_grader_error(row, OSError("disk full"), i18n.N_("writing the learner's feedback file"))
    assert "受講者へのフィードバックファイルの書き出し" in row.reason and "writing" not in row.reason
