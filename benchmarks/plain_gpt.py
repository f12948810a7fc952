"""PlainGPT: TinyGPT's math written plainly, the yardstick that the benchmarks time TinyGPT against.

    python benchmarks/plain_gpt.py      # check that PlainGPT computes TinyGPT's logits, with and without QK-Norm

bench_probes.py (do the probes cost anything when they are off?) and bench_sweep.py (what does TinyGPT
cost over the same math?) time TinyGPT against this model: a Pre-LN GPT with LayerNorm, RoPE, an optional
per-head QK-Norm and a GELU MLP, written without config switches, probes or helper classes. Its parameters
are listed in TinyGPT's order, so `copy_weights` gives it TinyGPT's weights, and each benchmark checks that
the two compute the same logits before it times anything.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

try:
    from course_utils.model import GPTConfig, TinyGPT
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from course_utils.model import GPTConfig, TinyGPT

__all__ = ["PlainGPT", "rope", "copy_weights", "main"]


def rope(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair of channels (i, i + d/2) of t (..., T, d_head) by its position's angle (Llama's layout)."""
    T = t.shape[-2]
    first, second = t.chunk(2, dim=-1)
    return t * cos[:T].to(t.dtype) + torch.cat([-second, first], dim=-1) * sin[:T].to(t.dtype)


class PlainGPT(nn.Module):
    """TinyGPT's Pre-LN math with LayerNorm and RoPE (and, with qk_norm=True, per-head RMSNorm on q and k)."""

    def __init__(self, vocab: int, d: int, n_layer: int, n_head: int, block_size: int, qk_norm: bool = False):
        super().__init__()
        self.n_head, self.d_head, self.qk_norm = n_head, d // n_head, qk_norm
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList()
        for _ in range(n_layer):  # attributes in TinyGPT's parameter order: copy_weights relies on it
            layer = nn.Module()
            layer.ln1 = nn.LayerNorm(d)
            layer.wq, layer.wk = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            layer.wv, layer.wo = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            if qk_norm:  # a gain held by a module of its own comes after wq ... wo in .parameters(), as in TinyGPT
                layer.q_gain, layer.k_gain = nn.Module(), nn.Module()
                layer.q_gain.weight = nn.Parameter(torch.ones(self.d_head))
                layer.k_gain.weight = nn.Parameter(torch.ones(self.d_head))
            layer.ln2 = nn.LayerNorm(d)
            layer.up, layer.down = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)
            self.layers.append(layer)
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        inv_freq = 10000.0 ** (-torch.arange(0, self.d_head, 2, dtype=torch.float32) / self.d_head)
        angles = torch.outer(torch.arange(block_size, dtype=torch.float32), inv_freq)
        self.register_buffer("cos", torch.cat([angles.cos()] * 2, -1), persistent=False)
        self.register_buffer("sin", torch.cat([angles.sin()] * 2, -1), persistent=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.embed(idx)
        for L in self.layers:
            h = L.ln1(x)
            q = L.wq(h).view(B, T, self.n_head, self.d_head).transpose(1, 2)
            k = L.wk(h).view(B, T, self.n_head, self.d_head).transpose(1, 2)
            v = L.wv(h).view(B, T, self.n_head, self.d_head).transpose(1, 2)
            if self.qk_norm:
                q = F.rms_norm(q, (self.d_head,), L.q_gain.weight, 1e-6)
                k = F.rms_norm(k, (self.d_head,), L.k_gain.weight, 1e-6)
            q, k = rope(q, self.cos, self.sin), rope(k, self.cos, self.sin)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + L.wo(y.transpose(1, 2).reshape(B, T, -1))
            x = x + L.down(F.gelu(L.up(L.ln2(x))))
        return self.head(self.ln_f(x))


def copy_weights(tiny: TinyGPT, plain: PlainGPT) -> PlainGPT:
    """Give plain the weights of tiny (the two list their parameters in the same order); returns plain."""
    ours, theirs = list(tiny.parameters()), list(plain.parameters())
    if [p.shape for p in ours] != [p.shape for p in theirs]:
        raise ValueError("TinyGPT and PlainGPT do not have the same parameter shapes")
    with torch.no_grad():
        for a, b in zip(ours, theirs):
            b.copy_(a)
    return plain


def main() -> int:
    for qk_norm in (None, "head"):
        torch.manual_seed(0)
        cfg = GPTConfig(vocab_size=64, block_size=32, n_layer=2, n_head=4, d_model=64, qk_norm=qk_norm, init_std=0.1)
        tiny = TinyGPT(cfg)
        plain = copy_weights(tiny, PlainGPT(64, 64, 2, 4, 32, qk_norm=qk_norm is not None))
        idx = torch.randint(0, 64, (2, 32))
        with torch.no_grad():
            difference = float((tiny(idx) - plain(idx)).abs().max())
        print(f"PlainGPT vs TinyGPT (qk_norm={qk_norm}): largest logit difference {difference:.1e}")
        if difference > 1e-4:
            raise AssertionError("PlainGPT does not compute TinyGPT's logits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
