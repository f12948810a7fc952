"""Checks for exercise 06 (a block from a recipe written in words): Gemma 3's RMSNorm with (1 + w) gains, its
per-head QK-Norm attention, its sandwich (Peri-LN) block, and a question on the recipes' learning-rate sweep.

The learner's functions take plain data (tensors, dicts of weights, ints), so that the instructors' grader can call
them in the learner's kernel. The weights carry the names of Hugging Face's Gemma3DecoderLayer (input_layernorm,
self_attn.q_norm, post_attention_layernorm, ...). The references are the course's own modules for
`recipe_config("gemma3", ...)`, loaded with the case's weights and run in float64:

    gemma_rms_norm(x, w, eps)      norms.RMSNorm(plus_one=True)      x / sqrt(mean(x²) + eps) * (1 + w)
    gemma_attention(x, params, H)  attention.CausalSelfAttention     QK-Norm per head, then RoPE, causal
    gemma3_block(x, params, H)     model.Block (placement "peri")    x = x + post(F(pre(x))), for attention, then MLP

Every gain w is drawn at random in [-0.5, 1), different in every channel. At w = 0, how Gemma initializes its gains,
QK-Norm after RoPE gives exactly the same logits as QK-Norm before RoPE (RoPE rotates pairs of channels and keeps each
head's RMS, so the two orders differ only through a gain that differs inside a rotated pair): a check with fresh gains
could not see that mistake. The cases also hold inputs small enough for eps to matter (eps outside the square root),
sub-layers whose outputs are tiny (the post-norms' eps), a large residual stream, float64, float16 and bfloat16.
Each known mistake is a float64 implementation below (`functional_attention`, `functional_block`); an output that
matches one gets that mistake's hint.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from ..attention import CausalSelfAttention, RotaryEmbedding
from ..claims import check_claims, more
from ..i18n import N_, _
from ..model import Block
from ..norms import RMSNorm
from ..recipes import recipe_config
from .allowed import ATTENTION_BY_HAND
from .core import Case, CheckReport, FunctionCheck, Message
from .ex02 import HALF_TOLERANCES, DtypeCase, DtypeNormCheck
from .forbidden import ATTENTION, COURSE_NORMS, TORCH_NORMS, Forbidden
from .questions import MultipleChoice
from .registry import Exercise, Graded

__all__ = [
    "EXERCISE",
    "SWEEP_QUESTION",
    "GEMMA_RMS_NORM_CHECK",
    "GEMMA_ATTENTION_CHECK",
    "GEMMA3_BLOCK_CHECK",
    "ATTENTION_KEYS",
    "BLOCK_KEYS",
    "mlp",
    "attention_params",
    "reference_gemma_rms_norm",
    "reference_gemma_attention",
    "reference_gemma3_block",
    "functional_attention",
    "functional_block",
    "rope_order_gap",
    "check_gemma_rms_norm",
    "check_gemma_attention",
    "check_gemma3_block",
    "SWEEP_RECIPES",
    "SWEEP_LRS",
    "SWEEP_STEPS",
    "sweep_facts",
]

EPS = 1e-6  # Gemma's eps, in every RMSNorm of the block (its q and k norms too)

# The block's weights, by Hugging Face's names (Gemma3DecoderLayer), and the course Block's names for them.
BLOCK_KEYS = {
    "input_layernorm.weight": "norm1.weight",
    "self_attn.q_proj.weight": "attn.q_proj.weight",
    "self_attn.k_proj.weight": "attn.k_proj.weight",
    "self_attn.v_proj.weight": "attn.v_proj.weight",
    "self_attn.o_proj.weight": "attn.o_proj.weight",
    "self_attn.q_norm.weight": "attn.q_norm.weight",
    "self_attn.k_norm.weight": "attn.k_norm.weight",
    "post_attention_layernorm.weight": "norm1_out.weight",
    "pre_feedforward_layernorm.weight": "norm2.weight",
    "mlp.up_proj.weight": "mlp.up.weight",
    "mlp.down_proj.weight": "mlp.down.weight",
    "post_feedforward_layernorm.weight": "norm2_out.weight",
}
ATTENTION_KEYS = tuple(k.removeprefix("self_attn.") for k in BLOCK_KEYS if k.startswith("self_attn."))


def _untouched_rng():
    """Building a module draws its initial weights from torch's global generator. The checks build modules only
    inside this context, which restores that generator afterwards: a check never changes the learner's random
    numbers."""
    return torch.random.fork_rng(devices=[])


def _double(params: dict) -> dict:
    return {k: v.double() for k, v in params.items()}


def _gain(w: torch.Tensor) -> torch.Tensor:
    """Gemma's gain: the stored weight w is applied as (1 + w)."""
    return 1 + w


# ----------------------------------------------------------------------------------------------------
# the given pieces
# ----------------------------------------------------------------------------------------------------
def mlp(x: torch.Tensor, params: dict) -> torch.Tensor:
    """The block's MLP (no norm, no residual): GELU(x W_up^T) W_down^T, with the block's mlp.* weights.

    TinyGPT's MLP, not Gemma's gated GeGLU: the exercise is about the norms, and the course's Block has this MLP."""
    up, down = params["mlp.up_proj.weight"], params["mlp.down_proj.weight"]
    return F.gelu(x @ up.to(x.dtype).T) @ down.to(x.dtype).T


def attention_params(params: dict) -> dict:
    """The attention's own weights out of a block's: 'self_attn.q_proj.weight' -> 'q_proj.weight', ..."""
    return {k.removeprefix("self_attn."): v for k, v in params.items() if k.startswith("self_attn.")}


# ----------------------------------------------------------------------------------------------------
# the references: the course's modules for recipe_config("gemma3"), in float64
# ----------------------------------------------------------------------------------------------------
def reference_gemma_rms_norm(x, w, eps=EPS):
    """course_utils.norms.RMSNorm(plus_one=True) holding w, in float64 (from the input's own, possibly rounded,
    values)."""
    with _untouched_rng():
        norm = RMSNorm(x.shape[-1], eps=eps, plus_one=True).double()
    with torch.no_grad():
        norm.weight.copy_(w.double())
        return norm(x.double())


@functools.lru_cache(maxsize=32)
def _template(kind: str, d_model: int, n_head: int):
    """One float64 module per shape; each call supplies its own weights (torch.func.functional_call)."""
    cfg = recipe_config("gemma3", d_model=d_model, n_head=n_head, block_size=64)
    with _untouched_rng():
        module = (CausalSelfAttention(cfg) if kind == "attention" else Block(cfg)).double()
    return module.requires_grad_(False)


def reference_gemma_attention(x, params, n_head):
    """The course's CausalSelfAttention for recipe_config("gemma3") holding these weights, in float64."""
    module = _template("attention", x.shape[-1], n_head)
    with torch.no_grad():
        return torch.func.functional_call(module, _double(params), (x.double(),))


def reference_gemma3_block(x, params, n_head):
    """The course's Block for recipe_config("gemma3") (placement "peri") holding these weights, in float64."""
    module = _template("block", x.shape[-1], n_head)
    state = {BLOCK_KEYS[k]: v.double() for k, v in params.items()}
    with torch.no_grad():
        return torch.func.functional_call(module, state, (x.double(),))


# ----------------------------------------------------------------------------------------------------
# the same computations written out in float64, with the known mistakes as switches
# ----------------------------------------------------------------------------------------------------
def _norm(t, w, eps=EPS, *, gain="1+w", eps_where="inside", center=False, dim=-1):
    """RMSNorm over `dim` with Gemma's gain; the keywords switch in the known mistakes."""
    t = t.double()
    if center:  # LayerNorm's centring
        t = t - t.mean(dim, keepdim=True)
    mean_square = t.pow(2).mean(dim, keepdim=True)
    y = t / (torch.sqrt(mean_square + eps) if eps_where == "inside" else torch.sqrt(mean_square) + eps)
    if gain == "none":
        return y
    return y * (_gain(w.double()) if gain == "1+w" else w.double())


def functional_attention(
    x,
    params,
    n_head,
    *,
    qk="head",
    order="norm_then_rope",
    gain="1+w",
    norm_dim=-1,
    center=False,
    eps_where="inside",
    scale=True,
    causal=True,
    k_gain="k",
):
    """Gemma 3's attention written out in float64; the keywords switch in the known mistakes."""
    x, p = x.double(), _double(params)
    B, T, _ = x.shape
    d_head = p["q_norm.weight"].shape[0]
    q, k, v = x @ p["q_proj.weight"].T, x @ p["k_proj.weight"].T, x @ p["v_proj.weight"].T
    if qk == "full":  # OLMo 2's QK-Norm: over all heads' channels at once
        q, k = _norm(q, None, gain="none"), _norm(k, None, gain="none")

    def heads(t):
        return t.view(B, T, n_head, d_head).transpose(1, 2)

    q, k, v = heads(q), heads(k), heads(v)
    wq, wk = p["q_norm.weight"], p["k_norm.weight"] if k_gain == "k" else p["q_norm.weight"]

    def normalize(t, w):
        if qk == "head":
            return _norm(t, w, gain=gain, eps_where=eps_where, center=center, dim=norm_dim)
        if qk == "full":
            return t * (_gain(w) if gain == "1+w" else w)
        return t

    rope = RotaryEmbedding(d_head, max(T, 1)).double()
    if order == "norm_then_rope":
        q, k = rope(normalize(q, wq)), rope(normalize(k, wk))
    else:
        q, k = normalize(rope(q), wq), normalize(rope(k), wk)
    s = q @ k.transpose(-2, -1)
    if scale:
        s = s / math.sqrt(d_head)
    if causal:
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
    return y @ p["o_proj.weight"].T


def functional_block(x, params, n_head, *, layout="peri", gain="1+w", eps_where="inside", llama_names=False):
    """Gemma 3's block written out in float64 (attention as in `functional_attention`); the keywords switch in the
    known mistakes. layout: "peri" (the recipe), "pre", "post_sum", "reordered", "no_residual", "normalized_stream"."""
    x, p = x.double(), _double(params)
    attn_in, attn_out = p["input_layernorm.weight"], p["post_attention_layernorm.weight"]
    mlp_in, mlp_out = p["pre_feedforward_layernorm.weight"], p["post_feedforward_layernorm.weight"]
    if llama_names:  # Llama's post_attention_layernorm is the norm *before* the MLP
        attn_out, mlp_in = mlp_in, attn_out
    a_params = attention_params(p)

    def N(t, w):
        return _norm(t, w, gain=gain, eps_where=eps_where)

    def A(t):
        return functional_attention(t, a_params, n_head)

    def M(t):
        return mlp(t, p)

    for sub, w_in, w_out in ((A, attn_in, attn_out), (M, mlp_in, mlp_out)):
        if layout == "peri":
            x = x + N(sub(N(x, w_in)), w_out)
        elif layout == "pre":
            x = x + sub(N(x, w_in))
        elif layout == "post_sum":
            x = N(x + sub(N(x, w_in)), w_out)
        elif layout == "reordered":
            x = x + N(sub(x), w_out)
        elif layout == "no_residual":
            x = N(sub(N(x, w_in)), w_out)
        elif layout == "normalized_stream":
            x = N(x, w_in)
            x = x + N(sub(x), w_out)
        else:
            raise ValueError(layout)
    return x


def rope_order_gap(w_q, w_k, seed: int = 0) -> float:
    """The largest difference between the attention logits of QK-Norm before RoPE and QK-Norm after RoPE, for one
    head of 8 random tokens of d_head = len(w_q), with the gains (1 + w_q) and (1 + w_k). Exactly 0 (up to rounding)
    when every gain is the same in both channels of each pair that RoPE rotates (channel i and i + d_head / 2)."""
    g = torch.Generator().manual_seed(seed)
    d, T = w_q.shape[0], 8
    q, k = torch.randn(T, d, generator=g, dtype=torch.float64), torch.randn(T, d, generator=g, dtype=torch.float64)
    angles = torch.outer(torch.arange(T, dtype=torch.float64), 10000.0 ** (-torch.arange(0, d, 2) / d))
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rope(t):  # RotaryEmbedding's rotation, in exact float64 (its tables are float32)
        t1, t2 = t.chunk(2, dim=-1)
        return t * cos + torch.cat([-t2, t1], dim=-1) * sin

    def logits(order):
        def nq(t, w):
            return _norm(t, w.double())

        if order == "before":
            a, b = rope(nq(q, w_q)), rope(nq(k, w_k))
        else:
            a, b = nq(rope(q), w_q), nq(rope(k), w_k)
        return a @ b.T / math.sqrt(d)

    return float((logits("before") - logits("after")).abs().max())


# ----------------------------------------------------------------------------------------------------
# the cases
# ----------------------------------------------------------------------------------------------------
def _gains(g, n):
    """Stored gains w in [-0.5, 1): applied gains (1 + w) in [0.5, 2), different in every channel."""
    return torch.rand(n, generator=g) * 1.5 - 0.5


def _linear(g, n_out, n_in, scale=1.0):
    """A weight as nn.Linear draws it (uniform within ±1/sqrt(fan_in)), times scale."""
    return (torch.rand(n_out, n_in, generator=g) * 2 - 1) / math.sqrt(n_in) * scale


def _attention_weights(g, D, H, qk_scale=1.0, vo_scale=1.0):
    d_head = D // H
    return {
        "q_proj.weight": _linear(g, D, D, qk_scale),
        "k_proj.weight": _linear(g, D, D, qk_scale),
        "v_proj.weight": _linear(g, D, D, vo_scale),
        "o_proj.weight": _linear(g, D, D, vo_scale),
        "q_norm.weight": _gains(g, d_head),
        "k_norm.weight": _gains(g, d_head),
    }


def _block_weights(g, D, H, qk_scale=1.0, out_scale=1.0):
    attn = _attention_weights(g, D, H, qk_scale, out_scale)
    params = {
        "input_layernorm.weight": _gains(g, D),
        **{"self_attn." + k: v for k, v in attn.items()},
        "post_attention_layernorm.weight": _gains(g, D),
        "pre_feedforward_layernorm.weight": _gains(g, D),
        "mlp.up_proj.weight": _linear(g, 4 * D, D),
        "mlp.down_proj.weight": _linear(g, D, 4 * D, out_scale),
        "post_feedforward_layernorm.weight": _gains(g, D),
    }
    return {k: params[k] for k in BLOCK_KEYS}  # in the order of Gemma3DecoderLayer


def _norm_cases(g: torch.Generator) -> list:
    def randn(*shape):
        return torch.randn(*shape, generator=g)

    specs = [
        (N_("a batch of rows (3×8)"), (randn(3, 8), _gains(g, 8), 1e-6), torch.float32),
        (N_("tokens (2×5×16)"), (randn(2, 5, 16) * 2, _gains(g, 16), 1e-6), torch.float32),
        (N_("w = 0, Gemma's init: the gain is exactly 1"), (randn(4, 12), torch.zeros(12), 1e-6), torch.float32),
        (N_("rows with a large offset (mean far from 0)"), (randn(3, 16) + 5.0, _gains(g, 16), 1e-6), torch.float32),
        (
            N_("tiny activations (size ~0.001): eps = 1e-6 matters"),
            (randn(4, 16) * 1e-3, _gains(g, 16), 1e-6),
            torch.float32,
        ),
        (N_("eps = 0.01 on activations of size ~0.05"), (randn(3, 16) * 0.05, _gains(g, 16), 1e-2), torch.float32),
        (N_("a single vector of 32 features"), (randn(32), _gains(g, 32), 1e-6), torch.float32),
        (N_("float64 tokens (2×3×8)"), (randn(2, 3, 8).double(), _gains(g, 8).double(), 1e-6), torch.float64),
        (
            N_("float16 activations of size ~1000 (their squares overflow float16), gain in float32"),
            ((randn(2, 16) * 1000).half(), _gains(g, 16), 1e-6),
            torch.float16,
        ),
        (
            N_("bfloat16 activations (2×16), gain in float32"),
            ((randn(2, 16) * 3).bfloat16(), _gains(g, 16), 1e-6),
            torch.bfloat16,
        ),
    ]
    cases = []
    for name, args, dtype in specs:
        cases.append(
            DtypeCase(name, args, reference_gemma_rms_norm(*args), dtype=dtype, tolerance=HALF_TOLERANCES.get(dtype))
        )
    return cases


def _attention_cases(g: torch.Generator) -> list:
    specs = [
        # name, B, T, D, H, q/k projection scale, v/o projection scale, dtype
        (N_("4 heads of d_head 8 (B=2, T=6, d_model=32)"), 2, 6, 32, 4, 1.0, 1.0, torch.float32),
        (N_("2 heads of d_head 16, T=8"), 1, 8, 32, 2, 1.0, 1.0, torch.float32),
        (N_("8 heads of d_head 8, T=10"), 2, 10, 64, 8, 1.0, 1.0, torch.float32),
        (N_("q and k projections x 1000: the logits must stay bounded"), 2, 6, 32, 4, 1000.0, 1.0, torch.float32),
        (
            N_("q and k projections x 0.001: q and k so small that eps = 1e-6 matters"),
            2,
            6,
            32,
            4,
            1e-3,
            1.0,
            torch.float32,
        ),
        (N_("a single token (T=1)"), 3, 1, 32, 4, 1.0, 1.0, torch.float32),
        (N_("float64 (B=2, T=5, d_model=32)"), 2, 5, 32, 4, 1.0, 1.0, torch.float64),
    ]
    cases = []
    for name, B, T, D, H, qk_scale, vo_scale, dtype in specs:
        x = torch.randn(B, T, D, generator=g).to(dtype)
        params = {k: v.to(dtype) for k, v in _attention_weights(g, D, H, qk_scale, vo_scale).items()}
        cases.append(Case(name, (x, params, H), reference_gemma_attention(x, params, H)))
    return cases


def _block_cases(g: torch.Generator) -> list:
    specs = [
        # name, B, T, D, H, stream scale, q/k scale, sub-layer output scale, dtype
        (N_("4 heads, 2×8 tokens of width 32"), 2, 8, 32, 4, 1.0, 1.0, 1.0, torch.float32),
        (N_("2 heads, 3×5 tokens of width 32"), 3, 5, 32, 2, 1.0, 1.0, 1.0, torch.float32),
        (N_("a large residual stream (scale 10)"), 2, 6, 32, 4, 10.0, 1.0, 1.0, torch.float32),
        (N_("8 heads, one sequence of 12 tokens of width 64"), 1, 12, 64, 8, 1.0, 1.0, 1.0, torch.float32),
        (
            N_("W_v, W_o and W_down x 0.001: sub-layer outputs so small that the post-norms' eps matters"),
            2,
            6,
            32,
            4,
            1.0,
            1.0,
            1e-3,
            torch.float32,
        ),
        (N_("a single token (T=1)"), 3, 1, 32, 4, 1.0, 1.0, 1.0, torch.float32),
        (N_("float64 (B=2, T=5, width 32)"), 2, 5, 32, 4, 1.0, 1.0, 1.0, torch.float64),
    ]
    cases = []
    for name, B, T, D, H, x_scale, qk_scale, out_scale, dtype in specs:
        x = (torch.randn(B, T, D, generator=g) * x_scale).to(dtype)
        params = {k: v.to(dtype) for k, v in _block_weights(g, D, H, qk_scale, out_scale).items()}
        cases.append(Case(name, (x, params, H), reference_gemma3_block(x, params, H)))
    return cases


# ----------------------------------------------------------------------------------------------------
# what the three tasks forbid
# ----------------------------------------------------------------------------------------------------
_THE_ANSWERS = (
    "course_utils.model.Block",
    "course_utils.model.TinyGPT",
    "course_utils.checks.ex05.reference_qk_norm_attention",
    "course_utils.checks.ex05.functional_attention",
    "course_utils.checks.ex04.norm",
    "course_utils.checks.ex06.reference_gemma_rms_norm",
    "course_utils.checks.ex06.reference_gemma_attention",
    "course_utils.checks.ex06.reference_gemma3_block",
    "course_utils.checks.ex06.functional_attention",
    "course_utils.checks.ex06.functional_block",
)
FORBIDDEN = Forbidden(
    calls=TORCH_NORMS + COURSE_NORMS + ATTENTION + _THE_ANSWERS,
    hint=N_(
        "write each step yourself from the recipe, with basic tensor operations (mean, sqrt, rsqrt, matmul, "
        "softmax, masked_fill); your own functions from the tasks above, the given RotaryEmbedding and mlp are allowed."
    ),
    why="the course's RMSNorm, CausalSelfAttention and Block built with recipe_config('gemma3') are the references "
    "your outputs are compared with; torch's norms and scaled_dot_product_attention, and the functions of the "
    "checks of exercises 04 to 06, compute these steps for you.",
    allowed=ATTENTION_BY_HAND,
)


# ----------------------------------------------------------------------------------------------------
# task 1: gemma_rms_norm(x, w, eps=1e-6)
# ----------------------------------------------------------------------------------------------------
_NORM_HINT = N_(
    "compute in float32 (x.float()), divide by sqrt(mean(x**2 over the last dim) + eps), multiply by (1 + w), "
    "cast back with .to(x.dtype)."
)


def _norm_mistake(**switches):
    def wrong(x, w, eps=EPS):
        if switches.get("eps_fixed"):
            eps = EPS
        rest = {k: v for k, v in switches.items() if k != "eps_fixed"}
        if rest.get("dim") == -2 and x.dim() < 2:
            rest["dim"] = -1
        return _norm(x.double(), w, eps, **rest)

    return wrong


def _norm_in_half(x, w, eps=EPS):
    """Everything in the input's dtype: in float16, x*x overflows to inf for |x| > 256 and the output is 0."""
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
    return y * (1 + w.to(x.dtype))


GEMMA_RMS_NORM_CHECK = DtypeNormCheck(
    name="gemma_rms_norm",
    make_cases=_norm_cases,
    tolerance=1e-4,
    hint=_NORM_HINT,
    mistakes={
        N_(
            "your output matches multiplying by w instead of (1 + w). Gemma stores the gain as w, starting at 0, and "
            "applies 1 + w: a fresh layer multiplies by 1, not by 0."
        ): _norm_mistake(gain="w"),
        N_("your output matches RMSNorm without any gain: multiply the normalized x by (1 + w)."): _norm_mistake(
            gain="none"
        ),
        N_(
            "your output matches eps added *outside* the square root, x / (sqrt(mean(x**2)) + eps). Gemma adds it "
            "inside: x / sqrt(mean(x**2) + eps); the two differ when mean(x**2) is as small as eps."
        ): _norm_mistake(eps_where="outside"),
        N_(
            "your output ignores the eps argument (it uses 1e-6 whatever eps says). Gemma's own code hard-codes "
            "1e-6, but your function must use the eps it is given."
        ): _norm_mistake(eps_fixed=True),
        N_(
            "your output matches LayerNorm (mean subtracted). RMSNorm does not centre: divide x itself by "
            "sqrt(mean(x**2) + eps)."
        ): _norm_mistake(center=True),
        N_(
            "your output matches normalizing over the wrong axis (dim 0 or -2: across rows or tokens). Each "
            "vector is normalized on its own, over its features: the last dim."
        ): _norm_mistake(dim=-2),
        N_(
            "your output matches computing in float16 itself: x * x overflows float16 (max 65504) for |x| > 256. "
            "Compute in float32 (x.float()), then cast the result back with .to(x.dtype)."
        ): _norm_in_half,
    },
    reference=reference_gemma_rms_norm,
    nan_hint=N_(
        "NaN or inf means a division by zero or an overflow: take the mean of the *squares*, add eps inside the "
        "square root, and compute in float32 (a float16 x*x overflows for |x| > 256)."
    ),
    forbidden=FORBIDDEN,
)


def check_gemma_rms_norm(fn, seed: int = 0) -> CheckReport:
    """Check a learner's gemma_rms_norm(x, w, eps=1e-6)."""
    return GEMMA_RMS_NORM_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# task 2: gemma_attention(x, params, n_head)
# ----------------------------------------------------------------------------------------------------
def _attention_mistake(**switches):
    return lambda x, params, n_head: functional_attention(x, params, n_head, **switches)


_ATTENTION_HINT = N_(
    "project (x @ W.T), split into heads (B, n_head, T, d_head), RMS-normalize each head's q and k over d_head and "
    "multiply by (1 + q_norm.weight) / (1 + k_norm.weight), then RoPE, s = q k^T / sqrt(d_head), causal mask, "
    "softmax, weights @ v, merge the heads, o_proj."
)

GEMMA_ATTENTION_CHECK = FunctionCheck(
    name="gemma_attention",
    make_cases=_attention_cases,
    tolerance=1e-4,
    hint=_ATTENTION_HINT,
    mistakes={
        N_(
            "your output matches QK-Norm *after* RoPE. Normalize q and k first, then rotate them. With gains that are "
            "the same in both channels of every rotated pair (w = 0, as a fresh model has) the two orders give exactly "
            "the same logits, because RoPE keeps each head's RMS; a trained gain differs from channel to channel, and "
            "then the order matters. That is why the check draws random gains."
        ): _attention_mistake(order="rope_then_norm"),
        N_(
            "your output matches QK-Norm over the full width (all heads' channels at once, OLMo 2's variant). Gemma 3 "
            "normalizes per head: split into heads first, then take the RMS over each head's d_head channels."
        ): (_attention_mistake(qk="full")),
        N_(
            "your output matches q and k norms that multiply by w instead of (1 + w): Gemma's q_norm and k_norm are "
            "the same (1 + w) RMSNorm as the block's."
        ): _attention_mistake(gain="w"),
        N_(
            "your output matches normalizing q and k over the positions (dim -2) instead of each head's d_head "
            "channels (dim -1): QK-Norm normalizes every query and key vector on its own."
        ): _attention_mistake(norm_dim=-2),
        N_(
            "your output matches attention without the causal mask: position i may only look at positions <= i "
            "(fill the upper triangle with -inf before the softmax)."
        ): _attention_mistake(causal=False),
        N_("your output matches attention without the 1/sqrt(d_head) scale: divide q k^T by sqrt(d_head)."): (
            _attention_mistake(scale=False)
        ),
        N_(
            "your output matches LayerNorm (mean subtracted) on q and k. QK-Norm here is RMSNorm: divide by "
            "sqrt(mean(q**2) + 1e-6), no centring."
        ): _attention_mistake(center=True),
        N_(
            "your output matches eps added outside the square root in the q and k norms: t / sqrt(mean(t**2) + eps), "
            "which matters when q and k are tiny."
        ): _attention_mistake(eps_where="outside"),
        N_(
            "your output matches normalizing k with q_norm's gain: q uses 1 + q_norm.weight, k uses 1 + k_norm.weight."
        ): _attention_mistake(k_gain="q"),
        N_(
            "your output matches attention without any QK-Norm: RMS-normalize each head's q and k (with their (1 + w) "
            "gains) before RoPE."
        ): _attention_mistake(qk="none"),
    },
    reference=reference_gemma_attention,
    nan_hint=N_(
        "NaN or inf: look for a division by zero in the q/k norms (eps inside the square root) or a row of "
        "the causal mask that is all -inf (the diagonal must stay visible: tril, not triu)."
    ),
    forbidden=FORBIDDEN,
)


def check_gemma_attention(fn, seed: int = 0) -> CheckReport:
    """Check a learner's gemma_attention(x, params, n_head) against the course's CausalSelfAttention (gemma3)."""
    return GEMMA_ATTENTION_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# task 3: gemma3_block(x, params, n_head)
# ----------------------------------------------------------------------------------------------------
def _block_mistake(**switches):
    return lambda x, params, n_head: functional_block(x, params, n_head, **switches)


_SANDWICH = N_(
    "x = x + post_attention_layernorm(attention(input_layernorm(x))), then "
    "x = x + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x)))."
)

GEMMA3_BLOCK_CHECK = FunctionCheck(
    name="gemma3_block",
    make_cases=_block_cases,
    tolerance=1e-4,
    hint=Message(
        N_(
            "each sub-layer sits in a sandwich of two norms and its output is added to the untouched stream: "
            "{sandwich} If gemma_attention or gemma_rms_norm failed its check, fix it first."
        ),
        sandwich=_SANDWICH,
    ),
    mistakes={
        Message(
            N_(
                "your output matches the Pre-LN block, without the post-norms: Gemma normalizes each sub-layer's "
                "output too, before adding it to the stream. {sandwich}"
            ),
            sandwich=_SANDWICH,
        ): _block_mistake(layout="pre"),
        Message(
            N_(
                "your output matches applying the post-norm to the *sum* (Post-LN), norm(x + F(norm(x))). Gemma's "
                "post-norm normalizes only the branch, F's output, which is then added to the untouched stream. "
                "{sandwich}"
            ),
            sandwich=_SANDWICH,
        ): _block_mistake(layout="post_sum"),
        Message(
            N_(
                "your output matches OLMo 2's reordered norm, x + norm(F(x)), without the input norms. Gemma keeps "
                "both: {sandwich}"
            ),
            sandwich=_SANDWICH,
        ): _block_mistake(layout="reordered"),
        Message(
            N_(
                "your output matches reading post_attention_layernorm as the norm before the MLP, as in Llama's "
                "code. In Gemma 2 and 3 it normalizes the attention's output, and pre_feedforward_layernorm sits "
                "before the MLP. {sandwich}"
            ),
            sandwich=_SANDWICH,
        ): _block_mistake(llama_names=True),
        N_(
            "your output matches block norms that multiply by w instead of (1 + w): all four norms apply the gain "
            "1 + weight."
        ): _block_mistake(gain="w"),
        N_(
            "your output matches eps added outside the square root in the block's norms; with tiny sub-layer outputs "
            "the post-norms show it. Use x / sqrt(mean(x**2) + eps)."
        ): _block_mistake(eps_where="outside"),
        N_("your output has no residual connections: add each sandwich's output to x, x = x + ...."): _block_mistake(
            layout="no_residual"
        ),
        N_(
            "your output matches normalizing the residual stream itself (x = norm(x), then x + ...). The input norm "
            "makes a normalized *copy* for the sub-layer; the stream x that is added to stays as it was."
        ): (_block_mistake(layout="normalized_stream")),
    },
    reference=reference_gemma3_block,
    nan_hint=N_("NaN or inf: look at the norms (eps inside the square root) and at the causal mask of your attention."),
    forbidden=FORBIDDEN,
)


def check_gemma3_block(fn, seed: int = 0) -> CheckReport:
    """Check a learner's gemma3_block(x, params, n_head) against the course's Block for recipe_config('gemma3')."""
    return GEMMA3_BLOCK_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# the question on the recipes' sweep, the registry
# ----------------------------------------------------------------------------------------------------
SWEEP_RECIPES = ("llama3", "gemma2", "gemma3")
SWEEP_LRS = (0.01, 0.3)
SWEEP_STEPS = 100

SWEEP_QUESTION = MultipleChoice(
    id="ex06.sweep",
    prompt=N_(
        "Read your sweep's runs at lr 0.3: the verdicts, the final losses and the largest raw attention logits "
        "(measured before any softcap). Which statement do they support?"
    ),
    choices={
        "a": N_(
            "Both Gemmas keep their logits small: the post-norm on each attention output also bounds the logits q·k "
            "that feed the softmax."
        ),
        "b": N_(
            "Only Gemma 3's raw logits stay small, as QK-Norm bounds them; Gemma 2's explode like Llama 3's, yet it "
            "ends far better."
        ),
        "c": N_(
            "All three recipes' logits explode alike; the two Gemmas train only because their (1 + w) gains start at "
            "0 and so move more slowly."
        ),
        "d": N_(
            "Gemma 2's softcap holds its raw logits below 50 and Gemma 3's QK-Norm holds them near √d_head: both stay "
            "small all the time."
        ),
    },
    answer="b",
    explanation=N_(
        "per-head QK-Norm bounds every logit by sqrt(d_head) * max|1 + w_q| * max|1 + w_k|, so Gemma 3's "
        "largest logit stays more than 1000 times below Llama 3's. Gemma 2 has no QK-Norm: its raw logits explode as "
        "Llama 3's do, and still it ends far below Llama 3's loss. Chapter 05 found that a softcap alone did not keep "
        "the baseline training at lr 0.3, so what protects Gemma 2 lies in the rest of its recipe (sandwich norms, "
        "softcaps, embedding scale) and this sweep cannot say which part: that takes an ablation, one change at a time."
    ),
    wrong_hints={
        "a": N_(
            "look at Gemma 2's column: it has the same post-norms as Gemma 3 and its raw logits explode. A post-norm "
            "acts on the attention's output, after the softmax; q·k comes from W_q and W_k, which can still grow."
        ),
        "c": N_(
            "Gemma 3's largest logit stays orders of magnitude below the other two. And under Adam without weight "
            "decay a (1 + w) gain trains exactly like a plain one: the gradient with respect to w is the same."
        ),
        "d": N_(
            "the column shows the raw logits, before the softcap: Gemma 2's pass 10,000, as the softcap changes only "
            "what the softmax sees. And QK-Norm's bound is sqrt(d_head) times the learned gains, which training grows."
        ),
    },
)


def sweep_facts(sweep) -> dict:
    """What the question asks about, read off a sweep of SWEEP_RECIPES at the top learning rate, as robust yes/no
    facts (each held with a margin at seeds 0, 1 and 2 of the quick preset at SWEEP_STEPS steps, and at seed 0 in
    every cell of the CPU matrix: docs/numerics.md); printed, and
    returned as {fact: bool}. The raw logits are the sweep's `max_attn_logit`, measured before any softcap."""
    top = max(SWEEP_LRS)
    llama, gemma2, gemma3 = (sweep.get(name, top) for name in SWEEP_RECIPES)
    facts = {
        N_("Llama 3 fails (degraded or diverged)"): sweep.fails("llama3", top),
        N_("Llama 3's largest raw logit is more than 1000x Gemma 3's"): more(
            llama.max_attn_logit / gemma3.max_attn_logit, 1000
        ),
        N_("Gemma 2's largest raw logit passed 10,000"): more(gemma2.max_attn_logit, 1e4),
        N_("Gemma 2's largest raw logit is more than 100x Gemma 3's"): more(
            gemma2.max_attn_logit / gemma3.max_attn_logit, 100
        ),
        N_("Gemma 2 ends more than 0.5 nats below Llama 3"): more(llama.final_loss - gemma2.final_loss, 0.5),
        N_("Gemma 3 ends more than 0.5 nats below Llama 3"): more(llama.final_loss - gemma3.final_loss, 0.5),
    }
    print(_("at lr {lr:g}:").format(lr=top))
    check_claims("ex06.sweep", {_(fact): claim for fact, claim in facts.items()}, preset=sweep.preset.name)
    return {fact: bool(claim) for fact, claim in facts.items()}


EXERCISE = Exercise(
    "ex06_recipes",
    graded=[
        Graded("gemma_rms_norm", "gemma_rms_norm", 2),
        Graded("gemma_attention", "gemma_attention", 3),
        Graded("gemma3_block", "gemma3_block", 3),
        Graded("ex06.sweep", "answer_sweep", 1),
    ],
    checks=[GEMMA_RMS_NORM_CHECK, GEMMA_ATTENTION_CHECK, GEMMA3_BLOCK_CHECK],
    questions=[SWEEP_QUESTION],
)
