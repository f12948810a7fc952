"""Causal self-attention with the stability tools of modern LLMs: QK-Norm, RoPE and logit softcapping.

The order inside one attention layer, for each head h:

    q, k, v  = x W_q, x W_k, x W_v
    q, k     = RMSNorm(q), RMSNorm(k)          QK-Norm, per head (Qwen3, Gemma 3) or full width (OLMo 2)
    q, k     = RoPE(q), RoPE(k)                rotary positions, applied after the norm
    s        = q k^T / sqrt(d_head)            attention logits
    s        = tau * tanh(s / tau)             optional softcap (Gemma 2: tau = 50)
    y        = softmax(causal_mask(s)) v

Why the norm makes attention stable: after RMSNorm with unit gains, |q| = |k| = sqrt(d_head), so
|q . k| / sqrt(d_head) <= sqrt(d_head) whatever the weights do. Without it, q and k can grow during
training, the logits grow like their product, the softmax saturates to one-hot and its entropy collapses.

When nothing needs the logits, attention runs through torch's fused F.scaled_dot_product_attention.
Setting `record = True` on a layer switches to the explicit path and stores, per head, the largest
|logit| and the mean attention entropy in `.stats` (the probes of chapter 05).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import norms

__all__ = ["RotaryEmbedding", "CausalSelfAttention", "softcap", "attention_entropy", "qk_norm_bound"]


def softcap(logits: torch.Tensor, cap: float) -> torch.Tensor:
    """tau * tanh(s / tau): about s for |s| << tau, never beyond +-tau."""
    return cap * torch.tanh(logits / cap)


def attention_entropy(probs: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of each attention row, -sum p log p over the last dim (0 log 0 counts as 0)."""
    return -(probs * torch.log(probs.clamp_min(1e-30))).sum(-1)


def qk_norm_bound(d_head: int, q_gain=None, k_gain=None) -> float:
    """The largest |attention logit| per-head QK-Norm allows: sqrt(d_head) * max|g_q| * max|g_k|.

    After RMSNorm without gains, |q| = |k| = sqrt(d_head), so |q . k| / sqrt(d_head) <= sqrt(d_head)
    (Cauchy-Schwarz). A gain vector g stretches a vector by at most max|g|, and RoPE (applied after the
    norm) changes no norm, so with gains |s| <= sqrt(d_head) * max|g_q| * max|g_k|. Unit gains give
    sqrt(d_head): 4 for d_head = 16, 8 for d_head = 64, 11.3 for d_head = 128.
    """
    gq = 1.0 if q_gain is None else float(torch.as_tensor(q_gain).detach().abs().max())
    gk = 1.0 if k_gain is None else float(torch.as_tensor(k_gain).detach().abs().max())
    return math.sqrt(d_head) * gq * gk


class RotaryEmbedding(nn.Module):
    """RoPE: rotate each pair of channels of q and k by an angle proportional to the position.

    It preserves every vector's norm, and makes q_m . k_n depend on positions only through m - n.
    Channel i is paired with channel i + d/2 (the "rotate half" layout used by Llama and Qwen).
    """

    cos: torch.Tensor  # (max_len, d_head) buffers, made in __init__
    sin: torch.Tensor

    def __init__(self, d_head: int, max_len: int, base: float = 10000.0):
        super().__init__()
        if d_head % 2:
            raise ValueError(f"RoPE needs an even head dimension, got {d_head}")
        inv_freq = base ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)
        angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)  # (T, d/2)
        self.register_buffer("cos", torch.cat([angles.cos()] * 2, dim=-1), persistent=False)
        self.register_buffer("sin", torch.cat([angles.sin()] * 2, dim=-1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (..., T, d_head) -> the same shape, rotated."""
        T = x.shape[-2]
        x1, x2 = x.chunk(2, dim=-1)
        rotated = torch.cat([-x2, x1], dim=-1)
        return x * self.cos[:T].to(x.dtype) + rotated * self.sin[:T].to(x.dtype)


class CausalSelfAttention(nn.Module):
    """Multi-head causal attention; n_kv_head < n_head shares each key/value head among a group (GQA)."""

    def __init__(self, cfg):
        super().__init__()
        d, h = cfg.d_model, cfg.n_head
        kv = cfg.n_kv_head or h
        if d % h or h % kv:
            raise ValueError(f"d_model {d} must be divisible by n_head {h}, and n_head by n_kv_head {kv}")
        self.n_head, self.n_kv_head, self.d_head = h, kv, d // h
        self.q_proj = nn.Linear(d, h * self.d_head, bias=False)
        self.k_proj = nn.Linear(d, kv * self.d_head, bias=False)
        self.v_proj = nn.Linear(d, kv * self.d_head, bias=False)
        self.o_proj = nn.Linear(h * self.d_head, d, bias=False)
        self.qk_norm = cfg.qk_norm
        # Gemma's (1 + w) gain applies to its q/k norms too; otherwise torch's RMSNorm (gain w, init 1)
        plus_one = getattr(cfg, "gain", "w") == "1+w"
        eps = getattr(cfg, "norm_eps", None) or 1e-6  # the family's eps (Qwen3, Gemma 3, OLMo 2: 1e-6)

        def rms(n):
            return norms.RMSNorm(n, eps=eps, plus_one=True) if plus_one else nn.RMSNorm(n, eps=eps)

        if cfg.qk_norm == "head":
            self.q_norm, self.k_norm = rms(self.d_head), rms(self.d_head)
        elif cfg.qk_norm == "full":
            self.q_norm, self.k_norm = rms(h * self.d_head), rms(kv * self.d_head)
        elif cfg.qk_norm is not None:
            raise ValueError(f"qk_norm must be None, 'head' or 'full', got {cfg.qk_norm!r}")
        # Set to False to bypass the q/k norms without removing them (chapter 06 switches QK-Norm on mid-run).
        self.qk_norm_on = True
        self.rope = RotaryEmbedding(self.d_head, cfg.block_size) if cfg.rope else None
        self.attn_softcap = cfg.attn_softcap
        self.record = False  # probe switch: store logit and entropy statistics on the next forward
        self.stats: dict = {}

    def _heads(self, t: torch.Tensor, n: int) -> torch.Tensor:
        B, T, _ = t.shape
        return t.view(B, T, n, self.d_head).transpose(1, 2)  # (B, n, T, d_head)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.qk_norm == "full" and self.qk_norm_on:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = self._heads(q, self.n_head), self._heads(k, self.n_kv_head), self._heads(v, self.n_kv_head)
        if self.qk_norm == "head" and self.qk_norm_on:
            q, k = self.q_norm(q), self.k_norm(k)
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)
        if self.n_kv_head != self.n_head:
            group = self.n_head // self.n_kv_head
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)

        if self.record or self.attn_softcap is not None:
            y = self._explicit(q, k, v)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))

    def _explicit(self, q, k, v):
        T = q.shape[-2]
        logits = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_head)  # (B, H, T, T)
        raw = logits
        if self.attn_softcap is not None:
            logits = softcap(logits, self.attn_softcap)
        causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        probs = logits.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        if self.record:
            with torch.no_grad():
                visible = raw.detach().float().abs().masked_fill(~causal, 0.0)
                self.stats = {
                    "max_logit": visible.amax(dim=(0, 2, 3)).cpu(),  # per head, before any softcap
                    "entropy": attention_entropy(probs.detach().float()).mean(dim=(0, 2)).cpu(),  # per head, nats
                }
        return probs.to(v.dtype) @ v
