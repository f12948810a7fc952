"""course_utils.claims: ✓ or ✗ per claim, margins, the stored run's values, strict in tests and never raising for a
learner; and the claims of the notebooks against the stored values that explain a learner's ✗."""

import io
import json
import math
import re

import nbformat
import pytest

from course_utils import claims, nbtools
from course_utils.claims import AllOf, Comparison, at_least, at_most, check_claims, less, more
from course_utils.i18n import using

from conftest import ROOT


def printed(key, given, strict=False, monkeypatch=None, **kw):
    out = io.StringIO()
    monkeypatch.setenv(claims.STRICT_ENV, "1" if strict else "0")
    check_claims(key, given, out=out, **kw)
    return out.getvalue()


@pytest.mark.parametrize(
    "claim, holds",
    [
        (more(2, 1), True),
        (more(1, 1), False),
        (at_least(1, 1), True),
        (less(1, 2), True),
        (less(2, 2), False),
        (at_most(2, 2), True),
        (more(math.nan, 1), False),
        (less(math.nan, 1), False),
        (at_least(1, math.nan), False),
        (more(math.inf, 1e30), True),
        (less(math.inf, 1e30), False),
    ],
)
def test_a_comparison_holds_as_its_operator_says(claim, holds):
    assert bool(claim) is holds
    assert not (claim.margin > 0 and not holds) and not (claim.margin < 0 and holds)


def test_the_margin_is_the_distance_to_the_bound_relative_to_it():
    assert more(150, 100).margin == pytest.approx(0.5)
    assert less(0.3, 0.5).margin == pytest.approx(0.4)
    assert less(0.6, 0.5).margin == pytest.approx(-0.2)
    assert more(math.inf, 0.5).margin == math.inf and less(math.inf, 0.5).margin == -math.inf
    assert more(math.nan, 1).margin == -math.inf
    assert less(-0.25, 0).margin == pytest.approx(0.25)  # against a bound of 0, the plain gap
    assert more(-1e-3, 0).margin == pytest.approx(-1e-3)


def test_joined_comparisons_hold_together_and_keep_the_smallest_margin():
    both = more(3, 1) & less(0.45, 0.5)
    assert isinstance(both, AllOf) and bool(both) and both.margin == pytest.approx(0.1)
    assert not (more(3, 1) & less(0.6, 0.5))
    three = both & at_least(10, 5)
    assert len(three.parts()) == 3 and three.margin == pytest.approx(0.1)
    with pytest.raises(TypeError):
        more(1, 0) & True  # a bool has no margin to join


def test_bad_operators_are_refused():
    with pytest.raises(ValueError):
        Comparison(1.0, "==", 1.0)


def test_each_claim_is_printed_with_its_verdict(monkeypatch):
    text = printed("t.ok", {"a holds": more(2, 1), "b holds": True}, monkeypatch=monkeypatch)
    assert text == "✓ a holds\n✓ b holds\n"


def test_a_learner_never_gets_an_exception_and_reads_why(monkeypatch):
    monkeypatch.setattr(claims, "stored_values", lambda: {"t.fail": [[[0.34, "<=", 0.5]], []]})
    text = printed("t.fail", {"survives": at_most(0.71, 0.5), "also": False}, monkeypatch=monkeypatch)
    lines = text.splitlines()
    assert lines[0] == "✗ survives"
    assert "your run: 0.71, needed at most 0.5" in lines[1] and "the stored run: 0.34" in lines[1]
    assert lines[2] == "✗ also" and "your run: false" in lines[3]
    assert "2 of 2 claims do not hold in your run" in text
    assert "last bits" in text and "Chapter 00" in text and "runs as usual" in text


def test_the_tests_make_a_claim_that_does_not_hold_an_error(monkeypatch):
    with pytest.raises(AssertionError, match="survives"):
        printed("t.fail", {"survives": at_most(0.71, 0.5)}, strict=True, monkeypatch=monkeypatch)
    assert printed("t.ok", {"fine": less(0.3, 0.5)}, strict=True, monkeypatch=monkeypatch) == "✓ fine\n"


def test_under_another_preset_claims_are_expectations_and_never_raise(monkeypatch):
    text = printed("t.gpu", {"survives": at_most(0.71, 0.5)}, strict=True, monkeypatch=monkeypatch, preset="gpu")
    assert text.startswith("✗ survives\n") and "measured on the quick preset" in text and "gpu preset" in text
    assert "do not hold in your run" not in text  # the note says why, not the CPU explanation
    quiet = printed("t.quick", {"fine": less(0.3, 0.5)}, strict=True, monkeypatch=monkeypatch, preset="quick")
    assert quiet == "✓ fine\n"


def test_the_explanation_speaks_japanese_in_the_japanese_edition(monkeypatch):
    monkeypatch.setattr(claims, "stored_values", lambda: {})
    with using("ja"):
        text = printed("t.ja", {"x": more(1, 2)}, monkeypatch=monkeypatch)
    assert "your run" not in text and "Chapter 00" not in text and re.search(r"[\u3040-\u30ff]", text)


def test_every_checked_claim_is_logged_with_its_margin(tmp_path, monkeypatch):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(claims.LOG_ENV, str(log))
    printed("t.log", {"a": more(3, 2) & less(1, 2), "b": False}, monkeypatch=monkeypatch, preset="quick")
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["key"], e["index"], e["text"], e["holds"], e["preset"]) for e in entries] == [
        ("t.log", 0, "a", True, "quick"),
        ("t.log", 1, "b", False, "quick"),
    ]
    assert entries[0]["values"] == [[3.0, ">", 2.0], [1.0, "<", 2.0]] and entries[0]["margin"] == pytest.approx(0.5)
    assert entries[1]["values"] == [] and entries[1]["margin"] is None


def test_check_claims_needs_a_dict_of_claims(monkeypatch):
    for bad in ({}, [("a", True)], None):
        with pytest.raises(TypeError):
            printed("t.bad", bad, monkeypatch=monkeypatch)


def test_the_stored_run_records_each_claim_by_key_and_index(tmp_path):
    path = tmp_path / "stored.json"
    path.write_text(json.dumps({"old": [[[1, ">", 0]]], "t.a": [[[9, ">", 9]]]}))
    lines = [
        json.dumps({"key": "t.a", "index": 1, "values": [[2.0, ">", 1.0]]}),
        json.dumps({"key": "t.a", "index": 0, "values": [[0.3, "<", 0.5], [4, ">", 1]]}),
    ]
    nbtools.record_stored_claims(lines, path)
    stored = json.loads(path.read_text())
    assert stored == {"old": [[[1, ">", 0]]], "t.a": [[[0.3, "<", 0.5], [4, ">", 1]], [[2.0, ">", 1.0]]]}


CALL = re.compile(r'check_claims\(\s*"([^"]+)"')


def claim_calls():
    """{key: where} of every check_claims call: in the English notebooks, and in the checks the solutions call."""
    found = {}
    for folder in ("chapters", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type == "code" and "check_claims(" in cell.source:
                    found.update(dict.fromkeys(CALL.findall(cell.source), path.name))
    for path in sorted((ROOT / "course_utils" / "checks").glob("*.py")):
        found.update(dict.fromkeys(CALL.findall(path.read_text(encoding="utf-8")), path.name))
    return found


def test_the_stored_values_cover_every_claim_of_the_notebooks_and_hold():
    """course_utils/stored_claims.json, written by `make execute`, has the values of every check_claims call of the
    English notebooks (what a learner's ✗ is compared with), and each of them holds its claim."""
    stored = json.loads(claims.STORED.read_text(encoding="utf-8"))
    calls = claim_calls()
    assert sorted(stored) == sorted(calls), "run `make execute` on the notebooks whose claims changed"
    ops = {">": lambda v, b: v > b, ">=": lambda v, b: v >= b, "<": lambda v, b: v < b, "<=": lambda v, b: v <= b}
    assert set(ops) == set(claims.OPERATORS)
    for key, entries in stored.items():
        for values in entries:
            for value, op, bound in values:
                assert ops[op](value, bound), (key, value, op, bound)


def test_docs_numerics_reports_every_claim_of_the_notebooks():
    """docs/numerics.md, where a maintainer finds each claim's measured margin, has a row for every claim key of the
    notebooks (`python tools/cpu_matrix.py measure`, then `report`, writes them)."""
    doc = (ROOT / "docs" / "numerics.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| \w\w\w? \| `([^`]+)` \d+:", doc, re.M))
    assert rows == set(claim_calls()), "re-measure: python tools/cpu_matrix.py measure, then report"


def test_a_claim_with_strange_values_still_prints_a_verdict(monkeypatch):
    """What a learner may hand check_claims after editing a cell: a tensor, NaN, None, a string."""
    import torch

    text = printed(
        "t.odd",
        {"tensor": more(torch.tensor(3.0), 1), "nan": less(float("nan"), 1), "none": None, "text": "yes"},
        monkeypatch=monkeypatch,
    )
    assert text.splitlines()[:1] == ["✓ tensor"] and "✗ nan" in text and "✗ none" in text and "✓ text" in text
