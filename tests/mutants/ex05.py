"""Exercise 05 (QK-Norm attention): qk_norm_attention(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head),
softcap(s, cap), attention_entropy(probs) and failure_threshold(lrs, final_losses, initial_loss, best_loss)."""

import math

import torch

from course_utils.attention import RotaryEmbedding


# ----------------------------------------------------------------------------------------------------
# qk_norm_attention
# ----------------------------------------------------------------------------------------------------
def qk_norm_attention_head_by_head(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head):
    """Correct: one query head at a time, its key/value head picked by index, rsqrt for the norm."""
    B, T, _ = x.shape
    d_head = wq.shape[0] // n_head
    group = n_head // n_kv_head
    rope = RotaryEmbedding(d_head, T)
    q_all, k_all, v_all = x @ wq.T, x @ wk.T, x @ wv.T
    future = torch.arange(T).unsqueeze(0) > torch.arange(T).unsqueeze(1)  # key after query

    def rms(t, gain):
        return t * torch.rsqrt(t.pow(2).sum(dim=-1, keepdim=True) / d_head + 1e-6) * gain

    outputs = []
    for h in range(n_head):
        kv = h // group
        q = rope(rms(q_all[..., h * d_head : (h + 1) * d_head], q_gain))
        k = rope(rms(k_all[..., kv * d_head : (kv + 1) * d_head], k_gain))
        v = v_all[..., kv * d_head : (kv + 1) * d_head]
        logits = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(d_head)
        weights = torch.softmax(logits.masked_fill(future, -math.inf), dim=-1)
        outputs.append(torch.einsum("bqk,bkd->bqd", weights, v))
    return torch.cat(outputs, dim=-1) @ wo.T


def _attention(
    x,
    wq,
    wk,
    wv,
    wo,
    q_gain,
    k_gain,
    n_head,
    n_kv_head,
    *,
    eps=1e-6,
    norm="rms_head",
    eps_inside=True,
    rope_first=False,
    use_rope=True,
    gains="right",
    scale=lambda d: math.sqrt(d),
    causal="mask_logits",
    kv_map="interleave",
    softmax_dim=-1,
    split="view_transpose",
):
    """Per-head QK-Norm attention as a learner writes it (the solution's steps); each keyword is a slip."""
    B, T, _ = x.shape
    d_head = wq.shape[0] // n_head
    rope = RotaryEmbedding(d_head, T)
    q, k, v = x @ wq.T, x @ wk.T, x @ wv.T

    def rms(t):
        ms = t.pow(2).mean(dim=-1, keepdim=True)
        return t / torch.sqrt(ms + eps) if eps_inside else t / (torch.sqrt(ms) + eps)

    if norm == "rms_full":
        q, k = rms(q), rms(k)

    def heads(t, n):
        if split == "view_transpose":
            return t.view(B, T, n, d_head).transpose(1, 2)
        return t.reshape(B, n, T, d_head)  # the wrong split: a view of (B, T, n·d) as (B, n, T, d)

    q, k, v = heads(q, n_head), heads(k, n_kv_head), heads(v, n_kv_head)

    def normalize(t, gain):
        if gains == "before":
            return rms(t * gain)
        if norm == "rms_head":
            t = rms(t)
        elif norm == "layer_head":
            c = t - t.mean(dim=-1, keepdim=True)
            t = c / torch.sqrt(c.pow(2).mean(dim=-1, keepdim=True) + eps)
        return t if gain is None else t * gain

    g_q, g_k = {
        "right": (q_gain, k_gain),
        "none": (None, None),
        "swapped": (k_gain, q_gain),
        "before": (q_gain, k_gain),
    }[gains]
    if not use_rope:
        q, k = normalize(q, g_q), normalize(k, g_k)
    elif rope_first:
        q, k = normalize(rope(q), g_q), normalize(rope(k), g_k)
    else:
        q, k = rope(normalize(q, g_q)), rope(normalize(k, g_k))
    group = n_head // n_kv_head
    if kv_map == "interleave":
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    else:
        k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    logits = q @ k.transpose(-2, -1) / scale(d_head)
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    weights = _causal_softmax(logits, allowed, causal, softmax_dim)
    y = (weights @ v).transpose(1, 2).reshape(B, T, n_head * d_head)
    return y @ wo.T


def _causal_softmax(logits, allowed, causal, softmax_dim):
    """The attention weights: the future masked out of the logits before the softmax ("mask_logits", the
    solution's way), the softmax's output masked ("mask_after_softmax": rows no longer sum to 1), or no mask."""
    if causal == "mask_logits":
        return logits.masked_fill(~allowed, float("-inf")).softmax(dim=softmax_dim)
    if causal == "mask_after_softmax":
        return logits.softmax(dim=softmax_dim) * allowed
    return logits.softmax(dim=softmax_dim)


def qk_norm_full_width(*args):
    """Normalizes q and k over the full width (all heads at once) instead of per head."""
    return _attention(*args, norm="rms_full")


def qk_norm_after_rope(*args):
    """Applies RoPE first and normalizes the rotated q and k."""
    return _attention(*args, rope_first=True)


def qk_norm_layer_norm(*args):
    """Uses LayerNorm (subtracts the mean) instead of RMSNorm on q and k."""
    return _attention(*args, norm="layer_head")


def qk_norm_no_norm(*args):
    """Forgets QK-Norm altogether (gains included)."""
    return _attention(*args, norm="none", gains="none")


def qk_norm_no_gains(*args):
    """Normalizes q and k but never multiplies by q_gain and k_gain."""
    return _attention(*args, gains="none")


def qk_norm_gains_swapped(*args):
    """Multiplies q by k_gain and k by q_gain."""
    return _attention(*args, gains="swapped")


def qk_norm_gains_before_normalizing(*args):
    """Multiplies q and k by their gains first, then normalizes the product (the norm undoes part of the gain)."""
    return _attention(*args, gains="before")


def qk_norm_eps_outside_sqrt(*args):
    """Adds eps outside the square root: sqrt(mean(t**2)) + eps."""
    return _attention(*args, eps_inside=False)


def qk_norm_no_eps(*args):
    """Leaves eps out of the norm."""
    return _attention(*args, eps=0.0)


def qk_norm_llama_eps(*args):
    """Uses eps = 1e-5 (Llama's RMSNorm default) instead of the task's 1e-6."""
    return _attention(*args, eps=1e-5)


def qk_norm_no_rope(*args):
    """Forgets RoPE."""
    return _attention(*args, use_rope=False)


def qk_norm_no_scale(*args):
    """Forgets the 1/sqrt(d_head) scale."""
    return _attention(*args, scale=lambda d: 1.0)


def qk_norm_scale_by_d_head(*args):
    """Divides the logits by d_head instead of sqrt(d_head)."""
    return _attention(*args, scale=lambda d: float(d))


def qk_norm_no_causal_mask(*args):
    """Forgets the causal mask."""
    return _attention(*args, causal="none")


def qk_norm_mask_after_softmax(*args):
    """Zeroes the future after the softmax, so the rows no longer sum to 1."""
    return _attention(*args, causal="mask_after_softmax")


def qk_norm_softmax_over_queries(*args):
    """Takes the softmax over the queries (dim -2) instead of the keys."""
    return _attention(*args, softmax_dim=-2)


def qk_norm_kv_heads_tiled(*args):
    """Pairs query heads with key/value heads by repeat (tiling) instead of repeat_interleave."""
    return _attention(*args, kv_map="tile")


def qk_norm_heads_split_without_transpose(*args):
    """Splits heads with reshape(B, heads, T, d_head) instead of view(B, T, heads, d_head).transpose(1, 2)."""
    return _attention(*args, split="reshape")


# ----------------------------------------------------------------------------------------------------
# softcap(s, cap) = cap * tanh(s / cap)
# ----------------------------------------------------------------------------------------------------
def softcap_from_exponentials(s, cap):
    """Correct: tanh written with one exponential, cap * (1 - e^(-2|u|)) / (1 + e^(-2|u|)) * sign(u)."""
    u = s / cap
    e = torch.exp(-2 * u.abs())
    return cap * torch.sign(u) * (1 - e) / (1 + e)


def softcap_no_division_inside(s, cap):
    """cap * tanh(s): forgets to divide by the cap inside."""
    return cap * torch.tanh(s)


def softcap_no_multiplication_outside(s, cap):
    """tanh(s / cap): forgets to multiply by the cap."""
    return torch.tanh(s / cap)


def softcap_hard_clip(s, cap):
    """Clips to [-cap, cap] instead of squashing smoothly."""
    return s.clamp(-cap, cap)


def softcap_hard_coded_cap(s, cap):
    """Ignores the cap argument and always uses Gemma 2's 50."""
    return 50.0 * torch.tanh(s / 50.0)


def softcap_rational(s, cap):
    """Uses s / (1 + |s| / cap), another soft cap, instead of cap * tanh(s / cap)."""
    return s / (1 + s.abs() / cap)


def softcap_only_beyond_the_cap(s, cap):
    """Leaves logits inside [-cap, cap] unchanged and squashes only the ones beyond."""
    return torch.where(s.abs() <= cap, s, cap * torch.tanh(s / cap))


# ----------------------------------------------------------------------------------------------------
# attention_entropy(probs) = -sum p ln p over the last dim
# ----------------------------------------------------------------------------------------------------
def entropy_with_where(probs):
    """Correct: ln p only where p > 0, the rest contributes 0."""
    safe = torch.where(probs > 0, probs, torch.ones_like(probs))
    return -(probs * torch.log(safe)).sum(dim=-1)


def _plogp(p):
    return p * torch.log(p.clamp_min(1e-30))


def entropy_in_bits(probs):
    """Uses log2 (bits) instead of the natural log (nats)."""
    return -(probs * torch.log2(probs.clamp_min(1e-30))).sum(dim=-1)


def entropy_in_decimal_digits(probs):
    """Uses log10 instead of the natural log."""
    return -(probs * torch.log10(probs.clamp_min(1e-30))).sum(dim=-1)


def entropy_no_minus_sign(probs):
    """Forgets the minus sign: sum(p log p)."""
    return _plogp(probs).sum(dim=-1)


def entropy_mean_over_keys(probs):
    """Averages -p log p over the keys instead of summing."""
    return -_plogp(probs).mean(dim=-1)


def entropy_over_queries(probs):
    """Sums over dim -2 (the queries) instead of the last dim."""
    return -_plogp(probs).sum(dim=-2 if probs.dim() >= 2 else -1)


def entropy_nan_at_zero(probs):
    """Computes p * log(p) directly: 0 * log 0 = NaN."""
    return -(probs * torch.log(probs)).sum(dim=-1)


def entropy_normalized(probs):
    """Divides by ln(number of keys), the normalized entropy in [0, 1]."""
    return -_plogp(probs).sum(dim=-1) / math.log(probs.shape[-1])


def entropy_of_the_whole_tensor(probs):
    """Sums -p log p over every element: one number instead of one per row."""
    return -_plogp(probs).sum()


# ----------------------------------------------------------------------------------------------------
# failure_threshold
# ----------------------------------------------------------------------------------------------------
def threshold_by_loop(lrs, final_losses, initial_loss, best_loss):
    """Correct: one run at a time in plain Python floats; `not loss < l0` also catches inf."""
    smallest = math.inf
    for lr, loss in zip(lrs.tolist(), final_losses.tolist()):
        diverged = not loss < initial_loss
        degraded = loss > best_loss + 0.5
        if (diverged or degraded) and lr < smallest:
            smallest = lr
    return smallest


def _runs(lrs, final_losses):
    return sorted(zip(lrs.tolist(), final_losses.tolist()))  # by increasing learning rate


def threshold_only_diverged(lrs, final_losses, initial_loss, best_loss):
    """Counts only diverged runs (inf, or not below l0), not the degraded ones."""
    return min(lr for lr, loss in _runs(lrs, final_losses) if not loss < initial_loss)


def threshold_margin_from_l0(lrs, final_losses, initial_loss, best_loss):
    """Degraded measured from the untrained loss: more than 0.5 nats *below l0* is taken as trained."""
    return min(lr for lr, loss in _runs(lrs, final_losses) if not loss < initial_loss - 0.5)


def threshold_own_best(lrs, final_losses, initial_loss, best_loss):
    """The 0.5 nats measured from this variant's own best run instead of the sweep's best."""
    own = min(loss for loss in final_losses.tolist() if math.isfinite(loss))
    return min(lr for lr, loss in _runs(lrs, final_losses) if not loss < initial_loss or loss > own + 0.5)


def threshold_one_nat_margin(lrs, final_losses, initial_loss, best_loss):
    """A margin of 1 nat instead of 0.5."""
    return min(lr for lr, loss in _runs(lrs, final_losses) if not loss < initial_loss or loss > best_loss + 1.0)


def threshold_largest_that_trained(lrs, final_losses, initial_loss, best_loss):
    """The largest learning rate whose run trained: the other side of the threshold."""
    return max(lr for lr, loss in _runs(lrs, final_losses) if loss < initial_loss and loss <= best_loss + 0.5)


def threshold_largest_failure(lrs, final_losses, initial_loss, best_loss):
    """The largest learning rate whose run failed, not the smallest."""
    failed = ~(final_losses < initial_loss) | (final_losses > best_loss + 0.5)
    return lrs[failed].max()


def threshold_first_failure_in_given_order(lrs, final_losses, initial_loss, best_loss):
    """The first failed run in the order the grid is given, as if it were sorted."""
    for lr, loss in zip(lrs.tolist(), final_losses.tolist()):
        if not loss < initial_loss or loss > best_loss + 0.5:
            return lr
    return None


def threshold_start_of_failing_tail(lrs, final_losses, initial_loss, best_loss):
    """The learning rate after the last run that trained: where the failures stop coming back."""
    runs = _runs(lrs, final_losses)
    trained = [i for i, (lr, loss) in enumerate(runs) if loss < initial_loss and loss <= best_loss + 0.5]
    return runs[trained[-1] + 1][0] if trained else runs[0][0]


def threshold_skips_inf(lrs, final_losses, initial_loss, best_loss):
    """Filters out the inf losses before the test, so a run that diverged is never counted."""
    finite = torch.isfinite(final_losses)
    failed = (final_losses[finite] >= initial_loss) | (final_losses[finite] > best_loss + 0.5)
    return lrs[finite][failed].min()


def threshold_index(lrs, final_losses, initial_loss, best_loss):
    """The index of the first failed run (in increasing learning rate), not its learning rate."""
    order = torch.argsort(lrs)
    failed = ~(final_losses[order] < initial_loss) | (final_losses[order] > best_loss + 0.5)
    return int(torch.nonzero(failed)[0])


CORRECT = {
    "qk_norm_attention": qk_norm_attention_head_by_head,
    "softcap": softcap_from_exponentials,
    "attention_entropy": entropy_with_where,
    "failure_threshold": threshold_by_loop,
}
MUTANTS = {
    "qk_norm_attention": [
        qk_norm_full_width,
        qk_norm_after_rope,
        qk_norm_layer_norm,
        qk_norm_no_norm,
        qk_norm_no_gains,
        qk_norm_gains_swapped,
        qk_norm_gains_before_normalizing,
        qk_norm_eps_outside_sqrt,
        qk_norm_no_eps,
        qk_norm_llama_eps,
        qk_norm_no_rope,
        qk_norm_no_scale,
        qk_norm_scale_by_d_head,
        qk_norm_no_causal_mask,
        qk_norm_mask_after_softmax,
        qk_norm_softmax_over_queries,
        qk_norm_kv_heads_tiled,
        qk_norm_heads_split_without_transpose,
    ],
    "softcap": [
        softcap_no_division_inside,
        softcap_no_multiplication_outside,
        softcap_hard_clip,
        softcap_hard_coded_cap,
        softcap_rational,
        softcap_only_beyond_the_cap,
    ],
    "attention_entropy": [
        entropy_in_bits,
        entropy_in_decimal_digits,
        entropy_no_minus_sign,
        entropy_mean_over_keys,
        entropy_over_queries,
        entropy_nan_at_zero,
        entropy_normalized,
        entropy_of_the_whole_tensor,
    ],
    "failure_threshold": [
        threshold_only_diverged,
        threshold_margin_from_l0,
        threshold_own_best,
        threshold_one_nat_margin,
        threshold_largest_that_trained,
        threshold_largest_failure,
        threshold_first_failure_in_given_order,
        threshold_start_of_failing_tail,
        threshold_skips_inf,
        threshold_index,
    ],
}
