"""The training loop shared by chapters 04 to 06: AdamW, linear warmup, optional mixed precision.

    history = train(model, corpus, TrainConfig(steps=200, lr=3e-3, warmup=30), label="pre-LN")

records the loss of every step, and, every `record_every` steps, the largest attention logit and the
mean attention entropy of each layer. A run whose loss stops being finite is stopped and marked
`diverged`; its later losses are never printed (a diverged number means nothing).

`train` itself is a flat loop in the manner of nanoGPT: batch, forward, loss, backward, optimizer step. What else
a run does comes in from outside, in two forms:

* a loss function, `loss_fn(logits, targets) -> (loss to optimize, cross-entropy to record)`: `cross_entropy`, or
  `ZLoss(c)`, PaLM's z-loss, which optimizes more than it records;
* callbacks (`course_utils.callbacks`), called at fixed moments of every step: the attention statistics of the
  History (`probes.AttentionLog`), chapter 06's QK-Norm switched on mid-run (`callbacks.QKNormSwitch`), the probes
  of the stability sweep, a progress bar.

A `TrainConfig` asks for its own: `loss_for(cfg)` is z-loss when `cfg.z_loss` is set, and `config_callbacks` gives
the attention log and, with `cfg.qk_norm_from`, the switch; `train` uses them unless told otherwise.

The progress bar is plain text on stderr, redrawn with carriage returns and free of timings, so a
notebook's stored output is the same on every run (nbval collapses the redraws to the final line).
"""

from __future__ import annotations

import math
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from .callbacks import Callback, QKNormSwitch
from .i18n import _
from .model import lm_loss
from .probes import AttentionLog

__all__ = [
    "TrainConfig",
    "History",
    "ProgressBar",
    "lr_at",
    "amp_dtype",
    "precision",
    "autocast",
    "cross_entropy",
    "ZLoss",
    "z_loss_term",
    "loss_for",
    "config_callbacks",
    "train",
    "evaluate",
]


@dataclass
class TrainConfig:
    steps: int = 200
    batch_size: int = 16
    block_size: int = 64
    lr: float = 3e-3
    warmup: int = 30  # linear warmup from lr/warmup to lr over this many steps; 0 = none
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 0.0
    grad_clip: float | None = None
    seed: int = 0  # the batches' order
    record_every: int = 10  # attention probes every this many steps (0 = never)
    amp: bool = False  # mixed precision: bf16 autocast, or fp16 with a gradient scaler without bf16 (amp_dtype)
    z_loss: float = 0.0  # PaLM's auxiliary loss: + z_loss * mean(logsumexp(logits)^2) (PaLM 1e-4, OLMo 2 1e-5)
    qk_norm_from: float | None = None  # QK-Norm layers stay bypassed until this fraction of the steps (chapter 06)


@dataclass
class History:
    """What one training run recorded."""

    label: str
    losses: list[float] = field(default_factory=list)  # one per step, while finite
    lrs: list[float] = field(default_factory=list)
    probe_steps: list[int] = field(default_factory=list)
    max_logit: list[float] = field(default_factory=list)  # per probe step: max over layers and heads
    entropy: list[float] = field(default_factory=list)  # per probe step: mean over layers and heads (nats)
    diverged: bool = False
    diverged_at: int | None = None

    @property
    def final_loss(self) -> float:
        return math.inf if self.diverged or not self.losses else self.losses[-1]


class ProgressBar(Callback):
    """A deterministic text progress bar: `label [#####-----] 100/200`, redrawn in place.

    Given to `train` as a callback, it moves one step forward after each backward pass; `close` it yourself."""

    def __init__(self, total: int, label: str = "", width: int = 24, every: int | None = None, stream=None):
        self.total, self.label, self.width = total, label, width
        self.every = every or max(1, total // 20)
        self.stream = stream or sys.stderr
        self.n = 0

    def _draw(self, suffix: str = "") -> None:
        filled = round(self.width * self.n / self.total) if self.total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.n}/{self.total}{suffix}")
        self.stream.flush()

    def update(self, n: int = 1) -> None:
        before = self.n
        self.n = min(self.total, self.n + n)
        if self.n // self.every != before // self.every or self.n == self.total:
            self._draw()

    def close(self, note: str = "") -> None:
        self._draw(f"  {note}" if note else "")
        self.stream.write("\n")
        self.stream.flush()

    def after_backward(self, step: int, model) -> None:
        self.update()


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to cfg.lr over cfg.warmup steps, then constant."""
    if cfg.warmup and step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    return cfg.lr


def amp_dtype(device) -> torch.dtype | None:
    """The low-precision dtype of mixed precision (TrainConfig.amp) on `device`; None: plain float32.

    bf16 where the hardware computes it: a CPU (PyTorch's CPU autocast) and a CUDA GPU of compute capability 8.0 or
    newer (A100, H100, H200, RTX 30xx and later). Older CUDA GPUs (the T4 of free notebook services, the V100) have
    no fast bf16, so they get fp16, and fp16 needs a gradient scaler: its smallest normal number is 6e-5, and small
    gradients would round to 0 without one. Apple's MPS backend trains in float32.
    """
    device = torch.device(device)
    if device.type == "cpu":
        return torch.bfloat16
    if device.type == "cuda":
        major, _minor = torch.cuda.get_device_capability(device)
        return torch.bfloat16 if major >= 8 else torch.float16
    return None


def precision(device, amp: bool) -> str:
    """What training on `device` computes in, in words: "bf16 autocast", "fp16 autocast with a gradient scaler",
    or "float32"."""
    dtype = amp_dtype(device) if amp else None
    if dtype is torch.bfloat16:
        return _("bf16 autocast")
    if dtype is torch.float16:
        return _("fp16 autocast with a gradient scaler (this GPU has no fast bf16)")
    return _("float32")


@contextmanager
def autocast(device, amp: bool):
    """The autocast context of mixed precision on `device` (amp_dtype), or a context that changes nothing.

    Under autocast, nn.RMSNorm gets bf16 activations and a float32 gain, and torch warns that it cannot use its
    fused kernel for that mix: a note on speed, not on the result, which would only puzzle a learner here."""
    device = torch.device(device)
    dtype = amp_dtype(device) if amp else None
    if dtype is None:
        yield
        return
    with warnings.catch_warnings(), torch.autocast(device.type, dtype=dtype):
        warnings.filterwarnings("ignore", message="Mismatch dtype between input and weight")
        yield


# ----------------------------------------------------------------------------------------------------
# loss functions: (logits, targets) -> (the loss to optimize, the cross-entropy to record)
# ----------------------------------------------------------------------------------------------------
def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> tuple:
    """The plain language-model loss: the cross-entropy, optimized and recorded alike."""
    loss = lm_loss(logits, targets)
    return loss, loss


def z_loss_term(logits: torch.Tensor) -> torch.Tensor:
    """mean(log(Z)^2) with log Z = logsumexp over the vocabulary: 0 when the softmax's normalizer Z is 1.

    Cross-entropy does not care about a constant added to all logits of a position; this term does, and pulls
    log Z towards 0, so the logits cannot drift upwards together (PaLM, arXiv 2204.02311; OLMo's train.py).
    """
    return logits.float().logsumexp(dim=-1).pow(2).mean()


@dataclass(frozen=True)
class ZLoss:
    """PaLM's auxiliary loss: optimizes cross-entropy + coefficient * z_loss_term(logits) (PaLM 1e-4, OLMo 2 1e-5),
    and records the cross-entropy alone, so that its runs' losses compare with everyone else's."""

    coefficient: float

    def __call__(self, logits: torch.Tensor, targets: torch.Tensor) -> tuple:
        loss = lm_loss(logits, targets)
        return loss + self.coefficient * z_loss_term(logits), loss


def loss_for(cfg: TrainConfig):
    """The loss function a TrainConfig asks for: ZLoss(cfg.z_loss) when it is set, else cross_entropy."""
    return ZLoss(cfg.z_loss) if cfg.z_loss else cross_entropy


def config_callbacks(model, cfg: TrainConfig, history: History) -> list:
    """The callbacks a TrainConfig asks for, in train()'s order: with cfg.qk_norm_from = f, every attention layer's
    q/k norms bypassed until step int(f * steps) (QKNormSwitch); the attention statistics of `history` every
    cfg.record_every steps (probes.AttentionLog)."""
    switch = [] if cfg.qk_norm_from is None else [QKNormSwitch(model, int(cfg.qk_norm_from * cfg.steps))]
    return [*switch, AttentionLog(model, history, cfg.record_every, cfg.steps)]


# ----------------------------------------------------------------------------------------------------
# the loop
# ----------------------------------------------------------------------------------------------------
def train(
    model, corpus, cfg: TrainConfig, label: str = "", device=None, progress: bool = True, loss_fn=None, callbacks=()
) -> History:
    """Train `model` on `corpus` for cfg.steps steps; returns its History.

    loss_fn(logits, targets) -> (loss to optimize, cross-entropy to record); None: loss_for(cfg). The History
    records the cross-entropy; a step whose loss (either of the two) is not finite ends the run as diverged.
    callbacks: `callbacks.Callback` objects, called after the config's own (config_callbacks), in their order.
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    # fp16 (a CUDA GPU without bf16): the loss is scaled up before the backward pass and the gradients back down;
    # for bf16 and float32 the scaler is disabled and passes everything through unchanged
    scaler = torch.amp.GradScaler(device.type, enabled=cfg.amp and amp_dtype(device) is torch.float16)
    generator = torch.Generator().manual_seed(cfg.seed)
    history = History(label)
    loss_fn = loss_fn or loss_for(cfg)
    bar = ProgressBar(cfg.steps, label) if progress else Callback()
    callbacks = [*config_callbacks(model, cfg, history), *callbacks, bar]
    for step in range(cfg.steps):
        for callback in callbacks:
            callback.before_forward(step, model)
        lr = lr_at(step, cfg)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = corpus.batch("train", cfg.batch_size, cfg.block_size, generator)
        x, y = x.to(device), y.to(device)
        with autocast(device, cfg.amp):
            loss, recorded = loss_fn(model(x), y)
        for callback in callbacks:
            callback.after_forward(step, model)
        value = recorded.item()
        if not (math.isfinite(value) and math.isfinite(loss.item())):
            history.diverged, history.diverged_at = True, step
            break
        history.losses.append(value)
        history.lrs.append(lr)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)  # the callbacks and the clipping see the true gradients
        for callback in callbacks:
            callback.after_backward(step, model)
        if cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        scaler.step(opt)  # fp16: skipped when a gradient is inf or NaN, and the scale is then lowered
        scaler.update()
    for callback in callbacks:
        callback.after_training(model)
    if isinstance(bar, ProgressBar):
        bar.close(_("diverged") if history.diverged else _("done"))
    return history


@torch.no_grad()
def evaluate(
    model,
    corpus,
    batch_size: int = 64,
    block_size: int = 64,
    batches: int = 4,
    seed: int = 1234,
    device=None,
    amp: bool = False,
) -> float:
    """Mean validation loss over a fixed set of batches (the same batches for every model)."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    total = 0.0
    for _batch in range(batches):
        x, y = corpus.batch("val", batch_size, block_size, generator)
        with autocast(device, amp):
            total += lm_loss(model(x.to(device)), y.to(device)).item()
    model.train()
    return total / batches
