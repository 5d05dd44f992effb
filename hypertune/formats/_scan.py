"""The compiled readers' building blocks and skeleton: whitespace as Python's ``str.split()`` sees it,
exact decimal numbers, Unicode digits, one collision-free table of byte strings; and the one way a reader
runs its kernel and turns what it fills into graphs or an error.

A reader scans the UTF-8 bytes of a whole file in one compiled pass with these helpers and hands back
arrays. :func:`run_scan` runs its kernel, again with larger tables while the kernel answers
:data:`TABLE_FULL`; on bad input the kernel stops with :func:`fail` (an error code, the offending bytes and
the numbers the message needs), and :func:`scan_error` fills the code's message from the reader's one
message table at the line of the offending byte. :func:`flagged_floats` converts the numbers the fast
path leaves to ``float()``, and :func:`interned_columns`, :class:`EdgeArrays` and :func:`edge_graph` build
the graphs. So each format has one parser: there is no second, slower "checked" parser to keep in step
with it.

- Whitespace: exactly the characters ``str.split()`` splits on (ASCII ``\\t\\v\\f\\x1c-\\x1f`` and space,
  and the Unicode spaces U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), so
  a compiled reader tokenizes a line exactly as the Python one it replaces.
- Numbers: ``[+-]digits[.digits][(e|E)[+-]digits]`` with a significand below 2**53 and a decimal exponent of
  at most 22 in size is converted exactly (Clinger 1990, "How to read floating point numbers accurately":
  both operands are exact doubles, so one multiplication or division is correctly rounded, as
  ``float()`` is). Anything else (more digits, ``inf``, ``1_000``) is flagged, and the reader calls
  ``float()`` on the flagged few; so every value equals ``float(text)``.
- Strings: :class:`StringTable` interns byte ranges of the buffer by FNV-1a hash with linear probing,
  comparing the bytes on every hash match, so two different strings never share an id. Ids follow first
  appearance. :class:`KeyTable` does the same for int64 keys, on the project's one key table
  (:func:`hypertune.compiled.insert_key`).
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import numba
import numpy as np
import scipy.sparse as sp

from hypertune.compiled import EMPTY_KEY, find_key, helper_jit, insert_key, uncounted_jit
from hypertune.errors import InputError
from hypertune.formats.io import read_bytes
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

__all__ = [
    "MAX_DIGITS",
    "NO_DIGITS",
    "TABLE_FULL",
    "BadNumber",
    "EdgeArrays",
    "KeyTable",
    "StringTable",
    "edge_graph",
    "fail",
    "find_id",
    "first_occurrences",
    "flagged_floats",
    "intern",
    "interned_columns",
    "is_separator",
    "is_string",
    "key_id",
    "located",
    "new_error",
    "new_key_table",
    "new_string_table",
    "next_number",
    "next_token",
    "parse_decimal",
    "parse_integer",
    "read_bytes",
    "run_scan",
    "same_bytes",
    "scan_error",
    "space_width",
    "string_at",
    "text_bounds",
    "token_bound",
    "uncounted_jit",
    "unicode_digit",
    "unicode_digits",
]

_jit = numba.njit(cache=True, nogil=True)
_inline = helper_jit  # not inline="always": see helper_jit


_EXACT_POWERS = np.array([10.0**k for k in range(23)])  # 1e0 .. 1e22: every one an exact double
_LARGEST_BEFORE_DIGIT = ((1 << 53) - 10) // 10  # then significand * 10 + 9 < 2**53
MAX_DIGITS = 18  # integers of at most 18 digits fit an int64
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


# byte classes: a plain byte, an ASCII space, the first byte of a possible Unicode space, "|", "\n"
PLAIN, SPACE, MAYBE_SPACE, BAR, NEWLINE = 0, 1, 2, 3, 4
BYTE_CLASS = np.zeros(256, np.uint8)
BYTE_CLASS[[9, 11, 12, 13, 28, 29, 30, 31, 32]] = SPACE
BYTE_CLASS[[0xC2, 0xE1, 0xE2, 0xE3]] = MAYBE_SPACE
BYTE_CLASS[ord("|")] = BAR
BYTE_CLASS[ord("\n")] = NEWLINE


@_inline
def space_width(buf: np.ndarray, i: int) -> int:  # pragma: no cover - compiled
    """The byte length of the whitespace character at ``buf[i]`` (``str.split()``'s set), 0 for any other."""
    kind = BYTE_CLASS[buf[i]]
    if kind == SPACE or kind == NEWLINE:
        return 1
    if kind != MAYBE_SPACE:
        return 0
    b = buf[i]
    n = buf.size
    c1 = buf[i + 1] if i + 1 < n else 0
    if b == 0xC2:
        return 2 if c1 == 0x85 or c1 == 0xA0 else 0
    c2 = buf[i + 2] if i + 2 < n else 0
    if b == 0xE1:
        return 3 if c1 == 0x9A and c2 == 0x80 else 0
    if b == 0xE3:
        return 3 if c1 == 0x80 and c2 == 0x80 else 0
    if c1 == 0x80:
        return 3 if (c2 >= 0x80 and c2 <= 0x8A) or c2 == 0xA8 or c2 == 0xA9 or c2 == 0xAF else 0
    if c1 == 0x81:
        return 3 if c2 == 0x9F else 0
    return 0


@_inline
def same_bytes(buf: np.ndarray, start: int, end: int, other: int) -> bool:  # pragma: no cover - compiled
    """Whether ``buf[start:end]`` equals the bytes at ``other`` (of the same length)."""
    offset = other - start
    for j in range(start, end):
        if buf[j + offset] != buf[j]:
            return False
    return True


@_inline
def is_string(table: StringTable, k: int, buf: np.ndarray, start: int, end: int) -> bool:  # pragma: no cover
    """Whether string ``k`` of ``table`` is ``buf[start:end]`` (a cheap check before :func:`intern` when the
    string is likely known, e.g. the feature name in the same position on the previous line)."""
    return (
        k >= 0
        and k < table.used[0]
        and table.ends[k] - table.starts[k] == end - start
        and same_bytes(buf, start, end, table.starts[k])
    )


@_inline
def is_separator(buf: np.ndarray, j: int, end: int) -> bool:  # pragma: no cover - compiled
    """Whether the field separator ``|||`` starts at ``buf[j]`` (and ends before ``end``)."""
    return j + 2 < end and buf[j] == 124 and buf[j + 1] == 124 and buf[j + 2] == 124


@_inline
def next_token(buf: np.ndarray, j: int, end: int, separators: bool) -> tuple[int, int]:  # pragma: no cover - compiled
    """The next token at or after ``j`` before ``end`` (``(end, end)`` when none): whitespace-separated, and
    with ``separators`` also ending at ``|||`` (as ``line.split("|||")`` then ``.split()`` would split)."""
    while j < end:
        width = space_width(buf, j)
        if width == 0:
            break
        j += width
    start = j
    if separators and is_separator(buf, j, end):
        return start, j + 3
    while j < end:
        kind = BYTE_CLASS[buf[j]]
        if kind != PLAIN and (
            kind == SPACE
            or (kind == MAYBE_SPACE and space_width(buf, j) > 0)
            or (kind == BAR and separators and is_separator(buf, j, end))
        ):
            break
        j += 1
    return start, j


@_inline
def parse_integer(buf: np.ndarray, start: int, end: int) -> tuple[bool, int]:  # pragma: no cover - compiled
    """``(True, value)`` when ``buf[start:end]`` is ``[+-]digits`` (ASCII, at most 18 digits: an int64)."""
    j = start
    sign = 1
    if j < end and (buf[j] == 45 or buf[j] == 43):
        sign = -1 if buf[j] == 45 else 1
        j += 1
    if j == end or end - j > MAX_DIGITS:
        return False, 0
    value = 0
    while j < end:
        if buf[j] < 48 or buf[j] > 57:
            return False, 0
        value = value * 10 + (buf[j] - 48)
        j += 1
    return True, sign * value


@_inline
def parse_decimal(buf: np.ndarray, start: int, end: int) -> tuple[bool, float]:  # pragma: no cover - compiled
    """``(True, value)`` when ``buf[start:end]`` is a decimal number this exact fast path converts (see the
    module docstring), else ``(False, 0.0)``: the caller then uses ``float()``."""
    j = start
    negative = False
    if j < end and (buf[j] == 45 or buf[j] == 43):
        negative = buf[j] == 45
        j += 1
    significand = 0
    digits = 0
    exponent = 0
    dot = False
    while j < end:
        c = buf[j]
        if c >= 48 and c <= 57:
            digits += 1
            if significand > _LARGEST_BEFORE_DIGIT:
                return False, 0.0
            significand = significand * 10 + (c - 48)
            if dot:
                exponent -= 1
        elif c == 46 and not dot:
            dot = True
        else:
            break
        j += 1
    if digits == 0:
        return False, 0.0
    if j < end:
        if buf[j] != 101 and buf[j] != 69:
            return False, 0.0
        j += 1
        sign = 1
        if j < end and (buf[j] == 45 or buf[j] == 43):
            sign = -1 if buf[j] == 45 else 1
            j += 1
        if j == end or end - j > 3:
            return False, 0.0
        written = 0
        while j < end:
            c = buf[j]
            if c < 48 or c > 57:
                return False, 0.0
            written = written * 10 + (c - 48)
            j += 1
        exponent += sign * written
    if exponent < -22 or exponent > 22:
        return False, 0.0
    x = float(significand)
    x = x * _EXACT_POWERS[exponent] if exponent >= 0 else x / _EXACT_POWERS[-exponent]
    return True, -x if negative else x


@_inline
def next_number(buf: np.ndarray, j: int, end: int) -> tuple[int, int, bool, float]:  # pragma: no cover - compiled
    """``next_token(buf, j, end, False)`` and :func:`parse_decimal` of that token in one pass over its bytes
    (most tokens of a features field are numbers): ``(start, end, exact, value)``."""
    while j < end:
        width = space_width(buf, j)
        if width == 0:
            break
        j += width
    start = j
    negative = j < end and buf[j] == 45
    if j < end and (buf[j] == 45 or buf[j] == 43):
        j += 1
    significand, digits, exponent, dot, exact = 0, 0, 0, False, True
    while j < end:
        c = buf[j]
        if c >= 48 and c <= 57:
            digits += 1
            if significand > _LARGEST_BEFORE_DIGIT:
                exact = False
                break
            significand = significand * 10 + (c - 48)
            if dot:
                exponent -= 1
        elif c == 46 and not dot:
            dot = True
        else:
            break
        j += 1
    if exact and j < end and (buf[j] == 101 or buf[j] == 69):
        j += 1
        sign = -1 if j < end and buf[j] == 45 else 1
        if j < end and (buf[j] == 45 or buf[j] == 43):
            j += 1
        first, written = j, 0
        while j < end and buf[j] >= 48 and buf[j] <= 57 and j - first < 3:
            written = written * 10 + (buf[j] - 48)
            j += 1
        exact = j > first
        exponent += sign * written
    if j < end:  # the token goes on: not a number, unless it ends here (as next_token ends tokens)
        kind = BYTE_CLASS[buf[j]]
        if not (kind == SPACE or (kind == MAYBE_SPACE and space_width(buf, j) > 0)):
            exact = False
            j = next_token(buf, j, end, False)[1]
    if not exact or digits == 0 or exponent < -22 or exponent > 22:
        return start, j, False, 0.0
    x = float(significand)
    x = x * _EXACT_POWERS[exponent] if exponent >= 0 else x / _EXACT_POWERS[-exponent]
    return start, j, True, -x if negative else x


class StringTable(NamedTuple):
    """Interned byte strings of one buffer: string ``k`` is ``buf[starts[k]:ends[k]]``; ``used[0]`` strings
    so far, at most ``capacity`` (= ``starts.size``); ``slots`` is the open-addressing index (-1 empty),
    at least twice the capacity. A full table does not grow inside a kernel (a grown table would be a new
    value to pass around on every call): :func:`intern` answers -1 and the reader scans again with a
    larger table (see :func:`run_scan`)."""

    slots: np.ndarray
    hashes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    used: np.ndarray


def new_string_table(capacity: int) -> StringTable:
    size = 16
    while size < 2 * capacity:
        size *= 2
    return StringTable(
        np.full(size, -1, np.int64),
        np.empty(capacity, np.uint64),
        np.empty(capacity, np.int64),
        np.empty(capacity, np.int64),
        np.zeros(1, np.int64),
    )


@_inline
def intern(table: StringTable, buf: np.ndarray, start: int, end: int) -> int:  # pragma: no cover - compiled
    """The id of ``buf[start:end]`` (a new id when it is new), or -1 when the table is full."""
    h = _FNV_OFFSET
    for j in range(start, end):
        h = (h ^ np.uint64(buf[j])) * _FNV_PRIME
    mask = table.slots.size - 1
    slot = np.int64(h & np.uint64(mask))
    while True:
        k = table.slots[slot]
        if k == -1:
            break
        if table.hashes[k] == h and table.ends[k] - table.starts[k] == end - start:
            if same_bytes(buf, start, end, table.starts[k]):
                return k
        slot = (slot + 1) & mask
    k = table.used[0]
    if k >= table.starts.size:
        return -1
    table.slots[slot] = k
    table.hashes[k] = h
    table.starts[k] = start
    table.ends[k] = end
    table.used[0] = k + 1
    return k


@_jit
def first_occurrences(ids: np.ndarray, size: int) -> np.ndarray:  # pragma: no cover - compiled
    """The distinct values of ``ids`` (each in ``0 .. size-1``, e.g. string-table ids) in order of first
    occurrence: the order in which a reader interns words and feature names."""
    seen = np.zeros(size, np.bool_)
    order = np.empty(min(size, ids.size), np.int64)
    count = 0
    for k in ids:
        if not seen[k]:
            seen[k] = True
            order[count] = k
            count += 1
    return order[:count]


@_jit
def text_bounds(buf: np.ndarray) -> tuple[int, int]:  # pragma: no cover - compiled
    """``(lines, tokens)``: the lines of a buffer (newlines + 1) and an upper bound on its tokens (each ends
    at a space, a line end, a ``|``, a possible Unicode space or the end), in one vectorized pass."""
    lines = 1
    tokens = 1
    for i in range(buf.size):
        b = buf[i]
        lines += np.int64(b == 10)
        tokens += np.int64(b <= 32) | np.int64(b == 124) | np.int64(np.uint8(b - 0xC2) <= 0x21)
    return lines, tokens


def token_bound(buf: np.ndarray) -> int:
    """An upper bound on the tokens of a buffer (see :func:`text_bounds`)."""
    return int(text_bounds(buf)[1])


def string_at(data: bytes, table: StringTable, k: int) -> str:
    """String ``k`` of the table as text."""
    return data[int(table.starts[k]) : int(table.ends[k])].decode("utf-8")


def located(data: bytes, offset: int, message: str, path: str) -> InputError:
    """An :class:`InputError` at the line of ``data`` holding byte ``offset``; an offset past the end is the
    line after the last (a file without a final newline that stops inside a block)."""
    if offset > len(data):
        return InputError(message, path, data.count(b"\n") + 2)
    return InputError(message, path, data.count(b"\n", 0, offset) + 1)


NO_DIGITS = np.zeros(0, np.int64)


@functools.cache
def unicode_digits() -> np.ndarray:
    """The code points that ``\\d`` matches in a ``str`` pattern and ``int()`` reads (Unicode decimal digits,
    category Nd), sorted. They come in runs of ten from a zero (a Unicode stability policy), so entry ``k``
    is the digit ``k % 10``. Building the table takes a fifth of a second: a reader asks for it only when a
    file needs it (:func:`unicode_digit`)."""
    text = "".join(map(chr, range(0x110000)))
    digits = np.array([ord(c) for c in re.findall(r"\d", text)], dtype=np.int64)
    runs = digits.reshape(-1, 10)
    assert np.all(runs - runs[:, :1] == np.arange(10)) and {unicodedata.decimal(chr(c)) for c in runs[:, 0]} == {0}
    return digits


@_jit
def unicode_digit(buf: np.ndarray, j: int, end: int, digits: np.ndarray) -> tuple[int, int]:  # pragma: no cover
    """``(value, width)`` of the character at ``buf[j]`` (UTF-8, ending before ``end``) as a decimal digit
    of :func:`unicode_digits`: value -1 for any other character, -2 when it is not ASCII and ``digits`` is
    empty (the caller must ask for the table)."""
    c = np.int64(buf[j])
    if c < 0x80:
        return (c - 48 if c >= 48 and c <= 57 else -1), 1
    if c < 0xE0:
        width, point = 2, c & 0x1F
    elif c < 0xF0:
        width, point = 3, c & 0x0F
    else:
        width, point = 4, c & 0x07
    if j + width > end:
        return -1, 1
    for k in range(1, width):
        point = (point << 6) | (np.int64(buf[j + k]) & 0x3F)
    if digits.size == 0:
        return -2, width
    k = np.searchsorted(digits, point)
    if k < digits.size and digits[k] == point:
        return k % 10, width
    return -1, width


class KeyTable(NamedTuple):
    """Ids for int64 keys (any but ``EMPTY_KEY``, the smallest) in order of first appearance, on the project's key table
    (:func:`hypertune.compiled.insert_key`): ``slot_keys``/``slot_ids`` are the slots (``EMPTY_KEY``
    free) and their ids, ``keys[k]`` is the key of id ``k``, ``used[0]`` ids so far (at most
    ``keys.size``), ``shift[0]`` the slot hash's shift. Full, :func:`key_id` answers -1, as :func:`intern`
    does."""

    slot_keys: np.ndarray
    slot_ids: np.ndarray
    keys: np.ndarray
    used: np.ndarray
    shift: np.ndarray


def new_key_table(capacity: int) -> KeyTable:
    bits = 4
    while (1 << bits) < 2 * capacity:
        bits += 1
    size = 1 << bits
    return KeyTable(
        np.full(size, EMPTY_KEY, np.int64),
        np.empty(size, np.int64),
        np.empty(capacity, np.int64),
        np.zeros(1, np.int64),
        np.full(1, 64 - bits, np.uint64),
    )


@_inline
def key_id(table: KeyTable, key: int) -> int:  # pragma: no cover - compiled
    """The id of ``key`` (a new id when it is new), or -1 when the table is full."""
    slot = insert_key(table.slot_keys, 0, table.slot_keys.size - 1, table.shift[0], key)
    if slot >= 0:
        return table.slot_ids[slot]
    slot = -slot - 2
    k = table.used[0]
    if k >= table.keys.size:
        table.slot_keys[slot] = EMPTY_KEY  # undo: the last key of its probe run, so nothing moves
        return -1
    table.slot_ids[slot] = k
    table.keys[k] = key
    table.used[0] = k + 1
    return k


@_inline
def find_id(table: KeyTable, key: int) -> int:  # pragma: no cover - compiled
    """The id of ``key``, or -1 when it has none (nothing is added)."""
    slot = find_key(table.slot_keys, 0, table.slot_keys.size - 1, table.shift[0], key)
    return table.slot_ids[slot] if slot >= 0 else -1


# ---------------------------------------------------------------------- the skeleton of a compiled reader

TABLE_FULL = -1  # the code of a scan that ran out of table room (not an error: it runs again)

Out = TypeVar("Out")


def run_scan(
    kernel: Callable[..., int],
    arrays: Callable[[Sequence[int]], Out],
    tables: Sequence[Callable[[int], Any]],
    capacities: Sequence[int],
) -> tuple[Out, tuple[Any, ...], int]:
    """``(out, tables, code)`` of ``kernel(out, *tables)`` on fresh tables made with the ``tables``
    constructors (:func:`new_string_table`, :func:`new_key_table`) at the first ``capacities`` and fresh
    ``arrays(rest)`` (the capacities after those, of arrays no upper bound sizes), run again with every
    capacity four times larger for as long as it answers :data:`TABLE_FULL` (a file with more distinct
    strings than expected). ``code`` is the kernel's: 0, or an error code of its :func:`fail`."""
    while True:
        made = tuple(new(capacity) for new, capacity in zip(tables, capacities[: len(tables)], strict=True))
        out = arrays(capacities[len(tables) :])
        code = int(kernel(out, *made))
        if code != TABLE_FULL:
            return out, made, code
        capacities = [4 * capacity for capacity in capacities]


ERROR_SIZE = 8  # an error record: code, start and end of the offending text, four numbers, the located byte


def new_error() -> np.ndarray:
    """An empty error record for :func:`fail` (code 0: no error)."""
    return np.zeros(ERROR_SIZE, np.int64)


@_inline
def fail(error, code, start, end, a=0, b=0, c=0, d=0, at=-1):  # pragma: no cover - compiled
    """Record an error in ``error`` (see :data:`ERROR_SIZE`) and return its code: the offending text
    ``start:end``, four numbers its message needs, and the byte whose line the error names (``at``,
    default ``start``)."""
    error[0], error[1], error[2], error[3], error[4], error[5], error[6], error[7] = (
        code, start, end, a, b, c, d, start if at < 0 else at)  # fmt: skip
    return code


class _Fields(dict[str, Any]):
    """The fields of a message, those given as functions computed when the message uses them."""

    def __init__(self, values: dict[str, Any], lazy: dict[str, Callable[[], Any]]) -> None:
        super().__init__(values)
        self.lazy = lazy

    def __missing__(self, key: str) -> Any:
        value = self[key] = self.lazy[key]()
        return value


def scan_error(
    data: bytes,
    error: np.ndarray,
    messages: dict[int, str],
    path: str,
    numbers: Sequence[str] = (),
    **fields: Any,
) -> InputError:
    """The :class:`InputError` of a failed scan's error record: ``messages[code]`` (a :meth:`str.format`
    template, the one place each message is written) filled with ``text`` (the offending text), ``token``
    (it stripped), the record's numbers under ``numbers`` (names in order) and ``fields`` (a callable
    field is called only when the message uses it), at the line of the record's located byte."""
    code, start, end, *rest = (int(x) for x in error)
    values = {"code": code, "start": start, "end": end} | dict(zip(numbers, rest[:4], strict=False))
    lazy: dict[str, Callable[[], Any]] = {
        "text": lambda: data[start:end].decode("utf-8"),
        "token": lambda: data[start:end].decode("utf-8").strip(),
    }
    for name, value in fields.items():
        if callable(value):
            lazy[name] = value
        else:
            values[name] = value
    return located(data, rest[4], messages[code].format_map(_Fields(values, lazy)), path)


class BadNumber(NamedTuple):
    """The first flagged text ``float()`` refuses (``refused``) or reads as infinite or NaN."""

    row: int
    text: str
    refused: bool


def flagged_floats(data: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, BadNumber | None]:
    """``float()`` of the texts ``data[start:end]`` the exact fast path left (a scan's flagged values), up to
    the first bad one: the values and that one (None: all are good)."""
    values = np.zeros(len(starts), np.float64)
    for row, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        text = data[start:end].decode("utf-8")
        try:
            value = float(text)
        except ValueError:
            return values, BadNumber(row, text, True)
        if not math.isfinite(value):
            return values, BadNumber(row, text, False)
        values[row] = value
    return values, None


def interned_columns(
    ids: np.ndarray, size: int, strings: Callable[[list[int]], list[str]], indices: Callable[[list[str]], Any]
) -> np.ndarray:
    """The column of every table id of ``ids`` (a scan's ids of a table of ``size`` strings) once the strings
    are added to a feature space or vocabulary (``indices``) in order of first occurrence in ``ids``, as a
    reader meeting them one by one adds them; ``strings(ks)`` gives the table's strings ``ks``."""
    size = max(size, 1)
    order = first_occurrences(ids, size)
    column = np.zeros(size, dtype=np.int64)
    if order.size:
        column[order] = indices(strings(order.tolist()))
    return column[ids]


class EdgeArrays(NamedTuple):
    """The edges of one or more graphs one after another (heads are nodes of their own graph), in the
    layout of :class:`Hypergraph`: tails and target tokens (a vocabulary id, or ``-k`` for the k-th tail) in
    rows of ``tail_offsets`` and ``target_offsets``, features (column, value) in rows of
    ``feature_offsets``."""

    head: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    target_offsets: np.ndarray
    target: np.ndarray
    feature_offsets: np.ndarray
    columns: np.ndarray
    values: np.ndarray


def edge_graph(
    edges: EdgeArrays,
    rows: tuple[int, int],
    num_nodes: int,
    width: int,
    spaces: tuple[FeatureSpace, Vocabulary],
    **annotations: Any,
) -> Hypergraph:
    """The graph of edges ``rows = (first, end)`` of ``edges`` with ``num_nodes`` nodes, its feature matrix
    ``width`` columns wide (the size of the feature space once the graph was read); ``annotations`` as
    :class:`Hypergraph` takes them. Raises :class:`GraphError` for a graph that breaks its rules."""
    e0, e1 = rows
    t0, t1 = int(edges.tail_offsets[e0]), int(edges.tail_offsets[e1])
    g0, g1 = int(edges.target_offsets[e0]), int(edges.target_offsets[e1])
    f0, f1 = int(edges.feature_offsets[e0]), int(edges.feature_offsets[e1])
    features = sp.csr_matrix(
        (edges.values[f0:f1], edges.columns[f0:f1], edges.feature_offsets[e0 : e1 + 1] - f0), shape=(e1 - e0, width)
    )
    return Hypergraph(
        num_nodes=num_nodes,
        head=edges.head[e0:e1].copy(),
        tail_offsets=edges.tail_offsets[e0 : e1 + 1] - t0,
        tails=edges.tails[t0:t1].copy(),
        features=features,
        target_offsets=edges.target_offsets[e0 : e1 + 1] - g0,
        target=edges.target[g0:g1].copy(),
        feature_space=spaces[0],
        vocabulary=spaces[1],
        **annotations,
    )
