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
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from hypertune.errors import InputError
from hypertune.formats._common import ArrayBuilder, build_located, check_word, format_number
from hypertune.formats.io import open_text, write_atomically
from hypertune.formats.registry import GraphFormat, register
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

_TARGET_VARIABLE = re.compile(r"^\[(?:[^\],\s]+,)?(\d+)\]$")
_NONTERMINAL = re.compile(r"^\[[^\]\s]+\]$")


class _Pairs(list):
    """A JSON object kept as its ordered list of (key, value) pairs."""


def _decoder() -> json.JSONDecoder:
    return json.JSONDecoder(object_pairs_hook=_Pairs)


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    with open_text(path) as handle:
        try:
            text = handle.read()
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", path) from None
    return read_text(text, path, feature_space, vocabulary)


def read_text(text: str, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    decoder = _decoder()
    graphs = []
    position = 0
    whitespace = re.compile(r"\s*")
    while True:
        position = whitespace.match(text, position).end()
        if position >= len(text):
            break
        line = text.count("\n", 0, position) + 1
        if text[position] != "{":
            # cdec's own hg_test.lattice ends with a stray quote after the object; cdec stops reading at the
            # end of the object, so a lone trailing quote is tolerated. Anything else is an error.
            if graphs and text[position:].strip() == '"':
                break
            raise InputError(f"expected a JSON object ('{{'), got {text[position : position + 20]!r}", path, line)
        try:
            obj, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise InputError(f"invalid JSON: {error.msg} (column {error.colno})", path, error.lineno) from None
        try:
            graphs.append(graph_from_pairs(obj, feature_space, vocabulary, path))
        except InputError as error:
            raise InputError(f"graph {len(graphs)}: {error.reason}", path, line) from None
    if not graphs:
        raise InputError("no graph in the file (expected a cdec JSON object)", path, text.count("\n") + 1)
    return graphs


def _rule_target(rule: str, where: str) -> tuple[str, list[str]]:
    fields = [f.strip() for f in rule.split("|||")]
    if len(fields) < 3:
        raise InputError(f"{where}: expected a rule '[LHS] ||| source ||| target [||| features]', got {rule!r}")
    return fields[0], fields[2].split()


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: expected a number, got {value!r}")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError(f"{where}: feature values must be finite")
    return value


def graph_from_pairs(
    obj: Any, feature_space: FeatureSpace, vocabulary: Vocabulary, path: str = "<cdec json>"
) -> Hypergraph:
    """One graph from a JSON object parsed with ordered pairs (see :func:`read_text`)."""
    if not isinstance(obj, _Pairs):
        raise InputError("expected a JSON object")
    rules: dict[int, tuple[str, list[str]]] = {}
    names: list[str] | None = None
    builder = ArrayBuilder(feature_space, vocabulary)
    labels: list[str] = []
    pending: list[Any] = []
    next_edge = 0  # cdec's global edge id
    axioms = 0
    node = 0
    for key, value in obj:
        if key == "rules":
            if not isinstance(value, list) or len(value) % 2:
                raise InputError('"rules" must be a flat list [id, rule, id, rule, ...]')
            for i in range(0, len(value), 2):
                rid, rule = value[i], value[i + 1]
                if isinstance(rid, bool) or not isinstance(rid, int) or not isinstance(rule, str):
                    raise InputError(f'"rules" item {i // 2}: expected an integer id and a rule string')
                rules[rid] = _rule_target(rule, f"rule {rid}")
        elif key == "features":
            if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
                raise InputError('"features" must be a list of feature names')
            names = value
        elif key == "edges":
            if not isinstance(value, list):
                raise InputError(f'node {node}: "edges" must be a list')
            if pending:
                raise InputError(f'node {node}: two "edges" entries without a "node" entry between them')
            pending = value
            if not value:
                pending = []
        elif key == "node":
            if not isinstance(value, _Pairs):
                raise InputError(f'node {node}: "node" must be an object')
            info = dict(value)
            in_edges = info.get("in_edges", [])
            expected = list(range(next_edge, next_edge + len(pending)))
            if in_edges != expected:
                raise InputError(
                    f"node {node}: in_edges {in_edges} do not match the {len(pending)} edges listed before it "
                    f"(expected {expected})"
                )
            if not pending:
                builder.add_edge(node, (), (), ())
                axioms += 1
            for edge in pending:
                _add_edge(builder, edge, node, next_edge, rules, names, vocabulary)
                next_edge += 1
            pending = []
            cat = info.get("cat")
            labels.append(cat if isinstance(cat, str) else "")
            node += 1
    if pending:
        raise InputError(f'{len(pending)} edges after the last node (expected a "node" entry)')
    if node == 0:
        raise InputError('no nodes (expected "edges" and "node" entries)')
    metadata = {"axioms_added": axioms} if axioms else {}
    return build_located(builder, node, path, labels=labels if any(labels) else None, metadata=metadata)


def _add_edge(
    builder: ArrayBuilder,
    edge: Any,
    head: int,
    number: int,
    rules: dict[int, tuple[str, list[str]]],
    names: list[str] | None,
    vocabulary: Vocabulary,
) -> None:
    where = f"edge {number} (node {head})"
    if not isinstance(edge, _Pairs):
        raise InputError(f"{where}: expected an object")
    info = dict(edge)
    tails = info.get("tail", [])
    if not isinstance(tails, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tails):
        raise InputError(f'{where}: "tail" must be a list of node ids')
    for t in tails:
        if not 0 <= t < head:
            raise InputError(f"{where}: unknown tail id {t} (tails must be earlier nodes 0..{head - 1})")
    feats = info.get("feats", [])
    if not isinstance(feats, list) or len(feats) % 2:
        raise InputError(f'{where}: "feats" must be a flat list [feature, value, ...]')
    features = []
    for i in range(0, len(feats), 2):
        fid = feats[i]
        if isinstance(fid, str):
            name = fid
        elif isinstance(fid, int) and not isinstance(fid, bool):
            if names is None or not 0 <= fid < len(names):
                known = 0 if names is None else len(names)
                raise InputError(f'{where}: feature id {fid} is not in the "features" list ({known} names)')
            name = names[fid]
        else:
            raise InputError(f"{where}: expected a feature id or name, got {fid!r}")
        features.append((name, _number(feats[i + 1], f"{where} feature {name}")))
    rule = info.get("rule")
    if rule is None:
        tokens = [-(i + 1) for i in range(len(tails))]
    else:
        if isinstance(rule, str):
            target = _rule_target(rule, where)[1]
        elif isinstance(rule, int) and not isinstance(rule, bool) and rule in rules:
            target = rules[rule][1]
        else:
            raise InputError(f"{where}: unknown rule {rule!r}")
        tokens = []
        index = vocabulary.index
        for word in target:
            match = _TARGET_VARIABLE.match(word)
            if match:
                k = int(match.group(1))
                if not 1 <= k <= len(tails):
                    raise InputError(f"{where}: target refers to tail [{k}] of an edge with {len(tails)} tails")
                tokens.append(-k)
            else:
                tokens.append(index(word))
    builder.add_edge(head, tails, features, tokens)


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


_SNIFF = re.compile(r'^\{\s*"(rules|features|edges)"\s*:')


def sniff(head: str) -> bool:
    match = _SNIFF.match(head.lstrip())
    if match is None:
        return False
    return match.group(1) != "edges" or ('"tail"' in head and '"head"' not in head)


FORMAT = register(GraphFormat("cdec-json", "cdec JSON hypergraphs (repeated edges/node keys)", sniff, read, write))

__all__ = ["FORMAT", "format_number", "graph_from_pairs", "graph_to_text", "read", "read_text", "write"]
