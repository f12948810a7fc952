import math
from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.handcalc import Surd, exact_sqrt, layer_norm_steps, rms_norm_steps


def test_layer_norm_seed_example_is_exact():
    s = layer_norm_steps([4, 6, 2, 8])
    assert s.mean == Fraction(5) and s.variance == Fraction(5)
    assert isinstance(s.std, Surd) and s.std.coefficient == 1 and s.std.radicand == 5
    assert abs(s.std - math.sqrt(5)) < 1e-15
    assert s.deviations == (-1, 1, -3, 3)
    assert [round(v, 3) for v in s.normalized] == [-0.447, 0.447, -1.342, 1.342]


def test_rms_norm_seed_example_is_exact():
    s = rms_norm_steps([4, 6, 2, 8])
    assert s.mean_square == 30 and s.rms.radicand == 30 and s.rms.coefficient == 1
    assert [round(v, 3) for v in s.normalized] == [0.730, 1.095, 0.365, 1.461]


def test_textbook_exercise_range():
    s = layer_norm_steps([10, 50, -30, 5, 100, -80])
    assert round(min(s.normalized), 2) == -1.57 and round(max(s.normalized), 2) == 1.60


@pytest.mark.parametrize(
    "q, coefficient, radicand",
    [
        (5, 1, 5),
        (20, 2, 5),
        (9, 3, 1),
        (Fraction(9, 4), Fraction(3, 2), 1),
        (Fraction(1, 2), Fraction(1, 2), 2),
        (0, 0, 1),
        (72, 6, 2),
    ],
)
def test_exact_sqrt_simplifies(q, coefficient, radicand):
    r = exact_sqrt(q)
    assert (r.coefficient, r.radicand) == (coefficient, radicand)
    assert abs(float(r) - math.sqrt(q)) < 1e-12


def test_surd_rendering():
    assert exact_sqrt(5).latex() == r"\sqrt{5}"
    assert exact_sqrt(20).latex() == r"2\sqrt{5}"
    assert exact_sqrt(Fraction(1, 2)).latex() == r"\frac{\sqrt{2}}{2}"
    assert repr(exact_sqrt(5)) == "√5 ≈ 2.23607"
    assert repr(exact_sqrt(9)) == "3"


def test_markdown_shows_every_step():
    md = layer_norm_steps([4, 6, 2, 8])._repr_markdown_()
    for piece in [r"\frac{20}{4} = 5", r"\left[-1,\ 1,\ -3,\ 3\right]", r"\sqrt{5}", "-0.447", "1.342"]:
        assert piece in md
    md = rms_norm_steps([4, 6, 2, 8])._repr_markdown_()
    for piece in [r"\left[16,\ 36,\ 4,\ 64\right]", "= 30", r"\sqrt{30}", "0.730", "1.461"]:
        assert piece in md


def test_decimals_are_read_as_typed():
    s = layer_norm_steps([0.1, 0.2, 0.3])
    assert s.mean == Fraction(1, 5)


def test_eps_enters_under_the_root():
    s = layer_norm_steps([4, 6, 2, 8], eps=1e-5)
    assert abs(s.std - math.sqrt(5 + 1e-5)) < 1e-12


def test_constant_vector_gives_zeros():
    assert layer_norm_steps([3, 3, 3]).normalized == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "bad, exc", [([], ValueError), (["a"], TypeError), ([1, math.nan], ValueError), ([True], TypeError)]
)
def test_bad_values(bad, exc):
    with pytest.raises(exc):
        layer_norm_steps(bad)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-1000, 1000), min_size=2, max_size=12))
def test_agrees_with_torch(values):
    x = torch.tensor(values, dtype=torch.float64)
    ln = F.layer_norm(x, (len(values),), eps=1e-3)
    assert torch.allclose(
        torch.tensor(layer_norm_steps(values, eps=1e-3).normalized, dtype=torch.float64), ln, atol=1e-9
    )
    rms = F.rms_norm(x, (len(values),), eps=1e-3)
    assert torch.allclose(
        torch.tensor(rms_norm_steps(values, eps=1e-3).normalized, dtype=torch.float64), rms, atol=1e-9
    )
