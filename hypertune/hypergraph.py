"""The hypergraph: the one structure behind k-best lists, lattices and forests.

Layout (all numpy arrays, so algorithms run over arrays, not Python objects):

* Nodes are ``0 .. num_nodes-1`` in topological order: every tail of an edge comes before
  its head. The goal is the last node.
* Edges are grouped by head: the in-edges of node ``v`` are ``node_offsets[v]:node_offsets[v+1]``
  and ``head[e]`` is non-decreasing. Every node has at least one in-edge; an edge without tails
  is an *axiom* (so a leaf's value is its axiom edge's value in every semiring).
* Tails are flat: the tails of edge ``e`` are ``tails[tail_offsets[e]:tail_offsets[e+1]]`` (arity 0..k).
* Features are a sparse ``E x F`` CSR matrix whose columns are a shared :class:`FeatureSpace`.
* The target-side yield of edge ``e`` is ``target[target_offsets[e]:target_offsets[e+1]]``: a token
  ``>= 0`` is a word id in the shared :class:`Vocabulary`, a token ``-(i+1)`` stands for the yield of
  the edge's ``i``-th tail -- exactly a synchronous rule's target side ``[1] of [2]``.

A *lattice* is a hypergraph whose edges have one tail each, except a single start axiom. A k-best list
is the degenerate lattice with one edge per hypothesis from the start node to the goal.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from hypertune.compiled import boolean_inside_outside
from hypertune.errors import GraphError
from hypertune.symbols import FeatureSpace, Vocabulary

FeatureInput = Mapping[str, float] | Iterable[tuple[str, float]] | None
TargetInput = str | Sequence[str | int] | None

_TAIL_REFERENCE = re.compile(r"^\[(\d+)\]$")
ANNOTATIONS = ("sentence_id", "source_covered", "edge_stats")
EDGE_ANNOTATIONS = ("source_covered", "edge_stats")  # one entry (row) per edge


class Derivation(NamedTuple):
    """A derivation tree: an edge and one sub-derivation per tail, in tail order.

    Trees can be as deep as a lattice is long (hundreds of thousands of levels), so nothing here recurses:
    equality, hashing and ``repr`` walk the tree with an explicit stack (a plain nested tuple would
    compare and print recursively)."""

    edge: int
    children: tuple[Derivation, ...] = ()

    def edges(self) -> list[int]:
        """The edges of the tree in pre-order (an edge used twice appears twice)."""
        out: list[int] = []
        stack = [self]
        while stack:
            node = stack.pop()
            out.append(node.edge)
            stack.extend(reversed(node.children))
        return out

    def _shape(self) -> list[tuple[int, int]]:
        """(edge, number of children) of every tree node in pre-order: the tree, flattened."""
        out: list[tuple[int, int]] = []
        stack = [self]
        while stack:
            node = stack.pop()
            out.append((node.edge, len(node.children)))
            stack.extend(reversed(node.children))
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Derivation):
            return NotImplemented
        return self is other or self._shape() == other._shape()

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(tuple(self._shape()))

    def __repr__(self) -> str:
        edges = self.edges()
        shown = ", ".join(map(str, edges[:12])) + (", ..." if len(edges) > 12 else "")
        return f"Derivation(edges=[{shown}])"


@dataclass(eq=False)
class Hypergraph:
    """An acyclic, array-backed hypergraph with sparse edge features and target yields.

    Annotations that inputs bring and later steps need (typed, so every operation that makes a new graph
    from this one keeps them right, edge by edge):

    * ``sentence_id``: the sentence of the tuning set this graph is a search space for, when the input
      names it (an n-best id, a Moses hypergraph's file name, ...); ``None`` means "by position".
    * ``source_covered``: per edge, the number of source words covered once the edge is applied (Moses
      hypergraphs and search graphs); hope/fear prorates reference lengths by it.
    * ``edge_stats``: per edge, precomputed metric sufficient statistics (one row per edge, from extractor
      SCORESTAT files), used instead of statistics computed from references.

    ``metadata`` holds what a format reads and writes back but nothing else uses (header fields, ...).
    """

    num_nodes: int
    head: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    features: sp.csr_matrix
    target_offsets: np.ndarray
    target: np.ndarray
    feature_space: FeatureSpace
    vocabulary: Vocabulary
    node_labels: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    sentence_id: int | None = None
    source_covered: np.ndarray | None = None
    edge_stats: np.ndarray | None = None
    node_offsets: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.head = np.ascontiguousarray(self.head, dtype=np.int64)
        self.tail_offsets = np.ascontiguousarray(self.tail_offsets, dtype=np.int64)
        self.tails = np.ascontiguousarray(self.tails, dtype=np.int64)
        self.target_offsets = np.ascontiguousarray(self.target_offsets, dtype=np.int64)
        self.target = np.ascontiguousarray(self.target, dtype=np.int64)
        features = sp.csr_matrix(self.features, dtype=np.float64)
        features.sum_duplicates()
        features.sort_indices()
        self.features = features
        self._validate()
        self._check_annotations()
        counts = np.bincount(self.head, minlength=self.num_nodes)
        self.node_offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        missing = np.flatnonzero(counts == 0)
        if missing.size:
            raise GraphError(
                f"node {int(missing[0])} has no in-edge ({missing.size} such nodes); every node needs one "
                "(give leaves an axiom edge with no tails, or build with trim=True)"
            )

    @classmethod
    def _checked_parts(
        cls,
        num_nodes: int,
        head: np.ndarray,
        tail_offsets: np.ndarray,
        tails: np.ndarray,
        features: sp.csr_matrix,
        target_offsets: np.ndarray,
        target: np.ndarray,
        feature_space: FeatureSpace,
        vocabulary: Vocabulary,
        metadata: dict[str, Any],
        sentence_id: int | None,
    ) -> Hypergraph:
        """A graph from parts a builder of this module has already checked (int64 arrays, a canonical
        float64 CSR matrix, a valid structure), without checking them again: :func:`kbest_lattices`
        checks a whole corpus once instead of every list."""
        graph = cls.__new__(cls)
        graph.num_nodes, graph.head, graph.tail_offsets, graph.tails = num_nodes, head, tail_offsets, tails
        graph.features, graph.target_offsets, graph.target = features, target_offsets, target
        graph.feature_space, graph.vocabulary, graph.node_labels = feature_space, vocabulary, None
        graph.metadata = metadata
        graph.sentence_id, graph.source_covered, graph.edge_stats = sentence_id, None, None
        graph.node_offsets = np.concatenate(([0], np.cumsum(np.bincount(head, minlength=num_nodes)))).astype(np.int64)
        return graph

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        n, e = self.num_nodes, self.head.size
        if n <= 0 or e == 0:
            raise GraphError("empty hypergraph: it needs at least one node and one edge")
        if self.tail_offsets.shape != (e + 1,) or self.target_offsets.shape != (e + 1,):
            raise GraphError("tail_offsets and target_offsets need one entry per edge plus one")
        for name, offsets, flat in (
            ("tail", self.tail_offsets, self.tails),
            ("target", self.target_offsets, self.target),
        ):
            if offsets[0] != 0 or offsets[-1] != flat.size or np.any(np.diff(offsets) < 0):
                raise GraphError(f"{name}_offsets must rise from 0 to {flat.size}")
        if self.features.shape[0] != e:
            raise GraphError(f"feature matrix has {self.features.shape[0]} rows for {e} edges")
        if self.features.shape[1] > len(self.feature_space):
            raise GraphError("feature matrix has more columns than the feature space has names")
        bad = np.flatnonzero((self.head < 0) | (self.head >= n))
        if bad.size:
            raise GraphError(f"edge {int(bad[0])}: head {int(self.head[bad[0]])} is not a node id (0..{n - 1})")
        if np.any(np.diff(self.head) < 0):
            first = int(np.flatnonzero(np.diff(self.head) < 0)[0]) + 1
            raise GraphError(f"edge {first}: edges must be grouped by head in node order")
        edge_of_tail = np.repeat(np.arange(e), np.diff(self.tail_offsets))
        bad = np.flatnonzero((self.tails < 0) | (self.tails >= n))
        if bad.size:
            edge = int(edge_of_tail[bad[0]])
            raise GraphError(f"edge {edge}: tail {int(self.tails[bad[0]])} is a dangling node id (0..{n - 1})")
        bad = np.flatnonzero(self.tails >= self.head[edge_of_tail])
        if bad.size:
            edge = int(edge_of_tail[bad[0]])
            raise GraphError(
                f"edge {edge}: tail {int(self.tails[bad[0]])} is not before its head {int(self.head[edge])}; "
                "nodes must be in topological order (a cycle, or an unsorted graph: use HypergraphBuilder)"
            )
        if not np.all(np.isfinite(self.features.data)):
            row = int(
                np.searchsorted(self.features.indptr, np.flatnonzero(~np.isfinite(self.features.data))[0], "right")
            )
            raise GraphError(f"edge {row - 1}: feature values must be finite (found NaN or infinity)")
        arity_of_token = np.repeat(np.diff(self.tail_offsets), np.diff(self.target_offsets))
        bad = np.flatnonzero((self.target >= len(self.vocabulary)) | (-self.target > arity_of_token))
        if bad.size:
            edge = int(np.searchsorted(self.target_offsets, bad[0], "right")) - 1
            raise GraphError(f"edge {edge}: target token {int(self.target[bad[0]])} is not a word id or tail reference")

    def _check_annotations(self) -> None:
        edges = self.head.size
        if self.sentence_id is not None:
            self.sentence_id = int(self.sentence_id)
        if self.source_covered is not None:
            self.source_covered = np.ascontiguousarray(self.source_covered, dtype=np.int64)
            if self.source_covered.shape != (edges,):
                raise GraphError(f"source_covered has shape {self.source_covered.shape}, expected ({edges},)")
        if self.edge_stats is not None:
            self.edge_stats = np.ascontiguousarray(self.edge_stats, dtype=np.float64)
            if self.edge_stats.ndim != 2 or self.edge_stats.shape[0] != edges:
                raise GraphError(f"edge_stats has shape {self.edge_stats.shape}, expected one row per edge ({edges})")

    def annotated(self, **changes: Any) -> Hypergraph:
        """A copy sharing this graph's arrays with some annotations (``sentence_id``, ``source_covered``,
        ``edge_stats``) replaced; ``None`` removes one."""
        unknown = set(changes) - set(ANNOTATIONS)
        if unknown:
            raise TypeError(f"not a graph annotation: {sorted(unknown)} (annotations: {', '.join(ANNOTATIONS)})")
        graph = copy.copy(self)
        graph.metadata = dict(self.metadata)
        for name, value in changes.items():
            setattr(graph, name, value)
        graph._check_annotations()
        return graph

    def annotations(self, edges: np.ndarray | None = None) -> dict[str, Any]:
        """This graph's annotations as keyword arguments for a new graph, the per-edge ones restricted to
        ``edges`` (indices, in the new graph's edge order; ``None``: all edges as they are)."""
        found: dict[str, Any] = {"sentence_id": self.sentence_id}
        for name in EDGE_ANNOTATIONS:
            value = getattr(self, name)
            if value is not None:
                found[name] = value if edges is None else value[edges]
        return found

    # ------------------------------------------------------------------ basic views
    @property
    def num_edges(self) -> int:
        return int(self.head.size)

    @property
    def goal(self) -> int:
        return self.num_nodes - 1

    @property
    def arity(self) -> np.ndarray:
        """Number of tails of every edge."""
        return np.diff(self.tail_offsets)

    @property
    def max_arity(self) -> int:
        return int(self.arity.max())

    @property
    def is_lattice(self) -> bool:
        """True if every edge has one tail except a single axiom (the start node's)."""
        arity = self.arity
        return bool(np.count_nonzero(arity == 0) == 1 and np.all(arity <= 1) and arity[0] == 0)

    @property
    def is_kbest(self) -> bool:
        """True for a k-best list: start and goal nodes, an empty start axiom, one edge per hypothesis."""
        return self.num_nodes == 2 and self.is_lattice and self.target_offsets[1] == 0

    def in_edges(self, node: int) -> range:
        return range(int(self.node_offsets[node]), int(self.node_offsets[node + 1]))

    def edge_tails(self, edge: int) -> np.ndarray:
        return self.tails[self.tail_offsets[edge] : self.tail_offsets[edge + 1]]

    def edge_target(self, edge: int) -> np.ndarray:
        return self.target[self.target_offsets[edge] : self.target_offsets[edge + 1]]

    def edge_features(self, edge: int) -> dict[str, float]:
        row = slice(self.features.indptr[edge], self.features.indptr[edge + 1])
        names = self.feature_space.names
        return {names[c]: float(v) for c, v in zip(self.features.indices[row], self.features.data[row], strict=True)}

    def feature_matrix(self, width: int | None = None) -> sp.csr_matrix:
        """The features padded to ``width`` columns (default: the feature space's current size)."""
        width = len(self.feature_space) if width is None else width
        if self.features.shape[1] == width:
            return self.features
        return sp.csr_matrix(
            (self.features.data, self.features.indices, self.features.indptr), shape=(self.num_edges, width)
        )

    # ------------------------------------------------------------------ derivations
    def derivation_yield(self, derivation: Derivation) -> list[int]:
        """The word ids of a derivation's target string (tail references expanded)."""
        out: list[int] = []
        stack: list[tuple[Derivation, int]] = [(derivation, 0)]
        target, offsets = self.target, self.target_offsets
        while stack:
            node, position = stack.pop()
            end = offsets[node.edge + 1]
            i = offsets[node.edge] + position
            while i < end:
                token = int(target[i])
                i += 1
                if token >= 0:
                    out.append(token)
                else:
                    stack.append((node, int(i - offsets[node.edge])))
                    stack.append((node.children[-token - 1], 0))
                    break
        return out

    def derivation_words(self, derivation: Derivation) -> list[str]:
        return self.vocabulary.words(self.derivation_yield(derivation))

    def derivation_features(self, derivation: Derivation) -> np.ndarray:
        """The dense feature vector (over the whole feature space) of a derivation: the sum of its edges'."""
        counts = np.bincount(derivation.edges(), minlength=self.num_edges).astype(np.float64)
        return np.asarray(self.feature_matrix().T @ counts).ravel()

    def derivation_from_edges(self, edges: Sequence[int] | np.ndarray) -> Derivation:
        """The derivation whose edges in pre-order are ``edges`` (as :meth:`Derivation.edges` gives them).
        Built bottom-up from the end of the list, without recursion: lattices can be deep."""
        arity = self.tail_offsets[1:] - self.tail_offsets[:-1]
        stack: list[Derivation] = []
        for e in reversed([int(e) for e in edges]):
            k = int(arity[e])
            children = tuple(reversed(stack[len(stack) - k :])) if k else ()
            if k:
                del stack[len(stack) - k :]
            stack.append(Derivation(e, children))
        if len(stack) != 1:
            raise GraphError(f"{len(edges)} edges in pre-order do not make one derivation tree")
        return stack[0]

    def derivation_from_backpointers(self, best_edge: np.ndarray, node: int | None = None) -> Derivation:
        """The derivation that takes ``best_edge[v]`` at every node ``v`` below ``node`` (default: the goal)."""
        node = self.goal if node is None else node
        built: dict[int, Derivation] = {}
        stack = [(node, False)]
        while stack:
            v, expanded = stack.pop()
            if v in built:
                continue
            edge = int(best_edge[v])
            tails = self.edge_tails(edge)
            if expanded:
                built[v] = Derivation(edge, tuple(built[int(t)] for t in tails))
            else:
                stack.append((v, True))
                stack.extend((int(t), False) for t in tails if int(t) not in built)
        return built[node]

    # ------------------------------------------------------------------ summaries and conversions
    def to_networkx(self) -> Any:
        """A networkx view: a lattice becomes a MultiDiGraph of its arcs (start to goal), any other
        hypergraph a bipartite DiGraph of ``("node", v)`` and ``("edge", e)`` vertices."""
        import networkx as nx

        if self.is_lattice:
            graph = nx.MultiDiGraph(start=0, goal=self.goal)
            graph.add_nodes_from(range(self.num_nodes))
            for e in range(1, self.num_edges):
                words = [self.vocabulary.word(int(t)) for t in self.edge_target(e) if t >= 0]
                graph.add_edge(
                    int(self.edge_tails(e)[0]), int(self.head[e]), key=e, words=words, features=self.edge_features(e)
                )
            return graph
        graph = nx.DiGraph(goal=self.goal)
        for v in range(self.num_nodes):
            label = self.node_labels[v] if self.node_labels else None
            graph.add_node(("node", v), label=label)
        for e in range(self.num_edges):
            graph.add_node(("edge", e), features=self.edge_features(e), target=self.target_text(e))
            graph.add_edge(("edge", e), ("node", int(self.head[e])))
            for i, t in enumerate(self.edge_tails(e)):
                graph.add_edge(("node", int(t)), ("edge", e), position=i)
        return graph

    def target_text(self, edge: int) -> str:
        """An edge's target side as text, tails written ``[1]``, ``[2]``, ..."""
        return " ".join(self.vocabulary.word(int(t)) if t >= 0 else f"[{-int(t)}]" for t in self.edge_target(edge))

    def with_features(self, features: sp.csr_matrix) -> Hypergraph:
        """The same graph with another feature matrix (same number of rows)."""
        return Hypergraph(
            self.num_nodes,
            self.head,
            self.tail_offsets,
            self.tails,
            features,
            self.target_offsets,
            self.target,
            self.feature_space,
            self.vocabulary,
            self.node_labels,
            dict(self.metadata),
            **self.annotations(),
        )

    def subgraph(self, keep_edges: np.ndarray) -> Hypergraph:
        """The graph restricted to the edges in the boolean mask ``keep_edges`` and to the nodes they reach
        and that reach the goal (see :func:`trim`)."""
        return trim(self, keep_edges)

    def __repr__(self) -> str:
        kind = "lattice" if self.is_lattice else "hypergraph"
        return f"<{kind}: {self.num_nodes} nodes, {self.num_edges} edges, {self.features.nnz} feature values>"


# ---------------------------------------------------------------------- trimming


def useful_edges(hg_arrays: Hypergraph | _Arrays, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Edges and nodes that lie on some derivation of the goal, using only edges in ``keep``.

    A node is *reachable* when it has a derivation (Boolean inside is true) and *co-reachable* when it is
    used by a derivation of the goal (Boolean outside is true). Returns boolean masks (edges, nodes).
    """
    keep = np.ones(hg_arrays.head.size, dtype=np.bool_) if keep is None else np.asarray(keep, dtype=np.bool_)
    return boolean_inside_outside(hg_arrays.num_nodes, hg_arrays.head, hg_arrays.tail_offsets, hg_arrays.tails, keep)


def trim(hg: Hypergraph | _Arrays, keep_edges: np.ndarray | None = None) -> Hypergraph:
    """The part of ``hg`` that is reachable and co-reachable (optionally within a subset of edges).

    Raises :class:`GraphError` if the goal has no derivation left.
    """
    edge_mask, node_mask = useful_edges(hg, keep_edges)
    if not node_mask[hg.num_nodes - 1]:
        raise GraphError("the goal node is unreachable: no derivation reaches it")
    new_id = np.cumsum(node_mask) - 1
    edges = np.flatnonzero(edge_mask)
    arity = np.diff(hg.tail_offsets)[edges]
    tails = new_id[hg.tails[_flat_ranges(hg.tail_offsets, edges)]]
    target_lengths = np.diff(hg.target_offsets)[edges]
    target = hg.target[_flat_ranges(hg.target_offsets, edges)]
    labels = hg.node_labels
    return Hypergraph(
        int(node_mask.sum()),
        new_id[hg.head[edges]],
        np.concatenate(([0], np.cumsum(arity))),
        tails,
        hg.features[edges],
        np.concatenate(([0], np.cumsum(target_lengths))),
        target,
        hg.feature_space,
        hg.vocabulary,
        [labels[v] for v in np.flatnonzero(node_mask)] if labels else None,
        dict(hg.metadata),
        **hg.annotations(edges),
    )


def _flat_ranges(offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Indices of the concatenated slices ``offsets[r]:offsets[r+1]`` for ``r`` in ``rows``."""
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts
    if lengths.sum() == 0:
        return np.zeros(0, dtype=np.int64)
    shifts = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return np.arange(int(lengths.sum())) + shifts


@dataclass
class _Arrays:
    """Unvalidated graph arrays (used while building, before every node is known to have an in-edge)."""

    num_nodes: int
    head: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    features: sp.csr_matrix
    target_offsets: np.ndarray
    target: np.ndarray
    feature_space: FeatureSpace
    vocabulary: Vocabulary
    node_labels: list[str] | None
    metadata: dict[str, Any]
    sentence_id: int | None = None
    source_covered: np.ndarray | None = None
    edge_stats: np.ndarray | None = None

    def annotations(self, edges: np.ndarray | None = None) -> dict[str, Any]:
        return _annotations(self, edges)


def _annotations(graph: Hypergraph | _Arrays, edges: np.ndarray | None) -> dict[str, Any]:
    found: dict[str, Any] = {"sentence_id": graph.sentence_id}
    for name in EDGE_ANNOTATIONS:
        value = getattr(graph, name)
        if value is not None:
            found[name] = value if edges is None else np.asarray(value)[edges]
    return found


# ---------------------------------------------------------------------- building


class HypergraphBuilder:
    """Collects nodes and edges in any order and builds a validated :class:`Hypergraph`.

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
        self._head.append(int(head))
        self._tails.extend(tails)
        self._arity.append(len(tails))
        tokens = self.encode_target(target, len(tails))
        self._target.extend(tokens)
        self._target_lengths.append(len(tokens))
        count = 0
        items = features.items() if isinstance(features, Mapping) else (features or ())
        for name, value in items:
            self._feature_columns.append(self.feature_space.index(name))
            self._feature_values.append(float(value))
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

    def build(
        self,
        goal: int | None = None,
        *,
        trim_graph: bool = False,
        metadata: dict[str, Any] | None = None,
        sentence_id: int | None = None,
        source_covered: Sequence[int] | np.ndarray | None = None,
        edge_stats: np.ndarray | None = None,
    ) -> Hypergraph:
        """Sort nodes topologically (goal last), group edges by head and validate.

        ``trim_graph=True`` drops nodes and edges that are not on any derivation of the goal instead of
        rejecting nodes without in-edges. The per-edge annotations (see :class:`Hypergraph`) are given in
        the order the edges were added and follow them.
        """
        n = self.num_nodes
        if n == 0 or not self._head:
            raise GraphError("empty hypergraph: it needs at least one node and one edge")
        goal = n - 1 if goal is None else int(goal)
        head = np.asarray(self._head, dtype=np.int64)
        arity = np.asarray(self._arity, dtype=np.int64)
        tails = np.asarray(self._tails, dtype=np.int64)
        tail_offsets = np.concatenate(([0], np.cumsum(arity)))
        for name, ids in (("head", head), ("tail", tails)):
            bad = np.flatnonzero((ids < 0) | (ids >= n))
            if bad.size:
                edge = int(bad[0]) if name == "head" else int(np.searchsorted(tail_offsets, bad[0], "right") - 1)
                raise GraphError(f"edge {edge}: {name} {int(ids[bad[0]])} is a dangling node id (0..{n - 1})")
        if not 0 <= goal < n:
            raise GraphError(f"goal {goal} is not a node id (0..{n - 1})")
        order = _topological_order(n, head, tail_offsets, tails, goal)
        new_id = np.empty(n, dtype=np.int64)
        new_id[order] = np.arange(n)
        new_head = new_id[head]
        edge_order = np.argsort(new_head, kind="stable")
        target = np.asarray(self._target, dtype=np.int64)
        target_offsets = np.concatenate(([0], np.cumsum(self._target_lengths))).astype(np.int64)
        feature_offsets = np.concatenate(([0], np.cumsum(self._feature_counts))).astype(np.int64)
        features = sp.csr_matrix(
            (
                np.asarray(self._feature_values, dtype=np.float64),
                np.asarray(self._feature_columns, dtype=np.int64),
                feature_offsets,
            ),
            shape=(len(self._head), len(self.feature_space)),
        )[edge_order]
        arrays = _Arrays(
            n,
            new_head[edge_order],
            np.concatenate(([0], np.cumsum(arity[edge_order]))),
            new_id[tails[_flat_ranges(tail_offsets, edge_order)]],
            features,
            np.concatenate(([0], np.cumsum(np.diff(target_offsets)[edge_order]))),
            target[_flat_ranges(target_offsets, edge_order)],
            self.feature_space,
            self.vocabulary,
            [self._labels[v] or "" for v in order] if any(self._labels) else None,
            dict(metadata or {}),
            sentence_id,
            None if source_covered is None else np.asarray(source_covered, dtype=np.int64),
            None if edge_stats is None else np.asarray(edge_stats, dtype=np.float64),
        )
        for name in EDGE_ANNOTATIONS:
            value = getattr(arrays, name)
            if value is not None:
                if len(value) != len(self._head):
                    raise GraphError(f"{name} has {len(value)} entries for {len(self._head)} edges")
                setattr(arrays, name, value[edge_order])
        if trim_graph:
            return trim(arrays)
        return Hypergraph(
            arrays.num_nodes,
            arrays.head,
            arrays.tail_offsets,
            arrays.tails,
            arrays.features,
            arrays.target_offsets,
            arrays.target,
            arrays.feature_space,
            arrays.vocabulary,
            arrays.node_labels,
            arrays.metadata,
            **arrays.annotations(),
        )


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
    successor_offsets = np.concatenate(([0], np.cumsum(np.bincount(tails, minlength=n))))
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
    predecessor = {}
    for t, h in zip(tails, tail_heads, strict=True):
        if indegree[h] > 0 and indegree[t] > 0:
            predecessor.setdefault(int(h), int(t))
    path, seen, v = [], {}, start
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
) -> Hypergraph:
    """A k-best list as a degenerate lattice: start node 0 (with its axiom), goal node 1, and one edge
    per hypothesis from start to goal, in list order (hypothesis ``i`` is edge ``i + 1``; ``edge_stats``,
    when given, has one row per edge, the axiom's first)."""
    builder = HypergraphBuilder(feature_space, vocabulary)
    start, goal = builder.add_nodes(2)
    builder.add_edge(start, (), None, [])
    for words, features in hypotheses:
        tokens = words.split() if isinstance(words, str) else list(words)
        builder.add_edge(goal, [start], features, [0, *tokens])
    if len(builder._head) == 1:
        raise GraphError("empty k-best list: no hypotheses")
    return builder.build(goal, metadata=metadata, sentence_id=sentence_id, edge_stats=edge_stats)


def kbest_lattices(
    list_offsets: np.ndarray,
    words: np.ndarray,
    word_offsets: np.ndarray,
    features: sp.csr_matrix,
    feature_space: FeatureSpace,
    vocabulary: Vocabulary,
    *,
    widths: np.ndarray | None = None,
    sentence_ids: Sequence[int | None] | None = None,
    metadata: Sequence[dict[str, Any]] | None = None,
    hypothesis_stats: np.ndarray | None = None,
) -> list[Hypergraph]:
    """Many k-best lists at once, each laid out exactly as :func:`from_kbest` lays one out.

    List ``s`` holds hypotheses ``list_offsets[s]:list_offsets[s + 1]``; hypothesis ``h`` has the words
    ``words[word_offsets[h]:word_offsets[h + 1]]`` (vocabulary ids) and the features of row ``h`` of
    ``features``. ``widths[s]`` is list ``s``'s number of feature columns (default: the feature space's
    size). ``hypothesis_stats`` (one row per hypothesis) become each list's ``edge_stats`` (a row of zeros
    for the start axiom first). The arrays are checked once for all lists, so a reader of a large n-best
    file pays no per-list validation."""
    lists = len(list_offsets) - 1
    hypotheses = int(list_offsets[-1])
    sizes = np.diff(list_offsets)
    if lists < 1 or np.any(sizes < 1):
        raise GraphError("empty k-best list: no hypotheses")
    features = sp.csr_matrix(features, dtype=np.float64)
    features.sum_duplicates()
    features.sort_indices()
    if features.shape[0] != hypotheses or features.shape[1] > len(feature_space):
        raise GraphError(f"feature matrix of shape {features.shape} for {hypotheses} hypotheses")
    if not np.all(np.isfinite(features.data)):
        row = int(np.searchsorted(features.indptr, np.flatnonzero(~np.isfinite(features.data))[0], "right")) - 1
        raise GraphError(f"hypothesis {row}: feature values must be finite (a name repeated on it adds up to "
                         "infinity)", item=row)  # fmt: skip
    words = np.asarray(words, dtype=np.int64)
    if words.size and (words.min() < 0 or words.max() >= len(vocabulary)):
        raise GraphError("a hypothesis word is not a vocabulary id")
    widths = np.full(lists, len(feature_space)) if widths is None else np.asarray(widths, dtype=np.int64)
    if hypothesis_stats is not None:
        hypothesis_stats = np.ascontiguousarray(hypothesis_stats, dtype=np.float64)
        if hypothesis_stats.ndim != 2 or hypothesis_stats.shape[0] != hypotheses:
            raise GraphError(f"hypothesis_stats of shape {hypothesis_stats.shape} for {hypotheses} hypotheses")
    last_column = np.full(hypotheses, -1, dtype=np.int64)
    rows = np.diff(features.indptr) > 0
    last_column[rows] = features.indices[features.indptr[1:][rows] - 1]  # indices are sorted
    if np.any(np.maximum.reduceat(last_column, list_offsets[:-1]) >= widths) or np.any(widths > len(feature_space)):
        raise GraphError("a list's width leaves out some of its feature columns")
    lengths = np.diff(word_offsets) + 1  # the start node's yield, then the words
    ends = np.cumsum(lengths)
    target = np.empty(int(ends[-1]), dtype=np.int64)
    is_start = np.zeros(target.size, dtype=np.bool_)
    is_start[ends - lengths] = True
    target[is_start] = -1
    target[~is_start] = words
    graphs = []
    for s in range(lists):
        lo, hi = int(list_offsets[s]), int(list_offsets[s + 1])
        count = hi - lo
        t0 = int(ends[lo] - lengths[lo])
        f0, f1 = int(features.indptr[lo]), int(features.indptr[hi])
        matrix = sp.csr_matrix(
            (features.data[f0:f1], features.indices[f0:f1], np.concatenate(([0], features.indptr[lo : hi + 1] - f0))),
            shape=(count + 1, int(widths[s])),
        )
        graphs.append(
            Hypergraph._checked_parts(
                2,
                np.concatenate(([0], np.ones(count, dtype=np.int64))),
                np.concatenate(([0], np.arange(count + 1, dtype=np.int64))),
                np.zeros(count, dtype=np.int64),
                matrix,
                np.concatenate(([0, 0], ends[lo:hi] - t0)),
                target[t0 : int(ends[hi - 1])],
                feature_space,
                vocabulary,
                dict(metadata[s]) if metadata is not None else {},
                None if sentence_ids is None else sentence_ids[s],
            )
        )
        if hypothesis_stats is not None:
            graphs[-1].edge_stats = np.vstack([np.zeros((1, hypothesis_stats.shape[1])), hypothesis_stats[lo:hi]])
    return graphs


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


def union(
    graphs: Sequence[Hypergraph], metadata: dict[str, Any] | None = None, sentence_id: int | None = None
) -> Hypergraph:
    """The disjoint union of graphs under one new goal: its derivations are the union of theirs.

    The new goal has one empty edge (no features, target ``[1]``) from each graph's goal, so inside values
    ⊕ together (an envelope of the union is the upper envelope of the parts', a Viterbi derivation the best
    of the parts'). All graphs must share a feature space and a vocabulary. A per-edge annotation is kept
    when every part has it (the new edges get zeros); ``metadata`` defaults to the first part's.
    """
    if not graphs:
        raise GraphError("empty union: no graphs")
    first = graphs[0]
    if any(g.feature_space is not first.feature_space or g.vocabulary is not first.vocabulary for g in graphs):
        raise GraphError("graphs in a union must share one feature space and one vocabulary")
    node_shift = np.concatenate(([0], np.cumsum([g.num_nodes for g in graphs])))
    goal = int(node_shift[-1])
    parts = len(graphs)
    head = np.concatenate([g.head + node_shift[i] for i, g in enumerate(graphs)] + [np.full(parts, goal)])
    tails = np.concatenate([g.tails + node_shift[i] for i, g in enumerate(graphs)] + [node_shift[1:] - 1])
    arity = np.concatenate([g.arity for g in graphs] + [np.ones(parts, dtype=np.int64)])
    target_lengths = np.concatenate([np.diff(g.target_offsets) for g in graphs] + [np.ones(parts, dtype=np.int64)])
    target = np.concatenate([g.target for g in graphs] + [np.full(parts, -1)])
    width = len(first.feature_space)
    features = sp.vstack([g.feature_matrix(width) for g in graphs] + [sp.csr_matrix((parts, width))], format="csr")
    return Hypergraph(
        goal + 1,
        head,
        np.concatenate(([0], np.cumsum(arity))),
        tails,
        features,
        np.concatenate(([0], np.cumsum(target_lengths))),
        target,
        first.feature_space,
        first.vocabulary,
        None,
        dict(metadata if metadata is not None else first.metadata),
        sentence_id,
        **_joined_annotations(graphs),
    )


def _joined_annotations(graphs: Sequence[Hypergraph]) -> dict[str, np.ndarray]:
    """The per-edge annotations every one of ``graphs`` has, concatenated, with zeros for the union's goal
    edges."""
    joined = {}
    for name in EDGE_ANNOTATIONS:
        parts = [getattr(g, name) for g in graphs]
        if any(part is None for part in parts):
            continue
        if len({part.shape[1:] for part in parts}) != 1:
            raise GraphError(f"graphs in a union have {name} of different widths")
        joined[name] = np.concatenate([*parts, np.zeros((len(parts), *parts[0].shape[1:]), parts[0].dtype)])
    return joined


@dataclass(frozen=True)
class PackedGraphs:
    """Many hypergraphs as one set of flat arrays, for compiled loops over a whole corpus.

    Graph ``g`` owns nodes ``node_starts[g]:node_starts[g+1]`` (its goal is the last of them) and edges
    ``edge_starts[g]:edge_starts[g+1]``; node, edge and tail ids are global, so every per-graph array
    (``node_offsets``, ``tails``, ``target_offsets``) reads as for a single hypergraph. ``features`` stacks
    the graphs' feature matrices (one row per global edge) in column-major form, so a direction with
    few non-zero entries reads only its columns. Word ids are shared (one vocabulary).
    """

    node_offsets: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    target_offsets: np.ndarray
    target: np.ndarray
    node_starts: np.ndarray
    edge_starts: np.ndarray
    features: sp.csc_matrix
    max_arity: int

    @classmethod
    def pack(cls, graphs: Sequence[Hypergraph], features: bool = True) -> PackedGraphs:
        """Pack ``graphs``; with ``features=False`` the feature matrix is left empty (all zeros, no
        storage), for callers that keep the features elsewhere."""
        if not graphs:
            raise GraphError("nothing to pack: no graphs")
        first = graphs[0]
        if any(g.feature_space is not first.feature_space or g.vocabulary is not first.vocabulary for g in graphs):
            raise GraphError("packed graphs must share one feature space and one vocabulary")
        node_starts = np.concatenate(([0], np.cumsum([g.num_nodes for g in graphs]))).astype(np.int64)
        edge_starts = np.concatenate(([0], np.cumsum([g.num_edges for g in graphs]))).astype(np.int64)
        tail_starts = np.concatenate(([0], np.cumsum([g.tails.size for g in graphs]))).astype(np.int64)
        token_starts = np.concatenate(([0], np.cumsum([g.target.size for g in graphs]))).astype(np.int64)

        def joined(arrays: list[np.ndarray], shifts: np.ndarray) -> np.ndarray:
            """Concatenate offset arrays (each ``[0, ..., total]``), shifting each by its start."""
            parts = [a[:-1] + shift for a, shift in zip(arrays, shifts[:-1], strict=True)]
            return np.concatenate([*parts, shifts[-1:]]).astype(np.int64)

        width = len(first.feature_space)
        return cls(
            node_offsets=joined([g.node_offsets for g in graphs], edge_starts),
            tail_offsets=joined([g.tail_offsets for g in graphs], tail_starts),
            tails=np.concatenate([g.tails + shift for g, shift in zip(graphs, node_starts[:-1], strict=True)]),
            target_offsets=joined([g.target_offsets for g in graphs], token_starts),
            target=np.concatenate([g.target for g in graphs]),
            node_starts=node_starts,
            edge_starts=edge_starts,
            features=sp.vstack([g.feature_matrix(width) for g in graphs], format="csc")
            if features
            else sp.csc_matrix((int(edge_starts[-1]), width)),
            max_arity=max(max(1, g.max_arity) for g in graphs),
        )

    def __len__(self) -> int:
        return int(self.node_starts.size - 1)

    @property
    def num_edges(self) -> int:
        return int(self.edge_starts[-1])
