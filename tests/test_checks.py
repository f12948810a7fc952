"""The learner checks accept the right implementation and reject realistic wrong ones, naming the mistake."""

import pytest
import torch

from course_utils import checks, norms
from course_utils.checks import ex01


def reference(x, gamma=None, beta=None, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


# Realistic wrong implementations, written as the exercise asks (basic tensor operations, no torch.var)


def affine(y, gamma, beta):
    y = y if gamma is None else y * gamma
    return y if beta is None else y + beta


def unbiased_variance(x, gamma=None, beta=None, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    var = (centred**2).sum(-1, keepdim=True) / (x.shape[-1] - 1)
    return affine(centred / torch.sqrt(var + eps), gamma, beta)


def wrong_axis(x, gamma=None, beta=None, eps=1e-5):
    centred = x - x.mean(0, keepdim=True)
    return affine(centred / torch.sqrt((centred**2).mean(0, keepdim=True) + eps), gamma, beta)


def eps_outside_sqrt(x, gamma=None, beta=None, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return affine(centred / (torch.sqrt((centred**2).mean(-1, keepdim=True)) + eps), gamma, beta)


def no_eps(x, gamma=None, beta=None, eps=1e-5):
    return reference(x, gamma, beta, eps=0.0)


def ignores_gamma_beta(x, gamma=None, beta=None, eps=1e-5):
    return reference(x, None, None, eps)


def in_place(x, gamma=None, beta=None, eps=1e-5):
    x.sub_(x.mean(-1, keepdim=True))
    return x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps) * (1 if gamma is None else gamma) + (
        0 if beta is None else beta
    )


def returns_numpy(x, gamma=None, beta=None, eps=1e-5):
    return reference(x, gamma, beta, eps).numpy()


def not_implemented(x, gamma=None, beta=None, eps=1e-5):
    raise NotImplementedError()


def crashes(x, gamma=None, beta=None, eps=1e-5):
    return x.mean(dim=3)


def test_reference_and_variants_pass(capsys):
    for fn in (reference, returns_numpy):
        report = ex01.check_layer_norm(fn)
        assert report.passed, report.text()
    assert capsys.readouterr().out.count("✅") == 2
    # the course's own reference matches, and is a forbidden shortcut (issue 12, tests/test_forbidden.py)
    assert "uses course_utils.norms.layer_norm" in ex01.LAYER_NORM_CHECK.evaluate(norms.layer_norm).text()


def the_hint(check, phrase: str) -> str:
    """The one named mistake's hint of `check` that contains `phrase` (exactly one must)."""
    hints = [hint for hint in check.mistakes if phrase in hint]
    assert len(hints) == 1, (phrase, hints)
    return hints[0]


def test_learner_style_mistakes_get_exactly_their_own_hint():
    check = ex01.LAYER_NORM_CHECK
    expected = {
        unbiased_variance: the_hint(check, "*unbiased* variance"),
        wrong_axis: the_hint(check, "wrong axis"),
        eps_outside_sqrt: the_hint(check, "*outside* the square root"),
        ignores_gamma_beta: the_hint(check, "without gamma and beta"),
        no_eps: check.nan_hint,  # a constant row gives 0 / 0: the NaN hint, not the general one
    }
    assert len(set(expected.values())) == len(expected)
    for fn, hint in expected.items():
        report = check.evaluate(fn)
        assert report.status == "failed", fn.__name__
        assert report.hint == hint, (fn.__name__, report.hint)
        assert "❌" in report.text() and "tolerance" in report.text()


def named_mistakes():
    """Every named mistake of every graded function check in the registry, with its hint."""
    for exercise in checks.all_exercises():
        for item in exercise.items():
            if item.kind == "function":
                for number, (hint, mistake) in enumerate(item.check.mistakes.items()):
                    yield pytest.param(item.check, hint, mistake, id=f"{exercise.id}.{item.check.name}.{number}")


@pytest.mark.parametrize("check, hint, mistake", list(named_mistakes()))
def test_each_named_mistake_is_diagnosed_with_its_own_hint(check, hint, mistake):
    """A learner whose function is exactly a named mistake gets that mistake's hint, not another's."""
    report = check.evaluate(mistake, seed=0)
    assert report.status == "failed"
    assert report.hint == hint, f"expected {hint[:70]!r}..., got {report.hint[:70]!r}..."


def test_in_place_modification_is_caught():
    report = ex01.LAYER_NORM_CHECK.evaluate(in_place)
    assert report.status == "failed" and "in place" in report.text()


def test_a_nan_in_an_argument_is_not_mistaken_for_a_change():
    from course_utils.checks.core import changed_in_place

    x = torch.tensor([1.0, float("nan"), 3.0])
    assert not changed_in_place((x,), (x.clone(),))  # torch.equal would say NaN != NaN
    assert changed_in_place((x,), (torch.tensor([1.0, float("nan"), 4.0]),))
    assert changed_in_place((x,), (torch.tensor([1.0, 2.0, 3.0]),))
    assert not changed_in_place((torch.arange(3),), (torch.arange(3),))


def test_not_implemented_is_one_friendly_line():
    report = ex01.LAYER_NORM_CHECK.evaluate(not_implemented)
    assert report.status == "not-implemented"
    assert report.text().count("\n") == 0 and "not implemented yet" in report.text()
    assert "Traceback" not in report.text()


def test_other_exceptions_are_reported_without_a_traceback():
    report = ex01.LAYER_NORM_CHECK.evaluate(crashes)
    assert report.status == "error" and "IndexError" in report.text() and "Traceback" not in report.text()


def test_check_cases_cover_the_required_kinds():
    names = " ".join(c.name for c in ex01.LAYER_NORM_CHECK.cases())
    for kind in ("batch of rows", "constant row", "large values", "random"):
        assert kind in names


def test_cases_depend_on_the_seed():
    a = ex01.LAYER_NORM_CHECK.cases(seed=0)[1].args[0]
    b = ex01.LAYER_NORM_CHECK.cases(seed=1)[1].args[0]
    assert not torch.equal(a, b)


def test_statistics_check():
    def right(x):
        m = x.mean()
        v = ((x - m) ** 2).mean()
        return m.item(), v.item(), v.sqrt().item()

    assert ex01.STATISTICS_CHECK.evaluate(right).passed
    report = ex01.STATISTICS_CHECK.evaluate(lambda x: (x.mean().item(), x.var().item(), x.std().item()))
    assert not report.passed and "n - 1" in report.hint
    hard_coded = ex01.STATISTICS_CHECK.evaluate(lambda x: (5.0, 5.0, 5**0.5))
    assert not hard_coded.passed and hard_coded.cases[0].passed  # right on the visible example only
    assert not ex01.STATISTICS_CHECK.evaluate(lambda x: "five").passed


def test_multiple_choice(capsys):
    assert checks.check_choice("ex01.variance", lambda: "b").passed
    assert checks.check_choice("ex01.variance", "(B)").passed
    wrong = checks.check_choice("ex01.variance", lambda: "a")
    assert not wrong.passed and "6.667" in wrong.hint
    assert not checks.check_choice("ex01.variance", lambda: "z").passed
    assert checks.check_choice("ex01.variance", not_implemented_answer).status == "not-implemented"
    out = capsys.readouterr().out
    assert out.count("✅") == 2 and out.count("❌") == 2 and "not implemented yet" in out


def not_implemented_answer():
    raise NotImplementedError()


def test_a_check_on_a_cells_last_line_shows_its_report_exactly_once(capsys):
    """`check_layer_norm(layer_norm)` prints its report (so that it shows wherever the call is in a cell);
    Jupyter then displays the returned report as the cell's value, which must add nothing: no second
    copy of the text, no `CheckReport(...)`."""
    from IPython.core.formatters import DisplayFormatter

    for fn in (reference, unbiased_variance):
        report = ex01.check_layer_norm(fn)
        assert capsys.readouterr().out == report.text() + "\n"
        shown = DisplayFormatter().format(report)  # what Jupyter shows for a cell's value (mime bundle)
        assert shown == ({}, {}) and capsys.readouterr().out == ""


def test_registry_of_every_exercise_is_consistent():
    from conftest import ROOT

    for path in sorted((ROOT / "solutions").glob("ex*.ipynb")):
        reg = checks.exercise_registry(path.stem)
        assert reg.graded, path.stem
        source = path.read_text()
        for item in reg.graded:
            assert item.check in reg.checks or item.check in reg.questions, item
            assert f"def {item.function}(" in source, f"{path.name} defines no function {item.function}"
            assert item.points > 0


def test_a_nan_producing_mistake_is_not_named_for_a_different_error():
    def nan_mistake(x, gamma=None, beta=None, eps=1e-5):
        return torch.full_like(x, float("nan"), dtype=torch.float64)

    check = checks.FunctionCheck(
        "layer_norm",
        ex01.LAYER_NORM_CHECK.make_cases,
        1e-4,
        "generic hint",
        mistakes={"named NaN mistake": nan_mistake},
    )
    report = check.evaluate(lambda x, gamma=None, beta=None, eps=1e-5: torch.zeros_like(x))
    assert report.status == "failed" and report.hint == "generic hint"
