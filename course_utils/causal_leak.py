"""BatchNorm in a causal language model: its statistics let a token see the tokens after it.

A causal language model predicts token t + 1 from tokens 0 ... t. It is trained on every position of a
sequence at once, which is honest only if nothing lets position t read a later token. Attention has its
causal mask for that, and every other layer must work on one token at a time. LayerNorm does: its
statistics come from the features of one token. BatchNorm does not: its mean and variance for a feature
are averaged over every position of every sequence in the batch, the later positions included. So the
output at position t depends on tokens > t (and on the other sequences), and a model trained that way
can learn to read its answer out of the statistics.

    with_batch_norm(model)            TinyGPT with every LayerNorm replaced by BatchNorm over (batch, positions)
    influence_matrix(model, idx)      how much changing the token at position j moves the output at position i
    other_sequence_change(model, idx) how much sequence 0's output moves when only the other sequences change
    train_on_random_tokens(...)       a model trained on uniformly random tokens: nothing is predictable, so the
                                      honest loss cannot go below log(vocab); a loss below it is the leak
    per_position_loss(model, ...)     each position's loss in training mode, at generation (eval mode), or
                                      from the prefix alone
    draw_influence(...), draw_position_loss(...)   the chapter's two figures

Everything here is small enough to run in a few seconds on a laptop CPU, on one thread: for tensors this small,
more threads only add synchronization (on a busy 2-core machine, training took 10x longer with two threads).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from . import norms
from .env import torch_threads
from .i18n import _
from .model import GPTConfig, TinyGPT, lm_loss
from .palette import BLUE, GREEN, PURPLE, VERMILLION

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_Model = TypeVar("_Model", bound=nn.Module)

__all__ = [
    "LEAK_CONFIG",
    "with_batch_norm",
    "make_model",
    "changed_tokens",
    "influence_matrix",
    "other_sequence_change",
    "train_on_random_tokens",
    "per_position_loss",
    "draw_influence",
    "draw_position_loss",
]

# the chapter's model: 16 tokens in the vocabulary, sequences of 8, one block of width 32
LEAK_CONFIG = GPTConfig(vocab_size=16, block_size=8, n_layer=1, n_head=2, d_model=32)


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one CPU thread inside the block (env.torch_threads(1)); a decorator too."""
    with torch_threads(1):
        yield


def with_batch_norm(model: _Model) -> _Model:
    """Replace every nn.LayerNorm in `model` (in place) by course_utils.norms.BatchNorm of the same width.

    On (batch, positions, features) activations BatchNorm keeps one mean and one variance per feature,
    averaged over every sequence and every position: the slab of section 1, which includes later positions.
    """
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.LayerNorm):
                setattr(module, name, norms.BatchNorm(child.normalized_shape[0]))
    return model


def make_model(norm: str, seed: int, cfg: GPTConfig = LEAK_CONFIG) -> TinyGPT:
    """TinyGPT with "layernorm", "rmsnorm" or "batchnorm"; for one seed, the same initial weights in the attention,
    MLP, embedding and head."""
    if norm not in ("layernorm", "rmsnorm", "batchnorm"):
        raise ValueError(f"norm must be 'layernorm', 'rmsnorm' or 'batchnorm', got {norm!r}")
    torch.manual_seed(seed)
    model = TinyGPT(replace(cfg, norm="rmsnorm" if norm == "rmsnorm" else "layernorm"))
    return with_batch_norm(model) if norm == "batchnorm" else model


def changed_tokens(
    idx: torch.Tensor, positions: Iterable[int], vocab_size: int, seed: int = 0, rows: Iterable[int] | None = None
) -> torch.Tensor:
    """A copy of idx (B, T) with the tokens at `positions` (of the sequences in `rows`, default all) replaced
    by a different token each."""
    g = torch.Generator().manual_seed(seed)
    out = idx.clone()
    for b in range(idx.shape[0]) if rows is None else rows:
        for j in positions:
            shift = int(torch.randint(1, vocab_size, (1,), generator=g))  # 1 ... V-1: never the same token
            out[b, j] = (idx[b, j] + shift) % vocab_size
    return out


@one_thread()
@torch.no_grad()
def influence_matrix(model: nn.Module, idx: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """(T, T): entry [i, j] is the largest change of the logits at position i, over the batch and the vocabulary,
    when the token at position j of every sequence is replaced by another. A causal model has exact zeros above
    the diagonal (j > i). The model runs in training mode (BatchNorm uses the batch's statistics, as it does
    while it learns) and its running statistics are left as they were."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    was_training = model.training
    model.train()
    try:
        base = model(idx)
        T = idx.shape[1]
        out = torch.zeros(T, T)
        for j in range(T):
            other = model(changed_tokens(idx, [j], base.shape[-1], seed=seed + j))
            out[:, j] = (other - base).abs().amax(dim=(0, 2))
    finally:
        model.load_state_dict(state)
        model.train(was_training)
    return out


@one_thread()
@torch.no_grad()
def other_sequence_change(model: nn.Module, idx: torch.Tensor, seed: int = 0) -> float:
    """The largest change of sequence 0's logits when every token of the *other* sequences is replaced."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    was_training = model.training
    model.train()
    try:
        base = model(idx)
        rows = range(1, idx.shape[0])
        other = model(changed_tokens(idx, range(idx.shape[1]), base.shape[-1], seed=seed, rows=rows))
        return (other[0] - base[0]).abs().max().item()
    finally:
        model.load_state_dict(state)
        model.train(was_training)


def random_tokens(batch: int, T: int, vocab_size: int, generator: torch.Generator) -> torch.Tensor:
    """(batch, T + 1) tokens drawn uniformly: inputs are [:, :-1], targets [:, 1:]."""
    return torch.randint(0, vocab_size, (batch, T + 1), generator=generator)


@one_thread()
def train_on_random_tokens(
    norm: str, seed: int, steps: int = 400, batch: int = 1, lr: float = 3e-3, cfg: GPTConfig = LEAK_CONFIG
) -> TinyGPT:
    """Train a fresh model on uniformly random tokens (a new batch every step, nothing to memorize).

    No causal model can predict a uniformly random next token: its expected loss is at least log(vocab_size).
    A training loss below that bound is information from the future, read through the norm's statistics.
    """
    model = make_model(norm, seed, cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(1000 + seed)
    model.train()
    for _step in range(steps):
        idx = random_tokens(batch, cfg.block_size, cfg.vocab_size, g)
        loss = lm_loss(model(idx[:, :-1]), idx[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return model


@one_thread()
@torch.no_grad()
def per_position_loss(model: TinyGPT, mode: str, batches: int = 200, batch: int = 1, seed: int = 12345) -> torch.Tensor:
    """(T,) mean next-token loss at each position on fresh random tokens.

    mode "train":  one forward pass over the whole sequence, BatchNorm with the batch's statistics (how the
                   model was trained);
    mode "eval":   the same pass in evaluation mode (BatchNorm with its running statistics: how BatchNorm is
                   deployed);
    mode "prefix": position t computed from tokens 0 ... t only, as at generation time, in training mode
                   (BatchNorm with the statistics of the prefix it has seen so far). NaN where the model cannot
                   run: BatchNorm's training mode on a prefix of one token of one sequence.
    The running statistics are left as they were.
    """
    if mode not in ("train", "eval", "prefix"):
        raise ValueError(f"mode must be 'train', 'eval' or 'prefix', got {mode!r}")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    was_training = model.training
    cfg = model.cfg
    T, V = cfg.block_size, cfg.vocab_size
    g = torch.Generator().manual_seed(seed)
    total = torch.zeros(T)
    try:
        model.train(mode != "eval")
        for _batch in range(batches):
            idx = random_tokens(batch, T, V, g)
            x, y = idx[:, :-1], idx[:, 1:]
            if mode == "prefix":
                logits = torch.stack([_last_logits(model, x[:, : t + 1]) for t in range(T)], dim=1)
            else:
                logits = model(x)
            total += F.cross_entropy(logits.reshape(-1, V), y.reshape(-1), reduction="none").view(-1, T).mean(0)
    finally:
        model.load_state_dict(state)
        model.train(was_training)
    return total / batches


def _last_logits(model: TinyGPT, prefix: torch.Tensor) -> torch.Tensor:
    """The logits of the prefix's last position; NaN where the model cannot run on it (BatchNorm's training mode on
    one value per feature raises a ValueError)."""
    try:
        return model(prefix)[:, -1]
    except ValueError:
        return torch.full((prefix.shape[0], model.cfg.vocab_size), math.nan)


# ----------------------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------------------
def draw_influence(matrices: dict[str, torch.Tensor], title: str | None = None) -> Figure:
    """Heatmaps of influence matrices side by side ({label: (T, T) tensor}) on one colour scale. The cells above the
    diagonal (the future) are outlined and carry their value: "0" only for an exact zero."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    labels = list(matrices)
    vmax = max(m.max().item() for m in matrices.values())
    fig, axes = plt.subplots(1, len(labels), figsize=(6.2 * len(labels) + 1.2, 5.6), sharey=True)
    axes = [axes] if len(labels) == 1 else list(axes)
    for ax, label in zip(axes, labels):
        m = matrices[label]
        T = m.shape[0]
        image = ax.imshow(m.numpy(), cmap="Oranges", vmin=0, vmax=vmax, origin="upper")
        for i in range(T):
            for j in range(T):
                if j > i:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=BLUE, lw=1.2))
                    value = m[i, j].item()
                    text = "0" if value == 0 else f"{value:.2f}"  # an exact zero, or the size of the leak
                    ax.text(j, i, text, ha="center", va="center", fontsize=10, color=BLUE)
        ax.set_title(label)
        ax.set_xticks(range(T))
        ax.set_yticks(range(T))
        ax.set_xlabel(_("position j whose token changed"))
    axes[0].set_ylabel(_("output position i"))
    colorbar = fig.colorbar(image, ax=axes, shrink=0.85)
    colorbar.set_label(_("largest change of the logits at i"))
    title = title or _("Does the token at position j move the output at position i?")
    fig.suptitle(title + "\n" + _("(outlined: j > i, the future; a causal model must show exact zeros there)"))
    return fig


def draw_position_loss(curves: dict[str, Any], vocab_size: int, title: str | None = None) -> Figure:
    """Per-position loss curves ({label: (T,) tensor or (style, tensor)}) with the honest floor log(vocab)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5))
    styles: dict[int, dict[str, Any]] = {
        0: dict(color=BLUE, marker="s"),
        1: dict(color=VERMILLION, marker="o"),
        2: dict(color=GREEN, marker="^", ls="--"),
        3: dict(color=PURPLE, marker="v", ls=":"),
    }
    for k, (label, values) in enumerate(curves.items()):
        ax.plot(range(len(values)), values.tolist(), lw=2.2, ms=8, label=label, **styles[k % len(styles)])
    ax.axhline(
        math.log(vocab_size),
        color="black",
        ls="--",
        lw=1.3,
        label=_("log {vocab}: the best honest loss").format(vocab=vocab_size),
    )
    ax.set_xlabel(_("position t (predicting the token at t + 1)"))
    ax.set_ylabel(_("mean cross-entropy (nats)"))
    ax.set_title(title or _("Loss on random tokens, per position"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
