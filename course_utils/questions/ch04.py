"""Chapter 04's check questions (Pre-LN vs Post-LN, chapters/04_pre_ln_vs_post_ln.ipynb).

The notebook shows them with `show_quiz("ch04")`; the Japanese texts are in the `questions` catalog.
"""

from ..checks.questions import MultipleChoice
from ..i18n import N_

QUESTIONS = [
    MultipleChoice(
        "ch04.highway",
        N_(
            "In a Pre-LN transformer, what does the gradient of the loss with respect to an early "
            "layer's input always contain, whatever the sub-layers compute?"
        ),
        {
            "a": N_("a product of one norm Jacobian per later sub-layer, which can shrink it"),
            "b": N_("only the sum of the later sub-layers' Jacobians, which can vanish if the sub-layers saturate"),
            "c": N_("the output's gradient, passed back unchanged by the identity in every residual sum"),
            "d": N_("the output's gradient divided by the RMS of the stream at that layer"),
        },
        "c",
        N_(
            "∂x_L/∂x_l = I + Σ ∂F_k/∂x_l: the identity term carries the output's gradient to every layer, whatever "
            "the sub-layers' Jacobians are. That is the highway."
        ),
        wrong_hints={
            "a": N_(
                "that is Post-LN, where every residual sum passes through a norm; in Pre-LN the norms sit on "
                "the branches, off the identity path."
            ),
            "b": N_(
                "the sub-layers' Jacobians are added to the identity, not in place of it: if they all vanished, "
                "the identity would still carry the output's gradient."
            ),
            "d": N_(
                "the norm's 1/‖x‖ scales only the branch paths (a branch reads Norm(x_k)); the identity term "
                "passes the output's gradient back at full size."
            ),
        },
    ),
    MultipleChoice(
        "ch04.depth",
        N_(
            "You double the depth of a Pre-LN model at the same width and initialization. The gradient of "
            "its last block at initialization ..."
        ),
        {
            "a": N_("stays about the same: the identity path carries it"),
            "b": N_("shrinks by about 2, like 1/L"),
            "c": N_("grows by about √2, as the stream does"),
            "d": N_("shrinks by about √2, like 1/√L"),
        },
        "d",
        N_(
            "Pre-LN's last-block gradient scales like 1/√L (Xiong et al.), and the chapter measured it: divided by "
            "about 2 from 6 to 24 layers, which is two doublings. Post-LN's last block changed much less."
        ),
        wrong_hints={
            "a": N_(
                "the identity path carries the output's gradient down, but that gradient enters the stream "
                "through norm_f, which divides it by the final stream's size, and the stream grows with depth."
            ),
            "b": N_(
                "going from 6 to 24 layers (4×) divided it by about 2, not 4: that is 1/√L, so a doubling "
                "divides it by about √2."
            ),
            "c": N_(
                "the stream's growth is why the gradient shrinks instead: norm_f divides the incoming gradient "
                "by the final stream's size, and the last block's weight gradient follows it."
            ),
        },
    ),
    MultipleChoice(
        "ch04.normf",
        N_(
            "Why does a Pre-LN model need a final norm (ln_f / norm_f) before the output layer, and a "
            "Post-LN model not?"
        ),
        {
            "a": N_("without it, the gradient of Pre-LN's first blocks would vanish as the model gets deeper"),
            "b": N_("Pre-LN's stream is only ever added to and grows with depth; Post-LN's last block ends in a norm"),
            "c": N_(
                "Post-LN's sub-layers normalize their own outputs, so its logits start on the same scale at any depth"
            ),
            "d": N_("it cancels the growth of Pre-LN's gradient toward the output that section 2 measured"),
        },
        "b",
        N_(
            "the stream's RMS grew about like √l; without norm_f the logits' scale would grow with the depth (the "
            "logit std table above) and drift as the stream changes in training. Post-LN's stream is renormalized "
            "after every sub-layer."
        ),
        wrong_hints={
            "a": N_(
                "Pre-LN's first blocks get its largest gradients (section 2): the identity path carries "
                "the gradient down; norm_f is about the scale of the forward pass at the top."
            ),
            "c": N_(
                "Post-LN normalizes the sum x + F(x), not the sub-layer's output (that is OLMo 2's reordered "
                "norm); its last block ends in that norm, which is why it needs no final one."
            ),
            "d": N_(
                "Pre-LN's gradient falls toward the output, it does not grow; norm_f resets the size of the "
                "stream the output layer reads."
            ),
        },
    ),
    MultipleChoice(
        "ch04.init",
        N_("Post-LN's per-layer gradient grew toward the output with init std 1/√d but was flat with std 0.02. Why?"),
        {
            "a": N_("with std 0.02 the norms' gains start below 1, so each norm passes back less gradient"),
            "b": N_("the 0.02 models were measured at a lower learning rate, which flattens the profile"),
            "c": N_("small branches F(x) next to the normalized stream leave each Post-LN block close to the identity"),
            "d": N_(
                "with std 0.02 the residual stream grows faster with depth, so the norms of later blocks divide by more"
            ),
        },
        "c",
        N_(
            "the toll booths on Post-LN's highway cost something only when x + F(x) differs much from x; with small "
            "branches the norm divides by about 1 and every block passes the gradient through almost unchanged."
        ),
        wrong_hints={
            "a": N_(
                "init_std draws the linear and embedding weights only; every norm's gain starts at 1, whatever "
                "the init."
            ),
            "b": N_(
                "these profiles were measured at initialization, with one backward pass and no optimizer step: "
                "no learning rate enters."
            ),
            "d": N_(
                "Post-LN's stream is renormalized after every sub-layer: its RMS is 1 at every block, with any init."
            ),
        },
    ),
    MultipleChoice(
        "ch04.warmup",
        N_(
            "Without warmup, Post-LN's loss fell fast for a few steps, then stayed near the unigram entropy. What "
            "does a loss at that level mean?"
        ),
        {
            "a": N_("the model predicts each word from its overall frequency and ignores the context"),
            "b": N_("the run diverged: its loss is what guessing uniformly over the whole vocabulary gives"),
            "c": N_("the model has reached the best loss that 6 layers of width 64 can reach here"),
            "d": N_("the learning rate was too small for the weights to move away from their init"),
        },
        "a",
        N_(
            "the unigram entropy is the loss of the best prediction that ignores the context: each word's overall "
            "frequency. The model learned that much in a few steps and then got stuck; with warmup it went on to "
            "use the context."
        ),
        wrong_hints={
            "b": N_(
                "no run diverged (asserted), and uniform guessing costs ln of the vocabulary's size, which is "
                "more than the unigram entropy (both printed above)."
            ),
            "c": N_(
                "the same model with 60 warmup steps, and Pre-LN without warmup, ended well below the unigram "
                "entropy on every seed."
            ),
            "d": N_(
                "the loss fell fast in the first steps, and the same peak rate with warmup trained: the early "
                "steps were too large, not too small."
            ),
        },
    ),
]
