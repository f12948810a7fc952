import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_FOLDERS = ("chapters", "solutions", "exercises")

# nbval kernels and the tests run on the CPU, so stored outputs (made on CPU by `make execute`) compare equal.
os.environ.setdefault("COURSE_DEVICE", "cpu")
os.environ.setdefault("PYTHONHASHSEED", "0")


def all_notebooks():
    return sorted(p for folder in NOTEBOOK_FOLDERS for p in (ROOT / folder).glob("*.ipynb"))


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def python():
    return sys.executable
