"""The training loop shared by chapters 04 and 05: AdamW, linear warmup, optional mixed precision, probes.

    history = train(model, corpus, TrainConfig(steps=200, lr=3e-3, warmup=30), label="pre-LN")

records the loss of every step, and, every `record_every` steps, the largest attention logit and the
mean attention entropy of each layer. A run whose loss stops being finite is stopped and marked
`diverged`; its later losses are never printed (a diverged number means nothing).

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

from .i18n import _
from .model import lm_loss

__all__ = [
    "TrainConfig",
    "History",
    "ProgressBar",
    "lr_at",
    "amp_dtype",
    "precision",
    "autocast",
    "z_loss_term",
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
    betas: tuple = (0.9, 0.95)
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
    losses: list = field(default_factory=list)  # one per step, while finite
    lrs: list = field(default_factory=list)
    probe_steps: list = field(default_factory=list)
    max_logit: list = field(default_factory=list)  # per probe step: max over layers and heads
    entropy: list = field(default_factory=list)  # per probe step: mean over layers and heads (nats)
    diverged: bool = False
    diverged_at: int | None = None

    @property
    def final_loss(self) -> float:
        return math.inf if self.diverged or not self.losses else self.losses[-1]


class ProgressBar:
    """A deterministic text progress bar: `label [#####-----] 100/200`, redrawn in place."""

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


def train(
    model, corpus, cfg: TrainConfig, label: str = "", device=None, progress: bool = True, callback=None
) -> History:
    """Train `model` on `corpus` for cfg.steps steps; returns its History.

    callback(step, model, loss), if given, runs after each backward pass and before the optimizer
    step (gradients are available there, e.g. for per-layer gradient norms).

    The recorded loss is always the cross-entropy; with cfg.z_loss > 0 the optimized loss adds
    cfg.z_loss * z_loss_term(logits). With cfg.qk_norm_from = f, every attention layer's q/k norms are
    bypassed (`qk_norm_on = False`) until step int(f * steps), then switched on with their gains at 1.
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    # fp16 (a CUDA GPU without bf16): the loss is scaled up before the backward pass and the gradients back down
    scaler = torch.amp.GradScaler(device.type) if cfg.amp and amp_dtype(device) is torch.float16 else None
    generator = torch.Generator().manual_seed(cfg.seed)
    history = History(label)
    bar = ProgressBar(cfg.steps, label) if progress else None
    layers = model.attention_layers() if hasattr(model, "attention_layers") else []
    switch_step = None if cfg.qk_norm_from is None else int(cfg.qk_norm_from * cfg.steps)
    if switch_step is not None and not any(getattr(layer, "qk_norm", None) for layer in layers):
        raise ValueError("TrainConfig.qk_norm_from needs a model with QK-Norm layers to switch on")
    for step in range(cfg.steps):
        if switch_step is not None:
            for layer in layers:
                layer.qk_norm_on = step >= switch_step
        lr = lr_at(step, cfg)
        for group in opt.param_groups:
            group["lr"] = lr
        probe = bool(cfg.record_every) and (step % cfg.record_every == 0 or step == cfg.steps - 1)
        for layer in layers:
            layer.record = probe
        x, y = corpus.batch("train", cfg.batch_size, cfg.block_size, generator)
        x, y = x.to(device), y.to(device)
        with autocast(device, cfg.amp):
            logits = model(x)
            loss = lm_loss(logits, y)
            if cfg.z_loss:
                loss_ce, loss = loss, loss + cfg.z_loss * z_loss_term(logits)
        value = (loss_ce if cfg.z_loss else loss).item()
        if probe and layers:
            history.probe_steps.append(step)
            history.max_logit.append(max(float(layer.stats["max_logit"].max()) for layer in layers))
            history.entropy.append(sum(float(layer.stats["entropy"].mean()) for layer in layers) / len(layers))
        if not math.isfinite(value) or (cfg.z_loss and not math.isfinite(loss.item())):
            history.diverged, history.diverged_at = True, step
            break
        history.losses.append(value)
        history.lrs.append(lr)
        opt.zero_grad(set_to_none=True)
        if scaler is None:
            loss.backward()
        else:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)  # the callback and the clipping see the true gradients
        if callback is not None:
            callback(step, model, loss)
        if cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        if scaler is None:
            opt.step()
        else:
            scaler.step(opt)  # skipped when a gradient is inf or NaN; the scale is then lowered
            scaler.update()
        if bar:
            bar.update()
    for layer in layers:
        layer.record = False
    if bar:
        bar.close(_("diverged") if history.diverged else _("done"))
    return history


def z_loss_term(logits: torch.Tensor) -> torch.Tensor:
    """mean(log(Z)^2) with log Z = logsumexp over the vocabulary: 0 when the softmax's normalizer Z is 1.

    Cross-entropy does not care about a constant added to all logits of a position; this term does, and pulls
    log Z towards 0, so the logits cannot drift upwards together (PaLM, arXiv 2204.02311; OLMo's train.py).
    """
    return logits.float().logsumexp(dim=-1).pow(2).mean()


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
