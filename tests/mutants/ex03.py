"""Exercise 03 (BatchNorm): batch_norm_step(x, running_mean, running_var, training, momentum=0.1, eps=1e-5) and
masked_batch_stats(x, mask)."""

import torch


# ----------------------------------------------------------------------------------------------------
# batch_norm_step: (y, new running_mean, new running_var)
# ----------------------------------------------------------------------------------------------------
def batch_norm_flattened(x, running_mean, running_var, training, momentum=0.1, eps=1e-5):
    """Correct: flatten to (n, D), sums divided by n, rsqrt, and torch.lerp for the running statistics."""
    if not training:
        return (x - running_mean) * torch.rsqrt(running_var + eps), running_mean.clone(), running_var.clone()
    rows = x.reshape(-1, x.shape[-1])
    n = rows.shape[0]
    mean = rows.sum(dim=0) / n
    squares = ((rows - mean) ** 2).sum(dim=0)
    y = (x - mean) * torch.rsqrt(squares / n + eps)
    return y, torch.lerp(running_mean, mean, momentum), torch.lerp(running_var, squares / (n - 1), momentum)


def _dims(x):
    return tuple(range(x.dim() - 1))


def _batch_stats(x):
    """mean, biased variance and n (values per feature), over every dim but the last."""
    dims = _dims(x)
    mean = x.mean(dim=dims)
    return mean, ((x - mean) ** 2).mean(dim=dims), x.numel() // x.shape[-1]


def _step(
    x,
    running_mean,
    running_var,
    training,
    momentum,
    eps,
    *,
    stored=lambda var, n: var * n / (n - 1),
    normalize_var=lambda var, n: var,
    update=lambda running, batch, m: (1 - m) * running + m * batch,
    divide=lambda centred, var, eps: centred / torch.sqrt(var + eps),
    eval_divide=None,
):
    """A BatchNorm step with pieces that a mutant replaces; the defaults are right."""
    if not training:
        y = (eval_divide or divide)(x - running_mean, running_var, eps)
        return y, running_mean.clone(), running_var.clone()
    mean, var, n = _batch_stats(x)
    y = divide(x - mean, normalize_var(var, n), eps)
    return y, update(running_mean, mean, momentum), update(running_var, stored(var, n), momentum)


def batch_norm_clamped_variance(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Keeps the variance away from 0 with max(var, eps) (clamp_min) instead of adding eps, in training and eval."""
    return _step(
        x, rm, rv, training, momentum, eps, divide=lambda centred, var, eps: centred / torch.sqrt(var.clamp_min(eps))
    )


def batch_norm_eps_squared(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Adds eps² to the variance instead of eps, in training and eval."""
    return _step(
        x, rm, rv, training, momentum, eps, divide=lambda centred, var, eps: centred / torch.sqrt(var + eps * eps)
    )


def batch_norm_biased_running_var(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Stores the biased batch variance in running_var (no n / (n - 1))."""
    return _step(x, rm, rv, training, momentum, eps, stored=lambda var, n: var)


def batch_norm_unbiased_normalization(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Normalizes the batch with the unbiased variance."""
    return _step(x, rm, rv, training, momentum, eps, normalize_var=lambda var, n: var * n / (n - 1))


def batch_norm_variances_swapped(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Normalizes with the unbiased variance and stores the biased one: the two mixed up."""
    return _step(
        x, rm, rv, training, momentum, eps, stored=lambda var, n: var, normalize_var=lambda var, n: var * n / (n - 1)
    )


def batch_norm_inverted_bessel(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Multiplies the stored variance by (n - 1) / n instead of n / (n - 1)."""
    return _step(x, rm, rv, training, momentum, eps, stored=lambda var, n: var * (n - 1) / n)


def batch_norm_bessel_over_batch_only(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Counts n as the batch size x.shape[0], also for (N, T, D) input where n is N·T."""
    return _step(x, rm, rv, training, momentum, eps, stored=lambda var, n: var * x.shape[0] / (x.shape[0] - 1))


def batch_norm_bessel_over_every_element(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Counts n as x.numel(), every element of every feature, instead of the values per feature."""
    return _step(x, rm, rv, training, momentum, eps, stored=lambda var, n: var * x.numel() / (x.numel() - 1))


def batch_norm_momentum_swapped(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Puts momentum on the old value: momentum * running + (1 - momentum) * batch."""
    return _step(x, rm, rv, training, momentum, eps, update=lambda r, b, m: m * r + (1 - m) * b)


def batch_norm_momentum_hard_coded(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Ignores the momentum argument and always uses 0.1."""
    return _step(x, rm, rv, training, momentum, eps, update=lambda r, b, m: 0.9 * r + 0.1 * b)


def batch_norm_running_stats_not_decayed(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Adds momentum * batch to the running statistics without decaying them: running + m * batch."""
    return _step(x, rm, rv, training, momentum, eps, update=lambda r, b, m: r + m * b)


def batch_norm_eps_outside_sqrt(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Adds eps outside the square root, sqrt(var) + eps, in training and in eval."""
    return _step(x, rm, rv, training, momentum, eps, divide=lambda c, var, e: c / (torch.sqrt(var) + e))


def batch_norm_eval_eps_outside_sqrt(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Right in training, but eval mode divides by sqrt(running_var) + eps."""
    return _step(x, rm, rv, training, momentum, eps, eval_divide=lambda c, var, e: c / (torch.sqrt(var) + e))


def batch_norm_hard_coded_eps(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Ignores the eps argument and always uses 1e-5."""
    return _step(x, rm, rv, training, momentum, eps, divide=lambda c, var, e: c / torch.sqrt(var + 1e-5))


def batch_norm_eval_hard_coded_eps(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Uses the eps argument in training but 1e-5 in eval mode."""
    return _step(x, rm, rv, training, momentum, eps, eval_divide=lambda c, var, e: c / torch.sqrt(var + 1e-5))


def batch_norm_over_features(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Normalizes each sample over its features (dim -1): LayerNorm, not BatchNorm."""
    if not training:
        return _step(x, rm, rv, training, momentum, eps)
    mean_f = x.mean(dim=-1, keepdim=True)
    y = (x - mean_f) / torch.sqrt(((x - mean_f) ** 2).mean(dim=-1, keepdim=True) + eps)
    return y, *_step(x, rm, rv, training, momentum, eps)[1:]


def batch_norm_dim_0_only(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Reduces over dim 0 only, also for (N, T, D) input: statistics per (token, feature)."""
    if not training:
        return _step(x, rm, rv, training, momentum, eps)
    n = x.shape[0]
    mean = x.mean(dim=0)
    var = ((x - mean) ** 2).mean(dim=0)
    y = (x - mean) / torch.sqrt(var + eps)
    return y, (1 - momentum) * rm + momentum * mean, (1 - momentum) * rv + momentum * var * n / (n - 1)


def batch_norm_eval_uses_batch_statistics(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Normalizes with the batch's own statistics in eval mode too."""
    if training:
        return _step(x, rm, rv, training, momentum, eps)
    mean, var, _ = _batch_stats(x)
    return (x - mean) / torch.sqrt(var + eps), rm.clone(), rv.clone()


def batch_norm_eval_updates_running_stats(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Updates the running statistics in eval mode as in training."""
    if training:
        return _step(x, rm, rv, training, momentum, eps)
    y = (x - rm) / torch.sqrt(rv + eps)
    return y, *_step(x, rm, rv, True, momentum, eps)[1:]


def batch_norm_train_normalizes_with_new_running_stats(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """In training, normalizes with the freshly updated running statistics instead of the batch's."""
    if not training:
        return _step(x, rm, rv, training, momentum, eps)
    _, new_mean, new_var = _step(x, rm, rv, training, momentum, eps)
    return (x - new_mean) / torch.sqrt(new_var + eps), new_mean, new_var


def batch_norm_updates_in_place(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Updates the running statistics it was given in place (mul_, add_), as torch's module does, and returns them."""
    y, new_mean, new_var = _step(x, rm, rv, training, momentum, eps)
    if training:
        rm.mul_(0).add_(new_mean)
        rv.mul_(0).add_(new_var)
    return y, rm, rv


# ----------------------------------------------------------------------------------------------------
# masked_batch_stats(x, mask) -> (mean, biased var) per feature over the real tokens
# ----------------------------------------------------------------------------------------------------
def masked_stats_sequence_by_sequence(x, mask):
    """Correct: sums accumulated one sequence at a time, then divided by the number of real tokens."""
    total = torch.zeros(x.shape[-1], dtype=x.dtype)
    count = 0
    for row, keep in zip(x, mask):
        total = total + row[keep].sum(dim=0)
        count += int(keep.sum())
    mean = total / count
    squares = torch.zeros_like(mean)
    for row, keep in zip(x, mask):
        squares = squares + ((row[keep] - mean) ** 2).sum(dim=0)
    return mean, squares / count


def _real(x, mask):
    return x[mask.bool()]


def masked_ignores_mask(x, mask):
    """Ignores the mask: statistics over every position, padding included."""
    mean = x.mean(dim=(0, 1))
    return mean, ((x - mean) ** 2).mean(dim=(0, 1))


def masked_divides_by_all_positions(x, mask):
    """Zeroes the padding but divides by all N·T positions."""
    w = mask.unsqueeze(-1).to(x.dtype)
    mean = (x * w).sum(dim=(0, 1)) / mask.numel()
    return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / mask.numel()


def masked_unbiased(x, mask):
    """Divides the variance by count - 1."""
    real = _real(x, mask)
    mean = real.mean(dim=0)
    return mean, ((real - mean) ** 2).sum(dim=0) / (real.shape[0] - 1)


def masked_assumes_zero_padding(x, mask):
    """Sums every position (assumes the padding is 0) and divides by the number of real tokens."""
    w = mask.unsqueeze(-1).to(x.dtype)
    count = mask.sum()
    mean = x.sum(dim=(0, 1)) / count
    return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / count


def masked_mean_of_sequence_means(x, mask):
    """Averages each sequence's own statistics: sequences of different lengths get equal weight."""
    means, variances = [], []
    for row, keep in zip(x, mask):
        real = row[keep]
        m = real.mean(dim=0)
        means.append(m)
        variances.append(((real - m) ** 2).mean(dim=0))
    return torch.stack(means).mean(dim=0), torch.stack(variances).mean(dim=0)


def masked_variance_over_all_positions(x, mask):
    """Masks the mean, but averages the squared deviations over every position, padding included."""
    real = _real(x, mask)
    mean = real.mean(dim=0)
    return mean, ((x - mean) ** 2).mean(dim=(0, 1))


def masked_variance_around_unmasked_mean(x, mask):
    """Squared deviations of the real tokens, but around the mean of every position."""
    real = _real(x, mask)
    return real.mean(dim=0), ((real - x.mean(dim=(0, 1))) ** 2).mean(dim=0)


def masked_returns_std(x, mask):
    """Returns the standard deviation instead of the variance."""
    real = _real(x, mask)
    mean = real.mean(dim=0)
    return mean, ((real - mean) ** 2).mean(dim=0).sqrt()


def masked_weights_without_unsqueeze(x, mask):
    """Multiplies x (N, T, D) by mask (N, T) without unsqueeze(-1): it broadcasts wrongly or raises."""
    w = mask.to(x.dtype)
    count = mask.sum()
    mean = (x * w).sum(dim=(0, 1)) / count
    return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / count


CORRECT = {"batch_norm_step": batch_norm_flattened, "masked_batch_stats": masked_stats_sequence_by_sequence}
MUTANTS = {
    "batch_norm_step": [
        batch_norm_biased_running_var,
        batch_norm_clamped_variance,
        batch_norm_eps_squared,
        batch_norm_unbiased_normalization,
        batch_norm_variances_swapped,
        batch_norm_inverted_bessel,
        batch_norm_bessel_over_batch_only,
        batch_norm_bessel_over_every_element,
        batch_norm_momentum_swapped,
        batch_norm_momentum_hard_coded,
        batch_norm_running_stats_not_decayed,
        batch_norm_eps_outside_sqrt,
        batch_norm_eval_eps_outside_sqrt,
        batch_norm_hard_coded_eps,
        batch_norm_eval_hard_coded_eps,
        batch_norm_over_features,
        batch_norm_dim_0_only,
        batch_norm_eval_uses_batch_statistics,
        batch_norm_eval_updates_running_stats,
        batch_norm_train_normalizes_with_new_running_stats,
        batch_norm_updates_in_place,
    ],
    "masked_batch_stats": [
        masked_ignores_mask,
        masked_divides_by_all_positions,
        masked_unbiased,
        masked_assumes_zero_padding,
        masked_mean_of_sequence_means,
        masked_variance_over_all_positions,
        masked_variance_around_unmasked_mean,
        masked_returns_std,
        masked_weights_without_unsqueeze,
    ],
}
