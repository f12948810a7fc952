"""Small display helpers for the chapters: compare two tensors, show a function's source."""

from __future__ import annotations

import inspect

import torch

from .i18n import _

__all__ = ["cmp", "show_source"]


def cmp(name: str, ours: torch.Tensor, theirs: torch.Tensor, atol: float = 1e-5) -> bool:
    """Print whether two tensors are exactly equal, close (within atol), and their max difference.

    In the spirit of Karpathy's cmp(): one line that tells you how far apart two results are.
    Returns True when they are close.
    """
    a, b = ours.detach().double(), theirs.detach().double()
    if a.shape != b.shape:
        print(
            _("{name:<28s} | shapes differ: {ours} vs {theirs}").format(
                name=name, ours=tuple(a.shape), theirs=tuple(b.shape)
            )
        )
        return False
    exact = bool(torch.equal(ours.detach().cpu(), theirs.detach().cpu()))
    diff = float((a - b).abs().max()) if a.numel() else 0.0
    close = diff <= atol
    print(
        _("{name:<28s} | exact: {exact:5s} | close (atol {atol:.0e}): {close:5s} | max diff: {diff:.1e}").format(
            name=name, exact=str(exact), atol=atol, close=str(close), diff=diff
        )
    )
    return close


def show_source(obj) -> None:
    """Show the source of a function or class with syntax highlighting (plain text outside Jupyter)."""
    source = inspect.getsource(obj)
    try:
        from IPython.display import Code, display

        display(Code(source, language="python"))
    except ImportError:  # pragma: no cover
        print(source)
