"""The training-stability lab of chapters 05 and 06: one tiny GPT per (variant, learning rate), side by side.

    result = stability_sweep([1e-2, 3e-2, 0.1, 0.3], variants=("baseline", "qk_norm"), preset="quick")
    result                       # a table in Jupyter (HTML), or as text
    result.get("baseline", 0.3).max_attn_logit
    result.sensitivity()         # {variant: LR sensitivity (Wortsman et al. 2023)}

Every run starts from the same initial weights (for a given variant and seed) and sees the same batches in
the same order; only the learning rate and the attention variant differ. Each run records its loss curve,
and every `record_every` steps the largest |attention logit| (before any softcap) and the mean attention
entropy over all layers and heads; with per-head QK-Norm also the largest |gain| of the q and k norms and
the bound they allow, sqrt(d_head) * max|g_q| * max|g_k| (`course_utils.attention.qk_norm_bound`).

The variants (`VARIANTS`, each a `course_utils.recipes.Recipe`):

* ``baseline``          plain attention, s = q·k / sqrt(d_head)
* ``qk_norm``           per-head RMSNorm on q and k before RoPE (Qwen3, Gemma 3)
* ``softcap``           s -> 50 tanh(s / 50) before the softmax (Gemma 2's attention cap)
* ``qk_norm+softcap``   both

Chapter 06 adds `EXTRA_VARIANTS` (z_loss, dyt, embed_l2, embed_sqrt_d, embed_unit_rms, late_qk_norm: one change
each to the baseline) and accepts every recipe of `course_utils.recipes` (gpt2, llama3, qwen3, gemma2, gemma3,
olmo2) as a variant name. Each run also records the RMS of every linear layer's output (`RunRecord.output_rms`).

Presets (`PRESETS`): ``quick`` (CPU, about half a minute for the chapter's grid of 16 runs), ``gpu`` (a bigger
model, longer runs, bf16 autocast on CUDA), and ``auto`` (``gpu`` when `course_utils.env.pick_device()` finds
CUDA, else ``quick``).

This module says what a run is (variant, preset, learning rate, seed: `build_run`) and trains the sweep; the rest
of the lab lives where its idea does:

* `course_utils.records`: what a run leaves (`RunRecord`), the sweep's verdicts (ok, degraded, diverged: the
  stated definitions are there) and its tables (`SweepResult`), `lr_sensitivity`;
* `course_utils.training`: the loop each run goes through; `course_utils.probes`: the probes it carries
  (`GainLog`, `OutputRMSLog`, and the loop's own `AttentionLog`);
* `course_utils.pool`: the worker processes of `workers=`.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, replace

import torch

from . import run_cache
from .data import Corpus
from .display import pad
from .env import pick_device, torch_threads
from .i18n import _
from .model import GPTConfig, TinyGPT
from .pool import parallel_map, worker_count
from .probes import GainLog, OutputRMSLog
from .recipes import RECIPES, ModelSwitches, Recipe, TrainSwitches
from .records import RunRecord, SweepResult
from .training import ProgressBar, TrainConfig, evaluate, train

__all__ = [
    "VARIANTS",
    "EXTRA_VARIANTS",
    "variant_recipe",
    "PRESETS",
    "Preset",
    "resolve_preset",
    "build_run",
    "stability_sweep",
    "cpu_run",
]

VARIANTS = {
    v.name: v
    for v in (
        Recipe("baseline", "baseline", "plain attention, s = q·k / sqrt(d_head)"),
        Recipe(
            "qk_norm",
            "QK-Norm",
            "per-head RMSNorm on q and k before RoPE (Qwen3, Gemma 3)",
            ModelSwitches(qk_norm="head"),
        ),
        Recipe(
            "softcap",
            "softcap 50",
            "s -> 50 tanh(s / 50) before the softmax (Gemma 2's attention cap)",
            ModelSwitches(attn_softcap=50.0),
        ),
        Recipe(
            "qk_norm+softcap",
            "QK-Norm + softcap 50",
            "both: per-head QK-Norm and the attention softcap of 50",
            ModelSwitches(qk_norm="head", attn_softcap=50.0),
        ),
    )
}
EXTRA_VARIANTS = {  # chapter 06: one change each to the baseline
    v.name: v
    for v in (
        Recipe("z_loss", "z-loss 1e-4", "PaLM's and Wortsman et al.'s coefficient", train=TrainSwitches(z_loss=1e-4)),
        Recipe("dyt", "DyT", "Dynamic Tanh in every LayerNorm's place", ModelSwitches(norm="dyt")),
        Recipe("embed_l2", "e/‖e‖·√d", "e / |e| * sqrt(d)", ModelSwitches(embed_scale="l2")),
        Recipe("embed_sqrt_d", "e×√d", "e * sqrt(d), Gemma's constant", ModelSwitches(embed_scale="sqrt_d")),
        Recipe(
            "embed_unit_rms",
            "e×50",
            "e / init_std: embed_l2's start scale, with nothing normalized",
            ModelSwitches(embed_scale="unit_rms"),
        ),
        Recipe(
            "late_qk_norm",
            "QK-Norm from halfway",
            "QK-Norm switched on halfway through",
            ModelSwitches(qk_norm="head"),
            TrainSwitches(qk_norm_from=0.5),
        ),
    )
}
# Every recipe of course_utils.recipes (gpt2, llama3, qwen3, gemma2, gemma3, olmo2) is a variant too.


def variant_recipe(variant: str) -> Recipe:
    """The Recipe that a variant name stands for: one of VARIANTS, EXTRA_VARIANTS or the model families' RECIPES."""
    for table in (VARIANTS, EXTRA_VARIANTS, RECIPES):
        if variant in table:
            return table[variant]
    raise ValueError(f"variant must be one of {[*VARIANTS, *EXTRA_VARIANTS, *RECIPES]}, got {variant!r}")


@dataclass(frozen=True)
class Preset:
    """Everything about a sweep except the learning rate and the variant."""

    name: str
    model: dict  # GPTConfig fields (vocab_size comes from the corpus)
    train: dict  # TrainConfig fields (lr comes from the grid)
    n_sentences: int  # corpus size
    device: str  # the default device
    lrs: tuple  # the grid the chapter uses
    threads: int | None = None  # torch threads on CPU during the sweep (None: leave as is)
    eval_batches: int = 4
    eval_batch_size: int = 32


PRESETS = {
    # 2 layers, d_model 64: ~100k parameters; 200 steps of 8 x 64 tokens (about 2.5 s per run on one core).
    # 200 steps, because at 150 the run of QK-Norm at lr 0.3 was still leaving a loss plateau at the end, and where
    # it ended depended on the CPU's float kernels: 0.15 to 0.72 nats above the sweep's best over 6 kernel settings
    # and seeds 0-4 (failed, above 0.5, in 4 of those 30 sweeps). At 200 steps: 0.15 to 0.35, while the baseline at
    # lr 0.1 stays 0.79 or more above (docs/numerics.md). One thread makes the numbers the same on every machine
    # with the same CPU kind, and is as fast as two for a model this small.
    "quick": Preset(
        name="quick",
        model=dict(n_layer=2, n_head=4, d_model=64, block_size=64),
        train=dict(
            steps=200,
            batch_size=8,
            block_size=64,
            warmup=30,
            betas=(0.9, 0.95),
            weight_decay=0.0,
            record_every=10,
            amp=False,
        ),
        n_sentences=8000,
        device="cpu",
        lrs=(1e-2, 3e-2, 0.1, 0.3),
        threads=1,
    ),
    # 4 layers, d_model 256, 8 heads: ~3.2M parameters; 600 steps of 32 x 128 tokens in bf16 autocast.
    "gpu": Preset(
        name="gpu",
        model=dict(n_layer=4, n_head=8, d_model=256, block_size=128),
        train=dict(
            steps=600,
            batch_size=32,
            block_size=128,
            warmup=60,
            betas=(0.9, 0.95),
            weight_decay=0.0,
            record_every=20,
            amp=True,
        ),
        n_sentences=40000,
        device="cuda",
        lrs=(1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3),
        eval_batches=8,
        eval_batch_size=64,
    ),
}
# The gpu preset's code at a tiny size on the CPU, mixed precision included (bf16 autocast: training.amp_dtype): the
# tests run chapters 05 and 06 with it (COURSE_PRESET=smoke), so that a bug in the GPU path shows up without a GPU.
# Its numbers mean nothing.
PRESETS["smoke"] = replace(
    PRESETS["gpu"],
    name="smoke",
    model=dict(n_layer=2, n_head=4, d_model=32, block_size=32),
    train={**PRESETS["gpu"].train, "steps": 40, "batch_size": 4, "block_size": 32, "warmup": 10},
    n_sentences=2000,
    device="cpu",
    threads=1,
    eval_batches=2,
    eval_batch_size=8,
)
PRESET_ENV = "COURSE_PRESET"  # overrides "auto": e.g. COURSE_PRESET=quick on a GPU machine reproduces the stored run


def resolve_preset(preset: str = "auto") -> Preset:
    """The Preset for a name; "auto" is "gpu" when pick_device() finds CUDA, else "quick" (the environment variable
    COURSE_PRESET, when set, decides instead)."""
    if preset == "auto":
        preset = os.environ.get(PRESET_ENV) or ("gpu" if pick_device().type == "cuda" else "quick")
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS) + ['auto']}, got {preset!r}")
    return PRESETS[preset]


_CORPORA: dict = {}


def _corpus(n_sentences: int) -> Corpus:
    if n_sentences not in _CORPORA:  # the same text every time: build it once per process
        _CORPORA[n_sentences] = Corpus(n_sentences=n_sentences)
    return _CORPORA[n_sentences]


def build_run(preset: Preset | str, variant: str, lr: float, seed: int = 0, steps: int | None = None):
    """(GPTConfig, TrainConfig, Corpus) of one run of the sweep; builds nothing on any device."""
    preset = resolve_preset(preset) if isinstance(preset, str) else preset
    recipe = variant_recipe(variant)
    if not lr > 0:
        raise ValueError(f"learning rates must be positive, got {lr!r}")
    corpus = _corpus(preset.n_sentences)
    model_cfg = GPTConfig(vocab_size=corpus.vocab_size, **preset.model, **recipe.model)
    train_cfg = TrainConfig(lr=float(lr), seed=seed, **{**preset.train, **recipe.train})
    if steps is not None:
        train_cfg = replace(train_cfg, steps=steps, warmup=min(train_cfg.warmup, max(1, steps // 4)))
    return model_cfg, train_cfg, corpus


# ----------------------------------------------------------------------------------------------------
# the sweep
# ----------------------------------------------------------------------------------------------------
def _threads(n: int | None, device: torch.device):
    """The preset's thread count on the CPU; on a GPU the CPU threads are left alone."""
    return torch_threads(n if device.type == "cpu" else None)


def _bar_label(variant: str, lr: float) -> str:
    """A run's progress-bar label, `       baseline lr 0.1   `: padded by display width, so the bars line up."""
    return _("{variant} lr {lr}").format(variant=pad(variant, 15, ">"), lr=pad(f"{lr:g}", 6))


def _bar_note(record: RunRecord) -> str:
    if not record.diverged:
        return _("done")
    if record.diverged_at is None:
        return _("diverged")
    return _("diverged at step {step}").format(step=record.diverged_at)


def _print_finished_bar(record: RunRecord, steps: int) -> None:
    """The line a run's progress bar ends on, for a run trained elsewhere (a worker process, the run cache)."""
    bar = ProgressBar(steps, _bar_label(record.variant, record.lr))
    bar.n = len(record.losses)
    bar.close(_bar_note(record))


def _run_one(preset: Preset, variant: str, lr: float, seed: int, device: torch.device, steps, progress) -> RunRecord:
    if device.type != "cpu" or not run_cache.enabled():
        return _train_one(preset, variant, lr, seed, device, steps, progress)
    # a test session trains each CPU run once (course_utils/run_cache.py); the bar ends on the same line
    record = run_cache.memo(
        "run",
        (preset, variant, float(lr), seed, steps),
        lambda: _train_one(preset, variant, lr, seed, device, steps, False),
    )
    if progress:
        _print_finished_bar(record, preset.train["steps"] if steps is None else steps)
    return record


def _train_one(preset: Preset, variant: str, lr: float, seed: int, device: torch.device, steps, progress) -> RunRecord:
    model_cfg, train_cfg, corpus = build_run(preset, variant, lr, seed, steps)
    torch.manual_seed(seed)  # the same initial weights for every learning rate
    model = TinyGPT(model_cfg).to(device)
    eval_kw = dict(
        batch_size=preset.eval_batch_size,
        block_size=train_cfg.block_size,
        batches=preset.eval_batches,
        device=device,
        amp=train_cfg.amp,
    )
    initial = evaluate(model, corpus, **eval_kw)
    gains, outputs = GainLog(model), OutputRMSLog(model)
    bar = ProgressBar(train_cfg.steps, _bar_label(variant, lr)) if progress else None
    start = time.perf_counter()
    callbacks = [gains, outputs, bar] if bar else [gains, outputs]
    history = train(model, corpus, train_cfg, label=variant, device=device, progress=False, callbacks=callbacks)
    final = math.inf if history.diverged else evaluate(model, corpus, **eval_kw)
    seconds = time.perf_counter() - start
    if not math.isfinite(final):
        final = math.inf
    max_logit = [v if math.isfinite(v) else math.inf for v in history.max_logit]
    diverged = history.diverged or not final < initial
    record = RunRecord(
        variant=variant,
        lr=float(lr),
        final_loss=math.inf if history.diverged else final,
        initial_loss=initial,
        max_attn_logit=max(max_logit, default=math.nan),
        diverged=diverged,
        diverged_at=history.diverged_at,
        losses=history.losses,
        probe_steps=history.probe_steps,
        max_logit=max_logit,
        entropy=history.entropy,
        gain_q=gains.gain_q,
        gain_k=gains.gain_k,
        qk_bound=gains.bound,
        output_rms=outputs.rms,
        tokens=len(history.losses) * train_cfg.batch_size * train_cfg.block_size,
        seconds=seconds,
    )
    if bar:
        bar.close(_bar_note(record))
    return record


def stability_sweep(
    lrs=None,
    variants=("baseline", "qk_norm"),
    preset: str = "quick",
    seed: int = 0,
    device=None,
    *,
    steps: int | None = None,
    progress: bool = True,
    workers: int | str = 1,
) -> SweepResult:
    """Train one tiny GPT per (variant, learning rate) and return their records as a SweepResult.

    lrs: the learning-rate grid (None: the preset's). variants: names from VARIANTS. preset: "quick",
    "gpu" or "auto". device: None for the preset's (cpu for quick, cuda for gpu). steps overrides the
    preset's number of steps (for tests). Runs go variant by variant, each LR grid in increasing order;
    each prints one progress line.

    workers: how many runs train at once on the CPU, each in its own process with the preset's thread count
    ("auto": one per CPU core, at most 8; course_utils.pool). Every run is independent and seeded, so the records
    are the same for any number of workers; only the wall time changes. On a GPU the runs go one after another. In a
    script (not a notebook), call it under `if __name__ == "__main__":`, as Python's multiprocessing requires.
    """
    spec = resolve_preset(preset)
    lrs = list(spec.lrs if lrs is None else lrs)
    if not lrs:
        raise ValueError("give at least one learning rate")
    variants = [variants] if isinstance(variants, str) else list(variants)
    for v in variants:
        variant_recipe(v)  # raises for an unknown name
    if device is None:
        if spec.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(
                "the 'gpu' preset needs a CUDA GPU and none was found: use preset='quick' or 'auto' "
                "(or pass device='cpu' explicitly, which is slow)"
            )
        device = spec.device
    device = torch.device(device)
    jobs = [(v, lr) for v in variants for lr in sorted(lrs)]
    if device.type != "cpu" or worker_count(workers, len(jobs)) == 1:
        with _threads(spec.threads, device):
            records = [_run_one(spec, v, lr, seed, device, steps, progress) for v, lr in jobs]
        return SweepResult(records, spec, device.type)
    records = []
    calls = [(spec, v, lr, seed, steps) for v, lr in jobs]
    for record in parallel_map(cpu_run, calls, workers):  # in order: the same printed lines
        records.append(record)
        if progress:  # the line the serial run's bar ends on
            _print_finished_bar(record, spec.train["steps"] if steps is None else steps)
    return SweepResult(records, spec, device.type)


def cpu_run(spec: Preset, variant: str, lr: float, seed: int = 0, steps: int | None = None) -> RunRecord:
    """One run of a sweep on the CPU with the preset's threads, without progress: the record stability_sweep
    keeps for (variant, lr, seed, steps). Module level, so that a worker process can import it."""
    device = torch.device("cpu")
    with _threads(spec.threads, device):
        return _run_one(spec, variant, lr, seed, device, steps, progress=False)
