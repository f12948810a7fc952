"""How fast the batch grader is: a class of 40 submissions, and what grading adds per notebook.

    python benchmarks/bench_grade.py [--submissions 40] [--jobs 2] [--repeat 5]

1. Throughput: 40 ex01 submissions (half solved, a quarter untouched, an eighth with a wrong
   layer_norm, an eighth with it renamed), graded by `python -m course_utils.grade --jobs 2` from the
   command line, as an instructor runs it (process start, kernel starts, the gradebook and the feedback
   files included), each kernel in its sandbox where bubblewrap runs. Target: under 180 s. Beside it,
   the same 40 notebooks executed plainly with nbclient, 2 at a time (fresh kernel + the notebook,
   nothing else), and the ratio of the two.
2. Overhead per submission, one at a time: grading one solved notebook (reading it, a fresh kernel +
   `import torch` + the notebook + the graded calls + the comparison) against executing the same
   notebook plainly with nbclient (fresh kernel + the notebook), as a ratio (target: at most 1.10x; the
   median of --repeat interleaved runs); and how much of either is the kernel start plus `import torch`
   alone (a one-cell notebook).

Timings on a shared machine are inflated by whatever else runs there (the load average is printed);
the ratios are the figures to compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_utils.exercises import BEGIN, END, make_exercise  # noqa: E402
from course_utils.grading import sandbox  # noqa: E402

SANDBOXED, WHY_NOT = sandbox.available()  # the grader's default: each kernel in bubblewrap's sandbox

SOLUTION = ROOT / "solutions" / "ex01_layernorm.ipynb"


def solved():
    nb = nbformat.read(SOLUTION, as_version=4)
    for cell in nb.cells:
        cell.source = "\n".join(line for line in cell.source.splitlines() if line.strip() not in (BEGIN, END))
    nb.metadata["course"] = make_exercise(SOLUTION).metadata["course"]
    return nb


def wrong():
    nb = solved()
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("def layer_norm("):
            cell.source = cell.source.replace(
                "((x - mean) ** 2).mean(dim=-1, keepdim=True)",
                "((x - mean) ** 2).sum(dim=-1, keepdim=True) / (x.shape[-1] - 1)",
            )
    return nb


def renamed():
    nb = solved()
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("def layer_norm("):
            cell.source = cell.source.replace("def layer_norm(", "def my_layer_norm(", 1)
    return nb


def make_class(folder: Path, count: int) -> None:
    kinds = [solved, solved, make_exercise, wrong, solved, solved, make_exercise, renamed]
    for i in range(count):
        kind = kinds[i % len(kinds)]
        nb = kind(SOLUTION) if kind is make_exercise else kind()
        path = folder / f"learner{i:02d}" / "ex01_layernorm.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, str(path))


def plain_execute(path: Path) -> float:
    """nbclient's plain execution, on the grader's footing: the same kernel environment (one thread, CPU),
    a cell's error does not stop the run (as in the grader), and the kernel stopped at once at the end
    (nbclient's default waits for a graceful shutdown)."""
    from nbclient import NotebookClient

    from course_utils.grading.run import kernel_env

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(path.parent)}},
    ).execute(env=kernel_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def grade_one(path: Path) -> float:
    from course_utils.grading.run import Task, grade_submission

    task = Task(
        path=str(path),
        display=str(path),
        learner="bench",
        seed=12345,
        timeout=300,
        cell_timeout=60,
        known_exercises=("ex01_layernorm",),
        solutions=str(ROOT / "solutions"),
        sandbox=SANDBOXED,
    )
    start = time.perf_counter()
    result = grade_submission(task)
    seconds = time.perf_counter() - start
    assert result.status == "graded" and result.total == result.max, result
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        tmp = Path(tmp)
        make_class(tmp / "subs", args.submissions)
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "course_utils.grade",
                "subs",
                "--jobs",
                str(args.jobs),
                "--seed",
                "4242",
                "--out",
                "grades.csv",
                *([] if SANDBOXED else ["--no-sandbox"]),
            ],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        batch = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr)
            return 1
        rows = (tmp / "grades.csv").read_text(encoding="utf-8").splitlines()[1:]
        assert len(rows) == args.submissions
        notebooks = sorted((tmp / "subs").rglob("*.ipynb"))
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
            list(pool.map(plain_execute, notebooks))
        plain_batch = time.perf_counter() - start

        one = tmp / "one" / "ex01_layernorm.ipynb"
        one.parent.mkdir()
        nbformat.write(solved(), str(one))
        bare = tmp / "bare" / "import_torch.ipynb"
        bare.parent.mkdir()
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import torch")]), str(bare))
        grade_one(one), plain_execute(one)  # warm-up: imports in this process, file caches
        times = {"graded": [], "plain": [], "startup": []}
        for _ in range(args.repeat):  # interleaved, so that a busy moment on the machine hits all three
            times["graded"].append(grade_one(one))
            times["plain"].append(plain_execute(one))
            times["startup"].append(plain_execute(bare))
        graded, plain, startup = (statistics.median(times[k]) for k in ("graded", "plain", "startup"))

    load = ", ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    print(f"machine: {os.cpu_count()} CPUs, load average now {load} (1, 5, 15 min)")
    print(f"sandbox: {'bubblewrap, one per kernel' if SANDBOXED else f'none ({WHY_NOT})'}")
    verdict = "met" if batch < 180 else "MISSED"
    print(
        f"grading throughput: {args.submissions} submissions with --jobs {args.jobs} in {batch:.1f} s "
        f"({args.submissions / batch * 60:.1f} per minute, {batch / args.submissions:.2f} s each; "
        f"target under 180 s: {verdict}); the same notebooks executed plainly with nbclient, {args.jobs} at a "
        f"time: {plain_batch:.1f} s -> ratio {batch / plain_batch:.2f}x"
    )
    verdict = "met" if graded / plain <= 1.10 else "MISSED"
    print(
        f"one submission, one at a time: graded in {graded:.2f} s vs plain nbclient execution {plain:.2f} s "
        f"-> ratio {graded / plain:.2f}x ({graded - plain:+.2f} s for grading; target at most 1.10x: {verdict})"
    )
    print(
        f"of which kernel start + import torch (a one-cell notebook): {startup:.2f} s "
        f"({startup / plain:.0%} of the plain execution)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
