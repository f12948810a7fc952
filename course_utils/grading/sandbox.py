"""Each submission's kernel in a sandbox of its own: bubblewrap (`bwrap`) on Linux.

A submitted notebook is code, and the grader runs it. Without a sandbox it runs as the instructor: it can read
other learners' notebooks, rewrite the gradebook once the grader has written it, or leave a process behind that
does so later. In the sandbox the kernel (and everything it starts) sees:

    /                    read-only: the course, its venv and the Python it runs are there, nothing is writable
    /tmp, /run, $HOME    empty (a private tmpfs each); the course and its Python are put back, read-only, when
                         they live there (a clone in /tmp, a venv in the home folder)
    the grader's files   hidden: the gradebook, its state file, the feedback folder, the log, the submissions
    its own folder       writable: the copy of the submission it runs in, and the grader's request/answer files

with no network (a network namespace of its own, only a loopback), a PID namespace of its own (it sees its own
processes only, and cannot signal the grader's), and `--die-with-parent`: when the grader shuts the kernel down,
the namespace's first process dies and the Linux kernel kills every process left in it, detached ones included,
before the submission's row is written. The grader talks to the kernel over Unix sockets in the writable folder
(Jupyter's "ipc" transport), since the sandbox has no network to share with it.

Where bubblewrap cannot run (macOS, Windows, a Linux without user namespaces) `available()` says why, and the
grader refuses to run unless the instructor passes `--no-sandbox` (docs/grading.md says what is then at risk).
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_client.manager import AsyncKernelManager

COURSE_ROOT = Path(__file__).resolve().parents[2]
EMPTIED = ("/tmp", "/run", "/var/run", "/dev/shm")  # sockets live here: a read-only socket still connects


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(True, "") when bubblewrap runs here, else (False, why not): tried once, with the flags the grader uses."""
    if not sys.platform.startswith("linux"):
        return False, f"bubblewrap runs on Linux only (this is {sys.platform})"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bubblewrap (bwrap) is not installed: `make sandbox-deps`, or `apt-get install bubblewrap`"
    try:
        probe = subprocess.run(
            [bwrap, *_isolation(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap could not start ({type(exc).__name__}: {exc})"
    if probe.returncode != 0:
        message = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        return False, f"bubblewrap cannot create namespaces here ({message[:200]}); are user namespaces disabled?"
    return True, ""


def _isolation() -> list[str]:
    return ["--unshare-all", "--die-with-parent", "--new-session"]


def essential_paths() -> list[Path]:
    """What the kernel must be able to read: the course, the venv, the Python it was made from, site-packages."""
    paths = {COURSE_ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    paths.add(Path(os.path.realpath(sys.executable)).parent.parent)
    for folder in [*site.getsitepackages(), site.getusersitepackages()]:
        paths.add(Path(folder))
    return sorted({Path(os.path.realpath(p)) for p in paths if Path(p).exists()})


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class Sandbox:
    """The bubblewrap command line that runs one kernel: `writable` is its own folder (created by the grader),
    `hidden` the grader's files and folders that it must not see (those that do not exist yet are not
    writable in it anyway)."""

    def __init__(self, writable: Path, hidden: Iterable[str | Path] = ()) -> None:
        self.writable = Path(os.path.realpath(writable))
        self.hidden = [Path(os.path.realpath(p)) for p in hidden]

    def prefix(self) -> list[str]:
        essentials = essential_paths()
        args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        emptied = [Path(p) for p in EMPTIED if Path(p).is_dir() and not Path(p).is_symlink()]
        home = Path(os.path.realpath(Path.home()))
        if home != Path("/") and home.is_dir():
            emptied.append(home)
        emptied = [e for e in emptied if not any(_inside(e, other) for other in emptied if other != e)]
        for folder in emptied:
            args += ["--tmpfs", str(folder)]
        for path in essentials:  # put back what the kernel needs, read-only, where an emptied folder held it
            if any(_inside(path, folder) for folder in emptied):
                args += ["--ro-bind", str(path), str(path)]
        for path in self.hidden:
            if (
                not path.exists()
                or any(_inside(path, folder) for folder in emptied)
                and not any(_inside(path, e) for e in essentials)
            ):
                continue  # gone with its emptied folder, or not there to be seen
            if path.is_dir() and not any(_inside(e, path) for e in essentials):
                args += ["--tmpfs", str(path)]
            elif path.is_file():
                args += ["--ro-bind", "/dev/null", str(path)]
        args += ["--bind", str(self.writable), str(self.writable)]
        # ipykernel exits when its parent looks gone (parent pid 1); in the namespace the parent *is* pid 1
        args += [*_isolation(), "--setenv", "JPY_PARENT_PID", "1", "--"]
        return args


def kernel_manager(sandbox: Sandbox | None, io_folder: Path, **kwargs: Any) -> AsyncKernelManager:
    """A Jupyter kernel manager that starts the kernel inside `sandbox` (None: as a plain process, over TCP)."""
    from jupyter_client.manager import AsyncKernelManager

    if sandbox is None:
        return AsyncKernelManager(**kwargs)
    prefix = sandbox.prefix  # bwrap's arguments, made when the kernel starts

    class SandboxedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            command = super().format_kernel_cmd(extra_arguments)
            return [shutil.which("bwrap") or "bwrap", *prefix()[1:], *command]

    return SandboxedKernelManager(
        transport="ipc", ip=str(io_folder / "kernel"), connection_file=str(io_folder / "kernel.json"), **kwargs
    )
