"""The recipes of chapter 06 shown to people: a table of words and one drawn card per recipe.

    from course_utils.recipe_cards import describe_recipes, draw_recipe_cards, recipe_rows
    recipe_rows()                                        # one dict per recipe: norm, placement, QK-Norm, ...
    show(draw_recipe_cards(), alt=describe_recipes())    # the cards, and the same boxes in words as alt text

The table, the cards and their alt text are read from the recipes' configs (`course_utils.recipes`), never written
by hand: change a recipe and all three change with it. The order of the norms and sub-layers in a card comes from
`placement_diagram.block_layouts`, which traces `Block.forward` with torch.fx. The recipes themselves are plain
data and know nothing of this module, so that the sweeps that train them do not load the drawing code.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .i18n import N_, _
from .model import GPTConfig
from .palette import BLUE, ORANGE, SKY_BLUE
from .placement_diagram import NORM, block_layouts
from .recipes import RECIPES, TrainSwitches

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["recipe_rows", "describe_recipes", "draw_recipe_cards"]

# ----------------------------------------------------------------------------------------------------
# what each config means, in words (the card's labels and the table's cells, all read from GPTConfig)
# ----------------------------------------------------------------------------------------------------
_PLACEMENT = {  # the GPTConfig placement name and its formula (shown with _())
    "pre": N_("pre (x + F(N(x)))"),
    "post": N_("post (N(x + F(x)))"),
    "peri": N_("peri (x + N(F(N(x))))"),
    "reordered": N_("reordered (x + N(F(x)))"),
}


def _norm_label(cfg: GPTConfig) -> str:
    if cfg.norm == "dyt":
        return "DyT"
    name = "LayerNorm" if cfg.norm == "layernorm" else "RMSNorm"
    return f"{name} (1+w)" if cfg.gain == "1+w" else name


def _qk_label(cfg: GPTConfig) -> str:
    return {None: _("none"), "head": _("per head"), "full": _("full width")}[cfg.qk_norm]


def _embed_label(cfg: GPTConfig) -> str:
    return {None: _("plain"), "sqrt_d": "× √d", "l2": "e/‖e‖·√d"}[cfg.embed_scale]


def _cap(value: float | None) -> str:
    return _("none") if value is None else f"{value:g}"


def recipe_rows(names: Iterable[str] | None = None) -> list[dict[str, str]]:
    """One row per recipe, every cell read from its GPTConfig / TrainConfig fields (headers and words in the
    course's language)."""
    rows = []
    for name in names or RECIPES:
        r = RECIPES[name]
        cfg = GPTConfig(**r.model)
        rows.append(
            {
                _("recipe"): r.title,
                _("norm"): _norm_label(cfg),
                _("placement"): _(_PLACEMENT[cfg.placement]),
                "QK-Norm": _qk_label(cfg) + (_(" (before RoPE)") if cfg.qk_norm else ""),
                _("softcap attn / out"): f"{_cap(cfg.attn_softcap)} / {_cap(cfg.logit_softcap)}",
                _("embedding"): _embed_label(cfg),
                "z-loss": f"{r.train['z_loss']:g}" if r.train.get("z_loss") else _("none"),
            }
        )
    return rows


# ----------------------------------------------------------------------------------------------------
# the cards
# ----------------------------------------------------------------------------------------------------
def _card_steps(cfg: GPTConfig, train: TrainSwitches) -> list[tuple[str, str]]:
    """The card's boxes from bottom to top: (kind, label). Sub-layer order comes from tracing Block.forward."""
    steps = [("io", _("embedding") + ("" if cfg.embed_scale is None else f"  {_embed_label(cfg)}"))]
    norm = _norm_label(cfg)
    for sublayer, layout in zip(("attention", "MLP"), block_layouts(cfg.placement)):
        for item in layout.branch:
            if item == NORM:
                steps.append(("norm", norm))
            elif sublayer == "attention":
                lines = [_("attention")]
                if cfg.qk_norm:
                    lines.append(f"QK-Norm {_qk_label(cfg)}")
                if cfg.attn_softcap is not None:
                    lines.append(f"softcap {cfg.attn_softcap:g}")
                steps.append(("sub", "\n".join(lines)))
            else:
                steps.append(("sub", "MLP"))
        steps.append(("add", "+"))
        steps.extend(("norm", norm) for item in layout.highway if item == NORM)
    if cfg.placement != "post":
        steps.append(("norm", norm + _(" (final)")))
    head = _("LM head") + ("" if cfg.logit_softcap is None else f"\nsoftcap {cfg.logit_softcap:g}")
    if train.get("z_loss"):
        head += f"\nz-loss {train['z_loss']:g}"
    steps.append(("io", head))
    return steps


def describe_recipes(names: Iterable[str] | None = None) -> str:
    """Alt text for draw_recipe_cards: each recipe's boxes in order, read from the same configs."""
    parts = []
    for name in names or RECIPES:
        r = RECIPES[name]
        seq = [
            " ".join(label.replace("\n", _(", ")).split())
            for _kind, label in _card_steps(GPTConfig(**r.model), r.train)
        ]
        parts.append(f"{r.title}: " + " → ".join(seq))
    cards = parts[0]
    for part in parts[1:]:  # one sentence per recipe in Japanese: the separator is a message of its own
        cards = _("{cards}; {card}").format(cards=cards, card=part)
    return _("One card per recipe, from the embedding at the bottom to the LM head at the top. {cards}.").format(
        cards=cards
    )


# the fills of the placement diagram (chapter 04), so that a card reads like it; the embedding and the LM head
# are a light grey (not an Okabe-Ito colour): they frame the card and draw no attention
_COLOURS = {"norm": ORANGE, "sub": SKY_BLUE, "io": "#DDDDDD"}
_STREAM = BLUE


def draw_recipe_cards(names: Iterable[str] | None = None) -> Figure:
    """One card per recipe, bottom to top: embedding, one block (norms in orange, sub-layers in blue, ⊕ the
    residual addition), the final norm and the LM head. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    names = list(names or RECIPES)
    cards = [_card_steps(GPTConfig(**RECIPES[n].model), RECIPES[n].train) for n in names]
    height = max(sum(0.77 + 0.24 * lab.count("\n") if k != "add" else 0.55 for k, lab in c) for c in cards)
    fig, axes = plt.subplots(1, len(names), figsize=(2.6 * len(names), 1.0 + 0.95 * height), squeeze=False)
    for ax, name, steps in zip(axes[0], names, cards):
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.3, height + 0.1)
        ax.axis("off")
        ax.set_title(RECIPES[name].title, fontsize=13, fontweight="bold")
        y, fork = 0.0, None
        for i, (kind, label) in enumerate(steps):
            if kind == "add":
                centre = y + 0.22
                ax.text(
                    0.55, centre, "+", ha="center", va="center", fontsize=12, bbox=dict(boxstyle="circle", fc="white")
                )
                # the residual stream: from the fork (the stream before this sub-layer) around the branch into +
                ax.plot([0.55, 0.05, 0.05], [fork, fork, centre], color=_STREAM, lw=2.0)
                ax.annotate(
                    "",
                    xy=(0.47, centre),
                    xytext=(0.05, centre),
                    arrowprops=dict(arrowstyle="->", lw=2.0, color=_STREAM),
                )
                top = y + 0.38
                y += 0.55
            else:
                lines = label.count("\n") + 1
                h = 0.42 + 0.24 * (lines - 1)
                ax.add_patch(plt.Rectangle((0.16, y), 0.78, h, facecolor=_COLOURS[kind], edgecolor="black", lw=1.0))
                ax.text(0.55, y + h / 2, label, ha="center", va="center", fontsize=10, linespacing=1.1)
                top = y + h
                y += h + 0.35
            if i + 1 < len(steps):
                ax.annotate("", xy=(0.55, y), xytext=(0.55, top), arrowprops=dict(arrowstyle="->", lw=1.2))
            on_stream = kind in ("io", "add") or (kind == "norm" and i > 0 and steps[i - 1][0] == "add")
            if on_stream:  # what leaves this box is the residual stream: the next sub-layer forks from here
                fork = (top + y) / 2
    fig.suptitle(_("Recipe cards: one block of each model family, read from its config"), fontsize=13)
    fig.tight_layout()
    return fig
