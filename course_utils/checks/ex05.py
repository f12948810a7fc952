"""Checks for exercise 05 (QK-Norm attention): per-head QK-Norm attention, softcapping, attention entropy,
a small learning-rate sweep and the learning rate at which its baseline first fails, and a question on its
max-logit curves.

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
from ..i18n import N_, _
from ..model import GPTConfig
from ..records import DEGRADED_MARGIN, STATUS_MARK, SweepResult
from .allowed import ATTENTION_BY_HAND, BASIC
from .core import Case, CheckReport, FunctionCheck, describe_exception, shown
from .forbidden import ATTENTION, Forbidden
from .questions import MultipleChoice
from .registry import Exercise, Graded
from .render import show as show_verdict

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
    "FAILURE_THRESHOLD_CHECK",
    "reference_failure_threshold",
    "check_failure_threshold",
    "check_threshold_on_sweep",
    "sweep_arguments",
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
        (N_("4 heads, 4 key/value heads (B=2, T=6, d_model=32)"), 2, 6, 32, 4, 4, 1.0),
        (N_("4 heads sharing 2 key/value heads (grouped-query attention)"), 2, 7, 32, 4, 2, 1.0),
        (N_("4 heads sharing 1 key/value head (multi-query attention)"), 1, 5, 32, 4, 1, 1.0),
        (N_("8 heads of d_head 8, 2 key/value heads, T=10"), 1, 10, 64, 8, 2, 1.0),
        (N_("projections x 1000: the logits must stay bounded"), 2, 6, 32, 4, 2, 1000.0),
        (N_("projections x 0.001: q and k so small that eps = 1e-6 matters"), 2, 6, 32, 4, 2, 1e-3),
        (N_("a single token (T=1)"), 3, 1, 32, 4, 2, 1.0),
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
    hint=N_(
        "project, split into heads (B, heads, T, d_head), RMS-normalize each head's q and k over d_head and "
        "multiply by the gains, apply RoPE, repeat each key/value head for its group of query heads "
        "(repeat_interleave), s = q k^T / sqrt(d_head), causal mask, softmax, weights @ v, merge heads, W_o."
    ),
    mistakes={
        N_(
            "your output matches QK-Norm over the full width (all heads' channels at once, OLMo 2's variant). Here "
            "the norm is per head: split into heads first, then take the RMS over each head's d_head channels."
        ): _mistake(norm="rms_full"),
        N_(
            "your output matches normalizing *after* RoPE. Normalize q and k first, then rotate them (Qwen3's "
            "order): with gains that differ inside a rotated pair the two orders give different results."
        ): _mistake(order="rope_then_norm"),
        N_(
            "your output matches LayerNorm (mean subtracted) instead of RMSNorm. QK-Norm divides by "
            "sqrt(mean(q**2) + eps) and does not centre."
        ): _mistake(norm="layer_head"),
        N_("your output matches attention without the 1/sqrt(d_head) scale: divide q k^T by sqrt(d_head)."): _mistake(
            scale=False
        ),
        N_(
            "your output matches attention without the causal mask: position i may only look at positions <= i "
            "(fill the upper triangle with -inf before the softmax)."
        ): _mistake(causal=False),
        N_(
            "your output matches pairing query heads with the wrong key/value heads: query head h must use "
            "key/value head h // (n_head // n_kv_head). Use repeat_interleave on the head dim, not repeat."
        ): _mistake(kv_map="tile"),
        N_(
            "your output matches QK-Norm without the gains: multiply the normalized q by q_gain and k by k_gain."
        ): _mistake(gains=False),
        N_(
            "your output matches attention without any QK-Norm: normalize each head's q and k (RMSNorm) before RoPE."
        ): _mistake(norm="none", gains=False),
    },
    reference=reference_qk_norm_attention,
    forbidden=Forbidden(
        calls=ATTENTION
        + ("course_utils.checks.ex05.reference_qk_norm_attention", "course_utils.checks.ex05.functional_attention"),
        hint=N_(
            "compute the logits, the causal mask, the softmax and the weighted sum yourself, as the task's steps "
            "describe; the given RotaryEmbedding is the one ready-made piece."
        ),
        why="the task asks for attention written out step by step; scaled_dot_product_attention and "
        "MultiheadAttention do steps 6 and 7 for you, and the chapter's CausalSelfAttention and the two functions "
        "above are this task's answer.",
        allowed=ATTENTION_BY_HAND,
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
        (N_("small logits, cap 50 (nearly unchanged)"), (torch.randn(3, 5, generator=g), 50.0)),
        (N_("logits from -300 to 300, cap 50 (Gemma 2's attention cap)"), (torch.linspace(-300, 300, 61), 50.0)),
        (
            N_("a (2, 4, 6, 6) tensor of large logits, cap 30 (Gemma 2's final cap)"),
            (torch.randn(2, 4, 6, 6, generator=g) * 80, 30.0),
        ),
        (N_("cap 5 on logits of scale 10"), (torch.randn(8, generator=g) * 10, 5.0)),
    ]
    return [Case(name, args, _softcap_ref(*args)) for name, args in specs]


SOFTCAP_CHECK = FunctionCheck(
    name="softcap",
    make_cases=_softcap_cases,
    tolerance=1e-4,
    hint=N_("cap * tanh(s / cap): divide by the cap inside tanh, multiply by it outside."),
    mistakes={
        N_(
            "your output matches cap * tanh(s), without dividing s by the cap inside: small logits must pass "
            "almost unchanged (tanh(s / cap) ≈ s / cap)."
        ): lambda s, cap: cap * torch.tanh(s.double()),
        N_(
            "your output matches tanh(s / cap), without multiplying by the cap: the result must lie in (-cap, cap), "
            "not (-1, 1)."
        ): lambda s, cap: torch.tanh(s.double() / cap),
        N_(
            "your output matches a hard clip to [-cap, cap]. Softcapping is smooth: cap * tanh(s / cap), whose slope "
            "never drops to exactly 0."
        ): lambda s, cap: s.double().clamp(-cap, cap),
    },
    reference=_softcap_ref,
    forbidden=Forbidden(
        calls=("course_utils.attention.softcap",),
        hint=N_("write cap * tanh(s / cap) with torch.tanh."),
        why="course_utils.attention.softcap is this task's answer.",
        allowed=BASIC,
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
        (N_("uniform rows over 8 keys (entropy ln 8)"), torch.full((2, 8), 1 / 8)),
        (N_("one-hot rows (entropy 0, contains exact zeros)"), torch.eye(5)),
        (N_("causal attention weights (2, 3, 6, 6) with zeros above the diagonal"), attention),
        (N_("random rows, softmax of logits of scale 3 (4 x 4)"), (torch.randn(4, 4, generator=g) * 3).softmax(-1)),
    ]
    return [Case(name, (p,), _entropy_ref(p)) for name, p in specs]


def _xlogy_sum(p, dim):
    p = p.double()
    return -torch.special.xlogy(p, p).sum(dim)


ENTROPY_CHECK = FunctionCheck(
    name="attention_entropy",
    make_cases=_entropy_cases,
    tolerance=1e-4,
    hint=N_("-(p * log p).sum(dim=-1), natural log, with 0 * log 0 counted as 0."),
    mistakes={
        N_(
            "your output matches the entropy in bits (log2). Use the natural log (torch.log): the course measures "
            "entropy in nats, ln n for uniform attention over n keys."
        ): lambda p: -torch.special.xlogy(p.double(), p.double()).sum(-1) / math.log(2),
        (
            N_("your output matches sum(p log p) without the minus sign: entropy is -sum(p log p), never negative.")
        ): lambda p: torch.special.xlogy(p.double(), p.double()).sum(-1),
        N_(
            "your output matches the mean over keys instead of the sum: entropy sums -p log p over the keys."
        ): lambda p: -torch.special.xlogy(p.double(), p.double()).mean(-1),
        N_(
            "your output matches a sum over the wrong dimension (the queries, dim -2): each row of attention "
            "weights, the last dim, is one distribution."
        ): lambda p: _xlogy_sum(p, -2) if p.dim() >= 2 else _xlogy_sum(p, -1),
    },
    reference=_entropy_ref,
    nan_hint=N_(
        "NaN appears where a weight is exactly 0 (one-hot rows, masked keys): 0 * log 0 is "
        "0 * -inf = NaN in floating point, but counts as 0 in the entropy. Use "
        "torch.special.xlogy(p, p), or clamp p before the log: p * torch.log(p.clamp_min(1e-30))."
    ),
    forbidden=Forbidden(
        calls=("course_utils.attention.attention_entropy", "torch.distributions.Categorical"),
        hint=N_("sum -p * log p over the last dim yourself; torch.special.xlogy(p, p) counts 0 * log 0 as 0."),
        why="course_utils.attention.attention_entropy is this task's answer, and Categorical(probs=p).entropy() "
        "computes it too (the distribution has no other use in this task).",
        allowed=BASIC,
    ),
)


def check_attention_entropy(fn, seed: int = 0) -> CheckReport:
    """Check a learner's attention_entropy(probs): the entropy in nats of each row of the last dim."""
    return ENTROPY_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# the sweep, and where the baseline breaks
# ----------------------------------------------------------------------------------------------------
MINI_LRS = (0.03, 0.05, 0.1, 0.3)
MINI_STEPS = 100
MINI_VARIANTS = ("baseline", "qk_norm")


def check_mini_sweep(fn):
    """Run the learner's run_mini_sweep(), check the sweep it returns, print a verdict; return the result or None.

    Expected: a stability_sweep result with the variants baseline and qk_norm at the learning rates
    MINI_LRS, in which the baseline's largest attention logit at the highest one is at least 100x QK-Norm's.
    """
    name = "mini_sweep"
    call = f'stability_sweep({list(MINI_LRS)}, variants={MINI_VARIANTS}, preset="quick", steps={MINI_STEPS})'
    try:
        result = fn()
    except NotImplementedError:
        show_verdict(CheckReport(name, "not-implemented").text())
        return None
    except (Exception, SystemExit) as exc:
        show_verdict(
            _("❌ {name}: raised {exception}").format(name=name, exception=shown(describe_exception(exc)))
            + "\n   "
            + _("Hint: call stability_sweep(...) and return its result.")
        )
        return None
    if not isinstance(result, SweepResult):
        show_verdict(
            _("❌ {name}: returned {type}, expected the result of stability_sweep(...)").format(
                name=name, type=type(result).__name__
            )
            + "\n   "
            + _("Hint: return {call}.").format(call=call)
        )
        return None
    try:
        return _judge_mini_sweep(name, result, call)
    except Exception as exc:  # a SweepResult built or changed by hand: records that cannot be read, a logit of 0
        show_verdict(
            _("❌ {name}: the sweep's records could not be judged ({type})").format(name=name, type=type(exc).__name__)
            + "\n   "
            + _("Hint: return {call} unchanged.").format(call=call)
        )
        return None


def _judge_mini_sweep(name: str, result, call: str):
    """Print the verdict on a SweepResult; return it when it passes, else None."""
    problems = []
    if sorted(result.variants) != sorted(MINI_VARIANTS):
        problems.append(
            _("variants {got}, expected {expected}").format(got=result.variants, expected=list(MINI_VARIANTS))
        )
    if len(result.lrs) != len(MINI_LRS) or not all(math.isclose(a, b) for a, b in zip(result.lrs, MINI_LRS)):
        problems.append(_("learning rates {got}, expected {expected}").format(got=result.lrs, expected=list(MINI_LRS)))
    if problems:
        show_verdict(f"❌ {name}: " + "; ".join(problems) + "\n   " + _("Hint: return {call}.").format(call=call))
        return None
    top = max(MINI_LRS)
    ratio = result.get("baseline", top).max_attn_logit / result.get("qk_norm", top).max_attn_logit
    if not ratio >= 100:
        show_verdict(
            _(
                "❌ {name}: at lr {lr:g} the baseline's largest logit is only {ratio:.1f}x QK-Norm's (expected >= 100x)"
            ).format(name=name, lr=top, ratio=ratio)
            + "\n   "
            + _("Hint: use the quick preset with at least {steps} steps, so that the logits have time to grow.").format(
                steps=MINI_STEPS
            )
        )
        return None
    show_verdict(
        _(
            "✅ {name}: {runs} runs; at lr {lr:g} the baseline's largest attention logit is more than 100x QK-Norm's"
        ).format(name=name, runs=len(result), lr=top)
    )
    return result


def reference_failure_threshold(lrs, final_losses, initial_loss, best_loss):
    """The smallest learning rate whose run failed, by the sweep's definitions (course_utils.records):

    diverged  the final loss is not finite (the sweep records inf for a run whose training loss became NaN or
              inf), or not below the untrained loss initial_loss;
    degraded  the final loss is more than DEGRADED_MARGIN (0.5) nats above best_loss, the sweep's best.
    """
    lrs = torch.as_tensor(lrs, dtype=torch.float64)
    losses = torch.as_tensor(final_losses, dtype=torch.float64)
    diverged = ~torch.isfinite(losses) | ~(losses < initial_loss)
    degraded = losses > best_loss + DEGRADED_MARGIN
    failed = diverged | degraded
    if not bool(failed.any()):
        raise ValueError("no run failed: this grid has no failure threshold")
    return lrs[failed].min()


def _failed_mask(lrs, losses, initial_loss, best_loss, *, degraded="best", count_degraded=True, skip_inf=False):
    """Which runs fail, with the known mistakes switched in (float64 tensors)."""
    losses = torch.as_tensor(losses, dtype=torch.float64)
    diverged = ~torch.isfinite(losses) | ~(losses < initial_loss)
    if skip_inf:  # only the finite runs are looked at
        diverged = diverged & torch.isfinite(losses)
    if not count_degraded:
        return diverged
    reference = best_loss
    if degraded == "own":  # the variant's own best run instead of the sweep's best
        finite = losses[torch.isfinite(losses)]
        reference = float(finite.min()) if finite.numel() else best_loss
    degraded_runs = losses > reference + DEGRADED_MARGIN
    return diverged | (degraded_runs & torch.isfinite(losses) if skip_inf else degraded_runs)


def _threshold_mistake(pick="smallest_failing", **switches):
    def wrong(lrs, final_losses, initial_loss, best_loss):
        lrs = torch.as_tensor(lrs, dtype=torch.float64)
        failed = _failed_mask(lrs, final_losses, initial_loss, best_loss, **switches)
        if pick == "smallest_failing":
            return lrs[failed].min()
        if pick == "largest_failing":
            return lrs[failed].max()
        if pick == "largest_surviving":
            return lrs[~failed].max()
        if pick == "first_in_given_order":
            return lrs[int(torch.nonzero(failed)[0])]
        if pick == "tail_start":  # the first learning rate above which every run fails
            order = torch.argsort(lrs)
            survived = ~failed[order]
            last_ok = int(torch.nonzero(survived)[-1]) if bool(survived.any()) else -1
            return lrs[order][last_ok + 1]
        raise ValueError(pick)

    return wrong


def _threshold_cases(g: torch.Generator) -> list:
    def u(lo, hi):
        return lo + (hi - lo) * float(torch.rand((), generator=g, dtype=torch.float64))

    def grid(n):  # increasing learning rates, about 2x to 3.5x apart, from about 1e-3
        lr, lrs = 10 ** u(-3.0, -2.5), []
        for _step in range(n):
            lrs.append(lr)
            lr *= u(2.0, 3.5)
        return lrs

    def case(name, pattern, order=None):
        best = u(2.0, 2.4)
        l0 = best + u(1.8, 2.3)
        loss = {
            "best": lambda: best,  # the best run of the sweep
            "ok": lambda: best + u(0.0, 0.35),  # within the margin of the best
            "ok+": lambda: best + u(0.28, 0.35),  # within the margin, near its edge
            "deg": lambda: best + u(0.7, 1.2),  # degraded: finite, below l0, far above the best
            "near": lambda: best + u(0.6, 0.72),  # degraded, by a little
            "far": lambda: best + u(1.4, 1.7),  # degraded, by a lot (still below l0)
            "inf": lambda: math.inf,
            "l0": lambda: l0 + u(0.0, 3.0),  # finite, but no better than the untrained model
        }
        lrs, losses = grid(len(pattern)), [loss[p]() for p in pattern]
        if order is not None:  # the runs listed in another order than by learning rate
            lrs, losses = [lrs[i] for i in order], [losses[i] for i in order]
        args = (torch.tensor(lrs, dtype=torch.float64), torch.tensor(losses, dtype=torch.float64), l0, best)
        return Case(name, args, reference_failure_threshold(*args))

    return [
        case(N_("two runs train, one degrades, two diverge (inf)"), ["best", "ok", "deg", "inf", "inf"]),
        case(N_("the first failure ends no better than the untrained model"), ["ok", "best", "l0", "deg", "inf"]),
        case(N_("the first failure diverged (its loss is inf)"), ["best", "ok", "inf", "deg", "l0"]),
        case(
            N_("the grid in no particular order"), ["ok", "best", "ok", "deg", "deg", "inf"], order=[4, 0, 5, 1, 3, 2]
        ),
        case(N_("this variant's best run is 0.3 nats above the sweep's best"), ["ok+", "near", "far", "inf"]),
        case(N_("a failure, then a run that trains at a higher learning rate"), ["best", "deg", "ok", "deg", "inf"]),
        case(N_("two learning rates"), ["best", "l0"]),
    ]


FAILURE_THRESHOLD_CHECK = FunctionCheck(
    name="failure_threshold",
    make_cases=_threshold_cases,
    tolerance=1e-6,
    hint=N_(
        "a run failed when its loss is not finite, or not below initial_loss (diverged), or more than 0.5 above "
        "best_loss (degraded); return the smallest learning rate among the failed runs, e.g. lrs[failed].min()."
    ),
    mistakes={
        N_(
            "your answer counts only diverged runs. A run that ends more than 0.5 nats above best_loss failed too "
            "(degraded): it trained, but lost most of what the best run learned."
        ): _threshold_mistake(count_degraded=False),
        N_(
            "your answer measures the 0.5 nats from this variant's own best run. The margin is from best_loss, the "
            "best run of the whole sweep: a variant that never gets close to it fails everywhere."
        ): _threshold_mistake(degraded="own"),
        N_(
            "your answer skips the runs whose loss is inf. Such a run diverged: it failed, and it may be the first "
            "failure."
        ): _threshold_mistake(skip_inf=True),
        N_(
            "your answer is the largest learning rate that trained, the other side of the threshold. Return the "
            "smallest learning rate whose run failed."
        ): _threshold_mistake(pick="largest_surviving"),
        N_("your answer is the largest learning rate whose run failed. Return the smallest one."): _threshold_mistake(
            pick="largest_failing"
        ),
        N_(
            "your answer is the first failed run in the order the grid is given. The grid need not be sorted: take "
            "the smallest learning rate among the failed runs."
        ): _threshold_mistake(pick="first_in_given_order"),
        N_(
            "your answer is where the failures stop coming back (every run above it failed). The threshold is the "
            "smallest learning rate whose run failed, even when a run at a higher learning rate trained again."
        ): (_threshold_mistake(pick="tail_start")),
    },
    reference=reference_failure_threshold,
    nan_hint=N_(
        "your threshold is NaN or inf: an inf loss got into a sum or a product. Decide for each run whether "
        "it failed, then take the smallest learning rate among the failed runs."
    ),
    forbidden=Forbidden(
        calls=("course_utils.records.SweepResult",),
        hint=N_(
            "decide for each run whether it diverged or degraded with comparisons of your own, as the task describes."
        ),
        why="SweepResult classifies the runs itself (its statuses are the verdicts this task asks you to compute).",
    ),
)


def check_failure_threshold(fn, seed: int = 0) -> CheckReport:
    """Check a learner's failure_threshold(lrs, final_losses, initial_loss, best_loss) on made-up sweeps."""
    return FAILURE_THRESHOLD_CHECK(fn, seed)


def sweep_arguments(sweep, variant: str = "baseline") -> tuple:
    """(lrs, final_losses, initial_loss, best_loss) of one variant's runs in a SweepResult, as failure_threshold
    takes them: float64 tensors by increasing learning rate, the variant's untrained loss, the sweep's best."""
    runs = sweep.of(variant)
    lrs = torch.tensor([r.lr for r in runs], dtype=torch.float64)
    losses = torch.tensor([r.final_loss for r in runs], dtype=torch.float64)
    best = min(r.final_loss for r in sweep if math.isfinite(r.final_loss))
    return lrs, losses, runs[0].initial_loss, best


def check_threshold_on_sweep(fn, sweep):
    """Apply a learner's failure_threshold to the baseline's runs of a sweep, compare its answer with the sweep's
    own verdicts (the measured threshold), print the verdict and QK-Norm's verdicts at the same learning rates.
    Returns the threshold, or None when there is none or the answer is wrong; never raises."""
    name = _("failure_threshold on your sweep")
    if sweep is None:
        show_verdict(_("⏳ {name}: run the sweep of task 4a first.").format(name=name))
        return None
    try:
        runs = sweep.of("baseline")
        failed = [r.lr for r in runs if not r.survived]
        if not runs or not failed:
            show_verdict(
                _("ℹ️ {name}: the baseline trained at every learning rate of this sweep: no threshold to find.").format(
                    name=name
                )
            )
            return None
        measured = min(failed)
        args = sweep_arguments(sweep)
    except Exception as exc:  # a sweep built or changed by hand
        show_verdict(
            _("❌ {name}: the sweep's records could not be read ({type}); run task 4a's sweep again.").format(
                name=name, type=type(exc).__name__
            )
        )
        return None
    try:
        out = fn(*args)
        got = out.item() if isinstance(out, torch.Tensor) and out.numel() == 1 else out
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            show_verdict(
                _("❌ {name}: returned {type}, expected a number (one learning rate)").format(
                    name=name, type=type(out).__name__
                )
            )
            return None
        got = float(got)
    except NotImplementedError:
        show_verdict(CheckReport(name, "not-implemented").text())
        return None
    except (Exception, SystemExit) as exc:
        show_verdict(
            _("❌ {name}: raised {exception}").format(name=name, exception=shown(describe_exception(exc)))
            + "\n   "
            + _("Hint: {hint}").format(hint=shown(FAILURE_THRESHOLD_CHECK.hint))
        )
        return None
    if not math.isclose(got, measured, rel_tol=1e-6):
        show_verdict(
            _(
                "❌ {name}: your function says {got:g}, but the sweep's verdicts say the baseline first fails at lr "
                "{measured:g}"
            ).format(name=name, got=got, measured=measured)
            + "\n   "
            + _("Hint: compare your rule with the runs the sweep's table marks ✗.")
        )
        return None
    lines = [
        _("✅ {name}: the baseline first fails at lr {lr:g}, as the sweep's verdicts say").format(name=name, lr=got)
    ]
    others = [f"{r.lr:g} {shown(STATUS_MARK.get(r.status, r.status))}" for r in sweep.of("qk_norm") if r.lr >= measured]
    if others:
        lines.append(
            "   " + _("QK-Norm at the same learning rates and above: {runs}").format(runs=_(", ").join(others))
        )
    show_verdict("\n".join(lines))  # one output: the verdict and what it shows of QK-Norm
    return got


# ----------------------------------------------------------------------------------------------------
# the question, the registry
# ----------------------------------------------------------------------------------------------------
CURVE_QUESTION = MultipleChoice(
    id="ex05.curve",
    prompt=N_("Look at the max-logit curves of your sweep. What do they show?"),
    choices={
        "a": N_(
            "Both variants' largest logits grow at about the same rate; QK-Norm changes only how fast the loss falls."
        ),
        "b": N_(
            "At high learning rates only the baseline's logit explodes; QK-Norm's grows as far as its gains let it."
        ),
        "c": N_(
            "With QK-Norm the largest logit stays exactly at √d_head = 4, from the first training step to the last one."
        ),
        "d": N_(
            "The largest logits shrink during training, once the warmup is over and the learning rate stops rising."
        ),
    },
    answer="b",
    explanation=N_(
        "without the norm the logit multiplies the growth of W_q, W_k and the gain of the norm before "
        "attention; with it, |s| <= sqrt(d_head) * max|g_q| * max|g_k|. The gains are not slow (at lr 0.3 one Adam "
        "step can move a gain of 1 by 30 %, and in chapter 05's sweep they grew several-fold), but the logit can "
        "never pass the bound they set."
    ),
    wrong_hints={
        "a": N_(
            "read the log axis: at the high learning rates the baseline's curves end orders of magnitude above "
            "QK-Norm's, whatever the loss did."
        ),
        "c": N_(
            "sqrt(d_head) is the bound for *unit* gains; the gains are learned, so QK-Norm's logits do grow, "
            "as far as the gains allow (look at the blue curves)."
        ),
        "d": N_(
            "warmup only lowers the learning rate during the first steps; it makes no logit shrink, and the curves "
            "rise."
        ),
    },
)

EXERCISE = Exercise(
    "ex05_qk_norm",
    graded=[
        Graded("qk_norm_attention", "qk_norm_attention", 4),
        Graded("softcap", "softcap", 1),
        Graded("attention_entropy", "attention_entropy", 2),
        Graded("failure_threshold", "failure_threshold", 2),
        Graded("ex05.curve", "answer_max_logit_curve", 1),
    ],
    checks=[QK_NORM_ATTENTION_CHECK, SOFTCAP_CHECK, ENTROPY_CHECK, FAILURE_THRESHOLD_CHECK],
    questions=[CURVE_QUESTION],
)
