"""Chapter 03's check questions (BatchNorm vs LayerNorm, chapters/03_batchnorm_vs_layernorm.ipynb).

The notebook shows them with `show_quiz("ch03")`; the Japanese texts are in the `questions` catalog.
"""

from ..checks.questions import MultipleChoice
from ..i18n import N_

QUESTIONS = [
    MultipleChoice(
        "ch03.axes",
        N_(
            "A layer's activations have shape (N = 8 sequences, T = 16 tokens, D = 64 features). How many separate "
            "means does BatchNorm compute, and from how many values each?"
        ),
        {
            "a": N_("128 means, each from 64 values"),
            "b": N_("512 means, each from 16 values"),
            "c": N_("64 means, each from 128 values"),
            "d": N_("8 means, each from 1,024 values"),
        },
        "c",
        N_(
            "BatchNorm keeps one statistic per feature (64 of them) and averages it over every sequence and every "
            "token: 8 × 16 = 128 values, the slab."
        ),
        {
            "a": N_(
                "That is LayerNorm (or RMSNorm): one statistic per token, 8 × 16 = 128 of them, each over that "
                "token's 64 features."
            ),
            "b": N_(
                "That is InstanceNorm: one statistic per (sequence, feature) over the 16 tokens of one sequence; "
                "BatchNorm also averages across the sequences."
            ),
            "d": N_(
                "That is one statistic per sequence over all its tokens and features, what nn.LayerNorm((16, 64)) "
                "computes; BatchNorm keeps the features apart."
            ),
        },
    ),
    MultipleChoice(
        "ch03.padding",
        N_(
            "Sentences of 3, 6 and 5 tokens are zero-padded to 8 and stacked into one batch. For a feature whose "
            "mean over the real tokens is 2.0, what mean does BatchNorm compute?"
        ),
        {
            "a": N_("2.0: the zeros add nothing to the sum"),
            "b": N_("about 1.17, that is 2.0 × 14/24"),
            "c": N_("about 0.83, that is 2.0 × 10/24"),
            "d": N_("about 3.43, that is 2.0 divided by 14/24"),
        },
        "b",
        N_(
            "14 real tokens sit in 3 × 8 = 24 positions: the zeros add nothing to the sum but count in the divisor, "
            "so the mean is scaled by the real fraction 14/24."
        ),
        {
            "a": N_(
                "The zeros add nothing to the sum, but BatchNorm still divides by all 24 positions, so the mean "
                "shrinks."
            ),
            "c": N_(
                "10/24 is the padding's share of the positions; the mean keeps the real tokens' share, 14/24, of "
                "its value."
            ),
            "d": N_("Zeros cannot make the mean of positive numbers larger: they dilute it, so the factor is below 1."),
        },
    ),
    MultipleChoice(
        "ch03.batch2",
        N_(
            "In training mode, BatchNorm gets a batch of two samples. Feature 0 holds 3.0 in one and 103.0 in the "
            "other. What does it output for feature 0 (ignore ε)?"
        ),
        {"a": N_("−50 and +50"), "b": N_("−0.71 and +0.71"), "c": N_("−0.5 and +0.5"), "d": N_("−1 and +1")},
        "d",
        N_(
            "the two values minus their mean are −50 and +50, and their biased standard deviation is 50: the output "
            "is −1 and +1, whatever the two (different) values are."
        ),
        {
            "a": N_(
                "That is only the centring step; BatchNorm also divides by the standard deviation of the two "
                "values, 50."
            ),
            "b": N_(
                "That divides by the unbiased standard deviation (about 70.7); the normalization uses the biased "
                "one, 50. Only the running variance is unbiased."
            ),
            "c": N_(
                "That divides by the range of the two values (100); BatchNorm divides by their standard "
                "deviation, which for two values is half the range."
            ),
        },
    ),
    MultipleChoice(
        "ch03.running_var",
        N_(
            "A BatchNorm layer starts with running_var = 1.0 and momentum 0.1. After one training batch of 16 "
            "samples in which a feature's biased variance is 3.0, what is that feature's running_var?"
        ),
        {
            "a": N_("about 1.22 (0.9 × 1.0 + 0.1 × 3.2)"),
            "b": N_("about 1.20 (0.9 × 1.0 + 0.1 × 3.0)"),
            "c": N_("about 2.98 (0.1 × 1.0 + 0.9 × 3.2 = 0.10 + 2.88)"),
            "d": N_("3.2, replaced by the batch's unbiased variance"),
        },
        "a",
        N_(
            "the running variance takes in the batch's unbiased variance, 3.0 × 16/15 = 3.2, with weight 0.1 (the "
            "momentum): 0.9 × 1.0 + 0.1 × 3.2 = 1.22."
        ),
        {
            "b": N_(
                "That stores the biased variance; the running variance estimates the data's variance, so it uses "
                "the unbiased 3.0 × 16/15 = 3.2."
            ),
            "c": N_(
                "That gives the new batch weight 0.9; PyTorch's momentum 0.1 is the weight of the new batch, and "
                "the old value keeps 0.9."
            ),
            "d": N_(
                "The running variance is an average over many batches: one batch moves it by momentum × (new − "
                "old), not all the way."
            ),
        },
    ),
    MultipleChoice(
        "ch03.generation",
        N_(
            "A GPT-style model was trained with BatchNorm in training mode. It now generates text for one user in "
            "evaluation mode, with its running statistics. Which statement is true?"
        ),
        {
            "a": N_("Like in training: running statistics are averages of the batch statistics it saw"),
            "b": N_("It cannot start: evaluation mode also needs two values per feature to normalize"),
            "c": N_("Nothing leaks, but positions are normalized unlike in training, where later tokens counted"),
            "d": N_("Later tokens still leak: the running statistics were accumulated from whole training sequences"),
        },
        "c",
        N_(
            "running statistics are fixed numbers, so position t no longer depends on later tokens; but in training "
            "each position was normalized with statistics that included the tokens after it, and the chapter "
            "measured the cost: a loss above log 16 when generating."
        ),
        {
            "a": N_(
                "An average over batches is not any one batch: training normalized each batch with its own "
                "statistics (section 4's gap), and those included the very tokens the model was predicting."
            ),
            "b": N_(
                "Evaluation mode uses the stored statistics and needs no batch: the chapter ran it on one sample. "
                "It is training mode that cannot normalize one value per feature."
            ),
            "d": N_(
                "The running statistics are fixed while generating: they summarize past training batches, not "
                "the tokens that follow in this text, so nothing about its future reaches position t."
            ),
        },
    ),
    MultipleChoice(
        "ch03.leak",
        N_(
            "On uniformly random tokens, with a fresh batch every step, a causal model with BatchNorm reaches a "
            "training loss below log(vocabulary size). What explains it?"
        ),
        {
            "a": N_("It memorized the training batches, as any model does when it trains long enough"),
            "b": N_("Its running statistics carry information about one batch into the next step"),
            "c": N_("BatchNorm allows a larger learning rate, so it gets closer to the best loss"),
            "d": N_("Position t reads later tokens of its batch through the batch's statistics"),
        },
        "d",
        N_(
            "on random tokens no honest predictor beats log(vocabulary size) on average. BatchNorm's mean and variance "
            "at position t include the tokens after t, the ones it must predict, so the model can read the answer "
            "from them."
        ),
        {
            "a": N_(
                "Every step draws a fresh batch, so there is nothing to memorize: a memorizing model would still "
                "score log(vocabulary size) on new tokens."
            ),
            "b": N_(
                "In training mode the forward pass uses only the current batch's statistics; the running "
                "statistics are updated but not used until evaluation mode."
            ),
            "c": N_(
                "A better optimizer can only approach the best achievable loss; on random tokens that is "
                "log(vocabulary size), and beating it takes information about the tokens themselves."
            ),
        },
    ),
]
