"""The hooks of the training loop: the moments of a step where other code may look at the model or change it.

`training.train` is a plain loop (batch, forward, loss, backward, optimizer step). Everything else that happens
during a run is a `Callback` handed to it, called at four moments of every step:

    before_forward(step, model)   the step has begun, nothing is computed yet: switch layers, arm probes
    after_forward(step, model)    the forward pass and the loss are done (also on the step whose loss diverged)
    after_backward(step, model)   the gradients are in `.grad`, unscaled; the optimizer has not stepped yet
    after_training(model)         once, after the last step or the diverged one: remove hooks, reset switches

Callbacks run in the order they are given; a subclass overrides only the moments it needs. The rule for where a
callback lives: one that only measures is a probe (`course_utils.probes`: `AttentionLog`, `GainLog`,
`OutputRMSLog`); one that changes the training is here (`QKNormSwitch`, chapter 06's late QK-Norm).
"""

from __future__ import annotations

__all__ = ["Callback", "QKNormSwitch"]


class Callback:
    """A hook into `training.train`'s loop; each moment does nothing unless a subclass overrides it."""

    def before_forward(self, step: int, model) -> None:
        pass

    def after_forward(self, step: int, model) -> None:
        pass

    def after_backward(self, step: int, model) -> None:
        pass

    def after_training(self, model) -> None:
        pass


class QKNormSwitch(Callback):
    """QK-Norm switched on mid-run (chapter 06, `TrainConfig.qk_norm_from`): every attention layer's q/k norms are
    bypassed (`qk_norm_on = False`) before step `at_step`, and on from it, with the gains they were built with (1).

    Until the switch the run is the baseline's, step for step: a bypassed norm computes nothing."""

    def __init__(self, model, at_step: int):
        layers = model.attention_layers() if hasattr(model, "attention_layers") else []
        if not any(getattr(layer, "qk_norm", None) for layer in layers):
            raise ValueError("TrainConfig.qk_norm_from needs a model with QK-Norm layers to switch on")
        self.layers, self.at_step = layers, at_step

    def before_forward(self, step: int, model) -> None:
        for layer in self.layers:
            layer.qk_norm_on = step >= self.at_step
