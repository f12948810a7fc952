"""The mutation suite for exercise 06 (a Gemma 3 block from a recipe in words): every mutant of tests/mutants/ex06.py
is rejected at the notebook's seed and 30 grader seeds, by the notebook's check and by the grader alike, with a
margin of 10x the tolerance; the independent implementations and the references' outputs pass everywhere. What is
asserted, at which seeds and along which paths: tests/mutants/harness.py.

Beyond the harness: the mistake the issue singles out, QK-Norm after RoPE, is invisible with gains that are the same
in both channels of every rotated pair (w = 0, a fresh model's) and is caught with the random gains the check draws."""

import mutants
import pytest
import torch
from mutants import ex06 as ex06_mutants
from mutants import harness
from mutants.harness import fast_but_faithful  # noqa: F401 (the fixture)

from course_utils.checks import ex06

pytestmark = pytest.mark.usefixtures("fast_but_faithful")

NAMES = harness.functions_of("ex06")


def test_exercise_06_grades_three_functions_each_with_many_mutants():
    assert NAMES == ["gemma_rms_norm", "gemma_attention", "gemma3_block"]
    for name in NAMES:
        assert len(ex06_mutants.MUTANTS[name]) >= 10, name
        described = [mutants.describe(fn) for fn in ex06_mutants.MUTANTS[name]]
        assert len(set(described)) == len(described), name


@pytest.mark.parametrize("name, fn", harness.mutant_params(NAMES))
def test_mutant_is_rejected_at_every_seed_by_both_paths_alike(name, fn, tmp_path):
    harness.assert_rejected_everywhere_alike(name, fn, tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_independent_implementation_passes_at_every_seed_by_both_paths(name, tmp_path):
    harness.assert_independent_passes_everywhere(name, tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_reference_outputs_pass_at_every_seed_by_both_paths(name):
    harness.assert_reference_outputs_pass_everywhere(name)


@pytest.mark.parametrize("name", NAMES)
def test_checks_leave_torchs_global_random_state_alone(name, tmp_path):
    harness.assert_global_random_state_untouched(name, tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_each_named_mistake_is_a_mutant_and_named_in_the_notebook(name):
    harness.assert_named_mistakes_made_by_mutants(name)


@pytest.mark.parametrize(
    ("name", "fn", "words"),
    [
        ("gemma3_block", ex06_mutants.block_pre_ln, "without the post-norms"),
        ("gemma_rms_norm", ex06_mutants.rms_norm_gain_w, "w instead of (1 + w)"),
        ("gemma_attention", ex06_mutants.attention_norm_after_rope, "*after* RoPE"),
        ("gemma_attention", ex06_mutants.attention_full_width, "full width"),
        ("gemma_rms_norm", ex06_mutants.rms_norm_over_rows, "wrong axis"),
        ("gemma_attention", ex06_mutants.attention_norm_over_positions, "over the positions"),
        ("gemma3_block", ex06_mutants.block_post_norm_on_the_sum, "to the *sum* (Post-LN)"),
        ("gemma_rms_norm", ex06_mutants.rms_norm_eps_outside_sqrt, "*outside* the square root"),
        ("gemma3_block", ex06_mutants.block_eps_outside_sqrt, "outside the square root"),
        ("gemma_attention", ex06_mutants.attention_no_causal_mask, "without the causal mask"),
    ],
)
def test_the_issues_named_mistakes_get_their_own_hint_at_every_seed(name, fn, words):
    check = harness.FUNCTION_ITEMS[name].check
    for seed in harness.ALL_SEEDS[:6]:
        report = check.evaluate(fn, seed)
        assert not report.passed and words in report.hint, (seed, report.text())


def test_qk_norm_after_rope_is_invisible_with_uniform_gains_and_caught_with_random_ones():
    d = 16
    zero, pairwise = torch.zeros(d), torch.rand(d // 2).repeat(2)  # the same gain in channels i and i + d/2
    assert ex06.rope_order_gap(zero, zero) < 1e-12
    assert ex06.rope_order_gap(pairwise, pairwise.flip(0).roll(d // 2)) < 1e-12
    g = torch.Generator().manual_seed(0)
    random_w = torch.rand(d, generator=g) * 1.5 - 0.5
    assert ex06.rope_order_gap(random_w, random_w.flip(0)) > 0.05
    # the check's own cases: the mutant and the reference agree once every gain is set to 0
    check = ex06.GEMMA_ATTENTION_CHECK
    for case in check.cases(0):
        x, params, n_head = case.args
        fresh = {k: torch.zeros_like(v) if "norm" in k else v for k, v in params.items()}
        gap = (
            (
                ex06_mutants.attention_norm_after_rope(x, fresh, n_head).double()
                - ex06.reference_gemma_attention(x, fresh, n_head)
            )
            .abs()
            .max()
        )
        assert gap < 1e-4, case.name
    assert not check.evaluate(ex06_mutants.attention_norm_after_rope).passed


def test_the_functional_forms_behind_the_hints_equal_the_references():
    for check, functional in (
        (ex06.GEMMA_ATTENTION_CHECK, ex06.functional_attention),
        (ex06.GEMMA3_BLOCK_CHECK, ex06.functional_block),
    ):
        for seed in (0, 777):
            for case in check.cases(seed):
                assert torch.allclose(functional(*case.args), case.expected, atol=1e-10, rtol=0), case.name
