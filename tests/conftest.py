"""Helpers the tests import (`from conftest import ROOT, all_notebooks`) and shared fixtures.

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


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def python():
    return sys.executable
