"""TinyGPT: a small, readable decoder-only transformer whose norm and norm placement are switches.

    cfg = GPTConfig(vocab_size=64, block_size=64, n_layer=4, n_head=4, d_model=64, placement="post")
    logits = TinyGPT(cfg)(idx)            # idx (B, T) int64 -> logits (B, T, vocab_size)

Where the norm sits in a block (F is attention or the MLP):

    pre        x = x + F(Norm(x))         GPT-2, Llama: the residual stream is never normalized; a final norm follows
    post       x = Norm(x + F(x))         the original Transformer (2017) and BERT: every sum is normalized
    peri       x = x + Norm(F(Norm(x)))   Peri-LN (Kim et al. 2025, arXiv 2502.02732), Gemma 2 and 3: a norm on
                                          the sub-layer's input AND on its output, before it joins the stream
    reordered  x = x + Norm(F(x))         OLMo 2's "reordered norm" (arXiv 2501.00656): only the sub-layer's
                                          output is normalized; its input is the raw stream

Switches for the recipes of real models (chapter 06; each default keeps the plain model):

    gain="1+w"            Gemma's RMSNorm gain: the parameter starts at 0 and the layer multiplies by (1 + w)
    embed_scale="sqrt_d"  Gemma: the embedding lookup is multiplied by sqrt(d_model) (a constant, not a norm)
    embed_scale="l2"      e / |e| * sqrt(d_model): every embedding row put on a sphere (the digest's formula)
    embed_scale="unit_rms"  times the constant 1 / init_std (50): the same start scale as "l2" (RMS 1 per channel),
                          but the rows' lengths stay as they were drawn (chapter 06's scale-matched control)
    norm="dyt"            Dynamic Tanh (arXiv 2503.10622) in every norm's place: weight * tanh(alpha x) + bias
    norm_eps=1e-5         the eps of every norm, as a model family sets it (None: LayerNorm's 1e-5, RMSNorm's 1e-6)

The rest is deliberately plain: token embedding, RoPE inside attention (no learned positions),
a GELU MLP, no biases in the linear layers, weights drawn from N(0, 0.02).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import nn

from . import norms
from .attention import CausalSelfAttention, softcap

__all__ = ["GPTConfig", "TinyGPT", "Block", "MLP", "make_norm", "norm_eps_of", "lm_loss", "parameter_count"]


# The values each switch of GPTConfig takes (the type checker reads them, and __post_init__ checks them at run time)
Norm = Literal["layernorm", "rmsnorm", "dyt"]
Placement = Literal["pre", "post", "peri", "reordered"]
QKNorm = Literal["head", "full"]
NormImpl = Literal["torch", "course"]
Gain = Literal["w", "1+w"]
EmbedScale = Literal["sqrt_d", "l2", "unit_rms"]


@dataclass
class GPTConfig:
    vocab_size: int = 64
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 64
    norm: Norm = "layernorm"  # "layernorm" | "rmsnorm" | "dyt" (Dynamic Tanh, no statistics)
    placement: Placement = "pre"  # "pre" | "post" | "peri" (Gemma 2/3) | "reordered" (OLMo 2)
    qk_norm: QKNorm | None = None  # None | "head" | "full"
    attn_softcap: float | None = None  # Gemma 2 uses 50.0
    logit_softcap: float | None = None  # Gemma 2 uses 30.0
    n_kv_head: int | None = None  # None: as many key/value heads as query heads
    rope: bool = True
    mlp_ratio: int = 4
    norm_impl: NormImpl = "torch"  # "torch" (nn.LayerNorm / nn.RMSNorm) or "course" (course_utils.norms, readable)
    init_std: float = 0.02
    gain: Gain = "w"  # "w" | "1+w" (Gemma 2 and 3: RMSNorm gains stored as w, applied as 1 + w)
    embed_scale: EmbedScale | None = None  # "sqrt_d" (Gemma: times sqrt(d_model)), "l2", "unit_rms" (see above)
    dyt_alpha: float = 0.5  # DyT's initial alpha (the official code's default)
    norm_eps: float | None = None  # every norm's eps; None: LayerNorm's usual 1e-5, RMSNorm's 1e-6

    def __post_init__(self):
        choices = {
            "norm": get_args(Norm),
            "placement": get_args(Placement),
            "qk_norm": (None, *get_args(QKNorm)),
            "norm_impl": get_args(NormImpl),
            "gain": get_args(Gain),
            "embed_scale": (None, *get_args(EmbedScale)),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"GPTConfig.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("attn_softcap", "logit_softcap"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"GPTConfig.{name} must be None or > 0, got {value!r}")
        if self.norm_eps is not None and not self.norm_eps > 0:
            raise ValueError(f"GPTConfig.norm_eps must be None or > 0, got {self.norm_eps!r}")
        if self.gain == "1+w" and self.norm != "rmsnorm":
            raise ValueError(
                f"GPTConfig.gain='1+w' is Gemma's RMSNorm form; it needs norm='rmsnorm', got {self.norm!r}"
            )


def norm_eps_of(cfg: GPTConfig) -> float:
    """The eps of every norm of the model: cfg.norm_eps, else the norm's usual one (LayerNorm 1e-5, RMSNorm 1e-6)."""
    if cfg.norm_eps is not None:
        return cfg.norm_eps
    return 1e-5 if cfg.norm == "layernorm" else 1e-6


def make_norm(cfg: GPTConfig, d: int | None = None) -> nn.Module:
    """The norm the config asks for, from torch or from course_utils.norms (the same math)."""
    d = d or cfg.d_model
    if cfg.norm == "dyt":
        return norms.DynamicTanh(d, alpha0=cfg.dyt_alpha)
    eps = norm_eps_of(cfg)
    if cfg.gain == "1+w":
        return norms.RMSNorm(d, eps=eps, plus_one=True)
    if cfg.norm_impl == "course":
        return norms.LayerNorm(d, eps=eps) if cfg.norm == "layernorm" else norms.RMSNorm(d, eps=eps)
    return nn.LayerNorm(d, eps=eps) if cfg.norm == "layernorm" else nn.RMSNorm(d, eps=eps)


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.up = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model, bias=False)
        self.down = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    """One transformer block; `placement` decides where its norms sit.

    norm1 belongs to attention, norm2 to the MLP. The residual stream x is the "highway": in pre, peri and
    reordered it is only ever added to; in post every sum passes through a norm.

    pre        x = x + attn(norm1(x));              x = x + mlp(norm2(x))
    post       x = norm1(x + attn(x));              x = norm2(x + mlp(x))
    peri       x = x + norm1_out(attn(norm1(x)));   x = x + norm2_out(mlp(norm2(x)))
    reordered  x = x + norm1(attn(x));              x = x + norm2(mlp(x))

    "peri" is Peri-LN as Kim et al. (2025, arXiv 2502.02732) define it and as Gemma 2 and Gemma 3 build it: four
    norms per block (Hugging Face's Gemma2DecoderLayer: input_layernorm, post_attention_layernorm,
    pre_feedforward_layernorm, post_feedforward_layernorm). Here the input norms are norm1 / norm2, the output
    norms norm1_out / norm2_out. "reordered" is OLMo 2's block (Hugging Face's Olmo2DecoderLayer: the attention
    output goes through post_attention_layernorm, the MLP output through post_feedforward_layernorm, then each is
    added to the stream; the sub-layers read the raw stream). The OLMo 2 paper (arXiv 2501.00656) calls this the
    "reordered norm"; some write-ups call it "Post-Norm", which is not the Post-LN of the row above.
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.placement = cfg.placement
        self.norm1, self.attn = make_norm(cfg), CausalSelfAttention(cfg)
        self.norm2, self.mlp = make_norm(cfg), MLP(cfg)
        if cfg.placement == "peri":
            self.norm1_out, self.norm2_out = make_norm(cfg), make_norm(cfg)

    def forward(self, x):
        if self.placement == "pre":
            x = x + self.attn(self.norm1(x))
            x = x + self.mlp(self.norm2(x))
        elif self.placement == "post":
            x = self.norm1(x + self.attn(x))
            x = self.norm2(x + self.mlp(x))
        elif self.placement == "peri":
            x = x + self.norm1_out(self.attn(self.norm1(x)))
            x = x + self.norm2_out(self.mlp(self.norm2(x)))
        else:  # reordered
            x = x + self.norm1(self.attn(x))
            x = x + self.norm2(self.mlp(x))
        return x


class TinyGPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        # Post-LN's last block already ends in a norm; the other placements leave the stream unnormalized.
        self.norm_f = make_norm(cfg) if cfg.placement != "post" else nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init)

    def _init(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.cfg.init_std)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        T = idx.shape[1]
        if T > self.cfg.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.cfg.block_size}")
        x = self.embed(idx)
        if self.cfg.embed_scale == "sqrt_d":
            x = x * math.sqrt(self.cfg.d_model)
        elif self.cfg.embed_scale == "l2":
            x = F.normalize(x, dim=-1) * math.sqrt(self.cfg.d_model)
        elif self.cfg.embed_scale == "unit_rms":
            x = x / self.cfg.init_std
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.norm_f(x))
        if self.cfg.logit_softcap is not None:
            logits = softcap(logits, self.cfg.logit_softcap)
        return logits

    def attention_layers(self) -> list[CausalSelfAttention]:
        return [m for m in self.modules() if isinstance(m, CausalSelfAttention)]  # one per block, in order


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy; logits (B, T, V), targets (B, T)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def parameter_count(cfg: GPTConfig) -> int:
    """The number of parameters TinyGPT(cfg) has, from the formula (a test checks it against the model)."""
    d, h = cfg.d_model, cfg.n_head
    d_head, kv = d // h, cfg.n_kv_head or h
    # LayerNorm: gain and bias; RMSNorm: gain only; DyT: gain, bias and one alpha
    norm = {"layernorm": 2 * d, "rmsnorm": d, "dyt": 2 * d + 1}[cfg.norm]
    attention = d * h * d_head + 2 * d * kv * d_head + h * d_head * d
    if cfg.qk_norm == "head":
        attention += 2 * d_head
    elif cfg.qk_norm == "full":
        attention += h * d_head + kv * d_head
    mlp = 2 * d * cfg.mlp_ratio * d
    block = (4 if cfg.placement == "peri" else 2) * norm + attention + mlp
    final_norm = 0 if cfg.placement == "post" else norm
    return cfg.vocab_size * d + cfg.n_layer * block + final_norm + d * cfg.vocab_size
