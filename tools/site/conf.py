"""Sphinx's configuration for the course's website: one build per edition (tools/build_site.py runs both).

The source folder is a staging copy that tools/build_site.py writes (the stored notebooks as they are, links to
files outside the site pointed at the repository); `-D course_edition=ja` picks the Japanese edition. Nothing here
reaches the network: the notebooks are not executed (their stored outputs are the pages), MathJax is the pinned copy
that the slides use (tools/slide_assets.lock.json), and the book theme bundles its fonts and icons.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

extensions = ["myst_nb", "course_site"]

project = "Normalization and training stability"
author = "The course's authors"
copyright = "the course's authors, MIT licence"

# the stored outputs are the pages: never run a notebook while building
nb_execution_mode = "off"
# no ipywidgets JavaScript from a CDN: a widget's stored output is its static fallback (a figure and one line that
# says the live version runs in Jupyter), which is what a reader of a website can use
nb_ipywidgets_js = {}
# $…$ and $$…$$ in Markdown cells; headings get anchors that links like `page.md#a-heading` can reach
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 4
# a quiz's stored output is Markdown with a folded <details> answer: let its HTML through
nb_render_markdown_format = "myst"

exclude_patterns = ["_build", "**.ipynb_checkpoints", "alt_texts.json"]
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "sphinx_book_theme"
html_title = project
html_css_files = ["course.css"]
html_favicon = str(HERE / "favicon.svg")  # without one, the browser asks for /favicon.ico and logs a 404
templates_path = [str(HERE / "_templates")]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_context = {"default_mode": "auto"}  # the theme reads it before any choice is stored
html_theme_options = {
    "article_header_end": ["course-links.html", "article-header-buttons.html"],
    "use_download_button": False,  # the download menu links .ipynb sources that the site does not copy
    "show_toc_level": 2,
    "home_page_in_toc": False,
}

# MathJax 2.7.9, the pinned copy under _static/mathjax (tools/build_site.py puts it there): no CDN. MyST-NB marks a
# notebook's page "tex2jax_ignore mathjax_ignore" and its maths "math": typeset those, leave code and outputs alone.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS_CHTML-full"
mathjax2_config = {
    "tex2jax": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processClass": "math|output_area",
        "ignoreClass": "tex2jax_ignore|mathjax_ignore|document",
    },
    "messageStyle": "none",
}

# set by tools/build_site.py (-D course_edition=ja); the extension applies the edition's language and search
course_edition = "en"
