"""Interactive explorers that still say something when the notebook is only read, not run.

The trick: the figure for the starting values is an ordinary output (an image, which a static
rendering on GitHub, nbviewer or a PDF shows), and the controls sit below it. Moving a control
redraws that *same* output in place through a display handle, so a live JupyterLab session gets an
interactive plot and a static copy still gets a picture and a readout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from .i18n import _
from .palette import BLUE, GREEN, ORANGE, VERMILLION

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["live_figure", "widget_bundle", "layer_norm_explorer", "draw_layer_norm", "alt_layer_norm"]


def widget_bundle(widget: ipywidgets.Widget, fallback: str) -> dict[str, Any]:
    """A display bundle for a widget whose plain-text fallback is `fallback` instead of the widget's repr."""
    return {
        "application/vnd.jupyter.widget-view+json": {
            "version_major": 2,
            "version_minor": 0,
            "model_id": widget.model_id,
        },
        "text/plain": fallback,
    }


def live_figure(
    draw: Callable[..., Figure],
    controls: dict[str, ipywidgets.ValueWidget],
    describe: Callable[..., str] | None = None,
    layout: ipywidgets.Layout | None = None,
    alt: Callable[..., str] | None = None,
) -> ipywidgets.HBox:
    """Show draw(**values) now, and redraw it whenever one of the `controls` (ipywidgets) changes.

    draw(**values) returns a matplotlib Figure; describe(**values), if given, returns a Markdown
    readout shown under the figure and updated with it. The figure's alt text is alt(**values) when
    `alt` is given, else the readout. Returns the controls' container widget.
    """
    alt_text = alt or describe
    if alt_text is None:
        raise ValueError("live_figure needs `describe` or `alt`: the figure's alt text")
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import Markdown, display

    from .figures import figure_bundle

    def values() -> dict[str, Any]:
        return {name: c.value for name, c in controls.items()}

    def bundle() -> tuple[dict[str, Any], dict[str, Any]]:
        fig = draw(**values())
        try:
            return figure_bundle(fig, alt_text(**values()))
        finally:
            plt.close(fig)

    data, metadata = bundle()
    fig_handle = display(data, metadata=metadata, raw=True, display_id=True)
    text_handle = display(Markdown(describe(**values())), display_id=True) if describe else None

    def redraw(_change: object = None) -> None:
        data, metadata = bundle()
        fig_handle.update(data, metadata=metadata, raw=True)
        if text_handle is not None and describe is not None:
            text_handle.update(Markdown(describe(**values())))

    for c in controls.values():
        c.observe(redraw, names="value")
    box = w.HBox(list(controls.values()), layout=layout or w.Layout(flex_flow="row wrap"))
    names = _(", ").join(getattr(c, "description", "") or name for name, c in controls.items())  # as shown
    display(
        widget_bundle(
            box,
            _("[Controls: {names}. Run this cell in JupyterLab to move them; the figure above redraws.]").format(
                names=names
            ),
        ),
        raw=True,
    )
    return box


# ----------------------------------------------------------------------------------------------------
# the LayerNorm explorer (chapter 01)
# ----------------------------------------------------------------------------------------------------
def _ln_parts(
    values: Sequence[float], gamma: float, beta: float, eps: float
) -> tuple[torch.Tensor, float, float, torch.Tensor, torch.Tensor]:
    x = torch.tensor(values, dtype=torch.float64)
    mean = x.mean()
    var = ((x - mean) ** 2).mean()
    xhat = (x - mean) / torch.sqrt(var + eps)
    return x, mean.item(), var.item(), xhat, gamma * xhat + beta


def draw_layer_norm(values: Sequence[float], gamma: float = 1.0, beta: float = 0.0, eps: float = 1e-5) -> Figure:
    """Two bar charts: the input with its mean and ±1 std band, and LayerNorm's output with β as its new mean."""
    import matplotlib.pyplot as plt

    x, mean, var, xhat, y = _ln_parts(values, gamma, beta, eps)
    std = math.sqrt(var)
    labels = [f"x{i + 1}" for i in range(len(values))]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.bar(labels, x.tolist(), color=BLUE, zorder=2)
    a.axhline(mean, color=VERMILLION, lw=2, zorder=3, label=_("mean μ = {mean:.3f}").format(mean=mean))
    a.axhspan(mean - std, mean + std, color=VERMILLION, alpha=0.2, zorder=1, label=f"μ ± σ (σ = {std:.3f})")
    a.set_title(_("input x"))
    b.bar(labels, y.tolist(), color=GREEN, zorder=2)
    b.axhline(beta, color=VERMILLION, lw=2, label=_("β = {beta:.2f} (the new mean)").format(beta=beta))
    b.set_title(f"γ·LayerNorm(x) + β   (γ = {gamma:.2f}, ε = {eps:.0e})")
    for ax in (a, b):
        _bar_axes(ax)
    fig.tight_layout()
    return fig


def _bar_axes(ax: Axes) -> None:
    """The shared look of the explorers' bar charts: labelled axes, a zero line, a legend under the bars."""
    ax.set_xlabel(_("feature"))
    ax.set_ylabel(_("value"))
    ax.axhline(0, color="black", lw=0.6)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1, frameon=False)


def alt_layer_norm(values: Sequence[float], gamma: float = 1.0, beta: float = 0.0, eps: float = 1e-5) -> str:
    """The explorer's alt text: what the two bar charts show for these slider values."""
    x, mean, var, xhat, y = _ln_parts(values, gamma, beta, eps)
    xs = ", ".join(f"{v:g}" for v in values)
    ys = ", ".join(f"{v + 0.0:.2f}" for v in y.tolist())
    return _(
        "Two bar charts. Left: the input [{xs}] with its mean {mean:.2f} and a band of one standard deviation "
        "({std:.2f}) around it. Right: LayerNorm's output with γ = {gamma:.2f}, β = {beta:.2f}, "
        "ε = {eps:.0e}: [{ys}], the same pattern of bars, now centred on β."
    ).format(xs=xs, mean=mean, std=math.sqrt(var), gamma=gamma, beta=beta, eps=eps, ys=ys)


def describe_layer_norm(values: Sequence[float], gamma: float = 1.0, beta: float = 0.0, eps: float = 1e-5) -> str:
    x, mean, var, xhat, y = _ln_parts(values, gamma, beta, eps)
    out_mean = y.mean().item()
    out_std = ((y - y.mean()) ** 2).mean().sqrt().item()
    xs = ", ".join(f"{v:g}" for v in values)
    ys = ", ".join(f"{v:.3f}" for v in y.tolist())
    return _(
        "x = [{xs}] → μ = {mean:.3f}, σ² = {var:.3f}; output = [{ys}], "
        "output mean = {out_mean:.3f}, output std = {out_std:.3f}"
    ).format(xs=xs, mean=mean, var=var, ys=ys, out_mean=out_mean + 0.0, out_std=out_std)


_STYLE = {"description_width": "initial"}


def _vector_explorer(
    values: Sequence[float],
    extras: dict[str, ipywidgets.ValueWidget],
    eps: float,
    draw: Callable[..., Figure],
    describe: Callable[..., str],
    alt: Callable[..., str],
) -> ipywidgets.HBox:
    """Sliders x1..xn for the values, then `extras` (name -> slider), then ε; draw, describe and alt receive
    (values, *extra values in order, eps) and are redrawn whenever a slider moves."""
    import ipywidgets as w

    controls = {
        f"x{i + 1}": w.FloatSlider(value=v, min=-10, max=10, step=0.5, description=f"x{i + 1}", style=_STYLE)
        for i, v in enumerate(values)
    }
    controls.update(extras)
    controls["eps"] = w.FloatLogSlider(
        value=eps, base=10, min=-8, max=2, step=0.5, description="ε (eps)", readout_format=".0e", style=_STYLE
    )
    n = len(values)

    def unpack(**kw: Any) -> tuple[Any, ...]:
        return ([kw[f"x{i + 1}"] for i in range(n)], *(kw[name] for name in extras), kw["eps"])

    return live_figure(
        lambda **kw: draw(*unpack(**kw)),
        controls,
        describe=lambda **kw: describe(*unpack(**kw)),
        alt=lambda **kw: alt(*unpack(**kw)),
    )


def layer_norm_explorer(
    values: Sequence[float] = (4.0, 6.0, 2.0, 8.0), gamma: float = 1.0, beta: float = 0.0, eps: float = 1e-5
) -> ipywidgets.HBox:
    """Sliders for four values, γ, β and ε; bar charts of the input and of LayerNorm's output."""
    import ipywidgets as w

    extras = {
        "gamma": w.FloatSlider(value=gamma, min=-3, max=3, step=0.1, description="γ (gamma)", style=_STYLE),
        "beta": w.FloatSlider(value=beta, min=-5, max=5, step=0.1, description="β (beta)", style=_STYLE),
    }
    return _vector_explorer(values, extras, eps, draw_layer_norm, describe_layer_norm, alt_layer_norm)


# ----------------------------------------------------------------------------------------------------
# the RMSNorm explorer (chapter 02): RMSNorm and LayerNorm side by side
# ----------------------------------------------------------------------------------------------------
__all__ += ["rms_norm_explorer", "draw_rms_norm", "describe_rms_norm", "alt_rms_norm"]


def _rms_parts(
    values: Sequence[float], shift: float, gain: float, eps: float
) -> tuple[torch.Tensor, float, float, torch.Tensor, torch.Tensor]:
    """The shifted input, its RMS and mean, and both norms' outputs (gain applied to both)."""
    x = torch.tensor(values, dtype=torch.float64) + shift
    rms = torch.sqrt((x * x).mean() + eps)
    mean = x.mean()
    var = ((x - mean) ** 2).mean()
    rms_out = gain * x / rms
    ln_out = gain * (x - mean) / torch.sqrt(var + eps)
    return x, rms.item(), mean.item(), rms_out, ln_out


def draw_rms_norm(values: Sequence[float], shift: float = 0.0, gain: float = 1.0, eps: float = 1e-6) -> Figure:
    """Left: the input (plus a common shift c) with its RMS and mean. Right: RMSNorm and LayerNorm, bar by bar."""
    import matplotlib.pyplot as plt

    x, rms, mean, rms_out, ln_out = _rms_parts(values, shift, gain, eps)
    n = len(values)
    labels = [f"x{i + 1}" for i in range(n)]
    pos = list(range(n))
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4.2))
    a.bar(labels, x.tolist(), color=BLUE, zorder=2)
    a.axhline(rms, color=ORANGE, lw=2, ls="--", zorder=3, label=f"RMS = {rms:.3f}")
    a.axhline(mean, color=VERMILLION, lw=1.5, zorder=3, label=_("mean = {mean:.3f}").format(mean=mean))
    a.set_title(_("input x + c   (c = {shift:+.1f})").format(shift=shift))
    width = 0.38
    b.bar([p - width / 2 for p in pos], rms_out.tolist(), width, color=BLUE, zorder=2, label="RMSNorm: g·x / RMS")
    b.bar(
        [p + width / 2 for p in pos],
        ln_out.tolist(),
        width,
        color=VERMILLION,
        zorder=2,
        label=_("LayerNorm: g·(x − mean) / std"),
    )
    b.set_xticks(pos, labels)
    b.set_title(_("outputs, gain g = {gain:.2f}, ε = {eps:.0e}").format(gain=gain, eps=eps))
    for ax in (a, b):
        _bar_axes(ax)
    fig.tight_layout()
    return fig


def alt_rms_norm(values: Sequence[float], shift: float = 0.0, gain: float = 1.0, eps: float = 1e-6) -> str:
    """The explorer's alt text: what the two bar charts show for these slider values."""
    x, rms, mean, rms_out, ln_out = _rms_parts(values, shift, gain, eps)

    def fmt(t: torch.Tensor) -> str:
        return "[" + ", ".join(f"{v + 0.0:.2f}" for v in t.tolist()) + "]"

    return _(
        "Two bar charts. Left: the input x + c = {x} (c = {shift:g}) with its RMS {rms:.2f} and its mean "
        "{mean:.2f}. Right: RMSNorm {rms_out} and LayerNorm {ln_out} side by side, gain {gain:.2f}: "
        "LayerNorm's bars are centred on 0, RMSNorm's keep the input's signs and mean."
    ).format(x=fmt(x), shift=shift, rms=rms, mean=mean, rms_out=fmt(rms_out), ln_out=fmt(ln_out), gain=gain)


def describe_rms_norm(values: Sequence[float], shift: float = 0.0, gain: float = 1.0, eps: float = 1e-6) -> str:
    x, rms, mean, rms_out, ln_out = _rms_parts(values, shift, gain, eps)
    xs = ", ".join(f"{v:g}" for v in x.tolist())

    def fmt(t: torch.Tensor) -> str:
        return "[" + ", ".join(f"{v + 0.0:.3f}" for v in t.tolist()) + "]"

    return _("x + c = [{xs}] → RMS = {rms:.3f}, mean = {mean:.3f}; RMSNorm = {rms_out}; LayerNorm = {ln_out}").format(
        xs=xs, rms=rms, mean=mean, rms_out=fmt(rms_out), ln_out=fmt(ln_out)
    )


def rms_norm_explorer(
    values: Sequence[float] = (4.0, 6.0, 2.0, 8.0), shift: float = 0.0, gain: float = 1.0, eps: float = 1e-6
) -> ipywidgets.HBox:
    """Sliders for four values, a common shift c, a gain g and ε; RMSNorm and LayerNorm side by side.

    Move c: LayerNorm's bars do not move (it subtracts the mean), RMSNorm's do (the shift changes the RMS).
    Scale all four values together: neither moves.
    """
    import ipywidgets as w

    extras = {
        "shift": w.FloatSlider(value=shift, min=-20, max=20, step=0.5, description=_("c (added to all)"), style=_STYLE),
        "gain": w.FloatSlider(value=gain, min=-3, max=3, step=0.1, description=_("g (gain)"), style=_STYLE),
    }
    return _vector_explorer(values, extras, eps, draw_rms_norm, describe_rms_norm, alt_rms_norm)
