"""The measured figures of chapter 04: where the norm sits, seen in gradients, in the residual stream and in training.

Each function draws one figure from numbers a notebook cell computed and returns the matplotlib Figure; the cell
shows it with `course_utils.figures.show(fig, alt=...)` and asserts what it teaches. Nothing here computes a result
the chapter asserts: the cells measure, these functions only draw (the diagram of the four block layouts is
`placement_diagram.py`'s).

    gradient_profiles(profiles, names, seeds)             per-block gradient norm at init, one panel per depth
    residual_stream(hidden, names, predicted, guide, ...)  RMS of the stream after each block, with two predictions
    two_gradients(weight_grads, stream_grads, seeds)      Pre-LN: the weights' and the stream's gradient per block
    warmup_losses(runs, names, seeds, warmup, lr, ...)    training loss of Post-LN with and without warmup, and Pre-LN

Every placement keeps one colour (`PLACEMENT_COLORS`, from the Okabe-Ito palette); the names a figure shows come
from the notebook (`names`: the Japanese edition passes its own).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt

from .i18n import _
from .palette import BLACK, BLUE, GREEN, ORANGE, PURPLE, VERMILLION

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .records import RunRecord

__all__ = ["PLACEMENT_COLORS", "gradient_profiles", "residual_stream", "two_gradients", "warmup_losses"]

PLACEMENT_COLORS = {"post": VERMILLION, "pre": BLUE, "peri": GREEN, "reordered": PURPLE}
SMOOTHING = 10  # the loss curves of `warmup_losses` are means over this many steps


def gradient_profiles(
    profiles: Mapping[tuple[str, int], Sequence[float]], names: Mapping[str, str], seeds: int
) -> Figure:
    """One panel per depth: the gradient norm of each block's weights at initialization, one line per placement.

    `profiles[(placement, depth)]` holds one norm per block, input side first (mean over `seeds` seeds); the
    placements are drawn in the order of `names`. The y axis is logarithmic, so equal ratios look equal."""
    depths = list(dict.fromkeys(depth for _placement, depth in profiles))
    fig, axes = plt.subplots(1, len(depths), figsize=(13, 4.4), sharey=True)
    for ax, depth in zip(axes, depths):
        for p in names:
            ax.plot(range(1, depth + 1), profiles[(p, depth)], "o-", ms=3, color=PLACEMENT_COLORS[p], label=names[p])
        ax.set_title(_("{layers} layers").format(layers=depth))
        ax.set_xlabel(_("block (1 = input side)"))
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
    ticks = [0.3, 0.5, 1, 2, 3]
    axes[0].set_yticks(ticks, [f"{t:g}" for t in ticks])
    axes[0].minorticks_off()
    axes[0].set_ylabel(_("‖gradient of the block's weights‖ (log scale)"))
    axes[0].legend()
    fig.suptitle(
        _("Per-block gradient norm at initialization (init std 1/√d, mean of {seeds} seeds)").format(seeds=seeds)
    )
    fig.tight_layout()
    return fig


def residual_stream(
    hidden: Mapping[str, Sequence[float]],
    names: Mapping[str, str],
    predicted: Sequence[float],
    guide: Sequence[float],
    anchor: int,
    seeds: int,
) -> Figure:
    """The RMS of the residual stream after each block, one line per placement, with two predictions.

    `hidden[placement]` starts with the embedding's RMS (block 0); `predicted` is √(RMS₀² + 2l), the growth when
    each of a block's two branches adds an output of RMS 1, and `guide` a √l curve through Pre-LN at `anchor`."""
    blocks = range(1, len(predicted) + 1)
    fig, ax = plt.subplots(figsize=(11, 4.8))
    for p in names:
        ax.plot(blocks, hidden[p][1:], "o-", ms=3, color=PLACEMENT_COLORS[p], label=names[p])
    ax.plot(
        blocks, guide, ":", lw=2, color=BLACK, label=_("∝ √$l$, through Pre-LN at block {anchor}").format(anchor=anchor)
    )
    ax.plot(
        blocks,
        predicted,
        "--",
        lw=1.2,
        color="gray",
        label=_("√(RMS$_0^2$ + 2$l$), predicted\nfor Peri-LN and reordered"),
    )
    ax.set_xlabel(_("block $l$"))
    ax.set_ylabel(_("RMS of the stream after block $l$"))
    ax.set_title(
        _("The residual stream at init ({layers} layers, init std 1/√d, mean of {seeds} seeds)").format(
            layers=len(predicted), seeds=seeds
        )
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    return fig


def two_gradients(weight_grads: Sequence[float], stream_grads: Sequence[float], seeds: int) -> Figure:
    """Pre-LN at initialization: the gradient of each block's weights and of the stream after it, on a log scale.

    Both are per block, input side first (mean over `seeds` seeds): two parallel lines say that the weights'
    gradient shrinks toward the output because the stream's gradient does."""
    blocks = range(1, len(weight_grads) + 1)
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    ax.plot(blocks, weight_grads, "o-", ms=3, color=PLACEMENT_COLORS["pre"], label=_("‖∇θ_l‖: the block's weights"))
    ax.plot(blocks, stream_grads, "s--", ms=3, color=ORANGE, label=_("‖∂L/∂x_l‖: the stream after block $l$"))
    ax.set_yscale("log")
    ax.set_xlabel(_("block $l$"))
    ax.set_ylabel(_("gradient norm (log scale)"))
    ax.set_title(
        _("Pre-LN at init ({layers} layers, mean of {seeds} seeds): two gradients, parallel").format(
            layers=len(weight_grads), seeds=seeds
        )
    )
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return fig


def smooth(values: Sequence[float], k: int = SMOOTHING) -> list[float]:
    """The mean of the last `k` values at each step (fewer at the start): a loss curve without its step noise."""
    return [statistics.fmean(values[max(0, i - k + 1) : i + 1]) for i in range(len(values))]


def warmup_losses(
    runs: Mapping[tuple[str, int, int], RunRecord],
    names: Mapping[str, str],
    seeds: Sequence[int],
    warmup: int,
    lr: float,
    unigram: float,
) -> Figure:
    """Two panels, Post-LN and Pre-LN: the training loss of every seed, with and without `warmup` steps of warmup.

    `runs[(placement, warmup_steps, seed)]` is a run's record; the dotted line is the unigram entropy, the loss of a
    model that ignores the context (a run stuck there has learned word frequencies only)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    styles = {
        ("post", 0): ("-", VERMILLION),
        ("post", warmup): ("--", GREEN),
        ("pre", 0): ("-", PLACEMENT_COLORS["pre"]),
    }
    for ax, p in zip(axes, ("post", "pre")):
        for (q, steps), (style, color) in styles.items():
            if q != p:
                continue
            for s in seeds:
                label = (
                    (_("no warmup") if steps == 0 else _("warmup {steps} steps").format(steps=steps))
                    if s == 0
                    else None
                )
                ax.plot(smooth(runs[(p, steps, s)].losses), style, color=color, lw=1.3, label=label)
        ax.axhline(unigram, color="gray", lw=1, ls=":", label=_("unigram entropy"))
        if p == "post":
            ax.axvline(warmup, color="gray", lw=0.8, alpha=0.5, label=_("end of warmup"))
        ax.set_title(
            _("{name}, lr {lr:g}, init std 1/√d, {seeds} seeds").format(name=names[p], lr=lr, seeds=len(seeds))
        )
        ax.set_xlabel(_("step"))
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set_ylabel(_("training loss ({steps}-step mean)").format(steps=SMOOTHING))
    fig.tight_layout()
    return fig
