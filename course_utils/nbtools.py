"""Notebook plumbing shared by `make execute`, the exercise generator, the tests and the grader.

    python -m course_utils.nbtools execute chapters/01_layernorm_by_hand.ipynb ...

executes each notebook in place, top to bottom, in a fresh kernel of this Python, and stores the
outputs deterministically: no timing metadata, no widget state, and no widget model ids (random
UUIDs). A widget output keeps its plain-text fallback, so a second execute changes nothing.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import nbformat

from . import claims

__all__ = ["read", "write", "execute", "strip_volatile", "code_cells"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def read(path: str | os.PathLike[str]) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def write(nb: nbformat.NotebookNode, path: str | os.PathLike[str]) -> None:
    nbformat.write(nb, str(path))


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def strip_volatile(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
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


def execute(path: str | os.PathLike[str], timeout: int = 600) -> float:
    """Execute a notebook in place (cwd = its folder); returns the seconds it took.

    Its claims are strict (a claim that does not hold stops the execution: course_utils.claims), and the values
    they measured become the stored run's (course_utils/stored_claims.json), which a learner's ✗ is explained with.
    """
    path = Path(path)
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "claims.jsonl"
        with _environment({claims.STRICT_ENV: "1", claims.LOG_ENV: str(log), "PYTHONHASHSEED": "0"}):
            seconds = _execute(path, timeout)
        if log.exists() and _is_an_english_notebook_of_the_course(path):  # ja/ measures the same runs
            record_stored_claims(log.read_text(encoding="utf-8").splitlines())
    return seconds


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """os.environ with `values` set inside the block (a kernel started there inherits them), then as before."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def record_stored_claims(lines: Iterable[str], path: Path = claims.STORED) -> None:
    """Store the values of the claims in `lines` (JSON lines of a claims log) as the stored run's, by key."""
    stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    fresh: dict[str, dict[int, list[list[object]]]] = {}
    for line in lines:
        entry = json.loads(line)
        fresh.setdefault(entry["key"], {})[entry["index"]] = entry["values"]
    stored.update({key: [values[i] for i in sorted(values)] for key, values in fresh.items()})
    lines = [
        f"  {json.dumps(key)}: [\n" + ",\n".join(f"    {json.dumps(claim)}" for claim in claims_of_key) + "\n  ]"
        for key, claims_of_key in sorted(stored.items())
    ]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")  # one claim per line, for diffs


def _is_an_english_notebook_of_the_course(path: Path) -> bool:
    repo = claims.STORED.parent.parent
    return path.resolve().parent in (repo / "chapters", repo / "solutions")


def _execute(path: Path, timeout: int) -> float:
    from nbclient import NotebookClient

    nb = read(path)
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


def main(argv: Sequence[str] | None = None) -> int:
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
