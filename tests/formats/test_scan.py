"""The compiled building blocks of the readers (``formats/_scan.py``) against Python's own ``str.split()``,
``float()`` and ``re``: ``next_number`` (one pass for a token and its value), ``text_bounds`` (lines and a
token bound), ``unicode_digit``; the skeleton every compiled reader runs on (``run_scan``'s larger tables,
``fail`` and ``scan_error``'s one message table, ``flagged_floats``, ``interned_columns``); and that the scan
kernels are compiled without reference counting where numba can."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hypertune.errors import InputError
from hypertune.formats import _scan, extractor, json_cdec_grammar, moses_hypergraph, nbest
from hypertune.symbols import Vocabulary

# the characters of a features field: number syntax, name syntax, ASCII and Unicode spaces, other UTF-8
ALPHABET = "0123456789.eE+-=x:|é \t\x0b\x0c\r\x1c\xa0\x85\u2003\u3000\u200b"
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?")


@numba.njit
def _first_number(buf):  # the helper is inlined into kernels only; this calls it from Python
    return _scan.next_number(buf, 0, buf.size)


@numba.njit
def _scan_pair_compiled(buf):
    return _scan.next_token(buf, 0, buf.size, False)


@numba.njit
def _scan_value_compiled(buf, start, end):
    return _scan.parse_decimal(buf, start, end)


def _token_then_value(buf):
    """What ``next_number`` replaces: ``next_token`` and then ``parse_decimal``."""
    start, end = _scan_pair_compiled(buf)
    return (start, end, *_scan_value_compiled(buf, start, end))


def _fast_path(token: str) -> bool:
    """Whether a decimal must be converted exactly in the compiled pass: at most 15 digits (so below the
    2**53 limit of the significand) and a decimal exponent, after moving the point, of at most 22 in size
    (the module docstring of ``_scan``). The generated tokens are too short for 16 digits."""
    match = NUMBER.fullmatch(token)
    if match is None:
        return False
    mantissa, _, written = token.lstrip("+-").replace("E", "e").partition("e")
    whole, _, fraction = mantissa.partition(".")
    exponent = (int(written) if written else 0) - len(fraction)
    return len(whole + fraction) <= 15 and -22 <= exponent <= 22


@pytest.mark.parametrize(
    ("text", "token", "value"),
    [
        ("  -42.25 x", "-42.25", -42.25),
        ("1e3", "1e3", 1000.0),
        ("\u00a0.5E-2\u2003", ".5E-2", 0.005),
        ("+0 ", "+0", 0.0),
        ("-0", "-0", -0.0),
        ("7.", "7.", 7.0),
        ("1e22", "1e22", 1e22),
        ("123456789012345e-22", "123456789012345e-22", 123456789012345e-22),
    ],
)
def test_next_number_reads_plain_decimals(text, token, value):
    data = text.encode()
    start, end, exact, got = _first_number(np.frombuffer(data, np.uint8))
    assert data[start:end].decode() == token
    assert exact
    assert got == value and np.signbit(got) == np.signbit(value)


@pytest.mark.parametrize(
    "text", ["d=", "x=1", "1e", "1e+", "1e1234", "1.2.3", "-", ".", "e5", "1x", "9" * 17, "1e23", "nan", "1|2"]
)
def test_next_number_leaves_anything_else_to_float(text):
    start, end, exact, value = _first_number(np.frombuffer(f" {text} 5".encode(), np.uint8))
    assert (start, end, exact, value) == (1, 1 + len(text), False, 0.0)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=14))
def test_next_number_is_split_and_float(text):
    data = text.encode()
    buf = np.frombuffer(data, np.uint8)
    start, end, exact, value = _first_number(buf)
    tokens = text.split()
    if not tokens:
        assert start == end == len(data)
        return
    begin = len(text) - len(text.lstrip())
    assert start == len(text[:begin].encode())
    assert data[start:end].decode() == tokens[0]
    assert exact == _fast_path(tokens[0])
    if exact:
        assert value == float(tokens[0]) and np.signbit(value) == np.signbit(float(tokens[0]))
    assert (start, end, exact, value) == _token_then_value(buf)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=ALPHABET + "\n", max_size=40))
def test_text_bounds(text):
    data = text.encode()
    lines, tokens = _scan.text_bounds(np.frombuffer(data, np.uint8))
    assert lines == data.count(b"\n") + 1
    pieces = re.split(r"\s|\|", text)  # every token ends at a space, a line end, a '|' or the end
    assert tokens >= len([p for p in pieces if p])
    assert _scan.token_bound(np.frombuffer(data, np.uint8)) == tokens


def test_scan_kernels_count_no_references():
    """The per-line kernels bind their reader's tuple of arrays in every inlined helper; with reference
    counting they ran at half the speed (issue 20)."""
    from numba.core.cpu import CPUTargetOptions

    if not hasattr(CPUTargetOptions, "_nrt"):
        pytest.skip("this numba has no _nrt option")
    kernels = [nbest._scan_moses, nbest._scan_zmert, extractor._scan, moses_hypergraph._scan, moses_hypergraph._edge,
               json_cdec_grammar.scan, json_cdec_grammar._read_edges, json_cdec_grammar._node,
               json_cdec_grammar._object]  # fmt: skip
    assert all(kernel.targetoptions.get("_nrt") is False for kernel in kernels)


@numba.njit
def _digit(buf, digits):
    return _scan.unicode_digit(buf, 0, buf.size, digits)


@pytest.mark.parametrize("char", ["7", "x", "\u0661", "\u0b68", "\U0001d7d9", "\u00e9", "\u2167", "\u00b2"])
def test_unicode_digit_is_what_int_reads(char):
    """A decimal digit of any script (what ``\\d`` matches and ``int()`` reads); not Roman numerals or
    superscripts (numeric, not decimal). Without the table a character outside ASCII asks for it."""
    buf = np.frombuffer(char.encode(), np.uint8)
    expected = int(char) if re.fullmatch(r"\d", char) else -1
    assert _digit(buf, _scan.unicode_digits()) == (expected, buf.size)
    assert _digit(buf, _scan.NO_DIGITS) == ((expected, 1) if char.isascii() else (-2, buf.size))


def test_run_scan_grows_the_tables_until_they_hold_the_file():
    """A kernel answering TABLE_FULL runs again on fresh arrays with every capacity four times larger."""
    words = [f"w{k}" for k in range(100)]
    data = " ".join(words).encode()
    buf = np.frombuffer(data, np.uint8)
    seen = []

    @numba.njit
    def intern_all(buf, ids, table):
        j, k = 0, 0
        while True:
            s, e = _scan.next_token(buf, j, buf.size, False)
            if s == buf.size:
                return 0
            ids[k] = _scan.intern(table, buf, s, e)
            if ids[k] < 0:
                return _scan.TABLE_FULL
            j, k = e, k + 1

    def arrays(room):
        seen.append(tuple(room))
        return np.full(200, -1, np.int64)

    ids, (table,), code = _scan.run_scan(
        lambda out, table: intern_all(buf, out, table), arrays, (_scan.new_string_table,), (2, 5)
    )
    assert code == 0 and seen == [(5,), (20,), (80,), (320,)] and table.starts.size == 128
    assert [_scan.string_at(data, table, k) for k in ids[:100].tolist()] == words


@numba.njit
def _fail_twice(error):
    _scan.fail(error, 9, 1, 2, 3, 4, 5, 6, at=0)
    return _scan.fail(error, 2, 6, 13, 7)


def test_one_message_table():
    """``fail`` records the code, the offending text, the numbers and the byte to locate (its start by
    default); ``scan_error`` fills the code's message with them and with fields given or computed late."""
    data = b"one\ntwo three\nfour"
    error = _scan.new_error()
    assert _fail_twice(error) == 2 and error.tolist() == [2, 6, 13, 7, 0, 0, 0, 6]
    messages = {2: "got {token!r} ({text!r}), {count} and {extra}, {late}", 3: "{never}"}
    never = []
    got = _scan.scan_error(data, error, messages, "f", ("count",), extra="x", late=lambda: 5, never=never.append)
    assert isinstance(got, InputError) and str(got) == "f:2: got 'o three' ('o three'), 7 and x, 5"
    error[7] = len(data) + 1  # past the end: the line after the last
    assert _scan.scan_error(data, error, messages, "f", ("count",), extra=1, late=2).line == 4


def test_flagged_floats_stop_at_the_first_bad_text():
    data = b"1e400 0x1 2.5 1_0 nan inf"
    starts, ends = np.array([10, 14, 0, 6, 18]), np.array([13, 17, 5, 9, 21])
    values, bad = _scan.flagged_floats(data, starts, ends)
    assert values[:2].tolist() == [2.5, 10.0] and bad == _scan.BadNumber(2, "1e400", False)
    values, bad = _scan.flagged_floats(data, starts[3:], ends[3:])
    assert bad == _scan.BadNumber(0, "0x1", True)
    assert _scan.flagged_floats(data, starts[:2], ends[:2])[1] is None


def test_interned_columns_follow_first_occurrence():
    """Strings are added to the space in the order the ids first occur, not in table order."""
    vocabulary = Vocabulary()
    vocabulary.index("b")
    strings = ["a", "b", "c", "d"]
    columns = _scan.interned_columns(np.array([2, 0, 2, 1]), 4, lambda ks: [strings[k] for k in ks], vocabulary.indices)
    assert columns.tolist() == [1, 2, 1, 0] and list(vocabulary) == ["b", "c", "a"]
