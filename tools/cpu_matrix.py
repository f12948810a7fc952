"""The CPU matrix: the course's training notebooks under other CPU kernels, thread counts and seeds.

    python tools/cpu_matrix.py list                 # the cells of the matrix and what each one sets
    python tools/cpu_matrix.py check [CELL...]      # strict nbval over the training notebooks, once per cell
    python tools/cpu_matrix.py measure [--cells A,B] [--seeds 0-4] [--notebooks chapters/05_x.ipynb,...]
                                                    # every claim's margin in every cell and seed -> a JSON lines file
    python tools/cpu_matrix.py report FILE...       # docs/numerics.md's table from what `measure` wrote

Why. A learner's CPU is not ours. PyTorch picks its vectorized kernels by CPU (ATen's `default`, `avx2` or `avx512`
code), MKL picks its matrix-multiply kernels by CPU and vendor, and oneDNN its own; each adds the same numbers in
another order, so results differ in their last bits, and training amplifies those bits. On one machine these
switches make the others' arithmetic (measured here: `torch.randn`, LayerNorm, softmax and the matrix products all
change their last bits between the cells):

* `ATEN_CPU_CAPABILITY=default|avx2|avx512` chooses ATen's kernels;
* `MKL_ENABLE_INSTRUCTIONS` and `ONEDNN_MAX_CPU_ISA` cap MKL's and oneDNN's instruction sets (on an AMD CPU, MKL
  ignores the cap for fp32 matrix products: on the machine that made the course they changed nothing);
* `MKL_CBWR=COMPATIBLE` makes MKL use its portable kernels: another order of sums in every matrix product, which
  stands in for the kernels MKL runs on an Intel CPU;
* `OMP_NUM_THREADS` sets torch's thread count (the chapters train on one thread; other cells use torch's default).

What it cannot stand for: ARM CPUs (Apple M-series: NEON kernels and Apple's Accelerate, not MKL) and GPUs. Their
arithmetic differs too; the claims' margins (docs/numerics.md) are what protects a learner there, and a claim that
fails anyway prints ✗ with an explanation instead of raising (course_utils/claims.py).

`check` is the test (tests/test_cpu_matrix.py, run by `.ci/run`): every compared output equal to the stored one and
every claim holding, in every cell. `measure` is the research behind the thresholds: it executes the notebooks with
`SEED = 0` replaced by other seeds as well (and the multi-seed loops of chapters 03 and 04, which run seeds 0-2, also
widened to seeds 0-4),
lets claims fail without stopping (COURSE_STRICT_CLAIMS=0), and logs every claim's value, bound and margin.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> environment. "native" is the machine's own choice of kernels with torch's default thread count: what
# `make test` runs. The others are the matrix proper.
CELLS = {
    "native": {},
    "default-1": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "OMP_NUM_THREADS": "1",
    },
    "avx2-4": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OMP_NUM_THREADS": "4",
    },
    "avx512-cnr-2": {
        "ATEN_CPU_CAPABILITY": "avx512",
        "MKL_ENABLE_INSTRUCTIONS": "AVX512",
        "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
        "MKL_CBWR": "COMPATIBLE",
        "OMP_NUM_THREADS": "2",
    },
    "avx2-cnr-1": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_CBWR": "COMPATIBLE",
        "OMP_NUM_THREADS": "1",
    },
    "default-cnr-4": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "MKL_CBWR": "COMPATIBLE",
        "OMP_NUM_THREADS": "4",
    },
}
# The cells `check` runs by default (CI): each ATen kernel family once, each of 1, 2 and 4 threads once, and MKL's
# other kernels once. `make test` is the native cell.
CHECKED = ("default-1", "avx2-4", "avx512-cnr-2")

# The notebooks that train or time anything, both editions (the Japanese ones share the English ones' runs through
# the run cache, so they cost little more than their plotting).
ENGLISH = [
    *(f"chapters/{n}" for n in ("01_layernorm_by_hand.ipynb", "02_rmsnorm_by_hand.ipynb")),
    *(f"chapters/{n}" for n in ("03_batchnorm_vs_layernorm.ipynb", "04_pre_ln_vs_post_ln.ipynb")),
    *(f"chapters/{n}" for n in ("05_qk_norm_attention.ipynb", "06_real_model_recipes.ipynb")),
    *(f"solutions/{n}" for n in ("ex03_batchnorm.ipynb", "ex04_residual_norms.ipynb")),
    *(f"solutions/{n}" for n in ("ex05_qk_norm.ipynb", "ex06_recipes.ipynb")),
]
NOTEBOOKS = ENGLISH + [f"ja/{n}" for n in ENGLISH]

# `measure`: how a notebook runs at another seed. SEED is the chapters' own knob; chapters 03 and 04 already
# average or assert over seeds 0-2: they are measured as stored and once with their loops widened to seeds 0-4.
SEEDED = {
    "chapters/05_qk_norm_attention.ipynb": [("SEED = 0", "SEED = {seed}")],
    "chapters/06_real_model_recipes.ipynb": [("SEED = 0", "SEED = {seed}")],
}
WIDENED = {
    "chapters/03_batchnorm_vs_layernorm.ipynb": [("for seed in range(3):", "for seed in range(5):")],
    "chapters/04_pre_ln_vs_post_ln.ipynb": [
        ("RUN_SEEDS = 3e-3, 120, 60, range(3)", "RUN_SEEDS = 3e-3, 120, 60, range(5)")
    ],
}


SITE = Path(__file__).resolve().parent / "cpu_matrix_site"  # sets torch's thread count (its sitecustomize.py)


def environment(cell: str, **extra) -> dict:
    """This process's environment with the cell's switches (and without a COURSE_ variable the cell must not
    inherit from the shell: the tests' run cache, a language). OMP_NUM_THREADS also sets torch's thread count,
    through cpu_matrix_site/sitecustomize.py: torch alone would not take more threads than there are cores."""
    dropped = ("COURSE_RUN_CACHE", "COURSE_LANG")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("PYTEST_")}
    env.update(CELLS[cell])
    if "OMP_NUM_THREADS" in env and cell != "native":
        env["COURSE_TORCH_THREADS"] = env["OMP_NUM_THREADS"]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


# ------------------------------------------------------------------------------------------------------------------
# check: strict nbval in each cell
# ------------------------------------------------------------------------------------------------------------------
def check(cell: str, notebooks=NOTEBOOKS, jobs: int = 2, log: Path | None = None, timeout: int = 1500):
    """Strict nbval over `notebooks` in the cell's environment; returns the finished process (its stdout has
    every outcome, -rA). The claims log, when given, receives every claim's value and margin."""
    extra = {"COURSE_CLAIMS_LOG": str(log)} if log else {}
    cmd = [sys.executable, "-m", "pytest", "-q", "-rA", "-n", str(jobs), "--dist", "loadfile", *notebooks]
    return subprocess.run(
        cmd, cwd=ROOT, env=environment(cell, **extra), capture_output=True, text=True, timeout=timeout
    )


# ------------------------------------------------------------------------------------------------------------------
# measure: every claim in every cell and seed
# ------------------------------------------------------------------------------------------------------------------
def variants(notebook: str, seeds) -> list[tuple[str, list]]:
    """(label, replacements) for each way `notebook` is measured."""
    if notebook in SEEDED:
        return [(f"seed {s}", [(old, new.format(seed=s)) for old, new in SEEDED[notebook]]) for s in seeds]
    if notebook in WIDENED:
        return [("stored seeds", []), ("seeds 0-4", WIDENED[notebook])]
    return [("seed 0", [])]


def prepared_copy(notebook: str, replacements, folder: Path) -> Path:
    """A copy of the notebook in `folder`, its code edited (its kernel still starts in the notebook's own folder)."""
    import nbformat

    source = ROOT / notebook
    nb = nbformat.read(str(source), as_version=4)
    for old, new in replacements:
        hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
        if len(hits) != 1:
            raise SystemExit(f"{notebook}: expected one code cell with {old!r}, found {len(hits)}")
        hits[0].source = hits[0].source.replace(old, new)
    copy = folder / source.name
    nbformat.write(nb, str(copy))
    return copy


def execute_logged(copy: Path, cwd: Path, env: dict, timeout: int = 1800) -> list[str]:
    """Execute a notebook copy in a kernel started in `cwd` with `env` (errors do not stop it); returns the errors
    it met."""
    code = (
        "import sys, nbformat\n"
        "from nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "NotebookClient(nb, timeout=1500, kernel_name='python3', allow_errors=True,\n"
        "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
        "errors = [c.get('id', '?') + ' ' + o.get('ename', '') + ': ' + o.get('evalue', '')[:300]\n"
        "          for c in nb.cells if c.cell_type == 'code' for o in c.outputs if o.output_type == 'error']\n"
        "print('\\n'.join(errors))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(copy), str(cwd)], env=env, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode:
        return [f"the notebook did not run: {done.stderr[-500:]}"]
    return [line for line in done.stdout.splitlines() if line.strip()]


def measure(cells, seeds, notebooks, out: Path) -> None:
    """Append one JSON line per claim per (cell, notebook, variant) to `out`."""
    for cell in cells:
        with tempfile.TemporaryDirectory(prefix=f"matrix-{cell}-") as tmp:
            folder = Path(tmp)
            cache = folder / "run-cache"  # one cell's runs are shared between its notebooks, never across cells
            for notebook in notebooks:
                for label, replacements in variants(notebook, seeds):
                    log = folder / "claims.jsonl"
                    log.unlink(missing_ok=True)
                    copy = prepared_copy(notebook, replacements, folder)
                    env = environment(
                        cell,
                        COURSE_DEVICE="cpu",
                        PYTHONHASHSEED="0",
                        COURSE_STRICT_CLAIMS="0",
                        COURSE_CLAIMS_LOG=str(log),
                        COURSE_RUN_CACHE=str(cache),
                    )
                    start = time.perf_counter()
                    try:
                        errors = execute_logged(copy, (ROOT / notebook).parent, env)
                    finally:
                        copy.unlink(missing_ok=True)
                    seconds = time.perf_counter() - start
                    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
                    with open(out, "a", encoding="utf-8") as sink:
                        for entry in entries:
                            entry.update(cell=cell, notebook=notebook, variant=label)
                            sink.write(json.dumps(entry) + "\n")
                        sink.write(
                            json.dumps(
                                {
                                    "run": True,
                                    "cell": cell,
                                    "notebook": notebook,
                                    "variant": label,
                                    "errors": errors,
                                    "seconds": round(seconds, 1),
                                    "claims": len(entries),
                                }
                            )
                            + "\n"
                        )
                    failed = sum(not e["holds"] for e in entries)
                    print(
                        f"{cell:14s} {notebook:40s} {label:9s} {len(entries):3d} claims, {failed} failed, "
                        f"{len(errors)} errors, {seconds:.0f} s",
                        flush=True,
                    )


# ------------------------------------------------------------------------------------------------------------------
# report: the tightest margin of every claim
# ------------------------------------------------------------------------------------------------------------------
STORED = ("seed 0", "stored seeds")  # the variants that run what the stored outputs ran


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float) and math.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:+.2f}"


def report(files) -> str:
    rows = []
    for name in files:
        rows += [json.loads(line) for line in Path(name).read_text().splitlines() if line.strip()]
    runs = [r for r in rows if r.get("run")]
    claims = [r for r in rows if not r.get("run")]
    by_claim = defaultdict(list)
    for c in claims:
        by_claim[(c["notebook"], c["key"], c["index"])].append(c)
    lines = [
        "| ch | claim | stored run's margin | tightest, stored seeds (cell) | tightest overall (cell, seeds) | holds |",
        "|---|---|---|---|---|---|",
    ]
    for (notebook, key, index), entries in sorted(by_claim.items()):
        text = entries[0]["text"].replace("|", "\\|")
        stored = next((e["margin"] for e in entries if e["cell"] == "native" and e["variant"] in STORED), None)
        at0 = [e for e in entries if e["variant"] in STORED]

        def tightest(group):
            numbered = [e for e in group if e["margin"] is not None]
            if not numbered:
                return None, ""
            worst = min(numbered, key=lambda e: e["margin"])
            return worst["margin"], f"{worst['cell']}, {worst['variant']}"

        def cell(margin, where):
            return f"{_fmt(margin)} ({where})" if where else _fmt(margin)

        m0, w0 = tightest(at0)
        m_all, w_all = tightest(entries)
        holds = sum(e["holds"] for e in entries)
        lines.append(
            f"| {Path(notebook).stem[:2]} | `{key}` {index + 1}: {text} | {_fmt(stored)} | {cell(m0, w0)} | "
            f"{cell(m_all, w_all)} | {holds}/{len(entries)} |"
        )
    errors = [r for r in runs if r["errors"]]
    n_runs = len({(r["cell"], r["notebook"], r["variant"]) for r in runs})
    summary = (
        f"{len(by_claim)} claims, {len(claims)} checks in {n_runs} "
        f"notebook runs over the cells {', '.join(sorted({r['cell'] for r in runs}))}; "
        f"{sum(not c['holds'] for c in claims)} checks failed; {len(errors)} runs met an error."
    )
    return summary + "\n\n" + "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    p_check = sub.add_parser("check")
    p_check.add_argument("cells", nargs="*", default=list(CHECKED))
    p_measure = sub.add_parser("measure")
    p_measure.add_argument("--cells", default=",".join(CELLS))
    p_measure.add_argument("--seeds", default="0-4")
    p_measure.add_argument("--notebooks", default=",".join(ENGLISH))
    p_measure.add_argument("--out", default="artifacts/cpu-matrix/claims.jsonl")
    p_report = sub.add_parser("report")
    p_report.add_argument("files", nargs="+")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name, env in CELLS.items():
            switches = " ".join(f"{k}={v}" for k, v in env.items()) or "(the machine's own kernels and threads)"
            print(f"{name:14s} {'checked ' if name in CHECKED else 'measured'} {switches}")
        return 0
    if args.command == "check":
        failed = 0
        for cell in args.cells:
            start = time.perf_counter()
            done = check(cell)
            tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
            print(f"{cell:14s} {time.perf_counter() - start:5.0f} s  {tail}", flush=True)
            failed += done.returncode != 0
            if done.returncode:
                print(done.stdout[-6000:])
        return 1 if failed else 0
    if args.command == "measure":
        first, _, last = args.seeds.partition("-")
        seeds = range(int(first), int(last or first) + 1)
        out = ROOT / args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        measure(args.cells.split(","), seeds, args.notebooks.split(","), out)
        return 0
    if args.command == "report":
        print(report(args.files))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
