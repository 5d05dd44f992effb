"""The compiled building blocks of the readers (``formats/_scan.py``) against Python's own ``str.split()``
and ``float()``: ``next_number`` (one pass for a token and its value), ``text_bounds`` (lines and a token
bound), and that the scan kernels are compiled without reference counting where numba can."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hypertune.formats import _scan, cdec_json, extractor, moses_hypergraph, nbest

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
    kernels = [nbest._scan, extractor._scan, moses_hypergraph._scan, moses_hypergraph._edge, cdec_json._scan,
               cdec_json._edge, cdec_json._object]  # fmt: skip
    assert all(kernel.targetoptions.get("_nrt") is False for kernel in kernels)
