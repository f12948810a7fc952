"""course_utils.records: a run's record, a sweep's result, the verdict of each run (ok, degraded, diverged) and the
LR sensitivity of each variant, on hand-made records (no training). The sweep that fills them is tested in
test_experiments.py.

`record` and `fake_result` are imported by test_ch05_stability.py, whose exercise checks read the same sweep."""

import math

import pytest

from course_utils.experiments import PRESETS
from course_utils.records import DIVERGED_DEFINITION, RunRecord, SweepResult, lr_sensitivity


# ----------------------------------------------------------------------------------------------------
# LR sensitivity (Wortsman et al. 2023)
# ----------------------------------------------------------------------------------------------------
def test_lr_sensitivity_by_hand():
    assert lr_sensitivity([2.0, 2.0, 2.0], 4.0) == 0.0
    assert lr_sensitivity([2.0, 3.0], 4.0) == pytest.approx(0.5)
    # a diverged run (inf or NaN) and a run worse than l0 both count as l0
    assert lr_sensitivity([2.0, math.inf, math.nan, 9.0], 4.0) == pytest.approx((0 + 2 + 2 + 2) / 4)
    assert lr_sensitivity([2.0, 5.0], [4.0, 4.5]) == pytest.approx(1.25)  # one l0 per run
    with pytest.raises(ValueError):
        lr_sensitivity([], 4.0)
    with pytest.raises(ValueError):
        lr_sensitivity([1.0, 2.0], [4.0])


def test_lr_sensitivity_uses_the_best_loss_of_the_grid_not_a_fixed_one():
    assert lr_sensitivity([3.0, 3.5], 4.0) == pytest.approx(0.25)
    assert lr_sensitivity([math.inf, math.inf], 4.0) == 0.0  # all diverged: equally bad everywhere


# ----------------------------------------------------------------------------------------------------
# verdicts and tables, on hand-made records
# ----------------------------------------------------------------------------------------------------
def record(variant, lr, final, diverged=False, max_logit=10.0, diverged_at=None):
    return RunRecord(
        variant=variant,
        lr=lr,
        final_loss=final,
        initial_loss=4.2,
        max_attn_logit=max_logit,
        diverged=diverged,
        diverged_at=diverged_at,
        entropy=[2.0, 1.0],
        probe_steps=[0, 10],
        max_logit=[1.0, max_logit],
    )


def fake_result():
    return SweepResult(
        [
            record("baseline", 0.01, 2.1),
            record("baseline", 0.1, 2.7, max_logit=3e4),
            record("baseline", 1.0, math.inf, diverged=True, max_logit=math.inf, diverged_at=17),
            record("qk_norm", 0.01, 2.0),
            record("qk_norm", 0.1, 2.2),
            record("qk_norm", 1.0, 2.45),
        ],
        PRESETS["quick"],
        "cpu",
    )


def test_statuses_follow_the_stated_definition():
    r = fake_result()
    assert r.survival() == {
        "baseline": {0.01: "ok", 0.1: "degraded", 1.0: "diverged"},
        "qk_norm": {0.01: "ok", 0.1: "ok", 1.0: "ok"},
    }  # 2.45 is within 0.5 of the best 2.0
    assert not r.get("baseline", 0.1).survived and r.get("qk_norm", 1.0)["survived"]
    assert r.get("baseline", 1.0)["final_loss"] == math.inf
    assert r.lrs == [0.01, 0.1, 1.0] and r.variants == ["baseline", "qk_norm"]
    with pytest.raises(KeyError):
        r.get("softcap", 0.1)
    sens = r.sensitivity()
    assert sens["baseline"] == pytest.approx((0 + 0.6 + 2.1) / 3) and sens["qk_norm"] == pytest.approx(
        (0 + 0.2 + 0.45) / 3
    )
    assert r.sensitivity(lrs=[0.01, 0.1])["baseline"] == pytest.approx(0.3)
    assert "diverged" in DIVERGED_DEFINITION and "degraded" in DIVERGED_DEFINITION


def test_tables_print_verdicts_never_a_diverged_loss():
    r = fake_result()
    text, page = repr(r), r._repr_html_()
    assert "diverged (step 17)" in text and "✗ degraded" in text and "✓ ok" in text
    assert "LR sensitivity" in text and "baseline" in page and "<table>" in page
    rows = text.split("LR sensitivity")[0].splitlines()[3:]  # title, header and rule come first
    final_losses = [line.split("|")[2] for line in rows if "|" in line]
    assert len(final_losses) == 6 and not any("inf" in c or "nan" in c for c in final_losses)
    survival = r.survival_table()
    assert "✗" in repr(survival) and "<table>" in survival._repr_html_() and "lr 0.1" in repr(survival)
    assert "<script" not in page


def test_record_reads_like_a_mapping_and_a_dict():
    rec = record("qk_norm", 0.3, 2.2)
    assert rec["variant"] == "qk_norm" and rec["lr"] == 0.3 and rec.final_entropy == 1.0
    assert {"variant", "lr", "final_loss", "max_attn_logit", "diverged", "survived"} <= set(rec.as_dict())
