"""Notebook plumbing shared by `make execute`, the exercise generator, the tests and the grader.

    python -m course_utils.nbtools execute chapters/01_layernorm_by_hand.ipynb ...

executes each notebook in place, top to bottom, in a fresh kernel of this Python, and stores the
outputs deterministically: no timing metadata, no widget state, and no widget model ids (random
UUIDs). A widget output keeps its plain-text fallback, so a second execute changes nothing.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat

__all__ = ["read", "write", "execute", "strip_volatile", "code_cells"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def read(path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def write(nb, path) -> None:
    nbformat.write(nb, str(path))


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def strip_volatile(nb) -> nbformat.NotebookNode:
    """Remove what changes from run to run without meaning anything: widget ids and state, timings, and the
    Python patch version of the machine that ran it (language_info.version: 3.11.2 on Debian 12, 3.11.7 here)."""
    nb.metadata.pop("widgets", None)
    nb.metadata.get("language_info", {}).pop("version", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.outputs:
            data = out.get("data")
            if data and WIDGET_VIEW in data:
                data.pop(WIDGET_VIEW)
                if not data:
                    continue
            kept.append(out)
        cell.outputs = kept
    return nb


def execute(path, timeout: int = 600) -> float:
    """Execute a notebook in place (cwd = its folder); returns the seconds it took."""
    from nbclient import NotebookClient

    path = Path(path)
    nb = read(path)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        store_widget_state=False,
        coalesce_streams=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    write(strip_volatile(nb), path)
    return seconds


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "execute" or len(args) < 2:
        print("usage: python -m course_utils.nbtools execute NOTEBOOK...", file=sys.stderr)
        return 2
    for name in args[1:]:
        seconds = execute(name)
        print(f"executed {name} in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
