"""One registry of graph formats: each format module registers a reader (and maybe a writer) and a sniffer.

``read_graphs`` picks the format the user names, or the first whose sniffer recognises the file's
beginning; a directory reads as a corpus of per-sentence files in sentence-id order. All graphs of one
call share a :class:`FeatureSpace` and a :class:`Vocabulary`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hypertune.errors import InputError, UsageError
from hypertune.formats.io import is_empty, read_head, require_rereadable
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

Reader = Callable[[str, FeatureSpace, Vocabulary], list[Hypergraph]]
Writer = Callable[[Sequence[Hypergraph], str], None]


@dataclass(frozen=True)
class GraphFormat:
    name: str
    description: str
    sniff: Callable[[str], bool]
    read: Reader
    write: Writer | None = None
    sniff_bytes: Callable[[bytes], bool] | None = None  # for binary formats (checked before the text sniffers)


FORMATS: dict[str, GraphFormat] = {}


def register(fmt: GraphFormat) -> GraphFormat:
    FORMATS[fmt.name] = fmt
    return fmt


def detect_format(path: str) -> GraphFormat:
    """The format whose sniffer recognises the file, or an :class:`InputError` listing the formats."""
    with open(path, "rb") as raw:
        magic = raw.read(64)
    for fmt in FORMATS.values():
        if fmt.sniff_bytes is not None and fmt.sniff_bytes(magic):
            return fmt
    head = read_head(path)
    for fmt in FORMATS.values():
        if fmt.sniff(head):
            return fmt
    if not head.strip():
        if is_empty(path):
            raise InputError("the file is empty; expected a graph, lattice or n-best list", path)
        raise InputError(f"binary data, not a known graph format (name it with --format: {', '.join(FORMATS)})", path)
    raise InputError(f"cannot tell the format; name it with --format ({', '.join(FORMATS)})", path)


def get_format(name: str) -> GraphFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise UsageError(f"unknown format {name!r}; known formats: {', '.join(FORMATS)}") from None


#: Files a corpus directory may hold besides its graphs: kbmira's hgdir keeps its weights in ``weights``.
NOT_GRAPHS = frozenset({"weights", "weights.txt", "dense.weights", "sparse.weights"})


def corpus_files(path: str) -> list[str]:
    """A file, or the files of a directory ordered by the first number in their names (sentence ids).
    Hidden files and weights files (:data:`NOT_GRAPHS`, e.g. an hgdir's ``weights``) are skipped."""
    if not os.path.isdir(path):
        return [path]
    names = [
        n
        for n in os.listdir(path)
        if not n.startswith(".") and n not in NOT_GRAPHS and os.path.isfile(os.path.join(path, n))
    ]

    def key(name: str) -> tuple[int, int | str, str]:
        match = re.search(r"\d+", name)
        return (0, int(match.group()), name) if match else (1, name, name)

    return [os.path.join(path, n) for n in sorted(names, key=key)]


def read_graphs(
    paths: str | Iterable[str],
    format: str | None = None,
    feature_space: FeatureSpace | None = None,
    vocabulary: Vocabulary | None = None,
) -> list[Hypergraph]:
    """Every graph in ``paths`` (files or directories), sharing one feature space and vocabulary."""
    feature_space = FeatureSpace() if feature_space is None else feature_space
    vocabulary = Vocabulary() if vocabulary is None else vocabulary
    graphs: list[Hypergraph] = []
    for path in [paths] if isinstance(paths, str) else paths:
        if not os.path.exists(path):
            raise InputError("no such file or directory", path)
        require_rereadable(path)
        for file in corpus_files(path):
            fmt = get_format(format) if format else detect_format(file)
            graphs.extend(fmt.read(file, feature_space, vocabulary))
    return graphs


def write_graphs(graphs: Sequence[Hypergraph], path: str, format: str) -> None:
    fmt = get_format(format)
    if fmt.write is None:
        raise UsageError(f"hypertune reads {format} but does not write it")
    fmt.write(graphs, path)
