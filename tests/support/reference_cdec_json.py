"""A reader of cdec's JSON forests written from the format alone, for the tests of the package's compiled one
(``tests/formats/test_cdec_json_reference.py``). It shares no code with ``hypertune.formats``: Python's
``json`` module decodes each object, and the graph is built in plain Python, one object member after another,
as docs/formats.md describes the format:

- a file holds JSON objects one after another (whitespace between them; a stray ``"`` after the last, as
  in cdec's own ``hg_test.lattice``, is ignored);
- an object's members are taken in order: ``"rules"`` (``[id, "[LHS] ||| source ||| target [||| feats]",
  ...]``) and ``"features"`` (names) replace what came before, ``"edges"`` lists the edges of the next
  ``"node"``, which names them in ``in_edges`` (their global numbers, in order) and may carry a ``cat``;
  a node without edges gets an empty axiom edge;
- an edge ``{"tail": [...], "feats": [name or index, value, ...], "rule": id, text or null}``; ``[k]`` and
  ``[X,k]`` in a rule's target are its k-th tail; without a rule the target is the tails in order;
- in an edge or node object the last of a repeated key counts; where a list is expected an object stands for
  the list of its (key, value) members, which are no ids, names or edges.

Anything else is refused with :class:`Refused` (the tests compare that both readers refuse the same input,
not the wording). The graphs are held in the package's public :class:`HypergraphBuilder`.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import sys
from typing import Any, NamedTuple

from hypertune.errors import GraphError
from hypertune.hypergraph import Hypergraph, HypergraphBuilder
from hypertune.symbols import FeatureSpace, Vocabulary

VARIABLE = re.compile(r"\[(?:[^\],\s]+,)?(\d+)\]")  # [k] or [X,k]; \d: any Unicode decimal digit, as int() reads


class Refused(Exception):
    """The input is not a cdec JSON forest."""


class Obj(NamedTuple):
    """A JSON object: its members in order."""

    members: list[tuple[str, Any]]


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    with open(path, "rb") as handle:
        raw = handle.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise Refused("not UTF-8") from error
    return read_text(text.replace("\r\n", "\n").replace("\r", "\n"), feature_space, vocabulary)


def read_text(text: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    decoder = json.JSONDecoder(object_pairs_hook=Obj)
    graphs: list[Hypergraph] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text) or (graphs and text[position:].strip() == '"'):
            break
        if text[position] != "{":
            raise Refused("not an object")
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10_000))  # json recurses into nested arrays and objects
        try:
            obj, position = decoder.raw_decode(text, position)
        except ValueError as error:  # not JSON, or an integer int() does not read
            raise Refused(str(error)) from error
        finally:
            sys.setrecursionlimit(limit)
        graphs.append(_graph(obj, feature_space, vocabulary))
    if not graphs:
        raise Refused("no graph")
    return graphs


def _items(value: Any) -> list[Any] | None:
    """A JSON list's items, an object's members, or None for anything else."""
    if isinstance(value, list):
        return value
    return list(value.members) if isinstance(value, Obj) else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _target_words(rule: Any) -> list[str]:
    if not isinstance(rule, str) or rule.count("|||") < 2:
        raise Refused("not a rule")
    return rule.split("|||")[2].split()


class _Forest:
    """One object read member by member into a builder."""

    def __init__(self, feature_space: FeatureSpace, vocabulary: Vocabulary) -> None:
        self.builder = HypergraphBuilder(feature_space, vocabulary)
        self.rules: dict[int, list[str]] = {}
        self.names: list[str] | None = None
        self.pending: list[Any] = []
        self.edges_so_far = 0  # cdec's global edge numbers
        self.axioms = 0

    def rules_member(self, value: Any) -> None:
        items = _items(value)
        if items is None or len(items) % 2:
            raise Refused("rules")
        for rid, rule in zip(items[::2], items[1::2], strict=True):
            if not _is_int(rid):
                raise Refused("rule id")
            self.rules[rid] = _target_words(rule)

    def features_member(self, value: Any) -> None:
        items = _items(value)
        if items is None or not all(isinstance(name, str) for name in items):
            raise Refused("features")
        self.names = items

    def edges_member(self, value: Any) -> None:
        items = _items(value)
        if items is None or self.pending:
            raise Refused("edges")
        self.pending = items

    def node_member(self, value: Any) -> None:
        if not isinstance(value, Obj):
            raise Refused("node")
        fields = dict(value.members)
        numbers = list(range(self.edges_so_far, self.edges_so_far + len(self.pending)))
        if _items(fields.get("in_edges", [])) != numbers:
            raise Refused("in_edges")
        cat = fields.get("cat")
        node = self.builder.add_node(cat if isinstance(cat, str) else None)
        if not self.pending:
            self.builder.add_edge(node)
            self.axioms += 1
        for edge in self.pending:
            self.edge(edge, node)
        self.edges_so_far += len(self.pending)
        self.pending = []

    def edge(self, edge: Any, node: int) -> None:
        if not isinstance(edge, Obj):
            raise Refused("edge")
        fields = dict(edge.members)
        tails = _items(fields.get("tail", []))
        if tails is None or not all(_is_int(t) and 0 <= t < node for t in tails):
            raise Refused("tail")
        features = self.features(_items(fields.get("feats", [])))
        rule = fields.get("rule")
        target: list[str | int] | None = None  # without a rule: the tails in order
        if rule is not None:
            words = _target_words(rule) if isinstance(rule, str) else self.rules.get(rule) if _is_int(rule) else None
            if words is None:
                raise Refused("unknown rule")
            target = [self.token(word, len(tails)) for word in words]
        self.builder.add_edge(node, tails, features, target)

    def features(self, feats: list[Any] | None) -> list[tuple[str, float]]:
        if feats is None or len(feats) % 2:
            raise Refused("feats")
        features = []
        for key, value in zip(feats[::2], feats[1::2], strict=True):
            if _is_int(key) and self.names is not None and 0 <= key < len(self.names):
                key = self.names[key]
            if not isinstance(key, str) or not isinstance(value, (int, float)) or isinstance(value, bool):
                raise Refused("feature")
            try:
                number = float(value)
            except OverflowError as error:
                raise Refused("feature value") from error
            if not math.isfinite(number):
                raise Refused("feature value")
            features.append((key, number))
        return features

    @staticmethod
    def token(word: str, arity: int) -> str | int:
        """A target word, or the 0-based tail a variable ``[k]`` names."""
        match = VARIABLE.fullmatch(word)
        if match is None:
            return word
        try:
            k = int(match.group(1))
        except ValueError as error:  # more digits than int() reads
            raise Refused("variable") from error
        if not 1 <= k <= arity:
            raise Refused("variable")
        return k - 1


def _graph(obj: Obj, feature_space: FeatureSpace, vocabulary: Vocabulary) -> Hypergraph:
    forest = _Forest(feature_space, vocabulary)
    readers = {
        "rules": forest.rules_member,
        "features": forest.features_member,
        "edges": forest.edges_member,
        "node": forest.node_member,
    }
    for key, value in obj.members:
        if key in readers:
            readers[key](value)
    if forest.pending or forest.builder.num_nodes == 0:
        raise Refused("edges without a node, or no node")
    metadata = {"axioms_added": forest.axioms} if forest.axioms else {}
    try:
        return forest.builder.build_in_order(metadata=metadata)
    except GraphError as error:
        raise Refused(str(error)) from error
