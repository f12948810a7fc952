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
    "COURSE_STRICT_CLAIMS": "1",  # a claim about a training run that does not hold fails the test (course_utils.claims)
}

for _name, _value in ENVIRONMENT_DEFAULTS.items():
    os.environ.setdefault(_name, _value)

# The language of course_utils' messages comes from each notebook's folder (ja/.course_lang makes the Japanese
# edition's kernels speak Japanese; see course_utils/i18n.py). A COURSE_LANG left in the shell would override it for
# every kernel and make the English edition's stored outputs differ, so the tests never inherit one.
os.environ.pop("COURSE_LANG", None)
os.environ.pop("COURSE_NOTEBOOK_LANG", None)  # (each notebook's first cell sets its own; see tools/first_cell.py)


def pytest_configure(config):
    """One training-run cache per test session (course_utils/run_cache.py), then the nbval sanitize file."""
    _share_the_run_cache(config)
    _find_the_sanitize_file(config)


def _share_the_run_cache(config):
    """The session's training runs are trained once and reused: the English chapter under nbval, its Japanese
    edition and the browser suite run the same deterministic CPU runs. The folder is made here, in the process that
    starts pytest's workers (which inherit the variable, as do the kernels they start), and removed at the end.
    `COURSE_RUN_CACHE= pytest` (empty) turns the cache off: every notebook then trains its runs itself."""
    if hasattr(config, "workerinput") or "COURSE_RUN_CACHE" in os.environ:
        return
    import tempfile

    config._course_run_cache = tempfile.mkdtemp(prefix="course-run-cache-")
    os.environ["COURSE_RUN_CACHE"] = config._course_run_cache


def pytest_unconfigure(config):
    folder = getattr(config, "_course_run_cache", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("COURSE_RUN_CACHE", None)


def _find_the_sanitize_file(config):
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
