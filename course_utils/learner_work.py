"""Learners' work is never lost: course commands keep a copy before they overwrite it, and an exercise can start over.

Saving an exercise in JupyterLab changes a file that the course's own commands also write: `make exercises` and
`make execute` regenerate exercises/ from solutions/, and `make translations` regenerates the Japanese notebooks. So
every one of them writes through `keep_a_copy` first: when the file on disk holds cells that the new version does not
(a learner's code or answers) and git does not have that content committed, the file is copied to

    backups/<its path>-<date>-<time>.ipynb        e.g. backups/exercises/ex01_layernorm-20261202-061500.ipynb

and one line says where. (backups/ is git-ignored, and nbgitpuller leaves it alone.) Outputs alone are not work: a
re-executed notebook whose cells are unchanged is not copied.

To start an exercise over, with a copy of the current one kept the same way:

    make reset EX=ex01                      # exercises/ex01_layernorm.ipynb (COURSE_LANG=ja: ja/exercises/...)
    python -m course_utils.learner_work reset ex01 [--lang ja]

or, from a notebook cell, `from course_utils.learner_work import reset; reset("ex01")` (then reload the file).
The fresh exercise is made from the solution notebook the same way `make exercises` makes it, so it needs no git.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from nbformat import NotebookNode

from . import i18n, nbtools
from .i18n import _

__all__ = ["BACKUPS", "keep_a_copy", "reset", "exercise_path"]

ROOT = Path(__file__).resolve().parent.parent
BACKUPS = "backups"


def cells(nb: NotebookNode) -> list[tuple[str, str]]:
    """What a learner writes: each cell's type and source (outputs and metadata are not work)."""
    return [(c.cell_type, c.source) for c in nb.cells]


def committed(path: Path, root: Path) -> bool:
    """Whether git holds exactly this file's content (tracked and unmodified). False without git, to be safe."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", str(path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        tracked = subprocess.run(
            ["git", "-C", str(root), "ls-files", "--error-unmatch", "--", str(path)],
            capture_output=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and not done.stdout.strip() and tracked.returncode == 0


def top_of(path: Path, root: Path) -> Path:
    """The folder backups/ goes in: the course checkout holding `path` (ja/exercises' copies too), else `root`."""
    for top in (ROOT, root):
        try:
            path.resolve().relative_to(top.resolve())
            return top
        except ValueError:
            continue
    return root


def backup_path(path: Path, root: Path, now: datetime.datetime | None = None) -> Path:
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    top = top_of(path, root)
    try:
        relative = path.resolve().relative_to(top.resolve())
    except ValueError:  # a notebook outside both: beside the others, by its name
        relative = Path(path.name)
    target = top / BACKUPS / relative.parent / f"{relative.stem}-{stamp}{relative.suffix}"
    n = 1
    while target.exists():  # two copies in the same second
        n += 1
        target = target.with_name(f"{relative.stem}-{stamp}-{n}{relative.suffix}")
    return target


def read_or_none(path: Path) -> NotebookNode | None:
    """The notebook at `path`, or None when there is none or it cannot be read (a damaged file is kept by
    keep_a_copy all the same)."""
    try:
        return nbtools.read(path) if Path(path).exists() else None
    except Exception:
        return None


def keep_a_copy(path: Path, new_nb: NotebookNode, root: Path = ROOT, quiet: bool = False) -> Path | None:
    """Before `path` is overwritten with `new_nb`: copy it to backups/ when it holds cells that `new_nb` lacks and
    git does not hold them either. Returns the copy's path (None: nothing to keep)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        old = nbtools.read(path)
    except Exception:  # an unreadable notebook is still somebody's file: keep it
        old = None
    if old is not None and (cells(old) == cells(new_nb) or committed(path, root)):
        return None
    copy = backup_path(path, root)
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, copy)
    if not quiet:
        print(
            _("kept your work: {path} had changes, so a copy is in {copy}").format(
                path=_shown(path, root), copy=_shown(copy, root)
            )
        )
    return copy


def _shown(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def exercise_path(exercise: str, lang: str = "en", root: Path = ROOT) -> tuple[Path, Path]:
    """(solution, exercise) notebooks for an id such as "ex01" or "ex01_layernorm" in the edition `lang`."""
    from . import exercises  # (exercises writes through keep_a_copy: imported here, not at the top)

    base = root / "ja" if lang == "ja" else root
    stem = Path(exercise).stem
    matches = sorted(
        p for p in (base / "solutions").glob("ex*.ipynb") if p.stem == stem or p.stem.split("_")[0] == stem
    )
    if len(matches) != 1:
        known = ", ".join(p.stem.split("_")[0] for p in sorted((base / "solutions").glob("ex*.ipynb")))
        raise exercises.UnknownExercise(
            _("no exercise {name}; the known ones are: {known}").format(name=exercise, known=known)
        )
    return matches[0], base / "exercises" / matches[0].name


def reset(exercise: str, lang: str | None = None, root: Path = ROOT) -> Path:
    """Start an exercise over: keep a copy of the current notebook in backups/, then write the fresh one.
    lang: the edition ("en" or "ja"); by default the one this notebook's kernel speaks (a cell in ja/exercises/
    resets the Japanese exercise)."""
    from . import exercises

    lang = lang or i18n.language()
    with i18n.using(lang):
        return _reset(exercises, exercise, lang, root)


def _reset(exercises, exercise: str, lang: str, root: Path) -> Path:
    solution, target = exercise_path(exercise, lang, root)
    fresh = exercises.make_exercise(solution, None)
    if target.exists():
        copy = backup_path(target, root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(target, copy)
        print(_("your previous {path} is kept in {copy}").format(path=_shown(target, root), copy=_shown(copy, root)))
    target.parent.mkdir(parents=True, exist_ok=True)
    nbtools.write(fresh, target)
    print(
        _("{path} is as it was handed out: reload it in JupyterLab (File > Reload Notebook from Disk)").format(
            path=_shown(target, root)
        )
    )
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start_over = sub.add_parser("reset", help="start an exercise over, keeping a copy of the current one")
    start_over.add_argument("exercise", help="ex01 ... ex06 (or the file name)")
    start_over.add_argument("--lang", choices=["en", "ja"], default="en")
    args = parser.parse_args(argv)
    from . import exercises

    try:
        reset(args.exercise, args.lang)
    except exercises.UnknownExercise as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
