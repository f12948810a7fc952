"""Where the norm sits, drawn from the model's own code.

A transformer sub-layer F (attention or the MLP) sits on a side branch of the *residual stream*, the
"highway" that carries x from block to block. The placements differ only in where the norms sit:

    on the branch, before F     Pre-LN              x + F(Norm(x))
    on the highway, after +     Post-LN             Norm(x + F(x))
    on the branch, both sides   Peri-LN             x + Norm(F(Norm(x)))
    on the branch, after F      OLMo 2's reordered  x + Norm(F(x))

A norm on the branch changes only what is *added*; the highway stays a plain sum, and the gradient
reaches every earlier layer through it unchanged. A norm on the highway divides the whole stream,
and its Jacobian sits on the path of every gradient that passes.

The picture is not drawn from a hand-written table. `sublayer_layout(placement)` asks torch.fx to
record what `course_utils.model.Block.forward` really calls for that placement, a graph of module
calls and additions, and reads two things off it for each sub-layer:

    branch    the modules between the fork of the stream and the addition, in order ("Norm", "F", ...)
    highway   the modules on the stream itself after the addition ("Norm" in Post-LN, nothing otherwise)

`draw_placements(placements)` draws one panel per placement from that layout, with the equation
(`SublayerLayout.equation`) spelled out from the same layout. If the model's code changes, the picture
and its equations change with it; they cannot tell a different story from the code.

    from course_utils.placement_diagram import draw_placements, describe_placements
    show(draw_placements(("pre", "post")), alt=describe_placements(("pre", "post")))
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.fx

from .i18n import N_, _
from .model import Block, GPTConfig, Placement
from .palette import BLUE, DARK_GREY, ORANGE, SKY_BLUE, VERMILLION

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "PLACEMENT_TITLES",
    "placement_title",
    "SublayerLayout",
    "block_layouts",
    "sublayer_layout",
    "describe_placements",
    "draw_placements",
]

# who uses each placement: the only hand-written part (the tests check that every placement the model accepts
# has a title)
PLACEMENT_TITLES = {  # English msgids: shown through _() (placement_title), so the Japanese figure names them too
    "pre": N_("Pre-LN (GPT-2, Llama)"),
    "post": N_("Post-LN (Transformer 2017, BERT)"),
    "peri": N_("Peri-LN (Gemma 2, Gemma 3)"),
    "reordered": N_("reordered norm (OLMo 2)"),
}


def placement_title(placement: str, with_models: bool = True) -> str:
    """The placement's name in the learner's language, with the models that use it in brackets unless
    `with_models` is False ("reordered norm (OLMo 2)" -> "reordered norm")."""
    title = _(PLACEMENT_TITLES[placement])
    return title if with_models else re.split(r" ?[(（]", title)[0]


NORM, SUBLAYER = "Norm", "F"
_MATH = {NORM: r"\mathrm{Norm}", SUBLAYER: "F"}
_FILL = {NORM: ORANGE, SUBLAYER: SKY_BLUE}
_STREAM, _WIRE, _WARN = BLUE, DARK_GREY, VERMILLION


@dataclass(frozen=True)
class SublayerLayout:
    """One sub-layer of a block: the modules on its branch, in call order, and those on the highway after it."""

    branch: tuple[str, ...]  # e.g. ("Norm", "F")
    highway: tuple[str, ...]  # e.g. ("Norm",) for Post-LN, () otherwise

    @property
    def equation(self) -> str:
        """The sub-layer as a formula, composed from the layout: ("Norm", "F") and () give x + F(Norm(x))."""
        term = "x"
        for name in self.branch:
            term = f"{_MATH[name]}({term})"
        out = f"x + {term}"
        for name in self.highway:
            out = f"{_MATH[name]}({out})"
        return out

    @property
    def plain_equation(self) -> str:
        """The same formula without LaTeX, for alt text: x + F(Norm(x))."""
        return self.equation.replace(r"\mathrm{Norm}", "Norm")


class _BlockTracer(torch.fx.Tracer):
    """Records the Block's own children (norms, attention, MLP) as single calls, without looking inside them."""

    def is_leaf_module(self, module, qualified_name: str) -> bool:
        return "." not in qualified_name or super().is_leaf_module(module, qualified_name)


_SUBLAYERS = ("attn", "mlp")  # the Block's children that are sub-layers (F in the picture); its norms are "norm*"


def block_layouts(placement: Placement) -> list[SublayerLayout]:
    """The layout of each sub-layer (attention, then the MLP) of a Block with this placement, read from its code.

    Each addition in the graph closes one sub-layer: of its two inputs, the one that went through F is the branch,
    the other the stream. The module calls between one addition and the next input of the stream are what the
    previous sub-layer left on the highway."""
    block = Block(GPTConfig(n_layer=1, d_model=8, n_head=2, placement=placement))
    graph = _BlockTracer().trace(block)
    adds = [n for n in graph.nodes if n.op == "call_function" and n.target in (torch.add, operator.add)]
    output = next(n for n in graph.nodes if n.op == "output")
    stream = next(n for n in graph.nodes if n.op == "placeholder")
    layouts: list[SublayerLayout] = []
    before: tuple[str, ...] | None = None
    for add in adds:
        left, right = _input(add, 0), _input(add, 1)
        branch_end, stream_in = (right, left) if _is_branch(right) else (left, right)
        if before is not None:  # what the previous sub-layer left on the highway
            layouts.append(SublayerLayout(before, tuple(_chain(stream_in, stream, placement))))
        before = tuple(_chain(branch_end, stream_in, placement))
        stream = add
    if before is None:
        raise ValueError(f"Block({placement!r}) adds no sub-layer to the stream")
    layouts.append(SublayerLayout(before, tuple(_chain(_input(output, 0), stream, placement))))
    return layouts


def _module_kind(node: torch.fx.Node, placement: str) -> str:
    """What a module call of the Block is in the picture: F (attention or the MLP) or Norm."""
    if isinstance(node.target, str) and node.target in _SUBLAYERS:
        return SUBLAYER
    if str(node.target).startswith("norm"):
        return NORM
    raise ValueError(f"Block({placement!r}) calls {node.target!r}, which the diagram does not know")


def _chain(end: torch.fx.Node, start: torch.fx.Node, placement: str) -> list[str]:
    """The module calls on the way from `start` to `end`, each reading the one before (oldest first)."""
    names: list[str] = []
    while end is not start:
        if end.op != "call_module" or len(end.args) != 1:
            raise ValueError(f"Block({placement!r}): expected a chain of module calls, found {end.op} {end.target}")
        names.append(_module_kind(end, placement))
        end = _input(end, 0)
    return names[::-1]


def _is_branch(node: torch.fx.Node) -> bool:
    """True when the value passed through attention or the MLP on its way here."""
    while node.op == "call_module":
        if node.target in _SUBLAYERS:
            return True
        node = _input(node, 0)
    return False


def _input(node: torch.fx.Node, i: int) -> torch.fx.Node:
    """The node that computes `node`'s i-th argument (an error for a constant: the diagram draws only wires)."""
    arg = node.args[i]
    if not isinstance(arg, torch.fx.Node):
        raise ValueError(f"{node.op} {node.target}: argument {i} is {arg!r}, not the output of another call")
    return arg


def sublayer_layout(placement: Placement) -> SublayerLayout:
    """The layout shared by both sub-layers of a Block with this placement (an error if they differ)."""
    attention, mlp = block_layouts(placement)
    if attention != mlp:
        raise ValueError(f"{placement!r}: attention {attention} and MLP {mlp} differ; one picture cannot show both")
    return attention


def describe_placements(placements: Sequence[Placement]) -> str:
    """Alt text for draw_placements: each placement's name and equation, read from the model's code."""
    parts = [
        _("{title}: {equation}").format(title=placement_title(p), equation=sublayer_layout(p).plain_equation)
        for p in placements
    ]
    on_stream = [placement_title(p, with_models=False) for p in placements if sublayer_layout(p).highway]
    if not on_stream:
        where = _("None of them puts a norm on the stream itself: it stays a plain sum")
    elif len(on_stream) == len(placements):
        where = _("Each puts a norm on the stream itself")
    else:
        where = _("Only {names} puts a norm on the stream itself; the others leave it a plain sum").format(
            names=_(", ").join(on_stream)
        )
    return _(
        "One residual sub-layer per placement, the stream as a thick vertical arrow with F on a side branch; "
        "{equations}. {where}."
    ).format(equations=_("; ").join(parts), where=where)


def _box(ax, x, y, name, edge="black", lw=1.0):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - 1, y - 0.45), 2, 0.9, boxstyle="round,pad=0.1", fc=_FILL[name], ec=edge, lw=lw))
    ax.text(x, y, name, ha="center", va="center", fontsize=11, weight="bold", zorder=4)


def _arrow(ax, start, end, lw=1.5, color=_WIRE, bend=None):
    style = dict(arrowstyle="-|>", lw=lw, color=color)
    if bend:
        style["connectionstyle"] = bend
    ax.annotate("", xy=end, xytext=start, arrowprops=style)


def _panel(ax, title: str, layout: SublayerLayout) -> None:
    """One sub-layer: the highway up the left (x = 2), the branch on the right (x = 6), the + where they meet."""
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.axis("off")
    ax.set_title(f"{title}\n${layout.equation}$", fontsize=11)
    highway_x, branch_x, plus_y, fork_y = 2, 6, 6.4, 1.2

    # the branch: fork off the stream, up through its boxes (in call order, bottom to top), back into the +
    step = 1.5
    ys = [3.8 - step * (len(layout.branch) - 1) / 2 + step * k for k in range(len(layout.branch))]
    _arrow(ax, (highway_x, fork_y), (branch_x, ys[0] - 0.55), bend="angle,angleA=0,angleB=90")
    for k, (y, name) in enumerate(zip(ys, layout.branch)):
        _box(ax, branch_x, y, name)
        if k:
            _arrow(ax, (branch_x, ys[k - 1] + 0.55), (branch_x, y - 0.55))
    _arrow(ax, (branch_x, ys[-1] + 0.55), (highway_x + 0.35, plus_y), bend="angle,angleA=90,angleB=0")

    # the highway: the stream, the +, then whatever sits on the stream itself
    top = 9.3
    ys_on = [plus_y + 1.55 + 1.1 * k for k in range(len(layout.highway))]
    _arrow(ax, (highway_x, 0.4), (highway_x, ys_on[0] - 0.55 if ys_on else top), lw=5, color=_STREAM)
    for k, (y, name) in enumerate(zip(ys_on, layout.highway)):
        _box(ax, highway_x, y, name, edge=_WARN, lw=2.5)
        if k == 0:
            ax.text(highway_x + 1.3, y, _("on the highway"), fontsize=10, color=_WARN, va="center")
    if ys_on:
        _arrow(ax, (highway_x, ys_on[-1] + 0.55), (highway_x, top), lw=5, color=_STREAM)
    else:
        ax.text(highway_x + 0.6, 8.2, _("identity path:\nnothing but sums"), fontsize=10, color=_STREAM)
    ax.add_patch(_circle(highway_x, plus_y))
    ax.text(highway_x, plus_y, "+", ha="center", va="center", fontsize=14, zorder=4)
    ax.text(highway_x, 0.05, _("x (residual stream)"), ha="center", fontsize=10)
    ax.text(highway_x, 9.55, _("to the next sub-layer"), ha="center", fontsize=10)


def _circle(x, y):
    import matplotlib.pyplot as plt

    return plt.Circle((x, y), 0.35, fc="white", ec="black", zorder=3)


def draw_placements(placements: Iterable[Placement] = ("pre", "post", "peri", "reordered")) -> Figure:
    """One panel per placement (names as GPTConfig spells them), each drawn from the Block's traced forward.

    Returns the matplotlib Figure; show it with course_utils.figures.show and describe_placements' alt text.
    """
    import matplotlib.pyplot as plt

    placements = tuple(placements)
    fig, axes = plt.subplots(1, len(placements), figsize=(3.75 * len(placements), 4.8), squeeze=False)
    for ax, placement in zip(axes[0], placements):
        _panel(ax, placement_title(placement), sublayer_layout(placement))
    fig.tight_layout()
    return fig
