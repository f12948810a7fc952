"""The mutation suite for exercise 04 (where the norm sits): its checks build models, so its share of the suite
has a file of its own, which pytest-xdist runs next to tests/test_mutations.py. What is asserted, at which seeds and
along which paths: tests/mutants/harness.py."""

import pytest
from mutants import harness
from mutants.harness import fast_but_faithful  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("fast_but_faithful")

NAMES = harness.functions_of("ex04")


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
