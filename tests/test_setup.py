"""The README's commands guess right on a fresh machine: which PyTorch build, and what a failed install leaves.

* **Which build.** `make` on Linux picks PyTorch's CUDA build only when an NVIDIA driver is there (the kernel's
  /proc/driver/nvidia/version, or `nvidia-smi -L` answering, as on WSL), else the CPU-only build, and says which in one
  line. `TORCH=cpu`/`TORCH=cuda` force one; the choice is remembered in .venv/.torch. `make torch-build` prints the
  decision; the tests run it with a PATH and a /proc path of their own, so the machine running them does not matter.
* **A failed install.** When pip cannot get a wheel (a mirror without it, no network, an unsupported machine), setup
  shows pip's own output, then one sentence naming what is missing and the fix, and removes the .venv it created.
  The tests make pip fail on purpose with an empty package index, in a copy of the setup files.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="GNU make is not installed")
SETUP_FILES = ["Makefile", "pyproject.toml", "requirements.txt", "requirements-cpu.txt"]
SETUP_TOOLS = ["tools/check_python.py", "tools/setup_venv.py"]


def tool_dir(tmp_path: Path, nvidia_smi: str | None) -> Path:
    """A PATH folder with only what the Makefile's detection calls, and an `nvidia-smi` that answers as asked
    (None: no nvidia-smi at all)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ["uname", "cat", "echo", "sed"]:
        link = bin_dir / tool
        if not link.exists():
            link.symlink_to(shutil.which(tool))
    smi = bin_dir / "nvidia-smi"
    smi.unlink(missing_ok=True)
    if nvidia_smi is not None:
        smi.write_text(f"#!/bin/sh\n{nvidia_smi}\n")
        smi.chmod(0o755)
    return bin_dir


def torch_build(tmp_path: Path, *args: str, nvidia_smi: str | None = None, proc: Path | None = None) -> str:
    """What `make torch-build` says in an empty folder (no .venv unless the test made one)."""
    env = {
        "PATH": str(tool_dir(tmp_path, nvidia_smi)),
        "HOME": str(tmp_path),
        "NVIDIA_PROC": str(proc or tmp_path / "no-such-proc-file"),
    }
    done = subprocess.run(
        [MAKE, "-s", "--no-print-directory", "-f", str(ROOT / "Makefile"), "torch-build", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return (done.stdout + done.stderr).strip()


@pytest.mark.skipif(sys.platform != "linux", reason="the NVIDIA detection is Linux's")
def test_a_laptop_without_nvidia_gets_the_cpu_build(tmp_path):
    assert torch_build(tmp_path) == "cpu (TORCH=auto: no NVIDIA driver)"
    # the NVIDIA tools installed but no driver loaded: nvidia-smi fails
    failing = "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver' >&2; exit 9"
    assert torch_build(tmp_path, nvidia_smi=failing) == "cpu (TORCH=auto: no NVIDIA driver)"


@pytest.mark.skipif(sys.platform != "linux", reason="the NVIDIA detection is Linux's")
def test_a_machine_with_an_nvidia_driver_gets_the_cuda_build(tmp_path):
    answering = "echo 'GPU 0: NVIDIA H200 (UUID: GPU-0)'"
    assert torch_build(tmp_path, nvidia_smi=answering) == "cuda (TORCH=auto: NVIDIA driver found)"
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n")
    assert torch_build(tmp_path, proc=proc) == "cuda (TORCH=auto: NVIDIA driver found)"


def test_torch_forces_a_build_and_the_choice_is_remembered(tmp_path):
    answering = "echo 'GPU 0: NVIDIA H200 (UUID: GPU-0)'"
    assert torch_build(tmp_path, "TORCH=cpu", nvidia_smi=answering) == "cpu (TORCH=cpu)"
    assert torch_build(tmp_path, "TORCH=cuda") == "cuda (TORCH=cuda)"
    assert torch_build(tmp_path, "TORCH=default") == "cuda (TORCH=default)"  # the old name still works
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / ".torch").write_text("cpu\n")
    assert torch_build(tmp_path, nvidia_smi=answering) == "cpu (TORCH=cpu)"  # remembered, not re-detected
    assert torch_build(tmp_path, "TORCH=auto", nvidia_smi=answering) == "cuda (TORCH=auto: NVIDIA driver found)"
    assert "TORCH must be `auto`, `cpu` or `cuda`, not `gpu`" in torch_build(tmp_path, "TORCH=gpu")
    assert "not `cpu cuda`" in torch_build(tmp_path, "TORCH=cpu cuda")
    (tmp_path / ".venv" / ".torch").write_text("garbage here\n")  # a damaged record counts as none: detect again
    assert torch_build(tmp_path, nvidia_smi=answering) == "cuda (TORCH=auto: NVIDIA driver found)"


def copy_setup(tmp_path: Path) -> Path:
    root = tmp_path / "course"
    (root / "tools").mkdir(parents=True)
    for name in SETUP_FILES + SETUP_TOOLS:
        shutil.copy(ROOT / name, root / name)
    return root


def offline_env(tmp_path: Path, **extra) -> dict:
    """pip pointed at an empty index, with no configuration file and no local wheel folder of the machine's."""
    empty = tmp_path / "empty-index"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "MAKE", "MFLAGS"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL=empty.as_uri(),
        PIP_NO_CACHE_DIR="1",
        NVIDIA_PROC=str(tmp_path / "no-such-proc-file"),
    )
    env.update(extra)
    return env


@pytest.mark.slow
def test_a_failed_install_says_what_is_missing_and_leaves_no_venv(tmp_path):
    root = copy_setup(tmp_path)
    done = subprocess.run(
        [MAKE, "--no-print-directory", "setup", f"PYTHON={sys.executable}", "TORCH=cpu"],
        cwd=root,
        env=offline_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "No matching distribution found for" in output, "pip's own error must be shown, not hidden"
    (sentence,) = [line for line in output.splitlines() if line.startswith("*** Setup stopped:")]
    assert "has no " in sentence and "PIP_FIND_LINKS" in sentence, sentence
    assert ".venv was removed" in sentence
    assert not (root / ".venv").exists(), "a half-built .venv was left behind"


@pytest.mark.slow
def test_torch_missing_from_every_source_shows_both_attempts(tmp_path):
    """The CPU path's torch: the local wheel folder is tried first and its answer is shown when the index fails too.
    A .venv that existed before is kept (without its stamp, so the next `make` installs again)."""
    root = copy_setup(tmp_path)
    (root / "requirements-cpu.txt").write_text("# nothing but torch is missing in this test\n")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(root / ".venv")], check=True)
    (root / ".venv" / ".course-installed-cpu").touch()
    empty = (tmp_path / "empty-index").as_uri()
    done = subprocess.run(
        [sys.executable, "tools/setup_venv.py", "--torch", "cpu", "--venv", ".venv", "--cpu-index", empty],
        cwd=root,
        env=offline_env(tmp_path, PIP_FIND_LINKS=str(wheels)),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = done.stdout + done.stderr
    if sys.platform != "linux":
        pytest.skip("the CPU build's own path is Linux's")
    assert done.returncode == 1, output
    assert "The local wheel folder's attempt said:" in output
    assert output.count("No matching distribution found for torch==") == 2, output
    (sentence,) = [line for line in output.splitlines() if line.startswith("*** Setup stopped:")]
    assert "torch==" in sentence and "+cpu" in sentence and empty in sentence, sentence
    assert "TORCH_CPU_INDEX" in sentence, "the CPU index is make's TORCH_CPU_INDEX, not PIP_INDEX_URL"
    assert "is kept, perhaps incomplete" in sentence
    assert (root / ".venv" / "bin" / "python").exists()
    assert not list((root / ".venv").glob(".course-installed-*")), "the stamp must go, so that make retries"


def test_the_sentence_names_the_machine_when_no_wheel_exists_for_it(monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import setup_venv
    finally:
        sys.path.pop(0)
    pip_said = "ERROR: No matching distribution found for torch==2.13.0+cpu\n"
    monkeypatch.setattr(setup_venv, "wheels_published_for_this_machine", lambda: False)
    monkeypatch.setattr(setup_venv, "machine", lambda: "CPython 3.12.1 on Linux x86_64 without glibc")
    sentence = setup_venv.explain(pip_said, "https://download.pytorch.org/whl/cpu")
    assert sentence.startswith("no wheel of torch==2.13.0+cpu (https://download.pytorch.org/whl/cpu) fits")
    assert "without glibc" in sentence and "PYTHON=python3.12" in sentence
    offline = "WARNING: Retrying ... after connection broken by 'NewConnectionError(...)'\n" + pip_said
    assert "could not reach the package index" in setup_venv.explain(offline, None)
    assert "the error shown above" in setup_venv.explain("ERROR: something else\n", None)


@pytest.mark.slow
def test_a_folder_found_there_is_never_removed(tmp_path):
    """A .venv folder that existed before the run (even without a Python in it) is not the run's to delete."""
    root = copy_setup(tmp_path)
    (root / "requirements-cpu.txt").write_text("# nothing but torch is missing in this test\n")
    (root / ".venv").mkdir()
    (root / ".venv" / "notes.txt").write_text("a learner's file\n")
    done = subprocess.run(
        [sys.executable, "tools/setup_venv.py", "--torch", "cpu", "--venv", ".venv"],
        cwd=root,
        env=offline_env(tmp_path, PIP_FIND_LINKS=str(tmp_path / "no-wheels-here")),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert (root / ".venv" / "notes.txt").read_text() == "a learner's file\n"
