"""The normalization recipes of real model families, at TinyGPT's size (chapter 06).

A recipe is a small set of GPTConfig switches (and, for OLMo 2, one training switch) that copies how a
model family normalizes: which norm, which gain, where the norms sit, whether q and k are normalized and
how, which logits are softcapped, and what happens to the embeddings. Everything else (width, depth, the
MLP, the tokenizer, GQA, tied embeddings, biases) stays TinyGPT's, so that a sweep compares the norms and
nothing else. Each recipe function's docstring names the public reference code it mirrors.

    from course_utils.recipes import RECIPES, recipe_config, recipe_rows, draw_recipe_cards
    RECIPES["gemma3"].model             # {'norm': 'rmsnorm', 'gain': '1+w', 'placement': 'peri', ...}
    recipe_config("qwen3", vocab_size=64)   # a GPTConfig
    show(draw_recipe_cards(), alt=describe_recipes())

The cards and the table are drawn from the configs, never by hand: the order of norms and sub-layers in a
card comes from `placement_diagram.block_layouts`, which traces `Block.forward` with torch.fx.

What a tiny model cannot copy, and the cards do not pretend to: the 27B Gemmas' query scale
(1/sqrt(d_model / n_head): 1/sqrt(144) in Gemma 2 27B and 1/sqrt(168) in Gemma 3 27B, where d_head is 128; the
other sizes scale by 1/sqrt(d_head) like TinyGPT), tied input and output embeddings, GQA head counts,
SwiGLU/GeGLU MLPs, DeepSeek-V3's multi-head latent attention (its RMSNorms sit on the compressed q and kv
latents, which TinyGPT does not have: that row is described in chapter 06 but not trained), and of course the
size. Each recipe does carry its family's norm eps (GPTConfig.norm_eps), with the source it comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .i18n import N_, _
from .model import GPTConfig
from .placement_diagram import NORM, block_layouts

__all__ = [
    "Recipe",
    "RECIPES",
    "recipe_config",
    "recipe_rows",
    "describe_recipes",
    "draw_recipe_cards",
    "gpt2",
    "llama3",
    "qwen3",
    "gemma2",
    "gemma3",
    "olmo2",
]


@dataclass(frozen=True)
class Recipe:
    """One model family's normalization choices: GPTConfig fields, TrainConfig fields, and where they come from."""

    name: str  # the key in RECIPES, usable as a sweep variant
    title: str  # for people: "Gemma 3"
    model: dict  # GPTConfig fields
    train: dict = field(default_factory=dict)  # TrainConfig fields (z-loss)
    source: str = ""  # the reference code it mirrors (the recipe function's docstring)


def _recipe(title: str, model: dict, train: dict | None = None):
    """Turn a function whose docstring cites its source into a Recipe named after the function."""

    def wrap(fn):
        return Recipe(fn.__name__, title, dict(model), dict(train or {}), " ".join(fn.__doc__.split()))

    return wrap


@_recipe("GPT-2", dict(norm="layernorm", placement="pre"))  # eps: LayerNorm's usual 1e-5, GPT-2's
def gpt2():
    """Pre-LN with LayerNorm (gain and bias, eps 1e-5) and a final LayerNorm; no QK-Norm, no softcap, plain
    embeddings. openai/gpt-2 src/model.py (norm(x, scope, epsilon=1e-5); block: x + attn(ln_1(x)),
    x + mlp(ln_2(x)), ln_f); the same in karpathy/nanoGPT model.py."""


@_recipe("Llama 3", dict(norm="rmsnorm", placement="pre", norm_eps=1e-5))
def llama3():
    """Pre-norm with RMSNorm (gain w, eps 1e-5) and a final RMSNorm; q and k go straight from the
    projections to RoPE (no QK-Norm); no softcap; plain embeddings. meta-llama/llama3 llama/model.py
    (ModelArgs.norm_eps = 1e-5, passed to every RMSNorm; TransformerBlock.forward, Attention.forward); the
    Llama 3 and 3.1 8B config.json: rms_norm_eps 1e-05."""


@_recipe("Qwen3", dict(norm="rmsnorm", placement="pre", qk_norm="head", norm_eps=1e-6))
def qwen3():
    """Llama's layout plus QK-Norm: RMSNorm over each head's d_head channels of q and k, before RoPE, in place
    of Qwen2's q/k/v biases; every RMSNorm's eps 1e-6. Embeddings plain (nn.Embedding, no scaling, no
    normalization). Hugging Face transformers models/qwen3/modeling_qwen3.py (Qwen3Attention: q_norm, k_norm =
    Qwen3RMSNorm(head_dim, eps=config.rms_norm_eps)); Qwen/Qwen3-8B config.json: rms_norm_eps 1e-06."""


@_recipe(
    "Gemma 2",
    dict(
        norm="rmsnorm",
        gain="1+w",
        placement="peri",
        attn_softcap=50.0,
        logit_softcap=30.0,
        embed_scale="sqrt_d",
        norm_eps=1e-6,
    ),
)
def gemma2():
    """Four RMSNorms per block (a norm before and after each sub-layer: Peri-LN), gains stored as w and applied
    as (1 + w), eps 1e-6, attention logits softcapped at 50 and output logits at 30, embeddings multiplied by
    sqrt(d_model); no QK-Norm. google-deepmind/gemma gemma/gm/nn/_modules.py (Block, Attention),
    _layers.py (RMSNorm: x * rsqrt(var + 1e-06) * (1 + scale)), _gemma.py (Gemma2 configs); transformers
    models/gemma2."""


@_recipe(
    "Gemma 3", dict(norm="rmsnorm", gain="1+w", placement="peri", qk_norm="head", embed_scale="sqrt_d", norm_eps=1e-6)
)
def gemma3():
    """Gemma 2's norms (eps 1e-6) and embedding scale, with per-head QK-Norm ((1 + w) gains, before RoPE) and no
    softcap at all: attn_logits_soft_cap and final_logit_softcap are None for every Gemma 3 size.
    google-deepmind/gemma gemma/gm/nn/_gemma.py (Gemma3 configs: use_qk_norm=True, softcaps None), _layers.py
    (RMSNorm's 1e-06); transformers models/gemma3."""


@_recipe("OLMo 2", dict(norm="rmsnorm", placement="reordered", qk_norm="full", norm_eps=1e-6), dict(z_loss=1e-5))
def olmo2():
    """The "reordered norm": each sub-layer reads the raw stream and its output is normalized before it is
    added, x + RMSNorm(F(x)); QK-Norm over the full width of q and k (all heads at once), before RoPE; every
    RMSNorm's eps 1e-6; z-loss 1e-5 in training. transformers models/olmo2/modeling_olmo2.py (Olmo2DecoderLayer,
    Olmo2Attention); allenai/OLMo-2-1124-7B config.json (rms_norm_eps 1e-06); allenai/OLMo
    configs/official-1124/OLMo2-7B-stage1.yaml (norm_after, attention_layer_norm, softmax_auxiliary_loss with
    auxiliary_loss_multiplier 1e-5)."""


RECIPES = {r.name: r for r in (gpt2, llama3, qwen3, gemma2, gemma3, olmo2)}


def recipe_config(name: str, **size) -> GPTConfig:
    """The GPTConfig of a recipe; keyword arguments set the size (vocab_size, d_model, n_layer, ...)."""
    if name not in RECIPES:
        raise ValueError(f"recipe must be one of {list(RECIPES)}, got {name!r}")
    clash = set(size) & set(RECIPES[name].model)
    if clash:
        raise ValueError(f"{sorted(clash)} belong to the recipe {name!r}; pass only size fields")
    return GPTConfig(**size, **RECIPES[name].model)


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


def _cap(value) -> str:
    return _("none") if value is None else f"{value:g}"


def recipe_rows(names=None) -> list:
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


def _card_steps(cfg: GPTConfig, train: dict) -> list:
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


def describe_recipes(names=None) -> str:
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


_COLOURS = {"norm": "#E69F00", "sub": "#56B4E9", "io": "#DDDDDD"}
_STREAM = "#0072B2"


def draw_recipe_cards(names=None):
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


def _check_registry() -> None:  # every recipe must build (a bad key fails at import, not in a notebook)
    for r in RECIPES.values():
        GPTConfig(**r.model)
        if not math.isfinite(r.train.get("z_loss", 0.0)):
            raise ValueError(r.name)


_check_registry()
