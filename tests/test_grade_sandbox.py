"""The grader's sandbox (course_utils/grading/sandbox.py) against submissions that attack the grader, not the checks.

Each attack is a learner of its own, with honest exercise code, so that a row shows whether the attack worked:
- `snooper` reads another learner's notebook and the gradebook, writes into the course, connects to a port that
  this test listens on, and looks for the grader's processes; it hands in wrong answers if any of that worked;
- `tamperer` starts a detached process that keeps trying, for a minute, to rewrite the gradebook and its state
  file and to kill the grader: it must be gone when the grader is done, and the gradebook untouched;
- `parent_killer` kills its kernel's parent: in the sandbox that is the namespace's first process, which the
  signal cannot kill.

Outside the sandbox (`--no-sandbox`, where bubblewrap cannot run), `parent_killer` kills the grader's worker
process: the pool is rebuilt and only its own row is lost. Without bubblewrap the grader refuses to run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_grade import EX01, HANDED_OUT, add_cell, read_rows, write

from course_utils.grading import sandbox

from conftest import ROOT, completed

REQUIRED = os.environ.get("COURSE_REQUIRE_SANDBOX") == "1"  # .ci/run: a missing bubblewrap fails, not skips
AVAILABLE, WHY = sandbox.available()
needs_sandbox = pytest.mark.skipif(
    not AVAILABLE and not REQUIRED, reason=f"no sandbox here ({WHY}); `make sandbox-deps` installs bubblewrap"
)

SNOOPER = """\
import os, pathlib, socket
LEAKS = []
def _probe(name, action):
    try:
        if action():
            LEAKS.append(name)
    except Exception:
        pass
_probe("another learner's notebook", lambda: len(pathlib.Path({other!r}).read_bytes()) > 0)
_probe("the gradebook", lambda: "secret" in pathlib.Path({gradebook!r}).read_text())
_probe("the grading folder", lambda: len(os.listdir({gradebook_folder!r})) > 0)
_probe("the course, written", lambda: pathlib.Path({course!r}, "sandbox-leak.txt").write_text("x") > 0)
_probe("the network", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2) is not None)
_probe("the grader's processes", lambda: any(
    b"course_utils.grade" in pathlib.Path("/proc", p, "cmdline").read_bytes()
    for p in os.listdir("/proc") if p.isdigit()))
print("leaks:", LEAKS)
"""

WRONG_IF_LEAKED = """\
_honest_layer_norm = layer_norm
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return x * 0 if LEAKS else _honest_layer_norm(x, gamma, beta, eps)
"""

TAMPERER = """\
import subprocess, sys, os
subprocess.Popen([sys.executable, "-c", {code!r}, {marker!r}], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""

TAMPERING = """\
import os, signal, time
end = time.time() + 60
while time.time() < end:
    for path, text in (({gradebook!r}, "learner,total\\ntamperer,5\\n"), ({state!r}, '{{"path": "forged"}}\\n')):
        try:
            with open(path, "a") as f:
                f.write(text)
        except OSError:
            pass
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and b"course_utils.grade" in open(f"/proc/{{p}}/cmdline", "rb").read():
                os.kill(int(p), signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.1)
"""

PARENT_KILLER = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"


def run_grader(*args, cwd: Path, env=None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "course_utils.grade", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def alive(marker: str) -> list[str]:
    """The processes whose command line contains `marker`."""
    found = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and marker.encode() in Path("/proc", p, "cmdline").read_bytes():
                found.append(p)
        except OSError:
            pass
    return found


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("sandboxed")
    subs, out = root / "subs", root / "out"
    out.mkdir()
    gradebook, state = out / "grades.csv", out / "grades.state.jsonl"
    gradebook.write_text("secret: last term's grades\n")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    marker = f"course-sandbox-tamperer-{uuid.uuid4().hex}"
    write(completed(EX01), subs / "honest" / HANDED_OUT)
    snooper = add_cell(
        completed(EX01),
        SNOOPER.format(
            other=str(subs / "honest" / HANDED_OUT),
            gradebook=str(gradebook),
            gradebook_folder=str(out),
            course=str(ROOT),
            port=listener.getsockname()[1],
        ),
        at=1,
    )
    write(add_cell(snooper, WRONG_IF_LEAKED), subs / "snooper" / HANDED_OUT)
    code = TAMPERING.format(gradebook=str(gradebook), state=str(state))
    write(add_cell(completed(EX01), TAMPERER.format(code=code, marker=marker), at=1), subs / "tamperer" / HANDED_OUT)
    write(add_cell(completed(EX01), PARENT_KILLER, at=5), subs / "parent_killer" / HANDED_OUT)
    proc = run_grader("subs", "--out", gradebook, "--jobs", 2, "--seed", 4242, cwd=root)
    left = alive(marker)
    connected = []
    try:
        connected.append(listener.accept())
    except BlockingIOError:
        pass
    listener.close()
    time.sleep(1)  # a survivor would tamper now
    return {
        "proc": proc,
        "rows": read_rows(gradebook) if proc.returncode == 0 else {},
        "gradebook": gradebook,
        "state": state,
        "left": left,
        "connected": connected,
    }


@needs_sandbox
def test_the_sandbox_runs_here_where_it_is_required():
    assert AVAILABLE, WHY


@needs_sandbox
def test_a_snooping_submission_sees_nothing_of_the_grader_or_the_other_learners(attacked):
    assert attacked["proc"].returncode == 0, attacked["proc"].stderr[-3000:]
    row = attacked["rows"]["snooper"]
    assert (row["status"], row["total"]) == ("graded", "5"), row
    assert not attacked["connected"]
    assert not (ROOT / "sandbox-leak.txt").exists()


@needs_sandbox
def test_a_detached_process_is_gone_before_the_gradebook_is_written(attacked):
    assert attacked["proc"].returncode == 0, attacked["proc"].stderr[-3000:]
    assert attacked["left"] == []
    rows = attacked["rows"]
    assert {learner: (r["status"], r["total"]) for learner, r in rows.items() if learner != "parent_killer"} == {
        "honest": ("graded", "5"),
        "snooper": ("graded", "5"),
        "tamperer": ("graded", "5"),
    }
    text = attacked["gradebook"].read_text()
    assert "tamperer,5\n" not in text and "secret" not in text
    assert "forged" not in attacked["state"].read_text()


@needs_sandbox
def test_killing_the_kernels_parent_reaches_nothing(attacked):
    """In the sandbox the kernel's parent is the namespace's first process, which ignores a SIGKILL sent from
    inside: the notebook runs on, its honest functions get their points, and the grader never notices."""
    row = attacked["rows"]["parent_killer"]
    assert (row["status"], row["total"]) == ("graded", "5"), row


@pytest.mark.skipif(sys.platform != "linux", reason="the attack is a Linux signal to the grader's process")
def test_without_the_sandbox_a_killed_worker_costs_only_its_own_row(tmp_path):
    """--no-sandbox: the notebook's kernel is a child of the grader's worker process, and this kills it."""
    for learner in ("honest1", "honest2", "honest3"):
        write(completed(EX01), tmp_path / "subs" / learner / HANDED_OUT)
    write(add_cell(completed(EX01), PARENT_KILLER, at=5), tmp_path / "subs" / "parent_killer" / HANDED_OUT)
    proc = run_grader("subs", "--out", "grades.csv", "--jobs", 2, "--seed", 4242, "--no-sandbox", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_rows(tmp_path / "grades.csv")
    assert {learner: (r["status"], r["total"]) for learner, r in rows.items()} == {
        "honest1": ("graded", "5"),
        "honest2": ("graded", "5"),
        "honest3": ("graded", "5"),
        "parent_killer": ("kernel-died", "0"),
    }
    assert "killed" in rows["parent_killer"]["reason"]
    with open(tmp_path / "grades.state.jsonl", encoding="utf-8") as f:  # its row is kept: a rerun repeats nothing
        assert sum("parent_killer/" in line and '"kernel-died"' in line for line in f) == 1


def test_without_bubblewrap_the_grader_refuses_unless_told(tmp_path):
    write(completed(EX01), tmp_path / "subs" / "honest" / HANDED_OUT)
    env = dict(os.environ, PATH=str(tmp_path / "no-such-folder"))
    proc = run_grader("subs", "--out", "grades.csv", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "--no-sandbox" in proc.stderr and "sandbox" in proc.stderr
    assert not (tmp_path / "grades.csv").exists()


def test_the_sandbox_hides_the_graders_files_and_empties_tmp(tmp_path):
    """The command line itself: read-only root, emptied /tmp, the grader's files hidden, its own folder writable."""
    own = tmp_path / "own"
    own.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "grades.csv").write_text("x")
    args = sandbox.Sandbox(own, hidden=[out, out / "grades.csv", ROOT / "grades.csv"]).prefix()
    text = " ".join(args)
    assert args[:5] == ["bwrap", "--ro-bind", "/", "/", "--dev"]
    assert "--tmpfs /tmp" in text and f"--bind {own.resolve()} {own.resolve()}" in text
    assert "--unshare-all" in args and "--die-with-parent" in args
    if not str(tmp_path.resolve()).startswith("/tmp/"):
        assert f"--tmpfs {out.resolve()}" in text
    assert f"--tmpfs {ROOT}" not in text  # the course itself is never emptied, only read-only
    for essential in sandbox.essential_paths():  # put back where an emptied folder held it
        if str(essential).startswith("/tmp/"):
            assert f"--ro-bind {essential} {essential}" in text
