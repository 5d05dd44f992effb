"""Moses hypergraphs: the format of ``kbmira --type hypergraph --hgdir`` and of the decoder's
``-output-search-graph-hypergraph``, read and written.

::

    # target ||| features ||| source-covered
    5 8                                  <- vertices, edges
    # node 0                             <- '#' comment lines may appear between vertices
    1                                    <- number of in-edges of vertex 0, then the edge lines
    <s> |||  ||| 0
    2
    [0] a b  ||| foo=1 bar=1 ||| 1       <- [k] in the target is tail vertex k (an earlier vertex)
    ...

Vertices come bottom-up; the last vertex is the root (goal). Nodes and edges keep the file's order, so
edge ``e`` of the graph is the ``e``-th edge line. Features are ``name=value`` pairs; a dense feature with
several components is written 1-based (``TranslationModel0_1=``) and is read into the canonical 0-based
name ``TranslationModel0_0`` (a name ``Prefix_k`` with ``k >= 1`` and no underscore in ``Prefix``; Moses
sparse features are ``FF_detail`` names). The writer converts back. Zero values (Moses writes every
dense component, most of them ``0.000000``) are dropped: a zero feature contributes nothing to any score,
and dropping them saves two thirds of the memory. The source-covered counts are kept in
``Hypergraph.source_covered`` (one per edge) and written back (0 for graphs that have none). The writer
writes each edge's tails in the order its target uses them (a cdec rule ``[2] de [1]`` reads back with its
tails swapped and the target ``[1] de [2]``: the same derivations and yields).

The reader is one compiled pass over the file's bytes (:mod:`hypertune.formats._scan`): tokens split as
``str.split()`` splits them, values equal ``float()`` of their text, and the first bad line stops it with
an :class:`InputError` naming the line and vertex; nothing is interned from a file that fails.

A *hgdir* (``kbmira --hgdir``) is a directory of ``<sid>.gz`` files plus a ``weights`` file: reading the
directory gives the graphs in sentence-id order and skips ``weights`` (see :func:`read_hgdir`).
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numba
import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.compiled import helper_jit
from hypertune.errors import GraphError, InputError
from hypertune.formats._common import (
    check_word,
    format_number,
    from_moses_hypergraph_name,
    to_moses_hypergraph_name,
)
from hypertune.formats._scan import (
    MAX_DIGITS,
    TABLE_FULL,
    EdgeArrays,
    StringTable,
    edge_graph,
    fail,
    flagged_floats,
    intern,
    interned_columns,
    is_separator,
    is_string,
    located,
    new_error,
    new_string_table,
    next_token,
    parse_decimal,
    parse_integer,
    read_bytes,
    run_scan,
    scan_error,
    string_at,
    text_bounds,
    uncounted_jit,
)
from hypertune.formats.io import write_atomically
from hypertune.formats.registry import GraphFormat, corpus_files, named_by_file, register
from hypertune.formats.sniffing import MOSES_HYPERGRAPH_HEADER as HEADER
from hypertune.formats.sniffing import sniff_moses_hypergraph as sniff
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights

_jit = numba.njit(cache=True, nogil=True)
_inline = helper_jit  # not inline="always": see hypertune.compiled.helper_jit


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """The hypergraph of ``path``, the sentence its name numbers: Moses writes sentence 17's hypergraph to
    ``<hgdir>/17.gz`` (the rule of every per-sentence file, :func:`~hypertune.formats.registry.named_by_file`)."""
    return named_by_file(path, [parse(read_bytes(path, "Moses hypergraph"), path, feature_space, vocabulary)])


class _Scanned(NamedTuple):
    """The arrays one compiled pass over a file fills (sized by the caller from upper bounds).

    Strings (words, feature names) are ids of the pass's :class:`~hypertune.formats._scan.StringTable`.
    A target token is a word id, or ``-(k + 1)`` for the tail reference ``[k]``. ``flagged`` lists the
    features whose value the exact fast path left to ``float()``: (feature index, start and end byte of the
    ``name=value`` item, start byte of the value). ``sizes`` = vertices and edges announced, then target
    tokens, features, flagged values, edges read. ``error`` = code (0: none), start and end byte of the
    offending text, vertex, and a number the message needs. ``name_guess[i]``: the name of the ``i``-th
    feature on the last edge line that had one (scratch).
    """

    counts: np.ndarray
    target: np.ndarray
    target_lengths: np.ndarray
    names: np.ndarray
    values: np.ndarray
    feature_counts: np.ndarray
    sources: np.ndarray
    flagged: np.ndarray
    sizes: np.ndarray
    error: np.ndarray
    name_guess: np.ndarray


# error codes of the scan
(
    _HEADER_FIELDS,
    _HEADER_NUMBERS,
    _HEADER_EMPTY,
    _COUNT,
    _COUNT_LOW,
    _COUNT_HIGH,
    _EDGE_FIELDS,
    _TAIL,
    _FEATURE,
    _SOURCE,
    _TOO_FEW_EDGES,
    _TRAILING,
    _ENDS_EARLY,
) = range(1, 14)


@uncounted_jit
def _edge(buf, start, end, vertex, out, table):  # pragma: no cover - compiled
    """Scan one edge line ``target ||| features ||| source-covered`` of ``vertex`` into ``out``;
    returns an error code (0: none; ``TABLE_FULL``: scan again with a larger table)."""
    separators = 0
    j = start
    while j < end:
        if is_separator(buf, j, end):
            separators += 1
            j += 3
        else:
            j += 1
    if separators != 2:
        return fail(out.error, _EDGE_FIELDS, start, end, vertex)
    sizes = out.sizes
    edge = sizes[5]
    field = 0
    field_start = start
    source_seen = False
    j = start
    while True:
        s, e = next_token(buf, j, end, True)
        j = e
        if s == end:
            break
        if e - s == 3 and is_separator(buf, s, e):
            field += 1
            field_start = e
            continue
        if field == 0:
            if e - s > 2 and buf[s] == 91 and buf[e - 1] == 93:
                digits, tail = parse_integer(buf, s + 1, e - 1)
                if digits and buf[s + 1] != 45 and buf[s + 1] != 43:
                    if tail >= vertex:
                        return fail(out.error, _TAIL, s, e, vertex)
                    out.target[sizes[2]] = -(tail + 1)
                    sizes[2] += 1
                    out.target_lengths[edge] += 1
                    continue
                if e - s - 2 > MAX_DIGITS and parse_integer(buf, s + 1, s + 1 + MAX_DIGITS)[0]:
                    return fail(out.error, _TAIL, s, e, vertex)  # a tail id too long for any vertex
            word = intern(table, buf, s, e)
            if word < 0:
                return TABLE_FULL
            out.target[sizes[2]] = word
            sizes[2] += 1
            out.target_lengths[edge] += 1
        elif field == 1:
            q = e - 1
            while q >= s and buf[q] != 61:
                q -= 1
            if q <= s:
                return fail(out.error, _FEATURE, s, e, vertex)
            position = out.feature_counts[edge]
            name = out.name_guess[position] if position < out.name_guess.size else -1
            if not is_string(table, name, buf, s, q):  # most lines name their features in the same order
                name = intern(table, buf, s, q)
                if name < 0:
                    return TABLE_FULL
                if position < out.name_guess.size:
                    out.name_guess[position] = name
            f = sizes[3]
            out.names[f] = name
            exact, value = parse_decimal(buf, q + 1, e)
            out.values[f] = value
            if not exact:
                k = sizes[4]
                out.flagged[k, 0], out.flagged[k, 1], out.flagged[k, 2], out.flagged[k, 3] = f, s, e, q + 1
                sizes[4] += 1
            sizes[3] += 1
            out.feature_counts[edge] += 1
        else:
            digits, covered = parse_integer(buf, s, e)
            if source_seen or not digits or buf[s] == 45 or buf[s] == 43:
                return fail(out.error, _SOURCE, field_start, end, vertex)
            out.sources[edge] = covered
            source_seen = True
    if not source_seen:
        return fail(out.error, _SOURCE, field_start, end, vertex)
    sizes[5] += 1
    return 0


@uncounted_jit
def _scan(buf, out, table):  # pragma: no cover - compiled
    """One pass over the file's lines (``#`` comments and blank lines skipped anywhere): the header, then
    each vertex's edge count and edge lines. Stops at the first error (see ``out.error``)."""
    n = buf.size
    sizes = out.sizes
    vertex = -1  # -1: the header comes next
    remaining = 0  # edge lines still to read for the vertex
    pos = 0
    while pos <= n:
        end = pos
        while end < n and buf[end] != 10:
            end += 1
        s, e = next_token(buf, pos, end, False)
        line_start, pos = s, end + 1
        if s == end or buf[s] == 35:
            continue
        if vertex == -1:
            s2, e2 = next_token(buf, e, end, False)
            ok1, vertices = parse_integer(buf, s, e)
            ok2, edges = parse_integer(buf, s2, e2)
            if s2 == end or next_token(buf, e2, end, False)[0] != end:
                return fail(out.error, _HEADER_FIELDS, line_start, end)
            if not (ok1 and ok2):
                return fail(out.error, _HEADER_NUMBERS, line_start, end)
            if vertices < 1 or edges < 1:
                return fail(out.error, _HEADER_EMPTY, line_start, end)
            sizes[0], sizes[1] = vertices, edges
            vertex = 0
        elif vertex == sizes[0]:
            return fail(out.error, _TRAILING, line_start, end, vertex)
        elif remaining == 0:
            ok, count = parse_integer(buf, s, e)
            if not ok or next_token(buf, e, end, False)[0] != end:
                return fail(out.error, _COUNT, line_start, end, vertex)
            if count < 1:
                return fail(out.error, _COUNT_LOW, line_start, end, vertex, count)
            if sizes[5] + count > sizes[1]:
                return fail(out.error, _COUNT_HIGH, line_start, end, vertex, count)
            out.counts[vertex] = count
            remaining = count
        else:
            code = _edge(buf, line_start, end, vertex, out, table)
            if code != 0:
                return code
            remaining -= 1
            if remaining == 0:
                vertex += 1
                if vertex == sizes[0] and sizes[5] != sizes[1]:
                    return fail(out.error, _TOO_FEW_EDGES, line_start, end, vertex, sizes[5])
    if vertex != sizes[0] or vertex == -1:
        return fail(out.error, _ENDS_EARLY, n, n, max(vertex, 0), 0)
    return 0


def parse(data: bytes, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> Hypergraph:
    """The graph of a Moses hypergraph file's bytes (as :func:`~hypertune.formats.io.read_bytes` gives them),
    or an :class:`InputError` at the first bad line. Nothing is added to ``feature_space`` or
    ``vocabulary`` unless the whole file is good."""
    buf = np.frombuffer(data, dtype=np.uint8)
    lines, tokens = text_bounds(buf)

    def arrays(_: Sequence[int]) -> _Scanned:
        return _Scanned(
            counts=np.zeros(lines, np.int64),
            target=np.empty(tokens, np.int64),
            target_lengths=np.zeros(lines, np.int64),
            names=np.empty(tokens, np.int64),
            values=np.empty(tokens, np.float64),
            feature_counts=np.zeros(lines, np.int64),
            sources=np.zeros(lines, np.int64),
            flagged=np.empty((tokens, 4), np.int64),
            sizes=np.zeros(6, np.int64),
            error=new_error(),
            name_guess=np.full(256, -1, np.int64),
        )

    out, (table,), code = run_scan(lambda out, table: _scan(buf, out, table), arrays, (new_string_table,), (4096,))
    _convert_flagged(data, out, path)  # a bad number comes before any later error
    if code:
        raise scan_error(data, out.error, _MESSAGES, path, ("vertex", "number"), **_fields(data, out))
    return _graph(data, out, table, path, feature_space, vocabulary)


def _convert_flagged(data: bytes, out: _Scanned, path: str) -> None:
    """``float()`` of the values the compiled pass left (exponents, many digits, ``inf``, ...)."""
    feature, starts, ends, value_starts = out.flagged[: out.sizes[4]].T
    values, bad = flagged_floats(data, value_starts, ends)
    out.values[feature] = values
    if bad is not None:
        edge_of = np.repeat(np.arange(out.sizes[5] + 1), out.feature_counts[: out.sizes[5] + 1])
        head = np.repeat(np.arange(out.counts.size), out.counts)
        vertex = int(head[edge_of[feature[bad.row]]])  # the vertex's edge count was read before any of its edges
        start = int(starts[bad.row])
        item = data[start : int(ends[bad.row])].decode("utf-8")
        problem = f"bad number in feature {item!r}" if bad.refused else f"feature {item!r} must be finite"
        raise located(data, start, f"vertex {vertex}: {problem}", path)


_MESSAGES = {
    _HEADER_FIELDS: "expected '<vertices> <edges>', got {token!r}",
    _HEADER_NUMBERS: "expected '<vertices> <edges>' (two integers), got {token!r}",
    _HEADER_EMPTY: "a hypergraph needs at least one vertex and one edge",
    _COUNT: "vertex {vertex}: expected its number of edges, got {token!r}",
    _COUNT_LOW: "vertex {vertex}: expected at least one edge, got {number}",
    _COUNT_HIGH: "vertex {vertex}: {number} more edges exceed the {edges} edges the header announces",
    _EDGE_FIELDS: "vertex {vertex}: expected an edge 'target ||| features ||| source-covered', got {token!r}",
    _TAIL: "vertex {vertex}: unknown tail id {token} (tails must be earlier vertices 0..{last_vertex})",
    _FEATURE: "vertex {vertex}: expected a feature 'name=value', got {token!r}",
    _SOURCE: "vertex {vertex}: expected a source-covered count, got {token!r}",
    _TOO_FEW_EDGES: "the header announces {edges} edges but the file has {number}",
    _TRAILING: "unexpected text after the last vertex ({vertices} announced): {beginning!r}",
    _ENDS_EARLY: "the file ends early (expected more vertices or edges)",
}


def _fields(data: bytes, out: _Scanned) -> dict[str, Any]:
    """The fields of the messages beyond the error record's numbers."""
    start, end, vertex = (int(x) for x in out.error[1:4])
    return {
        "vertices": int(out.sizes[0]),
        "edges": int(out.sizes[1]),
        "last_vertex": vertex - 1,
        "beginning": lambda: data[start:end].decode("utf-8").strip()[:40],
    }


def _graph(
    data: bytes, out: _Scanned, table: StringTable, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary
) -> Hypergraph:
    """The graph of a good scan. Words and feature names are interned in order of first appearance (a name
    whose values are all zero is not interned: a zero feature is the same as no feature)."""
    vertices, num_edges, num_tokens, num_features = (int(x) for x in out.sizes[:4])
    head = np.repeat(np.arange(vertices, dtype=np.int64), out.counts[:vertices])
    target_lengths = out.target_lengths[:num_edges]
    tokens = out.target[:num_tokens]
    is_tail = tokens < 0
    tail_edge = np.repeat(np.arange(num_edges, dtype=np.int64), target_lengths)[is_tail]
    tails = -tokens[is_tail] - 1
    tail_offsets = offsets_from_counts(np.bincount(tail_edge, minlength=num_edges))
    target_offsets = offsets_from_counts(target_lengths)
    size = int(table.used[0])

    def words(ks: list[int]) -> list[str]:
        texts = [string_at(data, table, k) for k in ks]
        for text in texts:  # [k] with digits other than ASCII ones: Python's isdigit() would have read a tail
            if text[0] == "[" and text[-1] == "]" and text[1:-1].isdigit():
                message = f"tail reference {text} must use ASCII digits"
                raise located(data, data.find(text.encode("utf-8")), message, path)
        return texts

    target = tokens.copy()
    target[~is_tail] = interned_columns(tokens[~is_tail], size, words, vocabulary.indices)
    target[is_tail] = -(np.cumsum(is_tail)[is_tail] - tail_offsets[tail_edge])

    values = out.values[:num_features]
    kept = values != 0.0
    names = out.names[:num_features]
    columns = interned_columns(
        names[kept],
        size,
        lambda ks: [from_moses_hypergraph_name(string_at(data, table, k)) for k in ks],
        feature_space.indices,
    )
    feature_edge = np.repeat(np.arange(num_edges, dtype=np.int64), out.feature_counts[:num_edges])
    feature_offsets = offsets_from_counts(np.bincount(feature_edge[kept], minlength=num_edges))
    edges = EdgeArrays(head, tail_offsets, tails, target_offsets, target, feature_offsets, columns, values[kept])
    try:
        return edge_graph(
            edges,
            (0, num_edges),
            vertices,
            len(feature_space),
            (feature_space, vocabulary),
            source_covered=out.sources[:num_edges].copy(),
        )
    except GraphError as error:
        raise InputError(f"invalid graph: {error}", path) from None


def graph_to_text(hg: Hypergraph) -> str:
    """One graph in the Moses hypergraph format. A Moses edge lists its tails in the order its target uses
    them (``[k]`` names tail vertex k), so an edge whose target uses its tails out of order (a cdec rule
    ``[2] de [1]``) is written with its tails reordered: it reads back as an equivalent edge."""
    vocab = hg.vocabulary
    names = [to_moses_hypergraph_name(n) for n in hg.feature_space.names]
    covered = hg.source_covered
    out = [HEADER, f"{hg.num_nodes} {hg.num_edges}"]
    indptr, indices, data = hg.features.indptr, hg.features.indices, hg.features.data
    for v in range(hg.num_nodes):
        out.append(f"# node {v}")
        out.append(str(len(hg.in_edges(v))))
        for e in hg.in_edges(v):
            tails = hg.edge_tails(e)
            words = []
            for t in hg.edge_target(e):
                if t < 0:
                    words.append(f"[{int(tails[-int(t) - 1])}]")  # tails come out in target order
                else:
                    word = check_word(vocab.word(int(t)), "a Moses hypergraph")
                    if "|||" in word or (word[0] == "[" and word[-1] == "]" and word[1:-1].isdigit()):
                        raise InputError(f"cannot write the word {word!r} in a Moses hypergraph")
                    words.append(word)
            refs = sorted(-int(t) for t in hg.edge_target(e) if t < 0)
            if refs != list(range(1, len(tails) + 1)):
                raise InputError(
                    f"edge {e}: a Moses hypergraph names tails only through [k] in the target, so every tail must "
                    "appear exactly once in the target"
                )
            feats = " ".join(
                f"{names[c]}={format_number(x)}"
                for c, x in zip(indices[indptr[e] : indptr[e + 1]], data[indptr[e] : indptr[e + 1]], strict=True)
            )
            source = int(covered[e]) if covered is not None else 0
            out.append(f"{' '.join(words)}  ||| {feats} ||| {source}")
    return "\n".join(out) + "\n"


def write(graphs: Sequence[Hypergraph], path: str) -> None:
    """One graph per file (``kbmira`` reads one file per sentence): to write a corpus, name a directory
    with :func:`write_hgdir`."""
    if len(graphs) != 1:
        raise InputError(
            f"a Moses hypergraph file holds one graph, not {len(graphs)}; write a directory (an hgdir) instead",
            path,
        )
    write_atomically(path, graph_to_text(graphs[0]))


def write_hgdir(graphs: Sequence[Hypergraph], directory: str, weights: Weights | None = None) -> None:
    """kbmira's ``--hgdir`` layout: ``<directory>/<sid>.gz`` per graph and an optional ``weights`` file
    (``Name= value`` lines). ``sid`` is the graph's sentence id (reading the directory gives it back), else
    its position among the graphs without one; two graphs of one sentence are an error (one file each)."""
    sids, position = [], 0
    for hg in graphs:
        sids.append(position if hg.sentence_id is None else int(hg.sentence_id))
        position += hg.sentence_id is None
    repeated = sorted(sid for sid, count in Counter(sids).items() if count > 1)
    if repeated:
        raise InputError(
            f"an hgdir holds one file per sentence, but sentence {repeated[0]} has several graphs", directory
        )
    os.makedirs(directory, exist_ok=True)
    for sid, hg in zip(sids, graphs, strict=True):
        final = os.path.join(directory, f"{sid}.gz")
        tmp = final + ".tmp"
        with gzip.open(tmp, "wt", encoding="utf-8") as handle:
            handle.write(graph_to_text(hg))
        os.replace(tmp, final)
    if weights is not None:
        from hypertune.formats.weights import write_weights

        write_weights(weights, os.path.join(directory, "weights"), "moses")


def read_hgdir(directory: str, feature_space: FeatureSpace | None = None, vocabulary: Vocabulary | None = None):
    """``(graphs, weights)`` of a kbmira hgdir; ``weights`` is ``None`` when the directory has no ``weights``."""
    from hypertune.formats.weights import read_weights

    feature_space = FeatureSpace() if feature_space is None else feature_space
    vocabulary = Vocabulary() if vocabulary is None else vocabulary
    graphs = []
    for file in corpus_files(directory):
        graphs.extend(read(file, feature_space, vocabulary))
    weights_path = os.path.join(directory, "weights")
    weights = read_weights(weights_path) if os.path.isfile(weights_path) else None
    return graphs, weights


FORMAT = register(GraphFormat("moses-hypergraph", "Moses hypergraphs (kbmira --type hypergraph)", sniff, read, write))
