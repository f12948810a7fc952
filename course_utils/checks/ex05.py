"""Checks for exercise 05 (QK-Norm attention): per-head QK-Norm attention, softcapping, attention entropy,
the two-learning-rate mini sweep, and a question on its max-logit curves.

The learner's attention is functional, with explicit weights, so that the check can load the very same
weights into the chapter's `CausalSelfAttention(qk_norm="head")` and compare outputs. Its cases cover one
key/value head per query head, grouped-query attention (two query heads per key/value head), multi-query
attention (one key/value head), huge projections (the logits must stay bounded), and a single token.
Each known mistake (norm over the full width, norm after RoPE, LayerNorm instead of RMSNorm, no 1/sqrt(d)
scale, no causal mask, the wrong key/value head for a query head, no gains, no norm at all) is a wrong
implementation below; an output that matches one gets that mistake's hint.
"""

from __future__ import annotations

import math

import torch

from ..attention import CausalSelfAttention, RotaryEmbedding
from ..model import GPTConfig
from .core import Case, CheckReport, FunctionCheck, describe_exception
from .forbidden import ATTENTION, Forbidden
from .questions import MultipleChoice
from .registry import Exercise, Graded

__all__ = [
    "EXERCISE",
    "CURVE_QUESTION",
    "QK_NORM_ATTENTION_CHECK",
    "SOFTCAP_CHECK",
    "ENTROPY_CHECK",
    "reference_qk_norm_attention",
    "functional_attention",
    "check_qk_norm_attention",
    "check_softcap",
    "check_attention_entropy",
    "check_mini_sweep",
]

EPS = 1e-6


# ----------------------------------------------------------------------------------------------------
# per-head QK-Norm attention
# ----------------------------------------------------------------------------------------------------
def reference_qk_norm_attention(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head):
    """The chapter's CausalSelfAttention(qk_norm="head") with these weights, in float64."""
    B, T, D = x.shape
    cfg = GPTConfig(d_model=D, n_head=n_head, n_kv_head=n_kv_head, qk_norm="head", block_size=max(T, 1))
    with torch.random.fork_rng(devices=[]):  # building the layer draws weights: leave the global generator as it was
        layer = CausalSelfAttention(cfg).double()
    with torch.no_grad():
        for proj, weight in ((layer.q_proj, wq), (layer.k_proj, wk), (layer.v_proj, wv), (layer.o_proj, wo)):
            proj.weight.copy_(weight.double())
        layer.q_norm.weight.copy_(q_gain.double())
        layer.k_norm.weight.copy_(k_gain.double())
        return layer(x.double())


def functional_attention(
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
    norm="rms_head",
    order="norm_then_rope",
    scale=True,
    causal=True,
    kv_map="interleave",
    gains=True,
):
    """Per-head QK-Norm attention written out, in float64; the keywords switch in the known mistakes."""
    x = x.double()
    B, T, _ = x.shape
    d_head = wq.shape[0] // n_head
    q, k, v = x @ wq.double().T, x @ wk.double().T, x @ wv.double().T
    if norm == "rms_full":  # OLMo 2's version: over all heads' channels at once
        q = q / torch.sqrt(q.pow(2).mean(-1, keepdim=True) + EPS)
        k = k / torch.sqrt(k.pow(2).mean(-1, keepdim=True) + EPS)

    def heads(t, n):
        return t.view(B, T, n, d_head).transpose(1, 2)

    q, k, v = heads(q, n_head), heads(k, n_kv_head), heads(v, n_kv_head)

    def normalize(t, gain):
        if norm == "rms_head":
            t = t / torch.sqrt(t.pow(2).mean(-1, keepdim=True) + EPS)
        elif norm == "layer_head":
            t = (t - t.mean(-1, keepdim=True)) / torch.sqrt(t.var(-1, unbiased=False, keepdim=True) + EPS)
        return t * gain.double() if gains else t

    rope = RotaryEmbedding(d_head, max(T, 1)).double()
    if order == "norm_then_rope":
        q, k = rope(normalize(q, q_gain)), rope(normalize(k, k_gain))
    else:
        q, k = normalize(rope(q), q_gain), normalize(rope(k), k_gain)
    if n_kv_head != n_head:
        group = n_head // n_kv_head
        if kv_map == "interleave":
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        else:
            k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    s = q @ k.transpose(-2, -1)
    if scale:
        s = s / math.sqrt(d_head)
    if causal:
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    y = s.softmax(-1) @ v
    return y.transpose(1, 2).reshape(B, T, -1) @ wo.double().T


def _attention_cases(g: torch.Generator) -> list:
    def weights(D, H, KV, proj_scale=1.0):
        d_head = D // H
        r = lambda *s: torch.randn(*s, generator=g)
        return (
            r(H * d_head, D) * proj_scale / math.sqrt(D),
            r(KV * d_head, D) * proj_scale / math.sqrt(D),
            r(KV * d_head, D) / math.sqrt(D),
            r(D, H * d_head) / math.sqrt(D),
            torch.rand(d_head, generator=g) * 1.5 + 0.5,
            torch.rand(d_head, generator=g) * 1.5 + 0.5,
        )

    specs = [
        ("4 heads, 4 key/value heads (B=2, T=6, d_model=32)", 2, 6, 32, 4, 4, 1.0),
        ("4 heads sharing 2 key/value heads (grouped-query attention)", 2, 7, 32, 4, 2, 1.0),
        ("4 heads sharing 1 key/value head (multi-query attention)", 1, 5, 32, 4, 1, 1.0),
        ("8 heads of d_head 8, 2 key/value heads, T=10", 1, 10, 64, 8, 2, 1.0),
        ("projections x 1000: the logits must stay bounded", 2, 6, 32, 4, 2, 1000.0),
        ("projections x 0.001: q and k so small that eps = 1e-6 matters", 2, 6, 32, 4, 2, 1e-3),
        ("a single token (T=1)", 3, 1, 32, 4, 2, 1.0),
    ]
    cases = []
    for name, B, T, D, H, KV, proj_scale in specs:
        x = torch.randn(B, T, D, generator=g)
        args = (x, *weights(D, H, KV, proj_scale), H, KV)
        cases.append(Case(name, args, reference_qk_norm_attention(*args)))
    return cases


def _mistake(**switches):
    return lambda *args: functional_attention(*args, **switches)


QK_NORM_ATTENTION_CHECK = FunctionCheck(
    name="qk_norm_attention",
    make_cases=_attention_cases,
    tolerance=1e-4,
    hint="project, split into heads (B, heads, T, d_head), RMS-normalize each head's q and k over d_head and "
    "multiply by the gains, apply RoPE, repeat each key/value head for its group of query heads "
    "(repeat_interleave), s = q k^T / sqrt(d_head), causal mask, softmax, weights @ v, merge heads, W_o.",
    mistakes={
        "your output matches QK-Norm over the full width (all heads' channels at once, OLMo 2's variant). Here "
        "the norm is per head: split into heads first, then take the RMS over each head's d_head channels.": _mistake(
            norm="rms_full"
        ),
        "your output matches normalizing *after* RoPE. Normalize q and k first, then rotate them (Qwen3's "
        "order): with gains that differ inside a rotated pair the two orders give different results.": _mistake(
            order="rope_then_norm"
        ),
        "your output matches LayerNorm (mean subtracted) instead of RMSNorm. QK-Norm divides by "
        "sqrt(mean(q**2) + eps) and does not centre.": _mistake(norm="layer_head"),
        "your output matches attention without the 1/sqrt(d_head) scale: divide q k^T by sqrt(d_head).": _mistake(
            scale=False
        ),
        "your output matches attention without the causal mask: position i may only look at positions <= i "
        "(fill the upper triangle with -inf before the softmax).": _mistake(causal=False),
        "your output matches pairing query heads with the wrong key/value heads: query head h must use "
        "key/value head h // (n_head // n_kv_head). Use repeat_interleave on the head dim, not repeat.": _mistake(
            kv_map="tile"
        ),
        "your output matches QK-Norm without the gains: multiply the normalized q by q_gain and k by k_gain.": _mistake(
            gains=False
        ),
        "your output matches attention without any QK-Norm: normalize each head's q and k (RMSNorm) before "
        "RoPE.": _mistake(norm="none", gains=False),
    },
    reference=reference_qk_norm_attention,
    forbidden=Forbidden(
        calls=ATTENTION
        + ("course_utils.checks.ex05.reference_qk_norm_attention", "course_utils.checks.ex05.functional_attention"),
        hint="compute the logits, the causal mask, the softmax and the weighted sum yourself, as the task's steps "
        "describe; the given RotaryEmbedding is the one ready-made piece.",
        why="the task asks for attention written out step by step; scaled_dot_product_attention and "
        "MultiheadAttention do steps 6 and 7 for you, and the chapter's CausalSelfAttention and the two functions "
        "above are this task's answer.",
    ),
)


def check_qk_norm_attention(fn, seed: int = 0) -> CheckReport:
    """Check a learner's qk_norm_attention(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head)."""
    return QK_NORM_ATTENTION_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# softcapping
# ----------------------------------------------------------------------------------------------------
def _softcap_ref(s, cap):
    return cap * torch.tanh(s.double() / cap)


def _softcap_cases(g: torch.Generator) -> list:
    specs = [
        ("small logits, cap 50 (nearly unchanged)", (torch.randn(3, 5, generator=g), 50.0)),
        ("logits from -300 to 300, cap 50 (Gemma 2's attention cap)", (torch.linspace(-300, 300, 61), 50.0)),
        (
            "a (2, 4, 6, 6) tensor of large logits, cap 30 (Gemma 2's final cap)",
            (torch.randn(2, 4, 6, 6, generator=g) * 80, 30.0),
        ),
        ("cap 5 on logits of scale 10", (torch.randn(8, generator=g) * 10, 5.0)),
    ]
    return [Case(name, args, _softcap_ref(*args)) for name, args in specs]


SOFTCAP_CHECK = FunctionCheck(
    name="softcap",
    make_cases=_softcap_cases,
    tolerance=1e-4,
    hint="cap * tanh(s / cap): divide by the cap inside tanh, multiply by it outside.",
    mistakes={
        "your output matches cap * tanh(s), without dividing s by the cap inside: small logits must pass "
        "almost unchanged (tanh(s / cap) ≈ s / cap).": lambda s, cap: cap * torch.tanh(s.double()),
        "your output matches tanh(s / cap), without multiplying by the cap: the result must lie in (-cap, cap), "
        "not (-1, 1).": lambda s, cap: torch.tanh(s.double() / cap),
        "your output matches a hard clip to [-cap, cap]. Softcapping is smooth: cap * tanh(s / cap), whose slope "
        "never drops to exactly 0.": lambda s, cap: s.double().clamp(-cap, cap),
    },
    reference=_softcap_ref,
    forbidden=Forbidden(
        calls=("course_utils.attention.softcap",),
        hint="write cap * tanh(s / cap) with torch.tanh.",
        why="course_utils.attention.softcap is this task's answer.",
    ),
)


def check_softcap(fn, seed: int = 0) -> CheckReport:
    """Check a learner's softcap(s, cap)."""
    return SOFTCAP_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# attention entropy
# ----------------------------------------------------------------------------------------------------
def _entropy_ref(p):
    p = p.double()
    return -torch.special.xlogy(p, p).sum(-1)


def _entropy_cases(g: torch.Generator) -> list:
    T = 6
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    logits = torch.randn(2, 3, T, T, generator=g) * 2
    attention = logits.masked_fill(~causal, float("-inf")).softmax(-1)  # exact zeros above the diagonal
    specs = [
        ("uniform rows over 8 keys (entropy ln 8)", torch.full((2, 8), 1 / 8)),
        ("one-hot rows (entropy 0, contains exact zeros)", torch.eye(5)),
        ("causal attention weights (2, 3, 6, 6) with zeros above the diagonal", attention),
        ("random rows, softmax of logits of scale 3 (4 x 4)", (torch.randn(4, 4, generator=g) * 3).softmax(-1)),
    ]
    return [Case(name, (p,), _entropy_ref(p)) for name, p in specs]


def _xlogy_sum(p, dim):
    p = p.double()
    return -torch.special.xlogy(p, p).sum(dim)


ENTROPY_CHECK = FunctionCheck(
    name="attention_entropy",
    make_cases=_entropy_cases,
    tolerance=1e-4,
    hint="-(p * log p).sum(dim=-1), natural log, with 0 * log 0 counted as 0.",
    mistakes={
        "your output matches the entropy in bits (log2). Use the natural log (torch.log): the course measures "
        "entropy in nats, ln n for uniform attention over n keys.": lambda p: (
            -torch.special.xlogy(p.double(), p.double()).sum(-1) / math.log(2)
        ),
        (
            "your output matches sum(p log p) without the minus sign: entropy is -sum(p log p), never negative."
        ): lambda p: torch.special.xlogy(p.double(), p.double()).sum(-1),
        "your output matches the mean over keys instead of the sum: entropy sums -p log p over the keys.": lambda p: (
            -torch.special.xlogy(p.double(), p.double()).mean(-1)
        ),
        "your output matches a sum over the wrong dimension (the queries, dim -2): each row of attention "
        "weights, the last dim, is one distribution.": lambda p: (
            _xlogy_sum(p, -2) if p.dim() >= 2 else _xlogy_sum(p, -1)
        ),
    },
    reference=_entropy_ref,
    nan_hint="NaN appears where a weight is exactly 0 (one-hot rows, masked keys): 0 * log 0 is "
    "0 * -inf = NaN in floating point, but counts as 0 in the entropy. Use "
    "torch.special.xlogy(p, p), or clamp p before the log: p * torch.log(p.clamp_min(1e-30)).",
    forbidden=Forbidden(
        calls=("course_utils.attention.attention_entropy", "torch.distributions.Categorical"),
        hint="sum -p * log p over the last dim yourself; torch.special.xlogy(p, p) counts 0 * log 0 as 0.",
        why="course_utils.attention.attention_entropy is this task's answer, and Categorical(probs=p).entropy() "
        "computes it too (the distribution has no other use in this task).",
    ),
)


def check_attention_entropy(fn, seed: int = 0) -> CheckReport:
    """Check a learner's attention_entropy(probs): the entropy in nats of each row of the last dim."""
    return ENTROPY_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# the mini sweep
# ----------------------------------------------------------------------------------------------------
MINI_LRS = (0.01, 0.3)


def check_mini_sweep(fn):
    """Run the learner's run_mini_sweep(), check the sweep it returns, print a verdict; return the result or None.

    Expected: a stability_sweep result with the variants baseline and qk_norm at learning rates 0.01 and
    0.3, in which the baseline's largest attention logit at 0.3 is at least 100x QK-Norm's.
    """
    from ..experiments import SweepResult

    name = "mini_sweep"
    try:
        result = fn()
    except NotImplementedError:
        print(CheckReport(name, "not-implemented").text())
        return None
    except (Exception, SystemExit) as exc:
        print(f"❌ {name}: raised {describe_exception(exc)}\n   Hint: call stability_sweep(...) and return its result.")
        return None
    if not isinstance(result, SweepResult):
        print(
            f"❌ {name}: returned {type(result).__name__}, expected the result of stability_sweep(...)\n"
            '   Hint: return stability_sweep([0.01, 0.3], variants=("baseline", "qk_norm"), ...).'
        )
        return None
    try:
        return _judge_mini_sweep(name, result)
    except Exception as exc:  # a SweepResult built or changed by hand: records that cannot be read, a logit of 0
        print(
            f"❌ {name}: the sweep's records could not be judged ({type(exc).__name__})\n"
            '   Hint: return stability_sweep([0.01, 0.3], variants=("baseline", "qk_norm"), ...) unchanged.'
        )
        return None


def _judge_mini_sweep(name: str, result):
    """Print the verdict on a SweepResult; return it when it passes, else None."""
    problems = []
    if sorted(result.variants) != ["baseline", "qk_norm"]:
        problems.append(f"variants {result.variants}, expected ['baseline', 'qk_norm']")
    if len(result.lrs) != 2 or not all(math.isclose(a, b) for a, b in zip(result.lrs, MINI_LRS)):
        problems.append(f"learning rates {result.lrs}, expected [0.01, 0.3]")
    if problems:
        print(
            f"❌ {name}: " + "; ".join(problems) + "\n   Hint: pass lrs=[0.01, 0.3] and "
            'variants=("baseline", "qk_norm") to stability_sweep.'
        )
        return None
    ratio = result.get("baseline", 0.3).max_attn_logit / result.get("qk_norm", 0.3).max_attn_logit
    if not ratio >= 100:
        print(
            f"❌ {name}: at lr 0.3 the baseline's largest logit is only {ratio:.1f}x QK-Norm's (expected >= 100x)\n"
            "   Hint: use the quick preset with at least 100 steps, so that the logits have time to grow."
        )
        return None
    print(f"✅ {name}: 4 runs; at lr 0.3 the baseline's largest attention logit is more than 100x QK-Norm's")
    return result


# ----------------------------------------------------------------------------------------------------
# the question, the registry
# ----------------------------------------------------------------------------------------------------
CURVE_QUESTION = MultipleChoice(
    id="ex05.curve",
    prompt="Look at the max-logit curves of your mini sweep. What do they show?",
    choices={
        "a": "Both models' largest logit grows at the same rate; QK-Norm only changes the loss.",
        "b": "At lr 0.3 the baseline's largest logit grows by orders of magnitude within the first few dozen "
        "steps, while QK-Norm's stays in the tens: it can grow only as far as its learned gains allow.",
        "c": "With QK-Norm the largest logit stays exactly at sqrt(d_head) = 4 for the whole run.",
        "d": "The largest logit shrinks during training because of the learning-rate warmup.",
    },
    answer="b",
    explanation="without the norm the logit multiplies the growth of W_q, W_k and the gain of the norm before "
    "attention; with it, |s| <= sqrt(d_head) * max|g_q| * max|g_k|. The gains are not slow (at lr 0.3 one Adam "
    "step can move a gain of 1 by 30 %, and in chapter 05's sweep they grew several-fold), but the logit can "
    "never pass the bound they set.",
    wrong_hints={
        "a": "plot them on a log axis: one curve ends around 10^5 or more, the other in the tens.",
        "c": "sqrt(d_head) is the bound for *unit* gains; the gains are learned, so QK-Norm's logits do grow, "
        "as far as the gains allow (look at the blue curve).",
        "d": "warmup only lowers the learning rate during the first steps; both curves rise.",
    },
)

EXERCISE = Exercise(
    "ex05_qk_norm",
    graded=[
        Graded("qk_norm_attention", "qk_norm_attention", 4),
        Graded("softcap", "softcap", 1),
        Graded("attention_entropy", "attention_entropy", 2),
        Graded("ex05.curve", "answer_max_logit_curve", 1),
    ],
    checks=[QK_NORM_ATTENTION_CHECK, SOFTCAP_CHECK, ENTROPY_CHECK],
    questions=[CURVE_QUESTION],
)
