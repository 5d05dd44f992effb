"""JSONL k-best lists: one hypothesis per line, the reranking input of neural MT and LLM translation.

Each line is a JSON object::

    {"id": 0, "hyp": "the house", "features": {"logprob": -3.2, "qe": 0.81}, "scores": {"comet": 0.853}}

* ``"id"`` (required): the sentence id, a non-negative integer (below 10**18). Lines of one id need not be
  adjacent. Each id becomes one k-best list (:func:`~hypertune.hypergraph.kbest_lattices`; hypothesis ``i``
  of the id, in file order, is edge ``i + 1``) whose ``sentence_id`` is the id; the lists come in the order
  their ids first appear, and are matched with references by id, as n-best lists are.
* ``"hyp"``: the hypothesis text, split on whitespace (as ``str.split()`` splits) into words, as a Moses
  n-best list's. It may be left out of a whole file (a set scored by given scores only): every hypothesis
  is then empty and every graph's ``metadata`` holds ``{"text": False}``, which tells reference-based
  metrics that there is no text. Given on some lines and not on others, it is an error.
* ``"features"``: an object of feature name to number (sparse: a name left out is 0; left out: no features).
* ``"scores"``: an object of score name to number, the hypothesis's given scores (COMET, a QE score, ...):
  the graphs' :class:`~hypertune.hypergraph.EdgeScores`, in order of first appearance, which the
  ``scores.NAME`` metric reads. Optional, but every hypothesis of a file must have the same names.
* ``"total"``: the decoder's total model score, optional (all lines or none): ``metadata["totals"]``, as an
  n-best list's fourth field, written back by the n-best writer.
* ``"utilities"``: an object of name to a list of numbers, ``u(e, e'_0), u(e, e'_1), ...``: the utility of
  this hypothesis against each hypothesis of its sentence, in file order (a COMET-MBR matrix computed
  elsewhere, one row per line), read by :func:`utility_matrices` for ``hypertune mbr --utility NAME``; the
  graph reader skips it.

Other keys are ignored (their values must still be JSON). A repeated key, a feature or score named twice
on one line, an empty name, a value that is not a finite number (``NaN``, ``Infinity``, a string), a line
that is not a JSON object, and invalid JSON are errors naming the file and line (JSON syntax errors in the
json module's words, with the column). Blank lines are skipped. Feature names and words are interned in
file order; every graph's feature matrix is as wide as the feature space once the file is read.

Reading is one compiled pass over the file's bytes (:mod:`hypertune.formats.json_lexer` for the JSON,
:mod:`hypertune.formats._scan` for the tables and errors); numbers are converted exactly (as
``float()`` converts json's value). Written by ``convert --to jsonl`` (k-best lists only; ``.gz`` names
are written gzip-compressed; numbers with ``repr``, so they read back exactly).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import numba
import numpy as np
import scipy.sparse as sp

from hypertune.arrays import flat_ranges, offsets_from_counts
from hypertune.compiled import uncounted_jit
from hypertune.errors import InputError
from hypertune.formats._common import check_word
from hypertune.formats._scan import (
    TABLE_FULL,
    StringTable,
    fail,
    flagged_floats,
    intern,
    interned_columns,
    is_string,
    located,
    new_error,
    new_string_table,
    parse_integer,
    read_bytes,
    run_scan,
    scan_error,
    space_width,
)
from hypertune.formats.io import write_atomically
from hypertune.formats.json_lexer import (
    HUGE_INTEGER,
    INT,
    NOT_A_NUMBER,
    NOT_FINITE,
    NOT_JSON,
    has_backslash,
    key_is,
    literal,
    next_item,
    number_value,
    open_container,
    skip,
    skip_string,
    skip_value,
    string_text,
    value_kind,
    ws,
)
from hypertune.formats.registry import GraphFormat, register
from hypertune.formats.sniffing import sniff_jsonl as sniff
from hypertune.hypergraph import EdgeScores, Hypergraph, KbestLists, kbest_lattices
from hypertune.symbols import FeatureSpace, Vocabulary

_jit = numba.njit(cache=True, nogil=True)
_inline = numba.njit(cache=True, nogil=True, inline="always")

#: The ``metadata`` key of graphs read from a JSONL file without ``"hyp"``: ``{"text": False}``.
TEXT = "text"

# error codes of the scan (messages: _MESSAGES)
(_SYNTAX, _HUGE, _NOT_OBJECT, _NO_ID, _BAD_ID, _KEY_TWICE, _HYP_TYPE, _OBJECT_TYPE, _EMPTY_NAME, _NAME_TWICE,
 _NOT_NUMBER, _NOT_FINITE, _TOTAL) = range(1, 14)  # fmt: skip
# the keys read (bits of a line's "seen" mask); what the error numbers name
_ID, _HYP, _FEATURES, _SCORES, _TOTAL_KEY = 1, 2, 4, 8, 16
_KEY_NAMES = {_ID: "id", _HYP: "hyp", _FEATURES: "features", _SCORES: "scores", _TOTAL_KEY: "total"}
_K_ID, _K_HYP, _K_FEATURES = literal('"id"'), literal('"hyp"'), literal('"features"')
_K_SCORES, _K_TOTAL = literal('"scores"'), literal('"total"')
# sizes: hypotheses, words, features, scores, flagged values
_H, _W, _F, _S, _FLAGGED = range(5)


class _Scanned(NamedTuple):
    """What one compiled pass fills (sized by the caller from upper bounds; ``words`` may run out, and the
    scan then runs again with more room). Per hypothesis (a non-blank line): its id, word, feature and score
    counts, which keys it has (bits ``_ID``, ``_HYP``, ...), its total and the byte where its line starts.
    Per word: its ``words`` table id. Per feature / score: its name's table id and value. ``flagged``: (0
    feature / 1 score / 2 total, index, start, end) of the values the exact fast path left to ``float()``.
    ``seen_features`` / ``seen_scores``: per name, the last hypothesis that had it (a name twice on a line).
    ``positions``: the name ids of the last line's features (row 0) and scores (row 1) by position (most
    lines name the same ones in the same order). ``stack``: :func:`skip_value`'s; ``cursor``: where strings
    decoded from escapes go (after the file's bytes)."""

    sentence: np.ndarray
    word_counts: np.ndarray
    feature_counts: np.ndarray
    score_counts: np.ndarray
    keys: np.ndarray
    totals: np.ndarray
    line_starts: np.ndarray
    words: np.ndarray
    feature_names: np.ndarray
    feature_values: np.ndarray
    score_names: np.ndarray
    score_values: np.ndarray
    flagged: np.ndarray
    seen_features: np.ndarray
    seen_scores: np.ndarray
    positions: np.ndarray
    sizes: np.ndarray
    error: np.ndarray
    stack: np.ndarray
    cursor: np.ndarray


@_jit
def _number(buf, s, e):  # pragma: no cover - compiled
    """:func:`~hypertune.formats.json_lexer.number_value` in this reader's problem codes."""
    problem, x, exact = number_value(buf, s, e)
    return (_NOT_NUMBER if problem == NOT_A_NUMBER else _NOT_FINITE if problem == NOT_FINITE else 0), x, exact


@_inline
def _flag(out, what, index, s, e):  # pragma: no cover - compiled
    k = out.sizes[_FLAGGED]
    out.flagged[k, 0], out.flagged[k, 1], out.flagged[k, 2], out.flagged[k, 3] = what, index, s, e
    out.sizes[_FLAGGED] = k + 1


@uncounted_jit  # compiled once, not inlined: inlining every helper made the reader take minutes to compile
def _named_numbers(buf, vs, n, out, table, names, values, seen, at, h, line, what):  # noqa: PLR0913 # pragma: no cover
    """The (checked) object ``buf[vs]`` of ``name: number`` members written from ``names[at]`` /
    ``values[at]`` on (``what``: 0 features, 1 scores). Returns ``(code, count)``."""
    if buf[vs] != 123:
        return fail(out.error, _OBJECT_TYPE, vs, skip(buf, vs), what, at=line), 0
    item, _ = open_container(buf, vs, n)
    count = 0
    while item >= 0:
        j = item + 1
        while buf[j] != 34 and buf[j] != 92:
            j += 1
        if buf[j] == 34:  # no escape: the name is the bytes between the quotes (one pass)
            ts, te, key_end = item + 1, j, j + 1
        else:
            key_end = skip_string(buf, item)
            ts, te = string_text(buf, item, key_end, out.cursor)
        value = ws(buf, ws(buf, key_end, n) + 1, n)
        value_end = skip(buf, value)
        if ts == te:
            return fail(out.error, _EMPTY_NAME, item, key_end, what, at=line), count
        remembered = count < out.positions.shape[1]
        k = out.positions[what, count] if remembered else -1
        if not is_string(table, k, buf, ts, te):  # most lines name the same features in the same order
            k = intern(table, buf, ts, te)
            if k < 0:
                return TABLE_FULL, count
            if remembered:
                out.positions[what, count] = k
        if seen[k] == h:
            return fail(out.error, _NAME_TWICE, item, key_end, what, k, at=line), count
        seen[k] = h
        problem, x, exact = _number(buf, value, value_end)
        if problem:
            return fail(out.error, problem, value, value_end, what, k, at=line), count
        names[at + count] = k
        values[at + count] = x
        if not exact:
            _flag(out, what, at + count, value, value_end)
        count += 1
        item = next_item(buf, value_end, n)
    return 0, count


# the bytes of a "hyp" string: 0 plain, 1 whitespace or the first byte of a possible Unicode space, 2 "\\"
_HYP_CLASS = np.zeros(256, np.uint8)
_HYP_CLASS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0xC2, 0xE1, 0xE2, 0xE3]] = 1
_HYP_CLASS[92] = 2


@uncounted_jit
def _split(buf, j, end, out, words, w, escapes):  # pragma: no cover - compiled
    """Intern the words of ``buf[j:end]`` (split as ``str.split()`` splits) from ``out.words[w]`` on:
    ``(words so far or -1 when a table or the word array is full, complete)``; with ``escapes`` False the
    split stops, incomplete, at a backslash (the text must be decoded first)."""
    while True:
        while j < end:
            kind = _HYP_CLASS[buf[j]]
            if kind == 0:
                break
            if kind == 2 and not escapes:
                return w, False
            width = space_width(buf, j)
            if width == 0:
                break
            j += width
        if j >= end:
            return w, True
        start = j
        while j < end:
            kind = _HYP_CLASS[buf[j]]
            if kind == 2 and not escapes:
                return w, False
            if kind == 1 and space_width(buf, j) > 0:
                break
            j += 1
        if w >= out.words.size:
            return -1, True
        k = intern(words, buf, start, j)
        if k < 0:
            return -1, True
        out.words[w] = k
        w += 1


@_inline
def _words(buf, vs, ve, out, words, w):  # pragma: no cover - compiled
    """The words of the (checked) JSON string ``buf[vs:ve]``, split as ``str.split()`` splits its text,
    interned from ``out.words[w]`` on: the words so far, or -1 (a table or the word array is full). The
    bytes are split in place while there is no escape (the words before one are the same decoded)."""
    done, complete = _split(buf, vs + 1, ve - 1, out, words, w, False)
    if complete:
        return done
    ts, te = string_text(buf, vs, ve, out.cursor)
    return _split(buf, ts, te, out, words, w, True)[0]


@_inline
def _key_bit(buf, key):  # pragma: no cover - compiled
    """The bit of the (checked) key string at ``buf[key]`` (0: a key not read) and its end."""
    key_end = skip(buf, key)
    escaped = has_backslash(buf, key, key_end)
    if key_is(buf, key, key_end, escaped, _K_ID):
        return _ID, key_end
    if key_is(buf, key, key_end, escaped, _K_HYP):
        return _HYP, key_end
    if key_is(buf, key, key_end, escaped, _K_FEATURES):
        return _FEATURES, key_end
    if key_is(buf, key, key_end, escaped, _K_SCORES):
        return _SCORES, key_end
    if key_is(buf, key, key_end, escaped, _K_TOTAL):
        return _TOTAL_KEY, key_end
    return 0, key_end


@_inline
def _member(buf, bit, vs, ve, n, out, words, names, score_names, line):  # noqa: PLR0913 # pragma: no cover
    """The (checked) value ``buf[vs:ve]`` of a line's member with key ``bit``: an error or restart code."""
    sizes = out.sizes
    h = sizes[_H]
    if bit == _ID:
        ok, sid = parse_integer(buf, vs, ve)
        if value_kind(buf, vs, ve) != INT or not ok or sid < 0:
            return fail(out.error, _BAD_ID, vs, ve, at=line)
        out.sentence[h] = sid
        return 0
    if bit == _HYP:
        if buf[vs] != 34:
            return fail(out.error, _HYP_TYPE, vs, ve, at=line)
        w = _words(buf, vs, ve, out, words, sizes[_W])
        if w < 0:
            return TABLE_FULL
        out.word_counts[h] = w - sizes[_W]
        sizes[_W] = w
        return 0
    if bit == _FEATURES:
        f = sizes[_F]
        code, count = _named_numbers(
            buf, vs, n, out, names, out.feature_names, out.feature_values, out.seen_features, f, h, line, 0
        )
        out.feature_counts[h] = count
        sizes[_F] = f + count
        return code
    if bit == _SCORES:
        s = sizes[_S]
        code, count = _named_numbers(
            buf, vs, n, out, score_names, out.score_names, out.score_values, out.seen_scores, s, h, line, 1
        )
        out.score_counts[h] = count
        sizes[_S] = s + count
        return code
    if bit == _TOTAL_KEY:
        problem, x, exact = _number(buf, vs, ve)
        if problem:
            return fail(out.error, _TOTAL, vs, ve, at=line)
        out.totals[h] = x
        if not exact:
            _flag(out, 2, h, vs, ve)
    return 0


@uncounted_jit
def _scan(buf, n, out, words, names, score_names):  # pragma: no cover - compiled
    """One pass over the lines of ``buf[:n]``: each non-blank line one JSON object (checked as json
    checks it, then read key by key). Stops at the first error (``out.error``) or with ``TABLE_FULL``."""
    sizes = out.sizes
    pos = 0
    while pos < n:
        line = pos
        end = line
        while end < n and buf[end] != 10:
            end += 1
        pos = end + 1
        i = ws(buf, line, end)
        if i >= end:
            continue
        ve = skip_value(buf, i, end, out.stack)
        if ve == HUGE_INTEGER:
            return fail(out.error, _HUGE, i, end, at=line)
        if ve == NOT_JSON or ws(buf, ve, end) != end:
            return fail(out.error, _SYNTAX, i, end, at=line)
        if buf[i] != 123:
            return fail(out.error, _NOT_OBJECT, i, ve, at=line)
        h = sizes[_H]
        out.line_starts[h] = line
        out.word_counts[h] = out.feature_counts[h] = out.score_counts[h] = 0
        out.totals[h] = 0.0
        seen = 0
        item, _ = open_container(buf, i, end)
        while item >= 0:
            bit, key_end = _key_bit(buf, item)
            vs = ws(buf, ws(buf, key_end, end) + 1, end)
            value_end = skip(buf, vs)
            if bit & seen:
                return fail(out.error, _KEY_TWICE, item, key_end, bit, at=line)
            seen |= bit
            code = _member(buf, bit, vs, value_end, end, out, words, names, score_names, line)
            if code != 0:
                return code
            item = next_item(buf, value_end, end)
        if not seen & _ID:
            return fail(out.error, _NO_ID, i, ve, at=line)
        out.keys[h] = seen
        sizes[_H] = h + 1
    return 0


@numba.njit(cache=True, nogil=True)
def _bounds(raw):  # pragma: no cover - compiled
    """Upper bounds on a file's lines, members (one per ``:``), open containers (``{``, ``[``) and
    words (one per space or line end, as ``_scan.text_bounds`` counts tokens), and whether it has a
    backslash (strings to decode)."""
    lines = members = containers = tokens = 1
    backslash = False
    for c in raw:
        lines += c == 10
        members += c == 58
        containers += (c == 123) | (c == 91)
        tokens += c <= 32
        backslash |= c == 92
    return lines, members, containers, tokens, backslash


class _Scan:
    """A file's bytes and what the compiled pass made of them."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        n = len(data)
        raw = np.frombuffer(data, dtype=np.uint8)
        lines, members, containers, tokens, backslash = (int(x) for x in _bounds(raw))
        # a writable copy, then room for strings decoded from escapes (never longer than written)
        self.buf = np.empty(n + (n if backslash else 0) + 16, dtype=np.uint8)
        self.buf[:n] = raw
        self.out, (self.words, self.names, self.score_names), self.code = run_scan(
            lambda out, *tables: _scan(self.buf, n, out, *tables),
            lambda room: self._arrays(lines, members, containers, room[0], room[1], room[2]),
            (new_string_table, new_string_table, new_string_table),
            (max(1 << 14, n >> 10), max(256, n >> 16), 16, tokens, max(256, n >> 16), 16),
        )
        self.scratch = self.buf[n : int(self.out.cursor[0])].tobytes()

    def _arrays(self, lines: int, members: int, containers: int, words: int, names: int, scores: int) -> _Scanned:
        return _Scanned(
            sentence=np.zeros(lines, np.int64),
            word_counts=np.zeros(lines, np.int64),
            feature_counts=np.zeros(lines, np.int64),
            score_counts=np.zeros(lines, np.int64),
            keys=np.zeros(lines, np.int64),
            totals=np.zeros(lines, np.float64),
            line_starts=np.zeros(lines, np.int64),
            words=np.empty(words, np.int64),
            feature_names=np.empty(members, np.int64),
            feature_values=np.empty(members, np.float64),
            score_names=np.empty(members, np.int64),
            score_values=np.empty(members, np.float64),
            flagged=np.empty((members, 4), np.int64),
            seen_features=np.full(names, -1, np.int64),
            seen_scores=np.full(scores, -1, np.int64),
            positions=np.full((2, 64), -1, np.int64),
            sizes=np.zeros(5, np.int64),
            error=new_error(),
            stack=np.zeros(containers, np.uint8),
            cursor=np.full(1, len(self.data), np.int64),
        )

    def string(self, table: StringTable, k: int) -> str:
        """String ``k`` of a table: in the file's bytes, or decoded into the scratch space."""
        start, end, n = int(table.starts[k]), int(table.ends[k]), len(self.data)
        text = self.data[start:end] if start < n else self.scratch[start - n : end - n]
        return text.decode("utf-8", "surrogatepass")

    def strings(self, table: StringTable) -> Any:
        return lambda ks: [self.string(table, k) for k in ks]


_WHAT = ("feature", "score", "total")
_MESSAGES = {
    _HUGE: "an integer of more than 4300 digits (more than json's int() reads)",
    _NOT_OBJECT: 'expected a JSON object per line ({{"id": ..., "hyp": ..., ...}}), got {value}',
    _NO_ID: 'no "id" (the sentence id, a non-negative integer)',
    _BAD_ID: '"id" must be a non-negative integer below 10**18, got {value}',
    _KEY_TWICE: 'key "{key}" given twice',
    _HYP_TYPE: '"hyp" must be a string, got {value}',
    _OBJECT_TYPE: '"{kind}s" must be an object of name: number, got {value}',
    _EMPTY_NAME: "empty {kind} name",
    _NAME_TWICE: "{kind} {name!r} given twice",
    _NOT_NUMBER: "{kind} {name!r}: expected a number, got {value}",
    _NOT_FINITE: "{kind} {name!r}: values must be finite, got {value}",
    _TOTAL: '"total" must be a finite number, got {value}',
}


def _shown(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _scan_error(scan: _Scan, path: str) -> InputError:
    data, error = scan.data, scan.out.error
    code, start, end = int(error[0]), int(error[1]), int(error[2])
    if code == _SYNTAX:
        line = data[start:end].decode("utf-8")
        try:
            json.loads(line)
        except json.JSONDecodeError as problem:
            return located(data, start, f"invalid JSON: {problem.msg} (column {problem.colno})", path)
        except (RecursionError, ValueError):
            pass
        return located(data, start, "invalid JSON (nested too deeply for the json module to say more)", path)
    what, name = int(error[3]), int(error[4])
    table = scan.score_names if what == 1 else scan.names
    return scan_error(
        data,
        error,
        _MESSAGES,
        path,
        kind=_WHAT[what],
        key=_KEY_NAMES.get(what, ""),
        name=lambda: scan.string(table, name),
        value=lambda: _shown(data[start:end].decode("utf-8")),
    )


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    return parse(read_bytes(path, "JSONL file"), path, feature_space, vocabulary)


def parse(data: bytes, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """The k-best lists of a JSONL file's bytes (as :func:`~hypertune.formats.io.read_bytes` gives them), or
    an :class:`InputError` at the first bad line. Nothing is added to ``feature_space`` or ``vocabulary``
    from a file that fails."""
    scan = _Scan(data)
    out = scan.out
    if scan.code:
        raise _scan_error(scan, path)
    hypotheses, num_words, num_features, num_scores = (int(x) for x in out.sizes[:4])
    if not hypotheses:
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        raise InputError('no hypotheses in the file (expected JSON lines {"id": 0, "hyp": ...})', path, max(lines, 1))
    _converted_flagged(scan)
    keys = out.keys[:hypotheses]
    text = _all_or_none(scan, keys, _HYP, path)
    has_totals = _all_or_none(scan, keys, _TOTAL_KEY, path)
    scores = _scores(scan, hypotheses, num_scores, path)
    words = out.words[:num_words]
    words = interned_columns(words, int(scan.words.used[0]), scan.strings(scan.words), vocabulary.indices)
    names = out.feature_names[:num_features]
    columns = interned_columns(names, int(scan.names.used[0]), scan.strings(scan.names), feature_space.indices)
    features = sp.csr_matrix(
        (out.feature_values[:num_features], columns, offsets_from_counts(out.feature_counts[:hypotheses])),
        shape=(hypotheses, len(feature_space)),
    )
    order, list_offsets, ids = _grouped(out.sentence[:hypotheses])
    word_counts, totals = out.word_counts[:hypotheses], out.totals[:hypotheses]
    if order is not None:
        words = words[flat_ranges(offsets_from_counts(word_counts), order)]
        word_counts, totals, features = word_counts[order], totals[order], features[order]
        scores = None if scores is None else scores[order]
    metadata: list[dict[str, Any]] = []
    for lo, hi in zip(list_offsets[:-1].tolist(), list_offsets[1:].tolist(), strict=True):
        meta: dict[str, Any] = {} if text else {TEXT: False}
        if has_totals:
            meta["totals"] = totals[lo:hi].tolist()
        metadata.append(meta)
    return kbest_lattices(
        KbestLists(list_offsets, words, offsets_from_counts(word_counts), features),
        feature_space,
        vocabulary,
        sentence_ids=ids.tolist(),
        metadata=metadata,
        hypothesis_scores=scores,
    )


def _converted_flagged(scan: _Scan) -> None:
    """``float()`` of the values the exact fast path left (all finite numbers: checked by the scan)."""
    out = scan.out
    what, index, starts, ends = out.flagged[: out.sizes[_FLAGGED]].T
    values, _ = flagged_floats(scan.data, starts, ends)
    out.feature_values[index[what == 0]] = values[what == 0]
    out.score_values[index[what == 1]] = values[what == 1]
    out.totals[index[what == 2]] = values[what == 2]


def _all_or_none(scan: _Scan, keys: np.ndarray, bit: int, path: str) -> bool:
    """Whether every line has the key ``bit`` (``"hyp"``, ``"total"``); an error where some have it and
    some do not, at the first line that differs from the first."""
    has = (keys & bit) != 0
    if has.all() or not has.any():
        return bool(has[0])
    first = int(np.flatnonzero(has != has[0])[0])
    key = _KEY_NAMES[bit]
    line = scan.data.count(b"\n", 0, int(scan.out.line_starts[0])) + 1
    if has[0]:
        message = f'no "{key}" (line {line} has one: give it on every line or on none)'
    else:
        message = f'"{key}" given, but line {line} has none (give it on every line or on none)'
    raise located(scan.data, int(scan.out.line_starts[first]), message, path)


def _scores(scan: _Scan, hypotheses: int, num_scores: int, path: str) -> EdgeScores | None:
    """The hypotheses' scores, one column per name in order of first appearance; every hypothesis must
    have every name (none is given twice: the scan checked)."""
    out = scan.out
    count = int(scan.score_names.used[0])
    if count == 0:
        return None
    counts = out.score_counts[:hypotheses]
    short = np.flatnonzero(counts != count)
    if short.size:
        h = int(short[0])
        lo = int(offsets_from_counts(counts)[h])
        missing = np.setdiff1d(np.arange(count), out.score_names[lo : lo + int(counts[h])])
        name = scan.string(scan.score_names, int(missing[0]))
        message = f"score {name!r} is missing (other hypotheses have it)"
        raise located(scan.data, int(out.line_starts[h]), message, path)
    values = np.empty((hypotheses, count), np.float64)
    rows = np.repeat(np.arange(hypotheses), count)
    values[rows, out.score_names[:num_scores]] = out.score_values[:num_scores]
    names = [scan.string(scan.score_names, k) for k in range(count)]
    return EdgeScores(names, values)


def _grouped(sentence: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """``(order, list offsets, ids)``: the hypotheses grouped by id (stable: file order within an id; order
    ``None`` when each id's lines are already together), the ids in order of first appearance."""
    starts = np.flatnonzero(np.concatenate(([True], sentence[1:] != sentence[:-1])))
    runs = sentence[starts]
    if np.unique(runs).size == runs.size:  # every id in one run: the file order is the grouped order
        return None, np.append(starts, sentence.size), runs
    ids, first, inverse = np.unique(sentence, return_index=True, return_inverse=True)
    rank = np.empty(ids.size, np.int64)
    by_appearance = np.argsort(first, kind="stable")
    rank[by_appearance] = np.arange(ids.size)
    group = rank[inverse.reshape(-1)]
    order = np.argsort(group, kind="stable")
    return order, offsets_from_counts(np.bincount(group, minlength=ids.size)), ids[by_appearance]


# ---------------------------------------------------------------------- writing


def kbest_rows(hg: Hypergraph, purpose: str = "be written as JSONL") -> np.ndarray:
    """The edges of a k-best list's hypotheses (one edge from the start node to the goal each, in edge
    order; axioms skipped), or an :class:`InputError` saying that only k-best lists can ``purpose``."""
    arity = np.diff(hg.tail_offsets)
    hypotheses = arity > 0
    first_tail = hg.tails[hg.tail_offsets[:-1][hypotheses]]
    if np.any(arity > 1) or np.any(first_tail != 0) or np.any(hg.head[hypotheses] != hg.goal):
        raise InputError(
            f"only k-best lists (one edge per hypothesis from the start node to the goal) can {purpose}; "
            "extract k-best lists first (hypertune decode GRAPHS --weights W --kbest K --out nbest.txt)"
        )
    return np.flatnonzero(hypotheses)


def lines(graphs: Sequence[Hypergraph]) -> list[str]:
    """The JSONL lines of k-best graphs (each with its newline): ``id`` (the sentence id, else the graph's
    position), ``hyp`` (unless the graph says it had no text), ``features`` (those the graph stores),
    ``scores`` (when the graph has edge scores) and ``total`` (when its metadata has totals). Numbers are
    written as ``repr`` writes them (as :func:`json.dumps` does), so they read back exactly."""
    out: list[str] = []
    symbols = _Symbols()
    for position, hg in enumerate(graphs):
        sid = position if hg.sentence_id is None else int(hg.sentence_id)
        rows = kbest_rows(hg).tolist()
        heads = [f'{{"id": {sid}'] * len(rows)
        if hg.metadata.get(TEXT, True):
            texts = symbols.texts(hg, rows)
            heads = [f'{head}, "hyp": {text}' for head, text in zip(heads, texts, strict=True)]
        names = symbols.feature_names(hg.feature_space)
        matrix = hg.features
        indptr, columns, data = matrix.indptr.tolist(), matrix.indices.tolist(), matrix.data.tolist()
        tails = []
        for e in rows:
            pairs = ", ".join(
                f"{names[c]}: {v!r}"
                for c, v in zip(columns[indptr[e] : indptr[e + 1]], data[indptr[e] : indptr[e + 1]], strict=True)
            )
            tails.append(f', "features": {{{pairs}}}')
        if hg.edge_scores is not None:
            quoted = [json.dumps(n, ensure_ascii=False) for n in hg.edge_scores.names]
            values = hg.edge_scores.values[rows].tolist()
            tails = [
                f'{tail}, "scores": {{{", ".join(f"{n}: {v!r}" for n, v in zip(quoted, row, strict=True))}}}'
                for tail, row in zip(tails, values, strict=True)
            ]
        totals = hg.metadata.get("totals")
        if totals is not None:
            tails = [
                f'{tail}, "total": {float(totals[k])!r}' if k < len(totals) else tail for k, tail in enumerate(tails)
            ]
        out.extend(f"{head}{tail}}}\n" for head, tail in zip(heads, tails, strict=True))
    return out


class _Symbols:
    """Words and feature names as JSON strings, made once per symbol (words checked once)."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.checked = np.zeros(0, np.bool_)
        self.vocabulary: Vocabulary | None = None
        self.names: list[str] = []
        self.space: FeatureSpace | None = None

    def texts(self, hg: Hypergraph, rows: list[int]) -> list[str]:
        """The ``"hyp"`` JSON strings of edges ``rows``: their words joined by spaces."""
        if hg.vocabulary is not self.vocabulary or len(self.words) != len(hg.vocabulary):
            self.vocabulary, self.words = hg.vocabulary, list(hg.vocabulary.names)
            self.checked = np.zeros(len(self.words), np.bool_)
        offsets = hg.target_offsets.tolist()
        is_word = hg.target >= 0
        ids = hg.target[is_word]
        used = np.unique(ids)
        for t in used[~self.checked[used]].tolist():
            check_word(self.words[t], "JSONL")
        self.checked[used] = True
        before = np.concatenate(([0], np.cumsum(is_word))).tolist()
        words = [self.words[t] for t in ids.tolist()]
        return [
            json.dumps(" ".join(words[before[offsets[e]] : before[offsets[e + 1]]]), ensure_ascii=False) for e in rows
        ]

    def feature_names(self, space: FeatureSpace) -> list[str]:
        if space is not self.space or len(self.names) != len(space):
            self.space, self.names = space, [json.dumps(n, ensure_ascii=False) for n in space.names]
        return self.names


def write(graphs: Sequence[Hypergraph], path: str) -> None:
    """One line per hypothesis (:func:`lines`), written atomically; gzip-compressed when ``path`` ends in
    ``.gz``."""
    write_text(path, "".join(lines(graphs)))


def write_text(path: str, text: str) -> None:
    """``text`` written to ``path`` atomically (:func:`~hypertune.formats.io.write_atomically`), gzip-compressed
    (with a fixed time stamp, so the same text gives the same bytes) when the name ends in ``.gz``."""
    data = text.encode("utf-8")
    write_atomically(path, gzip.compress(data, mtime=0) if path.endswith(".gz") else data)


# ---------------------------------------------------------------------- utility matrices

_NUMBER_TYPES = {int, float}


def utility_matrices(path: str, name: str) -> dict[int, np.ndarray]:
    """Each sentence id's ``k x k`` matrix of the given utility ``name`` (``"utilities": {name: [...]}``, one row
    per hypothesis line, the columns the sentence's hypotheses in file order), as float64. A light pass with the
    json module over the lines (the compiled reader skips the key); every line needs the row, a list of ``k``
    finite numbers, ``k`` the number of lines of its id. Errors name the file and line."""
    data = read_bytes(path, "JSONL file")
    rows: dict[int, list[tuple[int, list | None]]] = {}
    any_row = False
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            raise InputError("invalid JSON", path, number) from None
        sid = obj.get("id") if isinstance(obj, dict) else None
        if type(sid) is not int or sid < 0:
            raise InputError('expected a JSON object with "id", a non-negative integer', path, number)
        row = _utility_row(obj.get("utilities"), name, path, number)
        any_row |= row is not None
        rows.setdefault(sid, []).append((number, row))
    if not any_row:
        raise InputError(f'no "utilities" in the file (expected "utilities": {{"{name}": [u(e, e\'_0), ...]}} '
                         "on every line)", path)  # fmt: skip
    matrices = {}
    for sid, entries in rows.items():
        k = len(entries)
        for number, row in entries:
            if row is None:
                raise InputError(f'no "utilities" (other lines have them: give {name!r} on every line)', path, number)
            if len(row) != k:
                raise InputError(f"utility {name!r} has {len(row)} value(s), expected {k} (one per hypothesis of "
                                 f"sentence {sid}, in file order)", path, number)  # fmt: skip
        matrices[sid] = np.array([row for _, row in entries], dtype=np.float64).reshape(k, k)
    return matrices


def _utility_row(utilities: object, name: str, path: str, number: int) -> list | None:
    """The checked row ``utilities[name]`` of one line (``None`` when the line has no ``"utilities"``)."""
    if utilities is None:
        return None
    if not isinstance(utilities, dict):
        raise InputError(f'"utilities" must be an object of name: [numbers], got {_shown(json.dumps(utilities))}',
                         path, number)  # fmt: skip
    if name not in utilities:
        given = ", ".join(map(repr, utilities)) or "none"
        raise InputError(f"no utility {name!r} (this line has {given})", path, number)
    row = utilities[name]
    if not isinstance(row, list) or not set(map(type, row)) <= _NUMBER_TYPES:
        raise InputError(f"utility {name!r} must be a list of numbers, got {_shown(json.dumps(row))}", path, number)
    try:
        finite = bool(np.isfinite(np.asarray(row, dtype=np.float64)).all())
    except OverflowError:  # an integer beyond float64
        finite = False
    if not finite:
        raise InputError(f"utility {name!r}: values must be finite", path, number)
    return row


FORMAT = register(
    GraphFormat("jsonl", "JSONL k-best lists: one hypothesis a line (id, hyp, features, scores)", sniff, read, write),
    before="cdec-json",
)

__all__ = ["FORMAT", "TEXT", "kbest_rows", "lines", "parse", "read", "sniff", "write", "write_text"]
