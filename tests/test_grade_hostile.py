"""The grader against submissions that take a forbidden shortcut under another name, hide it from the trace or
from the scan, and against honest code that only looks like a shortcut (an audit's findings, and more of them).

Each hostile ex01 submission computes the variance of `statistics` and `layer_norm` with a ready-made function
(spelled as a learner who knows some torch or numpy would spell it), and answers the multiple-choice question
right: 1 point of 5, in the notebook's own check as in the grader. Each honest one gets 5 of 5 and no review.
A submission whose trace was switched off, or that ran threads of its own, is marked for review in the CSV.
"""

from __future__ import annotations

import nbformat
import pytest
from test_grade import EX01, HANDED_OUT, add_cell, read_rows, replace_def, run_grader, write

from course_utils.exercises import make_exercise

from conftest import completed

# _var(x, dim, keepdim): the population variance, by a shortcut
SHORTCUTS = {
    "np_nanvar": "torch.from_numpy(np.asarray(np.nanvar(x.detach().double().numpy(), axis=dim, keepdims=keepdim)))",
    "np_ma_var": (
        "torch.from_numpy(np.asarray(np.ma.var(np.ma.masked_array(x.detach().double().numpy()), axis=dim, "
        "keepdims=keepdim)))"
    ),
    "torch_masked_var": "torch.masked.var(x.double(), dim, keepdim=keepdim, unbiased=False)",
    "torch_refs_var": "torch._refs.var(x.double(), dim, correction=0, keepdim=keepdim)",
    "prims_var": "_keep(torch.ops.prims.var(x.double(), [dim % x.dim()], correction=0), dim, keepdim)",
    "torch_cov": "_rows(x, lambda r: torch.cov(r.double(), correction=0), keepdim)",
    "statistics_covariance": (
        "_rows(x, lambda r: torch.tensor(__import__('statistics').covariance(r.tolist(), r.tolist()) "
        "* (r.numel() - 1) / r.numel(), dtype=torch.float64), keepdim)"
    ),
    "batch_norm_legit": "_legit(x, dim, keepdim)",
    "torch_VF": "torch._VF.var(x.double(), dim, correction=0, keepdim=keepdim)",
    "variable_functions": "torch._C._VariableFunctions.var(x.double(), dim, correction=0, keepdim=keepdim)",
    "vars_of_torch": "vars(torch)['var'](x.double(), dim, correction=0, keepdim=keepdim)",
    "ops_aten": "torch.ops.aten.var.correction(x.double(), [dim], correction=0, keepdim=keepdim)",
    "disable_torch_function": "_disabled(lambda: torch.var(x.double(), dim, correction=0, keepdim=keepdim))",
    "in_a_thread": "_threaded(lambda: torch.var(x.double(), dim, correction=0, keepdim=keepdim))",
    "bound_method_kept": "_later(x.double().var)(dim, correction=0, keepdim=keepdim)",
}

# _var(x, dim, keepdim) by a function that no forbidden list names: full marks from the outputs, and the row
# marked for review with the op or function the allowlist (course_utils/checks/allowed.py) does not name
UNLISTED = {
    "mse_loss": (
        "torch.nn.functional.mse_loss(x.double(), x.double().mean(dim, keepdim=True).expand_as(x), "
        "reduction='none').mean(dim, keepdim=keepdim)",
        "mse_loss",
    ),
    "vector_norm": (
        "torch.linalg.vector_norm(x.double() - x.double().mean(dim, keepdim=True), dim=dim, keepdim=keepdim) ** 2 "
        "/ x.shape[dim]",
        "linalg_vector_norm",
    ),
    "tensor_norm": (
        "(x.double() - x.double().mean(dim, keepdim=True)).norm(dim=dim, keepdim=keepdim) ** 2 / x.shape[dim]",
        "norm",
    ),
    "torch_dist": ("_rows(x, lambda r: torch.dist(r.double(), r.double().mean()) ** 2 / r.numel(), keepdim)", "dist"),
    "numpy_linalg_norm": (
        "_rows(x, lambda r: torch.tensor(np.linalg.norm(r.double().numpy() - r.double().numpy().mean()) ** 2 "
        "/ r.numel(), dtype=torch.float64), keepdim)",
        "numpy.linalg",
    ),
}

HELPERS = """\
import threading
import numpy as np
import torch

def _keep(v, dim, keepdim):
    return v.unsqueeze(dim) if keepdim else v

def _rows(x, f, keepdim):
    rows = x.reshape(-1, x.shape[-1])
    v = torch.stack([f(r) for r in rows]).reshape(x.shape[:-1])
    return v.unsqueeze(-1) if keepdim else v

def _legit(x, dim, keepdim):
    rows = x.double().reshape(-1, x.shape[-1])
    invstd = torch._native_batch_norm_legit(rows.t().contiguous(), None, None, True, 0.0, 0.0)[2]
    v = (1 / invstd**2).reshape(x.shape[:-1])
    return v.unsqueeze(-1) if keepdim else v

def _disabled(f):
    with torch._C.DisableTorchFunction():
        return f()

def _threaded(f):
    box = []
    worker = threading.Thread(target=lambda: box.append(f()))
    worker.start()
    worker.join()
    return box[0]

def _later(method):
    return method
"""

STATISTICS = """\
def statistics(x):
    mean = x.sum() / x.numel()
    variance = _var(x, 0, False).to(x.dtype)
    return mean.item(), variance.item(), torch.sqrt(variance).item()
"""

LAYER_NORM = """\
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    variance = _var(x, -1, True).to(x.dtype)
    y = (x - mean) / torch.sqrt(variance + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y
"""

# The real layer_norm calls F.layer_norm; an honest-looking def comes later in the source, or the real one is
# hidden from a reading of the source. The function that runs is judged: layer_norm earns nothing (2 of 5).
SHORTCUT_DEF = (
    "def layer_norm(x, gamma=None, beta=None, eps=1e-5):\n"
    "    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)\n"
)
HONEST_DEF = LAYER_NORM.replace("_var(x, -1, True)", "((x - mean) ** 2).mean(dim=-1, keepdim=True)")
_SHORTCUT_LAMBDA = "lambda x, gamma=None, beta=None, eps=1e-5: F.layer_norm(x, x.shape[-1:], gamma, beta, eps)"
DECOYS = {
    "decoy_if_false": SHORTCUT_DEF
    + "\nif False:\n"
    + "".join("    " + line + "\n" for line in HONEST_DEF.splitlines()),
    "decoy_capture": "%%capture\n" + SHORTCUT_DEF,
    "decoy_exec": f"exec({SHORTCUT_DEF!r})",
    "decoy_globals": "import torch.nn.functional as F\nglobals()['layer_norm'] = lambda x, gamma=None, beta=None, "
    "eps=1e-5: F.layer_norm(x, x.shape[-1:], gamma, beta, eps)",
    "decoy_for_target": "import torch.nn.functional as F\nfor layer_norm in [lambda x, gamma=None, beta=None, "
    "eps=1e-5: F.layer_norm(x, x.shape[-1:], gamma, beta, eps)]:\n    pass",
    "decoy_time": "%%time\n" + SHORTCUT_DEF,
    "decoy_global": "def _install():\n    global layer_norm\n"
    + "".join("    " + line + "\n" for line in SHORTCUT_DEF.splitlines())
    + "\n_install()",
    "decoy_walrus": f"import torch.nn.functional as F\n(layer_norm := {_SHORTCUT_LAMBDA})",
    "decoy_tuple": f"import torch.nn.functional as F\n_unused, layer_norm = 0, {_SHORTCUT_LAMBDA}",
    "decoy_with": f"import contextlib\nimport torch.nn.functional as F\n"
    f"with contextlib.nullcontext({_SHORTCUT_LAMBDA}) as layer_norm:\n    pass",
    "decoy_chain_of_250": "import torch.nn.functional as F\n"
    + "".join(f"def _h{i}(x, g, b, e):\n    return _h{i + 1}(x, g, b, e)\n" for i in range(250))
    + "def _h250(x, g, b, e):\n    return F.layer_norm(x, x.shape[-1:], g, b, e)\n"
    + "def layer_norm(x, gamma=None, beta=None, eps=1e-5):\n    return _h0(x, gamma, beta, eps)\n",
}

# An ungraded last cell that replaces what the trace relies on: torch's two mode classes and sys.setprofile.
SABOTAGE = """\
import sys
import torch.overrides
import torch.utils._python_dispatch as _dispatch

class _Inert:
    def __init__(self, *args, **kwargs):
        pass
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False

torch.overrides.TorchFunctionMode = _Inert
_dispatch.TorchDispatchMode = _Inert
sys.setprofile = lambda *args, **kwargs: None
"""
SABOTAGED = {  # the shortcut in the source (the scan still sees it), or spelled at run time (nothing sees it)
    "sabotage_visible": "torch.var(x.double(), dim, correction=0, keepdim=keepdim)",
    "sabotage_hidden": "getattr(torch, 'v' + 'ar')(x.double(), dim, correction=0, keepdim=keepdim)",
}

HONEST = {
    "namedtuple_var": """\
from collections import namedtuple
Stats = namedtuple("Stats", "mean var std")

def _stats(x):
    mean = x.sum() / x.numel()
    var = ((x - mean) ** 2).sum() / x.numel()
    return Stats(mean, var, torch.sqrt(var))

def statistics(x):
    s = _stats(x)
    return s.mean.item(), s.var.item(), float(s.std)
""",
    "namespace_var": """\
from types import SimpleNamespace

def statistics(x):
    s = SimpleNamespace(mean=x.sum() / x.numel())
    s.var = ((x - s.mean) ** 2).sum() / x.numel()
    s.std = torch.sqrt(s.var)
    return s.mean.item(), s.var.item(), s.std.item()
""",
    "numpy_and_math": """\
import math
import numpy as np

def statistics(x):
    values = x.double().numpy()
    mean = float(np.mean(values))
    variance = float(np.mean((values - mean) ** 2))
    return mean, variance, math.sqrt(variance)
""",
    "statistics_fmean": """\
import math
import statistics as stats

def statistics(x):
    values = x.flatten().tolist()
    mean = stats.fmean(values)
    variance = stats.fmean([(v - mean) ** 2 for v in values])
    return mean, variance, math.sqrt(variance)
""",
    "square_and_sum": """\
def statistics(x):
    n = x.numel()
    mean = torch.sum(x) / n
    variance = torch.sum(torch.square(x - mean)) / n
    return mean.item(), variance.item(), torch.sqrt(variance).item()
""",
    "class_var": """\
class Moments:
    def __init__(self, x):
        self.mean = x.sum() / x.numel()
        self.var = ((x - self.mean) ** 2).sum() / x.numel()

def statistics(x):
    m = Moments(x)
    return m.mean.item(), m.var.item(), torch.sqrt(m.var).item()
""",
}


def hostile(body: str):
    nb = replace_def(completed(EX01), "statistics", STATISTICS.replace("_var(", f"_var_{id(body)}("))
    nb = replace_def(nb, "layer_norm", LAYER_NORM.replace("_var(", f"_var_{id(body)}("))
    helper = HELPERS + f"\ndef _var_{id(body)}(x, dim, keepdim):\n    return {body}\n"
    return add_cell(nb, helper, at=1)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    for learner, body in SHORTCUTS.items():
        write(hostile(body), root / "subs" / learner / HANDED_OUT)
    for learner, (body, _) in UNLISTED.items():
        write(hostile(body), root / "subs" / learner / HANDED_OUT)
    for learner, source in DECOYS.items():
        nb = replace_def(completed(EX01), "layer_norm", HONEST_DEF)
        write(add_cell(nb, source), root / "subs" / learner / HANDED_OUT)  # after the honest def
    for learner, body in SABOTAGED.items():
        write(add_cell(hostile(body), SABOTAGE), root / "subs" / learner / HANDED_OUT)
    copied = nbformat.read(EX01, as_version=4)  # the answer key itself, its markers still in
    copied.metadata["course"] = make_exercise(EX01).metadata["course"]
    write(copied, root / "subs" / "copied_solution" / HANDED_OUT)
    for learner, source in HONEST.items():
        write(replace_def(completed(EX01), "statistics", source), root / "subs" / learner / HANDED_OUT)
    proc = run_grader("subs", "--out", "grades.csv", "--jobs", 2, "--seed", 777, cwd=root, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_rows(root / "grades.csv")


@pytest.mark.parametrize("learner", sorted(SHORTCUTS))
def test_a_shortcut_under_any_name_earns_nothing(graded, learner):
    row = graded[learner]
    assert (row["status"], row["total"], row["ex01.layer_norm"], row["ex01.statistics"]) == ("graded", "1", "0", "0"), (
        row
    )


@pytest.mark.parametrize("learner", sorted(DECOYS))
def test_a_decoy_changes_nothing_the_function_that_runs_is_judged(graded, learner):
    row = graded[learner]
    assert (row["status"], row["total"], row["ex01.layer_norm"]) == ("graded", "2", "0"), row


def test_switching_the_trace_off_or_running_threads_is_marked_for_review(graded):
    assert "switched off" in graded["disable_torch_function"]["review"]
    assert "threads" in graded["in_a_thread"]["review"]
    assert all(graded[learner]["review"] == "" for learner in HONEST)


@pytest.mark.parametrize("learner", sorted(UNLISTED))
def test_an_unlisted_op_is_not_silent_full_marks(graded, learner):
    """A way to the variance that no forbidden list names keeps the points its outputs earn, and the row names
    the op for the instructor, in both graded functions."""
    row, name = graded[learner], UNLISTED[learner][1]
    assert (row["status"], row["total"]) == ("graded", "5"), row
    assert "basic operations does not name" in row["review"] and name in row["review"], row
    assert row["review"].count(name) >= 2 and "ex01.layer_norm" in row["review"], row


@pytest.mark.parametrize("learner", sorted(UNLISTED))
def test_the_notebooks_own_check_names_the_unlisted_op(learner):
    from course_utils.checks import ex01

    namespace: dict = {}
    exec(HELPERS + f"\ndef _var(x, dim, keepdim):\n    return {UNLISTED[learner][0]}\n", namespace)
    exec(LAYER_NORM, namespace)
    report = ex01.LAYER_NORM_CHECK.evaluate(namespace["layer_norm"])
    assert report.passed and report.review == ["unlisted"], (learner, report.review, report.unlisted)
    assert any(UNLISTED[learner][1] in name for name in report.unlisted), report.unlisted
    assert "⚠ Not verified" in report.text() and UNLISTED[learner][1] in report.text()


def test_a_notebook_that_replaces_what_the_trace_relies_on_is_marked_for_review(graded):
    """The scan still finds a shortcut written in the source (1 of 5); one spelled at run time earns what its outputs
    earn, and the row says that its calls could not be checked: never silent full marks."""
    visible, hidden = graded["sabotage_visible"], graded["sabotage_hidden"]
    assert (visible["status"], visible["total"], visible["ex01.layer_norm"]) == ("graded", "1", "0"), visible
    for row in (visible, hidden):
        assert row["status"] == "graded" and "switched off" in row["review"] and "ex01.layer_norm" in row["review"], row


def test_a_copied_answer_key_is_marked_for_review(graded):
    row = graded["copied_solution"]
    assert (row["status"], row["total"]) == ("graded", "5") and "BEGIN SOLUTION" in row["review"], row


@pytest.mark.parametrize("learner", sorted(HONEST))
def test_the_learners_own_var_attribute_is_not_torchs(graded, learner):
    row = graded[learner]
    assert (row["status"], row["total"], row["review"]) == ("graded", "5", ""), row


@pytest.mark.parametrize("learner", sorted(SHORTCUTS))
def test_the_notebooks_own_check_agrees(learner):
    """The learner's check in the notebook (course_utils.checks) gives the same ❌, in this process."""
    from course_utils.checks import ex01

    namespace: dict = {}
    exec(HELPERS + f"\ndef _var(x, dim, keepdim):\n    return {SHORTCUTS[learner]}\n", namespace)
    exec(LAYER_NORM, namespace)
    exec(STATISTICS, namespace)
    assert ex01.LAYER_NORM_CHECK.evaluate(namespace["layer_norm"]).forbidden, learner
    assert ex01.STATISTICS_CHECK.evaluate(namespace["statistics"]).forbidden, learner
