"""Chapter 02's check questions (RMSNorm by hand, chapters/02_rmsnorm_by_hand.ipynb).

The notebook shows them with `show_quiz("ch02")`; the Japanese texts are in the `questions` catalog.
"""

from ..checks.questions import MultipleChoice
from ..i18n import N_

QUESTIONS = [
    MultipleChoice(
        "ch02.invariance",
        N_("Which of these inputs does RMSNorm (no gain, ε ignored) map to the same output as x = [4, 6, 2, 8]?"),
        {
            "a": N_("[14, 16, 12, 18], x shifted by 10"),
            "b": N_("[−1, 1, −3, 3], x minus its mean"),
            "c": N_("[2, 3, 1, 4], x divided by 2"),
            "d": N_("[−4, −6, −2, −8], x times −1"),
        },
        "c",
        N_(
            "x / 2 has half the RMS of x, so x / RMS(x) does not change: RMSNorm ignores any positive scale factor. "
            "It does not ignore a shift, a centring or a sign flip."
        ),
        {
            "a": N_(
                "RMSNorm does not subtract the mean: adding 10 raises the RMS and pulls every output toward 1 "
                "(the chapter's table: [0.923, 1.055, 0.791, 1.187] instead of [0.730, 1.095, 0.365, 1.461])."
            ),
            "b": N_(
                "RMSNorm of the centred x is LayerNorm(x), [−0.447, 0.447, −1.342, 1.342], not RMSNorm(x): the "
                "mean is part of what RMSNorm keeps."
            ),
            "d": N_(
                "RMSNorm divides by a positive RMS, so it keeps signs: −x comes out as −RMSNorm(x). Only positive "
                "scale factors cancel."
            ),
        },
    ),
    MultipleChoice(
        "ch02.identity",
        N_(
            "You have a fast RMSNorm kernel and need LayerNorm without β, with the same gain and ε. What do you feed "
            "the kernel, or do to its output?"
        ),
        {
            "a": N_("feed it x − mean(x), the centred token"),
            "b": N_("feed it x / std(x), the token scaled to variance 1"),
            "c": N_("feed it x, then subtract mean(x) from its output"),
            "d": N_("feed it x − mean(x), then divide the output by std(x)"),
        },
        "a",
        N_(
            "after centring, the mean square is the variance, so dividing by the RMS is dividing by the standard "
            "deviation: RMSNorm(x − μ) = LN(x), nothing more to do."
        ),
        {
            "b": N_(
                "RMSNorm ignores scale, so RMSNorm(x / std(x)) = RMSNorm(x): the mean is still in, and centring "
                "is the one step LayerNorm has and RMSNorm lacks."
            ),
            "c": N_(
                "the mean has to go before the division: RMSNorm(x) has already divided by an RMS that includes "
                "the mean, so subtracting afterwards gives neither mean 0 nor variance 1."
            ),
            "d": N_(
                "RMSNorm(x − μ) already has variance 1 (it is LN(x)); dividing again by std(x) scales it down a "
                "second time."
            ),
        },
    ),
    MultipleChoice(
        "ch02.decay",
        N_(
            "A team fine-tunes a Gemma model, whose RMSNorm gain is stored as w and used as (1 + w), with AdamW, and "
            "decays every parameter, the norms' included. What does the decay do to the norm gains?"
        ),
        {
            "a": N_("pulls each gain toward 0: the features the loss ignores fade out"),
            "b": N_("nothing: weight decay skips parameters that start at 0"),
            "c": N_("shrinks w toward 0 but leaves the gain 1 + w where training put it"),
            "d": N_("pulls each gain toward 1: the norm drifts toward no rescaling"),
        },
        "d",
        N_(
            "decay shrinks the stored w toward 0, so the gain (1 + w) moves toward 1: do nothing. A gain stored "
            "directly would be shrunk toward 0 instead (the chapter's unused features: 0.367 against 1.000)."
        ),
        {
            "a": N_(
                "that happens when the gain itself is stored (torch.nn.RMSNorm); here decay acts on w, and w → 0 "
                "means a gain of 1, not 0."
            ),
            "b": N_(
                "AdamW's decoupled decay multiplies every decayed parameter by (1 − lr·wd) each step, whatever "
                "its starting value: w = 0 stays 0, any other w shrinks toward 0."
            ),
            "c": N_(
                "the gain is 1 + w, so every change of w is a change of the gain: w shrinking toward 0 moves "
                "the gain toward 1."
            ),
        },
    ),
    MultipleChoice(
        "ch02.fp16",
        N_(
            "(Implementation notes) A float16 RMSNorm written as x / sqrt(x.pow(2).sum(-1) / 768 + eps) returns all "
            "zeros for tokens of width 768 whose RMS is about 20. Why?"
        ),
        {
            "a": N_("ε = 1e-6 rounds to 0 in float16, so it divides by 0"),
            "b": N_("the sum of the squares overflows to inf, and x / √inf = 0"),
            "c": N_("each square, about 400, is already far too large for float16"),
            "d": N_("x / RMS is below float16's smallest step, so it rounds to 0"),
        },
        "b",
        N_(
            "768 squares of about 400 add up to about 300,000, past float16's maximum 65504: the sum becomes inf, "
            "and x / √inf = 0. Compute the statistics in float32 and cast the result back."
        ),
        {
            "a": N_(
                "ε only matters for a zero or tiny vector, and dividing by 0 would give inf or NaN, not zeros; "
                "here the trouble is at the other end of the range."
            ),
            "c": N_(
                "one square of about 400 is far below 65504, and a single square overflows only for |x| > 255.9; "
                "the overflow is in their sum."
            ),
            "d": N_(
                "x / RMS is about 1 in size, which float16 represents well; it is the sum of the squares that "
                "leaves float16's range."
            ),
        },
    ),
    MultipleChoice(
        "ch02.eps",
        N_(
            "(Implementation notes) In PyTorch 2.13, F.rms_norm(x, shape) with the default eps=None and a float16 x "
            "uses ε = ..."
        ),
        {
            "a": N_("torch.finfo(torch.float16).eps ≈ 9.8e-4"),
            "b": N_("torch.finfo(torch.float32).eps ≈ 1.2e-7"),
            "c": N_("1e-5, the same default as F.layer_norm's"),
            "d": N_("0: there is no ε unless you pass one in"),
        },
        "b",
        N_(
            "ε is the machine epsilon of the computation type, and float16 is computed in float32; for float32 and "
            "float64 inputs it is their own epsilon."
        ),
        {
            "a": N_(
                "that would be float16's own epsilon, but float16 inputs are computed in float32, and eps=None "
                "follows the computation type."
            ),
            "c": N_(
                "F.layer_norm's default is 1e-5, but F.rms_norm's is None, which the chapter checked bit for bit "
                "against machine epsilons."
            ),
            "d": N_(
                "with ε = 0 a zero vector would give 0/0; eps=None means a small default, the machine epsilon of "
                "the computation type."
            ),
        },
    ),
]
