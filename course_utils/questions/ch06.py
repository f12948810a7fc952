"""Chapter 06's check questions (the norm recipes of real models, chapters/06_real_model_recipes.ipynb).

The notebook shows them with `show_quiz("ch06")`; the Japanese texts are in the `questions` catalog.
"""

from ..checks.questions import MultipleChoice
from ..i18n import N_

QUESTIONS = [
    MultipleChoice(
        "ch06.gemma3",
        N_(
            "A summary says that Gemma 3 uses Pre-Norm with QK-Norm and also softcaps its logits. What does "
            "Gemma 3's reference code do?"
        ),
        {
            "a": N_("Pre-Norm, QK-Norm, and an attention softcap of 50"),
            "b": N_("Sandwich norms, per-head QK-Norm, no softcap"),
            "c": N_("Post-Norm and a softcap of 30 on the output logits"),
            "d": N_("Pre-Norm, L2-normalized embeddings, full-width QK-Norm"),
        },
        "b",
        N_(
            "Gemma 3 keeps Gemma 2's norm before and after each sub-layer and replaces both of Gemma 2's softcaps "
            "(50 on attention, 30 on the output) with per-head QK-Norm: its configs set both softcaps to None."
        ),
        {
            "a": N_(
                "the softcap of 50 is Gemma 2's, and Gemma 3 is not plain Pre-Norm: it has a second norm "
                "after each sub-layer, as its recipe card shows."
            ),
            "c": N_(
                "Gemma 3 has no softcap at all (30 on the output logits is Gemma 2's) and it does use "
                "QK-Norm, per head, before RoPE."
            ),
            "d": N_(
                "Gemma multiplies its embeddings by the constant √d and never normalizes them, and its "
                "QK-Norm is per head; full width is OLMo 2's."
            ),
        },
    ),
    MultipleChoice(
        "ch06.olmo2",
        N_("The digest calls OLMo 2 a Post-Norm model. Which formula is one sub-layer F of an OLMo 2 block?"),
        {
            "a": N_("Norm(x + F(x))"),
            "b": N_("x + F(Norm(x))"),
            "c": N_("x + Norm(F(x))"),
            "d": N_("x + Norm(F(Norm(x)))"),
        },
        "c",
        N_(
            "OLMo 2 normalizes the sub-layer's output inside the residual branch; nothing normalizes its input "
            "or the residual stream itself."
        ),
        {
            "a": N_(
                "that is textbook Post-Norm, with the norm on the residual stream after the addition; OLMo 2 "
                "never normalizes the stream."
            ),
            "b": N_(
                "that is Pre-Norm (GPT-2, Llama 3, Qwen3): the norm on the sub-layer's input. OLMo 2 feeds "
                "the raw stream to the sub-layer."
            ),
            "d": N_(
                "that is Gemma's sandwich (Peri-LN), with a norm on the input and one on the output; OLMo 2 "
                "has only the second."
            ),
        },
    ),
    MultipleChoice(
        "ch06.zloss",
        N_(
            "In the sweep, z-loss failed at the same learning rates as the GPT-2 recipe. Why can it not prevent "
            "the failure seen there?"
        ),
        {
            "a": N_("It penalizes log Z of the output softmax, not attention logits"),
            "b": N_("Its coefficient is too small: at 1e-2 it stops the attention logits growing"),
            "c": N_("It is switched on only after the warmup, when the logits have already exploded"),
            "d": N_("It normalizes queries and keys after RoPE, which undoes the normalization"),
        },
        "a",
        N_(
            "z-loss adds c·(log Z)² for the normalizer of the vocabulary softmax. The runs failed by attention-"
            "logit growth, inside another softmax that z-loss does not touch."
        ),
        {
            "b": N_(
                "the chapter trained z-loss 1e-2 at lr 0.1: log Z fell below 1.5, yet the attention logits "
                "passed 10,000 and the run failed."
            ),
            "c": N_(
                "z-loss is part of the loss from the first step on; the warmup only ramps the learning rate, "
                "and the attention logits are not its target anyway."
            ),
            "d": N_(
                "z-loss normalizes nothing inside attention; it is a penalty on the output logits. "
                "Normalizing q and k is QK-Norm's job."
            ),
        },
    ),
    MultipleChoice(
        "ch06.late",
        N_(
            "Halfway through a run at a high learning rate, the attention entropy is near 0 and the loss has "
            "stalled. From the chapter's measurement, what does switching QK-Norm on now do?"
        ),
        {
            "a": N_("The loss jumps up for good: weights learned without the norm cannot adapt"),
            "b": N_("Nothing: the weights have already fitted the large logits"),
            "c": N_("The run diverges at once, because the new gains start at 1"),
            "d": N_("Attention recovers at once, and the run ends far lower"),
        },
        "d",
        N_(
            "at lr 0.1 the entropy went from below 0.1 to above 1.5 nats within 10 steps of the switch and the run "
            "ended more than 0.5 nats below the run without QK-Norm, close to QK-Norm from the start."
        ),
        {
            "a": N_(
                "a lasting jump is not what the chapter measured: at the healthy learning rate the loss "
                "jumped and recovered, and at the failing one the switch helped."
            ),
            "b": N_(
                "the norm rescales q and k whatever the weights are, so the logits drop to the bound at once "
                "and the one-hot attention is undone."
            ),
            "c": N_(
                "at the switch the new gains are 1, so the logits are bounded by √d_h, far below where they were: "
                "the switch makes the logits smaller, and no run of the chapter diverged at it."
            ),
        },
    ),
    MultipleChoice(
        "ch06.embed",
        N_(
            "What did five seeds show about the digest's claim that e/‖e‖·√d embeddings reduce the spread of "
            "the early losses?"
        ),
        {
            "a": N_("It holds, and only a normalization can do it: a constant cannot"),
            "b": N_("It held, but constant scales (×50, √d) narrowed the spread as well"),
            "c": N_("No effect: the first norm layer already normalizes the embeddings"),
            "d": N_("It holds only for the seeds whose runs diverged"),
        },
        "b",
        N_(
            "the L2 normalization, the scale-matched constant ×50 and Gemma's constant √d all narrowed the spread of "
            "the 25-step losses: what they share is a larger embedding at the start (RMS 1, 1 or 0.16 per channel "
            "instead of 0.02)."
        ),
        {
            "a": N_(
                "the constant ×50 starts the rows at L2's size, leaves every row's length as drawn, and "
                "narrowed the spread too, so the normalization itself is not what helps."
            ),
            "c": N_(
                "the first norm only feeds the sub-layer; the residual stream carries the raw embedding, and "
                "its scale changed the early losses measurably."
            ),
            "d": N_(
                "none of the 25-step runs diverged; the spread is over five finite losses per learning rate "
                "and variant."
            ),
        },
    ),
]
