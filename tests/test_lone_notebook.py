"""A notebook opened on its own (Colab, a download) installs course_utils in its first cell, and nothing else changes.

The unit tests give course_utils/lone.py a made-up installed set (no network, no pip). The slow tests do what Colab
does, on this machine: a wheel of the repository is built (standing in for the repository's tag, which the first cell
installs: COURSE_UTILS_SOURCE points the cell at the wheel), a fresh virtual environment gets what Colab has and not
course_utils (torch, numpy, matplotlib, ipywidgets, ipykernel, nbclient, nbconvert ... at the lock's versions, except
numpy, one release older than the course pins, as Colab's own versions differ from the course's), and one chapter,
copied alone into an empty folder, runs top to bottom with nbclient in that environment. Then:

* it ran to the end with no error, and course_utils came from the wheel, with every module the repository has;
* nothing that was installed changed: torch's version and files, numpy's older version, every other distribution;
  only course_utils and what Colab lacks (matplotlib-fontja, for the Japanese figures) were added;
* the first cell showed one line (what it installed) and no pip noise; run again, in the same kernel or a new one,
  it shows nothing and installs nothing;
* the Japanese chapter, alone in its own empty folder (no ja/.course_lang above it), speaks Japanese.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from course_utils import lone

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import first_cell
import setup_venv

# ------------------------------------------------------------------------------------------------------------------
# course_utils/lone.py with a made-up installed set
# ------------------------------------------------------------------------------------------------------------------
WANTED = ["torch==2.13.0", "numpy==2.4.6", "matplotlib==3.11.2", "ipywidgets==8.1.9", "matplotlib-fontja==1.1.0"]
COLAB = {"torch": "2.5.1+cu121", "numpy": "1.26.4", "matplotlib": "3.8.0", "ipywidgets": "7.7.1", "weird": "dev"}


class Pip:
    def __init__(self):
        self.calls, self.constraints = [], None

    def __call__(self, cmd, check):
        assert check
        self.calls.append(cmd)
        self.constraints = Path(cmd[cmd.index("--constraint") + 1]).read_text()


def test_only_what_is_missing_entirely_is_installed_at_the_pinned_version(capsys):
    pip = Pip()
    assert lone.install_missing_requirements(COLAB, WANTED, run=pip) == ["matplotlib-fontja==1.1.0"]
    [cmd] = pip.calls
    assert cmd[0] == sys.executable and cmd[1:4] == ["-m", "pip", "install"] and "-q" in cmd
    assert cmd[-1] == "matplotlib-fontja==1.1.0" and "--upgrade" not in cmd and "-U" not in cmd
    assert capsys.readouterr().out == "Installed for this notebook: matplotlib-fontja==1.1.0\n"


def test_every_installed_distribution_is_held_at_its_own_version():
    pip = Pip()
    lone.install_missing_requirements(COLAB, WANTED, run=pip)
    held = pip.constraints.splitlines()
    assert "torch==2.5.1+cu121" in held and "numpy==1.26.4" in held and "ipywidgets==7.7.1" in held
    assert not any(line.startswith("weird") for line in held), "a version pip cannot read is left out"


def test_nothing_missing_installs_nothing_and_says_nothing(capsys):
    pip = Pip()
    have = {**COLAB, "matplotlib-fontja": "1.0.0"}
    assert lone.install_missing_requirements(have, WANTED, run=pip) == []
    assert pip.calls == [] and capsys.readouterr().out == ""


def test_names_are_compared_as_pip_compares_them():
    have = {lone.normalize("Matplotlib_FontJA"): "1.1.0", lone.normalize("IPyWidgets"): "8"}
    assert lone.missing(["matplotlib-fontja==1.1.0", "ipywidgets==8.1.9", "tqdm==4.70.1"], have) == ["tqdm==4.70.1"]


def test_the_requirements_are_the_packages_pins_without_what_only_the_tools_need():
    wanted = lone.requirements()
    names = {lone.normalize(spec.split("==")[0]) for spec in wanted}
    assert "torch==2.13.0" in wanted and "matplotlib-fontja==1.1.0" in wanted and "nbconvert==7.17.2" in wanted
    assert not names & {"jupyterlab", "jupyterlab-language-pack-ja-jp"}
    assert all("==" in spec for spec in wanted), "every requirement is pinned"


# ------------------------------------------------------------------------------------------------------------------
# the real thing: a chapter alone in a fresh environment
# ------------------------------------------------------------------------------------------------------------------
COLAB_HAS = ["numpy", "matplotlib", "ipywidgets", "ipykernel", "nbclient", "nbformat", "nbconvert", "tqdm"]
OLDER_NUMPY = "numpy==2.3.5"  # Colab's numpy is not the course's: the first cell must leave it
ADDED = {"course-utils", "matplotlib-fontja"}  # what the first cell may add to such an environment
INSTALLED = {  # what the first cell shows, in the notebook's language (course_utils/lone.py)
    "en": "Installed for this notebook: matplotlib-fontja==1.1.0\n",
    "ja": "このノートブックのためにインストールしました：matplotlib-fontja==1.1.0\n",
}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*==[^\s;\\]+)(\s*;[^\\]*)?")

PROBE = """\
import importlib
import json

import course_utils
import torch
from course_utils import i18n

failed = {}
for name in MODULES:
    try:
        importlib.import_module(name)
    except Exception as error:
        failed[name] = repr(error)
found = {"torch": torch.__version__, "torch_file": torch.__file__, "course_utils": course_utils.__file__}
print("PROBE", json.dumps({**found, "language": i18n.language(), "failed": failed}))
"""

DRIVER = """\
import sys

import nbformat
from nbclient import NotebookClient

path, out = sys.argv[1], sys.argv[2]
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": sys.argv[3]}}).execute()
nbformat.write(nb, out)
"""


def modules() -> list[str]:
    """Every module of course_utils in the repository, as import names."""
    package = ROOT / "course_utils"
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def lock_constraints(path: Path) -> Path:
    """requirements-cpu.txt's pins without their hashes (a constraints file), numpy's replaced by OLDER_NUMPY."""
    lines = []
    for line in (ROOT / "requirements-cpu.txt").read_text().splitlines():
        m = PIN.match(line)
        if m and not line.startswith("numpy=="):
            lines.append(m[1] + (m[2] or ""))
    path.write_text("\n".join([*lines, OLDER_NUMPY]) + "\n")
    return path


def build_wheel(folder: Path) -> Path:
    """A wheel of the repository as it is here (uncommitted files included), built from a copy of what it packs."""
    src = folder / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "course_utils", src / "course_utils", ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(folder), str(src)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    [wheel] = folder.glob("course_utils-*.whl")
    return wheel


def outside(cmd, check: bool = True) -> subprocess.CompletedProcess:
    """`cmd` run away from the repository (a `python -c` there would import course_utils from its folder)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(cmd, cwd=Path(cmd[0]).parent, env=env, check=check, capture_output=True, text=True)


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def distributions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, re\n"
        "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version for d in m.distributions()}))"
    )
    return json.loads(outside([python, "-c", code]).stdout)


def torch_fingerprint(python: Path) -> dict:
    code = "import importlib.util, json; print(importlib.util.find_spec('torch').origin)"
    init = Path(outside([python, "-c", code]).stdout.strip())
    files = [init, init.parent / "version.py", init.parent / "lib" / "libtorch_cpu.so"]
    return {str(f): (f.stat().st_mtime_ns, hashlib.sha256(f.read_bytes()).hexdigest()) for f in files if f.exists()}


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    """A fresh environment with what Colab has and without course_utils, and a wheel of the repository."""
    base = tmp_path_factory.mktemp("colab")
    wheel = build_wheel(base / "wheel")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv_python(venv)
    torch = f"torch=={setup_venv.torch_version(ROOT / 'requirements.txt')}"
    extra = []
    if sys.platform == "linux":  # the CPU build, as the course's CPU path installs it (tools/setup_venv.py)
        torch += "+cpu"
        if not setup_venv.local_wheels_configured(venv):
            extra = ["--extra-index-url", os.environ.get("TORCH_CPU_INDEX", "https://download.pytorch.org/whl/cpu")]
    constraints = lock_constraints(base / "constraints.txt")
    cmd = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", constraints, *extra]
    subprocess.run([*cmd, torch, OLDER_NUMPY, *COLAB_HAS[1:]], check=True, cwd=base)
    # the package index of the lone runs: what the first cell installs from it, fetched now (the cache, the network)
    index = base / "index"
    fontja = next(spec for spec in lone.requirements() if spec.startswith("matplotlib-fontja=="))
    subprocess.run([*cmd[:3], "download", "-q", "--no-deps", "-d", index, fontja], check=True, cwd=base)
    return SimpleNamespace(base=base, wheel=wheel, venv=venv, python=python, index=index)


def fresh_state(colab) -> None:
    """The environment as Colab hands it out: without course_utils and what the first cell adds."""
    cmd = [colab.python, "-m", "pip", "uninstall", "-q", "-y", *sorted(ADDED)]
    outside(cmd)
    assert outside([colab.python, "-c", "import course_utils"], check=False).returncode != 0


def run_alone(colab, notebook: Path, folder: Path, extra_cells=(), online: bool = False):
    """`notebook` copied alone into the empty `folder` and run there top to bottom, with the probe after it; returns
    the executed notebook. online: pip may use this machine's configuration and indexes (to show what a first cell
    without `--no-deps` does to the environment), instead of the fixture's folder alone."""
    folder.mkdir(parents=True)
    assert not any((p / ".course_lang").exists() for p in (folder, *folder.parents)), "no marker above"
    nb = nbformat.read(notebook, as_version=4)
    probe = PROBE.replace("MODULES", repr(modules()))
    nb.cells += [*extra_cells, nbformat.v4.new_code_cell(probe)]
    lone_copy, executed, driver = folder / notebook.name, colab.base / f"{folder.name}.out.ipynb", colab.base / "d.py"
    nbformat.write(nb, lone_copy)
    driver.write_text(DRIVER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "PYTEST_", "PIP_", "VIRTUAL"))}
    env.pop("PYTHONPATH", None)
    # pip as a fresh machine has it, with no configuration (this one's may name local indexes, which pip then warns
    # about), and offline: the package index is the folder the fixture filled
    pip = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(colab.index)}
    if online:
        pip = {k: v for k, v in os.environ.items() if k.startswith("PIP_") and k != "PIP_DISABLE_PIP_VERSION_CHECK"}
    env.update(
        pip,
        COURSE_UTILS_SOURCE=str(colab.wheel),
        PATH=os.pathsep.join([str(colab.venv / "bin"), env.get("PATH", "")]),
        IPYTHONDIR=str(folder / ".ipython"),
        MPLCONFIGDIR=str(folder / ".matplotlib"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    result = subprocess.run(
        [colab.python, driver, lone_copy, executed, folder], cwd=folder, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-5000:]
    return nbformat.read(executed, as_version=4)


def probe_of(nb) -> dict:
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    return json.loads(text.split("PROBE ", 1)[1])


def texts(cell) -> list[str]:
    return [o.get("text") or o.get("data", {}).get("text/plain", "") for o in cell.outputs]


def quiz_texts(nb) -> list[str]:
    [cell] = [c for c in nb.cells if c.cell_type == "code" and "show_quiz(" in c.source]
    return texts(cell)


def check_a_lone_run(colab, lang: str, notebook: Path, tmp_path) -> dict:
    fresh_state(colab)
    before, torch_before = distributions(colab.python), torch_fingerprint(colab.python)
    again = nbformat.v4.new_code_cell(first_cell.source(lang))  # the first cell, run again in the same kernel
    nb = run_alone(colab, notebook, tmp_path / f"alone-{lang}", [again])
    after = distributions(colab.python)

    probe = probe_of(nb)
    assert probe["torch"] == before["torch"] and probe["torch_file"].startswith(str(colab.venv))
    assert torch_fingerprint(colab.python) == torch_before, "torch's files are untouched"
    assert {k: after[k] for k in before} == before, "nothing installed changed (torch, numpy 2.3.5, ...)"
    assert set(after) - set(before) == ADDED
    assert probe["failed"] == {}, "every module of course_utils imports"
    assert "site-packages" in probe["course_utils"] and str(ROOT) not in probe["course_utils"]
    assert probe["language"] == lang

    first = nb.cells[1]
    assert first.get("id") == first_cell.CELL_ID
    assert [o.output_type for o in first.outputs] == ["stream"], texts(first)
    assert texts(first) == [INSTALLED[lang]], "one line, no pip noise"
    assert nb.cells[-2].outputs == [], "run again, the first cell says nothing"
    stored = nbformat.read(notebook, as_version=4)
    assert quiz_texts(nb) == quiz_texts(stored) and quiz_texts(stored), "the quiz speaks the notebook's language"

    # a new kernel (Colab's "Restart session"): the first cell finds course_utils, installs nothing, says nothing
    solo = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(first_cell.source(lang))])
    solo.metadata = stored.metadata
    path = colab.base / f"solo-{lang}.ipynb"
    nbformat.write(solo, path)
    rerun = run_alone(colab, path, tmp_path / f"solo-{lang}")
    assert rerun.cells[0].outputs == [] and probe_of(rerun)["language"] == lang
    assert distributions(colab.python) == after
    return probe


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_data_file(colab):
    names = set(zipfile.ZipFile(colab.wheel).namelist())
    package = ROOT / "course_utils"
    wanted = {p.relative_to(ROOT).as_posix() for pattern in ("*.py", "*.mo") for p in package.rglob(pattern)}
    wanted.add("course_utils/stored_claims.json")
    assert wanted - names == set()


@pytest.mark.slow
def test_a_lone_chapter_installs_course_utils_and_leaves_torch_alone(colab, tmp_path):
    check_a_lone_run(colab, "en", ROOT / "chapters" / "01_layernorm_by_hand.ipynb", tmp_path)


@pytest.mark.slow
def test_a_lone_japanese_chapter_speaks_japanese(colab, tmp_path):
    probe = check_a_lone_run(colab, "ja", ROOT / "ja" / "chapters" / "01_layernorm_by_hand.ipynb", tmp_path)
    assert probe["language"] == "ja"
