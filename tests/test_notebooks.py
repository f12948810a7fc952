"""Notebook hygiene, the strictness of the nbval set-up, and deterministic `make execute`.

(nbval itself, run by the same `pytest`, re-executes every notebook and compares each stored output.)
"""
import json
import re
import shutil
import subprocess
import sys

import pytest

from course_utils import nbtools

from conftest import ROOT, all_notebooks

MACHINE_PATH = re.compile(r"(?<![\w.:/])/(?:root|home|Users|work|tmp|private|opt|usr|var|mnt|srv)/[\w.-]+/")
NOTEBOOKS = all_notebooks()


def output_text(out):
    if "text" in out:
        return out["text"]
    return "".join(str(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_hygiene(path):
    nb = nbtools.read(path)
    counts = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"cell {i} was never executed: run `make execute`"
        counts.append(cell.execution_count)
        for out in cell.outputs:
            assert out.output_type != "error", f"cell {i} stores an error: {out.get('ename')}"
            assert not MACHINE_PATH.search(output_text(out)), f"cell {i} shows a machine-specific path"
            assert "application/vnd.jupyter.widget-view+json" not in out.get("data", {}), f"cell {i} stores a widget id"
        lines = cell.source.rstrip().splitlines()
        assert not ("plt." in cell.source and lines and lines[-1].endswith(";")), f"cell {i}: end plots with plt.show()"
    assert counts == list(range(1, len(counts) + 1)), "execution counts must be 1..N: run `make execute`"
    assert path.stat().st_size < 2_000_000
    assert "widgets" not in nb.metadata
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_chapters_exist_in_order():
    names = [p.name for p in sorted((ROOT / "chapters").glob("*.ipynb"))]
    assert names[:2] == ["00_welcome.ipynb", "01_layernorm_by_hand.ipynb"]


def nbval(paths, cwd):
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
           "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"), "-o", "addopts=", "-o", "testpaths=",
           "--rootdir", str(cwd), *map(str, paths)]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_editing_a_stored_output_fails_nbval(tmp_path):
    src = ROOT / "chapters" / "01_layernorm_by_hand.ipynb"
    nb = json.loads(src.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and any("range:" in "".join(o.get("text", "")) for o in c["outputs"]))
    out = next(o for o in cell["outputs"] if "range:" in "".join(o.get("text", "")))
    original = "".join(out["text"])
    assert "[-1.57, 1.60]" in original
    out["text"] = original.replace("[-1.57, 1.60]", "[-1.57, 1.61]")
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters")
    edited = tmp_path / "chapters" / src.name
    edited.write_text(json.dumps(nb))
    result = nbval([edited], tmp_path)
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1.61" in result.stdout and "1 failed" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chapters/00_welcome.ipynb", "chapters/01_layernorm_by_hand.ipynb"])
def test_a_second_execute_changes_nothing(tmp_path, name):
    src = ROOT / name
    copy = tmp_path / src.parent.name / src.name
    copy.parent.mkdir()
    shutil.copy(src, copy)
    nbtools.execute(copy)
    assert json.loads(copy.read_text()) == json.loads(src.read_text())
