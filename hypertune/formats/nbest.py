"""k-best lists: Moses n-best lists (also Joshua's) and Z-MERT candidate files. Each sentence becomes the
degenerate lattice of :func:`hypertune.hypergraph.from_kbest` (hypothesis ``i`` of the sentence is edge
``i + 1``, in file order) whose ``sentence_id`` is the list's id, with the decoder's total scores in
``metadata["totals"]`` (written back by :func:`write_moses`).

Moses / Joshua: ``id ||| hypothesis ||| features ||| total [||| more fields]``. The features field mixes

* labelled dense groups ``Name= v1 v2 ...``: one value keeps the name ``Name``, ``k > 1`` values are
  ``Name_0 .. Name_{k-1}`` (canonical names, as Moses's mert names them);
* the legacy labels ``d: v1 v2 ... lm: v1 v2 tm: ... w: v`` (same naming: ``d_0 .. d_6``, ``lm_0``,
  ``lm_1``, ``w``) -- never silently zero;
* sparse / Joshua features ``name=value`` (one token; the name is kept as written, e.g. ``tm_pt_3``).

A group label must be followed by at least one number; a number without a label, an unparsable value
and a repeated label are errors naming the line. Lines of one sentence must be contiguous.

Z-MERT: ``i ||| candidate ||| v1 v2 ...`` with unnamed dense features; the names come from a Z-MERT
parameter file (:func:`read_zmert`, ``names=`` or ``params=``) and default to ``F0, F1, ...``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple, overload

import numpy as np
import scipy.sparse as sp

from hypertune.arrays import offsets_from_counts
from hypertune.compiled import helper_jit
from hypertune.errors import GraphError, InputError
from hypertune.formats._common import check_word, format_number
from hypertune.formats._scan import (
    TABLE_FULL,
    KeyTable,
    StringTable,
    fail,
    flagged_floats,
    intern,
    is_string,
    key_id,
    located,
    new_error,
    new_key_table,
    new_string_table,
    next_number,
    next_token,
    parse_integer,
    read_bytes,
    run_scan,
    scan_error,
    string_at,
    text_bounds,
    uncounted_jit,
)
from hypertune.formats.io import require_rereadable, write_atomically
from hypertune.formats.kbest_batch import KbestBatch
from hypertune.formats.registry import GraphFormat, SentenceIds, detect_format, register
from hypertune.formats.sniffing import sniff_moses_nbest as sniff_moses
from hypertune.formats.sniffing import sniff_zmert
from hypertune.hypergraph import Hypergraph, KbestLists, kbest_lattices
from hypertune.symbols import FeatureSpace, Vocabulary

_inline = helper_jit  # not inline="always": see hypertune.compiled.helper_jit


def read_moses(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    read = _read(path, feature_space, vocabulary)
    assert isinstance(read, list)
    return read


def read_moses_batch(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> KbestBatch:
    """A Moses n-best list as one :class:`~hypertune.formats.kbest_batch.KbestBatch` (issue 33): the lists'
    words, features and totals in flat arrays, a list's graph made only when asked for (it is then the graph
    :func:`read_moses` reads). The file's text is let go before the batch is made."""
    read = _read(path, feature_space, vocabulary, batch=True)
    assert isinstance(read, KbestBatch)
    return read


def read_nbest_input(
    path: str, format: str | None, params: str | None, feature_space: FeatureSpace, vocabulary: Vocabulary
) -> tuple[KbestBatch, SentenceIds] | None:
    """A tuning command's only input when it is one Moses n-best file of several lists: its batch
    (:func:`read_moses_batch`) and where its sentence ids come from (the file's contents); else ``None``."""
    if params is not None or format not in (None, MOSES.name) or not os.path.isfile(path):
        return None
    if format is None and detect_format(path) is not MOSES:
        return None
    require_rereadable(path)
    batch = read_moses_batch(path, feature_space, vocabulary)
    return (batch, SentenceIds((), (), True)) if len(batch) > 1 else None


class _Totals(Sequence[dict[str, Any]]):
    """The lists' metadata, ``{"totals": [...]}`` of each (the Moses total of every hypothesis), made when
    asked for from one array."""

    def __init__(self, totals: np.ndarray, list_offsets: np.ndarray) -> None:
        self.totals, self.list_offsets = totals, list_offsets

    def __len__(self) -> int:
        return self.list_offsets.size - 1

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> _Totals: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | _Totals:
        offsets = self.list_offsets
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a step other than 1")
            lo, hi = offsets[start], offsets[max(start, stop)]
            return _Totals(self.totals[lo:hi], offsets[start : max(start, stop) + 1] - lo)
        s = index + len(self) if index < 0 else index
        return {"totals": self.totals[offsets[s] : offsets[s + 1]].tolist()}


def kbest_entries(hg: Hypergraph) -> list[tuple[list[str], dict[str, float]]]:
    """The hypotheses of a k-best lattice (or of any lattice's start-goal edges) as (words, features)."""
    out = []
    for e in range(hg.num_edges):
        tails = hg.edge_tails(e)
        if len(tails) == 0:
            continue
        if len(tails) != 1 or tails[0] != 0 or hg.head[e] != hg.goal:
            raise InputError(
                "only k-best lists (one edge per hypothesis from the start node to the goal) can be written "
                "as an n-best list; decode the graph with --kbest first"
            )
        words = [hg.vocabulary.word(int(t)) for t in hg.edge_target(e) if t >= 0]
        out.append((words, hg.edge_features(e)))
    return out


def write_moses(graphs: Sequence[Hypergraph], path: str) -> None:
    """Moses n-best lines ``sid ||| words ||| name= value ... ||| total`` (total = the stored total, else 0).
    Each feature is written as its own one-value group, which reads back under the same name."""
    lines = []
    for i, hg in enumerate(graphs):
        sid = i if hg.sentence_id is None else hg.sentence_id
        totals = hg.metadata.get("totals")
        for k, (words, features) in enumerate(kbest_entries(hg)):
            for w in words:
                check_word(w, "an n-best list")
                if w == "|||":
                    raise InputError("cannot write the word '|||' in an n-best list")
            feats = " ".join(f"{_check_name(n)}= {format_number(v)}" for n, v in features.items())
            total = totals[k] if totals is not None and len(totals) > k else 0.0
            lines.append(f"{sid} ||| {' '.join(words)} ||| {feats} ||| {format_number(total)}\n")
    write_atomically(path, "".join(lines))


def _check_name(name: str) -> str:
    if not name or any(c.isspace() or c in "=:|" for c in name):
        raise InputError(f"cannot write the feature name {name!r} in an n-best list")
    return name


def feature_order(path: str) -> list[str]:
    """The dense feature order that positional weights (``init.opt``, kbmira's legacy dense line) follow:
    the names of a FEATSTAT header, or the labelled groups (``Name= v ...``, ``name: v ...``) of an
    n-best list's first line, canonically named; ``name=value`` tokens are sparse and not counted."""
    from hypertune.formats._common import collapse_single_components
    from hypertune.formats.io import read_head

    head = read_head(path, 1 << 16)
    first = next((line for line in head.split("\n") if line.strip()), "")
    fields = first.split()
    if fields and fields[0].startswith("FEATURES_TXT_BEGIN_"):
        return collapse_single_components(fields[4:])
    if len(first.split("|||")) < 4:
        raise InputError("expected an n-best list or a FEATSTAT file to take the feature order from", path, 1)
    data = (first + "\n").encode("utf-8")
    out, _, names, ids, code = _scan_file(data, zmert=False)
    problems = _flagged_problems(data, out, names, path)
    if code or problems:
        raise problems[0][1] if problems else _scan_error(data, out, path, zmert=False)
    canonical, sparse = _canonical_names(data, names, ids)
    return [name for name, is_sparse in zip(canonical, sparse, strict=True) if not is_sparse]


# ---------------------------------------------------------------------- Z-MERT


def read_zmert(
    path: str,
    feature_space: FeatureSpace,
    vocabulary: Vocabulary,
    names: Sequence[str] | None = None,
    params: str | None = None,
) -> list[Hypergraph]:
    """Z-MERT candidates; feature names from ``names``, a parameter file ``params``, or ``F0, F1, ...``."""
    if names is None and params is not None:
        from hypertune.formats.weights import read_zmert_params

        names = [p.name for p in read_zmert_params(params)]

    read = _read(path, feature_space, vocabulary, names, zmert=True)
    assert isinstance(read, list)
    return read


# ---------------------------------------------------------------------- the compiled scan


class _Scanned(NamedTuple):
    """What one compiled pass over an n-best file fills (sized by the caller from upper bounds).

    Per hypothesis: its sentence id, how many words and feature values it has, its total score, and the
    byte where its line starts. Per word: its id in the word table. Per feature value: the id of its
    *feature key* (label, component, group size; see :func:`_feature_key`) and its value. ``flagged``
    lists the values the exact fast path left to ``float()``: (value index, start, end, name id) with
    name id -1 for a total score. ``sizes`` = hypotheses, words, feature values, flagged. ``error`` =
    code (0: none), start and end byte of the offending text, and a number the message needs.
    ``groups`` is scratch: per labelled group ``g`` of the current line, its label; and per group position
    the label, size and first key id seen there last (most lines repeat the same groups), and where the
    current line's label was written (start, end); for Z-MERT, column 3 holds the key id of value position
    ``g``. ``bounds`` is scratch for the fields of the current line.
    """

    sentence: np.ndarray
    word_counts: np.ndarray
    feature_counts: np.ndarray
    totals: np.ndarray
    line_starts: np.ndarray
    words: np.ndarray
    features: np.ndarray
    values: np.ndarray
    flagged: np.ndarray
    sizes: np.ndarray
    error: np.ndarray
    groups: np.ndarray
    bounds: np.ndarray


# error codes of the scan
(_FIELDS, _SID, _UNLABELLED, _SPARSE_NAME, _LABEL_TWICE, _LABEL_EMPTY, _TOTAL, _ZMERT_FIELDS, _TOO_MANY_LABELS) = range(
    1, 10
)
_MAX_LABELS = 4096  # labelled groups on one line
_SPARSE = -1  # the component index of a name=value feature
_MAX_GROUP = 1 << 20  # components per label (the feature key packs label, component and group size)


@_inline
def _feature_key(label: int, component: int, size: int) -> int:  # pragma: no cover - compiled
    """One int64 for (label or name id, component index or -1, group size)."""
    return (label * _MAX_GROUP + (component + 1)) * _MAX_GROUP + size


@_inline
def _flag(out, index, start, end, name):  # pragma: no cover - compiled
    """Leave value ``index`` (``buf[start:end]``, of feature ``name``; -1: a total) to ``float()``."""
    k = out.sizes[3]
    out.flagged[k, 0], out.flagged[k, 1], out.flagged[k, 2], out.flagged[k, 3] = index, start, end, name
    out.sizes[3] += 1


@_inline
def _end_group(out, ids, label, first, last, group):  # pragma: no cover - compiled
    """Close the open group ``group`` of ``label`` (an error if it is empty): give its values ``first:last``
    their feature keys, now that the group's size is known (from the last line's group in the same position
    when it had the same label and size)."""
    if first == last:
        return fail(out.error, _LABEL_EMPTY, out.groups[group, 4], out.groups[group, 5])
    size = last - first
    remembered = group < out.groups.shape[0]
    if remembered and out.groups[group, 1] == label and out.groups[group, 2] == size:
        base = out.groups[group, 3]
        for f in range(first, last):
            out.features[f] = base + f - first
        return 0
    for f in range(first, last):
        key = key_id(ids, _feature_key(label, f - first, size))
        if key < 0:
            return TABLE_FULL
        out.features[f] = key
    if remembered and out.features[last - 1] - out.features[first] == size - 1:  # consecutive ids
        out.groups[group, 1], out.groups[group, 2], out.groups[group, 3] = label, size, out.features[first]
    return 0


@_inline
def _open_label(buf, s, e, out, names, group):  # pragma: no cover - compiled
    """The label ``buf[s:e-1]`` of group ``group`` of the line: ``(code, label id)``; an error when the line
    has too many labels or this one twice."""
    label = out.groups[group, 1] if group < out.groups.shape[0] else -1
    if not is_string(names, label, buf, s, e - 1):
        label = intern(names, buf, s, e - 1)
        if label < 0:
            return TABLE_FULL, -1
    if group >= out.groups.shape[0]:
        return fail(out.error, _TOO_MANY_LABELS, s, e, out.groups.shape[0]), -1
    for g in range(group):
        if out.groups[g, 0] == label:
            return fail(out.error, _LABEL_TWICE, s, e), -1
    out.groups[group, 0], out.groups[group, 4], out.groups[group, 5] = label, s, e
    return 0, label


@_inline
def _other_token(buf, s, e, out, names, ids, label, group_start, f, group):  # pragma: no cover
    """Value ``f`` from a token that is neither a label nor a plain number: ``name=value`` (which closes
    an open group), or a value of the open group that ``float()`` must read. ``(code, open label)``."""
    q = e - 1
    while q >= s and buf[q] != 61:
        q -= 1
    if q < s:  # no "=": a value of the open label
        if label < 0:
            return fail(out.error, _UNLABELLED, s, e), label
        _flag(out, f, s, e, label)
        out.values[f] = 0.0
        return 0, label
    if q == s:
        return fail(out.error, _SPARSE_NAME, s, e), label
    if label >= 0:
        code = _end_group(out, ids, label, group_start, f, group)
        if code:
            return code, label
    name = intern(names, buf, s, q)
    key = key_id(ids, _feature_key(name, _SPARSE, 1)) if name >= 0 else -1
    if key < 0:
        return TABLE_FULL, -1
    out.features[f] = key
    # next_number reads the value (no space in it) as parse_decimal would: the scan compiles one number parser
    _, _, exact, value = next_number(buf, q + 1, e)
    out.values[f] = value
    if not exact:
        _flag(out, f, q + 1, e, name)
    return 0, -1


@_inline
def _features(buf, start, end, out, names, ids, f):  # pragma: no cover - compiled
    """The features field of one line (module docstring) from value ``f`` on: labelled groups and
    ``name=value``. Returns ``(code, values so far)``; plain numbers take the short way."""
    label = -1
    group_start = f
    group = -1  # labelled groups of this line so far, less one
    j = start
    while True:
        s, e, exact, value = next_number(buf, j, end)
        if s == end:
            break
        j = e
        if exact:
            if label < 0:
                return fail(out.error, _UNLABELLED, s, e), f
            out.values[f] = value
            f += 1
            continue
        last = buf[e - 1]
        # A token ending in '=' is a label whatever its name holds (Moses's rule, mert/Data.cpp: phrase-pair
        # features such as PP_:~x= name phrases with ':' and '='); a legacy 'name:' label is a plain word.
        if e - s >= 2 and (last == 61 or (last == 58 and _plain_label(buf, s, e - 1))):
            if label >= 0:
                code = _end_group(out, ids, label, group_start, f, group)
                if code:
                    return code, f
            group += 1
            code, label = _open_label(buf, s, e, out, names, group)
            if code:
                return code, f
            group_start = f
            continue
        code, label = _other_token(buf, s, e, out, names, ids, label, group_start, f, group)
        if code:
            return code, f
        f += 1
    if label >= 0:
        code = _end_group(out, ids, label, group_start, f, group)
        if code:
            return code, f
    return 0, f


@_inline
def _positional(buf, start, end, out, ids, f):  # pragma: no cover - compiled
    """The unnamed values of a Z-MERT line from value ``f`` on, keyed by position (the key ids of the
    first positions are kept in ``out.groups[:, 3]``). Returns ``(code, values so far)``."""
    first = f
    j = start
    while True:
        s, e, exact, value = next_number(buf, j, end)
        if s == end:
            return 0, f
        j = e
        position = f - first
        key = out.groups[position, 3] if position < out.groups.shape[0] else -1
        if key < 0:
            key = key_id(ids, _feature_key(0, position, 0))
            if key < 0:
                return TABLE_FULL, f
            if position < out.groups.shape[0]:
                out.groups[position, 3] = key
        out.features[f] = key
        out.values[f] = value
        if not exact:
            _flag(out, f, s, e, -2)
        f += 1


@_inline
def _plain_label(buf, start, end):  # pragma: no cover - compiled
    """No ``=`` or ``:`` in ``buf[start:end]`` (the part of a ``Name=``/``name:`` label before its mark)."""
    for j in range(start, end):
        if buf[j] == 61 or buf[j] == 58:
            return False
    return True


@_inline
def _fields(buf, line, bounds):  # pragma: no cover - compiled
    """The end of the line starting at ``line`` and its ``|||`` separators, in one pass: ``bounds[0:3]`` where
    fields 1-3 start, ``bounds[3]`` where field 3 ends (the fourth separator or the line end). Returns
    ``(line end, separators)``."""
    n = buf.size
    separators = 0
    j = line
    while j < n:
        c = buf[j]
        if c == 10:
            break
        if c == 124 and j + 2 < n and buf[j + 1] == 124 and buf[j + 2] == 124:
            if separators < 3:
                bounds[separators] = j + 3
            elif separators == 3:
                bounds[3] = j
            separators += 1
            j += 3
        else:
            j += 1
    if separators < 4:
        bounds[3] = j
    return j, separators


@_inline
def _words(buf, start, end, out, table, w):  # pragma: no cover - compiled
    """Intern the words of ``buf[start:end]`` into ``out.words`` from ``w`` on: the words so far, or -1
    when the table is full."""
    j = start
    while True:
        s, e = next_token(buf, j, end, False)
        if s == end:
            return w
        k = intern(table, buf, s, e)
        if k < 0:
            return -1
        out.words[w] = k
        w += 1
        j = e


@_inline
def _total(buf, out, h, start, end):  # pragma: no cover - compiled
    """The total score of hypothesis ``h``: exactly one number in ``buf[start:end]``. An error code."""
    s, e, exact, value = next_number(buf, start, end)
    if s == end or next_token(buf, e, end, False)[0] != end:
        return fail(out.error, _TOTAL, start, end)
    out.totals[h] = value
    if not exact:
        _flag(out, h, s, e, -1)
    return 0


@_inline
def _head(buf, line, out, words, h, w):  # pragma: no cover - compiled
    """Fields 1 and 2 of hypothesis ``h``, whose line starts at ``line`` (its fields found by :func:`_fields`):
    the sentence id and the words from ``w`` on. Returns the words so far, -1 when the table is full, -2 on
    an error (``out.error``)."""
    bounds = out.bounds
    out.line_starts[h] = line
    s, e = next_token(buf, line, bounds[0] - 3, False)
    ok, sid = parse_integer(buf, s, e)
    if not ok or buf[s] == 45 or buf[s] == 43 or next_token(buf, e, bounds[0] - 3, False)[0] != bounds[0] - 3:
        fail(out.error, _SID, line, bounds[0] - 3)
        return -2
    out.sentence[h] = sid
    return _words(buf, bounds[0], bounds[1] - 3, out, words, w)


# One kernel per format (issue 33): a kernel with both formats' branches compiled the Z-MERT one for Moses
# input too (numba types every branch; ``numba.literally`` types them once before its literal retry).


@uncounted_jit  # the helpers bind ``out``: counting its arrays' references halved the speed
def _scan_moses(buf, out, words, names, ids):  # pragma: no cover - compiled
    """One pass over the lines of a Moses n-best list, ``id ||| words ||| features ||| total [||| more]``;
    blank lines are skipped. Stops at the first error (``out.error``). ``out.sizes`` is brought up to date
    after every line."""
    bounds, sizes = out.bounds, out.sizes
    h, w, f = 0, 0, 0
    pos = 0
    while pos < buf.size:
        line = pos
        end, separators = _fields(buf, line, bounds)
        pos = end + 1
        if separators == 0 and next_token(buf, line, end, False)[0] == end:  # a blank line
            continue
        if separators < 3:
            return fail(out.error, _FIELDS, line, end, separators + 1)
        w1 = _head(buf, line, out, words, h, w)
        if w1 < 0:
            return TABLE_FULL if w1 == -1 else out.error[0]
        code, f1 = _features(buf, bounds[1], bounds[2] - 3, out, names, ids, f)
        if code or _total(buf, out, h, bounds[2], bounds[3]):
            return code if code else out.error[0]
        out.word_counts[h], out.feature_counts[h] = w1 - w, f1 - f
        h, w, f = h + 1, w1, f1
        sizes[0], sizes[1], sizes[2] = h, w, f
    return 0


@uncounted_jit
def _scan_zmert(buf, out, words, names, ids):  # pragma: no cover - compiled
    """:func:`_scan_moses` for a Z-MERT candidate file: exactly ``i ||| candidate ||| values`` a line (``names``,
    the labels' table, stays empty: the values are keyed by position)."""
    bounds, sizes = out.bounds, out.sizes
    h, w, f = 0, 0, 0
    pos = 0
    while pos < buf.size:
        line = pos
        end, separators = _fields(buf, line, bounds)
        pos = end + 1
        if separators == 0 and next_token(buf, line, end, False)[0] == end:  # a blank line
            continue
        if separators != 2:
            return fail(out.error, _ZMERT_FIELDS, line, end, separators + 1)
        w1 = _head(buf, line, out, words, h, w)
        if w1 < 0:
            return TABLE_FULL if w1 == -1 else out.error[0]
        code, f1 = _positional(buf, bounds[1], end, out, ids, f)
        if code:
            return code
        out.word_counts[h], out.feature_counts[h] = w1 - w, f1 - f
        h, w, f = h + 1, w1, f1
        sizes[0], sizes[1], sizes[2] = h, w, f
    return 0


def _scan_file(data: bytes, zmert: bool) -> tuple[_Scanned, StringTable, StringTable, KeyTable, int]:
    buf = np.frombuffer(data, dtype=np.uint8)
    lines, tokens = text_bounds(buf)

    def arrays(_: Sequence[int]) -> _Scanned:
        return _Scanned(
            sentence=np.empty(lines, np.int64),
            word_counts=np.empty(lines, np.int64),
            feature_counts=np.empty(lines, np.int64),
            totals=np.zeros(lines, np.float64),
            line_starts=np.empty(lines, np.int64),
            words=np.empty(tokens, np.int32),  # a word's table id (int32: half the memory of a large list)
            features=np.empty(tokens, np.int32),  # a value's feature key
            values=np.empty(tokens, np.float64),
            flagged=np.empty((tokens, 4), np.int64),
            sizes=np.zeros(4, np.int64),
            error=new_error(),
            groups=np.full((_MAX_LABELS, 6), -1, np.int64),
            bounds=np.empty(4, np.int64),
        )

    scan = _scan_zmert if zmert else _scan_moses
    out, (words, names, ids), code = run_scan(
        lambda out, *tables: scan(buf, out, *tables),
        arrays,
        (new_string_table, new_string_table, new_key_table),
        (1 << 14, 256, 1024),
    )
    return out, words, names, ids, code


def _read(
    path: str,
    feature_space: FeatureSpace,
    vocabulary: Vocabulary,
    zmert_names: Sequence[str] | None = None,
    zmert: bool = False,
    batch: bool = False,
) -> list[Hypergraph] | KbestBatch:
    """The graphs of a Moses n-best list (or, ``zmert``, a Z-MERT candidate file), one compiled pass; ``batch``:
    one :class:`KbestBatch` of them."""
    data = read_bytes(path, "n-best list")
    out, words, names, ids, code = _scan_file(data, zmert)
    problems = _flagged_problems(data, out, names, path)
    if code:
        problems.append((int(out.error[1]), _scan_error(data, out, path, zmert)))
    hypotheses = int(out.sizes[0])
    sentence = out.sentence[:hypotheses]
    starts = np.flatnonzero(np.concatenate(([True], sentence[1:] != sentence[:-1]))) if hypotheses else sentence
    again = _repeated_runs(sentence[starts]) if hypotheses else -1
    if again >= 0:
        offset = int(out.line_starts[starts[again]])
        sid = int(sentence[starts[again]])
        problems.append((offset, located(data, offset, f"sentence {sid} appears again after other sentences", path)))
    if problems:
        raise min(problems, key=lambda p: p[0])[1]
    if not hypotheses:
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        what = "i ||| candidate ||| v1 v2 ..." if zmert else "id ||| hypothesis ||| ..."
        raise InputError(f"no hypotheses in the file (expected '{what}' lines)", path, max(lines, 1))
    initial_width = len(feature_space)
    columns = _feature_columns(data, out, names, ids, feature_space, zmert, zmert_names, path)
    try:
        return _graphs(data, out, words, columns, starts, initial_width, (feature_space, vocabulary), zmert, batch)
    except GraphError as error:
        if error.item is None:
            raise InputError(f"invalid k-best list: {error}", path) from None
        offset = int(out.line_starts[error.item])
        raise located(data, offset, str(error).split(": ", 1)[1], path) from None


def _repeated_runs(run_ids: np.ndarray) -> int:
    """The first run whose sentence id an earlier run had, or -1."""
    _, first, inverse = np.unique(run_ids, return_index=True, return_inverse=True)
    repeated = np.flatnonzero(first[inverse] != np.arange(run_ids.size))
    return int(repeated[0]) if repeated.size else -1


def _flagged_problems(data: bytes, out: _Scanned, names: StringTable, path: str) -> list[tuple[int, InputError]]:
    """``float()`` of the values the compiled pass left; the first bad one as a located error."""
    index, starts, ends, name = out.flagged[: out.sizes[3]].T
    values, bad = flagged_floats(data, starts, ends)
    is_total = name == -1
    out.totals[index[is_total]] = values[is_total]
    out.values[index[~is_total]] = values[~is_total]
    if bad is None:
        return []
    k, start = int(name[bad.row]), int(starts[bad.row])
    label = "total" if k == -1 else "candidate feature" if k == -2 else string_at(data, names, k)
    problem = "expected a number" if bad.refused else "values must be finite"
    return [(start, located(data, start, f"feature {label!r}: {problem}, got {bad.text!r}", path))]


_MESSAGES = {
    _FIELDS: "expected at least {fields} fields separated by '|||', got {number}",
    _ZMERT_FIELDS: "expected 'i ||| candidate ||| v1 v2 ...' (3 fields), got {number}",
    _SID: "expected a sentence id (a non-negative integer), got {token!r}",
    _UNLABELLED: "the value {token!r} has no feature label (expected 'Name= v1 v2 ...')",
    _SPARSE_NAME: "expected a feature 'name=value', got {token!r}",
    _LABEL_TWICE: "feature label {label!r} appears twice",
    _LABEL_EMPTY: "feature label {label!r} has no values",
    _TOTAL: "expected the total score in field 4, got {token!r}",
    _TOO_MANY_LABELS: "more than {number} feature labels on one line",
}


def _scan_error(data: bytes, out: _Scanned, path: str, zmert: bool) -> InputError:
    if zmert and out.error[0] == _FIELDS and out.error[3] > 3:
        out.error[0] = _ZMERT_FIELDS
    label = data[out.error[1] : out.error[2]].decode("utf-8").strip()[:-1]
    return scan_error(data, out.error, _MESSAGES, path, ("number",), fields=3 if zmert else 4, label=label)


def _feature_columns(
    data: bytes,
    out: _Scanned,
    names: StringTable,
    ids: KeyTable,
    feature_space: FeatureSpace,
    zmert: bool,
    zmert_names: Sequence[str] | None,
    path: str,
) -> np.ndarray:
    """The feature-space column of every feature key, interned in order of first appearance. For Z-MERT
    the keys are positions, named by ``zmert_names`` (default ``F0, F1, ...`` from the first line), and
    every line must have that many values."""
    if zmert:
        component = (ids.keys[: ids.used[0]] // _MAX_GROUP) % _MAX_GROUP - 1
        counts = out.feature_counts[: out.sizes[0]]
        expected = len(zmert_names) if zmert_names is not None else int(counts[0])
        wrong = np.flatnonzero(counts != expected)
        named = list(zmert_names) if zmert_names is not None else [f"F{i}" for i in range(expected)]
        if wrong.size:
            offset = int(out.line_starts[wrong[0]])
            message = f"expected {expected} feature values ({', '.join(named)}), got {int(counts[wrong[0]])}"
            raise located(data, offset, message, path)
        canonical = [named[c] for c in component.tolist()]
    else:
        canonical, _ = _canonical_names(data, names, ids)
    return feature_space.indices(canonical).astype(np.int64) if canonical else np.zeros(0, np.int64)


def _canonical_names(data: bytes, names: StringTable, ids: KeyTable) -> tuple[list[str], list[bool]]:
    """The canonical name of every feature key (a label's components ``Name_0 ..``, or ``Name`` alone;
    a ``name=value`` name as written), and whether it is sparse."""
    keys = ids.keys[: ids.used[0]]
    label = (keys // (_MAX_GROUP * _MAX_GROUP)).tolist()
    component = ((keys // _MAX_GROUP) % _MAX_GROUP - 1).tolist()
    size = (keys % _MAX_GROUP).tolist()
    strings: dict[int, str] = {}
    canonical = []
    for k, c, n in zip(label, component, size, strict=True):
        name = strings.get(k)
        if name is None:
            name = strings[k] = string_at(data, names, k)
        canonical.append(name if c == _SPARSE or n == 1 else f"{name}_{c}")
    return canonical, [c == _SPARSE for c in component]


def _graphs(
    data: bytes,
    out: _Scanned,
    words: StringTable,
    columns: np.ndarray,
    starts: np.ndarray,
    initial_width: int,
    spaces: tuple[FeatureSpace, Vocabulary],
    zmert: bool,
    batch: bool = False,
) -> list[Hypergraph] | KbestBatch:
    """One k-best lattice per run of lines with the same sentence id, laid out as :func:`from_kbest` lays
    it out (graph ``s`` is as wide as the feature space was once its sentence was read)."""
    feature_space, vocabulary = spaces
    hypotheses, num_words, num_features = (int(x) for x in out.sizes[:3])
    word_ids = vocabulary.indices([string_at(data, words, k) for k in range(int(words.used[0]))])
    feature_counts = out.feature_counts[:hypotheses]
    feature_column = columns.astype(np.int32)[out.features[:num_features]]
    features = sp.csr_matrix(
        (out.values[:num_features], feature_column, offsets_from_counts(feature_counts)),
        shape=(hypotheses, len(feature_space)),
    )
    widest = np.zeros(len(starts), dtype=np.int64)  # a list is as wide as the feature space once it was read
    if num_features:
        last = np.full(hypotheses, -1, dtype=np.int64)
        has = feature_counts > 0
        last[has] = np.maximum.reduceat(feature_column, offsets_from_counts(feature_counts)[:-1][has])
        widest = np.maximum.accumulate(np.maximum.reduceat(last, starts)) + 1
    totals = out.totals[:hypotheses]
    ends = np.append(starts[1:], hypotheses)
    widths = np.maximum(widest, initial_width)
    if batch:  # the scan's arrays go with this function: only what the batch keeps is copied out
        list_offsets = np.append(starts, hypotheses)
        return KbestBatch(
            list_offsets,
            spaces,
            features,
            widths=widths,
            sentence_ids=out.sentence[starts].tolist(),
            metadata=None if zmert else _Totals(totals.copy(), list_offsets),
            words=(
                np.asarray(word_ids, dtype=np.int32)[out.words[:num_words]],
                offsets_from_counts(out.word_counts[:hypotheses]),
            ),
        )
    return kbest_lattices(
        KbestLists(
            np.append(starts, hypotheses),
            np.asarray(word_ids, dtype=np.int64)[out.words[:num_words]],
            offsets_from_counts(out.word_counts[:hypotheses]),
            features,
        ),
        feature_space,
        vocabulary,
        widths=widths,
        sentence_ids=out.sentence[starts].tolist(),
        metadata=None if zmert else [{"totals": totals[lo:hi].tolist()} for lo, hi in zip(starts, ends, strict=True)],
    )


MOSES = register(
    GraphFormat(
        "moses-nbest",
        "Moses / Joshua n-best lists (one k-best lattice per sentence)",
        sniff_moses,
        read_moses,
        write_moses,
    )
)
ZMERT = register(GraphFormat("zmert", "Z-MERT candidate files (unnamed dense features)", sniff_zmert, read_zmert))
