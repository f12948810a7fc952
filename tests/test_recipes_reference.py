"""Each recipe of chapter 06 against its reference model in Hugging Face transformers, block by block.

For every recipe (course_utils/recipes.py) the test builds two tiny models, TinyGPT from the recipe and the Hugging
Face model of that family from a config object (no download), gives them the same weights, runs the same tokens
through both in float64, and compares the residual stream entering the first block, after every block, after the
final norm, and the logits. Every norm is compared on its own as well (what goes in and what comes out), so each one
is shown to sit where its counterpart sits. Before any number is compared, the norms are listed on both sides and
must agree: how many, which one stands for which (pre-attention, post-attention, pre-MLP, post-MLP, final, q, k) and
the order in which a forward pass enters them and the sub-layers, the eps of each, the gain form (w or 1 + w, found by
running the norm with its stored weight set to zero), the width (q/k per head d_h or the whole width) and the
softcaps. The weights are drawn so that every part shows in the numbers: norm gains far from 1 (w in [0.5, 1.5], or
Gemma's w in [-0.5, 0.5]), LayerNorm biases, linear layers of std 1/sqrt(fan_in), embeddings of TinyGPT's std 0.02
(small enough that the eps shows), and for Gemma 2 q, k and the LM head drawn hotter, so that both softcaps are
active (the test checks that they are).

The eps and the softcaps on the reference side are the released models' (REFERENCE below, with the config each comes
from), not the Hugging Face classes' defaults (Olmo2Config's default eps is 1e-5, the released OLMo 2's is 1e-6;
LlamaConfig's is 1e-6, Llama 3's is 1e-5) and never the recipe's: the recipe is what is being checked.

What TinyGPT simplifies on purpose, and how each comparison makes the two sides equal (chapter 06 lists them):

1. MLP: TinyGPT's MLP is down(GELU(up(x))) without biases. Llama, Qwen3 and OLMo 2 use SwiGLU, Gemma 2 and 3 GeGLU
   (gated, tanh GELU): each reference layer's `mlp` is replaced by the TinyGPT block's own MLP module. GPT-2's MLP
   has TinyGPT's shape and keeps its own module: `activation_function="gelu"` (the exact GELU, where GPT-2 uses the
   tanh approximation "gelu_new") and its biases set to 0.
2. Biases: TinyGPT's linear layers have none. GPT-2's c_attn, c_proj, c_fc biases are set to 0; the other families
   have none (`attention_bias=False`, their released configs' value). LayerNorm keeps its bias (GPT-2's ln_* have
   one, and so does TinyGPT's LayerNorm).
3. Positions: TinyGPT uses RoPE with base 10000 in every recipe (the rotate-half layout of the Hugging Face code).
   The references are configured with `rope_theta=10000` and the default RoPE type (Gemma 2 uses 10000 already;
   Llama 3 uses 500000 with its "llama3" frequency scaling, Qwen3 1000000, Gemma 3 10000 locally and 1000000 globally,
   OLMo 2 500000). GPT-2 has learned absolute positions instead: its position table `wpe` is set to 0 and TinyGPT is
   built with `rope=False`.
4. Attention window: TinyGPT attends to every earlier token in every layer. Gemma 2 (every other layer) and Gemma 3
   (five layers in six) use sliding-window attention: `layer_types` is all "full_attention" (and `sliding_window`
   larger than the sequence). Qwen3's `use_sliding_window` stays False, its released value.
5. Query scale: TinyGPT divides the attention logits by sqrt(d_h). Gemma 2 and 3 divide by
   sqrt(query_pre_attn_scalar), which equals d_h except in the 27B models: `query_pre_attn_scalar=head_dim`.
6. Embeddings: TinyGPT's LM head is its own matrix; GPT-2 and Gemma 2 and 3 tie it to the token embedding:
   `tie_word_embeddings=False` everywhere (the Llama 3 8B, Qwen3 8B and OLMo 2 7B configs are untied already).
7. Size and heads: 2 layers, d_model 64, 4 heads of d_h 16, vocabulary 96, 16 tokens; `head_dim` is set explicitly
   (the Qwen3 and Gemma classes default to 128 and 256). The RMSNorm families run with 2 key/value heads (GQA, as
   Llama 3, Qwen3 and Gemma do; TinyGPT has it), so that OLMo 2's k-norm (width n_kv_head * d_h) differs in width
   from its q-norm here (OLMo 2 7B itself has as many key/value heads as query heads).
8. Attention code and precision: the reference runs its "eager" attention (Gemma 2's softcap needs it) in eval mode
   (no dropout). Both models are float64, but the reference computes its RMSNorms, its softmax and its RoPE angles in
   float32 whatever the model's dtype, so the RMSNorm families agree to a few 1e-7 (Gemma 2, whose hot weights
   magnify the rounding, to a few 1e-6), not to float64's 1e-15; GPT-2, with none of these, agrees to 1e-15. That
   this is all there is was measured once: with those three computations patched to float64 on the reference side,
   every family agrees to 1.3e-15 or better, and Gemma 2 (whose norms and explicit attention TinyGPT computes in the
   same order) to exactly 0. TOLERANCE below is set from the unpatched differences.

Not compared here: training (OLMo 2's z-loss is a TrainConfig switch, tests/test_recipes.py checks it), low
precision (in bfloat16 the reference rounds Gemma's sqrt(d_model) embedding scale to bfloat16), and everything the
equalizations above remove.

The test can fail: `test_the_comparison_catches_a_wrong_recipe` changes one thing in the course model at a time (a
norm's placement, the gain form, the q/k norm's order against RoPE, a softcap or the embedding scale left out, an eps)
and checks that the same comparison then misses by more than MARGIN tolerances (by 1.3e4 to 7.9e5 of them, measured);
`test_the_inventory_catches_a_wrong_recipe` shows the structural check failing on a wrong norm count, order, width,
gain form, eps or bias, before any number is compared.
"""

from __future__ import annotations

import copy
import inspect
import os
import socket
from dataclasses import dataclass, replace

os.environ["HF_HUB_OFFLINE"] = "1"  # everything is built from config objects: nothing may be downloaded

import huggingface_hub
import pytest
import torch
from torch import nn
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Olmo2Config,
    Olmo2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from course_utils import norms, recipes
from course_utils.attention import RotaryEmbedding
from course_utils.model import GPTConfig, TinyGPT, norm_eps_of

VOCAB, SEQ, D, LAYERS, HEADS, KV_HEADS = 96, 16, 64, 2, 4, 2
D_HEAD = D // HEADS
ROPE_THETA = inspect.signature(RotaryEmbedding).parameters["base"].default  # TinyGPT's RoPE base: 10000
# The largest |TinyGPT - reference| allowed at any stage, divided by max(1, max |reference|) there. Measured on this
# machine (torch 2.13.0+cpu, transformers 5.24.0): GPT-2 1.1e-15 (float64 throughout); Llama 3, Qwen3, Gemma 3 and
# OLMo 2 2.1e-7 to 4.3e-7 (the reference's float32 norms, softmax and RoPE angles); Gemma 2 4.3e-6 (its hot q, k and
# LM head magnify the same rounding). A wrong recipe misses by 2.5e-2 (an eps) to 1.8 (Gemma's gain form).
TOLERANCE = {"gpt2": 1e-12, "gemma2": 2e-5}
FLOAT32_TOLERANCE = 2e-6  # the other families
MARGIN = 1000  # a wrong recipe must miss by at least this many tolerances (test_the_comparison_catches_a_wrong_recipe)


@dataclass(frozen=True)
class Reference:
    """A family's reference model and the released values the recipe must match."""

    config_class: type
    model_class: type
    eps: float  # every norm's eps in the released model
    attn_softcap: float | None
    logit_softcap: float | None
    source: str  # where eps and softcaps come from
    norm_map: dict  # TinyGPT norm (inside a block, or "norm_f") -> (the reference's name for it, where it sits)


LLAMA_NORMS = {
    "norm1": ("input_layernorm", "pre-attention"),
    "norm2": ("post_attention_layernorm", "pre-MLP"),  # Llama's name: it comes after attention, before the MLP
    "norm_f": ("norm", "final"),
}
GEMMA_NORMS = {
    "norm1": ("input_layernorm", "pre-attention"),
    "norm1_out": ("post_attention_layernorm", "post-attention"),
    "norm2": ("pre_feedforward_layernorm", "pre-MLP"),
    "norm2_out": ("post_feedforward_layernorm", "post-MLP"),
    "norm_f": ("norm", "final"),
}
QK_NORMS = {"attn.q_norm": ("self_attn.q_norm", "q"), "attn.k_norm": ("self_attn.k_norm", "k")}

REFERENCE = {
    "gpt2": Reference(
        GPT2Config,
        GPT2LMHeadModel,
        1e-5,
        None,
        None,
        "openai-community/gpt2 config.json: layer_norm_epsilon 1e-05",
        {"norm1": ("ln_1", "pre-attention"), "norm2": ("ln_2", "pre-MLP"), "norm_f": ("ln_f", "final")},
    ),
    "llama3": Reference(
        LlamaConfig,
        LlamaForCausalLM,
        1e-5,
        None,
        None,
        "meta-llama/Meta-Llama-3-8B config.json: rms_norm_eps 1e-05",
        LLAMA_NORMS,
    ),
    "qwen3": Reference(
        Qwen3Config,
        Qwen3ForCausalLM,
        1e-6,
        None,
        None,
        "Qwen/Qwen3-8B config.json: rms_norm_eps 1e-06",
        {**LLAMA_NORMS, **QK_NORMS},
    ),
    "gemma2": Reference(
        Gemma2Config,
        Gemma2ForCausalLM,
        1e-6,
        50.0,
        30.0,
        "google/gemma-2-9b config.json: rms_norm_eps 1e-06, attn_logit_softcapping 50.0, final_logit_softcapping 30.0",
        GEMMA_NORMS,
    ),
    "gemma3": Reference(
        Gemma3TextConfig,
        Gemma3ForCausalLM,
        1e-6,
        None,
        None,
        "google/gemma-3-4b-pt text_config: rms_norm_eps 1e-06, attn_logit_softcapping and final_logit_softcapping null",
        {**GEMMA_NORMS, **QK_NORMS},
    ),
    "olmo2": Reference(
        Olmo2Config,
        Olmo2ForCausalLM,
        1e-6,
        None,
        None,
        "allenai/OLMo-2-1124-7B config.json: rms_norm_eps 1e-06",
        {
            "norm1": ("post_attention_layernorm", "post-attention"),
            "norm2": ("post_feedforward_layernorm", "post-MLP"),
            "norm_f": ("norm", "final"),
            **QK_NORMS,
        },
    ),
}

# Gemma 2's softcaps act only on logits beyond about the cap: there q, k and the LM head are drawn this much hotter
HOT = {"gemma2": {"attn.q_proj": 5.0, "attn.k_proj": 5.0, "lm_head": 15.0}}


# ----------------------------------------------------------------------------------------------------------------
# the two models
# ----------------------------------------------------------------------------------------------------------------
def tiny_config(name: str) -> GPTConfig:
    size = dict(vocab_size=VOCAB, block_size=SEQ, n_layer=LAYERS, n_head=HEADS, d_model=D)
    if name == "gpt2":
        size["rope"] = False  # equalization 3: GPT-2's positions are a learned table, set to 0 on its side
    else:
        size["n_kv_head"] = KV_HEADS  # equalization 7
    return recipes.recipe_config(name, **size)


NO_SPECIAL_TOKENS = dict(bos_token_id=None, eos_token_id=None, pad_token_id=None)  # the real ids lie beyond VOCAB


def reference_config(name: str):
    ref = REFERENCE[name]
    if name == "gpt2":
        return GPT2Config(
            vocab_size=VOCAB,
            n_positions=SEQ,
            n_embd=D,
            n_layer=LAYERS,
            n_head=HEADS,
            layer_norm_epsilon=ref.eps,
            activation_function="gelu",  # equalization 1
            **NO_SPECIAL_TOKENS,
            tie_word_embeddings=False,  # equalization 6
            attn_implementation="eager",
        )
    common = dict(
        vocab_size=VOCAB,
        hidden_size=D,
        intermediate_size=4 * D,  # unused: the MLP is TinyGPT's (equalization 1)
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=SEQ,
        rms_norm_eps=ref.eps,
        attention_bias=False,
        **NO_SPECIAL_TOKENS,
        tie_word_embeddings=False,  # equalization 6
        attn_implementation="eager",  # equalization 8
    )
    rope = {"rope_type": "default", "rope_theta": ROPE_THETA}  # equalization 3
    if name in ("llama3", "qwen3"):
        return ref.config_class(**common, head_dim=D_HEAD, rope_parameters=rope)
    if name == "olmo2":
        return ref.config_class(**common, rope_parameters=rope)  # head_dim is hidden_size / heads
    gemma = dict(
        head_dim=D_HEAD,
        query_pre_attn_scalar=D_HEAD,  # equalization 5
        layer_types=["full_attention"] * LAYERS,  # equalization 4
        sliding_window=4 * SEQ,
        attn_logit_softcapping=ref.attn_softcap,
        final_logit_softcapping=ref.logit_softcap,
    )
    if name == "gemma2":
        return ref.config_class(**common, **gemma, rope_parameters=rope)
    per_layer_type = {"full_attention": dict(rope), "sliding_attention": dict(rope)}
    return ref.config_class(**common, **gemma, rope_parameters=per_layer_type)


def randomize(model: TinyGPT, name: str, seed: int = 0) -> None:
    """Weights that make every part visible: gains far from 1, biases, O(1) activations, small embeddings."""
    g = torch.Generator().manual_seed(seed)
    hot = HOT.get(name, {})
    with torch.no_grad():
        for pname, p in model.named_parameters():
            owner = model.get_submodule(pname.rsplit(".", 1)[0])
            if pname == "embed.weight":
                p.copy_(0.02 * torch.randn(p.shape, generator=g))
            elif isinstance(owner, nn.Linear):
                scale = next((v for k, v in hot.items() if pname.startswith(k) or f".{k}." in pname), 1.0)
                p.copy_(scale * torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            elif pname.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif getattr(owner, "plus_one", False):
                p.copy_(torch.rand(p.shape, generator=g) - 0.5)  # Gemma's w: the gain is 1 + w in [0.5, 1.5]
            else:
                p.copy_(0.5 + torch.rand(p.shape, generator=g))


def hf_name(name: str, tiny: str) -> str:
    """The reference's name for a TinyGPT parameter (GPT-2's fused and transposed ones are handled by the caller)."""
    if tiny == "embed.weight":
        return "transformer.wte.weight" if name == "gpt2" else "model.embed_tokens.weight"
    if tiny == "lm_head.weight":
        return "lm_head.weight"
    if tiny.startswith("norm_f."):
        head = "transformer." if name == "gpt2" else "model."
        return head + REFERENCE[name].norm_map["norm_f"][0] + tiny[len("norm_f") :]
    _, layer, rest = tiny.split(".", 2)
    module, leaf = rest.rsplit(".", 1)
    prefix = f"transformer.h.{layer}." if name == "gpt2" else f"model.layers.{layer}."
    if module in REFERENCE[name].norm_map:
        return prefix + REFERENCE[name].norm_map[module][0] + "." + leaf
    if name == "gpt2":
        return (
            prefix + {"attn.o_proj": "attn.c_proj", "mlp.up": "mlp.c_fc", "mlp.down": "mlp.c_proj"}[module] + "." + leaf
        )
    return prefix + module.replace("attn.", "self_attn.") + "." + leaf


def make_models(name: str, tiny_cfg: GPTConfig | None = None):
    """TinyGPT (from the recipe, or tiny_cfg) and the reference, float64, eval mode, each with its own weights."""
    with torch.random.fork_rng():  # their initial weights are drawn from a fixed seed, leaving the global RNG alone
        torch.manual_seed(0)
        tiny = TinyGPT(tiny_cfg or tiny_config(name)).double().eval()
        ref = REFERENCE[name].model_class(reference_config(name)).double().eval()
    return tiny, ref


GPT2_ZEROED = ("attn.c_attn.bias", "attn.c_proj.bias", "mlp.c_fc.bias", "mlp.c_proj.bias")


def share_weights(name: str, tiny: TinyGPT, ref) -> None:
    """Draw TinyGPT's weights (randomize) and give the reference the same ones; every reference parameter is
    accounted for (copied, or one of GPT-2's biases and position table, set to 0)."""
    randomize(tiny, name)
    if name != "gpt2":
        for layer, block in zip(ref.model.layers, tiny.blocks):
            layer.mlp = block.mlp  # equalization 1: the very same module on both sides
    target = dict(ref.named_parameters())
    done = set()
    with torch.no_grad():
        for tname, value in tiny.named_parameters():
            if name == "gpt2" and tname.rsplit(".", 2)[-2] in ("q_proj", "k_proj", "v_proj"):
                continue  # GPT-2 fuses them: below
            hname = hf_name(name, tname)
            is_conv = name == "gpt2" and hname.endswith(("c_proj.weight", "c_fc.weight"))
            target[hname].copy_(value.T if is_conv else value)  # GPT-2's Conv1D stores (in, out)
            done.add(hname)
        if name == "gpt2":
            for i, block in enumerate(tiny.blocks):
                a = block.attn
                fused = f"transformer.h.{i}.attn.c_attn.weight"
                target[fused].copy_(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]).T)
                done.add(fused)
            for hname, p in target.items():  # equalizations 2 and 3: the linear biases and the position table are 0
                if hname.endswith(GPT2_ZEROED) or hname == "transformer.wpe.weight":
                    p.zero_()
                    done.add(hname)
    assert done == set(target), f"reference parameters without a TinyGPT counterpart: {sorted(set(target) - done)}"


def build_pair(name: str, tiny_cfg: GPTConfig | None = None, tiny_edit=None):
    """The two models with shared weights; tiny_edit(model) may then change the course model (the failing tests)."""
    tiny, ref = make_models(name, tiny_cfg)
    share_weights(name, tiny, ref)
    if tiny_edit is not None:
        tiny_edit(tiny)
    return tiny, ref


# ----------------------------------------------------------------------------------------------------------------
# the norms, side by side
# ----------------------------------------------------------------------------------------------------------------
def is_norm(module) -> bool:
    return isinstance(module, (nn.LayerNorm, nn.RMSNorm, norms.LayerNorm, norms.RMSNorm)) or type(
        module
    ).__name__.endswith("RMSNorm")


def ref_base(name: str, ref):
    return ref.transformer if name == "gpt2" else ref.model


def ref_layers(name: str, ref):
    return ref_base(name, ref).h if name == "gpt2" else ref_base(name, ref).layers


def norm_pairs(name: str, tiny: TinyGPT, ref):
    """(role, TinyGPT norm, reference norm) for every norm of both models."""
    base, layers = ref_base(name, ref), ref_layers(name, ref)
    pairs = []
    for tiny_name, (ref_name, role) in REFERENCE[name].norm_map.items():
        if tiny_name == "norm_f":
            pairs.append((role, tiny.norm_f, base.get_submodule(ref_name)))
            continue
        for i, (block, layer) in enumerate(zip(tiny.blocks, layers)):
            pairs.append((f"{role} (block {i})", block.get_submodule(tiny_name), layer.get_submodule(ref_name)))
    return pairs


def eps_of(norm) -> float:
    return norm.eps if hasattr(norm, "eps") else norm.variance_epsilon


def gain_form(norm) -> str:
    """'1+w' when the norm, its stored weight set to zero, passes a unit-RMS vector through unchanged; 'w' when it
    outputs zeros (found by running it, whatever the class calls its weight)."""
    probe = copy.deepcopy(norm).double()
    with torch.no_grad():
        probe.weight.zero_()
        if getattr(probe, "bias", None) is not None:
            probe.bias.zero_()
        x = torch.tensor([[1.0, -1.0] * (probe.weight.shape[0] // 2)], dtype=torch.float64)
        y = probe(x)
    if torch.allclose(y, torch.zeros_like(y)):
        return "w"
    assert torch.allclose(y, x, atol=1e-5), y
    return "1+w"


def call_order(name: str, model, blocks, pairs, side: int) -> list:
    """The order in which one forward pass enters the norms (by role) and the sub-layers of each block."""
    order, hooks = [], []
    watched = [(role, pair[side]) for role, *pair in pairs]
    for i, block in enumerate(blocks):
        attn = block.attn if isinstance(model, TinyGPT) or name == "gpt2" else block.self_attn
        watched += [(f"attention (block {i})", attn), (f"MLP (block {i})", block.mlp)]
    for label, module in watched:
        hooks.append(module.register_forward_pre_hook(lambda m, a, label=label: order.append(label)))
    try:
        with torch.no_grad():
            model(tokens())
    finally:
        for h in hooks:
            h.remove()
    return order


def check_inventory(name: str, tiny: TinyGPT, ref) -> list:
    """Norm count, place, eps, gain form and width agree on both sides; returns the pairs (role, TinyGPT's, the
    reference's). The place is checked here by the order in which a forward pass enters the norms and sub-layers
    (which cannot tell x + N(F(x)) from N(x + F(x)): comparing each norm's input does, in the numerical test)."""
    tiny_norms = [m for m in tiny.modules() if is_norm(m)]
    ref_norms = [m for m in ref.modules() if is_norm(m)]
    assert len(tiny_norms) == len(ref_norms), f"{len(tiny_norms)} norms in TinyGPT, {len(ref_norms)} in the reference"
    pairs = norm_pairs(name, tiny, ref)
    assert {id(t) for _, t, _ in pairs} == {id(m) for m in tiny_norms}
    assert {id(r) for _, _, r in pairs} == {id(m) for m in ref_norms}
    for role, t, r in pairs:
        assert eps_of(t) == eps_of(r) == REFERENCE[name].eps, f"{role}: eps {eps_of(t)} here, {eps_of(r)} there"
        assert gain_form(t) == gain_form(r), f"{role}: gain {gain_form(t)} here, {gain_form(r)} there"
        assert t.weight.shape == r.weight.shape, f"{role}: width {tuple(t.weight.shape)} here, {tuple(r.weight.shape)}"
        assert (getattr(t, "bias", None) is None) == (getattr(r, "bias", None) is None), f"{role}: bias"
    here, there = call_order(name, tiny, tiny.blocks, pairs, 0), call_order(name, ref, ref_layers(name, ref), pairs, 1)
    assert here == there, f"order of the norms and sub-layers:\n  TinyGPT   {here}\n  reference {there}"
    return pairs


# ----------------------------------------------------------------------------------------------------------------
# the comparison
# ----------------------------------------------------------------------------------------------------------------
def _first(x):
    return x[0] if isinstance(x, tuple) else x


def run(model, blocks, final_norm, idx, watch=()):
    """Stream entering block 0, after each block, after the final norm; logits; input and output of each norm."""
    seen, hooks = {}, []

    def keep(key, value):
        seen[key] = _first(value).detach().clone()

    hooks.append(
        blocks[0].register_forward_pre_hook(
            lambda m, args, kwargs: keep("stream in", args[0] if args else kwargs["hidden_states"]), with_kwargs=True
        )
    )
    for i, block in enumerate(blocks):
        hooks.append(block.register_forward_hook(lambda m, a, out, i=i: keep(f"after block {i}", out)))
    hooks.append(final_norm.register_forward_hook(lambda m, a, out: keep("after final norm", out)))

    def keep_norm(key):
        def hook(module, args, out):
            keep(f"{key} in", args)
            keep(f"{key} out", out)

        return hook

    for key, module in watch:
        hooks.append(module.register_forward_hook(keep_norm(key)))
    try:
        with torch.no_grad():
            out = model(idx) if isinstance(model, TinyGPT) else model(input_ids=idx, use_cache=False).logits
    finally:
        for h in hooks:
            h.remove()
    seen["logits"] = out.detach()
    return seen


def aligned(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Qwen3 normalizes q and k as (B, T, heads, d_h), TinyGPT as (B, heads, T, d_h): the same numbers."""
    if x.shape != like.shape and x.dim() == 4 and x.transpose(1, 2).shape == like.shape:
        return x.transpose(1, 2)
    return x


def tokens() -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, SEQ), generator=torch.Generator().manual_seed(1))


def compare(name: str, tiny: TinyGPT, ref, pairs=None) -> dict:
    """max |TinyGPT - reference| / max(1, max |reference|) at every stage, and at every norm's input and output."""
    idx = tokens()
    pairs = pairs if pairs is not None else norm_pairs(name, tiny, ref)
    ref_final = ref_base(name, ref).get_submodule(REFERENCE[name].norm_map["norm_f"][0])
    a = run(tiny, tiny.blocks, tiny.norm_f, idx, [(role, t) for role, t, _ in pairs])
    b = run(ref, ref_layers(name, ref), ref_final, idx, [(role, r) for role, _, r in pairs])
    assert a.keys() == b.keys()
    return {k: float((a[k] - aligned(b[k], a[k])).abs().max() / b[k].abs().max().clamp_min(1.0)) for k in b}


def worst(diffs: dict) -> tuple:
    key = max(diffs, key=diffs.get)
    return key, diffs[key]


# ----------------------------------------------------------------------------------------------------------------
# the tests
# ----------------------------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test (HF_HUB_OFFLINE=1 should already prevent one)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the reference models are built from config objects: nothing may be downloaded")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def test_the_hub_is_offline():
    assert huggingface_hub.constants.HF_HUB_OFFLINE


@pytest.mark.parametrize("name", list(recipes.RECIPES))
def test_the_recipe_has_the_reference_norms(name):
    """Count, place, eps, gain form and width of every norm, read from both models; the softcaps."""
    tiny, ref = make_models(name)
    pairs = check_inventory(name, tiny, ref)
    cfg = tiny.cfg
    assert norm_eps_of(cfg) == REFERENCE[name].eps, REFERENCE[name].source
    per_block = 4 if cfg.placement == "peri" else 2
    qk = 2 if cfg.qk_norm else 0
    assert len(pairs) == LAYERS * (per_block + qk) + 1
    forms = {gain_form(t) for _, t, _ in pairs}
    assert forms == ({"1+w"} if name.startswith("gemma") else {"w"})
    widths = {role.split(" ")[0]: tuple(r.weight.shape) for role, _, r in pairs if role[:2] in ("q ", "k ")}
    expected = {
        "qwen3": {"q": (D_HEAD,), "k": (D_HEAD,)},
        "gemma3": {"q": (D_HEAD,), "k": (D_HEAD,)},
        "olmo2": {"q": (HEADS * D_HEAD,), "k": (KV_HEADS * D_HEAD,)},  # OLMo 2: all heads at once
    }
    assert widths == expected.get(name, {})
    assert (cfg.attn_softcap, cfg.logit_softcap) == (REFERENCE[name].attn_softcap, REFERENCE[name].logit_softcap)
    caps = [getattr(ref.config, key, None) for key in ("attn_logit_softcapping", "final_logit_softcapping")]
    assert caps == [REFERENCE[name].attn_softcap, REFERENCE[name].logit_softcap]  # what the reference runs with


@pytest.mark.parametrize("name", list(recipes.RECIPES))
def test_the_recipe_computes_what_the_reference_computes(name):
    """Block by block, norm by norm, and the logits: equal to rounding (the equalizations are in the docstring)."""
    tiny, ref = build_pair(name)
    diffs = compare(name, tiny, ref)
    tolerance = TOLERANCE.get(name, FLOAT32_TOLERANCE)
    bad = {k: f"{v:.1e}" for k, v in diffs.items() if not v <= tolerance}
    assert not bad, f"{name}: beyond {tolerance:g} at {bad}"
    if name == "gemma2":  # the softcaps were exercised: raw logits well beyond both caps
        for block in tiny.blocks:
            block.attn.record = True
        raw = {}
        hook = tiny.lm_head.register_forward_hook(lambda m, a, out: raw.update(logits=out.abs().max().item()))
        with torch.no_grad():
            tiny(tokens())
        hook.remove()
        assert max(float(b.attn.stats["max_logit"].max()) for b in tiny.blocks) > 1.5 * tiny.cfg.attn_softcap
        assert raw["logits"] > 1.5 * tiny.cfg.logit_softcap


# ----------------------------------------------------------------------------------------------------------------
# the comparison can fail
# ----------------------------------------------------------------------------------------------------------------
def rope_before_qk_norm(model: TinyGPT) -> None:
    """Swap the order: RoPE first, then the per-head q/k norms (the recipes normalize first)."""
    for block in model.blocks:
        attn = block.attn
        assert attn.qk_norm == "head"
        attn.q_norm, attn.k_norm = nn.Sequential(attn.rope, attn.q_norm), nn.Sequential(attn.rope, attn.k_norm)
        attn.rope = None


def with_cfg(name, **changes):
    return replace(tiny_config(name), **changes)


WRONG = {
    "llama3, reordered placement": ("llama3", dict(tiny_cfg=with_cfg("llama3", placement="reordered"))),
    "olmo2, pre placement": ("olmo2", dict(tiny_cfg=with_cfg("olmo2", placement="pre"))),
    "gemma2, gain w not 1+w": ("gemma2", dict(tiny_cfg=with_cfg("gemma2", gain="w"))),
    "gemma3, gain w not 1+w": ("gemma3", dict(tiny_cfg=with_cfg("gemma3", gain="w"))),
    "qwen3, RoPE before the qk norm": ("qwen3", dict(tiny_edit=rope_before_qk_norm)),
    "gemma3, RoPE before the qk norm": ("gemma3", dict(tiny_edit=rope_before_qk_norm)),
    "gemma2, no attention softcap": ("gemma2", dict(tiny_cfg=with_cfg("gemma2", attn_softcap=None))),
    "gemma2, no final softcap": ("gemma2", dict(tiny_cfg=with_cfg("gemma2", logit_softcap=None))),
    "gemma2, no embedding scale": ("gemma2", dict(tiny_cfg=with_cfg("gemma2", embed_scale=None))),
    "llama3, eps 1e-6 not 1e-5": ("llama3", dict(tiny_cfg=with_cfg("llama3", norm_eps=1e-6))),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_the_comparison_catches_a_wrong_recipe(case):
    """One thing changed in the course model: the same comparison now misses by orders of magnitude."""
    name, change = WRONG[case]
    tiny, ref = build_pair(name, **change)
    stage, diff = worst(compare(name, tiny, ref, pairs=[]))
    tolerance = TOLERANCE.get(name, FLOAT32_TOLERANCE)
    assert diff > MARGIN * tolerance, f"{case}: only {diff:.1e} at {stage}, {diff / tolerance:.0f} tolerances"


WRONG_INVENTORY = {
    "olmo2, qk norms per head": ("olmo2", dict(qk_norm="head"), "width"),
    "qwen3, qk norms over the whole width": ("qwen3", dict(qk_norm="full"), "width"),
    "gemma2, pre placement (two norms per block)": ("gemma2", dict(placement="pre"), "norms in TinyGPT"),
    "olmo2, pre placement (norms before the sub-layers)": ("olmo2", dict(placement="pre"), "order"),
    "llama3, reordered placement": ("llama3", dict(placement="reordered"), "order"),
    "qwen3, no qk norms": ("qwen3", dict(qk_norm=None), "norms in TinyGPT"),
    "gemma3, gain w not 1+w": ("gemma3", dict(gain="w"), "gain"),
    "olmo2, eps 1e-5 (the Hugging Face class's default)": ("olmo2", dict(norm_eps=1e-5), "eps"),
    "gpt2, RMSNorm not LayerNorm": ("gpt2", dict(norm="rmsnorm", norm_eps=1e-5), "bias"),
}


@pytest.mark.parametrize("case", list(WRONG_INVENTORY))
def test_the_inventory_catches_a_wrong_recipe(case):
    """The structural check alone fails (before any weight is shared or any number compared)."""
    name, changes, what = WRONG_INVENTORY[case]
    tiny, ref = make_models(name, with_cfg(name, **changes))
    with pytest.raises(AssertionError, match=what):
        check_inventory(name, tiny, ref)
