"""The course's Sphinx extension: what the website adds to MyST-NB and the book theme.

- **The edition.** `course_edition` (en or ja) sets Sphinx's language (the theme's own words) and its search
  language: Japanese search splits words with the TinySegmenter that Sphinx ships, in Python while indexing and in
  JavaScript in the reader's browser, so neither needs a server or a download.
- **Links above each page** (_templates/course-links.html): the same page in the other edition (its index when the
  page has no counterpart), and for a notebook "Open in Colab" and "Launch Binder" on the repository's copy.
- **Figures' alt text.** A course figure's stored output carries its description as text/plain ("[Figure: …]",
  course_utils.figures.show). MyST-NB names each image file by the sha256 of its bytes; tools/build_site.py records
  hash -> description in site.json, and every image node of that hash gets it as its alt text.

tools/build_site.py writes site.json into the source folder: the edition, the repository, every page's path in the
repository, the other edition's pages and the alt texts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes

LABELS = {
    # the link to the other edition is written in that edition's language
    "en": {"other": "日本語", "colab": "Open in Colab", "binder": "Launch Binder", "nav": "This page elsewhere"},
    "ja": {"other": "English", "colab": "Colabで開く", "binder": "Binderで起動", "nav": "このページを別の場所で開く"},
}
TITLES = {"en": "Normalization and training stability", "ja": "正規化と学習の安定性"}
IMAGE_HASH = re.compile(r"([0-9a-f]{64})\.\w+$")


def github_parts(repository: str) -> tuple[str, str]:
    """("owner", "name") of a GitHub repository's URL."""
    owner, name = repository.rstrip("/").removesuffix(".git").split("/")[-2:]
    return owner, name


def launch_urls(repository: str, branch: str, path: str) -> tuple[str, str]:
    """Colab's and Binder's addresses for the notebook at `path` in the repository."""
    owner, name = github_parts(repository)
    colab = f"https://colab.research.google.com/github/{owner}/{name}/blob/{branch}/{path}"
    binder = f"https://mybinder.org/v2/gh/{owner}/{name}/{branch}?urlpath=lab/tree/{path}"
    return colab, binder


def other_edition_url(pagename: str, edition: str, other_pages: set) -> str:
    """The relative address of this page in the other edition (both live side by side: <site>/en/, <site>/ja/)."""
    other = "ja" if edition == "en" else "en"
    target = pagename if pagename in other_pages else "index"
    up = "../" * (pagename.count("/") + 1)
    return f"{up}{other}/{target}.html"


def _site(app) -> dict:
    if not hasattr(app.env, "course_site"):
        app.env.course_site = json.loads((Path(app.srcdir) / "site.json").read_text(encoding="utf-8"))
    return app.env.course_site


def _configure(app, config) -> None:
    edition = config.course_edition
    if edition not in LABELS:
        raise ValueError(f"course_edition must be en or ja, not {edition!r}")
    config.language = edition
    config.html_search_language = edition
    config.project = config.html_title = TITLES[edition]
    config.html_static_path = [str(Path(app.srcdir) / "_static")]  # staged with the pages (course.css, MathJax)


def _alt_texts(app, doctree) -> None:
    alts = _site(app)["alt"]
    for image in doctree.findall(nodes.image):
        match = IMAGE_HASH.search(image.get("uri", ""))
        if match and match.group(1) in alts and not image.get("alt"):
            image["alt"] = alts[match.group(1)]


def _page_links(app, pagename, templatename, context, doctree) -> None:
    site = _site(app)
    edition = app.config.course_edition
    labels = LABELS[edition]
    context["course_other_lang"] = "ja" if edition == "en" else "en"
    context["course_other_label"] = labels["other"]
    context["course_other_url"] = other_edition_url(pagename, edition, set(site["other_pages"]))
    context["course_links_label"] = labels["nav"]
    path = site["pages"].get(pagename, "")
    if path.endswith(".ipynb"):
        colab, binder = launch_urls(site["repository"], site["branch"], path)
        context.update(course_colab_url=colab, course_binder_url=binder)
        context.update(course_colab_label=labels["colab"], course_binder_label=labels["binder"])
    else:
        context["course_colab_url"] = ""


def setup(app):
    app.add_config_value("course_edition", "en", "env", types=[str])
    app.connect("config-inited", _configure)
    app.connect("doctree-read", _alt_texts)
    app.connect("html-page-context", _page_links)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
