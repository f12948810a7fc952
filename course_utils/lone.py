"""A notebook opened on its own: what course_utils needs that this Python lacks, installed without touching the rest.

A chapter or an exercise opened alone (in Google Colab, or downloaded without the repository) has no `make setup`
behind it. Its first cell (written by tools/first_cell.py, the same in every notebook) does the set-up instead:

1. when `course_utils` cannot be imported, `pip install --no-deps` of the course's own version (the repository's
   tag, `git+https://...@v0.1.0`): the package alone, so pip cannot swap Colab's torch for the one the course pins;
2. then `install_missing_requirements()`, below: of the packages course_utils needs at run time (its metadata's
   requirements, pinned exactly by pyproject.toml), those missing *entirely* are installed at the pinned version.
   A package that is installed stays as it is, whatever its version: Colab's torch (built for its GPU), numpy and
   matplotlib are what the notebook then runs on. Every installed distribution is also given to pip as a
   constraint at its own version, so that what pip pulls in with a missing package cannot upgrade one either.

Left out: what only the course's tools need, not a notebook (JupyterLab and its Japanese language pack; Colab and
any notebook server bring their own front end). nbconvert stays in: the quizzes render their Markdown with mistune,
which comes with it.

In the course's own folder, course_utils is installed (editable, by `make setup`) and the first cell does nothing.
The cell states the notebook's language too (`COURSE_NOTEBOOK_LANG`, rule 4 of course_utils/i18n.py), so a lone
Japanese notebook's checks speak Japanese.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile

from .i18n import _

__all__ = [
    "DISTRIBUTION",
    "NOT_FOR_NOTEBOOKS",
    "normalize",
    "installed",
    "requirements",
    "missing",
    "pip_command",
    "install_missing_requirements",
]

DISTRIBUTION = "course-utils"
# what only the course's tools use (`make lab`): a notebook runs without them
NOT_FOR_NOTEBOOKS = frozenset({"jupyterlab", "jupyterlab-language-pack-ja-jp"})
# quiet: no progress, no "a new pip is out", no "running as root" (Colab's kernel is root), and no warning that the
# environment does not match course_utils' exact pins (it never will in Colab: its own torch and numpy are kept)
PIP = ("-m", "pip", "install", "-q", "--disable-pip-version-check", "--root-user-action=ignore", "--no-warn-conflicts")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# a version pip accepts in a constraint (PEP 440, with a local part such as Colab's +cu121); others are left out
_VERSION = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[A-Za-z0-9.]+)?$")


def normalize(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): `Jupyter_Lab.Pack` -> `jupyter-lab-pack`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed() -> dict[str, str]:
    """{normalized name: version} of every distribution this Python can import from."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(normalize(name), dist.version)
    return found


def requirements(distribution: str = DISTRIBUTION) -> list[str]:
    """The run-time requirements of course_utils as its metadata states them (`torch==2.13.0`, ...): those without
    an extra, and without the ones a notebook does not need."""
    wanted = []
    for line in importlib.metadata.requires(distribution) or []:
        spec, _sep, marker = line.partition(";")
        match = _NAME.match(spec)
        if not match or "extra" in marker or normalize(match[1]) in NOT_FOR_NOTEBOOKS:
            continue
        wanted.append(spec.strip().replace(" ", ""))
    return wanted


def missing(wanted: list[str], have: dict[str, str]) -> list[str]:
    """The requirements in `wanted` whose package is not installed at all (an installed one counts, any version)."""
    return [spec for spec in wanted if (name := _NAME.match(spec)) and normalize(name[1]) not in have]


def pip_command(specs: list[str], constraints: str) -> list[str]:
    return [sys.executable, *PIP, "--constraint", constraints, *specs]


def install_missing_requirements(have: dict[str, str] | None = None, wanted: list[str] | None = None, run=None):
    """Install (pip, quietly) the requirements of course_utils that are missing entirely; returns them.

    Prints one line naming what it installed, nothing when nothing was missing. `have` (the installed set),
    `wanted` (the requirements) and `run` (subprocess.run) are there for the tests."""
    have = installed() if have is None else have
    wanted = requirements() if wanted is None else wanted
    todo = missing(wanted, have)
    if not todo:
        return []
    run = run or subprocess.run
    with tempfile.TemporaryDirectory() as folder:
        constraints = os.path.join(folder, "installed.txt")
        with open(constraints, "w", encoding="utf-8") as f:
            f.writelines(f"{name}=={version}\n" for name, version in sorted(have.items()) if _VERSION.match(version))
        run(pip_command(todo, constraints), check=True)
    importlib.invalidate_caches()
    print(_("Installed for this notebook: {packages}").format(packages=", ".join(todo)))
    return todo
