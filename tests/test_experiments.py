"""course_utils.experiments: the presets, building a run, and the stability sweep (chapters 05 and 06 call it).

The records it returns and their verdicts are tested on hand-made records in test_records.py, the worker count in
test_pool.py. The gpu preset is built and run here on the CPU: there may be no GPU (test_gpu_path.py runs the
chapters under the "smoke" preset, the gpu preset's configuration at a tiny size).
"""

import math

import pytest
import torch

from course_utils import experiments, recipes, run_cache
from course_utils.experiments import PRESETS, build_run, resolve_preset, stability_sweep
from course_utils.model import TinyGPT, parameter_count


# ----------------------------------------------------------------------------------------------------
# presets and construction (the gpu preset is built on the CPU: there may be no GPU here)
# ----------------------------------------------------------------------------------------------------
def test_auto_preset_follows_the_device(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert resolve_preset("auto").name == "quick"
    monkeypatch.setattr(experiments, "pick_device", lambda: torch.device("cuda"))
    assert resolve_preset("auto").name == "gpu"
    with pytest.raises(ValueError, match="preset"):
        resolve_preset("huge")


def test_quick_preset_is_the_specified_model():
    cfg, train_cfg, corpus = build_run("quick", "qk_norm", 0.3)
    assert (cfg.n_layer, cfg.d_model, cfg.n_head, cfg.qk_norm) == (2, 64, 4, "head")
    assert train_cfg.steps == 200 and train_cfg.lr == 0.3 and train_cfg.amp is False
    assert max(PRESETS["quick"].lrs) == 0.3


@pytest.mark.parametrize("variant", list(experiments.VARIANTS))
def test_gpu_preset_builds_on_cpu(variant):
    cfg, train_cfg, corpus = build_run("gpu", variant, 0.1)
    assert train_cfg.amp and cfg.d_model > PRESETS["quick"].model["d_model"] and train_cfg.steps > 200
    model = TinyGPT(cfg)
    assert sum(p.numel() for p in model.parameters()) == parameter_count(cfg) > 1_000_000
    logits = model(torch.randint(0, cfg.vocab_size, (1, 16)))
    assert logits.shape == (1, 16, cfg.vocab_size)
    assert (cfg.qk_norm == "head") == ("qk_norm" in variant) and (cfg.attn_softcap == 50.0) == ("softcap" in variant)


@pytest.mark.slow
def test_gpu_preset_trains_a_step_on_cpu_when_asked(monkeypatch):
    from dataclasses import replace

    # the gpu preset's model and training steps, with a token-sized evaluation so that the CPU finishes quickly
    monkeypatch.setitem(PRESETS, "gpu", replace(PRESETS["gpu"], eval_batches=1, eval_batch_size=2))
    r = stability_sweep([0.01], variants=("qk_norm+softcap",), preset="gpu", device="cpu", steps=1, progress=False)
    rec = r[0]
    assert r.preset.name == "gpu" and r.device == "cpu" and len(rec.losses) == 1
    assert rec.tokens == 32 * 128 and math.isfinite(rec.max_attn_logit) and rec.probe_steps == [0]


def test_gpu_preset_without_cuda_says_so(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="CUDA"):
        stability_sweep([0.1], preset="gpu")


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="variant"):
        stability_sweep([0.1], variants=("layernorm",))
    with pytest.raises(ValueError, match="positive"):
        build_run("quick", "baseline", -1.0)
    with pytest.raises(ValueError, match="learning rate"):
        stability_sweep([])


def test_the_smoke_preset_is_the_gpu_preset_at_a_tiny_size_on_the_cpu():
    smoke, gpu = PRESETS["smoke"], PRESETS["gpu"]
    assert smoke.device == "cpu" and smoke.train["amp"] and smoke.lrs == gpu.lrs
    assert smoke.train["record_every"] == gpu.train["record_every"] and smoke.model["d_model"] < 64


def test_course_preset_overrides_auto(monkeypatch):
    monkeypatch.setenv("COURSE_PRESET", "smoke")
    assert resolve_preset("auto").name == "smoke" and resolve_preset("quick").name == "quick"
    monkeypatch.setenv("COURSE_PRESET", "nonsense")
    with pytest.raises(ValueError):
        resolve_preset("auto")


# ----------------------------------------------------------------------------------------------------
# real sweeps
# ----------------------------------------------------------------------------------------------------
def test_a_short_sweep_is_deterministic_restores_threads_and_shows_progress(capsys):
    threads = torch.get_num_threads()
    a = stability_sweep([0.01, 0.3], variants=("baseline",), steps=12)
    b = stability_sweep([0.01, 0.3], variants="baseline", steps=12, progress=False)
    assert torch.get_num_threads() == threads
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and err.count("12/12  ") == 2 and "baseline lr 0.3" in err
    assert [r.losses for r in a] == [r.losses for r in b] and [r.max_logit for r in a] == [r.max_logit for r in b]
    rec = a.get("baseline", 0.01)
    assert len(rec.losses) == 12 and rec.probe_steps == [0, 10, 11] and len(rec.entropy) == 3
    assert rec.tokens == 12 * 8 * 64 and math.isfinite(rec.final_loss) and rec.initial_loss > 4.0


def test_the_sweep_logs_the_qk_gains_and_their_bound_at_every_probe():
    r = stability_sweep([0.3], variants=("baseline", "qk_norm", "qk_norm+softcap"), steps=21, progress=False)
    assert r.get("baseline", 0.3).gain_q == [] and r.get("baseline", 0.3).qk_bound == []
    for variant in ("qk_norm", "qk_norm+softcap"):
        rec = r.get(variant, 0.3)
        assert rec.probe_steps == [0, 10, 20]
        assert len(rec.gain_q) == len(rec.gain_k) == len(rec.qk_bound) == len(rec.max_logit) == 3
        # read before the optimizer step, with the weights the probed forward pass used: unit gains at step 0
        assert rec.gain_q[0] == rec.gain_k[0] == 1.0 and rec.qk_bound[0] == 4.0
        assert all(m <= b * (1 + 1e-5) for m, b in zip(rec.max_logit, rec.qk_bound))
        assert all(b <= 4.0 * q * k * (1 + 1e-6) for b, q, k in zip(rec.qk_bound, rec.gain_q, rec.gain_k))
        assert rec.gain_q[-1] > 1.0 and rec.gain_k[-1] > 1.0  # the gains moved
        assert "qk_bound" in rec.as_dict()


def test_an_absurd_learning_rate_is_a_diverged_verdict():
    r = stability_sweep([1e3], variants=("baseline",), steps=25, progress=False)
    rec = r[0]
    assert rec.diverged and rec.status == "diverged" and not rec.survived
    assert "diverged" in repr(r)


# ----------------------------------------------------------------------------------------------------
# the branch the sweep takes on a GPU (one process, mixed precision), run on the CPU
# ----------------------------------------------------------------------------------------------------
def test_the_sweep_takes_the_gpu_branch_with_mixed_precision(monkeypatch):
    """One process, one run after another, no run cache: the branch stability_sweep takes on a GPU."""
    monkeypatch.delenv(run_cache.ENV, raising=False)
    result = stability_sweep([0.01, 0.3], variants=("baseline", "qk_norm"), preset="smoke", steps=20, progress=False)
    assert result.device == "cpu" and len(result) == 4 and result.preset.name == "smoke"
    for r in result:
        assert math.isfinite(r.initial_loss) and r.probe_steps == [0, 19] and len(r.output_rms["FC2"]) == 2
        for logit, bound in zip(r.max_logit, r.qk_bound):
            assert logit <= bound * 1.03  # the slack chapter 05 allows for bf16's rounding of q and k
    assert [len(r.qk_bound) for r in result] == [0, 0, 2, 2]


# ----------------------------------------------------------------------------------------------------
# recipes and extra variants as names, output RMS probes, parallel workers (chapter 06)
# ----------------------------------------------------------------------------------------------------
def test_a_variant_sets_model_and_training_switches():
    def switches(variant):
        model_cfg, train_cfg, _ = experiments.build_run("quick", variant, 0.1)
        return model_cfg.qk_norm, train_cfg.z_loss, train_cfg.qk_norm_from

    assert switches("baseline") == (None, 0.0, None)
    assert switches("z_loss") == (None, 1e-4, None)
    assert switches("late_qk_norm") == ("head", 0.0, 0.5)
    assert switches("olmo2") == ("full", 1e-5, None)
    assert set(experiments.VARIANTS) == {"baseline", "qk_norm", "softcap", "qk_norm+softcap"}  # chapter 05's four
    variants = {**experiments.VARIANTS, **experiments.EXTRA_VARIANTS, **recipes.RECIPES}
    assert all(isinstance(v, recipes.Recipe) and v.name == name for name, v in variants.items())
    assert experiments.variant_recipe("late_qk_norm") is experiments.EXTRA_VARIANTS["late_qk_norm"]
    with pytest.raises(ValueError, match="variant must be one of"):
        experiments.build_run("quick", "gemma4", 0.1)


def test_output_rms_probe_reads_each_linear_layer():
    result = experiments.stability_sweep([1e-2], ["llama3"], steps=11, progress=False)
    record = result[0]
    assert record.probe_steps == [0, 10] and set(record.output_rms) == {"QKV", "Proj", "FC1", "FC2"}
    assert all(len(v) == 2 and all(math.isfinite(x) and x > 0 for x in v) for v in record.output_rms.values())
    # at step 0 the weights are the initial ones: recompute FC1's RMS for the first batch by hand
    model_cfg, train_cfg, corpus = experiments.build_run("quick", "llama3", 1e-2, steps=11)
    torch.manual_seed(0)
    model = TinyGPT(model_cfg)
    x, _ = corpus.batch("train", train_cfg.batch_size, train_cfg.block_size, torch.Generator().manual_seed(0))
    outs = []
    for block in model.blocks:
        block.mlp.up.register_forward_hook(lambda m, i, o: outs.append(o.pow(2).mean().sqrt().item()))
    model(x)
    assert record.output_rms["FC1"][0] == pytest.approx(max(outs), rel=1e-5)


def test_parallel_workers_give_the_same_records_as_one_process():
    kw = dict(lrs=[1e-2, 0.3], variants=["gemma3", "z_loss"], steps=12, progress=False)
    one = experiments.stability_sweep(**kw)
    two = experiments.stability_sweep(**kw, workers=2)
    for a, b in zip(one, two):
        assert (a.variant, a.lr, a.losses, a.final_loss, a.output_rms) == (
            b.variant,
            b.lr,
            b.losses,
            b.final_loss,
            b.output_rms,
        )
