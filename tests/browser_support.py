"""Run the course the way a learner does: JupyterLab in a real (headless) Chromium or Google Chrome.

`tests/test_browser.py` uses three pieces from here:

* `find_browser()` is the one rule that finds Chromium or Chrome; `make browser-deps` asks the same rule
  through this file's command line (`python tests/browser_support.py --find`, `--check`), so the Makefile
  and the tests never disagree. `require_browser_tools()` turns its answer into run / skip / fail:
  a missing browser skips only the browser tests, with a loud banner, on a learner's machine; it fails
  where the browser is required (COURSE_REQUIRE_BROWSER=1, as .ci/run sets, or CI=true);
  COURSE_SKIP_BROWSER=1 skips on purpose.
* `LabServer` starts `jupyter lab --no-browser` on a free loopback port, without token or password, in a
  temporary copy of the course with its own Jupyter config, data, runtime and settings folders (so a
  learner's personal Jupyter set-up cannot change what the test sees).
* `NotebookPage` opens one notebook in Chromium through Playwright and does what a learner does: clear
  the outputs, Run -> Run All Cells, wait for the kernel, move every control, click every quiz button.

The browser is the learner's own (Debian's chromium, Google Chrome, ...): Playwright's own browser download
is neither needed nor used. This file imports only the standard library at the top, so any Python 3 can run
its command line before .venv exists.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "artifacts" / "screenshots"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STDERR_MIME = "application/vnd.jupyter.stderr"
# The plain-text fallbacks the course stores in place of a live widget (see course_utils.widgets and quiz):
# "[Controls: ...]" under a live figure, "[Answer box for question N ...]" under a check question, and the same
# in Japanese in ja/ (course_utils.i18n: the catalog's translations of these two messages).
# A bare ipywidgets repr (e.g. "FloatSlider(value=1.0, ...)") also means "a widget was displayed here".
FALLBACK_MESSAGES = (
    "[Controls: {names}. Run this cell in JupyterLab to move them; the figure above redraws.]",
    "[Answer box for question {number}: run this cell in JupyterLab to answer it.]",
)


def fallback_openings() -> list:
    """How each fallback message begins (up to its first placeholder), in every language of the course."""
    from course_utils import i18n

    openings = set()
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            openings.update(i18n._(message).split("{", 1)[0] for message in FALLBACK_MESSAGES)
    return sorted(openings)


FALLBACK_OPENING = "^(?:" + "|".join(re.escape(o) for o in fallback_openings()) + ")"
WIDGET_FALLBACK = re.compile(
    FALLBACK_OPENING + r"|^[A-Z]\w*(Slider|Box|Dropdown|Button|Buttons|Checkbox|Output|Text|interactive)\("
)


# --------------------------------------------------------------------------------------------------
# can the suite run here?  One rule, used by `make browser-deps` (through main() below) and the tests
# --------------------------------------------------------------------------------------------------
SKIP_ENV = "COURSE_SKIP_BROWSER"  # 1: skip the browser tests on purpose
CHROMIUM_ENV = "COURSE_CHROMIUM"  # a Chromium/Chrome binary (a path, or a name on PATH); nothing else is tried
REQUIRE_ENV = "COURSE_REQUIRE_BROWSER"  # 1: a missing browser fails (CI); 0: never required, even under CI=true
SEARCH_ROOT_ENV = "COURSE_BROWSER_SEARCH_ROOT"  # for this file's own tests: prefix of the fixed places below

# Looked for in this order (after COURSE_CHROMIUM): these names on PATH, then the fixed places (for a PATH that
# lacks them, e.g. under sudo or cron), then the macOS application bundles, system-wide and in ~/Applications.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
LINUX_PLACES = tuple(f"/usr/bin/{name}" for name in BROWSER_NAMES) + ("/snap/bin/chromium", "/opt/google/chrome/chrome")
MACOS_BUNDLES = (
    "Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "Applications/Chromium.app/Contents/MacOS/Chromium",
)
PROBE_TIMEOUT = 30.0  # seconds for `<browser> --version`; a cold Chrome start on a busy laptop takes a few

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def _flag(env, name: str) -> bool | None:
    """True / False when `name` is set to a yes / no word, None when unset or empty."""
    value = (env.get(name) or "").strip().lower()
    return True if value in TRUE_WORDS else False if value in FALSE_WORDS else None


def opted_out(env=None) -> bool:
    return bool(_flag(os.environ if env is None else env, SKIP_ENV))


def required_by(env=None) -> str | None:
    """Why a missing browser must fail (COURSE_REQUIRE_BROWSER=1, or CI=true), or None where a skip is allowed.

    CI=true (GitHub Actions, GitLab CI, Travis, CircleCI, ... set it) implies the requirement: nobody reads a
    banner in an unattended run, so a skip there is exactly the silent vanishing this rule exists to prevent.
    COURSE_REQUIRE_BROWSER=0 turns that off for a CI that has no browser on purpose."""
    env = os.environ if env is None else env
    explicit = _flag(env, REQUIRE_ENV)
    if explicit is not None:
        return f"{REQUIRE_ENV}=1" if explicit else None
    return f"CI={env.get('CI')}" if _flag(env, "CI") else None


def browser_candidates(env=None) -> list[str]:
    """Every place looked at, in order (COURSE_CHROMIUM aside), without duplicates."""
    env = os.environ if env is None else env
    root = env.get(SEARCH_ROOT_ENV) or "/"
    home = env.get("HOME") or os.path.expanduser("~")
    found = [shutil.which(name, path=env.get("PATH", os.defpath)) for name in BROWSER_NAMES]
    places = [os.path.join(root, p.lstrip("/")) for p in LINUX_PLACES]
    places += [os.path.join(root, p) for p in MACOS_BUNDLES] + [os.path.join(home, p) for p in MACOS_BUNDLES]
    out = []
    for path in found + places:
        if path and os.path.abspath(path) not in out:
            out.append(os.path.abspath(path))
    return out


def probe_browser(path: str, timeout: float = PROBE_TIMEOUT) -> tuple[bool, str]:
    """(works, version or reason): an executable file that answers `--version` (Ubuntu's chromium-browser
    without its snap is a script that only says to install the snap, and exits 1)."""
    if not os.path.isfile(path):
        return False, "no such file"
    if not os.access(path, os.X_OK):
        return False, "not executable"
    try:
        done = subprocess.run(
            [path, "--version"],
            check=False,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return False, f"`--version` did not answer within {timeout:.0f} s"
    except OSError as exc:
        return False, f"does not start: {exc}"
    said = " ".join((done.stdout + " " + done.stderr).split())
    if done.returncode != 0:
        return False, f"`--version` exited with {done.returncode}: {said[:200]}"
    return True, " ".join(done.stdout.split())[:120] or said[:120]  # stdout: Debian's wrapper warns on stderr


@dataclass
class BrowserSearch:
    path: str | None = None  # the browser to use, None when none works
    version: str = ""  # what it answered to --version
    named: str | None = None  # COURSE_CHROMIUM, when set (then it is the only candidate)
    looked_at: list = field(default_factory=list)
    rejected: list = field(default_factory=list)  # "path: why" for candidates that exist but do not work


def find_browser(env=None, probe=probe_browser) -> BrowserSearch:
    """The first working Chromium/Chrome: COURSE_CHROMIUM if set (and then only it), else `browser_candidates()`."""
    env = os.environ if env is None else env
    named = (env.get(CHROMIUM_ENV) or "").strip() or None
    search = BrowserSearch(named=named)
    if named:
        path = named if os.sep in named else (shutil.which(named, path=env.get("PATH", os.defpath)) or named)
        candidates = [os.path.abspath(path) if os.sep in path else path]
    else:
        candidates = browser_candidates(env)
    for path in candidates:
        search.looked_at.append(path)
        if not named and not os.path.isfile(path):
            continue
        works, answer = probe(path)
        if works:
            search.path, search.version = path, answer
            return search
        search.rejected.append(f"{path}: {answer}")
    return search


def chromium_path(env=None) -> str | None:
    """The browser the suite drives (None when there is none)."""
    return find_browser(env).path


RULE = "=" * 100


def missing_browser_banner(search: BrowserSearch, required: str | None) -> str:
    """What a person reads when no browser was found: what happens, how to fix it, how to silence it."""
    import textwrap

    if required:
        head = [
            f"BROWSER TESTS CANNOT RUN: no Chromium or Google Chrome was found, and {required} requires them.",
            "`make test` fails until one is installed (CI must never skip the browser tests). Fix it with one of:",
        ]
        tail = (
            [f"To skip them on purpose anyway: unset {REQUIRE_ENV} and set {SKIP_ENV}=1."]
            if required.startswith(REQUIRE_ENV)
            else [f"To skip them on purpose anyway: {SKIP_ENV}=1 make test (or {REQUIRE_ENV}=0 for a loud skip)."]
        )
    else:
        head = [
            "BROWSER TESTS SKIPPED: no Chromium or Google Chrome was found on this machine.",
            "Every other test still runs; only tests/test_browser.py (each chapter opened in JupyterLab in a",
            "real browser) is skipped. To run it, do one of:",
        ]
        tail = [f"To skip the browser tests on purpose and silence this message: {SKIP_ENV}=1 make test"]
    fixes = [
        "  * Debian:      sudo apt-get install chromium   (`make test` does it itself when run as root)",
        "  * Ubuntu:      sudo snap install chromium, or Google Chrome's .deb from https://www.google.com/chrome/",
        "  * macOS:       install Google Chrome (https://www.google.com/chrome/) into /Applications",
        f"  * any system:  {CHROMIUM_ENV}=/path/to/chromium-or-chrome make test",
    ]
    places = (
        ", ".join(BROWSER_NAMES)
        + " on PATH; "
        + ", ".join(LINUX_PLACES)
        + "; "
        + ", ".join("/" + p for p in MACOS_BUNDLES)
        + " (and the same under ~/Applications)."
    )
    looked = textwrap.wrap("Looked for: " + places, 98, subsequent_indent="  ", break_on_hyphens=False)
    broken = [f"Found but not working: {why}" for why in search.rejected]
    lines = head + fixes + looked + broken + tail
    return "\n".join([RULE] + [" " + line for line in lines] + [RULE])


@dataclass
class Verdict:
    action: str  # "run", "skip" or "fail"
    message: str  # for a person (the banner when the browser is missing)
    browser: str | None = None
    search: BrowserSearch | None = None


def browser_verdict(env=None, probe=probe_browser) -> Verdict:
    """Run, skip or fail the browser tests on this machine. Shared by `make browser-deps` and the tests."""
    env = os.environ if env is None else env
    required = required_by(env)
    if opted_out(env):
        if _flag(env, REQUIRE_ENV):
            return Verdict(
                "fail",
                f"{REQUIRE_ENV}=1 and {SKIP_ENV}=1 contradict each other: the browser tests "
                f"are required here (CI), so they cannot be skipped. Unset one of them.",
            )
        return Verdict("skip", f"the browser tests are skipped on purpose ({SKIP_ENV}={env.get(SKIP_ENV)})")
    search = find_browser(env, probe=probe)
    if search.path:
        return Verdict("run", f"using {search.path} ({search.version})", search.path, search)
    if search.named:
        return Verdict(
            "fail",
            f"{CHROMIUM_ENV}={search.named} does not work as a browser "
            f"({'; '.join(search.rejected)}). Point it at a Chromium or Chrome binary "
            f"(macOS: '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome'), "
            f"or unset it to let the tests look in the usual places.",
            search=search,
        )
    return Verdict("fail" if required else "skip", missing_browser_banner(search, required), search=search)


def missing_playwright() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed: run `make setup` (it is pinned in the lock)."
    return None


def require_browser_tools(env=None) -> str:
    """The browser to drive; otherwise skip (on purpose, or loudly when none is found on a learner's machine)
    or fail (required in CI, a broken COURSE_CHROMIUM, or Playwright missing)."""
    import warnings

    import pytest

    verdict = browser_verdict(env)
    if verdict.action == "skip":
        if verdict.search is not None:  # not found: loud, in the warnings summary as well as the skip reason
            warnings.warn(UserWarning("\n" + verdict.message), stacklevel=2)
        pytest.skip(verdict.message)
    problems = [verdict.message] if verdict.action == "fail" else []
    if missing_playwright():
        problems.append(missing_playwright())
    if problems:
        pytest.fail("The browser suite cannot run:\n" + "\n".join(problems), pytrace=False)
    return verdict.browser


# --------------------------------------------------------------------------------------------------
# the JupyterLab server
# --------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Quiet, offline, predictable JupyterLab settings for the test (written into a private settings folder).
LAB_SETTINGS = {
    # no "Would you like to receive official Jupyter news?" toast over the notebook, no update check
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False}
    # the page title / kernel prompt dialogs stay as a learner has them; only the news are silenced
}


class LabServer:
    """`jupyter lab` serving a temporary copy of the course on 127.0.0.1, no token, no password."""

    def __init__(self, workdir: Path, folders=("chapters", "exercises", "ja/chapters", "ja/exercises")):
        self.workdir = Path(workdir)
        self.course = self.workdir / "course"
        self.folders = folders
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
        self.log_path = self.workdir / "jupyter-lab.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _prepare(self) -> dict:
        for name in self.folders:
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, self.course / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
                marker = ROOT / name.split("/")[0] / ".course_lang"  # ja/.course_lang: its kernels speak Japanese
                if marker.is_file() and not (self.course / marker.relative_to(ROOT)).exists():
                    shutil.copy(marker, self.course / marker.relative_to(ROOT))
        settings = self.workdir / "user-settings"
        for rel, values in LAB_SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        env = dict(os.environ)
        for var, sub in [
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_DATA_DIR", "data"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("IPYTHONDIR", "ipython"),
        ]:
            env[var] = str(self.workdir / sub)
            (self.workdir / sub).mkdir(exist_ok=True)
        env.update(COURSE_DEVICE="cpu", PYTHONHASHSEED="0", JUPYTER_PLATFORM_DIRS="1")
        env.pop("JUPYTER_TOKEN", None)
        return env

    def start(self, timeout: float = 120.0) -> LabServer:
        env = self._prepare()
        for _attempt in range(3):  # a free port can be taken between asking and binding: try another
            self.port = free_port()
            cmd = [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                "--IdentityProvider.token=",
                "--ServerApp.password=",
                f"--ServerApp.root_dir={self.course}",
                "--ServerApp.allow_root=True",  # CI runs as root; the server only listens on 127.0.0.1
                f"--LabApp.user_settings_dir={self.workdir / 'user-settings'}",
                f"--LabApp.workspaces_dir={self.workdir / 'workspaces'}",
            ]
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    cmd, cwd=self.course, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            if self._wait_ready(timeout):
                return self
            self.stop()
        raise RuntimeError(f"jupyter lab did not start; its log:\n{self.log()}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.base_url}/api/status", timeout=5) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.3)
        return False

    def api(self, path: str, method: str = "GET"):
        """Call the server's REST API. Without a token, a non-GET request needs the _xsrf cookie echoed back."""
        import http.cookiejar

        if getattr(self, "_opener", None) is None:
            self._cookies = http.cookiejar.CookieJar()
            self._opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self._cookies))
            self._opener.open(f"{self.base_url}/lab", timeout=30).read()  # sets the _xsrf cookie
        xsrf = next((c.value for c in self._cookies if c.name == "_xsrf"), "")
        req = urllib.request.Request(f"{self.base_url}{path}", method=method, headers={"X-XSRFToken": xsrf})
        with self._opener.open(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        try:
            for kernel in self.api("/api/kernels"):
                self.api(f"/api/kernels/{kernel['id']}", method="DELETE")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:] if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.shutdown_kernels()
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


# --------------------------------------------------------------------------------------------------
# what the stored notebook promises
# --------------------------------------------------------------------------------------------------
def expected_widget_outputs(path: Path) -> int:
    """How many widget outputs the committed notebook shows (as plain-text fallbacks, since ids are stripped)."""
    nb = json.loads(Path(path).read_text())
    count = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            text = "".join(data.get("text/plain", ""))
            if WIDGET_MIME in data or WIDGET_FALLBACK.search(text):
                count += 1
    return count


# --------------------------------------------------------------------------------------------------
# a notebook in the browser
# --------------------------------------------------------------------------------------------------
# One snapshot of the notebook's state, taken in the page: every code cell's prompt, the kernel status,
# the error outputs, and the widget outputs with whether each rendered.
STATE_JS = r"""
(FALLBACK_OPENING) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-CodeCell')];
  const prompts = cells.map(c => (c.querySelector('.jp-InputArea-prompt')?.textContent || '').trim());
  const errors = [];
  cells.forEach((c, i) => {
    for (const o of c.querySelectorAll('.jp-OutputArea-output')) {
      const mime = o.getAttribute('data-mime-type') || '';
      const text = o.textContent || '';
      if (mime === 'application/vnd.jupyter.error' ||
          (mime === 'application/vnd.jupyter.stderr' && /Traceback|Error\b/.test(text)) ||
          /Error displaying widget/.test(text)) {
        errors.push({cell: i, mime, text: text.slice(-3000)});
      }
    }
  });
  // A widget view renders into an output without a mime attribute whose child is a .jupyter-widgets
  // element; a text/plain output showing the course's fallback means the widget did NOT render.
  const widgets = [];
  for (const o of panel.querySelectorAll('.jp-OutputArea-output')) {
    const mime = o.getAttribute('data-mime-type');
    const text = o.textContent || '';
    const view = o.querySelector(':scope > .jupyter-widgets');
    const broken = /Loading widget|Error displaying widget/.test(text);
    if (mime === 'application/vnd.jupyter.widget-view+json' || view || broken) {
      widgets.push({rendered: !!view && !broken, text: text.slice(0, 120)});
    } else if (mime === 'text/plain' && new RegExp(FALLBACK_OPENING).test(text.trim())) {
      widgets.push({rendered: false, text: 'fallback text shown instead of a widget: ' + text.slice(0, 120)});
    }
  }
  return {status: indicator ? indicator.getAttribute('data-status') : null, prompts, errors, widgets};
}
"""

# A fingerprint of one cell's outputs *other than the controls themselves*: the figures' bytes and the
# text of the readouts. Moving a slider must change it (the figure redraws, the Markdown readout follows).
SIGNATURE_JS = r"""
(cell) => {
  const area = cell.querySelector('.jp-Cell-outputArea') || cell;
  const clone = area.cloneNode(true);
  clone.querySelectorAll('.widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-checkbox, '
      + '.widget-radio, .widget-text, .widget-readout, .widget-label, .widget-button, button, select, input')
      .forEach(e => e.remove());
  const images = [...area.querySelectorAll('img')].map(i => {
    const s = i.getAttribute('src') || '';
    let h = 0; for (let k = 0; k < s.length; k += 7) h = (h * 31 + s.charCodeAt(k)) | 0;
    return s.length + ':' + h;
  });
  return images.join('|') + '##' + clone.textContent;
}
"""


KERNEL_LOST = {"dead", "autorestarting", "restarting", "terminating"}


@dataclass
class Interaction:
    cell: int
    control: str
    changed: bool
    detail: str = ""


@dataclass
class RunReport:
    seconds: float = 0.0
    prompts: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    widgets: list = field(default_factory=list)
    interactions: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # what the page did that a person would have handled (a dialog)


class NotebookPage:
    """One notebook opened in its own browser context, as a learner would open it."""

    def __init__(self, browser, server: LabServer, relpath: str, viewport=(1400, 900)):
        self.server = server
        self.relpath = relpath
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.page = self.context.new_page()
        self.report = RunReport()
        self.page.on("pageerror", lambda exc: self.report.page_errors.append(str(exc)))

    def close(self):
        self.context.close()

    # --- JupyterLab chrome -------------------------------------------------------------------------
    def dismiss_dialog(self) -> str:
        """Close a JupyterLab dialog that blocks the page ("Kernel Restarting: the kernel ... appears to have
        died"), as a person would, and return its text ("" when there was none). Seen on a busy 2-core machine: a
        kernel that dies while starting (a port taken between its choice and its bind) is restarted by the server,
        and the dialog then takes every click."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        dialog = self.page.locator(".jp-Dialog")
        if not dialog.count():
            return ""
        text = " ".join((dialog.first.text_content() or "").split())
        self.page.keyboard.press("Escape")
        try:
            dialog.first.wait_for(state="detached", timeout=5_000)
        except PlaywrightTimeout:  # one that Escape does not close (CI, once): its own button, as a person would
            for kind in (".jp-mod-reject", ".jp-mod-accept", ""):
                button = dialog.first.locator(f".jp-Dialog-button{kind}")
                if button.count():
                    button.first.click()
                    break
            try:
                dialog.first.wait_for(state="detached", timeout=10_000)
            except PlaywrightTimeout as exc:
                raise AssertionError(f"a JupyterLab dialog stays open: {text[:300]}") from exc
        self.report.notes.append(f"dismissed a dialog: {text[:200]}")
        return text

    def command(self, menu: str, command_id: str):
        """Open a top menu ("Run", "Edit", ...) and click the item bound to `command_id`, as a person does."""
        self.dismiss_dialog()
        self.page.click(f'.lm-MenuBar-item:has-text("{menu}")')
        # a disabled item (the kernel is still connecting) takes the click and does nothing: wait until enabled
        item = self.page.locator(f'.lm-Menu-item[data-command="{command_id}"]:not(.lm-mod-disabled)').first
        item.wait_for(state="visible", timeout=10_000)
        item.click()

    def state(self) -> dict:
        return self.page.evaluate(STATE_JS, FALLBACK_OPENING)

    def open(self, timeout_s: float = 180):
        workspace = re.sub(r"\W", "-", Path(self.relpath).stem)
        self.page.goto(
            f"{self.server.base_url}/lab/workspaces/{workspace}/tree/{self.relpath}?reset",
            wait_until="domcontentloaded",
            timeout=timeout_s * 1000,
        )
        cells = json.loads((self.server.course / self.relpath).read_text())["cells"]
        n_code = sum(c["cell_type"] == "code" for c in cells)
        self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=timeout_s * 1000)
        # JupyterLab attaches cells progressively: wait for all of them, and for the kernel
        self.wait_for(
            lambda s: len(s["prompts"]) == n_code and s["status"] == "idle",
            timeout_s,
            f"all {n_code} code cells and an idle kernel",
        )

    def wait_for(self, predicate, timeout_s: float, what: str) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.state()
            if state is not None and predicate(state):
                return state
            if state is not None and state["status"] in KERNEL_LOST:
                # a crashed kernel (out of memory, a segfault) never finishes the run: say so at once
                raise RuntimeError(
                    f"the kernel is {state['status']} while waiting for {what} "
                    f"(it crashed or ran out of memory); prompts: {state['prompts']}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"timed out after {timeout_s:.0f} s waiting for {what}; last state: {json.dumps(state)[:2000]}"
                )
            self.page.wait_for_timeout(250)

    # --- running ------------------------------------------------------------------------------------
    def run_all(self, timeout_s: float) -> RunReport:
        """Clear every output, then Run -> Run All Cells; wait until each code cell ran and the kernel is idle."""
        self.command("Edit", "editmenu:clear-all")
        self.wait_for(lambda s: all(p in ("[ ]:", "") for p in s["prompts"]), 30, "the outputs to clear")
        start = time.monotonic()
        self.command("Run", "runmenu:run-all")

        def started(s):
            return any("*" in p or re.fullmatch(r"\[\d+\]:", p) for p in s["prompts"])

        def finished(s):
            # idle with nothing queued: every cell ran, or an error stopped the run, or the kernel died and was
            # restarted (its queued cells fall back to "[ ]:"); the test tells these apart from the prompts
            return s["status"] == "idle" and not any("*" in p for p in s["prompts"])

        try:
            self.wait_for(started, 20, f"{self.relpath} to start running")
        except TimeoutError:
            # Seen once (Python 3.12, CUDA build of torch, a busy 2-core machine): the click was lost, nothing was
            # queued. Nothing runs twice: every prompt is still "[ ]:" and the kernel is idle, or we would be done.
            self.page.keyboard.press("Escape")
            self.command("Run", "runmenu:run-all")
            self.wait_for(started, 60, f"{self.relpath} to start running (Run All clicked twice)")
        state = self.wait_for(finished, timeout_s, f"{self.relpath} to run")
        if all(p in ("[ ]:", "") for p in state["prompts"]):
            # Nothing ran, and no error: the kernel was restarted under the run (its queued cells fall back to
            # "[ ]:"; see dismiss_dialog). Say so, and run it once more: a notebook that fails twice fails the test.
            why = self.dismiss_dialog() or "every prompt still [ ]: after Run All"
            self.report.notes.append(f"Run All ran nothing ({why}); ran it again")
            self.command("Run", "runmenu:run-all")
            self.wait_for(started, 60, f"{self.relpath} to start running again")
            state = self.wait_for(finished, timeout_s, f"{self.relpath} to run")
        # widgets render asynchronously after the kernel went idle: give every view a moment to appear
        try:
            state = self.wait_for(lambda s: all(w["rendered"] for w in s["widgets"]), 30, "the widgets to render")
        except TimeoutError:
            state = self.state()
        self.report.seconds = time.monotonic() - start
        self.report.prompts = state["prompts"]
        self.report.errors = state["errors"]
        self.report.widgets = state["widgets"]
        return self.report

    # --- interacting --------------------------------------------------------------------------------
    def _wait_signature_change(self, cell, before: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if cell.evaluate(SIGNATURE_JS) != before:
                return True
            self.page.wait_for_timeout(150)
        return False

    def _move_slider(self, slider) -> str:
        """Focus the slider's handle and press an arrow key (Left if it already sits at its maximum)."""
        handle = slider.locator(".noUi-handle").first
        handle.scroll_into_view_if_needed()
        handle.focus()
        key = (
            "ArrowLeft"
            if handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
            else "ArrowRight"
        )
        readout = slider.locator(".widget-readout").first
        before = readout.text_content() if readout.count() else ""
        self.page.keyboard.press(key)
        after = readout.text_content() if readout.count() else ""
        return f"{key}: {before.strip()} -> {after.strip()}"

    def exercise_controls(self, timeout_s: float = 60) -> list[Interaction]:
        """Move every slider, switch every dropdown / toggle / checkbox, and click every quiz's Check button.

        After each change, the cell's figure or readout (its outputs other than the controls) must change.
        """
        cells = self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell")
        for i in range(cells.count()):
            cell = cells.nth(i)
            if cell.locator(".jp-OutputArea-output > .jupyter-widgets").count() == 0:
                continue
            controls = cell.locator(".widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-checkbox")
            for k in range(controls.count()):
                control = controls.nth(k)
                before = cell.evaluate(SIGNATURE_JS)
                label, detail = self._change_control(control)
                name = (
                    (control.locator(".widget-label").first.text_content() or "").strip()
                    if control.locator(".widget-label").count()
                    else ""
                )
                changed = self._wait_signature_change(cell, before, timeout_s)
                self.report.interactions.append(Interaction(i, f"{label} {name}".strip(), changed, detail))
            # check questions: pick an answer, press Check, expect a verdict (✅ or ❌ with the explanation)
            radios = cell.locator(".widget-radio-box")
            for k in range(radios.count()):
                self.report.interactions.append(self._answer_quiz(i, k, radios.nth(k), timeout_s))
        return self.report.interactions

    def _change_control(self, control) -> tuple[str, str]:
        """Change one control as a learner would; returns what it is ("slider", ...) and what was done to it."""
        kind = control.get_attribute("class") or ""
        if "widget-slider" in kind:
            return "slider", self._move_slider(control)
        if "widget-dropdown" in kind:
            select = control.locator("select")
            options = select.locator("option").all_text_contents()
            current = select.input_value()
            values = select.evaluate("s => [...s.options].map(o => o.value)")
            target = next(v for v in values if v != current)
            select.select_option(target)
            return "dropdown", f"{current} -> {target} of {options}"
        if "widget-toggle-buttons" in kind:
            buttons = control.locator("button")
            idle = [
                j for j in range(buttons.count()) if "mod-active" not in (buttons.nth(j).get_attribute("class") or "")
            ]
            buttons.nth(idle[0]).click()
            return "toggle buttons", f"clicked option {idle[0]}"
        control.locator("input").first.click()
        return "checkbox", "clicked"

    def _answer_quiz(self, cell_index: int, k: int, radios, timeout_s: float) -> Interaction:
        """Pick the first answer of quiz `k` (its radio buttons `radios`) in code cell `cell_index`, press its Check
        button, and wait for a verdict (✅ or ❌ with the explanation)."""
        box = radios.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
        option = radios.locator("input[type=radio]").first
        for attempt in range(3):  # the view may redraw its inputs while the click's value syncs: try again
            try:
                option.check(timeout=5_000)
                break
            except Exception:
                if attempt == 2:
                    raise
                self.page.wait_for_timeout(300)
        box.locator("button.jupyter-button").first.click()  # the box's one button: Check (チェック in ja/)
        # the verdict is the box's last HTML output (the first one is the question itself)
        verdict = box.locator(".widget-html-content, .widget-htmlmath-content").last
        changed = False
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = verdict.text_content() or ""
            if "✅" in text or "❌" in text:
                changed = True
                break
            self.page.wait_for_timeout(150)
        return Interaction(cell_index, f"quiz {k + 1} Check", changed, (verdict.text_content() or "")[:120])

    # --- typing, as a learner does ------------------------------------------------------------------
    def code_cell(self, index: int):
        return self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell").nth(index)

    def replace_code(self, index: int, code: str) -> None:
        """Click into the editor of code cell `index`, select everything, and type `code` in its place."""
        editor = self.code_cell(index).locator(".cm-content").first
        editor.scroll_into_view_if_needed()
        editor.click()
        self.page.keyboard.press("ControlOrMeta+a")
        self.page.keyboard.press("Delete")
        # insert_text types the text as one input event: no auto-indent or closing brackets added by the editor
        self.page.keyboard.insert_text(code)

    def run_cell(self, index: int, timeout_s: float = 120) -> str:
        """Run code cell `index` with Ctrl+Enter (its editor focused) and return its outputs' text once it ran."""
        before = self.state()["prompts"][index]
        self.code_cell(index).locator(".cm-content").first.click()
        self.page.keyboard.press("Control+Enter")
        self.wait_for(
            lambda s: re.fullmatch(r"\[\d+\]:", s["prompts"][index]) and s["prompts"][index] != before,
            timeout_s,
            f"code cell {index} to run",
        )
        self.page.wait_for_timeout(200)  # the output lands just after the prompt changes
        return self.code_cell(index).locator(".jp-Cell-outputArea").first.text_content() or ""

    def first_figure_cell(self) -> int | None:
        """Index (among code cells) of the first cell that shows a figure, for a screenshot of a chapter without
        controls."""
        return self.page.evaluate("""() => {
          const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell')];
          const i = cells.findIndex(c => c.querySelector('.jp-OutputArea-output img'));
          return i < 0 ? null : i;
        }""")

    def screenshot(self, path: Path, focus_cell: int | None = None):
        """A screenshot of the browser window, scrolled to `focus_cell` (a cell with controls) when given."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if focus_cell is not None:
            cell = self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell").nth(focus_cell)
            # centre the outputs (figure, readout, controls), not the code above them
            cell.evaluate("c => (c.querySelector('.jp-Cell-outputArea') || c).scrollIntoView({block: 'center'})")
            self.page.wait_for_timeout(300)
        self.page.screenshot(path=str(path))


# --------------------------------------------------------------------------------------------------
# command line, for the Makefile: one rule for `make browser-deps` and the tests
# --------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    """--find   print the browser's path (exit 1, and why on stderr, when there is none)
    --plan   print what `make browser-deps` should do first: skip | found | install | none
             (install: no browser and COURSE_CHROMIUM unset, so apt-get may provide Debian's chromium)
    --check  say what the browser tests will do; exit 1 where they would fail (the loud banner goes to stderr)"""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python tests/browser_support.py",
        description=main.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    for flag in ("--find", "--plan", "--check"):
        mode.add_argument(flag, action="store_true")
    args = parser.parse_args(argv)
    if args.find:
        search = find_browser()
        if search.path:
            print(search.path)
            return 0
        print("no working Chromium or Chrome; looked at: " + ", ".join(search.looked_at), file=sys.stderr)
        for why in search.rejected:
            print("  found but not working: " + why, file=sys.stderr)
        return 1
    if args.plan:
        if opted_out():
            print("skip")
        else:
            search = find_browser()
            print("found" if search.path else "none" if search.named else "install")
        return 0
    verdict = browser_verdict()
    if verdict.action == "run":
        print(f"browser-deps: {verdict.message}")
        return 0
    if verdict.action == "skip" and verdict.search is None:
        print(f"browser-deps: {verdict.message}")
        return 0
    print(
        verdict.message
        if verdict.search is not None and not verdict.search.named
        else f"browser-deps: {verdict.message}",
        file=sys.stderr,
    )
    return 0 if verdict.action == "skip" else 1


if __name__ == "__main__":
    sys.exit(main())
