"""course_utils.display: the tensor comparison and the printed tables, which pad by display width (issue 26).

A Japanese character takes two columns of a monospaced font, so a table padded with `len` (an f-string width)
misaligns as soon as a header is translated. `text_width` counts columns as terminals do (wcwidth is the reference
here: it is installed with IPython, but the course does not depend on it), and every printed table pads with it.
"""

import pytest
import torch
import wcwidth

from course_utils.display import Table, cmp, pad, text_table, text_width


@pytest.mark.parametrize(
    "text",
    [
        "LayerNorm",
        "正規化",
        "ゲイン（weight）",
        "✓ 良好",
        "✗ 劣化",
        "学習率 0.01",
        "ｱ",
        "Ａ",
        "é",
        "e\u0301",
        "x² − σ",
        "最大 |logit|",
    ],
)
def test_text_width_counts_columns_as_a_terminal_does(text):
    assert text_width(text) == wcwidth.wcswidth(text)


def test_pad_aligns_by_columns_not_characters():
    assert pad("ゲイン", 8) == "ゲイン  " and text_width(pad("ゲイン", 8)) == 8
    assert pad("ゲイン", 8, ">") == "  ゲイン"
    assert pad("ab", 5, "^") == " ab  "
    assert pad("使われない特徴量", 4) == "使われない特徴量"  # wider than asked: whole, never cut


def test_text_table_lines_up_japanese_headers_and_right_aligns_numbers():
    table = text_table(["ゲイン", "減衰", "使われない特徴量"], [["weight", 0.1, "0.367"], ["1 + w", "0.1", "1.000"]])
    lines = table.splitlines()
    mark = {1: "+"}  # the rule's separators are "+"; the other lines' are "|"
    bars = {
        tuple(text_width(line[:i]) for i, ch in enumerate(line) if ch == mark.get(n, "|"))
        for n, line in enumerate(lines)
    }
    assert len(bars) == 1, table  # every separator at the same column, the rule's "+" included
    assert lines[2].endswith("  0.367") and lines[2].startswith("weight |")
    assert lines[1].startswith("-------+")


def test_text_table_takes_an_alignment_and_refuses_ragged_rows():
    assert text_table(["a", "b"], [["x", "y"]], align="><").splitlines()[2] == "x | y"
    with pytest.raises(ValueError, match="2 cells"):
        text_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="align"):
        text_table(["a", "b"], [["x", "y"]], align="<")


def test_the_sweep_table_pads_by_display_width():
    shown = repr(Table([{"判定": "✓ 良好", "学習率": "0.01"}, {"判定": "✗ 発散", "学習率": "0.3"}], "表"))
    assert [text_width(line.split("|")[0]) for line in shown.splitlines()[1:] if "|" in line] == [7, 7, 7]


def test_cmp_reports_exact_close_and_max_difference(capsys):
    a = torch.tensor([1.0, 2.0])
    assert cmp("same", a, a.clone()) is True
    assert cmp("close", a, a + 1e-7) is True
    assert cmp("far", a, a + 1.0) is False
    assert cmp("shape", a, a[:1]) is False
    out = capsys.readouterr().out.splitlines()
    assert "exact: True" in out[0] and "exact: False" in out[1] and "max diff: 1.0e+00" in out[2]
    assert "shapes differ" in out[3]
