"""The learner's environment: one seed helper, the device choice (with its reason) and a version report."""

from __future__ import annotations

import os
import platform
import random
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from .display import pad, text_width
from .i18n import N_, _

__all__ = [
    "torch_threads",
    "seed_everything",
    "pick_device",
    "device_reason",
    "environment_report",
    "format_environment",
    "release",
    "course_releases",
]


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run torch on n CPU threads inside the block (None: leave as is), and restore the setting after it.

    Small models are as fast on one thread as on several, and one thread makes their float sums come out the
    same on every machine of the same CPU kind: the stored outputs of the training chapters rely on it.
    Usable as a decorator too: @torch_threads(1).
    """
    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy (if present) and torch (CPU and every GPU) so reruns give the same numbers."""
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # pragma: no cover - numpy is pinned
        pass
    torch.manual_seed(seed)  # also seeds every CUDA device


def device_reason() -> tuple[str, str]:
    """(device name, why) following cuda > mps > cpu; COURSE_DEVICE=cpu|cuda|mps overrides the choice."""
    forced = os.environ.get("COURSE_DEVICE", "").strip().lower()
    if forced:
        if forced not in ("cpu", "cuda", "mps"):
            raise ValueError(f"COURSE_DEVICE must be cpu, cuda or mps, got {forced!r}")
        return forced, _("COURSE_DEVICE={device} is set in the environment").format(device=forced)
    if torch.cuda.is_available():
        return "cuda", _("a CUDA GPU is available ({name})").format(name=torch.cuda.get_device_name(0))
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps", _("no CUDA GPU, but Apple's Metal (MPS) backend is available")
    return "cpu", _("no CUDA GPU and no Apple MPS backend were found, so the CPU is used")


def pick_device() -> torch.device:
    """cuda if there is a CUDA GPU, else mps on Apple silicon, else cpu."""
    return torch.device(device_reason()[0])


def release(version: str) -> str:
    """A version without its local build tag: "2.13.0+cpu" -> "2.13.0".

    The part after "+" names how a package was built (torch: +cpu is the CPU-only build, +cu130 a CUDA 13.0
    build, and pip's default builds carry no tag), not which code it runs.
    """
    return str(version).split("+", 1)[0]


def course_releases() -> dict[str, str]:
    """The releases of the packages whose code makes the course's numbers: the same on every machine set up
    with `make` (they are pinned), whatever its operating system, Python patch version, torch build or device."""
    import ipywidgets
    import matplotlib
    import numpy

    return {
        "torch": release(torch.__version__),
        "numpy": release(numpy.__version__),
        "matplotlib": release(matplotlib.__version__),
        "ipywidgets": release(ipywidgets.__version__),
    }


def environment_report() -> dict[str, str]:
    """Versions and the picked device, as a dict (the welcome chapter prints what differs between machines)."""
    import matplotlib
    import numpy

    try:
        import ipywidgets

        widgets = ipywidgets.__version__
    except ImportError:  # pragma: no cover
        widgets = _("not installed")
    name, why = device_reason()
    return {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "matplotlib": matplotlib.__version__,
        "ipywidgets": widgets,
        "executable": sys.executable,
        "device": name,
        "why": why,
    }


# the welcome chapter's labels for environment_report()'s keys
REPORT_LABELS = {
    "python": N_("python"),
    "platform": N_("platform"),
    "torch": "torch",
    "device": N_("device"),
    "why": N_("why"),
}


def format_environment(
    report: dict[str, str], keys: Sequence[str] = ("python", "platform", "torch", "device", "why")
) -> str:
    """`report`'s values for `keys`, one a line, each after its label ("platform: Linux x86_64"), the labels
    right-aligned by display width and translated (the keys stay as they are: code reads them)."""
    labels = [_(REPORT_LABELS.get(key, key)) for key in keys]
    width = max(text_width(label) for label in labels)
    return "\n".join(f"{pad(label, width, '>')}: {report[key]}" for label, key in zip(labels, keys))
