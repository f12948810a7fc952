"""Chapter 01's check questions (LayerNorm by hand, chapters/01_layernorm_by_hand.ipynb).

The notebook shows them with `show_quiz("ch01")`; the Japanese texts are in the `questions` catalog.
"""

from ..checks.questions import MultipleChoice
from ..i18n import N_

QUESTIONS = [
    MultipleChoice(
        "ch01.axis",
        N_(
            "An activation tensor of shape (8, 128, 768) (batch, tokens, features) goes through nn.LayerNorm(768). "
            "How many means does the layer compute?"
        ),
        {
            "a": N_("768: one per feature, over the batch and the tokens"),
            "b": N_("8: one per sequence, over its tokens and features"),
            "c": N_("1,024: one per token, over its 768 features"),
            "d": N_("128: one per position, over the batch and features"),
        },
        "c",
        N_(
            "nn.LayerNorm(768) normalizes the last dimension, of size 768: every (sequence, token) pair gets its own "
            "mean and variance, 8 × 128 = 1,024 of each, and nothing is averaged over tokens or over the batch."
        ),
        {
            "a": N_(
                "Statistics per feature, pooled over samples, are BatchNorm's (chapter 03); LayerNorm's "
                "statistics belong to one token and never look at other tokens."
            ),
            "b": N_(
                "That would be nn.LayerNorm((128, 768)), which pools a whole sequence; the 768 in "
                "nn.LayerNorm(768) names only the size of the last dimension."
            ),
            "d": N_(
                "Pooling one position across the batch would make a token's output depend on other "
                "sequences; LayerNorm normalizes each token with its own 768 features only."
            ),
        },
    ),
    MultipleChoice(
        "ch01.eps",
        N_(
            "A row's features differ only by noise: its variance is 1e-10, far below ε = 1e-5. What does "
            "LayerNorm, with ε inside the square root, do with that row?"
        ),
        {
            "a": N_("It scales the noise up to variance 1, like every other row"),
            "b": N_("It multiplies the deviations by about 1/√ε ≈ 316: they stay small"),
            "c": N_("It returns NaN, because the variance is smaller than ε"),
            "d": N_("It divides the deviations by ε itself, so the noise grows 100,000-fold"),
        },
        "b",
        N_(
            "√(σ² + ε) ≥ √ε, so the gain 1/√(σ² + ε) never exceeds 1/√ε ≈ 316: a row of noise comes out small "
            "instead of as large as a real signal. The same ε keeps 0/0 away on a constant row, and, inside the root, "
            "keeps the gradient finite there (ε added to σ gives NaN gradients)."
        ),
        {
            "a": N_(
                "That is LayerNorm without ε (the gain 1/σ has no ceiling); with ε the gain stops near "
                "1/√ε ≈ 316, so noise is not blown up to the size of a signal."
            ),
            "c": N_(
                "σ² + ε is at least ε > 0, so the square root and the division are always defined; no "
                "variance, however small, makes the output NaN."
            ),
            "d": N_(
                "ε is added to the variance under the square root, not used as the divisor: the gain is "
                "1/√(σ² + ε), which is about 1/√ε here, not 1/ε."
            ),
        },
    ),
    MultipleChoice(
        "ch01.undo",
        N_(
            "A LayerNorm's γ and β are set to the standard deviation and the mean of the token x = [4, 6, 2, 8] "
            "(√5 and 5 for every feature). Which tokens does this layer return unchanged?"
        ),
        {
            "a": N_("every token: with γ = σ and β = μ the layer is the identity"),
            "b": N_("only x itself; any other token comes out changed, even [8, 2, 6, 4]"),
            "c": N_("x and every multiple of x, such as 10·x, since scale is removed"),
            "d": N_("every token with mean 5 and std √5, such as x or [8, 2, 6, 4]"),
        },
        "d",
        N_(
            "the layer computes √5 · (t − μ_t)/σ_t + 5, which equals t exactly when t's own mean is 5 and its own "
            "std is √5. A reordering of x has the same mean and std, so it comes back; 10·x comes out as x. "
            "γ and β are per feature and shared, while μ and σ belong to each token."
        ),
        {
            "a": N_(
                "μ and σ are recomputed for each token while γ and β are fixed: 10·x normalizes to the same "
                "x̂ as x and comes out as x, not as 10·x."
            ),
            "b": N_(
                "[8, 2, 6, 4] has mean 5 and std √5 like x: it normalizes with the same statistics, and "
                "γ = √5, β = 5 undo exactly those, so it comes back unchanged."
            ),
            "c": N_(
                "10·x normalizes to the same x̂ as x, and γ, β then map that x̂ to x: the token 10·x comes "
                "out as x, its size lost."
            ),
        },
    ),
    MultipleChoice(
        "ch01.sqrtdk",
        N_(
            "During training, q and k in an attention layer grow 3× larger. By about how much does the standard "
            "deviation of the scores q·k/√d_k grow?"
        ),
        {
            "a": N_("about 9×: √d_k is fixed while q·k grows with both"),
            "b": N_("about 3×: the scores grow in step with q and with k"),
            "c": N_("not at all: dividing by √d_k normalizes them"),
            "d": N_("about 1.7× (√3): the square root takes out one factor"),
        },
        "a",
        N_(
            "√d_k depends on the width only, not on the data, and q·k is a product of two vectors that each grew "
            "3×, so the scores grow 9× (the chapter saw about 100× for inputs 10× larger). A normalization would "
            "measure the data and adapt; QK-Norm (chapter 05) does that for q and k."
        ),
        {
            "b": N_(
                "q·k multiplies q by k, and each grew 3×: the product grows 3 × 3 = 9 times, and √d_k "
                "does not change with the data."
            ),
            "c": N_(
                "√d_k keeps the scores near unit variance only when q and k have unit-variance entries; it "
                "is a constant and cannot react when they grow."
            ),
            "d": N_(
                "√d_k is the root of the width d_k, a constant; it does not take a root of the scores, "
                "which grow as the product of the two growths, 9×."
            ),
        },
    ),
]
