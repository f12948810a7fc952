"""Chapter 05's lab: what the chapter claims about QK-Norm, the chapter's figures, exercise 05's checks (the failure
threshold among them), the benchmark. The sweep itself is tested in test_experiments.py, its records, verdicts and
LR sensitivity in test_records.py."""

import importlib.util
import math

import mutants
import pytest
import torch
from test_records import fake_result, record

from course_utils.attention import CausalSelfAttention, qk_norm_bound
from course_utils.checks import ex05
from course_utils.experiments import PRESETS, stability_sweep
from course_utils.model import GPTConfig, TinyGPT
from course_utils.records import RunRecord, SweepResult

from conftest import ROOT


# ----------------------------------------------------------------------------------------------------
# the chapter's claims: QK-Norm and RoPE, and what the quick preset's sweep shows
# ----------------------------------------------------------------------------------------------------
def test_norm_before_rope_keeps_scores_relative_and_a_gain_after_rope_breaks_it():
    from course_utils.attention import RotaryEmbedding

    torch.manual_seed(0)
    rope = RotaryEmbedding(16, 64)

    def rms(v):
        return v / v.pow(2).mean(-1, keepdim=True).sqrt()

    def scores(order, gain, pairs):
        a, b = torch.randn(16, generator=torch.Generator().manual_seed(1)), torch.randn(16)
        if order == "norm_then_rope":
            q, k = rope(rms(a.expand(64, 16)) * gain), rope(rms(b.expand(64, 16)) * gain)
        else:
            q, k = rms(rope(a.expand(64, 16))) * gain, rms(rope(b.expand(64, 16))) * gain
        return torch.stack([q[m] @ k[n] for m, n in pairs])

    same_offset = [(5, 0), (20, 15), (40, 35), (63, 58)]
    unequal, half = torch.rand(16) * 2 + 0.5, torch.rand(8) + 0.5
    for gain in (torch.ones(16), unequal, torch.cat([half, half])):
        s = scores("norm_then_rope", gain, same_offset)
        assert (s - s[0]).abs().max() < 1e-4
    paired = scores("rope_then_norm", torch.cat([half, half]), same_offset)
    assert (paired - paired[0]).abs().max() < 1e-4  # equal gains within each rotated pair commute with RoPE
    broken = scores("rope_then_norm", unequal, same_offset)
    assert (broken - broken[0]).abs().max() > 0.1


def test_a_pre_ln_block_reads_q_and_k_from_the_normalized_stream():
    block = TinyGPT(GPTConfig(d_model=64, n_head=4, block_size=16)).blocks[0]
    x = torch.randn(2, 16, 64)
    with torch.no_grad():
        q, q_big = block.attn.q_proj(block.norm1(x)), block.attn.q_proj(block.norm1(1e3 * x))
    assert torch.allclose(q, q_big, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_quick_preset_shows_the_mechanism_within_its_150_steps():
    """The issue's acceptance claim: at lr 0.3 the 2-layer d_model 64 model's max logit explodes, QK-Norm's stays
    bounded."""
    r = stability_sweep([0.3], variants=("baseline", "qk_norm"), preset="quick", progress=False)
    base, qk = r.get("baseline", 0.3), r.get("qk_norm", 0.3)
    assert base.max_attn_logit >= 1e4 * base.max_logit[0]  # orders of magnitude above its start
    assert base.max_attn_logit >= 100 * qk.max_attn_logit
    assert qk.max_attn_logit < 1000 and qk.final_loss < base.final_loss
    assert base.final_entropy < 0.1 < qk.final_entropy
    assert all(m <= b * (1 + 1e-4) for m, b in zip(qk.max_logit, qk.qk_bound))  # the gains' bound, every probe
    assert min(max(qk.gain_q), max(qk.gain_k)) > 3  # the gains grew several-fold: not slowly
    assert qk.max_logit[0] > 10 * base.max_logit[0]  # the step-0 offset: unit-RMS q, k vs init-0.02 projections


# ----------------------------------------------------------------------------------------------------
# the attention bound used by the chapter
# ----------------------------------------------------------------------------------------------------
def test_qk_norm_bound_holds_with_learned_gains():
    torch.manual_seed(0)
    layer = CausalSelfAttention(GPTConfig(d_model=64, n_head=4, n_kv_head=2, qk_norm="head", block_size=16))
    with torch.no_grad():
        layer.q_proj.weight.mul_(1e3)
        layer.k_proj.weight.mul_(1e3)
        layer.q_norm.weight.copy_(torch.rand(16) * 4 - 2)
        layer.k_norm.weight.copy_(torch.rand(16) * 4 - 2)
    layer.record = True
    for _ in range(5):
        layer(torch.randn(2, 16, 64) * 100)
        assert layer.stats["max_logit"].max() <= qk_norm_bound(16, layer.q_norm.weight, layer.k_norm.weight) + 1e-3
    assert qk_norm_bound(16) == 4.0 and qk_norm_bound(64, torch.tensor([0.5]), torch.tensor([-3.0])) == 12.0


# ----------------------------------------------------------------------------------------------------
# exercise 05's checks
# ----------------------------------------------------------------------------------------------------
# A learner's right answer, written head by head without the course's functions (tests/mutants/ex05.py).
right_attention = mutants.ex05.qk_norm_attention_head_by_head


def test_functional_attention_equals_the_chapter_layer():
    for case in ex05.QK_NORM_ATTENTION_CHECK.cases(seed=3):
        assert torch.allclose(ex05.functional_attention(*case.args), case.expected, atol=1e-9)


MISTAKES = {
    "full width": dict(norm="rms_full"),
    "after* RoPE": dict(order="rope_then_norm"),
    "LayerNorm": dict(norm="layer_head"),
    "1/sqrt(d_head)": dict(scale=False),
    "causal mask": dict(causal=False),
    "repeat_interleave": dict(kv_map="tile"),
    "without the gains": dict(gains=False),
    "without any QK-Norm": dict(norm="none", gains=False),
}


@pytest.mark.parametrize("words", list(MISTAKES))
def test_attention_mistakes_are_rejected_with_their_hint(words):
    wrong = lambda *a: ex05.functional_attention(*a, **MISTAKES[words]).float()
    report = ex05.QK_NORM_ATTENTION_CHECK.evaluate(wrong)
    assert report.status == "failed" and words in report.hint, report.text()


def test_attention_check_accepts_right_and_catches_the_rest(capsys):
    assert ex05.check_qk_norm_attention(right_attention).passed
    # the checks' own attention gives the right numbers and no points: it is the task's answer, ready-made
    shortcut = ex05.QK_NORM_ATTENTION_CHECK.evaluate(lambda *a: ex05.functional_attention(*a).float())
    assert not shortcut.passed and shortcut.forbidden == ["course_utils.checks.ex05.functional_attention"]
    assert all(c.passed for c in shortcut.cases), shortcut.text()
    names = " ".join(c.name for c in ex05.QK_NORM_ATTENTION_CHECK.cases())
    assert "grouped-query" in names and "multi-query" in names and "single token" in names
    assert (
        ex05.QK_NORM_ATTENTION_CHECK.evaluate(lambda *a: (_ for _ in ()).throw(NotImplementedError())).status
        == "not-implemented"
    )

    def in_place(x, *rest):
        out = right_attention(x, *rest)
        x.mul_(2)
        return out

    assert "in place" in ex05.QK_NORM_ATTENTION_CHECK.evaluate(in_place).text()
    assert "✅" in capsys.readouterr().out


def test_softcap_check():
    assert ex05.check_softcap(lambda s, cap: cap * torch.tanh(s / cap)).passed
    for wrong, words in [
        (lambda s, cap: cap * torch.tanh(s), "without dividing"),
        (lambda s, cap: torch.tanh(s / cap), "without multiplying"),
        (lambda s, cap: s.clamp(-cap, cap), "hard clip"),
    ]:
        report = ex05.SOFTCAP_CHECK.evaluate(wrong)
        assert report.status == "failed" and words in report.hint


def test_entropy_check():
    right = lambda p: -torch.special.xlogy(p, p).sum(-1)
    assert ex05.check_attention_entropy(right).passed
    for wrong, words in [
        (lambda p: -torch.special.xlogy(p, p).sum(-1) / math.log(2), "bits"),
        (lambda p: torch.special.xlogy(p, p).sum(-1), "minus sign"),
        (lambda p: -torch.special.xlogy(p, p).mean(-1), "mean over keys"),
        (lambda p: -torch.special.xlogy(p, p).sum(-2), "wrong dimension"),
        (lambda p: -(p * torch.log(p)).sum(-1), "0 * log 0"),
    ]:
        report = ex05.ENTROPY_CHECK.evaluate(wrong)
        assert report.status == "failed" and words in report.hint, (words, report.hint)


def test_mini_sweep_check(capsys, monkeypatch):
    top = max(ex05.MINI_LRS)

    def result(variants=("baseline", "qk_norm"), lrs=ex05.MINI_LRS, base_logit=1e5):
        recs = [
            record(v, lr, 2.2, max_logit=(base_logit if v == "baseline" and lr == top else 20.0))
            for v in variants
            for lr in lrs
        ]
        return SweepResult(recs, PRESETS["quick"], "cpu")

    def not_yet():
        raise NotImplementedError()

    assert ex05.check_mini_sweep(lambda: result()) is not None
    assert ex05.check_mini_sweep(not_yet) is None
    assert ex05.check_mini_sweep(lambda: result(lrs=(0.01, 0.3))) is None
    assert ex05.check_mini_sweep(lambda: result(variants=("baseline", "softcap"))) is None
    assert ex05.check_mini_sweep(lambda: result(base_logit=100.0)) is None
    assert ex05.check_mini_sweep(lambda: {"baseline": 1}) is None
    out = capsys.readouterr().out
    assert out.count("✅") == 1 and out.count("❌") == 4 and "not implemented yet" in out
    assert "learning rates" in out and "variants" in out and "100x" in out
    assert "stability_sweep([0.03, 0.05, 0.1, 0.3]" in out  # the hint spells out the call


# ----------------------------------------------------------------------------------------------------
# exercise 05, task 4: the learning rate at which the baseline first fails
# ----------------------------------------------------------------------------------------------------
def right_threshold(lrs, final_losses, initial_loss, best_loss):
    failed = ~(final_losses < initial_loss) | (final_losses > best_loss + 0.5)
    return lrs[failed].min()


def test_the_threshold_check_accepts_right_answers_written_several_ways(capsys):
    assert ex05.check_failure_threshold(right_threshold).passed
    assert ex05.check_failure_threshold(mutants.ex05.threshold_by_loop).passed
    sort_first = lambda lrs, losses, l0, best: next(
        lr for lr, loss in sorted(zip(lrs.tolist(), losses.tolist())) if not loss < l0 or loss > best + 0.5
    )
    assert ex05.check_failure_threshold(sort_first).passed
    assert "✅ failure_threshold: all 7 cases match" in capsys.readouterr().out


@pytest.mark.parametrize("seed", [0, 1, 2, 777])
def test_every_named_threshold_mistake_is_rejected_with_its_hint(seed):
    check = ex05.FAILURE_THRESHOLD_CHECK
    assert len(check.mistakes) >= 6
    for hint, wrong in check.mistakes.items():
        report = check.evaluate(wrong, seed)
        assert report.status == "failed" and report.hint == hint, (hint[:50], seed)


def test_wrong_thresholds_are_rejected(capsys):
    wrong = {
        "only the degraded rule, with >= l0 for divergence but no inf": lambda lrs, f, l0, b: lrs[f > b + 0.5].max(),
        "a fixed answer": lambda lrs, f, l0, b: 0.1,
        "the smallest learning rate of the grid": lambda lrs, f, l0, b: lrs.min(),
        "a list instead of a number": lambda lrs, f, l0, b: lrs[(f > b + 0.5)].tolist(),
        "raises": lambda lrs, f, l0, b: 1 / 0,
    }
    for what, fn in wrong.items():
        assert not ex05.check_failure_threshold(fn).passed, what

    def via_sweep_result(lrs, f, l0, b):
        records = [
            RunRecord("baseline", lr, loss, l0, 0.0, not loss < l0) for lr, loss in zip(lrs.tolist(), f.tolist())
        ]
        records.append(RunRecord("other", 1.0, b, l0, 0.0, False))
        # the sweep's own verdicts: forbidden
        return min(r.lr for r in SweepResult(records, PRESETS["quick"], "cpu").of("baseline") if not r.survived)

    report = ex05.check_failure_threshold(via_sweep_result)
    assert not report.passed and report.forbidden == ["course_utils.records.SweepResult"]
    assert "Traceback" not in capsys.readouterr().out


def test_the_reference_threshold_agrees_with_the_sweeps_verdicts():
    """reference_failure_threshold applies the rule SweepResult applies: on random sweeps, the same learning rate."""
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        lrs = sorted(set((10 ** (torch.rand(5, generator=g) * 3 - 3)).tolist()))
        recs = []
        for v in ("baseline", "qk_norm"):
            for lr in lrs:
                u = float(torch.rand((), generator=g))
                final = math.inf if u < 0.15 else 2.0 + 3.0 * float(torch.rand((), generator=g))
                recs.append(RunRecord(v, lr, final, 4.2, 1.0, not final < 4.2))
        sweep = SweepResult(recs, PRESETS["quick"], "cpu")
        failed = [r.lr for r in sweep.of("baseline") if not r.survived]
        if not failed:
            continue
        assert float(ex05.reference_failure_threshold(*ex05.sweep_arguments(sweep))) == min(failed)


def test_the_threshold_on_a_sweep_is_compared_with_its_verdicts(capsys):
    sweep = fake_result()  # the baseline: ok at 0.01, degraded at 0.1, diverged at 1.0
    assert ex05.check_threshold_on_sweep(right_threshold, sweep) == 0.1
    out = capsys.readouterr().out
    assert "✅" in out and "first fails at lr 0.1" in out and "QK-Norm at the same learning rates" in out
    assert "0.1 ✓ ok, 1 ✓ ok" in out
    assert ex05.check_threshold_on_sweep(mutants.ex05.threshold_largest_failure, sweep) is None
    assert "❌" in capsys.readouterr().out

    def not_yet(*args):
        raise NotImplementedError()

    trained = SweepResult([record("baseline", 0.01, 2.1), record("qk_norm", 0.01, 2.0)], PRESETS["quick"], "cpu")
    broken = fake_result()
    broken.records = None
    for fn, sweep_, words in [
        (not_yet, fake_result(), "not implemented yet"),
        (lambda *a: 1 / 0, fake_result(), "ZeroDivisionError"),
        (lambda *a: "0.1", fake_result(), "❌"),
        (right_threshold, None, "task 4a"),
        (right_threshold, trained, "no threshold"),
        (right_threshold, broken, "could not be read"),
    ]:
        assert ex05.check_threshold_on_sweep(fn, sweep_) is None
        out = capsys.readouterr().out
        assert words in out and "Traceback" not in out, (words, out)


# ----------------------------------------------------------------------------------------------------
# the chapter's figures (course_utils.stability_plots): readable in a room, on hand-made records
# ----------------------------------------------------------------------------------------------------
def test_the_chapters_figures_pass_the_room_check():
    import matplotlib.pyplot as plt

    from course_utils import stability_plots as plots
    from course_utils.figures import figure_problems

    scales = torch.logspace(-2, 3, 11)
    logits = torch.randn(64)
    weights = torch.softmax(scales[:, None] * logits[None, :], dim=-1)
    r = fake_result()
    figures = [
        plots.saturation(scales, -(weights * weights.log()).sum(-1), weights.max(-1).values, 64),
        plots.attention_weights(logits, 0.5),
        plots.softcap_curves(),
        plots.loss_vs_lr(r),
        plots.probes(r, 1.0, 16),
        plots.sensitivity_bars(r.sensitivity(), r.lrs),
        plots.max_logit_curves(r),
    ]
    for fig in figures:
        assert figure_problems(fig) == [], fig.axes[0].get_title()
        plt.close(fig)


def test_exercise_question():
    from course_utils.checks import check_choice

    assert check_choice("ex05.curve", "b").passed and not check_choice("ex05.curve", "c").passed


# ----------------------------------------------------------------------------------------------------
# the benchmark (its GPU part is constructed here and skipped without CUDA)
# ----------------------------------------------------------------------------------------------------
def load_bench():
    spec = importlib.util.spec_from_file_location("bench_sweep", ROOT / "benchmarks" / "bench_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_plain_model_computes_the_same_math():
    bench = load_bench()
    tiny, plain, cfg, corpus = bench._models("quick")
    idx = torch.randint(0, corpus.vocab_size, (2, 32))
    assert torch.allclose(tiny(idx), plain(idx), atol=1e-5)
    result = bench.step_time_ratio(rounds=3, warmup=1)
    assert result["ratio"] > 0 and set(result["seconds"]) == {"TinyGPT", "PlainGPT"}


def test_bench_gpu_part_is_built_on_cpu_and_skipped_without_cuda(monkeypatch):
    bench = load_bench()
    plan = bench.gpu_plan()
    assert plan["train"].amp and plan["tokens_per_step"] == 32 * 128 and plan["sweep_runs"] == 24
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "no CUDA" in bench.gpu_benchmark()["skipped"]
