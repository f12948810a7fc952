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

Needs Debian's Chromium (`make browser-deps`) and Playwright (pinned in requirements.txt). Missing either
fails with instructions; COURSE_SKIP_BROWSER=1 skips the suite on purpose. COURSE_CHROMIUM names another
Chromium/Chrome binary; COURSE_BROWSER_TIMEOUT (seconds, default 900) bounds one chapter's run.
"""
import dataclasses
import json
import os
import re

import pytest

import browser_support as bs
from conftest import ROOT

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
RUN_TIMEOUT = float(os.environ.get("COURSE_BROWSER_TIMEOUT", "900"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    bs.require_browser_tools()
    server = bs.LabServer(tmp_path_factory.mktemp("jupyterlab")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # launch() gives Chromium a fresh, temporary profile (user-data-dir) of its own every time
        chromium = p.chromium.launch(executable_path=bs.chromium_path(), args=bs.CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


def stored_fallbacks(path, prefix):
    nb = json.loads(path.read_text())
    return sum("".join(o.get("data", {}).get("text/plain", "")).startswith(prefix)
               for c in nb["cells"] for o in c.get("outputs", []))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
@pytest.mark.browser
@pytest.mark.slow
def test_chapter_runs_and_reacts_in_jupyterlab(lab, browser, path):
    relpath = f"chapters/{path.name}"
    nb = bs.NotebookPage(browser, lab, relpath)
    shots = bs.SCREENSHOTS
    try:
        nb.open()
        report = nb.run_all(timeout_s=RUN_TIMEOUT)
        interactions = nb.exercise_controls() if not report.errors else []
        controls = [x for x in interactions if not x.control.startswith("quiz")]
        quizzes = [x for x in interactions if x.control.startswith("quiz")]
        nb.screenshot(shots / f"{path.stem}.png", focus_cell=controls[0].cell if controls else nb.first_figure_cell())
        if quizzes:
            nb.screenshot(shots / f"{path.stem}-quiz.png", focus_cell=quizzes[-1].cell)
    except Exception:
        shots.mkdir(parents=True, exist_ok=True)
        nb.page.screenshot(path=str(shots / f"{path.stem}-FAILED.png"))
        raise
    finally:
        nb.close()
        lab.shutdown_kernels()  # one chapter's kernel at a time: PyTorch kernels are not small
    (shots / f"{path.stem}.json").write_text(json.dumps(dataclasses.asdict(report), indent=1, ensure_ascii=False))

    assert not report.errors, "error output in the browser:\n" + "\n---\n".join(
        f"cell {e['cell']}: {e['text']}" for e in report.errors)
    assert all(re.fullmatch(r"\[\d+\]:", p) for p in report.prompts), (
        f"cells that did not run (no error shown: did the kernel crash and restart?): {report.prompts}")
    assert not report.page_errors, f"JavaScript errors in the page: {report.page_errors}"

    not_rendered = [w["text"] for w in report.widgets if not w["rendered"]]
    assert not not_rendered, f"widgets that did not render: {not_rendered}"
    expected = bs.expected_widget_outputs(path)
    assert len(report.widgets) >= expected, f"{expected} widgets expected (stored fallbacks), {len(report.widgets)} rendered"

    dead = [x for x in interactions if not x.changed]
    assert not dead, "controls that changed neither the figure nor the readout:\n" + "\n".join(map(str, dead))
    assert len({x.cell for x in controls}) >= stored_fallbacks(path, "[Controls:"), \
        f"not every live figure was exercised: {controls}"
    assert len(quizzes) == stored_fallbacks(path, "[Answer box"), f"not every check question was answered: {quizzes}"
    assert (shots / f"{path.stem}.png").stat().st_size > 20_000


def test_the_browser_suite_covers_the_chapters():
    assert [p.name for p in CHAPTERS[:2]] == ["00_welcome.ipynb", "01_layernorm_by_hand.ipynb"]


def test_a_missing_browser_fails_loudly_unless_skipped_on_purpose(monkeypatch, tmp_path):
    """The suite must never pass silently in CI because Chromium is missing: only an explicit opt-out skips."""
    monkeypatch.setenv(bs.CHROMIUM_ENV, str(tmp_path / "no-such-chromium"))
    monkeypatch.delenv(bs.SKIP_ENV, raising=False)
    with pytest.raises(pytest.fail.Exception, match="(?s)Chromium was not found.*browser-deps.*COURSE_SKIP_BROWSER=1"):
        bs.require_browser_tools()
    monkeypatch.setenv(bs.SKIP_ENV, "1")
    with pytest.raises(pytest.skip.Exception, match="skipped on request"):
        bs.require_browser_tools()


def test_widget_fallbacks_are_counted_from_the_stored_notebook():
    welcome = ROOT / "chapters" / "00_welcome.ipynb"
    assert bs.expected_widget_outputs(welcome) == 1  # the slider of the widget check
    assert stored_fallbacks(ROOT / "chapters" / "01_layernorm_by_hand.ipynb", "[Answer box") == 4


@pytest.mark.browser
@pytest.mark.slow
def test_the_suite_catches_a_traceback_and_a_frozen_widget(lab, browser):
    """The checks above can fail: a slider that redraws nothing new and a cell that raises are both caught."""
    import nbformat

    frozen = '''import matplotlib.pyplot as plt
import ipywidgets as widgets
from course_utils.widgets import live_figure

def draw(scale):  # ignores the slider: the figure never changes
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    return fig

box = live_figure(draw, {"scale": widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1)},
                  describe=lambda scale: "a readout that never changes")'''
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(frozen),
                                         nbformat.v4.new_code_cell('raise ValueError("deliberately broken")')])
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
