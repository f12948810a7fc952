"""Chapter 05's check questions (QK-Norm attention and the training-stability lab, chapters/05_qk_norm_attention.ipynb).

The notebook shows them with `show_quiz("ch05")`; the Japanese texts are in the `questions` catalog.
"""

from ..checks.questions import MultipleChoice
from ..i18n import N_

QUESTIONS = [
    MultipleChoice(
        "ch05.bound",
        N_(
            "A model uses per-head QK-Norm with unit gains and a head dimension d_h = 64. What is the largest "
            "|attention logit| it can produce, whatever its weights and inputs?"
        ),
        {
            "a": N_("64, because each normalized vector has a length of d_h"),
            "b": N_("1, because RMSNorm gives q and k a length of 1"),
            "c": N_("8, the square root of the head dimension"),
            "d": N_("No fixed limit: it grows with the input's scale"),
        },
        "c",
        N_(
            "RMSNorm gives q̂ and k̂ an RMS of 1, so a length of √64 = 8; by Cauchy–Schwarz |q̂·k̂| ≤ 8·8 = 64, and "
            "the logit divides that by √d_h = 8. Learned gains stretch the bound to 8·max|g_q|·max|g_k|."
        ),
        {
            "a": N_(
                "an RMS of 1 over 64 channels is a length of √64 = 8, not 64; the dot product of two such "
                "vectors is at most 64, and the logit then divides it by √d_h."
            ),
            "b": N_(
                "RMSNorm makes the root-mean-square of the channels 1, not the length: a vector of 64 "
                "channels with RMS 1 has length √64 = 8."
            ),
            "d": N_(
                "that is the baseline without QK-Norm. With it, the norm divides out the input's scale and "
                "Cauchy–Schwarz caps the logit at ‖q̂‖‖k̂‖/√d_h."
            ),
        },
    ),
    MultipleChoice(
        "ch05.entropy",
        N_(
            "At a moderate learning rate, one head's mean attention entropy falls to 0.05 nats while the "
            "validation loss keeps falling. What is the best reading?"
        ),
        {
            "a": N_("The run is diverging: entropy near 0 always means collapse, so lower the learning rate."),
            "b": N_("The head attends almost uniformly to all earlier tokens, averaging what they carry."),
            "c": N_("The softmax passes back its largest gradient at this entropy, so the head learns fastest."),
            "d": N_("Each query looks at almost one key only; a copy or recall head may want exactly that."),
        },
        "d",
        N_(
            "entropy near 0 is one-hot attention. Whether it hurts depends on when it happens: a head that has "
            "learned which earlier token to copy is sharp on purpose (the chapter's baseline at lr 0.03), while a "
            "head that locks on before it has learned where to look cannot recover, because a saturated softmax "
            "passes back almost no gradient."
        ),
        {
            "a": N_(
                "sharp heads are not failure: the chapter's baseline at lr 0.03 ended with an entropy below "
                "0.25 nats and survived. Failure is going one-hot before learning where to look."
            ),
            "b": N_(
                "uniform attention over n keys has the largest entropy, ln n; an entropy near 0 is the "
                "opposite, one key taking nearly all the weight."
            ),
            "c": N_(
                "a saturated softmax has a Jacobian diag(p) − ppᵀ close to 0: it passes back almost no "
                "gradient, not the most."
            ),
        },
    ),
    MultipleChoice(
        "ch05.rope",
        N_(
            "A model applies its QK-Norm, with trained gains that differ within each rotated pair of channels, "
            "after RoPE instead of before it. What goes wrong?"
        ),
        {
            "a": N_("The logit bound is lost, because RoPE changes the length of q and k."),
            "b": N_("A pair's score then depends on both positions, not only on their offset m − n."),
            "c": N_("Nothing: RoPE keeps every vector's RMS, so the two orders give the very same model."),
            "d": N_("The model loses its position information: the norm undoes RoPE's rotation."),
        },
        "b",
        N_(
            "rotations compose, so with the gain before RoPE a score depends on m − n only. A gain G after the "
            "rotation gives R_mᵀ G² R_n, and G² commutes with the rotations only when it is equal within each "
            "pair: the chapter's four pairs at offset 3 scored differently."
        ),
        {
            "a": N_(
                "a rotation keeps every length, so RoPE changes no norm; with the norm applied last, the bound "
                "√d_h·max|g_q|·max|g_k| still holds."
            ),
            "c": N_(
                "the division by the RMS commutes with RoPE, but a per-channel gain does not unless it is equal "
                "within each rotated pair: with trained, unequal gains the two orders differ."
            ),
            "d": N_(
                "the norm rescales channels, it does not rotate them back: positions still shape the score, "
                "only no longer through their offset alone."
            ),
        },
    ),
    MultipleChoice(
        "ch05.paper",
        N_("Which statement is what Rybakov et al. 2024 (arXiv 2410.16682) report?"),
        {
            "a": N_("QKV_norm and QK_norm_cap allowed a 1.5× higher learning rate than QK_norm alone."),
            "b": N_("12 of 100 runs diverged without QK-Norm, and the final perplexity was 8.72."),
            "c": N_("Softcapping alone was the most stable method they tried on their 830M model."),
            "d": N_("QK-Norm stops helping above 1B parameters, so large models can safely leave it out."),
        },
        "a",
        N_(
            "on an 830M-parameter model, QKV_norm (which normalizes the output of the QKV projection and drops the "
            "pre-normalization before it) and QK-Norm combined with softcapping each trained without divergence at "
            "a 1.5× higher learning rate than QK-Norm alone (the paper's abstract)."
        ),
        {
            "b": N_(
                "that table comes from a blog digest of the paper. The paper's abstract reports no such count, "
                "and the course could not check its body: a number is the paper's only once it is found there."
            ),
            "c": N_(
                "both of the paper's better methods normalize: QKV_norm, and QK-Norm combined with "
                "softcapping. A cap alone hides the logits' growth from the softmax, as the chapter's softcap run "
                "showed."
            ),
            "d": N_(
                "the paper studies an 830M-parameter model and says nothing of the kind; larger models such as "
                "Qwen3's and OLMo 2's use QK-Norm."
            ),
        },
    ),
]
