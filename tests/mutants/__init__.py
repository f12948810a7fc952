"""Realistic wrong implementations of every graded function, for the mutation suite (tests/test_mutations.py).

One module per exercise (ex01.py ... ex06.py). Each defines, keyed by the graded item's check name:

    CORRECT   {check name: an independent correct implementation}, written the way a learner could write it
              and differently from the reference (course_utils.checks.exNN), with the operations the
              exercise allows (mean, sum, sqrt, rsqrt, pow, indexing, arithmetic)
    MUTANTS   {check name: [wrong implementations]}: the check's named mistakes rewritten as learner code,
              plus the other realistic slips (eps ignored or hard-coded, a missing gain or bias, half
              precision not upcast, the wrong axis, momentum the wrong way round, ...)

Each mutant is a small function whose docstring's first line names the mistake. Every mutant must be
rejected by the learner's check at the notebook's seed and by the grader at 30 other seeds, with the
notebook's and the grader's verdicts agreeing case by case; both correct implementations (the reference
and CORRECT's) must be accepted everywhere.

Like a learner's function, a mutant takes the inputs of one case (float32, or float16/bfloat16 where the
case says so) and returns its answer in that dtype; it uses no random numbers.
"""

from . import ex01, ex02, ex03, ex04, ex05, ex06

MODULES = (ex01, ex02, ex03, ex04, ex05, ex06)
CORRECT = {name: fn for module in MODULES for name, fn in module.CORRECT.items()}
MUTANTS = {name: fns for module in MODULES for name, fns in module.MUTANTS.items()}


def describe(fn) -> str:
    """The mistake a mutant makes: the first line of its docstring."""
    return (fn.__doc__ or fn.__name__).strip().splitlines()[0]
