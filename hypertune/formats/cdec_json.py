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

The file is JSON as Python's :mod:`json` module reads it, and it is read as json's values would be taken
key by key: an edge list waits for its ``"node"`` (so ``"rules"`` or ``"features"`` given between them
count for its edges), the last of a key repeated in an edge or node object counts, an object where cdec
writes a list is the list of its members (which are no ids), and an integer counts by its value however
many digits it has (up to json's 4300) and a ``[k]`` variable whatever decimal digits write ``k``.

Reading is one compiled pass over the file's bytes (:mod:`hypertune.formats.json_cdec_grammar` over
:mod:`hypertune.formats.json_lexer`) that checks the JSON syntax as :mod:`json` does and fills the graph's
arrays: strings with escapes (``\\/``, ``\\uXXXX`` and surrogate pairs, a lone surrogate kept as Python
keeps it) are decoded in the pass, numbers are converted exactly (the few that the exact fast path leaves
are converted with ``float()``), and a bad graph stops the pass with an error code turned into an
:class:`InputError` naming the file, the graph and the line where its object starts (the messages:
``_MESSAGES``). The wording of a JSON syntax error is the :mod:`json` module's own: the pass finds that
the object is not valid JSON and the decoder is asked for its message and line. Nothing is added to the
feature space or the vocabulary from a file that fails.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.errors import GraphError, InputError
from hypertune.formats import json_cdec_grammar as grammar
from hypertune.formats._common import check_word, format_number
from hypertune.formats._scan import (
    NO_DIGITS,
    EdgeArrays,
    StringTable,
    edge_graph,
    flagged_floats,
    interned_columns,
    located,
    new_error,
    new_key_table,
    new_string_table,
    read_bytes,
    run_scan,
    scan_error,
    unicode_digits,
)
from hypertune.formats.io import write_atomically
from hypertune.formats.json_lexer import HUGE_INTEGER, NOT_JSON, skip_value
from hypertune.formats.registry import GraphFormat, register
from hypertune.formats.sniffing import sniff_cdec_json as sniff
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

_TARGET_VARIABLE = re.compile(r"^\[(?:[^\],\s]+,)?(\d+)\]$")
_NONTERMINAL = re.compile(r"^\[[^\]\s]+\]$")

_RULE_FORM = "expected a rule '[LHS] ||| source ||| target [||| features]'"
_EDGE = "edge {edge} (node {node})"
#: The message of every error code of the scan (str.format templates; all but the first three follow
#: "graph {graph}: "). ``value`` is the offending JSON value, ``a`` and ``b`` the code's numbers.
_MESSAGES = {
    grammar.TOP: "expected a JSON object ('{{'), got {got!r}",
    grammar.NO_GRAPH: "no graph in the file (expected a cdec JSON object)",
    grammar.SYNTAX: "invalid JSON (nested too deeply for the json module to say more)",
    grammar.HUGE: "an integer of more than 4300 digits (more than json's int() reads)",
    grammar.RULES_SHAPE: '"rules" must be a flat list [id, rule, id, rule, ...]',
    grammar.RULES_ITEM: '"rules" item {a}: expected an integer id and a rule string',
    grammar.RULE_STRING: "rule {rule_id}: " + _RULE_FORM + ", got {value!r}",
    grammar.FEATURES_SHAPE: '"features" must be a list of feature names',
    grammar.EDGES_TYPE: 'node {node}: "edges" must be a list',
    grammar.TWO_EDGES: 'node {node}: two "edges" entries without a "node" entry between them',
    grammar.NODE_TYPE: 'node {node}: "node" must be an object',
    grammar.IN_EDGES: "node {node}: in_edges {in_edges} do not match the {a} edges listed before it (expected "
    "{expected})",
    grammar.EDGES_AFTER: '{a} edges after the last node (expected a "node" entry)',
    grammar.NO_NODES: 'no nodes (expected "edges" and "node" entries)',
    grammar.EDGE_NOT_OBJECT: _EDGE + ": expected an object",
    grammar.TAIL_TYPE: _EDGE + ': "tail" must be a list of node ids',
    grammar.TAIL_ID: _EDGE + ": unknown tail id {value} (tails must be earlier nodes 0..{last_node})",
    grammar.FEATS_SHAPE: _EDGE + ': "feats" must be a flat list [feature, value, ...]',
    grammar.FID_RANGE: _EDGE + ': feature id {value} is not in the "features" list ({b} names)',
    grammar.FID_TYPE: _EDGE + ": expected a feature id or name, got {value!r}",
    grammar.VALUE_TYPE: _EDGE + " feature {feature}: expected a number, got {value!r}",
    grammar.VALUE_INF: _EDGE + " feature {feature}: feature values must be finite",
    grammar.UNKNOWN_RULE: _EDGE + ": unknown rule {value!r}",
    grammar.RULE_FORMAT: _EDGE + ": " + _RULE_FORM + ", got {value!r}",
    grammar.TARGET_TAIL: _EDGE + ": target refers to tail [{k}] of an edge with {b} tails",
}
_FILE_LEVEL = (grammar.TOP, grammar.NO_GRAPH, grammar.SYNTAX)


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    return parse(read_bytes(path, "cdec JSON file"), path, feature_space, vocabulary)


def read_text(text: str, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """The graphs of a cdec JSON text (:func:`parse` of its UTF-8 bytes)."""
    return parse(text.encode("utf-8"), path, feature_space, vocabulary)


class _Scan:
    """One file's bytes and what the compiled pass made of them: the arrays (:class:`grammar.Scanned`),
    the string tables (words, feature names, labels, the integers of more than 18 digits) and the code."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        n = len(data)
        raw = np.frombuffer(data, dtype=np.uint8)
        # the bytes, then room for strings decoded from escapes (an edge list may be decoded twice)
        self.buf = np.empty(3 * n + 16, dtype=np.uint8)
        self.buf[:n] = raw
        self.values, self.objects = (int(x) for x in grammar.bounds(raw))
        self.out, made, self.code = self._run(NO_DIGITS)
        if self.code == grammar.NEED_DIGITS:  # a rule's [k] has characters only the Unicode digits tell
            self.out, made, self.code = self._run(unicode_digits())
        self.words, self.names, self.labels, _, self.bigs = made
        self.count = int(self.out.sizes[grammar.GRAPHS])
        self.scratch = self.buf[n : self.out.cursor[0]].tobytes()  # the strings decoded from escapes

    def _run(self, digits: np.ndarray) -> tuple[grammar.Scanned, tuple[Any, ...], int]:
        """The compiled pass (:func:`run_scan`) with the Unicode ``digits`` (empty: none)."""
        n = len(self.data)
        return run_scan(
            lambda out, *made: grammar.scan(self.buf, n, out, *made),
            lambda room: self._arrays(room[0], digits),
            (new_string_table, new_string_table, new_string_table, new_key_table, new_string_table),
            (max(4096, n >> 8), 256, 16, max(1024, n >> 9), 16, 2 * self.values),
        )

    def _arrays(self, target_room: int, digits: np.ndarray) -> grammar.Scanned:
        """Arrays as large as the file can need, but for the target tokens (``target_room``)."""
        values, objects, n = self.values, self.objects, len(self.data)
        return grammar.Scanned(
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
            rule_starts=np.empty(values, np.int64),
            rule_ends=np.empty(values, np.int64),
            rule_graphs=np.empty(values, np.int64),
            rule_tokens=np.empty(target_room, np.int64),
            sizes=np.zeros(grammar.SIZES, np.int64),
            error=new_error(),
            deferred=new_error(),
            stack=np.zeros(values + objects, np.uint8),
            cursor=np.full(1, n, np.int64),
            digits=digits,
        )

    def string(self, table: StringTable, k: int) -> str:
        """String ``k`` of a table: in the file's bytes, or decoded into the scratch space."""
        start, end, n = int(table.starts[k]), int(table.ends[k]), len(self.data)
        text = self.data[start:end] if start < n else self.scratch[start - n : end - n]
        return text.decode("utf-8", "surrogatepass")

    def strings(self, table: StringTable) -> Callable[[list[int]], list[str]]:
        return lambda ks: [self.string(table, k) for k in ks]


def parse(data: bytes, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """The graphs of a cdec JSON file's bytes (as :func:`~hypertune.formats.io.read_bytes` gives them), or
    an :class:`InputError` at the first bad graph. Nothing is added to ``feature_space`` or ``vocabulary``
    unless the whole file is good."""
    scan = _Scan(data)
    code = scan.code
    if code == grammar.TOP and scan.count and data[int(scan.out.error[1]) :].decode("utf-8").strip() == '"':
        code = 0  # cdec's own hg_test.lattice ends with a stray quote after the last object
    if code:
        error = _scan_error(scan, path)
        # a graph that fails to build before the bad one comes first (as when read one by one)
        _graphs(scan, (FeatureSpace(feature_space), Vocabulary(vocabulary)), path)  # copies: nothing is added
        raise error
    return _graphs(scan, (feature_space, vocabulary), path)


def _scan_error(scan: _Scan, path: str) -> InputError:
    """The located error of a failed scan: json's for an object json refuses (which it does before any of
    its graph is looked at), else the code's message."""
    data, error = scan.data, scan.out.error
    code, at = int(error[0]), int(error[7])
    if code not in (grammar.TOP, grammar.NO_GRAPH, grammar.SYNTAX, grammar.HUGE):
        checked = skip_value(scan.buf, at, len(data), scan.out.stack)
        error[0] = code = {NOT_JSON: grammar.SYNTAX, HUGE_INTEGER: grammar.HUGE}.get(checked, code)
    if code == grammar.SYNTAX:
        syntax = _syntax_error(data, at, path)
        if syntax is not None:
            return syntax
    messages = {k: m if k in _FILE_LEVEL else "graph {graph}: " + m for k, m in _MESSAGES.items()}
    return scan_error(data, error, messages, path, ("node", "edge", "a", "b"), **_fields(scan))


def _fields(scan: _Scan) -> dict[str, Any]:
    """The fields of the messages beyond the error record's numbers (computed when a message uses them)."""
    data, error = scan.data, scan.out.error
    start, end, node, _, a, b, at = (int(x) for x in error[1:])

    def value() -> Any:
        return _json_value(data[start:end].decode("utf-8"))

    def big(k: int) -> str:  # an integer of the bigs table, written with other decimal digits perhaps
        digits = "".join(str(unicodedata.decimal(c)) for c in scan.string(scan.bigs, k))
        return digits.lstrip("0") or "0"

    return {
        "graph": scan.count,
        "value": value,
        "got": lambda: data[at : at + 80].decode("utf-8", "ignore")[:20],
        "rule_id": lambda: _json_value(data[a:b].decode("utf-8")),
        "in_edges": lambda: value() if start >= 0 else [],
        "expected": lambda: list(range(b, b + a)),
        "last_node": node - 1,
        "feature": lambda: scan.string(scan.names, a),
        "k": lambda: a if a >= 0 else big(-a - 1),
    }


def _json_value(text: str) -> Any:
    """The JSON value that ``text`` starts with, as the messages show it (an object as json's ordered
    pairs); an object member ``"key": value`` as the pair."""
    decoder = json.JSONDecoder(object_pairs_hook=list)
    value, end = decoder.raw_decode(text)
    rest = text[end:].lstrip()
    return (value, decoder.raw_decode(rest[1:].lstrip())[0]) if rest.startswith(":") else value


def _syntax_error(data: bytes, start: int, path: str) -> InputError | None:
    """The json module's own error for the object at byte ``start`` (None when json cannot tell, nested too
    deeply for its recursion)."""
    text = data.decode("utf-8")
    try:
        json.JSONDecoder().raw_decode(text, len(data[:start].decode("utf-8")))
    except json.JSONDecodeError as error:
        return InputError(f"invalid JSON: {error.msg} (column {error.colno})", path, error.lineno)
    except (RecursionError, ValueError):
        return None
    return None  # pragma: no cover - the scan refuses only what json refuses


def _graphs(scan: _Scan, spaces: tuple[FeatureSpace, Vocabulary], path: str) -> list[Hypergraph]:
    """The graphs of the scan's complete objects. Words and feature names are interned in the order a
    reader meets them (edge by edge); a graph's feature matrix is as wide as the feature space once its
    edges were read."""
    out, data, count = scan.out, scan.data, scan.count
    if count == 0:
        return []
    feature_space, vocabulary = spaces
    num_edges = int(out.graphs[count - 1, 1])
    feature_offsets = offsets_from_counts(out.feature_counts[:num_edges])
    num_features = int(feature_offsets[-1])
    values = out.values[:num_features].copy()
    flagged = out.flagged[: out.sizes[grammar.FLAGGED]]
    flagged = flagged[flagged[:, 0] < num_features]
    values[flagged[:, 0]] = flagged_floats(data, flagged[:, 1], flagged[:, 2])[0]  # all good: checked in the scan
    target_offsets = offsets_from_counts(out.target_lengths[:num_edges])
    target = out.target[: target_offsets[-1]].copy()
    is_word = target >= 0
    target[is_word] = interned_columns(
        target[is_word], int(scan.words.used[0]), scan.strings(scan.words), vocabulary.indices
    )
    initial_width = len(feature_space)
    columns = interned_columns(
        out.names[:num_features], int(scan.names.used[0]), scan.strings(scan.names), feature_space.indices
    )
    tail_offsets = offsets_from_counts(out.arity[:num_edges])
    edges = EdgeArrays(out.head, tail_offsets, out.tails, target_offsets, target, feature_offsets, columns, values)
    label_text = scan.strings(scan.labels)(list(range(int(scan.labels.used[0])))) + [""]  # -1: no label
    graphs = []
    width = initial_width
    nodes_before = edges_before = 0
    for g in range(count):
        nodes_end, edges_end, axioms, start = (int(x) for x in out.graphs[g])
        f0, f1 = int(feature_offsets[edges_before]), int(feature_offsets[edges_end])
        if f1 > f0:
            width = max(width, int(columns[f0:f1].max()) + 1)
        node_labels = [label_text[k] for k in out.labels[nodes_before:nodes_end].tolist()]
        try:
            graphs.append(
                edge_graph(
                    edges,
                    (edges_before, edges_end),
                    nodes_end - nodes_before,
                    width,
                    spaces,
                    node_labels=node_labels if any(node_labels) else None,
                    metadata={"axioms_added": axioms} if axioms else {},
                )
            )
        except GraphError as error:
            raise located(data, start, f"graph {g}: invalid graph: {error}", path) from None
        nodes_before, edges_before = nodes_end, edges_end
    return graphs


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


FORMAT = register(GraphFormat("cdec-json", "cdec JSON hypergraphs (repeated edges/node keys)", sniff, read, write))

__all__ = ["FORMAT", "format_number", "graph_to_text", "parse", "read", "read_text", "write"]
