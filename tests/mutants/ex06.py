"""Exercise 06 (a Gemma 3 block from a recipe in words): gemma_rms_norm(x, w, eps), gemma_attention(x, params, n_head)
and gemma3_block(x, params, n_head). The weights are dicts named as in Hugging Face's Gemma3DecoderLayer."""

import math

import torch
import torch.nn.functional as F

from course_utils.attention import RotaryEmbedding
from course_utils.checks.ex06 import mlp

_HALF = (torch.float16, torch.bfloat16)


# ----------------------------------------------------------------------------------------------------
# gemma_rms_norm(x, w, eps) = x / sqrt(mean(x**2) + eps) * (1 + w), over the last dim
# ----------------------------------------------------------------------------------------------------
def rms_norm_with_rsqrt(x, w, eps=1e-6):
    """Correct: float32 for half inputs, rsqrt of the sum of squares over n, the gain written w + 1."""
    h = x.float() if x.dtype in _HALF else x
    y = h * torch.rsqrt(h.pow(2).sum(dim=-1, keepdim=True) / h.shape[-1] + eps)
    return (y * (w.to(h.dtype) + 1)).to(x.dtype)


def _rms(
    x, w, eps=1e-6, *, gain=lambda w: 1 + w, eps_outside=False, dim=-1, center=False, mean=True, upcast=True, floor=None
):
    """RMSNorm as a learner writes it; each keyword is a slip."""
    h = x.float() if upcast and x.dtype in _HALF else x
    if center:
        h = h - h.mean(dim=dim, keepdim=True)
    squares = h * h
    ms = squares.mean(dim=dim, keepdim=True) if mean else squares.sum(dim=dim, keepdim=True)
    y = h / (torch.sqrt(ms) + eps) if eps_outside else h / torch.sqrt(ms + eps)
    if floor is not None:  # eps as a floor, not a sum: "clamp" (max(ms, eps)) or "square" (ms + eps²)
        y = h / torch.sqrt(ms.clamp_min(eps) if floor == "clamp" else ms + eps * eps)
    g = gain(w.to(h.dtype))
    return (y if g is None else y * g).to(x.dtype)


def rms_norm_gain_w(x, w, eps=1e-6):
    """Multiplies by w instead of (1 + w)."""
    return _rms(x, w, eps, gain=lambda w: w)


def rms_norm_no_gain(x, w, eps=1e-6):
    """Forgets the gain: plain RMSNorm."""
    return _rms(x, w, eps, gain=lambda w: None)


def rms_norm_eps_outside_sqrt(x, w, eps=1e-6):
    """Adds eps outside the square root: x / (sqrt(mean(x**2)) + eps)."""
    return _rms(x, w, eps, eps_outside=True)


def rms_norm_clamped_mean_square(x, w, eps=1e-6):
    """Keeps the mean square away from 0 with max(ms, eps) (clamp_min) instead of adding eps."""
    return _rms(x, w, eps, floor="clamp")


def rms_norm_eps_squared(x, w, eps=1e-6):
    """Adds eps² to the mean square instead of eps."""
    return _rms(x, w, eps, floor="square")


def rms_norm_eps_hard_coded(x, w, eps=1e-6):
    """Hard-codes Gemma's eps 1e-6 and ignores the argument."""
    return _rms(x, w, 1e-6)


def rms_norm_no_eps(x, w, eps=1e-6):
    """Leaves eps out."""
    return _rms(x, w, 0.0)


def rms_norm_layer_norm(x, w, eps=1e-6):
    """Subtracts the mean first (LayerNorm with a (1 + w) gain)."""
    return _rms(x, w, eps, center=True)


def rms_norm_over_rows(x, w, eps=1e-6):
    """Normalizes over dim 0 (across rows or batch) instead of the features."""
    return _rms(x, w, eps, dim=0)


def rms_norm_in_half(x, w, eps=1e-6):
    """Computes in the input's dtype: float16 squares overflow."""
    return _rms(x, w, eps, upcast=False)


def rms_norm_sum_of_squares(x, w, eps=1e-6):
    """Divides by the root of the sum of squares (the L2 norm) instead of the mean."""
    return _rms(x, w, eps, mean=False)


def rms_norm_not_cast_back(x, w, eps=1e-6):
    """Computes in float32 and returns float32 for a half-precision input."""
    h = x.float()
    return h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + eps) * (1 + w.float())


def rms_norm_gain_before_norm(x, w, eps=1e-6):
    """Multiplies by (1 + w) first and normalizes the product."""
    h = x.float() if x.dtype in _HALF else x
    h = h * (1 + w.to(h.dtype))
    return (h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


# ----------------------------------------------------------------------------------------------------
# gemma_attention(x, params, n_head)
# ----------------------------------------------------------------------------------------------------
def attention_head_by_head(x, params, n_head):
    """Correct: one head at a time with einsum, rsqrt for the norms, (w + 1) gains, the mask as -inf where j > i."""
    B, T, D = x.shape
    d_head = D // n_head
    rope = RotaryEmbedding(d_head, T)
    q_all, k_all, v_all = (x @ params[f"{n}_proj.weight"].T for n in "qkv")
    future = torch.arange(T).unsqueeze(0) > torch.arange(T).unsqueeze(1)

    def rms(t, w):
        return t * torch.rsqrt(t.pow(2).sum(dim=-1, keepdim=True) / d_head + 1e-6) * (w + 1)

    outputs = []
    for h in range(n_head):
        cols = slice(h * d_head, (h + 1) * d_head)
        q = rope(rms(q_all[..., cols], params["q_norm.weight"]))
        k = rope(rms(k_all[..., cols], params["k_norm.weight"]))
        logits = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(d_head)
        weights = torch.softmax(logits.masked_fill(future, -math.inf), dim=-1)
        outputs.append(torch.einsum("bqk,bkd->bqd", weights, v_all[..., cols]))
    return torch.cat(outputs, dim=-1) @ params["o_proj.weight"].T


def _attention(
    x,
    params,
    n_head,
    *,
    qk="head",
    rope_first=False,
    use_rope=True,
    gain=lambda w: 1 + w,
    k_gain="k_norm.weight",
    eps=1e-6,
    eps_outside=False,
    center=False,
    norm_dim=-1,
    norm_v=False,
    scale=lambda d: math.sqrt(d),
    causal="mask_logits",
    softmax_dim=-1,
    split="view_transpose",
):
    """Gemma 3's attention as a learner writes it (the solution's steps); each keyword is a slip."""
    B, T, D = x.shape
    d_head = D // n_head
    rope = RotaryEmbedding(d_head, T)
    q, k, v = x @ params["q_proj.weight"].T, x @ params["k_proj.weight"].T, x @ params["v_proj.weight"].T

    def rms(t, dim=-1):
        if center:
            t = t - t.mean(dim=dim, keepdim=True)
        ms = t.pow(2).mean(dim=dim, keepdim=True)
        return t / (torch.sqrt(ms) + eps) if eps_outside else t / torch.sqrt(ms + eps)

    if qk == "full":
        q, k = rms(q), rms(k)

    def heads(t):
        if split == "reshape":
            return t.reshape(B, n_head, T, d_head)
        return t.view(B, T, n_head, d_head).transpose(1, 2)

    q, k, v = heads(q), heads(k), heads(v)

    def norm(t, w):
        if qk == "head":
            return rms(t, norm_dim) * gain(w)
        if qk == "full":
            return t * gain(w)
        return t

    wq, wk = params["q_norm.weight"], params[k_gain]
    if not use_rope:
        q, k = norm(q, wq), norm(k, wk)
    elif rope_first:
        q, k = norm(rope(q), wq), norm(rope(k), wk)
    else:
        q, k = rope(norm(q, wq)), rope(norm(k, wk))
    if norm_v:
        v = rms(v)
    logits = q @ k.transpose(-2, -1) / scale(d_head)
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    weights = _causal_softmax(logits, allowed, causal, softmax_dim)
    y = (weights @ v).transpose(1, 2).reshape(B, T, D)
    return y @ params["o_proj.weight"].T


def _causal_softmax(logits, allowed, causal, softmax_dim):
    """The attention weights: the future masked out of the logits before the softmax ("mask_logits", the
    solution's way), the softmax's output masked ("mask_after_softmax": rows no longer sum to 1), or no mask."""
    if causal == "mask_logits":
        return logits.masked_fill(~allowed, float("-inf")).softmax(dim=softmax_dim)
    if causal == "mask_after_softmax":
        return logits.softmax(dim=-1) * allowed
    return logits.softmax(dim=softmax_dim)


def attention_norm_after_rope(x, params, n_head):
    """Applies QK-Norm after RoPE."""
    return _attention(x, params, n_head, rope_first=True)


def attention_full_width(x, params, n_head):
    """Normalizes q and k over the full width (OLMo 2) before splitting into heads."""
    return _attention(x, params, n_head, qk="full")


def attention_gain_w(x, params, n_head):
    """Multiplies the normalized q and k by w instead of (1 + w)."""
    return _attention(x, params, n_head, gain=lambda w: w)


def attention_norm_over_positions(x, params, n_head):
    """Normalizes q and k over the positions (dim -2) instead of d_head."""
    return _attention(x, params, n_head, norm_dim=-2)


def attention_no_causal_mask(x, params, n_head):
    """Forgets the causal mask."""
    return _attention(x, params, n_head, causal="none")


def attention_mask_after_softmax(x, params, n_head):
    """Zeroes the future after the softmax, so the rows no longer sum to 1."""
    return _attention(x, params, n_head, causal="mask_after_softmax")


def attention_softmax_over_queries(x, params, n_head):
    """Takes the softmax over the queries (dim -2)."""
    return _attention(x, params, n_head, softmax_dim=-2)


def attention_no_scale(x, params, n_head):
    """Forgets the 1/sqrt(d_head) scale."""
    return _attention(x, params, n_head, scale=lambda d: 1.0)


def attention_scale_by_d_head(x, params, n_head):
    """Divides the logits by d_head instead of sqrt(d_head)."""
    return _attention(x, params, n_head, scale=lambda d: float(d))


def attention_layer_norm(x, params, n_head):
    """Centres q and k (LayerNorm) before dividing by their RMS."""
    return _attention(x, params, n_head, center=True)


def attention_eps_outside_sqrt(x, params, n_head):
    """Adds eps outside the square root in the q and k norms."""
    return _attention(x, params, n_head, eps_outside=True)


def attention_no_eps(x, params, n_head):
    """Leaves eps out of the q and k norms."""
    return _attention(x, params, n_head, eps=0.0)


def attention_k_with_q_gain(x, params, n_head):
    """Normalizes k with q_norm's gain."""
    return _attention(x, params, n_head, k_gain="q_norm.weight")


def attention_no_qk_norm(x, params, n_head):
    """Leaves out QK-Norm altogether."""
    return _attention(x, params, n_head, qk="none")


def attention_no_rope(x, params, n_head):
    """Forgets RoPE."""
    return _attention(x, params, n_head, use_rope=False)


def attention_normalizes_v(x, params, n_head):
    """Normalizes v as well (Gemma normalizes only q and k)."""
    return _attention(x, params, n_head, norm_v=True)


def attention_heads_split_without_transpose(x, params, n_head):
    """Splits heads with reshape(B, heads, T, d_head) instead of view(B, T, heads, d_head).transpose(1, 2)."""
    return _attention(x, params, n_head, split="reshape")


# ----------------------------------------------------------------------------------------------------
# gemma3_block(x, params, n_head)
# ----------------------------------------------------------------------------------------------------
def _own_rms(t, w, eps=1e-6):
    return t * torch.rsqrt(t.pow(2).mean(dim=-1, keepdim=True) + eps) * (w + 1)


def _attn_params(params):
    return {name[len("self_attn.") :]: value for name, value in params.items() if name.startswith("self_attn.")}


def block_step_by_step(x, params, n_head):
    """Correct: the two sandwiches written out, with this file's own norm and head-by-head attention."""
    h = _own_rms(x, params["input_layernorm.weight"])
    h = attention_head_by_head(h, _attn_params(params), n_head)
    x = x + _own_rms(h, params["post_attention_layernorm.weight"])
    h = _own_rms(x, params["pre_feedforward_layernorm.weight"])
    h = F.gelu(h @ params["mlp.up_proj.weight"].T) @ params["mlp.down_proj.weight"].T
    return x + _own_rms(h, params["post_feedforward_layernorm.weight"])


def _block(x, params, n_head, *, layout="peri", norm=None, names=None, attention=None, order="attn_first"):
    """Gemma 3's block as a learner writes it; each keyword is a slip."""
    names = names or {
        "attn_in": "input_layernorm.weight",
        "attn_out": "post_attention_layernorm.weight",
        "mlp_in": "pre_feedforward_layernorm.weight",
        "mlp_out": "post_feedforward_layernorm.weight",
    }
    norm = norm or _own_rms
    attention = attention or (lambda t: _attention(t, _attn_params(params), n_head))

    def N(t, which):
        return norm(t, params[names[which]])

    subs = [("attn", attention), ("mlp", lambda t: mlp(t, params))]
    if order == "mlp_first":
        subs.reverse()
    if layout == "parallel":  # both sub-layers read the same stream, GPT-J style
        a = N(attention(N(x, "attn_in")), "attn_out")
        m = N(mlp(N(x, "mlp_in"), params), "mlp_out")
        return x + a + m
    for kind, sub in subs:
        w_in, w_out = f"{kind}_in", f"{kind}_out"
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
        elif layout == "no_mlp_post_norm":
            x = x + (N(sub(N(x, w_in)), w_out) if kind == "attn" else sub(N(x, w_in)))
    return x


def block_pre_ln(x, params, n_head):
    """Leaves out the two post-norms (a Pre-LN block)."""
    return _block(x, params, n_head, layout="pre")


def block_post_norm_on_the_sum(x, params, n_head):
    """Applies the post-norm to the sum x + F(...) (Post-LN) instead of the branch."""
    return _block(x, params, n_head, layout="post_sum")


def block_reordered(x, params, n_head):
    """Leaves out the input norms (OLMo 2's reordered norm)."""
    return _block(x, params, n_head, layout="reordered")


def block_llama_names(x, params, n_head):
    """Reads post_attention_layernorm as the norm before the MLP, as in Llama's code."""
    names = {
        "attn_in": "input_layernorm.weight",
        "attn_out": "pre_feedforward_layernorm.weight",
        "mlp_in": "post_attention_layernorm.weight",
        "mlp_out": "post_feedforward_layernorm.weight",
    }
    return _block(x, params, n_head, names=names)


def block_gain_w(x, params, n_head):
    """Multiplies by w instead of (1 + w) in the block's four norms."""
    return _block(x, params, n_head, norm=lambda t, w: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * w)


def block_eps_outside_sqrt(x, params, n_head):
    """Adds eps outside the square root in the block's norms."""
    return _block(x, params, n_head, norm=lambda t, w: t / (t.pow(2).mean(-1, keepdim=True).sqrt() + 1e-6) * (1 + w))


def block_no_residual(x, params, n_head):
    """Forgets the residual connections."""
    return _block(x, params, n_head, layout="no_residual")


def block_normalized_stream(x, params, n_head):
    """Normalizes the residual stream itself instead of a copy for the sub-layer."""
    return _block(x, params, n_head, layout="normalized_stream")


def block_no_post_feedforward_norm(x, params, n_head):
    """Sandwiches attention but forgets the MLP's post-norm."""
    return _block(x, params, n_head, layout="no_mlp_post_norm")


def block_mlp_first(x, params, n_head):
    """Runs the MLP sandwich before the attention sandwich."""
    return _block(x, params, n_head, order="mlp_first")


def block_parallel(x, params, n_head):
    """Runs attention and MLP in parallel on the same stream (GPT-J style) instead of one after the other."""
    return _block(x, params, n_head, layout="parallel")


def block_same_input_norm_twice(x, params, n_head):
    """Uses input_layernorm before the MLP too, instead of pre_feedforward_layernorm."""
    names = {
        "attn_in": "input_layernorm.weight",
        "attn_out": "post_attention_layernorm.weight",
        "mlp_in": "input_layernorm.weight",
        "mlp_out": "post_feedforward_layernorm.weight",
    }
    return _block(x, params, n_head, names=names)


def block_with_qk_norm_after_rope(x, params, n_head):
    """A correct sandwich around an attention that applies QK-Norm after RoPE."""
    return _block(x, params, n_head, attention=lambda t: attention_norm_after_rope(t, _attn_params(params), n_head))


CORRECT = {
    "gemma_rms_norm": rms_norm_with_rsqrt,
    "gemma_attention": attention_head_by_head,
    "gemma3_block": block_step_by_step,
}
MUTANTS = {
    "gemma_rms_norm": [
        rms_norm_gain_w,
        rms_norm_no_gain,
        rms_norm_eps_outside_sqrt,
        rms_norm_clamped_mean_square,
        rms_norm_eps_squared,
        rms_norm_eps_hard_coded,
        rms_norm_no_eps,
        rms_norm_layer_norm,
        rms_norm_over_rows,
        rms_norm_in_half,
        rms_norm_sum_of_squares,
        rms_norm_not_cast_back,
        rms_norm_gain_before_norm,
    ],
    "gemma_attention": [
        attention_norm_after_rope,
        attention_full_width,
        attention_gain_w,
        attention_norm_over_positions,
        attention_no_causal_mask,
        attention_mask_after_softmax,
        attention_softmax_over_queries,
        attention_no_scale,
        attention_scale_by_d_head,
        attention_layer_norm,
        attention_eps_outside_sqrt,
        attention_no_eps,
        attention_k_with_q_gain,
        attention_no_qk_norm,
        attention_no_rope,
        attention_normalizes_v,
        attention_heads_split_without_transpose,
    ],
    "gemma3_block": [
        block_pre_ln,
        block_post_norm_on_the_sum,
        block_reordered,
        block_llama_names,
        block_gain_w,
        block_eps_outside_sqrt,
        block_no_residual,
        block_normalized_stream,
        block_no_post_feedforward_norm,
        block_mlp_first,
        block_parallel,
        block_same_input_norm_twice,
        block_with_qk_norm_after_rope,
    ],
}
