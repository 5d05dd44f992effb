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
is the degenerate lattice with one edge per hypothesis from the start node to the goal. (Klein and
Manning, "Parsing and Hypergraphs", IWPT 2001; Huang and Chiang, "Better k-best Parsing", IWPT 2005.)

There is one way to make a :class:`Hypergraph`: its keyword-only constructor, which converts and checks
everything. A builder that has already done so for what it passes
(:func:`~hypertune.hypergraph.packing.kbest_lattices`) says ``checked=True`` to the same constructor.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from hypertune.arrays import offsets_from_counts
from hypertune.errors import GraphError
from hypertune.symbols import FeatureSpace, Vocabulary

ANNOTATIONS = ("sentence_id", "source_covered", "edge_stats", "edge_scores")
EDGE_ANNOTATIONS = ("source_covered", "edge_stats", "edge_scores")  # one entry (row) per edge


class EdgeScores:
    """Named numbers an input gives each edge, one row per edge and one column per name: the scores a k-best
    list's hypotheses carry (a COMET or QE score computed elsewhere; row 0, a list's start axiom, holds zeros).
    Rows are taken like an array's (``scores[edges]``), so every operation that keeps edges keeps them."""

    __slots__ = ("names", "values")

    def __init__(self, names: Sequence[str], values: np.ndarray | Sequence[Sequence[float]]) -> None:
        self.names = tuple(names)
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        if self.values.ndim == 1 and not self.names:
            self.values = self.values.reshape(-1, 0)
        if self.values.ndim != 2 or self.values.shape[1] != len(self.names):
            raise GraphError(f"edge scores of shape {self.values.shape} for {len(self.names)} names")
        if len(set(self.names)) != len(self.names):
            raise GraphError(f"edge score names repeat: {', '.join(self.names)}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __getitem__(self, edges: Any) -> EdgeScores:
        return EdgeScores(self.names, self.values[edges])

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, EdgeScores)
            and self.names == other.names
            and self.values.shape == other.values.shape
            and bool(np.array_equal(self.values, other.values))
        )

    __hash__ = None  # type: ignore[assignment]

    def column(self, name: str) -> np.ndarray:
        """The scores named ``name``, one per edge (a ``KeyError`` naming the ones there are)."""
        if name not in self.names:
            raise KeyError(f"no score named {name!r} (the edges have: {', '.join(self.names) or 'none'})")
        return self.values[:, self.names.index(name)]

    @staticmethod
    def concatenate(parts: Sequence[EdgeScores], extra_rows: int = 0) -> EdgeScores:
        """The rows of ``parts`` one after another (their names must be the same), then ``extra_rows`` of
        zeros."""
        names = {part.names for part in parts}
        if len(names) != 1:
            raise GraphError("graphs with different score names cannot be joined")
        values = [part.values for part in parts]
        return EdgeScores(parts[0].names, np.concatenate([*values, np.zeros((extra_rows, len(parts[0].names)))]))

    def __repr__(self) -> str:
        return f"EdgeScores({list(self.names)}, {len(self)} rows)"


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


@dataclass(eq=False, kw_only=True)
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
    * ``edge_scores``: per edge, named scores the input gives each hypothesis (:class:`EdgeScores`: JSONL
      ``"scores"``, ``--scores FILE``), which a ``scores.NAME`` metric reads.

    ``metadata`` holds what a format reads and writes back but nothing else uses (header fields, ...).

    Every argument is a keyword. The constructor converts the arrays (contiguous int64, a canonical float64
    CSR matrix) and checks the structure, raising :class:`GraphError`; ``checked=True`` skips both for parts
    a builder has already converted and checked (``node_offsets`` is derived either way).
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
    edge_scores: EdgeScores | None = None
    node_offsets: np.ndarray = field(init=False, repr=False)
    checked: InitVar[bool] = False

    def __post_init__(self, checked: bool) -> None:
        if not checked:
            self._convert()
            self._validate()
            self._check_annotations()
        counts = np.bincount(self.head, minlength=self.num_nodes)
        self.node_offsets = offsets_from_counts(counts)
        if not checked:
            missing = np.flatnonzero(counts == 0)
            if missing.size:
                raise GraphError(
                    f"node {int(missing[0])} has no in-edge ({missing.size} such nodes); every node needs one "
                    "(give leaves an axiom edge with no tails, or build with trim=True)"
                )

    def keyword_arguments(self) -> dict[str, Any]:
        """The arguments that construct this graph again: every field of the constructor, by name (arrays
        shared). Operations that make a new graph from this one start from them, so a field added to the
        class is carried along without being named again."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    # ------------------------------------------------------------------ validation
    def _convert(self) -> None:
        """The arrays as the algorithms read them: contiguous int64, features a canonical float64 CSR matrix
        (duplicates summed, column indices sorted)."""
        self.head = np.ascontiguousarray(self.head, dtype=np.int64)
        self.tail_offsets = np.ascontiguousarray(self.tail_offsets, dtype=np.int64)
        self.tails = np.ascontiguousarray(self.tails, dtype=np.int64)
        self.target_offsets = np.ascontiguousarray(self.target_offsets, dtype=np.int64)
        self.target = np.ascontiguousarray(self.target, dtype=np.int64)
        features = sp.csr_matrix(self.features, dtype=np.float64)
        features.sum_duplicates()
        features.sort_indices()
        self.features = features

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
        if self.edge_scores is not None:
            if not isinstance(self.edge_scores, EdgeScores):
                raise GraphError(f"edge_scores must be EdgeScores, not {type(self.edge_scores).__name__}")
            if len(self.edge_scores) != edges:
                raise GraphError(f"edge_scores has {len(self.edge_scores)} rows, expected one per edge ({edges})")

    def annotated(self, **changes: Any) -> Hypergraph:
        """A copy sharing this graph's arrays with some annotations (``sentence_id``, ``source_covered``,
        ``edge_stats``, ``edge_scores``) replaced; ``None`` removes one."""
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
        return pad_columns(self.features, len(self.feature_space) if width is None else width)

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
        return dataclasses.replace(self, features=features, metadata=dict(self.metadata))

    def subgraph(self, keep_edges: np.ndarray) -> Hypergraph:
        """The graph restricted to the edges in the boolean mask ``keep_edges`` and to the nodes they reach
        and that reach the goal (see :func:`~hypertune.hypergraph.building.trim`)."""
        from hypertune.hypergraph.building import trim  # building constructs graphs of this module

        return trim(self, keep_edges)

    def __repr__(self) -> str:
        kind = "lattice" if self.is_lattice else "hypergraph"
        return f"<{kind}: {self.num_nodes} nodes, {self.num_edges} edges, {self.features.nnz} feature values>"


def pad_columns(features: sp.csr_matrix, width: int) -> sp.csr_matrix:
    """CSR ``features`` with ``width`` columns, sharing its arrays (``features`` itself when it has them): how a
    feature matrix made when the feature space was smaller reads after the space has grown."""
    if features.shape[1] == width:
        return features
    return sp.csr_matrix((features.data, features.indices, features.indptr), shape=(features.shape[0], width))
