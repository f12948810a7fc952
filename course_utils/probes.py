"""Opt-in probes for TinyGPT: per-layer gradient norms, hidden-state norms, attention logit statistics.

Every probe is a context manager that attaches hooks on entry and removes them on exit, so a model
outside a `with` block is exactly the plain model: no hook, no flag checked, nothing to pay.

    with GradNormProbe(model) as grads:          # hooks on each block's parameters' gradients
        lm_loss(model(x), y).backward()
    grads.norms                                  # [‖∇ block 0‖, ‖∇ block 1‖, ...]  (L2 over its parameters)

    with HiddenNormProbe(model) as hidden:       # forward hooks on the embedding and every block
        model(x)
    hidden.norms                                 # [RMS of the embedding output, after block 1, ..., after block L]

    with AttentionProbe(model) as attn:          # sets `record = True` on every attention layer
        model(x)
    attn.max_logit, attn.entropy                 # per layer: max |q·k|/√d over heads, mean entropy (nats)

`stream_gradient_profile(model, x, y)` measures the other gradient, that of the loss with respect to the
residual stream after each block, ‖∂L/∂x_l‖ (L2 over the whole batch).

`block_grad_norms(model)` reads the same per-block gradient norms straight from `.grad` after a
backward pass (no hooks); the tests check both against torch.autograd.grad.

Probes over a whole training run are callbacks of `training.train` (`course_utils.callbacks`) instead: they
attach when made, record a series at the run's probe steps (every `TrainConfig.record_every` steps, and the
last), and detach after training.

    AttentionLog(model, history, every, steps)   # train() adds it: largest logit and mean entropy -> History
    GainLog(model)                               # per-head QK-Norm's largest gains and the bound they allow
    OutputRMSLog(model)                          # RMS of each linear layer's output (Rybakov et al. 2024)

    gains, outputs = GainLog(model), OutputRMSLog(model)
    history = train(model, corpus, cfg, callbacks=[gains, outputs])
    gains.gain_q, outputs.rms["FC2"]             # one value per probe step

The probe steps are those on which `AttentionLog` switches the attention layers' `record` on; the other two
logs read that switch, so all three series line up with `history.probe_steps`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import qk_norm_bound
from .callbacks import Callback
from .norms import gain_of

__all__ = [
    "block_grad_norms",
    "GradNormProbe",
    "HiddenNormProbe",
    "AttentionProbe",
    "AttentionLog",
    "GainLog",
    "OutputRMSLog",
    "gradient_profile",
    "stream_gradient_profile",
    "hidden_norm_profile",
]


def _blocks(model) -> list:
    return list(model.blocks)


def _select(block: nn.Module, part: str | None) -> list:
    """The parameters of `block` a probe looks at: all of them, or one sub-module's ('mlp', 'attn', 'mlp.down')."""
    module = block.get_submodule(part) if part else block
    return [p for p in module.parameters() if p.requires_grad]


def block_grad_norms(model, part: str | None = None) -> list:
    """L2 norm of the gradient of each block's parameters (or of one part, e.g. 'mlp.down'), from `.grad`."""
    norms = []
    for block in _blocks(model):
        squares = [p.grad.detach().float().pow(2).sum() for p in _select(block, part) if p.grad is not None]
        norms.append(math.sqrt(float(sum(squares))) if squares else 0.0)
    return norms


class GradNormProbe:
    """Per-block gradient norms, collected by tensor hooks while the backward pass runs.

    Each parameter's hook adds ‖grad‖² to its block's running sum the moment autograd computes that
    gradient (before it is accumulated into `.grad`), so `.norms` is this backward's gradient even if
    `.grad` already held something. Several backward passes inside one `with` add up (call `reset()`
    between them to start again).
    """

    def __init__(self, model, part: str | None = None):
        self.model, self.part = model, part
        self._handles: list = []
        self._squares: list = []

    def reset(self) -> None:
        self._squares = [0.0] * len(_blocks(self.model))

    def __enter__(self) -> GradNormProbe:
        self.reset()
        for i, block in enumerate(_blocks(self.model)):
            for p in _select(block, self.part):
                self._handles.append(p.register_hook(self._hook(i)))
        return self

    def _hook(self, i: int):
        def add(grad: torch.Tensor):
            self._squares[i] += float(grad.detach().float().pow(2).sum())

        return add

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    @property
    def norms(self) -> list:
        return [math.sqrt(s) for s in self._squares]


class HiddenNormProbe:
    """The size of the residual stream after the embedding and after each block, from forward hooks.

    `.norms[0]` is the embedding's output, `.norms[l]` the output of block l (1-based); each is the RMS
    of the hidden vectors, sqrt(mean over tokens of ‖h‖² / d), so a vector of unit-variance entries
    measures 1 whatever d is. `.final` is the RMS after the final norm, when the model has one.
    """

    def __init__(self, model):
        self.model = model
        self._handles: list = []
        self.norms: list = []
        self.final: float | None = None

    @staticmethod
    def _rms(t: torch.Tensor) -> float:
        return float(t.detach().float().pow(2).mean().sqrt())

    def __enter__(self) -> HiddenNormProbe:
        self.norms = [math.nan] * (len(_blocks(self.model)) + 1)
        self.final = None

        def record(index):
            def hook(_module, _inputs, output):
                self.norms[index] = self._rms(output)

            return hook

        self._handles.append(self.model.embed.register_forward_hook(record(0)))
        for i, block in enumerate(_blocks(self.model), start=1):
            self._handles.append(block.register_forward_hook(record(i)))
        norm_f = getattr(self.model, "norm_f", None)
        if norm_f is not None and not isinstance(norm_f, nn.Identity):

            def final(_module, _inputs, output):
                self.final = self._rms(output)

            self._handles.append(norm_f.register_forward_hook(final))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class AttentionProbe:
    """Largest attention logit and mean attention entropy of each layer, from the layers' own `record` switch.

    Inside the `with`, every attention layer takes its explicit path and fills `layer.stats` (per head);
    `.max_logit[l]` is the max over heads of layer l, `.entropy[l]` the mean over heads (nats), both read
    from the last forward pass. On exit the layers go back to the fused kernel.
    """

    def __init__(self, model):
        self.layers = model.attention_layers()
        self._before: list = []

    def __enter__(self) -> AttentionProbe:
        self._before = [layer.record for layer in self.layers]
        for layer in self.layers:
            layer.record, layer.stats = True, {}
        return self

    def __exit__(self, *exc) -> None:
        for layer, before in zip(self.layers, self._before):
            layer.record = before

    def _read(self, key: str, reduce) -> list:
        if any(key not in layer.stats for layer in self.layers):
            raise RuntimeError("no statistics yet: run a forward pass inside the `with AttentionProbe(model)` block")
        return [reduce(layer.stats[key]) for layer in self.layers]

    @property
    def max_logit(self) -> list:
        return self._read("max_logit", lambda t: float(t.max()))

    @property
    def entropy(self) -> list:
        return self._read("entropy", lambda t: float(t.mean()))


# ----------------------------------------------------------------------------------------------------
# probes over a training run: callbacks of training.train
# ----------------------------------------------------------------------------------------------------
def _attention_layers(model) -> list:
    return model.attention_layers() if hasattr(model, "attention_layers") else []


class AttentionLog(Callback):
    """The largest attention logit and the mean attention entropy at the probe steps of a run, into `history`.

    A step is a probe step every `every` steps and at the last one (`every` 0: never). Before its forward pass
    every attention layer's `record` switch goes on (the layer then takes its explicit path and fills
    `layer.stats`, as under `AttentionProbe`); after it, `history` gets the step, the max over layers of the
    largest |logit| (before any softcap) and the mean over layers of the mean entropy (nats). On the other steps
    the switch is off and the layers use the fused kernel. `training.train` adds this log to every run.
    """

    def __init__(self, model, history, every: int, steps: int):
        self.layers, self.history = _attention_layers(model), history
        self.every, self.last = every, steps - 1
        self.due = False

    def before_forward(self, step: int, model) -> None:
        self.due = bool(self.every) and (step % self.every == 0 or step == self.last)
        for layer in self.layers:
            layer.record = self.due

    def after_forward(self, step: int, model) -> None:
        if self.due and self.layers:
            self.history.probe_steps.append(step)
            self.history.max_logit.append(max(float(layer.stats["max_logit"].max()) for layer in self.layers))
            self.history.entropy.append(
                sum(float(layer.stats["entropy"].mean()) for layer in self.layers) / len(self.layers)
            )

    def after_training(self, model) -> None:
        for layer in self.layers:
            layer.record = False


class GainLog(Callback):
    """The q/k norm gains of per-head QK-Norm at a run's probe steps: `gain_q`, `gain_k` (max over layers of
    max|g|) and `bound`, the max over layers of sqrt(d_head) * max|g_q| * max|g_k| (`attention.qk_norm_bound`).

    It reads after the backward pass and before the optimizer step, so it sees the gains the step's forward pass
    used, and its bound belongs to the largest logit `AttentionLog` recorded for the same step. A model without
    per-head QK-Norm leaves the three lists empty.
    """

    def __init__(self, model):
        self.layers = [a for a in _attention_layers(model) if getattr(a, "qk_norm", None) == "head"]
        self.gain_q, self.gain_k, self.bound = [], [], []

    def after_backward(self, step: int, model) -> None:
        if not self.layers or not self.layers[0].record:  # not a probe step
            return
        gq = [float(gain_of(a.q_norm).detach().abs().max()) for a in self.layers]
        gk = [float(gain_of(a.k_norm).detach().abs().max()) for a in self.layers]
        self.gain_q.append(max(gq))
        self.gain_k.append(max(gk))
        self.bound.append(max(qk_norm_bound(a.d_head, gain_of(a.q_norm), gain_of(a.k_norm)) for a in self.layers))


class OutputRMSLog(Callback):
    """The RMS of every linear layer's output at a run's probe steps (Rybakov et al. 2024, arXiv 2410.16682):
    `rms[name]`, one value per probe step, the max over blocks, for "QKV" (the q, k and v projections together),
    "Proj" (attention's output), "FC1" and "FC2" (the MLP's two layers).

    Their measurement: in a run that is about to fail, the outputs of the QKV, Proj and FC2 layers grow step after
    step. Forward hooks, attached when the log is made, add up the outputs only while the attention layers'
    `record` switch is on (a probe step), so the other steps cost nothing; after training they are removed.
    """

    LAYERS = {
        "QKV": ("attn.q_proj", "attn.k_proj", "attn.v_proj"),
        "Proj": ("attn.o_proj",),
        "FC1": ("mlp.up",),
        "FC2": ("mlp.down",),
    }

    def __init__(self, model):
        self.rms: dict[str, list[float]] = {name: [] for name in self.LAYERS}
        self._sums: dict = {}  # (block index, name) -> [sum of squares, count] for the current step
        self._handles = []
        for i, block in enumerate(getattr(model, "blocks", [])):
            for name, paths in self.LAYERS.items():
                for path in paths:
                    hook = self._hook(block.attn, i, name)
                    self._handles.append(block.get_submodule(path).register_forward_hook(hook))

    def _hook(self, attn, i, name):
        def hook(module, inputs, out):
            if attn.record:
                acc = self._sums.setdefault((i, name), [0.0, 0])
                acc[0] += float(out.detach().float().pow(2).sum())
                acc[1] += out.numel()

        return hook

    def after_backward(self, step: int, model) -> None:  # the forward pass of this step is complete
        if not self._sums:
            return
        for name in self.LAYERS:
            per_block = [math.sqrt(s / n) for (i, nm), (s, n) in self._sums.items() if nm == name]
            self.rms[name].append(max(per_block))
        self._sums = {}

    def after_training(self, model) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


# ----------------------------------------------------------------------------------------------------
# one-call measurements at initialization (chapter 04)
# ----------------------------------------------------------------------------------------------------
def gradient_profile(model, x: torch.Tensor, y: torch.Tensor, part: str | None = None) -> list:
    """Per-block gradient norms of the language-model loss on one batch.

    The model's `.grad` is left untouched: each parameter's `.grad` is afterwards the very tensor (or None)
    it was before, with the same values, so the profile can be taken in the middle of a training step.
    """
    from .model import lm_loss

    params = list(model.parameters())
    saved = [p.grad for p in params]
    try:
        for p in params:
            p.grad = None
        with GradNormProbe(model, part) as probe:
            lm_loss(model(x), y).backward()
    finally:
        for p, grad in zip(params, saved):
            p.grad = grad
    return probe.norms


def stream_gradient_profile(model, x: torch.Tensor, y: torch.Tensor) -> list:
    """‖∂L/∂x_l‖ for the residual stream x_l after each block l (1-based), on one batch.

    Forward hooks keep each block's output; torch.autograd.grad then differentiates the loss with respect to
    those outputs only, so the parameters' `.grad` is left as it was. The hooks are removed before returning.
    """
    from .model import lm_loss

    outputs: list = []

    def keep(_module, _inputs, output):
        outputs.append(output)

    handles = [block.register_forward_hook(keep) for block in _blocks(model)]
    try:
        loss = lm_loss(model(x), y)
    finally:
        for handle in handles:
            handle.remove()
    grads = torch.autograd.grad(loss, outputs)
    return [float(g.detach().float().norm()) for g in grads]


@torch.no_grad()
def hidden_norm_profile(model, x: torch.Tensor) -> tuple:
    """(RMS of the residual stream after the embedding and each block, RMS after the final norm or None)."""
    with HiddenNormProbe(model) as probe:
        model(x)
    return probe.norms, probe.final
