"""HTK Standard Lattice Format (SLF): ASR lattices and the MT lattices written in the same format.

::

    VERSION=1.0
    UTTERANCE=sent1
    lmscale=12.0 wdpenalty=-1.0
    start=0 end=3
    N=4 L=4
    I=0 t=0.00 W=!NULL
    I=1 t=0.25 W=the
    ...
    J=0 S=0 E=1 a=-120.5 l=-2.3
    J=1 S=1 E=3 W=cat a=-80.0 l=-1.0

Header fields are kept in ``metadata["slf"]`` (a dict of strings; an integer ``UTTERANCE`` also becomes
the graph's ``sentence_id``). ``I=`` lines define nodes (fields ``t`` time, ``W`` word, ``v`` variant, ...);
``J=`` lines define links with ``S`` start node and ``E`` end node (long forms ``START``, ``END``,
``WORD``, ``acoustic``, ``language``, ... are accepted). A link's words: its own ``W`` if it has one,
else the ``W`` of its end node (words on nodes); ``!NULL`` is the empty word. Numeric link fields
become features: ``a`` -> ``acoustic``, ``l`` -> ``lm``, ``r`` -> ``pron``, any other number ``x`` ->
``slf_x``; ``d`` (segmentation) and ``s``/``v`` labels are ignored. Scores are log probabilities as
HTK writes them (so the HTK combination is the weights ``acoustic = 1``, ``lm = lmscale``, and a word
penalty via ``wdpenalty``). The start node is ``start=`` (default: the only node without incoming
links), the final node ``end=`` (default: the only node without outgoing links). The lattice must be
acyclic; nodes are sorted topologically. ``N``/``L`` counts are checked.
"""

from __future__ import annotations

import math
import shlex
from typing import NamedTuple

from hypertune.errors import GraphError, InputError
from hypertune.formats.io import open_text
from hypertune.formats.registry import GraphFormat, register
from hypertune.formats.sniffing import sniff_htk_slf as sniff
from hypertune.hypergraph import Hypergraph, HypergraphBuilder
from hypertune.symbols import FeatureSpace, Vocabulary

NULL = "!NULL"
_LONG = {
    "NODES": "N",
    "LINKS": "L",
    "START": "S",
    "END": "E",
    "WORD": "W",
    "time": "t",
    "var": "v",
    "div": "d",
    "acoustic": "a",
    "language": "l",
    "ngram": "n",
}
_FEATURES = {"a": "acoustic", "l": "lm", "r": "pron"}
_NOT_FEATURES = {"S", "E", "W", "J", "d", "s", "v", "t"}


def _fields(line: str, path: str, number: int) -> dict[str, str]:
    try:
        tokens = shlex.split(line, comments=False, posix=True) if '"' in line or "'" in line else line.split()
    except ValueError as error:
        raise InputError(f"bad quoting ({error})", path, number) from None
    out = {}
    for token in tokens:
        name, equals, value = token.partition("=")
        if not equals or not name:
            raise InputError(f"expected 'name=value' fields, got {token!r}", path, number)
        out[_LONG.get(name, name)] = value
    return out


def _index(value: str, what: str, limit: int | None, path: str, number: int) -> int:
    if not value.isdigit():
        raise InputError(f"expected a {what} number, got {value!r}", path, number)
    k = int(value)
    if limit is not None and k >= limit:
        raise InputError(f"{what} {k} is out of range (N={limit} nodes)", path, number)
    return k


class _Slf(NamedTuple):
    """An SLF file's lines, sorted: header fields, node fields by node number, link fields with their line."""

    header: dict[str, str]
    nodes: dict[int, dict[str, str]]
    links: list[tuple[int, dict[str, str]]]
    num_nodes: int
    last: int  # the last line with content


def _parse(lines: list[str], path: str) -> _Slf:
    """The fields of every line, with the counts ``N=`` and ``L=`` checked against the nodes and links."""
    header: dict[str, str] = {}
    nodes: dict[int, dict[str, str]] = {}
    links: list[tuple[int, dict[str, str]]] = []
    num_nodes = num_links = None
    last = 0
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        last = number
        fields = _fields(line, path, number)
        if "I" in fields:
            k = _index(fields["I"], "node", num_nodes, path, number)
            if k in nodes:
                raise InputError(f"node {k} is defined twice", path, number)
            nodes[k] = fields
        elif "J" in fields:
            if "S" not in fields or "E" not in fields:
                raise InputError("a link needs S= (start node) and E= (end node)", path, number)
            links.append((number, fields))
        else:
            if "N" in fields or "L" in fields:
                if "N" not in fields or "L" not in fields:
                    raise InputError("expected the counts 'N=<nodes> L=<links>'", path, number)
                num_nodes = _index(fields["N"], "node count", None, path, number)
                num_links = _index(fields["L"], "link count", None, path, number)
            header.update(fields)
    if num_nodes is None or num_links is None:
        raise InputError("no 'N=<nodes> L=<links>' line (is this an HTK lattice?)", path, last or 1)
    if len(links) != num_links:
        raise InputError(f"the header announces L={num_links} links but the file has {len(links)}", path, last)
    return _Slf(header, nodes, links, num_nodes, last)


def _link_features(fields: dict[str, str], path: str, number: int) -> list[tuple[str, float]]:
    """A link's numeric fields as features (see the module docstring)."""
    features = []
    for name, value in fields.items():
        if name in _NOT_FEATURES:
            continue
        try:
            x = float(value)
        except ValueError:
            raise InputError(f"link field {name}={value!r}: expected a number", path, number) from None
        if not math.isfinite(x):
            raise InputError(f"link field {name}={value!r} must be finite", path, number)
        features.append((_FEATURES.get(name, f"slf_{name}"), x))
    return features


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    with open_text(path) as handle:
        try:
            lines = handle.read().split("\n")
        except (UnicodeDecodeError, EOFError, OSError) as error:
            raise InputError(f"cannot read the file ({error})", path) from None
    header, nodes, links, num_nodes, last = _parse(lines, path)
    builder = HypergraphBuilder(feature_space, vocabulary)
    for k in range(num_nodes):
        builder.add_node(str(k))
    outgoing = [0] * num_nodes
    incoming = [0] * num_nodes
    arcs = []
    for number, fields in links:
        start = _index(fields["S"], "start node", num_nodes, path, number)
        end = _index(fields["E"], "end node", num_nodes, path, number)
        word = fields.get("W")
        if word is None:
            word = nodes.get(end, {}).get("W", NULL)
        outgoing[start] += 1
        incoming[end] += 1
        arcs.append((number, start, end, word, _link_features(fields, path, number)))
    start_node = _terminal(header.get("start"), incoming, "start", "incoming", num_nodes, path, last)
    end_node = _terminal(header.get("end"), outgoing, "end", "outgoing", num_nodes, path, last)
    builder.add_edge(start_node, (), None, [])
    for number, start, end, word, features in arcs:
        if end == start_node:
            raise InputError(f"a link enters the start node {start_node}", path, number)
        builder.add_edge(end, [start], features, [0] if word == NULL else [0, word])
    metadata = {"slf": {k: v for k, v in header.items() if k not in ("N", "L")}}
    utterance = header.get("UTTERANCE", "")
    # a sentence id; other utterance names stay in metadata["slf"]
    sid = int(utterance) if utterance.isascii() and utterance.isdigit() else None
    try:
        return [builder.build(end_node, trim_graph=True, metadata=metadata, sentence_id=sid)]
    except GraphError as error:
        raise InputError(f"invalid lattice: {error}", path, last) from None


def _terminal(given: str | None, degree: list[int], what: str, direction: str, n: int, path: str, line: int) -> int:
    """The ``start`` or ``end`` node: as the header gives it, else the only node without links in ``direction``."""
    if given is not None:
        return _index(given, f"{what} node", n, path, line)
    candidates = [k for k in range(n) if degree[k] == 0]
    if len(candidates) != 1:
        raise InputError(
            f"cannot tell the {what} node: {len(candidates)} nodes have no {direction} links (give {what}=)",
            path,
            line,
        )
    return candidates[0]


FORMAT = register(GraphFormat("htk-slf", "HTK Standard Lattice Format (SLF) lattices", sniff, read))
