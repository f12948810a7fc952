"""Chapter 06's helpers: the digest checker (course_utils.digest_check) and the lab (course_utils.recipe_lab)."""

import math
from dataclasses import replace

import matplotlib
import pytest
import torch

from course_utils import recipe_lab as lab
from course_utils.digest_check import (
    DIGEST_TABLE,
    REFERENCE_FACTS,
    DigestRow,
    check_adoption_table,
    check_row,
    embedding_claims,
    model_facts,
    rope_commutation,
)
from course_utils.experiments import PRESETS, stability_sweep
from course_utils.figures import figure_problems
from course_utils.model import GPTConfig, TinyGPT
from course_utils.recipes import RECIPES
from course_utils.records import RunRecord, SweepResult

matplotlib.use("Agg")


# ----------------------------------------------------------------------------------------------------
# digest_check
# ----------------------------------------------------------------------------------------------------
def test_the_adoption_table_gets_the_verdicts_the_chapter_teaches():
    verdicts = {row["model"]: row["verdict"] for row in check_adoption_table()}
    assert verdicts == {
        "OLMo 2/3": "wrong",
        "Qwen3": "agrees",
        "Gemma 3": "wrong",
        "GLM-4.5/4.7": "agrees",
        "MiniMax-M2": "agrees",
        "DeepSeek-V3": "agrees",
        "Llama 3": "agrees",
    }
    gemma3 = next(r for r in check_adoption_table() if r["model"] == "Gemma 3")
    assert "no softcap" in gemma3["correction"] and "Peri-LN" in gemma3["correction"]
    olmo = next(r for r in check_adoption_table() if r["model"] == "OLMo 2/3")
    assert "output-only" in olmo["correction"] and "Post-Norm" in olmo["correction"]
    assert olmo["checked against"] == "recipe olmo2"


def test_facts_of_a_recipe_row_come_from_its_config():
    for row in DIGEST_TABLE:
        if row.recipe is None:
            assert row.model in REFERENCE_FACTS, f"{row.model}: no recipe and no reference facts"
            continue
        cfg = GPTConfig(**RECIPES[row.recipe].model)
        facts = model_facts(row)
        assert facts["qk_norm"][0] == (cfg.qk_norm is not None)
        assert facts["placement"][0] == cfg.placement
        assert facts["softcap"][0] == (cfg.attn_softcap is not None or cfg.logit_softcap is not None)


@pytest.mark.parametrize(
    "row, verdict",
    [
        (DigestRow("Gemma 2", False, "peri", extra={"softcap": True}, recipe="gemma2"), "agrees"),
        (DigestRow("Gemma 2", True, "peri", recipe="gemma2"), "wrong"),  # Gemma 2 has no QK-Norm
        (DigestRow("GPT-2", False, "post", recipe="gpt2"), "wrong"),  # GPT-2 is Pre-LN
        (DigestRow("Qwen3", True, "pre", extra={"qkv_bias": True}, recipe="qwen3"), "wrong"),
        (DigestRow("Some model", True, "pre"), "unverifiable"),  # nothing known about it
    ],
)
def test_a_row_is_judged_claim_by_claim(row, verdict):
    checked = check_row(row)
    assert checked["verdict"] == verdict
    assert bool(checked["correction"]) == (verdict != "agrees")


def test_the_embedding_claim_is_read_from_the_recipes():
    assert embedding_claims() == {"Gemma 3": "sqrt_d", "Qwen3": None}


def test_rope_commutes_with_rms_division_but_not_with_an_uneven_gain():
    assert rope_commutation() < 1e-6
    half = torch.rand(8, generator=torch.Generator().manual_seed(1)) + 0.5
    assert rope_commutation(gain=torch.cat([half, half])) < 1e-6  # equal within each rotated pair
    assert rope_commutation(gain=torch.linspace(0.5, 2.0, 16)) > 0.1


# ----------------------------------------------------------------------------------------------------
# recipe_lab: measurements
# ----------------------------------------------------------------------------------------------------
def fake_record(variant="gpt2", lr=0.1, losses=None, rms_scale=1.0, final=2.5):
    steps = list(range(0, 30, 10))
    rms = {k: [0.1 * rms_scale * (i + 1) for i in range(len(steps))] for k in lab.LAYER_KINDS}
    return RunRecord(
        variant=variant,
        lr=lr,
        final_loss=final,
        initial_loss=4.2,
        max_attn_logit=10.0 * rms_scale,
        diverged=False,
        losses=losses or [3.0] * 30,
        probe_steps=steps,
        max_logit=[1.0 * rms_scale] * len(steps),
        entropy=[2.0] * len(steps),
        output_rms=rms,
    )


def test_switch_jump_compares_the_windows_around_the_switch():
    losses = [3.0] * 10 + [3.5] * 10
    assert math.isclose(lab.switch_jump(fake_record(losses=losses), 10), 0.5)
    assert math.isclose(lab.switch_jump(fake_record(losses=losses), 10, window=2), 0.5)
    assert lab.switch_jump(fake_record(losses=[3.0] * 12), 10) == math.inf  # stopped before the window


def test_rms_growth_against_its_start_and_against_another_run():
    slow, fast = fake_record(rms_scale=1.0), fake_record(rms_scale=50.0)
    assert lab.rms_growth(slow) == pytest.approx({k: 3.0 for k in lab.LAYER_KINDS})
    assert lab.rms_growth(fast, reference=slow) == pytest.approx({k: 50.0 for k in lab.LAYER_KINDS})


def test_an_untrained_model_has_log_z_near_log_vocab():
    from course_utils.experiments import build_run

    model_cfg, _, corpus = build_run("quick", "gpt2", 0.01)
    torch.manual_seed(0)
    value = lab.mean_log_z(TinyGPT(model_cfg), corpus, batches=1, batch_size=4)
    assert abs(value - math.log(model_cfg.vocab_size)) < 0.05


TINY = replace(PRESETS["quick"], train={**PRESETS["quick"].train, "steps": 6, "warmup": 2, "record_every": 2})


def test_a_record_job_is_the_sweeps_run():
    job = lab.Job("record", "late_qk_norm", 0.03, seed=1, steps=6)
    mine = lab.extra_runs([job], preset="quick", workers=1)[job]
    sweep = stability_sweep([0.03], variants="late_qk_norm", preset="quick", seed=1, steps=6, progress=False)
    assert mine.losses == sweep[0].losses and mine.final_loss == sweep[0].final_loss
    assert mine.output_rms == sweep[0].output_rms


def test_z_loss_pulls_log_z_towards_zero():
    plain = lab.log_z_after_training(TINY, "gpt2", 0.1)
    strong = lab.log_z_after_training(TINY, "gpt2", 0.1, z_loss=1.0)
    assert plain["before"] == strong["before"]  # the same initial weights
    assert abs(strong["after"]) < abs(plain["after"])
    assert set(plain) == {"before", "after", "final_loss", "max_attn_logit"}


# ----------------------------------------------------------------------------------------------------
# recipe_lab: figures a room can read
# ----------------------------------------------------------------------------------------------------
def fake_sweep():
    records = [
        fake_record(v, lr, rms_scale=scale, final=2.2 + (0.9 if v == "gpt2" and lr > 0.05 else 0.0))
        for v in ("gpt2", "qwen3")
        for lr, scale in ((0.01, 1.0), (0.1, 100.0))
    ]
    return SweepResult(records, PRESETS["quick"], "cpu")


def test_every_figure_passes_the_course_style_checks():
    import matplotlib.pyplot as plt

    result = fake_sweep()
    low, high = result.get("gpt2", 0.01), result.get("gpt2", 0.1)
    figures = [
        lab.sweep_panels(result, {"gpt2": "GPT-2"}),
        lab.sensitivity_bars(result.sensitivity(), result.lrs),
        lab.output_rms_panels({"low": (low, "C0", ":"), "high": (high, "C1", "-")}),
        lab.switch_curves({0.01: {"a": (low, "C0", "-"), "b": (high, "C1", "--")}}, switch_step=15),
        lab.spread_strip({0.01: {"baseline": [2.1, 2.3, 2.2], "embed_l2": [2.2, 2.2, 2.25]}}, 40),
    ]
    for fig in figures:
        assert figure_problems(fig) == []
        plt.close(fig)
