"""The website (`make site`, tools/build_site.py): both editions build from the stored notebooks, every page holds what
it should, every link resolves, and in Chromium, with every request outside the site refused, each page loads with
no console error, its maths is typeset, the language switch lands on the same page in the other edition, and search
finds words in both languages."""

from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import socketserver
import sys
import threading
import tomllib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import nbformat
import pytest
import yaml

import browser_support as bs
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tools" / "site"))
import build_site
import course_site

REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]


# ------------------------------------------------------------------------------------------------------------------
# the built site, and what its HTML says
# ------------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build_site.build(out / "site", staging=out / "src")
    return out / "site"


class Page(HTMLParser):
    """The ids, links, resources and images of one HTML page."""

    def __init__(self, text: str):
        super().__init__()
        self.ids, self.links, self.resources, self.images, self.classes = set(), [], [], [], []
        self.lang = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "html":
            self.lang = attrs.get("lang")
        if tag == "a" and attrs.get("href") is not None:
            self.links.append((attrs["href"], attrs.get("class") or ""))
        if tag in ("script", "img", "iframe") and attrs.get("src"):
            self.resources.append(attrs["src"])
        if tag == "link" and attrs.get("href") and attrs.get("rel") not in ("canonical", "alternate"):
            self.resources.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs)
        self.classes.append(attrs.get("class") or "")


@functools.cache
def parsed(path: Path) -> Page:
    return Page(path.read_text(encoding="utf-8"))


def html_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.parts)


def resolve(site: Path, page: Path, href: str) -> tuple[Path, str]:
    """The file a relative link from `page` reaches, and its fragment."""
    url = urlparse(urljoin(page.relative_to(site).as_posix(), href))
    return site / unquote(url.path), url.fragment


# ------------------------------------------------------------------------------------------------------------------
# what the site holds
# ------------------------------------------------------------------------------------------------------------------
def test_both_editions_hold_every_chapter_exercise_instructor_page_and_the_grading_guide(site):
    for edition, prefix in (("en", ""), ("ja", "ja/")):
        expected = [p.relative_to(ROOT / prefix).with_suffix(".html") for p in sorted((ROOT / prefix).glob("*/*"))]
        expected = [p for p in expected if p.parts[0] in ("chapters", "exercises", "instructor")]
        expected.append(Path("docs/grading.html"))
        assert len(expected) == 7 + 6 + 9 + 1
        missing = [str(p) for p in expected if not (site / edition / p).is_file()]
        assert missing == [], f"the {edition} site lacks {missing}"
        assert (site / edition / "index.html").is_file() and (site / edition / "search.html").is_file()
    assert parsed(site / "en" / "index.html").lang == "en" and parsed(site / "ja" / "index.html").lang == "ja"
    assert (site / "index.html").is_file() and (site / ".nojekyll").is_file()


def test_exercises_are_published_blank(site):
    for edition in ("en", "ja"):
        for page in sorted((site / edition / "exercises").glob("*.html")):
            text = page.read_text(encoding="utf-8")
            assert "YOUR CODE HERE" in text and "NotImplementedError" in text, page
            assert "BEGIN SOLUTION" not in text, f"{page}: a solution region reached the site"


def test_an_exercise_with_answers_typed_in_is_refused(tmp_path):
    """make site publishes the folder it is run in: a learner's (or an instructor's) answers in exercises/ must not
    reach a public website."""
    for prefix in ("", "ja/"):
        for folder in ("exercises", "solutions"):
            (tmp_path / prefix / folder).mkdir(parents=True, exist_ok=True)
        for path in (ROOT / prefix / "solutions").glob("ex01_*.ipynb"):
            shutil.copy(path, tmp_path / prefix / "solutions" / path.name)
        (exercise,) = (ROOT / prefix / "exercises").glob("ex01_*.ipynb")
        nb = nbformat.read(exercise, as_version=4)
        build_site.as_handed_out(nb, f"{prefix}exercises/{exercise.name}", tmp_path)  # as generated: accepted
        cell = next(c for c in nb.cells if "raise NotImplementedError()" in c.source)
        cell.source = cell.source.replace("raise NotImplementedError()", "return x.mean(-1)")
        with pytest.raises(build_site.ChangedExercise, match="make reset EX=ex01"):
            build_site.as_handed_out(nb, f"{prefix}exercises/{exercise.name}", tmp_path)


def test_every_figure_has_its_alt_text(site):
    """Each stored figure's description ("[Figure: …]" beside the PNG) is its image's alt text on the site."""
    for edition, prefix in (("en", ""), ("ja", "ja/")):
        for notebook in sorted((ROOT / prefix / "chapters").glob("*.ipynb")):
            nb = nbformat.read(notebook, as_version=4)
            alts = build_site.figure_alts(nb)
            figures = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
            assert len(alts) == len({json.dumps(o["data"]["image/png"]) for o in figures}), (
                f"{notebook}: a figure without [Figure: …]"
            )
            images = parsed(site / edition / "chapters" / notebook.with_suffix(".html").name).images
            shown = [img for img in images if "_images/" in img.get("src", "")]
            assert len(shown) == len(figures) and all(img.get("alt") for img in shown), notebook
            assert {img["alt"] for img in shown} == set(alts.values())


def test_widgets_and_quizzes_say_something_on_a_static_page(site):
    welcome = (site / "en" / "chapters" / "00_welcome.html").read_text(encoding="utf-8")
    assert "<em>Controls: scale. Run this cell in JupyterLab to move them; the figure above redraws.</em>" in welcome
    ja = (site / "ja" / "chapters" / "01_layernorm_by_hand.html").read_text(encoding="utf-8")
    assert ja.count("<details>") >= 4 and "答えを見る" in ja  # the quiz's folded Markdown twin, in Japanese


def test_every_internal_link_resolves_and_no_page_loads_from_the_network(site):
    """Links between pages reach a page and, with a #fragment, an id on it; every script, stylesheet and image is
    served by the site itself; a link out of the site points at a file the repository holds, or at Colab/Binder."""
    checked = 0
    for page in html_pages(site):
        info = parsed(page)
        remote = [r for r in info.resources if urlparse(r).scheme or r.startswith("//")]
        assert remote == [], f"{page.relative_to(site)} loads {remote}"
        for resource in info.resources:
            assert resolve(site, page, resource)[0].is_file(), f"{page.relative_to(site)}: {resource} is missing"
        for href, _classes in info.links:
            url = urlparse(href)
            if url.scheme in ("http", "https"):
                check_outgoing(href)
                continue
            assert not url.scheme, f"{page.relative_to(site)}: {href}"
            target, fragment = resolve(site, page, href)
            if target.is_dir():
                target = target / "index.html"
            assert target.is_file(), f"{page.relative_to(site)} links to {href}, which does not exist"
            if fragment and target.suffix == ".html":
                assert fragment in parsed(target).ids, f"{page.relative_to(site)}: {href} has no #{fragment}"
            checked += 1
    assert checked > 1000


def check_outgoing(href: str) -> None:
    for start in (f"{REPOSITORY}/blob/main/", f"{REPOSITORY}/tree/main/"):
        if href.startswith(start):
            path = unquote(href.removeprefix(start).split("#", 1)[0])
            assert (ROOT / path).exists(), f"{href}: the repository has no {path}"
    colab = "https://colab.research.google.com/github/" + REPOSITORY.removeprefix("https://github.com/") + "/blob/main/"
    binder = "https://mybinder.org/v2/gh/" + REPOSITORY.removeprefix("https://github.com/") + "/main?urlpath=lab/tree/"
    for start in (colab, binder):
        if href.startswith(start):
            assert (ROOT / href.removeprefix(start)).is_file(), href


def test_each_notebook_page_links_colab_and_binder_to_its_own_notebook(site):
    owner_repo = REPOSITORY.removeprefix("https://github.com/")
    for edition, prefix in (("en", ""), ("ja", "ja/")):
        for folder in ("chapters", "exercises"):
            for notebook in sorted((ROOT / prefix / folder).glob("*.ipynb")):
                page = site / edition / folder / notebook.with_suffix(".html").name
                links = dict((cls, href) for href, cls in parsed(page).links if "course-launch" in cls)
                path = f"{prefix}{folder}/{notebook.name}"
                assert links == {
                    "course-launch course-colab": f"https://colab.research.google.com/github/{owner_repo}/blob/main/{path}",
                    "course-launch course-binder": f"https://mybinder.org/v2/gh/{owner_repo}/main?urlpath=lab/tree/{path}",
                }, page
    # Markdown pages run nowhere: no launch links
    assert not any("course-launch" in cls for _h, cls in parsed(site / "en" / "docs" / "grading.html").links)


def test_the_language_switch_points_at_the_counterpart_page(site):
    for edition, other in (("en", "ja"), ("ja", "en")):
        for page in html_pages(site / edition):
            switch = [href for href, cls in parsed(page).links if "course-other-edition" in cls]
            if page.name in ("genindex.html", "search.html"):
                continue
            assert len(switch) == 1, page
            target, _ = resolve(site, page, switch[0])
            counterpart = site / other / page.relative_to(site / edition)
            assert target == (counterpart if counterpart.exists() else site / other / "index.html"), page


def test_links_outside_the_site_point_at_the_repository():
    paths = {"chapters/01_x.ipynb", "instructor/README.md"}
    text = "[a](../chapters/01_x.ipynb#b) [c](../course_utils/norms.py) [d](../tools) `[e](../Makefile)` [f](#g)"
    out = build_site.rewrite_links(text, "instructor/README.md", "en", paths, REPOSITORY)
    assert out == (
        f"[a](../chapters/01_x.ipynb#b) [c]({REPOSITORY}/blob/main/course_utils/norms.py) "
        f"[d]({REPOSITORY}/tree/main/tools) `[e](../Makefile)` [f](#g)"
    )
    # the Japanese edition: its own pages stay relative, an English-only page goes to the repository
    out = build_site.rewrite_links(
        "[n](../../docs/numerics.md) [r](README.md)", "ja/instructor/x.md", "ja", {"instructor/README.md"}, REPOSITORY
    )
    assert out == f"[n]({REPOSITORY}/blob/main/docs/numerics.md) [r](README.md)"
    assert build_site.myst_targets('## 研修の前に\n<a id="before-the-session"></a>\n\ntext') == (
        "(before-the-session)=\n## 研修の前に\n\ntext"
    )


def test_the_publishing_workflow_builds_and_uploads_what_make_site_writes():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "site.yml").read_text())
    steps = [step for job in workflow["jobs"].values() for step in job.get("steps", [])]
    runs = " ".join(step.get("run", "") for step in steps)
    assert "make site" in runs and "TORCH=cpu" in runs
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-pages-artifact")]
    assert uploads and uploads[0]["with"]["path"] == "artifacts/site"
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages") for s in steps)
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^SITE_DIR\s*\?=\s*artifacts/site$", makefile, re.M)


def test_launch_addresses():
    colab, binder = course_site.launch_urls("https://github.com/o/r", "main", "ja/chapters/01_x.ipynb")
    assert colab == "https://colab.research.google.com/github/o/r/blob/main/ja/chapters/01_x.ipynb"
    assert binder == "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/ja/chapters/01_x.ipynb"
    assert course_site.other_edition_url("chapters/01_x", "en", {"chapters/01_x"}) == "../../ja/chapters/01_x.html"
    assert course_site.other_edition_url("docs/numerics", "en", {"index"}) == "../../ja/index.html"
    assert course_site.other_edition_url("index", "ja", {"index"}) == "../en/index.html"


# ------------------------------------------------------------------------------------------------------------------
# in Chromium, with the network refused
# ------------------------------------------------------------------------------------------------------------------
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(site):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def offline_browser(served):
    executable = bs.require_browser_tools()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=bs.CHROMIUM_ARGS, headless=True)
        context = chromium.new_context(viewport={"width": 1300, "height": 900})
        refused = []

        def route(r):
            if r.request.url.startswith(served):
                r.continue_()
            else:
                refused.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        yield context, refused
        chromium.close()


def visit(context, url: str, settle_ms: int = 0) -> tuple[object, list]:
    page = context.new_page()
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    # a request the page cancels (a font still loading when the test closes the page or follows a link) is not a
    # failure; a refused or missing one is (the route aborts with ERR_FAILED, a missing file answers 404)
    page.on(
        "requestfailed",
        lambda r: (
            problems.append(f"request failed: {r.url} ({r.failure})") if r.failure != "net::ERR_ABORTED" else None
        ),
    )
    page.on("response", lambda r: problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None)
    page.goto(url, wait_until="load")
    if settle_ms:
        page.wait_for_timeout(settle_ms)
    return page, problems


TYPESET = """() => new Promise(done => {
    const maths = document.querySelectorAll('.math').length;
    if (!maths) return done({maths: 0, typeset: 0, errors: 0});
    const count = () => ({maths, typeset: document.querySelectorAll('.MathJax_CHTML').length,
                          errors: document.querySelectorAll('.MathJax_CHTML merror, .mjx-merror').length});
    const wait = () => (window.MathJax && MathJax.Hub) ? MathJax.Hub.Queue(() => done(count())) : setTimeout(wait, 50);
    wait();
})"""


@pytest.mark.browser
@pytest.mark.slow
def test_every_page_loads_offline_with_its_maths_typeset(site, served, offline_browser):
    context, refused = offline_browser
    failures, with_maths = [], 0
    for path in html_pages(site):
        rel = path.relative_to(site).as_posix()
        page, problems = visit(context, served + rel)
        maths = page.evaluate(TYPESET)
        page.close()
        if maths["maths"]:
            with_maths += 1
            if maths["typeset"] < maths["maths"] or maths["errors"]:
                problems.append(f"maths: {maths}")
        failures += [f"{rel}: {p}" for p in problems]
    assert failures == [] and refused == []
    assert with_maths >= 10  # chapters 01, 02, 04, 05 and their instructor pages, in both editions


@pytest.mark.browser
@pytest.mark.slow
def test_the_language_switch_and_search_in_the_browser(site, served, offline_browser):
    context, refused = offline_browser
    for start, lands in (
        ("en/chapters/03_batchnorm_vs_layernorm.html", "ja/chapters/03_batchnorm_vs_layernorm.html"),
        ("ja/exercises/ex02_rmsnorm.html", "en/exercises/ex02_rmsnorm.html"),
        ("en/instructor/training_room.html", "ja/instructor/training_room.html"),
    ):
        page, problems = visit(context, served + start)
        page.click("a.course-other-edition")
        page.wait_for_load_state("load")
        assert page.url == served + lands and problems == []
        assert page.evaluate("document.documentElement.lang") == lands[:2]
        page.close()
    for edition, query, expect in (("ja", "正規化", "05 · QK-Norm"), ("en", "LayerNorm", "01 · LayerNorm by hand")):
        page, problems = visit(context, f"{served}{edition}/search.html?q={query}")
        page.wait_for_function("document.querySelectorAll('#search-results li').length > 0", timeout=20000)
        assert expect in page.inner_text("#search-results") and problems == []
        page.close()
    assert refused == []
