"""Every chapter, in JupyterLab, in a real browser, the way a learner meets it.

For each chapters/*.ipynb (discovered, so a new chapter is tested as soon as it lands): open it in
JupyterLab in headless Chromium, Edit → Clear Outputs of All Cells, Run → Run All Cells, wait until every cell ran and
the kernel is idle, then require
  * no error output (no traceback, no "Error displaying widget"),
  * every widget the stored notebook promises rendered as a live widget (not its text fallback),
  * every control reacts: each slider is moved with the keyboard (focus its handle, press an arrow key),
    each dropdown / toggle / checkbox switched, and the figure or the readout under it must change;
    each check question's "Check" button must answer with ✅ or ❌,
  * no uncaught JavaScript error in the page.
A screenshot per chapter lands in artifacts/screenshots/ (git-ignored), with a JSON note of what was done.

For each exercises/*.ipynb, the learner's loop: run it blank (every check says "not implemented yet", no
traceback), type the first task's solution into its cell through the editor and see ✅, then type one of the
check's named mistakes and see ❌ with exactly the hint the check prints for it (computed in the test's own
process); a screenshot of that ❌ lands next to the chapters'.

Needs Chromium or Google Chrome, found by `browser_support.find_browser()` (the same rule as `make browser-deps`,
which installs Debian's chromium as root), and Playwright (pinned in the lock). Without a browser the
suite is skipped with a loud banner on a learner's machine, and fails where it is required
(COURSE_REQUIRE_BROWSER=1 as in .ci/run, or CI=true); COURSE_SKIP_BROWSER=1 skips it on purpose. COURSE_CHROMIUM
names the browser; COURSE_BROWSER_TIMEOUT (seconds, default 900) bounds one chapter's run.
The unit tests of that rule (fake browsers in temporary folders, and `make browser-deps` itself with a fake `id`
and a fake `apt-get`) are at the end of this file.
"""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from course_utils.checks.render import visible_text

import browser_support as bs
from conftest import ROOT

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
# The Japanese edition has the same code (tests/test_translations.py): one chapter, one exercise and one deck are run
# to see it rendered as a Japanese learner sees it: Japanese text and figures in a Japanese font, Japanese messages.
JA_CHAPTERS = [ROOT / "ja" / "chapters" / "01_layernorm_by_hand.ipynb"]
JA_EXERCISES = [ROOT / "ja" / "exercises" / "ex01_layernorm.ipynb"]


def language_of(path) -> str:
    return "ja" if Path(path).resolve().relative_to(ROOT).parts[0] == "ja" else "en"


def shot_name(path) -> str:
    """Screenshot names: 01_layernorm_by_hand, and ja-01_layernorm_by_hand for the Japanese edition."""
    return ("ja-" if language_of(path) == "ja" else "") + Path(path).stem


def opening(message: str, path) -> str:
    """How one of the course's fallback texts begins in the notebook's language (see browser_support)."""
    from course_utils import i18n

    with i18n.using(language_of(path)):
        return i18n._(message).split("{", 1)[0]


ANSWER_BOX, CONTROLS = bs.FALLBACK_MESSAGES[1], bs.FALLBACK_MESSAGES[0]
RUN_TIMEOUT = float(os.environ.get("COURSE_BROWSER_TIMEOUT", "900"))


@pytest.fixture(scope="module")
def browser_executable():
    """The learner's Chromium/Chrome; skips loudly, or fails where the browser is required (see browser_support)."""
    return bs.require_browser_tools()


@pytest.fixture(scope="module")
def lab(browser_executable, tmp_path_factory):
    server = bs.LabServer(tmp_path_factory.mktemp("jupyterlab")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(lab, browser_executable):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # launch() gives Chromium a fresh, temporary profile (user-data-dir) of its own every time
        chromium = p.chromium.launch(executable_path=browser_executable, args=bs.CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


def stored_fallbacks(path, message):
    """How many stored outputs show `message` (one of bs.FALLBACK_MESSAGES), in the notebook's language."""
    prefix = opening(message, path)
    nb = json.loads(path.read_text())
    return sum(
        "".join(o.get("data", {}).get("text/plain", "")).startswith(prefix)
        for c in nb["cells"]
        for o in c.get("outputs", [])
    )


@pytest.mark.parametrize("path", CHAPTERS + JA_CHAPTERS, ids=shot_name)
@pytest.mark.browser
@pytest.mark.slow
def test_chapter_runs_and_reacts_in_jupyterlab(lab, browser, path):
    relpath = path.relative_to(ROOT).as_posix()
    name = shot_name(path)
    nb = bs.NotebookPage(browser, lab, relpath)
    shots = bs.SCREENSHOTS
    try:
        nb.open()
        report = nb.run_all(timeout_s=RUN_TIMEOUT)
        interactions = nb.exercise_controls() if not report.errors else []
        controls = [x for x in interactions if not x.control.startswith("quiz")]
        quizzes = [x for x in interactions if x.control.startswith("quiz")]
        nb.screenshot(shots / f"{name}.png", focus_cell=controls[0].cell if controls else nb.first_figure_cell())
        if quizzes:
            nb.screenshot(shots / f"{name}-quiz.png", focus_cell=quizzes[-1].cell)
    except Exception:
        shots.mkdir(parents=True, exist_ok=True)
        nb.page.screenshot(path=str(shots / f"{name}-FAILED.png"))
        raise
    finally:
        nb.close()
        lab.shutdown_kernels()  # one chapter's kernel at a time: PyTorch kernels are not small
    (shots / f"{name}.json").write_text(json.dumps(dataclasses.asdict(report), indent=1, ensure_ascii=False))

    assert not report.errors, "error output in the browser:\n" + "\n---\n".join(
        f"cell {e['cell']}: {e['text']}" for e in report.errors
    )
    assert all(re.fullmatch(r"\[\d+\]:", p) for p in report.prompts), (
        f"cells that did not run (no error shown: did the kernel crash and restart?): {report.prompts}"
    )
    assert not report.page_errors, f"JavaScript errors in the page: {report.page_errors}"

    not_rendered = [w["text"] for w in report.widgets if not w["rendered"]]
    assert not not_rendered, f"widgets that did not render: {not_rendered}"
    expected = bs.expected_widget_outputs(path)
    assert len(report.widgets) >= expected, (
        f"{expected} widgets expected (stored fallbacks), {len(report.widgets)} rendered"
    )

    dead = [x for x in interactions if not x.changed]
    assert not dead, "controls that changed neither the figure nor the readout:\n" + "\n".join(map(str, dead))
    assert len({x.cell for x in controls}) >= stored_fallbacks(path, CONTROLS), (
        f"not every live figure was exercised: {controls}"
    )
    assert len(quizzes) == stored_fallbacks(path, ANSWER_BOX), f"not every check question was answered: {quizzes}"
    assert (shots / f"{name}.png").stat().st_size > 20_000
    if language_of(path) == "ja":  # the Japanese edition speaks Japanese: its quiz verdicts too
        assert quizzes and all(re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", x.detail) for x in quizzes), quizzes


EXERCISES = sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.ipynb"))

# For each exercise, one named mistake a learner makes in its first task, as an edit of the solution's code.
MISTAKES = {
    "ex01": ("((x - mean) ** 2).sum() / x.numel()", "((x - mean) ** 2).sum() / (x.numel() - 1)"),  # unbiased
    "ex02": ("torch.sqrt(mean_square + eps)", "(torch.sqrt(mean_square) + eps)"),  # eps outside the root
    "ex03": ("momentum * var * n / (n - 1)", "momentum * var"),  # biased variance in the running estimate
    "ex04": (
        'x = x + attention(norm(x, params, "norm1"), params)',
        'x = norm(x + attention(x, params), params, "norm1")',
    ),
    "ex05": (
        "q, k = rope(rms_norm(q, q_gain)), rope(rms_norm(k, k_gain))",
        "q, k = rms_norm(rope(q), q_gain), rms_norm(rope(k), k_gain)",
    ),  # QK-Norm after RoPE
    "ex06": ("(y * (1 + w.to(h.dtype)))", "(y * w.to(h.dtype))"),  # w instead of 1 + w
}


def first_task(exercise):
    """(index among code cells, the solution's code, the check cell's source) of the exercise's first graded task."""
    solution = json.loads((exercise.parent.parent / "solutions" / exercise.name).read_text())["cells"]
    by_id = {  # the solution's code as a learner types it: without the generator's markers
        c["id"]: "".join(
            line for line in c["source"] if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
        )
        for c in solution
    }
    code = [c for c in json.loads(exercise.read_text())["cells"] if c["cell_type"] == "code"]
    for i, cell in enumerate(code):
        if "raise NotImplementedError()" in "".join(cell["source"]) and "def " in "".join(cell["source"]):
            return i, by_id[cell["id"]], "".join(code[i + 1]["source"])
    raise AssertionError(f"{exercise.name} has no task")


def check_output_here(exercise, code: str, check: str) -> str:
    """What the check prints for `code`, computed in this process: the notebook's imports, the code, the check."""
    import contextlib
    import io

    from course_utils import i18n

    cells = [  # (the first cell, tools/first_cell.py, installs nothing here and would set this process's language)
        c for c in json.loads(exercise.read_text())["cells"] if c["cell_type"] == "code" and c.get("id") != "first-cell"
    ]
    namespace: dict = {}
    exec("".join(cells[0]["source"]), namespace)
    exec(code, namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), i18n.using(language_of(exercise)):  # as the exercise's kernel speaks
        exec(check, namespace)
    return out.getvalue()


@pytest.mark.parametrize("exercise", EXERCISES + JA_EXERCISES, ids=shot_name)
@pytest.mark.browser
@pytest.mark.slow
def test_exercise_runs_blank_then_takes_typed_code_in_jupyterlab(lab, browser, exercise):
    """The learner's loop: run the blank exercise (⏳, no traceback), type a solution into the first task's cell
    and see ✅, type a named mistake and see ❌ with that mistake's hint, as the check prints it."""
    index, solution, check = first_task(exercise)
    old, new = MISTAKES[exercise.name[:4]]
    assert old in solution, f"{exercise.name}: the mistake's edit no longer matches the solution"
    mistake = solution.replace(old, new)
    # JupyterLab shows the verdict as HTML (course_utils/checks/render.py): its text without the markup (`, *)
    expected = visible_text(check_output_here(exercise, mistake, check)).strip()
    assert expected.startswith("❌"), f"{exercise.name}: the check does not reject the mistake: {expected}"

    nb = bs.NotebookPage(browser, lab, exercise.relative_to(ROOT).as_posix())
    shots = bs.SCREENSHOTS
    try:
        nb.open()
        report = nb.run_all(timeout_s=RUN_TIMEOUT)
        assert not report.errors, f"errors in the blank exercise: {report.errors}"
        waiting = nb.page.locator(".jp-NotebookPanel .jp-OutputArea-output:has-text('⏳')").count()
        assert waiting >= 2, "the blank exercise's checks should say ⏳ 'not implemented yet'"
        nb.replace_code(index, solution)
        nb.run_cell(index)
        passed = nb.run_cell(index + 1)
        assert passed.strip().startswith("✅"), f"the solution typed into the cell: {passed}"
        nb.replace_code(index, mistake)
        nb.run_cell(index)
        failed = " ".join(nb.run_cell(index + 1).split())
        assert failed == " ".join(expected.split()), f"in the browser: {failed}\nexpected: {expected}"
        nb.screenshot(shots / f"{shot_name(exercise)}-mistake.png", focus_cell=index + 1)
        assert not nb.state()["errors"] and not report.page_errors
        if language_of(exercise) == "ja":  # the hint the learner reads is Japanese
            assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", failed), failed
    except Exception:
        shots.mkdir(parents=True, exist_ok=True)
        nb.page.screenshot(path=str(shots / f"{shot_name(exercise)}-FAILED.png"))
        raise
    finally:
        nb.close()
        lab.shutdown_kernels()


@pytest.fixture(scope="module")
def offline_decks(tmp_path_factory):
    """Every chapter's deck as `make slides` builds it, with the pinned assets next to it (Japanese decks in ja/)."""
    from test_slides import build_decks

    folder = tmp_path_factory.mktemp("decks")
    decks = {f"{p}": d for p, d in zip(CHAPTERS, build_decks(CHAPTERS, folder, with_assets=True).values())}
    (folder / "ja").mkdir()
    (folder / "ja" / "assets").symlink_to(folder / "assets")
    decks |= {f"{p}": d for p, d in zip(JA_CHAPTERS, build_decks(JA_CHAPTERS, folder / "ja").values())}
    return decks


# the equations of the slide on screen: how many, how many MathJax output frames, and how many frames hold more
# than one rendering of their equation; and how many blocks of code or output are wider than the slide
EQUATIONS_ON_THE_SLIDE = """() => {
  const slide = document.querySelector('.reveal .slides section.present:not(.stack)');
  const frames = [...slide.querySelectorAll('.mjx-chtml[id$="-Frame"]')];  // one per equation (a display's wrapper
                                                                           // div is .mjx-chtml too)
  return {equations: slide.querySelectorAll('script[type^="math/tex"]').length, frames: frames.length,
          twice: frames.filter(f => f.querySelectorAll(':scope > .mjx-math').length !== 1).length,
          cut: [...slide.querySelectorAll('pre')].filter(e => e.scrollWidth > e.clientWidth + 1).length};
}"""


# the computed text-transform of every heading in the deck (reveal.js's white theme uppercases h1-h6)
HEADING_CASES = """() => [...document.querySelectorAll('.reveal .slides :is(h1, h2, h3, h4, h5, h6)')]
  .map(h => getComputedStyle(h).textTransform)"""


@pytest.mark.parametrize("path", CHAPTERS + JA_CHAPTERS, ids=shot_name)
@pytest.mark.browser
@pytest.mark.slow
def test_deck_runs_offline_in_chromium(browser, offline_decks, path):
    """The deck opened from the file system with every network request refused: reveal.js starts, the arrow key
    moves to the next slide, MathJax typesets the maths, headings keep their case; a screenshot of the third slide
    is kept."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    refused, errors = [], []

    def refuse(route):
        refused.append(route.request.url)
        route.abort()

    context.route(re.compile(r"^(?!file:).*"), refuse)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(offline_decks[f"{path}"].as_uri())
        page.wait_for_selector(".reveal.ready", timeout=30_000)  # reveal.js adds "ready" once it has started
        slides = page.evaluate("document.querySelectorAll('.reveal .slides section:not(.stack)').length")
        first = page.evaluate("location.hash")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"location.hash !== {json.dumps(first)}", timeout=10_000)
        page.keyboard.press("ArrowRight")  # at once, as a presenter clicks on, while MathJax still typesets the deck
        page.wait_for_function(
            "window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running",
            timeout=30_000,
        )
        page.wait_for_timeout(300)
        typeset = page.evaluate("document.querySelectorAll('.MathJax_CHTML').length")
        drawn = page.evaluate(EQUATIONS_ON_THE_SLIDE)
        cases = page.evaluate(HEADING_CASES)
        bs.SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(bs.SCREENSHOTS / f"{shot_name(path)}-deck.png"))
    finally:
        context.close()
    assert slides >= 5 and not refused and not errors, (slides, refused, errors)
    # every equation on the slide drawn once: nbconvert's own deck re-rendered a slide while the first typesetting
    # ran and drew its equations twice ("x = [4, 6, 2, 8]x = [4, 6, 2, 8]") in 3 of 4 tries (tools/slide_template)
    assert drawn["frames"] == drawn["equations"] and drawn["twice"] == 0, drawn
    assert drawn["cut"] == 0, f"{drawn['cut']} block(s) of code or output run off the slide"  # they wrap
    # headings as written: the white theme's `text-transform: uppercase` showed "γ and β" as "Γ AND Β"
    assert cases and set(cases) == {"none"}, f"headings transformed on screen: {sorted(set(cases))}"
    markdown = "".join(
        "".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"
    )
    if "$" in markdown:
        assert typeset > 0, f"{path.stem}: MathJax typeset no maths"


def test_the_browser_suite_covers_the_chapters():
    assert [p.name for p in CHAPTERS[:2]] == ["00_welcome.ipynb", "01_layernorm_by_hand.ipynb"]


def test_widget_fallbacks_are_counted_from_the_stored_notebook():
    welcome = ROOT / "chapters" / "00_welcome.ipynb"
    assert bs.expected_widget_outputs(welcome) == 1  # the slider of the widget check
    assert stored_fallbacks(ROOT / "chapters" / "01_layernorm_by_hand.ipynb", ANSWER_BOX) == 4
    assert stored_fallbacks(JA_CHAPTERS[0], ANSWER_BOX) == 4  # the same in Japanese


@pytest.mark.browser
@pytest.mark.slow
def test_the_suite_catches_a_traceback_and_a_frozen_widget(lab, browser):
    """The checks above can fail: a slider that redraws nothing new and a cell that raises are both caught."""
    import nbformat

    frozen = """import matplotlib.pyplot as plt
import ipywidgets as widgets
from course_utils.widgets import live_figure

def draw(scale):  # ignores the slider: the figure never changes
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    return fig

box = live_figure(draw, {"scale": widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1)},
                  describe=lambda scale: "a readout that never changes")"""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(frozen), nbformat.v4.new_code_cell('raise ValueError("deliberately broken")')]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (lab.course / "selftest").mkdir(exist_ok=True)
    nbformat.write(nb, str(lab.course / "selftest" / "broken.ipynb"))

    page = bs.NotebookPage(browser, lab, "selftest/broken.ipynb")
    try:
        page.open()
        report = page.run_all(timeout_s=120)
        interactions = page.exercise_controls(timeout_s=5)
    finally:
        page.close()
        lab.shutdown_kernels()
    assert lab.api("/api/kernels") == [], "kernels must be shut down between notebooks"
    assert len(report.errors) == 1 and "deliberately broken" in report.errors[0]["text"]
    assert report.errors[0]["cell"] == 1
    assert [w["rendered"] for w in report.widgets] == [True]
    assert [(x.control, x.changed) for x in interactions] == [("slider", False)]


# --------------------------------------------------------------------------------------------------
# the rule that finds the browser, and what happens without one (fast: fake browsers in temporary folders)
# --------------------------------------------------------------------------------------------------
POLICY_ENV = ("CI", bs.REQUIRE_ENV, bs.SKIP_ENV, bs.CHROMIUM_ENV, bs.SEARCH_ROOT_ENV)


def fake_browser(path, version="Fake Chromium 1.0", code=0):
    """An executable that answers `--version` like a browser (or fails like Ubuntu's chromium-browser stub)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "{version}"\nexit {code}\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """An empty machine: PATH, HOME and the fixed places (/usr/bin, /Applications, ...) all in tmp_path, and none
    of the policy variables (so the runner's own CI=true or COURSE_REQUIRE_BROWSER=1 cannot change the result)."""
    dirs = {name: tmp_path / name for name in ("bin", "home", "root")}
    for d in dirs.values():
        d.mkdir()
    for var in POLICY_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(dirs["bin"]))
    monkeypatch.setenv("HOME", str(dirs["home"]))
    monkeypatch.setenv(bs.SEARCH_ROOT_ENV, str(dirs["root"]))
    return dirs


def test_the_browser_is_found_in_the_documented_order(machine, monkeypatch):
    """Every documented place holds a working fake browser; removing the winner each time must reveal the next."""
    bin_, home, root = machine["bin"], machine["home"], machine["root"]
    order = [bin_ / name for name in bs.BROWSER_NAMES]
    order += [root / "usr/bin" / name for name in bs.BROWSER_NAMES]
    order += [root / "snap/bin/chromium", root / "opt/google/chrome/chrome"]
    order += [
        root / "Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
        root / "Applications/Chromium.app/Contents/MacOS/Chromium",
        home / "Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
        home / "Applications/Chromium.app/Contents/MacOS/Chromium",
    ]
    for path in order:
        fake_browser(path, version=f"Fake {path.name} 1.0")
    assert [os.path.abspath(p) for p in order] == bs.browser_candidates()

    named = fake_browser(machine["home"] / "my-chrome", version="My Chrome 2.0")
    monkeypatch.setenv(bs.CHROMIUM_ENV, str(named))
    assert bs.find_browser().path == str(named), "COURSE_CHROMIUM comes first"
    monkeypatch.delenv(bs.CHROMIUM_ENV)

    for path in order:
        search = bs.find_browser()
        assert search.path == str(path)
        assert search.version == f"Fake {path.name} 1.0"
        path.unlink()
    assert bs.find_browser().path is None


def test_a_browser_that_does_not_run_is_passed_over_and_named(machine):
    """Ubuntu's /usr/bin/chromium-browser without its snap is a script that exits 1: not a browser."""
    stub = fake_browser(
        machine["bin"] / "chromium-browser",
        code=1,
        version="Command '/usr/bin/chromium-browser' requires the chromium snap to be installed.",
    )
    chrome = fake_browser(machine["root"] / "opt/google/chrome/chrome", version="Google Chrome 131.0")
    search = bs.find_browser()
    assert (search.path, search.version) == (str(chrome), "Google Chrome 131.0")
    assert search.rejected == [
        (
            f"{stub}: `--version` exited with 1: Command '/usr/bin/chromium-browser' requires "
            "the chromium snap to be installed."
        )
    ]
    chrome.unlink()
    verdict = bs.browser_verdict()
    assert verdict.action == "skip"
    assert f"Found but not working: {stub}: `--version` exited with 1" in verdict.message


def test_course_chromium_is_the_only_candidate_when_set(machine, monkeypatch):
    fake_browser(machine["bin"] / "chromium")
    monkeypatch.setenv(bs.CHROMIUM_ENV, str(machine["home"] / "no-such-chrome"))
    verdict = bs.browser_verdict()
    assert verdict.action == "fail", "a mistyped COURSE_CHROMIUM must not fall back to another browser silently"
    assert f"COURSE_CHROMIUM={machine['home'] / 'no-such-chrome'} does not work" in verdict.message
    assert "no such file" in verdict.message
    monkeypatch.setenv(bs.CHROMIUM_ENV, "chromium")  # a bare name is looked up on PATH
    assert bs.find_browser().path == str(machine["bin"] / "chromium")


def test_no_browser_on_a_learners_machine_skips_loudly(machine):
    """Skipped, never silently: the banner is the skip reason AND a warning (shown in pytest's summary)."""
    with (
        pytest.warns(UserWarning, match="BROWSER TESTS SKIPPED") as caught,
        pytest.raises(pytest.skip.Exception) as skipped,
    ):
        bs.require_browser_tools()
    reason = str(skipped.value)
    assert reason == str(caught[0].message).strip()
    for fix in (
        "BROWSER TESTS SKIPPED: no Chromium or Google Chrome was found",
        "sudo apt-get install chromium",
        "install Google Chrome (https://www.google.com/chrome/) into /Applications",
        "COURSE_CHROMIUM=/path/to/chromium-or-chrome make test",
        "COURSE_SKIP_BROWSER=1 make test",
        "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    ):
        assert fix in reason
    assert reason.startswith("=" * 100) and reason.endswith("=" * 100)


@pytest.mark.parametrize(
    "env, why",
    [
        ({bs.REQUIRE_ENV: "1"}, "COURSE_REQUIRE_BROWSER=1"),
        ({"CI": "true"}, "CI=true"),
        ({"CI": "true", bs.REQUIRE_ENV: "yes"}, "COURSE_REQUIRE_BROWSER=1"),
    ],
)
def test_no_browser_fails_where_it_is_required(machine, monkeypatch, env, why):
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a failure, not a skip with a warning
        with pytest.raises(pytest.fail.Exception, match=f"BROWSER TESTS CANNOT RUN: .* and {why} requires them"):
            bs.require_browser_tools()


def test_the_requirement_can_be_lifted_and_the_suite_skipped_on_purpose(machine, monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(bs.REQUIRE_ENV, "0")  # a CI without a browser on purpose: the learner's loud skip
    with pytest.warns(UserWarning, match="BROWSER TESTS SKIPPED"), pytest.raises(pytest.skip.Exception):
        bs.require_browser_tools()
    monkeypatch.delenv(bs.REQUIRE_ENV)
    monkeypatch.setenv(bs.SKIP_ENV, "1")  # on purpose: a one-line reason, no banner, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(pytest.skip.Exception, match=r"^the browser tests are skipped on purpose"):
            bs.require_browser_tools()
    monkeypatch.setenv(bs.REQUIRE_ENV, "1")  # .ci/run's requirement cannot be skipped away
    with pytest.raises(pytest.fail.Exception, match="contradict each other"):
        bs.require_browser_tools()


def test_a_found_browser_is_returned_to_the_suite(machine):
    chrome = fake_browser(machine["home"] / "Applications/Google Chrome.app/Contents/MacOS/Google Chrome")
    assert bs.require_browser_tools() == str(chrome)


# `make browser-deps` itself, in a sandbox: PATH holds a fake `id` (root or not), a fake `apt-get` that records its
# arguments and "installs" a fake chromium into the fake /usr/bin, and the few real tools the Makefile needs.
FAKE_APT = """#!/bin/sh
echo "$*" >> "$APT_LOG"
case "$*" in *"install"*" chromium"*)
  /bin/mkdir -p "$COURSE_BROWSER_SEARCH_ROOT/usr/bin"
  printf '#!/bin/sh\\necho Chromium 131.0 built on Debian\\n' > "$COURSE_BROWSER_SEARCH_ROOT/usr/bin/chromium"
  /bin/chmod 755 "$COURSE_BROWSER_SEARCH_ROOT/usr/bin/chromium";;
esac
"""


MAKE = shutil.which("make")  # looked up before a test's sandbox replaces PATH
TOOLS = {tool: shutil.which(tool) for tool in ("cat", "sed", "uname", "grep")}


def run_browser_deps(machine, uid, **env):
    make = MAKE
    if make is None:
        pytest.skip("GNU make is not installed (the README's commands need it)")
    bin_ = machine["bin"]
    (bin_ / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_ / "apt-get").write_text(FAKE_APT)
    for tool in ("id", "apt-get"):
        (bin_ / tool).chmod(0o755)
    for tool, real in TOOLS.items():
        if real and not (bin_ / tool).exists():
            (bin_ / tool).symlink_to(real)
    log = machine["home"] / "apt.log"
    base = {
        "PATH": str(bin_),
        "HOME": str(machine["home"]),
        bs.SEARCH_ROOT_ENV: str(machine["root"]),
        "APT_LOG": str(log),
        "LC_ALL": "C.UTF-8",
    }
    done = subprocess.run(
        [make, "-s", "--no-print-directory", "browser-deps", f"PYTHON={sys.executable}"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr, log.read_text() if log.exists() else ""


def test_make_browser_deps_without_a_browser_and_without_root_skips_loudly(machine):
    rc, out, apt = run_browser_deps(machine, uid=1000)
    assert rc == 0, out
    assert "BROWSER TESTS SKIPPED: no Chromium or Google Chrome was found" in out
    assert "sudo apt-get install chromium" in out and "COURSE_CHROMIUM=" in out
    assert apt == "", "apt-get needs root: not tried"
    rc, out, _ = run_browser_deps(machine, uid=1000, **{bs.REQUIRE_ENV: "1"})
    assert rc != 0 and "BROWSER TESTS CANNOT RUN" in out, out
    rc, out, _ = run_browser_deps(machine, uid=1000, CI="true")
    assert rc != 0 and "CI=true requires them" in out, out


def test_make_browser_deps_as_root_installs_debians_chromium(machine):
    rc, out, apt = run_browser_deps(machine, uid=0, **{bs.REQUIRE_ENV: "1"})
    assert rc == 0, out
    assert "installing Debian's chromium with apt-get" in out
    assert "install -y -qq --no-install-recommends chromium fonts-noto-color-emoji" in apt
    assert f"browser-deps: using {machine['root'] / 'usr/bin/chromium'} (Chromium 131.0 built on Debian)" in out


def test_make_browser_deps_uses_chrome_where_the_tests_find_it(machine, monkeypatch):
    """The Makefile asks the tests' rule: Google Chrome in ~/Applications (a Mac without admin rights) is enough."""
    chrome = fake_browser(
        machine["home"] / "Applications/Google Chrome.app/Contents/MacOS/Google Chrome", version="Google Chrome 131.0"
    )
    rc, out, apt = run_browser_deps(machine, uid=1000, **{bs.REQUIRE_ENV: "1"})
    assert rc == 0 and f"browser-deps: using {chrome} (Google Chrome 131.0)" in out, out
    assert apt == ""
    found = subprocess.run(
        [sys.executable, str(ROOT / "tests/browser_support.py"), "--find"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=True,
    )
    assert found.stdout.strip() == str(chrome) == bs.find_browser().path


def test_make_browser_deps_respects_the_opt_out(machine):
    rc, out, apt = run_browser_deps(machine, uid=0, **{bs.SKIP_ENV: "1"})
    assert (rc, apt) == (0, ""), out
    assert "browser-deps: the browser tests are skipped on purpose (COURSE_SKIP_BROWSER=1)" in out
    assert "BROWSER TESTS" not in out
