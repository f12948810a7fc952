"""Grading one submitted notebook: read it, run it in a fresh kernel, call its functions, compare.

This is the worker half of `python -m course_utils.grade` (course_utils.grading.cli finds the
submissions, runs this in parallel processes and writes the gradebook). `grade_submission(task)` (a Task) never
raises; it returns the gradebook's row, a Result (kept as JSON in the resume state), with a status:

    graded            the notebook ran; every graded item has a verdict (some may be 0 points)
    timeout           a cell, the whole notebook or a graded call ran past its time limit (a cell or call is
                      interrupted and the rest graded: a hang costs only what it kept from being judged)
    kernel-died       the kernel exited (os._exit, a segfault, memory) while running the notebook or a call
    invalid-notebook  not a notebook we can run: empty, malformed JSON, wrong nbformat, too large, ...
    wrong-exercise    the notebook is not an exercise this grader knows (or not the one being graded)
    grader-error      the grader's own code failed (a bug, or a kernel that could not start before any
                      learner code ran): no grade, never kept in the resume state; the result's
                      "traceback" is for the instructor's report (course_utils.grading.cli)

The first five are about the submission (STATUSES); grader-error is about the grader.

The verdict never comes from the learner's kernel. The kernel only *runs* the learner's functions on
inputs that the grader generated from its own seed (never seed 0, which the learner's notebook uses);
the outputs come back as plain data (course_utils.grading.kernel) and are judged here, in this
process, with the reference checks of course_utils.checks (course_utils.grading.judge). Whatever the
notebook monkeypatches in its kernel (course_utils, the checks, torch, numpy, builtins) stays in that kernel.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeVar

from .. import i18n
from ..checks.core import Status
from ..i18n import N_, _
from .judge import judge
from .kernel import encode, kernel_source
from .sandbox import Sandbox, kernel_manager

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from ..checks.registry import GradedItem

GRADER_VERSION = 5  # 2: forbidden calls (course_utils.checks.forbidden) earn no points; 3: more of them, traced;
# 4: ops outside a task's allowlist are marked for review (course_utils.checks.allowed); 5: a wrong choice's verdict in
# its own words, free-text answers read against the submission's edition (the state keeps both: the same points)
MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024
MAX_CODE_CELLS = 2000  # a 10,000-cell notebook is refused rather than run for minutes
MAX_FOLDER_COPY_BYTES = 200 * 1024 * 1024
MAX_ANSWER_BYTES = 200 * 1024 * 1024
STREAM_LIMIT = 20_000  # characters of printed output kept per cell, in the kernel and here
STARTUP_TIMEOUT = 120  # kernel start plus `import torch`, not charged to the learner
PROBE_TIMEOUT = 10  # after interrupting a cell that ran past its limit: how long the kernel has to answer again
GRADER_TAG = "course-grader"
EXERCISE_NAME = re.compile(r"(ex\d\d)(?:_([A-Za-z0-9]+))?", re.IGNORECASE)
EXERCISE_ID = re.compile(r"ex\d\d_[A-Za-z0-9_]{1,40}")  # what a generated notebook's metadata may name

RowStatus = Literal["", "graded", "timeout", "kernel-died", "invalid-notebook", "wrong-exercise", "grader-error"]
"""A gradebook row's status (the module's docstring); "" for a row not graded yet."""
ItemStatus = Literal["not-graded"] | Status
"""A graded item's status: its check's verdict (checks.core.Status), or "not-graded" (never reached, or the grader
failed)."""

STATUSES: tuple[RowStatus, ...] = ("graded", "timeout", "kernel-died", "invalid-notebook", "wrong-exercise")
GRADER_ERROR: Final = "grader-error"  # the grader's own failure: no grade, not kept in the resume state

Solutions = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None
"""The answer keys' folders, one per edition of the course (solutions/, ja/solutions/), or one folder."""


class GraderError(Exception):
    """A failure of the grader's own code while grading one submission (not of the learner's notebook).

    `step` is the English of what the grader was doing, an N_() message with `{fields}`: the grader's row shows
    it in the grading language (mark_grader_error), the traceback in English."""

    def __init__(self, step: str, cause: BaseException, **fields: object) -> None:
        super().__init__(f"{step.format(**fields)}: {type(cause).__name__}: {cause}")
        self.step, self.fields, self.cause = step, fields, cause


class GraderStep:
    """`with GraderStep(N_("what it does {check}"), check=...):` around grader code that runs no learner code
    (generating inputs, writing a request, reading an answer): whatever it raises is the grader's failure, a
    GraderError, and never passes for something the learner's kernel did."""

    def __init__(self, step: str, **fields: object) -> None:
        self.step, self.fields = step, fields

    def __enter__(self) -> GraderStep:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> Literal[False]:
        if exc is not None and isinstance(exc, Exception) and not isinstance(exc, GraderError):
            raise GraderError(self.step, exc, **self.fields) from exc
        return False


# ------------------------------------------------------------------------------------------------------
# reading and identifying
# ------------------------------------------------------------------------------------------------------
class InvalidNotebook(Exception):
    pass


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_notebook(raw: bytes) -> NotebookNode:
    """The notebook in `raw` (nbformat 4, outputs dropped); InvalidNotebook with a short reason otherwise."""
    import nbformat

    if not raw.strip():
        raise InvalidNotebook(_("the file is empty"))
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise InvalidNotebook(
            _("the file is {size:.0f} MB (the grader reads at most {limit} MB)").format(
                size=len(raw) / 2**20, limit=MAX_NOTEBOOK_BYTES // 2**20
            )
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        kind = _sniff(raw)
        raise InvalidNotebook(_("not a notebook: a binary file{kind}").format(kind=_(kind) if kind else "")) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidNotebook(
            _("not valid JSON ({error} at line {line}, column {column})").format(
                error=exc.msg, line=exc.lineno, column=exc.colno
            )
        ) from None
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        raise InvalidNotebook(_("JSON, but not a Jupyter notebook (no cells)"))
    major = data.get("nbformat")
    if major not in (3, 4):
        raise InvalidNotebook(
            _("nbformat {major} is not supported (Jupyter notebooks are nbformat 4)").format(major=repr(major))
        )
    try:
        nb = nbformat.reads(text, as_version=4, capture_validation_error={})
        for cell in nb.cells:
            if cell.get("cell_type") == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.validate(nb)
    except Exception as exc:  # nbformat's errors are long: keep the first line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidNotebook(_("not a valid nbformat 4 notebook: {error}").format(error=first[:160])) from None
    code = sum(1 for c in nb.cells if c.cell_type == "code" and c.source.strip())
    if code > MAX_CODE_CELLS:
        raise InvalidNotebook(
            _("{code} code cells: the grader runs notebooks of at most {limit}").format(code=code, limit=MAX_CODE_CELLS)
        )
    return nb


def _sniff(raw: bytes) -> str:
    signatures = {  # translated where they are shown (parse_notebook)
        b"%PDF": N_(" (a PDF)"),
        b"PK\x03\x04": N_(" (a zip archive, e.g. .docx)"),
        b"\x89PNG": N_(" (a PNG image)"),
        b"\xff\xd8\xff": N_(" (a JPEG image)"),
    }
    return next((name for sig, name in signatures.items() if raw.startswith(sig)), "")


def identify_exercise(nb: NotebookNode | None, path: Path, known: Sequence[str]) -> tuple[str | None, str]:
    """(exercise id, how it was found). The generator's metadata wins; the file name is a fallback."""
    course = nb.metadata.get("course") if nb is not None else None
    if isinstance(course, dict) and isinstance(course.get("exercise"), str) and course["exercise"].strip():
        return course["exercise"].strip(), "metadata"
    for match in EXERCISE_NAME.finditer(path.stem):
        prefix, topic = match.group(1).lower(), (match.group(2) or "").lower()
        candidates = [k for k in known if k == f"{prefix}_{topic}"] or [k for k in known if k.split("_")[0] == prefix]
        if len(candidates) == 1:
            return candidates[0], "file name"
    return None, ""


def column_name(exercise: str, check: str) -> str:
    """The CSV column of one graded item: question ids are already prefixed (ex01.variance)."""
    return check if "." in check else f"{exercise.split('_', 1)[0]}.{check}"


def load_registry(exercise: str) -> list[GradedItem] | None:
    """The exercise's graded items, each with what judges it (course_utils.checks.registry), or None when
    the course has no such exercise. A check module that exists but fails to load raises: the grader's bug."""
    import importlib
    import importlib.util

    from ..checks import exercise_registry

    module = f"{__package__.rsplit('.', 1)[0]}.checks.{exercise.split('_', 1)[0]}"
    if not EXERCISE_NAME.fullmatch(exercise.split("_", 1)[0]) or importlib.util.find_spec(module) is None:
        return None
    importlib.import_module(module)
    try:
        return exercise_registry(exercise).items()
    except KeyError:  # the module registers another exercise id (ex01_typo for ex01_layernorm)
        return None


# ------------------------------------------------------------------------------------------------------
# free-text answers: Markdown cells that the generator turned into "YOUR ANSWER HERE"
# ------------------------------------------------------------------------------------------------------
def free_text_answers(nb: NotebookNode, exercise: str, solutions: Solutions) -> list[dict[str, str]]:
    """[{"prompt": the question's heading, "answer": what the learner wrote}] for each free-text answer.

    `solutions` are the answer keys' folders, one per edition of the course (solutions/ and ja/solutions/; a folder's
    language is its edition's: i18n.folder_language), or one folder. The learner's answer is what they wrote in place
    of the "YOUR ANSWER HERE" of the notebook they were handed, so it is read against the exercise generated from the
    key of the submission's own edition: the one whose cells the notebook holds most of. The heading is the
    question's in the feedback's language (the grading language's edition), else in the submission's."""
    templates = _answer_templates(exercise, solutions)
    if not templates:
        return []
    learner = list(nb.cells)
    sources = [c.source.strip() for c in learner]
    here = i18n.language()

    def holds(
        lang: str,
    ) -> tuple[int, bool]:  # how many of the notebook's cells come from this edition; ties: the grading one
        known = {c.source.strip() for c in templates[lang]}
        return (sum(1 for s in sources if s and s in known), lang == here)

    edition = max(templates, key=holds)
    template = templates[edition]
    known = {c.source.strip() for c in template}
    questions = _free_text_cells(template)
    titles = _free_text_titles(templates.get(here, template))
    if len(titles) != len(questions):  # the editions disagree: the submission's own headings
        titles = _free_text_titles(template)
    answers = []
    for title, (index, cell) in zip(titles, questions):
        prompt = template[index - 1].source.strip() if index else ""
        at = next((i for i, s in enumerate(sources) if s == prompt), None)
        written = []
        if at is not None:
            for c in learner[at + 1 :]:
                if c.source.strip() in known and c.source.strip() != cell.source.strip():
                    break
                if c.cell_type == "markdown":
                    written.append(c.source.strip())
        text = "\n\n".join(w for w in written if w and w != "YOUR ANSWER HERE").strip()
        if at is None:  # the learner edited the question's cell: show what they added to the notebook
            added = [c.source.strip() for c in learner if c.cell_type == "markdown" and c.source.strip() not in known]
            text = _("(the question's cell was edited; Markdown the learner added or changed:)") + "\n\n"
            text += "\n\n".join(added)
        answers.append({"prompt": title, "answer": text[:5000] or _("(no answer)")})
    return answers


def _answer_templates(exercise: str, solutions: Solutions) -> dict[str, list[NotebookNode]]:
    """{language: the cells of the exercise notebook generated from that edition's answer key}."""
    from ..exercises import make_exercise

    folders = [solutions] if isinstance(solutions, (str, os.PathLike)) else list(solutions or ())
    templates: dict[str, list[NotebookNode]] = {}
    for folder in [str(f) for f in folders if str(f)]:
        solution = Path(folder) / f"{exercise}.ipynb"
        if solution.exists():
            templates.setdefault(i18n.folder_language(folder), make_exercise(solution).cells)
    return templates


def _free_text_cells(template: list[NotebookNode]) -> list[tuple[int, NotebookNode]]:
    """(index, cell) of each "YOUR ANSWER HERE" Markdown cell of an exercise notebook."""
    return [
        (index, cell)
        for index, cell in enumerate(template)
        if cell.cell_type == "markdown" and "YOUR ANSWER HERE" in cell.source
    ]


def _free_text_titles(template: list[NotebookNode]) -> list[str]:
    """The heading of each free-text question of an exercise notebook (the first line of the cell before it)."""
    return [
        _heading(template[index - 1].source.strip() if index else "") for index, _cell in _free_text_cells(template)
    ]


def _heading(prompt: str) -> str:
    return next((line.lstrip("# ").strip() for line in prompt.splitlines() if line.strip()), _("free-text answer"))


# ------------------------------------------------------------------------------------------------------
# running the notebook in a kernel
# ------------------------------------------------------------------------------------------------------
def _client_class() -> Any:  # a NotebookClient subclass; its km and kc are set once the kernel starts
    from nbclient import NotebookClient

    class GradingClient(NotebookClient):
        """Keeps no outputs: only each cell's errors and the first STREAM_LIMIT characters it printed."""

        grader_notes: dict[int, dict[str, Any]]  # {cell index: {"printed": characters, "error": "Name: value"}}

        def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int) -> None:
            kind, content = msg["msg_type"], msg["content"]
            notes = self.grader_notes.setdefault(cell_index, {"printed": 0, "error": None})
            if kind == "stream":
                notes["printed"] += len(content.get("text", ""))
            elif kind == "error" and notes["error"] is None:
                notes["error"] = f"{content.get('ename', 'Error')}: {str(content.get('evalue', ''))[:200]}"
            return None

    return GradingClient


_PREAMBLE = '''\
def _course_grader_preamble(limit):
    """Cap what each cell prints (the grader keeps none of it), and import torch once."""
    import sys
    budget = {"left": limit}
    def reset(*args, **kwargs):
        budget["left"] = limit
    get_ipython().events.register("pre_run_cell", reset)
    for stream in (sys.stdout, sys.stderr):
        def write(text, _original=stream.write):
            left = budget["left"]
            if left <= 0:
                return len(text)
            if len(text) > left:
                text = text[:left] + "\\n[... the grader truncated this output ...]\\n"
            budget["left"] = left - len(text)
            return _original(text)
        stream.write = write
    import torch
_course_grader_preamble(STREAM_LIMIT)
del _course_grader_preamble
'''.replace("STREAM_LIMIT", str(STREAM_LIMIT))


def _grader_cell(source: str) -> NotebookNode:
    import nbformat

    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = [GRADER_TAG]
    return cell


def kernel_env(lang: str = "en", private: Path | None = None) -> dict[str, str]:
    """The kernel's environment: CPU only, deterministic, and the grader's language (COURSE_LANG, course_utils/i18n.py),
    so that what the notebook prints is in the language of the feedback. IPython's and matplotlib's folders are
    in `private` (the submission's own folder): not the instructor's profile, and writable in the sandbox.
    benchmarks/bench_grade.py starts its kernels with it too, to time them as the grader runs them."""
    env = dict(os.environ)
    if private is not None:
        for name, folder in (("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "matplotlib"), ("XDG_CACHE_HOME", "cache")):
            env[name] = str(private / folder)
    env.update(
        {
            "COURSE_LANG": lang,
            "COURSE_DEVICE": "cpu",
            "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "CUDA_VISIBLE_DEVICES": "",
            "COURSE_GRADING": "1",
            "COURSE_STRICT_CLAIMS": "0",  # a learner's notebook runs as in their session: a claim's ✗ never raises
        }
    )
    return env


class _Stop:
    """Why the kernel can no longer run anything: status and reason."""

    def __init__(self, status: Literal["timeout", "kernel-died"], reason: str) -> None:
        self.status, self.reason = status, reason


@dataclass
class KernelRun:
    """What running one notebook, then its graded calls, in a kernel gave.

    answers      {item number: the kernel's answer (a dict, judged by course_utils.grading.judge)}
    stop         why the kernel could run nothing more (_Stop), else None
    cell_errors  "cell N: the error" for each learner cell that raised
    printed      characters the learner's cells printed
    running      the item whose call was running when the kernel stopped, else None
    timeouts     the learner's cells that ran past their limit and were interrupted (the run went on)
    timed_out    {item number: why}: the graded calls that ran past their limit (interrupted; the rest were judged)
    """

    answers: dict[int, dict[str, Any]] = field(default_factory=dict)
    stop: _Stop | None = None
    cell_errors: list[str] = field(default_factory=list)
    printed: int = 0
    running: int | None = None
    timeouts: list[str] = field(default_factory=list)
    timed_out: dict[int, str] = field(default_factory=dict)


class _KernelSession:
    """One submission's kernel: runs the notebook's cells, then the grader's set-up cell and one cell per graded
    call, each under its time limit. A cell or a call that runs past its limit is interrupted and the kernel
    probed (`recovered`): one that answers again goes on with the next cell or call; one that does not (a loop
    that swallows the interrupt) stops the run there. `sandbox` (course_utils.grading.sandbox.Sandbox, or None)
    is where the kernel runs."""

    FIRST_LEARNER_CELL = 1  # cell 0 is the grader's preamble

    def __init__(
        self, nb: NotebookNode, workdir: Path, iodir: Path, limits: dict[str, float], sandbox: Sandbox | None = None
    ) -> None:
        self.nb = copy.deepcopy(nb)
        self.nb.cells.insert(0, _grader_cell(_PREAMBLE))
        self.workdir, self.iodir, self.limits = workdir, iodir, limits
        self.started = False  # the preamble ran: what fails from now on is the notebook's
        self.deadline: float | None = None  # when the whole notebook must have finished (monotonic s), while it runs
        self.probing = False
        self.cell: int | None = None  # the learner's cell running now (numbered from 0), else None
        self.current = _("the kernel's start")  # what runs now, in the words of a stop's reason
        self.call_timeout = _("the kernel did not start within {seconds} s").format(seconds=STARTUP_TIMEOUT)
        self.run = KernelRun()
        self.client = _client_class()(
            self.nb,
            timeout_func=self.timeout_for,
            allow_errors=True,
            kernel_name="python3",
            record_timing=False,
            store_widget_state=False,
            shutdown_kernel="immediate",
            iopub_timeout=10,
            startup_timeout=STARTUP_TIMEOUT,
        )
        self.client.km = kernel_manager(sandbox, iodir, kernel_name="python3")
        self.client.km.kernel_spec.interrupt_mode = "message"  # a signal would not reach a kernel in its own session
        self.client.grader_notes = {}

    # ------------------------------------------------------------------------------------------------
    def timeout_for(self, cell: NotebookNode) -> int:
        if not self.started:
            return STARTUP_TIMEOUT
        if self.probing:
            return PROBE_TIMEOUT
        limit = self.limits["cell_timeout"]
        if self.deadline is not None:
            limit = min(limit, self.deadline - time.monotonic())
        return max(1, math.ceil(limit))

    def describe_timeout(self, index: int | None) -> str:
        """Why the run stopped on a time limit: the whole notebook's, cell `index`'s, or (None) the graded call's."""
        if self.deadline is not None and time.monotonic() >= self.deadline - 0.5 and index is not None:
            return _("the notebook did not finish within {seconds} s").format(seconds=self.limits["timeout"])
        if index is None:
            return self.call_timeout
        return _("cell {index} did not finish within {seconds} s").format(
            index=index, seconds=self.limits["cell_timeout"]
        )

    async def execute(self, index: int) -> None:
        await self.client.async_execute_cell(self.nb.cells[index], index)

    async def append_and_execute(self, source: str) -> int:
        self.nb.cells.append(_grader_cell(source))
        await self.execute(len(self.nb.cells) - 1)
        return len(self.nb.cells) - 1

    async def recovered(self) -> bool:
        """After a cell or a graded call ran past its limit: interrupt the kernel and check that it answers
        again within PROBE_TIMEOUT s. False for a loop that swallows the interrupt: then the run stops there."""
        from jupyter_core.utils import ensure_async
        from nbclient.exceptions import CellTimeoutError

        client = self.client
        try:
            await ensure_async(client.km.interrupt_kernel())
            # fresh channels: the timed-out cell's poller would go on taking the next cells' messages
            stale, client.kc = client.kc, client.km.client()
            client.kc.start_channels()
            client.kc.allow_stdin = False
            stale.stop_channels()
        except Exception:
            return False
        self.probing = True
        try:
            await self.append_and_execute("pass")
            return True
        except CellTimeoutError:
            return False
        finally:
            self.probing = False

    # ------------------------------------------------------------------------------------------------
    async def learner_cells(self) -> None:
        """The notebook's own cells, as "Run All" runs them; a cell that runs past its limit is interrupted."""
        from nbclient.exceptions import CellTimeoutError

        self.deadline = deadline = time.monotonic() + self.limits["timeout"]
        for index in range(self.FIRST_LEARNER_CELL, len(self.nb.cells)):
            self.current = _("cell {index}").format(index=index - self.FIRST_LEARNER_CELL)
            self.cell = index - self.FIRST_LEARNER_CELL
            try:
                await self.execute(index)
            except CellTimeoutError:
                why = self.describe_timeout(self.cell)
                if deadline - time.monotonic() < 1 or not await self.recovered():
                    raise
                self.run.timeouts.append(why)  # interrupted: the notebook goes on, as after a cell that raised
        self.cell = None

    async def graded_calls(self, items: list[GradedItem], seed: int) -> None:
        """The grader's set-up cell, then one cell per graded item that calls the learner's function on the
        grader's inputs (course_utils.grading.kernel) and leaves its answer in a file."""
        from nbclient.exceptions import CellTimeoutError

        self.current = _("the grader's set-up")
        self.call_timeout = _("the grader's set-up did not finish within {seconds} s").format(
            seconds=self.limits["cell_timeout"]
        )
        self.deadline = None  # graded calls have their own limit per call
        with GraderStep(N_("preparing the grader's set-up cell")):
            setup = (
                f"_course_grader = {{'__name__': 'course_grader_kernel'}}\n"
                f"exec(compile({kernel_source()!r}, '<course grader>', 'exec'), _course_grader)\n"
            )
        await self.append_and_execute(setup)
        for number, (kind, graded, check) in enumerate(items):
            request_path, answer_path = self.iodir / f"request{number}.json", self.iodir / f"answer{number}.json"
            with GraderStep(N_("generating and sending the inputs of check {check}"), check=repr(graded.check)):
                request_path.write_text(json.dumps(kernel_request(kind, check, seed)), encoding="utf-8")
                source = (
                    f"_course_grader['call_learner_function'](globals(), {graded.function!r}, "
                    f"{str(request_path)!r}, {str(answer_path)!r})"
                )
            self.current = f"`{graded.function}`"
            self.run.running = number
            self.call_timeout = _("`{function}` did not return within {seconds} s on the grader's inputs").format(
                function=graded.function, seconds=self.limits["cell_timeout"]
            )
            try:
                index = await self.append_and_execute(source)
            except CellTimeoutError:
                if not await self.recovered():
                    raise
                self.run.timed_out[number] = self.call_timeout  # this item only: the next ones are judged
                self.run.running = None
                continue
            with GraderStep(N_("reading the kernel's answer for check {check}"), check=repr(graded.check)):
                self.run.answers[number] = _read_answer(answer_path, self.client.grader_notes.get(index))
            self.run.running = None

    async def __call__(self, items: list[GradedItem], seed: int) -> KernelRun:
        """Run it all; a kernel that dies or hangs ends the run with a `stop` saying so."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        self.cell = None
        kernel = None
        try:
            async with self.client.async_setup_kernel(
                cwd=str(self.workdir),
                env=kernel_env(i18n.language(), self.workdir.parent),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ):
                kernel = self.client.km
                _KERNELS.add(kernel)
                try:
                    await self.execute(0)
                    self.started = True
                    await self.learner_cells()
                    await self.graded_calls(items, seed)
                except CellTimeoutError as exc:
                    if not self.started:
                        raise _not_started(exc) from exc
                    self.run.stop = _Stop("timeout", self.describe_timeout(self.cell))
                except DeadKernelError as exc:
                    if not self.started:
                        raise _not_started(exc) from exc
                    self.run.stop = _Stop(
                        "kernel-died",
                        _(
                            "the kernel died while running {what} (os._exit, a crash such as a segfault, or memory)"
                        ).format(what=self.current),
                    )
        except GraderError:
            raise  # the grader's own failure: never passed off as the kernel's
        except Exception as exc:  # the kernel's messages stopped making sense (code that broke its messaging)
            if not self.started:
                raise _not_started(exc) from exc
            if self.run.stop is None:
                self.run.stop = _Stop(
                    "kernel-died",
                    _("the kernel stopped answering properly during {what} ({error})").format(
                        what=self.current, error=f"{type(exc).__name__}: {str(exc)[:100]}"
                    ),
                )
        finally:
            _KERNELS.discard(kernel)
        for cell_index, notes in sorted(self.client.grader_notes.items()):
            if cell_index < len(self.nb.cells) and GRADER_TAG not in self.nb.cells[cell_index].metadata.get("tags", []):
                self.run.printed += notes["printed"]
                if notes["error"]:
                    self.run.cell_errors.append(f"cell {cell_index - self.FIRST_LEARNER_CELL}: {notes['error']}")
        return self.run


async def _run_in_kernel(
    nb: NotebookNode,
    workdir: Path,
    iodir: Path,
    items: list[GradedItem],
    seed: int,
    limits: dict[str, float],
    sandbox: Sandbox | None = None,
) -> KernelRun:
    """Execute the notebook, then each graded call (_KernelSession): a KernelRun."""
    return await _KernelSession(nb, workdir, iodir, limits, sandbox)(items, seed)


def _not_started(exc: BaseException) -> GraderError:
    """A kernel that failed before any of the notebook's code ran: the grader's (or its machine's) failure.
    (A file in the learner's folder that shadows a module the kernel imports, a json.py, can cause it too:
    the traceback in the log shows which.)"""
    return GraderError(N_("starting the kernel, before any of the notebook's code ran"), exc)


def kernel_request(kind: str, check: Any, seed: int) -> dict[str, Any]:
    """The request for one graded item, as JSON-ready data: what `kernel.call_learner_function` reads in the
    kernel, then calls the learner's function with. Its cases' arguments are in the plain format (TypeError if
    the grader cannot send one: a check whose inputs are not plain data is the grader's bug).

    The batch writes one per item (`requestN.json`); the nbgrader assignments' test cells
    (tools/nbgrader_assignments.py) and the tests build theirs with it too, so they call a check as the grader does."""
    if kind == "choice":
        return {"kind": "choice", "calls": [[]]}
    calls = []
    for case in check.cases(seed):
        encoded = [encode(arg) for arg in case.args]
        bad = [e["type"] for e in encoded if e["k"] == "unsupported"]
        if bad:
            raise TypeError(f"the grader cannot send {bad[0]} to a kernel (check {check.name!r})")
        calls.append(encoded)
    from ..checks import forbidden

    return {"kind": "function", "calls": calls, "watch": forbidden.watch(check)}


def _forbidden_in_source(nb: NotebookNode, items: list[GradedItem]) -> dict[int, list[str]]:
    """{item number: the forbidden calls the grader's static scan finds in that function's cells}: this
    process reads the notebook's source, which no code in the kernel can change (course_utils.checks.forbidden)."""
    from ..checks import forbidden

    sources = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    return {
        number: forbidden.notebook_hits(check, sources, graded.function)
        for number, (kind, graded, check) in enumerate(items)
        if kind == "function"
    }


def _read_answer(path: Path, notes: dict[str, Any] | None) -> dict[str, Any]:
    """The kernel's answer file as a dict. The file is the kernel's output (the learner's code could have
    written or replaced it), so whatever is wrong with it is a "no-answer", never the grader's error."""
    error = notes["error"] if notes else None
    if not path.exists():
        return {"status": "no-answer", "message": error or _("the kernel wrote no answer")}
    try:
        if path.stat().st_size > MAX_ANSWER_BYTES:
            return {"status": "no-answer", "message": _("the answer was too large to read")}
        answer = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return {"status": "no-answer", "message": _("the answer could not be read")}
    return answer if isinstance(answer, dict) else {"status": "no-answer", "message": _("the answer could not be read")}


# The kernels this process runs, so that a worker told to stop (SIGTERM) kills them before it exits.
_KERNELS: set[Any] = set()  # jupyter_client KernelManagers

_T = TypeVar("_T")


def _in_thread(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run the kernel session in a thread of its own: nbclient then leaves this process's signal handling
    alone (it takes over SIGINT and SIGTERM when it runs in the main thread), so the batch's Ctrl-C and
    stop requests are ours to handle (see worker_init)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised in the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name="course-grader-kernel", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.2)
    if "error" in box:
        raise box["error"]
    return box["value"]


def worker_init() -> None:
    """For the grading worker processes: Ctrl-C is the batch's to handle (the main process stops the
    workers); SIGTERM kills this worker's kernels, then the worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # nbformat's validator imports jsonschema, which compiles an IRI grammar (rfc3987_syntax) at import:
    # about a second per worker, for a format that notebook schemas never use. Skip it.
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # None in sys.modules blocks an import

    def stop(signum: int, frame: object) -> None:
        for km in list(_KERNELS):
            process = getattr(getattr(km, "provisioner", None), "process", None)
            if process is None:
                continue
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                try:
                    process.kill()
                except Exception:
                    pass
        os._exit(1)

    signal.signal(signal.SIGTERM, stop)


# ------------------------------------------------------------------------------------------------------
# one submission, start to finish
# ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """One submission to grade, as the batch (course_utils.grading.cli) hands it to a worker process.

    path          the notebook;  display  its path as the gradebook shows it;  learner  whose it is
    sha256        the file's hash (the resume state's key, with `config`);  seed  the grader's inputs' seed
    exercise      the exercise to grade it as (None: identified from the notebook, among `known_exercises`)
    timeout       s for the whole notebook;  cell_timeout  s for one cell, and for one graded call
    solutions     the answer keys' folders, one per edition (solutions/, ja/solutions/), or one folder: the free-text
                  answers' templates (free_text_answers)
    copy_folder   run it in a copy of its whole folder (the learner's own), not of the notebook alone
    sandbox       run the kernel in a bubblewrap sandbox (course_utils.grading.sandbox), hiding `hidden`
    """

    path: str
    display: str
    learner: str
    seed: int
    config: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""
    exercise: str | None = None
    timeout: float = 300
    cell_timeout: float = 60
    known_exercises: tuple[str, ...] = ()
    solutions: Solutions = ()
    lang: str | None = None
    copy_folder: bool = False
    sandbox: bool = True
    hidden: tuple[str, ...] = ()


class _Record:
    """A row or an item of the gradebook (a dataclass), changed by name: `record.update(status=..., reason=...)`
    sets known fields only, so that a misspelt name raises instead of adding an attribute no one reads."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def update(self, **values: Any) -> None:
        for name, value in values.items():
            if name not in self.__dataclass_fields__:
                raise AttributeError(name)
            setattr(self, name, value)


@dataclass
class ItemResult(_Record):
    """One graded item of a row: its gradebook column, its points and the verdict in words."""

    column: str
    check: str = ""
    function: str = ""
    points: float = 0.0
    earned: float = 0.0
    status: ItemStatus = "not-graded"
    text: str = ""
    forbidden: list[str] = field(default_factory=list)  # the forbidden calls found (checks/forbidden.py)
    review: list[str] = field(default_factory=list)  # why a person should look (checks/core.py REVIEW_REASONS' codes)
    unlisted: list[str] = field(default_factory=list)  # the ops outside the task's allowlist (checks/allowed.py)


@dataclass
class Result(_Record):
    """One row of the gradebook: a submission, its status and reason, its items and points. A new one has no
    exercise, no items, no points: grade_submission fills it in, and the batch uses it as it is for a row with no
    grading. The resume state keeps it as JSON (`to_json`, `from_json`)."""

    path: str
    learner: str
    seed: int = 0
    config: dict[str, Any] = field(default_factory=dict)
    exercise: str = ""
    status: RowStatus = ""
    reason: str = ""
    sha256: str = ""
    items: list[ItemResult] = field(default_factory=list)  # one per graded item
    total: float = 0.0
    max: float = 0.0
    free_text: list[dict[str, str]] = field(default_factory=list)  # {"prompt", "answer"} per free-text question
    cell_errors: list[str] = field(default_factory=list)
    identified_by: str = ""
    review_notes: list[str] = field(default_factory=list)  # "solution-markers": the answer key's markers are in it
    seconds: float = 0.0
    traceback: str = ""  # a grader-error's, for the instructor's report

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        """A row from the resume state (a field it does not know is left out; one it lacks gets its default)."""
        values = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "items"}
        items = [
            ItemResult(**{k: v for k, v in item.items() if k in ItemResult.__dataclass_fields__})
            for item in data.get("items") or []
            if isinstance(item, dict) and isinstance(item.get("column"), str)
        ]
        return cls(**{"path": "", "learner": "", **values}, items=items)


def grade_submission(task: Task) -> Result:
    """Grade the submission described by `task` (see course_utils.grading.cli): its gradebook row."""
    start = time.perf_counter()
    path = Path(task.path)
    result = Result(task.display, task.learner, task.seed, task.config, sha256=task.sha256)
    with i18n.using(task.lang):  # the verdicts, reasons and the kernel in the grader's --lang
        try:
            _grade_into(result, path, task)
        except Exception as exc:  # the grader's own failure: a row that blames no one, and the traceback
            mark_grader_error(result, exc)
    result.seconds = round(time.perf_counter() - start, 2)
    return result


def mark_grader_error(result: Result, exc: BaseException, step: str = N_("grading it")) -> None:
    """Turn `result` into a grader-error row: no points, no verdicts, and the traceback for the report.
    `step` (an N_() message) says what the grader was doing, in the grading language."""
    fields: dict[str, object] = {}
    if isinstance(exc, GraderError):
        step, fields, exc = exc.step, exc.fields, exc.cause
    result.update(
        status=GRADER_ERROR,
        reason=_("not graded: the grader failed while {step} ({error})").format(
            step=_(step).format(**fields), error=f"{type(exc).__name__}: {str(exc)[:160]}"
        ),
        total=0.0,
        traceback="".join(traceback.format_exception(exc))[-20_000:],
    )
    for item in result.items:  # verdicts reached before the failure are not given either
        item.update(earned=0.0, status="not-graded", text="")


def _grade_into(result: Result, path: Path, task: Task) -> None:
    """Fill in `result` for the submission at `path`: read it, tell which exercise it is, run it in a kernel,
    judge each graded item and sum up. A submission that cannot be graded (unreadable, not a notebook, not an
    exercise this run grades) keeps its status and reason, and no kernel runs."""
    nb = _read_submission(result, path)
    if nb is None:
        return
    items = _exercise_items(result, nb, path, task)
    if items is None:
        return
    _list_items(result, nb, items, task.solutions)
    with GraderStep(N_("scanning the notebook for forbidden calls")):
        static = _forbidden_in_source(nb, items)
    run = _run_submission(nb, path, items, task)
    result.cell_errors = run.cell_errors[:20]
    _judge_items(result, run, items, static, task.seed)
    result.total = float(sum(e.earned for e in result.items))
    if run.stop:
        result.update(status=run.stop.status, reason=run.stop.reason)
    else:
        late = run.timeouts + list(run.timed_out.values())
        result.update(status="timeout" if late else "graded", reason=_finished_reason(result, run, late))


def _read_submission(result: Result, path: Path) -> NotebookNode | None:
    """The submitted notebook, its sha256 in `result`; None, with the row marked "invalid-notebook", when the
    file cannot be read or is not a notebook the grader accepts (parse_notebook)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        result.update(status="invalid-notebook", reason=_("cannot read the file: {error}").format(error=exc.strerror))
        return None
    result.sha256 = hashlib.sha256(raw).hexdigest()
    try:
        return parse_notebook(raw)
    except InvalidNotebook as exc:
        result.update(status="invalid-notebook", reason=str(exc))
        return None


def _exercise_items(result: Result, nb: NotebookNode, path: Path, task: Task) -> list[GradedItem] | None:
    """The graded items of the exercise the notebook is (noted in `result`: its exercise and how it was told);
    None, with the row marked "wrong-exercise", when it is none of the course's exercises or not the one this
    run grades (`task.exercise`)."""
    exercise, result.identified_by = identify_exercise(nb, path, task.known_exercises)
    if exercise is None:
        result.update(
            status="wrong-exercise",
            reason=_("cannot tell which exercise this is (no course metadata, and the file name names none)"),
        )
        return None
    if not EXERCISE_ID.fullmatch(exercise):
        result.update(
            status="wrong-exercise",
            reason=_("the notebook's metadata names no exercise of this course ({name})").format(
                name=repr(exercise[:40])
            ),
        )
        return None
    result.exercise = exercise
    wanted = task.exercise
    if wanted and exercise != wanted:
        result.update(
            status="wrong-exercise",
            reason=_("this is {exercise}; this run grades {wanted}").format(exercise=exercise, wanted=wanted),
        )
        return None
    items = load_registry(exercise)
    if items is None:
        result.update(
            status="wrong-exercise",
            reason=_("no graded checks are registered for {exercise}").format(exercise=repr(exercise)),
        )
    return items


def _list_items(result: Result, nb: NotebookNode, items: list[GradedItem], solutions: Solutions) -> None:
    """What the row holds before any code runs: one not-graded ItemResult per graded item, the points there
    are to earn, the free-text answers, and a review note when the learner started from the answer key."""
    exercise = result.exercise
    result.max = float(sum(graded.points for _, graded, _ in items))
    result.items = [
        ItemResult(column_name(exercise, g.check), g.check, g.function, float(g.points)) for _, g, _ in items
    ]
    result.free_text = free_text_answers(nb, exercise, solutions)
    if _has_solution_markers(nb):  # the generator strips them: the learner started from the answer key
        result.review_notes = ["solution-markers"]


def _run_submission(nb: NotebookNode, path: Path, items: list[GradedItem], task: Task) -> KernelRun:
    """Run the notebook, then its graded calls, in a kernel of its own (in the sandbox when `task.sandbox`),
    on a private copy of the submission in a temporary folder that is removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="course-grade-"))
    try:
        workdir, iodir = root / "work", root / "io"
        iodir.mkdir()
        _copy_submission(path, workdir, task.copy_folder)
        limits = {"timeout": task.timeout, "cell_timeout": task.cell_timeout}
        sandbox = Sandbox(root, hidden=task.hidden) if task.sandbox else None
        return _in_thread(_run_in_kernel(nb, workdir, iodir, items, task.seed, limits, sandbox))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _judge_items(
    result: Result, run: KernelRun, items: list[GradedItem], static: dict[int, list[str]], seed: int
) -> None:
    """Each item's verdict and points: judged from the kernel's answer (`static`: the forbidden calls found in
    the notebook's source), or an error or not-graded verdict for an item the kernel gave no answer to."""
    for number, (kind, graded, check) in enumerate(items):
        entry = result.items[number]
        answer = run.answers.get(number)
        if number in run.timed_out or answer is None:
            _mark_unanswered(entry, number, run)
            continue
        with GraderStep(N_("judging check {check}"), check=repr(graded.check)):
            report = judge(kind, graded, check, answer, seed, forbidden=static.get(number, []))
        entry.update(status=report.status, earned=float(graded.points) if report.passed else 0.0, text=report.text())
        entry.update(forbidden=list(report.forbidden), review=list(report.review), unlisted=list(report.unlisted))


def _mark_unanswered(entry: ItemResult, number: int, run: KernelRun) -> None:
    """The verdict on item `number`, which has no answer to judge: an error when its own call ran past its limit
    or was running when the kernel stopped; "not graded" when the kernel never reached it."""
    if number in run.timed_out:
        why = run.timed_out[number]
        entry.update(status="error", text=_("❌ {column}: {why}.").format(column=entry.column, why=why))
        return
    why = run.stop.reason if run.stop else _("not reached")
    if number == run.running:
        entry.update(status="error", text=_("❌ {column}: {why}.").format(column=entry.column, why=why))
    else:
        text = _("⏹ {column}: not graded ({why}).").format(column=entry.column, why=why)
        entry.update(status="not-graded", text=text)


def _finished_reason(result: Result, run: KernelRun, late: list[str]) -> str:
    """The reason column of a row whose kernel ran to the end: what was interrupted (`late`), where points were
    lost, the forbidden calls, the cells that raised, output that was cut; or that all checks passed."""
    failing = [e.column for e in result.items if e.earned < e.points]
    notes = [_("{what} (interrupted; the rest was graded)").format(what=why) for why in late]
    if failing:
        notes.append(_("lost points on {checks}").format(checks=", ".join(failing)))
    calls = [f"{e.column} ({', '.join(e.forbidden)})" for e in result.items if e.forbidden]
    if calls:
        notes.append(_("forbidden calls in {checks}").format(checks=", ".join(calls)))
    if run.cell_errors:
        notes.append(_("{n} cell(s) raised errors").format(n=len(run.cell_errors)))
    if run.printed > 10 * STREAM_LIMIT:
        notes.append(_("printed {n:,} characters (truncated)").format(n=run.printed))
    return "; ".join(notes) or _("all checks passed")


def _has_solution_markers(nb: NotebookNode) -> bool:
    """True when a cell holds the answer key's `### BEGIN SOLUTION` / `### END SOLUTION` lines, which the
    exercise generator removes from every notebook handed out (course_utils.exercises)."""
    from ..exercises import BEGIN, END

    return any(line.strip() in (BEGIN, END) for cell in nb.cells for line in str(cell.get("source", "")).splitlines())


def _copy_submission(path: Path, workdir: Path, whole_folder: bool) -> None:
    """A private working copy: the learner's folder (if it is theirs alone) or just the notebook.
    Links are not followed or copied, so nothing the notebook writes can reach a submitted file."""
    workdir.mkdir()
    if whole_folder:
        budget = MAX_FOLDER_COPY_BYTES
        for source in sorted(path.parent.rglob("*")):
            rel = source.relative_to(path.parent)
            if any(part.startswith(".") for part in rel.parts) or source.is_symlink() or not source.is_file():
                continue
            size = source.stat().st_size
            if size > budget:
                continue
            budget -= size
            target = workdir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    else:
        shutil.copyfile(path, workdir / path.name)
