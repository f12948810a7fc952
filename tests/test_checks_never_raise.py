"""No learner bug makes a check raise, and the notebook's check and the grader agree on every output.

Every FunctionCheck of every exercise (found through the registry, `all_exercises()`) is fed functions that
misbehave the ways learners' code does: they raise (even SystemExit, even an exception that cannot be
printed), return NaN, inf, the wrong shape, the wrong structure, the wrong type, an object whose methods
raise, a tensor on the meta device, or change their inputs in place, and every named mistake of the check
is fed to it as if a learner had written it. The check must answer each with a verdict, never an
exception, and the grader's path (the kernel's plain-data answer, judged by course_utils.grading.judge)
must reach the same verdict, case by case.

The first test is the crash that motivated this file: the BatchNorm mistake "updates the running
statistics in eval mode too" on the single-sample eval case. Its running variance is var * n / (n - 1)
with n = 1, 0 / 0 = NaN, and before the one guarded mistake loop in checks/core.py the check raised

    File "course_utils/checks_ex03.py", line 87, in _mistake
        _, wnote = compare_tensor(got, w, self.tolerance)
    File "course_utils/checks.py", line 162, in compare_tensor
        raise ValueError("compare_tensor: the expected tensor must be finite")
    ValueError: compare_tensor: the expected tensor must be finite

(the learner saw that traceback; the grader wrote "the output could not be compared (ValueError)").
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from course_utils.checks import CheckReport, all_exercises, check_choice, ex03, ex05, find_question
from course_utils.experiments import PRESETS
from course_utils.grading import kernel
from course_utils.grading.judge import judge
from course_utils.grading.run import kernel_request
from course_utils.records import RunRecord, SweepResult

from conftest import ROOT

FUNCTION_ITEMS = [item for exercise in all_exercises() for item in exercise.items() if item.kind == "function"]
ITEM_IDS = [item.graded.check for item in FUNCTION_ITEMS]


# ----------------------------------------------------------------------------------------------------
# the crash this file began with
# ----------------------------------------------------------------------------------------------------
def test_batch_norm_mistake_that_updates_running_stats_in_eval_mode_gets_a_verdict_not_a_traceback(capsys):
    hint, mistake = next((h, m) for h, m in ex03.BATCH_NORM_CHECK.mistakes.items() if "eval mode your running" in h)
    report = ex03.check_batch_norm(mistake)  # raised ValueError before the guard
    single = next(c for c in report.cases if c.name == "eval mode on a single sample")
    assert not single.passed and "running_var: output contains NaN" in single.note
    assert single.mistake is None  # a mistake with a NaN output cannot be the diagnosis on this case ...
    assert report.status == "failed" and report.hint == hint  # ... the eval case after the stream names it
    out = capsys.readouterr().out
    assert out.startswith("❌ batch_norm_step") and "Traceback" not in out


# ----------------------------------------------------------------------------------------------------
# functions that misbehave the ways learners' functions do
# ----------------------------------------------------------------------------------------------------
def _map_tensors(value, f):
    if isinstance(value, torch.Tensor):
        return f(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_map_tensors(v, f) for v in value)
    return value


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message for you")


class Hostile:
    """An object whose every conversion raises."""

    def __float__(self):
        raise RuntimeError("no float")

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array")

    def __len__(self):
        raise RuntimeError("no len")

    def __iter__(self):
        raise RuntimeError("no iter")


def _raise(exc):
    def fn(*args):
        raise exc

    return fn


def misbehaving(check) -> dict:
    """{what it does: a function} for this check's signature, all wrong."""
    ref = check.reference

    def first_tensor(args):
        return next(a for a in args if isinstance(a, torch.Tensor))

    def mutates(*args):
        out = ref(*args)
        first_tensor(args).add_(1)
        return out

    return {
        "raises ValueError": _raise(ValueError("shapes confuse me")),
        "raises an exception that cannot be printed": _raise(Unprintable()),
        "calls sys.exit()": _raise(SystemExit(3)),
        "returns None": lambda *args: None,
        "returns a string": lambda *args: "five",
        "returns a dict": lambda *args: {"y": 1},
        "returns a NaN float": lambda *args: float("nan"),
        "returns NaN of the right shape": lambda *args: _map_tensors(
            ref(*args), lambda t: torch.full_like(t, math.nan)
        ),
        "returns inf of the right shape": lambda *args: _map_tensors(
            ref(*args), lambda t: torch.full_like(t, math.inf)
        ),
        "returns the wrong shape": lambda *args: _map_tensors(ref(*args), lambda t: torch.cat([t.reshape(-1)] * 2)),
        "returns one value too many": lambda *args: (*(ref(*args) if check.parts else (ref(*args),)), 1.0),
        "returns an integer tensor": lambda *args: _map_tensors(ref(*args), lambda t: t.round().long()),
        "returns a tensor on the meta device": lambda *args: _map_tensors(
            ref(*args), lambda t: torch.empty(t.shape, device="meta")
        ),
        "returns an object whose conversions raise": lambda *args: Hostile(),
        "returns the right values but changes its input in place": mutates,
    }


def _status_per_case(report: CheckReport):
    return report.status, [c.passed for c in report.cases]


def _grader_report(item, fn, seed, tmp_path):
    """The verdict the batch grader reaches: the kernel's messenger calls fn (here, in-process) on the request
    the grader sends, its JSON answer is judged by course_utils.grading.judge."""
    request, answer = tmp_path / "request.json", tmp_path / "answer.json"
    request.write_text(json.dumps(kernel_request(item.kind, item.check, seed)), encoding="utf-8")
    kernel.call_learner_function({"learner_function": fn}, "learner_function", str(request), str(answer))
    return judge(item.kind, item.graded, item.check, json.loads(answer.read_text(encoding="utf-8")), seed)


@pytest.mark.parametrize("item", FUNCTION_ITEMS, ids=ITEM_IDS)
def test_misbehaving_functions_get_a_verdict_and_the_grader_agrees(item, tmp_path, recwarn):
    check = item.check
    for what, fn in misbehaving(check).items():
        report = check.evaluate(fn)  # must not raise
        assert isinstance(report, CheckReport) and report.status in ("failed", "error"), (what, report.text())
        assert "Traceback" not in report.text() and report.hint, what
        graded = _grader_report(item, fn, 0, tmp_path)
        assert _status_per_case(graded) == _status_per_case(report), (what, graded.text(), report.text())


@pytest.mark.parametrize("item", FUNCTION_ITEMS, ids=ITEM_IDS)
def test_every_named_mistake_fed_to_its_own_check_gets_a_verdict(item, tmp_path):
    check = item.check
    for hint, mistake in check.mistakes.items():
        report = check.evaluate(mistake)  # the mistakes return float64: what a learner's float64 code returns
        assert report.status == "failed", (hint[:60], report.text())
        graded = _grader_report(item, mistake, 1, tmp_path)
        assert _status_per_case(graded) == _status_per_case(check.evaluate(mistake, seed=1)), hint[:60]


# ----------------------------------------------------------------------------------------------------
# the checks that are not FunctionChecks: the BatchNorm stream, the mini sweep, the questions
# ----------------------------------------------------------------------------------------------------
def test_the_batch_norm_stream_check_never_raises(capsys):
    wrong = misbehaving(ex03.BATCH_NORM_CHECK)
    del wrong["returns the right values but changes its input in place"]  # each step gets copies: no harm done
    wrong["returns strings for the statistics"] = lambda x, rm, rv, *rest: (x, "mean", "var")
    wrong["returns objects whose conversions raise"] = lambda x, rm, rv, *rest: (x, Hostile(), Hostile())
    for what, fn in wrong.items():
        report = ex03.check_batch_norm_stream(fn, steps=3)
        assert report.status in ("failed", "error"), (what, report.text())
    assert "Traceback" not in capsys.readouterr().out


def test_the_mini_sweep_check_never_raises(capsys):
    def sweep(max_logit):
        records = [
            RunRecord(
                variant=v,
                lr=lr,
                final_loss=2.0,
                initial_loss=4.2,
                max_attn_logit=max_logit,
                diverged=False,
                diverged_at=None,
                entropy=[1.0],
                probe_steps=[0],
            )
            for v in ("baseline", "qk_norm")
            for lr in (0.01, 0.3)
        ]
        return SweepResult(records, PRESETS["quick"], "cpu")

    broken = sweep(0.0)
    broken.records = None  # a result whose records cannot be read
    for fn in (
        _raise(ValueError("no")),
        _raise(Unprintable()),
        _raise(SystemExit(1)),
        lambda: Hostile(),
        lambda: sweep(0.0),
        lambda: sweep(math.nan),
        lambda: broken,
    ):
        assert ex05.check_mini_sweep(fn) is None
    assert "Traceback" not in capsys.readouterr().out


def test_question_checks_never_raise(capsys):
    for exercise in all_exercises():
        for qid in exercise.questions:
            for answer in (_raise(ValueError("?")), _raise(Unprintable()), _raise(SystemExit(0)), Hostile(), None, 3):
                report = check_choice(qid, answer)
                assert report.status in ("failed", "error"), (qid, report.text())
            assert check_choice(qid, find_question(qid).answer).passed
    assert "Traceback" not in capsys.readouterr().out


def test_the_registry_lists_every_exercise_and_each_reference_gives_its_cases_expected_output():
    assert [e.id for e in all_exercises()] == sorted(p.stem for p in (ROOT / "solutions").glob("ex*.ipynb"))
    for item in FUNCTION_ITEMS:
        check = item.check
        for case in check.cases(seed=5):
            got = check.reference(*case.args)
            pairs = zip(got, case.expected) if check.parts else [(got, case.expected)]
            for a, b in pairs:
                assert torch.allclose(a.double(), b.double(), atol=check.tolerance_for(case), rtol=0), case.name
