"""Diagrams of *which numbers share one mean and variance*: the whole difference between the norms.

Every normalization computes (x - mean) / sqrt(var + eps); they differ only in the axes the mean and
variance are reduced over. These helpers draw that, big enough to project in a classroom:

    draw_norm_axes(reduce_dims, shape)   any norm, given its reduction axes:
                                         a 2-d shape (samples, features) is drawn as a table,
                                         a 3-d shape (batch, tokens, features) as a block of cubes
    table_figure(x)                      LayerNorm shading one row, BatchNorm one column, with the numbers
    block_figure()                       LayerNorm's (and RMSNorm's) strip next to BatchNorm's slab
    norm_axes_explorer(x)                a widget: choose a norm, see its axes and its statistics

and the plots of chapter 03's measurements of what those axes cause:

    padding_figure(means)                zero padding drags BatchNorm's per-feature means toward 0
    spread_figure(...)                   one sample's BatchNorm output moves with its batch mates (~1/sqrt(B))
    running_stats_figure(...)            running statistics converge; the train/eval gap levels off

`shared_cells(shape, reduce_dims, index)` is the rule behind every picture: the elements that share
element `index`'s statistics are those that agree with it on every axis that is *not* reduced.
Each drawn cell carries a gid "shaded:i,j,k" or "plain:i,j,k", so a test can read back what was shaded.

Colours are Okabe-Ito (colour-blind safe); shaded cells are also hatched, so the picture survives a
black-and-white print or a washed-out projector.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch

from .i18n import N_, _
from .palette import BLUE, DARK_GREY, GREEN, ORANGE, PURPLE, VERMILLION

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "NORM_AXES",
    "NORM_AXES_2D",
    "NORM_COLORS",
    "AXIS_NAMES",
    "AXIS_NAMES_2D",
    "shared_cells",
    "group_statistics",
    "draw_norm_axes",
    "table_figure",
    "block_figure",
    "draw_norm_explorer",
    "describe_norm_explorer",
    "norm_axes_explorer",
    "explorer_alt",
    "padding_figure",
    "spread_figure",
    "running_stats_figure",
]

# reduction axes of each norm for a (batch, tokens, features) tensor, and for a (samples, features) table
NORM_AXES = {"LayerNorm": (2,), "RMSNorm": (2,), "BatchNorm": (0, 1), "InstanceNorm": (1,)}
NORM_AXES_2D = {"LayerNorm": (1,), "RMSNorm": (1,), "BatchNorm": (0,)}
NORM_COLORS = {"LayerNorm": BLUE, "RMSNorm": GREEN, "BatchNorm": VERMILLION, "InstanceNorm": PURPLE}
AXIS_NAMES = (N_("batch"), N_("tokens"), N_("features"))  # translated where they are drawn (_describe_dims)
AXIS_NAMES_2D = (N_("samples"), N_("features"))

PLAIN_FACE = "#F2F2F2"  # near-white grey, not an Okabe-Ito colour: cells outside the group stay in the background
EDGE = DARK_GREY
FONT = 15  # readable from the back of a room at the figure sizes used here


# ----------------------------------------------------------------------------------------------------
# the rule: which elements share one statistic
# ----------------------------------------------------------------------------------------------------
def _normalize_dims(reduce_dims, ndim: int) -> tuple:
    if isinstance(reduce_dims, int):
        reduce_dims = (reduce_dims,)
    dims = sorted({d % ndim for d in reduce_dims})
    if not dims:
        raise ValueError("reduce_dims is empty: a normalization reduces over at least one axis")
    for d in reduce_dims:
        if not -ndim <= d < ndim:
            raise ValueError(f"reduce dim {d} is out of range for a {ndim}-d shape")
    return tuple(dims)


def shared_cells(shape, reduce_dims, index) -> np.ndarray:
    """Boolean array of `shape`: True where an element shares element `index`'s mean and variance.

    Two elements share statistics exactly when they agree on every axis that is *not* reduced:
    BatchNorm on (N, T, D) reduces (0, 1), so all elements of one feature share; LayerNorm reduces (2,),
    so the features of one (sample, token) share.
    """
    shape = tuple(shape)
    dims = _normalize_dims(reduce_dims, len(shape))
    index = tuple(index)
    if len(index) != len(shape) or any(not 0 <= i < n for i, n in zip(index, shape)):
        raise ValueError(f"index {index} is not inside shape {shape}")
    grids = np.indices(shape)
    mask = np.ones(shape, dtype=bool)
    for axis in range(len(shape)):
        if axis not in dims:
            mask &= grids[axis] == index[axis]
    return mask


def group_statistics(x: torch.Tensor, norm: str, reduce_dims) -> dict:
    """The statistics `norm` computes over `reduce_dims` of x (keepdim): mean and biased variance, or,
    for RMSNorm, the mean square and the RMS. Also how many statistics there are and values per statistic."""
    dims = _normalize_dims(reduce_dims, x.dim())
    h = x.double()
    per_group = math.prod(x.shape[d] for d in dims)
    out = {"dims": dims, "groups": x.numel() // per_group, "values_per_group": per_group}
    if norm == "RMSNorm":
        ms = (h * h).mean(dim=dims, keepdim=True)
        out.update(mean_square=ms, rms=ms.sqrt())
    else:
        mean = h.mean(dim=dims, keepdim=True)
        out.update(mean=mean, var=((h - mean) ** 2).mean(dim=dims, keepdim=True))
    return out


# ----------------------------------------------------------------------------------------------------
# drawing: a table for 2-d shapes, a block of cubes for 3-d shapes
# ----------------------------------------------------------------------------------------------------
def _legend(ax, color, label, loc="upper left", anchor=(1.0, 1.0)):
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor=color, edgecolor=EDGE, hatch="//", label=label),
        Patch(facecolor=PLAIN_FACE, edgecolor=EDGE, label=_("other elements")),
    ]
    ax.legend(handles=handles, loc=loc, bbox_to_anchor=anchor, fontsize=FONT - 2, frameon=True)


def _draw_table(ax, mask, values=None, row_labels=None, col_labels=None, color=BLUE, separators=(), index_of=None):
    """Cells as rectangles (row 0 at the top). mask: 2-d bool. index_of(r, c) gives the gid's index."""
    from matplotlib.patches import Rectangle

    rows, cols = mask.shape
    for r in range(rows):
        for c in range(cols):
            shaded = bool(mask[r, c])
            idx = index_of(r, c) if index_of else (r, c)
            ax.add_patch(
                Rectangle(
                    (c, rows - 1 - r),
                    1,
                    1,
                    facecolor=color if shaded else PLAIN_FACE,
                    edgecolor=EDGE,
                    lw=1.2,
                    hatch="//" if shaded else None,
                    alpha=0.85 if shaded else 1.0,
                    gid=("shaded:" if shaded else "plain:") + ",".join(map(str, idx)),
                )
            )
            if values is not None:
                ax.text(
                    c + 0.5,
                    rows - 0.5 - r,
                    f"{values[r, c]:g}",
                    ha="center",
                    va="center",
                    fontsize=FONT - 1,
                    fontweight="bold" if shaded else "normal",
                    bbox=dict(boxstyle="round,pad=0.12", fc="white", ec="none", alpha=0.8) if shaded else None,
                )
    for r in separators:  # thick lines between samples in a flattened (sample, token) table
        ax.plot([0, cols], [rows - r, rows - r], color="black", lw=3)
    if row_labels is not None:
        for r, lab in enumerate(row_labels):
            ax.text(-0.15, rows - 0.5 - r, lab, ha="right", va="center", fontsize=FONT - 1)
    if col_labels is not None:
        for c, lab in enumerate(col_labels):
            ax.text(c + 0.5, rows + 0.15, lab, ha="center", va="bottom", fontsize=FONT - 1)
    ax.set_xlim(-0.05, cols + 0.05)
    ax.set_ylim(-0.05, rows + 0.05)
    ax.set_aspect("equal")
    ax.axis("off")


# oblique projection of the (batch, tokens, features) block: features run right, tokens run down,
# batch runs "into the page" (up and to the right), so sample 0 is the front face.
_DEPTH = np.array([0.55, 0.42])


def _corner(n, t, d, shape):
    """Screen position of the lattice point (n, t, d): d to the right, t downward, n into the page."""
    T = shape[1]
    return np.array([d, T - t]) + n * _DEPTH


def _draw_block(ax, mask, color):
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Polygon

    N, T, D = mask.shape
    shape = mask.shape
    # painter's algorithm, back to front: the farthest sample first (larger n); within a sample, the bottom
    # row first, so that the row above draws over its top faces; left to right along the features.
    for n in range(N - 1, -1, -1):
        for t in range(T - 1, -1, -1):
            for d in range(D):
                shaded = bool(mask[n, t, d])
                face = color if shaded else PLAIN_FACE
                alpha = 0.95 if shaded else 0.55
                gid = ("shaded:" if shaded else "plain:") + f"{n},{t},{d}"

                def p(dn, dt, dd, n=n, t=t, d=d):  # one corner of cube (n, t, d), offset by 0 or 1 per axis
                    return _corner(n + dn, t + dt, d + dd, shape)

                front = [p(0, 0, 0), p(0, 0, 1), p(0, 1, 1), p(0, 1, 0)]
                top = [p(0, 0, 0), p(1, 0, 0), p(1, 0, 1), p(0, 0, 1)]
                side = [p(0, 0, 1), p(1, 0, 1), p(1, 1, 1), p(0, 1, 1)]
                for k, (poly, shade) in enumerate(((side, 0.75), (top, 0.9), (front, 1.0))):
                    rgb = np.array(to_rgb(face)) * shade
                    ax.add_patch(
                        Polygon(
                            poly,
                            closed=True,
                            facecolor=(*rgb, alpha),
                            edgecolor=EDGE,
                            lw=0.9,
                            hatch="//" if (shaded and k == 2) else None,
                            gid=gid if k == 2 else None,
                        )
                    )
    # axis arrows and labels
    arrow = dict(arrowstyle="-|>", lw=2.2, color="black", mutation_scale=22)
    bottom_left, bottom_right = _corner(0, T, 0, shape), _corner(0, T, D, shape)
    ax.annotate("", xy=bottom_right + [0, -0.45], xytext=bottom_left + [0, -0.45], arrowprops=arrow)
    ax.text(
        *(bottom_left + bottom_right) / 2 + [0, -0.65],
        _("features (D = {D})").format(D=D),
        ha="center",
        va="top",
        fontsize=FONT,
    )
    top_left, low_left = _corner(0, 0, 0, shape), _corner(0, T, 0, shape)
    ax.annotate("", xy=low_left + [-0.4, 0], xytext=top_left + [-0.4, 0], arrowprops=arrow)
    ax.text(
        *(top_left + low_left) / 2 + [-0.6, 0],
        _("tokens (T = {T})").format(T=T),
        ha="right",
        va="center",
        fontsize=FONT,
        rotation=90,
    )
    front_right, back_right = _corner(0, T, D, shape), _corner(N, T, D, shape)
    ax.annotate("", xy=back_right + [0.35, -0.1], xytext=front_right + [0.35, -0.1], arrowprops=arrow)
    ax.text(
        *(front_right + back_right) / 2 + [0.55, -0.2],
        _("batch (N = {N})").format(N=N),
        ha="left",
        va="top",
        fontsize=FONT,
        rotation=math.degrees(math.atan2(_DEPTH[1], _DEPTH[0])),
        rotation_mode="anchor",
    )
    far = _corner(N, 0, D, shape)
    ax.set_xlim(-1.8, far[0] + 2.2)
    ax.set_ylim(bottom_left[1] - 1.4, far[1] + 0.3)
    ax.set_aspect("equal")
    ax.axis("off")


def _default_index(shape):
    """(1, 2) for a table; (0, 1, 2) for a block: the front sample, so its group is in plain view."""
    if len(shape) == 2:
        return (min(1, shape[0] - 1), min(2, shape[1] - 1))
    return (0, min(1, shape[1] - 1), min(2, shape[2] - 1))


def _describe_dims(dims, names) -> str:
    return " × ".join(_(names[d]) for d in dims)


def draw_norm_axes(
    reduce_dims, shape=(3, 4, 6), index=None, ax=None, color=BLUE, label=None, title=None, values=None, legend=True
) -> Axes:
    """Draw which elements share element `index`'s statistics when a norm reduces over `reduce_dims`.

    shape: (samples, features) -> a table; (batch, tokens, features) -> a block of cubes.
    values: optional 2-d array of numbers to print in the table's cells.
    Returns the Axes. The exercise uses this to draw the axes of a norm you have to name.
    """
    import matplotlib.pyplot as plt

    shape = tuple(shape)
    if len(shape) not in (2, 3):
        raise ValueError(
            f"draw_norm_axes draws 2-d (samples, features) or 3-d (batch, tokens, features) shapes, got {shape}"
        )
    dims = _normalize_dims(reduce_dims, len(shape))
    index = tuple(index) if index is not None else _default_index(shape)
    mask = shared_cells(shape, dims, index)
    names = AXIS_NAMES_2D if len(shape) == 2 else AXIS_NAMES
    if ax is None:
        _fig, ax = plt.subplots(figsize=(7.5, 5.5))
    count = int(mask.sum())
    if label is None:
        label = _("share one mean & variance ({count} values)").format(count=count)
    if len(shape) == 2:
        _draw_table(
            ax,
            mask,
            values=values,
            color=color,
            row_labels=[_("sample {i}").format(i=i) for i in range(shape[0])],
            col_labels=[f"d={j}" for j in range(shape[1])],
        )
        ax.text(shape[1] / 2, shape[0] + 0.85, _("features →"), ha="center", va="bottom", fontsize=FONT)
        ax.set_ylim(-0.05, shape[0] + 1.6)
        ax.set_xlim(-2.1, shape[1] + 0.05)
    else:
        _draw_block(ax, mask, color)
    title = title or _("reduce over {names}  (dims {dims})").format(names=_describe_dims(dims, names), dims=dims)
    ax.set_title(title, fontsize=FONT + 1, pad=10)
    if legend:
        _legend(ax, color, label, loc="upper center", anchor=(0.5, 0.0))
    return ax


# ----------------------------------------------------------------------------------------------------
# the two classroom figures
# ----------------------------------------------------------------------------------------------------
def table_figure(x, row: int = 1, column: int = 2) -> Figure:
    """LayerNorm (one row: one sample's features) beside BatchNorm (one column: one feature over the batch),
    with the numbers of x (samples, features) in the cells and every group's mean and variance in the margin."""
    import matplotlib.pyplot as plt

    x = torch.as_tensor(x, dtype=torch.float64)
    if x.dim() != 2:
        raise ValueError(f"table_figure needs a 2-d (samples, features) tensor, got shape {tuple(x.shape)}")
    N, D = x.shape
    values = x.numpy()
    fig, axes = plt.subplots(1, 2, figsize=(15, 6.2))
    for ax, norm, index in ((axes[0], "LayerNorm", (row, 0)), (axes[1], "BatchNorm", (0, column))):
        dims = NORM_AXES_2D[norm]
        color = NORM_COLORS[norm]
        stats = group_statistics(x, norm, dims)
        what = _("one sample, all its features") if norm == "LayerNorm" else _("one feature, all samples in the batch")
        draw_norm_axes(
            dims,
            (N, D),
            index=index,
            ax=ax,
            color=color,
            values=values,
            legend=False,
            title=_("{norm}: statistics of {what}").format(norm=norm, what=what),
        )
        mean, var = stats["mean"], stats["var"]
        if norm == "LayerNorm":
            ax.text(D + 0.15, N + 0.15, "μ, σ²", ha="left", va="bottom", fontsize=FONT - 1, fontweight="bold")
            for r in range(N):
                ax.text(
                    D + 0.15,
                    N - 0.5 - r,
                    f"{mean[r, 0]:.2f}, {var[r, 0]:.2f}",
                    ha="left",
                    va="center",
                    fontsize=FONT - 1,
                    color=color if r == row else "black",
                    fontweight="bold" if r == row else "normal",
                )
            ax.set_xlim(-2.1, D + 2.4)
            ax.set_ylim(-1.6, N + 1.6)
        else:
            ax.text(-0.15, -0.5, "μ", ha="right", va="center", fontsize=FONT - 1, fontweight="bold")
            ax.text(-0.15, -1.2, "σ²", ha="right", va="center", fontsize=FONT - 1, fontweight="bold")
            for c in range(D):
                style = dict(
                    ha="center",
                    va="center",
                    fontsize=FONT - 2,
                    color=color if c == column else "black",
                    fontweight="bold" if c == column else "normal",
                )
                ax.text(c + 0.5, -0.5, f"{mean[0, c]:.2f}", **style)
                ax.text(c + 0.5, -1.2, f"{var[0, c]:.2f}", **style)
            ax.set_ylim(-1.6, N + 1.6)
        count = stats["values_per_group"]
        _legend(
            ax,
            color,
            _("{count} values share one μ and σ²  ({groups} groups)").format(count=count, groups=stats["groups"]),
            loc="upper center",
            anchor=(0.5, 0.0),
        )
    fig.tight_layout()
    return fig


def block_figure(shape=(3, 4, 6), sample: int = 0, token: int = 1, feature: int = 2) -> Figure:
    """(batch × tokens × features): the strip LayerNorm and RMSNorm reduce over (one token of one sample, every
    feature) beside BatchNorm's slab (one feature, every sample and token). LayerNorm on the left, BatchNorm on
    the right, as in table_figure."""
    import matplotlib.pyplot as plt

    N, T, D = shape
    fig, axes = plt.subplots(1, 2, figsize=(15, 6.8))
    draw_norm_axes(
        NORM_AXES["LayerNorm"],
        shape,
        index=(sample, token, feature),
        ax=axes[0],
        color=NORM_COLORS["LayerNorm"],
        label=_("LayerNorm / RMSNorm: one token, all {D} features").format(D=D),
        title=_("LayerNorm / RMSNorm: a strip per token"),
    )
    draw_norm_axes(
        NORM_AXES["BatchNorm"],
        shape,
        index=(sample, token, feature),
        ax=axes[1],
        color=NORM_COLORS["BatchNorm"],
        label=_("BatchNorm: one feature, all {N} samples × {T} tokens = {values} values").format(
            N=N, T=T, values=N * T
        ),
        title=_("BatchNorm: a slab per feature"),
    )
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------------
# the explorer: choose a norm, see its axes and the statistics it computes
# ----------------------------------------------------------------------------------------------------
def _explorer_parts(x, norm, sample, token, feature):
    dims = NORM_AXES[norm]
    N, T, D = x.shape
    index = (min(sample, N - 1), min(token, T - 1), min(feature, D - 1))
    mask = shared_cells(x.shape, dims, index)
    stats = group_statistics(x, norm, dims)
    return dims, index, mask, stats


def _group_stat_text(norm, stats, index) -> str:
    sel = tuple(0 if d in stats["dims"] else i for d, i in enumerate(index))

    def num(t):
        return f"{round(t[sel].item(), 3) + 0.0:.3f}"  # + 0.0 turns a rounded -0.000 into 0.000

    if norm == "RMSNorm":
        return _("mean square = {ms}, RMS = {rms}").format(ms=num(stats["mean_square"]), rms=num(stats["rms"]))
    return _("mean μ = {mean}, variance σ² = {var}").format(mean=num(stats["mean"]), var=num(stats["var"]))


def draw_norm_explorer(x, norm="BatchNorm", sample=0, token=1, feature=2) -> Figure:
    """Left: the block with the group of element (sample, token, feature) shaded. Right: the same tensor
    flattened to (sample·token) rows × feature columns, with its numbers and the same cells shaded."""
    import matplotlib.pyplot as plt

    x = torch.as_tensor(x, dtype=torch.float64)
    dims, index, mask, stats = _explorer_parts(x, norm, sample, token, feature)
    N, T, D = x.shape
    color = NORM_COLORS[norm]
    fig, (a, b) = plt.subplots(1, 2, figsize=(13.5, 6.4), gridspec_kw={"width_ratios": [1.2, 1]})
    draw_norm_axes(
        dims,
        x.shape,
        index=index,
        ax=a,
        color=color,
        legend=False,
        title=_("{norm} reduces over {names}").format(norm=norm, names=_describe_dims(dims, AXIS_NAMES)),
    )
    _draw_table(
        b,
        mask.reshape(N * T, D),
        values=x.reshape(N * T, D).numpy().round(1),
        color=color,
        row_labels=[f"x[{n},{t},:]" for n in range(N) for t in range(T)],
        col_labels=[f"d={d}" for d in range(D)],
        separators=[T * n for n in range(1, N)],
        index_of=lambda r, c: (r // T, r % T, c),
    )
    b.set_xlim(-2.0, D + 0.05)
    b.set_ylim(-0.05, N * T + 0.9)
    b.set_title(
        _("x[{n}, {t}, {d}]'s group: {count} values").format(n=index[0], t=index[1], d=index[2], count=int(mask.sum()))
        + "\n"
        + _group_stat_text(norm, stats, index),
        fontsize=FONT,
        color="black",
    )
    _legend(
        b,
        color,
        _("shares x[{n},{t},{d}]'s statistics\n({groups} groups of {per_group} values)").format(
            n=index[0], t=index[1], d=index[2], groups=stats["groups"], per_group=stats["values_per_group"]
        ),
        loc="upper center",
        anchor=(0.55, 0.0),
    )
    fig.tight_layout()
    return fig


def describe_norm_explorer(x, norm="BatchNorm", sample=0, token=1, feature=2) -> str:
    x = torch.as_tensor(x, dtype=torch.float64)
    dims, index, mask, stats = _explorer_parts(x, norm, sample, token, feature)
    return _(
        "**{norm}** on a {shape} tensor reduces over dims {dims} ({names}): **{groups}** separate statistics, "
        "each from **{per_group}** values. The group of x[{n}, {t}, {d}]: {stats}."
    ).format(
        norm=norm,
        shape=tuple(x.shape),
        dims=dims,
        names=_describe_dims(dims, AXIS_NAMES),
        groups=stats["groups"],
        per_group=stats["values_per_group"],
        n=index[0],
        t=index[1],
        d=index[2],
        stats=_group_stat_text(norm, stats, index),
    )


def norm_axes_explorer(x, norm="BatchNorm", sample=0, token=1, feature=2) -> ipywidgets.HBox:
    """A norm selector and sliders for the element whose group is shaded; redraws in place (live_figure)."""
    import ipywidgets as w

    from .widgets import live_figure

    N, T, D = x.shape
    style = {"description_width": "initial"}
    controls = {
        "norm": w.Dropdown(options=list(NORM_AXES), value=norm, description=_("norm"), style=style),
        "sample": w.IntSlider(value=sample, min=0, max=N - 1, description=_("sample n"), style=style),
        "token": w.IntSlider(value=token, min=0, max=T - 1, description=_("token t"), style=style),
        "feature": w.IntSlider(value=feature, min=0, max=D - 1, description=_("feature d"), style=style),
    }
    return live_figure(
        lambda **kw: draw_norm_explorer(x, **kw),
        controls,
        describe=lambda **kw: describe_norm_explorer(x, **kw),
        alt=lambda **kw: explorer_alt(x, **kw),
    )


def explorer_alt(x, norm="BatchNorm", sample=0, token=1, feature=2) -> str:
    """The explorer's figure in words: which cells are shaded, and how many groups there are."""
    x = torch.as_tensor(x, dtype=torch.float64)
    dims, index, mask, stats = _explorer_parts(x, norm, sample, token, feature)
    n, t, d = index
    return _(
        "{norm} on a {shape} tensor: the block (left) and the same numbers as a table (right) shade the "
        "{count} values that share x[{n}, {t}, {d}]'s statistics, a reduction over {names}; "
        "there are {groups} such groups."
    ).format(
        norm=norm,
        shape=tuple(x.shape),
        count=int(mask.sum()),
        n=n,
        t=t,
        d=d,
        names=_describe_dims(dims, AXIS_NAMES),
        groups=stats["groups"],
    )


# ----------------------------------------------------------------------------------------------------
# the plots of the chapter's measurements
# ----------------------------------------------------------------------------------------------------
_LINE_COLORS = (BLUE, VERMILLION, GREEN, ORANGE)
_HATCHES = (None, "//", "xx", "..")


def padding_figure(means: dict[str, torch.Tensor], title: str | None = None) -> Figure:
    """Grouped bars, one group per feature: {label: per-feature means (D,)}; the first entry is the reference."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.8 / len(means)
    for k, (label, per_feature) in enumerate(means.items()):
        values = torch.as_tensor(per_feature).tolist()
        offset = (k - (len(means) - 1) / 2) * width
        ax.bar(
            [d + offset for d in range(len(values))],
            values,
            width,
            color=_LINE_COLORS[k % 4],
            hatch=_HATCHES[k % 4],
            edgecolor="black" if k else None,
            label=label,
        )
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(values)))
    ax.set_xlabel(_("feature d"))
    ax.set_ylabel(_("per-feature mean"))
    ax.set_title(title or _("Zero padding drags BatchNorm's mean toward 0"))
    ax.legend(loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def spread_figure(
    batch_sizes, bn_spread: dict[int, float], ln_spread: dict[int, float], repeats: int, guide: float = 1.2
) -> Figure:
    """One sample's output spread (its std across `repeats` random batches) against the batch size, on a log2
    axis, with the guide line guide / sqrt(B)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5))
    bn = [bn_spread[b] for b in batch_sizes]
    ln = [ln_spread[b] for b in batch_sizes]
    ax.plot(
        batch_sizes,
        bn,
        "o-",
        color=NORM_COLORS["BatchNorm"],
        lw=2.5,
        ms=9,
        label=_("BatchNorm: the output of s varies"),
    )
    ax.plot(batch_sizes, [guide / math.sqrt(b) for b in batch_sizes], "--", color="gray", lw=1.5, label=f"{guide} / √B")
    ax.plot(
        batch_sizes,
        ln,
        "s-",
        color=NORM_COLORS["LayerNorm"],
        lw=2.5,
        ms=9,
        label=_("LayerNorm: the same in every batch"),
    )
    ax.set_xscale("log", base=2)
    ax.set_xticks(batch_sizes, [str(b) for b in batch_sizes])
    ax.set_xlabel(_("batch size B"))
    ax.set_ylabel(_("std of the output of s\nacross {repeats} batches").format(repeats=repeats))
    ax.set_title(_("The same sample, different batch mates"))
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def running_stats_figure(running_means, true_means, features, gaps, floor: float, batch: int) -> Figure:
    """Left: the running means of some features against the training step, dashed at the data's true means.
    Right: the mean |train - eval| output per step, and its floor (the batch noise of a batch of `batch`)."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 4.8))
    steps = range(1, len(gaps) + 1)
    for k, d in enumerate(features):
        color = _LINE_COLORS[k % 4]
        a.plot(steps, running_means[:, d].tolist(), color=color, lw=2.2, label=_("feature {d}").format(d=d))
        a.axhline(float(true_means[d]), color=color, ls="--", lw=1.5)
    a.set_xlabel(_("training step"))
    a.set_ylabel(_("running mean (dashed: true mean)"))
    a.set_title(_("Running means approach the data's means"))
    a.legend()
    a.grid(alpha=0.3)
    b.plot(steps, gaps, color=NORM_COLORS["BatchNorm"], lw=2, label=_("BatchNorm: |train − eval| output"))
    b.axhline(
        floor,
        color="gray",
        ls="--",
        lw=1.5,
        label=_("floor ≈ {floor:.2f} (batch noise, B = {batch})").format(floor=floor, batch=batch),
    )
    b.set_xlabel(_("training step"))
    b.set_ylabel(_("mean |train − eval| output"))
    b.set_ylim(0, None)
    b.set_title(_("The train/eval gap shrinks, then stays"))
    b.legend()
    b.grid(alpha=0.3)
    fig.tight_layout()
    return fig
