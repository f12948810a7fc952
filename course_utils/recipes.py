"""The normalization recipes of real model families, at TinyGPT's size (chapter 06): plain data.

A recipe is a small set of GPTConfig switches (and, for OLMo 2, one training switch) that copies how a
model family normalizes: which norm, which gain, where the norms sit, whether q and k are normalized and
how, which logits are softcapped, and what happens to the embeddings. Everything else (width, depth, the
MLP, the tokenizer, GQA, tied embeddings, biases) stays TinyGPT's, so that a sweep compares the norms and
nothing else. Each recipe's `source` names the public reference code it mirrors.

    from course_utils.recipes import GEMMA3, RECIPES, recipe_config
    GEMMA3.model                            # {'norm': 'rmsnorm', 'gain': '1+w', 'placement': 'peri', ...}
    RECIPES["gemma3"] is GEMMA3             # the registry, by the name a sweep takes as a variant
    recipe_config("qwen3", vocab_size=64)   # a GPTConfig

The sweeps' own variants (`experiments.VARIANTS`: baseline, qk_norm, z_loss, ...) are Recipes too, so a sweep
reads every variant the same way: `GPTConfig(**size, **recipe.model)` and `TrainConfig(**..., **recipe.train)`.
How the recipes are shown to people, as a table and as drawn cards, is `course_utils.recipe_cards`.

To add a recipe: write `NAME = Recipe(...)` below with its source, add it to RECIPES, and give it a colour in
`recipe_lab.COLORS`; the table, the cards and the sweep read it from there. A switch that GPTConfig or TrainConfig
lacks goes into those first, then into ModelSwitches or TrainSwitches.

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
from typing import Any, TypedDict

from .model import EmbedScale, Gain, GPTConfig, Norm, Placement, QKNorm

__all__ = [
    "ModelSwitches",
    "TrainSwitches",
    "Recipe",
    "GPT2",
    "LLAMA3",
    "QWEN3",
    "GEMMA2",
    "GEMMA3",
    "OLMO2",
    "RECIPES",
    "recipe_config",
]


class ModelSwitches(TypedDict, total=False):
    """The GPTConfig fields a recipe may set: how the model normalizes, never its size (model.GPTConfig explains
    each value)."""

    norm: Norm
    gain: Gain
    placement: Placement
    qk_norm: QKNorm | None
    attn_softcap: float | None
    logit_softcap: float | None
    embed_scale: EmbedScale | None
    norm_eps: float | None


class TrainSwitches(TypedDict, total=False):
    """The TrainConfig fields a recipe may set (training.TrainConfig explains each)."""

    z_loss: float  # the coefficient of PaLM's auxiliary loss on log Z
    qk_norm_from: float  # the fraction of the steps after which the QK-Norm layers switch on


@dataclass(frozen=True)
class Recipe:
    """A named set of switches on the plain TinyGPT, and where it comes from: a model family's recipe (RECIPES)
    or one of the sweeps' variants (experiments.VARIANTS). Only what it changes is written down; every field it
    leaves out keeps GPTConfig's or TrainConfig's default."""

    name: str  # the key in RECIPES (or VARIANTS): what a sweep takes as a variant
    title: str  # for people: "Gemma 3"
    source: str  # the reference code (or paper) the switches are read from
    model: ModelSwitches = field(default_factory=ModelSwitches)
    train: TrainSwitches = field(default_factory=TrainSwitches)

    def __post_init__(self) -> None:  # a wrong switch fails when the module is imported, not in a notebook
        for switches, allowed in ((self.model, ModelSwitches), (self.train, TrainSwitches)):
            unknown = set(switches) - allowed.__optional_keys__
            if unknown:
                raise ValueError(f"recipe {self.name!r}: {sorted(unknown)} are not {allowed.__name__}")
        GPTConfig(**self.model)  # raises for a value GPTConfig does not accept
        if not all(isinstance(value, (int, float)) and math.isfinite(value) for value in self.train.values()):
            raise ValueError(f"recipe {self.name!r}: training switches must be finite numbers, got {self.train}")


GPT2 = Recipe(
    name="gpt2",
    title="GPT-2",
    model=ModelSwitches(norm="layernorm", placement="pre"),  # eps: LayerNorm's usual 1e-5, GPT-2's
    source="Pre-LN with LayerNorm (gain and bias, eps 1e-5) and a final LayerNorm; no QK-Norm, no softcap, plain "
    "embeddings. openai/gpt-2 src/model.py (norm(x, scope, epsilon=1e-5); block: x + attn(ln_1(x)), "
    "x + mlp(ln_2(x)), ln_f); the same in karpathy/nanoGPT model.py.",
)

LLAMA3 = Recipe(
    name="llama3",
    title="Llama 3",
    model=ModelSwitches(norm="rmsnorm", placement="pre", norm_eps=1e-5),
    source="Pre-norm with RMSNorm (gain w, eps 1e-5) and a final RMSNorm; q and k go straight from the "
    "projections to RoPE (no QK-Norm); no softcap; plain embeddings. meta-llama/llama3 llama/model.py "
    "(ModelArgs.norm_eps = 1e-5, passed to every RMSNorm; TransformerBlock.forward, Attention.forward); the "
    "Llama 3 and 3.1 8B config.json: rms_norm_eps 1e-05.",
)

QWEN3 = Recipe(
    name="qwen3",
    title="Qwen3",
    model=ModelSwitches(norm="rmsnorm", placement="pre", qk_norm="head", norm_eps=1e-6),
    source="Llama's layout plus QK-Norm: RMSNorm over each head's d_head channels of q and k, before RoPE, in place "
    "of Qwen2's q/k/v biases; every RMSNorm's eps 1e-6. Embeddings plain (nn.Embedding, no scaling, no "
    "normalization). Hugging Face transformers models/qwen3/modeling_qwen3.py (Qwen3Attention: q_norm, k_norm = "
    "Qwen3RMSNorm(head_dim, eps=config.rms_norm_eps)); Qwen/Qwen3-8B config.json: rms_norm_eps 1e-06.",
)

GEMMA2 = Recipe(
    name="gemma2",
    title="Gemma 2",
    model=ModelSwitches(
        norm="rmsnorm",
        gain="1+w",
        placement="peri",
        attn_softcap=50.0,
        logit_softcap=30.0,
        embed_scale="sqrt_d",
        norm_eps=1e-6,
    ),
    source="Four RMSNorms per block (a norm before and after each sub-layer: Peri-LN), gains stored as w and applied "
    "as (1 + w), eps 1e-6, attention logits softcapped at 50 and output logits at 30, embeddings multiplied by "
    "sqrt(d_model); no QK-Norm. google-deepmind/gemma gemma/gm/nn/_modules.py (Block, Attention), "
    "_layers.py (RMSNorm: x * rsqrt(var + 1e-06) * (1 + scale)), _gemma.py (Gemma2 configs); transformers "
    "models/gemma2.",
)

GEMMA3 = Recipe(
    name="gemma3",
    title="Gemma 3",
    model=ModelSwitches(
        norm="rmsnorm", gain="1+w", placement="peri", qk_norm="head", embed_scale="sqrt_d", norm_eps=1e-6
    ),
    source="Gemma 2's norms (eps 1e-6) and embedding scale, with per-head QK-Norm ((1 + w) gains, before RoPE) and no "
    "softcap at all: attn_logits_soft_cap and final_logit_softcap are None for every Gemma 3 size. "
    "google-deepmind/gemma gemma/gm/nn/_gemma.py (Gemma3 configs: use_qk_norm=True, softcaps None), _layers.py "
    "(RMSNorm's 1e-06); transformers models/gemma3.",
)

OLMO2 = Recipe(
    name="olmo2",
    title="OLMo 2",
    model=ModelSwitches(norm="rmsnorm", placement="reordered", qk_norm="full", norm_eps=1e-6),
    train=TrainSwitches(z_loss=1e-5),
    source='The "reordered norm": each sub-layer reads the raw stream and its output is normalized before it is '
    "added, x + RMSNorm(F(x)); QK-Norm over the full width of q and k (all heads at once), before RoPE; every "
    "RMSNorm's eps 1e-6; z-loss 1e-5 in training. transformers models/olmo2/modeling_olmo2.py (Olmo2DecoderLayer, "
    "Olmo2Attention); allenai/OLMo-2-1124-7B config.json (rms_norm_eps 1e-06); allenai/OLMo "
    "configs/official-1124/OLMo2-7B-stage1.yaml (norm_after, attention_layer_norm, softmax_auxiliary_loss with "
    "auxiliary_loss_multiplier 1e-5).",
)

RECIPES = {r.name: r for r in (GPT2, LLAMA3, QWEN3, GEMMA2, GEMMA3, OLMO2)}  # in the chapter's order


def recipe_config(name: str, **size: Any) -> GPTConfig:
    """The GPTConfig of a recipe; keyword arguments set the size (vocab_size, d_model, n_layer, ...)."""
    if name not in RECIPES:
        raise ValueError(f"recipe must be one of {list(RECIPES)}, got {name!r}")
    clash = set(size) & set(RECIPES[name].model)
    if clash:
        raise ValueError(f"{sorted(clash)} belong to the recipe {name!r}; pass only size fields")
    return GPTConfig(**size, **RECIPES[name].model)
