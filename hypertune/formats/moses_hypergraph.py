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
``metadata["source_covered"]`` (one per edge) and written back (0 for graphs that have none). The writer
writes each edge's tails in the order its target uses them (a cdec rule ``[2] de [1]`` reads back with its
tails swapped and the target ``[1] de [2]``: the same derivations and yields).

A *hgdir* (``kbmira --hgdir``) is a directory of ``<sid>.gz`` files plus a ``weights`` file: reading the
directory gives the graphs in sentence-id order and skips ``weights`` (see :func:`read_hgdir`).
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Sequence

import numba
import numpy as np
import scipy.sparse as sp

from hypertune.errors import GraphError, InputError
from hypertune.formats._common import (
    ArrayBuilder,
    build_located,
    check_word,
    format_number,
    from_moses_hypergraph_name,
    to_moses_hypergraph_name,
)
from hypertune.formats.io import open_text, write_atomically
from hypertune.formats.registry import GraphFormat, corpus_files, register
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights

HEADER = "# target ||| features ||| source-covered"


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    text = _read_fast(path)
    if text is None:
        with open_text(path) as handle:
            try:
                text = handle.read()
            except (UnicodeDecodeError, EOFError, OSError) as error:
                raise InputError(f"cannot read the file ({error})", path) from None
    graph = parse_lines(text.split("\n"), path, feature_space, vocabulary)
    sid = id_from_file_name(path)
    if sid is not None:  # Moses writes sentence i's hypergraph to <hgdir>/i.gz
        graph.metadata["id"] = sid
    return [graph]


def id_from_file_name(path: str) -> int | None:
    """The sentence id in a Moses hypergraph file name: Moses writes sentence 17 to ``<hgdir>/17.gz``
    (``17``, ``17.gz``, ``17.txt.gz`` all name sentence 17; other names carry no id)."""
    match = re.fullmatch(r"(\d+)(\.[A-Za-z]\w*)*", os.path.basename(path))
    return int(match.group(1)) if match else None


def _read_fast(path: str) -> str | None:
    """The text of a plain or gzipped file read in one go (as :func:`open_text` would give it, universal
    newlines included), or ``None`` when anything is unusual: the caller then reads through
    :func:`open_text`, which reports errors."""
    try:
        with open(path, "rb") as raw:
            data = raw.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        elif data[:3] == b"BZh" or data[:6] == b"\xfd7zXZ\x00":
            return None
        text = data.decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):  # gzip.BadGzipFile is an OSError
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def parse_lines(lines: list[str], path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> Hypergraph:
    """The graph of a Moses hypergraph file's lines. A vectorized parser handles well-formed files; anything
    it does not accept goes through :func:`_parse_lines_checked`, which gives the same graph or the located
    error."""
    graph = _parse_fast(lines, path, feature_space, vocabulary)
    if graph is None:
        graph = _parse_lines_checked(lines, path, feature_space, vocabulary)
    return graph


_JOIN = " \x00 "  # between edge lines in the joined text; a line holding the token "\x00" goes the slow way


@numba.njit(cache=True, nogil=True)
def _scan(buf, num_edges):  # pragma: no cover - compiled by numba
    """Tokenize the UTF-8 bytes of the edge lines joined by ``_JOIN``.

    Returns ``status`` (0 when the text is plainly well formed; otherwise the caller uses the checked parser),
    per-edge word, feature and source-covered counts, and the interned strings (words and feature names
    share one table; ids follow first appearance). Feature values of the form ``[+-]digits[.digits]`` with at
    most 15 digits are parsed here exactly (an integer below 2**53 divided by an exact power of ten is
    correctly rounded, as ``float`` is); others are flagged for ``float``. ``first_nonzero[id]`` ranks names
    by their first nonzero (unflagged) value.
    """
    n = buf.size
    cap = n // 2 + 2
    word_ids = np.empty(cap, np.int64)
    name_ids = np.empty(cap, np.int64)
    values = np.empty(cap, np.float64)
    flags = np.zeros(cap, np.bool_)
    value_start = np.empty(cap, np.int64)
    value_end = np.empty(cap, np.int64)
    word_count = np.zeros(num_edges, np.int64)
    feature_count = np.zeros(num_edges, np.int64)
    sources = np.zeros(num_edges, np.int64)
    str_start = np.empty(cap, np.int64)
    str_end = np.empty(cap, np.int64)
    hashes = np.empty(cap, np.uint64)
    first_nonzero = np.empty(cap, np.int64)
    size = 4096
    table = np.full(size, -1, np.int64)
    nstr = 0
    nw = 0
    nf = 0
    order = 0
    flagged = 0
    edge = 0
    field = 0
    source_seen = 0
    status = 0
    start = -1
    i = 0
    while i <= n:
        if i < n:
            b = buf[i]
            if b == 32 or (b >= 9 and b <= 13) or (b >= 28 and b <= 31):
                space = True
            elif b >= 0xC2 and b <= 0xE3:
                c1 = buf[i + 1] if i + 1 < n else 0
                c2 = buf[i + 2] if i + 2 < n else 0
                if (
                    (b == 0xC2 and (c1 == 0x85 or c1 == 0xA0))
                    or (b == 0xE1 and c1 == 0x9A and c2 == 0x80)
                    or (b == 0xE2 and c1 == 0x80 and ((c2 >= 0x80 and c2 <= 0x8A) or c2 == 0xA8 or c2 == 0xA9))
                    or (b == 0xE2 and ((c1 == 0x80 and c2 == 0xAF) or (c1 == 0x81 and c2 == 0x9F)))
                    or (b == 0xE3 and c1 == 0x80 and c2 == 0x80)
                ):
                    return (
                        1,
                        word_ids[:0],
                        word_count,
                        name_ids[:0],
                        values[:0],
                        flags[:0],
                        value_start[:0],
                        value_end[:0],
                        feature_count,
                        sources,
                        str_start[:0],
                        str_end[:0],
                        first_nonzero[:0],
                        flagged,
                    )
                space = False
            else:
                space = False
        else:
            space = True
        if not space:
            if start < 0:
                start = i
            i += 1
            continue
        if start < 0:
            i += 1
            continue
        s = start
        e = i
        start = -1
        i += 1
        if e - s == 1 and buf[s] == 0:
            if field != 2 or source_seen != 1 or edge + 1 >= num_edges:
                status = 2
                break
            edge += 1
            field = 0
            source_seen = 0
            continue
        if e - s == 3 and buf[s] == 124 and buf[s + 1] == 124 and buf[s + 2] == 124:
            if field == 2:
                status = 3
                break
            field += 1
            continue
        if field == 2:
            if source_seen != 0 or e - s > 18:
                status = 4
                break
            v = 0
            for j in range(s, e):
                d = np.int64(buf[j]) - 48
                if d < 0 or d > 9:
                    status = 4
                    break
                v = v * 10 + d
            if status != 0:
                break
            sources[edge] = v
            source_seen = 1
            continue
        ke = e
        if field == 1:
            q = e - 1
            while q >= s and buf[q] != 61:
                q -= 1
            if q <= s:
                status = 5
                break
            ke = q
        h = np.uint64(14695981039346656037)
        for j in range(s, ke):
            h = (h ^ np.uint64(buf[j])) * np.uint64(1099511628211)
        slot = np.int64(h & np.uint64(size - 1))
        while True:
            k = table[slot]
            if k == -1:
                k = nstr
                table[slot] = k
                str_start[k] = s
                str_end[k] = ke
                hashes[k] = h
                first_nonzero[k] = -1
                nstr += 1
                if 2 * nstr > size:
                    size *= 2
                    table = np.full(size, -1, np.int64)
                    for m in range(nstr):
                        slot2 = np.int64(hashes[m] & np.uint64(size - 1))
                        while table[slot2] != -1:
                            slot2 = (slot2 + 1) & (size - 1)
                        table[slot2] = m
                break
            if hashes[k] == h and str_end[k] - str_start[k] == ke - s:
                same = True
                o = str_start[k] - s
                for j in range(s, ke):
                    if buf[j + o] != buf[j]:
                        same = False
                        break
                if same:
                    break
            slot = (slot + 1) & (size - 1)
        if field == 0:
            word_ids[nw] = k
            nw += 1
            word_count[edge] += 1
            continue
        j = ke + 1
        negative = False
        if j < e and (buf[j] == 45 or buf[j] == 43):
            negative = buf[j] == 45
            j += 1
        mantissa = 0
        digits = 0
        decimals = 0
        dot = False
        ok = True
        while j < e:
            c = buf[j]
            if c >= 48 and c <= 57:
                mantissa = mantissa * 10 + (np.int64(c) - 48)
                digits += 1
                if dot:
                    decimals += 1
                if digits > 15:
                    ok = False
                    break
            elif c == 46 and not dot:
                dot = True
            else:
                ok = False
                break
            j += 1
        name_ids[nf] = k
        value_start[nf] = ke + 1
        value_end[nf] = e
        if ok and digits > 0:
            scale = 1.0
            for _ in range(decimals):
                scale *= 10.0
            x = mantissa / scale
            values[nf] = -x if negative else x
            if x != 0.0 and first_nonzero[k] < 0:
                first_nonzero[k] = order
                order += 1
        else:
            values[nf] = 0.0
            flags[nf] = True
            flagged += 1
        nf += 1
        feature_count[edge] += 1
    if status == 0 and (edge != num_edges - 1 or field != 2 or source_seen != 1):
        status = 6
    return (
        status,
        word_ids[:nw],
        word_count,
        name_ids[:nf],
        values[:nf],
        flags[:nf],
        value_start[:nf],
        value_end[:nf],
        feature_count,
        sources,
        str_start[:nstr],
        str_end[:nstr],
        first_nonzero[:nstr],
        flagged,
    )


def _first_order(ids: np.ndarray) -> np.ndarray:
    """The distinct values of ``ids`` in order of first occurrence."""
    distinct, first = np.unique(ids, return_index=True)
    return distinct[np.argsort(first, kind="stable")]


def _parse_fast(lines: list[str], path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> Hypergraph | None:
    """The graph, or ``None`` when the file is not plainly well formed. Nothing is added to ``feature_space``
    or ``vocabulary`` before the whole file is known to be good, so the checked parser can start afresh."""
    body = [line for line in map(str.strip, lines) if line and line[0] != "#"]
    if not body:
        return None
    fields = body[0].split()
    if len(fields) != 2:
        return None
    try:
        num_vertices, num_edges = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    if num_vertices < 1 or num_edges < 1 or len(body) != 1 + num_vertices + num_edges:
        return None
    counts = []
    edge_lines = []
    position = 1
    for _ in range(num_vertices):
        if position >= len(body):
            return None  # counts that run past the end: the checked parser says where
        try:
            count = int(body[position])
        except ValueError:
            return None
        if count < 1:
            return None
        counts.append(count)
        edge_lines.extend(body[position + 1 : position + 1 + count])
        position += 1 + count
    if position != len(body) or len(edge_lines) != num_edges:
        return None
    num = num_edges
    text = _JOIN.join(edge_lines)
    if text.count("|||") != 2 * num:
        return None  # a "|||" glued to a word
    data = text.encode("utf-8", "surrogatepass")
    (
        status,
        word_ids,
        word_count,
        name_ids,
        values,
        flags,
        value_start,
        value_end,
        feature_count,
        sources,
        str_start,
        str_end,
        first_nonzero,
        flagged,
    ) = _scan(np.frombuffer(data, dtype=np.uint8), num)
    if status != 0:
        return None
    size = str_start.size
    head = np.repeat(np.arange(num_vertices, dtype=np.int64), counts)

    def symbol(i: int) -> str:
        return data[str_start[i] : str_end[i]].decode("utf-8", "surrogatepass")

    # target sides: words and [k] tail references
    word_edge = np.repeat(np.arange(num, dtype=np.int64), word_count)
    tail_value = np.full(size, -1, dtype=np.int64)
    word_used = np.zeros(size, dtype=np.bool_)
    word_used[word_ids] = True
    strings: dict[int, str] = {}
    for i in np.flatnonzero(word_used).tolist():
        word = strings[i] = symbol(i)
        if word[0] == "[" and word[-1] == "]" and word[1:-1].isdigit():
            digits = word[1:-1]
            if not digits.isascii() or len(digits) > 18:
                return None
            tail_value[i] = int(digits)
    word_tails = tail_value[word_ids]
    is_tail = word_tails >= 0
    tails = word_tails[is_tail]
    tail_edge = word_edge[is_tail]
    if np.any(tails >= head[tail_edge]):
        return None
    tail_offsets = np.concatenate(([0], np.cumsum(np.bincount(tail_edge, minlength=num), dtype=np.int64)))
    target_offsets = np.concatenate(([0], np.cumsum(word_count, dtype=np.int64)))

    # feature values the kernel left to float()
    if flagged:
        inf = float("inf")
        for t in np.flatnonzero(flags).tolist():
            try:
                x = float(data[value_start[t] : value_end[t]].decode("utf-8", "surrogatepass"))
            except ValueError:
                return None
            if x != x or x == inf or x == -inf:
                return None
            values[t] = x
        nonzero = _first_order(name_ids[values != 0.0])
    else:
        ranked = np.flatnonzero(first_nonzero >= 0)
        nonzero = ranked[np.argsort(first_nonzero[ranked])]

    # the file is good: intern words and feature names in order of first appearance, as the checked parser does
    word_order = _first_order(word_ids[~is_tail])
    word_column = np.zeros(size, dtype=np.int64)
    word_column[word_order] = vocabulary.indices([strings[i] for i in word_order.tolist()])
    target = word_column[word_ids]
    target[is_tail] = -(np.cumsum(is_tail)[is_tail] - tail_offsets[tail_edge])
    column_of = np.full(size, -1, dtype=np.int64)
    index = feature_space.index
    name_cache: dict[str, str] = {}
    for i in nonzero.tolist():
        name = strings[i] if i in strings else symbol(i)
        canonical = name_cache.get(name)
        if canonical is None:
            canonical = name_cache[name] = from_moses_hypergraph_name(name)
        column_of[i] = index(canonical)
    kept = values != 0.0
    columns = column_of[name_ids[kept]]
    feature_edge = np.repeat(np.arange(num, dtype=np.int64), feature_count)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(feature_edge[kept], minlength=num), dtype=np.int64)))
    features = sp.csr_matrix((values[kept], columns, indptr), shape=(num, len(feature_space)))
    try:
        return Hypergraph(
            num_vertices,
            head,
            tail_offsets,
            tails,
            features,
            target_offsets,
            target,
            feature_space,
            vocabulary,
            None,
            {"source_covered": sources.tolist()},
        )
    except GraphError as error:
        raise InputError(f"invalid graph: {error}", path) from None


def _parse_lines_checked(
    lines: list[str], path: str, feature_space: FeatureSpace, vocabulary: Vocabulary
) -> Hypergraph:
    """The line-by-line parser: slow, but it locates every error (file, line, vertex)."""
    n = len(lines)
    i = 0

    def next_line() -> tuple[int, str]:
        """The next non-comment, non-blank line (1-based number, text)."""
        nonlocal i
        while i < n:
            text = lines[i]
            i += 1
            stripped = text.strip()
            if stripped and not stripped.startswith("#"):
                return i, stripped
        raise InputError("the file ends early (expected more vertices or edges)", path, n)

    number, sizes = next_line()
    fields = sizes.split()
    if len(fields) != 2:
        raise InputError(f"expected '<vertices> <edges>', got {sizes!r}", path, number)
    try:
        num_vertices, num_edges = int(fields[0]), int(fields[1])
    except ValueError:
        raise InputError(f"expected '<vertices> <edges>' (two integers), got {sizes!r}", path, number) from None
    if num_vertices < 1 or num_edges < 1:
        raise InputError("a hypergraph needs at least one vertex and one edge", path, number)
    builder = ArrayBuilder(feature_space, vocabulary)
    covered: list[int] = []
    word_index = vocabulary.index
    name_cache: dict[str, str] = {}
    head_list = builder.head
    for vertex in range(num_vertices):
        number, text = next_line()
        try:
            count = int(text)
        except ValueError:
            raise InputError(f"vertex {vertex}: expected its number of edges, got {text!r}", path, number) from None
        if count < 1:
            raise InputError(f"vertex {vertex}: expected at least one edge, got {count}", path, number)
        if len(head_list) + count > num_edges:
            raise InputError(
                f"vertex {vertex}: {count} more edges exceed the {num_edges} edges the header announces", path, number
            )
        for _ in range(count):
            number, text = next_line()
            parts = text.split("|||")
            if len(parts) != 3:
                raise InputError(
                    f"vertex {vertex}: expected an edge 'target ||| features ||| source-covered', got {text!r}",
                    path,
                    number,
                )
            tails: list[int] = []
            tokens: list[int] = []
            for word in parts[0].split():
                if word[0] == "[" and word[-1] == "]" and word[1:-1].isdigit():
                    tail = int(word[1:-1])
                    if tail >= vertex:
                        raise InputError(
                            f"vertex {vertex}: unknown tail id {word} (tails must be earlier vertices 0..{vertex - 1})",
                            path,
                            number,
                        )
                    tails.append(tail)
                    tokens.append(-len(tails))
                else:
                    tokens.append(word_index(word))
            features = []
            for item in parts[1].split():
                name, equals, value = item.rpartition("=")
                if not equals or not name:
                    raise InputError(f"vertex {vertex}: expected a feature 'name=value', got {item!r}", path, number)
                try:
                    x = float(value)
                except ValueError:
                    raise InputError(f"vertex {vertex}: bad number in feature {item!r}", path, number) from None
                if x != x or x in (float("inf"), float("-inf")):
                    raise InputError(f"vertex {vertex}: feature {item!r} must be finite", path, number)
                if x == 0.0:
                    continue  # Moses lists zero-valued dense components; a zero is the same as no feature
                canonical = name_cache.get(name)
                if canonical is None:
                    canonical = name_cache[name] = from_moses_hypergraph_name(name)
                features.append((canonical, x))
            source = parts[2].strip()
            if not source.isdigit():
                raise InputError(f"vertex {vertex}: expected a source-covered count, got {source!r}", path, number)
            covered.append(int(source))
            builder.add_edge(vertex, tails, features, tokens)
    if len(head_list) != num_edges:
        raise InputError(f"the header announces {num_edges} edges but the file has {len(head_list)}", path, number)
    while i < n:
        stripped = lines[i].strip()
        i += 1
        if stripped and not stripped.startswith("#"):
            raise InputError(f"unexpected text after the last vertex: {stripped[:40]!r}", path, i)
    return build_located(builder, num_vertices, path, metadata={"source_covered": covered})


def graph_to_text(hg: Hypergraph) -> str:
    """One graph in the Moses hypergraph format. A Moses edge lists its tails in the order its target uses
    them (``[k]`` names tail vertex k), so an edge whose target uses its tails out of order (a cdec rule
    ``[2] de [1]``) is written with its tails reordered: it reads back as an equivalent edge."""
    vocab = hg.vocabulary
    names = [to_moses_hypergraph_name(n) for n in hg.feature_space.names]
    covered = hg.metadata.get("source_covered")
    if covered is not None and len(covered) != hg.num_edges:
        covered = None
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
    (``Name= value`` lines)."""
    os.makedirs(directory, exist_ok=True)
    for sid, hg in enumerate(graphs):
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


def sniff(head: str) -> bool:
    lines = [line.strip() for line in head.split("\n")[:6]]
    if not lines or not lines[0].startswith("#"):
        return False
    if lines[0].replace(" ", "") == HEADER.replace(" ", ""):
        return True
    body = [line for line in lines if line and not line.startswith("#")]
    return len(body) >= 2 and len(body[0].split()) == 2 and all(f.isdigit() for f in body[0].split())


FORMAT = register(GraphFormat("moses-hypergraph", "Moses hypergraphs (kbmira --type hypergraph)", sniff, read, write))
