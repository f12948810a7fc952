"""Run the course the way a learner does: JupyterLab in a real (headless) Chromium.

`tests/test_browser.py` uses three pieces from here:

* `require_browser_tools()` decides whether the suite can run. A missing Chromium or Playwright is a
  failure with instructions, never a silent skip; only COURSE_SKIP_BROWSER=1 skips on purpose.
* `LabServer` starts `jupyter lab --no-browser` on a free loopback port, without token or password, in a
  temporary copy of the course with its own Jupyter config, data, runtime and settings folders (so a
  learner's personal Jupyter set-up cannot change what the test sees).
* `NotebookPage` opens one notebook in Chromium through Playwright and does what a learner does: clear
  the outputs, Run -> Run All Cells, wait for the kernel, move every control, click every quiz button.

Chromium is Debian's (`/usr/bin/chromium`, or the browser named by COURSE_CHROMIUM): Playwright's own
browser download is neither needed nor used.
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
DEFAULT_CHROMIUM = "/usr/bin/chromium"
SKIP_ENV = "COURSE_SKIP_BROWSER"
CHROMIUM_ENV = "COURSE_CHROMIUM"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STDERR_MIME = "application/vnd.jupyter.stderr"
# The plain-text fallbacks the course stores in place of a live widget (see course_utils.widgets):
# "[Controls: ...]" under a live figure, "[Answer box for question N ...]" under a check question.
# A bare ipywidgets repr (e.g. "FloatSlider(value=1.0, ...)") also means "a widget was displayed here".
WIDGET_FALLBACK = re.compile(r"^\[(Controls|Answer box)\b|^[A-Z]\w*(Slider|Box|Dropdown|Button|Buttons|Checkbox|Output|Text|interactive)\(")


# --------------------------------------------------------------------------------------------------
# can the suite run here?
# --------------------------------------------------------------------------------------------------
def chromium_path() -> str:
    return os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM


def opted_out() -> bool:
    return os.environ.get(SKIP_ENV, "").strip().lower() in {"1", "true", "yes"}


def missing_browser_tools() -> list[str]:
    """What is missing for the browser suite, as instructions a person can follow (empty: all there)."""
    problems = []
    browser = chromium_path()
    if not (os.path.isfile(browser) and os.access(browser, os.X_OK)):
        problems.append(
            f"Chromium was not found at {browser}. Install it with `make browser-deps` (Debian, as root: "
            "apt-get install chromium), or point COURSE_CHROMIUM at a Chromium/Chrome binary "
            "(macOS: COURSE_CHROMIUM='/Applications/Google Chrome.app/Contents/MacOS/Google Chrome')."
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("Playwright for Python is not installed: run `make setup` (it is pinned in requirements.txt).")
    return problems


def require_browser_tools() -> None:
    """Skip only on an explicit opt-out; otherwise a missing tool fails the suite with instructions."""
    import pytest

    if opted_out():
        pytest.skip(f"browser suite skipped on request ({SKIP_ENV}=1)")
    problems = missing_browser_tools()
    if problems:
        ci = " (CI=true: the browser suite must run in CI)" if os.environ.get("CI") else ""
        pytest.fail(
            "The browser suite cannot run" + ci + ":\n  - " + "\n  - ".join(problems)
            + f"\nTo skip it on purpose on this machine, set {SKIP_ENV}=1.",
            pytrace=False,
        )


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
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    # the page title / kernel prompt dialogs stay as a learner has them; only the news are silenced
}


class LabServer:
    """`jupyter lab` serving a temporary copy of the course on 127.0.0.1, no token, no password."""

    def __init__(self, workdir: Path, folders=("chapters", "exercises")):
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
        settings = self.workdir / "user-settings"
        for rel, values in LAB_SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        env = dict(os.environ)
        for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                         ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")]:
            env[var] = str(self.workdir / sub)
            (self.workdir / sub).mkdir(exist_ok=True)
        env.update(COURSE_DEVICE="cpu", PYTHONHASHSEED="0", JUPYTER_PLATFORM_DIRS="1")
        env.pop("JUPYTER_TOKEN", None)
        return env

    def start(self, timeout: float = 120.0) -> "LabServer":
        env = self._prepare()
        for _attempt in range(3):  # a free port can be taken between asking and binding: try another
            self.port = free_port()
            cmd = [
                sys.executable, "-m", "jupyterlab", "--no-browser",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                "--IdentityProvider.token=", "--ServerApp.password=",
                f"--ServerApp.root_dir={self.course}",
                "--ServerApp.allow_root=True",  # CI runs as root; the server only listens on 127.0.0.1
                f"--LabApp.user_settings_dir={self.workdir / 'user-settings'}",
                f"--LabApp.workspaces_dir={self.workdir / 'workspaces'}",
            ]
            log = open(self.log_path, "ab")
            self.process = subprocess.Popen(cmd, cwd=self.course, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
            log.close()
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
() => {
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
    if (mime === 'application/vnd.jupyter.widget-view+json' || view || /Loading widget|Error displaying widget/.test(text)) {
      widgets.push({rendered: !!view && !/Loading widget|Error displaying widget/.test(text), text: text.slice(0, 120)});
    } else if (mime === 'text/plain' && /^\[(Controls|Answer box)\b/.test(text.trim())) {
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
    def command(self, menu: str, command_id: str):
        """Open a top menu ("Run", "Edit", ...) and click the item bound to `command_id`, as a person does."""
        self.page.click(f'.lm-MenuBar-item:has-text("{menu}")')
        item = self.page.locator(f'.lm-Menu-item[data-command="{command_id}"]').first
        item.wait_for(state="visible", timeout=10_000)
        item.click()

    def state(self) -> dict:
        return self.page.evaluate(STATE_JS)

    def open(self, timeout_s: float = 180):
        workspace = re.sub(r"\W", "-", Path(self.relpath).stem)
        self.page.goto(f"{self.server.base_url}/lab/workspaces/{workspace}/tree/{self.relpath}?reset",
                       wait_until="domcontentloaded", timeout=timeout_s * 1000)
        cells = json.loads((self.server.course / self.relpath).read_text())["cells"]
        n_code = sum(c["cell_type"] == "code" for c in cells)
        self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=timeout_s * 1000)
        # JupyterLab attaches cells progressively: wait for all of them, and for the kernel
        self.wait_for(lambda s: len(s["prompts"]) == n_code and s["status"] == "idle", timeout_s,
                      f"all {n_code} code cells and an idle kernel")

    def wait_for(self, predicate, timeout_s: float, what: str) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.state()
            if state is not None and predicate(state):
                return state
            if state is not None and state["status"] in KERNEL_LOST:
                # a crashed kernel (out of memory, a segfault) never finishes the run: say so at once
                raise RuntimeError(f"the kernel is {state['status']} while waiting for {what} "
                                   f"(it crashed or ran out of memory); prompts: {state['prompts']}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}; last state: "
                                   f"{json.dumps(state)[:2000]}")
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

        self.wait_for(started, 60, f"{self.relpath} to start running")
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
        key = "ArrowLeft" if handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax") else "ArrowRight"
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
                kind = (control.get_attribute("class") or "")
                if "widget-slider" in kind:
                    label, detail = "slider", self._move_slider(control)
                elif "widget-dropdown" in kind:
                    select = control.locator("select")
                    options = select.locator("option").all_text_contents()
                    current = select.input_value()
                    values = select.evaluate("s => [...s.options].map(o => o.value)")
                    target = next(v for v in values if v != current)
                    select.select_option(target)
                    label, detail = "dropdown", f"{current} -> {target} of {options}"
                elif "widget-toggle-buttons" in kind:
                    buttons = control.locator("button")
                    idle = [j for j in range(buttons.count()) if "mod-active" not in (buttons.nth(j).get_attribute("class") or "")]
                    buttons.nth(idle[0]).click()
                    label, detail = "toggle buttons", f"clicked option {idle[0]}"
                else:
                    control.locator("input").first.click()
                    label, detail = "checkbox", "clicked"
                name = (control.locator(".widget-label").first.text_content() or "").strip() if control.locator(".widget-label").count() else ""
                changed = self._wait_signature_change(cell, before, timeout_s)
                self.report.interactions.append(Interaction(i, f"{label} {name}".strip(), changed, detail))
            # check questions: pick an answer, press Check, expect a verdict (✅ or ❌ with the explanation)
            radios = cell.locator(".widget-radio-box")
            for k in range(radios.count()):
                box = radios.nth(k).locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
                radios.nth(k).locator("input[type=radio]").first.check()
                box.locator("button:has-text('Check')").first.click()
                verdict = box.locator(".widget-html-content").first
                changed = False
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline:
                    text = verdict.text_content() or ""
                    if "✅" in text or "❌" in text:
                        changed = True
                        break
                    self.page.wait_for_timeout(150)
                self.report.interactions.append(Interaction(i, f"quiz {k + 1} Check", changed, (verdict.text_content() or "")[:120]))
        return self.report.interactions

    def first_figure_cell(self) -> int | None:
        """Index (among code cells) of the first cell that shows a figure, for a screenshot of a chapter without controls."""
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
