"""``format_number`` and ``format_number_lines`` (formats/_common.py): the shortest text that reads back as the
number, without a trailing ``.0``; expected texts written out by hand."""

from __future__ import annotations

from hypertune.formats._common import format_number, format_number_lines

VALUES = [2.0, -0.0, 0.1, 10.0, 100.05, 1e16, 1e-07, float("inf"), float("-inf"), float("nan"), -2.5, 3]
TEXTS = ["2", "-0", "0.1", "10", "100.05", "1e+16", "1e-07", "inf", "-inf", "nan", "-2.5", "3"]


def test_each_number_alone() -> None:
    assert [format_number(v) for v in VALUES] == TEXTS


def test_all_numbers_at_once_one_a_line() -> None:
    assert format_number_lines(VALUES) == "".join(text + "\n" for text in TEXTS)
    assert format_number_lines([]) == ""
