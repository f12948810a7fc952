"""What a stability sweep keeps of its runs, and the verdicts it reads from them (chapters 05 and 06).

    result = stability_sweep(...)        # course_utils.experiments trains; this module keeps and judges
    result.get("baseline", 0.3).status   # "ok", "degraded" or "diverged"
    result.sensitivity()                 # {variant: LR sensitivity (Wortsman et al. 2023)}
    result                               # a table in Jupyter (HTML), or as text

A `RunRecord` is one run's numbers (its loss curve, its probes, its final loss); a `SweepResult` holds the records
of a sweep, classifies each run against the others, and shows them. Nothing here trains, so a check or a test can
build records by hand (course_utils/checks/ex05.py does).

What counts as a failed run (the stated definitions, `DIVERGED_DEFINITION`):

* **diverged**: the training loss became NaN or infinite (training stops at that step), or the final
  validation loss is not below the initial loss l0 (the run ended no better than the untrained model).
* **degraded**: finite and below l0, but the final loss is more than `DEGRADED_MARGIN` (0.5 nats)
  above the best final loss of the whole sweep: training went on, but the run lost most of what the
  other runs learned (typically attention collapsed to one-hot and stopped carrying information).
* **ok** otherwise. A run *survives* its learning rate when its status is ``ok``.

A diverged run's loss is meaningless: the tables print the verdict (`STATUS_MARK`), never the number.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal

from .claims import Comparison, at_most, more
from .display import Table
from .i18n import N_, _

if TYPE_CHECKING:
    from .experiments import Preset

__all__ = ["DEGRADED_MARGIN", "DIVERGED_DEFINITION", "STATUS_MARK", "RunRecord", "SweepResult", "lr_sensitivity"]

DEGRADED_MARGIN = 0.5  # nats above the sweep's best final loss
_DEFINITION = N_(
    "diverged: the training loss became NaN/inf, or the final validation loss is not below the initial loss "
    "l0; degraded: finite and below l0 but more than {margin} nats above the sweep's best final loss"
)
DIVERGED_DEFINITION = _DEFINITION.format(margin=DEGRADED_MARGIN)  # English; shown in the current language
RunStatus = Literal["ok", "degraded", "diverged"]
STATUS_MARK = {"ok": N_("✓ ok"), "degraded": N_("✗ degraded"), "diverged": N_("✗ diverged")}  # _() where shown


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
    status: RunStatus = "ok"  # see the module's docstring
    excess: float = math.nan  # final loss minus the sweep's best (inf when diverged): "ok" when <= DEGRADED_MARGIN
    losses: list[float] = field(default_factory=list)  # training loss per step (finite steps only)
    probe_steps: list[int] = field(default_factory=list)
    max_logit: list[float] = field(default_factory=list)  # per probe step: max over layers and heads
    entropy: list[float] = field(default_factory=list)  # per probe step: mean over layers, heads and rows (nats)
    # per-head QK-Norm only (empty otherwise), per probe step, read with the weights that step's forward used:
    gain_q: list[float] = field(default_factory=list)  # max over layers of max|g_q|
    gain_k: list[float] = field(default_factory=list)  # max over layers of max|g_k|
    qk_bound: list[float] = field(default_factory=list)  # max over layers of sqrt(d_head) * max|g_q| * max|g_k|
    # Rybakov et al. 2024: per probe step, the RMS of each linear layer's output (max over blocks) for
    # "QKV" (q, k and v projections together), "Proj" (attention output), "FC1" and "FC2" (the MLP's two layers)
    output_rms: dict[str, list[float]] = field(default_factory=dict)
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
                _("verdict"): _(STATUS_MARK[r.status]),
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
                    _("lr {lr}").format(lr=f"{lr:g}"): STATUS_MARK[table[v][lr]].split()[0] if lr in table[v] else "·"
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
            Table(rows).text(),
            "",
            _("LR sensitivity: {values}").format(values=_(", ").join(f"{v} {s:.2f}" for v, s in sens.items())),
            _("({definition})").format(definition=self._definition()),
        ]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        sens = self.sensitivity()
        return (
            f"<div><b>{html.escape(self._title())}</b>{Table(self.rows()).html()}"
            + "<p>"
            + html.escape(_("LR sensitivity (mean over the grid of min(loss, l0) − best loss): "))
            + html.escape(_(", ")).join(f"{html.escape(v)} <b>{s:.2f}</b>" for v, s in sens.items())
            + f"</p><p style='font-size:85%'>{html.escape(self._definition())}</p></div>"
        )

    def survival_table(self) -> Table:
        """Which variant survives which learning rate: ✓ (ok) or ✗ (degraded or diverged)."""
        return Table(self.survival_rows(), _("which variant survives which learning rate (✓ ok, ✗ failed)"))
