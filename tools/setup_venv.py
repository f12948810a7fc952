"""Build .venv from the lock, and when that fails, say in one sentence what is missing and leave no broken .venv.

`make` runs it (after tools/check_python.py) with the Python that creates the venv:

    python tools/setup_venv.py --torch cpu|cuda [--detected] [--venv .venv] [--cpu-index URL]

The steps: create the venv; when the torch build changes, remove the old torch (pip would keep 2.13.0+cpu for
==2.13.0); install the lock with every file checked against its hash (requirements.txt, or on the Linux CPU path
requirements-cpu.txt and then torch's CPU build, from a local wheel folder when pip is configured with one, else from
PyTorch's CPU index); install course_utils, editable; `pip check`; record the build in .venv/.torch.

When pip fails, its own output has already been shown in full (nothing is hidden, the local-wheel attempt included),
and one sentence follows that names what was missing (a package with no wheel for this Python and platform, or an
index that could not be reached) and how to fix it. A venv this run created is removed; an older one is kept without
its stamp, so the next `make` tries again.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
NETWORK_ERRORS = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Could not fetch URL|ProxyError|"
    r"Temporary failure in name resolution|Name or service not known|ConnectTimeout|ReadTimeout|SSLError"
)
MISSING = re.compile(r"No matching distribution found for (\S+)")


class SetupFailed(Exception):
    """pip failed; the message is the one sentence for the learner."""


def machine() -> str:
    """This interpreter and platform in words, with what decides which wheels fit (free-threading, the C library)."""
    words = f"{platform.python_implementation()} {platform.python_version()}"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        words += " (free-threaded)"
    words += f" on {platform.system()} {platform.machine()}"
    if platform.system() == "Linux" and platform.libc_ver()[0] != "glibc":
        words += " without glibc"
    return words


def wheels_published_for_this_machine() -> bool:
    """Whether PyPI (and PyTorch's CPU index) publish a wheel of every locked package for this machine: CPython
    3.11-3.13 with the GIL, on glibc Linux x86_64/aarch64 or macOS arm64 (tests/test_lock.py checks the lock)."""
    system, arch = platform.system(), platform.machine()
    return (
        platform.python_implementation() == "CPython"
        and (3, 11) <= sys.version_info[:2] < (3, 14)
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
        and (
            (system == "Linux" and arch in ("x86_64", "aarch64") and platform.libc_ver()[0] == "glibc")
            or (system == "Darwin" and arch == "arm64")
        )
    )


def explain(output: str, index: str | None) -> str:
    """One sentence from pip's output: what was missing and how to fix it."""
    where = f" ({index})" if index else ""
    missing = MISSING.findall(output)
    if NETWORK_ERRORS.search(output):
        what = f"{missing[-1]} " if missing else "the packages "
        return (
            f"pip could not download {what}because it could not reach the package index{where} (no network, or "
            "a proxy that needs HTTPS_PROXY): connect and run the same command again, or point PIP_FIND_LINKS at "
            "a folder of wheels (an offline training room's wheelhouse)."
        )
    if missing and not wheels_published_for_this_machine():
        return (
            f"no wheel of {missing[-1]}{where} fits this machine ({machine()}): the course supports CPython "
            "3.11-3.13 on Linux x86_64 or aarch64 and macOS on Apple silicon, so run the same command with such a "
            "Python (e.g. `make lab PYTHON=python3.12`), or point PIP_FIND_LINKS at a folder holding that wheel."
        )
    if missing and index and "+cpu" in missing[-1]:
        return (
            f"{index} has no {missing[-1]} for this machine ({machine()}): check that the address is PyTorch's CPU "
            "wheel index (make's TORCH_CPU_INDEX), or point PIP_FIND_LINKS at a folder holding that wheel, and run "
            "the same command again."
        )
    if missing:
        return (
            f"the package index{where or ' pip is configured with'} has no {missing[-1]} for this machine "
            f"({machine()}), though PyPI publishes one: check PIP_INDEX_URL and `pip config list` (a mirror that "
            "lacks it), or point PIP_FIND_LINKS at a folder holding that wheel, and run the same command again."
        )
    return f"pip stopped with the error shown above ({machine()}); fix that and run the same command again."


def pip(venv: Path, *args: str, index: str | None = None, echo: bool = True) -> str:
    """Run the venv's pip with its output shown as it comes (unless echo=False) and returned; SetupFailed on error."""
    command = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", *args]
    print("+ pip " + " ".join(args), flush=True)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in process.stdout:
        lines.append(line)
        if echo:
            sys.stdout.write(line)
            sys.stdout.flush()
    output = "".join(lines)
    if process.wait() != 0:
        raise SetupFailed(explain(output, index), output)
    return output


def local_wheels_configured(venv: Path) -> bool:
    """Whether pip is pointed at a local wheel folder (PIP_FIND_LINKS, or find-links in a pip configuration)."""
    if os.environ.get("PIP_FIND_LINKS", "").strip():
        return True
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    return "find-links" in found


def install_torch_cpu(venv: Path, version: str, cpu_index: str) -> None:
    """torch's CPU build: from the local wheel folder first (when one is configured), else from PyTorch's index.
    The local attempt's output is kept, and shown when the index fails too."""
    wanted = f"torch=={version}+cpu"
    first = ""
    if local_wheels_configured(venv):
        try:
            pip(venv, "install", "--quiet", "--no-deps", "--no-index", wanted, echo=False)
            return
        except SetupFailed as failed:
            first = failed.args[1]
            print(f"(no {wanted} in the local wheel folder; trying {cpu_index})")
    try:
        pip(venv, "install", "--quiet", "--no-deps", "--index-url", cpu_index, wanted, index=cpu_index)
    except SetupFailed:
        if first:
            print("The local wheel folder's attempt said:\n" + first)
        raise


def torch_version(requirements: Path) -> str:
    return re.search(r"^torch==([^ ;]+)", requirements.read_text(), re.M).group(1)


def setup(venv: Path, build: str, cpu_index: str) -> None:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    marker = venv / ".torch"
    if marker.exists() and marker.read_text().strip() not in (build, "default" if build == "cuda" else build):
        print(f"switching torch to the '{build}' build")
        subprocess.run([str(python), "-m", "pip", "uninstall", "--yes", "--quiet", "torch"], check=False)
    for stamp in venv.glob(".course-installed-*"):
        stamp.unlink()
    if build == "cpu" and platform.system() == "Linux":
        pip(venv, "install", "--quiet", "--require-hashes", "-r", str(ROOT / "requirements-cpu.txt"))
        install_torch_cpu(venv, torch_version(ROOT / "requirements.txt"), cpu_index)
    else:
        pip(venv, "install", "--quiet", "--require-hashes", "-r", str(ROOT / "requirements.txt"))
    pip(venv, "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", str(ROOT))
    pip(venv, "check")
    marker.write_text(build + "\n")


def announce(build: str) -> None:
    """The one line `make` prints when it chose the build itself (TORCH=auto, the default on a fresh .venv)."""
    if platform.system() != "Linux":
        return
    if build == "cpu":
        print(
            "No NVIDIA driver on this machine: installing PyTorch's CPU-only build (the README's table gives its "
            "size); `TORCH=cuda` installs the CUDA build instead."
        )
    else:
        print(
            "NVIDIA driver found: installing PyTorch's CUDA build (the README's table gives its size); "
            "`TORCH=cpu` installs the CPU-only build instead."
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch", choices=["cpu", "cuda"], required=True, help="the PyTorch build")
    parser.add_argument("--detected", action="store_true", help="the build was detected: say so in one line")
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv")
    parser.add_argument("--cpu-index", default=CPU_INDEX)
    args = parser.parse_args(argv)
    if args.detected:
        announce(args.torch)
    created = not args.venv.exists()  # only a folder this run makes is removed on failure, never one found here
    try:
        setup(args.venv, args.torch, args.cpu_index)
    except (SetupFailed, subprocess.CalledProcessError, KeyboardInterrupt) as failed:
        if isinstance(failed, SetupFailed):
            sentence = failed.args[0]
        elif isinstance(failed, KeyboardInterrupt):
            sentence = "interrupted"
        else:
            sentence = f"`{' '.join(map(str, failed.cmd))}` failed with the error shown above"
        if created:
            shutil.rmtree(args.venv, ignore_errors=True)
            left = f"{args.venv.name} was removed, so nothing half-built is left"
        else:
            left = f"{args.venv.name} is kept, perhaps incomplete, and the next `make` installs again"
        print(f"\n*** Setup stopped: {sentence} ({left}.)\n", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
