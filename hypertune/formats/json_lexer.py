"""A compiled JSON lexer: kernels over the UTF-8 bytes of a whole file that check JSON values as Python's
:mod:`json` module reads them (RFC 8259 with json's ``NaN``, ``Infinity`` and ``-Infinity``), step over
values already checked, decode strings and classify and compare numbers. It knows no format's grammar (the
cdec JSON one is :mod:`hypertune.formats.json_cdec_grammar`).

A reader checks each value once with :func:`skip_value` (the only checking walk), then reads it with the
unchecked helpers (:func:`skip`, :func:`open_container`, :func:`after_item`, ...), which trust the syntax.
Positions are byte offsets; ``n`` is where the file's bytes end (a buffer may hold scratch space after them
for strings decoded from escapes, see :func:`string_text`).
"""

from __future__ import annotations

import numba
import numpy as np

from hypertune.compiled import helper_jit
from hypertune.formats._scan import parse_decimal, parse_integer

_jit = numba.njit(cache=True, nogil=True)
_inline = helper_jit  # not inline="always": see hypertune.compiled.helper_jit

NOT_JSON, HUGE_INTEGER = -1, -2  # what skip_value answers instead of an end
MAX_INT_DIGITS = 4300  # json's int() converts no more digits (Python's default limit, sys.get_int_max_str_digits)

# value kinds
OTHER, NONFINITE, INT, FLOAT = range(4)

_L_NULL = np.frombuffer(b"null", np.uint8).copy()
_L_TRUE = np.frombuffer(b"true", np.uint8).copy()
_L_FALSE = np.frombuffer(b"false", np.uint8).copy()
_L_NAN = np.frombuffer(b"NaN", np.uint8).copy()
_L_INFINITY = np.frombuffer(b"Infinity", np.uint8).copy()
_L_MINUS_INFINITY = np.frombuffer(b"-Infinity", np.uint8).copy()
_IN_STRING = np.zeros(256, np.uint8)  # the bytes a JSON string scan stops at: controls, '"' and '\\'
_IN_STRING[:32] = _IN_STRING[34] = _IN_STRING[92] = 1
_SKIP_CLASS = np.zeros(256, np.uint8)  # 1: '"', 2: '[' '{', 3: ']' '}', 4: ',' and JSON whitespace
_SKIP_CLASS[34], _SKIP_CLASS[[91, 123]], _SKIP_CLASS[[93, 125]], _SKIP_CLASS[[44, 32, 9, 10, 13]] = 1, 2, 3, 4
_UNESCAPED = np.zeros(256, np.uint8)  # the byte a one-letter escape stands for (0: not one)
for _letter, _byte in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t', strict=True):
    _UNESCAPED[_letter] = _byte


def literal(text: str) -> np.ndarray:
    """The UTF-8 bytes of ``text`` as an array for :func:`is_bytes` and :func:`key_is` (a key with its quotes)."""
    return np.frombuffer(text.encode(), np.uint8).copy()


@_inline
def ws(buf, i, n):  # pragma: no cover - compiled
    """The first byte at or after ``i`` that is not JSON whitespace (space, tab, line feed, return)."""
    while i < n:  # (a loop that returns compiles to faster code than one that breaks)
        c = buf[i]
        if not (c == 32 or c == 10 or c == 13 or c == 9):
            return i
        i += 1
    return i


@_inline
def is_bytes(buf, s, e, word):  # pragma: no cover - compiled
    """Whether ``buf[s:e]`` is ``word``."""
    if e - s != word.size:
        return False
    for k in range(word.size):
        if buf[s + k] != word[k]:
            return False
    return True


@_inline
def _starts(buf, i, n, word):  # pragma: no cover - compiled
    return i + word.size <= n and is_bytes(buf, i, i + word.size, word)


@_inline
def is_digit(c):  # pragma: no cover - compiled
    return c >= 48 and c <= 57


@_inline
def _hex(c):  # pragma: no cover - compiled
    """The value of a hex digit, -1 for any other byte."""
    if c >= 48 and c <= 57:
        return c - 48
    if c >= 65 and c <= 70:
        return c - 55
    if c >= 97 and c <= 102:
        return c - 87
    return -1


@_inline
def _hex4(buf, i):  # pragma: no cover - compiled
    return (_hex(buf[i]) << 12) | (_hex(buf[i + 1]) << 8) | (_hex(buf[i + 2]) << 4) | _hex(buf[i + 3])


# ---------------------------------------------------------------------- checking


@_inline
def string_end(buf, i, n):  # pragma: no cover - compiled
    """The end (after the closing quote) of the JSON string at ``buf[i] == '"'``, or -1 when json refuses
    it: unterminated, a control character, an unknown escape or a ``\\u`` without four hex digits."""
    j = i + 1
    while j < n:
        c = buf[j]
        if _IN_STRING[c] == 0:
            j += 1
        elif c == 34:
            return j + 1
        elif c != 92 or j + 1 >= n:
            return -1
        elif buf[j + 1] == 117:
            if j + 5 >= n or _hex(buf[j + 2]) < 0 or _hex(buf[j + 3]) < 0 or _hex(buf[j + 4]) < 0:
                return -1
            if _hex(buf[j + 5]) < 0:
                return -1
            j += 6
        elif _UNESCAPED[buf[j + 1]] != 0:
            j += 2
        else:
            return -1
    return -1


@_inline
def _number_end(buf, i, n):  # pragma: no cover - compiled
    """``(end, is_int)`` of the number json's scanner reads at ``buf[i]`` (``-?(0|[1-9]\\d*)(\\.\\d+)?
    ([eE][-+]?\\d+)?``, a fraction or exponent it cannot complete left out); end -1 when none starts."""
    j = i
    if j < n and buf[j] == 45:
        j += 1
    if j >= n:
        return -1, False
    c = buf[j]
    if c >= 49 and c <= 57:
        j += 1
        while j < n and is_digit(buf[j]):
            j += 1
    elif c == 48:
        j += 1
    else:
        return -1, False
    is_int = True
    if j + 1 < n and buf[j] == 46 and is_digit(buf[j + 1]):
        is_int = False
        j += 2
        while j < n and is_digit(buf[j]):
            j += 1
    if j + 1 < n and (buf[j] == 101 or buf[j] == 69):
        k = j + 1
        if buf[k] == 43 or buf[k] == 45:
            k += 1
        if k < n and is_digit(buf[k]):
            while k < n and is_digit(buf[k]):
                k += 1
            j = k
            is_int = False
    return j, is_int


@_inline
def _scalar_end(buf, i, n):  # pragma: no cover - compiled
    """``(end, kind)`` of the literal or number at ``buf[i]``; kind -1 when json reads no value there."""
    c = buf[i]
    if c == 110 and _starts(buf, i, n, _L_NULL):
        return i + 4, OTHER
    if c == 116 and _starts(buf, i, n, _L_TRUE):
        return i + 4, OTHER
    if c == 102 and _starts(buf, i, n, _L_FALSE):
        return i + 5, OTHER
    if c == 78 and _starts(buf, i, n, _L_NAN):
        return i + 3, NONFINITE
    if c == 73 and _starts(buf, i, n, _L_INFINITY):
        return i + 8, NONFINITE
    if c == 45 and _starts(buf, i, n, _L_MINUS_INFINITY):
        return i + 9, NONFINITE
    end, is_int = _number_end(buf, i, n)
    if end < 0:
        return end, -1
    return end, INT if is_int else FLOAT


@_inline
def _key_colon(buf, i, n):  # pragma: no cover - compiled
    """After the ``"key" :`` of an object member at ``buf[i]``, or -1."""
    if i >= n or buf[i] != 34:
        return -1
    i = string_end(buf, i, n)
    if i < 0:
        return -1
    i = ws(buf, i, n)
    if i >= n or buf[i] != 58:
        return -1
    return i + 1


@_jit
def skip_value(buf, i, n, stack):  # pragma: no cover - compiled
    """The end of the JSON value at or after ``i`` (whitespace first), checked as json checks it:
    :data:`NOT_JSON` where json refuses it, :data:`HUGE_INTEGER` at an integer of more than
    :data:`MAX_INT_DIGITS` digits (json's ``int()`` refuses it), whichever comes first. ``stack`` holds
    a byte per open array or object: as many as the file has ``[`` and ``{`` is always enough."""
    depth = 0
    while True:
        i = ws(buf, i, n)
        if i >= n:
            return NOT_JSON
        c = buf[i]
        if c == 123 or c == 91:
            j = ws(buf, i + 1, n)
            if j < n and buf[j] == (125 if c == 123 else 93):
                i = j + 1
            else:
                stack[depth] = c
                depth += 1
                if c == 123:
                    j = _key_colon(buf, j, n)
                    if j < 0:
                        return NOT_JSON
                i = j
                continue
        elif c == 34:
            i = string_end(buf, i, n)
            if i < 0:
                return NOT_JSON
        else:
            end, kind = _scalar_end(buf, i, n)
            if kind < 0:
                return NOT_JSON
            if kind == INT and end - i - (1 if buf[i] == 45 else 0) > MAX_INT_DIGITS:
                return HUGE_INTEGER
            i = end
        while True:  # a value ends at i: close what it ends
            if depth == 0:
                return i
            i = ws(buf, i, n)
            if i >= n:
                return NOT_JSON
            c = buf[i]
            top = stack[depth - 1]
            if c == 44:
                i += 1
                if top == 123:
                    i = _key_colon(buf, ws(buf, i, n), n)
                    if i < 0:
                        return NOT_JSON
                break
            if (top == 91 and c == 93) or (top == 123 and c == 125):
                i += 1
                depth -= 1
                continue
            return NOT_JSON


# ---------------------------------------------------------------------- walking checked values


@_inline
def skip_string(buf, i):  # pragma: no cover - compiled
    """The end of the (checked) JSON string at ``buf[i]``."""
    j = i + 1
    while True:
        c = buf[j]
        if c == 34:
            return j + 1
        j += 2 if c == 92 else 1


@_inline
def skip(buf, i):  # pragma: no cover - compiled
    """The end of the (checked) JSON value at ``buf[i]``."""
    depth = 0
    while True:
        kind = _SKIP_CLASS[buf[i]]
        if kind == 0:
            i += 1
        elif kind == 1:
            i = skip_string(buf, i)
            if depth == 0:
                return i
        elif kind == 2:
            depth += 1
            i += 1
        elif kind == 3:
            if depth == 0:
                return i
            depth -= 1
            i += 1
            if depth == 0:
                return i
        elif depth == 0:  # a separator or space ends a number or literal
            return i
        else:
            i += 1


@_inline
def open_container(buf, s, n):  # pragma: no cover - compiled
    """``(first item, -1)`` of the (checked) array or object at ``buf[s]`` (an object's item is a member,
    starting at its key), or ``(-1, its end)`` when it is empty."""
    i = ws(buf, s + 1, n)
    if buf[i] == 93 or buf[i] == 125:
        return -1, i + 1
    return i, -1


@_inline
def after_item(buf, e, n):  # pragma: no cover - compiled
    """``(next item, -1)`` after the (checked) item ending at ``e``, or ``(-1, end of the container)``."""
    i = ws(buf, e, n)
    if buf[i] == 93 or buf[i] == 125:
        return -1, i + 1
    return ws(buf, i + 1, n), -1


@_inline
def first_item(buf, s, n):  # pragma: no cover - compiled
    """The first item of the (checked) container at ``buf[s]``, -1 when it is empty."""
    return open_container(buf, s, n)[0]


@_inline
def next_item(buf, e, n):  # pragma: no cover - compiled
    """After the (checked) item ending at ``e``: the next item's start, or -1 at the container's end."""
    return after_item(buf, e, n)[0]


@_inline
def member_value(buf, key, n):  # pragma: no cover - compiled
    """``(end of the key, start of the value)`` of the (checked) object member whose key is at ``buf[key]``."""
    key_end = skip_string(buf, key)
    return key_end, ws(buf, ws(buf, key_end, n) + 1, n)


@_inline
def item_end(buf, i, n):  # pragma: no cover - compiled
    """The end of the (checked) array item or object member at ``buf[i]``."""
    if buf[i] == 34:
        e = skip_string(buf, i)
        j = ws(buf, e, n)
        if buf[j] == 58:  # a member: its value follows the key
            return skip(buf, ws(buf, j + 1, n))
        return e
    return skip(buf, i)


@_jit
def count_items(buf, s, n):  # pragma: no cover - compiled
    """``(count, start, end)``: the items of the (checked) array, or the members of the object, at ``buf[s]``
    and the extent of the first (``-1, -1`` when there is none)."""
    i = first_item(buf, s, n)
    if i < 0:
        return 0, -1, -1
    first_start, first_end = i, item_end(buf, i, n)
    count = 1
    i = next_item(buf, first_end, n)
    while i >= 0:
        count += 1
        i = next_item(buf, item_end(buf, i, n), n)
    return count, first_start, first_end


# ---------------------------------------------------------------------- strings


@_inline
def has_backslash(buf, s, e):  # pragma: no cover - compiled
    for k in range(s, e):
        if buf[k] == 92:
            return True
    return False


@_inline
def _escaped_code_point(buf, j, end):  # pragma: no cover - compiled
    """``(code point, next j)`` of the escape at ``buf[j] == '\\\\'`` of a (checked) string ending at ``end``
    (its closing quote): a surrogate pair of ``\\u`` escapes is one code point, a lone surrogate its own."""
    d = buf[j + 1]
    if d != 117:
        return np.int64(_UNESCAPED[d]), j + 2
    cp = np.int64(_hex4(buf, j + 2))
    j += 6
    if cp >= 0xD800 and cp <= 0xDBFF and j + 6 <= end and buf[j] == 92 and buf[j + 1] == 117:
        low = np.int64(_hex4(buf, j + 2))
        if low >= 0xDC00 and low <= 0xDFFF:
            return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00), j + 6
    return cp, j


@_inline
def _utf8(buf, w, cp):  # pragma: no cover - compiled
    """Write code point ``cp`` at ``buf[w]`` in UTF-8 (a lone surrogate as Python's ``surrogatepass``
    writes it); returns the end."""
    if cp < 0x80:
        buf[w] = cp
        return w + 1
    if cp < 0x800:
        buf[w], buf[w + 1] = 0xC0 | (cp >> 6), 0x80 | (cp & 63)
        return w + 2
    if cp < 0x10000:
        buf[w], buf[w + 1], buf[w + 2] = 0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)
        return w + 3
    buf[w], buf[w + 1] = 0xF0 | (cp >> 18), 0x80 | ((cp >> 12) & 63)
    buf[w + 2], buf[w + 3] = 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)
    return w + 4


@_inline
def string_text(buf, s, e, cursor):  # pragma: no cover - compiled
    """``(start, end)`` of the text of the (checked) JSON string ``buf[s:e]``: in place when it has no
    escape, else decoded as json decodes it into the buffer at ``cursor[0]`` (scratch space after the file's
    bytes, never more than the strings decoded), which moves on. The text is UTF-8, a lone surrogate from a
    ``\\u`` escape encoded as ``surrogatepass`` encodes it (decode the text with that error handler)."""
    end = e - 1
    j = s + 1
    while j < end and buf[j] != 92:
        j += 1
    if j == end:
        return s + 1, end
    return _decoded(buf, s, j, end, cursor)


@_jit
def _decoded(buf, s, j, end, cursor):  # pragma: no cover - compiled
    """:func:`string_text` of a string with a first escape at ``buf[j]``."""
    start = w = cursor[0]
    for k in range(s + 1, j):
        buf[w] = buf[k]
        w += 1
    while j < end:
        c = buf[j]
        if c != 92:
            buf[w] = c
            w += 1
            j += 1
        else:
            cp, j = _escaped_code_point(buf, j, end)
            w = _utf8(buf, w, cp)
    cursor[0] = w
    return start, w


@_inline
def key_is(buf, s, e, escaped, word):  # pragma: no cover - compiled
    """Whether the (checked) JSON string ``buf[s:e]`` decodes to the ASCII text of ``word`` (given with its
    quotes, as :func:`literal` makes it), escapes such as ``\\u0061`` included; ``escaped``: whether the
    string has a backslash (:func:`has_backslash`, asked once for the several words a key is compared with)."""
    return is_bytes(buf, s, e, word) or (escaped and _decodes_to(buf, s, e, word))


@_jit
def _decodes_to(buf, s, e, word):  # pragma: no cover - compiled
    """Whether the (checked) JSON string ``buf[s:e]`` with escapes decodes to ``word`` (see :func:`key_is`)."""
    end = e - 1
    j = s + 1
    k = 1
    while j < end:
        if k >= word.size - 1:
            return False
        if buf[j] == 92:
            cp, j = _escaped_code_point(buf, j, end)
        else:
            cp = np.int64(buf[j])
            j += 1
        if cp != word[k]:
            return False
        k += 1
    return k == word.size - 1


# ---------------------------------------------------------------------- numbers


@_inline
def int_token(buf, s, e):  # pragma: no cover - compiled
    """Whether the (checked) value ``buf[s:e]`` is an integer."""
    j = s + 1 if buf[s] == 45 else s
    if j == e:
        return False
    for k in range(j, e):
        if not is_digit(buf[k]):
            return False
    return True


@_inline
def value_kind(buf, s, e):  # pragma: no cover - compiled
    """:data:`INT`, :data:`FLOAT`, :data:`NONFINITE` or :data:`OTHER` (not a number) of the (checked) value
    ``buf[s:e]``."""
    c = buf[s]
    if c == 78 or c == 73 or (c == 45 and buf[s + 1] == 73):
        return NONFINITE
    if c == 45 or is_digit(c):
        return INT if int_token(buf, s, e) else FLOAT
    return OTHER


@_inline
def overflow_class(buf, s, e):  # pragma: no cover - compiled
    """How the (checked) number ``buf[s:e]`` fares in ``float()``: 0 below 1e308 in size (finite), 2 at
    1e309 or more (too large), 1 in between (:func:`python_float` tells)."""
    j = s + 1 if buf[s] == 45 else s
    magnitude = 0
    nonzero = False
    while j < e and is_digit(buf[j]):
        if nonzero:
            magnitude += 1
        elif buf[j] != 48:
            nonzero = True
        j += 1
    if j < e and buf[j] == 46:
        j += 1
        while j < e and is_digit(buf[j]):
            if not nonzero:
                magnitude -= 1
                nonzero = buf[j] != 48
            j += 1
    if not nonzero:
        return 0
    if j < e:  # the exponent
        j += 1
        sign = 1
        if buf[j] == 45 or buf[j] == 43:
            sign = -1 if buf[j] == 45 else 1
            j += 1
        while j < e and buf[j] == 48:
            j += 1
        if e - j > 6:
            return 2 if sign > 0 else 0
        written = 0
        while j < e:
            written = written * 10 + (buf[j] - 48)
            j += 1
        magnitude += sign * written
    return 0 if magnitude < 308 else 1 if magnitude == 308 else 2


@numba.njit(cache=True)
def python_float(buf, s, e, is_int):  # pragma: no cover - compiled, called for rare numbers only
    """``(finite, value)``: the number ``buf[s:e]`` as json's value converts with ``float()`` (an integer
    as ``float(int(text))``, which refuses what rounds past the largest double), computed by Python."""
    with numba.objmode(finite="boolean", value="float64"):
        text = bytes(buf[s:e]).decode("ascii")
        try:
            value = float(int(text)) if is_int else float(text)
        except OverflowError:
            value = float("inf")
        finite = abs(value) != float("inf")
    return finite, value


#: What :func:`number_value` says of a value besides its number: not a number, or not finite.
NOT_A_NUMBER, NOT_FINITE = 1, 2


@_inline
def number_value(buf, s, e):  # pragma: no cover - compiled
    """The JSON value ``buf[s:e]`` as a number, as json's value and ``float()`` make it: ``(problem, value,
    exact)``, problem :data:`NOT_A_NUMBER`, :data:`NOT_FINITE` or 0; an inexact value (``exact`` false) is left
    to ``float()``. The one reading of a JSON number the compiled readers share."""
    exact, x = parse_decimal(buf, s, e)
    if exact:  # a JSON number (a checked value parse_decimal reads is one)
        if x == 0.0 and int_token(buf, s, e):
            x = 0.0  # the integer -0 is 0
        return 0, x, True
    kind = value_kind(buf, s, e)
    if kind == OTHER:
        return NOT_A_NUMBER, 0.0, True
    if kind == NONFINITE:
        return NOT_FINITE, 0.0, True
    overflow = overflow_class(buf, s, e)
    if overflow == 2:
        return NOT_FINITE, 0.0, True
    if overflow == 1:  # from 1e308 up to 1e309: Python tells
        finite, x = python_float(buf, s, e, kind == INT)
        return (0 if finite else NOT_FINITE), x, True
    return 0, 0.0, False


@_inline
def equals_integer(buf, s, e, m):  # pragma: no cover - compiled
    """Whether the (checked) JSON value ``buf[s:e]`` equals the integer ``m`` as Python compares json's value
    with ``m``: an integer or a float by value (``1.0 == 1``), ``true`` and ``false`` as 1 and 0."""
    if int_token(buf, s, e) and e - s <= 18:
        return parse_integer(buf, s, e)[1] == m
    return _equals_integer(buf, s, e, m)


@_jit
def _equals_integer(buf, s, e, m):  # pragma: no cover - compiled
    """:func:`equals_integer` of any value but a short integer."""
    c = buf[s]
    if c == 116:
        return m == 1
    if c == 102:
        return m == 0
    kind = value_kind(buf, s, e)
    if kind == INT:
        ok, value = parse_integer(buf, s, e)
        return ok and value == m
    if kind == FLOAT:
        exact, x = parse_decimal(buf, s, e)
        if not exact:
            x = python_float(buf, s, e, False)[1]
        return x == m
    return False
