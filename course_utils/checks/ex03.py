"""Checks for exercise 03 (BatchNorm): forward pass with running statistics, masked statistics, axis quiz.

The axis quiz (task 3) shows three diagrams, drawn here by `draw_axis_quiz` from the same QUIZ_DIMS as the key,
and asks the learner to name each norm from its picture.

The learner's BatchNorm is functional: it *returns* the new running statistics instead of updating
them in place as torch's module does, so that one call is one comparable result (the grader calls the
function in the learner's kernel and compares here). "Over several steps" is covered by cases that
follow a stream of batches: step k starts from the running statistics the reference reached after
step k - 1, and `check_batch_norm_stream` threads the learner's *own* statistics through 20 steps
and compares them with `torch.nn.BatchNorm1d`.

Outputs are tuples of tensors; a known mistake is named when every part that differs from the
reference matches the same part of that mistake's output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .. import norms
from ..i18n import N_, _
from ..palette import ORANGE
from . import forbidden
from .allowed import BASIC
from .core import (
    Case,
    CaseResult,
    CheckReport,
    FunctionCheck,
    Joined,
    Message,
    compare_tensor,
    describe_exception,
    upper_bound,
)
from .forbidden import COURSE_NORMS, TORCH_NORMS, VARIANCE, Forbidden
from .questions import MultipleChoice
from .registry import Exercise, Graded
from .render import show as show_verdict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "EXERCISE",
    "FORBIDDEN",
    "BATCH_NORM_CHECK",
    "MASKED_STATS_CHECK",
    "check_batch_norm",
    "check_masked_batch_stats",
    "check_batch_norm_stream",
    "reference_batch_norm_step",
    "reference_masked_batch_stats",
    "AXIS_QUESTIONS",
    "QUIZ_DIMS",
    "QUIZ_ALT",
    "draw_axis_quiz",
]

TOLERANCE = 1e-4

FORBIDDEN = Forbidden(  # what both tasks forbid
    calls=VARIANCE
    + TORCH_NORMS
    + COURSE_NORMS
    + ("course_utils.checks.ex03.reference_batch_norm_step", "course_utils.checks.ex03.reference_masked_batch_stats"),
    hint=N_(
        "use basic tensor operations, as the exercise asks (mean, sum, sqrt, indexing, arithmetic): the biased "
        "variance is the mean of the squared deviations from the mean."
    ),
    why="the notebook: 'not torch.nn.functional.batch_norm, torch.nn.BatchNorm1d, torch.var or course_utils.norms'; "
    "torch.std and numpy's variances are torch.var by another name, torch's other norms compute BatchNorm after a "
    "transpose, and the two reference_* functions here are this exercise's answers.",
    allowed=BASIC,
)


# ----------------------------------------------------------------------------------------------------
# task 1: BatchNorm forward with running statistics
# ----------------------------------------------------------------------------------------------------
def reference_batch_norm_step(
    x: torch.Tensor,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, new running_mean, new running_var) in float64, from course_utils.norms.batch_norm."""
    rm, rv = running_mean.double().clone(), running_var.double().clone()
    y = norms.batch_norm(x.double(), rm, rv, training=training, momentum=momentum, eps=eps)
    return y, rm, rv


def _stats(x, unbiased_running=True):
    """Per-feature mean, biased variance and the variance stored in the running statistics."""
    x = x.double()
    dims = tuple(range(x.dim() - 1))
    n = x.numel() // x.shape[-1]
    mean = x.mean(dim=dims)
    var = ((x - mean) ** 2).mean(dim=dims)
    return mean, var, var * n / (n - 1) if unbiased_running else var


def _bn_variant(
    x,
    running_mean,
    running_var,
    training,
    momentum=0.1,
    eps=1e-5,
    *,
    running_unbiased=True,
    swap_momentum=False,
    eval_uses_batch=False,
    normalize_unbiased=False,
    eval_updates=False,
    over_features=False,
    eps_outside=False,
    fixed_eps=None,
):
    """BatchNorm with one deliberate mistake switched on (each keyword is a mistake)."""
    x = x.double()
    rm, rv = running_mean.double(), running_var.double()
    mean, var, stored_var = _stats(x, running_unbiased)
    e = eps if fixed_eps is None else fixed_eps

    def divide(centred, v):
        return centred / (torch.sqrt(v) + e) if eps_outside else centred / torch.sqrt(v + e)

    def update(rm, rv):
        if swap_momentum:
            return momentum * rm + (1 - momentum) * mean, momentum * rv + (1 - momentum) * stored_var
        return (1 - momentum) * rm + momentum * mean, (1 - momentum) * rv + momentum * stored_var

    if training:
        if over_features:
            mu = x.mean(dim=-1, keepdim=True)
            y = (x - mu) / torch.sqrt(((x - mu) ** 2).mean(dim=-1, keepdim=True) + eps)
        else:
            norm_var = stored_var if normalize_unbiased else var
            y = divide(x - mean, norm_var)
        rm, rv = update(rm, rv)
    else:
        if eval_uses_batch:
            y = divide(x - mean, var)
        else:
            y = divide(x - rm, rv)
        if eval_updates:
            rm, rv = update(rm, rv)
    return y, rm, rv


def _bn_cases(g: torch.Generator) -> list:
    def data(*shape, scale=2.0, offset=None):
        d = shape[-1]
        centre = torch.randn(d, generator=g) * 3 if offset is None else torch.full((d,), float(offset))
        return centre + scale * torch.rand(d, generator=g).add(0.5) * torch.randn(*shape, generator=g)

    d = 6
    specs: list[tuple[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor, bool, float, float]]] = []
    rm, rv = torch.zeros(d), torch.ones(d)
    stream_centre = torch.randn(d, generator=g) * 3
    for step in range(1, 5):  # a stream: each step starts where the reference's statistics ended
        x = stream_centre + 1.5 * torch.randn(16, d, generator=g)
        name = Message(N_("training step {step} of a 4-step stream (batches of 16)"), step=step)
        specs.append((name, (x, rm, rv, True, 0.1, 1e-5)))
        _, rm, rv = reference_batch_norm_step(x, rm, rv, True)
        rm, rv = rm.float(), rv.float()
    specs.append(
        (
            N_("eval mode after the 4 steps (uses the running statistics)"),
            (stream_centre + 1.5 * torch.randn(8, d, generator=g), rm, rv, False, 0.1, 1e-5),
        )
    )
    specs.append(
        (
            N_("eval mode on a single sample"),
            (data(1, d), torch.randn(d, generator=g), torch.rand(d, generator=g) + 0.5, False, 0.1, 1e-5),
        )
    )
    specs.append(
        (
            N_("a (4, 5, 6) batch of sequences: statistics over batch and tokens"),
            (data(4, 5, d), torch.randn(d, generator=g), torch.rand(d, generator=g) + 0.5, True, 0.1, 1e-5),
        )
    )
    specs.append(
        (N_("a batch of 2 (n - 1 = 1), momentum 0.3"), (data(2, d), torch.zeros(d), torch.ones(d), True, 0.3, 1e-5))
    )
    specs.append(
        (
            N_("large values (offset 100, scale 5)"),
            (data(32, d, scale=5.0, offset=100), torch.zeros(d), torch.ones(d), True, 0.1, 1e-5),
        )
    )
    # eps 100 to 1000 times the variance, in each mode: a wrong eps changes y by about its own size
    specs.append(
        (
            N_("training, features of variance ~1e-3 with eps = 0.01"),
            (data(16, d, scale=0.03), torch.zeros(d), torch.ones(d), True, 0.1, 1e-2),
        )
    )
    centre = torch.randn(d, generator=g)
    specs.append(
        (
            N_("eval mode, running variances ~0.01 with eps = 0.1"),
            (
                centre + 0.3 * torch.randn(8, d, generator=g),
                centre,
                0.005 + 0.01 * torch.rand(d, generator=g),
                False,
                0.1,
                1e-1,
            ),
        )
    )
    return [Case(name, args, reference_batch_norm_step(*args)) for name, args in specs]


BATCH_NORM_CHECK = FunctionCheck(
    name="batch_norm_step",
    make_cases=_bn_cases,
    tolerance=TOLERANCE,
    hint=N_(
        "training: mean and *biased* variance per feature over every dim but the last, y = (x - mean) / "
        "sqrt(var + eps), new running = (1 - momentum) * running + momentum * batch statistic, with the *unbiased* "
        "variance (times n / (n - 1)) for running_var. Eval: normalize with the running statistics and return them "
        "unchanged."
    ),
    mistakes={
        N_(
            "your running_var matches an update with the *biased* batch variance. The running variance estimates the "
            "variance of all the data, so PyTorch stores the unbiased one: multiply the batch variance by n / (n - 1), "
            "where n is the number of values per feature (N, or N·T)."
        ): lambda *a: _bn_variant(*a, running_unbiased=False),
        N_(
            "your running statistics match `running = momentum * running + (1 - momentum) * batch`: the momentum is "
            "on the wrong side. In PyTorch, `momentum` is the weight of the *new* batch: "
            "`running = (1 - momentum) * running + momentum * batch`."
        ): lambda *a: _bn_variant(*a, swap_momentum=True),
        N_(
            "your output matches normalizing over the features (dim -1): that is LayerNorm. BatchNorm computes one "
            "mean and variance per feature over every *other* dim: dim 0 for (N, D), dims (0, 1) for (N, T, D)."
        ): lambda *a: _bn_variant(*a, over_features=True),
        N_(
            "in eval mode (training=False) your output matches normalizing with the batch's own statistics. Eval mode "
            "uses running_mean and running_var instead, so one sample's output does not depend on its batch."
        ): lambda *a: _bn_variant(*a, eval_uses_batch=True),
        N_(
            "your output matches normalizing with the *unbiased* variance. The batch is normalized with its biased "
            "variance (divide by n); only the stored running variance is unbiased."
        ): lambda *a: _bn_variant(*a, normalize_unbiased=True),
        N_(
            "in eval mode your running statistics changed. Eval mode only reads them: return them unchanged."
        ): lambda *a: _bn_variant(*a, eval_updates=True),
        N_(
            "your output matches adding eps *outside* the square root, sqrt(var) + eps. BatchNorm divides by "
            "sqrt(var + eps): the batch variance in training, running_var in eval mode."
        ): lambda *a: _bn_variant(*a, eps_outside=True),
        N_(
            "your output matches eps = 1e-5 whatever eps is given: use the eps argument, in training and in eval mode."
        ): lambda *a: _bn_variant(*a, fixed_eps=1e-5),
    },
    reference=reference_batch_norm_step,
    parts=("y", "running_mean", "running_var"),
    forbidden=FORBIDDEN,
    in_place_hint=N_(
        "your function changed a tensor it was given (torch's module updates its buffers in place with "
        "mul_/add_). Here, compute new tensors and return them: "
        "`new_mean = (1 - momentum) * running_mean + momentum * mean`."
    ),
)


def check_batch_norm(fn, seed: int = 0) -> CheckReport:
    """Check `batch_norm_step(x, running_mean, running_var, training, momentum=0.1, eps=1e-5)`
    returning (y, new_running_mean, new_running_var)."""
    return BATCH_NORM_CHECK(fn, seed)


def check_batch_norm_stream(fn, steps: int = 20, seed: int = 0) -> CheckReport:
    """Thread fn's *own* running statistics through `steps` training batches and one eval batch, and compare
    every output and the final statistics with torch.nn.BatchNorm1d (affine=False) fed the same stream. Task 1's
    forbidden calls are forbidden here too: a function that makes one gets ❌ naming it, as in task 1's check."""
    name = Message(N_("batch_norm_step over {steps} steps vs torch.nn.BatchNorm1d"), steps=steps)
    static, trace = forbidden.static_hits(BATCH_NORM_CHECK, fn), forbidden.trace_for(BATCH_NORM_CHECK)

    def verdict(report: CheckReport) -> CheckReport:
        named = BATCH_NORM_CHECK.with_forbidden(report, forbidden.found(BATCH_NORM_CHECK, static, trace))
        named = BATCH_NORM_CHECK.traced(named, trace)
        named.name = name
        show_verdict(named.text())
        return named

    g = torch.Generator().manual_seed(seed)
    d = 5
    centre = torch.randn(d, generator=g) * 3
    scale = torch.rand(d, generator=g) + 0.5
    torch_bn = torch.nn.BatchNorm1d(d, momentum=0.1, affine=False).double()
    rm, rv = torch.zeros(d), torch.ones(d)
    worst, first_bad = 0.0, None
    for step in range(steps + 1):
        training = step < steps
        x = centre + scale * torch.randn(12, d, generator=g)
        try:
            with trace:  # records the forbidden calls fn really makes
                y, rm, rv = fn(x.clone(), rm.clone(), rv.clone(), training, 0.1, 1e-5)
        except NotImplementedError:
            return verdict(CheckReport(name, "not-implemented"))
        except (Exception, SystemExit) as exc:  # the learner's bug (a wrong return value included), in one line
            return verdict(
                CheckReport(
                    name,
                    "error",
                    message=Message(
                        N_("raised {exception} (at step {step})"), exception=describe_exception(exc), step=step + 1
                    ),
                    hint=N_("make task 1's check pass first."),
                )
            )
        where = N_("eval step") if not training else Message(N_("step {step}"), step=step + 1)
        torch_bn.train(training)
        with torch.no_grad():
            expected = torch_bn(x.double())
        try:
            for part, got, exp in (
                ("y", y, expected),
                ("running_mean", rm, torch_bn.get_buffer("running_mean")),
                ("running_var", rv, torch_bn.get_buffer("running_var")),
            ):
                err, note = compare_tensor(got, exp, TOLERANCE)
                worst = max(worst, err)
                if note and first_bad is None:
                    first_bad = Joined(", ", (where, Joined(": ", (part, note))))
            rm, rv = torch.as_tensor(rm).float(), torch.as_tensor(rv).float()  # the next step starts from them
        except Exception as exc:  # statistics that are not tensors (a string, an object that raises)
            worst = float("inf")
            first_bad = first_bad or Joined(
                ": ", (where, Message(N_("the output could not be compared ({type})"), type=type(exc).__name__))
            )
            break
    if first_bad is None:
        report = CheckReport(
            name,
            "passed",
            [CaseResult(name, True, worst, TOLERANCE)],
            message=Message(
                N_("{steps} training steps and one eval step match (max abs error {error}, tolerance {tol:.0e})"),
                steps=steps,
                error=upper_bound(worst),
                tol=TOLERANCE,
            ),
        )
    else:
        report = CheckReport(
            name,
            "failed",
            [CaseResult(name, False, worst, TOLERANCE, first_bad)],
            hint=N_(
                "the first difference is named above; small errors grow as the running statistics "
                "carry them from step to step."
            ),
        )
    return verdict(report)


# ----------------------------------------------------------------------------------------------------
# task 2: masked (padding-aware) batch statistics
# ----------------------------------------------------------------------------------------------------
def reference_masked_batch_stats(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-feature mean and biased variance over the positions where mask is True; x (N, T, D), mask (N, T)."""
    real = x.double()[mask.bool()]
    mean = real.mean(dim=0)
    return mean, ((real - mean) ** 2).mean(dim=0)


def _masked_wrong(x, mask, *, ignore_mask=False, divide_by_all=False, unbiased=False, unmasked_sum=False):
    x, m = x.double(), mask.bool()
    w = m.double().unsqueeze(-1)
    count = m.sum()
    if ignore_mask:
        mean = x.mean(dim=(0, 1))
        return mean, ((x - mean) ** 2).mean(dim=(0, 1))
    if divide_by_all:
        total = m.numel()
        mean = (x * w).sum(dim=(0, 1)) / total
        return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / total
    if unmasked_sum:  # assumes padding positions hold zeros
        mean = x.sum(dim=(0, 1)) / count
        return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / count
    mean = (x * w).sum(dim=(0, 1)) / count
    return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / (count - 1 if unbiased else count)


def _masked_cases(g: torch.Generator) -> list:
    def padded(lengths, pad_to, d, pad_value=0.0):
        centre = torch.randn(d, generator=g) * 3
        x = torch.full((len(lengths), pad_to, d), float(pad_value))
        mask = torch.zeros(len(lengths), pad_to, dtype=torch.bool)
        for i, length in enumerate(lengths):
            x[i, :length] = centre + torch.randn(length, d, generator=g)
            mask[i, :length] = True
        return x, mask

    specs = [
        (N_("sequences of 7, 4, 2, 5 tokens zero-padded to 8"), padded([7, 4, 2, 5], 8, 6)),
        (N_("no padding at all (equals ordinary BatchNorm statistics)"), padded([5, 5, 5], 5, 4)),
        (N_("padding filled with 7.0 instead of zeros"), padded([3, 6, 1], 6, 5, pad_value=7.0)),
        (N_("a batch where one sequence has a single token"), padded([1, 9], 12, 3)),
    ]
    return [Case(name, args, reference_masked_batch_stats(*args)) for name, args in specs]


MASKED_STATS_CHECK = FunctionCheck(
    name="masked_batch_stats",
    make_cases=_masked_cases,
    tolerance=TOLERANCE,
    hint=N_(
        "select the real tokens with the mask (`x[mask]` is (number of real tokens, D)), or weight by "
        "`mask.unsqueeze(-1)` and divide by `mask.sum()`; the variance is biased (divide by the number of real "
        "tokens)."
    ),
    mistakes={
        N_(
            "your statistics match ordinary BatchNorm over *every* position: the padding is included. Use the mask to "
            "keep only the real tokens."
        ): lambda x, m: _masked_wrong(x, m, ignore_mask=True),
        N_(
            "your statistics match dividing by all N·T positions. Padding must not count in the divisor either: divide "
            "by the number of real tokens, mask.sum()."
        ): lambda x, m: _masked_wrong(x, m, divide_by_all=True),
        N_(
            "your variance matches the *unbiased* estimate (divide by count - 1). BatchNorm normalizes with the biased "
            "variance: divide by the number of real tokens."
        ): lambda x, m: _masked_wrong(x, m, unbiased=True),
        N_(
            "your mean matches summing every position and dividing by the real count: that only works when the padding "
            "is exactly zero. Multiply by the mask (or select `x[mask]`) before summing."
        ): lambda x, m: _masked_wrong(x, m, unmasked_sum=True),
    },
    reference=reference_masked_batch_stats,
    parts=("mean", "var"),
    forbidden=FORBIDDEN,
    in_place_hint=N_(
        "work on copies; do not change the tensors you are given in place (no x.sub_(), no x[...] = ...)."
    ),
)


def check_masked_batch_stats(fn, seed: int = 0) -> CheckReport:
    """Check `masked_batch_stats(x, mask)` returning (mean, var) over the real tokens, per feature."""
    return MASKED_STATS_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# task 3: name the norm from a picture of its group, on (batch, tokens, features)
# ----------------------------------------------------------------------------------------------------
# The learner sees three diagrams (draw_axis_quiz) and no reduction dims: reading which axes the shaded group runs
# along is the task. Option (d) is a real pitfall, nn.LayerNorm((T, D)): one statistic per sample.
_NORM_CHOICES = {
    "a": N_("LayerNorm (RMSNorm reduces the same axes)"),
    "b": N_("BatchNorm (torch.nn.BatchNorm1d)"),
    "c": N_("InstanceNorm (torch.nn.InstanceNorm1d)"),
    "d": N_("LayerNorm over the last two dims, nn.LayerNorm((T, D))"),
}
QUIZ_DIMS = {"ex03.axes_a": (0, 1), "ex03.axes_b": (2,), "ex03.axes_c": (1,)}
QUIZ_SHAPE = (3, 4, 6)  # (batch, tokens, features) of the diagrams
QUIZ_INDEX = (0, 1, 2)  # the element whose group is shaded
QUIZ_ALT = N_(
    "Three diagrams of a (batch 3, tokens 4, features 6) block, each shading the elements that share one mean and "
    "variance with x[0, 1, 2]. Norm A shades feature 2 in every sample and every token. Norm B shades the six features "
    "of token 1 in sample 0. Norm C shades feature 2 in the four tokens of sample 0."
)


def draw_axis_quiz() -> Figure:
    """The three diagrams of task 3 (Norm A, B, C), drawn from QUIZ_DIMS, so that the picture and the key agree."""
    import matplotlib.pyplot as plt

    from ..diagrams import draw_norm_axes

    fig, axes = plt.subplots(1, 3, figsize=(20, 6))
    for ax, (letter, dims) in zip(axes, zip("ABC", QUIZ_DIMS.values())):
        draw_norm_axes(
            dims,
            shape=QUIZ_SHAPE,
            index=QUIZ_INDEX,
            ax=ax,
            color=ORANGE,
            title=_("Norm {letter}").format(letter=letter),
        )
    fig.tight_layout()
    return fig


AXIS_QUESTIONS = [
    MultipleChoice(
        id="ex03.axes_a",
        prompt=N_(
            "Norm A's diagram shades feature 2 in every sample and every token of a (batch, tokens, features) "
            "activation: the elements that share x[0, 1, 2]'s mean and variance. Which norm is it?"
        ),
        choices=_NORM_CHOICES,
        answer="b",
        explanation=N_(
            "the group runs along the batch and the tokens and keeps one feature: one statistic per feature, "
            "averaged over every sample and token (the slab). That is BatchNorm, dims (0, 1)."
        ),
        wrong_hints={
            "a": N_(
                "LayerNorm's group is the features of one token (a strip); here the group keeps one feature and runs "
                "along the samples and the tokens."
            ),
            "c": N_(
                "InstanceNorm keeps each sample apart: its group runs along the tokens of one sample only, and here "
                "the group spans all three samples."
            ),
            "d": N_(
                "nn.LayerNorm((T, D)) keeps each sample apart and mixes all its features; here one feature is kept "
                "and the samples are mixed."
            ),
        },
    ),
    MultipleChoice(
        id="ex03.axes_b",
        prompt=N_(
            "Norm B's diagram shades the six features of token 1 in sample 0 of a (batch, tokens, features) "
            "activation: the elements that share x[0, 1, 2]'s mean and variance. Which norm is it?"
        ),
        choices=_NORM_CHOICES,
        answer="a",
        explanation=N_(
            "the group is the features of one token of one sample (the strip): each token gets its own "
            "statistics. That is LayerNorm, dim 2, and RMSNorm reduces the same axis."
        ),
        wrong_hints={
            "b": N_(
                "BatchNorm's group keeps one feature and runs along every sample and token; here the group stays "
                "inside one token."
            ),
            "c": N_(
                "InstanceNorm's group runs along the tokens of one sample at one feature; here it runs along the "
                "features of one token."
            ),
            "d": N_(
                "LayerNorm over the last two dims would shade every token of sample 0, not just one; here only "
                "token 1 is shaded."
            ),
        },
    ),
    MultipleChoice(
        id="ex03.axes_c",
        prompt=N_(
            "Norm C's diagram shades feature 2 in the four tokens of sample 0 of a (batch, tokens, features) "
            "activation: the elements that share x[0, 1, 2]'s mean and variance. Which norm is it?"
        ),
        choices=_NORM_CHOICES,
        answer="c",
        explanation=N_(
            "the group runs along the tokens of one sample at one feature: one statistic per (sample, "
            "feature). That is InstanceNorm, dim 1 (for images: over the pixels of one image, per channel)."
        ),
        wrong_hints={
            "a": N_(
                "LayerNorm's group runs along the features of one token; here it runs along the tokens and keeps one "
                "feature."
            ),
            "b": N_(
                "BatchNorm's group would also run along the batch, feature 2 in every sample; here only sample 0 is "
                "shaded."
            ),
            "d": N_(
                "LayerNorm over (T, D) would shade every feature of sample 0's tokens; here only feature 2 is shaded."
            ),
        },
    ),
]

EXERCISE = Exercise(
    "ex03_batchnorm",
    graded=[
        Graded("batch_norm_step", "batch_norm_step", 4),
        Graded("masked_batch_stats", "masked_batch_stats", 3),
        Graded("ex03.axes_a", "answer_norm_a", 1),
        Graded("ex03.axes_b", "answer_norm_b", 1),
        Graded("ex03.axes_c", "answer_norm_c", 1),
    ],
    checks=[BATCH_NORM_CHECK, MASKED_STATS_CHECK],
    questions=AXIS_QUESTIONS,
)
