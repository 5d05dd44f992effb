"""Several graphs at once: a corpus packed into one set of flat arrays for compiled loops, many k-best lists
made from flat arrays in one checked step, and the union of graphs under one goal.

All three shift each graph's node, edge, tail and token ids by the totals of the graphs before it (the
offsets of the graphs' sizes), so that every per-graph array reads as for a single hypergraph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from hypertune.arrays import offsets_from_counts
from hypertune.errors import GraphError
from hypertune.hypergraph.structure import EDGE_ANNOTATIONS, EdgeScores, Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary


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
        first = _shared_tables(graphs, "packed graphs", "nothing to pack: no graphs")
        node_starts = offsets_from_counts([g.num_nodes for g in graphs])
        edge_starts = offsets_from_counts([g.num_edges for g in graphs])
        tail_starts = offsets_from_counts([g.tails.size for g in graphs])
        token_starts = offsets_from_counts([g.target.size for g in graphs])

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


def _shared_tables(graphs: Sequence[Hypergraph], what: str, empty: str) -> Hypergraph:
    """The first of ``graphs``, after checking there is one and that all share its feature space and
    vocabulary (``what`` names the graphs in the error)."""
    if not graphs:
        raise GraphError(empty)
    first = graphs[0]
    if any(g.feature_space is not first.feature_space or g.vocabulary is not first.vocabulary for g in graphs):
        raise GraphError(f"{what} must share one feature space and one vocabulary")
    return first


def union(
    graphs: Sequence[Hypergraph], metadata: dict[str, Any] | None = None, sentence_id: int | None = None
) -> Hypergraph:
    """The disjoint union of graphs under one new goal: its derivations are the union of theirs.

    The new goal has one empty edge (no features, target ``[1]``) from each graph's goal, so inside values
    ⊕ together (an envelope of the union is the upper envelope of the parts', a Viterbi derivation the best
    of the parts'). All graphs must share a feature space and a vocabulary. A per-edge annotation is kept
    when every part has it (the new edges get zeros); ``metadata`` defaults to the first part's.
    """
    first = _shared_tables(graphs, "graphs in a union", "empty union: no graphs")
    node_shift = offsets_from_counts([g.num_nodes for g in graphs])
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
        num_nodes=goal + 1,
        head=head,
        tail_offsets=offsets_from_counts(arity),
        tails=tails,
        features=features,
        target_offsets=offsets_from_counts(target_lengths),
        target=target,
        feature_space=first.feature_space,
        vocabulary=first.vocabulary,
        node_labels=None,
        metadata=dict(metadata if metadata is not None else first.metadata),
        sentence_id=sentence_id,
        **_joined_annotations(graphs),
    )


def _joined_annotations(graphs: Sequence[Hypergraph]) -> dict[str, Any]:
    """The per-edge annotations every one of ``graphs`` has, concatenated, with zeros for the union's goal
    edges (keyword arguments of :class:`Hypergraph`)."""
    joined: dict[str, Any] = {}
    for name in EDGE_ANNOTATIONS:
        parts = [getattr(g, name) for g in graphs]
        if any(part is None for part in parts):
            continue
        if name == "edge_scores":
            joined[name] = EdgeScores.concatenate(parts, extra_rows=len(parts))
            continue
        if len({part.shape[1:] for part in parts}) != 1:
            raise GraphError(f"graphs in a union have {name} of different widths")
        joined[name] = np.concatenate([*parts, np.zeros((len(parts), *parts[0].shape[1:]), parts[0].dtype)])
    return joined


class KbestLists(NamedTuple):
    """Many k-best lists as flat arrays, as the n-best readers make them. List ``s`` holds hypotheses
    ``list_offsets[s]:list_offsets[s + 1]``; hypothesis ``h`` has the words
    ``words[word_offsets[h]:word_offsets[h + 1]]`` (vocabulary ids) and the features of row ``h`` of
    ``features``."""

    list_offsets: np.ndarray
    words: np.ndarray
    word_offsets: np.ndarray
    features: sp.csr_matrix


def kbest_lattices(
    lists: KbestLists,
    feature_space: FeatureSpace,
    vocabulary: Vocabulary,
    *,
    widths: np.ndarray | None = None,
    sentence_ids: Sequence[int | None] | None = None,
    metadata: Sequence[dict[str, Any]] | None = None,
    hypothesis_stats: np.ndarray | None = None,
    hypothesis_scores: EdgeScores | None = None,
) -> list[Hypergraph]:
    """Many k-best lists at once, each laid out exactly as :func:`~hypertune.hypergraph.from_kbest` lays
    one out.

    ``widths[s]`` is list ``s``'s number of feature columns (default: the feature space's size).
    ``hypothesis_stats`` (one row per hypothesis) become each list's ``edge_stats`` (a row of zeros for the
    start axiom first); ``hypothesis_scores`` (one row per hypothesis) likewise become each list's
    ``edge_scores``. The arrays are checked once for all lists, and each list is made with
    ``checked=True``, so a reader of a large n-best file pays no per-list validation."""
    list_offsets = lists.list_offsets
    count = len(list_offsets) - 1
    if count < 1 or np.any(np.diff(list_offsets) < 1):
        raise GraphError("empty k-best list: no hypotheses")
    lists = lists._replace(words=np.asarray(lists.words, dtype=np.int64))
    features = _checked_features(lists, feature_space, vocabulary)
    widths = np.full(count, len(feature_space)) if widths is None else np.asarray(widths, dtype=np.int64)
    hypotheses = int(list_offsets[-1])
    if hypothesis_stats is not None:
        hypothesis_stats = np.ascontiguousarray(hypothesis_stats, dtype=np.float64)
        if hypothesis_stats.ndim != 2 or hypothesis_stats.shape[0] != hypotheses:
            raise GraphError(f"hypothesis_stats of shape {hypothesis_stats.shape} for {hypotheses} hypotheses")
    if hypothesis_scores is not None and len(hypothesis_scores) != hypotheses:
        raise GraphError(f"{len(hypothesis_scores)} rows of hypothesis scores for {hypotheses} hypotheses")
    _check_widths(features, list_offsets, widths, len(feature_space))
    token_offsets = offsets_from_counts(np.diff(lists.word_offsets) + 1)  # the start node's yield, then the words
    target = np.full(int(token_offsets[-1]), -1, dtype=np.int64)
    is_word = np.ones(target.size, dtype=np.bool_)
    is_word[token_offsets[:-1]] = False
    target[is_word] = lists.words
    graphs = []
    for s in range(count):
        lo, hi = int(list_offsets[s]), int(list_offsets[s + 1])
        size = hi - lo
        t0, t1 = int(token_offsets[lo]), int(token_offsets[hi])
        f0, f1 = int(features.indptr[lo]), int(features.indptr[hi])
        matrix = sp.csr_matrix(
            (features.data[f0:f1], features.indices[f0:f1], np.concatenate(([0], features.indptr[lo : hi + 1] - f0))),
            shape=(size + 1, int(widths[s])),
        )
        graphs.append(
            Hypergraph(
                num_nodes=2,
                head=np.concatenate(([0], np.ones(size, dtype=np.int64))),
                tail_offsets=np.concatenate(([0], np.arange(size + 1, dtype=np.int64))),
                tails=np.zeros(size, dtype=np.int64),
                features=matrix,
                target_offsets=np.concatenate(([0], token_offsets[lo : hi + 1] - t0)),
                target=target[t0:t1],
                feature_space=feature_space,
                vocabulary=vocabulary,
                metadata=dict(metadata[s]) if metadata is not None else {},
                sentence_id=None if sentence_ids is None else sentence_ids[s],
                edge_stats=None if hypothesis_stats is None else _with_axiom_row(hypothesis_stats[lo:hi]),
                edge_scores=None
                if hypothesis_scores is None
                else EdgeScores(hypothesis_scores.names, _with_axiom_row(hypothesis_scores.values[lo:hi])),
                checked=True,
            )
        )
    return graphs


def packed_kbest_lists(
    list_offsets: np.ndarray, words: np.ndarray, word_offsets: np.ndarray, num_features: int
) -> tuple[PackedGraphs, np.ndarray]:
    """The k-best lists of :func:`kbest_lattices` packed as :meth:`PackedGraphs.pack` packs those graphs (with no
    features: ``features=False``), straight from the arrays, and the packed edge of every hypothesis. List ``s``
    is nodes ``2s`` (the start, reached by its axiom edge, with no tail and no words) and ``2s + 1`` (the goal,
    reached by one edge per hypothesis with tail ``2s`` and the target ``[tail 0] words``)."""
    list_offsets = np.asarray(list_offsets, dtype=np.int64)
    lists = len(list_offsets) - 1
    counts = np.diff(list_offsets)
    if lists < 1 or np.any(counts < 1):
        raise GraphError("empty k-best list: no hypotheses")  # as kbest_lattices: a goal no edge reaches
    edge_starts = offsets_from_counts(counts + 1)
    edges = int(edge_starts[-1])
    axioms = edge_starts[:-1]
    is_hypothesis = np.ones(edges, dtype=bool)
    is_hypothesis[axioms] = False
    hypothesis_edges = np.flatnonzero(is_hypothesis)
    node_offsets = np.empty(2 * lists + 1, dtype=np.int64)
    node_offsets[0:-1:2], node_offsets[1:-1:2], node_offsets[-1] = axioms, axioms + 1, edges
    tokens = np.zeros(edges, dtype=np.int64)
    tokens[hypothesis_edges] = np.diff(word_offsets) + 1  # the start node's yield, then the words
    target_offsets = offsets_from_counts(tokens)
    target = np.full(int(target_offsets[-1]), -1, dtype=np.int64)
    is_word = np.ones(target.size, dtype=bool)
    is_word[target_offsets[hypothesis_edges]] = False
    target[is_word] = words
    packed = PackedGraphs(
        node_offsets=node_offsets,
        tail_offsets=offsets_from_counts(is_hypothesis.astype(np.int64)),
        tails=np.repeat(np.arange(0, 2 * lists, 2, dtype=np.int64), counts),
        target_offsets=target_offsets,
        target=target,
        node_starts=np.arange(0, 2 * lists + 1, 2, dtype=np.int64),
        edge_starts=edge_starts,
        features=sp.csc_matrix((edges, num_features)),
        max_arity=1,
    )
    return packed, hypothesis_edges


def _with_axiom_row(rows: np.ndarray) -> np.ndarray:
    """A list's per-hypothesis rows as per-edge rows: a row of zeros for the start axiom (edge 0) first."""
    return np.vstack([np.zeros((1, rows.shape[1])), rows])


def _checked_features(lists: KbestLists, feature_space: FeatureSpace, vocabulary: Vocabulary) -> sp.csr_matrix:
    """The hypotheses' feature matrix as the graphs keep it (float64, duplicates summed, columns sorted),
    after checking its shape, its values and the words."""
    hypotheses = int(lists.list_offsets[-1])
    features = sp.csr_matrix(lists.features, dtype=np.float64)
    features.sum_duplicates()
    features.sort_indices()
    if features.shape[0] != hypotheses or features.shape[1] > len(feature_space):
        raise GraphError(f"feature matrix of shape {features.shape} for {hypotheses} hypotheses")
    if not np.all(np.isfinite(features.data)):
        row = int(np.searchsorted(features.indptr, np.flatnonzero(~np.isfinite(features.data))[0], "right")) - 1
        raise GraphError(f"hypothesis {row}: feature values must be finite (a name repeated on it adds up to "
                         "infinity)", item=row)  # fmt: skip
    words = lists.words
    if words.size and (words.min() < 0 or words.max() >= len(vocabulary)):
        raise GraphError("a hypothesis word is not a vocabulary id")
    return features


def _check_widths(features: sp.csr_matrix, list_offsets: np.ndarray, widths: np.ndarray, space: int) -> None:
    """Every list's width covers its feature columns and fits in the feature space (``space`` columns)."""
    last_column = np.full(features.shape[0], -1, dtype=np.int64)
    rows = np.diff(features.indptr) > 0
    last_column[rows] = features.indices[features.indptr[1:][rows] - 1]  # indices are sorted
    if np.any(np.maximum.reduceat(last_column, list_offsets[:-1]) >= widths) or np.any(widths > space):
        raise GraphError("a list's width leaves out some of its feature columns")
