"""The experiments and figures of chapter 06: real models' norm recipes trained side by side.

The cells of the chapter compute and assert; the functions here measure one thing each, or draw one figure
from numbers a cell already has (every figure goes through `course_utils.figures.show`).

    extra_runs(jobs, preset)                      the chapter's other runs, in parallel processes
    log_z_after_training(preset, variant, lr)     train one sweep run again and read log Z of its output logits
    switch_jump(record, switch_step)              the loss jump when QK-Norm is switched on mid-training
    rms_growth(record)                            Rybakov et al.'s measure: output RMS of QKV, Proj, FC1, FC2

    sweep_panels(result)                          final loss and max attention logit against learning rate
    sensitivity_bars(sensitivity)                 LR sensitivity per recipe
    output_rms_panels(runs)                       output RMS against the step, one panel per layer kind
    switch_curves(runs, switch_step)              training loss of never / from the start / switched on late
    spread_strip(losses)                          early losses of every seed, per embedding variant

Colours follow the Okabe-Ito palette (readable with the common kinds of colour blindness); every recipe keeps
its colour in every figure of the chapter (`COLORS`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from typing import NamedTuple

import torch

from . import run_cache
from .env import torch_threads
from .experiments import build_run, cpu_run, resolve_preset
from .i18n import _
from .model import TinyGPT
from .palette import BLACK, BLUE, GREEN, ORANGE, PURPLE, SKY_BLUE, VERMILLION
from .pool import parallel_map
from .training import evaluate, train

__all__ = [
    "COLORS",
    "LAYER_KINDS",
    "Job",
    "extra_runs",
    "log_z_after_training",
    "mean_log_z",
    "switch_jump",
    "rms_growth",
    "sweep_panels",
    "sensitivity_bars",
    "output_rms_panels",
    "switch_curves",
    "spread_strip",
]

COLORS = {
    "gpt2": VERMILLION,
    "baseline": VERMILLION,
    "llama3": ORANGE,
    "qwen3": BLUE,
    "gemma2": PURPLE,
    "gemma3": GREEN,
    "olmo2": SKY_BLUE,
    "dyt": BLACK,
    "z_loss": "#999999",  # mid grey, not Okabe-Ito: the 7 that show on white are taken above
    "qk_norm": BLUE,
    "late_qk_norm": GREEN,
    "embed_l2": BLUE,
    "embed_sqrt_d": GREEN,
    "embed_unit_rms": PURPLE,
}
_DASHED = {"dyt", "z_loss", "llama3", "gemma2"}  # lines that would hide another one drawn on top
LAYER_KINDS = ("QKV", "Proj", "FC1", "FC2")


# ----------------------------------------------------------------------------------------------------
# measurements
# ----------------------------------------------------------------------------------------------------
@torch.no_grad()
def mean_log_z(model, corpus, batches: int = 4, batch_size: int = 32, block_size: int = 64, seed: int = 1234):
    """The mean over validation positions of log Z = logsumexp of the output logits (what z-loss squares)."""
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    total = 0.0
    for _batch in range(batches):
        x, _targets = corpus.batch("val", batch_size, block_size, generator)
        total += model(x).float().logsumexp(-1).mean().item()
    model.train()
    return total / batches


def log_z_after_training(preset, variant: str, lr: float, seed: int = 0, z_loss: float | None = None) -> dict:
    """Train the sweep's run (variant, lr, seed) once more, on the CPU with the preset's threads, and measure
    log Z of its output logits before and after training; z_loss overrides the variant's coefficient.

    Returns {"before", "after" (mean log Z), "final_loss", "max_attn_logit" (the largest of the run)}. The
    sweep does not keep its models, so this repeats one run: same initial weights, same batches.
    """
    spec = resolve_preset(preset) if isinstance(preset, str) else preset
    model_cfg, train_cfg, corpus = build_run(spec, variant, lr, seed)
    if z_loss is not None:
        train_cfg = replace(train_cfg, z_loss=z_loss)
    device = torch.device("cpu")
    with torch_threads(spec.threads):
        torch.manual_seed(seed)
        model = TinyGPT(model_cfg)
        kw = dict(batch_size=spec.eval_batch_size, block_size=train_cfg.block_size, batches=spec.eval_batches)
        before = mean_log_z(model, corpus, **kw)
        history = train(model, corpus, train_cfg, label=variant, device=device, progress=False)
        final = math.inf if history.diverged else evaluate(model, corpus, **kw)
        after = math.nan if history.diverged else mean_log_z(model, corpus, **kw)
    return {"before": before, "after": after, "final_loss": final, "max_attn_logit": max(history.max_logit)}


class Job(NamedTuple):
    """One extra run: kind "record" trains like the sweep and returns its RunRecord; kind "log_z" returns
    log_z_after_training's dict. steps None: the preset's."""

    kind: str
    variant: str
    lr: float
    seed: int = 0
    steps: int | None = None
    z_loss: float | None = None  # log_z jobs: override the variant's z-loss coefficient
    eval_batches: int | None = None  # override the preset's number of validation batches (short runs)


def _do(spec, job: Job):
    if job.eval_batches is not None:
        spec = replace(spec, eval_batches=job.eval_batches)
    if job.kind == "log_z":  # once per test session (course_utils/run_cache.py); "record" jobs are cached by cpu_run
        return run_cache.memo(
            "log_z", (spec, job), lambda: log_z_after_training(spec, job.variant, job.lr, job.seed, job.z_loss)
        )
    return cpu_run(spec, job.variant, job.lr, job.seed, job.steps)


def extra_runs(jobs, preset="quick", workers="auto") -> dict:
    """{job: result} for every Job, trained in `workers` processes ("auto": one per CPU core, at most 8) on the CPU.

    Every run is seeded and uses the preset's thread count, as stability_sweep's runs do, so a "record" job
    gives the same RunRecord as the sweep's run with the same variant, learning rate, seed and steps.
    """
    spec = resolve_preset(preset) if isinstance(preset, str) else preset
    jobs = [Job(*j) for j in jobs]
    # the longest runs first, so that no worker is left with a long run at the end
    order = sorted(jobs, key=lambda j: -(j.steps or spec.train["steps"]))
    results = dict(zip(order, parallel_map(_do, [(spec, job) for job in order], workers)))
    return {job: results[job] for job in jobs}


def switch_jump(record, switch_step: int, window: int = 5) -> float:
    """Mean training loss over the `window` steps from the switch on, minus the mean over the `window` steps
    before it: how much switching QK-Norm on costs at once (in nats; > 0 is a jump up)."""
    losses = record.losses
    if len(losses) < switch_step + window:
        return math.inf  # the run stopped (diverged) before the window after the switch
    after = losses[switch_step : switch_step + window]
    before = losses[switch_step - window : switch_step]
    return sum(after) / window - sum(before) / window


def rms_growth(record, reference=None) -> dict:
    """{layer kind: final output RMS of `record`, divided by that of `reference` (another run), or by its own
    first probe when no reference is given}. The RMS is the max over the blocks (RunRecord.output_rms)."""
    if reference is None:
        return {k: record.output_rms[k][-1] / record.output_rms[k][0] for k in LAYER_KINDS}
    return {k: record.output_rms[k][-1] / reference.output_rms[k][-1] for k in LAYER_KINDS}


# ----------------------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------------------
def _style(variant):
    dashed = variant in _DASHED
    return dict(color=COLORS.get(variant, "gray"), lw=2 if dashed else 2.8, ls="--" if dashed else "-")


def sweep_panels(result, titles=None, margin: float = 0.5):
    """Two panels over the sweep's learning rates: the final validation loss (a diverged run at ℓ0, failed
    runs circled, the band of ok runs shaded) and the largest |attention logit| (log scale)."""
    import matplotlib.pyplot as plt

    from .stability_plots import plot_final_losses

    titles = titles or {}
    lrs = result.lrs
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 5.2))
    l0, best = plot_final_losses(a, result, lambda v: dict(marker="o", label=titles.get(v, v), **_style(v)), margin)
    for v in result.variants:
        runs = result.of(v)
        b.plot([r.lr for r in runs], [r.max_attn_logit for r in runs], marker="o", **_style(v))
    a.set_ylim(best - 0.15, l0 + 0.2)
    a.set_ylabel(_("final validation loss (nats)"))
    a.set_title(_("Final loss (circled: the run failed)"))
    b.set_yscale("log")
    b.set_ylabel(_("largest |attention logit| (log scale)"))
    b.set_title(_("Largest attention logit, before any softcap"))
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_xticks(lrs, [f"{lr:g}" for lr in lrs])
        ax.minorticks_off()
        ax.set_xlabel(_("learning rate (log scale)"))
        ax.grid(alpha=0.3, which="both")
    fig.legend(*a.get_legend_handles_labels(), loc="lower center", ncol=5, frameon=False)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    return fig


def sensitivity_bars(sensitivity: dict, lrs, titles=None):
    """Horizontal bars: the LR sensitivity of each recipe over the grid `lrs` (chapter 05's figure, in the
    recipes' colours and names)."""
    from .stability_plots import sensitivity_bars as bars

    return bars(sensitivity, lrs, titles, COLORS, _("recipe"), figsize=(8, 0.45 * len(sensitivity) + 1.4))


def output_rms_panels(runs: dict):
    """One panel per layer kind (QKV, Proj, FC1, FC2): the RMS of that layer's output (max over blocks, log
    scale) against the step, one line per labelled run. runs: {label: (RunRecord, colour, line style)}."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(13, 4.4), sharey=True)
    for ax, kind in zip(axes, LAYER_KINDS):
        for label, (r, color, ls) in runs.items():
            ax.semilogy(
                r.probe_steps[: len(r.output_rms[kind])], r.output_rms[kind], color=color, ls=ls, lw=2.3, label=label
            )
        ax.set_title(kind)
        ax.set_xlabel(_("step"))
        ax.grid(alpha=0.3, which="major")
    axes[0].set_ylabel(_("RMS of the layer's output (log scale)"))
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=len(runs), frameon=False)
    fig.suptitle(_("Output RMS of each linear layer during training (Rybakov et al.'s measurement)"))
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def switch_curves(runs: dict, switch_step: int, smooth: int = 5):
    """Training loss against the step (a running mean over `smooth` steps) at each learning rate:
    runs: {lr: {label: (RunRecord, colour, line style)}}, drawn in that order. A dotted line marks the step
    where QK-Norm is switched on."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4.4), squeeze=False)
    for ax, (lr, by_label) in zip(axes[0], runs.items()):
        for label, (r, color, ls) in by_label.items():
            x = r.losses
            mean = [statistics.fmean(x[max(0, i - smooth + 1) : i + 1]) for i in range(len(x))]
            ax.plot(range(len(mean)), mean, color=color, ls=ls, lw=2.3, label=label)
        ax.axvline(switch_step, color="black", ls=":", lw=1.5, label=_("QK-Norm switched on"))
        ax.set_xlabel(_("step"))
        ax.set_ylabel(_("training loss (nats, mean of {smooth} steps)").format(smooth=smooth))
        ax.set_title(_("learning rate {lr:g}").format(lr=lr))
        ax.grid(alpha=0.3)
    axes[0][0].legend(loc="upper right")
    fig.tight_layout()
    return fig


def spread_strip(losses: dict, steps: int, titles=None):
    """Each seed's validation loss after `steps` steps, one column of dots per variant and one panel per
    learning rate, with the mean ± one standard deviation over the seeds as a bar beside the dots.
    losses: {lr: {variant: [loss per seed]}}."""
    import matplotlib.pyplot as plt

    titles = titles or {}
    fig, axes = plt.subplots(1, len(losses), figsize=(5.2 * len(losses), 4.3), squeeze=False)
    for ax, (lr, by_variant) in zip(axes[0], losses.items()):
        for i, (v, values) in enumerate(by_variant.items()):
            color = COLORS.get(v, "gray")
            ax.scatter([i] * len(values), values, color=color, s=45, zorder=3)
            mean, sd = statistics.fmean(values), statistics.stdev(values)
            ax.errorbar(i + 0.22, mean, yerr=sd, color=color, capsize=6, lw=2, marker="_", ms=14)
        ax.set_xticks(range(len(by_variant)), [titles.get(v, v) for v in by_variant])
        ax.set_xlim(-0.5, len(by_variant) - 0.3)
        ax.set_xlabel(_("embedding"))
        ax.set_ylabel(_("validation loss after {steps} steps (nats)").format(steps=steps))
        n = len(next(iter(by_variant.values())))
        ax.set_title(_("lr {lr:g}: {n} seeds (bar: mean ± 1 std)").format(lr=lr, n=n))
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
