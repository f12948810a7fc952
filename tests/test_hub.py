"""A training room in miniature: a real JupyterHub, an nbgitpuller link, three learners in Chromium, and a fix
pushed by the instructor in the middle of the session.

Instructor-led sessions serve the course from JupyterHub, and learners get the course by clicking an nbgitpuller
link. This test runs that, end to end, on 127.0.0.1:

  * the course remote: a bare git repository in a temporary folder, made from what a learner needs (chapters/,
    exercises/ and the Japanese edition's ja/chapters/ and ja/exercises/; course_utils comes from the venv);
  * JupyterHub (locked in the venv) behind configurable-http-proxy (locked in tools/hub/package-lock.json,
    installed into tools/hub/node_modules by `npm ci` when missing), configured by tools/hub/jupyterhub_config.py:
    a shared password, one local process per learner with a home folder of its own, and the venv's
    `jupyterhub-singleuser` (JupyterLab) with the nbgitpuller server extension;
  * three learners, each in a browser context of their own: open the link, log in (one mistypes the password
    first and is turned away), wait while the hub starts their server and nbgitpuller clones the course, land
    in chapter 00, open exercises/ex01_layernorm.ipynb, run its first check blank (⏳), type their own answer
    into the first task's cell, run the check again (✅, or ❌ for the learner who typed a known mistake) and save;
  * the instructor pushes one commit that touches another exercise (ex02), another cell of ex01 (Task 4's text)
    and the very lines of ex01 that every learner rewrote (the first task's stub);
  * each learner opens the link again and must find what nbgitpuller's documentation ("Automatic Merging
    Behavior", cases 1 to 3) promises, no more: the fix in the file they did not touch (case 1), the fix in the
    other cell of the file they edited (case 2), and their own answer, untouched, where the instructor changed
    the same lines (case 3: "we always keep the student's changes").

Screenshots land in artifacts/screenshots/hub-*.png (git-ignored). It runs with the browser suite (markers
`browser` and `slow`) under the same rules: COURSE_SKIP_BROWSER=1 skips it; without Chromium, Node.js/npm or git
it is skipped with the reason, except where the browser suite is required (COURSE_REQUIRE_BROWSER=1 as in
.ci/run, or CI=true): there it fails.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_browser import MISTAKES, first_task

import browser_support as bs
from conftest import ROOT

HUB_TOOLS = ROOT / "tools" / "hub"
HUB_CONFIG = HUB_TOOLS / "jupyterhub_config.py"
PROXY = HUB_TOOLS / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = "normalization-workshop"  # the shared password (SharedPasswordAuthenticator wants 8 characters or more)
FOLDER = "normalization-course"  # the bare repository's name: nbgitpuller clones into a folder of that name
BRANCH = "main"
EXERCISE = ROOT / "exercises" / "ex01_layernorm.ipynb"
OTHER_EXERCISE = ROOT / "exercises" / "ex02_rmsnorm.ipynb"
WELCOME = ROOT / "chapters" / "00_welcome.ipynb"
LEARNER_FOLDERS = ("chapters", "exercises", "ja/chapters", "ja/exercises", "ja/.course_lang")
START_TIMEOUT = 240.0  # seconds for the hub to start, and for one learner's server to start and clone the course


# --------------------------------------------------------------------------------------------------
# can it run here?  The browser suite's rule, plus Node.js/npm (the proxy) and git (nbgitpuller)
# --------------------------------------------------------------------------------------------------
def missing_or_required(what: str) -> None:
    """Skip with `what` as the reason; fail instead where the browser suite is required (CI)."""
    required = bs.required_by()
    if required:
        pytest.fail(f"The JupyterHub test cannot run, and {required} requires it: {what}", pytrace=False)
    pytest.skip(what)


def pinned_proxy_version() -> str:
    """The exact configurable-http-proxy version tools/hub/package.json asks for."""
    return json.loads((HUB_TOOLS / "package.json").read_text())["dependencies"]["configurable-http-proxy"]


def installed_proxy_version() -> str | None:
    path = HUB_TOOLS / "node_modules" / "configurable-http-proxy" / "package.json"
    return json.loads(path.read_text())["version"] if path.is_file() else None


def ensure_proxy() -> str:
    """configurable-http-proxy as locked: `npm ci` in tools/hub when it is missing or not the pinned version."""
    for tool in ("node", "npm", "git"):
        if not shutil.which(tool):
            missing_or_required(
                f"`{tool}` is not on PATH. The JupyterHub test needs Node.js and npm (for configurable-http-proxy) "
                "and git (for nbgitpuller): install them (Debian: apt-get install nodejs npm git)."
            )
    if installed_proxy_version() != pinned_proxy_version() or not PROXY.exists():
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--engine-strict"],
            cwd=HUB_TOOLS,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or installed_proxy_version() != pinned_proxy_version():
            missing_or_required(
                "`npm ci` in tools/hub could not install configurable-http-proxy "
                f"{pinned_proxy_version()} (is the npm registry reachable?):\n"
                f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
    return installed_proxy_version()


# --------------------------------------------------------------------------------------------------
# the course remote and the instructor's clone
# --------------------------------------------------------------------------------------------------
def git(*args, cwd: Path) -> str:
    """Run git with a fixed identity and none of this machine's personal git configuration."""
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", LANG="C")
    identity = [
        "-c",
        "user.name=Instructor",
        "-c",
        "user.email=instructor@example.org",
        "-c",
        "init.defaultBranch=main",
    ]
    done = subprocess.run(["git", *identity, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)} failed:\n{done.stdout}{done.stderr}"
    return done.stdout


def make_course_remote(workdir: Path) -> tuple[Path, Path]:
    """A bare repository `<workdir>/remote/normalization-course` holding this working tree's learner files,
    and the instructor's clone of it (for pushing a fix later)."""
    source = workdir / "source"
    for name in LEARNER_FOLDERS:
        src, dst = ROOT / name, source / name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        elif src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)
    git("init", "-q", "-b", BRANCH, cwd=source)
    git("add", "-A", cwd=source)
    git("commit", "-q", "-m", "The course, as the learners get it", cwd=source)
    remote = workdir / "remote" / FOLDER
    remote.parent.mkdir()
    git("clone", "-q", "--bare", str(source), str(remote), cwd=workdir)
    instructor = workdir / "instructor"
    git("clone", "-q", remote.as_uri(), str(instructor), cwd=workdir)
    return remote, instructor


def edit_cell(path: Path, cell_id: str, edit) -> str:
    """Rewrite one cell's source with `edit(source) -> source`, saved the way nbformat (and JupyterLab) saves."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    (cell,) = [c for c in nb.cells if c.id == cell_id]
    cell.source = edit(cell.source)
    nbformat.write(nb, path)
    return cell.source


def cell_source(path: Path, cell_id: str) -> str:
    import nbformat

    return next(c.source for c in nbformat.read(path, as_version=4).cells if c.id == cell_id)


@dataclass
class Fix:
    """What the instructor pushes in the middle of the session, and the cells it changes."""

    other_file: str  # ex02's first cell, as pushed (a file no learner touched: case 1)
    other_cell: str  # ex01's Task 4 text, as pushed (the learners' file, another cell: case 2)
    same_lines: str  # ex01's first task's stub, as pushed (the lines every learner rewrote: case 3)


def push_fix(instructor: Path, answer_cell: str, other_cell: str) -> Fix:
    """One commit, pushed to the course remote: a note in ex02, a note in ex01's Task 4, a reworded stub comment."""
    note = "\n\nInstructor's fix, pushed during the session: {}."
    ex01 = instructor / EXERCISE.relative_to(ROOT)
    ex02 = instructor / OTHER_EXERCISE.relative_to(ROOT)
    first = next(c["id"] for c in json.loads(ex02.read_text())["cells"])
    fix = Fix(
        other_file=edit_cell(ex02, first, lambda s: s + note.format("ex02")),
        other_cell=edit_cell(ex01, other_cell, lambda s: s + note.format("ex01, Task 4")),
        same_lines=edit_cell(
            ex01, answer_cell, lambda s: s.replace("# YOUR CODE HERE", "# YOUR CODE HERE (return Python floats)")
        ),
    )
    changed = git("status", "--porcelain", cwd=instructor).split()
    assert sorted(changed[1::2]) == sorted(p.relative_to(instructor).as_posix() for p in (ex01, ex02)), changed
    git("commit", "-q", "-am", "Fix the exercises during the session", cwd=instructor)
    git("push", "-q", "origin", BRANCH, cwd=instructor)
    return fix


# --------------------------------------------------------------------------------------------------
# the hub
# --------------------------------------------------------------------------------------------------
class Hub:
    """`jupyterhub -f tools/hub/jupyterhub_config.py` on free loopback ports, its state in `workdir`."""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
        self.log_path = self.workdir / "jupyterhub.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def home(self, user: str) -> Path:
        return self.workdir / "home" / user

    def prepare_home(self, user: str) -> None:
        """The learner's JupyterLab settings: no news toast over the notebook (as in the browser suite)."""
        for rel, values in bs.LAB_SETTINGS.items():
            path = self.home(user) / ".jupyter" / "lab" / "user-settings" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))

    def start(self) -> "Hub":
        for _attempt in range(3):  # a free port can be taken between asking and binding: try others
            ports = set()
            while len(ports) < 3:
                ports.add(bs.free_port())
            self.port, api, proxy_api = sorted(ports)
            env = dict(
                os.environ,
                COURSE_HUB_STATE=str(self.workdir),
                COURSE_HUB_PORT=str(self.port),
                COURSE_HUB_API_PORT=str(api),
                COURSE_PROXY_API_PORT=str(proxy_api),
                COURSE_HUB_PASSWORD=PASSWORD,
            )
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "jupyterhub", "-f", str(HUB_CONFIG)],
                    cwd=self.workdir,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            if self._wait_ready(START_TIMEOUT):
                return self
            self.stop()
        raise RuntimeError(f"JupyterHub did not start; its log:\n{self.log()}")

    def _wait_ready(self, timeout: float) -> bool:
        """Ready when the hub answers through the proxy (so both run)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/hub/api", timeout=5) as r:
                    if r.status == 200 and "version" in json.loads(r.read()):
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                pass
            time.sleep(0.5)
        return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-8000:] if self.log_path.exists() else ""

    def stop(self) -> None:
        """SIGTERM: the hub stops every learner's server and the proxy (cleanup_servers, cleanup_proxy)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        # A hub that stopped cleanly removed the proxy's pid file; one that was killed left its proxy running.
        # Stop that proxy, and only if the pid is still this test's proxy (a pid can be reused by then).
        pid_file = self.workdir / "proxy.pid"
        try:
            pid = int(pid_file.read_text().strip())
            if str(PROXY.parent) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass


def pull_link(hub: Hub, remote: Path, urlpath: str) -> str:
    """The link an instructor hands out (as nbgitpuller's link generator writes it, for a JupyterHub)."""
    query = urllib.parse.urlencode({"repo": remote.as_uri(), "branch": BRANCH, "urlpath": urlpath})
    return f"{hub.url}/hub/user-redirect/git-pull?{query}"


# --------------------------------------------------------------------------------------------------
# a learner
# --------------------------------------------------------------------------------------------------
@dataclass
class LearnerServer:
    """What bs.NotebookPage needs to know of a server: its URL and the folder it serves."""

    base_url: str
    course: Path


@dataclass
class Learner:
    name: str
    answer: str  # the code this learner types into the first task's cell
    verdict: str  # the check's first character they must see: ✅ or ❌
    mistypes_password: bool = False
    page: bs.NotebookPage | None = None
    seen: dict = field(default_factory=dict)


def follow_link(learner: Learner, link: str, hub: Hub, timeout_s: float = START_TIMEOUT) -> None:
    """Open the link; log in when asked; wait until nbgitpuller has synced and JupyterLab shows chapter 00."""
    page = learner.page.page
    page.goto(link, wait_until="domcontentloaded")
    if page.locator("#username_input").count():
        if learner.mistypes_password:
            page.fill("#username_input", learner.name)
            page.fill("#password_input", PASSWORD[::-1])
            page.click("#login_submit")
            error = page.locator(".login_error")
            error.wait_for(timeout=30_000)
            learner.seen["wrong password"] = " ".join((error.text_content() or "").split())
        page.fill("#username_input", learner.name)
        page.fill("#password_input", PASSWORD)
        page.click("#login_submit")
    # spawn-pending page -> nbgitpuller's page (clone or merge) -> JupyterLab, or nbgitpuller's error panel
    lab = re.compile(rf"/user/{learner.name}/lab/tree/{FOLDER}/chapters/00_welcome\.ipynb")
    deadline = time.monotonic() + timeout_s
    while not lab.search(page.url):
        failed = page.locator("#container-error:not(.hidden)")
        if failed.count():
            details = page.locator("#status-details").text_content() or ""
            raise AssertionError(f"nbgitpuller failed for {learner.name}:\n{details[-3000:]}")
        if time.monotonic() > deadline:
            text = page.locator("body").text_content() or ""
            raise TimeoutError(
                f"{learner.name} did not reach chapter 00 within {timeout_s:.0f} s; at {page.url}: "
                f"{' '.join(text.split())[:1000]}\nhub log:\n{hub.log()}"
            )
        page.wait_for_timeout(250)
    n_code = sum(c["cell_type"] == "code" for c in json.loads(WELCOME.read_text())["cells"])
    heading = json.loads(WELCOME.read_text())["cells"][0]["source"][0].lstrip("# ").strip()
    learner.page.wait_for(lambda s: len(s["prompts"]) == n_code, timeout_s, "chapter 00 to open")
    # the chapter's title, rendered (Markdown renders just after the cells attach)
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownOutput h1").filter(has_text=heading).first.wait_for(
        timeout=30_000
    )


def code_in_editor(learner: Learner, index: int) -> str:
    """The text of code cell `index` as the editor shows it (one line per CodeMirror line)."""
    lines = learner.page.code_cell(index).locator(".cm-content .cm-line")
    return "\n".join(line.text_content() or "" for line in lines.all())


def run_cell(nb: bs.NotebookPage, index: int, timeout_s: float = 120) -> str:
    """Run code cell `index` with Ctrl+Enter in its editor; return its output's text once it ran.

    Seen here, once in three runs on a busy 2-core machine: the keypress right after the notebook opened was lost
    (the prompt stayed as it was, the kernel idle, for minutes). A cell that did start shows [*]: at once, so
    pressing again when the prompt has not moved within seconds runs nothing twice."""
    before = nb.state()["prompts"][index]
    for _attempt in range(3):
        nb.dismiss_dialog()
        nb.code_cell(index).locator(".cm-content").first.click()
        nb.page.keyboard.press("Control+Enter")
        try:
            nb.wait_for(lambda s: s["prompts"][index] != before, 15, f"code cell {index} to start")
            break
        except TimeoutError:
            continue
    nb.wait_for(
        lambda s: re.fullmatch(r"\[\d+\]:", s["prompts"][index]) and s["prompts"][index] != before,
        timeout_s,
        f"code cell {index} to run",
    )
    nb.page.wait_for_timeout(200)  # the output lands just after the prompt changes
    return nb.code_cell(index).locator(".jp-Cell-outputArea").first.text_content() or ""


def do_the_exercise(learner: Learner, index: int) -> None:
    """Open ex01, run the first check blank (⏳), type the answer, run it and the check, save."""
    nb = learner.page
    nb.open()
    nb.command("Edit", "editmenu:clear-all")  # the stored prompts ([1]: ...) would hide a cell's run
    nb.wait_for(lambda s: all(p in ("[ ]:", "") for p in s["prompts"]), 30, "the outputs to clear")
    run_cell(nb, 0)  # the first cell: course_utils is installed on the hub, so it does nothing
    run_cell(nb, 1)  # the imports
    run_cell(nb, index)  # the task's stub, as it came: it raises NotImplementedError when called
    learner.seen["blank check"] = run_cell(nb, index + 1).strip()
    nb.replace_code(index, learner.answer)
    run_cell(nb, index)
    learner.seen["check"] = " ".join(run_cell(nb, index + 1).split())
    nb.page.keyboard.press("ControlOrMeta+s")
    saved = learner.page.server.course / FOLDER / EXERCISE.relative_to(ROOT)
    deadline = time.monotonic() + 30
    while cell_source(saved, answer_id()) != learner.answer:
        nb.dismiss_dialog()
        assert time.monotonic() < deadline, f"{learner.name}'s answer never reached the disk: Ctrl+S did not save"
        nb.page.wait_for_timeout(250)
    nb.screenshot(bs.SCREENSHOTS / f"hub-{learner.name}-ex01.png", focus_cell=index + 1)


def answer_id() -> str:
    """The id of ex01's first task cell (the cell every learner writes into)."""
    index, _, _ = first_task(EXERCISE)
    return [c for c in json.loads(EXERCISE.read_text())["cells"] if c["cell_type"] == "code"][index]["id"]


def task4_id() -> str:
    """The id of ex01's last markdown cell with a task heading (a cell no learner touches)."""
    cells = json.loads(EXERCISE.read_text())["cells"]
    return [c["id"] for c in cells if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## Task")][-1]


# --------------------------------------------------------------------------------------------------
# the test
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser_executable():
    return bs.require_browser_tools()


@pytest.fixture(scope="module")
def proxy_version(browser_executable):
    return ensure_proxy()


@pytest.fixture(scope="module")
def hub(proxy_version, tmp_path_factory):
    server = Hub(tmp_path_factory.mktemp("jupyterhub")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(hub, browser_executable):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=browser_executable, args=bs.CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


def learners() -> list[Learner]:
    """Three learners: two type the solution, one types the unbiased-variance mistake; each signs their code."""
    _, solution, _ = first_task(EXERCISE)
    solution = solution.rstrip("\n")
    old, new = MISTAKES["ex01"]
    assert "    # YOUR CODE HERE\n" not in solution and old in solution

    def signed(name, code):  # the learner's own line where the stub said "# YOUR CODE HERE"
        lines = code.split("\n")
        assert lines[0].startswith("def ") and lines[1].strip().startswith('"""'), lines[:2]
        return "\n".join(lines[:2] + [f"    # {name} wrote this"] + lines[2:])

    return [
        Learner("alice", signed("alice", solution), "✅", mistypes_password=True),
        Learner("bob", signed("bob", solution.replace(old, new)), "❌"),
        Learner("carol", signed("carol", solution), "✅"),
    ]


@pytest.mark.browser
@pytest.mark.slow
def test_three_learners_pull_the_course_and_keep_their_work_through_a_fix(hub, browser, tmp_path):
    remote, instructor = make_course_remote(tmp_path)
    link = pull_link(hub, remote, f"lab/tree/{FOLDER}/chapters/00_welcome.ipynb")
    index, _, _ = first_task(EXERCISE)
    relpath = f"{FOLDER}/{EXERCISE.relative_to(ROOT).as_posix()}"
    times = {}
    team = learners()
    try:
        # --- the session starts: each learner clicks the link and does the first task -------------------------
        for learner in team:
            start = time.monotonic()
            hub.prepare_home(learner.name)
            server = LearnerServer(f"{hub.url}/user/{learner.name}", hub.home(learner.name))
            learner.page = bs.NotebookPage(browser, server, relpath)
            follow_link(learner, link, hub)
            times[f"{learner.name}: link, login, spawn, clone"] = time.monotonic() - start
            do_the_exercise(learner, index)
            times[f"{learner.name}: total before the fix"] = time.monotonic() - start

        # --- the instructor pushes a fix -----------------------------------------------------------------------
        fix = push_fix(instructor, answer_id(), task4_id())

        # --- each learner clicks the link again --------------------------------------------------------------
        for learner in team:
            start = time.monotonic()
            follow_link(learner, link, hub)
            learner.page.open()  # ex01 again, as the learner sees it now
            learner.seen["answer in the editor"] = code_in_editor(learner, index)
            markdown = learner.page.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownOutput")
            learner.seen["ex01 text"] = " ".join(" ".join(m.text_content() or "" for m in markdown.all()).split())
            learner.page.screenshot(bs.SCREENSHOTS / f"hub-{learner.name}-after-fix.png", focus_cell=index)
            times[f"{learner.name}: link again"] = time.monotonic() - start
    except Exception:
        for learner in team:
            if learner.page is not None:
                bs.SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                learner.page.page.screenshot(path=str(bs.SCREENSHOTS / f"hub-{learner.name}-FAILED.png"))
        raise
    finally:
        for learner in team:
            if learner.page is not None:
                learner.page.close()
        print("\n".join(f"{what}: {seconds:.1f} s" for what, seconds in times.items()))

    for learner in team:
        home = hub.home(learner.name) / FOLDER
        ex01, ex02 = home / EXERCISE.relative_to(ROOT), home / OTHER_EXERCISE.relative_to(ROOT)
        seen = learner.seen
        if learner.mistypes_password:
            assert seen["wrong password"] == "Invalid username or password", seen
        assert seen["blank check"].startswith("⏳"), f"{learner.name}, the blank exercise's first check: {seen}"
        assert seen["check"].startswith(learner.verdict), f"{learner.name} typed {learner.answer!r} and saw {seen}"
        # case 1: a file the learner did not touch takes the instructor's version
        first = next(c["id"] for c in json.loads(ex02.read_text())["cells"])
        assert cell_source(ex02, first) == fix.other_file, f"{learner.name}: the fix to ex02 did not arrive"
        # case 2: another cell of the file the learner edited takes the instructor's change
        assert cell_source(ex01, task4_id()) == fix.other_cell, f"{learner.name}: the fix to ex01's Task 4 is missing"
        # case 3: where both changed the same lines, the learner's answer is kept, as the learner typed it
        assert cell_source(ex01, answer_id()) == learner.answer, f"{learner.name}'s answer was not kept"
        # ... and the learner sees both in JupyterLab
        assert seen["answer in the editor"] == learner.answer, f"{learner.name}'s editor shows {seen}"
        assert "Instructor's fix, pushed during the session: ex01, Task 4." in seen["ex01 text"], seen["ex01 text"]


# --------------------------------------------------------------------------------------------------
# the lock and the run / skip / fail rule (fast)
# --------------------------------------------------------------------------------------------------
def test_the_proxy_is_pinned_exactly_and_locked_with_integrity_hashes():
    """One exact configurable-http-proxy 5.x, the same in package.json and its lock, every package hashed, and
    node_modules kept out of git."""
    package = json.loads((HUB_TOOLS / "package.json").read_text())
    lock = json.loads((HUB_TOOLS / "package-lock.json").read_text())
    pin = pinned_proxy_version()
    assert re.fullmatch(r"5\.\d+\.\d+", pin), f"pin configurable-http-proxy to one exact 5.x version, not {pin!r}"
    assert list(package["dependencies"]) == ["configurable-http-proxy"]
    assert lock["packages"][""]["dependencies"] == package["dependencies"], "run `npm install` in tools/hub"
    assert lock["packages"]["node_modules/configurable-http-proxy"]["version"] == pin
    unhashed = [name for name, p in lock["packages"].items() if name and not p.get("integrity", "").startswith("sha")]
    assert not unhashed, f"locked without an integrity hash: {unhashed}"
    ignored = subprocess.run(["git", "check-ignore", "-q", "tools/hub/node_modules/x"], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "tools/hub/node_modules must be git-ignored"


def test_without_node_the_hub_test_skips_or_fails_where_required(tmp_path, monkeypatch):
    """No Node.js: a learner's `make test` skips the hub test with the reason; CI (or COURSE_REQUIRE_BROWSER=1)
    fails instead."""
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: no node, npm or git
    for var in ("CI", bs.REQUIRE_ENV):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(pytest.skip.Exception, match="`node` is not on PATH"):
        ensure_proxy()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true requires it: `node` is not on PATH"):
        ensure_proxy()
    monkeypatch.setenv(bs.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="COURSE_REQUIRE_BROWSER=1 requires it"):
        ensure_proxy()
