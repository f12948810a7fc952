"""The figures of chapter 05 and exercise 05: softmax saturation, softcapping, and the stability sweep.

Each function draws one figure from numbers a notebook cell computed and returns the matplotlib Figure; the
cell shows it with `course_utils.figures.show(fig, alt=...)`, which checks that a room can read it. Nothing
here computes a result the chapter asserts: the cells compute, these functions only draw.

    saturation(scales, entropy, top_weight, n)      entropy and largest weight against the logit scale
    attention_weights(base_logits, log_scale)       one query's weights over its keys, at one logit scale
    softcap_curves(taus)                            tau * tanh(s / tau) against the raw logit
    loss_vs_lr(result)                              final loss against learning rate, one line per variant
    plot_final_losses(ax, result, style)            that panel on an axis (chapter 06's sweep_panels draws it too)
    probes(result, lr, d_head)                      max |attention logit| and entropy against the step
    sensitivity_bars(sensitivity, lrs)              the LR sensitivity of each variant
    max_logit_curves(result)                        exercise 05: max |attention logit| of each run

The variants keep one colour everywhere (`VARIANT_COLORS`, from the Okabe-Ito palette, readable with the
common kinds of colour blindness).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import torch

from .attention import attention_entropy, qk_norm_bound, softcap
from .i18n import N_, _
from .palette import BLUE, GREEN, PURPLE, VERMILLION

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "VARIANT_COLORS",
    "saturation",
    "attention_weights",
    "softcap_curves",
    "loss_vs_lr",
    "plot_final_losses",
    "probes",
    "sensitivity_bars",
    "max_logit_curves",
]

VARIANT_COLORS = {"baseline": VERMILLION, "qk_norm": BLUE, "softcap": PURPLE, "qk_norm+softcap": GREEN}


# ----------------------------------------------------------------------------------------------------
# section 1: the softmax saturates
# ----------------------------------------------------------------------------------------------------
def saturation(scales, entropy, top_weight, n_keys: int) -> Figure:
    """Entropy (left axis) and largest weight (right axis) of one query's softmax against the logit scale.

    The two curves cross over where the logits spread over a few units: below that the weights are nearly
    uniform (entropy ln n), above it one key takes almost everything (entropy 0, largest weight 1).
    """
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    ax.semilogx(scales, entropy, color=BLUE, lw=2.5, label=_("entropy of the weights (left axis)"))
    ax.axhline(math.log(n_keys), color=BLUE, ls=":", lw=1.2, label=_("ln {n}: uniform attention").format(n=n_keys))
    ax.set_xlabel(_("logit scale (standard deviation of the logits)"))
    ax.set_ylabel(_("entropy (nats)"))
    ax.set_ylim(-0.1, 4.6)
    right = ax.twinx()
    right.semilogx(scales, top_weight, color=VERMILLION, lw=2, ls="--", label=_("largest weight (right axis)"))
    right.set_ylabel(_("largest attention weight"))
    right.set_ylim(0, 1.05)
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [str(line.get_label()) for line in lines], loc="center left")
    ax.set_title(_("Bigger logits: the softmax saturates, its entropy collapses"))
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def attention_weights(base_logits: torch.Tensor, log_scale: float) -> Figure:
    """Bar chart of softmax(10**log_scale * base_logits): one query's weight on each key."""
    p = torch.softmax(10**log_scale * base_logits, dim=-1)
    n_keys = p.numel()
    fig, ax = plt.subplots(figsize=(7.5, 2.8))
    ax.bar(range(n_keys), p.tolist(), color=BLUE)
    ax.set_xlabel(_("key index"))
    ax.set_ylabel(_("attention weight"))
    ax.set_ylim(0, 1)
    ax.set_title(
        _("logit scale {scale:.3g}: entropy {entropy:.2f} nats (uniform: {uniform:.2f})").format(
            scale=10**log_scale, entropy=attention_entropy(p).item(), uniform=math.log(n_keys)
        )
    )
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------------
# section 5: softcapping
# ----------------------------------------------------------------------------------------------------
_CAPS = ((50.0, N_("attention cap")), (30.0, N_("final-logit cap")))  # names translated where drawn


def softcap_curves(taus: tuple[tuple[float, str], ...] = _CAPS, limit: float = 150.0) -> Figure:
    """tau * tanh(s / tau) for each (tau, name), against the raw logit s, with the identity and the lines +-tau."""
    s = torch.linspace(-limit, limit, 601)
    fig, ax = plt.subplots(figsize=(7.5, 3.9))
    ax.plot(s, s, color="black", lw=1, ls=":", label=_("raw logit (no cap)"))
    for (tau, name), color, style in zip(taus, (BLUE, VERMILLION), ("-", "--")):
        ax.plot(
            s,
            softcap(s, tau),
            color=color,
            lw=2.5,
            ls=style,
            label=_("{name}, τ = {tau:g}").format(name=_(name), tau=tau),
        )
        for sign in (1, -1):
            ax.axhline(sign * tau, color=color, lw=0.8, alpha=0.5)
    ax.set_xlabel(_("raw logit s"))
    ax.set_ylabel(_("capped logit τ·tanh(s/τ)"))
    ax.set_ylim(-limit - 10, limit + 10)
    ax.set_title(_("Softcapping: nearly the identity for small logits, never beyond ±τ"))
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------------
# section 6: the sweep
# ----------------------------------------------------------------------------------------------------
def plot_final_losses(ax: Axes, result, style, margin: float = 0.5) -> tuple[float, float]:
    """The final validation loss of every variant against learning rate, drawn on `ax`; returns (ℓ0, best).

    A diverged run is drawn at the untrained loss ℓ0, as the LR sensitivity counts it, and every failed run is
    circled. ℓ0 is dotted, and the band "within `margin` nats of the best run" is shaded: a finite run above it is
    degraded. `style(variant)` gives the keywords of the variant's line (its `color` circles its failures).
    Chapter 05's loss_vs_lr and chapter 06's recipe_lab.sweep_panels draw this panel.
    """
    l0 = max(r.initial_loss for r in result)
    best = min(r.final_loss for r in result if not r.diverged)
    for variant in result.variants:
        runs = result.of(variant)
        shown = [min(r.final_loss, r.initial_loss) for r in runs]
        line = style(variant)
        ax.plot([r.lr for r in runs], shown, **line)
        failed = [(r.lr, y) for r, y in zip(runs, shown) if not r.survived]
        if failed:
            lrs, ys = zip(*failed)
            ax.scatter(lrs, ys, s=170, facecolors="none", edgecolors=line["color"], linewidths=2)
    ax.axhline(l0, color="black", ls=":", lw=1, label=_("initial loss ℓ0 (untrained)"))
    ax.axhspan(
        best,
        best + margin,
        color=GREEN,
        alpha=0.12,
        label=_("within {margin:g} nats of the best: ok").format(margin=margin),
    )
    return l0, best


def loss_vs_lr(result, margin: float = 0.5) -> Figure:
    """Final validation loss against learning rate, one line per variant; failed runs circled (plot_final_losses)."""

    def style(variant: str) -> dict[str, Any]:
        capped = "softcap" in variant  # dashed, so that a softcap variant on top of another stays visible
        return dict(
            color=VARIANT_COLORS.get(variant, "gray"),
            lw=2 if capped else 3,
            ls="--" if capped else "-",
            marker="s" if capped else "o",
            label=variant,
        )

    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    l0, best = plot_final_losses(ax, result, style, margin)
    ax.set_xscale("log")
    ax.set_xticks(result.lrs, [f"{lr:g}" for lr in result.lrs])
    ax.minorticks_off()
    ax.set_xlabel(_("learning rate (log scale)"))
    ax.set_ylabel(_("final validation loss (nats)"))
    ax.set_title(_("Final loss vs learning rate (circled: the run failed)"))
    ax.legend(loc="upper left", ncol=2)
    ax.set_ylim(best - 0.2, l0 + 0.9)  # room for the legend above the lines
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def probes(result, lr: float, d_head: int) -> Figure:
    """Two panels at one learning rate: the largest |attention logit| (log scale) and the mean attention
    entropy, against the step, for every variant; with QK-Norm also the bound its logged gains allow."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(10.5, 5.0))
    for variant in result.variants:
        r = result.get(variant, lr)
        color = VARIANT_COLORS.get(variant, "gray")
        a.semilogy(r.probe_steps[: len(r.max_logit)], r.max_logit, color=color, lw=2, label=variant)
        b.plot(r.probe_steps[: len(r.entropy)], r.entropy, color=color, lw=2, label=variant)
        if r.qk_bound:  # the bound the logged gains allow: sqrt(d_h) * max|g_q| * max|g_k|
            a.semilogy(r.probe_steps[: len(r.qk_bound)], r.qk_bound, color=color, lw=1.5, ls="--")
    a.axhline(qk_norm_bound(d_head), color="black", ls=":", lw=1, label=_("√d_h: QK-Norm's bound, unit gains"))
    a.plot([], [], color="gray", lw=1.5, ls="--", label=_("QK-Norm's bound with the learned gains"))
    a.set_xlabel(_("step"))
    a.set_ylabel(_("largest |attention logit| (log scale)"))
    a.set_title(_("max attention logit, lr {lr:g}").format(lr=lr))
    b.set_xlabel(_("step"))
    b.set_ylabel(_("mean attention entropy (nats)"))
    b.set_title(_("attention entropy, lr {lr:g}").format(lr=lr))
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.legend(*a.get_legend_handles_labels(), loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def sensitivity_bars(
    sensitivity: dict[str, float],
    lrs,
    titles: dict[str, str] | None = None,
    colors: dict[str, str] | None = None,
    ylabel: str | None = None,
    figsize: tuple[float, float] = (7.5, 3.4),
) -> Figure:
    """Horizontal bars: the LR sensitivity of each variant over the grid `lrs` (lower is more robust).

    titles and colors map a variant's name to its label and colour (chapter 06 passes its recipes')."""
    titles, colors = titles or {}, colors or VARIANT_COLORS
    fig, ax = plt.subplots(figsize=figsize)
    names = list(sensitivity)
    ax.barh(
        [titles.get(v, v) for v in names], [sensitivity[v] for v in names], color=[colors.get(v, "gray") for v in names]
    )
    ax.invert_yaxis()
    ax.set_xlabel(_("LR sensitivity (nats; lower is more robust)"))
    ax.set_ylabel(_("variant") if ylabel is None else ylabel)
    ax.set_title(_("LR sensitivity over the grid {lrs}").format(lrs=", ".join(f"{lr:g}" for lr in lrs)))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------------
# exercise 05
# ----------------------------------------------------------------------------------------------------
def max_logit_curves(result, d_head: int = 16) -> Figure:
    """The largest |attention logit| against the step for every run of a sweep: one colour per variant,
    darker and thicker for a higher learning rate."""
    fig, ax = plt.subplots(figsize=(9.5, 4.4))
    lrs = result.lrs
    for r in result:
        shade = (lrs.index(r.lr) + 1) / len(lrs)
        ax.semilogy(
            r.probe_steps[: len(r.max_logit)],
            r.max_logit,
            color=VARIANT_COLORS.get(r.variant, "gray"),
            alpha=0.35 + 0.65 * shade,
            lw=1 + 1.5 * shade,
            ls="-" if r.variant == "baseline" else "--",
            label=f"{r.variant}, lr {r.lr:g}",
        )
    ax.axhline(qk_norm_bound(d_head), color="black", ls=":", lw=1, label=f"√d_h = {math.sqrt(d_head):g}")
    ax.set_xlabel(_("step"))
    ax.set_ylabel(_("largest |attention logit| (log scale)"))
    ax.set_title(_("Max attention logit during training"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the curves, not over them
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
