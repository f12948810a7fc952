"""Notebook hygiene, the strictness of the nbval set-up, and deterministic `make execute`.

(nbval itself, run by the same `pytest`, re-executes every notebook and compares each stored output.)
"""

import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
import warnings

import nbformat
import pytest
from nbval.plugin import find_comment_markers, find_metadata_tags

from course_utils import nbtools

from conftest import ROOT, all_notebooks

MACHINE_PATH = re.compile(r"(?<![\w.:/])/(?:root|home|Users|work|tmp|private|opt|usr|var|mnt|srv)/[\w.-]+/")
NOTEBOOKS = all_notebooks()


def output_text(out):
    if "text" in out:
        return out["text"]
    return "".join(str(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_hygiene(path):
    nb = nbtools.read(path)
    counts = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"cell {i} was never executed: run `make execute`"
        counts.append(cell.execution_count)
        for out in cell.outputs:
            assert out.output_type != "error", f"cell {i} stores an error: {out.get('ename')}"
            assert not MACHINE_PATH.search(output_text(out)), f"cell {i} shows a machine-specific path"
            assert "application/vnd.jupyter.widget-view+json" not in out.get("data", {}), f"cell {i} stores a widget id"
        lines = cell.source.rstrip().splitlines()
        ends_in_semicolon = "plt." in cell.source and lines and lines[-1].endswith(";")
        assert not ends_in_semicolon, f"cell {i}: show plots with course_utils.figures.show(fig, alt=...)"
    assert counts == list(range(1, len(counts) + 1)), "execution counts must be 1..N: run `make execute`"
    assert path.stat().st_size < 2_000_000
    assert "widgets" not in nb.metadata
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_chapters_exist_in_order():
    names = [p.name for p in sorted((ROOT / "chapters").glob("*.ipynb"))]
    assert names[:2] == ["00_welcome.ipynb", "01_layernorm_by_hand.ipynb"]


PREDICT = "**Predict, then run.**"
TAKEAWAYS = "## Key takeaways"


@pytest.mark.parametrize("path", sorted((ROOT / "chapters").glob("0[1-9]_*.ipynb")), ids=lambda p: p.stem)
def test_a_chapter_asks_for_predictions_and_ends_with_its_takeaways(path):
    """Predict-then-run prompts before key cells, and a takeaways cell near the end (issue 13)."""
    cells = nbtools.read(path).cells
    prompts = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith(PREDICT)]
    assert len(prompts) >= 2, f"at least two cells starting with {PREDICT}"
    for i in prompts:
        assert "?" in cells[i].source, f"cell {i}: a prediction prompt asks a question"
        assert i + 1 < len(cells) and cells[i + 1].cell_type == "code", f"cell {i}: the next cell computes the answer"
    takeaways = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith(TAKEAWAYS)]
    assert len(takeaways) == 1, "one '## Key takeaways' cell"
    bullets = [line for line in cells[takeaways[0]].source.splitlines() if line.lstrip().startswith(("- ", "* "))]
    assert 3 <= len(bullets) <= 8
    assert len(cells) - takeaways[0] <= 4, "the takeaways close the chapter (only the quiz and the links may follow)"


# Where a chapter's figure is drawn (docs/architecture.md, "Where a figure is drawn"): in the notebook only where the
# learner is meant to read or change the drawing code; every other figure comes from the chapter's figure module,
# called with the numbers the cell computed. These are the cells that draw inline, and why.
INLINE_FIGURES = {
    "ch00-09": "the welcome's live figure: the pattern a learner copies to draw with a slider",
    "ch01-30a": "the course's first measured figure: chapter 01 does everything by hand, the plotting too",
    "ch02-32": "chapter 02's one measured figure, by hand like chapter 01's: one axes, one loop",
}
DRAWS_A_FIGURE = re.compile(r"\bplt\.(?:subplots|figure|subplot|plot|semilogy)\(|\.add_subplot\(")
MAX_INLINE_FIGURE_LINES = 30


def test_a_chapter_draws_inline_only_the_figures_the_rule_keeps_there():
    inline = {}
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in nbtools.read(path).cells:
            if cell.cell_type == "code" and DRAWS_A_FIGURE.search(cell.source):
                inline[cell.id] = len(cell.source.splitlines())
    assert set(inline) == set(INLINE_FIGURES), "draw the others with a function of the chapter's figure module"
    too_long = {cid: n for cid, n in inline.items() if n > MAX_INLINE_FIGURE_LINES}
    assert not too_long, f"an inline figure a learner can read in one look: at most {MAX_INLINE_FIGURE_LINES} lines"


def nbval(paths, cwd):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--nbval",
        "--nbval-current-env",
        "--nbval-sanitize-with",
        str(ROOT / "tests" / "nbval_sanitize.cfg"),
        "-o",
        "addopts=",
        "-o",
        "testpaths=",
        "--rootdir",
        str(cwd),
        *map(str, paths),
    ]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_editing_a_stored_output_fails_nbval(tmp_path):
    src = ROOT / "chapters" / "01_layernorm_by_hand.ipynb"
    nb = json.loads(src.read_text())
    cell = next(
        c
        for c in nb["cells"]
        if c["cell_type"] == "code" and any("range:" in "".join(o.get("text", "")) for o in c["outputs"])
    )
    out = next(o for o in cell["outputs"] if "range:" in "".join(o.get("text", "")))
    original = "".join(out["text"])
    assert "[-1.57, 1.60]" in original
    out["text"] = original.replace("[-1.57, 1.60]", "[-1.57, 1.61]")
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters")
    edited = tmp_path / "chapters" / src.name
    edited.write_text(json.dumps(nb))
    result = nbval([edited], tmp_path)
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1.61" in result.stdout and "1 failed" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chapters/00_welcome.ipynb", "chapters/01_layernorm_by_hand.ipynb"])
def test_a_second_execute_changes_nothing(tmp_path, name):
    """Every output nbval compares comes out the same, and every figure the same to the eye.

    A figure is compared by its pixels, not its bytes: on another CPU kind the numbers behind it differ in their last
    bits (chapter 01's activation curves: randn, the matrix products and LayerNorm all round differently there), and
    antialiasing turns a shift of a thousandth of a pixel into a one-level change of a few pixels (measured with the
    CPU matrix: at most 1 level of 255, in 0.01 % of the pixels). A changed figure changes pixels by far more."""
    src = ROOT / name
    copy = tmp_path / src.parent.name / src.name
    copy.parent.mkdir()
    shutil.copy(src, copy)
    nbtools.execute(copy)
    fresh, stored = compared_part(json.loads(copy.read_text())), compared_part(json.loads(src.read_text()))
    fresh_figures, stored_figures = take_figures(fresh), take_figures(stored)
    assert fresh == stored
    assert len(fresh_figures) == len(stored_figures) > 0
    for i, (a, b) in enumerate(zip(fresh_figures, stored_figures)):
        assert a.shape == b.shape and int(abs(a - b).max()) <= FIGURE_LEVELS, f"figure {i} changed"


FIGURE_LEVELS = 8  # of 255: what antialiasing may change when the numbers behind a figure move by a last bit


def take_figures(nb):
    """The PNG figures of a notebook's outputs as int16 pixel arrays, each replaced by a placeholder in `nb`."""
    import base64
    import io

    import numpy as np
    from PIL import Image

    figures = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or not isinstance(cell["outputs"], list):
            continue
        for out in cell["outputs"]:
            data = out.get("data", {})
            if "image/png" in data:
                image = Image.open(io.BytesIO(base64.b64decode(data["image/png"]))).convert("RGBA")
                figures.append(np.asarray(image).astype(np.int16))
                data["image/png"] = f"figure {len(figures) - 1}"
    return figures


def test_figures_are_compared_by_their_pixels():
    """take_figures sees a figure's content: a moved line is a change, a one-level flicker is not."""
    import base64
    import io

    import numpy as np
    from PIL import Image

    def png(pixels):
        buffer = io.BytesIO()
        Image.fromarray(pixels.astype(np.uint8)).save(buffer, format="PNG")
        return base64.b64encode(buffer.getvalue()).decode()

    base = np.full((20, 30, 3), 255)
    base[10, :] = 0  # a line
    flicker, moved = base.copy(), np.full((20, 30, 3), 255)
    flicker[10, 3] = 1
    moved[11, :] = 0
    nbs = [
        {"cells": [{"cell_type": "code", "outputs": [{"data": {"image/png": png(p), "text/plain": "fig"}}]}]}
        for p in (base, flicker, moved)
    ]
    a, b, c = (take_figures(nb)[0] for nb in nbs)
    assert nbs[0] == nbs[1] == nbs[2]  # the placeholders: the rest of the notebook compares exactly
    assert abs(a - b).max() <= FIGURE_LEVELS < abs(a - c).max()


def compared_part(nb):
    """The notebook without the outputs nbval ignores (they may differ between machines: versions, timings)."""
    from nbval.plugin import find_comment_markers, find_metadata_tags

    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        markers = {
            **dict(find_metadata_tags(cell.get("metadata", {}))),
            **dict(find_comment_markers("".join(cell["source"]))),
        }
        if markers.get("check") is False:  # nbval's name for NBVAL_IGNORE_OUTPUT / the nbval-ignore-output tag
            cell["outputs"] = "ignored by nbval"
    return nb


def test_compared_part_keeps_every_output_nbval_compares():
    nb = json.loads((ROOT / "chapters" / "00_welcome.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    view = [c["outputs"] for c in compared_part(json.loads(json.dumps(nb)))["cells"] if c["cell_type"] == "code"]
    # code[0]: the first cell (tools/first_cell.py), which shows nothing; code[1]: the environment report
    assert view[0] == code[0]["outputs"] == [] and code[0]["id"] == "first-cell"
    assert view[1] == "ignored by nbval" and code[1]["source"][0].startswith("# NBVAL_IGNORE_OUTPUT")
    assert view[2:] == [c["outputs"] for c in code[2:]] and any(view[2:])
    assert "version" not in nb["metadata"]["language_info"], "nbtools.execute stores no Python patch version"


def comments_in(source):
    """{line index: comment} for a cell's source: tokenize tells a `#` inside a string from a comment."""
    lines = io.StringIO(source).readlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):  # not plain Python (an unclosed bracket...): judge every '#'
        return {i: line[line.index("#") :] for i, line in enumerate(lines) if "#" in line}
    return {t.start[0] - 1: t.string for t in tokens if t.type == tokenize.COMMENT}


def nbval_marker_problems(nb):
    """The nbval markers in a notebook that nbval itself would not honour, one readable line each.

    nbval reads a comment line as a marker only when, once the `#`s and the spaces around them are
    stripped, the rest is exactly one of its markers: `# NBVAL_IGNORE_OUTPUT` is one, but
    `# NBVAL_IGNORE_OUTPUT  (versions differ)` is an ordinary comment, and nbval then compares that
    cell's output byte for byte. A marker after code (`x = 1  # NBVAL_SKIP`) is ignored too. So every
    comment that mentions nbval must be a line that nbval's own `find_comment_markers` accepts, every
    cell tag that starts with `nbval` one that `find_metadata_tags` knows, and no cell may carry two
    conflicting markers (nbval warns and keeps the last). Cells are numbered as nbval numbers them:
    "Cell N" counts code cells only.
    """
    problems = []
    for number, cell in enumerate(nbtools.code_cells(nb)):
        lines = io.StringIO(cell.source).readlines()
        for index, comment in comments_in(cell.source).items():
            if "nbval" in comment.lower() and not dict(find_comment_markers(lines[index])):
                problems.append(f"Cell {number}: nbval does not read {lines[index].strip()!r} as a marker")
        for tag in cell.metadata.get("tags", []):
            if tag.lower().startswith("nbval") and not dict(find_metadata_tags({"tags": [tag]})):
                problems.append(f"Cell {number}: nbval does not know the tag {tag!r}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dict(find_comment_markers(cell.source))
            dict(find_metadata_tags(cell.metadata))
        problems += [f"Cell {number}: {w.message}" for w in caught]
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_nbval_markers_are_ones_nbval_honours(path):
    assert nbval_marker_problems(nbtools.read(path)) == []


def notebook_of(*sources, tags=()):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)} if tags else {}) for source in sources]
    return nb


@pytest.mark.parametrize(
    "line",
    [
        "# NBVAL_IGNORE_OUTPUT  (versions and the device differ between machines)",  # the welcome chapter had this
        "# NBVAL_IGNORE_OUTPUT: timings vary",
        "# NBVAL_IGNORE_OUTPUTS",
        "# nbval_ignore_output",
        "# NBVAL-IGNORE-OUTPUT",
        "# NBVAL IGNORE OUTPUT",
        "# NBVAL_SKIPP",
        "print(elapsed)  # NBVAL_IGNORE_OUTPUT",
        "# see NBVAL_IGNORE_OUTPUT in the cell above",
    ],
)
def test_a_malformed_comment_marker_is_reported(line):
    problems = nbval_marker_problems(notebook_of(f"import time\n{line}\nprint(1)"))
    assert problems == [f"Cell 0: nbval does not read {line.strip()!r} as a marker"]


@pytest.mark.parametrize("tag", ["nbval-ignore-outputs", "NBVAL-IGNORE-OUTPUT", "nbval_ignore_output", "nbval-skips"])
def test_an_unknown_nbval_tag_is_reported(tag):
    problems = nbval_marker_problems(notebook_of("print(1)", tags=[tag]))
    assert problems == [f"Cell 0: nbval does not know the tag {tag!r}"]


def test_conflicting_markers_are_reported():
    problems = nbval_marker_problems(notebook_of("print(1)", "# NBVAL_IGNORE_OUTPUT\n# NBVAL_CHECK_OUTPUT\nprint(2)"))
    assert len(problems) == 1 and problems[0].startswith("Cell 1: Conflicting comment markers")


@pytest.mark.parametrize(
    "source",
    [
        "# NBVAL_IGNORE_OUTPUT\nprint(1)",
        "import time\n   #NBVAL_SKIP   \nprint(1)",
        "## NBVAL_RAISES_EXCEPTION\nraise ValueError",
        "# NBVAL_CHECK_OUTPUT",
        'print("run pytest --nbval to check the stored outputs")  # a string, not a comment',
        'text = """\nthe # NBVAL_IGNORE_OUTPUT marker\n"""',
        "# versions differ between machines: the asserts below hold everywhere",
    ],
)
def test_a_marker_nbval_honours_or_no_marker_is_not_reported(source):
    tags = ["nbval-ignore-output", "raises-exception", "hide-input"]
    assert nbval_marker_problems(notebook_of(source, tags=tags)) == []


def test_the_welcome_chapter_with_its_old_malformed_marker_is_reported():
    nb = nbtools.read(ROOT / "chapters" / "00_welcome.ipynb")
    cell = nbtools.code_cells(nb)[1]  # (code cell 0 is the first cell, tools/first_cell.py)
    assert cell.source.startswith("# NBVAL_IGNORE_OUTPUT\n")
    old = "# NBVAL_IGNORE_OUTPUT  (versions differ between machines)"
    cell.source = cell.source.replace("# NBVAL_IGNORE_OUTPUT\n", old + "\n", 1)
    assert nbval_marker_problems(nb) == [f"Cell 1: nbval does not read {old!r} as a marker"]


@pytest.mark.slow
def test_nbval_compares_a_cell_whose_marker_it_does_not_read(tmp_path):
    """The premise of the marker test, checked on nbval itself: a malformed marker is no marker at all."""
    nb = notebook_of(
        "# NBVAL_IGNORE_OUTPUT\nprint('made on this machine')",
        "# NBVAL_IGNORE_OUTPUT  (differs between machines)\nprint('made on this machine')",
    )
    for cell in nb.cells:
        cell.execution_count = 1
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="made on another machine\n")]
    path = tmp_path / "markers.ipynb"
    nbformat.write(nb, str(path))
    assert nbval_marker_problems(nb) == [
        "Cell 1: nbval does not read '# NBVAL_IGNORE_OUTPUT  (differs between machines)' as a marker"
    ]
    result = nbval([path], tmp_path)
    assert "1 failed, 1 passed" in result.stdout, result.stdout[-2000:]
    assert "FAILED markers.ipynb::Cell 1" in result.stdout
