"""Building graphs: the one builder, k-best lists and networkx lattices as graphs, and trimming.

:class:`HypergraphBuilder` collects nodes and edges and makes a :class:`~hypertune.hypergraph.Hypergraph`
in one of two ways: :meth:`~HypergraphBuilder.build` takes nodes and edges in any order and sorts the nodes
topologically (Kahn, "Topological sorting of large networks", CACM 1962); the readers of files whose
nodes already come in topological order take the fast path, :meth:`~HypergraphBuilder.build_in_order`.

:func:`trim` keeps the part of a graph that lies on some derivation of the goal: the edges whose Boolean
inside and outside values are both true (Klein and Manning, "Parsing and Hypergraphs", IWPT 2001).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from hypertune.arrays import flat_ranges, offsets_from_counts
from hypertune.compiled import boolean_inside_outside
from hypertune.errors import GraphError
from hypertune.hypergraph.structure import EDGE_ANNOTATIONS, EdgeScores, Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

FeatureInput = Mapping[str, float] | Iterable[tuple[str, float]] | None
TargetInput = str | Sequence[str | int] | None

_TAIL_REFERENCE = re.compile(r"^\[(\d+)\]$")


# ---------------------------------------------------------------------- trimming


def useful_edges(hg: Hypergraph, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Edges and nodes that lie on some derivation of the goal, using only edges in ``keep``.

    A node is *reachable* when it has a derivation (Boolean inside is true) and *co-reachable* when it is
    used by a derivation of the goal (Boolean outside is true). Returns boolean masks (edges, nodes).
    """
    return _useful(hg.num_nodes, hg.head, hg.tail_offsets, hg.tails, keep)


def _useful(
    num_nodes: int, head: np.ndarray, tail_offsets: np.ndarray, tails: np.ndarray, keep: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`useful_edges` of the graph of these arrays."""
    keep = np.ones(head.size, dtype=np.bool_) if keep is None else np.asarray(keep, dtype=np.bool_)
    return boolean_inside_outside(num_nodes, head, tail_offsets, tails, keep)


def trim(hg: Hypergraph, keep_edges: np.ndarray | None = None) -> Hypergraph:
    """The part of ``hg`` that is reachable and co-reachable (optionally within a subset of edges).

    Raises :class:`GraphError` if the goal has no derivation left.
    """
    return trimmed(hg.keyword_arguments(), keep_edges)


def trimmed(arguments: Mapping[str, Any], keep_edges: np.ndarray | None = None) -> Hypergraph:
    """:func:`trim` of the graph that :class:`Hypergraph`'s keyword ``arguments`` describe, which may have
    nodes without in-edges (arrays as the graph keeps them: int64, nodes in topological order, edges grouped
    by head). Every argument other than the per-edge and per-node ones is passed on as it is."""
    structure = (arguments["num_nodes"], arguments["head"], arguments["tail_offsets"], arguments["tails"])
    edge_mask, node_mask = _useful(*structure, keep_edges)
    if not node_mask[arguments["num_nodes"] - 1]:
        raise GraphError("the goal node is unreachable: no derivation reaches it")
    kept_nodes = np.flatnonzero(node_mask)
    labels = arguments.get("node_labels")
    return Hypergraph(
        **{
            **arguments,
            **_edges_taken(arguments, np.flatnonzero(edge_mask), np.cumsum(node_mask) - 1),
            "num_nodes": int(kept_nodes.size),
            "node_labels": [labels[v] for v in kept_nodes] if labels else None,
            "metadata": dict(arguments.get("metadata") or {}),
        }
    )


def _edges_taken(arguments: Mapping[str, Any], edges: np.ndarray, new_id: np.ndarray) -> dict[str, Any]:
    """The per-edge keyword arguments of a graph for its edges ``edges`` (indices, in their new order), node
    ids renamed by ``new_id``: the structure, features, target yields and per-edge annotations."""
    tail_offsets, target_offsets = arguments["tail_offsets"], arguments["target_offsets"]
    taken = {
        "head": new_id[arguments["head"][edges]],
        "tail_offsets": offsets_from_counts(np.diff(tail_offsets)[edges]),
        "tails": new_id[arguments["tails"][flat_ranges(tail_offsets, edges)]],
        "features": arguments["features"][edges],
        "target_offsets": offsets_from_counts(np.diff(target_offsets)[edges]),
        "target": arguments["target"][flat_ranges(target_offsets, edges)],
    }
    for name in EDGE_ANNOTATIONS:
        if arguments.get(name) is not None:
            taken[name] = arguments[name][edges]
    return taken


# ---------------------------------------------------------------------- building


class HypergraphBuilder:
    """Collects nodes and edges and builds a validated :class:`Hypergraph`.

    :meth:`build` takes nodes and edges in any order, sorts the nodes topologically (goal last) and groups
    the edges by head; :meth:`build_in_order` (the readers' fast path) keeps nodes and edges as they were
    added, for inputs already in topological order with edges grouped by head.

    >>> b = HypergraphBuilder()
    >>> a, c = b.add_node(), b.add_node()
    >>> _ = b.add_edge(a, [], {"lm": -1.0}, "the")
    >>> _ = b.add_edge(c, [a], {"lm": -2.0}, "[1] cat")
    >>> b.build().num_edges
    2
    """

    def __init__(self, feature_space: FeatureSpace | None = None, vocabulary: Vocabulary | None = None) -> None:
        self.feature_space = FeatureSpace() if feature_space is None else feature_space
        self.vocabulary = Vocabulary() if vocabulary is None else vocabulary
        self._labels: list[str | None] = []
        self._head: list[int] = []
        self._tails: list[int] = []
        self._arity: list[int] = []
        self._target: list[int] = []
        self._target_lengths: list[int] = []
        self._feature_columns: list[int] = []
        self._feature_values: list[float] = []
        self._feature_counts: list[int] = []

    @property
    def num_nodes(self) -> int:
        return len(self._labels)

    @property
    def num_edges(self) -> int:
        return len(self._head)

    def add_node(self, label: str | None = None) -> int:
        self._labels.append(label)
        return len(self._labels) - 1

    def add_nodes(self, count: int) -> range:
        start = len(self._labels)
        self._labels.extend([None] * count)
        return range(start, start + count)

    def add_edge(
        self, head: int, tails: Sequence[int] = (), features: FeatureInput = None, target: TargetInput = None
    ) -> int:
        """Add an edge; returns its index in insertion order.

        ``features``: a mapping or pairs of name and value (repeated names add up).
        ``target``: ``None`` (the tails' yields in order), a string such as ``"[1] of [2]"`` (``[k]`` is the
        k-th tail, 1-based), or a list whose strings are words and whose ints are 0-based tail indices.
        """
        tails = [int(t) for t in tails]
        tokens = self.encode_target(target, len(tails))
        # what add_encoded_edge does, with every value made a float (inline: the readers' per-edge path)
        self._head.append(int(head))
        self._tails.extend(tails)
        self._arity.append(len(tails))
        self._target.extend(tokens)
        self._target_lengths.append(len(tokens))
        index = self.feature_space.index
        count = 0
        for name, value in features.items() if isinstance(features, Mapping) else (features or ()):
            self._feature_columns.append(index(name))
            self._feature_values.append(float(value))
            count += 1
        self._feature_counts.append(count)
        return len(self._head) - 1

    def add_encoded_edge(
        self, head: int, tails: Sequence[int], features: Iterable[tuple[str, float]], tokens: Sequence[int]
    ) -> int:
        """:meth:`add_edge` for a reader that has its values ready: integer node ids, float feature values,
        and the target side already encoded as ``tokens`` (word ids ``>= 0``, tail ``i`` as ``-(i+1)``)."""
        self._head.append(head)
        self._tails.extend(tails)
        self._arity.append(len(tails))
        self._target.extend(tokens)
        self._target_lengths.append(len(tokens))
        index = self.feature_space.index
        count = 0
        for name, value in features:
            self._feature_columns.append(index(name))
            self._feature_values.append(value)
            count += 1
        self._feature_counts.append(count)
        return len(self._head) - 1

    def encode_target(self, target: TargetInput, arity: int) -> list[int]:
        """Encode a target side as tokens (word ids >= 0, tail ``i`` as ``-(i+1)``)."""
        if target is None:
            return [-(i + 1) for i in range(arity)]
        items: Iterable[str | int] = target.split() if isinstance(target, str) else target
        tokens = []
        for item in items:
            if isinstance(item, (int, np.integer)):
                tail = int(item)
            else:
                match = _TAIL_REFERENCE.match(item) if isinstance(target, str) else None
                if match is None:
                    tokens.append(self.vocabulary.index(item))
                    continue
                tail = int(match.group(1)) - 1
            if not 0 <= tail < arity:
                raise GraphError(f"target refers to tail {tail + 1} of an edge with {arity} tails")
            tokens.append(-(tail + 1))
        return tokens

    def _edges(self) -> dict[str, Any]:
        """The edges added so far, in insertion order, as :class:`Hypergraph`'s per-edge keyword arguments."""
        return {
            "head": np.asarray(self._head, dtype=np.int64),
            "tail_offsets": offsets_from_counts(self._arity),
            "tails": np.asarray(self._tails, dtype=np.int64),
            "features": sp.csr_matrix(
                (
                    np.asarray(self._feature_values, dtype=np.float64),
                    np.asarray(self._feature_columns, dtype=np.int64),
                    offsets_from_counts(self._feature_counts),
                ),
                shape=(len(self._head), len(self.feature_space)),
            ),
            "target_offsets": offsets_from_counts(self._target_lengths),
            "target": np.asarray(self._target, dtype=np.int64),
        }

    def build(
        self,
        goal: int | None = None,
        *,
        trim_graph: bool = False,
        metadata: dict[str, Any] | None = None,
        sentence_id: int | None = None,
        source_covered: Sequence[int] | np.ndarray | None = None,
        edge_stats: np.ndarray | None = None,
        edge_scores: EdgeScores | None = None,
    ) -> Hypergraph:
        """Sort nodes topologically (goal last, default the last node added), group edges by head and validate.

        ``trim_graph=True`` drops nodes and edges that are not on any derivation of the goal instead of
        rejecting nodes without in-edges. The per-edge annotations (see :class:`Hypergraph`) are given in
        the order the edges were added and follow them.
        """
        n = self.num_nodes
        if n == 0 or not self._head:
            raise GraphError("empty hypergraph: it needs at least one node and one edge")
        goal = n - 1 if goal is None else int(goal)
        edges = self._edges()
        _check_node_ids(n, edges["head"], edges["tail_offsets"], edges["tails"])
        if not 0 <= goal < n:
            raise GraphError(f"goal {goal} is not a node id (0..{n - 1})")
        order = _topological_order(n, edges["head"], edges["tail_offsets"], edges["tails"], goal)
        new_id = np.empty(n, dtype=np.int64)
        new_id[order] = np.arange(n)
        for name, value in (
            ("source_covered", None if source_covered is None else np.asarray(source_covered, dtype=np.int64)),
            ("edge_stats", None if edge_stats is None else np.asarray(edge_stats, dtype=np.float64)),
            ("edge_scores", edge_scores),
        ):
            if value is not None and len(value) != len(self._head):
                raise GraphError(f"{name} has {len(value)} entries for {len(self._head)} edges")
            edges[name] = value
        arguments = {
            "num_nodes": n,
            **_edges_taken(edges, np.argsort(new_id[edges["head"]], kind="stable"), new_id),
            "feature_space": self.feature_space,
            "vocabulary": self.vocabulary,
            "node_labels": [self._labels[v] or "" for v in order] if any(self._labels) else None,
            "metadata": dict(metadata or {}),
            "sentence_id": sentence_id,
        }
        return trimmed(arguments) if trim_graph else Hypergraph(**arguments)

    def build_in_order(
        self,
        num_nodes: int | None = None,
        *,
        labels: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        sentence_id: int | None = None,
        source_covered: Sequence[int] | np.ndarray | None = None,
        edge_stats: np.ndarray | None = None,
        edge_scores: EdgeScores | None = None,
    ) -> Hypergraph:
        """The graph of the nodes and edges exactly as they were added (no sorting): edges must be grouped by
        head in node order and tails come before heads, which the constructor checks. ``num_nodes`` (default:
        the nodes added) and ``labels`` (default: theirs, if any) let a reader that numbers nodes itself skip
        :meth:`add_node`. Per-edge annotations are in edge order."""
        if num_nodes is None:
            num_nodes = self.num_nodes
            if labels is None and any(self._labels):
                labels = [label or "" for label in self._labels]
        return Hypergraph(
            num_nodes=num_nodes,
            **self._edges(),
            feature_space=self.feature_space,
            vocabulary=self.vocabulary,
            node_labels=labels,
            metadata=dict(metadata or {}),
            sentence_id=sentence_id,
            source_covered=None if source_covered is None else np.asarray(source_covered),
            edge_stats=edge_stats,
            edge_scores=edge_scores,
        )


def _check_node_ids(n: int, head: np.ndarray, tail_offsets: np.ndarray, tails: np.ndarray) -> None:
    """Every head and tail is one of the ``n`` nodes, or a :class:`GraphError` naming the first edge that is not."""
    for name, ids in (("head", head), ("tail", tails)):
        bad = np.flatnonzero((ids < 0) | (ids >= n))
        if bad.size:
            edge = int(bad[0]) if name == "head" else int(np.searchsorted(tail_offsets, bad[0], "right") - 1)
            raise GraphError(f"edge {edge}: {name} {int(ids[bad[0]])} is a dangling node id (0..{n - 1})")


def _topological_order(n: int, head: np.ndarray, tail_offsets: np.ndarray, tails: np.ndarray, goal: int) -> np.ndarray:
    """Kahn's algorithm on the node graph (tail -> head), with the goal held back to come last.

    Raises :class:`GraphError` naming a cycle, or an edge that uses the goal as a tail.
    """
    edge_of_tail = np.repeat(np.arange(head.size), np.diff(tail_offsets))
    tail_heads = head[edge_of_tail]
    uses_goal = np.flatnonzero(tails == goal)
    if uses_goal.size:
        raise GraphError(f"edge {int(edge_of_tail[uses_goal[0]])} uses the goal node as a tail")
    # successor lists in CSR form
    order_by_tail = np.argsort(tails, kind="stable")
    successors = tail_heads[order_by_tail]
    successor_offsets = offsets_from_counts(np.bincount(tails, minlength=n))
    indegree = np.bincount(tail_heads, minlength=n)
    ready = [int(v) for v in np.flatnonzero(indegree == 0) if v != goal]
    ready.reverse()
    order: list[int] = []
    while ready:
        v = ready.pop()
        order.append(v)
        for w in successors[successor_offsets[v] : successor_offsets[v + 1]]:
            indegree[w] -= 1
            if indegree[w] == 0 and w != goal:
                ready.append(int(w))
    if len(order) != n - 1 or indegree[goal] != 0:
        stuck = np.flatnonzero(indegree > 0)
        raise GraphError(
            f"the graph has a cycle through node {_cycle_from(int(stuck[0]), tails, tail_heads, indegree)}"
        )
    order.append(goal)
    return np.asarray(order, dtype=np.int64)


def _cycle_from(start: int, tails: np.ndarray, tail_heads: np.ndarray, indegree: np.ndarray) -> str:
    """A readable cycle among the nodes Kahn's algorithm could not order."""
    predecessor: dict[int, int] = {}
    for t, h in zip(tails, tail_heads, strict=True):
        if indegree[h] > 0 and indegree[t] > 0:
            predecessor.setdefault(int(h), int(t))
    path: list[int] = []
    seen: dict[int, int] = {}
    v = start
    while v not in seen and v in predecessor:
        seen[v] = len(path)
        path.append(v)
        v = predecessor[v]
    if v in seen:
        cycle = path[seen[v] :][::-1]
        return " -> ".join(map(str, [*cycle, cycle[0]]))
    return str(start)


# ---------------------------------------------------------------------- convenience constructors


def from_kbest(
    hypotheses: Iterable[tuple[str | Sequence[str], FeatureInput]],
    feature_space: FeatureSpace | None = None,
    vocabulary: Vocabulary | None = None,
    metadata: dict[str, Any] | None = None,
    sentence_id: int | None = None,
    edge_stats: np.ndarray | None = None,
    scores: Mapping[str, Sequence[float]] | None = None,
) -> Hypergraph:
    """A k-best list as a degenerate lattice: start node 0 (with its axiom), goal node 1, and one edge
    per hypothesis from start to goal, in list order (hypothesis ``i`` is edge ``i + 1``; ``edge_stats``,
    when given, has one row per edge, the axiom's first). ``scores``: named given scores, one per hypothesis
    in list order (the graph's :class:`EdgeScores`, the axiom's row zeros)."""
    builder = HypergraphBuilder(feature_space, vocabulary)
    start, goal = builder.add_nodes(2)
    builder.add_edge(start, (), None, [])
    for words, features in hypotheses:
        tokens = words.split() if isinstance(words, str) else list(words)
        builder.add_edge(goal, [start], features, [0, *tokens])
    if builder.num_edges == 1:
        raise GraphError("empty k-best list: no hypotheses")
    edge_scores = None
    if scores is not None:
        names = list(scores)
        values = np.column_stack([np.asarray(scores[n], dtype=np.float64) for n in names]) if names else None
        if values is None or values.shape[0] != builder.num_edges - 1:
            raise GraphError(f"scores need one value per hypothesis ({builder.num_edges - 1}) for each name")
        edge_scores = EdgeScores(names, np.vstack([np.zeros((1, len(names))), values]))
    return builder.build(
        goal, metadata=metadata, sentence_id=sentence_id, edge_stats=edge_stats, edge_scores=edge_scores
    )


def from_networkx(
    graph: Any,
    feature_space: FeatureSpace | None = None,
    vocabulary: Vocabulary | None = None,
    words: str = "words",
    features: str = "features",
) -> Hypergraph:
    """A lattice from a networkx (Multi)DiGraph: arcs carry ``words`` (a string or list) and ``features``
    (a mapping) attributes. The start is the only node without incoming arcs; the goal the only node
    without outgoing arcs (if there are several, a new goal joins them with empty arcs)."""
    import networkx as nx

    if graph.number_of_nodes() == 0:
        raise GraphError("empty graph: the lattice has no nodes")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        raise GraphError(f"the lattice has a cycle: {' -> '.join(str(a) for a, *_ in cycle)}")
    starts = [v for v in graph.nodes if graph.in_degree(v) == 0]
    finals = [v for v in graph.nodes if graph.out_degree(v) == 0]
    if len(starts) != 1:
        raise GraphError(f"a lattice needs exactly one start node (no incoming arcs); found {len(starts)}")
    builder = HypergraphBuilder(feature_space, vocabulary)
    index = {v: builder.add_node(str(v)) for v in nx.topological_sort(graph)}
    builder.add_edge(index[starts[0]], (), None, [])
    arcs = graph.edges(data=True)
    for source, target, data in arcs:
        label = data.get(words, ())
        tokens = label.split() if isinstance(label, str) else list(label)
        builder.add_edge(index[target], [index[source]], data.get(features), [0, *tokens])
    goal = index[finals[0]]
    if len(finals) > 1:
        goal = builder.add_node("</goal>")
        for v in finals:
            builder.add_edge(goal, [index[v]], None, [0])
    return builder.build(goal)
