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
``metadata["source_covered"]`` (one per edge) and written back.

A *hgdir* (``kbmira --hgdir``) is a directory of ``<sid>.gz`` files plus a ``weights`` file: reading the
directory gives the graphs in sentence-id order and skips ``weights`` (see :func:`read_hgdir`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from hypertune.errors import InputError
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
    with open_text(path) as handle:
        try:
            lines = handle.read().split("\n")
        except (UnicodeDecodeError, EOFError, OSError) as error:
            raise InputError(f"cannot read the file ({error})", path) from None
    return [parse_lines(lines, path, feature_space, vocabulary)]


def parse_lines(lines: list[str], path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> Hypergraph:
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
    """One graph in the Moses hypergraph format."""
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
                    words.append(f"[{int(tails[-int(t) - 1])}]")
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
            order = [-int(t) - 1 for t in hg.edge_target(e) if t < 0]
            if order != sorted(order):
                raise InputError(f"edge {e}: tails used out of order in the target cannot be written for Moses")
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
    import gzip

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
