"""How much does RMSNorm save over LayerNorm? Time both in one run and compare (chapter 02, `make bench`).

    python benchmarks/bench_norm_cost.py                       # (8, 512, 768) float32 on CPU
    python benchmarks/bench_norm_cost.py --shape 4 1024 4096 --rounds 40

LayerNorm needs two statistics per token (the mean, then the variance around it); RMSNorm needs one
(the mean of the squares). Two pairs are timed on the same activation tensor:

* torch's built-ins, `F.layer_norm` and `F.rms_norm`: what a model actually runs;
* the course's reference implementations, `course_utils.norms.layer_norm` and `.rms_norm`: the same
  style of code for both, so their ratio isolates what dropping the mean saves.

The calls are interleaved round by round (so a noisy neighbour slows all four alike) and each one's
median is reported. The ratio printed is time(LayerNorm) / time(RMSNorm): above 1 means RMSNorm is
cheaper. The script also lists the ATen operators each call dispatches, which explains the ratios:
a fused kernel reads the tensor once, a chain of elementwise operators reads and writes it per step.
Chapter 02 and benchmarks/bench_norm_cost.py both use this module.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F

from . import norms
from .display import text_table
from .i18n import N_, _

__all__ = ["measure_norm_cost", "aten_ops", "norm_calls", "format_report"]

# each pair's name is its key (what `pairs=` and the ratios use) and, translated, its row's label
PAIRS = {
    N_("torch built-ins"): ("F.layer_norm", "F.rms_norm"),
    N_("course reference"): ("norms.layer_norm", "norms.rms_norm"),
}


def norm_calls(x: torch.Tensor) -> dict[str, Callable[[], torch.Tensor]]:
    """The four calls to time, each a zero-argument function on the activation tensor x (..., D)."""
    d = x.shape[-1]
    weight = torch.ones(d, dtype=x.dtype, device=x.device)
    bias = torch.zeros(d, dtype=x.dtype, device=x.device)
    return {
        "F.layer_norm": lambda: F.layer_norm(x, (d,), weight, bias, 1e-5),
        "F.rms_norm": lambda: F.rms_norm(x, (d,), weight, 1e-6),
        "norms.layer_norm": lambda: norms.layer_norm(x, weight, bias, 1e-5),
        "norms.rms_norm": lambda: norms.rms_norm(x, weight, 1e-6),
    }


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_norm_cost(
    shape: tuple[int, ...] = (8, 512, 768),
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    rounds: int = 25,
    warmup: int = 3,
    seed: int = 0,
) -> dict[str, Any]:
    """Median seconds per call of each norm, and time(LayerNorm) / time(RMSNorm) for each pair.

    Returns {"shape", "dtype", "device", "threads", "rounds", "seconds": {call: median s},
    "ratios": {pair: LN time / RMS time}}.
    """
    device = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g).to(device=device, dtype=dtype)
    calls = norm_calls(x)
    times: dict[str, list[float]] = {name: [] for name in calls}
    with torch.inference_mode():
        for _round in range(warmup):
            for fn in calls.values():
                fn()
        _sync(device)
        for _round in range(rounds):
            for name, fn in calls.items():
                start = time.perf_counter()
                fn()
                _sync(device)
                times[name].append(time.perf_counter() - start)
    seconds = {name: statistics.median(ts) for name, ts in times.items()}
    ratios = {pair: seconds[ln] / seconds[rms] for pair, (ln, rms) in PAIRS.items()}
    return {
        "shape": tuple(shape),
        "dtype": dtype,
        "device": str(device),
        "threads": torch.get_num_threads(),
        "rounds": rounds,
        "seconds": seconds,
        "ratios": ratios,
    }


def aten_ops(fn: Callable[..., object], *args: Any, **kwargs: Any) -> list[str]:
    """The ATen operators one call of fn(*args) dispatches, in order (e.g. ['pow', 'mean', ...]).

    Uses torch's dispatch-mode hook (a debugging tool from torch.utils._python_dispatch): every operator
    that reaches a kernel is recorded by its name.
    """
    from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC2701 (torch's only home of the dispatch hook)

    class _Record(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with _Record() as record:
        fn(*args, **kwargs)
    return record.ops


def format_report(result: dict[str, Any], pairs: Iterable[str] | None = None) -> str:
    """The measurement as a small table: milliseconds per call and the ratios side by side.

    `pairs` picks the rows (names from PAIRS, e.g. ("course reference",)); all of them by default.
    """
    sec = result["seconds"]
    pairs = PAIRS if pairs is None else {pair: PAIRS[pair] for pair in pairs}
    lines = [
        _("activation {shape} {dtype} on {device}, {threads} thread(s), median of {rounds} interleaved rounds").format(
            shape=result["shape"],
            dtype=str(result["dtype"]).replace("torch.", ""),
            device=result["device"],
            threads=result["threads"],
            rounds=result["rounds"],
        )
    ]
    rows = [
        [
            _(pair),
            f"{sec[ln] * 1e3:.2f} ms",
            f"{sec[rms] * 1e3:.2f} ms",
            _("{ratio:.2f}x").format(ratio=result["ratios"][pair]),
        ]
        for pair, (ln, rms) in pairs.items()
    ]
    lines.append(text_table(["", "LayerNorm", "RMSNorm", "LN / RMS"], rows, align="<>>>"))
    return "\n".join(lines)
