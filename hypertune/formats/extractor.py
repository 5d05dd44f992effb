"""Moses ``extractor`` output: FEATSTAT and SCORESTAT text files (hypotheses without strings).

::

    FEATURES_TXT_BEGIN_0 <sid> <n> <dims> <name_1> ... <name_dims>
    <dims numbers> [name=value ...]          (n lines: one per hypothesis)
    FEATURES_TXT_END_0

    SCORES_TXT_BEGIN_0 <sid> <n> <size> <metric>
    <size numbers>                           (n lines; for BLEU: m1 c1 m2 c2 m3 c3 m4 c4 reflen)
    SCORES_TXT_END_0

Every block becomes a k-best lattice whose hypothesis edges have empty targets; feature names are made
canonical (Moses writes ``lm_0`` even for a one-component feature: that is ``lm``, as in n-best lists
and weights files); the block's ``sid`` is the graph's ``sentence_id``. With a SCORESTAT file the
statistics go to ``Hypergraph.edge_stats``: a float64 matrix with one row per edge (row 0, the start
axiom, is zeros; row ``i + 1`` is hypothesis ``i``) and the SCORESTAT columns;
``metadata["stats_names"]`` is the metric named in the header (e.g. ``"BLEU"``).
Reading a FEATSTAT file picks up the SCORESTAT file next to it (``FEATSTAT`` -> ``SCORESTAT`` or
``features`` -> ``scores`` in the file name) when it exists.

The reader is one compiled pass over the file's bytes (:mod:`hypertune.formats._scan`): lines and tokens
split as ``str.split("\n")`` and ``str.split()`` split them, header numbers read as ``int()`` reads them,
values equal ``float()`` of their text, and the first bad line stops it with an :class:`InputError`
naming the line.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

import numba
import numpy as np
import scipy.sparse as sp

from hypertune.arrays import offsets_from_counts
from hypertune.compiled import helper_jit
from hypertune.errors import GraphError, InputError
from hypertune.formats._common import collapse_single_components, parse_int
from hypertune.formats._scan import (
    NO_DIGITS,
    TABLE_FULL,
    StringTable,
    fail,
    flagged_floats,
    intern,
    located,
    new_error,
    new_string_table,
    next_token,
    parse_decimal,
    parse_integer,
    read_bytes,
    run_scan,
    same_bytes,
    scan_error,
    string_at,
    text_bounds,
    uncounted_jit,
    unicode_digit,
    unicode_digits,
)
from hypertune.formats.kbest_batch import KbestBatch
from hypertune.formats.registry import GraphFormat, SentenceIds, describe_sentence_ids, register
from hypertune.hypergraph import Hypergraph, KbestLists, kbest_lattices
from hypertune.symbols import FeatureSpace, Vocabulary

_BEGIN = re.compile(r"^(FEATURES|SCORES)_TXT_BEGIN_(\d+)$")

_jit = numba.njit(cache=True, nogil=True)
_inline = helper_jit  # not inline="always": see hypertune.compiled.helper_jit


def read_featstat(
    path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, scorestat: str | None = None
) -> list[Hypergraph]:
    """A FEATSTAT file (with the statistics of ``scorestat`` when given, paired by sentence id)."""
    read = _read_featstat(path, feature_space, vocabulary, scorestat, batch=False)
    assert isinstance(read, list)
    return read


def read_featstat_batch(
    path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, scorestat: str | None = None
) -> list[Hypergraph] | KbestBatch:
    """:func:`read_featstat` as one :class:`~hypertune.formats.kbest_batch.KbestBatch` (no graph made) when the
    file's features are dense (one header of names for every block, no sparse ``name=value`` features, the
    feature space's columns in order) and every block's statistics have the same columns; otherwise the
    graphs :func:`read_featstat` reads. The file's text is let go before the batch's arrays are made."""
    return _read_featstat(path, feature_space, vocabulary, scorestat, batch=True)


def read_featstat_input(
    path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, scorestat: str | None = None
) -> tuple[list[Hypergraph] | KbestBatch, SentenceIds]:
    """A FEATSTAT file as a tuning command's only input: :func:`read_featstat_batch` and where its sentence
    ids come from (:func:`~hypertune.formats.registry.describe_sentence_ids`; a batch of several lists: the
    file's contents, as the blocks' ``sid`` say, without making a graph)."""
    read = read_featstat_batch(path, feature_space, vocabulary, scorestat)
    if isinstance(read, KbestBatch) and len(read) > 1:
        return read, SentenceIds((), (), True)
    return read, describe_sentence_ids([(path, read)])


def _read_featstat(
    path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, scorestat: str | None, batch: bool
) -> list[Hypergraph] | KbestBatch:
    scores, where = None, {}
    if scorestat is not None:
        scores = _File(scorestat, "SCORES")
        problems = list(scores.problems)
        for b, sid in enumerate(scores.sids):
            if sid in where:
                problems.append((scores.block_end(b), scores.at_header(b, f"sentence {sid} appears twice")))
                break
            where[sid] = b
        _raise_first(problems)
        scores.keep_statistics()  # its rows copied out, its pass's arrays let go before the FEATSTAT pass
    feats = _File(path, "FEATURES")
    problems = list(feats.problems)
    seen: set[int] = set()
    counts = feats.counts()
    rows = scores.counts() if scores is not None else []
    for b, sid in enumerate(feats.sids):
        message = None
        if sid in seen:
            message = f"sentence {sid} appears twice"
        elif scores is not None:
            if sid not in where:
                message = f"sentence {sid} has no statistics in {scorestat}"
            elif counts[b] != rows[where[sid]]:
                message = (
                    f"sentence {sid}: {counts[b]} hypotheses but {rows[where[sid]]} rows of statistics in {scorestat}"
                )
        if message is not None:
            problems.append((feats.block_end(b), feats.at_header(b, message)))
            break
        seen.add(sid)
    _raise_first(problems)
    if scores is not None and len(seen) < len(where):
        sid = min(set(where) - seen)
        raise scores.at_header(where[sid], f"sentence {sid} has statistics but no features in {path}")
    if not feats.sids:
        raise InputError("no FEATURES_TXT_BEGIN_0 block in the file", path, 1)
    metadata, stats, per_graph = None, None, None
    if scores is not None:
        paired = [where[sid] for sid in feats.sids]
        metric = scores.metrics()
        metadata = [{"stats_names": metric[m]} for m in paired]
        stats, per_graph = scores.statistics(paired)
        del scores  # its text and arrays: the statistics are copied out
    if batch and per_graph is None:
        dense = _dense_values(feats, feature_space)
        if dense is not None:
            return KbestBatch(
                feats.list_offsets(),
                (feature_space, vocabulary),
                dense,
                stats=stats,
                widths=np.full(len(feats.sids), dense.shape[1], np.int64),
                sentence_ids=feats.sids,
                metadata=metadata,
            )
    widths, features = _feature_matrix(feats, feature_space)
    try:
        graphs = kbest_lattices(
            KbestLists(
                feats.list_offsets(), np.zeros(0, np.int64), np.zeros(int(feats.out.sizes[1]) + 1, np.int64), features
            ),
            feature_space,
            vocabulary,
            widths=widths,
            sentence_ids=feats.sids,
            metadata=metadata,
            hypothesis_stats=stats,
        )
    except GraphError as error:  # a name repeated on a line whose values add up to infinity
        raise feats.located_hypothesis(error) from None
    _set_stats(graphs, per_graph)
    return graphs


def read_scorestat(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """SCORESTAT alone: k-best lattices without features, with ``edge_stats``."""
    scores = _File(path, "SCORES")
    _raise_first(list(scores.problems))
    if not scores.sids:
        raise InputError("no SCORES_TXT_BEGIN_0 block in the file", path, 1)
    hypotheses = int(scores.out.sizes[1])
    metric = scores.metrics()
    stats, per_graph = scores.statistics(list(range(len(scores.sids))))
    graphs = kbest_lattices(
        KbestLists(
            scores.list_offsets(),
            np.zeros(0, np.int64),
            np.zeros(hypotheses + 1, np.int64),
            sp.csr_matrix((hypotheses, len(feature_space)), dtype=np.float64),
        ),
        feature_space,
        vocabulary,
        sentence_ids=scores.sids,
        metadata=[{"stats_names": m} for m in metric],
        hypothesis_stats=stats,
    )
    _set_stats(graphs, per_graph)
    return graphs


def sibling(path: str, kind: str) -> str | None:
    """The SCORESTAT next to a FEATSTAT (kind='SCORES') or the reverse, if it exists."""
    directory, name = os.path.split(path)
    pairs = [("FEATSTAT", "SCORESTAT"), ("features", "scores"), ("FEATURES", "SCORES")]
    for feat, score in pairs:
        old, new = (feat, score) if kind == "SCORES" else (score, feat)
        if old in name:
            candidate = os.path.join(directory, name.replace(old, new))
            if os.path.isfile(candidate):
                return candidate
    return None


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    from hypertune.formats.io import read_head

    if read_head(path, 64).lstrip().startswith("SCORES_TXT_BEGIN"):
        features = sibling(path, "FEATURES")
        if features is None:
            return read_scorestat(path, feature_space, vocabulary)
        return read_featstat(features, feature_space, vocabulary, path)
    return read_featstat(path, feature_space, vocabulary, sibling(path, "SCORES"))


def sniff(head: str) -> bool:
    return head.lstrip().startswith(("FEATURES_TXT_BEGIN_", "SCORES_TXT_BEGIN_"))


# ---------------------------------------------------------------------- the compiled scan


class _Scanned(NamedTuple):
    """What one compiled pass over a FEATSTAT or SCORESTAT file fills (sized by the caller from upper
    bounds).

    Per block (``blocks``, one row each, see the ``_B_*`` columns): where its header line starts and ends,
    where the digits after ``_TXT_BEGIN_`` are, the id of its names (FEATURES) or metric (SCORES) text in
    the header table, its first hypothesis and first value, where its END line ends, and how many sparse
    names the name table held after it; ``numbers``: sid, number of hypotheses and of columns. Per
    hypothesis: how many values it has. Per value: its value and ``-(k + 1)`` for dense column ``k`` or
    the id of its sparse name. ``flagged`` lists the values the exact fast path left to ``float()``:
    (value index, start, end, name id or ``-(k + 1)``). ``sizes`` = complete blocks, hypotheses, values,
    flagged, and the byte where the next block is looked for (where a scan resumes). ``error`` = code
    (0: none), start and end byte of the offending text, and a number the message needs."""

    blocks: np.ndarray
    numbers: np.ndarray
    value_counts: np.ndarray
    features: np.ndarray
    values: np.ndarray
    flagged: np.ndarray
    sizes: np.ndarray
    error: np.ndarray


# columns of _Scanned.blocks
_B_LINE, _B_LINE_END, _B_SUFFIX, _B_SUFFIX_END, _B_TEXT, _B_HYPOTHESIS, _B_VALUE, _B_END, _B_NAMES = range(9)
# error codes of the scan: a header the compiled pass does not take (Python reads it: an error, or numbers
# outside the fast path), too few hypotheses, a wrong number of fields, a missing END line
_HEADER, _COUNT, _FIELDS, _END = range(1, 5)
_LARGEST = 1 << 62  # larger header numbers reach the scan as this (Python keeps the sid; larger counts always fail)

_FEATURES_BEGIN = np.frombuffer(b"FEATURES_TXT_BEGIN_", np.uint8).copy()
_SCORES_BEGIN = np.frombuffer(b"SCORES_TXT_BEGIN_", np.uint8).copy()
_FEATURES_END = np.frombuffer(b"FEATURES_TXT_END_", np.uint8).copy()
_SCORES_END = np.frombuffer(b"SCORES_TXT_END_", np.uint8).copy()
_END_MARK = np.frombuffer(b"_TXT_END_", np.uint8).copy()
_EXACT_POWERS = np.array([10.0**k for k in range(16)])  # 1e0 .. 1e15, exact doubles (as in _scan)


@_inline
def _has_prefix(buf, start, end, prefix) -> bool:  # pragma: no cover - compiled
    if end - start < prefix.size:
        return False
    for k in range(prefix.size):
        if buf[start + k] != prefix[k]:
            return False
    return True


@_inline
def _begin(buf, start, end, digits) -> int:  # pragma: no cover - compiled
    """1 when ``buf[start:end]`` is ``FEATURES_TXT_BEGIN_<digits>``, 2 for ``SCORES_TXT_BEGIN_<digits>``,
    else 0 (``<digits>`` as the regular expression ``\\d+`` takes them: Unicode decimal digits)."""
    if end - start > 19 and _has_prefix(buf, start, end, _FEATURES_BEGIN):
        kind, j = 1, start + 19
    elif end - start > 17 and _has_prefix(buf, start, end, _SCORES_BEGIN):
        kind, j = 2, start + 17
    else:
        return 0
    while j < end:
        if buf[j] >= 48 and buf[j] <= 57:
            j += 1
            continue
        if buf[j] < 0xC0:
            return 0
        digit, width = unicode_digit(buf, j, end, digits)
        if digit < 0:
            return 0
        j += width
    return kind


@_inline
def _line_end(buf, pos, n) -> tuple[int, bool]:  # pragma: no cover - compiled
    """Where the line at ``pos`` ends, and whether ``_T`` occurs in it (then it may hold ``_TXT_END_``)."""
    marked = False
    while pos < n and buf[pos] != 10:
        if buf[pos] == 95 and pos + 1 < n and buf[pos + 1] == 84:
            marked = True
        pos += 1
    return pos, marked


@_inline
def _has_end_mark(buf, start, end) -> bool:  # pragma: no cover - compiled
    """Whether ``_TXT_END_`` occurs in ``buf[start:end]``."""
    for j in range(start, end - 8):
        if buf[j] == 95 and _has_prefix(buf, j, end, _END_MARK):
            return True
    return False


@_inline
def _last_equals(buf, start, end) -> int:  # pragma: no cover - compiled
    """Where the last ``=`` of ``buf[start:end]`` is, or -1."""
    for j in range(end - 1, start - 1, -1):
        if buf[j] == 61:
            return j
    return -1


@_inline
def _tokens(buf, start, end) -> int:  # pragma: no cover - compiled
    count = 0
    while True:
        s, e = next_token(buf, start, end, False)
        if s == end:
            return count
        count += 1
        start = e


@_inline
def _number_token(buf, j, end):  # pragma: no cover - compiled
    """The next token at or after ``j`` and its value: ``next_token`` and ``parse_decimal`` in one pass for
    the common ``-ddd.ddd`` (at most 15 digits) after spaces, computed as ``parse_decimal`` computes it;
    anything else through those two."""
    while j < end and buf[j] == 32:
        j += 1
    start = j
    negative = j < end and buf[j] == 45
    if negative:
        j += 1
    significand = 0
    digits = 0
    fraction = 0
    dot = False
    while j < end:
        c = np.int64(buf[j])
        if c >= 48 and c <= 57:
            significand = significand * 10 + (c - 48)
            digits += 1
            if dot:
                fraction += 1
        elif c == 46 and not dot:
            dot = True
        else:
            break
        j += 1
    if digits > 0 and digits <= 15 and (j == end or buf[j] == 32):
        x = float(significand)
        x = x * _EXACT_POWERS[0] if fraction == 0 else x / _EXACT_POWERS[fraction]
        return start, j, True, -x if negative else x
    s, e = next_token(buf, start, end, False)
    exact, value = parse_decimal(buf, s, e)
    return s, e, exact, value


@_inline
def _flag(out, f, start, end, name):  # pragma: no cover - compiled
    """Leave value ``f`` (the text ``buf[start:end]``) to ``float()``."""
    k = out.sizes[3]
    out.flagged[k, 0], out.flagged[k, 1], out.flagged[k, 2], out.flagged[k, 3] = f, start, end, name
    out.sizes[3] += 1


@_inline
def _row(buf, out, names, line, end, columns, features):  # pragma: no cover - compiled
    """One hypothesis line ``buf[line:end]``: ``columns`` numbers, then (FEATSTAT) sparse ``name=value``
    tokens, appended to ``out``. Returns an error code (0: none)."""
    sizes = out.sizes
    f = sizes[2]  # the next value (kept here in the loop, in sizes[2] at the end of the line)
    codes, values = out.features, out.values
    k = 0
    j = line
    while True:
        if k < columns:
            s, e, exact, value = _number_token(buf, j, end)
            if s == end:
                break
            j = e
            if not exact:  # a number with "=" is never exact
                if _last_equals(buf, s, e) >= 0:
                    return fail(out.error, _FIELDS, line, end, _tokens(buf, line, end))
                _flag(out, f, s, e, -(k + 1))
            codes[f] = -(k + 1)
            values[f] = value
        else:
            s, e = next_token(buf, j, end, False)
            if s == end:
                break
            j = e
            q = _last_equals(buf, s, e)
            if not features or q <= s:
                return fail(out.error, _FIELDS, s, end, _tokens(buf, line, end))
            name = intern(names, buf, s, q)
            if name < 0:
                return TABLE_FULL
            exact, value = parse_decimal(buf, q + 1, e)
            if not exact:
                _flag(out, f, q + 1, e, name)
            codes[f] = name
            values[f] = value
        f += 1
        k += 1
    if k < columns:
        return fail(out.error, _FIELDS, line, end, k)
    sizes[2] = f
    out.value_counts[sizes[1]] = k
    sizes[1] += 1
    return 0


@_inline
def _end_line(buf, blocks, b, line, end, end_prefix) -> bool:  # pragma: no cover - compiled
    """Whether ``buf[line:end]`` is block ``b``'s END line (``..._TXT_END_`` and the BEGIN line's suffix)."""
    s, e = next_token(buf, line, end, False)
    suffix = blocks[b, _B_SUFFIX_END] - blocks[b, _B_SUFFIX]
    return (
        e - s == end_prefix.size + suffix
        and _has_prefix(buf, s, e, end_prefix)
        and same_bytes(buf, s + end_prefix.size, e, blocks[b, _B_SUFFIX])
        and next_token(buf, e, end, False)[0] == end
    )


@uncounted_jit
def _scan(buf, out, names, texts, features, digits, given):  # pragma: no cover - compiled
    """The blocks from byte ``out.sizes[4]`` on (module docstring); blank lines between blocks are
    skipped. ``given`` = (1, sid, count, columns) hands in the numbers of the next header (read by Python),
    else (0, ...). Stops at the first error (``out.error``) or at a header to hand to Python (``_HEADER``)."""
    n = buf.size
    sizes = out.sizes
    blocks = out.blocks
    wanted = 1 if features else 2
    begin = 19 if features else 17
    end_prefix = _FEATURES_END if features else _SCORES_END
    pos = sizes[4]
    while pos <= n:
        line = pos
        end = _line_end(buf, pos, n)[0]
        pos = end + 1
        s, e = next_token(buf, line, end, False)
        if s == end:
            continue
        if given[0] == 0 and _begin(buf, s, e, digits) != wanted:
            return fail(out.error, _HEADER, line, end)
        s1, e1 = next_token(buf, e, end, False)
        s2, e2 = next_token(buf, e1, end, False)
        s3, e3 = next_token(buf, e2, end, False)
        if given[0] == 1:
            given[0] = 0
            sid, count, columns = given[1], given[2], given[3]
        else:
            if s3 == end:
                return fail(out.error, _HEADER, line, end)
            ok1, sid = parse_integer(buf, s1, e1)
            ok2, count = parse_integer(buf, s2, e2)
            ok3, columns = parse_integer(buf, s3, e3)
            if not (ok1 and ok2 and ok3) or sid < 0 or count < 1 or columns < 0:
                return fail(out.error, _HEADER, line, end)
        first = last = end
        extra = 0
        j = e3
        while True:
            t, u = next_token(buf, j, end, False)
            if t == end:
                break
            if extra == 0:
                first = t
            last = u
            extra += 1
            j = u
        if features and extra != columns:
            return fail(out.error, _HEADER, line, end)
        text = intern(texts, buf, first, last)
        if text < 0:
            return TABLE_FULL
        b = sizes[0]
        blocks[b, _B_LINE], blocks[b, _B_LINE_END], blocks[b, _B_SUFFIX], blocks[b, _B_SUFFIX_END] = (
            line,
            end,
            s + begin,
            e,
        )
        blocks[b, _B_TEXT], blocks[b, _B_HYPOTHESIS], blocks[b, _B_VALUE] = text, sizes[1], sizes[2]
        out.numbers[b, 0], out.numbers[b, 1], out.numbers[b, 2] = sid, count, columns
        for r in range(count):
            if pos > n:
                return fail(out.error, _COUNT, n + 1, n + 1, r)
            line = pos
            end, marked = _line_end(buf, pos, n)
            s, e = next_token(buf, line, end, False)
            if s == end or _begin(buf, s, e, digits) != 0 or (marked and _has_end_mark(buf, line, end)):
                return fail(out.error, _COUNT, line, end, r)
            pos = end + 1
            code = _row(buf, out, names, line, end, columns, features)
            if code:
                return code
        if pos > n:
            return fail(out.error, _END, n + 1, n + 1)
        line = pos
        end = _line_end(buf, pos, n)[0]
        if not _end_line(buf, blocks, b, line, end, end_prefix):
            return fail(out.error, _END, line, end)
        pos = end + 1
        blocks[b, _B_END], blocks[b, _B_NAMES] = end, names.used[0]
        sizes[0] += 1
        sizes[4] = pos
    return 0


# ---------------------------------------------------------------------- from the scan to graphs


def _header(text: str, kind: str, path: str, line: int) -> tuple[int, int, int]:
    """(sid, hypotheses, columns) of a header line the compiled pass left to Python: its error, or numbers
    only ``int()`` reads (``1_000``, other scripts' digits, more than 18 digits)."""
    fields = text.split()
    match = _BEGIN.match(fields[0])
    if not match or match.group(1) != kind:
        raise InputError(f"expected '{kind}_TXT_BEGIN_0 <sid> <n> <dims> ...', got {text[:40]!r}", path, line)
    if len(fields) < 4:
        raise InputError(f"expected '{fields[0]} <sid> <n> <dims> ...'", path, line)
    sid = parse_int(fields[1], "the sentence id", path, line)
    count = parse_int(fields[2], "the number of hypotheses", path, line, minimum=1)
    dims = parse_int(fields[3], "the number of columns", path, line)
    if kind == "FEATURES" and len(fields) - 4 != dims:
        raise InputError(f"the header announces {dims} features but names {len(fields) - 4}", path, line)
    return sid, count, dims


def _raise_first(problems: list[tuple[int, InputError]]) -> None:
    """Raise the problem found first in file order (the smallest key), if any."""
    if problems:
        raise min(problems, key=lambda p: p[0])[1]  # the first of equal keys


_WHAT = {"FEATURES": "FEATSTAT file", "SCORES": "SCORESTAT file"}
_MESSAGES = {
    _COUNT: "sentence {sid}: expected {count} hypotheses, got {number}",
    _FIELDS: "sentence {sid}: expected {columns} numbers, got {number} fields",
    _END: "sentence {sid}: expected {kind}_TXT_END_{suffix} after {count} hypotheses",
}


class _Pass(NamedTuple):
    """One try of the compiled pass over a file: its arrays, the numbers of the headers Python read, and
    the problem of a header Python refused."""

    out: _Scanned
    given: dict[int, tuple[int, int, int]]
    problems: list[tuple[int, InputError]]


def _arrays(lines: int, tokens: int) -> _Scanned:
    """The arrays of a pass over a file of at most ``lines`` lines and ``tokens`` tokens."""
    return _Scanned(
        blocks=np.zeros((lines, 9), np.int64),
        numbers=np.zeros((lines, 3), np.int64),
        value_counts=np.zeros(lines, np.int64),
        features=np.empty(tokens, np.int32),  # codes: a name's table id, or -(column + 1)
        values=np.empty(tokens, np.float64),
        flagged=np.empty((tokens, 4), np.int64),
        sizes=np.zeros(5, np.int64),
        error=new_error(),
    )


class _File:
    """One FEATSTAT (``kind`` "FEATURES") or SCORESTAT ("SCORES") file after the compiled pass: its complete
    blocks, and ``problems``, (key, error) pairs of which the reader raises the one of smallest key (a byte
    offset, or for a block-level check the end of the block): the error the line-by-line reading meets
    first."""

    def __init__(self, path: str, kind: str) -> None:
        self.path, self.kind = path, kind
        self.kept: tuple[np.ndarray | None, list[np.ndarray] | None] | None = None  # keep_statistics
        self.data = data = read_bytes(path, _WHAT[kind])
        self.buf = np.frombuffer(data, dtype=np.uint8)
        unusual = not data.isascii() and re.search(rb"_TXT_BEGIN_[0-9]*[\x80-\xff]", data)
        self.digits = unicode_digits() if unusual else NO_DIGITS
        lines, tokens = text_bounds(self.buf)
        state, (self.names, self.texts), code = run_scan(
            self._scan, lambda _: _Pass(_arrays(lines, tokens), {}, []), (new_string_table, new_string_table), (256, 64)
        )
        self.out, self.given = out, given = state.out, state.given
        complete = int(out.sizes[0])
        sids = out.numbers[:complete, 0].tolist()
        for b, numbers in given.items():
            if b < complete:
                sids[b] = numbers[0]
        self.sids: list[int] = sids
        # the scan's error first: on a tie (a line that starts with a bad value and has too few fields) it wins
        self.problems = state.problems or ([self._scan_error()] if code else [])
        self.problems += self._flagged()

    def _scan(self, state: _Pass, names: StringTable, texts: StringTable) -> int:
        """The compiled pass, handed the numbers of every header it leaves to Python (:func:`_header`)."""
        out, data = state.out, self.data
        handed = np.zeros(4, np.int64)
        while True:
            code = int(_scan(self.buf, out, names, texts, self.kind == "FEATURES", self.digits, handed))
            if code != _HEADER:
                return code
            start, end = int(out.error[1]), int(out.error[2])
            text = data[start:end].decode("utf-8").strip()
            try:
                numbers = _header(text, self.kind, self.path, data.count(b"\n", 0, start) + 1)
            except InputError as error:
                state.problems.append((start, error))
                return code
            state.given[int(out.sizes[0])] = numbers
            handed[:] = (1, *(min(x, _LARGEST) for x in numbers))
            out.error[:] = 0

    def _flagged(self) -> list[tuple[int, InputError]]:
        """``float()`` of the values the compiled pass left; the first bad one as a located error."""
        out, data = self.out, self.data
        index, starts, ends, name = out.flagged[: out.sizes[3]].T
        values, bad = flagged_floats(data, starts, ends)
        out.values[index] = values
        if bad is None:
            return []
        k, start = int(name[bad.row]), int(starts[bad.row])
        what = f"column {-k - 1}" if k < 0 else string_at(data, self.names, k)
        problem = f"expected a number for {what}" if bad.refused else f"{what} must be finite"
        message = f"{problem}, got {bad.text!r}"
        return [(start, located(data, start, message, self.path))]

    def _scan_error(self) -> tuple[int, InputError]:
        out, data = self.out, self.data
        b = int(out.sizes[0])
        sid, count, columns = self.given.get(b) or out.numbers[b].tolist()
        suffix = data[out.blocks[b, _B_SUFFIX] : out.blocks[b, _B_SUFFIX_END]].decode("utf-8")
        fields = {"sid": sid, "count": count, "columns": columns, "kind": self.kind, "suffix": suffix}
        return int(out.error[1]), scan_error(data, out.error, _MESSAGES, self.path, ("number",), **fields)

    def counts(self) -> list[int]:
        """The number of hypotheses of every complete block."""
        return self.out.numbers[: len(self.sids), 1].tolist()

    def block_end(self, b: int) -> int:
        return int(self.out.blocks[b, _B_END])

    def at_header(self, b: int, message: str) -> InputError:
        return located(self.data, int(self.out.blocks[b, _B_LINE]), message, self.path)

    def list_offsets(self) -> np.ndarray:
        return offsets_from_counts(self.out.numbers[: len(self.sids), 1])

    def located_hypothesis(self, error: GraphError) -> InputError:
        """``error`` at the line of the hypothesis it names (``error.item``), else at the file."""
        if error.item is None:
            return InputError(str(error), self.path)
        offsets = self.list_offsets()
        block = int(np.searchsorted(offsets, error.item, "right")) - 1
        header = self.data.count(b"\n", 0, int(self.out.blocks[block, _B_LINE])) + 1
        return InputError(str(error).split(": ", 1)[1], self.path, header + 1 + error.item - int(offsets[block]))

    def texts_of_blocks(self) -> list[str]:
        """The header text after the numbers (names or metric) of every block, as its tokens joined by spaces."""
        cache: dict[int, str] = {}
        out = []
        for k in self.out.blocks[: len(self.sids), _B_TEXT].tolist():
            text = cache.get(k)
            if text is None:
                text = cache[k] = " ".join(string_at(self.data, self.texts, k).split())
            out.append(text)
        return out

    def metrics(self) -> list[str]:
        return self.texts_of_blocks()

    def keep_statistics(self) -> None:
        """Keep the rows of every block (:meth:`statistics` in file order) and let the pass's per-value
        arrays go: :meth:`statistics` then takes its rows from them."""
        self.kept = self.statistics(list(range(len(self.sids))), view=True)
        out = self.out  # the values stay only as far as the rows are a view of them
        self.out = out._replace(values=np.zeros(0, out.values.dtype), features=np.zeros(0, out.features.dtype),
                                flagged=np.zeros((0, out.flagged.shape[1]), out.flagged.dtype))  # fmt: skip

    def statistics(self, paired: list[int], view: bool = False) -> tuple[np.ndarray | None, list[np.ndarray] | None]:
        """The SCORESTAT rows of blocks ``paired`` in that order: one matrix when they have the same number
        of columns, else a matrix per block (``view``: the pass's values themselves when they lie in that
        order, one block after another, rather than a copy)."""
        kept = self.kept
        if kept is not None:
            table, per_block = kept
            if per_block is not None:
                return None, [per_block[b] for b in paired]
            assert table is not None
            if paired == list(range(len(self.sids))):
                return table, None
            offsets = self.list_offsets()
            index = np.concatenate([np.arange(offsets[b], offsets[b + 1]) for b in paired] + [np.zeros(0, np.int64)])
            return table[index], None
        out = self.out
        paired_array = np.asarray(paired, dtype=np.int64)
        counts = out.numbers[paired_array, 1]
        columns = out.numbers[paired_array, 2]
        starts = out.blocks[paired_array, _B_VALUE]
        values = out.values
        if columns.size and np.all(columns == columns[0]):
            width = int(columns[0])
            if width == 0:
                return np.zeros((int(counts.sum()), 0)), None
            lengths = counts * width
            first = int(starts[0]) if starts.size else 0
            if view and np.array_equal(starts, first + offsets_from_counts(lengths)[:-1]):
                return values[first : first + int(lengths.sum())].reshape(-1, width), None
            index = np.repeat(starts - offsets_from_counts(lengths)[:-1], lengths) + np.arange(int(lengths.sum()))
            return values[index].reshape(-1, width), None
        return None, [
            values[s : s + c * w].reshape(c, w)
            for s, c, w in zip(starts.tolist(), counts.tolist(), columns.tolist(), strict=True)
        ]


def _set_stats(graphs: list[Hypergraph], per_graph: list[np.ndarray] | None) -> None:
    if per_graph is not None:
        for graph, rows in zip(graphs, per_graph, strict=True):
            graph.edge_stats = np.vstack([np.zeros((1, rows.shape[1])), rows])


@_jit
def _columns(codes, value_counts, hypotheses, first, table, sparse):  # pragma: no cover - compiled
    """The feature column of every value: ``sparse[code]`` for a sparse name, else dense column ``k`` of its
    block's names, ``table[first[block] + k]``."""
    out = np.empty(codes.size, np.int64)
    f = h = 0
    for b in range(hypotheses.size):
        base = first[b] - 1
        for _ in range(hypotheses[b]):
            for _ in range(value_counts[h]):
                code = codes[f]
                out[f] = sparse[code] if code >= 0 else table[base - code]
                f += 1
            h += 1
    return out


def _dense_values(feats: _File, feature_space: FeatureSpace) -> np.ndarray | None:
    """The features of every hypothesis as one row-major float64 matrix (a view of the pass's values, the
    file's text let go) when they are dense: one header of names for all blocks, interned as the feature
    space's columns ``0, 1, ...`` in order, and no sparse features; else ``None`` (nothing let go)."""
    out, data = feats.out, feats.data
    blocks = len(feats.sids)
    hypotheses, num_values = int(out.sizes[1]), int(out.sizes[2])
    if int(feats.names.used[0]) or len(feature_space):  # sparse names, or columns interned before this file
        return None
    text_ids = out.blocks[:blocks, _B_TEXT]
    if np.any(text_ids != text_ids[0]):
        return None
    names = collapse_single_components(string_at(data, feats.texts, int(text_ids[0])).split())
    width = len(names)
    if len(set(names)) != width or num_values != hypotheses * width:
        return None
    if np.any(out.value_counts[:hypotheses] != width):
        return None
    if not np.array_equal(feature_space.indices(names), np.arange(width)):
        return None
    feats.data, feats.buf = b"", np.zeros(0, np.uint8)  # the text: no error can be found past this point
    return out.values[:num_values].reshape(hypotheses, width)


def _feature_matrix(feats: _File, feature_space: FeatureSpace) -> tuple[np.ndarray, sp.csr_matrix]:
    """The features of every hypothesis, interned as reading the blocks one by one interns them (a block's
    dense names in header order, then its new sparse names in order of appearance), and every block's
    width (the feature space's size once it was read)."""
    out, data = feats.out, feats.data
    blocks = len(feats.sids)
    hypotheses, num_values = int(out.sizes[1]), int(out.sizes[2])
    text_ids = out.blocks[:blocks, _B_TEXT].tolist()
    name_ends = out.blocks[:blocks, _B_NAMES].tolist()
    dense: dict[int, np.ndarray] = {}
    sparse = np.zeros(int(feats.names.used[0]), np.int64)
    done = 0
    widths = np.empty(blocks, np.int64)
    for b in range(blocks):
        k = text_ids[b]
        if k not in dense:
            canonical = collapse_single_components(string_at(data, feats.texts, k).split())
            dense[k] = feature_space.indices(canonical)
        if name_ends[b] > done:
            sparse[done : name_ends[b]] = feature_space.indices(
                string_at(data, feats.names, i) for i in range(done, name_ends[b])
            )
            done = name_ends[b]
        widths[b] = len(feature_space)
    order = sorted(dense)
    table = np.concatenate([dense[k] for k in order] + [np.zeros(0, np.int64)])
    first = np.zeros(max(order) + 1, np.int64)
    first[order] = offsets_from_counts([dense[k].size for k in order])[:-1]
    value_counts = out.value_counts[:hypotheses]
    columns = _columns(
        out.features[:num_values],
        value_counts,
        out.numbers[:blocks, 1],
        first[out.blocks[:blocks, _B_TEXT]],
        table,
        sparse,
    )
    features = sp.csr_matrix(
        (out.values[:num_values], columns, offsets_from_counts(value_counts)),
        shape=(hypotheses, len(feature_space)),
    )
    return widths, features


FORMAT = register(GraphFormat("moses-extractor", "Moses extractor FEATSTAT/SCORESTAT files", sniff, read))
