"""cdec's JSON hypergraph format (cdec until 2014), read and written.

One JSON object per graph whose keys **repeat**: ``"rules"`` (a flat list ``[id, "[X] ||| src ||| tgt
||| feats", ...]``), optional ``"features"`` (feature names; an integer in an edge's ``feats`` indexes
it), then for every node in topological order an ``"edges": [...]`` entry followed by a ``"node": {...}``
entry. Edge items: ``{"tail": [node ids], "feats": [fid_or_name, value, ...], "rule": id or inline rule
string}``; node items ``{"in_edges": [global edge ids], "cat": "X"}``. Edges are numbered globally in
order of appearance; the last node is the goal; ``[k]`` or ``[X,k]`` in a rule's target side is the
edge's k-th tail. The key/value pairs are read in order (a plain ``dict`` would keep only the last).

Edge features come from ``feats`` (the feature string of a rule is not an edge feature, as in cdec).
A node without in-edges (cdec's lattice start node) gets an empty axiom edge of weight one, the value
cdec gives such nodes; ``metadata["axioms_added"]`` counts them, and they shift later edge ids by one.
Node ``cat`` labels become node labels. Several objects may follow each other in one file (a corpus).

Reading is one compiled pass over the file's bytes (:mod:`hypertune.formats._scan`) that checks the JSON
syntax as Python's :mod:`json` module does and fills the graph's arrays: strings with escapes (``\\/``,
``\\uXXXX`` and surrogate pairs, ...) are decoded in the pass, numbers are converted exactly (the few
that the exact fast path leaves are converted with ``float()``), and a bad graph stops the pass with an
error code turned into an :class:`InputError` naming the file, the graph and the line where its object
starts. The wording of a JSON syntax error is the :mod:`json` module's own: the pass finds that the
object is not valid JSON and the decoder is asked for its message and line. Nothing is added to the
feature space or the vocabulary from a file that fails.

Valid JSON that the pass does not handle takes the Python reader :func:`read_text` (the :mod:`json`
module and the graph built in Python), which gives the same graphs and errors, only slower. These are:

- an object key written with a ``\\`` escape;
- an object where cdec writes a list (``"rules"``, ``"features"``, ``"edges"``, ``"tail"``, ``"feats"``:
  json's ordered pairs pass for a list there), or ``in_edges`` that is not a list of integers;
- ``"rules"`` or ``"features"`` after the first ``"edges"`` or ``"node"`` of an object;
- an edge or node object that names ``tail``, ``feats``, ``rule``, ``in_edges`` or ``cat`` twice;
- an integer of more than 18 digits where its value counts (a rule id, tail, feature id, in-edge, a
  ``[k]`` variable), or of more than 4000 digits anywhere; an integer feature value of 1e308 or more, or
  a decimal one from 1e308 up to 1e309 (it may or may not overflow);
- a ``[k]`` variable whose number has non-ASCII characters (perhaps Unicode digits);
- a ``\\uXXXX`` escape that leaves a lone surrogate in a string the graph uses;
- arrays and objects nested more than 200 deep.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numba
import numpy as np
import scipy.sparse as sp

from hypertune.errors import GraphError, InputError
from hypertune.formats._common import ArrayBuilder, build_located, check_word, format_number
from hypertune.formats._scan import (
    MAX_DIGITS,
    TABLE_FULL,
    StringTable,
    find_id,
    first_occurrences,
    intern,
    key_id,
    located,
    new_key_table,
    new_string_table,
    parse_decimal,
    parse_integer,
    read_bytes,
    scan_with_tables,
    space_width,
    uncounted_jit,
)
from hypertune.formats.io import write_atomically
from hypertune.formats.registry import GraphFormat, register
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

_TARGET_VARIABLE = re.compile(r"^\[(?:[^\],\s]+,)?(\d+)\]$")
_NONTERMINAL = re.compile(r"^\[[^\]\s]+\]$")

_jit = numba.njit(cache=True, nogil=True)
_inline = numba.njit(cache=True, nogil=True, inline="always")


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    return parse(read_bytes(path, "cdec JSON file"), path, feature_space, vocabulary)


# ---------------------------------------------------------------------- the compiled scan


class _Scanned(NamedTuple):
    """What one compiled pass over a file fills (sized by the caller from upper bounds).

    Per edge (the graphs' edges one after another, axiom edges included): its head (a node of its own
    graph), arity, target length and feature count. Tails, target tokens (a word id of the ``words``
    table, or ``-k`` for the k-th tail) and features (a ``names`` id and a value) follow each other in
    edge order. ``flagged`` lists the values the exact fast path left to ``float()``: (feature index,
    start, end). Per node: its ``cat`` (a ``labels`` id, -1 for none). Per graph: nodes and edges so far
    (ends), axioms added, the byte where its object starts. ``feature_list`` holds the names of the
    current object's ``"features"``; ``rule_starts``, ``rule_ends`` and ``rule_graphs`` give, per rule id
    (a ``rule_ids`` key), the tokens of its target in ``rule_tokens`` (a variable ``[k]`` as ``-(k + 1)``)
    and the graph whose ``"rules"`` gave it. ``sizes``: see the ``_EDGES .. _START`` indices. ``error``
    and ``deferred`` (an edge's error, raised when its node comes): code, object start, start and end of
    the offending value, node, edge number and two numbers the message needs. ``stack``: scratch.
    """

    head: np.ndarray
    arity: np.ndarray
    target_lengths: np.ndarray
    feature_counts: np.ndarray
    tails: np.ndarray
    target: np.ndarray
    names: np.ndarray
    values: np.ndarray
    flagged: np.ndarray
    labels: np.ndarray
    graphs: np.ndarray
    feature_list: np.ndarray
    rule_starts: np.ndarray
    rule_ends: np.ndarray
    rule_graphs: np.ndarray
    rule_tokens: np.ndarray
    sizes: np.ndarray
    error: np.ndarray
    deferred: np.ndarray
    stack: np.ndarray


# indices of ``sizes``: edges, tails, target tokens, features, flagged values, nodes, graphs, rule tokens
# so far; where decoded strings go next; then the current object's state: its "features" count (-1: none),
# cdec edge number, edges listed for the next node, node, axioms added, start byte
(_EDGES, _TAILS, _TARGET, _FEATURES, _FLAGGED, _NODES, _GRAPHS, _RULE_TOKENS, _SCRATCH, _NAMES, _NEXT_EDGE,
 _PENDING, _NODE, _AXIOMS, _START) = range(15)  # fmt: skip

# error codes of the scan
(_SYNTAX, _FALLBACK, _TOP, _NO_GRAPH, _RULES_SHAPE, _RULES_ITEM, _RULE_STRING, _FEATURES_SHAPE, _EDGES_TYPE,
 _TWO_EDGES, _NODE_TYPE, _IN_EDGES, _EDGES_AFTER, _NO_NODES, _EDGE_NOT_OBJECT, _TAIL_TYPE, _TAIL_ID, _FEATS_SHAPE,
 _FID_RANGE, _FID_TYPE, _VALUE_TYPE, _VALUE_INF, _UNKNOWN_RULE, _RULE_FORMAT, _TARGET_TAIL) = range(1, 26)  # fmt: skip

_MAX_DEPTH = 200  # arrays and objects nested deeper take the Python reader (json would recurse)
_MAX_INT_TEXT = 4000  # longer integers take the Python reader (int() refuses more than 4300 digits)
_NOT_JSON, _TOO_DEEP = -1, -2  # what _skip_value answers instead of an end

# value kinds
_OTHER, _NONFINITE, _INT, _FLOAT = range(4)


def _word(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), np.uint8).copy()


_K_RULES, _K_FEATURES, _K_EDGES, _K_NODE = _word('"rules"'), _word('"features"'), _word('"edges"'), _word('"node"')
_K_TAIL, _K_FEATS, _K_RULE = _word('"tail"'), _word('"feats"'), _word('"rule"')
_K_IN_EDGES, _K_CAT = _word('"in_edges"'), _word('"cat"')
_L_NULL, _L_TRUE, _L_FALSE = _word("null"), _word("true"), _word("false")
_L_NAN, _L_INFINITY, _L_MINUS_INFINITY = _word("NaN"), _word("Infinity"), _word("-Infinity")
_IN_STRING = np.zeros(256, np.uint8)  # the bytes a JSON string scan stops at: controls, '"' and '\\'
_IN_STRING[:32] = _IN_STRING[34] = _IN_STRING[92] = 1
_SKIP_CLASS = np.zeros(256, np.uint8)  # 1: '"', 2: '[' '{', 3: ']' '}', 4: ',' and JSON whitespace
_SKIP_CLASS[34], _SKIP_CLASS[[91, 123]], _SKIP_CLASS[[93, 125]], _SKIP_CLASS[[44, 32, 9, 10, 13]] = 1, 2, 3, 4
_UNESCAPED = np.zeros(256, np.uint8)  # the byte a one-letter escape stands for (0: not one)
for _letter, _byte in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t', strict=True):
    _UNESCAPED[_letter] = _byte


@_inline
def _fail(error, code, start, token_start, token_end, node, edge, a, b):  # pragma: no cover - compiled
    error[0], error[1], error[2], error[3], error[4], error[5], error[6], error[7] = (
        code, start, token_start, token_end, node, edge, a, b)  # fmt: skip
    return code


@_inline
def _ws(buf, i, n):  # pragma: no cover - compiled
    """The first byte at or after ``i`` that is not JSON whitespace (space, tab, line feed, return)."""
    while i < n:  # (a loop that returns compiles to faster code than one that breaks)
        c = buf[i]
        if not (c == 32 or c == 10 or c == 13 or c == 9):
            return i
        i += 1
    return i


@_inline
def _is(buf, s, e, word):  # pragma: no cover - compiled
    """Whether ``buf[s:e]`` is ``word``."""
    if e - s != word.size:
        return False
    for k in range(word.size):
        if buf[s + k] != word[k]:
            return False
    return True


@_inline
def _starts(buf, i, n, word):  # pragma: no cover - compiled
    """Whether ``word`` is at ``buf[i]`` (and ends before ``n``)."""
    return i + word.size <= n and _is(buf, i, i + word.size, word)


@_inline
def _has_backslash(buf, s, e):  # pragma: no cover - compiled
    for k in range(s, e):
        if buf[k] == 92:
            return True
    return False


@_inline
def _is_digit(c):  # pragma: no cover - compiled
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


@_inline
def _string_end(buf, i, n):  # pragma: no cover - compiled
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
        while j < n and _is_digit(buf[j]):
            j += 1
    elif c == 48:
        j += 1
    else:
        return -1, False
    is_int = True
    if j + 1 < n and buf[j] == 46 and _is_digit(buf[j + 1]):
        is_int = False
        j += 2
        while j < n and _is_digit(buf[j]):
            j += 1
    if j + 1 < n and (buf[j] == 101 or buf[j] == 69):
        k = j + 1
        if buf[k] == 43 or buf[k] == 45:
            k += 1
        if k < n and _is_digit(buf[k]):
            while k < n and _is_digit(buf[k]):
                k += 1
            j = k
            is_int = False
    return j, is_int


@_inline
def _scalar_end(buf, i, n):  # pragma: no cover - compiled
    """``(end, kind)`` of the literal or number at ``buf[i]``; kind -1 when json reads no value there."""
    c = buf[i]
    if c == 110 and _starts(buf, i, n, _L_NULL):
        return i + 4, _OTHER
    if c == 116 and _starts(buf, i, n, _L_TRUE):
        return i + 4, _OTHER
    if c == 102 and _starts(buf, i, n, _L_FALSE):
        return i + 5, _OTHER
    if c == 78 and _starts(buf, i, n, _L_NAN):
        return i + 3, _NONFINITE
    if c == 73 and _starts(buf, i, n, _L_INFINITY):
        return i + 8, _NONFINITE
    if c == 45 and _starts(buf, i, n, _L_MINUS_INFINITY):
        return i + 9, _NONFINITE
    end, is_int = _number_end(buf, i, n)
    if end < 0:
        return end, -1
    return end, _INT if is_int else _FLOAT


@_inline
def _key_colon(buf, i, n):  # pragma: no cover - compiled
    """After the ``"key" :`` of an object member at ``buf[i]``, or -1."""
    if i >= n or buf[i] != 34:
        return -1
    i = _string_end(buf, i, n)
    if i < 0:
        return -1
    i = _ws(buf, i, n)
    if i >= n or buf[i] != 58:
        return -1
    return i + 1


@_jit
def _skip_value(buf, i, n, stack):  # pragma: no cover - compiled
    """The end of the JSON value at or after ``i`` (whitespace first), checked as json checks it:
    :data:`_NOT_JSON` when json refuses it, :data:`_TOO_DEEP` when it nests deeper than ``stack`` or has
    an integer json's ``int()`` may refuse."""
    depth = 0
    while True:
        i = _ws(buf, i, n)
        if i >= n:
            return _NOT_JSON
        c = buf[i]
        if c == 123 or c == 91:
            j = _ws(buf, i + 1, n)
            if j < n and buf[j] == (125 if c == 123 else 93):
                i = j + 1
            else:
                if depth >= stack.size:
                    return _TOO_DEEP
                stack[depth] = c
                depth += 1
                if c == 123:
                    j = _key_colon(buf, j, n)
                    if j < 0:
                        return _NOT_JSON
                i = j
                continue
        elif c == 34:
            i = _string_end(buf, i, n)
            if i < 0:
                return _NOT_JSON
        else:
            end, kind = _scalar_end(buf, i, n)
            if kind < 0:
                return _NOT_JSON
            if kind == _INT and end - i > _MAX_INT_TEXT:
                return _TOO_DEEP
            i = end
        while True:  # a value ends at i: close what it ends
            if depth == 0:
                return i
            i = _ws(buf, i, n)
            if i >= n:
                return _NOT_JSON
            c = buf[i]
            top = stack[depth - 1]
            if c == 44:
                i += 1
                if top == 123:
                    i = _key_colon(buf, _ws(buf, i, n), n)
                    if i < 0:
                        return _NOT_JSON
                break
            if (top == 91 and c == 93) or (top == 123 and c == 125):
                i += 1
                depth -= 1
                continue
            return _NOT_JSON


@_inline
def _string_fast(buf, i):  # pragma: no cover - compiled
    """The end of the (checked) JSON string at ``buf[i]``."""
    j = i + 1
    while True:
        c = buf[j]
        if c == 34:
            return j + 1
        j += 2 if c == 92 else 1


@_inline
def _skip(buf, i):  # pragma: no cover - compiled
    """The end of the (checked) JSON value at ``buf[i]``."""
    depth = 0
    while True:
        kind = _SKIP_CLASS[buf[i]]
        if kind == 0:
            i += 1
        elif kind == 1:
            i = _string_fast(buf, i)
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
def _next_item(buf, e, n):  # pragma: no cover - compiled
    """After the (checked) array item ending at ``e``: the next item's start, or -1 at the closing ``]``."""
    i = _ws(buf, e, n)
    if buf[i] == 93:
        return -1
    return _ws(buf, i + 1, n)


@_inline
def _open(buf, s, n):  # pragma: no cover - compiled
    """``(first item, -1)`` of the (checked) array at ``buf[s]``, or ``(-1, its end)`` when it is empty."""
    i = _ws(buf, s + 1, n)
    if buf[i] == 93:
        return -1, i + 1
    return i, -1


@_inline
def _after(buf, e, n):  # pragma: no cover - compiled
    """``(next item, -1)`` after the (checked) array item ending at ``e``, or ``(-1, end of the array)``."""
    i = _ws(buf, e, n)
    if buf[i] == 93:
        return -1, i + 1
    return _ws(buf, i + 1, n), -1


@_inline
def _first_item(buf, s, n):  # pragma: no cover - compiled
    """The first item of the (checked) array at ``buf[s]``, -1 when it is empty."""
    i = _ws(buf, s + 1, n)
    return -1 if buf[i] == 93 else i


@_inline
def _int_token(buf, s, e):  # pragma: no cover - compiled
    """Whether the (checked) value ``buf[s:e]`` is an integer."""
    j = s + 1 if buf[s] == 45 else s
    if j == e:
        return False
    for k in range(j, e):
        if not _is_digit(buf[k]):
            return False
    return True


@_inline
def _value_kind(buf, s, e):  # pragma: no cover - compiled
    c = buf[s]
    if c == 78 or c == 73 or (c == 45 and buf[s + 1] == 73):
        return _NONFINITE
    if c == 45 or _is_digit(c):
        return _INT if _int_token(buf, s, e) else _FLOAT
    return _OTHER


@_inline
def _overflow(buf, s, e):  # pragma: no cover - compiled
    """How the (checked) number ``buf[s:e]`` fares in ``float()``: 0 below 1e308 in size (finite), 2 at
    1e309 or more (inf), 1 in between (Python must tell)."""
    j = s + 1 if buf[s] == 45 else s
    magnitude = 0
    nonzero = False
    while j < e and _is_digit(buf[j]):
        if nonzero:
            magnitude += 1
        elif buf[j] != 48:
            nonzero = True
        j += 1
    if j < e and buf[j] == 46:
        j += 1
        while j < e and _is_digit(buf[j]):
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


@_inline
def _utf8(buf, w, cp):  # pragma: no cover - compiled
    """Write code point ``cp`` at ``buf[w]`` in UTF-8; returns the end."""
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
def _text(buf, s, e, out):  # pragma: no cover - compiled
    """``(start, end)`` of the text of the (checked) JSON string ``buf[s:e]``: in place when it has no
    escape, else decoded as json decodes it into the scratch space after the file's bytes; ``(-1, -1)``
    when it decodes to a lone surrogate (which has no UTF-8)."""
    end = e - 1
    j = s + 1
    while j < end and buf[j] != 92:
        j += 1
    if j == end:
        return s + 1, end
    start = w = out.sizes[_SCRATCH]
    for k in range(s + 1, j):
        buf[w] = buf[k]
        w += 1
    while j < end:
        c = buf[j]
        if c != 92:
            buf[w] = c
            w += 1
            j += 1
            continue
        d = buf[j + 1]
        if d != 117:
            buf[w] = _UNESCAPED[d]
            w += 1
            j += 2
            continue
        cp = _hex4(buf, j + 2)
        j += 6
        if cp >= 0xD800 and cp <= 0xDBFF and j + 6 <= end and buf[j] == 92 and buf[j + 1] == 117:
            low = _hex4(buf, j + 2)
            if low >= 0xDC00 and low <= 0xDFFF:
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                j += 6
        if cp >= 0xD800 and cp <= 0xDFFF:
            return -1, -1
        w = _utf8(buf, w, cp)
    out.sizes[_SCRATCH] = w
    return start, w


@_inline
def _variable(buf, a, b):  # pragma: no cover - compiled
    """``k`` when the target word ``buf[a:b]`` is a variable ``[k]`` or ``[X,k]`` (the reference's
    ``_TARGET_VARIABLE``), -1 for a word, -2 when only Python can tell (non-ASCII where the number goes,
    which may be a Unicode digit, or more than 18 digits)."""
    if b - a < 3 or buf[a] != 91 or buf[b - 1] != 93:
        return -1
    d = a + 1
    for j in range(a + 1, b - 1):
        if buf[j] == 44:
            if j == a + 1:
                return -1
            for q in range(a + 1, j):
                if buf[q] == 93:
                    return -1
            d = j + 1
            break
    if d == b - 1:
        return -1
    ascii_only = True
    for j in range(d, b - 1):
        c = buf[j]
        if c >= 128:
            ascii_only = False
        elif not _is_digit(c):
            return -1
    if not ascii_only or b - 1 - d > MAX_DIGITS:
        return -2
    return parse_integer(buf, d, b - 1)[1]


@_inline
def _word_start(buf, j, end):  # pragma: no cover - compiled
    while j < end:
        width = space_width(buf, j)
        if width == 0:
            return j
        j += width
    return end


@_inline
def _word_end(buf, j, end):  # pragma: no cover - compiled
    while j < end:
        if space_width(buf, j) > 0:
            return j
        j += 1
    return end


@_inline
def _next_word(buf, j, end):  # pragma: no cover - compiled
    """The next word of ``buf[j:end]`` as ``str.split()`` splits (a rule's text may hold a line feed, which
    ``_scan.next_token``, made for text already split into lines, does not end a token at)."""
    start = _word_start(buf, j, end)
    return start, _word_end(buf, start, end)


@uncounted_jit
def _target(buf, s, e, words, dest, pos):  # pragma: no cover - compiled
    """The target side of the rule text ``buf[s:e]`` (its third ``|||`` field) as tokens written to
    ``dest[pos:]``: word ids, and ``-(k + 1)`` for a variable ``[k]``. Returns their count, or -1 when the
    rule has fewer than three fields, -2 for the Python reader, ``TABLE_FULL``-like -3 when out of room."""
    separators = 0
    first = -1
    last = e
    j = s
    while j < e:
        if buf[j] == 124 and j + 2 < e and buf[j + 1] == 124 and buf[j + 2] == 124:
            separators += 1
            if separators == 2:
                first = j + 3
            elif separators == 3:
                last = j
                break
            j += 3
        else:
            j += 1
    if separators < 2:
        return -1
    count = 0
    j = first
    while True:
        a, b = _next_word(buf, j, last)
        if a == last:
            break
        j = b
        k = _variable(buf, a, b)
        if k == -2:
            return -2
        if pos + count >= dest.size:
            return -3
        if k >= 0:
            dest[pos + count] = -(k + 1)
        else:
            word = intern(words, buf, a, b)
            if word < 0:
                return -3
            dest[pos + count] = word
        count += 1
    return count


@uncounted_jit
def _rules(buf, vs, n, out, words, rule_ids):  # pragma: no cover - compiled
    """A ``"rules"`` value: ``[id, rule, ...]``, each rule's target tokenized once."""
    sizes = out.sizes
    start = sizes[_START]
    if buf[vs] != 91:  # (an object would be a list of pairs to the reference)
        return _FALLBACK if buf[vs] == 123 else _fail(out.error, _RULES_SHAPE, start, vs, vs, 0, 0, 0, 0)
    count = 0
    code = a = token_start = token_end = rid_start = rid_end = 0
    i = _first_item(buf, vs, n)
    while i >= 0:
        e = _skip(buf, i)
        if count % 2 == 0:
            rid_start, rid_end = i, e
        elif code == 0:
            if buf[i] != 34 or not _int_token(buf, rid_start, rid_end):
                code, a = _RULES_ITEM, count // 2
            else:
                ok, rid = parse_integer(buf, rid_start, rid_end)
                s2, e2 = _text(buf, i, e, out)
                if not ok or s2 < 0:
                    return _FALLBACK
                first = sizes[_RULE_TOKENS]
                got = _target(buf, s2, e2, words, out.rule_tokens, first)
                if got == -2:
                    return _FALLBACK
                if got == -3:
                    return TABLE_FULL
                if got == -1:
                    code, a, token_start, token_end = _RULE_STRING, rid, i, e
                else:
                    k = key_id(rule_ids, rid)
                    if k < 0:
                        return TABLE_FULL
                    out.rule_starts[k], out.rule_ends[k], out.rule_graphs[k] = first, first + got, sizes[_GRAPHS]
                    sizes[_RULE_TOKENS] += got
        count += 1
        i = _next_item(buf, e, n)
    if count % 2:
        return _fail(out.error, _RULES_SHAPE, start, vs, vs, 0, 0, 0, 0)
    if code:
        return _fail(out.error, code, start, token_start, token_end, 0, 0, a, 0)
    return 0


@uncounted_jit
def _features(buf, vs, n, out, names):  # pragma: no cover - compiled
    """A ``"features"`` value: the names an integer in ``feats`` indexes."""
    sizes = out.sizes
    if buf[vs] != 91:
        return _FALLBACK if buf[vs] == 123 else _fail(out.error, _FEATURES_SHAPE, sizes[_START], vs, vs, 0, 0, 0, 0)
    count = 0
    i = _first_item(buf, vs, n)
    while i >= 0:
        if buf[i] != 34:
            return _fail(out.error, _FEATURES_SHAPE, sizes[_START], i, i, 0, 0, 0, 0)
        e = _string_fast(buf, i)
        s2, e2 = _text(buf, i, e, out)
        if s2 < 0:
            return _FALLBACK
        k = intern(names, buf, s2, e2)
        if k < 0:
            return TABLE_FULL
        out.feature_list[count] = k
        count += 1
        i = _next_item(buf, e, n)
    sizes[_NAMES] = count
    return 0


@_inline
def _tail_list(buf, vs, n, head, tails, t0):  # pragma: no cover - compiled
    """The ``"tail"`` value at ``buf[vs]`` (not an object) of an edge of node ``head``, its ids written to
    ``tails[t0:]``. Returns ``(problem, bad tail, arity, end)``: problem ``_TAIL_TYPE`` (not a list of
    integers; it wins), ``_TAIL_ID`` (an id outside ``0 .. head-1``, the first such the bad tail),
    ``_FALLBACK`` or 0; the end is -1 when the value is not a list."""
    if buf[vs] != 91:
        return _TAIL_TYPE, 0, 0, -1
    problem = bad = arity = 0
    j, ve = _open(buf, vs, n)
    while j >= 0:
        te = _skip(buf, j)
        if problem == _TAIL_TYPE:
            pass
        elif not _int_token(buf, j, te):
            problem = _TAIL_TYPE
        else:
            ok, t = parse_integer(buf, j, te)
            if not ok:
                return _FALLBACK, 0, 0, -1
            if (t < 0 or t >= head) and problem == 0:
                problem, bad = _TAIL_ID, t
            tails[t0 + arity] = t
            arity += 1
        j, ve = _after(buf, te, n)
    return problem, bad, arity, ve


@_inline
def _feature_index(buf, j, fe, known):  # pragma: no cover - compiled
    """The ``feats`` item ``buf[j:fe]`` that is not a string, as an index into the ``known`` names of
    ``"features"`` (-1 when none came): ``(problem, index, a, b)``, problem ``_FID_TYPE`` (not an
    integer), ``_FID_RANGE`` (``a, b``: the index and the count of names), ``_FALLBACK`` or 0."""
    if not _int_token(buf, j, fe):
        return _FID_TYPE, 0, 0, 0
    ok, fid = parse_integer(buf, j, fe)
    if not ok:
        return _FALLBACK, 0, 0, 0
    known = max(known, 0)
    if fid < 0 or fid >= known:
        return _FID_RANGE, 0, fid, known
    return 0, fid, 0, 0


@uncounted_jit
def _feature_name(buf, j, fe, out, names):  # pragma: no cover - compiled
    """The id of the feature named by the string ``buf[j:fe]`` of a ``feats`` list (rare: cdec writes an
    index into ``"features"``): ``(code, id)``, code ``_FALLBACK``, ``TABLE_FULL`` or 0."""
    a, b = _text(buf, j, fe, out)
    if a < 0:
        return _FALLBACK, 0
    name = intern(names, buf, a, b)
    if name < 0:
        return TABLE_FULL, 0
    return 0, name


@_inline
def _feature_value(buf, j, fe):  # pragma: no cover - compiled
    """The feature value ``buf[j:fe]``: ``(problem, value, exact)``, problem ``_VALUE_TYPE`` (not a
    number), ``_VALUE_INF`` (not finite), ``_FALLBACK`` (1e308 and up, or an integer json's float(int)
    refuses) or 0; an inexact value is left to ``float()``."""
    kind = _value_kind(buf, j, fe)
    if kind == _OTHER:
        return _VALUE_TYPE, 0.0, True
    if kind == _NONFINITE:
        return _VALUE_INF, 0.0, True
    exact, x = parse_decimal(buf, j, fe)
    overflow = 0 if exact else _overflow(buf, j, fe)
    if overflow == 2 and kind == _FLOAT:
        return _VALUE_INF, 0.0, True
    if overflow > 0:
        return _FALLBACK, 0.0, True
    if exact and kind == _INT and x == 0.0:
        x = 0.0  # the integer -0 is 0
    return 0, x, exact


@_inline
def _copy_target(tokens, a, b, target, g0, arity):  # pragma: no cover - compiled
    """A rule's target tokens ``tokens[a:b]`` written to ``target[g0:]``, each variable ``[k]`` (``-(k + 1)``)
    as the edge's ``-k``. Returns ``(code, length, k)``: code ``TABLE_FULL``, ``_TARGET_TAIL`` (``[k]`` is
    not a tail of the edge's ``arity``) or 0."""
    if g0 + b - a > target.size:
        return TABLE_FULL, 0, 0
    for q in range(a, b):
        t = tokens[q]
        if t < 0:
            k = -t - 1
            if k < 1 or k > arity:
                return _TARGET_TAIL, 0, k
            t = -k
        target[g0 + q - a] = t
    return 0, b - a, 0


@uncounted_jit
def _written_rule(buf, rule_s, rule_e, arity, out, words):  # pragma: no cover - compiled
    """The target of the rule string ``buf[rule_s:rule_e]`` of an edge (rare: cdec writes a rule id)
    written after the target tokens so far. Returns ``(code, length, k)``: code ``_FALLBACK``,
    ``TABLE_FULL``, ``_RULE_FORMAT``, ``_TARGET_TAIL`` (``[k]`` is not one of the ``arity`` tails) or 0."""
    g0 = out.sizes[_TARGET]
    a, b = _text(buf, rule_s, rule_e, out)
    if a < 0:
        return _FALLBACK, 0, 0
    length = _target(buf, a, b, words, out.target, g0)
    if length < 0:
        return (_RULE_FORMAT if length == -1 else _FALLBACK if length == -2 else TABLE_FULL), 0, 0
    return _copy_target(out.target, g0, g0 + length, out.target, g0, arity)


@_inline
def _feat_list(buf, vs, n, out, names):  # pragma: no cover - compiled
    """The ``"feats"`` value at ``buf[vs]`` (not an object): its (name, value) pairs written after the
    features so far, up to the first bad pair (values ``float()`` must convert go to ``out.flagged``).
    Returns ``(problem, start, end, a, b, count, end of the value or -1)``: problem ``_FALLBACK``,
    ``TABLE_FULL``, ``_FEATS_SHAPE`` (not a list of pairs; it wins), the first bad pair's code with its
    item's ``start, end`` and the message's numbers ``a, b``, or 0."""
    sizes = out.sizes
    f0 = sizes[_FEATURES]
    count = items = name = 0
    pair = pair_start = pair_end = pair_a = pair_b = 0
    j = ve = -1
    if buf[vs] == 91:
        j, ve = _open(buf, vs, n)
    while j >= 0:
        fe = _skip(buf, j)
        code = a = b = 0
        if pair != 0:
            pass
        elif items % 2 == 0 and buf[j] == 34:  # a name
            code, name = _feature_name(buf, j, fe, out, names)
        elif items % 2 == 0:  # an index into "features"
            code, k, a, b = _feature_index(buf, j, fe, sizes[_NAMES])
            name = out.feature_list[k] if code == 0 else name
        else:  # its value
            code, x, exact = _feature_value(buf, j, fe)
            if code == 0 and not exact:
                k = sizes[_FLAGGED]
                out.flagged[k, 0], out.flagged[k, 1], out.flagged[k, 2] = f0 + count, j, fe
                sizes[_FLAGGED] += 1
            if code == 0:
                out.names[f0 + count], out.values[f0 + count] = name, x
                count += 1
            a = name
        if code == _FALLBACK or code == TABLE_FULL:
            return code, 0, 0, 0, 0, 0, -1
        if code != 0:
            pair, pair_start, pair_end, pair_a, pair_b = code, j, fe, a, b
        items += 1
        j, ve = _after(buf, fe, n)
    if buf[vs] != 91 or items % 2 == 1:
        return _FEATS_SHAPE, 0, 0, 0, 0, 0, ve
    return pair, pair_start, pair_end, pair_a, pair_b, count, ve


@_inline
def _edge_target(buf, rule_s, rule_e, arity, out, words, rule_ids):  # pragma: no cover - compiled
    """An edge's target written after the target tokens so far: that of its ``"rule"`` value
    ``buf[rule_s:rule_e]`` (-1: none), a rule id or (rare) a rule string, or the tails in order (no rule,
    or null). Returns ``(code, length, k)``: code ``_FALLBACK``, ``TABLE_FULL``, ``_UNKNOWN_RULE``,
    ``_RULE_FORMAT``, ``_TARGET_TAIL`` (``[k]`` is not one of the ``arity`` tails) or 0."""
    sizes = out.sizes
    g0 = sizes[_TARGET]
    if rule_s >= 0 and buf[rule_s] == 34:
        return _written_rule(buf, rule_s, rule_e, arity, out, words)
    if rule_s < 0 or buf[rule_s] == 110:
        if g0 + arity > out.target.size:
            return TABLE_FULL, 0, 0
        for k in range(arity):
            out.target[g0 + k] = -(k + 1)
        return 0, arity, 0
    if not _int_token(buf, rule_s, rule_e):
        return _UNKNOWN_RULE, 0, 0
    ok, rid = parse_integer(buf, rule_s, rule_e)
    if not ok:
        return _FALLBACK, 0, 0
    r = find_id(rule_ids, rid)
    if r < 0 or out.rule_graphs[r] != sizes[_GRAPHS]:
        return _UNKNOWN_RULE, 0, 0
    return _copy_target(out.rule_tokens, out.rule_starts[r], out.rule_ends[r], out.target, g0, arity)


@uncounted_jit  # a call per edge: reference counting cost ~15 % of the read
def _edge(buf, s, n, number, head, out, words, names, rule_ids):  # pragma: no cover - compiled
    """One edge object of an ``"edges"`` list into the edge arrays, in one pass whatever the order of its
    keys. The reference checks the tails, then the features, then the rule; so the first problem of each
    is kept and the first in that order goes to ``out.deferred``. Returns ``(code, end of the object)``
    (code 0: none). Its helpers are inlined but for the rare cases (a feature or a rule written out)."""
    sizes, d, start = out.sizes, out.deferred, out.sizes[_START]
    if buf[s] != 123:
        return _fail(d, _EDGE_NOT_OBJECT, start, s, s, head, number, 0, 0), _skip(buf, s)
    arity = count = bad_tail = pair_start = pair_end = pair_a = pair_b = 0
    tails = feats = -1  # the first problem of the "tail" and of the "feats" value (0: none, -1: not given)
    rule_s = rule_e = -1
    i = _ws(buf, s + 1, n)
    end = i + 1 if buf[i] == 125 else -1
    while end < 0:
        key_end = _string_fast(buf, i)
        if _has_backslash(buf, i, key_end):
            return _FALLBACK, 0
        vs = _ws(buf, _ws(buf, key_end, n) + 1, n)
        ve = -1
        if _is(buf, i, key_end, _K_TAIL):
            if tails >= 0 or buf[vs] == 123:
                return _FALLBACK, 0
            tails, bad_tail, arity, ve = _tail_list(buf, vs, n, head, out.tails, sizes[_TAILS])
            if tails == _FALLBACK:
                return _FALLBACK, 0
        elif _is(buf, i, key_end, _K_FEATS):
            if feats >= 0 or buf[vs] == 123:
                return _FALLBACK, 0
            feats, pair_start, pair_end, pair_a, pair_b, count, ve = _feat_list(buf, vs, n, out, names)
            if feats == _FALLBACK or feats == TABLE_FULL:
                return feats, 0
        elif _is(buf, i, key_end, _K_RULE):
            if rule_s >= 0:
                return _FALLBACK, 0
            rule_s = vs
            rule_e = ve = _skip(buf, vs)
        if ve < 0:
            ve = _skip(buf, vs)
        i = _ws(buf, ve, n)
        if buf[i] == 125:
            end = i + 1
        else:
            i = _ws(buf, i + 1, n)
    if tails > 0:
        return _fail(d, tails, start, s, s, head, number, bad_tail, 0), end
    if feats == _FEATS_SHAPE:
        return _fail(d, feats, start, s, s, head, number, 0, 0), end
    if feats > 0:
        return _fail(d, feats, start, pair_start, pair_end, head, number, pair_a, pair_b), end
    code, length, k = _edge_target(buf, rule_s, rule_e, arity, out, words, rule_ids)
    if code == _FALLBACK or code == TABLE_FULL:
        return code, 0
    if code != 0:
        return _fail(d, code, start, rule_s, rule_e, head, number, k, arity), end
    edge = sizes[_EDGES]
    out.head[edge], out.arity[edge], out.target_lengths[edge], out.feature_counts[edge] = head, arity, length, count
    sizes[_EDGES] += 1
    sizes[_TAILS] += arity
    sizes[_TARGET] += length
    sizes[_FEATURES] += count
    return 0, end


@uncounted_jit
def _edges(buf, vs, n, out, words, names, rule_ids):  # pragma: no cover - compiled
    """An ``"edges"`` value: the edges of the next node (the first bad one's error waits for the node)."""
    sizes = out.sizes
    node = sizes[_NODE]
    if buf[vs] == 123:
        return _FALLBACK
    if buf[vs] != 91:
        return _fail(out.error, _EDGES_TYPE, sizes[_START], vs, vs, node, 0, 0, 0)
    if sizes[_PENDING] > 0:
        return _fail(out.error, _TWO_EDGES, sizes[_START], vs, vs, node, 0, 0, 0)
    out.deferred[0] = 0
    count = 0
    i = _first_item(buf, vs, n)
    while i >= 0:
        if out.deferred[0] == 0:
            code, e = _edge(buf, i, n, sizes[_NEXT_EDGE] + count, node, out, words, names, rule_ids)
            if code == _FALLBACK or code == TABLE_FULL:
                return code
        else:
            e = _skip(buf, i)
        count += 1
        i = _next_item(buf, e, n)
    sizes[_PENDING] = count
    return 0


@uncounted_jit
def _node(buf, vs, n, out, labels):  # pragma: no cover - compiled
    """A ``"node"`` value: its ``in_edges`` must list the edges given before it; then those edges' first
    error, if any; a node without edges gets an axiom edge."""
    sizes = out.sizes
    node = sizes[_NODE]
    start = sizes[_START]
    if buf[vs] != 123:
        return _fail(out.error, _NODE_TYPE, start, vs, vs, node, 0, 0, 0)
    in_s = in_e = cat_s = -1
    cat_e = -1
    i = _ws(buf, vs + 1, n)
    if buf[i] != 125:
        while True:
            key_end = _string_fast(buf, i)
            if _has_backslash(buf, i, key_end):
                return _FALLBACK
            s = _ws(buf, _ws(buf, key_end, n) + 1, n)
            e = _skip(buf, s)
            if _is(buf, i, key_end, _K_IN_EDGES):
                if in_s >= 0:
                    return _FALLBACK
                in_s, in_e = s, e
            elif _is(buf, i, key_end, _K_CAT):
                if cat_s >= 0:
                    return _FALLBACK
                cat_s, cat_e = s, e
            i = _ws(buf, e, n)
            if buf[i] == 125:
                break
            i = _ws(buf, i + 1, n)
    pending = sizes[_PENDING]
    first = sizes[_NEXT_EDGE]
    match = True
    if in_s >= 0:
        if buf[in_s] != 91:
            return _FALLBACK
        count = 0
        j = _first_item(buf, in_s, n)
        while j >= 0:
            je = _skip(buf, j)
            ok, value = parse_integer(buf, j, je)
            if not ok or not _int_token(buf, j, je):
                return _FALLBACK
            if value != first + count:
                match = False
            count += 1
            j = _next_item(buf, je, n)
        match = match and count == pending
    else:
        match = pending == 0
    if not match:
        return _fail(out.error, _IN_EDGES, start, in_s, in_e, node, 0, pending, first)
    if out.deferred[0] != 0:
        for k in range(out.error.size):  # (a slice copy would allocate)
            out.error[k] = out.deferred[k]
        return out.deferred[0]
    if pending == 0:  # an axiom edge
        edge = sizes[_EDGES]
        out.head[edge], out.arity[edge], out.target_lengths[edge], out.feature_counts[edge] = node, 0, 0, 0
        sizes[_EDGES] += 1
        sizes[_AXIOMS] += 1
    sizes[_NEXT_EDGE] += pending
    sizes[_PENDING] = 0
    label = -1
    if cat_s >= 0 and buf[cat_s] == 34:
        a, b = _text(buf, cat_s, cat_e, out)
        if a < 0:
            return _FALLBACK
        label = intern(labels, buf, a, b)
        if label < 0:
            return TABLE_FULL
    out.labels[sizes[_NODES]] = label
    sizes[_NODES] += 1
    sizes[_NODE] += 1
    return 0


@uncounted_jit
def _object(buf, start, n, out, words, names, labels, rule_ids):  # pragma: no cover - compiled
    """One graph's object at ``buf[start] == '{'``: each member's value checked as JSON, then read by its
    key in order. Returns ``(code, end)``."""
    sizes = out.sizes
    sizes[_START], sizes[_NAMES], sizes[_NEXT_EDGE], sizes[_PENDING], sizes[_NODE], sizes[_AXIOMS] = (
        start, -1, 0, 0, 0, 0)  # fmt: skip
    out.deferred[0] = 0
    staged = False  # an "edges" or "node" came
    i = _ws(buf, start + 1, n)
    if i < n and buf[i] == 125:
        i += 1
    else:
        while True:
            if i >= n or buf[i] != 34:
                return _fail(out.error, _SYNTAX, start, i, i, 0, 0, 0, 0), i
            key_end = _string_end(buf, i, n)
            if key_end < 0:
                return _fail(out.error, _SYNTAX, start, i, i, 0, 0, 0, 0), i
            j = _ws(buf, key_end, n)
            if j >= n or buf[j] != 58:
                return _fail(out.error, _SYNTAX, start, j, j, 0, 0, 0, 0), i
            vs = _ws(buf, j + 1, n)
            ve = _skip_value(buf, vs, n, out.stack)
            if ve == _NOT_JSON:
                return _fail(out.error, _SYNTAX, start, vs, vs, 0, 0, 0, 0), i
            if ve == _TOO_DEEP or _has_backslash(buf, i, key_end):
                return _FALLBACK, i
            code = 0
            if _is(buf, i, key_end, _K_RULES) or _is(buf, i, key_end, _K_FEATURES):
                if staged:
                    return _FALLBACK, i
                if buf[i + 1] == 114:
                    code = _rules(buf, vs, n, out, words, rule_ids)
                else:
                    code = _features(buf, vs, n, out, names)
            elif _is(buf, i, key_end, _K_EDGES):
                staged = True
                code = _edges(buf, vs, n, out, words, names, rule_ids)
            elif _is(buf, i, key_end, _K_NODE):
                staged = True
                code = _node(buf, vs, n, out, labels)
            if code != 0:
                return code, i
            i = _ws(buf, ve, n)
            if i < n and buf[i] == 125:
                i += 1
                break
            if i >= n or buf[i] != 44:
                return _fail(out.error, _SYNTAX, start, i, i, 0, 0, 0, 0), i
            i = _ws(buf, i + 1, n)
    if sizes[_PENDING] > 0:
        return _fail(out.error, _EDGES_AFTER, start, start, start, 0, 0, sizes[_PENDING], 0), i
    if sizes[_NODE] == 0:
        return _fail(out.error, _NO_NODES, start, start, start, 0, 0, 0, 0), i
    g = sizes[_GRAPHS]
    out.graphs[g, 0], out.graphs[g, 1], out.graphs[g, 2], out.graphs[g, 3] = (
        sizes[_NODES], sizes[_EDGES], sizes[_AXIOMS], start)  # fmt: skip
    sizes[_GRAPHS] += 1
    return 0, i


@uncounted_jit
def _scan(buf, n, out, words, names, labels, rule_ids):  # pragma: no cover - compiled
    """The objects of the file one after another (whitespace as ``str.split()`` sees it between them).
    Stops at the first error (``out.error``) or at text that is not an object (code ``_TOP``)."""
    pos = 0
    while True:
        while pos < n:
            width = space_width(buf, pos)
            if width == 0:
                break
            pos += width
        if pos >= n:
            break
        if buf[pos] != 123:
            return _fail(out.error, _TOP, pos, pos, pos, 0, 0, 0, 0)
        code, pos = _object(buf, pos, n, out, words, names, labels, rule_ids)
        if code != 0:
            return code
    if out.sizes[_GRAPHS] == 0:
        return _fail(out.error, _NO_GRAPH, n, n, n, 0, 0, 0, 0)
    return 0


# ---------------------------------------------------------------------- from the scan to graphs


@_jit
def _bounds(raw):  # pragma: no cover - compiled
    """Upper bounds on the values (array items and object members: one per ``,``, ``:`` or ``[``) and on
    the objects (one per ``{``) of a file, plus one."""
    values = objects = 1
    for c in raw:
        if c == 44 or c == 58 or c == 91:
            values += 1
        elif c == 123:
            objects += 1
    return values, objects


def parse(data: bytes, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """The graphs of a cdec JSON file's bytes (as :func:`~hypertune.formats.io.read_bytes` gives them), or
    an :class:`InputError` at the first bad graph. Nothing is added to ``feature_space`` or ``vocabulary``
    unless the whole file is good."""
    n = len(data)
    raw = np.frombuffer(data, dtype=np.uint8)
    buf = np.empty(2 * n + 16, dtype=np.uint8)  # the bytes, then room for strings decoded from escapes
    buf[:n] = raw
    values, objects = _bounds(raw)

    def scan(capacities: tuple[int, ...]) -> tuple:
        words_room, names_room, labels_room, rules_room, target_room = capacities
        out = _Scanned(
            head=np.empty(objects + values, np.int64),
            arity=np.empty(objects + values, np.int64),
            target_lengths=np.empty(objects + values, np.int64),
            feature_counts=np.empty(objects + values, np.int64),
            tails=np.empty(values, np.int64),
            target=np.empty(target_room, np.int64),
            names=np.empty(values, np.int64),
            values=np.empty(values, np.float64),
            flagged=np.empty((values, 3), np.int64),
            labels=np.empty(values, np.int64),
            graphs=np.empty((objects, 4), np.int64),
            feature_list=np.empty(values, np.int64),
            rule_starts=np.empty(rules_room, np.int64),
            rule_ends=np.empty(rules_room, np.int64),
            rule_graphs=np.empty(rules_room, np.int64),
            rule_tokens=np.empty(target_room, np.int64),
            sizes=np.zeros(15, np.int64),
            error=np.zeros(8, np.int64),
            deferred=np.zeros(8, np.int64),
            stack=np.zeros(_MAX_DEPTH, np.uint8),
        )
        out.sizes[_SCRATCH] = n
        words, names, labels = (new_string_table(words_room), new_string_table(names_room),
                                new_string_table(labels_room))  # fmt: skip
        rule_ids = new_key_table(rules_room)
        return out, words, names, labels, rule_ids, _scan(buf, n, out, words, names, labels, rule_ids)

    capacities = (max(4096, n >> 8), 256, 16, max(1024, n >> 9), 2 * values)
    out, words, names, labels, _, code = scan_with_tables(scan, capacities)
    if code == _FALLBACK:
        return read_text(data.decode("utf-8"), path, feature_space, vocabulary)
    count = int(out.sizes[_GRAPHS])
    if code == _TOP and count and data[int(out.error[1]) :].decode("utf-8").strip() == '"':
        code = 0  # cdec's stray quote after the last object
    scratch = buf[n : out.sizes[_SCRATCH]].tobytes()  # the strings decoded from escapes
    if code:
        error = _scan_error(data, scratch, buf, out, names, path)
        if error is None:  # valid JSON that the scan does not read
            return read_text(data.decode("utf-8"), path, feature_space, vocabulary)
        # a graph that fails to build before the bad one comes first (as when read one by one)
        spaces = FeatureSpace(feature_space), Vocabulary(vocabulary)  # copies: nothing is added
        _graphs(data, scratch, out, words, names, labels, count, *spaces, path)
        raise error
    return _graphs(data, scratch, out, words, names, labels, count, feature_space, vocabulary, path)


def _syntax_error(data: bytes, start: int, path: str) -> InputError | None:
    """The json module's own error for the object at byte ``start`` (None when it reads the object)."""
    text = data.decode("utf-8")
    try:
        _decoder().raw_decode(text, len(data[:start].decode("utf-8")))
    except json.JSONDecodeError as error:
        return InputError(f"invalid JSON: {error.msg} (column {error.colno})", path, error.lineno)
    except (ValueError, RecursionError):  # pragma: no cover - what the scan leaves to the Python reader
        return None
    return None


def _scan_error(data: bytes, scratch: bytes, buf: np.ndarray, out: _Scanned, names: StringTable, path: str):
    """The located error of a failed scan, or None when the Python reader must read the file."""
    code, start, token_start, token_end, node, number, a, b = (int(x) for x in out.error)
    if code == _TOP:
        got = data[start : start + 80].decode("utf-8", "ignore")[:20]
        return located(data, start, f"expected a JSON object ('{{'), got {got!r}", path)
    if code == _NO_GRAPH:
        return InputError("no graph in the file (expected a cdec JSON object)", path, data.count(b"\n") + 1)
    if code == _SYNTAX:
        return _syntax_error(data, start, path)
    checked = _skip_value(buf, start, len(data), np.zeros(_MAX_DEPTH, np.uint8))
    if checked == _NOT_JSON:  # json refuses the object before the reference reads any of it
        return _syntax_error(data, start, path)
    if checked == _TOO_DEEP:  # pragma: no cover - the scan has met it already
        return None

    def value() -> Any:
        return _decoder().decode(data[token_start:token_end].decode("utf-8"))

    where = f"edge {number} (node {node})"
    rule_form = "expected a rule '[LHS] ||| source ||| target [||| features]'"
    if code in (_VALUE_TYPE, _VALUE_INF):
        where = f"{where} feature {_string(data, scratch, names, a)}"
    messages = {
        _RULES_SHAPE: lambda: '"rules" must be a flat list [id, rule, id, rule, ...]',
        _RULES_ITEM: lambda: f'"rules" item {a}: expected an integer id and a rule string',
        _RULE_STRING: lambda: f"rule {a}: {rule_form}, got {value()!r}",
        _FEATURES_SHAPE: lambda: '"features" must be a list of feature names',
        _EDGES_TYPE: lambda: f'node {node}: "edges" must be a list',
        _TWO_EDGES: lambda: f'node {node}: two "edges" entries without a "node" entry between them',
        _NODE_TYPE: lambda: f'node {node}: "node" must be an object',
        _IN_EDGES: lambda: (
            f"node {node}: in_edges {value() if token_start >= 0 else []} do not match the {a} edges listed "
            f"before it (expected {list(range(b, b + a))})"
        ),
        _EDGES_AFTER: lambda: f'{a} edges after the last node (expected a "node" entry)',
        _NO_NODES: lambda: 'no nodes (expected "edges" and "node" entries)',
        _EDGE_NOT_OBJECT: lambda: f"{where}: expected an object",
        _TAIL_TYPE: lambda: f'{where}: "tail" must be a list of node ids',
        _TAIL_ID: lambda: f"{where}: unknown tail id {a} (tails must be earlier nodes 0..{node - 1})",
        _FEATS_SHAPE: lambda: f'{where}: "feats" must be a flat list [feature, value, ...]',
        _FID_RANGE: lambda: f'{where}: feature id {a} is not in the "features" list ({b} names)',
        _FID_TYPE: lambda: f"{where}: expected a feature id or name, got {value()!r}",
        _VALUE_TYPE: lambda: f"{where}: expected a number, got {value()!r}",
        _VALUE_INF: lambda: f"{where}: feature values must be finite",
        _UNKNOWN_RULE: lambda: f"{where}: unknown rule {value()!r}",
        _RULE_FORMAT: lambda: f"{where}: {rule_form}, got {value()!r}",
        _TARGET_TAIL: lambda: f"{where}: target refers to tail [{a}] of an edge with {b} tails",
    }
    return located(data, start, f"graph {int(out.sizes[_GRAPHS])}: {messages[code]()}", path)


def _string(data: bytes, scratch: bytes, table: StringTable, k: int) -> str:
    """String ``k`` of a table of the scan: in the file's bytes, or decoded into the scratch space."""
    start, end, n = int(table.starts[k]), int(table.ends[k]), len(data)
    return (data[start:end] if start < n else scratch[start - n : end - n]).decode("utf-8")


def _offsets(counts: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))


def _graphs(
    data: bytes,
    scratch: bytes,
    out: _Scanned,
    words: StringTable,
    names: StringTable,
    labels: StringTable,
    count: int,
    feature_space: FeatureSpace,
    vocabulary: Vocabulary,
    path: str,
) -> list[Hypergraph]:
    """The first ``count`` graphs of a scan. Words and feature names are interned in the order the
    reference meets them (edge by edge); a graph's feature matrix is as wide as the feature space once
    its edges were read."""
    if count == 0:
        return []
    num_edges = int(out.graphs[count - 1, 1])
    tail_offsets = _offsets(out.arity[:num_edges])
    target_offsets = _offsets(out.target_lengths[:num_edges])
    feature_offsets = _offsets(out.feature_counts[:num_edges])
    num_features = int(feature_offsets[-1])
    values = out.values[:num_features].copy()
    for feature, start, end in out.flagged[: out.sizes[_FLAGGED]].tolist():
        if feature < num_features:
            number = data[start:end].decode("ascii")
            values[feature] = float(int(number)) if number.lstrip("-").isdigit() else float(number)
    tokens = out.target[: target_offsets[-1]]
    is_word = tokens >= 0
    word_ids = first_occurrences(tokens[is_word], max(int(words.count[0]), 1))
    column = np.zeros(max(int(words.count[0]), 1), dtype=np.int64)
    column[word_ids] = vocabulary.indices([_string(data, scratch, words, k) for k in word_ids.tolist()])
    target = np.where(is_word, column[np.where(is_word, tokens, 0)], tokens)
    initial_width = len(feature_space)
    name_ids = out.names[:num_features]
    name_column = np.zeros(max(int(names.count[0]), 1), dtype=np.int64)
    ordered = first_occurrences(name_ids, max(int(names.count[0]), 1))
    name_column[ordered] = feature_space.indices([_string(data, scratch, names, k) for k in ordered.tolist()])
    columns = name_column[name_ids]
    label_text = [_string(data, scratch, labels, k) for k in range(int(labels.count[0]))] + [""]  # -1: no label
    graphs = []
    width = initial_width
    nodes_before = edges_before = 0
    for g in range(count):
        nodes_end, edges_end, axioms, start = (int(x) for x in out.graphs[g])
        e0, e1 = edges_before, edges_end
        f0, f1 = int(feature_offsets[e0]), int(feature_offsets[e1])
        if f1 > f0:
            width = max(width, int(columns[f0:f1].max()) + 1)
        node_labels = [label_text[k] for k in out.labels[nodes_before:nodes_end].tolist()]
        features = sp.csr_matrix(
            (values[f0:f1], columns[f0:f1], feature_offsets[e0 : e1 + 1] - f0), shape=(e1 - e0, width)
        )
        t0, t1 = int(target_offsets[e0]), int(target_offsets[e1])
        try:
            graphs.append(
                Hypergraph(
                    nodes_end - nodes_before,
                    out.head[e0:e1].copy(),
                    tail_offsets[e0 : e1 + 1] - tail_offsets[e0],
                    out.tails[tail_offsets[e0] : tail_offsets[e1]].copy(),
                    features,
                    target_offsets[e0 : e1 + 1] - t0,
                    target[t0:t1].copy(),
                    feature_space,
                    vocabulary,
                    node_labels if any(node_labels) else None,
                    {"axioms_added": axioms} if axioms else {},
                )
            )
        except GraphError as error:
            raise located(data, start, f"graph {g}: invalid graph: {error}", path) from None
        nodes_before, edges_before = nodes_end, edges_end
    return graphs


# ---------------------------------------------------------------------- the Python reader


class _Pairs(list):
    """A JSON object kept as its ordered list of (key, value) pairs."""


def _decoder() -> json.JSONDecoder:
    return json.JSONDecoder(object_pairs_hook=_Pairs)


def read_text(text: str, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """The graphs of a file's text read with the json module and built in Python: the reader of the files
    the compiled scan leaves (see the module docstring); it gives what :func:`parse` gives."""
    decoder = _decoder()
    graphs = []
    position = 0
    whitespace = re.compile(r"\s*")
    while True:
        position = whitespace.match(text, position).end()
        if position >= len(text):
            break
        line = text.count("\n", 0, position) + 1
        if text[position] != "{":
            # cdec's own hg_test.lattice ends with a stray quote after the object; cdec stops reading at the
            # end of the object, so a lone trailing quote is tolerated. Anything else is an error.
            if graphs and text[position:].strip() == '"':
                break
            raise InputError(f"expected a JSON object ('{{'), got {text[position : position + 20]!r}", path, line)
        try:
            obj, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise InputError(f"invalid JSON: {error.msg} (column {error.colno})", path, error.lineno) from None
        try:
            graphs.append(graph_from_pairs(obj, feature_space, vocabulary, path))
        except InputError as error:
            raise InputError(f"graph {len(graphs)}: {error.reason}", path, line) from None
    if not graphs:
        raise InputError("no graph in the file (expected a cdec JSON object)", path, text.count("\n") + 1)
    return graphs


def _rule_target(rule: str, where: str) -> tuple[str, list[str]]:
    fields = [f.strip() for f in rule.split("|||")]
    if len(fields) < 3:
        raise InputError(f"{where}: expected a rule '[LHS] ||| source ||| target [||| features]', got {rule!r}")
    return fields[0], fields[2].split()


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: expected a number, got {value!r}")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError(f"{where}: feature values must be finite")
    return value


def graph_from_pairs(
    obj: Any, feature_space: FeatureSpace, vocabulary: Vocabulary, path: str = "<cdec json>"
) -> Hypergraph:
    """One graph from a JSON object parsed with ordered pairs (see :func:`read_text`)."""
    if not isinstance(obj, _Pairs):
        raise InputError("expected a JSON object")
    rules: dict[int, tuple[str, list[str]]] = {}
    names: list[str] | None = None
    builder = ArrayBuilder(feature_space, vocabulary)
    labels: list[str] = []
    pending: list[Any] = []
    next_edge = 0  # cdec's global edge id
    axioms = 0
    node = 0
    for key, value in obj:
        if key == "rules":
            if not isinstance(value, list) or len(value) % 2:
                raise InputError('"rules" must be a flat list [id, rule, id, rule, ...]')
            for i in range(0, len(value), 2):
                rid, rule = value[i], value[i + 1]
                if isinstance(rid, bool) or not isinstance(rid, int) or not isinstance(rule, str):
                    raise InputError(f'"rules" item {i // 2}: expected an integer id and a rule string')
                rules[rid] = _rule_target(rule, f"rule {rid}")
        elif key == "features":
            if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
                raise InputError('"features" must be a list of feature names')
            names = value
        elif key == "edges":
            if not isinstance(value, list):
                raise InputError(f'node {node}: "edges" must be a list')
            if pending:
                raise InputError(f'node {node}: two "edges" entries without a "node" entry between them')
            pending = value
            if not value:
                pending = []
        elif key == "node":
            if not isinstance(value, _Pairs):
                raise InputError(f'node {node}: "node" must be an object')
            info = dict(value)
            in_edges = info.get("in_edges", [])
            expected = list(range(next_edge, next_edge + len(pending)))
            if in_edges != expected:
                raise InputError(
                    f"node {node}: in_edges {in_edges} do not match the {len(pending)} edges listed before it "
                    f"(expected {expected})"
                )
            if not pending:
                builder.add_edge(node, (), (), ())
                axioms += 1
            for edge in pending:
                _add_edge(builder, edge, node, next_edge, rules, names, vocabulary)
                next_edge += 1
            pending = []
            cat = info.get("cat")
            labels.append(cat if isinstance(cat, str) else "")
            node += 1
    if pending:
        raise InputError(f'{len(pending)} edges after the last node (expected a "node" entry)')
    if node == 0:
        raise InputError('no nodes (expected "edges" and "node" entries)')
    metadata = {"axioms_added": axioms} if axioms else {}
    return build_located(builder, node, path, labels=labels if any(labels) else None, metadata=metadata)


def _add_edge(
    builder: ArrayBuilder,
    edge: Any,
    head: int,
    number: int,
    rules: dict[int, tuple[str, list[str]]],
    names: list[str] | None,
    vocabulary: Vocabulary,
) -> None:
    where = f"edge {number} (node {head})"
    if not isinstance(edge, _Pairs):
        raise InputError(f"{where}: expected an object")
    info = dict(edge)
    tails = info.get("tail", [])
    if not isinstance(tails, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tails):
        raise InputError(f'{where}: "tail" must be a list of node ids')
    for t in tails:
        if not 0 <= t < head:
            raise InputError(f"{where}: unknown tail id {t} (tails must be earlier nodes 0..{head - 1})")
    feats = info.get("feats", [])
    if not isinstance(feats, list) or len(feats) % 2:
        raise InputError(f'{where}: "feats" must be a flat list [feature, value, ...]')
    features = []
    for i in range(0, len(feats), 2):
        fid = feats[i]
        if isinstance(fid, str):
            name = fid
        elif isinstance(fid, int) and not isinstance(fid, bool):
            if names is None or not 0 <= fid < len(names):
                known = 0 if names is None else len(names)
                raise InputError(f'{where}: feature id {fid} is not in the "features" list ({known} names)')
            name = names[fid]
        else:
            raise InputError(f"{where}: expected a feature id or name, got {fid!r}")
        features.append((name, _number(feats[i + 1], f"{where} feature {name}")))
    rule = info.get("rule")
    if rule is None:
        tokens = [-(i + 1) for i in range(len(tails))]
    else:
        if isinstance(rule, str):
            target = _rule_target(rule, where)[1]
        elif isinstance(rule, int) and not isinstance(rule, bool) and rule in rules:
            target = rules[rule][1]
        else:
            raise InputError(f"{where}: unknown rule {rule!r}")
        tokens = []
        index = vocabulary.index
        for word in target:
            match = _TARGET_VARIABLE.match(word)
            if match:
                k = int(match.group(1))
                if not 1 <= k <= len(tails):
                    raise InputError(f"{where}: target refers to tail [{k}] of an edge with {len(tails)} tails")
                tokens.append(-k)
            else:
                tokens.append(index(word))
    builder.add_edge(head, tails, features, tokens)


# ---------------------------------------------------------------------- writing


def graph_to_text(hg: Hypergraph) -> str:
    """One graph as a cdec JSON object on one line (repeated ``edges``/``node`` keys)."""
    names: list[str] = []
    name_id: dict[str, int] = {}
    rules: list[str] = []
    rule_id: dict[str, int] = {}
    parts = []
    vocab = hg.vocabulary
    for v in range(hg.num_nodes):
        cat = (hg.node_labels[v] if hg.node_labels else "") or "X"
        if not _NONTERMINAL.match(f"[{cat}]") or "|" in cat:
            cat = "X"
        edges = []
        for e in hg.in_edges(v):
            tails = [int(t) for t in hg.edge_tails(e)]
            words = []
            for t in hg.edge_target(e):
                if t < 0:
                    words.append(f"[{-int(t)}]")
                else:
                    word = check_word(vocab.word(int(t)), "cdec JSON")
                    if word == "|||" or _TARGET_VARIABLE.match(word):
                        raise InputError(f"cannot write the word {word!r} in cdec JSON: it reads as a variable")
                    words.append(word)
            source = " ".join(f"[X,{i + 1}]" for i in range(len(tails)))
            rule = f"[{cat}] ||| {source} ||| {' '.join(words)}"
            if rule not in rule_id:
                rule_id[rule] = len(rules) + 1
                rules.append(rule)
            feats: list[Any] = []
            for name, value in hg.edge_features(e).items():
                if name not in name_id:
                    name_id[name] = len(names)
                    names.append(name)
                feats.extend((name_id[name], value))
            edges.append({"tail": tails, "feats": feats, "rule": rule_id[rule]})
        in_edges = list(range(int(hg.node_offsets[v]), int(hg.node_offsets[v + 1])))
        parts.append('"edges":' + json.dumps(edges, ensure_ascii=False, separators=(",", ":")))
        parts.append('"node":' + json.dumps({"in_edges": in_edges, "cat": cat}, separators=(",", ":")))
    flat_rules: list[Any] = []
    for i, rule in enumerate(rules, 1):
        flat_rules.extend((i, rule))
    head = [
        '"rules":' + json.dumps(flat_rules, ensure_ascii=False, separators=(",", ":")),
        '"features":' + json.dumps(names, ensure_ascii=False, separators=(",", ":")),
    ]
    return "{" + ",".join(head + parts) + "}"


def write(graphs: Sequence[Hypergraph], path: str) -> None:
    """One cdec JSON object per line, written atomically."""
    write_atomically(path, "".join(graph_to_text(g) + "\n" for g in graphs))


_SNIFF = re.compile(r'^\{\s*"(rules|features|edges)"\s*:')


def sniff(head: str) -> bool:
    match = _SNIFF.match(head.lstrip())
    if match is None:
        return False
    return match.group(1) != "edges" or ('"tail"' in head and '"head"' not in head)


FORMAT = register(GraphFormat("cdec-json", "cdec JSON hypergraphs (repeated edges/node keys)", sniff, read, write))

__all__ = ["FORMAT", "format_number", "graph_from_pairs", "graph_to_text", "read", "read_text", "write"]
