"""What every `pytest` run of this course needs, whatever it is given to test.

pytest loads this file for any path under the repository root, so the settings below hold for
`pytest` (everything), `pytest chapters/`, `pytest exercises/ex01_layernorm.ipynb`, and also
`cd chapters && pytest 00_welcome.ipynb`. (tests/conftest.py keeps the helpers that tests import;
it is loaded after this file, so `from conftest import ROOT` in a test still finds that one.)

The stored outputs of every notebook are made on the CPU by `make execute`, with these settings.
The nbval kernels inherit this process's environment, so they compute on the CPU too, even on a
machine with a GPU: the outputs they produce then compare equal to the stored ones.
"""

import os
from pathlib import Path

ENVIRONMENT_DEFAULTS = {
    "COURSE_DEVICE": "cpu",  # course_utils.env.pick_device() would take a GPU; the stored outputs are CPU ones
    "PYTHONHASHSEED": "0",  # the same hash seed as `make execute` (course_utils.nbtools)
}

for _name, _value in ENVIRONMENT_DEFAULTS.items():
    os.environ.setdefault(_name, _value)


def pytest_configure(config):
    """Find the sanitize file that pyproject.toml names relative to the root, from any working directory.

    nbval opens `--nbval-sanitize-with` relative to the current directory, so `cd chapters && pytest
    00_welcome.ipynb` would look for chapters/tests/nbval_sanitize.cfg. A path that does not exist
    there but exists under the root directory is made absolute; any other value is left alone.
    """
    name = getattr(config.option, "nbval_sanitize_with", None)
    if not name or Path(name).is_absolute() or Path(name).exists():
        return
    candidate = config.rootpath / name
    if candidate.exists():
        config.option.nbval_sanitize_with = str(candidate)
