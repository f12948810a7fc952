"""Chapter 03: the axis diagrams shade exactly the reduction groups, and exercise 03's checks accept the right
BatchNorm / masked statistics and reject realistic wrong ones, naming the mistake."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from course_utils import checks, diagrams, norms
from course_utils.checks import ex03


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# ----------------------------------------------------------------------------------------------------
# diagrams: the rule, and what is actually drawn
# ----------------------------------------------------------------------------------------------------
def drawn_cells(ax):
    """{index: shaded?} read back from the cell patches' gids ("shaded:0,1,2" / "plain:0,1,2")."""
    cells = {}
    for patch in ax.patches:
        gid = patch.get_gid()
        if gid and gid.split(":")[0] in ("shaded", "plain"):
            kind, idx = gid.split(":")
            cells[tuple(int(i) for i in idx.split(","))] = kind == "shaded"
    return cells


def shaded_faces(ax, color):
    rgb = matplotlib.colors.to_rgb(color)
    return {p.get_gid() for p in ax.patches if p.get_gid() and np.allclose(p.get_facecolor()[:3], rgb, atol=1e-6)}


@pytest.mark.parametrize(
    "dims, index, expected_count",
    [
        ((2,), (1, 2, 3), 6),  # LayerNorm: the features of one token
        ((0, 1), (1, 2, 3), 12),  # BatchNorm: one feature over batch and tokens
        ((1,), (1, 2, 3), 4),  # InstanceNorm: one sample, one feature, all tokens
        ((0, 1, 2), (0, 0, 0), 72),  # everything
        ((-1,), (2, 0, 5), 6),  # negative dims mean the same
    ],
)
def test_shared_cells_are_the_elements_that_agree_on_every_kept_axis(dims, index, expected_count):
    shape = (3, 4, 6)
    mask = diagrams.shared_cells(shape, dims, index)
    assert mask.sum() == expected_count and mask[index]
    kept = [a for a in range(3) if a not in {d % 3 for d in dims}]
    for cell in np.ndindex(shape):
        assert mask[cell] == all(cell[a] == index[a] for a in kept)


def test_shared_cells_matches_the_groups_torch_reduces_over():
    """Perturb one element: exactly the elements in its group see their statistic change."""
    x = torch.randn(3, 4, 6, dtype=torch.float64)
    for dims in [(2,), (0, 1), (1,)]:
        y = x.clone()
        y[1, 2, 3] += 5.0
        changed = (y.mean(dim=dims, keepdim=True) - x.mean(dim=dims, keepdim=True)).abs().expand_as(x) > 1e-9
        assert np.array_equal(changed.numpy(), diagrams.shared_cells(x.shape, dims, (1, 2, 3)))


@pytest.mark.parametrize(
    "shape, dims", [((3, 4, 6), (2,)), ((3, 4, 6), (0, 1)), ((3, 4, 6), (1,)), ((4, 6), (1,)), ((4, 6), (0,))]
)
def test_draw_norm_axes_shades_exactly_the_reduction_group(shape, dims):
    index = (0, 1, 2) if len(shape) == 3 else (1, 2)
    color = "#CC79A7"
    ax = diagrams.draw_norm_axes(dims, shape, index=index, color=color)
    cells = drawn_cells(ax)
    mask = diagrams.shared_cells(shape, dims, index)
    assert set(cells) == set(np.ndindex(shape))  # every element is drawn once
    assert {i for i, s in cells.items() if s} == {tuple(i) for i in np.argwhere(mask)}
    # and the shaded ones are the ones painted in the highlight colour
    painted = shaded_faces(ax, color)
    assert painted and all(g.startswith("shaded:") for g in painted)
    assert len(painted) == int(mask.sum())
    assert ax.get_legend() is not None and ax.get_title()


def test_table_figure_shades_one_row_for_layernorm_and_one_column_for_batchnorm():
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    fig = diagrams.table_figure(x, row=1, column=2)
    ln_ax, bn_ax = fig.axes
    ln = {i for i, s in drawn_cells(ln_ax).items() if s}
    bn = {i for i, s in drawn_cells(bn_ax).items() if s}
    assert ln == {(1, c) for c in range(6)}
    assert bn == {(r, 2) for r in range(4)}
    assert "LayerNorm" in ln_ax.get_title() and "BatchNorm" in bn_ax.get_title()
    texts = {t.get_text() for t in ln_ax.texts} | {t.get_text() for t in bn_ax.texts}
    assert "8.50, 2.92" in texts  # row 1 = 6..11: mean 8.5, variance 35/12
    assert {"11.00", "45.00"} <= texts  # column 2 = 2, 8, 14, 20: mean 11, variance 45


def test_block_figure_has_the_layernorm_strip_and_the_batchnorm_slab():
    fig = diagrams.block_figure(shape=(3, 4, 6), sample=0, token=1, feature=2)
    ln_ax, bn_ax = fig.axes  # LayerNorm left, BatchNorm right, the same order as table_figure
    assert "LayerNorm" in ln_ax.get_title() and "BatchNorm" in bn_ax.get_title()
    bn = {i for i, s in drawn_cells(bn_ax).items() if s}
    ln = {i for i, s in drawn_cells(ln_ax).items() if s}
    assert bn == {(n, t, 2) for n in range(3) for t in range(4)}
    assert ln == {(0, 1, d) for d in range(6)}
    labels = " ".join(t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts())
    assert "12 values" in labels and "6 features" in labels


def test_explorer_draws_and_describes_every_norm():
    x = torch.randn(2, 3, 4)
    for norm, dims in diagrams.NORM_AXES.items():
        fig = diagrams.draw_norm_explorer(x, norm, 1, 2, 3)
        block_ax, table_ax = fig.axes
        expected = {tuple(i) for i in np.argwhere(diagrams.shared_cells(x.shape, dims, (1, 2, 3)))}
        assert {i for i, s in drawn_cells(block_ax).items() if s} == expected
        assert {i for i, s in drawn_cells(table_ax).items() if s} == expected
        text = diagrams.describe_norm_explorer(x, norm, 1, 2, 3)
        assert norm in text and str(dims) in text
        plt.close(fig)
    stats = diagrams.group_statistics(x, "BatchNorm", (0, 1))
    assert torch.allclose(stats["mean"].flatten(), x.double().mean(dim=(0, 1)))
    assert "mean square" in diagrams.describe_norm_explorer(x, "RMSNorm", 0, 0, 0)


def test_explorer_widget_shows_a_static_figure_and_controls():
    pytest.importorskip("ipywidgets")
    box = diagrams.norm_axes_explorer(torch.randn(2, 3, 4))
    assert [c.description for c in box.children] == ["norm", "sample n", "token t", "feature d"]
    assert list(box.children[0].options) == list(diagrams.NORM_AXES)


def test_explorer_alt_text_says_what_is_shaded():
    x = torch.randn(2, 3, 4)
    alt = diagrams.explorer_alt(x, "InstanceNorm", 1, 2, 3)
    assert alt.startswith("InstanceNorm") and "3 values" in alt and "x[1, 2, 3]" in alt and "8 such groups" in alt
    assert "tokens" in alt


def test_every_chapter_figure_is_readable_in_a_room():
    """At least 10 pt text and labelled data axes (course_utils.figures), for each figure chapter 03 shows."""
    from course_utils.figures import figure_problems

    x = torch.randn(2, 3, 4).round(decimals=1)
    means = {"real": torch.randn(8), "pad 8": torch.randn(8), "pad 16": torch.randn(8)}
    sizes = [2, 4, 8]
    figures = {
        "table": diagrams.table_figure(torch.arange(24.0).reshape(4, 6)),
        "block": diagrams.block_figure(),
        **{f"explorer {n}": diagrams.draw_norm_explorer(x, n) for n in diagrams.NORM_AXES},
        "padding": diagrams.padding_figure(means),
        "spread": diagrams.spread_figure(sizes, {b: 1 / b for b in sizes}, {b: 0.0 for b in sizes}, repeats=10),
        "running": diagrams.running_stats_figure(torch.randn(20, 8), torch.randn(8), [0, 2], [1.0] * 20, 0.2, 16),
    }
    for name, fig in figures.items():
        assert figure_problems(fig) == [], name
    padding_ax = figures["padding"].axes[0]
    assert padding_ax.get_xlabel() == "feature d" and len(padding_ax.patches) == 3 * 8


def test_diagram_input_errors_are_clear():
    with pytest.raises(ValueError, match="out of range"):
        diagrams.shared_cells((2, 3), (2,), (0, 0))
    with pytest.raises(ValueError, match="not inside"):
        diagrams.shared_cells((2, 3), (1,), (2, 0))
    with pytest.raises(ValueError, match="empty"):
        diagrams.shared_cells((2, 3), (), (0, 0))
    with pytest.raises(ValueError, match="2-d"):
        diagrams.draw_norm_axes((0,), (2, 3, 4, 5))


# ----------------------------------------------------------------------------------------------------
# exercise 03, task 1: BatchNorm step
# ----------------------------------------------------------------------------------------------------
def right(x, running_mean, running_var, training, momentum=0.1, eps=1e-5):
    if not training:
        return (x - running_mean) / torch.sqrt(running_var + eps), running_mean.clone(), running_var.clone()
    dims = tuple(range(x.dim() - 1))
    n = x.numel() // x.shape[-1]
    mean = x.mean(dim=dims)
    var = ((x - mean) ** 2).mean(dim=dims)
    return (
        (x - mean) / torch.sqrt(var + eps),
        (1 - momentum) * running_mean + momentum * mean,
        (1 - momentum) * running_var + momentum * var * n / (n - 1),
    )


def via_torch_module(x, running_mean, running_var, training, momentum=0.1, eps=1e-5):
    rm, rv = running_mean.clone(), running_var.clone()
    y = norms.batch_norm(x, rm, rv, training=training, momentum=momentum, eps=eps)
    return y, rm, rv


def biased_running_variance(x, rm, rv, training, momentum=0.1, eps=1e-5):
    y, new_mean, _ = right(x, rm, rv, training, momentum, eps)
    if not training:
        return y, new_mean, rv.clone()
    dims = tuple(range(x.dim() - 1))
    var = x.var(dim=dims, unbiased=False)
    return y, new_mean, (1 - momentum) * rv + momentum * var


def wrong_momentum_direction(x, rm, rv, training, momentum=0.1, eps=1e-5):
    if not training:
        return right(x, rm, rv, training, momentum, eps)
    y, _, _ = right(x, rm, rv, training, momentum, eps)
    dims = tuple(range(x.dim() - 1))
    n = x.numel() // x.shape[-1]
    mean, var = x.mean(dim=dims), x.var(dim=dims, unbiased=False) * n / (n - 1)
    return y, momentum * rm + (1 - momentum) * mean, momentum * rv + (1 - momentum) * var


def normalizes_over_features(x, rm, rv, training, momentum=0.1, eps=1e-5):
    y, new_mean, new_var = right(x, rm, rv, training, momentum, eps)
    if training:
        y = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    return y, new_mean, new_var


def eval_uses_batch_statistics(x, rm, rv, training, momentum=0.1, eps=1e-5):
    if training:
        return right(x, rm, rv, training, momentum, eps)
    dims = tuple(range(x.dim() - 1))
    mean, var = x.mean(dim=dims), x.var(dim=dims, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps), rm.clone(), rv.clone()


def normalizes_with_unbiased_variance(x, rm, rv, training, momentum=0.1, eps=1e-5):
    y, new_mean, new_var = right(x, rm, rv, training, momentum, eps)
    if training:
        dims = tuple(range(x.dim() - 1))
        y = (x - x.mean(dim=dims)) / torch.sqrt(x.var(dim=dims, unbiased=True) + eps)
    return y, new_mean, new_var


def updates_in_place(x, rm, rv, training, momentum=0.1, eps=1e-5):
    y, new_mean, new_var = right(x, rm, rv, training, momentum, eps)
    rm.copy_(new_mean)
    rv.copy_(new_var)
    return y, rm, rv


def only_2d(x, rm, rv, training, momentum=0.1, eps=1e-5):
    """Reduces dim 0 only: fine for (N, D), wrong for (N, T, D)."""
    if not training:
        return right(x, rm, rv, training, momentum, eps)
    mean, var = x.mean(dim=0), x.var(dim=0, unbiased=False)
    n = x.shape[0]
    return (
        (x - mean) / torch.sqrt(var + eps),
        (1 - momentum) * rm + momentum * mean.reshape(-1, x.shape[-1]).mean(0),
        (1 - momentum) * rv + momentum * (var * n / (n - 1)).reshape(-1, x.shape[-1]).mean(0),
    )


def returns_only_y(x, rm, rv, training, momentum=0.1, eps=1e-5):
    return right(x, rm, rv, training, momentum, eps)[0]


def not_implemented(*args, **kwargs):
    raise NotImplementedError()


def test_batch_norm_check_accepts_a_right_implementation_and_names_the_courses_as_a_shortcut(capsys):
    assert ex03.check_batch_norm(right).passed and ex03.check_batch_norm_stream(right).passed
    for check in (ex03.check_batch_norm, ex03.check_batch_norm_stream):
        report = check(via_torch_module)  # the right numbers through course_utils.norms.batch_norm: no points
        assert not report.passed and report.forbidden == ["course_utils.norms.batch_norm"], report.text()
        assert all(c.passed for c in report.cases), report.text()
    out = capsys.readouterr().out
    assert out.count("✅") == 2 and out.count("which this task asks you to write yourself") == 2


@pytest.mark.parametrize(
    "fn, words",
    [
        (biased_running_variance, "*biased* batch variance"),
        (wrong_momentum_direction, "wrong side"),
        (normalizes_over_features, "that is LayerNorm"),
        (eval_uses_batch_statistics, "the batch's own statistics"),
        (normalizes_with_unbiased_variance, "only the stored running variance is unbiased"),
    ],
)
def test_batch_norm_check_names_each_realistic_mistake(fn, words):
    hints = [hint for hint in ex03.BATCH_NORM_CHECK.mistakes if words in hint]
    assert len(hints) == 1, (words, hints)  # the words single out one named mistake
    report = ex03.BATCH_NORM_CHECK.evaluate(fn)
    assert report.status == "failed", fn.__name__
    assert report.hint == hints[0], (fn.__name__, report.hint)
    text = report.text()
    assert "❌" in text and "tolerance" in text


@pytest.mark.parametrize(
    "fn",
    [
        biased_running_variance,
        wrong_momentum_direction,
        normalizes_over_features,
        eval_uses_batch_statistics,
        normalizes_with_unbiased_variance,
    ],
)
def test_stream_check_rejects_wrong_implementations(fn):
    assert ex03.check_batch_norm_stream(fn).status == "failed"


def test_stream_check_catches_errors_that_accumulate():
    report = ex03.check_batch_norm_stream(wrong_momentum_direction)
    assert report.status == "failed" and "running_mean" in report.cases[0].note


def test_batch_norm_check_rejects_sequence_shape_bugs_in_place_updates_and_wrong_returns():
    report = ex03.BATCH_NORM_CHECK.evaluate(only_2d)
    assert report.status == "failed" and any("(4, 5, 6)" in c.name for c in report.cases if not c.passed)
    in_place = ex03.BATCH_NORM_CHECK.evaluate(updates_in_place)
    assert in_place.status == "failed" and "in place" in in_place.hint and "return" in in_place.hint
    single = ex03.BATCH_NORM_CHECK.evaluate(returns_only_y)
    assert single.status == "failed" and "expected a tuple" in single.text()


def test_batch_norm_not_implemented_is_one_friendly_line():
    for check in (ex03.BATCH_NORM_CHECK.evaluate, ex03.MASKED_STATS_CHECK.evaluate):
        report = check(not_implemented)
        assert report.status == "not-implemented" and "\n" not in report.text()
    assert ex03.check_batch_norm_stream(not_implemented).status == "not-implemented"


def test_batch_norm_cases_follow_a_stream_and_cover_the_shapes():
    cases = ex03.BATCH_NORM_CHECK.cases()
    names = " ".join(c.name for c in cases)
    for kind in ("step 1", "step 4", "eval mode", "single sample", "(4, 5, 6)", "batch of 2", "momentum 0.3"):
        assert kind in names
    # step k starts from the reference's statistics after step k - 1
    for prev, nxt in zip(cases[:3], cases[1:4]):
        assert torch.allclose(nxt.args[1].double(), prev.expected[1], atol=1e-6)
        assert torch.allclose(nxt.args[2].double(), prev.expected[2], atol=1e-6)
    assert not torch.equal(cases[0].args[0], ex03.BATCH_NORM_CHECK.cases(seed=1)[0].args[0])


# ----------------------------------------------------------------------------------------------------
# exercise 03, task 2: masked statistics
# ----------------------------------------------------------------------------------------------------
def masked_right(x, mask):
    w = mask.unsqueeze(-1).to(x.dtype)
    count = mask.sum()
    mean = (x * w).sum(dim=(0, 1)) / count
    return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / count


def masked_ignores_mask(x, mask):
    return x.mean(dim=(0, 1)), x.var(dim=(0, 1), unbiased=False)


def masked_divides_by_all_positions(x, mask):
    w = mask.unsqueeze(-1).to(x.dtype)
    mean = (x * w).sum(dim=(0, 1)) / mask.numel()
    return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / mask.numel()


def masked_unbiased(x, mask):
    real = x[mask]
    return real.mean(0), real.var(0, unbiased=True)


def masked_assumes_zero_padding(x, mask):
    count = mask.sum()
    mean = x.sum(dim=(0, 1)) / count
    w = mask.unsqueeze(-1).to(x.dtype)
    return mean, (((x - mean) ** 2) * w).sum(dim=(0, 1)) / count


def test_masked_stats_check_accepts_a_right_implementation_and_names_the_reference_as_a_shortcut():
    assert ex03.check_masked_batch_stats(masked_right).passed
    report = ex03.check_masked_batch_stats(ex03.reference_masked_batch_stats)
    assert not report.passed and report.forbidden == ["course_utils.checks.ex03.reference_masked_batch_stats"]
    assert all(c.passed for c in report.cases), report.text()


@pytest.mark.parametrize(
    "fn, words",
    [
        (masked_ignores_mask, "padding is included"),
        (masked_divides_by_all_positions, "all N·T positions"),
        (masked_unbiased, "unbiased"),
        (masked_assumes_zero_padding, "exactly zero"),
    ],
)
def test_masked_stats_check_names_each_mistake(fn, words):
    report = ex03.MASKED_STATS_CHECK.evaluate(fn)
    assert report.status == "failed" and words in report.hint, (fn.__name__, report.hint)


def test_masked_stats_without_padding_equal_batch_norm_statistics():
    case = next(c for c in ex03.MASKED_STATS_CHECK.cases() if "no padding" in c.name)
    x, mask = case.args
    assert mask.all()
    assert torch.allclose(case.expected[0], x.double().mean(dim=(0, 1)))
    assert torch.allclose(case.expected[1], x.double().var(dim=(0, 1), unbiased=False))


# ----------------------------------------------------------------------------------------------------
# exercise 03, task 3: the axis quiz
# ----------------------------------------------------------------------------------------------------
def test_axis_quiz_answers_agree_with_the_diagrams_norm_table():
    by_letter = {"a": ("LayerNorm", "RMSNorm"), "b": ("BatchNorm",), "c": ("InstanceNorm",)}
    for qid, dims in ex03.QUIZ_DIMS.items():
        q = checks.find_question(qid)
        names = by_letter[q.answer]
        assert all(diagrams.NORM_AXES[n] == dims for n in names), qid
        assert str(dims) not in q.prompt  # the learner reads the picture: the prompt does not give the dims away
        assert checks.check_choice(qid, q.answer).passed
        for wrong in set(q.choices) - {q.answer}:
            assert not checks.check_choice(qid, wrong).passed
    # option (d), nn.LayerNorm((T, D)), is one statistic per sample: none of the three diagrams
    assert (1, 2) not in ex03.QUIZ_DIMS.values()


def test_axis_quiz_figure_draws_the_keyed_groups_readably():
    from course_utils.figures import figure_problems

    fig = ex03.draw_axis_quiz()
    assert [ax.get_title() for ax in fig.axes] == ["Norm A", "Norm B", "Norm C"]
    for ax, dims in zip(fig.axes, ex03.QUIZ_DIMS.values()):
        expected = diagrams.shared_cells(ex03.QUIZ_SHAPE, dims, ex03.QUIZ_INDEX)
        assert {i for i, s in drawn_cells(ax).items() if s} == {tuple(i) for i in np.argwhere(expected)}
    assert figure_problems(fig) == []
    # the alt text describes each group in words, in the order drawn
    assert ex03.QUIZ_ALT.index("Norm A") < ex03.QUIZ_ALT.index("Norm B") < ex03.QUIZ_ALT.index("Norm C")


def test_registry_points_at_the_solution_functions():
    reg = checks.exercise_registry("ex03_batchnorm")
    assert sum(g.points for g in reg.graded) == 10
    assert set(reg.questions) == set(ex03.QUIZ_DIMS)


# ----------------------------------------------------------------------------------------------------
# chapter 03's check questions: the numbers in their options are what the code computes
# ----------------------------------------------------------------------------------------------------
def chapter_quiz():
    """{id: (prompt, choices, answer)} of chapter 03's questions, in English (course_utils/questions/ch03.py)."""
    from course_utils.questions import chapter_questions

    return {q.id: (q.prompt, q.choices, q.answer) for q in chapter_questions("ch03")}


def test_chapter_quiz_numbers_are_computed():
    quiz = chapter_quiz()
    assert set(quiz) == {"ch03.axes", "ch03.padding", "ch03.batch2", "ch03.running_var", "ch03.generation", "ch03.leak"}

    # axes: (8, 16, 64); each option is one norm's (groups, values per group)
    _, choices, answer = quiz["ch03.axes"]
    h = torch.randn(8, 16, 64)
    for letter, dims in {"a": (2,), "b": (1,), "c": (0, 1), "d": (1, 2)}.items():
        stats = diagrams.group_statistics(h, "LayerNorm", dims)
        assert choices[letter] == f"{stats['groups']:,} means, each from {stats['values_per_group']:,} values"
    assert answer == "c" and diagrams.NORM_AXES["BatchNorm"] == (0, 1)

    # padding: 3, 6 and 5 tokens padded to 8, real mean 2.0
    _, choices, answer = quiz["ch03.padding"]
    x, mask = torch.zeros(3, 8, 1), torch.zeros(3, 8, dtype=torch.bool)
    for i, length in enumerate([3, 6, 5]):
        x[i, :length] = 2.0 + torch.randn(length, 1)
        mask[i, :length] = True
    x[mask] += 2.0 - x[mask].mean()  # the real tokens average exactly 2.0
    padded_mean = x.mean(dim=(0, 1)).item()
    assert f"{padded_mean:.2f}" in choices[answer] and abs(padded_mean - 2.0 * 14 / 24) < 1e-6
    assert f"{2.0 * 10 / 24:.2f}" in choices["c"] and f"{2.0 * 24 / 14:.2f}" in choices["d"]

    # a batch of two: 3.0 and 103.0
    _, choices, answer = quiz["ch03.batch2"]
    pair = torch.tensor([[3.0], [103.0]])
    out = norms.batch_norm(pair, eps=0.0)
    assert out.flatten().tolist() == [-1.0, 1.0] and choices[answer] == "−1 and +1"
    unbiased = (pair - pair.mean()) / pair.std(unbiased=True)
    assert f"{unbiased[1].item():.2f}" in choices["b"]

    # running variance: 1.0, momentum 0.1, 16 samples of biased variance 3.0
    _, choices, answer = quiz["ch03.running_var"]
    batch = torch.randn(16, 1)
    batch = (batch - batch.mean()) / batch.std(unbiased=False) * math.sqrt(3.0)
    rm, rv = torch.zeros(1), torch.ones(1)
    norms.batch_norm(batch, rm, rv, training=True, momentum=0.1)
    assert f"{rv.item():.2f}" in choices[answer] and abs(rv.item() - 1.22) < 1e-5
