"""Chapter 02 / exercise 02: the RMSNorm checks reject realistic mistakes, and rms_norm matches torch further.

tests/test_norms.py already compares `norms.rms_norm` with `F.rms_norm` on random shapes, four dtypes and
eps in {0, 1e-6, 1e-5, 1e-3, 0.1}. Here: torch's eps=None convention, eps that dominates tiny inputs, wide
rows, non-contiguous inputs, values near float16's limit, and gradients.
"""

import importlib.util
import math

import pytest
import torch
import torch.nn.functional as F

from course_utils import checks, norms, widgets
from course_utils.checks import ex02

from conftest import ROOT

HALF = (torch.float16, torch.bfloat16)


# ---------------------------------------------------------------------------------------------------------
# learner implementations: one right, the rest wrong the way learners get them wrong
# ---------------------------------------------------------------------------------------------------------
def right(x, weight=None, eps=1e-6):
    h = x.float() if x.dtype in HALF else x
    y = h * torch.rsqrt((h * h).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.to(y.dtype)
    return y.to(x.dtype)


def _finish(x, h, y, weight):
    if weight is not None:
        y = y * weight.to(y.dtype)
    return y.to(x.dtype)


def mean_instead_of_mean_square(x, weight=None, eps=1e-6):
    h = x.float()
    return _finish(x, h, h / torch.sqrt(h.mean(-1, keepdim=True) + eps), weight)


def square_of_the_mean(x, weight=None, eps=1e-6):
    h = x.float()
    return _finish(x, h, h / torch.sqrt(h.mean(-1, keepdim=True) ** 2 + eps), weight)


def eps_outside_sqrt(x, weight=None, eps=1e-6):
    h = x.float()
    return _finish(x, h, h / (torch.sqrt((h * h).mean(-1, keepdim=True)) + eps), weight)


def wrong_axis(x, weight=None, eps=1e-6):
    h = x.float()
    return _finish(x, h, h / torch.sqrt((h * h).mean(0, keepdim=True) + eps), weight)


def no_upcast(x, weight=None, eps=1e-6):
    y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def subtracts_the_mean(x, weight=None, eps=1e-6):
    h = x.float()
    c = h - h.mean(-1, keepdim=True)
    return _finish(x, h, c / torch.sqrt((c * c).mean(-1, keepdim=True) + eps), weight)


def ignores_weight(x, weight=None, eps=1e-6):
    return right(x, None, eps)


def no_eps(x, weight=None, eps=1e-6):
    return right(x, weight, 0.0)


def forgets_to_cast_back(x, weight=None, eps=1e-6):
    h = x.float()
    y = h * torch.rsqrt((h * h).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight.float()


def in_place(x, weight=None, eps=1e-6):
    h = x.float() if x.dtype in HALF else x
    h.mul_(torch.rsqrt((h * h).mean(-1, keepdim=True) + eps))
    return _finish(x, h, h, weight)


def not_implemented(x, weight=None, eps=1e-6):
    raise NotImplementedError()


# ---------------------------------------------------------------------------------------------------------
# the rms_norm check
# ---------------------------------------------------------------------------------------------------------
def test_a_right_implementation_passes_and_torchs_or_the_courses_is_a_forbidden_shortcut(capsys):
    report = ex02.check_rms_norm(right)
    assert report.passed, report.text()
    shortcuts = {
        "course_utils.norms.rms_norm": norms.rms_norm,
        "torch.nn.functional.rms_norm": lambda x, weight=None, eps=1e-6: F.rms_norm(x, x.shape[-1:], weight, eps),
    }
    for name, fn in shortcuts.items():
        report = ex02.check_rms_norm(fn)
        # right numbers, no points: the task asks for the computation itself
        # (the trace may also name what it calls inside: F.rms_norm runs torch.rms_norm)
        assert not report.passed and report.forbidden[0] == name and all(c.passed for c in report.cases), report.text()
    out = capsys.readouterr().out
    assert out.count("✅") == 1 and out.count("which this task asks you to write yourself") == 2


@pytest.mark.parametrize(
    "fn, words",
    [
        (mean_instead_of_mean_square, "mean of the *squares*"),
        (square_of_the_mean, "mean(x)**2"),
        (eps_outside_sqrt, "*outside* the square root"),
        (wrong_axis, "wrong axis"),
        (no_upcast, "overflows float16"),
        (subtracts_the_mean, "matches LayerNorm"),
        (ignores_weight, "without the weight"),
        (forgets_to_cast_back, ".to(x.dtype)"),
        (no_eps, "add eps inside the root"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_each_mistake_is_rejected_with_its_hint(fn, words):
    report = ex02.RMS_NORM_CHECK.evaluate(fn)
    assert report.status == "failed", fn.__name__
    assert words in report.hint, (fn.__name__, report.hint)
    text = report.text()
    assert "❌" in text and ("tolerance" in text or "returned float32" in text)


def test_no_upcast_fails_only_on_the_half_precision_case():
    report = ex02.RMS_NORM_CHECK.evaluate(no_upcast)
    failed = [c for c in report.cases if not c.passed]
    assert [c.name for c in failed] == ["float16 activations of size ~1000 (their squares overflow float16)"]
    assert "overflows float16" in report.hint


def test_each_mistake_is_named_on_a_case_of_its_own():
    """Every wrong implementation is caught on at least one case where the right one is within tolerance."""
    cases = ex02.RMS_NORM_CHECK.cases()
    for fn in (
        mean_instead_of_mean_square,
        square_of_the_mean,
        eps_outside_sqrt,
        wrong_axis,
        no_upcast,
        subtracts_the_mean,
        ignores_weight,
    ):
        results = [ex02.RMS_NORM_CHECK.compare(c, fn(*c.args)) for c in cases]
        assert any(not r.passed and r.mistake for r in results), fn.__name__


def test_in_place_and_not_implemented_and_errors():
    assert "in place" in ex02.RMS_NORM_CHECK.evaluate(in_place).text()
    report = ex02.RMS_NORM_CHECK.evaluate(not_implemented)
    assert report.status == "not-implemented" and report.text().count("\n") == 0
    crash = ex02.RMS_NORM_CHECK.evaluate(lambda x, weight=None, eps=1e-6: x.mean(dim=5))
    assert crash.status == "error" and "IndexError" in crash.text() and "Traceback" not in crash.text()


def test_half_precision_case_really_overflows():
    case = next(c for c in ex02.RMS_NORM_CHECK.cases() if c.args[0].dtype == torch.float16)
    x = case.args[0]
    assert torch.isinf(x * x).any()  # the case only tests the upcast if float16 squares overflow
    assert torch.equal(no_upcast(x), torch.zeros_like(x))


def test_cases_depend_on_the_seed():
    a = ex02.RMS_NORM_CHECK.cases(seed=0)[1].args[0]
    b = ex02.RMS_NORM_CHECK.cases(seed=1)[1].args[0]
    assert not torch.equal(a, b)


# ---------------------------------------------------------------------------------------------------------
# LN(x) = RMSNorm(x - mean): the check of the learner's identity
# ---------------------------------------------------------------------------------------------------------
def test_layer_norm_via_rms_norm_check():
    def via(x, weight=None, eps=1e-5):
        return right(x - x.mean(-1, keepdim=True), weight, eps)

    def not_centred(x, weight=None, eps=1e-5):
        return right(x, weight, eps)

    def centred_over_columns(x, weight=None, eps=1e-5):
        return right(x - x.mean(0, keepdim=True), weight, eps)

    def with_unbiased_variance(x, weight=None, eps=1e-5):
        n = x.shape[-1]
        return via(x, weight, eps) * math.sqrt((n - 1) / n)

    assert ex02.LN_VIA_RMS_CHECK.evaluate(via).passed
    shortcut = ex02.LN_VIA_RMS_CHECK.evaluate(lambda x, weight=None, eps=1e-5: norms.layer_norm(x, weight, None, eps))
    assert not shortcut.passed and shortcut.forbidden == ["course_utils.norms.layer_norm"]
    assert all(c.passed for c in shortcut.cases)  # the same numbers: LayerNorm is what the task computes
    report = ex02.LN_VIA_RMS_CHECK.evaluate(not_centred)
    assert not report.passed and "subtract each row's mean" in report.hint
    report = ex02.LN_VIA_RMS_CHECK.evaluate(centred_over_columns)
    assert not report.passed and "wrong axis" in report.hint
    assert not ex02.LN_VIA_RMS_CHECK.evaluate(with_unbiased_variance).passed


def test_multiple_choice_and_its_numbers(capsys):
    assert checks.check_choice("ex02.shift", "c").passed
    for wrong in "abd":
        assert not checks.check_choice("ex02.shift", wrong).passed
    q = ex02.SHIFT_QUESTION
    before = norms.rms_norm(torch.tensor([4.0, 6.0, 2.0, 8.0]), eps=0.0)
    after = norms.rms_norm(torch.tensor([14.0, 16.0, 12.0, 18.0]), eps=0.0)
    assert "[0.730, 1.095, 0.365, 1.461]" in q.explanation
    assert [round(v, 3) for v in before.tolist()] == [0.730, 1.095, 0.365, 1.461]
    assert (after - 1).abs().max() < (before - 1).abs().max()  # "toward [1, 1, 1, 1]"
    assert "[0.923, 1.055, 0.791, 1.187]" in q.explanation
    assert [round(v, 3) for v in after.tolist()] == [0.923, 1.055, 0.791, 1.187]
    far = norms.rms_norm(torch.tensor([4.0, 6.0, 2.0, 8.0], dtype=torch.float64) + 1000, eps=0.0)
    assert (far - 1).abs().max() < 5e-3  # the limit the right answer names: all ones
    ln_before = norms.layer_norm(torch.tensor([4.0, 6.0, 2.0, 8.0]))
    assert torch.allclose(norms.layer_norm(torch.tensor([14.0, 16.0, 12.0, 18.0])), ln_before, atol=1e-6)


def test_registry():
    reg = checks.exercise_registry("ex02_rmsnorm")
    assert {g.function for g in reg.graded} == {"rms_norm", "layer_norm_via_rms_norm", "answer_shift"}
    assert set(reg.questions) == {"ex02.shift"}


# ---------------------------------------------------------------------------------------------------------
# norms.rms_norm against torch.nn.functional.rms_norm, beyond tests/test_norms.py
# ---------------------------------------------------------------------------------------------------------
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 2e-5, torch.float64: 1e-10}
OPMATH_EPS = {
    torch.float16: torch.finfo(torch.float32).eps,
    torch.bfloat16: torch.finfo(torch.float32).eps,
    torch.float32: torch.finfo(torch.float32).eps,
    torch.float64: torch.finfo(torch.float64).eps,
}


def _close(ours, theirs, dtype, scale=1.0):
    assert ours.dtype == theirs.dtype == dtype and ours.shape == theirs.shape
    err = (ours.double() - theirs.double()).abs().max().item()
    assert err <= TOL[dtype] * scale, f"max abs error {err:.3g} for {dtype}"


def _randn(shape, dtype, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


@pytest.mark.parametrize("dtype", list(OPMATH_EPS))
def test_torch_eps_none_is_the_machine_epsilon_of_the_computation_type(dtype):
    """F.rms_norm(eps=None) equals our rms_norm with eps = finfo(float32 or float64).eps, where eps matters."""
    value = 1e-8 if dtype == torch.float64 else 3e-4  # mean square close to that eps
    x = torch.full((3, 4), value, dtype=dtype) * torch.tensor([1.0, 2.0, 3.0], dtype=dtype)[:, None]
    _close(norms.rms_norm(x, eps=OPMATH_EPS[dtype]), F.rms_norm(x, (4,)), dtype)
    own_eps = norms.rms_norm(x, eps=torch.finfo(dtype).eps)
    if dtype in HALF:  # their own, larger epsilon would give a visibly different answer
        assert (own_eps.double() - F.rms_norm(x, (4,)).double()).abs().max() > 0.1


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("eps", [1.0, 10.0])
@pytest.mark.parametrize("scale", [1e-3, 1.0])
def test_large_eps_and_tiny_inputs(dtype, eps, scale):
    x = _randn((4, 32), dtype, 11, scale)
    w = _randn((32,), dtype, 12)
    _close(norms.rms_norm(x, w, eps), F.rms_norm(x, (32,), w, eps), dtype, 4.0)


@pytest.mark.parametrize("dtype", list(TOL))
def test_wide_rows(dtype):
    x = _randn((3, 8192), dtype, 5, 3.0) + 2.0
    _close(norms.rms_norm(x), F.rms_norm(x, (8192,), eps=1e-6), dtype)


@pytest.mark.parametrize("dtype", list(TOL))
def test_non_contiguous_input(dtype):
    x = _randn((16, 6, 10), dtype, 3).transpose(0, 2)  # (10, 6, 16), normalized over a strided dim
    assert not x.is_contiguous()
    _close(norms.rms_norm(x), F.rms_norm(x, (16,), eps=1e-6), dtype)


@pytest.mark.parametrize("dtype, scale", [(torch.float16, 3e4), (torch.bfloat16, 1e17)])
def test_values_near_the_half_precision_limit(dtype, scale):
    x = _randn((2, 64), dtype, 9, scale).clamp(-torch.finfo(dtype).max, torch.finfo(dtype).max)
    ours = norms.rms_norm(x)
    assert torch.isfinite(ours).all() and ours.abs().max() > 0.5
    _close(ours, F.rms_norm(x, (64,), eps=1e-6), dtype)


def test_beyond_float32_squares_both_give_zeros():
    """bfloat16 reaches 3e38, but a float32 square overflows above ~1.8e19: the upcast has a limit too,
    and torch's kernel has the same one."""
    x = _randn((2, 64), torch.bfloat16, 9, 1e30)
    assert torch.isinf(x.float() ** 2).any()
    assert torch.equal(norms.rms_norm(x).abs(), F.rms_norm(x, (64,), eps=1e-6).abs())
    assert norms.rms_norm(x).abs().max() == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("eps", [1e-6, 1e-2])
def test_gradients_match_torch(dtype, eps):
    x = _randn((3, 5, 12), dtype, 21, 2.0).requires_grad_()
    w = _randn((12,), dtype, 22).requires_grad_()
    upstream = _randn((3, 5, 12), dtype, 23)
    ours = torch.autograd.grad((norms.rms_norm(x, w, eps) * upstream).sum(), (x, w))
    theirs = torch.autograd.grad((F.rms_norm(x, (12,), w, eps) * upstream).sum(), (x, w))
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, atol=tol, rtol=tol)


# ---------------------------------------------------------------------------------------------------------
# the chapter's widget and benchmark helpers
# ---------------------------------------------------------------------------------------------------------
def test_rms_norm_explorer_parts():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    text = widgets.describe_rms_norm([4, 6, 2, 8], shift=0.0, gain=1.0, eps=0.0)
    assert "RMS = 5.477" in text and "[0.730, 1.095, 0.365, 1.461]" in text and "[-0.447, 0.447, -1.342, 1.342]" in text
    shifted = widgets.describe_rms_norm([4, 6, 2, 8], shift=10.0, gain=1.0, eps=0.0)
    assert "LayerNorm = [-0.447, 0.447, -1.342, 1.342]" in shifted and "RMSNorm = [0.923" in shifted
    from course_utils.figures import figure_problems

    for kwargs in ({"shift": 2.0, "gain": 1.5, "eps": 1e-6}, {"shift": -20.0, "gain": -3.0, "eps": 100.0}):
        fig = widgets.draw_rms_norm([4, 6, 2, 8], **kwargs)
        assert len(fig.axes) == 2 and all(ax.get_title() for ax in fig.axes)
        assert figure_problems(fig) == []  # at least 10 pt text, every axis labelled
        plt.close(fig)
    alt = widgets.alt_rms_norm([4, 6, 2, 8])
    assert "RMS 5.48" in alt and "[0.73, 1.10, 0.37, 1.46]" in alt


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_norm_cost", ROOT / "benchmarks" / "bench_norm_cost.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_counts_reductions_and_reports_ratios(capsys):
    bench = _bench_module()
    x = torch.randn(2, 16)
    assert bench.aten_ops(norms.layer_norm, x).count("mean") == 2
    assert bench.aten_ops(norms.rms_norm, x).count("mean") == 1
    result = bench.measure_norm_cost(shape=(2, 4, 32), rounds=3, warmup=1)
    assert set(result["ratios"]) == {"torch built-ins", "course reference"}
    assert all(math.isfinite(r) and r > 0 for r in result["ratios"].values())
    assert bench.main(["--shape", "2", "4", "32", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "LN / RMS" in out and "native_layer_norm" in out
    only = bench.format_report(result, pairs=("course reference",))
    assert "course reference" in only and "torch built-ins" not in only
