"""What nbval compares does not depend on the machine, and `pytest` works on any notebook or folder alone.

Learners run the tests on their own machines: another Python patch version, macOS or Linux, x86 or ARM,
PyTorch's CPU build (2.13.0+cpu), its CUDA build (2.13.0 or 2.13.0+cu130), with or without a GPU. The
stored outputs are made on one of them, so every output that nbval compares must be the same on all of them,
and whatever differs (the welcome chapter's environment report) must sit in a cell marked `# NBVAL_IGNORE_OUTPUT`.

The slow test below runs strict nbval over every notebook in kernels that believe they are on another
machine (tests/fake_machine/sitecustomize.py fakes the answers Python, platform and torch give), with a
probe notebook that shows the fakes reached the kernels and a control notebook that shows a compared output
which does depend on the machine fails that run.
"""

import json
import os
import platform
import re
import subprocess
import sys

import nbformat
import pytest
import torch

from course_utils import nbtools
from course_utils.env import course_releases, release

from conftest import ROOT, all_notebooks

FAKE_MACHINE = ROOT / "tests" / "fake_machine"


def another_machine():
    """Fake answers that differ from this machine's (whatever machine runs the tests)."""
    v = sys.version_info
    tagged = release(torch.__version__) + "+cu130"
    return {
        "COURSE_FAKE_PYTHON": f"{v.major}.{v.minor}.{98 if v.micro == 99 else 99}",
        "COURSE_FAKE_PLATFORM": "Linux x86_64" if platform.system() == "Darwin" else "Darwin arm64",
        "COURSE_FAKE_TORCH": release(torch.__version__) if torch.__version__ == tagged else tagged,
        "COURSE_FAKE_GPU": "NVIDIA H200 (faked)",
    }


def clean_environment(**extra):
    """This environment without what the course's tests set (COURSE_DEVICE, PYTHONHASHSEED) and without
    pytest's own variables: what a learner's shell has before typing `pytest`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COURSE_", "PYTEST_")) and k not in ("PYTHONHASHSEED", "PYTHONPATH")
    }
    env.update(extra)
    return env


def fake_machine_environment(fakes):
    env = clean_environment(COURSE_FAKE_MACHINE="1", **fakes)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAKE_MACHINE), os.environ.get("PYTHONPATH")]))
    return env


def pytest_run(args, cwd, env, timeout=900):
    """`python -m pytest ARGS` with the course's own configuration (pyproject.toml: strict nbval), every
    outcome listed (-rA) so that the caller can tell which cells passed."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rA",
        "-c",
        str(ROOT / "pyproject.toml"),
        "--rootdir",
        str(ROOT),
        *map(str, args),
    ]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\S.*?::Cell \d+)(?: - .*)?$", re.M)


def outcomes(stdout):
    """{nodeid: PASSED|FAILED|...} for every notebook cell in a `pytest -rA` run."""
    return {nodeid: outcome for outcome, nodeid in OUTCOME.findall(stdout)}


def failure_report(stdout, limit=6000):
    """The FAILURES section of a pytest run (nbval's diffs), shortened: the message of a failed assert."""
    start = stdout.find("= FAILURES =")
    end = stdout.find("short test summary info")
    return stdout[max(start, 0) : end if end > start else None][:limit] or stdout[-limit:]


def code_cell_ids(path, prefix):
    return {f"{prefix}::Cell {i}" for i in range(len(nbtools.code_cells(nbtools.read(path))))}


def stored(cell, text):
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return cell


def probe_notebook(path, fakes):
    """A notebook whose stored output is what a kernel on the faked machine must print: it fails strict nbval
    unless the fakes reached the kernel (and course_utils.env), while COURSE_DEVICE=cpu still rules."""
    cell = nbformat.v4.new_code_cell(
        "import os, platform, sys\n"
        "import torch\n"
        "from course_utils.env import device_reason, environment_report\n"
        "report = environment_report()\n"
        'print(report["python"], sys.version.split()[0], sys.version_info.micro)\n'
        'print(report["platform"], platform.system(), platform.machine())\n'
        'print(report["torch"], torch.cuda.is_available(), torch.cuda.get_device_name(0))\n'
        'print(report["device"], "|", report["why"])\n'
        'os.environ.pop("COURSE_DEVICE")\n'
        "print(device_reason()[1])",
        execution_count=1,
    )
    python, (system, machine) = fakes["COURSE_FAKE_PYTHON"], fakes["COURSE_FAKE_PLATFORM"].split()
    stored(
        cell,
        f"{python} {python} {python.split('.')[2]}\n"
        f"{system} {machine} {system} {machine}\n"
        f"{fakes['COURSE_FAKE_TORCH']} True {fakes['COURSE_FAKE_GPU']}\n"
        f"cpu | COURSE_DEVICE=cpu is set in the environment\n"
        f"a CUDA GPU is available ({fakes['COURSE_FAKE_GPU']})\n",
    )
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def control_notebook(path):
    """The welcome chapter plus one compared cell that prints the Python version, stored on this machine."""
    nb = nbtools.read(ROOT / "chapters" / "00_welcome.ipynb")
    count = len(nbtools.code_cells(nb)) + 1
    nb.cells.append(
        stored(
            nbformat.v4.new_code_cell("import platform\nprint(platform.python_version())", execution_count=count),
            platform.python_version() + "\n",
        )
    )
    nbformat.write(nb, str(path))
    return path, f"{path.name}::Cell {count - 1}"


@pytest.mark.slow
def test_what_nbval_compares_does_not_depend_on_the_machine(tmp_path):
    """Strict nbval passes on every notebook in kernels that see another Python patch version, another
    platform, another torch build and a GPU, with COURSE_DEVICE left unset (the root conftest.py sets it).

    In the same run, the probe notebook passes only if the kernels really saw the fakes, and the control
    notebook (the welcome chapter plus a compared cell printing platform.python_version()) must fail, and
    only in that cell: a compared output that depends on the machine cannot slip through this test.
    """
    fakes = another_machine()
    extra = tmp_path / "extra"  # given as a folder, so that pytest names its notebooks "probe.ipynb::Cell 0"...
    extra.mkdir()
    probe = probe_notebook(extra / "probe.ipynb", fakes)
    control, control_cell = control_notebook(extra / "control.ipynb")
    result = pytest_run(
        ["-n", "2", "--dist", "loadfile", "chapters", "solutions", "exercises", extra],
        cwd=ROOT,
        env=fake_machine_environment(fakes),
    )
    seen = outcomes(result.stdout)
    course = set().union(*(code_cell_ids(p, p.relative_to(ROOT).as_posix()) for p in all_notebooks()))
    report = failure_report(result.stdout)

    assert {nodeid: seen.get(nodeid) for nodeid in course if seen.get(nodeid) != "PASSED"} == {}, report
    assert seen.get("probe.ipynb::Cell 0") == "PASSED", "the fakes did not reach the kernels\n" + report
    assert {nodeid for nodeid, outcome in seen.items() if outcome != "PASSED"} == {control_cell}, report
    assert f"'{platform.python_version()}\\n' == '{fakes['COURSE_FAKE_PYTHON']}\\n'" in result.stdout, report
    assert set(seen) == course | code_cell_ids(probe, probe.name) | code_cell_ids(control, control.name)
    assert result.returncode == 1, report  # the control's one failure


def test_the_welcome_chapter_compares_only_what_every_machine_shares():
    """Its environment report (Python, platform, torch build, device) is ignored by nbval; the compared cell
    after it prints the pinned releases, without the build tag."""
    nb = nbtools.read(ROOT / "chapters" / "00_welcome.ipynb")
    report, releases = nbtools.code_cells(nb)[1:3]  # after the first cell (tools/first_cell.py)
    assert report.source.startswith("# NBVAL_IGNORE_OUTPUT\n") and "platform:" in report.outputs[0]["text"]
    assert "NBVAL" not in releases.source and "course_releases()" in releases.source
    assert "+" not in releases.outputs[0]["text"] and "torch: " in releases.outputs[0]["text"]


def test_release_drops_only_the_build_tag(monkeypatch):
    assert [release(v) for v in ("2.13.0+cpu", "2.13.0+cu130", "2.13.0", "2.14.0.dev20260101+cpu")] == [
        "2.13.0",
        "2.13.0",
        "2.13.0",
        "2.14.0.dev20260101",
    ]
    monkeypatch.setattr(torch, "__version__", "2.13.0+cu130")
    assert course_releases()["torch"] == release(torch.__version__) == "2.13.0"


@pytest.mark.slow
@pytest.mark.parametrize(
    "cwd, target",
    [("chapters", "00_welcome.ipynb"), (".", "exercises")],
    ids=["one-notebook-from-its-folder", "one-folder"],
)
def test_pytest_on_one_notebook_or_one_folder_alone(cwd, target):
    """`pytest` given just one notebook or one folder, from a shell without COURSE_DEVICE or PYTHONHASHSEED,
    passes strict nbval: the root conftest.py supplies the environment and finds the sanitize file that
    pyproject.toml names relative to the root. (Run on a faked GPU machine, so that a notebook which asked
    for the device would get "cuda" if COURSE_DEVICE=cpu were missing.)"""
    path = ROOT / cwd / target
    notebooks = sorted(path.glob("*.ipynb")) if path.is_dir() else [path]
    env = fake_machine_environment(another_machine())
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", target],
        cwd=ROOT / cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    cells = sum(len(nbtools.code_cells(nbtools.read(nb))) for nb in notebooks)
    assert result.returncode == 0, failure_report(result.stdout) + result.stderr[-2000:]
    assert f"{cells} passed" in result.stdout and "failed" not in result.stdout


def test_the_fake_machine_is_off_unless_asked_for():
    """sitecustomize.py on the path changes nothing without COURSE_FAKE_MACHINE=1."""
    code = "import json, platform, sys; print(json.dumps([sys.version, platform.platform(), 'torch' in sys.modules]))"
    env = clean_environment(PYTHONPATH=str(FAKE_MACHINE), **another_machine())
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    on = subprocess.run(
        [sys.executable, "-c", code], env=dict(env, COURSE_FAKE_MACHINE="1"), capture_output=True, text=True, check=True
    )
    assert json.loads(off.stdout) == [sys.version, platform.platform(), False]
    version, described, torch_loaded = json.loads(on.stdout)
    fakes = another_machine()
    assert version.startswith(fakes["COURSE_FAKE_PYTHON"] + " ")
    assert described.startswith(fakes["COURSE_FAKE_PLATFORM"].split()[0] + "-")
    assert not torch_loaded  # faking torch waits for its import
