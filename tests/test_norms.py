"""The reference norms against torch.nn.functional: shapes 1-d..4-d, four dtypes, several eps, affine or not."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import norms

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
# one rounding of the output in the dtype, plus a little float32 slack for the low-precision ones
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 2e-5, torch.float64: 1e-10}
EPS = [0.0, 1e-6, 1e-5, 1e-3, 0.1]


def close(ours, theirs, dtype, scale=1.0):
    assert ours.dtype == theirs.dtype == dtype
    assert ours.shape == theirs.shape
    err = (ours.double() - theirs.double()).abs().max().item() if ours.numel() else 0.0
    assert err <= TOL[dtype] * max(1.0, scale), f"max abs error {err:.3g} for {dtype}"


shapes = st.lists(st.integers(1, 7), min_size=1, max_size=4).map(tuple)


def random_input(shape, dtype, seed, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale + 1.0).to(dtype)


@settings(max_examples=60, deadline=None)
@given(
    shape=shapes,
    dtype=st.sampled_from(DTYPES),
    eps=st.sampled_from(EPS[1:]),
    affine=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_layer_norm_matches_torch(shape, dtype, eps, affine, seed):
    x = random_input(shape, dtype, seed)
    d = shape[-1]
    w = random_input((d,), dtype, seed + 1) if affine else None
    b = random_input((d,), dtype, seed + 2) if affine else None
    ours = norms.layer_norm(x, w, b, eps)
    theirs = F.layer_norm(x, (d,), w, b, eps)
    scale = 1.0 if w is None else float(w.double().abs().max() + b.double().abs().max())
    close(ours, theirs, dtype, scale)


@settings(max_examples=60, deadline=None)
@given(
    shape=shapes,
    dtype=st.sampled_from(DTYPES),
    eps=st.sampled_from(EPS),
    affine=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_rms_norm_matches_torch(shape, dtype, eps, affine, seed):
    x = random_input(shape, dtype, seed)
    d = shape[-1]
    w = random_input((d,), dtype, seed + 1) if affine else None
    ours = norms.rms_norm(x, w, eps)
    theirs = F.rms_norm(x, (d,), w, eps)
    scale = 1.0 if w is None else float(w.double().abs().max())
    close(ours, theirs, dtype, scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps", EPS)
def test_layer_norm_every_dtype_and_eps(dtype, eps):
    x = random_input((3, 5, 16), dtype, 7)
    w, b = random_input((16,), dtype, 8), random_input((16,), dtype, 9)
    close(norms.layer_norm(x, w, b, eps), F.layer_norm(x, (16,), w, b, eps), dtype, 8.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_default_eps_is_1e_6(dtype):
    x = random_input((4, 32), dtype, 3)
    close(norms.rms_norm(x), F.rms_norm(x, (32,), eps=1e-6), dtype)


def test_low_precision_is_computed_in_float32():
    # float16 tops out at 65504: squaring 300 already overflows if computed in float16
    x = torch.full((1, 8), 300.0, dtype=torch.float16)
    x[0, 0] = 310.0
    naive = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)
    assert not torch.isfinite(naive).all() or naive.abs().max() < 1e-2  # the naive half computation breaks
    ours = norms.rms_norm(x)
    assert torch.isfinite(ours).all() and ours.dtype == torch.float16
    close(ours, F.rms_norm(x, (8,), eps=1e-6), torch.float16)


def test_constant_vector_gives_zero_not_nan():
    assert torch.equal(norms.layer_norm(torch.full((2, 4), 7.0)), torch.zeros(2, 4))


def test_the_seed_example():
    y = norms.layer_norm(torch.tensor([4.0, 6.0, 2.0, 8.0]), eps=0.0)
    assert [round(v, 3) for v in y.tolist()] == [-0.447, 0.447, -1.342, 1.342]
    r = norms.rms_norm(torch.tensor([4.0, 6.0, 2.0, 8.0]), eps=0.0)
    assert [round(v, 3) for v in r.tolist()] == [0.730, 1.095, 0.365, 1.461]


# ---------------------------------------------------------------------------------------------------------
# BatchNorm: outputs, running statistics after several train steps, eval outputs
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(8, 5), (4, 6, 5), (2, 1, 5)])
@pytest.mark.parametrize("momentum", [0.1, 0.5, 1.0])
def test_batch_norm_train_steps_and_eval_match_torch(dtype, shape, momentum):
    d = shape[-1]
    g = torch.Generator().manual_seed(0)
    w, b = torch.randn(d, generator=g, dtype=dtype), torch.randn(d, generator=g, dtype=dtype)
    ours_mean, ours_var = torch.zeros(d, dtype=dtype), torch.ones(d, dtype=dtype)
    torch_mean, torch_var = ours_mean.clone(), ours_var.clone()

    def to_torch_layout(x):  # torch wants features in dim 1: (N, D) or (N, D, T)
        return x if x.dim() == 2 else x.transpose(1, 2)

    for step in range(5):
        x = (torch.randn(shape, generator=g, dtype=torch.float64) * (step + 1) + step).to(dtype)
        ours = norms.batch_norm(x, ours_mean, ours_var, w, b, training=True, momentum=momentum)
        theirs = F.batch_norm(to_torch_layout(x), torch_mean, torch_var, w, b, training=True, momentum=momentum)
        close(ours, to_torch_layout(theirs), dtype, 4.0)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.allclose(ours_mean, torch_mean, atol=tol, rtol=tol)
    assert torch.allclose(ours_var, torch_var, atol=tol, rtol=tol)

    x = torch.randn(shape, generator=g, dtype=dtype)
    ours = norms.batch_norm(x, ours_mean, ours_var, w, b, training=False)
    theirs = F.batch_norm(to_torch_layout(x), torch_mean, torch_var, w, b, training=False)
    close(ours, to_torch_layout(theirs), dtype, 4.0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_batch_norm_low_precision(dtype):
    x = random_input((16, 8), dtype, 1)
    ours = norms.batch_norm(x)
    theirs = F.batch_norm(x.float(), None, None, training=True).to(dtype)
    close(ours, theirs, dtype)


def test_batch_norm_module_matches_torch_module():
    torch.manual_seed(0)
    ours, theirs = norms.BatchNorm(6), torch.nn.BatchNorm1d(6)
    for _ in range(4):
        x = torch.randn(10, 6) * 3 + 2
        assert torch.allclose(ours(x), theirs(x), atol=1e-5)
    assert torch.allclose(ours.running_var, theirs.running_var, atol=1e-6)
    ours.eval(), theirs.eval()
    x = torch.randn(3, 6)
    assert torch.allclose(ours(x), theirs(x), atol=1e-5)


def test_module_forms_match_functions():
    x = torch.randn(2, 3, 8)
    ln, rms = norms.LayerNorm(8), norms.RMSNorm(8)
    assert torch.allclose(ln(x), F.layer_norm(x, (8,)), atol=1e-6)
    assert torch.allclose(rms(x), F.rms_norm(x, (8,), eps=1e-6), atol=1e-6)
    assert norms.LayerNorm(8, bias=False).bias is None
    assert sum(p.numel() for p in ln.parameters()) == 16


# ---------------------------------------------------------------------------------------------------------
# bad input: a clear error that names the problem
# ---------------------------------------------------------------------------------------------------------
CALLS = {
    "layer_norm": lambda x, **kw: norms.layer_norm(x, **kw),
    "rms_norm": lambda x, **kw: norms.rms_norm(x, **kw),
    "batch_norm": lambda x, **kw: norms.batch_norm(x, **kw),
}


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize(
    "bad, exc, words",
    [
        (dict(x=torch.ones(4, 3, dtype=torch.int64)), TypeError, "dtype torch.int64"),
        (dict(x=torch.ones(4, 3), weight=torch.ones(4)), ValueError, "weight has shape (4,), expected (3,)"),
        (dict(x=torch.ones(4, 3), eps=-1e-5), ValueError, "eps must be >= 0"),
        (dict(x=torch.ones(4, 3), eps=math.nan), ValueError, "eps must be finite"),
        (dict(x=torch.ones(4, 3), eps=math.inf), ValueError, "eps must be finite"),
        (dict(x=torch.tensor(1.0)), ValueError, "0-d tensor"),
        (dict(x=[1.0, 2.0]), TypeError, "must be a torch.Tensor"),
        (dict(x=torch.ones(4, 3), eps="1e-5"), TypeError, "eps must be a real number"),
    ],
)
def test_bad_input_raises_a_clear_error(name, bad, exc, words):
    bad = dict(bad)
    x = bad.pop("x")
    with pytest.raises(exc) as info:
        CALLS[name](x, **bad)
    assert words in str(info.value) and name in str(info.value)


def test_batch_norm_specific_errors():
    with pytest.raises(ValueError, match="more than 1 value per feature"):
        norms.batch_norm(torch.ones(1, 3))
    with pytest.raises(ValueError, match="needs running_mean and running_var"):
        norms.batch_norm(torch.ones(4, 3), training=False)
    with pytest.raises(ValueError, match="momentum"):
        norms.batch_norm(torch.ones(4, 3), momentum=1.5)
    with pytest.raises(ValueError, match="both running_mean and running_var"):
        norms.batch_norm(torch.ones(4, 3), running_mean=torch.zeros(3))
    with pytest.raises(ValueError, match=r"\(N, D\) or \(N, T, D\)"):
        norms.batch_norm(torch.ones(2, 2, 2, 3))
    with pytest.raises(ValueError, match="bias has shape"):
        norms.layer_norm(torch.ones(2, 3), bias=torch.ones(2))
