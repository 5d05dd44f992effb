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
naming the line. The file is read in pieces of whole blocks (:func:`_pieces`, about :data:`PIECE` bytes), so
its text is never whole in memory: each piece's values go straight to the one array of the file's values
(a dense file's feature block, a SCORESTAT file's statistics), its other arrays are let go with it, and its
errors name the line of the file, the first in the file's order as a reading of the whole file finds it. A
line of nothing but plain numbers (the whole of a file without sparse features) is read in one pass over its
bytes that writes only its values (:func:`_plain_row`); any other line is read token by token (:func:`_row`).
"""

from __future__ import annotations

import functools
import io
import mmap
import os
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple, cast

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
    run_scan,
    same_bytes,
    scan_error,
    string_at,
    text_bounds,
    uncounted_jit,
    unicode_digit,
    unicode_digits,
)
from hypertune.formats.io import open_binary
from hypertune.formats.kbest_batch import KbestBatch
from hypertune.formats.registry import GraphFormat, SentenceIds, describe_sentence_ids, register
from hypertune.formats.sniffing import sniff_extractor as sniff
from hypertune.hypergraph import Hypergraph, KbestLists, kbest_lattices
from hypertune.symbols import FeatureSpace, Vocabulary

_BEGIN = re.compile(r"^(FEATURES|SCORES)_TXT_BEGIN_(\d+)$")

_jit = numba.njit(cache=True, nogil=True)
_inline = helper_jit  # not inline="always": see hypertune.compiled.helper_jit

PIECE = 1 << 20  # bytes of text read at a time (a piece grows to the end of a block: :func:`_pieces`)


def read_featstat(
    path: str,
    feature_space: FeatureSpace,
    vocabulary: Vocabulary,
    scorestat: str | None = None,
    *,
    piece: int = PIECE,
) -> list[Hypergraph]:
    """A FEATSTAT file (with the statistics of ``scorestat`` when given, paired by sentence id); both read
    in pieces of about ``piece`` bytes (:func:`_pieces`)."""
    read = _read_featstat(path, feature_space, vocabulary, scorestat, False, piece)
    assert isinstance(read, list)
    return read


def read_featstat_batch(
    path: str,
    feature_space: FeatureSpace,
    vocabulary: Vocabulary,
    scorestat: str | None = None,
    *,
    piece: int = PIECE,
) -> list[Hypergraph] | KbestBatch:
    """:func:`read_featstat` as one :class:`~hypertune.formats.kbest_batch.KbestBatch` (no graph made) when the
    file's features are dense (one header of names for every block, no sparse ``name=value`` features, the
    feature space's columns in order) and every block's statistics have the same columns; otherwise the
    graphs :func:`read_featstat` reads. The values go straight from each piece of text to the batch's arrays."""
    return _read_featstat(path, feature_space, vocabulary, scorestat, True, piece)


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
    path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, scorestat: str | None, batch: bool, piece: int
) -> list[Hypergraph] | KbestBatch:
    scores, where = None, {}
    if scorestat is not None:
        scores = _Blocks(scorestat, "SCORES", piece)

        def twice(first: int, part: _Piece) -> list[tuple[int, InputError]]:
            for b in range(first, len(scores.sids)):
                sid = scores.sids[b]
                if sid in where:
                    return [(part.block_end(b - first), part.at_header(b - first, f"sentence {sid} appears twice"))]
                where[sid] = b
            return []

        scores.read(twice)
    feats = _Blocks(path, "FEATURES", piece)
    features = _Features(feature_space)
    seen: set[int] = set()
    rows = scores.counts().tolist() if scores is not None else []

    def pairing(first: int, part: _Piece) -> list[tuple[int, InputError]]:
        counts = part.counts()
        for b in range(first, len(feats.sids)):
            sid, message = feats.sids[b], None
            if sid in seen:
                message = f"sentence {sid} appears twice"
            elif scores is not None:
                if sid not in where:
                    message = f"sentence {sid} has no statistics in {scorestat}"
                elif counts[b - first] != rows[where[sid]]:
                    message = (f"sentence {sid}: {counts[b - first]} hypotheses but {rows[where[sid]]} rows of "
                               f"statistics in {scorestat}")  # fmt: skip
            if message is not None:
                return [(part.block_end(b - first), part.at_header(b - first, message))]
            seen.add(sid)
        return []

    feats.read(pairing, features.add)
    if scores is not None and len(seen) < len(where):
        sid = min(set(where) - seen)
        raise scores.at_header(where[sid], f"sentence {sid} has statistics but no features in {path}")
    if not feats.sids:
        raise InputError("no FEATURES_TXT_BEGIN_0 block in the file", path, 1)
    metadata, stats, per_graph = None, None, None
    if scores is not None:
        paired = [where[sid] for sid in feats.sids]
        metric = scores.texts_of_blocks()
        metadata = [{"stats_names": metric[m]} for m in paired]
        stats, per_graph = scores.statistics(paired)
        del scores  # the statistics are the rows of its values (or a copy of them in the features' order)
    values = feats.values.result()
    dense = features.dense(values) if batch and per_graph is None else None
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
    matrix = features.matrix(values)
    try:
        graphs = kbest_lattices(
            KbestLists(feats.list_offsets(), np.zeros(0, np.int64), np.zeros(matrix.shape[0] + 1, np.int64), matrix),
            feature_space,
            vocabulary,
            widths=features.widths(),
            sentence_ids=feats.sids,
            metadata=metadata,
            hypothesis_stats=stats,
        )
    except GraphError as error:  # a name repeated on a line whose values add up to infinity
        raise feats.located_hypothesis(error) from None
    _set_stats(graphs, per_graph)
    return graphs


def read_scorestat(
    path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, *, piece: int = PIECE
) -> list[Hypergraph]:
    """SCORESTAT alone: k-best lattices without features, with ``edge_stats``."""
    scores = _Blocks(path, "SCORES", piece)
    scores.read(lambda first, part: [])
    if not scores.sids:
        raise InputError("no SCORES_TXT_BEGIN_0 block in the file", path, 1)
    hypotheses = int(scores.counts().sum())
    metric = scores.texts_of_blocks()
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


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, *, piece: int = PIECE) -> list[Hypergraph]:
    from hypertune.formats.io import read_head

    if read_head(path, 64).lstrip().startswith("SCORES_TXT_BEGIN"):
        features = sibling(path, "FEATURES")
        if features is None:
            return read_scorestat(path, feature_space, vocabulary, piece=piece)
        return read_featstat(features, feature_space, vocabulary, path, piece=piece)
    return read_featstat(path, feature_space, vocabulary, sibling(path, "SCORES"), piece=piece)


# ---------------------------------------------------------------------- the compiled scan


class _Scanned(NamedTuple):
    """What one compiled pass over a FEATSTAT or SCORESTAT file fills (sized by the caller from upper
    bounds).

    Per block (``blocks``, one row each, see the ``_B_*`` columns): where its header line starts and ends,
    where the digits after ``_TXT_BEGIN_`` are, the id of its names (FEATURES) or metric (SCORES) text in
    the header table, its first hypothesis and first value, where its END line ends, and how many sparse
    names the name table held after it; ``numbers``: sid, number of hypotheses and of columns. Per
    hypothesis: how many values it has. Per value: its value, and for a sparse value (one after a line's dense
    columns) the id of its name (a dense value's column is its place in the line). ``flagged`` lists the values
    the exact fast path left to ``float()``: (value index, start, end, name id or ``-(k + 1)``). ``sizes`` =
    complete blocks, hypotheses, values, flagged, and the byte where the next block is looked for (where a scan
    resumes). ``error`` = code (0: none), start and end byte of the offending text, and a number the message
    needs."""

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
def _plain_number(buf, j, end):  # pragma: no cover - compiled
    """The number ``[-]digits[.digits]`` that starts at ``j``: where it ends, and its value when it has 1 to 15
    digits, exact (the significand over an exact power of ten, as ``parse_decimal`` computes it); NaN otherwise
    (no such text reads as NaN)."""
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
    if digits == 0 or digits > 15:
        return j, np.nan
    x = float(significand)
    if fraction:
        x = x / _EXACT_POWERS[fraction]
    return j, -x if negative else x


@_inline
def _number_token(buf, j, end):  # pragma: no cover - compiled
    """The next token at or after ``j`` and its value: ``next_token`` and ``parse_decimal`` in one pass for
    the common ``-ddd.ddd`` (:func:`_plain_number`) ended by a space or the end; anything else through those
    two."""
    while j < end and buf[j] == 32:
        j += 1
    start = j
    j, x = _plain_number(buf, j, end)
    if x == x and (j == end or buf[j] == 32):
        return start, j, True, x
    s, e = next_token(buf, start, end, False)
    exact, value = parse_decimal(buf, s, e)
    return s, e, exact, value


@_inline
def _plain_row(buf, j, n, values, f, columns):  # pragma: no cover - compiled
    """Where the hypothesis line at ``j`` ends when it is ``columns`` numbers of :func:`_plain_number`,
    separated by spaces (the common line: no sparse feature, nothing to flag or check), with their values
    written to ``values[f:f + columns]``; -1 for any other line, which :func:`_row` then reads from its start."""
    for k in range(columns):
        while j < n and buf[j] == 32:
            j += 1
        j, x = _plain_number(buf, j, n)
        if x != x or (j < n and buf[j] != 32 and buf[j] != 10):
            return -1
        values[f + k] = x
    while j < n and buf[j] == 32:
        j += 1
    return j if j == n or buf[j] == 10 else -1


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
            values[f] = value  # dense column k: its code is its place in the line (see _columns)
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
            if columns:
                end = _plain_row(buf, pos, n, out.values, sizes[2], columns)
                if end >= 0:
                    sizes[2] += columns
                    out.value_counts[sizes[1]] = columns
                    sizes[1] += 1
                    pos = end + 1
                    continue
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
    """One try of the compiled pass over a piece: its arrays, the numbers of the headers Python read, and
    the problem of a header Python refused."""

    out: _Scanned
    given: dict[int, tuple[int, int, int]]
    problems: list[tuple[int, InputError]]


def _arrays(blocks: int, lines: int, tokens: int, values: np.ndarray) -> _Scanned:
    """The arrays of a pass over a piece of at most ``blocks`` blocks, ``lines`` lines and ``tokens`` tokens, its
    values written to ``values`` (room for ``tokens`` of them)."""
    return _Scanned(
        blocks=np.zeros((blocks, 9), np.int64),
        numbers=np.zeros((blocks, 3), np.int64),
        value_counts=np.zeros(lines, np.int64),
        features=np.empty(tokens, np.int32),  # a sparse value's name: its table id (a dense value has none)
        values=values,
        flagged=np.empty((tokens, 4), np.int64),
        sizes=np.zeros(5, np.int64),
        error=new_error(),
    )


def _pieces(path: str, kind: str, size: int) -> Iterator[tuple[bytearray, int, int | None]]:
    """The text of ``path`` as :func:`~hypertune.formats.io.read_bytes` gives it (decompressed, without a
    byte-order mark, UTF-8, line ends ``\\n``), in pieces of whole blocks: about ``size`` bytes read, cut just
    after the last line that starts with ``<kind>_TXT_END_`` (the last line of a block; a line starting so
    anywhere else is an error at that line, so a piece scans as the whole text would up to its end), the last
    piece at the end of the file. With each piece: the bytes read before it and the file's size when it is not
    compressed (else ``None``). The same errors as ``read_bytes``, a piece's UTF-8 error at its byte in
    the file."""
    if size < 1:
        raise ValueError(f"a piece must be at least 1 byte, got {size}")
    what = _WHAT[kind]
    mark = b"\n" + kind.encode() + b"_TXT_END_"
    try:
        stream = open_binary(path)
        plain = path != "-" and isinstance(stream.raw, io.FileIO) and os.path.isfile(path)  # not decompressed
        total = os.path.getsize(path) if plain else None
    except (FileNotFoundError, IsADirectoryError, OSError) as error:
        raise _unreadable(error, path, what) from None
    with stream:
        carry, done, want = b"", 0, size
        while True:
            buf = bytearray(len(carry) + want)
            buf[: len(carry)] = carry
            got = _fill(stream, buf, len(carry), path, what)
            del buf[len(carry) + got :]
            end = got < want  # the end of the file
            cut = len(buf) if end else _cut(buf, mark)
            if cut == 0 and not end:  # no block ends in it: read on, twice as much
                carry, want = bytes(buf), 2 * want
                continue
            carry = bytes(buf[cut:])
            del buf[cut:]
            if not buf.isascii():  # ASCII is UTF-8
                try:
                    buf.decode("utf-8")
                except UnicodeDecodeError as error:
                    at = done + error.start
                    raise InputError(f"not UTF-8 text ({error.reason} at byte {at}); expected a {what}", path) from None
            if buf.find(b"\r") >= 0:
                buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if buf:
                yield buf, done, total
            if end:
                return
            done += cut
            want = size


def _cut(buf: bytearray, mark: bytes) -> int:
    """Where ``buf`` is cut: after the line end of the last line that starts with ``mark[1:]`` and ends in
    ``buf`` (0: none does). Lines end in ``\n``, ``\r\n`` or a lone ``\r``, as ``read_bytes`` reads them; a
    ``\r`` that is ``buf``'s last byte ends no line yet (a ``\n`` may follow it)."""
    body = mark[1:]
    stop = len(buf)
    while True:
        at = buf.rfind(body, 0, stop)
        if at < 0:
            return 0
        stop = at + len(body) - 1  # the next search looks before this one
        if at > 0 and buf[at - 1] not in b"\r\n":
            continue  # not at a line's start (a piece starts at one)
        ends = [i for i in (buf.find(b"\n", at), buf.find(b"\r", at)) if i >= 0]
        if not ends:
            continue
        end = min(ends)
        if buf[end] == 10:
            return end + 1
        if end + 1 < len(buf):
            return end + 2 if buf[end + 1] == 10 else end + 1


def _fill(stream: io.BufferedReader, buf: bytearray, start: int, path: str, what: str) -> int:
    """Read into ``buf[start:]`` until it is full or the file ends; the number of bytes read."""
    got = 0
    with memoryview(buf) as view:
        while start + got < len(buf):
            try:
                n = stream.readinto(view[start + got :])
            except OSError as error:
                raise _unreadable(error, path, what) from None
            if not n:
                break
            got += n
    return got


def _unreadable(error: OSError, path: str, what: str) -> InputError:
    """The error :func:`~hypertune.formats.io.read_bytes` gives for a file it cannot read."""
    if isinstance(error, FileNotFoundError):
        return InputError(f"no such {what}", path)
    if isinstance(error, IsADirectoryError):
        return InputError(f"is a directory, expected a {what}", path)
    return InputError(f"cannot read the {what} ({error.strerror or error})", path)


def _small_pages(size: int, dtype: np.dtype | type) -> np.ndarray:
    """``np.empty(size, dtype)``, but from a mapping of its own when large, which the kernel fills with small
    pages as they are first written. numpy advises huge pages for a large array, and the first write to each
    huge page makes the kernel find (compact, clear) 2 MB at once: for the 190 MB that a 10,000 x 100
    FEATSTAT/SCORESTAT pair gives, 0.1-0.6 s of system time, varying with the machine's memory, against a
    steady 0.15 s in small pages (docs/performance.md)."""
    width = np.dtype(dtype).itemsize
    if size * width < _MAPPED:
        return np.empty(size, dtype)
    return np.frombuffer(mmap.mmap(-1, size * width), dtype)  # unmapped when the last view goes


_MAPPED = 1 << 22  # numpy advises huge pages from 4 MiB on


class _Growing:
    """An array filled piece after piece: made, once a piece has shown how many entries a byte of the file
    gives, as large as the whole file foretells and an eighth more (pages that are never written take no
    memory: :func:`_small_pages`), so that the filled entries are copied once, and only those of the first
    piece; a compressed file (whose size says nothing) doubles it as it fills."""

    def __init__(self, dtype: type) -> None:
        self.array: np.ndarray = np.empty(0, dtype)
        self.size = 0

    def room(self, needed: int, done: int, total: int | None) -> np.ndarray:
        """A view of ``needed`` entries after the filled ones (``done`` bytes of a file of ``total`` read)."""
        want = self.size + needed
        if want > self.array.size:
            guess = self.size * total // done if total and done else 2 * self.array.size
            array = _small_pages(max(want, guess + guess // 8), self.array.dtype)
            array[: self.size] = self.array[: self.size]
            self.array = array
        return self.array[self.size : want]

    def extend(self, values: np.ndarray, done: int, total: int | None) -> None:
        self.room(values.size, done, total)[:] = values
        self.size += values.size

    def result(self) -> np.ndarray:
        """The filled entries (a view)."""
        return self.array[: self.size]


Problems = list[tuple[int, InputError]]


class _Piece:
    """One compiled pass over a piece of a FEATSTAT (``kind`` "FEATURES") or SCORESTAT ("SCORES") file
    (:func:`_pieces`), after ``lines`` lines of the file, its values written to ``room(bound on their number)``:
    its complete blocks,
    and ``problems``, (key, error) pairs of which the reader raises the one of smallest key (a byte offset in
    the piece, or for a block-level check the end of the block): the error the line-by-line reading meets
    first."""

    def __init__(self, data: bytearray, kind: str, path: str, lines: int, room: Callable[[int], np.ndarray]) -> None:
        # the text read in place: a bytearray, whose methods the readers' helpers use are those of bytes
        self.path, self.kind, self.data, self.before = path, kind, cast(bytes, data), lines
        self.buf = np.frombuffer(data, dtype=np.uint8)
        unusual = not data.isascii() and re.search(rb"_TXT_BEGIN_[0-9]*[\x80-\xff]", data)
        self.digits = unicode_digits() if unusual else NO_DIGITS
        lines, tokens = text_bounds(self.buf)
        self.lines = int(lines) - 1  # its newlines
        values = room(int(tokens))
        state, (self.names, self.texts), code = run_scan(
            self._scan,
            lambda _: _Pass(_arrays(lines // 3 + 1, lines, tokens, values), {}, []),  # a block takes 3 lines
            (new_string_table, new_string_table),
            (256, 64),
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
        self.problems = [(key, self._moved(error)) for key, error in self.problems]

    def _moved(self, error: InputError) -> InputError:
        """``error`` (at a line of the piece) at its line in the file."""
        return InputError(error.reason, error.path, None if error.line is None else error.line + self.before)

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

    def _flagged(self) -> Problems:
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

    def counts(self) -> np.ndarray:
        """The number of hypotheses of every complete block."""
        return self.out.numbers[: len(self.sids), 1]

    def block_end(self, b: int) -> int:
        return int(self.out.blocks[b, _B_END])

    def at_header(self, b: int, message: str) -> InputError:
        return self._moved(located(self.data, int(self.out.blocks[b, _B_LINE]), message, self.path))

    def header_lines(self) -> np.ndarray:
        """The line in the file of every complete block's header: a block is its header, its hypotheses and
        its END line; only blank lines lie between blocks."""
        blocks = self.out.blocks[: len(self.sids)]
        starts = blocks[:, _B_LINE]
        after = np.concatenate([np.zeros(1, np.int64), blocks[:-1, _B_END] + 1])  # where each gap begins
        gaps = np.zeros(starts.size, np.int64)
        for b in np.flatnonzero(starts > after).tolist():
            gaps[b] = self.data.count(b"\n", int(after[b]), int(starts[b]))
        lines = gaps + np.concatenate([np.zeros(1, np.int64), self.counts()[:-1] + 2])
        return self.before + 1 + np.cumsum(lines)

    def header_texts(self) -> list[str]:
        """The header text after the numbers (names or metric) of every interned text, in table order."""
        return [string_at(self.data, self.texts, k) for k in range(int(self.texts.used[0]))]


class _Blocks:
    """A FEATSTAT (``kind`` "FEATURES") or SCORESTAT ("SCORES") file read piece by piece (:func:`_pieces`):
    per block its sentence id, hypotheses, columns, header text (``texts[text_ids[b]]``), header line and first
    value; every value in one array (``values``)."""

    def __init__(self, path: str, kind: str, piece: int) -> None:
        self.path, self.kind, self.piece = path, kind, piece
        self.sids: list[int] = []
        self.texts: list[str] = []
        self._text_ids: dict[str, int] = {}
        self._parts: dict[str, list[np.ndarray]] = {"numbers": [], "text": [], "line": [], "first": []}
        self.values = _Growing(np.float64)

    def read(
        self,
        check: Callable[[int, _Piece], Problems],
        take: Callable[[int, _Piece, int, int | None], None] | None = None,
    ) -> None:
        """Every piece: scanned, its blocks added, ``check(first block, piece)`` (block-level problems), then
        ``take(first block, piece, bytes read, file size)``. The first problem of the first piece with one is
        raised once the rest of the text was read (an unreadable or non-UTF-8 file is that error first, as a
        reading of the whole file finds it)."""
        pieces = _pieces(self.path, self.kind, self.piece)
        lines = 0
        for data, done, total in pieces:
            part = _Piece(
                data, self.kind, self.path, lines, functools.partial(self.values.room, done=done, total=total)
            )
            first = len(self.sids)
            self._add(part)
            problems = part.problems + check(first, part)
            if problems:
                for _ in pieces:
                    pass
                _raise_first(problems)
            if take is not None:
                take(first, part, done, total)
            lines += part.lines
            del part, data  # its view of the values, before they grow

    def _add(self, part: _Piece) -> None:
        """The piece's complete blocks (its values are in place)."""
        out = part.out
        blocks = len(part.sids)
        self.sids += part.sids
        local = np.zeros(max(int(part.texts.used[0]), 1), np.int64)  # the piece's text ids -> the file's
        for k, text in enumerate(part.header_texts()):
            local[k] = self._text_ids.setdefault(text, len(self._text_ids))
            if local[k] == len(self.texts):
                self.texts.append(text)
        parts = self._parts
        parts["numbers"].append(out.numbers[:blocks, 1:].copy())
        parts["text"].append(local[out.blocks[:blocks, _B_TEXT]])
        parts["line"].append(part.header_lines())
        parts["first"].append(out.blocks[:blocks, _B_VALUE] + self.values.size)
        self.values.size += int(out.sizes[2])

    def _column(self, name: str, k: int) -> np.ndarray:
        parts = self._parts[name]
        if len(parts) > 1:
            parts[:] = [np.concatenate(parts)]
        return parts[0][:, k] if parts and parts[0].ndim == 2 else (parts[0] if parts else np.zeros(0, np.int64))

    def counts(self) -> np.ndarray:
        """The number of hypotheses of every block."""
        return self._column("numbers", 0)

    def list_offsets(self) -> np.ndarray:
        return offsets_from_counts(self.counts())

    def at_header(self, b: int, message: str) -> InputError:
        return InputError(message, self.path, int(self._column("line", 0)[b]))

    def located_hypothesis(self, error: GraphError) -> InputError:
        """``error`` at the line of the hypothesis it names (``error.item``), else at the file."""
        if error.item is None:
            return InputError(str(error), self.path)
        offsets = self.list_offsets()
        block = int(np.searchsorted(offsets, error.item, "right")) - 1
        header = int(self._column("line", 0)[block])
        return InputError(str(error).split(": ", 1)[1], self.path, header + 1 + error.item - int(offsets[block]))

    def text_ids(self) -> np.ndarray:
        """The id of every block's header text in ``texts``."""
        return self._column("text", 0)

    def texts_of_blocks(self) -> list[str]:
        """The header text after the numbers (names or metric) of every block, as its tokens joined by spaces."""
        joined = [" ".join(text.split()) for text in self.texts]
        return [joined[k] for k in self.text_ids().tolist()]

    def statistics(self, paired: list[int]) -> tuple[np.ndarray | None, list[np.ndarray] | None]:
        """The SCORESTAT rows of blocks ``paired`` in that order: one matrix when they have the same number
        of columns (the values themselves when ``paired`` is every block in order), else a matrix per block."""
        values = self.values.result()
        paired_array = np.asarray(paired, dtype=np.int64)
        counts = self.counts()[paired_array]
        columns = self._column("numbers", 1)[paired_array]
        starts = self._column("first", 0)[paired_array]
        if columns.size and np.all(columns == columns[0]):
            width = int(columns[0])
            if width == 0:
                return np.zeros((int(counts.sum()), 0)), None
            lengths = counts * width
            if np.array_equal(paired_array, np.arange(len(self.sids))):  # the blocks' values one after another
                return values.reshape(-1, width), None
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
def _columns(codes, value_counts, hypotheses, widths, first, table, sparse):  # pragma: no cover - compiled
    """The feature column of every value: the ``k``-th value of a line, for ``k`` below its block's number of
    dense columns (``widths``), is dense column ``k`` of its block's names, ``table[first[block] + k]``; each
    later one is the sparse name ``sparse[codes[value]]``."""
    out = np.empty(codes.size, np.int64)
    f = h = 0
    for b in range(hypotheses.size):
        base = first[b]
        for _ in range(hypotheses[b]):
            for k in range(value_counts[h]):
                out[f] = table[base + k] if k < widths[b] else sparse[codes[f]]
                f += 1
            h += 1
    return out


class _Features:
    """The features of a FEATSTAT file's pieces, interned as reading the blocks one by one interns them (a
    block's dense names in header order, then its new sparse names in order of appearance), with every block's
    width (the feature space's size once it was read). While every block has the same header and no sparse
    features (Moses's extractor without sparse features), only the values are kept (:meth:`dense`); from the
    first other block on, every value's column and every hypothesis's number of values as well (:meth:`matrix`)."""

    def __init__(self, feature_space: FeatureSpace) -> None:
        self.space = feature_space
        self.empty = len(feature_space) == 0  # then a dense file's names are its columns 0, 1, ...
        self.names: dict[str, np.ndarray] = {}  # a header text's dense columns
        self.header: str | None = None  # the header text of every block so far, while they are all dense
        self.hypotheses = 0
        self.columns: _Growing | None = None  # from the first block that is not dense on
        self.value_counts = _Growing(np.int64)
        self.block_widths: list[np.ndarray] = []

    def _dense_columns(self, text: str) -> np.ndarray:
        columns = self.names.get(text)
        if columns is None:
            columns = self.names[text] = self.space.indices(collapse_single_components(text.split()))
        return columns

    def add(self, first: int, part: _Piece, done: int, total: int | None) -> None:
        """The blocks of ``part`` (numbered from ``first`` in the file)."""
        out = part.out
        blocks = len(part.sids)
        hypotheses, num_values = int(out.sizes[1]), int(out.sizes[2])
        texts = part.header_texts()
        text_ids = out.blocks[:blocks, _B_TEXT]
        if self.header is None and first == 0 and blocks:
            self.header = texts[int(text_ids[0])]
        same = blocks == 0 or (len(texts) == 1 and texts[0] == self.header) or bool(
            np.all(np.asarray([t == self.header for t in texts])[text_ids]))  # fmt: skip
        if self.columns is None and same and not int(part.names.used[0]):
            if blocks:
                self._dense_columns(texts[int(text_ids[0])])
            self.block_widths.append(np.full(blocks, len(self.space), np.int64))
            self.hypotheses += hypotheses
            return
        if self.columns is None:  # the first block that is not dense: the columns of those before
            self.columns = _Growing(np.int64)
            if self.hypotheses:
                assert self.header is not None
                dense = self._dense_columns(self.header)
                self.columns.extend(np.tile(dense, self.hypotheses), done, total)
                self.value_counts.extend(np.full(self.hypotheses, dense.size, np.int64), done, total)
            self.header = None
        name_ends = out.blocks[:blocks, _B_NAMES].tolist()
        sparse = np.zeros(int(part.names.used[0]), np.int64)
        done_names = 0
        widths = np.empty(blocks, np.int64)
        first_column: dict[int, int] = {}
        table: list[np.ndarray] = []
        for b, k in enumerate(text_ids.tolist()):
            if k not in first_column:
                first_column[k] = sum(t.size for t in table)
                table.append(self._dense_columns(texts[k]))
            if name_ends[b] > done_names:
                sparse[done_names : name_ends[b]] = self.space.indices(
                    string_at(part.data, part.names, i) for i in range(done_names, name_ends[b])
                )
                done_names = name_ends[b]
            widths[b] = len(self.space)
        starts = np.zeros(max(int(part.texts.used[0]), 1), np.int64)
        starts[list(first_column)] = list(first_column.values())
        value_counts = out.value_counts[:hypotheses]
        columns = _columns(
            out.features[:num_values],
            value_counts,
            out.numbers[:blocks, 1],
            out.numbers[:blocks, 2],
            starts[text_ids],
            np.concatenate([*table, np.zeros(0, np.int64)]),
            sparse,
        )
        self.columns.extend(columns, done, total)
        self.value_counts.extend(value_counts, done, total)
        self.block_widths.append(widths)
        self.hypotheses += hypotheses

    def widths(self) -> np.ndarray:
        return np.concatenate([*self.block_widths, np.zeros(0, np.int64)])

    def dense(self, values: np.ndarray) -> np.ndarray | None:
        """The values as one row-major matrix, hypotheses x feature space, when every block was dense, the
        feature space was empty before and the header's names are distinct (its columns 0, 1, ...)."""
        if self.columns is not None or not self.empty or self.header is None:
            return None
        width = len(self.names[self.header])
        if width != len(self.space) or values.size != self.hypotheses * width:
            return None
        return values.reshape(self.hypotheses, width)

    def matrix(self, values: np.ndarray) -> sp.csr_matrix:
        """The values as a CSR matrix, one row per hypothesis, as wide as the feature space."""
        if self.columns is None:  # every block dense (the same columns)
            dense = self._dense_columns(self.header) if self.header is not None else np.zeros(0, np.int64)
            columns, value_counts = np.tile(dense, self.hypotheses), np.full(self.hypotheses, dense.size, np.int64)
        else:
            columns, value_counts = self.columns.result(), self.value_counts.result()
        return sp.csr_matrix(
            (values, columns, offsets_from_counts(value_counts)), shape=(self.hypotheses, len(self.space))
        )


FORMAT = register(GraphFormat("moses-extractor", "Moses extractor FEATSTAT/SCORESTAT files", sniff, read))
