"""The training loop shared by chapters 04 and 05: AdamW, linear warmup, optional bf16 autocast, probes.

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
from contextlib import nullcontext
from dataclasses import dataclass, field

import torch

from .model import lm_loss

__all__ = ["TrainConfig", "History", "ProgressBar", "lr_at", "train", "evaluate"]


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
    amp: bool = False  # bf16 autocast (on CUDA)


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


def _autocast(device: torch.device, amp: bool):
    if amp and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return nullcontext()


def train(
    model, corpus, cfg: TrainConfig, label: str = "", device=None, progress: bool = True, callback=None
) -> History:
    """Train `model` on `corpus` for cfg.steps steps; returns its History.

    callback(step, model, loss), if given, runs after each backward pass and before the optimizer
    step (gradients are available there, e.g. for per-layer gradient norms).
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    generator = torch.Generator().manual_seed(cfg.seed)
    history = History(label)
    bar = ProgressBar(cfg.steps, label) if progress else None
    layers = model.attention_layers() if hasattr(model, "attention_layers") else []
    for step in range(cfg.steps):
        lr = lr_at(step, cfg)
        for group in opt.param_groups:
            group["lr"] = lr
        probe = bool(cfg.record_every) and (step % cfg.record_every == 0 or step == cfg.steps - 1)
        for layer in layers:
            layer.record = probe
        x, y = corpus.batch("train", cfg.batch_size, cfg.block_size, generator)
        x, y = x.to(device), y.to(device)
        with _autocast(device, cfg.amp):
            loss = lm_loss(model(x), y)
        value = loss.item()
        if probe and layers:
            history.probe_steps.append(step)
            history.max_logit.append(max(float(layer.stats["max_logit"].max()) for layer in layers))
            history.entropy.append(sum(float(layer.stats["entropy"].mean()) for layer in layers) / len(layers))
        if not math.isfinite(value):
            history.diverged, history.diverged_at = True, step
            break
        history.losses.append(value)
        history.lrs.append(lr)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if callback is not None:
            callback(step, model, loss)
        if cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if bar:
            bar.update()
    for layer in layers:
        layer.record = False
    if bar:
        bar.close("diverged" if history.diverged else "done")
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
    for _ in range(batches):
        x, y = corpus.batch("val", batch_size, block_size, generator)
        with _autocast(device, amp):
            total += lm_loss(model(x.to(device)), y.to(device)).item()
    model.train()
    return total / batches
