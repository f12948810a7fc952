"""Helpers the tests import (`from conftest import ROOT, all_notebooks, completed`) and shared fixtures.

The environment defaults every run needs (COURSE_DEVICE=cpu, PYTHONHASHSEED=0) live in the root
conftest.py, which pytest loads for any path, including a notebook folder collected on its own.
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_FOLDERS = ("chapters", "solutions", "exercises")


def all_notebooks():
    return sorted(p for folder in NOTEBOOK_FOLDERS for p in (ROOT / folder).glob("*.ipynb"))


def completed(solution: Path):
    """What a learner who solved everything hands in: the solution's code, the exercise's metadata."""
    import nbformat

    from course_utils.exercises import BEGIN, END, make_exercise

    nb = nbformat.read(solution, as_version=4)
    for cell in nb.cells:
        cell.source = "\n".join(line for line in cell.source.splitlines() if line.strip() not in (BEGIN, END))
    nb.metadata["course"] = make_exercise(solution).metadata["course"]
    return nb


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def python():
    return sys.executable
