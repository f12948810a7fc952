"""The mutation suite's machinery: the seeds, the two paths that judge a function, and what each test asserts.

tests/test_mutations.py (exercises 01, 02, 03, 05), tests/test_mutations_ex06.py (exercise 06) and
tests/test_mutations_ex04.py (exercise 04, whose checks build
models) use it; two files, so that `make test` (pytest-xdist with --dist loadfile) runs them on both workers.

Each variant of a graded function is judged at

    the notebook's seed 0      by the learner's check (`check.evaluate(fn, 0)`, what the check cell prints)
    30 grader seeds            that the instructors' grader could draw (never 0)

and at every one of these 31 seeds both paths run: the learner's (`evaluate`, in this process) and the grader's
(the kernel's messenger calls the function on the JSON request the grader sends, and course_utils.grading.judge
judges its JSON answer). Then:

    * every mutant is rejected at every seed, by both paths, with the same verdict on every case;
    * a mutant rejected by the numbers (not by raising, a wrong shape or dtype, NaN, or changing its input)
      misses the tolerance by at least MIN_MARGIN times on its worst case, at every seed: no borderline case
      decides a verdict;
    * the independent implementation passes at every seed, by both paths; the reference's outputs (cast back to
      the input's dtype, as a learner returns them) pass the judging of both paths at every seed;
    * no check, in either path, changes torch's global random state (the learner's random numbers).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import random

import pytest
import torch

from course_utils.checks import all_exercises
from course_utils.grading import kernel
from course_utils.grading.judge import judge
from course_utils.grading.run import kernel_request

from . import CORRECT, MUTANTS, describe

NOTEBOOK_SEED = 0
# What the grader draws (course_utils.grading.cli: secrets.randbelow(2**31 - 2) + 1), reproducibly; 777 is the seed
# of the report that started this suite (issue 12).
GRADER_SEEDS = [777, *random.Random(1234).sample(range(1, 2**31 - 1), 29)]
ALL_SEEDS = [NOTEBOOK_SEED, *GRADER_SEEDS]
MIN_MARGIN = 10.0

FUNCTION_ITEMS = {
    item.graded.check: item for exercise in all_exercises() for item in exercise.items() if item.kind == "function"
}
CHOICE_ITEMS = [item for exercise in all_exercises() for item in exercise.items() if item.kind == "choice"]


def functions_of(*exercise_ids: str) -> list:
    """The graded functions (their check names) of these exercises ('ex04', ...), in registry order."""
    return [
        item.graded.check
        for exercise in all_exercises()
        if exercise.id.split("_", 1)[0] in exercise_ids
        for item in exercise.items()
        if item.kind == "function"
    ]


def mutant_params(names) -> list:
    return [pytest.param(name, fn, id=fn.__name__) for name in names for fn in MUTANTS[name]]


# ----------------------------------------------------------------------------------------------------
# speed, without changing a verdict
# ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fast_but_faithful():
    """Tiny tensors: one torch thread (two threads per xdist worker on a 2-core machine are many times slower).
    Each check's cases for a seed are built once per worker and shared by every variant (building them is
    deterministic, and neither path changes them: the notebook's calls get copies, the grader's get JSON). Each
    named mistake is computed once per case: the hint loop (`diagnose`) of both paths runs the mistakes on every
    failing case of every variant, and a mistake is a deterministic function of the case's arguments."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    patched = {}
    for item in FUNCTION_ITEMS.values():
        check = item.check
        patched[check.name] = (
            functools.lru_cache(maxsize=None)(check.cases),
            {hint: _memoized(mistake) for hint, mistake in check.mistakes.items()},
        )
    originals = {item.check.name: item.check.mistakes for item in FUNCTION_ITEMS.values()}
    _install(patched)
    _PATCHES.update(patched=patched, originals=originals)
    try:
        yield
    finally:
        _uninstall(originals)
        _PATCHES.clear()
        torch.set_num_threads(threads)


_PATCHES: dict = {}


def _install(patched):
    for item in FUNCTION_ITEMS.values():
        item.check.cases, item.check.mistakes = patched[item.check.name]


def _uninstall(originals):
    for item in FUNCTION_ITEMS.values():
        item.check.__dict__.pop("cases", None)
        item.check.mistakes = originals[item.check.name]


@contextlib.contextmanager
def unpatched():
    """The checks exactly as the notebooks use them (no shared cases, no remembered mistakes), for a while."""
    if not _PATCHES:
        yield
        return
    _uninstall(_PATCHES["originals"])
    try:
        yield
    finally:
        _install(_PATCHES["patched"])


def _fingerprint(value):
    if isinstance(value, torch.Tensor):
        data = value.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        return value.dtype, tuple(value.shape), hashlib.sha1(data).digest()
    if isinstance(value, dict):  # a case's dict of weights: passed as it is, never copied or changed
        return "dict", id(value)
    return type(value), value


def _memoized(mistake):
    results = {}

    def run(*args):
        key = tuple(_fingerprint(a) for a in args)
        if key not in results:
            try:
                results[key] = (True, mistake(*args))
            except Exception as exc:  # a mistake that raises on this case raises every time
                results[key] = (False, exc)
        ok, value = results[key]
        if not ok:
            raise value
        return value

    return run


# ----------------------------------------------------------------------------------------------------
# the two paths
# ----------------------------------------------------------------------------------------------------
@functools.cache
def _request_text(name: str, seed: int) -> str:
    """The request the grader sends for this function at this seed (the same for every submission)."""
    item = FUNCTION_ITEMS[name]
    return json.dumps(kernel_request(item.kind, item.check, seed))


def grader_report(name, fn, seed, tmp_path):
    """The verdict the batch grader reaches: the kernel's messenger calls fn on the grader's request (here, in this
    process), and course_utils.grading.judge judges the JSON it writes."""
    item = FUNCTION_ITEMS[name]
    request, answer = tmp_path / "request.json", tmp_path / "answer.json"
    request.write_text(_request_text(name, seed), encoding="utf-8")
    kernel.call_learner_function({"learner_function": fn}, "learner_function", str(request), str(answer))
    return judge(item.kind, item.graded, item.check, json.loads(answer.read_text(encoding="utf-8")), seed)


def both_paths(name, fn, seed, tmp_path):
    """(the notebook's verdict, the grader's verdict) on fn at this seed."""
    return FUNCTION_ITEMS[name].check.evaluate(fn, seed), grader_report(name, fn, seed, tmp_path)


def verdict(report):
    return report.status, [c.passed for c in report.cases]


def margin(report) -> float:
    """How many times its worst case misses the tolerance (inf: rejected by something other than the numbers)."""
    if report.status != "failed":
        return math.inf
    failed = [c for c in report.cases if not c.passed]
    by_numbers = [c.error / c.tolerance for c in failed if all("max abs error" in part for part in c.note.split("; "))]
    if len(by_numbers) < len(failed):
        return math.inf
    return max(by_numbers)


def as_learner_returns(reference):
    """The reference as a learner's function returns its answer: in the input's dtype (the reference computes in
    float64; a float16 input must come back as float16)."""

    def fn(*args):
        dtype = next(a.dtype for a in args if isinstance(a, torch.Tensor))
        out = reference(*args)
        if isinstance(out, tuple):
            return tuple(o.to(dtype) if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in out)
        return out.to(dtype) if dtype in (torch.float16, torch.bfloat16) else out

    return fn


# ----------------------------------------------------------------------------------------------------
# what the tests assert
# ----------------------------------------------------------------------------------------------------
def assert_rejected_everywhere_alike(name, fn, tmp_path):
    """The mutant is rejected at all 31 seeds by both paths, which agree case by case, by a robust margin."""
    accepted, disagree, margins = [], [], {}
    for seed in ALL_SEEDS:
        learner, grader = both_paths(name, fn, seed, tmp_path)
        if verdict(learner) != verdict(grader):
            disagree.append(f"seed {seed}: notebook {verdict(learner)} vs grader {verdict(grader)}")
        if learner.passed or grader.passed:
            accepted.append(seed)
        margins[seed] = margin(learner)
    what = f"{name}: {describe(fn)}"
    assert not accepted, f"{what}: accepted at seeds {accepted} ({len(accepted)} of {len(ALL_SEEDS)})"
    assert not disagree, f"{what}: the notebook and the grader disagree: " + "; ".join(disagree)
    thin = {seed: round(m, 2) for seed, m in margins.items() if m < MIN_MARGIN}
    assert not thin, f"{what}: rejected by less than {MIN_MARGIN:g}x the tolerance at seeds {thin}"


def assert_independent_passes_everywhere(name, tmp_path):
    """The independent implementation passes at all 31 seeds by both paths."""
    fn = CORRECT[name]
    rejected = []
    for seed in ALL_SEEDS:
        learner, grader = both_paths(name, fn, seed, tmp_path)
        if not (learner.passed and grader.passed):
            rejected.append(f"seed {seed}: {learner.text()} / grader: {grader.text()}")
    assert not rejected, f"{name} ({fn.__name__}) rejected:\n" + "\n".join(rejected)


def assert_reference_outputs_pass_everywhere(name):
    """The reference's own outputs, in the input's dtype, judged as a learner's would be, pass at all 31 seeds in
    both paths. (Called as a learner's function, the reference is a forbidden call whatever it returns:
    checks/forbidden.py; so its outputs are judged, as the two paths judge a learner's.)"""
    item = FUNCTION_ITEMS[name]
    check, reference = item.check, as_learner_returns(item.check.reference)
    for seed in ALL_SEEDS:
        results, answers = [], []
        for case in check.cases(seed):
            args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in case.args)
            output = reference(*args)
            results.append(check.judge_case(case, output, args))
            answers.append({"output": kernel.encode(output), "args_after": [kernel.encode(a) for a in args]})
        learner = check.report(results)
        answer = json.loads(json.dumps({"status": "ok", "results": answers}))
        grader = judge(item.kind, item.graded, check, answer, seed)
        assert learner.passed and grader.passed, f"{name}, seed {seed}: {learner.text()} / grader: {grader.text()}"


def assert_named_mistakes_made_by_mutants(name):
    """Each named mistake of the check is one of the mutants: at the notebook's seed, some mutant gets its hint."""
    check = FUNCTION_ITEMS[name].check
    hints = {check.evaluate(fn, NOTEBOOK_SEED).hint for fn in MUTANTS[name]}
    missing = [hint[:70] for hint in check.mistakes if hint not in hints]
    assert not missing, f"{name}: no mutant is diagnosed as {missing}"


def assert_global_random_state_untouched(name, tmp_path):
    """Building the cases, checking a right and a wrong function (whose named mistakes then run) in the notebook
    and in the grader: none of it reseeds or advances torch's global random generator (the learner's)."""
    with unpatched():
        for seed in (NOTEBOOK_SEED, GRADER_SEEDS[0]):
            torch.manual_seed(12345)
            before = torch.get_rng_state()
            for fn in (CORRECT[name], MUTANTS[name][0]):
                FUNCTION_ITEMS[name].check.evaluate(fn, seed)
                item = FUNCTION_ITEMS[name]
                request, answer = tmp_path / "request.json", tmp_path / "answer.json"
                request.write_text(json.dumps(kernel_request(item.kind, item.check, seed)), encoding="utf-8")
                kernel.call_learner_function({"f": fn}, "f", str(request), str(answer))
                judge(item.kind, item.graded, item.check, json.loads(answer.read_text(encoding="utf-8")), seed)
            assert torch.equal(torch.get_rng_state(), before), f"{name}: a check changed torch's global random state"
