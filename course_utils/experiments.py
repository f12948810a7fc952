"""The training-stability lab of chapter 05: one tiny GPT per (variant, learning rate), side by side.

    result = stability_sweep([1e-2, 3e-2, 0.1, 0.3], variants=("baseline", "qk_norm"), preset="quick")
    result                       # a table in Jupyter (HTML), or as text
    result.get("baseline", 0.3).max_attn_logit
    result.sensitivity()         # {variant: LR sensitivity (Wortsman et al. 2023)}

Every run starts from the same initial weights (for a given variant and seed) and sees the same batches in
the same order; only the learning rate and the attention variant differ. Each run records its loss curve,
and every `record_every` steps the largest |attention logit| (before any softcap) and the mean attention
entropy over all layers and heads; with per-head QK-Norm also the largest |gain| of the q and k norms and
the bound they allow, sqrt(d_head) * max|g_q| * max|g_k| (`course_utils.attention.qk_norm_bound`).

The variants (`VARIANTS`):

* ``baseline``          plain attention, s = q·k / sqrt(d_head)
* ``qk_norm``           per-head RMSNorm on q and k before RoPE (Qwen3, Gemma 3)
* ``softcap``           s -> 50 tanh(s / 50) before the softmax (Gemma 2's attention cap)
* ``qk_norm+softcap``   both

Chapter 06 adds `EXTRA_VARIANTS` (z_loss, dyt, embed_l2, embed_sqrt_d, embed_unit_rms, late_qk_norm: one change
each to the baseline) and accepts every recipe of `course_utils.recipes` (gpt2, llama3, qwen3, gemma2, gemma3,
olmo2) as a variant name. Each run also records the RMS of every linear layer's output (`RunRecord.output_rms`).

What counts as a failed run (the stated definitions):

* **diverged**: the training loss became NaN or infinite (training stops at that step), or the final
  validation loss is not below the initial loss l0 (the run ended no better than the untrained model).
* **degraded**: finite and below l0, but the final loss is more than `DEGRADED_MARGIN` (0.5 nats)
  above the best final loss of the whole sweep: training went on, but the run lost most of what the
  other runs learned (typically attention collapsed to one-hot and stopped carrying information).
* **ok** otherwise. A run *survives* its learning rate when its status is ``ok``.

A diverged run's loss is meaningless: the tables print the verdict, never the number.

Presets (`PRESETS`): ``quick`` (CPU, about half a minute for the chapter's grid of 16 runs), ``gpu`` (a bigger
model, longer runs, bf16 autocast on CUDA), and ``auto`` (``gpu`` when `course_utils.env.pick_device()` finds
CUDA, else ``quick``).
"""

from __future__ import annotations

import html
import math
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from . import run_cache
from .attention import qk_norm_bound
from .claims import Comparison, at_most, more
from .data import Corpus
from .display import pad, text_table
from .env import pick_device, torch_threads
from .i18n import N_, _
from .model import GPTConfig, TinyGPT
from .norms import gain_of
from .recipes import RECIPES
from .training import ProgressBar, TrainConfig, evaluate, train

__all__ = [
    "VARIANTS",
    "EXTRA_VARIANTS",
    "variant_fields",
    "PRESETS",
    "Preset",
    "DIVERGED_DEFINITION",
    "DEGRADED_MARGIN",
    "RunRecord",
    "SweepResult",
    "resolve_preset",
    "build_run",
    "cpu_run",
    "parallel_map",
    "stability_sweep",
    "lr_sensitivity",
]

VARIANTS = {
    "baseline": {},
    "qk_norm": {"qk_norm": "head"},
    "softcap": {"attn_softcap": 50.0},
    "qk_norm+softcap": {"qk_norm": "head", "attn_softcap": 50.0},
}
# Chapter 06: one change each to the baseline (a field of TrainConfig goes to training, the rest to the model).
EXTRA_VARIANTS = {
    "z_loss": {"z_loss": 1e-4},  # PaLM's and Wortsman et al.'s coefficient
    "dyt": {"norm": "dyt"},  # Dynamic Tanh in every LayerNorm's place
    "embed_l2": {"embed_scale": "l2"},  # e / |e| * sqrt(d)
    "embed_sqrt_d": {"embed_scale": "sqrt_d"},  # e * sqrt(d), Gemma's constant
    "embed_unit_rms": {"embed_scale": "unit_rms"},  # e / init_std: embed_l2's start scale, with nothing normalized
    "late_qk_norm": {"qk_norm": "head", "qk_norm_from": 0.5},  # QK-Norm switched on halfway through
}
# Every recipe of course_utils.recipes (gpt2, llama3, qwen3, gemma2, gemma3, olmo2) is a variant too.


def variant_fields(variant: str) -> tuple:
    """(GPTConfig fields, TrainConfig fields) of a variant or a recipe."""
    if variant in VARIANTS or variant in EXTRA_VARIANTS:
        fields = VARIANTS[variant] if variant in VARIANTS else EXTRA_VARIANTS[variant]
        train_names = TrainConfig.__dataclass_fields__
        return (
            {k: v for k, v in fields.items() if k not in train_names},
            {k: v for k, v in fields.items() if k in train_names},
        )
    if variant in RECIPES:
        return dict(RECIPES[variant].model), dict(RECIPES[variant].train)
    raise ValueError(f"variant must be one of {list(VARIANTS) + list(EXTRA_VARIANTS) + list(RECIPES)}, got {variant!r}")


DEGRADED_MARGIN = 0.5  # nats above the sweep's best final loss
_DEFINITION = N_(
    "diverged: the training loss became NaN/inf, or the final validation loss is not below the initial loss "
    "l0; degraded: finite and below l0 but more than {margin} nats above the sweep's best final loss"
)
DIVERGED_DEFINITION = _DEFINITION.format(margin=DEGRADED_MARGIN)  # English; shown in the current language


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
    model_fields, train_fields = variant_fields(variant)
    if not lr > 0:
        raise ValueError(f"learning rates must be positive, got {lr!r}")
    corpus = _corpus(preset.n_sentences)
    model_cfg = GPTConfig(vocab_size=corpus.vocab_size, **preset.model, **model_fields)
    train_cfg = TrainConfig(lr=float(lr), seed=seed, **{**preset.train, **train_fields})
    if steps is not None:
        train_cfg = replace(train_cfg, steps=steps, warmup=min(train_cfg.warmup, max(1, steps // 4)))
    return model_cfg, train_cfg, corpus


# ----------------------------------------------------------------------------------------------------
# records and the result table
# ----------------------------------------------------------------------------------------------------
@dataclass
class RunRecord:
    """One training run of the sweep. Fields can also be read as record["final_loss"]."""

    variant: str
    lr: float
    final_loss: float  # validation loss after training; inf when diverged
    initial_loss: float  # validation loss of the untrained model (l0)
    max_attn_logit: float  # the largest |q·k|/sqrt(d_head) seen at any probe step (before any softcap)
    diverged: bool
    diverged_at: int | None = None  # the step whose loss was not finite, if any
    status: str = "ok"  # "ok" | "degraded" | "diverged" (see the module's docstring)
    excess: float = math.nan  # final loss minus the sweep's best (inf when diverged): "ok" when <= DEGRADED_MARGIN
    losses: list = field(default_factory=list)  # training loss per step (finite steps only)
    probe_steps: list = field(default_factory=list)
    max_logit: list = field(default_factory=list)  # per probe step: max over layers and heads
    entropy: list = field(default_factory=list)  # per probe step: mean over layers, heads and rows (nats)
    # per-head QK-Norm only (empty otherwise), per probe step, read with the weights that step's forward used:
    gain_q: list = field(default_factory=list)  # max over layers of max|g_q|
    gain_k: list = field(default_factory=list)  # max over layers of max|g_k|
    qk_bound: list = field(default_factory=list)  # max over layers of sqrt(d_head) * max|g_q| * max|g_k|
    # Rybakov et al. 2024: per probe step, the RMS of each linear layer's output (max over blocks) for
    # "QKV" (q, k and v projections together), "Proj" (attention output), "FC1" and "FC2" (the MLP's two layers)
    output_rms: dict = field(default_factory=dict)
    tokens: int = 0  # tokens trained on
    seconds: float = 0.0  # wall time of the run (varies by machine: never printed in a stored output)

    @property
    def survived(self) -> bool:
        return self.status == "ok"

    @property
    def final_entropy(self) -> float:
        return self.entropy[-1] if self.entropy else math.nan

    def __getitem__(self, key):
        if key == "survived":
            return self.survived
        return getattr(self, key)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["survived"] = self.survived
        return d


def _fmt_loss(r: RunRecord) -> str:
    if r.status == "diverged":
        if r.diverged_at is None:
            return _("diverged")
        return _("diverged (step {step})").format(step=r.diverged_at)
    return f"{r.final_loss:.2f}"


def _fmt_logit(v: float) -> str:
    if math.isnan(v):
        return "n/a"  # no probe step was recorded
    if not math.isfinite(v):
        return "inf"
    return f"{v:.1f}" if v < 100 else f"{v:.1e}"


_STATUS_MARK = {"ok": N_("✓ ok"), "degraded": N_("✗ degraded"), "diverged": N_("✗ diverged")}  # _() where shown


class SweepResult:
    """The records of a sweep, with the views the chapter needs; displays as a table."""

    def __init__(self, records, preset: Preset, device: str):
        self.records = list(records)
        self.preset, self.device = preset, device
        self.definition = DIVERGED_DEFINITION
        self._classify()

    def _classify(self) -> None:
        finite = [r.final_loss for r in self.records if not r.diverged]
        best = min(finite, default=math.inf)
        for r in self.records:
            r.excess = math.inf if r.diverged else r.final_loss - best
            if r.diverged:
                r.status = "diverged"
            elif r.excess > DEGRADED_MARGIN:
                r.status = "degraded"
            else:
                r.status = "ok"

    # -- access ---------------------------------------------------------------------------------------
    def __iter__(self):
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]

    @property
    def variants(self) -> list:
        return list(dict.fromkeys(r.variant for r in self.records))

    @property
    def lrs(self) -> list:
        return sorted({r.lr for r in self.records})

    def of(self, variant: str) -> list:
        """The records of one variant, by increasing learning rate."""
        return sorted((r for r in self.records if r.variant == variant), key=lambda r: r.lr)

    def get(self, variant: str, lr: float) -> RunRecord:
        for r in self.records:
            if r.variant == variant and math.isclose(r.lr, lr, rel_tol=1e-9):
                return r
        raise KeyError(f"no run for variant {variant!r} at lr {lr:g}")

    def sensitivity(self, lrs=None) -> dict:
        """{variant: LR sensitivity} over each variant's grid (or over `lrs`, when given)."""
        out = {}
        for v in self.variants:
            runs = [r for r in self.of(v) if lrs is None or any(math.isclose(r.lr, x) for x in lrs)]
            out[v] = lr_sensitivity([r.final_loss for r in runs], [r.initial_loss for r in runs])
        return out

    def survival(self) -> dict:
        """{variant: {lr: status}}."""
        return {v: {r.lr: r.status for r in self.of(v)} for v in self.variants}

    def survives(self, variant: str, lrs=None) -> Comparison:
        """The claim "every run of `variant` (at `lrs`; default: the whole grid) is ok", as a comparison with a
        margin: its largest final loss above the sweep's best against DEGRADED_MARGIN (course_utils.claims)."""
        runs = [r for r in self.of(variant) if lrs is None or any(math.isclose(r.lr, x) for x in lrs)]
        if not runs:
            raise KeyError(f"no run for variant {variant!r} at {lrs}")
        return at_most(max(r.excess for r in runs), DEGRADED_MARGIN)

    def fails(self, variant: str, lrs) -> Comparison:
        """The claim "every run of `variant` at `lrs` (one learning rate or several) fails", with its margin."""
        lrs = [lrs] if isinstance(lrs, (int, float)) else list(lrs)
        return more(min(self.get(variant, lr).excess for lr in lrs), DEGRADED_MARGIN)

    # -- display --------------------------------------------------------------------------------------
    def rows(self) -> list:
        """One dict of formatted strings per run (the table's rows)."""
        return [
            {  # the keys are the column headers a reader sees: in the current language
                _("variant"): r.variant,
                _("lr"): f"{r.lr:g}",
                _("final loss"): _fmt_loss(r),
                _("max |attn logit|"): _fmt_logit(r.max_attn_logit),
                _("final entropy"): "n/a" if math.isnan(r.final_entropy) else f"{r.final_entropy:.2f}",
                _("verdict"): _(_STATUS_MARK[r.status]),
            }
            for v in self.variants
            for r in self.of(v)
        ]

    def survival_rows(self) -> list:
        lrs = self.lrs
        table = self.survival()
        return [
            {
                _("variant"): v,
                **{
                    _("lr {lr}").format(lr=f"{lr:g}"): _STATUS_MARK[table[v][lr]].split()[0] if lr in table[v] else "·"
                    for lr in lrs
                },
            }
            for v in self.variants
        ]

    def _title(self) -> str:
        return _("stability sweep: preset {preset} on {device}, {n} runs").format(
            preset=repr(self.preset.name), device=self.device, n=len(self)
        )

    def _definition(self) -> str:
        """The stated definitions, in the current language (unless someone replaced them)."""
        if self.definition == DIVERGED_DEFINITION:
            return _(_DEFINITION).format(margin=DEGRADED_MARGIN)
        return self.definition

    def __repr__(self) -> str:
        rows = self.rows()
        sens = self.sensitivity()
        lines = [
            self._title(),
            _text_table(rows),
            "",
            _("LR sensitivity: {values}").format(values=_(", ").join(f"{v} {s:.2f}" for v, s in sens.items())),
            _("({definition})").format(definition=self._definition()),
        ]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        sens = self.sensitivity()
        return (
            f"<div><b>{html.escape(self._title())}</b>{_html_table(self.rows())}"
            + "<p>"
            + html.escape(_("LR sensitivity (mean over the grid of min(loss, l0) − best loss): "))
            + html.escape(_(", ")).join(f"{html.escape(v)} <b>{s:.2f}</b>" for v, s in sens.items())
            + f"</p><p style='font-size:85%'>{html.escape(self._definition())}</p></div>"
        )

    def survival_table(self) -> Table:
        """Which variant survives which learning rate: ✓ (ok) or ✗ (degraded or diverged)."""
        return Table(self.survival_rows(), _("which variant survives which learning rate (✓ ok, ✗ failed)"))


class Table:
    """A list of dict rows shown as an HTML table in Jupyter and as aligned text elsewhere."""

    def __init__(self, rows: list, title: str = ""):
        self.rows, self.title = rows, title

    def __repr__(self) -> str:
        return (self.title + "\n" if self.title else "") + _text_table(self.rows)

    def _repr_html_(self) -> str:
        title = f"<b>{html.escape(self.title)}</b>" if self.title else ""
        return f"<div>{title}{_html_table(self.rows)}</div>"


def _text_table(rows: list) -> str:
    if not rows:
        return _("(no runs)")
    cols = list(rows[0])
    return text_table(cols, [[r[c] for c in cols] for r in rows], align="<" * len(cols))


def _html_table(rows: list) -> str:
    if not rows:
        return "<p>" + html.escape(_("(no runs)")) + "</p>"
    cols = list(rows[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)

    def cell(value: str) -> str:
        colour = "#009E73" if value.startswith("✓") else "#D55E00" if value.startswith("✗") else None
        style = f" style='color:{colour};font-weight:bold'" if colour else ""
        return f"<td{style}>{html.escape(str(value))}</td>"

    body = "".join("<tr>" + "".join(cell(r[c]) for c in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ----------------------------------------------------------------------------------------------------
# LR sensitivity
# ----------------------------------------------------------------------------------------------------
def lr_sensitivity(final_losses, initial_loss) -> float:
    """Wortsman et al. 2023 (arXiv 2309.14322): E over the LR grid of [min(loss(lr), l0) - best loss].

    final_losses: the final loss at each learning rate of the grid (inf or NaN for a diverged run);
    initial_loss: l0, the loss at initialization (one number, or one per run). Capping each loss at l0
    makes a diverged run count as "learned nothing" instead of as an arbitrary huge number. The best loss
    is the smallest over the grid. 0 means every learning rate did as well as the best one.
    """
    losses = [float(v) for v in final_losses]
    if not losses:
        raise ValueError("lr_sensitivity needs at least one final loss")
    l0 = list(initial_loss) if isinstance(initial_loss, (list, tuple)) else [float(initial_loss)] * len(losses)
    if len(l0) != len(losses):
        raise ValueError(f"got {len(losses)} final losses but {len(l0)} initial losses")
    capped = [min(v, z) if math.isfinite(v) else z for v, z in zip(losses, l0)]
    best = min(capped)
    return sum(c - best for c in capped) / len(capped)


# ----------------------------------------------------------------------------------------------------
# the sweep
# ----------------------------------------------------------------------------------------------------
def _threads(n: int | None, device: torch.device):
    """The preset's thread count on the CPU; on a GPU the CPU threads are left alone."""
    return torch_threads(n if device.type == "cpu" else None)


class _GainProbe:
    """Reads the q/k norm gains of per-head QK-Norm layers at the training loop's probe steps.

    Called after the backward pass and before the optimizer step, it sees the gains the step's forward pass
    used, so its bound belongs to the max logit that the same step recorded.
    """

    def __init__(self, model, cfg: TrainConfig):
        layers = model.attention_layers() if hasattr(model, "attention_layers") else []
        self.layers = [a for a in layers if getattr(a, "qk_norm", None) == "head"]
        self.every, self.last = cfg.record_every, cfg.steps - 1
        self.gain_q, self.gain_k, self.bound = [], [], []

    def __call__(self, step: int) -> None:
        if not self.layers or not self.every or not (step % self.every == 0 or step == self.last):
            return
        gq = [float(gain_of(a.q_norm).detach().abs().max()) for a in self.layers]
        gk = [float(gain_of(a.k_norm).detach().abs().max()) for a in self.layers]
        self.gain_q.append(max(gq))
        self.gain_k.append(max(gk))
        self.bound.append(max(qk_norm_bound(a.d_head, gain_of(a.q_norm), gain_of(a.k_norm)) for a in self.layers))


class _OutputProbe:
    """The RMS of every linear layer's output at the probe steps (Rybakov et al. 2024, arXiv 2410.16682).

    Their measurement: in a run that is about to fail, the outputs of the QKV, Proj and FC2 layers grow
    step after step. Forward hooks read the outputs only when the training loop switched the attention
    probes on for the step (`attn.record`), so the other steps cost nothing.
    """

    LAYERS = {
        "QKV": ("attn.q_proj", "attn.k_proj", "attn.v_proj"),
        "Proj": ("attn.o_proj",),
        "FC1": ("mlp.up",),
        "FC2": ("mlp.down",),
    }

    def __init__(self, model):
        self.rms = {name: [] for name in self.LAYERS}
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

    def __call__(self, step: int) -> None:  # after the backward pass: the forward of this step is complete
        if not self._sums:
            return
        for name in self.LAYERS:
            per_block = [math.sqrt(s / n) for (i, nm), (s, n) in self._sums.items() if nm == name]
            self.rms[name].append(max(per_block))
        self._sums = {}

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


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
        bar = ProgressBar(preset.train["steps"] if steps is None else steps, _bar_label(variant, lr))
        bar.n = len(record.losses)
        bar.close(_bar_note(record))
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
    bar = ProgressBar(train_cfg.steps, _bar_label(variant, lr)) if progress else None
    gains = _GainProbe(model, train_cfg)
    outputs = _OutputProbe(model)
    start = time.perf_counter()

    def callback(step, m, loss):  # after the backward pass, before the optimizer step
        gains(step)
        outputs(step)
        if bar:
            bar.update()

    history = train(model, corpus, train_cfg, label=variant, device=device, progress=False, callback=callback)
    outputs.remove()
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
    ("auto": one per CPU core, at most 8). Every run is independent and seeded, so the records are the same for any
    number of workers; only the wall time changes. On a GPU the runs go one after another. In a script (not a
    notebook), call it under `if __name__ == "__main__":`, as Python's multiprocessing requires.
    """
    spec = resolve_preset(preset)
    lrs = list(spec.lrs if lrs is None else lrs)
    if not lrs:
        raise ValueError("give at least one learning rate")
    variants = [variants] if isinstance(variants, str) else list(variants)
    for v in variants:
        variant_fields(v)  # raises for an unknown name
    if device is None:
        if spec.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(
                "the 'gpu' preset needs a CUDA GPU and none was found: use preset='quick' or 'auto' "
                "(or pass device='cpu' explicitly, which is slow)"
            )
        device = spec.device
    device = torch.device(device)
    jobs = [(v, lr) for v in variants for lr in sorted(lrs)]
    if device.type != "cpu" or _worker_count(workers, len(jobs)) == 1:
        with _threads(spec.threads, device):
            records = [_run_one(spec, v, lr, seed, device, steps, progress) for v, lr in jobs]
        return SweepResult(records, spec, device.type)
    records = []
    calls = [(spec, v, lr, seed, steps) for v, lr in jobs]
    for (v, lr), record in zip(jobs, parallel_map(cpu_run, calls, workers)):  # in order: the same printed lines
        records.append(record)
        if progress:  # the line the serial run's bar ends on
            bar = ProgressBar(spec.train["steps"] if steps is None else steps, _bar_label(v, lr))
            bar.n = len(record.losses)
            bar.close(_bar_note(record))
    return SweepResult(records, spec, device.type)


MAX_AUTO_WORKERS = 8  # each worker is a Python process with torch loaded (a few hundred MB of memory)
CGROUP = Path("/sys/fs/cgroup")  # where a Linux process reads its own cgroup's limits


def usable_cpus() -> int:
    """The CPU cores this process may use: the cores it may run on (its affinity), and no more than its cgroup's CPU
    limit. In a hub's container os.cpu_count() is the whole node's count; a limit of 2 cores (Kubernetes'
    `cpu.limit`, TLJH's `limits.cpu`) reaches the process only as a CFS quota, read here from cgroup v2's cpu.max or
    cgroup v1's cpu.cfs_quota_us. One worker per usable core keeps a learner's sweep inside what the hub gave them."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS has no affinity
        cores = os.cpu_count() or 1
    quota = None
    try:
        text = (CGROUP / "cpu.max").read_text().split()
        if text and text[0] != "max":
            quota = int(text[0]) / int(text[1])
    except (OSError, ValueError, IndexError):
        try:
            limit = int((CGROUP / "cpu" / "cpu.cfs_quota_us").read_text())
            period = int((CGROUP / "cpu" / "cpu.cfs_period_us").read_text())
            quota = limit / period if limit > 0 else None
        except (OSError, ValueError, ZeroDivisionError):
            quota = None
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def _worker_count(workers, n_calls: int) -> int:
    n = min(usable_cpus(), MAX_AUTO_WORKERS) if workers == "auto" else int(workers)
    return max(1, min(n, n_calls))


def parallel_map(fn, calls, workers="auto"):
    """fn(*args) for each args in `calls`, in `workers` processes ("auto": one per usable CPU core, at most
    MAX_AUTO_WORKERS); yields the results
    in the order of `calls`, each as soon as it and those before it are done.

    fn must be defined at a module's top level (a spawned process imports it). "spawn" starts clean
    interpreters on every OS; fork is unsafe once torch has started its threads. In a script, call this under
    `if __name__ == "__main__":`, as Python's multiprocessing requires.
    """
    calls = list(calls)
    n = _worker_count(workers, len(calls))
    if n == 1:
        for args in calls:
            yield fn(*args)
        return
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(fn, *args) for args in calls]
        for future in futures:
            yield future.result()


def _bar_label(variant: str, lr: float) -> str:
    """A run's progress-bar label, `       baseline lr 0.1   `: padded by display width, so the bars line up."""
    return _("{variant} lr {lr}").format(variant=pad(variant, 15, ">"), lr=pad(f"{lr:g}", 6))


def _bar_note(record: RunRecord) -> str:
    if not record.diverged:
        return _("done")
    if record.diverged_at is None:
        return _("diverged")
    return _("diverged at step {step}").format(step=record.diverged_at)


def cpu_run(spec: Preset, variant: str, lr: float, seed: int = 0, steps: int | None = None) -> RunRecord:
    """One run of a sweep on the CPU with the preset's threads, without progress: the record stability_sweep
    keeps for (variant, lr, seed, steps). Module level, so that a worker process can import it."""
    device = torch.device("cpu")
    with _threads(spec.threads, device):
        return _run_one(spec, variant, lr, seed, device, steps, progress=False)
