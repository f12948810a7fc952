"""The course's website: both editions as static HTML, built from the stored notebooks without running them.

    python tools/build_site.py artifacts/site          (what `make site` runs)
    python tools/build_site.py artifacts/site --edition ja

writes a folder that any static host serves as it is (GitHub Pages: .github/workflows/site.yml):

    artifacts/site/index.html      the choice of edition (English / 日本語)
    artifacts/site/en/…            chapters, exercises (blank, as handed out), instructor pages, the grading guide
    artifacts/site/ja/…            the same pages of the Japanese edition (ja/), at the same paths

How. Each edition's pages are copied into a staging folder (artifacts/.cache/site-src/<edition>/) with the layout
of the repository, so their relative links keep working. A link to a file the site does not hold (a module, the
Makefile, a page of the other edition that has no counterpart) is pointed at the repository instead. Then Sphinx
(tools/site/conf.py: MyST-NB, which reads the stored outputs, and the book theme) builds the edition. MathJax is the
pinned copy the slides use (tools/slide_assets.py): downloaded once into a cache from the npm registry, checked
against its sha512, then no network at all, neither while building nor while reading.

tests/test_site.py builds the site and reads every page in Chromium with the network refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from base64 import b64decode
from pathlib import Path

import nbformat

from course_utils import exercises, i18n

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import slide_assets  # noqa: E402
from translate import CODE, EXTERNAL  # noqa: E402

EDITIONS = ("en", "ja")
CONF = ROOT / "tools" / "site"
STAGING = ROOT / "artifacts" / ".cache" / "site-src"
BRANCH = "main"
# what the site holds, per edition: (folder, pattern, the section's caption in each language)
SECTIONS = (
    ("chapters", "*.ipynb", {"en": "Chapters", "ja": "章"}),
    ("exercises", "*.ipynb", {"en": "Exercises", "ja": "演習"}),
    ("instructor", "*.md", {"en": "For instructors", "ja": "講師の方へ"}),
    ("docs", "grading.md", {"en": "Grading", "ja": "採点"}),
)
INTRO = {
    "en": (
        "An interactive course that goes from **LayerNorm computed by hand** to **QK-Norm attention on a tiny "
        "transformer**. These pages are the course's notebooks as they were last run, with their outputs. To run "
        "them, use the **Open in Colab** or **Launch Binder** link at the top of a notebook's page, or clone the "
        "repository and type `make lab`."
    ),
    "ja": (
        "**レイヤー正規化（LayerNorm）を手で計算する**ところから、**小さなTransformerでのQK-Norm注意機構**までを"
        "たどる、対話型の講座です。このサイトの各ページは、講座のノートブックを最後に実行したときの出力とともに掲載した"
        "ものです。自分で実行するには、ノートブックのページ上部にある「Colabで開く」または「Binderで起動」のリンクを"
        "使うか、リポジトリをクローンして `make lab COURSE_LANG=ja` を実行してください。"
    ),
}
TITLE = {"en": "Normalization and training stability", "ja": "正規化と学習の安定性"}
ROOT_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="favicon.svg">
<title>Normalization and training stability · 正規化と学習の安定性</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; padding: 0 1rem; line-height: 1.6 }}
li a {{ font-size: 1.25rem }}
.ja {{ font-size: 1.5rem; margin-top: -1rem }}
</style>
</head>
<body>
<h1>Normalization and training stability</h1>
<p lang="ja" class="ja">正規化と学習の安定性</p>
<ul>
<li><a href="en/index.html" hreflang="en">English</a></li>
<li><a href="ja/index.html" hreflang="ja" lang="ja">日本語</a></li>
</ul>
<p>Source: <a href="{repository}">{repository}</a> (version {version})</p>
</body>
</html>
"""
LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)")
HREF = re.compile(r'((?:href|src)=")([^"]+)(")')
# The Japanese pages keep the English anchors that links use with an HTML anchor under the translated heading
# (`## 研修の前に` then `<a id="before-the-session"></a>`): for Sphinx it becomes a MyST target above the heading.
HTML_ANCHOR = re.compile(r'^(?P<heading>#{1,6} [^\n]*\n)?<a id="(?P<id>[\w-]+)"></a>[ \t]*(?:\n|$)', re.M)


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def repository() -> str:
    """The course's public home, from pyproject.toml ([project.urls] Repository)."""
    return project()["urls"]["Repository"]


def pages(edition: str, root: Path = ROOT) -> dict[str, str]:
    """docname -> the page's path in the repository, for every page of the edition's site."""
    prefix = "" if edition == "en" else f"{edition}/"
    found = {}
    for folder, pattern, _caption in SECTIONS:
        for path in sorted((root / prefix / folder).glob(pattern)):
            rel = path.relative_to(root / prefix).as_posix()
            found[rel.rsplit(".", 1)[0]] = f"{prefix}{rel}"
    return found


def rewrite_links(text: str, page_path: str, edition: str, site_paths: set, repo_url: str) -> str:
    """Relative links of a page at `page_path` (repository-relative): kept when they reach a page of this edition's
    site (the staging folder mirrors the edition's layout), else pointed at the file in the repository."""
    prefix = "" if edition == "en" else f"{edition}/"

    def fix(target: str) -> str:
        if target.startswith(EXTERNAL):
            return target
        path, sep, anchor = target.partition("#")
        repo_path = os.path.normpath(posix_join(os.path.dirname(page_path), path))
        if repo_path.startswith(prefix) and repo_path.removeprefix(prefix) in site_paths:
            return target
        kind = "tree" if (ROOT / repo_path).is_dir() else "blob"
        return f"{repo_url}/{kind}/{BRANCH}/{repo_path}" + sep + anchor

    def outside_code(part: str) -> str:
        part = LINK.sub(lambda m: m.group(1) + fix(m.group(2)), part)
        return HREF.sub(lambda m: m.group(1) + fix(m.group(2)) + m.group(3), part)

    out, last = [], 0
    for m in CODE.finditer(text):
        out += [outside_code(text[last : m.start()]), m.group(0)]
        last = m.end()
    return "".join(out) + outside_code(text[last:])


def myst_targets(text: str) -> str:
    """`<a id="x"></a>` anchors as MyST targets, `(x)=`, placed above the heading they follow."""
    return HTML_ANCHOR.sub(lambda m: f"({m['id']})=\n" + (m["heading"] or ""), text)


def posix_join(folder: str, path: str) -> str:
    return f"{folder}/{path}" if folder else path


def _figure_pattern() -> re.Pattern:
    """The text/plain that course_utils.figures.show stores beside a figure, "[Figure: {alt}]", in every language."""
    forms = []
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            before, after = i18n._("[Figure: {alt}]").split("{alt}")
            forms.append(re.escape(before) + "(?P<alt>.*)" + re.escape(after))
    return re.compile(
        "^(?:" + "|".join(f"(?:{f})".replace("(?P<alt>", f"(?P<alt{i}>") for i, f in enumerate(forms)) + ")$", re.S
    )


FIGURE = _figure_pattern()


def figure_alts(nb) -> dict[str, str]:
    """sha256 of each stored PNG -> its description, from the output's text/plain "[Figure: …]" ("[図：…]")."""
    alts = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            match = FIGURE.match(data.get("text/plain", "").strip())
            if "image/png" in data and match:
                alt = next(v for v in match.groupdict().values() if v is not None)
                alts[hashlib.sha256(b64decode(data["image/png"])).hexdigest()] = alt
    return alts


def mark_widget_fallbacks(nb) -> int:
    """A live widget's stored stand-in ("[Controls: …. Run this cell in JupyterLab …]", the quiz's answer box) as an
    italic note rather than a line of code output, so that it reads as the page's words to a reader of the site."""
    marked = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/plain", "")
            if output.get("output_type") == "display_data" and set(output["data"]) == {"text/plain"}:
                if text.startswith("[") and text.endswith("]") and "\n" not in text and "JupyterLab" in text:
                    output["data"]["text/markdown"] = f"*{text[1:-1]}*"
                    marked += 1
    return marked


class ChangedExercise(Exception):
    """An exercise notebook that differs from what its solution generates: the site would publish someone's answers."""


def as_handed_out(nb, repo_path: str, root: Path = ROOT) -> None:
    """Refuse an exercise whose cells are not those that `make exercises` writes from its solution (a learner's or an
    instructor's answers typed into exercises/), so that the site shows every exercise blank."""
    solution = root / repo_path.replace("exercises/", "solutions/", 1)
    cells = [(c.cell_type, c.source) for c in nb.cells]
    if cells != [(c.cell_type, c.source) for c in exercises.make_exercise(solution).cells]:
        raise ChangedExercise(
            f"{repo_path} is not as handed out (answers typed in?): the site publishes exercises blank. "
            f"`make reset EX={Path(repo_path).stem.split('_')[0]}` puts it back and keeps your version in backups/."
        )


def index_page(edition: str, docnames: list) -> str:
    lines = [f"# {TITLE[edition]}", "", INTRO[edition], ""]
    for folder, _pattern, caption in SECTIONS:
        entries = [d for d in docnames if d.startswith(folder + "/")]
        if folder == "instructor":  # the guide first, then the chapters' pages
            entries.sort(key=lambda d: (not d.endswith("/README"), d))
        lines += ["```{toctree}", f":caption: {caption[edition]}", ":maxdepth: 1", "", *entries, "```", ""]
    return "\n".join(lines)


def stage(edition: str, dest: Path, root: Path = ROOT) -> dict:
    """Write the edition's sources, index and site.json into dest (emptied first); return site.json's content."""
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "_static").mkdir(parents=True)
    shutil.copy(CONF / "course.css", dest / "_static" / "course.css")
    own, other = pages(edition, root), pages("ja" if edition == "en" else "en", root)
    prefix = "" if edition == "en" else f"{edition}/"
    site_paths = {path.removeprefix(prefix) for path in own.values()}
    repo_url, alts = repository(), {}
    for repo_path in own.values():
        source, target = root / repo_path, dest / repo_path.removeprefix(prefix)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix == ".ipynb":
            nb = nbformat.read(source, as_version=4)
            if repo_path.removeprefix(prefix).startswith("exercises/"):
                as_handed_out(nb, repo_path, root)
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = rewrite_links(cell.source, repo_path, edition, site_paths, repo_url)
            alts.update(figure_alts(nb))
            mark_widget_fallbacks(nb)
            nbformat.write(nb, target)
        else:
            text = source.read_text(encoding="utf-8")
            text = myst_targets(rewrite_links(text, repo_path, edition, site_paths, repo_url))
            target.write_text(text, encoding="utf-8")
    (dest / "index.md").write_text(index_page(edition, list(own)), encoding="utf-8")
    site = {"edition": edition, "repository": repo_url, "branch": BRANCH, "pages": own, "other_pages": sorted(other)}
    site["other_pages"].append("index")
    site["alt"] = alts
    (dest / "site.json").write_text(json.dumps(site, ensure_ascii=False, indent=1), encoding="utf-8")
    return site


def build(out: Path, editions=EDITIONS, staging: Path = STAGING, quiet: bool = True) -> None:
    """Stage and build each edition into out/<edition>/, then the root page; Sphinx's warnings fail the build."""
    out.mkdir(parents=True, exist_ok=True)
    for edition in editions:
        src = staging / edition
        stage(edition, src)
        slide_assets.install(src / "_static", only=("mathjax",))
        command = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(CONF), "-D", f"course_edition={edition}"]
        command += ["-W", "--keep-going", "-j", "1", "-E", *(["-q"] if quiet else []), str(src), str(out / edition)]
        subprocess.run(command, check=True)
    (out / "index.html").write_text(ROOT_PAGE.format(repository=repository(), version=project()["version"]))
    shutil.copy(CONF / "favicon.svg", out / "favicon.svg")
    (out / ".nojekyll").write_text("")  # GitHub Pages: serve _static/ and _images/ as they are


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the site's folder, e.g. artifacts/site")
    parser.add_argument("--edition", choices=EDITIONS, action="append", help="only this edition (repeatable)")
    parser.add_argument("--verbose", action="store_true", help="Sphinx's progress output")
    args = parser.parse_args(argv)
    try:
        build(args.out, tuple(args.edition or EDITIONS), quiet=not args.verbose)
    except subprocess.CalledProcessError as error:
        print(f"build_site: Sphinx failed (exit {error.returncode}); its messages are above", file=sys.stderr)
        return 1
    except ChangedExercise as error:
        print(f"build_site: {error}", file=sys.stderr)
        return 1
    print(f"the site is in {args.out}/ (open {args.out}/index.html, or serve the folder with any static server)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
