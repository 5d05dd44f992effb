"""Today's cdec JSON reader as it was before the compiled scan (hypertune 2026-11-23, formats/cdec_json.py:
Python's json module with ordered pairs, the graph built in Python), kept as the reference the compiled reader
must equal graph for graph and error for error. Only reading is kept."""

from __future__ import annotations

import json
import re
from typing import Any

from hypertune.errors import InputError
from hypertune.formats._common import ArrayBuilder, build_located
from hypertune.formats.io import open_text
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

_TARGET_VARIABLE = re.compile(r"^\[(?:[^\],\s]+,)?(\d+)\]$")


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
