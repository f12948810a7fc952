"""The instructors' batch grader: submitted exercise notebooks in, a gradebook and feedback out.

    python -m course_utils.grade SUBMISSIONS... [--out grades.csv] [--feedback DIR] [--jobs N]
                                 [--timeout SECONDS] [--cell-timeout SECONDS] [--seed N]
                                 [--exercise ID] [--force] [--lang {en,ja}]

SUBMISSIONS are notebook files or folders (searched recursively for *.ipynb; hidden folders such as
.ipynb_checkpoints are skipped). The learner id is the first folder below a folder you name
(submissions/alice/ex01.ipynb -> alice), otherwise the file name (submissions/alice.ipynb -> alice;
a file named on the command line whose name starts with the exercise id takes its folder's name).
The exercise comes from the notebook's metadata (written by the exercise generator); the file name is
only a fallback, because learners rename files.

Each notebook runs in a fresh kernel, in a temporary copy of its folder, with a time limit per cell
(--cell-timeout) and for the whole notebook (--timeout). Then the grader calls the learner's functions
in that kernel on fresh inputs from its own seed and compares the results here, in its own process
(course_utils.grading.run explains how, and why the kernel cannot fake a verdict).

Outputs: a CSV with one row per submission (learner, exercise, status, total, max, points per check,
reason), one Markdown feedback file per learner, a file collecting the free-text answers, and a
summary on the terminal. The state file next to the CSV (grades.state.jsonl) makes a run resumable:
unchanged, already graded submissions are skipped unless --force, and it keeps the run's seed, so a
re-run gives identical grades.

Language: --lang ja writes the feedback files, the verdicts and reasons in the CSV, the summary (status words
included) and --help in Japanese (course_utils/i18n.py; the default is English), and starts the notebooks' kernels
with COURSE_LANG=ja. The CSV's status column keeps its code (graded, timeout, ...) in every language. The notebooks
themselves may be from either edition: the grader calls the same functions, and reads each one's free-text answers
against its own edition's notebook (EDITIONS).

Exit status: 0 when every submission got a row (whatever its status); 3 when the grader itself failed on
at least one (status grader-error: no grade, not kept in the state file, the tracebacks in
grades.grader-errors.log next to the CSV, and a message saying what to report); 2 for a usage error;
130 when interrupted.

Submissions are code. On Linux each kernel runs in bubblewrap's sandbox (course_utils/grading/sandbox.py): the
course read-only, no network, its own processes only, none of the grader's files or the other submissions in
sight. Where bubblewrap cannot run the grader refuses unless --no-sandbox (docs/grading.md: what is then at risk,
and a container per submission instead). A submission that kills its worker process costs its own row only.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any, NoReturn

from .. import i18n
from ..display import pad, text_width
from ..i18n import N_, _
from . import sandbox
from .run import (
    GRADER_ERROR,
    GRADER_VERSION,
    STATUSES,
    Result,
    RowStatus,
    Task,
    file_sha256,
    grade_submission,
    mark_grader_error,
    worker_init,
)

__all__ = ["main", "discover", "Submission"]

ROOT = Path(__file__).resolve().parents[2]  # the course's repository
SOLUTIONS = ROOT / "solutions"
# the answer keys of every edition of the course (ja/solutions: the Japanese one): a submission's free-text answers are
# read against its own edition's notebook (course_utils.grading.run.free_text_answers)
EDITIONS = (SOLUTIONS, *(ROOT / lang / "solutions" for lang in i18n.LANGUAGES if lang != "en"))
EXIT_GRADER_ERROR = 3  # the grader failed on a submission (see report_grader_errors)
REPORT_TO = "the issue tracker of the course's repository (the one this copy of the course came from)"


# ------------------------------------------------------------------------------------------------------
# finding the submissions
# ------------------------------------------------------------------------------------------------------
class Submission:
    """One file to grade, or (path=None) a learner folder that holds no notebook at all."""

    def __init__(self, path: Path | None, learner: str, display: str, copy_folder: bool) -> None:
        self.path, self.learner, self.display, self.copy_folder = path, learner, display, copy_folder


def _visible(rel: Path) -> bool:
    return not any(part.startswith(".") or part == "__pycache__" for part in rel.parts)


def discover(arguments: list[str], skip: Iterable[str | Path] = ()) -> list[Submission]:
    """The submissions named by the command line (files as given, folders searched recursively)."""
    found: list[Submission] = []
    seen: set[Path | str] = set()
    skipped = {Path(s).resolve() for s in skip}
    for argument in arguments:
        base = Path(argument)
        if base.is_dir():
            notebooks = sorted(
                p for p in base.rglob("*.ipynb") if _visible(p.relative_to(base)) and p.is_file() and not p.is_symlink()
            )
            holders: set[str] = set()
            for nb in notebooks:
                rel = nb.relative_to(base)
                nested = len(rel.parts) > 1
                learner = rel.parts[0] if nested else nb.stem
                holders.add(rel.parts[0])
                # a notebook right in its learner's folder runs with that folder's files (a copy of them)
                found.append(Submission(nb, learner, str(nb), copy_folder=len(rel.parts) == 2))
            for folder in sorted(p for p in base.iterdir() if p.is_dir() and _visible(p.relative_to(base))):
                files = [f for f in folder.rglob("*") if f.is_file() and _visible(f.relative_to(folder))]
                if folder.name not in holders and files:
                    names = ", ".join(sorted(f.name for f in files)[:3])
                    found.append(Submission(None, folder.name, f"{folder}/ (no .ipynb: {names})", False))
        elif base.exists():
            learner = base.parent.name if re.match(r"ex\d\d", base.stem, re.I) and base.parent.name else base.stem
            found.append(Submission(base, learner or base.stem, str(base), copy_folder=False))
        else:
            print(_("warning: {path} does not exist").format(path=argument), file=sys.stderr)
    unique = []
    for sub in found:
        key = sub.path.resolve() if sub.path else sub.display
        if key not in seen and key not in skipped:
            seen.add(key)
            unique.append(sub)
    return unique


def known_exercises() -> list[str]:
    return sorted(p.stem for p in SOLUTIONS.glob("ex*.ipynb"))


# ------------------------------------------------------------------------------------------------------
# the resume state: one JSON line per graded submission, appended as soon as it is graded
# ------------------------------------------------------------------------------------------------------
class State:
    def __init__(self, path: Path):
        self.path, self.seed, self.entries = path, None, {}
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line cut short by an interruption
                if not isinstance(entry, dict):
                    continue
                if "seed" in entry and "path" not in entry:
                    self.seed = entry["seed"]
                elif isinstance(entry.get("path"), str):
                    try:
                        self.entries[entry["path"]] = Result.from_json(entry)
                    except (TypeError, ValueError):
                        continue  # an entry this grader cannot read: the submission is graded again

    def set_seed(self, seed: int) -> None:
        if seed != self.seed:
            self.seed = seed
            self._append({"seed": seed, "grader": GRADER_VERSION})

    def fresh(self, display: str, sha256: str, config: dict[str, Any]) -> Result | None:
        entry = self.entries.get(display)
        if (
            entry
            and entry.sha256 == sha256
            and entry.config == config
            and entry.status in STATUSES
            and _registry_unchanged(entry)
        ):
            return entry
        return None

    def record(self, result: Result) -> None:
        self.entries[result.path] = result
        self._append(result.to_json())

    def forget(self, path: str) -> None:
        """No grade is kept for `path` any more (its feedback could not be written): the next run grades it."""
        if path in self.entries:
            self.entries[path] = Result(path, "", status=GRADER_ERROR)
            self._append({"path": path, "status": GRADER_ERROR})

    def _append(self, entry: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())


def _registry_unchanged(entry: Result) -> bool:
    """A stored grade is reused only while its exercise's checks and points are the same."""
    if not entry.items:
        return True
    from .run import column_name, load_registry

    try:
        items = load_registry(entry.exercise)
    except Exception:
        return False
    if items is None:
        return False
    now = [(column_name(entry.exercise, g.check), float(g.points)) for _, g, _ in items]
    return now == [(i.column, i.points) for i in entry.items]


# ------------------------------------------------------------------------------------------------------
# outputs
# ------------------------------------------------------------------------------------------------------
def _columns(results: list[Result]) -> list[str]:
    columns = []
    for result in sorted(results, key=lambda r: r.exercise):
        for item in result.items:
            if item.column not in columns:
                columns.append(item.column)
    return columns


def _points(value: float) -> str:
    return f"{value:g}"


# What people read for a status (the feedback, the summary): the CSV's `status` column keeps the code itself, the
# same in every language (docs/grading.md), for spreadsheets and scripts that filter on it.
STATUS_WORDS = {
    "graded": N_("graded"),
    "timeout": N_("timeout"),
    "kernel-died": N_("kernel-died"),
    "invalid-notebook": N_("invalid-notebook"),
    "wrong-exercise": N_("wrong-exercise"),
    GRADER_ERROR: N_("grader-error"),
    # an item's, shown when its verdict has no text
    "passed": N_("passed"),
    "failed": N_("failed"),
    "error": N_("error"),
    "not-implemented": N_("not-implemented"),
    "not-graded": N_("not-graded"),
}


def status_word(status: str) -> str:
    """A row's or an item's status in words, in the current language (an unknown code is shown as it is)."""
    return _(STATUS_WORDS[status]) if status in STATUS_WORDS else status


def _fit(text: str, width: int, right: bool = False) -> str:
    """`text` cut and padded to `width` terminal columns (for the summary's table, whose words may be Japanese)."""
    while text_width(text) > width:
        text = text[:-1]
    return pad(text, width, ">" if right else "<")


def _cell(text: str) -> str:
    """A CSV text cell that a spreadsheet will not run as a formula (learner ids and ids come from submissions)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_csv(results: list[Result], path: Path) -> None:
    columns = _columns(results)
    header = ["learner", "exercise", "status", "total", "max", *columns, "reason", "review", "submission", "sha256"]
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for r in results:
            no_grade = r.status == GRADER_ERROR  # empty cells, not zeros: nothing was graded
            earned = {} if no_grade else {i.column: _points(i.earned) for i in r.items}
            writer.writerow(
                [
                    _cell(r.learner),
                    _cell(r.exercise),
                    r.status,
                    "" if no_grade else _points(r.total),
                    _points(r.max),
                    *[earned.get(c, "") for c in columns],
                    _cell(r.reason),
                    _cell(review_text(r)),
                    _cell(r.path),
                    r.sha256[:12],
                ]
            )
    os.replace(tmp, path)


def review_text(result: Result) -> str:
    """What the instructor should look at in this row: the items whose calls the trace could not vouch for."""
    from ..checks.core import review_reasons

    notes = []
    if "solution-markers" in result.review_notes:
        notes.append(_("the notebook holds the answer key's ### BEGIN SOLUTION markers (copied from solutions/?)"))
    for item in result.items:
        reasons = review_reasons(item.review, item.unlisted)
        if reasons:
            notes.append(f"{item.column}: " + ", ".join(reasons))
    return "; ".join(notes)


def _safe_name(learner: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", learner).strip("._") or "learner"


def feedback_markdown(learner: str, results: list[Result]) -> str:
    """One learner's feedback file, in the current language (course_utils.i18n; the grader's --lang)."""
    lines = [_("# Feedback for {learner}").format(learner=learner), ""]
    for r in results:
        title = r.exercise or _("unknown exercise")
        submission = _("- Submission: `{path}`").format(path=r.path)
        if r.status == GRADER_ERROR:
            lines += [
                _("## {title}: not graded yet").format(title=title),
                "",
                submission,
                _(
                    "- Status: **not graded yet**. The grader could not finish grading this submission because of a "
                    "problem in the grader itself, not in your notebook. Your instructor has been told and will "
                    "grade it again once the problem is fixed; nothing has been recorded against you."
                ),
                "",
            ]
            continue
        lines += [
            _("## {title}: {total} / {max} points").format(title=title, total=_points(r.total), max=_points(r.max)),
            "",
            submission,
            _("- Status: **{status}**: {reason}").format(status=status_word(r.status), reason=r.reason),
            "",
        ]
        if r.items:
            lines += [_("| check | points | verdict |"), "|---|---|---|"]
            for item in r.items:
                verdict = item.text.splitlines()[0] if item.text else status_word(item.status)
                lines.append(
                    f"| {item.column} | {_points(item.earned)} / {_points(item.points)} | {verdict.replace('|', '/')} |"
                )
            lines.append("")
            for item in r.items:
                if item.earned < item.points and item.text:
                    lines += [f"### {item.column}", "", "```text", item.text, "```", ""]
        if r.cell_errors:
            lines += [_("### Cells that raised an error when the grader ran the notebook"), ""]
            lines += [f"- {e}" for e in r.cell_errors] + [""]
        if r.free_text:
            lines += [_("### Your written answers (read by your instructor)"), ""]
            for answer in r.free_text:
                lines += (
                    [f"**{answer['prompt']}**", ""] + [f"> {line}" for line in answer["answer"].splitlines()] + [""]
                )
    return "\n".join(lines).rstrip() + "\n"


def write_feedback(results: list[Result], folder: Path) -> list[Result]:
    """One Markdown file per learner, and the free-text answers by question. A learner whose feedback
    cannot be written gets grader-error rows instead (returned, so that the state forgets their grades)."""
    folder.mkdir(parents=True, exist_ok=True)
    failed = []
    by_learner: dict[str, list] = {}
    for r in results:
        by_learner.setdefault(r.learner, []).append(r)
    names: dict[str, str] = {}
    for learner, rows in sorted(by_learner.items()):
        name = _safe_name(learner)
        while name in names.values():
            name += "_"
        names[learner] = name
        try:
            (folder / f"{name}.md").write_text(feedback_markdown(learner, rows), encoding="utf-8")
        except Exception as exc:  # the grader's failure: nobody is graded without their feedback
            for r in rows:
                mark_grader_error(r, exc, N_("writing the learner's feedback file"))
            failed += rows
            try:
                (folder / f"{name}.md").write_text(feedback_markdown(learner, rows), encoding="utf-8")
            except Exception:
                pass
    lines = [_("# Free-text answers, by question"), ""]
    questions: dict[tuple, list] = {}
    for r in results:
        for answer in r.free_text:
            questions.setdefault((r.exercise, answer["prompt"]), []).append((r.learner, answer["answer"]))
    for (exercise, prompt), answers in sorted(questions.items()):
        lines += [_("## {exercise}: {prompt}").format(exercise=exercise, prompt=prompt), ""]
        for learner, text in answers:
            lines += [f"**{learner}**", ""] + [f"> {line}" for line in text.splitlines()] + [""]
    (folder / "_free_text_answers.md").write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return failed


def _listing(parts: Iterable[str]) -> str:
    """Words joined into a list, with the current language's separator ("a, b" in English)."""
    text = ""
    for part in parts:
        text = _("{words}, {word}").format(words=text, word=part) if text else part
    return text


def summary(results: list[Result], seconds: float, skipped: int) -> str:
    """The table printed at the end of a run, one line per submission, and a count per status."""
    head = {"learner": _("learner"), "exercise": _("exercise"), "points": _("points"), "status": _("status")}
    words = {r.status: status_word(r.status) for r in results}
    width = min(max([7, text_width(head["learner"])] + [text_width(r.learner) for r in results]), 24)
    ex_width = min(max([8, text_width(head["exercise"])] + [text_width(r.exercise) for r in results]), 20)
    st_width = max([16, text_width(head["status"])] + [text_width(w) for w in words.values()])
    lines = [
        f"{_fit(head['learner'], width)}  {_fit(head['exercise'], ex_width)}  {_fit(head['points'], 9, right=True)}  "
        f"{_fit(head['status'], st_width)}  " + _("reason"),
        f"{'-' * width}  {'-' * ex_width}  {'-' * 9}  {'-' * st_width}  {'-' * 30}",
    ]
    for r in results:
        points = f"{'-' if r.status == GRADER_ERROR else _points(r.total)}/{_points(r.max)}"
        lines.append(
            f"{_fit(r.learner, width)}  {_fit(r.exercise, ex_width)}  {_fit(points, 9, right=True)}  "
            f"{_fit(words[r.status], st_width)}  {r.reason[:70]}"
        )
    counts: dict[RowStatus, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append("")
    lines.append(
        _("{n} submissions: {counts} ({skipped} unchanged, reused from the state file) in {seconds:.0f} s").format(
            n=len(results),
            counts=_listing(_("{count} {status}").format(count=n, status=words[s]) for s, n in sorted(counts.items())),
            skipped=skipped,
            seconds=seconds,
        )
    )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------------------
class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, with its own words ("usage:") in the current language, and lines of Japanese (no spaces
    between words, two columns a character) wrapped at the terminal's width."""

    def add_usage(
        self,
        usage: str | None,
        actions: Iterable[argparse.Action],
        groups: Iterable[argparse._MutuallyExclusiveGroup],
        prefix: str | None = None,
    ) -> None:
        return super().add_usage(usage, actions, groups, _("usage: ") if prefix is None else prefix)

    def _split_lines(self, text: str, width: int) -> list[str]:
        if all(text_width(c) == 1 for c in text):
            return super()._split_lines(text, width)
        # an ASCII word, a space, or one other character (a closing mark stays with what it closes)
        tokens = re.findall(r"[!-~]+[、。）」：]?| |[^ !-~][、。）」：]?", " ".join(text.split()))
        lines: list[str] = []
        line = ""
        for token in tokens:
            if line and text_width(line + token) > width:
                lines.append(line.rstrip())
                line = token.lstrip()
            else:
                line += token
        return lines + [line.rstrip()] if line.strip() else lines


class _ArgumentParser(argparse.ArgumentParser):
    """Speaks the current language where argparse lets it: the usage's prefix, the sections' titles, an error's
    frame (argparse's own words inside an error stay English)."""

    def format_help(self) -> str:
        text = super().format_help()
        for group in self._action_groups:
            if group.title:
                text = text.replace(f"\n{group.title}:\n", "\n" + _("{title}:").format(title=group.title) + "\n")
        return text

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, _("{prog}: error: {message}").format(prog=self.prog, message=message) + "\n")


def _parser() -> argparse.ArgumentParser:
    """The command line, its help in the current language (main() sets it from --lang before parsing)."""
    p = _ArgumentParser(
        prog="python -m course_utils.grade",
        description=_("The instructors' batch grader: submitted exercise notebooks in, a gradebook and feedback out."),
        formatter_class=_HelpFormatter,
        add_help=False,
    )
    positional = p.add_argument_group(_("positional arguments"))
    options = p.add_argument_group(_("options"))
    positional.add_argument("submissions", nargs="+", help=_("notebook files or folders of them"))
    options.add_argument("-h", "--help", action="help", help=_("show this help message and exit"))
    options.add_argument("--out", default="grades.csv", help=_("the gradebook CSV (default: grades.csv)"))
    options.add_argument(
        "--feedback", default=None, help=_("folder for the feedback files (default: feedback/ next to --out)")
    )
    options.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1), help=_("notebooks graded at once"))
    options.add_argument("--timeout", type=int, default=300, help=_("seconds for a whole notebook (default 300)"))
    options.add_argument(
        "--cell-timeout", type=int, default=60, help=_("seconds for one cell or one graded function call (default 60)")
    )
    options.add_argument(
        "--seed",
        type=int,
        default=None,
        help=_("seed of the grader's inputs (default: the state file's, else a new random one)"),
    )
    options.add_argument("--exercise", default=None, help=_("grade only this exercise id; others get wrong-exercise"))
    options.add_argument(
        "--force", action="store_true", help=_("grade again even unchanged, already graded submissions")
    )
    options.add_argument(
        "--no-sandbox",
        action="store_true",
        help=_(
            "run the kernels without bubblewrap's sandbox, as yourself: only for submissions you trust, where "
            "bubblewrap cannot run (macOS); docs/grading.md says what is then at risk"
        ),
    )
    options.add_argument(
        "--lang",
        choices=i18n.LANGUAGES,
        default="en",
        help=_(
            "language of the feedback files, the verdicts and reasons, the summary and this help; the kernels get "
            "COURSE_LANG set to it (default en)"
        ),
    )
    return p


def _language_asked(argv: Sequence[str]) -> str:
    """The --lang of a command line, read before the rest so that --help and usage errors speak it too."""
    first = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    first.add_argument("--lang", default="en")
    try:
        lang = first.parse_known_args(argv)[0].lang
    except argparse.ArgumentError:  # `--lang` with no value: the real parser says so
        return "en"
    return lang if lang in i18n.LANGUAGES else "en"


def main(argv: Sequence[str] | None = None) -> int:
    with i18n.using(_language_asked(sys.argv[1:] if argv is None else argv)):
        args = _parser().parse_args(argv)
    with i18n.using(args.lang):
        return _main(args, argv)


def _main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    if args.seed == 0:
        print(_("error: seed 0 is the one learners see in their notebooks; choose another"), file=sys.stderr)
        return 2
    out = Path(args.out)
    feedback = Path(args.feedback) if args.feedback else out.parent / "feedback"
    if not args.no_sandbox:
        ok, why = sandbox.available()
        if not ok:
            print(
                f"error: the grader runs each submission in a sandbox, and cannot here: {why}.\n"
                "Submissions are code: without the sandbox they run as you, and can read your files, rewrite the\n"
                "gradebook or leave processes behind. For submissions you trust, pass --no-sandbox; otherwise grade\n"
                "in a container, one per submission (docs/grading.md).",
                file=sys.stderr,
            )
            return 2
    state = State(out.with_name(out.stem + ".state.jsonl"))
    submissions = discover(args.submissions, skip=(out,))
    if not submissions:
        print(_("error: no notebooks found in {paths}").format(paths=" ".join(args.submissions)), file=sys.stderr)
        return 2
    seed = (
        args.seed
        if args.seed is not None
        else state.seed
        if isinstance(state.seed, int)
        else secrets.randbelow(2**31 - 2) + 1
    )
    state.set_seed(seed)
    config = {
        "seed": seed,
        "timeout": args.timeout,
        "cell_timeout": args.cell_timeout,
        "exercise": args.exercise,
        "grader": GRADER_VERSION,
        "lang": args.lang,  # the verdicts' language: a stored grade in another language is graded again
    }
    start = time.perf_counter()
    results, todo, skipped = {}, [], 0
    # what a sandboxed kernel must not see: the grader's outputs and state, and the other submissions
    log = out.with_name(out.stem + ".grader-errors.log")
    hidden = [str(p) for p in (out.parent, out, state.path, log, feedback, *map(Path, args.submissions))]
    for sub in submissions:
        if sub.path is None:
            results[sub.display] = _folder_row(sub, seed, config)
            continue
        try:
            sha = file_sha256(sub.path)
        except OSError:
            sha = ""
        reuse = None if args.force else state.fresh(sub.display, sha, config)
        if reuse:
            results[sub.display] = reuse
            skipped += 1
        else:
            todo.append(
                Task(
                    path=str(sub.path),
                    display=sub.display,
                    learner=sub.learner,
                    sha256=sha,
                    copy_folder=sub.copy_folder,
                    seed=seed,
                    config=config,
                    exercise=args.exercise,
                    timeout=args.timeout,
                    cell_timeout=args.cell_timeout,
                    known_exercises=tuple(known_exercises()),
                    solutions=tuple(str(folder) for folder in EDITIONS),
                    lang=args.lang,
                    sandbox=not args.no_sandbox,
                    hidden=tuple(hidden),
                )
            )
    interrupted = _grade_all(todo, max(1, args.jobs), state, results)
    rows = sorted(results.values(), key=lambda r: (r.learner, r.exercise, r.path))
    write_csv(rows, out)
    unwritten = write_feedback(rows, feedback)
    if unwritten:  # those rows are grader errors now
        for r in unwritten:
            state.forget(r.path)
        write_csv(rows, out)
    print(summary(rows, time.perf_counter() - start, skipped))
    print(_("seed {seed}; gradebook {out}; feedback in {feedback}/").format(seed=seed, out=out, feedback=feedback))
    failed = report_grader_errors(rows, log, argv, seed)
    if interrupted:
        print(
            _("interrupted: {done} of {total} graded; run the same command again to resume").format(
                done=len(todo) - interrupted, total=len(todo)
            ),
            file=sys.stderr,
        )
        return 130
    return EXIT_GRADER_ERROR if failed else 0


# ------------------------------------------------------------------------------------------------------
# the grader's own failures: a log for the report, and a message saying what to report
# ------------------------------------------------------------------------------------------------------
def _versions() -> list[str]:
    """The course's version (package, git commit) and the software the grader ran on, for a bug report."""
    from importlib import metadata

    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except Exception:
            return "not installed"

    def git(*args: str) -> str:
        try:
            proc = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10)
        except Exception:
            return ""
        return proc.stdout.strip() if proc.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    if commit:
        changed = git("status", "--porcelain", "--untracked-files=no")
        commit = f"commit {commit[:12]}" + (" with local changes" if changed else "")
    else:
        commit = "no git commit (not a git checkout)"
    return [
        f"course: course-utils {version('course-utils')}, {commit}, grader version {GRADER_VERSION}",
        f"Python {platform.python_version()}, torch {version('torch')}, nbclient {version('nbclient')}, "
        f"ipykernel {version('ipykernel')}, nbformat {version('nbformat')}, on {platform.platform()}",
    ]


def report_grader_errors(rows: list[Result], log: Path, argv: Sequence[str] | None, seed: int) -> int:
    """Write the grader-error rows' tracebacks to `log` and tell the instructor what to report (stderr);
    returns how many there were. A run without any removes the log of an earlier run."""
    failed = [r for r in rows if r.status == GRADER_ERROR]
    if not failed:
        log.unlink(missing_ok=True)
        return 0
    versions = _versions()
    command = " ".join(["python -m course_utils.grade", *(sys.argv[1:] if argv is None else argv)])
    lines = [
        f"The course's batch grader failed on {len(failed)} of {len(rows)} submissions.",
        f"Please attach this file to a report on {REPORT_TO}.",
        "It names the submissions' paths and learner ids: replace them if they must stay private.",
        "",
        f"run: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}, seed {seed}",
        f"command: {command}",
        *versions,
    ]
    for number, r in enumerate(failed, 1):
        lines += [
            "",
            f"== {number}. {r.path} (learner {r.learner}, exercise {r.exercise or '?'}, sha256 {r.sha256[:12] or '?'})",
            r.reason,
            "",
            r.traceback or "(no traceback)",
        ]
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    print(
        "\n".join(
            [
                "",
                f"GRADER ERROR: the grader itself failed on {len(failed)} of {len(rows)} submissions "
                f"(status {GRADER_ERROR}).",
                "This is a problem of the course's grader, not of the learners' notebooks: those submissions got "
                "no grade (empty cells in the CSV), their feedback says they are not graded yet, and they are "
                "not kept in the state file, so the same command grades them once the problem is fixed.",
                f"Please report it on {REPORT_TO}, with:",
                f"  - the log {log} (the tracebacks; it names learners: replace them if they must stay private)",
                *(f"  - {line}" for line in versions),
                f"  - the command: {command}",
            ]
        ),
        file=sys.stderr,
    )
    return len(failed)


def _folder_row(sub: Submission, seed: int, config: dict) -> Result:
    reason = _("the learner's folder holds no .ipynb notebook")
    return Result(sub.display, sub.learner, seed, config, status="invalid-notebook", reason=reason)


def _failed_row(task: Task, status: RowStatus, reason: str, exc: BaseException | None = None) -> Result:
    """A row for a submission that has no result of its own (its grading process died)."""
    row = Result(task.display, task.learner, task.seed, task.config, status=status, reason=reason, sha256=task.sha256)
    if exc is not None:
        row.traceback = "".join(traceback.format_exception(exc))[-20_000:]
    return row


def _grade_marked(task: Task, started: str) -> Result:
    """grade_submission, leaving a mark in the folder `started` while it runs: when a worker process dies, the
    marks left behind name the submissions that were being graded (one of them killed it)."""
    mark = Path(started) / hashlib.sha256(task.display.encode()).hexdigest()
    mark.write_text(task.display, encoding="utf-8")
    try:
        return grade_submission(task)
    finally:
        mark.unlink(missing_ok=True)


def _grade_all(todo: list[Task], jobs: int, state: State, results: dict[str, Result]) -> int:
    """Grade in `jobs` worker processes with a progress bar; returns how many were left when interrupted.

    One submission's failure costs one row. A submission that kills its worker process (a signal to the
    grader, outside the sandbox) breaks the process pool: the submissions that were being graded then are
    graded again, each alone in a pool of its own, and the queued ones in a new pool. One that breaks its pool
    alone gets a kernel-died row that says so; the others are graded as if nothing had happened."""
    if not todo:
        return 0
    from tqdm import tqdm

    pending = {t.display for t in todo}
    bar = tqdm(total=len(todo), desc=_("grading"), unit=_("notebook"), file=sys.stderr, dynamic_ncols=True)

    def done(result: Result) -> None:
        results[result.path] = result
        pending.discard(result.path)
        if result.status in STATUSES:
            state.record(result)
        bar.set_postfix_str(f"{result.learner[:16]}: {status_word(result.status)}", refresh=False)
        bar.update(1)

    started = Path(tempfile.mkdtemp(prefix="course-grade-running-"))
    queue: list[Task] = list(todo)
    suspects: list[Task] = []
    pool: ProcessPoolExecutor | None = None
    try:
        while queue or suspects:
            alone = not queue  # the suspects, one at a time
            batch = [suspects.pop(0)] if alone else queue
            queue = [] if not alone else queue
            pool = ProcessPoolExecutor(
                max_workers=1 if alone else min(jobs, len(batch)),
                mp_context=get_context("spawn"),
                initializer=worker_init,
            )
            broken = _grade_batch(pool, batch, started, done)
            pool.shutdown(wait=True, cancel_futures=True)
            pool = None
            running = _take_marks(started)
            for task, breakage in broken:
                if alone:  # it broke a pool of its own: this submission killed the grader's process
                    reason = _(
                        "the grader's process running this notebook was killed (a signal sent by the notebook, "
                        "or memory); the other submissions were graded without it"
                    )
                    done(_failed_row(task, "kernel-died", reason, breakage))
                elif task.display in running:
                    suspects.append(task)
                else:
                    queue.append(task)
    except KeyboardInterrupt:  # stop the workers (each kills its kernel); what was graded is in the state file
        if pool is not None:
            _stop_pool(pool)
        bar.close()
        return len(pending) or 1
    finally:
        shutil.rmtree(started, ignore_errors=True)
    bar.close()
    return 0


def _grade_batch(
    pool: ProcessPoolExecutor, batch: list[Task], started: Path, done: Callable[[Result], None]
) -> list[tuple[Task, BrokenProcessPool]]:
    """Grade `batch` in `pool`, handing each row to `done` as it comes; returns the submissions that were left
    without a row because the pool broke (a worker process died), each with the error, for the caller to sort out.
    Any other failure of the grader's own, outside grade_submission, still costs only its submission's row."""
    futures = {pool.submit(_grade_marked, task, str(started)): task for task in batch}
    broken: list[tuple[Task, BrokenProcessPool]] = []
    for future in as_completed(futures):
        task = futures[future]
        try:
            done(future.result())
        except BrokenProcessPool as exc:
            broken.append((task, exc))
        except Exception as exc:  # the grader's own failure outside grade_submission: still a row
            reason = _("not graded: the grading process failed ({error})").format(
                error=f"{type(exc).__name__}: {str(exc)[:160]}"
            )
            done(_failed_row(task, GRADER_ERROR, reason, exc))
    return broken


def _take_marks(started: Path) -> set[str]:
    """The submissions whose marks `_grade_marked` left in the folder `started` (they were being graded when their
    pool broke), the marks removed for the next pool."""
    running = {p.read_text(encoding="utf-8") for p in started.iterdir()}
    for p in started.iterdir():
        p.unlink()
    return running


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop a pool at once (on Ctrl+C): terminate its worker processes, each of which kills its kernel on the way
    out, cancel what is queued, and give each worker 5 s to finish."""
    workers = list(getattr(pool, "_processes", {}).values())
    for process in workers:
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.join(5)
