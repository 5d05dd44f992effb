"""PLF (Python Lattice Format), the lattice input of Moses, cdec and Joshua; one lattice per line.

::

    ((('A',0.5,1),('C',0.25,1),('AB',0.125,2),),(('B',2,1),),)

A lattice is a tuple of columns; column ``i`` lists the arcs leaving node ``i`` as
``('word', costs..., distance)``: the arc goes to node ``i + distance``. Costs are dense numbers
(features ``LatticeCost_0``, ``LatticeCost_1``, ...), a dictionary ``{'name': value, ...}`` (sparse
features), or absent (``('B', 1)``). Words are quoted with ``'`` or ``"`` and backslash escapes
(``'für\\''``); trailing commas are allowed. ``*EPS*`` is the empty word (an arc with an empty target).
The lattice has ``len(columns) + 1`` nodes: node 0 (the start, given an axiom edge) to the last (final).
The writer puts the features of every arc as ``LatticeCost_0..k`` dense costs when the graph uses only
those names (one ``LatticeCost_k`` may be missing only at the end), else as a dictionary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hypertune.errors import GraphError, InputError
from hypertune.formats._common import format_number
from hypertune.formats.io import open_text, write_atomically
from hypertune.formats.registry import GraphFormat, register
from hypertune.formats.sniffing import sniff_plf as sniff
from hypertune.hypergraph import Hypergraph, HypergraphBuilder
from hypertune.symbols import FeatureSpace, Vocabulary

EPSILON = "*EPS*"
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_DENSE = re.compile(r"^LatticeCost_(\d+)$")

_Arc = tuple[str, list[tuple[str, float]], int]  # word, features, distance


class _Parser:
    def __init__(self, text: str, path: str, line: int) -> None:
        self.text, self.i, self.path, self.line = text, 0, path, line

    def fail(self, expected: str) -> InputError:
        near = self.text[self.i : self.i + 15]
        return InputError(f"column {self.i + 1}: expected {expected}, got {near!r}", self.path, self.line)

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.i] if self.i < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"{char!r}")
        self.i += 1

    def comma_or(self, close: str) -> bool:
        """After an item: True if the sequence goes on, False at ``close`` (consumed)."""
        c = self.peek()
        if c == ",":
            self.i += 1
            if self.peek() == close:
                self.i += 1
                return False
            return True
        if c == close:
            self.i += 1
            return False
        raise self.fail(f"',' or {close!r}")

    def string(self) -> str:
        quote = self.peek()
        if quote not in ("'", '"'):
            raise self.fail("a quoted word")
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.text):
                raise self.fail(f"the closing {quote}")
            c = self.text[self.i]
            self.i += 1
            if c == "\\":
                if self.i >= len(self.text):
                    raise self.fail("an escaped character")
                out.append(self.text[self.i])
                self.i += 1
            elif c == quote:
                return "".join(out)
            else:
                out.append(c)

    def number(self) -> float:
        self.skip()
        match = _NUMBER.match(self.text, self.i)
        if not match:
            raise self.fail("a number")
        self.i = match.end()
        return float(match.group())

    def integer(self) -> int:
        self.skip()
        match = re.compile(r"\d+").match(self.text, self.i)
        if not match or (self.i < len(self.text) and match.end() < len(self.text) and self.text[match.end()] in ".eE"):
            raise self.fail("an arc's distance (a positive integer)")
        self.i = match.end()
        return int(match.group())

    def lattice(self) -> list[list[_Arc]]:
        self.expect("(")
        columns = []
        if self.peek() == ")":
            self.i += 1
        else:
            while True:
                columns.append(self.column())
                if not self.comma_or(")"):
                    break
        self.skip()
        if self.i != len(self.text):
            raise self.fail("the end of the line")
        return columns

    def column(self) -> list[_Arc]:
        self.expect("(")
        arcs = []
        while True:
            arcs.append(self.arc())
            if not self.comma_or(")"):
                return arcs

    def arc(self) -> _Arc:
        self.expect("(")
        word = self.string()
        self.expect(",")
        items: list[float | tuple[str, float] | dict[str, float]] = []
        while True:
            c = self.peek()
            if c == "{":
                items.append(self.dictionary())
            else:
                start = self.i
                value = self.number()
                items.append(value)
                if "." in self.text[start : self.i] or "e" in self.text[start : self.i].lower():
                    items[-1] = ("float", value)
            if not self.comma_or(")"):
                break
        if not items:
            raise self.fail("an arc's distance")
        last = items[-1]
        if isinstance(last, tuple) or isinstance(last, dict) or last != int(last) or last < 1:
            raise InputError(f"the arc {word!r} must end with its distance (a positive integer)", self.path, self.line)
        distance = int(last)
        costs = items[:-1]
        features: list[tuple[str, float]] = []
        if len(costs) == 1 and isinstance(costs[0], dict):
            features = list(costs[0].items())
        else:
            for k, cost in enumerate(costs):
                if isinstance(cost, dict):
                    raise InputError("a cost dictionary must be an arc's only cost", self.path, self.line)
                features.append((f"LatticeCost_{k}", cost[1] if isinstance(cost, tuple) else cost))
        return word, features, distance

    def dictionary(self) -> dict[str, float]:
        self.expect("{")
        out: dict[str, float] = {}
        if self.peek() == "}":
            self.i += 1
            return out
        while True:
            name = self.string()
            self.expect(":")
            out[name] = self.number()
            if not self.comma_or("}"):
                return out


def parse_line(text: str, path: str, line: int, feature_space: FeatureSpace, vocabulary: Vocabulary) -> Hypergraph:
    columns = _Parser(text, path, line).lattice()
    if not columns:
        raise InputError("an empty lattice (no columns)", path, line)
    n = len(columns) + 1
    arcs = []
    for node, column in enumerate(columns):
        for word, features, distance in column:
            if node + distance >= n:
                raise InputError(
                    f"the arc {word!r} from node {node} jumps {distance} past the final node {n - 1}", path, line
                )
            arcs.append((node + distance, node, word, features))
    arcs.sort(key=lambda a: a[0])  # group by head (stable: file order within a head)
    builder = HypergraphBuilder(feature_space, vocabulary)
    builder.add_encoded_edge(0, (), (), ())
    for head, tail, word, features in arcs:
        tokens = [-1] if word == EPSILON else [-1, vocabulary.index(word)]
        builder.add_encoded_edge(head, [tail], features, tokens)
    try:
        return builder.build_in_order(n, metadata={"line": line})
    except GraphError as error:
        raise InputError(f"invalid lattice: {error}", path, line) from None


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    graphs = []
    number = 1
    with open_text(path) as handle:
        try:
            for number, raw in enumerate(handle, 1):
                if raw.strip():
                    graphs.append(parse_line(raw.strip(), path, number, feature_space, vocabulary))
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", path) from None
    if not graphs:
        raise InputError("no lattice in the file", path, number)
    return graphs


def _quote(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"


def lattice_to_text(hg: Hypergraph) -> str:
    """One lattice as a PLF line (nodes must be in order: every arc goes forward)."""
    if not hg.is_lattice:
        raise InputError("only lattices (one tail per edge, one start axiom) can be written as PLF")
    columns: list[list[str]] = [[] for _ in range(hg.num_nodes - 1)]
    for e in range(1, hg.num_edges):
        tail = int(hg.edge_tails(e)[0])
        head = int(hg.head[e])
        target = hg.edge_target(e)
        if len(target) == 0 or target[0] != -1 or any(t < 0 for t in target[1:]) or len(target) > 2:
            raise InputError(f"edge {e}: PLF arcs carry exactly one word after their tail")
        word = hg.vocabulary.word(int(target[1])) if len(target) == 2 else EPSILON
        features = hg.edge_features(e)
        dense = _dense_costs(features)
        if features and dense is not None and sorted(dense) == list(range(len(dense))):
            costs = "".join(format_number(dense[k]) + "," for k in range(len(dense)))
        elif features:
            costs = "{" + "".join(f"{_quote(n)}:{format_number(v)}," for n, v in features.items()) + "},"
        else:
            costs = ""
        columns[tail].append(f"({_quote(word)},{costs}{head - tail})")
    for v, column in enumerate(columns):
        if not column:
            raise InputError(f"node {v} has no outgoing arc; PLF needs one in every column")
    return "(" + "".join("(" + "".join(a + "," for a in column) + ")," for column in columns) + ")"


def _dense_costs(features: dict[str, float]) -> dict[int, float] | None:
    """The features by ``k`` when every name is ``LatticeCost_k``, else ``None``."""
    dense: dict[int, float] = {}
    for name, value in features.items():
        match = _DENSE.match(name)
        if not match:
            return None
        dense[int(match.group(1))] = value
    return dense


def write(graphs: Sequence[Hypergraph], path: str) -> None:
    write_atomically(path, "".join(lattice_to_text(g) + "\n" for g in graphs))


FORMAT = register(
    GraphFormat("plf", "PLF lattices (Moses/cdec/Joshua lattice input), one per line", sniff, read, write)
)
