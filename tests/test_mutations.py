"""The mutation suite: every realistic wrong implementation of every graded function is rejected, in the notebook
and by the grader, and the two agree; the right implementations are accepted everywhere.

For each graded function of exercises 01-06 (found through the registry, `all_exercises()`), tests/mutants/ holds
an independent correct implementation and a list of mutants: the check's named mistakes written as learner code,
and the other slips learners make (eps ignored or hard-coded, a missing gain or bias, half precision not upcast,
the wrong axis, momentum the wrong way round, ...). tests/mutants/harness.py says what each test asserts, at which
31 seeds (the notebook's and 30 the grader could draw), along which two paths (the notebook's check and the
grader's kernel messenger and judge).

This file holds exercises 01, 02, 03 and 05 and the suite's own checks; tests/test_mutations_ex04.py exercise 04,
tests/test_mutations_ex06.py exercise 06. Why three files and not one parametrised file: `make test` runs
pytest-xdist with `--dist loadfile` (nbval needs a notebook's cells in order, in one worker), which hands each file
to one worker whole. The suite is the longest unit test, so it is cut into three files that the two workers share;
the tests themselves live once, in tests/mutants/harness.py, and each file only names its functions (NAMES).
Size (with exercises 04 and 06): 16 functions, 179 mutants + 16 independent implementations, 31 seeds, 2 paths.
"""

import json

import mutants
import pytest
from mutants import harness
from mutants.harness import fast_but_faithful  # noqa: F401 (the fixture)

from course_utils.grading import kernel
from course_utils.grading.judge import judge
from course_utils.grading.run import kernel_request

pytestmark = pytest.mark.usefixtures("fast_but_faithful")

NAMES = harness.functions_of("ex01", "ex02", "ex03", "ex05")


def test_every_graded_function_has_mutants_and_an_independent_implementation():
    assert set(mutants.CORRECT) == set(harness.FUNCTION_ITEMS) == set(mutants.MUTANTS)
    for name, fns in mutants.MUTANTS.items():
        assert len(fns) >= 5, name
        described = [mutants.describe(fn) for fn in fns]
        assert len(set(described)) == len(described) and all(d != fn.__name__ for d, fn in zip(described, fns)), name
    assert sorted(NAMES + harness.functions_of("ex04") + harness.functions_of("ex06")) == sorted(harness.FUNCTION_ITEMS)
    # what docs/grading.md promises: the notebook's seed and 30 distinct grader seeds, a margin of 10x
    assert len(set(harness.GRADER_SEEDS)) == 30 and harness.NOTEBOOK_SEED not in harness.GRADER_SEEDS
    assert harness.MIN_MARGIN == 10


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


def test_a_bfloat16_rms_norm_computed_in_bfloat16_is_within_rounding_and_cannot_be_caught():
    """Why rms_norm_upcasts_only_float16 is not a mutant: on bfloat16 input, computing in bfloat16 lands within a
    rounding step or two of the exact answer (float16 overflows; bfloat16 has float32's range), as close as the
    right float32 computation's half step: no output comparison can tell the two apart."""
    (fn,) = mutants.ex02.WITHIN_ROUNDING["rms_norm"]
    check = harness.FUNCTION_ITEMS["rms_norm"].check
    for seed in harness.ALL_SEEDS:
        case = next(c for c in check.cases(seed) if "bfloat16" in c.name)
        result = check.compare(case, fn(*case.args))
        assert result.passed and result.error <= 2 * 2**-6, (seed, result)  # 2**-6: a bfloat16 step for |y| in [2, 4)


def test_wrong_answers_to_the_questions_are_rejected_by_both_paths(tmp_path):
    for item in harness.CHOICE_ITEMS:
        question = item.check
        for letter in question.choices:
            right = letter == question.answer
            learner = question.evaluate(lambda letter=letter: letter)
            request, answer = tmp_path / "request.json", tmp_path / "answer.json"
            request.write_text(json.dumps(kernel_request("choice", question, 1)), encoding="utf-8")
            kernel.call_learner_function({"f": lambda letter=letter: letter}, "f", str(request), str(answer))
            grader = judge("choice", item.graded, question, json.loads(answer.read_text(encoding="utf-8")), 1)
            assert learner.passed == grader.passed == right, (question.id, letter)
