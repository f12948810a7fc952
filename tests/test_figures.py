"""Figures that a room can read and that say something without being seen (course_utils.figures)."""

import matplotlib.pyplot as plt
import nbformat
import pytest

from course_utils.figures import MIN_FONT_PT, STYLE, figure_bundle, figure_problems

from conftest import all_notebooks


def labelled_plot(**legend):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 2], label="line")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend(**legend)
    return fig


def test_the_style_is_at_least_the_minimum():
    for key, size in STYLE.items():
        assert size >= MIN_FONT_PT, key
    assert figure_problems(labelled_plot()) == []


def test_small_text_is_reported_with_its_size():
    problems = figure_problems(labelled_plot(fontsize=8))
    assert len(problems) == 1 and "8 pt" in problems[0] and "line" in problems[0]


@pytest.mark.parametrize("missing", ["x", "y"])
def test_an_unlabelled_axis_is_reported(missing):
    fig = labelled_plot()
    getattr(fig.axes[0], f"set_{missing}label")("")
    assert figure_problems(fig) == [f"axes 0 has no {missing}-axis label"]


def test_shared_axes_drawings_and_colorbars_need_no_labels_of_their_own():
    fig, (a, b, c) = plt.subplots(1, 3, sharey=True)
    for ax in (a, b):
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel("x")
    a.set_ylabel("y")  # b shares it
    c.add_patch(plt.Rectangle((0, 0), 1, 1))
    c.axis("off")  # a drawing, not a plot
    fig.colorbar(a.imshow([[0, 1], [1, 0]]), ax=a)
    a.set_xlabel("x")
    assert figure_problems(fig) == []


def test_the_bundle_carries_alt_text_and_refuses_a_figure_without_it():
    data, metadata = figure_bundle(labelled_plot(), "A rising  line.\n")
    assert data["text/plain"] == "[Figure: A rising line.]" and metadata == {"image/png": {"alt": "A rising line."}}
    assert data["image/png"].startswith("iVBOR")  # a base64 PNG
    with pytest.raises(ValueError, match="alt text"):
        figure_bundle(labelled_plot(), "  ")
    with pytest.raises(ValueError, match="8 pt"):
        figure_bundle(labelled_plot(fontsize=8), "a line")


@pytest.mark.parametrize("path", all_notebooks(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stored_figure_has_alt_text_and_every_cell_uses_show(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert "plt.show()" not in cell.source, f"cell {i}: use course_utils.figures.show(fig, alt=...)"
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                alt = out.get("metadata", {}).get("image/png", {}).get("alt", "")
                assert len(alt) >= 20, f"cell {i}: a figure without alt text"
                assert out["data"]["text/plain"] == f"[Figure: {alt}]", f"cell {i}"
