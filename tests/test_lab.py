"""`make lab`, the README's first command, really serves the course: as root and as a normal user.

The test runs `make lab` itself in the repository root, the way a learner types it, with LAB_ARGS choosing
--no-browser and a free port on 127.0.0.1, a known token (JUPYTER_TOKEN), and private Jupyter config, data and
runtime folders (so the learner's own Jupyter settings cannot change what it sees). It waits for the server,
reads the welcome chapter through the REST API and the /lab/tree URL, then stops the whole process group
(make and jupyter) and checks that nothing is left running, also when the test fails.

JupyterLab's own menus speak the edition's language: `make lab COURSE_LANG=ja` selects the Japanese language pack
(the translation setting's default, from tools/lab_settings/ja), plain `make lab` English. The last tests start both
editions that way and read the setting and the translations through the API, then the menu bar in headless Chromium
(skipped, like the browser suite, where there is no Chromium).

It never bootstraps .venv: when `make setup` is not up to date (`make -q setup`), it skips with the reason.
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

import browser_support as bs
from browser_support import free_port
from conftest import ROOT

MAKE = shutil.which("make")
WELCOME = "chapters/00_welcome.ipynb"
READY_TIMEOUT = float(os.environ.get("COURSE_LAB_TIMEOUT", "90"))  # seconds until the server must answer
STOP_TIMEOUT = 30.0


def setup_is_current() -> str | None:
    """Why `make lab` cannot run here without installing anything (None: it can)."""
    if MAKE is None:
        return "GNU make is not installed (the README's commands need it)"
    done = subprocess.run(
        [MAKE, "-q", "--no-print-directory", "setup"],
        cwd=ROOT,
        env=make_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return None
    return (
        "`make setup` is not up to date (no .venv, or the pins changed since it was installed): `make lab` "
        "would install packages first, which this test must not do. Run `make setup` (or `make test`) first."
        + (f"\n{done.stderr.strip()}" if done.returncode == 2 else "")
    )


def make_env(**extra) -> dict:
    """The caller's environment, minus an outer make's jobserver and any Jupyter settings of the learner's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "LAB_ARGS"} and not k.startswith("JUPYTER")
    }
    env.update(extra)
    return env


def group_members(pgid: int) -> list[str]:
    """Processes still alive in the process group (zombies aside: this container's PID 1 may not reap them)."""
    if os.path.isdir("/proc/self"):
        alive = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(f"{entry} {cmdline}")
        return alive
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    return [f"process group {pgid}"]


class MakeLab:
    """`make lab LAB_ARGS=...` in its own process group, on a free loopback port, with a known token; for the
    Japanese edition `make lab COURSE_LANG=ja LAB_ARGS=...`."""

    def __init__(self, workdir, lang: str = "en"):
        self.workdir = workdir
        self.lang = lang
        self.token = secrets.token_hex(16)
        self.log_path = workdir / "make-lab.log"
        self.process = None
        self.port = None
        self.ready_after = None
        self.jupyter_dirs = {
            var: workdir / sub
            for var, sub in [
                ("JUPYTER_CONFIG_DIR", "config"),
                ("JUPYTER_DATA_DIR", "data"),
                ("JUPYTER_RUNTIME_DIR", "runtime"),
                ("IPYTHONDIR", "ipython"),
            ]
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self) -> "MakeLab":
        for path in self.jupyter_dirs.values():
            path.mkdir(exist_ok=True)
        env = make_env(
            JUPYTER_TOKEN=self.token,
            JUPYTER_PLATFORM_DIRS="1",
            COURSE_DEVICE="cpu",
            **{var: str(path) for var, path in self.jupyter_dirs.items()},
        )
        for _attempt in range(3):  # a free port can be taken between asking and binding: then try another
            self.port = free_port()
            args = f"--no-browser --ip=127.0.0.1 --port={self.port} --ServerApp.port_retries=0"
            started = time.monotonic()
            with open(self.log_path, "wb") as log:
                self.process = subprocess.Popen(
                    [MAKE, "--no-print-directory", "lab", f"LAB_ARGS={args}"]
                    + ([f"COURSE_LANG={self.lang}"] if self.lang != "en" else []),
                    cwd=ROOT,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: make, jupyter and whatever they start
                )
            if self.wait_ready(started):
                return self
            code = self.process.poll()
            leftovers = self.stop()
            assert not leftovers, f"processes left behind after a failed start: {leftovers}"
            if "already in use" not in self.log():
                break
        what = f"exited with {code}" if code is not None else f"did not answer within {READY_TIMEOUT:.0f} s"
        pytest.fail(f"`make lab` {what}; its output:\n{self.log()[-5000:]}", pytrace=False)

    def get(self, path: str, token: bool = True):
        headers = {"Authorization": f"token {self.token}"} if token else {}
        request = urllib.request.Request(self.url + path, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def wait_ready(self, started: float) -> bool:
        while time.monotonic() - started < READY_TIMEOUT:
            if self.process.poll() is not None:
                return False
            try:
                if self.get("/api/status")[0] == 200:
                    self.ready_after = time.monotonic() - started
                    return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.25)
        return False

    def stop(self) -> list[str]:
        """SIGTERM to the whole group, SIGKILL if it lingers; what is still alive afterwards (should be nothing)."""
        if self.process is None:
            return []
        pgid = self.process.pid
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + STOP_TIMEOUT
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                continue
            while group_members(pgid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if not group_members(pgid):
                break
        self.process = None
        return group_members(pgid)


def recipe_of(output: str) -> str:
    """The command make echoed, its continuation lines (a backslash at the end) joined."""
    lines = output.splitlines()
    recipe = lines[0]
    for line in lines[1:]:
        if not recipe.endswith("\\"):
            break
        recipe = recipe[:-1].rstrip() + " " + line.strip()
    return recipe


@contextlib.contextmanager
def running_lab(workdir, lang: str = "en"):
    """`make lab` (COURSE_LANG=lang) started in workdir, stopped afterwards with nothing left behind; skips when
    `make setup` is not up to date."""
    reason = setup_is_current()
    if reason:
        pytest.skip(reason)
    lab = MakeLab(workdir, lang=lang)
    try:
        yield lab.start()
    finally:
        leftovers = lab.stop()
        assert not leftovers, f"`make lab` left processes behind: {leftovers}"


@pytest.fixture
def make_lab(tmp_path):
    with running_lab(tmp_path) as lab:
        yield lab


@pytest.mark.slow
def test_make_lab_serves_the_welcome_chapter(make_lab, request):
    lab = make_lab
    request.node.user_properties.append(("make_lab_ready_seconds", round(lab.ready_after, 1)))
    sys.stderr.write(f"\n`make lab` answered after {lab.ready_after:.1f} s\n")  # shown with -s or on failure
    output = lab.log()

    # the README's command, and nothing else: no setup ran, --allow-root exactly when root; the English edition's
    # JupyterLab settings folder first on JUPYTER_CONFIG_PATH (its menus in English)
    recipe = recipe_of(output)
    assert recipe.startswith(f'JUPYTER_CONFIG_PATH="{ROOT}/tools/lab_settings/en'), output[-3000:]
    assert " .venv/bin/jupyter lab " in recipe and recipe.endswith(f" {WELCOME}"), output[-3000:]
    assert ("--allow-root" in recipe.split()) == (os.geteuid() == 0), recipe
    assert f"--no-browser --ip=127.0.0.1 --port={lab.port}" in recipe
    assert "Running as root is not recommended" not in output

    # the learner's settings do not matter: the server's files live in the private runtime folder
    assert list(lab.jupyter_dirs["JUPYTER_RUNTIME_DIR"].glob("jpserver-*.json")), output[-3000:]

    # the welcome chapter, as the REST API serves it, with the title the file on disk has
    status, body = lab.get(f"/api/contents/{WELCOME}?content=1")
    assert status == 200, body[:500]
    served = json.loads(body)
    on_disk = json.loads((ROOT / WELCOME).read_text())
    title = "".join(on_disk["cells"][0]["source"]).splitlines()[0]
    assert title.startswith("# Welcome")
    assert served["type"] == "notebook" and served["path"] == WELCOME
    assert "".join(served["content"]["cells"][0]["source"]).splitlines()[0] == title
    assert len(served["content"]["cells"]) == len(on_disk["cells"])

    # the page a learner's browser opens, and the token is really required
    status, page = lab.get(f"/lab/tree/{WELCOME}")
    assert status == 200 and b"JupyterLab" in page, page[:500]
    assert lab.get(f"/api/contents/{WELCOME}", token=False)[0] == 403

    # with --no-browser, the address JupyterLab prints opens the welcome chapter (not the Launcher)
    printed = [line.split()[-1] for line in output.splitlines() if f"127.0.0.1:{lab.port}/" in line]
    assert printed and all(url.startswith(f"{lab.url}/lab/tree/{WELCOME}?token=") for url in printed), output[-3000:]

    # the whole course is served, not only the welcome chapter's folder: the exercises are one click away
    status, body = lab.get("/api/contents/exercises?content=1")
    assert status == 200 and json.loads(body)["type"] == "directory", body[:500]


# --- JupyterLab's own language follows the edition -----------------------------------------------------------------
LOCALE = {"en": "en", "ja": "ja_JP"}  # the translation setting's value that `make lab` gives each edition
MENUS = {"en": ["File", "Edit", "View", "Run", "Kernel"], "ja": ["ファイル", "編集", "表示", "実行", "カーネル"]}
TRANSLATION = "@jupyterlab/translation-extension:plugin"


@pytest.fixture(scope="module", params=["ja", "en"])
def edition_lab(request, tmp_path_factory):
    """`make lab COURSE_LANG=ja` or plain `make lab`, once per edition for the tests below."""
    with running_lab(tmp_path_factory.mktemp(f"lab-{request.param}"), lang=request.param) as lab:
        yield lab


@pytest.mark.slow
def test_make_lab_selects_the_editions_language_for_jupyterlab(edition_lab):
    lab = edition_lab
    locale = LOCALE[lab.lang]
    recipe = recipe_of(lab.log())
    assert recipe.endswith(f" {'ja/' if lab.lang == 'ja' else ''}{WELCOME}"), recipe
    # no pop-up asking whether to fetch Jupyter's news, and no update check: the course's settings overrides
    status, body = lab.get("/lab/api/settings/@jupyterlab/apputils-extension:notification")
    assert status == 200, body[:500]
    properties = json.loads(body)["schema"]["properties"]
    assert properties["fetchNews"]["default"] == "false" and properties["checkForUpdates"]["default"] is False
    # nbgrader (locked for instructors) stays out of the learners' JupyterLab: no server extension, no menus
    assert lab.get("/formgrader")[0] == 404
    status, page = lab.get(f"/lab/tree/{'ja/' if lab.lang == 'ja' else ''}{WELCOME}")
    config = json.loads(page.split(b'id="jupyter-config-data"', 1)[1].split(b">", 1)[1].split(b"</script>", 1)[0])
    assert "@jupyter/nbgrader" in config["disabledExtensions"], config["disabledExtensions"]
    # the edition's default for JupyterLab's Language setting; the learner has chosen none (a private settings folder)
    status, body = lab.get(f"/lab/api/settings/{TRANSLATION}")
    assert status == 200, body[:500]
    settings = json.loads(body)
    assert settings["schema"]["properties"]["locale"]["default"] == locale, lab.log()[-3000:]
    assert "locale" not in (settings.get("settings") or {})
    # the Japanese language pack is installed (the lock) in both editions; only the Japanese one selects it
    status, body = lab.get("/lab/api/translations/")
    assert status == 200 and "ja_JP" in json.loads(body)["data"], body[:500]
    status, body = lab.get(f"/lab/api/translations/{locale}")
    served = json.loads(body)
    if lab.lang == "ja":
        assert served["message"] == "", served["message"]
        assert served["data"]["jupyterlab"]["menu\x04File"] == ["ファイル"]
    else:
        assert served["data"] == {}  # English: JupyterLab's own strings, untranslated


@pytest.mark.slow
@pytest.mark.browser
def test_jupyterlab_menus_speak_the_editions_language_in_chromium(edition_lab, request):
    executable = bs.require_browser_tools()  # skips (loudly) or fails as the browser suite does without Chromium
    from playwright.sync_api import sync_playwright

    lab = edition_lab
    started = time.monotonic()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=bs.CHROMIUM_ARGS, headless=True)
        try:
            # the browser's own language is English in both runs: the edition decides, not the browser
            page = chromium.new_page(locale="en-US")
            page.goto(f"{lab.url}/lab?token={lab.token}")
            labels = page.locator("#jp-menu-panel .lm-MenuBar-itemLabel")
            labels.nth(len(MENUS[lab.lang]) - 1).wait_for(timeout=60_000)
            menus = labels.all_inner_texts()
            html_lang = page.evaluate("document.documentElement.lang")
        finally:
            chromium.close()
    request.node.user_properties.append(("menu_bar_seconds", round(time.monotonic() - started, 1)))
    assert menus[: len(MENUS[lab.lang])] == MENUS[lab.lang], menus
    assert html_lang == {"en": "en", "ja": "ja-JP"}[lab.lang]
