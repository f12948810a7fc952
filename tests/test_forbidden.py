"""Forbidden shortcuts (issue 12): a task that asks learners to write a computation themselves rejects the
calls that would do it for them, in the learner's check and in the grader, whatever the spelling.

Before this, each of these got full marks in the notebook's check and in the grader:

    ex01 written with F.layer_norm, and with torch.var / torch.std          5/5
    ex01 calling course_utils.norms.layer_norm                              5/5
    ex05 calling checks.ex05.reference_qk_norm_attention (in its __all__)   8/8

What each task forbids is declared once, with its check (`FunctionCheck.forbidden`, checks/exNN.py).
The check finds a forbidden call two ways: a static scan of the function's source (and of the learner's
helpers it calls) and a runtime trace of what the call really runs (torch functions through a
TorchFunctionMode, Python functions such as the course's references through a profile hook). The grader
scans the submitted notebook in its own process and takes the kernel's trace as evidence.
"""

from __future__ import annotations

import csv
import json
import linecache
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F

import course_utils.norms
from course_utils.attention import RotaryEmbedding
from course_utils.checks import all_exercises, ex01, ex05, ex06, forbidden
from course_utils.checks.ex05 import reference_qk_norm_attention
from course_utils.exercises import BEGIN, END
from course_utils.norms import layer_norm as ln

from conftest import ROOT, completed

SENTENCE = "uses {}, which this task asks you to write yourself"


# ----------------------------------------------------------------------------------------------------
# the shortcuts of the issue, and their relatives, written as a learner would
# ----------------------------------------------------------------------------------------------------
def ln_functional(x, gamma=None, beta=None, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps)


def ln_torch_var(x, gamma=None, beta=None, eps=1e-5):
    y = (x - x.mean(-1, keepdim=True)) / torch.sqrt(torch.var(x, -1, keepdim=True, unbiased=False) + eps)
    return _affine(y, gamma, beta)


def ln_torch_std(x, gamma=None, beta=None, eps=1e-5):
    var = torch.std(x, -1, keepdim=True, unbiased=False) ** 2
    return _affine((x - x.mean(-1, keepdim=True)) / torch.sqrt(var + eps), gamma, beta)


def ln_course(x, gamma=None, beta=None, eps=1e-5):
    return course_utils.norms.layer_norm(x, gamma, beta, eps)


def ln_course_alias(x, gamma=None, beta=None, eps=1e-5):
    return ln(x, gamma, beta, eps)  # from course_utils.norms import layer_norm as ln


def ln_course_module(x, gamma=None, beta=None, eps=1e-5):
    return _loaded(course_utils.norms.LayerNorm(x.shape[-1], eps=eps), gamma, beta)(x)


def ln_torch_module(x, gamma=None, beta=None, eps=1e-5):
    return _loaded(torch.nn.LayerNorm(x.shape[-1], eps=eps), gamma, beta)(x)


def ln_obfuscated(x, gamma=None, beta=None, eps=1e-5):
    variance = getattr(torch, "v" + "ar")  # no scanner can read this: only the trace sees the call
    y = (x - x.mean(-1, keepdim=True)) / torch.sqrt(variance(x, -1, keepdim=True, unbiased=False) + eps)
    return _affine(y, gamma, beta)


def _my_variance(x):
    return x.var(-1, keepdim=True, unbiased=False)


def ln_through_a_helper(x, gamma=None, beta=None, eps=1e-5):
    y = (x - x.mean(-1, keepdim=True)) / torch.sqrt(_my_variance(x) + eps)
    return _affine(y, gamma, beta)


def ln_allowed(x, gamma=None, beta=None, eps=1e-5):
    """Not torch.var, not F.layer_norm: mean, sum, sqrt, rsqrt and pow only (this docstring names both)."""
    mean = torch.mean(x, dim=-1, keepdim=True)
    centred = x - mean
    variance = torch.Tensor.sum(centred.pow(2), dim=-1, keepdim=True) / x.shape[-1]  # torch.var would be n - 1
    y = centred * torch.rsqrt(variance + eps) * torch.sqrt(torch.tensor(1.0))
    label = "torch.nn.functional.layer_norm"  # a forbidden name in a string is only text
    assert label
    return _affine(y, gamma, beta)


def statistics_torch_var_std(x):
    return x.mean().item(), torch.var(x, unbiased=False).item(), torch.std(x, unbiased=False).item()


def statistics_allowed(x):
    mean = x.sum() / x.numel()
    variance = ((x - mean) ** 2).sum() / x.numel()
    return mean.item(), variance.item(), torch.sqrt(variance).item()


def _affine(y, gamma, beta):
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def _loaded(module, gamma, beta):
    with torch.no_grad():
        if gamma is not None:
            module.weight.copy_(gamma)
        if beta is not None:
            module.bias.copy_(beta)
    return module


def qk_reference(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head):
    return reference_qk_norm_attention(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head).float()


def qk_functional_attention(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head):
    return ex05.functional_attention(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head).float()


def gemma_norm_functional(x, w, eps=1e-6):
    return F.rms_norm(x.float(), x.shape[-1:], 1 + w.float(), eps).to(x.dtype)


def gemma_norm_course_module(x, w, eps=1e-6):
    norm = course_utils.norms.RMSNorm(x.shape[-1], eps=eps, plus_one=True)
    with torch.no_grad():
        norm.weight.copy_(w)
    return norm(x.float()).to(x.dtype)


def gemma_norm_torch_module(x, w, eps=1e-6):
    return _loaded(torch.nn.RMSNorm(x.shape[-1], eps=eps), 1 + w.float(), None)(x.float()).to(x.dtype)


def gemma_attention_sdpa(x, params, n_head):
    B, T, D = x.shape
    d_head = D // n_head
    rope = RotaryEmbedding(d_head, T)

    def heads(t):
        return t.view(B, T, n_head, d_head).transpose(1, 2)

    def norm(t, w):
        return t / torch.sqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + w)

    q = rope(norm(heads(x @ params["q_proj.weight"].T), params["q_norm.weight"]))
    k = rope(norm(heads(x @ params["k_proj.weight"].T), params["k_norm.weight"]))
    y = F.scaled_dot_product_attention(q, k, heads(x @ params["v_proj.weight"].T), is_causal=True)
    return y.transpose(1, 2).reshape(B, T, D) @ params["o_proj.weight"].T


def gemma_block_with_sdpa_attention(x, params, n_head):
    h = gemma_attention_sdpa(
        gemma_norm_allowed(x, params["input_layernorm.weight"]), ex06.attention_params(params), n_head
    )
    x = x + gemma_norm_allowed(h, params["post_attention_layernorm.weight"])
    h = ex06.mlp(gemma_norm_allowed(x, params["pre_feedforward_layernorm.weight"]), params)
    return x + gemma_norm_allowed(h, params["post_feedforward_layernorm.weight"])


def gemma_norm_allowed(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1 + w)


def gemma_attention_ex05_functional(x, params, n_head):
    p = params
    args = (p["q_proj.weight"], p["k_proj.weight"], p["v_proj.weight"], p["o_proj.weight"])
    return ex05.functional_attention(x, *args, 1 + p["q_norm.weight"], 1 + p["k_norm.weight"], n_head, n_head).float()


def gemma_attention_course_module(x, params, n_head):
    from course_utils.attention import CausalSelfAttention
    from course_utils.recipes import recipe_config

    layer = CausalSelfAttention(recipe_config("gemma3", d_model=x.shape[-1], n_head=n_head))
    layer.load_state_dict(params)
    return layer(x)


def gemma_block_course_module(x, params, n_head):
    from course_utils.model import Block
    from course_utils.recipes import recipe_config

    block = Block(recipe_config("gemma3", d_model=x.shape[-1], n_head=n_head))
    block.load_state_dict({ex06.BLOCK_KEYS[k]: v for k, v in params.items()})
    return block(x)


def gemma_block_reference(x, params, n_head):
    return ex06.reference_gemma3_block(x, params, n_head).to(x.dtype)


def gemma_block_functional(x, params, n_head):
    return ex06.functional_block(x, params, n_head).to(x.dtype)


SHORTCUTS = [
    # (check, learner function, the name the verdict must give)
    (ex01.LAYER_NORM_CHECK, ln_functional, "torch.nn.functional.layer_norm"),
    (ex01.LAYER_NORM_CHECK, ln_torch_var, "torch.var"),
    (ex01.LAYER_NORM_CHECK, ln_torch_std, "torch.std"),
    (ex01.LAYER_NORM_CHECK, ln_course, "course_utils.norms.layer_norm"),
    (ex01.LAYER_NORM_CHECK, ln_course_alias, "course_utils.norms.layer_norm"),
    (ex01.LAYER_NORM_CHECK, course_utils.norms.layer_norm, "course_utils.norms.layer_norm"),
    (ex01.LAYER_NORM_CHECK, ln_course_module, "course_utils.norms.LayerNorm"),
    (ex01.LAYER_NORM_CHECK, ln_torch_module, "torch.nn.LayerNorm"),
    (ex01.LAYER_NORM_CHECK, ln_obfuscated, "torch.var"),
    (ex01.LAYER_NORM_CHECK, ln_through_a_helper, "torch.Tensor.var"),
    (ex01.STATISTICS_CHECK, statistics_torch_var_std, "torch.var"),
    (ex05.QK_NORM_ATTENTION_CHECK, reference_qk_norm_attention, "course_utils.checks.ex05.reference_qk_norm_attention"),
    (ex05.QK_NORM_ATTENTION_CHECK, qk_reference, "course_utils.checks.ex05.reference_qk_norm_attention"),
    (ex05.QK_NORM_ATTENTION_CHECK, qk_functional_attention, "course_utils.checks.ex05.functional_attention"),
    (ex06.GEMMA_RMS_NORM_CHECK, gemma_norm_functional, "torch.nn.functional.rms_norm"),
    (ex06.GEMMA_RMS_NORM_CHECK, gemma_norm_course_module, "course_utils.norms.RMSNorm"),
    (ex06.GEMMA_RMS_NORM_CHECK, gemma_norm_torch_module, "torch.nn.RMSNorm"),
    (ex06.GEMMA_ATTENTION_CHECK, gemma_attention_sdpa, "torch.nn.functional.scaled_dot_product_attention"),
    (ex06.GEMMA_ATTENTION_CHECK, gemma_attention_ex05_functional, "course_utils.checks.ex05.functional_attention"),
    (ex06.GEMMA_ATTENTION_CHECK, gemma_attention_course_module, "course_utils.attention.CausalSelfAttention"),
    (ex06.GEMMA3_BLOCK_CHECK, gemma_block_course_module, "course_utils.model.Block"),
    (ex06.GEMMA3_BLOCK_CHECK, gemma_block_reference, "course_utils.checks.ex06.reference_gemma3_block"),
    (ex06.GEMMA3_BLOCK_CHECK, gemma_block_functional, "course_utils.checks.ex06.functional_block"),
    (ex06.GEMMA3_BLOCK_CHECK, gemma_block_with_sdpa_attention, "torch.nn.functional.scaled_dot_product_attention"),
]


@pytest.mark.parametrize(("check", "fn", "name"), SHORTCUTS, ids=[fn.__name__ for _, fn, _ in SHORTCUTS])
def test_the_learners_check_rejects_a_forbidden_call_and_names_it(check, fn, name, capsys):
    report = check(fn)
    printed = capsys.readouterr().out
    assert not report.passed, printed
    first = printed.splitlines()[0]
    assert first.startswith(f"❌ {check.name}: ") and SENTENCE.format(name) in printed, printed
    assert "Traceback" not in printed


@pytest.mark.parametrize(
    ("check", "fn"),
    [(ex01.LAYER_NORM_CHECK, ln_allowed), (ex01.STATISTICS_CHECK, statistics_allowed)],
    ids=["layer_norm", "statistics"],
)
def test_allowed_operations_and_forbidden_names_in_comments_or_strings_pass(check, fn):
    report = check.evaluate(fn)
    assert report.passed, report.text()


# ----------------------------------------------------------------------------------------------------
# no false positives: every solution's graded functions pass their checks
# ----------------------------------------------------------------------------------------------------
def _solution_namespace(path: Path) -> dict:
    """The solution notebook's imports and definitions, run as a learner's kernel would (each cell's source
    registered in linecache, as IPython does, so that inspect.getsource finds it); checks and long runs skipped."""
    nb = nbformat.read(path, as_version=4)
    namespace = {"__name__": "__main__"}
    for number, cell in enumerate(nb.cells):
        source = "\n".join(line for line in cell.source.splitlines() if line.strip() not in (BEGIN, END))
        if cell.cell_type != "code" or not re.search(r"^(import|from|def) ", source, re.M):
            continue
        filename = f"<{path.stem} cell {number}>"
        linecache.cache[filename] = (len(source), None, [line + "\n" for line in source.splitlines()], filename)
        exec(compile(source, filename, "exec"), namespace)
    return namespace


@pytest.mark.parametrize("exercise", all_exercises(), ids=lambda e: e.id)
def test_every_solution_passes_its_checks_with_no_forbidden_call(exercise):
    namespace = _solution_namespace(ROOT / "solutions" / f"{exercise.id}.ipynb")
    for kind, graded, check in exercise.items():
        if kind == "function":
            report = check.evaluate(namespace[graded.function])
            assert report.passed, report.text()


# ----------------------------------------------------------------------------------------------------
# the grader: the same shortcuts in submitted notebooks, graded by `python -m course_utils.grade`
# ----------------------------------------------------------------------------------------------------
EX01 = ROOT / "solutions" / "ex01_layernorm.ipynb"
EX05 = ROOT / "solutions" / "ex05_qk_norm.ipynb"
EX06 = ROOT / "solutions" / "ex06_recipes.ipynb"


def replace_def(nb, name: str, source: str):
    cell = next(c for c in nb.cells if c.cell_type == "code" and re.search(rf"^def {name}\(", c.source, re.M))
    cell.source = source
    return nb


def add_cell(nb, source: str, at: int):
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


LN_FUNCTIONAL = """\
import torch.nn.functional as F

def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps)
"""
STATISTICS_VAR_STD = """\
def statistics(x):
    return x.mean().item(), torch.var(x, unbiased=False).item(), torch.std(x, unbiased=False).item()
"""
LN_COURSE = """\
import course_utils.norms

def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return course_utils.norms.layer_norm(x, gamma, beta, eps)
"""
LN_ALIAS = """\
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return ln(x, gamma, beta, eps)
"""
LN_MODULE = """\
from course_utils import norms

def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    m = norms.LayerNorm(x.shape[-1], eps=eps)
    with torch.no_grad():
        if gamma is not None:
            m.weight.copy_(gamma)
        if beta is not None:
            m.bias.copy_(beta)
    return m(x)
"""
LN_OBFUSCATED = """\
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    variance = getattr(torch, "v" + "ar")(x, -1, keepdim=True, unbiased=False)
    y = (x - x.mean(-1, keepdim=True)) / torch.sqrt(variance + eps)
    return y if gamma is None else y * gamma + (0 if beta is None else beta)
"""
TRACE_DISABLED = """\
import sys
import torch.nn.functional as F
import torch.overrides

sys.setprofile = lambda *args: None                        # no profile hook can be installed,
torch.overrides.TorchFunctionMode.__enter__ = lambda self: self   # and no mode is ever pushed: the kernel's
torch.overrides.TorchFunctionMode.__exit__ = lambda self, *exc: None  # trace records nothing at all

def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps)
"""
QK_REFERENCE = """\
from course_utils.checks.ex05 import reference_qk_norm_attention

def qk_norm_attention(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head):
    return reference_qk_norm_attention(x, wq, wk, wv, wo, q_gain, k_gain, n_head, n_kv_head).float()
"""
NO_SWEEP = "def run_mini_sweep():\n    raise NotImplementedError()  # keeps this test short\n"
EX06_BLOCK = """\
from course_utils.model import Block
from course_utils.recipes import recipe_config
from course_utils.checks.ex06 import BLOCK_KEYS

def gemma3_block(x, params, n_head):
    block = Block(recipe_config("gemma3", d_model=x.shape[-1], n_head=n_head))
    block.load_state_dict({BLOCK_KEYS[k]: v for k, v in params.items()})
    return block(x)
"""


def without_recipe_sweep(nb):
    """Exercise 06 with its given sweep cells emptied (they train 6 runs; no graded item reads them)."""
    for cell in nb.cells:
        if cell.cell_type == "code" and ("stability_sweep(" in cell.source or "sweep_facts(sweep)" in cell.source):
            cell.source = "sweep = facts = None  # keeps this test short"
    return nb


def _submissions(subs: Path) -> dict:
    """{learner: (expected total, {column: expected points}, names the feedback must give)}."""
    expect = {}

    def put(learner, nb, name, total, points, names=()):
        path = subs / learner / name
        path.parent.mkdir(parents=True)
        nbformat.write(nb, str(path))
        expect[learner] = (total, points, names)

    ex01_name, ex05_name = "ex01_layernorm.ipynb", "ex05_qk_norm.ipynb"
    put("correct", completed(EX01), ex01_name, 5, {"ex01.layer_norm": 3, "ex01.statistics": 1})
    nb = replace_def(replace_def(completed(EX01), "layer_norm", LN_FUNCTIONAL), "statistics", STATISTICS_VAR_STD)
    put(
        "functional_and_var",
        nb,
        ex01_name,
        1,
        {"ex01.layer_norm": 0, "ex01.statistics": 0},
        ("torch.nn.functional.layer_norm", "torch.var"),
    )
    put(
        "course_norms",
        replace_def(completed(EX01), "layer_norm", LN_COURSE),
        ex01_name,
        2,
        {"ex01.layer_norm": 0},
        ("course_utils.norms.layer_norm",),
    )
    nb = add_cell(
        replace_def(completed(EX01), "layer_norm", LN_ALIAS), "from course_utils.norms import layer_norm as ln", 1
    )
    put("course_alias", nb, ex01_name, 2, {"ex01.layer_norm": 0}, ("course_utils.norms.layer_norm",))
    put(
        "course_module",
        replace_def(completed(EX01), "layer_norm", LN_MODULE),
        ex01_name,
        2,
        {"ex01.layer_norm": 0},
        ("course_utils.norms.LayerNorm",),
    )
    put(
        "obfuscated",
        replace_def(completed(EX01), "layer_norm", LN_OBFUSCATED),
        ex01_name,
        2,
        {"ex01.layer_norm": 0},
        ("torch.var",),
    )
    put(
        "trace_disabled",
        replace_def(completed(EX01), "layer_norm", TRACE_DISABLED),
        ex01_name,
        2,
        {"ex01.layer_norm": 0},
        ("torch.nn.functional.layer_norm",),
    )
    nb = replace_def(replace_def(completed(EX05), "qk_norm_attention", QK_REFERENCE), "run_mini_sweep", NO_SWEEP)
    put(
        "ex05_reference",
        nb,
        ex05_name,
        6,
        {"ex05.qk_norm_attention": 0, "ex05.softcap": 1, "ex05.attention_entropy": 2, "ex05.failure_threshold": 2},
        ("course_utils.checks.ex05.reference_qk_norm_attention",),
    )
    put(
        "ex06_course_block",
        replace_def(without_recipe_sweep(completed(EX06)), "gemma3_block", EX06_BLOCK),
        "ex06_recipes.ipynb",
        6,
        {"ex06.gemma_rms_norm": 2, "ex06.gemma_attention": 3, "ex06.gemma3_block": 0, "ex06.sweep": 1},
        ("course_utils.model.Block",),
    )
    return expect


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("forbidden")
    expect = _submissions(root / "subs")
    proc = subprocess.run(
        [sys.executable, "-m", "course_utils.grade", "subs", "--out", "out/grades.csv", "--jobs", "2", "--seed", "7"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(root / "out" / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {row["learner"]: row for row in csv.DictReader(f)}
    return {"root": root, "expect": expect, "rows": rows}


LEARNERS = ["correct", "functional_and_var", "course_norms", "course_alias", "course_module", "obfuscated"]
LEARNERS += ["trace_disabled", "ex05_reference", "ex06_course_block"]


@pytest.mark.slow
@pytest.mark.parametrize("learner", LEARNERS)
def test_the_grader_gives_no_points_for_a_forbidden_call_and_says_which(graded, learner):
    total, points, names = graded["expect"][learner]
    row = graded["rows"][learner]
    assert row["status"] == "graded", row
    assert {column: float(row[column]) for column in points} == points, row
    assert float(row["total"]) == total, row
    feedback = (graded["root"] / "out" / "feedback" / f"{learner}.md").read_text(encoding="utf-8")
    for name in names:
        assert SENTENCE.format(name) in feedback, feedback
        assert name in row["reason"], row["reason"]
    if not names:
        assert "write yourself" not in feedback and row["reason"] == "all checks passed"


# ----------------------------------------------------------------------------------------------------
# the static scan: the spellings it resolves, in the notebook (live objects) and in the grader (source)
# ----------------------------------------------------------------------------------------------------
HEAD = "import torch\n\n"
SIG = "def layer_norm(x, gamma=None, beta=None, eps=1e-5):\n"
SPELLINGS = {
    # what a cell holds: (the cells, the name the scan must report, whether the test may run it here)
    "from torch import var": (
        [HEAD + "from torch import var\n\n" + SIG + "    return var(x, -1)\n"],
        "torch.var",
        True,
    ),
    "import torch.nn.functional": (
        [
            HEAD
            + "import torch.nn.functional\n\n"
            + SIG
            + "    return torch.nn.functional.layer_norm(x, x.shape[-1:])\n"
        ],
        "torch.nn.functional.layer_norm",
        True,
    ),
    "the module's own path": (
        [HEAD + SIG + "    return torch.nn.modules.normalization.LayerNorm(x.shape[-1])(x)\n"],
        "torch.nn.LayerNorm",
        True,
    ),
    "an alias assigned in another cell": (
        ["from course_utils import norms\nln = norms.layer_norm\n", SIG + "    return ln(x)\n"],
        "course_utils.norms.layer_norm",
        True,
    ),
    "a module built in another cell": (
        [HEAD + "m = torch.nn.LayerNorm(4)\n", SIG + "    return m(x)\n"],
        "torch.nn.LayerNorm",
        True,
    ),
    "the graded name bound to the reference": (
        ["from course_utils.norms import layer_norm\n"],
        "course_utils.norms.layer_norm",
        True,
    ),
    "a local import": (
        [SIG + "    from course_utils.norms import layer_norm as ln\n    return ln(x)\n"],
        "course_utils.norms.layer_norm",
        True,
    ),
    "getattr with a constant": ([HEAD + SIG + '    return getattr(torch, "var")(x, -1)\n'], "torch.var", True),
    "__import__": ([SIG + '    return __import__("torch").var(x, -1)\n'], "torch.var", True),
    "a helper function": (
        ["def helper(x):\n    return x.std(-1)\n", SIG + "    return helper(x)\n"],
        "torch.Tensor.std",
        True,
    ),
    "a class of the learner's": (
        [
            HEAD + "import torch.nn.functional as F\n\nclass Norm(torch.nn.Module):\n"
            "    def forward(self, x):\n        return F.layer_norm(x, x.shape[-1:])\n",
            SIG + "    return Norm()(x)\n",
        ],
        "torch.nn.functional.layer_norm",
        True,
    ),
    "a subclass of a forbidden module": (
        [HEAD + "class MyNorm(torch.nn.LayerNorm):\n    pass\n", SIG + "    return MyNorm(x.shape[-1])(x)\n"],
        "torch.nn.LayerNorm",
        True,
    ),
    "numpy": (["import numpy as np\n\n" + SIG + "    return np.var(x.numpy(), axis=-1)\n"], "numpy.var", True),
    "a numpy method": ([SIG + "    return x.numpy().std(axis=-1)\n"], "torch.Tensor.std", True),
    "a line that never runs": ([HEAD + SIG + "    if False:\n        torch.var(x)\n    return x\n"], "torch.var", True),
    "torch patched in another cell": (
        [HEAD + "torch.mean = torch.var\n", SIG + "    return torch.mean(x, -1)\n"],
        "torch.var",
        False,
    ),
    "a cell with IPython magics": (
        [
            "%load_ext autoreload\n!echo hi\nimport torch.nn.functional as F\n",
            SIG + "    return F.layer_norm(x, (4,))\n",
        ],
        "torch.nn.functional.layer_norm",
        False,
    ),
}


def _run_cells(cells: list, tag: str) -> dict:
    """Run cells as a kernel would, each cell's source in linecache (as IPython registers it)."""
    namespace = {"__name__": "__main__"}
    for number, source in enumerate(cells):
        filename = f"<forbidden test {tag} cell {number}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)
    return namespace


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_the_static_scan_resolves_every_spelling_in_the_notebook_and_in_the_grader(spelling):
    cells, name, live = SPELLINGS[spelling]
    assert name in forbidden.notebook_hits(ex01.LAYER_NORM_CHECK, cells, "layer_norm")
    if live:
        fn = _run_cells(cells, spelling)["layer_norm"]
        assert name in forbidden.static_hits(ex01.LAYER_NORM_CHECK, fn)


NOT_FORBIDDEN = {
    "comments, docstrings and strings": [
        HEAD
        + SIG
        + '    """Not torch.var, not F.layer_norm."""\n'
        + "    mean = x.mean(-1, keepdim=True)  # torch.var(x) would divide by n - 1\n"
        + '    label = "torch.nn.functional.layer_norm"\n'
        + "    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps)\n"
    ],
    "a name rebound by the learner's own definition": [
        "from course_utils.norms import rms_norm, layer_norm\n",
        "def rms_norm(x, weight=None, eps=1e-6):\n    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)\n",
        HEAD + SIG + "    return rms_norm(x - x.mean(-1, keepdim=True), gamma, eps)\n",
    ],
    "a forbidden call outside the graded function": [
        HEAD + "print(torch.var(torch.tensor([4.0, 6.0, 2.0, 8.0])))  # exploring, not graded\n",
        SIG + "    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)\n",
    ],
}


@pytest.mark.parametrize("case", list(NOT_FORBIDDEN))
def test_the_static_scan_reports_nothing_for_text_rebound_names_and_other_cells(case):
    cells = NOT_FORBIDDEN[case]
    assert forbidden.notebook_hits(ex01.LAYER_NORM_CHECK, cells, "layer_norm") == []
    assert forbidden.static_hits(ex01.LAYER_NORM_CHECK, _run_cells(cells, case)["layer_norm"]) == []


def test_an_obfuscated_call_is_invisible_to_the_scan_and_caught_by_the_trace():
    assert forbidden.static_hits(ex01.LAYER_NORM_CHECK, ln_obfuscated) == []
    report = ex01.LAYER_NORM_CHECK.evaluate(ln_obfuscated)
    assert report.forbidden == ["torch.var"] and all(case.passed for case in report.cases)


def test_what_a_call_returns_is_invisible_to_the_scan_and_caught_by_the_trace():
    from course_utils.checks import ex04

    def pre_ln_block(x, params):
        return ex04.block_from_params(params, "pre")(x)  # the course's whole Block, built by a given helper

    assert forbidden.static_hits(ex04.PRE_LN_CHECK, pre_ln_block) == []
    report = ex04.PRE_LN_CHECK.evaluate(pre_ln_block)
    assert report.forbidden == ["course_utils.model.Block"] and all(case.passed for case in report.cases)


def test_a_call_made_in_another_thread_is_traced_and_marked_for_review():
    """A thread started inside the traced call runs with the trace's profile hook (threading.setprofile): its
    C-level call of torch.var is recorded, and the item is marked for review, since the torch modes do not
    reach into threads."""
    import threading

    def in_a_thread(x, gamma=None, beta=None, eps=1e-5):
        box = {}
        variance = getattr(torch, "v" + "ar")
        worker = threading.Thread(target=lambda: box.update(v=variance(x, -1, keepdim=True, unbiased=False)))
        worker.start()
        worker.join()
        return _affine((x - x.mean(-1, keepdim=True)) / torch.sqrt(box["v"] + eps), gamma, beta)

    report = ex01.LAYER_NORM_CHECK.evaluate(in_a_thread)
    assert not report.passed and report.forbidden == ["torch.var"] and report.review == ["threads"]
    assert "Not verified" in report.text()


def test_every_solution_notebook_is_clean_for_the_graders_scan():
    for exercise in all_exercises():
        nb = completed(ROOT / "solutions" / f"{exercise.id}.ipynb")
        sources = [cell.source for cell in nb.cells if cell.cell_type == "code"]
        for kind, graded, check in exercise.items():
            if kind == "function":
                assert forbidden.notebook_hits(check, sources, graded.function) == [], (exercise.id, graded.function)


def test_a_kernel_that_disables_its_trace_is_still_caught_by_the_graders_scan(monkeypatch):
    import torch.overrides

    monkeypatch.setattr(sys, "setprofile", lambda *args: None)
    monkeypatch.setattr(torch.overrides.TorchFunctionMode, "__enter__", lambda self: self)
    monkeypatch.setattr(torch.overrides.TorchFunctionMode, "__exit__", lambda self, *exc: None)
    with forbidden.trace_for(ex01.LAYER_NORM_CHECK) as trace:
        ln_functional(torch.randn(2, 4))
    # the Python and function-mode layers are gone, which their canaries show; the dispatch layer still sees
    # the ATen op ...
    assert trace.hits == ["aten::native_layer_norm"] and trace.tampered == ["tracing-off"]
    monkeypatch.undo()
    cells = ["import torch.nn.functional as F\n", TRACE_DISABLED]
    assert forbidden.notebook_hits(ex01.LAYER_NORM_CHECK, cells, "layer_norm") == ["torch.nn.functional.layer_norm"]


# ----------------------------------------------------------------------------------------------------
# the declarations, the trace, and the kernel's side
# ----------------------------------------------------------------------------------------------------
def test_every_declared_name_resolves_and_every_task_forbids_its_reference():
    for exercise in all_exercises():
        for kind, graded, check in exercise.items():
            if kind != "function":
                continue
            index = forbidden.index_for(check.forbidden, check.reference)
            declared = check.forbidden.calls if check.forbidden else ()
            assert [n for n in declared if n not in index.names] == [], graded.check
            assert index.match(check.reference), graded.check
            assert check.forbidden is not None and check.forbidden.hint and check.forbidden.why, graded.check


def test_the_trace_leaves_nothing_behind_and_changes_no_result():
    from torch.overrides import _get_current_function_mode_stack  # noqa: PLC2701 (no public way to see the active modes)

    x = torch.randn(3, 5)
    with forbidden.trace_for(ex01.LAYER_NORM_CHECK) as trace:
        y = ln_torch_var(x)
    assert sys.getprofile() is None and _get_current_function_mode_stack() == []
    assert torch.equal(y, ln_torch_var(x)) and trace.hits == ["torch.var", "aten::var"] and trace.tampered == []


def test_the_trace_leaves_a_profiler_it_finds_alone():
    def profiler(frame, event, arg):
        return None

    sys.setprofile(profiler)
    try:
        with forbidden.trace_for(ex01.LAYER_NORM_CHECK) as trace:
            ln_course(torch.randn(2, 4))  # a Python function: only the profile hook would see it
        assert sys.getprofile() is profiler and trace.hits == []
    finally:
        sys.setprofile(None)


def test_the_kernel_traces_each_call_and_the_judge_trusts_only_names_it_forbids(tmp_path):
    from course_utils.grading import kernel
    from course_utils.grading.judge import judge
    from course_utils.grading.run import kernel_request

    item = next(i for i in all_exercises()[0].items() if i.graded.check == "layer_norm")
    request, answer = tmp_path / "request.json", tmp_path / "answer.json"
    request.write_text(json.dumps(kernel_request(item.kind, item.check, 3)), encoding="utf-8")
    kernel.call_learner_function({"layer_norm": ln_obfuscated}, "layer_norm", str(request), str(answer))
    sent = json.loads(answer.read_text(encoding="utf-8"))
    assert sent["status"] == "ok" and sent["trace"] == ["torch.var", "aten::var"] and sent["tampered"] == []
    assert judge(item.kind, item.graded, item.check, sent, 3).forbidden == ["torch.var"]
    sent["trace"] = ["os.system", 42, "torch.var"]  # a forged trace: unknown keys are dropped
    assert judge(item.kind, item.graded, item.check, sent, 3).forbidden == ["torch.var"]
    sent["trace"] = []  # a kernel that hid its calls: the grader's scan still decides
    report = judge(item.kind, item.graded, item.check, sent, 3, forbidden=["torch.var"])
    assert not report.passed and SENTENCE.format("torch.var") in report.text()


def test_the_overhead_of_a_check_stays_small():
    start = time.perf_counter()
    for _ in range(5):
        assert ex01.LAYER_NORM_CHECK.evaluate(ln_allowed).passed
    assert (time.perf_counter() - start) / 5 < 0.5


def test_the_trace_does_not_import_torch_dynamo():
    """A dispatch mode's first op imports torch._dynamo (1.4 s in every kernel, and in every learner's first
    check) unless the trace tells torch's wrapper that nothing is compiled here."""
    code = (
        "import sys, torch\n"
        "from course_utils.tracing import CallTrace\n"
        "with CallTrace({'ops': ['aten::var'], 'python': ['x.y'], 'c': ['torch.var']}) as t:\n"
        "    torch.ones(3).var()\n"
        "print(t.hits, t.tampered, 'torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "['aten::var'] [] False", out.stderr[-2000:]
